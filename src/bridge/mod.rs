//! The RPC bridge between scripts and the MCP manager: HTTP/1.1 over a Unix socket.
//! `protocol` is the wire format; `server` serves it over `McpManager`; `local` is the client
//! the isolate's `callMCPTool` op uses, `client` the pooled one for everyone else (tests,
//! benchmarks, other Rust callers). The isolate never reaches the manager any other way.

pub mod client;
pub mod local;
pub mod protocol;
pub mod server;

pub use client::{BridgeClient, BridgeError};
pub use local::LocalBridgeClient;
pub use server::{BridgeEndpoint, BridgeServer};
