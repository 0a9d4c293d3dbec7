//! `vac-harness` wires the sandbox, the MCP client, contracts and receipts into the `vac`
//! command line.

pub mod client;
pub mod fixture;
