//! What a probe found ([`ProbeReport`]), graded from its receipts alone by replay; the
//! crate's `report` module renders it.

use std::path::PathBuf;

use serde_json::{Value, json};
use vac_contracts::Grades;

use super::vocab::{Role, RunOutput};
use super::witness;

/// What a probe found: graded from its receipts alone ([`replay`]).
#[derive(Debug)]
pub struct ProbeReport {
    pub target: String,
    /// The receipt directory, absolute.
    pub receipts: PathBuf,
    pub head: String,
    /// blake3 of the pre-registered contract; empty when no manifest was obtained.
    pub contract: String,
    pub protocol_version: Option<String>,
    pub tools: usize,
    /// The manifest's pages, whether it was complete, how many entries were malformed.
    pub manifest: Option<Value>,
    /// Why the server could not be audited at all (no manifest), if so.
    pub failure: Option<String>,
    pub grades: Option<Grades>,
    pub runs: Vec<Value>,
    /// Lines the server wrote to stdout that are text but not JSON-RPC, skipped as noise
    /// (`protocol.stdout_clean`); not a tool's broken promise, so not a violation.
    pub stdout_noise: NoiseSeen,
    /// The conformance findings after `protocol.stdout_clean`, in the report's shape.
    pub conformance: Vec<Value>,
    /// Adaptive isolation: per tool, the run it was graded on (the shared run or its own)
    /// and, for its own, what left the shared run in doubt. Empty for `per-tool`.
    pub isolation: std::collections::BTreeMap<String, Value>,
    /// Per tool (and the `(server)` row), what it was seen to do whatever its contract
    /// says: per kind (`reads`, `writes`, `execs`, `reaches`, `listens`, `secrets_shown`,
    /// `instructions_shown`, `manifest_changes`) its distinct targets.
    pub profile: std::collections::BTreeMap<String, Value>,
    /// Per tool called, what its best call achieved (`vac_contracts::answer`): whether any
    /// call did the job, or how the best of them failed.
    pub answers: std::collections::BTreeMap<String, vac_contracts::Answer>,
}

impl ProbeReport {
    /// Whether any cell is `confirmed`.
    pub fn violation(&self) -> bool {
        self.grades
            .as_ref()
            .is_some_and(|g| g.cells.iter().any(|c| c.verdict.name() == "confirmed"))
    }

    /// The tools the probe did not call because a budget ran out (every cell of such a tool
    /// is `skipped: budget`): what a clean bill of health cannot cover.
    pub fn not_called_for_budget(&self) -> usize {
        let Some(grades) = &self.grades else {
            return 0;
        };
        let mut tools: Vec<&str> = grades
            .cells
            .iter()
            .filter(|c| {
                matches!(
                    c.verdict,
                    vac_contracts::Verdict::Skipped {
                        reason: vac_contracts::SkipReason::Budget,
                        ..
                    }
                )
            })
            .map(|c| c.tool.as_str())
            .collect();
        tools.sort_unstable();
        tools.dedup();
        tools.len()
    }

    /// Whether any cell is `errored` (a sensor failed, a run crashed or timed out, a cap
    /// was hit, a declaration was malformed).
    pub fn errored(&self) -> bool {
        self.grades
            .as_ref()
            .is_some_and(|g| g.cells.iter().any(|c| c.verdict.name() == "errored"))
    }
}

/// Per tool, the best answer of its calls in `runs`.
pub(crate) fn best_answers(
    runs: &[RunOutput],
) -> std::collections::BTreeMap<String, vac_contracts::Answer> {
    let mut best = std::collections::BTreeMap::new();
    for call in runs.iter().flat_map(|r| &r.calls) {
        let answer = call.answer();
        best.entry(call.tool.clone())
            .and_modify(|b: &mut vac_contracts::Answer| *b = (*b).max(answer))
            .or_insert(answer);
    }
    best
}

/// One run in a report's `runs` list.
pub(crate) fn summary(output: &RunOutput) -> Value {
    let mut summary = json!({
        "run": output.id,
        "role": match output.role { Role::Control => "control", Role::Subject => "subject", Role::Relaunch => "relaunch" },
        "tool": output.tool,
        "calls": output.calls.len(),
        "changes": output.changes.len(),
        "frames": output.frame_stats.frames_seen,
        "failure": output.failure.as_ref().map(|f| &f.detail),
        "protocol_witness": witness::summary(&output.calls, &output.id),
    });
    // Present only for a run made twice: reports of older receipts keep their bytes.
    if let Some(first) = &output.retried {
        summary["retried"] = json!(first.detail);
    }
    summary
}

/// The noise lines of a log: how many, and the first with its record.
#[derive(Debug, Default, Clone)]
pub struct NoiseSeen {
    pub lines: u64,
    /// `run`, `seq` (the frame record), `excerpt`, `why`.
    pub first: Option<Value>,
}
