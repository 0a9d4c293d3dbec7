//! The graded clauses as one table: the sensors that back each, how its rule is derived
//! from annotations, which effect classes it restricts and how its allow list matches
//! them, and which calls it is about. Adding a clause is adding a row here.

use crate::clause::Clause;
use crate::contract::{ClauseRule, Contract, Rule, ToolContract};
use crate::derive as by;
use crate::observation::{Effect, EffectClass, Sensor};
use crate::pattern::PatternKind;
use crate::tool::{Annotations, ToolDecl};

/// The contract the tools' annotations imply, for every graded clause; no tool has a
/// `call` decision (SPEC §3.5 defaults apply).
pub fn derive(tools: &[ToolDecl]) -> Contract {
    Contract {
        tools: tools.iter().map(derive_tool).collect(),
        ..Contract::default()
    }
}

pub(crate) fn derive_tool(decl: &ToolDecl) -> ToolContract {
    ToolContract {
        tool: decl.name.clone(),
        call: None,
        rules: GRADED
            .iter()
            .map(|spec| {
                let (rule, basis) = (spec.derive)(&decl.annotations);
                ClauseRule {
                    clause: spec.clause,
                    rule,
                    basis,
                }
            })
            .collect(),
    }
}

/// How one clause is derived and graded.
pub(crate) struct ClauseSpec {
    pub(crate) clause: Clause,
    /// Sensors that must be live before the clause can be refuted.
    pub(crate) sensors: &'static [Sensor],
    /// A sensor that backs the clause in their place when every one of them is
    /// `capability_absent` (and adds its evidence when they are live).
    pub(crate) fallback: Option<Sensor>,
    /// The rule the annotations imply, and the hint that implies it.
    pub(crate) derive: fn(&Annotations) -> (Rule, String),
    /// Effect classes the clause is about; control effects of these are shown as evidence.
    pub(crate) domain: fn(EffectClass) -> bool,
    /// Effects the clause forbids unless its allow list matches them.
    pub(crate) restricts: fn(&Effect) -> bool,
    /// How the allow list matches an effect's `path`.
    pub(crate) patterns: PatternKind,
    /// Which calls of the tool the clause grades.
    pub(crate) subject: Subject,
    /// Whether a secret is forbidden even when the allow list matches it: for `fs.read` a
    /// read of a canary or of a never-read place, for `net.egress` traffic that carries a
    /// planted token or a real secret's format.
    pub(crate) canaries: bool,
}

/// The calls a clause is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subject {
    /// Every call of the tool; not called ⇒ `skipped: not_called`.
    Calls,
    /// Calls that repeat an identical earlier call; none ⇒ `skipped: not_called`.
    Repeats,
    /// The tool's manifest entry, seen by tools/list whether or not the tool was called.
    Manifest,
}

const FS_WRITES: &[Sensor] = &[Sensor::FsWrites];
const PROTOCOL: &[Sensor] = &[Sensor::Protocol];

/// Graded clauses, in `Clause` order.
pub(crate) const GRADED: &[ClauseSpec] = &[
    ClauseSpec {
        clause: Clause::FsWrite,
        sensors: FS_WRITES,
        fallback: Some(Sensor::ProtocolWitness),
        derive: by::fs_write,
        domain: EffectClass::is_fs,
        // Every filesystem change is a write, deletes included.
        restricts: |e| e.class.is_fs(),
        patterns: PatternKind::Paths,
        subject: Subject::Calls,
        canaries: false,
    },
    ClauseSpec {
        clause: Clause::FsDelete,
        sensors: FS_WRITES,
        fallback: None,
        derive: by::fs_delete,
        domain: EffectClass::is_fs,
        // A removal or a truncation: a modification that does not cut off the file's end
        // (an edit, a rewrite) is a write (`fs.write`), not a delete.
        restricts: |e| {
            e.existed_before
                && e.class.destroys_existing()
                && (e.class != EffectClass::Modified || e.detail.truncates())
        },
        patterns: PatternKind::Paths,
        subject: Subject::Calls,
        canaries: false,
    },
    ClauseSpec {
        clause: Clause::FsRead,
        sensors: &[Sensor::FsEvents],
        fallback: None,
        derive: by::fs_read,
        domain: |c| c == EffectClass::Read,
        restricts: |e| e.class == EffectClass::Read,
        patterns: PatternKind::Paths,
        subject: Subject::Calls,
        canaries: true,
    },
    ClauseSpec {
        clause: Clause::Exec,
        sensors: &[Sensor::Processes],
        fallback: None,
        derive: by::exec,
        domain: |c| c == EffectClass::Exec,
        restricts: |e| e.class == EffectClass::Exec,
        patterns: PatternKind::Programs,
        subject: Subject::Calls,
        canaries: false,
    },
    ClauseSpec {
        clause: Clause::NetEgress,
        sensors: &[Sensor::Network],
        fallback: None,
        derive: by::net_egress,
        domain: EffectClass::is_egress,
        restricts: |e| e.class.is_egress(),
        patterns: PatternKind::Endpoints,
        subject: Subject::Calls,
        canaries: true,
    },
    ClauseSpec {
        clause: Clause::NetListen,
        sensors: &[Sensor::Network],
        fallback: None,
        derive: by::net_listen,
        domain: |c| c == EffectClass::Listen,
        restricts: |e| e.class == EffectClass::Listen,
        patterns: PatternKind::Endpoints,
        subject: Subject::Calls,
        canaries: false,
    },
    ClauseSpec {
        clause: Clause::ResultSecrets,
        sensors: PROTOCOL,
        fallback: None,
        derive: by::on_for_every_tool,
        domain: |c| c == EffectClass::SecretInResult,
        restricts: |e| e.class == EffectClass::SecretInResult,
        patterns: PatternKind::Paths,
        subject: Subject::Calls,
        canaries: false,
    },
    ClauseSpec {
        clause: Clause::ResultInstructions,
        sensors: PROTOCOL,
        fallback: None,
        derive: by::on_for_every_tool,
        domain: |c| c == EffectClass::InstructionInResult,
        restricts: |e| e.class == EffectClass::InstructionInResult,
        patterns: PatternKind::Paths,
        subject: Subject::Calls,
        canaries: false,
    },
    ClauseSpec {
        clause: Clause::ManifestStable,
        sensors: PROTOCOL,
        fallback: None,
        derive: by::on_for_every_tool,
        domain: |c| c == EffectClass::ManifestChanged,
        restricts: |e| e.class == EffectClass::ManifestChanged,
        patterns: PatternKind::Paths,
        subject: Subject::Manifest,
        canaries: false,
    },
    ClauseSpec {
        clause: Clause::Idempotent,
        // Refuting needs the complete write witness; effects other sensors saw confirm.
        sensors: FS_WRITES,
        fallback: None,
        derive: by::idempotent,
        domain: EffectClass::changes_state,
        restricts: |e| e.class.changes_state(),
        patterns: PatternKind::Paths,
        subject: Subject::Repeats,
        canaries: false,
    },
];

/// The clauses this version grades, in report order: the columns of the verdict grid.
pub fn graded_clauses() -> impl Iterator<Item = Clause> {
    GRADED.iter().map(|spec| spec.clause)
}

/// The row of one clause (`GRADED` has every clause in order; a test checks it).
pub(crate) fn spec(clause: Clause) -> &'static ClauseSpec {
    &GRADED[clause as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graded_table_is_every_clause_in_order() {
        let clauses: Vec<_> = graded_clauses().collect();
        assert_eq!(clauses, Clause::ALL);
        for clause in Clause::ALL {
            assert_eq!(spec(clause).clause, clause);
        }
    }
}
