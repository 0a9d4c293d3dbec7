//! Error-guided retry (SPEC §3.5): a tool that refused a call with an error saying what it
//! wanted ("must point to an Excel file", "ENOENT: no such file or directory, open 'x'",
//! "Could not find exact match for edit", "is not of type 'object'", "Input should be 'a'
//! or 'b'") gets one more call, in its retry slot, with the value that error asks for put
//! in the argument it names. The rules read the refusal's text only, and the lab's planted
//! files give the values, so the same answers give the same retry.

use serde_json::{Map, Value};

use super::plants::{KIT, KIT_FILES, NOTE, note_line};
use super::vocab::CallRecord;
use super::vocab::LabRecord;
use super::vocab::Revised;
use super::vocab::{PlannedCall, Purpose};

/// The lab's files as the server sees them: what a revision puts in an argument.
pub(crate) struct Places {
    note: String,
    note_line: String,
    kit: String,
}

impl Places {
    pub(crate) fn of(lab: &LabRecord) -> Places {
        let at = |path: &str| lab.work.join(path).display().to_string();
        Places {
            note: at(NOTE),
            note_line: note_line().to_string(),
            kit: at(KIT),
        }
    }
}

/// A rule: from a refusal's text and the refused arguments, the argument to change and its
/// new value. Rules match the text lowercased (ASCII only, so offsets agree) and take values
/// from it as written.
type Rule = fn(&Refusal, &[Leaf], &Places) -> Option<(String, Value)>;

struct Refusal {
    text: String,
    lower: String,
}

/// The rules in the order they are tried: the first that answers a refusal revises it.
const RULES: [(&str, Rule); 6] = [
    ("text_match", text_match),
    ("file_kind", file_kind),
    ("directory", directory),
    ("missing_file", missing_file),
    ("choices", choices),
    ("type", wrong_type),
];

/// The arguments of `tool`'s retry: the first of its refused ordinary calls in `made` (the
/// run's calls so far) that a rule answers with arguments no call of the tool has had yet.
pub(crate) fn retry(
    tool: &str,
    made: &[CallRecord],
    places: &Places,
) -> Option<(Map<String, Value>, Revised)> {
    let tried: Vec<&Map<String, Value>> = made
        .iter()
        .filter(|c| c.tool == tool)
        .map(|c| &c.arguments)
        .collect();
    for call in made
        .iter()
        .filter(|c| c.tool == tool && c.purpose == Purpose::Normal)
    {
        let Some(refusal) = refusal(call) else {
            continue;
        };
        let refusal = Refusal {
            lower: refusal.to_ascii_lowercase(),
            text: refusal,
        };
        // An argument the tool says it does not take goes (a field the schema offers but
        // this action refuses): the call without it.
        if let Some(key) = unsupported(&refusal, &call.arguments) {
            let mut revised = call.arguments.clone();
            revised.remove(&key);
            if !tried.contains(&&revised) {
                let argument = format!("/{}", key.replace('~', "~0").replace('/', "~1"));
                return Some((
                    revised,
                    Revised {
                        from: call.index,
                        rule: "unsupported".to_string(),
                        argument,
                    },
                ));
            }
        }
        let arguments = Value::Object(call.arguments.clone());
        let leaves = leaves(&arguments);
        for (name, rule) in RULES {
            let Some((pointer, value)) = rule(&refusal, &leaves, places) else {
                continue;
            };
            let mut revised = arguments.clone();
            let Some(slot) = revised.pointer_mut(&pointer) else {
                continue;
            };
            *slot = value;
            let Value::Object(revised) = revised else {
                continue;
            };
            if tried.contains(&&revised) {
                continue;
            }
            return Some((
                revised,
                Revised {
                    from: call.index,
                    rule: name.to_string(),
                    argument: pointer,
                },
            ));
        }
    }
    None
}

/// The arguments a planned call is made with, and why they differ from the plan's: a
/// retry slot's from a refusal ([`retry`]; None: the slot is not needed), a repeat's and
/// the flip's second read's those of the call they repeat, any other call's (not a setup)
/// with identifiers from earlier results of its block ([`from_results`]). `made` is the
/// run's calls so far, the last `in_block` of them its block's; `listing` the tools as the
/// run listed them, whose schema says which identifiers the tool takes beyond the plan's.
pub(crate) fn arguments(
    planned: &PlannedCall,
    first_index: usize,
    made: &[CallRecord],
    in_block: usize,
    places: &Places,
    listing: Option<&Value>,
) -> Option<(Map<String, Value>, Option<Revised>)> {
    let planned_only = || Some((planned.arguments.clone(), None));
    let repeated = match (planned.repeat_of, planned.purpose) {
        (Some(of), _) => made.iter().rfind(|c| c.index == first_index + of),
        (None, Purpose::FlipSecond) => made
            .iter()
            .rfind(|c| c.tool == planned.tool && c.purpose == Purpose::FlipFirst),
        _ => None,
    };
    if let Some(original) = repeated {
        return Some((original.arguments.clone(), original.revised.clone()));
    }
    match planned.purpose {
        Purpose::Retry => retry(&planned.tool, made, places).map(|(a, why)| (a, Some(why))),
        Purpose::Setup => planned_only(),
        _ => {
            let block = &made[made.len().saturating_sub(in_block)..];
            let offered = listing
                .map(|listing| offered_identifiers(listing, &planned.tool))
                .unwrap_or_default();
            match from_results(&planned.arguments, &offered, block) {
                Some((arguments, why)) => Some((arguments, Some(why))),
                None => planned_only(),
            }
        }
    }
}

/// An identifier field's value taken from what an earlier call returned: `session_id`
/// after a result that holds `"session_id": "s-83"` (or `sessionId`, or a bare `id` for a
/// field that ends in `id`). `earlier` is what the call's block made before it (its
/// setups first), so a tool's own run and its block of a shared run find the same; the
/// first result that holds a field's value gives it. `offered` are identifier fields the
/// tool's schema has at its root and the plan left out (optional ones: a presentation's
/// `presentation_id` after `create_presentation` returned one): each is added when a
/// result holds a value under its own name, never from a bare `id`. None when no
/// identifier field of the call has a value to take.
pub(crate) fn from_results(
    arguments: &Map<String, Value>,
    offered: &[String],
    earlier: &[CallRecord],
) -> Option<(Map<String, Value>, Revised)> {
    let mut revised = Value::Object(arguments.clone());
    let mut first: Option<Revised> = None;
    let absent = offered
        .iter()
        .filter(|field| !arguments.contains_key(field.as_str()))
        .map(|field| {
            let pointer = format!("/{}", field.replace('~', "~0").replace('/', "~1"));
            (pointer, field.clone(), true)
        });
    let planned = leaves(&revised)
        .into_iter()
        .map(|l| (l.pointer, l.field, false));
    for (pointer, field, optional) in planned.chain(absent) {
        if !is_identifier(&field) {
            continue;
        }
        // A key that names the field anywhere before a bare `id`.
        let found = |loose: bool| {
            earlier.iter().find_map(|call| {
                let found = returned(call)
                    .iter()
                    .find_map(|result| identifier_in(result, &field, loose))?;
                Some((call.index, found))
            })
        };
        let loose = || (!optional).then(|| found(true)).flatten();
        let Some((from, value)) = found(false).or_else(loose) else {
            continue;
        };
        if optional && let Value::Object(map) = &mut revised {
            map.insert(field.clone(), Value::Null);
        }
        if let Some(slot) = revised.pointer_mut(&pointer)
            && *slot != value
        {
            *slot = value;
            first.get_or_insert(Revised {
                from,
                rule: "from_result".into(),
                argument: pointer.clone(),
            });
        }
    }
    match (revised, first) {
        (Value::Object(revised), Some(why)) => Some((revised, why)),
        _ => None,
    }
}

/// The identifier fields at the root of `tool`'s input schema in a tools/list array.
pub(crate) fn offered_identifiers(listing: &Value, tool: &str) -> Vec<String> {
    let Some(tools) = listing.as_array() else {
        return Vec::new();
    };
    tools
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(tool))
        .and_then(|t| t.pointer("/inputSchema/properties"))
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .keys()
                .filter(|field| is_identifier(field))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a field names an identifier another call hands out: `id`, `session_id`,
/// `taskId`, `handle`, `pid`, `uuid`.
fn is_identifier(field: &str) -> bool {
    let words = vac_contracts::name_words(field);
    words
        .last()
        .is_some_and(|w| ["id", "ids", "handle", "pid", "uuid"].contains(&w.as_str()))
}

/// What a successful call returned as JSON: its structured content and each text content
/// that parses as JSON.
fn returned(call: &CallRecord) -> Vec<Value> {
    let Some(result) = call
        .outcome
        .as_ref()
        .ok()
        .filter(|o| o.error.is_none())
        .and_then(|o| o.result.as_ref())
        .filter(|r| r.get("isError").and_then(Value::as_bool) != Some(true))
    else {
        return Vec::new();
    };
    let texts = texts(result).filter_map(|text| serde_json::from_str::<Value>(text).ok());
    result
        .get("structuredContent")
        .cloned()
        .into_iter()
        .chain(texts)
        .collect()
}

/// The first scalar in `value` under a key that names `field` (by its words: `sessionId`
/// is `session_id`; `{"task": {"id": 7}}` holds `task_id`), breadth first, bounded; with
/// `loose`, the first under a bare `id` for a field that ends in `id`.
fn identifier_in(value: &Value, field: &str, loose: bool) -> Option<Value> {
    let wanted = vac_contracts::name_words(field);
    let owner = match wanted.split_last() {
        Some((last, owner)) if last == "id" && !owner.is_empty() => Some(owner),
        _ => None,
    };
    let scalar = |v: &Value| matches!(v, Value::String(_) | Value::Number(_)).then(|| v.clone());
    let mut queue = std::collections::VecDeque::from([value]);
    // `{"task": {"id": 7}}` for `task_id`, kept until no key names the field.
    let mut owned = None;
    let mut seen = 0;
    while let Some(value) = queue.pop_front() {
        seen += 1;
        if seen > MAX_SEARCHED {
            break;
        }
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    let words = vac_contracts::name_words(key);
                    let found = if loose {
                        (owner.is_some() || wanted == ["id"]) && words == ["id"]
                    } else {
                        words == wanted
                    };
                    if let Some(found) = found.then(|| scalar(inner)).flatten() {
                        return Some(found);
                    }
                    if !loose && owned.is_none() && owner == Some(words.as_slice()) {
                        owned = inner.get("id").and_then(scalar);
                    }
                    queue.push_back(inner);
                }
            }
            Value::Array(items) => queue.extend(items),
            _ => {}
        }
    }
    owned
}

/// Values of a result searched for an identifier, at most.
const MAX_SEARCHED: usize = 10_000;

/// The text of a refusal: a JSON-RPC error's message and data, or the text of a result
/// that is flagged `isError` or tells an error; None for a call that succeeded, timed out or
/// lost its session (nothing to read).
fn refusal(call: &CallRecord) -> Option<String> {
    let outcome = call.outcome.as_ref().ok()?;
    if let Some(crate::client::CallError::Rpc { message, data, .. }) = &outcome.error {
        let data = data.as_ref().map(Value::to_string).unwrap_or_default();
        return Some(format!("{message} {data}"));
    }
    if outcome.error.is_some() {
        return None;
    }
    let result = outcome.result.as_ref()?;
    if !matches!(
        call.answer(),
        vac_contracts::Answer::ToolError | vac_contracts::Answer::ToldError
    ) {
        return None;
    }
    let text: Vec<&str> = texts(result).collect();
    Some(text.join("\n").chars().take(MAX_REFUSAL).collect())
}

/// The text contents of a tool result, in order.
pub(crate) fn texts(result: &Value) -> impl Iterator<Item = &str> {
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
}

/// How much of a refusal the rules read.
const MAX_REFUSAL: usize = 4096;

/// One scalar of the arguments: where it is, the name of the field that holds it, and its
/// value as text.
#[derive(Debug)]
struct Leaf {
    pointer: String,
    field: String,
    text: String,
    string: bool,
}

impl Leaf {
    /// Whether the refusal quotes or shows this value (a value of a few characters is no
    /// evidence: `1` is in many a message).
    fn shown_in(&self, refusal: &str) -> bool {
        self.text.len() >= 3 && refusal.contains(&self.text.to_ascii_lowercase())
    }

    /// Whether the refusal names this field as a word of its own.
    fn named_in(&self, refusal: &str) -> bool {
        let field = self.field.to_ascii_lowercase();
        !field.is_empty()
            && refusal
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .any(|w| w == field)
    }

    /// Whether the field takes a path or a file, by its name or its value.
    fn path_like(&self) -> bool {
        const NAMES: [&str; 14] = [
            "path",
            "file",
            "filename",
            "filepath",
            "dir",
            "directory",
            "folder",
            "source",
            "src",
            "from",
            "destination",
            "dest",
            "target",
            "location",
        ];
        let words = vac_contracts::name_words(&self.field);
        self.string
            && (words.iter().any(|w| NAMES.contains(&w.as_str()))
                || self.text.contains('/')
                || std::path::Path::new(&self.text).extension().is_some())
    }

    /// Whether the field names where something goes rather than what is read.
    fn destination(&self) -> bool {
        const NAMES: [&str; 7] = [
            "destination",
            "dest",
            "to",
            "target",
            "new",
            "output",
            "out",
        ];
        vac_contracts::name_words(&self.field)
            .iter()
            .any(|w| NAMES.contains(&w.as_str()))
    }
}

/// Every scalar of `value`, in document order.
fn leaves(value: &Value) -> Vec<Leaf> {
    fn walk(value: &Value, pointer: String, field: &str, out: &mut Vec<Leaf>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    let escaped = key.replace('~', "~0").replace('/', "~1");
                    walk(value, format!("{pointer}/{escaped}"), key, out);
                }
            }
            Value::Array(items) => {
                for (at, item) in items.iter().enumerate() {
                    walk(item, format!("{pointer}/{at}"), field, out);
                }
            }
            Value::String(text) => out.push(Leaf {
                pointer,
                field: field.to_string(),
                text: text.clone(),
                string: true,
            }),
            other => out.push(Leaf {
                pointer,
                field: field.to_string(),
                text: other.to_string(),
                string: false,
            }),
        }
    }
    let mut out = Vec::new();
    walk(value, String::new(), "", &mut out);
    out
}

fn says(refusal: &str, cues: &[&str]) -> bool {
    cues.iter().any(|cue| refusal.contains(cue))
}

/// The string leaf the refusal shows that `fits`: what is read before where it goes (a
/// source before its destination, the old text before the new), when both are shown.
fn shown_leaf<'a>(
    refusal: &str,
    leaves: &'a [Leaf],
    fits: impl Fn(&Leaf) -> bool,
) -> Option<&'a Leaf> {
    let shown = |l: &&Leaf| l.string && l.shown_in(refusal) && fits(l);
    let mut candidates = leaves.iter().filter(shown);
    let first = candidates.clone().next();
    candidates.find(|l| !l.destination()).or(first)
}

/// The leaf a path rule changes: one the refusal shows, else the first path-like one.
fn path_leaf<'a>(refusal: &str, leaves: &'a [Leaf]) -> Option<&'a Leaf> {
    shown_leaf(refusal, leaves, |_| true).or_else(|| leaves.iter().find(|l| l.path_like()))
}

/// "Could not find exact match for edit: X", "X not found in file": the text shown is to
/// be one the file holds, a line of the planted note.
fn text_match(written: &Refusal, leaves: &[Leaf], places: &Places) -> Option<(String, Value)> {
    let refusal = written.lower.as_str();
    const CUES: [&str; 6] = [
        "exact match",
        "no match",
        "not found in",
        "did not match",
        "does not contain",
        "could not find the text",
    ];
    if !says(refusal, &CUES) {
        return None;
    }
    let leaf = shown_leaf(refusal, leaves, |l| !l.path_like())?;
    Some((
        leaf.pointer.clone(),
        Value::String(places.note_line.clone()),
    ))
}

/// "Path must point to an Excel file", "only PDF files are supported": the kit's file of the
/// kind named, in the path argument.
fn file_kind(written: &Refusal, leaves: &[Leaf], places: &Places) -> Option<(String, Value)> {
    let refusal = written.lower.as_str();
    const CUES: [&str; 11] = [
        "must",
        "should",
        "expected",
        "expects",
        "only",
        "not a ",
        "not an ",
        "unsupported",
        "invalid",
        "requires",
        "supported",
    ];
    if !says(refusal, &CUES) {
        return None;
    }
    let words: Vec<&str> = refusal
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let file = KIT_FILES
        .iter()
        .find(|file| file.asks.iter().any(|a| words.contains(a)))?;
    let leaf = path_leaf(refusal, leaves)?;
    let wanted = format!("{}/{}", places.kit, file.name);
    (leaf.text != wanted).then(|| (leaf.pointer.clone(), Value::String(wanted)))
}

/// "ENOTDIR", "must be a directory": the kit's directory; "EISDIR", "is a directory": the
/// planted note.
fn directory(written: &Refusal, leaves: &[Leaf], places: &Places) -> Option<(String, Value)> {
    let refusal = written.lower.as_str();
    const WANTS_DIRECTORY: [&str; 5] = [
        "not a directory",
        "enotdir",
        "must be a directory",
        "expected a directory",
        "not a folder",
    ];
    const WANTS_FILE: [&str; 5] = [
        "is a directory",
        "eisdir",
        "not a file",
        "not a regular file",
        "must be a file",
    ];
    let wanted = if says(refusal, &WANTS_DIRECTORY) {
        &places.kit
    } else if says(refusal, &WANTS_FILE) {
        &places.note
    } else {
        return None;
    };
    let leaf = path_leaf(refusal, leaves)?;
    (leaf.text != *wanted).then(|| (leaf.pointer.clone(), Value::String(wanted.clone())))
}

/// "ENOENT: no such file or directory, open 'x'", "file not found": the planted note, in
/// the argument the refusal shows (any, for the errno's own words) or a path argument.
fn missing_file(written: &Refusal, leaves: &[Leaf], places: &Places) -> Option<(String, Value)> {
    let refusal = written.lower.as_str();
    const ERRNO: [&str; 2] = ["no such file", "enoent"];
    const WORDS: [&str; 4] = [
        "file not found",
        "does not exist",
        "doesn't exist",
        "path not found",
    ];
    let leaf = if says(refusal, &ERRNO) {
        path_leaf(refusal, leaves)?
    } else if says(refusal, &WORDS) {
        path_leaf(refusal, leaves).filter(|l| l.path_like())?
    } else {
        return None;
    };
    (leaf.text != places.note).then(|| (leaf.pointer.clone(), Value::String(places.note.clone())))
}

/// "unsupported arguments: file_path", "got an unexpected keyword argument 'file_path'",
/// "Unrecognized key(s) in object: 'file_path'", "file_path: Extra inputs are not
/// permitted": the argument the refusal names as one the tool does not take, to be left
/// out (the first such argument the refusal names after its cue).
fn unsupported(written: &Refusal, arguments: &Map<String, Value>) -> Option<String> {
    let refusal = written.lower.as_str();
    const CUES: [&str; 12] = [
        "unsupported argument",
        "unsupported help argument",
        "unsupported parameter",
        "unexpected keyword argument",
        "unexpected argument",
        "unexpected_keyword_argument",
        "unknown argument",
        "unknown parameter",
        "unknown field",
        "unrecognized key",
        "extra inputs are not permitted",
        "additional propert",
    ];
    let cue = CUES.iter().filter_map(|cue| refusal.find(cue)).min()?;
    let in_word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    // Where the refusal names `key` as a whole word: first after the cue, else before it.
    let named_at = |key: &str| -> Option<(bool, usize)> {
        let key = key.to_ascii_lowercase();
        if key.is_empty() {
            return None;
        }
        let mut found = None;
        let mut from = 0;
        while let Some(pos) = refusal[from..].find(&key) {
            let (at, end) = (from + pos, from + pos + key.len());
            let alone = !refusal[..at].chars().next_back().is_some_and(in_word)
                && !refusal[end..].chars().next().is_some_and(in_word);
            if alone {
                let place = (at < cue, at);
                found = Some(found.map_or(place, |f: (bool, usize)| f.min(place)));
            }
            from = end;
        }
        found
    };
    arguments
        .keys()
        .filter_map(|key| named_at(key).map(|place| (place, key)))
        .min()
        .map(|(_, key)| key.clone())
}

/// "must be one of: 'a', 'b'", "Input should be 'a' or 'b'", "Expected 'a' | 'b', received
/// 'x'", "Must be 'a', 'b'", "Use 'a' or 'b'": the first value offered, in the argument named
/// or shown.
fn choices(written: &Refusal, leaves: &[Leaf], _: &Places) -> Option<(String, Value)> {
    let refusal = written.lower.as_str();
    const CUES: [&str; 16] = [
        "one of",
        "must be '",
        "must be \"",
        "use '",
        "use \"",
        "should be '",
        "should be \"",
        "expected '",
        "expected \"",
        "valid values",
        "allowed values",
        "must be either",
        "available",
        "valid options",
        "choose from",
        "did you mean",
    ];
    // A cue as words of its own: "available", not "unavailable".
    let at = CUES
        .iter()
        .filter_map(|cue| {
            refusal.match_indices(cue).map(|(at, _)| at).find(|&at| {
                !refusal[..at]
                    .chars()
                    .next_back()
                    .is_some_and(char::is_alphabetic)
            })
        })
        .min()?;
    let offered = quoted(&written.text[at..]);
    let leaf = leaves
        .iter()
        .find(|l| l.named_in(refusal))
        .or_else(|| leaves.iter().find(|l| l.shown_in(refusal)))?;
    let choice = offered
        .into_iter()
        .find(|c| !c.eq_ignore_ascii_case(&leaf.text))?;
    Some((leaf.pointer.clone(), Value::String(choice)))
}

/// The quoted words of `text`, in order ('a', "b", `c`).
fn quoted(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(['\'', '"', '`']) {
        let quote = rest[open..].chars().next().unwrap_or('\'');
        let after = &rest[open + 1..];
        let Some(close) = after.find(quote) else {
            break;
        };
        let word = &after[..close];
        if !word.is_empty() && word.len() <= 64 && !word.contains(char::is_whitespace) {
            found.push(word.to_string());
        }
        rest = &after[close + 1..];
    }
    found
}

/// "'x' is not of type 'object'", "Expected object, received string", "Input should be a
/// valid integer": a minimal value of the type asked for, in the argument named or shown.
fn wrong_type(written: &Refusal, leaves: &[Leaf], places: &Places) -> Option<(String, Value)> {
    let refusal = written.lower.as_str();
    /// The words that ask for a type, and a value of it.
    type Asked = (&'static [&'static str], fn(&Places) -> Value);
    const TYPES: [Asked; 5] = [
        (
            &["of type 'object'", "expected object", "valid dictionary"],
            |_| Value::Object(Map::new()),
        ),
        (
            &["of type 'array'", "expected array", "valid list"],
            |places| Value::Array(vec![Value::String(places.note.clone())]),
        ),
        (
            &["of type 'integer'", "expected integer", "valid integer"],
            |_| Value::from(1),
        ),
        (
            &["of type 'number'", "expected number", "valid number"],
            |_| Value::from(1),
        ),
        (
            &["of type 'boolean'", "expected boolean", "valid boolean"],
            |_| Value::Bool(true),
        ),
    ];
    let (_, value) = TYPES.iter().find(|(cues, _)| says(refusal, cues))?;
    let leaf = leaves
        .iter()
        .find(|l| l.named_in(refusal))
        .or_else(|| leaves.iter().find(|l| l.shown_in(refusal)))?;
    Some((leaf.pointer.clone(), value(places)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn places() -> Places {
        Places {
            note: "/home/dana/work/notes/welcome.md".into(),
            note_line: "Notes for the inventory project.".into(),
            kit: "/home/dana/work/files".into(),
        }
    }

    /// Each case of `tests/data/retry.json`: a refused call's arguments and error, and the
    /// retry's rule and arguments (null: no retry).
    #[test]
    fn each_refusal_gives_the_retry_its_case_expects() {
        let cases: Value =
            serde_json::from_str(include_str!("../../tests/data/retry.json")).unwrap();
        let cases = cases.as_array().unwrap();
        assert!(cases.len() >= 10);
        for case in cases {
            let name = case["case"].as_str().unwrap();
            let refused = record(0, &case["arguments"], &case["error"]);
            let got = retry("tool", &[refused], &places());
            match &case["expected"] {
                Value::Null => assert!(got.is_none(), "{name}: {got:?}"),
                expected => {
                    let (arguments, revised) = got.unwrap_or_else(|| panic!("{name}: no retry"));
                    assert_eq!(revised.rule, expected["rule"], "{name}");
                    assert_eq!(revised.argument, expected["argument"], "{name}");
                    assert_eq!(Value::Object(arguments), expected["arguments"], "{name}");
                    assert_eq!(revised.from, 0);
                }
            }
        }
    }

    #[test]
    fn a_retry_never_repeats_arguments_already_tried_and_reads_only_ordinary_calls() {
        let error = json!({"isError": "ENOENT: no such file or directory, open 'memo-1'"});
        let refused = record(0, &json!({"path": "memo-1"}), &error);
        let mut tried = record(1, &json!({"path": places().note}), &json!(null));
        assert!(retry("tool", &[refused.clone(), tried.clone()], &places()).is_none());
        tried.arguments = Map::new();
        assert!(retry("tool", &[refused.clone(), tried], &places()).is_some());
        assert!(retry("other", std::slice::from_ref(&refused), &places()).is_none());
        let mut witness = refused;
        witness.purpose = Purpose::NegativeControl;
        assert!(retry("tool", &[witness], &places()).is_none());
    }

    #[test]
    fn an_identifier_comes_from_the_first_result_that_holds_it() {
        let ok = |index, result: Value| {
            let mut call = record(index, &json!({}), &json!(null));
            if let Ok(outcome) = &mut call.outcome {
                outcome.result = Some(result);
            }
            call
        };
        let text = |v: Value| json!({"content": [{"type": "text", "text": v.to_string()}]});
        let earlier = [
            ok(3, text(json!({"note": "no id here"}))),
            ok(4, text(json!({"session": {"sessionId": "s-83", "id": 9}}))),
            ok(
                5,
                json!({"content": [], "structuredContent": {"session_id": "s-99", "task": {"id": 7}}}),
            ),
        ];
        let arguments = json!({"session_id": "memo-1", "task_id": 0, "query": "memo-1"});
        let (revised, why) = from_results(arguments.as_object().unwrap(), &[], &earlier).unwrap();
        assert_eq!(
            Value::Object(revised),
            json!({"session_id": "s-83", "task_id": 7, "query": "memo-1"})
        );
        assert_eq!(
            (why.from, why.rule.as_str(), why.argument.as_str()),
            (4, "from_result", "/session_id")
        );
        // A bare `id` when no key names the field.
        let (revised, _) =
            from_results(json!({"item_id": 0}).as_object().unwrap(), &[], &earlier).unwrap();
        assert_eq!(Value::Object(revised), json!({"item_id": 9}));
        // No identifier field, or no result that holds one: nothing to revise.
        assert!(from_results(json!({"query": "x"}).as_object().unwrap(), &[], &earlier).is_none());
        assert!(from_results(arguments.as_object().unwrap(), &[], &earlier[..1]).is_none());
        // A refusal's text is no result.
        let refused = record(
            6,
            &json!({}),
            &json!({"isError": "{\"session_id\": \"s-1\"}"}),
        );
        assert!(from_results(arguments.as_object().unwrap(), &[], &[refused]).is_none());
    }

    #[test]
    fn an_optional_identifier_the_schema_offers_is_added_only_from_its_own_name() {
        let returned = |index, v: Value| {
            let mut call = record(index, &json!({}), &json!(null));
            if let Ok(outcome) = &mut call.outcome {
                outcome.result =
                    Some(json!({"content": [{"type": "text", "text": v.to_string()}]}));
            }
            call
        };
        // office-powerpoint's shape: create returns the id; add_slide's is optional.
        let listing = json!([
            {"name": "create_presentation", "inputSchema": {"type": "object", "properties": {}}},
            {"name": "add_slide", "inputSchema": {"type": "object", "properties": {
                "presentation_id": {"type": "string"}, "title": {"type": "string"},
                "parent_id": {"type": "string"}}}}
        ]);
        let offered = offered_identifiers(&listing, "add_slide");
        assert_eq!(offered, ["parent_id", "presentation_id"]);
        assert!(offered_identifiers(&listing, "create_presentation").is_empty());
        assert!(offered_identifiers(&listing, "no_such_tool").is_empty());
        let earlier = [returned(
            2,
            json!({"presentation_id": "presentation_1", "id": 4, "message": "Created"}),
        )];
        let (revised, why) = from_results(&Map::new(), &offered, &earlier).unwrap();
        // Its own name gives it; a bare `id` does not fill `parent_id`.
        assert_eq!(
            Value::Object(revised),
            json!({"presentation_id": "presentation_1"})
        );
        assert_eq!((why.from, why.argument.as_str()), (2, "/presentation_id"));
        // Nothing returned under the name: the call is made as planned.
        let unnamed = [returned(2, json!({"id": 4}))];
        assert!(from_results(&Map::new(), &offered, &unnamed).is_none());
        // A value the plan gave stays the plan's field, revised as before.
        let planned = json!({"presentation_id": "memo-1"});
        let (revised, _) = from_results(planned.as_object().unwrap(), &offered, &earlier).unwrap();
        assert_eq!(revised["presentation_id"], "presentation_1");
        assert_eq!(revised.len(), 1);
    }

    /// A call record of `tool` with `arguments` whose outcome is `error`: `{"isError": text}`,
    /// `{"rpc": text}`, or null for a success.
    fn record(index: usize, arguments: &Value, error: &Value) -> CallRecord {
        let (result, error) = match (error.get("isError"), error.get("rpc")) {
            (Some(text), _) => (
                Some(json!({"isError": true, "content": [{"type": "text", "text": text}]})),
                None,
            ),
            (_, Some(text)) => (
                None,
                Some(crate::client::CallError::Rpc {
                    code: -32602,
                    message: text.as_str().unwrap().to_string(),
                    data: None,
                }),
            ),
            _ => (Some(json!({"content": []})), None),
        };
        CallRecord {
            index,
            repeat_of: None,
            purpose: Purpose::Normal,
            tool: "tool".into(),
            arguments: arguments.as_object().unwrap().clone(),
            outcome: Ok(crate::client::CallOutcome {
                request_id: json!(index),
                result,
                error,
                requested_at: std::time::Duration::ZERO,
                answered_at: std::time::Duration::ZERO,
                asked: Vec::new(),
            }),
            repeat_state: Vec::new(),
            revised: None,
            answer: None,
            unanswered: None,
        }
    }
}
