//! Streamable HTTP under rmcp: [`HttpTransport`] POSTs every message the SDK sends and
//! reads the answers (a JSON body or an SSE stream) through the same recording as stdio.
//!
//! Each POST is its own HTTP/1.1 connection (hyper), made through the endpoint's dial (the
//! host, or a sandbox's network namespace), in the order the SDK sent the messages. The
//! request body is recorded as a `ToServer` frame before it leaves; each JSON body and
//! each SSE event's data is recorded as a `FromServer` frame before it is parsed. Caps:
//! one message (a JSON body or an SSE event) at most `max_line_bytes`, every response body
//! together at most `max_total_bytes`, connect and response head within
//! `request_timeout`. `Mcp-Session-Id` from the initialize answer and the negotiated
//! `MCP-Protocol-Version` go on every later request. A redirect is never followed, and a
//! status, content type or body vac cannot use ends the session with a fault naming it.
//! Once the session is initialized, one GET opens the stream a server uses outside any
//! request (read like a POST's SSE answer, under the same caps; a server may offer none),
//! and at shutdown a DELETE ends the session the server gave.
//! A server of the older HTTP+SSE transport (2024-11-05) refuses the first POST with 400,
//! 404 or 405: vac then GETs the URL, and if it answers an event stream whose first event
//! names an `endpoint` on the same server, posts every message there and reads every answer
//! from that stream (the refusal, the event and the answers are frames like any other).
//! rmcp's own streamable HTTP client is not used: it re-initializes on an expired session
//! and decodes bodies itself, which would hide exactly what an audit must see.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, LOCATION};
use hyper_util::rt::TokioIo;
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::{mpsc, watch};
use tokio::task::{AbortHandle, JoinHandle};
use tokio::time::Instant;

use super::endpoint::HttpEndpoint;
use super::error::Fault;
use super::frame::{Direction, FrameLog};
use super::lines::{Parsed, parse_line};
use super::options::{ClientOptions, ServerOutput};
use super::param_headers::{self, ParamHeaders};
use super::pump::pump_stderr;
use super::shared::LinkShared;
use super::sse::{SseItem, SseSplitter};

const SESSION_ID: &str = "mcp-session-id";
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// Bytes of an unusable body kept for the error and the frame log.
const EXCERPT: usize = 4096;
/// Parsed messages waiting for the SDK.
const QUEUE: usize = 4;

/// A connection to the server: TCP, or TLS over it.
trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

/// What the transport, its body readers and the link share.
pub(crate) struct HttpShared {
    endpoint: HttpEndpoint,
    log: FrameLog,
    link: Arc<LinkShared>,
    max_message: usize,
    max_total: u64,
    /// The user's headers (credentials), on every request.
    headers: Vec<super::options::Header>,
    timeout: Duration,
    total: AtomicU64,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    /// The ticket whose POST may go out now: POSTs leave in the order the SDK sent them.
    turn: watch::Sender<u64>,
    next: AtomicU64,
    tasks: Mutex<Vec<AbortHandle>>,
    /// The GET stream was asked for (once a session, after `notifications/initialized`).
    listening: std::sync::atomic::AtomicBool,
    /// The path the HTTP+SSE transport's `endpoint` event named: set, the server is one
    /// of that transport, messages are posted there and answered on its stream.
    legacy: watch::Sender<Option<String>>,
}

/// The rmcp transport over Streamable HTTP.
pub(crate) struct HttpTransport {
    rx: mpsc::Receiver<ServerJsonRpcMessage>,
    tx: mpsc::Sender<ServerJsonRpcMessage>,
    http: Arc<HttpShared>,
}

/// The HTTP side of a session's link (`link.rs`): records the server's output and
/// stops every connection at shutdown.
pub(crate) struct HttpLink {
    http: Arc<HttpShared>,
    cancel: watch::Sender<bool>,
    output: Vec<JoinHandle<()>>,
}

impl HttpLink {
    pub(crate) fn start(
        endpoint: HttpEndpoint,
        log: &FrameLog,
        options: &ClientOptions,
        output: ServerOutput,
        link: Arc<LinkShared>,
    ) -> (Self, HttpTransport) {
        let http = Arc::new(HttpShared {
            endpoint,
            log: log.clone(),
            link,
            max_message: options.max_line_bytes,
            max_total: options.max_total_bytes,
            headers: options.headers.clone(),
            timeout: options.request_timeout.max(options.initialize_timeout),
            total: AtomicU64::new(0),
            session: Mutex::new(None),
            version: Mutex::new(None),
            turn: watch::Sender::new(0),
            next: AtomicU64::new(0),
            tasks: Mutex::new(Vec::new()),
            listening: std::sync::atomic::AtomicBool::new(false),
            legacy: watch::Sender::new(None),
        });
        let (tx, rx) = mpsc::channel(QUEUE);
        let transport = HttpTransport {
            rx,
            tx,
            http: http.clone(),
        };
        let (cancel, cancel_rx) = watch::channel(false);
        let output = output
            .streams
            .into_iter()
            .map(|stream| {
                tokio::spawn(pump_stderr(
                    stream,
                    log.clone(),
                    options.max_stderr_bytes,
                    cancel_rx.clone(),
                ))
            })
            .collect();
        let link = Self {
            http,
            cancel,
            output,
        };
        (link, transport)
    }

    /// Ends the server's session (a DELETE with its id, at most `grace`), aborts every
    /// connection and body reader, gives the output pumps `grace` to catch up, then stops
    /// them; every frame is in the log when this returns.
    pub(crate) async fn shutdown(self, grace: Duration) {
        let _ = tokio::time::timeout(grace, self.http.close_session()).await;
        for task in lock(&self.http.tasks).drain(..) {
            task.abort();
        }
        tokio::time::sleep(grace.min(Duration::from_millis(50))).await;
        self.cancel.send_replace(true);
        for pump in self.output {
            let _ = pump.await;
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every value behind these locks is replaced whole, so a poisoned one is consistent.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Lets the next POST go even if this one's future is dropped half way.
struct Turn<'a>(&'a watch::Sender<u64>, u64);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let next = self.1 + 1;
        self.0.send_modify(|turn| *turn = (*turn).max(next));
    }
}

impl Transport<RoleClient> for HttpTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Registered before the request leaves, so the answer cannot outrun it.
        self.http.link.expect_answer(&item);
        // The two requests whose refusal may mean an older protocol or transport.
        let (discover, initialize) = match &item {
            rmcp::model::JsonRpcMessage::Request(request) => match request.request {
                ClientRequest::DiscoverRequest(_) => (Some(request.id.clone()), false),
                ClientRequest::InitializeRequest(_) => (None, true),
                _ => (None, false),
            },
            _ => (None, false),
        };
        let encoded = serde_json::to_vec(&item);
        let ticket = self.http.next.fetch_add(1, Ordering::Relaxed);
        let (http, tx) = (self.http.clone(), self.tx.clone());
        async move {
            let answered = {
                // First, so that even a message that fails to encode passes the turn on.
                let turn = Turn(&http.turn, ticket);
                let body = encoded?;
                let mut waiting = turn.0.subscribe();
                let _ = waiting.wait_for(|now| *now >= ticket).await;
                match http.post(body.clone()).await {
                    Ok(refused) if initialize && http.older_transport(&refused) => {
                        http.legacy(refused, body, tx.clone()).await
                    }
                    answered => answered,
                }
            };
            if answered.is_ok() {
                http.link.answer_written(&item);
            }
            // Once the session is initialized, the stream for what the server sends
            // outside any request (its own requests among them) is opened beside it.
            if answered.is_ok() && initialized(&item) {
                http.clone().listen(tx.clone());
            }
            let result = match answered {
                Ok(response) => http.answer(response, tx, discover).await,
                Err(fault) => Err(fault),
            };
            result.map_err(|fault| {
                http.link.set_fault(fault);
                std::io::Error::other("the http exchange failed (the session's fault says why)")
            })
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        // Biased: a message read before the fault is still delivered.
        let message = tokio::select! {
            biased;
            message = self.rx.recv() => message,
            () = self.http.link.faulted() => None,
        };
        if message.is_none() {
            self.http.link.mark_drained();
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl HttpShared {
    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(task).abort_handle();
        let mut tasks = lock(&self.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle);
    }

    /// Opens the GET stream once: an SSE stream is read like a POST's (each event a
    /// recorded frame, the same caps), so a request the server sends there is heard and
    /// answered. A server that offers none (405, or any other answer) loses nothing: the
    /// stream is optional, and its refusal is not recorded as if it were a message.
    fn listen(self: Arc<Self>, tx: mpsc::Sender<ServerJsonRpcMessage>) {
        // The HTTP+SSE transport's stream is open already.
        if self.listening.swap(true, Ordering::SeqCst) || self.legacy.borrow().is_some() {
            return;
        }
        let http = self.clone();
        self.spawn(async move {
            let Ok(response) = http.request(hyper::Method::GET, None).await else {
                return;
            };
            if event_stream(&response) {
                http.sse(response.into_body(), tx).await;
            }
        });
    }

    /// Whether the answer to the first POST is how a server of the HTTP+SSE transport
    /// (2024-11-05) refuses it: 400, 404 or 405, before any session.
    fn older_transport(&self, response: &hyper::Response<Incoming>) -> bool {
        matches!(response.status().as_u16(), 400 | 404 | 405)
            && lock(&self.session).is_none()
            && self.legacy.borrow().is_none()
    }

    /// Tries the HTTP+SSE transport after the server `refused` the initialize POST: a GET
    /// of the URL whose event stream names an endpoint (within the request timeout), then
    /// `body` again to that endpoint. If the server offers no such stream, the refusal is
    /// the answer, as it would have been.
    async fn legacy(
        self: &Arc<Self>,
        refused: hyper::Response<Incoming>,
        body: Vec<u8>,
        tx: mpsc::Sender<ServerJsonRpcMessage>,
    ) -> Result<hyper::Response<Incoming>, Fault> {
        let status = refused.status().as_u16();
        let excerpt = self.excerpt(&mut refused.into_body()).await;
        let refusal = || Fault::HttpStatus {
            status,
            session: None,
            excerpt: excerpt.clone(),
        };
        let deadline = Instant::now() + self.timeout;
        let Ok(stream) = self.request(hyper::Method::GET, None).await else {
            return Err(refusal());
        };
        if !event_stream(&stream) {
            let _ = self.excerpt(&mut stream.into_body()).await;
            return Err(refusal());
        }
        let mut named = self.legacy.subscribe();
        let http = self.clone();
        self.spawn(async move { http.sse(stream.into_body(), tx).await });
        let named = async { named.wait_for(Option::is_some).await.is_ok() };
        if !tokio::time::timeout_at(deadline, named)
            .await
            .unwrap_or(false)
        {
            return Err(refusal());
        }
        self.post(body).await
    }

    /// Takes the `endpoint` event of the HTTP+SSE transport: a path, or an absolute URL
    /// on the same server, where the client's messages go; false (and the session's
    /// fault) for anything else.
    fn endpoint_named(&self, data: Vec<u8>) -> bool {
        let len = data.len() as u64;
        let text = String::from_utf8_lossy(&data).trim().to_owned();
        let frame = self
            .log
            .record(Direction::FromServer, self.log.elapsed(), data, len, false);
        let origin = format!(
            "{}://{}",
            if self.endpoint.is_tls() {
                "https"
            } else {
                "http"
            },
            self.endpoint.authority()
        );
        let path = match text.strip_prefix(&origin) {
            Some(rest) if rest.starts_with('/') => Some(rest.to_owned()),
            _ if text.starts_with('/') && !text.starts_with("//") => Some(text.clone()),
            _ => None,
        };
        match path {
            Some(path) if self.legacy.borrow().is_none() => {
                self.legacy.send_replace(Some(path));
                true
            }
            Some(_) => true,
            None => {
                let detail = format!(
                    "the endpoint event names {text:?}, not a path on the server vac connected to"
                );
                self.link.set_fault(Fault::Garbage { frame, detail });
                false
            }
        }
    }

    /// Ends the session the server gave, if it gave one: a DELETE with its id, whose answer
    /// is not waited for beyond its head (a server may refuse it with 405).
    async fn close_session(&self) {
        if lock(&self.session).is_some() {
            let _ = self.request(hyper::Method::DELETE, None).await;
        }
    }

    /// Records and POSTs one message; returns the response head.
    async fn post(&self, body: Vec<u8>) -> Result<hyper::Response<Incoming>, Fault> {
        let len = body.len() as u64;
        self.log.record(
            Direction::ToServer,
            self.log.elapsed(),
            body.clone(),
            len,
            false,
        );
        self.request(hyper::Method::POST, Some(body)).await
    }

    /// One request on a connection of its own, with the session's headers: a POST of
    /// `body`, or a GET or DELETE without one; returns the response head.
    async fn request(
        &self,
        method: hyper::Method,
        body: Option<Vec<u8>>,
    ) -> Result<hyper::Response<Incoming>, Fault> {
        let deadline = Instant::now() + self.timeout;
        let url = self.endpoint.url().to_string();
        let endpoint = self.endpoint.clone();
        let timeout = self.timeout;
        let dialled = tokio::time::timeout_at(
            deadline,
            tokio::task::spawn_blocking(move || endpoint.connect(timeout)),
        )
        .await;
        let connect = |source: std::io::Error| Fault::Connect {
            url: url.clone(),
            source: Arc::new(source),
        };
        let stream = match dialled {
            Err(_) => return Err(Fault::HttpTimeout { after: timeout }),
            Ok(Err(join)) => return Err(connect(std::io::Error::other(join))),
            Ok(Ok(Err(error))) => return Err(connect(error)),
            Ok(Ok(Ok(stream))) => stream,
        };
        let stream = stream
            .set_nonblocking(true)
            .and_then(|()| tokio::net::TcpStream::from_std(stream))
            .map_err(connect)?;
        // https: the server's certificate is verified before a byte of MCP is sent, within
        // the same deadline.
        let stream: Box<dyn Io> = match self.endpoint.tls() {
            None => Box::new(stream),
            Some((config, name)) => {
                let connector = tokio_rustls::TlsConnector::from(config);
                match tokio::time::timeout_at(deadline, connector.connect(name, stream)).await {
                    Err(_) => return Err(Fault::HttpTimeout { after: timeout }),
                    Ok(Err(error)) => return Err(connect(error)),
                    Ok(Ok(tls)) => Box::new(tls),
                }
            }
        };
        let http_error = |source: hyper::Error| Fault::Http {
            url: url.clone(),
            source: Arc::new(source),
        };
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(http_error)?;
        self.spawn(async move {
            let _ = connection.await;
        });
        let accept = match method {
            hyper::Method::GET => "text/event-stream",
            _ => "application/json, text/event-stream",
        };
        let legacy = self.legacy.borrow().clone();
        let path = match (&method, legacy) {
            (&hyper::Method::POST, Some(path)) => path,
            _ => self.endpoint.path().to_owned(),
        };
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, self.endpoint.authority())
            .header(ACCEPT, accept);
        if body.is_some() {
            request = request.header(CONTENT_TYPE, "application/json");
        }
        for header in &self.headers {
            request = request.header(header.name.as_str(), header.value.as_str());
        }
        if let Some(session) = lock(&self.session).clone() {
            request = request.header(SESSION_ID, session);
        }
        let params = self.link.param_headers();
        let standard = body
            .as_deref()
            .map(|body| standard_headers(body, &params))
            .unwrap_or_default();
        if let Some(version) = &standard.version {
            lock(&self.version).get_or_insert_with(|| version.clone());
        }
        if let Some(version) = standard.version.or_else(|| lock(&self.version).clone()) {
            request = request.header(PROTOCOL_VERSION, version);
        }
        for (name, value) in standard.headers {
            request = request.header(name, value);
        }
        // The error of a bad header would quote its value: name only what is wrong.
        let request = request
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|_| {
                connect(std::io::Error::other(
                    "a header vac was given is not valid HTTP",
                ))
            })?;
        match tokio::time::timeout_at(deadline, sender.send_request(request)).await {
            Err(_) => Err(Fault::HttpTimeout { after: timeout }),
            Ok(Err(error)) => Err(http_error(error)),
            Ok(Ok(response)) => Ok(response),
        }
    }

    /// Judges the response head; a usable body is read by a task of its own. `discover`:
    /// the id of the `server/discover` this answers.
    async fn answer(
        self: &Arc<Self>,
        response: hyper::Response<Incoming>,
        tx: mpsc::Sender<ServerJsonRpcMessage>,
        discover: Option<rmcp::model::RequestId>,
    ) -> Result<(), Fault> {
        let status = response.status();
        let header = |name| {
            response
                .headers()
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        if status.is_redirection() {
            return Err(Fault::Redirect {
                status: status.as_u16(),
                location: header(LOCATION).unwrap_or_default(),
            });
        }
        if let Some(session) = header(hyper::header::HeaderName::from_static(SESSION_ID)) {
            lock(&self.session).get_or_insert(session);
        }
        let content_type = header(CONTENT_TYPE).unwrap_or_default();
        let media = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let challenge = header(hyper::header::WWW_AUTHENTICATE);
        let mut body = response.into_body();
        if matches!(status.as_u16(), 202 | 204) {
            // Accepted: a notification or a response needs no answer; any body is kept.
            self.excerpt(&mut body).await;
            return Ok(());
        }
        if status == hyper::StatusCode::UNAUTHORIZED {
            // The body of a refusal is kept like any unusable one; the challenge says
            // what the server wants.
            self.excerpt(&mut body).await;
            return Err(Fault::Unauthorized {
                status: status.as_u16(),
                challenge,
            });
        }
        let sessionless = lock(&self.session).is_none();
        if let Some(id) = discover
            && status.is_client_error()
            && status != hyper::StatusCode::FORBIDDEN
            && sessionless
        {
            // A server from before 2026-07-28 refuses `server/discover` at the HTTP level
            // ("not initialized"): its body is recorded like any refusal, and the SDK is
            // told that the discover request failed, so `auto` falls back to initialize.
            let excerpt = self.excerpt(&mut body).await;
            let error = match serde_json::from_str::<ServerJsonRpcMessage>(&excerpt) {
                Ok(rmcp::model::JsonRpcMessage::Error(error)) => error.error,
                _ => rmcp::model::ErrorData::invalid_request(
                    format!("server/discover refused with HTTP {status}"),
                    None,
                ),
            };
            let _ = tx.send(ServerJsonRpcMessage::error(error, Some(id))).await;
            return Ok(());
        }
        if !status.is_success() {
            let excerpt = self.excerpt(&mut body).await;
            return Err(Fault::HttpStatus {
                status: status.as_u16(),
                session: lock(&self.session).clone(),
                excerpt,
            });
        }
        match media.as_str() {
            "application/json" => {
                let http = self.clone();
                self.spawn(async move { http.json(body, tx).await });
                Ok(())
            }
            "text/event-stream" => {
                let http = self.clone();
                self.spawn(async move { http.sse(body, tx).await });
                Ok(())
            }
            _ => {
                let excerpt = self.excerpt(&mut body).await;
                if media.is_empty() && excerpt.is_empty() {
                    // An empty 200 for a notification or a response.
                    return Ok(());
                }
                Err(Fault::ContentType {
                    status: status.as_u16(),
                    content_type,
                    excerpt,
                })
            }
        }
    }

    /// Up to [`EXCERPT`] bytes of an unusable body, recorded; waits at most a second.
    async fn excerpt(&self, body: &mut Incoming) -> String {
        let mut kept = Vec::new();
        let mut seen = 0u64;
        let read = async {
            while kept.len() < EXCERPT {
                match self.chunk(body).await {
                    Ok(Some(data)) => {
                        seen += data.len() as u64;
                        let room = EXCERPT - kept.len();
                        kept.extend_from_slice(&data[..data.len().min(room)]);
                    }
                    Ok(None) | Err(_) => break,
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), read).await;
        if !kept.is_empty() {
            let truncated = seen > kept.len() as u64;
            self.log.record(
                Direction::FromServer,
                self.log.elapsed(),
                kept.clone(),
                seen,
                truncated,
            );
        }
        String::from_utf8_lossy(&kept).into_owned()
    }

    /// The next data chunk of a body, counted against the total cap.
    async fn chunk(&self, body: &mut Incoming) -> Result<Option<Bytes>, Fault> {
        loop {
            let Some(frame) = body.frame().await else {
                return Ok(None);
            };
            let frame = frame.map_err(|source| Fault::Http {
                url: self.endpoint.url().to_string(),
                source: Arc::new(source),
            })?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let total = self.total.fetch_add(data.len() as u64, Ordering::Relaxed);
            if total + data.len() as u64 > self.max_total {
                return Err(Fault::TotalBytes {
                    cap: self.max_total,
                });
            }
            return Ok(Some(data));
        }
    }

    /// A JSON body: one message (a batch is not a message vac accepts).
    async fn json(self: Arc<Self>, mut body: Incoming, tx: mpsc::Sender<ServerJsonRpcMessage>) {
        let mut kept = Vec::new();
        let mut seen = 0u64;
        let fault = loop {
            match self.chunk(&mut body).await {
                Ok(Some(data)) => {
                    seen += data.len() as u64;
                    let room = self.max_message.saturating_sub(kept.len());
                    kept.extend_from_slice(&data[..data.len().min(room)]);
                }
                Ok(None) => break None,
                Err(fault) => break Some(fault),
            }
        };
        let oversized = seen > self.max_message as u64;
        if fault.is_some() || oversized {
            let at = self.log.elapsed();
            self.log.record(Direction::FromServer, at, kept, seen, true);
            self.link.set_fault(fault.unwrap_or(Fault::BodyTooLong {
                cap: self.max_message,
                seen,
            }));
            return;
        }
        self.message(kept, &tx).await;
    }

    /// An SSE stream: every event's data is one message.
    async fn sse(self: Arc<Self>, mut body: Incoming, tx: mpsc::Sender<ServerJsonRpcMessage>) {
        let mut splitter = SseSplitter::new(self.max_message);
        let mut events = Vec::new();
        loop {
            let chunk = match self.chunk(&mut body).await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => {
                    if let Some((kept, seen)) = splitter.finish() {
                        let at = self.log.elapsed();
                        self.log.record(Direction::FromServer, at, kept, seen, true);
                    }
                    // The HTTP+SSE transport's one stream carries every answer: once it
                    // ends, the session has.
                    if self.legacy.borrow().is_some() {
                        self.link.set_fault(Fault::Eof);
                    }
                    return;
                }
                Err(fault) => return self.link.set_fault(fault),
            };
            splitter.push(&chunk, &mut events);
            for event in events.drain(..) {
                match event {
                    SseItem::Data(data) => {
                        if !self.message(data, &tx).await {
                            return;
                        }
                    }
                    SseItem::Endpoint(data) => {
                        if !self.endpoint_named(data) {
                            return;
                        }
                    }
                    SseItem::TooLong { kept, seen } => {
                        let at = self.log.elapsed();
                        self.log.record(Direction::FromServer, at, kept, seen, true);
                        return self.link.set_fault(Fault::BodyTooLong {
                            cap: self.max_message,
                            seen,
                        });
                    }
                }
            }
        }
    }

    /// Records one message's bytes, then hands it to the SDK; false once the stream is
    /// unusable.
    async fn message(&self, bytes: Vec<u8>, tx: &mpsc::Sender<ServerJsonRpcMessage>) -> bool {
        let parsed = parse_line(&bytes);
        if let Parsed::Message(message) = &parsed {
            self.link.observe(message, &bytes);
            // The initialize answer decides, over a version a refused server/discover
            // carried (`auto` falling back).
            if let Some(version) = negotiated(&bytes) {
                *lock(&self.version) = Some(version);
            }
        }
        let len = bytes.len() as u64;
        let frame = self
            .log
            .record(Direction::FromServer, self.log.elapsed(), bytes, len, false);
        match parsed {
            Parsed::Message(_) if let Some(detail) = self.link.request_flood() => {
                self.link.set_fault(Fault::RequestFlood { frame, detail });
                false
            }
            Parsed::Message(message) => tx.send(*message).await.is_ok(),
            Parsed::Blank | Parsed::UnknownNotification => true,
            // A body or an SSE event is one message, not a stream of lines: text that is
            // not JSON-RPC there is a broken answer, not a log line to skip.
            Parsed::Noise(detail) | Parsed::Garbage(detail) => {
                self.link.set_fault(Fault::Garbage { frame, detail });
                false
            }
        }
    }
}

/// Whether a GET was answered with an event stream (200, `text/event-stream`).
fn event_stream(response: &hyper::Response<Incoming>) -> bool {
    let media = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim_start().to_ascii_lowercase());
    response.status() == hyper::StatusCode::OK
        && media.is_some_and(|v| v.starts_with("text/event-stream"))
}

/// Whether a message is the client's `notifications/initialized`.
fn initialized(item: &ClientJsonRpcMessage) -> bool {
    matches!(
        item,
        rmcp::model::JsonRpcMessage::Notification(n)
            if matches!(n.notification, rmcp::model::ClientNotification::InitializedNotification(_))
    )
}

/// What the stateless protocol (2026-07-28, SEP-2243) asks to be repeated in the headers
/// of a request that carries its own version in `_meta`.
#[derive(Default)]
struct Standard {
    version: Option<String>,
    headers: Vec<(String, String)>,
}

/// The standard headers of one outgoing message, when its `_meta` names a version from
/// 2026-07-28 on: `Mcp-Method`; `Mcp-Name` for the methods that name something; for a
/// `tools/call`, an `Mcp-Param-*` header for each argument the tool's schema declares
/// (`params`, from the tools last listed).
fn standard_headers(body: &[u8], params: &ParamHeaders) -> Standard {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Standard::default();
    };
    let request = value.get("params");
    let version = request
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .and_then(|v| v.as_str())
        .map(str::to_owned);
    let mut headers = Vec::new();
    let method = value.get("method").and_then(|m| m.as_str());
    if let (Some(method), Some(version)) = (method, &version)
        && version.as_str() >= super::options::STATELESS_PROTOCOL
    {
        headers.push(("mcp-method".to_owned(), method.to_owned()));
        let key = match method {
            "tools/call" | "prompts/get" => Some("name"),
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
            _ => None,
        };
        let name = key.and_then(|key| request?.get(key)?.as_str());
        if let Some(name) = name {
            headers.push(("mcp-name".to_owned(), param_headers::encode(name)));
        }
        if let (Some(request), "tools/call") = (request, method) {
            headers.extend(params.for_call(request));
        }
    }
    Standard { version, headers }
}

/// The protocol version of an initialize result, for the later requests' header.
fn negotiated(bytes: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let result = value.get("result")?;
    result.get("serverInfo")?;
    Some(result.get("protocolVersion")?.as_str()?.to_string())
}

#[cfg(test)]
mod tests {
    use super::standard_headers;
    use crate::client::param_headers::ParamHeaders;

    fn headers(body: &str) -> (Option<String>, Vec<(String, String)>) {
        let tools = serde_json::json!([{"name": "query_data", "inputSchema": {"properties": {
            "datasource": {"type": "string", "x-mcp-header": "Datasource"}}}}]);
        let standard = standard_headers(body.as_bytes(), &ParamHeaders::from_tools(&tools));
        let headers = standard.headers;
        (standard.version, headers)
    }

    fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn stateless_requests_repeat_method_and_name_in_headers_and_older_ones_do_not() {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"read_note",{meta}}}}}"#
        );
        assert_eq!(
            headers(&call),
            (
                Some("2026-07-28".into()),
                owned(&[("mcp-method", "tools/call"), ("mcp-name", "read_note")])
            )
        );
        // A declared argument is repeated in its Mcp-Param header.
        let query = format!(
            r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"query_data","arguments":{{"datasource":"analytics","query":"x"}},{meta}}}}}"#
        );
        assert_eq!(
            headers(&query).1,
            owned(&[
                ("mcp-method", "tools/call"),
                ("mcp-name", "query_data"),
                ("mcp-param-Datasource", "analytics")
            ])
        );
        // A name that is not plain visible ASCII travels base64-wrapped.
        let read = format!(
            r#"{{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{{"uri":"note://é",{meta}}}}}"#
        );
        assert_eq!(
            headers(&read).1[1],
            ("mcp-name".into(), "=?base64?bm90ZTovL8Op?=".into())
        );
        let list =
            format!(r#"{{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{{{meta}}}}}"#);
        assert_eq!(headers(&list).1, owned(&[("mcp-method", "tools/list")]));
        // Before 2026-07-28, or without a version in _meta: nothing added.
        let old = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"query_data","arguments":{"datasource":"a"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}"#;
        assert_eq!(headers(old), (Some("2025-11-25".into()), vec![]));
        assert_eq!(
            headers(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            (None, vec![])
        );
        assert_eq!(headers("not json"), (None, vec![]));
    }
}
