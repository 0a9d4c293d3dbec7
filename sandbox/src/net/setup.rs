//! Creating the sinkhole's sockets inside the namespace, then serving them from the host.
//!
//! A network namespace is a property of a thread, and a socket keeps the namespace it was
//! created in: a dedicated thread enters the namespace, adds the routes, creates every
//! socket, hands the descriptors back and ends. Only descriptors cross back, so the caller's
//! threads never change namespace.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

use nix::sys::socket::{
    AddressFamily, Backlog, SockFlag, SockType, SockaddrIn6, bind, listen, setsockopt, socket,
    sockopt,
};
use nix::unistd::Pid;
use tokio::sync::Semaphore;

use super::log::Recorder;
use super::routes::{self, Family};
use super::{NetError, Sinkhole, SinkholeOptions, capture, dns, tcp};
use crate::sys;

/// The sockets of a sinkhole, created in its namespace.
pub(super) struct Sockets {
    capture: OwnedFd,
    diag: netlink_sys::Socket,
    resolvers: Vec<UdpSocket>,
    listeners: Vec<TcpListener>,
}

/// Enters the namespace behind `ns_fd` on a new thread and creates the sockets there.
pub(super) fn in_namespace(
    init_pid: Pid,
    ns_fd: OwnedFd,
    ports: Vec<u16>,
) -> Result<Sockets, NetError> {
    let pid = init_pid.as_raw();
    let thread = std::thread::Builder::new()
        .name("vac-netns".into())
        .spawn(move || {
            sys::enter_net_namespace(ns_fd.as_fd())
                .map_err(|errno| NetError::Enter { pid, errno })?;
            create(&ports)
        })
        .map_err(|source| NetError::Thread { pid, source })?;
    thread.join().unwrap_or_else(|_| {
        Err(NetError::Thread {
            pid,
            source: std::io::Error::other("the namespace thread panicked"),
        })
    })
}

fn create(ports: &[u16]) -> Result<Sockets, NetError> {
    let lo = nix::net::if_::if_nametoindex("lo").map_err(NetError::Loopback)?;
    routes::add_local_default(Family::V4, lo)?;
    routes::add_local_default(Family::V6, lo)?;
    // The capture first, so that it sees everything the other sockets answer.
    let capture = sys::packet_socket().map_err(NetError::Capture)?;
    let _ = setsockopt(&capture, sockopt::RcvBufForce, &(8 << 20));
    let diag = netlink_sys::Socket::new(netlink_sys::protocols::NETLINK_SOCK_DIAG)
        .and_then(|mut s| {
            s.bind_auto()?;
            s.connect(&netlink_sys::SocketAddr::new(0, 0))?;
            Ok(s)
        })
        .map_err(|source| NetError::SockDiag {
            family: 0,
            protocol: 0,
            source,
        })?;
    let v4 = |port| SocketAddr::from((Ipv4Addr::UNSPECIFIED, port));
    let bound = |transport, addr| {
        move |source| NetError::Bind {
            transport,
            addr,
            source,
        }
    };
    let resolvers = vec![
        UdpSocket::bind(v4(53)).map_err(bound("udp", v4(53)))?,
        UdpSocket::from(v6_only(SockType::Datagram, 53).map_err(bound("udp", v6(53)))?),
    ];
    let mut listeners = Vec::with_capacity(ports.len() * 2);
    for &port in ports {
        listeners.push(TcpListener::bind(v4(port)).map_err(bound("tcp", v4(port)))?);
        let fd = v6_only(SockType::Stream, port).map_err(bound("tcp", v6(port)))?;
        listeners.push(TcpListener::from(fd));
    }
    let _ = setsockopt(&resolvers[0], sockopt::RcvBufForce, &(1 << 20));
    Ok(Sockets {
        capture,
        diag,
        resolvers,
        listeners,
    })
}

fn v6(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv6Addr::UNSPECIFIED, port))
}

/// A socket on `[::]:port` that takes IPv6 only (IPv4 has its own socket).
fn v6_only(kind: SockType, port: u16) -> std::io::Result<OwnedFd> {
    let fd = socket(AddressFamily::Inet6, kind, SockFlag::SOCK_CLOEXEC, None)?;
    setsockopt(&fd, sockopt::Ipv6V6Only, &true)?;
    setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    bind(
        std::os::fd::AsRawFd::as_raw_fd(&fd),
        &SockaddrIn6::from(std::net::SocketAddrV6::new(
            Ipv6Addr::UNSPECIFIED,
            port,
            0,
            0,
        )),
    )?;
    if kind == SockType::Stream {
        listen(&fd, Backlog::new(1024).unwrap_or(Backlog::MAXCONN))?;
    }
    Ok(fd)
}

/// Registers the sockets with the current runtime and starts serving them.
pub(super) fn serve(
    sockets: Sockets,
    options: SinkholeOptions,
    netns: PathBuf,
    ports: Vec<u16>,
) -> Result<Sinkhole, NetError> {
    let log = Recorder::new(options.limits, options.epoch);
    let registered = |transport, addr| {
        move |source| NetError::Bind {
            transport,
            addr,
            source,
        }
    };
    let listened: Arc<[u16]> = ports.into();
    let capture = sys::register_async(sockets.capture).map_err(|e| {
        NetError::Capture(nix::errno::Errno::from_raw(
            e.raw_os_error().unwrap_or(libc::EIO),
        ))
    })?;
    let capture = Arc::new(capture);
    let mut tasks = vec![tokio::spawn(capture::serve(
        Arc::clone(&capture),
        log.clone(),
        Arc::clone(&listened),
    ))];
    let mut resolvers = Vec::new();
    for socket in sockets.resolvers {
        let addr = socket.local_addr().unwrap_or(v6(53));
        socket
            .set_nonblocking(true)
            .map_err(registered("udp", addr))?;
        let socket =
            Arc::new(tokio::net::UdpSocket::from_std(socket).map_err(registered("udp", addr))?);
        tasks.push(tokio::spawn(dns::serve_udp(
            Arc::clone(&socket),
            log.clone(),
        )));
        resolvers.push(socket);
    }
    let open = Arc::new(Semaphore::new(options.max_open));
    for listener in sockets.listeners {
        let addr = listener.local_addr().unwrap_or(v6(0));
        listener
            .set_nonblocking(true)
            .map_err(registered("tcp", addr))?;
        let listener =
            tokio::net::TcpListener::from_std(listener).map_err(registered("tcp", addr))?;
        tasks.push(tokio::spawn(tcp::serve(
            listener,
            log.clone(),
            Arc::clone(&open),
            options.idle,
        )));
    }
    Ok(Sinkhole {
        log,
        probe_name: options.probe_name,
        proc_root: options.proc_root,
        netns,
        listened,
        resolvers,
        capture,
        diag: sockets.diag,
        tasks,
    })
}
