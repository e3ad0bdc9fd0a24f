//! Connecting to one server: the transport its entry names (a stdio child in its own process
//! group, or Streamable HTTP with its headers), the MCP handshake its `handshake` key asks for,
//! and the first tool list, all within `connect_timeout`; any failure is one
//! [`McpError::Start`] line with the tail of the server's stderr. Also what a live
//! [`Connection`] keeps (tool list, validators, process group, size cap, pause clock), the
//! request wrapper that fails a request at once when its answer was dropped for its size (on
//! stdio by `stdio`, over HTTP by `http`), and argument validation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::service::{ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value};

use super::error::{McpError, init_error, service_error, sign_in_needed, sign_in_needed_at_start};
use super::handler::{ClientEvents, McpClientHandler};
use super::host::Host;
use super::process::{Logs, kill_group};
use super::stdio::{ResultCap, all_in_flight_failed, size_label};
use super::tools::ToolInfo;
use crate::config::{LogLevel, ServerConfig, Transport};
use crate::util::clock::PauseClock;

/// What connecting needs from the manager.
pub(super) struct Env<'a> {
    pub events: &'a ClientEvents,
    pub host: &'a Arc<Host>,
    pub logs: &'a Logs,
    /// The manager's run: stdio servers are marked as its processes (`reap`).
    pub run: &'a super::reap::Run,
    pub max_result_bytes: usize,
    /// Where this user's OAuth tokens are (`None`: HTTP servers get no OAuth, as in tests
    /// that must not touch the user's files).
    pub tokens: &'a Option<super::auth::store::TokenStore>,
}

/// A live connection to one server.
pub struct Connection {
    pub(super) service: RunningService<RoleClient, McpClientHandler>,
    pub(super) tools: std::sync::RwLock<Arc<Vec<ToolInfo>>>,
    pub(super) tools_stale: Arc<AtomicBool>,
    /// Resource and prompt lists, listed when first asked for (see `primitives`).
    pub(super) lists: Arc<super::lists::Lists>,
    pub(super) validators: StdMutex<HashMap<String, Arc<Option<jsonschema::Validator>>>>,
    /// Process group of a stdio server (its pid; the child leads its own group).
    pub(super) pgid: Option<i32>,
    /// Where this run's stderr starts in the log file.
    pub(super) log_offset: u64,
    /// The size limit of the server's messages (enforced on stdio by `stdio::CappedReader`).
    pub(super) cap: Arc<ResultCap>,
    /// Time spent waiting for the user or the host's model (not counted by `call_timeout`).
    pub(super) clock: Arc<PauseClock>,
    pub started_at: Instant,
}

impl Connection {
    pub fn tools(&self) -> Arc<Vec<ToolInfo>> {
        self.tools.read().map(|t| t.clone()).unwrap_or_default()
    }

    pub(super) fn is_alive(&self) -> bool {
        // A stdio server that exited between calls may not have closed the transport yet.
        !self.service.is_closed() && self.pgid.is_none_or(super::process::process_alive)
    }
}

/// Why a stdio server gave no handshake within `connect_timeout`: when it was still running at
/// the timeout it was slow rather than broken (a first `npx -y` run downloads the package), so
/// the message says what it was doing and names the key that gives it longer.
fn handshake_timeout(name: &str, cfg: &ServerConfig, timeout: Duration, running: bool, quiet: bool) -> String {
    let mut reason = format!("no MCP handshake within {} (connect_timeout)", humantime::format_duration(timeout));
    if !running {
        return reason;
    }
    let program = cfg.command.as_deref().map(|c| c.rsplit('/').next().unwrap_or(c)).unwrap_or_default();
    let doing = if quiet { "has written nothing yet" } else { "its stderr is below" };
    reason.push_str(&format!("; it was still running and {doing}"));
    if matches!(program, "npx" | "uvx" | "bunx" | "pnpx" | "pipx") {
        reason.push_str(&format!(" (`{program}` may still be downloading the package on a first run)"));
    }
    reason.push_str(&format!(
        "; if it needs longer to start, raise mcp.servers.{name}.connect_timeout (e.g. `connect_timeout: 2m`)"
    ));
    reason
}

/// Connects to server `name` as `cfg` says (see the module doc).
pub(super) async fn connect(name: &str, cfg: &ServerConfig, env: &Env<'_>) -> Result<Connection, McpError> {
    let fail = |reason: String, stderr: Vec<String>| McpError::Start { server: name.to_string(), reason, stderr };
    if let Some(first) = cfg.unresolved.first() {
        return Err(fail(first.clone(), Vec::new()));
    }
    let transport = cfg.transport().map_err(|e| fail(e, Vec::new()))?;
    let tools_stale = Arc::new(AtomicBool::new(false));
    let clock = Arc::new(crate::util::clock::PauseClock::default());
    let lists = Arc::new(super::lists::Lists::default());
    let handler = McpClientHandler::new(name, env.events.clone(), tools_stale.clone())
        .with_host(env.host.clone(), cfg.clone(), clock.clone())
        .with_lists(lists.clone());
    let timeout = cfg.connect_timeout;
    let cap = ResultCap::new(env.max_result_bytes);
    let started_at = Instant::now();
    let (service, pgid, log_offset) = match transport {
        Transport::Sse => {
            return Err(fail(
                "it uses the legacy HTTP+SSE transport, which is not supported; point `url` at the server's \
                 Streamable HTTP endpoint (often `/mcp`) or run it behind a proxy such as `mcp-proxy`"
                    .into(),
                Vec::new(),
            ));
        }
        Transport::Http => {
            let url = cfg.url.clone().unwrap_or_default();
            let mut headers = HashMap::new();
            for (k, v) in &cfg.headers {
                let hn = http::HeaderName::from_bytes(k.as_bytes())
                    .map_err(|_| fail(format!("invalid header name `{k}`"), Vec::new()))?;
                let hv = http::HeaderValue::from_str(v)
                    .map_err(|_| fail(format!("invalid value for header `{k}`"), Vec::new()))?;
                headers.insert(hn, hv);
            }
            let tcfg = StreamableHttpClientTransportConfig::with_uri(url.clone())
                .custom_headers(headers)
                .max_json_response_size(env.max_result_bytes)
                .max_sse_event_size(env.max_result_bytes);
            let http = super::http::CappedHttp::new(cap.clone());
            let auth = match &env.tokens {
                Some(store) => super::auth::for_connect(cfg, store).await.map_err(|e| match e {
                    super::auth::AuthFailure::NeedsSignIn => {
                        McpError::NeedsSignIn { server: name.to_string(), scopes: None }
                    }
                    super::auth::AuthFailure::Other(reason) => fail(reason, Vec::new()),
                })?,
                None => None,
            };
            let lifecycle = lifecycle(cfg.handshake);
            // With stored tokens, rmcp's AuthClient adds the bearer header, refreshes before
            // expiry and once on a `401`.
            let served = match auth {
                Some(manager) => {
                    let client = rmcp::transport::auth::AuthClient::new(http, manager);
                    let transport = StreamableHttpClientTransport::with_client(client, tcfg);
                    tokio::time::timeout(timeout, handler.serve_with_lifecycle(transport, lifecycle)).await
                }
                None => {
                    let transport = StreamableHttpClientTransport::with_client(http, tcfg);
                    tokio::time::timeout(timeout, handler.serve_with_lifecycle(transport, lifecycle)).await
                }
            };
            let service = match served {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    if let Some(sign_in) = sign_in_needed_at_start(name, &e) {
                        return Err(sign_in);
                    }
                    return Err(fail(
                        format!("cannot connect to {}: {}", crate::util::redact::url(&url), init_error(&e)),
                        Vec::new(),
                    ));
                }
                Err(_) => {
                    return Err(fail(
                        format!(
                            "no answer from {} within {}",
                            crate::util::redact::url(&url),
                            humantime::format_duration(timeout)
                        ),
                        Vec::new(),
                    ));
                }
            };
            (service, None, 0)
        }
        Transport::Stdio => {
            let spawned = super::process::spawn(name, cfg, env.logs, &cap, env.run).map_err(|e| fail(e, Vec::new()))?;
            let (child, pgid, log_offset) = (spawned.transport, spawned.pgid, spawned.log_offset);
            // Whether the child still ran at the timeout is looked at before the handshake future
            // (which owns the child, and kills it when dropped) is dropped: a child still running
            // then was slow, not broken.
            let mut handshake = Box::pin(handler.serve_with_lifecycle(child, lifecycle(cfg.handshake)));
            let (served, running) = tokio::select! {
                r = &mut handshake => (Ok(r), false),
                () = tokio::time::sleep(timeout) => (Err(()), pgid.is_some_and(super::process::process_alive)),
            };
            drop(handshake);
            let service = match served {
                Ok(Ok(s)) => s,
                other => {
                    if let Some(g) = pgid {
                        kill_group(g, libc::SIGKILL);
                    }
                    // Let the child's last words reach the log file.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let stderr = env.logs.tail(name, log_offset);
                    let reason = match other {
                        Ok(Err(e)) => format!("the MCP handshake failed: {}", init_error(&e)),
                        _ => handshake_timeout(name, cfg, timeout, running, stderr.is_empty()),
                    };
                    return Err(fail(reason, stderr));
                }
            };
            (service, pgid, log_offset)
        }
    };
    let conn = Connection {
        service,
        tools: Default::default(),
        tools_stale,
        lists,
        validators: Default::default(),
        pgid,
        log_offset,
        cap,
        clock,
        started_at,
    };
    let remaining = timeout.saturating_sub(started_at.elapsed()).max(Duration::from_secs(1));
    match tokio::time::timeout(remaining, list_tools(name, cfg, &conn)).await {
        Ok(Ok(tools)) => {
            if let Ok(mut w) = conn.tools.write() {
                *w = Arc::new(tools);
            }
            // A list_changed that raced the first listing is already reflected in it.
            conn.tools_stale.store(false, Ordering::Release);
            if let Some(level) = cfg.log_level {
                set_log_level(name, &conn, level, remaining).await;
            }
            tracing::info!(server = name, elapsed = ?started_at.elapsed(), "server ready");
            Ok(conn)
        }
        other => {
            conn.service.cancellation_token().cancel();
            if let Some(g) = conn.pgid {
                kill_group(g, libc::SIGKILL);
            }
            if let Ok(Err(Failure::Service(e))) = &other
                && let Some(sign_in) = sign_in_needed(name, e)
            {
                return Err(sign_in);
            }
            let reason = match other {
                Ok(Err(e)) => format!("tools/list failed: {}", e.describe(&conn.cap)),
                _ => "tools/list did not answer within connect_timeout".to_string(),
            };
            Err(fail(reason, env.logs.tail(name, log_offset)))
        }
    }
}

/// rmcp's lifecycle for a server's `handshake` key.
fn lifecycle(h: crate::config::Handshake) -> rmcp::service::ClientLifecycleMode {
    use crate::config::Handshake;
    use rmcp::model::ProtocolVersion;
    use rmcp::service::ClientLifecycleMode;
    match h {
        Handshake::Initialize => ClientLifecycleMode::Initialize,
        Handshake::Discover => {
            ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
        }
        Handshake::Auto => {
            ClientLifecycleMode::Auto { preferred_versions: vec![ProtocolVersion::V_2026_07_28], legacy_version: None }
        }
    }
}

/// Why a request to a server got no usable answer.
pub(super) enum Failure {
    /// Its answer was over `mcp.max_result_bytes` and was dropped (see `stdio`).
    TooLarge,
    Timeout,
    Service(rmcp::ServiceError),
}

impl Failure {
    pub(super) fn describe(&self, cap: &ResultCap) -> String {
        match self {
            Failure::TooLarge => format!("the answer is larger than the {} limit", size_label(cap.limit)),
            Failure::Timeout => "no answer in time".into(),
            Failure::Service(e) => service_error(e),
        }
    }
}

/// Runs one request to a server and fails it at once when its answer was dropped for its size.
pub(super) async fn capped<T>(
    cap: &ResultCap,
    request: impl Future<Output = Result<T, rmcp::ServiceError>>,
) -> Result<T, Failure> {
    // Subscribed before the request is sent, so a drop while it is in flight is seen.
    let mut dropped = cap.subscribe();
    tokio::select! {
        r = request => match r {
            Ok(v) => Ok(v),
            Err(rmcp::ServiceError::McpError(e)) if cap.is_ours(&e) => Err(Failure::TooLarge),
            Err(e) => Err(Failure::Service(e)),
        },
        () = all_in_flight_failed(&mut dropped) => Err(Failure::TooLarge),
    }
}

/// MCP's level for ours.
#[allow(deprecated)]
pub fn to_rmcp_level(level: LogLevel) -> rmcp::model::LoggingLevel {
    use rmcp::model::LoggingLevel as L;
    match level {
        LogLevel::Debug => L::Debug,
        LogLevel::Info => L::Info,
        LogLevel::Notice => L::Notice,
        LogLevel::Warning => L::Warning,
        LogLevel::Error => L::Error,
        LogLevel::Critical => L::Critical,
        LogLevel::Alert => L::Alert,
        LogLevel::Emergency => L::Emergency,
    }
}

/// `logging/setLevel` for `log_level`, when the server offers logging; a failure is a warning
/// (the server still works, only noisier or quieter than asked).
#[allow(deprecated)] // logging (SEP-2577): servers still send and accept it.
async fn set_log_level(name: &str, conn: &Connection, level: LogLevel, within: Duration) {
    let offers = conn.service.peer_info().is_some_and(|i| i.capabilities.logging.is_some());
    if !offers {
        tracing::info!(server = name, "log_level is set but the server offers no logging");
        return;
    }
    let params = rmcp::model::SetLevelRequestParams::new(to_rmcp_level(level));
    match tokio::time::timeout(within, conn.service.set_level(params)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(server = name, "logging/setLevel failed: {}", super::error::service_error(&e)),
        Err(_) => tracing::warn!(server = name, "logging/setLevel did not answer"),
    }
}

pub(super) async fn list_tools(name: &str, cfg: &ServerConfig, conn: &Connection) -> Result<Vec<ToolInfo>, Failure> {
    // A server that offers only resources or prompts has no tools to list.
    let offers_tools = conn.service.peer_info().is_none_or(|i| i.capabilities.tools.is_some());
    let tools = match capped(&conn.cap, conn.service.list_all_tools()).await {
        Err(Failure::Service(rmcp::ServiceError::McpError(e)))
            if !offers_tools && e.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND =>
        {
            Vec::new()
        }
        other => other?,
    };
    let white = cfg.tool_white_list.as_ref();
    let mut out: Vec<ToolInfo> = tools
        .iter()
        .filter(|t| white.is_none_or(|w| w.iter().any(|n| n == t.name.as_ref())))
        .map(|t| ToolInfo::from_rmcp(name, t))
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

pub(super) async fn wait_closed(conn: &Connection, max: Duration) -> bool {
    let deadline = Instant::now() + max;
    loop {
        if conn.service.is_closed() {
            return true;
        }
        if let Some(g) = conn.pgid
            && !super::process::process_alive(g)
        {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Validates `args` against the tool's input schema; one line per violation, with its path.
pub(super) fn validate(conn: &Connection, info: &ToolInfo, args: &Map<String, Value>) -> Vec<String> {
    let validator = {
        let Ok(mut cache) = conn.validators.lock() else { return Vec::new() };
        cache
            .entry(info.name.clone())
            .or_insert_with(|| {
                Arc::new(match jsonschema::validator_for(&info.input_schema) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        tracing::warn!(tool = %info.qualified_name(), "input schema not usable for validation: {e}");
                        None
                    }
                })
            })
            .clone()
    };
    let Some(v) = validator.as_ref() else { return Vec::new() };
    let instance = Value::Object(args.clone());
    v.iter_errors(&instance)
        .map(|err| {
            let path = err.instance_path().to_string();
            let path = if path.is_empty() { "(root)".to_string() } else { path };
            format!("{path}: {err}")
        })
        .collect()
}
