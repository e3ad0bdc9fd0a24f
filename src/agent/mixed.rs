//! A run that mixes modes: some servers' tools offered directly (`mcp_<server>_<tool>`, through
//! a [`DirectHost`]) and the other servers behind `code_execution` (a [`CodeHost`] whose tree
//! and prompt list only them), in one request.
//!
//! Names cannot clash: direct names start with `mcp_`, code mode's tools do not. Direct calls of
//! one turn run concurrently; scripts one at a time, in the order the model asked for them.

use futures::future::BoxFuture;

use super::code_host::CodeHost;
use super::direct::DirectHost;
use super::provider::{ToolCall, ToolSpec};
use super::session::{ToolHost, ToolOutcome};

/// Direct tools and code mode's tools side by side.
pub struct MixedHost<'a> {
    specs: Vec<ToolSpec>,
    direct: DirectHost,
    code: CodeHost<'a>,
    /// Held while a script (or a discovery call) runs: they may depend on order.
    scripts: tokio::sync::Mutex<()>,
}

impl<'a> MixedHost<'a> {
    pub fn new(direct: DirectHost, code: CodeHost<'a>) -> MixedHost<'a> {
        let mut specs = direct.specs().to_vec();
        specs.extend(code.specs().iter().cloned());
        MixedHost { specs, direct, code, scripts: tokio::sync::Mutex::new(()) }
    }

    /// Stops what the direct side started (the result handlers' bridge).
    pub async fn stop(self) {
        self.direct.stop().await;
    }

    /// A direct tool, or a name that looks like one (the direct side explains unknown ones).
    fn is_direct(&self, call: &ToolCall) -> bool {
        self.direct.map().resolve(&call.name).is_some() || call.name.starts_with("mcp_")
    }
}

impl ToolHost for MixedHost<'_> {
    fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    fn call<'b>(&'b self, call: &'b ToolCall) -> BoxFuture<'b, ToolOutcome> {
        Box::pin(async move {
            if self.is_direct(call) {
                return self.direct.call(call).await;
            }
            // tokio's mutex is fair: scripts of one turn run in the order they were asked for.
            let _turn = self.scripts.lock().await;
            self.code.call(call).await
        })
    }

    fn label(&self, call: &ToolCall) -> String {
        if self.is_direct(call) { self.direct.label(call) } else { self.code.label(call) }
    }
}
