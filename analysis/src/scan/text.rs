//! What the static rules read in a tool's words: its words (camelCase split), the write
//! verbs a text asserts (not negated), the secret stores it names, every string of the tool
//! with its pointer, and the hidden characters in a text.

use serde_json::Value;
use vac_contracts::detect;

/// The lowercase words of `text`: split at anything not alphanumeric and at camelCase
/// humps (`filePath` → `file`, `path`); the whole identifier is kept too (`filepath`).
pub(super) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for token in text.split(|c: char| !c.is_alphanumeric()) {
        if token.is_empty() {
            continue;
        }
        let mut word = String::new();
        let mut previous_lower = false;
        let mut parts = 0;
        for c in token.chars() {
            if c.is_uppercase() && previous_lower && !word.is_empty() {
                out.push(std::mem::take(&mut word));
                parts += 1;
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
            word.extend(c.to_lowercase());
        }
        if !word.is_empty() {
            out.push(word);
            parts += 1;
        }
        if parts > 1 {
            out.push(token.to_lowercase());
        }
    }
    // snake_case names split at `_` above; the joined form is a word too (`file_path`).
    for token in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if token.contains('_') {
            out.push(token.replace('_', "").to_lowercase());
        }
    }
    out
}

/// Verbs that change state, in the forms a name or description uses them.
const WRITE_VERBS: [&str; 40] = [
    "write",
    "writes",
    "save",
    "saves",
    "delete",
    "deletes",
    "remove",
    "removes",
    "create",
    "creates",
    "update",
    "updates",
    "modify",
    "modifies",
    "append",
    "appends",
    "overwrite",
    "overwrites",
    "move",
    "moves",
    "rename",
    "renames",
    "upload",
    "uploads",
    "insert",
    "inserts",
    "drop",
    "drops",
    "kill",
    "kills",
    "edit",
    "edits",
    "install",
    "installs",
    "push",
    "pushes",
    "commit",
    "commits",
    "send",
    "sends",
];

/// Words that, just before a verb, say it is not done ("without modifying").
const NEGATIONS: [&str; 7] = ["not", "never", "without", "no", "nor", "doesn", "don"];

/// Words after which a write verb is a verb of the tool ("Reads a file and appends…").
const LEADS: [&str; 10] = [
    "and", "then", "or", "also", "to", "will", "may", "can", "it", "which",
];

/// The write verbs of a description, each once, in order: a verb that opens a sentence
/// or follows a conjunction or modal, and is not negated. A noun of the same spelling
/// ("with progress updates") is not a verb of the tool.
pub(super) fn write_verbs(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for sentence in text.split(['.', ';', ':', '!', '?', '\n']) {
        let words = words(sentence);
        for (index, word) in words.iter().enumerate() {
            if !WRITE_VERBS.contains(&word.as_str()) || out.contains(word) {
                continue;
            }
            let leads = index == 0 || LEADS.contains(&words[index - 1].as_str());
            let negated = words[index.saturating_sub(3)..index]
                .iter()
                .any(|w| NEGATIONS.contains(&w.as_str()));
            if leads && !negated {
                out.push(word.clone());
            }
        }
    }
    out
}

/// The write verb a tool's name opens with (`save_note`, `deleteFile`), if any.
pub(super) fn name_verb(name: &str) -> Option<String> {
    words(name)
        .into_iter()
        .next()
        .filter(|w| WRITE_VERBS.contains(&w.as_str()))
}

/// Names of secret stores, one word or two in a row.
const SECRET_WORDS: [&str; 12] = [
    "secret",
    "secrets",
    "credential",
    "credentials",
    "password",
    "passwords",
    "passphrase",
    "apikey",
    "keychain",
    "keyring",
    "env",
    "dotenv",
];
const SECRET_PAIRS: [(&str, &str); 6] = [
    ("api", "key"),
    ("api", "keys"),
    ("private", "key"),
    ("access", "token"),
    ("environment", "variables"),
    ("environment", "variable"),
];

pub(super) fn secret_words(words: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |w: String| {
        if !out.contains(&w) {
            out.push(w);
        }
    };
    for (index, word) in words.iter().enumerate() {
        if SECRET_WORDS.contains(&word.as_str()) {
            push(word.clone());
        }
        if let Some(next) = words.get(index + 1)
            && SECRET_PAIRS.contains(&(word.as_str(), next.as_str()))
        {
            push(format!("{word} {next}"));
        }
    }
    out
}

/// Every string value of the tool, with its JSON pointer (keys are not included: an
/// argument name with hidden characters shows in its pointer's string too).
pub(super) fn strings(value: &Value) -> Vec<(String, &str)> {
    fn walk<'a>(value: &'a Value, pointer: String, out: &mut Vec<(String, &'a str)>) {
        match value {
            Value::String(text) => out.push((pointer, text)),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, format!("{pointer}/{i}"), out);
                }
            }
            Value::Object(members) => {
                for (key, member) in members {
                    let escaped = key.replace('~', "~0").replace('/', "~1");
                    if !hidden_characters(key).is_empty() {
                        out.push((format!("{pointer}/{escaped}"), key));
                    }
                    walk(member, format!("{pointer}/{escaped}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}

/// The characters of `text` that render as nothing or reorder what is shown: Unicode tag
/// characters, zero-width characters and bidirectional controls.
pub(super) fn hidden_characters(text: &str) -> Vec<(char, &'static str)> {
    text.chars()
        .filter_map(|c| {
            let code = u32::from(c);
            if (0xE0000..=0xE007F).contains(&code) {
                Some((c, "tag"))
            } else if detect::is_zero_width(c) {
                Some((c, "zero-width"))
            } else if (0x202A..=0x202E).contains(&code) || (0x2066..=0x2069).contains(&code) {
                Some((c, "bidi"))
            } else {
                None
            }
        })
        .collect()
}

pub(super) fn kinds_of(hidden: &[(char, &'static str)]) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = Vec::new();
    for (_, kind) in hidden {
        if !kinds.contains(kind) {
            kinds.push(kind);
        }
    }
    kinds
}
