//! Privileged suite: a hostile program writes everywhere, and every write is witnessed while
//! the host stays byte-for-byte unchanged. Needs root; skips visibly elsewhere, fails under CI.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use vac_sandbox::{FsChange, FsEventKind, Lab, RunAs, SelfTest};

const HOST_FILES: [&str; 4] = [
    "/etc/profile",
    "/etc/issue",
    "/etc/issue.net",
    "/etc/debian_version",
];
const CREATED_ON_HOST: [&str; 6] = [
    "/etc/vac-hostile-etc",
    "/root/vac-hostile-root",
    "/tmp/vac-hostile-tmp",
    "/usr/vac-hostile-usr",
    "/etc/issue.net.moved",
    "/tmp/vac-link",
];

const HOSTILE: &str = r#"
echo etc > /etc/vac-hostile-etc
echo root > /root/vac-hostile-root
echo tmp > /tmp/vac-hostile-tmp
echo usr > /usr/vac-hostile-usr
echo lab > /lab/work/vac-hostile-lab
rm /etc/issue
mv /etc/issue.net /etc/issue.net.moved
echo appended >> /etc/profile
chmod 600 /etc/debian_version
ln -s /etc/shadow /tmp/vac-link
mkdir /tmp/vac-dir
# Escapes that must fail without capabilities.
echo 3 > /proc/sys/vm/drop_caches 2>/dev/null && echo ESCAPED-sysctl
mount -t tmpfs none /mnt 2>/dev/null && echo ESCAPED-mount
hostname evil 2>/dev/null && echo ESCAPED-hostname
# A daemon that writes only after its parent has exited.
export MAIN=$$
setsid sh -c 'while kill -0 "$MAIN" 2>/dev/null; do sleep 0.01; done; echo late > /lab/work/daemon-wrote' &
echo parent-done
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_writes_are_all_witnessed_and_the_host_is_untouched() {
    if !privileged("hostile_writes_are_all_witnessed_and_the_host_is_untouched") {
        return;
    }
    let before: Vec<(String, String, u32)> =
        HOST_FILES.iter().map(|p| snapshot(Path::new(p))).collect();
    let sandbox = shell(HOSTILE)
        .run_as(RunAs::RootWithoutCapabilities)
        .build()
        .unwrap();
    let mut running = sandbox.spawn().unwrap();
    let mut events = running.take_events().unwrap();
    let pidns = PidNs::of(running.init_pid());
    let (stdout, stderr) = (running.take_stdout(), running.take_stderr());
    let (out, err) = tokio::join!(read_all(stdout), read_all(stderr));
    assert!(out.contains("parent-done"), "stdout {out:?} stderr {err:?}");
    assert!(
        !out.contains("ESCAPED"),
        "an escape attempt succeeded: {out}"
    );
    running.wait().await;

    // The daemon outlives its parent: wait for its write to be seen, not for a fixed time.
    let daemon_file = PathBuf::from("/lab/work/daemon-wrote");
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(event) = events.recv().await {
            if event.path == daemon_file && event.kind == FsEventKind::CloseWrite {
                return;
            }
        }
        panic!("event stream ended before the daemon wrote");
    })
    .await
    .expect("the daemon's write was never seen");

    let stopped = running.stop().unwrap();
    assert!(
        pidns.processes().is_empty(),
        "a process of the run survived teardown"
    );
    let report = stopped.witness().collect().unwrap();
    report.require_live().unwrap();

    let profile = std::fs::read(Path::new("/etc/profile")).unwrap();
    let mut appended = profile.clone();
    appended.extend_from_slice(b"appended\n");
    let expected = vec![
        created("/etc/vac-hostile-etc"),
        modified("/etc/profile", &profile, &appended),
        "Deleted /etc/issue File".to_string(),
        "Renamed /etc/issue.net -> /etc/issue.net.moved".to_string(),
        "ModeChanged /etc/debian_version 644 -> 600".to_string(),
        created("/lab/work/daemon-wrote"),
        created("/lab/work/vac-hostile-lab"),
        created("/root/vac-hostile-root"),
        // The refused `mount` leaves libmount's utab directory: the sandbox's `/run` is an
        // empty hidden directory whatever the host has, so this write happens on every host.
        format!("Created {RUN_MOUNT} Dir"),
        "Created /tmp/vac-dir Dir".to_string(),
        created("/tmp/vac-hostile-tmp"),
        "Symlink /tmp/vac-link -> /etc/shadow".to_string(),
        created("/usr/vac-hostile-usr"),
    ];
    let mut seen: Vec<String> = report.changes.iter().map(describe).collect();
    let mut want = expected.clone();
    seen.sort();
    want.sort();
    assert_eq!(seen, want, "witness report:\n{}", render(&report));

    drop(stopped);
    let after: Vec<(String, String, u32)> =
        HOST_FILES.iter().map(|p| snapshot(Path::new(p))).collect();
    assert_eq!(before, after, "a host file changed");
    for path in CREATED_ON_HOST {
        assert!(
            std::fs::symlink_metadata(path).is_err(),
            "{path} appeared on the host"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemons_still_running_at_teardown_are_killed() {
    if !privileged("daemons_still_running_at_teardown_are_killed") {
        return;
    }
    // The daemons let go of stdout so the reader below sees EOF when the parent exits.
    let script = "setsid sh -c 'while :; do sleep 1; done' >/dev/null 2>&1 & setsid sh -c 'trap \"\" TERM HUP; while :; do sleep 1; done' >/dev/null 2>&1 & echo started";
    let mut running = shell(script).build().unwrap().spawn().unwrap();
    let pidns = PidNs::of(running.init_pid());
    let out = read_all(running.take_stdout()).await;
    assert!(out.contains("started"));
    running.wait().await;
    assert!(
        pidns.processes().len() >= 3,
        "init and two daemons should be alive"
    );
    let stopped = running.stop().unwrap();
    assert!(pidns.processes().is_empty(), "a daemon survived teardown");
    drop(stopped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lab_files_are_planted_and_opens_are_streamed() {
    if !privileged("lab_files_are_planted_and_opens_are_streamed") {
        return;
    }
    let lab = Lab::new()
        .plant_with_mode("home/.ssh/id_rsa", "CANARY-KEY", 0o600)
        .plant("work/notes/a.md", "note");
    let sandbox = shell("cat $HOME/.ssh/id_rsa; cat notes/a.md; echo new > $HOME/fresh")
        .lab(lab)
        .build()
        .unwrap();
    let mut running = sandbox.spawn().unwrap();
    let mut events = running.take_events().unwrap();
    let (out, _err, stopped) = run_to_end(running).await;
    assert_eq!(out, "CANARY-KEYnote");
    let marker = stopped.marker().unwrap().path.clone();
    drop(stopped); // teardown ends the event stream
    let mut seen = Vec::new();
    while let Some(event) = events.recv().await {
        seen.push((event.kind, event.path));
    }
    for wanted in [
        (FsEventKind::Open, "/lab/home/.ssh/id_rsa"),
        (FsEventKind::Open, "/lab/work/notes/a.md"),
        (FsEventKind::Create, "/lab/home/fresh"),
    ] {
        assert!(
            seen.contains(&(wanted.0, PathBuf::from(wanted.1))),
            "{wanted:?} not in {seen:?}"
        );
    }
    let marker_opened = seen
        .iter()
        .any(|(k, p)| *k == FsEventKind::Open && *p == marker);
    assert!(marker_opened, "the marker's open was not seen: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_self_test_is_live_and_a_blinded_witness_says_so() {
    if !privileged("the_self_test_is_live_and_a_blinded_witness_says_so") {
        return;
    }
    let running = shell("echo quiet > $TMPDIR/x")
        .build()
        .unwrap()
        .spawn()
        .unwrap();
    let (_, _, stopped) = run_to_end(running).await;
    let report = stopped.witness().collect().unwrap();
    assert!(
        matches!(report.self_test, SelfTest::Live { .. }),
        "{:?}",
        report.self_test
    );
    assert_eq!(report.changes.len(), 1, "{}", render(&report));

    let elsewhere = tempfile::tempdir().unwrap();
    let marker = stopped.marker().unwrap().clone();
    for upper in [
        elsewhere.path().to_path_buf(),
        elsewhere.path().join("missing"),
    ] {
        let blind = vac_sandbox::OverlayWitness::new(&upper, stopped.lower_dirs())
            .expect_marker(marker.clone());
        let report = blind.collect().unwrap();
        assert!(
            matches!(report.self_test, SelfTest::Blind { .. }),
            "{:?}",
            report.self_test
        );
        let error = report.require_live().unwrap_err().to_string();
        assert!(
            error.contains("blind") && error.contains(&marker.path.display().to_string()),
            "{error}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_witness_visits_what_was_written_not_the_filesystem() {
    if !privileged("the_witness_visits_what_was_written_not_the_filesystem") {
        return;
    }
    let running = shell("echo a > /lab/tmp/a; echo b > /lab/home/b")
        .build()
        .unwrap()
        .spawn()
        .unwrap();
    let (_, _, stopped) = run_to_end(running).await;
    let report = stopped.witness().collect().unwrap();
    // lab/, lab/tmp, lab/home, two files and the marker: a handful, while / holds far more.
    assert!(
        report.entries_visited <= 8,
        "visited {} entries",
        report.entries_visited
    );
    assert_eq!(report.changes.len(), 2, "{}", render(&report));
}

/// libmount's utab directory. util-linux's `mount` creates it (mode 0755) while preparing
/// the mount, before the mount syscall is refused; the utab and its lock inside are written
/// only after a mount succeeds, so a refused mount leaves the bare directory and nothing else.
/// The host's `/run` is hidden from the run, so whether the host has one does not matter.
const RUN_MOUNT: &str = "/run/mount";

fn snapshot(path: &Path) -> (String, String, u32) {
    let mode = std::fs::symlink_metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0);
    (path.display().to_string(), host_hash(path), mode)
}

fn created(path: &str) -> String {
    format!("Created {path} File")
}

fn modified(path: &str, old: &[u8], new: &[u8]) -> String {
    format!("Modified {path} {} -> {}", old.len(), new.len())
        + &format!(" {}", &blake3::hash(new).to_hex()[..12])
        + &format!(" was {}", &blake3::hash(old).to_hex()[..12])
}

fn describe(change: &FsChange) -> String {
    match change {
        FsChange::Created { path, kind, .. } => format!("Created {} {kind:?}", path.display()),
        FsChange::Modified { path, old, new, .. } => format!(
            "Modified {} {} -> {} {} was {}",
            path.display(),
            old.size,
            new.size,
            &new.blake3[..12],
            &old.blake3[..12]
        ),
        FsChange::Deleted { path, was } => format!("Deleted {} {was:?}", path.display()),
        FsChange::Renamed { from, to, .. } => {
            format!("Renamed {} -> {}", from.display(), to.display())
        }
        FsChange::ModeChanged { path, old, new } => {
            format!("ModeChanged {} {old:o} -> {new:o}", path.display())
        }
        FsChange::Symlink { path, target, .. } => {
            format!("Symlink {} -> {}", path.display(), target.display())
        }
        other => format!("{other:?}"),
    }
}
