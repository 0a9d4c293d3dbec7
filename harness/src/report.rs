//! Rendering a probe: the SPEC §5 JSON document and a short human table of it. Both take a
//! [`ProbeReport`], which is always graded from receipts (`vac probe` and `vac report`
//! alike), so the two commands print the same bytes for the same directory.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::probe::ProbeReport;

/// The JSON document of `--json`: `verdicts` (one object per tool × clause, with `tool`,
/// `clause`, `verdict`, `reason`, `evidence`) and `receipts`, the receipt directory.
pub fn json(report: &ProbeReport) -> Value {
    let verdicts: Vec<Value> = report
        .grades
        .iter()
        .flat_map(|g| &g.cells)
        .map(|cell| {
            let mut value = cell.to_json();
            value["contract"] = json!(report.contract);
            value
        })
        .collect();
    json!({
        "target": report.target,
        "status": if report.failure.is_some() { "errored" } else { "completed" },
        "error": report.failure,
        "protocol_version": report.protocol_version,
        "tools": report.tools,
        "manifest": report.manifest,
        "contract": report.contract,
        "verdicts": verdicts,
        "unattributed": report.grades.as_ref().map(|g| g.unattributed.len()).unwrap_or(0),
        "runs": report.runs,
        "receipts": report.receipts,
        "head": report.head,
    })
}

/// A table of verdicts, the evidence one line each, from a probe's JSON document.
pub fn table(doc: &Value) -> String {
    let text = |key: &str| doc[key].as_str().unwrap_or("?").to_string();
    let mut out = String::new();
    let _ = writeln!(out, "target    {}", text("target"));
    let _ = writeln!(
        out,
        "receipts  {} (head {})",
        text("receipts"),
        short(&text("head"))
    );
    if let Some(error) = doc["error"].as_str() {
        let _ = writeln!(out, "ERRORED   the server could not be audited: {error}");
        return out;
    }
    let _ = writeln!(out, "contract  {}", short(&text("contract")));
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<20} {:<19} {:<10} EVIDENCE",
        "TOOL", "CLAUSE", "VERDICT"
    );
    for cell in doc["verdicts"].as_array().into_iter().flatten() {
        let name = |key: &str| cell[key].as_str().unwrap_or("?").to_string();
        let _ = writeln!(
            out,
            "{:<20} {:<19} {:<10} {}",
            name("tool"),
            name("clause"),
            name("verdict"),
            one_line(cell)
        );
    }
    out
}

fn one_line(cell: &Value) -> String {
    let evidence = &cell["evidence"];
    let reason = cell["reason"].as_str().unwrap_or_default();
    let Some(effects) = evidence["effects"].as_array() else {
        return reason.to_string();
    };
    let arguments = |index: &Value| {
        evidence["calls"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| &c["index"] == index)
            .map_or(String::new(), |c| c["arguments"].to_string())
    };
    let effects: Vec<String> = effects
        .iter()
        .map(|e| {
            let excerpt = e["detail"]["excerpt"]
                .as_str()
                .map(|x| format!(" {:?}", x.chars().take(40).collect::<String>()))
                .unwrap_or_default();
            let hash = e["detail"]["blake3"]
                .as_str()
                .map(|h| format!(" b3:{}", &h[..h.len().min(12)]))
                .unwrap_or_default();
            let when = match (
                &e["attribution"]["call"],
                &e["attribution"]["after_response"],
            ) {
                (index @ Value::Number(_), _) => format!(" in call #{index} {}", arguments(index)),
                (_, index @ Value::Number(_)) => {
                    format!(" after the response to call #{index} {}", arguments(index))
                }
                _ => String::from(" unattributed"),
            };
            format!(
                "{} {}{}{}{}",
                e["class"].as_str().unwrap_or("?"),
                e["path"].as_str().unwrap_or("?"),
                hash,
                excerpt,
                when
            )
        })
        .collect();
    let subtracted = evidence["control_subtracted"]
        .as_array()
        .map_or(0, Vec::len);
    format!("{}; control subtracted: {subtracted}", effects.join("; "))
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(16)]
}
