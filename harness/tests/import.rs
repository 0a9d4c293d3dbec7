//! `vac import` as data: every `tests/data/import/<case>/config.*` (one realistic file per
//! agent host's format, and the shapes that are refused) gives exactly its `expected.toml` on
//! stdout (a campaign file `vac campaign check` accepts) and its `expected.err` on stderr
//! (what was imported, skipped and left to fill in), or, with no `expected.toml`, is refused
//! with exit 2 and exactly its `expected.err` (naming the file and the key). No line of a
//! case's `secrets` appears in anything the import wrote. `VAC_BLESS=1` rewrites them.

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
    assert!(cases.len() >= 16);
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut secrets_checked = 0;
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let config = std::fs::read_dir(&case)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .find(|f| f.starts_with("config."))
            .unwrap_or_else(|| panic!("{name}: no config.* file"));
        let config = format!("tests/data/import/{name}/{config}");
        let output = Command::new(common::VAC)
            .args(["import", &config, "--name", &name])
            .current_dir(root)
            .output()
            .unwrap();
        let stdout = String::from_utf8(output.stdout).unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        let expected_toml = case.join("expected.toml");
        let mut compared = vec![(case.join("expected.err"), stderr.clone())];
        if expected_toml.exists() || (bless && output.status.success()) {
            assert!(output.status.success(), "{name}: {stderr}");
            // What it writes is a campaign vac runs.
            let file = tmp.path().join(format!("{name}.toml"));
            std::fs::write(&file, &stdout).unwrap();
            let check = Command::new(common::VAC)
                .args(["campaign", "check", file.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(check.status.success(), "{name}: {check:?}\n{stdout}");
            compared.push((expected_toml, stdout.clone()));
        } else {
            assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
            assert!(stdout.is_empty(), "{name}: {stdout}");
        }
        if let Ok(secrets) = std::fs::read_to_string(case.join("secrets")) {
            for secret in secrets.lines().filter(|l| !l.is_empty()) {
                assert!(
                    std::fs::read_to_string(root.join(&config))
                        .unwrap()
                        .contains(secret),
                    "{name}: the secret {secret:?} is not in its config"
                );
                for (what, text) in [("stdout", &stdout), ("stderr", &stderr)] {
                    if text.contains(secret) {
                        failures.push(format!("{name}: {what} holds the secret {secret:?}"));
                    }
                }
                secrets_checked += 1;
            }
        }
        for (expected, found) in compared {
            if bless {
                std::fs::write(&expected, &found).unwrap();
            } else if std::fs::read_to_string(&expected).unwrap_or_default() != found {
                failures.push(format!(
                    "{name}: {} differs; found\n{found}",
                    expected.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    assert!(secrets_checked >= 15, "{secrets_checked}");
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
