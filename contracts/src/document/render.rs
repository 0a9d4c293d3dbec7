//! A contract written out as a document: what `vac contract derive` hands the researcher to
//! edit. Parsing the rendered text and resolving it against the same tools gives back the
//! same rules.

use std::fmt::Write;

use crate::clause::Clause;
use crate::contract::{Contract, Rule, ServerIdentity};

const ON_OFF: [Clause; 4] = [
    Clause::ResultSecrets,
    Clause::ResultInstructions,
    Clause::ManifestStable,
    Clause::Idempotent,
];

/// Renders `contract` for `server` as a contract document, each rule with its basis.
pub fn render(contract: &Contract, server: &ServerIdentity) -> String {
    render_from(contract, server, "its tools' annotations (SPEC §3.6)")
}

/// Renders an intent contract ([`crate::derive_intent`]) as [`render`] does.
pub fn render_intent(contract: &Contract, server: &ServerIdentity) -> String {
    render_from(
        contract,
        server,
        "its tools' declared annotations and, where they are absent, their intent (CONTRACTS.md, \"Intent\")",
    )
}

fn render_from(contract: &Contract, server: &ServerIdentity, from: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Effect contract for {}, derived from {from}.",
        server.name
    );
    let _ = writeln!(
        out,
        "# Edit it before the run, then: vac probe --contract FILE -- CMD"
    );
    let _ = writeln!(out, "\n[server]\nname = {}", quote(&server.name));
    if let Some(version) = &server.version {
        let _ = writeln!(out, "version = {}", quote(version));
    }
    for tool in &contract.tools {
        let _ = writeln!(out, "\n[tools.{}]", quote(&tool.tool));
        if let Some(call) = tool.call {
            let _ = writeln!(out, "call = {call}");
        }
        for rule in &tool.rules {
            let value = match (&rule.rule, ON_OFF.contains(&rule.clause)) {
                (Rule::NothingPromised, true) => "false".to_string(),
                (Rule::Restricted { .. }, true) => "true".to_string(),
                (Rule::NothingPromised, false) => quote("any"),
                (Rule::Restricted { allowed }, false) => {
                    format!(
                        "[{}]",
                        allowed
                            .iter()
                            .map(|p| quote(p))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            };
            let _ = writeln!(
                out,
                "{} = {value}  # {}",
                quote(rule.clause.as_str()),
                rule.basis
            );
        }
    }
    out
}

/// A TOML basic string: JSON's escapes are a subset of TOML's.
fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_string())
}
