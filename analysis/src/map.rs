//! The conformance map: server × tool × clause → verdict, over every probe read (a
//! server probed several times contributes each repetition to its cells).

use std::collections::{HashMap, HashSet};

use std::sync::Arc;

use serde_json::{Value, json};
use vac_contracts::EffectClass;
use vac_contracts::touched::{self, Touched};
use vac_receipts::Json;

use crate::rows::{NotAudited, Probe, Rows, Shared, VerdictRow};
use crate::severity::{self, Severity};

/// Verdict names in the order counts are kept and shown.
pub const VERDICTS: [&str; 4] = ["confirmed", "refuted", "skipped", "errored"];

/// A grid cell no verdict record covers (a clause another server's grid has).
pub const NOT_GRADED: &str = "not_graded";

#[derive(Clone, Debug)]
pub struct Map {
    /// Names the campaign: what was read, as given (SARIF `automationDetails.id`).
    pub campaign: String,
    /// The clauses of the grid, in report order.
    pub clauses: Vec<String>,
    pub servers: Vec<ServerMap>,
}

#[derive(Clone, Debug)]
pub struct ServerMap {
    pub id: String,
    pub name: Option<String>,
    pub version: Option<String>,
    /// The protocol versions spoken with it, over its probes, first seen first.
    pub protocols: Vec<String>,
    /// The probe directories behind the server's cells (its repetitions).
    pub probes: Vec<String>,
    pub tools: Vec<ToolMap>,
    /// Its probes (repetitions) that could not be audited, as the campaign log says: a
    /// server none of whose probes was audited has no tools and is listed all the same.
    pub not_audited: Vec<NotAudited>,
    pub summary: Summary,
}

#[derive(Clone, Debug)]
pub struct ToolMap {
    pub name: String,
    /// Calls of the tool in subject runs, and those answered with a result that is not
    /// an error.
    pub calls: u64,
    pub succeeded: u64,
    /// One per clause of the map, in its order.
    pub cells: Vec<MapCell>,
    /// What the tool was seen to do whatever its contract (its behaviour profile), per
    /// kind over every repetition; empty when it did nothing seen; `None` when none of the
    /// server's probes recorded a profile (receipts from before vac recorded them).
    pub profile: Option<Vec<Seen>>,
}

/// One kind of a tool's behaviour profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// `reads`, `writes`, `execs`, `reaches`, `listens`, `secrets_shown`,
    /// `instructions_shown`, `manifest_changes`.
    pub kind: String,
    /// The targets listed, over the repetitions, first seen first.
    pub targets: Vec<String>,
    /// The most distinct targets one repetition had, or the targets listed if more.
    pub distinct: u64,
}

impl ServerMap {
    /// The behaviour profile of each tool whose receipts recorded one, in map order (empty
    /// when none did: receipts from before profiles were recorded).
    pub fn profiled(&self) -> Vec<(&str, &[Seen])> {
        self.tools
            .iter()
            .filter_map(|t| Some((t.name.as_str(), t.profile.as_deref()?)))
            .collect()
    }
}

impl Seen {
    /// Targets the records counted but did not list.
    pub fn omitted(&self) -> u64 {
        self.distinct.saturating_sub(self.targets.len() as u64)
    }
}

/// The class of a profile record whose tool did nothing the sensors saw.
pub const NOTHING_SEEN: &str = "nothing_seen";

#[derive(Clone, Debug)]
pub struct MapCell {
    pub clause: String,
    /// The headline: confirmed if any repetition confirmed, else errored if any errored,
    /// else refuted if any refuted, else skipped; [`NOT_GRADED`] without records.
    pub verdict: &'static str,
    /// Repetitions per verdict, in [`VERDICTS`] order.
    pub counts: [u64; 4],
    /// Every repetition gave the same verdict.
    pub stable: bool,
    pub severity: Severity,
    /// The reason of the headline's first record.
    pub reason: Shared,
    /// The verdict records behind the cell, in probe order.
    pub records: Vec<CellRecord>,
    /// What a confirmed cell's effects touched, the most serious (its confirmed records'
    /// evidence); `None` for every other cell.
    pub touched: Option<Touched>,
}

#[derive(Clone, Debug)]
pub struct CellRecord {
    pub probe: Shared,
    pub seq: u64,
    pub hash: Shared,
    pub verdict: &'static str,
    pub reason: Shared,
    pub contract: Shared,
    pub calls: Option<u64>,
    pub succeeded: Option<u64>,
    /// The record's evidence, as its canonical text.
    pub evidence: Arc<Json>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub tools: u64,
    /// Tools with a successful call, a refuted cell and no confirmed or errored one.
    pub kept: u64,
    /// Headline verdicts of the server's cells.
    pub confirmed: u64,
    pub refuted: u64,
    pub skipped: u64,
    pub errored: u64,
    pub not_graded: u64,
    /// Tools none of whose calls succeeded.
    pub no_successful_call: u64,
    /// Cells whose repetitions disagree.
    pub unstable: u64,
    /// Probes (repetitions) that could not be audited.
    pub not_audited: u64,
    /// Confirmed cells by what they touched, in [`Touched::ALL`] order.
    pub touched: [u64; 7],
}

impl Map {
    /// Every cell, with its server and tool, in map order.
    pub fn cells(&self) -> impl Iterator<Item = (&ServerMap, &ToolMap, &MapCell)> {
        self.servers.iter().flat_map(|s| {
            s.tools
                .iter()
                .flat_map(move |t| t.cells.iter().map(move |c| (s, t, c)))
        })
    }

    /// The map totals: the sum of the servers' summaries.
    pub fn totals(&self) -> Summary {
        let mut total = Summary::default();
        for s in &self.servers {
            let s = &s.summary;
            total.tools += s.tools;
            total.kept += s.kept;
            total.confirmed += s.confirmed;
            total.refuted += s.refuted;
            total.skipped += s.skipped;
            total.errored += s.errored;
            total.not_graded += s.not_graded;
            total.no_successful_call += s.no_successful_call;
            total.unstable += s.unstable;
            total.not_audited += s.not_audited;
            for (sum, n) in total.touched.iter_mut().zip(s.touched) {
                *sum += n;
            }
        }
        total
    }
}

/// Builds the map of `rows`; `campaign` names it.
pub fn build(rows: &Rows, campaign: &str) -> Map {
    let probes: HashMap<&str, &Probe> = rows.probes.iter().map(|p| (p.dir.as_str(), p)).collect();
    let server_of = |probe: &str| probes.get(probe).map_or("", |p| p.server.as_str());

    // Servers in first-seen order; tools in first-seen order within each.
    let mut order: Vec<&str> = Vec::new();
    let mut by_server: HashMap<&str, ServerCells> = HashMap::new();
    for v in &rows.verdicts {
        let server = server_of(&v.probe);
        let cells = by_server.entry(server).or_insert_with(|| {
            order.push(server);
            ServerCells::default()
        });
        cells.add(v);
    }
    let mut clauses: Vec<&str> = Vec::new();
    let mut seen = HashSet::new();
    for v in &rows.verdicts {
        if seen.insert(v.clause.as_str()) {
            clauses.push(&v.clause);
        }
    }
    clauses.sort_by_key(|c| severity::clause_rank(c));

    // Calls per (server, tool) in subject runs.
    let mut calls: HashMap<(&str, &str), (u64, u64)> = HashMap::new();
    for c in rows.calls.iter().filter(|c| &*c.role == "subject") {
        let entry = calls
            .entry((server_of(&c.probe), c.tool.as_str()))
            .or_default();
        entry.0 += 1;
        entry.1 += u64::from(c.status == "ok");
    }

    let (profiled, profiles) = profiles_of(rows, &server_of);

    let mut servers: Vec<ServerMap> = order
        .iter()
        .map(|&server| {
            let cells = &by_server[server];
            let first = rows
                .probes
                .iter()
                .find(|p| p.server == server)
                .cloned()
                .unwrap_or_default();
            let mut protocols: Vec<String> = Vec::new();
            let spoken = rows.probes.iter().filter(|p| p.server == server);
            for version in spoken.filter_map(|p| p.protocol.clone()) {
                if !protocols.contains(&version) {
                    protocols.push(version);
                }
            }
            let mut summary = Summary::default();
            let tools: Vec<ToolMap> = cells
                .tools
                .iter()
                .map(|tool| {
                    let cells: Vec<MapCell> = clauses
                        .iter()
                        .map(|clause| {
                            let records = cells
                                .cells
                                .get(&(*tool, *clause))
                                .map(Vec::as_slice)
                                .unwrap_or(&[]);
                            cell(clause, records)
                        })
                        .collect();
                    // A row without subject calls of its own (an intent contract's
                    // `(server)` row, graded on the control run) counts the calls its
                    // verdict records say it was graded on.
                    let (n, ok) = calls.get(&(server, *tool)).copied().unwrap_or_else(|| {
                        let records = cells.iter().flat_map(|c| &c.records);
                        let most = |f: fn(&CellRecord) -> Option<u64>| {
                            records.clone().filter_map(f).max().unwrap_or(0)
                        };
                        (most(|r| r.calls), most(|r| r.succeeded))
                    });
                    summary.count_tool(tool, ok, &cells);
                    ToolMap {
                        name: tool.to_string(),
                        calls: n,
                        succeeded: ok,
                        cells,
                        profile: profiled
                            .contains(server)
                            .then(|| profiles.get(&(server, *tool)).cloned().unwrap_or_default()),
                    }
                })
                .collect();
            let not_audited = not_audited_of(rows, server);
            summary.not_audited = not_audited.len() as u64;
            ServerMap {
                id: server.to_string(),
                name: first.server_name,
                version: first.server_version,
                protocols,
                probes: cells.probes.iter().map(|p| p.to_string()).collect(),
                tools,
                not_audited,
                summary,
            }
        })
        .collect();
    add_not_audited(rows, &mut servers);
    Map {
        campaign: campaign.to_string(),
        clauses: clauses.iter().map(|c| c.to_string()).collect(),
        servers,
    }
}

/// Targets no probe of which was audited: listed after the rest, in the campaign's order, so
/// that the map accounts for every target (once, whatever its repetitions).
fn add_not_audited(rows: &Rows, servers: &mut Vec<ServerMap>) {
    for failed in &rows.not_audited {
        if servers.iter().any(|s| s.id == failed.target) {
            continue;
        }
        let not_audited = not_audited_of(rows, &failed.target);
        let first = rows.probes.iter().find(|p| p.server == failed.target);
        servers.push(ServerMap {
            id: failed.target.clone(),
            name: first.and_then(|p| p.server_name.clone()),
            version: first.and_then(|p| p.server_version.clone()),
            protocols: first.and_then(|p| p.protocol.clone()).into_iter().collect(),
            probes: Vec::new(),
            tools: Vec::new(),
            summary: Summary {
                not_audited: not_audited.len() as u64,
                ..Summary::default()
            },
            not_audited,
        });
    }
}

/// What each tool did, per (server, tool) — one line per kind of effect with its targets —
/// and the servers with a probe that recorded a profile.
#[allow(clippy::type_complexity)]
fn profiles_of<'a>(
    rows: &'a Rows,
    server_of: &dyn Fn(&str) -> &'a str,
) -> (HashSet<&'a str>, HashMap<(&'a str, &'a str), Vec<Seen>>) {
    let mut profiled: HashSet<&str> = HashSet::new();
    let mut profiles: HashMap<(&str, &str), Vec<Seen>> = HashMap::new();
    for p in &rows.profile {
        let server = server_of(&p.probe);
        profiled.insert(server);
        let lines = profiles.entry((server, p.tool.as_str())).or_default();
        if p.kind == NOTHING_SEEN {
            continue;
        }
        let at = match lines.iter().position(|l| l.kind == p.kind) {
            Some(at) => at,
            None => {
                lines.push(Seen {
                    kind: p.kind.clone(),
                    targets: Vec::new(),
                    distinct: 0,
                });
                lines.len() - 1
            }
        };
        let line = &mut lines[at];
        if !line.targets.contains(&p.target) {
            line.targets.push(p.target.clone());
        }
        line.distinct = line.distinct.max(p.distinct).max(line.targets.len() as u64);
    }
    (profiled, profiles)
}

/// The probes of `server` the campaign log says could not be audited.
fn not_audited_of(rows: &Rows, server: &str) -> Vec<NotAudited> {
    rows.not_audited
        .iter()
        .filter(|n| n.target == server)
        .cloned()
        .collect()
}

/// One server's verdict rows, by tool and clause, borrowed from the rows read.
#[derive(Default)]
struct ServerCells<'a> {
    probes: Vec<&'a str>,
    tools: Vec<&'a str>,
    cells: HashMap<(&'a str, &'a str), Vec<&'a VerdictRow>>,
}

impl<'a> ServerCells<'a> {
    fn add(&mut self, v: &'a VerdictRow) {
        if self.probes.last() != Some(&&*v.probe) && !self.probes.contains(&&*v.probe) {
            self.probes.push(&v.probe);
        }
        let records = self.cells.entry((&v.tool, &v.clause)).or_default();
        if records.is_empty() && !self.tools.contains(&v.tool.as_str()) {
            self.tools.push(&v.tool);
        }
        records.push(v);
    }
}

impl CellRecord {
    fn of(v: &VerdictRow) -> CellRecord {
        CellRecord {
            probe: v.probe.clone(),
            seq: v.seq,
            hash: v.record_hash.clone(),
            verdict: v.verdict,
            reason: v.reason.clone(),
            contract: v.contract.clone(),
            calls: v.calls,
            succeeded: v.succeeded,
            evidence: v.evidence.clone(),
        }
    }
}

fn cell(clause: &str, records: &[&VerdictRow]) -> MapCell {
    let mut counts = [0u64; 4];
    for r in records {
        if let Some(i) = VERDICTS.iter().position(|v| *v == r.verdict) {
            counts[i] += 1;
        }
    }
    let verdict = if records.is_empty() {
        NOT_GRADED
    } else if counts[0] > 0 {
        "confirmed"
    } else if counts[3] > 0 {
        "errored"
    } else if counts[1] > 0 {
        "refuted"
    } else {
        "skipped"
    };
    let reason = records
        .iter()
        .find(|r| r.verdict == verdict)
        .map(|r| r.reason.clone())
        .unwrap_or_default();
    let records: Vec<CellRecord> = records.iter().map(|r| CellRecord::of(r)).collect();
    let touched = (verdict == "confirmed")
        .then(|| {
            records
                .iter()
                .filter(|r| r.verdict == "confirmed")
                .filter_map(|r| touched_by(&r.evidence))
                .min()
        })
        .flatten();
    MapCell {
        clause: clause.to_string(),
        verdict,
        counts,
        stable: counts.iter().filter(|&&n| n > 0).count() <= 1,
        severity: severity::of(clause, verdict),
        reason,
        records,
        touched,
    }
}

/// The effects a verdict's evidence lists, by class and path, as [`Touched`].
fn touched_by(evidence: &Json) -> Option<Touched> {
    #[derive(serde::Deserialize)]
    struct Effect {
        class: EffectClass,
        path: String,
    }
    #[derive(serde::Deserialize)]
    struct Evidence {
        #[serde(default)]
        effects: Vec<Effect>,
    }
    let evidence: Evidence = evidence.parse().ok()?;
    touched::of_effects(evidence.effects.iter().map(|e| (e.class, e.path.as_str())))
}

impl Summary {
    /// Counts one row of a server: `ok` of its calls succeeded, its `cells` in clause order.
    /// The server row's cells count; the row is not one of the tools.
    fn count_tool(&mut self, tool: &str, ok: u64, cells: &[MapCell]) {
        let has = |v: &str| cells.iter().any(|c| c.verdict == v);
        if !vac_contracts::is_server_row(tool) {
            self.tools += 1;
            // A tool none of whose calls succeeded kept nothing it was tested on, whatever
            // its manifest-only cells say.
            if ok > 0 && has("refuted") && !has("confirmed") && !has("errored") {
                self.kept += 1;
            }
            if ok == 0 {
                self.no_successful_call += 1;
            }
        }
        for c in cells {
            match c.verdict {
                "confirmed" => {
                    self.confirmed += 1;
                    if let Some(t) = c.touched {
                        self.touched[t as usize] += 1;
                    }
                }
                "refuted" => self.refuted += 1,
                "skipped" => self.skipped += 1,
                "errored" => self.errored += 1,
                _ => self.not_graded += 1,
            }
            if !c.stable {
                self.unstable += 1;
            }
        }
    }

    /// The counts as the map's summary tables show them: key and label, in column order.
    pub const COLUMNS: [(&'static str, &'static str); 9] = [
        ("tools", "tools"),
        ("kept", "kept every promise"),
        ("confirmed", "confirmed"),
        ("refuted", "refuted"),
        ("skipped", "skipped"),
        ("errored", "errored"),
        ("no_successful_call", "tools with no successful call"),
        ("unstable", "unstable cells"),
        ("not_audited", "probes not audited"),
    ];

    /// The counts in [`Summary::COLUMNS`] order.
    pub fn values(&self) -> [u64; 9] {
        [
            self.tools,
            self.kept,
            self.confirmed,
            self.refuted,
            self.skipped,
            self.errored,
            self.no_successful_call,
            self.unstable,
            self.not_audited,
        ]
    }

    pub fn to_json(&self) -> Value {
        json!({
            "tools": self.tools,
            "kept_every_promise": self.kept,
            "confirmed": self.confirmed,
            "refuted": self.refuted,
            "skipped": self.skipped,
            "errored": self.errored,
            "not_graded": self.not_graded,
            "no_successful_call": self.no_successful_call,
            "unstable": self.unstable,
            "not_audited": self.not_audited,
            "confirmed_touched": Touched::ALL.iter().zip(self.touched)
                .map(|(t, n)| (t.name().to_string(), json!(n)))
                .collect::<serde_json::Map<_, _>>(),
        })
    }
}

/// The map as one JSON document; confirmed cells carry their evidence.
pub fn to_json(map: &Map) -> Value {
    json!({
        "campaign": map.campaign,
        "clauses": map.clauses,
        "summary": map.totals().to_json(),
        "servers": map.servers.iter().map(|s| json!({
            "id": s.id,
            "name": s.name,
            "version": s.version,
            "protocol": s.protocols,
            "probes": s.probes,
            "not_audited": s.not_audited.iter().map(|n| json!({
                "probe": n.dir,
                "repetition": n.repetition,
                "status": n.status,
                "exit": n.exit,
                "detail": n.detail,
            })).collect::<Vec<_>>(),
            "summary": s.summary.to_json(),
            "tools": s.tools.iter().map(|t| {
                let mut tool = json!({
                "name": t.name,
                "calls": t.calls,
                "succeeded": t.succeeded,
                "cells": t.cells.iter().map(|c| { let mut cell = json!({
                    "clause": c.clause,
                    "verdict": c.verdict,
                    "severity": c.severity.name,
                    "stable": c.stable,
                    "distribution": VERDICTS.iter().zip(c.counts).filter(|(_, n)| *n > 0)
                        .map(|(v, n)| (v.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
                    "reason": &*c.reason,
                    "records": c.records.iter().map(|r| {
                        let mut record = json!({
                            "probe": &*r.probe,
                            "seq": r.seq,
                            "hash": &*r.hash,
                            "verdict": r.verdict,
                            "contract": &*r.contract,
                            "calls": r.calls,
                            "succeeded": r.succeeded,
                        });
                        if r.verdict == "confirmed" {
                            record["evidence"] = r.evidence.to_value();
                        }
                        record
                    }).collect::<Vec<_>>(),
                });
                if let Some(touched) = c.touched {
                    cell["touched"] = touched.name().into();
                }
                cell
                }).collect::<Vec<_>>(),
                });
                // Only where recorded: maps of older receipts keep their bytes.
                if let Some(profile) = &t.profile {
                    tool["profile"] = profile.iter().map(|l| (l.kind.clone(), json!({
                        "targets": l.targets,
                        "distinct": l.distinct,
                    }))).collect::<serde_json::Map<_, _>>().into();
                }
                tool
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// How two maps' grids differ: the cells whose headline verdict changed (or that only one
/// map has), and the cells unstable across repetitions in either.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GridDiff {
    /// (server, tool, clause, verdict in the first, verdict in the second); a cell missing
    /// from one map shows as [`NOT_GRADED`] there.
    pub changed: Vec<(String, String, String, String, String)>,
    /// (server, tool, clause, which map: `first`, `second` or `both`).
    pub unstable: Vec<(String, String, String, &'static str)>,
    pub cells: usize,
}

/// Compares the verdict grids of two maps (a published campaign and its rerun): bytes
/// differ between runs (nonces, timestamps), verdicts should not.
pub fn compare_grids(first: &Map, second: &Map) -> GridDiff {
    type Cells<'a> = std::collections::BTreeMap<(&'a str, &'a str, &'a str), &'a MapCell>;
    fn cells(map: &Map) -> Cells<'_> {
        map.cells()
            .map(|(s, t, c)| ((s.id.as_str(), t.name.as_str(), c.clause.as_str()), c))
            .collect()
    }
    let (a, b) = (cells(first), cells(second));
    let mut keys: Vec<&(&str, &str, &str)> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut diff = GridDiff {
        cells: keys.len(),
        ..GridDiff::default()
    };
    for key in keys {
        let (x, y) = (a.get(key), b.get(key));
        let verdict = |c: Option<&&MapCell>| c.map_or(NOT_GRADED, |c| c.verdict);
        let (s, t, c) = (key.0.to_owned(), key.1.to_owned(), key.2.to_owned());
        if verdict(x) != verdict(y) {
            diff.changed.push((
                s.clone(),
                t.clone(),
                c.clone(),
                verdict(x).to_owned(),
                verdict(y).to_owned(),
            ));
        }
        let unstable = |c: Option<&&MapCell>| c.is_some_and(|c| !c.stable);
        let which = match (unstable(x), unstable(y)) {
            (true, true) => Some("both"),
            (true, false) => Some("first"),
            (false, true) => Some("second"),
            (false, false) => None,
        };
        if let Some(which) = which {
            diff.unstable.push((s, t, c, which));
        }
    }
    diff
}
