//! Teardown that always happens: the [`Guard`] a run owns kills its process tree, finishes
//! its sensors, removes its cgroup and unmounts its run directory, whether the run ends
//! by [`Running::stop`](crate::Running::stop), by being dropped, or by an error halfway
//! through its setup.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::errno::Errno;
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::watch;

use crate::access::{AccessLog, AccessSensor};
use crate::cgroup::Cgroup;
use crate::error::{NoLog, SandboxError};
use crate::message::{MESSAGE_LEN, Message};
use crate::procs::{ProcSensor, ProcessLog};
use crate::rundir::RunDir;
use crate::sys;

/// Tears a run down whatever happened: kills the tree, removes the cgroup, unmounts.
#[derive(Debug)]
pub(crate) struct Guard {
    pub(crate) id: String,
    pub(crate) keep: bool,
    pub(crate) run_dir: Option<RunDir>,
    pub(crate) cgroup: Option<Cgroup>,
    pub(crate) monitor: Option<Pid>,
    pub(crate) ctl: Option<OwnedFd>,
    pub(crate) init: Option<Arc<OwnedFd>>,
    pub(crate) tasks: Vec<tokio::task::JoinHandle<()>>,
    pub(crate) events_close: Option<Arc<tokio::sync::Notify>>,
    pub(crate) limit_hits: LimitHits,
    pub(crate) procs: Option<ProcSensor>,
    pub(crate) procs_log: Option<ProcessLog>,
    pub(crate) accesses: Option<AccessSensor>,
    /// The access sensor's final log, or why it did not run.
    pub(crate) accesses_log: Option<Result<AccessLog, NoLog>>,
    /// The loop device of the lab's image, held until the run's mount of it is made (it
    /// detaches itself once this and the mount are gone).
    pub(crate) lab_device: Option<OwnedFd>,
}

impl Guard {
    pub(crate) fn new(id: String, keep: bool) -> Guard {
        Guard {
            id,
            keep,
            run_dir: None,
            cgroup: None,
            monitor: None,
            ctl: None,
            init: None,
            tasks: Vec::new(),
            events_close: None,
            limit_hits: LimitHits::default(),
            procs: None,
            procs_log: None,
            accesses: None,
            accesses_log: None,
            lab_device: None,
        }
    }

    /// Reads the status pipe for the program's end and enforces the wall clock.
    pub(crate) fn watch(
        &mut self,
        status: OwnedFd,
        wall_clock: Duration,
    ) -> std::io::Result<(watch::Receiver<Option<Termination>>, Arc<AtomicBool>)> {
        let (sender, receiver) = watch::channel(None);
        let hit = Arc::new(AtomicBool::new(false));
        let mut status = pipe::Receiver::from_owned_fd(status)?;
        let reader_hit = Arc::clone(&hit);
        self.tasks.push(tokio::spawn(async move {
            let mut bytes = [0u8; MESSAGE_LEN];
            while status.read_exact(&mut bytes).await.is_ok() {
                let ended = match Message::decode(&bytes) {
                    Some(Message::Exited(code)) => Termination::Exited(code),
                    Some(Message::Signaled(signal)) => Termination::Signaled(signal),
                    _ => continue,
                };
                let _ = sender.send(Some(ended));
            }
            if sender.borrow().is_none() {
                let lost = if reader_hit.load(Ordering::SeqCst) {
                    Termination::WallClockExceeded
                } else {
                    Termination::Lost
                };
                let _ = sender.send(Some(lost));
            }
        }));
        if let Some(pidfd) = self.init.clone() {
            let watchdog_hit = Arc::clone(&hit);
            self.tasks.push(tokio::spawn(async move {
                tokio::time::sleep(wall_clock).await;
                watchdog_hit.store(true, Ordering::SeqCst);
                let _ = sys::pidfd_send_signal(pidfd.as_fd(), nix::sys::signal::Signal::SIGKILL);
            }));
        }
        Ok((receiver, hit))
    }

    /// Kills every process of the run and removes its cgroup.
    pub(crate) fn kill(&mut self) -> Result<(), SandboxError> {
        self.ctl = None; // the init's lifeline
        if let Some(pidfd) = self.init.take() {
            match sys::pidfd_send_signal(pidfd.as_fd(), nix::sys::signal::Signal::SIGKILL) {
                Ok(()) | Err(Errno::ESRCH) => {}
                Err(errno) => {
                    return Err(SandboxError::Host {
                        what: "kill the sandbox init",
                        errno,
                    });
                }
            }
        }
        if let Some(monitor) = self.monitor.take() {
            // The monitor exits once the init is reaped, and the init only finishes dying after
            // the kernel has killed and reaped every process of its pid namespace.
            while let Err(Errno::EINTR) = nix::sys::wait::waitpid(monitor, None) {}
        }
        // Every exit of the run is queued on the connector now: the log is complete.
        if let Some(mut procs) = self.procs.take() {
            self.procs_log = Some(procs.finish());
        }
        // Every file of the run is closed now: its last accesses are queued.
        if let Some(mut accesses) = self.accesses.take() {
            self.accesses_log = Some(Ok(accesses.finish()));
        }
        for task in self.tasks.drain(..) {
            task.abort();
        }
        let Some(cgroup) = self.cgroup.take() else {
            return Ok(());
        };
        self.limit_hits = LimitHits::of(&cgroup);
        let survivors = cgroup.pids()?;
        for pid in &survivors {
            let _ = nix::sys::signal::kill(Pid::from_raw(*pid), nix::sys::signal::Signal::SIGKILL);
        }
        if !survivors.is_empty() {
            return Err(SandboxError::Survivors {
                run: self.id.clone(),
                pids: survivors,
            });
        }
        cgroup.remove()?;
        Ok(())
    }

    pub(crate) fn release(&mut self) -> Result<(), SandboxError> {
        if let Some(close) = self.events_close.take() {
            close.notify_one();
        }
        if let Some(mut run_dir) = self.run_dir.take() {
            run_dir.remove(self.keep)?;
        }
        Ok(())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Err(error) = self.kill() {
            tracing::warn!(run = %self.id, %error, "sandbox teardown");
        }
        if let Err(error) = self.release() {
            tracing::warn!(run = %self.id, %error, "sandbox teardown");
        }
    }
}

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    Exited(i32),
    Signaled(i32),
    /// The wall-clock limit ran out and the run was killed.
    WallClockExceeded,
    /// The sandbox's init vanished without reporting the program's end.
    Lost,
}

/// How often the kernel refused the run something because of a limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitHits {
    pub pids: u64,
    pub memory: u64,
}

impl LimitHits {
    pub(crate) fn of(cgroup: &Cgroup) -> LimitHits {
        LimitHits {
            pids: cgroup.pids_limit_hits().unwrap_or(0),
            memory: cgroup.memory_limit_hits().unwrap_or(0),
        }
    }
}
