//! What makes text instruction-like: the signals, their weights, the hits that raised
//! them, and the word-set test the phrase and language tables share.

/// What a string was flagged for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Signal {
    Override,
    Secrecy,
    ChatMarker,
    AddressesModel,
    ImportantDirective,
    Exfiltration,
    SecretAccess,
    HiddenText,
    ToolCall,
    Mandate,
}

impl Signal {
    pub fn weight(self) -> u32 {
        match self {
            Signal::Override | Signal::Secrecy => 3,
            Signal::ChatMarker
            | Signal::AddressesModel
            | Signal::ImportantDirective
            | Signal::Exfiltration
            | Signal::SecretAccess
            | Signal::HiddenText => 2,
            Signal::ToolCall | Signal::Mandate => 1,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Override => "override",
            Signal::Secrecy => "secrecy",
            Signal::ChatMarker => "chat_marker",
            Signal::AddressesModel => "addresses_model",
            Signal::ImportantDirective => "important_directive",
            Signal::Exfiltration => "exfiltration",
            Signal::SecretAccess => "secret_access",
            Signal::HiddenText => "hidden_text",
            Signal::ToolCall => "tool_call",
            Signal::Mandate => "mandate",
        }
    }
}

/// One signal and the words that raised it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub signal: Signal,
    pub matched: String,
}

/// Whether `word` is in `set`; an entry ending in `*` matches any word it begins.
pub(super) fn in_set(word: &str, set: &[&str]) -> bool {
    set.iter().any(|entry| match entry.strip_suffix('*') {
        Some(stem) => word.starts_with(stem),
        None => word == *entry,
    })
}
