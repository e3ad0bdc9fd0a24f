//! Code mode, execution side: the [`ToolHost`] that runs `code_execution` scripts through the
//! run's [`CodeMode`] (one warm executor for the whole run, its tool calls going through the
//! bridge to the MCP manager) and answers the discovery tools from the generated tree.
//!
//! What the model gets back from a script is exactly what it printed; stderr, the default export
//! and a failure are appended after labelled lines, and a failure makes it an error result.

use futures::future::BoxFuture;
use serde_json::Value;

use super::code::{CODE_EXECUTION, Discovery, GREP_FILES, LIST_FILES, READ_FILE};
use super::provider::{ToolCall, ToolSpec, short};
use super::session::{ToolHost, ToolOutcome};
use crate::codemode::CodeMode;
use crate::runtime::Script;

/// Code mode's tools, bound to one [`CodeMode`] (its tree, runtime and bridge).
pub struct CodeHost<'a> {
    specs: Vec<ToolSpec>,
    discovery: Discovery,
    code: &'a CodeMode,
}

impl<'a> CodeHost<'a> {
    pub fn new(specs: Vec<ToolSpec>, code: &'a CodeMode) -> CodeHost<'a> {
        CodeHost { specs, discovery: Discovery::new(code.workspace()), code }
    }

    async fn run_code(&self, call: &ToolCall) -> ToolOutcome {
        let Some(code) = call.input.get("code").and_then(Value::as_str).filter(|c| !c.trim().is_empty()) else {
            return ToolOutcome {
                content: "`code` is required: a TypeScript module to run".into(),
                is_error: true,
                ..Default::default()
            };
        };
        let outcome = self.code.run(Script::Inline(code.to_string())).await;
        let (content, is_error) = crate::codemode::tool::script_result(&outcome);
        ToolOutcome {
            content,
            is_error,
            truncated: outcome.output_truncated_bytes > 0,
            mcp_calls: outcome.tool_calls,
            detail: serde_json::to_value(&outcome).ok(),
            ..Default::default()
        }
    }

    async fn discover(&self, call: &ToolCall) -> ToolOutcome {
        let discovery = self.discovery.clone();
        let name = call.name.clone();
        let input = call.input.clone();
        // File reads and regex scans are blocking work; keep them off the async threads.
        let r = tokio::task::spawn_blocking(move || discovery.call(&name, &input))
            .await
            .unwrap_or_else(|e| Err(format!("the discovery tool failed: {e}")));
        match r {
            Ok(content) => ToolOutcome { content, ..Default::default() },
            Err(content) => ToolOutcome { content, is_error: true, ..Default::default() },
        }
    }
}

impl ToolHost for CodeHost<'_> {
    fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            match call.name.as_str() {
                CODE_EXECUTION => self.run_code(call).await,
                LIST_FILES | READ_FILE | GREP_FILES => self.discover(call).await,
                other => ToolOutcome {
                    content: format!(
                        "unknown tool `{other}`: in code mode MCP tools are called from TypeScript with \
                         `{CODE_EXECUTION}` (import them from ./servers/<server>/index.ts)"
                    ),
                    is_error: true,
                    ..Default::default()
                },
            }
        })
    }

    /// Scripts may have side effects that depend on order: run them one at a time.
    fn concurrent(&self) -> bool {
        false
    }

    fn label(&self, call: &ToolCall) -> String {
        let s = |k: &str| call.input.get(k).and_then(Value::as_str).map(str::trim).filter(|x| !x.is_empty());
        match call.name.as_str() {
            CODE_EXECUTION => {
                let what = s("description")
                    .or_else(|| s("code").and_then(|c| c.lines().map(str::trim).find(|l| !l.is_empty())))
                    .unwrap_or("");
                format!("{CODE_EXECUTION}: {}", short(what, 120))
            }
            _ => format!("{} {}", call.name, short(&call.input.to_string(), 120)),
        }
    }
}
