//! The bridge wire protocol (HTTP/1.1 over a Unix socket, JSON bodies), shared by the server,
//! the Rust client used by the isolate, and documented in README for other runtimes.
//!
//! - `POST /call` `{"server", "tool", "arguments"}` → 200 with the MCP `CallToolResult`
//!   (`{"content": [...], "structuredContent"?: ..., "isError": bool}`). A tool that reports an
//!   error is still a 200 with `isError: true`.
//! - `GET /tools` → 200 `[ToolInfo...]` of the servers started so far (`?server=S` starts S).
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
            ErrorCode::UnknownServer | ErrorCode::UnknownTool | ErrorCode::NotFound => 404,
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
