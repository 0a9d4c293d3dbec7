//! Packing a sealed receipt directory at rest: the same chain, the same hashes, every
//! reader reads it in place, any damaged byte is named, an unsealed log is refused and a
//! crash mid-pack leaves a directory that reads and packs again.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::golden::blob_paths;
use vac_receipts::{
    LOG_FILE, PACKED_LOG_FILE, PackError, ReceiptLog, ReceiptWriter, VerifyOptions, WriteError,
    is_receipt_dir, pack, verify,
};

fn golden_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("valid");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/valid");
    for (from, to) in [(golden.join(LOG_FILE), root.join(LOG_FILE))]
        .into_iter()
        .chain(blob_paths(&golden).into_iter().map(|blob| {
            let to = root.join(blob.strip_prefix(&golden).expect("inside"));
            (blob, to)
        }))
    {
        fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        fs::copy(from, to).expect("copy");
    }
    (dir, root)
}

fn lines(dir: &Path) -> Vec<(u64, String)> {
    ReceiptLog::open(dir)
        .expect("open")
        .entries()
        .expect("entries")
        .map(|e| {
            let e = e.expect("entry");
            (e.end, e.hash.to_string())
        })
        .collect()
}

#[test]
fn a_packed_directory_verifies_as_the_plain_one_and_unpacks_to_the_same_bytes() {
    let (_tmp, root) = golden_copy();
    let log_bytes = fs::read(root.join(LOG_FILE)).expect("log");
    let blobs: Vec<(PathBuf, Vec<u8>)> = blob_paths(&root)
        .into_iter()
        .map(|p| {
            let bytes = fs::read(&p).expect("blob");
            (p, bytes)
        })
        .collect();
    assert!(!blobs.is_empty(), "the golden chain has blobs");
    let before = verify(&root, &VerifyOptions::default()).expect("plain verifies");
    let plain_lines = lines(&root);

    let packed = pack(&root).expect("pack");
    assert_eq!(packed.log_bytes, log_bytes.len() as u64);
    assert_eq!(packed.blobs, blobs.len() as u64);
    assert!(!root.join(LOG_FILE).exists() && root.join(PACKED_LOG_FILE).is_file());
    assert!(is_receipt_dir(&root));
    assert!(ReceiptLog::open(&root).expect("open").is_packed());

    let after = verify(&root, &VerifyOptions::default()).expect("packed verifies");
    assert_eq!(before, after, "same records, head, blobs and seal");
    assert_eq!(plain_lines, lines(&root), "same lines, offsets and hashes");
    let unpacked = zstd::decode_all(fs::File::open(root.join(PACKED_LOG_FILE)).unwrap()).unwrap();
    assert_eq!(
        unpacked, log_bytes,
        "zstd -d gives back the log byte for byte"
    );
    for (path, bytes) in blobs {
        assert!(!path.exists());
        let mut packed = path.into_os_string();
        packed.push(".zst");
        let unpacked = zstd::decode_all(fs::File::open(&packed).unwrap()).unwrap();
        assert_eq!(unpacked, bytes, "{packed:?}");
    }

    assert_eq!(
        pack(&root).expect("again"),
        Default::default(),
        "nothing left to pack"
    );
    assert!(matches!(
        ReceiptWriter::create(&root, common::fixed_options(), common::campaign_start()),
        Err(WriteError::Exists { .. })
    ));
}

#[test]
fn an_unsealed_log_is_not_packed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let writer = common::write_sample(dir.path());
    drop(writer);
    let before = fs::read(dir.path().join(LOG_FILE)).expect("log");
    let error = pack(dir.path()).expect_err("unsealed");
    assert!(matches!(error, PackError::NotSealed { .. }), "{error}");
    assert!(error.to_string().contains("not sealed"), "{error}");
    assert_eq!(fs::read(dir.path().join(LOG_FILE)).unwrap(), before);
    assert!(!dir.path().join(PACKED_LOG_FILE).exists());
}

#[test]
fn every_damaged_byte_of_a_packed_directory_is_named() {
    let (_tmp, root) = golden_copy();
    pack(&root).expect("pack");
    let mut files = vec![root.join(PACKED_LOG_FILE)];
    files.extend(blob_paths(&root));
    let mut missed = Vec::new();
    let mut tried = 0;
    for path in &files {
        let original = fs::read(path).expect("read");
        // Every byte of each file, set to its complement.
        for at in 0..original.len() {
            let mut damaged = original.clone();
            damaged[at] = !damaged[at];
            fs::write(path, &damaged).expect("damage");
            match verify(&root, &VerifyOptions::default()) {
                Ok(_) => missed.push((path.clone(), at)),
                Err(error) => {
                    let name = path.file_name().unwrap().to_string_lossy().into_owned();
                    let text = format!("{error}: {:?}", error);
                    if !text.contains(&name[..12.min(name.len())]) {
                        missed.push((path.clone(), at));
                    }
                }
            }
            tried += 1;
        }
        fs::write(path, &original).expect("restore");
    }
    assert!(tried > 500, "{tried}");
    assert!(missed.is_empty(), "undetected or unnamed: {missed:?}");
}

#[test]
fn a_crash_mid_pack_leaves_a_directory_that_reads_and_packs_again() {
    let (_tmp, root) = golden_copy();
    let log_bytes = fs::read(root.join(LOG_FILE)).expect("log");
    let before = verify(&root, &VerifyOptions::default()).expect("verifies");
    pack(&root).expect("pack");
    // The plain log back beside its packed form: the state a crash between the packed
    // file's rename and the plain file's removal leaves.
    fs::write(root.join(LOG_FILE), &log_bytes).expect("plain again");
    assert!(
        !ReceiptLog::open(&root).unwrap().is_packed(),
        "the plain one is read"
    );
    assert_eq!(verify(&root, &VerifyOptions::default()).unwrap(), before);
    pack(&root).expect("pack again");
    assert!(!root.join(LOG_FILE).exists());
    assert_eq!(verify(&root, &VerifyOptions::default()).unwrap(), before);
}
