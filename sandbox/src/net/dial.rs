//! [`NamespaceDialer`]: TCP connections from the host into a run's network namespace, so
//! that a client on the host can reach a server listening inside the sandbox (its
//! `127.0.0.1` is the namespace's own loopback).

use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::sys;

/// Why a connection into the namespace failed; names the namespace and the address.
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    #[error("cannot open the network namespace {path}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot enter the network namespace {path}")]
    Enter {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot connect to {addr} inside the network namespace {path}")]
    Connect {
        addr: SocketAddr,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Opens TCP connections inside one run's network namespace. Cheap to clone; holding it
/// keeps the namespace open (not the run).
#[derive(Debug, Clone)]
pub struct NamespaceDialer {
    path: PathBuf,
    namespace: Arc<OwnedFd>,
}

impl NamespaceDialer {
    /// The namespace of `/proc/<pid>/ns/net` under `proc_root`.
    pub(crate) fn open(proc_root: &std::path::Path, pid: i32) -> Result<Self, DialError> {
        let path = proc_root.join(format!("{pid}/ns/net"));
        let file = std::fs::File::open(&path).map_err(|source| DialError::Open {
            path: path.clone(),
            source,
        })?;
        Ok(Self {
            path,
            namespace: Arc::new(OwnedFd::from(file)),
        })
    }

    /// Connects to `addr` from inside the namespace, waiting at most `timeout`. A
    /// short-lived thread enters the namespace and connects; the socket keeps the
    /// namespace, so the stream is then used from anywhere.
    pub fn connect(&self, addr: SocketAddr, timeout: Duration) -> Result<TcpStream, DialError> {
        let namespace = Arc::clone(&self.namespace);
        let thread = std::thread::Builder::new()
            .name("vac-netns-dial".into())
            .spawn(
                move || -> Result<TcpStream, Result<std::io::Error, std::io::Error>> {
                    sys::enter_net_namespace(namespace.as_fd())
                        .map_err(|errno| Err(std::io::Error::from(errno)))?;
                    TcpStream::connect_timeout(&addr, timeout).map_err(Ok)
                },
            );
        let joined = match thread {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(Ok(std::io::Error::other("the dial thread panicked")))),
            Err(source) => Err(Ok(source)),
        };
        joined.map_err(|error| match error {
            Err(source) => DialError::Enter {
                path: self.path.clone(),
                source,
            },
            Ok(source) => DialError::Connect {
                addr,
                path: self.path.clone(),
                source,
            },
        })
    }
}
