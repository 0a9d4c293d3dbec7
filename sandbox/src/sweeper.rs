//! The sweeper: what a vac process's runs leave on the host when it dies before their
//! teardown (SIGKILL), removed at once rather than at the next start.
//!
//! A run's mounts live in vac's own mount namespace and go with it; its processes die with
//! their lifeline. What stays is host state only a live process can remove: the run
//! directory and its owner stamp under the run root, and the run's empty cgroups. The
//! sweeper is a process of its own, forked while vac has one thread, in a session of its
//! own, holding the read end of a pipe whose write end only vac holds: when vac ends, however
//! it ends, the pipe reads end-of-file, and the sweeper sweeps every run whose owner is
//! dead, as a start does ([`crate::rundir::sweep_stale`]), waiting for each run's cgroups to
//! empty before it removes them. After a clean exit there is nothing to sweep.

use std::io::Read;
use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::unistd::ForkResult;

use crate::cgroup::CgroupRoots;
use crate::rundir::{RunDirError, sweep_stale};

/// How long the sweeper waits for a dead vac's run processes to leave their cgroups.
const DRAIN: Duration = Duration::from_secs(30);

/// Starts the sweeper for runs under `run_root` with cgroups under `cgroup_root` (the
/// sandbox's defaults: [`crate::DEFAULT_RUN_ROOT`], [`crate::DEFAULT_CGROUP_ROOT`]). Call it first, while the process has
/// one thread and before it enters its own mount namespace (the sweeper stays in the
/// host's, where the run directories are). Needs root.
pub fn start_sweeper(run_root: &Path, cgroup_root: &Path) -> Result<(), RunDirError> {
    crate::rundir::one_thread()?;
    let (read, write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|source| RunDirError::Mount {
            what: "open the sweeper's pipe",
            path: run_root.to_path_buf(),
            source,
        })?;
    let vac = nix::unistd::getpid();
    match crate::sys::fork_alone().map_err(|source| RunDirError::Mount {
        what: "fork the sweeper",
        path: run_root.to_path_buf(),
        source,
    })? {
        ForkResult::Parent { .. } => {
            drop(read);
            // Held for the life of the process: its end is the sweeper's signal.
            std::mem::forget(write);
            Ok(())
        }
        ForkResult::Child => {
            drop(write);
            // vac: the pipe's end comes while it is still exiting (its files close before
            // it is a zombie), when its stamp still reads as alive. Its pidfd turns
            // readable once it has exited.
            let owner = crate::sys::pidfd_open(vac).ok();
            // Out of vac's session and off its standard streams, so that whoever reads
            // vac's output sees it end when vac ends.
            let _ = nix::unistd::setsid();
            crate::sys::silence_stdio();
            // What it is in `ps`, not vac's command line (and the server's, which may follow
            // `--`): it may outlive vac by the time a dead run's cgroups take to drain.
            let _ = crate::sys::set_cmdline("vac sweeper");
            let mut pipe = std::fs::File::from(read);
            let mut byte = [0u8; 1];
            while matches!(pipe.read(&mut byte), Ok(n) if n > 0) {}
            if let Some(owner) = &owner {
                let mut fds = [nix::poll::PollFd::new(
                    owner.as_fd(),
                    nix::poll::PollFlags::POLLIN,
                )];
                let wait =
                    nix::poll::PollTimeout::try_from(DRAIN).unwrap_or(nix::poll::PollTimeout::MAX);
                let _ = nix::poll::poll(&mut fds, wait);
            }
            sweep(run_root, cgroup_root);
            crate::sys::exit_now(0)
        }
    }
}

/// Sweeps every run of a dead owner, and then its cgroups once they are empty.
fn sweep(run_root: &Path, cgroup_root: &Path) {
    let Ok(roots) = CgroupRoots::detect(cgroup_root) else {
        sweep_stale(run_root);
        return;
    };
    let mut pending: Vec<String> = sweep_stale(run_root);
    let deadline = Instant::now() + DRAIN;
    while !pending.is_empty() && Instant::now() < deadline {
        pending.retain(|run| roots.existing(run).remove().is_err());
        if !pending.is_empty() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
