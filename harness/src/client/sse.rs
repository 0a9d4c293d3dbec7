//! [`SseSplitter`]: a `text/event-stream` body cut into its events' data, holding at most
//! the message cap of any one event whatever the server sends.

use super::lines::LineSplitter;

/// What a chunk of the stream completed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SseItem {
    /// The data of one event (its `data:` lines joined by `\n`); events without data, such
    /// as priming events and keep-alive comments, yield nothing.
    Data(Vec<u8>),
    /// The data of an `endpoint` event: where a server of the HTTP+SSE transport
    /// (2024-11-05) takes the client's messages.
    Endpoint(Vec<u8>),
    /// An event over the cap: its first `cap` bytes and how many were counted. The stream
    /// is unusable after it.
    TooLong { kept: Vec<u8>, seen: u64 },
}

#[derive(Debug)]
pub(crate) struct SseSplitter {
    lines: LineSplitter,
    max: usize,
    data: Vec<u8>,
    has_data: bool,
    /// The event's `event:` field is `endpoint`.
    endpoint: bool,
}

impl SseSplitter {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            lines: LineSplitter::new(max),
            max,
            data: Vec::new(),
            has_data: false,
            endpoint: false,
        }
    }

    /// Feeds a chunk; appends every event it completes to `out`, stopping at one over the cap.
    pub(crate) fn push(&mut self, chunk: &[u8], out: &mut Vec<SseItem>) {
        let mut lines = Vec::new();
        self.lines.push(chunk, &mut lines);
        // A line still open past the cap fails now, not when (if ever) it ends.
        if self.data.len() as u64 + self.lines.pending() > self.max as u64
            && let Some(line) = self.lines.take_partial()
        {
            lines.push(line);
        }
        for line in lines {
            let text = line.bytes.strip_suffix(b"\n").unwrap_or(&line.bytes);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if line.oversized || self.data.len() + text.len() > self.max {
                let seen = self.data.len() as u64 + line.len;
                let mut kept = std::mem::take(&mut self.data);
                let room = self.max.saturating_sub(kept.len());
                kept.extend_from_slice(&text[..text.len().min(room)]);
                out.push(SseItem::TooLong { kept, seen });
                return;
            }
            if text.is_empty() {
                let data = std::mem::take(&mut self.data);
                let endpoint = std::mem::take(&mut self.endpoint);
                if std::mem::take(&mut self.has_data) && !data.is_empty() {
                    out.push(match endpoint {
                        true => SseItem::Endpoint(data),
                        false => SseItem::Data(data),
                    });
                }
                continue;
            }
            let (field, value) = match text.iter().position(|b| *b == b':') {
                Some(0) => continue, // a comment (keep-alive)
                Some(i) => (&text[..i], &text[i + 1..]),
                None => (text, &b""[..]),
            };
            if field == b"event" {
                self.endpoint = value.strip_prefix(b" ").unwrap_or(value) == b"endpoint";
            }
            if field == b"data" {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data
                    .extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
                self.has_data = true;
            }
        }
    }

    /// At the end of the stream: the bytes of an event that never ended (not delivered, as
    /// the SSE standard says, but evidence) and how many were counted.
    pub(crate) fn finish(&mut self) -> Option<(Vec<u8>, u64)> {
        let mut kept = std::mem::take(&mut self.data);
        let mut seen = kept.len() as u64;
        if let Some(line) = self.lines.take_partial() {
            kept.extend_from_slice(&line.bytes);
            seen += line.len;
        }
        (seen > 0).then_some((kept, seen))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(max: usize, chunks: &[&[u8]]) -> Vec<SseItem> {
        let mut splitter = SseSplitter::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            splitter.push(chunk, &mut out);
        }
        out
    }

    fn data(text: &str) -> SseItem {
        SseItem::Data(text.as_bytes().to_vec())
    }

    #[test]
    fn events_split_across_chunks_join_their_data_lines() {
        let got = events(
            1024,
            &[
                b"event: message\r\nda",
                b"ta: {\"a\":\r\ndata:1}\r\n",
                b"\r\n",
            ],
        );
        assert_eq!(got, [data("{\"a\":\n1}")]);
    }

    #[test]
    fn an_endpoint_event_is_told_apart_and_the_next_event_is_a_message_again() {
        let out = events(
            64,
            &[b"event: endpoint\ndata: /messages?session=1\n\nevent: message\ndata: {}\n\ndata: 2\n\n"],
        );
        assert_eq!(
            out,
            vec![
                SseItem::Endpoint(b"/messages?session=1".to_vec()),
                data("{}"),
                data("2")
            ]
        );
    }

    #[test]
    fn priming_events_and_comments_carry_no_message() {
        let got = events(
            1024,
            &[b"data: \nid: 0\nretry: 3000\n\n: ping\n\ndata: x\n\n"],
        );
        assert_eq!(got, [data("x")]);
    }

    #[test]
    fn an_event_over_the_cap_fails_before_its_line_ends() {
        let mut splitter = SseSplitter::new(12);
        let mut out = Vec::new();
        splitter.push(b"data: 0123", &mut out);
        assert!(out.is_empty());
        splitter.push(b"456789", &mut out);
        match &out[..] {
            [SseItem::TooLong { kept, seen }] => {
                assert_eq!(kept, b"data: 012345");
                assert_eq!(*seen, 16);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn data_lines_summing_over_the_cap_fail() {
        let got = events(8, &[b"data: 01234\ndata: 56789\n\n"]);
        assert!(matches!(&got[..], [SseItem::TooLong { .. }]), "{got:?}");
    }

    #[test]
    fn an_unfinished_event_is_kept_as_evidence() {
        let mut splitter = SseSplitter::new(1024);
        let mut out = Vec::new();
        splitter.push(b"data: {\"jsonrpc\"", &mut out);
        assert!(out.is_empty());
        assert_eq!(
            splitter.finish(),
            Some((b"data: {\"jsonrpc\"".to_vec(), 16))
        );
    }
}
