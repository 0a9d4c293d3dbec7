//! Reads anywhere in the sandbox's root: a fanotify group with mount marks on the run's
//! overlay root and on its `/proc`, so that a file the program opened and closed anywhere it
//! can see — `/etc/passwd`, `/proc/self/environ`, its own installation — is reported with
//! the process that did it, not only files of the lab ([`crate::LabEvents`]).
//!
//! The marks are per mount and both mounts belong to the run alone, so the group hears the
//! run's processes and nothing of the host. Events are close events (a file opened without
//! write access was closed: it was read; one opened for writing was closed), the same sense
//! as the lab's `close_nowrite`. vac's own opens through `/proc/<init>/root` are left out by
//! pid. The init's close of the marker it writes is the self-test ([`AccessLog::saw`]). The
//! log keeps what the run's filter asks for ([`SandboxBuilder::access_filter`]: by default
//! everything) and the marker, and counts the rest; it is bounded ([`MAX_ACCESSES`]): what is
//! past it is counted, and a kernel queue overflow is recorded, so the sensor can say it was
//! not complete.
//!
//! [`SandboxBuilder::access_filter`]: crate::SandboxBuilder::access_filter

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::fanotify::{EventFFlags, Fanotify, InitFlags, MarkFlags, MaskFlags};

use crate::aside::ClosedAside;

/// Which accesses a run keeps, by path in the sandbox's view.
pub type AccessFilter = fn(&Path) -> bool;

/// The most accesses one run keeps; the ones beyond are counted in [`AccessLog::dropped`].
pub const MAX_ACCESSES: usize = 65_536;

/// One file closed by a process of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// The path in the sandbox's view.
    pub path: PathBuf,
    /// The process, in the host's pid namespace.
    pub pid: i32,
    /// Whether the file had been opened for writing.
    pub wrote: bool,
    /// Time since the sandbox was spawned.
    pub since_start: Duration,
}

/// What the sensor saw of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessLog {
    /// The accesses kept: the marker's and those the filter passed.
    pub accesses: Vec<Access>,
    /// Every access seen, kept or not.
    pub seen: u64,
    /// Accesses whose file could not be named: the kernel opens it again when the event is
    /// read, which fails for a `/proc/<pid>/…` file of a process that has exited since (a
    /// short-lived `cat /proc/self/environ`).
    pub unnamed: u64,
    /// Accesses past [`MAX_ACCESSES`], not kept.
    pub dropped: u64,
    /// The kernel's queue overflowed: accesses were lost unseen.
    pub overflowed: bool,
    /// Why reading the group stopped early, if it did.
    pub failed: Option<String>,
}

impl AccessLog {
    /// Whether a close of `path` (written, when `wrote`) was seen: the self-test asks for
    /// the marker the init wrote.
    pub fn saw(&self, path: &Path, wrote: bool) -> bool {
        self.accesses
            .iter()
            .any(|a| a.path == path && a.wrote == wrote)
    }

    /// Why the log cannot back an absence, if it cannot.
    pub fn incomplete(&self) -> Option<String> {
        if let Some(failed) = &self.failed {
            return Some(failed.clone());
        }
        if self.overflowed {
            return Some("the kernel's fanotify queue overflowed".into());
        }
        (self.dropped > 0).then(|| {
            format!(
                "{} accesses past the log's {MAX_ACCESSES} were not kept",
                self.dropped
            )
        })
    }
}

/// The running sensor: a thread reading the group until [`AccessSensor::finish`].
#[derive(Debug)]
pub(crate) struct AccessSensor {
    /// Closed aside ([`crate::aside`]): a group's close waits for a grace period.
    group: Arc<ClosedAside<Fanotify>>,
    /// The write end of the reader's stop pipe: closing it wakes the reader to drain what
    /// is queued and end.
    stop: Option<OwnedFd>,
    log: Arc<Mutex<AccessLog>>,
    /// Told each time the reader has added to the log.
    grew: Arc<tokio::sync::Notify>,
    thread: Option<JoinHandle<()>>,
}

impl AccessSensor {
    /// Marks the mounts of the sandbox's root and of its `/proc`, both reached through
    /// `host_root` (`/proc/<init>/root`), and starts reading.
    pub(crate) fn start(
        host_root: &Path,
        started: Instant,
        filter: AccessFilter,
        marker: PathBuf,
    ) -> Result<AccessSensor, Errno> {
        let group = Fanotify::init(
            InitFlags::FAN_CLASS_NOTIF | InitFlags::FAN_CLOEXEC | InitFlags::FAN_NONBLOCK,
            EventFFlags::O_RDONLY | EventFFlags::O_LARGEFILE | EventFFlags::O_CLOEXEC,
        )?;
        let mask = MaskFlags::FAN_CLOSE_WRITE | MaskFlags::FAN_CLOSE_NOWRITE;
        let flags = MarkFlags::FAN_MARK_ADD | MarkFlags::FAN_MARK_MOUNT;
        let cwd = std::fs::File::open("/").map_err(|e| io_errno(&e))?;
        for mount in [host_root.to_path_buf(), host_root.join("proc")] {
            group.mark(flags, mask, cwd.as_fd(), Some(mount.as_path()))?;
        }
        let group = Arc::new(ClosedAside::new(group));
        let (reader_stop, stop) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let log = Arc::new(Mutex::new(AccessLog::default()));
        let reader = Arc::clone(&group);
        let reader_log = Arc::clone(&log);
        let grew = Arc::new(tokio::sync::Notify::new());
        let reader_grew = Arc::clone(&grew);
        let prefix = std::fs::read_link(host_root).unwrap_or_else(|_| PathBuf::from("/"));
        let thread = std::thread::Builder::new()
            .name("vac-access".into())
            .spawn(move || {
                let keep = |path: &Path| path == marker || filter(path);
                let log = (&*reader_log, &*reader_grew);
                read_group(&reader, &prefix, started, keep, reader_stop, log)
            })
            .map_err(|e| io_errno(&e))?;
        Ok(AccessSensor {
            group,
            grew,
            stop: Some(stop),
            log,
            thread: Some(thread),
        })
    }

    /// What the sensor has kept so far.
    pub(crate) fn snapshot(&self) -> AccessLog {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// What is told each time the log grows: a waiter for an access need not poll.
    pub(crate) fn grew(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.grew)
    }

    /// Whether accesses wait unread in the kernel's queue.
    pub(crate) fn pending(&self) -> bool {
        crate::sys::queued_bytes(self.group.as_fd()).unwrap_or(1) > 0
    }

    /// Reads what is still queued and returns the log. Call it once the run's processes are
    /// gone: their last closes are queued by then.
    pub(crate) fn finish(&mut self) -> AccessLog {
        self.stop = None;
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
            log.failed = Some("the access reader panicked".into());
        }
        let log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        log.clone()
    }
}

fn io_errno(error: &std::io::Error) -> Errno {
    Errno::from_raw(error.raw_os_error().unwrap_or(Errno::EIO as i32))
}

fn read_group(
    group: &Fanotify,
    prefix: &Path,
    started: Instant,
    keep: impl Fn(&Path) -> bool,
    stop: OwnedFd,
    (log, grew): (&Mutex<AccessLog>, &tokio::sync::Notify),
) {
    let own = std::process::id() as i32;
    let mut stopping = false;
    loop {
        // Once told to stop (the stop pipe's write end closed: the run is gone), drain what
        // is queued and end.
        if !stopping {
            let mut polled = [
                PollFd::new(group.as_fd(), PollFlags::POLLIN),
                PollFd::new(stop.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut polled, PollTimeout::NONE) {
                Ok(_) => {}
                Err(Errno::EINTR) => continue,
                Err(errno) => {
                    fail(log, format!("poll the fanotify group: {errno}"));
                    return;
                }
            }
            stopping = polled[1].revents().is_some_and(|r| !r.is_empty());
        }
        let events = match group.read_events() {
            Ok(events) => events,
            Err(Errno::EAGAIN) if stopping => return,
            Err(Errno::EAGAIN | Errno::EINTR) => continue,
            Err(errno) => {
                fail(log, format!("read the fanotify group: {errno}"));
                return;
            }
        };
        let at = started.elapsed();
        let mut seen = Vec::with_capacity(events.len());
        let (mut overflowed, mut all, mut unnamed) = (false, 0u64, 0u64);
        for event in &events {
            if event.mask().contains(MaskFlags::FAN_Q_OVERFLOW) {
                overflowed = true;
                continue;
            }
            let Some(fd) = event.fd() else {
                unnamed += 1;
                continue;
            };
            if event.pid() == own {
                continue;
            }
            let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
            let Ok(path) = std::fs::read_link(link) else {
                unnamed += 1;
                continue;
            };
            all += 1;
            let path = in_view(&path, prefix);
            if !keep(&path) {
                continue;
            }
            seen.push(Access {
                path,
                pid: event.pid(),
                wrote: event.mask().contains(MaskFlags::FAN_CLOSE_WRITE),
                since_start: at,
            });
        }
        drop(events); // closes the events' descriptors
        let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
        log.overflowed |= overflowed;
        log.seen += all;
        log.unnamed += unnamed;
        for access in seen {
            if log.accesses.len() < MAX_ACCESSES {
                log.accesses.push(access);
            } else {
                log.dropped += 1;
            }
        }
        drop(log);
        grew.notify_waiters();
    }
}

fn fail(log: &Mutex<AccessLog>, reason: String) {
    log.lock().unwrap_or_else(|p| p.into_inner()).failed = Some(reason);
}

/// The sandbox's view of a path the host's `/proc/self/fd` link gave: the kernel names a
/// file of another mount namespace from that namespace's root, which is the sandbox's own
/// after its pivot; where the root itself still shows a host prefix, that prefix goes.
fn in_view(path: &Path, prefix: &Path) -> PathBuf {
    if prefix != Path::new("/")
        && let Ok(below) = path.strip_prefix(prefix)
    {
        return Path::new("/").join(below);
    }
    path.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_prefix_of_the_root_is_taken_off() {
        let prefix = Path::new("/run/vac/run-1/merged");
        assert_eq!(
            in_view(Path::new("/run/vac/run-1/merged/etc/passwd"), prefix),
            Path::new("/etc/passwd")
        );
        assert_eq!(
            in_view(Path::new("/etc/passwd"), Path::new("/")),
            Path::new("/etc/passwd")
        );
    }

    #[test]
    fn an_incomplete_log_says_why() {
        let mut log = AccessLog::default();
        assert_eq!(log.incomplete(), None);
        log.dropped = 3;
        assert!(log.incomplete().unwrap().contains("3 accesses"));
        log.overflowed = true;
        assert!(log.incomplete().unwrap().contains("overflowed"));
        log.failed = Some("read failed".into());
        assert_eq!(log.incomplete().as_deref(), Some("read failed"));
    }
}
