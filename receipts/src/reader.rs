//! Reading a receipt directory line by line, hashing each line as read.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::blob::{BlobError, BlobStore};
use crate::digest::Digest;
use crate::payload::{Payload, Stored};
use crate::record::{FORMAT_VERSION, Record, RecordError};

/// File name of the log inside a receipt directory.
pub const LOG_FILE: &str = "receipts.jsonl";

/// File name of a packed log ([`crate::pack`]): the same bytes, zstd-compressed, read in
/// place of [`LOG_FILE`] when that is absent.
pub const PACKED_LOG_FILE: &str = "receipts.jsonl.zst";

/// The longest line a reader accepts. Writers keep large payloads in blobs, so real records
/// are far shorter; the cap bounds the memory a hostile or corrupt file can make a reader use.
pub const MAX_LINE: u64 = 64 << 20;

/// Why a log could not be read as a sequence of records.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: i/o error")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is not a receipt log: it is empty")]
    Empty { path: PathBuf },
    #[error("{path} is not a receipt log: line 1 is not a receipt record")]
    NotAReceiptLog {
        path: PathBuf,
        #[source]
        source: RecordError,
    },
    #[error(
        "{path} line {line}: unknown format version {found} (this reader knows version {FORMAT_VERSION})"
    )]
    UnknownVersion {
        path: PathBuf,
        line: u64,
        found: u64,
    },
    #[error("{path}: its zstd stream does not decode after line {line} (damaged at rest)")]
    Packed {
        path: PathBuf,
        line: u64,
        #[source]
        source: io::Error,
    },
    #[error("{path} line {line}: bad record")]
    Record {
        path: PathBuf,
        line: u64,
        #[source]
        source: RecordError,
    },
    #[error("{path} line {line} (byte {offset}) is longer than {max} bytes: not a receipt record")]
    LineTooLong {
        path: PathBuf,
        line: u64,
        offset: u64,
        max: u64,
    },
    #[error("{path} line {line} (byte {offset}) is torn: {len} bytes without a closing newline")]
    TornLine {
        path: PathBuf,
        line: u64,
        offset: u64,
        len: u64,
    },
}

impl ReadError {
    /// The 1-based line the error is about, if it is about one.
    pub fn line(&self) -> Option<u64> {
        match self {
            ReadError::Io { .. } | ReadError::Empty { .. } | ReadError::Packed { .. } => None,
            ReadError::NotAReceiptLog { .. } => Some(1),
            ReadError::Record { line, .. }
            | ReadError::UnknownVersion { line, .. }
            | ReadError::TornLine { line, .. }
            | ReadError::LineTooLong { line, .. } => Some(*line),
        }
    }
}

/// One complete line of the log, parsed.
#[derive(Clone, Debug)]
pub struct Entry {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// Byte offset just past the line's newline.
    pub end: u64,
    /// blake3 of the line's exact bytes, without the newline.
    pub hash: Digest,
    pub record: Record,
}

/// A receipt directory opened for reading: `receipts.jsonl` (or, packed,
/// `receipts.jsonl.zst`) and `blobs/`.
#[derive(Clone, Debug)]
pub struct ReceiptLog {
    dir: PathBuf,
    blobs: BlobStore,
    packed: bool,
}

/// Whether `dir` holds a receipt log, plain or packed.
pub fn is_receipt_dir(dir: &Path) -> bool {
    dir.join(LOG_FILE).is_file() || dir.join(PACKED_LOG_FILE).is_file()
}

impl ReceiptLog {
    /// Opens the receipt directory `dir`; the log file must exist, plain or packed (the
    /// plain one is read when both are there: packing removes it only once the packed
    /// one is complete).
    pub fn open(dir: impl AsRef<Path>) -> Result<ReceiptLog, ReadError> {
        let dir = dir.as_ref().to_path_buf();
        let path = dir.join(LOG_FILE);
        let packed = match std::fs::metadata(&path) {
            Ok(_) => false,
            Err(e)
                if e.kind() == io::ErrorKind::NotFound && dir.join(PACKED_LOG_FILE).is_file() =>
            {
                true
            }
            Err(source) => return Err(ReadError::Io { path, source }),
        };
        Ok(ReceiptLog {
            blobs: BlobStore::new(&dir),
            dir,
            packed,
        })
    }

    /// Whether the log is packed (zstd at rest).
    pub fn is_packed(&self) -> bool {
        self.packed
    }

    /// The receipt directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log file, plain or packed.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join(if self.packed {
            PACKED_LOG_FILE
        } else {
            LOG_FILE
        })
    }

    /// The blob store beside the log.
    pub fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    /// Iterates over the log's lines. This checks each line's form, not the chain:
    /// use [`crate::verify`] for that.
    pub fn entries(&self) -> Result<Entries, ReadError> {
        let path = self.log_path();
        let file = File::open(&path).map_err(|source| ReadError::Io {
            path: path.clone(),
            source,
        })?;
        let source: Box<dyn Read + Send> = if self.packed {
            let decoder =
                zstd::stream::read::Decoder::new(file).map_err(|source| ReadError::Packed {
                    path: path.clone(),
                    line: 0,
                    source,
                })?;
            Box::new(decoder)
        } else {
            Box::new(file)
        };
        Ok(Entries {
            packed: self.packed,
            reader: BufReader::with_capacity(1 << 20, source),
            path,
            line: 0,
            offset: 0,
            buf: Vec::new(),
            done: false,
        })
    }

    /// The bytes a payload kept, read from its blob when it has one.
    pub fn payload_bytes(&self, payload: &Payload) -> Result<Vec<u8>, BlobError> {
        match &payload.stored {
            Stored::Blob(blob) => self.blobs.read(blob),
            _ => Ok(payload.inline_bytes().unwrap_or_default()),
        }
    }
}

/// Iterator over the entries of a log; stops after the first error.
pub struct Entries {
    reader: BufReader<Box<dyn Read + Send>>,
    packed: bool,
    path: PathBuf,
    line: u64,
    offset: u64,
    buf: Vec<u8>,
    done: bool,
}

impl std::fmt::Debug for Entries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entries")
            .field("path", &self.path)
            .field("line", &self.line)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl Entries {
    fn next_entry(&mut self) -> Result<Option<Entry>, ReadError> {
        self.buf.clear();
        let read = (&mut self.reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|source| match self.packed {
                // A damaged frame or checksum: the bytes at rest are not what was packed.
                true => ReadError::Packed {
                    path: self.path.clone(),
                    line: self.line,
                    source,
                },
                false => ReadError::Io {
                    path: self.path.clone(),
                    source,
                },
            })?;
        let (line, offset) = (self.line + 1, self.offset);
        if read == 0 {
            return match line {
                1 => Err(ReadError::Empty {
                    path: self.path.clone(),
                }),
                _ => Ok(None),
            };
        }
        if read as u64 > MAX_LINE {
            let (path, max) = (self.path.clone(), MAX_LINE);
            return Err(ReadError::LineTooLong {
                path,
                line,
                offset,
                max,
            });
        }
        // The newline is the commit mark: a line without one is torn, however it parses.
        if self.buf.pop() != Some(b'\n') {
            let len = read as u64;
            if line == 1 && !self.buf.starts_with(br#"{"v":"#) {
                let source = RecordError::NoVersion;
                return Err(ReadError::NotAReceiptLog {
                    path: self.path.clone(),
                    source,
                });
            }
            return Err(ReadError::TornLine {
                path: self.path.clone(),
                line,
                offset,
                len,
            });
        }
        let path = || self.path.clone();
        let record = Record::from_line(&self.buf).map_err(|source| match (line, source) {
            (1, source @ (RecordError::NotARecord(_) | RecordError::NoVersion)) => {
                ReadError::NotAReceiptLog {
                    path: path(),
                    source,
                }
            }
            (_, RecordError::UnknownVersion { found }) => ReadError::UnknownVersion {
                path: path(),
                line,
                found,
            },
            (_, source) => ReadError::Record {
                path: path(),
                line,
                source,
            },
        })?;
        self.line = line;
        self.offset += read as u64;
        let hash = Digest::of(&self.buf);
        Ok(Some(Entry {
            line,
            offset,
            end: self.offset,
            hash,
            record,
        }))
    }
}

impl Iterator for Entries {
    type Item = Result<Entry, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_entry().transpose();
        self.done = !matches!(item, Some(Ok(_)));
        item
    }
}
