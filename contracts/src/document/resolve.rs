//! [`ContractDocument`] + tools/list + lab paths → [`Contract`]: the document's rules beat
//! the annotations', placeholders are resolved, and every pattern is checked where it was
//! written.

use crate::clause::Clause;
use crate::compile::CompiledContract;
use crate::contract::{ClauseRule, Contract, Rule, ToolContract};
use crate::graded;
use crate::graded::derive_tool;
use crate::pattern;
use crate::tool::ToolDecl;

use super::{ContractDocument, ContractError, DocRule, Located, Location};

/// Where the lab is, as the server sees it: the values of the `{lab}`, `{home}`, `{tmp}`
/// and `{work}` placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabPaths {
    /// The lab root (`{lab}`).
    pub lab: String,
    /// `$HOME` (`{home}`).
    pub home: String,
    /// `$TMPDIR` (`{tmp}`).
    pub tmp: String,
    /// The working directory (`{work}`).
    pub work: String,
}

impl LabPaths {
    /// The standard layout under `root`: `root/home`, `root/tmp`, `root/work`.
    pub fn at(root: &str) -> Self {
        let root = root.trim_end_matches('/');
        LabPaths {
            lab: root.to_owned(),
            home: format!("{root}/home"),
            tmp: format!("{root}/tmp"),
            work: format!("{root}/work"),
        }
    }

    /// `text` with each placeholder of the lab (`{work}`, `{home}`, `{tmp}`, `{lab}`)
    /// replaced by its path; other braces are left as they are.
    pub(crate) fn expand(&self, text: &str) -> String {
        ["lab", "home", "tmp", "work"]
            .iter()
            .fold(text.to_owned(), |text, name| match self.value(name) {
                Some(path) => text.replace(&format!("{{{name}}}"), path.trim_end_matches('/')),
                None => text,
            })
    }

    fn value(&self, placeholder: &str) -> Option<&str> {
        match placeholder {
            "lab" => Some(&self.lab),
            "home" => Some(&self.home),
            "tmp" => Some(&self.tmp),
            "work" => Some(&self.work),
            _ => None,
        }
    }
}

impl ContractDocument {
    /// The contract for a server whose tools/list is `tools`, in the lab `lab`: per tool,
    /// per clause, the document's rule if it writes one (basis `file:line:column`), else
    /// the defaults — the declared scope for `fs.read`, then the annotations' rules unless
    /// `[defaults] from_annotations = false`, which makes every unwritten clause allow
    /// nothing. A tool the document names but the server lacks is an error.
    pub fn resolve(&self, tools: &[ToolDecl], lab: &LabPaths) -> Result<Contract, ContractError> {
        // The server's own row (`(server)`, as an intent contract renders it): its launch,
        // graded from the universal limits and whatever the document writes for it.
        let row = crate::intent::server_row(tools);
        if let Some(unknown) = self
            .tools
            .iter()
            .find(|t| t.name.value != row && !tools.iter().any(|decl| decl.name == t.name.value))
        {
            return Err(ContractError::UnknownTool {
                at: unknown.name.at.clone(),
                tool: unknown.name.value.clone(),
            });
        }
        let scope = match &self.scope {
            Some(scope) => Some((
                resolve_all(
                    &scope.value,
                    lab,
                    pattern::PatternKind::Paths,
                    "[scope] paths",
                )?,
                format!("scope ({})", scope.at),
            )),
            None => None,
        };
        let mut resolved = Vec::with_capacity(tools.len());
        for decl in tools {
            let mut contract = derive_tool(decl);
            for rule in &mut contract.rules {
                self.default_rule(rule, scope.as_ref());
            }
            let read_only = decl.annotations.read_only_hint().value;
            if !read_only && decl.annotations.destructive_hint().value {
                contract.call = self.call_destructive.as_ref().map(|c| c.value);
            }
            if let Some(doc) = self.tools.iter().find(|t| t.name.value == decl.name) {
                self.apply(doc, &mut contract, scope.as_ref(), lab)?;
            }
            resolved.push(contract);
        }
        if let Some(doc) = self.tools.iter().find(|t| t.name.value == row) {
            // What it offers beside its tools is what the document writes for it.
            let offers = crate::intent::Offers::default();
            let mut contract = crate::intent::server_contract(&row, offers, lab);
            self.apply(doc, &mut contract, scope.as_ref(), lab)?;
            resolved.push(contract);
        }
        Ok(Contract {
            server: Some(self.server.clone()),
            scope: scope.map(|(globs, _)| globs).unwrap_or_default(),
            tools: resolved,
        })
    }

    /// [`ContractDocument::resolve`], then [`Contract::compile`].
    pub fn compile(
        &self,
        tools: &[ToolDecl],
        lab: &LabPaths,
    ) -> Result<CompiledContract, ContractError> {
        Ok(self.resolve(tools, lab)?.compile()?)
    }

    fn default_rule(&self, rule: &mut ClauseRule, scope: Option<&(Vec<String>, String)>) {
        if rule.clause == Clause::FsRead {
            if let Some((globs, basis)) = scope {
                rule.rule = Rule::Restricted {
                    allowed: globs.clone(),
                };
                rule.basis = basis.clone();
            }
            return;
        }
        if !self.from_annotations.value {
            rule.rule = Rule::nowhere();
            rule.basis = format!(
                "defaults.from_annotations = false ({})",
                self.from_annotations.at
            );
        }
    }

    fn apply(
        &self,
        doc: &super::DocTool,
        contract: &mut ToolContract,
        scope: Option<&(Vec<String>, String)>,
        lab: &LabPaths,
    ) -> Result<(), ContractError> {
        if let Some(call) = &doc.call {
            contract.call = Some(call.value);
        }
        for written in &doc.clauses {
            let rule = match &written.rule {
                DocRule::Any => Rule::NothingPromised,
                DocRule::On => Rule::nowhere(),
                DocRule::Scope => match scope {
                    Some((globs, _)) => Rule::Restricted {
                        allowed: globs.clone(),
                    },
                    None => {
                        return Err(ContractError::NoScope {
                            at: written.at.clone(),
                            tool: doc.name.value.clone(),
                        });
                    }
                },
                DocRule::Patterns(patterns) => Rule::Restricted {
                    allowed: resolve_all(
                        patterns,
                        lab,
                        graded::spec(written.clause).patterns,
                        &format!("{} of tool {:?}", written.clause, doc.name.value),
                    )?,
                },
            };
            let slot = &mut contract.rules[written.clause as usize];
            slot.rule = rule;
            slot.basis = written.at.to_string();
        }
        Ok(())
    }
}

fn resolve_all(
    patterns: &[Located<String>],
    lab: &LabPaths,
    kind: pattern::PatternKind,
    place: &str,
) -> Result<Vec<String>, ContractError> {
    patterns
        .iter()
        .map(|p| {
            let resolved = substitute(&p.value, &p.at, lab)?;
            pattern::check(kind, &resolved).map_err(|source| ContractError::BadPattern {
                at: p.at.clone(),
                pattern: p.value.clone(),
                place: place.to_owned(),
                source: Box::new(source),
            })?;
            Ok(resolved)
        })
        .collect()
}

/// Replaces `{lab}`, `{home}`, `{tmp}` and `{work}`. Other braces are glob alternations
/// (`{a,b}`); a brace pair around a bare name is taken for a mistyped placeholder.
fn substitute(pattern: &str, at: &Location, lab: &LabPaths) -> Result<String, ContractError> {
    let mut out = String::with_capacity(pattern.len());
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..name_len];
        if !name.is_empty() && after[name_len..].starts_with('}') {
            let value = lab
                .value(name)
                .ok_or_else(|| ContractError::UnknownPlaceholder {
                    at: at.clone(),
                    pattern: pattern.to_owned(),
                    placeholder: name.to_owned(),
                })?;
            out.push_str(value);
            rest = &after[name_len + 1..];
        } else {
            out.push('{');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> Location {
        Location::at("c.toml", "", 0)
    }

    #[test]
    fn the_server_row_resolves_after_the_tools_and_is_never_called() {
        let tools: Vec<ToolDecl> =
            serde_json::from_value(serde_json::json!([{"name": "echo", "inputSchema": {}}]))
                .unwrap();
        let text = "[server]\nname = \"s\"\n[tools.\"(server)\"]\n\"exec\" = [\"*\", \"!curl\"]\n";
        let doc = ContractDocument::parse("c.toml", text).unwrap();
        let contract = doc.resolve(&tools, &LabPaths::at("/lab/")).unwrap();
        let names: Vec<&str> = contract.tools.iter().map(|t| t.tool.as_str()).collect();
        assert_eq!(names, ["echo", "(server)"]);
        let row = &contract.tools[1];
        assert_eq!(row.call, Some(false));
        let exec = row.rules.iter().find(|r| r.clause == Clause::Exec).unwrap();
        assert_eq!(
            exec.rule,
            Rule::Restricted {
                allowed: vec!["*".into(), "!curl".into()]
            }
        );
        // A name that is neither a tool nor the row is still refused.
        let text = "[server]\nname = \"s\"\n[tools.\"(server 2)\"]\n";
        let doc = ContractDocument::parse("c.toml", text).unwrap();
        let error = doc.resolve(&tools, &LabPaths::at("/lab/")).unwrap_err();
        assert!(error.to_string().contains("(server 2)"), "{error}");
    }

    #[test]
    fn placeholders_resolve_and_alternations_stay() {
        let lab = LabPaths::at("/lab/");
        assert_eq!(
            substitute("{home}/.cache/{a,b}/**", &at(), &lab).unwrap(),
            "/lab/home/.cache/{a,b}/**"
        );
        assert_eq!(
            substitute("{lab}{work}", &at(), &lab).unwrap(),
            "/lab/lab/work"
        );
        let err = substitute("{hom}/x", &at(), &lab).unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.toml:1:1: unknown placeholder {hom} in \"{hom}/x\" (expected {lab}, {home}, {tmp} or {work})"
        );
    }
}
