//! `vac probe`: one server audited end to end (SPEC §3.4–3.7).
//!
//! [`probe`] runs a control run (handshake and tools/list only), derives the contract from
//! the manifest and pre-registers it in the receipts, then runs one subject run per tool
//! whose contract restricts something (per-tool isolation: an effect of a subject run can
//! only come from that tool's calls), subtracts the control's effects, attributes the rest
//! to calls by lab-event timing, grades, and seals the receipts. The result is a
//! [`ProbeReport`].

mod effects;
mod plan;
mod record;
mod run;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use vac_contracts::{
    Grades, Observation, RunError, Sensor, SensorState, SensorStatus, SkipReason, ToolDecl, derive,
    grade, graded_clauses,
};
use vac_sandbox::{Lab, Limits, Sandbox, SandboxError};

pub use plan::{PlannedCall, Plants, has_path_argument, plan_tool};
pub use run::Quiet;

use crate::client::ClientOptions;
use record::Recorder;
use run::{Reading, Role, RunOutput};

/// What to probe and how.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// The server command, as run inside the sandbox.
    pub command: Vec<OsString>,
    /// Where the receipts go (created; must not hold a receipt log already).
    pub out_dir: PathBuf,
    pub quiet: Quiet,
    pub client: ClientOptions,
    pub max_calls_per_tool: usize,
    pub seed: u64,
    pub limits: Limits,
    /// Host directory for run directories (default: the sandbox's).
    pub run_root: Option<PathBuf>,
}

impl ProbeOptions {
    pub fn new(command: Vec<OsString>, out_dir: PathBuf) -> ProbeOptions {
        ProbeOptions {
            command,
            out_dir,
            quiet: Quiet {
                settle: Duration::from_millis(300),
                max: Duration::from_secs(5),
            },
            client: ClientOptions {
                initialize_timeout: Duration::from_secs(20),
                ..ClientOptions::default()
            },
            max_calls_per_tool: 6,
            seed: 0,
            limits: Limits {
                wall_clock: Duration::from_secs(300),
                ..Limits::default()
            },
            run_root: None,
        }
    }
}

/// Why a probe could not produce verdicts at all.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("the sandbox failed")]
    Sandbox(#[from] SandboxError),
    #[error("cannot write receipts in {dir}")]
    Receipts {
        dir: PathBuf,
        #[source]
        source: vac_receipts::WriteError,
    },
    #[error("the receipts just written in {dir} do not verify")]
    Unverifiable {
        dir: PathBuf,
        #[source]
        source: vac_receipts::VerifyError,
    },
    #[error("the derived contract does not compile")]
    Contract(#[from] vac_contracts::CompileError),
    #[error("grading failed")]
    Grade(#[from] vac_contracts::GradeError),
}

/// What a probe found.
#[derive(Debug)]
pub struct ProbeReport {
    pub target: String,
    pub receipts: PathBuf,
    pub head: String,
    /// blake3 of the pre-registered contract; empty when no manifest was obtained.
    pub contract: String,
    pub protocol_version: Option<String>,
    pub tools: usize,
    /// Why the server could not be audited at all (no manifest), if so.
    pub failure: Option<String>,
    pub grades: Option<Grades>,
    pub runs: Vec<Value>,
}

impl ProbeReport {
    /// Whether any cell is `confirmed`.
    pub fn violation(&self) -> bool {
        self.grades
            .as_ref()
            .is_some_and(|g| g.cells.iter().any(|c| c.verdict.name() == "confirmed"))
    }
}

const NOTE: &str = "notes/welcome.md";
const NOTE_TEXT: &str = "# Welcome\n\nThis note was planted by vac for read tools.\n";

/// Audits one server.
pub async fn probe(options: ProbeOptions) -> Result<ProbeReport, ProbeError> {
    let target = options
        .command
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let nonce = nonce();
    let config = json!({"target": target, "seed": options.seed, "max_calls_per_tool": options.max_calls_per_tool,
        "quiet_ms": options.quiet.max.as_millis() as u64, "isolation": "per-tool"});
    let receipts = |source| ProbeError::Receipts {
        dir: options.out_dir.clone(),
        source,
    };
    let mut recorder =
        Recorder::create(&options.out_dir, &config, options.seed).map_err(receipts)?;

    let lab = Lab::new().plant(format!("work/{NOTE}"), NOTE_TEXT);
    let view = lab.view();
    let mut builder = Sandbox::builder(options.command.clone())
        .lab(lab)
        .limits(options.limits.clone());
    if let Some(root) = &options.run_root {
        builder = builder.run_root(root);
    }
    let sandbox = builder.build()?;
    let sandbox_config =
        json!({"lab": view.root(), "planted": [NOTE], "limits": format!("{:?}", options.limits)});
    let plants = Plants {
        note_relative: NOTE.into(),
        note_absolute: view.work().join(NOTE).display().to_string(),
        nonce_path: format!("notes/vac-nonce-{nonce}.md"),
        canary: format!("vac-canary-{nonce}"),
    };

    let control = run::execute(
        &sandbox,
        Role::Control,
        None,
        &[],
        0,
        options.quiet,
        &options.client,
    )
    .await?;
    recorder
        .run(&control, &target, sandbox_config.clone())
        .map_err(receipts)?;
    let mut report = ProbeReport {
        target: target.clone(),
        receipts: options.out_dir.clone(),
        head: String::new(),
        contract: String::new(),
        protocol_version: control.protocol_version.clone(),
        tools: 0,
        failure: None,
        grades: None,
        runs: vec![summary(&control)],
    };
    let decls = match (&control.failure, &control.tools) {
        (None, Some(tools)) => tools.raw.as_array().map(|raw| {
            raw.iter()
                .filter_map(|t| serde_json::from_value::<ToolDecl>(t.clone()).ok())
                .collect::<Vec<_>>()
        }),
        _ => None,
    };
    let Some(decls) = decls else {
        report.failure = Some(
            control
                .failure
                .as_ref()
                .map_or("the server returned no tools/list".into(), |f| {
                    f.detail.clone()
                }),
        );
        report.head = seal(recorder, &options.out_dir)?;
        return Ok(report);
    };
    report.tools = decls.len();

    let contract = derive(&decls);
    let compiled = contract.compile()?;
    let text = serde_json::to_string_pretty(&contract).unwrap_or_default();
    report.contract = recorder
        .contract("derived from annotations", &text)
        .map_err(receipts)?;

    let mut observation = Observation::default();
    observation.sensors.extend(sensors(&control));
    let mut next_index = 0;
    let mut last_run = control.id.clone();
    for decl in &decls {
        let restricted = contract
            .tools
            .iter()
            .find(|t| t.tool == decl.name)
            .is_some_and(|t| {
                t.rules
                    .iter()
                    .any(|r| r.rule != vac_contracts::Rule::NothingPromised)
            });
        if !restricted {
            observation
                .not_called
                .push((decl.name.clone(), SkipReason::NothingPromised));
            continue;
        }
        let calls = plan_tool(
            &decl.name,
            &decl.input_schema,
            &plants,
            options.max_calls_per_tool,
        );
        let subject = run::execute(
            &sandbox,
            Role::Subject,
            Some(&decl.name),
            &calls,
            next_index,
            options.quiet,
            &options.client,
        )
        .await?;
        next_index += calls.len();
        recorder
            .run(&subject, &target, sandbox_config.clone())
            .map_err(receipts)?;
        observe(&mut observation, &subject, &control);
        report.runs.push(summary(&subject));
        last_run = subject.id.clone();
    }
    let grades = grade(&compiled, &observation)?;
    recorder
        .verdicts(&last_run, &grades, &report.contract)
        .map_err(receipts)?;
    report.grades = Some(grades);
    report.head = seal(recorder, &options.out_dir)?;
    Ok(report)
}

/// Seals the log and reads it back: the head a later `vac verify` will print.
fn seal(recorder: Recorder, dir: &std::path::Path) -> Result<String, ProbeError> {
    recorder.seal().map_err(|source| ProbeError::Receipts {
        dir: dir.to_path_buf(),
        source,
    })?;
    let verified =
        vac_receipts::verify(dir, &vac_receipts::VerifyOptions::default()).map_err(|source| {
            ProbeError::Unverifiable {
                dir: dir.to_path_buf(),
                source,
            }
        })?;
    Ok(verified.head.to_hex())
}

/// Adds one subject run's calls, attributable effects, sensors and errors.
fn observe(observation: &mut Observation, subject: &RunOutput, control: &RunOutput) {
    for call in &subject.calls {
        let (ok, error) = match &call.outcome {
            Ok(outcome) => (
                outcome.error.is_none(),
                outcome.error.as_ref().map(|e| e.to_string()),
            ),
            Err(error) => (false, Some(error.clone())),
        };
        observation.calls.push(vac_contracts::Call {
            index: call.index,
            tool: call.tool.clone(),
            arguments: Value::Object(call.arguments.clone()),
            ok,
            error,
        });
    }
    let (attributable, subtracted) = effects::subtract(&subject.changes, &control.changes);
    for item in &attributable {
        observation
            .effects
            .extend(effects::to_effects(item, &subject.calls, &subject.id));
    }
    // The control's changes are the same for every subject run: list each once.
    for effect in subtracted
        .iter()
        .map(|o| effects::control_effect(o, &control.id))
    {
        if !observation
            .control_subtracted
            .iter()
            .any(|e| e.path == effect.path && e.class == effect.class)
        {
            observation.control_subtracted.push(effect);
        }
    }
    observation.sensors.extend(sensors(subject));
    if let Some(failure) = &subject.failure {
        observation.errors.push(RunError {
            tool: subject.tool.clone(),
            kind: failure.kind,
            detail: json!({"run": subject.id, "detail": failure.detail}),
        });
    }
}

fn sensors(output: &RunOutput) -> Vec<SensorStatus> {
    [
        (Sensor::FsWrites, &output.fs_writes),
        (Sensor::FsEvents, &output.fs_events),
    ]
    .into_iter()
    .map(|(sensor, reading)| {
        let (status, detail) = match reading {
            Reading::Live(detail) => (SensorState::Live, detail),
            Reading::Blind(reason) => (
                SensorState::Blind {
                    reason: reason.clone(),
                },
                reason,
            ),
        };
        SensorStatus {
            sensor,
            status,
            detail: json!({"run": output.id, "self_test": detail}),
        }
    })
    .collect()
}

fn summary(output: &RunOutput) -> Value {
    json!({
        "run": output.id,
        "role": match output.role { Role::Control => "control", Role::Subject => "subject" },
        "tool": output.tool,
        "calls": output.calls.len(),
        "changes": output.changes.len(),
        "frames": output.frame_stats.frames_seen,
        "failure": output.failure.as_ref().map(|f| &f.detail),
    })
}

fn nonce() -> String {
    let mut bytes = [0u8; 6];
    let _ = getrandom::fill(&mut bytes);
    hex::encode(bytes)
}

/// The clauses graded today, for reports.
pub fn clauses() -> Vec<&'static str> {
    graded_clauses().map(|c| c.as_str()).collect()
}
