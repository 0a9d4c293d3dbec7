//! The recording byte layer: [`Link`] starts the pumps (`pump.rs`) that read the server's
//! stdout and stderr into the [`FrameLog`] before anything else sees the bytes, or the
//! Streamable HTTP exchange (`http.rs`) that records every body the same way, with
//! [`LinkShared`] (`shared.rs`), the state the readers, the transport and the session share.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::endpoint::HttpEndpoint;
use super::frame::FrameLog;
use super::http::{HttpLink, HttpTransport};
use super::options::{BoxWrite, ClientOptions, ServerOutput, ServerStreams};
use super::pump::{StdoutPump, pump_stderr};
use super::shared::LinkShared;
use super::transport::RecordingTransport;
/// Parsed messages waiting for the SDK; with the line cap this bounds the queue's memory.
const QUEUE: usize = 4;

/// The running byte layer of one session.
pub(crate) struct Link {
    pub(crate) shared: Arc<LinkShared>,
    ends: Ends,
}

enum Ends {
    Pipes(Pipes),
    Http(HttpLink),
}

/// The stdio byte layer: the server's stdin and the pumps.
struct Pipes {
    writer: Arc<tokio::sync::Mutex<Option<BoxWrite>>>,
    cancel: watch::Sender<bool>,
    stdout_task: JoinHandle<()>,
    stderr_task: Option<JoinHandle<()>>,
}

impl Link {
    /// Starts the Streamable HTTP exchange and returns the transport the SDK runs on.
    pub(crate) fn start_http(
        endpoint: HttpEndpoint,
        output: ServerOutput,
        log: &FrameLog,
        options: &ClientOptions,
    ) -> (Self, HttpTransport) {
        let shared = Arc::new(LinkShared::new());
        let (http, transport) = HttpLink::start(endpoint, log, options, output, shared.clone());
        let link = Self {
            shared,
            ends: Ends::Http(http),
        };
        (link, transport)
    }

    /// Starts the pumps and returns the transport the SDK runs on.
    pub(crate) fn start(
        streams: ServerStreams,
        log: &FrameLog,
        options: &ClientOptions,
    ) -> (Self, RecordingTransport) {
        let shared = Arc::new(LinkShared::new());
        let (cancel, cancel_rx) = watch::channel(false);
        let (tx, rx) = mpsc::channel(QUEUE);
        let pump = StdoutPump::new(
            streams.stdout,
            options,
            log.clone(),
            shared.clone(),
            tx,
            cancel_rx.clone(),
        );
        let stdout_task = tokio::spawn(pump.run());
        let stderr_task = streams.stderr.map(|stderr| {
            tokio::spawn(pump_stderr(
                stderr,
                log.clone(),
                options.max_stderr_bytes,
                cancel_rx,
            ))
        });
        let writer = Arc::new(tokio::sync::Mutex::new(Some(streams.stdin)));
        let transport = RecordingTransport::new(rx, writer.clone(), log.clone(), shared.clone());
        let pipes = Pipes {
            writer,
            cancel,
            stdout_task,
            stderr_task,
        };
        let link = Self {
            shared,
            ends: Ends::Pipes(pipes),
        };
        (link, transport)
    }

    /// Stops the byte layer; every frame is in the log when this returns.
    pub(crate) async fn shutdown(self, grace: Duration) {
        match self.ends {
            Ends::Pipes(pipes) => pipes.shutdown(grace).await,
            Ends::Http(http) => http.shutdown(grace).await,
        }
    }
}

impl Pipes {
    /// Closes the server's stdin, gives it `grace` to finish writing and close its pipes,
    /// then stops the pumps.
    async fn shutdown(self, grace: Duration) {
        let writer = self.writer.clone();
        let close = async move {
            if let Some(mut stdin) = writer.lock().await.take() {
                let _ = stdin.shutdown().await;
            }
        };
        // A server that stopped reading can keep a write (and the lock) blocked forever.
        let _ = tokio::time::timeout(grace, close).await;
        let mut pumps: Vec<JoinHandle<()>> = std::iter::once(self.stdout_task)
            .chain(self.stderr_task)
            .collect();
        let pumps_done = async {
            for pump in &mut pumps {
                let _ = pump.await;
            }
        };
        let _ = tokio::time::timeout(grace, pumps_done).await;
        self.cancel.send_replace(true);
        for pump in pumps {
            // A handle awaited to completion above must not be polled again.
            if !pump.is_finished() {
                let _ = pump.await;
            }
        }
    }
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}
