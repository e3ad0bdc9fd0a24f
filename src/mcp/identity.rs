//! What a live server said about itself in its handshake: its implementation (name, version,
//! title), instructions and full capabilities. `agent mcp serve --names bare` repeats them to
//! its own clients when it stands in for one server, so that server's clients see no difference.

use rmcp::model::ServerPeerInfo;

use super::error::McpError;
use super::manager::McpManager;

impl McpManager {
    /// The `initialize` answer of `server` (starting it if needed); `None` when the connection
    /// did not keep one.
    pub async fn server_info(&self, server: &str) -> Result<Option<ServerPeerInfo>, McpError> {
        let conn = self.connection(server).await?;
        Ok(conn.service.peer_info().map(|i| (*i).clone()))
    }
}
