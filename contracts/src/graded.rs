//! The clauses this version grades, as one table: which sensors back each, how its rule is
//! derived from annotations, and which effects it restricts. Adding a clause is adding a
//! row here.

use crate::clause::Clause;
use crate::contract::Rule;
use crate::observation::{Effect, Sensor};
use crate::tool::Annotations;

/// How one clause is derived and graded.
pub(crate) struct ClauseSpec {
    pub(crate) clause: Clause,
    /// Sensors that must be live before the clause can be refuted.
    pub(crate) sensors: &'static [Sensor],
    /// The rule the annotations imply, and the hint that implies it.
    pub(crate) derive: fn(&Annotations) -> (Rule, String),
    /// Effects the clause is about; control effects in the domain are shown as evidence.
    pub(crate) domain: fn(&Effect) -> bool,
    /// Effects the clause forbids outside its allowed paths.
    pub(crate) restricts: fn(&Effect) -> bool,
}

/// Graded clauses, in `Clause` order.
pub(crate) const GRADED: &[ClauseSpec] = &[
    ClauseSpec {
        clause: Clause::FsWrite,
        sensors: &[Sensor::FsWrites],
        derive: derive_fs_write,
        domain: is_fs,
        // Every filesystem change is a write, deletes included.
        restricts: is_fs,
    },
    ClauseSpec {
        clause: Clause::FsDelete,
        sensors: &[Sensor::FsWrites],
        derive: derive_fs_delete,
        domain: is_fs,
        restricts: destroys_existing,
    },
];

/// The clauses this version grades, in report order: the columns of the verdict grid.
pub fn graded_clauses() -> impl Iterator<Item = Clause> {
    GRADED.iter().map(|spec| spec.clause)
}

fn is_fs(effect: &Effect) -> bool {
    effect.class.is_fs()
}

fn destroys_existing(effect: &Effect) -> bool {
    effect.existed_before && effect.class.destroys_existing()
}

fn derive_fs_write(annotations: &Annotations) -> (Rule, String) {
    let read_only = annotations.read_only_hint();
    if read_only.value {
        (Rule::nowhere(), read_only.basis())
    } else {
        (Rule::NothingPromised, read_only.basis())
    }
}

fn derive_fs_delete(annotations: &Annotations) -> (Rule, String) {
    let read_only = annotations.read_only_hint();
    let destructive = annotations.destructive_hint();
    if read_only.value {
        (Rule::nowhere(), read_only.basis())
    } else if !destructive.value {
        (Rule::nowhere(), destructive.basis())
    } else {
        let basis = format!("{}; {}", read_only.basis(), destructive.basis());
        (Rule::NothingPromised, basis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graded_table_is_in_clause_order_without_repeats() {
        let clauses: Vec<_> = graded_clauses().collect();
        let mut sorted = clauses.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(clauses, sorted);
        assert_eq!(clauses, [Clause::FsWrite, Clause::FsDelete]);
    }
}
