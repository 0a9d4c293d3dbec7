//! Conformance findings (SPEC §3.3, the protocol row): where the server's messages break
//! JSON-RPC or MCP, read from the recorded frames and runs, so that they are data in the
//! report and regenerate from the receipts. None is a violation of a tool's promise; none
//! fails a run by itself. Each is counted, with its first occurrence: bounded whatever
//! the server sends.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};
use vac_contracts::detect::manifest_drift;

use super::vocab::RunOutput;
use crate::client::{Parsed, parse_line};

/// One kind of finding: its id, what a confirmed one says, what a refuted one says.
struct Kind {
    id: &'static str,
    found: &'static str,
    clean: &'static str,
}

const RESPONSE_ID: Kind = Kind {
    id: "protocol.response_ids",
    found: "response(s) carried an id the client had not sent in that session, never or not yet",
    clean: "every response answered a request the client had sent",
};
const NOTIFICATION_ID: Kind = Kind {
    id: "protocol.notification_ids",
    found: "notification(s) carried an id, which makes them requests",
    clean: "no notification carried an id",
};
const MALFORMED: Kind = Kind {
    id: "protocol.jsonrpc_valid",
    found: "message(s) named JSON-RPC but were not valid JSON-RPC 2.0",
    clean: "every JSON message was valid JSON-RPC 2.0",
};
const OVERSIZED: Kind = Kind {
    id: "protocol.frame_size",
    found: "message(s) were cut at the line cap or were larger than the receipts keep whole (kept as a prefix)",
    clean: "every message was within the caps and kept whole",
};
const UNANNOUNCED: Kind = Kind {
    id: "protocol.list_changed_announced",
    found: "session(s) saw tools/list change with no notifications/tools/list_changed",
    clean: "tools/list never changed within a session without notifications/tools/list_changed",
};

/// The findings in the order the report gives them.
const KINDS: [&Kind; 5] = [
    &RESPONSE_ID,
    &NOTIFICATION_ID,
    &MALFORMED,
    &OVERSIZED,
    &UNANNOUNCED,
];

/// How often one kind was seen, and where first.
#[derive(Debug, Default, Clone)]
struct Seen {
    count: u64,
    first: Option<Value>,
}

/// The findings of one receipt log, built frame by frame as it is read.
#[derive(Debug, Default, Clone)]
pub(crate) struct Conformance {
    /// The ids of the requests the client sent, per run (as JSON text), with the record
    /// of the first that carried each.
    sent: BTreeMap<String, HashMap<String, u64>>,
    /// Responses of each run, to check against `sent` once the run's frames are all read:
    /// (id, seq, excerpt). Bounded: a run keeps at most [`MAX_PENDING`].
    answered: BTreeMap<String, Vec<(String, u64, String)>>,
    seen: BTreeMap<&'static str, Seen>,
}

/// Responses kept per run for the id check; a server that sends more is judged on these.
const MAX_PENDING: usize = 100_000;
const EXCERPT: usize = 200;

impl Conformance {
    /// A frame the client sent (record `seq`): a request's id is one a response may carry
    /// from then on.
    pub(crate) fn sent(&mut self, run: &str, seq: u64, bytes: &[u8]) {
        let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
            return;
        };
        if value.get("method").is_some()
            && let Some(id) = value.get("id")
        {
            self.sent
                .entry(run.to_owned())
                .or_default()
                .entry(id.to_string())
                .or_insert(seq);
        }
    }

    /// A frame the server sent, kept whole; when it is text that is not JSON-RPC (stdout's
    /// noise), why not, so that the frame is parsed once.
    pub(crate) fn received(&mut self, run: &str, seq: u64, bytes: &[u8]) -> Option<String> {
        let text = || excerpt(bytes);
        match parse_line(bytes) {
            Parsed::Garbage(why) => self.note(&MALFORMED, run, seq, text(), Some(why)),
            Parsed::Message(_) | Parsed::UnknownNotification => {
                let head = Head::of(bytes)?;
                if head.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
                    let why = "no \"jsonrpc\": \"2.0\"".to_owned();
                    self.note(&MALFORMED, run, seq, text(), Some(why));
                }
                let method = head.method.as_ref().and_then(Value::as_str);
                match (method, &head.id) {
                    (Some(method), Some(_)) if method.starts_with("notifications/") => {
                        self.note(&NOTIFICATION_ID, run, seq, text(), None)
                    }
                    // JSON-RPC answers with a null id an error whose request it could not
                    // read; servers use it for errors outside any request (an HTTP 400).
                    (None, Some(Value::Null)) if head.error => {}
                    (None, Some(id)) => {
                        let pending = self.answered.entry(run.to_owned()).or_default();
                        if pending.len() < MAX_PENDING {
                            pending.push((id.to_string(), seq, text()));
                        }
                    }
                    _ => {}
                }
            }
            Parsed::Noise(why) => return Some(why),
            Parsed::Blank => {}
        }
        None
    }

    /// A frame the server sent that the receipts keep only a prefix of.
    pub(crate) fn truncated(&mut self, run: &str, seq: u64, len: u64) {
        let why = format!("{len} bytes");
        self.note(&OVERSIZED, run, seq, String::new(), Some(why));
    }

    /// The findings of the log whose frames were given and whose runs are `runs`.
    pub(crate) fn findings(&self, runs: &[RunOutput]) -> Vec<Value> {
        let mut seen = self.seen.clone();
        let none = HashMap::new();
        // A run whose frame log dropped frames may have sent ids the receipts lack.
        let whole = |run: &str| {
            runs.iter()
                .find(|r| r.id == run)
                .is_none_or(|r| r.frame_stats.frames_dropped == 0)
        };
        for (run, responses) in self.answered.iter().filter(|(run, _)| whole(run)) {
            let sent = self.sent.get(run).unwrap_or(&none);
            for (id, seq, text) in responses {
                // The client's frame is recorded before it is written: an answer recorded
                // first came before its request.
                let why = match sent.get(id) {
                    None => format!("{id} was never sent"),
                    Some(asked) if asked > seq => format!("{id} was answered before it was sent"),
                    Some(_) => continue,
                };
                note(&mut seen, &RESPONSE_ID, run, *seq, text.clone(), Some(why));
            }
        }
        for run in runs {
            let before = run.tools.as_ref().and_then(|t| t.raw.as_array());
            let after = match &run.later_tools {
                Some(Ok(later)) => later.as_array(),
                _ => None,
            };
            if let (Some(before), Some(after)) = (before, after)
                && run.list_changed == 0
                && let Some(drift) = manifest_drift(before, after).first()
            {
                let why = format!("tool {} \"{}\"", drift.tool, drift.change().as_str());
                note(
                    &mut seen,
                    &UNANNOUNCED,
                    &run.id,
                    0,
                    String::new(),
                    Some(why),
                );
            }
        }
        KINDS
            .iter()
            .map(|kind| {
                let found = seen.get(kind.id).cloned().unwrap_or_default();
                json!({
                    "id": kind.id,
                    "verdict": if found.count > 0 { "confirmed" } else { "refuted" },
                    "reason": match found.count {
                        0 => kind.clean.to_owned(),
                        n => format!("{n} {}", kind.found),
                    },
                    "count": found.count,
                    "first": found.first,
                })
            })
            .collect()
    }

    fn note(&mut self, kind: &Kind, run: &str, seq: u64, text: String, why: Option<String>) {
        note(&mut self.seen, kind, run, seq, text, why);
    }
}

fn note(
    seen: &mut BTreeMap<&'static str, Seen>,
    kind: &Kind,
    run: &str,
    seq: u64,
    text: String,
    why: Option<String>,
) {
    let entry = seen.entry(kind.id).or_default();
    entry.count += 1;
    if entry.first.is_none() {
        let mut first = json!({"run": run, "excerpt": text});
        if seq > 0 {
            first["seq"] = json!(seq);
        }
        if let Some(why) = why {
            first["why"] = json!(why);
        }
        entry.first = Some(first);
    }
}

/// The members of a message conformance looks at, read without building the rest (a
/// listing's tools, a result's content): a member present with `null` is `Some(Null)`.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(default, deserialize_with = "present")]
    jsonrpc: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    method: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "flag")]
    error: bool,
}

impl Head {
    /// The head of a JSON text; one the short reading refuses (not an object, a member given
    /// twice) is read whole, as a JSON value (which keeps the last of each member).
    fn of(bytes: &[u8]) -> Option<Head> {
        // Only an object: a derived reading would take an array's items as the members.
        let object = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        if let Some(head) = object
            .then(|| serde_json::from_slice::<Head>(bytes).ok())
            .flatten()
        {
            return Some(head);
        }
        let value = serde_json::from_slice::<Value>(bytes).ok()?;
        Some(Head {
            jsonrpc: value.get("jsonrpc").cloned(),
            method: value.get("method").cloned(),
            id: value.get("id").cloned(),
            error: value.get("error").is_some(),
        })
    }
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    serde::Deserialize::deserialize(d).map(Some)
}

fn flag<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    <serde::de::IgnoredAny as serde::Deserialize>::deserialize(d).map(|_| true)
}

fn excerpt(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .trim_end()
        .chars()
        .take(EXCERPT)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::client::ToolList;
    use crate::probe::vocab::Role;

    fn finding<'a>(findings: &'a [Value], id: &str) -> &'a Value {
        findings.iter().find(|f| f["id"] == id).unwrap()
    }

    #[test]
    fn each_fault_is_counted_with_its_first_record_and_a_clean_log_refutes_all() {
        let mut log = Conformance::default();
        let frame = |v: Value| v.to_string().into_bytes();
        log.sent(
            "r",
            1,
            &frame(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
        );
        log.received(
            "r",
            2,
            &frame(json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
        );
        let clean = log.findings(&[]);
        assert_eq!(clean.len(), KINDS.len());
        assert!(
            clean.iter().all(|f| f["verdict"] == "refuted"),
            "{clean:#?}"
        );

        // An answer to id 2 before the client sent it, one to an id never sent.
        log.received(
            "r",
            3,
            &frame(json!({"jsonrpc": "2.0", "id": 2, "result": {}})),
        );
        log.sent(
            "r",
            4,
            &frame(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call"})),
        );
        log.received(
            "r",
            5,
            &frame(json!({"jsonrpc": "2.0", "id": 99, "result": {}})),
        );
        // An error with a null id answers no request in particular.
        log.received("r", 5, &frame(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Bad Request"}})));
        // The client's own answers to the server are not requests.
        log.sent(
            "r",
            6,
            &frame(json!({"jsonrpc": "2.0", "id": 7, "result": {}})),
        );
        log.received(
            "r",
            7,
            &frame(json!({"jsonrpc": "2.0", "id": 7, "result": {}})),
        );
        log.received(
            "r",
            8,
            &frame(json!({"jsonrpc": "2.0", "id": 5, "method": "notifications/message"})),
        );
        log.received("r", 9, &frame(json!({"method": "notifications/progress"})));
        log.truncated("r", 10, 9_000_000);

        let mut run = RunOutput::blank("r".into(), Role::Subject, Some("t"));
        let listed = json!([{"name": "t", "inputSchema": {"type": "object"}}]);
        run.tools = Some(ToolList::from_raw(listed, Vec::new(), 1, true));
        let grown = json!([{"name": "t", "inputSchema": {"type": "object"}},
                           {"name": "u", "inputSchema": {"type": "object"}}]);
        run.later_tools = Some(Ok(Arc::new(grown)));
        let found = log.findings(std::slice::from_ref(&run));

        let ids = finding(&found, "protocol.response_ids");
        assert_eq!(ids["count"], 3, "{ids:#}");
        assert_eq!(ids["first"]["why"], "2 was answered before it was sent");
        assert_eq!(ids["first"]["seq"], 3);
        let noted = finding(&found, "protocol.notification_ids");
        assert_eq!(
            (noted["count"].as_u64(), &noted["first"]["seq"]),
            (Some(1), &json!(8))
        );
        let malformed = finding(&found, "protocol.jsonrpc_valid");
        assert_eq!(malformed["first"]["seq"], 9, "{malformed:#}");
        assert_eq!(
            finding(&found, "protocol.frame_size")["first"]["why"],
            "9000000 bytes"
        );
        let unannounced = finding(&found, "protocol.list_changed_announced");
        assert_eq!(unannounced["verdict"], "confirmed");
        assert!(
            unannounced["first"]["why"]
                .as_str()
                .unwrap()
                .contains("tool u")
        );

        // Announced, the same change is no finding.
        run.list_changed = 1;
        let found = log.findings(std::slice::from_ref(&run));
        assert_eq!(
            finding(&found, "protocol.list_changed_announced")["verdict"],
            "refuted"
        );
    }
}
