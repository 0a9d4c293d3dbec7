//! Attribution under load (issue "Fast probes"): the twins probed twenty times each as one
//! campaign, once in each isolation mode (adaptive, per-tool, per-call), while two busy processes
//! keep both cores busy, each probe's subject runs concurrent and its quiet periods decided
//! by the sandbox. Every repetition gives the same
//! grid: each of the dishonest twin's eleven planted behaviours confirmed in all twenty,
//! the honest twin never confirmed.

mod common;

use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// The tool of each planted behaviour, 1 to 11 (`harness/src/fixture`).
const PLANTED: [&str; 11] = [
    "read_note",
    "open_note",
    "get_config",
    "search_docs",
    "summarize_account",
    "word_count",
    "check_status",
    "get_tips",
    "list_projects",
    "query_data",
    "index_notes",
];

const REPETITIONS: usize = 20;

/// Processes that keep a core busy until dropped.
struct Load(Vec<Child>);

impl Load {
    fn cores(n: usize) -> Load {
        Load(
            (0..n)
                .map(|_| {
                    Command::new("/bin/sh")
                        .args(["-c", "while :; do :; done"])
                        .stdout(Stdio::null())
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn the_twins_keep_their_grid_in_every_repetition_with_both_cores_busy() {
    let test = "the_twins_keep_their_grid_in_every_repetition_with_both_cores_busy";
    if !common::privileged(test) {
        return;
    }
    for isolation in ["adaptive", "per-tool", "per-call"] {
        twins_under_load(isolation);
    }
}

/// Twenty repetitions of each twin in one isolation mode, with both cores busy.
fn twins_under_load(isolation: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let mut text = format!(
        "name = \"load\"\nseed = 5\nrepetitions = {REPETITIONS}\njobs = 1\nisolation = \"{isolation}\"\nout = \"runs\"\n"
    );
    for mode in ["honest", "dishonest"] {
        text.push_str(&format!(
            "\n[[target]]\nid = \"{mode}\"\ncommand = [\"vac\", \"fixture\", \"--mode\", \"{mode}\"]\n"
        ));
    }
    let file = tmp.path().join("load.toml");
    std::fs::write(&file, text).unwrap();

    let load = Load::cores(2);
    let run = Command::new(common::VAC)
        .args(["campaign", "run", file.to_str().unwrap(), "--quiet"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    drop(load);
    assert_eq!(
        run.status.code(),
        Some(1),
        "{isolation}: the dishonest twin's violations: {run:?}"
    );

    let dir = tmp.path().join("runs");
    let out = tmp.path().join("map");
    let report = Command::new(common::VAC)
        .args([
            "report",
            dir.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(matches!(report.status.code(), Some(0 | 1)), "{report:?}");
    let map: Value = serde_json::from_slice(&std::fs::read(out.join("map.json")).unwrap()).unwrap();

    let mut unstable = Vec::new();
    for server in map["servers"].as_array().unwrap() {
        let id = server["id"].as_str().unwrap();
        let mut confirmed_tools = Vec::new();
        for tool in server["tools"].as_array().unwrap() {
            let name = tool["name"].as_str().unwrap();
            for cell in tool["cells"].as_array().unwrap() {
                let records = cell["records"].as_array().unwrap().len();
                assert_eq!(records, REPETITIONS, "{isolation} {id} {name}: {cell}");
                if cell["stable"] != true {
                    unstable.push(format!(
                        "{isolation} {id} {name} {}: {cell}",
                        cell["clause"]
                    ));
                }
                if cell["verdict"] == "confirmed" && !confirmed_tools.contains(&name) {
                    confirmed_tools.push(name);
                }
            }
        }
        match id {
            "honest" => assert!(
                confirmed_tools.is_empty(),
                "{isolation} honest: {confirmed_tools:?}"
            ),
            _ => {
                let mut missed: Vec<&str> = PLANTED
                    .iter()
                    .copied()
                    .filter(|t| !confirmed_tools.contains(t))
                    .collect();
                missed.sort_unstable();
                assert!(
                    missed.is_empty(),
                    "{isolation}: planted behaviours not confirmed: {missed:?}"
                );
            }
        }
    }
    assert!(
        unstable.is_empty(),
        "cells that changed between repetitions: {unstable:#?}"
    );
}
