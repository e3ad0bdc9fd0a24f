//! The user and the host's model in the loop: what the MCP layer needs from above to answer a
//! server's elicitation and sampling requests, without importing it.
//!
//! - [`Interaction`]: the terminal (implemented by `cli` with its prompts): elicitation forms,
//!   URL-mode confirmation, approval of a sampling request, one-line notices on stderr.
//! - [`Sampler`]: the configured LLM provider (implemented above `agent`), answering a
//!   provider-neutral [`SampleRequest`].
//! - [`Host`]: where the manager keeps both (installed after it is created) and the per-run
//!   sampling token account of each server (`sampling_budget`): a request reserves its worst
//!   case ([`SampleRequest::worst_case`]) before the model is asked and is charged what it used
//!   after, so concurrent requests never spend more than the budget together.
//!
//! Time spent asking is not counted by any timeout (`util::clock`).
//!
//! The policies themselves (`elicitation`, `sampling` on a server's entry) are applied by the
//! client handler (`handler.rs`); the pure parts (defaults, validation, which URLs may be
//! offered to open: [`url_to_visit`]) live here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// What the user answered to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Accepted, with the form's content (empty for URL mode).
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

/// One message of a sampling request (text only).
#[derive(Debug, Clone, PartialEq)]
pub struct SampleMessage {
    pub assistant: bool,
    pub text: String,
}

/// A server's `sampling/createMessage`, provider-neutral, after the server's policy was applied
/// (`max_tokens` already capped by `sampling_max_tokens`).
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRequest {
    pub server: String,
    pub system: Option<String>,
    pub messages: Vec<SampleMessage>,
    pub max_tokens: u32,
    pub stop: Vec<String>,
    /// `sampling_model` of the server, when set.
    pub model: Option<String>,
}

/// Tokens that frame a request beyond its text (its structure, the reply's start), at most.
const REQUEST_FRAMING_TOKENS: u64 = 64;
/// Tokens that frame one message beyond its text (role markers), at most.
const MESSAGE_FRAMING_TOKENS: u64 = 8;

impl SampleRequest {
    /// Bytes of text the request sends: the system prompt, the messages and the stop sequences.
    pub fn input_bytes(&self) -> usize {
        let messages: usize = self.messages.iter().map(|m| m.text.len()).sum();
        let stop: usize = self.stop.iter().map(String::len).sum();
        self.system.as_ref().map_or(0, String::len) + messages + stop
    }

    /// The most input tokens the request can cost. A token of the byte-level tokenizers providers
    /// use covers at least one byte of text, so the text's UTF-8 length bounds its tokens from
    /// above; the framing of the request and of each message is added on top.
    pub fn input_bound(&self) -> u64 {
        self.input_bytes() as u64 + REQUEST_FRAMING_TOKENS + MESSAGE_FRAMING_TOKENS * self.messages.len() as u64
    }

    /// The most tokens (input and output) the request can cost: what it reserves of a budget.
    pub fn worst_case(&self) -> u64 {
        self.input_bound() + u64::from(self.max_tokens)
    }
}

/// The host model's answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SampleAnswer {
    pub text: String,
    pub model: String,
    /// MCP's names: `endTurn`, `stopSequence`, `maxTokens`.
    pub stop_reason: Option<String>,
    /// Tokens the provider says it used (input and output), when it says.
    pub tokens: Option<u64>,
}

/// The terminal. Methods block (they run in `spawn_blocking`); only one prompt is shown at a time.
pub trait Interaction: Send + Sync {
    /// Whether prompts can be shown (stdin and stderr are terminals).
    fn is_terminal(&self) -> bool;
    /// A form for `schema` (a flat object of primitive fields and multi-select enum arrays); the
    /// answer is validated by the caller.
    fn elicit_form(&self, server: &str, message: &str, schema: &Value, problems: &[String]) -> Decision;
    /// Shows `url` (its host on a line of its own) and the server's reason, offers to open it
    /// (the default answer is no), waits for the user's confirmation. Only URLs
    /// [`url_to_visit`] accepted get here.
    fn elicit_url(&self, server: &str, message: &str, url: &VisitUrl) -> Decision;
    /// Shows a sampling request and asks whether to send it to the model.
    fn approve_sampling(&self, request: &SampleRequest) -> bool;
    /// One line on stderr about `server` (what was sampled, a declined elicitation).
    fn notice(&self, server: &str, text: &str);
}

/// Signs the user in to a server again for more scopes, when the server answered a call with
/// `403 insufficient_scope` (the CLI on a terminal: the browser flow). `attempt` counts from 1 up
/// to the manager's limit; `scopes` are the granted ones plus the required ones.
pub trait Signer: Send + Sync {
    fn sign_in<'a>(&'a self, server: &'a str, scopes: &'a str, attempt: u32) -> BoxFuture<'a, Result<(), String>>;
}

/// The host's model.
pub trait Sampler: Send + Sync {
    fn sample<'a>(&'a self, request: &'a SampleRequest) -> BoxFuture<'a, Result<SampleAnswer, String>>;
}

/// The interaction and sampler of a manager, and the sampling token account of each server.
#[derive(Default)]
pub struct Host {
    interaction: RwLock<Option<Arc<dyn Interaction>>>,
    sampler: RwLock<Option<Arc<dyn Sampler>>>,
    signer: RwLock<Option<Arc<dyn Signer>>>,
    accounts: Mutex<HashMap<String, Account>>,
}

/// One server's sampling tokens this run: charged for answered requests, reserved for requests
/// in flight (each its worst case).
#[derive(Debug, Default, Clone, Copy)]
struct Account {
    used: u64,
    reserved: u64,
}

/// A sampling request that does not fit what is left of its server's budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverBudget {
    pub server: String,
    pub budget: u64,
    pub used: u64,
    /// Reserved by the server's requests in flight.
    pub reserved: u64,
    /// The request's worst case.
    pub need: u64,
}

impl std::fmt::Display for OverBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let OverBudget { server, budget, used, reserved, need } = self;
        if used >= budget {
            return write!(
                f,
                "the sampling budget of server `{server}` is spent ({used} of {budget} tokens, `sampling_budget`)"
            );
        }
        let left = budget.saturating_sub(used + reserved);
        let in_flight =
            if *reserved > 0 { format!(", {reserved} more reserved by requests in flight") } else { String::new() };
        write!(
            f,
            "the sampling budget of server `{server}` does not cover this request: it may use up to {need} tokens \
             (its text and maxTokens), and {left} of {budget} are left ({used} used{in_flight}; `sampling_budget`)"
        )
    }
}

/// Tokens reserved for one sampling request: released when dropped (the request failed or was
/// cancelled), or replaced by what it used with [`Reservation::settle`].
pub struct Reservation<'a> {
    host: &'a Host,
    server: String,
    tokens: u64,
    open: bool,
}

impl Reservation<'_> {
    /// Charges what the request used in place of its reservation: `used` as the provider
    /// reported it, or the whole reservation when it did not. Returns the tokens charged.
    pub fn settle(mut self, used: Option<u64>) -> u64 {
        let charged = used.unwrap_or(self.tokens);
        self.host.update(&self.server, |a| {
            a.reserved = a.reserved.saturating_sub(self.tokens);
            a.used = a.used.saturating_add(charged);
        });
        self.open = false;
        charged
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.open {
            let tokens = self.tokens;
            self.host.update(&self.server, |a| a.reserved = a.reserved.saturating_sub(tokens));
        }
    }
}

impl Host {
    pub fn set_interaction(&self, i: Arc<dyn Interaction>) {
        if let Ok(mut w) = self.interaction.write() {
            *w = Some(i);
        }
    }

    pub fn set_sampler(&self, s: Arc<dyn Sampler>) {
        if let Ok(mut w) = self.sampler.write() {
            *w = Some(s);
        }
    }

    /// Installs who signs the user in again for more scopes (never in `serve`).
    pub fn set_signer(&self, s: Arc<dyn Signer>) {
        if let Ok(mut w) = self.signer.write() {
            *w = Some(s);
        }
    }

    pub fn signer(&self) -> Option<Arc<dyn Signer>> {
        self.signer.read().ok().and_then(|s| s.clone())
    }

    pub fn interaction(&self) -> Option<Arc<dyn Interaction>> {
        self.interaction.read().ok().and_then(|i| i.clone())
    }

    pub fn sampler(&self) -> Option<Arc<dyn Sampler>> {
        self.sampler.read().ok().and_then(|s| s.clone())
    }

    /// Whether prompts can be shown (an interaction is installed and it has a terminal).
    pub fn is_terminal(&self) -> bool {
        self.interaction().is_some_and(|i| i.is_terminal())
    }

    /// Tokens `server`'s sampling requests used this run (answered ones; not those in flight).
    pub fn used(&self, server: &str) -> u64 {
        self.accounts.lock().map(|a| a.get(server).map_or(0, |a| a.used)).unwrap_or(0)
    }

    /// Reserves `tokens` for one request of `server`: refused when what the server used, what
    /// its requests in flight reserved and `tokens` together exceed `budget` (`None`: no limit).
    /// Checked and reserved under one lock, so concurrent requests cannot all pass the check.
    pub fn reserve(&self, server: &str, tokens: u64, budget: Option<u64>) -> Result<Reservation<'_>, OverBudget> {
        let mut accounts = self.accounts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let account = accounts.entry(server.to_string()).or_default();
        if let Some(budget) = budget
            && account.used.saturating_add(account.reserved).saturating_add(tokens) > budget
        {
            return Err(OverBudget {
                server: server.to_string(),
                budget,
                used: account.used,
                reserved: account.reserved,
                need: tokens,
            });
        }
        account.reserved = account.reserved.saturating_add(tokens);
        Ok(Reservation { host: self, server: server.to_string(), tokens, open: true })
    }

    fn update(&self, server: &str, f: impl FnOnce(&mut Account)) {
        let mut accounts = self.accounts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(accounts.entry(server.to_string()).or_default());
    }
}

/// A URL a server asked the user to visit, as it may be shown and opened: `https`, or `http` to
/// this machine. Made by [`url_to_visit`] only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisitUrl {
    /// The URL as the WHATWG parser writes it: ASCII only (controls, spaces and non-ASCII
    /// characters percent-encoded, an international host in punycode), so it can be printed
    /// and handed to a browser opener as it is.
    pub url: String,
    /// Where it leads (punycode for an international name): shown on a line of its own, since
    /// `https://bank.example@evil.example/` leads to `evil.example`.
    pub host: String,
}

/// The URL of a URL-mode elicitation if it may be offered to open, else why not: it must parse,
/// have a host, and be `https`, or `http` to a loopback address or `localhost` (a local OAuth
/// callback). Any other scheme (`file:`, `javascript:`, `data:`, a custom handler) is refused:
/// a browser opener hands those to whatever program is registered for them.
pub fn url_to_visit(raw: &str) -> Result<VisitUrl, String> {
    let parsed = url::Url::parse(raw).map_err(|e| format!("it is not a valid URL ({e})"))?;
    let scheme = parsed.scheme().to_string();
    let Some(host) = parsed.host() else {
        return Err(format!("only https URLs (or http to this machine) are opened, not `{scheme}:` URLs"));
    };
    let loopback = match &host {
        url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(a) => a.is_loopback(),
        url::Host::Ipv6(a) => a.is_loopback(),
    };
    match scheme.as_str() {
        "https" => {}
        "http" if loopback => {}
        "http" => return Err("an http URL is opened only when it leads to this machine; use https".into()),
        other => return Err(format!("only https URLs (or http to this machine) are opened, not `{other}:` URLs")),
    }
    Ok(VisitUrl { host: host.to_string(), url: parsed.into() })
}

/// SEP-1034: every field filled from its schema `default`, then checked against the schema (a
/// default outside an enum, too many items, ... is never sent). `Err` says why it is declined:
/// a required field without a default, or the defaults' violations.
pub fn accept_defaults(schema: &Value) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    fill_defaults(schema, &mut out);
    let required = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    let missing: Vec<&str> = required.iter().filter_map(Value::as_str).filter(|r| !out.contains_key(*r)).collect();
    if !missing.is_empty() {
        return Err(format!("required field `{}` has no default", missing.join("`, `")));
    }
    let problems = violations(schema, &out);
    if !problems.is_empty() {
        return Err(format!("the defaults do not fit the requested schema: {}", problems.join("; ")));
    }
    Ok(out)
}

/// Fills the fields the user left out from their defaults (SEP-1034).
pub fn fill_defaults(schema: &Value, answer: &mut Map<String, Value>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            if let Some(d) = prop.get("default")
                && !answer.contains_key(name)
            {
                answer.insert(name.clone(), d.clone());
            }
        }
    }
}

/// The violations of `answer` against the requested schema, one line each (empty: valid).
pub fn violations(schema: &Value, answer: &Map<String, Value>) -> Vec<String> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => return vec![format!("the requested schema is not valid JSON Schema: {e}")],
    };
    let instance = Value::Object(answer.clone());
    validator
        .iter_errors(&instance)
        .map(|err| {
            let path = err.instance_path().to_string();
            let path = if path.is_empty() { "(root)".to_string() } else { path };
            format!("{path}: {err}")
        })
        .collect()
}

/// `s` on one line, at most `max` characters (`…` when cut).
pub fn shorten(s: &str, max: usize) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max {
        one
    } else {
        let mut cut: String = one.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "Ada"},
            "age": {"type": "integer", "minimum": 0, "default": 36},
            "color": {"type": "string", "enum": ["red", "green"], "default": "green"},
            "ok": {"type": "boolean", "default": true},
            "note": {"type": "string"}
        }, "required": ["name", "age"]})
    }

    #[test]
    fn defaults_fill_every_field_that_has_one() {
        let m = accept_defaults(&form()).unwrap();
        assert_eq!(Value::Object(m), json!({"name": "Ada", "age": 36, "color": "green", "ok": true}));
    }

    #[test]
    fn a_required_field_without_default_declines() {
        let mut s = form();
        s["required"] = json!(["note"]);
        assert_eq!(accept_defaults(&s), Err("required field `note` has no default".into()));
    }

    /// A multi-select (SEP-1330): an array of enum items, titled (`anyOf` of `{const, title}`) or not.
    fn multi(default: Value) -> Value {
        json!({"type": "object", "properties": {
            "tags": {"type": "array", "minItems": 1, "maxItems": 2, "default": default,
                     "items": {"anyOf": [{"const": "bug", "title": "Bug"}, {"const": "docs", "title": "Docs"}, {"const": "perf", "title": "Perf"}]}},
            "days": {"type": "array", "items": {"type": "string", "enum": ["mon", "tue"]}, "default": ["tue"]}
        }, "required": ["tags"]})
    }

    #[test]
    fn array_defaults_are_used_and_checked_against_the_enum() {
        let m = accept_defaults(&multi(json!(["bug", "perf"]))).unwrap();
        assert_eq!(Value::Object(m), json!({"tags": ["bug", "perf"], "days": ["tue"]}));
        let why = accept_defaults(&multi(json!(["bug", "urgent"]))).unwrap_err();
        assert!(why.starts_with("the defaults do not fit the requested schema: /tags/1: "), "{why}");
        assert!(why.contains("\"urgent\""), "{why}");
        let why = accept_defaults(&multi(json!(["bug", "docs", "perf"]))).unwrap_err();
        assert!(why.contains("/tags: "), "{why}");
    }

    #[test]
    fn multi_select_answers_are_validated() {
        let s = multi(json!([]));
        let answer = |v: Value| v.as_object().cloned().unwrap();
        assert!(violations(&s, &answer(json!({"tags": ["docs", "bug"], "days": []}))).is_empty());
        let v = violations(&s, &answer(json!({"tags": ["docs", "nope"]})));
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].starts_with("/tags/1: "), "{v:?}");
        let v = violations(&s, &answer(json!({"tags": [], "days": ["sun"]})));
        assert_eq!(v.len(), 2, "too few tags and a day outside the enum: {v:?}");
        assert_eq!(violations(&s, &answer(json!({"tags": "bug"}))).len(), 1, "not an array");
    }

    #[test]
    fn answers_are_validated_against_the_schema() {
        let mut a = Map::new();
        a.insert("name".into(), json!("x"));
        a.insert("age".into(), json!(-1));
        let v = violations(&form(), &a);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].starts_with("/age"), "{v:?}");
        let mut b = Map::new();
        fill_defaults(&form(), &mut b);
        assert!(violations(&form(), &b).is_empty());
    }

    fn request(text: &str, max_tokens: u32) -> SampleRequest {
        SampleRequest {
            server: "s".into(),
            system: Some("sys".into()),
            messages: vec![SampleMessage { assistant: false, text: text.into() }],
            max_tokens,
            stop: vec!["END".into()],
            model: None,
        }
    }

    #[test]
    fn the_worst_case_bounds_the_text_by_its_bytes() {
        let r = request("héllo", 100);
        assert_eq!(r.input_bytes(), 3 + 6 + 3);
        assert_eq!(r.worst_case(), 12 + REQUEST_FRAMING_TOKENS + MESSAGE_FRAMING_TOKENS + 100);
    }

    #[test]
    fn reservations_hold_the_budget_until_settled_or_dropped() {
        let host = Host::default();
        let a = host.reserve("s", 60, Some(100)).unwrap();
        let over = host.reserve("s", 50, Some(100)).err().unwrap();
        assert_eq!((over.used, over.reserved, over.need), (0, 60, 50));
        assert!(over.to_string().contains("may use up to 50 tokens"), "{over}");
        assert!(
            over.to_string().contains("40 of 100 are left (0 used, 60 more reserved by requests in flight"),
            "{over}"
        );
        assert_eq!(a.settle(Some(20)), 20);
        let b = host.reserve("s", 50, Some(100)).unwrap();
        drop(b);
        assert_eq!(host.used("s"), 20, "a dropped reservation charges nothing");
        // Not reported: the whole reservation is charged.
        assert_eq!(host.reserve("s", 80, Some(100)).unwrap().settle(None), 80);
        let spent = host.reserve("s", 1, Some(100)).err().unwrap();
        assert_eq!(
            spent.to_string(),
            "the sampling budget of server `s` is spent (100 of 100 tokens, `sampling_budget`)"
        );
        // Other servers and no budget are not limited by it.
        assert!(host.reserve("t", 100, Some(100)).is_ok());
        assert!(host.reserve("s", u64::MAX, None).is_ok());
    }

    #[test]
    fn only_https_and_local_http_urls_are_offered() {
        let ok = url_to_visit("https://example.com/connect?id=42").unwrap();
        assert_eq!((ok.url.as_str(), ok.host.as_str()), ("https://example.com/connect?id=42", "example.com"));
        // Where it really leads, whatever the text before `@` says.
        assert_eq!(url_to_visit("https://bank.example@evil.example/x").unwrap().host, "evil.example");
        // International names in punycode; controls and spaces in the path percent-encoded.
        assert_eq!(url_to_visit("https://bücher.example/").unwrap().host, "xn--bcher-kva.example");
        assert_eq!(url_to_visit("https://a.example/p\u{1b}[2J q").unwrap().url, "https://a.example/p%1B[2J%20q");
        for local in ["http://127.0.0.1:8765/cb", "http://localhost/cb", "http://[::1]/cb"] {
            assert!(url_to_visit(local).is_ok(), "{local}");
        }
        for (bad, why) in [
            ("file:///tmp/evil.desktop", "not `file:` URLs"),
            ("javascript:alert(1)", "not `javascript:` URLs"),
            ("data:text/html,hi", "not `data:` URLs"),
            ("vscode://x/y", "not `vscode:` URLs"),
            ("http://example.com/", "an http URL is opened only when it leads to this machine"),
            ("https://exa\u{1b}mple.com/", "not a valid URL"),
            ("not a url", "not a valid URL"),
        ] {
            let e = url_to_visit(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
