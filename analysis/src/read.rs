//! Reading: a receipt directory (one probe) or a campaign (a directory of them), each
//! verified and turned into rows in the same pass.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use serde_json::value::RawValue;
use vac_receipts::{Body, Entry, Json, ReadError, Role, VerdictKind, VerifyError, VerifyOptions};

use crate::rows::{
    CallRow, EffectRow, ManifestRow, Probe, ProfileRow, Rows, RunRow, SelfTestRow, Shared,
    VerdictRow,
};

/// Why a directory could not be read into tables. Nothing is rendered after one.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// No receipt log (plain or packed) in `DIR` or any `DIR/*/`.
    #[error(
        "{}: not a receipt directory (no receipts.jsonl or receipts.jsonl.zst in it or in any directory directly under it)",
        .0.display()
    )]
    NotReceipts(PathBuf),
    /// The directory could not be listed.
    #[error("{}: cannot read the directory: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A campaign whose probes hold no verdict at all: nothing to map.
    #[error("{}: the receipts hold no verdict: nothing to map", .0.display())]
    Empty(PathBuf),
    /// A chain that does not verify, named by its first bad record.
    #[error("{}: BROKEN: {source}", dir.display())]
    Broken { dir: PathBuf, source: VerifyError },
    /// A chain that verifies but is not what a finished probe writes.
    #[error("{}: {source}", dir.display())]
    Incomplete {
        dir: PathBuf,
        #[source]
        source: Unfinished,
    },
    /// An output could not be written.
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// polars refused a table.
    #[error("table {table}: {source}")]
    Table {
        table: &'static str,
        #[source]
        source: polars::prelude::PolarsError,
    },
}

/// Why a verified log holds no whole probe.
#[derive(Debug, thiserror::Error)]
pub enum Unfinished {
    #[error("the log has no campaign_start")]
    NoStart,
    #[error("run {0} was never closed")]
    RunOpen(String),
    #[error("its head is {head}, but the campaign log lists {listed}")]
    HeadNotListed { head: String, listed: String },
    #[error("the effects table cannot be closed: {0}")]
    Effects(#[from] polars::prelude::PolarsError),
}

impl AnalysisError {
    /// A chain that does not verify (the `vac` exit code 4), as opposed to input that is
    /// not receipts at all.
    pub fn is_broken(&self) -> bool {
        matches!(
            self,
            AnalysisError::Broken { .. } | AnalysisError::Incomplete { .. }
        )
    }
}

/// What a campaign log lists: the probes to read, and the members that could not be
/// audited (empty when `root` is no campaign).
struct Listing {
    probes: Vec<Listed>,
    not_audited: Vec<crate::rows::NotAudited>,
}

/// The probe directories under `root`: the probes a campaign log at `root` lists, else
/// `root` itself when it holds a probe's log, else each directory directly under it that
/// does, in name order.
pub fn probe_dirs(root: &Path) -> Result<Vec<PathBuf>, AnalysisError> {
    Ok(listed_probes(root)?
        .probes
        .into_iter()
        .map(|l| l.dir)
        .collect())
}

/// A probe directory to read and, when a campaign log lists it, the head it must have and
/// the campaign target it probed (which names its server).
struct Listed {
    dir: PathBuf,
    head: Option<String>,
    target: Option<String>,
}

/// The probe directories under `root` and, for a campaign log's members, the head each
/// must have: a campaign log (`campaign_start.config.campaign`) lists its probes in
/// `member` records, and exactly those are read — the sealed ones; a member that left no
/// sealed log (it failed or timed out) has no verdicts to read.
fn listed_probes(root: &Path) -> Result<Listing, AnalysisError> {
    if vac_receipts::is_receipt_dir(root) {
        return match campaign_members(root)? {
            Some(listing) => Ok(listing),
            None => Ok(Listing {
                probes: vec![Listed {
                    dir: root.to_path_buf(),
                    head: None,
                    target: None,
                }],
                not_audited: Vec::new(),
            }),
        };
    }
    let listing = std::fs::read_dir(root).map_err(|source| AnalysisError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    let mut dirs = Vec::new();
    for entry in listing {
        let entry = entry.map_err(|source| AnalysisError::Io {
            path: root.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        if vac_receipts::is_receipt_dir(&path) {
            dirs.push(path);
        }
    }
    if dirs.is_empty() {
        return Err(AnalysisError::NotReceipts(root.to_path_buf()));
    }
    dirs.sort();
    Ok(Listing {
        probes: dirs
            .into_iter()
            .map(|dir| Listed {
                dir,
                head: None,
                target: None,
            })
            .collect(),
        not_audited: Vec::new(),
    })
}

/// The sealed probes a campaign log at `root` lists, with their heads, and the members
/// that could not be audited; `None` when the log is a probe's. The campaign's own chain
/// must verify and be sealed.
fn campaign_members(root: &Path) -> Result<Option<Listing>, AnalysisError> {
    let mut campaign = false;
    let mut members = Vec::new();
    let mut not_audited = Vec::new();
    let options = VerifyOptions {
        require_seal: true,
        ..VerifyOptions::default()
    };
    let verified = vac_receipts::verify_each(root, &options, |entry| match entry.record.body {
        Body::CampaignStart(start) => campaign = start.config.get("campaign").is_some(),
        Body::Member(member) if member.role == "probe" => {
            if member.status != "completed" {
                not_audited.push(crate::rows::NotAudited {
                    target: member.target.clone(),
                    dir: member.dir.clone(),
                    repetition: member.repetition,
                    status: member.status.clone(),
                    exit: member.exit,
                    detail: member.detail.clone(),
                });
            }
            if let Some(head) = member.head {
                members.push(Listed {
                    dir: root.join(&member.dir),
                    head: Some(head),
                    target: Some(member.target),
                });
            }
        }
        _ => {}
    });
    match verified {
        Ok(_) if campaign => Ok(Some(Listing {
            probes: members,
            not_audited,
        })),
        // A probe's log: read (and verified) as a probe.
        Ok(_) => Ok(None),
        Err(_) if !campaign => Ok(None),
        Err(source) => Err(AnalysisError::Broken {
            dir: root.to_path_buf(),
            source,
        }),
    }
}

/// Reads every probe under `root` (see [`probe_dirs`]), verifying each sealed chain.
///
/// Probes are read in parallel (one thread per core); rows keep directory order, and the
/// error reported is the first in directory order, whatever finished first.
pub fn read(root: &Path) -> Result<Rows, AnalysisError> {
    let Listing {
        probes: listed,
        not_audited,
    } = listed_probes(root)?;
    let dirs: Vec<PathBuf> = listed.iter().map(|l| l.dir.clone()).collect();
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(dirs.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<Result<Rows, AnalysisError>>>> =
        Mutex::new((0..dirs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(dir) = dirs.get(i) else { break };
                    let name = match dir.strip_prefix(root) {
                        Ok(rel) if !rel.as_os_str().is_empty() => {
                            rel.to_string_lossy().into_owned()
                        }
                        _ => String::new(),
                    };
                    let read = read_probe(dir, name).and_then(|mut rows| {
                        let entry = &listed[i];
                        match (&entry.head, rows.probes.first()) {
                            (Some(listed), Some(probe)) if *listed != probe.head => {
                                return Err(AnalysisError::Incomplete {
                                    dir: dir.clone(),
                                    source: Unfinished::HeadNotListed {
                                        head: probe.head.to_string(),
                                        listed: listed.clone(),
                                    },
                                });
                            }
                            _ => {}
                        }
                        // A campaign names its servers by their target ids.
                        if let Some(target) = &entry.target {
                            for probe in &mut rows.probes {
                                probe.server = target.clone();
                            }
                        }
                        Ok(rows)
                    });
                    let failed = read.is_err();
                    done.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(read);
                    if failed {
                        // Later probes are not needed; earlier ones finish for the ordering.
                        next.fetch_max(dirs.len(), Ordering::Relaxed);
                        break;
                    }
                }
            });
        }
    });
    let mut read = Vec::with_capacity(dirs.len());
    for probe in done.into_inner().unwrap_or_else(|e| e.into_inner()) {
        match probe {
            Some(probe) => read.push(probe?),
            // Skipped after an earlier-started probe failed: that failure comes first
            // unless an earlier directory failed too, which the loop has returned already.
            None => continue,
        }
    }
    let mut rows = Rows::concat(read);
    rows.not_audited = not_audited;
    if rows.verdicts.is_empty() && rows.not_audited.is_empty() {
        return Err(AnalysisError::Empty(root.to_path_buf()));
    }
    Ok(rows)
}

/// One probe directory's rows, once its whole chain verified.
fn read_probe(dir: &Path, name: String) -> Result<Rows, AnalysisError> {
    let mut reader = ProbeReader::new(name);
    let options = VerifyOptions {
        require_seal: true,
        ..VerifyOptions::default()
    };
    let verified = vac_receipts::verify_each(dir, &options, |entry| reader.visit(entry)).map_err(
        |source| match source {
            VerifyError::Read(ReadError::NotAReceiptLog { .. } | ReadError::Empty { .. }) => {
                AnalysisError::NotReceipts(dir.to_path_buf())
            }
            source => AnalysisError::Broken {
                dir: dir.to_path_buf(),
                source,
            },
        },
    )?;
    let mut probe = reader
        .finish()
        .map_err(|source| AnalysisError::Incomplete {
            dir: dir.to_path_buf(),
            source,
        })?;
    for p in &mut probe.probes {
        p.head = verified.head.to_string();
        p.records = verified.records;
    }
    Ok(probe)
}

/// The rows of one probe while its log is read.
struct ProbeReader {
    rows: Rows,
    probe: Option<Probe>,
    name: Shared,
    /// Each run started so far, with its role.
    runs: Vec<(Shared, Shared)>,
}

impl ProbeReader {
    fn new(name: String) -> ProbeReader {
        ProbeReader {
            rows: Rows::default(),
            probe: None,
            name: name.into(),
            runs: Vec::new(),
        }
    }

    /// The run `run_id` as the rows share it, with its role (empty for a run never started).
    fn run_ids(&self, run_id: &str) -> (Shared, Shared) {
        match self.runs.iter().rev().find(|(id, _)| **id == *run_id) {
            Some((id, role)) => (id.clone(), role.clone()),
            None => (run_id.into(), "".into()),
        }
    }

    fn visit(&mut self, entry: Entry) {
        let seq = entry.record.seq;
        let probe = self.name.clone();
        match entry.record.body {
            Body::CampaignStart(start) => {
                let target = start
                    .config
                    .get("target")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                self.probe = Some(Probe {
                    dir: probe.to_string(),
                    server: server_id(&target),
                    target,
                    vac_version: start.vac_version.clone(),
                    seed: start.seed,
                    ..Probe::default()
                });
            }
            Body::Contract(contract) => {
                if let Some(p) = self.probe.as_mut() {
                    p.contract_name = Some(contract.name.clone());
                    p.contract_hash = Some(contract.blake3.to_string());
                    p.contract_text = Some(contract.text.clone());
                }
            }
            Body::RunStart(start) => {
                let role = match start.role {
                    Role::Control => "control",
                    Role::Subject => "subject",
                    Role::Relaunch => "relaunch",
                };
                let (run_id, role): (Shared, Shared) = (start.run_id.as_str().into(), role.into());
                self.runs.push((run_id.clone(), role.clone()));
                self.rows.runs.push(RunRow {
                    probe,
                    run_id,
                    role,
                    repetition: start.repetition,
                    tool: None,
                    status: String::new(),
                    detail: String::new(),
                    start_seq: seq,
                    end_seq: None,
                    frames: 0,
                    events: 0,
                });
            }
            Body::SandboxConfig(config) => {
                let tool = config
                    .config
                    .get("tool")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                if let Some(run) = self.run_mut(&config.run_id) {
                    run.tool = tool;
                }
            }
            Body::RunEnd(end) => {
                let status = serde_json::to_value(end.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                if let Some(run) = self.run_mut(&end.run_id) {
                    run.status = status;
                    run.detail = end.detail.clone();
                    run.end_seq = Some(seq);
                }
            }
            Body::Frame(frame) => {
                if let Some(run) = self.run_mut(&frame.run_id) {
                    run.frames += 1;
                }
            }
            Body::SelfTest(test) => {
                let status = serde_json::to_value(test.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                self.rows.selftests.push(SelfTestRow {
                    probe,
                    run_id: self.run_ids(&test.run_id).0,
                    seq,
                    sensor: test.sensor.clone(),
                    status,
                    detail: test.detail.clone(),
                });
            }
            // A probe's log lists no members (a campaign's is read by `campaign_members`).
            Body::Member(_) => {}
            Body::Event(event) => {
                let (run_id, role) = self.run_ids(&event.run_id);
                if let Some(run) = self.run_mut(&run_id) {
                    run.events += 1;
                }
                self.event(probe, run_id, role, seq, event.event);
            }
            Body::Verdict(verdict) => {
                let kind = match verdict.verdict {
                    VerdictKind::Confirmed => "confirmed",
                    VerdictKind::Refuted => "refuted",
                    VerdictKind::Skipped => "skipped",
                    VerdictKind::Errored => "errored",
                };
                let evidence = verdict.evidence;
                let cited = Cited::of(&evidence);
                let count = |raw: Option<&RawValue>| {
                    raw.and_then(|raw| serde_json::from_str::<u64>(raw.get()).ok())
                };
                let text = |raw: Option<&RawValue>| {
                    raw.and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
                };
                self.rows.verdicts.push(VerdictRow {
                    probe,
                    run_id: self.run_ids(&verdict.run_id).0,
                    seq,
                    record_hash: entry.hash.to_string().into(),
                    tool: verdict.tool,
                    clause: verdict.clause,
                    verdict: kind,
                    reason: verdict.reason.into(),
                    calls: count(cited.cell_calls).or_else(|| count(cited.calls)),
                    succeeded: count(cited.cell_succeeded).or_else(|| count(cited.succeeded)),
                    contract: text(cited.contract).unwrap_or_default().into(),
                    basis: text(cited.basis),
                    evidence: std::sync::Arc::new(evidence),
                });
            }
            Body::Effect(effect) if effect.sensor == "profile" => {
                let line = vac_contracts::evidence::ProfileLine::read(&effect.detail);
                let (tool, distinct) = line.map_or((String::new(), 0), |l| (l.tool, l.distinct));
                self.rows.profile.push(ProfileRow {
                    probe,
                    run_id: self.run_ids(&effect.run_id).0,
                    seq,
                    tool,
                    kind: effect.class,
                    target: effect.target,
                    distinct,
                });
            }
            Body::Seal(_) | Body::Plan(_) | Body::Effect(_) => {}
        }
    }

    fn run_mut(&mut self, run_id: &str) -> Option<&mut RunRow> {
        self.rows
            .runs
            .iter_mut()
            .rev()
            .find(|r| *r.run_id == *run_id)
    }

    fn event(&mut self, probe: Shared, run_id: Shared, role: Shared, seq: u64, event: Json) {
        // Effects are nearly all the events: read their few fields straight from the text.
        if let Ok(seen) = event.parse::<Sensed<'_>>()
            && let Some(sensor) = seen.kind.filter(|k| EFFECT_EVENTS.contains(k))
        {
            let target: Option<Cow<'_, str>> = match sensor {
                "fs_change" => seen.change.as_ref().map(|c| c.path.text()),
                "exec" => seen.argv.as_ref().map(|argv| {
                    let argv: Vec<Cow<'_, str>> = argv.iter().map(PathText::text).collect();
                    Cow::Owned(argv.join(" "))
                }),
                "dns" => seen.name.map(Cow::Borrowed),
                "listen" => seen.address.map(Cow::Borrowed),
                _ => seen.dst.map(Cow::Borrowed),
            };
            let class = match sensor {
                "fs_change" => seen
                    .change
                    .as_ref()
                    .and_then(|c| c.change)
                    .unwrap_or("fs_change"),
                other => other,
            };
            self.rows.effects.push(EffectRow {
                probe: &probe,
                run_id: &run_id,
                role: &role,
                seq,
                sensor,
                class,
                target: target.as_deref().unwrap_or(""),
                t_ns: seen.t_ns,
                // A verified record's free-form text is canonical: the compact JSON itself.
                detail: event.get(),
            });
            return;
        }
        self.event_value(probe, run_id, role, seq, &event.to_value());
    }

    /// An event read as a whole value: the rarer kinds, and any effect whose fields are
    /// not of the types [`Sensed`] expects.
    fn event_value(
        &mut self,
        probe: Shared,
        run_id: Shared,
        role: Shared,
        seq: u64,
        event: &Value,
    ) {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        let t_ns = event.get("t_ns").and_then(Value::as_u64);
        let text = |key: &str| event.get(key).and_then(Value::as_str).map(str::to_string);
        match kind {
            "session" => {
                if let Some(p) = self.probe.as_mut()
                    && p.server_name.is_none()
                {
                    let info = event.get("server").and_then(Value::as_array);
                    let part = |i: usize| {
                        info.and_then(|a| a.get(i))
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    };
                    p.server_name = part(0);
                    p.server_version = part(1);
                    p.protocol = text("protocol_version");
                }
            }
            "manifest" => {
                let phase = text("phase").unwrap_or_default();
                let complete = event.get("complete").and_then(Value::as_bool);
                let tools = event.get("tools").and_then(Value::as_array);
                for (position, tool) in tools.into_iter().flatten().enumerate() {
                    let field = |key: &str| tool.get(key).cloned().unwrap_or(Value::Null);
                    self.rows.manifests.push(ManifestRow {
                        probe: probe.clone(),
                        run_id: run_id.clone(),
                        seq,
                        phase: phase.clone(),
                        position: position as u64,
                        tool: tool
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        description: tool
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        annotations: compact(&field("annotations")),
                        input_schema: compact(&field("inputSchema")),
                        complete,
                        entry: tool.clone(),
                    });
                }
            }
            "call" => {
                let outcome = event.get("outcome");
                let ok = outcome.and_then(|o| o.get("Ok"));
                let result = ok.and_then(|o| o.get("result")).filter(|r| !r.is_null());
                let error = ok.and_then(|o| o.get("error")).filter(|e| !e.is_null());
                let is_error = result
                    .and_then(|r| r.get("isError"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                // The judgement recorded with the call (`vac_contracts::answer`): a result
                // not flagged `isError` whose text tells an error did not do its job.
                // Calls recorded before judgements were have none, and `isError` decides.
                let told_error = event
                    .get("answer")
                    .and_then(|a| serde_json::from_value::<vac_contracts::Answer>(a.clone()).ok())
                    == Some(vac_contracts::Answer::ToldError);
                let status = match (ok, result, error) {
                    (None, _, _) => "failed",
                    (Some(_), _, Some(_)) => "rpc_error",
                    (Some(_), Some(_), None) if is_error => "is_error",
                    (Some(_), Some(_), None) if told_error => "told_error",
                    (Some(_), Some(_), None) => "ok",
                    (Some(_), None, None) => "no_result",
                };
                let at = |key: &str| ok.and_then(|o| o.get(key)).and_then(duration_ns);
                self.rows.calls.push(CallRow {
                    probe,
                    run_id,
                    role,
                    seq,
                    index: event.get("index").and_then(Value::as_u64).unwrap_or(0),
                    tool: text("tool").unwrap_or_default(),
                    purpose: text("purpose").unwrap_or_default(),
                    repeat_of: event.get("repeat_of").and_then(Value::as_u64),
                    arguments: compact(&event.get("arguments").cloned().unwrap_or_default()),
                    status: status.to_string(),
                    error: error
                        .map(compact)
                        .or_else(|| outcome.filter(|_| ok.is_none()).map(compact)),
                    requested_ns: at("requested_at"),
                    answered_ns: at("answered_at"),
                });
            }
            "fs_change" | "exec" | "dns" | "connect" | "datagram" | "listen" => {
                let target = match kind {
                    "fs_change" => event
                        .pointer("/change/path")
                        .map(path_text)
                        .unwrap_or_default(),
                    "exec" => event
                        .get("argv")
                        .and_then(Value::as_array)
                        .map(|argv| argv.iter().map(path_text).collect::<Vec<_>>().join(" "))
                        .unwrap_or_default(),
                    "dns" => text("name").unwrap_or_default(),
                    "listen" => text("address").unwrap_or_default(),
                    _ => text("dst").unwrap_or_default(),
                };
                let class = match kind {
                    "fs_change" => event
                        .pointer("/change/change")
                        .and_then(Value::as_str)
                        .unwrap_or("fs_change"),
                    other => other,
                };
                self.rows.effects.push(EffectRow {
                    probe: &probe,
                    run_id: &run_id,
                    role: &role,
                    seq,
                    sensor: kind,
                    class,
                    target: &target,
                    t_ns,
                    detail: &compact(event),
                });
            }
            _ => {}
        }
    }

    fn finish(self) -> Result<Rows, Unfinished> {
        let Some(mut probe) = self.probe else {
            return Err(Unfinished::NoStart);
        };
        if let Some(open) = self.rows.runs.iter().find(|r| r.end_seq.is_none()) {
            return Err(Unfinished::RunOpen(open.run_id.to_string()));
        }
        if probe.server.is_empty() {
            probe.server = probe
                .server_name
                .clone()
                .unwrap_or_else(|| probe.dir.clone());
        }
        let mut rows = self.rows;
        rows.effects.seal()?;
        rows.probes.push(probe);
        Ok(rows)
    }
}

/// A server's name across machines: its command with the program reduced to its file
/// name (`/opt/x/bin/mcp-server-git --repository /r` → `mcp-server-git --repository /r`).
pub fn server_id(target: &str) -> String {
    let (program, rest) = target.split_once(' ').unwrap_or((target, ""));
    let base = program.rsplit('/').next().unwrap_or(program);
    match rest {
        "" => base.to_string(),
        rest => format!("{base} {rest}"),
    }
}

/// The event types that are effects (one row each in `effects`).
const EFFECT_EVENTS: [&str; 6] = ["fs_change", "exec", "dns", "connect", "datagram", "listen"];

/// The members of a verdict's evidence its row takes, borrowed from the record's text
/// unparsed: a member of another type than the row wants counts as absent, as it would
/// when looked up in the parsed value.
#[derive(Default, serde::Deserialize)]
struct Cited<'a> {
    #[serde(borrow, default)]
    cell_calls: Option<&'a RawValue>,
    #[serde(borrow, default)]
    calls: Option<&'a RawValue>,
    #[serde(borrow, default)]
    cell_succeeded: Option<&'a RawValue>,
    #[serde(borrow, default)]
    succeeded: Option<&'a RawValue>,
    #[serde(borrow, default)]
    contract: Option<&'a RawValue>,
    #[serde(borrow, default)]
    basis: Option<&'a RawValue>,
}

impl<'a> Cited<'a> {
    /// The members of `evidence`; none when it is not an object.
    fn of(evidence: &'a Json) -> Cited<'a> {
        match evidence.get().starts_with('{') {
            true => evidence.parse().unwrap_or_default(),
            false => Cited::default(),
        }
    }
}

/// The fields of an effect event the `effects` table takes, borrowed from the record's text.
/// Parsing fails, and the event is read as a whole value instead, when one of them has
/// another type than expected or is a string with escapes (which cannot be borrowed).
#[derive(serde::Deserialize)]
struct Sensed<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<&'a str>,
    #[serde(default)]
    t_ns: Option<u64>,
    #[serde(borrow, default)]
    change: Option<Change<'a>>,
    #[serde(borrow, default)]
    argv: Option<Vec<PathText<'a>>>,
    #[serde(borrow, default)]
    name: Option<&'a str>,
    #[serde(borrow, default)]
    address: Option<&'a str>,
    #[serde(borrow, default)]
    dst: Option<&'a str>,
}

#[derive(serde::Deserialize)]
struct Change<'a> {
    #[serde(borrow, default)]
    path: PathText<'a>,
    #[serde(borrow, default)]
    change: Option<&'a str>,
}

/// A recorded path as [`path_text`] shows it: a string, or `{"hex": …}`; absent is empty.
/// Anything else fails the parse (and the value path handles it).
#[derive(Default)]
enum PathText<'a> {
    #[default]
    Absent,
    Text(Cow<'a, str>),
    Hex(Cow<'a, str>),
}

impl PathText<'_> {
    fn text(&self) -> Cow<'_, str> {
        match self {
            PathText::Absent => Cow::Borrowed(""),
            PathText::Text(text) => Cow::Borrowed(text),
            PathText::Hex(hex) => Cow::Owned(format!("hex:{hex}")),
        }
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for PathText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = PathText<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(r#"a path: a string or {"hex": "…"}"#)
            }
            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                v: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(PathText::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(PathText::Text(Cow::Owned(v.to_string())))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                // Exactly `{"hex": "…"}`; anything else is left to the value path.
                let hex = match map.next_key::<Cow<'de, str>>()? {
                    Some(key) if key == "hex" => map.next_value::<Cow<'de, str>>()?,
                    _ => return Err(serde::de::Error::custom("not a hex path")),
                };
                if map.next_key::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(serde::de::Error::custom("not a hex path"));
                }
                Ok(PathText::Hex(hex))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// `{"secs", "nanos"}` as nanoseconds.
fn duration_ns(value: &Value) -> Option<u64> {
    let secs = value.get("secs")?.as_u64()?;
    let nanos = value.get("nanos")?.as_u64()?;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// A recorded path: a string, or `{"hex": …}` for bytes that are not UTF-8.
fn path_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("hex").and_then(Value::as_str) {
            Some(hex) => format!("hex:{hex}"),
            None => compact(value),
        },
        other => compact(other),
    }
}

/// Compact JSON text; object keys are already sorted (serde_json's map).
pub(crate) fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The effects table as CSV text.
    fn csv(reader: &mut ProbeReader) -> String {
        reader.rows.effects.seal().unwrap();
        let mut frame = reader.rows.effects.frame().unwrap();
        let mut out = Vec::new();
        crate::tables::write_csv(&mut frame, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The quick reading of effect events (borrowed fields) gives the rows the reading of
    /// the whole value gives, on the ordinary events and on the odd ones that make it give
    /// up (escapes, hex paths, nulls, fields of another type).
    #[test]
    fn effect_rows_are_the_same_by_either_reading() {
        let events = [
            r#"{"type":"dns","name":"a.invalid.","qtype":1,"t_ns":5}"#,
            r#"{"type":"dns","name":"tab\there.invalid.","t_ns":5}"#,
            r#"{"type":"dns","name":7}"#,
            r#"{"type":"dns","name":null,"t_ns":-1}"#,
            r#"{"type":"dns","t_ns":1.5}"#,
            r#"{"type":"connect","dst":"10.0.0.1:443","accepted":true}"#,
            r#"{"type":"datagram","dst":"10.0.0.1:53"}"#,
            r#"{"type":"listen","address":"0.0.0.0:80"}"#,
            r#"{"type":"exec","argv":["sh","-c",{"hex":"ff00"}],"t_ns":9}"#,
            r#"{"type":"exec","argv":["sh",null]}"#,
            r#"{"type":"exec","argv":["a\"b",{"hex":"00","other":1}]}"#,
            r#"{"type":"exec","argv":null}"#,
            r#"{"type":"exec"}"#,
            r#"{"change":{"change":"created","path":"/lab/x"},"type":"fs_change"}"#,
            r#"{"change":{"change":"modified","path":{"hex":"2f80"}},"type":"fs_change"}"#,
            r#"{"change":{"change":7,"path":"/lab/x"},"type":"fs_change"}"#,
            r#"{"change":{"path":null},"type":"fs_change"}"#,
            r#"{"change":{},"type":"fs_change"}"#,
            r#"{"change":null,"type":"fs_change"}"#,
            r#"{"change":"x","type":"fs_change"}"#,
            r#"{"type":"session","server":["s","1"]}"#,
            r#"{"type":null}"#,
        ];
        // Which of them the quick reading takes (the others go the whole-value way).
        let taken: Vec<usize> = (0..events.len())
            .filter(|&i| serde_json::from_str::<Sensed<'_>>(events[i]).is_ok())
            .collect();
        assert_eq!(taken, [0, 5, 6, 7, 8, 11, 12, 13, 14, 17, 18, 20, 21]);
        let mut quick = ProbeReader::new("p".into());
        let mut whole = ProbeReader::new("p".into());
        for (seq, text) in events.iter().enumerate() {
            let value: Value = serde_json::from_str(text).unwrap();
            let (probe, run, role): (Shared, Shared, Shared) =
                ("p".into(), "r".into(), "subject".into());
            let seq = seq as u64;
            quick.event(
                probe.clone(),
                run.clone(),
                role.clone(),
                seq,
                Json::from_value(&value),
            );
            whole.event_value(probe, run, role, seq, &value);
        }
        let quick = csv(&mut quick);
        assert_eq!(quick, csv(&mut whole));
        assert_eq!(quick.lines().count(), 1 + events.len() - 2, "{quick}");
        assert!(
            quick.contains("hex:ff00") && quick.contains("hex:2f80"),
            "{quick}"
        );
    }
}
