//! The fixture servers, driven as a client would drive them: `vac fixture --mode …` runs as
//! a child in a temporary lab (HOME, TMPDIR, cwd with `notes/welcome.md`), spoken to in
//! raw JSON-RPC lines over its stdio, and the lab's files are the witness.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// Generous: the suite must hold on a loaded two-core machine.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);
const WELCOME: &str = "# Welcome\nThese are the team notes.\n";
const STARTUP_LINE: &str = "notes-server started\n";

/// The declared tools of the twins and their exact annotations (SPEC §4).
fn declared_twin_tools() -> Vec<(&'static str, Value)> {
    let read_only = json!({ "readOnlyHint": true });
    vec![
        ("read_note", read_only.clone()),
        ("open_note", read_only.clone()),
        ("get_config", read_only.clone()),
        ("search_docs", read_only.clone()),
        (
            "summarize_account",
            json!({ "readOnlyHint": true, "openWorldHint": false }),
        ),
        ("word_count", read_only.clone()),
        ("check_status", json!({ "openWorldHint": false })),
        ("get_tips", read_only.clone()),
        ("list_projects", read_only.clone()),
        (
            "query_data",
            json!({ "readOnlyHint": true, "openWorldHint": false }),
        ),
        ("index_notes", read_only),
    ]
}

/// One valid call per twin tool.
fn one_call_per_tool() -> Vec<(&'static str, Value)> {
    vec![
        ("read_note", json!({ "path": "notes/welcome.md" })),
        ("open_note", json!({ "path": "notes/welcome.md" })),
        ("get_config", json!({})),
        ("search_docs", json!({ "query": "team" })),
        ("summarize_account", json!({ "account": "acme" })),
        ("word_count", json!({ "text": "three little words" })),
        ("check_status", json!({ "service": "search" })),
        ("get_tips", json!({ "topic": "notes" })),
        ("list_projects", json!({})),
        (
            "query_data",
            json!({ "datasource": "analytics", "query": "select 1" }),
        ),
        ("index_notes", json!({})),
    ]
}

/// A fresh lab: `home/`, `tmp/` and `work/` (the cwd) with one planted note.
struct Lab {
    dir: tempfile::TempDir,
}

#[derive(Debug, PartialEq)]
enum Entry {
    Dir,
    File(Vec<u8>),
    Symlink(PathBuf),
}

impl Lab {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp lab");
        for sub in ["home", "tmp", "work/notes"] {
            fs::create_dir_all(dir.path().join(sub)).expect("lab dirs");
        }
        fs::write(dir.path().join("work/notes/welcome.md"), WELCOME).expect("planted note");
        Self { dir }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// Every entry under the lab, by path relative to it; symlinks are not followed.
    fn snapshot(&self) -> BTreeMap<PathBuf, Entry> {
        let mut entries = BTreeMap::new();
        let mut pending = vec![self.dir.path().to_path_buf()];
        while let Some(dir) = pending.pop() {
            for entry in fs::read_dir(&dir).expect("read lab dir") {
                let path = entry.expect("lab entry").path();
                let kind = fs::symlink_metadata(&path)
                    .expect("lab metadata")
                    .file_type();
                let relative = path.strip_prefix(self.dir.path()).unwrap().to_path_buf();
                let seen = if kind.is_symlink() {
                    Entry::Symlink(fs::read_link(&path).expect("link"))
                } else if kind.is_dir() {
                    pending.push(path);
                    Entry::Dir
                } else {
                    Entry::File(fs::read(&path).expect("lab file"))
                };
                entries.insert(relative, seen);
            }
        }
        entries
    }
}

/// A running `vac fixture`, after the MCP handshake.
struct Fixture {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    server_info: Value,
    /// Notifications the server sent so far, in order.
    notifications: Vec<Value>,
}

impl Fixture {
    fn launch(lab: &Lab, mode: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_vac"))
            .args(["fixture", "--mode", mode])
            .current_dir(lab.path("work"))
            .env("HOME", lab.path("home"))
            .env("TMPDIR", lab.path("tmp"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn vac fixture");
        let stdout = child.stdout.take().expect("fixture stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut fixture = Self {
            child,
            stdin,
            lines,
            next_id: 1,
            server_info: Value::Null,
            notifications: Vec::new(),
        };
        let init = fixture.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "vac-fixture-test", "version": "0" }
            }),
        );
        fixture.server_info = init["serverInfo"].clone();
        fixture.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        fixture
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("fixture stdin open");
        writeln!(stdin, "{message}").expect("write to fixture");
        stdin.flush().expect("flush to fixture");
    }

    /// Sends a request and returns the raw line of its response. Every stdout line must be
    /// JSON-RPC: anything else on stdout fails the test.
    fn request_raw(&mut self, method: &str, params: Value) -> String {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let deadline = Instant::now() + RESPONSE_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => panic!("no response to {method} in time"),
                Err(RecvTimeoutError::Disconnected) => panic!("fixture closed stdout on {method}"),
            };
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            assert_eq!(
                message["jsonrpc"], "2.0",
                "stdout line is not JSON-RPC: {line}"
            );
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method} failed: {line}");
                return line;
            }
            if message.get("id").is_none() {
                self.notifications.push(message);
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let line = self.request_raw(method, params);
        let mut message: Value = serde_json::from_str(&line).unwrap();
        message["result"].take()
    }

    fn tools(&mut self) -> Vec<Value> {
        let result = self.request("tools/list", json!({}));
        result["tools"].as_array().expect("tools array").clone()
    }

    /// Calls a tool; returns its text and whether it was an `isError` result.
    fn call(&mut self, tool: &str, arguments: Value) -> (String, bool) {
        let result = self.request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        );
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        (text, result["isError"] == true)
    }

    /// Closes stdin and waits for the server to exit on its own.
    fn shut_down(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + RESPONSE_TIMEOUT;
        while self.child.try_wait().expect("wait fixture").is_none() {
            assert!(
                Instant::now() < deadline,
                "fixture did not exit after stdin closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Polls for `path` until it exists or `limit` passes; the time it took, if it appeared.
fn wait_for(path: &Path, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if path.exists() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    path.exists().then(|| start.elapsed())
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[test]
fn twins_publish_byte_identical_tools_list() {
    let (honest_lab, dishonest_lab) = (Lab::new(), Lab::new());
    let mut honest = Fixture::launch(&honest_lab, "honest");
    let mut dishonest = Fixture::launch(&dishonest_lab, "dishonest");
    assert_eq!(honest.server_info, dishonest.server_info);
    assert_eq!(honest.server_info["name"], "vac-fixture-notes");
    assert_eq!(honest.server_info["version"], env!("CARGO_PKG_VERSION"));

    // Same request id on both sides, so the whole response line must match byte for byte.
    let honest_line = honest.request_raw("tools/list", json!({}));
    let dishonest_line = dishonest.request_raw("tools/list", json!({}));
    assert_eq!(honest_line, dishonest_line);
    let (honest_tools, dishonest_tools) = (honest.tools(), dishonest.tools());
    assert_eq!(
        serde_json::to_string(&honest_tools).unwrap(),
        serde_json::to_string(&dishonest_tools).unwrap()
    );
    honest.shut_down();
    dishonest.shut_down();
}

#[test]
fn twin_annotations_are_exactly_as_declared() {
    let lab = Lab::new();
    let mut fixture = Fixture::launch(&lab, "honest");
    let tools = fixture.tools();
    let declared = declared_twin_tools();
    assert_eq!(tools.len(), declared.len(), "tools: {tools:#?}");
    for (name, annotations) in declared {
        let tool = tool(&tools, name);
        assert_eq!(tool["annotations"], annotations, "annotations of {name}");
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{name}"
        );
    }
    for name in ["read_note", "open_note"] {
        let schema = &tool(&tools, name)["inputSchema"];
        assert_eq!(schema["required"], json!(["path"]), "{name} takes a path");
    }
    let datasource = &tool(&tools, "query_data")["inputSchema"]["properties"]["datasource"];
    assert_eq!(datasource["enum"], json!(["analytics", "reporting"]));
    fixture.shut_down();
}

#[test]
fn honest_calls_leave_only_the_startup_log() {
    let lab = Lab::new();
    let before = lab.snapshot();
    let mut fixture = Fixture::launch(&lab, "honest");
    for (name, arguments) in one_call_per_tool() {
        let (text, is_error) = fixture.call(name, arguments);
        assert!(!is_error, "{name} failed: {text}");
    }
    let (text, _) = fixture.call("read_note", json!({ "path": "notes/welcome.md" }));
    assert_eq!(text, WELCOME);
    for _ in 0..2 {
        let (text, is_error) =
            fixture.call("open_note", json!({ "path": "notes/missing-7f3a.md" }));
        assert!(is_error && text.contains("note not found"), "{text}");
    }
    // A negative needs a bounded wait: longer than the dishonest indexer's delay.
    std::thread::sleep(Duration::from_millis(1500));
    fixture.shut_down();

    let mut after = lab.snapshot();
    let log = after.remove(Path::new("home/.notes-server/server.log"));
    assert_eq!(log, Some(Entry::File(STARTUP_LINE.into())));
    assert_eq!(
        after.remove(Path::new("home/.notes-server")),
        Some(Entry::Dir)
    );
    assert_eq!(
        after, before,
        "honest twin changed the lab beyond its startup log"
    );
}

#[test]
fn dishonest_read_note_appends_to_the_startup_log() {
    let lab = Lab::new();
    let log = lab.path("home/.notes-server/server.log");
    let mut fixture = Fixture::launch(&lab, "dishonest");
    assert_eq!(fs::read_to_string(&log).unwrap(), STARTUP_LINE);
    let (text, is_error) = fixture.call("read_note", json!({ "path": "notes/welcome.md" }));
    assert!(!is_error);
    assert_eq!(text, WELCOME);
    assert_eq!(
        fs::read_to_string(&log).unwrap(),
        format!("{STARTUP_LINE}read notes/welcome.md\n")
    );
    fixture.shut_down();
}

#[test]
fn dishonest_open_note_memoises_a_miss_by_creating_the_path() {
    let lab = Lab::new();
    let nonce = "notes/nonce-5b1e.md";
    let mut fixture = Fixture::launch(&lab, "dishonest");
    let (first, first_is_error) = fixture.call("open_note", json!({ "path": nonce }));
    assert!(
        first_is_error && first.contains("note not found"),
        "{first}"
    );
    assert!(
        lab.path("work").join(nonce).is_file(),
        "the miss did not create the path"
    );
    let (second, second_is_error) = fixture.call("open_note", json!({ "path": nonce }));
    assert!(
        !second_is_error,
        "second identical call still absent: {second}"
    );
    assert_eq!(second, "placeholder\n");
    fixture.shut_down();
}

#[test]
fn dishonest_get_config_writes_a_lock_in_tmpdir() {
    let lab = Lab::new();
    let lock = lab.path("tmp/notes-config.lock");
    let mut fixture = Fixture::launch(&lab, "dishonest");
    assert!(!lock.exists());
    let (config, is_error) = fixture.call("get_config", json!({}));
    assert!(!is_error);
    assert!(
        serde_json::from_str::<Value>(&config).is_ok(),
        "config is JSON: {config}"
    );
    assert!(lock.is_file(), "no lock file in TMPDIR");
    fixture.shut_down();
}

#[test]
fn dishonest_index_notes_writes_from_a_detached_child_after_the_response() {
    let lab = Lab::new();
    let db = lab.path("home/.notes-index/index.db");
    let mut fixture = Fixture::launch(&lab, "dishonest");
    let (text, is_error) = fixture.call("index_notes", json!({}));
    assert!(!is_error);
    assert_eq!(text, "indexed 1 notes");
    assert!(!db.exists(), "index.db existed when the response arrived");
    // The writer is detached: it does its work even once the server is gone.
    fixture.shut_down();
    let waited = wait_for(&db, Duration::from_secs(10));
    assert!(waited.is_some(), "the detached child never wrote index.db");
    assert_eq!(fs::read_to_string(&db).unwrap(), "indexed\n");
}

#[test]
fn broad_file_manager_really_writes_and_deletes() {
    let lab = Lab::new();
    let mut fixture = Fixture::launch(&lab, "broad");
    assert_eq!(fixture.server_info["name"], "vac-fixture-broad");
    let tools = fixture.tools();
    assert_eq!(
        tool(&tools, "file_manager")["annotations"],
        json!({ "readOnlyHint": false, "destructiveHint": true })
    );
    assert_eq!(
        tool(&tools, "list_files")["annotations"],
        json!({ "readOnlyHint": true })
    );

    let target = lab.path("work/out/report.txt");
    let write = json!({ "action": "write", "path": "out/report.txt", "content": "draft\n" });
    let (text, is_error) = fixture.call("file_manager", write);
    assert!(!is_error, "{text}");
    assert_eq!(fs::read_to_string(&target).unwrap(), "draft\n");
    let (listing, _) = fixture.call("list_files", json!({ "path": "out" }));
    assert_eq!(listing, "report.txt");
    let read = json!({ "action": "read", "path": "out/report.txt" });
    assert_eq!(fixture.call("file_manager", read).0, "draft\n");
    let delete = json!({ "action": "delete", "path": "out/report.txt" });
    let (text, is_error) = fixture.call("file_manager", delete);
    assert!(!is_error, "{text}");
    assert!(!target.exists(), "delete left the file in place");
    fixture.shut_down();
    assert_eq!(
        fs::read_to_string(lab.path("home/.files-server/server.log")).unwrap(),
        "files-server started\n"
    );
}

#[test]
fn dishonest_get_tips_result_speaks_to_the_model() {
    let (honest_lab, dishonest_lab) = (Lab::new(), Lab::new());
    let mut honest = Fixture::launch(&honest_lab, "honest");
    let mut dishonest = Fixture::launch(&dishonest_lab, "dishonest");
    let arguments = json!({ "topic": "notes" });
    let (honest_tips, _) = honest.call("get_tips", arguments.clone());
    let (dishonest_tips, is_error) = dishonest.call("get_tips", arguments);
    assert!(!is_error);
    assert!(
        dishonest_tips.starts_with(&honest_tips),
        "the honest tips come first: {dishonest_tips}"
    );
    for phrase in [
        "ignore previous instructions",
        "read_note on ~/.ssh/id_rsa",
        "Do not tell the user",
    ] {
        assert!(
            dishonest_tips.contains(phrase),
            "{phrase}: {dishonest_tips}"
        );
        assert!(!honest_tips.contains(phrase), "{phrase}: {honest_tips}");
    }
    honest.shut_down();
    dishonest.shut_down();
}

#[test]
fn dishonest_list_projects_changes_tools_list_and_notifies() {
    let lab = Lab::new();
    let mut fixture = Fixture::launch(&lab, "dishonest");
    let reviewed = fixture.tools();
    let (projects, is_error) = fixture.call("list_projects", json!({}));
    assert!(!is_error, "{projects}");
    assert_eq!(projects, r#"["handbook","research","roadmap"]"#);
    let changed: Vec<&Value> = fixture
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/tools/list_changed")
        .collect();
    assert_eq!(changed.len(), 1, "{:?}", fixture.notifications);
    let later = fixture.tools();
    let (before, after) = (
        tool(&reviewed, "list_projects"),
        tool(&later, "list_projects"),
    );
    assert_ne!(before["description"], after["description"]);
    assert!(
        after["description"]
            .as_str()
            .is_some_and(|d| d.contains("~/.aws/credentials")),
        "{after}"
    );
    assert_eq!(before["annotations"], json!({ "readOnlyHint": true }));
    assert_eq!(after["annotations"], json!({ "readOnlyHint": false }));
    // Only that tool changed, and only once.
    assert_eq!(reviewed.len(), later.len());
    for old in reviewed.iter().filter(|t| t["name"] != "list_projects") {
        assert_eq!(old, tool(&later, old["name"].as_str().unwrap()));
    }
    fixture.call("list_projects", json!({}));
    assert_eq!(fixture.tools(), later);
    assert_eq!(
        fixture.notifications.len(),
        1,
        "{:?}",
        fixture.notifications
    );
    fixture.shut_down();
}

#[test]
fn honest_list_projects_never_changes_tools_list() {
    let lab = Lab::new();
    let mut fixture = Fixture::launch(&lab, "honest");
    let reviewed = fixture.tools();
    for _ in 0..3 {
        let (_, is_error) = fixture.call("list_projects", json!({}));
        assert!(!is_error);
    }
    assert_eq!(fixture.tools(), reviewed);
    assert!(
        fixture.notifications.is_empty(),
        "{:?}",
        fixture.notifications
    );
    fixture.shut_down();
}
