//! The network sensor: a [`Sinkhole`] in a network namespace of its own, joined to the
//! sandbox's by a link that holds frames for a network's round trip (`wire.rs`), so that every attempt to reach the network is observed, nothing
//! leaves the machine, and the program sees none of the sinkhole's sockets.
//!
//! - **Link** (`link.rs`, `setup.rs`, `wire.rs`): the run's namespace has `lo` and `eth0`
//!   (10.0.2.15/24, fd00::15/64) with default routes to the sinkhole's side (10.0.2.2,
//!   fd00::2), as a virtual machine's user network has. `eth0` is a veth, as a container's is;
//!   its peer lies in a third namespace with no address, where a thread reads its frames
//!   and carries them to the sinkhole's TAP device (and back), each frame to a public
//!   address held for a round trip of the internet's. In the sinkhole's namespace every address but the
//!   run's is local (`local 0.0.0.0/0` and `local ::/0` on `lo` in table `local`, beside
//!   routes back to the run's addresses), so every packet the run sends off its loopback
//!   ends there.
//! - **Resolver** (`dns.rs`): UDP on port 53 (IPv4 and IPv6) and TCP on port 53 answer as a
//!   recursive resolver would: every A and AAAA question for a name that can exist with the
//!   name's own address, NXDOMAIN for one that cannot, after a cache's latency; every name
//!   and type is logged. A loopback nameserver of `/etc/resolv.conf` (a local stub's
//!   `127.0.0.53`) gets a resolver in the run's namespace, where a real machine has one too.
//! - **Listeners** (`tcp.rs`, `web.rs`, `tls.rs`): TCP on `0.0.0.0` and `[::]` of the
//!   sinkhole's namespace for a port set ([`DEFAULT_PORTS`] plus extra ports) accept, keep
//!   the first bytes and the HTTP request line and Host or the TLS server name; an HTTP
//!   request is answered as its host's site would answer it, and TLS is ended with a
//!   certificate for the name asked, from a root no client trusts (a client that verifies
//!   nothing sends its request inside, which is kept too). Only these ports get first bytes.
//!   IPv4 link-local addresses (the cloud metadata address) are unreachable.
//! - **Capture** (`capture.rs`): an `AF_PACKET` socket in the run's namespace logs every SYN
//!   to any address:port (listened or not), every UDP datagram to any port and any other IP
//!   packet (ICMP) that crosses `lo` or leaves by `eth0`, so an attempt is logged even where
//!   nothing listens.
//! - **Sockets** (`diag.rs`): [`Sinkhole::sockets`] is a sock_diag snapshot of the run
//!   namespace's TCP and UDP sockets, each traced to the sandbox process that holds it.
//!
//! Every socket is created by a short-lived thread that has entered its namespace; sockets
//! keep their namespace, so the caller's tokio runtime then drives them from the host. The
//! sinkhole's namespace lives as long as its sockets: the kernel reclaims it with the last,
//! even when vac is killed. Logs are bounded ([`LogLimits`]) and count what they drop.

mod capture;
mod diag;
mod dial;
mod dns;
mod link;
mod log;
pub(crate) mod probe;
mod setup;
mod tcp;
mod tls;
mod web;
mod wire;

use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::unistd::Pid;
use tokio::io::unix::AsyncFd;
use tokio::net::UdpSocket;
use tokio::task::JoinHandle;

pub use diag::{SocketEntry, SocketOwner, Transport};
pub use dial::{DialError, NamespaceDialer};
pub use dns::{SINKHOLE_V4, SINKHOLE_V6};
use log::Recorder;
pub use log::{
    Datagram, DnsQuery, Dropped, HttpRequest, LogLimits, NetSelfTest, NetworkLog, RawPacket,
    TcpAttempt,
};

/// Ports the sinkhole listens on unless told otherwise.
pub const DEFAULT_PORTS: [u16; 14] = [
    80, 443, 8080, 8443, 22, 25, 21, 53, 3306, 5432, 6379, 27017, 9200, 11211,
];

/// Why the sinkhole could not start or answer. Each variant names its input.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("a sinkhole must be started inside a tokio runtime")]
    NoRuntime,
    #[error("cannot open the network namespace of pid {pid}")]
    Namespace {
        pid: i32,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot enter the network namespace of pid {pid}")]
    Enter {
        pid: i32,
        #[source]
        errno: Errno,
    },
    #[error("the thread entering the network namespace of pid {pid} failed")]
    Thread {
        pid: i32,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot find the loopback interface in the sandbox's namespace")]
    Loopback(#[source] Errno),
    #[error("cannot {what} (rtnetlink)")]
    Link {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot bind the sinkhole's {transport} socket on {addr}")]
    Bind {
        transport: &'static str,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the packet capture on lo")]
    Capture(#[source] Errno),
    #[error("sock_diag dump of family {family} protocol {protocol} failed")]
    SockDiag {
        family: u8,
        protocol: u8,
        #[source]
        source: std::io::Error,
    },
}

/// How a [`Sinkhole`] is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkholeOptions {
    /// TCP ports with a listener (first bytes kept); other ports get the attempt only.
    pub ports: Vec<u16>,
    pub limits: LogLimits,
    /// How long a listener waits for more bytes before it closes a connection.
    pub idle: Duration,
    /// Connections read at once; more are logged and closed unread.
    pub max_open: usize,
    /// Where procfs is mounted, for tracing sockets to processes.
    pub proc_root: PathBuf,
    /// Times in the log are measured from here.
    pub epoch: Instant,
    /// The marker name the self-test expects (set by the sandbox).
    pub(crate) probe_name: Option<String>,
}

impl Default for SinkholeOptions {
    fn default() -> SinkholeOptions {
        SinkholeOptions {
            ports: DEFAULT_PORTS.to_vec(),
            limits: LogLimits {
                max_entries: 4096,
                max_bytes: 4096,
            },
            idle: Duration::from_millis(1500),
            max_open: 256,
            proc_root: PathBuf::from("/proc"),
            epoch: Instant::now(),
            probe_name: None,
        }
    }
}

impl SinkholeOptions {
    /// Caps the log.
    pub fn limits(mut self, limits: LogLimits) -> SinkholeOptions {
        self.limits = limits;
        self
    }

    /// Listens on `ports` too, besides the ports already set.
    pub fn extra_ports(mut self, ports: impl IntoIterator<Item = u16>) -> SinkholeOptions {
        self.ports.extend(ports);
        self
    }
}

/// The sinkhole of one network namespace; its tasks run until [`Sinkhole::stop`] or drop.
#[derive(Debug)]
pub struct Sinkhole {
    log: Recorder,
    probe_name: Option<String>,
    proc_root: PathBuf,
    netns: PathBuf,
    listened: Arc<[u16]>,
    resolvers: Vec<Arc<UdpSocket>>,
    /// What the resolvers have answered in this run, for their latency.
    cache: Arc<dns::Cache>,
    /// The link from the run's `eth0`, which holds frames for their round trip.
    wire: wire::Wire,
    /// Closed aside ([`crate::aside`]): a packet socket's close waits for a grace period.
    capture: Arc<crate::aside::ClosedAside<AsyncFd<OwnedFd>>>,
    diag: netlink_sys::Socket,
    tasks: Vec<JoinHandle<()>>,
    /// A permit for each connection a listener is reading, of `max_open`.
    reading: Arc<tokio::sync::Semaphore>,
    max_open: usize,
}

impl Sinkhole {
    /// Sets up the routes and sockets in the network namespace of `init_pid` (a host pid)
    /// and starts serving them on the current tokio runtime.
    pub fn start(init_pid: Pid, options: SinkholeOptions) -> Result<Sinkhole, NetError> {
        tokio::runtime::Handle::try_current().map_err(|_| NetError::NoRuntime)?;
        let mut ports = options.ports.clone();
        ports.sort_unstable();
        ports.dedup();
        let ns_path = options.proc_root.join(format!("{init_pid}/ns/net"));
        let namespace = |source| NetError::Namespace {
            pid: init_pid.as_raw(),
            source,
        };
        let netns = std::fs::read_link(&ns_path).map_err(namespace)?;
        let ns_fd = OwnedFd::from(std::fs::File::open(&ns_path).map_err(namespace)?);
        let sockets = setup::in_namespace(init_pid, ns_fd, ports.clone())?;
        setup::serve(sockets, options, netns, ports)
    }

    /// Marks the moment the program started: what the log holds from before is the
    /// sandbox's own self-test traffic.
    pub(crate) fn mark_program_start(&self) {
        self.log.mark_program_start();
        self.cache.mark_program_start();
        self.wire.mark_program_start();
    }

    /// Whether a packet the program sent is still waiting for the sensor (in the capture's
    /// queue or a resolver's), or a connection is still open and read by a listener: what
    /// the log holds now is not yet all that was sent, and a program waiting for that
    /// connection's answer or close acts again once the listener closes it.
    pub fn pending(&self) -> bool {
        let queued =
            |fd: std::os::fd::BorrowedFd<'_>| crate::sys::queued_bytes(fd).unwrap_or(1) > 0;
        self.wire.in_flight()
            || queued(self.capture.get_ref().as_fd())
            || self.resolvers.iter().any(|socket| queued(socket.as_fd()))
            || self.reading.available_permits() < self.max_open
    }

    /// What was logged so far.
    pub fn log(&self) -> NetworkLog {
        self.log.snapshot(self.probe_name.as_deref())
    }

    /// The namespace's TCP and UDP sockets now (the sinkhole's own left out).
    pub fn sockets(&self) -> Result<Vec<SocketEntry>, NetError> {
        self.entries(diag::Query::Every)
    }

    /// The namespace's listening TCP sockets now (the sinkhole's own left out): what
    /// [`Network::sockets`] would list as listening, at a fraction of its cost.
    pub fn listeners(&self) -> Result<Vec<SocketEntry>, NetError> {
        self.entries(diag::Query::TcpListening)
    }

    fn entries(&self, query: diag::Query) -> Result<Vec<SocketEntry>, NetError> {
        let own = diag::held_by(&self.proc_root.join(std::process::id().to_string()));
        let rows: Vec<_> = diag::dump(&self.diag, query)?
            .into_iter()
            .filter(|(_, row)| !own.contains(&row.inode))
            .collect();
        // Tracing owners reads every process's descriptors: only when there is one to trace.
        let owners = match rows.is_empty() {
            true => Default::default(),
            false => diag::owners(&self.proc_root, &self.netns),
        };
        Ok(rows
            .into_iter()
            .map(|(transport, row)| SocketEntry {
                transport,
                local: log::canonical(row.local),
                remote: log::canonical(row.remote),
                state: row.state,
                inode: row.inode,
                uid: row.uid,
                owner: owners.get(&row.inode).copied(),
            })
            .collect())
    }

    /// Reads what is still queued, stops serving and returns the final log.
    pub fn stop(mut self) -> NetworkLog {
        self.wire.stop();
        let mut buffer = vec![0u8; 65_536];
        let _ = capture::read_all(
            self.capture.get_ref(),
            &mut buffer,
            &self.log,
            &self.listened,
        );
        for resolver in &self.resolvers {
            dns::drain(resolver, &self.log, &self.cache);
        }
        for task in self.tasks.drain(..) {
            task.abort();
        }
        self.log()
    }
}

impl Drop for Sinkhole {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// The network sensor of one run, as the sandbox holds it.
#[derive(Debug)]
pub(crate) enum NetSensor {
    Off,
    /// The sinkhole could not start; the reason.
    Failed(crate::NoLog),
    On(Box<Sinkhole>),
}

impl NetSensor {
    pub(crate) fn sinkhole(&self) -> Option<&Sinkhole> {
        match self {
            NetSensor::On(sinkhole) => Some(sinkhole),
            _ => None,
        }
    }

    /// The final log, or why there is none.
    pub(crate) fn finish(self) -> Result<NetworkLog, crate::NoLog> {
        match self {
            NetSensor::Off => Err(crate::NoLog::Disabled("network")),
            NetSensor::Failed(reason) => Err(reason),
            NetSensor::On(sinkhole) => Ok(sinkhole.stop()),
        }
    }
}
