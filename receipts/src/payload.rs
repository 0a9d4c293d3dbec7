//! Byte payloads: kept inline when small, in a content-addressed blob when large,
//! cut to a cap when larger still — and always with their original length.

use serde::{Deserialize, Serialize};

use crate::digest::Digest;

/// A reference to a blob under `blobs/`: its blake3 and its length in bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobRef {
    /// blake3 of the blob's bytes; also its file name.
    pub blake3: Digest,
    /// Length of the blob file in bytes.
    pub len: u64,
}

/// Bytes as they were seen, e.g. a protocol frame or the content a server wrote.
///
/// `len` is the length of the original bytes; when it exceeds the stored length
/// the bytes were cut at a cap and what is kept is their prefix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Payload {
    /// Length of the original bytes.
    pub len: u64,
    /// What was kept of them.
    pub stored: Stored,
}

/// How a payload's kept bytes are stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stored {
    /// Inline, when the bytes are valid UTF-8.
    Utf8(String),
    /// Inline as lowercase hex, when they are not (non-UTF-8 frames stay exact).
    Hex(String),
    /// In a content-addressed blob.
    Blob(BlobRef),
    /// Nothing kept: the per-run blob budget was spent.
    Omitted,
}

impl Payload {
    /// Keeps all of `bytes` inline: as UTF-8 text when valid, hex otherwise.
    pub fn inline(bytes: &[u8]) -> Payload {
        let stored = match std::str::from_utf8(bytes) {
            Ok(text) => Stored::Utf8(text.to_owned()),
            Err(_) => Stored::Hex(hex::encode(bytes)),
        };
        Payload {
            len: bytes.len() as u64,
            stored,
        }
    }

    /// Number of bytes kept (the blob's length for a blob).
    pub fn stored_len(&self) -> u64 {
        match &self.stored {
            Stored::Utf8(text) => text.len() as u64,
            Stored::Hex(digits) => digits.len() as u64 / 2,
            Stored::Blob(blob) => blob.len,
            Stored::Omitted => 0,
        }
    }

    /// True when the kept bytes are only a prefix of the original.
    pub fn is_truncated(&self) -> bool {
        self.stored_len() < self.len
    }

    /// The kept bytes when they are inline; `None` for a blob or nothing kept.
    pub fn inline_bytes(&self) -> Option<Vec<u8>> {
        match &self.stored {
            Stored::Utf8(text) => Some(text.as_bytes().to_vec()),
            Stored::Hex(digits) => hex::decode(digits).ok(),
            Stored::Blob(_) | Stored::Omitted => None,
        }
    }

    /// The referenced blob, if any.
    pub fn blob(&self) -> Option<&BlobRef> {
        match &self.stored {
            Stored::Blob(blob) => Some(blob),
            _ => None,
        }
    }

    /// Why this payload is not well formed, if it is not.
    pub(crate) fn defect(&self) -> Option<String> {
        if let Stored::Hex(digits) = &self.stored {
            let lower = digits
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if digits.len() % 2 != 0 || !lower {
                return Some("inline hex is not an even run of lowercase hex digits".into());
            }
        }
        (self.stored_len() > self.len).then(|| {
            format!(
                "payload keeps {} bytes of an original {}",
                self.stored_len(),
                self.len
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_utf8_bytes_stay_exact_as_hex() {
        let bytes = [0xff, 0x00, b'{', 0xc3];
        let payload = Payload::inline(&bytes);
        assert!(matches!(payload.stored, Stored::Hex(_)));
        assert_eq!(payload.inline_bytes().as_deref(), Some(&bytes[..]));
        assert_eq!(payload.defect(), None);
    }

    #[test]
    fn utf8_bytes_are_kept_as_text() {
        let payload = Payload::inline("{\"jsonrpc\":\"2.0\"}\n".as_bytes());
        let json = serde_json::to_string(&payload).expect("serialises");
        assert_eq!(
            json,
            r#"{"len":18,"stored":{"utf8":"{\"jsonrpc\":\"2.0\"}\n"}}"#
        );
    }

    #[test]
    fn a_payload_claiming_more_than_its_length_is_a_defect() {
        let payload = Payload {
            len: 1,
            stored: Stored::Utf8("abc".into()),
        };
        assert!(payload.defect().is_some());
        let odd = Payload {
            len: 1,
            stored: Stored::Hex("abc".into()),
        };
        assert!(odd.defect().is_some());
    }
}
