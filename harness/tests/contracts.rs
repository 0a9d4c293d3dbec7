//! End to end: written contracts through `vac probe --contract`, `vac contract derive` and
//! `vac report` (issue #7). The probes need root; the bad-contract cases that fail before
//! any run do not.

mod common;

use std::path::Path;

use common::*;

const SCOPED: &str = r#"
[server]
name = "vac-fixture-notes"

[scope]
paths = ["{work}/notes/**"]
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_scoped_contract_confirms_the_search_docs_escape_and_clears_the_honest_twin() {
    if !privileged("a_scoped_contract_confirms_the_search_docs_escape_and_clears_the_honest_twin") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let contract = write(dir.path(), "scoped.toml", SCOPED);
    let dishonest = probe(&["--contract", &contract], &fixture("dishonest"));
    let escape = cell(&dishonest.json, "search_docs", "fs.read");
    assert_eq!(escape["verdict"], "confirmed", "{escape}");
    let paths: Vec<&str> = escape["evidence"]["effects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    let lab = lab_places(&dishonest);
    let notes = format!("{}/notes/", lab.work);
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with(&format!("{}/.", lab.home))),
        "out-of-scope path as evidence: {paths:?}"
    );
    assert!(
        paths.iter().all(|p| !p.starts_with(&notes)),
        "in-scope reads are not violations: {paths:?}"
    );
    assert!(
        escape["reason"].as_str().unwrap().contains("scoped.toml"),
        "the basis names the contract: {escape}"
    );

    let honest = probe(&["--contract", &contract], &fixture("honest"));
    let confirmed: Vec<_> = honest.json["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "confirmed")
        .collect();
    assert!(confirmed.is_empty(), "{confirmed:?}");
    assert_eq!(
        cell(&honest.json, "search_docs", "fs.read")["verdict"],
        "refuted"
    );
}

/// The contract `vac contract derive` writes for the dishonest twin.
fn derive_dishonest() -> String {
    let derived = vac(&[
        "contract",
        "derive",
        "--",
        VAC,
        "fixture",
        "--mode",
        "dishonest",
    ]);
    assert_eq!(
        derived.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&derived.stderr)
    );
    String::from_utf8(derived.stdout).unwrap()
}

#[test]
fn allowing_the_audit_log_turns_only_that_cell_refuted() {
    if !privileged("allowing_the_audit_log_turns_only_that_cell_refuted") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let derived = derive_dishonest();
    // The researcher edits one line: read_note may append to its audit log.
    let section = derived
        .find("[tools.\"read_note\"]")
        .expect("read_note section");
    let line = section
        + derived[section..]
            .find("\"fs.write\" = []")
            .expect("read_note fs.write");
    let end = line + derived[line..].find('\n').unwrap();
    let allowed = format!(
        "{}\"fs.write\" = [\"{{home}}/.notes-server/server.log\"]{}",
        &derived[..line],
        &derived[end..]
    );

    let before = probe(
        &["--contract", &write(dir.path(), "derived.toml", &derived)],
        &fixture("dishonest"),
    );
    let after = probe(
        &["--contract", &write(dir.path(), "allowed.toml", &allowed)],
        &fixture("dishonest"),
    );
    let (before, after) = (grid(&before.json), grid(&after.json));
    let changed: Vec<_> = before.iter().zip(&after).filter(|(b, a)| b != a).collect();
    let cell = |verdict: &str| {
        (
            "read_note".to_string(),
            "fs.write".to_string(),
            verdict.to_string(),
        )
    };
    assert_eq!(
        changed,
        vec![(&cell("confirmed"), &cell("refuted"))],
        "every other verdict stays the same"
    );
}

#[test]
fn editing_a_contract_after_the_run_changes_neither_receipts_nor_regenerated_verdicts() {
    if !privileged(
        "editing_a_contract_after_the_run_changes_neither_receipts_nor_regenerated_verdicts",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "scoped.toml", SCOPED);
    let probe = probe(&["--contract", &path], &fixture("dishonest"));
    let receipts = probe.receipts.display().to_string();
    let log_before = std::fs::read(probe.receipts.join("receipts.jsonl")).unwrap();

    // After the run the researcher "fixes" the contract to allow everything.
    std::fs::write(&path, SCOPED.replace("{work}/notes/**", "**")).unwrap();

    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
    assert_eq!(
        std::fs::read(probe.receipts.join("receipts.jsonl")).unwrap(),
        log_before
    );
    let report = vac(&["report", "--json", &receipts]);
    let regenerated: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(
        grid(&regenerated),
        grid(&probe.json),
        "regenerated verdicts are the recorded ones"
    );
    assert_eq!(
        regenerated["contract"], probe.json["contract"],
        "graded against the pre-registered hash"
    );
    assert_eq!(
        regenerated["contract"].as_str().unwrap(),
        blake3::hash(SCOPED.as_bytes()).to_hex().as_str()
    );
    // The receipts hold the contract's original bytes.
    let log = vac_receipts::ReceiptLog::open(&probe.receipts).unwrap();
    let text = log
        .entries()
        .unwrap()
        .find_map(|e| match e.unwrap().record.body {
            vac_receipts::Body::Contract(contract) => Some(contract.text),
            _ => None,
        });
    assert_eq!(text.as_deref(), Some(SCOPED));
}

#[test]
fn bad_contracts_are_named_by_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("syntax.toml", "[server\nname = \"x\"\n", "syntax.toml:1:"),
        (
            "clause.toml",
            "[server]\nname = \"x\"\n[tools.read_note]\n\"fs.wrte\" = []\n",
            "clause.toml:4:1",
        ),
        (
            "glob.toml",
            "[server]\nname = \"x\"\n[tools.read_note]\n\"fs.write\" = [\"a[\"]\n",
            "glob.toml:4:",
        ),
        (
            "type.toml",
            "[server]\nname = \"x\"\n[tools.read_note]\n\"fs.write\" = 3\n",
            "type.toml:4:",
        ),
    ];
    for (name, text, location) in cases {
        let path = write(dir.path(), name, text);
        let out = dir.path().join(format!("{name}.receipts"));
        // These fail while parsing, before any sandbox: no root needed, nothing written.
        let output = vac(&[
            "probe",
            "--contract",
            &path,
            "--out",
            &out.display().to_string(),
            "--",
            "/bin/true",
        ]);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{name}: a bad contract is a usage error"
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(location), "{name}: {stderr}");
        assert!(
            !out.exists(),
            "{name}: nothing runs for a contract that does not parse"
        );
    }
}

#[test]
fn a_contract_naming_a_tool_the_server_lacks_is_named() {
    if !privileged("a_contract_naming_a_tool_the_server_lacks_is_named") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "unknown.toml",
        "[server]\nname = \"x\"\n[tools.read_nope]\n\"fs.write\" = []\n",
    );
    let out = dir.path().join("receipts").display().to_string();
    let [vac_bin, sub, flag, mode] = fixture("honest");
    let output = vac(&[
        "probe",
        "--contract",
        &path,
        "--out",
        &out,
        "--",
        vac_bin,
        sub,
        flag,
        mode,
    ]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("unknown.toml:3:") && stderr.contains("read_nope"),
        "{stderr}"
    );
}

#[test]
fn the_derived_contract_grades_like_the_annotations_it_came_from() {
    if !privileged("the_derived_contract_grades_like_the_annotations_it_came_from") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let derived = vac(&[
        "contract",
        "derive",
        "--from",
        "annotations",
        "--",
        VAC,
        "fixture",
        "--mode",
        "honest",
    ]);
    let text = String::from_utf8(derived.stdout).unwrap();
    let with = probe(
        &["--contract", &write(dir.path(), "derived.toml", &text)],
        &fixture("honest"),
    );
    let without = probe(&["--contract", "annotations"], &fixture("honest"));
    assert_eq!(grid(&with.json), grid(&without.json));
    // Same bytes pre-registered either way.
    assert_eq!(with.json["contract"], without.json["contract"]);
}

/// `vac contract derive` writes what a probe without `--contract` derives, the `(server)`
/// row included; probed with it as written, the dishonest twin's grid is the default one
/// (a rendered intent contract was refused for naming a tool not in tools/list).
#[test]
fn the_derived_intent_contract_grades_like_the_default_mode() {
    if !privileged("the_derived_intent_contract_grades_like_the_default_mode") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = derive_dishonest();
    assert!(text.contains("[tools.\"(server)\"]"), "{text}");
    let with = probe(
        &["--contract", &write(dir.path(), "derived.toml", &text)],
        &fixture("dishonest"),
    );
    let default = probe(&[], &fixture("dishonest"));
    assert_eq!(grid(&with.json), grid(&default.json));
    assert!(
        grid(&with.json)
            .iter()
            .any(|(tool, _, v)| tool == "(server)" && v != "skipped"),
        "the launch is graded"
    );
}

/// Two tools that promise `idempotentHint: true` and write a file: `save` rewrites the same
/// bytes on every call, `stamp` appends a line. The repeat of `save` leaves the state it
/// found (the harness reads the file's hash before and after it) and is refuted; the
/// repeat of `stamp` changes it and is confirmed, the file cited.
const REWRITES: &str = r#"
def tools(m):
    tool = lambda name, text: {"name": name, "description": text, "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
                        "openWorldHint": False}}
    return {"tools": [tool("save", "Saves the settings."), tool("stamp", "Stamps the log.")]}
"#;
const WRITE: &str = r#"
if m["params"]["name"] == "save":
    open("saved.txt", "w").write("same bytes\n")
if m["params"]["name"] == "stamp":
    with open("stamps.txt", "a") as f: f.write("stamp\n")
"#;

#[test]
fn a_repeat_that_rewrites_the_same_bytes_is_idempotent_and_one_that_appends_is_not() {
    if !privileged(
        "a_repeat_that_rewrites_the_same_bytes_is_idempotent_and_one_that_appends_is_not",
    ) {
        return;
    }
    let script = python_server("rewrites", REWRITES, WRITE);
    let probe = probe(&[], &["/usr/bin/python3", "-c", &script]);
    assert_eq!(probe.json["status"], "completed", "{:#}", probe.json);
    let save = cell(&probe.json, "save", "idempotent");
    assert_eq!(save["verdict"], "refuted", "{save}");
    let stamp = cell(&probe.json, "stamp", "idempotent");
    assert_eq!(stamp["verdict"], "confirmed", "{stamp}");
    let effects = stamp["evidence"]["effects"].as_array().unwrap();
    assert!(
        effects
            .iter()
            .all(|e| e["path"].as_str().unwrap().ends_with("/stamps.txt")),
        "{stamp}"
    );
    // The cited call is the repeat, and stamps.txt is not among the paths it left unchanged.
    let calls = stamp["evidence"]["calls"].as_array().unwrap();
    assert!(!calls.is_empty(), "{stamp}");
    for call in calls {
        assert!(call["repeat_of"].is_number(), "{stamp}");
        let unchanged = call["left_unchanged"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            !unchanged
                .iter()
                .any(|p| p.as_str().unwrap().ends_with("/stamps.txt")),
            "{stamp}"
        );
    }
    assert_report_matches(&probe);
}
