//! Contracts as data: per tool, per clause, a rule and its basis. [`crate::derive()`]
//! builds one from annotations, [`crate::ContractDocument::resolve`] from a contract file;
//! both are compiled the same way.

use serde::{Deserialize, Serialize};

use crate::clause::Clause;

/// What one server's tools may do, before compilation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contract {
    /// The server the contract was written for; `None` when derived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerIdentity>,
    /// The declared scope: path globs, placeholders resolved; empty when none was declared.
    /// The planner derives escape variants from it (SPEC §3.5).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
    /// One entry per tool, in tools/list order.
    pub tools: Vec<ToolContract>,
}

/// The server a contract document names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerIdentity {
    /// The server's name (its `serverInfo.name`).
    pub name: String,
    /// The version the contract was written for, if it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The rules of one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolContract {
    /// The tool's name.
    pub tool: String,
    /// Whether the tool may be called: `None` leaves it to SPEC §3.5 (contained targets
    /// call every tool, remote targets read-only ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<bool>,
    /// One rule per clause.
    pub rules: Vec<ClauseRule>,
}

/// The rule of one clause for one tool, and why it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClauseRule {
    /// The clause.
    pub clause: Clause,
    /// What the clause allows.
    #[serde(flatten)]
    pub rule: Rule,
    /// Where the rule comes from: the annotation (`readOnlyHint: true`) or the contract
    /// file position (`contract.toml:12:1`).
    pub basis: String,
}

/// What a clause allows a tool. Which effects the clause is about, and how `allowed`
/// matches them, is the clause's (see `CONTRACTS.md`): paths for `fs.*`, programs for
/// `exec`, `host:port` for `net.*`; on/off clauses are `Restricted` with nothing allowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Rule {
    /// The tool may do everything the clause covers: never a finding.
    NothingPromised,
    /// The clause's effects are allowed only where one of these patterns matches.
    /// Empty: allowed nowhere.
    Restricted {
        /// Patterns, read as the clause says.
        allowed: Vec<String>,
    },
}

impl Rule {
    /// A restriction that allows nothing.
    pub fn nowhere() -> Self {
        Rule::Restricted {
            allowed: Vec::new(),
        }
    }
}
