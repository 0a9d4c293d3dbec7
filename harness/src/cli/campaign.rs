//! `vac campaign …` and `vac import`: many targets, and the agent hosts' configs they come from.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{runtime, width};
use crate::exit::Exit;
use crate::report;
use anyhow::Context;
use clap::{Args, Subcommand};

#[derive(Args)]
pub(crate) struct ImportArgs {
    /// The config file: JSON (comments allowed) or Codex's TOML.
    file: PathBuf,
    /// Write the campaign here (refused if it exists) instead of printing it.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The campaign's name (default: "imported").
    #[arg(long, default_value = "imported")]
    name: String,
}

#[derive(Subcommand)]
pub(crate) enum CampaignCommand {
    /// Run every target × repetition of a campaign file into its `out` directory (one shard
    /// of it with `--shard`, or the shard a Kubernetes Indexed Job or Slurm array assigns).
    Run(CampaignRunArgs),
    /// Continue a campaign directory after a crash: done probes are kept, the rest run.
    Resume(CampaignResumeArgs),
    /// Check and join the shard directories of one campaign into OUT.
    Merge(CampaignMergeArgs),
    /// Check a campaign file and print its plan (this shard's targets) without running.
    Check(CampaignRunArgs),
    /// Write the Kubernetes Indexed Job and the Slurm array (each with its merge step) that
    /// run a campaign in N shards (from `deploy/`).
    Deploy(CampaignDeployArgs),
    /// Compare the verdict grids of two receipt directories (a campaign and its rerun):
    /// the cells that changed, and those unstable across repetitions; exit 4 if any changed.
    Compare(CampaignCompareArgs),
    /// Print the campaign file a campaign directory's chain recorded, byte for byte.
    Recorded(CampaignResumeArgs),
    /// Compress every sealed probe's receipts under a campaign directory at rest (zstd,
    /// `receipts.jsonl.zst` and `blobs/…/<hash>.zst`): the same chain, read in place by
    /// `verify` and `report`. A campaign packs each probe as it ends; this packs receipts
    /// an older vac left plain.
    Pack(CampaignResumeArgs),
}

#[derive(Args)]
pub(crate) struct CampaignCompareArgs {
    first: PathBuf,
    second: PathBuf,
    /// The second ran some of the first's targets (a sampled rerun): compare only the
    /// servers it holds.
    #[arg(long)]
    sample: bool,
}

#[derive(Args)]
pub(crate) struct CampaignDeployArgs {
    /// The campaign file.
    file: PathBuf,
    /// How many shards.
    #[arg(long)]
    shards: u32,
    /// The bundle's directory: the campaign and its files under `campaign/`,
    /// `campaign.sbatch`, `merge.sbatch`, `kubernetes.yaml` and `kubernetes-merge.yaml`.
    #[arg(long)]
    to: PathBuf,
    /// The container image with vac in it (Kubernetes).
    #[arg(long, default_value = "vac:latest")]
    image: String,
    /// The PersistentVolumeClaim the manifests create and the shards write to (Kubernetes).
    #[arg(long, default_value = "vac-runs")]
    claim: String,
    /// The claim's size (Kubernetes).
    #[arg(long, default_value = "10Gi")]
    storage: String,
    /// Where the Slurm shards write: relative to the directory the scripts are submitted
    /// from, unless absolute.
    #[arg(long, default_value = "runs")]
    out: String,
}

#[derive(Args)]
pub(crate) struct CampaignRunArgs {
    /// The campaign file (TOML).
    file: PathBuf,
    /// Run shard K of N (0-based): the targets whose id hashes to K modulo N.
    #[arg(long, value_name = "K/N")]
    shard: Option<String>,
    /// The shard count when a Kubernetes Indexed Job's JOB_COMPLETION_INDEX picks the
    /// shard (else VAC_SHARDS).
    #[arg(long, value_name = "N")]
    shards: Option<u32>,
    /// No progress lines on stderr.
    #[arg(long)]
    quiet: bool,
    /// Write into this directory instead of the file's `out` (a shard writes
    /// `OUT/shard-K-of-N`).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct CampaignResumeArgs {
    /// The campaign directory.
    dir: PathBuf,
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
pub(crate) struct CampaignMergeArgs {
    /// The merged campaign directory to write.
    out: PathBuf,
    /// The shards' campaign directories.
    #[arg(required = true)]
    shards: Vec<PathBuf>,
}

/// `vac campaign compare A B`: the verdict grids of two receipt directories, cell by cell.
pub(crate) fn compare_grids(
    first: &std::path::Path,
    second: &std::path::Path,
    sample: bool,
) -> anyhow::Result<ExitCode> {
    let load = |dir: &std::path::Path| match vac_analysis::load(dir, None) {
        Ok(analysis) => Ok(analysis),
        Err(error) if error.is_broken() => {
            println!("{error}");
            Err(Exit::Broken)
        }
        Err(error) => {
            eprintln!("vac: {error}");
            Err(Exit::Usage)
        }
    };
    let (mut a, b) = match (load(first), load(second)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(exit), _) | (_, Err(exit)) => return Ok(exit.into()),
    };
    if sample {
        a.map
            .servers
            .retain(|s| b.map.servers.iter().any(|t| t.id == s.id));
    }
    let diff = vac_analysis::map::compare_grids(&a.map, &b.map);
    println!(
        "{} vs {}: {} cells, {} changed, {} unstable across repetitions",
        first.display(),
        second.display(),
        diff.cells,
        diff.changed.len(),
        diff.unstable.len()
    );
    for (server, tool, clause, x, y) in &diff.changed {
        println!("CHANGED {server} × {tool} × {clause}: {x} → {y}");
    }
    for (server, tool, clause, which) in &diff.unstable {
        println!("UNSTABLE {server} × {tool} × {clause} (in {which})");
    }
    Ok(if diff.changed.is_empty() {
        Exit::Clean
    } else {
        Exit::Broken
    }
    .into())
}

/// `vac import FILE`: a campaign file from an agent host's config.
pub(crate) fn run_import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let name = args.file.display().to_string();
    let text = match std::fs::read_to_string(&args.file) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("vac: {name}: cannot read: {error}");
            return Ok(Exit::Usage.into());
        }
    };
    let imported = match crate::campaign::import::import(&name, &text, &args.name) {
        Ok(imported) => imported,
        Err(error) => {
            eprintln!("vac: {error}");
            return Ok(Exit::Usage.into());
        }
    };
    match &args.out {
        None => print!("{}", imported.campaign),
        Some(out) => {
            let mut file = match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(out)
            {
                Ok(file) => file,
                Err(error) => {
                    eprintln!("vac: {}: cannot create: {error}", out.display());
                    return Ok(Exit::Usage.into());
                }
            };
            std::io::Write::write_all(&mut file, imported.campaign.as_bytes())
                .with_context(|| format!("cannot write {}", out.display()))?;
        }
    }
    eprint!("{}", imported.summary(&name));
    if let Some(out) = &args.out {
        eprintln!("vac: wrote {}", out.display());
    }
    Ok(Exit::Clean.into())
}

/// `vac campaign run|resume|merge|check`.
pub(crate) fn run_campaign(command: CampaignCommand) -> anyhow::Result<ExitCode> {
    let outcome = match command {
        CampaignCommand::Check(args) => return check_campaign(&args),
        CampaignCommand::Run(args) => {
            let (campaign, shard) = match load_campaign(&args) {
                Ok(loaded) => loaded,
                Err(error) => {
                    eprintln!("vac: {error}");
                    return Ok(Exit::Usage.into());
                }
            };
            runtime()?.block_on(crate::campaign::run(&campaign, shard, progress(args.quiet)))
        }
        CampaignCommand::Resume(args) => {
            runtime()?.block_on(crate::campaign::resume(&args.dir, progress(args.quiet)))
        }
        CampaignCommand::Merge(args) => crate::campaign::merge(&args.out, &args.shards),
        CampaignCommand::Compare(args) => {
            return compare_grids(&args.first, &args.second, args.sample);
        }
        CampaignCommand::Recorded(args) => {
            return Ok(match crate::campaign::recorded_text(&args.dir) {
                Ok(text) => {
                    print!("{text}");
                    Exit::Clean.into()
                }
                Err(error) => {
                    eprintln!("vac: {error}");
                    Exit::Usage.into()
                }
            });
        }
        CampaignCommand::Pack(args) => {
            return Ok(match crate::campaign::pack_probes(&args.dir) {
                Ok(summary) => {
                    print_packed(&summary);
                    Exit::Clean.into()
                }
                Err(error) => {
                    eprintln!("vac: {error}");
                    Exit::CouldNotRun.into()
                }
            });
        }
        CampaignCommand::Deploy(args) => return Ok(deploy_campaign(&args).into()),
    };
    finish_campaign(outcome)
}

/// Progress on stderr: a bar on a terminal, lines otherwise, nothing with `--quiet`.
fn progress(quiet: bool) -> crate::campaign::Progress {
    use crate::campaign::Progress;
    use std::io::IsTerminal;
    match (quiet, std::io::stderr().is_terminal()) {
        (true, _) => Progress::Quiet,
        (false, true) => Progress::Bar,
        (false, false) => Progress::Lines,
    }
}

/// The campaign file with `--out` applied, and the shard this process runs (`--shard`, or
/// the scheduler's environment with `--shards`).
fn load_campaign(
    args: &CampaignRunArgs,
) -> anyhow::Result<(crate::campaign::Campaign, Option<crate::campaign::Shard>)> {
    use crate::campaign::{Campaign, Shard};
    let mut campaign = Campaign::load(&args.file)?;
    if let Some(out) = &args.out {
        campaign.out = out.clone();
    }
    let shard = match &args.shard {
        Some(text) => Shard::parse(text).map(Some),
        None => Shard::from_env(&|name| std::env::var(name).ok(), args.shards),
    }?;
    Ok((campaign, shard))
}

/// `vac campaign check`: the file checked, and which targets this shard would run.
fn check_campaign(args: &CampaignRunArgs) -> anyhow::Result<ExitCode> {
    let (campaign, shard) = match load_campaign(args) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("vac: {error}");
            return Ok(Exit::Usage.into());
        }
    };
    println!(
        "{}: campaign {:?}, {} targets × {} repetitions, {} jobs, into {}",
        args.file.display(),
        campaign.name,
        campaign.targets.len(),
        campaign.repetitions,
        campaign.jobs,
        crate::campaign::out_dir(&campaign, shard).display()
    );
    for target in &campaign.targets {
        let mine = shard.is_none_or(|s| s.holds(&target.id));
        println!("  {} {}", if mine { "run " } else { "skip" }, target.id);
    }
    Ok(Exit::Clean.into())
}

/// `vac campaign deploy`: the bundle and the scheduler's files written under `--to`.
fn deploy_campaign(args: &CampaignDeployArgs) -> Exit {
    use crate::campaign::{Campaign, deploy};
    let loaded = match Campaign::load(&args.file) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("vac: {error}");
            return Exit::Usage;
        }
    };
    if args.shards == 0 || args.shards > 10_000 {
        eprintln!("vac: --shards {}: expected 1 to 10000", args.shards);
        return Exit::Usage;
    }
    let settings = deploy::Deploy {
        shards: args.shards,
        image: args.image.clone(),
        claim: args.claim.clone(),
        storage: args.storage.clone(),
        out: args.out.clone(),
    };
    let bundle = match deploy::render(&loaded, &settings) {
        Ok(bundle) => bundle,
        Err(error) => {
            eprintln!("vac: {error}");
            return Exit::Usage;
        }
    };
    match deploy::write(&args.to, &bundle) {
        Ok(written) => {
            for path in written {
                println!("{}", path.display());
            }
            for path in &bundle.absolute {
                eprintln!(
                    "vac: {path}: an absolute path the campaign names: it must exist on every node"
                );
            }
            Exit::Clean
        }
        Err(error) => {
            eprintln!("vac: {}: {error}", args.to.display());
            Exit::Usage
        }
    }
}

/// After a run, resume or merge: the map's summary, where the campaign is, and its exit.
fn finish_campaign(
    outcome: Result<crate::campaign::Outcome, crate::campaign::RunError>,
) -> anyhow::Result<ExitCode> {
    use crate::campaign::RunError;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(
            error @ (RunError::Exists(_)
            | RunError::Merge(_)
            | RunError::Campaign(_)
            | RunError::NotCampaign { .. }
            | RunError::Locked { .. }),
        ) => {
            eprintln!("vac: {error}");
            return Ok(Exit::Usage.into());
        }
        Err(error) => return Err(anyhow::Error::new(error).context("campaign failed")),
    };
    if let Some(cut) = &outcome.cut {
        eprintln!("vac: resumed after cutting the log's torn tail: {cut}");
    }
    if outcome.kept > 0 {
        eprintln!("vac: kept {} finished probes", outcome.kept);
    }
    match vac_analysis::load(&outcome.dir, None) {
        Ok(analysis) => print!("{}", report::map_summary(&analysis.map, false, width())),
        Err(error) => eprintln!("vac: {error}"),
    }
    println!(
        "campaign: {} ({} probes)",
        outcome.dir.display(),
        outcome.members.len()
    );
    Ok(outcome.exit().into())
}

fn print_packed(summary: &crate::campaign::PackSummary) {
    let p = &summary.packed;
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "{} probe directories packed: log {:.1} → {:.1} MiB, {} blobs {:.1} → {:.1} MiB (packed now)",
        summary.probes,
        mib(p.log_bytes),
        mib(p.packed_log_bytes),
        p.blobs,
        mib(p.blob_bytes),
        mib(p.packed_blob_bytes)
    );
    for dir in &summary.unsealed {
        println!("left plain, its log is not sealed: {}", dir.display());
    }
}
