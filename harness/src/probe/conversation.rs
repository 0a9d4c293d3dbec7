//! A run's conversation with its server: connect, list, the planned calls (a judged
//! repeat's states before and after), each shared block's settling, the calls' quiet
//! period, shutdown. `run.rs` starts and tears down the sandbox around it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use vac_contracts::ErrorKind;
use vac_sandbox::Running;

use super::run::{
    EAGER, EAGER_POLL, Listed, MAX_EVENTS, MAX_SNAPSHOT, QUIET_POLL, Quiet, RunPlan, Watch, Wire,
    failure, layer_now, upper_written,
};
use super::vocab::{CallRecord, PathStates, Role, RunFailure, RunOutput, Settled};
use super::vocab::{PlannedCall, Purpose};
use crate::client::{CallError, CallOutcome, ClientError, ClientOptions, FrameLog, McpSession};

pub(super) async fn converse(
    running: Option<&Running>,
    wire: Wire,
    log: &FrameLog,
    plan: RunPlan<'_>,
    watch: Watch<'_>,
    listed: &mut Option<Listed>,
    output: &mut RunOutput,
) {
    let RunPlan {
        calls,
        blocks,
        lab,
        first_index,
        quiet,
        options,
        ..
    } = plan;
    let block_ends = block_ends(blocks, calls.len());
    let Some(mut session) = open_session(wire, log, options, listed, output).await else {
        return;
    };
    let mut settler = Settler {
        running,
        baseline: running.map_or_else(Vec::new, Running::pids),
        last_event: watch.last_event,
        quiet,
        still: None,
    };
    let mut blocks_seen = BlockState {
        listed: output.tools.as_ref().map(|t| t.raw.clone()),
        layer: match blocks.is_empty() {
            true => None,
            false => snapshot(running),
        },
        listens_before: 0,
    };
    listening(running, &mut output.listens);
    // Listeners known when the current block began, and whether the run stopped early.
    blocks_seen.listens_before = output.listens.len();
    let mut stopped = false;
    let places = lab.map(super::revise::Places::of);
    // The calls made since the current block began: where identifiers come from.
    let mut in_block = 0;
    for (offset, planned) in calls.iter().enumerate() {
        // A retry slot is made only when an earlier refusal of its tool says what to give;
        // a call that needs an identifier takes it from its block's earlier results.
        let made = places.as_ref().map_or_else(
            || (planned.purpose != Purpose::Retry).then(|| (planned.arguments.clone(), None)),
            |places| {
                let listing = output.tools.as_ref().map(|t| &*t.raw);
                super::revise::arguments(
                    planned,
                    first_index,
                    &output.calls,
                    in_block,
                    places,
                    listing,
                )
            },
        );
        if let Some((arguments, revised)) = made {
            let call = PlannedCall {
                arguments,
                ..planned.clone()
            };
            let index = first_index + offset;
            let failed = call_one(
                &mut session,
                &mut settler,
                running,
                watch,
                call,
                index,
                first_index,
                revised,
                output,
            )
            .await;
            in_block += 1;
            if failed {
                break;
            }
        }
        // A setup call's delayed writes are its own: the run settles before the calls it
        // prepares, so that what it set off is not read in the window of the first of them
        // (on a loaded machine the lab's events of a save come in after its answer).
        let prepares = calls
            .get(offset + 1)
            .is_some_and(|next| next.purpose != Purpose::Setup);
        if planned.purpose == Purpose::Setup && prepares && !block_ends.contains(&offset) {
            settler.settle().await;
        }
        if block_ends.contains(&offset) {
            in_block = 0;
            let after = first_index + offset;
            stopped = blocks_seen
                .settle(&mut session, &mut settler, running, log, lab, after, output)
                .await;
            if stopped {
                break;
            }
        }
    }
    // A run that stopped early settled after its last call already: that wait is its last.
    if !stopped {
        let went_quiet = settler.settle().await;
        listening(running, &mut output.listens);
        if let Some(last) = output.calls.last().filter(|_| !blocks.is_empty()) {
            // The last block's snapshot: what was written after it is the shutdown's.
            let written = upper_written(blocks_seen.layer.as_ref(), snapshot(running).as_ref());
            let t_ns = log.elapsed().as_nanos() as u64;
            output
                .settles
                .push(Settled::new(last.index, went_quiet, t_ns, written));
        }
    }
    if output.role == Role::Subject {
        // After the quiet period, so a change the calls set off on a timer is in.
        output.later_tools = Some(match session.list_tools().await {
            Ok(tools) => Ok(tools.raw),
            Err(error) => Err(format!("tools/list after the calls: {error}")),
        });
        if output.surface.is_some() {
            output.later_surface = session.list_surface().await.ok();
        }
    }
    output.list_changed = session.tools_list_changed();
    output.shutdown = Some(log.elapsed());
    close(session, output).await;
}

/// The offsets of the calls after which a shared run settles: each block's last but the
/// run's last.
fn block_ends(blocks: &[super::plan::Block], calls: usize) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut end = 0;
    for block in blocks {
        end += block.calls;
        if end > 0 && end < calls {
            ends.push(end - 1);
        }
    }
    ends
}

/// The upper layer's state now, for a run in the sandbox.
fn snapshot(running: Option<&Running>) -> Option<vac_sandbox::UpperSnapshot> {
    running?.upper_snapshot(MAX_SNAPSHOT)
}

/// Connects, lists the tools and what the server offers beside them (the control run reads
/// those texts too), and tells whoever waits for the listing. `None`, with the run's
/// failure recorded and the session closed, when any of it fails.
async fn open_session(
    wire: Wire,
    log: &FrameLog,
    options: &ClientOptions,
    listed: &mut Option<Listed>,
    output: &mut RunOutput,
) -> Option<McpSession> {
    let connected = match wire {
        Wire::Pipes(streams) => McpSession::connect(streams, log.clone(), options.clone()).await,
        Wire::Http(endpoint, server_output) => {
            McpSession::connect_http(endpoint, server_output, log.clone(), options.clone()).await
        }
    };
    let mut session = match connected {
        Ok(session) => session,
        Err(error) => {
            output.unanswered = matches!(error, ClientError::Timeout { .. });
            output.failure = Some(failure("initialize", &error));
            return None;
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
            close(session, output).await;
            return None;
        }
    }
    // What the server offers beside its tools is part of what was reviewed.
    match session.list_surface().await {
        Ok(surface) => output.surface = surface.offered().then_some(surface),
        Err(error) => {
            output.failure = Some(failure("prompts and resources", &error));
            close(session, output).await;
            return None;
        }
    }
    if let Some(listed) = listed.take() {
        let mut so_far = RunOutput::blank(output.id.clone(), output.role, None);
        so_far.protocol_version.clone_from(&output.protocol_version);
        so_far.server.clone_from(&output.server);
        so_far.tools.clone_from(&output.tools);
        so_far.surface.clone_from(&output.surface);
        // Nobody waiting (the probe stopped) is no failure of the run.
        let _ = listed.send(so_far);
    }
    // The control run reads what was listed: what those texts show the model is the
    // server's own, graded on its row.
    if output.role == Role::Control
        && let Some(surface) = &output.surface
    {
        match session.read_surface(surface).await {
            Ok(reads) => output.surface_reads = reads,
            Err(error) => {
                output.failure = Some(failure("prompts/get or resources/read", &error));
                close(session, output).await;
                return None;
            }
        }
    }
    Some(session)
}

/// Makes one call and records it (with the states a judged repeat found and left); true
/// when the session failed and the run ends.
#[allow(clippy::too_many_arguments)]
async fn call_one(
    session: &mut McpSession,
    settler: &mut Settler<'_>,
    running: Option<&Running>,
    watch: Watch<'_>,
    call: PlannedCall,
    index: usize,
    first_index: usize,
    revised: Option<super::vocab::Revised>,
    output: &mut RunOutput,
) -> bool {
    // A judged repeat is graded by the state it found and the state it left: the lab
    // settles before it (so the first call's delayed writes are in) and after it.
    let repeat = (call.repeat_of.is_some() && call.judged)
        .then_some(running)
        .flatten();
    let before = match repeat {
        Some(running) => {
            settler.settle().await;
            layer_now(running, watch.written)
        }
        None => Default::default(),
    };
    let requested_at = session.frame_log().elapsed();
    let outcome = session.call_tool(&call.tool, call.arguments.clone()).await;
    let unanswered = outcome.is_err().then(|| super::vocab::Unanswered {
        requested_at,
        failed_at: session.frame_log().elapsed(),
    });
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
    let outcome = outcome.map_err(|e| super::vocab::SessionFailed(e.to_string()));
    let answer = Some(super::vocab::judged(&outcome));
    output.calls.push(CallRecord {
        index,
        repeat_of: call.repeat_of.map(|earlier| first_index + earlier),
        purpose: call.purpose,
        tool: call.tool.clone(),
        arguments: call.arguments.clone(),
        outcome,
        repeat_state: Vec::new(),
        revised,
        answer,
        unanswered,
    });
    if let Some(running) = repeat {
        settler.settle().await;
        let after = layer_now(running, watch.written);
        let mut before = before;
        let states = after
            .into_iter()
            .filter_map(|(path, after)| {
                // A path first written during the repeat had no state read before it.
                let before = before.remove(&path)?;
                Some(PathStates {
                    path,
                    before,
                    after,
                })
            })
            .collect();
        if let Some(record) = output.calls.last_mut() {
            record.repeat_state = states;
        }
    }
    if timed_out {
        output.failure = Some(RunFailure {
            kind: ErrorKind::Timeout,
            detail: format!("tools/call {} timed out", call.tool),
        });
    }
    listening(running, &mut output.listens);
    match failed {
        Some(failed) => {
            output.failure = Some(failed);
            true
        }
        None => false,
    }
}

/// What a shared run has seen at its block boundaries: the tools last listed, the upper
/// layer's last snapshot, the listeners known when the current block began.
struct BlockState {
    listed: Option<Arc<serde_json::Value>>,
    layer: Option<vac_sandbox::UpperSnapshot>,
    listens_before: usize,
}

impl BlockState {
    /// Settles after a block whose last planned call is `after`: what the block wrote, a
    /// tools/list that changed, the listeners it opened; true when what it did stops the
    /// shared run (adaptive isolation).
    #[allow(clippy::too_many_arguments)]
    async fn settle(
        &mut self,
        session: &mut McpSession,
        settler: &mut Settler<'_>,
        running: Option<&Running>,
        log: &FrameLog,
        lab: Option<&super::vocab::LabRecord>,
        after: usize,
        output: &mut RunOutput,
    ) -> bool {
        let went_quiet = settler.settle().await;
        let t_ns = log.elapsed().as_nanos() as u64;
        let (tools, relist_failed) = match session.list_tools().await {
            Ok(tools) if self.listed.as_ref() == Some(&tools.raw) => (None, None),
            Ok(tools) => {
                self.listed = Some(tools.raw.clone());
                (Some(tools.raw), None)
            }
            Err(error) => (None, Some(error.to_string())),
        };
        let now = snapshot(running);
        let written = upper_written(self.layer.as_ref(), now.as_ref());
        self.layer = now;
        listening(running, &mut output.listens);
        // The block's last call made (a retry slot it did not need is no call).
        let after_call = output.calls.last().map_or(after, |c| c.index);
        let mut settled = Settled {
            tools,
            relist_failed,
            ..Settled::new(after_call, went_quiet, t_ns, written)
        };
        let listened = output.listens[self.listens_before..].first();
        settled.stopped = lab.and_then(|lab| {
            super::adaptive::stops_after(&settled, listened.map(|(a, _)| a.as_str()), lab)
        });
        self.listens_before = output.listens.len();
        let stopped = settled.stopped.is_some();
        output.settles.push(settled);
        stopped
    }
}

/// Ends the session: what the server asked outside any call is the run's, then shutdown.
async fn close(session: McpSession, output: &mut RunOutput) {
    output.asked = session.asked_outside_calls();
    session.shutdown().await;
}

/// Notes the sockets listening in the run's namespace now (sock_diag), with the time: taken
/// after the handshake and after each call, so a listener is tied to the call that opened it.
fn listening(running: Option<&Running>, seen: &mut Vec<(String, Duration)>) {
    let Some(running) = running else { return };
    let Some(Ok(sockets)) = running.network().map(|n| n.listeners()) else {
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

/// Waits for the run to be quiet ([`Quiet`]), one wait after another, keeping what the
/// last wait saw: a wait that follows another with no call between them (a block's end
/// after its repeat, the run's end after its last block) goes on from the stillness that
/// one saw, since the run's CPU time tells whether anything ran in between.
struct Settler<'a> {
    running: Option<&'a Running>,
    /// The processes of the run after its handshake: the server, which waits for input.
    baseline: Vec<i32>,
    last_event: &'a AtomicU64,
    quiet: Quiet,
    /// Since when the run was still at the end of the last wait, and its CPU time then.
    still: Option<(Instant, Duration)>,
}

impl Settler<'_> {
    /// Waits until the run is quiet or `max` has passed: delayed effects land inside the
    /// run, in the window of the call that caused them. Without a sandbox (a remote
    /// target) there is nothing to watch: one settle period. Whether the run went quiet.
    async fn settle(&mut self) -> bool {
        let Some(running) = self.running else {
            tokio::time::sleep(self.quiet.settle).await;
            return true;
        };
        let begun = Instant::now();
        let (mut still_since, mut cpu) = self
            .still
            .take()
            .unwrap_or_else(|| (begun, running.cpu_time()));
        let mut pause = EAGER_POLL;
        loop {
            tokio::time::sleep(pause).await;
            let now = Instant::now();
            let cpu_now = running.cpu_time();
            let busy =
                cpu_now != cpu || running.at_work(&self.baseline) || running.sensors_pending();
            cpu = cpu_now;
            if busy {
                still_since = now;
            }
            let since_start = running.started().elapsed().as_millis() as u64;
            let lab_still = Duration::from_millis(
                since_start.saturating_sub(self.last_event.load(Ordering::Relaxed)),
            );
            let still = now.duration_since(still_since).min(lab_still);
            if still >= self.quiet.settle {
                self.still = Some((still_since, cpu));
                return true;
            }
            let waited = now.duration_since(begun);
            if waited >= self.quiet.max {
                return false;
            }
            // The next look: soon while the run works, so the window starts within a poll
            // of its last work; once it is still, when the window would be full. Its CPU
            // time adds up whatever ran meanwhile, the lab's events say when they came, and
            // what is about to act (a thread waiting for a core, a timer, an unread effect)
            // is still there at that look: a still run needs no look in between.
            pause = match (busy, still.is_zero()) {
                (true, _) | (false, true) if waited < EAGER => EAGER_POLL,
                (true, _) | (false, true) => QUIET_POLL,
                (false, false) => (self.quiet.settle - still).max(EAGER_POLL),
            }
            .min(self.quiet.max - waited);
        }
    }
}
