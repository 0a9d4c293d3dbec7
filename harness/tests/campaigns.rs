//! Campaigns end to end through the real binary: repetitions and their stability, the same
//! grid from a rerun with the same seed, resume after `kill -9` (on record boundaries and
//! with a torn last record), shards merged back into the unsharded grid, and refusals by
//! name.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// Writes a campaign file into `dir`; `targets` are (id, fixture mode).
fn campaign_file(
    dir: &Path,
    name: &str,
    repetitions: u32,
    jobs: u32,
    targets: &[(&str, &str)],
) -> PathBuf {
    let mut text = format!(
        "name = \"{name}\"\nseed = 7\nrepetitions = {repetitions}\njobs = {jobs}\nout = \"runs/{name}\"\n"
    );
    for (id, mode) in targets {
        text.push_str(&format!(
            "\n[[target]]\nid = \"{id}\"\ncommand = [\"vac\", \"fixture\", \"--mode\", \"{mode}\"]\n"
        ));
    }
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn vac_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(common::VAC)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Writes the campaign file `text` as `NAME.toml` in `dir` and runs it (`--quiet`).
fn run_file(dir: &Path, name: &str, text: &str) -> std::process::Output {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    vac_in(dir, &["campaign", "run", file.to_str().unwrap(), "--quiet"])
}

/// The campaign's grid, server × tool × clause → (headline verdict, stable, repetitions),
/// from the map `vac report --out` writes.
fn grid(dir: &Path) -> BTreeMap<(String, String, String), (String, bool, usize)> {
    let out = dir.with_extension("map");
    let _ = std::fs::remove_dir_all(&out);
    let output = Command::new(common::VAC)
        .args([
            "report",
            dir.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "vac report {}: {output:?}",
        dir.display()
    );
    let map: Value = serde_json::from_slice(&std::fs::read(out.join("map.json")).unwrap()).unwrap();
    let mut grid = BTreeMap::new();
    for server in map["servers"].as_array().unwrap() {
        for tool in server["tools"].as_array().unwrap() {
            for cell in tool["cells"].as_array().unwrap() {
                grid.insert(
                    (
                        server["id"].as_str().unwrap().to_owned(),
                        tool["name"].as_str().unwrap().to_owned(),
                        cell["clause"].as_str().unwrap().to_owned(),
                    ),
                    (
                        cell["verdict"].as_str().unwrap().to_owned(),
                        cell["stable"].as_bool().unwrap(),
                        cell["records"].as_array().unwrap().len(),
                    ),
                );
            }
        }
    }
    grid
}

/// The member records of a campaign log, as JSON.
fn members(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("receipts.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["kind"] == "member")
        .map(|r| r["body"].clone())
        .collect()
}

#[test]
fn a_campaign_of_the_fixtures_repeats_verifies_and_reruns_to_the_same_grid() {
    let test = "a_campaign_of_the_fixtures_repeats_verifies_and_reruns_to_the_same_grid";
    if !common::privileged(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let fixtures = [
        ("honest", "honest"),
        ("dishonest", "dishonest"),
        ("broad", "broad"),
    ];
    let file = campaign_file(tmp.path(), "fixtures", 3, 2, &fixtures);
    let run = vac_in(
        tmp.path(),
        &["campaign", "run", file.to_str().unwrap(), "--quiet"],
    );
    assert_eq!(
        run.status.code(),
        Some(1),
        "the dishonest twin's violations: {run:?}"
    );
    let dir = tmp.path().join("runs/fixtures");
    let verify = common::verify(&dir);
    assert!(verify.status.success(), "{verify:?}");
    assert!(String::from_utf8_lossy(&verify.stdout).contains("9 probes verify"));

    // Members in plan order: target id, then repetition.
    let order: Vec<(String, u64)> = members(&dir)
        .iter()
        .map(|m| {
            (
                m["target"].as_str().unwrap().to_owned(),
                m["repetition"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
    assert_eq!(order.len(), 9);
    // The probes are checked on every core at once and reported in the campaign's order,
    // with what the check covered and where its time went.
    let stdout = String::from_utf8_lossy(&verify.stdout);
    let reported: Vec<usize> = members(&dir)
        .iter()
        .map(|m| {
            let line = format!("{}: ", dir.join(m["dir"].as_str().unwrap()).display());
            stdout.find(&line).expect(&line)
        })
        .collect();
    assert!(reported.is_sorted(), "{stdout}");
    assert!(
        stdout.contains("MB of probe receipts (log and blobs, unpacked)")
            && stdout.contains("the chain check")
            && stdout.contains("the re-grading"),
        "{stdout}"
    );

    let first = grid(&dir);
    // Every cell holds its three repetitions and says whether they agree.
    assert!(first.values().all(|(_, _, n)| *n == 3), "{first:?}");
    let confirmed: Vec<_> = first
        .iter()
        .filter(|(_, (v, _, _))| v == "confirmed")
        .map(|(k, _)| k)
        .collect();
    assert!(
        confirmed.iter().all(|(server, _, _)| server == "dishonest"),
        "{confirmed:?}"
    );
    // Fourteen cells of the eleven planted tools, and the prompt and the resource on the
    // server row.
    assert_eq!(confirmed.len(), 16, "{confirmed:?}");
    // Servers are named by their target ids.
    assert!(first.keys().any(|(s, _, _)| s == "broad"));

    // The campaign file is a `vac static` input: once run, the comparison over its receipts.
    let statics = vac_in(tmp.path(), &["static", "--json", file.to_str().unwrap()]);
    assert!(statics.status.success(), "{statics:?}");
    let doc: Value = serde_json::from_slice(&statics.stdout).unwrap();
    let gaps = doc["comparison"]["declaration_gaps"].as_array().unwrap();
    assert_eq!(gaps.len(), 12, "{gaps:#?}");
    assert!(gaps.iter().all(|g| g["server"] == "dishonest"));

    // The same file again (another out) gives the same grid.
    let again = campaign_file(tmp.path(), "fixtures-again", 3, 2, &fixtures);
    let rerun = vac_in(
        tmp.path(),
        &["campaign", "run", again.to_str().unwrap(), "--quiet"],
    );
    assert_eq!(rerun.status.code(), Some(1), "{rerun:?}");
    assert_eq!(grid(&tmp.path().join("runs/fixtures-again")), first);

    // Running into a finished campaign's directory is refused, by name.
    let twice = vac_in(tmp.path(), &["campaign", "run", file.to_str().unwrap()]);
    assert_eq!(twice.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&twice.stderr).contains("vac campaign resume"));
}

#[test]
fn a_killed_campaign_resumes_without_redoing_or_losing_a_probe() {
    let test = "a_killed_campaign_resumes_without_redoing_or_losing_a_probe";
    if !common::privileged(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let targets = [("broad-a", "broad"), ("broad-b", "broad")];
    let reference_file = campaign_file(tmp.path(), "reference", 2, 1, &targets);
    // Before it runs, `vac static` reads each target's tools/list from a control run.
    let before = vac_in(
        tmp.path(),
        &["static", "--json", reference_file.to_str().unwrap()],
    );
    assert!(before.status.success(), "{before:?}");
    let doc: Value = serde_json::from_slice(&before.stdout).unwrap();
    assert!(doc.get("comparison").is_none());
    let servers: std::collections::BTreeSet<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["server"].as_str().unwrap())
        .collect();
    assert_eq!(servers, ["broad-a", "broad-b"].into_iter().collect());
    let reference = vac_in(
        tmp.path(),
        &[
            "campaign",
            "run",
            reference_file.to_str().unwrap(),
            "--quiet",
        ],
    );
    assert!(reference.status.success(), "{reference:?}");
    let expected = grid(&tmp.path().join("runs/reference"));

    // Kill after the k-th finished probe (the next one is then running), and on two of
    // them also tear the log's last record in half, as a crash mid-write would.
    for (round, (after, tear)) in [(1, false), (2, false), (3, false), (1, true), (2, true)]
        .into_iter()
        .enumerate()
    {
        let name = format!("killed-{round}");
        let file = campaign_file(tmp.path(), &name, 2, 1, &targets);
        let dir = tmp.path().join("runs").join(&name);
        let mut child = Command::new(common::VAC)
            .args(["campaign", "run", file.to_str().unwrap()])
            .current_dir(tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut finished = 0;
        while finished < after {
            let line = lines.next().expect("progress line").unwrap();
            if line.starts_with('[') {
                finished += 1;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let before: Vec<Value> = members(&dir);
        assert_eq!(
            before.len(),
            after,
            "round {round}: one member record per finished probe"
        );
        if tear {
            let log = dir.join("receipts.jsonl");
            let text = std::fs::read(&log).unwrap();
            let last_start = text[..text.len() - 1]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let half = last_start + (text.len() - last_start) / 2;
            std::fs::write(&log, &text[..half]).unwrap();
        }
        let kept: Vec<Value> = members(&dir);
        let resume = vac_in(
            tmp.path(),
            &["campaign", "resume", dir.to_str().unwrap(), "--quiet"],
        );
        assert!(resume.status.success(), "round {round}: {resume:?}");
        let stderr = String::from_utf8_lossy(&resume.stderr);
        if tear {
            assert!(
                stderr.contains("torn tail"),
                "round {round}: the cut is named: {stderr}"
            );
        }
        let after_resume = members(&dir);
        assert_eq!(after_resume.len(), 4, "round {round}: {after_resume:?}");
        // What was done before the kill is kept as it was, not run again.
        for member in &kept {
            let same = after_resume
                .iter()
                .find(|m| {
                    m["target"] == member["target"] && m["repetition"] == member["repetition"]
                })
                .unwrap();
            assert_eq!(
                same["head"], member["head"],
                "round {round}: {member} was redone"
            );
        }
        let verify = common::verify(&dir);
        assert!(verify.status.success(), "round {round}: {verify:?}");
        assert_eq!(grid(&dir), expected, "round {round}");
    }
}

#[test]
fn shards_merge_into_the_unsharded_grid_and_bad_sets_are_refused_by_name() {
    let test = "shards_merge_into_the_unsharded_grid_and_bad_sets_are_refused_by_name";
    if !common::privileged(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let targets = [
        ("alpha", "broad"),
        ("bravo", "broad"),
        ("charlie", "broad"),
        ("delta", "broad"),
        ("echo", "broad"),
    ];
    let file = campaign_file(tmp.path(), "sharded", 1, 1, &targets);
    let whole = vac_in(
        tmp.path(),
        &["campaign", "run", file.to_str().unwrap(), "--quiet"],
    );
    assert!(whole.status.success(), "{whole:?}");
    let expected = grid(&tmp.path().join("runs/sharded"));
    std::fs::rename(
        tmp.path().join("runs/sharded"),
        tmp.path().join("unsharded"),
    )
    .unwrap();

    // Shard 0 by flag, shard 1 as a Kubernetes Indexed Job, shard 2 as a Slurm array task.
    let flag = vac_in(
        tmp.path(),
        &[
            "campaign",
            "run",
            file.to_str().unwrap(),
            "--quiet",
            "--shard",
            "0/3",
        ],
    );
    assert!(flag.status.success(), "{flag:?}");
    let k8s = Command::new(common::VAC)
        .args(["campaign", "run", file.to_str().unwrap(), "--quiet"])
        .env("JOB_COMPLETION_INDEX", "1")
        .env("VAC_SHARDS", "3")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(k8s.status.success(), "{k8s:?}");
    let slurm = Command::new(common::VAC)
        .args(["campaign", "run", file.to_str().unwrap(), "--quiet"])
        .env("SLURM_ARRAY_TASK_ID", "7")
        .env("SLURM_ARRAY_TASK_MIN", "5")
        .env("SLURM_ARRAY_TASK_STEP", "1")
        .env("SLURM_ARRAY_TASK_COUNT", "3")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(slurm.status.success(), "{slurm:?}");
    let shard = |k: u32| tmp.path().join(format!("runs/sharded/shard-{k}-of-3"));
    let total: usize = (0..3).map(|k| members(&shard(k)).len()).sum();
    assert_eq!(total, 5, "every target in exactly one shard");

    let merged = tmp.path().join("merged");
    let shards: Vec<String> = (0..3).map(|k| shard(k).display().to_string()).collect();
    let mut args = vec!["campaign", "merge", merged.to_str().unwrap()];
    args.extend(shards.iter().map(String::as_str));
    let merge = vac_in(tmp.path(), &args);
    assert!(merge.status.success(), "{merge:?}");
    let verify = common::verify(&merged);
    assert!(verify.status.success(), "{verify:?}");
    assert_eq!(grid(&merged), expected);
    // The merged chain lists each shard by its head.
    let listed = members(&merged);
    assert_eq!(listed.iter().filter(|m| m["role"] == "shard").count(), 3);

    // A missing shard, a shard given twice, and a shard of another campaign are refused.
    let refused = |args: &[&str], needle: &str| {
        let out = tmp.path().join("refused");
        let mut all = vec!["campaign", "merge", out.to_str().unwrap()];
        all.extend_from_slice(args);
        let output = vac_in(tmp.path(), &all);
        assert_eq!(output.status.code(), Some(2), "{all:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{all:?}: {stderr}");
        assert!(!out.join("receipts.jsonl").exists());
    };
    refused(&[&shards[0], &shards[1]], "shard 2/3 of 3 missing");
    refused(&[&shards[0], &shards[1], &shards[1]], "given twice");
    let other = campaign_file(tmp.path(), "other", 1, 1, &targets[..1]);
    let foreign = vac_in(
        tmp.path(),
        &[
            "campaign",
            "run",
            other.to_str().unwrap(),
            "--quiet",
            "--shard",
            "2/3",
        ],
    );
    assert!(foreign.status.success(), "{foreign:?}");
    let foreign_dir = tmp.path().join("runs/other/shard-2-of-3");
    refused(
        &[&shards[0], &shards[1], foreign_dir.to_str().unwrap()],
        "a shard of another campaign",
    );
}

#[test]
fn the_calls_per_server_budget_skips_the_tools_past_it() {
    let test = "the_calls_per_server_budget_skips_the_tools_past_it";
    if !common::privileged(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let run = run_file(
        tmp.path(),
        "budget",
        "name = \"budget\"\n\n[budgets]\ncalls_per_server = 3\n\n[[target]]\nid = \"broad\"\ncommand = [\"vac\", \"fixture\", \"--mode\", \"broad\"]\n",
    );
    // Tools past the budget were not called: the campaign is incomplete, not clean.
    assert_eq!(run.status.code(), Some(5), "{run:?}");
    let report = common::vac(&[
        "report",
        "--json",
        tmp.path().join("runs/budget/broad/rep-1").to_str().unwrap(),
    ]);
    let doc: Value = serde_json::from_slice(&report.stdout).unwrap();
    let list = doc["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "list_files")
        .unwrap();
    assert_eq!(
        list["reason"], "budget",
        "list_files plans more than 3 calls: {list}"
    );
}

#[test]
fn a_probe_past_its_wall_time_budget_is_stopped_and_recorded_timed_out() {
    let test = "a_probe_past_its_wall_time_budget_is_stopped_and_recorded_timed_out";
    if !common::privileged(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("slow.toml");
    // A server that never answers initialize, a 30 s answer timeout and a 2 s budget.
    std::fs::write(
        &file,
        "name = \"slow\"\n\n[budgets]\ntimeout_seconds = 30\nwall_seconds_per_server = 2\n\n[[target]]\nid = \"mute\"\ncommand = [\"/bin/sleep\", \"61.25\"]\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let run = vac_in(
        tmp.path(),
        &["campaign", "run", file.to_str().unwrap(), "--quiet"],
    );
    assert_eq!(
        run.status.code(),
        Some(5),
        "a timed-out probe is incomplete: {run:?}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "the budget, not the answer timeout, ended it"
    );
    let dir = tmp.path().join("runs/slow");
    let listed = members(&dir);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["status"], "timed_out", "{}", listed[0]);
    assert_eq!(listed[0]["head"], Value::Null);
    let verify = common::verify(&dir);
    assert!(
        verify.status.success(),
        "the campaign chain still verifies: {verify:?}"
    );
    // The sandboxed server went with its probe: no process runs `sleep 61.25`.
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("sleep 61.25"))
        .collect();
    assert!(left.is_empty(), "the server outlived its budget: {left:?}");
}

#[test]
fn a_campaign_with_a_target_that_could_not_be_audited_reports_as_it_ran() {
    let test = "a_campaign_with_a_target_that_could_not_be_audited_reports_as_it_ran";
    if !common::privileged(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The honest twin, clean on its own, and a program that is not an MCP server.
    let run = run_file(
        tmp.path(),
        "mixed",
        "name = \"mixed\"\n\n[[target]]\nid = \"honest\"\ncommand = [\"vac\", \"fixture\", \"--mode\", \"honest\"]\n\n[[target]]\nid = \"not-mcp\"\ncommand = [\"/bin/sh\", \"-c\", \"echo starting >&2; echo \'Usage: not-mcp --config FILE\' >&2\"]\n",
    );
    assert_eq!(
        run.status.code(),
        Some(5),
        "a target that could not be audited leaves the campaign incomplete: {run:?}"
    );
    let dir = tmp.path().join("runs/mixed");
    let listed = members(&dir);
    let status = |id: &str| {
        listed
            .iter()
            .find(|m| m["target"] == id)
            .map(|m| m["status"].clone())
    };
    assert_eq!(status("honest"), Some(Value::from("completed")));
    assert_eq!(status("not-mcp"), Some(Value::from("failed")));
    let report = vac_in(tmp.path(), &["report", dir.to_str().unwrap()]);
    assert_eq!(
        report.status.code(),
        run.status.code(),
        "vac report exits as the campaign did: {report:?}"
    );
    // `--json` on a campaign prints the map's JSON document, not the text map.
    let json = vac_in(tmp.path(), &["report", "--json", dir.to_str().unwrap()]);
    let document: Value = serde_json::from_slice(&json.stdout)
        .unwrap_or_else(|e| panic!("vac report --json is not JSON ({e}): {json:?}"));
    assert_eq!(document["campaign"], "mixed", "{document}");
    assert!(document["servers"].is_array(), "{document}");
    assert_eq!(json.status.code(), run.status.code());
    // Every target is accounted for: the one that could not be audited is a row of every
    // rendering of the map, with how it ended and why.
    let servers = document["servers"].as_array().unwrap();
    let ids: Vec<&str> = servers.iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(ids, ["honest", "not-mcp"], "{document}");
    let failed = &servers[1];
    assert_eq!(failed["tools"], serde_json::json!([]), "{failed}");
    assert_eq!(failed["not_audited"][0]["status"], "failed", "{failed}");
    assert_eq!(failed["not_audited"][0]["exit"], 3, "{failed}");
    // Why it could not start, in its own words: the last lines it wrote to stderr.
    assert!(
        failed["not_audited"][0]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("its stderr ended: \"starting | Usage: not-mcp --config FILE\""),
        "{failed}"
    );
    assert_eq!(document["summary"]["not_audited"], 1, "{document}");
    assert_eq!(servers[0]["summary"]["not_audited"], 0, "{document}");
    let out = tmp.path().join("map");
    vac_in(
        tmp.path(),
        &[
            "report",
            dir.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    for file in ["map.md", "map.csv", "map.html", "map.sarif"] {
        let text = std::fs::read_to_string(out.join(file)).unwrap();
        assert!(
            text.contains("not-mcp")
                && text.contains("failed (exit 3)")
                && text.contains("Usage: not-mcp --config FILE"),
            "{file} does not account for the target that failed:\n{text}"
        );
    }
    let terminal = String::from_utf8_lossy(&report.stdout);
    assert!(
        terminal.contains("not-mcp")
            && terminal.contains("not audited")
            && terminal.contains("Usage: not-mcp --config FILE"),
        "{terminal}"
    );
}

#[test]
fn resume_while_the_run_still_writes_is_refused_and_the_chain_still_verifies() {
    let test = "resume_while_the_run_still_writes_is_refused_and_the_chain_still_verifies";
    if !common::privileged(test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("busy.toml");
    // The honest twin first (its member record is written while the mute server's probe
    // still runs, for its 3 s budget), so the run is writing the log when resume comes.
    std::fs::write(
        &file,
        "name = \"busy\"\njobs = 1\n\n[budgets]\ntimeout_seconds = 30\nwall_seconds_per_server = 3\n\n[[target]]\nid = \"a-honest\"\ncommand = [\"vac\", \"fixture\", \"--mode\", \"honest\"]\n\n[[target]]\nid = \"b-mute\"\ncommand = [\"/bin/sleep\", \"62.75\"]\n",
    )
    .unwrap();
    let mut run = Command::new(common::VAC)
        .args(["campaign", "run", file.to_str().unwrap(), "--quiet"])
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dir = tmp.path().join("runs/busy");
    // The first member record is written when the honest twin's probe is sealed.
    let log = dir.join("receipts.jsonl");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("\"kind\":\"member\"")) {
        assert!(
            std::time::Instant::now() < deadline,
            "no member record in 60 s"
        );
        assert!(
            run.try_wait().unwrap().is_none(),
            "the run ended before resume was tried"
        );
        std::thread::yield_now();
    }
    let resume = vac_in(
        tmp.path(),
        &["campaign", "resume", dir.to_str().unwrap(), "--quiet"],
    );
    let said = String::from_utf8_lossy(&resume.stderr);
    assert_eq!(
        resume.status.code(),
        Some(2),
        "resume during run is refused: {resume:?}"
    );
    assert!(
        said.contains("is being written by") && said.contains(&format!("pid {}", run.id())),
        "the refusal names the run's process: {said}"
    );
    let ran = run.wait().unwrap();
    assert_eq!(
        ran.code(),
        Some(5),
        "the mute target leaves the run incomplete"
    );
    let verify = common::verify(&dir);
    assert!(
        verify.status.success(),
        "the chain still verifies: {verify:?}"
    );
    assert_eq!(members(&dir).len(), 2);
}

/// A slow target holds back the member records after it (they are written in plan order),
/// never the other slots: with two jobs, the fast targets planned after it run and end
/// while it is still running. (`buffered` refilled a slot only once every earlier probe had
/// ended, so one slow server left a campaign one probe at a time.)
#[test]
fn a_slow_target_holds_back_records_not_the_other_slots() {
    if !common::privileged("a_slow_target_holds_back_records_not_the_other_slots") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // Every start of it waits three seconds before it answers initialize.
    let slow = tmp.path().join("slow.py");
    let server = common::python_server(
        "slow",
        "import time\ndef tools(m):\n    return {\"tools\": [{\"name\": \"nap\", \"inputSchema\": {\"type\": \"object\"}}]}\ntime.sleep(3)",
        "pass",
    );
    std::fs::write(&slow, server).unwrap();
    let text = format!(
        "name = \"slots\"\nseed = 7\njobs = 2\nout = \"runs/slots\"\n\n\
         [[target]]\nid = \"a-slow\"\ncommand = [\"/usr/bin/python3\", \"{}\"]\n\n\
         [[target]]\nid = \"b-fast\"\ncommand = [\"vac\", \"fixture\", \"--mode\", \"honest\"]\n\n\
         [[target]]\nid = \"c-fast\"\ncommand = [\"vac\", \"fixture\", \"--mode\", \"honest\"]\n",
        slow.display()
    );
    let output = run_file(tmp.path(), "slots", &text);
    assert!(
        output.status.code().is_some_and(|c| c == 0 || c == 1),
        "{output:?}"
    );
    let dir = tmp.path().join("runs/slots");
    let targets: Vec<String> = members(&dir)
        .iter()
        .map(|m| m["target"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        targets,
        ["a-slow", "b-fast", "c-fast"],
        "records in plan order"
    );
    // When each probe was sealed: its log's last record.
    let sealed = |id: &str| {
        let log = vac_receipts::ReceiptLog::open(dir.join(id).join("rep-1")).unwrap();
        log.entries().unwrap().last().unwrap().unwrap().record.ts
    };
    assert!(
        sealed("c-fast") < sealed("a-slow"),
        "the third target waited for the slow first one to end"
    );
}
