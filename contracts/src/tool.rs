//! A tool as the server declared it in tools/list, and its annotation defaults.

use serde::{Deserialize, Serialize};

/// One tool of a server's tools/list, as the harness read it.
///
/// Serialised with the MCP wire names (`inputSchema`), so a tools/list entry deserialises
/// directly (unknown fields such as `title` are ignored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDecl {
    /// The tool's name, unique within the server.
    pub name: String,
    /// What the tool says it does: what intent contracts read besides the name. A
    /// description that is not a string is taken as none (it is the manifest detectors'
    /// to report, not a reason to leave the tool ungraded).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "string_or_none"
    )]
    pub description: Option<String>,
    /// The promises the tool makes; absent hints take the spec defaults.
    #[serde(default)]
    pub annotations: Annotations,
    /// The JSON Schema of the tool's arguments.
    #[serde(rename = "inputSchema", default)]
    pub input_schema: serde_json::Value,
}

fn string_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(text) => Some(text),
        _ => None,
    })
}

/// MCP tool annotations (behaviour hints). `None` means the server did not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Annotations {
    /// `readOnlyHint`: the tool does not modify its environment.
    #[serde(
        rename = "readOnlyHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub read_only: Option<bool>,
    /// `destructiveHint`: the tool may perform destructive updates (only meaningful when
    /// not read-only).
    #[serde(
        rename = "destructiveHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub destructive: Option<bool>,
    /// `idempotentHint`: repeated identical calls have no additional effect.
    #[serde(
        rename = "idempotentHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub idempotent: Option<bool>,
    /// `openWorldHint`: the tool may interact with an open world of external entities.
    #[serde(
        rename = "openWorldHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub open_world: Option<bool>,
}

/// One hint after applying the spec default, and how it came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hint {
    pub(crate) name: &'static str,
    pub(crate) value: bool,
    pub(crate) declared: bool,
}

impl Hint {
    fn new(name: &'static str, declared: Option<bool>, default: bool) -> Self {
        Hint {
            name,
            value: declared.unwrap_or(default),
            declared: declared.is_some(),
        }
    }

    /// Why a rule holds, for reports: `readOnlyHint: true` or
    /// `destructiveHint absent (default true)`.
    pub(crate) fn basis(self) -> String {
        if self.declared {
            format!("{}: {}", self.name, self.value)
        } else {
            format!("{} absent (default {})", self.name, self.value)
        }
    }
}

// Defaults are the MCP specification's (SPEC §3.6).
impl Annotations {
    pub(crate) fn read_only_hint(&self) -> Hint {
        Hint::new("readOnlyHint", self.read_only, false)
    }

    pub(crate) fn destructive_hint(&self) -> Hint {
        Hint::new("destructiveHint", self.destructive, true)
    }

    pub(crate) fn idempotent_hint(&self) -> Hint {
        Hint::new("idempotentHint", self.idempotent, false)
    }

    pub(crate) fn open_world_hint(&self) -> Hint {
        Hint::new("openWorldHint", self.open_world, true)
    }
}
