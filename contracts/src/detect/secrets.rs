//! Canary tokens in what the model sees (`result.secrets`), and in bytes a server sent out.
//!
//! A token counts when the whole of it is there, nonce included: `vac-canary-ssh-<nonce>`.
//! So a result that only says "vac-canary", or carries another probe's token, is clean.
//! Each token is looked for, in this order, in every string of the result (object keys
//! too):
//!
//! - **plain**, ignoring ASCII case and with zero-width characters removed (a token split
//!   by U+200B is still the token);
//! - **hex**, lower or upper case;
//! - **base64**, standard and url-safe alphabets, at each of the three alignments the token
//!   can have inside a longer encoded stream, whitespace (MIME line breaks) ignored;
//! - **percent-encoded** (`%76%61%63…`), after decoding every `%XX`;
//! - **Unicode tags** (U+E0020…U+E007E, invisible ASCII), after decoding them.
//!
//! Not covered: double encodings (base64 of hex), compression, encryption, a token split
//! over several strings. Those are exfiltration by design, not accident; the network
//! sensor and `fs.read` are the stronger witnesses there.

use serde_json::Value;

use super::{Segment, segments};

/// How a token was written where it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Plain,
    Hex,
    Base64,
    Base64Url,
    Percent,
    UnicodeTags,
}

impl Encoding {
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Plain => "plain",
            Encoding::Hex => "hex",
            Encoding::Base64 => "base64",
            Encoding::Base64Url => "base64url",
            Encoding::Percent => "percent",
            Encoding::UnicodeTags => "unicode_tags",
        }
    }
}

/// One planted token found in a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretFinding {
    pub token: String,
    /// JSON pointer of the string that holds it (of the member, when it is in a key).
    pub pointer: String,
    pub encoding: Encoding,
    pub in_key: bool,
}

/// Every planted token in any string of `result`: one finding per token and string, with
/// the first encoding (in the order of the module doc) it was found in.
pub fn secrets_in_result(result: &Value, tokens: &[String]) -> Vec<SecretFinding> {
    let needles: Vec<Needles> = tokens.iter().map(|t| Needles::new(t)).collect();
    let mut findings = Vec::new();
    for Segment {
        pointer,
        text,
        in_key,
    } in segments(result)
    {
        let haystack = Haystack::new(text);
        for needle in &needles {
            if let Some(encoding) = needle.find(&haystack) {
                findings.push(SecretFinding {
                    token: needle.token.clone(),
                    pointer: pointer.clone(),
                    encoding,
                    in_key,
                });
            }
        }
    }
    findings
}

/// Which tokens appear in `bytes` (read as UTF-8, lossily), in any encoding above. The
/// network sensor checks what a server sent with this.
pub fn canaries_in(bytes: &[u8], tokens: &[String]) -> Vec<String> {
    let haystack = Haystack::new(&String::from_utf8_lossy(bytes));
    tokens
        .iter()
        .filter(|token| Needles::new(token).find(&haystack).is_some())
        .cloned()
        .collect()
}

/// One token and its encoded forms, lowercased where the match ignores case.
struct Needles {
    token: String,
    plain: String,
    hex: String,
    /// (alphabet, the part of the encoding that does not depend on neighbouring bytes).
    base64: Vec<(Encoding, String)>,
}

impl Needles {
    fn new(token: &str) -> Needles {
        let mut base64 = Vec::new();
        for (encoding, alphabet) in [
            (Encoding::Base64, STANDARD),
            (Encoding::Base64Url, URL_SAFE),
        ] {
            for alignment in 0..3 {
                let stable = stable_base64(token.as_bytes(), alignment, alphabet).to_lowercase();
                if !base64.iter().any(|(_, known)| *known == stable) {
                    base64.push((encoding, stable));
                }
            }
        }
        Needles {
            token: token.to_owned(),
            plain: token.to_lowercase(),
            hex: hex::encode(token.as_bytes()),
            base64,
        }
    }

    fn find(&self, haystack: &Haystack) -> Option<Encoding> {
        if self.plain.is_empty() {
            return None;
        }
        let Haystack {
            lower,
            compact,
            percent,
            tags,
        } = haystack;
        if lower.contains(&self.plain) {
            Some(Encoding::Plain)
        } else if lower.contains(&self.hex) {
            Some(Encoding::Hex)
        } else if let Some((encoding, _)) = self.base64.iter().find(|(_, n)| compact.contains(n)) {
            Some(*encoding)
        } else if percent.as_ref().is_some_and(|p| p.contains(&self.plain)) {
            Some(Encoding::Percent)
        } else if tags.contains(&self.plain) {
            Some(Encoding::UnicodeTags)
        } else {
            None
        }
    }
}

/// One string, normalised once for every token looked for in it.
struct Haystack {
    /// Lowercased, zero-width characters removed.
    lower: String,
    /// `lower` without whitespace. Base64 is case-sensitive, but a 30-character needle
    /// does not collide by case, and matching without case also finds tokens in
    /// lowercased DNS names.
    compact: String,
    /// `lower` with every `%XX` decoded, when it has any `%`.
    percent: Option<String>,
    /// What Unicode tag characters spell, lowercased.
    tags: String,
}

impl Haystack {
    fn new(text: &str) -> Haystack {
        let lower: String = text
            .chars()
            .filter(|c| !is_zero_width(*c))
            .collect::<String>()
            .to_lowercase();
        Haystack {
            compact: lower.chars().filter(|c| !c.is_whitespace()).collect(),
            percent: lower.contains('%').then(|| percent_decode(&lower)),
            tags: super::tag_text(text).to_lowercase(),
            lower,
        }
    }
}

/// Zero-width characters that hide inside words (not U+200D, which joins emoji).
pub fn is_zero_width(c: char) -> bool {
    matches!(
        c,
        '\u{200B}' | '\u{200C}' | '\u{2060}' | '\u{FEFF}' | '\u{00AD}'
    )
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The characters of the base64 encoding of `bytes`, preceded by `alignment` other bytes
/// in its 3-byte group, that depend on `bytes` alone: each output character covers 6 bits,
/// so the first `ceil(8·alignment / 6)` mix in the preceding bytes and the last partial
/// one mixes in the following bytes.
fn stable_base64(bytes: &[u8], alignment: usize, alphabet: &[u8; 64]) -> String {
    let mut padded = vec![0u8; alignment];
    padded.extend_from_slice(bytes);
    let encoded = base64(&padded, alphabet);
    let start = (8 * alignment).div_ceil(6);
    let end = (8 * padded.len()) / 6;
    encoded
        .get(start..end.max(start))
        .unwrap_or_default()
        .to_owned()
}

/// Base64 without padding.
fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(alphabet[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// Decodes every `%XX`; anything else is kept as it is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SSH: &str = "vac-canary-ssh-0a1b2c3d4e5f";
    const AWS: &str = "vac-canary-aws-0a1b2c3d4e5f";

    fn tokens() -> Vec<String> {
        vec![SSH.to_owned(), AWS.to_owned()]
    }

    fn text_result(text: &str) -> Value {
        json!({"content": [{"type": "text", "text": text}], "isError": false})
    }

    fn found(text: &str) -> Vec<(String, Encoding)> {
        secrets_in_result(&text_result(text), &tokens())
            .into_iter()
            .map(|f| (f.token, f.encoding))
            .collect()
    }

    fn tags(ascii: &str) -> String {
        ascii
            .chars()
            .map(|c| char::from_u32(0xE0000 + c as u32).unwrap())
            .collect()
    }

    #[test]
    fn every_encoding_of_a_token_is_found() {
        let url_unsafe = "vac-canary-ssh-??>>~~";
        let cases: Vec<(String, Encoding)> = vec![
            (
                format!("archive/id_rsa: -----BEGIN KEY----- {SSH}"),
                Encoding::Plain,
            ),
            (SSH.to_uppercase(), Encoding::Plain),
            (
                "vac-\u{200B}canary-ssh-0a1b2c3d4e5f".to_owned(),
                Encoding::Plain,
            ),
            (format!("blob {}", hex::encode(SSH)), Encoding::Hex),
            (hex::encode(SSH).to_uppercase(), Encoding::Hex),
            (base64(SSH.as_bytes(), STANDARD), Encoding::Base64),
            (
                format!("data: {}", base64(format!("x{SSH}").as_bytes(), STANDARD)),
                Encoding::Base64,
            ),
            (
                base64(format!("xy{SSH}!").as_bytes(), STANDARD),
                Encoding::Base64,
            ),
            (
                // A MIME-wrapped encoding of a longer stream.
                base64(format!("key: {SSH} end").as_bytes(), STANDARD)
                    .as_bytes()
                    .chunks(10)
                    .map(|c| std::str::from_utf8(c).unwrap())
                    .collect::<Vec<_>>()
                    .join("\r\n"),
                Encoding::Base64,
            ),
            (
                SSH.bytes().map(|b| format!("%{b:02X}")).collect(),
                Encoding::Percent,
            ),
            (format!("tips{}", tags(SSH)), Encoding::UnicodeTags),
        ];
        for (text, encoding) in cases {
            assert_eq!(found(&text), [(SSH.to_owned(), encoding)], "{text:?}");
        }
        // Only the url-safe alphabet writes these bytes with `-` and `_`.
        let token = url_unsafe.to_owned();
        let encoded = base64(url_unsafe.as_bytes(), URL_SAFE);
        assert!(encoded.contains(['-', '_']), "{encoded}");
        let findings = secrets_in_result(&text_result(&encoded), &[token]);
        assert_eq!(findings[0].encoding, Encoding::Base64Url);
    }

    #[test]
    fn tokens_are_found_in_every_string_with_their_pointer() {
        let result = json!({
            "content": [
                {"type": "text", "text": "nothing"},
                {"type": "resource", "resource": {"uri": "file:///x", "text": format!("aws = {AWS}")}}
            ],
            "structuredContent": {"files": [{"preview": SSH}], AWS: 1},
            "isError": true
        });
        let findings = secrets_in_result(&result, &tokens());
        let at: Vec<(&str, &str, bool)> = findings
            .iter()
            .map(|f| (f.token.as_str(), f.pointer.as_str(), f.in_key))
            .collect();
        assert_eq!(
            at,
            [
                (AWS, "/content/1/resource/text", false),
                (SSH, "/structuredContent/files/0/preview", false),
                (AWS, &*format!("/structuredContent/{AWS}"), true),
            ]
        );
        let error = json!({"error": {"code": -32000, "message": format!("cannot parse {SSH}")}});
        assert_eq!(
            secrets_in_result(&error, &tokens())[0].pointer,
            "/error/message"
        );
    }

    #[test]
    fn the_prefix_alone_or_another_probes_token_is_not_a_secret() {
        let clean = [
            "this result mentions vac-canary and vac-canary-ssh- but no nonce",
            "vac-canary-ssh-ffffffffffff",
            "vac-canary-arg-0a1b2c3d4e5f",
            "vac-canary-ssh-0a1b2c3d4e5",
            "",
        ];
        for text in clean {
            assert!(found(text).is_empty(), "{text:?}");
        }
        let other = base64(b"vac-canary-ssh-ffffffffffff", STANDARD);
        assert!(found(&other).is_empty());
        assert!(secrets_in_result(&json!(42), &tokens()).is_empty());
        assert!(secrets_in_result(&text_result(SSH), &[String::new()]).is_empty());
    }

    #[test]
    fn canaries_in_bytes_use_the_same_matcher() {
        let dns = base64(AWS.as_bytes(), STANDARD).to_lowercase();
        assert_eq!(
            canaries_in(format!("{dns}.collector").as_bytes(), &tokens()),
            [AWS]
        );
        assert_eq!(
            canaries_in(
                b"POST /x\r\n\r\nkey = vac-canary-ssh-0a1b2c3d4e5f",
                &tokens()
            ),
            [SSH]
        );
        assert!(canaries_in(b"nothing here", &tokens()).is_empty());
    }

    #[test]
    fn base64_matches_the_standard_alphabet() {
        assert_eq!(base64(b"Man", STANDARD), "TWFu");
        assert_eq!(base64(b"Ma", STANDARD), "TWE");
        // "Man" after one other byte: only the characters "Man" alone decides.
        assert_eq!(stable_base64(b"Man", 0, STANDARD), "TWFu");
        let shifted = base64(b"xMan", STANDARD);
        assert!(shifted.contains(&stable_base64(b"Man", 1, STANDARD)));
    }
}
