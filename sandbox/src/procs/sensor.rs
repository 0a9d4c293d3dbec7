//! [`ProcSensor`]: the thread that reads the connector and answers the exec listener, and
//! the log it leaves.

use std::ffi::{CString, OsString};
use std::io::IoSliceMut;
use std::os::fd::{AsFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{
    AddressFamily, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg, socketpair,
};

use super::ProcError;
use super::arm::ExecMarker;
use super::connector::{Loss, ProcConnector};
use super::exec_notify::ExecListener;
use super::log::{LostEvents, ProcSelfTest, ProcSensorFailure, ProcessLog};
use super::tree::{Records, Tracker, into_log};
use crate::sys;

const MARKER_PROGRAM: &str = "/bin/true";

#[derive(Default)]
struct Shared {
    tracker: Option<Tracker>,
    loss: Loss,
    listener: bool,
    broken: Option<String>,
}

/// The process sensor of one run, from preparation (before the sandbox forks) to its log.
pub(crate) struct ProcSensor {
    marker: Vec<OsString>,
    unavailable: Option<String>,
    prepared: Option<(ProcConnector, OwnedFd)>,
    shared: Arc<Mutex<Shared>>,
    stop: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
    log: Option<ProcessLog>,
}

impl std::fmt::Debug for ProcSensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcSensor")
            .field("marker", &self.marker)
            .finish_non_exhaustive()
    }
}

/// What the program stage needs: the marker and its end of the listener channel.
pub(crate) type StageSide = (ExecMarker, OwnedFd);

impl ProcSensor {
    /// Subscribes to the connector and makes the listener channel. Without a connector the
    /// sensor is unavailable and the sandbox installs no filter (`None`).
    pub(crate) fn prepare(receive_buffer: usize, nonce: &str) -> (ProcSensor, Option<StageSide>) {
        let argv = [MARKER_PROGRAM.to_owned(), format!("vac-marker-{nonce}")];
        let mut sensor = ProcSensor {
            marker: argv.iter().map(OsString::from).collect(),
            unavailable: None,
            prepared: None,
            shared: Arc::default(),
            stop: None,
            thread: None,
            log: None,
        };
        let channel = || {
            socketpair(
                AddressFamily::Unix,
                SockType::SeqPacket,
                None,
                SockFlag::SOCK_CLOEXEC,
            )
            .map_err(|errno| ProcError::Listener {
                what: "make its channel",
                source: errno.into(),
            })
        };
        match ProcConnector::open(receive_buffer).and_then(|c| Ok((c, channel()?))) {
            Ok((connector, (ours, theirs))) => {
                sensor.prepared = Some((connector, ours));
                let marker = ExecMarker {
                    program: CString::new(MARKER_PROGRAM).unwrap_or_default(),
                    argv: argv
                        .into_iter()
                        .filter_map(|a| CString::new(a).ok())
                        .collect(),
                };
                (sensor, Some((marker, theirs)))
            }
            Err(error) => {
                sensor.unavailable = Some(error.to_string());
                (sensor, None)
            }
        }
    }

    /// Starts following the tree of `init` (host pid).
    pub(crate) fn start(&mut self, init: i32, started: Instant) -> Result<(), ProcError> {
        let Some((connector, channel)) = self.prepared.take() else {
            return Ok(());
        };
        let io = |what| {
            move |errno: Errno| ProcError::Listener {
                what,
                source: errno.into(),
            }
        };
        let (stop_read, stop_write) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(io("make its stop pipe"))?;
        self.shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .tracker = Some(Tracker::new(init, started, PathBuf::from("/proc")));
        let shared = Arc::clone(&self.shared);
        let thread = std::thread::Builder::new()
            .name("vac-proc-sensor".into())
            .spawn(move || run(connector, channel, stop_read, &shared))
            .map_err(|source| ProcError::Listener {
                what: "start its thread",
                source,
            })?;
        self.stop = Some(stop_write);
        self.thread = Some(thread);
        Ok(())
    }

    /// The log so far.
    pub(crate) fn snapshot(&self) -> ProcessLog {
        match &self.log {
            Some(log) => log.clone(),
            None => self.judge(false),
        }
    }

    /// Stops the thread (call after every process of the run is gone) and keeps the log.
    pub(crate) fn finish(&mut self) -> ProcessLog {
        if let Some(stop) = self.stop.take() {
            let _ = nix::unistd::write(stop.as_fd(), b"S");
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let log = self.log.take().unwrap_or_else(|| self.judge(true));
        self.log = Some(log.clone());
        log
    }

    fn judge(&self, closing: bool) -> ProcessLog {
        if let Some(reason) = &self.unavailable {
            let test = ProcSelfTest::Unavailable {
                reason: reason.clone(),
            };
            return into_log(Records::default(), &self.marker, test);
        }
        let shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let records = shared
            .tracker
            .as_ref()
            .map(|t| t.records(closing))
            .unwrap_or_default();
        let lost = LostEvents {
            overruns: shared.loss.overruns,
            gaps: shared.loss.gaps,
        };
        let marker = self
            .marker
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        let seen = records.execs.iter().any(|e| e.argv == self.marker);
        let failure = if let Some(what) = &shared.broken {
            Some(ProcSensorFailure::Broken { what: what.clone() })
        } else if lost.any() {
            Some(ProcSensorFailure::LostEvents(lost))
        } else if !shared.listener {
            Some(ProcSensorFailure::NoExecListener)
        } else if !seen {
            Some(ProcSensorFailure::MarkerNotSeen {
                marker: marker.clone(),
            })
        } else {
            None
        };
        let test = match failure {
            Some(reason) => ProcSelfTest::Failed { reason },
            None => ProcSelfTest::Live { marker },
        };
        let mut log = into_log(records, &self.marker, test);
        log.lost = lost;
        log
    }
}

impl Drop for ProcSensor {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Receives the listener the program stage sent; `Ok(None)` at end of stream.
fn receive_listener(channel: &OwnedFd) -> Result<Option<Vec<OwnedFd>>, Errno> {
    let mut byte = [0u8; 1];
    let mut iov = [IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([RawFd; 2]);
    let flags = MsgFlags::MSG_CMSG_CLOEXEC | MsgFlags::MSG_DONTWAIT;
    let message = recvmsg::<()>(
        std::os::fd::AsRawFd::as_raw_fd(channel),
        &mut iov,
        Some(&mut space),
        flags,
    )?;
    let mut fds = Vec::new();
    for cmsg in message.cmsgs()? {
        if let ControlMessageOwned::ScmRights(received) = cmsg {
            fds.extend(received.into_iter().map(sys::adopt_received_fd));
        }
    }
    Ok((message.bytes > 0 || !fds.is_empty()).then_some(fds))
}

fn run(mut connector: ProcConnector, channel: OwnedFd, stop: OwnedFd, shared: &Mutex<Shared>) {
    let lock = || shared.lock().unwrap_or_else(PoisonError::into_inner);
    let mut channel = Some(channel);
    let mut listener: Option<ExecListener> = None;
    let mut connector_ok = true;
    let mut events = Vec::new();
    let mut drain = |connector: &mut ProcConnector, connector_ok: &mut bool| {
        if !*connector_ok {
            return;
        }
        let result = connector.drain(&mut events);
        let mut shared = lock();
        if let Some(tracker) = shared.tracker.as_mut() {
            events.drain(..).for_each(|e| tracker.on_event(e));
        }
        shared.loss = connector.loss();
        if let Err(error) = result {
            shared.broken = Some(error.to_string());
            *connector_ok = false;
        }
    };
    loop {
        let ready = {
            let mut fds = vec![
                PollFd::new(stop.as_fd(), PollFlags::POLLIN),
                PollFd::new(connector.fd(), PollFlags::POLLIN),
            ];
            if let Some(channel) = &channel {
                fds.push(PollFd::new(channel.as_fd(), PollFlags::POLLIN));
            }
            if let Some(listener) = &listener {
                fds.push(PollFd::new(listener.fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(Errno::EINTR) => continue,
                Err(errno) => {
                    lock().broken = Some(format!("poll: {errno}"));
                    return;
                }
            }
            fds.iter()
                .map(|p| p.revents().unwrap_or(PollFlags::empty()))
                .collect::<Vec<_>>()
        };
        let mut next = 2;
        let mut slot = |present: bool| {
            present.then(|| {
                next += 1;
                ready[next - 1]
            })
        };
        let channel_ready = slot(channel.is_some());
        let listener_ready = slot(listener.is_some());
        if !ready[1].is_empty() {
            drain(&mut connector, &mut connector_ok);
        }
        if channel_ready.is_some_and(|r| !r.is_empty()) {
            match channel.as_ref().map(receive_listener) {
                Some(Ok(Some(mut fds))) if !fds.is_empty() && listener.is_none() => {
                    listener = Some(ExecListener::new(fds.swap_remove(0)));
                    lock().listener = true;
                }
                Some(Ok(Some(_)) | Err(Errno::EAGAIN | Errno::EINTR)) => {}
                _ => channel = None,
            }
        }
        if let (Some(revents), Some(exec_listener)) = (listener_ready, &listener) {
            if revents.contains(PollFlags::POLLIN) {
                match exec_listener.receive() {
                    Ok(Some(notification)) => {
                        // Everything the kernel reported before this call was held is in the
                        // socket now: apply it first, so the tree knows the caller.
                        drain(&mut connector, &mut connector_ok);
                        if let (Some(request), Some(tracker)) =
                            (notification.request, lock().tracker.as_mut())
                        {
                            tracker.on_exec_call(request);
                        }
                        exec_listener.answer(notification.id);
                    }
                    Ok(None) => {}
                    Err(errno) => {
                        lock().broken = Some(format!("exec listener: {errno}"));
                        listener = None;
                    }
                }
            } else if !revents.is_empty() {
                // Every filtered process is gone.
                listener = None;
            }
        }
        if !ready[0].is_empty() {
            drain(&mut connector, &mut connector_ok);
            return;
        }
    }
}
