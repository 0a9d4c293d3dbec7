//! One run of a server: spawn, handshake, tools/list, the planned calls, a quiet period,
//! shutdown, teardown, then the write witness (SPEC §3.4). A remote HTTP target has no
//! sandbox: its run is the conversation alone, and the other sensors are absent.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use vac_contracts::ErrorKind;
use vac_sandbox::{
    FsEvent, FsEventKind, LabEvents, NetworkLog, ProcessLog, Running, Sandbox, SandboxError,
    SelfTest, Termination,
};

use super::effects::{self, ObservedChange};
use super::plan::{PlannedCall, Purpose};
use super::target::{self, Server};
use crate::client::{
    CallError, CallOutcome, ClientError, ClientOptions, Frame, FrameLog, FrameLogStats,
    HttpEndpoint, McpSession, ServerOutput, ServerStreams, ToolList,
};

/// Control runs make no tool call; subject runs make the plan's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Control,
    Subject,
}

/// How long to wait for a server to go quiet after its last answer.
#[derive(Debug, Clone, Copy)]
pub struct Quiet {
    /// No new filesystem event and no extra process for this long means quiet.
    pub settle: Duration,
    /// Never wait longer than this.
    pub max: Duration,
}

/// A sensor's self-test result in one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reading {
    Live(String),
    Blind(String),
    /// The sensor cannot watch this target at all (a remote server).
    Absent(String),
}

/// One call and what came back.
#[derive(Debug, Clone)]
pub(crate) struct CallRecord {
    pub(crate) index: usize,
    /// The earlier call of this run with identical arguments, for `idempotent`.
    pub(crate) repeat_of: Option<usize>,
    /// What the call is for (the protocol witness's reads are marked).
    pub(crate) purpose: Purpose,
    pub(crate) tool: String,
    pub(crate) arguments: Map<String, Value>,
    pub(crate) outcome: Result<CallOutcome, String>,
}

/// Why a run did not complete normally.
#[derive(Debug, Clone)]
pub(crate) struct RunFailure {
    pub(crate) kind: ErrorKind,
    pub(crate) detail: String,
}

/// Everything one run observed.
#[derive(Debug)]
pub(crate) struct RunOutput {
    pub(crate) id: String,
    pub(crate) role: Role,
    pub(crate) tool: Option<String>,
    pub(crate) frames: Vec<Frame>,
    pub(crate) frame_stats: FrameLogStats,
    pub(crate) protocol_version: Option<String>,
    /// The server's name and version from initialize.
    pub(crate) server: Option<(String, String)>,
    pub(crate) tools: Option<ToolList>,
    pub(crate) calls: Vec<CallRecord>,
    /// Subject runs: the raw tools/list array asked for again after the calls, or why
    /// that failed (the protocol sensor's proof that the session was intact to the end).
    pub(crate) later_tools: Option<Result<Value, String>>,
    /// How many `notifications/tools/list_changed` the server sent during the run.
    pub(crate) list_changed: u64,
    pub(crate) changes: Vec<ObservedChange>,
    /// Lab files read (closed after a read-only open), when, in order; the marker excluded.
    pub(crate) reads: Vec<(PathBuf, Duration)>,
    /// The process sensor's log (execs of the run's tree), if it ran.
    pub(crate) processes: Option<ProcessLog>,
    /// The network sensor's log (the sinkhole), if it ran.
    pub(crate) network: Option<NetworkLog>,
    /// Listening sockets of the run (sock_diag snapshots), first seen when.
    pub(crate) listens: Vec<(String, Duration)>,
    pub(crate) fs_writes: Reading,
    pub(crate) fs_events: Reading,
    pub(crate) failure: Option<RunFailure>,
    pub(crate) termination: Option<Termination>,
    /// A remote target: only the protocol was witnessed.
    pub(crate) remote: bool,
}

/// How the client reaches the server of one run.
enum Wire {
    Pipes(ServerStreams),
    Http(HttpEndpoint, ServerOutput),
}

const MAX_EVENTS: usize = 100_000;

/// What one run does: its role, the tool and calls of a subject run, how calls are
/// numbered across runs (`first_index`), and how long to wait and listen.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunPlan<'a> {
    pub(crate) role: Role,
    pub(crate) tool: Option<&'a str>,
    pub(crate) calls: &'a [PlannedCall],
    pub(crate) first_index: usize,
    pub(crate) quiet: Quiet,
    pub(crate) options: &'a ClientOptions,
}

/// Runs the server once.
pub(crate) async fn execute(server: &Server, plan: RunPlan<'_>) -> Result<RunOutput, SandboxError> {
    let RunPlan {
        role,
        tool,
        options,
        ..
    } = plan;
    let (sandbox, http): (&Sandbox, _) = match server {
        Server::Remote(endpoint) => {
            return Ok(remote(endpoint, plan).await);
        }
        Server::Stdio(sandbox) => (sandbox, None),
        Server::LaunchedHttp {
            sandbox,
            port,
            path,
        } => (sandbox, Some((*port, path.as_str()))),
    };
    let mut running = sandbox.spawn()?;
    let started = running.started();
    let log = FrameLog::new(started);
    let last_event = Arc::new(AtomicU64::new(0));
    let collector = running
        .take_events()
        .map(|events| tokio::spawn(collect(events, Arc::clone(&last_event))));
    let (stdout, stdin, stderr) = (
        running.take_stdout(),
        running.take_stdin(),
        running.take_stderr(),
    );
    let mut output = blank(running.id().to_string(), role, tool, &log);
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
                    output.failure = Some(failure);
                    None
                }
            }
        }
        _ => None,
    };
    if let Some(wire) = wire {
        converse(Some(&running), wire, &log, plan, &last_event, &mut output).await;
    }
    output.termination = running.termination();
    let stopped = running.stop()?;
    output.termination = stopped.termination();
    match stopped.witness().collect() {
        Ok(report) => {
            output.fs_writes = match &report.self_test {
                SelfTest::Live { marker } => Reading::Live(format!(
                    "marker {} seen in the upper layer",
                    marker.display()
                )),
                SelfTest::Blind { reason, .. } => Reading::Blind(reason.clone()),
                SelfTest::NotRun => Reading::Blind("no marker was written".into()),
            };
            output.changes = effects::observe(&stopped, report.changes);
        }
        Err(error) => output.fs_writes = Reading::Blind(format!("the witness failed: {error}")),
    }
    let marker = stopped.marker().ok().map(|m| m.path.clone());
    output.processes = stopped.processes().cloned();
    output.network = stopped.network_log().cloned();
    drop(stopped); // teardown ends the event stream
    let (events, lost) = match collector {
        Some(task) => tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default(),
        None => (Vec::new(), None),
    };
    output.fs_events = match (lost, marker.clone()) {
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
    effects::stamp(&mut output.changes, &events);
    output.reads = events
        .iter()
        .filter(|e| {
            e.kind == FsEventKind::CloseNoWrite && !e.is_dir && marker.as_ref() != Some(&e.path)
        })
        .map(|e| (e.path.clone(), e.since_start))
        .collect();
    output.frames = log.drain();
    output.frame_stats = log.stats();
    Ok(output)
}

/// A run of a remote target: the conversation, recorded; no sandbox and no other sensor.
async fn remote(endpoint: &HttpEndpoint, plan: RunPlan<'_>) -> RunOutput {
    let log = FrameLog::new(Instant::now());
    let mut output = blank(target::remote_run_id(), plan.role, plan.tool, &log);
    output.remote = true;
    output.fs_writes = Reading::Absent(target::REMOTE.into());
    output.fs_events = Reading::Absent(target::REMOTE.into());
    let wire = Wire::Http(endpoint.clone(), ServerOutput::default());
    let last_event = AtomicU64::new(0);
    converse(None, wire, &log, plan, &last_event, &mut output).await;
    output.frames = log.drain();
    output.frame_stats = log.stats();
    output
}

/// A run's output before anything happened.
fn blank(id: String, role: Role, tool: Option<&str>, log: &FrameLog) -> RunOutput {
    RunOutput {
        id,
        role,
        tool: tool.map(str::to_string),
        frames: Vec::new(),
        frame_stats: log.stats(),
        protocol_version: None,
        server: None,
        tools: None,
        calls: Vec::new(),
        later_tools: None,
        list_changed: 0,
        changes: Vec::new(),
        reads: Vec::new(),
        processes: None,
        network: None,
        listens: Vec::new(),
        fs_writes: Reading::Blind("the run ended before the witness walked".into()),
        fs_events: Reading::Blind("no lab event stream".into()),
        failure: None,
        termination: None,
        remote: false,
    }
}

async fn converse(
    running: Option<&Running>,
    wire: Wire,
    log: &FrameLog,
    plan: RunPlan<'_>,
    last_event: &AtomicU64,
    output: &mut RunOutput,
) {
    let RunPlan {
        calls,
        first_index,
        quiet,
        options,
        ..
    } = plan;
    let connected = match wire {
        Wire::Pipes(streams) => McpSession::connect(streams, log.clone(), options.clone()).await,
        Wire::Http(endpoint, server_output) => {
            McpSession::connect_http(endpoint, server_output, log.clone(), options.clone()).await
        }
    };
    let mut session = match connected {
        Ok(session) => session,
        Err(error) => {
            output.failure = Some(failure("initialize", &error));
            return;
        }
    };
    output.protocol_version = Some(session.protocol_version().to_string());
    output.server = session
        .server_info()
        .server_info
        .as_ref()
        .map(|i| (i.name.clone(), i.version.clone()));
    match session.list_tools().await {
        Ok(tools) => output.tools = Some(tools),
        Err(error) => {
            output.failure = Some(failure("tools/list", &error));
            session.shutdown().await;
            return;
        }
    }
    let baseline = running.map_or(0, Running::process_count);
    listening(running, &mut output.listens);
    for (offset, call) in calls.iter().enumerate() {
        let outcome = session.call_tool(&call.tool, call.arguments.clone()).await;
        let failed = outcome
            .as_ref()
            .err()
            .map(|e| failure(&format!("tools/call {}", call.tool), e));
        let timed_out = matches!(
            &outcome,
            Ok(CallOutcome {
                error: Some(CallError::Timeout { .. }),
                ..
            })
        );
        output.calls.push(CallRecord {
            index: first_index + offset,
            repeat_of: call.repeat_of.map(|earlier| first_index + earlier),
            purpose: call.purpose,
            tool: call.tool.clone(),
            arguments: call.arguments.clone(),
            outcome: outcome.map_err(|e| e.to_string()),
        });
        if timed_out {
            output.failure = Some(RunFailure {
                kind: ErrorKind::Timeout,
                detail: format!("tools/call {} timed out", call.tool),
            });
        }
        listening(running, &mut output.listens);
        if let Some(failed) = failed {
            output.failure = Some(failed);
            break;
        }
    }
    settle(running, baseline, last_event, quiet).await;
    listening(running, &mut output.listens);
    if output.role == Role::Subject {
        // After the quiet period, so a change the calls set off on a timer is in.
        output.later_tools = Some(match session.list_tools().await {
            Ok(tools) => Ok(tools.raw),
            Err(error) => Err(format!("tools/list after the calls: {error}")),
        });
    }
    output.list_changed = session.tools_list_changed();
    session.shutdown().await;
}

/// Notes the sockets listening in the run's namespace now (sock_diag), with the time: taken
/// after the handshake and after each call, so a listener is tied to the call that opened it.
fn listening(running: Option<&Running>, seen: &mut Vec<(String, Duration)>) {
    let Some(running) = running else { return };
    let Some(Ok(sockets)) = running.network().map(|n| n.sockets()) else {
        return;
    };
    let now = running.started().elapsed();
    for socket in sockets
        .iter()
        .filter(|s| s.is_listening() && s.owner.is_some())
    {
        let address = socket.local.to_string();
        if !seen.iter().any(|(known, _)| *known == address) && seen.len() < MAX_EVENTS {
            seen.push((address, now));
        }
    }
}

/// Waits until no process beyond the post-handshake ones is alive and the lab has been
/// still for `settle`, or `max` has passed: delayed effects land inside the run.
/// Without a sandbox (a remote target) there is nothing to watch: one settle period.
async fn settle(running: Option<&Running>, baseline: usize, last_event: &AtomicU64, quiet: Quiet) {
    let Some(running) = running else {
        tokio::time::sleep(quiet.settle).await;
        return;
    };
    let deadline = Instant::now() + quiet.max;
    loop {
        tokio::time::sleep(quiet.settle).await;
        let since_start = running.started().elapsed().as_millis() as u64;
        let still_for =
            Duration::from_millis(since_start.saturating_sub(last_event.load(Ordering::Relaxed)));
        let extra_processes = running.process_count() > baseline;
        if (!extra_processes && still_for >= quiet.settle) || Instant::now() >= deadline {
            return;
        }
    }
}

async fn collect(
    mut events: LabEvents,
    last_event: Arc<AtomicU64>,
) -> (Vec<FsEvent>, Option<String>) {
    let mut seen = Vec::new();
    let mut overflow = 0u64;
    while let Some(event) = events.recv().await {
        last_event.store(event.since_start.as_millis() as u64, Ordering::Relaxed);
        if seen.len() < MAX_EVENTS {
            seen.push(event);
        } else {
            overflow += 1;
        }
    }
    let lost = if events.overflowed() || events.dropped() > 0 || overflow > 0 {
        Some(format!(
            "lab events lost: kernel queue overflow {}, dropped {}",
            events.overflowed(),
            events.dropped() + overflow
        ))
    } else {
        None
    };
    (seen, lost)
}

fn failure(during: &str, error: &ClientError) -> RunFailure {
    let kind = match error {
        ClientError::Timeout { .. } => ErrorKind::Timeout,
        ClientError::Closed { .. }
        | ClientError::Read(_)
        | ClientError::Connect { .. }
        | ClientError::Http { .. } => ErrorKind::Crash,
        _ => ErrorKind::Protocol,
    };
    RunFailure {
        kind,
        detail: format!("{during}: {error}"),
    }
}
