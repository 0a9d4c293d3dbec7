//! [`SandboxError`]: why a run could not be prepared, started or torn down.

use nix::errno::Errno;

use crate::cgroup::CgroupError;
use crate::lab::LabError;
use crate::limits::InvalidLimit;
use crate::mask::MaskError;
use crate::message::Stage;
use crate::rundir::RunDirError;

/// Why a run could not be prepared, started or torn down. Each variant names its input.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the command is empty")]
    EmptyCommand,
    #[error("command {command:?} was not found inside the sandbox (searched {searched})")]
    CommandNotFound { command: String, searched: String },
    #[error(transparent)]
    Limit(#[from] InvalidLimit),
    #[error(transparent)]
    Lab(#[from] LabError),
    #[error(transparent)]
    Mask(#[from] MaskError),
    #[error(
        "the sandbox needs root for namespaces, mounts and cgroups; this process runs as uid {uid}"
    )]
    NotRoot { uid: u32 },
    #[error("a sandbox must be spawned inside a tokio runtime")]
    NoRuntime,
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    #[error(transparent)]
    Cgroup(#[from] CgroupError),
    #[error("sandbox setup failed while {stage}")]
    Setup {
        stage: Stage,
        #[source]
        errno: Errno,
    },
    #[error("cannot start {command:?} in the sandbox ({stage})")]
    Start {
        command: String,
        stage: Stage,
        #[source]
        errno: Errno,
    },
    #[error("the sandbox stopped answering while {waiting_for}")]
    Lost { waiting_for: &'static str },
    #[error("cannot {what}")]
    Host {
        what: &'static str,
        #[source]
        errno: Errno,
    },
    #[error("cannot watch the lab")]
    Events(#[source] std::io::Error),
    #[error("cannot start the process sensor")]
    ProcessSensor(#[from] crate::procs::ProcError),
    #[error("processes {pids:?} of run {run} survived teardown and were killed")]
    Survivors { run: String, pids: Vec<i32> },
}

/// Why a sensor has no log of a run; its text is what the receipts record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoLog {
    /// The run was built without it.
    #[error("the {0} sensor was disabled for this run")]
    Disabled(&'static str),
    /// It was never started (the run ended before).
    #[error("the {0} sensor did not run")]
    NotRun(&'static str),
    /// It could not start: what failed, and why.
    #[error("{what}: {why}")]
    Failed { what: &'static str, why: String },
}
