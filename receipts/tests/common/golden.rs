//! Writes the golden receipt directories of `tests/data/`: one valid chain and
//! tampered copies of it, each deterministic to the byte.

use std::fs;
use std::path::{Path, PathBuf};

use ed25519_dalek::Signer;
use vac_receipts::{Body, Digest, LOG_FILE, Record, SigningKey, VerdictKind, seal_message};

use super::{CONTRACT, forger_key, golden_key, write_sample};

/// Every case, in the order of `tests/data/EXPECTED`.
pub const CASES: [&str; 17] = [
    "valid",
    "byte_flip_body",
    "deleted_record",
    "swapped_records",
    "truncated_tail",
    "modified_blob",
    "missing_blob",
    "forged_seal",
    "resealed_other_key",
    "resealed_unsigned",
    "appended_after_seal",
    "unsealed_prefix",
    "not_a_log",
    "unknown_version",
    "truncated_line",
    "empty",
    "wrong_first_record",
];

/// Writes every case under `root`, replacing what is there.
pub fn write_all(root: &Path) {
    let valid = root.join("valid");
    if valid.exists() {
        for case in CASES {
            let _ = fs::remove_dir_all(root.join(case));
        }
    }
    write_sample(&valid)
        .seal(Some(&golden_key()))
        .expect("seal");
    let lines = read_lines(&valid);
    let n = lines.len();
    let verdict = position(&lines, "\"kind\":\"verdict\"");

    let mut flipped = lines.clone();
    let at = find(&flipped[verdict], b"undeclared");
    flipped[verdict][at] = b'U';
    case(root, "byte_flip_body", &flipped);

    let mut deleted = lines.clone();
    deleted.remove(position(&lines, "\"kind\":\"effect\""));
    case(root, "deleted_record", &deleted);

    let mut swapped = lines.clone();
    let self_test = position(&lines, "\"kind\":\"self_test\"");
    swapped.swap(self_test, self_test + 1);
    case(root, "swapped_records", &swapped);

    let dir = copy(root, "truncated_tail");
    let bytes = fs::read(valid.join(LOG_FILE)).expect("read");
    fs::write(dir.join(LOG_FILE), &bytes[..bytes.len() - 40]).expect("write");

    let blob = first_blob(&valid);
    let dir = copy(root, "modified_blob");
    let path = dir.join(blob.strip_prefix(&valid).expect("inside"));
    let mut content = fs::read(&path).expect("blob");
    content[0] ^= 0x20;
    fs::write(&path, content).expect("write blob");

    let dir = copy(root, "missing_blob");
    fs::remove_file(dir.join(blob.strip_prefix(&valid).expect("inside"))).expect("remove");

    // The forger turns a confirmed verdict into a refuted one and rebuilds the chain.
    let mut forged = lines.clone();
    let mut record = Record::from_line(&forged[verdict]).expect("verdict");
    if let Body::Verdict(v) = &mut record.body {
        v.verdict = VerdictKind::Refuted;
    }
    forged[verdict] = record.to_line();
    rechain(&mut forged, verdict + 1);
    let golden_pub = hex::encode(golden_key().verifying_key().as_bytes());
    case(
        root,
        "forged_seal",
        &reseal(&forged, Some(&forger_key()), Some(golden_pub)),
    );
    case(
        root,
        "resealed_other_key",
        &reseal(&forged, Some(&forger_key()), None),
    );
    case(root, "resealed_unsigned", &reseal(&forged, None, None));

    let mut appended = lines.clone();
    appended.push(lines[verdict].clone());
    let mut extra = Record::from_line(&appended[n]).expect("verdict");
    extra.seq = n as u64;
    extra.prev = Digest::of(&appended[n - 1]);
    appended[n] = extra.to_line();
    case(root, "appended_after_seal", &appended);

    case(root, "unsealed_prefix", &lines[..n - 1]);

    let dir = copy(root, "not_a_log");
    fs::write(dir.join(LOG_FILE), CONTRACT).expect("write");

    let mut future = lines.clone();
    future[0] = String::from_utf8(lines[0].clone())
        .expect("utf-8")
        .replacen("{\"v\":1,", "{\"v\":2,", 1)
        .into_bytes();
    case(root, "unknown_version", &future);

    let mut cut = lines.clone();
    let half = cut[3].len() / 2;
    cut[3].truncate(half);
    case(root, "truncated_line", &cut);

    let dir = copy(root, "empty");
    fs::write(dir.join(LOG_FILE), b"").expect("write");

    let mut headless = lines[1..].to_vec();
    renumber(&mut headless);
    case(root, "wrong_first_record", &headless);
}

fn copy(root: &Path, name: &str) -> PathBuf {
    let dst = root.join(name);
    copy_dir(&root.join("valid"), &dst);
    dst
}

fn copy_dir(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).expect("mkdir");
    for entry in fs::read_dir(src).expect("read dir") {
        let entry = entry.expect("entry");
        let target = dst.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).expect("copy");
        }
    }
}

fn case(root: &Path, name: &str, lines: &[Vec<u8>]) {
    let dir = copy(root, name);
    let mut bytes = Vec::new();
    for line in lines {
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
    }
    fs::write(dir.join(LOG_FILE), bytes).expect("write log");
}

pub fn read_lines(dir: &Path) -> Vec<Vec<u8>> {
    let bytes = fs::read(dir.join(LOG_FILE)).expect("read log");
    let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    lines.pop();
    lines
}

fn position(lines: &[Vec<u8>], needle: &str) -> usize {
    lines
        .iter()
        .position(|l| find_opt(l, needle.as_bytes()).is_some())
        .expect("line present")
}

fn find(haystack: &[u8], needle: &[u8]) -> usize {
    find_opt(haystack, needle).expect("needle present")
}

fn find_opt(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Sorted blob paths of a receipt directory.
pub fn blob_paths(dir: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for sub in fs::read_dir(dir.join("blobs")).expect("blobs") {
        for blob in fs::read_dir(sub.expect("entry").path()).expect("blob dir") {
            paths.push(blob.expect("entry").path());
        }
    }
    paths.sort();
    paths
}

fn first_blob(dir: &Path) -> PathBuf {
    blob_paths(dir).into_iter().next().expect("a blob")
}

fn rechain(lines: &mut [Vec<u8>], from: usize) {
    for i in from..lines.len() {
        let mut record = Record::from_line(&lines[i]).expect("record");
        record.prev = Digest::of(&lines[i - 1]);
        lines[i] = record.to_line();
    }
}

fn renumber(lines: &mut [Vec<u8>]) {
    for i in 0..lines.len() {
        let mut record = Record::from_line(&lines[i]).expect("record");
        record.seq = i as u64;
        record.prev = if i == 0 {
            Digest::ZERO
        } else {
            Digest::of(&lines[i - 1])
        };
        lines[i] = record.to_line();
    }
}

/// Replaces the last line (a seal) with a seal over the lines before it.
fn reseal(
    lines: &[Vec<u8>],
    key: Option<&SigningKey>,
    claimed_key: Option<String>,
) -> Vec<Vec<u8>> {
    let mut lines = lines.to_vec();
    let last = lines.len() - 1;
    let mut record = Record::from_line(&lines[last]).expect("seal");
    let head = Digest::of(&lines[last - 1]);
    let message = seal_message(&head, last as u64, record.ts);
    if let Body::Seal(seal) = &mut record.body {
        seal.head = head;
        seal.count = last as u64;
        seal.digest = Digest::of(&message);
        seal.signature = key.map(|k| hex::encode(k.sign(&message).to_bytes()));
        seal.public_key =
            claimed_key.or_else(|| key.map(|k| hex::encode(k.verifying_key().as_bytes())));
    }
    record.prev = head;
    lines[last] = record.to_line();
    lines
}
