//! What the sinkhole saw: the [`NetworkLog`] and the bounded recorder that fills it.
//!
//! Every kind of record has a cap on entries and on bytes per entry; what does not fit is
//! counted in [`Dropped`], so a flood yields a bounded log that says it is incomplete.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// One name the resolver was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsQuery {
    /// The name as asked (non-printable bytes escaped as `\xNN`).
    pub name: String,
    /// The query type: 1 A, 28 AAAA, 16 TXT, …
    pub qtype: u16,
    /// The address it was answered with (A and AAAA), which a connection to it names.
    pub answer: Option<std::net::IpAddr>,
    /// Where the query came from (the program's socket).
    pub from: SocketAddr,
    /// `true` when it came over TCP.
    pub tcp: bool,
    pub at: SystemTime,
    pub since_start: Duration,
}

/// One TCP connection attempt (a SYN), with what it sent when a sinkhole listener took it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpAttempt {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// Whether a sinkhole listener accepted the connection (its port is listened on).
    pub accepted: bool,
    /// The first bytes the program sent (capped).
    pub first_bytes: Vec<u8>,
    /// HTTP request line and Host header, when the first bytes are an HTTP request.
    pub http: Option<HttpRequest>,
    /// The server name of a TLS ClientHello.
    pub sni: Option<String>,
    /// What the program sent inside TLS, when it completed the handshake with the
    /// sinkhole's certificate (it verified none): the first bytes of its request (capped).
    pub decrypted: Vec<u8>,
    pub at: SystemTime,
    pub since_start: Duration,
}

/// The start of an HTTP request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HttpRequest {
    pub request_line: String,
    pub host: Option<String>,
}

/// One UDP datagram the program sent, to any port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// Its payload (capped).
    pub bytes: Vec<u8>,
    /// The payload's full length.
    pub len: usize,
    pub at: SystemTime,
    pub since_start: Duration,
}

/// Any other IP packet the program sent: ICMP, raw IP protocols.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawPacket {
    /// The IP protocol number (1 ICMP, 58 ICMPv6, …).
    pub protocol: u8,
    pub src: std::net::IpAddr,
    pub dst: std::net::IpAddr,
    /// The packet from its IP header on (capped).
    pub bytes: Vec<u8>,
    pub at: SystemTime,
    pub since_start: Duration,
}

/// Records left out because a cap was reached, per kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Dropped {
    pub dns: u64,
    pub tcp: u64,
    pub udp: u64,
    pub other: u64,
    /// Connections accepted while the per-run limit of open sinkhole connections was
    /// reached: logged, but closed without reading their first bytes.
    pub tcp_unread: u64,
    /// Packets the kernel dropped before the capture read them (its buffer was full).
    pub capture: u64,
}

impl Dropped {
    /// Whether anything at all was left out.
    pub fn any(&self) -> bool {
        *self != Dropped::default()
    }
}

/// Whether the network sensor proved it was live in this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetSelfTest {
    /// The init's marker lookup of a nonce name and its HTTP request to that name were both
    /// logged.
    Live,
    /// The sinkhole ran but missed the marker traffic.
    Blind { reason: String },
    /// The sensor did not run (disabled, or the sinkhole could not start).
    Absent { reason: String },
}

/// Everything the sinkhole saw, in arrival order per kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkLog {
    pub dns: Vec<DnsQuery>,
    pub tcp: Vec<TcpAttempt>,
    pub udp: Vec<Datagram>,
    pub other: Vec<RawPacket>,
    pub dropped: Dropped,
    pub self_test: NetSelfTest,
    /// When the program started (since the run's start); what came before is the
    /// sandbox's own self-test traffic.
    pub program_started: Option<Duration>,
}

/// Caps of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLimits {
    /// Entries kept per kind (DNS, TCP, UDP, other).
    pub max_entries: usize,
    /// Bytes kept per TCP connection, datagram or packet.
    pub max_bytes: usize,
}

#[derive(Debug, Default)]
struct State {
    dns: Vec<DnsQuery>,
    tcp: Vec<TcpAttempt>,
    tcp_index: HashMap<(SocketAddr, SocketAddr), usize>,
    udp: Vec<Datagram>,
    other: Vec<RawPacket>,
    dropped: Dropped,
    program_started: Option<Duration>,
}

/// The shared, bounded recorder the sinkhole's tasks write to.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    state: Arc<Mutex<State>>,
    limits: LogLimits,
    epoch: Instant,
}

/// The address with an IPv4-mapped IPv6 address turned back into IPv4.
pub(crate) fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

impl Recorder {
    pub(crate) fn new(limits: LogLimits, epoch: Instant) -> Recorder {
        Recorder {
            state: Arc::default(),
            limits,
            epoch,
        }
    }

    pub(crate) fn limits(&self) -> LogLimits {
        self.limits
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn now(&self) -> (SystemTime, Duration) {
        (SystemTime::now(), self.epoch.elapsed())
    }

    pub(crate) fn dns(
        &self,
        name: String,
        qtype: u16,
        answer: Option<std::net::IpAddr>,
        from: SocketAddr,
        tcp: bool,
    ) {
        let (at, since_start) = self.now();
        let max = self.limits.max_entries;
        self.with(|s| {
            if s.dns.len() < max {
                let from = canonical(from);
                s.dns.push(DnsQuery {
                    name,
                    qtype,
                    answer,
                    from,
                    tcp,
                    at,
                    since_start,
                });
            } else {
                s.dropped.dns += 1;
            }
        });
    }

    /// A SYN seen by the capture. `listened` says a listener will report the connection
    /// too (and count it if it does not fit).
    pub(crate) fn tcp_syn(&self, src: SocketAddr, dst: SocketAddr, listened: bool) {
        self.tcp_entry(src, dst, false, !listened);
    }

    /// A connection a listener accepted; returns its entry for [`Recorder::tcp_bytes`].
    pub(crate) fn tcp_accepted(&self, src: SocketAddr, dst: SocketAddr) -> Option<usize> {
        self.tcp_entry(src, dst, true, true)
    }

    fn tcp_entry(
        &self,
        src: SocketAddr,
        dst: SocketAddr,
        accepted: bool,
        count_drop: bool,
    ) -> Option<usize> {
        let (src, dst) = (canonical(src), canonical(dst));
        let (at, since_start) = self.now();
        let max = self.limits.max_entries;
        self.with(|s| {
            if let Some(&index) = s.tcp_index.get(&(src, dst)) {
                s.tcp[index].accepted |= accepted;
                return Some(index);
            }
            if s.tcp.len() >= max {
                if count_drop {
                    s.dropped.tcp += 1;
                }
                return None;
            }
            s.tcp_index.insert((src, dst), s.tcp.len());
            s.tcp.push(TcpAttempt {
                src,
                dst,
                accepted,
                first_bytes: Vec::new(),
                decrypted: Vec::new(),
                http: None,
                sni: None,
                at,
                since_start,
            });
            Some(s.tcp.len() - 1)
        })
    }

    pub(crate) fn tcp_bytes(
        &self,
        index: usize,
        bytes: &[u8],
        http: Option<HttpRequest>,
        sni: Option<String>,
    ) {
        let keep = &bytes[..bytes.len().min(self.limits.max_bytes)];
        self.with(|s| {
            if let Some(entry) = s.tcp.get_mut(index) {
                entry.first_bytes = keep.to_vec();
                entry.http = http;
                entry.sni = sni;
            }
        });
    }

    /// What a connection sent inside TLS; its request line and Host replace the entry's.
    pub(crate) fn tcp_decrypted(&self, index: usize, bytes: &[u8], http: Option<HttpRequest>) {
        let keep = &bytes[..bytes.len().min(self.limits.max_bytes)];
        self.with(|s| {
            if let Some(entry) = s.tcp.get_mut(index) {
                entry.decrypted = keep.to_vec();
                if http.is_some() {
                    entry.http = http;
                }
            }
        });
    }

    pub(crate) fn tcp_unread(&self) {
        self.with(|s| s.dropped.tcp_unread += 1);
    }

    pub(crate) fn udp(&self, src: SocketAddr, dst: SocketAddr, payload: &[u8]) {
        let (at, since_start) = self.now();
        let limits = self.limits;
        self.with(|s| {
            if s.udp.len() < limits.max_entries {
                s.udp.push(Datagram {
                    src: canonical(src),
                    dst: canonical(dst),
                    bytes: payload[..payload.len().min(limits.max_bytes)].to_vec(),
                    len: payload.len(),
                    at,
                    since_start,
                });
            } else {
                s.dropped.udp += 1;
            }
        });
    }

    pub(crate) fn other(
        &self,
        protocol: u8,
        addrs: (std::net::IpAddr, std::net::IpAddr),
        packet: &[u8],
    ) {
        let (at, since_start) = self.now();
        let limits = self.limits;
        self.with(|s| {
            if s.other.len() < limits.max_entries {
                s.other.push(RawPacket {
                    protocol,
                    src: addrs.0.to_canonical(),
                    dst: addrs.1.to_canonical(),
                    bytes: packet[..packet.len().min(limits.max_bytes)].to_vec(),
                    at,
                    since_start,
                });
            } else {
                s.dropped.other += 1;
            }
        });
    }

    pub(crate) fn mark_program_start(&self) {
        let now = self.epoch.elapsed();
        self.with(|s| s.program_started = Some(now));
    }

    pub(crate) fn capture_lost(&self, packets: u64) {
        self.with(|s| s.dropped.capture += packets);
    }

    /// A copy of the log so far, with the self-test judged against `probe_name`.
    pub(crate) fn snapshot(&self, probe_name: Option<&str>) -> NetworkLog {
        self.with(|s| {
            let self_test = judge(probe_name, &s.dns, &s.tcp);
            NetworkLog {
                dns: s.dns.clone(),
                tcp: s.tcp.clone(),
                udp: s.udp.clone(),
                other: s.other.clone(),
                dropped: s.dropped,
                self_test,
                program_started: s.program_started,
            }
        })
    }
}

fn judge(probe_name: Option<&str>, dns: &[DnsQuery], tcp: &[TcpAttempt]) -> NetSelfTest {
    let Some(name) = probe_name else {
        return NetSelfTest::Absent {
            reason: "no marker name was planned for this run".into(),
        };
    };
    let same = |n: &str| n.trim_end_matches('.').eq_ignore_ascii_case(name);
    if !dns.iter().any(|q| same(&q.name)) {
        return NetSelfTest::Blind {
            reason: format!("the resolver never logged the marker name {name}"),
        };
    }
    let host = |a: &TcpAttempt| {
        a.http
            .as_ref()
            .and_then(|h| h.host.as_deref())
            .is_some_and(|h| same(h.split(':').next().unwrap_or(h)))
    };
    if !tcp.iter().any(host) {
        return NetSelfTest::Blind {
            reason: format!("no HTTP request with Host: {name} was logged"),
        };
    }
    NetSelfTest::Live
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder(max_entries: usize) -> Recorder {
        Recorder::new(
            LogLimits {
                max_entries,
                max_bytes: 4,
            },
            Instant::now(),
        )
    }

    #[test]
    fn a_syn_and_its_accept_are_one_attempt_and_caps_count_drops() {
        let log = recorder(1);
        let (src, dst) = (
            "127.0.0.1:4000".parse().unwrap(),
            "[::ffff:10.0.0.1]:80".parse().unwrap(),
        );
        log.tcp_syn(src, dst, true);
        let index = log.tcp_accepted(src, dst).unwrap();
        log.tcp_bytes(index, b"GET / HTTP/1.1", None, None);
        log.tcp_syn("127.0.0.1:4001".parse().unwrap(), dst, false);
        log.udp(src, dst, b"x");
        log.udp(src, dst, b"y");
        let snapshot = log.snapshot(None);
        assert_eq!(snapshot.tcp.len(), 1);
        assert!(snapshot.tcp[0].accepted);
        assert_eq!(snapshot.tcp[0].dst, "10.0.0.1:80".parse().unwrap());
        assert_eq!(snapshot.tcp[0].first_bytes, b"GET ");
        assert_eq!((snapshot.dropped.tcp, snapshot.dropped.udp), (1, 1));
    }

    #[test]
    fn the_self_test_needs_both_the_name_and_the_host() {
        let log = recorder(10);
        let name = "vac-marker-ab.invalid";
        let from = "127.0.0.1:5000".parse().unwrap();
        assert!(matches!(
            log.snapshot(Some(name)).self_test,
            NetSelfTest::Blind { .. }
        ));
        log.dns(format!("{name}."), 1, None, from, false);
        assert!(matches!(
            log.snapshot(Some(name)).self_test,
            NetSelfTest::Blind { .. }
        ));
        let index = log
            .tcp_accepted(from, "23.215.0.136:80".parse().unwrap())
            .unwrap();
        let http = HttpRequest {
            request_line: "GET / HTTP/1.0".into(),
            host: Some("VAC-MARKER-AB.invalid:80".into()),
        };
        log.tcp_bytes(index, b"", Some(http), None);
        assert_eq!(log.snapshot(Some(name)).self_test, NetSelfTest::Live);
    }

    #[test]
    fn http_requests_and_drop_counts_serialise_by_field_name() {
        let request = HttpRequest {
            request_line: "GET /x HTTP/1.1".into(),
            host: Some("evil.example".into()),
        };
        let json = serde_json::to_string(&request).unwrap();
        assert_eq!(
            json,
            r#"{"request_line":"GET /x HTTP/1.1","host":"evil.example"}"#
        );
        assert_eq!(serde_json::from_str::<HttpRequest>(&json).unwrap(), request);
        let dropped = Dropped {
            dns: 1,
            tcp: 2,
            udp: 3,
            other: 4,
            tcp_unread: 5,
            capture: 6,
        };
        let json = serde_json::to_string(&dropped).unwrap();
        assert_eq!(
            json,
            r#"{"dns":1,"tcp":2,"udp":3,"other":4,"tcp_unread":5,"capture":6}"#
        );
        assert_eq!(serde_json::from_str::<Dropped>(&json).unwrap(), dropped);
    }
}
