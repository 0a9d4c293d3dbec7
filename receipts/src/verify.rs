//! `verify` (the whole directory, strictly) and `recover` (the longest good prefix,
//! and where a crashed campaign resumes).

use std::fmt;
use std::path::Path;

use ed25519_dalek::VerifyingKey;

use crate::chain::{Chain, VerifyError};
use crate::digest::Digest;
use crate::reader::{Entry, ReceiptLog};
use crate::seal::SignatureStatus;

/// What `verify` should insist on beyond the chain itself.
#[derive(Clone, Debug, Default)]
pub struct VerifyOptions {
    /// The seal must be signed by this key.
    pub trusted_key: Option<VerifyingKey>,
    /// A log without a seal is an error rather than an unsealed success.
    pub require_seal: bool,
}

/// What a successful verification checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyReport {
    /// Records checked, the seal included.
    pub records: u64,
    /// Runs opened and closed.
    pub runs: u64,
    /// A run opened and not closed (only in an unsealed log).
    pub open_run: Option<String>,
    /// Distinct blobs re-hashed.
    pub blobs: u64,
    pub blob_bytes: u64,
    /// Bytes of the log covered.
    pub log_bytes: u64,
    /// Hash of the last record.
    pub head: Digest,
    /// The seal's signature check; `None` when the log is not sealed.
    pub seal: Option<SignatureStatus>,
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} records, {} runs, {} blobs ({} bytes), head {}, ",
            self.records, self.runs, self.blobs, self.blob_bytes, self.head
        )?;
        match &self.seal {
            None => f.write_str("not sealed"),
            Some(SignatureStatus::Unsigned) => f.write_str("sealed, unsigned"),
            Some(SignatureStatus::SelfConsistent { public_key }) => {
                write!(
                    f,
                    "sealed, signed by embedded key {public_key} (not vouched for)"
                )
            }
            Some(SignatureStatus::Trusted { public_key }) => {
                write!(f, "sealed, signed by trusted key {public_key}")
            }
        }
    }
}

/// Recomputes the chain and every referenced blob of the receipt directory `dir`
/// and checks the seal; returns the first bad record, or counts on success.
///
/// A torn last line is an error here; [`recover`] is the lenient reading.
pub fn verify(dir: impl AsRef<Path>, options: &VerifyOptions) -> Result<VerifyReport, VerifyError> {
    verify_each(dir, options, |_| ())
}

/// [`verify`], handing each record to `visit` once it is checked, in log order: one
/// pass for readers that build something from a log they must trust.
///
/// `visit` sees only records that passed; after an error it is called no more, so what
/// it built covers a good prefix and must be dropped when this returns an error.
pub fn verify_each(
    dir: impl AsRef<Path>,
    options: &VerifyOptions,
    mut visit: impl FnMut(Entry),
) -> Result<VerifyReport, VerifyError> {
    let log = ReceiptLog::open(dir)?;
    let mut chain = Chain::new(log.blobs(), options.trusted_key.as_ref());
    for entry in log.entries()? {
        let entry = entry?;
        chain.push(&entry)?;
        visit(entry);
    }
    if options.require_seal && chain.seal.is_none() {
        return Err(VerifyError::NotSealed {
            records: chain.next_seq,
        });
    }
    Ok(report(&chain))
}

/// Where a crashed campaign resumes: just past the last record at which no run
/// was open. Everything after `offset` is discarded on resume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResumePoint {
    pub offset: u64,
    pub next_seq: u64,
    pub head: Digest,
}

/// The longest verified prefix of a log and what stopped the reading, if anything.
#[derive(Debug)]
pub struct Recovery {
    /// What the verified prefix holds.
    pub prefix: VerifyReport,
    /// The first problem after the prefix: a torn tail after a crash, or a defect.
    pub problem: Option<VerifyError>,
    pub resume: ResumePoint,
    /// Runs closed within the prefix, in order: a resumed campaign skips them.
    pub completed_runs: Vec<String>,
}

impl Recovery {
    /// True when nothing but a torn last line (or nothing at all) follows the prefix.
    pub fn is_crash_tail(&self) -> bool {
        self.problem.as_ref().is_none_or(VerifyError::is_torn_tail)
    }
}

/// Verifies as much of `dir` as holds, and reports the rest instead of failing on it.
///
/// Fails only when not even the first record can be read (not a receipt log,
/// unknown version, i/o).
pub fn recover(dir: impl AsRef<Path>) -> Result<Recovery, VerifyError> {
    let log = ReceiptLog::open(dir)?;
    let mut chain = Chain::new(log.blobs(), None);
    let mut problem = None;
    for entry in log.entries()? {
        let pushed = entry
            .map_err(VerifyError::from)
            .and_then(|entry| chain.push(&entry));
        if let Err(error) = pushed {
            problem = Some(error);
            break;
        }
    }
    match problem {
        Some(error) if chain.next_seq == 0 => Err(error),
        problem => {
            let (offset, next_seq, head) = chain.quiet;
            let resume = ResumePoint {
                offset,
                next_seq,
                head,
            };
            let completed_runs = chain.completed_runs.clone();
            Ok(Recovery {
                prefix: report(&chain),
                problem,
                resume,
                completed_runs,
            })
        }
    }
}

fn report(chain: &Chain<'_>) -> VerifyReport {
    VerifyReport {
        records: chain.next_seq,
        runs: chain.completed_runs.len() as u64,
        open_run: chain.open_run.clone(),
        blobs: chain.blobs_checked(),
        blob_bytes: chain.blob_bytes,
        log_bytes: chain.end,
        head: chain.head,
        seal: chain.seal.clone(),
    }
}
