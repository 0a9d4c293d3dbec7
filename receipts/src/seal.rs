//! The seal: the head hash and record count, a digest binding them to the seal's
//! timestamp, and optionally an ed25519 signature over the same message.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};

use crate::body::Seal;
use crate::digest::Digest;

/// Why a seal does not hold.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("seal names head {found}, but the last record hashes to {expected}")]
    Head { expected: Digest, found: Digest },
    #[error("seal counts {found} records, but {expected} precede it")]
    Count { expected: u64, found: u64 },
    #[error("seal digest {found} is not the blake3 of its message ({expected})")]
    Digest { expected: Digest, found: Digest },
    #[error("seal has a public key or a signature but not both")]
    HalfSigned,
    #[error("seal {field} is not lowercase hex of {bytes} bytes")]
    BadHex { field: &'static str, bytes: usize },
    #[error("seal public key is not a valid ed25519 key")]
    BadKey(#[source] ed25519_dalek::SignatureError),
    #[error("seal signature does not verify")]
    BadSignature(#[source] ed25519_dalek::SignatureError),
    #[error("seal is signed by {found}, not by the trusted key {trusted}")]
    UntrustedKey { trusted: String, found: String },
    #[error("seal is unsigned, but a trusted key was given")]
    Unsigned,
}

/// What the signature check established.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignatureStatus {
    /// No signature; integrity rests on the chain and on the head being published.
    Unsigned,
    /// Signed by the key embedded in the seal, which the caller did not vouch for.
    SelfConsistent { public_key: String },
    /// Signed by the key the caller trusts.
    Trusted { public_key: String },
}

/// The bytes a seal's digest and signature cover:
/// `"vac-receipts/seal/v1\n"`, then `head` (32 bytes), `count` and the seal record's
/// `ts` (each as 8 little-endian bytes).
pub fn seal_message(head: &Digest, count: u64, ts: u64) -> Vec<u8> {
    let mut message = b"vac-receipts/seal/v1\n".to_vec();
    message.extend_from_slice(head.as_bytes());
    message.extend_from_slice(&count.to_le_bytes());
    message.extend_from_slice(&ts.to_le_bytes());
    message
}

pub(crate) fn make_seal(head: Digest, count: u64, ts: u64, key: Option<&SigningKey>) -> Seal {
    let message = seal_message(&head, count, ts);
    Seal {
        head,
        count,
        digest: Digest::of(&message),
        public_key: key.map(|k| hex::encode(k.verifying_key().as_bytes())),
        signature: key.map(|k| hex::encode(k.sign(&message).to_bytes())),
    }
}

/// Checks `seal` (from a record with timestamp `ts`) against the chain it closes.
pub(crate) fn check_seal(
    seal: &Seal,
    ts: u64,
    head: Digest,
    count: u64,
    trusted: Option<&VerifyingKey>,
) -> Result<SignatureStatus, SealError> {
    if seal.count != count {
        return Err(SealError::Count {
            expected: count,
            found: seal.count,
        });
    }
    if seal.head != head {
        return Err(SealError::Head {
            expected: head,
            found: seal.head,
        });
    }
    let message = seal_message(&seal.head, seal.count, ts);
    let expected = Digest::of(&message);
    if seal.digest != expected {
        return Err(SealError::Digest {
            expected,
            found: seal.digest,
        });
    }
    let (key_hex, sig_hex) = match (&seal.public_key, &seal.signature) {
        (None, None) if trusted.is_some() => return Err(SealError::Unsigned),
        (None, None) => return Ok(SignatureStatus::Unsigned),
        (Some(key), Some(sig)) => (key, sig),
        _ => return Err(SealError::HalfSigned),
    };
    let key_bytes: [u8; 32] = lower_hex(key_hex, "public key")?;
    let sig_bytes: [u8; 64] = lower_hex(sig_hex, "signature")?;
    let key = VerifyingKey::from_bytes(&key_bytes).map_err(SealError::BadKey)?;
    key.verify_strict(&message, &Signature::from_bytes(&sig_bytes))
        .map_err(SealError::BadSignature)?;
    match trusted {
        Some(trusted) if trusted != &key => Err(SealError::UntrustedKey {
            trusted: hex::encode(trusted.as_bytes()),
            found: key_hex.clone(),
        }),
        Some(_) => Ok(SignatureStatus::Trusted {
            public_key: key_hex.clone(),
        }),
        None => Ok(SignatureStatus::SelfConsistent {
            public_key: key_hex.clone(),
        }),
    }
}

// Uppercase hex decodes to the same key, so it is refused to keep one spelling per seal.
fn lower_hex<const N: usize>(text: &str, field: &'static str) -> Result<[u8; N], SealError> {
    let mut out = [0u8; N];
    let lower = text
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    match hex::decode_to_slice(text, &mut out) {
        Ok(()) if lower => Ok(out),
        _ => Err(SealError::BadHex { field, bytes: N }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> SigningKey {
        SigningKey::from_bytes(&[byte; 32])
    }

    #[test]
    fn signed_seal_checks_against_the_trusted_key() {
        let head = Digest::of(b"head");
        let seal = make_seal(head, 9, 100, Some(&key(1)));
        let trusted = key(1).verifying_key();
        let status = check_seal(&seal, 100, head, 9, Some(&trusted)).expect("valid");
        assert!(matches!(status, SignatureStatus::Trusted { .. }));
        let other = key(2).verifying_key();
        assert!(matches!(
            check_seal(&seal, 100, head, 9, Some(&other)),
            Err(SealError::UntrustedKey { .. })
        ));
    }

    #[test]
    fn the_timestamp_is_bound_even_without_a_signature() {
        let head = Digest::of(b"head");
        let seal = make_seal(head, 9, 100, None);
        assert_eq!(
            check_seal(&seal, 100, head, 9, None).expect("valid"),
            SignatureStatus::Unsigned
        );
        assert!(matches!(
            check_seal(&seal, 101, head, 9, None),
            Err(SealError::Digest { .. })
        ));
    }

    #[test]
    fn uppercase_signature_hex_is_refused() {
        let head = Digest::of(b"head");
        let mut seal = make_seal(head, 1, 1, Some(&key(3)));
        seal.signature = seal.signature.map(|s| s.to_uppercase());
        assert!(matches!(
            check_seal(&seal, 1, head, 1, None),
            Err(SealError::BadHex { .. })
        ));
    }
}
