//! Data-driven: contract + observation → expected verdict grid (`tests/data/grade/*.json`).
//! Also checks, for every case, completeness and the evidence each verdict must carry.

mod common;
mod grid;

use serde::Deserialize;
use vac_contracts::{
    CompiledContract, CompletenessError, Contract, Grades, Observation, ToolDecl, derive, grade,
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
    expected: Vec<grid::Expected>,
    /// Grading must fail with this message instead.
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    unattributed: Vec<String>,
    #[serde(default)]
    uncontracted: Vec<String>,
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
        grid::check_grid(&label, &grades, &case.expected, &mut failures);
        for cell in &grades.cells {
            grid::check_evidence(&label, cell, &case.observation, &mut failures);
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
            "evidence": null,
            "calls": 0,
            "succeeded": 0
        })
    );
}

#[test]
fn grades_round_trip_through_serde() {
    let (_, grades) = read_only_pair();
    let json = serde_json::to_string(&grades).unwrap();
    assert_eq!(serde_json::from_str::<Grades>(&json).unwrap(), grades);
}
