//! `vac static`: what a tools/list predicts, alone or set against receipts.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{runtime, typed, width};
use crate::exit::Exit;
use crate::probe::{ProbeOptions, Target};
use crate::report;
use anyhow::Context;
use clap::Args;
use vac_analysis::AnalysisError;

#[derive(Args)]
pub(crate) struct StaticArgs {
    /// Print `{"findings": […]}` (and, for receipts, `"comparison"`) instead of the table.
    #[arg(long, conflicts_with = "sarif")]
    json: bool,
    /// Print the findings as a SARIF 2.1.0 log.
    #[arg(long)]
    sarif: bool,
    /// A contract document whose `[scope]` the manifest is read under (a tools/list file or
    /// a command; receipts carry their own contract).
    #[arg(long)]
    contract: Option<PathBuf>,
    /// Another static analyser's findings (JSON or SARIF; shapes in analysis/RULES.md),
    /// compared with the receipts' verdicts in place of vac's own rules.
    #[arg(long, value_name = "FILE")]
    import: Option<PathBuf>,
    /// Names the map of a receipt directory, as `vac report --campaign` does.
    #[arg(long)]
    campaign: Option<String>,
    /// Seconds to wait for initialize and tools/list (with `-- CMD`).
    #[arg(long, default_value_t = 20)]
    timeout: u64,
    /// A tools/list JSON file, or a receipt directory (one probe or a campaign).
    #[arg(required_unless_present = "command")]
    input: Option<PathBuf>,
    /// Or: the server command, run once in the sandbox for its tools/list (no call).
    #[arg(last = true, conflicts_with = "input")]
    command: Vec<OsString>,
}

/// `vac static`: findings from a tools/list file, a command's control run, or the manifests
/// recorded in receipts (then compared with their verdicts).
pub(crate) fn run_static(args: StaticArgs) -> anyhow::Result<ExitCode> {
    use vac_analysis::scan::Scope;
    let scope = match &args.contract {
        None => Scope::None,
        Some(path) => {
            let text = super::read_named(path, "contract")?;
            match Scope::of_contract(&path.display().to_string(), &text) {
                Ok(scope) => scope,
                Err(error) => return usage(error.to_string()),
            }
        }
    };
    if !args.command.is_empty() {
        if args.import.is_some() {
            return usage(
                "--import compares with dynamic verdicts: give a receipt directory".into(),
            );
        }
        return static_of_command(&args, &scope);
    }
    let mut input = args
        .input
        .clone()
        .expect("clap requires an input or a command");
    if input.extension().is_some_and(|e| e == "toml") {
        // A campaign file: its receipts when it has run, else each target's control run.
        let campaign = match crate::campaign::Campaign::load(&input) {
            Ok(campaign) => campaign,
            Err(error) => return usage(error.to_string()),
        };
        if vac_receipts::is_receipt_dir(&campaign.out) {
            input = campaign.out.clone();
        } else {
            return static_of_campaign(&campaign, &args);
        }
    }
    if input.is_dir() {
        return static_of_receipts(&input, &args);
    }
    if args.import.is_some() {
        return usage("--import compares with dynamic verdicts: give a receipt directory".into());
    }
    let name = input.display().to_string();
    let text = match std::fs::read_to_string(&input) {
        Ok(text) => text,
        Err(error) => return usage(format!("{name}: cannot read: {error}")),
    };
    let document: serde_json::Value = match serde_json::from_str(&text) {
        Ok(document) => document,
        Err(error) => return usage(format!("{name}: not JSON: {error}")),
    };
    let tools = match vac_analysis::scan::tools_of(&document) {
        Ok(tools) => tools,
        Err(error) => return usage(format!("{name}: {error}")),
    };
    let server = input
        .file_stem()
        .map_or_else(|| name.clone(), |s| s.to_string_lossy().into_owned());
    Ok(static_manifest(
        &args,
        &scope,
        server,
        tools,
        Some((name, text.clone())),
    ))
}

/// A usage error: said on stderr, exit 2.
fn usage(message: String) -> anyhow::Result<ExitCode> {
    eprintln!("vac: {message}");
    Ok(Exit::Usage.into())
}

/// A manifest without receipts: findings only, as text, JSON or SARIF (located in the
/// manifest's file when `source` gives its name and text).
fn static_manifest(
    args: &StaticArgs,
    scope: &vac_analysis::scan::Scope,
    server: String,
    tools: &[serde_json::Value],
    source: Option<(String, String)>,
) -> ExitCode {
    use vac_analysis::compare::Prediction;
    use vac_analysis::scan;
    let findings = scan::scan(&server, tools, scope);
    if args.sarif {
        let locate = |f: &scan::Finding| {
            let (uri, text) = source.as_ref()?;
            Some(vac_analysis::sarif::manifest_line(uri, text, &f.tool))
        };
        let log = vac_analysis::sarif::static_sarif(
            &findings,
            &server,
            env!("CARGO_PKG_VERSION"),
            &locate,
        );
        println!("{}", serde_json::to_string_pretty(&log).unwrap_or_default());
    } else {
        let predictions: Vec<Prediction> = findings.iter().map(Into::into).collect();
        print_static(&predictions, &findings, None, args.json);
    }
    ExitCode::from(Exit::Clean)
}

/// `vac static -- CMD ARGS…`: the server run once in the sandbox for its tools/list.
fn static_of_command(
    args: &StaticArgs,
    scope: &vac_analysis::scan::Scope,
) -> anyhow::Result<ExitCode> {
    let started = typed(args.command.clone())?;
    let command = started.command.clone();
    let target = command
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let mut options =
        ProbeOptions::new(Target::Stdio(command), PathBuf::new()).with_timeout(args.timeout);
    started.add_to(&mut options.inputs);
    let tools = runtime()?
        .block_on(crate::probe::control_manifest(&options))
        .context("cannot read the server's tools/list")?;
    Ok(static_manifest(
        args,
        scope,
        vac_analysis::server_id(&target),
        &tools,
        None,
    ))
}

/// `vac static RECEIPT-DIR`: the findings set against what the tools did (or against an
/// imported scanner's findings with `--import`), or vac's findings as SARIF.
fn static_of_receipts(input: &Path, args: &StaticArgs) -> anyhow::Result<ExitCode> {
    use vac_analysis::compare;
    use vac_analysis::scan;
    let analysis = match vac_analysis::load(input, args.campaign.as_deref()) {
        Ok(analysis) => analysis,
        Err(error) if error.is_broken() => {
            println!("{error}");
            return Ok(Exit::Broken.into());
        }
        Err(error @ (AnalysisError::NotReceipts(_) | AnalysisError::Empty(_))) => {
            return usage(error.to_string());
        }
        Err(error) => {
            eprintln!("vac: {error}");
            return Ok(Exit::CouldNotRun.into());
        }
    };
    if args.contract.is_some() {
        return usage("--contract: receipts are read under the contract they recorded".into());
    }
    let (predictions, comparison) = match &args.import {
        None => (
            analysis.findings.iter().map(Into::into).collect(),
            analysis.comparison.clone(),
        ),
        Some(path) => {
            let name = path.display().to_string();
            let text = super::read_named(path, "findings")?;
            match compare::import(&name, &text, &analysis.map) {
                Ok(predictions) => {
                    let comparison = compare::compare(&analysis.map, &predictions, &name);
                    (predictions, comparison)
                }
                Err(error) => return usage(error.to_string()),
            }
        }
    };
    if !args.sarif {
        print_static(
            &predictions,
            &analysis.findings,
            Some(&comparison),
            args.json,
        );
        return Ok(Exit::Clean.into());
    }
    if args.import.is_some() {
        return usage("--sarif writes vac's own findings; drop --import".into());
    }
    let root = if input.is_relative() {
        input.to_string_lossy().into_owned()
    } else {
        String::new()
    };
    let places = vac_analysis::sarif::manifest_locations(&analysis.rows, &root);
    let locate = |f: &scan::Finding| {
        places
            .iter()
            .find(|(server, _, _)| *server == f.server)
            .map(|(_, uri, line)| (uri.clone(), *line))
    };
    let log = vac_analysis::sarif::static_sarif(
        &analysis.findings,
        &analysis.map.campaign,
        env!("CARGO_PKG_VERSION"),
        &locate,
    );
    println!("{}", serde_json::to_string_pretty(&log).unwrap_or_default());
    Ok(Exit::Clean.into())
}

/// `vac static CAMPAIGN.toml` before the campaign ran: every target's tools/list from a
/// control run (no call), read under the target's contract scope, named by its id.
pub(crate) fn static_of_campaign(
    campaign: &crate::campaign::Campaign,
    args: &StaticArgs,
) -> anyhow::Result<ExitCode> {
    use vac_analysis::scan::{self, Scope};
    if args.import.is_some() || args.contract.is_some() {
        eprintln!(
            "vac: a campaign that has not run has no verdicts to compare (--import), and its \
             targets name their own contracts (--contract)"
        );
        return Ok(Exit::Usage.into());
    }
    let runtime = runtime()?;
    let mut findings = Vec::new();
    for target in &campaign.targets {
        let kind = match target.kind.target() {
            Ok(kind) => kind,
            Err(error) => {
                eprintln!("vac: target {:?}: {error}", target.id);
                return Ok(Exit::Usage.into());
            }
        };
        let options = crate::campaign::probe_options(campaign, target, kind, PathBuf::new());
        let tools = runtime
            .block_on(crate::probe::control_manifest(&options))
            .with_context(|| format!("target {:?}: cannot read its tools/list", target.id))?;
        let scope = match &target.contract {
            Some((name, text)) => Scope::of_contract(name, text).unwrap_or_default(),
            None => Scope::None,
        };
        findings.extend(scan::scan(&target.id, &tools, &scope));
    }
    if args.sarif {
        let file = campaign.file.display().to_string();
        let locate = |_: &scan::Finding| Some((file.clone(), 1));
        let log = vac_analysis::sarif::static_sarif(
            &findings,
            &campaign.name,
            env!("CARGO_PKG_VERSION"),
            &locate,
        );
        println!("{}", serde_json::to_string_pretty(&log).unwrap_or_default());
    } else {
        let predictions: Vec<_> = findings.iter().map(Into::into).collect();
        print_static(&predictions, &findings, None, args.json);
    }
    Ok(Exit::Clean.into())
}

/// Prints the findings (and the comparison) as JSON or as the terminal table.
pub(crate) fn print_static(
    predictions: &[vac_analysis::compare::Prediction],
    findings: &[vac_analysis::scan::Finding],
    comparison: Option<&vac_analysis::compare::Comparison>,
    json: bool,
) {
    if json {
        // vac's own findings keep their rule names and evidence; imported ones their shape.
        let own = comparison.is_none_or(|c| c.analyser == vac_analysis::STATIC_ANALYSER);
        let list: Vec<serde_json::Value> = if own {
            findings.iter().map(|f| f.to_json()).collect()
        } else {
            predictions.iter().map(|p| p.to_json()).collect()
        };
        let mut doc = serde_json::json!({"findings": list});
        if let Some(c) = comparison {
            doc["comparison"] = c.to_json();
        }
        println!("{doc}");
    } else {
        print!("{}", report::static_table(predictions, comparison, width()));
    }
}
