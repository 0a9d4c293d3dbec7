//! Compilation: a `Contract` checked against the graded clauses, its globs built.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::clause::Clause;
use crate::contract::{Contract, Rule};
use crate::graded::{self, GRADED};

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

/// One tool × clause rule, globs compiled.
#[derive(Debug, Clone)]
pub(crate) struct CompiledRule {
    pub(crate) basis: String,
    pub(crate) allowed: Option<GlobSet>,
}

impl CompiledRule {
    /// Whether an effect at `path` is allowed; `None` means nothing was promised.
    pub(crate) fn allows(&self, path: &str) -> Option<bool> {
        self.allowed.as_ref().map(|globs| globs.is_match(path))
    }
}

/// Why a contract does not compile. Each names the tool, the clause and the input at fault.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// A glob pattern does not parse.
    #[error("bad glob {glob:?} in clause {clause} of tool {tool:?}")]
    BadGlob {
        /// The tool.
        tool: String,
        /// The clause.
        clause: Clause,
        /// The glob as written.
        glob: String,
        /// The parser's complaint.
        #[source]
        source: globset::Error,
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
    /// A rule for a clause this version cannot grade; ignoring it would hide a promise.
    #[error("clause {clause} of tool {tool:?} is not graded by this version")]
    UngradedClause {
        /// The tool.
        tool: String,
        /// The clause.
        clause: Clause,
    },
}

impl Contract {
    /// Checks the contract against the graded clauses and compiles its globs.
    pub fn compile(&self) -> Result<CompiledContract, CompileError> {
        let mut tools: Vec<CompiledTool> = Vec::with_capacity(self.tools.len());
        for entry in &self.tools {
            let tool = &entry.tool;
            if tools.iter().any(|t| &t.name == tool) {
                return Err(CompileError::DuplicateTool { tool: tool.clone() });
            }
            let mut rules: Vec<Option<CompiledRule>> = vec![None; GRADED.len()];
            for clause_rule in &entry.rules {
                let clause = clause_rule.clause;
                let slot = GRADED
                    .iter()
                    .position(|spec| spec.clause == clause)
                    .ok_or_else(|| CompileError::UngradedClause {
                        tool: tool.clone(),
                        clause,
                    })?;
                if rules[slot].is_some() {
                    return Err(CompileError::DuplicateClause {
                        tool: tool.clone(),
                        clause,
                    });
                }
                rules[slot] = Some(CompiledRule {
                    basis: clause_rule.basis.clone(),
                    allowed: compile_rule(tool, clause, &clause_rule.rule)?,
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

fn compile_rule(tool: &str, clause: Clause, rule: &Rule) -> Result<Option<GlobSet>, CompileError> {
    let Rule::Restricted { allowed } = rule else {
        return Ok(None);
    };
    let mut set = GlobSetBuilder::new();
    for glob in allowed {
        let bad = |source| CompileError::BadGlob {
            tool: tool.to_owned(),
            clause,
            glob: glob.clone(),
            source,
        };
        set.add(
            GlobBuilder::new(glob)
                .literal_separator(true)
                .build()
                .map_err(bad)?,
        );
    }
    // Each glob built alone above, so a set-level failure still names the rule's globs.
    set.build()
        .map(Some)
        .map_err(|source| CompileError::BadGlob {
            tool: tool.to_owned(),
            clause,
            glob: allowed.join(" "),
            source,
        })
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
        let slot = GRADED.iter().position(|spec| spec.clause == clause)?;
        let entry = self.tools.iter().find(|t| t.name == tool)?;
        entry.rules.get(slot)
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
                rules,
            }],
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

    #[test]
    fn bad_glob_error_names_tool_clause_and_glob() {
        let err = contract(vec![
            restricted(Clause::FsWrite, &["/home/lab/**", "/tmp/[ab"]),
            restricted(Clause::FsDelete, &[]),
        ])
        .compile()
        .unwrap_err();
        assert!(matches!(&err, CompileError::BadGlob { glob, .. } if glob == "/tmp/[ab"));
        let message = err.to_string();
        assert!(message.contains("\"/tmp/[ab\""), "{message}");
        assert!(message.contains("fs.write"), "{message}");
        assert!(message.contains("\"read_note\""), "{message}");
        assert!(std::error::Error::source(&err).is_some());
    }

    #[test]
    fn globs_do_not_cross_separators_with_a_single_star() {
        let compiled = contract(vec![
            restricted(Clause::FsWrite, &["/tmp/*.lock"]),
            restricted(Clause::FsDelete, &["/home/lab/**"]),
        ])
        .compile()
        .unwrap();
        let write = compiled.rule("read_note", Clause::FsWrite).unwrap();
        assert_eq!(write.allows("/tmp/a.lock"), Some(true));
        assert_eq!(write.allows("/tmp/x/a.lock"), Some(false));
        let delete = compiled.rule("read_note", Clause::FsDelete).unwrap();
        assert_eq!(delete.allows("/home/lab/work/a/b"), Some(true));
    }

    #[test]
    fn missing_duplicate_and_ungraded_clauses_are_errors() {
        let missing = contract(vec![restricted(Clause::FsWrite, &[])]).compile();
        assert!(matches!(
            missing,
            Err(CompileError::MissingClause {
                clause: Clause::FsDelete,
                ..
            })
        ));
        let twice = contract(vec![
            restricted(Clause::FsWrite, &[]),
            restricted(Clause::FsWrite, &[]),
        ])
        .compile();
        assert!(matches!(
            twice,
            Err(CompileError::DuplicateClause {
                clause: Clause::FsWrite,
                ..
            })
        ));
        let ungraded = contract(vec![restricted(Clause::Exec, &[])]).compile();
        assert!(matches!(
            ungraded,
            Err(CompileError::UngradedClause {
                clause: Clause::Exec,
                ..
            })
        ));
    }

    #[test]
    fn a_tool_twice_is_an_error() {
        let mut twice = contract(vec![
            restricted(Clause::FsWrite, &[]),
            restricted(Clause::FsDelete, &[]),
        ]);
        twice.tools.push(twice.tools[0].clone());
        let err = twice.compile().unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool \"read_note\" appears twice in the contract"
        );
    }
}
