//! Checking a verdict grid against its expected cells, and every cell against what SPEC
//! §3.7 says its verdict must carry.

use serde::Deserialize;
use serde_json::Value;
use vac_contracts::{Cell, Clause, Grades, Observation, SensorState, Verdict};

/// One expected cell, in grid order.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Expected {
    pub(crate) tool: String,
    pub(crate) clause: Clause,
    pub(crate) verdict: String,
    /// Required for skipped and errored; optional sentence otherwise.
    #[serde(default)]
    pub(crate) reason: Option<String>,
    /// Confirmed: the paths of the evidence's effects, in order.
    #[serde(default)]
    pub(crate) effects: Option<Vec<String>>,
    /// Confirmed: the indices of the causing calls; refuted: the number of calls.
    #[serde(default)]
    pub(crate) calls: Option<Value>,
    /// Confirmed and refuted: the sensors of the evidence's self-tests, in order.
    #[serde(default)]
    pub(crate) sensors: Option<Vec<String>>,
}

pub(crate) fn check_grid(
    label: &str,
    grades: &Grades,
    expected: &[Expected],
    failures: &mut Vec<String>,
) {
    let got: Vec<_> = grades.cells.iter().map(|c| (&c.tool, c.clause)).collect();
    let want: Vec<_> = expected.iter().map(|e| (&e.tool, e.clause)).collect();
    if got != want {
        failures.push(format!("{label}: grid {got:?}, expected {want:?}"));
        return;
    }
    for (cell, want) in grades.cells.iter().zip(expected) {
        let at = format!("{label}: {} × {}", cell.tool, cell.clause);
        let name = cell.verdict.name();
        if name != want.verdict {
            failures.push(format!(
                "{at}: {name} ({}), expected {}",
                cell.reason(),
                want.verdict
            ));
            continue;
        }
        match (&want.reason, name) {
            (Some(reason), _) if *reason != cell.reason() => {
                failures.push(format!(
                    "{at}: reason {:?}, expected {reason:?}",
                    cell.reason()
                ));
            }
            (None, "skipped" | "errored") => failures.push(format!("{at}: data lacks reason")),
            _ => {}
        }
        if let (Some(want), Verdict::Confirmed { sensors, .. } | Verdict::Refuted { sensors, .. }) =
            (&want.sensors, &cell.verdict)
        {
            let names: Vec<String> = sensors
                .iter()
                .map(|s| {
                    serde_json::json!(s.sensor)
                        .as_str()
                        .unwrap_or("")
                        .to_owned()
                })
                .collect();
            if names != *want {
                failures.push(format!("{at}: sensors {names:?}, expected {want:?}"));
            }
        }
        match &cell.verdict {
            Verdict::Confirmed { effects, calls, .. } => {
                let paths: Vec<_> = effects.iter().map(|e| e.path.as_str()).collect();
                if let Some(want) = &want.effects
                    && paths != *want
                {
                    failures.push(format!("{at}: effects {paths:?}, expected {want:?}"));
                }
                let indices: Vec<_> = calls.iter().map(|c| c.index).collect();
                if let Some(want) = &want.calls
                    && serde_json::json!(indices) != *want
                {
                    failures.push(format!("{at}: calls {indices:?}, expected {want}"));
                }
            }
            Verdict::Refuted { calls, .. } => {
                if let Some(want) = &want.calls
                    && serde_json::json!(calls) != *want
                {
                    failures.push(format!("{at}: {calls} calls, expected {want}"));
                }
            }
            Verdict::Skipped { .. } | Verdict::Errored { .. } => {}
        }
    }
}

/// What SPEC §3.7 says each verdict must carry, checked on every cell of every case.
pub(crate) fn check_evidence(
    label: &str,
    cell: &Cell,
    obs: &Observation,
    failures: &mut Vec<String>,
) {
    let at = format!("{label}: {} × {}", cell.tool, cell.clause);
    let json = cell.to_json();
    let keys: Vec<_> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    if keys
        != [
            "calls",
            "clause",
            "evidence",
            "reason",
            "succeeded",
            "tool",
            "verdict",
        ]
    {
        failures.push(format!("{at}: JSON keys {keys:?}"));
    }
    match &cell.verdict {
        Verdict::Confirmed {
            effects,
            calls,
            control_subtracted,
            sensors,
            ..
        } => {
            // A tools/list change is owned by the tool it names, not by a call.
            let caused = effects.iter().all(|e| {
                (cell.clause == Clause::ManifestStable && e.path == cell.tool)
                    || calls
                        .iter()
                        .any(|c| Some(c.index) == e.attribution.call_index() && c.tool == cell.tool)
            });
            if effects.is_empty() || !caused {
                failures.push(format!("{at}: effects not backed by the tool's calls"));
            }
            if sensors.is_empty() {
                failures.push(format!("{at}: no sensor self-test in evidence"));
            }
            let fs_clause = matches!(cell.clause, Clause::FsWrite | Clause::FsDelete);
            let fs_control = obs.control_subtracted.iter().filter(|e| e.class.is_fs());
            if !control_subtracted
                .iter()
                .all(|e| obs.control_subtracted.contains(e))
                || (fs_clause && control_subtracted.len() != fs_control.count())
            {
                failures.push(format!("{at}: control effects not carried"));
            }
            let evidence = &json["evidence"];
            for key in ["effects", "calls", "control_subtracted", "sensors", "basis"] {
                if evidence.get(key).is_none() {
                    failures.push(format!("{at}: evidence lacks {key}"));
                }
            }
        }
        Verdict::Refuted { calls, sensors, .. } => {
            // tools/list is observed whether or not the tool was called.
            let needs_calls = cell.clause != Clause::ManifestStable;
            if (needs_calls && *calls == 0) || sensors.is_empty() {
                failures.push(format!("{at}: refuted without calls or sensors"));
            }
            if sensors.iter().any(|s| s.status != SensorState::Live) {
                failures.push(format!("{at}: refuted with a sensor not live"));
            }
        }
        Verdict::Skipped { .. } | Verdict::Errored { .. } => {}
    }
}
