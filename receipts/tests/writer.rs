//! The writer's contract: it never writes a log that fails `verify`, caps what
//! payloads store, and resumes only where resuming is safe.

mod common;

use std::fs;

use common::{campaign_start, fixed_options, golden_key, write_sample};
use proptest::prelude::*;
use vac_receipts::{
    Body, Contract, Direction, Frame, Limits, ReceiptLog, ReceiptWriter, Role, RunEnd, RunStart,
    RunStatus, Stored, VerifyOptions, WriteError, WriterOptions, verify,
};

fn start(run_id: &str) -> Body {
    Body::RunStart(RunStart {
        run_id: run_id.into(),
        target: "t".into(),
        role: Role::Control,
        repetition: 0,
    })
}

fn end(run_id: &str) -> Body {
    Body::RunEnd(RunEnd {
        run_id: run_id.into(),
        status: RunStatus::Completed,
        detail: String::new(),
    })
}

fn frame(w: &mut ReceiptWriter, run_id: &str, bytes: &[u8]) -> Body {
    let bytes = w.payload(bytes).expect("payload");
    Body::Frame(Frame {
        run_id: run_id.into(),
        direction: Direction::FromServer,
        t_ns: 0,
        bytes,
    })
}

#[test]
fn records_read_back_as_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut w =
        ReceiptWriter::create(dir.path(), fixed_options(), campaign_start()).expect("create");
    let bodies = vec![
        start("r"),
        frame(&mut w, "r", b"\xff\x00not utf-8"),
        end("r"),
    ];
    for body in &bodies {
        w.append(body.clone()).expect("append");
    }
    let head = w.head();
    w.seal(Some(&golden_key())).expect("seal");
    let log = ReceiptLog::open(dir.path()).expect("open");
    let entries: Vec<_> = log
        .entries()
        .expect("entries")
        .collect::<Result<_, _>>()
        .expect("read");
    let read: Vec<Body> = entries[1..4]
        .iter()
        .map(|e| e.record.body.clone())
        .collect();
    assert_eq!(read, bodies);
    assert_eq!(entries[3].hash, head);
    assert_eq!(entries[4].record.prev, head);
}

#[test]
fn payloads_are_cut_at_the_blob_cap_and_dropped_past_the_run_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = Limits {
        inline_max: 8,
        blob_max: 100,
        run_blob_max: 150,
    };
    let options = WriterOptions {
        limits,
        ..fixed_options()
    };
    let mut w = ReceiptWriter::create(dir.path(), options, campaign_start()).expect("create");
    w.append(start("r")).expect("start");
    let small = w.payload(b"tiny").expect("inline");
    assert!(matches!(small.stored, Stored::Utf8(_)));
    let cut = w.payload(&[1u8; 300]).expect("cut");
    assert_eq!(
        (cut.len, cut.stored_len(), cut.is_truncated()),
        (300, 100, true)
    );
    let rest = w.payload(&[2u8; 300]).expect("rest of budget");
    assert_eq!(rest.stored_len(), 50);
    let none = w.payload(&[3u8; 300]).expect("budget spent");
    assert_eq!(none.stored, Stored::Omitted);
    assert!(matches!(
        w.put_blob(&[4u8; 101]),
        Err(WriteError::BlobCap { len: 101, cap: 100 })
    ));
    assert!(matches!(
        w.put_blob(&[4u8; 10]),
        Err(WriteError::RunBudget { len: 10, left: 0 })
    ));
    for payload in [cut, rest, none] {
        let body = Frame {
            run_id: "r".into(),
            direction: Direction::Stderr,
            t_ns: 1,
            bytes: payload,
        };
        w.append(Body::Frame(body)).expect("frame");
    }
    w.append(end("r")).expect("end");
    // A new run gets a fresh budget.
    w.append(start("s")).expect("start");
    assert!(w.put_blob(&[5u8; 100]).is_ok());
    w.append(end("s")).expect("end");
    w.seal(None).expect("seal");
    let report = verify(dir.path(), &VerifyOptions::default()).expect("verifies");
    assert_eq!(report.blobs, 2, "blobs referenced from records are checked");
}

#[test]
fn the_writer_refuses_what_verify_would_reject() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut w =
        ReceiptWriter::create(dir.path(), fixed_options(), campaign_start()).expect("create");
    let refused = |r: Result<_, WriteError>| matches!(r, Err(WriteError::Refused { .. }));
    assert!(refused(w.append(end("nobody"))));
    assert!(refused(w.append(Body::CampaignStart(campaign_start()))));
    let mut contract = Contract::new("c", "x = 1\n");
    contract.text.push('!');
    assert!(refused(w.append(Body::Contract(contract))));
    w.append(start("a")).expect("start");
    assert!(refused(w.append(start("b"))));
    assert!(refused(w.append(end("b"))));
    w.append(end("a")).expect("end");
    assert!(refused(w.append(start("a"))), "run ids are unique");
    w.append(start("c")).expect("start");
    assert!(matches!(w.seal(None), Err(WriteError::Refused { .. })));
    verify(dir.path(), &VerifyOptions::default()).expect("what was accepted verifies");
}

#[test]
fn create_never_overwrites_a_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(ReceiptWriter::create(dir.path(), fixed_options(), campaign_start()).expect("create"));
    let again = ReceiptWriter::create(dir.path(), fixed_options(), campaign_start());
    assert!(matches!(again, Err(WriteError::Exists { .. })));
}

#[test]
fn resume_drops_the_open_run_and_continues_the_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut w = write_sample(dir.path());
    w.append(start("interrupted")).expect("start");
    let body = frame(&mut w, "interrupted", b"lost");
    w.append(body).expect("frame");
    w.sync().expect("sync");
    let kept = w.next_seq() - 2;
    drop(w);

    let (mut w, recovery) = ReceiptWriter::resume(dir.path(), fixed_options()).expect("resume");
    assert_eq!(recovery.prefix.open_run.as_deref(), Some("interrupted"));
    assert_eq!(recovery.resume.next_seq, kept);
    assert_eq!(recovery.completed_runs, ["control-0", "subject-0"]);
    assert_eq!(w.next_seq(), kept);
    w.append(start("interrupted"))
        .expect("the dropped run id is free again");
    w.append(end("interrupted")).expect("end");
    w.seal(None).expect("seal");
    let report = verify(dir.path(), &VerifyOptions::default()).expect("verifies");
    assert_eq!(report.runs, 3);
}

#[test]
fn resume_refuses_sealed_and_broken_logs() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_sample(dir.path()).seal(None).expect("seal");
    let sealed = ReceiptWriter::resume(dir.path(), fixed_options());
    assert!(matches!(sealed, Err(WriteError::Sealed { .. })));

    let broken = tempfile::tempdir().expect("tempdir");
    drop(write_sample(broken.path()));
    let log = broken.path().join(vac_receipts::LOG_FILE);
    let text = fs::read_to_string(&log)
        .expect("log")
        .replacen("marker seen", "marker SEEN", 1);
    fs::write(&log, text).expect("tamper");
    let resumed = ReceiptWriter::resume(broken.path(), fixed_options());
    assert!(
        matches!(resumed, Err(WriteError::Broken { .. })),
        "a broken chain is never truncated away"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_frame_bytes_round_trip_exactly(frames in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..400), 1..6)) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = ReceiptWriter::create(dir.path(), fixed_options(), campaign_start()).expect("create");
        w.append(start("r")).expect("start");
        for bytes in &frames {
            let body = frame(&mut w, "r", bytes);
            w.append(body).expect("frame");
        }
        w.append(end("r")).expect("end");
        w.seal(None).expect("seal");
        verify(dir.path(), &VerifyOptions::default()).expect("verifies");
        let log = ReceiptLog::open(dir.path()).expect("open");
        let mut read = Vec::new();
        for entry in log.entries().expect("entries") {
            if let Body::Frame(f) = entry.expect("entry").record.body {
                read.push(log.payload_bytes(&f.bytes).expect("bytes"));
            }
        }
        prop_assert_eq!(read, frames);
    }
}

/// A redacted secret is written nowhere in the directory — as text, inside a JSON string
/// (escaped), as hex of a payload that is not UTF-8, in a blob — and the log still
/// verifies with every length as it was; a secret too short to mask is refused.
#[test]
fn a_redacted_secret_is_written_nowhere_and_the_log_still_verifies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut w =
        ReceiptWriter::create(dir.path(), fixed_options(), campaign_start()).expect("create");
    let secret = "tok\"en-9f3a7c1e";
    assert!(!w.redact(b"short"));
    assert!(w.redact(secret.as_bytes()));
    w.append(start("r")).expect("start");
    let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"echo":"Bearer {secret}"}}}}"#);
    let inline = frame(&mut w, "r", text.as_bytes());
    let mut binary = vec![0xff, 0x00];
    binary.extend_from_slice(secret.as_bytes());
    let hexed = frame(&mut w, "r", &binary);
    // Past the inline cap (96 bytes here), under the blob cap.
    let mut big = secret.as_bytes().to_vec();
    big.extend_from_slice(&[b'x'; 200]);
    let blob = frame(&mut w, "r", &big);
    for body in [inline, hexed, blob.clone(), end("r")] {
        w.append(body).expect("append");
    }
    w.seal(None).expect("seal");
    verify(dir.path(), &VerifyOptions::default()).expect("the redacted log verifies");
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    let escaped = serde_json::to_string(secret).unwrap();
    let escaped = &escaped[1..escaped.len() - 1];
    let mut files = vec![dir.path().join("receipts.jsonl")];
    let mut stack = vec![dir.path().join("blobs")];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).into_iter().flatten().flatten() {
            match entry.file_type().unwrap().is_dir() {
                true => stack.push(entry.path()),
                false => files.push(entry.path()),
            }
        }
    }
    assert!(files.len() >= 2, "the large frame is a blob: {files:?}");
    for file in &files {
        let bytes = fs::read(file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for form in [secret, escaped, hex.as_str()] {
            assert!(!text.contains(form), "{form:?} in {}", file.display());
        }
    }
    // The lengths are the originals: the blob's frame says the whole frame was kept.
    let Body::Frame(frame) = blob else { panic!() };
    assert_eq!(frame.bytes.len, big.len() as u64);
    assert!(!frame.bytes.is_truncated());
}
