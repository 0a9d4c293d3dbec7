//! The chain check: one record at a time, in order, as the log is read.

use std::collections::HashSet;

use ed25519_dalek::VerifyingKey;

use crate::blob::{BlobError, BlobStore};
use crate::body::Seal;
use crate::digest::Digest;
use crate::reader::{Entry, ReadError};
use crate::record::{Body, Kind};
use crate::seal::{SealError, SignatureStatus, check_seal};

/// A record out of place in a log's structure: runs open and close in turn, each id once,
/// one campaign start, no seal inside a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StructureFault {
    #[error("a second campaign_start")]
    SecondCampaignStart,
    #[error("run {run:?} starts while run {open:?} is open")]
    RunInRun { run: String, open: String },
    #[error("run id {0:?} is used twice")]
    RunIdTwice(String),
    #[error("run_end for {0:?}, which is not open")]
    EndOfUnopened(String),
    #[error("seal while run {0:?} is open")]
    SealInRun(String),
}

/// The first thing wrong with a receipt directory, naming the line (1-based) and
/// record sequence number where it was found.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(
        "line {line}: seq {found} where {expected} was expected (a record was removed, inserted or reordered)"
    )]
    Seq {
        line: u64,
        expected: u64,
        found: u64,
    },
    #[error("line {line} (seq {seq}): prev {found} is not the hash of seq {} ({expected}): that record or this one was altered", seq.saturating_sub(1))]
    Prev {
        line: u64,
        seq: u64,
        expected: Digest,
        found: Digest,
    },
    #[error("line 1: the first record is {kind}, not campaign_start")]
    First { kind: &'static str },
    #[error("line {line} (seq {seq}): {fault}")]
    Structure {
        line: u64,
        seq: u64,
        fault: StructureFault,
    },
    #[error("line {line} (seq {seq}): bad body: {detail}")]
    Body { line: u64, seq: u64, detail: String },
    #[error("line {line} (seq {seq}): referenced blob does not hold")]
    Blob {
        line: u64,
        seq: u64,
        #[source]
        source: BlobError,
    },
    #[error("line {line} (seq {seq}): seal does not hold")]
    Seal {
        line: u64,
        seq: u64,
        #[source]
        source: SealError,
    },
    #[error("line {line} (seq {seq}): record after the seal")]
    AfterSeal { line: u64, seq: u64 },
    #[error("log is not sealed: {records} records and no seal")]
    NotSealed { records: u64 },
}

impl VerifyError {
    /// The 1-based line of the first bad record, when the error is about a line.
    pub fn line(&self) -> Option<u64> {
        match self {
            VerifyError::Read(e) => e.line(),
            VerifyError::First { .. } => Some(1),
            VerifyError::NotSealed { .. } => None,
            VerifyError::Seq { line, .. }
            | VerifyError::Prev { line, .. }
            | VerifyError::Structure { line, .. }
            | VerifyError::Body { line, .. }
            | VerifyError::Blob { line, .. }
            | VerifyError::Seal { line, .. }
            | VerifyError::AfterSeal { line, .. } => Some(*line),
        }
    }

    /// The sequence number written in the first bad record, when it could be read.
    pub fn seq(&self) -> Option<u64> {
        match self {
            VerifyError::Read(_) | VerifyError::NotSealed { .. } => None,
            VerifyError::First { .. } => Some(0),
            VerifyError::Seq { found, .. } => Some(*found),
            VerifyError::Prev { seq, .. }
            | VerifyError::Structure { seq, .. }
            | VerifyError::Body { seq, .. }
            | VerifyError::Blob { seq, .. }
            | VerifyError::Seal { seq, .. }
            | VerifyError::AfterSeal { seq, .. } => Some(*seq),
        }
    }

    /// True for a torn last line: what a crash mid-write leaves, and nothing else.
    pub fn is_torn_tail(&self) -> bool {
        matches!(self, VerifyError::Read(ReadError::TornLine { .. }))
    }
}

/// State carried from one record to the next.
pub(crate) struct Chain<'a> {
    blobs: &'a BlobStore,
    trusted: Option<&'a VerifyingKey>,
    pub(crate) next_seq: u64,
    pub(crate) head: Digest,
    pub(crate) end: u64,
    pub(crate) open_run: Option<String>,
    run_ids: HashSet<String>,
    pub(crate) completed_runs: Vec<String>,
    checked_blobs: HashSet<Digest>,
    pub(crate) blob_bytes: u64,
    pub(crate) seal: Option<SignatureStatus>,
    /// The last point at which no run was open: `(end offset, next seq, head)`.
    pub(crate) quiet: (u64, u64, Digest),
}

impl<'a> Chain<'a> {
    pub(crate) fn new(blobs: &'a BlobStore, trusted: Option<&'a VerifyingKey>) -> Chain<'a> {
        Chain {
            blobs,
            trusted,
            next_seq: 0,
            head: Digest::ZERO,
            end: 0,
            open_run: None,
            run_ids: HashSet::new(),
            completed_runs: Vec::new(),
            checked_blobs: HashSet::new(),
            blob_bytes: 0,
            seal: None,
            quiet: (0, 0, Digest::ZERO),
        }
    }

    pub(crate) fn blobs_checked(&self) -> u64 {
        self.checked_blobs.len() as u64
    }

    /// Checks one entry against everything before it and advances.
    pub(crate) fn push(&mut self, entry: &Entry) -> Result<(), VerifyError> {
        let (line, record) = (entry.line, &entry.record);
        let seq = record.seq;
        if self.seal.is_some() {
            return Err(VerifyError::AfterSeal { line, seq });
        }
        if seq != self.next_seq {
            return Err(VerifyError::Seq {
                line,
                expected: self.next_seq,
                found: seq,
            });
        }
        if record.prev != self.head {
            return Err(VerifyError::Prev {
                line,
                seq,
                expected: self.head,
                found: record.prev,
            });
        }
        if seq == 0 && record.body.kind() != Kind::CampaignStart {
            return Err(VerifyError::First {
                kind: record.body.kind().as_str(),
            });
        }
        if let Some(detail) = record.body.defect() {
            return Err(VerifyError::Body { line, seq, detail });
        }
        self.check_structure(&record.body)
            .map_err(|fault| VerifyError::Structure { line, seq, fault })?;
        for blob in record.body.payloads().into_iter().filter_map(|p| p.blob()) {
            if self.checked_blobs.contains(&blob.blake3) {
                continue;
            }
            self.blobs
                .read(blob)
                .map_err(|source| VerifyError::Blob { line, seq, source })?;
            self.checked_blobs.insert(blob.blake3);
            self.blob_bytes += blob.len;
        }
        if let Body::Seal(seal) = &record.body {
            self.seal = Some(
                self.check_seal(seal, record.ts, seq)
                    .map_err(|source| VerifyError::Seal { line, seq, source })?,
            );
        }
        self.head = entry.hash;
        self.next_seq += 1;
        self.end = entry.end;
        if self.open_run.is_none() && self.seal.is_none() {
            self.quiet = (self.end, self.next_seq, self.head);
        }
        Ok(())
    }

    fn check_seal(&self, seal: &Seal, ts: u64, seq: u64) -> Result<SignatureStatus, SealError> {
        check_seal(seal, ts, self.head, seq, self.trusted)
    }

    fn check_structure(&mut self, body: &Body) -> Result<(), StructureFault> {
        match (body, &self.open_run) {
            (Body::CampaignStart(_), _) if self.next_seq > 0 => {
                Err(StructureFault::SecondCampaignStart)
            }
            (Body::RunStart(start), Some(open)) => Err(StructureFault::RunInRun {
                run: start.run_id.clone(),
                open: open.clone(),
            }),
            (Body::RunStart(start), None) => {
                if !self.run_ids.insert(start.run_id.clone()) {
                    return Err(StructureFault::RunIdTwice(start.run_id.clone()));
                }
                self.open_run = Some(start.run_id.clone());
                Ok(())
            }
            (Body::RunEnd(end), Some(open)) if *open == end.run_id => {
                self.open_run = None;
                self.completed_runs.push(end.run_id.clone());
                Ok(())
            }
            (Body::RunEnd(end), _) => Err(StructureFault::EndOfUnopened(end.run_id.clone())),
            (Body::Seal(_), Some(open)) => Err(StructureFault::SealInRun(open.clone())),
            _ => Ok(()),
        }
    }
}
