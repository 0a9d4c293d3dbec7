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
    /// The sentence every answer to `sampling/createMessage` ends with (the probe's token
    /// in it), after a reply that takes up the request (`client::sampling`); `None`:
    /// sampling is not offered and such a request gets "method not found".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling_reply: Option<String>,
    /// A model's typical time to answer a sampling request (the first [`super::shared::MAX_ASKED`]
    /// of a session wait about this long; a flood is answered at once); zero: at once.
    #[serde(skip_serializing_if = "Duration::is_zero")]
    pub sampling_latency: Duration,
    /// The directories `roots/list` is answered with, as the server sees them; empty:
    /// roots are not offered and such a request gets an empty list.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<String>,
    /// Headers sent with every HTTP request (credentials: `--header`, `--bearer-env`).
    /// Recorded by name only; their values are redacted from the receipts.
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "header_names")]
    pub headers: Vec<Header>,
    /// The lifecycle vac speaks (`--protocol`); `None`: `initialize` offering
    /// [`DEFAULT_PROTOCOL`], which the server may answer with an older version it speaks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// Who vac says it is in `initialize` (`clientInfo`, `--client-info`): by default an
    /// agent host's own identity ([`ClientInfo::default`]), never "vac" — a server that
    /// behaves only when it sees an auditor must not be told it is audited
    /// (`sandbox/TELLS.md`). Recorded with the rest of the configuration.
    pub client_info: ClientInfo,
}

/// The `clientInfo` of `initialize`: a name and a version.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ClientInfo {
    pub name: String,
    pub version: String,
}

impl Default for ClientInfo {
    /// Claude Desktop's, as it sends it (`{"name": "claude-ai", "version": "0.1.0"}`):
    /// the most common agent host's identity in servers' own logs and tests.
    fn default() -> Self {
        ClientInfo {
            name: "claude-ai".into(),
            version: "0.1.0".into(),
        }
    }
}

impl ClientInfo {
    /// `NAME/VERSION` (`--client-info`): both parts non-empty.
    pub fn parse(text: &str) -> Result<ClientInfo, OptionError> {
        match text.rsplit_once('/') {
            Some((name, version)) if !name.trim().is_empty() && !version.trim().is_empty() => {
                Ok(ClientInfo {
                    name: name.into(),
                    version: version.into(),
                })
            }
            _ => Err(OptionError::ClientInfo { text: text.into() }),
        }
    }
}

/// The version vac offers in `initialize` unless told otherwise: the newest with an
/// `initialize` handshake. A server of 2026-07-28 only is reached with `--protocol`.
pub const DEFAULT_PROTOCOL: &str = "2025-11-25";

/// The first version without `initialize`: `server/discover` and self-contained requests.
pub const STATELESS_PROTOCOL: &str = "2026-07-28";

/// Which lifecycle a session speaks, as `--protocol` names it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(into = "String")]
pub enum Protocol {
    /// `initialize` offering this version (2024-11-05 … 2025-11-25).
    Initialize(String),
    /// `server/discover` and per-request metadata (2026-07-28); a server that does not
    /// know it fails the session.
    Discover,
    /// `server/discover` first, `initialize` offering [`DEFAULT_PROTOCOL`] when the server
    /// does not know it.
    Auto,
}

impl Protocol {
    /// Every value `--protocol` takes, oldest version first.
    pub const NAMES: [&str; 6] = [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        STATELESS_PROTOCOL,
        "auto",
    ];

    /// Parses a `--protocol` value; the error lists what is known.
    pub fn parse(text: &str) -> Result<Self, OptionError> {
        match text {
            "auto" => Ok(Protocol::Auto),
            STATELESS_PROTOCOL => Ok(Protocol::Discover),
            known if Self::NAMES.contains(&known) => Ok(Protocol::Initialize(known.to_owned())),
            other => Err(OptionError::UnknownProtocol {
                text: other.to_owned(),
            }),
        }
    }
}

impl From<Protocol> for String {
    fn from(protocol: Protocol) -> String {
        match protocol {
            Protocol::Initialize(version) => version,
            Protocol::Discover => STATELESS_PROTOCOL.to_owned(),
            Protocol::Auto => "auto".to_owned(),
        }
    }
}

/// One HTTP header a user gave, its value a secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: String,
}

impl Header {
    /// `NAME: VALUE`, checked as HTTP allows; the error says what is wrong with the name
    /// or the value, and never quotes the value.
    pub fn new(name: &str, value: &str) -> Result<Header, OptionError> {
        let name = name.trim();
        if hyper::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(OptionError::HeaderName {
                name: name.to_owned(),
            });
        }
        if hyper::header::HeaderValue::from_str(value).is_err() {
            return Err(OptionError::HeaderValue {
                name: name.to_owned(),
            });
        }
        Ok(Header {
            name: name.to_owned(),
            value: value.to_owned(),
        })
    }

    /// `NAME:` the value of the environment variable `var`; an error names the variable.
    pub fn from_env(name: &str, var: &str) -> Result<Header, OptionError> {
        Header::new(name, &env_value(var)?).map_err(|_| OptionError::EnvValue {
            var: var.to_owned(),
        })
    }

    /// `Authorization: Bearer` and the token in the environment variable `var`.
    pub fn bearer_from_env(var: &str) -> Result<Header, OptionError> {
        Header::new("Authorization", &format!("Bearer {}", env_value(var)?)).map_err(|_| {
            OptionError::Token {
                var: var.to_owned(),
            }
        })
    }
}

/// A client option that is not what it must be; each names its input, never a secret's
/// value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("{text:?} is not a protocol version vac speaks ({known})", known = Protocol::NAMES.join(", "))]
    UnknownProtocol { text: String },
    #[error("{name:?} is not a valid header name")]
    HeaderName { name: String },
    #[error("the value of {name} is not a valid header value")]
    HeaderValue { name: String },
    #[error("the variable {var} is not set, or empty")]
    Unset { var: String },
    #[error("the value of {var} is not a valid header value")]
    EnvValue { var: String },
    #[error("the token in {var} is not a valid header value")]
    Token { var: String },
    #[error("{text:?}: expected NAME/VERSION, e.g. claude-ai/0.1.0")]
    ClientInfo { text: String },
}

/// The trimmed value of the environment variable `var`, which must hold something.
fn env_value(var: &str) -> Result<String, OptionError> {
    let value = std::env::var(var).unwrap_or_default();
    match value.trim() {
        "" => Err(OptionError::Unset {
            var: var.to_owned(),
        }),
        value => Ok(value.to_owned()),
    }
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
            sampling_latency: Duration::ZERO,
            roots: Vec::new(),
            headers: Vec::new(),
            protocol: None,
            client_info: ClientInfo::default(),
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

#[cfg(test)]
mod tests {
    use super::Protocol;

    #[test]
    fn a_client_identity_is_name_slash_version_and_defaults_to_an_agent_hosts() {
        use super::ClientInfo;
        assert_eq!(ClientInfo::default().name, "claude-ai");
        let info = ClientInfo::parse("Visual Studio Code/1.99.3").unwrap();
        assert_eq!(
            (info.name.as_str(), info.version.as_str()),
            ("Visual Studio Code", "1.99.3")
        );
        for bad in ["nope", "/1.0", "name/", ""] {
            let error = ClientInfo::parse(bad).unwrap_err();
            assert!(error.to_string().contains("NAME/VERSION"), "{bad}: {error}");
        }
    }

    #[test]
    fn protocol_names_parse_to_their_lifecycle_and_back() {
        for name in Protocol::NAMES {
            assert_eq!(String::from(Protocol::parse(name).unwrap()), name);
        }
        assert_eq!(Protocol::parse("2026-07-28"), Ok(Protocol::Discover));
        assert_eq!(Protocol::parse("auto"), Ok(Protocol::Auto));
        assert_eq!(
            Protocol::parse("2024-11-05"),
            Ok(Protocol::Initialize("2024-11-05".into()))
        );
        let error = Protocol::parse("2025-13-01").unwrap_err().to_string();
        assert!(
            error.contains("\"2025-13-01\"") && error.contains("auto"),
            "{error}"
        );
    }
}
