//! The filesystem write witness: what a run changed, read from its overlay upper layer.
//!
//! Every write a contained program makes lands in the upper layer, so walking that layer
//! after the run lists every change, and costs time in proportion to what was written rather
//! than to the size of the filesystem. Old content is read from the lower layers the overlay
//! was built from, in the same order.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::unistd::Whence;

use crate::sys;

/// Size and blake3 hash of a file's content: of all of it, or of its first
/// [`HASH_CAP`] bytes when it is larger (`partial`), so a hostile file (a sparse file of
/// 2^62 bytes) costs a bounded read.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FileDigest {
    pub size: u64,
    pub blake3: String,
    /// The hash covers only the file's first bytes: [`HASH_CAP`] of them, or `hashed`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// How many bytes the hash covers, when fewer than [`HASH_CAP`]: the walk had spent its
    /// [`WALK_HASH_BUDGET`] and hashed each further file's first [`SPENT_HASH_CAP`] bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hashed: Option<u64>,
}

/// Bytes of one file the witness hashes at most.
pub const HASH_CAP: u64 = 64 << 20;

/// Bytes, holes included (a hole is hashed as the zeros it reads as), that one walk hashes
/// at [`HASH_CAP`] a file; past them each file's first [`SPENT_HASH_CAP`] bytes. Without it
/// 60,000 sparse files of a gigabyte each cost 60,000 × 64 MiB of hashing: forty minutes.
pub const WALK_HASH_BUDGET: u64 = 4 << 30;

/// Bytes of a file hashed once a walk's [`WALK_HASH_BUDGET`] is spent.
pub const SPENT_HASH_CAP: u64 = 64 << 10;

/// What kind of node a path held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// One change a run made, as a path in the sandbox's view.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum FsChange {
    /// A file, directory or special node that did not exist before.
    Created {
        #[serde(with = "crate::serde_path")]
        path: PathBuf,
        kind: NodeKind,
        digest: Option<FileDigest>,
        mode: u32,
    },
    /// A file that existed and now has other content.
    Modified {
        #[serde(with = "crate::serde_path")]
        path: PathBuf,
        old: FileDigest,
        new: FileDigest,
        /// The new content is the old content's beginning, and shorter: what was at its
        /// end is gone (a truncation), as opposed to a rewrite.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
    },
    /// A node that existed and is gone (an overlay whiteout).
    Deleted {
        #[serde(with = "crate::serde_path")]
        path: PathBuf,
        was: NodeKind,
    },
    /// A file that vanished from `from` and appeared with the same content at `to`.
    Renamed {
        #[serde(with = "crate::serde_path")]
        from: PathBuf,
        #[serde(with = "crate::serde_path")]
        to: PathBuf,
        digest: FileDigest,
    },
    /// A directory whose lower contents were hidden wholesale (an opaque directory).
    DirReplaced {
        #[serde(with = "crate::serde_path")]
        path: PathBuf,
    },
    /// Permission bits changed.
    ModeChanged {
        #[serde(with = "crate::serde_path")]
        path: PathBuf,
        old: u32,
        new: u32,
    },
    /// Owner or group changed.
    OwnerChanged {
        #[serde(with = "crate::serde_path")]
        path: PathBuf,
        old: (u32, u32),
        new: (u32, u32),
    },
    /// A symbolic link was created or repointed.
    Symlink {
        #[serde(with = "crate::serde_path")]
        path: PathBuf,
        #[serde(with = "crate::serde_path")]
        target: PathBuf,
        #[serde(with = "crate::serde_path::option")]
        previous: Option<PathBuf>,
    },
}

impl FsChange {
    /// The path the change is about (the destination of a rename).
    pub fn path(&self) -> &Path {
        match self {
            FsChange::Created { path, .. }
            | FsChange::Modified { path, .. }
            | FsChange::Deleted { path, .. }
            | FsChange::DirReplaced { path }
            | FsChange::ModeChanged { path, .. }
            | FsChange::OwnerChanged { path, .. }
            | FsChange::Symlink { path, .. } => path,
            FsChange::Renamed { to, .. } => to,
        }
    }
}

/// A file the sandbox wrote from inside the run so the witness can prove it sees writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// Path in the sandbox's view.
    pub path: PathBuf,
    pub content: Vec<u8>,
}

/// Whether the witness saw the marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelfTest {
    Live {
        marker: PathBuf,
    },
    Blind {
        marker: PathBuf,
        reason: String,
    },
    /// No marker was written, so nothing backs a claim that the witness saw everything.
    NotRun,
}

/// The result of one walk.
#[derive(Debug, Clone)]
pub struct WitnessReport {
    pub changes: Vec<FsChange>,
    pub self_test: SelfTest,
    /// Entries of the upper layer the walk visited: the measure of its cost.
    pub entries_visited: u64,
    /// What the walk could not look at: the changes it lists are real, but there may be
    /// more, so no absence of a change is backed.
    pub incomplete: Option<Incomplete>,
}

/// Entries the walk could not look at (deeper than [`MAX_WALK_DEPTH`], or unreadable), and
/// the first of them with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incomplete {
    pub entries: u64,
    pub first: String,
}

/// Directories below this depth of the upper layer are not walked (they are counted in
/// [`WitnessReport::incomplete`]): the walk holds a descriptor per level, and a program
/// can nest directories without end.
pub const MAX_WALK_DEPTH: usize = 256;

impl Incomplete {
    /// What a reader of the receipts is told.
    pub fn reason(&self) -> String {
        format!(
            "the walk of the upper layer missed {} entries (first: {})",
            self.entries, self.first
        )
    }
}

/// The witness could not read a layer, or could not see its own marker.
#[derive(Debug, thiserror::Error)]
pub enum WitnessError {
    #[error("cannot read {path} while walking the upper layer")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the fs write witness is blind: {reason}")]
    Blind { reason: String },
}

impl WitnessReport {
    /// Fails unless the self-test proved the witness live and the walk saw every entry: a
    /// clean result from a blind or partial witness would be unbacked.
    pub fn require_live(&self) -> Result<(), WitnessError> {
        if let Some(incomplete) = &self.incomplete {
            return Err(WitnessError::Blind {
                reason: incomplete.reason(),
            });
        }
        match &self.self_test {
            SelfTest::Live { .. } => Ok(()),
            SelfTest::Blind { reason, .. } => Err(WitnessError::Blind {
                reason: reason.clone(),
            }),
            SelfTest::NotRun => Err(WitnessError::Blind {
                reason: "no marker was written".into(),
            }),
        }
    }
}

/// Walks an overlay upper layer against its lower layers.
#[derive(Debug, Clone)]
pub struct OverlayWitness {
    upper: PathBuf,
    lowers: Vec<PathBuf>,
    marker: Option<Marker>,
    hash_budget: u64,
}

impl OverlayWitness {
    /// `lowers` in overlay order: the topmost lower layer first.
    pub fn new(upper: impl Into<PathBuf>, lowers: Vec<PathBuf>) -> Self {
        OverlayWitness {
            upper: upper.into(),
            lowers,
            marker: None,
            hash_budget: WALK_HASH_BUDGET,
        }
    }

    /// Bytes the walk hashes at [`HASH_CAP`] a file (default [`WALK_HASH_BUDGET`]).
    pub fn hash_budget(mut self, bytes: u64) -> Self {
        self.hash_budget = bytes;
        self
    }

    /// The marker the walk must find for the self-test to pass.
    pub fn expect_marker(mut self, marker: Marker) -> Self {
        self.marker = Some(marker);
        self
    }

    /// Walks the upper layer and types every change. Every directory is read through a
    /// descriptor of its parent (`openat`, no symbolic link followed), so no path length
    /// limits the walk; an entry it cannot read is counted in `incomplete`, not fatal.
    pub fn collect(&self) -> Result<WitnessReport, WitnessError> {
        let mut walk = Walk {
            lower_roots: &self.lowers,
            changes: Vec::new(),
            deleted_files: Vec::new(),
            visited: 0,
            incomplete: None,
            hash_left: self.hash_budget,
        };
        let upper = File::open(&self.upper).and_then(|upper| match upper.metadata()?.is_dir() {
            true => Ok(upper),
            false => Err(io::Error::from(io::ErrorKind::NotADirectory)),
        });
        match upper {
            Ok(upper) => {
                let lowers: Vec<Option<File>> =
                    self.lowers.iter().map(|l| File::open(l).ok()).collect();
                walk.dir(&upper, &lowers, Path::new("/"), 0);
            }
            // A missing upper layer is what a blinded witness looks like: no marker.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_at(&self.upper)(e)),
        }
        let (mut changes, visited, incomplete) = (walk.changes, walk.visited, walk.incomplete);
        pair_renames(&mut changes, &walk.deleted_files);
        let self_test = self.check_marker(&mut changes);
        changes.sort_by(|a, b| a.path().cmp(b.path()));
        Ok(WitnessReport {
            changes,
            self_test,
            entries_visited: visited,
            incomplete,
        })
    }

    fn check_marker(&self, changes: &mut Vec<FsChange>) -> SelfTest {
        let Some(marker) = &self.marker else {
            return SelfTest::NotRun;
        };
        let expected = FileDigest {
            size: marker.content.len() as u64,
            blake3: blake3::hash(&marker.content).to_hex().to_string(),
            partial: false,
            hashed: None,
        };
        let found = changes.iter().position(|c| {
            matches!(c, FsChange::Created { path, digest: Some(d), .. } if *path == marker.path && *d == expected)
        });
        match found {
            Some(index) => {
                changes.remove(index);
                SelfTest::Live {
                    marker: marker.path.clone(),
                }
            }
            None => SelfTest::Blind {
                marker: marker.path.clone(),
                reason: format!(
                    "marker {} with its content was not found in the upper layer {}",
                    marker.path.display(),
                    self.upper.display()
                ),
            },
        }
    }
}

/// A rename of a lower file shows as a whiteout plus a new copy: pair them by content.
/// `deleted` are the walk's deleted files (change index, lower size, lower host path); a
/// lower copy it cannot read back stays a deletion and a creation.
fn pair_renames(changes: &mut Vec<FsChange>, deleted: &[(usize, u64, PathBuf)]) {
    let mut created: HashMap<FileDigest, usize> = HashMap::new();
    for (index, change) in changes.iter().enumerate() {
        if let FsChange::Created {
            kind: NodeKind::File,
            digest: Some(d),
            ..
        } = change
        {
            created.entry(d.clone()).or_insert(index);
        }
    }
    let sizes: std::collections::HashSet<u64> = created.keys().map(|d| d.size).collect();
    let mut renames = Vec::new();
    for (index, size, lower) in deleted {
        // Hash a deleted file only when some created file could be its copy.
        if !sizes.contains(size) {
            continue;
        }
        let Ok(digest) = digest(lower) else {
            continue;
        };
        if let Some(target) = created.remove(&digest) {
            renames.push((*index, target, digest));
        }
    }
    let mut remove = std::collections::HashSet::new();
    for (deleted, created, digest) in renames {
        let from = changes[deleted].path().to_path_buf();
        let to = changes[created].path().to_path_buf();
        changes[created] = FsChange::Renamed { from, to, digest };
        remove.insert(deleted);
    }
    // One pass, whatever the number of renames (removing one by one was quadratic).
    let mut index = 0;
    changes.retain(|_| {
        index += 1;
        !remove.contains(&(index - 1))
    });
}

struct Walk<'w> {
    /// The lower layers' roots, in overlay order.
    lower_roots: &'w [PathBuf],
    changes: Vec<FsChange>,
    /// Each deleted file's change index, with its lower copy's size and host path: what
    /// pairing renames needs, found by the walk's own lower lookup.
    deleted_files: Vec<(usize, u64, PathBuf)>,
    visited: u64,
    incomplete: Option<Incomplete>,
    /// What is left of [`WALK_HASH_BUDGET`].
    hash_left: u64,
}

/// Opens `name` in the directory `dir` without following a symbolic link at it.
fn open_at(dir: &File, name: &OsStr, flags: OFlag) -> Result<File, Errno> {
    let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    nix::fcntl::openat(dir, name, flags, nix::sys::stat::Mode::empty()).map(File::from)
}

fn errno_of(e: &io::Error) -> Errno {
    Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO))
}

impl Walk<'_> {
    fn missed(&mut self, path: &Path, why: String) {
        match &mut self.incomplete {
            Some(incomplete) => incomplete.entries += 1,
            None => {
                self.incomplete = Some(Incomplete {
                    entries: 1,
                    first: format!("{}: {why}", path.display()),
                })
            }
        }
    }

    /// Walks the directory `upper` (at `path` in the sandbox's view), whose lower
    /// directories are `lowers`: per layer, topmost first, the same directory where that
    /// layer shows it (`None` where it has none, or a layer above hides it).
    fn dir(&mut self, upper: &File, lowers: &[Option<File>], path: &Path, depth: usize) {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let names: Result<Vec<OsString>, Errno> = nix::dir::Dir::openat(
            upper,
            ".",
            flags,
            nix::sys::stat::Mode::empty(),
        )
        .and_then(|mut listing| {
            listing
                .iter()
                .map(|entry| entry.map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_owned()))
                .filter(|name| !matches!(name.as_ref().map(|n| n.as_bytes()), Ok(b"." | b"..")))
                .collect()
        });
        let names = match names {
            Ok(names) => names,
            Err(errno) => return self.missed(path, format!("cannot list: {errno}")),
        };
        for name in names {
            self.visited += 1;
            let child = path.join(&name);
            if let Err(errno) = self.entry(upper, lowers, &name, &child, depth) {
                self.missed(&child, format!("cannot read: {errno}"));
            }
        }
    }

    fn entry(
        &mut self,
        parent: &File,
        lowers: &[Option<File>],
        name: &OsStr,
        path: &Path,
        depth: usize,
    ) -> Result<(), Errno> {
        let node = open_at(parent, name, OFlag::O_PATH)?;
        let meta = node.metadata().map_err(|e| errno_of(&e))?;
        let path = path.to_path_buf();
        let lower = lower_entry(lowers, name);
        let lower_kind = lower.as_ref().map(|(_, meta)| kind_of(meta));
        if is_whiteout(parent, name, &meta)? {
            self.deleted(path, lower.as_ref());
            return Ok(());
        }
        let kind = kind_of(&meta);
        if lower_kind.is_some_and(|k| k != kind) {
            self.deleted(path.clone(), lower.as_ref());
        }
        let same_kind_lower = lower.filter(|(_, m)| kind_of(m) == kind);
        match kind {
            NodeKind::Dir => {
                let dir = open_at(parent, name, OFlag::O_RDONLY | OFlag::O_DIRECTORY)?;
                let opaque =
                    sys::fgetxattr(&dir, c"trusted.overlay.opaque")?.is_some_and(|v| v == b"y");
                match &same_kind_lower {
                    Some(_) if opaque => self
                        .changes
                        .push(FsChange::DirReplaced { path: path.clone() }),
                    Some((_, old)) => self.attributes(&path, old, &meta),
                    None => self.changes.push(created(path.clone(), kind, None, &meta)),
                }
                if depth + 1 >= MAX_WALK_DEPTH {
                    self.missed(&path, format!("deeper than {MAX_WALK_DEPTH} directories"));
                    return Ok(());
                }
                let below = match (&same_kind_lower, opaque) {
                    (Some(_), false) => child_lowers(lowers, name),
                    _ => lowers.iter().map(|_| None).collect(),
                };
                self.dir(&dir, &below, &path, depth + 1);
            }
            NodeKind::File => {
                // The old and the new content of one file are hashed to the same cap, so
                // that equal content has equal digests.
                let cap = match self.hash_left {
                    0 => SPENT_HASH_CAP,
                    _ => HASH_CAP,
                };
                let new = digest_at(parent, name, cap)?;
                self.hash_left = self.hash_left.saturating_sub(new.size.min(cap));
                match &same_kind_lower {
                    Some((layer, old_meta)) => {
                        let lower = lowers[*layer].as_ref().ok_or(Errno::ENOENT)?;
                        let old = digest_at(lower, name, cap)?;
                        self.hash_left = self.hash_left.saturating_sub(old.size.min(cap));
                        if old != new {
                            let truncated = new.size < old.size
                                && !new.partial
                                && prefix_blake3(lower, name, new.size)? == new.blake3;
                            self.changes.push(FsChange::Modified {
                                path: path.clone(),
                                old,
                                new,
                                truncated,
                            });
                        }
                        self.attributes(&path, old_meta, &meta);
                    }
                    None => self.changes.push(created(path, kind, Some(new), &meta)),
                }
            }
            NodeKind::Symlink => {
                let target = PathBuf::from(nix::fcntl::readlinkat(parent, name)?);
                let previous = match &same_kind_lower {
                    Some((layer, _)) => {
                        let dir = lowers[*layer].as_ref().ok_or(Errno::ENOENT)?;
                        Some(PathBuf::from(nix::fcntl::readlinkat(dir, name)?))
                    }
                    None => None,
                };
                if previous.as_ref() != Some(&target) {
                    self.changes.push(FsChange::Symlink {
                        path,
                        target,
                        previous,
                    });
                }
            }
            NodeKind::Other => self.changes.push(created(path, kind, None, &meta)),
        }
        Ok(())
    }

    /// `path` no longer holds what its lower layer had (`lower`: that layer and metadata).
    fn deleted(&mut self, path: PathBuf, lower: Option<&(usize, fs::Metadata)>) {
        let was = lower.map_or(NodeKind::Other, |(_, meta)| kind_of(meta));
        if let Some((layer, meta)) = lower.filter(|_| was == NodeKind::File) {
            let host = self.lower_roots[*layer].join(relative(&path));
            self.deleted_files
                .push((self.changes.len(), meta.len(), host));
        }
        self.changes.push(FsChange::Deleted { path, was });
    }

    fn attributes(&mut self, path: &Path, old: &fs::Metadata, new: &fs::Metadata) {
        let (old_mode, new_mode) = (old.mode() & 0o7777, new.mode() & 0o7777);
        if old_mode != new_mode {
            self.changes.push(FsChange::ModeChanged {
                path: path.to_path_buf(),
                old: old_mode,
                new: new_mode,
            });
        }
        let (old_owner, new_owner) = ((old.uid(), old.gid()), (new.uid(), new.gid()));
        if old_owner != new_owner {
            self.changes.push(FsChange::OwnerChanged {
                path: path.to_path_buf(),
                old: old_owner,
                new: new_owner,
            });
        }
    }
}

/// Where the overlay found `name` of a directory before the run: the topmost of its lower
/// directories that has it (its layer and metadata), unless that is a whiteout.
fn lower_entry(lowers: &[Option<File>], name: &OsStr) -> Option<(usize, fs::Metadata)> {
    let whiteout = |meta: &fs::Metadata| meta.file_type().is_char_device() && meta.rdev() == 0;
    for (layer, dir) in lowers.iter().enumerate() {
        let Some(dir) = dir else { continue };
        let Ok(node) = open_at(dir, name, OFlag::O_PATH) else {
            continue;
        };
        let meta = node.metadata().ok()?;
        return (!whiteout(&meta)).then_some((layer, meta));
    }
    None
}

/// The lower directories of the subdirectory `name`, per layer: the layers that have it as
/// a directory, down to the first that hides what is below (an opaque directory, or
/// anything but a directory: a file or a whiteout).
fn child_lowers(lowers: &[Option<File>], name: &OsStr) -> Vec<Option<File>> {
    let mut below: Vec<Option<File>> = lowers.iter().map(|_| None).collect();
    for (layer, dir) in lowers.iter().enumerate() {
        let Some(dir) = dir else { continue };
        match open_at(dir, name, OFlag::O_RDONLY | OFlag::O_DIRECTORY) {
            Ok(child) => {
                let opaque = sys::fgetxattr(&child, c"trusted.overlay.opaque")
                    .is_ok_and(|v| v.as_deref() == Some(b"y"));
                below[layer] = Some(child);
                if opaque {
                    break;
                }
            }
            Err(Errno::ENOENT) => continue,
            Err(_) => break,
        }
    }
    below
}

fn created(
    path: PathBuf,
    kind: NodeKind,
    digest: Option<FileDigest>,
    meta: &fs::Metadata,
) -> FsChange {
    FsChange::Created {
        path,
        kind,
        digest,
        mode: meta.mode() & 0o7777,
    }
}

fn kind_of(meta: &fs::Metadata) -> NodeKind {
    let t = meta.file_type();
    if t.is_dir() {
        NodeKind::Dir
    } else if t.is_file() {
        NodeKind::File
    } else if t.is_symlink() {
        NodeKind::Symlink
    } else {
        NodeKind::Other
    }
}

/// Overlay marks deletions with a 0/0 character device, or (newer kernels) with an empty
/// file carrying the `trusted.overlay.whiteout` attribute.
fn is_whiteout(dir: &File, name: &OsStr, meta: &fs::Metadata) -> Result<bool, Errno> {
    if meta.file_type().is_char_device() && meta.rdev() == 0 {
        return Ok(true);
    }
    if meta.is_file() && meta.len() == 0 {
        let file = open_at(dir, name, OFlag::O_RDONLY | OFlag::O_NONBLOCK)?;
        return Ok(sys::fgetxattr(&file, c"trusted.overlay.whiteout")?.is_some());
    }
    Ok(false)
}

/// The digest of the regular file `name` in `dir` (`cap` bytes at most).
fn digest_at(dir: &File, name: &OsStr, cap: u64) -> Result<FileDigest, Errno> {
    let file = open_at(dir, name, OFlag::O_RDONLY | OFlag::O_NONBLOCK)?;
    digest_of(file, cap).map_err(|e| errno_of(&e))
}

/// The digest of the first [`HASH_CAP`] bytes of `file`'s content, holes read as the zeros
/// they hold: only the data the file really has is read (`SEEK_DATA`/`SEEK_HOLE`), so a
/// hostile sparse file of 2^62 bytes costs no read at all.
fn digest_of(file: File, cap: u64) -> io::Result<FileDigest> {
    let size = file.metadata()?.len();
    Ok(FileDigest {
        size,
        blake3: hash_upto(&file, size.min(cap))?,
        partial: size > cap,
        hashed: (cap < HASH_CAP && size > cap).then_some(cap),
    })
}

/// The blake3 of the first `len` bytes of the regular file `name` in `dir` (`len` at most
/// [`HASH_CAP`], as [`digest_of`] hashes): equal to a shorter file's digest when that file
/// is this one's beginning.
fn prefix_blake3(dir: &File, name: &OsStr, len: u64) -> Result<String, Errno> {
    let file = open_at(dir, name, OFlag::O_RDONLY | OFlag::O_NONBLOCK)?;
    hash_upto(&file, len.min(HASH_CAP)).map_err(|e| errno_of(&e))
}

/// The blake3 of `file`'s first `end` bytes, holes read as zeros (see [`digest_of`]).
fn hash_upto(file: &File, end: u64) -> io::Result<String> {
    let mut hasher = blake3::Hasher::new();
    let mut buffer = vec![0u8; end.min(1 << 20) as usize];
    let mut at = 0;
    while at < end {
        // ENXIO: no data from `at` on (the rest is a hole, or the file shrank).
        let data = match extent(file, at, Whence::SeekData) {
            Ok(data) => data.min(end),
            Err(Errno::ENXIO) => end,
            Err(errno) => return Err(errno.into()),
        };
        zeros(&mut hasher, data - at);
        if data >= end {
            break;
        }
        let hole = extent(file, data, Whence::SeekHole).map_or(end, |hole| hole.min(end));
        let want = hole.max(data + 1) - data;
        let read = read_range(file, data, want, &mut buffer, &mut hasher)?;
        if read < want {
            break; // the file shrank under the read
        }
        at = data + read;
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// The offset of the next data (or hole) at or after `from`.
fn extent(file: &File, from: u64, whence: Whence) -> Result<u64, Errno> {
    let offset = i64::try_from(from).map_err(|_| Errno::EOVERFLOW)?;
    nix::unistd::lseek(file, offset, whence).map(|at| at as u64)
}

/// Feeds `len` zero bytes to `hasher`: a hole's content, never read.
fn zeros(hasher: &mut blake3::Hasher, mut len: u64) {
    static ZEROS: [u8; 65_536] = [0; 65_536];
    while len > 0 {
        let n = len.min(ZEROS.len() as u64) as usize;
        hasher.update(&ZEROS[..n]);
        len -= n as u64;
    }
}

/// Hashes up to `len` bytes of `file` from `from`, read through `buffer`; how many there
/// were.
fn read_range(
    file: &File,
    from: u64,
    len: u64,
    buffer: &mut [u8],
    hasher: &mut blake3::Hasher,
) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < len {
        let want = (len - done).min(buffer.len() as u64) as usize;
        let n = match file.read_at(&mut buffer[..want], from + done) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..n]);
        done += n as u64;
    }
    Ok(done)
}

fn digest(path: &Path) -> Result<FileDigest, WitnessError> {
    let file = File::open(path).map_err(io_at(path))?;
    digest_of(file, HASH_CAP).map_err(io_at(path))
}

/// What one path holds in a run's upper layer at one moment, read while the program may
/// still be changing it: what a repeated call found and what it left.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LayerState {
    /// Nothing at the path in the upper layer: the run has not written it (the lower
    /// layers show through) or its parent was never copied up.
    NotWritten,
    /// The run deleted it (an overlay whiteout).
    Deleted,
    File {
        digest: FileDigest,
        mode: u32,
    },
    Dir {
        mode: u32,
    },
    /// A symbolic link (not followed), or a path through one.
    Symlink,
    /// A device, socket or FIFO (not opened).
    Other,
    /// The read failed (the errno's name), so nothing can be said of it.
    Unreadable {
        error: String,
    },
}

/// The state of each sandbox path in `paths` in the upper layer `upper`. Every open is
/// confined beneath `upper` and refuses symbolic links on the way (`openat2` with
/// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), never blocks (`O_NONBLOCK`, regular files only
/// are read) and reads at most [`HASH_CAP`] bytes: a live, hostile program cannot steer the
/// read to a host file, hang it, or make it long.
pub fn layer_states(upper: &Path, paths: &[PathBuf]) -> Vec<LayerState> {
    let root = match File::open(upper) {
        Ok(root) => root,
        Err(e) => {
            let error = errno_name(e.raw_os_error().unwrap_or(0));
            return paths
                .iter()
                .map(|_| LayerState::Unreadable {
                    error: error.clone(),
                })
                .collect();
        }
    };
    paths.iter().map(|path| layer_state(&root, path)).collect()
}

/// What the upper layer holds, path by path (in the sandbox's view): each entry's size,
/// modification time, mode and inode, so that two snapshots tell which paths were
/// written between them. Walked like the witness, by descriptor beneath `upper`, no link
/// followed; `None` when it holds more than `max` entries or cannot be read whole.
pub fn upper_snapshot(upper: &Path, max: usize) -> Option<UpperSnapshot> {
    use std::os::fd::AsRawFd;
    let root = File::open(upper).ok()?;
    let mut snapshot = UpperSnapshot::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let dir = if relative.as_os_str().is_empty() {
            root.try_clone().ok()?
        } else {
            sys::open_dir_beneath(&root, &relative).ok()?
        };
        let by_fd = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
        for entry in std::fs::read_dir(&by_fd).ok()? {
            let entry = entry.ok()?;
            // fstatat beneath the open directory, the link itself if it is one.
            let meta = entry.metadata().ok()?;
            let path = relative.join(entry.file_name());
            if meta.is_dir() {
                pending.push(path.clone());
            }
            let stamp = (
                meta.len(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.mode(),
                meta.ino(),
            );
            snapshot.insert(Path::new("/").join(path), stamp);
            if snapshot.len() > max {
                return None;
            }
        }
    }
    Some(snapshot)
}

/// [`upper_snapshot`]'s result: size, mtime (s, ns), mode and inode by sandbox path.
pub type UpperSnapshot = std::collections::BTreeMap<PathBuf, (u64, i64, i64, u32, u64)>;

/// At most `cap` bytes of the regular file `path` (a path in the sandbox's view) in
/// `layer` (an upper or lower directory, opened once by the caller for all its reads),
/// opened as [`layer_states`] opens it: beneath the layer, no symbolic link followed,
/// never blocking. `None` for anything else (absent, a link on the way, not a regular file).
pub fn read_beneath(layer: &File, path: &Path, cap: u64) -> Option<Vec<u8>> {
    let file = sys::open_beneath(layer, &relative(path)).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    // Sized to what will be read: a growing vector held up to twice its length, and
    // thousands of kept contents held that twice.
    let expected = usize::try_from(meta.len().min(cap)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(expected);
    io::Read::read_to_end(&mut io::Read::take(file, cap), &mut bytes).ok()?;
    bytes.shrink_to_fit();
    Some(bytes)
}

fn errno_name(errno: i32) -> String {
    format!("{:?}", nix::errno::Errno::from_raw(errno))
}

fn layer_state(root: &File, path: &Path) -> LayerState {
    let relative = relative(path);
    let file = match sys::open_beneath(root, &relative) {
        Ok(file) => file,
        Err(nix::errno::Errno::ENOENT | nix::errno::Errno::ENOTDIR) => {
            return LayerState::NotWritten;
        }
        Err(nix::errno::Errno::ELOOP) => return LayerState::Symlink,
        Err(errno) => {
            return LayerState::Unreadable {
                error: errno_name(errno as i32),
            };
        }
    };
    let meta = match file.metadata() {
        Ok(meta) => meta,
        Err(e) => {
            return LayerState::Unreadable {
                error: errno_name(e.raw_os_error().unwrap_or(0)),
            };
        }
    };
    let mode = meta.mode() & 0o7777;
    let kind = meta.file_type();
    if kind.is_char_device() && meta.rdev() == 0 {
        return LayerState::Deleted;
    }
    if kind.is_dir() {
        return LayerState::Dir { mode };
    }
    if kind.is_symlink() {
        return LayerState::Symlink;
    }
    if !kind.is_file() {
        return LayerState::Other;
    }
    let mut hasher = blake3::Hasher::new();
    match hasher.update_reader(io::Read::take(&file, HASH_CAP)) {
        Ok(_) => LayerState::File {
            digest: FileDigest {
                size: meta.len(),
                blake3: hasher.finalize().to_hex().to_string(),
                partial: meta.len() > HASH_CAP,
                hashed: None,
            },
            mode,
        },
        Err(e) => LayerState::Unreadable {
            error: errno_name(e.raw_os_error().unwrap_or(0)),
        },
    }
}

fn relative(view: &Path) -> PathBuf {
    view.strip_prefix("/").unwrap_or(view).to_path_buf()
}

fn io_at(path: &Path) -> impl Fn(io::Error) -> WitnessError + '_ {
    move |source| WitnessError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests;
