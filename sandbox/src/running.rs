//! A run's handles once it has started: [`Running`] while its processes live, [`Stopped`]
//! once they are gone and only the upper layer and the sensors' logs are left.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::unistd::Pid;
use tokio::net::unix::pipe;
use tokio::sync::watch;

use crate::access::{AccessLog, AccessSensor};
use crate::error::{NoLog, SandboxError};
use crate::events::LabEvents;
use crate::lab::LabView;
use crate::mask::Visibility;
use crate::net::{NetSelfTest, NetSensor, NetworkLog, Sinkhole};
use crate::procs::{ProcSensor, ProcessLog};
use crate::teardown::{Guard, LimitHits, Termination};
use crate::witness::{Marker, OverlayWitness};

/// A live run.
#[derive(Debug)]
pub struct Running {
    pub(crate) id: String,
    pub(crate) started: Instant,
    pub(crate) view: LabView,
    pub(crate) init_pid: Pid,
    pub(crate) program_pid: i32,
    pub(crate) session_keyring: Option<i32>,
    pub(crate) stdin: Option<pipe::Sender>,
    pub(crate) stdout: Option<pipe::Receiver>,
    pub(crate) stderr: Option<pipe::Receiver>,
    pub(crate) events: Option<LabEvents>,
    pub(crate) lab_queue: Arc<crate::aside::ClosedAside<OwnedFd>>,
    pub(crate) termination: watch::Receiver<Option<Termination>>,
    pub(crate) wall_clock_hit: Arc<AtomicBool>,
    pub(crate) marker: Marker,
    pub(crate) marker_errno: i32,
    pub(crate) network: NetSensor,
    pub(crate) visibility: Visibility,
    pub(crate) guard: Guard,
}

impl Running {
    /// Who the program runs as and what of the host it can see.
    pub fn visibility(&self) -> &Visibility {
        &self.visibility
    }
    /// What the run's upper layer holds now, path by path ([`crate::upper_snapshot`]):
    /// what a shared run compares between its blocks to time changes no event timed.
    pub fn upper_snapshot(&self, max: usize) -> Option<crate::UpperSnapshot> {
        let dir = self.guard.run_dir.as_ref()?;
        crate::witness::upper_snapshot(&dir.upper(), max)
    }

    /// The state of each sandbox path in `paths` in the run's upper layer now, read safely
    /// while the program runs ([`crate::layer_states`]).
    pub fn layer_states(&self, paths: &[PathBuf]) -> Vec<crate::LayerState> {
        match self.guard.run_dir.as_ref() {
            Some(dir) => crate::witness::layer_states(&dir.upper(), paths),
            None => paths
                .iter()
                .map(|_| crate::LayerState::Unreadable {
                    error: "no run directory".into(),
                })
                .collect(),
        }
    }

    /// The run's sinkhole (its log so far and socket snapshots); `None` when the network
    /// sensor is off or could not start (the stopped run says why).
    pub fn network(&self) -> Option<&Sinkhole> {
        self.network.sinkhole()
    }
    pub fn id(&self) -> &str {
        &self.id
    }
    pub fn started(&self) -> Instant {
        self.started
    }
    pub fn lab_view(&self) -> &LabView {
        &self.view
    }
    /// The sandbox init's pid in the host's pid namespace (for process sensors).
    pub fn init_pid(&self) -> Pid {
        self.init_pid
    }
    /// Connections into the run's network namespace (to reach a server listening inside).
    pub fn dialer(&self) -> Result<crate::net::NamespaceDialer, crate::net::DialError> {
        crate::net::NamespaceDialer::open(std::path::Path::new("/proc"), self.init_pid.as_raw())
    }
    /// What the access sensor has kept so far; `None` when it is not running.
    pub fn accesses(&self) -> Option<AccessLog> {
        self.guard.accesses.as_ref().map(AccessSensor::snapshot)
    }
    /// Told each time the access sensor's log grows (`None` when it is not running): what
    /// a caller waiting for an access awaits, between looks at [`Running::accesses`].
    pub fn accesses_grew(&self) -> Option<Arc<tokio::sync::Notify>> {
        self.guard.accesses.as_ref().map(AccessSensor::grew)
    }
    /// What the process sensor has seen so far; `None` when it is off.
    pub fn processes(&self) -> Option<ProcessLog> {
        self.guard.procs.as_ref().map(ProcSensor::snapshot)
    }
    /// The program's pid inside the sandbox.
    pub fn program_pid(&self) -> i32 {
        self.program_pid
    }
    /// The serial of the fresh session keyring the program runs in (joined as its uid before
    /// exec; `None` when the kernel has no keyrings).
    pub fn session_keyring(&self) -> Option<i32> {
        self.session_keyring
    }
    pub fn take_stdin(&mut self) -> Option<pipe::Sender> {
        self.stdin.take()
    }
    pub fn take_stdout(&mut self) -> Option<pipe::Receiver> {
        self.stdout.take()
    }
    pub fn take_stderr(&mut self) -> Option<pipe::Receiver> {
        self.stderr.take()
    }
    /// The live lab event stream.
    pub fn take_events(&mut self) -> Option<LabEvents> {
        self.events.take()
    }

    /// How the program ended, if it has.
    pub fn termination(&self) -> Option<Termination> {
        *self.termination.borrow()
    }

    /// How often the kernel has refused the run something so far.
    pub fn limit_hits(&self) -> LimitHits {
        self.guard
            .cgroup
            .as_ref()
            .map(LimitHits::of)
            .unwrap_or_default()
    }

    /// Processes of the run alive now (the monitor and init included), from its cgroup.
    pub fn process_count(&self) -> usize {
        self.guard
            .cgroup
            .as_ref()
            .and_then(|c| c.pids().ok())
            .map_or(0, |p| p.len())
    }

    /// CPU time the run's processes have used so far: the sum of their threads' time on a
    /// CPU (`/proc/PID/task/TID/schedstat`, in nanoseconds). It stands still exactly when no
    /// task of the run ran; a task that exits takes its share with it, so compare readings
    /// for change, not for growth.
    pub fn cpu_time(&self) -> Duration {
        let mut total = 0u64;
        for pid in self.pids() {
            let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
            for task in tasks.into_iter().flatten().flatten() {
                total = total.wrapping_add(task_cpu_ns(&task.path()).unwrap_or(0));
            }
        }
        Duration::from_nanos(total)
    }

    /// The run's processes now (host pids).
    pub fn pids(&self) -> Vec<i32> {
        self.guard
            .cgroup
            .as_ref()
            .and_then(|c| c.pids().ok())
            .unwrap_or_default()
    }

    /// Whether the run may still act on its own: a thread of any of its processes is
    /// running, waiting for a core or in uninterruptible I/O, or a process not in `known`
    /// is asleep on a timer (`nanosleep`, `clock_nanosleep`, `pause`). A process blocked
    /// waiting for input (a pipe, a socket, a child, a lock) acts only once something else
    /// has, which the run's other signs show; a persistent helper such as `git cat-file
    /// --batch` waits so, and so does the server between requests. A thread waiting for a
    /// core has used no CPU time yet: on a loaded host its run would look still without
    /// this.
    pub fn at_work(&self, known: &[i32]) -> bool {
        self.pids()
            .into_iter()
            .any(|pid| process_at_work(pid, !known.contains(&pid)))
    }

    /// Whether an effect of the run is still waiting for its sensor: lab events unread in
    /// the kernel's queue, or a packet the sinkhole has not logged yet.
    pub fn sensors_pending(&self) -> bool {
        let lab = crate::sys::queued_bytes(self.lab_queue.as_fd()).unwrap_or(1) > 0;
        let accesses = self
            .guard
            .accesses
            .as_ref()
            .is_some_and(AccessSensor::pending);
        lab || accesses || self.network().is_some_and(Sinkhole::pending)
    }

    /// Waits until the program ends or the wall-clock limit kills the run.
    pub async fn wait(&mut self) -> Termination {
        match self.termination.wait_for(Option::is_some).await {
            Ok(value) => value.unwrap_or(Termination::Lost),
            Err(_) => Termination::Lost,
        }
    }

    /// Kills every process of the run and keeps the run directory for the witness.
    pub fn stop(mut self) -> Result<Stopped, SandboxError> {
        let termination = self.termination();
        let killed = self.guard.kill();
        let network = std::mem::replace(&mut self.network, NetSensor::Off).finish();
        let termination = match termination {
            None if self.wall_clock_hit.load(Ordering::SeqCst) => {
                Some(Termination::WallClockExceeded)
            }
            other => other,
        };
        let stopped = Stopped {
            id: self.id.clone(),
            marker: self.marker.clone(),
            marker_errno: self.marker_errno,
            termination,
            limit_hits: self.guard.limit_hits,
            network,
            guard: std::mem::replace(&mut self.guard, Guard::new(String::new(), false)),
        };
        killed.map(|()| stopped)
    }
}

/// A run whose processes are all gone; its upper layer is still there for the witness.
#[derive(Debug)]
pub struct Stopped {
    pub(crate) id: String,
    pub(crate) marker: Marker,
    pub(crate) marker_errno: i32,
    pub(crate) termination: Option<Termination>,
    pub(crate) limit_hits: LimitHits,
    pub(crate) network: Result<NetworkLog, NoLog>,
    pub(crate) guard: Guard,
}

impl Stopped {
    /// What the network sensor saw; `None` when it did not run ([`Stopped::net_self_test`]
    /// says why).
    pub fn network_log(&self) -> Option<&NetworkLog> {
        self.network.as_ref().ok()
    }
    /// Whether the network sensor was live: its marker lookup and request were logged.
    pub fn net_self_test(&self) -> NetSelfTest {
        match &self.network {
            Ok(log) => log.self_test.clone(),
            Err(reason) => NetSelfTest::Absent {
                reason: reason.to_string(),
            },
        }
    }
    pub fn id(&self) -> &str {
        &self.id
    }
    /// How the program ended before the stop; `None` if it was still running.
    pub fn termination(&self) -> Option<Termination> {
        self.termination
    }
    pub fn limit_hits(&self) -> LimitHits {
        self.limit_hits
    }
    /// The marker the init wrote; `Err(errno)` when writing it failed.
    pub fn marker(&self) -> Result<&Marker, Errno> {
        match self.marker_errno {
            0 => Ok(&self.marker),
            errno => Err(Errno::from_raw(errno)),
        }
    }
    /// What the access sensor saw of the run (every file closed anywhere in its root and
    /// `/proc`); `Err` says why it did not run.
    pub fn accesses(&self) -> Result<&AccessLog, NoLog> {
        match &self.guard.accesses_log {
            Some(Ok(log)) => Ok(log),
            Some(Err(reason)) => Err(reason.clone()),
            None => Err(NoLog::NotRun("access")),
        }
    }
    /// The process sensor's final log; `None` when it was off.
    pub fn processes(&self) -> Option<&ProcessLog> {
        self.guard.procs_log.as_ref()
    }
    /// The run's upper layer, on the host.
    pub fn upper_dir(&self) -> PathBuf {
        self.guard
            .run_dir
            .as_ref()
            .map(|d| d.upper())
            .unwrap_or_default()
    }
    /// The run directory on the host.
    pub fn run_dir(&self) -> PathBuf {
        self.guard
            .run_dir
            .as_ref()
            .map(|d| d.path().to_path_buf())
            .unwrap_or_default()
    }
    /// The lower layers the overlay was built from, topmost first.
    pub fn lower_dirs(&self) -> Vec<PathBuf> {
        self.guard
            .run_dir
            .as_ref()
            .map(|d| vec![d.lab_layer(), d.mask_layer(), d.lower()])
            .unwrap_or_default()
    }
    /// The fs write witness of this run, expecting the run's marker.
    pub fn witness(&self) -> OverlayWitness {
        OverlayWitness::new(self.upper_dir(), self.lower_dirs()).expect_marker(self.marker.clone())
    }
    /// Unmounts and removes the run directory (as dropping does), reporting failures.
    pub fn remove(mut self) -> Result<(), SandboxError> {
        self.guard.release()
    }
}

/// A thread's time on a CPU in nanoseconds: from `schedstat`, or, on a kernel without
/// scheduler statistics, from the user and system clock ticks of `stat`.
fn task_cpu_ns(task: &Path) -> Option<u64> {
    if let Ok(schedstat) = std::fs::read_to_string(task.join("schedstat")) {
        return schedstat.split_whitespace().next()?.parse().ok();
    }
    let stat = std::fs::read_to_string(task.join("stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(11);
    let (user, system): (u64, u64) = (fields.next()?.parse().ok()?, fields.next()?.parse().ok()?);
    // Clock ticks are 100 a second on Linux's user-visible interface (USER_HZ).
    Some((user + system) * 10_000_000)
}

/// Whether some thread of `pid` is running (or runnable, or in uninterruptible I/O), or,
/// with `timers`, asleep on a timer (see [`Running::at_work`]); a process that cannot be
/// read (it has just exited) is not.
fn process_at_work(pid: i32, timers: bool) -> bool {
    const TIMERS: [libc::c_long; 3] = [
        libc::SYS_nanosleep,
        libc::SYS_clock_nanosleep,
        libc::SYS_pause,
    ];
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // The state follows the command name, which may itself hold parentheses.
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next());
        match state {
            Some('R' | 'D') => true,
            // A kernel that does not say which call a task sleeps in: asleep on a timer,
            // for all vac knows.
            Some('S') if timers => match std::fs::read_to_string(task.path().join("syscall")) {
                Ok(call) => {
                    let number = call.split_whitespace().next().and_then(|n| n.parse().ok());
                    number.is_some_and(|n: libc::c_long| TIMERS.contains(&n))
                }
                Err(_) => true,
            },
            _ => false,
        }
    })
}
