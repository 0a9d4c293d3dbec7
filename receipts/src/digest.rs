//! The blake3 digest every link, blob and seal is named by.

use std::fmt;

use serde::de::{Unexpected, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A blake3 digest, written as 64 lowercase hex digits.
///
/// Uppercase hex is refused on reading: the canonical form has exactly one
/// spelling of each digest, so a case flip is a change, not a synonym.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

impl Digest {
    /// The `prev` of the first record: 32 zero bytes.
    pub const ZERO: Digest = Digest([0; 32]);

    /// The blake3 digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(*blake3::hash(bytes).as_bytes())
    }

    /// Wraps raw digest bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> Digest {
        Digest(bytes)
    }

    /// The raw digest bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Parses 64 lowercase hex digits; `None` for anything else.
    pub fn from_hex(text: &str) -> Option<Digest> {
        // Every record's `prev` passes here: a table lookup per digit, no allocation.
        const INVALID: u8 = 0xff;
        const NIBBLES: [u8; 256] = {
            let mut table = [INVALID; 256];
            let mut i = 0;
            while i < 16 {
                table[b"0123456789abcdef"[i] as usize] = i as u8;
                i += 1;
            }
            table
        };
        let text = text.as_bytes();
        if text.len() != 64 {
            return None;
        }
        let mut bytes = [0; 32];
        let mut bad = 0;
        for (byte, pair) in bytes.iter_mut().zip(text.chunks_exact(2)) {
            let (high, low) = (NIBBLES[usize::from(pair[0])], NIBBLES[usize::from(pair[1])]);
            bad |= high | low;
            *byte = (high << 4) | low;
        }
        if bad == INVALID || bad & 0xf0 != 0 {
            return None;
        }
        Some(Digest(bytes))
    }

    /// The 64-digit lowercase hex form.
    pub fn to_hex(&self) -> String {
        self.hex_str().to_owned()
    }

    /// The 64 lowercase hex digits, on the stack.
    fn hex_digits(&self) -> [u8; 64] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0; 64];
        for (pair, byte) in out.chunks_exact_mut(2).zip(self.0) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 0x0f)];
        }
        out
    }

    fn hex_str(&self) -> HexStr {
        HexStr(self.hex_digits())
    }
}

/// A digest's hex digits, borrowed as a `str` without allocating.
struct HexStr([u8; 64]);

impl std::ops::Deref for HexStr {
    type Target = str;
    fn deref(&self) -> &str {
        // Only ASCII hex digits are ever written into it.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl From<blake3::Hash> for Digest {
    fn from(hash: blake3::Hash) -> Digest {
        Digest(*hash.as_bytes())
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex_str())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.hex_str())
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Digest, D::Error> {
        deserializer.deserialize_str(DigestVisitor)
    }
}

struct DigestVisitor;

impl Visitor<'_> for DigestVisitor {
    type Value = Digest;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("64 lowercase hex digits")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Digest, E> {
        Digest::from_hex(text).ok_or_else(|| E::invalid_value(Unexpected::Str(text), &self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_refuses_uppercase() {
        let digest = Digest::of(b"receipt");
        assert_eq!(Digest::from_hex(&digest.to_hex()), Some(digest));
        assert_eq!(Digest::from_hex(&digest.to_hex().to_uppercase()), None);
        assert_eq!(Digest::from_hex("00"), None);
        assert_eq!(Digest::ZERO.to_hex(), "0".repeat(64));
    }

    #[test]
    fn serde_uses_the_hex_string() {
        let digest = Digest::of(b"x");
        let json = serde_json::to_string(&digest).expect("serialises");
        assert_eq!(json, format!("\"{digest}\""));
        let back: Digest = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, digest);
    }
}
