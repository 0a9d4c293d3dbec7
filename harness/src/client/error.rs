//! [`ClientError`]: why a session failed; [`CallError`]: why one tool call got no result.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::service::{ClientInitializeError, ServiceError};

/// A failure of the session itself: after one of these (except `Timeout` and `Rpc`) the
/// session is over and the frames recorded so far are the evidence.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("server closed its stdout during {during}")]
    Closed { during: &'static str },
    #[error("server sent a line of at least {seen} bytes, over the {cap}-byte line cap")]
    /// `seen`: the bytes of the line read when it failed, the cap and at most one read more
    /// (reading stops once a line is past the cap; its newline may never come).
    LineTooLong { cap: usize, seen: u64 },
    #[error("server wrote more than {cap} bytes to stdout, the per-session cap")]
    TotalBytes { cap: u64 },
    #[error("{what} got no answer within {after:?}")]
    Timeout { what: &'static str, after: Duration },
    /// Initialize failed (`cause`: no answer, or the stream closed) and stdout held text
    /// that is not JSON-RPC: most likely not an MCP server, or one that only logs.
    #[error(
        "{cause}; stdout held {lines} line(s) that are not JSON-RPC (frame {frame}: {excerpt:?})"
    )]
    AfterNoise {
        cause: Box<ClientError>,
        lines: u64,
        frame: u64,
        excerpt: String,
    },
    #[error("server sent a line that is not JSON-RPC (frame {frame}): {detail}")]
    Protocol { frame: u64, detail: String },
    #[error("server flooded the client with requests (frame {frame}): {detail}")]
    RequestFlood { frame: u64, detail: String },
    #[error("reading the server's stdout failed")]
    Read(#[source] Arc<std::io::Error>),
    #[error(
        "server answered initialize with protocol version {offered:?}, which vac does not know"
    )]
    UnsupportedVersion { offered: String },
    #[error("server answered {method} with error {}: {}", .error.code.0, .error.message)]
    Rpc {
        method: &'static str,
        error: ErrorData,
    },
    #[error("server answered {method} with a result of the wrong shape")]
    UnexpectedResult { method: &'static str },
    #[error(
        "server sent an HTTP message of at least {seen} bytes, over the {cap}-byte message cap"
    )]
    BodyTooLong { cap: usize, seen: u64 },
    /// The cause is in the message: it is what a run's failure records (a refused
    /// connection, a certificate vac does not trust).
    #[error("cannot connect to {url}: {cause}")]
    Connect {
        url: String,
        cause: Arc<std::io::Error>,
    },
    #[error("the http exchange with {url} failed: {cause}")]
    Http {
        url: String,
        cause: Arc<hyper::Error>,
    },
    #[error(
        "server answered {during} with a redirect (HTTP {status}) to {location:?}, which vac does not follow"
    )]
    Redirect {
        during: &'static str,
        status: u16,
        location: String,
    },
    #[error("server answered {during} with HTTP {status}{note}: {excerpt:?}")]
    HttpStatus {
        during: &'static str,
        status: u16,
        /// Says when the status means the session id was refused.
        note: String,
        excerpt: String,
    },
    /// The server wants credentials (MCP authorization): what it asked for is its
    /// `WWW-Authenticate` challenge, which names the scheme, the protected-resource
    /// metadata and the scopes.
    #[error(
        "server needs authorization: it answered {during} with HTTP {status} and asked for {challenge}; vac had no credentials to give it"
    )]
    NeedsAuthorization {
        during: &'static str,
        status: u16,
        challenge: String,
    },
    #[error(
        "server answered {during} with HTTP {status} of type {content_type:?}, neither JSON nor an SSE stream: {excerpt:?}"
    )]
    ContentType {
        during: &'static str,
        status: u16,
        content_type: String,
        excerpt: String,
    },
    #[error("initialize failed")]
    Initialize(#[source] Box<ClientInitializeError>),
    #[error("mcp service failed")]
    Service(#[source] ServiceError),
}

/// Why a tool call has no (valid) result. The session survives all of these.
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CallError {
    /// A JSON-RPC error response (a tool-level `isError` result is not a `CallError`).
    #[error("json-rpc error {code}: {message}")]
    Rpc {
        code: i32,
        message: String,
        data: Option<serde_json::Value>,
    },
    #[error("no answer within {after:?}")]
    Timeout { after: Duration },
    /// The answer is not a `CallToolResult`; its JSON is still in the outcome.
    #[error("the answer is not a tool result")]
    UnexpectedResult,
}

/// How the server's stdout stopped being a usable JSON-RPC stream. The first one wins.
#[derive(Debug, Clone)]
pub(crate) enum Fault {
    Eof,
    LineTooLong {
        cap: usize,
        seen: u64,
    },
    TotalBytes {
        cap: u64,
    },
    Garbage {
        frame: u64,
        detail: String,
    },
    RequestFlood {
        frame: u64,
        detail: String,
    },
    Read(Arc<std::io::Error>),
    BodyTooLong {
        cap: usize,
        seen: u64,
    },
    Connect {
        url: String,
        source: Arc<std::io::Error>,
    },
    Http {
        url: String,
        source: Arc<hyper::Error>,
    },
    HttpTimeout {
        after: Duration,
    },
    Redirect {
        status: u16,
        location: String,
    },
    HttpStatus {
        status: u16,
        session: Option<String>,
        excerpt: String,
    },
    ContentType {
        status: u16,
        content_type: String,
        excerpt: String,
    },
    /// HTTP 401: the server's `WWW-Authenticate` challenge, if it sent one.
    Unauthorized {
        status: u16,
        challenge: Option<String>,
    },
}

/// Bytes of a body quoted in an error message.
const QUOTED: usize = 200;

fn quoted(excerpt: String) -> String {
    match excerpt.char_indices().nth(QUOTED) {
        Some((cut, _)) => format!("{}…", &excerpt[..cut]),
        None => excerpt,
    }
}

impl Fault {
    pub(crate) fn into_error(self, during: &'static str) -> ClientError {
        match self {
            Fault::Eof => ClientError::Closed { during },
            Fault::LineTooLong { cap, seen } => ClientError::LineTooLong { cap, seen },
            Fault::TotalBytes { cap } => ClientError::TotalBytes { cap },
            Fault::Garbage { frame, detail } => ClientError::Protocol { frame, detail },
            Fault::RequestFlood { frame, detail } => ClientError::RequestFlood { frame, detail },
            Fault::Read(error) => ClientError::Read(error),
            Fault::BodyTooLong { cap, seen } => ClientError::BodyTooLong { cap, seen },
            Fault::Connect { url, source } => ClientError::Connect { url, cause: source },
            Fault::Http { url, source } => ClientError::Http { url, cause: source },
            Fault::HttpTimeout { after } => ClientError::Timeout {
                what: during,
                after,
            },
            Fault::Redirect { status, location } => ClientError::Redirect {
                during,
                status,
                location,
            },
            Fault::HttpStatus {
                status,
                session,
                excerpt,
            } => ClientError::HttpStatus {
                during,
                status,
                note: match session {
                    Some(id) if status == 404 => {
                        format!(" (session {id:?} is unknown or expired)")
                    }
                    _ => String::new(),
                },
                excerpt: quoted(excerpt),
            },
            Fault::Unauthorized { status, challenge } => ClientError::NeedsAuthorization {
                during,
                status,
                challenge: match challenge {
                    Some(challenge) => format!("{:?}", quoted(challenge)),
                    None => "nothing it named (no WWW-Authenticate header)".to_owned(),
                },
            },
            Fault::ContentType {
                status,
                content_type,
                excerpt,
            } => ClientError::ContentType {
                during,
                status,
                content_type,
                excerpt: quoted(excerpt),
            },
        }
    }
}
