//! The lab: the per-run home, temporary and working directories a program sees, with the
//! files the caller plants in them. Two layouts: [`Lab::new`] keeps all three under one
//! directory of its own (`/lab/home`, `/lab/tmp`, `/lab/work`); [`Lab::home`] is a user's
//! home as it looks on any machine (`$HOME` itself, `$HOME/work`, and the system's `/tmp`,
//! which the mask empties), so that nothing in the program's paths says it is audited.
//!
//! The lab is not a bind mount: it is the top lower layer of the run's overlay root, so every
//! write into it lands in the upper layer like any other write and the witness sees it.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::fcntl::AT_FDCWD;
use nix::sys::stat::{UtimensatFlags, utimensat};
use nix::sys::time::TimeSpec;

/// What the lab holds and where the sandbox sees it.
#[derive(Debug, Clone)]
pub struct Lab {
    mount: PathBuf,
    layout: Layout,
    template: Option<PathBuf>,
    planted: Vec<Planted>,
    links: Vec<(PathBuf, PathBuf)>,
}

/// Where the home, temporary and working directories are, relative to the mount point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// `home/`, `tmp/` and `work/` beneath the mount point.
    Split,
    /// The mount point is `$HOME`; `work/` beneath it; temporary files in `/tmp`.
    Home,
}

#[derive(Debug, Clone)]
struct Planted {
    path: PathBuf,
    bytes: Vec<u8>,
    mode: u32,
}

/// A lab specification that cannot be built, naming the offending path.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("lab mount point {path} must be an absolute, normalised path other than /")]
    MountPoint { path: PathBuf },
    #[error("lab template {path} is not a directory")]
    TemplateNotDirectory { path: PathBuf },
    #[error("planted path {path} must be relative to the lab and stay inside it")]
    PlantedPath { path: PathBuf },
    #[error("cannot prepare lab file {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write the lab's image {path}")]
    Image {
        path: PathBuf,
        #[source]
        source: backhand::BackhandError,
    },
}

impl Default for Lab {
    fn default() -> Self {
        Lab::new()
    }
}

impl Lab {
    /// An empty lab (home/, tmp/, work/) seen at `/lab`.
    pub fn new() -> Self {
        Lab {
            mount: PathBuf::from("/lab"),
            layout: Layout::Split,
            template: None,
            planted: Vec::new(),
            links: Vec::new(),
        }
    }

    /// A lab that is the home directory `home` (`$HOME`), with the working directory
    /// `home/work`; temporary files go to the system's `/tmp`, which the program sees empty.
    /// Planted paths are relative to `home`.
    pub fn home(home: impl Into<PathBuf>) -> Self {
        Lab {
            mount: home.into(),
            layout: Layout::Home,
            ..Lab::new()
        }
    }

    /// Where the sandbox sees the lab.
    pub fn mount_at(mut self, path: impl Into<PathBuf>) -> Self {
        self.mount = path.into();
        self
    }

    /// Copies the tree under `dir` into the lab before the run.
    pub fn template(mut self, dir: impl Into<PathBuf>) -> Self {
        self.template = Some(dir.into());
        self
    }

    /// Plants a file at `path` (relative to the lab, e.g. `home/.ssh/id_rsa`).
    pub fn plant(self, path: impl Into<PathBuf>, bytes: impl Into<Vec<u8>>) -> Self {
        self.plant_with_mode(path, bytes, 0o644)
    }

    /// Plants a file with the given permission bits.
    pub fn plant_with_mode(
        mut self,
        path: impl Into<PathBuf>,
        bytes: impl Into<Vec<u8>>,
        mode: u32,
    ) -> Self {
        self.planted.push(Planted {
            path: path.into(),
            bytes: bytes.into(),
            mode,
        });
        self
    }

    /// Plants a symbolic link at `path` (relative to the lab) pointing to `target`, which
    /// may lead anywhere: a scope-escape trap, say.
    pub fn symlink(mut self, path: impl Into<PathBuf>, target: impl Into<PathBuf>) -> Self {
        self.links.push((path.into(), target.into()));
        self
    }

    pub(crate) fn validate(&self) -> Result<(), LabError> {
        let normal = self.mount.is_absolute()
            && self.mount.components().count() > 1
            && self
                .mount
                .components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if !normal {
            return Err(LabError::MountPoint {
                path: self.mount.clone(),
            });
        }
        if let Some(template) = &self.template
            && !template.is_dir()
        {
            return Err(LabError::TemplateNotDirectory {
                path: template.clone(),
            });
        }
        let links = self.links.iter().map(|(path, _)| path);
        for path in self.planted.iter().map(|p| &p.path).chain(links) {
            if !is_inside(path) {
                return Err(LabError::PlantedPath { path: path.clone() });
            }
        }
        Ok(())
    }

    /// The lab as seen from inside the sandbox.
    pub fn view(&self) -> LabView {
        LabView {
            root: self.mount.clone(),
            layout: self.layout,
        }
    }

    /// Writes the lab into `layer` (the top lower layer), owned by `uid:gid`.
    pub(crate) fn build(&self, layer: &Path, uid: u32, gid: u32) -> Result<(), LabError> {
        let root = layer.join(self.mount.strip_prefix("/").unwrap_or(&self.mount));
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| LabError::Io { path, source }
        };
        fs::create_dir_all(&root).map_err(io(&root))?;
        if let Some(template) = &self.template {
            copy_tree(template, &root)?;
        }
        let dirs: &[&str] = match self.layout {
            Layout::Split => &["home", "tmp", "work"],
            Layout::Home => &["work", ".cache"],
        };
        for dir in dirs {
            fs::create_dir_all(root.join(dir)).map_err(io(&root.join(dir)))?;
        }
        for planted in &self.planted {
            let path = root.join(&planted.path);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(io(parent))?;
            }
            fs::write(&path, &planted.bytes).map_err(io(&path))?;
            fs::set_permissions(&path, fs::Permissions::from_mode(planted.mode))
                .map_err(io(&path))?;
        }
        for (path, target) in &self.links {
            let link = root.join(path);
            if let Some(parent) = link.parent() {
                fs::create_dir_all(parent).map_err(io(parent))?;
            }
            std::os::unix::fs::symlink(target, &link).map_err(io(&link))?;
        }
        let (dir, mode) = match self.layout {
            Layout::Split => (root.join("tmp"), 0o1777),
            // A home is its owner's alone, as adduser makes it.
            Layout::Home => (root.clone(), 0o700),
        };
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode)).map_err(io(&dir))?;
        chown_tree(&root, uid, gid)?;
        let mut seed = [0u8; 32];
        let _ = getrandom::fill(&mut seed);
        // Whole seconds, as the lab's image keeps them (`pack`).
        let now = UNIX_EPOCH
            + Duration::from_secs(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs(),
            );
        age_tree(&root, Path::new(""), &History { seed, now }).map(drop)
    }

    /// Packs `layer`, as [`Lab::build`] left it, into a SquashFS image at `image`: the same
    /// tree, modes, owners and modification times. A SquashFS inode has one time, so each
    /// entry's change and access times read as its modification time, as a file's do that
    /// was written once and not changed since; on the layer's own filesystem every change
    /// time would say when the lab was made. A directory above the lab (`/home` of a lab at
    /// `/home/user`) takes the mode, owner and time of the host's directory at that path
    /// under `host_root`, where there is one.
    pub(crate) fn pack(
        &self,
        layer: &Path,
        host_root: &Path,
        image: &Path,
    ) -> Result<(), LabError> {
        let failed = |source| LabError::Image {
            path: image.into(),
            source,
        };
        let mut writer = backhand::FilesystemWriter::default();
        writer.set_compressor(
            backhand::FilesystemCompressor::new(backhand::compression::Compressor::Gzip, None)
                .map_err(failed)?,
        );
        let lab = self.mount.strip_prefix("/").unwrap_or(&self.mount);
        let root = header_of(layer, &host_root.join(""), true)?;
        writer.set_root_mode(root.permissions);
        writer.set_root_uid(root.uid);
        writer.set_root_gid(root.gid);
        writer.set_time(root.mtime);
        pack_tree(&mut writer, layer, Path::new(""), lab, host_root)?;
        let file = fs::File::create(image).map_err(|source| LabError::Io {
            path: image.into(),
            source,
        })?;
        writer.write(io::BufWriter::new(file)).map_err(failed)?;
        Ok(())
    }
    /// The lab's layer packed into an image ([`Lab::pack`]) at `image` and attached to a loop
    /// device, for the run's mount namespace to mount over the layer: on the layer's own
    /// filesystem every file's change time says when the lab was made, a moment before the
    /// first call. Returns the device's descriptor (held until the mount is made) and path.
    /// Where the kernel has no SquashFS or no loop device, `None`: the run goes on with the
    /// layer as built, and says so in the log (change times then tell, `sandbox/TELLS.md`).
    pub(crate) fn image_on_loop(
        &self,
        layer: &Path,
        host_root: &Path,
        image: &Path,
    ) -> Option<(std::os::fd::OwnedFd, PathBuf)> {
        use std::os::fd::AsFd;
        static SQUASHFS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let known = SQUASHFS.get_or_init(|| {
            fs::read_to_string("/proc/filesystems").is_ok_and(|list| {
                list.lines()
                    .any(|line| line.trim_end().ends_with("squashfs"))
            })
        });
        if !known {
            tracing::warn!(
                "the kernel has no SquashFS: the lab's change times say when it was made"
            );
            return None;
        }
        let attached = self
            .pack(layer, host_root, image)
            .map_err(|error| {
                let mut text = error.to_string();
                let mut source = std::error::Error::source(&error);
                while let Some(cause) = source {
                    text.push_str(&format!(": {cause}"));
                    source = cause.source();
                }
                text
            })
            .and_then(|()| fs::File::open(image).map_err(|error| error.to_string()))
            .and_then(|file| {
                crate::sys::attach_loop(file.as_fd())
                    .map_err(|errno| format!("attach a loop device: {errno}"))
            });
        match attached {
            Ok(device) => Some(device),
            Err(error) => {
                tracing::warn!(%error, "no image of the lab: its change times say when it was made");
                None
            }
        }
    }
}

/// Adds the entries of `dir` (at `relative` in the image) to `writer`, directories before
/// what they hold; `lab` is the lab's path in the image (its ancestors take the host's
/// directories' metadata).
fn pack_tree(
    writer: &mut backhand::FilesystemWriter<'_, '_, '_>,
    dir: &Path,
    relative: &Path,
    lab: &Path,
    host_root: &Path,
) -> Result<(), LabError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LabError::Io { path, source }
    };
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(dir)
        .map_err(io(dir))?
        .collect::<Result<_, _>>()
        .map_err(io(dir))?;
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let inside = relative.join(entry.file_name());
        let in_image = Path::new("/").join(&inside);
        let image_error = |source| LabError::Image {
            path: in_image.clone(),
            source,
        };
        let kind = entry.file_type().map_err(io(&path))?;
        let above_lab = lab.starts_with(&inside) && lab != inside;
        let header = header_of(&path, &host_root.join(&inside), above_lab)?;
        if kind.is_dir() {
            writer.push_dir(&in_image, header).map_err(image_error)?;
            pack_tree(writer, &path, &inside, lab, host_root)?;
        } else if kind.is_symlink() {
            let target = fs::read_link(&path).map_err(io(&path))?;
            writer
                .push_symlink(target, &in_image, header)
                .map_err(image_error)?;
        } else if kind.is_file() {
            writer
                .push_file_from_path(path.clone(), &in_image, header)
                .map_err(image_error)?;
        }
        // Nothing else is planted; a template's sockets or pipes are left out.
    }
    Ok(())
}

/// The SquashFS metadata of `path`; with `from_host`, of the host's `host` instead where it
/// exists.
fn header_of(path: &Path, host: &Path, from_host: bool) -> Result<backhand::NodeHeader, LabError> {
    use std::os::unix::fs::MetadataExt;
    let metadata = match from_host.then(|| fs::metadata(host)) {
        Some(Ok(metadata)) => metadata,
        _ => fs::symlink_metadata(path).map_err(|source| LabError::Io {
            path: path.into(),
            source,
        })?,
    };
    Ok(backhand::NodeHeader::new(
        (metadata.mode() & 0o7777) as u16,
        metadata.uid(),
        metadata.gid(),
        u32::try_from(metadata.mtime().max(0)).unwrap_or(u32::MAX),
    ))
}

/// The times a lab's files are given, so that it looks lived in rather than made a moment
/// before the first call (a server that found every file's mtime within a second of its
/// start knew it was audited): each file modified some day in the last two years and read
/// since, drawn per run and path; each directory modified when its newest entry was.
/// Change times cannot be set (the kernel stamps them): the run mounts the layer's image
/// instead ([`Lab::pack`]), where each entry has the one time it was given.
struct History {
    seed: [u8; 32],
    now: SystemTime,
}

impl History {
    const DAY: u64 = 86_400;

    /// When the file at `relative` was last modified, and last read.
    fn times_of(&self, relative: &Path) -> (SystemTime, SystemTime) {
        let mut hasher = blake3::Hasher::new_keyed(&self.seed);
        hasher.update(relative.as_os_str().as_encoded_bytes());
        let h = hasher.finalize();
        let word =
            |i: usize| u64::from_le_bytes(h.as_bytes()[i..i + 8].try_into().unwrap_or_default());
        // Between a day and two years back, most of them in the last months.
        let span = 730 * History::DAY;
        let fraction = (word(0) % 1_000) as f64 / 1_000.0;
        let back =
            History::DAY + (span as f64 * fraction * fraction) as u64 + word(8) % History::DAY;
        let modified = self.now - Duration::from_secs(back);
        let read = modified + Duration::from_secs(word(16) % back.max(1));
        (modified, read)
    }
}

/// Gives every entry under `path` (at `relative` in the lab) its [`History`] times, the
/// entries before their directory; returns the time `path` was modified. Symbolic links
/// are dated themselves, not their targets.
fn age_tree(path: &Path, relative: &Path, history: &History) -> Result<SystemTime, LabError> {
    let io = |source| LabError::Io {
        path: path.into(),
        source,
    };
    let metadata = fs::symlink_metadata(path).map_err(io)?;
    let (mut modified, read) = history.times_of(relative);
    if metadata.is_dir() {
        let mut newest = None;
        for entry in fs::read_dir(path).map_err(io)? {
            let entry = entry.map_err(io)?;
            let child = age_tree(&entry.path(), &relative.join(entry.file_name()), history)?;
            newest = newest.max(Some(child));
        }
        modified = newest.unwrap_or(modified);
    }
    let read = read.max(modified);
    let spec = |time: SystemTime| {
        let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
        TimeSpec::new(since.as_secs() as i64, i64::from(since.subsec_nanos()))
    };
    utimensat(
        AT_FDCWD,
        path,
        &spec(read),
        &spec(modified),
        UtimensatFlags::NoFollowSymlink,
    )
    .map_err(|errno| io(errno.into()))?;
    Ok(modified)
}

/// Paths of the lab in the sandbox's view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabView {
    root: PathBuf,
    layout: Layout,
}

impl LabView {
    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn home(&self) -> PathBuf {
        match self.layout {
            Layout::Split => self.root.join("home"),
            Layout::Home => self.root.clone(),
        }
    }
    pub fn tmp(&self) -> PathBuf {
        match self.layout {
            Layout::Split => self.root.join("tmp"),
            Layout::Home => PathBuf::from("/tmp"),
        }
    }
    pub fn work(&self) -> PathBuf {
        self.root.join("work")
    }
    /// A directory of the lab for the sandbox's own marker file (watched, like all of the
    /// lab): the temporary directory, in either layout. Not in a home: the marker's write
    /// would copy the home and its parents up into the upper layer, each with a change time
    /// of the moment the run began.
    pub(crate) fn scratch(&self) -> PathBuf {
        self.tmp()
    }
    /// Whether the lab is a home of the ordinary shape ([`Lab::home`]): the program's
    /// environment then names only what a login gives (no TMPDIR, no XDG directories).
    pub fn is_home(&self) -> bool {
        self.layout == Layout::Home
    }
}

fn is_inside(path: &Path) -> bool {
    path.components().next().is_some()
        && path.components().all(|c| matches!(c, Component::Normal(_)))
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), LabError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LabError::Io { path, source }
    };
    for entry in fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(io(&source))?;
        if kind.is_dir() {
            fs::create_dir_all(&target).map_err(io(&target))?;
            copy_tree(&source, &target)?;
        } else if kind.is_symlink() {
            let link = fs::read_link(&source).map_err(io(&source))?;
            std::os::unix::fs::symlink(link, &target).map_err(io(&target))?;
        } else {
            fs::copy(&source, &target).map_err(io(&source))?;
        }
    }
    Ok(())
}

fn chown_tree(path: &Path, uid: u32, gid: u32) -> Result<(), LabError> {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid)).map_err(|source| LabError::Io {
        path: path.into(),
        source,
    })?;
    if fs::symlink_metadata(path)
        .map(|m| m.is_dir())
        .unwrap_or(false)
    {
        for entry in fs::read_dir(path).map_err(|source| LabError::Io {
            path: path.into(),
            source,
        })? {
            let entry = entry.map_err(|source| LabError::Io {
                path: path.into(),
                source,
            })?;
            chown_tree(&entry.path(), uid, gid)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A built lab looks lived in: no file modified within the last day, the times spread
    /// over months and different from one file to the next, none read before it was
    /// written, and each directory modified when its newest entry was.
    #[test]
    fn a_built_lab_has_a_history_not_one_moment() {
        use std::os::unix::fs::MetadataExt;
        let layer = tempfile::tempdir().unwrap();
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        let mut lab = Lab::home("/home/dana").symlink("work/link", "/etc");
        for i in 0..40 {
            lab = lab.plant(format!("work/notes/n{i}.md"), "note");
        }
        lab.build(layer.path(), uid, gid).unwrap();
        let root = layer.path().join("home/dana");
        let now = SystemTime::now();
        let mut times = std::collections::BTreeSet::new();
        for i in 0..40 {
            let meta = fs::metadata(root.join(format!("work/notes/n{i}.md"))).unwrap();
            let modified = meta.modified().unwrap();
            let age = now.duration_since(modified).unwrap();
            assert!(age >= Duration::from_secs(86_400), "{age:?}");
            assert!(age <= Duration::from_secs(732 * 86_400), "{age:?}");
            assert!(meta.atime() >= meta.mtime());
            times.insert(meta.mtime());
        }
        assert!(times.len() > 30, "{times:?}");
        let notes = fs::metadata(root.join("work/notes")).unwrap();
        assert_eq!(notes.mtime(), *times.last().unwrap());
        let link = fs::symlink_metadata(root.join("work/link")).unwrap();
        assert!(
            now.duration_since(link.modified().unwrap()).unwrap() >= Duration::from_secs(86_400)
        );
    }

    #[test]
    fn mount_point_must_be_absolute_and_normal() {
        for bad in ["lab", "/", "/lab/../etc"] {
            let error = Lab::new().mount_at(bad).validate().unwrap_err();
            assert!(error.to_string().contains(bad), "{error}");
        }
        Lab::new().mount_at("/srv/lab").validate().unwrap();
    }

    #[test]
    fn planted_paths_stay_inside() {
        for bad in ["/etc/passwd", "../escape", "home/../../x", ""] {
            let error = Lab::new().plant(bad, "x").validate().unwrap_err();
            assert!(
                matches!(error, LabError::PlantedPath { .. }),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn template_must_be_a_directory() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let error = Lab::new().template(file.path()).validate().unwrap_err();
        assert!(
            error
                .to_string()
                .contains(&file.path().display().to_string())
        );
    }

    #[test]
    fn build_lays_out_dirs_template_and_planted_files() {
        let template = tempfile::tempdir().unwrap();
        fs::create_dir_all(template.path().join("work/notes")).unwrap();
        fs::write(template.path().join("work/notes/a.md"), "note").unwrap();
        let layer = tempfile::tempdir().unwrap();
        let lab = Lab::new()
            .mount_at("/srv/lab")
            .template(template.path())
            .plant_with_mode("home/.ssh/id_rsa", "secret", 0o600)
            .symlink("work/notes/escape", "/lab/home");
        let (uid, gid) = (
            nix::unistd::getuid().as_raw(),
            nix::unistd::getgid().as_raw(),
        );
        lab.build(layer.path(), uid, gid).unwrap();
        let root = layer.path().join("srv/lab");
        assert_eq!(
            fs::read_to_string(root.join("work/notes/a.md")).unwrap(),
            "note"
        );
        let key = fs::metadata(root.join("home/.ssh/id_rsa")).unwrap();
        assert_eq!(key.permissions().mode() & 0o777, 0o600);
        assert!(root.join("tmp").is_dir());
        let link = fs::read_link(root.join("work/notes/escape")).unwrap();
        assert_eq!(link, Path::new("/lab/home"));
    }
}
