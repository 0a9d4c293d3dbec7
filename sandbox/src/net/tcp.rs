//! The sinkhole's TCP listeners: accept, keep the first bytes, name the HTTP host or the TLS
//! server name, then close.
//!
//! A connection is read until the cap, the end of an HTTP request head, a whole TLS record,
//! the peer's close, or a short idle timeout (shorter once the first bytes are in),
//! whichever comes first. An HTTP request gets its host's answer ([`super::web`]), so that a
//! fetch tool's call does its job and its egress is recorded with the bytes it sent; a
//! DNS-over-TCP query on port 53 gets answered.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::log::{HttpRequest, Recorder};
use super::tls::{Gateway, Replay};
use super::{dns, web};

/// Accepts on `listener` until the task is aborted; at most `open` connections are read at
/// once, the rest are logged and closed.
pub(crate) async fn serve(
    listener: TcpListener,
    log: Recorder,
    answers: Arc<Answers>,
    open: Arc<Semaphore>,
    idle: Duration,
) {
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        let local = stream.local_addr().unwrap_or(peer);
        // The permit before the log entry: a connection logged as accepted is one being
        // read, for whoever asks whether the sinkhole is done ([`super::Sinkhole::pending`]).
        let permit = Arc::clone(&open).try_acquire_owned();
        let index = log.tcp_accepted(peer, local);
        match permit {
            Ok(permit) => {
                let (log, answers) = (log.clone(), Arc::clone(&answers));
                tokio::spawn(async move {
                    handle(stream, peer, local, index, &log, &answers, idle).await;
                    drop(permit);
                });
            }
            Err(_) => log.tcp_unread(),
        }
    }
}

/// How long a connection that has sent its first bytes is read for more.
const MORE_BYTES: Duration = Duration::from_millis(200);

async fn handle(
    mut stream: TcpStream,
    peer: SocketAddr,
    local: SocketAddr,
    index: Option<usize>,
    log: &Recorder,
    answers: &Answers,
    idle: Duration,
) {
    let port = local.port();
    let cap = log.limits().max_bytes.max(16);
    let bytes = first_bytes(&mut stream, cap, port, idle).await;
    let http = parse_http(&bytes);
    let sni = parse_sni(&bytes);
    if port == 53 {
        answer_dns(&mut stream, &bytes, peer, log, &answers.dns).await;
    }
    if let Some(index) = index {
        log.tcp_bytes(index, &bytes, http.clone(), sni.clone());
    }
    if let Some(request) = &http {
        let _ = stream.write_all(&web::reply(request, local)).await;
    }
    match (&answers.tls, sni.is_some() || is_client_hello(&bytes)) {
        (Some(gateway), true) => {
            let accept = gateway.acceptor().accept(Replay::new(bytes, stream));
            // A client that refuses the certificate sends an alert and closes.
            let Ok(Ok(mut tls)) = tokio::time::timeout(idle, accept).await else {
                return;
            };
            let inside = first_bytes(&mut tls, cap, local.port(), idle).await;
            let request = parse_http(&inside);
            if let Some(index) = index {
                log.tcp_decrypted(index, &inside, request.clone());
            }
            if let Some(request) = &request {
                let _ = tls.write_all(&web::reply(request, local)).await;
            }
            let _ = tls.shutdown().await;
        }
        _ => {
            let _ = stream.shutdown().await;
        }
    }
}

/// What the sinkhole answers with beside the listeners: the resolver's cache (DNS over TCP)
/// and the TLS gateway (none if its keys could not be made).
#[derive(Debug)]
pub(crate) struct Answers {
    pub(crate) dns: Arc<dns::Cache>,
    pub(crate) tls: Option<Gateway>,
}

/// Reads a connection until the cap, a whole HTTP head, TLS record or DNS message, the
/// peer's close, or the idle timeout (shorter once the first bytes are in).
async fn first_bytes<S: AsyncRead + Unpin>(
    stream: &mut S,
    cap: usize,
    port: u16,
    idle: Duration,
) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(cap.min(4096));
    let mut chunk = [0u8; 2048];
    loop {
        // A client that has sent something and goes silent is waiting for an answer the
        // sinkhole will not give: a short wait for more, the full one for the first bytes.
        let wait = if bytes.is_empty() {
            idle
        } else {
            idle.min(MORE_BYTES)
        };
        let read = tokio::time::timeout(wait, stream.read(&mut chunk)).await;
        let Ok(Ok(n @ 1..)) = read else { break };
        bytes.extend_from_slice(&chunk[..n.min(cap - bytes.len())]);
        if bytes.len() >= cap || complete(&bytes, port) {
            break;
        }
    }
    bytes
}

/// Whether the bytes start a TLS handshake's ClientHello record.
fn is_client_hello(bytes: &[u8]) -> bool {
    matches!(bytes, [0x16, 3, _, _, _, 0x01, ..])
}

/// Whether the first bytes are a whole HTTP head, TLS record or DNS message.
fn complete(bytes: &[u8], port: u16) -> bool {
    if bytes.windows(4).any(|w| w == b"\r\n\r\n") {
        return true;
    }
    let framed = |header: usize, len: usize| bytes.len() >= header + len;
    match bytes {
        [0x16, 3, _, hi, lo, ..] => framed(5, usize::from(u16::from_be_bytes([*hi, *lo]))),
        [hi, lo, ..] if port == 53 => framed(2, usize::from(u16::from_be_bytes([*hi, *lo]))),
        _ => false,
    }
}

async fn answer_dns(
    stream: &mut TcpStream,
    bytes: &[u8],
    peer: SocketAddr,
    log: &Recorder,
    cache: &dns::Cache,
) {
    let mut rest = bytes;
    while let [hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo]));
        let Some(message) = tail.get(..len) else {
            return;
        };
        if let Some((reply, latency)) = dns::serve_one(log, cache, message, peer, true) {
            tokio::time::sleep(latency).await;
            let mut framed = (reply.len() as u16).to_be_bytes().to_vec();
            framed.extend_from_slice(&reply);
            if stream.write_all(&framed).await.is_err() {
                return;
            }
        }
        rest = &tail[len..];
    }
}

/// The request line and Host header of an HTTP request head.
pub(crate) fn parse_http(bytes: &[u8]) -> Option<HttpRequest> {
    let text = std::str::from_utf8(bytes).ok().or_else(|| {
        let valid = std::str::from_utf8(bytes).err()?.valid_up_to();
        std::str::from_utf8(&bytes[..valid]).ok()
    })?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next()?;
    let mut parts = request_line.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    let token = !method.is_empty() && method.bytes().all(|b| b.is_ascii_uppercase());
    if !token || target.is_empty() || !version.starts_with("HTTP/") || parts.next().is_some() {
        return None;
    }
    let host = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("host"))
        .map(|(_, value)| value.trim().to_string());
    Some(HttpRequest {
        request_line: request_line.to_string(),
        host,
    })
}

/// The server name of a TLS ClientHello.
pub(crate) fn parse_sni(bytes: &[u8]) -> Option<String> {
    let mut hello = Cursor(bytes);
    if hello.take(1)? != [0x16] {
        return None;
    }
    hello.take(4)?; // version, record length
    if hello.take(1)? != [0x01] {
        return None;
    }
    hello.take(3 + 2 + 32)?; // length, client version, random
    hello.vector(1)?; // session id
    hello.vector(2)?; // cipher suites
    hello.vector(1)?; // compression methods
    let mut extensions = Cursor(hello.vector(2)?);
    while let Some(kind) = extensions.take(2) {
        let data = extensions.vector(2)?;
        if kind == [0, 0] {
            let mut names = Cursor(Cursor(data).vector(2)?);
            while let Some(name_type) = names.take(1) {
                let name = names.vector(2)?;
                if name_type == [0] {
                    return Some(String::from_utf8_lossy(name).into_owned());
                }
            }
        }
    }
    None
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = tail;
        Some(head)
    }

    /// A vector with a big-endian length prefix of `width` bytes.
    fn vector(&mut self, width: usize) -> Option<&'a [u8]> {
        let len = self
            .take(width)?
            .iter()
            .fold(0usize, |acc, b| acc << 8 | usize::from(*b));
        self.take(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_request_line_and_host_are_read() {
        let http =
            parse_http(b"GET /x?a=1 HTTP/1.1\r\nUser-Agent: t\r\nhOsT:  example.com:8080 \r\n\r\n");
        assert_eq!(
            http,
            Some(HttpRequest {
                request_line: "GET /x?a=1 HTTP/1.1".into(),
                host: Some("example.com:8080".into()),
            })
        );
        assert_eq!(parse_http(b"SSH-2.0-OpenSSH_9.6\r\n"), None);
        assert!(complete(b"GET / HTTP/1.0\r\n\r\n", 80));
    }

    #[test]
    fn tls_client_hello_server_name_is_read() {
        let name = b"secret.example";
        let mut sni = vec![0, 0];
        let list_len = name.len() + 3;
        sni.extend_from_slice(&((list_len + 2) as u16).to_be_bytes());
        sni.extend_from_slice(&(list_len as u16).to_be_bytes());
        sni.push(0);
        sni.extend_from_slice(&(name.len() as u16).to_be_bytes());
        sni.extend_from_slice(name);
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]);
        body.extend_from_slice(&(sni.len() as u16).to_be_bytes());
        body.extend_from_slice(&sni);
        let mut handshake = vec![1, 0];
        handshake.extend_from_slice(&(body.len() as u16).to_be_bytes());
        handshake.extend_from_slice(&body);
        let mut record = vec![0x16, 3, 1];
        record.extend_from_slice(&(handshake.len() as u16).to_be_bytes());
        record.extend_from_slice(&handshake);
        assert_eq!(parse_sni(&record).as_deref(), Some("secret.example"));
        assert!(complete(&record, 443));
        assert!(!complete(&record[..record.len() - 1], 443));
        assert_eq!(parse_sni(&record[..record.len() - 1]), None);
    }
}
