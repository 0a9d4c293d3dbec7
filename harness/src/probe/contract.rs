//! The contract of a server without a contract document: what its control run listed
//! ([`manifest`]), read as tool declarations, and derived by the chosen [`Derivation`]
//! from its annotations (and intent), for the server the control run met.

use serde_json::json;
use vac_contracts::{LabPaths, ServerIdentity, Service, ToolDecl, derive, render};

use super::plan::MalformedTool;
use super::vocab::RunOutput;

/// How the contract of a server without a contract document is derived.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Derivation {
    /// From the annotations alone, spec defaults for absent hints (`--contract annotations`).
    Annotations,
    /// Declared hints where the server wrote them, the tools' intent elsewhere, and the
    /// universal limits everywhere (`--contract intent`, the default).
    #[default]
    Intent,
}

impl Derivation {
    /// The contract record's name, by which replay derives it again.
    pub(crate) fn record_name(self) -> &'static str {
        match self {
            Derivation::Annotations => DERIVED,
            Derivation::Intent => DERIVED_INTENT,
        }
    }

    /// The record name's derivation, if it names one.
    pub(crate) fn of_record(name: &str) -> Option<Self> {
        match name {
            DERIVED => Some(Derivation::Annotations),
            DERIVED_INTENT => Some(Derivation::Intent),
            _ => None,
        }
    }

    /// The contract of `decls` in `lab`, and its rendered text, for the server `control`
    /// met (its identity, and the prompts and resources it offered), started as `target`
    /// describes with `env` set (intent allows its [`Service`] to every tool).
    pub(crate) fn derive(
        self,
        decls: &[ToolDecl],
        lab: &LabPaths,
        control: &RunOutput,
        target: &str,
        env: &[(String, String)],
    ) -> (vac_contracts::Contract, String) {
        let server = server_identity(control);
        match self {
            Derivation::Annotations => {
                let contract = derive(decls);
                let text = render(&contract, &server);
                (contract, text)
            }
            Derivation::Intent => {
                let service = service(control, target, env);
                let contract = vac_contracts::derive_intent(decls, offers(control), &service, lab);
                let text = vac_contracts::render_intent(&contract, &server);
                (contract, text)
            }
        }
    }
}

/// The contract record's name when the contract was derived from the annotations.
pub(crate) const DERIVED: &str = vac_contracts::DERIVED_NAMES[0];

/// The contract record's name when it was derived from annotations and intent.
pub(crate) const DERIVED_INTENT: &str = vac_contracts::DERIVED_NAMES[1];

/// The tools the control run listed, if it got that far: every entry, in manifest order.
/// An entry that is not a valid declaration stays, as a placeholder whose cells error
/// `malformed_tool`, and is listed with its raw JSON and the parse error.
pub(crate) fn manifest(control: &RunOutput) -> Option<(Vec<ToolDecl>, Vec<MalformedTool>)> {
    if control.failure.is_some() {
        return None;
    }
    let raw = control.tools.as_ref()?.raw.as_array()?;
    let (mut decls, mut malformed) = (Vec::new(), Vec::new());
    for (index, entry) in raw.iter().enumerate() {
        match serde_json::from_value::<ToolDecl>(entry.clone()) {
            Ok(decl) => decls.push(decl),
            Err(error) => {
                let name = entry["name"]
                    .as_str()
                    .map_or_else(|| format!("#{index}"), str::to_string);
                decls.extend(placeholder(&name));
                malformed.push(MalformedTool {
                    index,
                    name,
                    error: error.to_string(),
                    raw: entry.clone(),
                });
            }
        }
    }
    Some((decls, malformed))
}

/// What the server offered beside its tools in the listing that was reviewed.
pub(crate) fn offers(control: &RunOutput) -> vac_contracts::Offers {
    vac_contracts::Offers {
        lists: control.surface.is_some(),
    }
}

/// What the server exists to reach and where it keeps its state, from what it called
/// itself in the control run, the command [`super::Target::describe`] gave (a launched HTTP
/// server's command after "served by") and the environment vac set: the same in a probe
/// and in its replay.
pub(crate) fn service(control: &RunOutput, target: &str, env: &[(String, String)]) -> Service {
    let command = target.split_once(" served by ").map_or(target, |(_, c)| c);
    let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    let name = control.server.as_ref().map(|(name, _)| name.as_str());
    Service::of(name, &words, env)
}

pub(crate) fn server_identity(control: &RunOutput) -> ServerIdentity {
    ServerIdentity {
        name: control
            .server
            .as_ref()
            .map_or("unknown", |(name, _)| name.as_str())
            .to_string(),
        version: control.server.as_ref().map(|(_, version)| version.clone()),
    }
}

/// Placeholder declarations for malformed entries, so their cells exist (and error).
pub(crate) fn placeholder(name: &str) -> Option<ToolDecl> {
    serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).ok()
}
