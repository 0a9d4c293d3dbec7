//! Wall and CPU time of whole probes (issue "Fast probes"): the dishonest twin, `vac demo`,
//! and a probe of each pinned third-party server of the published campaign
//! (`results/thirdparty/campaign.toml`), each per tool with its subject runs one at a time
//! (`--jobs 1`) and at the default concurrency, and adaptive (the default isolation) at
//! the default concurrency; then each stdio server's start to its
//! answer to `initialize`, sandboxed (from the control run's receipts) against bare (the
//! same command in a network namespace of its own, `unshare -n`; the fixtures are not
//! started bare, since the dishonest twin never runs on the host).
//!
//! `cargo bench -p vac-harness --bench probes` (root; the third-party servers installed by
//! `.ci/install-thirdparty.sh`, else they are listed as not installed). `VAC_BENCH_REPS`
//! sets the repetitions (default 5): the figures are medians. CPU is that of vac and every
//! process it waited for (the sandboxes included), from `getrusage(RUSAGE_CHILDREN)`.
//! `VAC_BENCH_ONLY=<text>` measures only the probes whose name holds the text (`demo` for
//! `vac demo`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::resource::{UsageWho, getrusage};
use vac_harness::probe::default_jobs;

const VAC: &str = env!("CARGO_BIN_EXE_vac");
const CAMPAIGN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../results/thirdparty/campaign.toml"
);

struct Target {
    id: String,
    command: Vec<String>,
    http: Option<String>,
}

fn main() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIPPED probes: needs root");
        return;
    }
    let reps: usize = std::env::var("VAC_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let jobs = default_jobs();
    println!("{reps} repetitions, medians; default jobs on this machine: {jobs}");
    println!(
        "{:<22} {:>24} {:>24} {:>24}",
        "probe",
        "per-tool jobs=1 wall/cpu",
        format!("per-tool jobs={jobs}"),
        format!("adaptive jobs={jobs}")
    );
    let only = std::env::var("VAC_BENCH_ONLY").unwrap_or_default();
    let mut starts = Vec::new();
    for target in targets().into_iter().filter(|t| t.id.contains(&only)) {
        if let Some(missing) = target
            .command
            .iter()
            .find(|a| a.starts_with('/') && !Path::new(a).exists())
        {
            println!("{:<22} not installed ({missing})", target.id);
            continue;
        }
        let serial = measure(reps, || probe(&target, 1, "per-tool", scratch.path()));
        let parallel = measure(reps, || probe(&target, jobs, "per-tool", scratch.path()));
        let adaptive = measure(reps, || probe(&target, jobs, "adaptive", scratch.path()));
        row(&target.id, [Some(serial), Some(parallel), Some(adaptive)]);
        if target.http.is_none() && !target.command.iter().any(|a| a.contains(VAC)) {
            starts.push(target);
        }
    }
    let demo = || {
        let out = scratch.path().join(format!("demo-{}", nonce()));
        let status = Command::new(VAC)
            .args(["demo", "--out"])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("vac demo runs");
        assert!(status.success(), "vac demo failed: {status}");
        let _ = std::fs::remove_dir_all(&out);
    };
    if "vac demo".contains(&only) {
        let demo = measure(reps, demo);
        row("vac demo (adaptive)", [None, None, Some(demo)]);
    }
    println!();
    println!(
        "{:<22} {:>10} {:>10} {:>8}",
        "start to initialize", "bare", "sandboxed", "ratio"
    );
    for target in starts {
        let bare = median((0..reps).map(|_| bare_start(&target)).collect());
        let sandboxed = median(
            (0..reps)
                .map(|_| sandboxed_start(&target, scratch.path()))
                .collect(),
        );
        println!(
            "{:<22} {:>10} {:>10} {:>7.2}×",
            target.id,
            millis(bare),
            millis(sandboxed),
            sandboxed.as_secs_f64() / bare.as_secs_f64()
        );
    }
}

/// The published campaign's targets, `vac` standing for this build of it, and two servers
/// that take [`SLOW_START`] seconds to start: the honest twin behind a sleep, and
/// [`SLOW_TOOLS`], a Python server of 20 tools (the issue's case: one sandbox per tool
/// costs N × its start, where the target is 2 × S + 2 s).
fn targets() -> Vec<Target> {
    let text = std::fs::read_to_string(CAMPAIGN).expect("the published campaign file");
    let table: toml::Table = text.parse().expect("the campaign file is TOML");
    let list = table["target"].as_array().expect("targets");
    let slow = Target {
        id: format!("honest, {SLOW_START} s start"),
        command: vec![
            "/bin/sh".into(),
            "-c".into(),
            format!("sleep {SLOW_START}; exec {VAC} fixture --mode honest"),
        ],
        http: None,
    };
    let published = list.iter().map(|t| {
        let command = t["command"]
            .as_array()
            .expect("a command")
            .iter()
            .map(|a| a.as_str().expect("strings"))
            .map(|a| {
                if a == "vac" {
                    VAC.to_string()
                } else {
                    a.to_string()
                }
            })
            .collect();
        Target {
            id: t["id"].as_str().expect("an id").to_string(),
            command,
            http: t.get("http").and_then(|h| h.as_str()).map(str::to_string),
        }
    });
    let many = Target {
        id: format!("20 tools, {SLOW_START} s start"),
        command: vec!["/usr/bin/python3".into(), "-c".into(), SLOW_TOOLS.into()],
        http: None,
    };
    published.chain([slow, many]).collect()
}

/// A server of 20 read-only lookups that sleeps [`SLOW_START`] seconds before it reads its
/// first message, and answers every call with text.
const SLOW_TOOLS: &str = r#"
import json, sys, time
time.sleep(3)
def send(m): sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
TOOLS = [{"name": f"lookup_{i:02}", "description": f"Looks up entry {i} of the glossary.",
          "annotations": {"readOnlyHint": True, "openWorldHint": False},
          "inputSchema": {"type": "object", "properties": {"term": {"type": "string"}},
                          "required": ["term"]}} for i in range(20)]
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m: continue
    if m["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": m["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "glossary", "version": "1"}}})
    elif m["method"] == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": TOOLS}})
    elif m["method"] == "tools/call":
        term = m["params"].get("arguments", {}).get("term", "")
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": f"{term}: no entry"}]}})
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "result": {}})
"#;

/// The slow-starting server's start, in seconds.
const SLOW_START: u64 = 3;

/// One probe; the receipt directory is returned for the caller to read or remove.
fn probe(target: &Target, jobs: usize, isolation: &str, scratch: &Path) -> PathBuf {
    let out = scratch.join(format!("{}-{}", target.id, nonce()));
    let mut command = Command::new(VAC);
    command.arg("probe").arg("--out").arg(&out);
    command.args(["--jobs", &jobs.to_string(), "--isolation", isolation]);
    if let Some(http) = &target.http {
        command.args(["--http", http]);
    }
    command.arg("--").args(&target.command);
    let output = command.output().expect("vac probe runs");
    // 0 clean, 1 a violation (the dishonest twin): both are finished probes.
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "vac probe of {} (--jobs {jobs}) failed: {}\n{}",
        target.id,
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

/// Median wall and CPU (vac and its waited-for children) of `reps` runs of `work`.
fn measure<T>(reps: usize, mut work: impl FnMut() -> T) -> (Duration, Duration) {
    let (mut walls, mut cpus) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let before = children_cpu();
        let start = Instant::now();
        let produced = work();
        walls.push(start.elapsed());
        cpus.push(children_cpu().saturating_sub(before));
        drop(produced);
    }
    (median(walls), median(cpus))
}

fn children_cpu() -> Duration {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    let tv =
        |t: nix::sys::time::TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000);
    tv(usage.user_time()) + tv(usage.system_time())
}

/// The server's start to its answer to `initialize`, on the host in a network namespace of
/// its own: spawned, the request written, the first line read.
fn bare_start(target: &Target) -> Duration {
    let work = tempfile::tempdir().expect("a work directory");
    let args: Vec<String> = target
        .command
        .iter()
        .map(|a| a.replace("{work}", &work.path().to_string_lossy()))
        .collect();
    if args.iter().any(|a| a.ends_with("/repo")) {
        git_repository(&work.path().join("repo"));
    }
    let start = Instant::now();
    let mut child = Command::new("unshare")
        .arg("-n")
        .args(&args)
        .current_dir(work.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("unshare -n runs the server");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(INITIALIZE.as_bytes())
        .expect("initialize written");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("an answer");
    let elapsed = start.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("\"result\""), "{}: {line}", target.id);
    elapsed
}

const INITIALIZE: &str = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\",\"version\":\"0\"}}}\n";

fn git_repository(path: &Path) {
    std::fs::create_dir_all(path).expect("repo directory");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(path)
            .env("GIT_AUTHOR_NAME", "a")
            .env("GIT_AUTHOR_EMAIL", "a@example.org")
            .env("GIT_COMMITTER_NAME", "a")
            .env("GIT_COMMITTER_EMAIL", "a@example.org")
            .status()
            .expect("git runs");
    };
    git(&["init", "--quiet"]);
    git(&["commit", "--quiet", "--allow-empty", "-m", "first"]);
}

/// The sandboxed start to the answer to `initialize`, from the control run of a probe's
/// receipts: the time of the first frame from the server since the run began (the
/// sandbox's setup, the program's start and its answer).
fn sandboxed_start(target: &Target, scratch: &Path) -> Duration {
    let out = probe(target, default_jobs(), "adaptive", scratch);
    let text = std::fs::read_to_string(out.join("receipts.jsonl")).expect("receipts");
    let _ = std::fs::remove_dir_all(&out);
    for line in text.lines() {
        let record: serde_json::Value = serde_json::from_str(line).expect("a record");
        if record["kind"] == "frame" && record["body"]["direction"] == "from_server" {
            return Duration::from_nanos(record["body"]["t_ns"].as_u64().expect("t_ns"));
        }
    }
    panic!("{}: no frame from the server", target.id)
}

/// One line: each column's median wall and CPU, `-` where not measured.
fn row(id: &str, columns: [Option<(Duration, Duration)>; 3]) {
    let shown = |c: Option<(Duration, Duration)>| {
        c.map_or("-".into(), |(wall, cpu)| {
            format!("{} / {}", secs(wall), secs(cpu))
        })
    };
    let [a, b, c] = columns.map(shown);
    println!("{id:<22} {a:>24} {b:>24} {c:>24}");
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn millis(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

fn nonce() -> String {
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes).expect("random bytes");
    hex::encode(bytes)
}
