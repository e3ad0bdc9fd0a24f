//! Approvals for destructive tools (`mcp.approvals`): which calls need the user's approval, and
//! who gives it. [`McpManager::call_tool`](super::McpManager::call_tool), the one place every
//! call goes through, asks [`Approvals::check`] before a tool runs.
//!
//! A tool needs approval when its annotations say `destructiveHint: true` (and not
//! `readOnlyHint: true`; a tool without annotations is not destructive) or its qualified name
//! matches a `require` pattern, unless it matches an `exempt` pattern. The [`Approver`] the CLI
//! installs asks on a terminal; without one the configured policy decides. A tool approved "for
//! the run" is not asked again; concurrent calls that need approval are asked one at a time, and
//! while the user decides, script timeouts are paused ([`crate::util::pause`]). A denial becomes
//! a tool error (`isError`) the model and scripts read: `denied by the user: server.tool` when
//! someone was asked and said no; `denied (no terminal to ask; pass --yes or set mcp.approvals):
//! server.tool` when nobody could be asked and the policy said no (`agent mcp serve`, which has
//! no `--yes`, names only `mcp.approvals`: [`Approvals::set_no_terminal_fix`]).
//!
//! The user may also approve one call before it is made (`agent mcp call --yes`): a
//! [`PreApproved`] in that call's [`CallContext`](super::CallContext). It covers that call and
//! nothing else: not the calls a result handler or script makes meanwhile, even of the same tool.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex as StdMutex, RwLock};

use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};

use super::tools::ToolInfo;
use crate::config::{ApprovalPolicy, ApprovalsConfig};

/// The user's answer to one approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run this call.
    Once,
    /// Run this call and every later call of the same tool in this process.
    ForRun,
    /// Do not run it; the caller gets `denied by the user: server.tool`.
    Deny,
}

/// Asks the user whether a call may run (the CLI's terminal prompt, `--yes`). Called one request
/// at a time; may take as long as the user needs.
pub trait Approver: Send + Sync {
    fn approve<'a>(&'a self, tool: &'a ToolInfo, args: &'a Map<String, Value>) -> BoxFuture<'a, Decision>;
}

/// The user's approval of one call, given before it is made (`agent mcp call --yes`). It is spent
/// by the first approval check of a call of the named tool under the context that carries it,
/// which is the named call itself (it is checked before it is sent): calls a result handler or a
/// script makes later under a copy of that context find it spent and are asked, or decided by
/// the policy, like any other.
#[derive(Debug)]
pub struct PreApproved {
    qualified: String,
    spent: AtomicBool,
}

impl PreApproved {
    /// An approval of the next call of `server.tool`.
    pub fn new(server: &str, tool: &str) -> PreApproved {
        PreApproved { qualified: format!("{server}.{tool}"), spent: AtomicBool::new(false) }
    }

    /// Whether this approval covers a call of `qualified`; true at most once.
    fn take(&self, qualified: &str) -> bool {
        self.qualified == qualified && !self.spent.swap(true, Ordering::SeqCst)
    }
}

/// The message of a call the user denied, the text of its `isError` result.
pub fn denial_message(qualified: &str) -> String {
    format!("{DENIED_BY_USER}{qualified}")
}

/// The message of a call denied by `mcp.approvals.policy` because there was no one to ask: it
/// says so, and how to let the call run (`fix`), rather than blaming a user who was never asked.
pub fn policy_denial_message(qualified: &str, fix: &str) -> String {
    format!("{DENIED_NO_TERMINAL}; {fix}): {qualified}")
}

const DENIED_BY_USER: &str = "denied by the user: ";
const DENIED_NO_TERMINAL: &str = "denied (no terminal to ask";
/// How a command-line user lets such a call run.
pub const FIX_ON_THE_COMMAND_LINE: &str = "pass --yes or set mcp.approvals";

/// The first text block of a result denied by [`Approvals::check`], if `result` is one.
pub fn denied(result: &CallToolResult) -> Option<&str> {
    if result.is_error != Some(true) || result.content.len() != 1 {
        return None;
    }
    match result.content.first() {
        Some(ContentBlock::Text(t)) if t.text.starts_with(DENIED_BY_USER) || t.text.starts_with(DENIED_NO_TERMINAL) => {
            Some(&t.text)
        }
        _ => None,
    }
}

/// The approval rules and state of one manager.
pub struct Approvals {
    config: ApprovalsConfig,
    approver: RwLock<Option<std::sync::Arc<dyn Approver>>>,
    /// Tools approved for the rest of the run (qualified names).
    for_run: StdMutex<HashSet<String>>,
    /// One question at a time.
    asking: tokio::sync::Mutex<()>,
    /// What a policy denial tells the user to do ([`FIX_ON_THE_COMMAND_LINE`] unless set).
    no_terminal_fix: RwLock<&'static str>,
}

impl Approvals {
    pub fn new(config: &ApprovalsConfig) -> Approvals {
        Approvals {
            config: config.clone(),
            approver: RwLock::new(None),
            for_run: Default::default(),
            asking: tokio::sync::Mutex::new(()),
            no_terminal_fix: RwLock::new(FIX_ON_THE_COMMAND_LINE),
        }
    }

    /// What a call denied for want of a terminal tells the user to do, where `--yes` does not exist.
    pub fn set_no_terminal_fix(&self, fix: &'static str) {
        if let Ok(mut f) = self.no_terminal_fix.write() {
            *f = fix;
        }
    }

    /// Sets who is asked (replacing any previous one); without one the policy decides.
    pub fn set_approver(&self, approver: std::sync::Arc<dyn Approver>) {
        if let Ok(mut a) = self.approver.write() {
            *a = Some(approver);
        }
    }

    /// Whether calls of `tool` need approval.
    pub fn needs_approval(&self, tool: &ToolInfo) -> bool {
        let name = tool.qualified_name();
        if self.config.exempt.iter().any(|p| glob_match(p, &name)) {
            return false;
        }
        if self.config.require.iter().any(|p| glob_match(p, &name)) {
            return true;
        }
        let hint = |key: &str| tool.annotations.as_ref().and_then(|a| a.get(key)).and_then(Value::as_bool);
        hint("destructiveHint") == Some(true) && hint("readOnlyHint") != Some(true)
    }

    /// `None` when the call may run; otherwise the `isError` result to return instead.
    /// `pre` is the approval the user gave this call beforehand, if any (see [`PreApproved`]).
    pub async fn check(
        &self,
        tool: &ToolInfo,
        args: &Map<String, Value>,
        pre: Option<&PreApproved>,
    ) -> Option<CallToolResult> {
        let name = tool.qualified_name();
        // Spent by the first check of the named tool, whether or not that call needs approval.
        let pre_approved = pre.is_some_and(|p| p.take(&name));
        if !self.needs_approval(tool) || pre_approved {
            return None;
        }
        let approved = |set: &StdMutex<HashSet<String>>| set.lock().map(|s| s.contains(&name)).unwrap_or(false);
        if approved(&self.for_run) {
            return None;
        }
        let approver = self.approver.read().ok().and_then(|a| a.clone());
        let Some(approver) = approver else {
            return match self.config.policy {
                ApprovalPolicy::Allow => None,
                ApprovalPolicy::Deny => {
                    tracing::info!(tool = %name, "denied: no terminal to ask, and mcp.approvals.policy is deny");
                    let fix = self.no_terminal_fix.read().map_or(FIX_ON_THE_COMMAND_LINE, |f| *f);
                    Some(CallToolResult::error(vec![ContentBlock::text(policy_denial_message(&name, fix))]))
                }
            };
        };
        // Script timeouts stand still while the user decides (and while an earlier question is open).
        let _paused = crate::util::clock::user_wait().pause();
        let _one_at_a_time = self.asking.lock().await;
        if approved(&self.for_run) {
            return None;
        }
        match approver.approve(tool, args).await {
            Decision::Once => None,
            Decision::ForRun => {
                if let Ok(mut s) = self.for_run.lock() {
                    s.insert(name);
                }
                None
            }
            Decision::Deny => Some(denial(&name)),
        }
    }
}

fn denial(name: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(denial_message(name))])
}

/// `*` matches any run of characters (dots included), `?` one character; everything else itself.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, annotations: Option<Value>) -> ToolInfo {
        ToolInfo {
            server: "github".into(),
            name: name.into(),
            title: None,
            description: None,
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations,
        }
    }

    fn rules(require: &[&str], exempt: &[&str]) -> Approvals {
        Approvals::new(&ApprovalsConfig {
            policy: ApprovalPolicy::Deny,
            require: require.iter().map(|s| s.to_string()).collect(),
            exempt: exempt.iter().map(|s| s.to_string()).collect(),
        })
    }

    #[test]
    fn globs_match_whole_names() {
        assert!(glob_match("github.delete_*", "github.delete_repository"));
        assert!(glob_match("*.delete_*", "gitlab.delete_branch"));
        assert!(glob_match("kubernetes.kubectl_delete", "kubernetes.kubectl_delete"));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("github.delete_*", "github.list_issues"));
        assert!(!glob_match("kubernetes.kubectl_delete", "kubernetes.kubectl_delete_all"));
        assert!(!glob_match("github.delete", "xgithub.delete"));
    }

    #[test]
    fn explicit_destructive_hints_and_patterns_need_approval() {
        let r = rules(&["github.delete_*"], &["github.delete_draft"]);
        assert!(r.needs_approval(&tool("merge", Some(json!({"destructiveHint": true})))));
        assert!(!r.needs_approval(&tool("merge", Some(json!({"destructiveHint": true, "readOnlyHint": true})))));
        assert!(!r.needs_approval(&tool("merge", None)), "no annotations is not destructive");
        assert!(!r.needs_approval(&tool("merge", Some(json!({"destructiveHint": false})))));
        assert!(r.needs_approval(&tool("delete_repository", None)));
        assert!(!r.needs_approval(&tool("delete_draft", Some(json!({"destructiveHint": true})))));
    }

    #[tokio::test]
    async fn without_an_approver_the_policy_decides() {
        let t = tool("delete_repository", Some(json!({"destructiveHint": true})));
        let denied_result = rules(&[], &[]).check(&t, &Map::new(), None).await.unwrap();
        assert_eq!(
            denied(&denied_result),
            Some("denied (no terminal to ask; pass --yes or set mcp.approvals): github.delete_repository")
        );
        let allow = Approvals::new(&ApprovalsConfig { policy: ApprovalPolicy::Allow, ..Default::default() });
        assert!(allow.check(&t, &Map::new(), None).await.is_none());
    }

    /// Counts questions and how many were open at once; answers after a moment.
    struct Counting {
        asked: std::sync::atomic::AtomicUsize,
        open: std::sync::atomic::AtomicUsize,
        max_open: std::sync::atomic::AtomicUsize,
        answer: Decision,
    }

    impl Approver for Counting {
        fn approve<'a>(&'a self, _: &'a ToolInfo, _: &'a Map<String, Value>) -> BoxFuture<'a, Decision> {
            use std::sync::atomic::Ordering::SeqCst;
            Box::pin(async move {
                self.asked.fetch_add(1, SeqCst);
                let now = self.open.fetch_add(1, SeqCst) + 1;
                self.max_open.fetch_max(now, SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                self.open.fetch_sub(1, SeqCst);
                self.answer
            })
        }
    }

    fn counting(answer: Decision) -> std::sync::Arc<Counting> {
        std::sync::Arc::new(Counting {
            asked: Default::default(),
            open: Default::default(),
            max_open: Default::default(),
            answer,
        })
    }

    #[tokio::test]
    async fn concurrent_calls_are_asked_one_at_a_time_and_for_run_is_remembered() {
        use std::sync::atomic::Ordering::SeqCst;
        let t = tool("delete_repository", Some(json!({"destructiveHint": true})));
        let args = Map::new();
        let once = rules(&[], &[]);
        let c = counting(Decision::Once);
        once.set_approver(c.clone());
        let all = futures::future::join_all((0..4).map(|_| once.check(&t, &args, None))).await;
        assert!(all.iter().all(Option::is_none));
        assert_eq!((c.asked.load(SeqCst), c.max_open.load(SeqCst)), (4, 1));

        let for_run = rules(&[], &[]);
        let c = counting(Decision::ForRun);
        for_run.set_approver(c.clone());
        let all = futures::future::join_all((0..4).map(|_| for_run.check(&t, &args, None))).await;
        assert!(all.iter().all(Option::is_none));
        assert_eq!(c.asked.load(SeqCst), 1, "approved for the run: asked once");

        let deny = rules(&[], &[]);
        deny.set_approver(counting(Decision::Deny));
        let r = deny.check(&t, &args, None).await.unwrap();
        assert_eq!(denied(&r), Some("denied by the user: github.delete_repository"));
    }

    #[tokio::test]
    async fn a_pre_approval_covers_one_call_of_the_named_tool_only() {
        let t = tool("delete_repository", Some(json!({"destructiveHint": true})));
        let other = tool("delete_branch", Some(json!({"destructiveHint": true})));
        let args = Map::new();
        let r = rules(&[], &[]);
        let pre = PreApproved::new("github", "delete_repository");
        assert!(r.check(&other, &args, Some(&pre)).await.is_some(), "another tool is not approved");
        assert!(r.check(&t, &args, Some(&pre)).await.is_none(), "the named call runs");
        let again = r.check(&t, &args, Some(&pre)).await;
        assert_eq!(
            again.as_ref().and_then(denied),
            Some("denied (no terminal to ask; pass --yes or set mcp.approvals): github.delete_repository")
        );
        // Spent by a named call that needed no approval, too.
        let pre = PreApproved::new("github", "list_issues");
        assert!(r.check(&tool("list_issues", None), &args, Some(&pre)).await.is_none());
        let list = tool("list_issues", Some(json!({"destructiveHint": true})));
        assert!(r.check(&list, &args, Some(&pre)).await.is_some());
    }
}
