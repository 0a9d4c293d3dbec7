//! Splitting the server's stdout into lines without ever holding more than the line cap,
//! and classifying each line before the SDK sees it.

use rmcp::model::ServerJsonRpcMessage;

/// A line as read, possibly only its prefix.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) bytes: Vec<u8>,
    /// Bytes counted for the line, including its `\n`.
    pub(crate) len: u64,
    /// Longer than the cap: `bytes` holds only the first `cap` bytes.
    pub(crate) oversized: bool,
}

/// Cuts a byte stream into `\n`-terminated lines, keeping at most `max_line` bytes of each.
///
/// The rest of an oversized line is counted and discarded, so memory stays bounded by the
/// cap whatever the server writes.
#[derive(Debug)]
pub(crate) struct LineSplitter {
    max_line: usize,
    buf: Vec<u8>,
    len: u64,
}

impl LineSplitter {
    pub(crate) fn new(max_line: usize) -> Self {
        Self {
            max_line,
            buf: Vec::new(),
            len: 0,
        }
    }

    /// Feeds a chunk and appends every line it completes to `out`.
    pub(crate) fn push(&mut self, mut chunk: &[u8], out: &mut Vec<Line>) {
        while !chunk.is_empty() {
            let end = chunk.iter().position(|b| *b == b'\n').map(|i| i + 1);
            let (piece, rest) = chunk.split_at(end.unwrap_or(chunk.len()));
            let room = self.max_line.saturating_sub(self.buf.len());
            self.buf.extend_from_slice(&piece[..piece.len().min(room)]);
            self.len += piece.len() as u64;
            if end.is_some() {
                out.push(self.take());
            }
            chunk = rest;
        }
    }

    /// Bytes of the unterminated line in progress, counted whole (kept or not).
    pub(crate) fn pending(&self) -> u64 {
        self.len
    }

    /// The unterminated line in progress, if any (at EOF, at a cap, at shutdown).
    pub(crate) fn take_partial(&mut self) -> Option<Line> {
        (self.len > 0).then(|| self.take())
    }

    fn take(&mut self) -> Line {
        let mut bytes = std::mem::take(&mut self.buf);
        bytes.shrink_to_fit();
        let len = std::mem::take(&mut self.len);
        Line {
            oversized: len > bytes.len() as u64,
            bytes,
            len,
        }
    }
}

/// What a complete line from the server turned out to be.
#[derive(Debug)]
pub(crate) enum Parsed {
    Message(Box<ServerJsonRpcMessage>),
    /// Empty or whitespace only; tolerated like the SDK does.
    Blank,
    /// A JSON notification the SDK cannot type (e.g. without `"jsonrpc": "2.0"`); skipped,
    /// as the SDK does, but still recorded.
    UnknownNotification,
    /// Text that is not a JSON-RPC message (a banner, a log line, JSON of another kind):
    /// recorded and skipped, as reference clients do; the detail says why it is not one.
    Noise(String),
    /// Not text (not UTF-8, or holding NUL bytes), or a JSON-RPC message that does not
    /// parse: the stream is not a usable channel.
    Garbage(String),
}

pub(crate) fn parse_line(line: &[u8]) -> Parsed {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Parsed::Blank;
    }
    match serde_json::from_slice::<ServerJsonRpcMessage>(line) {
        Ok(message) => Parsed::Message(Box::new(message)),
        Err(error) => match serde_json::from_slice::<serde_json::Value>(line) {
            Ok(value)
                if value.get("method").is_some_and(|m| m.is_string())
                    && value.get("id").is_none() =>
            {
                Parsed::UnknownNotification
            }
            // Meant as a message (it names the protocol, an id or a method) but malformed.
            Ok(value)
                if ["jsonrpc", "id", "method", "result", "error"]
                    .iter()
                    .any(|k| value.get(k).is_some()) =>
            {
                Parsed::Garbage(error.to_string())
            }
            _ if std::str::from_utf8(line).is_err() => {
                Parsed::Garbage(format!("not UTF-8 text ({error})"))
            }
            _ if line.contains(&0) => Parsed::Garbage(format!("holds NUL bytes ({error})")),
            _ => Parsed::Noise(error.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(max: usize, chunks: &[&[u8]]) -> (Vec<Line>, Option<Line>) {
        let mut splitter = LineSplitter::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            splitter.push(chunk, &mut out);
        }
        let partial = splitter.take_partial();
        (out, partial)
    }

    #[test]
    fn lines_across_chunks_keep_their_newlines() {
        let (lines, partial) = split(100, &[b"ab", b"c\nde\n", b"f"]);
        assert_eq!(
            lines[0],
            Line {
                bytes: b"abc\n".to_vec(),
                len: 4,
                oversized: false
            }
        );
        assert_eq!(
            lines[1],
            Line {
                bytes: b"de\n".to_vec(),
                len: 3,
                oversized: false
            }
        );
        assert_eq!(
            partial,
            Some(Line {
                bytes: b"f".to_vec(),
                len: 1,
                oversized: false
            })
        );
    }

    #[test]
    fn oversized_line_keeps_a_prefix_and_its_true_length() {
        let (lines, partial) = split(4, &[b"0123", b"456", b"789\nok\n"]);
        assert_eq!(
            lines[0],
            Line {
                bytes: b"0123".to_vec(),
                len: 11,
                oversized: true
            }
        );
        assert_eq!(lines[1].bytes, b"ok\n");
        assert_eq!(partial, None);
    }

    #[test]
    fn classifies_lines() {
        assert!(matches!(parse_line(b"\r\n"), Parsed::Blank));
        assert!(matches!(parse_line(b"\xff\xfe{\n"), Parsed::Garbage(_)));
        // Text that is not JSON-RPC is noise: a banner, a log line, other JSON.
        assert!(matches!(parse_line(b"hello\n"), Parsed::Noise(_)));
        assert!(matches!(
            parse_line(b"\x1b[32mServer ready\x1b[0m on stdio\n"),
            Parsed::Noise(_)
        ));
        assert!(matches!(
            parse_line(br#"{"level":"info"}"#),
            Parsed::Noise(_)
        ));
        assert!(matches!(parse_line(b"[1, 2]\n"), Parsed::Noise(_)));
        // Binary, or a message that does not parse, is garbage.
        assert!(matches!(parse_line(b"ab\x00cd\n"), Parsed::Garbage(_)));
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","id":1,"bogus":7}"#),
            Parsed::Garbage(_)
        ));
        // rmcp types vendor notifications itself; one it cannot type is skipped, not fatal.
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","method":"vendor/thing","params":{"a":1}}"#),
            Parsed::Message(_)
        ));
        assert!(matches!(
            parse_line(br#"{"method":"vendor/thing"}"#),
            Parsed::UnknownNotification
        ));
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            Parsed::Message(_)
        ));
    }
}
