//! The tool index entry shared by every consumer: `agent mcp list --json` prints it, codegen
//! reads it (also from saved files via `--from-tools`), the bridge serves it on `GET /tools`,
//! and direct mode turns it into LLM tool definitions.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::util::json::{ref_name, resolve_local_ref};

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

    /// The hints the tool's annotations set to `true`, as words: `read-only`, `destructive`,
    /// `idempotent`, `open-world` (for `mcp list --detailed` and the search index).
    pub fn hint_labels(&self) -> Vec<&'static str> {
        let Some(a) = self.annotations.as_ref().and_then(Value::as_object) else { return Vec::new() };
        [
            ("readOnlyHint", "read-only"),
            ("destructiveHint", "destructive"),
            ("idempotentHint", "idempotent"),
            ("openWorldHint", "open-world"),
        ]
        .into_iter()
        .filter(|(key, _)| a.get(*key).and_then(Value::as_bool) == Some(true))
        .map(|(_, label)| label)
        .collect()
    }

    /// `server.tool`, the name users type.
    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.server, self.name)
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

/// The value of a successful result, decoded exactly as `runtime-js/result.js`'s `decodeResult`
/// decodes it for scripts (the one Rust mirror of that file; a test runs both on the same
/// results): `structuredContent` when present and not null; otherwise, when every content block
/// is text, the joined text (blocks joined by newlines) parsed as JSON when it parses, else the
/// text itself; otherwise (images, resources, mixed or no content) the content blocks.
pub fn decode(result: &rmcp::model::CallToolResult) -> Value {
    if let Some(sc) = result.structured_content.as_ref().filter(|v| !v.is_null()) {
        return sc.clone();
    }
    let texts: Vec<&str> = result.content.iter().filter_map(|b| b.as_text().map(|t| t.text.as_str())).collect();
    if texts.is_empty() || texts.len() != result.content.len() {
        return serde_json::to_value(&result.content).unwrap_or(Value::Null);
    }
    let text = texts.join("\n");
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// Who reads a rendered tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// A person at a terminal (`agent mcp call`): one of the two forms of the data, never both:
    /// `structuredContent` as pretty JSON when every text block is that JSON (or there is none),
    /// else the text; blocks separated by a newline, the last one as it is (the caller decides
    /// on a final newline); sizes in KB/MB, resources summarised.
    Terminal,
    /// A model (direct mode): the content blocks in order (resource text inlined), then
    /// `structuredContent` as compact JSON unless a text block already holds it.
    Model,
}

/// A tool result as text: the one rendering of a `CallToolResult` (see [`Reader`]).
pub fn result_text(result: &rmcp::model::CallToolResult, reader: Reader) -> String {
    use rmcp::model::ContentBlock;
    let structured = result.structured_content.as_ref();
    let mirrors =
        |text: &str| structured.is_some_and(|sc| serde_json::from_str::<Value>(text).ok().as_ref() == Some(sc));
    let size = |b64: &str| {
        let n = (b64.trim_end_matches('=').len() * 3 / 4) as u64;
        match reader {
            Reader::Terminal => crate::util::size::human_bytes(n),
            Reader::Model => format!("{n} bytes"),
        }
    };
    let mut parts: Vec<String> = Vec::new();
    let mut structured_shown = false;
    // A text that is not the structured JSON (FastMCP's `{"result": text}` next to `text`) is
    // what a person reads; the structured form would say the same twice.
    let own_text = result.content.iter().any(|b| matches!(b, ContentBlock::Text(t) if !mirrors(&t.text)));
    let show_structured = reader == Reader::Terminal && !own_text;
    if let (true, Some(sc)) = (show_structured, structured) {
        parts.push(serde_json::to_string_pretty(sc).unwrap_or_default());
        structured_shown = true;
    }
    for block in &result.content {
        let part = match block {
            ContentBlock::Text(t) if mirrors(&t.text) => {
                // rmcp servers mirror structuredContent into a text block: show it once.
                if show_structured {
                    continue;
                }
                structured_shown = true;
                t.text.clone()
            }
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(i) => format!("[image: {}, {}]", i.mime_type, size(&i.data)),
            ContentBlock::Audio(a) => format!("[audio: {}, {}]", a.mime_type, size(&a.data)),
            ContentBlock::Resource(r) => {
                let v = serde_json::to_value(&r.resource).unwrap_or_default();
                let uri = v.get("uri").and_then(Value::as_str).unwrap_or("?");
                let mime = v.get("mimeType").and_then(Value::as_str);
                match (reader, v.get("text").and_then(Value::as_str)) {
                    (Reader::Model, Some(text)) => format!("[resource {uri}]\n{text}"),
                    (Reader::Model, None) => {
                        format!("[resource: {uri}, {}]", mime.unwrap_or("application/octet-stream"))
                    }
                    (Reader::Terminal, _) => {
                        format!("[resource: {uri}{}]", mime.map(|m| format!(", {m}")).unwrap_or_default())
                    }
                }
            }
            ContentBlock::ResourceLink(l) => format!("[resource link: {}]", l.uri),
            #[allow(unreachable_patterns)]
            other => format!(
                "[{} content]",
                serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(String::from))
                    .unwrap_or_else(|| "unknown".into())
            ),
        };
        parts.push(part);
    }
    match reader {
        Reader::Terminal => {
            let mut out = String::new();
            for p in parts {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&p);
            }
            out
        }
        Reader::Model => {
            if let Some(sc) = structured.filter(|_| !structured_shown) {
                parts.push(sc.to_string());
            }
            if parts.is_empty() {
                return "(the tool returned no content)".into();
            }
            parts.join("\n")
        }
    }
}

/// `a: integer, b: integer, mode?: "upper" | "lower"`.
pub fn param_summary(schema: &Value) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return "(none)".into();
    };
    if props.is_empty() {
        return "(none)".into();
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    props
        .iter()
        .map(|(name, p)| {
            let opt = if required.contains(&name.as_str()) { "" } else { "?" };
            format!("{name}{opt}: {}", short_type(p, schema))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn short_type(p: &Value, root: &Value) -> String {
    if let Some(r) = p.get("$ref").and_then(Value::as_str) {
        return match resolve_local_ref(root, r) {
            Some(t) if t.get("enum").is_some() => short_type(t, root),
            _ => ref_name(r).to_string(),
        };
    }
    if let Some(e) = p.get("enum").and_then(Value::as_array) {
        let vals: Vec<String> = e.iter().take(6).map(|v| v.to_string()).collect();
        let more = if e.len() > 6 { " | …" } else { "" };
        return format!("{}{more}", vals.join(" | "));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = p.get(key).and_then(Value::as_array) {
            return alts.iter().map(|a| short_type(a, root)).collect::<Vec<_>>().join(" | ");
        }
    }
    match p.get("type") {
        Some(Value::String(t)) if t == "array" => {
            let item = p.get("items").map(|i| short_type(i, root)).unwrap_or_else(|| "any".into());
            format!("{item}[]")
        }
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" | "),
        _ => "any".into(),
    }
}

/// `server.tool` → (`server`, `tool`), split at the first dot (tool names may contain dots).
pub fn split_qualified(name: &str) -> Option<(&str, &str)> {
    name.split_once('.').filter(|(s, t)| !s.is_empty() && !t.is_empty())
}
