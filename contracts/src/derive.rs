//! The contract the annotations imply (SPEC §3.6), clause by clause, with spec defaults for
//! absent hints. Each function returns the rule and its basis, the hints it rests on.

use crate::contract::Rule;
use crate::tool::Annotations;

/// The basis of rules every tool gets unless a contract document switches them off.
pub(crate) const EVERY_TOOL: &str = "on for every tool (SPEC §3.6)";
/// What a rule's basis (its `basis` text, as this crate writes it) rests on, for reports:
/// `intent` (the tool's words: an intent contract where a hint is absent), `declared` (a
/// hint the server wrote), `default` (the MCP specification's default for a hint the server
/// left out), `universal` (a limit on every tool, the server's own row included) or
/// `contract` (a line of a written contract document).
pub fn rests_on(basis: &str) -> &'static str {
    const HINTS: [&str; 4] = [
        "readOnlyHint: ",
        "destructiveHint: ",
        "idempotentHint: ",
        "openWorldHint: ",
    ];
    if basis.starts_with("intent: ") {
        "intent"
    } else if HINTS.iter().any(|hint| basis.starts_with(hint)) {
        "declared"
    } else if basis.contains(" absent (default ") {
        "default"
    } else if basis == EVERY_TOOL || basis == NO_SCOPE || basis.ends_with("(universal)") {
        "universal"
    } else {
        "contract"
    }
}

/// The basis of the `fs.read` rule when no scope is declared.
pub(crate) const NO_SCOPE: &str = "no scope declared: canary reads only";

/// Nothing allowed if read-only, otherwise nothing promised.
fn unless_read_only(annotations: &Annotations) -> (Rule, String) {
    let read_only = annotations.read_only_hint();
    let rule = if read_only.value {
        Rule::nowhere()
    } else {
        Rule::NothingPromised
    };
    (rule, read_only.basis())
}

pub(crate) fn fs_write(annotations: &Annotations) -> (Rule, String) {
    unless_read_only(annotations)
}

pub(crate) fn fs_delete(annotations: &Annotations) -> (Rule, String) {
    let read_only = annotations.read_only_hint();
    let destructive = annotations.destructive_hint();
    if read_only.value {
        (Rule::nowhere(), read_only.basis())
    } else if !destructive.value {
        (Rule::nowhere(), destructive.basis())
    } else {
        let basis = format!("{}; {}", read_only.basis(), destructive.basis());
        (Rule::NothingPromised, basis)
    }
}

/// No hint implies a scope; canary reads stay forbidden (`**` allows every other path).
pub(crate) fn fs_read(_: &Annotations) -> (Rule, String) {
    let rule = Rule::Restricted {
        allowed: vec!["**".to_owned()],
    };
    (rule, NO_SCOPE.to_owned())
}

pub(crate) fn exec(annotations: &Annotations) -> (Rule, String) {
    unless_read_only(annotations)
}

pub(crate) fn net_egress(annotations: &Annotations) -> (Rule, String) {
    let open_world = annotations.open_world_hint();
    let rule = if open_world.value {
        Rule::NothingPromised
    } else {
        Rule::nowhere()
    };
    (rule, open_world.basis())
}

/// Listening is a change of the environment: read-only tools may not.
pub(crate) fn net_listen(annotations: &Annotations) -> (Rule, String) {
    unless_read_only(annotations)
}

pub(crate) fn on_for_every_tool(_: &Annotations) -> (Rule, String) {
    (Rule::nowhere(), EVERY_TOOL.to_owned())
}

pub(crate) fn idempotent(annotations: &Annotations) -> (Rule, String) {
    let idempotent = annotations.idempotent_hint();
    let rule = if idempotent.value {
        Rule::nowhere()
    } else {
        Rule::NothingPromised
    };
    (rule, idempotent.basis())
}
