//! What one run produced: its role, its calls and what came back, what each sensor saw
//! and its self-test, how it ended. The run stage fills a [`RunOutput`]; the event stage
//! records it and reads it back; every later stage reads it.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use vac_contracts::{Answer, ErrorKind};
use vac_sandbox::{FsEventKind, LayerState};

use super::calls::{Purpose, Revised};
use super::seen::{ExecSeen, LabEvent, Lost, NetSeen, ObservedChange};
use crate::client::{CallOutcome, FrameLogStats, Frames, Surface, SurfaceRead, ToolList};

/// Control runs make no tool call; subject runs make the plan's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Role {
    Control,
    Subject,
    /// The server started again on the lab as the earlier launches left it, no tool
    /// called: what a server does once it has state (a sleeper arming on its second
    /// launch) is graded on it.
    Relaunch,
}

/// A sensor's self-test result in one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reading {
    Live(String),
    Blind(String),
    /// The sensor cannot watch this target at all (a remote server, a host without it).
    Absent(String),
    /// The sensor ran and failed (lost events, a broken filter).
    Failed(String),
}

/// The self-tests of the four sandbox sensors of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SensorReadings {
    pub(crate) fs_writes: Reading,
    pub(crate) fs_events: Reading,
    pub(crate) processes: Reading,
    pub(crate) network: Reading,
}

impl SensorReadings {
    /// Each sensor with its receipt name, in recording order.
    pub(crate) fn named(&self) -> [(&'static str, &Reading); 4] {
        [
            ("fs_writes", &self.fs_writes),
            ("fs_events", &self.fs_events),
            ("processes", &self.processes),
            ("network", &self.network),
        ]
    }
}

/// A shared run's wait for quiet after one tool's block of calls: whether the run went
/// quiet before the bound (if not, something the block set off may still be at work when
/// the next block starts), and tools/list asked for again then, so that a change of the
/// manifest is tied to the block it followed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Settled {
    /// The index of the block's last call.
    pub(crate) after_call: usize,
    pub(crate) quiet: bool,
    /// When the wait ended, since the run's start.
    pub(crate) t_ns: u64,
    /// The raw tools/list, when it differs from the one before it (the handshake's for the
    /// first block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Arc<Value>>,
    /// Why tools/list failed then, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) relist_failed: Option<String>,
    /// Upper-layer paths written since the previous wait (the first: since the handshake),
    /// from snapshots of the layer: what times a change no lab event timed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) upper: Vec<std::path::PathBuf>,
    /// The snapshot could not be taken or compared whole (too many entries, unreadable):
    /// changes no event timed stay untimed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) upper_blind: bool,
    /// The run stopped here: what this block did puts every later block in doubt, so they
    /// were not made (adaptive isolation's `stops_after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stopped: Option<String>,
}

impl Settled {
    /// A wait after the call `after_call`, with the upper-layer paths written since the
    /// previous one (`None`: the snapshots could not tell) and no tools/list.
    pub(crate) fn new(
        after_call: usize,
        quiet: bool,
        t_ns: u64,
        written: Option<Vec<std::path::PathBuf>>,
    ) -> Settled {
        Settled {
            after_call,
            quiet,
            t_ns,
            tools: None,
            relist_failed: None,
            upper_blind: written.is_none(),
            upper: written.unwrap_or_default(),
            stopped: None,
        }
    }
}

/// One call and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CallRecord {
    pub(crate) index: usize,
    /// The earlier call of this run with identical arguments, for `idempotent`.
    pub(crate) repeat_of: Option<usize>,
    /// What the call is for (the protocol witness's reads are marked).
    pub(crate) purpose: Purpose,
    pub(crate) tool: String,
    pub(crate) arguments: Map<String, Value>,
    pub(crate) outcome: Result<CallOutcome, SessionFailed>,
    /// A repeat's view of the lab paths written so far: their state in the upper layer
    /// just before it and once it had settled (what `idempotent` is graded on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) repeat_state: Vec<PathStates>,
    /// Why the arguments made differ from the plan's: the call they come from and the rule
    /// (a retry's refusal read, an identifier an earlier result returned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) revised: Option<Revised>,
    /// What the answer achieved, as judged when the call was made
    /// (`vac_contracts::answer`): recorded so that a later classifier leaves what old
    /// receipts say alone. Absent in receipts older than the judgement, whose calls were
    /// judged by `isError` alone ([`CallRecord::answer`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) answer: Option<Answer>,
    /// A call the session failed under (the server exited, sent a line over the cap, broke
    /// the protocol): when it was sent and when the failure was seen, on the frame log's
    /// clock, so that what it did before the server died is still its own. Absent in
    /// receipts older than it, whose failed calls own nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unanswered: Option<Unanswered>,
}

/// Why a call has no outcome: the session failed under it (the server exited, sent a line
/// over the cap, broke the protocol), as the client said it — the text the receipts record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct SessionFailed(pub(crate) String);

impl std::fmt::Display for SessionFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// When a call without an outcome was sent, and when its session's failure was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Unanswered {
    pub(crate) requested_at: std::time::Duration,
    pub(crate) failed_at: std::time::Duration,
}

impl CallRecord {
    /// When the call was sent and when it ended: its answer (or timeout), or the failure
    /// of the session under it.
    pub(crate) fn window(&self) -> Option<(std::time::Duration, std::time::Duration)> {
        match &self.outcome {
            Ok(outcome) => Some((outcome.requested_at, outcome.answered_at)),
            Err(_) => self.unanswered.map(|u| (u.requested_at, u.failed_at)),
        }
    }
}

/// Judges a call's outcome: no answer, a JSON-RPC error, or its result as
/// `vac_contracts::answer::judge` reads it.
pub(crate) fn judged(outcome: &Result<CallOutcome, SessionFailed>) -> Answer {
    match outcome {
        Err(_) => Answer::NoAnswer,
        Ok(CallOutcome {
            error: Some(crate::client::CallError::Timeout { .. }),
            ..
        }) => Answer::NoAnswer,
        Ok(CallOutcome { error: Some(_), .. }) => Answer::RpcError,
        Ok(CallOutcome { result: None, .. }) => Answer::NoAnswer,
        Ok(CallOutcome {
            result: Some(result),
            ..
        }) => vac_contracts::answer::judge(result),
    }
}

/// One path's state before and after a repeated call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PathStates {
    #[serde(with = "vac_sandbox::serde_path")]
    pub(crate) path: std::path::PathBuf,
    pub(crate) before: LayerState,
    pub(crate) after: LayerState,
}

impl CallRecord {
    /// What the call's answer achieved: the recorded judgement, or for a call recorded
    /// before judgements were, what `isError` and the JSON-RPC error say.
    pub(crate) fn answer(&self) -> Answer {
        self.answer.unwrap_or_else(|| match &self.outcome {
            Ok(CallOutcome {
                error: None,
                result,
                ..
            }) => {
                let flagged = result.as_ref().and_then(|r| r.get("isError"));
                match flagged.and_then(Value::as_bool) {
                    Some(true) => Answer::ToolError,
                    _ => Answer::Answered,
                }
            }
            outcome => judged(outcome),
        })
    }

    /// The paths a repeat left as it found them.
    pub(crate) fn left_unchanged(&self) -> Vec<String> {
        self.repeat_state
            .iter()
            .filter(|p| p.before == p.after)
            .map(|p| p.path.display().to_string())
            .collect()
    }
}

/// Why a run did not complete normally.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunFailure {
    pub(crate) kind: ErrorKind,
    pub(crate) detail: String,
}

/// Everything one run observed: what the event stage (`event::events`) records and
/// `event::RunBuilder` reads back.
#[derive(Debug)]
pub(crate) struct RunOutput {
    pub(crate) id: String,
    pub(crate) role: Role,
    pub(crate) tool: Option<String>,
    /// The frames of the live run (recorded as `frame` records; not read back for grading).
    pub(crate) frames: Frames,
    pub(crate) frame_stats: FrameLogStats,
    pub(crate) protocol_version: Option<String>,
    /// The server's name and version from initialize.
    pub(crate) server: Option<(String, String)>,
    pub(crate) tools: Option<ToolList>,
    /// The prompts, resources and templates listed after tools/list, when the server
    /// declared any.
    pub(crate) surface: Option<Surface>,
    /// The control run: what reading each listed prompt and resource returned.
    pub(crate) surface_reads: Vec<SurfaceRead>,
    pub(crate) calls: Vec<CallRecord>,
    /// Subject runs: the raw tools/list array asked for again after the calls, or why
    /// that failed (the protocol sensor's proof that the session was intact to the end).
    pub(crate) later_tools: Option<Result<Arc<Value>, String>>,
    /// Subject runs: the prompts, resources and templates listed again after the calls.
    pub(crate) later_surface: Option<Surface>,
    /// How many `notifications/tools/list_changed` the server sent during the run.
    pub(crate) list_changed: u64,
    /// What the server asked the model or the user outside any call (sampling,
    /// elicitation), graded on the server's row.
    pub(crate) asked: Vec<crate::client::Asked>,
    pub(crate) changes: Vec<ObservedChange>,
    /// Every lab inotify event of the run, in order (capped; losses in `lost`).
    pub(crate) lab_events: Vec<LabEvent>,
    /// The witness's marker, whose open and close are the sensor's, not the server's.
    pub(crate) marker: Option<std::path::PathBuf>,
    /// Execs of the run's tree (the sandbox's own marker exec left out).
    pub(crate) execs: Vec<ExecSeen>,
    pub(crate) net: NetSeen,
    /// Listening sockets of the run (sock_diag snapshots), first seen when.
    pub(crate) listens: Vec<(String, Duration)>,
    pub(crate) sensors: SensorReadings,
    pub(crate) lost: Lost,
    pub(crate) failure: Option<RunFailure>,
    /// Why a first attempt of this run was given up: it got no answer to its start (no
    /// `initialize` answer, or nothing listening), so the run was made again in a fresh
    /// sandbox and this output is the second attempt's.
    pub(crate) retried: Option<RunFailure>,
    /// The server said nothing to its start before the wait ran out (no line on stdout, or
    /// nothing listening): a slow first start, a cold cache, a loaded machine — unlike a
    /// crash, a protocol error or lines that are not JSON-RPC, which a second start would
    /// repeat. Not recorded: it decides only whether the run is made again.
    pub(crate) unanswered: bool,
    /// When the client asked the server to shut down (on the frame log's clock).
    pub(crate) shutdown: Option<Duration>,
    /// How the program ended, as the sandbox said it.
    pub(crate) termination: Option<String>,
    /// A remote target: only the protocol was witnessed.
    pub(crate) remote: bool,
    /// A shared run's waits for quiet between its blocks, in order.
    pub(crate) settles: Vec<Settled>,
    /// Who the server ran as and what of the host it could see (SPEC §3.2).
    pub(crate) visibility: Option<vac_sandbox::Visibility>,
}

impl RunOutput {
    /// A run's output before anything happened.
    pub(crate) fn blank(id: String, role: Role, tool: Option<&str>) -> RunOutput {
        let off = |what: &str| Reading::Absent(format!("the {what} sensor was off"));
        RunOutput {
            id,
            role,
            tool: tool.map(str::to_string),
            frames: Frames::default(),
            frame_stats: FrameLogStats::default(),
            protocol_version: None,
            server: None,
            tools: None,
            surface: None,
            surface_reads: Vec::new(),
            calls: Vec::new(),
            later_tools: None,
            later_surface: None,
            list_changed: 0,
            asked: Vec::new(),
            changes: Vec::new(),
            lab_events: Vec::new(),
            marker: None,
            execs: Vec::new(),
            net: NetSeen::default(),
            listens: Vec::new(),
            sensors: SensorReadings {
                fs_writes: Reading::Blind("the run ended before the witness walked".into()),
                fs_events: Reading::Blind("no lab event stream".into()),
                processes: off("process"),
                network: off("network"),
            },
            lost: Lost::default(),
            failure: None,
            retried: None,
            unanswered: false,
            shutdown: None,
            termination: None,
            remote: false,
            visibility: None,
            settles: Vec::new(),
        }
    }

    /// Lab files read (closed after a read-only open), when, in order; the marker excluded.
    /// Whether `read` is another program's lookup of its own user: a read of the account
    /// database ([`vac_contracts::ACCOUNT_DATABASE`]) by a process that runs a program other
    /// than the server's (git, curl and ssh read it through `getpwuid`). The server's
    /// program is what the run's first process last exec'd before the read (after a
    /// launcher's `exec`); a process without an exec of its own is a fork and counts.
    fn own_user_lookup(&self, read: &LabEvent) -> bool {
        let Some(pid) = read.pid else { return false };
        if read.path != std::path::Path::new(vac_contracts::ACCOUNT_DATABASE) {
            return false;
        }
        let program = |pid: i32| {
            self.execs
                .iter()
                .rfind(|x| x.pid == pid && x.t_ns <= read.t_ns)
                .map(|x| x.exe.as_ref().unwrap_or(&x.path))
        };
        let server = self.execs.first().and_then(|first| program(first.pid));
        match (program(pid), server) {
            (Some(reader), Some(server)) => reader != server,
            _ => false,
        }
    }

    pub(crate) fn reads(&self) -> Vec<(std::path::PathBuf, Duration)> {
        self.lab_events
            .iter()
            .filter(|e| {
                e.kind == FsEventKind::CloseNoWrite
                    && !e.is_dir
                    && self.marker.as_ref() != Some(&e.path)
                    && !self.own_user_lookup(e)
            })
            .map(|e| (e.path.clone(), e.at()))
            .collect()
    }
}

/// Equal manifests of a probe's runs share one value: every run lists the tools at least
/// twice, and a list of 3,000 tools is some 10 MB as a value, as many times over. Known
/// lists are found by the digest of their text, so a server whose every listing differs
/// costs one serialisation each, not a comparison with every list before it. Entries are
/// weak: a list no run holds any more is not kept alive by the index.
#[derive(Debug, Default)]
pub(crate) struct Manifests(std::collections::HashMap<[u8; 32], std::sync::Weak<Value>>);

impl Manifests {
    /// Points each manifest of `output` at the equal one already held, if any.
    pub(crate) fn share(&mut self, output: &mut RunOutput) {
        if let Some(tools) = output.tools.as_mut() {
            self.share_one(&mut tools.raw);
        }
        if let Some(Ok(later)) = output.later_tools.as_mut() {
            self.share_one(later);
        }
        for settled in &mut output.settles {
            if let Some(tools) = settled.tools.as_mut() {
                self.share_one(tools);
            }
        }
    }

    fn share_one(&mut self, raw: &mut Arc<Value>) {
        let Ok(text) = serde_json::to_vec(&**raw) else {
            return;
        };
        let slot = self.0.entry(*blake3::hash(&text).as_bytes()).or_default();
        match slot.upgrade() {
            Some(known) if *known == **raw => *raw = known,
            Some(_) => {}
            None => *slot = Arc::downgrade(raw),
        }
        // Forget lists no run holds, so that the index stays as small as what is live.
        if self.0.len() > 64 {
            self.0.retain(|_, list| list.strong_count() > 0);
        }
    }
}
