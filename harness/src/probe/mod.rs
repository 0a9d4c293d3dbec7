//! `vac probe`: one server audited end to end (SPEC §3.4–3.7).
//!
//! [`probe`] runs a control run (handshake and tools/list only), derives the contract from
//! the manifest and pre-registers it in the receipts, then runs one subject run per tool
//! whose contract restricts something (per-tool isolation: an effect of a subject run can
//! only come from that tool's calls), subtracts the control's effects, attributes the rest
//! to calls by lab-event timing, grades, and seals the receipts. The result is a
//! [`ProbeReport`].

mod adaptive;
mod conformance;
mod contract;
mod conversation;
mod effects;
mod event;
pub mod inputs;
mod layout;
mod observe;
mod plan;
pub(crate) mod plants;
mod record;
mod replay;
mod report;
mod revise;
mod run;
mod sensed;
mod shown;
pub mod start;
mod target;
mod vocab;
mod witness;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use vac_contracts::{ContractDocument, LabPaths, ToolDecl, graded_clauses};
use vac_sandbox::{Limits, RunAs, Sandbox, SandboxError};

pub use contract::Derivation;
use contract::manifest;
pub use event::EventError;
pub use plan::{Isolation, UnknownIsolation, has_path_argument, plan_tool, plan_witness};
pub use record::campaign_start;
pub use replay::{
    CheckTimings, Regraded, ReplayError, VerdictMismatch, check_verdicts, observe_case, report,
};
pub use report::{NoiseSeen, ProbeReport};
pub use run::Quiet;
pub use target::Target;
pub(crate) use target::{described_http, error_chain};
pub use vocab::{PlannedCall, Plants, Purpose};

use crate::client::ClientOptions;
use layout::plan_probe;
use plan::{PlannedRun, ProbePlan, Scope};
use record::Recorder;
use run::RunPlan;
use target::Server;
use vocab::{Role, RunOutput};

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
    /// Subject runs executed at once (each an independent sandbox); receipts keep plan
    /// order whatever the order they finish in.
    pub jobs: usize,
    /// How the tools are isolated from each other.
    pub isolation: Isolation,
    /// Tools called per server at most; the tools beyond are `skipped: budget`.
    pub max_tools: usize,
    /// Calls per server at most, over all its subject runs; a tool whose calls would pass
    /// it is `skipped: budget`.
    pub max_calls: usize,
    pub seed: u64,
    pub limits: Limits,
    /// Host directory for run directories: `VAC_RUN_ROOT` when set, else the sandbox's
    /// (`/run/vac`). vac's sweeper (`main.rs`) watches the same one.
    pub run_root: Option<PathBuf>,
    /// A written contract; without one, the contract is derived as `derivation` says.
    pub contract: Option<ContractSource>,
    /// How a contract is derived when none is written.
    pub derivation: Derivation,
    /// Environment, planted files and argument hints for this target.
    pub inputs: inputs::Inputs,
    /// Launches after the control run on the lab as the launches before left it, no tool
    /// called (a sleeper that arms on its second launch changes its manifest there).
    pub relaunch: u32,
    /// The user the server runs as (default: the one who invoked vac).
    pub user: RunAs,
}

/// The user a server runs as unless told otherwise: the one who invoked vac (`SUDO_UID`
/// under sudo), so that a server installed in that user's home (pyenv, uv, nvm, npx) runs
/// as installed. Capabilities are dropped and the host's homes hidden either way.
pub fn invoking_user() -> RunAs {
    let sudo = |name| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
    let root = nix::unistd::geteuid().is_root();
    match (root.then(|| sudo("SUDO_UID")).flatten(), sudo("SUDO_GID")) {
        (Some(uid), gid) => user_of(uid, gid),
        (None, _) => user_of(
            nix::unistd::getuid().as_raw(),
            Some(nix::unistd::getgid().as_raw()),
        ),
    }
}

/// The run-as of `uid`: root without capabilities for 0; otherwise that uid with `gid`, or
/// else its primary group from the password database, or else the same number.
pub fn user_of(uid: u32, gid: Option<u32>) -> RunAs {
    if uid == 0 {
        return RunAs::RootWithoutCapabilities;
    }
    let gid = gid.unwrap_or_else(|| {
        nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
            .ok()
            .flatten()
            .map_or(uid, |user| user.gid.as_raw())
    });
    RunAs::User { uid, gid }
}

/// A contract document's name (its path) and text, read by the caller.
#[derive(Debug, Clone)]
pub struct ContractSource {
    pub name: String,
    pub text: String,
}

impl ProbeOptions {
    /// The contract these options derive for `decls` in `lab`, and its text, for the server
    /// `control` met, started as the target says with the `--env` given.
    fn derive(
        &self,
        decls: &[ToolDecl],
        lab: &LabPaths,
        control: &RunOutput,
    ) -> (vac_contracts::Contract, String) {
        self.derivation.derive(
            decls,
            lab,
            control,
            &self.target.describe(),
            &self.inputs.env_pairs(),
        )
    }

    /// The same options with `seconds` to wait for initialize and for each answer.
    pub fn with_timeout(mut self, seconds: u64) -> ProbeOptions {
        self.client.initialize_timeout = Duration::from_secs(seconds);
        self.client.request_timeout = Duration::from_secs(seconds);
        self
    }

    pub fn new(target: Target, out_dir: PathBuf) -> ProbeOptions {
        ProbeOptions {
            target,
            out_dir,
            quiet: Quiet {
                settle: Duration::from_millis(50),
                max: Duration::from_secs(5),
            },
            client: ClientOptions {
                initialize_timeout: Duration::from_secs(20),
                ..ClientOptions::default()
            },
            max_calls_per_tool: 6,
            jobs: default_jobs(),
            isolation: Isolation::default(),
            max_tools: 128,
            max_calls: 10_000,
            seed: 0,
            limits: Limits {
                wall_clock: Duration::from_secs(300),
                ..Limits::default()
            },
            run_root: run_root_from_env(),
            contract: None,
            derivation: Derivation::default(),
            inputs: inputs::Inputs::default(),
            user: invoking_user(),
            relaunch: 1,
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
    #[error(transparent)]
    Document(#[from] vac_contracts::ContractError),
    #[error("the server could not be audited: {detail}")]
    NoManifest { detail: String },
    #[error("the contract does not compile")]
    Contract(#[from] vac_contracts::CompileError),
    #[error("grading the receipts failed")]
    Replay(#[from] ReplayError),
    #[error("cannot make a scratch log to assess a shared run in")]
    Scratch {
        #[source]
        source: std::io::Error,
    },
    #[error("the system's random number generator failed: {0}")]
    Nonce(String),
    #[error(transparent)]
    Input(#[from] inputs::InputError),
}

/// Audits one server: control run, contract and plan pre-registered, subject runs, each
/// recorded as it ends; then the verdicts graded from the receipts just written, recorded,
/// and the log sealed. The report is that grading, with the sealed chain's verified head:
/// what `vac report` gives from the sealed receipts.
pub async fn probe(options: ProbeOptions) -> Result<ProbeReport, ProbeError> {
    let (document, options, planted) = prepare(options)?;
    let target = options.target.describe();
    let config = probe_config(&options, &target);
    let dir = options.out_dir.as_path();
    let receipts = |source| ProbeError::Receipts {
        dir: dir.to_path_buf(),
        source,
    };
    // A credential's value, and its token alone (`Bearer <token>`): a server may echo either.
    let secrets = || {
        options.client.headers.iter().flat_map(|h| {
            let token = h.value.split_once(' ').map(|(_, token)| token.trim());
            std::iter::once(h.value.as_str()).chain(token)
        })
    };
    let mut recorder = Recorder::create(dir, &config, options.seed).map_err(receipts)?;
    recorder.redact(secrets());

    let server = server(&options, &planted)?;
    let run_config = |calls: &[PlannedCall], first_index: usize| {
        json!({"lab": planted.record, "planted": [plants::NOTE], "trap": plants::TRAP,
            "env": planted.env.0, "limits": options.limits,
            "quiet": config["quiet"], "client": config["client"],
            "first_index": first_index, "calls": calls.len()})
    };

    // The plan needs the control run's manifest, not its end: once its tools/list is
    // answered, the subject runs start while it settles and is torn down beside them.
    let server = std::sync::Arc::new(server);
    let content = std::sync::Arc::new(effects::ContentBudget::default());
    let (listed, listing) = tokio::sync::oneshot::channel();
    let control = {
        let (server, quiet, client, content) = (
            std::sync::Arc::clone(&server),
            options.quiet,
            options.client.clone(),
            std::sync::Arc::clone(&content),
        );
        AbortOnDrop(tokio::spawn(async move {
            let plan = control_plan(quiet, &client, &content);
            run::execute_listing(&server, plan, Some(listed)).await
        }))
    };
    let listed = listing.await.ok();
    let Some((control_listed, (decls, malformed))) =
        listed.and_then(|listed| manifest(&listed).map(|found| (listed, found)))
    else {
        let control = control.join().await?;
        recorder
            .run(&control, &target, run_config(&[], 0))
            .map_err(receipts)?;
        recorder.seal().map_err(receipts)?;
        return Ok(replay::report(dir)?);
    };

    // Pre-registration: the contract's bytes go into the receipts before the first call.
    let (contract, name, text) = contract_of(
        &options,
        document.as_ref(),
        &decls,
        &planted.record.lab_paths(),
        &control_listed,
    )?;
    let contract_hash = recorder.contract(&name, &text).map_err(receipts)?;
    let topic = contract::service(&control_listed, &target, &options.inputs.env_pairs()).names;
    let plan = plan_probe(
        &options,
        &planted,
        &decls,
        malformed,
        &contract,
        contract_hash,
        topic,
    );
    recorder.plan(&plan).map_err(receipts)?;

    // The subject runs are independent sandboxes: up to `jobs` at once, recorded in plan
    // order after the control run. Adaptive isolation's own runs wait for their shared
    // run, whose records say which tools they are needed for.
    let mut record = |planned: Option<&PlannedRun>, output: &RunOutput| {
        let config = match planned {
            Some(planned) => run_config(&planned.calls, planned.first_index),
            None => run_config(&[], 0),
        };
        recorder.run(output, &target, config).map_err(receipts)
    };
    let first: Vec<&PlannedRun> = plan
        .runs
        .iter()
        .filter(|r| r.role == Role::Subject && r.scope != Scope::IfDoubted)
        .collect();
    let runs = Runs {
        server: &server,
        content: &content,
        plan: &plan,
        options: &options,
    };
    // A shared run's doubts as the receipts will hold them: the control run's records and
    // its own, written by the same recorder to a log of their own and read back by the
    // same code that grades the receipts. So its tools' own runs start as soon as it ends,
    // while a shared run before it in the plan goes on, and the receipts keep plan order.
    let assess = |planned: &PlannedRun, control: &RunOutput, shared: &RunOutput| {
        // Beside the receipts, not in the host's /tmp: were vac ended before it is
        // removed, what is left is in the directory the caller gave.
        let scratch = tempfile::Builder::new()
            .prefix(".assess-")
            .tempdir_in(dir)
            .map_err(|source| ProbeError::Scratch { source })?;
        let scratch_error = |source| ProbeError::Receipts {
            dir: scratch.path().to_path_buf(),
            source,
        };
        let mut log =
            Recorder::create(scratch.path(), &config, options.seed).map_err(scratch_error)?;
        log.redact(secrets());
        log.run(control, &target, run_config(&[], 0))
            .map_err(scratch_error)?;
        log.run(
            shared,
            &target,
            run_config(&planned.calls, planned.first_index),
        )
        .map_err(scratch_error)?;
        drop(log);
        doubted(&plan, scratch.path(), planned)
    };
    // The relaunches start as soon as the control run ends, beside the subject runs; they
    // are recorded after them, in plan order.
    let relaunches: Vec<PlannedRun> = plan
        .runs
        .iter()
        .filter(|r| r.role == Role::Relaunch)
        .cloned()
        .collect();
    let mut chain = None;
    let mut after_control = |control: &RunOutput| {
        if !relaunches.is_empty() {
            chain = Some(relaunch(relaunches.clone(), &options, &planted, control));
        }
    };
    subject_runs(
        runs,
        first,
        control,
        &mut record,
        &mut after_control,
        &assess,
    )
    .await?;
    if let Some(chain) = chain {
        for (planned, output) in chain.join().await? {
            record(Some(&planned), &output)?;
        }
    }
    // Grading reads everything back from the receipts: what the runs were made from (the
    // contract and its text, the listing, the plan: tens of MB for thousands of tools)
    // goes first, so that the two are never held at once.
    drop((contract, text, control_listed, decls, plan, server));
    grade_and_seal(dir, recorder)
}

/// Checks what can be checked before anything runs — the contract document, the plants —
/// and lays out the lab: its planted files, the sampling reply that carries this probe's
/// token, the roots a server in the sandbox is given.
fn prepare(
    mut options: ProbeOptions,
) -> Result<(Option<ContractDocument>, ProbeOptions, plants::Planted), ProbeError> {
    // A bad contract is reported before anything runs.
    let document = match &options.contract {
        Some(source) => Some(checked(ContractDocument::parse(
            &source.name,
            &source.text,
        )?)?),
        None => None,
    };
    // So are bad plants: they are read before anything is recorded.
    let planted_files = inputs::read_plants(&options.inputs.plants)?;
    let nonce = nonce()?;
    options.client.sampling_reply = Some(plants::sampling_reply(&plants::sampling_token(&nonce)));
    options.client.sampling_latency = plants::SAMPLING_LATENCY;
    let mut planted = plants::plant(&nonce, &lab_home(&options));
    for file in planted_files {
        planted.lab = planted
            .lab
            .plant_with_mode(file.path, file.bytes, file.mode);
    }
    // A server that takes its roots from the client, in the sandbox, is given the lab's
    // work directory; a remote server is not in the lab, and is given none.
    if options.target.command().is_some() {
        options.client.roots = vec![planted.record.work.display().to_string()];
    }
    Ok((document, options, planted))
}

/// The probe's configuration as its first record holds it.
fn probe_config(options: &ProbeOptions, target: &str) -> serde_json::Value {
    json!({"target": target, "seed": options.seed, "max_calls_per_tool": options.max_calls_per_tool, "jobs": options.jobs, "max_tools": options.max_tools, "max_calls": options.max_calls,
        "quiet": {"settle_ms": options.quiet.settle.as_millis() as u64, "max_ms": options.quiet.max.as_millis() as u64},
        "isolation": options.isolation.as_str(),
        "contract": options.contract.as_ref().map_or(options.derivation.record_name(), |c| &c.name),
        "client": options.client, "limits": options.limits, "inputs": options.inputs})
}

/// The contract the probe grades against, compiled, with the name and text recorded before
/// the first call: the document resolved against the listed tools, or the one derived from
/// them.
fn contract_of(
    options: &ProbeOptions,
    document: Option<&ContractDocument>,
    decls: &[ToolDecl],
    lab_paths: &LabPaths,
    control_listed: &RunOutput,
) -> Result<(vac_contracts::Contract, String, String), ProbeError> {
    let (contract, name, text) = match (document, &options.contract) {
        (Some(document), Some(source)) => (
            document.resolve(decls, lab_paths)?,
            source.name.clone(),
            source.text.clone(),
        ),
        _ => {
            let (derived, text) = options.derive(decls, lab_paths, control_listed);
            (derived, options.derivation.record_name().to_string(), text)
        }
    };
    contract.compile()?;
    Ok((contract, name, text))
}

/// One grading path: the verdicts come from the receipts as written, never from memory;
/// they and the behaviour profile are recorded and the log sealed. The report is that
/// grading, as `vac report` gives it, with the sealed chain's verified head.
fn grade_and_seal(
    dir: &std::path::Path,
    mut recorder: Recorder,
) -> Result<ProbeReport, ProbeError> {
    let receipts = |source| ProbeError::Receipts {
        dir: dir.to_path_buf(),
        source,
    };
    // The records read for grading are dropped once graded.
    let mut graded = {
        let recorded = replay::read(dir)?;
        let graded = replay::grade(&recorded, &replay::canonical(dir), String::new())?;
        if let (Some(grades), Some(last)) = (&graded.grades, recorded.runs.last()) {
            recorder
                .verdicts(&last.id, grades, &graded.contract, &graded.isolation)
                .map_err(receipts)?;
            recorder
                .profile(&last.id, &graded.profile)
                .map_err(receipts)?;
        }
        graded
    };
    recorder.seal().map_err(receipts)?;
    // What the seal added after the grading (the verdict and profile records made from it,
    // the seal) is nothing grading reads. Its head is the sealed chain's, verified from the
    // directory.
    graded.head = replay::verified_head(dir)?;
    Ok(graded)
}

/// What the subject runs of one probe are made from.
#[derive(Clone, Copy)]
struct Runs<'a> {
    server: &'a std::sync::Arc<Server>,
    content: &'a std::sync::Arc<effects::ContentBudget>,
    plan: &'a ProbePlan,
    options: &'a ProbeOptions,
}

/// Executes `first` up to `options.jobs` at once, each a task of its own (one run's
/// blocking teardown does not stall another's conversation), and records them in plan
/// order, each once every run before it is recorded; `control`, still finishing beside
/// them, is recorded first. A shared run is assessed as soon as it ends (`assess`: its
/// records as the receipts will hold them, read back), and the own runs of the tools it
/// left in doubt join the queue then: they start while earlier shared runs go on, and are
/// recorded after every shared run, in plan order. At most `jobs` runs go at once; a run
/// that ended waits, its output held, for its turn to be recorded.
async fn subject_runs(
    runs: Runs<'_>,
    first: Vec<&PlannedRun>,
    control: AbortOnDrop<Result<RunOutput, vac_sandbox::SandboxError>>,
    record: &mut impl FnMut(Option<&PlannedRun>, &RunOutput) -> Result<(), ProbeError>,
    after_control: &mut impl FnMut(&RunOutput),
    assess: &impl Fn(&PlannedRun, &RunOutput, &RunOutput) -> Result<Vec<String>, ProbeError>,
) -> Result<(), ProbeError> {
    use futures_util::StreamExt;
    let Runs {
        server,
        content,
        plan,
        options,
    } = runs;
    let start = |planned: &PlannedRun| {
        let server = std::sync::Arc::clone(server);
        let planned = planned.clone();
        let lab = plan.lab.clone();
        let (quiet, client) = (options.quiet, options.client.clone());
        let content = std::sync::Arc::clone(content);
        AbortOnDrop(tokio::spawn(async move {
            let plan = RunPlan {
                role: Role::Subject,
                tool: planned.tool.as_deref(),
                calls: &planned.calls,
                blocks: &planned.blocks,
                lab: Some(&lab),
                first_index: planned.first_index,
                quiet,
                options: &client,
                content: &content,
            };
            run::execute(&server, plan).await
        }))
    };
    // A run's place in the plan: the order the receipts keep (the plan lists the shared
    // runs before the own runs, and those in the order of the blocks).
    let place = |planned: &PlannedRun| {
        plan.runs
            .iter()
            .position(|r| std::ptr::eq(r, planned))
            .expect("a run of the plan")
    };
    let mut queue: std::collections::VecDeque<&PlannedRun> = first.into();
    // Started and not yet recorded, by place: running (`None`) or ended.
    let mut pending: std::collections::BTreeMap<usize, (&PlannedRun, Option<RunOutput>)> =
        Default::default();
    let mut running = futures_util::stream::FuturesUnordered::new();
    let mut control = Some(control);
    let mut control_output: Option<RunOutput> = None;
    // Ended runs wait here with their manifests: equal ones share one value.
    let mut manifests = vocab::Manifests::default();
    loop {
        let jobs = options.jobs.max(1);
        while running.len() < jobs {
            let Some(&planned) = queue.front() else {
                break;
            };
            // Past the bound on waiting runs, only a run ahead of every one of them starts:
            // they wait for it to be recorded.
            let ahead = pending
                .first_key_value()
                .is_none_or(|(first, _)| place(planned) < *first);
            if pending.len() >= HELD * jobs && !ahead {
                break;
            }
            queue.pop_front();
            let task = start(planned);
            let at = place(planned);
            pending.insert(at, (planned, None));
            running.push(async move { (at, task.join().await) });
        }
        if let Some(control) = control.take() {
            let mut output = control.join().await?;
            manifests.share(&mut output);
            record(None, &output)?;
            after_control(&output);
            control_output = Some(output);
        }
        // Nothing runs: so nothing waits either (a run ahead of every waiting one would
        // have started), and every run is recorded.
        let Some((at, output)) = running.next().await else {
            debug_assert!(queue.is_empty() && pending.is_empty());
            return Ok(());
        };
        let mut output = output?;
        manifests.share(&mut output);
        let (planned, _) = pending[&at];
        if planned.scope == Scope::Shared {
            let control = control_output
                .as_ref()
                .expect("the control run is recorded first");
            let doubted = assess(planned, control, &output)?;
            queue.extend(plan.runs.iter().filter(|r| {
                r.scope == Scope::IfDoubted && r.tool.as_ref().is_some_and(|t| doubted.contains(t))
            }));
            queue.make_contiguous().sort_by_key(|r| place(r));
        }
        pending.insert(at, (planned, Some(output)));
        // Every run before the first still pending is recorded, and no run can come before
        // it: a shared run adds its own runs before it is recorded, after every shared run.
        while let Some(entry) = pending.first_entry() {
            let (planned, Some(output)) = entry.get() else {
                break;
            };
            if queue.front().is_some_and(|next| place(next) < *entry.key()) {
                break;
            }
            record(Some(planned), output)?;
            entry.remove();
        }
    }
}

/// Runs started and not yet recorded, running or ended, at most, in `jobs`: a run that
/// ended early waits for its turn to be recorded with its output held, and a slow run ahead
/// of it in the plan stops new runs from starting once this many wait (but one ahead of
/// all of them).
const HELD: usize = 2;

/// Starts the server again for each planned relaunch, no tool called, on the lab as the
/// launches before left it: the control's files in the lab, then each relaunch's, planted
/// into the next one's lab. A file whose content was not kept (over the probe's content
/// budget) is not carried. One task runs the chain, beside the subject runs.
fn relaunch(
    planned: Vec<PlannedRun>,
    options: &ProbeOptions,
    planted: &plants::Planted,
    control: &RunOutput,
) -> AbortOnDrop<Result<Vec<(PlannedRun, RunOutput)>, ProbeError>> {
    let mut carried: std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> = Default::default();
    carry(&mut carried, control, &planted.record.root);
    let (options, planted) = (options.clone(), planted.clone());
    AbortOnDrop(tokio::spawn(async move {
        let mut outputs = Vec::with_capacity(planned.len());
        for run in planned {
            let mut next = planted.clone();
            for (path, bytes) in &carried {
                next.lab = next.lab.plant_with_mode(path, bytes.clone(), 0o600);
            }
            let server = server(&options, &next)?;
            let content = effects::ContentBudget::default();
            let mut plan = control_plan(options.quiet, &options.client, &content);
            plan.role = Role::Relaunch;
            plan.first_index = run.first_index;
            let output = run::execute(&server, plan).await?;
            carry(&mut carried, &output, &planted.record.root);
            outputs.push((run, output));
        }
        Ok(outputs)
    }))
}

/// Adds the lab files `run` left (created or modified, with their content kept) to
/// `carried`, by their path below the lab's root.
fn carry(
    carried: &mut std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>,
    run: &RunOutput,
    root: &std::path::Path,
) {
    for observed in &run.changes {
        let (vac_sandbox::FsChange::Created { .. }
        | vac_sandbox::FsChange::Modified { .. }
        | vac_sandbox::FsChange::Renamed { .. }) = &observed.change
        else {
            continue;
        };
        let (Some(content), Ok(below)) = (
            observed.content.as_ref(),
            observed.change.path().strip_prefix(root),
        ) else {
            continue;
        };
        carried.insert(below.to_path_buf(), content.clone());
    }
}

/// The tools the shared run `shared` leaves in doubt, read from a log that holds the
/// control run and it, in that order ([`probe`]'s scratch log): what their own runs are
/// made for.
fn doubted(
    plan: &ProbePlan,
    dir: &std::path::Path,
    shared: &PlannedRun,
) -> Result<Vec<String>, ProbeError> {
    let recorded = replay::read(dir)?;
    let control = recorded.runs.iter().find(|r| r.role == Role::Control);
    let run = recorded.runs.iter().find(|r| r.role == Role::Subject);
    let (Some(control), Some(run)) = (control, run) else {
        return Ok(Vec::new());
    };
    Ok(adaptive::assess(shared, run, control, &plan.lab)
        .into_iter()
        .filter(|block| block.doubt.is_some())
        .map(|block| block.tool)
        .collect())
}

/// Runs at once unless told otherwise: one per core the process may use, at least one and
/// at most eight (each run has its own memory and pids limits, so the host's share is
/// `jobs` times a run's).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 8))
}

/// A run's task, aborted when the probe stops waiting for it (a wall-time budget ran out,
/// another run failed): its sandbox is then torn down as the task's future is dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> AbortOnDrop<T> {
    async fn join(mut self) -> T {
        match (&mut self.0).await {
            Ok(value) => value,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(error) => panic!("a run's task was cancelled while awaited: {error}"),
        }
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `vac contract derive`: a control run only, and the contract its tools' annotations
/// imply, written as a document for the researcher to edit before the real run.
pub async fn derive_contract(options: &ProbeOptions) -> Result<String, ProbeError> {
    let planted = plants::plant(&nonce()?, &lab_home(options));
    let server = server(options, &planted)?;
    let control = control_run(&server, options).await?;
    let Some((decls, _)) = manifest(&control) else {
        let detail = control
            .failure
            .map_or("the server returned no tools/list".into(), |f| f.detail);
        return Err(ProbeError::NoManifest { detail });
    };
    let lab = planted.record.lab_paths();
    let (_, text) = options.derive(&decls, &lab, &control);
    Ok(text)
}

/// The target's tools/list, every page, from a control run alone (no tool is called): what
/// `vac static -- CMD` reads. Entries are returned as the server sent them.
pub async fn control_manifest(
    options: &ProbeOptions,
) -> Result<Vec<serde_json::Value>, ProbeError> {
    let planted = plants::plant(&nonce()?, &lab_home(options));
    let server = server(options, &planted)?;
    let control = control_run(&server, options).await?;
    if let Some(failure) = control.failure {
        return Err(ProbeError::NoManifest {
            detail: failure.detail,
        });
    }
    control
        .tools
        .as_ref()
        .and_then(|t| t.raw.as_array())
        .cloned()
        .ok_or_else(|| ProbeError::NoManifest {
            detail: "the server returned no tools/list".into(),
        })
}

/// Handshake and tools/list, no call: the server's background and its manifest.
async fn control_run(server: &Server, options: &ProbeOptions) -> Result<RunOutput, ProbeError> {
    let content = effects::ContentBudget::default();
    Ok(run::execute(
        server,
        control_plan(options.quiet, &options.client, &content),
    )
    .await?)
}

fn control_plan<'a>(
    quiet: run::Quiet,
    client: &'a ClientOptions,
    content: &'a effects::ContentBudget,
) -> RunPlan<'a> {
    RunPlan {
        role: Role::Control,
        tool: None,
        calls: &[],
        blocks: &[],
        lab: None,
        first_index: 0,
        quiet,
        options: client,
        content,
    }
}

/// A sandbox for the target's command, or the remote endpoint.
fn server(options: &ProbeOptions, planted: &plants::Planted) -> Result<Server, ProbeError> {
    let command = match &options.target {
        Target::RemoteHttp(endpoint) => return Ok(Server::Remote(endpoint.clone())),
        Target::Stdio(command) | Target::LaunchedHttp { command, .. } => command.clone(),
    };
    // The lab placeholders become the paths the server sees, in its command and
    // environment alike.
    let view = planted.lab.view();
    let command: Vec<std::ffi::OsString> = command
        .into_iter()
        .map(|arg| match arg.to_str() {
            Some(text) => inputs::expand(text, &view).into(),
            None => arg,
        })
        .collect();
    let mut builder = Sandbox::builder(command)
        .lab(planted.lab.clone())
        .env(&planted.env.0, &planted.env.1)
        .limits(options.limits.clone())
        .run_as(options.user)
        // Outside the lab, only reads no tool is meant to make are evidence.
        .access_filter(|path| vac_contracts::never_read_place(&path.to_string_lossy()).is_some());
    for path in &options.inputs.expose {
        builder = builder.expose(path);
    }
    for exposure in &options.inputs.start {
        builder = builder.expose_because(&exposure.path, &exposure.why);
    }
    for var in &options.inputs.env {
        builder = builder.env(&var.name, inputs::expand(&var.value, &view));
    }
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

/// The home the lab stands in for: that of the uid the server runs as.
fn lab_home(options: &ProbeOptions) -> PathBuf {
    vac_sandbox::home_of(options.user.ids().0)
}

/// The probe's unique token part; without the system's generator there is no probe, since
/// predictable canaries could be planted by the server itself.
fn nonce() -> Result<String, ProbeError> {
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes).map_err(|e| ProbeError::Nonce(e.to_string()))?;
    Ok(hex::encode(bytes))
}

/// The clauses graded today, for reports.
pub fn clauses() -> Vec<&'static str> {
    graded_clauses().map(|c| c.as_str()).collect()
}

/// `VAC_RUN_ROOT`, where run directories go when it is set (an absolute path; the sandbox
/// refuses any other when a run starts).
pub fn run_root_from_env() -> Option<PathBuf> {
    std::env::var_os("VAC_RUN_ROOT")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}
