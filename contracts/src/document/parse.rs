//! Text → [`ContractDocument`]: TOML with positions, every key checked.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::value::Value;
use super::{ContractDocument, ContractError, DocClause, DocRule, DocTool, Located, Location};
use crate::clause::Clause;
use crate::contract::ServerIdentity;

type RawTool = BTreeMap<Spanned<String>, Spanned<Value>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    server: ServerIdentity,
    #[serde(default)]
    scope: Option<RawScope>,
    #[serde(default)]
    defaults: Option<RawDefaults>,
    #[serde(default)]
    tools: BTreeMap<Spanned<String>, Spanned<RawTool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScope {
    paths: Spanned<Vec<Spanned<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDefaults {
    #[serde(default)]
    from_annotations: Option<Spanned<bool>>,
    #[serde(default)]
    call_destructive: Option<Spanned<bool>>,
}

/// Positions in one document's text.
struct Text<'a> {
    source: &'a str,
    text: &'a str,
}

impl Text<'_> {
    fn at(&self, span: std::ops::Range<usize>) -> Location {
        Location::at(self.source, self.text, span.start)
    }

    fn located<T>(&self, spanned: Spanned<T>) -> Located<T> {
        let at = self.at(spanned.span());
        Located {
            value: spanned.into_inner(),
            at,
        }
    }
}

impl ContractDocument {
    /// Parses a contract document. `source_name` (usually the file's path) prefixes every
    /// error's position. Unknown sections, keys and clauses are errors, as are values of
    /// the wrong type; tool names and patterns are checked by [`ContractDocument::resolve`].
    pub fn parse(source_name: &str, text: &str) -> Result<ContractDocument, ContractError> {
        let doc = Text {
            source: source_name,
            text,
        };
        let raw: Raw = toml::from_str(text).map_err(|source| ContractError::Syntax {
            at: doc.at(source.span().unwrap_or(0..0)),
            message: source.message().lines().next().unwrap_or("").to_owned(),
            source: Box::new(source),
        })?;
        let mut tools = Vec::new();
        for (name, table) in raw.tools {
            let span = name.span();
            let name = doc.located(name);
            let mut keys: Vec<_> = table.into_inner().into_iter().collect();
            keys.sort_by_key(|(key, _)| key.span().start);
            let mut tool = DocTool {
                name,
                call: None,
                clauses: Vec::new(),
            };
            for (key, value) in keys {
                tool_key(&doc, &mut tool, key, value)?;
            }
            tools.push((span.start, tool));
        }
        tools.sort_by_key(|(start, _)| *start);
        let defaults = raw.defaults.unwrap_or(RawDefaults {
            from_annotations: None,
            call_destructive: None,
        });
        Ok(ContractDocument {
            source: source_name.to_owned(),
            server: raw.server,
            scope: raw.scope.map(|scope| {
                let paths = doc.located(scope.paths);
                Located {
                    value: paths.value.into_iter().map(|p| doc.located(p)).collect(),
                    at: paths.at,
                }
            }),
            from_annotations: defaults.from_annotations.map_or(
                Located {
                    value: true,
                    at: Location::at(source_name, text, 0),
                },
                |f| doc.located(f),
            ),
            call_destructive: defaults.call_destructive.map(|c| doc.located(c)),
            tools: tools.into_iter().map(|(_, tool)| tool).collect(),
        })
    }
}

fn tool_key(
    doc: &Text<'_>,
    tool: &mut DocTool,
    key: Spanned<String>,
    value: Spanned<Value>,
) -> Result<(), ContractError> {
    let key_at = doc.at(key.span());
    let value = doc.located(value);
    let key = key.into_inner();
    let wrong = |value: &Located<Value>| ContractError::WrongType {
        at: value.at.clone(),
        tool: tool.name.value.clone(),
        key: key.clone(),
        found: describe(&value.value),
    };
    if key == "call" {
        let Value::Bool(call) = value.value else {
            return Err(wrong(&value));
        };
        tool.call = Some(Located {
            value: call,
            at: value.at,
        });
        return Ok(());
    }
    let clause: Clause = key.parse().map_err(|_| ContractError::UnknownClause {
        at: key_at.clone(),
        tool: tool.name.value.clone(),
        key: key.clone(),
    })?;
    let on_off = matches!(
        clause,
        Clause::ResultSecrets
            | Clause::ResultInstructions
            | Clause::ManifestStable
            | Clause::Idempotent
    );
    let rule = match &value.value {
        Value::Bool(true) if on_off => DocRule::On,
        Value::Bool(false) if on_off => DocRule::Any,
        Value::Str(any) if !on_off && any == "any" => DocRule::Any,
        Value::Str(scope) if clause == Clause::FsRead && scope == "scope" => DocRule::Scope,
        Value::List(items) if !on_off => {
            let mut patterns = Vec::with_capacity(items.len());
            for item in items {
                let Value::Str(pattern) = item.get_ref() else {
                    return Err(wrong(&doc.located(item.clone())));
                };
                patterns.push(Located {
                    value: pattern.clone(),
                    at: doc.at(item.span()),
                });
            }
            DocRule::Patterns(patterns)
        }
        _ => return Err(wrong(&value)),
    };
    tool.clauses.push(DocClause {
        clause,
        at: key_at,
        rule,
    });
    Ok(())
}

fn describe(value: &Value) -> String {
    match value {
        Value::Str(s) => format!("the string {s:?}"),
        Value::Bool(b) => format!("{b}"),
        other => other.type_name().to_owned(),
    }
}
