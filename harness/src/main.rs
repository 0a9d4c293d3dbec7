//! The `vac` binary: parses the command line and hands it to the library
//! (`vac_harness::cli`); what stays here is the process's own set-up.

use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;
use vac_harness::cli::{self, Cli};

/// Exit codes: `vac_harness::exit::TABLE` (README.md lists them).
fn main() -> ExitCode {
    let bounded = vac_sandbox::bound_allocator_arenas();
    let cli = Cli::parse();
    init_tracing();
    if !bounded {
        tracing::warn!("the allocator kept its default number of arenas");
    }
    if cli.runs_sandboxes() {
        keep_mounts_off_the_host();
    }
    let code = cli::run(cli);
    log_peak_memory();
    code
}

/// vac's own peak resident memory, not its servers' (`RUST_LOG=vac::peak_memory=info`):
/// what the hostile suite holds to its bound, and what a campaign's operator sizes for.
fn log_peak_memory() {
    use nix::sys::resource::{UsageWho, getrusage};
    if let Ok(usage) = getrusage(UsageWho::RUSAGE_SELF) {
        let max_rss_kib = usage.max_rss();
        tracing::info!(target: "vac::peak_memory", max_rss_kib, "vac's own peak resident memory");
    }
}

/// Commands that run sandboxes do it in a mount namespace of vac's own, so that the run
/// mounts go with vac however it ends (SIGKILL included), never staying on the host. Done
/// first, while vac has one thread. Without root there is nothing to mount (the sandbox
/// says so when asked to run); should it fail as root, runs still clean up after
/// themselves and a later start sweeps what a killed vac left.
///
/// First of all, still in the host's namespace, the sweeper starts: if vac dies before its
/// runs' teardown (SIGKILL), it removes their run directories and cgroups at once.
fn keep_mounts_off_the_host() {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let run_root = vac_harness::probe::run_root_from_env()
        .unwrap_or_else(|| vac_sandbox::DEFAULT_RUN_ROOT.into());
    let cgroup_root = std::path::Path::new(vac_sandbox::DEFAULT_CGROUP_ROOT);
    if let Err(error) = vac_sandbox::start_sweeper(&run_root, cgroup_root) {
        tracing::warn!(%error, "no sweeper: a killed vac's runs wait for the next start");
    }
    if let Err(error) = vac_sandbox::own_mount_namespace() {
        tracing::warn!(%error, "run mounts stay in the host's mount namespace");
    }
}

/// Diagnostics go to stderr: stdout may be a JSON-RPC channel.
fn init_tracing() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            EnvFilter::builder()
                .with_default_directive(LevelFilter::WARN.into())
                .from_env_lossy(),
        )
        .init();
}
