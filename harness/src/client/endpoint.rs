//! [`HttpEndpoint`]: where a Streamable HTTP server listens and how vac reaches it.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

/// Opens one TCP connection to an address within a time limit (blocking; vac calls it off
/// the runtime's threads).
pub type Dial = Arc<dyn Fn(SocketAddr, Duration) -> std::io::Result<TcpStream> + Send + Sync>;

/// Why a URL cannot be used; names the URL.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    #[error("{url}: only http:// and https:// URLs are supported")]
    Scheme { url: String },
    #[error("{url}: no host")]
    NoHost { url: String },
    #[error("{url}: bad port {port:?}")]
    Port { url: String, port: String },
}

/// Why vac cannot speak TLS as asked; names the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("--ca {path}: {detail}")]
    Ca { path: String, detail: String },
    #[error("the system's CA store cannot be read, and no --ca was given: {detail}")]
    NoRoots { detail: String },
}

/// A Streamable HTTP endpoint: `http://host[:port]/path` or `https://…`, reached over
/// plain TCP (TLS on top for https, verified against the system's CA store and any `--ca`)
/// or through a [`Dial`] (a sandbox's network namespace).
#[derive(Clone)]
pub struct HttpEndpoint {
    url: String,
    host: String,
    port: u16,
    path: String,
    dial: Dial,
    /// For https: how the server's certificate is verified.
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl HttpEndpoint {
    /// Parses `url`; the connection is made from the host's network namespace. An https
    /// URL is verified against the system's CA store until [`HttpEndpoint::trust`] says
    /// otherwise.
    pub fn parse(url: &str) -> Result<Self, UrlError> {
        let (rest, tls) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
            (Some(rest), _) => (rest, false),
            (None, Some(rest)) => (rest, true),
            (None, None) => return Err(UrlError::Scheme { url: url.into() }),
        };
        let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => {
                let number = port.parse::<u16>().map_err(|_| UrlError::Port {
                    url: url.into(),
                    port: port.into(),
                })?;
                (host, number)
            }
            _ => (authority, if tls { 443 } else { 80 }),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(UrlError::NoHost { url: url.into() });
        }
        let path = match path {
            "" => "/".to_string(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_string(),
        };
        Ok(Self {
            url: url.into(),
            host: host.into(),
            port,
            path,
            dial: Arc::new(|addr, timeout| TcpStream::connect_timeout(&addr, timeout)),
            tls: tls.then(|| Arc::new(client_config(rustls::RootCertStore::empty()))),
        })
    }

    /// Whether the endpoint speaks TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// For an https endpoint: trusts the system's CA store and the certificates of the
    /// PEM file `ca` (a private CA). There is no way to trust nothing: vac never skips
    /// verification.
    pub fn trust(mut self, ca: Option<&std::path::Path>) -> Result<Self, TlsError> {
        if self.tls.is_none() {
            return Ok(self);
        }
        let mut roots = rustls::RootCertStore::empty();
        let native = rustls_native_certs::load_native_certs();
        let (system, _) = roots.add_parsable_certificates(native.certs);
        if let Some(path) = ca {
            use rustls_pki_types::pem::PemObject;
            let shown = path.display().to_string();
            let certs = rustls_pki_types::CertificateDer::pem_file_iter(path)
                .map_err(|e| TlsError::Ca {
                    path: shown.clone(),
                    detail: e.to_string(),
                })?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| TlsError::Ca {
                    path: shown.clone(),
                    detail: e.to_string(),
                })?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(TlsError::Ca {
                    path: shown,
                    detail: "holds no certificate vac can use".into(),
                });
            }
        } else if system == 0 {
            return Err(TlsError::NoRoots {
                detail: native
                    .errors
                    .first()
                    .map_or("it holds no certificate".into(), |e| e.to_string()),
            });
        }
        self.tls = Some(Arc::new(client_config(roots)));
        Ok(self)
    }

    /// The TLS session's configuration and the name the certificate must carry.
    pub(crate) fn tls(
        &self,
    ) -> Option<(
        Arc<rustls::ClientConfig>,
        rustls_pki_types::ServerName<'static>,
    )> {
        let config = self.tls.clone()?;
        let name = rustls_pki_types::ServerName::try_from(self.host.clone()).ok()?;
        Some((config, name))
    }

    /// The same endpoint, reached through `dial` instead.
    pub fn via(mut self, dial: Dial) -> Self {
        self.dial = dial;
        self
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The request target (path and query).
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The `Host` header.
    pub(crate) fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Resolves the host and connects to its first address.
    pub(crate) fn connect(&self, timeout: Duration) -> std::io::Result<TcpStream> {
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| std::io::Error::other(format!("{} has no address", self.host)))?;
        (self.dial)(addr, timeout)
    }
}

/// A client configuration on ring that trusts `roots`.
fn client_config(roots: rustls::RootCertStore) -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

impl std::fmt::Debug for HttpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEndpoint")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_authority_and_path() {
        let e = HttpEndpoint::parse("http://127.0.0.1:8931/mcp").unwrap();
        assert_eq!((e.authority(), e.path()), ("127.0.0.1:8931".into(), "/mcp"));
        let e = HttpEndpoint::parse("http://[::1]:9/x?y=1").unwrap();
        assert_eq!((e.authority(), e.path()), ("[::1]:9".into(), "/x?y=1"));
        let e = HttpEndpoint::parse("http://localhost").unwrap();
        assert_eq!((e.authority(), e.path()), ("localhost:80".into(), "/"));
        let e = HttpEndpoint::parse("https://mcp.example.com/v1").unwrap();
        assert_eq!(
            (e.authority(), e.path()),
            ("mcp.example.com:443".into(), "/v1")
        );
        assert!(e.is_tls());
        assert!(matches!(
            HttpEndpoint::parse("ftp://a/"),
            Err(UrlError::Scheme { .. })
        ));
        assert!(matches!(
            HttpEndpoint::parse("http://a:x/"),
            Err(UrlError::Port { .. })
        ));
    }
}
