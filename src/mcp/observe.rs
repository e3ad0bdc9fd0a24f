//! [`CallObserver`]: how layers above the manager hear of every successful call without the
//! manager knowing them (the usage counts, the type recorder of `learn`).

use rmcp::model::CallToolResult;

use super::tools::ToolInfo;

/// Told about every tool call that returned a result that is not an error (`isError`), from
/// every path (CLI, direct mode, the bridge, `serve`). Runs on the call path: implementations
/// must only hand the result over (e.g. onto a queue) and return.
pub trait CallObserver: Send + Sync {
    fn finished(&self, tool: &ToolInfo, result: &CallToolResult);
}
