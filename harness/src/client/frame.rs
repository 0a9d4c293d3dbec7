//! [`FrameLog`]: the bounded, shared record of every frame a session sees.
//!
//! A frame's bytes past [`SPILL_FROM`] wait in an unlinked temporary file, not in memory,
//! until the log is drained and they are read back one frame at a time ([`Frames`]): a
//! server that writes its whole allowance (64 MiB a session) costs vac disk, not memory.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Which way a frame travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// A line the client wrote to the server's stdin.
    ToServer,
    /// A line read from the server's stdout.
    FromServer,
    /// A chunk read from the server's stderr (not line-aligned).
    Stderr,
}

/// One unit of protocol evidence, exactly as it crossed the pipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Position in the session, shared by all directions; a gap means frames were dropped.
    pub seq: u64,
    pub direction: Direction,
    /// Since the log's epoch: when the line was complete (or the chunk was read).
    pub at: Duration,
    /// The raw bytes, including the terminating `\n` when there was one; a prefix when
    /// `truncated`.
    pub bytes: Vec<u8>,
    /// How many bytes the frame really had. For a truncated line this is the length up to
    /// its newline when vac read that far, otherwise the bytes counted before reading stopped.
    pub len: u64,
    /// `bytes` is shorter than the frame (a line over the line cap, or cut by the total cap
    /// or by shutdown).
    pub truncated: bool,
}

/// Counters for what the log could not keep: nothing is lost without being counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FrameLogStats {
    /// Frames recorded so far (kept or dropped).
    pub frames_seen: u64,
    /// Frames dropped because the log was full.
    pub frames_dropped: u64,
    /// The true lengths of the dropped frames, summed.
    pub bytes_dropped: u64,
    /// Stderr bytes read but not kept, past the session's stderr cap.
    pub stderr_bytes_dropped: u64,
}

/// The bounded frame record a session writes into and its owner drains.
///
/// Cheap to clone: every clone shares one log. The log holds at most `max_frames` frames
/// and `max_bytes` bytes of frame payload until drained; further frames are counted in
/// [`FrameLogStats`] and dropped.
#[derive(Debug, Clone)]
pub struct FrameLog {
    epoch: Instant,
    inner: Arc<Mutex<Inner>>,
}

/// Frames this long or longer wait on disk.
pub(super) const SPILL_FROM: usize = 4096;

#[derive(Debug)]
struct Inner {
    frames: Vec<Held>,
    /// Where spilled bytes go: created at the first long frame, emptied when drained.
    spill: Option<Arc<File>>,
    spilled: u64,
    held_bytes: u64,
    max_frames: usize,
    max_bytes: u64,
    next_seq: u64,
    stats: FrameLogStats,
}

impl Default for FrameLog {
    fn default() -> Self {
        Self::new(Instant::now())
    }
}

impl FrameLog {
    /// Frames held until drained, by default.
    pub const DEFAULT_MAX_FRAMES: usize = 100_000;
    /// Payload bytes held until drained, by default: room for a whole session at the
    /// default caps.
    pub const DEFAULT_MAX_BYTES: u64 = 96 * 1024 * 1024;

    /// A log whose frame times count from `epoch` (share it with the other sensors so their
    /// timestamps line up), with the default caps.
    pub fn new(epoch: Instant) -> Self {
        Self::with_caps(epoch, Self::DEFAULT_MAX_FRAMES, Self::DEFAULT_MAX_BYTES)
    }

    pub fn with_caps(epoch: Instant, max_frames: usize, max_bytes: u64) -> Self {
        let inner = Inner {
            frames: Vec::new(),
            spill: None,
            spilled: 0,
            held_bytes: 0,
            max_frames,
            max_bytes,
            next_seq: 0,
            stats: FrameLogStats::default(),
        };
        Self {
            epoch,
            inner: Arc::new(Mutex::new(inner)),
        }
    }

    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Time since the epoch, the clock every frame is stamped with.
    pub fn elapsed(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Takes every frame held so far, oldest first.
    pub fn drain(&self) -> Vec<Frame> {
        self.take()
            .iter()
            .map(|frame| frame.unwrap_or_else(unreadable))
            .collect()
    }

    /// Takes every frame held so far, to be read back one at a time: what was spilled stays
    /// on disk until then.
    pub fn take(&self) -> Frames {
        let mut inner = self.lock();
        inner.held_bytes = 0;
        inner.spilled = 0;
        Frames {
            held: std::mem::take(&mut inner.frames),
            spill: inner.spill.take(),
        }
    }

    pub fn stats(&self) -> FrameLogStats {
        self.lock().stats
    }

    /// Records a frame stamped `at` (see [`FrameLog::elapsed`]) and returns its sequence
    /// number.
    pub(crate) fn record(
        &self,
        direction: Direction,
        at: Duration,
        bytes: Vec<u8>,
        len: u64,
        truncated: bool,
    ) -> u64 {
        let mut inner = self.lock();
        let seq = inner.next_seq;
        inner.next_seq += 1;
        inner.stats.frames_seen += 1;
        let size = bytes.len() as u64;
        if inner.frames.len() >= inner.max_frames || inner.held_bytes + size > inner.max_bytes {
            inner.stats.frames_dropped += 1;
            inner.stats.bytes_dropped += len;
            return seq;
        }
        inner.held_bytes += size;
        let bytes = match bytes.len() >= SPILL_FROM {
            true => inner.spill_out(bytes),
            false => Payload::Inline(bytes),
        };
        inner.frames.push(Held {
            seq,
            direction,
            at,
            bytes,
            len,
            truncated,
        });
        seq
    }

    pub(crate) fn count_stderr_dropped(&self, bytes: u64) {
        self.lock().stats.stderr_bytes_dropped += bytes;
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the log half-written: every update
        // is a few plain assignments, so the data is still consistent.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Inner {
    /// `bytes` written to the spill file, or kept in memory if the file cannot be had.
    fn spill_out(&mut self, bytes: Vec<u8>) -> Payload {
        if self.spill.is_none() {
            match tempfile::tempfile() {
                Ok(file) => self.spill = Some(Arc::new(file)),
                Err(error) => {
                    tracing::warn!(%error, "no spill file: long frames are held in memory");
                    return Payload::Inline(bytes);
                }
            }
        }
        let file = self.spill.as_ref().expect("created above");
        let offset = self.spilled;
        if let Err(error) = file.write_all_at(&bytes, offset) {
            tracing::warn!(%error, "the spill file failed: a long frame is held in memory");
            return Payload::Inline(bytes);
        }
        self.spilled += bytes.len() as u64;
        Payload::Spilled {
            offset,
            size: bytes.len(),
        }
    }
}

fn unreadable(error: io::Error) -> Frame {
    panic!("vac's own spill file of frames could not be read back: {error}")
}

/// A frame as the log holds it: its bytes in memory or in the spill file.
#[derive(Debug)]
struct Held {
    seq: u64,
    direction: Direction,
    at: Duration,
    bytes: Payload,
    len: u64,
    truncated: bool,
}

#[derive(Debug)]
enum Payload {
    Inline(Vec<u8>),
    Spilled { offset: u64, size: usize },
}

/// The frames a log held when it was taken ([`FrameLog::take`]), oldest first; long ones
/// are read back from disk as they are visited.
#[derive(Debug, Default)]
pub struct Frames {
    held: Vec<Held>,
    spill: Option<Arc<File>>,
}

impl Frames {
    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Each frame with its bytes, read back from disk if they were spilled; an error is
    /// vac's own disk failing, never the server's doing.
    pub fn iter(&self) -> impl Iterator<Item = io::Result<Frame>> + '_ {
        self.held.iter().map(|held| {
            let bytes = match &held.bytes {
                Payload::Inline(bytes) => bytes.clone(),
                Payload::Spilled { offset, size } => {
                    let file = self.spill.as_ref().ok_or_else(|| {
                        io::Error::other("a spilled frame without its spill file")
                    })?;
                    let mut bytes = vec![0; *size];
                    file.read_exact_at(&mut bytes, *offset)?;
                    bytes
                }
            };
            Ok(Frame {
                seq: held.seq,
                direction: held.direction,
                at: held.at,
                bytes,
                len: held.len,
                truncated: held.truncated,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_log_counts_what_it_drops() {
        let log = FrameLog::with_caps(Instant::now(), 2, 10);
        log.record(
            Direction::ToServer,
            Duration::ZERO,
            b"abc\n".to_vec(),
            4,
            false,
        );
        log.record(
            Direction::FromServer,
            Duration::ZERO,
            b"0123456789\n".to_vec(),
            11,
            false,
        );
        log.record(
            Direction::FromServer,
            Duration::ZERO,
            b"de\n".to_vec(),
            3,
            false,
        );
        log.record(Direction::Stderr, Duration::ZERO, b"e".to_vec(), 1, false);
        let frames = log.drain();
        assert_eq!(frames.iter().map(|f| f.seq).collect::<Vec<_>>(), [0, 2]);
        let stats = log.stats();
        assert_eq!(
            (stats.frames_seen, stats.frames_dropped, stats.bytes_dropped),
            (4, 2, 12)
        );
        // Draining frees the room again.
        log.record(Direction::Stderr, Duration::ZERO, b"f".to_vec(), 1, false);
        assert_eq!(log.drain().len(), 1);
    }

    #[test]
    fn long_frames_wait_on_disk_and_come_back_whole() {
        let log = FrameLog::new(Instant::now());
        let record = |direction, bytes: &[u8], truncated| {
            log.record(
                direction,
                Duration::ZERO,
                bytes.to_vec(),
                bytes.len() as u64,
                truncated,
            )
        };
        let long: Vec<u8> = (0..3 * SPILL_FROM).map(|i| (i % 251) as u8).collect();
        record(Direction::FromServer, &long, false);
        record(Direction::ToServer, b"short\n", false);
        record(Direction::FromServer, &long[1..], true);
        let frames = log.take();
        assert!(matches!(
            frames.held[0].bytes,
            Payload::Spilled { offset: 0, .. }
        ));
        assert!(matches!(frames.held[1].bytes, Payload::Inline(_)));
        let back: Vec<Frame> = frames.iter().map(Result::unwrap).collect();
        assert_eq!(back[0].bytes, long);
        assert_eq!(back[1].bytes, b"short\n");
        assert_eq!((&back[2].bytes[..], back[2].truncated), (&long[1..], true));
        // The next frames go to a new spill file, from its start.
        record(Direction::FromServer, &long, false);
        assert_eq!(log.drain()[0].bytes, long);
    }
}
