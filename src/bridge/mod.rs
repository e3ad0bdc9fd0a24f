//! The RPC bridge between scripts and the MCP manager: HTTP/1.1 over a Unix socket.
//! `protocol` is the wire format; `server` serves it over `McpManager`; `client` is what the
//! isolate's `callMCPTool` op uses. The isolate never reaches the manager any other way.

pub mod client;
pub mod protocol;
pub mod server;

pub use client::{BridgeClient, BridgeError};
pub use server::{BridgeEndpoint, BridgeServer};
