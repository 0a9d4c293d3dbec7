//! `vac fixture`: the built-in fixture servers.

use std::path::PathBuf;

use crate::fixture;
use anyhow::Context;
use clap::{Args, ValueEnum};

#[derive(Args)]
pub(crate) struct FixtureArgs {
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
pub(crate) enum Transport {
    Stdio,
    Http,
}

pub(crate) fn run_fixture(args: FixtureArgs) -> anyhow::Result<()> {
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
