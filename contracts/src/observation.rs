//! What the harness observed of one server: calls, attributable effects, sensor self-tests
//! and failures. Plain data, built by the harness; every run of the server merged.

use serde::{Deserialize, Serialize};

pub use crate::evidence::EffectClass;
use crate::evidence::{Evidence, Failure, SelfTestEvidence};
use crate::reason::{ErrorKind, SkipReason};

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
    /// Sandbox paths of the planted canary files: a `Read` of one is an `fs.read`
    /// violation under any restricting rule.
    #[serde(default)]
    pub canaries: Vec<String>,
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
    /// The index of an earlier call of the same tool with identical arguments, made in the
    /// same sandbox, that this call repeats: the `idempotent` clause grades these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_of: Option<usize>,
    /// For a repeat: the sandbox paths whose state (kind, mode, content hash) the harness
    /// read to be the same just before the repeat and once it had settled. A repeat's
    /// write to one of them left the state it found: `idempotent` does not count it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_unchanged: Vec<String>,
}

/// One observed effect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawEffect")]
pub struct Effect {
    /// What happened.
    pub class: EffectClass,
    /// What the effect is on; its form is the class's (see [`EffectClass`]): a sandbox
    /// path for filesystem classes and `Read`, the executable's path for `Exec`,
    /// `host:port` for `Connect`, `Udp` and `Listen`, the name for `Dns`, the token's name
    /// for `SecretInResult`, a short label for `InstructionInResult`, the tool's name for
    /// `ManifestChanged`. For `Renamed`, the source; the destination is reported as its own
    /// `Created` effect.
    pub path: String,
    /// Which call the effect belongs to.
    pub attribution: Attribution,
    /// Evidence: what the sensor recorded of it, typed by kind.
    pub detail: Evidence,
    /// Whether `path` existed before the call (in the lower layer or earlier in the run).
    pub existed_before: bool,
}

/// An effect as JSON holds it: its evidence is read by its class.
#[derive(Deserialize)]
struct RawEffect {
    class: EffectClass,
    path: String,
    attribution: Attribution,
    #[serde(default)]
    detail: serde_json::Value,
    existed_before: bool,
}

impl TryFrom<RawEffect> for Effect {
    type Error = serde_json::Error;

    fn try_from(raw: RawEffect) -> Result<Effect, serde_json::Error> {
        Ok(Effect {
            detail: Evidence::parse(raw.class, raw.detail)?,
            class: raw.class,
            path: raw.path,
            attribution: raw.attribution,
            existed_before: raw.existed_before,
        })
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
    /// After the harness asked the server to shut down: the server's own exit, reported
    /// apart from the calls (SPEC §3.4).
    Shutdown,
    /// No call window holds it.
    Unattributed,
}

impl Attribution {
    /// The call index the effect belongs to, if any.
    pub fn call_index(self) -> Option<usize> {
        match self {
            Attribution::Call(i) | Attribution::AfterResponse(i) => Some(i),
            Attribution::Shutdown | Attribution::Unattributed => None,
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
    /// The protocol witness of writes (SPEC §3.5), per tool: a never-repeated nonce path
    /// read once must come back absent (its self-test, the negative control); a second
    /// nonce path read twice, absent then present, is a write. Backs `fs.write` where the
    /// overlay witness is `capability_absent` (remote targets).
    ProtocolWitness,
}

/// The outcome of one sensor's self-test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SensorStatus {
    /// The sensor tested.
    pub sensor: Sensor,
    /// What the self-test found.
    #[serde(flatten)]
    pub status: SensorState,
    /// What the self-test did and saw, as evidence of liveness.
    #[serde(default)]
    pub detail: SelfTestEvidence,
    /// The tool whose calls the self-test belongs to (the protocol witness is per tool);
    /// `None` for a self-test that covers every tool of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
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
    /// Evidence: the run and what happened, or the malformed entry.
    #[serde(default)]
    pub detail: Failure,
}
