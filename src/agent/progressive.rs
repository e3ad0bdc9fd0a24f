//! Progressive mode: the model sees two tools instead of every MCP tool, `search_tools(query,
//! limit)` over the tool catalog (`mcp::catalog`, the ranking of `agent mcp search`) and
//! `call_tool(name, arguments)` with `name` as `server.tool` (as `agent mcp call` takes it), plus
//! the tools pinned in `mcp.pinned_tools` as ordinary direct-mode tools. A few hundred tokens of
//! tool definitions per request however many tools the servers have.
//!
//! `call_tool` goes to `McpManager::call_tool`, which checks the server and tool (with its
//! suggestions) and validates the arguments against the input schema before calling, exactly as
//! for `agent mcp call`; an invalid call is answered with those messages plus the tool's input
//! schema, so the model can correct itself.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::direct::{DirectHost, ToolMap, cut, result_text};
use super::provider::{ToolCall, ToolSpec};
use super::session::{ToolHost, ToolOutcome};
use crate::mcp::tools::split_qualified;
use crate::mcp::{McpError, McpManager, ToolInfo};
use crate::util::suggest::{did_you_mean, suggest};

pub const SEARCH_TOOLS: &str = "search_tools";
pub const CALL_TOOL: &str = "call_tool";

/// Results of `search_tools` when the model gives no limit, and the most it may ask for.
const DEFAULT_LIMIT: usize = 8;
const MAX_LIMIT: usize = 25;

/// `search_tools` and `call_tool`. Terse on purpose: they are sent with every request.
pub fn tool_specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: SEARCH_TOOLS.into(),
            description: "Find MCP tools for a task: ranked `server.tool(params)` signatures with descriptions.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What the tool should do, in plain words."},
                    "limit": {"type": "integer", "description": "Most results (default 8)."}
                },
                "required": ["query"]
            }),
        },
        ToolSpec {
            name: CALL_TOOL.into(),
            description: "Call an MCP tool found with search_tools.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "server.tool"},
                    "arguments": {"type": "object", "description": "The tool's arguments."}
                },
                "required": ["name"]
            }),
        },
    ]
}

/// The built-in system prompt of progressive mode.
pub fn system_prompt(servers: &[String], tools: usize, pinned: &[String]) -> String {
    let list = if servers.is_empty() { "none are configured".to_string() } else { servers.join(", ") };
    let mut s = format!(
        "You complete the user's task with MCP tools (servers: {list}; {tools} tools). They are not listed: find \
         them with `{SEARCH_TOOLS}` (say what the tool should do), then call one with `{CALL_TOOL}` (name \
         `server.tool`, arguments matching its signature)."
    );
    if !pinned.is_empty() {
        s.push_str(&format!(" These can be called directly: {}.", pinned.join(", ")));
    }
    s.push_str(
        " Independent calls can go in one turn. When you are done, give the final answer as plain text without \
         calling a tool.\n",
    );
    s
}

/// The pinned tools among `tools`, and a warning (with a suggestion) for each pin that names no
/// known tool.
pub fn resolve_pins(pins: &[String], tools: &[ToolInfo]) -> (Vec<ToolInfo>, Vec<String>) {
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    for pin in pins {
        match tools.iter().find(|t| t.qualified_name() == *pin) {
            Some(t) => {
                if !found.iter().any(|f: &ToolInfo| f.qualified_name() == *pin) {
                    found.push(t.clone());
                }
            }
            None => {
                let names: Vec<String> = tools.iter().map(ToolInfo::qualified_name).collect();
                warnings.push(format!(
                    "mcp.pinned_tools: no tool `{pin}` among the started servers{}",
                    did_you_mean(&suggest(pin, names.iter().map(String::as_str)))
                ));
            }
        }
    }
    (found, warnings)
}

/// Progressive mode's [`ToolHost`].
pub struct ProgressiveHost {
    manager: Arc<McpManager>,
    /// The servers of this run: searches and calls stay within them.
    servers: Vec<String>,
    specs: Vec<ToolSpec>,
    pinned: DirectHost,
    max_result_bytes: usize,
}

impl ProgressiveHost {
    /// `pinned` are direct-mode tools (see [`resolve_pins`]); `servers` the run's servers.
    pub fn new(
        manager: Arc<McpManager>,
        servers: Vec<String>,
        pinned: ToolMap,
        max_result_bytes: usize,
    ) -> ProgressiveHost {
        let mut specs = tool_specs();
        specs.extend(pinned.specs.iter().cloned());
        let pinned = DirectHost::new(manager.clone(), pinned, max_result_bytes);
        ProgressiveHost { manager, servers, specs, pinned, max_result_bytes }
    }

    async fn search(&self, input: &Value) -> ToolOutcome {
        let Some(query) = input.get("query").and_then(Value::as_str).filter(|q| !q.trim().is_empty()) else {
            return error("`query` is required: what the tool should do, in plain words");
        };
        let limit = match input.get("limit") {
            None | Some(Value::Null) => DEFAULT_LIMIT,
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => (n as usize).min(MAX_LIMIT),
                _ => return error(&format!("`limit` must be a whole number from 1 to {MAX_LIMIT}")),
            },
        };
        if !crate::search::Index::has_terms(query) {
            return error(&format!("the query {query:?} has no words to search for; say what the tool should do"));
        }
        let (hits, failed) = self.manager.search(&self.servers, query, limit, &[]).await;
        let mut out = String::new();
        if hits.is_empty() {
            out.push_str(&format!("no tool matches {query:?}\n"));
        }
        for h in &hits {
            out.push_str(&h.signature);
            if !h.description.is_empty() {
                out.push_str(" - ");
                out.push_str(&h.description);
            }
            out.push('\n');
        }
        for (name, _) in &failed {
            out.push_str(&format!("(server `{name}` is not running; its tools are not searched)\n"));
        }
        let (content, truncated) = cut(out, self.max_result_bytes);
        ToolOutcome { content, truncated, ..Default::default() }
    }

    async fn call_tool(&self, input: &Value) -> ToolOutcome {
        let Some(name) = input.get("name").and_then(Value::as_str) else {
            return error("`name` is required: the tool as `server.tool`, as search_tools shows it");
        };
        let Some((server, tool)) = split_qualified(name) else {
            return error(&format!("expected `server.tool` (as search_tools shows it), got `{name}`"));
        };
        let args = match arguments(input.get("arguments")) {
            Ok(a) => a,
            Err(e) => return error(&e),
        };
        let mut outcome = ToolOutcome {
            server: Some(server.to_string()),
            tool: Some(tool.to_string()),
            mcp_calls: 1,
            ..Default::default()
        };
        if !self.servers.iter().any(|s| s == server) {
            let e = McpError::UnknownServer {
                name: server.to_string(),
                suggestions: suggest(server, self.servers.iter().map(String::as_str)),
                configured: self.servers.clone(),
            };
            outcome.content = e.to_string();
            outcome.is_error = true;
            outcome.mcp_calls = 0;
            return outcome;
        }
        let (content, is_error) = match self.manager.call_tool(server, tool, args).await {
            Ok(r) => (result_text(&r), r.is_error == Some(true)),
            Err(e @ McpError::InvalidArguments { .. }) => {
                let schema = self.manager.tool(server, tool).await.map(|t| t.input_schema).unwrap_or(Value::Null);
                (format!("{e}\ninput schema of `{name}`: {schema}"), true)
            }
            Err(e @ McpError::UnknownTool { .. }) => (format!("{e}\n(search_tools finds tools by what they do)"), true),
            Err(e) => (e.to_string(), true),
        };
        let (content, truncated) = cut(content, self.max_result_bytes);
        outcome.content = content;
        outcome.is_error = is_error;
        outcome.truncated = truncated;
        outcome
    }
}

/// `arguments` as an object: absent or null is `{}`; a string holding a JSON object (some models
/// send one) is parsed.
fn arguments(v: Option<&Value>) -> Result<Map<String, Value>, String> {
    match v {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err("`arguments` must be an object of the tool's named arguments".into()),
        },
        Some(other) => Err(format!(
            "`arguments` must be an object of the tool's named arguments, got {}",
            crate::util::json::json_kind(other)
        )),
    }
}

fn error(message: &str) -> ToolOutcome {
    ToolOutcome { content: message.to_string(), is_error: true, ..Default::default() }
}

impl ToolHost for ProgressiveHost {
    fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            match call.name.as_str() {
                SEARCH_TOOLS => self.search(&call.input).await,
                CALL_TOOL => self.call_tool(&call.input).await,
                name if self.pinned.map().resolve(name).is_some() => self.pinned.call(call).await,
                name => {
                    let hint = did_you_mean(&suggest(name, self.specs.iter().map(|s| s.name.as_str())));
                    error(&format!("unknown tool `{name}`{hint}; other tools are reached through `{CALL_TOOL}`"))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(server: &str, name: &str) -> ToolInfo {
        ToolInfo {
            server: server.into(),
            name: name.into(),
            title: None,
            description: None,
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: None,
        }
    }

    #[test]
    fn pins_resolve_or_warn_with_a_suggestion() {
        let tools = [info("github", "get_me"), info("github", "get_issue")];
        let (found, warnings) =
            resolve_pins(&["github.get_me".into(), "github.get_me".into(), "github.get_mee".into()], &tools);
        assert_eq!(found.len(), 1);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("no tool `github.get_mee`") && warnings[0].contains("github.get_me"),
            "{warnings:?}"
        );
    }

    #[test]
    fn arguments_are_objects_or_json_text_of_one() {
        assert_eq!(arguments(None).unwrap(), Map::new());
        assert_eq!(arguments(Some(&json!("{\"a\": 1}"))).unwrap()["a"], 1);
        assert!(arguments(Some(&json!([1]))).unwrap_err().contains("got an array"));
        assert!(arguments(Some(&json!("nope"))).is_err());
    }

    #[test]
    fn prompt_names_the_tools_and_pins() {
        let p = system_prompt(&["github".into()], 117, &["mcp_github_get_me".into()]);
        assert!(p.contains("servers: github; 117 tools") && p.contains("directly: mcp_github_get_me"), "{p}");
    }
}
