//! [`ClientOptions`] (caps and timeouts), [`ServerStreams`] (the pipes to talk over) and
//! [`ServerOutput`] (a launched HTTP server's output, recorded only).

use std::pin::Pin;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

/// Caps and timeouts of one session (SPEC §3.2 limits).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ClientOptions {
    /// Longest line kept from the server's stdout, newline included. A longer line is
    /// recorded truncated and fails the session.
    pub max_line_bytes: usize,
    /// Bytes read from the server's stdout per session; past it vac stops reading.
    pub max_total_bytes: u64,
    /// Stderr bytes kept per session; the rest is only counted.
    pub max_stderr_bytes: u64,
    /// Time allowed for the initialize handshake.
    pub initialize_timeout: Duration,
    /// Time allowed for each request after initialize.
    pub request_timeout: Duration,
    /// At shutdown, how long to wait for the server to close its pipes after stdin closed.
    pub shutdown_grace: Duration,
    /// Pages of `tools/list` followed before the manifest is reported incomplete.
    pub max_tool_pages: u32,
    /// The text `sampling/createMessage` is answered with; `None`: sampling is not
    /// offered and such a request gets "method not found".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling_reply: Option<String>,
    /// The directories `roots/list` is answered with, as the server sees them; empty:
    /// roots are not offered and such a request gets an empty list.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<String>,
    /// Headers sent with every HTTP request (credentials: `--header`, `--bearer-env`).
    /// Recorded by name only; their values are redacted from the receipts.
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "header_names")]
    pub headers: Vec<Header>,
}

/// One HTTP header a user gave, its value a secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: String,
}

impl std::fmt::Debug for Header {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: <redacted>", self.name)
    }
}

/// Headers as the configuration records them: `NAME: <redacted>`.
fn header_names<S: serde::Serializer>(headers: &[Header], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(headers.iter().map(|h| format!("{}: <redacted>", h.name)))
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            max_line_bytes: 4 * 1024 * 1024,
            max_total_bytes: 64 * 1024 * 1024,
            max_stderr_bytes: 1024 * 1024,
            initialize_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_millis(500),
            max_tool_pages: 64,
            sampling_reply: None,
            roots: Vec::new(),
            headers: Vec::new(),
        }
    }
}

pub(crate) type BoxRead = Pin<Box<dyn AsyncRead + Send>>;
pub(crate) type BoxWrite = Pin<Box<dyn AsyncWrite + Send>>;

/// The server's standard streams, as the session will use them.
pub struct ServerStreams {
    pub(crate) stdout: BoxRead,
    pub(crate) stdin: BoxWrite,
    pub(crate) stderr: Option<BoxRead>,
}

impl ServerStreams {
    pub fn new(
        stdout: impl AsyncRead + Send + 'static,
        stdin: impl AsyncWrite + Send + 'static,
    ) -> Self {
        Self {
            stdout: Box::pin(stdout),
            stdin: Box::pin(stdin),
            stderr: None,
        }
    }

    /// Also records the server's stderr (capped by [`ClientOptions::max_stderr_bytes`]).
    pub fn with_stderr(mut self, stderr: impl AsyncRead + Send + 'static) -> Self {
        self.stderr = Some(Box::pin(stderr));
        self
    }

    /// Takes the piped streams of a spawned child; `None` unless stdin and stdout were
    /// piped. Stderr is used when it was piped too.
    pub fn from_child(child: &mut tokio::process::Child) -> Option<Self> {
        let stdout = child.stdout.take()?;
        let Some(stdin) = child.stdin.take() else {
            child.stdout = Some(stdout);
            return None;
        };
        let streams = Self::new(stdout, stdin);
        Some(match child.stderr.take() {
            Some(stderr) => streams.with_stderr(stderr),
            None => streams,
        })
    }
}

/// What a server launched for Streamable HTTP writes to its stdout and stderr: recorded
/// as its output (`Stderr` frames, the stderr cap for each stream), never parsed.
#[derive(Default)]
pub struct ServerOutput {
    pub(crate) streams: Vec<BoxRead>,
}

impl ServerOutput {
    /// Also records `stream`.
    pub fn with(mut self, stream: impl AsyncRead + Send + 'static) -> Self {
        self.streams.push(Box::pin(stream));
        self
    }
}

impl std::fmt::Debug for ServerOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOutput")
            .field("streams", &self.streams.len())
            .finish()
    }
}

impl std::fmt::Debug for ServerStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerStreams")
            .field("stderr", &self.stderr.is_some())
            .finish_non_exhaustive()
    }
}
