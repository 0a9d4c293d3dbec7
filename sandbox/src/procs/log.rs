//! What the process sensor reports: [`ProcessLog`] and its records.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Everything the process sensor saw of one run's process tree: the sandbox's init and its
/// descendants, daemons included. Pids are the host's. Each list is capped; what the cap
/// turned away is counted in [`ProcessLog::dropped`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessLog {
    /// Exec calls that replaced a process image, in order.
    pub execs: Vec<Exec>,
    /// Exec calls that did not (not found, not permitted, not executable), in order.
    pub failed_execs: Vec<Exec>,
    /// New processes (not threads).
    pub forks: Vec<Fork>,
    /// Processes that ended.
    pub exits: Vec<Exit>,
    /// Real or effective uid changes.
    pub uid_changes: Vec<UidChange>,
    pub dropped: ProcDropped,
    /// Events lost between the kernel and the sensor; any makes the log incomplete.
    pub lost: LostEvents,
    pub self_test: ProcSelfTest,
}

/// One exec call of a sandboxed process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    pub pid: i32,
    /// The process's parent when it was forked (host pid), if the sensor saw the fork.
    pub ppid: Option<i32>,
    /// The path the call asked for, made absolute in the sandbox's view (not symlink-resolved).
    pub path: PathBuf,
    /// The image the kernel loaded (`/proc/<pid>/exe` right after the exec; the interpreter
    /// for a script), when the process still existed to be asked.
    pub exe: Option<PathBuf>,
    pub argv: Vec<OsString>,
    /// The argv was longer than the caps and was cut.
    pub argv_truncated: bool,
    pub argv_source: ArgvSource,
    /// The working directory at the call, in the sandbox's view.
    pub cwd: Option<PathBuf>,
    /// The real uid at the call.
    pub uid: Option<u32>,
    /// Time since the run was spawned, when the sensor saw the call.
    pub at: Duration,
}

/// Where an exec's argv came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgvSource {
    /// Read from the caller's memory while the kernel held the call: complete and exact.
    ExecCall,
    /// The call was not held (it should always be); read from `/proc/<pid>/cmdline` instead.
    Procfs,
    /// Not held and gone before `/proc` could be read.
    Missing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fork {
    pub pid: i32,
    pub ppid: i32,
    pub at: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    pub pid: i32,
    /// The exit code, or `None` when a signal ended the process.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub at: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UidChange {
    pub pid: i32,
    pub ruid: u32,
    pub euid: u32,
    pub at: Duration,
}

/// Records the caps turned away.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcDropped {
    pub execs: u64,
    pub failed_execs: u64,
    pub forks: u64,
    pub exits: u64,
    pub uid_changes: u64,
}

/// Events the kernel could not deliver to the sensor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LostEvents {
    /// Times the connector's socket buffer overflowed (`ENOBUFS`).
    pub overruns: u64,
    /// Connector sequence numbers that never arrived.
    pub gaps: u64,
}

impl LostEvents {
    pub fn any(&self) -> bool {
        self.overruns > 0 || self.gaps > 0
    }
}

/// Whether the process sensor proved itself live in this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcSelfTest {
    /// The marker exec made inside the sandbox was seen, with its argv, by both the
    /// connector and the exec listener, and no event was lost.
    Live { marker: String },
    /// The sensor ran but cannot vouch for its log.
    Failed { reason: ProcSensorFailure },
    /// The sensor could not run on this host (no proc connector): capability absent.
    Unavailable { reason: String },
}

impl ProcSelfTest {
    pub fn is_live(&self) -> bool {
        matches!(self, ProcSelfTest::Live { .. })
    }
}

/// Why the process sensor failed its self-test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcSensorFailure {
    /// Connector events were dropped: forks, execs or exits may be missing.
    LostEvents(LostEvents),
    /// The program stage never handed over an exec listener (the seccomp filter failed).
    NoExecListener,
    /// The marker exec was not seen with its argv.
    MarkerNotSeen { marker: String },
    /// The sensor's own I/O failed.
    Broken { what: String },
}

impl fmt::Display for ProcSensorFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcSensorFailure::LostEvents(lost) => write!(
                f,
                "process events were lost ({} buffer overruns, {} sequence gaps)",
                lost.overruns, lost.gaps
            ),
            ProcSensorFailure::NoExecListener => {
                f.write_str("the sandbox handed over no exec listener")
            }
            ProcSensorFailure::MarkerNotSeen { marker } => {
                write!(f, "the marker exec {marker:?} was not seen")
            }
            ProcSensorFailure::Broken { what } => write!(f, "the sensor broke: {what}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_sources_and_drop_counts_serialise_for_receipts() {
        let sources = [
            ArgvSource::ExecCall,
            ArgvSource::Procfs,
            ArgvSource::Missing,
        ];
        let json = serde_json::to_string(&sources).unwrap();
        assert_eq!(json, r#"["exec_call","procfs","missing"]"#);
        assert_eq!(
            serde_json::from_str::<[ArgvSource; 3]>(&json).unwrap(),
            sources
        );
        let dropped = ProcDropped {
            execs: 1,
            failed_execs: 2,
            forks: 3,
            exits: 4,
            uid_changes: 5,
        };
        let json = serde_json::to_string(&dropped).unwrap();
        assert_eq!(
            json,
            r#"{"execs":1,"failed_execs":2,"forks":3,"exits":4,"uid_changes":5}"#
        );
        assert_eq!(serde_json::from_str::<ProcDropped>(&json).unwrap(), dropped);
    }
}
