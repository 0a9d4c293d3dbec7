//! Data-driven: contract + observation → expected verdict grid (`tests/data/grade/*.json`).
//! Also checks, for every case, completeness and the evidence each verdict must carry.

mod common;

use serde::Deserialize;
use serde_json::Value;
use vac_contracts::{
    Cell, Clause, CompiledContract, CompletenessError, Contract, Grades, Observation, SensorState,
    ToolDecl, Verdict, derive, grade,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    #[serde(default, rename = "about")]
    _about: Option<String>,
    /// Derive the contract from these, or take `contract` as written.
    #[serde(default)]
    tools: Option<Vec<ToolDecl>>,
    #[serde(default)]
    contract: Option<Contract>,
    observation: Observation,
    /// The whole grid, in order.
    #[serde(default)]
    expected: Vec<Expected>,
    /// Grading must fail with this message instead.
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    unattributed: Vec<String>,
    #[serde(default)]
    uncontracted: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    tool: String,
    clause: Clause,
    verdict: String,
    /// Required for skipped and errored; optional sentence otherwise.
    #[serde(default)]
    reason: Option<String>,
    /// Confirmed: the paths of the evidence's effects, in order.
    #[serde(default)]
    effects: Option<Vec<String>>,
    /// Confirmed: the indices of the causing calls; refuted: the number of calls.
    #[serde(default)]
    calls: Option<Value>,
}

impl common::Named for Case {
    fn name(&self) -> &str {
        &self.name
    }
}

fn compiled(case: &Case) -> CompiledContract {
    let contract = match (&case.tools, &case.contract) {
        (Some(tools), None) => derive(tools),
        (None, Some(contract)) => contract.clone(),
        _ => panic!("{}: give exactly one of tools and contract", case.name),
    };
    contract.compile().expect("case contract compiles")
}

#[test]
fn verdict_grids_match_the_data_files() {
    let mut failures = Vec::new();
    for (label, case) in common::cases::<Case>("grade") {
        let contract = compiled(&case);
        let result = grade(&contract, &case.observation);
        let grades = match (result, &case.error) {
            (Ok(grades), None) => grades,
            (Err(e), Some(expected)) if e.to_string() == *expected => continue,
            (Ok(_), Some(expected)) => {
                failures.push(format!("{label}: graded, expected error {expected:?}"));
                continue;
            }
            (Err(e), _) => {
                failures.push(format!("{label}: grading failed: {e}"));
                continue;
            }
        };
        let json = serde_json::to_string(&grades).unwrap();
        if serde_json::from_str::<Grades>(&json).ok().as_ref() != Some(&grades) {
            failures.push(format!("{label}: grades do not round-trip through serde"));
        }
        if let Err(e) = grades.check_complete(&contract) {
            failures.push(format!("{label}: incomplete: {e}"));
        }
        check_grid(&label, &grades, &case, &mut failures);
        for cell in &grades.cells {
            check_evidence(&label, cell, &case.observation, &mut failures);
        }
        let paths = |effects: &[vac_contracts::Effect]| -> Vec<String> {
            effects.iter().map(|e| e.path.clone()).collect()
        };
        if paths(&grades.unattributed) != case.unattributed {
            failures.push(format!(
                "{label}: unattributed {:?}",
                paths(&grades.unattributed)
            ));
        }
        if paths(&grades.uncontracted) != case.uncontracted {
            failures.push(format!(
                "{label}: uncontracted {:?}",
                paths(&grades.uncontracted)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn check_grid(label: &str, grades: &Grades, case: &Case, failures: &mut Vec<String>) {
    let got: Vec<_> = grades.cells.iter().map(|c| (&c.tool, c.clause)).collect();
    let want: Vec<_> = case.expected.iter().map(|e| (&e.tool, e.clause)).collect();
    if got != want {
        failures.push(format!("{label}: grid {got:?}, expected {want:?}"));
        return;
    }
    for (cell, want) in grades.cells.iter().zip(&case.expected) {
        let at = format!("{label}: {} × {}", cell.tool, cell.clause);
        let name = cell.verdict.name();
        if name != want.verdict {
            failures.push(format!(
                "{at}: {name} ({}), expected {}",
                cell.reason(),
                want.verdict
            ));
            continue;
        }
        match (&want.reason, name) {
            (Some(reason), _) if *reason != cell.reason() => {
                failures.push(format!(
                    "{at}: reason {:?}, expected {reason:?}",
                    cell.reason()
                ));
            }
            (None, "skipped" | "errored") => failures.push(format!("{at}: data lacks reason")),
            _ => {}
        }
        match &cell.verdict {
            Verdict::Confirmed { effects, calls, .. } => {
                let paths: Vec<_> = effects.iter().map(|e| e.path.as_str()).collect();
                if let Some(want) = &want.effects
                    && paths != *want
                {
                    failures.push(format!("{at}: effects {paths:?}, expected {want:?}"));
                }
                let indices: Vec<_> = calls.iter().map(|c| c.index).collect();
                if let Some(want) = &want.calls
                    && serde_json::json!(indices) != *want
                {
                    failures.push(format!("{at}: calls {indices:?}, expected {want}"));
                }
            }
            Verdict::Refuted { calls, .. } => {
                if let Some(want) = &want.calls
                    && serde_json::json!(calls) != *want
                {
                    failures.push(format!("{at}: {calls} calls, expected {want}"));
                }
            }
            Verdict::Skipped { .. } | Verdict::Errored { .. } => {}
        }
    }
}

/// What SPEC §3.7 says each verdict must carry, checked on every cell of every case.
fn check_evidence(label: &str, cell: &Cell, obs: &Observation, failures: &mut Vec<String>) {
    let at = format!("{label}: {} × {}", cell.tool, cell.clause);
    let json = cell.to_json();
    let keys: Vec<_> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    if keys != ["clause", "evidence", "reason", "tool", "verdict"] {
        failures.push(format!("{at}: JSON keys {keys:?}"));
    }
    match &cell.verdict {
        Verdict::Confirmed {
            effects,
            calls,
            control_subtracted,
            sensors,
            ..
        } => {
            let caused = effects.iter().all(|e| {
                calls
                    .iter()
                    .any(|c| Some(c.index) == e.attribution.call_index() && c.tool == cell.tool)
            });
            if effects.is_empty() || !caused {
                failures.push(format!("{at}: effects not backed by the tool's calls"));
            }
            if sensors.is_empty() {
                failures.push(format!("{at}: no sensor self-test in evidence"));
            }
            if control_subtracted.len() != obs.control_subtracted.len() {
                failures.push(format!("{at}: control effects not carried"));
            }
            let evidence = &json["evidence"];
            for key in ["effects", "calls", "control_subtracted", "sensors", "basis"] {
                if evidence.get(key).is_none() {
                    failures.push(format!("{at}: evidence lacks {key}"));
                }
            }
        }
        Verdict::Refuted { calls, sensors, .. } => {
            if *calls == 0 || sensors.is_empty() {
                failures.push(format!("{at}: refuted without calls or sensors"));
            }
            if sensors.iter().any(|s| s.status != SensorState::Live) {
                failures.push(format!("{at}: refuted with a sensor not live"));
            }
        }
        Verdict::Skipped { .. } | Verdict::Errored { .. } => {}
    }
}

fn read_only_pair() -> (CompiledContract, Grades) {
    let tools: Vec<ToolDecl> = serde_json::from_value(serde_json::json!([
        { "name": "read_note", "annotations": { "readOnlyHint": true } },
        { "name": "get_tips", "annotations": { "readOnlyHint": true } }
    ]))
    .unwrap();
    let contract = derive(&tools).compile().unwrap();
    let grades = grade(&contract, &Observation::default()).unwrap();
    (contract, grades)
}

#[test]
fn completeness_check_names_the_missing_cell() {
    let (contract, mut grades) = read_only_pair();
    assert_eq!(grades.check_complete(&contract), Ok(()));
    let removed = grades.cells.remove(2);
    assert_eq!(
        grades.check_complete(&contract),
        Err(CompletenessError::Missing {
            tool: removed.tool,
            clause: removed.clause
        })
    );
}

#[test]
fn completeness_check_names_the_duplicate_cell() {
    let (contract, mut grades) = read_only_pair();
    grades.cells.push(grades.cells[1].clone());
    let err = grades.check_complete(&contract).unwrap_err();
    assert_eq!(
        err.to_string(),
        "2 verdicts for tool \"read_note\" × fs.delete"
    );
}

#[test]
fn completeness_check_rejects_cells_outside_the_contract() {
    let (contract, mut grades) = read_only_pair();
    let mut stray = grades.cells[0].clone();
    stray.tool = "ghost".into();
    grades.cells.push(stray);
    assert!(matches!(
        grades.check_complete(&contract),
        Err(CompletenessError::Unexpected { tool, .. }) if tool == "ghost"
    ));
}

#[test]
fn verdict_cell_json_has_the_spec_shape() {
    let (_, grades) = read_only_pair();
    assert_eq!(
        grades.verdicts_json()[0],
        serde_json::json!({
            "tool": "read_note",
            "clause": "fs.write",
            "verdict": "skipped",
            "reason": "not_called",
            "evidence": null
        })
    );
}

#[test]
fn grades_round_trip_through_serde() {
    let (_, grades) = read_only_pair();
    let json = serde_json::to_string(&grades).unwrap();
    assert_eq!(serde_json::from_str::<Grades>(&json).unwrap(), grades);
}
