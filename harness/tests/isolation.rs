//! Adaptive isolation against per-tool isolation (issue "Fast probes", SPEC §3.4): the
//! published campaign's targets — the twins, the broad fixture and the pinned third-party
//! servers — probed once in each mode give the same verdict grid, cell for cell, and the
//! adaptive receipts say for every tool which run it was graded on.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The published campaign, with `isolation` and the receipt directory set.
fn campaign(dir: &Path, isolation: &str) -> std::path::PathBuf {
    let published =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/thirdparty/campaign.toml");
    let text = std::fs::read_to_string(&published).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        match line.split('=').next().map(str::trim) {
            Some("name") => out.push_str(&format!("name = \"{isolation}\"\n")),
            Some("repetitions") => out.push_str("repetitions = 1\n"),
            Some("jobs") => out.push_str(&format!("jobs = 1\nisolation = \"{isolation}\"\n")),
            Some("out") => out.push_str(&format!("out = \"{isolation}\"\n")),
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    assert!(
        out.contains("isolation = "),
        "the published campaign sets jobs"
    );
    let file = dir.join(format!("{isolation}.toml"));
    std::fs::write(&file, out).unwrap();
    file
}

fn vac(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(common::VAC)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn adaptive_and_per_tool_isolation_give_the_same_grid_on_the_published_targets() {
    let test = "adaptive_and_per_tool_isolation_give_the_same_grid_on_the_published_targets";
    if !common::privileged(test) {
        return;
    }
    let installed = [
        "/opt/vac-thirdparty/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
        "/root/.vac-thirdparty/venv/bin/mcp-server-git",
    ]
    .iter()
    .all(|p| Path::new(p).exists());
    if !common::required(installed, test, "needs .ci/install-thirdparty.sh run first") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for isolation in ["per-tool", "adaptive"] {
        let file = campaign(tmp.path(), isolation);
        let run = vac(
            tmp.path(),
            &["campaign", "run", file.to_str().unwrap(), "--quiet"],
        );
        // Exit 1: the dishonest twin's violations are confirmed.
        assert_eq!(
            run.status.code(),
            Some(1),
            "{isolation}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
    let compare = vac(tmp.path(), &["campaign", "compare", "per-tool", "adaptive"]);
    let said = String::from_utf8_lossy(&compare.stdout);
    assert!(compare.status.success(), "{said}");
    assert!(said.contains(" 0 changed"), "{said}");

    // Every tool of an adaptive probe names the run it was graded on; some of each kind.
    let mut graded_on = std::collections::BTreeMap::<String, usize>::new();
    let root = tmp.path().join("adaptive");
    for target in std::fs::read_dir(&root).unwrap() {
        let target = target.unwrap().path();
        if !target.is_dir() {
            continue;
        }
        for probe in std::fs::read_dir(&target).unwrap() {
            let probe = probe.unwrap().path();
            if !vac_receipts::is_receipt_dir(&probe) {
                continue;
            }
            let report = vac(tmp.path(), &["report", probe.to_str().unwrap(), "--json"]);
            let json: Value = serde_json::from_slice(&report.stdout).unwrap();
            let isolation = json["isolation"].as_object().unwrap();
            for cell in json["verdicts"].as_array().unwrap() {
                let tool = cell["tool"].as_str().unwrap();
                if let Some(isolated) = isolation.get(tool) {
                    assert_eq!(&cell["isolation"], isolated, "{}", probe.display());
                }
            }
            for isolated in isolation.values() {
                let on = isolated["graded_on"].as_str().unwrap().to_string();
                if on == "own run" {
                    assert!(isolated["doubt"].is_string(), "{isolated}");
                }
                *graded_on.entry(on).or_default() += 1;
            }
            // The receipts' own verdict records agree with re-grading them.
            let verify = vac(tmp.path(), &["verify", probe.to_str().unwrap()]);
            assert!(
                verify.status.success(),
                "{}: {}",
                probe.display(),
                String::from_utf8_lossy(&verify.stdout)
            );
        }
    }
    assert!(
        graded_on.get("shared run").is_some_and(|n| *n >= 10),
        "{graded_on:?}"
    );
    assert!(
        graded_on.get("own run").is_some_and(|n| *n >= 1),
        "{graded_on:?}"
    );
}
