//! Every packet the program sends, from an `AF_PACKET` socket on the run's namespace: what
//! crosses `lo` (to the program's own listeners and a loopback resolver) and what leaves by
//! `eth0` for the sinkhole's namespace, so this sees the attempts no listener takes: a SYN to a port nobody listens on (answered by a reset), a
//! UDP datagram to any port, ICMP. Headers are parsed here by hand and bounded; the sinkhole's
//! own answers (DNS replies from port 53, resets, unreachables) are not attempts and are
//! skipped.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;

use nix::errno::Errno;
use nix::sys::socket::{LinkAddr, recvfrom};
use tokio::io::unix::AsyncFd;

use super::log::Recorder;
use crate::sys;

const PACKET_HOST: u8 = 0;
const PACKET_OUTGOING: u8 = 4;
const ARPHRD_LOOPBACK: u16 = 772;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;
const ICMPV6: u8 = 58;

/// What one captured packet was.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Packet<'a> {
    Syn {
        src: SocketAddr,
        dst: SocketAddr,
    },
    Udp {
        src: SocketAddr,
        dst: SocketAddr,
        payload: &'a [u8],
    },
    Other {
        protocol: u8,
        src: IpAddr,
        dst: IpAddr,
        packet: &'a [u8],
    },
    /// Not an attempt: a reply, a later segment, a fragment.
    Ignored,
}

/// Parses an IP packet (no link header).
pub(crate) fn parse(packet: &[u8], ethertype: u16) -> Packet<'_> {
    let parsed = match ethertype {
        ETH_P_IP => ipv4(packet),
        ETH_P_IPV6 => ipv6(packet),
        _ => None,
    };
    let Some((protocol, src, dst, transport)) = parsed else {
        return Packet::Ignored;
    };
    let port = |at: usize| {
        transport
            .get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    match protocol {
        TCP => match (port(0), port(2), transport.get(13)) {
            // SYN without ACK: a connection attempt.
            (Some(sport), Some(dport), Some(flags)) if flags & 0x12 == 0x02 => Packet::Syn {
                src: SocketAddr::new(src, sport),
                dst: SocketAddr::new(dst, dport),
            },
            _ => Packet::Ignored,
        },
        UDP => match (port(0), port(2)) {
            // The resolver's answers; the program cannot bind a port below 1024.
            (Some(53), _) => Packet::Ignored,
            (Some(sport), Some(dport)) => Packet::Udp {
                src: SocketAddr::new(src, sport),
                dst: SocketAddr::new(dst, dport),
                payload: transport.get(8..).unwrap_or_default(),
            },
            _ => Packet::Ignored,
        },
        // Destination unreachable: the kernel's answer to a datagram nobody takes.
        ICMP if transport.first() == Some(&3) => Packet::Ignored,
        ICMPV6 if transport.first() == Some(&1) => Packet::Ignored,
        // The link's own upkeep on `eth0`: neighbour and router discovery, and whatever
        // else goes to link-local multicast but a datagram (mDNS stays an attempt).
        ICMPV6 if transport.first().is_some_and(|t| (133..=137).contains(t)) => Packet::Ignored,
        _ if link_multicast(dst) => Packet::Ignored,
        _ => Packet::Other {
            protocol,
            src,
            dst,
            packet,
        },
    }
}

/// Whether `address` is IPv6 link-local multicast (`ff02::/16`: all nodes, routers, MLD).
fn link_multicast(address: IpAddr) -> bool {
    matches!(address, IpAddr::V6(v6) if v6.segments()[0] == 0xff02)
}

type Parsed<'a> = (u8, IpAddr, IpAddr, &'a [u8]);

fn ipv4(packet: &[u8]) -> Option<Parsed<'_>> {
    let header_len = usize::from(packet.first()? & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([*packet.get(2)?, *packet.get(3)?]));
    let fragment_offset = u16::from_be_bytes([*packet.get(6)?, *packet.get(7)?]) & 0x1fff;
    let octets = |at: usize| -> Option<IpAddr> {
        let b = packet.get(at..at + 4)?;
        Some(IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3])))
    };
    let transport = if fragment_offset != 0 || header_len < 20 {
        &[][..]
    } else {
        packet.get(header_len..total.min(packet.len()))?
    };
    Some((*packet.get(9)?, octets(12)?, octets(16)?, transport))
}

fn ipv6(packet: &[u8]) -> Option<Parsed<'_>> {
    let address = |at: usize| -> Option<IpAddr> {
        let bytes: [u8; 16] = packet.get(at..at + 16)?.try_into().ok()?;
        Some(IpAddr::V6(Ipv6Addr::from(bytes)))
    };
    Some((
        *packet.get(6)?,
        address(8)?,
        address(24)?,
        packet.get(40..)?,
    ))
}

/// Reads the capture socket until the task is aborted.
pub(crate) async fn serve(
    socket: Arc<crate::aside::ClosedAside<AsyncFd<OwnedFd>>>,
    log: Recorder,
    listened: Arc<[u16]>,
) {
    let mut buffer = vec![0u8; 65_536];
    loop {
        let Ok(mut ready) = socket.readable().await else {
            return;
        };
        if read_all(socket.get_ref(), &mut buffer, &log, &listened) == Err(Errno::EAGAIN) {
            ready.clear_ready();
        }
    }
}

/// Reads every packet waiting in the socket; `Err(EAGAIN)` once it is empty.
pub(crate) fn read_all(
    socket: &OwnedFd,
    buffer: &mut [u8],
    log: &Recorder,
    listened: &[u16],
) -> Result<(), Errno> {
    loop {
        let (len, from) = match recvfrom::<LinkAddr>(socket.as_raw_fd(), buffer) {
            Ok(received) => received,
            Err(Errno::EINTR) => continue,
            Err(errno) => {
                if let Ok(lost) = sys::packet_drops(socket.as_fd()) {
                    log.capture_lost(u64::from(lost));
                }
                return Err(errno);
            }
        };
        // Each loopback packet is seen leaving and arriving: keep the arrival. On `eth0`
        // what leaves is the program's, what arrives the sinkhole's answer.
        let Some(from) = from.filter(|f| match f.hatype() == ARPHRD_LOOPBACK {
            true => f.pkttype() == PACKET_HOST,
            false => f.pkttype() == PACKET_OUTGOING,
        }) else {
            continue;
        };
        match parse(
            &buffer[..len.min(buffer.len())],
            u16::from_be(from.protocol()),
        ) {
            Packet::Syn { src, dst } => log.tcp_syn(src, dst, listened.contains(&dst.port())),
            Packet::Udp { src, dst, payload } => log.udp(src, dst, payload),
            Packet::Other {
                protocol,
                src,
                dst,
                packet,
            } => log.other(protocol, (src, dst), packet),
            Packet::Ignored => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_packet(protocol: u8, transport: &[u8]) -> Vec<u8> {
        let total = (20 + transport.len()) as u16;
        let mut packet = vec![0x45, 0];
        packet.extend_from_slice(&total.to_be_bytes());
        packet.extend_from_slice(&[0, 0, 0x40, 0, 64, protocol, 0, 0]);
        packet.extend_from_slice(&[127, 0, 0, 1, 10, 9, 9, 9]);
        packet.extend_from_slice(transport);
        packet
    }

    #[test]
    fn a_syn_is_an_attempt_and_its_reset_is_not() {
        let mut tcp = vec![0x9c, 0x40, 0x11, 0x5c, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02];
        tcp.extend_from_slice(&[0; 6]);
        assert_eq!(
            parse(&ipv4_packet(TCP, &tcp), ETH_P_IP),
            Packet::Syn {
                src: "127.0.0.1:40000".parse().unwrap(),
                dst: "10.9.9.9:4444".parse().unwrap(),
            }
        );
        tcp[13] = 0x14; // RST, ACK
        assert_eq!(parse(&ipv4_packet(TCP, &tcp), ETH_P_IP), Packet::Ignored);
    }

    #[test]
    fn udp_payload_and_icmp_are_kept_and_unreachables_are_not() {
        let udp = [0x9c, 0x40, 0x27, 0x0f, 0, 11, 0, 0, b'h', b'e', b'y'];
        let packet = ipv4_packet(UDP, &udp);
        assert!(matches!(
            parse(&packet, ETH_P_IP),
            Packet::Udp { dst, payload: b"hey", .. } if dst == "10.9.9.9:9999".parse().unwrap()
        ));
        assert!(matches!(
            parse(&ipv4_packet(ICMP, &[8, 0, 0, 0]), ETH_P_IP),
            Packet::Other { protocol: ICMP, .. }
        ));
        assert_eq!(
            parse(&ipv4_packet(ICMP, &[3, 3, 0, 0]), ETH_P_IP),
            Packet::Ignored
        );
        assert_eq!(parse(&packet[..10], ETH_P_IP), Packet::Ignored);
    }
}
