//! The seccomp filter that stops every `execve`/`execveat` for the exec listener, and the
//! table that tells, from a notification's architecture and syscall number, which call it is
//! and how wide the caller's pointers are.

use crate::bpf::{OFFSET_ARCH, OFFSET_NR, answer, jump, load};

/// Which exec call a notification stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExecCall {
    /// `execve(path, argv, envp)`.
    Execve,
    /// `execveat(dirfd, path, argv, envp, flags)`.
    Execveat,
}

/// One system call the filter stops: audit architecture, number, call, pointer width.
type Entry = (u32, u32, ExecCall, usize);

const X32_BIT: u32 = 0x4000_0000;

#[cfg(target_arch = "x86_64")]
const TABLE: &[Entry] = &[
    (0xC000_003E, 59, ExecCall::Execve, 8),              // x86_64
    (0xC000_003E, 322, ExecCall::Execveat, 8),           // x86_64
    (0xC000_003E, X32_BIT | 520, ExecCall::Execve, 4),   // x32
    (0xC000_003E, X32_BIT | 545, ExecCall::Execveat, 4), // x32
    (0x4000_0003, 11, ExecCall::Execve, 4),              // i386
    (0x4000_0003, 358, ExecCall::Execveat, 4),           // i386
];
#[cfg(target_arch = "aarch64")]
const TABLE: &[Entry] = &[
    (0xC000_00B7, 221, ExecCall::Execve, 8),   // aarch64
    (0xC000_00B7, 281, ExecCall::Execveat, 8), // aarch64
    (0x4000_0028, 11, ExecCall::Execve, 4),    // arm (compat)
    (0x4000_0028, 387, ExecCall::Execveat, 4), // arm (compat)
];
// Elsewhere nothing is stopped, no argv is captured, and the self-test says so.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const TABLE: &[Entry] = &[];

/// The call and pointer width of a notified system call, if the filter stops it.
pub(crate) fn exec_call(arch: u32, nr: i32) -> Option<(ExecCall, usize)> {
    TABLE
        .iter()
        .find(|(a, n, _, _)| *a == arch && *n as i32 == nr)
        .map(|(_, _, call, width)| (*call, *width))
}

/// The BPF program: for each architecture of the table, notify its exec calls; allow
/// everything else.
pub(crate) fn program() -> Vec<libc::sock_filter> {
    let allow = answer(libc::SECCOMP_RET_ALLOW);
    let notify = answer(libc::SECCOMP_RET_USER_NOTIF);
    let mut arches: Vec<u32> = TABLE.iter().map(|e| e.0).collect();
    arches.dedup();
    let mut filter = Vec::new();
    let mut to_notify = Vec::new();
    for arch in arches {
        let calls: Vec<u32> = TABLE.iter().filter(|e| e.0 == arch).map(|e| e.1).collect();
        filter.push(load(OFFSET_ARCH));
        // Another architecture skips this block: load nr, one jump per call, allow.
        filter.push(jump(libc::BPF_JEQ, arch, 0, (calls.len() + 2) as u8));
        filter.push(load(OFFSET_NR));
        for nr in calls {
            to_notify.push(filter.len());
            filter.push(jump(libc::BPF_JEQ, nr, 0, 0));
        }
        filter.push(allow);
    }
    filter.push(allow);
    let notify_at = filter.len();
    filter.push(notify);
    for at in to_notify {
        filter[at].jt = (notify_at - at - 1) as u8;
    }
    filter
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the three instruction kinds the filter uses over (nr, arch).
    fn run(filter: &[libc::sock_filter], nr: u32, arch: u32) -> u32 {
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let insn = filter[pc];
            match u32::from(insn.code) {
                c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
                    acc = if insn.k == OFFSET_NR { nr } else { arch };
                    pc += 1;
                }
                c if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => {
                    let skip = if acc == insn.k { insn.jt } else { insn.jf };
                    pc += 1 + usize::from(skip);
                }
                _ => return insn.k,
            }
        }
    }

    #[test]
    fn the_filter_notifies_exactly_the_exec_calls_of_every_architecture() {
        let filter = program();
        for (arch, nr, _, _) in TABLE {
            assert_eq!(run(&filter, *nr, *arch), libc::SECCOMP_RET_USER_NOTIF);
            assert_eq!(run(&filter, nr + 1, *arch), libc::SECCOMP_RET_ALLOW);
            assert!(exec_call(*arch, *nr as i32).is_some());
        }
        assert_eq!(run(&filter, 59, 0x1234), libc::SECCOMP_RET_ALLOW);
        assert_eq!(exec_call(0x1234, 59), None);
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    /// The native architecture's `execve`, as a notification reports it.
    pub(crate) fn native_execve() -> (u32, i32) {
        (super::TABLE[0].0, super::TABLE[0].1 as i32)
    }
}
