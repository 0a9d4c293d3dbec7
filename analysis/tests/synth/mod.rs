//! Synthetic campaigns: receipt directories with the records a probe writes (campaign
//! start, control run with session and manifest, contract, plan, one subject run per tool
//! with its call and effect events, verdicts, seal), written through the real receipt
//! writer so they verify. Used by the tests and by the benchmark (`benches/map.rs`).

#![allow(dead_code, unreachable_pub)]

use std::path::Path;

use serde_json::{Value, json};
use vac_receipts::{
    Body, CampaignStart, Clock, Contract, Digest, Effect, Event, Host, Plan, ReceiptWriter, Role,
    RunEnd, RunStart, RunStatus, SandboxConfig, SelfTest, SensorStatus, Verdict, VerdictKind,
    WriterOptions,
};

/// The clauses a synthetic probe grades, in report order (the analysis crate's list).
pub const CLAUSES: [&str; 10] = {
    let all = vac_analysis::severity::CLAUSES;
    let mut names = [""; 10];
    let mut i = 0;
    while i < names.len() {
        names[i] = all[i].0;
        i += 1;
    }
    names
};

/// Shape of a synthetic campaign.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub servers: usize,
    pub tools: usize,
    /// Effect events in each tool's subject run.
    pub effects_per_tool: usize,
}

/// Writes `shape.servers` probe directories `server-NNN` under `root`.
pub fn campaign(root: &Path, shape: Shape) {
    for s in 0..shape.servers {
        probe(&root.join(format!("server-{s:03}")), s, shape);
    }
}

/// The verdict of tool `t`, clause `c` of server `s`: a fixed, varied pattern.
pub fn verdict_of(s: usize, t: usize, c: usize) -> &'static str {
    match (s * 7 + t * 3 + c) % 17 {
        0 => "confirmed",
        1 | 2 => "errored",
        3..=8 => "skipped",
        _ => "refuted",
    }
}

/// One probe directory of server `s`.
pub fn probe(dir: &Path, s: usize, shape: Shape) {
    let options = WriterOptions {
        clock: Clock::Fixed {
            start: 1_700_000_000_000_000_000,
            step: 1_000,
        },
        ..WriterOptions::default()
    };
    let target = format!("/opt/synth/bin/server-{s:03} --root /data");
    let config = json!({"target": target, "seed": 0});
    let start = CampaignStart {
        vac_version: "0.1.0".into(),
        host: Host {
            hostname: "bench".into(),
            kernel: "6.0".into(),
            arch: "x86_64".into(),
        },
        config_hash: Digest::of(config.to_string().as_bytes()),
        seed: 0,
        config,
    };
    let mut w = ReceiptWriter::create(dir, options, start).unwrap();
    let tools: Vec<String> = (0..shape.tools).map(|t| format!("tool_{t:03}")).collect();
    let manifest: Vec<Value> = tools
        .iter()
        .map(|name| {
            json!({"name": name, "description": format!("Synthetic tool {name}."),
                   "annotations": {"readOnlyHint": true, "openWorldHint": false},
                   "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}})
        })
        .collect();
    let control = format!("run-s{s}-control");
    run_start(&mut w, &control, &target, Role::Control);
    event(
        &mut w,
        &control,
        json!({"type": "session", "protocol_version": "2025-11-25", "server": [format!("synth-{s}"), "1.0.0"]}),
    );
    event(
        &mut w,
        &control,
        json!({"type": "manifest", "phase": "initial", "tools": manifest, "malformed": [], "pages": 1, "complete": true}),
    );
    self_tests(&mut w, &control);
    run_end(&mut w, &control);
    // The default derivation's name, as every fresh probe records it: a report must not
    // take it for a contract file (a SARIF location pointed at it, an invalid URI).
    w.append(Body::Contract(Contract::new(
        "derived from annotations and intent",
        "[server]\nname = \"synth\"\n",
    )))
    .unwrap();
    let contract = Digest::of(b"[server]\nname = \"synth\"\n").to_hex();
    w.append(Body::Plan(Plan {
        plan: json!({"target": target, "runs": shape.tools}),
    }))
    .unwrap();
    let mut last_run = control.clone();
    for (t, tool) in tools.iter().enumerate() {
        let run = format!("run-s{s}-t{t}");
        run_start(&mut w, &run, &target, Role::Subject);
        w.append(Body::SandboxConfig(SandboxConfig {
            run_id: run.clone(),
            config: json!({"tool": tool}),
        }))
        .unwrap();
        let ok = !(s + t).is_multiple_of(5);
        // A failing tool refuses by `isError` on even servers; on odd ones it tells the
        // error in its text, unflagged, as the judgement recorded with the call says.
        let told = !ok && s % 2 == 1;
        let mut call = json!({"type": "call", "index": 0, "repeat_of": null, "purpose": "normal", "tool": tool,
               "arguments": {"path": "/lab/work/note.md"},
               "outcome": {"Ok": {"request_id": 2, "error": null,
                   "requested_at": {"secs": 0, "nanos": 1_000_000},
                   "answered_at": {"secs": 0, "nanos": 2_000_000},
                   "result": {"content": [{"type": "text", "text": if told { "Error: no such table" } else { "ok" }}],
                              "isError": !ok && !told}}}});
        if told {
            call["answer"] = json!("told_error");
        }
        event(&mut w, &run, call);
        for e in 0..shape.effects_per_tool {
            let t_ns = 1_000_000 + e as u64 * 1_000;
            let ev = match e % 4 {
                0 => {
                    json!({"type": "fs_change", "change": {"change": "created", "kind": "file", "mode": 420,
                     "path": format!("/lab/work/out-{e}.txt"), "digest": null}, "content": null, "old_content": null})
                }
                1 => {
                    json!({"type": "exec", "pid": 100 + e, "ppid": 1, "path": "/usr/bin/true", "exe": "/usr/bin/true",
                     "argv": ["true", format!("{e}")], "argv_truncated": false, "argv_source": "exec_call",
                     "cwd": "/lab/work", "uid": 65534, "t_ns": t_ns})
                }
                2 => {
                    json!({"type": "dns", "name": format!("host-{e}.example.invalid."), "qtype": 1, "tcp": false, "t_ns": t_ns})
                }
                _ => {
                    json!({"type": "connect", "dst": "10.255.255.1:443", "accepted": true, "http": null, "sni": null, "t_ns": t_ns})
                }
            };
            event(&mut w, &run, ev);
        }
        self_tests(&mut w, &run);
        run_end(&mut w, &run);
        last_run = run;
    }
    for (t, tool) in tools.iter().enumerate() {
        for (c, clause) in CLAUSES.iter().enumerate() {
            let verdict = verdict_of(s, t, c);
            let ok = u64::from(!(s + t).is_multiple_of(5));
            let evidence = match verdict {
                "confirmed" => json!({
                    "basis": "readOnlyHint: true",
                    "effects": [{"class": "created", "path": format!("/lab/work/{tool}.log"),
                                 "attribution": {"call": 0}, "existed_before": false,
                                 "detail": {"excerpt": "written\n", "blake3": Digest::of(tool.as_bytes()).to_hex()}}],
                    "calls": [{"index": 0, "tool": tool, "arguments": {"path": "/lab/work/note.md"}, "ok": true}],
                    "control_subtracted": [],
                    "sensors": [{"sensor": "fs_writes", "status": "live", "detail": {"run": last_run}}],
                    "contract": contract, "cell_calls": 1, "cell_succeeded": ok,
                }),
                "refuted" => json!({"basis": "readOnlyHint: true", "calls": 1, "succeeded": ok,
                    "sensors": [], "contract": contract, "cell_calls": 1, "cell_succeeded": ok}),
                _ => json!({"contract": contract, "cell_calls": 1, "cell_succeeded": ok}),
            };
            let kind = match verdict {
                "confirmed" => VerdictKind::Confirmed,
                "refuted" => VerdictKind::Refuted,
                "skipped" => VerdictKind::Skipped,
                _ => VerdictKind::Errored,
            };
            w.append(Body::Verdict(Verdict {
                run_id: last_run.clone(),
                tool: tool.clone(),
                clause: clause.to_string(),
                verdict: kind,
                reason: format!("synthetic {verdict} <{clause}> & \"{tool}\""),
                evidence: evidence.into(),
            }))
            .unwrap();
        }
    }
    // Even-numbered servers carry a behaviour profile, as vac writes it after the verdicts;
    // odd ones are as receipts from before profiles were recorded.
    if s.is_multiple_of(2) {
        for (t, tool) in tools.iter().enumerate() {
            let mut lines: Vec<(&str, String)> = Vec::new();
            for e in 0..shape.effects_per_tool {
                let line = match e % 4 {
                    0 => ("writes", format!("/lab/work/out-{e}.txt")),
                    1 => ("execs", "/usr/bin/true".to_string()),
                    2 => ("reaches", format!("host-{e}.example.invalid.")),
                    _ => ("reaches", "10.255.255.1:443".to_string()),
                };
                if !lines.contains(&line) {
                    lines.push(line);
                }
            }
            // Every third tool did nothing seen.
            if t % 3 == 2 {
                lines.clear();
            }
            lines.sort_by_key(|(kind, _)| *kind);
            // As vac writes them: at most 16 targets per kind, each naming how many there were.
            let distinct = |kind: &str| lines.iter().filter(|(k, _)| *k == kind).count();
            let records: Vec<(String, String, usize)> = if lines.is_empty() {
                vec![("nothing_seen".into(), String::new(), 0)]
            } else {
                let mut listed: Vec<(String, String, usize)> = Vec::new();
                for (kind, target) in &lines {
                    if listed.iter().filter(|(k, _, _)| k == kind).count() < 16 {
                        listed.push((kind.to_string(), target.clone(), distinct(kind)));
                    }
                }
                listed
            };
            for (kind, target, distinct) in records {
                w.append(Body::Effect(Effect {
                    run_id: last_run.clone(),
                    call: None,
                    sensor: "profile".into(),
                    class: kind,
                    target,
                    detail: json!({"tool": tool, "distinct": distinct}),
                    payloads: Vec::new(),
                }))
                .unwrap();
            }
        }
    }
    w.seal(None).unwrap();
}

fn run_start(w: &mut ReceiptWriter, run: &str, target: &str, role: Role) {
    w.append(Body::RunStart(RunStart {
        run_id: run.to_string(),
        target: target.to_string(),
        role,
        repetition: 0,
    }))
    .unwrap();
}

fn run_end(w: &mut ReceiptWriter, run: &str) {
    w.append(Body::RunEnd(RunEnd {
        run_id: run.to_string(),
        status: RunStatus::Completed,
        detail: "synthetic".into(),
    }))
    .unwrap();
}

fn event(w: &mut ReceiptWriter, run: &str, event: Value) {
    w.append(Body::Event(Event {
        run_id: run.to_string(),
        event: event.into(),
        payloads: Vec::new(),
    }))
    .unwrap();
}

fn self_tests(w: &mut ReceiptWriter, run: &str) {
    for sensor in ["fs_writes", "fs_events", "processes", "network"] {
        w.append(Body::SelfTest(SelfTest {
            run_id: run.to_string(),
            sensor: sensor.to_string(),
            status: SensorStatus::Live,
            detail: "synthetic self-test".into(),
        }))
        .unwrap();
    }
}
