//! `vac-harness` wires the sandbox, the MCP client, contracts and receipts into the `vac`
//! command line: [`probe::probe`] audits one server, [`campaign`] runs many, and [`report`]
//! renders the result.

pub mod campaign;
pub mod cli;
pub mod client;
pub mod exit;
pub mod fixture;
pub mod probe;
pub mod report;
pub mod watchdog;

/// `PORT` or `PORT/PATH` of a server that serves Streamable HTTP in the sandbox (`--http`,
/// a campaign target's `http`): the path defaults to `/mcp`; the sinkhole's ports are
/// refused.
pub fn http_port(text: &str) -> Result<(u16, String), PortError> {
    let (port, path) = match text.split_once('/') {
        Some((port, path)) => (port, format!("/{path}")),
        None => (text, fixture::HTTP_PATH.to_string()),
    };
    let port = port.parse::<u16>().map_err(|source| PortError::Bad {
        port: port.to_owned(),
        source,
    })?;
    if vac_sandbox::DEFAULT_PORTS.contains(&port) {
        return Err(PortError::Sinkhole { port });
    }
    Ok((port, path))
}

/// An `--http` (or a target's `http`) that names no port a server can serve on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    #[error("bad port {port:?}: {source}")]
    Bad {
        port: String,
        #[source]
        source: std::num::ParseIntError,
    },
    #[error("port {port} is one the sandbox's sinkhole listens on; serve on another port")]
    Sinkhole { port: u16 },
}
