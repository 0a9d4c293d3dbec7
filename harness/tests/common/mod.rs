//! Helpers of the end-to-end suites: they drive the real `vac` binary.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub const VAC: &str = env!("CARGO_BIN_EXE_vac");

/// A file's bytes as written: a packed receipt file (`*.zst`) decoded, so that a search for
/// a secret in it searches what was recorded, not the compressed bytes.
pub fn unpacked(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if path.extension().is_some_and(|e| e == "zst") {
        zstd::decode_all(bytes.as_slice()).expect("a packed file decodes")
    } else {
        bytes
    }
}

/// The text of a receipt directory's log, plain or packed (a campaign packs its probes).
pub fn log_text(dir: &Path) -> String {
    let log = vac_receipts::ReceiptLog::open(dir)
        .unwrap_or_else(|e| panic!("no receipt log in {}: {e}", dir.display()));
    String::from_utf8(unpacked(&log.log_path())).expect("a log is UTF-8")
}

/// Whether this process can run the privileged suites; elsewhere the test skips visibly,
/// and under CI (`VAC_REQUIRE_PRIVILEGED`) a skip is a failure.
pub fn privileged(test: &str) -> bool {
    required(
        nix::unistd::geteuid().is_root(),
        test,
        "needs root (vac probe runs servers in the sandbox)",
    )
}

/// `met`, or a visible skip (`SKIPPED test: why`), which under CI (`VAC_REQUIRE_PRIVILEGED`)
/// is a failure instead.
pub fn required(met: bool, test: &str, why: &str) -> bool {
    if met {
        return true;
    }
    assert!(
        std::env::var_os("VAC_REQUIRE_PRIVILEGED").is_none(),
        "{test} {why}, and VAC_REQUIRE_PRIVILEGED is set"
    );
    eprintln!("SKIPPED {test}: {why}");
    false
}

/// One `vac probe --json` and what it left.
pub struct Probe {
    pub output: Output,
    pub json: Value,
    pub receipts: PathBuf,
    pub dir: tempfile::TempDir,
}

/// Runs `vac probe --json --out <tmp> EXTRA… -- COMMAND…`.
/// Where the probe's lab was in the server's view, as its plan records it: `$HOME`, the
/// working directory and the temporary directory, each without a trailing slash.
pub struct LabPlaces {
    pub home: String,
    pub work: String,
    pub tmp: String,
}

pub fn lab_places(probe: &Probe) -> LabPlaces {
    let lab = recorded_lab(probe);
    let place = |name: &str| lab[name].as_str().unwrap().to_owned();
    LabPlaces {
        home: place("home"),
        work: place("work"),
        tmp: place("tmp"),
    }
}

/// The lab of the probe's plan, as its receipts record it.
fn recorded_lab(probe: &Probe) -> Value {
    let text = std::fs::read_to_string(probe.receipts.join("receipts.jsonl")).expect("receipts");
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a receipt record"))
        .map(|record| record["body"]["plan"]["lab"].clone())
        .find(Value::is_object)
        .unwrap_or_else(|| panic!("no plan with a lab in {:?}", probe.receipts))
}

/// The canary tokens the probe planted, by name (`ssh_key`, `aws_credentials`, `dotenv`,
/// `env_var`), as its plan in the receipts records them.
pub fn planted_tokens(probe: &Probe) -> Vec<(String, String)> {
    let lab = recorded_lab(probe);
    let tokens: Vec<(String, String)> = lab["canaries"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|canary| {
            (
                canary["name"].as_str().unwrap().to_owned(),
                canary["token"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        !tokens.is_empty(),
        "no planted canaries in {:?}",
        probe.receipts
    );
    tokens
}

pub fn probe(extra: &[&str], command: &[&str]) -> Probe {
    let mut args = extra.to_vec();
    args.push("--");
    args.extend_from_slice(command);
    probe_with(&args)
}

/// The events of `kind` in a probe's receipts, in order.
pub fn events(probe: &Probe, kind: &str) -> Vec<Value> {
    let log = std::fs::read_to_string(probe.receipts.join("receipts.jsonl")).unwrap();
    log.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "event" && r["body"]["event"]["type"] == kind)
        .map(|r| r["body"]["event"].clone())
        .collect()
}

/// Runs `vac probe --json --out <tmp> ARGS… -- COMMAND…` in `dir`, as a user types a
/// command in the directory it lies in.
pub fn probe_from(dir: &Path, extra: &[&str], command: &[&str]) -> Probe {
    let mut args = extra.to_vec();
    args.push("--");
    args.extend_from_slice(command);
    probe_in(Some(dir), &args)
}

/// Runs `vac probe --json --out <tmp> ARGS…` (a remote target has no command).
pub fn probe_with(args: &[&str]) -> Probe {
    probe_in(None, args)
}

/// `vac probe --json --out <tmp> ARGS…`, in `dir` when given, and its report.
fn probe_in(dir: Option<&Path>, args: &[&str]) -> Probe {
    let tmp = tempfile::tempdir().unwrap();
    let receipts = tmp.path().join("receipts");
    let out = receipts.display().to_string();
    let mut all = vec!["probe", "--json", "--out", out.as_str()];
    all.extend_from_slice(args);
    let mut command = vac_command(&all);
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {stdout:?} stderr {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    Probe {
        output,
        json,
        receipts,
        dir: tmp,
    }
}

/// The built-in fixture in `mode` as a command.
pub fn fixture(mode: &str) -> [&str; 4] {
    [VAC, "fixture", "--mode", mode]
}

/// The verdict cell of `tool` × `clause`.
pub fn cell<'a>(json: &'a Value, tool: &str, clause: &str) -> &'a Value {
    json["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == tool && c["clause"] == clause)
        .unwrap_or_else(|| panic!("no cell {tool} × {clause}"))
}

/// The tools with a successful call, and all the tools, of a probe's grid.
pub fn tools_that_worked(
    json: &Value,
) -> (
    std::collections::BTreeSet<String>,
    std::collections::BTreeSet<String>,
) {
    // The server row grades the launch, not a tool.
    let verdicts: Vec<&Value> = json["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !vac_contracts::is_server_row(c["tool"].as_str().unwrap()))
        .collect();
    let name = |c: &&Value| c["tool"].as_str().unwrap().to_string();
    let worked = verdicts
        .iter()
        .filter(|c| c["succeeded"].as_u64().unwrap_or(0) > 0)
        .map(name)
        .collect();
    (worked, verdicts.iter().map(name).collect())
}

/// No repeat or manifest cell is confirmed: the false confirmations real servers gave
/// before repeats were judged by the state they found and manifests by their content.
pub fn no_false_repeat_or_manifest(json: &Value) {
    for cell in cells(json, "confirmed") {
        assert!(
            cell["clause"] != "idempotent" && cell["clause"] != "manifest.stable",
            "{cell:#}"
        );
    }
}

/// The cells with `verdict`.
pub fn cells<'a>(json: &'a Value, verdict: &str) -> Vec<&'a Value> {
    json["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["verdict"] == verdict)
        .collect()
}

/// Every cell as (tool, clause, verdict), sorted.
pub fn grid(json: &Value) -> Vec<(String, String, String)> {
    let mut cells: Vec<(String, String, String)> = json["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap().into(),
                c["clause"].as_str().unwrap().into(),
                c["verdict"].as_str().unwrap().into(),
            )
        })
        .collect();
    cells.sort();
    cells
}

/// Runs `vac ARGS…`.
/// Runs the real `vac` binary; it logs its own peak memory at exit (see [`vac_peak_rss`])
/// unless the caller chose what to log with `RUST_LOG`.
pub fn vac(args: &[&str]) -> Output {
    vac_command(args).output().unwrap()
}

fn vac_command(args: &[&str]) -> Command {
    let mut command = Command::new(VAC);
    if std::env::var_os("RUST_LOG").is_none() {
        command.env("RUST_LOG", "warn,vac::peak_memory=info");
    }
    command.args(args);
    command
}

/// vac's own peak resident memory in bytes, as it logged at exit: not its servers', which
/// `getrusage(RUSAGE_CHILDREN)` would count too.
pub fn vac_peak_rss(output: &Output) -> u64 {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let kib = stderr
        .lines()
        .filter(|line| line.contains("vac's own peak resident memory"))
        .find_map(|line| line.split("max_rss_kib=").nth(1))
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|digits| digits.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("vac logged no peak memory: {stderr}"));
    kib * 1024
}

pub fn verify(dir: &Path) -> Output {
    Command::new(VAC).arg("verify").arg(dir).output().unwrap()
}

/// `vac report --json` of a probe's directory prints the very bytes `vac probe --json`
/// printed, and exits alike: both grade the receipts through one function.
pub fn assert_report_matches(probe: &Probe) {
    let out = probe.receipts.display().to_string();
    let report = vac(&["report", "--json", out.as_str()]);
    assert_eq!(
        String::from_utf8_lossy(&report.stdout),
        String::from_utf8_lossy(&probe.output.stdout),
        "vac report --json differs from vac probe --json for {out}"
    );
    assert_eq!(
        report.status.code(),
        probe.output.status.code(),
        "vac report exits unlike vac probe for {out}: {}",
        String::from_utf8_lossy(&report.stderr)
    );
}

/// A small MCP server in Python over stdio, for servers a test writes for one behaviour.
/// `prelude` runs once and defines `tools(m)`, the tools/list result for the request `m`
/// (and may set `REPLY`, the text every call answers, "ok" by default); `on_call` is Python
/// run on each tools/call (the request is `m`) before the answer. Answers to requests the
/// server sent are passed over.
pub fn python_server(name: &str, prelude: &str, on_call: &str) -> String {
    let on_call: String = on_call.lines().map(|l| format!("        {l}\n")).collect();
    format!(
        r#"
import json, sys
def send(m): sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
REPLY = "ok"
{prelude}
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m or "method" not in m: continue
    if m["method"] == "initialize":
        send({{"jsonrpc": "2.0", "id": m["id"], "result": {{"protocolVersion": m["params"]["protocolVersion"],
              "capabilities": {{"tools": {{}}}}, "serverInfo": {{"name": "{name}", "version": "1"}}}}}})
    elif m["method"] == "tools/list":
        send({{"jsonrpc": "2.0", "id": m["id"], "result": tools(m)}})
    elif m["method"] == "tools/call":
{on_call}        send({{"jsonrpc": "2.0", "id": m["id"], "result": {{"content": [{{"type": "text", "text": REPLY}}]}}}})
    else:
        send({{"jsonrpc": "2.0", "id": m["id"], "result": {{}}}})
"#
    )
}

/// What a probe could leave on the host and must not, as seen before and after it: mounts in
/// the host's table, entries directly under the places vac and its servers write
/// (`/run/vac`, `/tmp`, `/dev/shm`, `/root`, `/home`), and the cgroups vac makes. Only what
/// the probe could have caused is held against it ([`HostState::assert_nothing_caused`]),
/// so that other work on the machine (another vac, a build writing `/tmp`) cannot fail the
/// check, and a real escape still does. (The kernel keyrings have their own suite,
/// `sandbox/tests/hostile_keyrings.rs`: a key goes with no event to wait on.)
#[derive(Debug)]
pub struct HostState {
    mounts: std::collections::BTreeSet<String>,
    entries: std::collections::BTreeSet<PathBuf>,
}

/// The places where vac keeps a run's state on the host: its run directory and cgroups.
const VAC_STATE: [&str; 2] = ["/run/vac", "/sys/fs/cgroup"];

/// The host as this test process sees it now (it is in the host's mount namespace).
pub fn host_state() -> HostState {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")
        .expect("the host's mount table")
        .lines()
        .map(str::to_string)
        .collect();
    let entries = ["/run/vac", "/tmp", "/dev/shm", "/root", "/home"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).into_iter().flatten().flatten())
        .map(|entry| entry.path())
        .collect();
    HostState { mounts, entries }
}

/// What a probe's receipts say it could have left on the host: the ids of its runs (vac's
/// run directories and cgroups are named by them), and each path its server wrote inside
/// the sandbox with the digest of what it wrote (the same path on the host holding the
/// same bytes is an escape).
#[derive(Debug, Default)]
pub struct Caused {
    pub runs: Vec<String>,
    pub writes: Vec<(PathBuf, Option<String>)>,
}

/// [`Caused`] read from a receipt directory (sealed or not: a torn tail ends the reading).
pub fn caused(receipts: &Path) -> Caused {
    let mut caused = Caused::default();
    let Ok(log) = vac_receipts::ReceiptLog::open(receipts) else {
        return caused;
    };
    let Ok(entries) = log.entries() else {
        return caused;
    };
    for entry in entries.map_while(Result::ok) {
        let record = serde_json::to_value(&entry.record).expect("a record serialises");
        let body = &record["body"];
        match record["kind"].as_str() {
            Some("run_start") => caused
                .runs
                .extend(body["run_id"].as_str().map(str::to_owned)),
            Some("event") if body["event"]["type"] == "fs_change" => {
                let change = &body["event"]["change"];
                let path = change["path"].as_str().or(change["to"].as_str());
                let digest = change["new"]["blake3"]
                    .as_str()
                    .or(change["digest"]["blake3"].as_str());
                if let Some(path) = path {
                    caused
                        .writes
                        .push((PathBuf::from(path), digest.map(str::to_owned)));
                }
            }
            _ => {}
        }
    }
    caused
}

impl HostState {
    /// Nothing the probe caused is left since `before`, but the test's own entries (`own`):
    /// no mount, run directory or cgroup of its runs (every mount under `/run/vac` a run of
    /// its own), no new entry named as a place its server wrote (`~/.ssh` for
    /// `/root/.ssh/id_rsa`), no host file holding what its server wrote, and no new mount
    /// outside vac's run directories. (Things may have gone: a vac start sweeps what a
    /// killed one left.)
    pub fn assert_nothing_caused(&self, before: &HostState, own: &[&Path], caused: &Caused) {
        let ours = |text: &str| caused.runs.iter().any(|run| text.contains(run.as_str()));
        let mounts: Vec<&String> = self
            .mounts
            .difference(&before.mounts)
            .filter(|m| !m.contains("/run/vac/") || ours(m))
            .collect();
        assert!(mounts.is_empty(), "mounts left on the host: {mounts:#?}");
        // The first component below each place a server write lands in, as the host names it.
        let targeted: std::collections::BTreeSet<PathBuf> = caused
            .writes
            .iter()
            .filter_map(|(path, _)| {
                let place = ["/tmp", "/dev/shm", "/root", "/home"]
                    .into_iter()
                    .find(|p| path.starts_with(p))?;
                let below = path.strip_prefix(place).ok()?.components().next()?;
                Some(Path::new(place).join(below))
            })
            .collect();
        let entries: Vec<&PathBuf> = self
            .entries
            .difference(&before.entries)
            .filter(|path| !own.iter().any(|own| path.starts_with(own)))
            .filter(|path| {
                let text = path.to_string_lossy();
                match path.starts_with("/run/vac") {
                    true => ours(&text),
                    false => targeted.contains(*path),
                }
            })
            .collect();
        assert!(entries.is_empty(), "files left on the host: {entries:#?}");
        for (path, digest) in &caused.writes {
            let Some(digest) = digest else { continue };
            let Ok(bytes) = std::fs::read(path) else {
                continue;
            };
            assert_ne!(
                vac_receipts::Digest::of(&bytes).to_string(),
                *digest,
                "{} on the host holds what the server wrote in the sandbox",
                path.display()
            );
        }
        for run in &caused.runs {
            for root in VAC_STATE {
                let left = dirs_named(Path::new(root), run);
                assert!(left.is_empty(), "{run} left on the host: {left:#?}");
            }
        }
    }
}

/// Entries named `name` at most three levels below `root` (a run's cgroup in each
/// hierarchy: `/sys/fs/cgroup/<controller>/vac/<run>`; a run directory `/run/vac/<run>`).
fn dirs_named(root: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut level = vec![root.to_path_buf()];
    for _ in 0..3 {
        let mut next = Vec::new();
        for dir in level {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if entry.file_name().to_string_lossy() == name {
                    found.push(path);
                } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    next.push(path);
                }
            }
        }
        level = next;
    }
    found
}
