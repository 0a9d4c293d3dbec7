//! Rendering a probe: the SPEC §5 JSON document, a short human table of it, and the same
//! document regenerated from receipts alone.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use vac_receipts::{Body, ReceiptLog};

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
        "contract": report.contract,
        "verdicts": verdicts,
        "unattributed": report.grades.as_ref().map(|g| g.unattributed.len()).unwrap_or(0),
        "runs": report.runs,
        "receipts": report.receipts,
        "head": report.head,
    })
}

/// A table of verdicts, the evidence one line each, from a probe's JSON document or one
/// regenerated from receipts ([`from_receipts`]).
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

/// Why a report could not be regenerated from receipts.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("the receipts in {dir} do not verify")]
    Broken {
        dir: PathBuf,
        #[source]
        source: vac_receipts::VerifyError,
    },
    #[error("cannot read the receipts in {dir}")]
    Read {
        dir: PathBuf,
        #[source]
        source: vac_receipts::ReadError,
    },
}

/// The verdict document of a probe, regenerated from its receipts alone (after verifying
/// them): the verdicts as recorded, graded against the contract the receipts hold.
pub fn from_receipts(dir: &Path) -> Result<Value, ReportError> {
    let verified =
        vac_receipts::verify(dir, &vac_receipts::VerifyOptions::default()).map_err(|source| {
            ReportError::Broken {
                dir: dir.to_path_buf(),
                source,
            }
        })?;
    let read = |source| ReportError::Read {
        dir: dir.to_path_buf(),
        source,
    };
    let log = ReceiptLog::open(dir).map_err(read)?;
    let (mut target, mut contract, mut verdicts) = (None, None, Vec::new());
    for entry in log.entries().map_err(read)? {
        match entry.map_err(read)?.record.body {
            Body::RunStart(start) if target.is_none() => target = Some(start.target),
            Body::Contract(c) => {
                contract = Some(json!({"name": c.name, "blake3": c.blake3.to_hex()}))
            }
            Body::Verdict(v) => {
                let mut evidence = v.evidence;
                let graded_against = evidence.as_object_mut().and_then(|e| e.remove("contract"));
                verdicts.push(
                    json!({"tool": v.tool, "clause": v.clause, "verdict": v.verdict,
                    "reason": v.reason, "evidence": evidence, "contract": graded_against}),
                );
            }
            _ => {}
        }
    }
    Ok(json!({
        "target": target,
        "contract": contract.as_ref().map(|c| c["blake3"].clone()),
        "contract_name": contract.as_ref().map(|c| c["name"].clone()),
        "verdicts": verdicts,
        "receipts": dir,
        "head": verified.head.to_hex(),
    }))
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
