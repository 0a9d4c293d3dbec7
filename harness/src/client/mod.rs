//! The MCP client: rmcp (the official SDK) running on vac's own recording byte layer.
//!
//! [`McpSession::connect`] takes a server's pipes ([`ServerStreams`]), a [`FrameLog`] and
//! [`ClientOptions`], and runs the initialize handshake ([`McpSession::connect_http`] does
//! the same over Streamable HTTP with an [`HttpEndpoint`]: every body recorded as a frame,
//! the same caps per message and in total); the session then lists tools
//! ([`ToolList`]) and calls them ([`CallOutcome`]). Underneath, a pump reads the server's
//! stdout line by line and records every line as a [`Frame`] before rmcp parses it; every
//! line the client writes and the server's stderr are recorded too. The caps in
//! [`ClientOptions`] (line length, total stdout bytes, stderr bytes, time per request)
//! bound both memory and waiting whatever the server does; when one trips, the session
//! fails with a [`ClientError`] naming it, and the frames stay as evidence.

mod calls;
mod endpoint;
mod error;
mod frame;
mod http;
mod lines;
mod link;
mod options;
mod param_headers;
mod pump;
mod sampling;
mod session;
mod shared;
mod sse;
mod surface;
mod transport;

pub use calls::{CallOutcome, ToolList};
pub use endpoint::{Dial, HttpEndpoint, TlsError, UrlError};
pub use error::{CallError, ClientError};
pub use frame::{Direction, Frame, FrameLog, FrameLogStats, Frames};
pub use options::{
    ClientInfo, ClientOptions, DEFAULT_PROTOCOL, Header, OptionError, Protocol, STATELESS_PROTOCOL,
    ServerOutput, ServerStreams,
};
pub use session::McpSession;
pub use shared::{ASKED_METHODS, Asked};
pub use surface::{MAX_SURFACE_READS, Surface, SurfaceRead};

/// How a recorded line is classified: the one classification the pump and the replay of
/// its frames share.
pub(crate) use lines::{Parsed, parse_line};
