//! The static analyser (`vac static`): rules over one server's tools/list that say, from
//! the manifest alone, what a tool may do. Every [`Finding`] names the dynamic clauses it
//! predicts, so [`crate::compare`] can set the manifest's reading against what the tool was
//! seen to do. [`scan`] is pure: a tools/list and the contract's declared [`Scope`] in,
//! findings out, in tool order and then [`Rule`] order.
//!
//! The rules, their rationale and the clauses they predict are `RULES.md`; a test checks
//! that document against [`Rule::ALL`]. Three families:
//! - **declared capability** (S001–S004): what the annotations say the tool may do, with the
//!   MCP defaults for absent hints (readOnly false, destructive true, openWorld true);
//! - **seed 001's decision boundary** (S005–S008): dispatch verbs, open arguments that select
//!   a resource (under a prefix scope), `readOnlyHint` asserted with open arguments, enum
//!   selectors a server may normalise — the declaration cannot bound the effect;
//! - **description risks** (S009–S012): instruction-like text (the detector `result.instructions`
//!   uses, `vac_contracts::detect`), hidden characters, a read-only claim whose words write,
//!   a description that names a secret store.

use serde_json::{Map, Value, json};
use vac_contracts::{Clause, detect};

use crate::rows::{ManifestRow, Rows};
use text::{hidden_characters, kinds_of, name_verb, secret_words, strings, words, write_verbs};

mod text;

/// A rule of the static analyser, with a stable id (`VAC-S001`…).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    MissingAnnotations,
    NotReadOnly,
    Destructive,
    OpenWorld,
    DispatchVerb,
    OpenResourceArgument,
    ReadOnlyOpenArguments,
    NormalisableEnum,
    InstructionText,
    HiddenCharacters,
    WriteVerbMismatch,
    SecretSource,
}

impl Rule {
    /// Every rule, in id order.
    pub const ALL: [Rule; 12] = [
        Rule::MissingAnnotations,
        Rule::NotReadOnly,
        Rule::Destructive,
        Rule::OpenWorld,
        Rule::DispatchVerb,
        Rule::OpenResourceArgument,
        Rule::ReadOnlyOpenArguments,
        Rule::NormalisableEnum,
        Rule::InstructionText,
        Rule::HiddenCharacters,
        Rule::WriteVerbMismatch,
        Rule::SecretSource,
    ];

    /// The stable id: `VAC-S` and the rule's number.
    pub fn id(self) -> &'static str {
        match self {
            Rule::MissingAnnotations => "VAC-S001",
            Rule::NotReadOnly => "VAC-S002",
            Rule::Destructive => "VAC-S003",
            Rule::OpenWorld => "VAC-S004",
            Rule::DispatchVerb => "VAC-S005",
            Rule::OpenResourceArgument => "VAC-S006",
            Rule::ReadOnlyOpenArguments => "VAC-S007",
            Rule::NormalisableEnum => "VAC-S008",
            Rule::InstructionText => "VAC-S009",
            Rule::HiddenCharacters => "VAC-S010",
            Rule::WriteVerbMismatch => "VAC-S011",
            Rule::SecretSource => "VAC-S012",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Rule::MissingAnnotations => "annotations.missing",
            Rule::NotReadOnly => "annotations.not_read_only",
            Rule::Destructive => "annotations.destructive",
            Rule::OpenWorld => "annotations.open_world",
            Rule::DispatchVerb => "description.dispatch_verb",
            Rule::OpenResourceArgument => "argument.open_resource",
            Rule::ReadOnlyOpenArguments => "annotations.read_only_open_arguments",
            Rule::NormalisableEnum => "argument.normalisable_enum",
            Rule::InstructionText => "description.instructions",
            Rule::HiddenCharacters => "description.hidden_characters",
            Rule::WriteVerbMismatch => "description.write_verb_mismatch",
            Rule::SecretSource => "description.secret_source",
        }
    }

    /// The rule by id or name.
    pub fn parse(text: &str) -> Option<Rule> {
        Rule::ALL
            .into_iter()
            .find(|r| r.id().eq_ignore_ascii_case(text) || r.name() == text)
    }

    /// Every clause a finding of the rule can predict (one finding may predict fewer:
    /// a dispatch verb or an argument predicts by its kind).
    pub fn classes(self) -> &'static [Clause] {
        use Clause::*;
        match self {
            Rule::MissingAnnotations => &[FsWrite, FsDelete, Exec, NetEgress],
            Rule::NotReadOnly => &[FsWrite, Exec],
            Rule::Destructive => &[FsDelete],
            Rule::OpenWorld => &[NetEgress],
            Rule::DispatchVerb | Rule::OpenResourceArgument => &[FsRead, Exec, NetEgress],
            Rule::ReadOnlyOpenArguments => &[FsRead],
            Rule::NormalisableEnum => &[],
            Rule::InstructionText | Rule::HiddenCharacters => &[ResultInstructions],
            Rule::WriteVerbMismatch => &[FsWrite],
            Rule::SecretSource => &[ResultSecrets],
        }
    }

    /// The default severity: name and GitHub `security-severity`.
    pub fn severity(self) -> (&'static str, &'static str) {
        match self {
            Rule::MissingAnnotations => ("medium", "5.0"),
            Rule::NotReadOnly => ("low", "3.0"),
            Rule::Destructive => ("medium", "5.5"),
            Rule::OpenWorld => ("low", "3.5"),
            Rule::DispatchVerb => ("medium", "5.0"),
            Rule::OpenResourceArgument => ("medium", "5.0"),
            Rule::ReadOnlyOpenArguments => ("medium", "4.5"),
            Rule::NormalisableEnum => ("low", "2.0"),
            Rule::InstructionText => ("high", "8.0"),
            Rule::HiddenCharacters => ("high", "7.5"),
            Rule::WriteVerbMismatch => ("medium", "6.0"),
            Rule::SecretSource => ("medium", "5.0"),
        }
    }

    /// What a finding of the rule says, in one line (SARIF `shortDescription`).
    pub fn summary(self) -> &'static str {
        match self {
            Rule::MissingAnnotations => {
                "The tool has no annotations: by the MCP defaults it may write, destroy, run programs and reach any host."
            }
            Rule::NotReadOnly => {
                "readOnlyHint is false or absent: the tool may change its environment."
            }
            Rule::Destructive => {
                "destructiveHint is true or absent on a tool that is not read-only: it may destroy data."
            }
            Rule::OpenWorld => {
                "openWorldHint is true or absent: the tool may reach hosts outside the machine."
            }
            Rule::DispatchVerb => {
                "The description uses a dispatch verb: the tool selects a capability internally."
            }
            Rule::OpenResourceArgument => {
                "An open argument (no closed enum) selects a resource: path, URL, host, program or datastore."
            }
            Rule::ReadOnlyOpenArguments => {
                "readOnlyHint is asserted on a tool with open arguments: a claim, not a bound on what it reads."
            }
            Rule::NormalisableEnum => {
                "An enum selects a resource: a server that normalises or falls back reaches one no consent screen shows."
            }
            Rule::InstructionText => {
                "The manifest's text reads as instructions aimed at the model."
            }
            Rule::HiddenCharacters => {
                "The manifest's text hides characters: Unicode tags, zero-width or bidi controls."
            }
            Rule::WriteVerbMismatch => {
                "readOnlyHint is true, but the tool's name or description says it writes."
            }
            Rule::SecretSource => {
                "The name or description names a secret store: credentials, keys, passwords or the environment."
            }
        }
    }
}

/// The scope a contract declares (`[scope] paths`): none, an exact list of paths, or a
/// prefix (any glob with a wildcard or alternation) that relies on the server's resolver.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Scope {
    #[default]
    None,
    Exact(Vec<String>),
    Prefix(Vec<String>),
}

impl Scope {
    /// The scope of a contract document's `[scope] paths`.
    pub fn of_paths(paths: &[&str]) -> Scope {
        let owned: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
        if paths.iter().any(|p| p.contains(['*', '?', '[', '{'])) {
            // `{work}` and the other placeholders name one directory: only an alternation
            // (`{a,b}`) or a wildcard makes the scope a prefix.
            let wild = paths.iter().any(|p| {
                p.contains(['*', '?', '['])
                    || p.split('{').skip(1).any(|rest| {
                        rest.split('}')
                            .next()
                            .is_some_and(|inner| inner.contains(','))
                    })
            });
            if wild {
                return Scope::Prefix(owned);
            }
        }
        if paths.is_empty() {
            Scope::None
        } else {
            Scope::Exact(owned)
        }
    }

    /// The scope declared by a contract document, if the text parses.
    pub fn of_contract(name: &str, text: &str) -> Result<Scope, vac_contracts::ContractError> {
        let document = vac_contracts::ContractDocument::parse(name, text)?;
        Ok(document
            .scope()
            .map_or(Scope::None, |paths| Scope::of_paths(&paths)))
    }

    fn to_json(&self) -> Value {
        match self {
            Scope::None => Value::Null,
            Scope::Exact(paths) => json!({"exact": paths}),
            Scope::Prefix(paths) => json!({"prefix": paths}),
        }
    }
}

/// One rule that fired on one tool.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub server: String,
    pub tool: String,
    pub rule: Rule,
    /// `low`, `medium` or `high`, and GitHub's `security-severity`.
    pub severity: &'static str,
    pub score: &'static str,
    pub message: String,
    /// The clauses the finding predicts the tool exercises, in clause order.
    pub predicts: Vec<Clause>,
    /// What in the manifest raised it: JSON pointers into the tool, the words matched.
    pub evidence: Value,
}

impl Finding {
    /// The stable JSON shape of `vac static --json`.
    pub fn to_json(&self) -> Value {
        json!({
            "server": self.server,
            "tool": self.tool,
            "rule": self.rule.id(),
            "name": self.rule.name(),
            "severity": self.severity,
            "message": self.message,
            "predicts": self.predicts.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
            "evidence": self.evidence,
        })
    }
}

/// vac's findings on every server of `rows`, in map order: for each server its first
/// probe's first initial tools/list (the control run's), read under the scope its contract
/// declares. A contract that does not parse (or a derived one) declares no scope.
pub fn scan_rows(rows: &Rows) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for probe in &rows.probes {
        if seen.contains(&probe.server.as_str()) {
            continue;
        }
        seen.push(&probe.server);
        let manifests: Vec<&ManifestRow> = rows
            .manifests
            .iter()
            .filter(|m| &*m.probe == probe.dir.as_str() && m.phase == "initial")
            .collect();
        let Some(first) = manifests.iter().map(|m| m.seq).min() else {
            continue;
        };
        let tools: Vec<Value> = manifests
            .iter()
            .filter(|m| m.seq == first)
            .map(|m| m.entry.clone())
            .collect();
        let scope = match (&probe.contract_name, &probe.contract_text) {
            (Some(name), Some(text)) => Scope::of_contract(name, text).unwrap_or_default(),
            _ => Scope::None,
        };
        out.extend(scan(&probe.server, &tools, &scope));
    }
    out
}

/// A tools/list as a file may hold it: the tools array itself, `{"tools": […]}`, or a
/// JSON-RPC response `{"result": {"tools": […]}}`. Every entry must be an object with a
/// string `name`; the error names the first that is not.
pub fn tools_of(document: &Value) -> Result<&[Value], NotToolsList> {
    let tools = match document {
        Value::Array(items) => items,
        Value::Object(members) => match (members.get("tools"), members.get("result")) {
            (Some(Value::Array(items)), _) => items,
            (_, Some(Value::Object(result))) => match result.get("tools") {
                Some(Value::Array(items)) => items,
                _ => return Err(NotToolsList::ResultWithoutTools),
            },
            _ => return Err(NotToolsList::NoTools),
        },
        _ => return Err(NotToolsList::NotArrayOrObject),
    };
    for (index, tool) in tools.iter().enumerate() {
        if !tool.get("name").is_some_and(Value::is_string) {
            return Err(NotToolsList::Unnamed { index });
        }
    }
    Ok(tools)
}

/// Why a document is not a tools/list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotToolsList {
    #[error("`result` has no `tools` array")]
    ResultWithoutTools,
    #[error("no `tools` array (expected a tools/list result)")]
    NoTools,
    #[error("not a tools/list: expected an array or an object")]
    NotArrayOrObject,
    #[error("tools[{index}] has no string `name`")]
    Unnamed { index: usize },
}

/// The findings of every rule on every tool of `tools` (entries without a string name
/// are passed over: [`tools_of`] is the check that rejects them).
pub fn scan(server: &str, tools: &[Value], scope: &Scope) -> Vec<Finding> {
    let mut out = Vec::new();
    for tool in tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let mut found = Found {
            server,
            tool: name,
            out: &mut out,
        };
        check_tool(&mut found, tool, scope);
    }
    out
}

struct Found<'a> {
    server: &'a str,
    tool: &'a str,
    out: &'a mut Vec<Finding>,
}

impl Found<'_> {
    fn add(&mut self, rule: Rule, message: String, predicts: &[Clause], evidence: Value) {
        self.add_with(rule, rule.severity(), message, predicts, evidence);
    }

    fn add_with(
        &mut self,
        rule: Rule,
        (severity, score): (&'static str, &'static str),
        message: String,
        predicts: &[Clause],
        evidence: Value,
    ) {
        let predicts = Clause::ALL
            .into_iter()
            .filter(|c| predicts.contains(c))
            .collect();
        self.out.push(Finding {
            server: self.server.to_owned(),
            tool: self.tool.to_owned(),
            rule,
            severity,
            score,
            message,
            predicts,
            evidence,
        });
    }
}

/// A hint as the tool declares it: `Some(bool)`, or `None` when absent or not a boolean
/// (a malformed hint promises nothing).
fn hint(annotations: Option<&Map<String, Value>>, name: &str) -> Option<bool> {
    annotations?.get(name)?.as_bool()
}

const HINTS: [&str; 4] = [
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

fn check_tool(found: &mut Found<'_>, tool: &Value, scope: &Scope) {
    let annotations = tool.get("annotations").and_then(Value::as_object);
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    let read_only = hint(annotations, "readOnlyHint");
    annotation_rules(found, tool, annotations);
    let said = words(description);
    dispatch_rule(found, description, &said);
    let arguments = arguments(tool.get("inputSchema"));
    argument_rules(found, &arguments, scope, read_only);
    text_rules(found, tool);
    if read_only == Some(true) {
        write_verb_rule(found, tool, description);
    }
    secret_rule(found, tool, description, &said);
}

/// What the annotations leave open, under the MCP defaults.
fn annotation_rules(
    found: &mut Found<'_>,
    tool: &Value,
    annotations: Option<&serde_json::Map<String, Value>>,
) {
    use Clause::*;
    let read_only = hint(annotations, "readOnlyHint");
    let destructive = hint(annotations, "destructiveHint");
    let open_world = hint(annotations, "openWorldHint");

    if HINTS.iter().all(|h| hint(annotations, h).is_none()) {
        found.add(
            Rule::MissingAnnotations,
            "no annotations: by the MCP defaults the tool may write, destroy, run programs and reach any host".into(),
            Rule::MissingAnnotations.classes(),
            json!({"pointer": "/annotations", "annotations": tool.get("annotations")}),
        );
    }
    if read_only != Some(true) {
        found.add(
            Rule::NotReadOnly,
            match read_only {
                Some(_) => "readOnlyHint: false".into(),
                None => "readOnlyHint absent (the MCP default is false)".into(),
            },
            &[FsWrite, Exec],
            json!({"pointer": "/annotations/readOnlyHint", "value": read_only}),
        );
        if destructive != Some(false) {
            found.add(
                Rule::Destructive,
                match destructive {
                    Some(_) => "destructiveHint: true".into(),
                    None => "destructiveHint absent on a tool that is not read-only (the MCP default is true)".into(),
                },
                &[FsDelete],
                json!({"pointer": "/annotations/destructiveHint", "value": destructive}),
            );
        }
    }
    if open_world != Some(false) {
        found.add(
            Rule::OpenWorld,
            match open_world {
                Some(_) => "openWorldHint: true".into(),
                None => "openWorldHint absent (the MCP default is true)".into(),
            },
            &[NetEgress],
            json!({"pointer": "/annotations/openWorldHint", "value": open_world}),
        );
    }
}

/// Seed 001's dispatch verbs in the description: a capability selected internally.
fn dispatch_rule(found: &mut Found<'_>, description: &str, said: &[String]) {
    let verbs: Vec<(&str, Clause)> = DISPATCH_VERBS
        .iter()
        .filter(|(verb, _)| said.iter().any(|w| w == verb))
        .copied()
        .collect();
    if !verbs.is_empty() {
        let names: Vec<&str> = verbs.iter().map(|(v, _)| *v).collect();
        let classes: Vec<Clause> = verbs.iter().map(|(_, c)| *c).collect();
        found.add(
            Rule::DispatchVerb,
            format!(
                "the description says the tool {}: it selects a capability internally",
                names.join(", ")
            ),
            &classes,
            json!({"pointer": "/description", "verbs": names, "excerpt": detect::excerpt(description, 160)}),
        );
    }
}

/// Open arguments that select a resource, read-only claims over them, selector enums.
fn argument_rules(
    found: &mut Found<'_>,
    arguments: &[Argument],
    scope: &Scope,
    read_only: Option<bool>,
) {
    use Clause::*;
    for argument in arguments.iter().filter(|a| a.open) {
        let mut kinds: Vec<(Clause, &str)> = argument.kinds.clone();
        if matches!(scope, Scope::Exact(_)) {
            // An exact allowlist of paths bounds what a path argument reaches (seed 001).
            kinds.retain(|(class, _)| *class != FsRead);
        }
        if kinds.is_empty() {
            continue;
        }
        let classes: Vec<Clause> = kinds.iter().map(|(c, _)| *c).collect();
        let selects: Vec<&str> = kinds.iter().map(|(_, w)| *w).collect();
        let nouns: Vec<&str> = classes.iter().map(|c| resource_noun(*c)).collect();
        let prefix = match scope {
            Scope::Prefix(paths) if classes.contains(&FsRead) => Some(paths),
            _ => None,
        };
        let message = match prefix {
            Some(paths) => format!(
                "argument `{}` is an open {} that selects a {} under the prefix scope {}: containment rests on the server's resolver",
                argument.name,
                argument.types,
                nouns.join(" and a "),
                paths.join(", ")
            ),
            None => format!(
                "argument `{}` is an open {} that selects a {}",
                argument.name,
                argument.types,
                nouns.join(" and a ")
            ),
        };
        let severity = match prefix {
            Some(_) => ("high", "7.0"),
            None => Rule::OpenResourceArgument.severity(),
        };
        found.add_with(
            Rule::OpenResourceArgument,
            severity,
            message,
            &classes,
            json!({"pointer": argument.pointer, "argument": argument.name, "selects": selects, "scope": scope.to_json()}),
        );
    }
    let open: Vec<&str> = arguments
        .iter()
        .filter(|a| a.open)
        .map(|a| a.name.as_str())
        .collect();
    if read_only == Some(true) && !open.is_empty() {
        found.add(
            Rule::ReadOnlyOpenArguments,
            format!(
                "readOnlyHint: true with open arguments {}: the claim does not bound what they select",
                open.iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            &[FsRead],
            json!({"pointer": "/annotations/readOnlyHint", "arguments": open}),
        );
    }
    for argument in arguments {
        let Some(values) = &argument.selector_enum else {
            continue;
        };
        found.add(
            Rule::NormalisableEnum,
            format!(
                "argument `{}` selects a {} from an enum of {} value{}; a server that normalises or falls back on other values reaches one the manifest does not show",
                argument.name,
                argument.selector_word,
                values.len(),
                if values.len() == 1 { "" } else { "s" }
            ),
            &[],
            json!({"pointer": argument.pointer, "argument": argument.name, "enum": values}),
        );
    }
}

/// Text the model would read as instructions, and characters it cannot see.
fn text_rules(found: &mut Found<'_>, tool: &Value) {
    use Clause::*;
    for hit in detect::instructions_in_result(tool) {
        found.add(
            Rule::InstructionText,
            format!(
                "{} reads as instructions to the model (score {}, threshold {})",
                hit.pointer,
                hit.score,
                detect::THRESHOLD
            ),
            &[ResultInstructions],
            json!({
                "pointer": hit.pointer,
                "signals": hit.hits.iter().map(|h| json!({"signal": h.signal.as_str(), "matched": h.matched})).collect::<Vec<_>>(),
                "excerpt": hit.excerpt,
                "hidden": hit.hidden,
            }),
        );
    }
    for (pointer, text) in strings(tool) {
        let hidden = hidden_characters(text);
        if hidden.is_empty() {
            continue;
        }
        let tags = detect::tag_text(text);
        found.add(
            Rule::HiddenCharacters,
            format!(
                "{pointer} hides {} character{} ({})",
                hidden.len(),
                if hidden.len() == 1 { "" } else { "s" },
                kinds_of(&hidden).join(", ")
            ),
            &[ResultInstructions],
            json!({
                "pointer": pointer,
                "code_points": hidden.iter().take(16).map(|(c, _)| format!("U+{:04X}", u32::from(*c))).collect::<Vec<_>>(),
                "tag_text": (!tags.is_empty()).then_some(tags),
            }),
        );
    }
}

/// A read-only tool whose name or description says it writes.
fn write_verb_rule(found: &mut Found<'_>, tool: &Value, description: &str) {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
    let mut said: Vec<(&str, String)> = Vec::new();
    let named = name_verb(name).map(|verb| ("/name", verb));
    for (pointer, verb) in named.into_iter().chain(
        write_verbs(description)
            .into_iter()
            .map(|verb| ("/description", verb)),
    ) {
        if !said.iter().any(|(_, v)| *v == verb) {
            said.push((pointer, verb));
        }
    }
    if !said.is_empty() {
        found.add(
                Rule::WriteVerbMismatch,
                format!(
                    "readOnlyHint: true, but its name or description says {}",
                    said.iter()
                        .map(|(_, v)| v.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                &[Clause::FsWrite],
                json!({"pointer": said[0].0, "verbs": said.iter().map(|(_, v)| v).collect::<Vec<_>>(), "excerpt": detect::excerpt(description, 160)}),
            );
    }
}

/// A name or description that names a secret store.
fn secret_rule(found: &mut Found<'_>, tool: &Value, description: &str, said: &[String]) {
    let mut named = words(tool.get("name").and_then(Value::as_str).unwrap_or(""));
    named.extend(said.iter().cloned());
    let secrets = secret_words(&named);
    if !secrets.is_empty() {
        found.add(
            Rule::SecretSource,
            format!(
                "the name or description names a secret store ({}): what the tool returns may carry it",
                secrets.join(", ")
            ),
            &[Clause::ResultSecrets],
            json!({"words": secrets, "excerpt": detect::excerpt(description, 160)}),
        );
    }
}

/// Seed 001's dispatch verbs, and the clause each suggests.
const DISPATCH_VERBS: [(&str, Clause); 7] = [
    ("runs", Clause::Exec),
    ("executes", Clause::Exec),
    ("dispatches", Clause::Exec),
    ("fetches", Clause::NetEgress),
    ("forwards", Clause::NetEgress),
    ("loads", Clause::FsRead),
    ("resolves", Clause::FsRead),
];

/// Words that make an argument select a resource, by the clause that resource is.
const RESOURCE_WORDS: [(Clause, &[&str]); 3] = [
    (
        Clause::FsRead,
        &[
            "path",
            "paths",
            "file",
            "files",
            "filename",
            "filepath",
            "dir",
            "dirs",
            "directory",
            "directories",
            "folder",
            "root",
            "cwd",
            "glob",
            "repo",
            "repository",
        ],
    ),
    (
        Clause::NetEgress,
        &[
            "url",
            "urls",
            "uri",
            "uris",
            "link",
            "href",
            "host",
            "hostname",
            "hosts",
            "domain",
            "endpoint",
            "origin",
            "website",
            "webhook",
            "ip",
            "database",
            "db",
            "datasource",
            "dsn",
            "connection",
            "bucket",
        ],
    ),
    (
        Clause::Exec,
        &[
            "command",
            "commands",
            "cmd",
            "script",
            "program",
            "shell",
            "executable",
            "template",
            "tool",
            "expression",
        ],
    ),
];

/// What a resource of the clause is called in a finding's message.
fn resource_noun(class: Clause) -> &'static str {
    match class {
        Clause::FsRead => "path",
        Clause::NetEgress => "URL, host or datastore",
        Clause::Exec => "program or command",
        _ => "resource",
    }
}

/// Words beyond [`RESOURCE_WORDS`] that make an enum argument a selector (S008).
const SELECTOR_WORDS: [&str; 10] = [
    "source",
    "target",
    "environment",
    "env",
    "region",
    "profile",
    "server",
    "service",
    "backend",
    "provider",
];

/// One top-level argument of a tool's `inputSchema`.
#[derive(Debug)]
struct Argument {
    name: String,
    pointer: String,
    /// What JSON type(s) it takes, as a reader would name them.
    types: String,
    /// It takes a string, array or object without a closed set of values.
    open: bool,
    /// The resources its name (or its description's first words) says it selects.
    kinds: Vec<(Clause, &'static str)>,
    /// When a closed string enum selects a resource: its values, and the word.
    selector_enum: Option<Vec<Value>>,
    selector_word: &'static str,
}

fn arguments(schema: Option<&Value>) -> Vec<Argument> {
    let Some(properties) = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, spec)| {
            let mut said = words(name);
            let description = spec
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            // The description's first words name what the value is ("Path of the note",
            // "URL to fetch"); later ones say what is done with it ("Content to write to
            // the file" is not a path).
            said.extend(words(description).into_iter().take(4));
            let mut kinds = Vec::new();
            for (class, list) in RESOURCE_WORDS {
                if let Some(word) = list.iter().find(|w| said.iter().any(|s| s == *w)) {
                    kinds.push((class, *word));
                }
            }
            let selector_word = kinds.first().map(|(_, w)| *w).or_else(|| {
                SELECTOR_WORDS
                    .iter()
                    .find(|w| said.iter().any(|s| s == *w))
                    .copied()
            });
            let values = spec.get("enum").and_then(Value::as_array);
            let selector_enum = match (values, selector_word) {
                (Some(values), Some(_)) if values.iter().any(Value::is_string) => {
                    Some(values.clone())
                }
                _ => None,
            };
            Argument {
                pointer: format!(
                    "/inputSchema/properties/{}",
                    name.replace('~', "~0").replace('/', "~1")
                ),
                name: name.clone(),
                types: type_names(spec),
                open: open(spec, 0),
                kinds,
                selector_enum,
                selector_word: selector_word.unwrap_or(""),
            }
        })
        .collect()
}

fn type_names(spec: &Value) -> String {
    match spec.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "value".into(),
    }
}

/// Whether a schema admits an open set of string, array or object values: no `enum` or
/// `const`, and (for arrays and objects) items or members that are open. Numbers,
/// integers, booleans and null are closed (bounded numerics, in seed 001's terms).
fn open(spec: &Value, depth: usize) -> bool {
    if depth > 8 {
        return true;
    }
    let Some(object) = spec.as_object() else {
        // `true` (anything) is open; `false` admits nothing.
        return spec.as_bool().unwrap_or(false);
    };
    if object.contains_key("enum") || object.contains_key("const") {
        return false;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = object.get(key).and_then(Value::as_array) {
            return options.iter().any(|o| open(o, depth + 1));
        }
    }
    let types: Vec<&str> = match object.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        // No type (or a `$ref` this reader does not follow): any value, so open.
        _ => return true,
    };
    types.iter().any(|t| match *t {
        "string" => true,
        "array" => object
            .get("items")
            .is_none_or(|items| open(items, depth + 1)),
        "object" => {
            object.get("additionalProperties") != Some(&Value::Bool(false))
                || object
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|members| members.values().any(|m| open(m, depth + 1)))
        }
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_identifiers_and_keep_them_whole() {
        assert_eq!(words("filePath"), ["file", "path", "filepath"]);
        assert_eq!(words("file_path"), ["file", "path", "filepath"]);
        assert_eq!(words("Path of the note."), ["path", "of", "the", "note"]);
    }

    #[test]
    fn negated_write_verbs_are_not_writes() {
        assert_eq!(
            write_verbs("Read a file without modifying it"),
            Vec::<String>::new()
        );
        assert_eq!(
            write_verbs("Reads a file and appends a log line"),
            ["appends"]
        );
        assert_eq!(
            write_verbs("does not write, never deletes"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn scopes_are_prefix_only_with_wildcards_or_alternations() {
        assert!(matches!(
            Scope::of_paths(&["{work}/notes/**"]),
            Scope::Prefix(_)
        ));
        assert!(matches!(
            Scope::of_paths(&["{work}/{a,b}.md"]),
            Scope::Prefix(_)
        ));
        assert!(matches!(
            Scope::of_paths(&["{work}/notes/a.md"]),
            Scope::Exact(_)
        ));
        assert_eq!(Scope::of_paths(&[]), Scope::None);
    }

    #[test]
    fn rule_ids_and_names_are_unique_and_parse_back() {
        for rule in Rule::ALL {
            assert_eq!(Rule::parse(rule.id()), Some(rule));
            assert_eq!(Rule::parse(rule.name()), Some(rule));
        }
        let mut ids: Vec<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
        ids.dedup();
        assert_eq!(ids.len(), Rule::ALL.len());
    }
}
