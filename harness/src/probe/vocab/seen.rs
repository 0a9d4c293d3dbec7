//! What the sandbox's sensors saw of one run, as the probe keeps it: lab events, execs,
//! lookups, connections and datagrams, what the caps turned away, and the changes the
//! write witness found.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use vac_sandbox::{ArgvSource, FsChange, FsEventKind, HttpRequest};

use crate::client::FrameLogStats;

/// One lab inotify event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LabEvent {
    pub(crate) kind: FsEventKind,
    #[serde(with = "vac_sandbox::serde_path")]
    pub(crate) path: PathBuf,
    pub(crate) is_dir: bool,
    /// Since the run's start.
    pub(crate) t_ns: u64,
    /// The process that read (host pid): known for reads outside the lab, which the access
    /// sensor sees; none for the lab's inotify events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pid: Option<i32>,
}

impl LabEvent {
    pub(crate) fn at(&self) -> Duration {
        Duration::from_nanos(self.t_ns)
    }
}

/// One exec of the run's process tree, as the process sensor saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ExecSeen {
    pub(crate) pid: i32,
    pub(crate) ppid: Option<i32>,
    #[serde(with = "vac_sandbox::serde_path")]
    pub(crate) path: PathBuf,
    #[serde(with = "vac_sandbox::serde_path::option")]
    pub(crate) exe: Option<PathBuf>,
    /// Lossily decoded; the sensor reads argv from the caller's memory.
    pub(crate) argv: Vec<String>,
    pub(crate) argv_truncated: bool,
    pub(crate) argv_source: ArgvSource,
    #[serde(with = "vac_sandbox::serde_path::option")]
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) uid: Option<u32>,
    pub(crate) t_ns: u64,
}

/// One name lookup the sinkhole's resolver answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DnsSeen {
    pub(crate) name: String,
    pub(crate) qtype: u16,
    pub(crate) tcp: bool,
    pub(crate) t_ns: u64,
    /// The address the name was answered with; none in receipts from when every name got
    /// the same one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) answer: Option<std::net::IpAddr>,
}

/// One TCP connection attempt; its first bytes are the record's payload, and what it sent
/// inside TLS the second when it completed the sinkhole's handshake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ConnectSeen {
    pub(crate) dst: SocketAddr,
    pub(crate) accepted: bool,
    pub(crate) http: Option<HttpRequest>,
    pub(crate) sni: Option<String>,
    pub(crate) t_ns: u64,
    /// Whether the program completed the TLS handshake with the sinkhole's certificate
    /// (so the record has a second payload); absent in receipts from before the sinkhole
    /// ended TLS.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) inside_tls: bool,
    #[serde(skip)]
    pub(crate) first_bytes: Vec<u8>,
    #[serde(skip)]
    pub(crate) decrypted: Vec<u8>,
}

/// One UDP datagram; its bytes are the record's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DatagramSeen {
    pub(crate) dst: SocketAddr,
    pub(crate) len: usize,
    pub(crate) t_ns: u64,
    #[serde(skip)]
    pub(crate) bytes: Vec<u8>,
}

/// What the network sensor saw of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NetSeen {
    pub(crate) dns: Vec<DnsSeen>,
    pub(crate) tcp: Vec<ConnectSeen>,
    pub(crate) udp: Vec<DatagramSeen>,
    /// When the program itself started: earlier traffic is the sensor's own self-test.
    pub(crate) program_started: Option<Duration>,
}

/// What the caps turned away, per sensor: nothing is lost without being counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Lost {
    pub(crate) processes: Option<vac_sandbox::ProcDropped>,
    pub(crate) network: Option<vac_sandbox::Dropped>,
    pub(crate) frames: FrameLogStats,
    /// The lab watcher's losses (kernel queue overflow, dropped events), when any.
    pub(crate) lab: Option<String>,
    /// Written files whose content was not kept, past the run's content budget: each
    /// still has its digest, but no clause can match on its bytes.
    #[serde(default)]
    pub(crate) contents_over_budget: u64,
}

/// One change the witness saw, with what is needed to show and compare it.
#[derive(Debug, Clone)]
pub(crate) struct ObservedChange {
    pub(crate) change: FsChange,
    /// The content after the run (files), capped.
    pub(crate) content: Option<Vec<u8>>,
    /// The content before the run (modified files), capped.
    pub(crate) old_content: Option<Vec<u8>>,
    /// When lab events that wrote this path arrived (since the run's start), first few.
    pub(crate) writes: Vec<Duration>,
}
