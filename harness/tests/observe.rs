//! Control subtraction and per-call attribution as data (SPEC §3.4): each directory of
//! `tests/data/observe/` holds the recorded events of a control and a subject run
//! (`events.jsonl`) and what must be attributed and subtracted (`expected.json`). Runs
//! without root: nothing is spawned. `VAC_BLESS=1` rewrites the expected files.

use std::path::Path;

use vac_harness::probe::observe_case;

#[test]
fn every_observe_case_gives_its_expected_effects() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/observe");
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    assert!(cases.len() >= 5, "{} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let events = std::fs::read_to_string(case.join("events.jsonl")).unwrap();
        let got = observe_case(&events).unwrap_or_else(|e| panic!("{}: {e}", case.display()));
        let expected_path = case.join("expected.json");
        if std::env::var_os("VAC_BLESS").is_some() {
            let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
            std::fs::write(&expected_path, text).unwrap();
            continue;
        }
        let expected: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&expected_path).unwrap()).unwrap();
        if got != expected {
            failures.push(format!(
                "{}:\n  expected {expected}\n  got      {got}",
                case.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
