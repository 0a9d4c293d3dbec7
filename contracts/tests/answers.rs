//! Data-driven: a tool result (or its text) → what the answer achieved
//! (`tests/data/answers/*.json`): refusals told in text, in the shapes and languages real
//! servers use, beside answers that merely mention errors, and answers that found nothing.

mod common;

use serde::Deserialize;
use serde_json::{Value, json};
use vac_contracts::Answer;
use vac_contracts::answer::judge;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    /// The one text part of a result…
    #[serde(default)]
    text: Option<String>,
    /// …or the whole result.
    #[serde(default)]
    result: Option<Value>,
    answer: Answer,
}

impl common::Named for Case {
    fn name(&self) -> &str {
        &self.name
    }
}

#[test]
fn every_answer_is_judged_as_its_case_says() {
    let mut wrong = Vec::new();
    let cases = common::cases::<Case>("answers");
    for (label, case) in &cases {
        let result = match (&case.text, &case.result) {
            (Some(text), None) => json!({"content": [{"type": "text", "text": text}]}),
            (None, Some(result)) => result.clone(),
            _ => panic!("{label}: give a text or a result, not both"),
        };
        let got = judge(&result);
        if got != case.answer {
            wrong.push(format!(
                "{label}: judged {got:?}, expected {:?}",
                case.answer
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {}:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}
