//! `agent-fixture-server`: the MCP server the tests and benchmarks talk to, written with rmcp.
//!
//! Serves over stdio (default) or Streamable HTTP (`--http 127.0.0.1:0`, prints
//! `listening on http://ADDR/mcp` on stdout). Its tools exercise what a client must handle:
//! `echo`, `add` (outputSchema + structuredContent), `big` (~5 MB of text), `fail` (isError),
//! `sleep` (ms), `crash` (exits mid-call), `progress` (progress notifications), `complex`
//! (`$defs`/`$ref`, `anyOf` with null, enums, nested arrays and objects, recursion),
//! `image` (image content), `headers` (the HTTP request headers it received), `profile` (JSON
//! text without an output schema, for learned types) and `text.upper`
//! (a dot in the name). `tools/list` is paginated
//! (`--page-size`, default 3) so clients must follow `nextCursor`.
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
//! `--echo-retires`: `echo` announces `tools/list_changed`, after which tools/list leaves `echo` out.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig,
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
    async fn sleep(&self, Parameters(a): Parameters<SleepArgs>) -> String {
        // Tests wait for this line in the server's stderr log to know a call is in flight.
        eprintln!("fixture: sleep {} ms started", a.ms);
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

    #[tool(description = "Delete an item (only with --destructive).", annotations(destructive_hint = true))]
    async fn delete_item(&self, Parameters(a): Parameters<DeleteArgs>) -> String {
        format!("deleted {}", a.id)
    }

    #[tool(name = "text.upper", description = "Upper-case the text (a tool name with a dot).")]
    async fn text_upper(&self, Parameters(a): Parameters<UpperArgs>) -> String {
        a.text.to_uppercase()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agent-fixture", env!("CARGO_PKG_VERSION")))
            .with_instructions("Test fixture for agent.")
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
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
        let end = (start + self.page_size).min(all.len());
        let tools = all.get(start..end).map(<[_]>::to_vec).unwrap_or_default();
        Ok(ListToolsResult { tools, next_cursor: (end < all.len()).then(|| end.to_string()), ..Default::default() })
    }
}

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let mut http: Option<String> = None;
    let mut page_size = 3usize;
    let mut response_id: Option<String> = None;
    let mut relist_hangs = false;
    let mut form = false;
    let mut destructive = false;
    let mut tools_file: Option<String> = None;
    let mut echo_retires = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--http" => http = args.next(),
            "--page-size" => page_size = args.next().and_then(|s| s.parse().ok()).unwrap_or(3).max(1),
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
            "--tools-file" => tools_file = args.next(),
            "--echo-retires" => echo_retires = true,
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
            for (name, on) in [("form", form), ("delete_item", destructive)] {
                if !on {
                    r = r.with_disabled(name);
                }
            }
            r
        }
    };
    let fixture = Fixture {
        tool_router,
        page_size,
        relist_hangs,
        announced: Default::default(),
        echo_retires,
        retired: Default::default(),
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
            Some(addr) => serve_http(fixture, &addr).await,
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

async fn serve_http(fixture: Fixture, addr: &str) -> Result<(), Box<dyn std::error::Error>> {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::service::TowerToHyperService;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    use std::io::Write;

    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    println!("listening on http://{local}/mcp");
    std::io::stdout().flush()?;
    let service = StreamableHttpService::new(
        move || Ok(fixture.clone()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    loop {
        let (stream, _) = listener.accept().await?;
        let svc = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}
