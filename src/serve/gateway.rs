//! MCP's other primitives through serve: every enabled upstream server's resources, resource
//! templates, prompts and completions under the naming mode ([`super::listing`]), resource
//! subscriptions and the logging level per downstream session, and the upstream notifications
//! that follow from them (`resources/updated` to the sessions that subscribed, only those; log
//! messages to the sessions that set a level, at that level; `list_changed` to every session).
//!
//! Log messages belong to an upstream connection, which every session shares, not to a session:
//! a session hears none until it sends `logging/setLevel`, then those at its level or above;
//! each upstream server is set to the most verbose level a live session asked for.

#![allow(deprecated)] // logging/setLevel and resources/subscribe (SEP-2577): clients still send them.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, LoggingMessageNotificationParam, PaginatedRequestParams, Prompt,
    ReadResourceRequestParams, ReadResourceResponse, Reference, ResourceUpdatedNotificationParam, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::{ErrorData, Peer, RoleServer};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::Server;
use super::listing::{Clash, Listing, Upstream as Lists};
use crate::config::{LogLevel, ServeNames};
use crate::mcp::McpError;
use crate::mcp::primitives::{CompletionRef, Offers, Resources};

/// Items per page of a list (`nextCursor` beyond).
pub const PAGE: usize = 1000;

/// Resources one downstream session may subscribe to at once: a remote client cannot make serve
/// (and the upstream servers) hold an endless set of subscriptions for it.
pub const MAX_SUBSCRIPTIONS: usize = 256;

/// One downstream session's own state.
#[derive(Default)]
pub(super) struct SessionState {
    pub peer: Option<Peer<RoleServer>>,
    /// The level it asked for (`logging/setLevel`); `None`: it hears no log message.
    pub level: Option<LogLevel>,
    /// (server, upstream URI) → the URI the session subscribed with.
    pub subscriptions: BTreeMap<(String, String), String>,
}

/// What one server that is up offers, with its resource and prompt lists (`None`: not offered,
/// or not listed).
struct Offered {
    server: String,
    offers: Offers,
    resources: Option<Arc<Resources>>,
    prompts: Option<Arc<Vec<Prompt>>>,
}

/// The lists a listing was built from, by pointer (a list is a new `Arc` when it changed).
pub(super) type ListingKey = Vec<(String, usize, usize)>;

/// `items` from `cursor` (an offset serve gave out), at most [`PAGE`] of them, and the cursor
/// of the next page.
fn page<'a, T>(
    items: &'a [T],
    request: Option<&PaginatedRequestParams>,
) -> Result<(&'a [T], Option<String>), ErrorData> {
    let start = match request.and_then(|r| r.cursor.as_deref()) {
        None => 0,
        Some(c) => match c.parse::<usize>() {
            Ok(n) if n <= items.len() => n,
            _ => return Err(ErrorData::invalid_params(format!("invalid cursor `{}`", c.escape_debug()), None)),
        },
    };
    let end = (start + PAGE).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((&items[start..end], next))
}

/// A list result `{key: page, nextCursor?}` as rmcp's type.
pub(super) fn list_result<T: Serialize, R: serde::de::DeserializeOwned>(
    key: &str,
    items: &[T],
    request: Option<&PaginatedRequestParams>,
) -> Result<R, ErrorData> {
    let (items, next) = page(items, request)?;
    let mut v = Map::new();
    v.insert(key.into(), serde_json::to_value(items).map_err(internal)?);
    if let Some(n) = next {
        v.insert("nextCursor".into(), json!(n));
    }
    serde_json::from_value(Value::Object(v)).map_err(internal)
}

/// A list a server failed to give: left out of the listing, with a warning.
fn left_out_on_error<T>(server: &str, what: &str, listed: Result<T, McpError>) -> Option<T> {
    listed.map_err(|e| tracing::warn!("`{server}`'s {what} are left out: {e}")).ok()
}

fn internal(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
}

fn level_of(level: rmcp::model::LoggingLevel) -> Option<LogLevel> {
    serde_json::to_value(level).ok().and_then(|v| serde_json::from_value(v).ok())
}

impl Server {
    pub(super) fn session_id(&self) -> u64 {
        self.session.as_ref().map(|s| s.id).unwrap_or(0)
    }

    /// Runs `f` on this session's state (made when missing, with `peer`).
    fn with_session<T>(&self, peer: &Peer<RoleServer>, f: impl FnOnce(&mut SessionState) -> T) -> Option<T> {
        let id = self.session_id();
        let mut sessions = self.inner.sessions.lock().ok()?;
        let state = sessions.entry(id).or_default();
        if state.peer.is_none() {
            state.peer = Some(peer.clone());
        }
        Some(f(state))
    }

    /// The peers of every live session.
    pub(super) fn peers(&self) -> Vec<(u64, Peer<RoleServer>)> {
        let sessions = self.inner.sessions.lock();
        sessions.map(|s| s.iter().filter_map(|(id, st)| Some((*id, st.peer.clone()?))).collect()).unwrap_or_default()
    }

    /// What each server that is up offers, with its resource and prompt lists.
    async fn upstream_lists(&self) -> Vec<Offered> {
        let (up, _) = self.up_servers().await;
        let manager = &self.inner.manager;
        let mut out = Vec::new();
        for server in up {
            let Ok(offers) = manager.offers(&server).await else { continue };
            let resources = match offers.resources {
                true => left_out_on_error(&server, "resources", manager.resources(&server).await),
                false => None,
            };
            let prompts = match offers.prompts {
                true => left_out_on_error(&server, "prompts", manager.prompts(&server).await),
                false => None,
            };
            out.push(Offered { server, offers, resources, prompts });
        }
        out
    }

    /// The current listing (built again only when an upstream list changed).
    pub(super) async fn listing(&self) -> Arc<Listing> {
        let lists = self.upstream_lists().await;
        let ptr = |a: Option<usize>| a.unwrap_or(0);
        let key: ListingKey = lists
            .iter()
            .map(|o| {
                (
                    o.server.clone(),
                    ptr(o.resources.as_ref().map(|r| Arc::as_ptr(r) as usize)),
                    ptr(o.prompts.as_ref().map(|p| Arc::as_ptr(p) as usize)),
                )
            })
            .collect();
        if let Ok(cache) = self.inner.listing.lock()
            && let Some((k, l)) = cache.as_ref()
            && *k == key
        {
            return l.clone();
        }
        let upstream: Vec<Lists<'_>> = lists
            .iter()
            .map(|o| Lists {
                server: &o.server,
                resources: o.resources.as_deref(),
                prompts: o.prompts.as_ref().map(|p| p.as_slice()),
            })
            .collect();
        let listing = Arc::new(Listing::build(self.inner.names_mode, &upstream));
        for c in &listing.clashes {
            tracing::warn!("--names bare: {c}; the first server in name order keeps it");
        }
        if let Ok(mut cache) = self.inner.listing.lock() {
            *cache = Some((key, listing.clone()));
        }
        listing
    }

    /// Every name two servers share in `bare` mode (tools, prompts, resource URIs and
    /// templates) among the servers up now (after waiting for them as a list does).
    pub async fn clashes(&self) -> Vec<Clash> {
        let (names, _) = self.proxy_names().await;
        let mut out = names.clashes.clone();
        out.extend(self.listing().await.clashes.iter().cloned());
        out
    }

    /// What serve says about itself in `initialize`: the capabilities of the servers up
    /// (waiting for them as a list does). In `bare` mode with one enabled server, that
    /// server's own name, version, instructions and capabilities.
    pub(super) async fn server_config(&self) -> ServerConfig {
        let lists = self.upstream_lists().await;
        let manager = &self.inner.manager;
        let mut caps = json!({"tools": {"listChanged": true}});
        let mut any = Offers::default();
        for o in lists.iter().map(|l| &l.offers) {
            any.resources |= o.resources;
            any.subscribe |= o.subscribe;
            any.prompts |= o.prompts;
            any.completions |= o.completions;
            any.logging |= o.logging;
        }
        if any.resources {
            caps["resources"] = json!({"subscribe": any.subscribe, "listChanged": true});
        }
        if any.prompts {
            caps["prompts"] = json!({"listChanged": true});
        }
        if any.completions {
            caps["completions"] = json!({});
        }
        if any.logging {
            caps["logging"] = json!({});
        }
        let mut own = (
            rmcp::model::Implementation::new("agent", env!("CARGO_PKG_VERSION")),
            Some(super::INSTRUCTIONS.to_string()),
        );
        let single = manager.server_names().len() == 1 && lists.len() == 1;
        if self.inner.names_mode == ServeNames::Bare
            && single
            && let Ok(Some(info)) = manager.server_info(&lists[0].server).await
        {
            // Stand in for the one server: its capabilities for what it offers, its identity.
            let theirs = serde_json::to_value(&info.capabilities).unwrap_or_default();
            for key in ["resources", "prompts", "completions", "logging"] {
                match theirs.get(key) {
                    Some(v) => caps[key] = v.clone(),
                    None => {
                        if let Some(m) = caps.as_object_mut() {
                            m.remove(key);
                        }
                    }
                }
            }
            if let Some(tools) = theirs.get("tools")
                && !self.inner.expose.code
                && !self.inner.expose.search
            {
                caps["tools"] = tools.clone();
            }
            if let Some(i) = info.server_info {
                own.0 = i;
            }
            own.1 = info.instructions;
        }
        let caps: ServerCapabilities = serde_json::from_value(caps).unwrap_or_default();
        let mut config = ServerConfig::new(caps).with_server_info(own.0);
        if let Some(i) = own.1 {
            config = config.with_instructions(i);
        }
        if let Ok(mut last) = self.inner.last_info.lock() {
            *last = Some(config.clone());
        }
        config
    }

    /// One line for a failure of the manager, as the JSON-RPC error a client expects.
    fn error_data(&self, e: McpError) -> ErrorData {
        // The server's own error answer goes back as it sent it (its code, words and data).
        if let McpError::Request { upstream: Some(data), .. } | McpError::UnknownResource { upstream: Some(data), .. } =
            e
        {
            return *data;
        }
        let text = self.inner.scrubber.text(&e.to_string()).into_owned();
        match e {
            McpError::UnknownResource { uri, .. } => ErrorData::resource_not_found(text, Some(json!({"uri": uri}))),
            McpError::UnknownPrompt { .. } | McpError::InvalidArguments { .. } | McpError::NotOffered { .. } => {
                ErrorData::invalid_params(text, None)
            }
            _ => ErrorData::internal_error(text, None),
        }
    }

    fn not_found(&self, uri: &str) -> ErrorData {
        ErrorData::resource_not_found(
            format!("unknown resource `{}`: no enabled server lists it", uri.escape_debug()),
            Some(json!({"uri": uri})),
        )
    }

    pub(super) async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
    ) -> Result<ListResourcesResult, ErrorData> {
        list_result("resources", &self.listing().await.resources, request.as_ref())
    }

    pub(super) async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        list_result("resourceTemplates", &self.listing().await.templates, request.as_ref())
    }

    pub(super) async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
    ) -> Result<ListPromptsResult, ErrorData> {
        list_result("prompts", &self.listing().await.prompts, request.as_ref())
    }

    /// The server and upstream URI behind a downstream URI (only ever an enabled server).
    async fn route(&self, uri: &str) -> Result<(String, String), ErrorData> {
        let listing = self.listing().await;
        let enabled = self.inner.manager.server_names();
        match listing.route(uri, &enabled) {
            Some((server, upstream)) => Ok((server, upstream.to_string())),
            None => Err(self.not_found(uri)),
        }
    }

    pub(super) async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let (server, upstream) = self.route(&request.uri).await?;
        let result = self.inner.manager.read_resource(&server, &upstream).await.map_err(|e| self.error_data(e))?;
        if upstream == request.uri {
            return Ok(ReadResourceResponse::Complete(result));
        }
        // The contents name the URI the client asked for.
        let mut v = serde_json::to_value(&result).map_err(internal)?;
        if let Some(contents) = v.get_mut("contents").and_then(Value::as_array_mut) {
            for c in contents {
                if c.get("uri").and_then(Value::as_str) == Some(upstream.as_str()) {
                    c["uri"] = json!(request.uri);
                }
            }
        }
        Ok(ReadResourceResponse::Complete(serde_json::from_value(v).map_err(internal)?))
    }

    pub(super) async fn get_prompt(&self, request: GetPromptRequestParams) -> Result<GetPromptResponse, ErrorData> {
        let listing = self.listing().await;
        let Some((server, name)) = listing.prompt(&request.name) else {
            let hint = crate::util::suggest::did_you_mean(&crate::util::suggest::suggest(
                &request.name,
                listing.prompts.iter().map(|p| p.name.as_str()),
            ));
            return Err(ErrorData::invalid_params(
                format!("unknown prompt `{}`{hint}", request.name.escape_debug()),
                None,
            ));
        };
        let args = request.arguments.unwrap_or_default();
        let got = self.inner.manager.get_prompt(server, name, args).await.map_err(|e| self.error_data(e))?;
        Ok(GetPromptResponse::Complete(got))
    }

    pub(super) async fn complete(&self, request: CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
        let listing = self.listing().await;
        let lists = self.upstream_lists().await;
        let completing: Vec<&str> = lists.iter().filter(|l| l.offers.completions).map(|l| l.server.as_str()).collect();
        let only = |name: &str| match completing.as_slice() {
            [one] => Some((one.to_string(), name.to_string())),
            _ => None,
        };
        let (server, reference) = match &request.r#ref {
            Reference::Prompt(p) => {
                let found =
                    listing.prompt(&p.name).map(|(s, n)| (s.to_string(), n.to_string())).or_else(|| only(&p.name));
                let Some((server, name)) = found else {
                    return Err(ErrorData::invalid_params(format!("unknown prompt `{}`", p.name.escape_debug()), None));
                };
                (server, CompletionRef::Prompt(name))
            }
            Reference::Resource(r) => {
                let found =
                    listing.template(&r.uri).map(|(s, t)| (s.to_string(), t.to_string())).or_else(|| only(&r.uri));
                let Some((server, template)) = found else {
                    return Err(ErrorData::invalid_params(
                        format!("unknown resource template `{}`", r.uri.escape_debug()),
                        None,
                    ));
                };
                (server, CompletionRef::Resource(template))
            }
            _ => return Err(ErrorData::invalid_params("unknown kind of completion reference", None)),
        };
        let context: Map<String, Value> = request
            .context
            .as_ref()
            .and_then(|c| serde_json::to_value(c).ok())
            .and_then(|v| v.get("arguments").and_then(Value::as_object).cloned())
            .unwrap_or_default();
        let info = self
            .inner
            .manager
            .complete(&server, &reference, &request.argument.name, &request.argument.value, context)
            .await
            .map_err(|e| self.error_data(e))?;
        serde_json::from_value(json!({ "completion": info })).map_err(internal)
    }

    pub(super) async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        peer: &Peer<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (server, upstream) = self.route(&request.uri).await?;
        let key = (server.clone(), upstream.clone());
        // One change of the upstream subscriptions at a time: the check and the request together.
        let _turn = self.inner.subscribing.lock().await;
        let full = self
            .with_session(peer, |s| !s.subscriptions.contains_key(&key) && s.subscriptions.len() >= MAX_SUBSCRIPTIONS)
            .unwrap_or(false);
        if full {
            return Err(ErrorData::invalid_request(
                format!(
                    "this session holds {MAX_SUBSCRIPTIONS} resource subscriptions, the most it may; unsubscribe from one first"
                ),
                None,
            ));
        }
        let held = self.held_elsewhere(&key);
        if !held {
            self.inner.manager.subscribe(&server, &upstream).await.map_err(|e| self.error_data(e))?;
        }
        self.with_session(peer, |s| s.subscriptions.insert(key, request.uri.clone()));
        Ok(())
    }

    pub(super) async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        peer: &Peer<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (server, upstream) = self.route(&request.uri).await?;
        let key = (server.clone(), upstream.clone());
        let _turn = self.inner.subscribing.lock().await;
        let had = self.with_session(peer, |s| s.subscriptions.remove(&key)).flatten().is_some();
        if had && !self.held_elsewhere(&key) {
            self.inner.manager.unsubscribe(&server, &upstream).await.map_err(|e| self.error_data(e))?;
        }
        Ok(())
    }

    /// Whether a session other than this one subscribed to `key`.
    fn held_elsewhere(&self, key: &(String, String)) -> bool {
        let id = self.session_id();
        let sessions = self.inner.sessions.lock();
        sessions.map(|s| s.iter().any(|(i, st)| *i != id && st.subscriptions.contains_key(key))).unwrap_or(false)
    }

    pub(super) async fn set_level(
        &self,
        request: SetLevelRequestParams,
        peer: &Peer<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = level_of(request.level).ok_or_else(|| ErrorData::invalid_params("unknown logging level", None))?;
        self.with_session(peer, |s| s.level = Some(level));
        self.apply_upstream_level(None).await;
        Ok(())
    }

    /// The most verbose level a live session asked for.
    pub(super) fn wanted_level(&self) -> Option<LogLevel> {
        let sessions = self.inner.sessions.lock().ok()?;
        sessions.values().filter_map(|s| s.level).min()
    }

    /// Sets [`Self::wanted_level`] on `only` (when it offers logging), else on every server up.
    pub(super) async fn apply_upstream_level(&self, only: Option<&str>) {
        let Some(level) = self.wanted_level() else { return };
        let manager = &self.inner.manager;
        let servers = match only {
            Some(s) => vec![s.to_string()],
            None => self.up_servers().await.0,
        };
        for server in servers {
            if !manager.offers(&server).await.is_ok_and(|o| o.logging) {
                continue;
            }
            if let Err(e) = manager.set_log_level(&server, level).await {
                tracing::warn!("cannot set the log level of `{server}`: {e}");
            }
        }
    }

    /// An upstream log message, to each session that asked for its level.
    pub(super) async fn forward_log(&self, server: &str, level: &str, logger: Option<String>, data: Value) {
        let Ok(at) = serde_json::from_value::<LogLevel>(json!(level)) else { return };
        let logger = match self.inner.names_mode {
            ServeNames::Bare => logger,
            ServeNames::Prefixed => Some(match logger {
                Some(l) => format!("{server}/{l}"),
                None => server.to_string(),
            }),
        };
        let Ok(param) = serde_json::from_value::<LoggingMessageNotificationParam>(
            json!({"level": level, "logger": logger, "data": data}),
        ) else {
            return;
        };
        let peers: Vec<Peer<RoleServer>> = {
            let Ok(sessions) = self.inner.sessions.lock() else { return };
            sessions.values().filter(|s| s.level.is_some_and(|l| at >= l)).filter_map(|s| s.peer.clone()).collect()
        };
        for peer in peers {
            let _ = peer.notify_logging_message(param.clone()).await;
        }
    }

    /// An upstream `resources/updated`, to the sessions that subscribed to it (with the URI
    /// each subscribed with).
    pub(super) async fn forward_updated(&self, server: &str, uri: &str) {
        let key = (server.to_string(), uri.to_string());
        let targets: Vec<(Peer<RoleServer>, String)> = {
            let Ok(sessions) = self.inner.sessions.lock() else { return };
            sessions.values().filter_map(|s| Some((s.peer.clone()?, s.subscriptions.get(&key)?.clone()))).collect()
        };
        for (peer, uri) in targets {
            let _ = peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)).await;
        }
    }

    /// Tells every session that the resource (or prompt) list changed.
    pub(super) async fn notify_list_changed(&self, prompts: bool) {
        for (_, peer) in self.peers() {
            let _ = if prompts {
                peer.notify_prompt_list_changed().await
            } else {
                peer.notify_resource_list_changed().await
            };
        }
    }
}

/// Upstream subscriptions nobody holds any more once a session ended: (server, URI) pairs.
pub(super) fn orphaned(ended: &SessionState, others: &BTreeMap<u64, SessionState>) -> Vec<(String, String)> {
    ended.subscriptions.keys().filter(|k| !others.values().any(|s| s.subscriptions.contains_key(*k))).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_the_cursor_and_refuse_a_bad_one() {
        let items: Vec<u32> = (0..(PAGE as u32 * 2 + 5)).collect();
        let (first, next) = page(&items, None).unwrap();
        assert_eq!((first.len(), next.as_deref()), (PAGE, Some("1000")));
        let req = |c: &str| PaginatedRequestParams::default().with_cursor(Some(c.to_string()));
        let (second, next) = page(&items, Some(&req("1000"))).unwrap();
        assert_eq!((second[0], next.as_deref()), (1000, Some("2000")));
        let (last, next) = page(&items, Some(&req("2000"))).unwrap();
        assert_eq!((last.len(), next), (5, None));
        for bad in ["x", "-1", "999999"] {
            assert_eq!(page(&items, Some(&req(bad))).unwrap_err().code, rmcp::model::ErrorCode::INVALID_PARAMS);
        }
        let v: ListPromptsResult = list_result::<u32, _>("prompts", &[], None).unwrap();
        assert!(v.prompts.is_empty() && v.next_cursor.is_none());
    }
}
