//! The rows read from receipts, before they become polars tables. `TABLES.md` documents
//! every column.

use std::sync::Arc;

use serde_json::Value;

/// One probe directory: a server audited once.
#[derive(Clone, Debug, Default)]
pub struct Probe {
    /// The directory, relative to what was read (empty when a single probe was read).
    pub dir: String,
    /// The server's identity across machines ([`crate::read::server_id`] of `target`).
    pub server: String,
    /// The command or URL as the probe recorded it.
    pub target: String,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
    pub protocol: Option<String>,
    pub vac_version: String,
    pub seed: u64,
    pub contract_name: Option<String>,
    pub contract_hash: Option<String>,
    pub contract_text: Option<String>,
    /// Hash of the seal record: the whole chain.
    pub head: String,
    pub records: u64,
}

#[derive(Clone, Debug)]
pub struct RunRow {
    pub probe: String,
    pub run_id: String,
    pub role: String,
    pub repetition: u32,
    pub tool: Option<String>,
    pub status: String,
    pub detail: String,
    pub start_seq: u64,
    pub end_seq: Option<u64>,
    pub frames: u64,
    pub events: u64,
}

#[derive(Clone, Debug)]
pub struct CallRow {
    pub probe: String,
    pub run_id: String,
    pub role: String,
    pub seq: u64,
    pub index: u64,
    pub tool: String,
    pub purpose: String,
    pub repeat_of: Option<u64>,
    pub arguments: String,
    /// `ok`, `is_error`, `rpc_error`, `no_result` or `failed` (the session failed).
    pub status: String,
    pub error: Option<String>,
    pub requested_ns: Option<u64>,
    pub answered_ns: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct EffectRow {
    pub probe: String,
    pub run_id: String,
    pub role: String,
    pub seq: u64,
    /// The event type: `fs_change`, `exec`, `dns`, `connect`, `datagram`, `listen`.
    pub sensor: String,
    /// For `fs_change` the change (`created`, `modified`, …); otherwise the sensor.
    pub class: String,
    /// Path, argv, name or address.
    pub target: String,
    pub t_ns: Option<u64>,
    /// The whole event, compact JSON.
    pub detail: String,
}

#[derive(Clone, Debug)]
pub struct VerdictRow {
    pub probe: String,
    pub run_id: String,
    pub seq: u64,
    /// blake3 of the verdict record's line: what a reader checks the map against.
    pub record_hash: String,
    pub tool: String,
    pub clause: String,
    pub verdict: String,
    pub reason: String,
    pub calls: Option<u64>,
    pub succeeded: Option<u64>,
    /// The contract's blake3 the cell was graded against.
    pub contract: String,
    pub basis: Option<String>,
    /// Shared with the map's cells, which cite it.
    pub evidence: Arc<Value>,
}

#[derive(Clone, Debug)]
pub struct ManifestRow {
    pub probe: String,
    pub run_id: String,
    pub seq: u64,
    pub phase: String,
    pub position: u64,
    pub tool: String,
    pub description: Option<String>,
    pub annotations: String,
    pub input_schema: String,
    pub complete: Option<bool>,
}

#[derive(Clone, Debug)]
pub struct SelfTestRow {
    pub probe: String,
    pub run_id: String,
    pub seq: u64,
    pub sensor: String,
    pub status: String,
    pub detail: String,
}

/// Everything read, one vector per table, probes in directory order and rows in log order.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    pub probes: Vec<Probe>,
    pub runs: Vec<RunRow>,
    pub calls: Vec<CallRow>,
    pub effects: Vec<EffectRow>,
    pub verdicts: Vec<VerdictRow>,
    pub manifests: Vec<ManifestRow>,
    pub selftests: Vec<SelfTestRow>,
}

impl Rows {
    pub(crate) fn append(&mut self, mut other: Rows) {
        self.probes.append(&mut other.probes);
        self.runs.append(&mut other.runs);
        self.calls.append(&mut other.calls);
        self.effects.append(&mut other.effects);
        self.verdicts.append(&mut other.verdicts);
        self.manifests.append(&mut other.manifests);
        self.selftests.append(&mut other.selftests);
    }

    /// The probe a row names.
    pub fn probe(&self, dir: &str) -> Option<&Probe> {
        self.probes.iter().find(|p| p.dir == dir)
    }
}
