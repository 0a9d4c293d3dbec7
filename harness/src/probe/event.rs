//! The closed vocabulary of what a run observed (SPEC §3.8): every observation a sensor
//! makes or the client sees is one [`Event`], written as one `event` receipt record with
//! the bytes it refers to as payloads. [`events`] splits a finished run into them;
//! [`RunBuilder`] folds the recorded ones back into the same [`RunOutput`], so grading
//! reads nothing the receipts do not hold.
//!
//! Frames and sensor self-tests have record kinds of their own (`frame`, `self_test`); the
//! run's identity is its `run_start`, its end its `run_end`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use vac_sandbox::FsChange;

use super::vocab::ObservedChange;
use super::vocab::{CallRecord, Reading, Role, RunFailure, RunOutput, SensorReadings, Settled};
use super::vocab::{ConnectSeen, DatagramSeen, DnsSeen, ExecSeen, LabEvent, Lost};
use crate::client::{Surface, SurfaceRead, ToolList};

/// Which tools/list a manifest event holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Phase {
    /// After the handshake: what was reviewed.
    Initial,
    /// Asked again after the calls and the quiet period (a rug pull shows here).
    AfterCalls,
}

/// Everything a run observed, one variant per kind of observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Event {
    /// The handshake's outcome.
    Session {
        protocol_version: String,
        server: Option<(String, String)>,
    },
    /// A whole tools/list (every page), exact JSON.
    Manifest {
        phase: Phase,
        tools: Arc<Value>,
        malformed: Vec<usize>,
        pages: u32,
        complete: bool,
    },
    /// A tools/list that failed.
    ManifestFailed {
        phase: Phase,
        error: String,
    },
    /// The prompts, resources and templates listed, when the server declared any.
    Surface {
        phase: Phase,
        surface: Surface,
    },
    /// One prompt or resource read after the listing (control run).
    SurfaceRead(SurfaceRead),
    /// One tools/call: what was sent, why, and what came back when.
    Call(CallRecord),
    /// A request whose content reaches the model or the user (sampling, elicitation) that
    /// the server sent outside any call.
    Asked(crate::client::Asked),
    /// One change the overlay witness found; payloads: the content after the run, then the
    /// content before (each capped), as `content`/`old_content` say.
    FsChange {
        change: FsChange,
        content: Option<usize>,
        old_content: Option<usize>,
    },
    /// One lab inotify event.
    Lab(LabEvent),
    Exec(ExecSeen),
    Dns(DnsSeen),
    /// Payload 0: the first bytes.
    Connect(ConnectSeen),
    /// Payload 0: the bytes kept.
    Datagram(DatagramSeen),
    /// A socket seen listening (sock_diag), first seen at `t_ns`.
    Listen {
        address: String,
        t_ns: u64,
    },
    /// When the client asked the server to shut down: later effects are the shutdown's.
    Shutdown {
        t_ns: u64,
    },
    /// What the program started at, for the network sensor's self-test window.
    ProgramStarted {
        t_ns: u64,
    },
    /// The witness's marker path (the sensor's own file, never an effect).
    Marker {
        #[serde(with = "vac_sandbox::serde_path")]
        path: PathBuf,
    },
    Lost(Lost),
    /// Who the server ran as, the host paths hidden from it and the installation
    /// directories left visible inside them.
    Visibility(vac_sandbox::Visibility),
    /// A shared run's wait for quiet after one tool's block.
    Settled(Settled),
    /// How the run ended, beyond `run_end`'s status.
    Outcome {
        failure: Option<RunFailure>,
        /// A first attempt given up for no answer to its start (absent in older receipts).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retried: Option<RunFailure>,
        termination: Option<String>,
        list_changed: u64,
        remote: bool,
    },
}

/// One event and the bytes it refers to.
pub(crate) type Recorded = (Event, Vec<Vec<u8>>);

/// A finished run as events, in the order they are recorded: made one at a time as the
/// recorder takes them, so that a run of 60,000 written files never holds them all, and
/// their contents, twice.
pub(crate) fn events(output: &RunOutput) -> impl Iterator<Item = Recorded> + '_ {
    fn plain(event: Event) -> Recorded {
        (event, Vec::new())
    }
    let opening = [
        output.visibility.clone().map(Event::Visibility),
        output
            .protocol_version
            .as_ref()
            .map(|version| Event::Session {
                protocol_version: version.clone(),
                server: output.server.clone(),
            }),
        output
            .tools
            .as_ref()
            .map(|tools| manifest(Phase::Initial, tools)),
        output.surface.as_ref().map(|surface| Event::Surface {
            phase: Phase::Initial,
            surface: surface.clone(),
        }),
    ];
    let later_tools = output.later_tools.as_ref().map(|later| match later {
        Ok(tools) => Event::Manifest {
            phase: Phase::AfterCalls,
            tools: tools.clone(),
            malformed: Vec::new(),
            pages: 0,
            complete: true,
        },
        Err(error) => Event::ManifestFailed {
            phase: Phase::AfterCalls,
            error: error.clone(),
        },
    });
    let later_surface = output.later_surface.as_ref().map(|surface| Event::Surface {
        phase: Phase::AfterCalls,
        surface: surface.clone(),
    });
    let changes = output.changes.iter().map(|observed| {
        let mut payloads = Vec::new();
        let mut slot = |bytes: &Option<Vec<u8>>| {
            bytes.as_ref().map(|b| {
                payloads.push(b.clone());
                payloads.len() - 1
            })
        };
        let (content, old_content) = (slot(&observed.content), slot(&observed.old_content));
        let event = Event::FsChange {
            change: observed.change.clone(),
            content,
            old_content,
        };
        (event, payloads)
    });
    let program_started = output.net.program_started.map(|at| Event::ProgramStarted {
        t_ns: at.as_nanos() as u64,
    });
    let ending = [
        output.shutdown.map(|at| Event::Shutdown {
            t_ns: at.as_nanos() as u64,
        }),
        output
            .marker
            .as_ref()
            .map(|path| Event::Marker { path: path.clone() }),
        Some(Event::Lost(output.lost.clone())),
        Some(Event::Outcome {
            failure: output.failure.clone(),
            retried: output.retried.clone(),
            termination: output.termination.clone(),
            list_changed: output.list_changed,
            remote: output.remote,
        }),
    ];
    opening
        .into_iter()
        .flatten()
        .map(plain)
        .chain(
            output
                .surface_reads
                .iter()
                .cloned()
                .map(Event::SurfaceRead)
                .map(plain),
        )
        .chain(output.calls.iter().cloned().map(Event::Call).map(plain))
        .chain(output.asked.iter().cloned().map(Event::Asked).map(plain))
        .chain(
            [later_tools, later_surface]
                .into_iter()
                .flatten()
                .map(plain),
        )
        .chain(changes)
        .chain(output.lab_events.iter().cloned().map(Event::Lab).map(plain))
        .chain(output.execs.iter().cloned().map(Event::Exec).map(plain))
        .chain(output.net.dns.iter().cloned().map(Event::Dns).map(plain))
        .chain(output.net.tcp.iter().map(|attempt| {
            let mut payloads = vec![attempt.first_bytes.clone()];
            if attempt.inside_tls {
                payloads.push(attempt.decrypted.clone());
            }
            (Event::Connect(attempt.clone()), payloads)
        }))
        .chain(output.net.udp.iter().map(|datagram| {
            (
                Event::Datagram(datagram.clone()),
                vec![datagram.bytes.clone()],
            )
        }))
        .chain(output.listens.iter().map(|(address, at)| {
            plain(Event::Listen {
                address: address.clone(),
                t_ns: at.as_nanos() as u64,
            })
        }))
        .chain(program_started.map(plain))
        .chain(
            output
                .settles
                .iter()
                .cloned()
                .map(Event::Settled)
                .map(plain),
        )
        .chain(ending.into_iter().flatten().map(plain))
}

fn manifest(phase: Phase, tools: &ToolList) -> Event {
    Event::Manifest {
        phase,
        tools: tools.raw.clone(),
        malformed: tools.malformed.clone(),
        pages: tools.pages,
        complete: tools.complete,
    }
}

/// Why recorded events do not make a run.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("run {run}: event record is not a vac event")]
    Malformed {
        run: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("run {run}: {event} event names payload {index}, the record has {count}")]
    MissingPayload {
        run: String,
        event: &'static str,
        index: usize,
        count: usize,
    },
}

/// Folds one run's recorded events back into its [`RunOutput`].
#[derive(Debug)]
pub(crate) struct RunBuilder {
    output: RunOutput,
}

impl RunBuilder {
    pub(crate) fn new(id: String, role: Role, tool: Option<String>) -> RunBuilder {
        RunBuilder {
            output: RunOutput::blank(id, role, tool.as_deref()),
        }
    }

    pub(crate) fn id(&self) -> &str {
        &self.output.id
    }

    /// Sets the tool a subject run was for (the run's sandbox configuration names it).
    pub(crate) fn tool(&mut self, tool: Option<String>) {
        self.output.tool = tool;
    }

    /// One sensor's recorded self-test.
    pub(crate) fn self_test(&mut self, sensor: &str, reading: Reading) {
        let readings: &mut SensorReadings = &mut self.output.sensors;
        match sensor {
            "fs_writes" => readings.fs_writes = reading,
            "fs_events" => readings.fs_events = reading,
            "processes" => readings.processes = reading,
            "network" => readings.network = reading,
            // Derived self-tests (the protocol witness) are recomputed, not read.
            _ => {}
        }
    }

    /// One `event` record: its JSON text and its payloads' bytes.
    pub(crate) fn event(&mut self, json: &str, payloads: Vec<Vec<u8>>) -> Result<(), EventError> {
        let run = self.output.id.clone();
        let event: Event = serde_json::from_str(json).map_err(|source| EventError::Malformed {
            run: run.clone(),
            source,
        })?;
        let count = payloads.len();
        let take = |event: &'static str, index: usize| {
            payloads
                .get(index)
                .cloned()
                .ok_or(EventError::MissingPayload {
                    run: run.clone(),
                    event,
                    index,
                    count,
                })
        };
        let output = &mut self.output;
        match event {
            Event::Session {
                protocol_version,
                server,
            } => {
                output.protocol_version = Some(protocol_version);
                output.server = server;
            }
            Event::Manifest {
                phase,
                tools,
                malformed,
                pages,
                complete,
            } => match phase {
                Phase::Initial => {
                    output.tools = Some(ToolList::from_raw(tools, malformed, pages, complete))
                }
                Phase::AfterCalls => output.later_tools = Some(Ok(tools)),
            },
            Event::ManifestFailed { phase, error } => {
                if phase == Phase::AfterCalls {
                    output.later_tools = Some(Err(error));
                }
            }
            Event::Surface { phase, surface } => match phase {
                Phase::Initial => output.surface = Some(surface),
                Phase::AfterCalls => output.later_surface = Some(surface),
            },
            Event::SurfaceRead(read) => output.surface_reads.push(read),
            Event::Asked(asked) => output.asked.push(asked),
            Event::Call(call) => output.calls.push(call),
            Event::FsChange {
                change,
                content,
                old_content,
            } => {
                let content = content.map(|i| take("fs_change", i)).transpose()?;
                let old_content = old_content.map(|i| take("fs_change", i)).transpose()?;
                output.changes.push(ObservedChange {
                    change,
                    content,
                    old_content,
                    writes: Vec::new(),
                });
            }
            Event::Lab(event) => output.lab_events.push(event),
            Event::Exec(exec) => output.execs.push(exec),
            Event::Dns(query) => output.net.dns.push(query),
            Event::Connect(mut attempt) => {
                attempt.first_bytes = take("connect", 0)?;
                if attempt.inside_tls {
                    attempt.decrypted = take("connect", 1)?;
                }
                output.net.tcp.push(attempt);
            }
            Event::Datagram(mut datagram) => {
                datagram.bytes = take("datagram", 0)?;
                output.net.udp.push(datagram);
            }
            Event::Listen { address, t_ns } => {
                output.listens.push((address, Duration::from_nanos(t_ns)))
            }
            Event::ProgramStarted { t_ns } => {
                output.net.program_started = Some(Duration::from_nanos(t_ns))
            }
            Event::Shutdown { t_ns } => output.shutdown = Some(Duration::from_nanos(t_ns)),
            Event::Settled(settled) => output.settles.push(settled),
            Event::Marker { path } => output.marker = Some(path),
            Event::Lost(lost) => output.lost = lost,
            Event::Visibility(visibility) => output.visibility = Some(visibility),
            Event::Outcome {
                failure,
                retried,
                termination,
                list_changed,
                remote,
            } => {
                output.failure = failure;
                output.retried = retried;
                output.termination = termination;
                output.list_changed = list_changed;
                output.remote = remote;
            }
        }
        Ok(())
    }

    /// The run, with what is derived from its events (write times of changes) filled in.
    pub(crate) fn finish(mut self) -> RunOutput {
        super::effects::stamp(&mut self.output.changes, &self.output.lab_events);
        super::effects::stamp_by_snapshots(
            &mut self.output.changes,
            &self.output.settles,
            &self.output.calls,
        );
        self.output.frame_stats = self.output.lost.frames;
        self.output
    }
}
