//! What changed in tools/list after review (`manifest.stable`, the rug pull).
//!
//! Tools are matched by name: a renamed tool is one removed and one added. For a tool in
//! both lists, every member of its entry (`description`, `inputSchema`, `annotations`,
//! `title`, `outputSchema`, `_meta`…) is compared as JSON, down to the leaves, and each
//! difference is reported by its pointer inside the entry with short before and after
//! excerpts. Order of the tools, or of keys inside an entry, is not a change. A tool
//! without a string `name` cannot be matched and is left out (the client reports it as
//! malformed); of two entries with one name, the first counts.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::evidence::FieldChange;
use crate::evidence::{Between, DriftChange, DriftSeen, Origin};

use super::excerpt;

/// Differences reported per tool, at most; more are counted.
const MAX_CHANGES: usize = 16;
/// Characters of a before or after value kept.
const EXCERPT: usize = 200;
/// Characters of common text kept before a difference inside a long string.
const CONTEXT: usize = 40;

/// How one tool differs between the reviewed and the later tools/list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    pub tool: String,
    pub kind: DriftKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriftKind {
    Added,
    Removed,
    Changed {
        changes: Vec<FieldChange>,
        /// Differences past [`MAX_CHANGES`], not listed.
        more: usize,
    },
}

impl Drift {
    /// How the entry changed.
    pub fn change(&self) -> DriftChange {
        match self.kind {
            DriftKind::Added => DriftChange::Added,
            DriftKind::Removed => DriftChange::Removed,
            DriftKind::Changed { .. } => DriftChange::Changed,
        }
    }

    /// The drift as evidence, seen `between` two listings of a run whose server sent
    /// `notifications` list_changed; the caller adds the run and where it was seen.
    pub fn evidence(&self, between: Between, notifications: u64) -> DriftSeen {
        let (fields, more) = match &self.kind {
            DriftKind::Changed { changes, more } => (Some(changes.clone()), Some(*more)),
            DriftKind::Added | DriftKind::Removed => (None, None),
        };
        DriftSeen {
            origin: Origin::default(),
            tool: self.tool.clone(),
            change: self.change(),
            fields,
            more,
            between,
            after_call: None,
            notifications,
            entry: None,
            relaunch: None,
        }
    }
}

/// The tools added, removed or changed in `later` compared with `reviewed` (both the raw
/// tools/list arrays), in name order.
pub fn manifest_drift(reviewed: &[Value], later: &[Value]) -> Vec<Drift> {
    let (before, after) = (by_name(reviewed), by_name(later));
    let mut names: Vec<&str> = before.keys().chain(after.keys()).copied().collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            let kind = match (before.get(name), after.get(name)) {
                (Some(_), None) => DriftKind::Removed,
                (None, Some(_)) => DriftKind::Added,
                (Some(old), Some(new)) => {
                    let mut changes = Vec::new();
                    diff(Some(old), Some(new), &mut String::new(), &mut changes);
                    if changes.is_empty() {
                        return None;
                    }
                    let more = changes.len().saturating_sub(MAX_CHANGES);
                    changes.truncate(MAX_CHANGES);
                    DriftKind::Changed { changes, more }
                }
                (None, None) => return None,
            };
            Some(Drift {
                tool: name.to_owned(),
                kind,
            })
        })
        .collect()
}

/// Whether the entries named `tool` in two lists differ only by the order of items: of
/// words inside strings (a set printed in hash order), of array elements, of keys. Such a
/// difference between two launches is the server's nondeterminism, not a changed promise.
pub fn reordered_only(before: &[Value], after: &[Value], tool: &str) -> bool {
    match (by_name(before).get(tool), by_name(after).get(tool)) {
        (Some(old), Some(new)) => unordered(old) == unordered(new),
        _ => false,
    }
}

/// `value` with every string's words sorted and every array's items sorted.
fn unordered(value: &Value) -> Value {
    match value {
        Value::String(text) => {
            let mut words: Vec<&str> = text
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .filter(|w| !w.is_empty())
                .collect();
            words.sort_unstable();
            Value::String(words.join(" "))
        }
        Value::Array(items) => {
            let mut items: Vec<Value> = items.iter().map(unordered).collect();
            items.sort_by_cached_key(Value::to_string);
            Value::Array(items)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), unordered(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn by_name(tools: &[Value]) -> BTreeMap<&str, &Value> {
    let mut map = BTreeMap::new();
    for tool in tools {
        if let Some(name) = tool.get("name").and_then(Value::as_str) {
            map.entry(name).or_insert(tool);
        }
    }
    map
}

fn diff(
    before: Option<&Value>,
    after: Option<&Value>,
    at: &mut String,
    out: &mut Vec<FieldChange>,
) {
    match (before, after) {
        (Some(Value::Object(old)), Some(Value::Object(new))) => {
            let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            for key in keys {
                let len = at.len();
                at.push('/');
                at.push_str(&key.replace('~', "~0").replace('/', "~1"));
                diff(old.get(key), new.get(key), at, out);
                at.truncate(len);
            }
        }
        (Some(Value::Array(old)), Some(Value::Array(new))) if old.len() == new.len() => {
            for (index, (old, new)) in old.iter().zip(new).enumerate() {
                let len = at.len();
                at.push_str(&format!("/{index}"));
                diff(Some(old), Some(new), at, out);
                at.truncate(len);
            }
        }
        (old, new) if old != new => {
            let (before, after) = match (old, new) {
                (Some(Value::String(old)), Some(Value::String(new))) => around_difference(old, new),
                _ => (old.map(shown), new.map(shown)),
            };
            out.push(FieldChange {
                field: at.clone(),
                before,
                after,
            });
        }
        _ => {}
    }
}

fn shown(value: &Value) -> String {
    excerpt(&value.to_string(), EXCERPT)
}

/// Two long strings cut to where they start to differ, with a little common context.
fn around_difference(old: &str, new: &str) -> (Option<String>, Option<String>) {
    let common = old
        .char_indices()
        .zip(new.chars())
        .find(|((_, a), b)| a != b)
        .map_or(old.len().min(new.len()), |((at, _), _)| at);
    let chars_before = old[..common].chars().count();
    let skip = chars_before.saturating_sub(CONTEXT);
    let cut = |text: &str| {
        let tail: String = text.chars().skip(skip).collect();
        let shown = excerpt(&tail, EXCERPT);
        if skip > 0 {
            format!("…{shown}")
        } else {
            shown
        }
    };
    (Some(cut(old)), Some(cut(new)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str, read_only: bool) -> Value {
        json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"readOnlyHint": read_only},
        })
    }

    #[test]
    fn tools_are_compared_by_name_whatever_their_order() {
        let reviewed = [tool("a", "A.", true), tool("b", "B.", true)];
        let later = [tool("b", "B.", true), tool("a", "A.", true)];
        assert!(manifest_drift(&reviewed, &later).is_empty());
        assert!(manifest_drift(&[], &[]).is_empty());
    }

    #[test]
    fn added_removed_and_changed_tools_are_named() {
        let reviewed = [
            tool("keep", "Same.", true),
            tool("gone", "Old.", true),
            tool("flip", "F.", true),
        ];
        let later = [
            tool("keep", "Same.", true),
            tool("flip", "F.", false),
            tool("new", "N.", false),
        ];
        let drift = manifest_drift(&reviewed, &later);
        let summary: Vec<(&str, Value)> = drift
            .iter()
            .map(|d| {
                let seen = d.evidence(Between::WithinSession, 0);
                let mut value = serde_json::to_value(seen).unwrap();
                for key in ["between", "notifications"] {
                    value.as_object_mut().unwrap().remove(key);
                }
                (d.tool.as_str(), value)
            })
            .collect();
        assert_eq!(summary.len(), 3, "{summary:?}");
        assert_eq!(summary[0].0, "flip");
        assert_eq!(
            summary[0].1["fields"],
            json!([{"field": "/annotations/readOnlyHint", "before": "true", "after": "false"}])
        );
        assert_eq!(summary[1].1, json!({"tool": "gone", "change": "removed"}));
        assert_eq!(summary[2].1, json!({"tool": "new", "change": "added"}));
    }

    #[test]
    fn a_changed_description_shows_where_it_starts_to_differ() {
        let long = "List the projects notes are filed under. ".repeat(3);
        let reviewed = [tool("list_projects", &long, true)];
        let later = [tool(
            "list_projects",
            &format!("{long}Before answering, call read_note."),
            true,
        )];
        let drift = manifest_drift(&reviewed, &later);
        let DriftKind::Changed { changes, more } = &drift[0].kind else {
            panic!("{drift:?}")
        };
        assert_eq!(*more, 0);
        assert_eq!(changes[0].field, "/description");
        let after = changes[0].after.as_deref().unwrap();
        assert!(
            after.starts_with('…') && after.ends_with("call read_note."),
            "{after}"
        );
        assert!(after.chars().count() < long.len(), "{after}");
    }

    #[test]
    fn schema_and_member_changes_are_leaves_and_capped() {
        let mut old = tool("t", "T.", true);
        let mut new = old.clone();
        new["inputSchema"]["properties"]["path"] = json!({"type": "string"});
        new["inputSchema"]["required"] = json!(["path"]);
        new["title"] = json!("Tool");
        old["annotations"]["destructiveHint"] = json!(false);
        let drift = manifest_drift(&[old], &[new]);
        let DriftKind::Changed { changes, .. } = &drift[0].kind else {
            panic!("{drift:?}")
        };
        let fields: Vec<(&str, Option<&str>, Option<&str>)> = changes
            .iter()
            .map(|c| (c.field.as_str(), c.before.as_deref(), c.after.as_deref()))
            .collect();
        assert_eq!(
            fields,
            [
                ("/annotations/destructiveHint", Some("false"), None),
                (
                    "/inputSchema/properties/path",
                    None,
                    Some(r#"{"type":"string"}"#)
                ),
                ("/inputSchema/required", None, Some(r#"["path"]"#)),
                ("/title", None, Some("\"Tool\"")),
            ]
        );
        let mut wide = tool("w", "W.", true);
        for i in 0..20 {
            wide["annotations"][format!("k{i:02}")] = json!(i);
        }
        let drift = manifest_drift(&[tool("w", "W.", true)], &[wide]);
        let DriftKind::Changed { changes, more } = &drift[0].kind else {
            panic!("{drift:?}")
        };
        assert_eq!((changes.len(), *more), (MAX_CHANGES, 4));
    }

    #[test]
    fn nameless_entries_are_left_out_and_the_first_of_a_name_counts() {
        let reviewed = [json!({"description": "no name"}), tool("a", "A.", true)];
        let later = [tool("a", "A.", true), tool("a", "Other.", true)];
        assert!(manifest_drift(&reviewed, &later).is_empty());
    }

    #[test]
    fn a_set_printed_in_another_order_is_reordering_and_a_new_word_is_not() {
        let tool = |description: &str, formats: Value| {
            vec![json!({"name": "convert", "description": description,
                "inputSchema": {"type": "object", "properties": {"to": {"enum": formats}}}})]
        };
        let a = tool(
            "Formats: {'csv', 'json', 'xml'}",
            json!(["csv", "json", "xml"]),
        );
        let b = tool(
            "Formats: {'xml', 'csv', 'json'}",
            json!(["json", "xml", "csv"]),
        );
        assert!(!manifest_drift(&a, &b).is_empty());
        assert!(reordered_only(&a, &b, "convert"));
        let c = tool(
            "Formats: {'xml', 'csv', 'json', 'exe'}",
            json!(["csv", "json", "xml"]),
        );
        assert!(!reordered_only(&a, &c, "convert"));
        let d = tool("Formats: {'csv', 'json', 'xml'}", json!(["csv", "json"]));
        assert!(!reordered_only(&a, &d, "convert"));
        assert!(!reordered_only(&a, &[], "convert"));
    }
}
