//! The protocol witness of writes (SPEC §3.5): what a tool's own answers to reads of nonce
//! paths prove, whatever the target (the only write witness of a remote server; a second
//! one beside the overlay for contained targets).
//!
//! [`presence`] classifies one answer as absent, present or unknown. [`assess`] takes the
//! witness's three calls of a run (`plan::plan_witness`): the negative control must read
//! absent, or the witness is unusable and its self-test fails; the flip's first read must
//! read absent and its second must be readable; absent then present is a `Created` effect
//! on the flip's path, attributed to the second read, whose returned artefact is the
//! evidence.

use std::path::Path;

use serde_json::{Value, json};
use vac_contracts::evidence::{Evidence, SelfTestEvidence, SensorFacts, WitnessRead, Witnessed};
use vac_contracts::{Attribution, Effect, EffectClass, Sensor, SensorState, SensorStatus};

use super::shown::shown;
use super::vocab::CallRecord;
use super::vocab::Purpose;
use crate::client::CallError;
use vac_contracts::detect::excerpt;

const EXCERPT: usize = 200;

/// Phrasings of "there is nothing at that path", matched case-insensitively in a result's
/// text.
const NOT_FOUND: [&str; 9] = [
    "not found",
    "no such file",
    "does not exist",
    "doesn't exist",
    "not exist",
    "enoent",
    "cannot find",
    "can't find",
    "could not find",
];

/// What one read said about its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presence {
    Absent,
    Present,
    /// Neither: no answer, an answer that is not a tool result, or an empty result.
    Unknown,
}

impl Presence {
    fn as_str(self) -> &'static str {
        match self {
            Presence::Absent => "absent",
            Presence::Present => "present",
            Presence::Unknown => "unknown",
        }
    }
}

/// Classifies a call's answer. Absent: a JSON-RPC error, a result with `isError: true`, or
/// a result whose text says not found (no such file, does not exist, ENOENT, …; this wins
/// over content, so a note that only says "not found" reads absent). Present: any other
/// result with content (a non-empty text, any non-text item, or `structuredContent`).
/// Unknown: no answer (transport failure, timeout), an answer that is not a tool result,
/// or a result with nothing in it.
pub(crate) fn presence(call: &CallRecord) -> Presence {
    let Ok(outcome) = &call.outcome else {
        return Presence::Unknown;
    };
    match (&outcome.error, &outcome.result) {
        (Some(CallError::Rpc { .. }), _) => Presence::Absent,
        (Some(_), _) | (None, None) => Presence::Unknown,
        (None, Some(result)) => presence_of_result(result),
    }
}

/// [`presence`] of a tool result (the `result` object of a `tools/call` answer).
pub(crate) fn presence_of_result(result: &Value) -> Presence {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Presence::Absent;
    }
    let text = text_of(result).to_lowercase();
    if NOT_FOUND.iter().any(|phrase| text.contains(phrase)) {
        return Presence::Absent;
    }
    let items = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let has_content = items.iter().any(|item| match item.get("type") {
        Some(t) if t == "text" => item
            .get("text")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.trim().is_empty()),
        _ => true,
    });
    let structured = result
        .get("structuredContent")
        .is_some_and(|s| !s.is_null());
    if has_content || structured {
        Presence::Present
    } else {
        Presence::Unknown
    }
}

/// The texts of a result's content items, and its structured content, as one string.
fn text_of(result: &Value) -> String {
    let mut text: Vec<String> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|item| item.get("text").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    if let Some(structured) = result.get("structuredContent").filter(|s| !s.is_null()) {
        text.push(structured.to_string());
    }
    text.join("\n")
}

/// What the witness of one run found: its self-test, and the write it saw if any.
#[derive(Debug, Clone)]
pub(crate) struct Assessment {
    pub(crate) status: SensorStatus,
    pub(crate) effect: Option<Effect>,
}

/// Assesses the witness calls among `calls` (one run of one tool); `None` when the run made
/// none. `cwd`, the server's working directory when the harness knows it, turns the flip's
/// relative path into the sandbox path the contract's globs are written against; without
/// it the effect names the path as the server was asked for it.
pub(crate) fn assess(calls: &[CallRecord], run: &str, cwd: Option<&Path>) -> Option<Assessment> {
    let find = |purpose| calls.iter().find(|c| c.purpose == purpose);
    let control = find(Purpose::NegativeControl);
    let first = find(Purpose::FlipFirst);
    let second = find(Purpose::FlipSecond);
    let tool = [control, first, second]
        .into_iter()
        .flatten()
        .next()?
        .tool
        .clone();
    let (control, first, second) = (read(control), read(first), read(second));
    let described = |r: Option<(&CallRecord, Presence)>| r.map(|(c, p)| Box::new(describe(c, p)));
    let detail = |says: &str| SelfTestEvidence {
        run: Some(run.to_owned()),
        self_test: says.to_owned(),
        facts: SensorFacts::Witness {
            negative_control: described(control),
            flip: [described(first), described(second)],
        },
    };
    let unusable = |says: String| Assessment {
        status: SensorStatus {
            sensor: Sensor::ProtocolWitness,
            status: SensorState::Failed {
                reason: says.clone(),
            },
            detail: detail(&says),
            tool: Some(tool.clone()),
        },
        effect: None,
    };
    let (Some(control), Some(first), Some(second)) = (control, first, second) else {
        return Some(unusable(
            "the witness's calls were not all made: witness unusable".into(),
        ));
    };
    if control.1 != Presence::Absent {
        return Some(unusable(format!(
            "negative control read {}: witness unusable",
            control.1.as_str()
        )));
    }
    if first.1 != Presence::Absent {
        return Some(unusable(format!(
            "the flip's first read was {}: witness unusable",
            first.1.as_str()
        )));
    }
    if second.1 == Presence::Unknown {
        return Some(unusable(
            "the flip's second read was unknown: witness unusable".into(),
        ));
    }
    let status = SensorStatus {
        sensor: Sensor::ProtocolWitness,
        status: SensorState::Live,
        detail: detail("negative control read absent"),
        tool: Some(tool),
    };
    let effect = (second.1 == Presence::Present).then(|| {
        let named = nonce_path(&second.0.arguments).unwrap_or_default();
        let path = match cwd {
            Some(cwd) if !named.starts_with('/') => cwd.join(&named).display().to_string(),
            _ => named.clone(),
        };
        Effect {
            class: EffectClass::Created,
            path,
            attribution: Attribution::Call(second.0.index),
            detail: Evidence::Witnessed(Box::new(Witnessed {
                witness: "protocol".into(),
                run: run.to_owned(),
                named,
                first: describe(first.0, first.1),
                second: describe(second.0, second.1),
                negative_control: describe(control.0, control.1),
            })),
            existed_before: false,
        }
    });
    Some(Assessment { status, effect })
}

fn read(call: Option<&CallRecord>) -> Option<(&CallRecord, Presence)> {
    call.map(|c| (c, presence(c)))
}

/// One witness read as evidence: the call, what it read, and the answer (excerpt, blake3
/// of its JSON, size).
fn describe(call: &CallRecord, presence: Presence) -> WitnessRead {
    let answer = shown(call);
    let bytes = answer
        .as_ref()
        .map(|a| serde_json::to_vec(a).unwrap_or_default());
    let text = answer.as_ref().map(|a| match a.get("content") {
        Some(_) => text_of(a),
        None => a.to_string(),
    });
    WitnessRead {
        call: call.index,
        arguments: Value::Object(call.arguments.clone()),
        presence: presence.as_str().to_owned(),
        excerpt: text.map(|t| excerpt(&t, EXCERPT)),
        blake3: bytes.as_ref().map(|b| blake3::hash(b).to_hex().to_string()),
        bytes: bytes.as_ref().map(Vec::len),
    }
}

/// The nonce path a witness call named (a string argument, or an item of a list one).
fn nonce_path(arguments: &serde_json::Map<String, Value>) -> Option<String> {
    arguments.values().find_map(|value| {
        let candidates = match value {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        candidates
            .into_iter()
            .filter_map(Value::as_str)
            .find(|s| super::effects::names_a_nonce(s))
            .map(str::to_string)
    })
}

/// The witness of a run for its summary: its status and reason, or null without one.
pub(crate) fn summary(calls: &[CallRecord], run: &str) -> Value {
    match assess(calls, run, None) {
        None => Value::Null,
        Some(assessment) => match assessment.status.status {
            SensorState::Live => json!({"status": "live", "wrote": assessment.effect.is_some()}),
            SensorState::Failed { reason } | SensorState::Blind { reason } => {
                json!({"status": "failed", "reason": reason})
            }
            SensorState::CapabilityAbsent => json!({"status": "capability_absent"}),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::client::CallOutcome;

    fn outcome(
        result: Option<Value>,
        error: Option<CallError>,
    ) -> Result<CallOutcome, crate::probe::vocab::SessionFailed> {
        Ok(CallOutcome {
            request_id: json!(1),
            result,
            error,
            requested_at: Duration::ZERO,
            answered_at: Duration::ZERO,
            asked: Vec::new(),
        })
    }

    fn text(t: &str) -> Value {
        json!({"content": [{"type": "text", "text": t}]})
    }

    fn call(index: usize, purpose: Purpose, path: &str, answer: Value) -> CallRecord {
        CallRecord {
            index,
            repeat_of: None,
            repeat_state: Vec::new(),
            revised: None,
            answer: None,
            unanswered: None,
            purpose,
            tool: "open_note".into(),
            arguments: json!({"path": path}).as_object().unwrap().clone(),
            outcome: outcome(Some(answer), None),
        }
    }

    #[test]
    fn results_classify_as_absent_present_or_unknown() {
        use Presence::*;
        let cases = [
            (
                json!({"isError": true, "content": [{"type": "text", "text": "denied"}]}),
                Absent,
            ),
            (text("note not found: notes/x.md"), Absent),
            (text("ENOENT: open 'notes/x.md'"), Absent),
            (
                text("Error: No such file or directory (os error 2)"),
                Absent,
            ),
            (text("The file notes/x.md does not exist."), Absent),
            (text("I couldn't find it — it doesn't exist"), Absent),
            (text("placeholder\n"), Present),
            (
                json!({"isError": false, "content": [{"type": "image", "data": "", "mimeType": "image/png"}]}),
                Present,
            ),
            (
                json!({"content": [], "structuredContent": {"text": "hello"}}),
                Present,
            ),
            (
                json!({"content": [], "structuredContent": {"error": "file not found"}}),
                Absent,
            ),
            // Ambiguous: nothing in it, or only whitespace.
            (json!({"content": []}), Unknown),
            (text("  \n"), Unknown),
            (json!({}), Unknown),
            // A note whose text is a not-found phrasing reads absent: the phrase wins.
            (text("# Lost and found\nThe key was not found."), Absent),
        ];
        for (result, want) in cases {
            assert_eq!(presence_of_result(&result), want, "{result}");
        }
    }

    #[test]
    fn answers_other_than_results_classify_by_kind() {
        let mut record = call(0, Purpose::NegativeControl, "notes/x.md", json!({}));
        let rpc = CallError::Rpc {
            code: -32602,
            message: "bad path".into(),
            data: None,
        };
        record.outcome = outcome(None, Some(rpc));
        assert_eq!(presence(&record), Presence::Absent);
        record.outcome = outcome(
            None,
            Some(CallError::Timeout {
                after: Duration::from_secs(1),
            }),
        );
        assert_eq!(presence(&record), Presence::Unknown);
        record.outcome = Err(crate::probe::vocab::SessionFailed(
            "the server closed its stdout".into(),
        ));
        assert_eq!(presence(&record), Presence::Unknown);
    }

    fn witness(control: Value, first: Value, second: Value) -> Option<Assessment> {
        let calls = [
            call(4, Purpose::Normal, "notes/welcome.md", text("# Welcome")),
            call(
                5,
                Purpose::NegativeControl,
                "notes/vac-nonce-a-0-control.md",
                control,
            ),
            call(6, Purpose::FlipFirst, "notes/vac-nonce-a-0-flip.md", first),
            call(
                7,
                Purpose::FlipSecond,
                "notes/vac-nonce-a-0-flip.md",
                second,
            ),
        ];
        assess(&calls, "run-1", Some(Path::new("/lab/work")))
    }

    #[test]
    fn absent_then_present_is_a_write_with_the_returned_artefact() {
        let missing =
            json!({"isError": true, "content": [{"type": "text", "text": "note not found"}]});
        let found = witness(missing.clone(), missing, text("placeholder\n")).unwrap();
        assert_eq!(found.status.status, SensorState::Live);
        assert_eq!(found.status.tool.as_deref(), Some("open_note"));
        let status = serde_json::to_value(&found.status.detail).unwrap();
        assert_eq!(status["negative_control"]["presence"], "absent");
        let effect = found.effect.unwrap();
        assert_eq!(effect.class, EffectClass::Created);
        assert_eq!(effect.path, "/lab/work/notes/vac-nonce-a-0-flip.md");
        assert_eq!(effect.attribution, Attribution::Call(7));
        let Evidence::Witnessed(_) = &effect.detail else {
            panic!("not the protocol witness's evidence: {:?}", effect.detail)
        };
        let detail = effect.detail.to_value();
        assert_eq!(detail["named"], "notes/vac-nonce-a-0-flip.md");
        assert_eq!(detail["first"]["presence"], "absent");
        assert_eq!(detail["second"]["presence"], "present");
        assert_eq!(detail["second"]["excerpt"], "placeholder\n");
        let hash = blake3::hash(&serde_json::to_vec(&text("placeholder\n")).unwrap());
        assert_eq!(detail["second"]["blake3"], hash.to_hex().as_str());
        assert_eq!(detail["negative_control"]["call"], 5);
    }

    #[test]
    fn absent_twice_is_a_live_witness_without_a_write() {
        let missing = text("no such file");
        let clean = witness(missing.clone(), missing.clone(), missing).unwrap();
        assert_eq!(clean.status.status, SensorState::Live);
        assert!(clean.effect.is_none());
    }

    #[test]
    fn a_present_negative_control_makes_the_witness_unusable_and_says_so() {
        let everything = text("sunny");
        let unusable = witness(everything.clone(), everything.clone(), everything).unwrap();
        assert_eq!(
            unusable.status.status,
            SensorState::Failed {
                reason: "negative control read present: witness unusable".into()
            }
        );
        assert!(unusable.effect.is_none());
        let empty = witness(json!({"content": []}), text("x"), text("x")).unwrap();
        assert!(
            matches!(empty.status.status, SensorState::Failed { reason } if reason.contains("read unknown"))
        );
        let flip_unknown = witness(text("not found"), text("not found"), json!({})).unwrap();
        assert!(matches!(
            flip_unknown.status.status,
            SensorState::Failed { .. }
        ));
    }

    #[test]
    fn runs_without_witness_calls_have_no_witness() {
        let calls = [call(0, Purpose::Normal, "notes/welcome.md", text("hi"))];
        assert!(assess(&calls, "run", None).is_none());
        assert_eq!(summary(&calls, "run"), Value::Null);
        let partial = [call(
            0,
            Purpose::NegativeControl,
            "notes/vac-nonce-x.md",
            text("not found"),
        )];
        let broken = assess(&partial, "run", None).unwrap();
        assert!(matches!(broken.status.status, SensorState::Failed { .. }));
    }
}
