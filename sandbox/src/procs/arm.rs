//! The sandbox side of the exec listener, run in the program stage after `fork`: install the
//! filter, hand its listener to the parent, make the marker exec, all before the program's
//! own exec. Small and allocation-light, like the rest of the stage code.

use std::ffi::CString;
use std::io::IoSlice;
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
use nix::unistd::ForkResult;

use super::filter;
use crate::sys;

/// The marker exec of the self-test: a program and its argv, nonce included.
#[derive(Debug, Clone)]
pub(crate) struct ExecMarker {
    pub(crate) program: CString,
    pub(crate) argv: Vec<CString>,
}

/// Stops every later exec of this process and its descendants for the parent's listener,
/// then makes the marker exec through it. Failures are not fatal here: without a listener
/// or a marker the sensor's self-test fails, which is the honest outcome. A filter whose
/// listener could not be handed over makes every exec fail with ENOSYS, so the run fails
/// to start rather than run unobserved.
pub(crate) fn arm(marker: &ExecMarker, channel: BorrowedFd<'_>) {
    let Ok(listener) = sys::seccomp_listener(&filter::program()) else {
        return;
    };
    let fds = [listener.as_raw_fd()];
    let sent = sendmsg::<()>(
        channel.as_raw_fd(),
        &[IoSlice::new(b"L")],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    );
    drop(listener);
    if sent.is_err() {
        return;
    }
    match sys::fork() {
        Ok(ForkResult::Child) => {
            let _ = nix::unistd::execve::<CString, CString>(&marker.program, &marker.argv, &[]);
            sys::exit_now(127)
        }
        Ok(ForkResult::Parent { child }) => {
            while let Err(nix::errno::Errno::EINTR) = nix::sys::wait::waitpid(child, None) {}
        }
        Err(_) => {}
    }
}
