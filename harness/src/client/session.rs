//! [`McpSession`]: one MCP client session (rmcp) over the recording byte layer.

// Sampling is deprecated by SEP-2577, but servers in use still send it and vac answers it.
#![allow(deprecated)]

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientRequest, CreateMessageRequestMethod,
    CreateMessageRequestParams, CreateMessageResult, ErrorData, Implementation, ListRootsResult,
    ProtocolVersion, RequestId, Root, RootsCapabilities, SamplingCapability, SamplingMessage,
    ServerPeerInfo,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, PeerRequestOptions,
    RequestContext, RunningService,
};
use rmcp::{ClientHandler, RoleClient, ServiceError};
use serde_json::Value;
use tokio::time::Instant;

use super::endpoint::HttpEndpoint;
use super::error::ClientError;
use super::frame::FrameLog;
use super::link::Link;
use super::options::{ClientOptions, Protocol, ServerOutput, ServerStreams};
use super::shared::Noise;

/// Added to the request timeout before vac stops waiting on the SDK itself, which enforces
/// the timeout first and sends `notifications/cancelled`.
const BACKSTOP: Duration = Duration::from_secs(1);

/// An initialized MCP session with one server.
///
/// Every frame in both directions and the server's stderr go into the [`FrameLog`] given
/// to [`McpSession::connect`]; the log is complete once [`McpSession::shutdown`] returns
/// (or `connect` returned an error).
pub struct McpSession {
    pub(super) service: RunningService<RoleClient, Client>,
    pub(super) link: Link,
    pub(super) log: FrameLog,
    pub(super) options: ClientOptions,
    server: Arc<ServerPeerInfo>,
}

/// What came back for one request the session survived.
pub(super) enum Answer {
    /// The result object exactly as the server sent it.
    Result(Value),
    Rpc(ErrorData),
    TimedOut,
}

impl McpSession {
    /// Runs the initialize handshake: client info `vac` and this crate's version, offering
    /// the newest protocol version with a handshake and accepting any version rmcp knows.
    pub async fn connect(
        streams: ServerStreams,
        log: FrameLog,
        options: ClientOptions,
    ) -> Result<Self, ClientError> {
        let (link, transport) = Link::start(streams, &log, &options);
        Self::handshake(link, transport, log, options).await
    }

    /// [`McpSession::connect`] over Streamable HTTP: every request and response body is a
    /// frame, with the same caps (one message per JSON body or SSE event); `output` (a
    /// launched server's stdout and stderr) is recorded alongside.
    pub async fn connect_http(
        endpoint: HttpEndpoint,
        output: ServerOutput,
        log: FrameLog,
        options: ClientOptions,
    ) -> Result<Self, ClientError> {
        let (link, transport) = Link::start_http(endpoint, output, &log, &options);
        Self::handshake(link, transport, log, options).await
    }

    /// Initializes over a started link; on failure the link is shut down before returning.
    async fn handshake<T>(
        link: Link,
        transport: T,
        log: FrameLog,
        options: ClientOptions,
    ) -> Result<Self, ClientError>
    where
        T: rmcp::transport::Transport<RoleClient> + Send + 'static,
        T::Error: std::error::Error + Send + Sync + 'static,
    {
        match initialize(transport, &link, &options).await {
            Ok((service, server)) => Ok(Self {
                service,
                link,
                log,
                options,
                server,
            }),
            Err(error) => {
                link.shutdown(options.shutdown_grace).await;
                Err(error)
            }
        }
    }

    /// The protocol version the server answered with.
    pub fn protocol_version(&self) -> &str {
        self.server.protocol_version.as_str()
    }

    /// What the server said about itself in its initialize result.
    pub fn server_info(&self) -> &ServerPeerInfo {
        &self.server
    }

    /// How many `notifications/tools/list_changed` the server has sent so far.
    pub fn tools_list_changed(&self) -> u64 {
        self.link.shared.tools_list_changed()
    }

    pub fn frame_log(&self) -> &FrameLog {
        &self.log
    }

    /// Cancels the SDK, closes the server's stdin and stops recording. Waits at most a few
    /// times [`ClientOptions::shutdown_grace`]; killing the server is the caller's job.
    pub async fn shutdown(mut self) {
        let grace = self.options.shutdown_grace;
        let _ = self.service.close_with_timeout(grace).await;
        self.link.shutdown(grace).await;
    }

    /// Sends one request and waits for its answer, the request timeout, or the end of
    /// the stream; returns the request id (for the frames) with the answer.
    pub(super) async fn request(
        &self,
        what: &'static str,
        request: ClientRequest,
    ) -> Result<(RequestId, Answer), ClientError> {
        let after = self.options.request_timeout;
        let deadline = Instant::now() + after + BACKSTOP;
        let send = self
            .service
            .peer()
            .send_request_with_option(request, PeerRequestOptions::with_timeout(after));
        let handle = match tokio::time::timeout_at(deadline, send).await {
            Err(_) => return Err(ClientError::Timeout { what, after }),
            Ok(Err(error)) => return Err(self.service_error(what, error).await),
            Ok(Ok(handle)) => handle,
        };
        let id = handle.id.clone();
        // Biased: once the stream has drained, an answer that arrived is already delivered.
        let outcome = tokio::select! {
            biased;
            answer = handle.await_response() => Some(answer),
            () = self.link.shared.drained() => None,
            () = tokio::time::sleep_until(deadline) => Some(Err(ServiceError::Timeout { timeout: after })),
        };
        let raw = self.link.shared.take_raw(&id);
        let answer = match outcome {
            None => return Err(fault_error(&self.link, what)),
            // The raw result, not rmcp's typed guess at it, is what callers judge.
            Some(Ok(_typed)) => match raw {
                Some(raw) => Answer::Result(raw),
                None => return Err(ClientError::UnexpectedResult { method: what }),
            },
            Some(Err(ServiceError::McpError(error))) => Answer::Rpc(error),
            Some(Err(ServiceError::Timeout { .. })) => Answer::TimedOut,
            Some(Err(error)) => return Err(self.service_error(what, error).await),
        };
        Ok((id, answer))
    }

    async fn service_error(&self, what: &'static str, error: ServiceError) -> ClientError {
        match error {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                match self
                    .link
                    .shared
                    .fault_within(self.options.shutdown_grace)
                    .await
                {
                    Some(fault) => fault.into_error(what),
                    None => ClientError::Service(error),
                }
            }
            error => ClientError::Service(error),
        }
    }
}

impl std::fmt::Debug for McpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSession")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// The model a sampling reply says it came from: a name a real client could send.
const SAMPLING_MODEL: &str = "claude-sonnet-4-5";

/// What vac answers the server's requests with: `ping` as any client; `roots/list` with
/// the lab's work directory when roots are offered (a server that takes its roots from the
/// client keeps to the lab); `sampling/createMessage`, when sampling is offered, as a model
/// would (`client::sampling`: a reply that takes up the request and ends with the recorded
/// token sentence, after a model's latency), so what a server does with a model's answer is
/// observed; elicitation declined.
pub(super) struct Client {
    config: ClientConfig,
    sampling_reply: Option<String>,
    sampling_latency: std::time::Duration,
    sampled: std::sync::atomic::AtomicUsize,
    roots: Vec<String>,
}

/// `file://` and the path, each byte outside the URI's unreserved characters and `/`
/// percent-encoded (RFC 8089, RFC 3986).
fn file_uri(path: &str) -> String {
    let mut uri = String::from("file://");
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                uri.push(char::from(byte))
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

/// The most bytes of a sampling request echoed back.
const ECHO_CAP: usize = 4096;

/// The text of a sampling request's messages, in order, cut at [`ECHO_CAP`] bytes on a
/// character boundary.
fn echo(params: &CreateMessageRequestParams) -> String {
    fn texts(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(text)) = map.get("text") {
                    out.push(text.clone());
                }
                map.values().for_each(|v| texts(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| texts(v, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    texts(
        &serde_json::to_value(&params.messages).unwrap_or(Value::Null),
        &mut found,
    );
    let mut echoed = found.join("\n");
    if echoed.len() > ECHO_CAP {
        let mut end = ECHO_CAP;
        while !echoed.is_char_boundary(end) {
            end -= 1;
        }
        echoed.truncate(end);
    }
    echoed
}

impl Client {
    fn new(options: &ClientOptions) -> Self {
        let host = Implementation::new(&options.client_info.name, &options.client_info.version);
        let mut capabilities = ClientCapabilities::default();
        if options.sampling_reply.is_some() {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        if !options.roots.is_empty() {
            // The lab's directories never change during a session.
            let mut roots = RootsCapabilities::default();
            roots.list_changed = Some(false);
            capabilities.roots = Some(roots);
        }
        let offered = match &options.protocol {
            Some(Protocol::Initialize(version)) => version_of(version),
            _ => ProtocolVersion::LATEST_WITH_INITIALIZE,
        };
        let config = ClientConfig::new(capabilities, host).with_protocol_version(offered);
        Self {
            config,
            sampling_reply: options.sampling_reply.clone(),
            sampling_latency: options.sampling_latency,
            sampled: std::sync::atomic::AtomicUsize::new(0),
            roots: options.roots.clone(),
        }
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    #[allow(deprecated)] // roots are deprecated by SEP-2577, and servers of 2025 still ask
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let roots = self
            .roots
            .iter()
            .map(|dir| {
                let mut root = Root::new(file_uri(dir));
                root.name = Some("work".to_owned());
                root
            })
            .collect();
        Ok(ListRootsResult::new(roots))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        match &self.sampling_reply {
            Some(token_sentence) => {
                let nth = self
                    .sampled
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let request = echo(&params);
                let text = super::sampling::reply(&request, token_sentence, nth);
                // A model takes its time; a flood past what is kept is answered at once.
                if nth < super::shared::MAX_ASKED {
                    let wait =
                        super::sampling::latency(self.sampling_latency, &request, &text, nth);
                    tokio::time::sleep(wait).await;
                }
                let message = SamplingMessage::assistant_text(text);
                let mut result = CreateMessageResult::new(message, SAMPLING_MODEL.to_owned());
                result.stop_reason = Some(CreateMessageResult::STOP_REASON_END_TURN.to_owned());
                Ok(result)
            }
            None => Err(ErrorData::method_not_found::<CreateMessageRequestMethod>()),
        }
    }
}

/// The SDK's constant for a version `--protocol` accepted.
fn version_of(text: &str) -> ProtocolVersion {
    serde_json::from_value(Value::String(text.to_owned()))
        .unwrap_or(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// An initialize failure, with the noise on stdout when there was some: what a user needs
/// to tell "not an MCP server" from "an MCP server that did not answer".
fn with_noise(error: ClientError, link: &Link) -> ClientError {
    match link.shared.noise() {
        Noise {
            lines,
            first: Some((frame, excerpt)),
        } => ClientError::AfterNoise {
            cause: Box::new(error),
            lines,
            frame,
            excerpt,
        },
        _ => error,
    }
}

async fn initialize<T>(
    transport: T,
    link: &Link,
    options: &ClientOptions,
) -> Result<(RunningService<RoleClient, Client>, Arc<ServerPeerInfo>), ClientError>
where
    T: rmcp::transport::Transport<RoleClient> + Send + 'static,
    T::Error: std::error::Error + Send + Sync + 'static,
{
    let what = match options.protocol {
        Some(Protocol::Discover) => "server/discover",
        Some(Protocol::Auto) => "server/discover, then initialize",
        _ => "initialize",
    };
    let after = options.initialize_timeout;
    let stateless = || vec![ProtocolVersion::V_2026_07_28];
    let lifecycle = match options.protocol {
        None | Some(Protocol::Initialize(_)) => ClientLifecycleMode::Initialize,
        Some(Protocol::Discover) => ClientLifecycleMode::Discover {
            preferred_versions: stateless(),
        },
        Some(Protocol::Auto) => ClientLifecycleMode::Auto {
            preferred_versions: stateless(),
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        },
    };
    let starting = Client::new(options).serve_with_lifecycle(transport, lifecycle);
    let served = match tokio::time::timeout(after, starting).await {
        Err(_) => return Err(with_noise(ClientError::Timeout { what, after }, link)),
        Ok(served) => served,
    };
    let mut service = match served {
        Ok(service) => service,
        Err(
            error @ (ClientInitializeError::ConnectionClosed(_)
            | ClientInitializeError::TransportError { .. }),
        ) => {
            return Err(with_noise(
                match link.shared.fault_within(options.shutdown_grace).await {
                    Some(fault) => fault.into_error(what),
                    None => ClientError::Initialize(Box::new(error)),
                },
                link,
            ));
        }
        Err(ClientInitializeError::JsonRpcError(error)) => {
            return Err(ClientError::Rpc {
                method: what,
                error,
            });
        }
        Err(error) => return Err(ClientError::Initialize(Box::new(error))),
    };
    let server = service.peer().peer_info();
    match server {
        Some(server) if ProtocolVersion::KNOWN_VERSIONS.contains(&server.protocol_version) => {
            Ok((service, server))
        }
        server => {
            let _ = service.close_with_timeout(options.shutdown_grace).await;
            let offered = server
                .map(|s| s.protocol_version.as_str().to_owned())
                .unwrap_or_default();
            Err(ClientError::UnsupportedVersion { offered })
        }
    }
}

/// Why the stream ended, once the transport has drained: the pump sets the fault first.
fn fault_error(link: &Link, during: &'static str) -> ClientError {
    link.shared
        .fault()
        .map_or(ClientError::Closed { during }, |fault| {
            fault.into_error(during)
        })
}
