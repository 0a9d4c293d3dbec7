//! A map's confirmed cells set against a baseline and a suppressions file: what CI fails on.
//!
//! A cell is known across runs by its server (target id), tool and clause. The baseline is
//! the `map.json` of a run the user accepted (`vac report --out` writes it): its confirmed
//! cells are *unchanged* when confirmed again, *fixed* when not; a cell confirmed now and
//! not there is *new*. A suppression names cells (each part exact or `*`) with a reason and
//! an optional expiry date; past its date it no longer applies and is reported expired.
//! Only new cells that no suppression covers fail (`Triaged::failing`).

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::map::Map;

/// A cell's identity across runs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellKey {
    pub server: String,
    pub tool: String,
    pub clause: String,
}

impl std::fmt::Display for CellKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} / {} / {}", self.server, self.tool, self.clause)
    }
}

/// Why a baseline or suppressions file could not be used, naming it.
#[derive(Debug, thiserror::Error)]
pub enum TriageError {
    #[error("{file}: not a map.json: {problem}")]
    Baseline { file: String, problem: String },
    #[error("{file}: {problem}")]
    Suppressions { file: String, problem: String },
}

/// The confirmed cells a baseline holds.
#[derive(Clone, Debug, Default)]
pub struct Baseline {
    pub file: String,
    pub cells: BTreeSet<CellKey>,
}

impl Baseline {
    /// Reads a `map.json`: `servers[].id`, `servers[].tools[].name`, and each tool's
    /// `cells[]` with `clause` and `verdict`.
    pub fn parse(file: &str, text: &str) -> Result<Baseline, TriageError> {
        #[derive(Deserialize)]
        struct Document {
            servers: Vec<Server>,
        }
        #[derive(Deserialize)]
        struct Server {
            id: String,
            tools: Vec<Tool>,
        }
        #[derive(Deserialize)]
        struct Tool {
            name: String,
            cells: Vec<Cell>,
        }
        #[derive(Deserialize)]
        struct Cell {
            clause: String,
            verdict: String,
        }
        let document: Document = serde_json::from_str(text).map_err(|e| TriageError::Baseline {
            file: file.to_owned(),
            problem: e.to_string(),
        })?;
        let mut cells = BTreeSet::new();
        for server in document.servers {
            for tool in server.tools {
                for cell in tool.cells.into_iter().filter(|c| c.verdict == "confirmed") {
                    cells.insert(CellKey {
                        server: server.id.clone(),
                        tool: tool.name.clone(),
                        clause: cell.clause,
                    });
                }
            }
        }
        Ok(Baseline {
            file: file.to_owned(),
            cells,
        })
    }
}

/// One suppression: cells it covers, why, and until when.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suppression {
    pub server: String,
    pub tool: String,
    pub clause: String,
    pub reason: String,
    /// `YYYY-MM-DD`: the last day it applies.
    #[serde(default)]
    pub expires: Option<String>,
}

impl Suppression {
    fn covers(&self, key: &CellKey) -> bool {
        let part = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        part(&self.server, &key.server)
            && part(&self.tool, &key.tool)
            && part(&self.clause, &key.clause)
    }

    /// Past its expiry on `today` (`YYYY-MM-DD`).
    pub fn expired(&self, today: &str) -> bool {
        self.expires.as_deref().is_some_and(|date| date < today)
    }
}

/// Reads a suppressions file: `[[suppress]]` tables with `server`, `tool`, `clause` (each
/// a name or `*`), a non-empty `reason`, and an optional `expires = "YYYY-MM-DD"`.
pub fn parse_suppressions(file: &str, text: &str) -> Result<Vec<Suppression>, TriageError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Document {
        #[serde(default)]
        suppress: Vec<Suppression>,
    }
    let error = |problem: String| TriageError::Suppressions {
        file: file.to_owned(),
        problem,
    };
    let document: Document = toml::from_str(text).map_err(|e| error(e.to_string()))?;
    for (i, s) in document.suppress.iter().enumerate() {
        let at = format!("suppress[{i}] ({} / {} / {})", s.server, s.tool, s.clause);
        if s.reason.trim().is_empty() {
            return Err(error(format!("{at}: a suppression needs a reason")));
        }
        if let Some(date) = &s.expires
            && !is_date(date)
        {
            return Err(error(format!(
                "{at}: expires {date:?}: expected YYYY-MM-DD"
            )));
        }
    }
    Ok(document.suppress)
}

fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        })
}

/// Where a confirmed cell stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Not in the baseline (or there is none).
    New,
    /// In the baseline too.
    Unchanged,
}

/// A map's confirmed cells, triaged.
#[derive(Clone, Debug, Default)]
pub struct Triaged {
    /// The baseline file, when one was given.
    pub baseline: Option<String>,
    /// Every confirmed cell, in map order, with its standing and the suppression that
    /// covers it.
    pub confirmed: Vec<(CellKey, Standing, Option<Suppression>)>,
    /// The baseline's confirmed cells that are not confirmed now.
    pub fixed: Vec<CellKey>,
    /// Suppressions past their date: not applied.
    pub expired: Vec<Suppression>,
}

impl Triaged {
    /// New cells that no suppression covers: what fails.
    pub fn failing(&self) -> impl Iterator<Item = &CellKey> {
        self.confirmed
            .iter()
            .filter(|(_, standing, suppressed)| *standing == Standing::New && suppressed.is_none())
            .map(|(key, _, _)| key)
    }

    /// The standing and suppression of a cell, when it is confirmed.
    pub fn of(&self, key: &CellKey) -> Option<(&Standing, Option<&Suppression>)> {
        self.confirmed
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, standing, suppression)| (standing, suppression.as_ref()))
    }

    /// The triage as the map's JSON holds it.
    pub fn to_json(&self) -> Value {
        let cell = |k: &CellKey| json!({"server": k.server, "tool": k.tool, "clause": k.clause});
        let suppression = |s: &Suppression| json!({"server": s.server, "tool": s.tool, "clause": s.clause, "reason": s.reason, "expires": s.expires});
        let of = |wanted: Standing| -> Vec<Value> {
            self.confirmed
                .iter()
                .filter(|(_, standing, suppressed)| *standing == wanted && suppressed.is_none())
                .map(|(k, _, _)| cell(k))
                .collect()
        };
        json!({
            "baseline": self.baseline,
            "new": of(Standing::New),
            "unchanged": of(Standing::Unchanged),
            "fixed": self.fixed.iter().map(cell).collect::<Vec<_>>(),
            "suppressed": self.confirmed.iter().filter_map(|(k, _, s)| {
                let mut value = cell(k);
                value["reason"] = json!(s.as_ref()?.reason);
                value["expires"] = json!(s.as_ref()?.expires);
                Some(value)
            }).collect::<Vec<_>>(),
            "expired_suppressions": self.expired.iter().map(suppression).collect::<Vec<_>>(),
        })
    }

    /// The lines a reader sees: counts, then each new, fixed, suppressed cell and expired
    /// suppression.
    pub fn lines(&self) -> Vec<String> {
        let new = self.failing().count();
        let suppressed = self
            .confirmed
            .iter()
            .filter(|(_, _, s)| s.is_some())
            .count();
        let unchanged = self
            .confirmed
            .iter()
            .filter(|(_, st, s)| *st == Standing::Unchanged && s.is_none())
            .count();
        let mut lines = vec![match &self.baseline {
            Some(file) => format!(
                "against the baseline {file}: {new} new, {} fixed, {unchanged} unchanged, {suppressed} suppressed",
                self.fixed.len()
            ),
            None => format!("no baseline: {new} confirmed, {suppressed} suppressed"),
        }];
        for key in self.failing() {
            lines.push(format!("  new: {key}"));
        }
        for key in &self.fixed {
            lines.push(format!("  fixed: {key}"));
        }
        for (key, _, suppression) in &self.confirmed {
            if let Some(s) = suppression {
                let until = s
                    .expires
                    .as_deref()
                    .map(|d| format!(" (until {d})"))
                    .unwrap_or_default();
                lines.push(format!("  suppressed: {key}: {}{until}", s.reason));
            }
        }
        for s in &self.expired {
            lines.push(format!(
                "  expired, not applied: {} / {} / {}: {} (expired {})",
                s.server,
                s.tool,
                s.clause,
                s.reason,
                s.expires.as_deref().unwrap_or_default()
            ));
        }
        lines
    }

    /// Marks a SARIF log's results (`properties.server/tool/clause`) with their
    /// `baselineState` (when there is a baseline) and an accepted external suppression.
    pub fn annotate_sarif(&self, log: &mut Value) {
        let Some(runs) = log.get_mut("runs").and_then(Value::as_array_mut) else {
            return;
        };
        for run in runs {
            let Some(results) = run.get_mut("results").and_then(Value::as_array_mut) else {
                continue;
            };
            for result in results {
                let part = |name: &str| {
                    result["properties"][name]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                };
                let key = CellKey {
                    server: part("server"),
                    tool: part("tool"),
                    clause: part("clause"),
                };
                let Some((standing, suppression)) = self.of(&key) else {
                    continue;
                };
                if self.baseline.is_some() {
                    result["baselineState"] = json!(match standing {
                        Standing::New => "new",
                        Standing::Unchanged => "unchanged",
                    });
                }
                if let Some(s) = suppression {
                    result["suppressions"] = json!([{
                        "kind": "external",
                        "status": "accepted",
                        "justification": s.reason,
                    }]);
                }
            }
        }
    }
}

/// The confirmed cells of `map` against `baseline` and `suppressions` on `today`
/// (`YYYY-MM-DD`).
pub fn triage(
    map: &Map,
    baseline: Option<&Baseline>,
    suppressions: &[Suppression],
    today: &str,
) -> Triaged {
    let (expired, live): (Vec<&Suppression>, Vec<&Suppression>) =
        suppressions.iter().partition(|s| s.expired(today));
    let mut confirmed = Vec::new();
    let mut now = BTreeSet::new();
    for server in &map.servers {
        for tool in &server.tools {
            for cell in tool.cells.iter().filter(|c| c.verdict == "confirmed") {
                let key = CellKey {
                    server: server.id.clone(),
                    tool: tool.name.clone(),
                    clause: cell.clause.clone(),
                };
                let standing = match baseline {
                    Some(b) if b.cells.contains(&key) => Standing::Unchanged,
                    _ => Standing::New,
                };
                let suppression = live.iter().find(|s| s.covers(&key)).map(|s| (*s).clone());
                now.insert(key.clone());
                confirmed.push((key, standing, suppression));
            }
        }
    }
    Triaged {
        baseline: baseline.map(|b| b.file.clone()),
        confirmed,
        fixed: baseline
            .map(|b| b.cells.difference(&now).cloned().collect())
            .unwrap_or_default(),
        expired: expired.into_iter().cloned().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suppressions_are_checked_and_expire_after_their_day() {
        let text = "[[suppress]]\nserver = \"a\"\ntool = \"*\"\nclause = \"fs.write\"\nreason = \"own log\"\nexpires = \"2027-01-31\"\n";
        let parsed = parse_suppressions("s.toml", text).unwrap();
        assert!(!parsed[0].expired("2027-01-31"));
        assert!(parsed[0].expired("2027-02-01"));
        let key = |tool: &str, clause: &str| CellKey {
            server: "a".into(),
            tool: tool.into(),
            clause: clause.into(),
        };
        assert!(parsed[0].covers(&key("any", "fs.write")));
        assert!(!parsed[0].covers(&key("any", "fs.read")));
        let bad = [
            (
                "[[suppress]]\nserver = \"a\"\ntool = \"*\"\nclause = \"*\"\nreason = \" \"\n",
                "needs a reason",
            ),
            (
                "[[suppress]]\nserver = \"a\"\ntool = \"*\"\nclause = \"*\"\nreason = \"r\"\nexpires = \"soon\"\n",
                "YYYY-MM-DD",
            ),
            (
                "[[suppress]]\nserver = \"a\"\ntool = \"*\"\nreason = \"r\"\n",
                "clause",
            ),
            (
                "[[suppress]]\nserver = \"a\"\ntool = \"*\"\nclause = \"*\"\nreason = \"r\"\nuntil = 1\n",
                "until",
            ),
        ];
        for (text, says) in bad {
            let error = parse_suppressions("s.toml", text).unwrap_err().to_string();
            assert!(
                error.starts_with("s.toml: ") && error.contains(says),
                "{error}"
            );
        }
    }

    #[test]
    fn a_baseline_is_the_confirmed_cells_of_a_map_json() {
        let text = r#"{"servers": [{"id": "s", "tools": [{"name": "t", "cells": [
            {"clause": "fs.write", "verdict": "confirmed"},
            {"clause": "fs.read", "verdict": "refuted"}]}]}]}"#;
        let baseline = Baseline::parse("b.json", text).unwrap();
        assert_eq!(baseline.cells.len(), 1);
        assert_eq!(
            baseline.cells.iter().next().unwrap().to_string(),
            "s / t / fs.write"
        );
        let error = Baseline::parse("b.json", "{}").unwrap_err().to_string();
        assert!(error.starts_with("b.json: not a map.json"), "{error}");
    }
}
