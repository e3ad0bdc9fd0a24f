//! The rmcp client handler: what `agent` tells servers about itself, and where their
//! notifications go (progress, log messages and resource updates to subscribers; a
//! `list_changed` for tools, resources or prompts marks that cached list stale), and how it answers a server's requests: elicitation
//! (form and URL mode, always advertised) under the server's `elicitation` policy, sampling
//! (advertised only when `sampling` is not `deny`) through the host's [`Sampler`], and roots
//! (advertised only when `roots` is configured: servers such as server-filesystem change
//! behaviour when roots are offered). The same methods answer the classic server-to-client
//! requests and the `input_required` rounds that `call::drive` sends back.

#![allow(deprecated)] // LoggingMessageNotificationParam (SEP-2577); servers still send log messages.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, Implementation, ListRootsResult, LoggingMessageNotificationParam, ProgressNotificationParam,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::context::{CallContext, Calls, ProgressUpdate};
use super::host::{
    Decision, Host, SampleMessage, SampleRequest, accept_defaults, fill_defaults, url_to_visit, violations,
};
use super::lists::Lists;
use crate::config::{ElicitationPolicy, SamplingPolicy, ServerConfig as Entry};
use crate::util::clock::PauseClock;
use crate::util::size::human_bytes;

/// A notification from a server, tagged with the server's name.
#[derive(Debug, Clone)]
pub enum ClientEvent {
    Progress {
        server: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// A `notifications/message`: `level` is MCP's (`debug` .. `emergency`).
    Log {
        server: String,
        level: String,
        logger: Option<String>,
        data: serde_json::Value,
    },
    ToolsChanged {
        server: String,
    },
    ResourcesChanged {
        server: String,
    },
    PromptsChanged {
        server: String,
    },
    /// A subscribed resource changed (`notifications/resources/updated`).
    ResourceUpdated {
        server: String,
        uri: String,
    },
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
    host: Arc<Host>,
    entry: Arc<Entry>,
    clock: Arc<PauseClock>,
    /// The calls in flight on this connection (progress routes, who an elicitation goes to).
    calls: Arc<Calls>,
    /// The connection's resource and prompt lists, marked stale by `list_changed`.
    lists: Arc<Lists>,
}

impl McpClientHandler {
    pub fn new(server: &str, events: ClientEvents, tools_stale: Arc<AtomicBool>) -> Self {
        Self {
            server: server.to_string(),
            events,
            tools_stale,
            host: Default::default(),
            entry: Default::default(),
            clock: Default::default(),
            calls: Default::default(),
            lists: Default::default(),
        }
    }

    /// The resource and prompt lists this handler marks stale.
    pub(crate) fn with_lists(mut self, lists: Arc<Lists>) -> Self {
        self.lists = lists;
        self
    }

    /// The calls in flight on this connection.
    pub fn calls(&self) -> &Calls {
        &self.calls
    }

    /// Says on stderr that a server's request was refused (an `input_required` round).
    pub(crate) fn refused(&self, why: &str) {
        self.notice(&format!("refused: {why}"));
    }

    /// Answers elicitation and sampling with `host` under the policies of `entry`, pausing `clock`
    /// while the user (or the host's model) is asked.
    pub fn with_host(mut self, host: Arc<Host>, entry: Entry, clock: Arc<PauseClock>) -> Self {
        self.host = host;
        self.entry = Arc::new(entry);
        self.clock = clock;
        self
    }

    fn capabilities(&self) -> ClientCapabilities {
        let mut caps = json!({"elicitation": {"form": {}, "url": {}}});
        if self.entry.sampling != SamplingPolicy::Deny {
            caps["sampling"] = json!({});
        }
        if !self.entry.roots.is_empty() {
            caps["roots"] = json!({"listChanged": false});
        }
        serde_json::from_value(caps).unwrap_or_default()
    }

    fn elicitation_policy(&self) -> ElicitationPolicy {
        let terminal = self.host.is_terminal();
        match self.entry.elicitation {
            Some(ElicitationPolicy::Ask) | None if terminal => ElicitationPolicy::Ask,
            None | Some(ElicitationPolicy::Ask) => ElicitationPolicy::Decline,
            Some(p) => p,
        }
    }

    fn notice(&self, text: &str) {
        if let Some(i) = self.host.interaction() {
            i.notice(&self.server, text);
        }
    }

    /// Answers an elicitation: asked of whoever made the call (`cx`'s asker) when they can be,
    /// else under the server's `elicitation` policy.
    pub(crate) async fn elicit(
        &self,
        request: ElicitRequestParams,
        cx: Option<&Arc<CallContext>>,
    ) -> Result<ElicitResult, ErrorData> {
        if let Some(asker) = cx.and_then(|c| c.asker.as_ref()) {
            let _paused = (self.clock.pause(), crate::util::clock::user_wait().pause());
            match asker.elicit(&self.server, request.clone()).await {
                Some(Ok(answer)) => return Ok(answer),
                Some(Err(e)) => {
                    tracing::warn!(server = %self.server, "forwarding an elicitation failed ({e}); the policy answers")
                }
                None => {}
            }
        }
        let policy = self.elicitation_policy();
        let interaction = self.host.interaction().filter(|_| policy == ElicitationPolicy::Ask);
        let server = self.server.clone();
        // Why a policy declined, when it is worth saying (`accept_defaults`).
        let mut why: Option<String> = None;
        let decision = match (request, interaction) {
            (ElicitRequestParams::FormElicitationParams { message, requested_schema, .. }, i) => {
                let schema = serde_json::to_value(&requested_schema)
                    .map_err(|e| ErrorData::invalid_params(format!("unusable requestedSchema: {e}"), None))?;
                match i {
                    None if policy == ElicitationPolicy::AcceptDefaults => match accept_defaults(&schema) {
                        Ok(content) => Decision::Accept(content),
                        Err(e) => {
                            why = Some(e);
                            Decision::Decline
                        }
                    },
                    None => Decision::Decline,
                    Some(i) => {
                        let _paused = (self.clock.pause(), crate::util::clock::user_wait().pause());
                        let mut problems: Vec<String> = Vec::new();
                        loop {
                            let (i2, s2, m2, sc2, p2) =
                                (i.clone(), server.clone(), message.clone(), schema.clone(), problems.clone());
                            let d = tokio::task::spawn_blocking(move || i2.elicit_form(&s2, &m2, &sc2, &p2))
                                .await
                                .unwrap_or(Decision::Cancel);
                            let Decision::Accept(mut answer) = d else { break d };
                            fill_defaults(&schema, &mut answer);
                            problems = violations(&schema, &answer);
                            if problems.is_empty() {
                                break Decision::Accept(answer);
                            }
                        }
                    }
                }
            }
            (ElicitRequestParams::UrlElicitationParams { message, url, .. }, Some(i)) => match url_to_visit(&url) {
                Ok(visit) => {
                    let _paused = (self.clock.pause(), crate::util::clock::user_wait().pause());
                    tokio::task::spawn_blocking(move || i.elicit_url(&server, &message, &visit))
                        .await
                        .unwrap_or(Decision::Cancel)
                }
                // Never offered to open, nor shown as a link: declined with the reason.
                Err(e) => {
                    self.notice(&format!("declined a URL elicitation ({}): {e}", super::host::shorten(&url, 100)));
                    Decision::Decline
                }
            },
            (ElicitRequestParams::UrlElicitationParams { .. }, None) => Decision::Decline,
            // A mode added after this was written.
            _ => Decision::Decline,
        };
        if policy != ElicitationPolicy::Ask {
            let what = if matches!(decision, Decision::Accept(_)) { "accepted with defaults" } else { "declined" };
            let why = why.map(|w| format!(": {w}")).unwrap_or_default();
            self.notice(&format!("elicitation {what} (policy `{}`){why}", policy_name(policy)));
        }
        let result = match decision {
            Decision::Accept(content) => json!({"action": "accept", "content": Value::Object(content)}),
            Decision::Decline => json!({"action": "decline"}),
            Decision::Cancel => json!({"action": "cancel"}),
        };
        serde_json::from_value(result).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    pub(crate) async fn sample(&self, params: CreateMessageRequestParams) -> Result<CreateMessageResult, ErrorData> {
        let server = &self.server;
        let entry = &self.entry;
        if entry.sampling == SamplingPolicy::Deny {
            return Err(ErrorData::invalid_request(
                format!("sampling is not allowed for server `{server}` (its entry says `sampling: deny`)"),
                None,
            ));
        }
        let request = sample_request(server, entry, &params)?;
        let bytes = request.input_bytes();
        if bytes > entry.sampling_max_input_bytes {
            return Err(ErrorData::invalid_request(
                format!(
                    "the sampling request of server `{server}` is too large: {} of text, over its `sampling_max_input_bytes` ({})",
                    human_bytes(bytes as u64),
                    human_bytes(entry.sampling_max_input_bytes as u64)
                ),
                None,
            ));
        }
        // The worst case is reserved before anyone is asked; what the request used replaces it
        // after, and a request that fails gives it back (the reservation is dropped).
        let reservation = self
            .host
            .reserve(server, request.worst_case(), entry.sampling_budget)
            .map_err(|over| ErrorData::invalid_request(over.to_string(), None))?;
        let _paused = (self.clock.pause(), crate::util::clock::user_wait().pause());
        if entry.sampling == SamplingPolicy::Ask {
            let Some(i) = self.host.interaction().filter(|i| i.is_terminal()) else {
                return Err(ErrorData::invalid_request(
                    format!(
                        "sampling for server `{server}` needs the user's approval (`sampling: ask`), but there is no terminal"
                    ),
                    None,
                ));
            };
            let r = request.clone();
            let approved = tokio::task::spawn_blocking(move || i.approve_sampling(&r)).await.unwrap_or(false);
            if !approved {
                return Err(ErrorData::invalid_request("the user declined the sampling request", None));
            }
        }
        let Some(sampler) = self.host.sampler() else {
            return Err(ErrorData::internal_error("no LLM provider is available for sampling", None));
        };
        let asked = request.messages.last().map(|m| m.text.as_str()).unwrap_or_default();
        self.notice(&format!("sampling asked: {}", super::host::shorten(asked, 100)));
        let answer = sampler
            .sample(&request)
            .await
            .map_err(|e| ErrorData::internal_error(format!("sampling failed: {e}"), None))?;
        let charged = reservation.settle(answer.tokens);
        let counted = if answer.tokens.is_some() { "" } else { ", not reported: counted as its worst case" };
        self.notice(&format!(
            "sampling answered ({charged} tokens{counted}): {}",
            super::host::shorten(&answer.text, 100)
        ));
        let mut result = json!({
            "model": answer.model,
            "role": "assistant",
            "content": {"type": "text", "text": answer.text},
        });
        if let Some(s) = answer.stop_reason {
            result["stopReason"] = Value::String(s);
        }
        serde_json::from_value(result).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    /// The configured roots (`roots` on the server's entry).
    pub(crate) fn roots(&self) -> Result<ListRootsResult, ErrorData> {
        let roots: Vec<Value> = self
            .entry
            .roots
            .iter()
            .map(|d| {
                let abs = std::fs::canonicalize(d).unwrap_or_else(|_| d.clone());
                let name = abs.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                json!({"uri": format!("file://{}", abs.display()), "name": name})
            })
            .collect();
        serde_json::from_value(json!({ "roots": roots })).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }
}

fn policy_name(p: ElicitationPolicy) -> &'static str {
    match p {
        ElicitationPolicy::Ask => "ask",
        ElicitationPolicy::AcceptDefaults => "accept_defaults",
        ElicitationPolicy::Decline => "decline",
    }
}

/// The provider-neutral request, or why the server's request cannot be sampled.
fn sample_request(
    server: &str,
    entry: &Entry,
    params: &CreateMessageRequestParams,
) -> Result<SampleRequest, ErrorData> {
    let raw = serde_json::to_value(params).map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
    let msgs = raw.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
    if msgs.is_empty() {
        return Err(ErrorData::invalid_params("a sampling request needs at least one message", None));
    }
    let mut messages = Vec::new();
    for m in &msgs {
        let assistant = m.get("role").and_then(Value::as_str) == Some("assistant");
        let blocks = match m.get("content") {
            Some(Value::Array(a)) => a.clone(),
            Some(v) => vec![v.clone()],
            None => Vec::new(),
        };
        let mut text = String::new();
        for b in &blocks {
            match (b.get("type").and_then(Value::as_str), b.get("text").and_then(Value::as_str)) {
                (Some("text"), Some(t)) => text.push_str(t),
                (kind, _) => {
                    return Err(ErrorData::invalid_params(
                        format!("only text can be sampled; got `{}` content", kind.unwrap_or("unknown")),
                        None,
                    ));
                }
            }
        }
        messages.push(SampleMessage { assistant, text });
    }
    let asked = raw.get("maxTokens").and_then(Value::as_u64).unwrap_or(u64::from(entry.sampling_max_tokens));
    let stop = raw
        .get("stopSequences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default();
    Ok(SampleRequest {
        server: server.to_string(),
        system: raw.get("systemPrompt").and_then(Value::as_str).map(String::from),
        messages,
        max_tokens: asked.clamp(1, u64::from(entry.sampling_max_tokens)) as u32,
        stop,
        model: entry.sampling_model.clone(),
    })
}

impl ClientHandler for McpClientHandler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(self.capabilities(), Implementation::new("agent", env!("CARGO_PKG_VERSION")))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let cx = self.calls.for_request();
        self.elicit(request, cx.as_ref()).await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.sample(params).await
    }

    async fn list_roots(&self, _cx: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        self.roots()
    }

    async fn on_progress(&self, p: ProgressNotificationParam, _cx: NotificationContext<RoleClient>) {
        if let Some(sink) = self.calls.progress_sink(&p.progress_token, p.progress) {
            sink(ProgressUpdate { progress: p.progress, total: p.total, message: p.message.clone() });
        }
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
        self.events.send(ClientEvent::Log { server: self.server.clone(), level, logger: p.logger, data: p.data });
    }

    async fn on_resource_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.lists.resources_stale.store(true, Ordering::Release);
        self.events.send(ClientEvent::ResourcesChanged { server: self.server.clone() });
    }

    async fn on_prompt_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.lists.prompts_stale.store(true, Ordering::Release);
        self.events.send(ClientEvent::PromptsChanged { server: self.server.clone() });
    }

    async fn on_resource_updated(&self, p: ResourceUpdatedNotificationParam, _cx: NotificationContext<RoleClient>) {
        self.events.send(ClientEvent::ResourceUpdated { server: self.server.clone(), uri: p.uri });
    }

    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.tools_stale.store(true, Ordering::Release);
        self.events.send(ClientEvent::ToolsChanged { server: self.server.clone() });
    }
}
