//! `contract.schema.json` and the examples of `CONTRACTS.md` agree with the parser: every
//! example (the documentation's and the test cases') parses, validates against the schema
//! (checked by a small validator for the subset the schema uses), and the schema names
//! exactly the keys the parser accepts.

use std::path::PathBuf;

use serde_json::Value;
use vac_contracts::{Clause, ContractDocument};

fn crate_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn schema() -> Value {
    serde_json::from_str(&std::fs::read_to_string(crate_file("contract.schema.json")).unwrap())
        .unwrap()
}

/// Every example document: the ```toml blocks of CONTRACTS.md and the test cases.
fn examples() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(crate_file("CONTRACTS.md")).unwrap();
    let mut all: Vec<(String, String)> = doc
        .split("```toml\n")
        .skip(1)
        .enumerate()
        .map(|(i, block)| {
            let end = block.find("```").expect("closed code block");
            (
                format!("CONTRACTS.md example {}", i + 1),
                block[..end].to_owned(),
            )
        })
        .collect();
    assert!(all.len() >= 3, "CONTRACTS.md lost its examples");
    let cases = crate_file("tests/data/documents");
    for entry in std::fs::read_dir(&cases).unwrap() {
        let path = entry.unwrap().path().join("contract.toml");
        all.push((
            path.display().to_string(),
            std::fs::read_to_string(&path).unwrap(),
        ));
    }
    all
}

fn keys(object: &Value) -> Vec<&str> {
    let mut keys: Vec<_> = object
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

#[test]
fn schema_names_exactly_the_keys_the_parser_accepts() {
    let schema = schema();
    let mut tool_keys: Vec<&str> = Clause::ALL.iter().map(|c| c.as_str()).collect();
    tool_keys.push("call");
    tool_keys.sort_unstable();
    assert_eq!(keys(&schema["$defs"]["tool"]["properties"]), tool_keys);
    assert_eq!(
        keys(&schema["properties"]),
        ["defaults", "scope", "server", "tools"]
    );
    assert_eq!(
        keys(&schema["properties"]["defaults"]["properties"]),
        ["call_destructive", "from_annotations"]
    );
}

#[test]
fn every_example_parses_and_validates_against_the_schema() {
    let schema = schema();
    let mut failures = Vec::new();
    for (name, text) in examples() {
        if let Err(e) = ContractDocument::parse(&name, &text) {
            failures.push(format!("{name}: {e}"));
        }
        let value: toml::Table = toml::from_str(&text).unwrap();
        let value = serde_json::to_value(value).unwrap();
        if let Err(e) = validate(&schema, &schema, &value, "") {
            failures.push(format!("{name}: schema: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_validator_rejects_what_the_parser_rejects() {
    let schema = schema();
    for bad in [
        "[server]\nname = 3\n",
        "[server]\nname = \"x\"\n[bogus]\n",
        "[server]\nname = \"x\"\n[tools.a]\n\"fs.writes\" = []\n",
        "[server]\nname = \"x\"\n[tools.a]\n\"fs.write\" = 3\n",
        "[server]\nname = \"x\"\n[tools.a]\n\"fs.write\" = \"scope\"\n",
        "[tools.a]\ncall = true\n",
    ] {
        assert!(ContractDocument::parse("bad.toml", bad).is_err(), "{bad}");
        let value = serde_json::to_value(toml::from_str::<toml::Table>(bad).unwrap()).unwrap();
        assert!(validate(&schema, &schema, &value, "").is_err(), "{bad}");
    }
}

/// The subset of JSON Schema the contract schema uses.
fn validate(root: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.strip_prefix("#/$defs/").unwrap();
        return validate(root, &root["$defs"][name], value, at);
    }
    if let Some(options) = schema.get("oneOf").and_then(Value::as_array) {
        let matching = options
            .iter()
            .filter(|o| validate(root, o, value, at).is_ok())
            .count();
        return (matching == 1)
            .then_some(())
            .ok_or(format!("{at}: {matching} oneOf branches match"));
    }
    if let Some(constant) = schema.get("const") {
        return (value == constant)
            .then_some(())
            .ok_or(format!("{at}: not {constant}"));
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return options
            .contains(value)
            .then_some(())
            .ok_or(format!("{at}: not one of {options:?}"));
    }
    let ok = match schema.get("type").and_then(Value::as_str) {
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("boolean") => value.is_boolean(),
        _ => true,
    };
    if !ok {
        return Err(format!("{at}: wrong type {value}"));
    }
    if let Some(items) = schema.get("items") {
        for (i, item) in value.as_array().into_iter().flatten().enumerate() {
            validate(root, items, item, &format!("{at}[{i}]"))?;
        }
    }
    let Some(object) = value.as_object() else {
        return Ok(());
    };
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !object.contains_key(required.as_str().unwrap()) {
            return Err(format!("{at}: missing {required}"));
        }
    }
    for (key, item) in object {
        let at = format!("{at}.{key}");
        match (
            schema["properties"].get(key),
            schema.get("additionalProperties"),
        ) {
            (Some(property), _) => validate(root, property, item, &at)?,
            (None, Some(Value::Bool(false))) => return Err(format!("{at}: not allowed")),
            (None, Some(additional)) => validate(root, additional, item, &at)?,
            (None, None) => {}
        }
    }
    Ok(())
}
