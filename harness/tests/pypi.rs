//! End to end on the pinned PyPI servers as their READMEs run them: installed by
//! `.ci/install-thirdparty.sh` into a venv under a 0700 directory (its interpreter, from
//! pyenv on CI machines, under root's 0700 home too), run as the invoking user. Needs root
//! and the install; skips visibly elsewhere, fails under CI.

mod common;

use common::*;
use serde_json::Value;

/// Where the install script puts the venv (its `VAC_THIRDPARTY_VENV`).
fn venv() -> String {
    std::env::var("VAC_THIRDPARTY_VENV").unwrap_or_else(|_| "/root/.vac-thirdparty/venv".into())
}

/// The server's entry point, when the install ran; a visible skip (a failure in CI) if not.
fn installed(test: &str, server: &str) -> Option<String> {
    if !privileged(test) {
        return None;
    }
    let entry = format!("{}/bin/{server}", venv());
    required(
        std::path::Path::new(&entry).exists(),
        test,
        "needs .ci/install-thirdparty.sh run first",
    )
    .then_some(entry)
}

#[test]
fn mcp_server_time_starts_from_a_private_venv_and_every_tool_does_its_job() {
    let test = "mcp_server_time_starts_from_a_private_venv_and_every_tool_does_its_job";
    let Some(entry) = installed(test, "mcp-server-time") else {
        return;
    };
    let probe = probe(&[], &[&entry]);
    assert_eq!(probe.json["status"], "completed", "{:#}", probe.json);
    let (worked, tools) = tools_that_worked(&probe.json);
    assert_eq!(tools.len(), 2, "{tools:?}");
    assert_eq!(worked, tools, "every tool got a successful call");
    no_false_repeat_or_manifest(&probe.json);
    // The receipts say who it ran as and what of the host it saw: root's home hidden,
    // the venv and the interpreter it was made from left visible.
    let visibility = &events(&probe, "visibility")[0];
    assert_eq!(visibility["uid"], 0, "{visibility}");
    let listed = |key: &str| -> Vec<String> {
        visibility[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        listed("hidden").contains(&"/root".to_string()),
        "{visibility}"
    );
    assert!(listed("exposed").contains(&venv()), "{visibility}");
}

#[test]
fn mcp_server_git_status_is_confirmed_writing_the_index_of_the_planted_repository() {
    let test = "mcp_server_git_status_is_confirmed_writing_the_index_of_the_planted_repository";
    let Some(entry) = installed(test, "mcp-server-git") else {
        return;
    };
    // As its README runs it, with the lab's repository as the one it may touch.
    let probe = probe(&[], &[&entry, "--repository", "{work}/repo"]);
    assert_eq!(probe.json["status"], "completed", "{:#}", probe.json);
    let (worked, tools) = tools_that_worked(&probe.json);
    assert!(
        worked.len() * 100 >= tools.len() * 85,
        "{worked:?} of {tools:?}"
    );
    // git_status promises readOnlyHint, and git rewrites the index's stat data.
    let status = cell(&probe.json, "git_status", "fs.write");
    assert_eq!(status["verdict"], "confirmed", "{status:#}");
    let paths: Vec<&str> = status["evidence"]["effects"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    let index = format!("{}/repo/.git/index", lab_places(&probe).work);
    assert!(paths.contains(&index.as_str()), "{paths:?}");
    no_false_repeat_or_manifest(&probe.json);
    // git looks up the machine's name; the sandbox's hosts file answers it, not the resolver.
    let egress = cells(&probe.json, "confirmed")
        .into_iter()
        .filter(|c| c["clause"] == "net.egress")
        .count();
    assert_eq!(egress, 0, "{:#}", probe.json);
}

#[test]
fn mcp_server_fetch_reaches_the_sinkhole_and_its_egress_is_recorded() {
    let test = "mcp_server_fetch_reaches_the_sinkhole_and_its_egress_is_recorded";
    let Some(entry) = installed(test, "mcp-server-fetch") else {
        return;
    };
    let probe = probe(&[], &[&entry]);
    assert_eq!(probe.json["status"], "completed", "{:#}", probe.json);
    let (worked, tools) = tools_that_worked(&probe.json);
    assert_eq!(worked, tools, "the fetch got a page");
    no_false_repeat_or_manifest(&probe.json);
    // It refuses private destinations: the sinkhole answered with a global address, took
    // the request and recorded it with its bytes.
    let requests: Vec<Value> = events(&probe, "connect")
        .into_iter()
        .filter(|c| c["http"]["host"] == "example.com")
        .collect();
    assert!(
        requests
            .iter()
            .any(|c| c["http"]["request_line"] == "GET / HTTP/1.1"),
        "{requests:#?}"
    );
}

#[test]
fn a_python_sdk_server_of_the_older_http_sse_transport_is_audited_in_the_sandbox() {
    let test = "a_python_sdk_server_of_the_older_http_sse_transport_is_audited_in_the_sandbox";
    let Some(python) = installed(test, "python") else {
        return;
    };
    // The Python SDK's own HTTP+SSE server: POST /sse is 405, GET /sse names the endpoint.
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/sse/legacy_sse.py");
    let probe = probe(&["--http", "8765/sse"], &[&python, script, "8765"]);
    assert_eq!(probe.json["status"], "completed", "{:#}", probe.json);
    let write = cell(&probe.json, "keep_word", "fs.write");
    assert_eq!(write["verdict"], "confirmed", "{write}");
    assert!(write.to_string().contains("glossary-cache.txt"), "{write}");
    assert_eq!(cell(&probe.json, "shout", "fs.write")["verdict"], "refuted");
    // It was the older transport: the stream's endpoint event is a frame.
    let log = std::fs::read_to_string(probe.receipts.join("receipts.jsonl")).unwrap();
    assert!(log.contains("/messages/?session_id="), "no endpoint event");
    // The refused POST's page and each 202's "Accepted" are kept as frames, but an HTTP
    // server's bodies are not its stdout.
    let stdout = &probe.json["findings"][0];
    assert_eq!(stdout["id"], "protocol.stdout_clean");
    assert_eq!(stdout["verdict"], "skipped", "{stdout}");
    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
    assert_report_matches(&probe);
}
