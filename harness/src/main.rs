//! The `vac` binary: parses the command line and hands each subcommand to the library.

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;
use vac_harness::fixture;

#[derive(Parser)]
#[command(
    name = "vac",
    version,
    about = "Verify what MCP servers' tools actually do"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a built-in fixture MCP server: the honest or dishonest twin, or the broad one.
    Fixture(FixtureArgs),
}

#[derive(Args)]
struct FixtureArgs {
    /// Which fixture to serve.
    #[arg(long, value_enum)]
    mode: fixture::Mode,
    /// How to serve it.
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    transport: Transport,
}

#[derive(Clone, Copy, ValueEnum)]
enum Transport {
    Stdio,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_tracing();
    match cli.command {
        Command::Fixture(args) => run_fixture(args),
    }
}

fn run_fixture(args: FixtureArgs) -> anyhow::Result<()> {
    // Streamable HTTP joins stdio later (SPEC §4).
    let Transport::Stdio = args.transport;
    // One thread is plenty for a fixture and keeps its process tree small in the sandbox.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    runtime
        .block_on(fixture::serve_stdio(args.mode))
        .with_context(|| format!("fixture {:?} failed", args.mode))
}

/// Diagnostics go to stderr: stdout may be a JSON-RPC channel.
fn init_tracing() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::builder()
                .with_default_directive(LevelFilter::WARN.into())
                .from_env_lossy(),
        )
        .init();
}
