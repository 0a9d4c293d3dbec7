//! Receipts are the one source of truth (SPEC §3.8): `vac report` regenerates exactly what
//! `vac probe` printed, verdicts are re-derived from the recorded events alone, and `vac
//! verify` names a verdict record the evidence does not support. Privileged: the probes run
//! servers in the sandbox.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;
use vac_receipts::{Body, ReceiptLog, ReceiptWriter, VerdictKind, WriterOptions};

#[test]
fn probe_and_report_print_the_same_bytes_and_exit_alike() {
    if !privileged("probe_and_report_print_the_same_bytes_and_exit_alike") {
        return;
    }
    for mode in ["honest", "dishonest", "broad"] {
        let probe = probe(&[], &fixture(mode));
        assert_eq!(
            probe.json["status"], "completed",
            "{mode}: {:#}",
            probe.json
        );
        assert_report_matches(&probe);
        // The same fixture served over Streamable HTTP inside the sandbox.
        let mut http = fixture(mode).to_vec();
        http.extend(["--transport", "http", "--port", "8931"]);
        let probe = common::probe(&["--http", "8931"], &http);
        assert_eq!(
            probe.json["status"], "completed",
            "{mode}: {:#}",
            probe.json
        );
        assert_report_matches(&probe);
    }
    // A probe that could not run: the report of its receipts exits 3 as it did.
    let not_mcp = probe(
        &["--timeout", "5"],
        &["/usr/bin/python3", "-c", "print('hello')"],
    );
    assert_eq!(not_mcp.output.status.code(), Some(3), "{:#}", not_mcp.json);
    assert_report_matches(&not_mcp);
}

/// Rewrites a receipt log into `dst` with `edit` applied to every body (`None` drops it),
/// re-chained and re-sealed: the chain of the copy verifies, whatever was changed.
fn rechain(src: &Path, dst: &Path, mut edit: impl FnMut(Body) -> Option<Body>) {
    let log = ReceiptLog::open(src).unwrap();
    let mut bodies = log.entries().unwrap().map(|e| e.unwrap().record.body);
    let Some(Body::CampaignStart(start)) = bodies.next() else {
        panic!("a log starts with campaign_start");
    };
    copy_dir(&src.join("blobs"), &dst.join("blobs"));
    let mut writer = ReceiptWriter::create(dst, WriterOptions::default(), start).unwrap();
    for body in bodies {
        if matches!(body, Body::Seal(_)) {
            continue;
        }
        if let Some(body) = edit(body) {
            writer.append(body).unwrap();
        }
    }
    writer.seal(None).unwrap();
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    let Ok(entries) = std::fs::read_dir(src) else {
        return;
    };
    for entry in entries {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
}

/// Everything the runs recorded, as text: every event and frame with its payloads' bytes.
fn recorded_text(dir: &Path) -> String {
    let log = ReceiptLog::open(dir).unwrap();
    let mut text = String::new();
    for entry in log.entries().unwrap() {
        let body = entry.unwrap().record.body;
        let payloads = match &body {
            Body::Event(event) => {
                text.push_str(&event.event.to_string());
                event.payloads.clone()
            }
            Body::Frame(frame) => vec![frame.bytes.clone()],
            _ => continue,
        };
        for payload in payloads {
            let bytes = log.payload_bytes(&payload).unwrap();
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
        text.push('\n');
    }
    text
}

fn report_json(dir: &Path) -> Value {
    let out = vac(&["report", "--json", dir.to_str().unwrap()]);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    })
}

#[test]
fn verdicts_are_regraded_from_the_recorded_events_alone() {
    if !privileged("verdicts_are_regraded_from_the_recorded_events_alone") {
        return;
    }
    let probe = probe(&[], &fixture("dishonest"));
    let copy = probe.dir.path().join("without-verdicts");
    let mut dropped = 0;
    rechain(&probe.receipts, &copy, |body| match body {
        Body::Verdict(_) => {
            dropped += 1;
            None
        }
        other => Some(other),
    });
    let grid = probe.json["verdicts"].as_array().unwrap();
    assert_eq!(dropped, grid.len(), "one verdict record per cell");
    let regraded = report_json(&copy);
    assert_eq!(
        regraded["verdicts"], probe.json["verdicts"],
        "the grid re-graded without verdict records differs"
    );
    // Every confirmed cell's evidence is in what the sensors and the client recorded.
    let recorded = recorded_text(&copy);
    let confirmed = cells(&probe.json, "confirmed");
    assert!(confirmed.len() >= 11, "{} confirmed", confirmed.len());
    let mut checked = 0;
    for cell in confirmed {
        for effect in cell["evidence"]["effects"].as_array().unwrap() {
            let class = effect["class"].as_str().unwrap();
            let path = effect["path"].as_str().unwrap();
            let detail = &effect["detail"];
            let needles: Vec<String> = match class {
                "connect" | "udp" | "listen" => {
                    let (host, port) = path.rsplit_once(':').unwrap();
                    vec![host.to_string(), port.to_string()]
                }
                "exec" => detail["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().to_string())
                    .chain([path.to_string()])
                    .collect(),
                // Named after the tool or the canary: the excerpt is what was seen.
                "manifest_changed" | "secret_in_result" | "instruction_in_result" => Vec::new(),
                _ => vec![path.to_string()],
            };
            let excerpts = ["excerpt", "first_bytes"]
                .iter()
                .filter_map(|k| detail[*k].as_str())
                .filter(|x| !x.is_empty() && !x.contains('\u{fffd}'))
                // A cut excerpt ends in an ellipsis of the report's own.
                .map(|x| x.strip_suffix('…').unwrap_or(x).to_string());
            for needle in needles.into_iter().chain(excerpts) {
                // Results sit in JSON frames and events, escaped as JSON strings are.
                let escaped = serde_json::to_string(&needle).unwrap();
                let escaped = &escaped[1..escaped.len() - 1];
                assert!(
                    recorded.contains(&needle) || recorded.contains(escaped),
                    "{} × {}: {needle:?} is not in the recorded events",
                    cell["tool"],
                    cell["clause"]
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 15, "only {checked} pieces of evidence checked");
}

#[test]
fn edited_verdict_and_profile_records_are_named_by_verify() {
    if !privileged("edited_verdict_and_profile_records_are_named_by_verify") {
        return;
    }
    let probe = probe(&[], &fixture("dishonest"));
    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
    let forged = probe.dir.path().join("forged");
    rechain(&probe.receipts, &forged, |body| match body {
        Body::Verdict(mut v) if v.tool == "read_note" && v.clause == "fs.write" => {
            assert_eq!(v.verdict, VerdictKind::Confirmed);
            v.verdict = VerdictKind::Refuted;
            v.reason = "refuted".into();
            Some(Body::Verdict(v))
        }
        other => Some(other),
    });
    // The chain of the forgery is sound: only re-grading can catch it.
    vac_receipts::verify(&forged, &vac_receipts::VerifyOptions::default()).unwrap();
    let out = verify(&forged);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{stdout}");
    assert!(
        stdout.contains("MISMATCH")
            && stdout.contains("read_note × fs.write")
            && stdout.contains("a verdict the evidence does not support"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("MISMATCH").count(), 1, "{stdout}");

    // Receipts graded under other rules (here: a plan without the rules revision, as every
    // log written before it was recorded): re-grading names each record today's rules grade
    // differently, as a rule change and not as tampering, and the chain decides the exit.
    let without_rules = |body| match body {
        Body::Plan(mut p) => {
            p.plan.as_object_mut().unwrap().remove("rules");
            Some(Body::Plan(p))
        }
        other => Some(other),
    };
    let older = probe.dir.path().join("older-rules");
    rechain(&probe.receipts, &older, without_rules);
    let out = verify(&older);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("every verdict re-graded from the recorded evidence"),
        "{stdout}"
    );
    let older_forged = probe.dir.path().join("older-rules-forged");
    rechain(&forged, &older_forged, without_rules);
    let out = verify(&older_forged);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("graded under rules revision 0")
            && stdout.contains("1 records differ, 1 of them in verdict")
            && stdout.contains("REGRADED")
            && stdout.contains("read_note × fs.write"),
        "{stdout}"
    );
    assert!(!stdout.contains("MISMATCH"), "{stdout}");

    // The behaviour profile is re-derived too: a line edited, and a line dropped.
    let profiled = |body: &Body| matches!(body, Body::Effect(e) if e.sensor == "profile");
    let edited = probe.dir.path().join("edited-profile");
    let mut first = true;
    rechain(&probe.receipts, &edited, |body| match body {
        Body::Effect(mut e) if e.sensor == "profile" && std::mem::take(&mut first) => {
            e.target = "/nowhere/it/went".into();
            Some(Body::Effect(e))
        }
        other => Some(other),
    });
    assert!(
        !first,
        "the dishonest twin's receipts hold no profile record"
    );
    let out = verify(&edited);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{stdout}");
    assert!(
        stdout.contains("× profile: a profile line the evidence does not support")
            && stdout.contains("/nowhere/it/went"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("MISMATCH").count(), 1, "{stdout}");
    let dropped = probe.dir.path().join("dropped-profile");
    let mut kept = 0;
    rechain(&probe.receipts, &dropped, |body| {
        if profiled(&body) {
            kept += 1;
            if kept == 2 {
                return None;
            }
        }
        Some(body)
    });
    let out = verify(&dropped);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{stdout}");
    assert!(
        stdout.contains("MISMATCH: missing record") && stdout.contains("× profile"),
        "{stdout}"
    );
}

/// A server whose second tool's readOnlyHint is the string "yes".
const SLOPPY: &str = r#"
def tools(m):
    return {"tools": [
        {"name": "fine", "description": "Says hi.", "inputSchema": {"type": "object"},
         "annotations": {"readOnlyHint": True}},
        {"name": "sloppy", "description": "Says hi too.", "inputSchema": {"type": "object"},
         "annotations": {"readOnlyHint": "yes"}}]}
"#;

#[test]
fn a_tool_with_a_malformed_annotation_is_errored_not_silent() {
    if !privileged("a_tool_with_a_malformed_annotation_is_errored_not_silent") {
        return;
    }
    let script = python_server("sloppy", SLOPPY, "pass");
    let probe = probe(&[], &["/usr/bin/python3", "-c", &script]);
    assert_eq!(probe.json["status"], "completed", "{:#}", probe.json);
    assert_eq!(probe.json["tools"], 2, "{:#}", probe.json);
    assert_eq!(probe.json["manifest"]["malformed"], 1, "{:#}", probe.json);
    assert_eq!(
        probe.output.status.code(),
        Some(5),
        "errored cells and nothing confirmed: incomplete"
    );
    let sloppy: Vec<&Value> = probe.json["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["tool"] == "sloppy")
        .collect();
    assert!(sloppy.len() >= 10, "{} cells", sloppy.len());
    for cell in &sloppy {
        assert_eq!(cell["verdict"], "errored", "{cell}");
        assert_eq!(cell["reason"], "malformed_tool", "{cell}");
        let error = cell["evidence"]["errors"][0]["detail"]["error"]
            .as_str()
            .unwrap();
        assert!(error.contains("invalid type"), "{error}");
        assert_eq!(
            cell["evidence"]["errors"][0]["detail"]["raw"]["annotations"]["readOnlyHint"],
            "yes"
        );
    }
    // The well-formed tool is graded as usual.
    assert_eq!(cell(&probe.json, "fine", "fs.write")["verdict"], "refuted");
    assert_report_matches(&probe);
    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
}

/// A server whose tools/list always has a next page.
const ENDLESS_PAGES: &str = r#"
def tools(m):
    page = int((m.get("params") or {}).get("cursor") or 0)
    tool = {"name": "t%d" % page, "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": True}}
    return {"tools": [tool], "nextCursor": str(page + 1)}
"#;

#[test]
fn a_tools_list_that_never_ends_is_cut_off_and_the_tool_budget_holds() {
    if !privileged("a_tools_list_that_never_ends_is_cut_off_and_the_tool_budget_holds") {
        return;
    }
    let probe = probe(
        &["--max-calls", "1", "--max-tools", "4"],
        &[
            "/usr/bin/python3",
            "-c",
            &python_server("pages", ENDLESS_PAGES, "pass"),
        ],
    );
    assert_eq!(probe.json["status"], "completed", "{:#}", probe.json);
    let manifest = &probe.json["manifest"];
    assert_eq!(manifest["complete"], false, "{manifest}");
    assert_eq!(manifest["pages"], 64, "{manifest}");
    assert_eq!(probe.json["tools"], 64, "{manifest}");
    // Four tools were called (in shared runs or runs of their own); the other sixty are
    // skipped for the budget, not lost.
    let called: std::collections::BTreeSet<&str> = probe.json["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["calls"].as_u64().is_some_and(|n| n > 0))
        .map(|c| c["tool"].as_str().unwrap())
        .filter(|t| !vac_contracts::is_server_row(t))
        .collect();
    assert_eq!(called.len(), 4, "{called:?}");
    let budget: Vec<&Value> = probe.json["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["reason"] == "budget")
        .collect();
    assert!(budget.iter().all(|c| c["tool"] != "t0"), "{budget:?}");
    let tools: std::collections::BTreeSet<&str> =
        budget.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(tools.len(), 60, "{tools:?}");
    assert_report_matches(&probe);
}
