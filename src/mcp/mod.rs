//! MCP client side: the connection manager (rmcp), its notification handler, the stdio
//! transport that caps message size, the tool index entry every other module consumes, the
//! searchable tool catalog over it, the approval check of destructive tools (`approval`), and
//! the per-call context and the loop that drives every call (`call`).
//! Knows `config` and `search`; knows nothing of codegen, bridge or agent.

pub mod approval;
pub mod call;
pub mod catalog;
pub mod handler;
pub mod host;
pub mod manager;
pub mod stdio;
pub mod tools;
pub mod usage;

pub use call::{Asker, CallContext, ProgressSink, ProgressUpdate};
pub use manager::{CallObserver, McpError, McpManager, Started};
pub use tools::ToolInfo;
