//! What can go wrong with a server or a call ([`McpError`], whose `Display` form is the one line
//! users see), and how rmcp's and the transports' errors become such lines: without Rust type
//! names, HTTP client boilerplate or ` (os error N)`.

use super::stdio::size_label;
use std::time::Duration;

/// Why a server or a call failed. The `Display` form is the one-line message users see.
#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    #[error("unknown server `{name}`{}", did_you_mean_or_list(suggestions, configured))]
    UnknownServer { name: String, suggestions: Vec<String>, configured: Vec<String> },
    #[error("server `{0}` is disabled in the configuration (`disabled: true`)")]
    Disabled(String),
    #[error("unknown tool `{server}.{tool}`{}", qualified_hint(server, suggestions))]
    UnknownTool { server: String, tool: String, suggestions: Vec<String> },
    #[error("invalid arguments for `{server}.{tool}`:\n{}", bullet(violations))]
    InvalidArguments { server: String, tool: String, violations: Vec<String> },
    #[error("server `{server}` failed to start: {reason}{}", stderr_suffix(stderr))]
    Start { server: String, reason: String, stderr: Vec<String> },
    #[error("`{server}.{tool}` timed out after {}", humantime::format_duration(*timeout))]
    Timeout { server: String, tool: String, timeout: Duration },
    #[error("server `{server}` failed during `{tool}`: {reason}{}", stderr_suffix(stderr))]
    Call { server: String, tool: String, reason: String, stderr: Vec<String> },
    #[error("result of {server}.{tool} is larger than the {} limit", size_label(*limit))]
    ResultTooLarge { server: String, tool: String, limit: usize },
    /// The server wants a token this user does not have (or a refresh could not renew), or more
    /// scopes than it has (`scopes`: what the server's `403 insufficient_scope` asked for).
    #[error("server `{server}` needs sign-in{}", sign_in_hint(server, scopes))]
    NeedsSignIn { server: String, scopes: Option<String> },
    /// The server did not declare the capability (`resources`, `prompts`, ...).
    #[error("server `{server}` offers no {what}")]
    NotOffered { server: String, what: &'static str },
    #[error("unknown prompt `{server}.{prompt}`{}", qualified_hint(server, suggestions))]
    UnknownPrompt { server: String, prompt: String, suggestions: Vec<String> },
    /// A read of a URI that is neither listed nor matches a template failed (`reason`: the server's).
    #[error(
        "unknown resource `{uri}` on server `{server}` ({reason}){}",
        crate::util::suggest::did_you_mean(suggestions)
    )]
    UnknownResource {
        server: String,
        uri: String,
        reason: String,
        suggestions: Vec<String>,
        /// The server's own error answer, as it sent it (for `serve` to pass on).
        upstream: Option<Box<rmcp::ErrorData>>,
    },
    /// A request other than a tool call failed: `what` is the method (and its subject);
    /// `upstream` the server's own error answer, when it sent one.
    #[error("server `{server}` failed `{what}`: {reason}")]
    Request { server: String, what: String, reason: String, upstream: Option<Box<rmcp::ErrorData>> },
    #[error("the answer to `{what}` from server `{server}` is larger than the {} limit (mcp.max_result_bytes)", size_label(*limit))]
    TooLarge { server: String, what: String, limit: usize },
}

fn sign_in_hint(server: &str, scopes: &Option<String>) -> String {
    match scopes {
        Some(s) => format!(" with more scopes ({s}): run `agent mcp login {server} --scopes \"{s}\"`"),
        None => format!(": run `agent mcp login {server}`"),
    }
}

/// The sign-in error for a request refused with `401` (or `403 insufficient_scope`), if that is
/// why it failed.
pub(super) fn sign_in_needed(server: &str, e: &rmcp::ServiceError) -> Option<McpError> {
    let challenge = e.auth_challenge();
    if challenge.is_none() && !e.is_authorization_required() {
        return None;
    }
    Some(McpError::NeedsSignIn { server: server.to_string(), scopes: challenge.and_then(insufficient_scopes) })
}

/// The same for a failed handshake.
pub(super) fn sign_in_needed_at_start(server: &str, e: &rmcp::service::ClientInitializeError) -> Option<McpError> {
    let challenge = e.auth_challenge();
    if challenge.is_none() && !e.is_authorization_required() {
        return None;
    }
    Some(McpError::NeedsSignIn { server: server.to_string(), scopes: challenge.and_then(insufficient_scopes) })
}

/// The scopes a `WWW-Authenticate: Bearer error="insufficient_scope", scope="a b"` asks for
/// (printable characters only: the text is the server's).
fn insufficient_scopes(challenge: &str) -> Option<String> {
    if !challenge.contains("insufficient_scope") {
        return None;
    }
    let at = challenge.find("scope=\"")? + "scope=\"".len();
    let value = challenge[at..].split('"').next()?;
    let clean: String = value.chars().filter(|c| c.is_ascii_graphic() || *c == ' ').take(500).collect();
    Some(clean)
}

fn qualified_hint(server: &str, tools: &[String]) -> String {
    let qualified: Vec<String> = tools.iter().map(|t| format!("{server}.{t}")).collect();
    crate::util::suggest::did_you_mean(&qualified)
}

fn bullet(lines: &[String]) -> String {
    lines.iter().map(|l| format!("  - {l}")).collect::<Vec<_>>().join("\n")
}

fn did_you_mean_or_list(suggestions: &[String], configured: &[String]) -> String {
    if !suggestions.is_empty() {
        crate::util::suggest::did_you_mean(suggestions)
    } else if configured.is_empty() {
        "; no servers are configured (see config.sample.yaml)".into()
    } else {
        format!("; configured: {}", configured.join(", "))
    }
}

fn stderr_suffix(lines: &[String]) -> String {
    if lines.is_empty() { String::new() } else { format!(" (stderr: {})", lines.join(" | ")) }
}

/// One line for a failed request, without the transport's Rust type name.
pub(super) fn service_error(e: &rmcp::ServiceError) -> String {
    use rmcp::ServiceError as E;
    match e {
        E::TransportSend(t) => format!("cannot send the request: {}", error_chain(t.error.as_ref())),
        // The server's own words, without rmcp's `Mcp error: -32602:` prefix.
        E::McpError(data) => {
            let text = data.message.strip_prefix(&format!("MCP error {}: ", data.code.0)).unwrap_or(&data.message);
            one_line(text)
        }
        other => one_line(&other.to_string()),
    }
}

/// One line for a failed MCP handshake, without rmcp's type names or message dumps.
pub(super) fn init_error(e: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError as E;
    match e {
        E::ConnectionClosed(_) => "the server closed the connection (it exited or is not an MCP server)".into(),
        E::TransportError { error, .. } => error_chain(error.error.as_ref()),
        E::ExpectedInitResponse(_) | E::ExpectedInitResult(_) => {
            "the server did not answer `initialize` with its capabilities (is it an MCP server?)".into()
        }
        E::JsonRpcError(data) => format!("the server refused `initialize`: {}", one_line(&data.message)),
        E::LegacyFallbackFailed { fallback, .. } => init_error(fallback),
        other => one_line(&other.to_string()),
    }
}

/// The most telling line of an error and its causes: `connection refused`, `dns error: ...`,
/// `HTTP 404 Not Found`, a TLS error. Transport wrappers (whose messages name Rust types) and
/// HTTP client boilerplate (`error sending request for url ...`) are skipped.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let mut chain = Vec::new();
    let mut cur = Some(e);
    while let Some(c) = cur {
        chain.push(c);
        // rmcp's HTTP client error does not expose reqwest's error as its source.
        cur = match c.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::Client(inner)) => Some(inner as &(dyn std::error::Error + 'static)),
            _ => c.source(),
        };
    }
    if let Some(io) = chain.iter().find_map(|c| c.downcast_ref::<std::io::Error>()) {
        use std::io::ErrorKind as K;
        let known = match io.kind() {
            K::ConnectionRefused => Some("connection refused"),
            K::ConnectionReset => Some("connection reset by the server"),
            K::ConnectionAborted => Some("connection aborted"),
            K::TimedOut => Some("connection timed out"),
            K::HostUnreachable => Some("host unreachable"),
            K::NetworkUnreachable => Some("network unreachable"),
            K::BrokenPipe => Some("the server closed the connection"),
            _ => None,
        };
        if let Some(k) = known {
            return k.into();
        }
    }
    let texts: Vec<String> = chain.iter().map(|c| lower_first(one_line(&c.to_string()))).collect();
    let Some(innermost) = texts.last() else { return String::new() };
    let innermost = innermost.clone();
    // `unexpected server response: HTTP 404 Not Found: <body>`: the status says it.
    if let Some(rest) = innermost.strip_prefix("unexpected server response: HTTP ") {
        let status = rest.split(": ").next().unwrap_or(rest);
        return format!("the server answered HTTP {status}");
    }
    // hyper-util says `dns error` and puts the resolver's message below it.
    if texts.iter().any(|t| t == "dns error") && innermost != "dns error" {
        return format!("DNS lookup failed: {innermost}");
    }
    innermost
}

/// The first line of `s`, at most 300 characters, without ` (os error N)`.
fn one_line(s: &str) -> String {
    let mut line: String = s.lines().next().unwrap_or_default().chars().take(300).collect();
    if let Some(i) = line.find(" (os error ") {
        line.truncate(i);
    }
    line
}

/// `Connection reset` → `connection reset` (a cause read after a colon); `HTTP`, `TLS` stay.
fn lower_first(s: String) -> String {
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (Some(a), Some(b)) if a.is_ascii_uppercase() && b.is_ascii_lowercase() => {
            format!("{}{}", a.to_ascii_lowercase(), &s[1..])
        }
        _ => s,
    }
}
