//! One run of a server: spawn, handshake, tools/list, the planned calls, a quiet period,
//! shutdown, teardown, then the write witness (SPEC §3.4). A remote HTTP target has no
//! sandbox: its run is the conversation alone, and the other sensors are absent.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vac_contracts::ErrorKind;
use vac_sandbox::{
    FsEvent, FsEventKind, LabEvents, LayerState, NetSelfTest, NetworkLog, ProcSelfTest, ProcessLog,
    Running, Sandbox, SandboxError, SelfTest,
};

use super::conversation::converse;
use super::effects;
use super::target::{self, Server};
use super::vocab::PlannedCall;
use super::vocab::{ConnectSeen, DatagramSeen, DnsSeen, ExecSeen, LabEvent, NetSeen};
use super::vocab::{Reading, Role, RunFailure, RunOutput, SensorReadings};
use crate::client::{
    ClientError, ClientOptions, FrameLog, HttpEndpoint, ServerOutput, ServerStreams,
};

/// When a server has gone quiet after its last answer (SPEC §3.4): the sandbox says so,
/// not a fixed sleep.
#[derive(Debug, Clone, Copy)]
pub struct Quiet {
    /// The run is quiet once, for this long, no task of it ran (its CPU time stood still)
    /// nor was running or waiting for a core, no process started after the handshake was
    /// asleep on a timer (one blocked waiting for input may stay), no lab event arrived, no
    /// effect waited unread in a sensor's queue and the sinkhole read no connection
    /// (`Running::at_work`, `Running::sensors_pending`).
    pub settle: Duration,
    /// Never wait longer than this.
    pub max: Duration,
}

/// How often the sandbox is asked whether the run is quiet while it works.
pub(super) const QUIET_POLL: Duration = Duration::from_millis(5);

/// How often it is asked right after a wait begins ([`EAGER`]): most servers finish
/// within a few milliseconds of their answer, and the window counts from the last look
/// that saw them work.
pub(super) const EAGER_POLL: Duration = Duration::from_millis(1);

/// How long after a wait begins the sandbox is asked every [`EAGER_POLL`].
pub(super) const EAGER: Duration = Duration::from_millis(10);

/// Entries of the upper layer a shared run's snapshot reads at most, and paths written
/// between two snapshots it keeps.
pub(super) const MAX_SNAPSHOT: usize = 20_000;
const MAX_UPPER_WRITTEN: usize = 1024;

/// The upper-layer paths written between two snapshots; `None` when either is missing
/// or more were written than are kept.
pub(super) fn upper_written(
    before: Option<&vac_sandbox::UpperSnapshot>,
    after: Option<&vac_sandbox::UpperSnapshot>,
) -> Option<Vec<std::path::PathBuf>> {
    let (before, after) = (before?, after?);
    let changed = after
        .iter()
        .filter(|(path, stamp)| before.get(*path) != Some(*stamp))
        .map(|(path, _)| path)
        .chain(before.keys().filter(|path| !after.contains_key(*path)));
    let written: Vec<std::path::PathBuf> = changed.take(MAX_UPPER_WRITTEN + 1).cloned().collect();
    (written.len() <= MAX_UPPER_WRITTEN).then_some(written)
}

/// Lab paths written so far in a run, as the event collector sees them (capped): what a
/// repeat's before and after states are read for.
#[derive(Debug, Default)]
pub(super) struct Written {
    paths: std::collections::BTreeSet<std::path::PathBuf>,
}

const MAX_WRITTEN: usize = 4096;

impl Written {
    fn add(&mut self, event: &FsEvent) {
        let write = !matches!(event.kind, FsEventKind::Open | FsEventKind::CloseNoWrite);
        if write && self.paths.len() < MAX_WRITTEN {
            self.paths.insert(event.path.clone());
        }
    }
}

/// The state of every path written so far, read from the live run.
pub(super) fn layer_now(
    running: &Running,
    written: &Mutex<Written>,
) -> std::collections::BTreeMap<std::path::PathBuf, LayerState> {
    let paths: Vec<std::path::PathBuf> = written
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .paths
        .iter()
        .cloned()
        .collect();
    let states = running.layer_states(&paths);
    paths.into_iter().zip(states).collect()
}

/// How the client reaches the server of one run.
pub(super) enum Wire {
    Pipes(ServerStreams),
    Http(HttpEndpoint, ServerOutput),
}

pub(super) const MAX_EVENTS: usize = 100_000;

/// What one run does: its role, the tool and calls of a subject run, how calls are
/// numbered across runs (`first_index`), and how long to wait and listen.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunPlan<'a> {
    pub(crate) role: Role,
    pub(crate) tool: Option<&'a str>,
    pub(crate) calls: &'a [PlannedCall],
    /// A shared run's blocks: the run settles after each (the last settles as every run
    /// does).
    pub(crate) blocks: &'a [super::plan::Block],
    /// The lab of a subject run: what a retry puts in its arguments, and what tells a
    /// shared run to stop after a block that puts every later one in doubt.
    pub(crate) lab: Option<&'a super::vocab::LabRecord>,
    pub(crate) first_index: usize,
    pub(crate) quiet: Quiet,
    pub(crate) options: &'a ClientOptions,
    /// The probe's budget of written contents kept as evidence, shared by its runs.
    pub(crate) content: &'a super::effects::ContentBudget,
}

/// Runs the server once.
pub(crate) async fn execute(server: &Server, plan: RunPlan<'_>) -> Result<RunOutput, SandboxError> {
    execute_listing(server, plan, None).await
}

/// Runs the server once, and sends `listed` the run as far as its first tools/list once
/// that is answered (the handshake's server, version and the manifest): what a plan
/// needs, while the run goes on to settle and be torn down. A run whose server never
/// answered its start is made once more in a fresh sandbox before its cells error; the
/// output says why the first attempt was given up.
pub(crate) async fn execute_listing(
    server: &Server,
    plan: RunPlan<'_>,
    mut listed: Option<Listed>,
) -> Result<RunOutput, SandboxError> {
    let first = attempt(server, plan, &mut listed).await?;
    let Some(unanswered) = first.failure.clone().filter(|_| first.unanswered) else {
        return Ok(first);
    };
    tracing::info!(run = %first.id, "no answer to the start; one more attempt: {}", unanswered.detail);
    let mut second = attempt(server, plan, &mut listed).await?;
    second.retried = Some(unanswered);
    Ok(second)
}

/// One attempt at a run; `listed` is taken once the first tools/list is answered.
async fn attempt(
    server: &Server,
    plan: RunPlan<'_>,
    listed: &mut Option<Listed>,
) -> Result<RunOutput, SandboxError> {
    let RunPlan {
        role,
        tool,
        options,
        content,
        ..
    } = plan;
    let (sandbox, http): (&Sandbox, _) = match server {
        Server::Remote(endpoint) => {
            return Ok(remote(endpoint, plan, listed).await);
        }
        Server::Stdio(sandbox) => (sandbox, None),
        Server::LaunchedHttp {
            sandbox,
            port,
            path,
        } => (sandbox, Some((*port, path.as_str()))),
    };
    let mut running = blocking(|| sandbox.spawn())?;
    let started = running.started();
    let log = FrameLog::new(started);
    let last_event = Arc::new(AtomicU64::new(0));
    let written = Arc::new(Mutex::new(Written::default()));
    let collector = running.take_events().map(|events| {
        tokio::spawn(collect(
            events,
            Arc::clone(&last_event),
            Arc::clone(&written),
        ))
    });
    let (stdout, stdin, stderr) = (
        running.take_stdout(),
        running.take_stdin(),
        running.take_stderr(),
    );
    let mut output = RunOutput::blank(running.id().to_string(), role, tool);
    output.visibility = Some(running.visibility().clone());
    // Held until the run stops: a launched HTTP server must not see its stdin close.
    let mut _stdin = None;
    let wire = match (http, stdout, stdin, stderr) {
        (None, Some(stdout), Some(stdin), Some(stderr)) => Some(Wire::Pipes(
            ServerStreams::new(stdout, stdin).with_stderr(stderr),
        )),
        (Some((port, path)), stdout, stdin, stderr) => {
            _stdin = stdin;
            let mut output_streams = ServerOutput::default();
            for stream in [stdout, stderr].into_iter().flatten() {
                output_streams = output_streams.with(stream);
            }
            match target::launched(&running, port, path, options.initialize_timeout).await {
                Ok(endpoint) => Some(Wire::Http(endpoint, output_streams)),
                Err(failure) => {
                    output.unanswered = failure.kind == ErrorKind::Timeout;
                    output.failure = Some(failure);
                    None
                }
            }
        }
        _ => None,
    };
    if let Some(wire) = wire {
        let watch = Watch {
            last_event: &last_event,
            written: &written,
        };
        converse(Some(&running), wire, &log, plan, watch, listed, &mut output).await;
    }
    // Teardown and the witness's walk block: other runs' tasks move to another thread.
    let stopped = blocking(|| running.stop())?;
    output.termination = stopped.termination().map(|t| format!("{t:?}"));
    match blocking(|| stopped.witness().collect()) {
        Ok(report) => {
            // A partial walk still shows what it saw; it backs no absence.
            output.sensors.fs_writes = match (&report.self_test, &report.incomplete) {
                (_, Some(incomplete)) => Reading::Blind(incomplete.reason()),
                (SelfTest::Live { marker }, None) => Reading::Live(format!(
                    "marker {} seen in the upper layer",
                    marker.display()
                )),
                (SelfTest::Blind { reason, .. }, None) => Reading::Blind(reason.clone()),
                (SelfTest::NotRun, None) => Reading::Blind("no marker was written".into()),
            };
            let (changes, over) = blocking(|| effects::observe(&stopped, report.changes, content));
            output.changes = changes;
            output.lost.contents_over_budget = over;
        }
        Err(error) => {
            output.sensors.fs_writes = Reading::Blind(format!("the witness failed: {error}"))
        }
    }
    let marker = stopped.marker().ok().map(|m| m.path.clone());
    let accesses = accesses(stopped.accesses(), marker.as_deref());
    if let Some(log) = stopped.processes() {
        processes(log, &mut output);
    }
    if let Some(log) = stopped.network_log() {
        network(log, &mut output);
    }
    drop(stopped); // teardown ends the event stream
    let (events, lost) = match collector {
        Some(task) => tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default(),
        None => (Vec::new(), None),
    };
    output.lost.lab = lost.clone();
    output.sensors.fs_events = match (lost, marker.clone()) {
        (Some(lost), _) => Reading::Blind(lost),
        (None, Some(marker))
            if events
                .iter()
                .any(|e| e.kind == FsEventKind::Open && e.path == marker) =>
        {
            Reading::Live(format!("open of marker {} seen", marker.display()))
        }
        (None, _) => Reading::Blind("the marker's open was not seen".into()),
    };
    // A clean read needs both: the lab's events and the accesses anywhere else.
    let (access_reading, read_anywhere) = accesses;
    output.sensors.fs_events = match (&output.sensors.fs_events, access_reading) {
        (Reading::Live(lab), Ok(access)) => Reading::Live(format!("{lab}; {access}")),
        (Reading::Live(_), Err(reason)) => Reading::Blind(reason),
        (other, _) => other.clone(),
    };
    output.marker = marker;
    output.lab_events = events
        .into_iter()
        .map(|e| LabEvent {
            kind: e.kind,
            path: e.path,
            is_dir: e.is_dir,
            t_ns: e.since_start.as_nanos() as u64,
            pid: None,
        })
        .chain(read_anywhere)
        .collect();
    take_frames(&mut output, &log);
    Ok(output)
}

/// The access sensor's self-test, and the reads it saw of places no tool has a reason to
/// read ([`vac_contracts::never_read`]) as lab events of their own (`close_nowrite`): the
/// lab's own reads come from its inotify events, and every other file a server opens
/// (its interpreter, its libraries) is counted, not recorded.
fn accesses(
    log: Result<&vac_sandbox::AccessLog, vac_sandbox::NoLog>,
    marker: Option<&std::path::Path>,
) -> (Result<String, String>, Vec<LabEvent>) {
    let log = match log {
        Ok(log) => log,
        Err(reason) => return (Err(format!("reads outside the lab: {reason}")), Vec::new()),
    };
    let reads: Vec<LabEvent> = log
        .accesses
        .iter()
        .filter(|a| !a.wrote)
        .filter(|a| vac_contracts::never_read_place(&a.path.to_string_lossy()).is_some())
        .map(|a| LabEvent {
            kind: FsEventKind::CloseNoWrite,
            path: a.path.clone(),
            is_dir: false,
            t_ns: a.since_start.as_nanos() as u64,
            pid: Some(a.pid),
        })
        .collect();
    let reading = match (log.incomplete(), marker) {
        (Some(reason), _) => Err(format!("reads outside the lab: {reason}")),
        (None, Some(marker)) if log.saw(marker, true) => Ok(format!(
            "marker close seen by the access sensor ({} files closed, {} unnamed, {} in places never read)",
            log.seen,
            log.unnamed,
            reads.len()
        )),
        (None, _) => {
            Err("reads outside the lab: the access sensor did not see the marker's close".into())
        }
    };
    (reading, reads)
}

/// Runs blocking work (the sandbox's setup and teardown, the witness's walk) so that the
/// other runs' tasks go on meanwhile: on a multi-threaded runtime the worker hands its
/// other tasks to another thread first.
fn blocking<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// The process sensor's log as events, and its self-test.
fn processes(log: &ProcessLog, output: &mut RunOutput) {
    output.execs = log
        .execs
        .iter()
        .map(|exec| ExecSeen {
            pid: exec.pid,
            ppid: exec.ppid,
            path: exec.path.clone(),
            exe: exec.exe.clone(),
            argv: exec
                .argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            argv_truncated: exec.argv_truncated,
            argv_source: exec.argv_source,
            cwd: exec.cwd.clone(),
            uid: exec.uid,
            t_ns: exec.at.as_nanos() as u64,
        })
        .collect();
    output.lost.processes = Some(log.dropped);
    output.sensors.processes = match &log.self_test {
        ProcSelfTest::Live { marker } => {
            Reading::Live(format!("marker exec {marker} seen with its argv"))
        }
        ProcSelfTest::Failed { reason } => Reading::Failed(format!("{reason:?}")),
        ProcSelfTest::Unavailable { reason } => Reading::Absent(reason.clone()),
    };
}

/// The network sensor's log as events, and its self-test.
fn network(log: &NetworkLog, output: &mut RunOutput) {
    let t = |d: Duration| d.as_nanos() as u64;
    output.net = NetSeen {
        dns: log
            .dns
            .iter()
            .map(|q| DnsSeen {
                name: q.name.clone(),
                qtype: q.qtype,
                tcp: q.tcp,
                t_ns: t(q.since_start),
                answer: q.answer,
            })
            .collect(),
        tcp: log
            .tcp
            .iter()
            .map(|a| ConnectSeen {
                dst: a.dst,
                accepted: a.accepted,
                http: a.http.clone(),
                sni: a.sni.clone(),
                t_ns: t(a.since_start),
                inside_tls: !a.decrypted.is_empty(),
                first_bytes: a.first_bytes.clone(),
                decrypted: a.decrypted.clone(),
            })
            .collect(),
        udp: log
            .udp
            .iter()
            .map(|d| DatagramSeen {
                dst: d.dst,
                len: d.len,
                t_ns: t(d.since_start),
                bytes: d.bytes.clone(),
            })
            .collect(),
        program_started: log.program_started,
    };
    output.lost.network = Some(log.dropped);
    output.sensors.network = match &log.self_test {
        NetSelfTest::Live => {
            Reading::Live("marker lookup and HTTP request to a nonce host logged".into())
        }
        NetSelfTest::Blind { reason } => Reading::Blind(reason.clone()),
        NetSelfTest::Absent { reason } => Reading::Absent(reason.clone()),
    };
}

/// A run of a remote target: the conversation, recorded; no sandbox and no other sensor.
async fn remote(
    endpoint: &HttpEndpoint,
    plan: RunPlan<'_>,
    listed: &mut Option<Listed>,
) -> RunOutput {
    let log = FrameLog::new(Instant::now());
    let mut output = RunOutput::blank(target::remote_run_id(), plan.role, plan.tool);
    output.remote = true;
    let remote = || Reading::Absent(target::REMOTE.into());
    output.sensors = SensorReadings {
        fs_writes: remote(),
        fs_events: remote(),
        processes: remote(),
        network: remote(),
    };
    let wire = Wire::Http(endpoint.clone(), ServerOutput::default());
    let last_event = AtomicU64::new(0);
    let written = Mutex::new(Written::default());
    let watch = Watch {
        last_event: &last_event,
        written: &written,
    };
    converse(None, wire, &log, plan, watch, listed, &mut output).await;
    take_frames(&mut output, &log);
    output
}

/// The run's frames and their counts, from its frame log, and a failure's stderr tail.
fn take_frames(output: &mut RunOutput, log: &FrameLog) {
    output.frames = log.take();
    output.frame_stats = log.stats();
    output.lost.frames = output.frame_stats;
    with_stderr_tail(output);
}

/// Bytes of a server's stderr, from its end, that a failure's detail quotes from.
const STDERR_TAIL: usize = 4096;

/// A failed run's detail ends with the last lines its server wrote to stderr: why a server
/// could not start is said there more often than anywhere else (a missing argument,
/// credential, config file or module), and the detail is what every output shows of a
/// target that could not be audited.
fn with_stderr_tail(output: &mut RunOutput) {
    let Some(failure) = output.failure.as_mut() else {
        return;
    };
    let mut tail: Vec<u8> = Vec::new();
    for frame in output.frames.iter().flatten() {
        if frame.direction == crate::client::Direction::Stderr {
            tail.extend_from_slice(&frame.bytes);
            if tail.len() > 2 * STDERR_TAIL {
                tail.drain(..tail.len() - STDERR_TAIL);
            }
        }
    }
    let text = String::from_utf8_lossy(&tail);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let last: Vec<String> = lines[lines.len().saturating_sub(2)..]
        .iter()
        .map(|l| l.chars().take(200).collect())
        .collect();
    if !last.is_empty() {
        failure.detail = format!(
            "{}; its stderr ended: {:?}",
            failure.detail,
            last.join(" | ")
        );
    }
}

/// What the collector of lab events shares with the conversation: when the lab last moved,
/// and what it has written.
#[derive(Clone, Copy)]
pub(super) struct Watch<'a> {
    pub(super) last_event: &'a AtomicU64,
    pub(super) written: &'a Mutex<Written>,
}

/// Where a run sends itself as far as its first tools/list ([`execute_listing`]).
pub(crate) type Listed = tokio::sync::oneshot::Sender<RunOutput>;

async fn collect(
    mut events: LabEvents,
    last_event: Arc<AtomicU64>,
    written: Arc<Mutex<Written>>,
) -> (Vec<FsEvent>, Option<String>) {
    let mut seen = Vec::new();
    let mut overflow = 0u64;
    while let Some(event) = events.recv().await {
        last_event.store(event.since_start.as_millis() as u64, Ordering::Relaxed);
        written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add(&event);
        if seen.len() < MAX_EVENTS {
            seen.push(event);
        } else {
            overflow += 1;
        }
    }
    let unwatched = events.unwatched();
    let lost = if events.overflowed() || events.dropped() > 0 || overflow > 0 || unwatched > 0 {
        Some(format!(
            "lab events lost: kernel queue overflow {}, dropped {}, directories not watched {unwatched} (at most {} are)",
            events.overflowed(),
            events.dropped() + overflow,
            vac_sandbox::MAX_WATCHED_DIRS,
        ))
    } else {
        None
    };
    (seen, lost)
}

pub(super) fn failure(during: &str, error: &ClientError) -> RunFailure {
    let cause = match error {
        ClientError::AfterNoise { cause, .. } => cause,
        other => other,
    };
    let kind = match cause {
        ClientError::Timeout { .. } => ErrorKind::Timeout,
        ClientError::Closed { .. }
        | ClientError::Read(_)
        | ClientError::Connect { .. }
        | ClientError::Http { .. } => ErrorKind::Crash,
        _ => ErrorKind::Protocol,
    };
    // The SDK's own initialize errors say what went wrong only in their sources (both
    // phases of `auto`'s fallback among them).
    let said = match cause {
        ClientError::Initialize(_) => super::target::error_chain(error),
        _ => error.to_string(),
    };
    RunFailure {
        kind,
        detail: format!("{during}: {said}"),
    }
}
