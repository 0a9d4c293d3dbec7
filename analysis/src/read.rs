//! Reading: a receipt directory (one probe) or a campaign (a directory of them), each
//! verified and turned into rows in the same pass.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use vac_receipts::{Body, Entry, ReadError, Role, VerifyError, VerifyOptions};

use crate::rows::{CallRow, EffectRow, ManifestRow, Probe, Rows, RunRow, SelfTestRow, VerdictRow};

/// Why a directory could not be read into tables. Nothing is rendered after one.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// Neither `DIR/receipts.jsonl` nor any `DIR/*/receipts.jsonl`.
    #[error(
        "{}: not a receipt directory (no receipts.jsonl in it or in any directory directly under it)",
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
    #[error("{}: {detail}", dir.display())]
    Incomplete { dir: PathBuf, detail: String },
    /// An output could not be written.
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// polars refused a table.
    #[error("table {table}: {detail}")]
    Table { table: &'static str, detail: String },
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

/// The probe directories under `root`: `root` itself when it holds a log, else each
/// directory directly under it that does, in name order.
pub fn probe_dirs(root: &Path) -> Result<Vec<PathBuf>, AnalysisError> {
    if root.join(vac_receipts::LOG_FILE).is_file() {
        return Ok(vec![root.to_path_buf()]);
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
        if path.join(vac_receipts::LOG_FILE).is_file() {
            dirs.push(path);
        }
    }
    if dirs.is_empty() {
        return Err(AnalysisError::NotReceipts(root.to_path_buf()));
    }
    dirs.sort();
    Ok(dirs)
}

/// Reads every probe under `root` (see [`probe_dirs`]), verifying each sealed chain.
///
/// Probes are read in parallel (one thread per core); rows keep directory order, and the
/// error reported is the first in directory order, whatever finished first.
pub fn read(root: &Path) -> Result<Rows, AnalysisError> {
    let dirs = probe_dirs(root)?;
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
                    let read = read_probe(dir, name);
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
    let mut rows = Rows::default();
    for read in done.into_inner().unwrap_or_else(|e| e.into_inner()) {
        match read {
            Some(read) => rows.append(read?),
            // Skipped after an earlier-started probe failed: that failure comes first
            // unless an earlier directory failed too, which the loop has returned already.
            None => continue,
        }
    }
    if rows.verdicts.is_empty() {
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
        .map_err(|detail| AnalysisError::Incomplete {
            dir: dir.to_path_buf(),
            detail,
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
    name: String,
    /// Role of each open run, by id.
    roles: Vec<(String, &'static str)>,
}

impl ProbeReader {
    fn new(name: String) -> ProbeReader {
        ProbeReader {
            rows: Rows::default(),
            probe: None,
            name,
            roles: Vec::new(),
        }
    }

    fn role(&self, run_id: &str) -> &'static str {
        self.roles
            .iter()
            .rev()
            .find(|(id, _)| id == run_id)
            .map_or("", |(_, role)| role)
    }

    fn visit(&mut self, entry: &Entry) {
        let seq = entry.record.seq;
        let probe = self.name.clone();
        match &entry.record.body {
            Body::CampaignStart(start) => {
                let target = start
                    .config
                    .get("target")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                self.probe = Some(Probe {
                    dir: probe,
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
                };
                self.roles.push((start.run_id.clone(), role));
                self.rows.runs.push(RunRow {
                    probe,
                    run_id: start.run_id.clone(),
                    role: role.to_string(),
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
                    run_id: test.run_id.clone(),
                    seq,
                    sensor: test.sensor.clone(),
                    status,
                    detail: test.detail.clone(),
                });
            }
            Body::Event(event) => {
                let run_id = event.run_id.clone();
                if let Some(run) = self.run_mut(&run_id) {
                    run.events += 1;
                }
                let role = self.role(&run_id).to_string();
                self.event(probe, run_id, role, seq, &event.event);
            }
            Body::Verdict(verdict) => {
                let kind = serde_json::to_value(verdict.verdict)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                let evidence = &verdict.evidence;
                let count = |key: &str| evidence.get(key).and_then(Value::as_u64);
                self.rows.verdicts.push(VerdictRow {
                    probe,
                    run_id: verdict.run_id.clone(),
                    seq,
                    record_hash: entry.hash.to_string(),
                    tool: verdict.tool.clone(),
                    clause: verdict.clause.clone(),
                    verdict: kind,
                    reason: verdict.reason.clone(),
                    calls: count("cell_calls").or_else(|| count("calls")),
                    succeeded: count("cell_succeeded").or_else(|| count("succeeded")),
                    contract: evidence
                        .get("contract")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    basis: evidence
                        .get("basis")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    evidence: std::sync::Arc::new(evidence.clone()),
                });
            }
            Body::Seal(_) | Body::Plan(_) | Body::Effect(_) => {}
        }
    }

    fn run_mut(&mut self, run_id: &str) -> Option<&mut RunRow> {
        self.rows.runs.iter_mut().rev().find(|r| r.run_id == run_id)
    }

    fn event(&mut self, probe: String, run_id: String, role: String, seq: u64, event: &Value) {
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
                let status = match (ok, result, error) {
                    (None, _, _) => "failed",
                    (Some(_), _, Some(_)) => "rpc_error",
                    (Some(_), Some(_), None) if is_error => "is_error",
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
                        .unwrap_or("fs_change")
                        .to_string(),
                    other => other.to_string(),
                };
                self.rows.effects.push(EffectRow {
                    probe,
                    run_id,
                    role,
                    seq,
                    sensor: kind.to_string(),
                    class,
                    target,
                    t_ns,
                    detail: compact(event),
                });
            }
            _ => {}
        }
    }

    fn finish(self) -> Result<Rows, String> {
        let Some(mut probe) = self.probe else {
            return Err("the log has no campaign_start".to_string());
        };
        if let Some(open) = self.rows.runs.iter().find(|r| r.end_seq.is_none()) {
            return Err(format!("run {} was never closed", open.run_id));
        }
        if probe.server.is_empty() {
            probe.server = probe
                .server_name
                .clone()
                .unwrap_or_else(|| probe.dir.clone());
        }
        let mut rows = self.rows;
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
