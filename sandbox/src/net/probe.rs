//! The network self-test's traffic, sent by the sandbox init before the program starts: a DNS
//! lookup of a nonce name and an HTTP request to the answer with that name as Host.
//!
//! The lookup goes to the first nameserver of the sandbox's `/etc/resolv.conf` (the host's,
//! seen through the overlay), as a program's resolver would send it, or to 127.0.0.1 when
//! none is named. The init waits for the sinkhole's HTTP answer and its close, so both
//! records are in the log before the program runs. This runs after `fork`: the packets are
//! built by the parent, and the code here uses only blocking std sockets and small
//! allocations.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use super::dns;

const TIMEOUT: Duration = Duration::from_secs(5);

/// The self-test traffic of one run, built by the parent before fork.
#[derive(Debug, Clone)]
pub(crate) struct NetProbe {
    /// The nonce name, `vac-marker-<nonce>.example.net` (a name that exists nowhere, under a
    /// domain that does, so the resolver answers it).
    pub(crate) name: String,
    query: Vec<u8>,
    id: u16,
    request: Vec<u8>,
}

impl NetProbe {
    pub(crate) fn new(nonce: &str) -> NetProbe {
        let name = format!("vac-marker-{nonce}.example.net");
        let id = u16::from_str_radix(nonce.get(..4).unwrap_or("7ac0"), 16).unwrap_or(0x7ac0);
        NetProbe {
            query: dns::query(&name, id),
            request: format!(
                "GET /vac-marker HTTP/1.0\r\nHost: {name}\r\nUser-Agent: vac-self-test\r\n\r\n"
            )
            .into_bytes(),
            name,
            id,
        }
    }

    /// Sends the probe; errors only mean the sinkhole will report itself blind.
    pub(crate) fn send(&self) {
        let server = nameserver(&std::fs::read(RESOLV_CONF).unwrap_or_default());
        let Some(address) = self.resolve(server) else {
            return;
        };
        let Ok(mut stream) = TcpStream::connect_timeout(&SocketAddr::new(address, 80), TIMEOUT)
        else {
            return;
        };
        let _ = stream.set_read_timeout(Some(TIMEOUT));
        if stream.write_all(&self.request).is_ok() {
            let mut sink = [0u8; 256];
            while matches!(stream.read(&mut sink), Ok(1..)) {}
        }
    }

    fn resolve(&self, server: IpAddr) -> Option<IpAddr> {
        let bind = match server {
            IpAddr::V4(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
            IpAddr::V6(_) => SocketAddr::from(([0u16; 8], 0)),
        };
        let socket = UdpSocket::bind(bind).ok()?;
        socket.connect(SocketAddr::new(server, 53)).ok()?;
        socket.set_read_timeout(Some(TIMEOUT)).ok()?;
        socket.send(&self.query).ok()?;
        let mut reply = [0u8; 512];
        let len = socket.recv(&mut reply).ok()?;
        dns::first_a(&reply[..len], self.id).map(IpAddr::V4)
    }
}

pub(crate) const RESOLV_CONF: &str = "/etc/resolv.conf";

/// The first `nameserver` of a resolv.conf, or 127.0.0.1.
pub(crate) fn nameserver(resolv_conf: &[u8]) -> IpAddr {
    String::from_utf8_lossy(resolv_conf)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|rest| rest.trim().split('%').next()?.parse().ok())
        .next()
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// Every loopback `nameserver` of a resolv.conf (a local stub resolver's address), or
/// 127.0.0.1 when it names none at all (where a resolver then asks).
pub(crate) fn loopback_nameservers(resolv_conf: &[u8]) -> Vec<IpAddr> {
    let named: Vec<IpAddr> = String::from_utf8_lossy(resolv_conf)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|rest| rest.trim().split('%').next()?.parse().ok())
        .collect();
    if named.is_empty() {
        return vec![IpAddr::V4(Ipv4Addr::LOCALHOST)];
    }
    let mut loopback: Vec<IpAddr> = named.into_iter().filter(IpAddr::is_loopback).collect();
    loopback.dedup();
    loopback
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_nameservers_are_those_named_or_localhost_when_none_is() {
        let conf = b"# stub\nnameserver 127.0.0.53\nnameserver 10.0.0.2\nnameserver ::1\n";
        let found: Vec<String> = loopback_nameservers(conf)
            .iter()
            .map(|a| a.to_string())
            .collect();
        assert_eq!(found, ["127.0.0.53", "::1"]);
        assert!(loopback_nameservers(b"nameserver 10.255.255.53\n").is_empty());
        assert_eq!(
            loopback_nameservers(b"search lan\n"),
            [IpAddr::V4(Ipv4Addr::LOCALHOST)]
        );
    }

    #[test]
    fn the_first_nameserver_is_used_and_loopback_is_the_fallback() {
        let conf = b"# comment\nsearch x\nnameserver 127.0.0.53\nnameserver 8.8.8.8\n";
        assert_eq!(nameserver(conf), IpAddr::from([127, 0, 0, 53]));
        assert_eq!(
            nameserver(b"nameserver fe80::1%eth0\n"),
            "fe80::1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(nameserver(b""), IpAddr::from([127, 0, 0, 1]));
    }

    #[test]
    fn the_probe_asks_for_its_name_and_sends_it_as_host() {
        let probe = NetProbe::new("0123abcd");
        assert_eq!(probe.name, "vac-marker-0123abcd.example.net");
        let question = dns::parse_query(&probe.query).unwrap();
        assert_eq!(question.name, "vac-marker-0123abcd.example.net.");
        let http = super::super::tcp::parse_http(&probe.request).unwrap();
        assert_eq!(http.host.as_deref(), Some(probe.name.as_str()));
    }
}
