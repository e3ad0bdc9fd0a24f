//! `--resources` and `--conformance`: what the fixture serves besides tools. Resources (text,
//! binary, a watched one whose revision `touch` bumps), resource templates, prompts, argument
//! completions (`completion/complete`) and logging (`logging/setLevel`, `notifications/message`).
//! Every content is a constant or derived from the request alone (the watched resource's revision
//! counts `touch` calls), so tests can compare exact bytes. Without either flag nothing here is
//! reachable: the handlers answer "method not found", as rmcp's defaults do.
//!
//! Logging and `resources/subscribe` are legacy (deprecated in rmcp since SEP-2577 and the
//! 2026-07-28 subscriptions); the fixture keeps them because clients still meet servers that
//! speak them, hence the `allow(deprecated)`.
#![allow(deprecated)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, LoggingLevel, LoggingMessageNotificationParam, ReadResourceResult, Reference,
    ServerCapabilities, SubscriptionFilter,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

use super::HOSTILE;

/// A 1x1 PNG (the binary resources, prompt images and `test_image_content`).
pub(crate) const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// Which sets the command line turned on.
#[derive(Clone, Copy, Default)]
pub(crate) struct Extras {
    /// `--resources` (implied by `--conformance`): the `fixture://` set.
    pub resources: bool,
    /// `--conformance`: the `test://` set and prompts the conformance suite names.
    pub conformance: bool,
    /// `--hostile` with one of the above: a resource whose URI, name, description and text
    /// carry what a terminal would obey.
    pub hostile: bool,
    /// `--no-tools`: no tools capability, and `tools/list` answers -32601 (a resources-only server).
    pub no_tools: bool,
}

/// What one client session set: its log level and its subscriptions.
#[derive(Default)]
struct Session {
    level: Mutex<Option<LoggingLevel>>,
    subscribed: Mutex<BTreeSet<String>>,
}

/// The state behind the resource handlers; `for_session` gives each HTTP session its own
/// level and subscriptions while the watched resource's revision, and the channel that tells
/// every `subscriptions/listen` of a change, stay per process.
#[derive(Clone)]
pub(crate) struct State {
    pub extras: Extras,
    revision: Arc<AtomicU64>,
    session: Arc<Session>,
    /// The URIs `touch` changed, for 2026-07-28 subscriptions (which have no session).
    updates: tokio::sync::broadcast::Sender<String>,
    /// Receivers of `updates` taken when a subscription is accepted, oldest first: rmcp sends
    /// the acknowledgment before it starts `listen`, and a `touch` in between must not be lost.
    /// `listen` takes the oldest, which is never younger than its own acknowledgment.
    pending: Arc<Mutex<std::collections::VecDeque<tokio::sync::broadcast::Receiver<String>>>>,
}

/// The resources whose content `touch` changes.
const WATCHED: [&str; 2] = ["fixture://counter", "test://watched-resource"];

/// The `--hostile` resource's URI: the marker sequence after a plain prefix.
fn hostile_uri() -> String {
    format!("fixture://hostile/{HOSTILE}")
}

fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, McpError> {
    serde_json::from_value(v).map_err(|e| McpError::internal_error(format!("fixture: {e}"), None))
}

fn not_found(method: &'static str) -> McpError {
    McpError::new(ErrorCode::METHOD_NOT_FOUND, method, None)
}

impl State {
    pub fn new(extras: Extras) -> Self {
        let (updates, _) = tokio::sync::broadcast::channel(16);
        Self { extras, revision: Arc::default(), session: Arc::default(), updates, pending: Arc::default() }
    }

    /// The same server state with a fresh session (log level, subscriptions).
    pub fn for_session(&self) -> Self {
        Self { session: Arc::default(), ..self.clone() }
    }

    fn on(&self, method: &'static str) -> Result<(), McpError> {
        if self.extras.resources || self.extras.conformance { Ok(()) } else { Err(not_found(method)) }
    }

    /// The capabilities: tools, plus resources (with subscribe), prompts, completions and
    /// logging when a set is on.
    pub fn capabilities(&self) -> ServerCapabilities {
        if self.extras.no_tools {
            return ServerCapabilities::builder().enable_resources().build();
        }
        let b = ServerCapabilities::builder().enable_tools();
        if self.on("").is_err() {
            return b.build();
        }
        b.enable_resources().enable_resources_subscribe().enable_prompts().enable_completions().enable_logging().build()
    }

    /// Every resource (not the templates), each with a name, title, description and MIME type.
    fn resources(&self) -> Vec<Value> {
        let mut out = Vec::new();
        if self.extras.resources || self.extras.conformance {
            out.extend([
                json!({"uri": "fixture://readme", "name": "readme", "title": "Read me", "description": "A short Markdown text.", "mimeType": "text/markdown"}),
                json!({"uri": "fixture://logo.png", "name": "logo", "description": "A 1x1 PNG image (binary).", "mimeType": "image/png"}),
                json!({"uri": "fixture://config.json", "name": "config", "description": "A small JSON document.", "mimeType": "application/json"}),
                json!({"uri": "fixture://counter", "name": "counter", "description": "`revision N`: N counts the calls of the `touch` tool (subscribe to hear of them).", "mimeType": "text/plain"}),
            ]);
        }
        if self.extras.conformance {
            out.extend([
                json!({"uri": "test://static-text", "name": "static-text", "description": "A static text resource.", "mimeType": "text/plain"}),
                json!({"uri": "test://static-binary", "name": "static-binary", "description": "A static binary resource (PNG).", "mimeType": "image/png"}),
                json!({"uri": "test://watched-resource", "name": "watched-resource", "description": "A resource to subscribe to; `touch` changes it.", "mimeType": "text/plain"}),
            ]);
        }
        if self.extras.hostile {
            out.push(json!({"uri": hostile_uri(), "name": HOSTILE, "title": HOSTILE, "description": HOSTILE, "mimeType": "text/plain"}));
        }
        out
    }

    pub fn list_resources(&self) -> Result<ListResourcesResult, McpError> {
        self.on("resources/list")?;
        from_json(json!({"resources": self.resources()}))
    }

    pub fn list_templates(&self) -> Result<ListResourceTemplatesResult, McpError> {
        self.on("resources/templates/list")?;
        let mut templates = vec![
            json!({"uriTemplate": "fixture://items/{id}", "name": "item", "description": "An item by id, as JSON (`id` completes).", "mimeType": "application/json"}),
        ];
        if self.extras.conformance {
            templates.push(json!({"uriTemplate": "test://template/{id}/data", "name": "template-data", "description": "Data for an id, as JSON.", "mimeType": "application/json"}));
        }
        from_json(json!({"resourceTemplates": templates}))
    }

    /// How long a read of `fixture://slow/MS` waits before it answers (unlisted: for clients'
    /// timeouts); `None` for any other URI or without a resource set.
    pub fn slow(&self, uri: &str) -> Option<std::time::Duration> {
        self.on("resources/read").ok()?;
        uri.strip_prefix("fixture://slow/")?.parse().ok().map(std::time::Duration::from_millis)
    }

    /// One resource's contents, or the one a template names; else `-32002` (resource not found).
    pub fn read(&self, uri: &str) -> Result<ReadResourceResult, McpError> {
        self.on("resources/read")?;
        let text = |mime: &str, text: String| json!({"contents": [{"uri": uri, "mimeType": mime, "text": text}]});
        let blob = |mime: &str| json!({"contents": [{"uri": uri, "mimeType": mime, "blob": PNG_1X1}]});
        let revision = || format!("revision {}", self.revision.load(Ordering::SeqCst));
        let conformance = self.extras.conformance;
        let doc = match uri {
            "fixture://readme" => text("text/markdown", "# Fixture\n\nA resource of agent's fixture server.\n".into()),
            "fixture://logo.png" => blob("image/png"),
            "fixture://config.json" => text("application/json", r#"{"name":"fixture","version":1}"#.into()),
            "fixture://counter" => text("text/plain", revision()),
            _ if self.slow(uri).is_some() => text("text/plain", "slow, but here".into()),
            "test://static-text" if conformance => {
                text("text/plain", "This is the content of the static text resource.".into())
            }
            "test://static-binary" if conformance => blob("image/png"),
            "test://watched-resource" if conformance => text("text/plain", revision()),
            _ if self.extras.hostile && uri == hostile_uri() => text("text/plain", HOSTILE.into()),
            _ => {
                let item = uri.strip_prefix("fixture://items/").filter(|id| !id.is_empty() && !id.contains('/'));
                let data = uri
                    .strip_prefix("test://template/")
                    .and_then(|r| r.strip_suffix("/data"))
                    .filter(|id| conformance && !id.is_empty() && !id.contains('/'));
                match (item, data) {
                    (Some(id), _) => {
                        text("application/json", json!({"id": id, "name": format!("item {id}")}).to_string())
                    }
                    (_, Some(id)) => text(
                        "application/json",
                        json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string(),
                    ),
                    _ => {
                        return Err(McpError::resource_not_found("no such resource", Some(json!({"uri": uri}))));
                    }
                }
            }
        };
        from_json(doc)
    }

    fn known(&self, uri: &str) -> bool {
        self.read(uri).is_ok()
    }

    /// `resources/subscribe`: remembers the URI (`touch` then announces its changes).
    pub fn subscribe(&self, uri: &str) -> Result<(), McpError> {
        self.on("resources/subscribe")?;
        if !self.known(uri) {
            return Err(McpError::resource_not_found("no such resource", Some(json!({"uri": uri}))));
        }
        if let Ok(mut s) = self.session.subscribed.lock() {
            s.insert(uri.to_string());
        }
        Ok(())
    }

    pub fn unsubscribe(&self, uri: &str) -> Result<(), McpError> {
        self.on("resources/unsubscribe")?;
        if let Ok(mut s) = self.session.subscribed.lock() {
            s.remove(uri);
        }
        Ok(())
    }

    /// `touch`: a new revision of the watched resources, announced to this session if it
    /// subscribed to them. Returns the new revision.
    pub async fn touch(&self, cx: &RequestContext<RoleServer>) -> u64 {
        let n = self.revision.fetch_add(1, Ordering::SeqCst) + 1;
        let subscribed: Vec<String> = match self.session.subscribed.lock() {
            Ok(s) => WATCHED.iter().filter(|u| s.contains(**u)).map(|u| u.to_string()).collect(),
            Err(_) => Vec::new(),
        };
        for uri in subscribed {
            let _ = cx.peer.notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(uri)).await;
        }
        for uri in WATCHED {
            // No listener is no error.
            let _ = self.updates.send(uri.to_string());
        }
        n
    }

    /// `subscriptions/listen` (2026-07-28): the resources of `requested` that exist; no
    /// list-changed categories (the fixture's lists do not change). `None` without a set.
    pub fn accepted(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        self.on("subscriptions/listen").ok()?;
        let uris: Vec<String> =
            requested.resource_subscriptions.iter().flatten().filter(|u| self.known(u)).cloned().collect();
        if let Ok(mut p) = self.pending.lock() {
            p.push_back(self.updates.subscribe());
        }
        Some(SubscriptionFilter::builder().resource_subscriptions(uris).build())
    }

    /// Runs one subscription: `notifications/resources/updated` for each accepted URI `touch`
    /// changes, until the client cancels it or goes away.
    pub async fn listen(&self, cx: SubscriptionContext) -> Result<(), McpError> {
        use tokio::sync::broadcast::error::RecvError;
        let taken = self.pending.lock().ok().and_then(|mut p| p.pop_front());
        let mut changes = taken.unwrap_or_else(|| self.updates.subscribe());
        let wanted = cx.accepted().resource_subscriptions.clone().unwrap_or_default();
        loop {
            tokio::select! {
                () = cx.cancelled() => return Ok(()),
                change = changes.recv() => match change {
                    Ok(uri) if wanted.contains(&uri) => {
                        if cx.sink().notify_resource_updated(uri).await.is_err() {
                            return Ok(());
                        }
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return Ok(()),
                },
            }
        }
    }

    fn prompts(&self) -> Vec<Value> {
        let mut out = vec![
            json!({"name": "summarize", "title": "Summarize the read-me", "description": "Ask for a summary of fixture://readme (no arguments)."}),
            json!({"name": "greet", "description": "Greet someone in a language.", "arguments": [
                {"name": "language", "description": "The language (completes).", "required": true},
                {"name": "name", "description": "Who to greet (default: world).", "required": false}
            ]}),
        ];
        if self.extras.conformance {
            out.extend([
                json!({"name": "test_simple_prompt", "description": "A simple prompt without arguments."}),
                json!({"name": "test_prompt_with_arguments", "description": "A prompt with two arguments.", "arguments": [
                    {"name": "arg1", "description": "First test argument", "required": true},
                    {"name": "arg2", "description": "Second test argument", "required": true}
                ]}),
                json!({"name": "test_prompt_with_embedded_resource", "description": "A prompt that embeds a resource.", "arguments": [
                    {"name": "resourceUri", "description": "URI of the resource to embed", "required": true}
                ]}),
                json!({"name": "test_prompt_with_image", "description": "A prompt with an image."}),
            ]);
        }
        out
    }

    pub fn list_prompts(&self) -> Result<ListPromptsResult, McpError> {
        self.on("prompts/list")?;
        from_json(json!({"prompts": self.prompts()}))
    }

    pub fn get_prompt(&self, name: &str, args: &serde_json::Map<String, Value>) -> Result<GetPromptResult, McpError> {
        self.on("prompts/get")?;
        let arg = |k: &str| args.get(k).and_then(Value::as_str);
        let required = |k: &str| {
            arg(k).ok_or_else(|| McpError::invalid_params(format!("prompt {name}: missing argument {k}"), None))
        };
        let user = |content: Value| json!({"role": "user", "content": content});
        let say = |t: String| user(json!({"type": "text", "text": t}));
        let conformance = self.extras.conformance;
        let messages = match name {
            "summarize" => vec![say("Summarize the resource fixture://readme in one sentence.".into())],
            "greet" => {
                let language = required("language")?;
                vec![say(format!("Say hello to {} in {language}.", arg("name").unwrap_or("world")))]
            }
            "test_simple_prompt" if conformance => vec![say("This is a simple prompt for testing.".into())],
            "test_prompt_with_arguments" if conformance => {
                let (a, b) = (required("arg1")?, required("arg2")?);
                vec![say(format!("Prompt with arguments: arg1='{a}', arg2='{b}'"))]
            }
            "test_prompt_with_embedded_resource" if conformance => {
                let uri = required("resourceUri")?;
                vec![
                    user(
                        json!({"type": "resource", "resource": {"uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}}),
                    ),
                    say("Please process the embedded resource above.".into()),
                ]
            }
            "test_prompt_with_image" if conformance => vec![
                user(json!({"type": "image", "data": PNG_1X1, "mimeType": "image/png"})),
                say("Please analyze the image above.".into()),
            ],
            _ => return Err(McpError::invalid_params(format!("no prompt named {name}"), None)),
        };
        let description = self.prompts().into_iter().find(|p| p["name"] == name).map(|p| p["description"].clone());
        from_json(json!({"description": description, "messages": messages}))
    }

    /// `completion/complete`: the candidates of a prompt's or template's argument that start
    /// with the typed value (case-insensitively), in a fixed order.
    pub fn complete(&self, request: &CompleteRequestParams) -> Result<CompleteResult, McpError> {
        self.on("completion/complete")?;
        let conformance = self.extras.conformance;
        let candidates: &[&str] = match (&request.r#ref, request.argument.name.as_str()) {
            (Reference::Prompt(p), "language") if p.name == "greet" => {
                &["english", "esperanto", "french", "german", "spanish"]
            }
            (Reference::Prompt(p), "arg1") if conformance && p.name == "test_prompt_with_arguments" => {
                &["paris", "park", "party"]
            }
            (Reference::Resource(r), "id") if r.uri == "fixture://items/{id}" => {
                &["apple", "apricot", "banana", "cherry"]
            }
            (Reference::Resource(r), "id") if conformance && r.uri == "test://template/{id}/data" => &["123", "456"],
            _ => &[],
        };
        let typed = request.argument.value.to_lowercase();
        let values: Vec<&str> = candidates.iter().copied().filter(|c| c.starts_with(&typed)).collect();
        from_json(json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}))
    }

    /// `logging/setLevel`: the least severe level this session hears from now on.
    pub fn set_level(&self, level: LoggingLevel) -> Result<(), McpError> {
        self.on("logging/setLevel")?;
        if let Ok(mut l) = self.session.level.lock() {
            *l = Some(level);
        }
        Ok(())
    }

    /// `log` at `info`, the level of every message the fixture sends.
    pub async fn info(&self, cx: &RequestContext<RoleServer>, text: &str) {
        self.log(cx, LoggingLevel::Info, text).await;
    }

    /// Sends `text` as a log message at `level` unless the client asked for less: the request's
    /// own level (`_meta`, 2026-07-28) wins, then the session's `logging/setLevel`, else `info`.
    async fn log(&self, cx: &RequestContext<RoleServer>, level: LoggingLevel, text: &str) {
        let session = self.session.level.lock().ok().and_then(|l| *l);
        let wanted = cx.meta.log_level().or(session).unwrap_or(LoggingLevel::Info);
        if (level as u8) < (wanted as u8) {
            return;
        }
        let mut p = LoggingMessageNotificationParam::new(level, Value::String(text.to_string()));
        p.logger = Some("fixture".into());
        let _ = cx.peer.notify_logging_message(p).await;
    }
}

#[rmcp::tool_router(router = resources_router, vis = "pub(crate)")]
impl super::Fixture {
    #[rmcp::tool(
        description = "Change the watched resources (fixture://counter, and test://watched-resource with --conformance): their revision goes up by one and subscribers get notifications/resources/updated (only with --resources or --conformance)."
    )]
    async fn touch(&self, cx: RequestContext<RoleServer>) -> String {
        format!("revision {}", self.resources.touch(&cx).await)
    }
}
