//! `agent-fixture-server`: the MCP server the tests and benchmarks talk to, written with rmcp.
//!
//! Serves over stdio (default) or Streamable HTTP (`--http 127.0.0.1:0`, prints
//! `listening on http://ADDR/mcp` on stdout). Its tools exercise what a client must handle:
//! `echo`, `add` (outputSchema + structuredContent), `big` (~5 MB of text), `fail` (isError),
//! `sleep` (ms; logs `sleep N ms started (request ID)`), `crash` (exits mid-call), `progress` (progress notifications), `complex`
//! (`$defs`/`$ref`, `anyOf` with null, enums, nested arrays and objects, recursion),
//! `image` (image content), `headers` (the HTTP request headers it received), `profile` (JSON
//! text without an output schema, for learned types) and `text.upper`
//! (a dot in the name). `tools/list` is paginated
//! (`--page-size`, default 3) so clients must follow `nextCursor`. A `notifications/cancelled`
//! is logged as `cancelled ID`.
//!
//! Start-failure modes for tests: `--exit-on-start` (writes to stderr and exits 3) and
//! `--hang-on-start` (never answers `initialize`). `--tag X` is ignored (tests find their processes by it).
//! `--response-id last` writes each stdio answer's `id` last, as the TypeScript SDK does;
//! `--response-id middle` writes it between `result` and `jsonrpc` (neither first nor last).
//! `--relist-hangs`: `echo` announces `tools/list_changed`, after which tools/list never answers.
//! `--form` adds `form` (string, enum, number, boolean, a default and an array: the fields an
//! interactive call prompts for). `--tools-file FILE` serves the tools of FILE (a tools array,
//! `{"tools": [...]}` or an `agent mcp list --json` file) instead of its own, each answering
//! `called NAME with ARGS` (a real server for a real catalog, e.g. tests/data/github-mcp-server.json).
//! `--destructive` adds `delete_item` (annotated `destructiveHint: true`; approvals).
//! `--wrapped` adds `wrapped`: the message as text plus `structuredContent` `{"result": message}`,
//! as Python's FastMCP answers a tool that returns a plain value (the text is not that JSON).
//! `--echo-retires`: `echo` announces `tools/list_changed`, after which tools/list leaves `echo` out.
//! `--host-tools` adds the tools that ask the host (elicitation, sampling, roots): `elicit_form` (defaults, enums with
//! `enumNames` and `oneOf` titles; `require_note` adds a required field without default; `multi`
//! asks multi-select fields instead, `bad_default` with a default outside the enum),
//! `elicit_url`, `sample` (the host's model), `roots` and `reflect` (runs only after the host's model
//! justified the call as JSON, validated and cached per argument set). They ask with a classic
//! server-to-client request on sessions before 2026-07-28 and with an `input_required` result
//! (MRTR) on 2026-07-28 sessions; `--protocol 2025-11-25` makes the server offer that older version.
//! `--hostile` adds tools whose every text carries what a terminal would obey (ESC and C1
//! sequences, CR, an OSC 8 link, DEL, a bidi override): `hostile_text` (title, description,
//! result, progress message), `hostile_form` (an elicitation form) and `hostile_url` (a URL
//! elicitation, `file:` unless told otherwise).
//! `--oauth` (with `--token-ttl SECS`, `--refresh-delay MS`, `--as-path PATH`, `--call-scope S`, `--stingy`, `--oauth-log FILE`) protects the HTTP endpoint with an
//! OAuth authorization server of its own (`fixture_server/oauth.rs`). `--env-tool` adds `env` (its environment variables as JSON); `--http-json` answers HTTP
//! requests with a JSON body (stateless) instead of an SSE stream.
//!
//! `--resources` adds resources (`fixture://readme` Markdown, `fixture://logo.png` binary,
//! `fixture://config.json`, `fixture://counter`; unlisted, `fixture://slow/MS` answers after MS
//! milliseconds), the template `fixture://items/{id}` (`id`
//! completes), the prompts `summarize` and `greet` (its `language` completes), logging
//! (`logging/setLevel`; each `resources/read` and `prompts/get` logs `read URI` / `prompt NAME`
//! at `info`), `resources/subscribe` and the tool `touch` (bumps `fixture://counter`'s revision
//! and sends `notifications/resources/updated` to a session that subscribed, or on 2026-07-28 to
//! each `subscriptions/listen` that names the resource); with `--hostile`
//! also a resource whose URI, name and text carry the `--hostile` sequences
//! (`fixture_server/resources.rs`). `--no-tools` (with `--resources`) declares resources only
//! and answers `tools/list` with -32601, as a resources-only server may. `--conformance` implies `--resources` and adds what the MCP
//! conformance suite's server scenarios ask for: the `test_*` tools and `json_schema_2020_12_tool`
//! (`fixture_server/conformance.rs`), the `test://` resources and template and the `test_*`
//! prompts; it lists every tool on one page unless `--page-size` says otherwise. Without either
//! flag the tools and capabilities are the ones above (tools only).

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData as McpError, Json, RoleServer, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router,
};
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    message: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// Left operand.
    a: i64,
    /// Right operand.
    b: i64,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
struct AddOutput {
    /// a + b
    sum: i64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct BigArgs {
    /// Approximate size of the text to return, in bytes (default 5,000,000).
    bytes: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SleepArgs {
    /// How long to sleep, in milliseconds.
    ms: u64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ProgressArgs {
    /// Number of progress notifications to send (default 5).
    steps: Option<u32>,
    /// Delay between steps in milliseconds (default 20).
    delay_ms: Option<u64>,
}

/// How thoroughly to search.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Fast,
    Thorough,
}

/// Comparison operator.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
enum Op {
    #[serde(rename = "eq")]
    Eq,
    #[serde(rename = "ne")]
    Ne,
    #[serde(rename = "gt")]
    Gt,
}

/// One filter clause.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Filter {
    /// Field to compare.
    field: String,
    op: Op,
    /// Value to compare with (any JSON).
    value: serde_json::Value,
}

/// A tree node (recursive).
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Node {
    name: String,
    #[serde(default)]
    children: Vec<Node>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ComplexArgs {
    /// Search text.
    query: String,
    /// Search mode; null means the server default.
    mode: Option<Mode>,
    /// All filters must match.
    #[serde(default)]
    filters: Vec<Filter>,
    /// A matrix of numbers.
    matrix: Option<Vec<Vec<f64>>>,
    /// Free-form labels.
    labels: Option<BTreeMap<String, String>>,
    /// Maximum results.
    #[schemars(range(min = 1, max = 100))]
    limit: Option<u32>,
    /// Optional tree.
    tree: Option<Node>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
struct ComplexOutput {
    query: String,
    mode: Option<Mode>,
    limit: Option<u32>,
    label_count: usize,
    filter_count: usize,
    cells: usize,
    nodes: usize,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct UpperArgs {
    text: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct DeleteArgs {
    /// The item to delete.
    id: String,
}

/// How urgent a ticket is.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Priority {
    Low,
    Normal,
    High,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct FormArgs {
    /// Title of the ticket.
    title: String,
    priority: Priority,
    /// Estimated hours of work.
    hours: f64,
    /// Tell the watchers.
    notify: bool,
    /// Copies to file.
    #[serde(default = "one")]
    copies: u32,
    /// Labels to attach.
    labels: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ElicitFormArgs {
    /// Add a required field that has no default (`accept_defaults` must decline).
    #[serde(default)]
    require_note: bool,
    /// Ask multi-select fields instead (SEP-1330): `tags` (titled, 1 to 2, default `["docs"]`)
    /// and `days` (untitled, default `["mon", "wed"]`).
    #[serde(default)]
    multi: bool,
    /// With `multi`: a `tags` default outside its choices (`accept_defaults` must decline).
    #[serde(default)]
    bad_default: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SampleArgs {
    /// What to ask the host's model.
    prompt: String,
    /// Tokens the server asks for (default 100).
    max_tokens: Option<u32>,
    /// Stop sequences.
    stop: Option<Vec<String>>,
    /// Send image content instead of text (a request the host cannot sample).
    #[serde(default)]
    image: bool,
    /// On 2026-07-28 sessions: when the host leaves the request unanswered (it refused), answer
    /// without the model instead of asking again.
    #[serde(default)]
    optional: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ReflectArgs {
    /// What to do.
    action: String,
    /// What to do it to.
    target: String,
}

/// Whether a tool got what it asked the host, or must return an `input_required` result first.
enum Asked {
    Got(serde_json::Value),
    Failed(String),
    Pending(rmcp::model::CallToolResponse),
}

/// Asks the host: a classic request on sessions before 2026-07-28, else an `input_required`
/// round (`responses` holds the answers of the round before).
async fn ask_host(
    cx: &RequestContext<RoleServer>,
    responses: &Option<rmcp::model::InputResponses>,
    key: &str,
    method: &str,
    params: serde_json::Value,
) -> Asked {
    use rmcp::model::ProtocolVersion;
    // The request names its version on 2026-07-28 sessions (which have no `initialize`).
    let mrtr = cx.protocol_version().is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    if mrtr {
        if let Some(v) = responses.as_ref().and_then(|r| r.get(key)) {
            return Asked::Got(v.clone());
        }
        let request = serde_json::json!({"method": method, "params": params});
        let doc = serde_json::json!({"resultType": "input_required", "inputRequests": {key: request}, "requestState": format!("asked:{key}")});
        return match serde_json::from_value::<rmcp::model::InputRequiredResult>(doc) {
            Ok(r) => Asked::Pending(r.into()),
            Err(e) => Asked::Failed(format!("cannot build the input request: {e}")),
        };
    }
    let request = serde_json::json!({"method": method, "params": params});
    let request: rmcp::model::ServerRequest = match serde_json::from_value(request) {
        Ok(r) => r,
        Err(e) => return Asked::Failed(format!("cannot build the request: {e}")),
    };
    match cx.peer.send_request(request).await {
        Ok(r) => match serde_json::to_value(r) {
            Ok(v) => Asked::Got(v),
            Err(e) => Asked::Failed(e.to_string()),
        },
        Err(rmcp::ServiceError::McpError(e)) => Asked::Failed(e.message.to_string()),
        Err(e) => Asked::Failed(e.to_string()),
    }
}

fn text_result(text: String, error: bool) -> rmcp::model::CallToolResponse {
    if error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    }
    .into()
}

/// A tool's result for an elicitation it asked: the `input_required` result while pending, else
/// `ACTION: CONTENT` for a form, `url: ACTION` for URL mode.
fn elicitation_result(asked: Asked, form: bool) -> rmcp::model::CallToolResponse {
    match asked {
        Asked::Pending(p) => p,
        Asked::Failed(e) => text_result(format!("elicitation failed: {e}"), true),
        Asked::Got(v) => {
            let action = v.get("action").and_then(serde_json::Value::as_str).unwrap_or("?");
            let content = v.get("content").cloned().unwrap_or_default();
            text_result(if form { format!("{action}: {content}") } else { format!("url: {action}") }, false)
        }
    }
}

/// The JSON a reflection must produce.
fn justification_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "required": ["reason", "risk"], "properties": {
        "reason": {"type": "string", "minLength": 3},
        "risk": {"type": "string", "enum": ["low", "medium", "high"]}
    }})
}

/// A justification the host's model wrote, or why it is not one.
fn check_justification(text: &str) -> Result<serde_json::Value, String> {
    let v: serde_json::Value = serde_json::from_str(text.trim()).map_err(|e| format!("not JSON: {e}"))?;
    let reason = v.get("reason").and_then(serde_json::Value::as_str).unwrap_or_default();
    let risk = v.get("risk").and_then(serde_json::Value::as_str).unwrap_or_default();
    if reason.chars().count() < 3 {
        return Err("`reason` must be a string of at least 3 characters".into());
    }
    if !["low", "medium", "high"].contains(&risk) {
        return Err("`risk` must be low, medium or high".into());
    }
    Ok(v)
}

#[derive(Clone)]
struct Fixture {
    tool_router: ToolRouter<Self>,
    page_size: usize,
    /// `--relist-hangs`: `echo` announces a changed tool list, and tools/list never answers again.
    relist_hangs: bool,
    announced: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// `--echo-retires`: `echo` announces a changed tool list without itself.
    echo_retires: bool,
    retired: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// `reflect`: justifications per argument set.
    justified: std::sync::Arc<std::sync::Mutex<BTreeMap<String, serde_json::Value>>>,
    /// `--protocol V`: the only protocol version offered.
    protocol: Option<rmcp::model::ProtocolVersion>,
    /// `--resources`, `--conformance`: resources, prompts, completions and logging.
    resources: resources::State,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ProfileArgs {
    /// Which profile (default 0): even ones have an email, every fourth a text score.
    i: Option<u64>,
}

#[tool_router]
impl Fixture {
    #[tool(description = "Echo the message back as text.", annotations(read_only_hint = true, idempotent_hint = true))]
    async fn echo(&self, Parameters(a): Parameters<EchoArgs>, cx: RequestContext<RoleServer>) -> String {
        if self.relist_hangs {
            self.announced.store(true, std::sync::atomic::Ordering::SeqCst);
            let _ = cx.peer.notify_tool_list_changed().await;
        }
        if self.echo_retires {
            self.retired.store(true, std::sync::atomic::Ordering::SeqCst);
            let _ = cx.peer.notify_tool_list_changed().await;
        }
        a.message
    }

    #[tool(description = "Add two integers; returns {sum}.", annotations(title = "Add numbers", read_only_hint = true))]
    async fn add(&self, Parameters(a): Parameters<AddArgs>) -> Json<AddOutput> {
        Json(AddOutput { sum: a.a.wrapping_add(a.b) })
    }

    #[tool(description = "Return a large text (about 5 MB unless `bytes` says otherwise).")]
    async fn big(&self, Parameters(a): Parameters<BigArgs>) -> String {
        let want = a.bytes.unwrap_or(5_000_000).min(100_000_000);
        let mut s = String::with_capacity(want + 80);
        let mut i = 0u64;
        while s.len() < want {
            s.push_str(&format!("line {i:08}: the quick brown fox jumps over the lazy dog\n"));
            i += 1;
        }
        s.truncate(want);
        s
    }

    #[tool(description = "Always fails with isError: true.")]
    async fn fail(&self) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::error(vec![ContentBlock::text("boom: this tool always fails")]))
    }

    #[tool(description = "Sleep for `ms` milliseconds, then answer.", annotations(read_only_hint = true))]
    async fn sleep(&self, Parameters(a): Parameters<SleepArgs>, cx: RequestContext<RoleServer>) -> String {
        // Tests wait for this line in the server's stderr log to know a call is in flight.
        eprintln!("fixture: sleep {} ms started (request {})", a.ms, cx.id);
        tokio::time::sleep(Duration::from_millis(a.ms)).await;
        format!("slept {} ms", a.ms)
    }

    #[tool(description = "Exit the server process in the middle of the call.")]
    async fn crash(&self) -> String {
        eprintln!("fixture: crashing on purpose");
        std::process::exit(3);
    }

    #[tool(description = "Send progress notifications, then answer.")]
    async fn progress(&self, Parameters(a): Parameters<ProgressArgs>, cx: RequestContext<RoleServer>) -> String {
        let steps = a.steps.unwrap_or(5);
        let delay = Duration::from_millis(a.delay_ms.unwrap_or(20));
        if let Some(token) = cx.meta.get_progress_token() {
            for i in 1..=steps {
                let p = ProgressNotificationParam::new(token.clone(), i as f64)
                    .with_total(steps as f64)
                    .with_message(format!("step {i}"));
                let _ = cx.peer.notify_progress(p).await;
                tokio::time::sleep(delay).await;
            }
        }
        format!("done after {steps} steps")
    }

    #[tool(description = "Exercise a complex input schema ($defs, $ref, anyOf with null, enums, nested arrays).")]
    async fn complex(&self, Parameters(a): Parameters<ComplexArgs>) -> Json<ComplexOutput> {
        fn count(n: &Node) -> usize {
            1 + n.children.iter().map(count).sum::<usize>()
        }
        Json(ComplexOutput {
            query: a.query,
            mode: a.mode,
            limit: a.limit,
            label_count: a.labels.map(|l| l.len()).unwrap_or(0),
            filter_count: a.filters.len(),
            cells: a.matrix.map(|m| m.iter().map(Vec::len).sum()).unwrap_or(0),
            nodes: a.tree.as_ref().map(count).unwrap_or(0),
        })
    }

    #[tool(description = "Return a 1x1 PNG image.")]
    async fn image(&self) -> CallToolResult {
        const PNG_1X1: &str =
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        CallToolResult::success(vec![ContentBlock::image(PNG_1X1, "image/png")])
    }

    #[tool(description = "Over HTTP: the request headers this call arrived with (stdio: an empty object).")]
    async fn headers(&self, cx: RequestContext<RoleServer>) -> Json<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        if let Some(parts) = cx.extensions.get::<http::request::Parts>() {
            for (k, v) in &parts.headers {
                out.insert(k.as_str().to_string(), v.to_str().unwrap_or("<binary>").to_string());
            }
        }
        Json(out)
    }

    #[tool(
        description = "A user profile as JSON text, without an output schema: stable, optional and varying fields.",
        annotations(read_only_hint = true)
    )]
    async fn profile(&self, Parameters(a): Parameters<ProfileArgs>) -> String {
        let i = a.i.unwrap_or(0);
        let status = ["active", "idle", "away"][(i % 3) as usize];
        let mut v = serde_json::json!({
            "id": i, "name": format!("user{i}"), "created": "2026-01-02T03:04:05Z", "status": status, "tags": ["a", "b"],
        });
        if i % 2 == 0 {
            v["email"] = serde_json::json!(format!("u{i}@example.com"));
        }
        v["score"] = if i % 4 == 3 { serde_json::json!("n/a") } else { serde_json::json!(i * 10) };
        v.to_string()
    }

    #[tool(description = "File a ticket (a form of every field kind; only with --form).")]
    async fn form(&self, Parameters(a): Parameters<FormArgs>) -> String {
        format!(
            "filed {:?}: {:?}, {} h, notify {}, {} copies, labels {:?}",
            a.title,
            a.priority,
            a.hours,
            a.notify,
            a.copies,
            a.labels.unwrap_or_default()
        )
    }

    #[tool(description = "Ask the user for a few fields (defaults, enums); only with --host-tools.")]
    async fn elicit_form(
        &self,
        Parameters(a): Parameters<ElicitFormArgs>,
        InputResponses(r): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> rmcp::model::CallToolResponse {
        let mut schema = serde_json::json!({"type": "object", "properties": {
            "name": {"type": "string", "title": "Your name", "default": "Ada"},
            "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
            "ratio": {"type": "number", "default": 0.5},
            "color": {"type": "string", "enum": ["r", "g", "b"], "enumNames": ["Red", "Green", "Blue"], "default": "g"},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}], "default": "l"},
            "subscribe": {"type": "boolean", "default": true}
        }, "required": ["name"]});
        if a.require_note {
            schema["properties"]["note"] = serde_json::json!({"type": "string"});
            schema["required"] = serde_json::json!(["name", "note"]);
        }
        if a.multi {
            let tags = if a.bad_default { serde_json::json!(["docs", "urgent"]) } else { serde_json::json!(["docs"]) };
            schema = serde_json::json!({"type": "object", "properties": {
                "tags": {"type": "array", "title": "Labels", "minItems": 1, "maxItems": 2, "default": tags, "items": {"anyOf": [
                    {"const": "bug", "title": "Bug report"}, {"const": "docs", "title": "Documentation"}, {"const": "perf", "title": "Performance"}]}},
                "days": {"type": "array", "items": {"type": "string", "enum": ["mon", "tue", "wed"]}, "default": ["mon", "wed"]}
            }, "required": ["tags"]});
        }
        let params =
            serde_json::json!({"mode": "form", "message": "Tell me about the order", "requestedSchema": schema});
        elicitation_result(ask_host(&cx, &r, "form", "elicitation/create", params).await, true)
    }

    #[tool(description = "Ask the user to visit a URL; only with --host-tools.")]
    async fn elicit_url(
        &self,
        InputResponses(r): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> rmcp::model::CallToolResponse {
        let params = serde_json::json!({"mode": "url", "message": "Connect your account", "url": "https://example.com/connect?id=42", "elicitationId": "e42"});
        elicitation_result(ask_host(&cx, &r, "url", "elicitation/create", params).await, false)
    }

    #[tool(description = "The host's roots (roots/list); only with --host-tools.")]
    async fn roots(
        &self,
        InputResponses(r): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> rmcp::model::CallToolResponse {
        // A 2026-07-28 request carries the client's capabilities in its `_meta` (no handshake info).
        let advertised = match cx.peer.peer_info() {
            Some(i) => i.capabilities.roots.is_some(),
            None => cx.meta.client_capabilities().is_some_and(|c| c.roots.is_some()),
        };
        match ask_host(&cx, &r, "roots", "roots/list", serde_json::json!({})).await {
            Asked::Pending(p) => p,
            Asked::Failed(e) => text_result(format!("roots failed: {e}"), true),
            Asked::Got(v) => {
                let protocol = cx.protocol_version().map(|v| v.to_string()).unwrap_or_else(|| "?".into());
                text_result(format!("advertised: {advertised}; roots: {}; protocol: {protocol}", v["roots"]), false)
            }
        }
    }

    #[tool(description = "Ask the host's model (sampling); only with --host-tools.")]
    async fn sample(
        &self,
        Parameters(a): Parameters<SampleArgs>,
        InputResponses(r): InputResponses,
        RequestState(state): RequestState,
        cx: RequestContext<RoleServer>,
    ) -> rmcp::model::CallToolResponse {
        let answered = r.as_ref().is_some_and(|r| r.contains_key("sample"));
        if a.optional && state.as_deref() == Some("asked:sample") && !answered {
            return text_result("no sample: the host refused; answered without the model".into(), false);
        }
        let content = if a.image {
            serde_json::json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
        } else {
            serde_json::json!({"type": "text", "text": a.prompt})
        };
        let mut params = serde_json::json!({
            "messages": [{"role": "user", "content": content}],
            "systemPrompt": "You are terse.",
            "maxTokens": a.max_tokens.unwrap_or(100),
        });
        if let Some(stop) = a.stop {
            params["stopSequences"] = serde_json::json!(stop);
        }
        match ask_host(&cx, &r, "sample", "sampling/createMessage", params).await {
            Asked::Pending(p) => p,
            Asked::Failed(e) => text_result(format!("sampling failed: {e}"), true),
            Asked::Got(v) => {
                let text = v.pointer("/content/text").and_then(serde_json::Value::as_str).unwrap_or_default();
                let model = v.get("model").and_then(serde_json::Value::as_str).unwrap_or_default();
                text_result(format!("model {model} said: {text}"), false)
            }
        }
    }

    #[tool(
        description = "Do `action` to `target`, after the host's model justified it (reflection precondition); only with --host-tools."
    )]
    async fn reflect(
        &self,
        Parameters(a): Parameters<ReflectArgs>,
        InputResponses(r): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> rmcp::model::CallToolResponse {
        let key = serde_json::json!([a.action, a.target]).to_string();
        let cached = self.justified.lock().ok().and_then(|m| m.get(&key).cloned());
        let (justification, how) = match cached {
            Some(j) => (j, "cache hit"),
            None => {
                let prompt = format!(
                    "Before `reflect` runs with action={:?} target={:?}: justify the call. Answer with JSON only, matching this schema: {}",
                    a.action,
                    a.target,
                    justification_schema()
                );
                let params = serde_json::json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "systemPrompt": "You justify tool calls before they run. Answer with one JSON object.",
                    "maxTokens": 200,
                });
                let text = match ask_host(&cx, &r, "justify", "sampling/createMessage", params).await {
                    Asked::Pending(p) => return p,
                    Asked::Failed(e) => return text_result(format!("reflection failed: {e}"), true),
                    Asked::Got(v) => {
                        v.pointer("/content/text").and_then(serde_json::Value::as_str).unwrap_or_default().to_string()
                    }
                };
                match check_justification(&text) {
                    Ok(j) => {
                        if let Ok(mut m) = self.justified.lock() {
                            m.insert(key, j.clone());
                        }
                        (j, "cache miss")
                    }
                    Err(e) => return text_result(format!("reflection rejected: {e}; not run"), true),
                }
            }
        };
        text_result(format!("did {} to {} ({how}; justified: {justification})", a.action, a.target), false)
    }

    #[tool(description = "Delete an item (only with --destructive).", annotations(destructive_hint = true))]
    async fn delete_item(&self, Parameters(a): Parameters<DeleteArgs>) -> String {
        format!("deleted {}", a.id)
    }

    #[tool(description = "The message as text, and as {result} in structuredContent (only with --wrapped).")]
    async fn wrapped(&self, Parameters(a): Parameters<EchoArgs>) -> CallToolResult {
        let mut r = CallToolResult::success(vec![ContentBlock::text(a.message.clone())]);
        r.structured_content = Some(serde_json::json!({ "result": a.message }));
        r
    }

    #[tool(name = "text.upper", description = "Upper-case the text (a tool name with a dot).")]
    async fn text_upper(&self, Parameters(a): Parameters<UpperArgs>) -> String {
        a.text.to_uppercase()
    }
}

/// What every text of the `--hostile` tools holds, between the markers A to H: a clear-screen, a
/// CR and an erase-line that would rewrite the line, an OSC 8 hyperlink hiding
/// `file:///tmp/evil.desktop` behind `D`, a C1 CSI (U+009B), DEL and a right-to-left override.
/// (`hostile_text`'s title and description repeat it: attributes take literals only.)
const HOSTILE: &str = "A\x1b[2JB\r\x1b[2KC\x1b]8;;file:///tmp/evil.desktop\x07D\x1b]8;;\x07E\u{9b}31mF\u{7f}G\u{202e}H";

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct HostileArgs {
    /// Answer with `isError: true`.
    #[serde(default)]
    error: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct HostileUrlArgs {
    /// The URL the user is asked to visit (default `file:///tmp/evil.desktop`).
    url: Option<String>,
}

#[tool_router(router = hostile_router)]
impl Fixture {
    #[tool(
        description = "A\x1b[2JB\r\x1b[2KC\x1b]8;;file:///tmp/evil.desktop\x07D\x1b]8;;\x07E\u{9b}31mF\u{7f}G\u{202e}H",
        annotations(
            title = "A\x1b[2JB\r\x1b[2KC\x1b]8;;file:///tmp/evil.desktop\x07D\x1b]8;;\x07E\u{9b}31mF\u{7f}G\u{202e}H",
            read_only_hint = true
        )
    )]
    async fn hostile_text(
        &self,
        Parameters(a): Parameters<HostileArgs>,
        cx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        if let Some(token) = cx.meta.get_progress_token() {
            let p = ProgressNotificationParam::new(token, 1.0).with_total(2.0).with_message(HOSTILE.to_string());
            let _ = cx.peer.notify_progress(p).await;
            // Work after the report, as a real server would: a client handles a notification
            // on its own task, so one sent right before the answer may be shown after it, or
            // not at all once the call is over.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let content = vec![ContentBlock::text(HOSTILE)];
        if a.error { CallToolResult::error(content) } else { CallToolResult::success(content) }
    }

    #[tool(description = "Ask for a form whose message, titles, choices and default are hostile.")]
    async fn hostile_form(
        &self,
        InputResponses(r): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> rmcp::model::CallToolResponse {
        let schema = serde_json::json!({"type": "object", "properties": {
            "choice": {"type": "string", "title": HOSTILE, "description": HOSTILE, "enum": ["a", "b"], "enumNames": [HOSTILE, "plain"]},
            "note": {"type": "string", "title": "Note", "default": HOSTILE}
        }, "required": ["choice"]});
        let params = serde_json::json!({"mode": "form", "message": HOSTILE, "requestedSchema": schema});
        elicitation_result(ask_host(&cx, &r, "form", "elicitation/create", params).await, true)
    }

    #[tool(description = "Ask the user to visit a URL (`file:` unless `url` says otherwise) with a hostile message.")]
    async fn hostile_url(
        &self,
        Parameters(a): Parameters<HostileUrlArgs>,
        InputResponses(r): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> rmcp::model::CallToolResponse {
        let url = a.url.unwrap_or_else(|| "file:///tmp/evil.desktop".into());
        let params = serde_json::json!({"mode": "url", "message": HOSTILE, "url": url, "elicitationId": "hostile"});
        elicitation_result(ask_host(&cx, &r, "url", "elicitation/create", params).await, false)
    }
}

impl Fixture {
    /// The fixture for one more HTTP session: the same tools and flags, its own log level and
    /// resource subscriptions.
    fn for_session(&self) -> Self {
        Self { resources: self.resources.for_session(), ..self.clone() }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let info = ServerConfig::new(self.resources.capabilities())
            .with_server_info(Implementation::new("agent-fixture", env!("CARGO_PKG_VERSION")))
            .with_instructions("Test fixture for agent.");
        match &self.protocol {
            Some(v) => info.with_protocol_version(v.clone()),
            None => info,
        }
    }

    async fn on_cancelled(
        &self,
        n: rmcp::model::CancelledNotificationParam,
        _cx: rmcp::service::NotificationContext<RoleServer>,
    ) {
        // Tests wait for this line to know a client's cancellation arrived.
        let id = n.request_id.map(|i| i.to_string()).unwrap_or_default();
        eprintln!("fixture: cancelled {id}");
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        self.resources.list_resources()
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        self.resources.list_templates()
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        if let Some(wait) = self.resources.slow(&request.uri) {
            tokio::time::sleep(wait).await;
        }
        let read = self.resources.read(&request.uri)?;
        self.resources.info(&cx, &format!("read {}", request.uri)).await;
        Ok(read.into())
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.resources.subscribe(&request.uri)
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.resources.unsubscribe(&request.uri)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        self.resources.accepted(requested)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        self.resources.listen(context).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        self.resources.list_prompts()
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        let prompt = self.resources.get_prompt(&request.name, &request.arguments.unwrap_or_default())?;
        self.resources.info(&cx, &format!("prompt {}", request.name)).await;
        Ok(prompt.into())
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        self.resources.complete(&request)
    }

    #[allow(deprecated)] // logging is legacy in rmcp (SEP-2577); the fixture still serves it
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.resources.set_level(request.level)
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        match &self.protocol {
            Some(v) => std::borrow::Cow::Owned(vec![v.clone()]),
            None => std::borrow::Cow::Borrowed(rmcp::model::ProtocolVersion::KNOWN_VERSIONS),
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        if self.resources.extras.no_tools {
            return Err(McpError::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, "tools/list", None));
        }
        if self.announced.load(std::sync::atomic::Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        let mut all = self.tool_router.list_all();
        if self.retired.load(std::sync::atomic::Ordering::SeqCst) {
            all.retain(|t| t.name != "echo");
        }
        let start = match request.and_then(|r| r.cursor) {
            Some(c) => c.parse::<usize>().map_err(|_| McpError::invalid_params("bad cursor", None))?,
            None => 0,
        };
        let end = start.saturating_add(self.page_size).min(all.len());
        let tools = all.get(start..end).map(<[_]>::to_vec).unwrap_or_default();
        Ok(ListToolsResult { tools, next_cursor: (end < all.len()).then(|| end.to_string()), ..Default::default() })
    }
}

#[path = "fixture_server/oauth.rs"]
mod oauth;

#[path = "fixture_server/resources.rs"]
mod resources;

#[path = "fixture_server/conformance.rs"]
mod conformance;

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let mut http: Option<String> = None;
    let mut page_size: Option<usize> = None;
    let mut response_id: Option<String> = None;
    let mut relist_hangs = false;
    let mut form = false;
    let mut destructive = false;
    let mut wrapped = false;
    let mut tools_file: Option<String> = None;
    let mut echo_retires = false;
    let mut host_tools = false;
    let mut hostile = false;
    let mut protocol: Option<rmcp::model::ProtocolVersion> = None;
    let (mut env_tool, mut http_json) = (false, false);
    let mut oauth: Option<()> = None;
    let mut refresh_delay = Duration::ZERO;
    let mut as_path = String::new();
    let mut call_scope: Option<String> = None;
    let mut stingy = false;
    let mut token_ttl = Duration::from_secs(3600);
    let mut oauth_log: Option<String> = None;
    let mut extras = resources::Extras::default();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--oauth" => oauth = Some(()),
            "--as-path" => as_path = args.next().unwrap_or_default(),
            "--call-scope" => call_scope = args.next(),
            "--stingy" => stingy = true,
            "--refresh-delay" => {
                refresh_delay = Duration::from_millis(args.next().and_then(|s| s.parse().ok()).unwrap_or(0))
            }
            "--token-ttl" => token_ttl = Duration::from_secs(args.next().and_then(|s| s.parse().ok()).unwrap_or(3600)),
            "--oauth-log" => oauth_log = args.next(),
            "--env-tool" => env_tool = true,
            "--http-json" => http_json = true,
            "--http" => http = args.next(),
            "--page-size" => page_size = Some(args.next().and_then(|s| s.parse().ok()).unwrap_or(3).max(1)),
            "--resources" => extras.resources = true,
            "--no-tools" => extras.no_tools = true,
            "--conformance" => extras.conformance = true,
            "--exit-on-start" => {
                eprintln!("fixture: refusing to start (--exit-on-start)");
                eprintln!("fixture: second line of stderr");
                return std::process::ExitCode::from(3);
            }
            "--hang-on-start" => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
            "--stderr-noise" => eprintln!("fixture: some noise on stderr at start"),
            "--response-id" => response_id = args.next(),
            "--relist-hangs" => relist_hangs = true,
            "--form" => form = true,
            "--destructive" => destructive = true,
            "--wrapped" => wrapped = true,
            "--tools-file" => tools_file = args.next(),
            "--echo-retires" => echo_retires = true,
            "--host-tools" => host_tools = true,
            "--hostile" => {
                hostile = true;
                extras.hostile = true;
            }
            "--protocol" => {
                protocol = args.next().and_then(|v| serde_json::from_value(serde_json::Value::String(v)).ok())
            }
            // Ignored; lets tests find their own server processes in /proc.
            "--tag" => {
                args.next();
            }
            other => {
                eprintln!("agent-fixture-server: unknown argument {other}");
                eprintln!(
                    "usage: agent-fixture-server [--http ADDR] [--page-size N] [--exit-on-start|--hang-on-start]"
                );
                return std::process::ExitCode::from(2);
            }
        }
    }
    let oauth =
        oauth.map(|()| oauth::Options { token_ttl, log: oauth_log, refresh_delay, as_path, call_scope, stingy });
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fixture: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let tool_router = match &tools_file {
        Some(path) => match file_router(path) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("fixture: --tools-file {path}: {e}");
                return std::process::ExitCode::from(2);
            }
        },
        None => {
            let mut r = Fixture::tool_router();
            for (name, on) in [("form", form), ("delete_item", destructive), ("wrapped", wrapped)] {
                if !on {
                    r = r.with_disabled(name);
                }
            }
            r
        }
    };
    let tool_router = if host_tools || tools_file.is_some() {
        tool_router
    } else {
        ["elicit_form", "elicit_url", "sample", "reflect", "roots"]
            .into_iter()
            .fold(tool_router, |r, t| r.with_disabled(t))
    };
    let tool_router = if hostile { tool_router + Fixture::hostile_router() } else { tool_router };
    // `--conformance` implies `--resources`; `--hostile` alone adds no resource.
    extras.resources |= extras.conformance;
    extras.hostile &= extras.resources;
    let tool_router = if extras.resources { tool_router + Fixture::resources_router() } else { tool_router };
    let mut tool_router = if extras.conformance { tool_router + Fixture::conformance_router() } else { tool_router };
    if extras.conformance {
        match conformance::json_schema_route() {
            Ok(route) => tool_router.add_route(route),
            Err(e) => {
                eprintln!("fixture: json_schema_2020_12_tool: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    // The conformance suite reads the first page of tools/list only.
    let page_size = page_size.unwrap_or(if extras.conformance { usize::MAX } else { 3 });
    // `--env-tool` adds `env` (this process's environment, to see what a server inherits);
    // `--http-json` answers HTTP requests with JSON bodies instead of SSE streams (stateless).
    if env_tool {
        tool_router.add_route(env_route());
    }
    let http_config = rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default();
    let http_config =
        if http_json { http_config.with_legacy_session_mode(false).with_json_response(true) } else { http_config };
    let fixture = Fixture {
        tool_router,
        page_size,
        relist_hangs,
        announced: Default::default(),
        echo_retires,
        retired: Default::default(),
        justified: Default::default(),
        protocol,
        resources: resources::State::new(extras),
    };
    let result = rt.block_on(async move {
        match http {
            None => match response_id {
                None => {
                    let running = fixture.serve(rmcp::transport::stdio()).await?;
                    running.waiting().await?;
                    Ok::<(), Box<dyn std::error::Error>>(())
                }
                Some(at) => {
                    // rmcp writes `id` second; move it while copying each line to stdout.
                    let (server_out, reordered) = tokio::io::duplex(1 << 16);
                    let copy = tokio::spawn(move_response_ids(reordered, at == "last"));
                    let running = fixture.serve((tokio::io::stdin(), server_out)).await?;
                    running.waiting().await?;
                    let _ = copy.await;
                    Ok(())
                }
            },
            Some(addr) => serve_http(fixture, &addr, http_config, oauth).await,
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fixture: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// A router serving the tools of a file; each call answers `called NAME with ARGS`.
fn file_router(path: &str) -> Result<ToolRouter<Fixture>, Box<dyn std::error::Error>> {
    use rmcp::handler::server::router::tool::ToolRoute;
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let list = match &doc {
        serde_json::Value::Object(m) => m.get("tools").cloned().unwrap_or_default(),
        other => other.clone(),
    };
    let serde_json::Value::Array(items) = list else { return Err("expected an array of tools".into()) };
    let mut router = ToolRouter::new();
    for mut item in items {
        if let Some(m) = item.as_object_mut() {
            // `agent mcp list --json` records: drop what is not part of an MCP tool.
            m.remove("server");
            m.retain(|_, v| !v.is_null());
        }
        let tool: rmcp::model::Tool = serde_json::from_value(item)?;
        router.add_route(ToolRoute::new_dyn(tool, |cx| {
            let text = format!(
                "called {} with {}",
                cx.name,
                serde_json::Value::Object(cx.arguments.clone().unwrap_or_default())
            );
            Box::pin(async move {
                Ok(rmcp::model::CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)])))
            })
        }));
    }
    Ok(router)
}

/// Copies JSON-RPC lines to stdout with each answer's `id` moved last, or between `result`
/// (or `error`) and `jsonrpc`.
async fn move_response_ids(from: tokio::io::DuplexStream, last: bool) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut lines = tokio::io::BufReader::new(from).lines();
    let mut out = tokio::io::stdout();
    while let Ok(Some(line)) = lines.next_line().await {
        let moved = match serde_json::from_str::<serde_json::Value>(&line) {
            Ok(serde_json::Value::Object(mut m)) if !m.contains_key("method") && m.contains_key("id") => {
                let id = m.remove("id").unwrap_or_default();
                let jsonrpc = m.remove("jsonrpc").unwrap_or_default();
                if last {
                    m.insert("jsonrpc".into(), jsonrpc);
                    m.insert("id".into(), id);
                } else {
                    m.insert("id".into(), id);
                    m.insert("jsonrpc".into(), jsonrpc);
                }
                serde_json::Value::Object(m).to_string()
            }
            _ => line,
        };
        if out.write_all(format!("{moved}\n").as_bytes()).await.is_err() || out.flush().await.is_err() {
            break;
        }
    }
}

/// `env` (with `--env-tool`): the server's environment as a JSON object of names and values.
fn env_route() -> rmcp::handler::server::router::tool::ToolRoute<Fixture> {
    use rmcp::handler::server::router::tool::ToolRoute;
    let tool: rmcp::model::Tool = serde_json::from_value(serde_json::json!({
        "name": "env",
        "description": "This server's environment variables (only with --env-tool).",
        "inputSchema": {"type": "object", "properties": {}}
    }))
    .expect("the env tool's definition");
    ToolRoute::new_dyn(tool, |_cx| {
        let vars: serde_json::Map<String, serde_json::Value> = std::env::vars_os()
            .map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned().into()))
            .collect();
        let text = serde_json::Value::Object(vars).to_string();
        Box::pin(async move {
            Ok(rmcp::model::CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)])))
        })
    })
}

async fn serve_http(
    fixture: Fixture,
    addr: &str,
    config: rmcp::transport::streamable_http_server::StreamableHttpServerConfig,
    oauth: Option<oauth::Options>,
) -> Result<(), Box<dyn std::error::Error>> {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::service::TowerToHyperService;
    use rmcp::transport::streamable_http_server::StreamableHttpService;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use std::io::Write;

    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    println!("listening on http://{local}/mcp");
    std::io::stdout().flush()?;
    let service =
        StreamableHttpService::new(move || Ok(fixture.for_session()), LocalSessionManager::default().into(), config);
    // `--oauth`: the OAuth endpoints, and a bearer check in front of the MCP service.
    let guard = oauth.map(|o| oauth::Guard::new(format!("http://{local}"), o));
    loop {
        let (stream, _) = listener.accept().await?;
        // Without it a client that keeps its connection waits 40 ms per answer (delayed ACK).
        stream.set_nodelay(true)?;
        if let Some(guard) = &guard {
            let (guard, service) = (guard.clone(), service.clone());
            let svc = hyper::service::service_fn(move |req| {
                let (guard, service) = (guard.clone(), service.clone());
                async move {
                    let answer = match guard.route(req).await {
                        Ok(answer) => answer,
                        Err(req) => {
                            // The body is read first: the method decides which scope it needs.
                            let (parts, body) = req.into_parts();
                            let bytes =
                                http_body_util::BodyExt::collect(body).await.map(|b| b.to_bytes()).unwrap_or_default();
                            let message: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
                            let req = hyper::Request::from_parts(parts, http_body_util::Full::new(bytes));
                            match guard.refusal(&req, message["method"].as_str()) {
                                None => service.handle(req).await,
                                Some(refused) => refused,
                            }
                        }
                    };
                    Ok::<_, std::convert::Infallible>(answer)
                }
            });
            tokio::spawn(async move {
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
            continue;
        }
        let svc = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}
