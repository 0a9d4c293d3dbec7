//! `vac report` and `vac demo`: verdicts and maps regenerated from receipts.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{print_report, runtime, stamp, width};
use crate::exit::Exit;
use crate::probe::ReplayError;
use crate::report;
use anyhow::Context;
use clap::Args;
use vac_analysis::AnalysisError;
use vac_analysis::triage::{Baseline, Suppression, Triaged, parse_suppressions};

#[derive(Args)]
pub(crate) struct ReportArgs {
    /// The receipt directory: one probe, or a campaign (a directory of probe directories).
    dir: PathBuf,
    /// Print the JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// List every cell, not only the confirmed ones.
    #[arg(long)]
    all: bool,
    /// Write the conformance map and the tables into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The map's name (its title, and the SARIF category `vac/NAME/`); keep it the same
    /// across uploads of one campaign. Default: the directory's name.
    #[arg(long)]
    campaign: Option<String>,
    /// A `map.json` of a run you accepted (`--out` writes one): only confirmed cells not in
    /// it fail (exit 1); each cell is listed new, fixed or unchanged.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// A suppressions file (`[[suppress]]` with server, tool, clause, reason and an
    /// optional expiry): the cells it covers do not fail, and are listed with the reason.
    #[arg(long)]
    suppress: Option<PathBuf>,
    /// Formats to write with `--out`, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "html,md,json,csv,parquet,sarif",
          value_parser = parse_format, requires = "out")]
    format: Vec<vac_analysis::Format>,
}

pub(crate) fn parse_format(
    text: &str,
) -> Result<vac_analysis::Format, vac_analysis::render::UnknownFormat> {
    text.parse()
}

pub(crate) fn run_report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if !args.dir.is_dir() {
        eprintln!("vac: {}: no such directory", args.dir.display());
        return Ok(Exit::Usage.into());
    }
    let single =
        vac_receipts::is_receipt_dir(&args.dir) && !crate::campaign::is_campaign(&args.dir);
    let mut exit = Exit::Clean;
    if single {
        match crate::probe::report(&args.dir) {
            Ok(report) => {
                print_report(&report, args.json, args.all);
                exit = Exit::of(&report);
            }
            Err(error @ ReplayError::Broken { .. }) => {
                println!(
                    "{}: BROKEN: {:#}",
                    args.dir.display(),
                    anyhow::Error::new(error)
                );
                return Ok(Exit::Broken.into());
            }
            Err(error) => {
                return Err(anyhow::Error::new(error).context("cannot grade the receipts"));
            }
        }
    }
    let triage = triage_inputs(&args)?;
    if !single || args.out.is_some() || triage.is_some() {
        let analysis = match vac_analysis::load(&args.dir, args.campaign.as_deref()) {
            Ok(analysis) => analysis,
            Err(error) if error.is_broken() => {
                println!("{error}");
                return Ok(Exit::Broken.into());
            }
            Err(error @ (AnalysisError::NotReceipts(_) | AnalysisError::Empty(_))) => {
                eprintln!("vac: {error}");
                return Ok(Exit::Usage.into());
            }
            Err(error) => {
                eprintln!("vac: {error}");
                return Ok(Exit::CouldNotRun.into());
            }
        };
        if !single {
            match args.json {
                // The map's JSON document, as `map.json` holds it.
                true => {
                    let document = vac_analysis::render::map_json(&analysis);
                    std::io::Write::write_all(
                        &mut std::io::stdout(),
                        &vac_analysis::render::pretty(&document),
                    )?;
                }
                false => print!("{}", report::map_summary(&analysis.map, args.all, width())),
            }
            exit = match crate::campaign::is_campaign(&args.dir) {
                // As the campaign ended: every member, the ones the map has no row for too.
                true => match crate::campaign::members(&args.dir) {
                    Ok(members) => {
                        Exit::of_campaign(members.iter().map(crate::campaign::member_exit))
                    }
                    Err(error) => {
                        println!(
                            "{}: BROKEN: {:#}",
                            args.dir.display(),
                            anyhow::Error::new(error)
                        );
                        return Ok(Exit::Broken.into());
                    }
                },
                false => map_exit(&analysis.map),
            };
        }
        let triaged = triage.map(|(baseline, suppressions)| {
            vac_analysis::triage::triage(
                &analysis.map,
                baseline.as_ref(),
                &suppressions,
                &super::today(),
            )
        });
        if let Some(triaged) = &triaged {
            exit = triaged_exit(triaged, &analysis.map, exit);
            let lines = triaged.lines().join("\n");
            match args.json {
                true => eprintln!("{lines}"),
                false => println!("{lines}"),
            }
        }
        if let Some(out) = &args.out {
            let written = write_map(&analysis, &args.dir, out, args.format.clone(), triaged)?;
            match args.json {
                true => eprintln!("{written}"),
                false => println!("{written}"),
            }
        }
    }
    Ok(exit.into())
}

/// The baseline and suppressions `vac report` was given, read and checked; `None` when
/// neither was. A file that cannot be read or is not one is a usage error naming it.
fn triage_inputs(
    args: &ReportArgs,
) -> anyhow::Result<Option<(Option<Baseline>, Vec<Suppression>)>> {
    if args.baseline.is_none() && args.suppress.is_none() {
        return Ok(None);
    }
    let baseline = match &args.baseline {
        Some(path) => {
            let text = super::read_named(path, "baseline")?;
            Some(Baseline::parse(&path.display().to_string(), &text)?)
        }
        None => None,
    };
    let suppressions = match &args.suppress {
        Some(path) => {
            let text = super::read_named(path, "suppressions")?;
            parse_suppressions(&path.display().to_string(), &text)?
        }
        None => Vec::new(),
    };
    Ok(Some((baseline, suppressions)))
}

/// How a report against a baseline and suppressions ends: 1 only for a new cell no
/// suppression covers; what else is wrong (errored cells, targets not audited, broken
/// receipts) still keeps it from a clean 0.
fn triaged_exit(triaged: &Triaged, map: &vac_analysis::Map, exit: Exit) -> Exit {
    let totals = map.totals();
    if triaged.failing().next().is_some() {
        Exit::Violation
    } else if exit == Exit::Broken || exit == Exit::CouldNotRun {
        exit
    } else if totals.errored > 0 || totals.not_audited > 0 || exit == Exit::Incomplete {
        Exit::Incomplete
    } else {
        Exit::Clean
    }
}

/// How a directory of probes that is not a campaign ends: as its worst probe's cells.
pub(crate) fn map_exit(map: &vac_analysis::Map) -> Exit {
    let totals = map.totals();
    let worst = match (totals.confirmed > 0, totals.errored > 0) {
        (true, _) => Exit::Violation,
        (false, true) => Exit::Incomplete,
        (false, false) => Exit::Clean,
    };
    Exit::of_campaign([worst])
}

/// Renders the map of `dir` into `out`; returns the line that says where.
pub(crate) fn write_map(
    analysis: &vac_analysis::Analysis,
    dir: &std::path::Path,
    out: &std::path::Path,
    formats: Vec<vac_analysis::Format>,
    triage: Option<vac_analysis::triage::Triaged>,
) -> anyhow::Result<String> {
    let options = vac_analysis::RenderOptions {
        formats,
        source_root: if dir.is_relative() {
            dir.to_string_lossy().into_owned()
        } else {
            String::new()
        },
        version: env!("CARGO_PKG_VERSION").to_string(),
        triage,
    };
    let written = vac_analysis::render(analysis, out, &options)
        .context("cannot write the conformance map")?;
    let html = written
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "html"));
    Ok(match html {
        Some(html) => format!(
            "conformance map: {} ({} files in {})",
            html.display(),
            written.len(),
            out.display()
        ),
        None => format!(
            "conformance map: {} files in {}",
            written.len(),
            out.display()
        ),
    })
}

#[derive(Args)]
pub(crate) struct DemoArgs {
    /// Where the campaign goes: `DIR/demo-<time>/` holds a receipt directory per fixture
    /// and `map/`, its conformance map (default: ./vac-demo).
    #[arg(long, default_value = "vac-demo")]
    out: PathBuf,
    /// Print one JSON document per fixture.
    #[arg(long)]
    json: bool,
    /// List every cell, not only the confirmed ones.
    #[arg(long)]
    all: bool,
}

/// The demo map's name, the same on every run (`vac report DIR --campaign "vac demo"`
/// regenerates it byte for byte).
pub(crate) const DEMO_CAMPAIGN: &str = "vac demo";

/// The built-in campaign over the fixtures. `vac demo` writes it as `campaign.toml` in its
/// directory (so `vac campaign run` of that file runs it again) and runs it there.
pub(crate) const DEMO_TOML: &str = r#"# The built-in campaign of `vac demo`: the three fixtures, once each.
name = "vac demo"
seed = 0
repetitions = 1
jobs = 2
out = "."

[[target]]
id = "honest"
command = ["vac", "fixture", "--mode", "honest"]

[[target]]
id = "dishonest"
command = ["vac", "fixture", "--mode", "dishonest"]

[[target]]
id = "broad"
command = ["vac", "fixture", "--mode", "broad"]
"#;

pub(crate) fn run_demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    use crate::campaign::{self, Campaign, Progress};
    let runtime = runtime()?;
    let dir = args.out.join(format!("demo-{}", stamp()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let file = dir.join("campaign.toml");
    std::fs::write(&file, DEMO_TOML).with_context(|| format!("cannot write {}", file.display()))?;
    let demo = Campaign::load(&file).context("the built-in campaign does not parse")?;
    // A bar on a terminal, as a campaign shows; nothing between the reports otherwise.
    let progress = match std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        true => Progress::Bar,
        false => Progress::Quiet,
    };
    let outcome = runtime
        .block_on(campaign::run(&demo, None, progress))
        .context("the demo campaign failed")?;
    let mut worst = ExitCode::SUCCESS;
    for member in &outcome.members {
        let report = crate::probe::report(&dir.join(&member.dir)).with_context(|| {
            format!("cannot read the {} fixture's receipts back", member.target)
        })?;
        if !args.json {
            println!("== {} fixture ==", member.target);
        }
        print_report(&report, args.json, args.all);
        if report.failure.is_some() {
            worst = Exit::CouldNotRun.into();
        }
    }
    let analysis = vac_analysis::load(&dir, Some(DEMO_CAMPAIGN))
        .context("cannot read the demo campaign back")?;
    if !args.json {
        print!("{}", report::map_summary(&analysis.map, false, width()));
    }
    let map = dir.join("map");
    let written = write_map(
        &analysis,
        &dir,
        &map,
        vac_analysis::Format::ALL.to_vec(),
        None,
    )?;
    match args.json {
        true => eprintln!("{written}"),
        false => println!("{written}"),
    }
    Ok(worst)
}
