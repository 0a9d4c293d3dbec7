//! `vac import` as data: every `tests/data/import/<case>/config.json` gives exactly its
//! `expected.toml` (a campaign file `vac campaign check` accepts) or is refused with exit 2
//! and exactly its `expected.err` (naming the file and the key). `VAC_BLESS=1` rewrites them.

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn configs_import_to_their_expected_campaigns_or_are_refused_by_key() {
    let bless = std::env::var("VAC_BLESS").is_ok_and(|v| !v.is_empty());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cases: Vec<_> = std::fs::read_dir(root.join("tests/data/import"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    assert!(cases.len() >= 8);
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let config = format!("tests/data/import/{name}/config.json");
        let output = Command::new(common::VAC)
            .args(["import", &config, "--name", &name])
            .current_dir(root)
            .output()
            .unwrap();
        let (expected, found) = if case.join("expected.err").exists() {
            assert_eq!(output.status.code(), Some(2), "{name}: {output:?}");
            (
                case.join("expected.err"),
                String::from_utf8(output.stderr).unwrap(),
            )
        } else {
            assert!(output.status.success(), "{name}: {output:?}");
            let text = String::from_utf8(output.stdout).unwrap();
            // What it writes is a campaign vac runs.
            let file = tmp.path().join(format!("{name}.toml"));
            std::fs::write(&file, &text).unwrap();
            let check = Command::new(common::VAC)
                .args(["campaign", "check", file.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(check.status.success(), "{name}: {check:?}\n{text}");
            (case.join("expected.toml"), text)
        };
        if bless {
            std::fs::write(&expected, &found).unwrap();
        } else if std::fs::read_to_string(&expected).unwrap() != found {
            failures.push(format!("{name}: found\n{found}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn secrets_are_never_copied_and_an_existing_out_file_is_kept() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("campaign.toml");
    let run = |args: &[&str]| {
        Command::new(common::VAC)
            .args(args)
            .current_dir(root)
            .output()
            .unwrap()
    };
    let config = "tests/data/import/claude-desktop/config.json";
    let first = run(&["import", config, "--out", out.to_str().unwrap()]);
    assert!(first.status.success(), "{first:?}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("ghp_0123456789"), "{text}");
    assert!(
        text.contains("\"GITHUB_PERSONAL_ACCESS_TOKEN\" = \"${GITHUB_PERSONAL_ACCESS_TOKEN}\"")
    );
    assert!(text.contains("\"LOG_LEVEL\" = \"info\""));
    let again = run(&["import", config, "--out", out.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
}
