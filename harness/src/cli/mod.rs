//! The `vac` command line: its arguments ([`Cli`]) and one function per command, each
//! ending in an exit code of `crate::exit`'s table. The binary parses and calls [`run`].

mod campaign;
mod fixtures;
mod maps;
mod probe;
mod statics;
mod verify;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use self::campaign::*;
use self::fixtures::*;
use self::maps::*;
use self::probe::*;
use self::statics::*;
use self::verify::*;
use crate::exit::Exit;
use crate::probe::ProbeReport;
use crate::probe::start::Started;
use crate::report;
use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "vac",
    version,
    about = "Verify what MCP servers' tools actually do"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Audit one MCP server: `vac probe [--json] [--out DIR] [--http PORT[/PATH]] -- CMD ARGS…`
    /// (stdio, or Streamable HTTP served inside the sandbox) or `vac probe --url URL`.
    Probe(Box<ProbeArgs>),
    /// Recompute a receipt directory's hash chain and blobs and re-grade its verdicts; name
    /// the first bad record. A campaign directory: its chain, then every probe it lists.
    Verify(VerifyArgs),
    /// Print a probe's verdicts regenerated from its receipts alone; with `--out`, write the
    /// conformance map of a probe or campaign directory (HTML, Markdown, JSON, CSV, Parquet,
    /// SARIF).
    Report(ReportArgs),
    /// Audit the three built-in fixtures (honest, dishonest, broad) as one campaign, print
    /// their verdicts and write its conformance map.
    Demo(DemoArgs),
    /// Read a server's tools/list without calling a tool: stable rules (analysis/RULES.md) that
    /// predict what each tool may do; given receipts, set against what the tools did:
    /// `vac static FILE.json | RECEIPT-DIR [--import FINDINGS] | -- CMD ARGS…`.
    Static(StaticArgs),
    /// Run a campaign file: many targets, repetitions, shards (`harness/CAMPAIGNS.md`).
    #[command(subcommand)]
    Campaign(CampaignCommand),
    /// Turn the MCP server configs an agent host already has (Claude Desktop, Cursor,
    /// `.mcp.json`, Claude Code's `~/.claude.json`, VS Code's `.vscode/mcp.json`) into a
    /// campaign file; secrets in `env` become named placeholders.
    Import(ImportArgs),
    /// Work with effect contracts.
    #[command(subcommand)]
    Contract(ContractCommand),
    /// Run a built-in fixture MCP server: the honest or dishonest twin, or the broad one.
    Fixture(FixtureArgs),
}

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")
}

/// The width lines are cut to: `COLUMNS` when set, else the terminal's (stdout's, else
/// stderr's), else 120; never under 40.
pub(crate) fn width() -> usize {
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
    let terminal = || {
        [console::Term::stdout(), console::Term::stderr()]
            .iter()
            .find_map(console::Term::size_checked)
            .map(|(_, columns)| usize::from(columns))
    };
    columns.or_else(terminal).unwrap_or(120).max(40)
}

/// A file the command line names could not be read: a usage error (exit 2), not "could
/// not run".
#[derive(Debug, thiserror::Error)]
#[error("cannot read {what} {path}")]
pub(crate) struct Unreadable {
    what: &'static str,
    path: String,
    source: std::io::Error,
}

/// The text of a file the command line names (`what` it is, for the error).
pub(crate) fn read_named(path: &std::path::Path, what: &'static str) -> Result<String, Unreadable> {
    std::fs::read_to_string(path).map_err(|source| Unreadable {
        what,
        path: path.display().to_string(),
        source,
    })
}

/// The command as typed here, made to start the same in the sandbox (`probe::start`).
pub(crate) fn typed(command: Vec<OsString>) -> anyhow::Result<Started> {
    let origin = std::env::current_dir().context("cannot read the current directory")?;
    Ok(crate::probe::start::as_installed(command, &origin))
}

pub(crate) fn print_report(report: &ProbeReport, json: bool, all: bool) {
    let printed = if json {
        report::write_json(
            report,
            &mut std::io::BufWriter::new(std::io::stdout().lock()),
        )
    } else {
        let table = report::table(&report::head(report), report::cells(report), all, width());
        std::io::Write::write_all(
            &mut std::io::stdout().lock(),
            format!("{table}\n").as_bytes(),
        )
    };
    // A reader that has gone (`vac … | head`) wants no more; the receipts are written.
    match printed {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            tracing::warn!(%error, "the report could not be printed");
        }
        _ => {}
    }
}

pub(crate) fn default_out() -> PathBuf {
    PathBuf::from("vac-receipts").join(format!("probe-{}", stamp()))
}

/// Today's date (UTC) as `YYYY-MM-DD`: when suppressions expire.
pub(crate) fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    civil(secs / 86_400)
}

/// The civil date of a day counted from 1970-01-01 (H. Hinnant's algorithm).
fn civil(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

pub(crate) fn stamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}-{:09}", now.as_secs(), now.subsec_nanos())
}

impl Cli {
    /// Whether the command runs sandboxes (the binary gives those a mount namespace of
    /// vac's own first).
    pub fn runs_sandboxes(&self) -> bool {
        matches!(
            self.command,
            Command::Probe(_) | Command::Campaign(_) | Command::Static(_) | Command::Demo(_)
        )
    }
}

/// Runs the command `cli` names; its exit code is `crate::exit`'s table (an error that
/// stopped it is printed and exits as "could not run", or as a usage error when it is a
/// file the command line named that could not be read or is not what it should be).
pub fn run(cli: Cli) -> ExitCode {
    let outcome = match cli.command {
        Command::Probe(args) => run_probe(*args),
        Command::Verify(args) => run_verify(args),
        Command::Report(args) => run_report(args),
        Command::Static(args) => run_static(args),
        Command::Campaign(command) => run_campaign(command),
        Command::Import(args) => run_import(args),
        Command::Contract(ContractCommand::Derive(args)) => run_derive(args),
        Command::Demo(args) => run_demo(args),
        Command::Fixture(args) => run_fixture(args).map(|()| ExitCode::SUCCESS),
    };
    outcome.unwrap_or_else(|error| {
        eprintln!("vac: {error:#}");
        let usage = error.downcast_ref::<Unreadable>().is_some()
            || error
                .downcast_ref::<vac_analysis::triage::TriageError>()
                .is_some();
        if usage {
            Exit::Usage.into()
        } else {
            Exit::CouldNotRun.into()
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn days_are_civil_dates() {
        assert_eq!(super::civil(0), "1970-01-01");
        assert_eq!(super::civil(11_016), "2000-02-29");
        assert_eq!(super::civil(20_794), "2026-12-07");
    }
}
