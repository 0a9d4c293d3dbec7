//! The protocol sensor's detectors (SPEC §3.3, §3.6): pure functions over what the model is
//! shown, the tool results and the tools/list manifest. No I/O; the caller hands in JSON.
//! The harness runs them on what a run recorded; the static analyser of `vac-analysis` runs
//! the instruction detector on the manifest's own text.
//!
//! - [`secrets_in_result`] (`result.secrets`): a planted canary token anywhere in a result,
//!   plain or encoded (`secrets.rs`);
//! - [`credentials_in_result`] (`result.secrets`): a real secret's format (a cloud key, a
//!   token, a private key block, a JWT, a connection string with a password) in a result
//!   (`credentials.rs`);
//! - [`instructions_in_result`] (`result.instructions`): text addressed to the model rather
//!   than to the user, a scored heuristic over several signals (`instructions.rs`, its
//!   phrase tables in `phrases.rs`);
//! - [`manifest_drift`] (`manifest.stable`): tools added, removed or changed between the
//!   reviewed tools/list and a later one (`drift.rs`).
//!
//! Results are walked as JSON: every string, wherever it is (`content[].text`, a resource's
//! text, `structuredContent`, an error message), is a segment named by its JSON pointer.

mod credentials;
mod drift;
mod instructions;
mod languages;
mod phrases;
mod secrets;
mod signal;

use serde_json::Value;

pub use credentials::{CredentialFinding, credentials_in, credentials_in_result};
pub use drift::{Drift, manifest_drift, reordered_only};
pub use instructions::{InstructionFinding, THRESHOLD, instructions_in_result};
pub use secrets::{canaries_in, is_zero_width, secrets_in_result};
pub use signal::{Hit, Signal};

/// One string of a JSON document and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Segment<'a> {
    /// RFC 6901 pointer of the string (of the member, for a key).
    pointer: String,
    text: &'a str,
    /// The string is an object key, not a value.
    in_key: bool,
}

/// Every string of `value`, keys included, in document order.
fn segments(value: &Value) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    walk(value, &mut String::new(), &mut out);
    out
}

fn walk<'a>(value: &'a Value, pointer: &mut String, out: &mut Vec<Segment<'a>>) {
    match value {
        Value::String(text) => out.push(Segment {
            pointer: pointer.clone(),
            text,
            in_key: false,
        }),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push_str(&format!("/{index}"));
                walk(item, pointer, out);
                pointer.truncate(len);
            }
        }
        Value::Object(members) => {
            for (key, member) in members {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                out.push(Segment {
                    pointer: pointer.clone(),
                    text: key,
                    in_key: true,
                });
                walk(member, pointer, out);
                pointer.truncate(len);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The ASCII that Unicode tag characters (U+E0020…U+E007E) spell: text that renders as
/// nothing but that a model's tokenizer reads.
pub fn tag_text(text: &str) -> String {
    text.chars()
        .filter_map(|c| match u32::from(c) {
            code @ 0xE0020..=0xE007E => char::from_u32(code - 0xE0000),
            _ => None,
        })
        .collect()
}

/// At most `max` characters of `text`, with an ellipsis when cut.
pub fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn segments_name_every_string_by_its_pointer() {
        let value = json!({"a/b": ["x", {"m~n": "y"}], "n": 1, "t": true});
        let found: Vec<(String, &str, bool)> = segments(&value)
            .into_iter()
            .map(|s| (s.pointer, s.text, s.in_key))
            .collect();
        assert_eq!(
            found,
            [
                ("/a~1b".to_owned(), "a/b", true),
                ("/a~1b/0".to_owned(), "x", false),
                ("/a~1b/1/m~0n".to_owned(), "m~n", true),
                ("/a~1b/1/m~0n".to_owned(), "y", false),
                ("/n".to_owned(), "n", true),
                ("/t".to_owned(), "t", true),
            ]
        );
        assert_eq!(value.pointer("/a~1b/1/m~0n"), Some(&json!("y")));
    }

    #[test]
    fn tag_characters_spell_ascii_and_excerpts_cut_on_characters() {
        let hidden: String = "hi"
            .chars()
            .map(|c| char::from_u32(0xE0000 + c as u32).unwrap())
            .collect();
        assert_eq!(tag_text(&format!("visible{hidden}")), "hi");
        assert_eq!(excerpt("ééé", 2), "éé…");
        assert_eq!(excerpt("ab", 2), "ab");
    }
}
