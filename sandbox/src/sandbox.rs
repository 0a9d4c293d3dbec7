//! The parent's side of a run: [`SandboxBuilder`] → [`Sandbox`] → [`Running`](crate::Running) → [`Stopped`](crate::Stopped) (`running.rs`).

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::resource::Resource;
use nix::unistd::{ForkResult, Pid};
use tokio::net::unix::pipe;

use crate::access::{AccessFilter, AccessSensor};
use crate::cgroup::CgroupRoots;
use crate::error::{NoLog, SandboxError};
use crate::events::LabEvents;
use crate::lab::{Lab, LabView};
use crate::limits::Limits;
use crate::mask::{self, Visibility};
use crate::message::{MESSAGE_LEN, Message};
use crate::net::probe::NetProbe;
use crate::net::{NetSensor, Sinkhole, SinkholeOptions};
use crate::procs::ProcSensor;
use crate::rootfs::{self, RootfsPlan};
use crate::rundir::RunDir;
use crate::running::Running;
use crate::stages::{self, ChildFds, ChildPlan};
use crate::sys;
use crate::teardown::Guard;
use crate::witness::Marker;

/// Which user the program runs as. Capabilities are dropped either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAs {
    /// An unprivileged uid and gid (default: nobody, 65534).
    User { uid: u32, gid: u32 },
    /// uid 0 with no capabilities: owner rights over root-owned files (in the overlay) only.
    RootWithoutCapabilities,
}

impl RunAs {
    /// The uid and gid the program runs as.
    pub fn ids(self) -> (u32, u32) {
        match self {
            RunAs::User { uid, gid } => (uid, gid),
            RunAs::RootWithoutCapabilities => (0, 0),
        }
    }
}

/// Builds a [`Sandbox`].
/// Where run directories go unless the builder is told otherwise (`run_root`).
pub const DEFAULT_RUN_ROOT: &str = "/run/vac";

/// Where the cgroup hierarchies are mounted unless the builder is told otherwise.
pub const DEFAULT_CGROUP_ROOT: &str = "/sys/fs/cgroup";

#[derive(Debug, Clone)]
pub struct SandboxBuilder {
    command: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    lab: Lab,
    limits: Limits,
    run_as: RunAs,
    hide: Vec<PathBuf>,
    expose: Vec<mask::Exposure>,
    run_root: PathBuf,
    cgroup_root: PathBuf,
    hostname: String,
    keep: bool,
    network_sensor: bool,
    sinkhole: SinkholeOptions,
    process_sensor: bool,
    process_sensor_buffer: usize,
    access_filter: AccessFilter,
}

/// A validated run configuration; each [`Sandbox::spawn`] is a fresh run.
#[derive(Debug, Clone)]
pub struct Sandbox {
    config: SandboxBuilder,
}

const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);
/// The proc connector hears the whole host; 8 MiB holds tens of thousands of events.
const DEFAULT_PROC_CONNECTOR_BUFFER: usize = 8 << 20;

impl Sandbox {
    /// Starts a configuration for `program args…`.
    pub fn builder<I, S>(command: I) -> SandboxBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        SandboxBuilder {
            command: command.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            lab: Lab::new(),
            limits: Limits::default(),
            run_as: RunAs::User {
                uid: 65534,
                gid: 65534,
            },
            hide: Vec::new(),
            expose: Vec::new(),
            run_root: PathBuf::from(DEFAULT_RUN_ROOT),
            cgroup_root: PathBuf::from(DEFAULT_CGROUP_ROOT),
            hostname: host_name(),
            keep: false,
            network_sensor: true,
            sinkhole: SinkholeOptions::default(),
            process_sensor: true,
            process_sensor_buffer: DEFAULT_PROC_CONNECTOR_BUFFER,
            access_filter: |_| true,
        }
    }
}

impl SandboxBuilder {
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
    pub fn lab(mut self, lab: Lab) -> Self {
        self.lab = lab;
        self
    }
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
    pub fn run_as(mut self, run_as: RunAs) -> Self {
        self.run_as = run_as;
        self
    }
    /// A host path to hide from the program besides the built-in ones (every account's
    /// home, `/tmp`, `/var/tmp`, `/run`, password hashes and private keys); the program's own
    /// installation stays visible inside a hidden directory.
    pub fn hide(mut self, path: impl Into<PathBuf>) -> Self {
        self.hide.push(path.into());
        self
    }
    /// A host path left visible to the program even inside a hidden directory (its
    /// installation's own directories are found from the command without this).
    pub fn expose(self, path: impl Into<PathBuf>) -> Self {
        self.expose_because(path, "named by the caller (--expose)")
    }
    /// A host path left visible to the program, and why (the visibility record says).
    pub fn expose_because(mut self, path: impl Into<PathBuf>, why: impl Into<String>) -> Self {
        self.expose.push(mask::Exposure {
            path: path.into(),
            why: why.into(),
        });
        self
    }
    /// Host directory under which run directories are made (default `/run/vac`).
    pub fn run_root(mut self, path: impl Into<PathBuf>) -> Self {
        self.run_root = path.into();
        self
    }
    /// Where the cgroup hierarchies are mounted (default `/sys/fs/cgroup`).
    pub fn cgroup_root(mut self, path: impl Into<PathBuf>) -> Self {
        self.cgroup_root = path.into();
        self
    }
    /// Keep the run directory (upper layer and lab) after teardown, for inspection.
    pub fn keep_run_dir(mut self, keep: bool) -> Self {
        self.keep = keep;
        self
    }

    /// Runs the network sensor: a sinkhole in the run's network namespace (default on).
    pub fn network_sensor(mut self, on: bool) -> Self {
        self.network_sensor = on;
        self
    }
    /// Ports, caps and timeouts of the sinkhole (its clock starts with each run).
    pub fn sinkhole_options(mut self, options: SinkholeOptions) -> Self {
        self.sinkhole = options;
        self
    }

    /// Runs the process sensor: forks, execs with argv, exits and uid changes of the run's
    /// processes (default on).
    pub fn process_sensor(mut self, on: bool) -> Self {
        self.process_sensor = on;
        self
    }
    /// The process sensor's connector receive buffer in bytes (default 8 MiB). A tiny one
    /// makes the sensor lose events and fail its self-test: a hook for testing that.
    pub fn process_sensor_buffer(mut self, bytes: usize) -> Self {
        self.process_sensor_buffer = bytes;
        self
    }

    /// Which files closed outside the lab the access sensor keeps, by path in the sandbox's
    /// view (default: all); the others are counted ([`AccessLog::seen`]). A server opens
    /// its interpreter's and libraries' files by the thousand: a caller that needs a few
    /// places keeps memory bounded by naming them.
    pub fn access_filter(mut self, filter: AccessFilter) -> Self {
        self.access_filter = filter;
        self
    }

    /// Checks the configuration; nothing touches the system yet.
    pub fn build(self) -> Result<Sandbox, SandboxError> {
        if self.command.first().is_none_or(|c| c.is_empty()) {
            return Err(SandboxError::EmptyCommand);
        }
        self.limits.validate()?;
        self.lab.validate()?;
        Ok(Sandbox { config: self })
    }
}

impl Sandbox {
    /// The lab as the program sees it.
    pub fn lab_view(&self) -> LabView {
        self.config.lab.view()
    }

    /// Prepares a fresh run and starts the program in it. Must be called inside a tokio
    /// runtime. On error nothing of the run is left behind.
    pub fn spawn(&self) -> Result<Running, SandboxError> {
        let config = &self.config;
        let uid = nix::unistd::geteuid();
        if !uid.is_root() {
            return Err(SandboxError::NotRoot { uid: uid.as_raw() });
        }
        tokio::runtime::Handle::try_current().map_err(|_| SandboxError::NoRuntime)?;
        let roots = CgroupRoots::detect(&config.cgroup_root)?;
        for run in crate::rundir::sweep_stale(&config.run_root) {
            // Its processes died with their lifeline; the empty group is all that is left.
            let _ = roots.existing(&run).remove();
            tracing::info!(%run, "removed a run left by a process that died before teardown");
        }
        let started = Instant::now();
        let id = format!("run-{}", nonce());
        let mut guard = Guard::new(id.clone(), config.keep);

        let run_dir = guard
            .run_dir
            .insert(RunDir::create(&config.run_root, &id, &config.limits)?);
        let (uid, gid) = config.run_as.ids();
        config.lab.build(&run_dir.lab_layer(), uid, gid)?;
        let lab_image = config
            .lab
            .image_on_loop(
                &run_dir.lab_layer(),
                &run_dir.lower(),
                &run_dir.path().join("lab.sqfs"),
            )
            .map(|(device, path)| {
                guard.lab_device = Some(device);
                (path, run_dir.lab_layer())
            });
        let view = config.lab.view();
        let env = self.environment(&view, mask::account_name(&run_dir.lower(), uid));
        let path_var = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let layers = [run_dir.lab_layer(), run_dir.mask_layer(), run_dir.lower()];
        let program = resolve(&config.command[0], &path_var, &view.work(), &layers)?;
        let hidden = mask::hidden_paths(&run_dir.lower(), &config.hide);
        let mut because =
            mask::installation(&program, &config.command[1..], &run_dir.lower(), &hidden);
        because.extend(config.expose.iter().cloned());
        let exposed: Vec<PathBuf> = because.iter().map(|e| e.path.clone()).collect();
        mask::build(&run_dir.mask_layer(), &run_dir.lower(), &hidden, &exposed)?;
        let hosts = mask::hosts_with(&run_dir.lower(), &config.hostname);
        mask::replace(
            &run_dir.mask_layer(),
            &run_dir.lower(),
            Path::new("/etc/hosts"),
            &hosts,
        )?;
        let visibility = Visibility {
            uid,
            gid,
            hidden,
            exposed,
            because,
        };
        run_dir.reserve_lab(&config.limits)?;
        // Named and filled as a temporary file any program might leave (Python's
        // `tmpXXXXXXXX`), so that it tells the program nothing; in the lab, where the
        // lab's watcher sees it opened.
        let token = nonce();
        let marker = Marker {
            path: view.scratch().join(format!("tmp{}", &token[..8])),
            content: format!("{token}\n").into_bytes(),
        };
        let plan = ChildPlan {
            cgroup_procs: Vec::new(),
            rootfs: RootfsPlan {
                merged: run_dir.merged(),
                layers_dir: run_dir.path().to_path_buf(),
                overlay_options: rootfs::overlay_options(
                    run_dir.path(),
                    &layers,
                    &run_dir.upper(),
                    &run_dir.work(),
                ),
                lab_image,
            },
            hostname: config.hostname.clone(),
            marker_path: marker.path.clone(),
            marker_content: marker.content.clone(),
            program: c_string(program.as_os_str()),
            argv: config.command.iter().map(|a| c_string(a)).collect(),
            envp: env
                .iter()
                .map(|(k, v)| c_string(&[k.as_os_str(), v.as_os_str()].join(OsStr::new("="))))
                .collect(),
            cwd: view.work(),
            uid,
            gid,
            rlimits: vec![
                (
                    Resource::RLIMIT_CPU,
                    config
                        .limits
                        .cpu_time
                        .map_or(nix::sys::resource::RLIM_INFINITY, |t| t.as_secs()),
                ),
                (Resource::RLIMIT_NOFILE, config.limits.open_files),
                (Resource::RLIMIT_CORE, 0),
            ],
            net_probe: config.network_sensor.then(|| NetProbe::new(&nonce())),
            exec_marker: None,
        };
        let cgroup = guard.cgroup.insert(roots.create(&id, &config.limits)?);
        let exec_stage = config.process_sensor.then(|| {
            let (procs, stage) = ProcSensor::prepare(config.process_sensor_buffer, &nonce());
            guard.procs = Some(procs);
            stage
        });
        let (exec_marker, exec_channel) = exec_stage.flatten().unzip();
        let plan = ChildPlan {
            cgroup_procs: cgroup.procs_files(),
            exec_marker,
            ..plan
        };

        let pipe = |what| {
            nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|errno| SandboxError::Host { what, errno })
        };
        let (ctl_read, ctl_write) = pipe("create the control pipe")?;
        let (status_read, status_write) = pipe("create the status pipe")?;
        let (stdin_read, stdin_write) = pipe("create the stdin pipe")?;
        let (stdout_read, stdout_write) = pipe("create the stdout pipe")?;
        let (stderr_read, stderr_write) = pipe("create the stderr pipe")?;
        let fds = ChildFds {
            ctl: ctl_read,
            status: status_write,
            stdin: stdin_read,
            stdout: stdout_write,
            stderr: stderr_write,
            exec_channel,
        };
        match sys::fork().map_err(|errno| SandboxError::Host {
            what: "fork the sandbox monitor",
            errno,
        })? {
            ForkResult::Child => stages::monitor(&plan, fds),
            ForkResult::Parent { child } => guard.monitor = Some(child),
        }
        drop(fds);
        guard.ctl = Some(ctl_write);

        let deadline = started + SETUP_TIMEOUT;
        let (mut init_pid, mut ready) = (None, false);
        while init_pid.is_none() || !ready {
            match read_message(&status_read, deadline, "setting up the sandbox")? {
                Message::InitPid(pid) => init_pid = Some(Pid::from_raw(pid)),
                Message::Ready => ready = true,
                Message::Failed(stage, errno) => {
                    return Err(SandboxError::Setup {
                        stage,
                        errno: Errno::from_raw(errno),
                    });
                }
                _ => {
                    return Err(SandboxError::Lost {
                        waiting_for: "setting up the sandbox",
                    });
                }
            }
        }
        let init_pid = init_pid.unwrap_or(Pid::from_raw(0));
        let pidfd = sys::pidfd_open(init_pid).map_err(|errno| SandboxError::Host {
            what: "open a pidfd on the sandbox init",
            errno,
        })?;
        guard.init = Some(Arc::new(pidfd));
        if let Some(procs) = guard.procs.as_mut() {
            procs.start(init_pid.as_raw(), started)?;
        }
        let host_root = PathBuf::from(format!("/proc/{init_pid}/root"));
        // The lab, and its temporary directory where that is not inside it (`/tmp` of a
        // lab that stands in for a home).
        let tmp = view.tmp();
        let mut labs = vec![view.root()];
        if !tmp.starts_with(view.root()) {
            labs.push(tmp.as_path());
        }
        let events = LabEvents::start(host_root.clone(), &labs, &visibility.exposed, started)
            .map_err(SandboxError::Events)?;
        // Before the go: the init's marker is the access sensor's self-test too.
        let filter = config.access_filter;
        match AccessSensor::start(&host_root, started, filter, marker.path.clone()) {
            Ok(sensor) => guard.accesses = Some(sensor),
            Err(errno) => {
                guard.accesses_log = Some(Err(NoLog::Failed {
                    what: "fanotify on the sandbox's root and /proc could not start",
                    why: errno.to_string(),
                }));
            }
        }
        guard.events_close = Some(events.closer());
        let lab_queue = events.queue();

        // The sinkhole must be up before the init's self-test and the program's first packet.
        let network = match &plan.net_probe {
            None => NetSensor::Off,
            Some(probe) => {
                let options = SinkholeOptions {
                    epoch: started,
                    probe_name: Some(probe.name.clone()),
                    ..config.sinkhole.clone()
                };
                match Sinkhole::start(init_pid, options) {
                    Ok(sinkhole) => NetSensor::On(Box::new(sinkhole)),
                    Err(error) => NetSensor::Failed(NoLog::Failed {
                        what: "the sinkhole could not start",
                        why: error_chain(&error),
                    }),
                }
            }
        };
        let go = match network {
            NetSensor::On(_) => stages::GO_WITH_NET_PROBE,
            _ => stages::GO[1],
        };
        write_go(guard.ctl.as_ref(), go)?;
        let marker_errno = match read_message(&status_read, deadline, "writing the marker")? {
            Message::Marker(errno) => errno,
            _ => {
                return Err(SandboxError::Lost {
                    waiting_for: "writing the marker",
                });
            }
        };
        let (program_pid, session_keyring) =
            match read_message(&status_read, deadline, "starting the program")? {
                Message::Started(pid, keyring) => (pid, (keyring != 0).then_some(keyring)),
                Message::Failed(stage, errno) => {
                    let command = config.command[0].to_string_lossy().into_owned();
                    return Err(SandboxError::Start {
                        command,
                        stage,
                        errno: Errno::from_raw(errno),
                    });
                }
                _ => {
                    return Err(SandboxError::Lost {
                        waiting_for: "starting the program",
                    });
                }
            };

        if let Some(sinkhole) = network.sinkhole() {
            sinkhole.mark_program_start();
        }
        let host = |what| {
            move |e: std::io::Error| SandboxError::Host {
                what,
                errno: io_errno(&e),
            }
        };
        let (termination, wall_clock_hit) = guard
            .watch(status_read, config.limits.wall_clock)
            .map_err(host("watch the sandbox's status pipe"))?;
        Ok(Running {
            id,
            started,
            view,
            init_pid,
            program_pid,
            session_keyring,
            stdin: Some(
                pipe::Sender::from_owned_fd(stdin_write).map_err(host("adopt the stdin pipe"))?,
            ),
            stdout: Some(
                pipe::Receiver::from_owned_fd(stdout_read)
                    .map_err(host("adopt the stdout pipe"))?,
            ),
            stderr: Some(
                pipe::Receiver::from_owned_fd(stderr_read)
                    .map_err(host("adopt the stderr pipe"))?,
            ),
            events: Some(events),
            lab_queue,
            termination,
            wall_clock_hit,
            marker,
            marker_errno,
            network,
            visibility,
            guard,
        })
    }

    /// The program's environment: the lab's directories, and `account` (the run uid's name
    /// in the host's `/etc/passwd`) as `USER` and `LOGNAME`, as a login gives them.
    fn environment(&self, view: &LabView, account: Option<String>) -> Vec<(OsString, OsString)> {
        let home = view.home();
        let mut env: Vec<(OsString, OsString)> = vec![
            ("PATH".into(), DEFAULT_PATH.into()),
            ("HOME".into(), home.clone().into()),
            ("LANG".into(), "C.UTF-8".into()),
        ];
        if !view.is_home() {
            env.extend([
                ("TMPDIR".into(), view.tmp().into()),
                ("XDG_CONFIG_HOME".into(), home.join(".config").into()),
                ("XDG_CACHE_HOME".into(), home.join(".cache").into()),
                ("XDG_DATA_HOME".into(), home.join(".local/share").into()),
                ("XDG_STATE_HOME".into(), home.join(".local/state").into()),
                ("XDG_RUNTIME_DIR".into(), view.tmp().into()),
            ]);
        }
        if let Some(name) = account {
            env.push(("USER".into(), name.clone().into()));
            env.push(("LOGNAME".into(), name.into()));
        }
        for (key, value) in &self.config.env {
            env.retain(|(k, _)| k != key);
            env.push((key.clone(), value.clone()));
        }
        env
    }
}

fn read_message(
    fd: &OwnedFd,
    deadline: Instant,
    waiting_for: &'static str,
) -> Result<Message, SandboxError> {
    let lost = SandboxError::Lost { waiting_for };
    let mut bytes = [0u8; MESSAGE_LEN];
    let mut filled = 0;
    while filled < MESSAGE_LEN {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let timeout = PollTimeout::try_from(remaining.as_millis().min(i32::MAX as u128) as i32)
            .unwrap_or(PollTimeout::ZERO);
        let mut polled = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut polled, timeout) {
            Ok(0) => return Err(lost),
            Err(Errno::EINTR) => continue,
            Err(errno) => {
                return Err(SandboxError::Host {
                    what: "poll the status pipe",
                    errno,
                });
            }
            Ok(_) => {}
        }
        match nix::unistd::read(fd.as_fd(), &mut bytes[filled..]) {
            Ok(0) => return Err(lost),
            Ok(n) => filled += n,
            Err(Errno::EINTR) => {}
            Err(errno) => {
                return Err(SandboxError::Host {
                    what: "read the status pipe",
                    errno,
                });
            }
        }
    }
    Message::decode(&bytes).ok_or(lost)
}

fn write_go(ctl: Option<&OwnedFd>, go: u8) -> Result<(), SandboxError> {
    let Some(ctl) = ctl else {
        return Err(SandboxError::Lost {
            waiting_for: "starting the program",
        });
    };
    nix::unistd::write(ctl.as_fd(), &[go])
        .map(drop)
        .map_err(|errno| SandboxError::Host {
            what: "signal the sandbox init",
            errno,
        })
}

/// Finds `command` as the sandbox will see it: in the lab layer or the host root, along PATH
/// when it has no slash.
fn resolve(
    command: &OsStr,
    path_var: &OsStr,
    cwd: &Path,
    layers: &[PathBuf],
) -> Result<PathBuf, SandboxError> {
    let executable = |view: &Path| {
        let rel = view.strip_prefix("/").unwrap_or(view);
        layers.iter().any(|layer| {
            std::fs::metadata(layer.join(rel))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    };
    let candidates: Vec<PathBuf> = if command.as_bytes().contains(&b'/') {
        vec![cwd.join(command)]
    } else {
        std::env::split_paths(path_var)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(command))
            .collect()
    };
    candidates
        .iter()
        .find(|c| executable(c))
        .cloned()
        .ok_or_else(|| SandboxError::CommandNotFound {
            command: command.to_string_lossy().into_owned(),
            searched: candidates
                .iter()
                .map(|c| c.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

fn c_string(value: &OsStr) -> CString {
    // Interior NULs cannot be passed to exec; they end the argument, as the kernel would.
    let bytes = value.as_bytes();
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).unwrap_or_default()
}

/// The host's own hostname: what the program would see run anywhere on this machine, and
/// nothing that says it is audited (a host named after vac, a CI runner say, gives an
/// ordinary name instead).
fn host_name() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|name| name.into_string().ok())
        .filter(|name| !name.is_empty() && !name.to_lowercase().contains("vac"))
        .unwrap_or_else(|| "workstation".into())
}

fn nonce() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // Names only need to be unique on this host: time, pid and a counter are.
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let mix = time.as_nanos() as u64
            ^ (u64::from(std::process::id()) << 40)
            ^ COUNTER.fetch_add(1, Ordering::Relaxed);
        bytes = mix.to_le_bytes();
    }
    hex::encode(bytes)
}

/// An error and its sources, for a reason kept as text.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

fn io_errno(error: &std::io::Error) -> Errno {
    Errno::from_raw(error.raw_os_error().unwrap_or(libc::EIO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_command_is_rejected() {
        let error = Sandbox::builder(Vec::<OsString>::new())
            .build()
            .unwrap_err();
        assert!(matches!(error, SandboxError::EmptyCommand));
    }

    #[test]
    fn resolve_searches_path_in_the_layers_and_names_what_it_searched() {
        let layer = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(layer.path().join("opt/bin")).unwrap();
        std::fs::write(layer.path().join("opt/bin/tool"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            layer.path().join("opt/bin/tool"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let layers = [layer.path().to_path_buf()];
        let found = resolve(
            OsStr::new("tool"),
            OsStr::new("/usr/bin:/opt/bin"),
            Path::new("/lab/work"),
            &layers,
        )
        .unwrap();
        assert_eq!(found, Path::new("/opt/bin/tool"));
        let error = resolve(
            OsStr::new("nope"),
            OsStr::new("/usr/bin:/opt/bin"),
            Path::new("/lab/work"),
            &layers,
        )
        .unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("\"nope\"") && message.contains("/opt/bin/nope"),
            "{message}"
        );
    }

    #[test]
    fn c_string_cuts_at_interior_nul() {
        assert_eq!(c_string(OsStr::new("a\0b")).as_bytes(), b"a");
    }
}
