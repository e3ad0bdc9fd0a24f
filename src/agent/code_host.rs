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
use crate::runtime::{ExecOutcome, Script};

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
        let (content, is_error) = script_result(&outcome);
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

/// The tool result of a script: exactly its stdout, then (only when present) its stderr, its
/// default export and its failure, each after a labelled line.
pub fn script_result(o: &ExecOutcome) -> (String, bool) {
    let mut out = o.stdout.clone();
    let mut section = |label: &str, body: &str| {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(label);
        out.push_str(body);
    };
    if !o.stderr.is_empty() {
        section("[stderr]\n", &o.stderr);
    }
    if let Some(v) = o.value.as_ref().filter(|v| !v.is_null()) {
        section("[default export] ", &v.to_string());
    }
    let is_error = o.error.is_some();
    if let Some(e) = &o.error {
        let text = match &e.stack {
            Some(stack) if stack.contains(&e.message) => stack.clone(),
            Some(stack) => format!("{}\n{stack}", e.message),
            None => e.message.clone(),
        };
        section("error: ", &text);
    }
    if out.is_empty() {
        out.push_str("(the script printed nothing)");
    }
    (out, is_error)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{ExecFailure, FailureKind};

    fn outcome(stdout: &str, stderr: &str, value: Option<Value>, error: Option<ExecFailure>) -> ExecOutcome {
        ExecOutcome {
            stdout: stdout.into(),
            stderr: stderr.into(),
            value,
            error,
            tool_calls: 0,
            duration_ms: 1.0,
            output_truncated_bytes: 0,
            skills_saved: Vec::new(),
        }
    }

    #[test]
    fn the_result_is_exactly_the_printed_output_plus_labelled_extras() {
        assert_eq!(script_result(&outcome("a\nb\n", "", None, None)), ("a\nb\n".to_string(), false));
        assert_eq!(script_result(&outcome("no newline", "", None, None)), ("no newline".to_string(), false));
        assert_eq!(
            script_result(&outcome("out", "warn\n", Some(serde_json::json!([1])), None)),
            ("out\n[stderr]\nwarn\n[default export] [1]".to_string(), false)
        );
        assert_eq!(script_result(&outcome("", "", Some(Value::Null), None)).0, "(the script printed nothing)");
        let failure = ExecFailure {
            kind: FailureKind::Script,
            message: "Error: boom".into(),
            stack: Some("Error: boom\n    at main.ts:2:7".into()),
        };
        assert_eq!(
            script_result(&outcome("before\n", "", None, Some(failure))),
            ("before\nerror: Error: boom\n    at main.ts:2:7".to_string(), true)
        );
        let timeout = ExecFailure { kind: FailureKind::Timeout, message: "timed out after 2s".into(), stack: None };
        assert_eq!(
            script_result(&outcome("", "", None, Some(timeout))),
            ("error: timed out after 2s".to_string(), true)
        );
    }
}
