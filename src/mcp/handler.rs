//! The rmcp client handler: what `agent` tells servers about itself, and where their
//! notifications go (progress and log messages to subscribers, `tools/list_changed` marks the
//! cached tool list stale). No roots, sampling or elicitation are advertised: servers such as
//! server-filesystem change behaviour when roots are offered, so that is a deliberate choice.

#![allow(deprecated)] // LoggingMessageNotificationParam (SEP-2577); servers still send log messages.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, LoggingMessageNotificationParam, ProgressNotificationParam,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::broadcast;

/// A notification from a server, tagged with the server's name.
#[derive(Debug, Clone)]
pub enum ClientEvent {
    Progress { server: String, progress: f64, total: Option<f64>, message: Option<String> },
    Log { server: String, level: String, data: serde_json::Value },
    ToolsChanged { server: String },
}

/// Fan-out of [`ClientEvent`]s; subscribers that lag lose old events, never block servers.
#[derive(Clone)]
pub struct ClientEvents {
    tx: broadcast::Sender<ClientEvent>,
}

impl Default for ClientEvents {
    fn default() -> Self {
        Self { tx: broadcast::channel(256).0 }
    }
}

impl ClientEvents {
    pub fn subscribe(&self) -> broadcast::Receiver<ClientEvent> {
        self.tx.subscribe()
    }

    fn send(&self, e: ClientEvent) {
        let _ = self.tx.send(e);
    }
}

#[derive(Clone)]
pub struct McpClientHandler {
    server: String,
    events: ClientEvents,
    tools_stale: Arc<AtomicBool>,
}

impl McpClientHandler {
    pub fn new(server: &str, events: ClientEvents, tools_stale: Arc<AtomicBool>) -> Self {
        Self { server: server.to_string(), events, tools_stale }
    }
}

impl ClientHandler for McpClientHandler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("agent", env!("CARGO_PKG_VERSION")))
    }

    async fn on_progress(&self, p: ProgressNotificationParam, _cx: NotificationContext<RoleClient>) {
        self.events.send(ClientEvent::Progress {
            server: self.server.clone(),
            progress: p.progress,
            total: p.total,
            message: p.message,
        });
    }

    #[allow(deprecated)]
    async fn on_logging_message(&self, p: LoggingMessageNotificationParam, _cx: NotificationContext<RoleClient>) {
        let level = serde_json::to_value(p.level).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        self.events.send(ClientEvent::Log { server: self.server.clone(), level, data: p.data });
    }

    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.tools_stale.store(true, Ordering::Release);
        self.events.send(ClientEvent::ToolsChanged { server: self.server.clone() });
    }
}
