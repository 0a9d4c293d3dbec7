//! Every `unsafe` block and raw system call of the crate lives here.
//!
//! The rest of the crate uses the safe wrappers of `nix` and the small functions below; each
//! `unsafe` block states why it is sound. Keeping them in one file means a reviewer reads one
//! file to audit what the sandbox asks of the kernel outside the type system.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use nix::errno::Errno;
use nix::sys::signal::{SigHandler, Signal};
use nix::unistd::{ForkResult, Pid};

/// Forks the calling process.
///
/// The caller in the child must only use code that does not depend on other threads of the
/// parent: glibc's `fork` resets its allocator locks, so allocation is fine, but no lock the
/// parent's other threads may hold (stdio, logging) may be taken.
pub(crate) fn fork() -> Result<ForkResult, Errno> {
    // SAFETY: the sandbox calls this only from `spawn`, and both branches of every call site
    // either return to the parent unchanged or run child code that touches no lock shared
    // with the parent's other threads and ends in `exec` or `_exit`.
    unsafe { nix::unistd::fork() }
}

/// Forks a process that has one thread (checked by the caller): the child is a whole copy,
/// free to allocate, log and run ordinary code.
pub(crate) fn fork_alone() -> Result<ForkResult, Errno> {
    // SAFETY: the only caller (`sweeper::start_sweeper`) checks first that the process has
    // one thread, so no lock can be held by a thread the child lacks; the child runs
    // ordinary single-threaded code and ends in `_exit`.
    unsafe { nix::unistd::fork() }
}

/// Points standard input, output and error at `/dev/null` (a process that must not hold
/// its parent's streams open).
pub(crate) fn silence_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for target in 0..=2 {
            let _ = dup_onto(null.as_raw_fd(), target);
        }
    }
}

/// Takes ownership of a descriptor number that the caller knows is open and unowned.
pub(crate) fn adopt_fd(fd: RawFd) -> OwnedFd {
    // SAFETY: callers pass descriptors they placed at fixed numbers themselves (dup2 in a
    // child) and that no other owner refers to; the OwnedFd becomes the only owner.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Duplicates `fd` onto exactly `target`, clearing close-on-exec on the copy.
pub(crate) fn dup_onto(fd: RawFd, target: RawFd) -> Result<(), Errno> {
    if fd == target {
        return clear_cloexec(target);
    }
    // SAFETY: dup2 only manipulates the descriptor table; both numbers are plain integers
    // and `target` is a number this process reserves for the purpose.
    let rc = unsafe { libc::dup2(fd, target) };
    Errno::result(rc).map(drop)
}

/// Duplicates `fd` to the lowest free number at or above `min`, close-on-exec.
pub(crate) fn dup_above(fd: RawFd, min: RawFd) -> Result<RawFd, Errno> {
    // SAFETY: F_DUPFD_CLOEXEC creates a new descriptor and touches no memory.
    let rc = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, min) };
    Errno::result(rc)
}

fn clear_cloexec(fd: RawFd) -> Result<(), Errno> {
    // SAFETY: F_SETFD with 0 only clears FD_CLOEXEC on a descriptor this process owns.
    let rc = unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
    Errno::result(rc).map(drop)
}

/// Closes every descriptor numbered `first` or above.
pub(crate) fn close_from(first: RawFd) -> Result<(), Errno> {
    // SAFETY: close_range takes plain integers; closing descriptors this process no longer
    // needs cannot violate memory safety because the child owns no Rust object for them
    // (it runs straight to exec or to a loop that uses fixed, lower descriptor numbers).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first as libc::c_uint,
            libc::c_uint::MAX,
            0,
        )
    };
    Errno::result(rc).map(drop)
}

/// Makes `/proc/self/cmdline` read `title` instead of the arguments the process was
/// started with: the sandbox's init is a fork of vac, and the program can read pid 1's
/// command line. The argument area is overwritten in place through `/proc/self/mem` (as
/// setproctitle does), `title` and a NUL first, its last byte not NUL, so that the kernel
/// reads the title up to its NUL; PR_SET_MM would need CAP_SYS_RESOURCE, which a host's
/// root may lack. A title longer than the area is cut.
pub(crate) fn set_cmdline(title: &str) -> Result<(), Errno> {
    use std::os::unix::fs::FileExt;
    let io = |e: std::io::Error| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO));
    let stat = std::fs::read_to_string("/proc/self/stat").map_err(io)?;
    // Fields after the command name's closing parenthesis, from field 3 (state) on:
    // arg_start and arg_end are fields 48 and 49.
    let after = stat.rsplit_once(')').ok_or(Errno::EINVAL)?.1;
    let field = |n: usize| -> Result<u64, Errno> {
        after
            .split_whitespace()
            .nth(n - 3)
            .and_then(|v| v.parse().ok())
            .ok_or(Errno::EINVAL)
    };
    let (start, end) = (field(48)?, field(49)?);
    let len = usize::try_from(end.saturating_sub(start)).map_err(|_| Errno::EINVAL)?;
    if len < 2 {
        return Err(Errno::EINVAL);
    }
    let mut area = vec![0u8; len];
    let cut = title.len().min(len - 2);
    area[..cut].copy_from_slice(&title.as_bytes()[..cut]);
    area[len - 1] = b' ';
    let mem = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/self/mem")
        .map_err(io)?;
    mem.write_all_at(&area, start).map_err(io)
}

/// Caps how many heaps glibc's allocator makes for the process's threads (`M_ARENA_MAX`).
/// Returns false if the allocator refused.
pub(crate) fn cap_malloc_arenas(arenas: i32) -> bool {
    // SAFETY: mallopt only sets a parameter of the allocator, under its own lock; it takes
    // no pointer and is called from safe code's thread like any allocation.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) == 1 }
}

/// Exits the calling process immediately, without running destructors or atexit handlers.
pub(crate) fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and is async-signal-safe; skipping destructors is the
    // point in a forked child that shares copies of the parent's objects.
    unsafe { libc::_exit(code) }
}

/// Restores the default disposition of a signal (the Rust runtime ignores SIGPIPE, and an
/// ignored disposition survives exec).
pub(crate) fn default_signal(signal: Signal) -> Result<(), Errno> {
    // SAFETY: installing SIG_DFL registers no Rust handler, so no handler can run Rust code
    // in signal context.
    unsafe { nix::sys::signal::signal(signal, SigHandler::SigDfl) }.map(drop)
}

/// Brings the loopback interface of the current network namespace up.
pub(crate) fn loopback_up() -> Result<(), Errno> {
    let socket = nix::sys::socket::socket(
        nix::sys::socket::AddressFamily::Inet,
        nix::sys::socket::SockType::Datagram,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // SAFETY: ifreq is a plain C struct for which all-zero bytes are a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads the flags of the interface named in `request` into it; the
    // pointer is valid for the duration of the call.
    Errno::result(unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) })?;
    // SAFETY: the union field ifru_flags is the one SIOCGIFFLAGS just filled.
    unsafe { request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
    // SAFETY: SIOCSIFFLAGS reads `request`, which is valid for the duration of the call.
    Errno::result(unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS, &request) })?;
    Ok(())
}

/// A TAP device named `name` in the calling thread's network namespace, as a non-blocking
/// descriptor that reads the Ethernet frames the kernel sends out of it and writes the ones
/// it receives, each behind a `virtio_net_hdr` (so a frame whose checksum or segmentation
/// another device left to hardware passes as it is). The device lives as long as the
/// descriptor.
pub(crate) fn open_tap(name: &str) -> Result<OwnedFd, Errno> {
    let fd = nix::fcntl::open(
        "/dev/net/tun",
        nix::fcntl::OFlag::O_RDWR | nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK,
        nix::sys::stat::Mode::empty(),
    )?;
    // SAFETY: ifreq is a plain C struct for which all-zero bytes are a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    if name.len() >= request.ifr_name.len() {
        return Err(Errno::ENAMETOOLONG);
    }
    for (slot, byte) in request.ifr_name.iter_mut().zip(name.bytes()) {
        *slot = byte as libc::c_char;
    }
    request.ifr_ifru.ifru_flags =
        (libc::IFF_TAP | libc::IFF_NO_PI | libc::IFF_VNET_HDR) as libc::c_short;
    // SAFETY: TUNSETIFF reads the name and flags from `request` (valid for the call) and
    // attaches the descriptor, which this frame owns, to the device it creates.
    Errno::result(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &request) })?;
    Ok(fd)
}

/// An `AF_PACKET` raw socket on interface `index` alone, non-blocking: it reads every frame
/// that arrives there (not the ones it sends itself) and sends frames out of it, each
/// behind a `virtio_net_hdr` as a TAP device opened by [`open_tap`] reads and writes them.
pub(crate) fn link_socket(index: u32) -> Result<OwnedFd, Errno> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockProtocol, SockType};
    let socket = nix::sys::socket::socket(
        AddressFamily::Packet,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        SockProtocol::EthAll,
    )?;
    let one: libc::c_int = 1;
    for option in [libc::PACKET_VNET_HDR, libc::PACKET_IGNORE_OUTGOING] {
        // SAFETY: both options read one int from a pointer valid for the call.
        Errno::result(unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_PACKET,
                option,
                (&raw const one).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        })?;
    }
    // SAFETY: sockaddr_ll is a plain C struct for which all-zero bytes are a valid value.
    let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    address.sll_family = libc::AF_PACKET as libc::c_ushort;
    address.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
    address.sll_ifindex = index as libc::c_int;
    // SAFETY: bind reads `size_of::<sockaddr_ll>()` bytes from `address`, which this frame
    // owns for the call.
    Errno::result(unsafe {
        libc::bind(
            socket.as_raw_fd(),
            (&raw const address).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })?;
    Ok(socket)
}

/// `struct loop_info64` of `<linux/loop.h>`.
#[repr(C)]
struct LoopInfo64 {
    device: u64,
    inode: u64,
    rdevice: u64,
    offset: u64,
    size_limit: u64,
    number: u32,
    encrypt_type: u32,
    encrypt_key_size: u32,
    flags: u32,
    file_name: [u8; 64],
    crypt_name: [u8; 64],
    encrypt_key: [u8; 32],
    init: [u64; 2],
}

/// `struct loop_config` of `<linux/loop.h>`.
#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

const LOOP_CONFIGURE: libc::Ioctl = 0x4C0A;
const LOOP_CTL_GET_FREE: libc::Ioctl = 0x4C82;
const LO_FLAGS_READ_ONLY: u32 = 1;
const LO_FLAGS_AUTOCLEAR: u32 = 4;

/// Attaches `image` read-only to a free loop device and returns the device's descriptor
/// and path. The device detaches itself once its last descriptor and mount are gone
/// (autoclear), so nothing of it outlives the run, whatever ends vac.
pub(crate) fn attach_loop(image: BorrowedFd<'_>) -> Result<(OwnedFd, PathBuf), Errno> {
    use nix::fcntl::OFlag;
    let control = nix::fcntl::open(
        "/dev/loop-control",
        OFlag::O_RDWR | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )?;
    // Another process may take the free device first: then ask again.
    for _ in 0..16 {
        // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a device number or -1.
        let number = Errno::result(unsafe { libc::ioctl(control.as_raw_fd(), LOOP_CTL_GET_FREE) })?;
        let path = PathBuf::from(format!("/dev/loop{number}"));
        let device = nix::fcntl::open(
            &path,
            OFlag::O_RDWR | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )?;
        let mut config = LoopConfig {
            fd: image.as_raw_fd() as u32,
            block_size: 0,
            info: LoopInfo64 {
                device: 0,
                inode: 0,
                rdevice: 0,
                offset: 0,
                size_limit: 0,
                number: 0,
                encrypt_type: 0,
                encrypt_key_size: 0,
                flags: LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR,
                file_name: [0; 64],
                crypt_name: [0; 64],
                encrypt_key: [0; 32],
                init: [0; 2],
            },
            reserved: [0; 8],
        };
        // SAFETY: LOOP_CONFIGURE reads one loop_config (laid out as the kernel's) from a
        // pointer valid for the call; the image descriptor in it is open and borrowed.
        match Errno::result(unsafe {
            libc::ioctl(device.as_raw_fd(), LOOP_CONFIGURE, &raw mut config)
        }) {
            Ok(_) => return Ok((device, path)),
            Err(Errno::EBUSY) => continue,
            Err(errno) => return Err(errno),
        }
    }
    Err(Errno::EBUSY)
}

/// Opens a pidfd: a handle on a process that cannot be confused with a later process that
/// reuses its pid.
pub(crate) fn pidfd_open(pid: Pid) -> Result<OwnedFd, Errno> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let rc = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    let fd = Errno::result(rc)? as RawFd;
    // SAFETY: the kernel just returned this new descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sends `signal` to the process behind a pidfd.
pub(crate) fn pidfd_send_signal(pidfd: BorrowedFd<'_>, signal: Signal) -> Result<(), Errno> {
    // SAFETY: the descriptor is a live pidfd borrowed for the call; a null siginfo asks the
    // kernel to fill in the default one.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            signal as libc::c_int,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    Errno::result(rc).map(drop)
}

/// Reads an extended attribute of `path` without following a final symlink. `Ok(None)` when
/// the attribute is absent or the filesystem has no xattrs.
pub(crate) fn lgetxattr(path: &CStr, name: &CStr) -> Result<Option<Vec<u8>>, Errno> {
    read_xattr(|buffer| {
        // SAFETY: both names are NUL-terminated C strings and the buffer pointer and length
        // describe memory owned by `buffer` for the duration of the call.
        unsafe {
            libc::lgetxattr(
                path.as_ptr(),
                name.as_ptr(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        }
    })
}

/// An extended attribute of the open file `file` (`None` when it has none): the witness
/// reads the overlay's marks by descriptor, so no path length limits it.
pub(crate) fn fgetxattr(file: &std::fs::File, name: &CStr) -> Result<Option<Vec<u8>>, Errno> {
    read_xattr(|buffer| {
        // SAFETY: the descriptor is open for the duration of the call, the name is a
        // NUL-terminated C string, and the buffer pointer and length describe `buffer`.
        unsafe {
            libc::fgetxattr(
                file.as_raw_fd(),
                name.as_ptr(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        }
    })
}

/// An attribute's value as one of the `getxattr` calls reads it into a 256-byte buffer;
/// `None` when it is absent or the filesystem has none.
fn read_xattr(get: impl FnOnce(&mut [u8]) -> libc::ssize_t) -> Result<Option<Vec<u8>>, Errno> {
    let mut buffer = vec![0u8; 256];
    match Errno::result(get(&mut buffer)) {
        Ok(len) => {
            buffer.truncate(len as usize);
            Ok(Some(buffer))
        }
        Err(Errno::ENODATA | Errno::EOPNOTSUPP) => Ok(None),
        Err(errno) => Err(errno),
    }
}

/// Sets an extended attribute of `path` without following a final symlink: the mask's
/// opaque directories, and the witness tests' hand-made `trusted.overlay.*` marks.
pub(crate) fn lsetxattr(path: &CStr, name: &CStr, value: &[u8]) -> Result<(), Errno> {
    // SAFETY: both names are NUL-terminated C strings and the value pointer and length
    // describe memory borrowed from `value` for the duration of the call.
    let rc = unsafe {
        libc::lsetxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    Errno::result(rc).map(drop)
}

/// Borrows a descriptor at a fixed number that the calling process keeps open for its life
/// (the control and status pipes of a sandbox child).
pub(crate) fn borrow_fixed(fd: RawFd) -> BorrowedFd<'static> {
    // SAFETY: callers only name descriptors that the stage set up at a fixed number and never
    // closes while it runs; the borrow cannot outlive an open descriptor in practice because
    // each stage ends in exec or _exit.
    unsafe { BorrowedFd::borrow_raw(fd) }
}

/// Sets close-on-exec on a descriptor.
pub(crate) fn set_cloexec(fd: RawFd) -> Result<(), Errno> {
    // SAFETY: F_SETFD only changes the descriptor's flags.
    let rc = unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    Errno::result(rc).map(drop)
}

/// Installs a seccomp filter on the calling thread and returns its user-notification
/// listener. The caller must have set no_new_privs (or hold CAP_SYS_ADMIN).
pub(crate) fn seccomp_listener(program: &[libc::sock_filter]) -> Result<OwnedFd, Errno> {
    let fd = seccomp_set_filter(program, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER)? as RawFd;
    // SAFETY: the kernel just returned this new listener descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Installs a seccomp filter on the calling thread, on top of any it already has. The caller
/// must have set no_new_privs (or hold CAP_SYS_ADMIN).
pub(crate) fn seccomp_filter(program: &[libc::sock_filter]) -> Result<(), Errno> {
    seccomp_set_filter(program, 0).map(drop)
}

fn seccomp_set_filter(program: &[libc::sock_filter], flags: libc::c_ulong) -> Result<i64, Errno> {
    let len = u16::try_from(program.len()).map_err(|_| Errno::EINVAL)?;
    let fprog = libc::sock_fprog {
        len,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: `fprog` points at `program`, which outlives the call; the kernel copies the
    // filter before returning and writes nothing through the pointer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &raw const fprog,
        )
    };
    Errno::result(rc)
}

/// Gives the calling process a new anonymous session keyring, so that nothing it execs
/// possesses the keys of the session it was forked from (the auditor's login keys). A
/// kernel without keyrings (ENOSYS) has no session to leave. Returns the new keyring's
/// serial (`None` without keyrings).
pub(crate) fn join_new_session_keyring() -> Result<Option<i32>, Errno> {
    // SAFETY: with a null name the kernel reads no memory of ours; it only replaces the
    // caller's session keyring in its credentials.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            libc::KEYCTL_JOIN_SESSION_KEYRING,
            std::ptr::null::<libc::c_char>(),
        )
    };
    match Errno::result(rc) {
        Ok(serial) => Ok(i32::try_from(serial).ok()),
        Err(Errno::ENOSYS) => Ok(None),
        Err(errno) => Err(errno),
    }
}

/// Makes system call `nr` with integer arguments. Only the seccomp tests use it, to make
/// calls that the filter under test refuses before the kernel reads any argument.
#[cfg(test)]
pub(crate) fn syscall_with_integers(nr: libc::c_long, args: [u64; 6]) -> Result<i64, Errno> {
    // SAFETY: the callers pass zero, flag words and descriptor numbers, never an address of
    // this process: where the kernel does run the call, a pointer argument is null and makes
    // it fail with EFAULT instead of touching our memory.
    let rc = unsafe { libc::syscall(nr, args[0], args[1], args[2], args[3], args[4], args[5]) };
    Errno::result(rc)
}

/// Receives one pending seccomp user notification (blocks if none is pending).
pub(crate) fn seccomp_notif_recv(listener: BorrowedFd<'_>) -> Result<libc::seccomp_notif, Errno> {
    // SAFETY: seccomp_notif is plain integers, for which all-zero is valid; the kernel
    // requires the buffer to be zeroed.
    let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: NOTIF_RECV writes one seccomp_notif into `notif`, valid for the call.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV,
            &raw mut notif,
        )
    };
    Errno::result(rc).map(|_| notif)
}

/// Whether a notification is still pending: its task has not died or been interrupted, so
/// what was read from its memory belonged to that very system call.
pub(crate) fn seccomp_notif_id_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
    // SAFETY: NOTIF_ID_VALID reads one u64 from a pointer valid for the call.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &raw const id,
        )
    };
    rc == 0
}

/// Lets a notified system call proceed as if no filter had stopped it.
pub(crate) fn seccomp_notif_continue(listener: BorrowedFd<'_>, id: u64) -> Result<(), Errno> {
    let response = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: 0,
        flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
    };
    // SAFETY: NOTIF_SEND reads one seccomp_notif_resp from a pointer valid for the call.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &raw const response,
        )
    };
    Errno::result(rc).map(drop)
}

/// Bytes waiting to be read on a socket or inotify descriptor (FIONREAD); for a packet
/// socket, the size of the next queued packet, 0 when nothing is queued.
pub(crate) fn queued_bytes(fd: BorrowedFd<'_>) -> Result<usize, Errno> {
    let mut queued: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int into `queued`, valid for the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &raw mut queued) };
    Errno::result(rc).map(|_| usize::try_from(queued).unwrap_or(0))
}

/// Takes ownership of a descriptor that arrived in an SCM_RIGHTS message.
pub(crate) fn adopt_received_fd(fd: RawFd) -> OwnedFd {
    // SAFETY: the kernel installed this descriptor in our table while delivering the message;
    // recvmsg hands it to exactly one caller, which becomes its only owner here.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Moves the calling thread into the network namespace behind `namespace` (an open
/// `/proc/<pid>/ns/net`). Only this thread changes namespace; sockets it creates keep it.
/// Asks a UDP socket to tell, with each datagram, the address it was sent to
/// ([`recv_to`]), so that an answer can come from that address ([`send_from`]).
pub(crate) fn want_destination(socket: BorrowedFd<'_>, v6: bool) -> Result<(), Errno> {
    use nix::sys::socket::{setsockopt, sockopt};
    match v6 {
        true => setsockopt(&socket, sockopt::Ipv6RecvPacketInfo, &true),
        false => setsockopt(&socket, sockopt::Ipv4PacketInfo, &true),
    }
}

/// One datagram into `buffer`: its length, its sender, and the address it was sent to
/// (when the socket was asked for it, [`want_destination`]).
pub(crate) fn recv_to(
    socket: BorrowedFd<'_>,
    buffer: &mut [u8],
) -> Result<(usize, std::net::SocketAddr, Option<std::net::IpAddr>), Errno> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, SockaddrStorage, recvmsg};
    let mut space = nix::cmsg_space!(libc::in6_pktinfo);
    let mut iov = [std::io::IoSliceMut::new(buffer)];
    let message = recvmsg::<SockaddrStorage>(
        socket.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::empty(),
    )?;
    let from = message
        .address
        .and_then(|a| {
            a.as_sockaddr_in()
                .map(|v4| std::net::SocketAddr::from(std::net::SocketAddrV4::from(*v4)))
                .or_else(|| {
                    a.as_sockaddr_in6()
                        .map(|v6| std::net::SocketAddr::from(std::net::SocketAddrV6::from(*v6)))
                })
        })
        .ok_or(Errno::EAFNOSUPPORT)?;
    let to = message.cmsgs()?.find_map(|cmsg| match cmsg {
        ControlMessageOwned::Ipv4PacketInfo(info) => Some(std::net::IpAddr::V4(
            std::net::Ipv4Addr::from(u32::from_be(info.ipi_addr.s_addr)),
        )),
        ControlMessageOwned::Ipv6PacketInfo(info) => Some(std::net::IpAddr::V6(
            std::net::Ipv6Addr::from(info.ipi6_addr.s6_addr),
        )),
        _ => None,
    });
    Ok((message.bytes, from, to))
}

/// Sends `data` to `to` from the local address `from` (the one a query was sent to), so
/// that a resolver on every address answers from the address it was asked at.
pub(crate) fn send_from(
    socket: BorrowedFd<'_>,
    data: &[u8],
    to: std::net::SocketAddr,
    from: std::net::IpAddr,
) -> Result<usize, Errno> {
    use nix::sys::socket::{ControlMessage, MsgFlags, SockaddrStorage, sendmsg};
    let iov = [std::io::IoSlice::new(data)];
    let destination = SockaddrStorage::from(to);
    let (v4_info, v6_info);
    let cmsg = match from {
        std::net::IpAddr::V4(v4) => {
            v4_info = libc::in_pktinfo {
                ipi_ifindex: 0,
                ipi_spec_dst: libc::in_addr {
                    s_addr: u32::from(v4).to_be(),
                },
                ipi_addr: libc::in_addr { s_addr: 0 },
            };
            ControlMessage::Ipv4PacketInfo(&v4_info)
        }
        std::net::IpAddr::V6(v6) => {
            v6_info = libc::in6_pktinfo {
                ipi6_addr: libc::in6_addr {
                    s6_addr: v6.octets(),
                },
                ipi6_ifindex: 0,
            };
            ControlMessage::Ipv6PacketInfo(&v6_info)
        }
    };
    sendmsg(
        socket.as_raw_fd(),
        &iov,
        &[cmsg],
        MsgFlags::MSG_DONTWAIT,
        Some(&destination),
    )
}

/// Moves the calling thread into a new, empty network namespace of its own.
pub(crate) fn new_net_namespace() -> Result<(), Errno> {
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
}

pub(crate) fn enter_net_namespace(namespace: BorrowedFd<'_>) -> Result<(), Errno> {
    nix::sched::setns(namespace, nix::sched::CloneFlags::CLONE_NEWNET)
}

/// An `AF_PACKET` datagram socket (link headers stripped) for every protocol, non-blocking.
pub(crate) fn packet_socket() -> Result<OwnedFd, Errno> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockProtocol, SockType};
    nix::sys::socket::socket(
        AddressFamily::Packet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        SockProtocol::EthAll,
    )
}

/// Packets an `AF_PACKET` socket lost since the last call (the kernel resets the count).
pub(crate) fn packet_drops(socket: BorrowedFd<'_>) -> Result<u32, Errno> {
    let mut stats = libc::tpacket_stats {
        tp_packets: 0,
        tp_drops: 0,
    };
    let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: PACKET_STATISTICS writes at most `len` bytes into `stats`, a plain C struct
    // owned by this frame, and updates `len`; both pointers are valid for the call.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&raw mut stats).cast(),
            &mut len,
        )
    };
    Errno::result(rc).map(|_| stats.tp_drops)
}

/// Registers an owned descriptor with the current tokio runtime's reactor.
pub(crate) fn register_async(
    fd: OwnedFd,
) -> Result<tokio::io::unix::AsyncFd<OwnedFd>, std::io::Error> {
    // SAFETY: an OwnedFd is open for as long as it lives, the AsyncFd owns it from here on,
    // and its as_raw_fd always returns that same descriptor.
    unsafe { tokio::io::unix::AsyncFd::register(fd) }.map_err(|e| e.into_parts().1)
}

/// Opens the directory `relative` beneath the directory `root` as `O_PATH`, without
/// following any symbolic link on the way or at the end and without leaving `root`
/// (`openat2`, `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`); `ENOTDIR`
/// when it is not a directory. Mount points inside `root` are crossed: the sandbox's own
/// mounts are the only ones its tree can hold.
pub(crate) fn open_dir_beneath(
    root: &std::fs::File,
    relative: &std::path::Path,
) -> Result<std::fs::File, Errno> {
    use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
    let resolve = ResolveFlag::RESOLVE_BENEATH
        | ResolveFlag::RESOLVE_NO_SYMLINKS
        | ResolveFlag::RESOLVE_NO_MAGICLINKS;
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let relative = match relative.as_os_str().is_empty() {
        true => std::path::Path::new("."),
        false => relative,
    };
    let how = OpenHow::new().flags(flags).resolve(resolve);
    openat2(root, relative, how).map(std::fs::File::from)
}

/// Opens `relative` beneath the directory `root` without following any symbolic link on
/// the way or at the end and without leaving `root` (`openat2`, `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV`). Only a regular file is
/// opened for reading; anything else is opened as `O_PATH` (for `fstat`), so no device,
/// FIFO or socket a program made is ever opened for I/O.
pub(crate) fn open_beneath(
    root: &std::fs::File,
    relative: &std::path::Path,
) -> Result<std::fs::File, Errno> {
    use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
    let resolve = ResolveFlag::RESOLVE_BENEATH
        | ResolveFlag::RESOLVE_NO_SYMLINKS
        | ResolveFlag::RESOLVE_NO_MAGICLINKS
        | ResolveFlag::RESOLVE_NO_XDEV;
    let how = |flags: OFlag| {
        OpenHow::new()
            .flags(flags | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW)
            .resolve(resolve)
    };
    let path_only = openat2(root, relative, how(OFlag::O_PATH))?;
    let path_only = std::fs::File::from(path_only);
    let first = path_only
        .metadata()
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(0)))?;
    if !first.is_file() {
        return Ok(path_only);
    }
    let file = std::fs::File::from(openat2(
        root,
        relative,
        how(OFlag::O_RDONLY | OFlag::O_NONBLOCK),
    )?);
    let again = file
        .metadata()
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(0)))?;
    // Swapped between the two opens: say so rather than read whatever is there now.
    use std::os::unix::fs::MetadataExt;
    if !again.is_file() || again.ino() != first.ino() || again.dev() != first.dev() {
        return Err(Errno::EAGAIN);
    }
    Ok(file)
}
