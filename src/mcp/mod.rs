//! MCP client side. Files, each with one concern (none imports a file that imports it back):
//!
//! - `manager`: the configured servers, their live connections and the calls through them;
//! - `connect`: connecting to one server (transport, handshake, first tool list) and what a live
//!   connection keeps; `process`: stdio servers' child processes, their environment, process
//!   groups and stderr logs; `reap`: the processes of a run (a marker they inherit, a record
//!   file) and what a killed `agent` left running; `stdio`: the stdio transport that caps message
//!   size, `http`: the same cap on the Streamable HTTP client; `error`: [`McpError`] and one-line reasons;
//! - `auth`: OAuth sign-in for HTTP servers (the token store, the login flow, a connection's
//!   tokens);
//! - `context`: one call's [`CallContext`]; `call`: the loop that drives a call's rounds;
//!   `handler`: the rmcp client handler (notifications, the server's requests); `host`: what the
//!   layers above answer elicitation and sampling with; `approval`: asking before destructive
//!   calls;
//! - `primitives`: resources, prompts, completions, subscriptions and the logging level on the
//!   manager; `lists`: the resource and prompt lists a connection keeps until `list_changed`;
//! - `tools`: [`ToolInfo`], the tool record every other module consumes; `naming`: tools' names
//!   as LLM tools and proxied tools; `catalog`: the searchable tool catalog and its cache;
//!   `observe`: [`CallObserver`]; `usage`: successful calls per tool, the first observer; `saved`: the tool lists kept on disk
//!   between commands (search and completion without starting servers).
//!
//! Knows `config`, `search` and `util`; knows nothing of codegen, bridge or agent.

pub mod approval;
pub mod auth;
pub mod call;
pub mod catalog;
pub mod connect;
pub mod context;
pub mod error;
pub mod handler;
pub mod host;
pub mod http;
pub mod identity;
pub mod lists;
pub mod manager;
pub mod naming;
pub mod observe;
pub mod primitives;
pub mod process;
pub mod reap;
pub mod saved;
pub mod stdio;
pub mod tools;
pub mod usage;

pub use context::{Asker, CallContext, ProgressSink, ProgressUpdate};
pub use error::McpError;
pub use manager::{MAX_STEP_UPS, McpManager, Started};
pub use observe::CallObserver;
pub use tools::ToolInfo;
