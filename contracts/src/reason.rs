//! Why a cell is skipped or errored: the reasons the harness records in an observation
//! (a tool it did not call, a run that failed) and the verdicts carry.

use serde::{Deserialize, Serialize};

/// The named preconditions of a `skipped` verdict (SPEC §3.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// The tool was never called.
    NotCalled,
    /// The clause restricts nothing for this tool: never a finding.
    NothingPromised,
    /// The tool takes no path argument to probe with.
    NoPathArgument,
    /// A backing sensor cannot run on this host or target.
    CapabilityAbsent,
    /// The call budget ran out before the tool was called.
    Budget,
    /// Every call failed: nothing shows what the tool does when it does its job.
    NoSuccessfulCall,
}

impl SkipReason {
    /// The stable machine name, as in SPEC §3.7.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::NotCalled => "not_called",
            SkipReason::NothingPromised => "nothing_promised",
            SkipReason::NoPathArgument => "no_path_argument",
            SkipReason::CapabilityAbsent => "capability_absent",
            SkipReason::Budget => "budget",
            SkipReason::NoSuccessfulCall => "no_successful_call",
        }
    }
}

/// What can make a cell `errored` (SPEC §3.7); also the kind of a run error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The server process died.
    Crash,
    /// A call or the run exceeded its wall-clock limit.
    Timeout,
    /// The server broke the protocol (invalid JSON-RPC, oversized frames).
    #[serde(rename = "protocol_error")]
    Protocol,
    /// A backing sensor ran but failed its self-test or missed events.
    SensorFailed,
    /// The tool's tools/list entry is not a valid tool declaration (kept raw as evidence).
    MalformedTool,
}

impl ErrorKind {
    /// The stable machine name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Crash => "crash",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Protocol => "protocol_error",
            ErrorKind::SensorFailed => "sensor_failed",
            ErrorKind::MalformedTool => "malformed_tool",
        }
    }
}
