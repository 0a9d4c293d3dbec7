//! [`RecordingTransport`]: the rmcp [`Transport`] over the recording byte layer.

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::frame::{Direction, FrameLog};
use super::options::BoxWrite;
use super::shared::LinkShared;

/// Receives what the stdout pump already recorded and parsed; writes and records every
/// line the SDK sends.
pub(crate) struct RecordingTransport {
    rx: mpsc::Receiver<ServerJsonRpcMessage>,
    writer: Arc<tokio::sync::Mutex<Option<BoxWrite>>>,
    log: FrameLog,
    shared: Arc<LinkShared>,
}

impl RecordingTransport {
    pub(crate) fn new(
        rx: mpsc::Receiver<ServerJsonRpcMessage>,
        writer: Arc<tokio::sync::Mutex<Option<BoxWrite>>>,
        log: FrameLog,
        shared: Arc<LinkShared>,
    ) -> Self {
        Self {
            rx,
            writer,
            log,
            shared,
        }
    }
}

impl Transport<RoleClient> for RecordingTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Registered before the line leaves, so the answer cannot outrun it.
        self.shared.expect_answer(&item);
        let encoded = serde_json::to_vec(&item);
        let writer = self.writer.clone();
        let log = self.log.clone();
        let shared = self.shared.clone();
        async move {
            let mut line = encoded?;
            line.push(b'\n');
            let mut writer = writer.lock().await;
            let Some(stdin) = writer.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "server stdin is closed",
                ));
            };
            let len = line.len() as u64;
            log.record(Direction::ToServer, log.elapsed(), line.clone(), len, false);
            stdin.write_all(&line).await?;
            stdin.flush().await?;
            shared.answer_written(&item);
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        let message = self.rx.recv().await;
        if message.is_none() {
            self.shared.mark_drained();
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(mut stdin) = self.writer.lock().await.take() {
            stdin.shutdown().await?;
        }
        Ok(())
    }
}
