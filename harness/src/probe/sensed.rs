//! From the process and network sensors' logs to attributable effects and sensor
//! statuses: execs (program, argv, cwd), DNS names, TCP connections (host, port, first
//! bytes) and UDP datagrams, each checked for the planted canary tokens.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use vac_contracts::evidence::{
    ArgvSource, Connect, Dns, Dropped, Evidence, Exec, HostFrom, Listen, Origin, Udp,
};
use vac_contracts::{Effect, EffectClass};

use super::effects::{Windows, normalise_text};
use super::vocab::{ConnectSeen, ExecSeen, Lost, NetSeen};
use vac_contracts::detect::{canaries_in, credentials_in};

const EXCERPT: usize = 200;

/// The addresses the sinkhole's resolver answers with: today's, and the private ones of
/// receipts recorded before it answered with global ones, so they regrade the same.
const RESOLVED_TO: [IpAddr; 4] = [
    IpAddr::V4(vac_sandbox::SINKHOLE_V4),
    IpAddr::V6(vac_sandbox::SINKHOLE_V6),
    IpAddr::V4(std::net::Ipv4Addr::new(10, 255, 255, 1)),
    IpAddr::V6(std::net::Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0x0bad, 1)),
];

/// One observed exec, DNS query, connection or datagram, before subtraction.
#[derive(Debug, Clone)]
pub(crate) struct Sensed {
    pub(crate) class: EffectClass,
    /// What the clause patterns match: a program path, a name, or `host:port`.
    pub(crate) target: String,
    pub(crate) at: Duration,
    /// Without origin or time: [`effects`] adds them to what it attributes.
    pub(crate) detail: Evidence,
}

impl Sensed {
    /// What makes two observations the same for subtraction: class and normalised target;
    /// for an exec also its argv and working directory, so `git status` in a call is not
    /// hidden by the `git version` the server ran at startup.
    fn key(&self) -> (EffectClass, String) {
        let mut key = normalise_text(&self.target);
        if let Evidence::Exec(exec) = &self.detail {
            for part in &exec.argv {
                key.push('\0');
                key.push_str(&normalise_text(part));
            }
            key.push_str("\0cwd=");
            key.push_str(&normalise_text(exec.cwd.as_deref().unwrap_or_default()));
        }
        (self.class, key)
    }
}

/// Execs of a run's process tree (the sandbox's own marker is already left out).
pub(crate) fn execs(execs: &[ExecSeen]) -> Vec<Sensed> {
    execs
        .iter()
        .map(|exec| Sensed {
            class: EffectClass::Exec,
            target: exec.path.display().to_string(),
            at: Duration::from_nanos(exec.t_ns),
            detail: Evidence::Exec(Exec {
                origin: Origin::default(),
                at_ms: None,
                argv: exec.argv.clone(),
                argv_truncated: exec.argv_truncated,
                argv_source: match exec.argv_source {
                    vac_sandbox::ArgvSource::ExecCall => ArgvSource::ExecCall,
                    vac_sandbox::ArgvSource::Procfs => ArgvSource::Procfs,
                    vac_sandbox::ArgvSource::Missing => ArgvSource::Missing,
                },
                exe: exec.exe.as_ref().map(|p| p.display().to_string()),
                cwd: exec.cwd.as_ref().map(|p| p.display().to_string()),
                uid: exec.uid,
                pid: exec.pid,
            }),
        })
        .collect()
}

/// Network attempts of the program (the sandbox's self-test traffic, which comes before
/// the program starts, is left out).
pub(crate) fn network(log: &NetSeen, tokens: &[String]) -> Vec<Sensed> {
    let started = log.program_started.unwrap_or(Duration::MAX);
    let since = |t_ns: u64| Duration::from_nanos(t_ns);
    let mut sensed = Vec::new();
    for query in log.dns.iter().filter(|q| since(q.t_ns) >= started) {
        let name = query.name.trim_end_matches('.').to_ascii_lowercase();
        let detail = Evidence::Dns(Dns {
            origin: Origin::default(),
            at_ms: None,
            qtype: query.qtype,
            tcp: query.tcp,
            canaries: canaries_in(name.as_bytes(), tokens),
        });
        sensed.push(Sensed {
            class: EffectClass::Dns,
            target: name,
            at: since(query.t_ns),
            detail,
        });
    }
    for attempt in log.tcp.iter().filter(|t| since(t.t_ns) >= started) {
        // Each name is answered with an address of its own, so without Host or SNI the
        // last name answered with the connection's address is where it meant to go. In
        // receipts from when every name got one address, the last name looked up before
        // the connection is the best witness. A connection to any other address (loopback,
        // a literal IP) was never a name's.
        let dst = attempt.dst.ip().to_canonical();
        let legacy = RESOLVED_TO.contains(&dst);
        let looked_up = || {
            log.dns.iter().rfind(|q| {
                let named = match q.answer {
                    Some(answer) => answer.to_canonical() == dst,
                    None => legacy,
                };
                named && since(q.t_ns) >= started && q.t_ns <= attempt.t_ns
            })
        };
        let (host, host_from) = match (
            attempt.http.as_ref().and_then(|h| h.host.clone()),
            &attempt.sni,
            looked_up(),
        ) {
            (Some(host), _, _) => (host, HostFrom::HttpHost),
            (None, Some(sni), _) => (sni.clone(), HostFrom::TlsSni),
            (None, None, Some(query)) => (
                query.name.trim_end_matches('.').to_ascii_lowercase(),
                HostFrom::LastDnsLookup,
            ),
            (None, None, None) => (attempt.dst.ip().to_string(), HostFrom::Address),
        };
        let detail = connect_evidence(attempt, host_from, tokens);
        let target = format!("{host}:{}", attempt.dst.port());
        sensed.push(Sensed {
            class: EffectClass::Connect,
            target,
            at: since(attempt.t_ns),
            detail,
        });
    }
    // Datagrams to port 53 are the DNS queries above.
    for datagram in log
        .udp
        .iter()
        .filter(|d| since(d.t_ns) >= started && d.dst.port() != 53)
    {
        let detail = Evidence::Udp(Udp {
            origin: Origin::default(),
            at_ms: None,
            len: datagram.len,
            bytes: excerpt(&datagram.bytes),
            canaries: canaries_in(&datagram.bytes, tokens),
        });
        sensed.push(Sensed {
            class: EffectClass::Udp,
            target: datagram.dst.to_string(),
            at: since(datagram.t_ns),
            detail,
        });
    }
    sensed
}

/// Sockets the run listened on.
pub(crate) fn listens(listens: &[(String, Duration)]) -> Vec<Sensed> {
    listens
        .iter()
        .map(|(address, at)| Sensed {
            class: EffectClass::Listen,
            target: address.clone(),
            at: *at,
            detail: Evidence::Listen(Listen {
                origin: Origin::default(),
                at_ms: None,
                seen: "sock_diag".into(),
            }),
        })
        .collect()
}

/// The subject's attempts that the control run did not make, as effects attributed to calls.
/// Execs are subtracted by count (the control's one `git version` explains one of the
/// subject's, not a second); network attempts by kind, since resolvers and clients retry
/// as timing has it.
pub(crate) fn effects(
    subject: &[Sensed],
    control: &[Sensed],
    windows: &Windows,
    run_id: &str,
) -> Vec<Effect> {
    let mut background: HashMap<(EffectClass, String), usize> = HashMap::new();
    for sensed in control {
        *background.entry(sensed.key()).or_default() += 1;
    }
    let mut effects: Vec<Effect> = Vec::new();
    for sensed in subject {
        match background.get_mut(&sensed.key()) {
            Some(_) if sensed.class != EffectClass::Exec => continue,
            Some(left) if *left > 0 => {
                *left -= 1;
                continue;
            }
            _ => {}
        }
        let (attribution, basis) = windows.attribute(sensed.at);
        let duplicate = effects.iter().any(|e| {
            e.class == sensed.class && e.path == sensed.target && e.attribution == attribution
        });
        if duplicate {
            continue;
        }
        let mut detail = sensed.detail.clone();
        let origin = Origin {
            run: Some(run_id.to_owned()),
            attribution: Some(basis),
        };
        let at_ms = Some(sensed.at.as_millis() as u64);
        match &mut detail {
            Evidence::Exec(e) => (e.origin, e.at_ms) = (origin, at_ms),
            Evidence::Dns(e) => (e.origin, e.at_ms) = (origin, at_ms),
            Evidence::Connect(e) => (e.origin, e.at_ms) = (origin, at_ms),
            Evidence::Udp(e) => (e.origin, e.at_ms) = (origin, at_ms),
            Evidence::Listen(e) => (e.origin, e.at_ms) = (origin, at_ms),
            _ => unreachable!("the process and network sensors make only these"),
        }
        effects.push(Effect {
            class: sensed.class,
            path: sensed.target.clone(),
            attribution,
            detail,
            existed_before: false,
        });
    }
    effects
}

/// What the process and network sensors' caps turned away, for their evidence.
pub(crate) fn dropped(lost: &Lost) -> (Option<Dropped>, Option<Dropped>) {
    let procs = lost.processes.map(|d| Dropped::Processes {
        execs: d.execs,
        failed_execs: d.failed_execs,
        forks: d.forks,
        exits: d.exits,
        uid_changes: d.uid_changes,
    });
    let net = lost.network.map(|d| Dropped::Network {
        dns: d.dns,
        tcp: d.tcp,
        udp: d.udp,
        other: d.other,
        tcp_unread: d.tcp_unread,
        capture: d.capture,
    });
    (procs, net)
}

/// What a connection carried: where it went, how its host was told, its first bytes, and
/// the planted tokens and real secrets' formats among them.
fn connect_evidence(attempt: &ConnectSeen, host_from: HostFrom, tokens: &[String]) -> Evidence {
    // Inside TLS, the request the program sent is what carries a secret; its ClientHello
    // carries the name only.
    let sent = [attempt.first_bytes.as_slice(), attempt.decrypted.as_slice()].concat();
    let canaries = canaries_in(&sent, tokens);
    // Real secrets' formats among what was sent; the key only where one is, so the
    // evidence of receipts recorded before this stays as it was graded. Bytes that carry
    // a canary are the canary's finding (what else they hold in a secret's format came
    // from the same planted file).
    let credentials = credentials_in(&sent, tokens);
    let credentials = (!credentials.is_empty() && canaries.is_empty())
        .then(|| credentials.into_iter().map(str::to_owned).collect());
    Evidence::Connect(Box::new(Connect {
        origin: Origin::default(),
        at_ms: None,
        dst: attempt.dst.to_string(),
        accepted: attempt.accepted,
        host_from,
        request_line: attempt.http.as_ref().map(|h| h.request_line.clone()),
        sni: attempt.sni.clone(),
        first_bytes: excerpt(&attempt.first_bytes),
        first_bytes_len: attempt.first_bytes.len(),
        blake3: blake3::hash(&attempt.first_bytes).to_hex().to_string(),
        decrypted: attempt.inside_tls.then(|| excerpt(&attempt.decrypted)),
        canaries,
        credentials,
    }))
}

fn excerpt(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(EXCERPT)]).into_owned()
}
