//! Receipts → runs → observation → verdicts: the one grading path (SPEC §3.8).
//!
//! [`read`] folds a receipt log back into its configuration, contract, plan, runs and
//! recorded verdicts; [`grade`] turns that into a [`ProbeReport`] with no other input.
//! `vac probe` grades the receipts it has just written through it, `vac report` grades a
//! directory through it, and `vac verify` checks that the verdict records the probe wrote
//! are what it gives ([`check_verdicts`]).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use vac_contracts::{ContractDocument, ErrorKind, RunError, grade as grade_cells, server_row};
use vac_receipts::{Body, ReceiptLog, SensorStatus, VerdictKind};

use super::conformance::Conformance;
use super::contract::{Derivation, manifest};
use super::event::{EventError, RunBuilder};
use super::plan::{MalformedTool, PlannedRun, ProbePlan, Scope};
use super::report::{NoiseSeen, ProbeReport, best_answers, summary};
use super::vocab::{Reading, Role, RunOutput};
use super::{observe, record};

/// Why a receipt directory cannot be graded.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("the receipts in {dir} do not verify")]
    Broken {
        dir: PathBuf,
        #[source]
        source: vac_receipts::VerifyError,
    },
    #[error("cannot read the receipts in {dir}")]
    Read {
        dir: PathBuf,
        #[source]
        source: vac_receipts::ReadError,
    },
    #[error("cannot read a payload of record {seq} in {dir}")]
    Payload {
        dir: PathBuf,
        seq: u64,
        #[source]
        source: vac_receipts::BlobError,
    },
    #[error("record {seq} in {dir}")]
    Event {
        dir: PathBuf,
        seq: u64,
        #[source]
        source: EventError,
    },
    #[error("record {seq} in {dir}: the plan is not a vac probe plan")]
    Plan {
        dir: PathBuf,
        seq: u64,
        #[source]
        source: serde_json::Error,
    },
    #[error("record {seq} in {dir} belongs to run {run:?}, which is not open there")]
    Stray { dir: PathBuf, seq: u64, run: String },
    #[error("the receipts in {dir} hold {what}")]
    Incomplete { dir: PathBuf, what: &'static str },
    #[error(
        "the receipts in {dir} say their contract was {name} under this vac's rules (revision {rules}), but the recorded manifest derives another one"
    )]
    DerivedMismatch {
        dir: PathBuf,
        name: String,
        rules: u32,
    },
    #[error(transparent)]
    Document(#[from] vac_contracts::ContractError),
    #[error("the recorded contract does not compile")]
    Contract(#[from] vac_contracts::CompileError),
    #[error("the receipts in {dir} do not follow their adaptive plan: {detail}")]
    Adaptive { dir: PathBuf, detail: String },
    #[error("the recorded observations cannot be graded")]
    Grade(#[from] vac_contracts::GradeError),
}

/// What a receipt log holds, folded back into the harness's types.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    pub(crate) target: Option<String>,
    /// The `--env` variables the configuration records (name, value): intent's service
    /// reads them. Empty in logs written before the configuration was recorded.
    pub(crate) env: Vec<(String, String)>,
    pub(crate) contract: Option<vac_receipts::Contract>,
    pub(crate) plan: Option<ProbePlan>,
    pub(crate) runs: Vec<RunOutput>,
    /// The verdict records with their sequence numbers ([`check_verdicts`] only:
    /// grading never reads them, and a large manifest's hold tens of megabytes).
    pub(crate) verdicts: Vec<(u64, vac_receipts::Verdict)>,
    /// The behaviour profile's `effect` records ([`check_verdicts`] only).
    pub(crate) profile: Vec<(u64, vac_receipts::Effect)>,
    /// Server-to-client frames that were text but not JSON-RPC (`protocol.stdout_clean`).
    pub(crate) noise: NoiseSeen,
    /// What the frames showed of the server's conformance (`conformance.rs`).
    pub(crate) conformance: Conformance,
}

/// The `--env` pairs of a recorded configuration (`inputs.env`: `{name, value}` objects).
fn recorded_env(config: &serde_json::Value) -> Vec<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Var {
        name: String,
        value: String,
    }
    serde_json::from_value::<Vec<Var>>(config["inputs"]["env"].clone())
        .map(|vars| vars.into_iter().map(|v| (v.name, v.value)).collect())
        .unwrap_or_default()
}

/// Reads a receipt log (verified or not: the caller decides) into [`Recorded`], all but
/// its verdict records: what grading reads.
pub(crate) fn read(dir: &Path) -> Result<Recorded, ReplayError> {
    let failed = |source| ReplayError::Read {
        dir: dir.to_path_buf(),
        source,
    };
    let log = ReceiptLog::open(dir).map_err(failed)?;
    let mut fold = Fold::new(dir, log.clone(), false);
    for entry in log.entries().map_err(failed)? {
        fold.push(entry.map_err(failed)?)?;
    }
    Ok(fold.recorded)
}

/// Verifies a receipt directory's chain and blobs and folds it into [`Recorded`] in the
/// same pass over its log: what `vac report` and `vac verify` read. A log that does not
/// verify is [`ReplayError::Broken`] whatever its records hold.
pub(crate) fn read_verified(dir: &Path, verdicts: bool) -> Result<Verified, ReplayError> {
    let failed = |source| ReplayError::Read {
        dir: dir.to_path_buf(),
        source,
    };
    let started = std::time::Instant::now();
    let log = ReceiptLog::open(dir).map_err(failed)?;
    let mut fold = Fold::new(dir, log, verdicts);
    let mut folding = std::time::Duration::ZERO;
    let mut refused = None;
    let chain = vac_receipts::verify_each(dir, &vac_receipts::VerifyOptions::default(), |entry| {
        if refused.is_none() {
            let at = std::time::Instant::now();
            refused = fold.push(entry).err();
            folding += at.elapsed();
        }
    })
    .map_err(|source| ReplayError::Broken {
        dir: dir.to_path_buf(),
        source,
    })?;
    if let Some(error) = refused {
        return Err(error);
    }
    let pass = started.elapsed();
    Ok(Verified {
        chain,
        recorded: fold.recorded,
        chain_time: pass.saturating_sub(folding),
        fold_time: folding,
    })
}

/// A verified log folded into [`Recorded`], with what the chain check covered and how
/// the pass's time divides between checking the chain and folding the records.
pub(crate) struct Verified {
    pub(crate) chain: vac_receipts::VerifyReport,
    pub(crate) recorded: Recorded,
    /// Reading, hashing and parsing the log, and re-hashing its blobs.
    pub(crate) chain_time: std::time::Duration,
    /// Folding the parsed records into runs and their evidence.
    pub(crate) fold_time: std::time::Duration,
}

/// Folds a log's records, one at a time and in order, into [`Recorded`].
struct Fold<'a> {
    dir: &'a Path,
    log: ReceiptLog,
    verdicts: bool,
    recorded: Recorded,
    open: Option<RunBuilder>,
    manifests: super::vocab::Manifests,
}

impl<'a> Fold<'a> {
    fn new(dir: &'a Path, log: ReceiptLog, verdicts: bool) -> Self {
        Fold {
            dir,
            log,
            verdicts,
            recorded: Recorded::default(),
            open: None,
            manifests: Default::default(),
        }
    }

    fn push(&mut self, entry: vac_receipts::Entry) -> Result<(), ReplayError> {
        let Fold {
            dir,
            log,
            verdicts,
            recorded,
            open,
            manifests,
        } = self;
        let (dir, verdicts) = (*dir, *verdicts);
        let record = entry.record;
        let seq = record.seq;
        match record.body {
            Body::CampaignStart(start) => recorded.env = recorded_env(&start.config),
            Body::RunStart(start) => {
                recorded.target.get_or_insert(start.target);
                let role = match start.role {
                    vac_receipts::Role::Control => Role::Control,
                    vac_receipts::Role::Subject => Role::Subject,
                    vac_receipts::Role::Relaunch => Role::Relaunch,
                };
                *open = Some(RunBuilder::new(start.run_id, role, None));
            }
            Body::SandboxConfig(config) => {
                if let Some(run) = open.as_mut().filter(|r| r.id() == config.run_id) {
                    run.tool(config.config["tool"].as_str().map(str::to_string));
                }
            }
            Body::Event(event) => {
                let Some(run) = open.as_mut().filter(|r| r.id() == event.run_id) else {
                    return Err(ReplayError::Stray {
                        dir: dir.to_path_buf(),
                        seq,
                        run: event.run_id,
                    });
                };
                let payloads = event
                    .payloads
                    .iter()
                    .map(|p| log.payload_bytes(p))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|source| ReplayError::Payload {
                        dir: dir.to_path_buf(),
                        seq,
                        source,
                    })?;
                run.event(event.event.get(), payloads)
                    .map_err(|source| ReplayError::Event {
                        dir: dir.to_path_buf(),
                        seq,
                        source,
                    })?;
            }
            Body::SelfTest(test) => {
                let Some(run) = open.as_mut().filter(|r| r.id() == test.run_id) else {
                    return Err(ReplayError::Stray {
                        dir: dir.to_path_buf(),
                        seq,
                        run: test.run_id,
                    });
                };
                let detail = test.detail;
                let reading = match test.status {
                    SensorStatus::Live => Reading::Live(detail),
                    SensorStatus::Blind => Reading::Blind(detail),
                    SensorStatus::CapabilityAbsent => Reading::Absent(detail),
                    SensorStatus::Failed => Reading::Failed(detail),
                };
                run.self_test(&test.sensor, reading);
            }
            Body::RunEnd(end) => {
                if let Some(run) = open.take_if(|r| r.id() == end.run_id) {
                    let mut output = run.finish();
                    manifests.share(&mut output);
                    recorded.runs.push(output);
                }
            }
            Body::Contract(contract) => recorded.contract = Some(contract),
            Body::Plan(plan) => {
                recorded.plan =
                    Some(
                        serde_json::from_value(plan.plan).map_err(|source| ReplayError::Plan {
                            dir: dir.to_path_buf(),
                            seq,
                            source,
                        })?,
                    )
            }
            Body::Verdict(verdict) if verdicts => recorded.verdicts.push((seq, verdict)),
            // Logs of the first wave hold `effect` records of another kind: not a profile.
            Body::Effect(effect) if verdicts && effect.sensor == "profile" => {
                recorded.profile.push((seq, effect))
            }
            // What the server's frames show of its conformance and of text on its stdout;
            // a frame the receipts keep a prefix of is judged by its length alone.
            Body::Frame(frame) if frame.direction != vac_receipts::Direction::Stderr => {
                use vac_receipts::Direction::FromServer;
                if frame.bytes.is_truncated() {
                    if frame.direction == FromServer {
                        let conformance = &mut recorded.conformance;
                        conformance.truncated(&frame.run_id, seq, frame.bytes.len);
                    }
                    return Ok(());
                }
                let bytes =
                    log.payload_bytes(&frame.bytes)
                        .map_err(|source| ReplayError::Payload {
                            dir: dir.to_path_buf(),
                            seq,
                            source,
                        })?;
                if frame.direction != FromServer {
                    recorded.conformance.sent(&frame.run_id, seq, &bytes);
                    return Ok(());
                }
                let noise = recorded.conformance.received(&frame.run_id, seq, &bytes);
                // Text that is not JSON-RPC is stdout's noise; over HTTP a body that is not a
                // message (an error page, a 202's "Accepted") is kept, but is no stdout.
                let http = recorded
                    .target
                    .as_deref()
                    .is_some_and(super::target::described_http);
                if let Some(detail) = noise.filter(|_| !http) {
                    let noise = &mut recorded.noise;
                    noise.lines += 1;
                    if noise.first.is_none() {
                        let text = String::from_utf8_lossy(&bytes);
                        noise.first = Some(json!({
                            "run": frame.run_id,
                            "seq": seq,
                            "excerpt": text.trim_end().chars().take(200).collect::<String>(),
                            "why": detail,
                        }));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Grades what the receipts hold. `receipts` and `head` are what the report names.
pub(crate) fn grade(
    recorded: &Recorded,
    dir: &Path,
    head: String,
) -> Result<ProbeReport, ReplayError> {
    let incomplete = |what| ReplayError::Incomplete {
        dir: dir.to_path_buf(),
        what,
    };
    let control = recorded
        .runs
        .iter()
        .find(|r| r.role == Role::Control)
        .ok_or_else(|| incomplete("no complete control run"))?;
    let mut report = ProbeReport {
        target: recorded.target.clone().unwrap_or_default(),
        receipts: dir.to_path_buf(),
        head,
        contract: String::new(),
        protocol_version: control.protocol_version.clone(),
        tools: 0,
        manifest: None,
        failure: None,
        grades: None,
        runs: recorded.runs.iter().map(summary).collect(),
        stdout_noise: recorded.noise.clone(),
        conformance: recorded.conformance.findings(&recorded.runs),
        isolation: record::Isolated::new(),
        profile: Default::default(),
        answers: best_answers(&recorded.runs),
    };
    let Some((decls, malformed)) = manifest(control) else {
        let why = control
            .failure
            .as_ref()
            .map_or("the server returned no tools/list".into(), |f| {
                f.detail.clone()
            });
        report.failure = Some(why);
        return Ok(report);
    };
    report.tools = decls.len();
    report.manifest = control
        .tools
        .as_ref()
        .map(|t| json!({"pages": t.pages, "complete": t.complete, "malformed": malformed.len()}));
    let recorded_contract = recorded
        .contract
        .as_ref()
        .ok_or_else(|| incomplete("a manifest but no contract"))?;
    let plan = recorded
        .plan
        .as_ref()
        .ok_or_else(|| incomplete("a contract but no plan"))?;
    let contract = if let Some(derivation) = Derivation::of_record(&recorded_contract.name) {
        let (derived, text) = derivation.derive(
            &decls,
            &plan.lab.lab_paths(),
            control,
            &plan.target,
            &recorded.env,
        );
        match (
            text == recorded_contract.text,
            plan.rules == vac_contracts::RULES,
        ) {
            (true, _) => derived,
            (false, true) => {
                return Err(ReplayError::DerivedMismatch {
                    dir: dir.to_path_buf(),
                    name: recorded_contract.name.clone(),
                    rules: plan.rules,
                });
            }
            // Derived under other rules: the recorded document is what was graded
            // against, and it parses and resolves as any written contract does.
            (false, false) => {
                ContractDocument::parse(&recorded_contract.name, &recorded_contract.text)?
                    .resolve(&decls, &plan.lab.lab_paths())?
            }
        }
    } else {
        ContractDocument::parse(&recorded_contract.name, &recorded_contract.text)?
            .resolve(&decls, &plan.lab.lab_paths())?
    };
    report.contract = recorded_contract.blake3.to_hex();
    let compiled = contract.compile()?;
    let mut observation = observe::start(control, &plan.lab);
    observation
        .not_called
        .extend(plan.not_called.iter().cloned());
    observation
        .errors
        .extend(plan.malformed.iter().map(malformed_error));
    let subjects: Vec<&RunOutput> = recorded
        .runs
        .iter()
        .filter(|r| r.role == Role::Subject)
        .collect();
    if plan.runs.iter().any(|r| r.scope == Scope::Shared) {
        report.isolation = adaptive(&mut observation, plan, &subjects, control, dir)?;
    } else {
        for subject in subjects {
            observe::add(&mut observation, subject, control, &plan.lab);
        }
    }
    // An intent contract grades the server's own launch as a row after its tools; its one
    // call is numbered after every call planned or made.
    let relaunches: Vec<&RunOutput> = recorded
        .runs
        .iter()
        .filter(|r| r.role == Role::Relaunch)
        .collect();
    // What a relaunch showed of the manifest: each tool whose entry differs from the
    // control's (the one reviewed) is a `manifest.stable` effect of that tool.
    for relaunch in &relaunches {
        observation
            .effects
            .extend(super::shown::relaunch_effects(relaunch, control));
    }
    let row = server_row(&decls);
    if compiled.tools().any(|t| t == row) {
        let planned = plan.runs.iter().map(|r| r.first_index + r.calls.len());
        let made = observation.calls.iter().map(|c| c.index + 1);
        let index = planned.chain(made).max().unwrap_or(0);
        let launches: Vec<&RunOutput> = std::iter::once(control)
            .chain(relaunches.iter().copied())
            .collect();
        let later: Vec<&RunOutput> = recorded
            .runs
            .iter()
            .filter(|r| r.role != Role::Control)
            .collect();
        observe::launch(&mut observation, &launches, &later, &plan.lab, &row, index);
    }
    report.profile = profile(&observation, compiled.tools());
    report.grades = Some(grade_cells(&compiled, &observation)?);
    Ok(report)
}

/// An adaptive plan's shared runs with their recorded runs: the subject runs with no tool,
/// recorded in plan order.
pub(crate) fn shared_runs<'a>(
    plan: &'a ProbePlan,
    runs: impl IntoIterator<Item = &'a RunOutput>,
) -> impl Iterator<Item = (&'a PlannedRun, &'a RunOutput)> {
    let planned = plan.runs.iter().filter(|r| r.scope == Scope::Shared);
    let recorded = runs
        .into_iter()
        .filter(|r| r.role == Role::Subject && r.tool.is_none());
    planned.zip(recorded)
}

/// Adds an adaptive plan's runs: the shared runs' blocks they attribute without doubt, and
/// for each other tool its own run. Returns, per tool, the run it is graded on and why.
fn adaptive(
    observation: &mut vac_contracts::Observation,
    plan: &ProbePlan,
    subjects: &[&RunOutput],
    control: &RunOutput,
    dir: &Path,
) -> Result<record::Isolated, ReplayError> {
    let inconsistent = |detail: String| ReplayError::Adaptive {
        dir: dir.to_path_buf(),
        detail,
    };
    let lab = &plan.lab;
    let planned = plan
        .runs
        .iter()
        .filter(|r| r.scope == Scope::Shared)
        .count();
    let recorded = subjects.iter().filter(|r| r.tool.is_none()).count();
    if recorded != planned {
        return Err(inconsistent(format!(
            "the plan has {planned} shared runs, the receipts {recorded}"
        )));
    }
    let mut isolated = record::Isolated::new();
    for (planned, shared) in shared_runs(plan, subjects.iter().copied()) {
        let assessed = super::adaptive::assess(planned, shared, control, lab);
        let accepted: Vec<&[usize]> = assessed
            .iter()
            .filter(|a| a.doubt.is_none())
            .map(|a| a.calls.as_slice())
            .collect();
        observe::add_blocks(observation, shared, control, lab, &accepted);
        for block in &assessed {
            let own = subjects
                .iter()
                .find(|r| r.tool.as_deref() == Some(block.tool.as_str()));
            let graded_on = match (&block.doubt, own) {
                (None, None) => {
                    json!({"mode": "adaptive", "graded_on": "shared run", "run": shared.id})
                }
                (Some(doubt), Some(own)) => json!({"mode": "adaptive", "graded_on": "own run",
                    "run": own.id, "shared_run": shared.id, "doubt": doubt}),
                (None, Some(own)) => {
                    return Err(inconsistent(format!(
                        "run {} re-ran tool {:?}, which shared run {} attributes without doubt",
                        own.id, block.tool, shared.id
                    )));
                }
                (Some(doubt), None) => {
                    return Err(inconsistent(format!(
                        "shared run {} leaves tool {:?} in doubt ({doubt}), and it has no run of its own",
                        shared.id, block.tool
                    )));
                }
            };
            isolated.insert(block.tool.clone(), graded_on);
        }
    }
    for subject in subjects.iter().filter(|r| r.tool.is_some()) {
        observe::add(observation, subject, control, lab);
    }
    Ok(isolated)
}

fn malformed_error(tool: &MalformedTool) -> RunError {
    RunError {
        tool: Some(tool.name.clone()),
        kind: ErrorKind::MalformedTool,
        detail: vac_contracts::evidence::Failure::MalformedTool {
            index: tool.index,
            error: tool.error.clone(),
            raw: tool.raw.clone(),
        },
    }
}

/// Verifies a receipt directory, then grades it: what `vac report` shows.
pub fn report(dir: &Path) -> Result<ProbeReport, ReplayError> {
    let verified = read_verified(dir, false)?;
    grade(
        &verified.recorded,
        &canonical(dir),
        verified.chain.head.to_hex(),
    )
}

/// A verdict record the recorded evidence does not support.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictMismatch {
    /// The record's sequence number (`None`: a cell the records lack).
    pub seq: Option<u64>,
    pub tool: String,
    pub clause: String,
    pub detail: String,
    /// The verdict the record holds and the one re-grading gives, where they differ
    /// (`None`: the same verdict for another reason or evidence, or no record to compare).
    pub changed: Option<(VerdictKind, VerdictKind)>,
}

/// What re-grading a verified directory found: the verdict records the recorded
/// observations do not give (empty: they agree), and the rules revision the receipts were
/// graded under.
#[derive(Debug, Clone, PartialEq)]
pub struct Regraded {
    pub mismatches: Vec<VerdictMismatch>,
    /// [`vac_contracts::RULES`] as the plan records it (0 before it was recorded).
    pub graded_under: u32,
    /// What the chain check covered.
    pub chain: vac_receipts::VerifyReport,
    pub timings: CheckTimings,
}

/// Where the time of checking one receipt directory went.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CheckTimings {
    /// Reading, hashing and parsing the log and re-hashing its blobs: the chain check.
    pub chain: std::time::Duration,
    /// Folding the records into runs and evidence, grading them and comparing verdicts.
    pub regrade: std::time::Duration,
}

impl Regraded {
    /// The receipts were graded under other rules than this vac's: differences may be
    /// rule changes, not tampering (which the hash chain shows).
    pub fn other_rules(&self) -> bool {
        self.graded_under != vac_contracts::RULES
    }
}

/// Re-grades a verified directory and compares the verdict records the probe wrote with
/// what the recorded observations give, cell for cell.
pub fn check_verdicts(dir: &Path) -> Result<Regraded, ReplayError> {
    let Verified {
        chain,
        recorded,
        chain_time,
        fold_time,
    } = read_verified(dir, true)?;
    let grading = std::time::Instant::now();
    let head = chain.head.to_hex();
    let graded_under = recorded.plan.as_ref().map_or(0, |p| p.rules);
    let regraded = |mismatches| Regraded {
        mismatches,
        graded_under,
        chain: chain.clone(),
        timings: CheckTimings {
            chain: chain_time,
            regrade: fold_time + grading.elapsed(),
        },
    };
    let report = match grade(&recorded, dir, head) {
        // A log with no verdict records and nothing to grade (a crash before the contract,
        // a log that is not a probe's) claims nothing to check.
        Err(ReplayError::Incomplete { .. }) if recorded.verdicts.is_empty() => {
            return Ok(regraded(Vec::new()));
        }
        graded => graded?,
    };
    let (expected, profile) = match (&report.grades, recorded.runs.last()) {
        (Some(grades), Some(last)) => (
            record::verdict_records(&last.id, grades, &report.contract, &report.isolation),
            record::profile_records(&last.id, &report.profile),
        ),
        _ => (Vec::new(), Vec::new()),
    };
    let mut mismatches = Vec::new();
    // Each recorded cell is set against the re-graded cell of the same tool and clause, so
    // that a cell that appears or goes does not shift every later one.
    let (pairs, left) = pair_by(
        recorded.verdicts.iter().map(|(_, v)| (&v.tool, &v.clause)),
        expected.iter().map(|v| (&v.tool, &v.clause)),
    );
    for ((seq, found), paired) in recorded.verdicts.iter().zip(pairs) {
        let mismatch = |detail: String, changed| VerdictMismatch {
            seq: Some(*seq),
            tool: found.tool.clone(),
            clause: found.clause.clone(),
            detail,
            changed,
        };
        match paired.map(|i| &expected[i]) {
            Some(want) if want == found => {}
            Some(want) => mismatches.push(mismatch(
                difference(want, found),
                (want.verdict != found.verdict).then_some((found.verdict, want.verdict)),
            )),
            None => mismatches.push(mismatch("no such cell in the re-graded grid".into(), None)),
        }
    }
    for want in left.into_iter().map(|i| &expected[i]) {
        mismatches.push(VerdictMismatch {
            seq: None,
            tool: want.tool.clone(),
            clause: want.clause.clone(),
            detail: format!(
                "re-grading gives {:?}, the log has no record of it",
                want.verdict
            ),
            changed: None,
        });
    }
    // Receipts written before profiles were recorded hold none: nothing to check. Once
    // one is there, the whole list must be the one the evidence gives.
    if !recorded.profile.is_empty() {
        mismatches.extend(profile_mismatches(&recorded.profile, &profile));
    }
    Ok(regraded(mismatches))
}

/// Pairs each recorded item with the expected item of the same key, in order among equal
/// keys: for each recorded item the index of its expected one (`None`: the re-grading has
/// none), and the expected indices no recorded item took, in order.
fn pair_by<K: Eq + std::hash::Hash>(
    recorded: impl Iterator<Item = K>,
    expected: impl Iterator<Item = K>,
) -> (Vec<Option<usize>>, Vec<usize>) {
    let mut open: std::collections::HashMap<K, std::collections::VecDeque<usize>> =
        std::collections::HashMap::new();
    let mut count = 0;
    for (i, key) in expected.enumerate() {
        open.entry(key).or_default().push_back(i);
        count = i + 1;
    }
    let pairs: Vec<Option<usize>> = recorded
        .map(|key| {
            open.get_mut(&key)
                .and_then(std::collections::VecDeque::pop_front)
        })
        .collect();
    let mut taken = vec![false; count];
    for i in pairs.iter().flatten() {
        taken[*i] = true;
    }
    let left = (0..count).filter(|i| !taken[*i]).collect();
    (pairs, left)
}

/// The recorded behaviour profile against the re-derived one, record for record; a
/// mismatch's clause is `profile` and its tool the one the record names.
fn profile_mismatches(
    recorded: &[(u64, vac_receipts::Effect)],
    expected: &[vac_receipts::Effect],
) -> Vec<VerdictMismatch> {
    let read = |e: &vac_receipts::Effect| vac_contracts::evidence::ProfileLine::read(&e.detail);
    let tool = |e: &vac_receipts::Effect| read(e).map(|l| l.tool).unwrap_or_default();
    let line = |e: &vac_receipts::Effect| match read(e) {
        Some(l) => format!("{} {} ({} distinct)", e.class, e.target, l.distinct),
        None => format!("{} {} (not a profile line)", e.class, e.target),
    };
    let mut mismatches = Vec::new();
    // By tool and kind of line, in order within them: an edited target is one line that
    // differs, a line that appears or goes shifts none of another tool's or kind's.
    let key = |e: &vac_receipts::Effect| (tool(e), e.class.clone());
    let (pairs, left) = pair_by(
        recorded.iter().map(|(_, e)| key(e)),
        expected.iter().map(key),
    );
    for ((seq, found), paired) in recorded.iter().zip(pairs) {
        let detail = match paired.map(|i| &expected[i]) {
            Some(want) if want == found => continue,
            Some(want) => format!(
                "the profile record says {} {}, the evidence gives {} {}",
                tool(found),
                line(found),
                tool(want),
                line(want)
            ),
            None => format!("the evidence gives no such profile line: {}", line(found)),
        };
        mismatches.push(VerdictMismatch {
            seq: Some(*seq),
            tool: tool(found),
            clause: "profile".into(),
            detail,
            changed: None,
        });
    }
    for want in left.into_iter().map(|i| &expected[i]) {
        mismatches.push(VerdictMismatch {
            seq: None,
            tool: tool(want),
            clause: "profile".into(),
            detail: format!(
                "the evidence gives {}, the log has no record of it",
                line(want)
            ),
            changed: None,
        });
    }
    mismatches
}

fn difference(want: &vac_receipts::Verdict, found: &vac_receipts::Verdict) -> String {
    let as_json = |v: &vac_receipts::Verdict| serde_json::to_value(v).unwrap_or(Value::Null);
    let (want, found) = (as_json(want), as_json(found));
    let fields = ["tool", "clause", "verdict", "reason", "evidence", "run_id"];
    let differing: Vec<&str> = fields
        .into_iter()
        .filter(|f| want[*f] != found[*f])
        .collect();
    format!(
        "the record says {} / {}, the evidence gives {} / {} (differs in {})",
        found["verdict"],
        found["reason"],
        want["verdict"],
        want["reason"],
        differing.join(", ")
    )
}

pub(crate) fn verified_head(dir: &Path) -> Result<String, ReplayError> {
    let verified =
        vac_receipts::verify(dir, &vac_receipts::VerifyOptions::default()).map_err(|source| {
            ReplayError::Broken {
                dir: dir.to_path_buf(),
                source,
            }
        })?;
    Ok(verified.head.to_hex())
}

/// The directory as reports name it: absolute, so a probe and a report of the same
/// directory say the same whatever the working directory.
pub(crate) fn canonical(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// A data case of [`observe_case`] that cannot be read, by line.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    #[error("line {line}: {source}")]
    Json {
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("line {line}: run must be control or subject, not {found:?}")]
    Run { line: usize, found: Option<String> },
    #[error("line {line}: {source}")]
    Event {
        line: usize,
        #[source]
        source: super::event::EventError,
    },
    #[error("no {{\"lab\": …}} line")]
    NoLab,
}

/// The subtraction and attribution stage on recorded events, for data-driven tests: lines
/// of `{"lab": …}` (the plan's lab) and `{"run": "control"|"subject", "tool": …, "event":
/// …, "payloads": ["text", …]}`; the result lists the subject's attributable effects
/// (`class`, `path`, `attribution`; `canary` for reads, `argv` for execs) and the control's subtracted
/// ones (`class`, `path`).
pub fn observe_case(lines: &str) -> Result<Value, CaseError> {
    let mut lab: Option<super::vocab::LabRecord> = None;
    let mut control = RunBuilder::new("control".into(), Role::Control, None);
    let mut subject = RunBuilder::new("subject".into(), Role::Subject, None);
    for (number, line) in lines
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let line_number = number + 1;
        let json = |source| CaseError::Json {
            line: line_number,
            source,
        };
        let value: Value = serde_json::from_str(line).map_err(json)?;
        if let Some(record) = value.get("lab") {
            lab = Some(serde_json::from_value(record.clone()).map_err(json)?);
            continue;
        }
        let run = match value["run"].as_str() {
            Some("control") => &mut control,
            Some("subject") => &mut subject,
            other => {
                return Err(CaseError::Run {
                    line: line_number,
                    found: other.map(str::to_owned),
                });
            }
        };
        if let Some(tool) = value["tool"].as_str() {
            run.tool(Some(tool.to_string()));
        }
        let payloads = value["payloads"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| p.as_str().unwrap_or_default().as_bytes().to_vec())
            .collect();
        run.event(&value["event"].to_string(), payloads)
            .map_err(|source| CaseError::Event {
                line: line_number,
                source,
            })?;
    }
    let lab = lab.ok_or(CaseError::NoLab)?;
    let (control, subject) = (control.finish(), subject.finish());
    let mut observation = observe::start(&control, &lab);
    observe::add(&mut observation, &subject, &control, &lab);
    let effect = |e: &vac_contracts::Effect| {
        let mut shown = json!({"class": e.class, "path": e.path, "attribution": e.attribution});
        match &e.detail {
            vac_contracts::Evidence::Read(read) => shown["canary"] = json!(read.canary),
            vac_contracts::Evidence::Exec(exec) => shown["argv"] = json!(exec.argv),
            _ => {}
        }
        shown
    };
    Ok(json!({
        "effects": observation.effects.iter().map(effect).collect::<Vec<_>>(),
        "control_subtracted": observation.control_subtracted.iter()
            .map(|e| json!({"class": e.class, "path": e.path})).collect::<Vec<_>>(),
    }))
}

/// What each tool was seen to do, whatever its contract says (its behaviour profile): per
/// kind of effect, the distinct targets its calls had, at most [`PROFILE_ENTRIES`] each
/// with the count of the rest. So "promises nothing" never hides "does this".
pub(crate) fn profile<'a>(
    observation: &vac_contracts::Observation,
    tools: impl Iterator<Item = &'a str>,
) -> std::collections::BTreeMap<String, Value> {
    use vac_contracts::EffectClass as C;
    let kind = |class: C| match class {
        c if c.is_fs() => "writes",
        C::Read => "reads",
        C::Exec => "execs",
        C::Connect | C::Dns | C::Udp => "reaches",
        C::Listen => "listens",
        C::SecretInResult => "secrets_shown",
        C::InstructionInResult => "instructions_shown",
        _ => "manifest_changes",
    };
    fn tool_of<'o>(
        observation: &'o vac_contracts::Observation,
        effect: &'o vac_contracts::Effect,
    ) -> Option<&'o str> {
        match effect.class {
            vac_contracts::EffectClass::ManifestChanged => Some(effect.path.as_str()),
            _ => effect.attribution.call_index().and_then(|i| {
                observation
                    .calls
                    .iter()
                    .find(|c| c.index == i)
                    .map(|c| c.tool.as_str())
            }),
        }
    }
    let mut profile = std::collections::BTreeMap::new();
    for tool in tools {
        let mut kinds: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for effect in observation
            .effects
            .iter()
            .filter(|e| tool_of(observation, e) == Some(tool))
        {
            let targets = kinds.entry(kind(effect.class)).or_default();
            if !targets.contains(&effect.path.as_str()) {
                targets.push(&effect.path);
            }
        }
        let shown: serde_json::Map<String, Value> = kinds
            .into_iter()
            .map(|(kind, targets)| {
                let more = targets.len().saturating_sub(PROFILE_ENTRIES);
                let first: Vec<&str> = targets.into_iter().take(PROFILE_ENTRIES).collect();
                (kind.to_owned(), json!({"targets": first, "omitted": more}))
            })
            .collect();
        profile.insert(tool.to_owned(), Value::Object(shown));
    }
    profile
}

/// Targets listed per tool and kind in a behaviour profile.
const PROFILE_ENTRIES: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell that appears or goes under other rules is one difference, not a shift of
    /// every later cell: items pair by key, in order among equal keys.
    #[test]
    fn recorded_and_regraded_records_pair_by_key_not_position() {
        let (pairs, left) = pair_by(
            ["a", "b", "c", "c"].into_iter(),
            ["a", "c", "d", "c"].into_iter(),
        );
        assert_eq!(pairs, [Some(0), None, Some(1), Some(3)]);
        assert_eq!(left, [2]);
        let (pairs, left) = pair_by(std::iter::empty::<&str>(), ["x"].into_iter());
        assert!(pairs.is_empty());
        assert_eq!(left, [0]);
    }
}
