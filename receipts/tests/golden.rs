//! The golden chains of `tests/data/`: the valid one verifies, each tampered copy
//! fails with the error and first bad line written in `tests/data/EXPECTED`, and
//! the generator still produces the checked-in bytes.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::golden::{CASES, write_all};
use common::golden_key;
use vac_receipts::{
    BlobError, ReadError, SealError, SignatureStatus, VerifyError, VerifyOptions, VerifyReport,
    verify,
};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// A short stable name for each way verification fails, as `EXPECTED` spells it.
fn code(error: &VerifyError) -> &'static str {
    match error {
        VerifyError::Read(ReadError::Io { .. }) => "io",
        VerifyError::Read(ReadError::Empty { .. }) => "empty",
        VerifyError::Read(ReadError::NotAReceiptLog { .. }) => "not_a_log",
        VerifyError::Read(ReadError::TornLine { .. }) => "torn_line",
        VerifyError::Read(ReadError::LineTooLong { .. }) => "line_too_long",
        VerifyError::Read(ReadError::UnknownVersion { .. }) => "unknown_version",
        VerifyError::Read(ReadError::Record { .. }) => "bad_record",
        VerifyError::Read(ReadError::Packed { .. }) => "packed",
        VerifyError::Seq { .. } => "seq",
        VerifyError::Prev { .. } => "prev",
        VerifyError::First { .. } => "first",
        VerifyError::Structure { .. } => "structure",
        VerifyError::Body { .. } => "body",
        VerifyError::Blob {
            source: BlobError::Missing { .. },
            ..
        } => "blob_missing",
        VerifyError::Blob { .. } => "blob_modified",
        VerifyError::Seal {
            source: SealError::BadSignature(_),
            ..
        } => "seal_signature",
        VerifyError::Seal {
            source: SealError::UntrustedKey { .. },
            ..
        } => "seal_untrusted",
        VerifyError::Seal {
            source: SealError::Unsigned,
            ..
        } => "seal_unsigned",
        VerifyError::Seal { .. } => "seal",
        VerifyError::AfterSeal { .. } => "after_seal",
        VerifyError::NotSealed { .. } => "not_sealed",
    }
}

fn options(name: &str) -> VerifyOptions {
    match name {
        "trusted" => VerifyOptions {
            trusted_key: Some(golden_key().verifying_key()),
            ..VerifyOptions::default()
        },
        "require_seal" => VerifyOptions {
            require_seal: true,
            ..VerifyOptions::default()
        },
        _ => VerifyOptions::default(),
    }
}

fn outcome(result: &Result<VerifyReport, VerifyError>) -> String {
    let dash = |n: Option<u64>| n.map_or("-".to_owned(), |n| n.to_string());
    match result {
        Ok(report) => format!("ok {} -", report.records),
        Err(error) => format!(
            "{} {} {}",
            code(error),
            dash(error.line()),
            dash(error.seq())
        ),
    }
}

#[test]
fn every_golden_chain_verifies_or_fails_as_expected() {
    let expected = fs::read_to_string(data().join("EXPECTED")).expect("EXPECTED");
    let mut mismatches = Vec::new();
    let mut rows = 0;
    for row in expected
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let fields: Vec<&str> = row.split_whitespace().collect();
        let [case, opts, want @ ..] = fields.as_slice() else {
            panic!("bad EXPECTED row {row:?}")
        };
        let result = verify(data().join(case), &options(opts));
        let got = outcome(&result);
        if got != want.join(" ") {
            let detail = result.err().map(|e| e.to_string()).unwrap_or_default();
            mismatches.push(format!(
                "{case} ({opts}): expected {}, got {got} {detail}",
                want.join(" ")
            ));
        }
        rows += 1;
    }
    assert!(
        mismatches.is_empty(),
        "golden mismatches:\n{}",
        mismatches.join("\n")
    );
    assert!(rows >= CASES.len(), "every case has a row in EXPECTED");
}

#[test]
fn the_valid_chain_reports_its_counts_and_trusted_signature() {
    let report = verify(data().join("valid"), &options("trusted")).expect("valid chain verifies");
    assert_eq!((report.records, report.runs, report.blobs), (22, 2, 2));
    assert_eq!(report.open_run, None);
    let public_key = hex::encode(golden_key().verifying_key().as_bytes());
    assert_eq!(report.seal, Some(SignatureStatus::Trusted { public_key }));
}

#[test]
fn a_keyless_reader_tells_a_resealed_chain_by_its_head() {
    // Without a trusted key a rebuilt chain is self-consistent; only the published
    // head hash of the original tells them apart.
    let valid = verify(data().join("valid"), &VerifyOptions::default()).expect("valid");
    let resealed =
        verify(data().join("resealed_unsigned"), &VerifyOptions::default()).expect("consistent");
    assert_ne!(valid.head, resealed.head);
}

#[test]
fn errors_name_the_line_in_their_message() {
    let error =
        verify(data().join("truncated_line"), &VerifyOptions::default()).expect_err("fails");
    assert!(error.to_string().contains("line 4"), "{error}");
    let error =
        verify(data().join("unknown_version"), &VerifyOptions::default()).expect_err("fails");
    assert!(
        error
            .to_string()
            .contains("line 1: unknown format version 2"),
        "{error}"
    );
}

#[test]
fn the_generator_still_writes_the_checked_in_bytes() {
    let fresh = tempfile::tempdir().expect("tempdir");
    write_all(fresh.path());
    for case in CASES {
        let (want, got) = (files(&data().join(case)), files(&fresh.path().join(case)));
        assert_eq!(want.len(), got.len(), "{case}: file count");
        for ((want_path, want_bytes), (_, got_bytes)) in want.iter().zip(&got) {
            assert!(
                want_bytes == got_bytes,
                "{case}: {} differs from the generator",
                want_path.display()
            );
        }
    }
}

fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = fs::read(&path).expect("read");
                out.push((path.strip_prefix(dir).expect("inside").to_path_buf(), bytes));
            }
        }
    }
    out.sort();
    out
}

/// `verify_each` hands over exactly the records that checked, in order: every one of the
/// valid chain, and of a tampered chain only those before its first bad line.
#[test]
fn verify_each_visits_the_checked_records_only() {
    let mut seen = Vec::new();
    let report = vac_receipts::verify_each(data().join("valid"), &VerifyOptions::default(), |e| {
        seen.push((e.line, e.record.seq))
    })
    .unwrap();
    assert_eq!(seen.len() as u64, report.records);
    assert!(
        seen.iter()
            .enumerate()
            .all(|(i, &(line, seq))| line == i as u64 + 1 && seq == i as u64)
    );

    let mut seen = Vec::new();
    let error = vac_receipts::verify_each(
        data().join("byte_flip_body"),
        &VerifyOptions::default(),
        |e| seen.push(e.line),
    )
    .unwrap_err();
    let bad = error.line().expect("the error names a line");
    assert_eq!(seen, (1..bad).collect::<Vec<_>>(), "{error}");
}
