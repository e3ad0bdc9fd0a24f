//! The bridge wire protocol (HTTP/1.1 over a Unix socket, JSON bodies), shared by the server,
//! the Rust client used by the isolate, and documented in README for other runtimes.
//!
//! - `POST /call` `{"server", "tool", "arguments"}` → 200 with the MCP `CallToolResult`
//!   (`{"content": [...], "structuredContent"?: ..., "isError": bool}`). A tool that reports an
//!   error is still a 200 with `isError: true`.
//! - `GET /tools` → 200 `[ToolInfo...]` of the servers started so far (`?server=S` starts S).
//! - `GET /search?q=QUERY&limit=N&server=S` → 200 `[SearchResult...]`, best first: the tool
//!   catalog of every enabled server (`agent mcp search --json` records), with their resources,
//!   resource templates and prompts (records with a `kind` and a `uri` for resources; their
//!   `signature` is the `readResource(...)`/`getPrompt(...)` call); `limit` 1..=100 (default 10),
//!   `server` (repeatable) narrows it.
//! - `GET /tools/<server>/<tool>` → 200 [`ToolDescription`] (its TypeScript declaration and doc);
//!   an unknown server or tool is a 404 with suggestions. Both parts are percent-encoded.
//! - `POST /resources` `{"server"?}` → 200 [`ResourceList`]: the resources and resource templates
//!   of `server`, or of every enabled server (those that fail to start are left out).
//! - `POST /resources/read` `{"server", "uri"}` → 200 the MCP `ReadResourceResult`
//!   (`{"contents": [{"uri", "mimeType"?, "text" | "blob"}]}`, `blob` in base64).
//! - `POST /prompts` `{"server"?}` → 200 `[PromptInfo...]`, like `/resources`.
//! - `POST /prompts/get` `{"server", "name", "arguments"?}` → 200 the MCP `GetPromptResult`
//!   (`{"description"?, "messages": [{"role", "content"}]}`); argument values that are not
//!   strings are sent as their JSON text.
//! - The four answer errors like `POST /call`: `unknown_server`, `unknown_resource` and
//!   `unknown_prompt` (404, with suggestions), `not_offered` (404: the server declares no such
//!   capability), `invalid_arguments` (a required prompt argument missing), `timeout`,
//!   `server_error` (also an answer over `mcp.max_result_bytes`, the limit named).
//! - `GET /health` → 200 `{"ok": true}` (no token needed).
//! - Every request except `/health` needs `Authorization: Bearer <token>`.
//! - Errors: `{"error": {"code", "message", "suggestions"?}}` with the status of [`ErrorCode`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Body of `POST /call`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallRequest {
    pub server: String,
    pub tool: String,
    #[serde(default)]
    pub arguments: Map<String, Value>,
}

/// Body of `POST /resources` and `POST /prompts`: one server, or every enabled one.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// Body of `POST /resources/read`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadRequest {
    pub server: String,
    pub uri: String,
}

/// Body of `POST /prompts/get`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptRequest {
    pub server: String,
    pub name: String,
    #[serde(default)]
    pub arguments: Map<String, Value>,
}

/// Answer of `POST /resources`: every listed resource and template, each naming its server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceList {
    pub resources: Vec<ResourceInfo>,
    #[serde(rename = "resourceTemplates")]
    pub templates: Vec<TemplateInfo>,
}

/// One resource of `POST /resources`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInfo {
    pub server: String,
    pub uri: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// One resource template of `POST /resources` (RFC 6570 `uriTemplate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateInfo {
    pub server: String,
    pub uri_template: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// One prompt of `POST /prompts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptInfo {
    pub server: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub arguments: Vec<PromptArgument>,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
}

/// Answer of `GET /tools/<server>/<tool>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDescription {
    pub server: String,
    /// The MCP tool name.
    pub tool: String,
    /// `server.tool(a: string, b?: number)`.
    pub signature: String,
    /// The whole description ("" when the server gives none).
    pub description: String,
    /// The tool's TypeScript: how to import it, its TSDoc, signature and types.
    pub typescript: String,
}

/// `limit` of `GET /search` when none is given, and the largest accepted.
pub const DEFAULT_SEARCH_LIMIT: usize = 10;
pub const MAX_SEARCH_LIMIT: usize = 100;

/// Percent-encodes a path segment or query value (everything but `A-Z a-z 0-9 - . _ ~`).
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes (and `+` as a space when `plus` is set); `None` when an escape is
/// malformed or the result is not UTF-8.
pub fn decode_component(s: &str, plus: bool) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = b.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
                out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
                i += 3;
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The `key=value` pairs of a query string, decoded; `Err` names the first malformed part.
pub fn query_pairs(query: &str) -> Result<Vec<(String, String)>, String> {
    query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            match (decode_component(k, true), decode_component(v, true)) {
                (Some(k), Some(v)) => Ok((k, v)),
                _ => Err(format!("malformed query parameter `{kv}` (bad %-escape or not UTF-8)")),
            }
        })
        .collect()
}

/// Machine-readable error codes and their HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// 400: the body is not valid JSON or not a `CallRequest`.
    BadRequest,
    /// 400: the arguments do not match the tool's `inputSchema`.
    InvalidArguments,
    /// 401: missing or wrong bearer token.
    Unauthorized,
    /// 404: no such server (suggestions included).
    UnknownServer,
    /// 404: no such tool on the server (suggestions included).
    UnknownTool,
    /// 404: no such prompt on the server (suggestions included).
    UnknownPrompt,
    /// 404: the server could not read a URI it does not list (suggestions included).
    UnknownResource,
    /// 404: the server does not offer resources (or prompts) at all.
    NotOffered,
    /// 404: no such endpoint.
    NotFound,
    /// 405: wrong method for the endpoint.
    MethodNotAllowed,
    /// 413: the request body is over the limit.
    PayloadTooLarge,
    /// 502: the server could not be started, crashed, or answered with a protocol error.
    ServerError,
    /// 504: the call did not finish within the server's `call_timeout`.
    Timeout,
}

impl ErrorCode {
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::BadRequest | ErrorCode::InvalidArguments => 400,
            ErrorCode::Unauthorized => 401,
            ErrorCode::UnknownServer
            | ErrorCode::UnknownTool
            | ErrorCode::UnknownPrompt
            | ErrorCode::UnknownResource
            | ErrorCode::NotOffered
            | ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::ServerError => 502,
            ErrorCode::Timeout => 504,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::InvalidArguments => "invalid_arguments",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::UnknownServer => "unknown_server",
            ErrorCode::UnknownTool => "unknown_tool",
            ErrorCode::UnknownPrompt => "unknown_prompt",
            ErrorCode::UnknownResource => "unknown_resource",
            ErrorCode::NotOffered => "not_offered",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::ServerError => "server_error",
            ErrorCode::Timeout => "timeout",
        }
    }
}

/// `{"error": {...}}`
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<String>,
}

/// Largest accepted request body.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_round_trip_and_bad_escapes_are_refused() {
        for s in ["text.upper", "a b/c?d&e=f", "ünï ✓", ""] {
            assert_eq!(decode_component(&encode_component(s), false).as_deref(), Some(s));
        }
        assert_eq!(decode_component("a+b%20c", true).as_deref(), Some("a b c"));
        assert_eq!(decode_component("a+b", false).as_deref(), Some("a+b"));
        assert_eq!(decode_component("%zz", false), None);
        assert_eq!(decode_component("%e2%28", false), None);
        assert_eq!(decode_component("%4", false), None);
        assert_eq!(decode_component("%+1", false), None);
        assert_eq!(
            query_pairs("q=list+issues&limit=3&&x").unwrap(),
            vec![("q".into(), "list issues".into()), ("limit".into(), "3".into()), ("x".into(), "".into())]
        );
        assert!(query_pairs("q=%").is_err());
    }
}
