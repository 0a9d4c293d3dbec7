//! Effect contracts: what each tool of an MCP server may do, and grading what it did.
//!
//! A [`Contract`] is plain data: per tool, per [`Clause`], a [`Rule`] and its basis. It
//! comes from one of two places: [`derive()`] builds it from the tools' annotations
//! ([`ToolDecl`], SPEC §3.6 defaults for absent hints); a contract document written before
//! the run ([`ContractDocument::parse`], format in `CONTRACTS.md`) is resolved against the
//! tools/list and the [`LabPaths`] by [`ContractDocument::resolve`], its rules beating the
//! annotations'. [`Contract::compile`] checks it and builds its patterns into a
//! [`CompiledContract`]. [`grade`] takes that and an [`Observation`] (calls, attributable
//! effects, sensor self-tests, run errors) and returns [`Grades`]: exactly one [`Verdict`]
//! per tool × clause ([`graded_clauses`]), each with the evidence SPEC §3.7 asks for;
//! [`Cell::to_json`] gives the stable SPEC §5 shape.
//!
//! [`detect`] holds the protocol sensor's detectors (canary tokens and instructions in what
//! the model is shown, tools/list drift): the harness runs them on results, and the static
//! analyser of `vac-analysis` on descriptions.
//!
//! The crate does no I/O: no files, no processes, no clock.

pub mod answer;
mod clause;
mod compile;
mod contract;
mod derive;
pub mod detect;
mod document;
pub mod evidence;
mod grade;
mod graded;
mod intent;
mod observation;
mod pattern;
mod places;
mod reason;
mod service;
mod tool;
pub mod touched;
mod verdict;

pub use answer::Answer;
pub use clause::{Clause, UnknownClause};
pub use compile::{CompileError, CompiledContract};
pub use contract::{ClauseRule, Contract, Rule, ServerIdentity, ToolContract};
pub use derive::rests_on;
pub use document::{ContractDocument, ContractError, LabPaths, Location, render, render_intent};
pub use evidence::{Basis, Between, Evidence};
pub use grade::{CompletenessError, GradeError, Grades, grade};
pub use graded::derive;
pub use graded::graded_clauses;
pub use intent::{
    Offers, SERVER_ROW, confined_to, derive_intent, is_server_row, name_words, server_row,
};
pub use observation::{
    Attribution, Call, Effect, EffectClass, Observation, RunError, Sensor, SensorState,
    SensorStatus,
};
pub use pattern::PatternError;
pub use places::{
    ACCOUNT_DATABASE, LOADED_BY_CONVENTION, NEVER_READ, loaded_by_convention, never_read,
    never_read_place, own_environment,
};
pub use reason::{ErrorKind, SkipReason};
pub use service::Service;
pub use tool::{Annotations, ToolDecl};
pub use verdict::{Cell, MAX_EVIDENCE, Verdict};

/// The contract record's name when vac derived the contract: from the annotations alone,
/// and from annotations and intent (the default). Never a file a user wrote: a report
/// that points at a contract's line points at the receipt log instead.
pub const DERIVED_NAMES: [&str; 2] = [
    "derived from annotations",
    "derived from annotations and intent",
];

/// The revision of the rules that derive contracts and grade evidence. Receipts record the
/// revision they were graded under; re-grading them under another one may differ where a
/// rule changed, which `vac verify` reports as such (the hash chain, not the re-grading,
/// is what shows tampering). Bump it with every change that grades recorded evidence
/// differently, and say what changed in the commit. Receipts that record none were graded
/// before revisions were recorded: revision 0.
///
/// - 1: answers judged from the result text; `.env` loaded by convention is profiled;
///   `fs.delete` is removal or truncation; docstring output sections grant nothing; a
///   server's service and own state allowed to its tools (`service.rs`).
/// - 2: the server row grades what the server shows the model outside calls (sampling,
///   elicitation) whatever it offers; a tool whose words confine it to a place gets the
///   escape probes; a refusal that names an argument the tool does not take is retried
///   without it.
/// - 3: the environment of the server's own processes (`/proc/<pid>/environ` of any pid
///   but the sandbox's init) is no never-read place and no read under any file rule
///   (`places::own_environment`).
/// - 4: a server's service includes its vendor's API domains that its name does not spell
///   (`aws` → `*.amazonaws.com`) and a local service's default loopback endpoints
///   (`kubernetes` → `127.0.0.1:8080`; `service.rs` `VENDOR_DOMAINS`, `LOCAL_SERVICES`).
/// - 5: a UI resource's page (MCP Apps, `ui://`) is not read for instructions
///   (`detect::instructions_in_result`).
/// - 6: a host's public suffix is the Public Suffix List's, private section included (a
///   hosting platform's `fly.dev`, `github.io`); a server's name with more than one word is
///   also a host label (`cfpb-complaints-analysis.fly.dev`); a server's own-state places
///   cover the directory itself and the XDG parents made for it (`service.rs`).
/// - 7: `openWorldHint: false` allows the server's service (a closed domain, the MCP
///   specification's meaning) in intent mode, no other host; a tool with no word for
///   reading may read the server's own state (credentials stay forbidden); a name's label
///   is also a state directory's name (`~/.oi-browser`; `intent.rs`, `service.rs`).
/// - 8: a file the server's configuration names (an environment value or a command word
///   that is a path with an extension) is its own state (`Service::files`); `merge` and
///   `customize` are words for writing; `/tmp` is said once in the scratch places; a
///   disclaimer that text is data ("never instructions to the AI") does not address the
///   model (`detect/phrases.rs`).
pub const RULES: u32 = 8;
