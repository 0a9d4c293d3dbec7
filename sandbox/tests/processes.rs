//! Privileged suite: the process sensor sees what the sandbox's processes execute, with argv.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use vac_sandbox::{ArgvSource, Exec, ProcSelfTest, ProcSensorFailure, ProcessLog, Termination};

fn argv(exec: &Exec) -> Vec<String> {
    exec.argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

fn render(log: &ProcessLog) -> String {
    log.execs
        .iter()
        .map(|e| format!("{} {:?} {:?}", e.pid, e.path, argv(e)))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn log_of(script: &str) -> ProcessLog {
    let sandbox = shell(script).build().unwrap();
    let (out, err, stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    assert_eq!(
        stopped.termination(),
        Some(Termination::Exited(0)),
        "stdout {out:?} stderr {err:?}"
    );
    stopped
        .processes()
        .expect("the process sensor is on by default")
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execs_of_a_shell_pipeline_are_seen_with_argv_and_cwd() {
    if !privileged("execs_of_a_shell_pipeline_are_seen_with_argv_and_cwd") {
        return;
    }
    let log = log_of("wc -w /etc/hostname; /bin/echo a b c").await;
    assert!(log.self_test.is_live(), "{:?}", log.self_test);
    let find = |name: &str| {
        log.execs
            .iter()
            .find(|e| e.path.ends_with(name))
            .unwrap_or_else(|| panic!("no exec of {name}:\n{}", render(&log)))
    };
    let shell = &log.execs[0];
    assert_eq!(
        argv(shell),
        ["/bin/sh", "-c", "wc -w /etc/hostname; /bin/echo a b c"]
    );
    let wc = find("wc");
    assert_eq!(argv(wc), ["wc", "-w", "/etc/hostname"]);
    assert_eq!(wc.cwd.as_deref(), Some(Path::new("/lab/work")));
    assert_eq!(wc.uid, Some(65534));
    assert_eq!(wc.ppid, Some(shell.pid));
    assert_eq!(wc.argv_source, ArgvSource::ExecCall);
    let echo = find("echo");
    assert_eq!(argv(echo), ["/bin/echo", "a", "b", "c"]);
    assert_eq!(echo.path, Path::new("/bin/echo"));
    assert!(
        log.exits
            .iter()
            .any(|x| x.pid == wc.pid && x.code == Some(0)),
        "{:?}",
        log.exits
    );
    assert!(!log.execs.iter().any(|e| {
        e.argv
            .iter()
            .any(|a| a.to_string_lossy().starts_with("vac-marker-"))
    }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_short_lived_execs_are_all_captured_with_argv() {
    if !privileged("fifty_short_lived_execs_are_all_captured_with_argv") {
        return;
    }
    let log = log_of("i=0; while [ $i -lt 50 ]; do /bin/true x$i y; i=$((i+1)); done").await;
    assert!(log.self_test.is_live(), "{:?}", log.self_test);
    for i in 0..50 {
        let want = ["/bin/true".to_string(), format!("x{i}"), "y".into()];
        assert!(
            log.execs.iter().any(|e| argv(e) == want),
            "exec {i} missing:\n{}",
            render(&log)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_daemon_that_execs_after_its_parent_exits_is_seen() {
    if !privileged("a_detached_daemon_that_execs_after_its_parent_exits_is_seen") {
        return;
    }
    // The daemon waits for its parent to be gone, then execs; the run waits on its output.
    let script = "setsid sh -c 'while kill -0 $PPID 2>/dev/null; do :; done; exec /bin/echo daemon-ran' & echo started";
    let mut running = shell(script).build().unwrap().spawn().unwrap();
    let stdout = running.take_stdout();
    let out = tokio::time::timeout(Duration::from_secs(60), read_all(stdout))
        .await
        .expect("the daemon ran");
    assert!(out.contains("daemon-ran"), "{out}");
    let stopped = running.stop().unwrap();
    let log = stopped.processes().unwrap();
    assert!(log.self_test.is_live(), "{:?}", log.self_test);
    assert!(
        log.execs
            .iter()
            .any(|e| argv(e) == ["/bin/echo", "daemon-ran"]),
        "{}",
        render(log)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_self_test_is_live_in_a_normal_run_and_the_marker_is_not_reported() {
    if !privileged("the_self_test_is_live_in_a_normal_run_and_the_marker_is_not_reported") {
        return;
    }
    let log = log_of("exit 0").await;
    let ProcSelfTest::Live { marker } = &log.self_test else {
        panic!("{:?}", log.self_test)
    };
    assert!(marker.starts_with("/bin/true vac-marker-"), "{marker}");
    assert_eq!(
        log.execs.len(),
        1,
        "only the program's own exec:\n{}",
        render(&log)
    );
    assert!(!log.lost.any());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_storm_gives_bounded_logs_a_dropped_count_and_no_hang() {
    if !privileged("a_fork_storm_gives_bounded_logs_a_dropped_count_and_no_hang") {
        return;
    }
    // 1,200 short-lived children in waves: more execs than the log keeps.
    let script =
        "for w in $(seq 12); do for i in $(seq 100); do /bin/true $w $i & done; wait; done";
    let log = tokio::time::timeout(Duration::from_secs(240), log_of(script))
        .await
        .expect("no hang");
    assert!(log.execs.len() <= 1024 && log.forks.len() <= 1024);
    assert!(
        log.dropped.execs > 0 && log.dropped.forks > 0,
        "{:?}",
        log.dropped
    );
    assert!(log.self_test.is_live(), "{:?}", log.self_test);
    // sh, 13 seq and the 1,200 children: every exec either kept or counted.
    assert_eq!(
        log.execs.len() as u64 + log.dropped.execs,
        1 + 13 + 1200,
        "{:?}",
        log.dropped
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_starved_connector_fails_the_self_test_instead_of_reporting_clean() {
    if !privileged("a_starved_connector_fails_the_self_test_instead_of_reporting_clean") {
        return;
    }
    let script = "for i in $(seq 300); do /bin/true $i & done; wait";
    let sandbox = shell(script).process_sensor_buffer(1).build().unwrap();
    let (_, _, stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    let log = stopped.processes().unwrap();
    assert!(log.lost.any(), "{:?}", log.lost);
    assert!(
        matches!(
            &log.self_test,
            ProcSelfTest::Failed {
                reason: ProcSensorFailure::LostEvents(_)
            }
        ),
        "{:?}",
        log.self_test
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sensor_can_be_turned_off() {
    if !privileged("the_sensor_can_be_turned_off") {
        return;
    }
    let sandbox = shell("/bin/true").process_sensor(false).build().unwrap();
    let (_, _, stopped) = run_to_end(sandbox.spawn().unwrap()).await;
    assert_eq!(stopped.processes(), None);
}

const SPIN: &str = r#"
import sys, threading
stop = False
def spin():
    while not stop:
        pass
print('ready', flush=True)
sys.stdin.readline()
worker = threading.Thread(target=spin)
worker.start()
print('spinning', flush=True)
sys.stdin.readline()
stop = True
worker.join()
print('idle', flush=True)
sys.stdin.read()
"#;

/// A thread of a process the run already knew that runs (or waits for a core) is at work;
/// the same process blocked reading its input is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_process_is_at_work_only_while_a_thread_of_it_runs() {
    if !privileged("a_known_process_is_at_work_only_while_a_thread_of_it_runs") {
        return;
    }
    let sandbox = vac_sandbox::Sandbox::builder(["python3", "-c", SPIN])
        .build()
        .unwrap();
    let mut running = sandbox.spawn().unwrap();
    let mut talk = Talk::to(&mut running);
    assert_eq!(talk.line().await, "ready");
    let known = running.pids();
    assert!(!known.is_empty());
    assert!(
        wait_until(|| !running.at_work(&known)).await,
        "a process blocked reading its input is not at work"
    );
    talk.say("spin").await;
    assert_eq!(talk.line().await, "spinning");
    assert!(
        running.at_work(&known),
        "a spinning thread of a known process is at work"
    );
    talk.say("stop").await;
    assert_eq!(talk.line().await, "idle");
    assert!(
        wait_until(|| !running.at_work(&known)).await,
        "once the thread has ended the process is not at work"
    );
    talk.end(running).await;
}
