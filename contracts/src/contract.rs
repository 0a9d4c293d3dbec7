//! Contracts as data: per tool, per clause, a rule. Derived from annotations now; written
//! contract files will produce the same type.

use serde::{Deserialize, Serialize};

use crate::clause::Clause;
use crate::graded::GRADED;
use crate::tool::ToolDecl;

/// What one server's tools may do, before compilation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contract {
    /// One entry per tool, in tools/list order.
    pub tools: Vec<ToolContract>,
}

/// The rules of one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolContract {
    /// The tool's name.
    pub tool: String,
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
    /// Where the rule comes from: the annotation (`readOnlyHint: true`) or, later, the
    /// contract file line.
    pub basis: String,
}

/// What a clause allows a tool. What "effect" means is the clause's: any filesystem change
/// for `fs.write`; a delete or overwrite of something that existed before the call for
/// `fs.delete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Rule {
    /// The tool declared it may do everything the clause covers: never a finding.
    NothingPromised,
    /// The clause's effects are allowed only on paths matching one of these globs
    /// (`*` does not cross `/`; `**` does). Empty: allowed nowhere.
    Restricted {
        /// Glob patterns over sandbox paths.
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

/// The contract the tools' annotations imply (SPEC §3.6), with spec defaults for absent
/// hints, for every graded clause.
pub fn derive(tools: &[ToolDecl]) -> Contract {
    let tools = tools
        .iter()
        .map(|decl| ToolContract {
            tool: decl.name.clone(),
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
        })
        .collect();
    Contract { tools }
}
