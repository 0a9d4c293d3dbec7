//! TLS as an intercepting gateway ends it: every ClientHello gets a certificate for the
//! name it asked for, issued by a root of the run's own that no client trusts.
//!
//! A client that verifies certificates (the default nearly everywhere) fails the handshake
//! with an unknown issuer, as behind a corporate TLS proxy; one that does not verify
//! completes it and sends its request, which the sinkhole reads, records and answers as the
//! host's site ([`super::web`]). Where the sinkhole once closed the connection ~17 ms into
//! the handshake, a server can no longer tell it apart from an ordinary network by TLS
//! alone. The root and the leaf key are made once per run; each name's certificate on first
//! use (at most [`MAX_NAMES`] kept).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, KeyPair, KeyUsagePurpose,
    SanType,
};
use rustls::crypto::ring::sign::any_supported_type;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::TlsAcceptor;

/// Server names whose certificates are kept; past this, each is made anew.
const MAX_NAMES: usize = 256;

/// A run's TLS gateway: its root, its leaf key, the certificates made so far.
pub(crate) struct Gateway {
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway with a new root; `None` if the keys cannot be made (the sinkhole then
    /// closes TLS connections as it reads them, as before).
    pub(crate) fn new() -> Option<Gateway> {
        let issuer = Issuer::new()?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .ok()?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(issuer));
        Some(Gateway {
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    pub(crate) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }
}

/// Issues a certificate for each server name, signed by the run's root.
struct Issuer {
    root: rcgen::Certificate,
    root_key: KeyPair,
    leaf_key: KeyPair,
    signing_key: Arc<dyn rustls::sign::SigningKey>,
    issued: Mutex<HashMap<String, Arc<CertifiedKey>>>,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer").finish_non_exhaustive()
    }
}

impl Issuer {
    fn new() -> Option<Issuer> {
        let root_key = KeyPair::generate().ok()?;
        let mut params = CertificateParams::new(Vec::<String>::new()).ok()?;
        params.distinguished_name = name(&[
            (DnType::CommonName, "Secure Web Gateway Root CA"),
            (DnType::OrganizationName, "Network Security"),
            (DnType::CountryName, "US"),
        ]);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::days(412);
        params.not_after = now + time::Duration::days(3238);
        let root = params.self_signed(&root_key).ok()?;
        let leaf_key = KeyPair::generate().ok()?;
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let signing_key = any_supported_type(&der).ok()?;
        Some(Issuer {
            root,
            root_key,
            leaf_key,
            signing_key,
            issued: Mutex::new(HashMap::new()),
        })
    }

    /// A certificate for `host` (a name, or an address when the client sent none), valid
    /// from some weeks ago for three months, as an issuing gateway's are.
    fn issue(&self, host: &str) -> Option<Arc<CertifiedKey>> {
        let mut params = CertificateParams::new(Vec::<String>::new()).ok()?;
        params.subject_alt_names = vec![match host.parse::<std::net::IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(host.to_string().try_into().ok()?),
        }];
        params.distinguished_name = name(&[(DnType::CommonName, host)]);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let age = 3 + i64::from(blake3::hash(host.as_bytes()).as_bytes()[0] % 60);
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::days(age);
        params.not_after = params.not_before + time::Duration::days(90);
        let leaf = params
            .signed_by(&self.leaf_key, &self.root, &self.root_key)
            .ok()?;
        let chain: Vec<CertificateDer<'static>> = vec![leaf.der().clone(), self.root.der().clone()];
        Some(Arc::new(CertifiedKey::new(
            chain,
            Arc::clone(&self.signing_key),
        )))
    }
}

fn name(parts: &[(DnType, &str)]) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    for (kind, value) in parts {
        name.push(kind.clone(), *value);
    }
    name
}

impl ResolvesServerCert for Issuer {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let host = hello
            .server_name()
            .unwrap_or("localhost")
            .to_ascii_lowercase();
        let mut issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(key) = issued.get(&host) {
            return Some(Arc::clone(key));
        }
        let key = self.issue(&host)?;
        if issued.len() < MAX_NAMES {
            issued.insert(host, Arc::clone(&key));
        }
        Some(key)
    }
}

/// A stream whose first bytes, already read to name the connection, are read again: the
/// TLS handshake starts from the ClientHello the listener kept.
pub(crate) struct Replay<S> {
    head: Vec<u8>,
    at: usize,
    stream: S,
}

impl<S> Replay<S> {
    pub(crate) fn new(head: Vec<u8>, stream: S) -> Replay<S> {
        Replay {
            head,
            at: 0,
            stream,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Replay<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.at < self.head.len() {
            let n = buf.remaining().min(self.head.len() - self.at);
            let at = self.at;
            buf.put_slice(&self.head[at..at + n]);
            self.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Replay<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::client::danger::ServerCertVerifier;

    /// The chain a client receives: a leaf for the name it asked for, valid now, signed by
    /// a root that is in no trust store (so verification fails as behind an intercepting
    /// proxy), and the same leaf for the same name.
    #[test]
    fn a_name_gets_its_own_certificate_from_an_untrusted_root() {
        let issuer = Issuer::new().unwrap();
        let key = issuer.issue("api.github.com").unwrap();
        assert_eq!(key.cert.len(), 2);
        let mut roots = rustls::RootCertStore::empty();
        roots.add(key.cert[1].clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let trusting = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::clone(&provider),
        )
        .build()
        .unwrap();
        let now = rustls_pki_types::UnixTime::now();
        let name = rustls_pki_types::ServerName::try_from("api.github.com").unwrap();
        // Valid for its name under its own root (so a client that trusts nothing but it,
        // or verifies nothing, completes the handshake) …
        assert!(
            trusting
                .verify_server_cert(&key.cert[0], &[], &name, &[], now)
                .is_ok()
        );
        let other = rustls_pki_types::ServerName::try_from("pypi.org").unwrap();
        assert!(
            trusting
                .verify_server_cert(&key.cert[0], &[], &other, &[], now)
                .is_err()
        );
        // … and refused by a client whose store holds other roots (here another run's, of
        // the same name: the signature tells them apart).
        let stranger = Issuer::new().unwrap();
        let mut others = rustls::RootCertStore::empty();
        others.add(stranger.root.der().clone()).unwrap();
        let ordinary =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(others), provider)
                .build()
                .unwrap();
        let refused = ordinary.verify_server_cert(&key.cert[0], &[], &name, &[], now);
        assert!(
            matches!(
                refused,
                Err(rustls::Error::InvalidCertificate(
                    rustls::CertificateError::BadSignature
                        | rustls::CertificateError::UnknownIssuer
                ))
            ),
            "{refused:?}"
        );
    }
}
