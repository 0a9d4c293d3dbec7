//! The sandbox's process tree, followed from its init through connector fork events, and the
//! bounded log of what its processes did.
//!
//! Exec calls arrive from the exec listener *before* they happen (the caller is held until
//! answered) and are kept pending per thread; the connector's exec event for that process
//! confirms one. A pending call replaced by a newer call of the same thread, or ended by the
//! thread's exit, failed.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::connector::ProcEvent;
use super::exec_notify::{ExecRequest, absolute};
use super::log::{ArgvSource, Exec, Exit, Fork, ProcDropped, ProcessLog, UidChange};

/// Records kept per list; further ones are counted in [`ProcDropped`].
pub(crate) const MAX_RECORDS: usize = 1024;

/// The parts of a log that are plain records, before the self-test is judged.
#[derive(Debug, Clone, Default)]
pub(crate) struct Records {
    pub(crate) execs: Vec<Exec>,
    pub(crate) failed_execs: Vec<Exec>,
    pub(crate) forks: Vec<Fork>,
    pub(crate) exits: Vec<Exit>,
    pub(crate) uid_changes: Vec<UidChange>,
    pub(crate) dropped: ProcDropped,
}

fn push<T>(list: &mut Vec<T>, dropped: &mut u64, record: T) {
    if list.len() < MAX_RECORDS {
        list.push(record);
    } else {
        *dropped += 1;
    }
}

/// Follows one run's tree.
pub(crate) struct Tracker {
    started: Instant,
    proc_root: PathBuf,
    /// Tracked tasks: thread id → thread group id.
    threads: HashMap<i32, i32>,
    /// Tracked processes → their parent at fork.
    parents: HashMap<i32, i32>,
    pending: HashMap<i32, Exec>,
    records: Records,
}

impl Tracker {
    /// Starts from the sandbox's init (host pid). `proc_root` is the host's `/proc`.
    pub(crate) fn new(init: i32, started: Instant, proc_root: PathBuf) -> Tracker {
        Tracker {
            started,
            proc_root,
            threads: HashMap::from([(init, init)]),
            parents: HashMap::new(),
            pending: HashMap::new(),
            records: Records::default(),
        }
    }

    fn proc(&self, pid: i32, entry: &str) -> PathBuf {
        self.proc_root.join(pid.to_string()).join(entry)
    }

    /// Applies one connector event; events of processes outside the tree are ignored.
    pub(crate) fn on_event(&mut self, event: ProcEvent) {
        let at = self.started.elapsed();
        let records = &mut self.records;
        match event {
            ProcEvent::Fork {
                parent_pid,
                parent_tgid,
                child_pid,
                child_tgid,
            } => {
                if !self.threads.contains_key(&parent_pid)
                    && !self.threads.contains_key(&parent_tgid)
                {
                    return;
                }
                self.threads.insert(child_pid, child_tgid);
                if child_pid == child_tgid {
                    self.parents.insert(child_pid, parent_tgid);
                    let fork = Fork {
                        pid: child_pid,
                        ppid: parent_tgid,
                        at,
                    };
                    push(&mut records.forks, &mut records.dropped.forks, fork);
                }
            }
            ProcEvent::Exec { pid } => {
                let Some(tgid) = self.threads.get(&pid).copied() else {
                    return;
                };
                // The call was made by this task, or by another thread that took its pid.
                let caller = self.pending.remove(&pid).or_else(|| {
                    let tid = self
                        .pending
                        .keys()
                        .copied()
                        .find(|t| self.threads.get(t) == Some(&tgid))?;
                    self.pending.remove(&tid)
                });
                let exec = match caller {
                    Some(mut exec) => {
                        exec.pid = tgid;
                        exec.exe = std::fs::read_link(self.proc(tgid, "exe")).ok();
                        exec
                    }
                    None => self.unheld_exec(tgid),
                };
                let records = &mut self.records;
                push(&mut records.execs, &mut records.dropped.execs, exec);
            }
            ProcEvent::Uid {
                pid,
                tgid,
                ruid,
                euid,
            } => {
                if pid == tgid && self.threads.contains_key(&pid) {
                    let change = UidChange {
                        pid,
                        ruid,
                        euid,
                        at,
                    };
                    push(
                        &mut records.uid_changes,
                        &mut records.dropped.uid_changes,
                        change,
                    );
                }
            }
            ProcEvent::Exit {
                pid, tgid, code, ..
            } => {
                if self.threads.remove(&pid).is_none() {
                    return;
                }
                if let Some(failed) = self.pending.remove(&pid) {
                    push(
                        &mut records.failed_execs,
                        &mut records.dropped.failed_execs,
                        failed,
                    );
                }
                if pid == tgid {
                    self.parents.remove(&pid);
                    // A wait status: low 7 bits the killing signal, else the code above them.
                    let signal = (code & 0x7f) as i32;
                    let exit = Exit {
                        pid,
                        code: (signal == 0).then_some(((code >> 8) & 0xff) as i32),
                        signal: (signal != 0).then_some(signal),
                        at,
                    };
                    push(&mut records.exits, &mut records.dropped.exits, exit);
                }
            }
            ProcEvent::Other => {}
        }
    }

    /// An exec the listener did not hold (it never should): the best procfs still knows.
    fn unheld_exec(&self, pid: i32) -> Exec {
        let cmdline = std::fs::read(self.proc(pid, "cmdline")).ok();
        let argv: Vec<OsString> = cmdline
            .iter()
            .flat_map(|c| c.split(|b| *b == 0).filter(|a| !a.is_empty()))
            .map(|a| OsString::from_vec(a.to_vec()))
            .collect();
        let exe = std::fs::read_link(self.proc(pid, "exe")).ok();
        Exec {
            pid,
            ppid: self.parents.get(&pid).copied(),
            path: exe.clone().unwrap_or_default(),
            exe,
            argv_source: if cmdline.is_some() {
                ArgvSource::Procfs
            } else {
                ArgvSource::Missing
            },
            argv,
            argv_truncated: false,
            cwd: std::fs::read_link(self.proc(pid, "cwd")).ok(),
            uid: real_uid(&self.proc(pid, "status")),
            at: self.started.elapsed(),
        }
    }

    /// Records an exec call held by the listener; reads cwd and uid while the caller waits.
    pub(crate) fn on_exec_call(&mut self, request: ExecRequest) {
        let tid = request.tid;
        let cwd = std::fs::read_link(self.proc(tid, "cwd")).ok();
        let path = Path::new(std::ffi::OsStr::from_bytes(&request.path));
        let base = match request.dirfd {
            Some(dirfd) => std::fs::read_link(self.proc(tid, &format!("fd/{dirfd}"))).ok(),
            None => cwd.clone(),
        };
        // execveat(fd, "", AT_EMPTY_PATH) runs the file behind fd itself.
        let path = match base {
            Some(base) => absolute(&base, path),
            None => path.to_path_buf(),
        };
        let tgid = self.threads.get(&tid).copied().unwrap_or(tid);
        let exec = Exec {
            pid: tid,
            ppid: self.parents.get(&tgid).copied(),
            path,
            exe: None,
            argv: request.argv.into_iter().map(OsString::from_vec).collect(),
            argv_truncated: request.argv_truncated,
            argv_source: ArgvSource::ExecCall,
            cwd,
            uid: real_uid(&self.proc(tid, "status")),
            at: self.started.elapsed(),
        };
        if let Some(failed) = self.pending.insert(tid, exec) {
            let records = &mut self.records;
            push(
                &mut records.failed_execs,
                &mut records.dropped.failed_execs,
                failed,
            );
        }
    }

    /// The records so far; `closing` also counts calls still pending as failed.
    pub(crate) fn records(&self, closing: bool) -> Records {
        let mut records = self.records.clone();
        if closing {
            let mut pending: Vec<&Exec> = self.pending.values().collect();
            pending.sort_by_key(|e| e.at);
            for failed in pending {
                push(
                    &mut records.failed_execs,
                    &mut records.dropped.failed_execs,
                    failed.clone(),
                );
            }
        }
        records
    }
}

fn real_uid(status: &Path) -> Option<u32> {
    let status = std::fs::read_to_string(status).ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Judges the records into a log, removing the marker exec and its process.
pub(crate) fn into_log(
    mut records: Records,
    marker: &[OsString],
    self_test: super::log::ProcSelfTest,
) -> ProcessLog {
    let marker_pids: Vec<i32> = records
        .execs
        .iter()
        .chain(&records.failed_execs)
        .filter(|e| e.argv == marker)
        .map(|e| e.pid)
        .collect();
    let foreign = |pid: &i32| !marker_pids.contains(pid);
    records.execs.retain(|e| foreign(&e.pid));
    records.failed_execs.retain(|e| foreign(&e.pid));
    records.forks.retain(|f| foreign(&f.pid));
    records.exits.retain(|e| foreign(&e.pid));
    records.uid_changes.retain(|u| foreign(&u.pid));
    ProcessLog {
        execs: records.execs,
        failed_execs: records.failed_execs,
        forks: records.forks,
        exits: records.exits,
        uid_changes: records.uid_changes,
        dropped: records.dropped,
        lost: Default::default(),
        self_test,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tid: i32, argv: &[&str]) -> ExecRequest {
        ExecRequest {
            tid,
            path: argv[0].as_bytes().to_vec(),
            dirfd: None,
            argv: argv.iter().map(|a| a.as_bytes().to_vec()).collect(),
            argv_truncated: false,
        }
    }

    #[test]
    fn held_calls_are_confirmed_by_exec_events_and_replaced_ones_failed() {
        let proc_root = tempfile::tempdir().unwrap();
        let mut tracker = Tracker::new(100, Instant::now(), proc_root.path().to_path_buf());
        let fork = |parent, child| ProcEvent::Fork {
            parent_pid: parent,
            parent_tgid: parent,
            child_pid: child,
            child_tgid: child,
        };
        tracker.on_event(fork(100, 101));
        tracker.on_event(fork(7, 8)); // another tree of the host
        tracker.on_exec_call(call(101, &["/usr/local/bin/wc"]));
        tracker.on_exec_call(call(101, &["/usr/bin/wc", "-w"]));
        tracker.on_event(ProcEvent::Exec { pid: 101 });
        tracker.on_event(ProcEvent::Exec { pid: 8 });
        tracker.on_event(ProcEvent::Exit {
            pid: 101,
            tgid: 101,
            code: 3 << 8,
            signal: 17,
        });
        let records = tracker.records(true);
        assert_eq!(records.execs.len(), 1);
        assert_eq!(records.execs[0].argv, ["/usr/bin/wc", "-w"]);
        assert_eq!(records.execs[0].ppid, Some(100));
        assert_eq!(records.failed_execs.len(), 1);
        assert_eq!(
            records.forks,
            [Fork {
                pid: 101,
                ppid: 100,
                at: records.forks[0].at
            }]
        );
        assert_eq!(
            (records.exits[0].code, records.exits[0].signal),
            (Some(3), None)
        );
    }

    #[test]
    fn lists_stop_at_the_cap_and_count_the_rest() {
        let proc_root = tempfile::tempdir().unwrap();
        let mut tracker = Tracker::new(1, Instant::now(), proc_root.path().to_path_buf());
        for child in 2..(MAX_RECORDS as i32 + 12) {
            tracker.on_event(ProcEvent::Fork {
                parent_pid: 1,
                parent_tgid: 1,
                child_pid: child,
                child_tgid: child,
            });
        }
        let records = tracker.records(false);
        assert_eq!(records.forks.len(), MAX_RECORDS);
        assert_eq!(records.dropped.forks, 10);
    }
}
