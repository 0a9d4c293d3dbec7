//! SARIF 2.1.0 for code scanning: one rule per clause, one result per confirmed cell.
//!
//! GitHub's limits shape it: at most 20 runs per file and 25,000 results per run. Up to
//! [`SERVERS_PER_RUN`] servers go in one run whose `automationDetails.id` is
//! `vac/<campaign>/`; a larger map is split into one run per clause family (`fs`, `exec`,
//! `net`, `result`, `manifest`, `idempotent`: six runs, `vac/<campaign>/<family>/`), so
//! that each category holds fewer results and GitHub keeps them apart. Results beyond
//! [`MAX_RESULTS_PER_RUN`] in a run are dropped and counted in the run's
//! `properties.results_dropped`, never silently.

use serde_json::{Value, json};

use crate::map::{Map, MapCell, ServerMap, ToolMap};
use crate::rows::Rows;
use crate::scan::{Finding, Rule};
use crate::severity::{self, CLAUSES};

pub const SERVERS_PER_RUN: usize = 20;
pub const MAX_RESULTS_PER_RUN: usize = 25_000;
const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
const INFORMATION_URI: &str = "https://example.invalid/vac";

/// Where a result points: a repository-relative file and line.
struct Location {
    uri: String,
    line: u64,
}

/// The SARIF log of `map`. `root` is the directory that was read, as the user named it:
/// results without a contract file point at `<root>/<probe>/receipts.jsonl`, the line of
/// their verdict record.
pub fn sarif(map: &Map, rows: &Rows, root: &str, version: &str) -> Value {
    let families: Vec<(&str, Vec<&str>)> = if map.servers.len() <= SERVERS_PER_RUN {
        vec![("", map.clauses.iter().map(String::as_str).collect())]
    } else {
        let mut families: Vec<(&str, Vec<&str>)> = Vec::new();
        for clause in &map.clauses {
            let family = clause.split('.').next().unwrap_or(clause);
            match families.iter_mut().find(|(f, _)| *f == family) {
                Some((_, clauses)) => clauses.push(clause),
                None => families.push((family, vec![clause])),
            }
        }
        families
    };
    let runs: Vec<Value> = families
        .iter()
        .map(|(family, clauses)| run(map, rows, root, version, family, clauses))
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": runs,
    })
}

fn run(map: &Map, rows: &Rows, root: &str, version: &str, family: &str, clauses: &[&str]) -> Value {
    let rules: Vec<Value> = clauses.iter().map(|c| rule(c)).collect();
    // Logical locations: each server, then its tools nested under it.
    let mut logical = Vec::new();
    let mut tool_index = std::collections::HashMap::new();
    let mut notifications = Vec::new();
    for server in &map.servers {
        let parent = logical.len();
        // A target that could not be audited is said, not left out: a notification of
        // the run's invocation, on the server's logical location.
        for n in &server.not_audited {
            notifications.push(json!({
                "level": "error",
                "message": {"text": format!("{}: not audited: {n}", server.id)},
                "locations": [{"logicalLocations": [{"index": parent}]}],
            }));
        }
        logical.push(json!({
            "name": server.id,
            "fullyQualifiedName": server.id,
            "kind": "module",
        }));
        for tool in &server.tools {
            tool_index.insert((server.id.as_str(), tool.name.as_str()), logical.len());
            logical.push(json!({
                "name": tool.name,
                "fullyQualifiedName": format!("{}/{}", server.id, tool.name),
                "kind": "function",
                "parentIndex": parent,
            }));
        }
    }
    let mut results = Vec::new();
    let mut dropped = 0u64;
    for (server, tool, cell) in map.cells() {
        if cell.verdict != "confirmed" {
            continue;
        }
        let Some(rule_index) = clauses.iter().position(|c| *c == cell.clause) else {
            continue;
        };
        if results.len() == MAX_RESULTS_PER_RUN {
            dropped += 1;
            continue;
        }
        let index = tool_index[&(server.id.as_str(), tool.name.as_str())];
        results.push(result(rows, root, server, tool, cell, rule_index, index));
    }
    let id = match family {
        "" => format!("vac/{}/", map.campaign),
        family => format!("vac/{}/{family}/", map.campaign),
    };
    json!({
        "tool": {"driver": {
            "name": "vac",
            "version": version,
            "informationUri": INFORMATION_URI,
            "rules": rules,
        }},
        "automationDetails": {"id": id},
        "invocations": [{
            "executionSuccessful": notifications.is_empty(),
            "toolExecutionNotifications": notifications,
        }],
        "columnKind": "unicodeCodePoints",
        "logicalLocations": logical,
        "results": results,
        "properties": {"results_dropped": dropped},
    })
}

/// The stable rule id of a clause.
pub fn rule_id(clause: &str) -> String {
    format!("vac/{clause}")
}

fn rule(clause: &str) -> Value {
    let severity = severity::clause_severity(clause);
    let known = CLAUSES.iter().any(|(c, _)| *c == clause);
    let name: String = clause
        .split(['.', '_'])
        .map(|w| {
            let mut chars = w.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect();
    json!({
        "id": rule_id(clause),
        "name": name,
        "shortDescription": {"text": format!("MCP tool broke its {clause} promise")},
        "fullDescription": {"text": severity.summary},
        "help": {
            "text": format!(
                "{} vac observed the effect in a sandbox and graded it against the pre-registered \
                 effect contract (clause {clause}); the result's properties name the receipt \
                 record that holds the evidence.",
                severity.summary
            ),
        },
        "defaultConfiguration": {"level": level(severity.name)},
        "properties": {
            "tags": if known { vec!["security", "mcp", clause] } else { vec!["security", "mcp"] },
            "security-severity": severity.score,
            "precision": "high",
            "problem.severity": if severity.name == "low" { "warning" } else { "error" },
        },
    })
}

fn level(severity: &str) -> &'static str {
    match severity {
        "low" => "warning",
        _ => "error",
    }
}

fn result(
    rows: &Rows,
    root: &str,
    server: &ServerMap,
    tool: &ToolMap,
    cell: &MapCell,
    rule_index: usize,
    logical_index: usize,
) -> Value {
    let record = cell
        .records
        .iter()
        .find(|r| r.verdict == "confirmed")
        .expect("a confirmed cell has a confirmed record");
    let location = location(rows, root, &record.probe, &tool.name, record.seq);
    let fingerprint =
        blake3::hash(format!("{}\0{}\0{}", server.id, tool.name, cell.clause).as_bytes())
            .to_hex()
            .to_string();
    let repetitions = cell.records.len();
    let confirmed = cell.counts[0];
    json!({
        "ruleId": rule_id(&cell.clause),
        "ruleIndex": rule_index,
        "level": level(cell.severity.name),
        "message": {"text": format!(
            "{} × {} on {}: {} ({confirmed} of {repetitions} probe{} confirmed)",
            tool.name, cell.clause, server.id, record.reason,
            if repetitions == 1 { "" } else { "s" }
        )},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": location.uri},
                "region": {"startLine": location.line},
            },
            "logicalLocations": [{
                "index": logical_index,
                "name": tool.name,
                "fullyQualifiedName": format!("{}/{}", server.id, tool.name),
                "kind": "function",
            }],
        }],
        "partialFingerprints": {"vacCell/v1": fingerprint},
        "properties": {
            "server": server.id,
            "tool": tool.name,
            "clause": cell.clause,
            "stable": cell.stable,
            "receipt": {"probe": &*record.probe, "seq": record.seq, "hash": &*record.hash},
            "contract": &*record.contract,
        },
    })
}

/// The contract file when the probe was graded against one the user wrote (the line of
/// the tool's table in it), else the verdict record's line in the receipt log.
fn location(rows: &Rows, root: &str, probe: &str, tool: &str, seq: u64) -> Location {
    let found = rows.probe(probe);
    if let Some(p) = found
        && let (Some(name), Some(text)) = (&p.contract_name, &p.contract_text)
    {
        // A contract vac derived has no file: its results point at the receipt log.
        let relative = !name.starts_with('/')
            && !name.contains("://")
            && !vac_contracts::DERIVED_NAMES.contains(&name.as_str());
        if relative {
            let line = text
                .lines()
                .position(|l| {
                    let l = l.trim();
                    l == format!("[tools.\"{tool}\"]") || l == format!("[tools.{tool}]")
                })
                .map_or(1, |i| i as u64 + 1);
            return Location {
                uri: name.clone(),
                line,
            };
        }
    }
    let mut uri = String::new();
    for part in [root.trim_end_matches('/'), probe] {
        if !part.is_empty() {
            uri.push_str(part);
            uri.push('/');
        }
    }
    uri.push_str(vac_receipts::LOG_FILE);
    Location { uri, line: seq + 1 }
}

/// Where a static finding points: the manifest it was read from, as a repository-relative
/// file and line (the tool's entry in a tools/list file, the manifest record in a receipt
/// log). `None` leaves the result without a physical location.
pub type Locate<'a> = dyn Fn(&Finding) -> Option<(String, u64)> + 'a;

/// The line of a tools/list file (`text`, at `uri`) that declares `tool`: the first line
/// with a `"name"` key whose value is the tool's quoted name, else line 1 (the file).
pub fn manifest_line(uri: &str, text: &str, tool: &str) -> (String, u64) {
    let needle = format!("\"{tool}\"");
    let line = text
        .lines()
        .position(|l| l.contains("\"name\"") && l.contains(&needle))
        .map_or(1, |i| i as u64 + 1);
    (uri.to_owned(), line)
}

/// The SARIF log of `vac static`: one run (`automationDetails.id` `vac-static/<name>/`),
/// one rule per static rule, one result per finding, each with the clauses it predicts in
/// its properties (which is what `vac static --import` reads back).
pub fn static_sarif(findings: &[Finding], name: &str, version: &str, locate: &Locate<'_>) -> Value {
    let rules: Vec<Value> = Rule::ALL
        .iter()
        .map(|rule| {
            let (severity, score) = rule.severity();
            json!({
                "id": rule.id(),
                "name": rule.name(),
                "shortDescription": {"text": rule.summary()},
                "fullDescription": {"text": format!(
                    "{} Predicts: {}. Rationale: analysis/RULES.md.",
                    rule.summary(),
                    if rule.classes().is_empty() {
                        "no clause".to_owned()
                    } else {
                        rule.classes().iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
                    }
                )},
                "help": {"text": format!(
                    "{} vac read this from the manifest alone (static); whether the tool does \
                     it is what `vac probe` measures.",
                    rule.summary()
                )},
                "defaultConfiguration": {"level": level(severity)},
                "properties": {
                    "tags": ["security", "mcp", "static"],
                    "security-severity": score,
                    "precision": "medium",
                    "predicts": rule.classes().iter().map(|c| c.as_str()).collect::<Vec<_>>(),
                },
            })
        })
        .collect();
    let mut logical: Vec<Value> = Vec::new();
    let mut index_of: Vec<(String, String, usize)> = Vec::new();
    for f in findings {
        if !logical
            .iter()
            .any(|l| l["fullyQualifiedName"] == f.server.as_str())
        {
            logical
                .push(json!({"name": f.server, "fullyQualifiedName": f.server, "kind": "module"}));
        }
        if !index_of
            .iter()
            .any(|(s, t, _)| *s == f.server && *t == f.tool)
        {
            let parent = logical
                .iter()
                .position(|l| l["fullyQualifiedName"] == f.server.as_str())
                .expect("pushed above");
            index_of.push((f.server.clone(), f.tool.clone(), logical.len()));
            logical.push(json!({
                "name": f.tool,
                "fullyQualifiedName": format!("{}/{}", f.server, f.tool),
                "kind": "function",
                "parentIndex": parent,
            }));
        }
    }
    let results: Vec<Value> = findings
        .iter()
        .map(|f| {
            let rule_index = Rule::ALL.iter().position(|r| *r == f.rule).expect("a rule");
            let logical_index = index_of
                .iter()
                .find(|(s, t, _)| *s == f.server && *t == f.tool)
                .map(|(_, _, i)| *i)
                .expect("indexed above");
            let mut location = json!({
                "logicalLocations": [{
                    "index": logical_index,
                    "name": f.tool,
                    "fullyQualifiedName": format!("{}/{}", f.server, f.tool),
                    "kind": "function",
                }],
            });
            if let Some((uri, line)) = locate(f) {
                location["physicalLocation"] = json!({
                    "artifactLocation": {"uri": uri},
                    "region": {"startLine": line.max(1)},
                });
            }
            let pointer = f
                .evidence
                .get("pointer")
                .and_then(Value::as_str)
                .unwrap_or("");
            let fingerprint = blake3::hash(
                format!("{}\0{}\0{}\0{pointer}", f.server, f.tool, f.rule.id()).as_bytes(),
            )
            .to_hex()
            .to_string();
            json!({
                "ruleId": f.rule.id(),
                "ruleIndex": rule_index,
                "level": level(f.severity),
                "message": {"text": format!("{} on {}: {}", f.tool, f.server, f.message)},
                "locations": [location],
                "partialFingerprints": {"vacStatic/v1": fingerprint},
                "properties": {
                    "server": f.server,
                    "tool": f.tool,
                    "predicts": f.predicts.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
                    "security-severity": f.score,
                    "evidence": f.evidence,
                },
            })
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "vac static",
                "version": version,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }},
            "automationDetails": {"id": format!("vac-static/{name}/")},
            "columnKind": "unicodeCodePoints",
            "logicalLocations": logical,
            "results": results,
        }],
    })
}

/// For findings read from receipts: the line of each server's first initial tools/list
/// record in its first probe's log, under `root` as the user named it.
pub fn manifest_locations(rows: &Rows, root: &str) -> Vec<(String, String, u64)> {
    let mut out: Vec<(String, String, u64)> = Vec::new();
    for probe in &rows.probes {
        if out.iter().any(|(s, _, _)| *s == probe.server) {
            continue;
        }
        let Some(seq) = rows
            .manifests
            .iter()
            .filter(|m| &*m.probe == probe.dir.as_str() && m.phase == "initial")
            .map(|m| m.seq)
            .min()
        else {
            continue;
        };
        let mut uri = String::new();
        for part in [root.trim_end_matches('/'), probe.dir.as_str()] {
            if !part.is_empty() {
                uri.push_str(part);
                uri.push('/');
            }
        }
        uri.push_str(vac_receipts::LOG_FILE);
        out.push((probe.server.clone(), uri, seq + 1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::manifest_line;

    #[test]
    fn a_finding_points_at_the_line_that_names_its_tool_or_the_file() {
        let text = "{\"tools\": [\n  {\"name\": \"read_note\"},\n  {\"name\": \"read\"}\n]}\n";
        assert_eq!(manifest_line("m.json", text, "read"), ("m.json".into(), 3));
        assert_eq!(
            manifest_line("m.json", text, "read_note"),
            ("m.json".into(), 2)
        );
        assert_eq!(manifest_line("m.json", text, "gone"), ("m.json".into(), 1));
    }
}
