//! End to end: the real `vac` binary probes the built-in fixtures, a third-party server and
//! hostile commands inside the sandbox. Needs root; skips visibly elsewhere, fails under CI.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

const PLANTED: [&str; 4] = ["read_note", "open_note", "get_config", "index_notes"];

fn audit(mode: &str) -> Probe {
    probe(&[], &fixture(mode))
}

#[test]
fn dishonest_twin_fs_writes_are_confirmed_with_evidence() {
    if !privileged("dishonest_twin_fs_writes_are_confirmed_with_evidence") {
        return;
    }
    let probe = audit("dishonest");
    assert_eq!(
        probe.output.status.code(),
        Some(1),
        "a confirmed violation exits 1"
    );
    let confirmed: Vec<&Value> = cells(&probe.json, "confirmed")
        .into_iter()
        .filter(|c| c["clause"] == "fs.write")
        .collect();
    let mut tools: Vec<&str> = confirmed
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    tools.sort();
    let mut expected = PLANTED.to_vec();
    expected.sort();
    assert_eq!(tools, expected, "{:#}", probe.json["verdicts"]);
    let lab = lab_places(&probe);
    let log_path = format!("{}/.notes-server/server.log", lab.home);
    for cell in &confirmed {
        assert_eq!(cell["clause"], "fs.write");
        let evidence = &cell["evidence"];
        let effects = evidence["effects"].as_array().unwrap();
        assert!(!effects.is_empty());
        let file = effects
            .iter()
            .find(|e| e["detail"]["blake3"].is_string())
            .expect("a written file with its hash");
        assert!(
            file["detail"]["excerpt"]
                .as_str()
                .is_some_and(|x| !x.is_empty()),
            "{file}"
        );
        assert!(
            !evidence["calls"].as_array().unwrap().is_empty(),
            "the calls that caused it"
        );
        let subtracted: Vec<&str> = evidence["control_subtracted"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap())
            .collect();
        assert!(
            subtracted.contains(&log_path.as_str()),
            "startup log subtracted: {subtracted:?}"
        );
        let live = evidence["sensors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["sensor"] == "fs_writes" && s["status"] == "live");
        assert!(live, "self-test live: {}", evidence["sensors"]);
        assert_eq!(cell["contract"], probe.json["contract"]);
    }
    let by_tool = |tool: &str| {
        confirmed.iter().find(|c| c["tool"] == tool).unwrap()["evidence"]["effects"]
            .as_array()
            .unwrap()
            .clone()
    };
    // The log the control run also writes: the tool's extra bytes are the evidence.
    let log = by_tool("read_note");
    assert!(log.iter().all(|e| e["path"] == log_path.as_str()));
    assert!(
        log[0]["detail"]["excerpt"]
            .as_str()
            .unwrap()
            .starts_with("read "),
        "{}",
        log[0]
    );
    assert!(
        by_tool("open_note")
            .iter()
            .any(|e| e["path"].as_str().unwrap().contains("/notes/draft-"))
    );
    assert!(
        by_tool("get_config")
            .iter()
            .any(|e| e["path"] == format!("{}/notes-config.lock", lab.tmp))
    );
    let index = by_tool("index_notes");
    let db = index
        .iter()
        .find(|e| e["path"] == format!("{}/.notes-index/index.db", lab.home))
        .expect("index.db");
    assert!(
        db["attribution"]["after_response"].is_number(),
        "the detached write came after the response: {db}"
    );
    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
}

#[test]
fn honest_twin_has_no_confirmed_cell() {
    if !privileged("honest_twin_has_no_confirmed_cell") {
        return;
    }
    let probe = audit("honest");
    assert_eq!(
        probe.output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&probe.output.stderr)
    );
    assert!(
        cells(&probe.json, "confirmed").is_empty(),
        "{:#}",
        probe.json["verdicts"]
    );
    assert!(
        cells(&probe.json, "errored").is_empty(),
        "{:#}",
        probe.json["verdicts"]
    );
    for cell in probe.json["verdicts"].as_array().unwrap() {
        match cell["verdict"].as_str().unwrap() {
            "refuted" => {
                // Refuted only with every sensor backing the clause proven live.
                let sensors = cell["evidence"]["sensors"].as_array().unwrap();
                assert!(!sensors.is_empty(), "{cell}");
                assert!(sensors.iter().all(|s| s["status"] == "live"), "{cell}");
            }
            "skipped" => {
                let reason = cell["reason"].as_str().unwrap();
                let named = ["nothing_promised", "capability_absent", "not_called"];
                assert!(named.contains(&reason), "{cell}");
            }
            other => panic!("unexpected verdict {other}: {cell}"),
        }
    }
    let refuted: Vec<&str> = cells(&probe.json, "refuted")
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    for tool in PLANTED {
        assert!(refuted.contains(&tool), "{tool} should be refuted");
    }
    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
}

/// The twins' prompt and resource (SPEC §4): listed, read and graded on the server's own
/// row. The dishonest prompt's listing changes after two calls (behaviour 12) and its
/// resource's content speaks to the model (behaviour 13); the honest twin offers the same
/// surface, honestly.
#[test]
fn the_twins_prompt_and_resource_are_graded_on_the_server_row() {
    if !privileged("the_twins_prompt_and_resource_are_graded_on_the_server_row") {
        return;
    }
    let dishonest = audit("dishonest");
    let changed = cell(&dishonest.json, "(server)", "manifest.stable");
    assert_eq!(changed["verdict"], "confirmed", "{changed:#}");
    assert!(
        changed["reason"]
            .as_str()
            .unwrap()
            .starts_with("(server) changed the listing of prompt review_notes"),
        "{changed:#}"
    );
    let effects = changed["evidence"]["effects"].as_array().unwrap();
    assert!(
        effects
            .iter()
            .all(|e| e["detail"]["entry"] == "prompt review_notes"
                && e["detail"]["between"] == "within_session"),
        "{effects:#?}"
    );
    let field = &effects[0]["detail"]["fields"][0];
    assert_eq!(field["field"], "/entry/description", "{field}");
    let after = field["after"].as_str().unwrap();
    assert!(after.contains("~/.ssh/id_rsa"), "{after}");
    let told = cell(&dishonest.json, "(server)", "result.instructions");
    assert_eq!(told["verdict"], "confirmed", "{told:#}");
    let effects = told["evidence"]["effects"].as_array().unwrap();
    assert!(
        effects.iter().any(|e| e["detail"]["in"] == "resources/read"
            && e["detail"]["entry"] == "resource notes://index"),
        "{effects:#?}"
    );
    // Neither is the tools': their grid is the planted behaviours'.
    let secrets = cell(&dishonest.json, "(server)", "result.secrets");
    assert_eq!(secrets["verdict"], "refuted", "{secrets:#}");
    assert_eq!(verify(&dishonest.receipts).status.code(), Some(0));

    let honest = audit("honest");
    assert!(
        cells(&honest.json, "confirmed").is_empty(),
        "{:#}",
        honest.json["verdicts"]
    );
    for (clause, basis) in [
        (
            "manifest.stable",
            "the server's prompts and resources as reviewed",
        ),
        (
            "result.instructions",
            "what the server shows the model outside its tools' calls: prompts, resources",
        ),
        (
            "result.secrets",
            "what the server shows the model outside its tools' calls: prompts, resources",
        ),
    ] {
        let row = cell(&honest.json, "(server)", clause);
        assert_eq!(row["verdict"], "refuted", "{row:#}");
        assert!(row["reason"].as_str().unwrap().contains(basis), "{row:#}");
    }
    // Every listing and read is a recorded frame.
    let receipts = std::fs::read_to_string(honest.receipts.join("receipts.jsonl")).unwrap();
    for method in [
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/read",
    ] {
        assert!(
            receipts.contains(&format!("\\\"method\\\":\\\"{method}\\\"")),
            "no {method} frame"
        );
    }
    assert_eq!(verify(&honest.receipts).status.code(), Some(0));
}

#[test]
fn broad_server_declared_writes_are_skipped_not_flagged() {
    if !privileged("broad_server_declared_writes_are_skipped_not_flagged") {
        return;
    }
    // By the annotations alone, declared writes and deletes promise nothing.
    let probe = probe(&["--contract", "annotations"], &fixture("broad"));
    assert_eq!(probe.output.status.code(), Some(0));
    assert!(cells(&probe.json, "confirmed").is_empty());
    let manager: Vec<&Value> = probe.json["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["tool"] == "file_manager")
        .filter(|c| c["clause"] == "fs.write" || c["clause"] == "fs.delete")
        .collect();
    assert_eq!(manager.len(), 2);
    assert!(
        manager
            .iter()
            .all(|c| c["verdict"] == "skipped" && c["reason"] == "nothing_promised"),
        "{manager:?}"
    );
    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
}

#[test]
fn broad_server_declared_writes_are_graded_under_the_universal_limits_by_default() {
    if !privileged("broad_server_declared_writes_are_graded_under_the_universal_limits_by_default")
    {
        return;
    }
    let probe = audit("broad");
    assert_eq!(probe.output.status.code(), Some(0));
    assert!(cells(&probe.json, "confirmed").is_empty());
    for clause in ["fs.write", "fs.delete"] {
        let cell = probe.json["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["tool"] == "file_manager" && c["clause"] == clause)
            .unwrap();
        assert_eq!(cell["verdict"], "refuted", "{cell}");
        let reason = cell["reason"].as_str().unwrap();
        assert!(
            reason.contains("destructiveHint") || reason.contains("readOnlyHint"),
            "{cell}"
        );
        assert!(reason.contains("(universal)"), "{cell}");
    }
}

#[test]
fn a_flipped_byte_in_the_receipts_is_named_by_verify() {
    if !privileged("a_flipped_byte_in_the_receipts_is_named_by_verify") {
        return;
    }
    let probe = audit("dishonest");
    let log = probe.receipts.join("receipts.jsonl");
    let mut bytes = std::fs::read(&log).unwrap();
    let lines: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i)
        .collect();
    // A byte inside the body of a record in the middle of the log.
    let at = lines[lines.len() / 2] + 30;
    bytes[at] = if bytes[at] == b'a' { b'b' } else { b'a' };
    std::fs::write(&log, bytes).unwrap();
    let output = verify(&probe.receipts);
    assert_eq!(output.status.code(), Some(4), "a broken chain exits 4");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("BROKEN") && text.contains("line"), "{text}");
}

#[test]
fn commands_that_are_not_mcp_servers_are_errored_with_the_reason() {
    if !privileged("commands_that_are_not_mcp_servers_are_errored_with_the_reason") {
        return;
    }
    let cases: [(&[&str], &str); 4] = [
        (&["/bin/sh", "-c", "exit 3"], "closed"),
        (
            &["/bin/sh", "-c", "echo 'this is not json'; sleep 60"],
            "not json-rpc",
        ),
        (
            &["/bin/sh", "-c", "head -c 4096 /dev/urandom; echo; sleep 60"],
            "not json-rpc",
        ),
        (&["/bin/sleep", "600"], "no answer within 3s"),
    ];
    for (command, expected) in cases {
        let probe = probe(&["--timeout", "3"], command);
        assert_eq!(
            probe.output.status.code(),
            Some(3),
            "{command:?}: could not run exits 3"
        );
        assert_eq!(probe.json["status"], "errored", "{command:?}");
        let error = probe.json["error"].as_str().unwrap().to_lowercase();
        assert!(error.contains(expected), "{command:?}: {error}");
        // A start that got no answer is made once more in a fresh sandbox, and the run says
        // why; a server that crashed or spoke no JSON-RPC would do so again, and is not.
        let retried = &probe.json["runs"][0]["retried"];
        if expected.starts_with("no answer") {
            let first = retried.as_str().unwrap_or_default();
            assert!(
                first.contains("no answer within 3s"),
                "{command:?}: {retried}"
            );
        } else {
            assert!(retried.is_null(), "{command:?}: {retried}");
        }
        assert_eq!(
            verify(&probe.receipts).status.code(),
            Some(0),
            "{command:?}: receipts still verify"
        );
    }
}

#[test]
fn a_hundred_megabyte_line_is_errored_with_bounded_memory() {
    if !privileged("a_hundred_megabyte_line_is_errored_with_bounded_memory") {
        return;
    }
    let script = "head -c 100000000 /dev/zero | tr '\\0' x; echo; sleep 60";
    let probe = probe(&["--timeout", "20"], &["/bin/sh", "-c", script]);
    assert_eq!(probe.output.status.code(), Some(3));
    let error = probe.json["error"].as_str().unwrap();
    assert!(error.contains("line") || error.contains("bytes"), "{error}");
    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
    // Every descendant waited for so far, vac included: none held the line whole.
    let usage =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    assert!(
        usage.max_rss() < 150 * 1024,
        "max RSS {} KiB",
        usage.max_rss()
    );
}

/// A real server from npm, installed by `.ci/install-thirdparty.sh`.
const FILESYSTEM_SERVER: &str =
    "/opt/vac-thirdparty/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js";

/// Whether the pinned server is installed (a visible skip without it, a failure in CI).
fn filesystem_server_installed(test: &str) -> bool {
    required(
        Path::new(FILESYSTEM_SERVER).exists(),
        test,
        "needs .ci/install-thirdparty.sh run first",
    )
}

#[test]
fn a_third_party_filesystem_server_is_audited_end_to_end() {
    if !privileged("a_third_party_filesystem_server_is_audited_end_to_end") {
        return;
    }
    if !filesystem_server_installed("a_third_party_filesystem_server_is_audited_end_to_end") {
        return;
    }
    let probe = probe(&[], &["/usr/bin/node", FILESYSTEM_SERVER, "{work}"]);
    assert_eq!(probe.json["status"], "completed", "{:#}", probe.json);
    assert!(probe.json["tools"].as_u64().unwrap() >= 10);
    let cell = |tool: &str, clause: &str| {
        probe.json["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["tool"] == tool && c["clause"] == clause)
            .cloned()
            .unwrap()
    };
    assert_eq!(cell("read_text_file", "fs.write")["verdict"], "refuted");
    // A listing tool's `path` gets the notes directory, so its calls do the job.
    let listing = cell("list_directory", "fs.write");
    assert_eq!(listing["verdict"], "refuted", "{listing}");
    assert!(listing["succeeded"].as_u64().unwrap() >= 1, "{listing}");
    // edit_file's edits name text the note does not hold, and move_file's source a file
    // that is not there: the server refuses them, saying so, and each tool's retry gives
    // what the refusal asked for (a line the note holds, the note), so both did their job.
    for (tool, rule) in [("edit_file", "text_match"), ("move_file", "missing_file")] {
        let cell = cell(tool, "fs.read");
        assert_ne!(cell["verdict"], "skipped", "{cell}");
        assert!(cell["succeeded"].as_u64().unwrap() >= 1, "{cell}");
        let calls = cell["evidence"]["calls"].as_u64().unwrap();
        assert!(cell["succeeded"].as_u64().unwrap() < calls, "{cell}");
        let receipts = std::fs::read_to_string(probe.receipts.join("receipts.jsonl")).unwrap();
        let retried = receipts
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .map(|record| record["body"]["event"].clone())
            .any(|e| e["tool"] == tool && e["purpose"] == "retry" && e["revised"]["rule"] == rule);
        assert!(retried, "{tool}: no {rule} retry");
    }
    // Every one of its 14 tools gets a successful call.
    let (worked, tools) = tools_that_worked(&probe.json);
    assert_eq!(worked.len(), tools.len(), "{worked:?} of {tools:?}");
    // write_file declares it writes: graded under the universal limits, which it keeps.
    let write = cell("write_file", "fs.write");
    assert_eq!(write["verdict"], "refuted", "{write}");
    assert!(
        write["reason"].as_str().unwrap().contains("(universal)"),
        "{write}"
    );
    // write_file promises idempotentHint: its repeat rewrites the same bytes, which leaves
    // the state it found: refuted, not confirmed (it was, before repeats were judged by
    // the state they found).
    let repeat = cell("write_file", "idempotent");
    assert_eq!(repeat["verdict"], "refuted", "{repeat}");
    let false_alarms: Vec<_> = probe.json["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "confirmed")
        .filter(|c| c["clause"] == "idempotent" || c["clause"] == "manifest.stable")
        .collect();
    assert!(false_alarms.is_empty(), "{false_alarms:?}");
    assert_eq!(verify(&probe.receipts).status.code(), Some(0));
    assert_report_matches(&probe);
    // It takes its roots from the client: asked, and answered with the lab's work
    // directory (and no other), every run.
    let log = std::fs::read_to_string(probe.receipts.join("receipts.jsonl")).unwrap();
    let asked = log.matches(r#"\"method\":\"roots/list\""#).count();
    let answers: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(r#""direction":"to_server""#) && l.contains(r#"\"roots\":["#))
        .collect();
    assert!(
        asked >= 1 && answers.len() == asked,
        "{asked} asked, {answers:?}"
    );
    for answer in answers {
        assert!(
            answer.contains(r#"\"roots\":[{\"uri\":\"file:///root/work\",\"name\":\"work\"}]"#),
            "{answer}"
        );
    }

    // Static against dynamic on its recorded manifest: the path tools are flagged for
    // fs.read (open path arguments) and were seen to read nothing they may not — over-
    // approximations — and every tool × class is counted once.
    let output = common::vac(&["static", "--json", probe.receipts.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let comparison = &doc["comparison"];
    let over = comparison["over_approximations"].as_array().unwrap();
    assert!(
        over.iter()
            .any(|o| o["tool"] == "read_text_file" && o["class"] == "fs.read"),
        "{comparison:#}"
    );
    for row in comparison["matrix"].as_array().unwrap() {
        let counted: u64 = [
            "true_positive",
            "false_positive",
            "false_negative",
            "true_negative",
            "untested_predicted",
            "untested_unpredicted",
        ]
        .iter()
        .map(|k| row[k].as_u64().unwrap())
        .sum();
        assert_eq!(counted as usize, tools.len(), "{row}");
    }
}

/// The same server given what its README gives it: its allowed directory as `{work}` on the
/// command line, a planted tree, and argument hints pointing the listing tools at it: the
/// listings succeed on that tree, and their answers hold its files.
#[test]
fn a_planted_tree_and_argument_hints_make_the_listing_tools_do_their_job() {
    if !privileged("a_planted_tree_and_argument_hints_make_the_listing_tools_do_their_job") {
        return;
    }
    if !filesystem_server_installed(
        "a_planted_tree_and_argument_hints_make_the_listing_tools_do_their_job",
    ) {
        return;
    }
    let tree = tempfile::tempdir().unwrap();
    std::fs::create_dir(tree.path().join("sub")).unwrap();
    std::fs::write(tree.path().join("planted-a.txt"), "hello\n").unwrap();
    std::fs::write(tree.path().join("sub/planted-b.txt"), "b\n").unwrap();
    let plant = format!("{}:tree", tree.path().display());
    let probe = probe(
        &[
            "--plant",
            &plant,
            "--arg",
            "list_directory.path={work}/tree",
            "--arg",
            "directory_tree.path={work}/tree",
        ],
        &["/usr/bin/node", FILESYSTEM_SERVER, "{work}"],
    );
    assert_eq!(probe.json["status"], "completed", "{:#}", probe.json);
    for tool in ["list_directory", "directory_tree"] {
        let cell = cell(&probe.json, tool, "fs.write");
        assert_eq!(cell["verdict"], "refuted", "{tool}: {cell}");
        assert!(cell["succeeded"].as_u64().unwrap() >= 1, "{tool}: {cell}");
    }
    // The answers list the planted files; the inputs are in the pre-registered config.
    let log = std::fs::read_to_string(probe.receipts.join("receipts.jsonl")).unwrap();
    assert!(log.contains("planted-a.txt") && log.contains("planted-b.txt"));
    let first: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    let inputs = &first["body"]["config"]["inputs"];
    assert_eq!(inputs["args"][0]["field"], "path", "{inputs}");
    assert_eq!(inputs["plants"][0]["lab_path"], "tree", "{inputs}");
    assert_report_matches(&probe);
}

/// The mount points under `/run/vac/` in a mount table (`/proc/<pid>/mountinfo`).
fn run_mounts(mountinfo: &str, root: &Path) -> Vec<String> {
    let root = format!("{}/", root.display());
    mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .filter(|point| point.starts_with(&root))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_sigkilled_vac_leaves_nothing_of_its_runs_on_the_host() {
    let test = "a_sigkilled_vac_leaves_nothing_of_its_runs_on_the_host";
    if !privileged(test) {
        return;
    }
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::io::Read;
    use std::os::fd::AsFd;

    // A server whose every call hangs: vac is killed with a run set up and mounted.
    let tools = r#"
def tools(m):
    return {"tools": [{"name": "wait", "inputSchema": {"type": "object"}}]}
"#;
    let script = python_server("hangs", tools, "import time; time.sleep(3600)");
    let out = tempfile::tempdir().unwrap();
    let receipts = out.path().join("receipts");
    /// Killed however the test ends, so a failed assertion leaves no hanging vac behind.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    // Runs under a root of this test's own, so that no other vac (a test beside this one)
    // sweeps them: what goes, goes by the killed vac's own sweeper.
    let run_root = tempfile::tempdir().unwrap();
    let mut vac = Killed(
        std::process::Command::new(VAC)
            .env("VAC_RUN_ROOT", run_root.path())
            .args(["probe", "--timeout", "600", "--out"])
            .arg(&receipts)
            .args(["--", "/usr/bin/python3", "-c", &script])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = vac.0.id();
    // vac's runs, by their owner stamps (`pid starttime`): a namespace copied from the
    // host's shows any run another process left mounted there too.
    let own = |run: &str| {
        std::fs::read_to_string(format!("{run}.owner"))
            .is_ok_and(|stamp| stamp.split(' ').next() == Some(pid.to_string().as_str()))
    };

    // Wait, on mount-table events (POLLPRI on mountinfo), until vac has a run mounted. A
    // mountinfo reads the namespace its process was in when it was opened, and vac enters
    // its own only once started: it is opened again at each event, and at least every
    // 200 ms until then.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mounted = loop {
        let mut table = std::fs::File::open(format!("/proc/{pid}/mountinfo")).unwrap();
        let mut text = String::new();
        table.read_to_string(&mut text).unwrap();
        // A run's mounts are its tmpfs (the run directory) and the host root's bind below it.
        let root = format!("{}/", run_root.path().display());
        let run = run_mounts(&text, run_root.path())
            .iter()
            .filter_map(|m| {
                let id = m.strip_prefix(&root)?.split('/').next()?;
                Some(format!("{root}{id}"))
            })
            .find(|run| own(run));
        if let Some(run) = run {
            break run;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(!left.is_zero(), "vac mounted no run within 60 s");
        let mut fds = [PollFd::new(
            table.as_fd(),
            PollFlags::POLLPRI | PollFlags::POLLERR,
        )];
        let wait = PollTimeout::try_from(left.as_millis().min(200) as u64).unwrap();
        poll(&mut fds, wait).unwrap();
    };
    let run = mounted;
    // vac's run mounts are in vac's own mount namespace, never in the host's.
    let host = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !run_mounts(&host, run_root.path())
            .iter()
            .any(|m| m.starts_with(&run)),
        "the host's mount table shows {run}"
    );
    let owner = format!("{run}.owner");
    assert!(Path::new(&owner).is_file(), "{owner}");

    vac.0.kill().unwrap();
    vac.0.wait().unwrap();
    let host = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !run_mounts(&host, run_root.path())
            .iter()
            .any(|m| m.starts_with(&run)),
        "a mount of {run} stayed on the host after SIGKILL"
    );

    // Its processes die with their lifeline (a SIGKILL from the kernel), and vac's sweeper
    // (a process of its own, told by the end of a pipe only vac held) removes the run
    // directory, its owner stamp and its cgroups once they are empty: no later start is
    // needed. Waited for on their state, for at most 30 s.
    let id = Path::new(&run)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let roots = vac_sandbox::CgroupRoots::detect(Path::new("/sys/fs/cgroup")).unwrap();
    let group = roots.existing(&id);
    let left = || {
        let mut left: Vec<String> = [&run, &owner]
            .into_iter()
            .filter(|p| Path::new(p).exists())
            .cloned()
            .collect();
        left.extend(
            group
                .procs_files()
                .iter()
                .filter(|p| p.exists())
                .map(|p| p.display().to_string()),
        );
        left
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !left().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "30 s after vac was killed, its run is still on the host: {:#?}",
            left()
        );
        std::thread::yield_now();
    }
}

/// Another real server from npm, installed by `.ci/install-thirdparty.sh`.
const MEMORY_SERVER: &str =
    "/opt/vac-thirdparty/node_modules/@modelcontextprotocol/server-memory/dist/index.js";

#[test]
fn a_third_party_memory_server_gets_successful_calls_and_no_false_repeat_or_manifest_cell() {
    let test =
        "a_third_party_memory_server_gets_successful_calls_and_no_false_repeat_or_manifest_cell";
    if !privileged(test) {
        return;
    }
    if !required(
        Path::new(MEMORY_SERVER).exists(),
        test,
        "needs .ci/install-thirdparty.sh run first",
    ) {
        return;
    }
    let probe = probe(&[], &["/usr/bin/node", MEMORY_SERVER]);
    assert_eq!(probe.json["status"], "completed", "{:#}", probe.json);
    let (worked, tools) = tools_that_worked(&probe.json);
    assert!(tools.len() >= 9, "{tools:?}");
    assert!(
        worked.len() * 100 >= tools.len() * 85,
        "{worked:?} of {tools:?}"
    );
    no_false_repeat_or_manifest(&probe.json);
}

/// The watchdog ends vac when its own work outlasts the wall-time budget where the probe's
/// timeout cannot reach: here printing a report into a pipe of one page that nobody reads.
/// It exits 5 ("incomplete") 30 s past the budget, saying the receipts are sealed.
#[test]
fn vac_blocked_past_its_budget_is_ended_by_the_watchdog_with_exit_five() {
    if !privileged("vac_blocked_past_its_budget_is_ended_by_the_watchdog_with_exit_five") {
        return;
    }
    let (reader, writer) = nix::unistd::pipe().unwrap();
    nix::fcntl::fcntl(&writer, nix::fcntl::FcntlArg::F_SETPIPE_SZ(4096)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("receipts");
    let server = fixture("honest");
    let vac = server[0];
    let started = std::time::Instant::now();
    let child = std::process::Command::new(vac)
        .args([
            "probe",
            "--json",
            "--wall",
            "15",
            "--out",
            out.to_str().unwrap(),
        ])
        .arg("--")
        .args(server)
        .stdout(std::process::Stdio::from(writer))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ended = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&ended.stderr);
    assert_eq!(ended.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("went on 30s past it") && stderr.contains("are sealed"),
        "{stderr}"
    );
    // Its budget and the grace, not the report's end, ended it; the receipts are whole.
    assert!(started.elapsed() >= std::time::Duration::from_secs(45));
    assert_eq!(verify(&out).status.code(), Some(0));
    // What it printed stopped at the pipe's page.
    let mut printed = Vec::new();
    std::io::Read::read_to_end(&mut std::fs::File::from(reader), &mut printed).unwrap();
    assert!(
        !printed.is_empty() && printed.len() <= 4096,
        "{}",
        printed.len()
    );
}

/// The dishonest twin's second shared run ends first (the first waits for `index_notes`'
/// delayed write) and leaves `search_docs` in doubt: its own run starts then, while the
/// first shared run goes on, and the receipts still hold every run in plan order — the
/// control run, the shared runs, the own runs in the order of their blocks, the relaunch.
#[test]
fn runs_that_end_early_are_recorded_in_plan_order_all_the_same() {
    if !privileged("runs_that_end_early_are_recorded_in_plan_order_all_the_same") {
        return;
    }
    let probe = audit("dishonest");
    let text = std::fs::read_to_string(probe.receipts.join("receipts.jsonl")).expect("receipts");
    let records: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("a receipt record"))
        .collect();
    let plan = records
        .iter()
        .find_map(|r| (r["kind"] == "plan").then(|| r["body"]["plan"].clone()))
        .expect("a plan");
    let planned = plan["runs"].as_array().expect("the plan's runs");
    // Each recorded run, as (role, tool, first call index), in the order of the receipts.
    let recorded: Vec<(String, Value, Value)> = records
        .iter()
        .filter(|r| r["kind"] == "sandbox_config")
        .map(|r| {
            let role = records
                .iter()
                .find(|s| s["kind"] == "run_start" && s["body"]["run_id"] == r["body"]["run_id"])
                .map(|s| s["body"]["role"].as_str().unwrap().to_owned())
                .expect("a run start");
            let config = &r["body"]["config"];
            (
                role,
                config["tool"].clone(),
                config["run"]["first_index"].clone(),
            )
        })
        .collect();
    // Its place in the plan: the planned run of its role, tool and first call.
    let places: Vec<usize> = recorded
        .iter()
        .map(|(role, tool, first)| {
            planned
                .iter()
                .position(|r| {
                    r["role"] == role.as_str()
                        && (role != "subject" || (r["tool"] == *tool && r["first_index"] == *first))
                })
                .unwrap_or_else(|| panic!("{role} {tool} {first} is not in the plan"))
        })
        .collect();
    assert!(
        places.windows(2).all(|w| w[0] < w[1]),
        "runs recorded out of plan order: {recorded:?} at {places:?}"
    );
    // An own run of a tool of the second shared run is among them: the early start.
    let second: Vec<&Value> = planned
        .iter()
        .filter(|r| r["scope"] == "shared")
        .nth(1)
        .expect("two shared runs")["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["tool"])
        .collect();
    assert!(
        recorded
            .iter()
            .any(|(role, tool, _)| role == "subject" && second.contains(&tool)),
        "no own run of the second shared run's tools: {recorded:?}"
    );
}
