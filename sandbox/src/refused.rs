//! The kernel interfaces the program is refused: one table, [`REFUSED`], and the seccomp
//! filter built from it ([`program`]), which the program stage installs before its exec.
//!
//! Each row names a system call, its number on every ABI the sandbox supports, what the
//! filter answers and why a tool server never needs it. The answer is an errno, never a kill:
//! a program that probes for a feature sees what a kernel without it, or one that refuses
//! the caller, would say. `ENOSYS` where the kernel can be built without the feature and its
//! users already fall back on that answer; `EPERM` where a kernel that has the feature
//! refuses a caller without the capability or behind a sysctl. A system call of an ABI the
//! table does not describe (x32 on x86_64, or an unknown audit architecture) is refused whole
//! with `ENOSYS`, as by a kernel without that ABI, so no foreign ABI bypasses the table.
//! `sandbox/SECCOMP.md` is this table in markdown, checked against it by a unit test.

use nix::errno::Errno;

use crate::bpf::{OFFSET_ARCH, OFFSET_NR, answer, jump, load};

/// An ABI a process of the sandbox can make system calls with, as seccomp reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "the other machine's ABIs are built only by the tests"
    )
)]
pub(crate) enum Abi {
    X86_64,
    I386,
    Aarch64,
    Arm,
}

impl Abi {
    /// The `AUDIT_ARCH_*` value of `seccomp_data.arch`.
    const fn audit_arch(self) -> u32 {
        match self {
            Abi::X86_64 => 0xC000_003E,
            Abi::I386 => 0x4000_0003,
            Abi::Aarch64 => 0xC000_00B7,
            Abi::Arm => 0x4000_0028,
        }
    }
}

/// The ABIs a process on this machine can use: the native one and its 32-bit compat ABI.
#[cfg(target_arch = "x86_64")]
pub(crate) const NATIVE: &[Abi] = &[Abi::X86_64, Abi::I386];
#[cfg(target_arch = "aarch64")]
pub(crate) const NATIVE: &[Abi] = &[Abi::Aarch64, Abi::Arm];
// Elsewhere the table has no numbers and no filter is installed.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) const NATIVE: &[Abi] = &[];

/// A system call's number on each ABI; `None` where the ABI has no such call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Numbers {
    x86_64: Option<u32>,
    i386: Option<u32>,
    aarch64: Option<u32>,
    arm: Option<u32>,
}

impl Numbers {
    fn on(self, abi: Abi) -> Option<u32> {
        match abi {
            Abi::X86_64 => self.x86_64,
            Abi::I386 => self.i386,
            Abi::Aarch64 => self.aarch64,
            Abi::Arm => self.arm,
        }
    }
}

const fn nr(x86_64: u32, i386: u32, aarch64: u32, arm: u32) -> Numbers {
    Numbers {
        x86_64: Some(x86_64),
        i386: Some(i386),
        aarch64: Some(aarch64),
        arm: Some(arm),
    }
}

/// Calls added since Linux 5.1 have one number on every ABI.
const fn unified(n: u32) -> Numbers {
    nr(n, n, n, n)
}

/// What the filter answers to one system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Every call fails with this errno.
    Refuse(Errno),
    /// A call whose first argument (the flags) has any bit of `flags` fails with `errno`;
    /// others pass.
    RefuseWithFlags { flags: u32, errno: Errno },
    /// Considered and allowed: the row records the decision and the filter passes the call.
    Allow,
}

/// One row of [`REFUSED`]. The name and the reason are read by the test that keeps
/// `sandbox/SECCOMP.md` equal to the table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Refusal {
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "documentation, read by its test")
    )]
    pub(crate) name: &'static str,
    pub(crate) numbers: Numbers,
    pub(crate) rule: Rule,
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "documentation, read by its test")
    )]
    pub(crate) why: &'static str,
}

const NEWUSER: u32 = libc::CLONE_NEWUSER as u32;
const REFUSE_EPERM: Rule = Rule::Refuse(Errno::EPERM);
const REFUSE_ENOSYS: Rule = Rule::Refuse(Errno::ENOSYS);

/// The system calls a tool server never needs, and the two it was considered for and keeps.
pub(crate) const REFUSED: &[Refusal] = &[
    Refusal {
        name: "add_key",
        numbers: nr(248, 286, 217, 309),
        rule: REFUSE_ENOSYS,
        why: "keys live in per-uid kernel keyrings shared with the host's sessions and \
              outlive the run; ENOSYS is what a kernel without CONFIG_KEYS says, and \
              keyutils users fall back on it",
    },
    Refusal {
        name: "keyctl",
        numbers: nr(250, 288, 219, 311),
        rule: REFUSE_ENOSYS,
        why: "reads, updates, links and searches keys of the uid's user, session and \
              persistent keyrings (the auditor's login keys among them)",
    },
    Refusal {
        name: "request_key",
        numbers: nr(249, 287, 218, 310),
        rule: REFUSE_ENOSYS,
        why: "finds keys in the uid's keyrings and can make the kernel run the host's \
              /sbin/request-key as root outside every namespace",
    },
    Refusal {
        name: "bpf",
        numbers: nr(321, 357, 280, 386),
        rule: REFUSE_EPERM,
        why: "eBPF programs and maps are a large kernel attack surface; hosts with \
              kernel.unprivileged_bpf_disabled answer EPERM",
    },
    Refusal {
        name: "perf_event_open",
        numbers: nr(298, 336, 241, 364),
        rule: REFUSE_EPERM,
        why: "performance counters observe the host's CPUs and kernel (a side channel) and \
              are a recurring source of kernel bugs; a tool server never profiles",
    },
    Refusal {
        name: "io_uring_setup",
        numbers: unified(425),
        rule: REFUSE_ENOSYS,
        why: "io_uring performs opens, reads and connects that no seccomp filter sees, and \
              is a large attack surface; ENOSYS as on kernels without CONFIG_IO_URING, \
              which libuv and liburing users fall back from",
    },
    Refusal {
        name: "io_uring_enter",
        numbers: unified(426),
        rule: REFUSE_ENOSYS,
        why: "as io_uring_setup",
    },
    Refusal {
        name: "io_uring_register",
        numbers: unified(427),
        rule: REFUSE_ENOSYS,
        why: "as io_uring_setup",
    },
    Refusal {
        name: "userfaultfd",
        numbers: nr(323, 374, 282, 388),
        rule: REFUSE_EPERM,
        why: "stalls the kernel on a page fault of the caller's choosing, the usual way to \
              win kernel races; vm.unprivileged_userfaultfd=0 answers EPERM",
    },
    Refusal {
        name: "kexec_load",
        numbers: nr(246, 283, 104, 347),
        rule: REFUSE_EPERM,
        why: "loads a new kernel (needs CAP_SYS_BOOT, which the program lacks: refused anyway)",
    },
    Refusal {
        name: "kexec_file_load",
        numbers: Numbers {
            i386: None,
            ..nr(320, 0, 294, 401)
        },
        rule: REFUSE_EPERM,
        why: "as kexec_load",
    },
    Refusal {
        name: "init_module",
        numbers: nr(175, 128, 105, 128),
        rule: REFUSE_EPERM,
        why: "loads kernel code (needs CAP_SYS_MODULE: refused anyway)",
    },
    Refusal {
        name: "finit_module",
        numbers: nr(313, 350, 273, 379),
        rule: REFUSE_EPERM,
        why: "as init_module",
    },
    Refusal {
        name: "delete_module",
        numbers: nr(176, 129, 106, 129),
        rule: REFUSE_EPERM,
        why: "unloads kernel code (needs CAP_SYS_MODULE: refused anyway)",
    },
    Refusal {
        name: "open_by_handle_at",
        numbers: nr(304, 342, 265, 371),
        rule: REFUSE_EPERM,
        why: "opens any file of a mounted filesystem by handle, past the sandbox's mount \
              tree (the 'shocker' container escape; needs CAP_DAC_READ_SEARCH)",
    },
    Refusal {
        name: "name_to_handle_at",
        numbers: nr(303, 341, 264, 370),
        rule: Rule::Allow,
        why: "it only names a file the caller can already reach, the handle is \
              useless without open_by_handle_at, and tools read mount ids with it",
    },
    Refusal {
        name: "unshare",
        numbers: nr(272, 310, 97, 337),
        rule: Rule::RefuseWithFlags {
            flags: NEWUSER,
            errno: Errno::EPERM,
        },
        why: "a new user namespace gives the program every capability inside it and with \
              them kernel code it cannot reach otherwise; the other namespace flags need \
              CAP_SYS_ADMIN, which the program lacks",
    },
    Refusal {
        name: "clone",
        numbers: nr(56, 120, 220, 120),
        rule: Rule::RefuseWithFlags {
            flags: NEWUSER,
            errno: Errno::EPERM,
        },
        why: "as unshare; fork, vfork and thread flags pass",
    },
    Refusal {
        name: "clone3",
        numbers: unified(435),
        rule: REFUSE_ENOSYS,
        why: "its flags are in memory, which seccomp cannot read; ENOSYS is what kernels \
              before 5.3 say, and glibc, musl and language runtimes fall back to clone, \
              whose flags are checked",
    },
    Refusal {
        name: "setns",
        numbers: nr(308, 346, 268, 375),
        rule: REFUSE_EPERM,
        why: "joins another namespace through a descriptor (needs CAP_SYS_ADMIN for most)",
    },
    Refusal {
        name: "pivot_root",
        numbers: nr(155, 217, 41, 218),
        rule: REFUSE_EPERM,
        why: "changes the root of the mount namespace (needs CAP_SYS_ADMIN: refused anyway)",
    },
    Refusal {
        name: "mount",
        numbers: nr(165, 21, 40, 21),
        rule: REFUSE_EPERM,
        why: "changes the mount tree (needs CAP_SYS_ADMIN: refused anyway)",
    },
    Refusal {
        name: "umount2",
        numbers: nr(166, 52, 39, 52),
        rule: REFUSE_EPERM,
        why: "as mount",
    },
    Refusal {
        name: "umount",
        numbers: Numbers {
            x86_64: None,
            i386: Some(22),
            aarch64: None,
            arm: None,
        },
        rule: REFUSE_EPERM,
        why: "as mount (i386 only)",
    },
    Refusal {
        name: "open_tree",
        numbers: unified(428),
        rule: REFUSE_EPERM,
        why: "the new mount API: as mount",
    },
    Refusal {
        name: "move_mount",
        numbers: unified(429),
        rule: REFUSE_EPERM,
        why: "as open_tree",
    },
    Refusal {
        name: "fsopen",
        numbers: unified(430),
        rule: REFUSE_EPERM,
        why: "as open_tree",
    },
    Refusal {
        name: "fsconfig",
        numbers: unified(431),
        rule: REFUSE_EPERM,
        why: "as open_tree",
    },
    Refusal {
        name: "fsmount",
        numbers: unified(432),
        rule: REFUSE_EPERM,
        why: "as open_tree",
    },
    Refusal {
        name: "fspick",
        numbers: unified(433),
        rule: REFUSE_EPERM,
        why: "as open_tree",
    },
    Refusal {
        name: "mount_setattr",
        numbers: unified(442),
        rule: REFUSE_EPERM,
        why: "as open_tree",
    },
    Refusal {
        name: "open_tree_attr",
        numbers: unified(467),
        rule: REFUSE_EPERM,
        why: "as open_tree (Linux 6.15)",
    },
    Refusal {
        name: "ptrace",
        numbers: nr(101, 26, 117, 26),
        rule: REFUSE_EPERM,
        why: "reads and writes the memory and registers of the run's other processes and \
              is a recurring kernel attack surface; a tool server never debugs, and \
              debuggers and crash reporters fail as under Yama's ptrace_scope=3",
    },
    Refusal {
        name: "process_vm_readv",
        numbers: nr(310, 347, 270, 376),
        rule: REFUSE_EPERM,
        why: "ptrace's access to another process's memory, without ptrace",
    },
    Refusal {
        name: "process_vm_writev",
        numbers: nr(311, 348, 271, 377),
        rule: REFUSE_EPERM,
        why: "as process_vm_readv",
    },
    Refusal {
        name: "pidfd_getfd",
        numbers: unified(438),
        rule: REFUSE_EPERM,
        why: "copies a descriptor out of another process (ptrace access)",
    },
    Refusal {
        name: "personality",
        numbers: nr(135, 136, 92, 136),
        rule: Rule::Allow,
        why: "it changes only the caller's own execution domain, runtimes query \
              it, and its one flag that matters to the kernel (MMAP_PAGE_ZERO) is bounded \
              by vm.mmap_min_addr",
    },
];

/// x32 system calls are x86_64 calls with this bit set in the number.
const X32_BIT: u32 = 0x4000_0000;

/// The low 32 bits of `args[0]` (both supported ABIs are little-endian); every flag the
/// table tests is among them.
const OFFSET_ARG0_LOW: u32 = 16;

fn errno(errno: Errno) -> libc::sock_filter {
    answer(libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA))
}

/// The BPF program for `abis`: per ABI, its refused calls answer their errno and every other
/// call is allowed; any other ABI is refused whole with ENOSYS.
pub(crate) fn program(abis: &[Abi]) -> Vec<libc::sock_filter> {
    let mut filter = vec![load(OFFSET_ARCH)];
    for abi in abis {
        let block = block(*abi);
        let skip = u8::try_from(block.len()).expect("an ABI's block fits a BPF jump");
        filter.push(jump(libc::BPF_JEQ, abi.audit_arch(), 0, skip));
        filter.extend(block);
    }
    filter.push(errno(Errno::ENOSYS));
    filter
}

/// One ABI's calls: loads the number, ends in an answer on every path.
fn block(abi: Abi) -> Vec<libc::sock_filter> {
    let allow = answer(libc::SECCOMP_RET_ALLOW);
    let mut block = vec![load(OFFSET_NR)];
    if abi == Abi::X86_64 {
        block.push(jump(libc::BPF_JGE, X32_BIT, 0, 1));
        block.push(errno(Errno::ENOSYS));
    }
    for refusal in REFUSED {
        let Some(nr) = refusal.numbers.on(abi) else {
            continue;
        };
        match refusal.rule {
            Rule::Refuse(e) => {
                block.push(jump(libc::BPF_JEQ, nr, 0, 1));
                block.push(errno(e));
            }
            Rule::RefuseWithFlags { flags, errno: e } => {
                block.push(jump(libc::BPF_JEQ, nr, 0, 4));
                block.push(load(OFFSET_ARG0_LOW));
                block.push(jump(libc::BPF_JSET, flags, 0, 1));
                block.push(errno(e));
                block.push(allow);
            }
            Rule::Allow => {}
        }
    }
    block.push(allow);
    block
}

/// Installs the filter for this machine's ABIs on the calling thread, which has set
/// no_new_privs. On a machine the table has no numbers for, nothing is installed.
pub(crate) fn install() -> Result<(), Errno> {
    if NATIVE.is_empty() {
        return Ok(());
    }
    crate::sys::seccomp_filter(&program(NATIVE))
}

#[cfg(test)]
mod tests;
