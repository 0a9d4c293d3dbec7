//! The rtnetlink requests that join a run's network namespace to the sinkhole's (through
//! the wire's, `wire.rs`): a veth pair, addresses, links up and routes, each a request the
//! kernel acknowledges, made in the
//! namespace of the calling thread.

use std::net::IpAddr;
use std::os::fd::{AsRawFd, BorrowedFd};

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage,
    NetlinkPayload,
};
use netlink_packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage,
};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVeth, LinkAttribute, LinkFlags, LinkInfo, LinkMessage, State,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

use super::NetError;

/// The routing table looked up first (`local`).
pub(crate) const TABLE_LOCAL: u8 = 255;
/// The table of ordinary routes (`main`).
pub(crate) const TABLE_MAIN: u8 = 254;

/// One rtnetlink connection of the calling thread's namespace.
pub(crate) struct Rtnl {
    socket: Socket,
}

impl Rtnl {
    pub(crate) fn open() -> Result<Rtnl, NetError> {
        let failed = |source| NetError::Link {
            what: "open rtnetlink".into(),
            source,
        };
        let mut socket = Socket::new(NETLINK_ROUTE).map_err(failed)?;
        socket.bind_auto().map_err(failed)?;
        socket.connect(&SocketAddr::new(0, 0)).map_err(failed)?;
        Ok(Rtnl { socket })
    }

    /// Sends `message` with create flags and waits for its acknowledgement; `what` names it
    /// in the error.
    fn request(&self, message: RouteNetlinkMessage, what: String) -> Result<(), NetError> {
        let flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
        match self.exchange(message, flags, &what)? {
            NetlinkPayload::Error(_) => Ok(()),
            other => Err(unexpected(&what, &other)),
        }
    }

    /// Sends `message` with `flags` and reads the kernel's one answer; a refusal is the
    /// error, naming `what`.
    fn exchange(
        &self,
        message: RouteNetlinkMessage,
        flags: u16,
        what: &str,
    ) -> Result<NetlinkPayload<RouteNetlinkMessage>, NetError> {
        let failed = |source| NetError::Link {
            what: what.to_owned(),
            source,
        };
        let mut header = NetlinkHeader::default();
        header.flags = flags;
        let mut request = NetlinkMessage::new(header, NetlinkPayload::from(message));
        request.finalize();
        let mut bytes = vec![0u8; request.buffer_len()];
        request.serialize(&mut bytes);
        self.socket.send(&bytes, 0).map_err(failed)?;
        let (reply, _) = self.socket.recv_from_full().map_err(failed)?;
        let parsed = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&reply).map_err(|e| {
            failed(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                e.to_string(),
            ))
        })?;
        match parsed.payload {
            NetlinkPayload::Error(error) if error.code.is_some() => Err(failed(error.to_io())),
            payload => Ok(payload),
        }
    }

    /// A veth pair: `name` here, `peer` in the namespace behind `peer_namespace`.
    pub(crate) fn add_veth(
        &self,
        name: &str,
        peer: &str,
        peer_namespace: BorrowedFd<'_>,
    ) -> Result<(), NetError> {
        let mut other = LinkMessage::default();
        other.attributes = vec![
            LinkAttribute::IfName(peer.into()),
            LinkAttribute::NetNsFd(peer_namespace.as_raw_fd()),
        ];
        let mut link = LinkMessage::default();
        link.attributes = vec![
            LinkAttribute::IfName(name.into()),
            LinkAttribute::LinkInfo(vec![
                LinkInfo::Kind(InfoKind::Veth),
                LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(other))),
            ]),
        ];
        self.request(
            RouteNetlinkMessage::NewLink(link),
            format!("add the veth pair {name}/{peer}"),
        )
    }

    /// Sets interface `index` up.
    pub(crate) fn up(&self, index: u32, name: &str) -> Result<(), NetError> {
        let mut link = LinkMessage::default();
        link.header.index = index;
        link.header.flags = LinkFlags::Up;
        link.header.change_mask = LinkFlags::Up;
        self.request(RouteNetlinkMessage::SetLink(link), format!("set {name} up"))
    }

    /// Waits until interface `index` is operationally up: the kernel's link watch has seen
    /// its carrier and given it its queueing discipline. Until then whatever it sends is
    /// dropped, and the first ARP request of a run lost so is sent again only a second
    /// later: about one start in sixty waited that second before its first lookup. Gives up
    /// after `bound` (what the link sends then still gets through, later).
    pub(crate) fn wait_up(
        &self,
        index: u32,
        name: &str,
        bound: std::time::Duration,
    ) -> Result<(), NetError> {
        let started = std::time::Instant::now();
        // A TAP device that is up reports `Unknown`: its driver does not track the state.
        while !matches!(self.oper_state(index, name)?, State::Up | State::Unknown)
            && started.elapsed() < bound
        {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        Ok(())
    }

    /// The operational state of interface `index`.
    fn oper_state(&self, index: u32, name: &str) -> Result<State, NetError> {
        let what = format!("read the state of {name}");
        let mut link = LinkMessage::default();
        link.header.index = index;
        match self.exchange(RouteNetlinkMessage::GetLink(link), NLM_F_REQUEST, &what)? {
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(link)) => Ok(link
                .attributes
                .iter()
                .find_map(|a| match a {
                    LinkAttribute::OperState(state) => Some(*state),
                    _ => None,
                })
                .unwrap_or(State::Unknown)),
            other => Err(unexpected(&what, &other)),
        }
    }

    /// Gives interface `index` the address `ip/prefix`, with no duplicate address detection
    /// (an IPv6 address is usable at once).
    pub(crate) fn add_address(&self, index: u32, ip: IpAddr, prefix: u8) -> Result<(), NetError> {
        let mut message = AddressMessage::default();
        message.header.family = family(ip);
        message.header.prefix_len = prefix;
        message.header.index = index;
        message.header.flags = AddressHeaderFlags::Nodad;
        message.attributes = vec![
            AddressAttribute::Local(ip),
            AddressAttribute::Address(ip),
            AddressAttribute::Flags(AddressFlags::Nodad),
        ];
        self.request(
            RouteNetlinkMessage::NewAddress(message),
            format!("add the address {ip}/{prefix}"),
        )
    }

    /// A route to `destination/prefix` in `table`: through `gateway` when given, else
    /// straight out of `index` (`kind` local: delivered here; unreachable: refused with an
    /// ICMP error, `index` unused).
    pub(crate) fn add_route(&self, route: Route) -> Result<(), NetError> {
        let mut message = RouteMessage::default();
        message.header = RouteHeader {
            address_family: family(route.destination),
            destination_prefix_length: route.prefix,
            table: route.table,
            protocol: RouteProtocol::Static,
            scope: match route.kind {
                RouteType::Local => RouteScope::Host,
                RouteType::Unreachable => RouteScope::Universe,
                _ if route.gateway.is_some() => RouteScope::Universe,
                _ => RouteScope::Link,
            },
            kind: route.kind,
            ..RouteHeader::default()
        };
        if route.prefix > 0 {
            message
                .attributes
                .push(RouteAttribute::Destination(address(route.destination)));
        }
        if let Some(gateway) = route.gateway {
            message
                .attributes
                .push(RouteAttribute::Gateway(address(gateway)));
        }
        if route.kind != RouteType::Unreachable {
            message.attributes.push(RouteAttribute::Oif(route.index));
        }
        let what = format!("add the route {route}");
        self.request(RouteNetlinkMessage::NewRoute(message), what)
    }
}

/// One route of [`Rtnl::add_route`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    pub(crate) kind: RouteType,
    pub(crate) destination: IpAddr,
    pub(crate) prefix: u8,
    pub(crate) gateway: Option<IpAddr>,
    pub(crate) index: u32,
    pub(crate) table: u8,
}

impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} {}/{}", self.kind, self.destination, self.prefix)?;
        if let Some(gateway) = self.gateway {
            write!(f, " via {gateway}")?;
        }
        write!(f, " dev #{} table {}", self.index, self.table)
    }
}

fn family(ip: IpAddr) -> AddressFamily {
    match ip {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    }
}

fn address(ip: IpAddr) -> RouteAddress {
    match ip {
        IpAddr::V4(v4) => RouteAddress::Inet(v4),
        IpAddr::V6(v6) => RouteAddress::Inet6(v6),
    }
}

/// An answer of the kernel that is not the one asked for.
fn unexpected(what: &str, answer: &NetlinkPayload<RouteNetlinkMessage>) -> NetError {
    NetError::Link {
        what: what.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("unexpected answer {answer:?}"),
        ),
    }
}
