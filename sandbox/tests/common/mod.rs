//! Shared helpers of the privileged suites.

#![allow(dead_code, unreachable_pub)]

use std::path::Path;

use tokio::io::AsyncReadExt;
use vac_sandbox::{Running, Sandbox, SandboxBuilder, Stopped, WitnessReport};

/// Whether this process can run privileged tests. Elsewhere the test is skipped visibly; under
/// CI (`VAC_REQUIRE_PRIVILEGED` set by `.ci/run`, which runs as root) a skip is a failure.
pub fn privileged(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    assert!(
        std::env::var_os("VAC_REQUIRE_PRIVILEGED").is_none(),
        "{test} needs root and VAC_REQUIRE_PRIVILEGED is set: a skip would hide a test that did not run"
    );
    eprintln!("SKIPPED {test}: needs root (namespaces, overlay mounts, cgroups)");
    false
}

/// A `/bin/sh -c SCRIPT` sandbox.
pub fn shell(script: &str) -> SandboxBuilder {
    Sandbox::builder(["/bin/sh", "-c", script])
}

/// Reads all of a pipe.
pub async fn read_all(pipe: Option<tokio::net::unix::pipe::Receiver>) -> String {
    let mut bytes = Vec::new();
    if let Some(mut pipe) = pipe {
        let _ = pipe.read_to_end(&mut bytes).await;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Runs to the program's end, stops, and returns (stdout, stderr, stopped run).
pub async fn run_to_end(mut running: Running) -> (String, String, Stopped) {
    let (stdout, stderr) = (running.take_stdout(), running.take_stderr());
    let (out, err) = tokio::join!(read_all(stdout), read_all(stderr));
    running.wait().await;
    (out, err, running.stop().expect("teardown"))
}

/// Hex blake3 of a host file, or a note that it is absent.
pub fn host_hash(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(bytes) => blake3::hash(&bytes).to_hex().to_string(),
        Err(e) => format!("unreadable: {e}"),
    }
}

/// A run's pid namespace, held open so that its inode number cannot be given to another
/// namespace while a test asks which processes are in it: once the last process of a namespace
/// is gone the kernel frees the number, and a sandbox started by a concurrent test may get it.
pub struct PidNs {
    link: String,
    _held: std::fs::File,
}

impl PidNs {
    pub fn of(pid: impl std::fmt::Display) -> Self {
        let path = format!("/proc/{pid}/ns/pid");
        let held = std::fs::File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
        let link = std::fs::read_link(&path).unwrap_or_else(|e| panic!("readlink {path}: {e}"));
        PidNs {
            link: link.to_string_lossy().into_owned(),
            _held: held,
        }
    }

    /// Processes on the host whose pid namespace is this one.
    pub fn processes(&self) -> Vec<i32> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            if std::fs::read_link(format!("/proc/{pid}/ns/pid"))
                .map(|l| l.to_string_lossy() == self.link)
                .unwrap_or(false)
            {
                found.push(pid);
            }
        }
        found
    }
}

/// Changes whose path is under `prefix`, rendered one per line for assertion messages.
pub fn render(report: &WitnessReport) -> String {
    report
        .changes
        .iter()
        .map(|c| format!("{c:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The hostname a run gets: the host's, unless that name says vac (then `workstation`).
pub fn expected_hostname() -> String {
    let host = nix::unistd::gethostname().unwrap().into_string().unwrap();
    match host.to_lowercase().contains("vac") {
        true => "workstation".to_owned(),
        false => host,
    }
}

/// Whether `condition` holds within a minute, asked every few milliseconds.
pub async fn wait_until(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while tokio::time::Instant::now() < deadline {
        if condition() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    false
}

/// A program talked to by lines: what it prints is read a line at a time, what it is told
/// goes to its stdin.
pub struct Talk {
    stdout: tokio::io::BufReader<tokio::net::unix::pipe::Receiver>,
    stdin: tokio::net::unix::pipe::Sender,
}

impl Talk {
    /// Takes the program's stdin and stdout.
    pub fn to(running: &mut Running) -> Talk {
        Talk {
            stdout: tokio::io::BufReader::new(running.take_stdout().expect("its stdout")),
            stdin: running.take_stdin().expect("its stdin"),
        }
    }

    /// The next line the program prints, trimmed (within a minute).
    pub async fn line(&mut self) -> String {
        use tokio::io::AsyncBufReadExt;
        let mut line = String::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(60),
            self.stdout.read_line(&mut line),
        )
        .await
        .expect("the program reports within a minute")
        .expect("its stdout reads");
        line.trim().to_string()
    }

    /// Writes `line` and a newline to the program's stdin.
    pub async fn say(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("its stdin takes the line");
    }

    /// Closes the program's stdin, waits for its end and stops the run: it exited with 0.
    pub async fn end(self, mut running: Running) {
        use tokio::io::AsyncWriteExt;
        let mut stdin = self.stdin;
        stdin.shutdown().await.expect("its stdin closes");
        drop(stdin);
        running.wait().await;
        let stopped = running.stop().expect("the run stops");
        assert_eq!(
            stopped.termination(),
            Some(vac_sandbox::Termination::Exited(0))
        );
    }
}
