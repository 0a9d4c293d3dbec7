//! vac's stand-in for the model behind `sampling/createMessage`. A server that suspects an
//! audit can ask twice and compare, or time the answer: a fixed sentence returned at once is
//! no model. So the reply takes up what was asked — a summary, key points, a label, an
//! answer, a review — in words drawn from the request, opened in one of a few ways, after a
//! model's latency; and it always carries the probe's token sentence, so that where the
//! server sends the answer next is seen.

use std::time::Duration;

/// Words too common to name a topic.
const STOP: &[&str] = &[
    "about",
    "above",
    "after",
    "again",
    "also",
    "and",
    "any",
    "are",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "can",
    "could",
    "does",
    "doing",
    "down",
    "each",
    "few",
    "for",
    "from",
    "further",
    "have",
    "having",
    "here",
    "into",
    "just",
    "more",
    "most",
    "only",
    "other",
    "over",
    "please",
    "same",
    "should",
    "some",
    "such",
    "than",
    "that",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "under",
    "until",
    "very",
    "what",
    "when",
    "where",
    "which",
    "while",
    "will",
    "with",
    "would",
    "your",
    "yours",
    "text",
    "following",
    "given",
    "user",
    "request",
    "respond",
    "response",
    "answer",
    "write",
    "make",
    "sure",
    "using",
    // What is asked, not what it is about.
    "summarize",
    "summarise",
    "summary",
    "extract",
    "points",
    "list",
    "classify",
    "sentiment",
    "label",
    "translate",
    "review",
    "check",
    "verify",
    "approve",
    "confirm",
    "tell",
    "give",
    "show",
    "find",
    "explain",
    "describe",
];

/// A number from the request and the reply's place in the session, to pick among forms.
fn pick(request: &str, nth: usize, salt: &str) -> u64 {
    let hash = blake3::hash(format!("{salt}:{nth}:{request}").as_bytes());
    u64::from_le_bytes(hash.as_bytes()[..8].try_into().unwrap_or_default())
}

/// Up to `n` words that name what the request is about, first seen first.
fn topics(request: &str, n: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in request.split(|c: char| !c.is_alphanumeric() && c != '-') {
        let word = word.trim_matches('-').to_lowercase();
        let content = word.chars().count() >= 4
            && word.chars().all(char::is_alphabetic)
            && !STOP.contains(&word.as_str());
        if content && !out.contains(&word) {
            out.push(word);
            if out.len() == n {
                break;
            }
        }
    }
    out
}

fn joined(words: &[String]) -> String {
    match words {
        [] => "what you sent".to_owned(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The reply's opening: what the request asked for, taken up in its own words.
fn lead(request: &str, nth: usize) -> String {
    let lower = request.to_lowercase();
    let words = topics(request, 4);
    let topic = joined(&words[..words.len().min(2)]);
    let choose = |forms: &[String]| {
        forms[(pick(request, nth, "form") % forms.len() as u64) as usize].clone()
    };
    let has = |keys: &[&str]| keys.iter().any(|k| lower.contains(k));
    let question = lower.trim_end().ends_with('?')
        || [
            "what ", "how ", "why ", "which ", "can ", "is ", "does ", "should ",
        ]
        .iter()
        .any(|q| lower.trim_start().starts_with(q));
    if has(&["summar", "tl;dr", "condense"]) {
        choose(&[
            format!(
                "Here's a short summary: it mainly covers {}.",
                joined(&words)
            ),
            format!(
                "In short, the text is about {topic}, with most of the detail on {}.",
                words.last().map_or("the specifics", String::as_str)
            ),
        ])
    } else if has(&["list", "extract", "bullet", "key points"]) {
        let points: Vec<String> = words.iter().map(|w| format!("- {w}")).collect();
        choose(&[
            format!("Here are the key points:\n{}", points.join("\n")),
            format!("The main items I found:\n{}", points.join("\n")),
        ])
    } else if has(&["classif", "categor", "sentiment", "label", "tag "]) {
        let label =
            ["neutral", "informational", "positive"][(pick(request, nth, "label") % 3) as usize];
        choose(&[
            format!("Label: {label}. It is mainly about {topic}."),
            format!("I'd classify this as {label} (topic: {topic})."),
        ])
    } else if has(&["translat"]) {
        choose(&[format!(
            "Here is the translation, keeping the terms {topic} as they are."
        )])
    } else if has(&["review", "check", "verify", "approve", "confirm"]) {
        choose(&[
            format!("I reviewed it: nothing about {topic} looks wrong, so it can go ahead."),
            format!("Looks fine to me. I checked {topic} and found no problem."),
        ])
    } else if question {
        choose(&[
            format!("Short answer: it depends on {topic}, but in most cases yes."),
            format!("Good question. For {topic}, the usual approach works well here."),
        ])
    } else {
        choose(&[
            format!("Sure, I've gone through the request about {topic}."),
            format!("Done. I worked through {topic} as asked."),
            format!("Okay, here is my take on {topic}."),
        ])
    }
}

/// The reply to the session's `nth` request (from 0) whose messages' text is `request`,
/// closed by `token_sentence`; every second one also quotes the request back, as a model
/// that repeats what it is asked would (a server that has the model repeat a secret gets it
/// back, and where it sends it next is seen).
pub(super) fn reply(request: &str, token_sentence: &str, nth: usize) -> String {
    let text = format!("{}\n\n{token_sentence}", lead(request, nth));
    match nth % 2 {
        0 => text,
        _ => format!("{text}\n\n{request}"),
    }
}

/// How long a model takes to give `reply`: `base` scaled between 0.6 and 1.4 by the
/// request, and 15 ms per word of the reply; nothing when `base` is zero.
pub(super) fn latency(base: Duration, request: &str, reply: &str, nth: usize) -> Duration {
    if base.is_zero() {
        return Duration::ZERO;
    }
    let scale = 0.6 + 0.8 * (pick(request, nth, "latency") % 1000) as f64 / 1000.0;
    base.mul_f64(scale) + Duration::from_millis(15) * reply.split_whitespace().count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two different requests get different replies that take up their words; the token
    /// sentence closes each; the latency is a model's, not an instant.
    #[test]
    fn replies_take_up_the_request_and_differ_between_requests() {
        let token = "The reference for this step is Q7x.";
        let cases = [
            (
                "Summarize this changelog: parser rewrite, faster indexing, new exporter.",
                "parser",
            ),
            (
                "Extract the key points from the meeting notes about budget and hiring.",
                "budget",
            ),
            (
                "Classify the sentiment of this review of the coffee grinder.",
                "coffee",
            ),
            (
                "What database should the inventory service use?",
                "database",
            ),
            (
                "Please review the deployment plan for the billing service.",
                "deployment",
            ),
        ];
        let mut seen = std::collections::HashSet::new();
        for (request, says) in cases {
            let text = reply(request, token, 0);
            assert!(text.contains(says), "{request}: {text}");
            assert!(text.ends_with(token), "{text}");
            assert!(seen.insert(text.clone()), "the same reply twice: {text}");
            let wait = latency(Duration::from_millis(900), request, &text, 0);
            assert!(
                wait >= Duration::from_millis(500) && wait < Duration::from_secs(3),
                "{wait:?}"
            );
        }
        let again = reply(cases[0].0, token, 1);
        assert!(
            again.ends_with(cases[0].0),
            "the second reply quotes the request: {again}"
        );
        assert_eq!(latency(Duration::ZERO, "x", "y", 0), Duration::ZERO);
    }
}
