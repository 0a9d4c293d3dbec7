//! Verdicts: one per tool × clause cell (SPEC §3.7), with the evidence each must carry.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::clause::Clause;
use crate::evidence::Evidence;
use crate::observation::{Call, Effect, EffectClass, SensorStatus};
use crate::reason::{ErrorKind, SkipReason};

/// The verdict of one tool × clause cell.
///
/// Serialised losslessly as `{"tool", "clause", "verdict", …the verdict's fields}`;
/// [`Cell::to_json`] gives the stable SPEC §5 shape for reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The tool graded.
    pub tool: String,
    /// The clause graded.
    pub clause: Clause,
    /// The verdict and its evidence.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Calls of the tool that bear on the cell (for `idempotent`, the repeated ones).
    #[serde(default, rename = "cell_calls")]
    pub calls: usize,
    /// How many of those the server answered with a result that is not an error.
    #[serde(default, rename = "cell_succeeded")]
    pub succeeded: usize,
}

/// What grading found for one cell. Severity is not part of the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// The tool did what the clause forbids.
    Confirmed {
        /// Why the clause forbids it (e.g. `readOnlyHint: true`).
        basis: String,
        /// The forbidden effects, the first [`MAX_EVIDENCE`] of them.
        effects: Vec<Effect>,
        /// Forbidden effects beyond those listed.
        #[serde(default, skip_serializing_if = "is_zero")]
        effects_omitted: usize,
        /// The calls the effects are attributed to.
        calls: Vec<Call>,
        /// The control run's effects in the clause's domain that were subtracted (the first
        /// [`MAX_EVIDENCE`]).
        control_subtracted: Vec<Effect>,
        /// Subtracted effects beyond those listed.
        #[serde(default, skip_serializing_if = "is_zero")]
        subtracted_omitted: usize,
        /// The self-tests of the sensors backing the clause.
        sensors: Vec<SensorStatus>,
    },
    /// The tool was called and nothing the clause forbids was observed.
    Refuted {
        /// Why the clause restricts the tool.
        basis: String,
        /// How many calls of the tool were made.
        calls: usize,
        /// How many of them succeeded (at least one: otherwise the cell is skipped).
        succeeded: usize,
        /// The self-tests proving the backing sensors were live.
        sensors: Vec<SensorStatus>,
    },
    /// A precondition for grading did not hold.
    Skipped {
        /// Which one.
        reason: SkipReason,
        /// What shows it (the hint basis, the sensor status); may be null.
        evidence: Value,
    },
    /// Grading was attempted and something failed.
    Errored {
        /// What failed.
        reason: ErrorKind,
        /// The failure's evidence (run errors, sensor self-tests).
        evidence: Value,
    },
}

impl Verdict {
    /// The SPEC §5 name: `confirmed`, `refuted`, `skipped` or `errored`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Confirmed { .. } => "confirmed",
            Verdict::Refuted { .. } => "refuted",
            Verdict::Skipped { .. } => "skipped",
            Verdict::Errored { .. } => "errored",
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Effects a confirmed cell lists at most, of the forbidden ones and of the subtracted
/// ones each; the rest are counted. A server that writes 60,000 files makes one bounded
/// verdict record, not one the receipts' line cap refuses.
pub const MAX_EVIDENCE: usize = 64;

impl Cell {
    /// The `reason` of the SPEC §5 shape: the machine name for skipped and errored, a
    /// sentence for confirmed and refuted.
    pub fn reason(&self) -> String {
        match &self.verdict {
            Verdict::Confirmed {
                basis,
                effects,
                effects_omitted,
                ..
            } => {
                let what = match (effects.as_slice(), effects_omitted) {
                    ([], _) => "violated".to_owned(),
                    ([one], 0) => described(one),
                    ([first, rest @ ..], omitted) => {
                        format!("{} and {} more", described(first), rest.len() + omitted)
                    }
                };
                format!(
                    "{} {what}, forbidden by {} ({basis})",
                    self.tool, self.clause
                )
            }
            Verdict::Refuted { basis, calls, .. } => format!(
                "no effect forbidden by {} ({basis}) in {calls} call{} with live sensors",
                self.clause,
                if *calls == 1 { "" } else { "s" }
            ),
            Verdict::Skipped { reason, .. } => reason.as_str().to_owned(),
            Verdict::Errored { reason, .. } => reason.as_str().to_owned(),
        }
    }

    /// The evidence of the SPEC §5 shape.
    pub fn evidence(&self) -> Value {
        match &self.verdict {
            Verdict::Confirmed {
                basis,
                effects,
                effects_omitted,
                calls,
                control_subtracted,
                subtracted_omitted,
                sensors,
            } => {
                let mut evidence = json!({
                    "basis": basis,
                    "effects": effects,
                    "calls": calls,
                    "control_subtracted": control_subtracted,
                    "sensors": sensors,
                });
                // Only when a list was cut, so that every other record reads as before.
                for (key, omitted) in [
                    ("effects_omitted", effects_omitted),
                    ("control_subtracted_omitted", subtracted_omitted),
                ] {
                    if *omitted > 0 {
                        evidence[key] = json!(omitted);
                    }
                }
                evidence
            }
            Verdict::Refuted {
                basis,
                calls,
                succeeded,
                sensors,
            } => {
                json!({ "basis": basis, "calls": calls, "succeeded": succeeded, "sensors": sensors })
            }
            Verdict::Skipped { evidence, .. } | Verdict::Errored { evidence, .. } => {
                evidence.clone()
            }
        }
    }

    /// The cell in the stable SPEC §5 shape:
    /// `{"tool", "clause", "verdict", "reason", "evidence"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "tool": self.tool,
            "clause": self.clause,
            "verdict": self.verdict.name(),
            "reason": self.reason(),
            "evidence": self.evidence(),
            "calls": self.calls,
            "succeeded": self.succeeded,
        })
    }
}

/// One effect in a sentence: its verb and what it concerns. A change of a server's
/// prompt or resource names that entry (`changed the listing of prompt summarize`).
fn described(effect: &Effect) -> String {
    match &effect.detail {
        Evidence::Drift(drift) if effect.class == EffectClass::ManifestChanged => {
            match &drift.entry {
                Some(entry) => format!("changed the listing of {entry}"),
                None => format!("{} {}", class_verb(effect.class), effect.path),
            }
        }
        _ => format!("{} {}", class_verb(effect.class), effect.path),
    }
}

fn class_verb(class: EffectClass) -> &'static str {
    match class {
        EffectClass::Created => "created",
        EffectClass::Modified => "modified",
        EffectClass::Deleted => "deleted",
        EffectClass::Renamed => "moved away",
        EffectClass::ModeChanged => "changed the mode of",
        EffectClass::Symlink => "made a symlink at",
        EffectClass::DirReplaced => "replaced the directory",
        EffectClass::Read => "read",
        EffectClass::Exec => "ran",
        EffectClass::Connect => "connected to",
        EffectClass::Dns => "looked up",
        EffectClass::Udp => "sent a datagram to",
        EffectClass::Listen => "listened on",
        EffectClass::SecretInResult => "returned the canary",
        EffectClass::InstructionInResult => "returned instruction-like text",
        EffectClass::ManifestChanged => "changed the tools/list entry of",
    }
}
