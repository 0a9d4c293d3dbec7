//! Writes a probe into receipts: the only place observations become receipt records.

use std::path::Path;

use serde_json::{Value, json};
use vac_contracts::{Grades, Verdict as Graded};
use vac_receipts::{
    Body, CampaignStart, Contract, Digest, Direction, Effect, Event, Frame, Host, Json, Plan,
    ReceiptWriter, Role, RunEnd, RunStart, RunStatus, SandboxConfig, SelfTest, SensorStatus,
    Verdict, VerdictKind, WriteError, WriterOptions,
};

use super::event;
use super::plan::ProbePlan;
use super::vocab::{Reading, RunOutput};
use crate::client::Direction as FrameDirection;

/// The first record of a log: this host, vac's version, the configuration (`config_bytes`
/// hashed, `config` kept whole) and the seed.
pub fn campaign_start(config_bytes: &str, seed: u64, config: Value) -> CampaignStart {
    let uname = nix::sys::utsname::uname().ok();
    let host = Host {
        hostname: nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default(),
        kernel: uname
            .as_ref()
            .map(|u| u.release().to_string_lossy().into_owned())
            .unwrap_or_default(),
        arch: std::env::consts::ARCH.to_string(),
    };
    CampaignStart {
        vac_version: env!("CARGO_PKG_VERSION").to_string(),
        host,
        config_hash: Digest::of(config_bytes.as_bytes()),
        seed,
        config,
    }
}

/// A receipt log being written for one probe.
#[derive(Debug)]
pub(crate) struct Recorder {
    writer: ReceiptWriter,
}

impl Recorder {
    /// Creates `dir` and writes the campaign start (the configuration, its hash, the seed).
    pub(crate) fn create(dir: &Path, config: &Value, seed: u64) -> Result<Recorder, WriteError> {
        let start = campaign_start(&config.to_string(), seed, config.clone());
        let writer = ReceiptWriter::create(dir, WriterOptions::default(), start)?;
        Ok(Recorder { writer })
    }

    /// Never writes `secrets` (the values of the user's HTTP headers) from now on
    /// ([`ReceiptWriter::redact`]); the first record's configuration names them only.
    pub(crate) fn redact<'a>(&mut self, secrets: impl IntoIterator<Item = &'a str>) {
        for secret in secrets {
            self.writer.redact(secret.as_bytes());
        }
    }

    /// Pre-registers the contract (bytes and hash) before any probe call; returns its hash.
    pub(crate) fn contract(&mut self, name: &str, text: &str) -> Result<String, WriteError> {
        let contract = Contract::new(name, text);
        let hash = contract.blake3.to_hex();
        self.writer.append(Body::Contract(contract))?;
        Ok(hash)
    }

    /// Pre-registers the plan (after the contract, before the first subject run).
    pub(crate) fn plan(&mut self, plan: &ProbePlan) -> Result<(), WriteError> {
        let plan = serde_json::to_value(plan).map_err(|source| WriteError::Refused {
            seq: self.writer.next_seq(),
            detail: format!("the plan does not serialise: {source}"),
        })?;
        self.writer.append(Body::Plan(Plan { plan }))?;
        Ok(())
    }

    /// One run: start, configuration, every frame, every event, the sensors' self-tests, end.
    pub(crate) fn run(
        &mut self,
        output: &RunOutput,
        target: &str,
        config: Value,
    ) -> Result<(), WriteError> {
        let run_id = output.id.clone();
        let role = match output.role {
            super::vocab::Role::Control => Role::Control,
            super::vocab::Role::Subject => Role::Subject,
            super::vocab::Role::Relaunch => Role::Relaunch,
        };
        self.writer.append(Body::RunStart(RunStart {
            run_id: run_id.clone(),
            target: target.to_string(),
            role,
            repetition: 0,
        }))?;
        let config = json!({"run": config, "tool": output.tool});
        self.writer.append(Body::SandboxConfig(SandboxConfig {
            run_id: run_id.clone(),
            config,
        }))?;
        for frame in output.frames.iter() {
            let frame = frame.map_err(|source| WriteError::Refused {
                seq: self.writer.next_seq(),
                detail: format!("a frame could not be read back from vac's spill file: {source}"),
            })?;
            let direction = match frame.direction {
                FrameDirection::ToServer => Direction::ToServer,
                FrameDirection::FromServer => Direction::FromServer,
                FrameDirection::Stderr => Direction::Stderr,
            };
            let mut bytes = self.writer.payload(&frame.bytes)?;
            // A line cut at the client's cap keeps its length: the payload is its prefix.
            bytes.len = bytes.len.max(frame.len);
            self.writer.append(Body::Frame(Frame {
                run_id: run_id.clone(),
                direction,
                t_ns: frame.at.as_nanos() as u64,
                bytes,
            }))?;
        }
        for (event, bytes) in event::events(output) {
            let payloads = bytes
                .iter()
                .map(|b| self.writer.payload(b))
                .collect::<Result<Vec<_>, _>>()?;
            let event = Json::of(&event).map_err(|source| WriteError::Refused {
                seq: self.writer.next_seq(),
                detail: format!("an event does not serialise: {source}"),
            })?;
            self.writer.append(Body::Event(Event {
                run_id: run_id.clone(),
                event,
                payloads,
            }))?;
        }
        for (sensor, reading) in output.sensors.named() {
            let (status, detail) = match reading {
                Reading::Live(detail) => (SensorStatus::Live, detail.clone()),
                Reading::Blind(detail) => (SensorStatus::Blind, detail.clone()),
                Reading::Absent(detail) => (SensorStatus::CapabilityAbsent, detail.clone()),
                Reading::Failed(detail) => (SensorStatus::Failed, detail.clone()),
            };
            self.writer.append(Body::SelfTest(SelfTest {
                run_id: run_id.clone(),
                sensor: sensor.into(),
                status,
                detail,
            }))?;
        }
        let (status, detail) = match &output.failure {
            None => (
                RunStatus::Completed,
                format!(
                    "frames {}, dropped {}",
                    output.frame_stats.frames_seen, output.frame_stats.frames_dropped
                ),
            ),
            Some(failure) if failure.kind == vac_contracts::ErrorKind::Timeout => {
                (RunStatus::TimedOut, failure.detail.clone())
            }
            Some(failure) => (RunStatus::Errored, failure.detail.clone()),
        };
        self.writer.append(Body::RunEnd(RunEnd {
            run_id,
            status,
            detail,
        }))?;
        Ok(())
    }

    /// Every verdict cell, graded against the contract with hash `contract`.
    pub(crate) fn verdicts(
        &mut self,
        run_id: &str,
        grades: &Grades,
        contract: &str,
        isolation: &Isolated,
    ) -> Result<(), WriteError> {
        for verdict in verdict_records(run_id, grades, contract, isolation) {
            self.writer.append(Body::Verdict(verdict))?;
        }
        Ok(())
    }

    /// The behaviour profile ([`profile_records`]), after the verdicts.
    pub(crate) fn profile(&mut self, run_id: &str, profile: &Profile) -> Result<(), WriteError> {
        for effect in profile_records(run_id, profile) {
            self.writer.append(Body::Effect(effect))?;
        }
        Ok(())
    }

    /// Seals the log; returns the head hash.
    pub(crate) fn seal(self) -> Result<String, WriteError> {
        Ok(self.writer.seal(None)?.head.to_hex())
    }
}

/// The verdict records of a grid: what the probe writes and `vac verify` re-derives.
/// Per tool, the run adaptive isolation graded it on and why (empty for `per-tool` plans,
/// whose verdicts each come from the tool's own run).
pub(crate) type Isolated = std::collections::BTreeMap<String, serde_json::Value>;

/// The class of a profile record that says its tool did nothing the sensors saw.
pub(crate) const NOTHING_SEEN: &str = "nothing_seen";

/// A behaviour profile: per tool (and the `(server)` row), per kind, its targets.
pub(crate) type Profile = std::collections::BTreeMap<String, Value>;

/// The behaviour profile as `effect` records, written after the verdicts and re-derived
/// by `vac verify` like them: one per tool × kind × target listed, in profile order.
/// `sensor` is `profile` (a grader's summary of attributed effects, not one sensor's
/// observation), `class` the kind (`writes`, `reads`, `execs`, …), `call` none (a line sums
/// the tool's calls), and `detail` names the tool and how many distinct targets of that
/// kind it had (`distinct`: more than are listed when the list was cut). A tool that did
/// nothing the sensors saw has one record of class [`NOTHING_SEEN`], so a reader tells it
/// from a log that holds no profile at all.
pub(crate) fn profile_records(run_id: &str, profile: &Profile) -> Vec<Effect> {
    let mut records = Vec::new();
    let record = |tool: &str, kind: &str, target: &str, distinct: u64| Effect {
        run_id: run_id.to_string(),
        call: None,
        sensor: "profile".into(),
        class: kind.to_string(),
        target: target.to_string(),
        detail: serde_json::to_value(vac_contracts::evidence::ProfileLine {
            tool: tool.to_owned(),
            distinct,
        })
        .unwrap_or(Value::Null),
        payloads: Vec::new(),
    };
    for (tool, kinds) in profile {
        let Some(kinds) = kinds.as_object() else {
            continue;
        };
        if kinds.is_empty() {
            records.push(record(tool, NOTHING_SEEN, "", 0));
        }
        for (kind, seen) in kinds {
            let targets: Vec<&str> = seen["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let distinct = targets.len() as u64 + seen["omitted"].as_u64().unwrap_or(0);
            records.extend(targets.into_iter().map(|t| record(tool, kind, t, distinct)));
        }
    }
    records
}

pub(crate) fn verdict_records(
    run_id: &str,
    grades: &Grades,
    contract: &str,
    isolation: &Isolated,
) -> Vec<Verdict> {
    grades
        .cells
        .iter()
        .map(|cell| {
            let verdict = match cell.verdict {
                Graded::Confirmed { .. } => VerdictKind::Confirmed,
                Graded::Refuted { .. } => VerdictKind::Refuted,
                Graded::Skipped { .. } => VerdictKind::Skipped,
                Graded::Errored { .. } => VerdictKind::Errored,
            };
            let mut evidence = cell.evidence();
            evidence["contract"] = json!(contract);
            // What a reader of the records alone needs to weigh the cell (SPEC §5 `calls`,
            // `succeeded`); the names are the cell's own, apart from the evidence's `calls`.
            evidence["cell_calls"] = json!(cell.calls);
            evidence["cell_succeeded"] = json!(cell.succeeded);
            if let Some(isolated) = isolation.get(&cell.tool) {
                evidence["isolation"] = isolated.clone();
            }
            Verdict {
                run_id: run_id.to_string(),
                tool: cell.tool.clone(),
                clause: cell.clause.as_str().to_string(),
                verdict,
                reason: cell.reason(),
                evidence: evidence.into(),
            }
        })
        .collect()
}
