//! Grading: a compiled contract and an observation in, one verdict per tool × graded
//! clause out (SPEC §3.7), completeness checked.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::clause::Clause;
use crate::compile::{CompiledContract, CompiledRule};
use crate::graded::{ClauseSpec, GRADED, Subject};
use crate::observation::{
    Call, Effect, EffectClass, Observation, Sensor, SensorState, SensorStatus,
};
use crate::reason::{ErrorKind, SkipReason};
use crate::verdict::{Cell, MAX_EVIDENCE, Verdict};

/// The verdict grid of one server, and the effects no cell could own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grades {
    /// One cell per tool × graded clause: tools in contract order, clauses in `Clause` order.
    pub cells: Vec<Cell>,
    /// Effects no call window held. They cannot confirm a violation by any one tool, so
    /// they are listed for reports rather than graded.
    pub unattributed: Vec<Effect>,
    /// Effects attributed to calls of tools the contract does not name (e.g. a tool that
    /// appeared after the contract was derived).
    pub uncontracted: Vec<Effect>,
}

/// The observation contradicts itself; grading it would give verdicts without a basis.
#[derive(Debug, thiserror::Error)]
pub enum GradeError {
    /// Two calls share an index.
    #[error("call index {index} appears twice in the observation")]
    DuplicateCall {
        /// The index.
        index: usize,
    },
    /// A call claims to repeat a call that is not an earlier identical call of its tool.
    #[error(
        "call {index} is marked a repeat of call {of}, which is not an earlier call of {tool:?} with identical arguments"
    )]
    NotARepeat {
        /// The repeating call.
        index: usize,
        /// The call it claims to repeat.
        of: usize,
        /// Its tool.
        tool: String,
    },
    /// An effect names a call that was not made.
    #[error("effect on {path:?} is attributed to call {index}, which the observation lacks")]
    UnknownCall {
        /// The call index named.
        index: usize,
        /// The effect's path.
        path: String,
    },
    /// The grid came out incomplete (a bug in the grader).
    #[error("grading produced an incomplete grid")]
    Incomplete(#[from] CompletenessError),
}

/// A verdict grid that is not exactly one cell per tool × graded clause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompletenessError {
    /// A cell of the contract has no verdict.
    #[error("no verdict for tool {tool:?} × {clause}")]
    Missing {
        /// The tool.
        tool: String,
        /// The clause.
        clause: Clause,
    },
    /// A cell has more than one verdict.
    #[error("{count} verdicts for tool {tool:?} × {clause}")]
    Duplicate {
        /// The tool.
        tool: String,
        /// The clause.
        clause: Clause,
        /// How many.
        count: usize,
    },
    /// A verdict for a cell the contract does not have.
    #[error("verdict for tool {tool:?} × {clause}, which the contract does not grade")]
    Unexpected {
        /// The tool.
        tool: String,
        /// The clause.
        clause: Clause,
    },
}

/// Grades every tool × graded clause of `contract` against `obs`.
///
/// Per cell, first match wins: nothing promised ⇒ skipped; no calls ⇒ skipped with the
/// harness's reason or `not_called` (for `idempotent`, no repeated call; `manifest.stable`
/// needs no call); a forbidden effect owned by the tool ⇒ confirmed, whatever else went
/// wrong, since the evidence stands. An effect is owned through the call it is attributed
/// to (in or after its window), a `ManifestChanged` by the tool it names; for `idempotent`
/// only effects of repeated calls count; for `fs.read` a read of a canary or of a
/// never-read place, and for `net.egress` traffic that carries a secret, are forbidden
/// whatever the allow list says. Then a run error of the tool or of the whole run ⇒ errored (the first names the reason, all
/// are evidence); a backing sensor blind, failed or without a self-test ⇒ errored
/// `sensor_failed`, absent ⇒ skipped `capability_absent`, unless every backing sensor is
/// absent and the clause has a fallback with a self-test for the tool (`fs.write`: the
/// protocol witness), which then decides alone: live ⇒ refuted on it, blind or failed ⇒
/// errored `sensor_failed`; otherwise refuted. A sensor status scoped to a tool counts for
/// that tool's cells only.
pub fn grade(contract: &CompiledContract, obs: &Observation) -> Result<Grades, GradeError> {
    let mut calls: BTreeMap<usize, &Call> = BTreeMap::new();
    for call in &obs.calls {
        if calls.insert(call.index, call).is_some() {
            return Err(GradeError::DuplicateCall { index: call.index });
        }
    }
    for call in &obs.calls {
        check_repeat(call, &calls)?;
    }
    let mut owned: Vec<(&str, &Effect)> = Vec::new();
    let mut unattributed = Vec::new();
    let mut uncontracted = Vec::new();
    for effect in &obs.effects {
        let call = match effect.attribution.call_index() {
            Some(index) => Some(*calls.get(&index).ok_or_else(|| GradeError::UnknownCall {
                index,
                path: effect.path.clone(),
            })?),
            None => None,
        };
        let owner = match (effect.class, call) {
            (EffectClass::ManifestChanged, _) => effect.path.as_str(),
            (_, Some(call)) => call.tool.as_str(),
            (_, None) => {
                unattributed.push(effect.clone());
                continue;
            }
        };
        if contract.tools().any(|tool| tool == owner) {
            owned.push((owner, effect));
        } else {
            uncontracted.push(effect.clone());
        }
    }

    let ctx = Context { obs, calls, owned };
    let mut cells = Vec::new();
    for tool in contract.tools() {
        for spec in GRADED {
            let (calls, succeeded) = ctx.counts(tool, spec);
            let verdict = match contract.rule(tool, spec.clause) {
                Some(rule) => ctx.cell(tool, spec, rule),
                // `compile` guarantees a rule per graded clause; check_complete would
                // report the hole, so leave it rather than invent a verdict.
                None => continue,
            };
            cells.push(Cell {
                tool: tool.to_owned(),
                clause: spec.clause,
                verdict,
                calls,
                succeeded,
            });
        }
    }
    let grades = Grades {
        cells,
        unattributed,
        uncontracted,
    };
    grades.check_complete(contract)?;
    Ok(grades)
}

fn check_repeat(call: &Call, calls: &BTreeMap<usize, &Call>) -> Result<(), GradeError> {
    let Some(of) = call.repeat_of else {
        return Ok(());
    };
    let identical = calls.get(&of).is_some_and(|earlier| {
        of < call.index && earlier.tool == call.tool && earlier.arguments == call.arguments
    });
    if identical {
        Ok(())
    } else {
        Err(GradeError::NotARepeat {
            index: call.index,
            of,
            tool: call.tool.clone(),
        })
    }
}

struct Context<'a> {
    obs: &'a Observation,
    calls: BTreeMap<usize, &'a Call>,
    /// Effects attributed to a call of a contracted tool, with that tool.
    owned: Vec<(&'a str, &'a Effect)>,
}

impl Context<'_> {
    /// The calls of `tool` that bear on a clause, and how many of them succeeded.
    fn counts(&self, tool: &str, spec: &ClauseSpec) -> (usize, usize) {
        let bearing = self.obs.calls.iter().filter(|c| {
            c.tool == tool && (spec.subject != Subject::Repeats || c.repeat_of.is_some())
        });
        let (mut calls, mut succeeded) = (0, 0);
        for call in bearing {
            calls += 1;
            succeeded += usize::from(call.ok);
        }
        (calls, succeeded)
    }

    fn cell(&self, tool: &str, spec: &ClauseSpec, rule: &CompiledRule) -> Verdict {
        let basis = rule.basis.clone();
        let made = match self.untestable(tool, spec, rule) {
            Ok(made) => made,
            Err(verdict) => return *verdict,
        };
        let statuses = |backing: &[Sensor]| -> Vec<SensorStatus> {
            self.obs
                .sensors
                .iter()
                .filter(|s| backing.contains(&s.sensor))
                .filter(|s| s.tool.as_deref().is_none_or(|t| t == tool))
                .cloned()
                .collect()
        };
        let sensors = statuses(spec.sensors);
        let fallback = statuses(spec.fallback.as_slice());
        if let Some(verdict) = self.confirmed(tool, spec, rule, &sensors, &fallback) {
            return verdict;
        }
        if let Some(verdict) = self.unproven(tool, spec, &sensors) {
            return verdict;
        }
        // Calls that all failed never did the tool's job: their silence proves nothing.
        let (_, succeeded) = self.counts(tool, spec);
        if succeeded == 0 && spec.subject != Subject::Manifest {
            let errors: Vec<_> = self
                .calls
                .values()
                .filter(|c| c.tool == tool)
                .map(|c| json!({"index": c.index, "error": c.error}))
                .collect();
            return skipped(
                SkipReason::NoSuccessfulCall,
                json!({ "calls": made, "succeeded": 0, "errors": errors }),
            );
        }
        let absent = |s: &SensorStatus| s.status == SensorState::CapabilityAbsent;
        if sensors.iter().any(absent) {
            if !sensors.iter().all(absent) || fallback.is_empty() {
                return skipped(SkipReason::CapabilityAbsent, json!({ "sensors": sensors }));
            }
            return by_fallback(basis, (made, succeeded), sensors, fallback);
        }
        // A live fallback adds its proof; one that failed leaves the primary sensors to it.
        Verdict::Refuted {
            basis,
            calls: made,
            succeeded,
            sensors: sensors
                .into_iter()
                .chain(
                    fallback
                        .into_iter()
                        .filter(|s| s.status == SensorState::Live),
                )
                .collect(),
        }
    }

    /// A cell that cannot be tested: a declaration that could not be read, nothing promised,
    /// a tool never called (or, for a repeat clause, never repeated). Else the calls the
    /// clause is graded on.
    fn untestable(
        &self,
        tool: &str,
        spec: &ClauseSpec,
        rule: &CompiledRule,
    ) -> Result<usize, Box<Verdict>> {
        let basis = rule.basis.clone();
        // A declaration that could not be read promises nothing knowable: say so, first.
        let malformed: Vec<_> = self
            .obs
            .errors
            .iter()
            .filter(|e| e.kind == ErrorKind::MalformedTool && e.tool.as_deref() == Some(tool))
            .collect();
        if !malformed.is_empty() {
            return Err(Box::new(Verdict::Errored {
                reason: ErrorKind::MalformedTool,
                evidence: json!({ "errors": malformed }),
            }));
        }
        if rule.allowed.is_none() {
            return Err(Box::new(skipped(
                SkipReason::NothingPromised,
                json!({ "basis": basis }),
            )));
        }
        let of_tool = || self.obs.calls.iter().filter(|c| c.tool == tool);
        let all = of_tool().count();
        let made = match spec.subject {
            Subject::Calls | Subject::Manifest => all,
            Subject::Repeats => of_tool().filter(|c| c.repeat_of.is_some()).count(),
        };
        if all == 0 && spec.subject != Subject::Manifest {
            let reason = self
                .obs
                .not_called
                .iter()
                .find(|(name, _)| name == tool)
                .map_or(SkipReason::NotCalled, |(_, reason)| *reason);
            return Err(Box::new(skipped(reason, Value::Null)));
        }
        if made == 0 && spec.subject == Subject::Repeats {
            return Err(Box::new(skipped(
                SkipReason::NotCalled,
                json!({ "calls": all, "repeated_calls": 0 }),
            )));
        }
        Ok(made)
    }

    /// Confirmed: effects the tool owns that the rule forbids, with the calls that caused
    /// them and what the control run's subtraction took away.
    fn confirmed(
        &self,
        tool: &str,
        spec: &ClauseSpec,
        rule: &CompiledRule,
        sensors: &[SensorStatus],
        fallback: &[SensorStatus],
    ) -> Option<Verdict> {
        let forbidden: Vec<&Effect> = self
            .owned
            .iter()
            .filter(|(owner, e)| *owner == tool && self.forbids(spec, rule, e))
            .map(|(_, e)| *e)
            .collect();
        if forbidden.is_empty() {
            return None;
        }
        let mut causes: Vec<usize> = forbidden
            .iter()
            .filter_map(|e| e.attribution.call_index())
            .collect();
        causes.sort_unstable();
        causes.dedup();
        let subtracted: Vec<&Effect> = self
            .obs
            .control_subtracted
            .iter()
            .filter(|e| (spec.domain)(e.class))
            .collect();
        Some(Verdict::Confirmed {
            basis: rule.basis.clone(),
            effects_omitted: forbidden.len().saturating_sub(MAX_EVIDENCE),
            effects: forbidden.into_iter().take(MAX_EVIDENCE).cloned().collect(),
            calls: causes.iter().map(|i| self.calls[i].clone()).collect(),
            subtracted_omitted: subtracted.len().saturating_sub(MAX_EVIDENCE),
            control_subtracted: subtracted.into_iter().take(MAX_EVIDENCE).cloned().collect(),
            sensors: sensors.iter().chain(fallback).cloned().collect(),
        })
    }

    /// Errored: a run error that concerns the tool, or a backing sensor that failed or never
    /// proved itself: absence cannot be shown.
    fn unproven(&self, tool: &str, spec: &ClauseSpec, sensors: &[SensorStatus]) -> Option<Verdict> {
        // Errors without a tool concern every tool: a broken run cannot prove absence.
        let errors: Vec<_> = self
            .obs
            .errors
            .iter()
            .filter(|e| e.tool.as_deref().is_none_or(|t| t == tool))
            .collect();
        if let Some(first) = errors.first() {
            return Some(Verdict::Errored {
                reason: first.kind,
                evidence: json!({ "errors": errors }),
            });
        }

        let silent: Vec<_> = spec
            .sensors
            .iter()
            .filter(|s| !sensors.iter().any(|status| status.sensor == **s))
            .collect();
        let failing = sensors.iter().any(|s| {
            matches!(
                s.status,
                SensorState::Blind { .. } | SensorState::Failed { .. }
            )
        });
        if failing || !silent.is_empty() {
            return Some(Verdict::Errored {
                reason: ErrorKind::SensorFailed,
                evidence: json!({ "sensors": sensors, "without_self_test": silent }),
            });
        }
        None
    }
}

/// The verdict of a cell whose primary sensors are all absent, from its fallback's
/// self-tests: all live ⇒ refuted on them alone; any blind or failed ⇒ errored; else absent.
fn by_fallback(
    basis: String,
    (made, succeeded): (usize, usize),
    sensors: Vec<SensorStatus>,
    fallback: Vec<SensorStatus>,
) -> Verdict {
    let failing = fallback.iter().any(|s| {
        matches!(
            s.status,
            SensorState::Blind { .. } | SensorState::Failed { .. }
        )
    });
    if failing {
        return Verdict::Errored {
            reason: ErrorKind::SensorFailed,
            evidence: json!({ "sensors": sensors, "fallback": fallback }),
        };
    }
    if fallback.iter().all(|s| s.status == SensorState::Live) {
        return Verdict::Refuted {
            basis,
            calls: made,
            succeeded,
            sensors: fallback,
        };
    }
    skipped(
        SkipReason::CapabilityAbsent,
        json!({ "sensors": sensors, "fallback": fallback }),
    )
}

impl Context<'_> {
    fn forbids(&self, spec: &ClauseSpec, rule: &CompiledRule, effect: &Effect) -> bool {
        if !(spec.restricts)(effect) {
            return false;
        }
        // The server's own environment is no file a tool reads (`places::own_environment`).
        if effect.class == EffectClass::Read && crate::places::own_environment(&effect.path) {
            return false;
        }
        if spec.subject == Subject::Repeats {
            // Only what the repeat added to the state it found counts: a rewrite of
            // identical bytes, or traffic to a destination (a program, a listener) the first
            // call already reached, is no additional effect.
            let Some((call, of)) = effect
                .attribution
                .call_index()
                .and_then(|i| self.calls.get(&i))
                .and_then(|call| Some((call, call.repeat_of?)))
            else {
                return false;
            };
            let again = if effect.class.is_fs() {
                call.left_unchanged.contains(&effect.path)
            } else {
                self.obs.effects.iter().any(|first| {
                    first.attribution.call_index() == Some(of)
                        && first.class == effect.class
                        && first.path == effect.path
                })
            };
            if again {
                return false;
            }
        }
        let secret = spec.canaries
            && match effect.class {
                EffectClass::Read => {
                    self.obs.canaries.contains(&effect.path)
                        || crate::places::never_read(&effect.path).is_some()
                }
                _ => effect.detail.carries_secret(),
            };
        secret || rule.allows(&effect.path) == Some(false)
    }
}

fn skipped(reason: SkipReason, evidence: Value) -> Verdict {
    Verdict::Skipped { reason, evidence }
}

impl Grades {
    /// Checks that there is exactly one cell per tool × graded clause of `contract`, and no
    /// other; the error names the first cell at fault.
    pub fn check_complete(&self, contract: &CompiledContract) -> Result<(), CompletenessError> {
        let mut expected: BTreeMap<(&str, Clause), usize> =
            contract.cells().map(|cell| (cell, 0)).collect();
        for cell in &self.cells {
            let count = expected
                .get_mut(&(cell.tool.as_str(), cell.clause))
                .ok_or_else(|| CompletenessError::Unexpected {
                    tool: cell.tool.clone(),
                    clause: cell.clause,
                })?;
            *count += 1;
        }
        for (tool, clause) in contract.cells() {
            let count = expected[&(tool, clause)];
            let (tool, clause) = (tool.to_owned(), clause);
            match count {
                0 => return Err(CompletenessError::Missing { tool, clause }),
                1 => {}
                count => {
                    return Err(CompletenessError::Duplicate {
                        tool,
                        clause,
                        count,
                    });
                }
            }
        }
        Ok(())
    }

    /// The cell of one tool × clause.
    pub fn cell(&self, tool: &str, clause: Clause) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.tool == tool && c.clause == clause)
    }

    /// The SPEC §5 `verdicts` array: one `Cell::to_json` object per cell, in grid order.
    pub fn verdicts_json(&self) -> Value {
        Value::Array(self.cells.iter().map(Cell::to_json).collect())
    }
}
