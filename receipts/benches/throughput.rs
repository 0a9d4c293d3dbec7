//! Append and verify throughput, next to raw blake3 over the same bytes.
//! `cargo bench -p vac-receipts` (plain `Instant` timing; no criterion).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use vac_receipts::{
    Body, CampaignStart, Digest, Direction, Frame, Host, LOG_FILE, ReceiptWriter, Role, RunEnd,
    RunStart, RunStatus, SigningKey, VerifyOptions, WriterOptions, verify,
};

const RECORDS: u64 = 200_000;
const PER_RUN: u64 = 1_000;

fn start() -> CampaignStart {
    let host = Host {
        hostname: "bench".into(),
        kernel: "-".into(),
        arch: std::env::consts::ARCH.into(),
    };
    CampaignStart {
        vac_version: "bench".into(),
        host,
        config_hash: Digest::ZERO,
        config: serde_json::Value::Null,
        seed: 0,
    }
}

fn frame_bytes(i: u64) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{{"content":[{{"type":"text","text":"note {i}: the quick brown fox jumps over the lazy dog"}}]}}}}"#).into_bytes()
}

/// Writes `records` frames in runs of `per_run`, syncing after every record when asked.
fn write(dir: &Path, records: u64, per_run: u64, sync_each: bool) -> Duration {
    let began = Instant::now();
    let mut w = ReceiptWriter::create(dir, WriterOptions::default(), start()).expect("create");
    for run in 0..records / per_run {
        let run_id = format!("run-{run}");
        let body = RunStart {
            run_id: run_id.clone(),
            target: "bench".into(),
            role: Role::Subject,
            repetition: 0,
        };
        w.append(Body::RunStart(body)).expect("start");
        for i in 0..per_run {
            let bytes = w.payload(&frame_bytes(run * per_run + i)).expect("payload");
            let frame = Frame {
                run_id: run_id.clone(),
                direction: Direction::FromServer,
                t_ns: i,
                bytes,
            };
            w.append(Body::Frame(frame)).expect("frame");
            if sync_each {
                w.sync().expect("sync");
            }
        }
        let end = RunEnd {
            run_id,
            status: RunStatus::Completed,
            detail: String::new(),
        };
        w.append(Body::RunEnd(end)).expect("end");
    }
    w.seal(Some(&SigningKey::from_bytes(&[1; 32])))
        .expect("seal");
    began.elapsed()
}

fn mb_per_s(bytes: u64, took: Duration) -> f64 {
    bytes as f64 / 1e6 / took.as_secs_f64()
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let took = write(dir.path(), RECORDS, PER_RUN, false);
    let bytes = std::fs::read(dir.path().join(LOG_FILE)).expect("log");
    let len = bytes.len() as u64;
    let records = RECORDS + 2 * (RECORDS / PER_RUN) + 2;
    println!(
        "log: {records} records, {:.1} MB, {} runs of {PER_RUN} frames",
        len as f64 / 1e6,
        RECORDS / PER_RUN
    );
    println!(
        "append (fsync per run):    {:>10.0} records/s  {:>8.1} MB/s",
        records as f64 / took.as_secs_f64(),
        mb_per_s(len, took)
    );

    let small = tempfile::tempdir().expect("tempdir");
    let per_record = write(small.path(), 2_000, 100, true);
    println!(
        "append (fsync per record):{:>10.0} records/s  (2,000 frames, for contrast)",
        2_000.0 / per_record.as_secs_f64()
    );

    let began = Instant::now();
    let report = verify(dir.path(), &VerifyOptions::default()).expect("verifies");
    let took = began.elapsed();
    assert_eq!(report.records, records);
    println!(
        "verify:                    {:>10.0} records/s  {:>8.1} MB/s",
        records as f64 / took.as_secs_f64(),
        mb_per_s(len, took)
    );

    let began = Instant::now();
    black_box(blake3::hash(black_box(&bytes)));
    println!(
        "raw blake3, whole file:                          {:>8.1} MB/s",
        mb_per_s(len, began.elapsed())
    );
    let began = Instant::now();
    for line in bytes.split(|&b| b == b'\n') {
        black_box(blake3::hash(black_box(line)));
    }
    println!(
        "raw blake3, line by line:                        {:>8.1} MB/s",
        mb_per_s(len, began.elapsed())
    );
}
