//! The static analyser's rules as data: every `tests/data/static/<case>/` holds a
//! `tools.json` (a tools/list result), optionally the `contract.toml` whose `[scope]` the
//! case is read under, and `expected.json`: the rule the case is about, whether it fires,
//! and every finding of every rule, exactly. `VAC_BLESS=1` rewrites the findings.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use vac_analysis::scan::{Rule, Scope, scan, tools_of};

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/static");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    cases
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn findings_of(case: &Path) -> Value {
    let tools = read_json(&case.join("tools.json"));
    let contract = case.join("contract.toml");
    let scope = match std::fs::read_to_string(&contract) {
        Ok(text) => Scope::of_contract("contract.toml", &text).unwrap(),
        Err(_) => Scope::None,
    };
    let tools = tools_of(&tools).unwrap();
    let findings = scan("cases", tools, &scope);
    Value::Array(findings.iter().map(|f| f.to_json()).collect())
}

#[test]
fn every_case_gives_exactly_its_expected_findings() {
    let bless = std::env::var("VAC_BLESS").is_ok_and(|v| !v.is_empty());
    let mut failures = Vec::new();
    for case in cases() {
        let path = case.join("expected.json");
        let mut expected = read_json(&path);
        let found = findings_of(&case);
        let rule = expected["rule"].as_str().unwrap().to_owned();
        let fires = expected["fires"].as_bool().unwrap();
        let fired = found
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == rule.as_str());
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(
            fired,
            fires,
            "{name}: {rule} should {}fire; findings: {found:#}",
            if fires { "" } else { "not " }
        );
        if bless {
            expected["findings"] = found;
            let mut text = serde_json::to_string_pretty(&expected).unwrap();
            text.push('\n');
            std::fs::write(&path, text).unwrap();
        } else if expected["findings"] != found {
            failures.push(format!(
                "{name}: expected {:#}\nfound {found:#}",
                expected["findings"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_rule_has_a_case_that_fires_and_one_that_does_not() {
    let mut seen: Vec<(String, bool)> = Vec::new();
    for case in cases() {
        let expected = read_json(&case.join("expected.json"));
        seen.push((
            expected["rule"].as_str().unwrap().to_owned(),
            expected["fires"].as_bool().unwrap(),
        ));
    }
    for rule in Rule::ALL {
        for fires in [true, false] {
            assert!(
                seen.contains(&(rule.id().to_owned(), fires)),
                "{} has no case where it {}",
                rule.id(),
                if fires { "fires" } else { "does not fire" }
            );
        }
    }
}

#[test]
fn rules_md_documents_every_rule_with_the_clauses_it_predicts() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("RULES.md")).unwrap();
    for rule in Rule::ALL {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` ", rule.id())))
            .unwrap_or_else(|| panic!("RULES.md has no table row for {}", rule.id()));
        assert!(row.contains(&format!("`{}`", rule.name())), "{row}");
        let classes: Vec<String> = rule.classes().iter().map(|c| format!("`{c}`")).collect();
        let want = if classes.is_empty() {
            "none".to_owned()
        } else {
            classes.join(", ")
        };
        assert!(row.contains(&want), "{row} should predict {want}");
        assert!(row.contains(rule.severity().0), "{row}");
    }
}

#[test]
fn a_file_that_is_not_a_tools_list_is_named_as_such() {
    assert!(
        tools_of(&json!({"jsonrpc": "2.0"}))
            .unwrap_err()
            .to_string()
            .contains("tools")
    );
    assert_eq!(
        tools_of(&json!({"tools": [{"name": "a"}, {"description": "no name"}]}))
            .unwrap_err()
            .to_string(),
        "tools[1] has no string `name`"
    );
    let response = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "a"}]}});
    assert_eq!(tools_of(&response).unwrap().len(), 1);
    assert_eq!(tools_of(&json!([{"name": "a"}])).unwrap().len(), 1);
}

#[test]
fn the_static_sarif_validates_and_each_finding_is_one_result_with_its_rule() {
    let mut findings = Vec::new();
    for case in cases() {
        let tools = read_json(&case.join("tools.json"));
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        findings.extend(scan(&name, tools_of(&tools).unwrap(), &Scope::None));
    }
    let locate = |f: &vac_analysis::scan::Finding| {
        Some((
            format!("analysis/tests/data/static/{}/tools.json", f.server),
            1,
        ))
    };
    let log = vac_analysis::sarif::static_sarif(&findings, "cases", "0.1.0", &locate);
    let schema: Value = serde_json::from_str(include_str!("data/sarif-schema-2.1.0.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&log)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let run = &log["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), Rule::ALL.len());
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), findings.len());
    let mut fingerprints = std::collections::HashSet::new();
    for (result, finding) in results.iter().zip(&findings) {
        let index = result["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index]["id"], result["ruleId"]);
        assert_eq!(result["ruleId"], finding.rule.id());
        assert!(fingerprints.insert(result["partialFingerprints"]["vacStatic/v1"].clone()));
        assert!(
            result["locations"][0]["physicalLocation"]["region"]["startLine"]
                .as_u64()
                .unwrap()
                >= 1
        );
    }
}
