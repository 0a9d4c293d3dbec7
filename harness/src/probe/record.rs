//! Writes a probe into receipts: the only place observations become receipt records.

use std::path::Path;

use serde_json::{Value, json};
use vac_contracts::{Grades, Verdict as Graded};
use vac_receipts::{
    Body, CampaignStart, Contract, Digest, Direction, Effect, Frame, Host, ReceiptWriter, Role,
    RunEnd, RunStart, RunStatus, SandboxConfig, SelfTest, SensorStatus, Verdict, VerdictKind,
    WriteError, WriterOptions,
};

use super::run::{self, Reading, RunOutput};
use super::{effects, witness};
use crate::client::Direction as FrameDirection;

/// A receipt log being written for one probe.
#[derive(Debug)]
pub(crate) struct Recorder {
    writer: ReceiptWriter,
}

impl Recorder {
    /// Creates `dir` and writes the campaign start (configuration hash and seed).
    pub(crate) fn create(dir: &Path, config: &Value, seed: u64) -> Result<Recorder, WriteError> {
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
        let start = CampaignStart {
            vac_version: env!("CARGO_PKG_VERSION").to_string(),
            host,
            config_hash: Digest::of(config.to_string().as_bytes()),
            seed,
        };
        let writer = ReceiptWriter::create(dir, WriterOptions::default(), start)?;
        Ok(Recorder { writer })
    }

    /// Pre-registers the contract (bytes and hash) before any probe call; returns its hash.
    pub(crate) fn contract(&mut self, name: &str, text: &str) -> Result<String, WriteError> {
        let contract = Contract::new(name, text);
        let hash = contract.blake3.to_hex();
        self.writer.append(Body::Contract(contract))?;
        Ok(hash)
    }

    /// One run: start, sandbox configuration, every frame, self-tests, raw effects, end.
    pub(crate) fn run(
        &mut self,
        output: &RunOutput,
        target: &str,
        sandbox: Value,
    ) -> Result<(), WriteError> {
        let run_id = output.id.clone();
        let role = match output.role {
            run::Role::Control => Role::Control,
            run::Role::Subject => Role::Subject,
        };
        self.writer.append(Body::RunStart(RunStart {
            run_id: run_id.clone(),
            target: target.to_string(),
            role,
            repetition: 0,
        }))?;
        let config = json!({"sandbox": sandbox, "tool": output.tool, "protocol_version": output.protocol_version});
        self.writer.append(Body::SandboxConfig(SandboxConfig {
            run_id: run_id.clone(),
            config,
        }))?;
        for frame in &output.frames {
            let direction = match frame.direction {
                FrameDirection::ToServer => Direction::ToServer,
                FrameDirection::FromServer => Direction::FromServer,
                FrameDirection::Stderr => Direction::Stderr,
            };
            let bytes = self.writer.payload(&frame.bytes)?;
            self.writer.append(Body::Frame(Frame {
                run_id: run_id.clone(),
                direction,
                t_ns: frame.at.as_nanos() as u64,
                bytes,
            }))?;
        }
        for (sensor, reading) in [
            ("fs_writes", &output.fs_writes),
            ("fs_events", &output.fs_events),
        ] {
            let (status, detail) = match reading {
                Reading::Live(detail) => (SensorStatus::Live, detail.clone()),
                Reading::Blind(detail) => (SensorStatus::Blind, detail.clone()),
                Reading::Absent(detail) => (SensorStatus::CapabilityAbsent, detail.clone()),
            };
            self.writer.append(Body::SelfTest(SelfTest {
                run_id: run_id.clone(),
                sensor: sensor.into(),
                status,
                detail,
            }))?;
        }
        if let Some(found) = witness::assess(&output.calls, &run_id, None) {
            let status = match found.status.status {
                vac_contracts::SensorState::Live => SensorStatus::Live,
                _ => SensorStatus::Failed,
            };
            self.writer.append(Body::SelfTest(SelfTest {
                run_id: run_id.clone(),
                sensor: "protocol_witness".into(),
                status,
                detail: found.status.detail.to_string(),
            }))?;
        }
        for observed in &output.changes {
            let payloads = match &observed.content {
                Some(content) => vec![self.writer.payload(content)?],
                None => Vec::new(),
            };
            self.writer.append(Body::Effect(Effect {
                run_id: run_id.clone(),
                call: None,
                sensor: "fs_writes".into(),
                class: effects::class_name(effects::class(&observed.change)),
                target: observed.change.path().display().to_string(),
                detail: effects::detail(observed, None),
                payloads,
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
    ) -> Result<(), WriteError> {
        for cell in &grades.cells {
            let verdict = match cell.verdict {
                Graded::Confirmed { .. } => VerdictKind::Confirmed,
                Graded::Refuted { .. } => VerdictKind::Refuted,
                Graded::Skipped { .. } => VerdictKind::Skipped,
                Graded::Errored { .. } => VerdictKind::Errored,
            };
            let mut evidence = cell.evidence();
            evidence["contract"] = json!(contract);
            self.writer.append(Body::Verdict(Verdict {
                run_id: run_id.to_string(),
                tool: cell.tool.clone(),
                clause: cell.clause.as_str().to_string(),
                verdict,
                reason: cell.reason(),
                evidence,
            }))?;
        }
        Ok(())
    }

    /// Seals the log; returns the head hash.
    pub(crate) fn seal(self) -> Result<String, WriteError> {
        Ok(self.writer.seal(None)?.head.to_hex())
    }
}
