//! Evidence: what each kind of effect, sensor self-test and run failure carries, as types.
//!
//! An [`Effect`](crate::Effect)'s `detail` is an [`Evidence`]: one variant per kind of
//! observation (a write the overlay witnessed, a write the protocol witness inferred, a
//! read, an exec, a lookup, a connection, a datagram, a listener, a secret, credential or
//! instructions shown to the model, a manifest that drifted), each with typed fields. The
//! attribution's basis is a [`Basis`] and a drift says [`Between`] what it was seen. The
//! grader and adaptive isolation `match` on these; no decision reads a string key.
//!
//! Serialisation keeps the keys the receipts and reports have always carried (a record's
//! JSON is canonicalised through `serde_json::Value`, so field order does not matter, but
//! presence does: an `Option` written as `null` stays `null`, one that was left out stays
//! out). Reading back is by the effect's class ([`Evidence::parse`]), never by guessing.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The kind of an observed effect, and the sensor that sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectClass {
    /// A file or directory appeared (fs writes).
    Created,
    /// A file's content changed (fs writes).
    Modified,
    /// A file or directory was removed (fs writes).
    Deleted,
    /// A file or directory was moved away from `path` (fs writes).
    Renamed,
    /// Permissions or ownership changed (fs writes).
    ModeChanged,
    /// A symbolic link was created at `path`, replacing whatever was there (fs writes).
    Symlink,
    /// A directory was replaced: removed and recreated, or replaced by another type
    /// (fs writes).
    DirReplaced,
    /// A file at `path` was opened (fs events); whether it is a canary is
    /// [`Observation::canaries`]'.
    Read,
    /// A program was executed: `path` is the executable, `detail` its argv (processes).
    Exec,
    /// A TCP connection to `path` = `host:port`, with its first bytes in `detail` (network).
    Connect,
    /// A name lookup of `path` (network).
    Dns,
    /// A UDP datagram to `path` = `host:port` (network).
    Udp,
    /// A socket listening on `path` = `address:port` (network).
    Listen,
    /// A canary token reached a result: `path` is the token's name, `detail` where and in
    /// what encoding (protocol).
    SecretInResult,
    /// Instruction-like text aimed at the model in a result: `path` a short label,
    /// `detail` the excerpt (protocol).
    InstructionInResult,
    /// The tool `path` changed in tools/list after review: `detail` the difference
    /// (protocol). Owned by the tool it names, whatever its attribution.
    ManifestChanged,
}

impl EffectClass {
    /// Whether the effect is a filesystem change (the domain of `fs.write` and `fs.delete`).
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
            EffectClass::Read
            | EffectClass::Exec
            | EffectClass::Connect
            | EffectClass::Dns
            | EffectClass::Udp
            | EffectClass::Listen
            | EffectClass::SecretInResult
            | EffectClass::InstructionInResult
            | EffectClass::ManifestChanged => false,
        }
    }

    /// Whether the effect destroys what was at `path` if something existed there before:
    /// a delete, a move away, an overwrite, a replacement. Mode changes keep the content.
    pub fn destroys_existing(self) -> bool {
        matches!(
            self,
            EffectClass::Modified
                | EffectClass::Deleted
                | EffectClass::Renamed
                | EffectClass::Symlink
                | EffectClass::DirReplaced
        )
    }

    /// Whether the effect reaches out of the sandbox (the domain of `net.egress`).
    pub fn is_egress(self) -> bool {
        matches!(
            self,
            EffectClass::Connect | EffectClass::Dns | EffectClass::Udp
        )
    }

    /// Whether the effect changes the world a later call sees (the domain of `idempotent`):
    /// filesystem changes, programs run, network traffic and listeners. Reads and what the
    /// model is shown are not.
    pub fn changes_state(self) -> bool {
        self.is_fs() || self.is_egress() || matches!(self, EffectClass::Exec | EffectClass::Listen)
    }
}

/// Why an effect is tied to the call (or the moment) it is attributed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Basis {
    /// Timed inside the call's window.
    InsideWindow,
    /// Timed after the call's response, before the next call.
    AfterResponse,
    /// Timed after the harness asked the server to shut down.
    AfterShutdown,
    /// Timed before the run's first call.
    BeforeFirstCall,
    /// Not timed by any event (outside the lab), in a run that held one tool's calls.
    Untimed,
    /// A run that made no call.
    NoCall,
    /// The server's own launch or shutdown: the control run (0) or relaunch N.
    Launch(u32),
}

const INSIDE_WINDOW: &str = "observed inside the call's window";
const AFTER_RESPONSE: &str = "observed after the call's response";
const AFTER_SHUTDOWN: &str = "observed after the shutdown request";
const BEFORE_FIRST_CALL: &str = "observed before the first call";
const UNTIMED: &str = "per-tool isolation: the only tool called in this run";
const NO_CALL: &str = "no call in this run";
const LAUNCH: &str = "the server's launch or shutdown (";

impl Basis {
    /// The sentence the evidence carries.
    pub fn sentence(self) -> String {
        match self {
            Basis::InsideWindow => INSIDE_WINDOW.into(),
            Basis::AfterResponse => AFTER_RESPONSE.into(),
            Basis::AfterShutdown => AFTER_SHUTDOWN.into(),
            Basis::BeforeFirstCall => BEFORE_FIRST_CALL.into(),
            Basis::Untimed => UNTIMED.into(),
            Basis::NoCall => NO_CALL.into(),
            Basis::Launch(0) => format!("{LAUNCH}control run)"),
            Basis::Launch(n) => format!("{LAUNCH}relaunch {n})"),
        }
    }

    /// The basis a sentence names, if it names one.
    pub fn from_sentence(text: &str) -> Option<Basis> {
        let fixed = [
            (INSIDE_WINDOW, Basis::InsideWindow),
            (AFTER_RESPONSE, Basis::AfterResponse),
            (AFTER_SHUTDOWN, Basis::AfterShutdown),
            (BEFORE_FIRST_CALL, Basis::BeforeFirstCall),
            (UNTIMED, Basis::Untimed),
            (NO_CALL, Basis::NoCall),
        ];
        if let Some((_, basis)) = fixed.iter().find(|(s, _)| *s == text) {
            return Some(*basis);
        }
        let launch = text.strip_prefix(LAUNCH)?.strip_suffix(')')?;
        match launch {
            "control run" => Some(Basis::Launch(0)),
            n => n
                .strip_prefix("relaunch ")?
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .map(Basis::Launch),
        }
    }
}

impl Serialize for Basis {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.sentence())
    }
}

impl<'de> Deserialize<'de> for Basis {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Basis, D::Error> {
        let text = String::deserialize(deserializer)?;
        Basis::from_sentence(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown attribution basis {text:?}")))
    }
}

/// Which run an observation came from and why it is tied where it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Origin {
    /// The run's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The attribution's basis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Basis>,
}

/// What an effect's sensor recorded, by kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Evidence {
    /// Nothing recorded (an observation built by hand).
    #[default]
    None,
    /// A change the overlay witness found (every filesystem class).
    Write(Box<Write>),
    /// A write the protocol witness inferred from two reads (`Created`).
    Witnessed(Box<Witnessed>),
    /// A file closed after a read-only open (`Read`).
    Read(Read),
    /// A program executed (`Exec`).
    Exec(Exec),
    /// A name looked up (`Dns`).
    Dns(Dns),
    /// A TCP connection (`Connect`).
    Connect(Box<Connect>),
    /// A UDP datagram (`Udp`).
    Udp(Udp),
    /// A listening socket (`Listen`).
    Listen(Listen),
    /// A canary token in what the model was shown (`SecretInResult`).
    Secret(Box<SecretShown>),
    /// A real secret's format in what the model was shown (`SecretInResult`).
    Credential(Box<CredentialShown>),
    /// Instruction-like text in what the model was shown (`InstructionInResult`).
    Instructions(Box<InstructionsShown>),
    /// A listing that changed after review (`ManifestChanged`).
    Drift(Box<DriftSeen>),
}

impl Evidence {
    /// Reads the evidence of an effect of `class` back from its JSON (`null`: none).
    pub fn parse(class: EffectClass, value: Value) -> Result<Evidence, serde_json::Error> {
        use serde_json::from_value;
        if value.is_null() {
            return Ok(Evidence::None);
        }
        Ok(match class {
            _ if class.is_fs() && value.get("witness").is_some() => {
                Evidence::Witnessed(from_value(value)?)
            }
            _ if class.is_fs() => Evidence::Write(from_value(value)?),
            EffectClass::Read => Evidence::Read(from_value(value)?),
            EffectClass::Exec => Evidence::Exec(from_value(value)?),
            EffectClass::Dns => Evidence::Dns(from_value(value)?),
            EffectClass::Connect => Evidence::Connect(from_value(value)?),
            EffectClass::Udp => Evidence::Udp(from_value(value)?),
            EffectClass::Listen => Evidence::Listen(from_value(value)?),
            EffectClass::SecretInResult if value.get("rule").is_some() => {
                Evidence::Credential(from_value(value)?)
            }
            EffectClass::SecretInResult => Evidence::Secret(from_value(value)?),
            EffectClass::InstructionInResult => Evidence::Instructions(from_value(value)?),
            EffectClass::ManifestChanged => Evidence::Drift(from_value(value)?),
            _ => unreachable!("every filesystem class is handled above"),
        })
    }

    /// The run and basis of the observation, where it has them.
    pub fn origin(&self) -> Option<&Origin> {
        match self {
            Evidence::None | Evidence::Witnessed(_) => None,
            Evidence::Write(e) => Some(&e.origin),
            Evidence::Read(e) => Some(&e.origin),
            Evidence::Exec(e) => Some(&e.origin),
            Evidence::Dns(e) => Some(&e.origin),
            Evidence::Connect(e) => Some(&e.origin),
            Evidence::Udp(e) => Some(&e.origin),
            Evidence::Listen(e) => Some(&e.origin),
            Evidence::Secret(e) => Some(&e.shown.origin),
            Evidence::Credential(e) => Some(&e.shown.origin),
            Evidence::Instructions(e) => Some(&e.shown.origin),
            Evidence::Drift(e) => Some(&e.origin),
        }
    }

    /// The run and basis, to set: `None` for evidence that carries neither.
    pub fn origin_mut(&mut self) -> Option<&mut Origin> {
        match self {
            Evidence::None | Evidence::Witnessed(_) => None,
            Evidence::Write(e) => Some(&mut e.origin),
            Evidence::Read(e) => Some(&mut e.origin),
            Evidence::Exec(e) => Some(&mut e.origin),
            Evidence::Dns(e) => Some(&mut e.origin),
            Evidence::Connect(e) => Some(&mut e.origin),
            Evidence::Udp(e) => Some(&mut e.origin),
            Evidence::Listen(e) => Some(&mut e.origin),
            Evidence::Secret(e) => Some(&mut e.shown.origin),
            Evidence::Credential(e) => Some(&mut e.shown.origin),
            Evidence::Instructions(e) => Some(&mut e.shown.origin),
            Evidence::Drift(e) => Some(&mut e.origin),
        }
    }

    /// The attribution's basis, where one was recorded.
    pub fn basis(&self) -> Option<Basis> {
        self.origin().and_then(|o| o.attribution)
    }

    /// Whether traffic carried a planted token or a real secret's format in its bytes.
    pub fn carries_secret(&self) -> bool {
        match self {
            Evidence::Dns(dns) => !dns.canaries.is_empty(),
            Evidence::Udp(udp) => !udp.canaries.is_empty(),
            Evidence::Connect(connect) => {
                !connect.canaries.is_empty()
                    || connect.credentials.as_ref().is_some_and(|c| !c.is_empty())
            }
            _ => false,
        }
    }

    /// Whether a file's modification cut off its end: the new content is the old content's
    /// beginning (the overlay witness compares them), which destroys what was at its end.
    /// An edit, a rewrite in place or a rewrite shorter with other content (git's index
    /// written anew) is a write, not a removal (`fs.delete`). A write the protocol witness
    /// saw has no contents: it counts as a truncation.
    pub fn truncates(&self) -> bool {
        match self {
            Evidence::Write(write) => match &write.change {
                Change::Modified { truncated, .. } => *truncated,
                _ => true,
            },
            _ => true,
        }
    }

    /// The evidence as JSON, in the shape the receipts carry.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A change the overlay witness found, with the sizes, hashes and bytes that back it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Write {
    #[serde(flatten)]
    pub origin: Origin,
    #[serde(flatten)]
    pub change: Change,
    /// The hash covers only this many leading bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_partial: Option<u64>,
    /// The written bytes from where they part from what was there (lossy text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt_offset: Option<usize>,
    /// The same path as the control run left it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlState>,
    /// When the lab's events saw it written, ms into the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes_ms: Option<Vec<u64>>,
}

/// The shape of one filesystem change (the witness's `FsChange`, as evidence).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Change {
    Renamed {
        from: String,
        to: String,
        size: u64,
        blake3: String,
    },
    Modified {
        size: u64,
        blake3: String,
        old_size: u64,
        old_blake3: String,
        /// The new content is the old content's beginning: its end was cut off.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
    },
    ModeChanged {
        old_mode: String,
        new_mode: String,
    },
    OwnerChanged {
        old_owner: (u32, u32),
        new_owner: (u32, u32),
    },
    Symlink {
        target: String,
        previous: Option<String>,
    },
    Deleted {
        was: String,
    },
    DirReplaced {
        opaque: bool,
    },
    Created {
        kind: String,
        mode: String,
        size: Option<u64>,
        blake3: Option<String>,
    },
}

/// What the control run left at a path the subject run also wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlState {
    pub fingerprint: String,
    pub size: Option<usize>,
}

/// A write the protocol witness inferred: a never-used path read absent, then present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Witnessed {
    /// Always `protocol`.
    pub witness: String,
    pub run: String,
    /// The path as the tool was asked for it.
    pub named: String,
    pub first: WitnessRead,
    pub second: WitnessRead,
    pub negative_control: WitnessRead,
}

/// One read of the protocol witness: the call, what it asked and what it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WitnessRead {
    pub call: usize,
    /// The call's arguments, as sent.
    pub arguments: Value,
    /// `absent`, `present` or `unknown`.
    pub presence: String,
    pub excerpt: Option<String>,
    pub blake3: Option<String>,
    pub bytes: Option<usize>,
}

/// A file a run closed after a read-only open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Read {
    #[serde(flatten)]
    pub origin: Origin,
    pub closed_ms: u64,
    /// The file is a planted canary.
    pub canary: bool,
    /// The never-read place it lies in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub never_read: Option<String>,
}

/// Where an exec's argv was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArgvSource {
    /// The caller's memory while the kernel held the call.
    ExecCall,
    /// `/proc/<pid>/cmdline`.
    Procfs,
    /// Gone before it could be read.
    Missing,
}

/// A program the run executed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exec {
    #[serde(flatten)]
    pub origin: Origin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    pub argv: Vec<String>,
    pub argv_truncated: bool,
    pub argv_source: ArgvSource,
    pub exe: Option<String>,
    pub cwd: Option<String>,
    pub uid: Option<u32>,
    pub pid: i32,
}

/// A name the run looked up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dns {
    #[serde(flatten)]
    pub origin: Origin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    pub qtype: u16,
    pub tcp: bool,
    /// Planted tokens the name carries.
    pub canaries: Vec<String>,
}

/// How a connection's host was told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HostFrom {
    #[serde(rename = "http host")]
    HttpHost,
    #[serde(rename = "tls sni")]
    TlsSni,
    #[serde(rename = "last dns lookup")]
    LastDnsLookup,
    #[serde(rename = "address")]
    Address,
}

/// A TCP connection the run made, with the first bytes it sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Connect {
    #[serde(flatten)]
    pub origin: Origin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    /// The address and port it connected to.
    pub dst: String,
    pub accepted: bool,
    pub host_from: HostFrom,
    pub request_line: Option<String>,
    pub sni: Option<String>,
    pub first_bytes: String,
    pub first_bytes_len: usize,
    pub blake3: String,
    /// What it sent inside TLS (an excerpt), when it completed the sinkhole's handshake
    /// (it verified no certificate); absent otherwise, and in receipts from before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decrypted: Option<String>,
    /// Planted tokens among the bytes sent, inside TLS included.
    pub canaries: Vec<String>,
    /// Real secrets' formats among the bytes sent (recorded only when there are some and
    /// no canary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<Vec<String>>,
}

/// A UDP datagram the run sent (not to port 53).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Udp {
    #[serde(flatten)]
    pub origin: Origin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    pub len: usize,
    pub bytes: String,
    pub canaries: Vec<String>,
}

/// A socket the run listened on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listen {
    #[serde(flatten)]
    pub origin: Origin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    /// The sensor that saw it (`sock_diag`).
    pub seen: String,
}

/// Where something shown to the model was: a call's result (or a request it made of the
/// client), a listing of prompts and resources, or what reading one entry returned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Shown {
    #[serde(flatten)]
    pub origin: Origin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The request it came in (`sampling/createMessage`, `prompts/get`, `listing`), when not
    /// a call's result.
    #[serde(default, rename = "in", skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The prompt or resource read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
}

/// A planted token found in what the model was shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecretShown {
    #[serde(flatten)]
    pub shown: Shown,
    pub token: String,
    pub pointer: String,
    pub encoding: String,
    pub in_key: bool,
    pub excerpt: Option<String>,
}

/// A real secret's format found in what the model was shown (its text never kept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CredentialShown {
    #[serde(flatten)]
    pub shown: Shown,
    pub rule: String,
    pub pointer: String,
    pub redacted: String,
}

/// Instruction-like text found in what the model was shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstructionsShown {
    #[serde(flatten)]
    pub shown: Shown,
    pub pointer: String,
    pub score: u32,
    pub threshold: u32,
    pub signals: Vec<SignalHit>,
    pub excerpt: String,
    pub hidden: Option<String>,
}

/// One signal of instruction-like text and what matched it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignalHit {
    pub signal: String,
    pub weight: u32,
    pub matched: String,
}

/// Between which two listings a drift was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Between {
    /// Within one session: the server changed its listing after calls.
    WithinSession,
    /// Across launches: a later launch listed otherwise than the reviewed one.
    AcrossLaunches,
}

/// How a tool's (or prompt's, or resource's) listing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftChange {
    Added,
    Removed,
    Changed,
}

impl DriftChange {
    /// The name the evidence carries.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftChange::Added => "added",
            DriftChange::Removed => "removed",
            DriftChange::Changed => "changed",
        }
    }
}

/// One leaf of a listed entry that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldChange {
    /// Pointer inside the entry: `/description`, `/annotations/readOnlyHint`.
    pub field: String,
    /// Excerpts: a string that stayed a string as text, from a little before where it
    /// starts to differ; anything else as JSON text. `None` where absent on that side.
    pub before: Option<String>,
    pub after: Option<String>,
}

/// A listing that changed after review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftSeen {
    #[serde(flatten)]
    pub origin: Origin,
    /// The tool (or entry) whose listing changed.
    pub tool: String,
    pub change: DriftChange,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<FieldChange>>,
    /// Differences past those listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more: Option<usize>,
    pub between: Between,
    /// The call the listing followed; recorded (possibly `null`) for a tools/list drift
    /// of a subject run, absent otherwise.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub after_call: Option<Option<usize>>,
    /// `notifications/…/list_changed` the server sent in that run.
    pub notifications: u64,
    /// A prompt's or resource's key, for a drift of the server's own listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// Seen by a relaunch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relaunch: Option<bool>,
}

/// A key that is present is `Some`, even when its value is `null`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

/// What a sensor's self-test did and saw, as evidence of its liveness.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SelfTestEvidence {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// What the self-test found, in a sentence.
    pub self_test: String,
    #[serde(flatten)]
    pub facts: SensorFacts,
}

/// What each kind of sensor adds to its self-test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SensorFacts {
    /// The protocol sensor: frames recorded and dropped, tools/list changes announced.
    Protocol {
        frames: u64,
        frames_dropped: u64,
        tools_list_changed: u64,
    },
    /// The protocol witness: its negative control and its two flip reads.
    Witness {
        negative_control: Option<Box<WitnessRead>>,
        flip: [Option<Box<WitnessRead>>; 2],
    },
    /// The sandbox's sensors: what their caps turned away (the process and network
    /// sensors record it, `null` when nothing was), and contents past the write budget.
    Sandbox {
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "present"
        )]
        dropped: Option<Option<Dropped>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        contents_over_budget: Option<u64>,
    },
}

impl Default for SensorFacts {
    fn default() -> SensorFacts {
        SensorFacts::Sandbox {
            dropped: None,
            contents_over_budget: None,
        }
    }
}

/// What a sensor's caps turned away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Dropped {
    Processes {
        execs: u64,
        failed_execs: u64,
        forks: u64,
        exits: u64,
        uid_changes: u64,
    },
    Network {
        dns: u64,
        tcp: u64,
        udp: u64,
        other: u64,
        tcp_unread: u64,
        capture: u64,
    },
}

/// What a failed run or a malformed tool left as evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Failure {
    /// A run that crashed, timed out or broke the protocol: its id and what happened.
    Run { run: String, detail: String },
    /// A tools/list entry that is not a tool: its index, why, and the entry as sent.
    MalformedTool {
        index: usize,
        error: String,
        raw: Value,
    },
    /// Evidence written by hand (a test's observation).
    Other(Value),
}

impl Default for Failure {
    fn default() -> Failure {
        Failure::Other(Value::Null)
    }
}

/// What one behaviour-profile line records beside its kind and target: the tool (or
/// `(server)` row) and how many distinct targets of that kind it had (more than are listed
/// when the list was cut).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileLine {
    pub tool: String,
    pub distinct: u64,
}

impl ProfileLine {
    /// The line a profile record's detail holds; `None` when it is not one.
    pub fn read(detail: &Value) -> Option<ProfileLine> {
        ProfileLine::deserialize(detail).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_basis_reads_back_from_its_sentence() {
        for basis in [
            Basis::InsideWindow,
            Basis::AfterResponse,
            Basis::AfterShutdown,
            Basis::BeforeFirstCall,
            Basis::Untimed,
            Basis::NoCall,
            Basis::Launch(0),
            Basis::Launch(3),
        ] {
            assert_eq!(Basis::from_sentence(&basis.sentence()), Some(basis));
        }
        assert_eq!(
            Basis::from_sentence("the server's launch or shutdown (relaunch 0)"),
            None
        );
        assert_eq!(Basis::from_sentence("observed nearby"), None);
    }

    #[test]
    fn a_drift_keeps_a_null_after_call_apart_from_none() {
        let text = r#"{"tool":"t","change":"added","between":"within_session","after_call":null,"notifications":0,"run":"r"}"#;
        let evidence = Evidence::parse(
            EffectClass::ManifestChanged,
            serde_json::from_str(text).unwrap(),
        )
        .unwrap();
        let Evidence::Drift(drift) = &evidence else {
            panic!("not a drift: {evidence:?}")
        };
        assert_eq!(drift.after_call, Some(None));
        assert_eq!(drift.between, Between::WithinSession);
        assert_eq!(serde_json::to_string(&evidence.to_value()).unwrap(), {
            let v: Value = serde_json::from_str(text).unwrap();
            v.to_string()
        });
    }

    #[test]
    fn traffic_carries_a_secret_only_when_its_bytes_held_one() {
        let connect = |canaries: Vec<&str>, credentials: Option<Vec<&str>>| {
            let mut value = serde_json::json!({"dst": "1.2.3.4:443", "accepted": true,
                "host_from": "tls sni", "request_line": null, "sni": "x", "first_bytes": "",
                "first_bytes_len": 0, "blake3": "00", "canaries": canaries});
            if let Some(c) = credentials {
                value["credentials"] = serde_json::json!(c);
            }
            Evidence::parse(EffectClass::Connect, value).unwrap()
        };
        assert!(!connect(vec![], None).carries_secret());
        assert!(!connect(vec![], Some(vec![])).carries_secret());
        assert!(connect(vec!["tok"], None).carries_secret());
        assert!(connect(vec![], Some(vec!["aws_access_key_id"])).carries_secret());
    }

    #[test]
    fn a_misspelt_key_is_refused_not_ignored() {
        let value = serde_json::json!({"qtype": 1, "tcp": false, "canaires": ["t"]});
        assert!(Evidence::parse(EffectClass::Dns, value).is_err());
    }
}
