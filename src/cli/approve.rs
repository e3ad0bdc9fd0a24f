//! The CLI's [`Approver`]: calls of destructive tools (`mcp.approvals`) are asked on the
//! terminal (stdin and stderr TTYs): approve once, approve the tool for the rest of the run, or
//! deny. Without a terminal nothing is installed and the manager applies `mcp.approvals.policy`.
//! (`agent mcp call --yes` is no approver: it approves the one call it names, through that call's
//! context, and nothing its result handler does. `agent exec --yes` and `agent run --yes` are:
//! [`approve_all`] approves every call of the command.) The tool's name and arguments in the question
//! are shown as `output::terminal_line` has them: a server names its tools.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::mcp::McpManager;
use crate::mcp::ToolInfo;
use crate::mcp::approval::{Approver, Decision};

/// Installs the approver for this process: a terminal asks, otherwise the policy decides
/// (nothing installed).
pub fn install(manager: &McpManager) {
    if super::prompt::interactive() {
        manager.set_approver(Arc::new(Terminal));
    }
}

/// `agent exec --yes`, `agent run --yes`: the user approved every call of the command up front,
/// so nothing is asked, on a terminal or not (replaces what [`install`] set).
pub fn approve_all(manager: &McpManager) {
    manager.set_approver(Arc::new(ApproveAll));
}

struct ApproveAll;

impl Approver for ApproveAll {
    fn approve<'a>(&'a self, _: &'a ToolInfo, _: &'a Map<String, Value>) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Once })
    }
}

struct Terminal;

/// How long a prompt interrupted by Ctrl-C waits for the signal to stop the command.
const INTERRUPT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Longest argument text shown in the question.
const MAX_ARGS_SHOWN: usize = 300;

impl Approver for Terminal {
    fn approve<'a>(&'a self, tool: &'a ToolInfo, args: &'a Map<String, Value>) -> BoxFuture<'a, Decision> {
        let name = tool.qualified_name();
        let mut shown = Value::Object(args.clone()).to_string();
        let question_name = super::output::terminal_line(&name).into_owned();
        if shown.chars().count() > MAX_ARGS_SHOWN {
            shown = shown.chars().take(MAX_ARGS_SHOWN).collect::<String>() + "…";
        }
        let why =
            if tool.hint_labels().contains(&"destructive") { "a destructive tool" } else { "mcp.approvals.require" };
        Box::pin(async move {
            let question = format!("run `{question_name}` ({why}) with {}?", super::output::terminal_line(&shown));
            // Deny is the default: Enter alone never runs a destructive tool.
            let items = ["approve once", "approve this tool for the rest of the run", "deny"];
            let answer = tokio::task::spawn_blocking(move || super::prompt::select(&question, &items, 2)).await;
            match answer {
                Ok(Ok(0)) => Decision::Once,
                Ok(Ok(1)) => Decision::ForRun,
                Ok(Ok(_)) => Decision::Deny,
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {
                    // Ctrl-C: the SIGINT handling stops the command and drops this call (raised
                    // again in case the prompt read it as a key); deny if that takes too long.
                    // SAFETY: raise has no memory-safety preconditions; the CLI handles SIGINT.
                    unsafe {
                        libc::raise(libc::SIGINT);
                    }
                    tokio::time::sleep(INTERRUPT_GRACE).await;
                    Decision::Deny
                }
                Ok(Err(e)) => {
                    // A list prompt hides the cursor while it waits.
                    let _ = dialoguer::console::Term::stderr().show_cursor();
                    tracing::warn!("the approval prompt failed ({e}); denying `{name}`");
                    Decision::Deny
                }
                Err(_) => Decision::Deny,
            }
        })
    }
}
