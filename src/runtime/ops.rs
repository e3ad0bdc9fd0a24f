//! The ops under the bootstrap JS: the whole surface script code can ever reach (indirectly,
//! through the functions `runtime-js/bootstrap.js` builds on them; the ops themselves are not
//! reachable from scripts). Tool calls, resource and prompt requests, catalog look-ups, captured
//! output, URL parsing, UTF-8 validation, and the registration of the bootstrap's private "settle
//! the default export" function.
//!
//! Per-execution state lives in the `OpState` as [`JobState`], put there when a job starts.

use std::cell::RefCell;
use std::rc::Rc;

use bytes::Bytes;
use deno_core::{OpState, op2, v8};
use serde_json::json;

use super::output::{OutputSink, Stream};
use super::wait::CallsInFlight;
use crate::bridge::LocalBridgeClient;

/// What the ops of one execution share.
pub(crate) struct JobState {
    /// This run's connections to the bridge (none when the caller gave no bridge).
    pub bridge: Option<Rc<LocalBridgeClient>>,
    /// Caps tool calls in flight; the rest queue here.
    pub call_slots: Rc<tokio::sync::Semaphore>,
    /// Calls past the cap and on their way to the bridge (the runner polls while one is alone).
    pub in_flight: Rc<CallsInFlight>,
    pub tool_calls: u64,
    pub output: OutputSink,
    /// `file:///…/workspace/`: cut from stack traces printed by `console` so they read `main.ts:3:9`.
    pub stack_prefix: String,
    /// Bytes of tool-call requests queued or in flight. They are held outside the JS heap (the
    /// script's own copy is garbage once the call is made), so they are counted here instead.
    pub request_bytes: Rc<std::cell::Cell<usize>>,
    /// Most request bytes held at once: the heap limit. Past it the script is stopped with the
    /// memory-limit error, as if the heap had filled up.
    pub max_request_bytes: usize,
    /// Stops the script with the memory-limit error.
    pub out_of_memory: Rc<dyn Fn()>,
    /// `<workspace>/data/` for `store`/`load` and the file API; its workspace and quota also
    /// serve `saveSkill` (`skills/<name>.ts`).
    pub state: super::state::State,
    /// Whether this script may use `state` and `saveSkill` at all (off for result handlers:
    /// the bootstrap's globals are dropped, and the ops refuse as well).
    pub storage: bool,
    /// Skills this script saved, by name.
    pub skills_saved: Vec<String>,
}

/// Gives a tool call's request bytes back when the call ends (or is dropped).
struct RequestBytes(Rc<std::cell::Cell<usize>>, usize);

impl Drop for RequestBytes {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(self.1));
    }
}

/// The bootstrap's `settleDefault(namespace)`, registered once per isolate.
pub(crate) struct SettleFn(pub v8::Global<v8::Function>);

/// The bootstrap's `dropStorage()`, which removes the storage globals (`store`, the `data/` file
/// API, `saveSkill`) from an isolate whose script may not keep anything; registered once per isolate.
pub(crate) struct DropStorageFn(pub v8::Global<v8::Function>);

deno_core::extension!(
    agent_runtime,
    ops = [
        op_agent_call_tool,
        op_agent_bridge_post,
        op_agent_bridge_get,
        op_agent_write,
        op_agent_register,
        op_agent_url_parse,
        op_agent_url_set,
        op_agent_utf8_valid,
        op_agent_stack_prefix,
        op_agent_state_get,
        op_agent_state_put,
        op_agent_state_list,
        op_agent_save_skill,
    ],
);

/// The bootstrap module, embedded in the binary.
pub(crate) const BOOTSTRAP: deno_core::FastStaticString =
    deno_core::ascii_str_include!(concat!(env!("CARGO_MANIFEST_DIR"), "/runtime-js/bootstrap.js"));

/// Result decoding and `MCPToolError`, shared with the generated tree (see `runtime-js/result.js`).
pub(crate) const RESULT: deno_core::FastStaticString =
    deno_core::ascii_str_include!(concat!(env!("CARGO_MANIFEST_DIR"), "/runtime-js/result.js"));

/// Run in every isolate before any script (see `runtime-js/finalize.js`).
pub(crate) const FINALIZE: deno_core::FastStaticString =
    deno_core::ascii_str_include!(concat!(env!("CARGO_MANIFEST_DIR"), "/runtime-js/finalize.js"));

/// The ops, and the bootstrap module unless the isolate is restored from a snapshot that
/// already ran it.
pub(crate) fn extension(with_bootstrap: bool) -> deno_core::Extension {
    const SPECIFIER: &str = "ext:agent_runtime/bootstrap.js";
    let mut ext = agent_runtime::init();
    if with_bootstrap {
        ext.esm_files = std::borrow::Cow::Owned(vec![
            deno_core::ExtensionFileSource::new("ext:agent_runtime/result.js", RESULT),
            deno_core::ExtensionFileSource::new(SPECIFIER, BOOTSTRAP),
        ]);
        ext.esm_entry_point = Some(SPECIFIER);
    }
    ext
}

/// One tool call through the bridge. Answers `"1" + CallToolResult JSON` or `"0" + error JSON`
/// (`{code, status, message, suggestions}`): never an exception, so the bootstrap decides how
/// failures look to scripts.
///
/// The request goes out and its answer comes in on the isolate's own thread, driven inside this
/// op's future (see `bridge::local`); dropping the op (a script stopped by its timeout) drops the
/// connection and with it the call.
#[op2]
#[string]
async fn op_agent_call_tool(state: Rc<RefCell<OpState>>, #[string] body: String) -> String {
    bridge_post(state, "/call", body).await
}

/// The bridge endpoints of MCP's other primitives, by the number the bootstrap passes:
/// `listResources`, `readResource`, `listPrompts`, `getPrompt`.
const PRIMITIVE_PATHS: [&str; 4] = ["/resources", "/resources/read", "/prompts", "/prompts/get"];

/// A resource or prompt request through the bridge (`PRIMITIVE_PATHS[endpoint]`), fenced exactly
/// like a tool call: counted with the script's calls, under the same cap on calls in flight and
/// on the request bytes held, dropped with the script. Answers like [`op_agent_call_tool`].
#[op2]
#[string]
async fn op_agent_bridge_post(state: Rc<RefCell<OpState>>, #[smi] endpoint: u32, #[string] body: String) -> String {
    let Some(path) = PRIMITIVE_PATHS.get(endpoint as usize) else {
        return error_answer("bad_request", None, "no such bridge endpoint", &[]);
    };
    bridge_post(state, path, body).await
}

/// One `POST` through the bridge on behalf of the script: the body of both ops above.
async fn bridge_post(state: Rc<RefCell<OpState>>, path: &'static str, body: String) -> String {
    let (bridge, slots, in_flight, _held) = {
        let mut s = state.borrow_mut();
        let job = s.borrow_mut::<JobState>();
        job.tool_calls += 1;
        let held = job.request_bytes.get().saturating_add(body.len());
        if held > job.max_request_bytes {
            (job.out_of_memory)();
            return error_answer("memory_limit", None, "memory limit exceeded by queued tool calls", &[]);
        }
        job.request_bytes.set(held);
        let guard = RequestBytes(job.request_bytes.clone(), body.len());
        (job.bridge.clone(), job.call_slots.clone(), job.in_flight.clone(), guard)
    };
    let Some(bridge) = bridge else {
        return error_answer("bridge_unreachable", None, "no MCP bridge: tool calls are not available here", &[]);
    };
    // The semaphore is never closed, so acquiring only waits for a free slot.
    let _slot = slots.acquire().await;
    let _counted = in_flight.start();
    match bridge.post_bytes(path, Bytes::from(body)).await {
        Ok(bytes) => ok_answer(&bytes),
        Err(e) => error_answer(e.code_str(), e.status, &e.message, &e.suggestions),
    }
}

/// A bridge answer for the bootstrap: `"1"` + the body (lossily UTF-8).
fn ok_answer(bytes: &[u8]) -> String {
    let mut answer = String::with_capacity(bytes.len() + 1);
    answer.push('1');
    answer.push_str(&String::from_utf8_lossy(bytes));
    answer
}

/// A catalog look-up through the bridge (`searchTools`, `describeTool`): `GET /search?...` or
/// `GET /tools/<server>/<tool>`, answered like [`op_agent_call_tool`] (`"1" + JSON` or
/// `"0" + error JSON`). Any other path is refused here.
#[op2]
#[string]
async fn op_agent_bridge_get(state: Rc<RefCell<OpState>>, #[string] path: String) -> String {
    if !(path.starts_with("/search?") || path.starts_with("/tools/")) {
        return error_answer("bad_request", None, "only catalog look-ups go through here", &[]);
    }
    let bridge = state.borrow().borrow::<JobState>().bridge.clone();
    let Some(bridge) = bridge else {
        return error_answer("bridge_unreachable", None, "no MCP bridge: the tool catalog is not available here", &[]);
    };
    match bridge.get_bytes(&path).await {
        Ok(bytes) => ok_answer(&bytes),
        Err(e) => error_answer(e.code_str(), e.status, &e.message, &e.suggestions),
    }
}

fn error_answer(code: &str, status: Option<u16>, message: &str, suggestions: &[String]) -> String {
    let body = json!({ "code": code, "status": status, "message": message, "suggestions": suggestions });
    format!("0{body}")
}

/// Console output: stream 1 is stdout, anything else stderr.
#[op2(fast)]
fn op_agent_write(state: &mut OpState, #[smi] stream: u32, #[string] text: &str) {
    let stream = if stream == 1 { Stream::Stdout } else { Stream::Stderr };
    state.borrow_mut::<JobState>().output.write(stream, text);
}

#[op2(fast)]
fn op_agent_register(
    scope: &mut v8::PinScope,
    state: &mut OpState,
    settle: v8::Local<v8::Function>,
    drop_storage: v8::Local<v8::Function>,
) {
    state.put(SettleFn(v8::Global::new(scope, settle)));
    state.put(DropStorageFn(v8::Global::new(scope, drop_storage)));
}

#[op2]
#[string]
fn op_agent_stack_prefix(state: &mut OpState) -> String {
    state.try_borrow::<JobState>().map(|j| j.stack_prefix.clone()).unwrap_or_default()
}

#[op2(fast)]
fn op_agent_utf8_valid(#[buffer] bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok()
}

/// The WHATWG components of a URL, in the order the bootstrap's `URL` class reads them.
fn url_parts(u: &deno_core::url::Url) -> Vec<String> {
    use deno_core::url::quirks;
    vec![
        quirks::href(u).to_string(),
        quirks::origin(u),
        quirks::protocol(u).to_string(),
        quirks::username(u).to_string(),
        quirks::password(u).to_string(),
        quirks::host(u).to_string(),
        quirks::hostname(u).to_string(),
        quirks::port(u).to_string(),
        quirks::pathname(u).to_string(),
        quirks::search(u).to_string(),
        quirks::hash(u).to_string(),
    ]
}

/// `new URL(url, base)`: the components, or null when it does not parse.
#[op2]
#[serde]
fn op_agent_url_parse(#[string] url: String, #[string] base: Option<String>) -> Option<Vec<String>> {
    use deno_core::url::Url;
    let parsed = match base {
        Some(base) => Url::parse(&base).and_then(|b| b.join(&url)),
        None => Url::parse(&url),
    };
    parsed.ok().map(|u| url_parts(&u))
}

/// A URL component setter: the new components, or null when the new href does not parse
/// (the other setters ignore invalid values, as the URL standard says).
#[op2]
#[serde]
fn op_agent_url_set(#[string] href: String, #[string] name: String, #[string] value: String) -> Option<Vec<String>> {
    use deno_core::url::{Url, quirks};
    let mut u = Url::parse(&href).ok()?;
    match name.as_str() {
        "href" => {
            quirks::set_href(&mut u, &value).ok()?;
        }
        "protocol" => {
            let _ = quirks::set_protocol(&mut u, &value);
        }
        "username" => {
            let _ = quirks::set_username(&mut u, &value);
        }
        "password" => {
            let _ = quirks::set_password(&mut u, &value);
        }
        "host" => {
            let _ = quirks::set_host(&mut u, &value);
        }
        "hostname" => {
            let _ = quirks::set_hostname(&mut u, &value);
        }
        "port" => {
            let _ = quirks::set_port(&mut u, &value);
        }
        "pathname" => quirks::set_pathname(&mut u, &value),
        "search" => quirks::set_search(&mut u, &value),
        "hash" => quirks::set_hash(&mut u, &value),
        _ => return None,
    }
    Some(url_parts(&u))
}

// State and skills. Answers are `"1" + payload`, `"2"` (nothing there) or `"0" + message`: the
// bootstrap turns them into values or errors whose stacks start at the script's call. A script
// without storage (a result handler) is refused by every one of them.

/// What the storage ops answer a script that may not keep anything.
const NO_STORAGE: &str = "0this script may not keep state or save skills (result handlers have no storage)";

fn answer(r: Result<Option<String>, String>) -> String {
    match r {
        Ok(Some(text)) => {
            let mut out = String::with_capacity(text.len() + 1);
            out.push('1');
            out.push_str(&text);
            out
        }
        Ok(None) => "2".to_string(),
        Err(message) => format!("0{message}"),
    }
}

/// `load(key)` (kind 0) or `readText(path)` (kind 1).
#[op2]
#[string]
fn op_agent_state_get(state: &mut OpState, #[smi] kind: u32, #[string] name: String) -> String {
    let job = state.borrow::<JobState>();
    if !job.storage {
        return NO_STORAGE.into();
    }
    answer(match kind {
        0 => job.state.load(&name),
        _ => job.state.read_text(&name).map(Some),
    })
}

/// `store(key, json)` (kind 0; no text removes the key) or `writeText(path, text)` (kind 1).
#[op2]
#[string]
fn op_agent_state_put(
    state: &mut OpState,
    #[smi] kind: u32,
    #[string] name: String,
    #[string] text: Option<String>,
) -> String {
    let job = state.borrow::<JobState>();
    if !job.storage {
        return NO_STORAGE.into();
    }
    answer(match kind {
        0 => job.state.store(&name, text.as_deref()).map(|()| None),
        _ => job.state.write(&name, text.unwrap_or_default().as_bytes()).map(|()| None),
    })
}

/// `list(dir)`: a JSON array of names.
#[op2]
#[string]
fn op_agent_state_list(state: &mut OpState, #[string] dir: String) -> String {
    let job = state.borrow::<JobState>();
    if !job.storage {
        return NO_STORAGE.into();
    }
    answer(job.state.list(&dir).map(|names| Some(serde_json::Value::from(names).to_string())))
}

/// `saveSkill(name, source, description)`: the skill's path relative to the workspace.
#[op2]
#[string]
fn op_agent_save_skill(
    state: &mut OpState,
    #[string] name: String,
    #[string] source: String,
    #[string] description: String,
) -> String {
    let job = state.borrow_mut::<JobState>();
    if !job.storage {
        return NO_STORAGE.into();
    }
    let saved = super::skill::save_skill(&job.state, &name, &source, &description);
    if saved.is_ok() && !job.skills_saved.contains(&name) {
        job.skills_saved.push(name.clone());
    }
    answer(saved.map(|_| Some(format!("skills/{name}.ts"))))
}
