//! Receipts: the append-only, hash-chained evidence log of a vac campaign, which
//! anyone can check without a key.
//!
//! A receipt directory holds `receipts.jsonl` and `blobs/`; [`pack`] compresses a sealed
//! one at rest (`receipts.jsonl.zst`, `blobs/…/<hash>.zst`), which every reader reads in place. [`ReceiptWriter`]
//! appends typed [`Record`]s (each a [`Body`]: campaign start, contract, run
//! start/end, sandbox config, plan, frame, event, self-test, effect, verdict) and closes the log
//! with a [`Seal`], optionally signed with ed25519. [`ReceiptLog`] reads it back;
//! [`verify`] recomputes the chain and every referenced blob and checks the seal,
//! naming the first bad record in a [`VerifyError`]; [`recover`] returns the longest
//! good prefix of a crashed log and where [`ReceiptWriter::resume`] continues.
//!
//! # Canonical form (format version 1)
//!
//! Each record is one line: a JSON object with exactly the fields `v`, `seq`,
//! `prev`, `ts`, `kind`, `body`, in that order, as `serde_json` writes them
//! compactly (no whitespace, struct fields in declaration order, digests as 64
//! lowercase hex digits), followed by `\n`. The hash of a record is blake3 over the
//! line's exact bytes without the newline; `prev` is the hash of the previous line,
//! and 64 zeros for the first. Readers hash the bytes as read and never re-serialise
//! to hash; they do re-serialise to check that the line is canonical, so each record
//! has exactly one valid spelling. A line without its newline is torn. Payloads
//! larger than an inline cap live in `blobs/<2 hex>/<64 hex>`, named by blake3.
//! `FORMAT.md` beside this crate gives every field.

mod blob;
mod body;
mod chain;
mod digest;
mod json;
mod pack;
mod payload;
mod reader;
mod record;
mod seal;
mod verify;
mod writer;

pub use blob::{BlobError, BlobStore};
pub use body::{
    CampaignStart, Contract, Direction, Effect, Event, Frame, Host, Member, Plan, Role, RunEnd,
    RunStart, RunStatus, SandboxConfig, Seal, SelfTest, SensorStatus, Verdict, VerdictKind,
};
pub use chain::{StructureFault, VerifyError};
pub use digest::Digest;
pub use json::{Json, is_canonical};
pub use pack::{PACK_LEVEL, PackError, Packed, pack};
pub use payload::{BlobRef, Payload, Stored};
pub use reader::{
    Entries, Entry, LOG_FILE, MAX_LINE, PACKED_LOG_FILE, ReadError, ReceiptLog, is_receipt_dir,
};
pub use record::{Body, FORMAT_VERSION, Kind, Record, RecordError};
pub use seal::{SealError, SignatureStatus, seal_message};
pub use verify::{
    Recovery, ResumePoint, VerifyOptions, VerifyReport, recover, verify, verify_each,
};
pub use writer::{Clock, Limits, REDACT_MIN, ReceiptWriter, WriteError, WriterOptions};

/// The ed25519 key types a seal is signed and checked with.
pub use ed25519_dalek::{SigningKey, VerifyingKey};
