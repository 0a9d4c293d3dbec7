//! The sinkhole's TCP listeners: accept, keep the first bytes, name the HTTP host or the TLS
//! server name, then close.
//!
//! A connection is read until the cap, the end of an HTTP request head, a whole TLS record,
//! the peer's close, or a short idle timeout (shorter once the first bytes are in),
//! whichever comes first. An HTTP request gets a
//! small, ordinary HTML page (a `200`), so that a fetch tool's call does its job and its
//! egress is recorded with the bytes it sent; a DNS-over-TCP query on port 53 gets answered.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::dns;
use super::log::{HttpRequest, Recorder};

/// The page every HTTP request gets: plain content a fetch or scrape tool can convert.
const PAGE: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>Team notes</title></head>\n<body><h1>Team notes</h1>\n<p>The weekly sync moved to \
Thursday at 10:00. Agenda: release checklist, on-call rota, open questions.</p>\n</body></html>\n";

/// The reply to an HTTP request: `200` with [`PAGE`], its body left out for `HEAD`.
fn http_reply(method: &str) -> Vec<u8> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        PAGE.len()
    );
    let mut reply = head.into_bytes();
    if method != "HEAD" {
        reply.extend_from_slice(PAGE.as_bytes());
    }
    reply
}

/// Accepts on `listener` until the task is aborted; at most `open` connections are read at
/// once, the rest are logged and closed.
pub(crate) async fn serve(
    listener: TcpListener,
    log: Recorder,
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
                let log = log.clone();
                tokio::spawn(async move {
                    handle(stream, peer, local.port(), index, &log, idle).await;
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
    port: u16,
    index: Option<usize>,
    log: &Recorder,
    idle: Duration,
) {
    let cap = log.limits().max_bytes.max(16);
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
    let http = parse_http(&bytes);
    let sni = parse_sni(&bytes);
    if port == 53 {
        answer_dns(&mut stream, &bytes, peer, log).await;
    }
    if let Some(index) = index {
        log.tcp_bytes(index, &bytes, http.clone(), sni);
    }
    if let Some(request) = &http {
        let method = request.request_line.split(' ').next().unwrap_or_default();
        let _ = stream.write_all(&http_reply(method)).await;
    }
    let _ = stream.shutdown().await;
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

async fn answer_dns(stream: &mut TcpStream, bytes: &[u8], peer: SocketAddr, log: &Recorder) {
    let mut rest = bytes;
    while let [hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo]));
        let Some(message) = tail.get(..len) else {
            return;
        };
        if let Some(reply) = dns::serve_one(log, message, peer, true) {
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
    fn an_http_request_gets_the_page_and_a_head_request_its_headers_only() {
        let get = String::from_utf8(http_reply("GET")).unwrap();
        let (head, body) = get.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(
            head.contains(&format!("Content-Length: {}", body.len())),
            "{head}"
        );
        assert!(body.contains("<h1>Team notes</h1>"), "{body}");
        let only_head = String::from_utf8(http_reply("HEAD")).unwrap();
        assert_eq!(only_head, format!("{head}\r\n\r\n"));
    }

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
