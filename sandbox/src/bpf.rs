//! The classic-BPF building blocks both seccomp filters are written in (the exec listener's
//! `procs/filter.rs` and the refusals of `refused.rs`): loads of `seccomp_data` fields,
//! conditional jumps and return actions.

/// Offset of `seccomp_data.nr`.
pub(crate) const OFFSET_NR: u32 = 0;
/// Offset of `seccomp_data.arch`.
pub(crate) const OFFSET_ARCH: u32 = 4;

/// One non-jumping instruction.
pub(crate) fn statement(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

/// A conditional jump `op` against the constant `k`: skip `jt` instructions when it holds,
/// `jf` when not.
pub(crate) fn jump(op: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: (libc::BPF_JMP | op | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    }
}

/// Loads the 32-bit word at `offset` of `seccomp_data` into the accumulator.
pub(crate) fn load(offset: u32) -> libc::sock_filter {
    statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, offset)
}

/// Returns `action` (a `SECCOMP_RET_*` value).
pub(crate) fn answer(action: u32) -> libc::sock_filter {
    statement(libc::BPF_RET | libc::BPF_K, action)
}
