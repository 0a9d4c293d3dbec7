//! The link between the run's namespace and the sinkhole's: the run's `eth0` is one end of
//! a veth pair, as a container's is; the other end (`wire0`) lies in a namespace of its own
//! with no address, where a packet socket reads what the run sends; the sinkhole's side is a
//! TAP device (`uplink0`). A thread carries Ethernet frames between the two, holding each
//! frame the run sends for as long as a network would take to carry it to its destination
//! and back. Frames pass with their `virtio_net_hdr`, so one whose checksum or segmentation
//! the veth left undone (as it leaves them to hardware) arrives as the kernel sent it.
//!
//! The veth pair joined the run to the sinkhole directly until 2026-12-07: a connection to
//! any public address was accepted in about 0.1 ms, which no machine on the internet sees (a
//! server that timed its connect knew it talked to a sinkhole). A TAP device as `eth0` would
//! tell too (its driver is `tun`, its state `unknown`). Now a frame to a public address waits a round
//! trip drawn for that address (8–120 ms, stable per address, with a little jitter that
//! never reorders one destination's frames); to a private, loopback or link-local address
//! (a LAN) 0.2–1.5 ms; DNS (port 53) none, as the resolver takes a resolver's time itself
//! ([`super::dns::Cache`]). Frames back to the run go at once. Bounded: at most
//! [`MAX_HELD`] frames and [`MAX_HELD_BYTES`] wait; past that a frame is dropped, as a full
//! router queue drops it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// Frames held at once, at most.
const MAX_HELD: usize = 4096;
/// Bytes held at once, at most (a segmentation-offloaded frame can be 64 KiB).
const MAX_HELD_BYTES: usize = 16 << 20;
/// The `virtio_net_hdr` before each frame, as both ends read and write it.
const VNET_HDR: usize = 10;
/// How often the thread looks whether it should stop, at the longest.
const TICK: Duration = Duration::from_millis(50);

/// The running link: its thread, how many frames it holds, and the flag that stops it.
#[derive(Debug)]
pub(crate) struct Wire {
    stop: Arc<AtomicBool>,
    held: Arc<AtomicUsize>,
    /// Whether the program has started: the sandbox's own self-test before it passes at
    /// once (the program never sees it, and every run would wait its round trips).
    delaying: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Wire {
    /// Carries frames between `run` (the packet socket on the far end of the run's `eth0`)
    /// and `sink` (the sinkhole's TAP device)
    /// until stopped; the devices go with the descriptors when the thread ends.
    pub(crate) fn start(run: OwnedFd, sink: OwnedFd) -> std::io::Result<Wire> {
        let stop = Arc::new(AtomicBool::new(false));
        let held = Arc::new(AtomicUsize::new(0));
        let delaying = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new().name("vac-wire".into()).spawn({
            let (stop, held, delaying) =
                (Arc::clone(&stop), Arc::clone(&held), Arc::clone(&delaying));
            move || carry(&run, &sink, &stop, &held, &delaying)
        })?;
        Ok(Wire {
            stop,
            held,
            delaying,
            thread: Some(thread),
        })
    }

    /// From now on, frames take their round trip.
    pub(crate) fn mark_program_start(&self) {
        self.delaying.store(true, Ordering::SeqCst);
    }

    /// Whether frames the run sent are still on their way to the sinkhole.
    pub(crate) fn in_flight(&self) -> bool {
        self.held.load(Ordering::SeqCst) > 0
    }

    /// Delivers what is held (the run is over; no one waits for the latency), then stops.
    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// A frame on its way: when it is due, its order of arrival, its bytes.
type Held = Reverse<(Instant, u64, Vec<u8>)>;

fn carry(
    run: &OwnedFd,
    sink: &OwnedFd,
    stop: &AtomicBool,
    held_count: &AtomicUsize,
    delaying: &AtomicBool,
) {
    let mut held: BinaryHeap<Held> = BinaryHeap::new();
    let mut last_due: HashMap<IpAddr, Instant> = HashMap::new();
    let mut arrivals = 0u64;
    let mut random = seed();
    let mut held_bytes = 0usize;
    let mut frame = vec![0u8; VNET_HDR + (128 << 10)];
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let now = Instant::now();
        while let Some(Reverse((due, _, _))) = held.peek() {
            if *due > now && !stopping {
                break;
            }
            if let Some(Reverse((_, _, bytes))) = held.pop() {
                held_bytes -= bytes.len();
                let _ = nix::unistd::write(sink, &bytes);
            }
        }
        held_count.store(held.len(), Ordering::SeqCst);
        if stopping {
            return;
        }
        let wait = held
            .peek()
            .map_or(TICK, |Reverse((due, _, _))| {
                due.saturating_duration_since(now)
            })
            .min(TICK);
        let mut fds = [
            PollFd::new(run.as_fd(), PollFlags::POLLIN),
            PollFd::new(sink.as_fd(), PollFlags::POLLIN),
        ];
        let timeout =
            PollTimeout::try_from(wait.as_millis().max(1) as i32).unwrap_or(PollTimeout::MAX);
        match poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return,
        }
        // From the run: each frame held for its destination's round trip.
        loop {
            match nix::unistd::read(run, &mut frame) {
                Ok(0) | Err(Errno::EAGAIN) => break,
                Ok(n) => {
                    let bytes = frame[..n].to_vec();
                    match bytes.get(VNET_HDR..).and_then(destination) {
                        Some((address, port))
                            if port != Some(53) && delaying.load(Ordering::SeqCst) =>
                        {
                            if held.len() >= MAX_HELD || held_bytes + n > MAX_HELD_BYTES {
                                continue; // a full queue drops, as a router's does
                            }
                            let now = Instant::now();
                            let jitter =
                                0.92 + f64::from((xorshift(&mut random) % 160) as u32) / 1000.0;
                            let due = (now + round_trip(address).mul_f64(jitter))
                                .max(last_due.get(&address).copied().unwrap_or(now));
                            if last_due.len() >= MAX_HELD {
                                last_due.retain(|_, d| *d > now);
                            }
                            last_due.insert(address, due);
                            arrivals += 1;
                            held_bytes += n;
                            held.push(Reverse((due, arrivals, bytes)));
                        }
                        _ => {
                            let _ = nix::unistd::write(sink, &bytes);
                        }
                    }
                }
                // The veth's state changed (a socket bound before the link came up hears it
                // once): not an end.
                Err(Errno::EINTR | Errno::ENETDOWN) => {}
                Err(_) => return,
            }
        }
        held_count.store(held.len(), Ordering::SeqCst);
        // From the sinkhole: at once.
        loop {
            match nix::unistd::read(sink, &mut frame) {
                Ok(0) | Err(Errno::EAGAIN) => break,
                Ok(n) => {
                    let _ = nix::unistd::write(run, &frame[..n]);
                }
                Err(Errno::EINTR) => {}
                Err(_) => return,
            }
        }
    }
}

/// The IP destination of an Ethernet frame, and its TCP or UDP port; `None` for a frame
/// that is not IP (ARP, say).
fn destination(frame: &[u8]) -> Option<(IpAddr, Option<u16>)> {
    let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    let ip = frame.get(14..)?;
    let (address, protocol, transport) = match ethertype {
        0x0800 => {
            let header = usize::from(ip.first()? & 0x0f) * 4;
            let octets: [u8; 4] = ip.get(16..20)?.try_into().ok()?;
            (
                IpAddr::V4(Ipv4Addr::from(octets)),
                *ip.get(9)?,
                ip.get(header..),
            )
        }
        0x86dd => {
            let octets: [u8; 16] = ip.get(24..40)?.try_into().ok()?;
            (
                IpAddr::V6(Ipv6Addr::from(octets)),
                *ip.get(6)?,
                ip.get(40..),
            )
        }
        _ => return None,
    };
    let port = match (protocol, transport) {
        (6 | 17, Some([_, _, hi, lo, ..])) => Some(u16::from_be_bytes([*hi, *lo])),
        _ => None,
    };
    Some((address, port))
}

/// The round trip to `address`: a LAN's for a private, loopback or link-local address; for
/// any other, one drawn from the address, between 8 and 120 ms and most of them under 60,
/// as the internet's are.
fn round_trip(address: IpAddr) -> Duration {
    let local = match address {
        IpAddr::V4(v4) => {
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || (v4.octets()[0] == 100 && v4.octets()[1] & 0xc0 == 64)
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
        }
    };
    let h = blake3::hash(address.to_string().as_bytes());
    let draw = u64::from(u16::from_le_bytes([h.as_bytes()[0], h.as_bytes()[1]])) as f64 / 65_535.0;
    if local {
        Duration::from_micros(200 + (draw * 1_300.0) as u64)
    } else {
        Duration::from_micros(8_000 + (draw * draw * 112_000.0) as u64)
    }
}

fn seed() -> u64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes) | 1
}

/// xorshift64: a spread, not a secret.
fn xorshift(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_frame(dst: [u8; 4], protocol: u8, port: u16) -> Vec<u8> {
        let mut frame = vec![0u8; 14];
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        let mut ip = vec![0u8; 20];
        ip[0] = 0x45;
        ip[9] = protocol;
        ip[16..20].copy_from_slice(&dst);
        frame.extend_from_slice(&ip);
        let mut transport = vec![0u8; 20];
        transport[2..4].copy_from_slice(&port.to_be_bytes());
        frame.extend_from_slice(&transport);
        frame
    }

    #[test]
    fn frames_are_read_for_their_destination_and_port() {
        assert_eq!(
            destination(&ipv4_frame([93, 184, 216, 34], 6, 443)),
            Some((IpAddr::V4(Ipv4Addr::new(93, 184, 216, 34)), Some(443)))
        );
        assert_eq!(
            destination(&ipv4_frame([8, 8, 8, 8], 17, 53)).map(|d| d.1),
            Some(Some(53))
        );
        assert_eq!(
            destination(&ipv4_frame([8, 8, 8, 8], 1, 0)).map(|d| d.1),
            Some(None)
        );
        let mut arp = ipv4_frame([10, 0, 2, 2], 0, 0);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(destination(&arp), None);
        assert_eq!(destination(&[0u8; 10]), None);
    }

    /// Public addresses are a round trip away, each its own and the same every time; a LAN
    /// is under two milliseconds away.
    #[test]
    fn round_trips_are_the_internets_for_public_addresses_and_a_lans_for_private_ones() {
        let public: Vec<Duration> = (0..200u8)
            .map(|i| round_trip(IpAddr::V4(Ipv4Addr::new(104, 18, i, 7))))
            .collect();
        assert!(
            public.iter().all(|d| (8..=120).contains(&d.as_millis())),
            "{public:?}"
        );
        let spread: std::collections::HashSet<u128> =
            public.iter().map(|d| d.as_millis()).collect();
        assert!(spread.len() > 30, "{spread:?}");
        let median = {
            let mut sorted = public.clone();
            sorted.sort();
            sorted[sorted.len() / 2]
        };
        assert!(median < Duration::from_millis(60), "{median:?}");
        let address = IpAddr::V4(Ipv4Addr::new(151, 101, 0, 223));
        assert_eq!(round_trip(address), round_trip(address));
        for lan in [
            "10.0.0.1",
            "192.168.1.20",
            "169.254.169.254",
            "fd00::2",
            "fe80::1",
        ] {
            let rtt = round_trip(lan.parse().unwrap());
            assert!(rtt < Duration::from_millis(2), "{lan}: {rtt:?}");
        }
    }
}
