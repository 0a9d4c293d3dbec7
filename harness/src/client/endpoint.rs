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
    #[error("{url}: only http:// URLs are supported")]
    Scheme { url: String },
    #[error("{url}: no host")]
    NoHost { url: String },
    #[error("{url}: bad port {port:?}")]
    Port { url: String, port: String },
}

/// A Streamable HTTP endpoint: `http://host[:port]/path`, reached over plain TCP or through
/// a [`Dial`] (a sandbox's network namespace).
#[derive(Clone)]
pub struct HttpEndpoint {
    url: String,
    host: String,
    port: u16,
    path: String,
    dial: Dial,
}

impl HttpEndpoint {
    /// Parses `url`; the connection is made from the host's network namespace.
    pub fn parse(url: &str) -> Result<Self, UrlError> {
        let Some(rest) = url.strip_prefix("http://") else {
            return Err(UrlError::Scheme { url: url.into() });
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
            _ => (authority, 80),
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
        })
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
        assert!(matches!(
            HttpEndpoint::parse("https://a/"),
            Err(UrlError::Scheme { .. })
        ));
        assert!(matches!(
            HttpEndpoint::parse("http://a:x/"),
            Err(UrlError::Port { .. })
        ));
    }
}
