//! Resources for the model in direct, progressive and mixed runs: two meta-tools,
//! `list_resources(server?)` and `read_resource(server, uri)`, offered only when a server of the
//! run offers resources (a tools-only setup pays no tokens for them). Code mode has the
//! `listResources` / `readResource` globals instead.
//!
//! A read's text goes back as the tool result, under the same limits as a tool result (the
//! manager's `mcp.max_result_bytes`, then `agent.max_tool_result_bytes` with the truncation
//! marker); binary contents are described (type and size), never passed on as base64.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::ResourceContents;
use serde_json::{Value, json};

use super::direct::cut;
use super::provider::{ToolCall, ToolSpec};
use super::session::{ToolHost, ToolOutcome};
use crate::mcp::McpManager;
use crate::util::suggest::{did_you_mean, suggest};

pub const LIST_RESOURCES: &str = "list_resources";
pub const READ_RESOURCE: &str = "read_resource";

/// Longest description shown per resource in a listing.
const MAX_DESCRIPTION: usize = 200;

/// The two meta-tools, for the servers of a run that offer resources.
pub struct ResourceTools {
    manager: Arc<McpManager>,
    /// The run's servers that offer resources, sorted.
    servers: Vec<String>,
    max_result_bytes: usize,
}

impl ResourceTools {
    /// The meta-tools when any of `servers` that is running offers resources, else `None`.
    pub async fn discover(manager: &Arc<McpManager>, servers: &[String], max_result_bytes: usize) -> Option<Self> {
        let mut offering = Vec::new();
        for s in servers {
            if manager.offers_if_running(s).await.is_some_and(|o| o.resources) {
                offering.push(s.clone());
            }
        }
        offering.sort();
        (!offering.is_empty()).then(|| ResourceTools { manager: manager.clone(), servers: offering, max_result_bytes })
    }

    /// Terse on purpose: they are sent with every request.
    pub fn specs() -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: LIST_RESOURCES.into(),
                description: "List the MCP servers' resources (documents and data to read) and URI templates.".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {"server": {"type": "string", "description": "Only this server."}}
                }),
            },
            ToolSpec {
                name: READ_RESOURCE.into(),
                description: "Read an MCP resource by URI (from list_resources, or a template filled in).".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {"server": {"type": "string"}, "uri": {"type": "string"}},
                    "required": ["server", "uri"]
                }),
            },
        ]
    }

    /// The sentence the system prompt gains.
    pub fn prompt_line(&self) -> String {
        format!(
            " Servers {} also offer resources (documents and data): `{LIST_RESOURCES}` lists them, `{READ_RESOURCE}` \
             reads one.",
            self.servers.join(", ")
        )
    }

    pub fn handles(name: &str) -> bool {
        name == LIST_RESOURCES || name == READ_RESOURCE
    }

    pub async fn call(&self, call: &ToolCall) -> ToolOutcome {
        let server = call.input.get("server").and_then(Value::as_str);
        let (content, is_error, server) = match call.name.as_str() {
            LIST_RESOURCES => match self.pick(server) {
                Ok(servers) => (self.list(&servers).await, false, None),
                Err(e) => (e, true, None),
            },
            _ => match (server, call.input.get("uri").and_then(Value::as_str)) {
                (Some(s), Some(uri)) => match self.pick(Some(s)) {
                    Ok(_) => match self.manager.read_resource(s, uri).await {
                        Ok(r) => (contents_text(&r.contents), false, Some(s.to_string())),
                        Err(e) => (e.to_string(), true, Some(s.to_string())),
                    },
                    Err(e) => (e, true, None),
                },
                _ => ("`server` and `uri` are required (list_resources shows both)".into(), true, None),
            },
        };
        let (content, truncated) = cut(content, self.max_result_bytes);
        ToolOutcome { content, is_error, server, tool: Some(call.name.clone()), truncated, detail: None, mcp_calls: 1 }
    }

    /// The servers a call names (all when none), or why the name is wrong.
    fn pick(&self, server: Option<&str>) -> Result<Vec<String>, String> {
        match server {
            None | Some("") => Ok(self.servers.clone()),
            Some(s) if self.servers.iter().any(|o| o == s) => Ok(vec![s.to_string()]),
            Some(s) => {
                let suggestions = suggest(s, self.servers.iter().map(String::as_str));
                let hint = if suggestions.is_empty() {
                    format!("; servers with resources: {}", self.servers.join(", "))
                } else {
                    did_you_mean(&suggestions)
                };
                Err(format!("no resources on server `{s}`{hint}"))
            }
        }
    }

    async fn list(&self, servers: &[String]) -> String {
        let mut out = String::new();
        for s in servers {
            match self.manager.resources(s).await {
                Ok(listed) => {
                    for r in &listed.resources {
                        out.push_str(&format!("{s}: {}", r.uri));
                        let mut about = vec![r.name.clone()];
                        about.extend(r.mime_type.clone());
                        out.push_str(&format!(" ({})", about.join(", ")));
                        push_description(&mut out, r.description.as_deref());
                        out.push('\n');
                    }
                    for t in &listed.templates {
                        out.push_str(&format!("{s}: {} (template: {})", t.uri_template, t.name));
                        push_description(&mut out, t.description.as_deref());
                        out.push('\n');
                    }
                    if listed.resources.is_empty() && listed.templates.is_empty() {
                        out.push_str(&format!("{s}: no resources\n"));
                    }
                }
                Err(e) => out.push_str(&format!("{s}: {e}\n")),
            }
        }
        out
    }
}

fn push_description(out: &mut String, d: Option<&str>) {
    if let Some(d) = d.map(|d| d.split_whitespace().collect::<Vec<_>>().join(" ")).filter(|d| !d.is_empty()) {
        let (d, _) = cut(d, MAX_DESCRIPTION);
        out.push_str(" - ");
        out.push_str(d.lines().next().unwrap_or_default());
    }
}

/// A read's contents as text for the model: text as is, binary described. Several contents
/// are each headed by their URI.
pub fn contents_text(contents: &[ResourceContents]) -> String {
    let one = contents.len() == 1;
    let mut out = String::new();
    for c in contents {
        match c {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                if !one {
                    out.push_str(&format!("--- {uri}\n"));
                }
                out.push_str(text);
                if !one && !text.ends_with('\n') {
                    out.push('\n');
                }
            }
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                out.push_str(&format!("[binary resource {uri}: {}; not shown]\n", blob_summary(mime_type, blob)));
            }
            // A kind of content this version does not know: said, not guessed at.
            _ => out.push_str("[resource contents of an unknown kind; not shown]\n"),
        }
    }
    if contents.is_empty() {
        out.push_str("(the resource is empty)");
    }
    out
}

/// `image/png, 1.2 KB` for a base64 blob (the size it decodes to, from its length).
pub fn blob_summary(mime_type: &Option<String>, blob: &str) -> String {
    let size = crate::util::size::human_bytes(crate::util::size::base64_decoded_len(blob));
    format!("{}, {size}", mime_type.as_deref().unwrap_or("application/octet-stream"))
}

/// A run's host with the resource meta-tools beside its own tools (when there are any).
pub struct WithResources<H> {
    inner: H,
    resources: Option<ResourceTools>,
    specs: Vec<ToolSpec>,
}

impl<H: ToolHost> WithResources<H> {
    pub fn new(inner: H, resources: Option<ResourceTools>) -> Self {
        let mut specs = inner.specs().to_vec();
        if resources.is_some() {
            specs.extend(ResourceTools::specs());
        }
        WithResources { inner, resources, specs }
    }

    pub fn into_inner(self) -> H {
        self.inner
    }
}

impl<H: ToolHost> ToolHost for WithResources<H> {
    fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutcome> {
        match &self.resources {
            Some(r) if ResourceTools::handles(&call.name) => Box::pin(r.call(call)),
            _ => self.inner.call(call),
        }
    }

    fn concurrent(&self) -> bool {
        self.inner.concurrent()
    }

    fn label(&self, call: &ToolCall) -> String {
        self.inner.label(call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_contents_are_described_never_passed_on() {
        // Six bytes, with ESC and `[` among them.
        let blob = "AJ+SlhtbAA==".to_string();
        let contents = vec![ResourceContents::BlobResourceContents {
            uri: "x://b".into(),
            mime_type: Some("application/octet-stream".into()),
            blob: blob.clone(),
            meta: None,
        }];
        let text = contents_text(&contents);
        assert_eq!(text, "[binary resource x://b: application/octet-stream, 7 B; not shown]\n");
        assert!(!text.contains(&blob));
    }
}
