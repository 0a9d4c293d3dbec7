//! Servers that promise nothing (`tests/unannotated/GROUND_TRUTH.toml`): fixtures without
//! annotations, each performing its behaviour for real, probed in default mode. The cells
//! confirmed must be exactly the ground truth's, each with evidence; the benign servers
//! confirm nothing.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{privileged, probe};
use serde_json::Value;

#[derive(serde::Deserialize)]
struct Truth {
    server: Vec<Server>,
}

#[derive(serde::Deserialize)]
struct Server {
    file: String,
    behaviour: String,
    confirmed: Vec<(String, String)>,
    /// Texts the confirmed cells' evidence must hold (what shows the behaviour happened).
    #[serde(default)]
    evidence: Vec<String>,
    /// What the report's behaviour profile must list: `[row, kind, text]`, the row (a tool
    /// or `(server)`) holding under `kind` a target that contains `text`.
    #[serde(default)]
    profile: Vec<(String, String, String)>,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/unannotated")
}

/// The interpreter for a fixture: the system's, so that no launcher script (a pyenv shim)
/// stands between vac and the server.
fn interpreter(file: &str) -> &'static str {
    let (system, name) = match file.rsplit_once('.') {
        Some((_, "py")) => ("/usr/bin/python3", "python3"),
        Some((_, "js")) => ("/usr/bin/node", "node"),
        _ => panic!("{file}: neither .py nor .js"),
    };
    if Path::new(system).exists() {
        system
    } else {
        name
    }
}

#[test]
fn every_unannotated_fixture_confirms_exactly_its_ground_truth_in_default_mode() {
    if !privileged("every_unannotated_fixture_confirms_exactly_its_ground_truth_in_default_mode") {
        return;
    }
    let text = std::fs::read_to_string(fixtures().join("GROUND_TRUTH.toml")).unwrap();
    let truth: Truth = toml::from_str(&text).unwrap();
    assert!(truth.server.len() >= 12, "at least 12 fixture servers");
    let mut wrong = Vec::new();
    for server in &truth.server {
        let path = fixtures().join(&server.file).display().to_string();
        let probe = probe(&[], &[interpreter(&server.file), &path]);
        let confirmed: Vec<&Value> = probe.json["verdicts"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no verdicts in {}", server.file, probe.json))
            .iter()
            .filter(|c| c["verdict"] == "confirmed")
            .collect();
        for cell in &confirmed {
            let effects = cell["evidence"]["effects"].as_array();
            assert!(
                effects.is_some_and(|e| !e.is_empty()),
                "{}: a confirmed cell without effects: {cell}",
                server.file
            );
        }
        let evidence = serde_json::to_string(&confirmed).unwrap();
        for text in &server.evidence {
            if !evidence.contains(text.as_str()) {
                wrong.push(format!(
                    "{}: the confirmed cells' evidence lacks {text:?}",
                    server.file
                ));
            }
        }
        for (row, kind, text) in &server.profile {
            let targets = probe.json["profile"][row][kind]["targets"].as_array();
            let listed = targets
                .into_iter()
                .flatten()
                .any(|t| t.as_str().is_some_and(|t| t.contains(text.as_str())));
            if !listed {
                wrong.push(format!(
                    "{}: the profile of {row} lists no {kind} target with {text:?}: {}",
                    server.file, probe.json["profile"]
                ));
            }
        }
        let got: BTreeSet<(String, String)> = confirmed
            .iter()
            .map(|c| {
                (
                    c["tool"].as_str().unwrap().into(),
                    c["clause"].as_str().unwrap().into(),
                )
            })
            .collect();
        let want: BTreeSet<(String, String)> = server.confirmed.iter().cloned().collect();
        let exit = probe.output.status.code();
        let want_exit = Some(if want.is_empty() { 0 } else { 1 });
        if got != want || exit != want_exit {
            wrong.push(format!(
                "{} ({}): confirmed {got:?}, expected {want:?}; exit {exit:?}, expected {want_exit:?}",
                server.file, server.behaviour
            ));
        }
        // Nothing here rests on a declared hint: the fixtures declare none. Every graded
        // cell says what it rests on instead.
        for cell in probe.json["verdicts"].as_array().unwrap() {
            let graded = ["confirmed", "refuted"].contains(&cell["verdict"].as_str().unwrap());
            let rests = cell["rests_on"].as_str();
            if graded && !matches!(rests, Some("intent" | "universal" | "default")) {
                wrong.push(format!(
                    "{}: a cell rests on {rests:?}: {cell}",
                    server.file
                ));
            }
        }
        // The universal clauses are never `nothing_promised`: only listening, which a
        // tool's own words may allow, and `idempotent` can be (the network may be any
        // host, but no secret may leave).
        let open: Vec<&Value> = probe.json["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["reason"] == "nothing_promised")
            // The server row has no results or manifest entry of its own, and its launch
            // may listen (CONTRACTS.md, "The server row").
            .filter(|c| !vac_contracts::is_server_row(c["tool"].as_str().unwrap()))
            .filter(|c| !["net.listen", "idempotent"].contains(&c["clause"].as_str().unwrap()))
            .collect();
        if !open.is_empty() {
            wrong.push(format!(
                "{}: universal cells left nothing_promised: {open:?}",
                server.file
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
