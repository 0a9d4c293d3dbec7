//! What `vac probe` audits (SPEC §3.1): a stdio command, a command that serves Streamable
//! HTTP inside the sandbox, or a remote URL. [`Target`] is what the user named;
//! [`Server`] is what each run starts or reaches.

use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use vac_contracts::ErrorKind;
use vac_sandbox::{Running, Sandbox};

use super::vocab::RunFailure;
use crate::client::{Dial, HttpEndpoint};

/// Why the other sensors of a remote target are absent.
pub(crate) const REMOTE: &str = "remote target: only the protocol is witnessed";

/// How long to wait between looks for a launched server's listening socket.
const POLL: Duration = Duration::from_millis(50);

/// What to audit.
#[derive(Debug, Clone)]
pub enum Target {
    /// A command run in the sandbox, spoken to over its stdin and stdout.
    Stdio(Vec<OsString>),
    /// A command run in the sandbox that serves Streamable HTTP on `127.0.0.1:port` (the
    /// sandbox's own loopback) at `path`; the client connects inside the run's network
    /// namespace, and every sensor applies.
    LaunchedHttp {
        command: Vec<OsString>,
        port: u16,
        path: String,
    },
    /// A server already listening at an `http://` URL: no sandbox, only the protocol.
    RemoteHttp(HttpEndpoint),
}

impl Target {
    /// The command run in the sandbox, if any.
    pub fn command(&self) -> Option<&[OsString]> {
        match self {
            Target::Stdio(command) | Target::LaunchedHttp { command, .. } => Some(command),
            Target::RemoteHttp(_) => None,
        }
    }

    /// How receipts and reports name the target.
    pub fn describe(&self) -> String {
        let command = |command: &[OsString]| {
            command
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        };
        match self {
            Target::Stdio(c) => command(c),
            Target::LaunchedHttp {
                command: c,
                port,
                path,
            } => format!("http://127.0.0.1:{port}{path} served by {}", command(c)),
            Target::RemoteHttp(endpoint) => endpoint.url().to_string(),
        }
    }
}

/// Whether a target [`Target::describe`] described speaks HTTP (launched or remote): its
/// stdout, if vac sees it at all, is not the protocol's channel.
pub(crate) fn described_http(described: &str) -> bool {
    described.starts_with("http://") || described.starts_with("https://")
}

/// What one run starts (a fresh sandbox per run) or reaches.
pub(crate) enum Server {
    Stdio(Sandbox),
    LaunchedHttp {
        sandbox: Sandbox,
        port: u16,
        path: String,
    },
    Remote(HttpEndpoint),
}

/// A fresh id for a run without a sandbox.
pub(crate) fn remote_run_id() -> String {
    let mut bytes = [0u8; 6];
    let _ = getrandom::fill(&mut bytes);
    format!("remote-{}", hex::encode(bytes))
}

/// Waits for the launched server to listen on `port` in the run's namespace (sock_diag,
/// or a trial connection when the network sensor is off), then returns the endpoint that
/// dials into that namespace.
pub(crate) async fn launched(
    running: &Running,
    port: u16,
    path: &str,
    within: Duration,
) -> Result<HttpEndpoint, RunFailure> {
    let fail = |kind, detail: String| RunFailure { kind, detail };
    let dialer = running
        .dialer()
        .map_err(|e| fail(ErrorKind::Crash, error_chain(&e)))?;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + within;
    loop {
        let listening = match running.network() {
            Some(sinkhole) => sinkhole.sockets().is_ok_and(|sockets| {
                sockets
                    .iter()
                    // Owned by a process of the run: not one of the sinkhole's listeners.
                    .any(|s| s.is_listening() && s.owner.is_some() && s.local.port() == port)
            }),
            None => {
                let dialer = dialer.clone();
                tokio::task::spawn_blocking(move || dialer.connect(addr, POLL).is_ok())
                    .await
                    .unwrap_or(false)
            }
        };
        if listening {
            break;
        }
        if running.termination().is_some() {
            let detail = format!("the server exited before listening on port {port}");
            return Err(fail(ErrorKind::Crash, detail));
        }
        if Instant::now() >= deadline {
            let detail = format!("nothing listened on port {port} within {within:?}");
            return Err(fail(ErrorKind::Timeout, detail));
        }
        tokio::time::sleep(POLL).await;
    }
    let dial: Dial =
        Arc::new(move |addr, timeout| dialer.connect(addr, timeout).map_err(std::io::Error::other));
    let url = format!("http://127.0.0.1:{port}{path}");
    HttpEndpoint::parse(&url)
        .map(|endpoint| endpoint.via(dial))
        .map_err(|e| fail(ErrorKind::Protocol, e.to_string()))
}

/// An error and its sources, on one line.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
