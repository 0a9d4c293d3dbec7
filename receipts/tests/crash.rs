//! Crash safety: a writer killed with SIGKILL mid-run leaves a log whose complete
//! prefix verifies, whose torn tail (if the kill cut a write) is reported rather
//! than accepted, and from which a campaign resumes after its last complete run.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::campaign_start;
use vac_receipts::{
    Body, Clock, Direction, Frame, LOG_FILE, Limits, ReceiptWriter, Role, RunEnd, RunStart,
    RunStatus, VerifyOptions, WriterOptions, recover, verify,
};

/// Set in the child's environment to the receipt directory it writes.
const CHILD_DIR: &str = "VAC_RECEIPTS_CRASH_CHILD";

fn options() -> WriterOptions {
    // Frames up to 2 MiB stay inline: one long line per write, which a kill can cut.
    let limits = Limits {
        inline_max: 2 << 20,
        ..Limits::default()
    };
    WriterOptions {
        limits,
        clock: Clock::System,
    }
}

fn run(w: &mut ReceiptWriter, run_id: &str, frames: u64) {
    let start = RunStart {
        run_id: run_id.into(),
        target: "crash".into(),
        role: Role::Subject,
        repetition: 0,
    };
    w.append(Body::RunStart(start)).expect("run start");
    for i in 0..frames {
        // Mostly small frames, now and then a large non-UTF-8 one.
        let len = if i % 16 == 15 { 1 << 20 } else { 200 };
        let bytes: Vec<u8> = (0..len).map(|j| (j as u64 * 31 + i) as u8).collect();
        let payload = w.payload(&bytes).expect("payload");
        let frame = Frame {
            run_id: run_id.into(),
            direction: Direction::FromServer,
            t_ns: i,
            bytes: payload,
        };
        w.append(Body::Frame(frame)).expect("frame");
    }
    let end = RunEnd {
        run_id: run_id.into(),
        status: RunStatus::Completed,
        detail: String::new(),
    };
    w.append(Body::RunEnd(end)).expect("run end");
}

/// The child's body: when started by `a_writer_killed_mid_run_leaves_a_verifiable_prefix`
/// it writes runs until it is killed; run directly, it has nothing to do.
#[test]
fn crash_child_writes_until_killed() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let mut w =
        ReceiptWriter::create(Path::new(&dir), options(), campaign_start()).expect("create");
    for n in 0.. {
        run(&mut w, &format!("run-{n}"), 64);
    }
}

fn kill_child_at(dir: &Path, min_len: u64) {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args(["crash_child_writes_until_killed", "--exact", "--nocapture"])
        .env(CHILD_DIR, dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child writer");
    let deadline = Instant::now() + Duration::from_secs(120);
    let log = dir.join(LOG_FILE);
    while fs::metadata(&log).map_or(0, |m| m.len()) < min_len {
        let exited = child.try_wait().expect("poll child");
        assert!(exited.is_none(), "child writer exited early: {exited:?}");
        assert!(
            Instant::now() < deadline,
            "child writer did not reach {min_len} bytes in time"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    // Then aim the kill at a moment a line is half written, when one is seen in time.
    let aim = Instant::now() + Duration::from_secs(2);
    while Instant::now() < aim && !ends_mid_line(&log) {
        std::hint::spin_loop();
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
}

fn ends_mid_line(log: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let mut last = [0u8; 1];
    fs::File::open(log)
        .and_then(|mut f| {
            f.seek(SeekFrom::End(-1))
                .and_then(|_| f.read_exact(&mut last))
        })
        .is_ok_and(|()| last[0] != b'\n')
}

#[test]
fn a_writer_killed_mid_run_leaves_a_verifiable_prefix() {
    let mut torn_seen = 0;
    // At least three kills, and more (up to eight) until one has cut a line.
    for round in 0..8u64 {
        if round >= 3 && torn_seen > 0 {
            break;
        }
        let min_len = (3 + 2 * round) << 20;
        let dir = tempfile::tempdir().expect("tempdir");
        kill_child_at(dir.path(), min_len);
        let len = fs::metadata(dir.path().join(LOG_FILE)).expect("log").len();

        let recovery = recover(dir.path()).expect("the prefix is readable");
        assert!(
            recovery.prefix.records > 1,
            "round {round}: a prefix was written"
        );
        assert!(
            recovery.is_crash_tail(),
            "round {round}: only a torn tail may follow: {:?}",
            recovery.problem
        );
        assert!(recovery.resume.offset <= recovery.prefix.log_bytes);

        let strict = verify(dir.path(), &VerifyOptions::default());
        if recovery.prefix.log_bytes < len {
            // A torn last line is reported with its line number, never accepted.
            torn_seen += 1;
            let error = strict.expect_err("a torn tail fails strict verification");
            assert!(error.is_torn_tail(), "{error}");
            assert_eq!(error.line(), Some(recovery.prefix.records + 1), "{error}");
        } else {
            let report = strict.expect("a whole-line prefix verifies");
            assert_eq!(report.seal, None, "a killed writer leaves no seal");
        }

        // Resume: cut back to the last complete run, add one, seal, verify whole.
        let (mut w, recovered) = ReceiptWriter::resume(dir.path(), options()).expect("resume");
        let done = recovered.completed_runs.len();
        run(&mut w, "after-crash", 3);
        w.seal(None).expect("seal");
        let report = verify(
            dir.path(),
            &VerifyOptions {
                require_seal: true,
                ..Default::default()
            },
        )
        .expect("the resumed log verifies");
        assert_eq!(report.runs as usize, done + 1, "round {round}");
        eprintln!(
            "round {round}: killed at {len} bytes, prefix {} records, torn tail: {}",
            recovered.prefix.records,
            recovered.problem.is_some()
        );
    }
    eprintln!("{torn_seen} kills tore a line");
    assert!(
        torn_seen > 0,
        "no kill landed mid-write: the torn-tail path went untested"
    );
}
