//! `--conformance`: the tools the MCP conformance suite's server scenarios call by name
//! (`@modelcontextprotocol/conformance`, `conformance server --url URL`), with the contents and
//! timings their descriptions ask for. Resources, prompts, completions and logging come from
//! `resources.rs` (the flag turns on both of its sets). Tools that ask the host (sampling,
//! elicitation) go through the fixture's `ask_host`: a server-to-client request on sessions
//! before 2026-07-28, an `input_required` result after.

use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRoute;
use rmcp::handler::server::tool::InputResponses;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, schemars, tool, tool_router};
use serde::Deserialize;
use serde_json::json;

use super::resources::PNG_1X1;
use super::{Asked, Fixture, ask_host, text_result};

/// A WAV file of four silent 8-bit samples at 8 kHz (`test_audio_content`).
const WAV: &str = "UklGRigAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQQAAACAgICA";

/// The pause between the log messages and the progress reports the scenarios ask for.
const STEP: Duration = Duration::from_millis(50);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct PromptArgs {
    /// The prompt to send to the host's model.
    prompt: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct MessageArgs {
    /// The message to show the user.
    message: String,
}

/// Whether the client said it can answer `method` (its capabilities from `initialize`, or
/// from the request's `_meta` on 2026-07-28, which has no handshake).
fn client_can(cx: &RequestContext<RoleServer>, method: &str) -> bool {
    let caps = match cx.peer.peer_info() {
        Some(i) => Some(i.capabilities.clone()),
        None => cx.meta.client_capabilities(),
    };
    caps.is_some_and(|c| if method == "sampling" { c.sampling.is_some() } else { c.elicitation.is_some() })
}

/// `CallToolResult` from its wire form (the scenarios spell results out as JSON).
fn result(doc: serde_json::Value) -> CallToolResult {
    serde_json::from_value(doc)
        .unwrap_or_else(|e| CallToolResult::error(vec![ContentBlock::text(format!("fixture: bad result: {e}"))]))
}

/// Asks the client to fill `schema` with `message`; the tool's answer names the action and content.
async fn elicit(
    cx: &RequestContext<RoleServer>,
    responses: &Option<rmcp::model::InputResponses>,
    message: &str,
    schema: serde_json::Value,
    prefix: &str,
) -> CallToolResponse {
    if !client_can(cx, "elicitation") {
        return text_result("the client does not support elicitation".into(), true);
    }
    let params = json!({"mode": "form", "message": message, "requestedSchema": schema});
    match ask_host(cx, responses, "elicit", "elicitation/create", params).await {
        Asked::Pending(p) => p,
        Asked::Failed(e) => text_result(format!("elicitation failed: {e}"), true),
        Asked::Got(v) => {
            let action = v.get("action").and_then(serde_json::Value::as_str).unwrap_or("?");
            let content = v.get("content").cloned().unwrap_or_default();
            text_result(format!("{prefix}action={action}, content={content}"), false)
        }
    }
}

#[tool_router(router = conformance_router, vis = "pub(crate)")]
impl Fixture {
    #[tool(description = "Return a simple text (conformance).")]
    async fn test_simple_text(&self) -> String {
        "This is a simple text response for testing.".into()
    }

    #[tool(description = "Return a PNG image (conformance).")]
    async fn test_image_content(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::image(PNG_1X1, "image/png")])
    }

    #[tool(description = "Return a WAV sound (conformance).")]
    async fn test_audio_content(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::audio(WAV, "audio/wav")])
    }

    #[tool(description = "Return an embedded text resource (conformance).")]
    async fn test_embedded_resource(&self) -> CallToolResult {
        result(json!({"content": [{"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."
        }}]}))
    }

    #[tool(description = "Return text, an image and an embedded resource (conformance).")]
    async fn test_multiple_content_types(&self) -> CallToolResult {
        result(json!({"content": [
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": PNG_1X1, "mimeType": "image/png"},
            {"type": "resource", "resource": {
                "uri": "test://mixed-content-resource", "mimeType": "application/json", "text": r#"{"test":"data","value":123}"#
            }}
        ]}))
    }

    #[tool(description = "Send three info log messages 50 ms apart, then answer (conformance).")]
    async fn test_tool_with_logging(&self, cx: RequestContext<RoleServer>) -> String {
        for (i, text) in
            ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate()
        {
            if i > 0 {
                tokio::time::sleep(STEP).await;
            }
            self.resources.info(&cx, text).await;
        }
        "Tool with logging executed successfully".into()
    }

    #[tool(description = "Always answer with isError: true (conformance).")]
    async fn test_error_handling(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text("This tool intentionally returns an error for testing")])
    }

    #[tool(description = "Report progress 0, 50 and 100 of 100, 50 ms apart (conformance).")]
    async fn test_tool_with_progress(&self, cx: RequestContext<RoleServer>) -> String {
        let token = cx.meta.get_progress_token();
        for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(STEP).await;
            }
            if let Some(token) = &token {
                let p = ProgressNotificationParam::new(token.clone(), progress).with_total(100.0);
                let _ = cx.peer.notify_progress(p).await;
            }
        }
        "Progress test completed".into()
    }

    #[tool(description = "Ask the host's model (sampling/createMessage) with `prompt` (conformance).")]
    async fn test_sampling(
        &self,
        Parameters(a): Parameters<PromptArgs>,
        InputResponses(r): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        if !client_can(&cx, "sampling") {
            return text_result("the client does not support sampling".into(), true);
        }
        let params =
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": a.prompt}}], "maxTokens": 100});
        match ask_host(&cx, &r, "sample", "sampling/createMessage", params).await {
            Asked::Pending(p) => p,
            Asked::Failed(e) => text_result(format!("sampling failed: {e}"), true),
            Asked::Got(v) => {
                let text = v.pointer("/content/text").and_then(serde_json::Value::as_str).unwrap_or_default();
                text_result(format!("LLM response: {text}"), false)
            }
        }
    }

    #[tool(description = "Ask the user for a username and an email (elicitation/create) with `message` (conformance).")]
    async fn test_elicitation(
        &self,
        Parameters(a): Parameters<MessageArgs>,
        InputResponses(r): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let schema = json!({"type": "object", "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        }, "required": ["username", "email"]});
        elicit(&cx, &r, &a.message, schema, "User response: ").await
    }

    #[tool(description = "Ask for a form whose every primitive field has a default (SEP-1034; conformance).")]
    async fn test_elicitation_sep1034_defaults(
        &self,
        InputResponses(r): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        }, "required": []});
        elicit(&cx, &r, "Please review and update the form fields with defaults", schema, "Elicitation completed: ")
            .await
    }

    #[tool(description = "Ask for a form with the five enum shapes of SEP-1330 (conformance).")]
    async fn test_elicitation_sep1330_enums(
        &self,
        InputResponses(r): InputResponses,
        cx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let schema = json!({"type": "object", "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"}
            ]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"}, {"const": "value3", "title": "Third Choice"}
            ]}}
        }, "required": []});
        elicit(&cx, &r, "Please choose from the enum fields", schema, "Elicitation completed: ").await
    }
}

/// `json_schema_2020_12_tool`: an input schema with `$schema`, `$defs` and
/// `additionalProperties: false` that a server must list unchanged (SEP-1613).
pub(crate) fn json_schema_route() -> Result<ToolRoute<Fixture>, serde_json::Error> {
    let tool: rmcp::model::Tool = serde_json::from_value(json!({
        "name": "json_schema_2020_12_tool",
        "description": "Tool with JSON Schema 2020-12 features (conformance).",
        "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": false
        }
    }))?;
    Ok(ToolRoute::new_dyn(tool, |cx| {
        let text = format!(
            "json_schema_2020_12_tool called with {}",
            serde_json::Value::Object(cx.arguments.clone().unwrap_or_default())
        );
        Box::pin(async move { Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)]))) })
    }))
}
