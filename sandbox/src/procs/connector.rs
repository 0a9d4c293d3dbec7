//! The netlink proc connector: every fork, exec, uid change and exit of the host, as pids,
//! with loss detection.
//!
//! Each event carries a per-CPU sequence number (`cn_msg.seq`, counted by the CPU in
//! `proc_event.cpu`): a hole in a CPU's sequence, or `ENOBUFS` from the socket, means events
//! were dropped and the log is not complete. Layouts: `linux/connector.h`, `linux/cn_proc.h`.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_CONNECTOR};
use nix::sys::socket::{setsockopt, sockopt};

use super::ProcError;

const CN_IDX_PROC: u32 = 1;
const CN_VAL_PROC: u32 = 1;
const PROC_CN_MCAST_LISTEN: u32 = 1;
const NLMSG_HDRLEN: usize = 16;
const CN_MSG_LEN: usize = 20;
const NLMSG_DONE: u16 = 3;

const PROC_EVENT_FORK: u32 = 0x1;
const PROC_EVENT_EXEC: u32 = 0x2;
const PROC_EVENT_UID: u32 = 0x4;
const PROC_EVENT_EXIT: u32 = 0x8000_0000;

/// One event of the connector, pids in the host's pid namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcEvent {
    Fork {
        parent_pid: i32,
        parent_tgid: i32,
        child_pid: i32,
        child_tgid: i32,
    },
    Exec {
        pid: i32,
    },
    Uid {
        pid: i32,
        tgid: i32,
        ruid: u32,
        euid: u32,
    },
    Exit {
        pid: i32,
        tgid: i32,
        code: u32,
        signal: u32,
    },
    /// An event this sensor does not log (sid, comm, ptrace, coredump, acks).
    Other,
}

/// Events lost between the kernel and this sensor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Loss {
    /// Times the socket reported `ENOBUFS` (its buffer overflowed).
    pub(crate) overruns: u64,
    /// Sequence numbers skipped, summed over CPUs.
    pub(crate) gaps: u64,
}

/// Tracks the per-CPU sequence and counts what it skips.
#[derive(Debug, Default)]
pub(crate) struct Sequence {
    next: HashMap<u32, u32>,
}

impl Sequence {
    /// Records `seq` from `cpu`; returns how many events of that CPU were skipped.
    pub(crate) fn observe(&mut self, cpu: u32, seq: u32) -> u64 {
        let skipped = match self.next.get(&cpu) {
            Some(expected) => u64::from(seq.wrapping_sub(*expected)),
            None => 0,
        };
        self.next.insert(cpu, seq.wrapping_add(1));
        // A sequence that went backwards is a reordering, not a loss we can size.
        if skipped > u64::from(u32::MAX / 2) {
            1
        } else {
            skipped
        }
    }
}

/// A subscribed proc connector socket.
pub(crate) struct ProcConnector {
    socket: Socket,
    sequence: Sequence,
    loss: Loss,
    buffer: Vec<u8>,
}

impl ProcConnector {
    /// Opens the socket, sizes its receive buffer and subscribes to every process event.
    pub(crate) fn open(receive_buffer: usize) -> Result<ProcConnector, ProcError> {
        let step =
            |what: &'static str| move |source: io::Error| ProcError::Connector { what, source };
        let mut socket = Socket::new(NETLINK_CONNECTOR).map_err(step("open the socket"))?;
        let size = receive_buffer.min(i32::MAX as usize);
        // FORCE lets root go past rmem_max; a tiny size is the starvation test's hook.
        setsockopt(&socket, sockopt::RcvBufForce, &size)
            .or_else(|_| setsockopt(&socket, sockopt::RcvBuf, &size))
            .map_err(|errno| step("size the receive buffer")(errno.into()))?;
        socket
            .bind(&SocketAddr::new(0, CN_IDX_PROC))
            .map_err(step("bind to the proc group"))?;
        socket
            .send(&listen_message(), 0)
            .map_err(step("subscribe"))?;
        socket
            .set_non_blocking(true)
            .map_err(step("make the socket non-blocking"))?;
        Ok(ProcConnector {
            socket,
            sequence: Sequence::default(),
            loss: Loss::default(),
            buffer: vec![0; 8192],
        })
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }

    pub(crate) fn loss(&self) -> Loss {
        self.loss
    }

    /// Reads every queued datagram into `events` without blocking.
    pub(crate) fn drain(&mut self, events: &mut Vec<ProcEvent>) -> Result<(), ProcError> {
        loop {
            let mut window = &mut self.buffer[..];
            match self.socket.recv(&mut window, 0) {
                Ok(len) => {
                    let len = len.min(self.buffer.len());
                    parse(
                        &self.buffer[..len],
                        &mut self.sequence,
                        &mut self.loss,
                        events,
                    );
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => self.loss.overruns += 1,
                Err(source) => {
                    return Err(ProcError::Connector {
                        what: "receive",
                        source,
                    });
                }
            }
        }
    }
}

fn listen_message() -> Vec<u8> {
    let total = NLMSG_HDRLEN + CN_MSG_LEN + 4;
    let mut message = Vec::with_capacity(total);
    message.extend_from_slice(&(total as u32).to_ne_bytes());
    message.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
    message.extend_from_slice(&[0; 2 + 4 + 4]); // flags, seq, port
    for word in [CN_IDX_PROC, CN_VAL_PROC, 0, 0] {
        message.extend_from_slice(&word.to_ne_bytes()); // id, seq, ack
    }
    message.extend_from_slice(&4u16.to_ne_bytes()); // len
    message.extend_from_slice(&0u16.to_ne_bytes()); // flags
    message.extend_from_slice(&PROC_CN_MCAST_LISTEN.to_ne_bytes());
    message
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// Parses one datagram (one or more netlink messages, each a `cn_msg` + `proc_event`).
pub(crate) fn parse(
    datagram: &[u8],
    sequence: &mut Sequence,
    loss: &mut Loss,
    events: &mut Vec<ProcEvent>,
) {
    let mut rest = datagram;
    while let Some(len) = u32_at(rest, 0).map(|l| l as usize) {
        if len < NLMSG_HDRLEN || len > rest.len() {
            return;
        }
        let cn = &rest[NLMSG_HDRLEN..len];
        if let (Some(CN_IDX_PROC), Some(seq), Some(event)) =
            (u32_at(cn, 0), u32_at(cn, 8), cn.get(CN_MSG_LEN..))
            && let Some(cpu) = u32_at(event, 4)
        {
            loss.gaps += sequence.observe(cpu, seq);
            events.push(decode(event));
        }
        rest = &rest[len.next_multiple_of(4).min(rest.len())..];
    }
}

/// Decodes a `proc_event`: what, cpu, timestamp, then the event's pids.
fn decode(event: &[u8]) -> ProcEvent {
    let word = |at: usize| u32_at(event, 16 + at);
    let pid = |at: usize| word(at).map(|w| w as i32);
    let decoded = match u32_at(event, 0) {
        Some(PROC_EVENT_FORK) => (|| {
            Some(ProcEvent::Fork {
                parent_pid: pid(0)?,
                parent_tgid: pid(4)?,
                child_pid: pid(8)?,
                child_tgid: pid(12)?,
            })
        })(),
        Some(PROC_EVENT_EXEC) => pid(0).map(|pid| ProcEvent::Exec { pid }),
        Some(PROC_EVENT_UID) => (|| {
            Some(ProcEvent::Uid {
                pid: pid(0)?,
                tgid: pid(4)?,
                ruid: word(8)?,
                euid: word(12)?,
            })
        })(),
        Some(PROC_EVENT_EXIT) => (|| {
            Some(ProcEvent::Exit {
                pid: pid(0)?,
                tgid: pid(4)?,
                code: word(8)?,
                signal: word(12)?,
            })
        })(),
        _ => None,
    };
    decoded.unwrap_or(ProcEvent::Other)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datagram(cpu: u32, seq: u32, what: u32, data: &[u32]) -> Vec<u8> {
        let mut event = Vec::new();
        for word in [what, cpu, 0, 0].iter().chain(data) {
            event.extend_from_slice(&word.to_ne_bytes());
        }
        let total = NLMSG_HDRLEN + CN_MSG_LEN + event.len();
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&(total as u32).to_ne_bytes());
        bytes.extend_from_slice(&[0; 12]);
        for word in [CN_IDX_PROC, CN_VAL_PROC, seq, 0] {
            bytes.extend_from_slice(&word.to_ne_bytes());
        }
        bytes.extend_from_slice(&(event.len() as u16).to_ne_bytes());
        bytes.extend_from_slice(&[0; 2]);
        bytes.extend_from_slice(&event);
        bytes
    }

    #[test]
    fn fork_exec_uid_and_exit_events_are_decoded() {
        let (mut sequence, mut loss, mut events) =
            (Sequence::default(), Loss::default(), Vec::new());
        for bytes in [
            datagram(0, 7, PROC_EVENT_FORK, &[10, 10, 11, 11]),
            datagram(0, 8, PROC_EVENT_EXEC, &[11, 11]),
            datagram(1, 3, PROC_EVENT_UID, &[11, 11, 65534, 65534]),
            datagram(0, 9, PROC_EVENT_EXIT, &[11, 11, 256, 17, 10, 10]),
            datagram(0, 10, 0x200, &[11, 11, 0, 0, 0, 0]),
        ] {
            parse(&bytes, &mut sequence, &mut loss, &mut events);
        }
        assert_eq!(
            events,
            [
                ProcEvent::Fork {
                    parent_pid: 10,
                    parent_tgid: 10,
                    child_pid: 11,
                    child_tgid: 11
                },
                ProcEvent::Exec { pid: 11 },
                ProcEvent::Uid {
                    pid: 11,
                    tgid: 11,
                    ruid: 65534,
                    euid: 65534
                },
                ProcEvent::Exit {
                    pid: 11,
                    tgid: 11,
                    code: 256,
                    signal: 17
                },
                ProcEvent::Other,
            ]
        );
        assert_eq!(loss, Loss::default());
    }

    #[test]
    fn a_hole_in_a_cpus_sequence_is_counted_as_lost_events() {
        let (mut sequence, mut loss, mut events) =
            (Sequence::default(), Loss::default(), Vec::new());
        for (cpu, seq) in [(0, 100), (1, 5), (0, 101), (0, 105), (1, 6)] {
            parse(
                &datagram(cpu, seq, PROC_EVENT_EXEC, &[1, 1]),
                &mut sequence,
                &mut loss,
                &mut events,
            );
        }
        assert_eq!(loss.gaps, 3);
    }

    #[test]
    fn truncated_datagrams_are_ignored() {
        let (mut sequence, mut loss, mut events) =
            (Sequence::default(), Loss::default(), Vec::new());
        let bytes = datagram(0, 1, PROC_EVENT_FORK, &[1, 1, 2, 2]);
        parse(
            &bytes[..bytes.len() - 3],
            &mut sequence,
            &mut loss,
            &mut events,
        );
        assert!(events.is_empty());
    }
}
