//! The code-execution tool as every host offers it (`agent run`'s `code_execution`, `serve`'s
//! `execute_code`): its description with the configured limits, its `code` argument, and a
//! script's outcome as the tool's result.

use crate::config::{CodeExecutionConfig, CodeSession};
use crate::runtime::{ExecOutcome, SessionNote};

/// The description of the tool's `code` argument.
pub const CODE_ARG_DESCRIPTION: &str = "TypeScript module; runs as ./main.ts at the API tree root.";

/// The limits the `code_execution` description states.
#[derive(Debug, Clone)]
pub struct LimitsText {
    pub timeout: String,
    pub memory_mb: u64,
    pub max_output: String,
    /// Whether definitions carry over between runs, and how.
    pub sessions: Sessions,
}

/// What the code-execution tool says about state between its runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sessions {
    /// Each run is a fresh module in a fresh isolate.
    None,
    /// `agent run` with `session: run`: every run continues the last one's isolate.
    Run,
    /// `serve`'s `execute_code`: runs that name the same `session` share an isolate.
    Named,
}

impl LimitsText {
    pub fn from_config(c: &CodeExecutionConfig) -> LimitsText {
        LimitsText {
            timeout: humantime::format_duration(c.timeout).to_string(),
            memory_mb: c.memory_limit_mb,
            max_output: crate::util::size::human_bytes(c.max_output_bytes as u64),
            sessions: match c.session {
                CodeSession::Run => Sessions::Run,
                CodeSession::Script => Sessions::None,
            },
        }
    }
}

/// What the code-execution tool says about itself: the contract scripts run under and the
/// limits. Terse on purpose: it is sent with every request.
pub fn description(l: &LimitsText) -> String {
    let state = match l.sessions {
        Sessions::None => "each run is a fresh module",
        Sessions::Run => {
            "each run is a new module in the same session: what a run declares at its top level (functions, \
             classes, const/let/var, imports) is a global in later runs (declaring a name again replaces it); \
             the memory limit is the session's; a run stopped by a limit ends the session and the next run starts \
             fresh"
        }
        Sessions::Named => {
            "each run is a fresh module; runs that pass the same `session` name share an isolate: what one \
             declares at its top level (functions, classes, const/let/var, imports) is a global in the next"
        }
    };
    format!(
        "Run a TypeScript module in a sandbox; you get back exactly what it prints.\n\
         - Import tools from the generated API: `import {{ someTool }} from \"./servers/<server>/index.ts\";`. \
         Each tool is an async function taking one input object; it resolves to the tool's structured result, \
         else its text parsed as JSON, else the text.\n\
         - Only printed output (console.log) comes back. Keep large results in variables, filter and aggregate \
         them in code, and print only what you need.\n\
         - Run independent calls concurrently: `await Promise.all([...])`.\n\
         - A tool error throws `MCPToolError` (from \"./client.ts\"); use try/catch when a failure should not \
         end the script.\n\
         - Top-level await works. No network, process or env access; {state}.\n\
         - Kept for later runs: `store(key, value)`/`load(key)`, `readText`/`writeText`/`readJson`/`writeJson`/\
         `list` on paths in data/; `saveSkill(name, source, description)` makes \"./skills/<name>.ts\".\n\
         - Limits: {} wall-clock, {} MB memory, {} of output (the rest is cut).\n\
         - Uncaught errors and limits come back as an error result with message and stack.\n\
         - `searchTools(query, {{ limit }})` ranks the tools of every server; `describeTool(\"server.tool\")` \
         shows one's TypeScript.\n\
         - Resources and prompts: `listResources(server?)`, `readResource(server, uri)` (`.contents[i].text`, \
         or base64 `.blob`: `decodeBase64`), `listPrompts(server?)`, `getPrompt(server, name, args)`.",
        l.timeout, l.memory_mb, l.max_output
    )
}

/// The tool result of a script: exactly its stdout, then (only when present) its stderr, its
/// default export and its failure, each after a labelled line.
pub fn script_result(o: &ExecOutcome) -> (String, bool) {
    let note = o.session.as_ref();
    // A step in a fresh session says so first, so earlier names failing is no surprise.
    let mut out = match note.and_then(|n| n.restarted.as_deref()) {
        Some(why) => format!("{}\n{}", SessionNote::restarted_line(why), o.stdout),
        None => o.stdout.clone(),
    };
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
    if let Some(why) = note.and_then(|n| n.ended.as_deref()) {
        section("", &SessionNote::ended_line(why));
    }
    if out.is_empty() {
        out.push_str("(the script printed nothing)");
    }
    (out, is_error)
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::runtime::{ExecFailure, FailureKind};

    fn outcome(stdout: &str, stderr: &str, value: Option<Value>, error: Option<ExecFailure>) -> ExecOutcome {
        ExecOutcome {
            stdout: stdout.into(),
            stderr: stderr.into(),
            value,
            error,
            duration_ms: 1.0,
            ..ExecOutcome::default()
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
