//! Data-driven: tool declarations → the derived contract (`tests/data/derive/*.json`).

mod common;

use serde::Deserialize;
use vac_contracts::{Contract, ToolDecl, derive};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    tools: Vec<ToolDecl>,
    contract: Contract,
}

impl common::Named for Case {
    fn name(&self) -> &str {
        &self.name
    }
}

#[test]
fn derived_contracts_match_the_data_files() {
    let mut failures = Vec::new();
    for (label, case) in common::cases::<Case>("derive") {
        let derived = derive(&case.tools);
        if derived != case.contract {
            failures.push(format!(
                "{label}: derived\n{}",
                serde_json::to_string_pretty(&derived).unwrap()
            ));
        }
        if let Err(e) = derived.compile() {
            failures.push(format!("{label}: derived contract does not compile: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
