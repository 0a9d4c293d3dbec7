//! Live filesystem events in the lab (inotify), timestamped as they arrive, for attributing
//! writes to the call that was running and for seeing which lab files were opened.
//!
//! The watches are placed through `/proc/<init>/root`, on the overlay itself, so they see
//! what the program does through the sandbox's view. inotify is a timing sensor, not the
//! witness: a file created in a directory before its watch was added is missed here and still
//! reported by the upper-layer walk.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use futures_util::StreamExt;
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
use tokio::sync::{Notify, mpsc};

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
}

#[derive(Debug, Default)]
struct Health {
    dropped: AtomicU64,
    overflowed: AtomicBool,
}

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
    /// root (`/proc/<init>/root`), `lab` the lab's path in the sandbox's view.
    pub(crate) fn start(host_root: PathBuf, lab: &Path, start: Instant) -> io::Result<LabEvents> {
        let inotify = Inotify::init()?;
        let mut tree = WatchTree {
            host_root,
            watches: inotify.watches(),
            dirs: HashMap::new(),
        };
        tree.add_recursive(lab)?;
        let stream = inotify.into_event_stream(vec![0u8; 64 * 1024])?;
        let (sender, receiver) = mpsc::channel(CHANNEL_CAPACITY);
        let health = Arc::new(Health::default());
        let close = Arc::new(Notify::new());
        tokio::spawn(pump(
            stream,
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

    /// A handle the sandbox uses to end the stream at teardown.
    pub(crate) fn closer(&self) -> Arc<Notify> {
        Arc::clone(&self.close)
    }
}

struct WatchTree {
    host_root: PathBuf,
    watches: Watches,
    dirs: HashMap<WatchDescriptor, PathBuf>,
}

impl WatchTree {
    /// Watches `view` and every directory below it; returns what was already inside, which
    /// no event will report for a directory that was just created.
    fn add_recursive(&mut self, view: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
        let host = self.host_root.join(view.strip_prefix("/").unwrap_or(view));
        let wd = self.watches.add(&host, dir_mask())?;
        self.dirs.insert(wd, view.to_path_buf());
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&host)? {
            let entry = entry?;
            let path = view.join(entry.file_name());
            let is_dir = entry.file_type()?.is_dir();
            found.push((path.clone(), is_dir));
            if is_dir {
                found.extend(self.add_recursive(&path)?);
            }
        }
        Ok(found)
    }
}

async fn pump(
    mut stream: inotify::EventStream<Vec<u8>>,
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
            found = tree.add_recursive(&path).unwrap_or_default();
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
        let mut events =
            LabEvents::start(host.path().to_path_buf(), Path::new("/lab"), Instant::now()).unwrap();
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
