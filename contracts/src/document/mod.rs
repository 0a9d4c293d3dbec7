//! Contract documents: the TOML a researcher writes before the run (`CONTRACTS.md`).
//!
//! [`ContractDocument::parse`] reads the text (no I/O: the caller reads the file) and
//! checks its shape; [`ContractDocument::resolve`] merges it with the server's tools/list
//! and the lab's paths into a [`Contract`](crate::Contract), which compiles like a
//! derived one. Every error carries `file:line:column` ([`Location`]).

mod error;
mod parse;
mod render;
mod resolve;
mod value;

pub use error::{ContractError, Location};
pub use render::{render, render_intent};
pub use resolve::LabPaths;

use crate::clause::Clause;
use crate::contract::ServerIdentity;

/// A parsed contract document: shape checked, positions kept, not yet tied to a server's
/// tools or a lab.
#[derive(Debug, Clone, PartialEq)]
pub struct ContractDocument {
    source: String,
    server: ServerIdentity,
    scope: Option<Located<Vec<Located<String>>>>,
    from_annotations: Located<bool>,
    call_destructive: Option<Located<bool>>,
    tools: Vec<DocTool>,
}

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Located<T> {
    pub(crate) value: T,
    pub(crate) at: Location,
}

/// One `[tools.NAME]` table, keys in document order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DocTool {
    pub(crate) name: Located<String>,
    pub(crate) call: Option<Located<bool>>,
    pub(crate) clauses: Vec<DocClause>,
}

/// One clause as written; `at` is the key's position (the rule's basis).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DocClause {
    pub(crate) clause: Clause,
    pub(crate) at: Location,
    pub(crate) rule: DocRule,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DocRule {
    /// `"any"` or `false`: nothing promised.
    Any,
    /// `"scope"` (fs.read only): the declared scope.
    Scope,
    /// Allowed patterns, placeholders unresolved.
    Patterns(Vec<Located<String>>),
    /// `true` for an on/off clause: nothing allowed.
    On,
}

impl ContractDocument {
    /// The document's name as given to [`ContractDocument::parse`].
    pub fn source_name(&self) -> &str {
        &self.source
    }

    /// The server the document is written for.
    pub fn server(&self) -> &ServerIdentity {
        &self.server
    }

    /// The declared scope's path globs (`[scope] paths`), placeholders unresolved; `None`
    /// when the document declares no scope.
    pub fn scope(&self) -> Option<Vec<&str>> {
        self.scope
            .as_ref()
            .map(|s| s.value.iter().map(|p| p.value.as_str()).collect())
    }

    /// The tools the document names, in document order.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name.value.as_str())
    }
}
