//! The marks and short texts every renderer of the map shares: a verdict's symbol, a
//! ratio, the protocol versions a server spoke.

use crate::map::ServerMap;

/// The glyph of a verdict: the map reads without colour.
pub fn symbol(verdict: &str) -> &'static str {
    match verdict {
        "confirmed" => "✗",
        "refuted" => "✓",
        "skipped" => "–",
        "errored" => "!",
        _ => "·",
    }
}

/// The protocol versions spoken with a server, or "unknown" when no probe recorded one.
pub(crate) fn spoken(s: &ServerMap) -> String {
    match s.protocols.is_empty() {
        true => "unknown".to_owned(),
        false => s.protocols.join(", "),
    }
}

/// A precision or recall as three decimals, or `–` when there is nothing to divide.
pub fn ratio_text(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.3}"))
}
