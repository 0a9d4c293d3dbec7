//! The closed set of contract clauses (SPEC §3.6) and their stable names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One clause of an effect contract. Declaration order is report order.
///
/// Serialised as its SPEC §3.6 name (`"fs.write"`, `"net.egress"`, …); those names are a
/// public interface (SPEC §5) and must not change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Clause {
    /// Where the tool may create, modify or remove files.
    FsWrite,
    /// Whether the tool may delete or overwrite files that existed before the call.
    FsDelete,
    /// What the tool may read (its scope).
    FsRead,
    /// Which programs the tool may execute.
    Exec,
    /// Which hosts and ports the tool may reach.
    NetEgress,
    /// Whether the tool may listen on sockets.
    NetListen,
    /// Canary tokens must not reach what the model sees.
    ResultSecrets,
    /// No instruction-like text aimed at the model in results.
    ResultInstructions,
    /// tools/list must not change after review.
    ManifestStable,
    /// A repeated identical call adds no new effect.
    Idempotent,
}

impl Clause {
    /// Every clause, in declaration order.
    pub const ALL: [Clause; 10] = [
        Clause::FsWrite,
        Clause::FsDelete,
        Clause::FsRead,
        Clause::Exec,
        Clause::NetEgress,
        Clause::NetListen,
        Clause::ResultSecrets,
        Clause::ResultInstructions,
        Clause::ManifestStable,
        Clause::Idempotent,
    ];

    /// The SPEC §3.6 name of the clause.
    pub fn as_str(self) -> &'static str {
        match self {
            Clause::FsWrite => "fs.write",
            Clause::FsDelete => "fs.delete",
            Clause::FsRead => "fs.read",
            Clause::Exec => "exec",
            Clause::NetEgress => "net.egress",
            Clause::NetListen => "net.listen",
            Clause::ResultSecrets => "result.secrets",
            Clause::ResultInstructions => "result.instructions",
            Clause::ManifestStable => "manifest.stable",
            Clause::Idempotent => "idempotent",
        }
    }
}

impl fmt::Display for Clause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A clause name that is not one of SPEC §3.6.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown clause {name:?}")]
pub struct UnknownClause {
    /// The name as written.
    pub name: String,
}

impl FromStr for Clause {
    type Err = UnknownClause;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Clause::ALL
            .into_iter()
            .find(|c| c.as_str() == name)
            .ok_or_else(|| UnknownClause {
                name: name.to_owned(),
            })
    }
}

impl TryFrom<String> for Clause {
    type Error = UnknownClause;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        name.parse()
    }
}

impl From<Clause> for String {
    fn from(clause: Clause) -> Self {
        clause.as_str().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips_through_from_str_and_serde() {
        for clause in Clause::ALL {
            assert_eq!(clause.as_str().parse::<Clause>(), Ok(clause));
            let json = serde_json::to_value(clause).unwrap();
            assert_eq!(json, serde_json::json!(clause.as_str()));
            assert_eq!(serde_json::from_value::<Clause>(json).unwrap(), clause);
        }
    }

    #[test]
    fn names_are_the_spec_names_in_order() {
        let names: Vec<_> = Clause::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            names,
            [
                "fs.write",
                "fs.delete",
                "fs.read",
                "exec",
                "net.egress",
                "net.listen",
                "result.secrets",
                "result.instructions",
                "manifest.stable",
                "idempotent"
            ]
        );
    }

    #[test]
    fn unknown_name_is_an_error_naming_it() {
        let err = "fs.writes".parse::<Clause>().unwrap_err();
        assert_eq!(err.to_string(), "unknown clause \"fs.writes\"");
        assert!(serde_json::from_str::<Clause>("\"FS.WRITE\"").is_err());
    }
}
