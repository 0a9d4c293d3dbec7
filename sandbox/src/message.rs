//! The typed handshake between the parent and the sandbox's processes.
//!
//! Messages are fixed-size (12 bytes, below PIPE_BUF) so each write is atomic and the child
//! side never allocates to send one.

use std::fmt;

/// One step of setting up or starting the run, named in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Stage {
    JoinCgroup = 1,
    Unshare,
    ForkInit,
    MountPrivate,
    MountLab,
    MountOverlay,
    MountProc,
    MountDev,
    MountSys,
    PivotRoot,
    Hostname,
    Loopback,
    Marker,
    ForkProgram,
    Stdio,
    Chdir,
    Rlimit,
    DropCapabilities,
    SetIds,
    SessionKeyring,
    SyscallPolicy,
    Exec,
    Unknown,
}

impl Stage {
    const ALL: [Stage; 23] = [
        Stage::JoinCgroup,
        Stage::Unshare,
        Stage::ForkInit,
        Stage::MountPrivate,
        Stage::MountLab,
        Stage::MountOverlay,
        Stage::MountProc,
        Stage::MountDev,
        Stage::MountSys,
        Stage::PivotRoot,
        Stage::Hostname,
        Stage::Loopback,
        Stage::Marker,
        Stage::ForkProgram,
        Stage::Stdio,
        Stage::Chdir,
        Stage::Rlimit,
        Stage::DropCapabilities,
        Stage::SetIds,
        Stage::SessionKeyring,
        Stage::SyscallPolicy,
        Stage::Exec,
        Stage::Unknown,
    ];

    pub(crate) fn from_code(code: i32) -> Stage {
        Stage::ALL
            .into_iter()
            .find(|s| *s as i32 == code)
            .unwrap_or(Stage::Unknown)
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::JoinCgroup => "joining the run's cgroup",
            Stage::Unshare => "creating namespaces",
            Stage::ForkInit => "forking the sandbox init",
            Stage::MountPrivate => "making mounts private",
            Stage::MountLab => "mounting the lab's image",
            Stage::MountOverlay => "mounting the overlay root",
            Stage::MountProc => "mounting /proc",
            Stage::MountDev => "mounting /dev",
            Stage::MountSys => "mounting /sys",
            Stage::PivotRoot => "pivoting into the overlay root",
            Stage::Hostname => "setting the hostname",
            Stage::Loopback => "bringing loopback up",
            Stage::Marker => "writing the witness marker",
            Stage::ForkProgram => "forking the program",
            Stage::Stdio => "connecting the program's stdio",
            Stage::Chdir => "entering the working directory",
            Stage::Rlimit => "setting resource limits",
            Stage::DropCapabilities => "dropping capabilities",
            Stage::SetIds => "switching to the unprivileged user",
            Stage::SessionKeyring => "joining a fresh session keyring",
            Stage::SyscallPolicy => "installing the refused system calls filter",
            Stage::Exec => "executing the program",
            Stage::Unknown => "an unknown stage",
        })
    }
}

/// What the sandbox's processes tell the parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Message {
    /// The monitor forked the init; its pid in the host's namespace.
    InitPid(i32),
    /// The init has its root, /proc, /dev, /sys and loopback ready.
    Ready,
    /// A stage failed with an errno.
    Failed(Stage, i32),
    /// The marker was written (errno 0) or not.
    Marker(i32),
    /// The program runs: its pid inside the sandbox, and the serial of its own session
    /// keyring (0: the kernel has no keyrings).
    Started(i32, i32),
    /// The program exited with a code.
    Exited(i32),
    /// The program was killed by a signal.
    Signaled(i32),
    /// The program's serial of its fresh session keyring (0: no keyrings), told the init
    /// before exec.
    SessionKeyring(i32),
}

pub(crate) const MESSAGE_LEN: usize = 12;

impl Message {
    pub(crate) fn encode(self) -> [u8; MESSAGE_LEN] {
        let (tag, a, b) = match self {
            Message::InitPid(pid) => (1, pid, 0),
            Message::Ready => (2, 0, 0),
            Message::Failed(stage, errno) => (3, stage as i32, errno),
            Message::Marker(errno) => (4, errno, 0),
            Message::Started(pid, keyring) => (5, pid, keyring),
            Message::Exited(code) => (6, code, 0),
            Message::Signaled(signal) => (7, signal, 0),
            Message::SessionKeyring(serial) => (8, serial, 0),
        };
        let mut bytes = [0u8; MESSAGE_LEN];
        bytes[0..4].copy_from_slice(&(tag as u32).to_le_bytes());
        bytes[4..8].copy_from_slice(&a.to_le_bytes());
        bytes[8..12].copy_from_slice(&b.to_le_bytes());
        bytes
    }

    pub(crate) fn decode(bytes: &[u8; MESSAGE_LEN]) -> Option<Message> {
        let word =
            |i: usize| i32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let (a, b) = (word(4), word(8));
        Some(match word(0) {
            1 => Message::InitPid(a),
            2 => Message::Ready,
            3 => Message::Failed(Stage::from_code(a), b),
            4 => Message::Marker(a),
            5 => Message::Started(a, b),
            6 => Message::Exited(a),
            7 => Message::Signaled(a),
            8 => Message::SessionKeyring(a),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips() {
        let messages = [
            Message::InitPid(4242),
            Message::Ready,
            Message::Failed(Stage::PivotRoot, 22),
            Message::Marker(0),
            Message::Started(2, 914_223_108),
            Message::Exited(-1),
            Message::Signaled(9),
            Message::SessionKeyring(914_223_108),
        ];
        for message in messages {
            assert_eq!(Message::decode(&message.encode()), Some(message));
        }
    }

    #[test]
    fn every_stage_code_round_trips() {
        for stage in Stage::ALL {
            assert_eq!(Stage::from_code(stage as i32), stage);
        }
        assert_eq!(Stage::from_code(999), Stage::Unknown);
    }

    #[test]
    fn unknown_tags_are_rejected() {
        assert_eq!(Message::decode(&[0xff; MESSAGE_LEN]), None);
    }
}
