//! The rows read from receipts, before they become polars tables. `TABLES.md` documents
//! every column.

use std::sync::Arc;

use polars::prelude::{Column, DataFrame, IntoColumn, PolarsError, StringChunkedBuilder};
use serde_json::Value;
use vac_receipts::Json;

/// Text that many rows repeat (the probe, the run, the role, the sensor): shared, not copied.
pub type Shared = Arc<str>;

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

/// A campaign member that ended without verdicts: the target, its probe directory and
/// repetition, how it ended (`failed`, `timed_out`), the exit code it would have had on its
/// own, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotAudited {
    pub target: String,
    pub dir: String,
    pub repetition: u32,
    pub status: String,
    pub exit: u8,
    pub detail: String,
}

/// How every rendering of the map says it: `DIR STATUS (exit N): DETAIL`.
impl std::fmt::Display for NotAudited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} (exit {})", self.dir, self.status, self.exit)?;
        match self.detail.is_empty() {
            true => Ok(()),
            false => write!(f, ": {}", self.detail),
        }
    }
}

#[derive(Clone, Debug)]
pub struct RunRow {
    pub probe: Shared,
    pub run_id: Shared,
    pub role: Shared,
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
    pub probe: Shared,
    pub run_id: Shared,
    pub role: Shared,
    pub seq: u64,
    pub index: u64,
    pub tool: String,
    pub purpose: String,
    pub repeat_of: Option<u64>,
    pub arguments: String,
    /// `ok`, `is_error`, `told_error` (not flagged, but its text tells an error: the
    /// judgement recorded with the call), `rpc_error`, `no_result` or `failed` (the session
    /// failed).
    pub status: String,
    pub error: Option<String>,
    pub requested_ns: Option<u64>,
    pub answered_ns: Option<u64>,
}

/// One effect, as the reader hands it to [`Effects::push`].
#[derive(Clone, Copy, Debug)]
pub struct EffectRow<'a> {
    pub probe: &'a str,
    pub run_id: &'a str,
    pub role: &'a str,
    pub seq: u64,
    /// The event type: `fs_change`, `exec`, `dns`, `connect`, `datagram`, `listen`.
    pub sensor: &'a str,
    /// For `fs_change` the change (`created`, `modified`, …); otherwise the sensor.
    pub class: &'a str,
    /// Path, argv, name or address.
    pub target: &'a str,
    pub t_ns: Option<u64>,
    /// The whole event, compact JSON.
    pub detail: &'a str,
}

/// The `effects` table, built column by column as the receipts are read: it is nearly all
/// the rows, so it is never held as rows and then copied into columns. One chunk per probe.
#[derive(Clone, Debug, Default)]
pub struct Effects {
    chunks: Vec<DataFrame>,
    open: Option<EffectColumns>,
}

#[derive(Clone)]
struct EffectColumns {
    text: [StringChunkedBuilder; 7],
    seq: Vec<u64>,
    t_ns: Vec<Option<u64>>,
}

impl std::fmt::Debug for EffectColumns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EffectColumns({} rows)", self.seq.len())
    }
}

impl Effects {
    /// The columns in table order (`TABLES.md`).
    pub const COLUMNS: [&'static str; 9] = [
        "probe", "run_id", "role", "seq", "sensor", "class", "target", "t_ns", "detail",
    ];

    pub fn push(&mut self, row: EffectRow<'_>) {
        let open = self.open.get_or_insert_with(|| EffectColumns {
            text: [
                "probe", "run_id", "role", "sensor", "class", "target", "detail",
            ]
            .map(|name| StringChunkedBuilder::new(name.into(), 1024)),
            seq: Vec::new(),
            t_ns: Vec::new(),
        });
        let text = [
            row.probe, row.run_id, row.role, row.sensor, row.class, row.target, row.detail,
        ];
        for (column, value) in open.text.iter_mut().zip(text) {
            column.append_value(value);
        }
        open.seq.push(row.seq);
        open.t_ns.push(row.t_ns);
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(DataFrame::height).sum::<usize>()
            + self.open.as_ref().map_or(0, |o| o.seq.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes the rows pushed so far into a chunk.
    pub(crate) fn seal(&mut self) -> Result<(), PolarsError> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let [probe, run_id, role, sensor, class, target, detail] =
            open.text.map(|b| b.finish().into_column());
        let columns = vec![
            probe,
            run_id,
            role,
            Column::new("seq".into(), open.seq),
            sensor,
            class,
            target,
            Column::new("t_ns".into(), open.t_ns),
            detail,
        ];
        let chunk = DataFrame::new_infer_height(columns)?;
        self.chunks.push(chunk);
        Ok(())
    }

    /// The whole table: the chunks stacked (without copying their data).
    pub fn frame(&self) -> Result<DataFrame, PolarsError> {
        let mut chunks = self.chunks.iter();
        let Some(first) = chunks.next() else {
            let columns = Effects::COLUMNS
                .iter()
                .map(|&name| match name {
                    "seq" => Column::new(name.into(), Vec::<u64>::new()),
                    "t_ns" => Column::new(name.into(), Vec::<Option<u64>>::new()),
                    _ => Column::new(name.into(), Vec::<&str>::new()),
                })
                .collect();
            return DataFrame::new_infer_height(columns);
        };
        let mut all = first.clone();
        for chunk in chunks {
            all.vstack_mut(chunk)?;
        }
        Ok(all)
    }

    fn append(&mut self, other: &mut Effects) {
        self.chunks.append(&mut other.chunks);
    }
}

#[derive(Clone, Debug)]
pub struct VerdictRow {
    pub probe: Shared,
    pub run_id: Shared,
    pub seq: u64,
    /// blake3 of the verdict record's line: what a reader checks the map against.
    pub record_hash: Shared,
    pub tool: String,
    pub clause: String,
    /// One of [`crate::map::VERDICTS`].
    pub verdict: &'static str,
    pub reason: Shared,
    pub calls: Option<u64>,
    pub succeeded: Option<u64>,
    /// The contract's blake3 the cell was graded against.
    pub contract: Shared,
    pub basis: Option<String>,
    /// Its canonical text, shared with the map's cells, which cite it.
    pub evidence: Arc<Json>,
}

#[derive(Clone, Debug)]
pub struct ManifestRow {
    pub probe: Shared,
    pub run_id: Shared,
    pub seq: u64,
    pub phase: String,
    pub position: u64,
    pub tool: String,
    pub description: Option<String>,
    pub annotations: String,
    pub input_schema: String,
    pub complete: Option<bool>,
    /// The whole tools/list entry, as the server sent it (what the static rules read).
    pub entry: Value,
}

#[derive(Clone, Debug)]
pub struct SelfTestRow {
    pub probe: Shared,
    pub run_id: Shared,
    pub seq: u64,
    pub sensor: String,
    pub status: String,
    pub detail: String,
}

/// One line of a tool's behaviour profile: a kind of effect and one of its targets, as the
/// probe's `effect` record (sensor `profile`) gives it.
#[derive(Clone, Debug)]
pub struct ProfileRow {
    pub probe: Shared,
    pub run_id: Shared,
    pub seq: u64,
    pub tool: String,
    /// `reads`, `writes`, `execs`, `reaches`, `listens`, `secrets_shown`,
    /// `instructions_shown`, `manifest_changes`.
    pub kind: String,
    pub target: String,
    /// Distinct targets of this kind the tool had in the probe (more than its records when
    /// the list was cut).
    pub distinct: u64,
}

/// Everything read, one vector per table, probes in directory order and rows in log order.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    /// A campaign's members that could not be audited (failed, timed out): what the
    /// campaign log says of each; empty for probes read without a campaign log.
    pub not_audited: Vec<NotAudited>,
    pub probes: Vec<Probe>,
    pub runs: Vec<RunRow>,
    pub calls: Vec<CallRow>,
    pub effects: Effects,
    pub verdicts: Vec<VerdictRow>,
    pub manifests: Vec<ManifestRow>,
    pub selftests: Vec<SelfTestRow>,
    pub profile: Vec<ProfileRow>,
}

impl Rows {
    /// The rows of `parts`, in order, each moved once (every table sized before filling).
    pub(crate) fn concat(parts: Vec<Rows>) -> Rows {
        fn join<T>(parts: &mut [Rows], table: fn(&mut Rows) -> &mut Vec<T>) -> Vec<T> {
            let mut all = Vec::with_capacity(parts.iter_mut().map(|p| table(p).len()).sum());
            for part in parts {
                all.append(table(part));
            }
            all
        }
        let mut parts = parts;
        Rows {
            not_audited: join(&mut parts, |r| &mut r.not_audited),
            probes: join(&mut parts, |r| &mut r.probes),
            runs: join(&mut parts, |r| &mut r.runs),
            calls: join(&mut parts, |r| &mut r.calls),
            effects: {
                let mut all = Effects::default();
                for part in &mut parts {
                    all.append(&mut part.effects);
                }
                all
            },
            verdicts: join(&mut parts, |r| &mut r.verdicts),
            manifests: join(&mut parts, |r| &mut r.manifests),
            selftests: join(&mut parts, |r| &mut r.selftests),
            profile: join(&mut parts, |r| &mut r.profile),
        }
    }

    /// The probe a row names.
    pub fn probe(&self, dir: &str) -> Option<&Probe> {
        self.probes.iter().find(|p| p.dir == dir)
    }
}
