//! [`LinkShared`]: the state a session's readers, its transport and its client share —
//! the frame log, the answers awaited, the requests the server asked of the client, the
//! noise seen, and the fault that ended the session — with the caps on each.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
    ServerNotification,
};
use serde_json::Value;
use tokio::sync::watch;

use super::error::Fault;
use super::param_headers::ParamHeaders;

/// State shared by the stdout pump, the transport and the session.
#[derive(Debug)]
pub(crate) struct LinkShared {
    fault: watch::Sender<Option<Fault>>,
    drained: watch::Sender<bool>,
    /// Requests whose raw result JSON the session wants, and the result once it came.
    raw: Mutex<HashMap<RequestId, Option<Value>>>,
    tools_list_changed: AtomicU64,
    noise: Mutex<Noise>,
    /// Requests the server sent the client, and the client's answers written back.
    server_requests: AtomicU64,
    answers_written: AtomicU64,
    /// Requests whose content reaches the model or the user, as the server sent them,
    /// until the session takes them ([`LinkShared::take_asked`]).
    asked: Mutex<Vec<Asked>>,
    /// Such requests sent outside any call, set aside when a call starts
    /// ([`LinkShared::set_aside_asked`]) until the run takes them.
    outside: Mutex<Vec<Asked>>,
    /// The `Mcp-Param-*` declarations of the tools last listed.
    param_headers: Mutex<Arc<ParamHeaders>>,
}

/// A server-to-client request whose content reaches the model or the user
/// (`sampling/createMessage`, `elicitation/create`): what it asked, graded like a result.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Asked {
    pub method: String,
    /// The request's `params` as sent; a string of its first [`MAX_ASKED_BYTES`] when the
    /// request was longer or not an object.
    pub params: Value,
}

impl Asked {
    /// Which request it was, as its evidence names the source: one of [`ASKED_METHODS`].
    pub fn source(&self) -> &'static str {
        ASKED_METHODS
            .into_iter()
            .find(|m| *m == self.method)
            .unwrap_or("request")
    }
}

/// The methods whose requests are kept as [`Asked`].
pub const ASKED_METHODS: [&str; 2] = ["sampling/createMessage", "elicitation/create"];

/// Requests kept per take, at most; the rest are in the frames only.
pub(crate) const MAX_ASKED: usize = 16;

/// Bytes of one request kept whole as JSON.
pub(crate) const MAX_ASKED_BYTES: usize = 256 * 1024;

/// Lines on stdout that were text but not JSON-RPC, skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Noise {
    pub(crate) lines: u64,
    /// The first one: its frame and an excerpt.
    pub(crate) first: Option<(u64, String)>,
}

/// Noise lines a session tolerates; one more is a protocol fault (a server that floods
/// stdout with text costs vac parsing time, not only bytes, which the total cap bounds).
pub(crate) const MAX_NOISE_LINES: u64 = 1024;

/// Requests to the client a session answers; one more is a protocol fault. What bounds
/// vac's memory is [`MAX_UNANSWERED`] (the SDK answers each request in a task of its own,
/// and a server that never reads the answers would hold them all); this bounds the
/// receipts (two frames a request, under the frame log's 100,000) and the time a chatty
/// server takes, while a server that pings its client ten thousand times in each of a few
/// calls of a session is still answered.
pub(crate) const MAX_SERVER_REQUESTS: u64 = 32_768;

/// Requests to the client left unanswered at once, at most: beyond, the server is not
/// reading what vac writes back.
pub(crate) const MAX_UNANSWERED: u64 = 64;

impl LinkShared {
    pub(super) fn new() -> Self {
        Self {
            fault: watch::Sender::new(None),
            drained: watch::Sender::new(false),
            raw: Mutex::new(HashMap::new()),
            tools_list_changed: AtomicU64::new(0),
            noise: Mutex::new(Noise::default()),
            server_requests: AtomicU64::new(0),
            answers_written: AtomicU64::new(0),
            asked: Mutex::new(Vec::new()),
            outside: Mutex::new(Vec::new()),
            param_headers: Mutex::new(Arc::default()),
        }
    }

    /// Keeps the `Mcp-Param-*` declarations of a tools/list (every page).
    pub(crate) fn set_param_headers(&self, tools: &Value) {
        let headers = Arc::new(ParamHeaders::from_tools(tools));
        *self.param_headers.lock().unwrap_or_else(|e| e.into_inner()) = headers;
    }

    /// The declarations of the tools last listed.
    pub(crate) fn param_headers(&self) -> Arc<ParamHeaders> {
        self.param_headers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Counts one noise line; returns how many there have been.
    pub(crate) fn note_noise(&self, frame: u64, line: &[u8]) -> u64 {
        let mut noise = self.noise.lock().unwrap_or_else(|e| e.into_inner());
        noise.lines += 1;
        if noise.first.is_none() {
            let text = String::from_utf8_lossy(line);
            let text = text.trim_end();
            let excerpt: String = text.chars().take(120).collect();
            noise.first = Some((frame, excerpt));
        }
        noise.lines
    }

    pub(crate) fn noise(&self) -> Noise {
        self.noise.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn set_fault(&self, fault: Fault) {
        self.fault.send_if_modified(|current| {
            let first = current.is_none();
            if first {
                *current = Some(fault);
            }
            first
        });
    }

    /// Resolves once a fault is set.
    pub(crate) async fn faulted(&self) {
        let mut rx = self.fault.subscribe();
        let _ = rx.wait_for(Option::is_some).await;
    }

    /// Notes what the session wants from a message before it is delivered: the raw result
    /// of an answer it asked for, a `tools/list_changed`.
    pub(crate) fn observe(&self, message: &ServerJsonRpcMessage, line: &[u8]) {
        match message {
            JsonRpcMessage::Response(response) => self.stash_raw(&response.id, line),
            JsonRpcMessage::Notification(notification)
                if matches!(
                    notification.notification,
                    ServerNotification::ToolListChangedNotification(_)
                ) =>
            {
                self.count_tools_list_changed();
            }
            JsonRpcMessage::Request(_) => {
                self.server_requests.fetch_add(1, Ordering::Relaxed);
                self.keep_asked(line);
            }
            _ => {}
        }
    }

    /// Keeps a request whose content reaches the model, from the server's own bytes.
    fn keep_asked(&self, line: &[u8]) {
        let Ok(request) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let Some(method) = request.get("method").and_then(Value::as_str) else {
            return;
        };
        if !ASKED_METHODS.contains(&method) {
            return;
        }
        let params = match request.get("params") {
            Some(params @ Value::Object(_)) if line.len() <= MAX_ASKED_BYTES => params.clone(),
            _ => {
                let text = String::from_utf8_lossy(&line[..line.len().min(MAX_ASKED_BYTES)]);
                Value::String(text.into_owned())
            }
        };
        let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        if asked.len() < MAX_ASKED {
            asked.push(Asked {
                method: method.to_owned(),
                params,
            });
        }
    }

    /// The requests kept since the last take.
    pub(crate) fn take_asked(&self) -> Vec<Asked> {
        std::mem::take(&mut *self.asked.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Sets the requests kept so far aside as sent outside any call ([`MAX_ASKED`] kept).
    pub(crate) fn set_aside_asked(&self) {
        let taken = self.take_asked();
        let mut outside = self.outside.lock().unwrap_or_else(|e| e.into_inner());
        let room = MAX_ASKED.saturating_sub(outside.len());
        outside.extend(taken.into_iter().take(room));
    }

    /// Every request sent outside a call so far, those since the last call included.
    pub(crate) fn take_outside(&self) -> Vec<Asked> {
        self.set_aside_asked();
        std::mem::take(&mut *self.outside.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Counts an answer the client wrote back to one of the server's requests.
    pub(crate) fn answer_written(&self, item: &ClientJsonRpcMessage) {
        if matches!(item, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)) {
            self.answers_written.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Why the server's requests to the client are a flood, once they are: more than
    /// [`MAX_SERVER_REQUESTS`] in all, or more than [`MAX_UNANSWERED`] whose answers it has
    /// not taken.
    pub(crate) fn request_flood(&self) -> Option<String> {
        let sent = self.server_requests.load(Ordering::Relaxed);
        let unanswered = sent.saturating_sub(self.answers_written.load(Ordering::Relaxed));
        if sent > MAX_SERVER_REQUESTS {
            Some(format!(
                "more than {MAX_SERVER_REQUESTS} requests from the server to the client"
            ))
        } else if unanswered > MAX_UNANSWERED {
            Some(format!(
                "{unanswered} requests from the server to the client at once, unanswered \
                 (the server does not read the answers; at most {MAX_UNANSWERED})"
            ))
        } else {
            None
        }
    }

    pub(crate) fn fault(&self) -> Option<Fault> {
        self.fault.borrow().clone()
    }

    /// Waits up to `within` for the stdout pump to report why the stream ended.
    pub(crate) async fn fault_within(&self, within: Duration) -> Option<Fault> {
        let mut rx = self.fault.subscribe();
        let seen = tokio::time::timeout(within, rx.wait_for(Option::is_some)).await;
        seen.ok()
            .and_then(Result::ok)
            .and_then(|fault| fault.clone())
    }

    /// Resolves once the SDK has taken every message read before the stream ended, so any
    /// answer that arrived is already delivered.
    pub(crate) async fn drained(&self) {
        let mut rx = self.drained.subscribe();
        let _ = rx.wait_for(|drained| *drained).await;
    }

    pub(crate) fn mark_drained(&self) {
        self.drained.send_replace(true);
    }

    /// Keeps the raw answer to a request whose result the harness reads (tools, prompts,
    /// resources: their lists, calls and reads): it hashes manifests and reads results
    /// from the server's own bytes.
    pub(crate) fn expect_answer(&self, item: &ClientJsonRpcMessage) {
        if let JsonRpcMessage::Request(request) = item
            && matches!(
                request.request,
                ClientRequest::ListToolsRequest(_)
                    | ClientRequest::CallToolRequest(_)
                    | ClientRequest::ListPromptsRequest(_)
                    | ClientRequest::GetPromptRequest(_)
                    | ClientRequest::ListResourcesRequest(_)
                    | ClientRequest::ListResourceTemplatesRequest(_)
                    | ClientRequest::ReadResourceRequest(_)
            )
        {
            self.raw_map().insert(request.id.clone(), None);
        }
    }

    pub(crate) fn take_raw(&self, id: &RequestId) -> Option<Value> {
        self.raw_map().remove(id).flatten()
    }

    pub(crate) fn count_tools_list_changed(&self) {
        self.tools_list_changed.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn tools_list_changed(&self) -> u64 {
        self.tools_list_changed.load(Ordering::Relaxed)
    }

    /// Keeps the raw `result` of an answer the session asked for (see [`Self::expect_answer`]).
    pub(crate) fn stash_raw(&self, id: &RequestId, line: &[u8]) {
        let mut raw = self.raw_map();
        if let Some(slot) = raw.get_mut(id) {
            let value = serde_json::from_slice::<Value>(line).ok();
            *slot = value.and_then(|mut v| v.get_mut("result").map(Value::take));
        }
    }

    fn raw_map(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Option<Value>>> {
        // Entries are inserted or removed whole, so a poisoned map is still consistent.
        self.raw
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
