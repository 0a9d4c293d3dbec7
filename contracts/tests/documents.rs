//! Data-driven: contract document + tools/list + observation → expected verdict grid
//! (`tests/data/documents/<case>/`), and bad documents → their `file:line:column` error
//! (`tests/data/bad/<case>.toml`, the expected message on the first line after `# error: `).

mod grid;

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use vac_contracts::{
    Clause, ContractDocument, Grades, LabPaths, Observation, ToolDecl, Verdict, grade,
};

fn data(kind: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(kind)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn json<T: DeserializeOwned>(path: &Path) -> T {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    entries
}

fn lab() -> LabPaths {
    LabPaths::at("/lab")
}

/// Grades one case directory; the document is named `contract.toml` in bases and errors.
fn grade_case(dir: &Path) -> (Observation, Grades, vac_contracts::CompiledContract) {
    let doc = ContractDocument::parse("contract.toml", &read(&dir.join("contract.toml")))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let tools: Vec<ToolDecl> = json(&dir.join("tools.json"));
    let compiled = doc
        .compile(&tools, &lab())
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let observation: Observation = json(&dir.join("observation.json"));
    let grades = grade(&compiled, &observation)
        .unwrap_or_else(|e| panic!("{}: grading: {e}", dir.display()));
    (observation, grades, compiled)
}

#[test]
fn document_cases_grade_to_their_expected_grids() {
    let cases = sorted_entries(&data("documents"));
    assert!(!cases.is_empty());
    let mut failures = Vec::new();
    let mut clauses_confirmed = std::collections::BTreeSet::new();
    for dir in cases {
        let label = dir.file_name().unwrap().to_string_lossy().into_owned();
        let (observation, grades, compiled) = grade_case(&dir);
        if let Err(e) = grades.check_complete(&compiled) {
            failures.push(format!("{label}: incomplete: {e}"));
        }
        let expected: Vec<grid::Expected> = json(&dir.join("expected.json"));
        grid::check_grid(&label, &grades, &expected, &mut failures);
        for cell in &grades.cells {
            grid::check_evidence(&label, cell, &observation, &mut failures);
            if matches!(cell.verdict, Verdict::Confirmed { .. }) {
                clauses_confirmed.insert(cell.clause);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let missing: Vec<_> = Clause::ALL
        .iter()
        .filter(|c| !clauses_confirmed.contains(c))
        .collect();
    assert!(missing.is_empty(), "no case confirms {missing:?}");
}

#[test]
fn allowing_the_audit_log_turns_only_read_note_fs_write_refuted() {
    let denied_dir = data("documents/notes_audit_denied");
    let allowed_dir = data("documents/notes_audit_allowed");
    for file in ["tools.json", "observation.json"] {
        assert_eq!(
            read(&denied_dir.join(file)),
            read(&allowed_dir.join(file)),
            "{file} differs"
        );
    }
    // The allowance is appended, so every other rule keeps its position (and basis).
    let (denied_text, allowed_text) = (
        read(&denied_dir.join("contract.toml")),
        read(&allowed_dir.join("contract.toml")),
    );
    assert!(allowed_text.starts_with(&denied_text));
    assert!(allowed_text[denied_text.len()..].contains(".notes-server/server.log"));

    let (_, denied, _) = grade_case(&denied_dir);
    let (_, allowed, _) = grade_case(&allowed_dir);
    assert_eq!(denied.cells.len(), allowed.cells.len());
    let mut changed = Vec::new();
    for (before, after) in denied.cells.iter().zip(&allowed.cells) {
        assert_eq!((&before.tool, before.clause), (&after.tool, after.clause));
        if before.to_json() != after.to_json() {
            changed.push((
                before.tool.as_str(),
                before.clause,
                before.verdict.name(),
                after.verdict.name(),
            ));
        }
    }
    assert_eq!(
        changed,
        [("read_note", Clause::FsWrite, "confirmed", "refuted")]
    );
}

fn bad_tools() -> Vec<ToolDecl> {
    serde_json::from_value(serde_json::json!([
        { "name": "read_note", "annotations": { "readOnlyHint": true } },
        { "name": "save_note", "annotations": { "readOnlyHint": false } }
    ]))
    .unwrap()
}

#[test]
fn bad_documents_fail_with_file_line_column_and_the_offending_input() {
    let files = sorted_entries(&data("bad"));
    assert!(!files.is_empty());
    let mut failures = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text = read(&file);
        let expected = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("# error: "))
            .unwrap_or_else(|| panic!("{name}: first line must be `# error: …`"));
        let result =
            ContractDocument::parse(&name, &text).and_then(|doc| doc.compile(&bad_tools(), &lab()));
        match result {
            Ok(_) => failures.push(format!("{name}: accepted")),
            Err(e) if e.to_string() == expected => {
                if !e.to_string().starts_with(&format!("{name}:")) {
                    failures.push(format!("{name}: message lacks the position"));
                }
            }
            Err(e) => failures.push(format!("{name}:\n  got      {e}\n  expected {expected}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
