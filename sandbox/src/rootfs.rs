//! The sandbox's root: an overlay over the host root, fresh /proc (its host-wide knobs
//! read-only, its views of the host's keys masked), a minimal read-only /dev, read-only
//! /sys, then pivot_root into it.
//!
//! Runs inside the sandbox's init, in its new mount namespace, before the program starts. No
//! directory is created inside the overlay here: a mount point made by the sandbox itself
//! would show up in the upper layer as a write the program never made.

use std::fs::File;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::mount::{MntFlags, MsFlags, mount, umount2};

use crate::message::Stage;

/// Everything the init needs to build the root, prepared by the parent.
#[derive(Debug, Clone)]
pub(crate) struct RootfsPlan {
    /// Host path where the overlay is mounted before the pivot.
    pub(crate) merged: PathBuf,
    /// The run directory the overlay's layer paths are relative to.
    pub(crate) layers_dir: PathBuf,
    /// `lowerdir=…,upperdir=…,workdir=…` and the fixed overlay features.
    pub(crate) overlay_options: String,
    /// The loop device holding the lab's image, and the lab layer it is mounted on (in this
    /// mount namespace alone: the host keeps the tree the image was packed from).
    pub(crate) lab_image: Option<(PathBuf, PathBuf)>,
}

const DEVICES: [&str; 5] = ["null", "zero", "full", "random", "urandom"];
const DEV_OPTIONS: &str = "mode=755,size=65536,nr_inodes=64";
// /proc entries that change the whole host when written by a uid-0 process without
// capabilities: made read-only, as container runtimes do.
const PROC_READ_ONLY: [&str; 5] = ["sys", "sysrq-trigger", "irq", "bus", "fs"];
// /proc entries that show the host's keys (descriptions of every key the uid may view) and
// every uid's key quota: /dev/null over them, as container runtimes mask /proc/keys.
const PROC_MASKED: [&str; 2] = ["keys", "key-users"];

/// `lowers` topmost first: the lab, the mask, the host root. Every layer is named relative
/// to `dir` (the init mounts from there): the program reads these options in its
/// `/proc/self/mountinfo`, and the host's run directory is none of its business.
pub(crate) fn overlay_options(dir: &Path, lowers: &[PathBuf], upper: &Path, work: &Path) -> String {
    let name = |path: &Path| path.strip_prefix(dir).unwrap_or(path).display().to_string();
    let lowers: Vec<String> = lowers.iter().map(|l| name(l)).collect();
    format!(
        "lowerdir={},upperdir={},workdir={},redirect_dir=off,metacopy=off,index=off,xino=off",
        lowers.join(":"),
        name(upper),
        name(work)
    )
}

/// Builds the root and pivots into it. On failure, the stage and errno.
pub(crate) fn enter(plan: &RootfsPlan) -> Result<(), (Stage, Errno)> {
    let none = None::<&str>;
    let at = |stage| move |errno| (stage, errno);
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(at(Stage::MountPrivate))?;
    if let Some((device, layer)) = &plan.lab_image {
        let flags = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        mount(Some(device), layer, Some("squashfs"), flags, none).map_err(at(Stage::MountLab))?;
    }
    let merged = &plan.merged;
    nix::unistd::chdir(&plan.layers_dir).map_err(at(Stage::MountOverlay))?;
    mount(
        Some("overlay"),
        merged,
        Some("overlay"),
        MsFlags::empty(),
        Some(plan.overlay_options.as_str()),
    )
    .map_err(at(Stage::MountOverlay))?;
    mount_proc(&merged.join("proc")).map_err(at(Stage::MountProc))?;
    mount_dev(&merged.join("dev")).map_err(at(Stage::MountDev))?;
    let sys_flags =
        MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(
        Some("sysfs"),
        &merged.join("sys"),
        Some("sysfs"),
        sys_flags,
        none,
    )
    .map_err(at(Stage::MountSys))?;
    pivot(merged).map_err(at(Stage::PivotRoot))
}

fn mount_proc(target: &Path) -> Result<(), Errno> {
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("proc"), target, Some("proc"), flags, None::<&str>)?;
    for entry in PROC_READ_ONLY {
        let path = target.join(entry);
        if path.exists() {
            read_only_bind(&path, &path, flags)?;
        }
    }
    for entry in PROC_MASKED {
        let path = target.join(entry);
        if path.exists() {
            // Not nodev: a read gives end of file, as from an empty list.
            let device = MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC;
            read_only_bind(Path::new("/dev/null"), &path, device)?;
        }
    }
    Ok(())
}

fn mount_dev(target: &Path) -> Result<(), Errno> {
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC;
    mount(
        Some("tmpfs"),
        target,
        Some("tmpfs"),
        flags,
        Some(DEV_OPTIONS),
    )?;
    for device in DEVICES {
        let node = target.join(device);
        File::create(&node).map_err(errno)?;
        mount(
            Some(&Path::new("/dev").join(device)),
            &node,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )?;
    }
    for (link, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        symlink(to, target.join(link)).map_err(errno)?;
    }
    // Read-only so /dev is no unwitnessed place to write; the device binds keep their own flags.
    mount(
        None::<&str>,
        target,
        None::<&str>,
        MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | flags,
        Some(DEV_OPTIONS),
    )
}

fn read_only_bind(source: &Path, target: &Path, flags: MsFlags) -> Result<(), Errno> {
    mount(
        Some(source),
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )?;
    let remount = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | flags;
    mount(None::<&str>, target, None::<&str>, remount, None::<&str>)
}

/// pivot_root(".", ".") stacks the old root on the new one; detaching it leaves only the new.
fn pivot(new_root: &Path) -> Result<(), Errno> {
    nix::unistd::chdir(new_root)?;
    nix::unistd::pivot_root(".", ".")?;
    umount2(".", MntFlags::MNT_DETACH)?;
    nix::unistd::chdir("/")
}

fn errno(error: std::io::Error) -> Errno {
    Errno::from_raw(error.raw_os_error().unwrap_or(libc::EIO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_options_put_the_lab_above_the_host_and_fix_features() {
        let options = overlay_options(
            Path::new("/r"),
            &[
                PathBuf::from("/r/lab"),
                PathBuf::from("/r/mask"),
                PathBuf::from("/r/lower"),
            ],
            Path::new("/r/upper"),
            Path::new("/r/work"),
        );
        assert!(options.starts_with("lowerdir=lab:mask:lower,upperdir=upper,workdir=work,"));
        // Without these the upper layer would not describe every change by itself.
        for feature in ["redirect_dir=off", "metacopy=off", "index=off"] {
            assert!(options.contains(feature), "{options}");
        }
    }
}
