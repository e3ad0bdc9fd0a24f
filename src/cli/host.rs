//! The CLI's side of a server's requests (elicitation and sampling): the terminal prompts behind
//! `mcp::host::Interaction` (elicitation forms, URL mode, approval of sampling requests, notices
//! on stderr) and the configured LLM provider behind `mcp::host::Sampler`. [`install`] puts both
//! into a manager; every command that calls tools does so.
//!
//! Everything a server wrote (its messages, the URL, the sampling request, notices quoting it)
//! is printed as `output::terminal_text`/`terminal_line` has it: shown, never obeyed. A URL is
//! shown with its host on a line of its own and opened only when the user says yes (the default
//! is no); `mcp::host::url_to_visit` already refused every scheme but https (and http to this
//! machine).

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::output::{terminal_line, terminal_text};
use crate::agent::provider::{ChatRequest, LlmProvider, Message, Part, ProviderEvent, Role, StopReason, Usage};
use crate::config::{Config, SamplingPolicy};
use crate::mcp::McpManager;
use crate::mcp::host::{Decision, Interaction, SampleAnswer, SampleRequest, Sampler, VisitUrl, shorten};

/// Installs the terminal and (when a server may sample) the configured provider into `manager`.
/// Returns the token use of sampling requests answered by the provider, for `agent run`.
pub fn install(manager: &McpManager, config: &Config) -> Arc<Mutex<Usage>> {
    let usage = Arc::new(Mutex::new(Usage::default()));
    let terminal = super::prompt::interactive();
    manager.host().set_interaction(Arc::new(Terminal { terminal, lock: Mutex::new(()) }));
    if terminal {
        manager.host().set_signer(Arc::new(BrowserSignIn {
            servers: config.mcp.servers.clone(),
            one_at_a_time: tokio::sync::Mutex::new(()),
        }));
    }
    if config.mcp.servers.values().any(|s| s.sampling != SamplingPolicy::Deny) {
        let env_key = std::env::var(crate::agent::key_env_var(config.llm.provider)).ok();
        let provider = crate::agent::provider_from_config(&config.llm, env_key);
        manager.host().set_sampler(Arc::new(ProviderSampler {
            provider,
            model: config.llm.model.clone(),
            usage: usage.clone(),
        }));
    }
    usage
}

/// Signing in again for more scopes on a terminal (`mcp call`, scripts, `agent run`): the
/// browser flow of `agent mcp login`, one at a time (calls of one script may ask together).
struct BrowserSignIn {
    servers: std::collections::BTreeMap<String, crate::config::ServerConfig>,
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl crate::mcp::host::Signer for BrowserSignIn {
    fn sign_in<'a>(&'a self, server: &'a str, scopes: &'a str, attempt: u32) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let _one = self.one_at_a_time.lock().await;
            let max = crate::mcp::MAX_STEP_UPS;
            eprintln!(
                "`{server}` asks for more scopes ({}): signing in again ({attempt} of {max})",
                terminal_line(scopes)
            );
            let cfg = self.servers.get(server).ok_or_else(|| format!("unknown server `{server}`"))?;
            let store = crate::mcp::auth::store::TokenStore::for_user()?;
            let scopes = scopes.split_whitespace().map(str::to_string).collect();
            let granted =
                super::auth::sign_in(cfg, server, &store, Some(scopes), false).await.map_err(|e| format!("{e:#}"))?;
            eprintln!("signed in to {server} (scopes: {})", terminal_line(&granted.join(" ")));
            Ok(())
        })
    }
}

/// Prompts on stderr, one at a time.
struct Terminal {
    terminal: bool,
    lock: Mutex<()>,
}

impl Terminal {
    fn choose(&self, question: &str, items: &[&str]) -> Option<usize> {
        super::prompt::select(question, items, 0).ok()
    }
}

impl Interaction for Terminal {
    fn is_terminal(&self) -> bool {
        self.terminal
    }

    fn elicit_form(&self, server: &str, message: &str, schema: &Value, problems: &[String]) -> Decision {
        let _one = self.lock.lock();
        // Lines after the first are indented, so the message cannot pass for a prompt of ours.
        let message = terminal_text(message.trim_end()).replace('\n', "\n  ");
        eprintln!("\n{} asks: {message}", terminal_line(server));
        for p in problems {
            eprintln!("  ! {}", terminal_line(p));
        }
        match self.choose("Answer?", &["fill in the form", "decline", "cancel"]) {
            Some(0) => {}
            Some(1) => return Decision::Decline,
            _ => return Decision::Cancel,
        }
        let mut answers = Map::new();
        if super::prompt::ask_object(schema, &mut answers, None).is_err() {
            return Decision::Cancel;
        }
        match self.choose("Send this answer?", &["accept", "decline", "cancel"]) {
            Some(0) => Decision::Accept(answers),
            Some(1) => Decision::Decline,
            _ => Decision::Cancel,
        }
    }

    fn elicit_url(&self, server: &str, message: &str, url: &VisitUrl) -> Decision {
        let _one = self.lock.lock();
        // One line for the message, so it cannot draw a host line of its own.
        eprintln!("\n{} asks you to open a URL: {}", terminal_line(server), terminal_line(message));
        eprintln!("  host: {}\n  url:  {}", url.host, url.url);
        // No is the default: Enter alone never opens what a server names.
        if let Some(opener) = browser_opener()
            && super::prompt::confirm("Open it in the browser?", false).unwrap_or(false)
        {
            let spawned = std::process::Command::new(&opener)
                .arg(&url.url)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
            if let Err(e) = spawned {
                eprintln!("  cannot run {}: {e}", opener.display());
            }
        }
        match self.choose("When you are done there:", &["done (accept)", "decline", "cancel"]) {
            Some(0) => Decision::Accept(Map::new()),
            Some(1) => Decision::Decline,
            _ => Decision::Cancel,
        }
    }

    fn approve_sampling(&self, r: &SampleRequest) -> bool {
        let _one = self.lock.lock();
        eprintln!("\n{} wants to ask the model (max {} tokens):", terminal_line(&r.server), r.max_tokens);
        if let Some(s) = &r.system {
            eprintln!("  system: {}", shorten(&terminal_line(s), 200));
        }
        for m in &r.messages {
            let who = if m.assistant { "assistant" } else { "user" };
            eprintln!("  {who}: {}", shorten(&terminal_line(&m.text), 300));
        }
        super::prompt::confirm("Send this to the model?", false).unwrap_or(false)
    }

    fn notice(&self, server: &str, text: &str) {
        eprintln!("{}: {}", terminal_line(server), terminal_line(text));
    }
}

/// `xdg-open` (or `open` on macOS) when it is on PATH.
fn browser_opener() -> Option<std::path::PathBuf> {
    let name = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    crate::util::dirs::find_on_path(name)
}

/// The configured provider answering sampling requests.
struct ProviderSampler {
    provider: Result<Box<dyn LlmProvider>, String>,
    model: String,
    usage: Arc<Mutex<Usage>>,
}

impl Sampler for ProviderSampler {
    fn sample<'a>(&'a self, r: &'a SampleRequest) -> BoxFuture<'a, Result<SampleAnswer, String>> {
        Box::pin(async move {
            let provider = self.provider.as_ref().map_err(|e| format!("no LLM provider: {e}"))?;
            let messages: Vec<Message> = r
                .messages
                .iter()
                .map(|m| Message {
                    role: if m.assistant { Role::Assistant } else { Role::User },
                    content: vec![Part::Text { text: m.text.clone() }],
                })
                .collect();
            let model = r.model.as_deref().unwrap_or(&self.model);
            let req = ChatRequest {
                model,
                system: r.system.as_deref().unwrap_or(""),
                messages: &messages,
                tools: &[],
                max_tokens: r.max_tokens,
                stream: false,
                stop: &r.stop,
            };
            let sink = |_e: ProviderEvent<'_>| {};
            let resp = provider.complete(req, &sink).await.map_err(|e| e.to_string())?;
            if let (Some(used), Ok(mut u)) = (&resp.usage, self.usage.lock()) {
                u.add(used);
            }
            let stop_reason = resp.stop_reason.map(|s| match s {
                StopReason::EndTurn => "endTurn".to_string(),
                StopReason::MaxTokens => "maxTokens".to_string(),
                StopReason::ToolUse => "toolUse".to_string(),
                StopReason::Other(o) => o,
            });
            Ok(SampleAnswer {
                text: resp.text,
                model: resp.model.unwrap_or_else(|| model.to_string()),
                stop_reason,
                tokens: resp.usage.map(|u| u.input_tokens + u.output_tokens),
            })
        })
    }
}
