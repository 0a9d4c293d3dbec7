//! VERIFY.sh over the published results (`results/thirdparty`): it passes on them as committed, and
//! one flipped byte in any kind of published file — a probe's receipts, a blob, the
//! campaign chain, the campaign file, a report (HTML, Parquet, SARIF) — makes it fail,
//! naming what changed.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn verify(results: &Path) -> (bool, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../VERIFY.sh");
    let output = Command::new("bash")
        .arg(script)
        .arg("--quick")
        .arg(results)
        .env("VAC", common::VAC)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// Flips one byte of `file` in the middle of its content (staying printable for text).
fn flip(file: &Path) {
    let mut bytes = std::fs::read(file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] = match bytes[at] {
        b'0'..=b'8' | b'a'..=b'y' | b'A'..=b'Y' => bytes[at] + 1,
        b'9' => b'0',
        b'z' => b'a',
        b'Z' => b'A',
        other => other ^ 0x01,
    };
    std::fs::write(file, bytes).unwrap();
}

#[test]
fn verify_sh_passes_on_the_published_results_and_names_any_flipped_byte() {
    // The thirdparty campaign alone: the study's receipts are verified by VERIFY.sh itself
    // in CI, once; each flip here runs the whole script again.
    let published = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/thirdparty");
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    copy(&published, &results.join("thirdparty"));
    let (ok, text) = verify(&results);
    assert!(ok, "VERIFY.sh fails on the published results:\n{text}");
    assert!(
        text.contains("VERIFY: ") && text.contains(" 0 failed"),
        "{text}"
    );

    let campaign = results.join("thirdparty");
    let blob: PathBuf = walk(&campaign.join("receipts"))
        .into_iter()
        .find(|p| p.components().any(|c| c.as_os_str() == "blobs"))
        .expect("the published receipts hold a blob");
    let cases: Vec<(PathBuf, &str)> = vec![
        (
            campaign.join("receipts/dishonest/rep-1/receipts.jsonl.zst"),
            "dishonest/rep-1",
        ),
        (blob.clone(), "BROKEN"),
        (campaign.join("receipts/receipts.jsonl"), "verify"),
        (campaign.join("campaign.toml"), "campaign.toml"),
        (campaign.join("map/map.html"), "map/map.html differs"),
        (
            campaign.join("map/tables/verdicts.parquet"),
            "verdicts.parquet differs",
        ),
        (campaign.join("static.sarif"), "static.sarif differs"),
    ];
    for (file, named) in cases {
        let original = std::fs::read(&file).unwrap();
        flip(&file);
        let (ok, text) = verify(&results);
        std::fs::write(&file, &original).unwrap();
        assert!(!ok, "a flipped byte in {} passed:\n{text}", file.display());
        let failed: Vec<&str> = text.lines().filter(|l| l.starts_with("FAIL")).collect();
        assert!(
            failed.iter().any(|l| l.contains(named)),
            "{}: the failure does not name {named:?}: {failed:#?}",
            file.display()
        );
    }
    // Restored, it passes again.
    assert!(verify(&results).0);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn verify_sh_reruns_a_drawn_sample_of_targets_and_compares_only_their_grids() {
    let published = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/thirdparty");
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    copy(&published, &results.join("thirdparty"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../VERIFY.sh");
    // Seed "e" draws the dishonest twin first (sha256 of "e:<id>"): a fixture, with
    // confirmed cells to agree on.
    let output = Command::new("bash")
        .arg(script)
        .args(["--quick", "--rerun", "--sample", "1", "--sample-seed", "e"])
        .arg(&results)
        .env("VAC", common::VAC)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("rerunning 1 of thirdparty's targets (seed e): dishonest"),
        "{text}"
    );
    let rerun = text
        .lines()
        .find(|l| l.starts_with("PASS rerun of thirdparty"))
        .unwrap_or_else(|| panic!("no rerun line:\n{text}"));
    // Only the drawn server's cells are compared: the others are not reported missing.
    assert!(rerun.contains(" 0 changed"), "{rerun}");
    assert!(
        !results.join("thirdparty/.verify-sample.toml").exists(),
        "the sample's campaign file is left behind"
    );
}
