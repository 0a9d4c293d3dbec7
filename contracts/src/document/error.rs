//! Why a contract document is rejected, always with the position of the offending input.

use std::fmt;

use crate::clause::Clause;
use crate::compile::CompileError;
use crate::pattern::PatternError;

/// A position in a contract document: `contract.toml:12:5` (1-based line and column, the
/// column counted in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The document's name as given to the parser (usually its path).
    pub source: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl Location {
    /// The position of byte `offset` of `text`.
    pub fn at(source: &str, text: &str, offset: usize) -> Self {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Location {
            source: source.to_owned(),
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.source, self.line, self.column)
    }
}

/// A contract document that cannot be parsed or resolved. Every message starts with
/// `file:line:column` and names the offending key, tool or pattern.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// Not TOML, or a section or key of the wrong shape (including unknown sections and
    /// keys outside `[tools]`, and wrong types there).
    #[error("{at}: {message}")]
    Syntax {
        /// Where.
        at: Location,
        /// The parser's message, first line.
        message: String,
        /// The parser's error.
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A key of a `[tools.NAME]` table that is neither a clause nor `call`.
    #[error(
        "{at}: unknown clause {key:?} for tool {tool:?} (expected call or one of {known}; quote dotted names: \"fs.write\")",
        known = Clause::ALL.map(Clause::as_str).join(", ")
    )]
    UnknownClause {
        /// Where the key is.
        at: Location,
        /// The tool.
        tool: String,
        /// The key as written.
        key: String,
    },
    /// A clause's value of the wrong type.
    #[error("{at}: {key} of tool {tool:?} must be {expected}, not {found}", expected = expected(key))]
    WrongType {
        /// Where the value is.
        at: Location,
        /// The tool.
        tool: String,
        /// The clause or `call`, as written.
        key: String,
        /// What was written: its type, or the string or boolean itself.
        found: String,
    },
    /// A tool the server does not have.
    #[error("{at}: tool {tool:?} is not in the server's tools/list")]
    UnknownTool {
        /// Where its table is.
        at: Location,
        /// The tool as written.
        tool: String,
    },
    /// A pattern that does not compile once placeholders are resolved.
    #[error("{at}: bad pattern {pattern:?} in {place}")]
    BadPattern {
        /// Where the pattern is.
        at: Location,
        /// The pattern as written.
        pattern: String,
        /// `[scope] paths` or the clause and tool.
        place: String,
        /// What is wrong with it.
        #[source]
        source: Box<PatternError>,
    },
    /// A `{name}` that is not a lab placeholder.
    #[error(
        "{at}: unknown placeholder {{{placeholder}}} in {pattern:?} (expected {{lab}}, {{home}}, {{tmp}} or {{work}})"
    )]
    UnknownPlaceholder {
        /// Where the pattern is.
        at: Location,
        /// The pattern as written.
        pattern: String,
        /// The name between the braces.
        placeholder: String,
    },
    /// `"fs.read" = "scope"` in a document without `[scope]`.
    #[error("{at}: fs.read of tool {tool:?} is \"scope\" but the contract declares no [scope]")]
    NoScope {
        /// Where the value is.
        at: Location,
        /// The tool.
        tool: String,
    },
    /// The resolved contract does not compile (a bug: resolving checks every pattern).
    #[error("the resolved contract does not compile")]
    Compile(#[from] CompileError),
}

/// What a `[tools.NAME]` key takes, for messages.
fn expected(key: &str) -> &'static str {
    match key.parse::<Clause>() {
        Ok(Clause::FsRead) => "a list of patterns, \"scope\" or \"any\"",
        Ok(
            Clause::ResultSecrets
            | Clause::ResultInstructions
            | Clause::ManifestStable
            | Clause::Idempotent,
        )
        | Err(_) => "true or false",
        Ok(_) => "a list of patterns or \"any\"",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_lines_and_character_columns() {
        let text = "a = 1\n# é\u{1F600} x\nb";
        assert_eq!(Location::at("c.toml", text, 0).to_string(), "c.toml:1:1");
        let x = text.find('x').unwrap();
        assert_eq!(Location::at("c.toml", text, x).to_string(), "c.toml:2:6");
        // Past the end, or inside a character, clamps to the nearest boundary before it.
        assert_eq!(Location::at("c.toml", text, 999).to_string(), "c.toml:3:2");
        let inside = text.find('é').unwrap() + 1;
        assert_eq!(
            Location::at("c.toml", text, inside).to_string(),
            "c.toml:2:3"
        );
    }
}
