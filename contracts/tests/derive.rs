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

#[test]
fn a_rendered_derived_contract_parses_back_to_the_same_rules() {
    use vac_contracts::{ContractDocument, LabPaths, ServerIdentity, render};
    for (label, case) in common::cases::<Case>("derive") {
        let derived = derive(&case.tools);
        let server = ServerIdentity {
            name: "server \"x\"".into(),
            version: Some("1.0".into()),
        };
        let text = render(&derived, &server);
        let document = ContractDocument::parse("derived.toml", &text)
            .unwrap_or_else(|e| panic!("{label}: {e}\n{text}"));
        assert_eq!(document.server(), &server);
        let resolved = document
            .resolve(&case.tools, &LabPaths::at("/lab"))
            .unwrap();
        for (ours, theirs) in derived.tools.iter().zip(&resolved.tools) {
            let rules = |t: &vac_contracts::ToolContract| {
                t.rules
                    .iter()
                    .map(|r| (r.clause, r.rule.clone()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(rules(ours), rules(theirs), "{label}: {}\n{text}", ours.tool);
        }
    }
}
