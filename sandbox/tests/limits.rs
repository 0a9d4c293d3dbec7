//! Privileged suite: the limits stop hostile programs, and bad input is named without
//! leaving anything behind.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use vac_sandbox::{FsChange, Lab, Limits, RunAs, Sandbox, SandboxError, Termination};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_fill_stops_at_the_write_limit() {
    if !privileged("a_disk_fill_stops_at_the_write_limit") {
        return;
    }
    let limits = Limits {
        write_bytes: 8 << 20,
        ..Limits::default()
    };
    let sandbox = shell("dd if=/dev/zero of=/tmp/fill bs=1M count=64; echo dd-exit=$?")
        .limits(limits)
        .run_as(RunAs::RootWithoutCapabilities)
        .build()
        .unwrap();
    let (out, err, stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    assert!(
        err.contains("No space left on device"),
        "stdout {out:?} stderr {err:?}"
    );
    assert!(!out.contains("dd-exit=0"), "{out}");
    let report = stopped.witness().collect().unwrap();
    let fill = report
        .changes
        .iter()
        .find(|c| c.path() == Path::new("/tmp/fill"))
        .expect("the fill file is witnessed");
    let FsChange::Created {
        digest: Some(digest),
        ..
    } = fill
    else {
        panic!("{fill:?}")
    };
    assert!(
        digest.size > 0 && digest.size <= 8 << 20,
        "wrote {} bytes",
        digest.size
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_is_stopped_by_the_pids_limit() {
    if !privileged("a_fork_bomb_is_stopped_by_the_pids_limit") {
        return;
    }
    let limits = Limits {
        pids: 32,
        ..Limits::default()
    };
    let sandbox = shell("bomb() { bomb | bomb & }; bomb; echo lit")
        .limits(limits)
        .build()
        .unwrap();
    let running = sandbox.spawn().unwrap();
    let pidns = PidNs::of(running.init_pid());
    // Wait for the kernel to refuse a fork: the limit did its work.
    let refused = tokio::time::timeout(Duration::from_secs(60), async {
        while running.limit_hits().pids == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(refused.is_ok(), "the pids limit was never hit");
    assert!(pidns.processes().len() <= 32);
    let stopped = running.stop().unwrap();
    assert!(stopped.limit_hits().pids > 0);
    assert!(pidns.processes().is_empty(), "part of the bomb survived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_hog_is_stopped_by_the_memory_limit() {
    if !privileged("a_memory_hog_is_stopped_by_the_memory_limit") {
        return;
    }
    let limits = Limits {
        memory_bytes: 64 << 20,
        ..Limits::default()
    };
    let hog = "x = bytearray(1 << 30); print('survived')";
    let sandbox = Sandbox::builder(["python3", "-c", hog])
        .limits(limits)
        .build()
        .unwrap();
    let (out, _err, stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    assert!(!out.contains("survived"));
    assert!(
        matches!(
            stopped.termination(),
            Some(Termination::Signaled(9)) | Some(Termination::Exited(1))
        ),
        "{:?}",
        stopped.termination()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wall_clock_limit_kills_the_run() {
    if !privileged("the_wall_clock_limit_kills_the_run") {
        return;
    }
    let limits = Limits {
        wall_clock: Duration::from_secs(1),
        ..Limits::default()
    };
    let mut running = shell("exec sleep 1000")
        .limits(limits)
        .build()
        .unwrap()
        .spawn()
        .unwrap();
    assert_eq!(running.wait().await, Termination::WallClockExceeded);
    let stopped = running.stop().unwrap();
    assert_eq!(stopped.termination(), Some(Termination::WallClockExceeded));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_command_is_named_and_nothing_is_left_behind() {
    if !privileged("a_missing_command_is_named_and_nothing_is_left_behind") {
        return;
    }
    let root = tempfile::Builder::new()
        .prefix("vac-runs-")
        .tempdir_in("/run")
        .unwrap();
    let sandbox = Sandbox::builder(["vac-no-such-program", "--flag"])
        .run_root(root.path())
        .build()
        .unwrap();
    let error = sandbox.spawn().unwrap_err();
    assert!(
        matches!(error, SandboxError::CommandNotFound { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("vac-no-such-program"), "{error}");
    assert_nothing_left(root.path());

    // Found but not executable by the kernel: exec fails inside and is named too.
    let script = root.path().join("not-a-program");
    std::fs::write(&script, "garbage").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let sandbox = Sandbox::builder([script.as_os_str()])
        .run_root(root.path())
        .build()
        .unwrap();
    let error = sandbox.spawn().unwrap_err();
    assert!(matches!(error, SandboxError::Start { .. }), "{error}");
    assert!(error.to_string().contains("not-a-program"), "{error}");
    std::fs::remove_file(&script).unwrap();
    assert_nothing_left(root.path());
}

#[test]
fn bad_configuration_is_named_before_anything_is_touched() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let error = shell("true")
        .lab(Lab::new().template(file.path()))
        .build()
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains(&file.path().display().to_string()),
        "{error}"
    );
    let error = shell("true")
        .limits(Limits {
            pids: 0,
            ..Limits::default()
        })
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("pids = 0"), "{error}");
    let error = shell("true")
        .lab(Lab::new().mount_at("relative"))
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("relative"), "{error}");
}

fn assert_nothing_left(root: &Path) {
    let entries: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(
        entries
            .iter()
            .all(|p| p.file_name().is_some_and(|n| n == "not-a-program")),
        "left behind: {entries:?}"
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(&root.display().to_string()),
        "a mount under {} survived",
        root.display()
    );
    let cgroups = std::fs::read_dir("/sys/fs/cgroup/memory/vac")
        .map(|d| d.count())
        .unwrap_or(0);
    let _ = cgroups; // other tests run in parallel; their groups are theirs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_left_by_a_dead_owner_are_swept_at_the_next_spawn() {
    if !privileged("runs_left_by_a_dead_owner_are_swept_at_the_next_spawn") {
        return;
    }
    let root = tempfile::Builder::new()
        .prefix("vac-sweep-")
        .tempdir_in("/run")
        .unwrap();
    let sandbox = shell("true").run_root(root.path()).build().unwrap();
    let (_, _, stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    let left = stopped.run_dir();
    // A caller killed before its teardown, in the host's mount namespace: the mounts stay
    // and the owner is gone.
    let owner = std::path::PathBuf::from(format!("{}.owner", left.display()));
    assert!(owner.is_file(), "the run's owner stamp is beside it");
    std::fs::write(&owner, "999999999 1").unwrap();
    std::mem::forget(stopped);
    assert!(
        std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .contains(&left.display().to_string())
    );
    // Its cgroup would be left too (empty: the processes died with their lifeline).
    let id = left.file_name().unwrap().to_string_lossy().into_owned();
    let roots = vac_sandbox::CgroupRoots::detect(Path::new("/sys/fs/cgroup")).unwrap();
    let group = roots.create(&id, &Limits::default()).unwrap();
    assert!(group.procs_files().iter().all(|p| p.exists()));

    // A run an older vac left, its stamp inside its tmpfs (here a plain directory).
    let legacy = root.path().join("run-0000000000000000");
    std::fs::create_dir(&legacy).unwrap();
    std::fs::write(legacy.join("owner"), "999999999 1").unwrap();

    let (_, _, next) = run_to_end(sandbox.spawn().unwrap()).await;
    assert!(!legacy.exists(), "{} was not swept", legacy.display());
    drop(next);
    assert!(!left.exists(), "{} was not swept", left.display());
    assert!(!owner.exists(), "{} was not swept", owner.display());
    assert!(
        group.procs_files().iter().all(|p| !p.exists()),
        "the stale cgroup was not removed"
    );
    assert!(
        !std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .contains(&root.path().display().to_string())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_namespace_has_loopback_eth0_and_its_own_hostname() {
    if !privileged("the_network_namespace_has_loopback_eth0_and_its_own_hostname") {
        return;
    }
    let script = "ls /sys/class/net | tr '\\n' ' '; echo; hostname; cat /sys/class/net/lo/operstate; \
                  ls /dev | tr '\\n' ' '; echo; cat /sys/class/net/eth0/operstate";
    let (out, err, _stopped) = run_to_end(shell(script).build().unwrap().spawn().unwrap()).await;
    let lines: Vec<&str> = out.lines().collect();
    // Its loopback, and the link to the sinkhole's side that a virtual machine would have.
    assert_eq!(lines[0].trim(), "eth0 lo", "interfaces: {out} {err}");
    assert_eq!(lines[4], "up", "eth0 must be up: {out}");
    // A UTS namespace of its own, named as the host is unless that name says vac.
    assert_eq!(lines[1], expected_hostname());
    assert_ne!(lines[2], "down", "lo must be up");
    assert_eq!(
        lines[3].trim(),
        "fd full null random stderr stdin stdout urandom zero"
    );
}
