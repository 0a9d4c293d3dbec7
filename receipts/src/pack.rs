//! Packing: a sealed receipt directory compressed at rest (zstd), read in place by every
//! reader ([`crate::ReceiptLog`], [`crate::BlobStore`]) with the same bytes and hashes.
//!
//! `receipts.jsonl` becomes `receipts.jsonl.zst` and each blob `<hash>` becomes
//! `<hash>.zst`: one zstd frame each, with its content checksum, of exactly the bytes that
//! were there. Nothing in the chain changes: record hashes are over the uncompressed lines
//! and blob names over the uncompressed bytes, so a packed directory verifies as the plain
//! one did, and `zstd -d` gives back the plain files byte for byte. Only a sealed log is
//! packed (an unsealed one may still be resumed, which appends). Every file is written
//! beside, synced and renamed before its plain form is removed, so a crash leaves each
//! file plain, packed or both (readers take the plain one), and packing again finishes.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::reader::{LOG_FILE, PACKED_LOG_FILE, ReadError};
use crate::record::{Body, Record};

/// The zstd level packing uses: most of level 19's ratio on receipt logs at a few times
/// its speed.
pub const PACK_LEVEL: i32 = 9;

/// Why a directory could not be packed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("{path}: i/o error")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is not sealed: only a finished log is packed (an unsealed one may be resumed)")]
    NotSealed { path: PathBuf },
    #[error("{dir} holds no receipt log")]
    NoLog { dir: PathBuf },
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// What packing a directory did: bytes before and after, for the log and the blobs it
/// packed now (files packed before are not counted again).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packed {
    pub log_bytes: u64,
    pub packed_log_bytes: u64,
    pub blobs: u64,
    pub blob_bytes: u64,
    pub packed_blob_bytes: u64,
}

impl std::ops::AddAssign for Packed {
    fn add_assign(&mut self, other: Packed) {
        self.log_bytes += other.log_bytes;
        self.packed_log_bytes += other.packed_log_bytes;
        self.blobs += other.blobs;
        self.blob_bytes += other.blob_bytes;
        self.packed_blob_bytes += other.packed_blob_bytes;
    }
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> PackError + use<> {
    let path = path.to_path_buf();
    move |source| PackError::Io { path, source }
}

/// Packs the sealed receipt directory `dir` in place (see the module); a directory already
/// packed is left as it is. Returns what it packed.
pub fn pack(dir: &Path) -> Result<Packed, PackError> {
    let plain = dir.join(LOG_FILE);
    let unpacked = plain.is_file();
    if !unpacked && !dir.join(PACKED_LOG_FILE).is_file() {
        return Err(PackError::NoLog {
            dir: dir.to_path_buf(),
        });
    }
    if unpacked && !ends_sealed(&plain)? {
        return Err(PackError::NotSealed { path: plain });
    }
    // Blobs first: while the plain log is there, the directory is still "unpacked".
    let mut packed = pack_blobs(&dir.join("blobs"))?;
    if unpacked {
        (packed.log_bytes, packed.packed_log_bytes) = compress(&plain, &dir.join(PACKED_LOG_FILE))?;
    }
    Ok(packed)
}

/// Whether the log's last line is a whole seal record (read from the file's end: the
/// seal is short, so the last 64 KiB hold it).
fn ends_sealed(path: &Path) -> Result<bool, PackError> {
    let mut file = File::open(path).map_err(io_error(path))?;
    let len = file.metadata().map_err(io_error(path))?.len();
    let start = len.saturating_sub(64 << 10);
    file.seek(SeekFrom::Start(start)).map_err(io_error(path))?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).map_err(io_error(path))?;
    let Some(body) = tail.strip_suffix(b"\n") else {
        return Ok(false);
    };
    let last = body.rsplit(|b| *b == b'\n').next().unwrap_or(body);
    Ok(matches!(
        Record::from_line(last),
        Ok(Record {
            body: Body::Seal(_),
            ..
        })
    ))
}

/// Writes `from` compressed to `to` (beside, synced, renamed), then removes `from`.
fn compress(from: &Path, to: &Path) -> Result<(u64, u64), PackError> {
    let mut tmp = to.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut input = File::open(from).map_err(io_error(from))?;
    let output = File::create(&tmp).map_err(io_error(&tmp))?;
    let mut encoder =
        zstd::stream::write::Encoder::new(output, PACK_LEVEL).map_err(io_error(&tmp))?;
    encoder.include_checksum(true).map_err(io_error(&tmp))?;
    let before = io::copy(&mut input, &mut encoder).map_err(io_error(&tmp))?;
    let output = encoder.finish().map_err(io_error(&tmp))?;
    output.sync_all().map_err(io_error(&tmp))?;
    let after = output.metadata().map_err(io_error(&tmp))?.len();
    fs::rename(&tmp, to).map_err(io_error(to))?;
    let dir = to.parent().unwrap_or(Path::new("."));
    sync_dir(dir)?;
    fs::remove_file(from).map_err(io_error(from))?;
    sync_dir(dir)?;
    Ok((before, after))
}

/// Packs every plain blob under `blobs/` (named by 64 hex digits; a writer's temporary
/// files are left alone).
fn pack_blobs(root: &Path) -> Result<Packed, PackError> {
    let mut packed = Packed::default();
    let shards = match fs::read_dir(root) {
        Ok(shards) => shards,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(packed),
        Err(source) => {
            return Err(PackError::Io {
                path: root.to_path_buf(),
                source,
            });
        }
    };
    let mut shard_dirs: Vec<PathBuf> = shards
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io_error(root))?;
    shard_dirs.sort();
    for shard in shard_dirs.into_iter().filter(|p| p.is_dir()) {
        let mut names: Vec<PathBuf> = fs::read_dir(&shard)
            .map_err(io_error(&shard))?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(io_error(&shard))?;
        names.sort();
        for blob in names {
            let is_plain_blob = blob
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.len() == 64 && n.bytes().all(|b| b.is_ascii_hexdigit()));
            if !is_plain_blob {
                continue;
            }
            let mut to = blob.as_os_str().to_owned();
            to.push(".zst");
            let (before, after) = compress(&blob, Path::new(&to))?;
            packed.blobs += 1;
            packed.blob_bytes += before;
            packed.packed_blob_bytes += after;
        }
    }
    Ok(packed)
}

fn sync_dir(dir: &Path) -> Result<(), PackError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error(dir))
}
