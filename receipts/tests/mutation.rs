//! Mutation test: every single-byte change to a valid sealed chain — in the log or
//! in a blob — is detected by `verify`, with no key given.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::golden::blob_paths;
use vac_receipts::{LOG_FILE, VerifyOptions, verify};

/// splitmix64: a seeded generator, so a failure names a reproducible mutation.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A copy of the golden valid chain and the files a mutation may hit.
struct Target {
    _dir: tempfile::TempDir,
    root: PathBuf,
    files: Vec<(PathBuf, Vec<u8>)>,
}

fn target() -> Target {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("valid");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/valid");
    let mut files = vec![(
        root.join(LOG_FILE),
        fs::read(golden.join(LOG_FILE)).expect("log"),
    )];
    for blob in blob_paths(&golden) {
        let copy = root.join(blob.strip_prefix(&golden).expect("inside"));
        files.push((copy, fs::read(&blob).expect("blob")));
    }
    for (path, bytes) in &files {
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, bytes).expect("copy");
    }
    verify(&root, &VerifyOptions::default()).expect("the unmutated copy verifies");
    Target {
        _dir: dir,
        root,
        files,
    }
}

impl Target {
    /// Sets byte `offset` of file `file` to `value`, verifies, restores; true if caught.
    fn detected(&self, file: usize, offset: usize, value: u8) -> bool {
        let (path, original) = &self.files[file];
        let mut mutated = original.clone();
        mutated[offset] = value;
        fs::write(path, &mutated).expect("mutate");
        let caught = verify(&self.root, &VerifyOptions::default()).is_err();
        fs::write(path, original).expect("restore");
        caught
    }
}

fn different(rng: &mut SplitMix, old: u8) -> u8 {
    // old + 1..=255 wraps to every other value, never to old itself.
    old.wrapping_add(1 + (rng.next() % 255) as u8)
}

#[test]
fn thousands_of_random_single_byte_mutations_are_all_detected() {
    let target = target();
    let total: usize = target.files.iter().map(|(_, b)| b.len()).sum();
    let mut rng = SplitMix(0x5eed_0f7e_c319_7500);
    let mut missed = Vec::new();
    for _ in 0..4000 {
        let (mut file, mut at) = (0, rng.below(total));
        while at >= target.files[file].1.len() {
            at -= target.files[file].1.len();
            file += 1;
        }
        let value = different(&mut rng, target.files[file].1[at]);
        if !target.detected(file, at, value) {
            missed.push((target.files[file].0.clone(), at, value));
        }
    }
    assert!(missed.is_empty(), "undetected mutations: {missed:?}");
}

#[test]
fn every_byte_of_the_seal_line_is_covered() {
    // No later record hashes the seal, so its own checks must catch every change.
    let target = target();
    let log = &target.files[0].1;
    let start = log[..log.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let mut rng = SplitMix(7);
    let mut missed = Vec::new();
    for (offset, &old) in log.iter().enumerate().skip(start) {
        for _ in 0..3 {
            let value = different(&mut rng, old);
            if !target.detected(0, offset, value) {
                missed.push((offset, value));
            }
        }
    }
    assert!(
        missed.is_empty(),
        "undetected seal mutations (offset, byte): {missed:?}"
    );
}
