//! The pumps of the byte layer: [`StdoutPump`] records every stdout line before parsing
//! it and hands the messages on; [`pump_stderr`] records stderr up to its cap.

use std::sync::Arc;

use rmcp::model::ServerJsonRpcMessage;
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, watch};

use super::error::Fault;
use super::frame::{Direction, FrameLog};
use super::lines::{Line, LineSplitter, Parsed, parse_line};
use super::options::{BoxRead, ClientOptions};
use super::shared::{LinkShared, MAX_NOISE_LINES};

const CHUNK: usize = 64 * 1024;

async fn cancelled(cancel: &mut watch::Receiver<bool>) {
    // A dropped sender (the session went away) cancels too.
    let _ = cancel.wait_for(|cancelled| *cancelled).await;
}

/// Reads stdout, records each line, and hands parsed messages to the transport.
pub(crate) struct StdoutPump {
    stdout: BoxRead,
    splitter: LineSplitter,
    max_line: usize,
    total: u64,
    max_total: u64,
    log: FrameLog,
    shared: Arc<LinkShared>,
    /// `None` once the stream is unusable or the SDK is gone: lines are then only recorded.
    tx: Option<mpsc::Sender<ServerJsonRpcMessage>>,
    cancel: watch::Receiver<bool>,
}

impl StdoutPump {
    pub(crate) fn new(
        stdout: BoxRead,
        options: &ClientOptions,
        log: FrameLog,
        shared: Arc<LinkShared>,
        tx: mpsc::Sender<ServerJsonRpcMessage>,
        cancel: watch::Receiver<bool>,
    ) -> Self {
        Self {
            stdout,
            splitter: LineSplitter::new(options.max_line_bytes),
            max_line: options.max_line_bytes,
            total: 0,
            max_total: options.max_total_bytes,
            log,
            shared,
            tx: Some(tx),
            cancel,
        }
    }

    pub(crate) async fn run(mut self) {
        let mut chunk = vec![0u8; CHUNK];
        let mut lines = Vec::new();
        loop {
            let read = tokio::select! {
                biased;
                () = cancelled(&mut self.cancel) => None,
                read = self.stdout.read(&mut chunk) => Some(read),
            };
            let fault = match read {
                None => {
                    self.flush_partial(true);
                    break;
                }
                Some(Ok(0)) => self.flush_partial(false).unwrap_or(Fault::Eof),
                Some(Ok(n)) => {
                    let room = usize::try_from(self.max_total - self.total).unwrap_or(usize::MAX);
                    let kept = n.min(room);
                    self.total += kept as u64;
                    self.splitter.push(&chunk[..kept], &mut lines);
                    for line in lines.drain(..) {
                        self.on_line(line).await;
                    }
                    // The line cap holds as bytes arrive: a line past it fails now, not at
                    // a newline that may never come (its partial line says so).
                    let past_line = self.splitter.pending() > self.max_line as u64;
                    if kept == n && !past_line {
                        continue;
                    }
                    let over_line = self.flush_partial(true);
                    over_line.unwrap_or(Fault::TotalBytes {
                        cap: self.max_total,
                    })
                }
                Some(Err(error)) => {
                    self.flush_partial(true);
                    Fault::Read(Arc::new(error))
                }
            };
            self.shared.set_fault(fault);
            break;
        }
        // The fault is set before the queue closes, so the transport never reports the end
        // of the stream without its reason.
        self.tx = None;
    }

    /// Records the unterminated line in progress; a `LineTooLong` fault if it was over the cap.
    fn flush_partial(&mut self, cut: bool) -> Option<Fault> {
        let line = self.splitter.take_partial()?;
        let fault = line.oversized.then_some(Fault::LineTooLong {
            cap: self.max_line,
            seen: line.len,
        });
        let at = self.log.elapsed();
        self.log.record(
            Direction::FromServer,
            at,
            line.bytes,
            line.len,
            cut || line.oversized,
        );
        fault
    }

    async fn on_line(&mut self, line: Line) {
        let at = self.log.elapsed();
        if line.oversized {
            self.log
                .record(Direction::FromServer, at, line.bytes, line.len, true);
            self.shared.set_fault(Fault::LineTooLong {
                cap: self.max_line,
                seen: line.len,
            });
            self.tx = None;
            return;
        }
        if self.tx.is_none() {
            self.log
                .record(Direction::FromServer, at, line.bytes, line.len, false);
            return;
        }
        let parsed = parse_line(&line.bytes);
        if let Parsed::Message(message) = &parsed {
            self.shared.observe(message, &line.bytes);
        }
        let line_bytes = match parsed {
            Parsed::Noise(_) => line.bytes.clone(),
            _ => Vec::new(),
        };
        let frame = self
            .log
            .record(Direction::FromServer, at, line.bytes, line.len, false);
        match parsed {
            Parsed::Message(_) if let Some(detail) = self.shared.request_flood() => {
                self.shared.set_fault(Fault::RequestFlood { frame, detail });
                self.tx = None;
            }
            Parsed::Message(message) => self.deliver(*message).await,
            Parsed::Blank | Parsed::UnknownNotification => {}
            Parsed::Noise(detail) => {
                if self.shared.note_noise(frame, &line_bytes) > MAX_NOISE_LINES {
                    let detail = format!(
                        "more than {MAX_NOISE_LINES} lines on stdout that are not JSON-RPC \
                         (the last: {detail})"
                    );
                    self.shared.set_fault(Fault::Garbage { frame, detail });
                    self.tx = None;
                }
            }
            Parsed::Garbage(detail) => {
                self.shared.set_fault(Fault::Garbage { frame, detail });
                self.tx = None;
            }
        }
    }

    async fn deliver(&mut self, message: ServerJsonRpcMessage) {
        let Some(tx) = &self.tx else { return };
        let delivered = tokio::select! {
            biased;
            () = cancelled(&mut self.cancel) => false,
            sent = tx.send(message) => sent.is_ok(),
        };
        if !delivered {
            self.tx = None;
        }
    }
}

/// Records stderr chunks up to `max` bytes and counts the rest.
pub(crate) async fn pump_stderr(
    mut stderr: BoxRead,
    log: FrameLog,
    max: u64,
    mut cancel: watch::Receiver<bool>,
) {
    let mut chunk = vec![0u8; CHUNK];
    let mut kept = 0u64;
    loop {
        let read = tokio::select! {
            biased;
            () = cancelled(&mut cancel) => break,
            read = stderr.read(&mut chunk) => read,
        };
        let n = match read {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let keep = n.min(usize::try_from(max - kept).unwrap_or(usize::MAX));
        if keep > 0 {
            let at = log.elapsed();
            log.record(
                Direction::Stderr,
                at,
                chunk[..keep].to_vec(),
                n as u64,
                keep < n,
            );
            kept += keep as u64;
        }
        if keep < n {
            log.count_stderr_dropped((n - keep) as u64);
        }
    }
}
