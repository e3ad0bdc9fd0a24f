//! MCP client side: the connection manager (rmcp), its notification handler, the stdio
//! transport that caps message size, and the tool index entry every other module consumes. Knows `config`; knows nothing of codegen, bridge or agent.

pub mod handler;
pub mod manager;
pub mod stdio;
pub mod tools;

pub use manager::{CallObserver, McpError, McpManager, Started};
pub use tools::ToolInfo;
