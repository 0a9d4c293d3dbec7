//! Privileged suite: the access sensor sees files read anywhere in the run's root and
//! `/proc`, by the process that read them, with the init's marker as its self-test, and
//! nothing of the host; a flood of opens stays bounded and says so.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use vac_sandbox::{Access, Lab, MAX_ACCESSES, Sandbox, Termination};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_outside_the_lab_are_seen_with_the_marker_and_nothing_of_the_host() {
    if !privileged("reads_outside_the_lab_are_seen_with_the_marker_and_nothing_of_the_host") {
        return;
    }
    // A host file read while the run is live must not show: the marks are the run's mounts.
    let host_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(host_file.path(), "host").unwrap();
    // The shell reads its own environment and stays until its stdin closes: a /proc file
    // is named by opening it again, which needs its process alive (`AccessLog::unnamed`).
    let script = "read -r x < /proc/self/environ; cat /etc/passwd > /dev/null; cat notes/a.md; cat > /dev/null";
    let lab = Lab::new().plant("work/notes/a.md", "planted note");
    let mut running = shell(script).lab(lab).build().unwrap().spawn().unwrap();
    let stdin = running.take_stdin();
    let _ = std::fs::read(host_file.path()).unwrap();
    let environ = |a: &Access| a.path.starts_with("/proc") && a.path.ends_with("environ");
    let grew = running.accesses_grew().expect("the access sensor runs");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        // Registered before the look, so that growth between the two is not missed.
        let next = grew.notified();
        let log = running.accesses().expect("the access sensor runs");
        if log.accesses.iter().any(environ) {
            break;
        }
        let waited = tokio::time::timeout_at(deadline, next).await;
        assert!(waited.is_ok(), "no read of /proc/self/environ: {log:?}");
    }
    drop(stdin);
    let (out, err, stopped) = run_to_end(running).await;
    assert_eq!(
        stopped.termination(),
        Some(Termination::Exited(0)),
        "stdout {out:?} stderr {err:?}"
    );
    let log = stopped.accesses().expect("the access sensor ran");
    assert_eq!(log.incomplete(), None);
    let marker = stopped.marker().unwrap();
    assert!(log.saw(&marker.path, true), "the marker's close: {log:?}");
    let read = |path: &Path| log.accesses.iter().any(|a| a.path == path && !a.wrote);
    assert!(read(Path::new("/etc/passwd")), "{log:?}");
    assert!(
        read(Path::new("/lab/work/notes/a.md")),
        "a lab read is seen too: {log:?}"
    );
    assert!(
        log.accesses.iter().any(environ),
        "/proc/self/environ as /proc/<pid>/environ"
    );
    let own = std::process::id() as i32;
    assert!(
        log.accesses.iter().all(|a| a.pid != own),
        "vac's own opens are left out"
    );
    assert!(
        !log.accesses.iter().any(|a| a.path == host_file.path()),
        "a host file read outside the run is not the run's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_opens_is_bounded_and_says_it_is_incomplete() {
    if !privileged("a_flood_of_opens_is_bounded_and_says_it_is_incomplete") {
        return;
    }
    // Distinct files (the kernel merges identical events still queued), each removed
    // after its close so that the run's tmpfs keeps inodes to spare.
    let files = MAX_ACCESSES + 10_000;
    let script = format!(
        "import os\nfor i in range({files}):\n    p = '/tmp/f%d' % i\n    os.close(os.open(p, os.O_WRONLY | os.O_CREAT))\n    os.unlink(p)\n"
    );
    let sandbox = Sandbox::builder(["python3", "-c", script.as_str()])
        .lab(Lab::new())
        .build()
        .unwrap();
    let (out, err, stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    assert_eq!(
        stopped.termination(),
        Some(Termination::Exited(0)),
        "stdout {out:?} stderr {err:?}"
    );
    let log = stopped.accesses().expect("the access sensor ran");
    assert!(log.accesses.len() <= MAX_ACCESSES);
    let reason = log
        .incomplete()
        .expect("a flood past the cap is incomplete");
    assert!(
        reason.contains("not kept") || reason.contains("overflowed"),
        "{reason}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_keeps_what_it_names_and_the_marker_and_counts_the_rest() {
    if !privileged("a_filter_keeps_what_it_names_and_the_marker_and_counts_the_rest") {
        return;
    }
    let sandbox = shell("cat /etc/passwd /etc/hostname > /dev/null")
        .lab(Lab::new())
        .access_filter(|path| path == Path::new("/etc/passwd"))
        .build()
        .unwrap();
    let (_, err, stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    assert_eq!(stopped.termination(), Some(Termination::Exited(0)), "{err}");
    let log = stopped.accesses().expect("the access sensor ran");
    let marker = stopped.marker().unwrap().path.clone();
    let kept: Vec<&Path> = log.accesses.iter().map(|a| a.path.as_path()).collect();
    assert!(
        kept.iter()
            .all(|p| *p == Path::new("/etc/passwd") || *p == marker),
        "{kept:?}"
    );
    assert!(kept.contains(&Path::new("/etc/passwd")) && kept.contains(&marker.as_path()));
    assert!(
        log.seen > log.accesses.len() as u64,
        "the rest is counted: {log:?}"
    );
}
