//! `vac-sandbox` runs one untrusted program so that nothing it does reaches the host, and so
//! that every filesystem write it makes anywhere is observed.
//!
//! A [`Sandbox`] is configured with its [`SandboxBuilder`] (command, [`Lab`], [`Limits`],
//! user) and each [`Sandbox::spawn`] starts a fresh run: a [`Running`] program inside new
//! mount, pid, network, uts and ipc namespaces, on an overlay root whose lower layers are the
//! lab and the host root and whose upper layer is a size-limited tmpfs of its own. The
//! program's stdio comes back as tokio pipes and the lab's inotify events as [`LabEvents`].
//! [`Running::stop`] kills the whole process tree and yields a [`Stopped`] run, whose
//! [`OverlayWitness`] walks the upper layer and types every change ([`FsChange`]), after
//! checking that it sees the marker the sandbox wrote from inside ([`SelfTest`]). Dropping a
//! run at any point tears it down: no process, mount or cgroup of it survives.
//!
//! The network sensor ([`SandboxBuilder::network_sensor`], on by default) puts a [`Sinkhole`]
//! in the run's network namespace before the program starts: every address is local, a
//! resolver answers every name, listeners keep the first bytes of TCP connections and a
//! packet capture on `lo` logs every other attempt. [`Running::network`] gives its live log
//! and sock_diag snapshots; [`Stopped::network_log`] the final [`NetworkLog`], whose
//! [`NetSelfTest`] says whether the init's marker lookup and request were seen.
//!
//! The crate knows nothing of MCP, contracts or receipts. Every raw system call and `unsafe`
//! block lives in the private `sys` module. Kernel-facing paths (cgroup root, run root) are
//! parameters so the pieces are tested on temporary directories without root.

mod access;
mod aside;
mod bpf;
mod cgroup;
mod error;
mod events;
mod lab;
mod limits;
mod mask;
mod message;
mod net;
mod procs;
mod refused;
mod rootfs;
mod rundir;
mod running;
mod sandbox;
pub mod serde_path;
mod stages;
mod sweeper;
mod sys;
mod teardown;
mod witness;

pub use access::{Access, AccessFilter, AccessLog, MAX_ACCESSES};
pub use cgroup::{Cgroup, CgroupError, CgroupRoots};
pub use error::{NoLog, SandboxError};
pub use events::{FsEvent, FsEventKind, LabEvents, MAX_WATCHED_DIRS};
pub use lab::{Lab, LabError, LabView};
pub use limits::{InvalidLimit, Limits};
pub use mask::{Exposure, MaskError, Visibility, home_of};
pub use message::Stage;
pub use net::{
    DEFAULT_PORTS, Datagram, DialError, DnsQuery, Dropped, HttpRequest, LogLimits, NamespaceDialer,
    NetError, NetSelfTest, NetworkLog, RawPacket, SINKHOLE_V4, SINKHOLE_V6, Sinkhole,
    SinkholeOptions, SocketEntry, SocketOwner, TcpAttempt, Transport,
};
pub use procs::{
    ArgvSource, Exec, Exit, Fork, LostEvents, ProcDropped, ProcError, ProcSelfTest,
    ProcSensorFailure, ProcessLog, UidChange,
};
pub use rundir::{RunDirError, own_mount_namespace};
pub use running::{Running, Stopped};
pub use sandbox::{DEFAULT_CGROUP_ROOT, DEFAULT_RUN_ROOT, RunAs, Sandbox, SandboxBuilder};
pub use sweeper::start_sweeper;

/// Bounds the memory a process of many threads keeps from its allocator: glibc gives each
/// thread that allocates an arena of its own (up to eight per core) and returns little of
/// any, so a probe whose tokio and blocking threads each parsed large listings kept tens of
/// megabytes it no longer used. Two arenas keep contention low on this workload, which
/// waits on servers, not on the allocator. Call it first, before threads start.
pub fn bound_allocator_arenas() -> bool {
    sys::cap_malloc_arenas(2)
}
pub use teardown::{LimitHits, Termination};
pub use witness::{
    FileDigest, FsChange, HASH_CAP, Incomplete, LayerState, MAX_WALK_DEPTH, Marker, NodeKind,
    OverlayWitness, SPENT_HASH_CAP, SelfTest, UpperSnapshot, WALK_HASH_BUDGET, WitnessError,
    WitnessReport, layer_states, read_beneath, upper_snapshot,
};
