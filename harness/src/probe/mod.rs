//! `vac probe`: one server audited end to end (SPEC §3.4–3.7).
//!
//! [`probe`] runs a control run (handshake and tools/list only), derives the contract from
//! the manifest and pre-registers it in the receipts, then runs one subject run per tool
//! whose contract restricts something (per-tool isolation: an effect of a subject run can
//! only come from that tool's calls), subtracts the control's effects, attributes the rest
//! to calls by lab-event timing, grades, and seals the receipts. The result is a
//! [`ProbeReport`].

mod effects;
mod observe;
mod plan;
mod plants;
mod protocol;
mod record;
mod run;
mod sensed;
mod shown;
mod target;
mod witness;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use vac_contracts::{
    Clause, ContractDocument, Grades, LabPaths, Rule, ServerIdentity, SkipReason, ToolDecl, derive,
    grade, graded_clauses, render,
};
use vac_sandbox::{Limits, Sandbox, SandboxError};

pub use plan::{PlannedCall, Plants, Purpose, has_path_argument, plan_tool, plan_witness};
pub use run::Quiet;
pub use target::Target;

use crate::client::ClientOptions;
use record::Recorder;
use run::{Role, RunOutput, RunPlan};
use target::Server;

/// What to probe and how.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// What to audit: a command (stdio or launched HTTP) or a remote URL.
    pub target: Target,
    /// Where the receipts go (created; must not hold a receipt log already).
    pub out_dir: PathBuf,
    pub quiet: Quiet,
    pub client: ClientOptions,
    pub max_calls_per_tool: usize,
    pub seed: u64,
    pub limits: Limits,
    /// Host directory for run directories (default: the sandbox's).
    pub run_root: Option<PathBuf>,
    /// A written contract; without one, the contract is derived from the annotations.
    pub contract: Option<ContractSource>,
}

/// A contract document's name (its path) and text, read by the caller.
#[derive(Debug, Clone)]
pub struct ContractSource {
    pub name: String,
    pub text: String,
}

impl ProbeOptions {
    pub fn new(target: Target, out_dir: PathBuf) -> ProbeOptions {
        ProbeOptions {
            target,
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
            contract: None,
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
    #[error(transparent)]
    Document(#[from] vac_contracts::ContractError),
    #[error("the server could not be audited: {detail}")]
    NoManifest { detail: String },
    #[error("the contract does not compile")]
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

/// Audits one server.
pub async fn probe(options: ProbeOptions) -> Result<ProbeReport, ProbeError> {
    // A bad contract is reported before anything runs.
    let document = match &options.contract {
        Some(source) => Some(checked(ContractDocument::parse(
            &source.name,
            &source.text,
        )?)?),
        None => None,
    };
    let target = options.target.describe();
    let nonce = nonce();
    let config = json!({"target": target, "seed": options.seed, "max_calls_per_tool": options.max_calls_per_tool,
        "quiet_ms": options.quiet.max.as_millis() as u64, "isolation": "per-tool",
        "contract": options.contract.as_ref().map(|c| &c.name)});
    let receipts = |source| ProbeError::Receipts {
        dir: options.out_dir.clone(),
        source,
    };
    let mut recorder =
        Recorder::create(&options.out_dir, &config, options.seed).map_err(receipts)?;

    let planted = plants::plant(&nonce);
    let view = planted.lab.view();
    let server = server(&options, &planted)?;
    let sandbox_config = json!({"lab": view.root(), "planted": [plants::NOTE], "trap": plants::TRAP,
        "canaries": planted.canaries.iter().map(|c| json!({"name": c.name, "path": c.path})).collect::<Vec<_>>(),
        "limits": format!("{:?}", options.limits)});

    let control = control_run(&server, &options).await?;
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
    let Some(decls) = manifest(&control) else {
        let why = control
            .failure
            .as_ref()
            .map_or("the server returned no tools/list".into(), |f| {
                f.detail.clone()
            });
        report.failure = Some(why);
        report.head = seal(recorder, &options.out_dir)?;
        return Ok(report);
    };
    report.tools = decls.len();

    // Pre-registration: the contract's bytes go into the receipts before the first call.
    let lab_paths = LabPaths::at(&view.root().display().to_string());
    let (contract, name, text) = match (&document, &options.contract) {
        (Some(document), Some(source)) => (
            document.resolve(&decls, &lab_paths)?,
            source.name.clone(),
            source.text.clone(),
        ),
        _ => {
            let derived = derive(&decls);
            let text = render(&derived, &server_identity(&control));
            (derived, "derived from annotations".to_string(), text)
        }
    };
    let compiled = contract.compile()?;
    let mut plants = planted.plants.clone();
    if !contract.scope.is_empty() {
        plants.escapes = plants::escapes(&planted);
    }
    report.contract = recorder.contract(&name, &text).map_err(receipts)?;

    let mut observation = observe::start(&control, &planted);
    let mut next_index = 0;
    let mut last_run = control.id.clone();
    for (ordinal, decl) in decls.iter().enumerate() {
        let Some(rules) = contract.tools.iter().find(|t| t.tool == decl.name) else {
            continue;
        };
        let restricted = |clause: Option<Clause>| {
            rules
                .rules
                .iter()
                .any(|r| clause.is_none_or(|c| r.clause == c) && r.rule != Rule::NothingPromised)
        };
        if rules.call == Some(false) {
            observation
                .not_called
                .push((decl.name.clone(), SkipReason::NotCalled));
            continue;
        }
        if !restricted(None) {
            observation
                .not_called
                .push((decl.name.clone(), SkipReason::NothingPromised));
            continue;
        }
        let repeat = restricted(Some(Clause::Idempotent));
        let mut calls = plan_tool(
            &decl.name,
            &decl.input_schema,
            &plants,
            options.max_calls_per_tool,
            repeat,
        );
        // The protocol witness (SPEC §3.5), outside the budget: all three calls or none.
        if restricted(Some(Clause::FsWrite)) {
            let paths = plants.witness_paths(ordinal);
            calls.extend(plan_witness(&decl.name, &decl.input_schema, &plants, paths));
        }
        let subject = run::execute(
            &server,
            RunPlan {
                role: Role::Subject,
                tool: Some(&decl.name),
                calls: &calls,
                first_index: next_index,
                quiet: options.quiet,
                options: &options.client,
            },
        )
        .await?;
        next_index += calls.len();
        recorder
            .run(&subject, &target, sandbox_config.clone())
            .map_err(receipts)?;
        observe::add(&mut observation, &subject, &control, &planted);
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

/// `vac contract derive`: a control run only, and the contract its tools' annotations
/// imply, written as a document for the researcher to edit before the real run.
pub async fn derive_contract(options: &ProbeOptions) -> Result<String, ProbeError> {
    let planted = plants::plant(&nonce());
    let server = server(options, &planted)?;
    let control = control_run(&server, options).await?;
    let Some(decls) = manifest(&control) else {
        let detail = control
            .failure
            .map_or("the server returned no tools/list".into(), |f| f.detail);
        return Err(ProbeError::NoManifest { detail });
    };
    Ok(render(&derive(&decls), &server_identity(&control)))
}

/// Handshake and tools/list, no call: the server's background and its manifest.
async fn control_run(server: &Server, options: &ProbeOptions) -> Result<RunOutput, ProbeError> {
    Ok(run::execute(
        server,
        RunPlan {
            role: Role::Control,
            tool: None,
            calls: &[],
            first_index: 0,
            quiet: options.quiet,
            options: &options.client,
        },
    )
    .await?)
}

/// A sandbox for the target's command, or the remote endpoint.
fn server(options: &ProbeOptions, planted: &plants::Planted) -> Result<Server, ProbeError> {
    let command = match &options.target {
        Target::RemoteHttp(endpoint) => return Ok(Server::Remote(endpoint.clone())),
        Target::Stdio(command) | Target::LaunchedHttp { command, .. } => command.clone(),
    };
    let mut builder = Sandbox::builder(command)
        .lab(planted.lab.clone())
        .env(&planted.env.0, &planted.env.1)
        .limits(options.limits.clone());
    if let Some(root) = &options.run_root {
        builder = builder.run_root(root);
    }
    let sandbox = builder.build()?;
    Ok(match &options.target {
        Target::LaunchedHttp { port, path, .. } => Server::LaunchedHttp {
            sandbox,
            port: *port,
            path: path.clone(),
        },
        _ => Server::Stdio(sandbox),
    })
}

/// Resolves a document against the tools it names itself: every pattern and placeholder
/// error shows before the server runs; only unknown tools wait for the real tools/list.
fn checked(document: ContractDocument) -> Result<ContractDocument, ProbeError> {
    let named: Vec<ToolDecl> = document
        .tools()
        .map(|name| {
            serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}}))
        })
        .collect::<Result<_, _>>()
        .unwrap_or_default();
    document.resolve(&named, &LabPaths::at("/lab"))?;
    Ok(document)
}

/// The tools the control run listed, if it got that far.
fn manifest(control: &RunOutput) -> Option<Vec<ToolDecl>> {
    if control.failure.is_some() {
        return None;
    }
    let raw = control.tools.as_ref()?.raw.as_array()?;
    Some(
        raw.iter()
            .filter_map(|t| serde_json::from_value::<ToolDecl>(t.clone()).ok())
            .collect(),
    )
}

fn server_identity(control: &RunOutput) -> ServerIdentity {
    ServerIdentity {
        name: control
            .server
            .as_ref()
            .map_or("unknown", |(name, _)| name.as_str())
            .to_string(),
        version: control.server.as_ref().map(|(_, version)| version.clone()),
    }
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

fn summary(output: &RunOutput) -> Value {
    json!({
        "run": output.id,
        "role": match output.role { Role::Control => "control", Role::Subject => "subject" },
        "tool": output.tool,
        "calls": output.calls.len(),
        "changes": output.changes.len(),
        "frames": output.frame_stats.frames_seen,
        "failure": output.failure.as_ref().map(|f| &f.detail),
        "protocol_witness": witness::summary(&output.calls, &output.id),
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
