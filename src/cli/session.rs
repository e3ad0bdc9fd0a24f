//! The lifecycle of every command that starts servers, in the one right order, so no command can
//! forget a step: [`Session::open`] makes the manager and installs, in this order, the terminal
//! and the configured provider for the servers' elicitation and sampling requests (`host`), who
//! approves destructive calls (`approve`), the type recorder (`learn`), and at `-v` the servers'
//! log messages on stderr (`log::ServerLogs`); [`Session::close`]
//! saves the usage counts and the tool lists it got (`mcp::saved`), stops every server (process
//! groups included) and flushes the recorder. A command stops what it started on top (code modes, `serve`'s server, handler
//! bridges) before it closes the session; a session dropped without `close` still kills its
//! servers (the manager's `Drop`).

use std::sync::{Arc, Mutex};

use crate::agent::provider::Usage;
use crate::config::Config;
use crate::learn::Recorder;
use crate::mcp::McpManager;

/// The manager of one command and what was installed into it (see the module doc).
pub struct Session {
    manager: Arc<McpManager>,
    recorder: Option<Arc<Recorder>>,
    sampled: Arc<Mutex<Usage>>,
    /// The servers' log messages on stderr at `-v`.
    logs: Option<super::log::ServerLogs>,
}

impl Session {
    /// Opens the session of a command, once the project's own servers are trusted (asked on a
    /// terminal; `trust`). Nothing here approves calls wholesale: `agent mcp call --yes` approves
    /// its one call through that call's context; `agent exec --yes` and `agent run --yes` install
    /// `approve::approve_all` on top, themselves.
    pub fn open(config: &Config) -> anyhow::Result<Session> {
        super::trust::ensure(config, super::trust::Asking::IfTerminal)?;
        let manager = Arc::new(McpManager::new(config));
        let sampled = super::host::install(&manager, config);
        super::approve::install(&manager);
        let recorder = Recorder::install(config, &manager);
        let logs = super::log::ServerLogs::show(&manager);
        Ok(Session { manager, recorder, sampled, logs })
    }

    /// The session of a command with no one to ask (`agent mcp serve`: its stdin is the protocol
    /// or nobody's): elicitation and approvals follow the configured policies, sampling is not
    /// answered by a provider of ours. Nobody is asked to trust the project either: untrusted,
    /// it is refused with the ways to trust it.
    pub fn headless(config: &Config) -> anyhow::Result<Session> {
        super::trust::ensure(config, super::trust::Asking::Never)?;
        let manager = Arc::new(McpManager::new(config));
        let recorder = Recorder::install(config, &manager);
        let logs = super::log::ServerLogs::show(&manager);
        Ok(Session { manager, recorder, sampled: Default::default(), logs })
    }

    pub fn manager(&self) -> &Arc<McpManager> {
        &self.manager
    }

    /// The type recorder, unless `mcp.types.learn` is off.
    pub fn recorder(&self) -> &Option<Arc<Recorder>> {
        &self.recorder
    }

    /// The tokens the configured provider spent answering the servers' sampling requests so far.
    pub fn sampled(&self) -> Usage {
        self.sampled.lock().map(|u| *u).unwrap_or_default()
    }

    /// Ends the session (see the module doc); a failure to save the usage counts is a warning.
    pub async fn close(self) {
        if let Err(e) = self.manager.usage().save() {
            eprintln!("warning: {e}");
        }
        if let Err(e) = self.manager.save_tool_lists() {
            tracing::warn!("cannot save the tool lists in {}: {e}", self.manager.saved_file().display());
        }
        self.manager.shutdown().await;
        if let Some(logs) = self.logs {
            logs.finish().await;
        }
        if let Some(r) = &self.recorder {
            r.finish();
        }
    }
}
