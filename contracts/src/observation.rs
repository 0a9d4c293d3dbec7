//! What the harness observed of one server: calls, attributable effects, sensor self-tests
//! and failures. Plain data, built by the harness; every run of the server merged.

use serde::{Deserialize, Serialize};

use crate::verdict::{ErrorKind, SkipReason};

/// Everything the grader needs to know about the runs of one server.
///
/// List fields default to empty when deserialised.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Every tool call made, in order; `Call::index` is unique.
    #[serde(default)]
    pub calls: Vec<Call>,
    /// Attributable effects: subject run minus control run (SPEC §3.4).
    #[serde(default)]
    pub effects: Vec<Effect>,
    /// The control run's effects that were subtracted; carried as evidence.
    #[serde(default)]
    pub control_subtracted: Vec<Effect>,
    /// The sensors' self-tests.
    #[serde(default)]
    pub sensors: Vec<SensorStatus>,
    /// Tools the harness chose not to call, with its reason (e.g. `budget`).
    #[serde(default)]
    pub not_called: Vec<(String, SkipReason)>,
    /// Crashes, timeouts, protocol errors and sensor failures during the runs.
    #[serde(default)]
    pub errors: Vec<RunError>,
}

/// One tool call as made by the harness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    /// Position in the server's call sequence; what `Attribution` refers to.
    pub index: usize,
    /// The tool called.
    pub tool: String,
    /// The arguments sent.
    pub arguments: serde_json::Value,
    /// Whether the server answered with a result rather than an error.
    pub ok: bool,
    /// The error the server answered with, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One observed effect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    /// What happened.
    pub class: EffectClass,
    /// The path as seen inside the sandbox. For `Renamed`, the source; the destination is
    /// reported as its own `Created` effect.
    pub path: String,
    /// Which call the effect belongs to.
    pub attribution: Attribution,
    /// Evidence: bytes excerpt, hashes, sizes, as the harness recorded them.
    #[serde(default)]
    pub detail: serde_json::Value,
    /// Whether `path` existed before the call (in the lower layer or earlier in the run).
    pub existed_before: bool,
}

/// The kind of an observed effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectClass {
    /// A file or directory appeared.
    Created,
    /// A file's content changed.
    Modified,
    /// A file or directory was removed.
    Deleted,
    /// A file or directory was moved away from `path`.
    Renamed,
    /// Permissions or ownership changed.
    ModeChanged,
    /// A symbolic link was created at `path` (replacing whatever was there).
    Symlink,
    /// A directory was replaced (removed and recreated, or replaced by another type).
    DirReplaced,
}

impl EffectClass {
    /// Whether the effect is on the filesystem (the domain of `fs.write` and `fs.delete`).
    pub fn is_fs(self) -> bool {
        // Exhaustive on purpose: a new class must decide.
        match self {
            EffectClass::Created
            | EffectClass::Modified
            | EffectClass::Deleted
            | EffectClass::Renamed
            | EffectClass::ModeChanged
            | EffectClass::Symlink
            | EffectClass::DirReplaced => true,
        }
    }

    /// Whether the effect destroys what was at `path` if something existed there before:
    /// a delete, a move away, an overwrite, a replacement. Mode changes keep the content.
    pub fn destroys_existing(self) -> bool {
        match self {
            EffectClass::Modified
            | EffectClass::Deleted
            | EffectClass::Renamed
            | EffectClass::Symlink
            | EffectClass::DirReplaced => true,
            EffectClass::Created | EffectClass::ModeChanged => false,
        }
    }
}

/// Which call an effect is attributed to (SPEC §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attribution {
    /// Inside the window of the call with this index.
    Call(usize),
    /// After the response of the call with this index (a delayed effect).
    AfterResponse(usize),
    /// No call window holds it.
    Unattributed,
}

impl Attribution {
    /// The call index the effect belongs to, if any.
    pub fn call_index(self) -> Option<usize> {
        match self {
            Attribution::Call(i) | Attribution::AfterResponse(i) => Some(i),
            Attribution::Unattributed => None,
        }
    }
}

/// A sensor of SPEC §3.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sensor {
    /// The overlay upper-layer walk.
    FsWrites,
    /// inotify on the lab.
    FsEvents,
    /// The proc connector.
    Processes,
    /// The sinkhole and socket snapshots.
    Network,
    /// The JSON-RPC frame recorder.
    Protocol,
}

/// The outcome of one sensor's self-test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SensorStatus {
    /// The sensor tested.
    pub sensor: Sensor,
    /// What the self-test found.
    #[serde(flatten)]
    pub status: SensorState,
    /// What the self-test did and saw (marker path, nonce host), as evidence of liveness.
    #[serde(default)]
    pub detail: serde_json::Value,
}

/// Whether a sensor can be trusted for a clean verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SensorState {
    /// The self-test marker was seen.
    Live,
    /// The sensor ran but missed part of what happened (e.g. lost events).
    Blind {
        /// What was missed.
        reason: String,
    },
    /// The sensor cannot run on this host or target.
    CapabilityAbsent,
    /// The sensor ran and failed its self-test.
    Failed {
        /// What failed.
        reason: String,
    },
}

/// A failure during the runs, optionally tied to one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunError {
    /// The tool being called when it happened; `None` for the run as a whole.
    #[serde(default)]
    pub tool: Option<String>,
    /// What failed.
    pub kind: ErrorKind,
    /// Evidence: exit status, stderr excerpt, the offending frame.
    #[serde(default)]
    pub detail: serde_json::Value,
}
