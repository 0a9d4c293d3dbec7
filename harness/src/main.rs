//! The `vac` binary: parses the command line and hands each subcommand to the library.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;
use vac_analysis::AnalysisError;
use vac_harness::client::HttpEndpoint;
use vac_harness::exit::Exit;
use vac_harness::probe::inputs::{ArgHint, EnvVar, Inputs, Plant};
use vac_harness::probe::start::Started;
use vac_harness::probe::{
    ContractSource, ProbeError, ProbeOptions, ProbeReport, ReplayError, Target,
};
use vac_harness::{fixture, report};

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

#[derive(Args)]
struct ProbeArgs {
    /// Print one JSON document (SPEC §5) instead of the table.
    #[arg(long)]
    json: bool,
    /// List every cell, not only the confirmed ones.
    #[arg(long)]
    all: bool,
    /// Receipt directory (default: ./vac-receipts/probe-<time>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seconds to wait for the server's answer to initialize and to each call.
    #[arg(long, default_value_t = 20)]
    timeout: u64,
    /// Calls per tool at most.
    #[arg(long, default_value_t = 6)]
    max_calls: usize,
    /// Launches after the control run, each on the lab the launches before it left, no
    /// tool called: a manifest that changes there (a sleeper arming on its second launch)
    /// confirms `manifest.stable`, and what the launch does is graded in the `(server)` row.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=16))]
    relaunch: u32,
    /// Tools called at most (in shared runs or runs of their own); the rest are
    /// `skipped: budget`.
    #[arg(long, default_value_t = 128)]
    max_tools: usize,
    /// Subject runs at once, each an independent sandbox with its own limits (default: the
    /// cores vac may use, at most 8); the receipts keep plan order.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=64))]
    jobs: Option<u64>,
    /// How tools are kept apart: `adaptive` (one shared run, then a sandbox of its own for
    /// each tool whose effects it cannot attribute without doubt), `per-tool` (a sandbox
    /// per tool) or `per-call` (a sandbox per call).
    #[arg(long, default_value = "adaptive", value_parser = parse_isolation)]
    isolation: vac_harness::probe::Isolation,
    /// The contract: `intent` (the default: declared annotations where the server wrote
    /// them, each tool's intent from its name, description and schema elsewhere, and the
    /// universal limits), `annotations` (the annotations alone, spec defaults for absent
    /// hints), or a contract document (TOML; write `./intent` for a file of that name).
    #[arg(long, value_name = "intent|annotations|FILE")]
    contract: Option<PathBuf>,
    /// Audit a running Streamable HTTP server at this http:// or https:// URL: no sandbox,
    /// so only the protocol is witnessed and the other sensors are `capability_absent`. An
    /// https server's certificate is verified against the system's CA store (and `--ca`).
    #[arg(long, conflicts_with_all = ["command", "http"])]
    url: Option<String>,
    /// The command serves Streamable HTTP on 127.0.0.1:PORT (default path /mcp) inside the
    /// sandbox; vac connects inside the sandbox's network namespace.
    #[arg(long, value_name = "PORT[/PATH]", value_parser = parse_http)]
    http: Option<(u16, String)>,
    /// The protocol lifecycle to speak: `initialize` offering a version (2024-11-05,
    /// 2025-03-26, 2025-06-18, 2025-11-25; the server may answer an older one), 2026-07-28
    /// (stateless: `server/discover`, no initialize), or `auto` (discover, then initialize
    /// if the server does not know it). Default: initialize offering 2025-11-25.
    #[arg(long, value_name = "VERSION|auto", value_parser = vac_harness::client::Protocol::parse)]
    protocol: Option<vac_harness::client::Protocol>,
    /// Also trust the certificates of this PEM file for an https:// --url (a private CA);
    /// the system's CA store is trusted either way, and nothing skips verification.
    #[arg(long, value_name = "FILE", requires = "url")]
    ca: Option<PathBuf>,
    /// Send the header NAME: VALUE with every HTTP request (--url, --http; repeatable):
    /// credentials. Its value is written nowhere: the receipts name the header only, and
    /// anything the server echoes of it is masked.
    #[arg(long = "header", value_name = "NAME=VALUE")]
    header: Vec<String>,
    /// Send `Authorization: Bearer <token>` with every HTTP request, the token taken from
    /// the environment variable VAR (so it is in no command line or shell history), and
    /// written nowhere.
    #[arg(long = "bearer-env", value_name = "VAR")]
    bearer_env: Option<String>,
    /// Set NAME=VALUE in the server's environment (repeatable). `{work}`, `{home}` and
    /// `{tmp}` become the lab's paths as the server sees them, here, in --arg values and in
    /// the command.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<EnvVar>,
    /// Copy the host file or directory SRC into the lab's work directory at LABPATH before
    /// every run, control and subject alike (repeatable; symbolic links are refused).
    #[arg(long = "plant", value_name = "SRC:LABPATH")]
    plant: Vec<Plant>,
    /// Give FIELD of TOOL this value in every planned call (JSON, or else a string;
    /// repeatable): `--arg git_status.repo_path={work}/repo`.
    #[arg(long = "arg", value_name = "TOOL.FIELD=VALUE")]
    arg: Vec<ArgHint>,
    /// Leave this host path visible to the server although it lies in a hidden one (a
    /// home, /tmp, /run…), read-only as the rest of the host (repeatable).
    #[arg(long = "expose", value_name = "PATH")]
    expose: Vec<PathBuf>,
    /// Run the server as this uid (its primary group from the password database) instead
    /// of the invoking user (`SUDO_UID` under sudo). uid 0 keeps no capabilities.
    #[arg(long, value_name = "N")]
    uid: Option<u32>,
    /// Seconds the whole probe may take, vac's own work included (as a campaign's
    /// `wall_seconds_per_server`); past them every run is torn down, the receipts stay
    /// unsealed and vac exits 5 (incomplete).
    #[arg(long, value_name = "SECS", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..))]
    wall: u64,
    /// The server command and its arguments.
    #[arg(last = true, required_unless_present = "url")]
    command: Vec<OsString>,
}

/// `PORT` or `PORT/PATH`.
fn parse_http(text: &str) -> Result<(u16, String), vac_harness::PortError> {
    vac_harness::http_port(text)
}

#[derive(Args)]
struct ReportArgs {
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
    /// Formats to write with `--out`, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "html,md,json,csv,parquet,sarif",
          value_parser = parse_format, requires = "out")]
    format: Vec<vac_analysis::Format>,
}

fn parse_format(text: &str) -> Result<vac_analysis::Format, vac_analysis::render::UnknownFormat> {
    text.parse()
}

#[derive(Args)]
struct ImportArgs {
    /// The config file (JSON).
    file: PathBuf,
    /// Write the campaign here (refused if it exists) instead of printing it.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The campaign's name (default: "imported").
    #[arg(long, default_value = "imported")]
    name: String,
}

#[derive(Subcommand)]
enum CampaignCommand {
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
}

#[derive(Args)]
struct CampaignCompareArgs {
    first: PathBuf,
    second: PathBuf,
}

#[derive(Args)]
struct CampaignDeployArgs {
    /// The campaign file.
    file: PathBuf,
    /// How many shards.
    #[arg(long)]
    shards: u32,
    /// The directory to write `kubernetes.yaml`, `campaign.sbatch` and `merge.sbatch` in.
    #[arg(long)]
    to: PathBuf,
    /// The container image with vac in it (Kubernetes).
    #[arg(long, default_value = "vac:latest")]
    image: String,
    /// The PersistentVolumeClaim the shards write to (Kubernetes).
    #[arg(long, default_value = "vac-runs")]
    claim: String,
    /// The shared directory every Slurm node writes its shard under (default: the
    /// campaign's `out`, made absolute).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct CampaignRunArgs {
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
struct CampaignResumeArgs {
    /// The campaign directory.
    dir: PathBuf,
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
struct CampaignMergeArgs {
    /// The merged campaign directory to write.
    out: PathBuf,
    /// The shards' campaign directories.
    #[arg(required = true)]
    shards: Vec<PathBuf>,
}

#[derive(Subcommand)]
enum ContractCommand {
    /// Write the contract a probe derives for a server (by default from its declared hints
    /// and its tools' intent, with the `(server)` row), as TOML to edit before a probe.
    Derive(DeriveArgs),
}

#[derive(Args)]
struct DeriveArgs {
    /// What the contract is derived from: `intent` (declared hints, the tools' words where
    /// hints are absent, the universal limits), as a probe without `--contract` does, or
    /// `annotations` alone.
    #[arg(long, value_enum, default_value_t = DeriveFrom::Intent)]
    from: DeriveFrom,
    /// Where to write it (default: standard output).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seconds to wait for the server's answer to initialize.
    #[arg(long, default_value_t = 20)]
    timeout: u64,
    /// The server command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

#[derive(Args)]
struct StaticArgs {
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

#[derive(Args)]
struct VerifyArgs {
    /// The receipt directory.
    dir: PathBuf,
}

#[derive(Args)]
struct DemoArgs {
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

#[derive(Args)]
struct FixtureArgs {
    /// Which fixture to serve.
    #[arg(long, value_enum)]
    mode: fixture::Mode,
    /// How to serve it.
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    transport: Transport,
    /// The port to serve Streamable HTTP on (127.0.0.1, path /mcp); with `--transport http`.
    #[arg(long, required_if_eq("transport", "http"))]
    port: Option<u16>,
    /// Serve https with this PEM certificate chain (and `--tls-key`); with `--port`.
    #[arg(long, value_name = "FILE", requires_all = ["port", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// The private key (PEM) of `--tls-cert`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Answer 401 to any request without `Authorization: Bearer` and the value of this
    /// environment variable; with `--port`.
    #[arg(long, value_name = "VAR", requires = "port")]
    require_bearer_env: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DeriveFrom {
    Intent,
    Annotations,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Transport {
    Stdio,
    Http,
}

/// Exit codes: `vac_harness::exit::TABLE` (README.md lists them).
fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    if matches!(
        cli.command,
        Command::Probe(_) | Command::Campaign(_) | Command::Static(_) | Command::Demo(_)
    ) {
        keep_mounts_off_the_host();
    }
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
    let code = outcome.unwrap_or_else(|error| {
        eprintln!("vac: {error:#}");
        Exit::CouldNotRun.into()
    });
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
fn keep_mounts_off_the_host() {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    if let Err(error) = vac_sandbox::own_mount_namespace() {
        tracing::warn!(%error, "run mounts stay in the host's mount namespace");
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")
}

fn run_probe(args: ProbeArgs) -> anyhow::Result<ExitCode> {
    let out = args.out.unwrap_or_else(default_out);
    let started = typed(args.command)?;
    let target = match (args.url, args.http) {
        (Some(url), _) => match HttpEndpoint::parse(&url) {
            Ok(endpoint) => match endpoint.trust(args.ca.as_deref()) {
                Ok(endpoint) => Target::RemoteHttp(endpoint),
                Err(error) => {
                    eprintln!("vac: {error}");
                    return Ok(Exit::Usage.into());
                }
            },
            Err(error) => {
                eprintln!("vac: --url: {error}");
                return Ok(Exit::Usage.into());
            }
        },
        (None, Some((port, path))) => Target::LaunchedHttp {
            command: started.command.clone(),
            port,
            path,
        },
        (None, None) => Target::Stdio(started.command.clone()),
    };
    let headers = match credentials(&args.header, args.bearer_env.as_deref()) {
        Ok(headers) if !headers.is_empty() && matches!(target, Target::Stdio(_)) => {
            eprintln!("vac: --header and --bearer-env are for HTTP targets (--url, --http)");
            return Ok(Exit::Usage.into());
        }
        Ok(headers) => headers,
        Err(message) => {
            eprintln!("vac: {message}");
            return Ok(Exit::Usage.into());
        }
    };
    let mut options = ProbeOptions::new(target, out).with_timeout(args.timeout);
    options.client.headers = headers;
    options.client.protocol = args.protocol;
    options.max_calls_per_tool = args.max_calls;
    options.max_tools = args.max_tools;
    if let Some(jobs) = args.jobs {
        options.jobs = jobs as usize;
    }
    options.isolation = args.isolation;
    options.relaunch = args.relaunch;
    options.inputs = Inputs {
        env: args.env,
        plants: args.plant,
        args: args.arg,
        expose: args
            .expose
            .iter()
            .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
            .collect(),
        start: Vec::new(),
    };
    started.add_to(&mut options.inputs);
    if let Some(uid) = args.uid {
        options.user = vac_harness::probe::user_of(uid, None);
    }
    if let Some(path) = args.contract {
        match path.to_str() {
            Some("intent") => options.derivation = vac_harness::probe::Derivation::Intent,
            Some("annotations") => options.derivation = vac_harness::probe::Derivation::Annotations,
            _ => {
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("cannot read contract {}", path.display()))?;
                options.contract = Some(ContractSource {
                    name: path.display().to_string(),
                    text,
                });
            }
        }
    }
    let dir = options.out_dir.clone();
    let wall = Duration::from_secs(args.wall);
    let watchdog = vac_harness::watchdog::Watchdog::start(wall, dir.clone());
    let probed = runtime()?
        .block_on(async { tokio::time::timeout(wall, vac_harness::probe::probe(options)).await });
    let Ok(probed) = probed else {
        eprintln!(
            "vac: the probe's wall-time budget of {}s ran out: every run was torn down, and the receipts in {} are not sealed",
            args.wall,
            dir.display()
        );
        return Ok(Exit::Incomplete.into());
    };
    match probed {
        Ok(report) => {
            watchdog.sealed();
            print_report(&report, args.json, args.all);
            Ok(Exit::of(&report).into())
        }
        Err(error @ (ProbeError::Document(_) | ProbeError::Input(_))) => {
            eprintln!("vac: {error}");
            Ok(Exit::Usage.into())
        }
        Err(error) => Err(anyhow::Error::new(error).context("probe failed")),
    }
}

fn run_derive(args: DeriveArgs) -> anyhow::Result<ExitCode> {
    let started = typed(args.command)?;
    let mut options = ProbeOptions::new(Target::Stdio(started.command.clone()), PathBuf::new());
    started.add_to(&mut options.inputs);
    options.client.initialize_timeout = Duration::from_secs(args.timeout);
    options.derivation = match args.from {
        DeriveFrom::Intent => vac_harness::probe::Derivation::Intent,
        DeriveFrom::Annotations => vac_harness::probe::Derivation::Annotations,
    };
    let text = runtime()?
        .block_on(vac_harness::probe::derive_contract(&options))
        .context("cannot derive a contract")?;
    match args.out {
        Some(path) => std::fs::write(&path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// `vac static`: findings from a tools/list file, a command's control run, or the manifests
/// recorded in receipts (then compared with their verdicts).
fn run_static(args: StaticArgs) -> anyhow::Result<ExitCode> {
    use vac_analysis::compare::{self, Prediction};
    use vac_analysis::scan::{self, Scope};
    let usage = |message: String| {
        eprintln!("vac: {message}");
        Ok(Exit::Usage.into())
    };
    let scope = match &args.contract {
        None => Scope::None,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read contract {}", path.display()))?;
            match Scope::of_contract(&path.display().to_string(), &text) {
                Ok(scope) => scope,
                Err(error) => return usage(error.to_string()),
            }
        }
    };
    let version = env!("CARGO_PKG_VERSION");
    // A manifest without receipts: findings only.
    let manifest =
        |server: String, tools: &[serde_json::Value], source: Option<(String, String)>| {
            let findings = scan::scan(&server, tools, &scope);
            if args.sarif {
                let locate = |f: &scan::Finding| {
                    let (uri, text) = source.as_ref()?;
                    Some(vac_analysis::sarif::manifest_line(uri, text, &f.tool))
                };
                let log = vac_analysis::sarif::static_sarif(&findings, &server, version, &locate);
                println!("{}", serde_json::to_string_pretty(&log).unwrap_or_default());
            } else {
                let predictions: Vec<Prediction> = findings.iter().map(Into::into).collect();
                print_static(&predictions, &findings, None, args.json);
            }
            ExitCode::from(Exit::Clean)
        };
    if !args.command.is_empty() {
        if args.import.is_some() {
            return usage(
                "--import compares with dynamic verdicts: give a receipt directory".into(),
            );
        }
        let started = typed(args.command)?;
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
            .block_on(vac_harness::probe::control_manifest(&options))
            .context("cannot read the server's tools/list")?;
        return Ok(manifest(vac_analysis::server_id(&target), &tools, None));
    }
    let mut input = args
        .input
        .clone()
        .expect("clap requires an input or a command");
    if input.extension().is_some_and(|e| e == "toml") {
        // A campaign file: its receipts when it has run, else each target's control run.
        let campaign = match vac_harness::campaign::Campaign::load(&input) {
            Ok(campaign) => campaign,
            Err(error) => return usage(error.to_string()),
        };
        if campaign.out.join(vac_receipts::LOG_FILE).is_file() {
            input = campaign.out.clone();
        } else {
            return static_of_campaign(&campaign, &args);
        }
    }
    if input.is_dir() {
        let analysis = match vac_analysis::load(&input, args.campaign.as_deref()) {
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
                let text =
                    std::fs::read_to_string(path).with_context(|| format!("cannot read {name}"))?;
                match compare::import(&name, &text, &analysis.map) {
                    Ok(predictions) => {
                        let comparison = compare::compare(&analysis.map, &predictions, &name);
                        (predictions, comparison)
                    }
                    Err(error) => return usage(error.to_string()),
                }
            }
        };
        if args.sarif {
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
                version,
                &locate,
            );
            println!("{}", serde_json::to_string_pretty(&log).unwrap_or_default());
        } else {
            print_static(
                &predictions,
                &analysis.findings,
                Some(&comparison),
                args.json,
            );
        }
        return Ok(Exit::Clean.into());
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
    let tools = match scan::tools_of(&document) {
        Ok(tools) => tools,
        Err(error) => return usage(format!("{name}: {error}")),
    };
    let server = input
        .file_stem()
        .map_or_else(|| name.clone(), |s| s.to_string_lossy().into_owned());
    Ok(manifest(server, tools, Some((name, text.clone()))))
}

/// `vac static CAMPAIGN.toml` before the campaign ran: every target's tools/list from a
/// control run (no call), read under the target's contract scope, named by its id.
fn static_of_campaign(
    campaign: &vac_harness::campaign::Campaign,
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
        let options = vac_harness::campaign::probe_options(campaign, target, kind, PathBuf::new());
        let tools = runtime
            .block_on(vac_harness::probe::control_manifest(&options))
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
fn print_static(
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

/// `vac campaign compare A B`: the verdict grids of two receipt directories, cell by cell.
fn compare_grids(first: &std::path::Path, second: &std::path::Path) -> anyhow::Result<ExitCode> {
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
    let (a, b) = match (load(first), load(second)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(exit), _) | (_, Err(exit)) => return Ok(exit.into()),
    };
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
fn run_import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let name = args.file.display().to_string();
    let text = match std::fs::read_to_string(&args.file) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("vac: {name}: cannot read: {error}");
            return Ok(Exit::Usage.into());
        }
    };
    let campaign = match vac_harness::campaign::import::import(&name, &text, &args.name) {
        Ok(campaign) => campaign,
        Err(error) => {
            eprintln!("vac: {error}");
            return Ok(Exit::Usage.into());
        }
    };
    match &args.out {
        None => print!("{campaign}"),
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
            std::io::Write::write_all(&mut file, campaign.as_bytes())
                .with_context(|| format!("cannot write {}", out.display()))?;
        }
    }
    Ok(Exit::Clean.into())
}

/// `vac campaign run|resume|merge|check`.
fn run_campaign(command: CampaignCommand) -> anyhow::Result<ExitCode> {
    use vac_harness::campaign::{self, Campaign, Progress, RunError, Shard, ShardError};
    let progress = |quiet: bool| {
        use std::io::IsTerminal;
        match (quiet, std::io::stderr().is_terminal()) {
            (true, _) => Progress::Quiet,
            (false, true) => Progress::Bar,
            (false, false) => Progress::Lines,
        }
    };
    let shard_of = |args: &CampaignRunArgs| -> Result<Option<Shard>, ShardError> {
        match &args.shard {
            Some(text) => Shard::parse(text).map(Some),
            None => Shard::from_env(&|name| std::env::var(name).ok(), args.shards),
        }
    };
    let load = |args: &CampaignRunArgs| -> anyhow::Result<(Campaign, Option<Shard>)> {
        let mut campaign = Campaign::load(&args.file)?;
        if let Some(out) = &args.out {
            campaign.out = out.clone();
        }
        let shard = shard_of(args)?;
        Ok((campaign, shard))
    };
    let outcome = match command {
        CampaignCommand::Check(args) => {
            let (campaign, shard) = match load(&args) {
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
                campaign::out_dir(&campaign, shard).display()
            );
            for target in &campaign.targets {
                let mine = shard.is_none_or(|s| s.holds(&target.id));
                println!("  {} {}", if mine { "run " } else { "skip" }, target.id);
            }
            return Ok(Exit::Clean.into());
        }
        CampaignCommand::Run(args) => {
            let (campaign, shard) = match load(&args) {
                Ok(loaded) => loaded,
                Err(error) => {
                    eprintln!("vac: {error}");
                    return Ok(Exit::Usage.into());
                }
            };
            runtime()?.block_on(campaign::run(&campaign, shard, progress(args.quiet)))
        }
        CampaignCommand::Resume(args) => {
            runtime()?.block_on(campaign::resume(&args.dir, progress(args.quiet)))
        }
        CampaignCommand::Merge(args) => campaign::merge(&args.out, &args.shards),
        CampaignCommand::Compare(args) => return compare_grids(&args.first, &args.second),
        CampaignCommand::Recorded(args) => match campaign::recorded_text(&args.dir) {
            Ok(text) => {
                print!("{text}");
                return Ok(Exit::Clean.into());
            }
            Err(error) => {
                eprintln!("vac: {error}");
                return Ok(Exit::Usage.into());
            }
        },
        CampaignCommand::Deploy(args) => {
            let loaded = match Campaign::load(&args.file) {
                Ok(loaded) => loaded,
                Err(error) => {
                    eprintln!("vac: {error}");
                    return Ok(Exit::Usage.into());
                }
            };
            if args.shards == 0 || args.shards > 10_000 {
                eprintln!("vac: --shards {}: expected 1 to 10000", args.shards);
                return Ok(Exit::Usage.into());
            }
            let out = args.out.clone().unwrap_or_else(|| loaded.out.clone());
            let deploy = campaign::deploy::Deploy {
                shards: args.shards,
                image: args.image.clone(),
                claim: args.claim.clone(),
                out: std::path::absolute(&out)
                    .unwrap_or(out)
                    .display()
                    .to_string(),
            };
            let files = campaign::deploy::render(&loaded, &deploy);
            match campaign::deploy::write(&args.to, &files) {
                Ok(written) => {
                    for path in written {
                        println!("{}", path.display());
                    }
                    return Ok(Exit::Clean.into());
                }
                Err(error) => {
                    eprintln!("vac: {}: {error}", args.to.display());
                    return Ok(Exit::Usage.into());
                }
            }
        }
    };
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

fn run_report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let single = args.dir.join(vac_receipts::LOG_FILE).is_file()
        && !vac_harness::campaign::is_campaign(&args.dir);
    let mut exit = Exit::Clean;
    if single {
        match vac_harness::probe::report(&args.dir) {
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
    if !single || args.out.is_some() {
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
            exit = match vac_harness::campaign::is_campaign(&args.dir) {
                // As the campaign ended: every member, the ones the map has no row for too.
                true => match vac_harness::campaign::members(&args.dir) {
                    Ok(members) => {
                        Exit::of_campaign(members.iter().map(vac_harness::campaign::member_exit))
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
        if let Some(out) = &args.out {
            let written = write_map(&analysis, &args.dir, out, args.format.clone())?;
            match args.json {
                true => eprintln!("{written}"),
                false => println!("{written}"),
            }
        }
    }
    Ok(exit.into())
}

/// How a directory of probes that is not a campaign ends: as its worst probe's cells.
fn map_exit(map: &vac_analysis::Map) -> Exit {
    let totals = map.totals();
    let worst = match (totals.confirmed > 0, totals.errored > 0) {
        (true, _) => Exit::Violation,
        (false, true) => Exit::Incomplete,
        (false, false) => Exit::Clean,
    };
    Exit::of_campaign([worst])
}

/// Renders the map of `dir` into `out`; returns the line that says where.
fn write_map(
    analysis: &vac_analysis::Analysis,
    dir: &std::path::Path,
    out: &std::path::Path,
    formats: Vec<vac_analysis::Format>,
) -> anyhow::Result<String> {
    let options = vac_analysis::RenderOptions {
        formats,
        source_root: if dir.is_relative() {
            dir.to_string_lossy().into_owned()
        } else {
            String::new()
        },
        version: env!("CARGO_PKG_VERSION").to_string(),
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

/// The terminal's width: `COLUMNS`, else 120.
fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|&w: &usize| w >= 40)
        .unwrap_or(120)
}

/// The demo map's name, the same on every run (`vac report DIR --campaign "vac demo"`
/// regenerates it byte for byte).
const DEMO_CAMPAIGN: &str = "vac demo";

/// The built-in campaign over the fixtures. `vac demo` writes it as `campaign.toml` in its
/// directory (so `vac campaign run` of that file runs it again) and runs it there.
const DEMO_TOML: &str = r#"# The built-in campaign of `vac demo`: the three fixtures, once each.
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

fn run_demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    use vac_harness::campaign::{self, Campaign, Progress};
    let runtime = runtime()?;
    let dir = args.out.join(format!("demo-{}", stamp()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let file = dir.join("campaign.toml");
    std::fs::write(&file, DEMO_TOML).with_context(|| format!("cannot write {}", file.display()))?;
    let demo = Campaign::load(&file).context("the built-in campaign does not parse")?;
    let outcome = runtime
        .block_on(campaign::run(&demo, None, Progress::Quiet))
        .context("the demo campaign failed")?;
    let mut worst = ExitCode::SUCCESS;
    for member in &outcome.members {
        let report = vac_harness::probe::report(&dir.join(&member.dir)).with_context(|| {
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
    let written = write_map(&analysis, &dir, &map, vac_analysis::Format::ALL.to_vec())?;
    match args.json {
        true => eprintln!("{written}"),
        false => println!("{written}"),
    }
    Ok(worst)
}

/// The chain and blobs, then every verdict record re-derived from the recorded evidence.
fn run_verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    if vac_harness::campaign::is_campaign(&args.dir) {
        return verify_campaign(&args.dir);
    }
    Ok(verify_probe(&args.dir).into())
}

/// A campaign directory: its own chain, then every probe it lists — each probe's chain,
/// its head against the one recorded, and its verdicts re-graded.
fn verify_campaign(dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    let members = match vac_harness::campaign::members(dir) {
        Ok(members) => members,
        Err(error) => {
            println!("{error}");
            return Ok(Exit::Broken.into());
        }
    };
    let mut worst = Exit::Clean;
    let mut probes = 0;
    for member in members.iter().filter(|m| m.role == "probe") {
        let Some(head) = &member.head else {
            println!(
                "{}: {} rep {}: no sealed log ({}): {}",
                dir.display(),
                member.target,
                member.repetition,
                member.status,
                member.detail
            );
            continue;
        };
        let path = dir.join(&member.dir);
        match vac_receipts::verify(&path, &vac_receipts::VerifyOptions::default()) {
            Ok(report) if report.head.to_string() == *head => {}
            Ok(report) => {
                println!(
                    "{}: BROKEN: its head is {}, the campaign log lists {head}",
                    path.display(),
                    report.head
                );
                worst = Exit::Broken;
                continue;
            }
            Err(_) => {}
        }
        probes += 1;
        if verify_probe(&path) != Exit::Clean {
            worst = Exit::Broken;
        }
    }
    if worst == Exit::Clean {
        let head = vac_receipts::verify(dir, &vac_receipts::VerifyOptions::default())
            .map(|r| r.head.to_string())
            .unwrap_or_default();
        println!(
            "{}: campaign chain verifies (head {head}); {probes} probes verify and re-grade, each with the head the chain lists",
            dir.display()
        );
    }
    Ok(worst.into())
}

/// One probe's chain and blobs, then every verdict record re-derived from its evidence.
fn verify_probe(path: &std::path::Path) -> Exit {
    let dir = path.display();
    let chain = match vac_receipts::verify(path, &vac_receipts::VerifyOptions::default()) {
        Ok(report) => report,
        Err(error) => {
            println!("{dir}: BROKEN: {error}");
            return Exit::Broken;
        }
    };
    match vac_harness::probe::check_verdicts(path) {
        Ok(regraded) if regraded.mismatches.is_empty() => {
            println!("{dir}: {chain}; every verdict re-graded from the recorded evidence");
            Exit::Clean
        }
        // Graded under other rules: the chain shows the receipts are as written; the
        // differences are what today's rules make of the same evidence.
        Ok(regraded) if regraded.other_rules() => {
            println!(
                "{dir}: {chain}; graded under rules revision {}, re-graded under revision {}: {} records differ (a rule change, not tampering: the chain verifies)",
                regraded.graded_under,
                vac_contracts::RULES,
                regraded.mismatches.len()
            );
            for m in regraded.mismatches.iter().take(20) {
                let at = m
                    .seq
                    .map_or("missing record".to_string(), |s| format!("seq {s}"));
                println!(
                    "{dir}: REGRADED: {at}: {} × {}: {}",
                    m.tool, m.clause, m.detail
                );
            }
            if regraded.mismatches.len() > 20 {
                println!(
                    "{dir}: REGRADED: … and {} more",
                    regraded.mismatches.len() - 20
                );
            }
            Exit::Clean
        }
        Ok(regraded) => {
            let mismatches = regraded.mismatches;
            for m in &mismatches {
                let at = m
                    .seq
                    .map_or("missing record".to_string(), |s| format!("seq {s}"));
                let what = match m.clause.as_str() {
                    "profile" => "a profile line",
                    _ => "a verdict",
                };
                println!(
                    "{dir}: MISMATCH: {at}: {} × {}: {what} the evidence does not support: {}",
                    m.tool, m.clause, m.detail
                );
            }
            Exit::Broken
        }
        Err(error) => {
            println!("{dir}: BROKEN: {:#}", anyhow::Error::new(error));
            Exit::Broken
        }
    }
}

/// The headers of `--header NAME=VALUE` and `--bearer-env VAR`, checked as HTTP allows;
/// an error names the option and the header or variable, never a value.
fn credentials(
    given: &[String],
    bearer_env: Option<&str>,
) -> Result<Vec<vac_harness::client::Header>, String> {
    use vac_harness::client::Header;
    let mut headers = Vec::new();
    for text in given {
        let Some((name, value)) = text.split_once('=') else {
            let name = text.split(':').next().unwrap_or_default();
            return Err(format!("--header {name}: give it as NAME=VALUE"));
        };
        headers.push(Header::new(name, value).map_err(|e| format!("--header: {e}"))?);
    }
    if let Some(var) = bearer_env {
        headers.push(Header::bearer_from_env(var).map_err(|e| format!("--bearer-env {var}: {e}"))?);
    }
    Ok(headers)
}

/// The command as typed here, made to start the same in the sandbox (`probe::start`).
fn typed(command: Vec<OsString>) -> anyhow::Result<Started> {
    let origin = std::env::current_dir().context("cannot read the current directory")?;
    Ok(vac_harness::probe::start::as_installed(command, &origin))
}

fn print_report(report: &ProbeReport, json: bool, all: bool) {
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

fn default_out() -> PathBuf {
    PathBuf::from("vac-receipts").join(format!("probe-{}", stamp()))
}

fn stamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}-{:09}", now.as_secs(), now.subsec_nanos())
}

fn run_fixture(args: FixtureArgs) -> anyhow::Result<()> {
    // One thread is plenty for a fixture and keeps its process tree small in the sandbox.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    let bearer =
        match &args.require_bearer_env {
            None => None,
            Some(var) => Some(std::env::var(var).map_err(|_| {
                anyhow::anyhow!("--require-bearer-env {var}: the variable is not set")
            })?),
        };
    let served = match (args.transport, args.port) {
        (Transport::Http, Some(port)) => runtime.block_on(fixture::serve_http(
            args.mode,
            fixture::HttpServing {
                port,
                tls: args.tls_cert.zip(args.tls_key),
                bearer,
            },
        )),
        (Transport::Stdio, Some(_)) => anyhow::bail!("--port needs --transport http"),
        _ => runtime.block_on(fixture::serve_stdio(args.mode)),
    };
    served.with_context(|| format!("fixture {:?} failed", args.mode))
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

fn parse_isolation(
    name: &str,
) -> Result<vac_harness::probe::Isolation, vac_harness::probe::UnknownIsolation> {
    vac_harness::probe::Isolation::parse(name)
        .ok_or_else(|| vac_harness::probe::UnknownIsolation(name.to_owned()))
}
