//! The sinkhole's resolver: answers as a recursive resolver on an ordinary network would,
//! and logs every question.
//!
//! A and AAAA questions for a name that can exist get one answer, [`address_of`] the name:
//! global unicast, stable for the name, different for different names, as a real resolver's
//! would be (a server that compared two names' addresses told the sinkhole by their being
//! one); any other type an empty NOERROR answer. A name that cannot exist (under no
//! top-level domain of the root zone, or under a special-use one such as `.invalid`) gets
//! NXDOMAIN with the root's SOA, as it would anywhere ([`resolve`]). Answers take as long as
//! a resolver's cache makes them ([`Cache`]). Every address of the namespace is local, so
//! whichever address a name got, a connection to it reaches the sinkhole; and whichever
//! nameserver `/etc/resolv.conf` names, its queries arrive at the sockets bound to port 53
//! here.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::errno::Errno;

use tokio::net::UdpSocket;
use tokio::sync::Semaphore;

use super::log::Recorder;

/// The address every A question was answered with before each name had its own (receipts
/// of that time name connections to it).
pub const SINKHOLE_V4: Ipv4Addr = Ipv4Addr::new(23, 215, 0, 136);
/// The address every AAAA question was answered with before each name had its own.
pub const SINKHOLE_V6: Ipv6Addr = Ipv6Addr::new(0x2600, 0x1406, 0x3a00, 0x21, 0, 0, 0x173e, 0x2e65);

/// First octets of ordinary, publicly routed IPv4 space (cloud and CDN ranges): never
/// private, shared, loopback, link-local, multicast or reserved, so servers that refuse
/// private destinations against SSRF (mcp-server-fetch does) fetch from them as from any
/// site.
const FIRST_OCTETS: [u8; 12] = [23, 34, 35, 44, 52, 54, 104, 142, 151, 157, 185, 199];

/// The answer to a question for `name` of type `qtype`: for A and AAAA, the name's own
/// address (derived from the name, case and a final dot aside: the same in every run), none
/// for any other type.
pub(crate) fn address_of(name: &str, qtype: u16) -> Option<IpAddr> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let h = blake3::hash(name.as_bytes());
    let h = h.as_bytes();
    match qtype {
        TYPE_A => Some(IpAddr::V4(Ipv4Addr::new(
            FIRST_OCTETS[usize::from(h[0]) % FIRST_OCTETS.len()],
            h[1],
            h[2],
            1 + h[3] % 253,
        ))),
        TYPE_AAAA => {
            let word = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
            Some(IpAddr::V6(Ipv6Addr::new(
                0x2600,
                0x1f00 | (word(4) & 0xff),
                word(6),
                word(8),
                0,
                0,
                word(10),
                word(12) | 1,
            )))
        }
        _ => None,
    }
}

/// What a recursive resolver finds for a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// The name's address, of the question's type.
    Address(IpAddr),
    /// The name can exist, but has no record of the question's type (NOERROR, no answer).
    NoData,
    /// No such name (NXDOMAIN).
    NoName,
}

/// Special-use top-level domains that no public resolver answers (RFC 6761, 6762, 7686,
/// 8375, 9476; `.internal` reserved for private use), whether or not a suffix list names
/// them.
const SPECIAL_USE: [&str; 8] = [
    "invalid",
    "test",
    "example",
    "local",
    "onion",
    "alt",
    "internal",
    "home.arpa",
];

/// What a resolver finds for `name` and `qtype`: NXDOMAIN for a name under no top-level
/// domain of the root zone (the public suffix list's known suffixes) or under a special-use
/// one; loopback for `localhost` and its subdomains (RFC 6761); no data for a public suffix
/// itself (`com`, `co.uk`) or a type other than A and AAAA; else the name's own address.
pub(crate) fn resolve(name: &str, qtype: u16) -> Found {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let under = |domain: &str| {
        name == domain
            || name
                .strip_suffix(domain)
                .is_some_and(|rest| rest.ends_with('.'))
    };
    if under("localhost") {
        return match qtype {
            TYPE_A => Found::Address(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            TYPE_AAAA => Found::Address(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            _ => Found::NoData,
        };
    }
    if name.is_empty() {
        return Found::NoData;
    }
    if SPECIAL_USE.iter().any(|domain| under(domain)) {
        return Found::NoName;
    }
    match psl::suffix(name.as_bytes()) {
        Some(suffix) if suffix.is_known() => {
            if suffix.as_bytes() == name.as_bytes() {
                return Found::NoData;
            }
        }
        _ => return Found::NoName,
    }
    address_of(&name, qtype).map_or(Found::NoData, Found::Address)
}

/// How long the resolver takes to answer, by what a recursive resolver's cache would hold:
/// a name already answered in this run comes from the cache (well under a millisecond); a
/// new name under a domain already looked up costs a round trip to that domain's servers;
/// a new domain, the walk down from its top-level domain's servers. A name under a
/// top-level domain that does not exist is answered from the cache once one such name was
/// (aggressive negative caching, RFC 8198). The spread is drawn
/// per question, so no two runs answer alike. Bounded: past [`Cache::NAMES`] names, every
/// name counts as cached.
#[derive(Debug)]
pub(crate) struct Cache {
    state: Mutex<CacheState>,
    /// Whether the program has started: the sandbox's own self-test lookup before it is
    /// answered at once and not cached (the program never sees it).
    program_started: std::sync::atomic::AtomicBool,
    /// Answers waiting out their latency; past this many, answers go at once.
    pub(crate) waiting: Arc<Semaphore>,
}

#[derive(Debug)]
struct CacheState {
    names: HashSet<String>,
    domains: HashSet<String>,
    random: u64,
}

impl Cache {
    const NAMES: usize = 4096;
    const WAITING: usize = 256;

    pub(crate) fn new() -> Cache {
        let mut seed = [0u8; 8];
        let _ = getrandom::fill(&mut seed);
        Cache {
            state: Mutex::new(CacheState {
                names: HashSet::new(),
                domains: HashSet::new(),
                random: u64::from_le_bytes(seed) | 1,
            }),
            program_started: std::sync::atomic::AtomicBool::new(false),
            waiting: Arc::new(Semaphore::new(Cache::WAITING)),
        }
    }

    /// From now on, answers take a cache's time.
    pub(crate) fn mark_program_start(&self) {
        self.program_started
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The latency of an answer for `name`, which is cached from now on (none before the
    /// program started).
    pub(crate) fn latency(&self, name: &str) -> Duration {
        if !self
            .program_started
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return Duration::ZERO;
        }
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        let top = name.rsplit('.').next().unwrap_or_default();
        let nonexistent = resolve(&name, TYPE_A) == Found::NoName;
        let domain = if nonexistent {
            top
        } else {
            psl::domain_str(&name).unwrap_or(top)
        }
        .to_string();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let full = state.names.len() >= Cache::NAMES;
        let cached =
            state.names.contains(&name) || (nonexistent && state.domains.contains(&domain));
        let (low, high) = if full || cached {
            (150, 900)
        } else if state.domains.contains(&domain) {
            (8_000, 35_000)
        } else {
            (25_000, 120_000)
        };
        if !full {
            state.names.insert(name);
            state.domains.insert(domain);
        }
        // xorshift64: a spread, not a secret.
        let mut x = state.random;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.random = x;
        Duration::from_micros(low + x % (high - low))
    }
}

const TYPE_A: u16 = 1;
const TYPE_AAAA: u16 = 28;
const MAX_MESSAGE: usize = 1232;

/// The question of a query: its name and type, and where the question section ends.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Question {
    pub(crate) name: String,
    pub(crate) qtype: u16,
    end: usize,
}

/// Reads the first question of a DNS query; `None` for anything that is not one.
pub(crate) fn parse_query(message: &[u8]) -> Option<Question> {
    if message.len() < 12 || message[2] & 0x80 != 0 || message[4..6] == [0, 0] {
        return None;
    }
    let mut at = 12;
    let mut name = String::new();
    loop {
        let len = usize::from(*message.get(at)?);
        at += 1;
        if len == 0 {
            break;
        }
        if len & 0xc0 != 0 || name.len() > 255 {
            return None; // no compression in a question of a query
        }
        for &byte in message.get(at..at + len)? {
            match byte {
                b'!'..=b'~' if byte != b'.' && byte != b'\\' => name.push(char::from(byte)),
                _ => name.push_str(&format!("\\x{byte:02x}")),
            }
        }
        name.push('.');
        at += len;
    }
    let qtype = u16::from_be_bytes([*message.get(at)?, *message.get(at + 1)?]);
    message.get(at + 3)?;
    Some(Question {
        name: if name.is_empty() { ".".into() } else { name },
        qtype,
        end: at + 4,
    })
}

/// The TTL a resolver's cache gives a name's answer: one of the values zones commonly set,
/// less the part of it already spent in the cache (both from the name, stable across runs),
/// as a recursive resolver answers, not the same 60 s for every name.
pub(crate) fn ttl_of(name: &str) -> u32 {
    const ZONE_TTLS: [u32; 7] = [60, 300, 300, 600, 1800, 3600, 86_400];
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let h = blake3::hash(format!("ttl:{name}").as_bytes());
    let h = h.as_bytes();
    let zone = ZONE_TTLS[usize::from(h[0]) % ZONE_TTLS.len()];
    zone - u32::from_be_bytes([0, h[1], h[2], h[3]]) % (zone / 2)
}

/// The root zone's SOA record, as a resolver sends it with NXDOMAIN for a name under no
/// top-level domain (owner `.`, class IN, TTL 86400, then its data).
const ROOT_SOA: &[u8] = b"\0\0\x06\0\x01\0\x01\x51\x80\0\x40\
\x01a\x0croot-servers\x03net\0\
\x05nstld\x0cverisign-grs\x03com\0\
\x78\xc4\x25\xfc\0\0\x07\x08\0\0\x03\x84\0\x09\x3a\x80\0\x01\x51\x80";

/// The answer to a query whose question is `question`: a recursive resolver's, so not
/// authoritative; NXDOMAIN with the root's SOA for a name that cannot exist.
pub(crate) fn answer(query: &[u8], question: &Question) -> Vec<u8> {
    let found = resolve(&question.name, question.qtype);
    let mut reply = Vec::with_capacity(question.end + 28 + ROOT_SOA.len());
    reply.extend_from_slice(&query[..2]);
    // QR, the query's opcode and RD; RA, NOERROR or NXDOMAIN.
    reply.push(0x80 | (query[2] & 0x79));
    reply.push(if found == Found::NoName { 0x83 } else { 0x80 });
    let rdata: Vec<u8> = match found {
        Found::Address(IpAddr::V4(v4)) => v4.octets().to_vec(),
        Found::Address(IpAddr::V6(v6)) => v6.octets().to_vec(),
        Found::NoData | Found::NoName => Vec::new(),
    };
    let answers = u16::from(!rdata.is_empty());
    let authority = u16::from(found == Found::NoName);
    for count in [1, answers, authority, 0] {
        reply.extend_from_slice(&u16::to_be_bytes(count));
    }
    reply.extend_from_slice(&query[12..question.end]);
    if authority == 1 {
        reply.extend_from_slice(ROOT_SOA);
    }
    if answers == 1 {
        reply.extend_from_slice(&[0xc0, 12]); // the name of the question
        reply.extend_from_slice(&question.qtype.to_be_bytes());
        reply.extend_from_slice(&[0, 1]); // class IN
        reply.extend_from_slice(&ttl_of(&question.name).to_be_bytes());
        reply.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        reply.extend_from_slice(&rdata);
    }
    reply
}

/// Answers and logs one query: the reply and how long the resolver takes to send it;
/// `None` when the bytes are no query (nothing is sent back).
pub(crate) fn serve_one(
    log: &Recorder,
    cache: &Cache,
    query: &[u8],
    from: SocketAddr,
    tcp: bool,
) -> Option<(Vec<u8>, Duration)> {
    let question = parse_query(query)?;
    let reply = answer(query, &question);
    let latency = cache.latency(&question.name);
    let answer = match resolve(&question.name, question.qtype) {
        Found::Address(address) => Some(address),
        Found::NoData | Found::NoName => None,
    };
    log.dns(question.name, question.qtype, answer, from, tcp);
    Some((reply, latency))
}

/// Serves UDP queries on `socket` until the task is aborted; each answer after its latency,
/// or at once when too many are waiting.
///
/// The answer comes from the address the query was sent to: the resolver listens on every
/// address of the sinkhole's namespace, and a client's resolver drops an answer from any
/// other.
pub(crate) async fn serve_udp(socket: Arc<UdpSocket>, log: Recorder, cache: Arc<Cache>) {
    let mut buffer = vec![0u8; MAX_MESSAGE * 2];
    loop {
        let received = socket
            .async_io(tokio::io::Interest::READABLE, || {
                crate::sys::recv_to(socket.as_fd(), &mut buffer).map_err(std::io::Error::from)
            })
            .await;
        let Ok((len, from, to)) = received else {
            continue;
        };
        let Some((reply, latency)) = serve_one(&log, &cache, &buffer[..len], from, false) else {
            continue;
        };
        match Arc::clone(&cache.waiting).try_acquire_owned() {
            Ok(permit) => {
                let socket = Arc::clone(&socket);
                tokio::spawn(async move {
                    tokio::time::sleep(latency).await;
                    send_udp(&socket, &reply, from, to);
                    drop(permit);
                });
            }
            Err(_) => send_udp(&socket, &reply, from, to),
        }
    }
}

/// Sends `reply` to `from`, from the address `to` the query was sent to when known. A
/// program that does not read its answers only loses them.
fn send_udp(socket: &UdpSocket, reply: &[u8], from: SocketAddr, to: Option<IpAddr>) {
    let _ = match to {
        Some(to) => crate::sys::send_from(socket.as_fd(), reply, from, to).map(drop),
        None => socket
            .try_send_to(reply, from)
            .map(drop)
            .map_err(|_| Errno::EIO),
    };
}

/// Logs the queries waiting in `socket` without answering them (the run is over).
pub(crate) fn drain(socket: &UdpSocket, log: &Recorder, cache: &Cache) {
    let mut buffer = vec![0u8; MAX_MESSAGE * 2];
    while let Ok((len, from)) = socket.try_recv_from(&mut buffer) {
        let _ = serve_one(log, cache, &buffer[..len], from, false);
    }
}

/// A standard query for an A record of `name`, with id `id`.
pub(crate) fn query(name: &str, id: u16) -> Vec<u8> {
    let mut message = Vec::with_capacity(name.len() + 18);
    message.extend_from_slice(&id.to_be_bytes());
    message.extend_from_slice(&[0x01, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.').filter(|l| !l.is_empty()) {
        message.push(label.len().min(63) as u8);
        message.extend_from_slice(&label.as_bytes()[..label.len().min(63)]);
    }
    message.extend_from_slice(&[0, 0, 1, 0, 1]);
    message
}

/// The first A record of a reply to a query with id `id`.
pub(crate) fn first_a(reply: &[u8], id: u16) -> Option<Ipv4Addr> {
    if reply.get(..2)? != id.to_be_bytes() || reply[2] & 0x80 == 0 {
        return None;
    }
    let count = |i: usize| u16::from_be_bytes([reply[i], reply[i + 1]]);
    reply.get(11)?;
    let (questions, answers) = (count(4), count(6));
    let skip_name = |mut at: usize| -> Option<usize> {
        loop {
            let len = *reply.get(at)?;
            match len {
                0 => return Some(at + 1),
                l if l & 0xc0 == 0xc0 => return Some(at + 2),
                l => at += 1 + usize::from(l),
            }
        }
    };
    let mut at = 12;
    for _ in 0..questions {
        at = skip_name(at)? + 4;
    }
    for _ in 0..answers {
        at = skip_name(at)?;
        let header = reply.get(at..at + 10)?;
        let rtype = u16::from_be_bytes([header[0], header[1]]);
        let len = usize::from(u16::from_be_bytes([header[8], header[9]]));
        let data = reply.get(at + 10..at + 10 + len)?;
        if rtype == TYPE_A && len == 4 {
            return Some(Ipv4Addr::new(data[0], data[1], data[2], data[3]));
        }
        at += 10 + len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_answered_with_the_names_own_address() {
        let query = query("Example.com", 0x1234);
        let question = parse_query(&query).unwrap();
        assert_eq!(
            (question.name.as_str(), question.qtype),
            ("Example.com.", TYPE_A)
        );
        let reply = answer(&query, &question);
        let Some(IpAddr::V4(own)) = address_of("example.com", TYPE_A) else {
            panic!("no A answer")
        };
        assert_eq!(first_a(&reply, 0x1234), Some(own));
        assert_eq!(first_a(&reply, 0x1235), None);
        // A recursive resolver's answer: recursion available, not authoritative.
        assert_eq!((reply[2] & 0x04, reply[3] & 0x80), (0, 0x80));
    }

    /// TTLs vary by name as cached answers' do, within what zones set, and stay the same
    /// for one name.
    #[test]
    fn ttls_vary_by_name_as_a_caches_do() {
        let ttls: std::collections::HashSet<u32> = (0..200)
            .map(|i| ttl_of(&format!("host{i}.example.org")))
            .collect();
        assert!(ttls.len() > 50, "{}", ttls.len());
        assert!(ttls.iter().all(|t| (30..=86_400).contains(t)));
        assert_eq!(ttl_of("Example.com."), ttl_of("example.com"));
    }

    /// Names a server might compare get addresses of their own, the same whatever the case
    /// or final dot, and every one of them public: never private, shared, loopback,
    /// link-local, multicast, documentation or reserved.
    #[test]
    fn every_name_has_a_stable_public_address_of_its_own() {
        let names: Vec<String> = (0..2000).map(|i| format!("host{i}.example.org")).collect();
        let mut seen = std::collections::HashSet::new();
        for name in &names {
            for qtype in [TYPE_A, TYPE_AAAA] {
                let address = address_of(name, qtype).unwrap();
                assert_eq!(
                    address_of(&format!("{}.", name.to_uppercase()), qtype),
                    Some(address)
                );
                match address {
                    IpAddr::V4(v4) => assert!(
                        !(v4.is_private()
                            || v4.is_loopback()
                            || v4.is_link_local()
                            || v4.is_multicast()
                            || v4.is_broadcast()
                            || v4.is_documentation()
                            || v4.is_unspecified()
                            || v4.octets()[0] >= 224
                            || (v4.octets()[0] == 100 && v4.octets()[1] & 0xc0 == 64)),
                        "{name}: {v4}"
                    ),
                    IpAddr::V6(v6) => assert_eq!(v6.segments()[0], 0x2600, "{name}: {v6}"),
                }
                seen.insert(address);
            }
        }
        // Two names share an IPv4 address with odds of one in about 200 million.
        assert_eq!(seen.len(), 4000);
        assert_eq!(address_of("pypi.org", 16), None);
    }

    #[test]
    fn other_types_get_an_empty_answer_and_odd_bytes_are_escaped() {
        let mut query = query("a.io", 7);
        let len = query.len();
        query[len - 3] = 16; // TXT
        query[13] = b' ';
        let question = parse_query(&query).unwrap();
        assert_eq!(question.name, "\\x20.io.");
        let reply = answer(&query, &question);
        assert_eq!(&reply[6..8], &[0, 0]);
        assert_eq!(reply.len(), len);
    }

    /// Names by what a resolver on an ordinary network finds for them. A server that looks
    /// up a name that cannot exist, and is answered, knows it is not on the internet.
    #[test]
    fn names_that_cannot_exist_get_nxdomain_and_the_rest_resolve() {
        let cases: [(&str, u16, &str); 16] = [
            ("www.python.org.", TYPE_A, "address"),
            ("Registry.NPMJS.org", TYPE_AAAA, "address"),
            ("api.github.com", 16, "no data"),
            ("bbc.co.uk", TYPE_A, "address"),
            ("com.", TYPE_A, "no data"),
            ("co.uk", TYPE_A, "no data"),
            (".", TYPE_A, "no data"),
            ("x7fk2q9.invalid", TYPE_A, "no name"),
            ("invalid", TYPE_A, "no name"),
            ("printer.local.", TYPE_A, "no name"),
            ("metadata.google.internal", TYPE_A, "no name"),
            ("build.test", TYPE_AAAA, "no name"),
            ("probe.zz9-not-a-tld", TYPE_A, "no name"),
            ("nas", TYPE_A, "no name"),
            ("router.home.arpa", TYPE_A, "no name"),
            ("foo.localhost", TYPE_AAAA, "loopback"),
        ];
        for (name, qtype, expected) in cases {
            let found = match resolve(name, qtype) {
                Found::Address(a) if a.is_loopback() => "loopback",
                Found::Address(_) => "address",
                Found::NoData => "no data",
                Found::NoName => "no name",
            };
            assert_eq!(found, expected, "{name} type {qtype}");
        }
        // Not a suffix of a special-use domain by its letters alone.
        assert!(matches!(resolve("mytest", TYPE_A), Found::NoName));
        assert!(matches!(resolve("latest.io", TYPE_A), Found::Address(_)));
    }

    /// NXDOMAIN as a recursive resolver sends it: RCODE 3, no answer, the root zone's SOA
    /// in the authority section (well formed: the record ends where the message does).
    #[test]
    fn nxdomain_carries_the_roots_soa() {
        let query = query("nothing.invalid", 9);
        let reply = answer(&query, &parse_query(&query).unwrap());
        assert_eq!((reply[3] & 0x0f, &reply[6..10]), (3, &[0u8, 0, 0, 1][..]));
        let soa = &reply[query.len()..];
        assert_eq!(&soa[..3], &[0, 0, 6]);
        let rdlength = usize::from(u16::from_be_bytes([soa[9], soa[10]]));
        assert_eq!(soa.len(), 11 + rdlength);
        assert_eq!(first_a(&reply, 9), None);
    }

    /// Latency as a cache makes it: a new domain slowest, a new name under a known domain
    /// a round trip, a name already answered well under a millisecond.
    #[test]
    fn answers_take_as_long_as_a_resolvers_cache_makes_them() {
        let cache = Cache::new();
        // The sandbox's self-test, before the program: at once, and not cached.
        assert_eq!(cache.latency("www.python.org"), Duration::ZERO);
        cache.mark_program_start();
        let first = cache.latency("www.python.org.");
        let sibling = cache.latency("docs.python.org");
        let again = cache.latency("WWW.python.org");
        assert!((25..120).contains(&first.as_millis()), "{first:?}");
        assert!((8..35).contains(&sibling.as_millis()), "{sibling:?}");
        assert!(again < Duration::from_millis(1), "{again:?}");
        cache.latency("a.invalid");
        assert!(cache.latency("b.invalid") < Duration::from_millis(1));
        let spread: HashSet<Duration> = (0..20)
            .map(|i| cache.latency(&format!("h{i}.example{i}.com")))
            .collect();
        assert!(spread.len() > 15, "{spread:?}");
    }

    #[test]
    fn garbage_and_replies_are_not_queries() {
        assert_eq!(parse_query(b"hello"), None);
        let mut reply = query("x", 1);
        reply[2] |= 0x80;
        assert_eq!(parse_query(&reply), None);
        assert_eq!(parse_query(&query("x", 1)[..14]), None);
    }
}
