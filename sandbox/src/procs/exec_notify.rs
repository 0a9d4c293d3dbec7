//! The exec listener: the seccomp user-notification side of the process sensor.
//!
//! The program stage installs [`super::filter::program`], which stops every exec call of the
//! sandbox's processes in the kernel until this side answers. While the caller is stopped its
//! arguments cannot go away with it, so the path and argv are read from its memory
//! (`process_vm_readv`), the notification is checked to be still pending (the reads belong
//! to that very call), and the call is let through unchanged (`CONTINUE`).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::sys::uio::{RemoteIoVec, process_vm_readv};
use nix::unistd::Pid;

use super::filter::{ExecCall, exec_call};
use crate::sys;

/// At most this many argv entries are kept per exec.
pub(crate) const MAX_ARGS: usize = 256;
/// At most this many bytes of argv (all entries together) are kept per exec.
pub(crate) const MAX_ARGV_BYTES: usize = 32 * 1024;
const MAX_PATH_BYTES: usize = 4096;
const AT_FDCWD: i32 = -100;
const PAGE: u64 = 4096;

/// What a stopped exec call asked for, read from the caller's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExecRequest {
    pub(crate) tid: i32,
    pub(crate) path: Vec<u8>,
    /// For `execveat` with a directory descriptor other than `AT_FDCWD`.
    pub(crate) dirfd: Option<i32>,
    pub(crate) argv: Vec<Vec<u8>>,
    pub(crate) argv_truncated: bool,
}

/// Reads another process's memory; a short count means the rest is unmapped.
pub(crate) trait Memory {
    fn read(&self, address: u64, buffer: &mut [u8]) -> usize;
}

/// The memory of a live, stopped task.
pub(crate) struct TaskMemory(pub(crate) Pid);

impl Memory for TaskMemory {
    fn read(&self, address: u64, buffer: &mut [u8]) -> usize {
        let mut done = 0;
        // Page by page, so a string ending just before an unmapped page is still read.
        while done < buffer.len() {
            let at = address + done as u64;
            let chunk = ((PAGE - at % PAGE) as usize).min(buffer.len() - done);
            let remote = [RemoteIoVec {
                base: at as usize,
                len: chunk,
            }];
            let mut local = [std::io::IoSliceMut::new(&mut buffer[done..done + chunk])];
            match process_vm_readv(self.0, &mut local, &remote) {
                Ok(n) if n > 0 => done += n,
                _ => break,
            }
        }
        done
    }
}

fn read_string(memory: &impl Memory, address: u64, max: usize) -> (Vec<u8>, bool) {
    let mut string = Vec::new();
    let mut chunk = [0u8; 256];
    while string.len() < max {
        let want = chunk.len().min(max - string.len());
        let got = memory.read(address + string.len() as u64, &mut chunk[..want]);
        if let Some(end) = chunk[..got].iter().position(|b| *b == 0) {
            string.extend_from_slice(&chunk[..end]);
            return (string, false);
        }
        string.extend_from_slice(&chunk[..got]);
        if got < want {
            return (string, false);
        }
    }
    (string, true)
}

fn read_pointer(memory: &impl Memory, address: u64, width: usize) -> Option<u64> {
    let mut bytes = [0u8; 8];
    if memory.read(address, &mut bytes[..width]) < width {
        return None;
    }
    Some(u64::from_ne_bytes(bytes))
}

/// Decodes an exec call from its architecture, number and arguments.
pub(crate) fn decode(
    tid: i32,
    arch: u32,
    nr: i32,
    args: [u64; 6],
    memory: &impl Memory,
) -> Option<ExecRequest> {
    let (call, width) = exec_call(arch, nr)?;
    let (dirfd, path, argv_at) = match call {
        ExecCall::Execve => (None, args[0], args[1]),
        ExecCall::Execveat => {
            let dirfd = args[0] as u32 as i32;
            ((dirfd != AT_FDCWD).then_some(dirfd), args[1], args[2])
        }
    };
    let (path, _) = read_string(memory, path, MAX_PATH_BYTES);
    let (mut argv, mut bytes, mut truncated) = (Vec::new(), 0, false);
    for index in 0.. {
        let Some(pointer) = read_pointer(memory, argv_at + (index * width) as u64, width) else {
            break;
        };
        if pointer == 0 || argv_at == 0 {
            break;
        }
        if argv.len() == MAX_ARGS || bytes >= MAX_ARGV_BYTES {
            truncated = true;
            break;
        }
        let (arg, cut) = read_string(memory, pointer, MAX_ARGV_BYTES - bytes);
        bytes += arg.len();
        truncated |= cut;
        argv.push(arg);
    }
    Some(ExecRequest {
        tid,
        path,
        dirfd,
        argv,
        argv_truncated: truncated,
    })
}

/// Makes the requested path absolute in the sandbox's view, lexically (`.` and `..`).
pub(crate) fn absolute(base: &Path, path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in base.join(path).components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
            _ => {}
        }
    }
    out
}

/// The listener of one seccomp filter.
pub(crate) struct ExecListener(OwnedFd);

/// One stopped exec call.
pub(crate) struct Notification {
    pub(crate) id: u64,
    pub(crate) request: Option<ExecRequest>,
}

impl ExecListener {
    pub(crate) fn new(fd: OwnedFd) -> ExecListener {
        ExecListener(fd)
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }

    /// Takes one pending notification and reads what the stopped call asked for. `Ok(None)`
    /// when the caller died before it could be read.
    pub(crate) fn receive(&self) -> Result<Option<Notification>, Errno> {
        let notif = match sys::seccomp_notif_recv(self.fd()) {
            Ok(notif) => notif,
            Err(Errno::ENOENT | Errno::EINTR) => return Ok(None),
            Err(errno) => return Err(errno),
        };
        let tid = notif.pid as i32;
        let data = notif.data;
        let request = decode(
            tid,
            data.arch,
            data.nr,
            data.args,
            &TaskMemory(Pid::from_raw(tid)),
        );
        // A notification no longer pending means the reads may be of a dead or reused task.
        let request = request.filter(|_| sys::seccomp_notif_id_valid(self.fd(), notif.id));
        Ok(Some(Notification {
            id: notif.id,
            request,
        }))
    }

    /// Lets the stopped call proceed; a caller that died meanwhile is not an error.
    pub(crate) fn answer(&self, id: u64) {
        let _ = sys::seccomp_notif_continue(self.fd(), id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Sparse memory: bytes at addresses, unmapped elsewhere.
    #[derive(Default)]
    struct Fake(BTreeMap<u64, u8>);

    impl Fake {
        fn put(&mut self, at: u64, bytes: &[u8]) {
            for (i, b) in bytes.iter().enumerate() {
                self.0.insert(at + i as u64, *b);
            }
        }
        fn put_pointers(&mut self, at: u64, pointers: &[u64]) {
            for (i, p) in pointers.iter().enumerate() {
                self.put(at + 8 * i as u64, &p.to_ne_bytes());
            }
        }
    }

    impl Memory for Fake {
        fn read(&self, address: u64, buffer: &mut [u8]) -> usize {
            for (i, slot) in buffer.iter_mut().enumerate() {
                match self.0.get(&(address + i as u64)) {
                    Some(b) => *slot = *b,
                    None => return i,
                }
            }
            buffer.len()
        }
    }

    fn native_execve() -> (u32, i32) {
        crate::procs::filter::tests_support::native_execve()
    }

    #[test]
    fn execve_path_and_argv_are_read_from_memory() {
        let mut memory = Fake::default();
        memory.put(0x1000, b"/bin/echo\0");
        memory.put(0x2000, b"echo\0a b\0");
        memory.put_pointers(0x3000, &[0x2000, 0x2005, 0]);
        let (arch, nr) = native_execve();
        let request = decode(7, arch, nr, [0x1000, 0x3000, 0, 0, 0, 0], &memory).unwrap();
        assert_eq!(request.path, b"/bin/echo");
        assert_eq!(request.argv, [b"echo".to_vec(), b"a b".to_vec()]);
        assert!(!request.argv_truncated);
    }

    #[test]
    fn argv_is_capped_in_count_and_marked_truncated() {
        let mut memory = Fake::default();
        memory.put(0x1000, b"x\0");
        let pointers: Vec<u64> = std::iter::repeat_n(0x1000, MAX_ARGS + 10)
            .chain([0])
            .collect();
        memory.put_pointers(0x3000, &pointers);
        let (arch, nr) = native_execve();
        let request = decode(7, arch, nr, [0x1000, 0x3000, 0, 0, 0, 0], &memory).unwrap();
        assert_eq!(request.argv.len(), MAX_ARGS);
        assert!(request.argv_truncated);
    }

    #[test]
    fn an_unmapped_argv_ends_the_list_instead_of_failing() {
        let mut memory = Fake::default();
        memory.put(0x1000, b"/bin/true\0");
        let (arch, nr) = native_execve();
        let request = decode(7, arch, nr, [0x1000, 0x9000, 0, 0, 0, 0], &memory).unwrap();
        assert!(request.argv.is_empty());
        assert_eq!(decode(7, 0x1234, nr, [0; 6], &memory), None);
    }

    #[test]
    fn relative_paths_are_made_absolute_lexically() {
        assert_eq!(
            absolute(Path::new("/lab/work"), Path::new("./bin/../tool")),
            Path::new("/lab/work/tool")
        );
        assert_eq!(
            absolute(Path::new("/lab/work"), Path::new("/usr/bin/wc")),
            Path::new("/usr/bin/wc")
        );
    }
}
