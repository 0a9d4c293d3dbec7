//! A campaign directory has one writer: `run`, `resume` and `merge` hold an exclusive
//! advisory lock (`flock`) on the directory itself for as long as they write its log, and
//! refuse a directory another process holds, naming it. Nothing is added to the directory,
//! and the kernel lets go of the lock with the process, however it ends.

use std::fs::{File, TryLockError};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::RunError;

/// The lock on one campaign directory, held while this lives.
#[derive(Debug)]
pub(crate) struct WriterLock {
    _dir: File,
}

impl WriterLock {
    /// Takes the lock on `dir`, made first when `make` says so, or says who holds it.
    pub(crate) fn take(dir: &Path, make: bool) -> Result<WriterLock, RunError> {
        let io = |source: std::io::Error| RunError::Io {
            dir: dir.to_path_buf(),
            detail: format!("cannot lock the campaign directory: {source}"),
        };
        if make {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let file = File::open(dir).map_err(io)?;
        match file.try_lock() {
            Ok(()) => Ok(WriterLock { _dir: file }),
            Err(TryLockError::WouldBlock) => Err(RunError::Locked {
                dir: dir.to_path_buf(),
                holder: holder(Path::new("/proc"), dir),
            }),
            Err(TryLockError::Error(source)) => Err(io(source)),
        }
    }
}

/// Who holds the lock on `dir`, from `/proc/locks` (`pid N: its command line`); what is
/// known when the holder cannot be read.
fn holder(proc_root: &Path, dir: &Path) -> String {
    let unknown = || "another process".to_owned();
    let Ok(meta) = std::fs::metadata(dir) else {
        return unknown();
    };
    let locks = std::fs::read_to_string(proc_root.join("locks")).unwrap_or_default();
    let Some(pid) = flock_holder(&locks, meta.dev(), meta.ino()) else {
        return unknown();
    };
    let command = std::fs::read(proc_root.join(format!("{pid}/cmdline")))
        .map(|c| {
            String::from_utf8_lossy(&c)
                .replace('\0', " ")
                .trim()
                .to_owned()
        })
        .unwrap_or_default();
    match command.is_empty() {
        true => format!("pid {pid}"),
        false => format!("pid {pid}: {command}"),
    }
}

/// The pid of the `FLOCK` on the inode `dev:ino` in `/proc/locks`' text.
fn flock_holder(locks: &str, dev: u64, ino: u64) -> Option<u32> {
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    locks.lines().find_map(|line| {
        // `1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF`
        let fields: Vec<&str> = line.split_whitespace().collect();
        let at = fields.iter().position(|f| *f == "FLOCK")?;
        let (pid, inode) = (fields.get(at + 3)?, fields.get(at + 4)?);
        let mut parts = inode.split(':');
        let maj = u64::from_str_radix(parts.next()?, 16).ok()?;
        let min = u64::from_str_radix(parts.next()?, 16).ok()?;
        let number: u64 = parts.next()?.parse().ok()?;
        (maj == major && min == minor && number == ino).then(|| pid.parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_is_read_from_the_kernels_lock_list() {
        let locks = "1: POSIX  ADVISORY  WRITE 17 00:1b:99 0 EOF\n\
                     2: FLOCK  ADVISORY  WRITE 4242 08:01:1234567 0 EOF\n";
        let dev = (8 << 8) | 1;
        assert_eq!(flock_holder(locks, dev, 1_234_567), Some(4242));
        assert_eq!(flock_holder(locks, dev, 99), None);
        assert_eq!(flock_holder("", dev, 1_234_567), None);
    }

    #[test]
    fn a_second_writer_is_refused_naming_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let first = WriterLock::take(dir.path(), false).unwrap();
        let refused = WriterLock::take(dir.path(), false).unwrap_err().to_string();
        assert!(
            refused.contains("is being written by")
                && refused.contains(&format!("pid {}", std::process::id())),
            "{refused}"
        );
        drop(first);
        WriterLock::take(dir.path(), false).unwrap();
    }
}
