//! `ReceiptWriter`: appends records to a receipt directory, buffered, and makes
//! them durable at run boundaries.

use std::collections::{BTreeSet, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use ed25519_dalek::SigningKey;

use crate::blob::{BlobError, BlobStore};
use crate::body::{CampaignStart, Seal};
use crate::chain::VerifyError;
use crate::digest::Digest;
use crate::payload::{BlobRef, Payload, Stored};
use crate::reader::{LOG_FILE, PACKED_LOG_FILE};
use crate::record::{Body, FORMAT_VERSION, Record};
use crate::seal::make_seal;
use crate::verify::{Recovery, recover};

/// Why a record or blob could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{path}: i/o error")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} already exists; resume it or choose another directory")]
    Exists { path: PathBuf },
    #[error(transparent)]
    Blob(#[from] BlobError),
    #[error("blob of {len} bytes exceeds the per-blob cap of {cap}")]
    BlobCap { len: u64, cap: u64 },
    #[error("blob of {len} bytes exceeds the {left} bytes left of this run's budget")]
    RunBudget { len: u64, left: u64 },
    #[error("record {seq}: {detail}")]
    Refused { seq: u64, detail: String },
    #[error("an earlier write failed; reopen the directory with ReceiptWriter::resume")]
    Poisoned,
    #[error("{path} is sealed; a sealed log is never extended")]
    Sealed { path: PathBuf },
    #[error("{path} cannot be resumed: its chain is broken before the tail")]
    Broken {
        path: PathBuf,
        #[source]
        source: Box<VerifyError>,
    },
}

/// Caps on what payloads may store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Payloads up to this many bytes are kept inline in the record.
    pub inline_max: usize,
    /// Largest single blob; longer payloads keep only their prefix.
    pub blob_max: u64,
    /// Blob bytes one run may add; past it payloads keep nothing.
    pub run_blob_max: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            inline_max: 4 << 10,
            blob_max: 16 << 20,
            run_blob_max: 256 << 20,
        }
    }
}

/// Where record timestamps come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Clock {
    /// The system clock.
    #[default]
    System,
    /// `start + step × seq`: reproducible logs for tests and golden chains.
    Fixed { start: u64, step: u64 },
}

/// How a writer stores and stamps records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterOptions {
    pub limits: Limits,
    pub clock: Clock,
}

/// Appends records to `<dir>/receipts.jsonl` and blobs to `<dir>/blobs/`.
///
/// Records are buffered; `run_end`, `contract`, `plan`, `member` and `campaign_start`
/// records, the seal and [`ReceiptWriter::sync`] flush and fsync the blobs, then the log.
#[derive(Debug)]
pub struct ReceiptWriter {
    path: PathBuf,
    file: BufWriter<File>,
    blobs: BlobStore,
    options: WriterOptions,
    seq: u64,
    head: Digest,
    open_run: Option<String>,
    run_ids: HashSet<String>,
    run_blob_bytes: u64,
    unsynced_blobs: Vec<PathBuf>,
    line: Vec<u8>,
    poisoned: bool,
    /// Byte strings never written ([`ReceiptWriter::redact`]): each form a secret takes in
    /// a record, and the mask of the same length that replaces it.
    redactions: Vec<(Vec<u8>, Vec<u8>)>,
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> WriteError + use<> {
    let path = path.to_path_buf();
    move |source| WriteError::Io { path, source }
}

impl ReceiptWriter {
    /// Creates a new receipt directory whose first record is `start`.
    pub fn create(
        dir: impl AsRef<Path>,
        options: WriterOptions,
        start: CampaignStart,
    ) -> Result<ReceiptWriter, WriteError> {
        let dir = dir.as_ref();
        fs::create_dir_all(dir).map_err(io_error(dir))?;
        let path = dir.join(LOG_FILE);
        let packed = dir.join(PACKED_LOG_FILE);
        if packed.exists() {
            return Err(WriteError::Exists { path: packed });
        }
        let file = match OpenOptions::new().append(true).create_new(true).open(&path) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(WriteError::Exists { path });
            }
            opened => opened.map_err(io_error(&path))?,
        };
        let mut writer = ReceiptWriter::new(dir, path, file, options, 0, Digest::ZERO);
        writer.append(Body::CampaignStart(start))?;
        sync_dir(dir)?;
        Ok(writer)
    }

    /// Reopens an unsealed receipt directory after a crash: verifies it, cuts it back
    /// to the last point at which no run was open, and continues from there.
    pub fn resume(
        dir: impl AsRef<Path>,
        options: WriterOptions,
    ) -> Result<(ReceiptWriter, Recovery), WriteError> {
        let dir = dir.as_ref();
        let path = dir.join(LOG_FILE);
        let broken = |e: VerifyError| WriteError::Broken {
            path: path.clone(),
            source: Box::new(e),
        };
        let mut recovery = recover(dir).map_err(broken)?;
        if recovery.prefix.seal.is_some() {
            return Err(WriteError::Sealed { path });
        }
        if let Some(problem) = recovery.problem.take_if(|p| !p.is_torn_tail()) {
            return Err(broken(problem));
        }
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io_error(&path))?;
        file.set_len(recovery.resume.offset)
            .map_err(io_error(&path))?;
        file.sync_all().map_err(io_error(&path))?;
        let (seq, head) = (recovery.resume.next_seq, recovery.resume.head);
        let mut writer = ReceiptWriter::new(dir, path, file, options, seq, head);
        writer.run_ids = recovery.completed_runs.iter().cloned().collect();
        Ok((writer, recovery))
    }

    fn new(
        dir: &Path,
        path: PathBuf,
        file: File,
        options: WriterOptions,
        seq: u64,
        head: Digest,
    ) -> ReceiptWriter {
        ReceiptWriter {
            path,
            file: BufWriter::with_capacity(64 << 10, file),
            blobs: BlobStore::new(dir),
            options,
            seq,
            head,
            open_run: None,
            run_ids: HashSet::new(),
            run_blob_bytes: 0,
            unsynced_blobs: Vec::new(),
            line: Vec::with_capacity(1024),
            poisoned: false,
            redactions: Vec::new(),
        }
    }

    /// Never writes `secret` from now on (credentials a user gave for a server, which the
    /// server may echo): in every later record — as it is, as it reads inside a JSON
    /// string, and as hex (a payload that is not UTF-8) — and in every blob, it is replaced
    /// by as many `*` as it has bytes (in hex, `2a`s), so every payload keeps its length and
    /// the log its canonical form. Secrets shorter than [`REDACT_MIN`] bytes are refused (false): masking them
    /// would mask ordinary text.
    pub fn redact(&mut self, secret: &[u8]) -> bool {
        if secret.len() < REDACT_MIN {
            return false;
        }
        let hex: Vec<u8> = secret
            .iter()
            .flat_map(|b| format!("{b:02x}").into_bytes())
            .collect();
        let escaped = serde_json::to_string(&String::from_utf8_lossy(secret))
            .map(|s| s.as_bytes()[1..s.len() - 1].to_vec())
            .unwrap_or_default();
        // Each mask decodes to as many bytes as the secret has: a payload keeps its length.
        let stars = vec![b'*'; secret.len()];
        for (form, mask) in [
            (secret.to_vec(), stars.clone()),
            (escaped, stars),
            (hex, b"2a".repeat(secret.len())),
        ] {
            if form.is_empty() || self.redactions.iter().any(|(f, _)| *f == form) {
                continue;
            }
            self.redactions.push((form, mask));
        }
        true
    }

    /// `bytes` with every redacted form masked (a mask may be shorter than its form: an
    /// escaped secret's mask is as long as the secret).
    fn masked(&self, bytes: &mut Vec<u8>) {
        for (form, mask) in &self.redactions {
            let mut at = 0;
            while let Some(found) = find(&bytes[at..], form) {
                let start = at + found;
                bytes.splice(start..start + form.len(), mask.iter().copied());
                at = start + mask.len();
            }
        }
    }

    /// Hash of the last record written.
    pub fn head(&self) -> Digest {
        self.head
    }

    /// Sequence number the next record will get.
    pub fn next_seq(&self) -> u64 {
        self.seq
    }

    /// The run currently open, if any.
    pub fn open_run(&self) -> Option<&str> {
        self.open_run.as_deref()
    }

    /// Appends one record and returns its hash. Run starts and ends are checked
    /// for pairing; a run end makes everything before it durable.
    pub fn append(&mut self, body: Body) -> Result<Digest, WriteError> {
        let seq = self.seq;
        let refuse = |detail: String| WriteError::Refused { seq, detail };
        if let Some(detail) = body.defect() {
            return Err(refuse(detail));
        }
        match (&body, &self.open_run) {
            (Body::CampaignStart(_), _) if seq > 0 => {
                return Err(refuse("campaign_start after the first record".into()));
            }
            (Body::Seal(_), _) => {
                return Err(refuse("a seal is written by ReceiptWriter::seal".into()));
            }
            (Body::RunStart(start), Some(open)) => {
                return Err(refuse(format!(
                    "run {:?} starts while {open:?} is open",
                    start.run_id
                )));
            }
            (Body::RunStart(start), None) if self.run_ids.contains(&start.run_id) => {
                return Err(refuse(format!("run id {:?} is used twice", start.run_id)));
            }
            (Body::RunEnd(end), open) if open.as_deref() != Some(end.run_id.as_str()) => {
                return Err(refuse(format!(
                    "run_end for {:?}, which is not open",
                    end.run_id
                )));
            }
            _ => {}
        }
        let ts = self.now();
        let (hash, body) = self.write_record(ts, body)?;
        match body {
            Body::RunStart(start) => {
                self.run_ids.insert(start.run_id.clone());
                self.open_run = Some(start.run_id);
                self.run_blob_bytes = 0;
            }
            Body::RunEnd(_) => {
                self.open_run = None;
                self.sync()?;
            }
            // Pre-registration (the contract, the plan) is on disk before anything it
            // governs runs, and a member record says a whole probe is done: each must
            // outlive a crash.
            Body::CampaignStart(_) | Body::Contract(_) | Body::Plan(_) | Body::Member(_) => {
                self.sync()?
            }
            _ => {}
        }
        Ok(hash)
    }

    /// Keeps `bytes` as a payload: inline when small, else as a blob, cut to the
    /// per-blob cap and to what is left of the run's budget.
    pub fn payload(&mut self, bytes: &[u8]) -> Result<Payload, WriteError> {
        let limits = self.options.limits;
        if bytes.len() <= limits.inline_max {
            return Ok(Payload::inline(bytes));
        }
        let len = bytes.len() as u64;
        let left = limits.run_blob_max.saturating_sub(self.run_blob_bytes);
        let keep = len.min(limits.blob_max).min(left);
        if keep == 0 {
            return Ok(Payload {
                len,
                stored: Stored::Omitted,
            });
        }
        // keep ≤ len, so the index is in range.
        let blob = self.store(&bytes[..keep as usize])?;
        Ok(Payload {
            len,
            stored: Stored::Blob(blob),
        })
    }

    /// Stores `bytes` whole as a blob, or fails when a cap forbids it.
    pub fn put_blob(&mut self, bytes: &[u8]) -> Result<BlobRef, WriteError> {
        let limits = self.options.limits;
        let len = bytes.len() as u64;
        let left = limits.run_blob_max.saturating_sub(self.run_blob_bytes);
        if len > limits.blob_max {
            return Err(WriteError::BlobCap {
                len,
                cap: limits.blob_max,
            });
        }
        if len > left {
            return Err(WriteError::RunBudget { len, left });
        }
        self.store(bytes)
    }

    fn store(&mut self, bytes: &[u8]) -> Result<BlobRef, WriteError> {
        let masked;
        let bytes = if self.redactions.is_empty() {
            bytes
        } else {
            let mut copy = bytes.to_vec();
            self.masked(&mut copy);
            masked = copy;
            &masked
        };
        let (blob, written) = self.blobs.put(bytes)?;
        if let Some(path) = written {
            self.run_blob_bytes += blob.len;
            self.unsynced_blobs.push(path);
        }
        Ok(blob)
    }

    /// Makes everything written so far durable: blobs first, then the log.
    pub fn sync(&mut self) -> Result<(), WriteError> {
        let mut dirs = BTreeSet::new();
        for path in self.unsynced_blobs.drain(..) {
            File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(io_error(&path))?;
            dirs.extend(path.parent().map(Path::to_path_buf));
        }
        for dir in dirs {
            sync_dir(&dir)?;
        }
        let path = &self.path;
        self.file.flush().map_err(io_error(path))?;
        self.file.get_ref().sync_data().map_err(io_error(path))
    }

    /// Writes the seal over the current head, signed when a key is given, and syncs.
    pub fn seal(mut self, key: Option<&SigningKey>) -> Result<Seal, WriteError> {
        if let Some(open) = &self.open_run {
            let detail = format!("seal while run {open:?} is open");
            return Err(WriteError::Refused {
                seq: self.seq,
                detail,
            });
        }
        let ts = self.now();
        let seal = make_seal(self.head, self.seq, ts, key);
        self.write_record(ts, Body::Seal(seal.clone()))?;
        self.sync()?;
        Ok(seal)
    }

    fn now(&self) -> u64 {
        match self.options.clock {
            Clock::System => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            Clock::Fixed { start, step } => start.saturating_add(step.saturating_mul(self.seq)),
        }
    }

    fn write_record(&mut self, ts: u64, body: Body) -> Result<(Digest, Body), WriteError> {
        if self.poisoned {
            return Err(WriteError::Poisoned);
        }
        let record = Record {
            v: FORMAT_VERSION,
            seq: self.seq,
            prev: self.head,
            ts,
            body,
        };
        record.write_line(&mut self.line);
        if !self.redactions.is_empty() {
            let mut line = std::mem::take(&mut self.line);
            self.masked(&mut line);
            self.line = line;
        }
        let hash = Digest::of(&self.line);
        self.line.push(b'\n');
        // A failed write may leave part of a line behind; only resume can tell what landed.
        self.poisoned = true;
        self.file
            .write_all(&self.line)
            .map_err(io_error(&self.path))?;
        self.poisoned = false;
        self.head = hash;
        self.seq += 1;
        Ok((hash, record.body))
    }
}

/// The shortest secret [`ReceiptWriter::redact`] masks.
pub const REDACT_MIN: usize = 8;

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn sync_dir(dir: &Path) -> Result<(), WriteError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error(dir))
}
