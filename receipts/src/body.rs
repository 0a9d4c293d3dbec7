//! The typed record bodies: a closed set per format version.
//!
//! The receipts crate knows nothing of MCP, sandboxes or contracts: these are
//! plain data the harness fills. Free-form values go in `serde_json::Value` fields,
//! or in [`Json`] (their canonical text) where readers mostly pass them on unparsed
//! (events, verdict evidence); bytes go in a [`Payload`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::json::Json;

use crate::digest::Digest;
use crate::payload::Payload;

/// First record of every log: what ran, where, with which configuration and seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignStart {
    pub vac_version: String,
    pub host: Host,
    /// blake3 of the campaign configuration's bytes.
    pub config_hash: Digest,
    pub seed: u64,
    /// The full configuration those bytes hold, for readers that rerun or regrade; absent
    /// in logs written before it was recorded.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub config: Value,
}

/// Facts about the host a campaign ran on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub hostname: String,
    /// Kernel release, as `uname -r` prints it.
    pub kernel: String,
    /// Machine architecture, as `uname -m` prints it.
    pub arch: String,
}

/// A contract pre-registered before any probe: its full text and its blake3.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contract {
    pub name: String,
    /// The contract source, byte for byte.
    pub text: String,
    /// blake3 of `text`; verification recomputes it.
    pub blake3: Digest,
}

impl Contract {
    /// A contract record whose hash is computed from `text`.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Contract {
        let text = text.into();
        Contract {
            name: name.into(),
            blake3: Digest::of(text.as_bytes()),
            text,
        }
    }
}

/// Opens a run; every run is closed by a [`RunEnd`] with the same `run_id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStart {
    pub run_id: String,
    /// Human-readable description of the target (command line or URL).
    pub target: String,
    pub role: Role,
    pub repetition: u32,
}

/// Whether a run is the control (no tool calls), a subject, or a relaunch (no tool calls,
/// on the lab as the launches before it left it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Control,
    Subject,
    Relaunch,
}

/// The sandbox configuration a run used, as the sandbox reported it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    pub run_id: String,
    pub config: Value,
}

/// One protocol frame or chunk of server output, byte-exact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Frame {
    pub run_id: String,
    pub direction: Direction,
    /// Nanoseconds since the run started.
    pub t_ns: u64,
    pub bytes: Payload,
}

/// Which way a frame travelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Harness to server.
    ToServer,
    /// Server to harness (its protocol output).
    FromServer,
    /// The server's standard error.
    Stderr,
}

/// The outcome of a sensor's self-test.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelfTest {
    pub run_id: String,
    pub sensor: String,
    pub status: SensorStatus,
    pub detail: String,
}

/// Whether a sensor proved itself live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SensorStatus {
    /// The marker was seen: a clean result from this sensor means something.
    Live,
    /// The sensor ran but did not see its marker.
    Blind,
    /// The sensor cannot run on this host.
    CapabilityAbsent,
    /// The sensor failed to run.
    Failed,
}

/// One observed effect, optionally attributed to a call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    pub run_id: String,
    /// Index of the call whose window holds the effect; `None` when unattributed.
    pub call: Option<u64>,
    pub sensor: String,
    pub class: String,
    pub target: String,
    pub detail: Value,
    /// Bytes backing the effect (content written, bytes sent).
    pub payloads: Vec<Payload>,
}

/// The plan of what will run, written before the first call it plans (pre-registration):
/// its shape belongs to the writer (vac's harness documents it), the log only keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub plan: Value,
}

/// A sealed receipt directory this log includes: one probe of a campaign (a target ×
/// repetition) or one shard of a merged campaign. `head` is the hash of that log's last
/// record (its seal), so the including chain vouches for the included one byte for byte.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Member {
    /// The directory, relative to this log's directory (`/`-separated).
    pub dir: String,
    /// `probe` or `shard`.
    pub role: String,
    /// The campaign target's id (a probe), or `shard K/N` (a shard).
    pub target: String,
    /// 1-based, for a probe; 0 for a shard.
    pub repetition: u32,
    /// The included log's head, hex; `None` when it left no sealed log.
    #[serde(default)]
    pub head: Option<String>,
    pub records: u64,
    /// How the member ended: `completed`, `failed` (no verdicts: the detail says why) or
    /// `timed_out` (its wall-time budget ran out).
    pub status: String,
    /// The exit code the member would have had on its own.
    pub exit: u8,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// One observation of a run, as its sensor or the client made it: a typed event whose
/// vocabulary is the writer's (`type` names it), with the bytes it refers to as payloads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    pub run_id: String,
    /// Kept as text: readers parse the fields they need from it, once.
    pub event: Json,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub payloads: Vec<Payload>,
}

/// One tool × clause verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    pub run_id: String,
    pub tool: String,
    pub clause: String,
    pub verdict: VerdictKind,
    pub reason: String,
    /// Free-form, kept as its canonical text: readers that only count or cite it (most
    /// verdicts of a campaign) never build the value.
    pub evidence: Json,
}

/// The four verdicts of SPEC §3.7.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    Confirmed,
    Refuted,
    Skipped,
    Errored,
}

/// Closes a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunEnd {
    pub run_id: String,
    pub status: RunStatus,
    pub detail: String,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Completed,
    Errored,
    TimedOut,
}

/// The last record: the head it seals, the record count, and optionally a signature.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seal {
    /// blake3 of the last record before the seal.
    pub head: Digest,
    /// Number of records before the seal (so also the seal's own `seq`).
    pub count: u64,
    /// blake3 of the seal message (see [`crate::seal_message`]).
    pub digest: Digest,
    /// ed25519 public key, 64 hex digits, when signed.
    pub public_key: Option<String>,
    /// ed25519 signature over the seal message, 128 hex digits, when signed.
    pub signature: Option<String>,
}
