//! A file that is not a receipt log cannot make a reader hold it whole.

use std::io::Write;

use vac_receipts::{MAX_LINE, ReadError, VerifyError, VerifyOptions, verify};

#[test]
fn a_line_longer_than_the_cap_is_refused_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut file = std::fs::File::create(dir.path().join("receipts.jsonl")).unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..=(MAX_LINE >> 20) {
        file.write_all(&chunk).unwrap();
    }
    drop(file);
    let error = verify(dir.path(), &VerifyOptions::default()).unwrap_err();
    assert!(
        matches!(
            &error,
            VerifyError::Read(ReadError::LineTooLong { line: 1, .. })
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("line 1"), "{error}");
}
