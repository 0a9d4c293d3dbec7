//! Static against dynamic: how well a reading of the manifest predicted what the tools
//! were seen to do (SPEC §3.9).
//!
//! [`compare`] takes the conformance [`Map`] (the dynamic verdicts) and any static
//! analyser's findings ([`Prediction`]: vac's own rules, `crate::scan`, or another
//! scanner's, [`import`]) and, for every tool of the map and every clause of
//! [`CLASSES`], sets "a finding predicts the clause" against the cell's headline verdict:
//!
//! | | confirmed | refuted | anything else |
//! |---|---|---|---|
//! | predicted | true positive | false positive: an **over-approximation** | untested, predicted |
//! | not predicted | false negative: a **declaration gap** | true negative | untested, not predicted |
//!
//! A cell skipped (no successful call, not called, nothing promised, a sensor absent) or
//! errored was not tested: it is counted apart, never as a negative, and the predicted ones
//! are listed with their reason. The `any` row asks the coarse question a scanner without
//! clause classes answers: was the tool flagged at all, and did any of its cells confirm.

use serde_json::{Value, json};

use crate::map::{Map, MapCell, ServerMap, ToolMap};
use crate::scan::Finding;

/// The clause classes compared, in report order; `any` follows them.
pub const CLASSES: [&str; 8] = [
    "fs.write",
    "fs.delete",
    "fs.read",
    "exec",
    "net.egress",
    "result.secrets",
    "result.instructions",
    "manifest.stable",
];

/// The tool-level row: flagged at all, against any confirmed cell.
pub const ANY: &str = "any";

/// One static finding, from whichever analyser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prediction {
    pub server: String,
    pub tool: String,
    pub rule: String,
    pub severity: String,
    pub message: String,
    /// The clauses it predicts; `None` when the analyser does not say (counts in `any` only).
    pub predicts: Option<Vec<String>>,
}

impl Prediction {
    /// The shape `vac static --import` reads (`RULES.md`).
    pub fn to_json(&self) -> Value {
        json!({
            "server": self.server,
            "tool": self.tool,
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
            "predicts": self.predicts,
        })
    }
}

impl From<&Finding> for Prediction {
    fn from(f: &Finding) -> Prediction {
        Prediction {
            server: f.server.clone(),
            tool: f.tool.clone(),
            rule: f.rule.id().to_owned(),
            severity: f.severity.to_owned(),
            message: f.message.clone(),
            predicts: Some(f.predicts.iter().map(|c| c.as_str().to_owned()).collect()),
        }
    }
}

/// One row of the confusion matrix.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MatrixRow {
    pub class: String,
    pub true_positive: u64,
    pub false_positive: u64,
    pub false_negative: u64,
    pub true_negative: u64,
    /// Cells not tested dynamically (skipped, errored, not graded), by prediction.
    pub untested_predicted: u64,
    pub untested_unpredicted: u64,
}

impl MatrixRow {
    /// Of the tested cells static predicted, the share confirmed; `None` with none.
    pub fn precision(&self) -> Option<f64> {
        ratio(self.true_positive, self.true_positive + self.false_positive)
    }

    /// Of the confirmed cells, the share static predicted; `None` with none.
    pub fn recall(&self) -> Option<f64> {
        ratio(self.true_positive, self.true_positive + self.false_negative)
    }

    /// The columns of the `static_dynamic` table, in order.
    pub const COLUMNS: [&'static str; 9] = [
        "class",
        "true_positive",
        "false_positive",
        "false_negative",
        "true_negative",
        "untested_predicted",
        "untested_unpredicted",
        "precision",
        "recall",
    ];

    /// The row as the matrix shows it, in [`MATRIX`]'s order: the class, the six counts,
    /// precision and recall as [`crate::marks::ratio_text`] writes them.
    pub fn cells(&self) -> [String; 9] {
        use crate::marks::ratio_text;
        [
            self.class.clone(),
            self.true_positive.to_string(),
            self.false_positive.to_string(),
            self.false_negative.to_string(),
            self.true_negative.to_string(),
            self.untested_predicted.to_string(),
            self.untested_unpredicted.to_string(),
            ratio_text(self.precision()),
            ratio_text(self.recall()),
        ]
    }
}

/// One column of the static-vs-dynamic matrix as every renderer shows it: the page's key
/// and label, the terminal's short label, and whether it holds a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixColumn {
    pub key: &'static str,
    pub label: &'static str,
    pub short: &'static str,
    pub number: bool,
}

/// The matrix's columns, in the order of [`MatrixRow::cells`]: the one definition the HTML,
/// Markdown and terminal renderers read.
pub const MATRIX: [MatrixColumn; 9] = [
    column("class", "class", "class", false),
    column("tp", "predicted, confirmed", "TP", true),
    column("fp", "predicted, refuted", "FP", true),
    column("fn", "missed (gap)", "FN", true),
    column("tn", "not predicted, refuted", "TN", true),
    column("up", "untested, predicted", "untested+", true),
    column("uu", "untested, not predicted", "untested-", true),
    column("precision", "precision", "precision", true),
    column("recall", "recall", "recall", true),
];

const fn column(
    key: &'static str,
    label: &'static str,
    short: &'static str,
    number: bool,
) -> MatrixColumn {
    MatrixColumn {
        key,
        label,
        short,
        number,
    }
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    // Rounded to three places so the JSON, CSV and Parquet agree digit for digit.
    (den > 0).then(|| (num as f64 * 1000.0 / den as f64).round() / 1000.0)
}

/// A cell where static and dynamic disagree, or where a prediction was not tested.
#[derive(Clone, Debug, PartialEq)]
pub struct Disagreement {
    pub server: String,
    pub tool: String,
    pub class: String,
    /// The cell's headline verdict and its reason.
    pub verdict: String,
    pub reason: String,
    /// For an over-approximation or an untested prediction: the rules that predicted the
    /// clause. For a gap: every rule that fired on the tool (none predicted this clause).
    pub rules: Vec<String>,
    /// Calls of the tool, and those that succeeded.
    pub calls: u64,
    pub succeeded: u64,
    /// The verdict record behind the headline: probe, seq, hash.
    pub record: Option<(String, u64, String)>,
}

impl Disagreement {
    pub fn to_json(&self) -> Value {
        json!({
            "server": self.server,
            "tool": self.tool,
            "class": self.class,
            "verdict": self.verdict,
            "reason": self.reason,
            "rules": self.rules,
            "calls": self.calls,
            "succeeded": self.succeeded,
            "record": self.record.as_ref().map(|(probe, seq, hash)| json!({"probe": probe, "seq": seq, "hash": hash})),
        })
    }
}

/// The comparison of one static analyser with the map.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Which analyser: `vac static` or the imported file's name.
    pub analyser: String,
    pub findings: u64,
    /// One row per [`CLASSES`] entry, then [`ANY`].
    pub rows: Vec<MatrixRow>,
    /// Static said no, dynamic confirmed.
    pub gaps: Vec<Disagreement>,
    /// Static predicted, the tool was seen not to do it: refuted with successful calls and
    /// live sensors (what `refuted` means).
    pub over_approximations: Vec<Disagreement>,
    /// Static predicted, the cell was not tested: its verdict's reason says why.
    pub untested: Vec<Disagreement>,
}

/// Compares `predictions` with `map`. Predictions for tools the map does not hold are not
/// counted ([`import`] refuses them before this).
pub fn compare(map: &Map, predictions: &[Prediction], analyser: &str) -> Comparison {
    let mut rows: Vec<MatrixRow> = CLASSES
        .iter()
        .chain([&ANY])
        .map(|c| MatrixRow {
            class: c.to_string(),
            ..MatrixRow::default()
        })
        .collect();
    let mut out = Comparison {
        analyser: analyser.to_owned(),
        findings: predictions.len() as u64,
        ..Comparison::default()
    };
    for server in &map.servers {
        // A server row grades the launch, which no reading of the manifest predicts.
        for tool in server
            .tools
            .iter()
            .filter(|t| !vac_contracts::is_server_row(&t.name))
        {
            let on_tool: Vec<&Prediction> = predictions
                .iter()
                .filter(|p| p.server == server.id && p.tool == tool.name)
                .collect();
            for (index, class) in CLASSES.iter().enumerate() {
                let predicting: Vec<String> = on_tool
                    .iter()
                    .filter(|p| {
                        p.predicts
                            .as_ref()
                            .is_some_and(|c| c.iter().any(|c| c == class))
                    })
                    .map(|p| p.rule.clone())
                    .collect();
                let cell = tool.cells.iter().find(|c| c.clause == *class);
                let verdict = cell.map_or("not_graded", |c| c.verdict);
                let row = &mut rows[index];
                let predicted = !predicting.is_empty();
                let entry = |rules: Vec<String>| disagreement(server, tool, class, cell, rules);
                match (predicted, verdict) {
                    (true, "confirmed") => row.true_positive += 1,
                    (true, "refuted") => {
                        row.false_positive += 1;
                        out.over_approximations.push(entry(dedup(predicting)));
                    }
                    (true, _) => {
                        row.untested_predicted += 1;
                        out.untested.push(entry(dedup(predicting)));
                    }
                    (false, "confirmed") => {
                        row.false_negative += 1;
                        let fired = dedup(on_tool.iter().map(|p| p.rule.clone()).collect());
                        out.gaps.push(entry(fired));
                    }
                    (false, "refuted") => row.true_negative += 1,
                    (false, _) => row.untested_unpredicted += 1,
                }
            }
            // The tool as a whole, over every clause of the map.
            let any = rows.last_mut().expect("the any row");
            let confirmed = tool.cells.iter().any(|c| c.verdict == "confirmed");
            let refuted = tool.cells.iter().any(|c| c.verdict == "refuted");
            match (!on_tool.is_empty(), confirmed, refuted) {
                (true, true, _) => any.true_positive += 1,
                (true, false, true) => any.false_positive += 1,
                (true, false, false) => any.untested_predicted += 1,
                (false, true, _) => any.false_negative += 1,
                (false, false, true) => any.true_negative += 1,
                (false, false, false) => any.untested_unpredicted += 1,
            }
        }
    }
    out.rows = rows;
    out
}

fn dedup(mut rules: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    rules.retain(|r| seen.insert(r.clone()));
    rules
}

fn disagreement(
    server: &ServerMap,
    tool: &ToolMap,
    class: &str,
    cell: Option<&MapCell>,
    rules: Vec<String>,
) -> Disagreement {
    let headline = cell.and_then(|c| c.records.iter().find(|r| r.verdict == c.verdict));
    Disagreement {
        server: server.id.clone(),
        tool: tool.name.clone(),
        class: class.to_owned(),
        verdict: cell.map_or("not_graded", |c| c.verdict).to_owned(),
        reason: cell.map(|c| c.reason.to_string()).unwrap_or_default(),
        rules,
        calls: tool.calls,
        succeeded: tool.succeeded,
        record: headline.map(|r| (r.probe.to_string(), r.seq, r.hash.to_string())),
    }
}

impl Comparison {
    pub fn to_json(&self) -> Value {
        json!({
            "analyser": self.analyser,
            "findings": self.findings,
            "matrix": self.rows.iter().map(|r| json!({
                "class": r.class,
                "true_positive": r.true_positive,
                "false_positive": r.false_positive,
                "false_negative": r.false_negative,
                "true_negative": r.true_negative,
                "untested_predicted": r.untested_predicted,
                "untested_unpredicted": r.untested_unpredicted,
                "precision": r.precision(),
                "recall": r.recall(),
            })).collect::<Vec<_>>(),
            "declaration_gaps": self.gaps.iter().map(Disagreement::to_json).collect::<Vec<_>>(),
            "over_approximations": self.over_approximations.iter().map(Disagreement::to_json).collect::<Vec<_>>(),
            "untested_predictions": self.untested.iter().map(Disagreement::to_json).collect::<Vec<_>>(),
        })
    }
}

/// Why an imported findings file was refused.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{file}: not JSON: {source}")]
    Json {
        file: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{file}: {what}")]
    Shape { file: String, what: String },
    #[error("{file}: finding {index} names {what}, which the receipts do not hold")]
    Unknown {
        file: String,
        index: usize,
        what: String,
    },
}

/// Another analyser's findings (`vac static --import FILE`; shapes in `RULES.md`), each
/// tied to a server and tool of `map`.
pub fn import(file: &str, text: &str, map: &Map) -> Result<Vec<Prediction>, ImportError> {
    let shape = |what: String| ImportError::Shape {
        file: file.to_owned(),
        what,
    };
    let document: Value = serde_json::from_str(text).map_err(|source| ImportError::Json {
        file: file.to_owned(),
        source,
    })?;
    let raw: Vec<Value> = if document.get("runs").is_some() {
        sarif_findings(&document, shape)?
    } else {
        match &document {
            Value::Array(items) => items.clone(),
            Value::Object(o) => match o.get("findings") {
                Some(Value::Array(items)) => items.clone(),
                _ => return Err(shape("no `findings` array and no SARIF `runs`".into())),
            },
            _ => {
                return Err(shape(
                    "expected a findings array, `{\"findings\": […]}` or SARIF".into(),
                ));
            }
        }
    };
    let mut out = Vec::new();
    for (index, finding) in raw.iter().enumerate() {
        let text = |key: &str| finding.get(key).and_then(Value::as_str).map(str::to_owned);
        let tool =
            text("tool").ok_or_else(|| shape(format!("finding {index} has no string `tool`")))?;
        let rule =
            text("rule").ok_or_else(|| shape(format!("finding {index} has no string `rule`")))?;
        let server = match text("server") {
            Some(named) => map
                .servers
                .iter()
                .find(|s| s.id == named || s.name.as_deref() == Some(named.as_str()))
                .ok_or_else(|| ImportError::Unknown {
                    file: file.to_owned(),
                    index,
                    what: format!("server {named:?}"),
                })?,
            None => match map.servers.as_slice() {
                [only] => only,
                _ => {
                    return Err(shape(format!(
                        "finding {index} names no `server`, and the receipts hold {} servers",
                        map.servers.len()
                    )));
                }
            },
        };
        if !server.tools.iter().any(|t| t.name == tool) {
            return Err(ImportError::Unknown {
                file: file.to_owned(),
                index,
                what: format!("tool {tool:?} of server {:?}", server.id),
            });
        }
        let predicts = match finding.get("predicts") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(vec![c.clone()]),
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|c| {
                        c.as_str().map(str::to_owned).ok_or_else(|| {
                            shape(format!("finding {index}: `predicts` holds a non-string"))
                        })
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Some(_) => {
                return Err(shape(format!(
                    "finding {index}: `predicts` must be a clause name or a list of them"
                )));
            }
        };
        if let Some(unknown) = predicts
            .iter()
            .flatten()
            .find(|c| !crate::severity::CLAUSES.iter().any(|(k, _)| k == c))
        {
            return Err(shape(format!(
                "finding {index}: `predicts` names {unknown:?}, not a clause"
            )));
        }
        out.push(Prediction {
            server: server.id.clone(),
            tool,
            rule,
            severity: text("severity").unwrap_or_default(),
            message: text("message").unwrap_or_default(),
            predicts,
        });
    }
    Ok(out)
}

/// A SARIF log's results as generic findings.
fn sarif_findings(
    log: &Value,
    shape: impl Fn(String) -> ImportError,
) -> Result<Vec<Value>, ImportError> {
    let runs = log["runs"]
        .as_array()
        .ok_or_else(|| shape("SARIF `runs` is not an array".into()))?;
    let mut out = Vec::new();
    for (r, run) in runs.iter().enumerate() {
        for (i, result) in run["results"].as_array().into_iter().flatten().enumerate() {
            let properties = &result["properties"];
            let logical = &result["locations"][0]["logicalLocations"][0];
            let qualified = logical["fullyQualifiedName"].as_str();
            let (server, tool) = match (properties["tool"].as_str(), qualified) {
                (Some(tool), _) => (properties["server"].as_str(), Some(tool)),
                (None, Some(q)) if q.contains('/') => {
                    let (s, t) = q.rsplit_once('/').expect("contains /");
                    (Some(s), Some(t))
                }
                (None, _) => (None, logical["name"].as_str()),
            };
            let tool = tool.ok_or_else(|| {
                shape(format!(
                    "runs[{r}].results[{i}] names no tool (logical location or properties.tool)"
                ))
            })?;
            out.push(json!({
                "server": server,
                "tool": tool,
                "rule": result["ruleId"],
                "severity": result["level"],
                "message": result["message"]["text"],
                "predicts": properties["predicts"],
            }));
        }
    }
    Ok(out)
}
