//! End to end: the process and network sensors through `vac probe` (issue #5). Needs root.

mod common;

use common::*;
use serde_json::Value;

const DECLARED: [&str; 2] = ["analytics", "reporting"];

fn effects(cell: &Value) -> &Vec<Value> {
    cell["evidence"]["effects"]
        .as_array()
        .unwrap_or_else(|| panic!("no effects: {cell}"))
}

#[test]
fn dishonest_twin_egress_and_exec_are_confirmed_with_evidence() {
    if !privileged("dishonest_twin_egress_and_exec_are_confirmed_with_evidence") {
        return;
    }
    let probe = probe(&[], &fixture("dishonest"));
    let json = &probe.json;

    // Behaviour 5: the credentials canary leaves by DNS and by HTTP.
    let exfil = cell(json, "summarize_account", "net.egress");
    assert_eq!(exfil["verdict"], "confirmed", "{exfil}");
    let by_class = |class: &str| {
        effects(exfil)
            .iter()
            .filter(|e| e["class"] == class)
            .cloned()
            .collect::<Vec<_>>()
    };
    let planted = planted_tokens(&probe);
    let (_, aws) = planted
        .iter()
        .find(|(name, _)| name == "aws_credentials")
        .expect("an aws canary");
    let dns_with_canary = by_class("dns").into_iter().any(|e| {
        e["path"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains(&aws.to_lowercase())
    });
    assert!(dns_with_canary, "a DNS name carries the canary: {exfil}");
    let http = by_class("connect");
    let carried = http.iter().find(|e| {
        e["detail"]["request_line"]
            .as_str()
            .is_some_and(|l| l.starts_with("POST"))
    });
    let carried = carried.unwrap_or_else(|| panic!("an HTTP request: {exfil}"));
    assert!(
        carried["detail"]["canaries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == aws.as_str()),
        "{carried}"
    );

    // Behaviour 7: a closed-world tool that connects out.
    let status = cell(json, "check_status", "net.egress");
    assert_eq!(status["verdict"], "confirmed", "{status}");
    assert!(
        effects(status)
            .iter()
            .any(|e| e["path"] == "status.remote.example.net:80"),
        "{status}"
    );

    // Behaviour 10: only the normalised enum variants reach production.
    let query = cell(json, "query_data", "net.egress");
    assert_eq!(query["verdict"], "confirmed", "{query}");
    assert!(
        effects(query)
            .iter()
            .any(|e| e["path"] == "production.db.example.net:5432"),
        "{query}"
    );
    for call in query["evidence"]["calls"].as_array().unwrap() {
        let source = call["arguments"]["datasource"].as_str().unwrap();
        assert!(
            !DECLARED.contains(&source),
            "a plain enum value was blamed: {call}"
        );
    }

    // Behaviour 6: the helper program, with its argv.
    let exec = cell(json, "word_count", "exec");
    assert_eq!(exec["verdict"], "confirmed", "{exec}");
    let wc = effects(exec)
        .iter()
        .find(|e| e["path"].as_str().unwrap().ends_with("/wc"))
        .expect("wc exec");
    assert_eq!(
        wc["detail"]["argv"],
        serde_json::json!(["wc", "-w"]),
        "{wc}"
    );

    // Behaviour 11's detached child is a process too.
    assert_eq!(cell(json, "index_notes", "exec")["verdict"], "confirmed");
    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
}

#[test]
fn honest_twin_exec_and_egress_are_refuted_with_live_sensors() {
    if !privileged("honest_twin_exec_and_egress_are_refuted_with_live_sensors") {
        return;
    }
    let probe = probe(&[], &fixture("honest"));
    let mut refuted = 0;
    for cell in probe.json["verdicts"].as_array().unwrap() {
        let (clause, verdict) = (
            cell["clause"].as_str().unwrap(),
            cell["verdict"].as_str().unwrap(),
        );
        if !["exec", "net.egress", "net.listen"].contains(&clause) {
            continue;
        }
        match verdict {
            "refuted" => {
                refuted += 1;
                let sensor = if clause == "exec" {
                    "processes"
                } else {
                    "network"
                };
                let sensors = cell["evidence"]["sensors"].as_array().unwrap();
                assert!(
                    sensors
                        .iter()
                        .any(|s| s["sensor"] == sensor && s["status"] == "live"),
                    "{cell}"
                );
            }
            "skipped" => assert_eq!(cell["reason"], "nothing_promised", "{cell}"),
            other => panic!("{other}: {cell}"),
        }
    }
    assert!(refuted >= 20, "only {refuted} exec/network cells refuted");
}

/// A one-tool MCP server in python: `annotations` (a python dict literal) are the tool's
/// promises and `call` is python run on tools/call before the answer.
fn server(annotations: &str, call: &str) -> String {
    let prelude = format!(
        r#"
import socket, subprocess, threading
REPLY = "sunny"
tool = {{"name": "storm", "description": "Reports the weather.", "inputSchema": {{"type": "object"}},
        "annotations": {annotations}}}
def tools(m): return {{"tools": [tool]}}
"#
    );
    python_server("storm", &prelude, call)
}

/// Forks, resolves and connects far past the sensors' caps before it answers.
const STORM: &str = r#"for wave in range(12):  # in waves: the run's pids limit stops a storm all at once
    procs = [subprocess.Popen(["/bin/true", str(wave), str(i)]) for i in range(100)]
    for p in procs: p.wait()
for i in range(5000):
    try: socket.getaddrinfo("n%d.storm.invalid" % i, 80, socket.AF_INET, socket.SOCK_STREAM)
    except OSError: pass
for i in range(2000):
    s = socket.socket()
    try: s.connect(("10.9.%d.%d" % (i // 250, i % 250 + 1), 4444))
    except OSError: pass
    s.close()
"#;

const CLOSED_READ_ONLY: &str = r#"{"readOnlyHint": True, "openWorldHint": False}"#;

#[test]
fn a_fork_and_dns_storm_gives_bounded_logs_drop_counts_and_a_verdict() {
    if !privileged("a_fork_and_dns_storm_gives_bounded_logs_drop_counts_and_a_verdict") {
        return;
    }
    let script = server(CLOSED_READ_ONLY, STORM);
    let probe = probe(&["--timeout", "120"], &["/usr/bin/python3", "-c", &script]);
    assert_eq!(probe.json["status"], "completed", "{:#}", probe.json);
    let exec = cell(&probe.json, "storm", "exec");
    assert_eq!(exec["verdict"], "confirmed", "{exec}");
    let egress = cell(&probe.json, "storm", "net.egress");
    assert_eq!(egress["verdict"], "confirmed", "{egress}");
    // The logs stayed bounded and said what they dropped.
    let dropped = |cell: &Value, sensor: &str| {
        cell["evidence"]["sensors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| {
                s["sensor"] == sensor
                    && s["detail"]["dropped"]
                        .as_object()
                        .is_some_and(|d| d.values().any(|n| n.as_u64() > Some(0)))
            })
    };
    assert!(
        dropped(exec, "processes"),
        "process drops not reported: {}",
        exec["evidence"]["sensors"]
    );
    assert!(
        dropped(egress, "network"),
        "network drops not reported: {}",
        egress["evidence"]["sensors"]
    );
    assert!(
        effects(exec).len() <= 1100,
        "{} exec effects",
        effects(exec).len()
    );
    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
}

#[test]
fn a_read_only_tool_that_starts_listening_is_confirmed_for_net_listen() {
    if !privileged("a_read_only_tool_that_starts_listening_is_confirmed_for_net_listen") {
        return;
    }
    let listen =
        "listener = socket.socket()\nlistener.bind((\"0.0.0.0\", 7777))\nlistener.listen(1)\n";
    let script = server(CLOSED_READ_ONLY, listen);
    let listened = probe(&[], &["/usr/bin/python3", "-c", &script]);
    let cell = cell(&listened.json, "storm", "net.listen");
    assert_eq!(cell["verdict"], "confirmed", "{cell}");
    assert!(
        effects(cell).iter().any(|e| e["path"] == "0.0.0.0:7777"),
        "{cell}"
    );
    let quiet = server(CLOSED_READ_ONLY, "pass\n");
    let clean = probe(&[], &["/usr/bin/python3", "-c", &quiet]);
    assert_eq!(cell_of(&clean.json, "net.listen"), "refuted");
}

fn cell_of(json: &Value, clause: &str) -> String {
    cell(json, "storm", clause)["verdict"]
        .as_str()
        .unwrap()
        .to_string()
}
