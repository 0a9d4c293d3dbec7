//! `vac-harness` wires the sandbox, the MCP client, contracts and receipts into the `vac`
//! command line: [`probe::probe`] audits one server and [`report`] renders the result.

pub mod client;
pub mod exit;
pub mod fixture;
pub mod probe;
pub mod report;
