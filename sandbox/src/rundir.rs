//! The per-run directory on the host: a size-limited tmpfs holding the overlay's upper and
//! work directories and the lab layer, and a read-only bind of the host root as the lower
//! layer.
//!
//! ```text
//! <run root>/<run id>/      tmpfs, size = write limit + lab   (so a disk-filling program
//! ├── lab/                  the lab layer (top lower)          fills this, not the host)
//! ├── mask/                 whiteouts over the host's private paths (middle lower)
//! ├── lower/                bind of / , read-only, no submounts (bottom lower)
//! ├── upper/                overlay upper: the write witness reads this
//! ├── work/                 overlay work dir
//! └── merged/               the overlay, mounted only inside the sandbox
//! ```
//! The lower bind is the exact tree the overlay sees, so the witness reads old content from
//! the same place the overlay did, without the host's submounts (/proc, /tmp on tmpfs…).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::mount::{MntFlags, MsFlags, mount, umount2};

use crate::limits::Limits;

/// Moves this process into a mount namespace of its own, a slave of the one it was in:
/// mounts made on the host still appear in it, and none made in it (the run directories'
/// tmpfs and host root binds) appear on the host. The kernel drops the namespace, and every
/// run mount with it, when its last process exits — when vac is SIGKILLed before its
/// teardown too, so nothing of a run stays in the host's mount table.
///
/// A namespace belongs to a thread: call this while the process has only one (before any
/// runtime starts), or the other threads would go on mounting on the host. Needs root.
pub fn own_mount_namespace() -> Result<(), RunDirError> {
    one_thread()?;
    let error = |what| {
        move |source| RunDirError::Mount {
            what,
            path: PathBuf::from("/"),
            source,
        }
    };
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)
        .map_err(error("enter a mount namespace of its own"))?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_SLAVE,
        None::<&str>,
    )
    .map_err(error("keep its mounts off the host (make / a slave)"))
}

/// Whether the process has exactly one thread (what a namespace change or a fork of the
/// whole process needs).
pub(crate) fn one_thread() -> Result<(), RunDirError> {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let threads = status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse::<u64>().ok());
    match threads {
        Some(1) => Ok(()),
        _ => Err(RunDirError::Threads { threads }),
    }
}

/// A run directory that could not be prepared or removed.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error(
        "run root {path} cannot hold run directories (it must be an absolute path without ',' or ':')"
    )]
    BadRoot { path: PathBuf },
    #[error("cannot create {path}")]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot {what} at {path}")]
    Mount {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: Errno,
    },
    #[error(
        "a mount namespace of its own must be entered while the process has one thread (it has {})",
        threads.map_or_else(|| "an unknown number".to_string(), |n| n.to_string())
    )]
    Threads { threads: Option<u64> },
    #[error("cannot measure the lab in {path}")]
    Measure {
        path: PathBuf,
        #[source]
        source: Errno,
    },
}

#[derive(Debug)]
pub(crate) struct RunDir {
    path: PathBuf,
    tmpfs: bool,
    lower: bool,
}

impl RunDir {
    /// Creates `<root>/<id>` with its tmpfs and lower bind.
    pub(crate) fn create(root: &Path, id: &str, limits: &Limits) -> Result<RunDir, RunDirError> {
        let text = root.to_string_lossy();
        if !root.is_absolute() || text.contains(',') || text.contains(':') {
            return Err(RunDirError::BadRoot {
                path: root.to_path_buf(),
            });
        }
        fs::create_dir_all(root).map_err(|source| RunDirError::Create {
            path: root.to_path_buf(),
            source,
        })?;
        let path = root.join(id);
        // Who owns the run, beside it on the host (not in its tmpfs, which dies with vac's
        // mount namespace), and written before it exists: a sweep removes runs whose owner
        // died without teardown, and never one whose owner is still setting it up.
        // Whole or not at all: another run's sweep (a concurrent run of this very vac, or
        // another vac) that read a half-written stamp would take it for a dead owner's, so
        // it is written under a name no sweep reads and renamed into place.
        let owner = owner_file(&path);
        let partial = root.join(format!(".{id}{OWNER_SUFFIX}.partial"));
        let stamp = owner_stamp(std::process::id()).unwrap_or_default();
        fs::write(&partial, stamp)
            .and_then(|()| fs::rename(&partial, &owner))
            .map_err(|source| {
                let _ = fs::remove_file(&partial);
                RunDirError::Create {
                    path: owner.clone(),
                    source,
                }
            })?;
        if let Err(source) = fs::create_dir(&path) {
            let _ = fs::remove_file(&owner);
            return Err(RunDirError::Create {
                path: path.clone(),
                source,
            });
        }
        let mut dir = RunDir {
            path,
            tmpfs: false,
            lower: false,
        };
        if let Err(error) = dir.mount(limits) {
            let _ = dir.remove(false);
            return Err(error);
        }
        Ok(dir)
    }

    /// The tmpfs, its layout and the read-only host root bind.
    fn mount(&mut self, limits: &Limits) -> Result<(), RunDirError> {
        let dir = self;
        let options = tmpfs_options(limits.write_bytes, limits.write_inodes);
        let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        mount(
            Some("tmpfs"),
            &dir.path,
            Some("tmpfs"),
            flags,
            Some(options.as_str()),
        )
        .map_err(|source| RunDirError::Mount {
            what: "mount the run tmpfs",
            path: dir.path.clone(),
            source,
        })?;
        dir.tmpfs = true;
        mount(
            None::<&str>,
            &dir.path,
            None::<&str>,
            MsFlags::MS_PRIVATE,
            None::<&str>,
        )
        .map_err(|source| RunDirError::Mount {
            what: "make the run tmpfs private",
            path: dir.path.clone(),
            source,
        })?;
        for sub in [
            dir.lab_layer(),
            dir.mask_layer(),
            dir.lower(),
            dir.upper(),
            dir.work(),
            dir.merged(),
        ] {
            fs::create_dir_all(&sub).map_err(|source| RunDirError::Create { path: sub, source })?;
        }
        let lower = dir.lower();
        mount(
            Some("/"),
            &lower,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
        .map_err(|source| RunDirError::Mount {
            what: "bind the host root",
            path: lower.clone(),
            source,
        })?;
        dir.lower = true;
        let read_only = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
        mount(None::<&str>, &lower, None::<&str>, read_only, None::<&str>).map_err(|source| {
            RunDirError::Mount {
                what: "make the host root bind read-only",
                path: lower,
                source,
            }
        })
    }

    /// Grows the tmpfs by what the lab uses, so the write limit is what the program gets.
    pub(crate) fn reserve_lab(&self, limits: &Limits) -> Result<(), RunDirError> {
        let stats =
            nix::sys::statvfs::statvfs(&self.path).map_err(|source| RunDirError::Measure {
                path: self.path.clone(),
                source,
            })?;
        let used_bytes = (stats.blocks() - stats.blocks_free()) * stats.fragment_size();
        let used_inodes = stats.files() - stats.files_free();
        let options = tmpfs_options(
            limits.write_bytes + used_bytes,
            limits.write_inodes + used_inodes,
        );
        let flags = MsFlags::MS_REMOUNT | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        mount(
            None::<&str>,
            &self.path,
            None::<&str>,
            flags,
            Some(options.as_str()),
        )
        .map_err(|source| RunDirError::Mount {
            what: "resize the run tmpfs",
            path: self.path.clone(),
            source,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
    /// The layers are named as a container engine's overlay storage names them
    /// (`l/<26 base32>` for each lower, `<64 hex>/diff` and `<64 hex>/work`): the program
    /// reads them in `/proc/self/mountinfo`, where names like `lab` or `mask` would say what
    /// they are. Stable for a run directory, different between runs.
    fn layer(&self, what: &str) -> PathBuf {
        const BASE32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
        let hash = |salt: &str| blake3::hash(format!("{salt}:{}", self.path.display()).as_bytes());
        match what {
            "diff" | "work" => self.path.join(hash("layer").to_hex().as_str()).join(what),
            _ => {
                let name: String = hash(what).as_bytes()[..26]
                    .iter()
                    .map(|b| char::from(BASE32[usize::from(*b) % 32]))
                    .collect();
                self.path.join("l").join(name)
            }
        }
    }
    pub(crate) fn lab_layer(&self) -> PathBuf {
        self.layer("lab")
    }
    pub(crate) fn mask_layer(&self) -> PathBuf {
        self.layer("mask")
    }
    pub(crate) fn lower(&self) -> PathBuf {
        self.layer("lower")
    }
    pub(crate) fn upper(&self) -> PathBuf {
        self.layer("diff")
    }
    pub(crate) fn work(&self) -> PathBuf {
        self.layer("work")
    }
    pub(crate) fn merged(&self) -> PathBuf {
        self.path.join("merged")
    }

    /// Unmounts and removes everything; with `keep`, leaves the tmpfs (upper and lab) in place
    /// for inspection and only drops the host root bind.
    pub(crate) fn remove(&mut self, keep: bool) -> Result<(), RunDirError> {
        let mount_error =
            |what, path: PathBuf| move |source| RunDirError::Mount { what, path, source };
        if self.lower {
            match umount2(&self.lower(), MntFlags::MNT_DETACH) {
                // EINVAL: not a mount point (a run swept after a crash mid-setup, or whose
                // mounts went with its owner's mount namespace); ENOENT: never made.
                Ok(()) | Err(Errno::EINVAL | Errno::ENOENT) => {}
                Err(e) => return Err(mount_error("unmount the host root bind", self.lower())(e)),
            }
            self.lower = false;
        }
        if keep {
            // A kept run has no owner: sweeps leave it for whoever asked to keep it.
            let _ = fs::remove_file(owner_file(&self.path));
            return Ok(());
        }
        if self.tmpfs {
            match umount2(&self.path, MntFlags::MNT_DETACH) {
                Ok(()) | Err(Errno::EINVAL | Errno::ENOENT) => {}
                Err(e) => return Err(mount_error("unmount the run tmpfs", self.path.clone())(e)),
            }
            self.tmpfs = false;
        }
        match fs::remove_dir(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(RunDirError::Create {
                    path: self.path.clone(),
                    source,
                });
            }
        }
        let _ = fs::remove_file(owner_file(&self.path));
        Ok(())
    }
}

/// `<root>/<id>.owner`: the owner stamp of the run directory `<root>/<id>`.
fn owner_file(run: &Path) -> PathBuf {
    let mut name = run.as_os_str().to_os_string();
    name.push(OWNER_SUFFIX);
    PathBuf::from(name)
}

const OWNER_SUFFIX: &str = ".owner";

/// `pid starttime`: a pid alone could be reused by an unrelated process.
fn owner_stamp(pid: u32) -> Option<String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may itself hold spaces and parentheses.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    // A process that has died and is not yet reaped (a zombie) owns nothing any more: the
    // sweeper hears of vac's death before vac's parent reaps it.
    if matches!(fields.next(), Some("Z" | "X")) {
        return None;
    }
    let start = fields.nth(18)?;
    Some(format!("{pid} {start}"))
}

/// Removes run directories under `root` whose owning process is gone (a vac that was
/// killed before its teardown ran): unmounts them and deletes them, with their owner
/// stamps. Returns their ids. A run with no stamp is a kept one and stays.
pub(crate) fn sweep_stale(root: &Path) -> Vec<String> {
    let mut swept = Vec::new();
    for entry in fs::read_dir(root).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // The stamp beside the run; or, for a run an older vac left mounted in the host's
        // namespace, the one it kept inside its tmpfs.
        let (id, stamp_path) = match name.strip_suffix(OWNER_SUFFIX) {
            Some(id) => (id, entry.path()),
            None if !owner_file(&entry.path()).exists() => {
                (name.as_str(), entry.path().join("owner"))
            }
            None => continue,
        };
        if !id.starts_with("run-") {
            continue;
        }
        let Ok(stamp) = fs::read_to_string(&stamp_path) else {
            continue;
        };
        let alive = stamp
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .and_then(owner_stamp);
        if alive.as_deref() == Some(stamp.as_str()) {
            continue;
        }
        // Mounted when its owner shared the host's mount namespace (a library caller);
        // else an empty directory, its mounts gone with the owner's namespace.
        let mut stale = RunDir {
            path: root.join(id),
            tmpfs: true,
            lower: true,
        };
        if stamp_path.starts_with(&stale.path) {
            // An older vac's stamp inside the run: gone with its tmpfs, or removed here.
            let _ = fs::remove_file(&stamp_path);
        }
        match stale.remove(false) {
            Ok(()) => swept.push(id.to_string()),
            Err(error) => tracing::warn!(run = %id, %error, "cannot sweep a stale run directory"),
        }
    }
    swept
}

fn tmpfs_options(bytes: u64, inodes: u64) -> String {
    format!("size={bytes},nr_inodes={inodes},mode=755")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layers' names are a container engine's, stable for a run and different between
    /// runs, and none says what the layer is.
    #[test]
    fn layers_are_named_as_a_container_engines_storage_names_them() {
        let dir = |path: &str| RunDir {
            path: PathBuf::from(path),
            tmpfs: false,
            lower: false,
        };
        let (one, two) = (dir("/run/x/run-1"), dir("/run/x/run-2"));
        let layers = [
            one.lab_layer(),
            one.mask_layer(),
            one.lower(),
            one.upper(),
            one.work(),
        ];
        for layer in &layers {
            let name = layer.strip_prefix(&one.path).unwrap().display().to_string();
            let engine = (name.len() == 28 && name.starts_with("l/"))
                || (name.len() == 69 && (name.ends_with("/diff") || name.ends_with("/work")));
            assert!(engine, "{name}");
            for word in ["lab", "mask", "lower", "upper"] {
                assert!(!name.contains(word), "{name}");
            }
        }
        assert_eq!(one.upper().parent(), one.work().parent());
        assert_eq!(one.lab_layer(), dir("/run/x/run-1").lab_layer());
        assert_ne!(one.lab_layer(), two.lab_layer());
        let distinct: std::collections::HashSet<_> = layers.iter().collect();
        assert_eq!(distinct.len(), 5);
    }
}
