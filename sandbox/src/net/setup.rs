//! Creating the sinkhole's sockets inside the namespace, then serving them from the host.
//!
//! A network namespace is a property of a thread, and a socket keeps the namespace it was
//! created in: a dedicated thread enters the namespace, adds the routes, creates every
//! socket, hands the descriptors back and ends. Only descriptors cross back, so the caller's
//! threads never change namespace.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

use netlink_packet_route::route::RouteType;
use nix::sys::socket::{
    AddressFamily, Backlog, SockFlag, SockType, SockaddrIn6, bind, listen, setsockopt, socket,
    sockopt,
};
use nix::unistd::Pid;
use tokio::sync::Semaphore;

use super::link::{Route, Rtnl, TABLE_LOCAL, TABLE_MAIN};
use super::log::Recorder;
use super::{NetError, Sinkhole, SinkholeOptions, capture, dns, tcp, tls};
use crate::sys;

/// The sockets of a sinkhole: the capture, the socket diagnostics and the resolvers of
/// loopback nameservers in the run's namespace; the other resolvers and the listeners in
/// the sinkhole's own, so that the run sees none of them (not in its `/proc/net/tcp`, nor
/// through sock_diag).
pub(super) struct Sockets {
    /// The link's two ends the wire carries frames between: a packet socket on the far end
    /// of the run's veth pair, and the sinkhole's TAP device.
    link: (OwnedFd, OwnedFd),
    capture: OwnedFd,
    diag: netlink_sys::Socket,
    resolvers: Vec<UdpSocket>,
    listeners: Vec<TcpListener>,
}

/// The link between the two namespaces, as a virtual machine's user network shows it: the
/// run's `eth0` with a private address and a default route to the sinkhole's side.
const RUN_LINK: &str = "eth0";
const SINK_LINK: &str = "uplink0";
/// The far end of the run's veth pair, in the wire's namespace.
const WIRE_LINK: &str = "wire0";
const RUN_V4: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 15);
const SINK_V4: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
const RUN_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 0x15);
const SINK_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2);
/// How long a link is waited for to come up before a run goes on without it.
const LINK_WATCH: std::time::Duration = std::time::Duration::from_secs(2);

/// Makes the sinkhole's namespace, joins it to the run's (behind `ns_fd`), and creates the
/// sockets on each side. The run's `eth0` is one end of a veth pair, as a container's is;
/// the other end lies in a third namespace of its own with no address, where a packet
/// socket takes its frames and the [`super::wire::Wire`] carries them to the sinkhole's TAP
/// device and back. Each namespace is entered by a thread of its own;
/// the sinkhole's lives as long as its sockets (the kernel reclaims it with the last).
pub(super) fn in_namespace(
    init_pid: Pid,
    ns_fd: OwnedFd,
    ports: Vec<u16>,
) -> Result<Sockets, NetError> {
    let pid = init_pid.as_raw();
    let sink_ns = on_thread(pid, move || {
        sys::new_net_namespace().map_err(|errno| NetError::Enter { pid, errno })?;
        sys::loopback_up().map_err(NetError::Loopback)?;
        std::fs::File::open("/proc/thread-self/ns/net")
            .map(OwnedFd::from)
            .map_err(|source| NetError::Namespace { pid, source })
    })?;
    // The wire's namespace holds nothing but the veth's far end: no address, no IPv6, so
    // its kernel answers nothing and forwards nothing, and every frame is the wire's.
    let wire_ns = on_thread(pid, move || {
        sys::new_net_namespace().map_err(|errno| NetError::Enter { pid, errno })?;
        for conf in ["all", "default"] {
            let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{conf}/disable_ipv6"), "1");
        }
        std::fs::File::open("/proc/thread-self/ns/net")
            .map(OwnedFd::from)
            .map_err(|source| NetError::Namespace { pid, source })
    })?;
    let wire_for_run = wire_ns
        .try_clone()
        .map_err(|source| NetError::Namespace { pid, source })?;
    let run_ns = ns_fd
        .try_clone()
        .map_err(|source| NetError::Namespace { pid, source })?;
    let (capture, diag, loopback) = on_thread(pid, move || {
        sys::enter_net_namespace(ns_fd.as_fd()).map_err(|errno| NetError::Enter { pid, errno })?;
        run_side(wire_for_run.as_fd())
    })?;
    let run_link = on_thread(pid, move || {
        sys::enter_net_namespace(wire_ns.as_fd())
            .map_err(|errno| NetError::Enter { pid, errno })?;
        let wire = index(WIRE_LINK)?;
        Rtnl::open()?.up(wire, WIRE_LINK)?;
        sys::link_socket(wire).map_err(|errno| NetError::Link {
            what: format!("open a packet socket on {WIRE_LINK}"),
            source: errno.into(),
        })
    })?;
    let (sink_link, mut resolvers, listeners) = on_thread(pid, move || {
        sys::enter_net_namespace(sink_ns.as_fd())
            .map_err(|errno| NetError::Enter { pid, errno })?;
        sink_side(&ports)
    })?;
    // The run's end of the link came up with the sinkhole's: wait for it too.
    on_thread(pid, move || {
        sys::enter_net_namespace(run_ns.as_fd()).map_err(|errno| NetError::Enter { pid, errno })?;
        Rtnl::open()?.wait_up(index(RUN_LINK)?, RUN_LINK, LINK_WATCH)
    })?;
    resolvers.extend(loopback);
    Ok(Sockets {
        link: (run_link, sink_link),
        capture,
        diag,
        resolvers,
        listeners,
    })
}

/// Runs `work` on a thread of its own (which may change namespace) and returns its result.
fn on_thread<T: Send + 'static>(
    pid: i32,
    work: impl FnOnce() -> Result<T, NetError> + Send + 'static,
) -> Result<T, NetError> {
    let thread = std::thread::Builder::new()
        .name("vac-netns".into())
        .spawn(work)
        .map_err(|source| NetError::Thread { pid, source })?;
    thread.join().unwrap_or_else(|_| {
        Err(NetError::Thread {
            pid,
            source: std::io::Error::other("the namespace thread panicked"),
        })
    })
}

/// In the run's namespace: the veth pair (its peer in `wire`), `eth0`'s addresses and
/// default routes, the capture, the socket diagnostics, and a resolver on each loopback
/// nameserver the resolver configuration names (a local stub such as systemd-resolved's
/// `127.0.0.53` is where a real machine has one too).
fn run_side(
    wire: std::os::fd::BorrowedFd<'_>,
) -> Result<(OwnedFd, netlink_sys::Socket, Vec<UdpSocket>), NetError> {
    let rtnl = Rtnl::open()?;
    rtnl.add_veth(RUN_LINK, WIRE_LINK, wire)?;
    let eth0 = index(RUN_LINK)?;
    rtnl.add_address(eth0, RUN_V4.into(), 24)?;
    rtnl.add_address(eth0, RUN_V6.into(), 64)?;
    rtnl.up(eth0, RUN_LINK)?;
    for (any, gateway) in [
        (IpAddr::from(Ipv4Addr::UNSPECIFIED), IpAddr::from(SINK_V4)),
        (Ipv6Addr::UNSPECIFIED.into(), SINK_V6.into()),
    ] {
        rtnl.add_route(Route {
            kind: RouteType::Unicast,
            destination: any,
            prefix: 0,
            gateway: Some(gateway),
            index: eth0,
            table: TABLE_MAIN,
        })?;
    }
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
    let conf = std::fs::read(super::probe::RESOLV_CONF).unwrap_or_default();
    let mut resolvers = Vec::new();
    for server in super::probe::loopback_nameservers(&conf) {
        let addr = SocketAddr::new(server, 53);
        let socket = UdpSocket::bind(addr).map_err(|source| NetError::Bind {
            transport: "udp",
            addr,
            source,
        })?;
        let _ = setsockopt(&socket, sockopt::RcvBufForce, &(1 << 20));
        resolvers.push(socket);
    }
    Ok((capture, diag, resolvers))
}

/// In the sinkhole's namespace: its side of the link, every address local but the run's
/// (`local 0.0.0.0/0` and `local ::/0` on `lo` in table `local`, beside routes back to the
/// run's addresses and link-local ones), the resolvers and the listeners. IPv4 link-local
/// addresses are unreachable, as from a machine that is no cloud instance: the metadata
/// address (169.254.169.254) answers nothing, where a sinkhole's page told it (the attempt
/// is still captured as it leaves the run's `eth0`).
#[allow(clippy::type_complexity)]
fn sink_side(ports: &[u16]) -> Result<(OwnedFd, Vec<UdpSocket>, Vec<TcpListener>), NetError> {
    let rtnl = Rtnl::open()?;
    let link = sys::open_tap(SINK_LINK).map_err(|errno| NetError::Link {
        what: format!("open the TAP device {SINK_LINK}"),
        source: errno.into(),
    })?;
    let uplink = index(SINK_LINK)?;
    rtnl.add_address(uplink, SINK_V4.into(), 24)?;
    rtnl.add_address(uplink, SINK_V6.into(), 64)?;
    rtnl.up(uplink, SINK_LINK)?;
    let lo = index("lo")?;
    let route = |kind, destination: IpAddr, prefix, index| Route {
        kind,
        destination,
        prefix,
        gateway: None,
        index,
        table: TABLE_LOCAL,
    };
    for back in [
        route(RouteType::Unicast, RUN_V4.into(), 32, uplink),
        route(RouteType::Unicast, RUN_V6.into(), 128, uplink),
        route(
            RouteType::Unicast,
            Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0).into(),
            64,
            uplink,
        ),
        route(RouteType::Local, Ipv4Addr::UNSPECIFIED.into(), 0, lo),
        route(RouteType::Local, Ipv6Addr::UNSPECIFIED.into(), 0, lo),
        route(
            RouteType::Unreachable,
            Ipv4Addr::new(169, 254, 0, 0).into(),
            16,
            lo,
        ),
    ] {
        rtnl.add_route(back)?;
    }
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
    for (socket, v6) in resolvers.iter().zip([false, true]) {
        sys::want_destination(socket.as_fd(), v6).map_err(|errno| NetError::Bind {
            transport: "udp",
            addr: socket.local_addr().unwrap_or(self::v6(53)),
            source: errno.into(),
        })?;
    }
    // The link came up as the sockets were made: the kernel has seen it by now, mostly.
    rtnl.wait_up(uplink, SINK_LINK, LINK_WATCH)?;
    Ok((link, resolvers, listeners))
}

/// The index of the interface `name` in the calling thread's namespace.
fn index(name: &str) -> Result<u32, NetError> {
    nix::net::if_::if_nametoindex(name).map_err(|errno| NetError::Link {
        what: format!("find the interface {name}"),
        source: errno.into(),
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
    let (run_link, sink_link) = sockets.link;
    let wire = super::wire::Wire::start(run_link, sink_link).map_err(|source| NetError::Link {
        what: "start the link between the namespaces".into(),
        source,
    })?;
    let capture = sys::register_async(sockets.capture).map_err(|e| {
        NetError::Capture(nix::errno::Errno::from_raw(
            e.raw_os_error().unwrap_or(libc::EIO),
        ))
    })?;
    let capture = Arc::new(crate::aside::ClosedAside::new(capture));
    let mut tasks = vec![tokio::spawn(capture::serve(
        Arc::clone(&capture),
        log.clone(),
        Arc::clone(&listened),
    ))];
    let mut resolvers = Vec::new();
    let cache = Arc::new(dns::Cache::new());
    let answers = Arc::new(tcp::Answers {
        dns: Arc::clone(&cache),
        tls: tls::Gateway::new(),
    });
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
            Arc::clone(&cache),
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
            Arc::clone(&answers),
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
        cache,
        wire,
        capture,
        diag: sockets.diag,
        tasks,
        reading: open,
        max_open: options.max_open,
    })
}
