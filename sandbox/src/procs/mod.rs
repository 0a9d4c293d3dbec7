//! The process sensor: what every process of a run executed, with its argv, and the forks,
//! exits and uid changes of the run's process tree.
//!
//! Two kernel interfaces, each covering the other's blind spot:
//! - the netlink **proc connector** ([`connector`]), in the host's namespaces, reports every
//!   fork, exec, uid change and exit of the host as pids; [`tree`] follows the sandbox's
//!   init and its descendants through the fork events. A hole in the connector's per-CPU
//!   sequence or a buffer overrun marks the log incomplete.
//! - a **seccomp user-notification filter** ([`filter`], installed by the program stage in
//!   [`arm`]) holds every `execve`/`execveat` of the sandbox's processes until the sensor
//!   has read the path and argv from the caller's memory ([`exec_notify`]). Short-lived
//!   processes cannot race it: the call does not proceed before it is read.
//!
//! The connector's exec event confirms a held call; a held call that never gets one failed.
//! [`ProcSensor`] runs both on one thread, so a call is always recorded before the kernel can
//! report its exec. If the parent dies, its listener closes, and held or later exec calls
//! fail with `ENOSYS` instead of hanging; the run is being torn down then anyway (the init's
//! lifeline is gone).

pub(crate) mod arm;
mod connector;
mod exec_notify;
mod filter;
mod log;
mod sensor;
mod tree;

pub use log::{
    ArgvSource, Exec, Exit, Fork, LostEvents, ProcDropped, ProcSelfTest, ProcSensorFailure,
    ProcessLog, UidChange,
};
pub(crate) use sensor::ProcSensor;

/// Why the process sensor could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    #[error("proc connector: cannot {what}")]
    Connector {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("exec listener: cannot {what}")]
    Listener {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}
