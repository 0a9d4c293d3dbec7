//! `vac probe` and `vac contract derive`: one server audited, or its contract derived.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::{default_out, print_report, runtime, typed};
use crate::client::HttpEndpoint;
use crate::exit::Exit;
use crate::probe::inputs::{ArgHint, EnvVar, Inputs, Plant};
use crate::probe::{ContractSource, ProbeError, ProbeOptions, Target};
use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};

#[derive(Args)]
pub(crate) struct ProbeArgs {
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
    isolation: crate::probe::Isolation,
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
    #[arg(long, value_name = "VERSION|auto", value_parser = crate::client::Protocol::parse)]
    protocol: Option<crate::client::Protocol>,
    /// The clientInfo vac sends in initialize, as NAME/VERSION. Default: an agent host's
    /// (claude-ai/0.1.0), so that a server cannot tell it is audited by asking who calls.
    #[arg(long, value_name = "NAME/VERSION", value_parser = crate::client::ClientInfo::parse)]
    client_info: Option<crate::client::ClientInfo>,
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
pub(crate) fn parse_http(text: &str) -> Result<(u16, String), crate::PortError> {
    crate::http_port(text)
}

pub(crate) fn run_probe(args: ProbeArgs) -> anyhow::Result<ExitCode> {
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
    if let Some(info) = args.client_info {
        options.client.client_info = info;
    }
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
        options.user = crate::probe::user_of(uid, None);
    }
    if let Some(path) = args.contract {
        match path.to_str() {
            Some("intent") => options.derivation = crate::probe::Derivation::Intent,
            Some("annotations") => options.derivation = crate::probe::Derivation::Annotations,
            _ => {
                let text = super::read_named(&path, "contract")?;
                options.contract = Some(ContractSource {
                    name: path.display().to_string(),
                    text,
                });
            }
        }
    }
    let dir = options.out_dir.clone();
    let wall = Duration::from_secs(args.wall);
    let watchdog = crate::watchdog::Watchdog::start(wall, dir.clone());
    let probed = runtime()?
        .block_on(async { tokio::time::timeout(wall, crate::probe::probe(options)).await });
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

#[derive(Subcommand)]
pub(crate) enum ContractCommand {
    /// Write the contract a probe derives for a server (by default from its declared hints
    /// and its tools' intent, with the `(server)` row), as TOML to edit before a probe.
    Derive(DeriveArgs),
}

#[derive(Args)]
pub(crate) struct DeriveArgs {
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

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DeriveFrom {
    Intent,
    Annotations,
}

pub(crate) fn run_derive(args: DeriveArgs) -> anyhow::Result<ExitCode> {
    let started = typed(args.command)?;
    let mut options = ProbeOptions::new(Target::Stdio(started.command.clone()), PathBuf::new());
    started.add_to(&mut options.inputs);
    options.client.initialize_timeout = Duration::from_secs(args.timeout);
    options.derivation = match args.from {
        DeriveFrom::Intent => crate::probe::Derivation::Intent,
        DeriveFrom::Annotations => crate::probe::Derivation::Annotations,
    };
    let text = runtime()?
        .block_on(crate::probe::derive_contract(&options))
        .context("cannot derive a contract")?;
    match args.out {
        Some(path) => std::fs::write(&path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// A `--header` or `--bearer-env` vac cannot send: it names the option and the header or
/// variable, never a value.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CredentialError {
    #[error("--header {name}: give it as NAME=VALUE")]
    NotNameValue { name: String },
    #[error("--header: {0}")]
    Header(#[source] crate::client::OptionError),
    #[error("--bearer-env {var}: {source}")]
    Bearer {
        var: String,
        #[source]
        source: crate::client::OptionError,
    },
}

/// The headers of `--header NAME=VALUE` and `--bearer-env VAR`, checked as HTTP allows.
pub(crate) fn credentials(
    given: &[String],
    bearer_env: Option<&str>,
) -> Result<Vec<crate::client::Header>, CredentialError> {
    use crate::client::Header;
    let mut headers = Vec::new();
    for text in given {
        let Some((name, value)) = text.split_once('=') else {
            let name = text.split(':').next().unwrap_or_default().to_owned();
            return Err(CredentialError::NotNameValue { name });
        };
        headers.push(Header::new(name, value).map_err(CredentialError::Header)?);
    }
    if let Some(var) = bearer_env {
        headers.push(
            Header::bearer_from_env(var).map_err(|source| CredentialError::Bearer {
                var: var.to_owned(),
                source,
            })?,
        );
    }
    Ok(headers)
}

pub(crate) fn parse_isolation(
    name: &str,
) -> Result<crate::probe::Isolation, crate::probe::UnknownIsolation> {
    crate::probe::Isolation::parse(name)
        .ok_or_else(|| crate::probe::UnknownIsolation(name.to_owned()))
}
