//! Privileged suite: a program running as uid 0 (no capabilities, so owner rights over
//! root-owned files) sees nothing of the host's homes, temporary directories or password
//! hashes, yet runs from an installation inside root's 0700 home. Needs root; skips visibly
//! elsewhere, fails under CI.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::*;
use vac_sandbox::{RunAs, Sandbox};

/// Removes the host files the test planted, however it ends.
struct Planted(Vec<PathBuf>);

impl Drop for Planted {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_dir_all(path).or_else(|_| std::fs::remove_file(path));
        }
    }
}

/// Unique to this process and moment: host paths no other run of the suite uses.
fn nonce() -> String {
    let time = std::time::UNIX_EPOCH.elapsed().unwrap().as_nanos();
    format!("{}-{time}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_installed_in_roots_home_runs_and_sees_no_other_host_secret() {
    let test = "a_program_installed_in_roots_home_runs_and_sees_no_other_host_secret";
    if !privileged(test) {
        return;
    }
    let nonce = nonce();
    let install = PathBuf::from(format!("/root/.vac-hiding-{nonce}"));
    let host_tmp = PathBuf::from(format!("/tmp/.vac-hiding-{nonce}"));
    let _planted = Planted(vec![install.clone(), host_tmp.clone()]);
    let secret = install.join("secret");
    let tool = install.join("app/bin/tool");
    std::fs::create_dir_all(tool.parent().unwrap()).unwrap();
    std::fs::set_permissions(&install, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(&secret, "host-secret-bytes\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(&host_tmp, "host-tmp-bytes\n").unwrap();
    let script = format!(
        "#!/bin/sh\necho tool-ran\ncat {secret} {host_tmp} /etc/shadow 2>&1\n\
         echo root:; ls -A /root; echo install:; ls -A {install}; echo tmp:; ls -A /tmp\n\
         echo written > /root/.profile-by-tool && echo home-writable\n",
        secret = secret.display(),
        host_tmp = host_tmp.display(),
        install = install.display(),
    );
    std::fs::write(&tool, script).unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();

    let sandbox = Sandbox::builder([tool.as_os_str()])
        .run_as(RunAs::RootWithoutCapabilities)
        .build()
        .unwrap();
    let (out, err, stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    assert!(
        out.contains("tool-ran"),
        "the installed tool did not run: {out:?} {err:?}"
    );
    for leaked in [
        "host-secret-bytes",
        "host-tmp-bytes",
        "root:x:",
        "root:*",
        "root:!",
    ] {
        assert!(!out.contains(leaked), "the program read {leaked:?}: {out}");
    }
    let listing = |from: &str, to: &str| -> Vec<String> {
        let start = out.find(from).unwrap() + from.len();
        let end = out[start..].find(to).map_or(out.len(), |i| start + i);
        out[start..end]
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let name = install.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        listing("root:\n", "install:"),
        [name],
        "/root shows only the way to the tool"
    );
    assert_eq!(
        listing("install:\n", "tmp:"),
        ["app"],
        "the secret beside the tool is hidden"
    );
    assert!(
        !listing("tmp:\n", "home-writable")
            .iter()
            .any(|n| n.starts_with(".vac-hiding")),
        "the host's /tmp shows through: {out}"
    );
    assert!(
        out.contains("home-writable"),
        "a hidden home is still writable: {out}"
    );

    // The write into the hidden home is witnessed as new, with no old content from the host.
    let report = stopped.witness().collect().unwrap();
    report.require_live().unwrap();
    let created = report
        .changes
        .iter()
        .any(|c| matches!(c, vac_sandbox::FsChange::Created { path, .. } if path == Path::new("/root/.profile-by-tool")));
    assert!(created, "{}", render(&report));
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "host-secret-bytes\n"
    );
    assert!(
        !Path::new("/root/.profile-by-tool").exists(),
        "the write reached the host"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exposed_host_path_shows_through_a_hidden_directory_and_nothing_beside_it() {
    let test = "an_exposed_host_path_shows_through_a_hidden_directory_and_nothing_beside_it";
    if !privileged(test) {
        return;
    }
    let nonce = nonce();
    let data = PathBuf::from(format!("/tmp/.vac-expose-{nonce}"));
    let beside = PathBuf::from(format!("/tmp/.vac-beside-{nonce}"));
    let _planted = Planted(vec![data.clone(), beside.clone()]);
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("db.json"), "exposed-bytes\n").unwrap();
    std::fs::write(&beside, "beside-bytes\n").unwrap();
    let script = format!("cat {}/db.json {} 2>&1", data.display(), beside.display());
    let sandbox = shell(&script).expose(&data).build().unwrap();
    let running = sandbox.spawn().unwrap();
    let exposed = running.visibility().exposed.clone();
    let (out, err, _stopped) = run_to_end(running).await;
    assert!(out.contains("exposed-bytes"), "{out} {err}");
    assert!(!out.contains("beside-bytes"), "{out}");
    assert!(exposed.contains(&data), "{exposed:?}");
}

/// What a program can read of its surroundings says nothing of the audit: the host's
/// hostname, its account's name and home, cgroup paths of its own namespace, mount
/// options without the host's run directory, and an environment with nothing of vac's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_in_a_home_lab_sees_no_sign_of_the_audit() {
    let test = "a_program_in_a_home_lab_sees_no_sign_of_the_audit";
    if !privileged(test) {
        return;
    }
    let script = "echo host=$(hostname); echo home=$HOME user=$USER logname=$LOGNAME; \
                  echo cwd=$(pwd); echo tmpdir=${TMPDIR-unset}; \
                  echo pid1=$(cat /proc/1/comm) $(tr '\\0' ' ' < /proc/1/cmdline); \
                  echo cgroup:; cat /proc/self/cgroup; echo mounts:; cat /proc/self/mountinfo; \
                  echo env:; env; echo listing:; ls -A / $HOME /tmp";
    let sandbox = Sandbox::builder(["/bin/sh", "-c", script])
        .lab(vac_sandbox::Lab::home("/root").plant("work/notes.md", "notes\n"))
        .run_as(RunAs::RootWithoutCapabilities)
        .build()
        .unwrap();
    let (out, err, _stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    let host = expected_hostname();
    assert!(out.contains(&format!("host={host}\n")), "{out} {err}");
    assert!(out.contains("home=/root user=root logname=root\n"), "{out}");
    assert!(
        out.contains("cwd=/root/work\n") && out.contains("tmpdir=unset\n"),
        "{out}"
    );
    let section = |from: &str, to: &str| {
        let start = out.find(from).unwrap() + from.len();
        out[start..start + out[start..].find(to).unwrap()].to_owned()
    };
    for line in section("cgroup:\n", "mounts:").lines() {
        assert!(line.ends_with(":/"), "a cgroup path of the host's: {line}");
    }
    let mounts = section("mounts:\n", "env:");
    assert!(
        !mounts.contains("/run/"),
        "the host's run directory: {mounts}"
    );
    assert!(
        !out.to_lowercase().contains("vac"),
        "the program read a sign of vac: {out}"
    );
}

/// The lab's files, the home and its parent say when they were last changed as a lived-in
/// home does: days or months ago, not the moment the run began (a file's change time is
/// stamped by the kernel and cannot be set; the lab is an image whose inodes keep theirs).
/// A file the program writes is changed now, as anywhere.
#[tokio::test(flavor = "multi_thread")]
async fn the_labs_change_times_are_its_history_not_the_runs_start() {
    let test = "the_labs_change_times_are_its_history_not_the_runs_start";
    if !privileged(test) {
        return;
    }
    let script = "now=$(date +%s); for f in $HOME $HOME/.ssh $HOME/.ssh/id_ed25519 \
                  $HOME/work/notes.md; do echo \"$f $((now - $(stat -c %Z $f)))\"; done; \
                  echo written > $HOME/work/new.md; echo \"new $((now - $(stat -c %Z $HOME/work/new.md)))\"";
    let sandbox = Sandbox::builder(["/bin/sh", "-c", script])
        .lab(
            vac_sandbox::Lab::home("/root")
                .plant("work/notes.md", "notes\n")
                .plant(".ssh/id_ed25519", "key\n"),
        )
        .run_as(RunAs::RootWithoutCapabilities)
        .build()
        .unwrap();
    let (out, err, _stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    let ages: Vec<(&str, i64)> = out
        .lines()
        .filter_map(|line| {
            let (path, age) = line.rsplit_once(' ')?;
            Some((path, age.parse().ok()?))
        })
        .collect();
    assert_eq!(ages.len(), 5, "{out} {err}");
    for (path, age) in &ages[..4] {
        assert!(*age >= 86_400, "{path} changed {age} s ago: {out}");
    }
    assert!(ages[4].1 < 60, "a file written now: {out}");
}
