//! The CI action's script (`action/run.sh`, which `action.yml` runs) against the twins, as a
//! server author's pipeline runs it: the dishonest twin fails on its new cells with its SARIF
//! written; with that run's map.json committed as the baseline it passes, its SARIF marking
//! each result unchanged; a suppression with a reason passes it too, and one past its expiry
//! does not. The honest twin passes with no baseline.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn run(dir: &Path, out: &str, command: &str, env: &[(&str, &str)]) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../action/run.sh");
    let mut run = Command::new("bash");
    run.arg(script)
        .current_dir(dir)
        .env("VAC", common::VAC)
        .env("VAC_COMMAND", command)
        .env("VAC_OUT", out)
        .env("GITHUB_OUTPUT", dir.join(format!("{out}.github-output")))
        .env_remove("VAC_BASELINE")
        .env_remove("VAC_SUPPRESS")
        .env_remove("GITHUB_STEP_SUMMARY");
    for (name, value) in env {
        run.env(name, value);
    }
    run.output().unwrap()
}

fn sarif_results(dir: &Path, out: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join(out).join("map/map.sarif")).unwrap();
    let log: Value = serde_json::from_str(&text).unwrap();
    log["runs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["results"].as_array().unwrap().clone())
        .collect()
}

#[test]
fn the_action_fails_on_new_cells_and_passes_on_its_baseline_or_suppressions() {
    if !common::privileged(
        "the_action_fails_on_new_cells_and_passes_on_its_baseline_or_suppressions",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let dishonest = common::fixture("dishonest").join(" ");
    let said = |o: &Output| {
        format!(
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };

    // No baseline yet: every confirmed cell is new.
    let first = run(
        dir,
        "first",
        &dishonest,
        &[("VAC_BASELINE", ".vac/baseline.json")],
    );
    assert_eq!(first.status.code(), Some(1), "{}", said(&first));
    assert!(said(&first).contains("no baseline at .vac/baseline.json yet"));
    let results = sarif_results(dir, "first");
    assert!(results.len() >= 10, "{}", results.len());
    let outputs = std::fs::read_to_string(dir.join("first.github-output")).unwrap();
    assert!(outputs.contains("sarif=first/map/map.sarif") && outputs.contains("exit-code=1"));

    // Its map.json committed as the baseline: nothing new, every result unchanged.
    std::fs::create_dir_all(dir.join(".vac")).unwrap();
    std::fs::copy(
        dir.join("first/map/map.json"),
        dir.join(".vac/baseline.json"),
    )
    .unwrap();
    let second = run(
        dir,
        "second",
        &dishonest,
        &[("VAC_BASELINE", ".vac/baseline.json")],
    );
    assert_eq!(second.status.code(), Some(0), "{}", said(&second));
    assert!(said(&second).contains(&format!("0 new, 0 fixed, {} unchanged", results.len())));
    for result in sarif_results(dir, "second") {
        assert_eq!(result["baselineState"], "unchanged", "{result}");
    }

    // A suppression with a reason passes; past its expiry it is not applied.
    let suppressions = |expires: &str| {
        format!(
            "[[suppress]]\nserver = \"*\"\ntool = \"*\"\nclause = \"*\"\nreason = \"the demo's liar\"\nexpires = \"{expires}\"\n"
        )
    };
    std::fs::write(dir.join("live.toml"), suppressions("2999-12-31")).unwrap();
    std::fs::write(dir.join("expired.toml"), suppressions("2000-01-01")).unwrap();
    let third = run(dir, "third", &dishonest, &[("VAC_SUPPRESS", "live.toml")]);
    assert_eq!(third.status.code(), Some(0), "{}", said(&third));
    for result in sarif_results(dir, "third") {
        assert_eq!(
            result["suppressions"][0]["justification"],
            "the demo's liar"
        );
    }
    let fourth = run(
        dir,
        "fourth",
        &dishonest,
        &[("VAC_SUPPRESS", "expired.toml")],
    );
    assert_eq!(fourth.status.code(), Some(1), "{}", said(&fourth));
    assert!(said(&fourth).contains("expired, not applied"));

    // The honest twin: nothing confirmed, a clean pass with no baseline.
    let honest = run(dir, "honest", &common::fixture("honest").join(" "), &[]);
    assert_eq!(honest.status.code(), Some(0), "{}", said(&honest));
    assert!(sarif_results(dir, "honest").is_empty());
}
