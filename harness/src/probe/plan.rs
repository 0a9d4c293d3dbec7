//! Argument synthesis: from a tool's `inputSchema` to the calls a probe makes (SPEC §3.5).
//!
//! Path-like fields get the planted note (relative and absolute) and a never-existing nonce
//! path; enums each value (bounded), and so do the values a field's description lists
//! ("one of: a, b"); strings a canary token; numbers and the rest a minimal
//! valid value. One call varies one field at a time from a base that uses each field's first
//! candidate, so every candidate is tried and the call count stays small. [`plan_witness`] adds
//! the protocol witness's three reads of nonce paths (SPEC §3.5), outside the budget.

// A field name's words, lowercase: `repoURL` → `repo url`, `time_zone` → `time zone`.
use std::path::Path;
use vac_contracts::name_words as words;

use super::vocab::{KitFile, PlannedCall, Plants, Purpose};
use serde_json::{Map, Value};

/// What a probe will do, computed before its first tool call and recorded right after the
/// contract (pre-registration of the plan): the target, the lab as grading needs it, and
/// every run with its calls and their purpose. Grading reads the lab and the tools not
/// called from here, never from the live probe.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ProbePlan {
    pub(crate) target: String,
    /// `per-tool` (each restricted tool in a sandbox of its own) or `adaptive` (a shared
    /// run first, then a sandbox of its own for each tool it leaves in doubt).
    pub(crate) isolation: String,
    /// blake3 of the pre-registered contract.
    pub(crate) contract: String,
    pub(crate) lab: super::vocab::LabRecord,
    pub(crate) runs: Vec<PlannedRun>,
    /// Tools the plan does not call, and why.
    pub(crate) not_called: Vec<(String, vac_contracts::SkipReason)>,
    /// tools/list entries that are not valid tool declarations.
    pub(crate) malformed: Vec<MalformedTool>,
    /// The revision of the rules the probe derives and grades under
    /// ([`vac_contracts::RULES`]); 0 in plans recorded before revisions were.
    #[serde(default)]
    pub(crate) rules: u32,
    /// Tools whose words confine them to a place, with the phrase
    /// ([`vac_contracts::confined_to`]): their path fields get the escape probes, as under a
    /// declared scope.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) confined: Vec<(String, String)>,
}

/// One run of the plan.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct PlannedRun {
    pub(crate) role: super::vocab::Role,
    pub(crate) tool: Option<String>,
    /// The index the run's first call gets; indices are unique across the probe.
    pub(crate) first_index: usize,
    pub(crate) calls: Vec<PlannedCall>,
    /// What the run is for (absent in plans made before adaptive isolation: `own`).
    #[serde(default, skip_serializing_if = "Scope::is_own")]
    pub(crate) scope: Scope,
    /// A shared run's blocks in call order: each tool's calls (its setups first) as its own
    /// run would make them. The run settles after each block.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) blocks: Vec<Block>,
}

/// What a subject run is for (SPEC §3.4 isolation modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Scope {
    /// One tool in a sandbox of its own, always made.
    #[default]
    Own,
    /// Adaptive isolation's first run: every tool's calls, block after block.
    Shared,
    /// One tool in a sandbox of its own, made only when the shared run leaves that tool's
    /// effects in doubt.
    IfDoubted,
}

impl Scope {
    fn is_own(&self) -> bool {
        *self == Scope::Own
    }
}

/// One tool's calls within a shared run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Block {
    pub(crate) tool: String,
    /// How many of the run's calls, from where the previous block ended.
    pub(crate) calls: usize,
}

/// How a probe isolates its tools from each other (SPEC §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// One run with every tool's calls, then a sandbox of its own for each tool whose
    /// effects that run cannot attribute without doubt.
    #[default]
    Adaptive,
    /// Each tool in a sandbox of its own.
    PerTool,
    /// Each call in a sandbox of its own (with the setups it needs; a repeat with its
    /// original, the protocol witness's three reads together): exact attribution.
    PerCall,
}

impl Isolation {
    /// The name in plans, configurations and campaign files.
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::Adaptive => "adaptive",
            Isolation::PerTool => "per-tool",
            Isolation::PerCall => "per-call",
        }
    }

    /// The mode a name gives, if it names one.
    pub fn parse(name: &str) -> Option<Isolation> {
        [Isolation::Adaptive, Isolation::PerTool, Isolation::PerCall]
            .into_iter()
            .find(|i| i.as_str() == name)
    }
}

/// An `--isolation` that names no mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown isolation {0:?} (expected \"adaptive\", \"per-tool\" or \"per-call\")")]
pub struct UnknownIsolation(pub String);

/// A tools/list entry that does not deserialise as a tool: kept, never silently dropped.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct MalformedTool {
    /// Its position in the manifest.
    pub(crate) index: usize,
    /// Its `name` when it has a string one, else `#<index>`.
    pub(crate) name: String,
    pub(crate) error: String,
    pub(crate) raw: Value,
}

const PATH_NAMES: [&str; 10] = [
    "path",
    "file",
    "filename",
    "filepath",
    "file_path",
    "dir",
    "directory",
    "folder",
    "root",
    "location",
];
const MAX_ENUM_VALUES: usize = 4;
const MAX_REF_DEPTH: usize = 8;

/// The calls for one tool, at most `max_calls`. With `repeat`, or when there would be only
/// one call and the budget allows two, the second call repeats the first with identical
/// arguments, straight after it (the `idempotent` clause's probe: no other call may change
/// the state between the two); with `repeat` (the contract restricts `idempotent`) the
/// repeat is [`PlannedCall::judged`].
pub fn plan_tool(
    tool: &str,
    schema: &Value,
    plants: &Plants,
    max_calls: usize,
    repeat: bool,
) -> Vec<PlannedCall> {
    let fields = fields(tool, schema, plants);
    let base: Map<String, Value> = fields
        .iter()
        .map(|(n, c, _)| (n.clone(), c[0].clone()))
        .collect();
    let call = |arguments| PlannedCall {
        tool: tool.to_string(),
        arguments,
        repeat_of: None,
        judged: false,
        purpose: Purpose::Normal,
    };
    let mut calls = vec![call(base.clone())];
    for (name, values, _) in &fields {
        for value in values.iter().skip(1) {
            let mut arguments = base.clone();
            arguments.insert(name.clone(), value.clone());
            calls.push(call(arguments));
        }
    }
    // Every tool is called at least twice when its budget allows: a behaviour that waits
    // for a second call is seen, and the repeat of the first call is what `idempotent`
    // grades.
    if repeat || (calls.len() < 2 && max_calls >= 2) {
        calls.truncate(max_calls.max(2) - 1);
        let repeat = PlannedCall {
            repeat_of: Some(0),
            judged: repeat,
            ..calls[0].clone()
        };
        calls.insert(1, repeat);
    } else {
        calls.truncate(max_calls.max(1));
    }
    calls
}

/// Gives each hinted field its value in every call (`--arg TOOL.FIELD=VALUE`), then drops
/// the calls that became copies of an earlier one (they varied a hinted field); a repeat
/// keeps repeating its original, which stays first.
pub(crate) fn apply_hints(calls: &mut Vec<PlannedCall>, hints: &[(String, Value)]) {
    if hints.is_empty() {
        return;
    }
    for call in calls.iter_mut() {
        for (field, value) in hints {
            call.arguments.insert(field.clone(), value.clone());
        }
    }
    let mut kept: Vec<PlannedCall> = Vec::with_capacity(calls.len());
    for call in calls.drain(..) {
        let copy = call.repeat_of.is_none()
            && kept
                .iter()
                .any(|k| k.repeat_of.is_none() && k.arguments == call.arguments);
        if !copy {
            kept.push(call);
        }
    }
    *calls = kept;
}

/// The protocol witness's calls for one tool (SPEC §3.5), empty when no field takes a path:
/// the negative control reads `paths.0` once, the flip reads `paths.1` twice with identical
/// arguments. Other fields keep the plan's base values. These calls are outside the
/// per-tool budget: the witness needs all three or none.
pub fn plan_witness(
    tool: &str,
    schema: &Value,
    plants: &Plants,
    paths: (String, String),
) -> Vec<PlannedCall> {
    let fields = fields(tool, schema, plants);
    let Some((field, values, _)) = fields.iter().find(|(_, _, path_like)| *path_like) else {
        return Vec::new();
    };
    let base: Map<String, Value> = fields
        .iter()
        .map(|(n, c, _)| (n.clone(), c[0].clone()))
        .collect();
    let with = |path: &str, purpose| {
        let path = Value::String(path.to_string());
        let value = match &values[0] {
            Value::Array(_) => Value::Array(vec![path]),
            _ => path,
        };
        let mut arguments = base.clone();
        arguments.insert(field.clone(), value);
        PlannedCall {
            tool: tool.to_string(),
            arguments,
            repeat_of: None,
            judged: false,
            purpose,
        }
    };
    vec![
        with(&paths.0, Purpose::NegativeControl),
        with(&paths.1, Purpose::FlipFirst),
        with(&paths.1, Purpose::FlipSecond),
    ]
}

/// The fields a call sets, each with its candidates (first is the base value) and whether
/// it takes a path: the required ones and every path-like one.
fn fields(tool: &str, schema: &Value, plants: &Plants) -> Vec<(String, Vec<Value>, bool)> {
    let properties = resolve(schema, schema, 0)
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = resolve(schema, schema, 0)
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // A tool that takes a repository gets the planted one, and paths and revisions in it.
    let repository = plants.repository.as_ref().filter(|_| {
        properties
            .iter()
            .any(|(name, property)| is_repository(name, resolve(schema, property, 0)))
    });
    let root = resolve(schema, schema, 0);
    let path_fields: Vec<(&String, &Value)> = properties
        .iter()
        .map(|(name, property)| (name, resolve(schema, property, 0)))
        .filter(|(name, property)| is_path_like(name, property))
        .collect();
    let claimed = claimed_kinds(&path_fields, plants);
    // The kit file the first path field was given: what its other fields name inside it.
    let mut opened: Option<&KitFile> = None;
    let mut fields = Vec::new();
    for (name, property) in &properties {
        let property = resolve(schema, property, 0);
        let path_like = is_path_like(name, property);
        if !required.contains(&name.as_str()) && !path_like {
            continue;
        }
        if let Some((relative, absolute)) = repository {
            let inside = |path: &str| Value::String(path.to_string());
            let planted = if is_repository(name, property) {
                vec![inside(absolute), inside(relative)]
            } else if path_like {
                let file = format!("{absolute}/{}", super::plants::REPOSITORY_FILE);
                vec![inside(super::plants::REPOSITORY_FILE), inside(&file)]
            } else {
                revision_for(tool, name).into_iter().map(inside).collect()
            };
            if !planted.is_empty() {
                let array = property.get("type").is_some_and(|t| t == "array");
                let others = candidates(schema, name, property, path_like, plants);
                let planted = planted
                    .into_iter()
                    .map(|v| if array { Value::Array(vec![v]) } else { v });
                fields.push((name.clone(), planted.chain(others).collect(), path_like));
                continue;
            }
        }
        if let Some((relative, absolute, file)) = path_like
            .then(|| kit_file(tool, (name, property), root, &claimed, plants))
            .flatten()
        {
            let others = candidates(schema, name, property, path_like, plants);
            let array = property.get("type").is_some_and(|t| t == "array");
            let (relative, absolute) = match makes_file(tool, name) {
                true => (made_beside(&relative), made_beside(&absolute)),
                false => (relative, absolute),
            };
            let planted = [relative, absolute]
                .into_iter()
                .map(Value::String)
                .map(|v| if array { Value::Array(vec![v]) } else { v });
            fields.push((name.clone(), planted.chain(others).collect(), path_like));
            opened.get_or_insert(file);
            continue;
        }
        fields.push((
            name.clone(),
            if path_like && wants_directory(tool, name, property) {
                directories_first(
                    candidates(schema, name, property, path_like, plants),
                    plants,
                )
            } else {
                candidates(schema, name, property, path_like, plants)
            },
            path_like,
        ));
    }
    if let Some(file) = opened {
        name_parts(&mut fields, &properties, schema, file);
    }
    fields
}

/// Whether `tool` makes the file its path field `field` names (`create_document`'s
/// `filename`), rather than reading one (`create_…_from_template`'s `template_path`): made
/// over the kit's file, it would be emptied for every call after it.
fn makes_file(tool: &str, field: &str) -> bool {
    const READS: [&str; 6] = ["template", "source", "src", "input", "from", "base"];
    let makes = words(tool)
        .first()
        .is_some_and(|w| ["create", "new", "make"].contains(&w.as_str()));
    makes && !words(field).iter().any(|w| READS.contains(&w.as_str()))
}

/// A new file of the kit file's kind beside it: `files/letter.docx` → `files/new-letter.docx`.
fn made_beside(path: &str) -> String {
    match path.rsplit_once('/') {
        Some((dir, name)) => format!("{dir}/new-{name}"),
        None => format!("new-{path}"),
    }
}

/// A field that names a part of the kit file the call opens (`sheet`, `sheet_name`,
/// `table`) gets that part's name first: the sheet the workbook has, not a made-up one.
fn name_parts(
    fields: &mut [(String, Vec<Value>, bool)],
    properties: &Map<String, Value>,
    schema: &Value,
    file: &KitFile,
) {
    for (name, candidates, path_like) in fields.iter_mut() {
        let takes_text = properties
            .get(name.as_str())
            .map(|p| resolve(schema, p, 0))
            .is_some_and(|p| {
                p.get("type").is_none_or(|t| t == "string") && p.get("enum").is_none()
            });
        if *path_like || !takes_text {
            continue;
        }
        let said = words(name);
        if let Some((_, part)) = file
            .parts
            .iter()
            .find(|(kind, _)| said.iter().any(|w| w == kind))
        {
            let part = Value::String((*part).to_owned());
            candidates.retain(|c| *c != part);
            candidates.insert(0, part);
        }
    }
}

/// The kit file (relative, absolute) a path field asks for: by its own name or description
/// (`excel_path`, "Path to the PDF"); else by its tool's name (`read_docx`), its tool's
/// description ("… in an Excel workbook") or what the whole server works on
/// ([`Plants::topic`]), less the kinds another field of the tool names for itself
/// (`export_csv`'s `path` is the workbook, its `csv_path` the CSV). None when nothing names
/// a kind the kit holds.
fn kit_file<'a>(
    tool: &str,
    field: (&str, &Value),
    schema: &Value,
    claimed: &[&str],
    plants: &'a Plants,
) -> Option<(String, String, &'a KitFile)> {
    let ((relative, absolute), files) = plants.kit.as_ref()?;
    let (name, property) = field;
    let kind = |said: &[String], brands: bool| {
        files.iter().find(|file| {
            let asks = |w: &String| {
                file.asks.contains(&w.as_str()) || (brands && file.brands.contains(&w.as_str()))
            };
            !claimed.contains(&file.name) && said.iter().any(asks)
        })
    };
    let file = own_kind(name, property, files)
        .or_else(|| kind(&words(tool), false))
        .or_else(|| kind(&words(described(schema)), false))
        .or_else(|| kind(&plants.topic, true))?;
    Some((
        format!("{relative}/{}", file.name),
        format!("{absolute}/{}", file.name),
        file,
    ))
}

/// The kit file a field names for itself, by its own name or description.
fn own_kind<'a>(name: &str, property: &Value, files: &'a [KitFile]) -> Option<&'a KitFile> {
    let own = [words(name), words(described(property))].concat();
    files
        .iter()
        .find(|file| own.iter().any(|w| file.asks.contains(&w.as_str())))
}

/// The kit files the path fields of a tool name for themselves, by their own words.
fn claimed_kinds<'a>(fields: &[(&String, &Value)], plants: &'a Plants) -> Vec<&'a str> {
    let Some((_, files)) = plants.kit.as_ref() else {
        return Vec::new();
    };
    fields
        .iter()
        .filter_map(|(name, property)| own_kind(name, property, files))
        .map(|file| file.name)
        .collect()
}

fn described(value: &Value) -> &str {
    value
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Whether a field takes a repository: a string named `repo…` or `repository…`, or one
/// whose description says it is one and names no file in it ("Path to the Git
/// repository", not "the file within the repository").
fn is_repository(name: &str, property: &Value) -> bool {
    let typed_string = property.get("type").is_none_or(|t| t == "string");
    let repo = |said: &[String]| said.iter().any(|w| w == "repo" || w == "repository");
    let described = words(described(property));
    let says_file = described.iter().any(|w| w == "file" || w == "files");
    typed_string
        && property.get("enum").is_none()
        && (repo(&words(name)) || (repo(&described) && !says_file))
}

/// What a revision-like field of a repository tool names in the planted repository:
/// `HEAD` for a revision, commit or diff target, `main` for a branch the tool does not
/// create. None for anything else (a new branch's name is free text).
fn revision_for(tool: &str, name: &str) -> Option<&'static str> {
    let field = words(name);
    let has = |w: &str| field.iter().any(|f| f == w);
    let creates = words(tool)
        .iter()
        .any(|w| ["create", "new", "add"].contains(&w.as_str()));
    if [
        "revision", "rev", "commit", "sha", "ref", "target", "since", "base",
    ]
    .iter()
    .any(|w| has(w))
    {
        Some("HEAD")
    } else if (field == ["branch"] || field == ["branch", "name"]) && !creates {
        Some("main")
    } else {
        None
    }
}

/// Whether a tool makes state other tools use, by the first word of its name: `create_…`,
/// `add_…`, `new…`, `insert…`, `register…`, `start…`. (Not `open`: `open_nodes` and
/// `open_note` read.)
pub(crate) fn is_producer(tool: &str) -> bool {
    const MAKES: [&str; 7] = [
        "create", "add", "new", "insert", "register", "start", "make",
    ];
    words(tool)
        .first()
        .is_some_and(|w| MAKES.contains(&w.as_str()))
}

/// The retry slot of a tool whose calls are `calls` (setups excluded): a contingent call
/// after its ordinary ones, its arguments the first call's until a refusal revises them
/// when the run makes it. None for a tool that takes no argument (nothing to revise).
pub(crate) fn retry_slot(calls: &[PlannedCall]) -> Option<PlannedCall> {
    let first = calls.iter().find(|c| c.purpose == Purpose::Normal)?;
    (!first.arguments.is_empty()).then(|| PlannedCall {
        repeat_of: None,
        purpose: Purpose::Retry,
        ..first.clone()
    })
}

/// `calls` with `setups` made first, as [`Purpose::Setup`] calls: the positions of
/// repeats move with them.
pub(crate) fn with_setups(setups: &[PlannedCall], calls: Vec<PlannedCall>) -> Vec<PlannedCall> {
    let shift = setups.len();
    setups
        .iter()
        .map(|setup| PlannedCall {
            repeat_of: None,
            purpose: Purpose::Setup,
            ..setup.clone()
        })
        .chain(calls.into_iter().map(|call| PlannedCall {
            repeat_of: call.repeat_of.map(|of| of + shift),
            ..call
        }))
        .collect()
}

/// One tool's calls split into the runs of per-call isolation: the setups first in each,
/// then one call, or a call and the repeat that follows it, or the protocol witness's
/// three reads; a repeat names its original by its position in its new run. A retry slot
/// goes with the call before it: the only refusal its run can hold.
pub(crate) fn per_call(calls: &[PlannedCall]) -> Vec<Vec<PlannedCall>> {
    let setups: Vec<&PlannedCall> = calls
        .iter()
        .take_while(|c| c.purpose == Purpose::Setup)
        .collect();
    let mut groups: Vec<Vec<(usize, &PlannedCall)>> = Vec::new();
    for (at, call) in calls.iter().enumerate().skip(setups.len()) {
        let joins = call.repeat_of.is_some()
            || matches!(
                call.purpose,
                Purpose::FlipFirst | Purpose::FlipSecond | Purpose::Retry
            );
        match groups.last_mut() {
            Some(group) if joins => group.push((at, call)),
            _ => groups.push(vec![(at, call)]),
        }
    }
    groups
        .into_iter()
        .map(|group| {
            let mut run: Vec<PlannedCall> = setups.iter().map(|s| (*s).clone()).collect();
            let base = run.len();
            for (_, call) in &group {
                let repeat_of = call.repeat_of.and_then(|of| {
                    group
                        .iter()
                        .position(|(at, _)| *at == of)
                        .map(|position| base + position)
                });
                run.push(PlannedCall {
                    repeat_of,
                    ..(*call).clone()
                });
            }
            run
        })
        .collect()
}

/// Whether any field of the tool takes a path.
pub fn has_path_argument(schema: &Value) -> bool {
    let root = resolve(schema, schema, 0);
    root.get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| {
            p.iter()
                .any(|(name, property)| is_path_like(name, resolve(schema, property, 0)))
        })
}

/// Whether a path field takes a directory: its name or description says so, or it is the
/// `path` of a tool that lists, walks or searches.
fn wants_directory(tool: &str, name: &str, property: &Value) -> bool {
    const DIRECTORY: [&str; 6] = ["dir", "directory", "folder", "root", "repo", "repository"];
    let field = words(name);
    if field.iter().any(|w| DIRECTORY.contains(&w.as_str())) {
        return true;
    }
    let described = property
        .get("description")
        .and_then(Value::as_str)
        .map(words)
        .unwrap_or_default();
    // "Directory to list" or "the folder": a directory; "a file, relative to the working
    // directory" is not.
    let names_directory = described.windows(2).any(|pair| {
        (pair[1] == "directory" || pair[1] == "folder")
            && pair[0] != "working"
            && pair[0] != "current"
    }) || described
        .first()
        .is_some_and(|w| w == "directory" || w == "folder");
    if names_directory && !described.iter().any(|w| w == "file") {
        return true;
    }
    let tool = words(tool);
    field == ["path"]
        && tool.iter().any(|w| {
            [
                "directory",
                "directories",
                "dir",
                "folder",
                "tree",
                "list",
                "search",
            ]
            .contains(&w.as_str())
        })
}

/// The notes directory (relative and absolute), then the other candidates of a field that
/// takes a directory.
fn directories_first(others: Vec<Value>, plants: &Plants) -> Vec<Value> {
    let array = others.first().is_some_and(Value::is_array);
    [&plants.note_relative, &plants.note_absolute]
        .into_iter()
        .filter_map(|note| Path::new(note).parent())
        .map(|dir| Value::String(dir.display().to_string()))
        .filter(|dir| dir.as_str().is_some_and(|d| !d.is_empty()))
        .map(|dir| if array { Value::Array(vec![dir]) } else { dir })
        .chain(others)
        .collect()
}

fn is_path_like(name: &str, property: &Value) -> bool {
    let name = name.to_ascii_lowercase();
    if property.get("type").is_some_and(|t| t == "array") {
        // A list of paths: `paths`, `files`, `file_paths`.
        return name.ends_with("paths") || name == "files";
    }
    let typed_string = property.get("type").is_none_or(|t| t == "string");
    typed_string
        && property.get("enum").is_none()
        && (PATH_NAMES.contains(&name.as_str())
            || name.ends_with("_path")
            || name.ends_with("_file")
            || name.ends_with("_dir"))
}

fn candidates(
    root: &Value,
    name: &str,
    property: &Value,
    path_like: bool,
    plants: &Plants,
) -> Vec<Value> {
    if path_like {
        let fixed = [
            &plants.note_relative,
            &plants.note_absolute,
            &plants.nonce_path,
        ];
        let paths: Vec<Value> = fixed
            .into_iter()
            .chain(&plants.escapes)
            .map(|p| Value::String(p.clone()))
            .collect();
        if property.get("type").is_some_and(|t| t == "array") {
            return paths.into_iter().map(|p| Value::Array(vec![p])).collect();
        }
        return paths;
    }
    if let Some(values) = property
        .get("enum")
        .and_then(Value::as_array)
        .filter(|v| !v.is_empty())
    {
        let mut candidates: Vec<Value> = values.iter().take(MAX_ENUM_VALUES).cloned().collect();
        // Case and whitespace variants of the first value: a server that normalises them
        // may accept more than it declared.
        if let Some(first) = values[0].as_str() {
            candidates.push(Value::String(first.to_uppercase()));
            candidates.push(Value::String(format!(" {first} ")));
        }
        return candidates;
    }
    let synthesised = value_for(root, name, property, plants, 0);
    // Values the description lists as the ones the field takes are tried like an enum's,
    // then what synthesis would give (the listing may not be the whole story). Not where
    // the schema itself fixes the value.
    let fixed = ["const", "default", "examples"]
        .iter()
        .any(|k| property.get(k).is_some());
    let described = match property.get("description").and_then(Value::as_str) {
        Some(description) if synthesised.is_string() && !fixed => described_values(description),
        _ => Vec::new(),
    };
    if described.is_empty() {
        return vec![synthesised];
    }
    described
        .into_iter()
        .map(Value::String)
        .chain(std::iter::once(synthesised))
        .collect()
}

/// What a description says introduces the list of values a field takes.
const VALUE_LISTS: [&str; 11] = [
    "one of:",
    "one of",
    "either",
    "options:",
    "possible values:",
    "valid values:",
    "allowed values:",
    "supported values:",
    "accepted values:",
    "choices:",
    "values:",
];

/// The values a field's description lists as the ones it takes — "one of: email_service,
/// cloud_storage", "either 'json' or 'text'", "Options: csv | json" — in order, at most
/// [`MAX_ENUM_VALUES`]; none unless at least two plain values (no spaces, quoted or not)
/// follow the lead, so "one of the following kinds of prose" lists nothing.
fn described_values(description: &str) -> Vec<String> {
    // ASCII lowercasing keeps every byte where it was.
    let lower = description.to_ascii_lowercase();
    for lead in VALUE_LISTS {
        let found = lower
            .match_indices(lead)
            .find(|(at, _)| *at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric());
        let Some((at, _)) = found else { continue };
        let rest = &description[at + lead.len()..];
        let rest = rest.trim_start_matches([' ', ':', '[', '(', '{']);
        // The list ends with its sentence or its bracket.
        let end = rest
            .find(". ")
            .into_iter()
            .chain(rest.find([')', ']', '}', ';', '\n']))
            .min()
            .unwrap_or(rest.len());
        let list = rest[..end].trim_end_matches('.');
        let mut values = Vec::new();
        for item in list
            .split([',', '|', '/'])
            .flat_map(|part| part.split(" or "))
            .map(|item| item.trim().trim_start_matches("or ").trim())
            .map(|item| item.trim_matches(['\'', '"', '`']))
        {
            let plain = !item.is_empty()
                && item.len() <= 40
                && item
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.:+@".contains(c));
            if !plain {
                break;
            }
            values.push(item.to_string());
        }
        if values.len() >= 2 {
            values.truncate(MAX_ENUM_VALUES);
            return values;
        }
    }
    parenthesised_values(description)
}

/// `schema` with what the tool's own `description` (its docstring, often) says of each
/// top-level field's values — "target: one of email_service, cloud_storage", "`format`
/// is either json or text" — added to that field's description, where the field's own
/// says nothing of them: the values are then tried as a described field's are. A line or
/// sentence of the tool's description counts for the first field it names.
pub(crate) fn with_tool_description(schema: &Value, description: Option<&str>) -> Value {
    let mut schema = schema.clone();
    // The whole description, for what a field that names no kind of file is given
    // ([`kit_file`]), where the schema has none of its own.
    if let (Some(description), Some(object)) = (description, schema.as_object_mut()) {
        object
            .entry("description")
            .or_insert_with(|| Value::String(description.to_owned()));
    }
    let (Some(description), Some(properties)) = (
        description,
        schema.get_mut("properties").and_then(Value::as_object_mut),
    ) else {
        return schema;
    };
    let pieces = description
        .split(['\n', ';'])
        .flat_map(|line| line.split(". "))
        .map(str::trim);
    for piece in pieces {
        let named = properties
            .iter_mut()
            .filter_map(|(name, property)| {
                let at = whole_word(piece, name)?;
                Some((at, property, &piece[at + name.len()..]))
            })
            .min_by_key(|(at, _, _)| *at);
        let Some((_, property, rest)) = named else {
            continue;
        };
        let own = property.get("description").and_then(Value::as_str);
        if own.is_some_and(|own| !described_values(own).is_empty())
            || described_values(rest).is_empty()
        {
            continue;
        }
        let joined = match own {
            Some(own) => format!("{own} (tool: {rest})"),
            None => format!("(tool: {rest})"),
        };
        if let Some(object) = property.as_object_mut() {
            object.insert("description".into(), Value::String(joined));
        }
    }
    schema
}

/// Where `word` stands in `text` as a whole word (not inside a longer name), if it does.
fn whole_word(text: &str, word: &str) -> Option<usize> {
    let part = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).map(|(at, _)| at).find(|&at| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(part) && !after.is_some_and(part)
    })
}

/// Values a description names each in quotes inside parentheses, as "local branches
/// ('local'), remote branches ('remote') or all ('all')": at least two, in order.
fn parenthesised_values(description: &str) -> Vec<String> {
    let mut values = Vec::new();
    for quote in ['\'', '"', '`'] {
        let open = format!("({quote}");
        let close = format!("{quote})");
        let mut rest = description;
        while let Some(start) = rest.find(&open) {
            let after = &rest[start + open.len()..];
            let Some(end) = after.find(&close) else { break };
            let value = &after[..end];
            let plain = !value.is_empty()
                && value.len() <= 40
                && value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.:+@".contains(c));
            if plain && !values.iter().any(|v| v == value) {
                values.push(value.to_string());
            }
            rest = &after[end + close.len()..];
        }
    }
    if values.len() < 2 {
        return Vec::new();
    }
    values.truncate(MAX_ENUM_VALUES);
    values
}

/// Nested objects and arrays are filled this deep at most.
const MAX_VALUE_DEPTH: usize = 4;

/// A value that does the field's job, deterministic, from its schema and its name: the
/// schema's `const`, `default` or first example; else by `format`, then by what the name
/// says (a URL, a time zone, a date, an SQL query, an expression, a shell command…); an
/// array holds one item of its `items` (as many as `minItems` asks), an object its
/// required properties; a number its bounds. Free text gets the probe's canary.
fn value_for(root: &Value, name: &str, property: &Value, plants: &Plants, depth: usize) -> Value {
    let property = resolve(root, property, 0);
    if let Some(value) = property.get("const") {
        return value.clone();
    }
    if let Some(value) = property
        .get("default")
        .or_else(|| property.get("examples").and_then(|e| e.get(0)))
        .filter(|v| !v.is_null())
    {
        return value.clone();
    }
    if let Some(first) = property.get("enum").and_then(|v| v.get(0)) {
        return first.clone();
    }
    // A union: the first alternative that is not null.
    for union in ["anyOf", "oneOf"] {
        if let Some(alternative) = property.get(union).and_then(Value::as_array).and_then(|a| {
            a.iter().find(|alt| {
                resolve(root, alt, 0)
                    .get("type")
                    .is_none_or(|t| t != "null")
            })
        }) {
            return value_for(root, name, alternative, plants, depth);
        }
    }
    let kind = property.get("type").and_then(|t| {
        t.as_str().or_else(|| {
            t.as_array()?
                .iter()
                .find_map(|k| k.as_str().filter(|k| *k != "null"))
        })
    });
    match kind {
        Some("integer") | Some("number") => number(name, property),
        Some("boolean") => Value::Bool(true),
        Some("null") => Value::Null,
        Some("array") => {
            let Some(items) = property.get("items").filter(|_| depth < MAX_VALUE_DEPTH) else {
                return Value::Array(Vec::new());
            };
            let count = property
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .clamp(1, 3) as usize;
            let item = value_for(root, &singular(name), items, plants, depth + 1);
            Value::Array(vec![item; count])
        }
        Some("object") => {
            let mut object = Map::new();
            if depth >= MAX_VALUE_DEPTH {
                return Value::Object(object);
            }
            let properties = property.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = property
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (field, schema) in properties.into_iter().flatten() {
                if required.contains(&field.as_str()) {
                    let value = value_for(root, field, schema, plants, depth + 1);
                    object.insert(field.clone(), value);
                }
            }
            Value::Object(object)
        }
        _ => Value::String(text_for(name, property, plants)),
    }
}

/// A string that does what the field's format or name asks, or the canary for free text.
fn text_for(name: &str, property: &Value, plants: &Plants) -> String {
    let by_format = match property.get("format").and_then(Value::as_str) {
        Some("uri" | "url" | "iri" | "uri-reference") => Some("http://example.com/"),
        Some("date-time") => Some("2026-01-01T00:00:00Z"),
        Some("date") => Some("2026-01-01"),
        Some("time") => Some("12:00:00"),
        Some("email" | "idn-email") => Some("dana@example.org"),
        Some("uuid") => Some("123e4567-e89b-42d3-a456-426614174000"),
        Some("hostname" | "idn-hostname") => Some("example.com"),
        Some("ipv4") => Some("192.0.2.1"),
        Some("ipv6") => Some("2001:db8::1"),
        _ => None,
    };
    if let Some(text) = by_format {
        return text.to_string();
    }
    let words = words(name);
    let has = |w: &str| words.iter().any(|word| word == w);
    let text = if has("url") || has("uri") || has("link") || has("href") || has("endpoint") {
        "http://example.com/"
    } else if has("timezone") || has("tz") || (has("time") && has("zone")) {
        "UTC"
    } else if has("time") {
        "12:00"
    } else if has("date") {
        "2026-01-01"
    } else if has("email") {
        "dana@example.org"
    } else if has("host") || has("hostname") || has("domain") {
        "example.com"
    } else if has("sql") {
        "SELECT 1"
    } else if has("expression") || has("expr") || has("formula") {
        "1 + 1"
    } else if has("regex") || has("pattern") || has("glob") {
        "*"
    } else if has("language") || has("lang") {
        "python"
    } else if has("command") || has("cmd") || has("shell") {
        return format!("echo {}", plants.canary);
    } else if has("base64") || has("b64") {
        // Valid base64, of the canary.
        use base64::Engine;
        return base64::engine::general_purpose::STANDARD.encode(&plants.canary);
    } else if is_code(&words) {
        // A program, in the language a `language` field is given: it prints the canary.
        return format!("print(\"{}\")", plants.canary);
    } else {
        return plants.canary.clone();
    };
    text.to_string()
}

/// Whether a field's words name a program's text: `code`, `source_code`, `script`,
/// `snippet`, `program` (not `country_code` or `status_code`).
fn is_code(words: &[String]) -> bool {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    matches!(
        words.as_slice(),
        ["code"]
            | ["source", "code"]
            | ["script"]
            | ["snippet"]
            | ["program"]
            | ["python", "code"]
            | ["js", "code"]
            | ["code", "snippet"]
    )
}

/// The name of one item of a list field: `urls` → `url`, `entities` → `entity`.
fn singular(name: &str) -> String {
    if let Some(stem) = name.strip_suffix("ies") {
        format!("{stem}y")
    } else if let Some(stem) = name.strip_suffix('s').filter(|s| !s.ends_with('s')) {
        stem.to_string()
    } else {
        name.to_string()
    }
}

/// A number inside the field's bounds: its minimum, else just above an exclusive minimum,
/// else 1 — 0 for an index (`paragraph_index`, `placeholder_idx`), which counts from the
/// first element; brought under the maximum when above it (halfway between the bounds for
/// a number with both).
fn number(name: &str, property: &Value) -> Value {
    let index = words(name)
        .last()
        .is_some_and(|w| ["index", "idx"].contains(&w.as_str()));
    let integer = property.get("type").is_some_and(|t| t == "integer");
    let bound = |key: &str| property.get(key).and_then(Value::as_f64);
    let (low, low_open) = match (bound("minimum"), bound("exclusiveMinimum")) {
        (Some(min), _) => (Some(min), false),
        (None, Some(min)) => (Some(min), true),
        (None, None) => (None, false),
    };
    let (high, high_open) = match (bound("maximum"), bound("exclusiveMaximum")) {
        (Some(max), _) => (Some(max), false),
        (None, Some(max)) => (Some(max), true),
        (None, None) => (None, false),
    };
    let step = |x: f64, up: bool| match (integer, up) {
        (true, true) => x.floor() + 1.0,
        (true, false) => x.ceil() - 1.0,
        (false, true) => x + 1.0,
        (false, false) => x - 1.0,
    };
    let mut value = match low {
        Some(low) if low_open => step(low, true),
        Some(low) => {
            if integer {
                low.ceil()
            } else {
                low
            }
        }
        None if index => 0.0,
        None => 1.0,
    };
    if let Some(high) = high {
        let above = if high_open {
            value >= high
        } else {
            value > high
        };
        if above {
            value = match (low, integer) {
                (Some(low), false) => (low + high) / 2.0,
                (_, true) if high_open => step(high, false),
                (_, true) => high.floor(),
                (None, false) if high_open => step(high, false),
                (None, false) => high,
            };
        }
    }
    // Whole values as integers (a JSON number accepts them; an integer needs them).
    if value.fract() == 0.0 {
        Value::from(value as i64)
    } else {
        Value::from(value)
    }
}

/// Follows a local `$ref` (`#/$defs/…` or `#/definitions/…`), at most a few levels deep.
fn resolve<'a>(root: &'a Value, value: &'a Value, depth: usize) -> &'a Value {
    let Some(reference) = value.get("$ref").and_then(Value::as_str) else {
        return value;
    };
    if depth >= MAX_REF_DEPTH {
        return value;
    }
    let Some(pointer) = reference.strip_prefix('#') else {
        return value;
    };
    match root.pointer(pointer) {
        Some(target) => resolve(root, target, depth + 1),
        None => value,
    }
}

#[cfg(test)]
mod tests;
