//! The tool index entry shared by every consumer: `agent mcp list --json` prints it, codegen
//! reads it (also from saved files via `--from-tools`), the bridge serves it on `GET /tools`,
//! and direct mode turns it into LLM tool definitions.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool of one server, in the stable `agent mcp list --json` format:
/// `{server, name, title, description, inputSchema, outputSchema, annotations}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    pub server: String,
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// The JSON Schema of the arguments (an object schema; `{"type":"object"}` when the server sent none).
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    #[serde(default)]
    pub output_schema: Option<Value>,
    /// MCP `ToolAnnotations` as sent by the server (`readOnlyHint`, `destructiveHint`, ...).
    #[serde(default)]
    pub annotations: Option<Value>,
}

pub fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

impl ToolInfo {
    /// Builds the index entry from an rmcp tool definition.
    pub fn from_rmcp(server: &str, tool: &rmcp::model::Tool) -> ToolInfo {
        let annotations = tool.annotations.as_ref().and_then(|a| serde_json::to_value(a).ok());
        let title = tool.title.clone().or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()));
        ToolInfo {
            server: server.to_string(),
            name: tool.name.to_string(),
            title,
            description: tool.description.as_ref().map(|d| d.to_string()),
            input_schema: Value::Object((*tool.input_schema).clone()),
            output_schema: tool.output_schema.as_ref().map(|s| Value::Object((**s).clone())),
            annotations,
        }
    }

    /// `server.tool`, the name users type.
    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.server, self.name)
    }
}

/// What kind of JSON value `v` is, for error messages: `a string`, `an array`, `null`.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The MCP `CallToolResult` as JSON, normalised: `content` and `isError` are always present
/// (rmcp omits `isError` when the server did), so scripts and `--json` readers see one shape.
pub fn result_json(result: &rmcp::model::CallToolResult) -> Value {
    let mut v = serde_json::to_value(result).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut v {
        map.insert("isError".into(), Value::Bool(result.is_error == Some(true)));
        map.entry("content").or_insert_with(|| Value::Array(Vec::new()));
    }
    v
}
