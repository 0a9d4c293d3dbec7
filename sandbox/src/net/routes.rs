//! Makes every address of the network namespace local, over rtnetlink: `local 0.0.0.0/0 dev
//! lo` and `local ::/0 dev lo` in table `local`. A packet to any address then loops back to
//! the namespace itself, where the sinkhole takes it; no route leads anywhere else.

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage,
    NetlinkPayload,
};
use netlink_packet_route::route::{
    RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

use super::NetError;

const RT_TABLE_LOCAL: u8 = 255;

/// Which catch-all route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    V4,
    V6,
}

impl Family {
    fn route(self) -> &'static str {
        match self {
            Family::V4 => "local 0.0.0.0/0 dev lo table local",
            Family::V6 => "local ::/0 dev lo table local",
        }
    }
}

/// Adds the catch-all local route of `family` through interface `lo_index`, in the network
/// namespace of the calling thread.
pub(crate) fn add_local_default(family: Family, lo_index: u32) -> Result<(), NetError> {
    let failed = |source: std::io::Error| NetError::Route {
        route: family.route(),
        source,
    };
    let mut socket = Socket::new(NETLINK_ROUTE).map_err(failed)?;
    socket.bind_auto().map_err(failed)?;
    socket.connect(&SocketAddr::new(0, 0)).map_err(failed)?;

    let mut message = RouteMessage::default();
    message.header = RouteHeader {
        address_family: match family {
            Family::V4 => AddressFamily::Inet,
            Family::V6 => AddressFamily::Inet6,
        },
        destination_prefix_length: 0,
        table: RT_TABLE_LOCAL,
        protocol: RouteProtocol::Static,
        scope: RouteScope::Host,
        kind: RouteType::Local,
        ..RouteHeader::default()
    };
    message.attributes = vec![RouteAttribute::Oif(lo_index)];
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
    let mut request = NetlinkMessage::new(
        header,
        NetlinkPayload::from(RouteNetlinkMessage::NewRoute(message)),
    );
    request.finalize();
    let mut bytes = vec![0u8; request.buffer_len()];
    request.serialize(&mut bytes);
    socket.send(&bytes, 0).map_err(failed)?;

    let (reply, _) = socket.recv_from_full().map_err(failed)?;
    let parsed = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&reply).map_err(|e| {
        failed(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            e.to_string(),
        ))
    })?;
    match parsed.payload {
        NetlinkPayload::Error(error) if error.code.is_some() => Err(failed(error.to_io())),
        NetlinkPayload::Error(_) => Ok(()),
        other => Err(failed(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("unexpected answer {other:?}"),
        ))),
    }
}
