//! Campaigns (SPEC §3.11, `harness/CAMPAIGNS.md`): many targets, each probed `repetitions`
//! times, into one receipt directory whose own chain lists every probe by its head.
//!
//! A campaign directory holds one probe directory per target × repetition
//! (`<id>/rep-<k>/`, each an ordinary sealed probe log) and, at the top, the campaign's
//! `receipts.jsonl`: a `campaign_start` whose configuration carries the campaign file's
//! text whole, then one `member` record per probe in plan order (target id, then
//! repetition) — written, and synced, only once that probe is sealed — then the seal. So:
//! - **resume** ([`resume`]) after a crash or `kill -9` cuts a torn tail back, keeps every
//!   probe a member record vouches for, and runs only the rest again (a half-written probe
//!   directory is removed first);
//! - **shards** ([`Shard`]) split the targets by a stable hash of their id, each shard a
//!   campaign directory of its own; [`merge`] checks they are one campaign's, cover every
//!   target once, and writes a directory whose chain lists the shards' heads and every
//!   probe's;
//! - readers (`vac verify`, `vac report`, `vac static`, the analysis crate) read exactly the
//!   members the chain lists and check each member's head against it.

pub mod deploy;
mod file;
pub mod import;
mod lock;
mod merge;
mod pack;
pub use merge::merge;

pub use pack::{PackSummary, pack_probes};

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use vac_receipts::{Body, Member, ReceiptWriter, WriterOptions};

pub use file::{Budgets, Campaign, CampaignError, CampaignTarget, TargetKind};

use crate::exit::Exit;
use crate::probe::{ContractSource, ProbeOptions};

/// The key of a campaign log's configuration (`campaign_start.config.campaign`).
pub const CONFIG_KEY: &str = "campaign";

/// One shard of a campaign: the targets whose stable hash is `index` modulo `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based.
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// `K/N`, 0-based: `0/3`, `1/3`, `2/3`.
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let bad = || ShardError::Bad(text.to_owned());
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            k.trim().parse::<u32>().map_err(|_| bad())?,
            n.trim().parse::<u32>().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// The shard a batch scheduler assigned, from its environment: a Kubernetes Indexed
    /// Job's `JOB_COMPLETION_INDEX` with the count from `shards` or `VAC_SHARDS` (Kubernetes
    /// gives no count), or a Slurm job array's `SLURM_ARRAY_TASK_ID` with
    /// `SLURM_ARRAY_TASK_MIN`, `_STEP` (default 1) and `_COUNT`. `None` when neither is set.
    pub fn from_env(
        env: &dyn Fn(&str) -> Option<String>,
        shards: Option<u32>,
    ) -> Result<Option<Shard>, ShardError> {
        let number = |name: &'static str| -> Result<Option<u32>, ShardError> {
            match env(name) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse::<u32>()
                    .map(Some)
                    .map_err(|_| ShardError::NotANumber { name, value: v }),
            }
        };
        if let Some(index) = number("JOB_COMPLETION_INDEX")? {
            let count = match shards {
                Some(n) => n,
                None => number("VAC_SHARDS")?.ok_or(ShardError::NoCount {
                    set: "JOB_COMPLETION_INDEX",
                    give: "--shards N or VAC_SHARDS",
                })?,
            };
            return Shard::parse(&format!("{index}/{count}")).map(Some);
        }
        if let Some(task) = number("SLURM_ARRAY_TASK_ID")? {
            let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let step = number("SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1);
            let count = number("SLURM_ARRAY_TASK_COUNT")?.ok_or(ShardError::NoCount {
                set: "SLURM_ARRAY_TASK_ID",
                give: "SLURM_ARRAY_TASK_COUNT",
            })?;
            if task < min || (task - min) % step != 0 {
                return Err(ShardError::OffStep { task, min, step });
            }
            return Shard::parse(&format!("{}/{count}", (task - min) / step)).map(Some);
        }
        Ok(None)
    }

    /// Whether target `id` belongs to this shard: blake3 of the id, its first 8 bytes as a
    /// little-endian integer, modulo the count. Stable across machines and vac versions.
    pub fn holds(&self, id: &str) -> bool {
        let hash = blake3::hash(id.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&hash.as_bytes()[..8]);
        u64::from_le_bytes(first) % u64::from(self.count) == u64::from(self.index)
    }

    /// The directory a shard writes under the campaign's `out`.
    pub fn dir_name(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }
}

/// A shard that is not one: a bad `--shard`, or a scheduler's environment that names none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("--shard {0:?}: expected K/N with 0 ≤ K < N (0-based)")]
    Bad(String),
    #[error("{name}={value:?} is not a number")]
    NotANumber { name: &'static str, value: String },
    #[error("{set} is set but the shard count is not: give {give}")]
    NoCount {
        set: &'static str,
        give: &'static str,
    },
    #[error("SLURM_ARRAY_TASK_ID={task} is not MIN {min} plus a multiple of STEP {step}")]
    OffStep { task: u32, min: u32, step: u32 },
}

/// How a campaign run went, member by member, in plan order.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub dir: PathBuf,
    pub members: Vec<Member>,
    /// Members a resume found done and kept.
    pub kept: usize,
    /// What a resume cut from the log's tail, if anything.
    pub cut: Option<String>,
}

impl Outcome {
    /// How a campaign exits ([`Exit::of_campaign`] over its members).
    pub fn exit(&self) -> Exit {
        Exit::of_campaign(self.members.iter().map(member_exit))
    }
}

/// How one member of a campaign ended, as its record says: its probe's exit, and never
/// clean when it did not complete.
pub fn member_exit(member: &Member) -> Exit {
    match Exit::from_code(member.exit) {
        Some(Exit::Clean) if member.status != "completed" => Exit::Incomplete,
        Some(exit) => exit,
        None => Exit::Incomplete,
    }
}

/// Why a campaign could not run (bad campaign files are [`CampaignError`]s, before this).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{}: a campaign log is already there: resume it with `vac campaign resume {}`", .0.display(), .0.display())]
    Exists(PathBuf),
    #[error("{}: cannot write the campaign log", dir.display())]
    Receipts {
        dir: PathBuf,
        #[source]
        source: vac_receipts::WriteError,
    },
    #[error("{}: not a campaign log: {detail}", dir.display())]
    NotCampaign { dir: PathBuf, detail: String },
    #[error("{}: {detail}", dir.display())]
    Io { dir: PathBuf, detail: String },
    #[error(transparent)]
    Campaign(#[from] CampaignError),
    #[error("merge refused: {0}")]
    Merge(String),
    #[error("{}: the campaign is being written by {holder}; wait for it to end, or stop it first", dir.display())]
    Locked { dir: PathBuf, holder: String },
}

/// How a campaign shows its progress on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    Quiet,
    /// One line per finished probe (stderr is not a terminal).
    Lines,
    /// A bar: probes done of all, probes in flight, elapsed, eta (stderr is a terminal).
    Bar,
}

/// One planned probe: a target (by index into the campaign's) and a 1-based repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Planned {
    target: usize,
    repetition: u32,
}

/// Every target × repetition of `shard` (all without one), by target id, then repetition:
/// the order of the member records, whatever order the probes finish in.
fn plan(campaign: &Campaign, shard: Option<Shard>) -> Vec<Planned> {
    let mut targets: Vec<usize> = (0..campaign.targets.len())
        .filter(|&i| shard.is_none_or(|s| s.holds(&campaign.targets[i].id)))
        .collect();
    targets.sort_by(|&a, &b| campaign.targets[a].id.cmp(&campaign.targets[b].id));
    targets
        .into_iter()
        .flat_map(|target| {
            (1..=campaign.repetitions).map(move |repetition| Planned { target, repetition })
        })
        .collect()
}

/// Where a campaign (or one shard of it) writes.
pub fn out_dir(campaign: &Campaign, shard: Option<Shard>) -> PathBuf {
    match shard {
        None => campaign.out.clone(),
        Some(shard) => campaign.out.join(shard.dir_name()),
    }
}

/// The probe directory of a target × repetition, relative to the campaign directory.
fn member_dir(id: &str, repetition: u32) -> String {
    format!("{id}/rep-{repetition}")
}

/// A probe's seed: the campaign's seed, the target and the repetition, hashed.
fn probe_seed(seed: u64, id: &str, repetition: u32) -> u64 {
    let hash = blake3::hash(format!("{seed}\0{id}\0{repetition}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// The configuration recorded in the campaign's first record: the file whole, and what
/// a reader needs without parsing it again.
fn config(campaign: &Campaign, shard: Option<Shard>) -> Value {
    json!({CONFIG_KEY: {
        "vac_git": git_describe(),
        "provenance": provenance(campaign),
        "name": campaign.name,
        "file": campaign.file.display().to_string(),
        "text": campaign.text,
        "seed": campaign.seed,
        "repetitions": campaign.repetitions,
        "jobs": campaign.jobs,
        "isolation": campaign.isolation.as_str(),
        "shard": shard.map(|s| json!({"index": s.index, "count": s.count})),
        "targets": campaign.targets.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
    }})
}

/// What a reader needs to rerun the campaign beyond its file: the distribution, and for
/// every target the npm packages its command runs from (`name@version` from their
/// `package.json`) with the blake3 of the `package-lock.json` beside their `node_modules`.
fn provenance(campaign: &Campaign) -> Value {
    let distribution = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_owned())
        });
    let targets: Vec<Value> = campaign
        .targets
        .iter()
        .map(|t| {
            let words: Vec<&std::ffi::OsString> = match &t.kind {
                TargetKind::Stdio(command) | TargetKind::Http { command, .. } => {
                    command.iter().collect()
                }
                TargetKind::Url { .. } => Vec::new(),
            };
            let packages: Vec<Value> = words
                .iter()
                .filter_map(|w| npm_package(Path::new(w)))
                .collect();
            let venvs: Vec<Value> = words
                .iter()
                .filter_map(|w| python_venv(Path::new(w)))
                .collect();
            json!({"id": t.id, "packages": packages, "venvs": venvs})
        })
        .collect();
    json!({"distribution": distribution, "targets": targets})
}

/// The npm package a file belongs to: the directory right under the nearest
/// `node_modules` (or `node_modules/@scope`), its `package.json`'s name and version, and
/// the lock file of the install.
fn npm_package(file: &Path) -> Option<Value> {
    if !file.is_absolute() || !file.exists() {
        return None;
    }
    let parts: Vec<&std::ffi::OsStr> = file.iter().collect();
    let at = parts.iter().rposition(|p| *p == "node_modules")?;
    let scoped = parts.get(at + 1)?.to_string_lossy().starts_with('@');
    let depth = at + if scoped { 3 } else { 2 };
    let root: PathBuf = parts[..depth.min(parts.len())].iter().collect();
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("package.json")).ok()?).ok()?;
    let install: PathBuf = parts[..at].iter().collect();
    let lock = std::fs::read(install.join("package-lock.json"))
        .ok()
        .map(|bytes| blake3::hash(&bytes).to_hex().to_string());
    Some(json!({
        "package": format!("{}@{}", manifest["name"].as_str()?, manifest["version"].as_str()?),
        "lock_blake3": lock,
    }))
}

/// The Python venv a file belongs to (the nearest directory with a `pyvenv.cfg`): its
/// path, its Python version, and every distribution installed in it as `name==version`,
/// read from the `*.dist-info` directories, sorted, with the blake3 of that list.
fn python_venv(file: &Path) -> Option<Value> {
    if !file.is_absolute() || !file.exists() {
        return None;
    }
    let root = file.ancestors().find(|a| a.join("pyvenv.cfg").is_file())?;
    let config = std::fs::read_to_string(root.join("pyvenv.cfg")).ok()?;
    let version = config.lines().find_map(|l| {
        let (key, value) = l.split_once('=')?;
        (key.trim() == "version").then(|| value.trim().to_owned())
    });
    let mut installed = Vec::new();
    for lib in std::fs::read_dir(root.join("lib"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let site = lib.path().join("site-packages");
        for entry in std::fs::read_dir(&site).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".dist-info")
                && let Some((package, version)) = stem.split_once('-')
            {
                installed.push(format!("{package}=={version}"));
            }
        }
    }
    installed.sort();
    let listed = installed.join("\n");
    Some(json!({
        "venv": root.display().to_string(),
        "python": version,
        "distributions": installed,
        "distributions_blake3": blake3::hash(listed.as_bytes()).to_hex().to_string(),
    }))
}

/// `git describe` of the vac that runs, when it was built from a checkout.
fn git_describe() -> Option<&'static str> {
    Some(env!("VAC_GIT_DESCRIBE")).filter(|d| !d.is_empty())
}

/// Runs `campaign` (or one shard of it) into a new campaign directory.
pub async fn run(
    campaign: &Campaign,
    shard: Option<Shard>,
    progress: Progress,
) -> Result<Outcome, RunError> {
    let dir = out_dir(campaign, shard);
    let _writer = lock::WriterLock::take(&dir, true)?;
    if dir.join(vac_receipts::LOG_FILE).exists() {
        return Err(RunError::Exists(dir));
    }
    let start =
        crate::probe::campaign_start(&campaign.text, campaign.seed, config(campaign, shard));
    let writer =
        ReceiptWriter::create(&dir, WriterOptions::default(), start).map_err(|source| {
            RunError::Receipts {
                dir: dir.clone(),
                source,
            }
        })?;
    execute(campaign, shard, &dir, writer, Vec::new(), None, progress).await
}

/// What a campaign log's first record says: the campaign (its file text, parsed again as
/// the file it was read from) and the shard.
pub fn recorded(dir: &Path) -> Result<(Campaign, Option<Shard>), RunError> {
    let not = |detail: String| RunError::NotCampaign {
        dir: dir.to_path_buf(),
        detail,
    };
    let log = vac_receipts::ReceiptLog::open(dir).map_err(|e| not(e.to_string()))?;
    let first = log
        .entries()
        .map_err(|e| not(e.to_string()))?
        .next()
        .ok_or_else(|| not("the log is empty".into()))?
        .map_err(|e| not(e.to_string()))?;
    let Body::CampaignStart(start) = first.record.body else {
        return Err(not("the first record is not campaign_start".into()));
    };
    let config = start
        .config
        .get(CONFIG_KEY)
        .ok_or_else(|| not("a probe's log, not a campaign's".into()))?;
    let text = config["text"].as_str().unwrap_or_default();
    let file = PathBuf::from(config["file"].as_str().unwrap_or_default());
    let campaign = Campaign::parse(&file, text)?;
    let shard = config["shard"].as_object().map(|s| Shard {
        index: s["index"].as_u64().unwrap_or(0) as u32,
        count: s["count"].as_u64().unwrap_or(1) as u32,
    });
    Ok((campaign, shard))
}

/// The campaign file's text as the chain's first record holds it.
pub fn recorded_text(dir: &Path) -> Result<String, RunError> {
    recorded_config(dir)
        .and_then(|c| c["text"].as_str().map(str::to_owned))
        .ok_or_else(|| RunError::NotCampaign {
            dir: dir.to_path_buf(),
            detail: "no campaign file recorded in its first record".into(),
        })
}

/// Whether `dir` holds a campaign's log (not a probe's).
pub fn is_campaign(dir: &Path) -> bool {
    recorded_config(dir).is_some()
}

fn recorded_config(dir: &Path) -> Option<Value> {
    let log = vac_receipts::ReceiptLog::open(dir).ok()?;
    let first = log.entries().ok()?.next()?.ok()?;
    match first.record.body {
        Body::CampaignStart(start) => start.config.get(CONFIG_KEY).cloned(),
        _ => None,
    }
}

/// Continues a campaign directory after a crash: the verified prefix is kept (a torn tail
/// is cut and named), every probe a member record lists is kept, and the rest run again.
pub async fn resume(dir: &Path, progress: Progress) -> Result<Outcome, RunError> {
    let (campaign, shard) = recorded(dir)?;
    let _writer = lock::WriterLock::take(dir, false)?;
    let (writer, recovery) =
        ReceiptWriter::resume(dir, WriterOptions::default()).map_err(|source| {
            RunError::Receipts {
                dir: dir.to_path_buf(),
                source,
            }
        })?;
    let cut = recovery.problem.as_ref().map(|p| p.to_string());
    // The members the kept prefix lists.
    let log = vac_receipts::ReceiptLog::open(dir).map_err(|e| RunError::Io {
        dir: dir.to_path_buf(),
        detail: e.to_string(),
    })?;
    let mut done = Vec::new();
    for entry in log.entries().map_err(|e| RunError::Io {
        dir: dir.to_path_buf(),
        detail: e.to_string(),
    })? {
        let Ok(entry) = entry else { break };
        if entry.record.seq >= recovery.resume.next_seq {
            break;
        }
        if let Body::Member(member) = entry.record.body {
            done.push(member);
        }
    }
    execute(&campaign, shard, dir, writer, done, cut, progress).await
}

async fn execute(
    campaign: &Campaign,
    shard: Option<Shard>,
    dir: &Path,
    mut writer: ReceiptWriter,
    done: Vec<Member>,
    cut: Option<String>,
    progress: Progress,
) -> Result<Outcome, RunError> {
    let finished: HashSet<(String, u32)> = done
        .iter()
        .map(|m| (m.target.clone(), m.repetition))
        .collect();
    let todo: Vec<Planned> = plan(campaign, shard)
        .into_iter()
        .filter(|p| !finished.contains(&(campaign.targets[p.target].id.clone(), p.repetition)))
        .collect();
    let total = todo.len() + done.len();
    let kept = done.len();
    let mut members = done;
    // A probe directory without a member record is a crash's leftover: start it afresh.
    for p in &todo {
        let path = dir.join(member_dir(&campaign.targets[p.target].id, p.repetition));
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(|e| RunError::Io {
                dir: path.clone(),
                detail: format!("cannot remove a half-written probe: {e}"),
            })?;
        }
    }
    let started = std::time::Instant::now();
    let flying = std::sync::atomic::AtomicUsize::new(0);
    let bar = (progress == Progress::Bar).then(|| {
        let bar = indicatif::ProgressBar::new(total as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} probes · {msg} · eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_position(kept as u64);
        bar
    });
    // Up to `jobs` probes at once, each slot refilled as soon as its probe ends; their
    // member records are written in plan order, each once every earlier one is (a slow
    // probe holds back records, never the other slots: `buffered` held them too, and one
    // 30-minute server left a campaign one probe at a time).
    let mut results = futures_util::stream::iter(todo.iter().copied().enumerate())
        .map(|(at, p)| {
            let flying = &flying;
            let bar = bar.as_ref();
            async move {
                let now = flying.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                if let Some(bar) = bar {
                    bar.set_message(format!("{now} in flight"));
                }
                let member = probe_member(campaign, dir, p).await;
                flying.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                (at, member)
            }
        })
        .buffer_unordered(campaign.jobs.max(1));
    let mut ended: std::collections::BTreeMap<usize, Member> = Default::default();
    let mut next = 0;
    while let Some((at, member)) = results.next().await {
        ended.insert(at, member);
        while let Some(member) = ended.remove(&next) {
            next += 1;
            record_member(
                &mut writer,
                dir,
                member,
                &mut members,
                (bar.as_ref(), progress, total, started),
                &flying,
            )?;
        }
    }
    drop(results);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    writer.seal(None).map_err(|source| RunError::Receipts {
        dir: dir.to_path_buf(),
        source,
    })?;
    Ok(Outcome {
        dir: dir.to_path_buf(),
        members,
        kept,
        cut,
    })
}

/// Appends a finished probe's member record to the campaign chain and tells the user.
fn record_member(
    writer: &mut ReceiptWriter,
    dir: &Path,
    member: Member,
    members: &mut Vec<Member>,
    (bar, progress, total, started): (
        Option<&indicatif::ProgressBar>,
        Progress,
        usize,
        std::time::Instant,
    ),
    flying: &std::sync::atomic::AtomicUsize,
) -> Result<(), RunError> {
    writer
        .append(Body::Member(member.clone()))
        .map_err(|source| RunError::Receipts {
            dir: dir.to_path_buf(),
            source,
        })?;
    members.push(member);
    let m = members.last().expect("pushed");
    if let Some(bar) = bar {
        bar.inc(1);
        bar.set_message(format!(
            "{} in flight · last {} rep {}: {}",
            flying.load(std::sync::atomic::Ordering::Relaxed),
            m.target,
            m.repetition,
            m.status
        ));
    }
    if progress == Progress::Lines {
        eprintln!(
            "[{}/{total}] {} rep {}: {} (exit {}) {:.0?}",
            members.len(),
            m.target,
            m.repetition,
            m.status,
            m.exit,
            started.elapsed()
        );
    }
    Ok(())
}

/// The options of a probe of `target` (reached as `kind`, receipts into `out`): the
/// campaign's budgets, isolation and relaunches, the target's inputs, uid, protocol and
/// contract. The one place a campaign's file becomes a probe's options.
pub fn probe_options(
    campaign: &Campaign,
    target: &CampaignTarget,
    kind: crate::probe::Target,
    out: PathBuf,
) -> ProbeOptions {
    let budgets = campaign.budgets;
    let mut options = ProbeOptions::new(kind, out).with_timeout(budgets.timeout_seconds);
    options.max_calls_per_tool = budgets.calls_per_tool;
    options.max_tools = budgets.tools_per_server;
    // Each probe has the runs at once a probe alone has (one per core): a run mostly waits
    // (for an answer, for quiet), and each has its own memory and pids limits. A share of
    // the cores per probe left the twins' probes in `vac demo` one run at a time: one
    // shared run of every tool, then each own run after the last.
    options.isolation = campaign.isolation;
    options.relaunch = campaign.relaunch;
    options.max_calls = budgets.calls_per_server;
    options.inputs = target.inputs.clone();
    if let Some(uid) = target.uid {
        options.user = crate::probe::user_of(uid, None);
    }
    options.client.protocol = target.protocol.clone();
    options.derivation = target.derivation;
    options.contract = target.contract.as_ref().map(|(name, text)| ContractSource {
        name: name.clone(),
        text: text.clone(),
    });
    options
}

/// One target × repetition as an ordinary probe, into its own directory.
async fn probe_member(campaign: &Campaign, dir: &Path, planned: Planned) -> Member {
    let target = &campaign.targets[planned.target];
    let relative = member_dir(&target.id, planned.repetition);
    let out = dir.join(&relative);
    // What the target needs before it runs: its endpoint and its credentials.
    let prepared = target.kind.target().and_then(|kind| {
        let headers = target.credentials.iter().map(|c| c.header());
        Ok((kind, headers.collect::<Result<Vec<_>, _>>()?))
    });
    let (kind, headers) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => {
            return member(
                &relative,
                target,
                planned,
                "failed",
                Exit::Usage,
                None,
                0,
                format!("target {:?}: {error}", target.id),
            );
        }
    };
    let mut options = probe_options(campaign, target, kind, out.clone());
    options.client.headers = headers;
    options.seed = probe_seed(campaign.seed, &target.id, planned.repetition);
    let wall = Duration::from_secs(campaign.budgets.wall_seconds_per_server);
    let outcome = tokio::time::timeout(wall, crate::probe::probe(options)).await;
    let sealed = vac_receipts::verify(&out, &vac_receipts::VerifyOptions::default())
        .ok()
        .filter(|r| r.seal.is_some());
    let (head, records) = sealed.map_or((None, 0), |r| (Some(r.head.to_string()), r.records));
    if head.is_some() {
        // At rest, compressed: the same chain, read in place by every reader. A probe whose
        // receipts could not be packed keeps them plain, which reads the same.
        if let Err(error) = vac_receipts::pack(&out) {
            tracing::warn!("{}: receipts left unpacked: {error}", out.display());
        }
    }
    match outcome {
        Err(_) => member(
            &relative,
            target,
            planned,
            "timed_out",
            Exit::Incomplete,
            head,
            records,
            format!(
                "wall-time budget of {}s ran out",
                campaign.budgets.wall_seconds_per_server
            ),
        ),
        Ok(Err(error)) => member(
            &relative,
            target,
            planned,
            "failed",
            Exit::CouldNotRun,
            head,
            records,
            crate::probe::error_chain(&error),
        ),
        Ok(Ok(report)) => {
            let exit = Exit::of(&report);
            let status = if report.failure.is_some() {
                "failed"
            } else {
                "completed"
            };
            member(
                &relative,
                target,
                planned,
                status,
                exit,
                head,
                records,
                report.failure.clone().unwrap_or_default(),
            )
        }
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "one record's fields, named at the call"
)]
fn member(
    dir: &str,
    target: &CampaignTarget,
    planned: Planned,
    status: &str,
    exit: Exit,
    head: Option<String>,
    records: u64,
    detail: String,
) -> Member {
    Member {
        dir: dir.to_owned(),
        role: "probe".into(),
        target: target.id.clone(),
        repetition: planned.repetition,
        head,
        records,
        status: status.into(),
        exit: exit.code(),
        detail,
    }
}

/// The members a sealed campaign log lists, after verifying its chain.
pub fn members(dir: &Path) -> Result<Vec<Member>, RunError> {
    Ok(verified_members(dir)?.1)
}

/// A sealed campaign log's chain, verified, and the members it lists.
pub(crate) fn verified_members(
    dir: &Path,
) -> Result<(vac_receipts::VerifyReport, Vec<Member>), RunError> {
    let report =
        vac_receipts::verify(dir, &vac_receipts::VerifyOptions::default()).map_err(|e| {
            RunError::NotCampaign {
                dir: dir.to_path_buf(),
                detail: format!("BROKEN: {e}"),
            }
        })?;
    if report.seal.is_none() {
        return Err(RunError::NotCampaign {
            dir: dir.to_path_buf(),
            detail: "the campaign log is not sealed (resume it)".into(),
        });
    }
    let log = vac_receipts::ReceiptLog::open(dir).map_err(|e| RunError::Io {
        dir: dir.to_path_buf(),
        detail: e.to_string(),
    })?;
    let mut out = Vec::new();
    for entry in log.entries().map_err(|e| RunError::Io {
        dir: dir.to_path_buf(),
        detail: e.to_string(),
    })? {
        let entry = entry.map_err(|e| RunError::Io {
            dir: dir.to_path_buf(),
            detail: e.to_string(),
        })?;
        if let Body::Member(member) = entry.record.body {
            out.push(member);
        }
    }
    Ok((report, out))
}

#[cfg(test)]
mod tests;
