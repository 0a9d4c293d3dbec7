//! What a run is asked to do: the planned calls and why each is made, the planted files
//! the arguments name, and why a retry's arguments differ from the plan's.

use serde_json::{Map, Value};

/// One file of the resource kit.
#[derive(Debug)]
pub struct KitFile {
    pub name: &'static str,
    pub bytes: &'static [u8],
    /// The words a field's name or description uses for it (its extension first).
    pub asks: &'static [&'static str],
    /// What is inside it by name, by the word a field uses for it: a workbook's sheet
    /// (`sheet` → `Sheet1`) and cells (`range` → `A1:B2`), a database's table (`table` →
    /// `items`).
    pub parts: &'static [(&'static str, &'static str)],
    /// Products a server may be named after that work on this kind (`office-word-mcp` →
    /// `word`): read in the server's topic only, where a tool's own `word_count` is no
    /// document.
    pub brands: &'static [&'static str],
}

/// Files the lab holds for read tools, as the server sees them.
#[derive(Debug, Clone)]
pub struct Plants {
    /// The planted note, relative to the server's working directory.
    pub note_relative: String,
    /// The planted note, absolute.
    pub note_absolute: String,
    /// A never-existing path, unique to this probe.
    pub nonce_path: String,
    /// A token that must never come back (planted nowhere else).
    pub canary: String,
    /// Paths that leave the contract's declared scope (`..`, absolute, through the symlink
    /// trap); empty when the contract declares no scope.
    pub escapes: Vec<String>,
    /// The planted git repository (relative, absolute), when the lab has one.
    pub repository: Option<(String, String)>,
    /// The resource kit's directory (relative, absolute) and its files with the words that
    /// ask for each.
    pub kit: Option<((String, String), &'static [KitFile])>,
    /// Words that say what the whole server works on (its names: `excel-mcp-server` →
    /// `excel`): a path field that names no kind of file takes the kit's file of this kind.
    pub topic: Vec<String>,
}

impl Plants {
    /// The protocol witness's two nonce paths for the `ordinal`-th tool of the probe: the
    /// negative control's and the flip's, never used by any other call of the probe.
    pub fn witness_paths(&self, ordinal: usize) -> (String, String) {
        let stem = self
            .nonce_path
            .strip_suffix(".md")
            .unwrap_or(&self.nonce_path);
        (
            format!("{stem}-{ordinal}a.md"),
            format!("{stem}-{ordinal}b.md"),
        )
    }
}

/// One call the probe will make.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlannedCall {
    pub tool: String,
    pub arguments: Map<String, Value>,
    /// This call repeats the plan's call at this position with identical arguments.
    pub repeat_of: Option<usize>,
    /// A repeat whose states are graded (its tool's contract restricts `idempotent`): the
    /// run waits for quiet before it, so the state it finds holds the first call's delayed
    /// writes, and after it, so the state it leaves is whole. A repeat made only so that
    /// its tool is called twice needs neither wait: what either call did is its tool's,
    /// and the block's own wait for quiet follows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub judged: bool,
    /// What the call is for: the ordinary plan or a step of the protocol witness.
    pub purpose: Purpose,
}

/// Why a call is made. The witness's two identical flip reads are not `repeat_of` each
/// other: `idempotent` grades repeats, and the witness is a write witness, not a clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// A call of the ordinary plan.
    #[default]
    Normal,
    /// The protocol witness's negative control: a nonce path read once, must read absent.
    NegativeControl,
    /// The first read of the flip's nonce path.
    FlipFirst,
    /// The second, byte-identical read of the flip's nonce path.
    FlipSecond,
    /// A producer tool's call made first in another tool's run, so that the state it makes
    /// (an entity, a branch) is there for that tool's calls; its effects are its own.
    Setup,
    /// A contingent call, one per tool ([`retry_slot`]): made only when an earlier call of
    /// the tool in its run was refused with an error that says what it wanted, with the
    /// arguments that error asks for (`revise`); absent from the receipts otherwise.
    Retry,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Normal => "normal",
            Purpose::NegativeControl => "negative_control",
            Purpose::FlipFirst => "flip_first",
            Purpose::FlipSecond => "flip_second",
            Purpose::Setup => "setup",
            Purpose::Retry => "retry",
        }
    }
}

/// Why a retry's arguments are what they are: the refused call it revises, the rule that
/// read its error, and the argument it changed (a JSON pointer into the arguments).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Revised {
    /// The index of the refused call.
    pub(crate) from: usize,
    /// The rule that read its error (`file_kind`, `missing_file`, …, [`RULES`]).
    pub(crate) rule: String,
    /// The argument changed, as a JSON pointer (`/edits/0/oldText`).
    pub(crate) argument: String,
}
