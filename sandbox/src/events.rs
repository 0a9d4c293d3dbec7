//! Live filesystem events in the lab (inotify), timestamped as they arrive, for attributing
//! writes to the call that was running and for seeing which lab files were opened.
//!
//! The watches are placed on the overlay itself, reached through `/proc/<init>/root`, so
//! they see what the program does through the sandbox's view. Every directory is opened
//! beneath the lab by `openat2` (no symbolic link followed, no `..` out of it) and watched
//! by its descriptor: a link the program swaps in for a new directory is refused, never
//! followed into the host's tree. At most [`MAX_WATCHED_DIRS`] directories are watched; the
//! ones beyond are counted ([`LabEvents::unwatched`]) so the sensor says it is incomplete.
//! inotify is a timing sensor, not the witness: a file created in a directory before its
//! watch was added is missed here and still reported by the upper-layer walk.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use futures_util::StreamExt;
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
use tokio::sync::{Notify, mpsc};

use crate::aside::ClosedAside;

/// What happened to a lab path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FsEventKind {
    Create,
    Modify,
    CloseWrite,
    /// A file opened without write access was closed: it was (at most) read.
    CloseNoWrite,
    Delete,
    MovedFrom,
    MovedTo,
    Attrib,
    Open,
}

/// One observed event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsEvent {
    pub kind: FsEventKind,
    /// Path in the sandbox's view.
    pub path: PathBuf,
    pub is_dir: bool,
    /// Wall-clock time the event was read.
    pub at: SystemTime,
    /// Time since the sandbox was spawned.
    pub since_start: Duration,
}

/// The stream of lab events of one run. Bounded: when the consumer falls behind, events are
/// counted as dropped, and a kernel queue overflow is recorded, so the sensor can say it was
/// not complete.
#[derive(Debug)]
pub struct LabEvents {
    receiver: mpsc::Receiver<FsEvent>,
    health: Arc<Health>,
    close: Arc<Notify>,
    queue: Arc<ClosedAside<OwnedFd>>,
}

#[derive(Debug, Default)]
struct Health {
    dropped: AtomicU64,
    overflowed: AtomicBool,
    unwatched: AtomicU64,
}

/// The most lab directories one run watches (each watch costs the kernel about 1 KiB of
/// root's inotify allowance).
pub const MAX_WATCHED_DIRS: usize = 8192;

const CHANNEL_CAPACITY: usize = 16_384;

fn dir_mask() -> WatchMask {
    WatchMask::CREATE
        | WatchMask::MODIFY
        | WatchMask::CLOSE_WRITE
        | WatchMask::CLOSE_NOWRITE
        | WatchMask::DELETE
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::ATTRIB
        | WatchMask::OPEN
}

impl LabEvents {
    /// Watches every directory of the lab. `host_root` is where the host sees the sandbox's
    /// root (`/proc/<init>/root`), `lab` the lab's path in the sandbox's view; `outside`
    /// are host directories that show through inside it (an installation in the home the
    /// lab stands in for), not the lab's, so not watched.
    pub(crate) fn start(
        host_root: PathBuf,
        labs: &[&Path],
        outside: &[PathBuf],
        start: Instant,
    ) -> io::Result<LabEvents> {
        let inotify = Inotify::init()?;
        // The sandbox's root, through the init's magic link (the one link followed); each
        // lab directory beneath it, refusing any link on the way.
        let root = std::fs::File::open(&host_root)?;
        let mut roots = Vec::new();
        for lab in labs {
            let relative = lab.strip_prefix("/").unwrap_or(lab);
            let dir = crate::sys::open_dir_beneath(&root, relative).map_err(|errno| {
                io::Error::other(format!(
                    "cannot watch {}: not a directory beneath the sandbox's root ({errno})",
                    lab.display()
                ))
            })?;
            roots.push((lab.to_path_buf(), dir));
        }
        let health = Arc::new(Health::default());
        let mut tree = WatchTree {
            roots,
            watches: inotify.watches(),
            dirs: HashMap::new(),
            health: Arc::clone(&health),
            outside: outside.to_vec(),
        };
        for lab in labs {
            let before = tree.dirs.len();
            tree.add_recursive(lab);
            if tree.dirs.len() == before {
                return Err(io::Error::other(format!(
                    "cannot watch {}: not a directory beneath the sandbox's root",
                    lab.display()
                )));
            }
        }
        // A second descriptor of the same queue: it tells whether events wait unread.
        let queue = Arc::new(ClosedAside::new(inotify.as_fd().try_clone_to_owned()?));
        let stream = inotify.into_event_stream(vec![0u8; 64 * 1024])?;
        let (sender, receiver) = mpsc::channel(CHANNEL_CAPACITY);
        let close = Arc::new(Notify::new());
        tokio::spawn(pump(
            ClosedAside::new(stream),
            tree,
            sender,
            Arc::clone(&health),
            Arc::clone(&close),
            start,
        ));
        Ok(LabEvents {
            receiver,
            health,
            close,
            queue,
        })
    }

    /// The next event, or `None` once the run is torn down and every event was delivered.
    pub async fn recv(&mut self) -> Option<FsEvent> {
        self.receiver.recv().await
    }

    /// An event if one is waiting.
    pub fn try_recv(&mut self) -> Option<FsEvent> {
        self.receiver.try_recv().ok()
    }

    /// Events lost because the consumer fell behind.
    pub fn dropped(&self) -> u64 {
        self.health.dropped.load(Ordering::Relaxed)
    }

    /// Whether the kernel's queue overflowed (events lost before they were read).
    pub fn overflowed(&self) -> bool {
        self.health.overflowed.load(Ordering::Relaxed)
    }

    /// Lab directories not watched: beyond [`MAX_WATCHED_DIRS`], or replaced between
    /// being seen and being opened. Their events are missing.
    pub fn unwatched(&self) -> u64 {
        self.health.unwatched.load(Ordering::Relaxed)
    }

    /// The kernel's queue of this watch, for asking whether events wait unread.
    pub(crate) fn queue(&self) -> Arc<ClosedAside<OwnedFd>> {
        Arc::clone(&self.queue)
    }

    /// A handle the sandbox uses to end the stream at teardown.
    pub(crate) fn closer(&self) -> Arc<Notify> {
        Arc::clone(&self.close)
    }
}

struct WatchTree {
    /// The lab's directories (its root, and its temporary directory when that lies
    /// elsewhere): each path in the sandbox's view, and the directory itself.
    roots: Vec<(PathBuf, std::fs::File)>,
    watches: Watches,
    dirs: HashMap<WatchDescriptor, PathBuf>,
    health: Arc<Health>,
    /// Sandbox paths below the lab that are not the lab's (never watched).
    outside: Vec<PathBuf>,
}

impl WatchTree {
    /// Watches `view` (a lab path in the sandbox's view) and every directory below it;
    /// returns what was already inside, which no event will report for a directory that
    /// was just created. Each directory is opened beneath the lab and watched by its
    /// descriptor; one that is not a directory there (a link swapped in) is passed over.
    /// Iterative: a tree as deep as the program likes costs no stack.
    fn add_recursive(&mut self, view: &Path) -> Vec<(PathBuf, bool)> {
        let mut found = Vec::new();
        let mut pending = vec![view.to_path_buf()];
        while let Some(view) = pending.pop() {
            let Some((lab_dir, relative)) = self
                .roots
                .iter()
                .filter_map(|(lab, dir)| Some((dir, view.strip_prefix(lab).ok()?)))
                .min_by_key(|(_, relative)| relative.components().count())
            else {
                continue;
            };
            if self.outside.iter().any(|o| view.starts_with(o)) {
                continue;
            }
            if self.dirs.len() >= MAX_WATCHED_DIRS {
                self.health.unwatched.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let dir = match crate::sys::open_dir_beneath(lab_dir, relative) {
                Ok(dir) => dir,
                // Gone again, or not a directory (any more): nothing of it to watch.
                Err(nix::errno::Errno::ENOENT | nix::errno::Errno::ENOTDIR) => continue,
                // A link on the way or at the end (ELOOP, EXDEV): refused, and counted,
                // since what the program does behind it is not seen.
                Err(_) => {
                    self.health.unwatched.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            };
            use std::os::fd::AsRawFd;
            let by_fd = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
            let Ok(wd) = self.watches.add(&by_fd, dir_mask()) else {
                self.health.unwatched.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            self.dirs.insert(wd, view.clone());
            let Ok(entries) = std::fs::read_dir(&by_fd) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = view.join(entry.file_name());
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                found.push((path.clone(), is_dir));
                if is_dir {
                    pending.push(path);
                }
            }
        }
        found
    }
}

/// Reads the watch until the overlay is gone or the sandbox closes the stream. The group
/// is closed aside ([`crate::aside`]), so the end of the stream does not wait for it.
async fn pump(
    mut stream: ClosedAside<inotify::EventStream<Vec<u8>>>,
    mut tree: WatchTree,
    sender: mpsc::Sender<FsEvent>,
    health: Arc<Health>,
    close: Arc<Notify>,
    start: Instant,
) {
    loop {
        let event = tokio::select! {
            biased;
            event = stream.next() => event,
            () = close.notified() => None,
        };
        let Some(Ok(event)) = event else { return };
        if event.mask.contains(EventMask::Q_OVERFLOW) {
            health.overflowed.store(true, Ordering::Relaxed);
            continue;
        }
        if event.mask.contains(EventMask::IGNORED) {
            tree.dirs.remove(&event.wd);
            if tree.dirs.is_empty() {
                return; // the overlay is gone: every event has been read
            }
            continue;
        }
        let Some(dir) = tree.dirs.get(&event.wd).cloned() else {
            continue;
        };
        let path = event
            .name
            .as_ref()
            .map_or_else(|| dir.clone(), |name: &OsString| dir.join(name));
        let is_dir = event.mask.contains(EventMask::ISDIR);
        let mut found = Vec::new();
        if is_dir
            && event
                .mask
                .intersects(EventMask::CREATE | EventMask::MOVED_TO)
        {
            // What appeared in the new directory before its watch existed is reported as
            // created now: late, never missing. The witness has the exact content anyway.
            found = tree.add_recursive(&path);
        }
        let Some(kind) = kind_of(event.mask) else {
            continue;
        };
        let found = found.into_iter().map(|(p, d)| (FsEventKind::Create, p, d));
        for (kind, path, is_dir) in std::iter::once((kind, path, is_dir)).chain(found) {
            let since_start = start.elapsed();
            let observed = FsEvent {
                kind,
                path,
                is_dir,
                at: SystemTime::now(),
                since_start,
            };
            if sender.try_send(observed).is_err() {
                health.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn kind_of(mask: EventMask) -> Option<FsEventKind> {
    const KINDS: [(EventMask, FsEventKind); 9] = [
        (EventMask::CREATE, FsEventKind::Create),
        (EventMask::MODIFY, FsEventKind::Modify),
        (EventMask::CLOSE_WRITE, FsEventKind::CloseWrite),
        (EventMask::CLOSE_NOWRITE, FsEventKind::CloseNoWrite),
        (EventMask::DELETE, FsEventKind::Delete),
        (EventMask::MOVED_FROM, FsEventKind::MovedFrom),
        (EventMask::MOVED_TO, FsEventKind::MovedTo),
        (EventMask::ATTRIB, FsEventKind::Attrib),
        (EventMask::OPEN, FsEventKind::Open),
    ];
    KINDS
        .iter()
        .find(|(m, _)| mask.contains(*m))
        .map(|(_, k)| *k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn events_in_a_plain_directory_arrive_with_view_paths() {
        let host = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(host.path().join("lab/tmp")).unwrap();
        let mut events = LabEvents::start(
            host.path().to_path_buf(),
            &[Path::new("/lab")],
            &[],
            Instant::now(),
        )
        .unwrap();
        std::fs::write(host.path().join("lab/tmp/a"), "x").unwrap();
        std::fs::create_dir(host.path().join("lab/new")).unwrap();
        let mut seen = Vec::new();
        while let Some(event) = events.recv().await {
            seen.push((event.kind, event.path.clone()));
            if event.path == Path::new("/lab/new") {
                break;
            }
        }
        assert!(
            seen.contains(&(FsEventKind::Create, PathBuf::from("/lab/tmp/a"))),
            "{seen:?}"
        );
        assert!(
            seen.contains(&(FsEventKind::CloseWrite, PathBuf::from("/lab/tmp/a"))),
            "{seen:?}"
        );
        assert_eq!(events.dropped(), 0);
    }

    /// A lab that stands in for a home has its temporary directory apart (`/tmp`): both
    /// are watched, each event named by its own directory's view path.
    #[tokio::test]
    async fn a_temporary_directory_apart_from_the_lab_is_watched_too() {
        let host = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(host.path().join("home/u")).unwrap();
        std::fs::create_dir_all(host.path().join("tmp/t")).unwrap();
        let labs = [Path::new("/home/u"), Path::new("/tmp")];
        let mut events =
            LabEvents::start(host.path().to_path_buf(), &labs, &[], Instant::now()).unwrap();
        std::fs::write(host.path().join("tmp/t/lock"), "x").unwrap();
        std::fs::write(host.path().join("home/u/done"), "x").unwrap();
        let mut seen = Vec::new();
        while let Some(event) = events.recv().await {
            seen.push((event.kind, event.path.clone()));
            if event.path == Path::new("/home/u/done") {
                break;
            }
        }
        assert!(
            seen.contains(&(FsEventKind::CloseWrite, PathBuf::from("/tmp/t/lock"))),
            "{seen:?}"
        );
        let missing = LabEvents::start(
            host.path().to_path_buf(),
            &[Path::new("/home/u"), Path::new("/nowhere")],
            &[],
            Instant::now(),
        );
        assert!(missing.is_err_and(|e| e.to_string().contains("/nowhere")));
    }

    /// A watch tree on `host/lab`, as the sandbox builds one (by descriptor, beneath the lab).
    fn tree(host: &Path) -> (Inotify, WatchTree) {
        let inotify = Inotify::init().unwrap();
        let root = std::fs::File::open(host).unwrap();
        let lab_dir = crate::sys::open_dir_beneath(&root, Path::new("lab")).unwrap();
        let tree = WatchTree {
            roots: vec![(PathBuf::from("/lab"), lab_dir)],
            watches: inotify.watches(),
            dirs: HashMap::new(),
            health: Arc::default(),
            outside: vec![PathBuf::from("/lab/.local/venv")],
        };
        (inotify, tree)
    }

    #[test]
    fn an_installation_showing_through_the_lab_is_not_watched() {
        let host = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(host.path().join("lab/.local/venv/lib/site")).unwrap();
        std::fs::create_dir_all(host.path().join("lab/work")).unwrap();
        let (_inotify, mut tree) = tree(host.path());
        tree.add_recursive(Path::new("/lab"));
        let mut watched: Vec<&PathBuf> = tree.dirs.values().collect();
        watched.sort();
        assert_eq!(watched, ["/lab", "/lab/.local", "/lab/work"]);
        assert_eq!(tree.health.unwatched.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_link_swapped_in_for_a_new_directory_is_not_followed() {
        let host = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(host.path().join("lab/work")).unwrap();
        std::fs::create_dir(outside.path().join("secret")).unwrap();
        let (mut inotify, mut tree) = tree(host.path());
        tree.add_recursive(Path::new("/lab"));
        assert_eq!(tree.dirs.len(), 2);
        // The program made a directory, then swapped it for links out of the lab, before
        // the watcher got to it: absolute, relative, and one further down the way.
        let work = host.path().join("lab/work");
        std::os::unix::fs::symlink(outside.path(), work.join("abs")).unwrap();
        std::os::unix::fs::symlink("../../..", work.join("up")).unwrap();
        for new in ["/lab/work/abs", "/lab/work/up", "/lab/work/abs/secret"] {
            tree.add_recursive(Path::new(new));
        }
        assert_eq!(tree.dirs.len(), 2, "watched {:?}", tree.dirs.values());
        // A link in the place of the directory is no directory (passed over); one on the
        // way to it is refused, and counted: whatever lies behind it goes unseen.
        assert_eq!(tree.health.unwatched.load(Ordering::Relaxed), 1);
        // Nothing outside the lab reports an event.
        std::fs::write(outside.path().join("secret/key"), "x").unwrap();
        let mut buffer = [0u8; 4096];
        let names: Vec<OsString> = match inotify.read_events(&mut buffer) {
            Ok(events) => events.filter_map(|e| e.name.map(OsString::from)).collect(),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Vec::new(),
            Err(e) => panic!("{e}"),
        };
        // Only the lab's own (the links made, its directories listed), none from outside.
        assert!(
            names
                .iter()
                .all(|n| ["abs", "up", "work"].contains(&n.to_str().unwrap())),
            "{names:?}"
        );
    }

    #[test]
    fn watches_stop_at_the_cap_and_the_rest_is_counted() {
        let host = tempfile::tempdir().unwrap();
        // More directories than the cap, and one chain of them deep: the walk is iterative.
        let lab = host.path().join("lab");
        for i in 0..MAX_WATCHED_DIRS {
            std::fs::create_dir_all(lab.join(format!("{i}"))).unwrap();
        }
        std::fs::create_dir_all(lab.join("d/".repeat(1000))).unwrap();
        let (_inotify, mut tree) = tree(host.path());
        tree.add_recursive(Path::new("/lab"));
        assert_eq!(tree.dirs.len(), MAX_WATCHED_DIRS);
        // The lab and 1,000 + 8,192 directories under it, less the watched ones.
        assert_eq!(
            tree.health.unwatched.load(Ordering::Relaxed),
            (1 + 1000 + MAX_WATCHED_DIRS - MAX_WATCHED_DIRS) as u64
        );
    }

    #[test]
    fn event_kinds_serialise_in_snake_case() {
        use FsEventKind::*;
        let kinds = [
            Create,
            Modify,
            CloseWrite,
            CloseNoWrite,
            Delete,
            MovedFrom,
            MovedTo,
            Attrib,
            Open,
        ];
        let json = serde_json::to_string(&kinds).unwrap();
        assert_eq!(
            json,
            r#"["create","modify","close_write","close_no_write","delete","moved_from","moved_to","attrib","open"]"#
        );
        assert_eq!(
            serde_json::from_str::<[FsEventKind; 9]>(&json).unwrap(),
            kinds
        );
    }
}
