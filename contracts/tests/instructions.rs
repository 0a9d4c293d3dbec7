//! Data-driven: text in a tool result → whether it reads as instructions to the model, and
//! the signals it must raise (`tests/data/instructions/*.json`): injections in the languages
//! the detector reads, and look-alikes in each that must not be flagged.

mod common;

use serde::Deserialize;
use serde_json::json;
use vac_contracts::detect::instructions_in_result;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    text: String,
    flagged: bool,
    /// Signals the finding must name (more may fire).
    #[serde(default)]
    signals: Vec<String>,
}

impl common::Named for Case {
    fn name(&self) -> &str {
        &self.name
    }
}

#[test]
fn instructions_are_found_in_every_language_and_look_alikes_are_not() {
    let mut wrong = Vec::new();
    for (label, case) in common::cases::<Case>("instructions") {
        let result = json!({"content": [{"type": "text", "text": case.text}]});
        let findings = instructions_in_result(&result);
        let found: Vec<String> = findings
            .iter()
            .flat_map(|f| {
                serde_json::to_value(f.evidence().signals)
                    .unwrap()
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .map(|s| {
                format!(
                    "{} ({})",
                    s["signal"].as_str().unwrap_or(""),
                    s["matched"].as_str().unwrap_or("")
                )
            })
            .collect();
        if findings.is_empty() == case.flagged {
            wrong.push(format!(
                "{label}: flagged {} {found:?}",
                !findings.is_empty()
            ));
            continue;
        }
        for signal in &case.signals {
            if !found.iter().any(|f| f.starts_with(&format!("{signal} ("))) {
                wrong.push(format!("{label}: {signal} missing from {found:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
