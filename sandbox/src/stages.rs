//! The three processes of a run, as named stages: monitor, init, program.
//!
//! ```text
//! parent (vac) ──fork──▶ monitor: joins the cgroup, unshares namespaces
//!                           └─fork──▶ init (pid 1): builds the root, writes the marker,
//!                                        reaps every process, lives until the parent goes
//!                                        └─fork──▶ program: drops privileges, joins a
//!                                                  fresh session keyring, installs the
//!                                                  refused-calls filter, execs
//! ```
//! The init is our code and never execs: when it dies, the kernel kills every process of the
//! pid namespace, daemons included. Its only lifeline is the control pipe: when the parent
//! closes it (teardown, or the parent crashing), the init exits and takes the run with it.
//!
//! This code runs after `fork` in a copy of a possibly multi-threaded parent: it uses only
//! system calls and allocation (glibc makes malloc safe after fork), never a lock that other
//! threads of the parent could have held.

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sched::CloneFlags;
use nix::sys::resource::{Resource, setrlimit};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Gid, Pid, Uid};

use crate::message::{Message, Stage};
use crate::rootfs::{self, RootfsPlan};
use crate::sys;

/// Descriptor numbers inside the monitor and init.
pub(crate) const CTL_FD: RawFd = 3;
pub(crate) const STATUS_FD: RawFd = 4;
const STDIO_FDS: [RawFd; 3] = [5, 6, 7];
/// In the program, before exec: where a failed stage is reported.
const EXEC_ERROR_FD: RawFd = 3;
/// The process sensor's channel for the exec listener: in the monitor and init, and in the
/// program before exec.
const EXEC_CHANNEL_FD: RawFd = 8;
const EXEC_CHANNEL_PROGRAM_FD: RawFd = 4;
/// The parent's "go" byte: with or without the network self-test.
pub(crate) const GO_WITH_NET_PROBE: u8 = b'G';
pub(crate) const GO: [u8; 2] = [GO_WITH_NET_PROBE, b'g'];

/// Everything the sandbox's processes need, prepared by the parent before fork.
#[derive(Debug)]
pub(crate) struct ChildPlan {
    pub(crate) cgroup_procs: Vec<PathBuf>,
    pub(crate) rootfs: RootfsPlan,
    pub(crate) hostname: String,
    pub(crate) marker_path: PathBuf,
    pub(crate) marker_content: Vec<u8>,
    pub(crate) program: CString,
    pub(crate) argv: Vec<CString>,
    pub(crate) envp: Vec<CString>,
    pub(crate) cwd: PathBuf,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) rlimits: Vec<(Resource, u64)>,
    /// The process sensor's marker exec; when set, the program stage installs the exec filter.
    pub(crate) exec_marker: Option<crate::procs::arm::ExecMarker>,
    /// The network self-test the init sends after the marker, when the sinkhole runs.
    pub(crate) net_probe: Option<crate::net::probe::NetProbe>,
}

/// The descriptors the parent hands to the monitor, in [`CTL_FD`], [`STATUS_FD`], stdio order.
pub(crate) struct ChildFds {
    pub(crate) ctl: OwnedFd,
    pub(crate) status: OwnedFd,
    pub(crate) stdin: OwnedFd,
    pub(crate) stdout: OwnedFd,
    pub(crate) stderr: OwnedFd,
    /// The process sensor's exec-listener channel, at [`EXEC_CHANNEL_FD`].
    pub(crate) exec_channel: Option<OwnedFd>,
}

fn send(message: Message) {
    // A lost message shows up in the parent as a closed pipe; nothing better to do here.
    let _ = nix::unistd::write(fd(STATUS_FD), &message.encode());
}

fn fd(raw: RawFd) -> std::os::fd::BorrowedFd<'static> {
    sys::borrow_fixed(raw)
}

fn fail(stage: Stage, errno: Errno) -> ! {
    send(Message::Failed(stage, errno as i32));
    sys::exit_now(1)
}

/// The monitor: entered in the child of the parent's fork; never returns.
pub(crate) fn monitor(plan: &ChildPlan, fds: ChildFds) -> ! {
    if arrange_fds(&fds).is_err() {
        sys::exit_now(1);
    }
    // Their numbers now belong to the fixed descriptors or were closed by arrange_fds.
    std::mem::forget(fds);
    let pid = nix::unistd::getpid().to_string();
    for procs in &plan.cgroup_procs {
        if let Err(e) = std::fs::write(procs, &pid) {
            fail(
                Stage::JoinCgroup,
                Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
            );
        }
    }
    // After joining the run's cgroup: in its own cgroup namespace, the program's
    // /proc/self/cgroup says `/`, not the host's name for the run.
    let namespaces = CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWCGROUP
        | CloneFlags::CLONE_NEWPID
        | CloneFlags::CLONE_NEWNET
        | CloneFlags::CLONE_NEWUTS
        | CloneFlags::CLONE_NEWIPC;
    if let Err(errno) = nix::sched::unshare(namespaces) {
        fail(Stage::Unshare, errno);
    }
    match sys::fork() {
        Err(errno) => fail(Stage::ForkInit, errno),
        Ok(ForkResult::Child) => init(plan),
        Ok(ForkResult::Parent { child }) => {
            // The init holds the control pipe and stdio; the monitor keeps only status.
            for raw in [CTL_FD].into_iter().chain(STDIO_FDS) {
                drop(sys::adopt_fd(raw));
            }
            if plan.exec_marker.is_some() {
                drop(sys::adopt_fd(EXEC_CHANNEL_FD));
            }
            send(Message::InitPid(child.as_raw()));
            loop {
                match waitpid(child, None) {
                    Err(Errno::EINTR) => continue,
                    _ => sys::exit_now(0),
                }
            }
        }
    }
}

/// Puts the inherited descriptors at fixed numbers, points 0–2 at /dev/null and closes
/// everything else (other sandboxes' lifelines included).
fn arrange_fds(fds: &ChildFds) -> Result<(), Errno> {
    let mut sources = vec![&fds.ctl, &fds.status, &fds.stdin, &fds.stdout, &fds.stderr];
    sources.extend(&fds.exec_channel);
    let mut parked = Vec::with_capacity(sources.len());
    for source in sources {
        parked.push(sys::dup_above(source.as_raw_fd(), 100)?);
    }
    for (target, parked) in (CTL_FD..).zip(&parked) {
        sys::dup_onto(*parked, target)?;
    }
    let null = nix::fcntl::open("/dev/null", OFlag::O_RDWR, nix::sys::stat::Mode::empty())?;
    for target in 0..3 {
        sys::dup_onto(null.as_raw_fd(), target)?;
    }
    drop(null);
    sys::close_from(CTL_FD + parked.len() as RawFd)
}

/// What pid 1's command line reads inside the sandbox.
const INIT_CMDLINE: &str = "/sbin/init";

/// The init: pid 1 of the run's pid namespace; never returns.
fn init(plan: &ChildPlan) -> ! {
    // The monitor is single-threaded, so its death is this process's parent's death.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    // The program sees pid 1: as an init, not as a copy of vac and its arguments. Best
    // effort: a kernel that refuses leaves vac's name, which hides nothing of the host.
    let _ = nix::sys::prctl::set_name(c"init");
    let _ = sys::set_cmdline(INIT_CMDLINE);
    if let Err((stage, errno)) = rootfs::enter(&plan.rootfs) {
        fail(stage, errno);
    }
    if let Err(errno) = nix::unistd::sethostname(&plan.hostname) {
        fail(Stage::Hostname, errno);
    }
    if let Err(errno) = sys::loopback_up() {
        fail(Stage::Loopback, errno);
    }
    // Same-uid programs must not read this root process's memory through /proc.
    let _ = nix::sys::prctl::set_dumpable(false);
    send(Message::Ready);

    // The parent sets up its watchers on our root, then says go.
    let mut go = [0u8; 1];
    if !matches!(nix::unistd::read(fd(CTL_FD), &mut go), Ok(1)) || !GO.contains(&go[0]) {
        sys::exit_now(0);
    }
    send(Message::Marker(
        write_marker(plan).map_or_else(|e| e as i32, |()| 0),
    ));
    // The network sensor's self-test (only when the parent's sinkhole is up).
    if let (Some(probe), GO_WITH_NET_PROBE) = (&plan.net_probe, go[0]) {
        probe.send();
    }

    let mut sigchld = SigSet::empty();
    sigchld.add(Signal::SIGCHLD);
    if let Err(errno) = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&sigchld), None) {
        fail(Stage::ForkProgram, errno);
    }
    let signals = SignalFd::with_flags(&sigchld, SfdFlags::SFD_CLOEXEC)
        .unwrap_or_else(|e| fail(Stage::ForkProgram, e));
    let program = start_program(plan);
    // Readers of the program's output see EOF when the program's tree closes it, not never.
    for raw in STDIO_FDS {
        drop(sys::adopt_fd(raw));
    }
    if plan.exec_marker.is_some() {
        drop(sys::adopt_fd(EXEC_CHANNEL_FD));
    }
    supervise(program, &signals)
}

fn write_marker(plan: &ChildPlan) -> Result<(), Errno> {
    let to_errno = |e: std::io::Error| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO));
    std::fs::write(&plan.marker_path, &plan.marker_content).map_err(to_errno)?;
    // Read it back so an open-event watcher sees the marker opened, too.
    let mut content = Vec::new();
    File::open(&plan.marker_path)
        .and_then(|mut f| f.read_to_end(&mut content))
        .map_err(to_errno)?;
    Ok(())
}

/// What the program tells the init before exec, on the close-on-exec pipe at
/// [`EXEC_ERROR_FD`], in the parent's own message framing: its session keyring
/// ([`Message::SessionKeyring`]), or the stage that failed ([`Message::Failed`]).
fn tell_init(report: Message) {
    // A lost report shows up in the init as a closed pipe before exec.
    let _ = nix::unistd::write(fd(EXEC_ERROR_FD), &report.encode());
}

/// Forks the program and waits until exec has succeeded (the close-on-exec report pipe
/// closes) or a stage has failed (the pipe carries it); on success, tells the parent the
/// program's pid and session keyring.
fn start_program(plan: &ChildPlan) -> Pid {
    let (error_read, error_write) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap_or_else(|e| fail(Stage::ForkProgram, e));
    match sys::fork() {
        Err(errno) => fail(Stage::ForkProgram, errno),
        Ok(ForkResult::Child) => {
            drop(error_read);
            program(plan, error_write)
        }
        Ok(ForkResult::Parent { child }) => {
            drop(error_write);
            let mut keyring = 0;
            loop {
                let mut record = [0u8; crate::message::MESSAGE_LEN];
                let mut filled = 0;
                while filled < record.len() {
                    match nix::unistd::read(error_read.as_fd(), &mut record[filled..]) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(Errno::EINTR) => continue,
                        Err(_) => break,
                    }
                }
                if filled < record.len() {
                    break; // exec closed the pipe
                }
                match Message::decode(&record) {
                    Some(Message::SessionKeyring(serial)) => keyring = serial,
                    Some(Message::Failed(stage, errno)) => {
                        let _ = waitpid(child, None);
                        fail(stage, Errno::from_raw(errno));
                    }
                    _ => {
                        let _ = waitpid(child, None);
                        fail(Stage::Unknown, Errno::EPROTO);
                    }
                }
            }
            send(Message::Started(child.as_raw(), keyring));
            child
        }
    }
}

/// Reaps every process of the namespace, reports the program's exit, and lives until the
/// control pipe closes.
fn supervise(program: Pid, signals: &SignalFd) -> ! {
    loop {
        let mut polled = [
            PollFd::new(fd(CTL_FD), PollFlags::POLLIN),
            PollFd::new(signals.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut polled, PollTimeout::NONE) {
            Err(Errno::EINTR) => continue,
            Err(_) => sys::exit_now(1),
            Ok(_) => {}
        }
        let ready = |p: &PollFd<'_>| p.revents().is_some_and(|r| !r.is_empty());
        if ready(&polled[1]) {
            let _ = signals.read_signal();
            reap(program);
        }
        if ready(&polled[0]) {
            let mut byte = [0u8; 1];
            match nix::unistd::read(fd(CTL_FD), &mut byte) {
                Ok(0) | Err(_) => sys::exit_now(0),
                Ok(_) => {}
            }
        }
    }
}

fn reap(program: Pid) {
    loop {
        match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if pid == program => send(Message::Exited(code)),
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == program => {
                send(Message::Signaled(signal as i32))
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// The program: connects stdio, limits itself, drops every privilege, leaves the inherited
/// session keyring, refuses itself the kernel interfaces of [`crate::refused`] and execs.
fn program(plan: &ChildPlan, error_pipe: OwnedFd) -> ! {
    let report = |stage: Stage, errno: Errno| -> ! {
        tell_init(Message::Failed(stage, errno as i32));
        sys::exit_now(127)
    };
    let _ = nix::unistd::setsid();
    let stdio = (|| {
        for (source, target) in STDIO_FDS.iter().zip(0..) {
            sys::dup_onto(*source, target)?;
        }
        sys::dup_onto(error_pipe.as_raw_fd(), EXEC_ERROR_FD)?;
        sys::set_cloexec(EXEC_ERROR_FD)?;
        if plan.exec_marker.is_none() {
            return sys::close_from(EXEC_ERROR_FD + 1);
        }
        sys::dup_onto(EXEC_CHANNEL_FD, EXEC_CHANNEL_PROGRAM_FD)?;
        sys::set_cloexec(EXEC_CHANNEL_PROGRAM_FD)?;
        sys::close_from(EXEC_CHANNEL_PROGRAM_FD + 1)
    })();
    std::mem::forget(error_pipe); // closed by close_from; dropping would close a reused number
    if let Err(errno) = stdio {
        report(Stage::Stdio, errno);
    }
    if let Err(errno) = nix::unistd::chdir(&plan.cwd) {
        report(Stage::Chdir, errno);
    }
    for (resource, value) in &plan.rlimits {
        if let Err(errno) = setrlimit(*resource, *value, *value) {
            report(Stage::Rlimit, errno);
        }
    }
    if let Err(errno) = drop_privileges(plan) {
        report(Stage::DropCapabilities, errno);
    }
    // As the target uid, so the keyring is that user's; before the filter refuses keyctl.
    match sys::join_new_session_keyring() {
        Ok(serial) => tell_init(Message::SessionKeyring(serial.unwrap_or(0))),
        Err(errno) => report(Stage::SessionKeyring, errno),
    }
    // Before the marker exec, so the self-test runs under the program's own filters.
    if let Err(errno) = crate::refused::install() {
        report(Stage::SyscallPolicy, errno);
    }
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
    let _ = sys::default_signal(Signal::SIGPIPE);
    if let Some(marker) = &plan.exec_marker {
        crate::procs::arm::arm(marker, fd(EXEC_CHANNEL_PROGRAM_FD));
    }
    let errno = nix::unistd::execve(&plan.program, &plan.argv, &plan.envp).unwrap_err();
    report(Stage::Exec, errno)
}

/// No new privileges, an empty bounding set, then the target uid/gid and no capabilities.
fn drop_privileges(plan: &ChildPlan) -> Result<(), Errno> {
    use caps::CapSet;
    let caps_errno = |_| Errno::EPERM;
    nix::sys::prctl::set_no_new_privs()?;
    for cap in caps::read(None, CapSet::Bounding).map_err(caps_errno)? {
        caps::drop(None, CapSet::Bounding, cap).map_err(caps_errno)?;
    }
    caps::clear(None, CapSet::Ambient).map_err(caps_errno)?;
    caps::clear(None, CapSet::Inheritable).map_err(caps_errno)?;
    let (uid, gid) = (Uid::from_raw(plan.uid), Gid::from_raw(plan.gid));
    nix::unistd::setgroups(&[gid])?;
    nix::unistd::setresgid(gid, gid, gid)?;
    nix::unistd::setresuid(uid, uid, uid)?;
    caps::clear(None, CapSet::Effective).map_err(caps_errno)?;
    caps::clear(None, CapSet::Permitted).map_err(caps_errno)?;
    if !caps::read(None, CapSet::Permitted)
        .map_err(caps_errno)?
        .is_empty()
    {
        return Err(Errno::EPERM);
    }
    Ok(())
}
