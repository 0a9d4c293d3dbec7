//! The per-run directory on the host: a size-limited tmpfs holding the overlay's upper and
//! work directories and the lab layer, and a read-only bind of the host root as the lower
//! layer.
//!
//! ```text
//! <run root>/<run id>/      tmpfs, size = write limit + lab   (so a disk-filling program
//! ├── lab/                  the lab layer (top lower)          fills this, not the host)
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
        fs::create_dir(&path).map_err(|source| RunDirError::Create {
            path: path.clone(),
            source,
        })?;
        let mut dir = RunDir {
            path,
            tmpfs: false,
            lower: false,
        };
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
        for sub in ["lab", "lower", "upper", "work", "merged"] {
            let sub = dir.path.join(sub);
            fs::create_dir(&sub).map_err(|source| RunDirError::Create { path: sub, source })?;
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
        })?;
        Ok(dir)
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
    pub(crate) fn lab_layer(&self) -> PathBuf {
        self.path.join("lab")
    }
    pub(crate) fn lower(&self) -> PathBuf {
        self.path.join("lower")
    }
    pub(crate) fn upper(&self) -> PathBuf {
        self.path.join("upper")
    }
    pub(crate) fn work(&self) -> PathBuf {
        self.path.join("work")
    }
    pub(crate) fn merged(&self) -> PathBuf {
        self.path.join("merged")
    }

    /// Unmounts and removes everything; with `keep`, leaves the tmpfs (upper and lab) in place
    /// for inspection and only drops the host root bind.
    pub(crate) fn remove(&mut self, keep: bool) -> Result<(), RunDirError> {
        if self.lower {
            umount2(&self.lower(), MntFlags::MNT_DETACH).map_err(|source| RunDirError::Mount {
                what: "unmount the host root bind",
                path: self.lower(),
                source,
            })?;
            self.lower = false;
        }
        if keep {
            return Ok(());
        }
        if self.tmpfs {
            umount2(&self.path, MntFlags::MNT_DETACH).map_err(|source| RunDirError::Mount {
                what: "unmount the run tmpfs",
                path: self.path.clone(),
                source,
            })?;
            self.tmpfs = false;
        }
        match fs::remove_dir(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(RunDirError::Create {
                path: self.path.clone(),
                source,
            }),
        }
    }
}

fn tmpfs_options(bytes: u64, inodes: u64) -> String {
    format!("size={bytes},nr_inodes={inodes},mode=755")
}
