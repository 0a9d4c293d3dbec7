//! Compilation: a `Contract` checked against the graded clauses, its patterns built.

use crate::clause::Clause;
use crate::contract::{Contract, Rule};
use crate::graded::{self, GRADED};
use crate::pattern::{Matcher, PatternError};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A contract ready for grading: every tool has exactly one rule per graded clause.
#[derive(Debug, Clone)]
pub struct CompiledContract {
    source: Contract,
    tools: Vec<CompiledTool>,
}

#[derive(Debug, Clone)]
struct CompiledTool {
    name: String,
    // Indexed like `GRADED`.
    rules: Vec<CompiledRule>,
}

/// One tool × clause rule, patterns compiled.
#[derive(Debug, Clone)]
pub(crate) struct CompiledRule {
    pub(crate) basis: String,
    /// Shared between the rules of equal patterns: a manifest of thousands of tools holds
    /// one compiled set per distinct pattern list, not one per tool.
    pub(crate) allowed: Option<Arc<Matcher>>,
}

impl CompiledRule {
    /// Whether an effect on `target` is allowed; `None` means nothing was promised.
    pub(crate) fn allows(&self, target: &str) -> Option<bool> {
        self.allowed.as_ref().map(|m| m.allows(target))
    }
}

/// Why a contract does not compile. Each names the tool, the clause and the input at fault.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// A pattern does not compile.
    #[error("bad pattern in clause {clause} of tool {tool:?}")]
    BadPattern {
        /// The tool.
        tool: String,
        /// The clause.
        clause: Clause,
        /// The pattern and what is wrong with it.
        #[source]
        source: PatternError,
    },
    /// Two entries for one tool.
    #[error("tool {tool:?} appears twice in the contract")]
    DuplicateTool {
        /// The tool.
        tool: String,
    },
    /// Two rules for one clause of one tool.
    #[error("clause {clause} appears twice for tool {tool:?}")]
    DuplicateClause {
        /// The tool.
        tool: String,
        /// The clause.
        clause: Clause,
    },
    /// A graded clause without a rule.
    #[error("tool {tool:?} has no rule for clause {clause}")]
    MissingClause {
        /// The tool.
        tool: String,
        /// The clause.
        clause: Clause,
    },
}

impl Contract {
    /// Checks the contract against the graded clauses and compiles its patterns.
    pub fn compile(&self) -> Result<CompiledContract, CompileError> {
        let mut tools: Vec<CompiledTool> = Vec::with_capacity(self.tools.len());
        let mut names = HashSet::with_capacity(self.tools.len());
        let mut compiled = HashMap::new();
        for entry in &self.tools {
            let tool = &entry.tool;
            if !names.insert(tool.as_str()) {
                return Err(CompileError::DuplicateTool { tool: tool.clone() });
            }
            let mut rules: Vec<Option<CompiledRule>> = vec![None; GRADED.len()];
            for clause_rule in &entry.rules {
                let clause = clause_rule.clause;
                let slot = clause as usize;
                if rules[slot].is_some() {
                    return Err(CompileError::DuplicateClause {
                        tool: tool.clone(),
                        clause,
                    });
                }
                rules[slot] = Some(CompiledRule {
                    basis: clause_rule.basis.clone(),
                    allowed: compile_rule(tool, clause, &clause_rule.rule, &mut compiled)?,
                });
            }
            let rules = rules
                .into_iter()
                .zip(GRADED)
                .map(|(rule, spec)| {
                    rule.ok_or_else(|| CompileError::MissingClause {
                        tool: tool.clone(),
                        clause: spec.clause,
                    })
                })
                .collect::<Result<_, _>>()?;
            tools.push(CompiledTool {
                name: tool.clone(),
                rules,
            });
        }
        Ok(CompiledContract {
            source: self.clone(),
            tools,
        })
    }
}

/// Matchers compiled so far, by clause and pattern list.
type Compiled<'a> = HashMap<(Clause, &'a [String]), Arc<Matcher>>;

fn compile_rule<'a>(
    tool: &str,
    clause: Clause,
    rule: &'a Rule,
    compiled: &mut Compiled<'a>,
) -> Result<Option<Arc<Matcher>>, CompileError> {
    let Rule::Restricted { allowed } = rule else {
        return Ok(None);
    };
    if let Some(matcher) = compiled.get(&(clause, allowed.as_slice())) {
        return Ok(Some(Arc::clone(matcher)));
    }
    let matcher = Matcher::compile(graded::spec(clause).patterns, allowed).map_err(|source| {
        CompileError::BadPattern {
            tool: tool.to_owned(),
            clause,
            source,
        }
    })?;
    let matcher = Arc::new(matcher);
    compiled.insert((clause, allowed.as_slice()), Arc::clone(&matcher));
    Ok(Some(matcher))
}

impl CompiledContract {
    /// The contract this was compiled from (for pre-registration in the receipts).
    pub fn source(&self) -> &Contract {
        &self.source
    }

    /// The tools, in contract order.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name.as_str())
    }

    /// Every tool × graded clause cell, tools in contract order, clauses in `Clause` order.
    pub fn cells(&self) -> impl Iterator<Item = (&str, Clause)> {
        self.tools()
            .flat_map(|tool| graded::graded_clauses().map(move |clause| (tool, clause)))
    }

    pub(crate) fn rule(&self, tool: &str, clause: Clause) -> Option<&CompiledRule> {
        let entry = self.tools.iter().find(|t| t.name == tool)?;
        entry.rules.get(clause as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{ClauseRule, ToolContract};

    fn contract(rules: Vec<ClauseRule>) -> Contract {
        Contract {
            tools: vec![ToolContract {
                tool: "read_note".into(),
                call: None,
                rules,
            }],
            ..Contract::default()
        }
    }

    fn restricted(clause: Clause, allowed: &[&str]) -> ClauseRule {
        ClauseRule {
            clause,
            rule: Rule::Restricted {
                allowed: allowed.iter().map(|g| g.to_string()).collect(),
            },
            basis: "test".into(),
        }
    }

    fn all_nowhere() -> Vec<ClauseRule> {
        Clause::ALL.iter().map(|c| restricted(*c, &[])).collect()
    }

    #[test]
    fn bad_glob_error_names_tool_clause_and_glob() {
        let mut rules = all_nowhere();
        rules[0] = restricted(Clause::FsWrite, &["/home/lab/**", "/tmp/[ab"]);
        let err = contract(rules).compile().unwrap_err();
        let message = err.to_string();
        assert!(message.contains("fs.write"), "{message}");
        assert!(message.contains("\"read_note\""), "{message}");
        let source = std::error::Error::source(&err).unwrap();
        assert_eq!(source.to_string(), "bad glob \"/tmp/[ab\"");
    }

    #[test]
    fn each_clause_matches_with_its_own_pattern_kind() {
        let mut rules = all_nowhere();
        rules[0] = restricted(Clause::FsWrite, &["/tmp/*.lock"]);
        rules[3] = restricted(Clause::Exec, &["git"]);
        rules[4] = restricted(Clause::NetEgress, &["*:53"]);
        let compiled = contract(rules).compile().unwrap();
        let write = compiled.rule("read_note", Clause::FsWrite).unwrap();
        assert_eq!(write.allows("/tmp/a.lock"), Some(true));
        assert_eq!(write.allows("/tmp/x/a.lock"), Some(false));
        let exec = compiled.rule("read_note", Clause::Exec).unwrap();
        assert_eq!(exec.allows("/usr/bin/git"), Some(true));
        let egress = compiled.rule("read_note", Clause::NetEgress).unwrap();
        assert_eq!(egress.allows("10.1.2.3:53"), Some(true));
        assert_eq!(egress.allows("10.1.2.3:443"), Some(false));
    }

    #[test]
    fn missing_and_duplicate_clauses_are_errors() {
        let mut missing = all_nowhere();
        missing.remove(1);
        assert!(matches!(
            contract(missing).compile(),
            Err(CompileError::MissingClause {
                clause: Clause::FsDelete,
                ..
            })
        ));
        let mut twice = all_nowhere();
        twice.push(restricted(Clause::FsWrite, &[]));
        assert!(matches!(
            contract(twice).compile(),
            Err(CompileError::DuplicateClause {
                clause: Clause::FsWrite,
                ..
            })
        ));
    }

    #[test]
    fn a_tool_twice_is_an_error() {
        let mut twice = contract(all_nowhere());
        twice.tools.push(twice.tools[0].clone());
        let err = twice.compile().unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool \"read_note\" appears twice in the contract"
        );
    }
}
