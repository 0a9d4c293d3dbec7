//! End to end: the protocol witness of writes (SPEC §3.5, issue #6) through `vac probe`:
//! the negative control, the flip, and a server that makes the witness unusable. Needs root.

mod common;

use common::*;
use serde_json::Value;

fn sensors(cell: &Value) -> &Vec<Value> {
    cell["evidence"]["sensors"]
        .as_array()
        .unwrap_or_else(|| panic!("no sensors: {cell}"))
}

fn witness_of(cell: &Value) -> Option<&Value> {
    sensors(cell)
        .iter()
        .find(|s| s["sensor"] == "protocol_witness")
}

#[test]
fn dishonest_open_note_write_is_confirmed_by_the_flip_and_by_the_overlay() {
    if !privileged("dishonest_open_note_write_is_confirmed_by_the_flip_and_by_the_overlay") {
        return;
    }
    let probe = probe(&[], &fixture("dishonest"));
    let cell = cell(&probe.json, "open_note", "fs.write");
    assert_eq!(cell["verdict"], "confirmed", "{cell}");
    let effects = cell["evidence"]["effects"].as_array().unwrap();
    let flip = effects
        .iter()
        .find(|e| e["detail"]["witness"] == "protocol")
        .unwrap_or_else(|| panic!("no protocol flip: {cell}"));
    let path = flip["path"].as_str().unwrap();
    assert!(
        path.starts_with(&format!("{}/notes/draft-", lab_places(&probe).work))
            && path.ends_with("b.md"),
        "{flip}"
    );
    let detail = &flip["detail"];
    assert_eq!(detail["first"]["presence"], "absent", "{flip}");
    assert_eq!(detail["second"]["presence"], "present", "{flip}");
    assert_eq!(detail["second"]["excerpt"], "placeholder\n", "{flip}");
    assert!(detail["second"]["blake3"].is_string(), "{flip}");
    assert_eq!(detail["negative_control"]["presence"], "absent", "{flip}");
    assert_eq!(detail["first"]["arguments"], detail["second"]["arguments"]);
    // The overlay saw the same file created, with the artefact's bytes.
    let overlay = effects
        .iter()
        .find(|e| e["path"] == path && e["detail"]["witness"].is_null())
        .unwrap_or_else(|| panic!("the overlay's created flip file: {cell}"));
    assert_eq!(overlay["class"], "created", "{overlay}");
    assert!(
        overlay.to_string().contains("placeholder"),
        "the overlay's excerpt: {overlay}"
    );
    let flip_calls: Vec<u64> = cell["evidence"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["index"].as_u64().unwrap())
        .collect();
    assert!(
        flip_calls.contains(&detail["second"]["call"].as_u64().unwrap()),
        "{flip_calls:?}"
    );
    let witness = witness_of(cell).unwrap_or_else(|| panic!("{cell}"));
    assert_eq!(witness["status"], "live", "{witness}");
    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
}

#[test]
fn honest_open_note_write_is_refuted_with_the_negative_control_read_absent() {
    if !privileged("honest_open_note_write_is_refuted_with_the_negative_control_read_absent") {
        return;
    }
    let probe = probe(&[], &fixture("honest"));
    let cell = cell(&probe.json, "open_note", "fs.write");
    assert_eq!(cell["verdict"], "refuted", "{cell}");
    let names: Vec<&str> = sensors(cell)
        .iter()
        .map(|s| s["sensor"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"fs_writes"), "{names:?}");
    let witness = witness_of(cell).unwrap_or_else(|| panic!("{cell}"));
    assert_eq!(witness["status"], "live", "{witness}");
    assert_eq!(witness["tool"], "open_note", "{witness}");
    let control = &witness["detail"]["negative_control"];
    assert_eq!(control["presence"], "absent", "{witness}");
    assert!(
        control["excerpt"].as_str().unwrap().contains("not found"),
        "{control}"
    );
    let flip = witness["detail"]["flip"].as_array().unwrap();
    assert!(flip.iter().all(|r| r["presence"] == "absent"), "{witness}");
    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
}

/// A read-only tool with a path argument that answers every call with content.
const ALWAYS_PRESENT: &str = r#"
REPLY = "sunny"
tool = {"name": "peek", "description": "Shows a file.", "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
def tools(m): return {"tools": [tool]}
"#;

#[test]
fn a_server_that_reads_everything_present_makes_the_witness_unusable_and_says_so() {
    if !privileged("a_server_that_reads_everything_present_makes_the_witness_unusable_and_says_so")
    {
        return;
    }
    let script = python_server("always", ALWAYS_PRESENT, "pass");
    let probe = probe(&[], &["/usr/bin/python3", "-c", &script]);
    let json = &probe.json;
    // The overlay still backs fs.write; the unusable witness backs no refuted cell.
    let write = cell(json, "peek", "fs.write");
    assert_eq!(write["verdict"], "refuted", "{write}");
    for refuted in cells(json, "refuted") {
        assert!(witness_of(refuted).is_none(), "{refuted}");
    }
    let subject = json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool"] == "peek")
        .unwrap_or_else(|| panic!("no subject run: {json}"));
    assert_eq!(subject["protocol_witness"]["status"], "failed", "{subject}");
    assert_eq!(
        subject["protocol_witness"]["reason"],
        "negative control read present: witness unusable"
    );
    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
}
