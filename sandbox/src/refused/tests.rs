use super::*;

impl Abi {
    const ALL: [Abi; 4] = [Abi::X86_64, Abi::I386, Abi::Aarch64, Abi::Arm];

    fn name(self) -> &'static str {
        match self {
            Abi::X86_64 => "x86_64",
            Abi::I386 => "i386",
            Abi::Aarch64 => "aarch64",
            Abi::Arm => "arm",
        }
    }
}

/// What the filter reads of a system call: `seccomp_data`'s number, arch and first argument.
#[derive(Debug, Clone, Copy)]
struct Call {
    nr: u32,
    arch: u32,
    arg0: u64,
}

fn call(abi: Abi, nr: u32) -> Call {
    Call {
        nr,
        arch: abi.audit_arch(),
        arg0: 0,
    }
}

/// Runs the instruction kinds the filter uses over one call; returns the action.
fn run(filter: &[libc::sock_filter], call: Call) -> u32 {
    let (mut pc, mut acc) = (0usize, 0u32);
    loop {
        let insn = filter[pc];
        let code = u32::from(insn.code);
        if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS {
            acc = match insn.k {
                OFFSET_NR => call.nr,
                OFFSET_ARCH => call.arch,
                OFFSET_ARG0_LOW => call.arg0 as u32,
                other => panic!("load of an offset the filter never reads: {other}"),
            };
            pc += 1;
            continue;
        }
        if code == libc::BPF_RET | libc::BPF_K {
            return insn.k;
        }
        let taken = match code {
            c if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => acc == insn.k,
            c if c == libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K => acc >= insn.k,
            c if c == libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K => acc & insn.k != 0,
            other => panic!("instruction the filter never uses: {other:#x}"),
        };
        pc += 1 + usize::from(if taken { insn.jt } else { insn.jf });
    }
}

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;

fn refused_with(errno: Errno) -> u32 {
    libc::SECCOMP_RET_ERRNO | errno as u32
}

/// The programs of both supported machines, whatever this one is.
fn machines() -> [(&'static [Abi], Vec<libc::sock_filter>); 2] {
    const X86: &[Abi] = &[Abi::X86_64, Abi::I386];
    const ARM: &[Abi] = &[Abi::Aarch64, Abi::Arm];
    [(X86, program(X86)), (ARM, program(ARM))]
}

// fork, vfork (posix_spawn) and pthread_create's flags, with the exit signal of fork.
const FORK: u64 = libc::SIGCHLD as u64;
const VFORK: u64 = (libc::CLONE_VM | libc::CLONE_VFORK) as u64 | FORK;
const THREAD: u64 = (libc::CLONE_VM
    | libc::CLONE_FS
    | libc::CLONE_FILES
    | libc::CLONE_SIGHAND
    | libc::CLONE_THREAD
    | libc::CLONE_SYSVSEM
    | libc::CLONE_SETTLS
    | libc::CLONE_PARENT_SETTID
    | libc::CLONE_CHILD_CLEARTID) as u64;
const NEWUSER_FLAG: u64 = libc::CLONE_NEWUSER as u64;

#[test]
fn every_refused_call_answers_its_errno_on_every_abi() {
    for (abis, filter) in machines() {
        for abi in abis {
            for refusal in REFUSED {
                let Some(nr) = refusal.numbers.on(*abi) else {
                    continue;
                };
                let got = run(&filter, call(*abi, nr));
                let want = match refusal.rule {
                    Rule::Refuse(errno) => refused_with(errno),
                    Rule::RefuseWithFlags { .. } | Rule::Allow => ALLOW,
                };
                assert_eq!(got, want, "{} on {}", refusal.name, abi.name());
            }
        }
    }
}

#[test]
fn clone_and_unshare_with_a_new_user_namespace_are_refused_and_forks_and_threads_pass() {
    let flagged = ["clone", "unshare"];
    for (abis, filter) in machines() {
        for abi in abis {
            for name in flagged {
                let row = REFUSED.iter().find(|r| r.name == name).unwrap();
                let nr = row.numbers.on(*abi).unwrap();
                let with = |arg0| {
                    run(
                        &filter,
                        Call {
                            arg0,
                            ..call(*abi, nr)
                        },
                    )
                };
                let at = format!("{name} on {}", abi.name());
                for flags in [
                    0,
                    FORK,
                    VFORK,
                    THREAD,
                    libc::CLONE_NEWNS as u64,
                    0xffff_ffff << 32,
                ] {
                    assert_eq!(with(flags), ALLOW, "{at} with {flags:#x}");
                }
                for flags in [NEWUSER_FLAG, NEWUSER_FLAG | FORK, NEWUSER_FLAG | THREAD, !0] {
                    assert_eq!(
                        with(flags),
                        refused_with(Errno::EPERM),
                        "{at} with {flags:#x}"
                    );
                }
            }
            let clone3 = unified(435).on(*abi).unwrap();
            assert_eq!(
                run(&filter, call(*abi, clone3)),
                refused_with(Errno::ENOSYS)
            );
        }
    }
}

#[test]
fn every_call_outside_the_table_is_allowed_on_every_abi() {
    for (abis, filter) in machines() {
        for abi in abis {
            for nr in 0..1024 {
                let listed = REFUSED.iter().any(|r| r.numbers.on(*abi) == Some(nr));
                if !listed {
                    assert_eq!(
                        run(&filter, call(*abi, nr)),
                        ALLOW,
                        "{nr} on {}",
                        abi.name()
                    );
                }
            }
        }
    }
}

#[test]
fn x32_and_unknown_abis_are_refused_whole() {
    let [(_, x86), (_, arm)] = machines();
    // x32's getpid and keyctl: a foreign ABI must not reach the x86_64 numbers.
    for nr in [X32_BIT | 39, X32_BIT | 250, u32::MAX] {
        assert_eq!(
            run(&x86, call(Abi::X86_64, nr)),
            refused_with(Errno::ENOSYS)
        );
    }
    for (filter, foreign) in [(&x86, Abi::Aarch64), (&arm, Abi::X86_64), (&arm, Abi::I386)] {
        for nr in [39, 172, 250, 217] {
            let got = run(filter, call(foreign, nr));
            assert_eq!(
                got,
                refused_with(Errno::ENOSYS),
                "{nr} of {}",
                foreign.name()
            );
        }
    }
    let unknown = Call {
        nr: 59,
        arch: 0x1234,
        arg0: 0,
    };
    assert_eq!(run(&x86, unknown), refused_with(Errno::ENOSYS));
    assert_eq!(run(&program(&[]), unknown), refused_with(Errno::ENOSYS));
}

#[test]
fn each_abi_lists_a_number_once_and_every_row_has_a_native_number() {
    for abi in Abi::ALL {
        let mut numbers: Vec<u32> = REFUSED.iter().filter_map(|r| r.numbers.on(abi)).collect();
        numbers.sort_unstable();
        let before = numbers.len();
        numbers.dedup();
        assert_eq!(
            numbers.len(),
            before,
            "a number appears twice on {}",
            abi.name()
        );
    }
    let mut names: Vec<&str> = REFUSED.iter().map(|r| r.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), REFUSED.len(), "a call appears twice");
    for row in REFUSED.iter().filter(|r| r.name != "umount") {
        assert!(
            row.numbers.x86_64.is_some() && row.numbers.aarch64.is_some(),
            "{}",
            row.name
        );
    }
}

/// The numbers libc knows for this machine's native ABI.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn libc_numbers() -> Vec<(&'static str, libc::c_long)> {
    vec![
        ("add_key", libc::SYS_add_key),
        ("keyctl", libc::SYS_keyctl),
        ("request_key", libc::SYS_request_key),
        ("bpf", libc::SYS_bpf),
        ("perf_event_open", libc::SYS_perf_event_open),
        ("io_uring_setup", libc::SYS_io_uring_setup),
        ("io_uring_enter", libc::SYS_io_uring_enter),
        ("io_uring_register", libc::SYS_io_uring_register),
        ("userfaultfd", libc::SYS_userfaultfd),
        ("kexec_load", libc::SYS_kexec_load),
        ("kexec_file_load", libc::SYS_kexec_file_load),
        ("init_module", libc::SYS_init_module),
        ("finit_module", libc::SYS_finit_module),
        ("delete_module", libc::SYS_delete_module),
        ("open_by_handle_at", libc::SYS_open_by_handle_at),
        ("name_to_handle_at", libc::SYS_name_to_handle_at),
        ("unshare", libc::SYS_unshare),
        ("clone", libc::SYS_clone),
        ("clone3", libc::SYS_clone3),
        ("setns", libc::SYS_setns),
        ("pivot_root", libc::SYS_pivot_root),
        ("mount", libc::SYS_mount),
        ("umount2", libc::SYS_umount2),
        ("open_tree", libc::SYS_open_tree),
        ("move_mount", libc::SYS_move_mount),
        ("fsopen", libc::SYS_fsopen),
        ("fsconfig", libc::SYS_fsconfig),
        ("fsmount", libc::SYS_fsmount),
        ("fspick", libc::SYS_fspick),
        ("mount_setattr", libc::SYS_mount_setattr),
        ("ptrace", libc::SYS_ptrace),
        ("process_vm_readv", libc::SYS_process_vm_readv),
        ("process_vm_writev", libc::SYS_process_vm_writev),
        ("pidfd_getfd", libc::SYS_pidfd_getfd),
        ("personality", libc::SYS_personality),
    ]
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn the_native_numbers_are_libcs() {
    let native = NATIVE[0];
    let known = libc_numbers();
    for row in REFUSED {
        let ours = row.numbers.on(native).map(i64::from);
        match known.iter().find(|(name, _)| *name == row.name) {
            Some((_, theirs)) => assert_eq!(ours, Some(*theirs), "{}", row.name),
            // Calls libc does not know yet, and umount, which the native ABI lacks.
            None => assert!(
                ["open_tree_attr", "umount"].contains(&row.name),
                "{} is not checked against libc",
                row.name
            ),
        }
    }
}

/// [`REFUSED`] as the markdown table of `sandbox/SECCOMP.md`.
fn markdown() -> String {
    let mut table = String::from(
        "| System call | x86_64 | i386 | aarch64 | arm | Answer | Why |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for row in REFUSED {
        let numbers: Vec<String> = Abi::ALL
            .iter()
            .map(|abi| row.numbers.on(*abi).map_or("—".into(), |n| n.to_string()))
            .collect();
        let answer = match row.rule {
            Rule::Refuse(errno) => format!("{errno:?}"),
            Rule::RefuseWithFlags { flags, errno } if flags == NEWUSER => {
                format!("{errno:?} with CLONE_NEWUSER")
            }
            Rule::RefuseWithFlags { flags, errno } => format!("{errno:?} with flags {flags:#x}"),
            Rule::Allow => "allowed".into(),
        };
        table.push_str(&format!(
            "| `{}` | {} | {answer} | {} |\n",
            row.name,
            numbers.join(" | "),
            row.why
        ));
    }
    table
}

#[test]
fn seccomp_md_is_the_table() {
    let document = include_str!("../../SECCOMP.md");
    let table = markdown();
    assert!(
        document.contains(&table),
        "sandbox/SECCOMP.md does not hold the table of refused.rs; its table is now:\n\n{table}"
    );
}

/// One call made in a child under the real kernel's filter, with the answer it must get.
struct KernelCase {
    name: &'static str,
    nr: libc::c_long,
    arg0: u64,
    want: Result<(), Errno>,
}

fn kernel_cases() -> Vec<KernelCase> {
    let native = NATIVE[0];
    let mut cases = Vec::new();
    for row in REFUSED {
        let Some(nr) = row.numbers.on(native) else {
            continue;
        };
        let (arg0, want) = match row.rule {
            Rule::Refuse(errno) => (0, Err(errno)),
            Rule::RefuseWithFlags { flags, errno } => (u64::from(flags), Err(errno)),
            // Made with arguments the kernel rejects; the answer must not be the filter's.
            Rule::Allow => continue,
        };
        cases.push(KernelCase {
            name: row.name,
            nr: nr.into(),
            arg0,
            want,
        });
    }
    cases.push(KernelCase {
        name: "getpid",
        nr: libc::SYS_getpid,
        arg0: 0,
        want: Ok(()),
    });
    cases.push(KernelCase {
        name: "unshare(0)",
        nr: libc::SYS_unshare,
        arg0: 0,
        want: Ok(()),
    });
    cases.push(KernelCase {
        name: "personality(query)",
        nr: libc::SYS_personality,
        arg0: 0xffff_ffff,
        want: Ok(()),
    });
    if native == Abi::X86_64 {
        cases.push(KernelCase {
            name: "x32 getpid",
            nr: (X32_BIT | 39).into(),
            arg0: 0,
            want: Err(Errno::ENOSYS),
        });
    }
    cases
}

/// Without root: a child sets no_new_privs, drops whatever capabilities it has (so a call
/// the filter failed to refuse cannot change the host), installs the filter and makes every
/// case's call; it writes one errno per case (0 for success) to a pipe.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn the_kernel_takes_the_filter_and_answers_each_native_call_as_the_table_says() {
    use std::os::fd::AsFd;

    let filter = program(NATIVE);
    let cases = kernel_cases();
    let (read, write) = nix::unistd::pipe().unwrap();
    let nix::unistd::ForkResult::Parent { child } = crate::sys::fork().unwrap() else {
        drop(read);
        let me = nix::unistd::getpid();
        let _ = caps::clear(None, caps::CapSet::Effective);
        let _ = caps::clear(None, caps::CapSet::Permitted);
        if nix::sys::prctl::set_no_new_privs().is_err()
            || crate::sys::seccomp_filter(&filter).is_err()
        {
            crate::sys::exit_now(2);
        }
        for case in &cases {
            let result = crate::sys::syscall_with_integers(case.nr, [case.arg0, 0, 0, 0, 0, 0]);
            if nix::unistd::getpid() != me {
                // A clone the filter let through: the copy leaves at once.
                crate::sys::exit_now(3);
            }
            let errno = result.err().map_or(0, |e| e as i32);
            let _ = nix::unistd::write(write.as_fd(), &errno.to_le_bytes());
        }
        crate::sys::exit_now(0)
    };
    drop(write);
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::fs::File::from(read), &mut bytes).unwrap();
    let status = nix::sys::wait::waitpid(child, None).unwrap();
    assert_eq!(
        status,
        nix::sys::wait::WaitStatus::Exited(child, 0),
        "the filter did not load"
    );
    assert_eq!(bytes.len(), cases.len() * 4);
    for (case, answer) in cases.iter().zip(bytes.chunks(4)) {
        let errno = i32::from_le_bytes([answer[0], answer[1], answer[2], answer[3]]);
        let got = if errno == 0 {
            Ok(())
        } else {
            Err(Errno::from_raw(errno))
        };
        assert_eq!(got, case.want, "{}", case.name);
    }
}
