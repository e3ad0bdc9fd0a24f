//! Direct mode: every MCP tool becomes one LLM tool.
//!
//! Names: `mcp_<server>_<tool>` with every character outside `[a-zA-Z0-9_-]` replaced by `_`
//! (what both Anthropic and OpenAI accept); names over 64 characters are cut and end in a hash
//! of the original, and names that still collide get `_2`, `_3`, … in (server, tool) order. The
//! [`ToolMap`] keeps the way back to the MCP server and tool.
//!
//! Schemas are adapted only where providers reject them (see [`adapt_schema`]); results go back as
//! text, cut with an explicit marker past `agent.max_tool_result_bytes`.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};

use super::provider::{ToolCall, ToolSpec};
use super::session::{ToolHost, ToolOutcome};
use crate::handler::{self, CallError, HandlerRunner, Source};
use crate::mcp::tools::Reader;
use crate::mcp::{CallContext, McpManager, ToolInfo};
use crate::util::json::{ref_name, resolve_local_ref};
use crate::util::suggest::{did_you_mean, suggest};

/// Which provider's schema rules to satisfy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaFlavor {
    Anthropic,
    /// OpenAI-compatible servers: also inline `$ref`s, which several of them cannot resolve.
    OpenAi,
}

/// One MCP tool as the model sees it.
#[derive(Debug, Clone)]
pub struct MappedTool {
    pub llm_name: String,
    pub server: String,
    pub tool: String,
    /// What [`adapt_schema`] changed, for `-v` logs.
    pub adaptations: Vec<String>,
    /// The tool was given the [`handler::ARG`](crate::handler::ARG) argument ([`ToolMap::with_result_handlers`]).
    pub result_handler: bool,
}

/// The LLM tool definitions of direct mode and the way back to MCP.
#[derive(Debug, Clone, Default)]
pub struct ToolMap {
    pub specs: Vec<ToolSpec>,
    pub tools: Vec<MappedTool>,
    by_name: BTreeMap<String, usize>,
}

impl ToolMap {
    /// Maps `tools` (any order; the mapping is made in (server, tool) order so it is stable).
    pub fn build(tools: &[ToolInfo], flavor: SchemaFlavor) -> ToolMap {
        let mut sorted: Vec<&ToolInfo> = tools.iter().collect();
        sorted.sort_by(|a, b| (&a.server, &a.name).cmp(&(&b.server, &b.name)));
        let mut map = ToolMap::default();
        let mut taken = HashSet::new();
        for t in sorted {
            let llm_name = unique_name(&t.server, &t.name, &mut taken);
            let (input_schema, adaptations) = adapt_schema(&t.input_schema, flavor);
            let description = t
                .description
                .clone()
                .filter(|d| !d.trim().is_empty())
                .or_else(|| t.title.clone())
                .unwrap_or_else(|| format!("The `{}` tool of the MCP server `{}`.", t.name, t.server));
            map.by_name.insert(llm_name.clone(), map.tools.len());
            map.specs.push(ToolSpec { name: llm_name.clone(), description, input_schema });
            map.tools.push(MappedTool {
                llm_name,
                server: t.server.clone(),
                tool: t.name.clone(),
                adaptations,
                result_handler: false,
            });
        }
        map
    }

    /// The MCP tool behind an LLM tool name.
    pub fn resolve(&self, llm_name: &str) -> Option<&MappedTool> {
        self.by_name.get(llm_name).map(|&i| &self.tools[i])
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.llm_name.as_str())
    }

    /// Adds the optional [`handler::ARG`](crate::handler::ARG) to every tool (`mcp.result_handlers.enabled`;
    /// the contract is in [`handler::PROMPT`](crate::handler::PROMPT), once). A tool with its own argument of
    /// that name keeps it, without a handler.
    pub fn with_result_handlers(mut self) -> ToolMap {
        for (spec, tool) in self.specs.iter_mut().zip(self.tools.iter_mut()) {
            if let Some(Value::Object(props)) = spec.input_schema.get_mut("properties")
                && !props.contains_key(handler::ARG)
            {
                props.insert(handler::ARG.into(), handler::arg_schema_short());
                tool.result_handler = true;
            }
        }
        self
    }
}

/// `mcp_<server>_<tool>`, sanitised, at most 64 characters, unique within `taken`.
pub fn unique_name(server: &str, tool: &str, taken: &mut HashSet<String>) -> String {
    crate::mcp::naming::unique_name("mcp_", server, tool, taken)
}

/// Adapts an MCP input schema to what providers accept, and says what it changed:
///
/// - not an object, or no `type`/a non-object `type` at the top → `type: object` (MCP arguments
///   are always an object; both APIs require an object schema at the top);
/// - `anyOf`/`oneOf`/`allOf` at the top (rejected by both) → merged into one object schema:
///   properties united, `required` kept only where every branch (`anyOf`/`oneOf`) or any
///   branch (`allOf`) requires it;
/// - missing `properties` → `{}` (some OpenAI-compatible servers require it);
/// - `$schema`/`$id` at the top → removed;
/// - OpenAI flavour: local `$ref`s (`#/$defs/…`, `#/definitions/…`) inlined and the definitions
///   dropped; a recursive reference is cut at its second occurrence to a described `object`.
///
/// The original schema still validates the arguments (the MCP manager checks them), so a
/// looser adapted schema can only lead to an explained error result, never a bad call.
pub fn adapt_schema(schema: &Value, flavor: SchemaFlavor) -> (Value, Vec<String>) {
    let mut notes = Vec::new();
    let Value::Object(orig) = schema else {
        notes.push("the input schema was not an object; replaced by an empty object schema".into());
        return (json!({"type": "object", "properties": {}}), notes);
    };
    let mut s = orig.clone();
    for k in ["$schema", "$id"] {
        s.remove(k);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = s.remove(key) {
            merge_branches(&mut s, &branches, key == "allOf", orig);
            notes.push(format!("top-level `{key}` merged into one object schema"));
        }
    }
    match s.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        None => {
            s.insert("type".into(), json!("object"));
        }
        Some(other) => {
            notes.push(format!("top-level type {other} replaced by \"object\""));
            s.insert("type".into(), json!("object"));
        }
    }
    if !matches!(s.get("properties"), Some(Value::Object(_))) {
        s.insert("properties".into(), json!({}));
    }
    let mut out = Value::Object(s);
    if flavor == SchemaFlavor::OpenAi && contains_ref(&out) {
        let root = out.clone();
        inline_refs(&mut out, &root, &mut Vec::new());
        if let Value::Object(m) = &mut out {
            m.remove("$defs");
            m.remove("definitions");
        }
        notes.push("`$ref`s inlined".into());
    }
    (out, notes)
}

fn merge_branches(s: &mut Map<String, Value>, branches: &[Value], all_of: bool, root: &Map<String, Value>) {
    let root_v = Value::Object(root.clone());
    let mut props = match s.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let mut required: Vec<String> = str_list(s.get("required"));
    let mut common: Option<Vec<String>> = None;
    for b in branches {
        let b = match b.get("$ref").and_then(Value::as_str) {
            Some(r) => resolve_local_ref(&root_v, r).unwrap_or(b),
            None => b,
        };
        if let Some(Value::Object(p)) = b.get("properties") {
            for (k, v) in p {
                props.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        let req = str_list(b.get("required"));
        if all_of {
            required.extend(req);
        } else {
            common = Some(match common {
                None => req,
                Some(c) => c.into_iter().filter(|x| req.contains(x)).collect(),
            });
        }
    }
    required.extend(common.unwrap_or_default());
    required.dedup();
    let mut seen = HashSet::new();
    required.retain(|r| seen.insert(r.clone()));
    s.insert("properties".into(), Value::Object(props));
    if required.is_empty() {
        s.remove("required");
    } else {
        s.insert("required".into(), json!(required));
    }
}

fn str_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default()
}

fn contains_ref(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.contains_key("$ref") || m.values().any(contains_ref),
        Value::Array(a) => a.iter().any(contains_ref),
        _ => false,
    }
}

fn inline_refs(v: &mut Value, root: &Value, stack: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str).map(String::from)
                && let Some(target) = resolve_local_ref(root, &r)
            {
                let name = ref_name(&r).to_string();
                let mut replacement = if stack.contains(&r) || stack.len() > 32 {
                    // Recursion: stop here with a placeholder that still says what goes there.
                    let mut p = Map::new();
                    if let Some(t) = target.get("type") {
                        p.insert("type".into(), t.clone());
                    }
                    p.insert("description".into(), json!(format!("A `{name}` (recursive; same shape as above).")));
                    Value::Object(p)
                } else {
                    let mut t = target.clone();
                    stack.push(r.clone());
                    inline_refs(&mut t, root, stack);
                    stack.pop();
                    t
                };
                // Sibling keywords next to `$ref` (e.g. a description) win over the target's.
                if let Value::Object(rep) = &mut replacement {
                    for (k, val) in m.iter() {
                        if k != "$ref" {
                            rep.insert(k.clone(), val.clone());
                        }
                    }
                }
                *v = replacement;
                return;
            }
            for (k, child) in m.iter_mut() {
                if k != "$defs" && k != "definitions" {
                    inline_refs(child, root, stack);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| inline_refs(x, root, stack)),
        _ => {}
    }
}

/// A tool result as text for the model (see [`Reader::Model`]).
pub fn result_text(result: &CallToolResult) -> String {
    crate::mcp::tools::result_text(result, Reader::Model)
}

/// Cuts `text` to at most `max` bytes (on a char boundary) and says how much was left out.
pub fn cut(text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let total = text.len();
    let mut out = text;
    out.truncate(end);
    out.push_str(&format!("\n[result truncated: {} of {total} bytes omitted]", total - end));
    (out, true)
}

/// Direct mode's [`ToolHost`]: each call goes to [`McpManager::call_tool`] (argument validation,
/// timeouts and restarts live there); an MCP failure becomes an error result, never a crash.
pub struct DirectHost {
    manager: Arc<McpManager>,
    map: ToolMap,
    max_result_bytes: usize,
    handlers: Option<HandlerRunner>,
}

impl DirectHost {
    pub fn new(manager: Arc<McpManager>, map: ToolMap, max_result_bytes: usize) -> DirectHost {
        DirectHost { manager, map, max_result_bytes, handlers: None }
    }

    /// Runs the `result_handler` argument of each call (strips it from the arguments); the map
    /// should come from [`ToolMap::with_result_handlers`].
    pub fn with_result_handlers(mut self, runner: HandlerRunner) -> DirectHost {
        self.handlers = Some(runner);
        self
    }

    /// Stops what the result handlers started (their bridge).
    pub async fn stop(self) {
        if let Some(h) = self.handlers {
            h.stop().await;
        }
    }

    pub fn map(&self) -> &ToolMap {
        &self.map
    }

    async fn run(&self, call: &ToolCall) -> ToolOutcome {
        let Some(m) = self.map.resolve(&call.name) else {
            let hint = did_you_mean(&suggest(&call.name, self.map.names()));
            return ToolOutcome {
                content: format!("unknown tool `{}`{hint}", call.name),
                is_error: true,
                ..Default::default()
            };
        };
        let args = call.input.as_object().cloned().unwrap_or_default();
        let source = if m.result_handler { Source::Argument } else { Source::None };
        let cx = CallContext::default();
        let called = handler::call(self.handlers.as_ref(), &self.manager, &m.server, &m.tool, args, source, &cx);
        let (content, is_error) = match called.await {
            Ok(called) => {
                let r = called.into_result();
                (result_text(&r), r.is_error == Some(true))
            }
            Err(e @ CallError::Handler(_)) => {
                return ToolOutcome {
                    content: e.to_string(),
                    is_error: true,
                    server: Some(m.server.clone()),
                    tool: Some(m.tool.clone()),
                    ..Default::default()
                };
            }
            Err(e) => (e.to_string(), true),
        };
        let (content, truncated) = cut(content, self.max_result_bytes);
        ToolOutcome {
            content,
            is_error,
            server: Some(m.server.clone()),
            tool: Some(m.tool.clone()),
            truncated,
            detail: None,
            mcp_calls: 1,
        }
    }
}

impl ToolHost for DirectHost {
    fn specs(&self) -> &[ToolSpec] {
        &self.map.specs
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(self.run(call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(server: &str, name: &str, schema: Value) -> ToolInfo {
        ToolInfo {
            server: server.into(),
            name: name.into(),
            title: None,
            description: Some("d".into()),
            input_schema: schema,
            output_schema: None,
            annotations: None,
        }
    }

    #[test]
    fn names_are_valid_unique_and_stable() {
        let valid = regex::Regex::new("^[a-zA-Z0-9_-]{1,64}$").unwrap();
        let long = "x".repeat(80);
        let tools = vec![
            info("fixture", "text.upper", json!({})),
            info("fixture", "text_upper", json!({})),
            info("my server", "café/ü", json!({})),
            info("s", &long, json!({})),
            info("s", &format!("{long}y"), json!({})),
        ];
        let map = ToolMap::build(&tools, SchemaFlavor::Anthropic);
        let names: Vec<&str> = map.names().collect();
        assert!(names.iter().all(|n| valid.is_match(n)), "{names:?}");
        let unique: HashSet<&&str> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
        assert_eq!(map.resolve("mcp_fixture_text_upper").unwrap().tool, "text.upper");
        assert_eq!(map.resolve("mcp_fixture_text_upper_2").unwrap().tool, "text_upper");
        assert_eq!(map.resolve("mcp_my_server_caf___").unwrap().tool, "café/ü");
        let again = ToolMap::build(&tools.iter().rev().cloned().collect::<Vec<_>>(), SchemaFlavor::Anthropic);
        assert_eq!(again.names().collect::<Vec<_>>(), names, "order of discovery does not change names");
        let l1 = map.tools.iter().find(|t| t.tool == long).unwrap();
        assert_eq!(l1.llm_name.len(), 64);
    }

    #[test]
    fn schemas_are_adapted_only_where_needed() {
        let plain = json!({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]});
        assert_eq!(adapt_schema(&plain, SchemaFlavor::OpenAi), (plain.clone(), vec![]));

        let (s, notes) = adapt_schema(&json!({"type":"string"}), SchemaFlavor::Anthropic);
        assert_eq!(s, json!({"type":"object","properties":{}}));
        assert_eq!(notes.len(), 1);

        let union = json!({"oneOf":[
            {"type":"object","properties":{"id":{"type":"string"},"q":{"type":"string"}},"required":["id","q"]},
            {"type":"object","properties":{"url":{"type":"string"},"q":{"type":"string"}},"required":["url","q"]}]});
        let (s, _) = adapt_schema(&union, SchemaFlavor::Anthropic);
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"].as_object().unwrap().len(), 3);
        assert_eq!(s["required"], json!(["q"]));
        assert!(s.get("oneOf").is_none());
    }

    #[test]
    fn refs_are_inlined_for_openai_and_recursion_is_cut() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "Mode": {"type": "string", "enum": ["fast", "thorough"]},
                "Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
            },
            "properties": {
                "mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]},
                "tree": {"$ref": "#/$defs/Node", "description": "root"}
            }
        });
        let (anthropic, _) = adapt_schema(&schema, SchemaFlavor::Anthropic);
        assert!(anthropic.get("$defs").is_some(), "Anthropic resolves $ref itself");
        assert!(anthropic.get("$schema").is_none());
        let (s, notes) = adapt_schema(&schema, SchemaFlavor::OpenAi);
        assert!(!contains_ref(&s), "{s}");
        assert!(s.get("$defs").is_none());
        assert_eq!(s["properties"]["mode"]["anyOf"][0]["enum"], json!(["fast", "thorough"]));
        assert_eq!(s["properties"]["tree"]["description"], "root");
        let inner = &s["properties"]["tree"]["properties"]["children"]["items"];
        assert_eq!(inner["type"], "object");
        assert!(inner["description"].as_str().unwrap().contains("recursive"), "{inner}");
        assert!(notes.iter().any(|n| n.contains("inlined")));
    }

    #[test]
    fn result_handler_is_added_unless_the_tool_has_its_own() {
        let tools = vec![
            info("s", "plain", json!({"type": "object", "properties": {"a": {"type": "string"}}})),
            info("s", "own", json!({"type": "object", "properties": {"result_handler": {"type": "integer"}}})),
        ];
        let map = ToolMap::build(&tools, SchemaFlavor::Anthropic).with_result_handlers();
        // (server, tool) order: `own`, then `plain`.
        assert_eq!(map.specs[1].input_schema["properties"]["result_handler"], handler::arg_schema_short());
        assert!(map.tools[1].result_handler);
        assert_eq!(map.specs[0].input_schema["properties"]["result_handler"], json!({"type": "integer"}));
        assert!(!map.tools[0].result_handler);
    }

    #[test]
    fn results_are_text_and_cut_with_a_marker() {
        let r = CallToolResult::structured(json!({"sum": 3}));
        assert_eq!(result_text(&r), r#"{"sum":3}"#);
        let r = CallToolResult::success(vec![
            rmcp::model::ContentBlock::text("hi"),
            rmcp::model::ContentBlock::image("AAAA", "image/png"),
        ]);
        assert_eq!(result_text(&r), "hi\n[image: image/png, 3 bytes]");
        let (s, cut_) = cut("héllo world".to_string(), 2);
        assert!(cut_);
        assert_eq!(s, "h\n[result truncated: 11 of 12 bytes omitted]");
        assert_eq!(cut("ok".into(), 2), ("ok".to_string(), false));
    }
}
