//! MCP's other server primitives, as a client: resources (and resource templates), prompts,
//! argument completions, resource subscriptions and the logging level.
//!
//! Each goes through the same live connection as tool calls ([`McpManager::connection`]), under
//! the server's `call_timeout` and the `mcp.max_result_bytes` cap on what it answers. A server
//! that does not declare a primitive's capability is never sent its requests: listing answers
//! empty, anything else is [`McpError::NotOffered`]. Resource and prompt lists are listed when
//! first asked for and kept per connection until the server says `list_changed` ([`Lists`]).
//! Unknown prompt names and resource URIs get suggestions from those lists.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, CompletionContext, CompletionInfo, GetPromptRequestParams, GetPromptResult,
    Prompt, ReadResourceRequestParams, ReadResourceResult, Reference, ServerCapabilities, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use serde::Serialize;
use serde_json::{Map, Value};

use super::catalog::{LeftOut, Primitive, SearchResult};
use super::connect::{Connection, Failure, capped, to_rmcp_level};
use super::error::{McpError, service_error};
pub use super::lists::{Lists, Resources};
use super::manager::McpManager;
use crate::config::LogLevel;

/// What a server offers besides tools (from its `initialize` capabilities).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Offers {
    pub resources: bool,
    /// `resources/subscribe` and `notifications/resources/updated`.
    pub subscribe: bool,
    pub prompts: bool,
    pub completions: bool,
    pub logging: bool,
}

impl Offers {
    pub fn of(caps: &ServerCapabilities) -> Offers {
        Offers {
            resources: caps.resources.is_some(),
            subscribe: caps.resources.as_ref().and_then(|r| r.subscribe).unwrap_or(false),
            prompts: caps.prompts.is_some(),
            completions: caps.completions.is_some(),
            logging: caps.logging.is_some(),
        }
    }
}

/// What a completion is for: a prompt's argument or a resource template's variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionRef {
    /// A prompt, by name.
    Prompt(String),
    /// A resource template, by its URI template.
    Resource(String),
}

impl CompletionRef {
    fn to_rmcp(&self) -> Reference {
        match self {
            CompletionRef::Prompt(name) => Reference::for_prompt(name.clone()),
            CompletionRef::Resource(uri) => Reference::for_resource(uri.clone()),
        }
    }
}

/// The capabilities a connection's server declared.
fn offers(conn: &Connection) -> Offers {
    conn.service.peer_info().map(|info| Offers::of(&info.capabilities)).unwrap_or_default()
}

impl McpManager {
    /// What `server` offers besides tools, starting it if needed.
    pub async fn offers(&self, server: &str) -> Result<Offers, McpError> {
        Ok(offers(&*self.connection(server).await?))
    }

    /// [`McpManager::search`] over the servers' resources, templates and prompts too (each
    /// result's `kind` says which): what scripts' `searchTools` and serve's `search_tools` rank.
    /// A server that offers none is asked nothing, and one that failed to start is left out.
    pub async fn search_all(
        &self,
        servers: &[String],
        query: &str,
        limit: usize,
        only: &[String],
    ) -> (Vec<SearchResult>, LeftOut) {
        let (catalog, failed) = self.catalog_of(servers).await;
        for (name, e) in &failed {
            tracing::info!("search leaves out `{name}`: {e}");
        }
        let mut primitives = Vec::new();
        for server in servers.iter().filter(|s| !failed.iter().any(|(f, _)| f == *s)) {
            let (resources, prompts) = self.offered(server, "search").await;
            primitives.extend(Primitive::of_server(server, &resources.resources, &resources.templates, &prompts));
        }
        let catalog = self.catalogs().with_primitives(catalog, primitives).await;
        (self.catalogs().search(&catalog, query, limit, only).await, failed)
    }

    /// The resources (with templates) and prompts of `server`, each empty when it offers none or
    /// listing failed (said at `-v`, naming `who` leaves them out): for callers that show what
    /// they can and go on.
    pub async fn offered(&self, server: &str, who: &str) -> (Arc<Resources>, Arc<Vec<Prompt>>) {
        let resources = self.resources(server).await.unwrap_or_else(|e| {
            tracing::info!("{who} leaves out the resources of `{server}`: {e}");
            Default::default()
        });
        let prompts = self.prompts(server).await.unwrap_or_else(|e| {
            tracing::info!("{who} leaves out the prompts of `{server}`: {e}");
            Default::default()
        });
        (resources, prompts)
    }

    /// What `server` offers, when it is running (never starts it: for callers that must not pay
    /// a failed server's start again).
    pub async fn offers_if_running(&self, server: &str) -> Option<Offers> {
        let conn = self.running(server).await?;
        Some(offers(&conn))
    }

    /// The resources and resource templates of `server` (empty when it offers none), kept until
    /// the server says its list changed.
    pub async fn resources(&self, server: &str) -> Result<Arc<Resources>, McpError> {
        let conn = self.connection(server).await?;
        if !offers(&conn).resources {
            return Ok(Arc::default());
        }
        let lists = &conn.lists;
        let stale = lists.resources_stale.swap(false, Ordering::AcqRel);
        if !stale && let Some(kept) = lists.resources.read().ok().and_then(|r| r.clone()) {
            return Ok(kept);
        }
        let service = &conn.service;
        let listed = self
            .request(server, "resources/list", &conn, async {
                let resources = service.list_all_resources().await?;
                // A server with resources but no templates may not know the method.
                let templates = match service.list_all_resource_templates().await {
                    Ok(t) => t,
                    Err(rmcp::ServiceError::McpError(e)) if e.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND => {
                        Vec::new()
                    }
                    Err(e) => return Err(e),
                };
                Ok(Resources { resources, templates })
            })
            .await?;
        let listed = Arc::new(listed);
        if let Ok(mut w) = lists.resources.write() {
            *w = Some(listed.clone());
        }
        Ok(listed)
    }

    /// The prompts of `server` (empty when it offers none), kept until its list changes.
    pub async fn prompts(&self, server: &str) -> Result<Arc<Vec<Prompt>>, McpError> {
        let conn = self.connection(server).await?;
        if !offers(&conn).prompts {
            return Ok(Arc::default());
        }
        let lists = &conn.lists;
        let stale = lists.prompts_stale.swap(false, Ordering::AcqRel);
        if !stale && let Some(kept) = lists.prompts.read().ok().and_then(|r| r.clone()) {
            return Ok(kept);
        }
        let service = &conn.service;
        let listed =
            Arc::new(self.request(server, "prompts/list", &conn, async { service.list_all_prompts().await }).await?);
        if let Ok(mut w) = lists.prompts.write() {
            *w = Some(listed.clone());
        }
        Ok(listed)
    }

    /// Reads one resource. An error for a URI that is neither listed nor matches a template is
    /// [`McpError::UnknownResource`] with suggestions; a result over `mcp.max_result_bytes` is
    /// [`McpError::TooLarge`].
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, McpError> {
        let conn = self.connection(server).await?;
        if !offers(&conn).resources {
            return Err(McpError::NotOffered { server: server.into(), what: "resources" });
        }
        let service = &conn.service;
        let params = ReadResourceRequestParams::new(uri.to_string());
        let what = format!("resources/read {uri}");
        match self.request(server, &what, &conn, async { service.read_resource(params).await }).await {
            // Only a server's own refusal can mean the URI is unknown; a timeout or a broken
            // connection says nothing about it.
            Err(McpError::Request { reason, upstream: upstream @ Some(_), .. }) => {
                let known = self.resources(server).await.unwrap_or_default();
                let listed = known.resources.iter().any(|r| r.uri == uri)
                    || known.templates.iter().any(|t| template_matches(&t.uri_template, uri));
                if listed {
                    return Err(McpError::Request { server: server.into(), what, reason, upstream });
                }
                let uris = known.resources.iter().map(|r| r.uri.as_str());
                Err(McpError::UnknownResource {
                    server: server.into(),
                    uri: uri.into(),
                    reason,
                    suggestions: crate::util::suggest::suggest(uri, uris),
                    upstream,
                })
            }
            other => other,
        }
    }

    /// Gets one prompt's messages. An unknown name is [`McpError::UnknownPrompt`] with
    /// suggestions; required arguments that are missing are named before the server is asked.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<GetPromptResult, McpError> {
        let conn = self.connection(server).await?;
        if !offers(&conn).prompts {
            return Err(McpError::NotOffered { server: server.into(), what: "prompts" });
        }
        let prompts = self.prompts(server).await?;
        let Some(prompt) = prompts.iter().find(|p| p.name == name) else {
            return Err(McpError::UnknownPrompt {
                server: server.into(),
                prompt: name.into(),
                suggestions: crate::util::suggest::suggest(name, prompts.iter().map(|p| p.name.as_str())),
            });
        };
        let missing: Vec<String> = prompt
            .arguments
            .iter()
            .flatten()
            .filter(|a| a.required == Some(true) && !args.contains_key(&a.name))
            .map(|a| a.name.clone())
            .collect();
        if !missing.is_empty() {
            return Err(McpError::InvalidArguments {
                server: server.into(),
                tool: name.into(),
                violations: missing.iter().map(|m| format!("missing required argument `{m}`")).collect(),
            });
        }
        // Prompt arguments are strings on the wire; other JSON values are sent as their text.
        let args: Map<String, Value> = args
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(_) => (k, v),
                other => (k, Value::String(other.to_string())),
            })
            .collect();
        let mut params = GetPromptRequestParams::new(name.to_string());
        if !args.is_empty() {
            params = params.with_arguments(args);
        }
        let service = &conn.service;
        let what = format!("prompts/get {name}");
        self.request(server, &what, &conn, async { service.get_prompt(params).await }).await
    }

    /// Completes `argument` (its value so far: `value`) of a prompt or a resource template;
    /// `context` holds the arguments already chosen.
    pub async fn complete(
        &self,
        server: &str,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: Map<String, Value>,
    ) -> Result<CompletionInfo, McpError> {
        let conn = self.connection(server).await?;
        if !offers(&conn).completions {
            return Err(McpError::NotOffered { server: server.into(), what: "completions" });
        }
        let mut params = CompleteRequestParams::new(reference.to_rmcp(), ArgumentInfo::new(argument, value));
        if !context.is_empty() {
            let args = context
                .into_iter()
                .map(|(k, v)| match v {
                    Value::String(s) => (k, s),
                    other => (k, other.to_string()),
                })
                .collect();
            params.context = Some(CompletionContext::with_arguments(args));
        }
        let service = &conn.service;
        let result =
            self.request(server, "completion/complete", &conn, async { service.complete(params).await }).await?;
        Ok(result.completion)
    }

    /// Asks `server` to send `notifications/resources/updated` for `uri` (see
    /// [`super::handler::ClientEvent::ResourceUpdated`]).
    #[allow(deprecated)] // resources/subscribe: the 2025-11-25 way, which the servers in use speak.
    pub async fn subscribe(&self, server: &str, uri: &str) -> Result<(), McpError> {
        let conn = self.connection(server).await?;
        if !offers(&conn).subscribe {
            return Err(McpError::NotOffered { server: server.into(), what: "resource subscriptions" });
        }
        let service = &conn.service;
        let params = SubscribeRequestParams::new(uri.to_string());
        self.request(server, "resources/subscribe", &conn, async { service.subscribe(params).await }).await
    }

    /// Stops the updates [`Self::subscribe`] asked for.
    #[allow(deprecated)]
    pub async fn unsubscribe(&self, server: &str, uri: &str) -> Result<(), McpError> {
        let conn = self.connection(server).await?;
        if !offers(&conn).subscribe {
            return Err(McpError::NotOffered { server: server.into(), what: "resource subscriptions" });
        }
        let service = &conn.service;
        let params = UnsubscribeRequestParams::new(uri.to_string());
        self.request(server, "resources/unsubscribe", &conn, async { service.unsubscribe(params).await }).await
    }

    /// Sets the least severe log message `server` sends (`logging/setLevel`).
    #[allow(deprecated)] // logging (SEP-2577): servers still send and accept it.
    pub async fn set_log_level(&self, server: &str, level: LogLevel) -> Result<(), McpError> {
        let conn = self.connection(server).await?;
        if !offers(&conn).logging {
            return Err(McpError::NotOffered { server: server.into(), what: "logging" });
        }
        let service = &conn.service;
        let params = rmcp::model::SetLevelRequestParams::new(to_rmcp_level(level));
        self.request(server, "logging/setLevel", &conn, async { service.set_level(params).await }).await
    }

    /// One request other than a tool call: bounded by the server's `call_timeout` and the result cap.
    async fn request<T>(
        &self,
        server: &str,
        what: &str,
        conn: &Connection,
        fut: impl Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<T, McpError> {
        let timeout = self.call_timeout(server);
        match conn.clock.timeout(timeout, capped(&conn.cap, fut)).await {
            Some(Ok(v)) => Ok(v),
            Some(Err(Failure::TooLarge)) => {
                Err(McpError::TooLarge { server: server.into(), what: what.into(), limit: conn.cap.limit })
            }
            Some(Err(Failure::Service(e))) => {
                if let Some(sign_in) = super::error::sign_in_needed(server, &e) {
                    return Err(sign_in);
                }
                let upstream = match &e {
                    rmcp::ServiceError::McpError(data) => Some(Box::new(data.clone())),
                    _ => None,
                };
                Err(McpError::Request { server: server.into(), what: what.into(), reason: service_error(&e), upstream })
            }
            Some(Err(Failure::Timeout)) | None => Err(McpError::Request {
                server: server.into(),
                what: what.into(),
                reason: format!("no answer within {} (call_timeout)", humantime::format_duration(timeout)),
                upstream: None,
            }),
        }
    }
}

/// Whether `uri` could come from the RFC 6570 template `template` (each `{...}` expression
/// matches any run of characters; literal parts must match exactly, in order).
pub fn template_matches(template: &str, uri: &str) -> bool {
    let mut literals = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        literals.push(&rest[..open]);
        match rest[open..].find('}') {
            Some(close) => rest = &rest[open + close + 1..],
            None => return template == uri,
        }
    }
    let tail = rest;
    if literals.is_empty() {
        return template == uri;
    }
    let Some(mut at) = uri.strip_prefix(literals[0]).map(|r| uri.len() - r.len()) else { return false };
    for lit in &literals[1..] {
        if lit.is_empty() {
            continue;
        }
        match uri[at..].find(lit) {
            Some(i) => at += i + lit.len(),
            None => return false,
        }
    }
    uri[at..].ends_with(tail) && uri.len() - at >= tail.len()
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn templates_match_uris_they_could_produce() {
        assert!(template_matches("test://template/{id}/data", "test://template/42/data"));
        assert!(template_matches("file:///{path}", "file:///a/b.txt"));
        assert!(template_matches("demo://resource/{id}", "demo://resource/7"));
        assert!(!template_matches("demo://resource/{id}", "other://resource/7"));
        assert!(!template_matches("test://template/{id}/data", "test://template/42/meta"));
        assert!(template_matches("plain://uri", "plain://uri"));
        assert!(!template_matches("plain://uri", "plain://other"));
    }
}
