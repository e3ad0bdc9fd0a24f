//! Result handlers: a small jq or JavaScript program that runs over one tool result on our side
//! of the connection, so only its output goes back (docs/handlers.md has the contract).
//!
//! One component for every caller (`agent mcp call --jq/--js/--handler`, direct mode's
//! `result_handler` argument, and `agent mcp serve`), and one entry point for a call with a
//! handler, [`call`]: the handler taken out of the arguments ([`ARG`]) or given, parsed
//! ([`Handler::parse`]) and compiled ([`HandlerRunner::compile`]) **before** the tool is called,
//! the call through the manager, and the handler run over the `CallToolResult` afterwards
//! ([`HandlerRunner::apply`]). A failure after the call says that the tool did run, with the
//! handler's error and a preview of the raw result.
//!
//! jq runs through the `jaq` crates in a worker process ([`jq`]); JavaScript runs in a fresh
//! isolate of the code-mode runtime with the code-mode limits, with `tool_output` and `result`
//! in scope, and reaches other tools only when `mcp.result_handlers.tool_calls` allows it.

pub mod jq;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use crate::bridge::BridgeServer;
use crate::config::Config;
use crate::mcp::{CallContext, McpError, McpManager};
use crate::runtime::{ExecRequest, Executor, Limits, Script};

/// How much of the raw result an error after the call quotes.
pub const PREVIEW_CHARS: usize = 300;
/// What `callMCPTool` says in a handler when tool calls are off.
pub const TOOL_CALLS_OFF: &str = "tool calls are off in result handlers (mcp.result_handlers.tool_calls)";

/// The argument direct mode and `serve` add to every tool for a result handler.
pub const ARG: &str = "result_handler";

/// The one explanation of [`ARG`] for a system prompt (direct mode adds it when handlers are on).
pub const PROMPT: &str = "Every mcp_ tool takes an optional `result_handler`: a JavaScript expression or \
function body over `tool_output` (the parsed result) and `result` (the raw MCP result), or {\"language\": \"jq\", \
\"script\": FILTER}. It runs on the tool's result and only its value comes back, so use it to keep large results \
small (counts, fields, a filtered list). A handler that does not parse fails before the tool is called.\n";

/// The schema of [`ARG`] where a system prompt explains it ([`PROMPT`]): short on purpose.
pub fn arg_schema_short() -> Value {
    json!({"type": ["string", "object"], "description": "Optional; see the system prompt"})
}

/// The schema of [`ARG`] with the contract in its description (for clients with no system
/// prompt of ours, such as `serve`'s).
pub fn arg_schema() -> Value {
    json!({
        "type": ["string", "object"],
        "description": "Optional result handler: a JavaScript expression or function body over `tool_output` \
                        (the parsed result) and `result` (the raw MCP result), or {\"language\": \"jq\", \"script\": \
                        FILTER}. Only its value comes back. A handler that does not parse fails before the call."
    })
}

/// Where the handler of one call comes from.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// No handler: the arguments go to the tool as they are.
    None,
    /// The [`ARG`] argument, taken out of the arguments (direct mode, `serve`).
    Argument,
    /// One compiled before (`agent mcp call --jq/--js/--handler`).
    Compiled(&'a Compiled),
}

/// How a call with a handler ended well.
#[derive(Debug)]
pub enum Called {
    /// The tool's result as it came: no handler ran, or the tool reported an error.
    Result(CallToolResult),
    /// The handler's value.
    Value(Value),
}

impl Called {
    /// As the result that goes back to the caller (a value shaped by [`value_result`]).
    pub fn into_result(self) -> CallToolResult {
        match self {
            Called::Result(r) => r,
            Called::Value(v) => value_result(v),
        }
    }
}

/// How a call with a handler failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The handler did not parse or compile: the tool was not called.
    #[error("{0} (the tool was not called)")]
    Handler(String),
    /// The call itself failed.
    #[error(transparent)]
    Mcp(McpError),
    /// The handler failed after the tool ran (the message says so and previews the result).
    #[error("{0}")]
    After(String),
}

impl CallError {
    /// As an error result (its text the one-line message).
    pub fn into_result(self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(self.to_string())])
    }
}

/// Calls `server.tool` through `manager` with its handler: taken out of `args` or given
/// (`source`), compiled before the call, run over the result after it. Without a `runner`
/// nothing is taken out and no handler runs.
pub async fn call(
    runner: Option<&HandlerRunner>,
    manager: &McpManager,
    server: &str,
    tool: &str,
    mut args: Map<String, Value>,
    source: Source<'_>,
    cx: &CallContext,
) -> Result<Called, CallError> {
    let mut taken = None;
    let handler = match (runner, source) {
        (Some(runner), Source::Argument) => match args.remove(ARG).filter(|v| !v.is_null()) {
            Some(spec) => {
                let compiled = Handler::parse(&spec).and_then(|h| runner.compile(&h)).map_err(CallError::Handler)?;
                Some(&*taken.insert(compiled))
            }
            None => None,
        },
        (Some(_), Source::Compiled(c)) => Some(c),
        _ => None,
    };
    let result = manager.call_tool_with(server, tool, args, cx).await.map_err(CallError::Mcp)?;
    match (runner, handler) {
        (Some(runner), Some(c)) => match runner.apply(c, server, tool, &result).await {
            Ok(Some(v)) => Ok(Called::Value(v)),
            Ok(None) => Ok(Called::Result(result)),
            Err(e) => Err(CallError::After(e)),
        },
        _ => Ok(Called::Result(result)),
    }
}

/// The language of a handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    JavaScript,
    Jq,
}

/// A handler as the caller wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    pub language: Language,
    pub script: String,
}

impl Handler {
    /// `{"language": "javascript"|"jq", "script": "..."}`, or a bare string (JavaScript).
    pub fn parse(v: &Value) -> Result<Handler, String> {
        let handler = match v {
            Value::String(s) => Handler { language: Language::JavaScript, script: s.clone() },
            Value::Object(m) => {
                if let Some(k) = m.keys().find(|k| *k != "language" && *k != "script") {
                    return Err(format!("result handler: unknown key `{k}` (expected `language` and `script`)"));
                }
                let language = match m.get("language") {
                    None => Language::JavaScript,
                    Some(Value::String(l)) => Language::from_name(l)?,
                    Some(other) => {
                        return Err(format!(
                            "result handler: `language` must be a string, got {}",
                            crate::util::json::json_kind(other)
                        ));
                    }
                };
                let script = match m.get("script") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => {
                        return Err(format!(
                            "result handler: `script` must be a string, got {}",
                            crate::util::json::json_kind(other)
                        ));
                    }
                    None => return Err("result handler: missing `script`".into()),
                };
                Handler { language, script }
            }
            other => {
                return Err(format!(
                    "result handler: expected a string (JavaScript) or {{\"language\", \"script\"}}, got {}",
                    crate::util::json::json_kind(other)
                ));
            }
        };
        if handler.script.trim().is_empty() {
            return Err("result handler: the script is empty".into());
        }
        Ok(handler)
    }
}

impl Language {
    /// `javascript` (also `js`) or `jq`.
    pub fn from_name(name: &str) -> Result<Language, String> {
        match name.to_ascii_lowercase().as_str() {
            "javascript" | "js" => Ok(Language::JavaScript),
            "jq" => Ok(Language::Jq),
            _ => Err(format!(
                "result handler: unknown language `{name}` (expected `javascript` or `jq`){}",
                crate::util::suggest::did_you_mean(&crate::util::suggest::suggest(name, ["javascript", "jq"]))
            )),
        }
    }
}

/// A handler that parsed and compiled (the only kind [`HandlerRunner::apply`] takes).
#[derive(Debug, Clone)]
pub struct Compiled {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Jq(String),
    /// The handler's function body (its text, maybe wrapped in `return (…)`), and the lines
    /// before the handler's first line in the module it runs as.
    Js(String, usize),
}

/// Runs handlers; one per command (or per `serve` process), shared by its calls.
pub struct HandlerRunner {
    limits: Limits,
    workspace: PathBuf,
    tool_calls: bool,
    isolation: jq::Isolation,
    manager: Option<Arc<McpManager>>,
    /// Made on the first JavaScript handler (the isolate thread costs nothing before).
    executor: OnceLock<Executor>,
    bridge: tokio::sync::OnceCell<BridgeServer>,
}

impl HandlerRunner {
    /// The configured runner: code-mode limits and workspace, `mcp.result_handlers.tool_calls`
    /// (through `manager`, when given), jq in a worker process of this binary.
    pub fn from_config(config: &Config, manager: Option<Arc<McpManager>>) -> anyhow::Result<HandlerRunner> {
        let cc = &config.mcp.code_execution;
        let workspace = std::path::absolute(&cc.workspace_dir)
            .map_err(|e| anyhow::anyhow!("invalid workspace_dir {}: {e}", cc.workspace_dir.display()))?;
        let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("cannot find the agent binary: {e}"))?;
        Ok(HandlerRunner {
            // A handler keeps nothing: no state, no files, no skills (docs/handlers.md).
            limits: Limits { storage: false, ..Limits::from_config(cc) },
            workspace,
            tool_calls: config.mcp.result_handlers.tool_calls,
            isolation: jq::Isolation::Process(exe),
            manager,
            executor: OnceLock::new(),
            bridge: tokio::sync::OnceCell::new(),
        })
    }

    /// Where jq filters run (tests and benchmarks use [`jq::Isolation::Thread`] or another binary).
    pub fn with_isolation(mut self, isolation: jq::Isolation) -> HandlerRunner {
        self.isolation = isolation;
        self
    }

    /// Checks `handler` without running anything: jq parsed and compiled, JavaScript parsed (as
    /// an expression, else as a function body). The error is one line.
    pub fn compile(&self, handler: &Handler) -> Result<Compiled, String> {
        match handler.language {
            Language::Jq => {
                jq::check(&handler.script)?;
                Ok(Compiled { kind: Kind::Jq(handler.script.clone()) })
            }
            Language::JavaScript => {
                if handler.script.len() > jq::MAX_FILTER_BYTES {
                    return Err(format!(
                        "result handler: the script is longer than {} KiB",
                        jq::MAX_FILTER_BYTES >> 10
                    ));
                }
                let as_expr = format!("return (\n{}\n);", handler.script);
                if crate::runtime::check_syntax("handler.ts", &js_module(&as_expr, "null", "null")).is_ok() {
                    return Ok(Compiled { kind: Kind::Js(as_expr, 2) });
                }
                crate::runtime::check_syntax("handler.ts", &js_module(&handler.script, "null", "null"))
                    .map_err(|e| format!("result handler (JavaScript) does not parse: {}", at_handler_line(&e, 1)))?;
                Ok(Compiled { kind: Kind::Js(handler.script.clone(), 1) })
            }
        }
    }

    /// Runs `handler` over `result` (of `server.tool`): the handler's value, or an error that
    /// says the tool ran, with the handler's error and a preview of the raw result. A result
    /// the tool marked as an error is not handled: it comes back as it is (`Ok(None)`).
    pub async fn apply(
        &self,
        handler: &Compiled,
        server: &str,
        tool: &str,
        result: &CallToolResult,
    ) -> Result<Option<Value>, String> {
        if result.is_error == Some(true) {
            return Ok(None);
        }
        let output = tool_output(result);
        let value = match &handler.kind {
            Kind::Jq(filter) => {
                let limits = jq::JqLimits {
                    timeout: self.limits.timeout,
                    memory_limit_mb: self.limits.memory_limit_mb,
                    max_output_bytes: self.limits.max_output_bytes,
                };
                jq::run(filter, &output, &limits, &self.isolation).await.map(|mut v| match v.len() {
                    1 => v.pop().unwrap_or(Value::Null),
                    _ => Value::Array(v),
                })
            }
            Kind::Js(body, offset) => {
                self.run_js(body, &output, result).await.map_err(|e| at_handler_line(&e, *offset))
            }
        };
        value.map(Some).map_err(|e| after_call_error(server, tool, &e, result))
    }

    async fn run_js(&self, body: &str, output: &Value, result: &CallToolResult) -> Result<Value, String> {
        let json_literal = |v: &Value| -> Result<String, String> {
            let text = serde_json::to_string(v).map_err(|e| format!("cannot encode the result: {e}"))?;
            Ok(format!("JSON.parse({})", serde_json::to_string(&text).map_err(|e| e.to_string())?))
        };
        let source = js_module(body, &json_literal(output)?, &json_literal(&crate::mcp::tools::result_json(result))?);
        let bridge = if self.tool_calls { self.bridge().await?.map(|b| b.endpoint().clone()) } else { None };
        let source = if self.tool_calls { source } else { format!("{}{source}", tool_calls_off_prelude()) };
        let executor = self.executor.get_or_init(|| Executor::with_limits(&self.limits));
        let req = ExecRequest {
            workspace: self.workspace.clone(),
            script: Script::Inline(source),
            limits: self.limits.clone(),
            bridge,
        };
        let outcome = executor.execute(req).await;
        if let Some(e) = outcome.error {
            return Err(format!("JavaScript: {}", e.message));
        }
        if outcome.output_truncated_bytes > 0 {
            return Err(format!(
                "the handler's value is larger than the output limit ({})",
                crate::util::size::human_bytes(self.limits.max_output_bytes as u64)
            ));
        }
        Ok(outcome.value.unwrap_or(Value::Null))
    }

    async fn bridge(&self) -> Result<Option<&BridgeServer>, String> {
        let Some(manager) = &self.manager else { return Ok(None) };
        self.bridge
            .get_or_try_init(|| BridgeServer::start(manager.clone()))
            .await
            .map(Some)
            .map_err(|e| format!("cannot start the MCP bridge for the handler: {e:#}"))
    }

    /// Stops the bridge, when one was started.
    pub async fn stop(self) {
        if let Some(b) = self.bridge.into_inner() {
            b.stop().await;
        }
    }
}

/// The module a JavaScript handler runs as: its body in an async function of `tool_output`
/// and `result`, called by the default export (whose value the runtime reports as JSON).
fn js_module(body: &str, tool_output: &str, result: &str) -> String {
    format!(
        "async function __handler(tool_output, result) {{\n{body}\n}}\n\
         export default () => __handler({tool_output}, {result});\n"
    )
}

/// Positions in the module a handler runs as (`main.ts:L:C`, `handler.ts:L:C`) as positions in
/// the handler's own text.
fn at_handler_line(message: &str, offset: usize) -> String {
    static POS: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let Some(re) = POS
        .get_or_init(|| regex::Regex::new(r"(?:file:///)?(?:[^\s:]*/)?(?:main|handler)\.ts:(\d+):(\d+)").ok())
        .as_ref()
    else {
        return message.to_string();
    };
    re.replace_all(message, |c: &regex::Captures| {
        let line: usize = c[1].parse().unwrap_or(0);
        match line.checked_sub(offset) {
            Some(l) if l > 0 => format!("handler line {l}, column {}", &c[2]),
            _ => "the handler".to_string(),
        }
    })
    .into_owned()
}

/// Shadows the globals that reach servers (tool calls, resources, prompts) with ones that fail
/// with [`TOOL_CALLS_OFF`].
fn tool_calls_off_prelude() -> String {
    let msg = serde_json::to_string(TOOL_CALLS_OFF).unwrap_or_default();
    let mut prelude = format!("const callMCPTool = async () => {{ throw new Error({msg}); }}; ");
    for name in ["__agentCallTool", "listResources", "readResource", "listPrompts", "getPrompt"] {
        prelude.push_str(&format!("const {name} = callMCPTool; "));
    }
    prelude
}

/// The value a handler sees as `tool_output`: the value a script's `callMCPTool` gets for the
/// same result (`mcp::tools::decode`, the mirror of `runtime-js/result.js`).
pub fn tool_output(result: &CallToolResult) -> Value {
    crate::mcp::tools::decode(result)
}

/// A handler's value as a tool result: a string as it is, anything else as JSON text, plus
/// `structuredContent` when it is an object.
pub fn value_result(v: Value) -> CallToolResult {
    match v {
        Value::String(s) => CallToolResult::success(vec![ContentBlock::text(s)]),
        Value::Object(_) => {
            let mut r = CallToolResult::success(vec![ContentBlock::text(v.to_string())]);
            r.structured_content = Some(v);
            r
        }
        other => CallToolResult::success(vec![ContentBlock::text(other.to_string())]),
    }
}

/// A handler's value as text (what `agent mcp call` prints): strings as they are, the rest as
/// pretty JSON.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// The error of a handler that failed after `server.tool` ran.
fn after_call_error(server: &str, tool: &str, error: &str, result: &CallToolResult) -> String {
    let raw = crate::mcp::tools::result_text(result, crate::mcp::tools::Reader::Model);
    let total = raw.chars().count();
    let preview: String = raw.chars().take(PREVIEW_CHARS).collect();
    let shown = if total > PREVIEW_CHARS {
        format!("first {PREVIEW_CHARS} of {total} characters")
    } else {
        format!("{total} characters")
    };
    format!(
        "`{server}.{tool}` ran (its side effects happened), but the result handler failed: {error}\n\
         raw result ({shown}): {preview}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn runner() -> HandlerRunner {
        let dir = std::env::temp_dir();
        let mut config = Config::default();
        config.mcp.code_execution.workspace_dir = dir;
        config.mcp.code_execution.timeout = std::time::Duration::from_secs(5);
        HandlerRunner::from_config(&config, None).unwrap().with_isolation(jq::Isolation::Thread)
    }

    fn h(v: Value) -> Result<Handler, String> {
        Handler::parse(&v)
    }

    #[test]
    fn handlers_parse_from_json() {
        assert_eq!(
            h(json!("tool_output.a")).unwrap(),
            Handler { language: Language::JavaScript, script: "tool_output.a".into() }
        );
        assert_eq!(h(json!({"language": "jq", "script": ".a"})).unwrap().language, Language::Jq);
        assert_eq!(h(json!({"script": "1"})).unwrap().language, Language::JavaScript);
        assert_eq!(
            h(json!({"language": "python", "script": "x"})).unwrap_err(),
            "result handler: unknown language `python` (expected `javascript` or `jq`)"
        );
        assert!(h(json!({"language": "jqq", "script": "x"})).unwrap_err().contains("did you mean `jq`"));
        assert_eq!(h(json!("  ")).unwrap_err(), "result handler: the script is empty");
        assert_eq!(h(json!({"language": "jq"})).unwrap_err(), "result handler: missing `script`");
        assert!(h(json!({"script": "1", "lang": "jq"})).unwrap_err().contains("unknown key `lang`"));
        let e = h(json!(3)).unwrap_err();
        assert!(e.starts_with("result handler: expected a string (JavaScript) or"), "{e}");
    }

    #[test]
    fn javascript_is_checked_as_an_expression_or_a_body() {
        let r = runner();
        let js = |s: &str| r.compile(&Handler { language: Language::JavaScript, script: s.into() });
        js("tool_output.items.length").unwrap();
        js("const n = tool_output.length;\nreturn n * 2;").unwrap();
        js("({a: 1})").unwrap();
        let e = js("const a = 1;\nreturn a +;").unwrap_err();
        assert!(e.starts_with("result handler (JavaScript) does not parse:"), "{e}");
        assert!(e.contains("handler line 2, column"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn tool_output_prefers_structured_then_json_text_then_text() {
        let mut r = CallToolResult::success(vec![ContentBlock::text("{\"a\":1}")]);
        assert_eq!(tool_output(&r), json!({"a": 1}));
        r.structured_content = Some(json!({"b": 2}));
        assert_eq!(tool_output(&r), json!({"b": 2}));
        let r = CallToolResult::success(vec![ContentBlock::text("hello")]);
        assert_eq!(tool_output(&r), json!("hello"));
    }

    #[test]
    fn values_are_shaped_as_results() {
        let r = value_result(json!("plain"));
        assert_eq!(r.content[0].as_text().unwrap().text, "plain");
        assert!(r.structured_content.is_none());
        let r = value_result(json!({"n": 1}));
        assert_eq!(r.content[0].as_text().unwrap().text, "{\"n\":1}");
        assert_eq!(r.structured_content, Some(json!({"n": 1})));
        let r = value_result(json!([1, 2]));
        assert_eq!(r.content[0].as_text().unwrap().text, "[1,2]");
        assert!(r.structured_content.is_none());
    }

    #[tokio::test]
    async fn jq_and_javascript_run_over_the_result() {
        let r = runner();
        let raw = CallToolResult::success(vec![ContentBlock::text("{\"items\":[1,2,3]}")]);
        let jq = r.compile(&Handler { language: Language::Jq, script: ".items[]".into() }).unwrap();
        assert_eq!(r.apply(&jq, "s", "t", &raw).await.unwrap(), Some(json!([1, 2, 3])), "several outputs: an array");
        let jq = r.compile(&Handler { language: Language::Jq, script: ".items | length".into() }).unwrap();
        assert_eq!(r.apply(&jq, "s", "t", &raw).await.unwrap(), Some(json!(3)));
        let js = r
            .compile(&Handler {
                language: Language::JavaScript,
                script: "({n: tool_output.items.length, e: result.isError})".into(),
            })
            .unwrap();
        assert_eq!(r.apply(&js, "s", "t", &raw).await.unwrap(), Some(json!({"n": 3, "e": false})));
        let js = r
            .compile(&Handler { language: Language::JavaScript, script: "await callMCPTool('s', 't', {})".into() })
            .unwrap();
        let e = r.apply(&js, "s", "t", &raw).await.unwrap_err();
        assert!(e.contains(TOOL_CALLS_OFF), "{e}");
        let js = r
            .compile(&Handler { language: Language::JavaScript, script: "await readResource('s', 'x://y')".into() })
            .unwrap();
        let e = r.apply(&js, "s", "t", &raw).await.unwrap_err();
        assert!(e.contains(TOOL_CALLS_OFF), "resources are off with tool calls: {e}");
        let js =
            r.compile(&Handler { language: Language::JavaScript, script: "tool_output.nope.deeper".into() }).unwrap();
        let e = r.apply(&js, "srv", "tl", &raw).await.unwrap_err();
        assert!(
            e.starts_with("`srv.tl` ran (its side effects happened), but the result handler failed: JavaScript:"),
            "{e}"
        );
        assert!(e.contains("at handler line 1, column 18"), "{e}");
        assert!(e.ends_with("raw result (17 characters): {\"items\":[1,2,3]}"), "{e}");
        let err = CallToolResult::error(vec![ContentBlock::text("bad")]);
        assert_eq!(r.apply(&jq, "s", "t", &err).await.unwrap(), None, "an error result is not handled");
    }
}
