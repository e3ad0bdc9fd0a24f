//! The user and the host's model in the loop: what the MCP layer needs from above to answer a
//! server's elicitation and sampling requests, without importing it.
//!
//! - [`Interaction`]: the terminal (implemented by `cli` with its prompts): elicitation forms,
//!   URL-mode confirmation, approval of a sampling request, one-line notices on stderr.
//! - [`Sampler`]: the configured LLM provider (implemented above `agent`), answering a
//!   provider-neutral [`SampleRequest`].
//! - [`Host`]: where the manager keeps both (installed after it is created) and the per-run
//!   sampling token use of each server (`sampling_budget`).
//!
//! Time spent asking is not counted by any timeout (`util::clock`).
//!
//! The policies themselves (`elicitation`, `sampling` on a server's entry) are applied by the
//! client handler (`handler.rs`); the pure parts (defaults, validation) live here.

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

/// The host model's answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SampleAnswer {
    pub text: String,
    pub model: String,
    /// MCP's names: `endTurn`, `stopSequence`, `maxTokens`.
    pub stop_reason: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// The terminal. Methods block (they run in `spawn_blocking`); only one prompt is shown at a time.
pub trait Interaction: Send + Sync {
    /// Whether prompts can be shown (stdin and stderr are terminals).
    fn is_terminal(&self) -> bool;
    /// A form for `schema` (a flat object of primitive fields and multi-select enum arrays); the
    /// answer is validated by the caller.
    fn elicit_form(&self, server: &str, message: &str, schema: &Value, problems: &[String]) -> Decision;
    /// Shows `url` and the server's reason, offers to open it, waits for the user's confirmation.
    fn elicit_url(&self, server: &str, message: &str, url: &str) -> Decision;
    /// Shows a sampling request and asks whether to send it to the model.
    fn approve_sampling(&self, request: &SampleRequest) -> bool;
    /// One line on stderr about `server` (what was sampled, a declined elicitation).
    fn notice(&self, server: &str, text: &str);
}

/// The host's model.
pub trait Sampler: Send + Sync {
    fn sample<'a>(&'a self, request: &'a SampleRequest) -> BoxFuture<'a, Result<SampleAnswer, String>>;
}

/// The interaction and sampler of a manager, and the sampling tokens each server used this run.
#[derive(Default)]
pub struct Host {
    interaction: RwLock<Option<Arc<dyn Interaction>>>,
    sampler: RwLock<Option<Arc<dyn Sampler>>>,
    used: Mutex<HashMap<String, u64>>,
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

    /// Tokens `server`'s sampling requests used this run.
    pub fn used(&self, server: &str) -> u64 {
        self.used.lock().map(|u| u.get(server).copied().unwrap_or(0)).unwrap_or(0)
    }

    pub fn add_used(&self, server: &str, tokens: u64) {
        if let Ok(mut u) = self.used.lock() {
            *u.entry(server.to_string()).or_default() += tokens;
        }
    }
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
}
