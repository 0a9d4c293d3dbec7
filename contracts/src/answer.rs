//! What a tool's answer achieved, judged from the answer itself (SPEC §3.5).
//!
//! A call does the tool's job only when its answer does: not a JSON-RPC error, not a result
//! flagged `isError`, and not an error told in the result's text. Many real servers report a
//! refusal as a plain result ("Error: no such table", "Task not found",
//! `{"error": "client not initialized"}`), and a cell that rests on such calls proves
//! nothing. [`judge`] reads a result and says which [`Answer`] it is; the harness records
//! the judgement with each call, so that a later classifier does not silently change what
//! old receipts say.
//!
//! The text rules read only an answer's opening and, for short answers, a few failure
//! phrases: a long answer that merely mentions an error (a log, a search over issues) is an
//! answer. Each rule is a class of refusal seen on real servers, in the languages servers
//! answer in; the cases live in `tests/data/answers/`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a call's answer achieved, from worst to best: the best of a tool's calls is what
/// the tool achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// No answer: the call timed out or its session ended first.
    NoAnswer,
    /// A JSON-RPC error.
    RpcError,
    /// A result flagged `isError`.
    ToolError,
    /// A result not flagged, whose text tells an error.
    ToldError,
    /// A result that found nothing ("No results found", `[]`): the job done, on nothing.
    Empty,
    /// A result that does the job.
    Answered,
}

impl Answer {
    /// Whether the call did the tool's job: only such calls back a `refuted`.
    pub fn succeeded(self) -> bool {
        matches!(self, Answer::Empty | Answer::Answered)
    }

    /// The stable name (the JSON value).
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::NoAnswer => "no_answer",
            Answer::RpcError => "rpc_error",
            Answer::ToolError => "tool_error",
            Answer::ToldError => "told_error",
            Answer::Empty => "empty",
            Answer::Answered => "answered",
        }
    }
}

/// Judges a tool result (the `result` object of a `tools/call` answer).
pub fn judge(result: &Value) -> Answer {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Answer::ToolError;
    }
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| {
            c.get("type")
                .and_then(Value::as_str)
                .is_none_or(|t| t == "text")
        })
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    let others = result
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|items| items.len() > texts.len());
    if let Some(structured) = result.get("structuredContent")
        && json_tells_error(structured)
    {
        return Answer::ToldError;
    }
    // An image, a resource or an audio part is an answer whatever text goes with it.
    if others {
        return Answer::Answered;
    }
    match texts.as_slice() {
        [] => Answer::Answered,
        [one] => judge_text(one),
        // A refusal told in the first part; else the parts read as one answer.
        [first, ..] => match judge_text(first) {
            Answer::ToldError => Answer::ToldError,
            _ => judge_text(&texts.join("\n")),
        },
    }
}

/// Judges the text of a result that is not flagged `isError`.
pub fn judge_text(text: &str) -> Answer {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Answer::Answered;
    }
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(value) = serde_json::from_str::<Value>(trimmed)
    {
        return judge_json(&value);
    }
    let head = opening(trimmed);
    if SUCCESS_LEADS.iter().any(|lead| head.starts_with(lead)) {
        return Answer::Answered;
    }
    if error_lead(&head) {
        return Answer::ToldError;
    }
    let short = trimmed.chars().count() <= SHORT && trimmed.lines().count() <= 2;
    if short {
        let lower = trimmed.to_lowercase();
        match found_none(&lower) {
            Some(Nothing::Many) => return Answer::Empty,
            Some(Nothing::One) => return Answer::ToldError,
            None => {}
        }
        if FAILURE_PHRASES.iter().any(|p| lower.contains(p)) {
            return Answer::ToldError;
        }
    }
    Answer::Answered
}

/// A JSON answer: an object that reports an error (`error`, `success: false`, `status:
/// "error"`), an empty list or object, or an answer.
fn judge_json(value: &Value) -> Answer {
    if json_tells_error(value) {
        return Answer::ToldError;
    }
    match value {
        Value::Array(items) if items.is_empty() => Answer::Empty,
        Value::Object(map) if map.is_empty() => Answer::Empty,
        _ => Answer::Answered,
    }
}

/// Whether a JSON object reports an error at its top level.
fn json_tells_error(value: &Value) -> bool {
    let Value::Object(map) = value else {
        return false;
    };
    map.iter().any(|(key, value)| {
        let key: String = key
            .chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect();
        match key.as_str() {
            "error" | "errors" | "errormessage" | "errormsg" | "err" | "exception" => truthy(value),
            "iserror" => value.as_bool() == Some(true),
            "success" | "ok" | "succeeded" => value.as_bool() == Some(false),
            "status" | "state" | "result" => value.as_str().is_some_and(|s| {
                matches!(
                    s.to_lowercase().as_str(),
                    "error" | "failed" | "failure" | "fail" | "fatal"
                )
            }),
            _ => false,
        }
    })
}

/// Whether a JSON value carries something: not null, false, empty or zero.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.trim().is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

/// At most this many characters make a short answer, whose whole text the failure phrases
/// read.
const SHORT: usize = 240;

/// The answer's first line, lower-cased, without the decoration servers put before it
/// (`❌`, `**`, `[`, `#`, `>`), its first characters at most.
fn opening(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    let stripped = first.trim_start_matches(|c: char| !c.is_alphanumeric());
    stripped
        .chars()
        .take(120)
        .flat_map(char::to_lowercase)
        .collect()
}

/// Openings that say the job was done, whatever follows ("Successfully deleted; 0 errors").
const SUCCESS_LEADS: [&str; 5] = ["success", "succeeded", "done", "ok ", "completed"];

/// Whether an answer's opening is an error's: a word that only opens refusals, or
/// `error` followed by what an error message has after it.
fn error_lead(head: &str) -> bool {
    if ERROR_LEADS.iter().any(|lead| head.starts_with(lead)) {
        return true;
    }
    for word in ["error", "fehler", "erreur", "erro", "ошибка"] {
        let Some(rest) = head.strip_prefix(word) else {
            continue;
        };
        let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        let next = rest.chars().next();
        if next.is_none_or(|c| {
            matches!(
                c,
                ':' | '!' | '-' | '—' | '(' | '[' | '.' | ',' | '：' | '*' | '`' | '"'
            )
        }) {
            return true;
        }
        let following = rest.split_whitespace().next().unwrap_or("");
        if rest.starts_with(' ') && ERROR_FOLLOWERS.contains(&following.trim_end_matches(':')) {
            return true;
        }
    }
    false
}

/// Openings that only refusals have.
const ERROR_LEADS: [&str; 45] = [
    "errors:",
    "exception",
    "traceback (most recent call last)",
    "failed",
    "failure",
    "fail:",
    "unable to",
    "cannot ",
    "can't ",
    "can not ",
    "could not",
    "couldn't",
    "invalid ",
    "invalid:",
    "no such ",
    "unknown tool",
    "unknown action",
    "unknown command",
    "unknown operation",
    "missing required",
    "missing argument",
    "missing parameter",
    "permission denied",
    "access denied",
    "not found",
    "unauthorized",
    "forbidden",
    "mcp error",
    "something went wrong",
    "an error occurred",
    "an unexpected error",
    "unexpected error",
    "internal error",
    "internal server error",
    "request failed",
    "not authenticated",
    "authentication failed",
    // Other languages: an opening that only refusals have.
    "错误",
    "失败",
    "无法",
    "エラー",
    "失敗",
    "échec",
    "오류",
    "실패",
];

/// Words that follow `error` at the start of a refusal ("Error reading file", "Error in
/// query"), unlike answers that open with the word as a topic ("Error rate: 2 %").
const ERROR_FOLLOWERS: [&str; 27] = [
    "occurred",
    "while",
    "in",
    "during",
    "reading",
    "writing",
    "executing",
    "calling",
    "fetching",
    "processing",
    "creating",
    "loading",
    "parsing",
    "getting",
    "opening",
    "running",
    "retrieving",
    "searching",
    "updating",
    "deleting",
    "connecting",
    "from",
    "when",
    "with",
    "code",
    "executing",
    "listing",
];

/// Phrases that, in a short answer, tell that the call failed.
const FAILURE_PHRASES: [&str; 40] = [
    "not found",
    "does not exist",
    "doesn't exist",
    "do not exist",
    "is required",
    "are required",
    "not initialized",
    "not initialised",
    "not allowed",
    "not permitted",
    "no such",
    "failed to",
    "failed:",
    "is not a valid",
    "is invalid",
    "out of range",
    "out of bounds",
    "not supported",
    "permission denied",
    "access denied",
    "timed out",
    "not connected",
    "not configured",
    "not authenticated",
    "cannot be",
    "could not",
    "unable to",
    // Other languages.
    "未找到",
    "找不到",
    "不存在",
    "见つかりません",
    "見つかりません",
    "nicht gefunden",
    "existiert nicht",
    "introuvable",
    "n'existe pas",
    "не найден",
    "não encontrado",
    "no encontrado",
    "찾을 수 없",
];

/// What a short answer that says nothing was found speaks of.
enum Nothing {
    /// A search or listing found nothing: "No results found", "No notes match", "0
    /// results", "Nothing found".
    Many,
    /// One named thing is missing: "No file found at x" — a refusal.
    One,
}

/// Whether (and how) a short answer says nothing was found.
fn found_none(lower: &str) -> Option<Nothing> {
    if lower.starts_with("nothing found") || lower.starts_with("0 results") {
        return Some(Nothing::Many);
    }
    let rest = lower.strip_prefix("no ")?;
    let words: Vec<&str> = rest
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let noun = *words.first()?;
    let found = words.iter().take(6).any(|w| {
        matches!(
            *w,
            "found" | "match" | "matched" | "matching" | "available" | "yet" | "exist"
        )
    });
    if !found || noun == "such" {
        return None;
    }
    let plural =
        noun.ends_with('s') || ["data", "information", "content", "output"].contains(&noun);
    Some(if plural { Nothing::Many } else { Nothing::One })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_best_answer_is_the_greatest() {
        let calls = [Answer::RpcError, Answer::Answered, Answer::ToldError];
        assert_eq!(calls.iter().max(), Some(&Answer::Answered));
        assert!(Answer::Empty.succeeded() && !Answer::ToldError.succeeded());
    }

    #[test]
    fn a_flagged_result_is_a_tool_error_and_a_picture_an_answer() {
        let flagged = json!({"isError": true, "content": [{"type": "text", "text": "fine"}]});
        assert_eq!(judge(&flagged), Answer::ToolError);
        let picture = json!({"content": [{"type": "image", "data": "", "mimeType": "image/png"},
            {"type": "text", "text": "Error: cropped"}]});
        assert_eq!(judge(&picture), Answer::Answered);
        let structured = json!({"content": [], "structuredContent": {"success": false}});
        assert_eq!(judge(&structured), Answer::ToldError);
    }
}
