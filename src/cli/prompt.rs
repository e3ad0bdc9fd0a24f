//! Terminal prompts on stderr (`dialoguer`): a JSON Schema object turned into questions, one per
//! property, and the answers into a JSON object. Used by `agent mcp call --interactive`; meant
//! for every prompt the CLI asks (elicitation forms, approvals), so it knows nothing of MCP.
//!
//! Each property gets: its description (and title) on a line of its own, then a prompt naming
//! it, `*` when it is required, and its type. Enums and booleans are a list to pick from (with
//! `(not set)` when the property is optional), showing the choices' titles (`oneOf`/`anyOf` of
//! `{const, title}`, legacy `enumNames`) and answering their values; an array of enum items is a
//! multi-select (space toggles, Enter confirms) held to `minItems`/`maxItems` (at least one when
//! required, unless `minItems` is 0); strings, integers and numbers are typed, checked
//! as they are entered (a wrong type is said and asked again), with the schema's `default`
//! offered; arrays, objects and anything the schema leaves open take JSON text. Local `$ref`s
//! and `anyOf`/`oneOf` with `null` (optional values) are followed. Prompts need stdin and
//! stderr to be terminals ([`interactive`]); they block, so async callers run them in
//! `spawn_blocking`.
//!
//! A schema comes from a server (a tool's input schema, an elicitation's requested schema), so
//! every text of it that is shown (names, titles, descriptions, choices, defaults) goes through
//! `output::terminal_line` first: shown, never obeyed by the terminal. Answers keep the schema's
//! own values.

use std::borrow::Cow;
use std::io::IsTerminal;

use dialoguer::console::{Term, style};
use dialoguer::theme::{ColorfulTheme, SimpleTheme, Theme};
use dialoguer::{Confirm, Input, MultiSelect, Select};
use serde_json::{Map, Value};

use super::output::terminal_line;
use crate::util::json::resolve_local_ref;

/// Whether prompts can be shown: stdin and stderr are both terminals.
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// What a property asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Text,
    Integer,
    Number,
    Boolean,
    /// One of these values (`enum`, `const`, or `anyOf`/`oneOf` of them).
    Choice(Vec<Value>),
    /// Several of these values: an array whose items are a `Choice` (`minItems`, `maxItems`).
    Many {
        choices: Vec<Value>,
        min: Option<usize>,
        max: Option<usize>,
    },
    /// JSON text: `array`, `object`, or `value` when the schema allows several kinds.
    Json(&'static str),
}

/// One property of an object schema, as asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property's name as the schema has it (the key of its answer).
    pub name: String,
    /// Title and description as shown (sanitised for the terminal).
    pub title: Option<String>,
    pub description: Option<String>,
    pub kind: Kind,
    pub required: bool,
    /// `null` is allowed (`type: [.., "null"]`, `anyOf` with `{"type": "null"}`).
    pub nullable: bool,
    pub default: Option<Value>,
    /// The titles of `Choice`/`Many` values, by position (`None`: the value is shown), as shown.
    pub titles: Vec<Option<String>>,
}

impl Field {
    /// The name as shown.
    fn shown_name(&self) -> Cow<'_, str> {
        terminal_line(&self.name)
    }

    /// `name* (integer)`, `mode (choice)`, `labels (JSON array)`.
    pub fn label(&self) -> String {
        let star = if self.required { "*" } else { "" };
        let kind = match &self.kind {
            Kind::Text => "string",
            Kind::Integer => "integer",
            Kind::Number => "number",
            Kind::Boolean => "boolean",
            Kind::Choice(_) => "choice",
            Kind::Many { .. } => return format!("{}{star} (choices{})", self.shown_name(), self.bounds()),
            Kind::Json("array") => "JSON array",
            Kind::Json("object") => "JSON object",
            Kind::Json(_) => "JSON",
        };
        format!("{}{star} ({kind})", self.shown_name())
    }

    /// `, 1 to 2`, `, at least 1`, `, at most 2` or nothing: how many of a `Many` to pick.
    fn bounds(&self) -> String {
        match (self.min_picks(), self.max_picks()) {
            (0, None) => String::new(),
            (lo, None) => format!(", at least {lo}"),
            (0, Some(hi)) => format!(", at most {hi}"),
            (lo, Some(hi)) if lo == hi => format!(", exactly {lo}"),
            (lo, Some(hi)) => format!(", {lo} to {hi}"),
        }
    }

    /// The fewest choices of a `Many`: `minItems`, else 1 when required and 0 when not.
    pub fn min_picks(&self) -> usize {
        match self.kind {
            Kind::Many { min: Some(m), .. } => m,
            Kind::Many { min: None, .. } => usize::from(self.required),
            _ => 0,
        }
    }

    /// The most choices of a `Many` (`maxItems`), when bounded.
    fn max_picks(&self) -> Option<usize> {
        match self.kind {
            Kind::Many { max, .. } => max,
            _ => None,
        }
    }

    /// Whether `n` choices of a `Many` are allowed; `Err` says how many to pick.
    pub fn check_picks(&self, n: usize) -> Result<(), String> {
        let lo = self.min_picks();
        match self.max_picks() {
            Some(hi) if n > hi => Err(format!("`{}`: choose at most {hi} (got {n})", self.shown_name())),
            _ if n < lo => Err(format!("`{}`: choose at least {lo} (got {n})", self.shown_name())),
            _ => Ok(()),
        }
    }

    /// How choice `i` is shown: its title, else its value.
    pub fn choice_label(&self, i: usize, value: &Value) -> String {
        self.titles.get(i).cloned().flatten().unwrap_or_else(|| terminal_line(&choice_text(value)).into_owned())
    }

    /// The answer typed for this field: `Ok(None)` leaves the property out; `Err` says what is
    /// wrong (the prompt shows it and asks again).
    pub fn parse(&self, text: &str) -> Result<Option<Value>, String> {
        let t = text.trim();
        if t.is_empty() {
            return match (&self.default, self.required) {
                (Some(d), _) => Ok(Some(d.clone())),
                (None, false) => Ok(None),
                (None, true) => Err(format!("`{}` is required", self.shown_name())),
            };
        }
        if self.nullable && t == "null" && !matches!(self.kind, Kind::Text) {
            return Ok(Some(Value::Null));
        }
        match &self.kind {
            Kind::Text => Ok(Some(Value::String(text.to_string()))),
            Kind::Integer => match serde_json::from_str::<Value>(t) {
                Ok(v @ Value::Number(_)) if v.is_i64() || v.is_u64() => Ok(Some(v)),
                _ => Err(format!("`{t}` is not an integer")),
            },
            Kind::Number => match serde_json::from_str::<Value>(t) {
                Ok(v @ Value::Number(_)) => Ok(Some(v)),
                _ => Err(format!("`{t}` is not a number")),
            },
            Kind::Boolean => match t.to_ascii_lowercase().as_str() {
                "true" | "yes" | "y" => Ok(Some(Value::Bool(true))),
                "false" | "no" | "n" => Ok(Some(Value::Bool(false))),
                _ => Err(format!("`{t}` is not true or false")),
            },
            Kind::Choice(choices) => {
                let v = serde_json::from_str::<Value>(t).unwrap_or_else(|_| Value::String(t.to_string()));
                if choices.contains(&v) { Ok(Some(v)) } else { Err(format!("`{t}` is not one of the choices")) }
            }
            Kind::Many { choices, .. } => {
                let v = serde_json::from_str::<Value>(t).map_err(|e| format!("not valid JSON: {e}"))?;
                let Some(items) = v.as_array() else {
                    return Err(format!("expected a JSON array, got {}", crate::util::json::json_kind(&v)));
                };
                if let Some(bad) = items.iter().find(|i| !choices.contains(i)) {
                    return Err(format!("`{}` is not one of the choices", choice_text(bad)));
                }
                self.check_picks(items.len())?;
                Ok(Some(v))
            }
            Kind::Json(kind) => {
                let v = serde_json::from_str::<Value>(t).map_err(|e| format!("not valid JSON: {e}"))?;
                let fits = match *kind {
                    "array" => v.is_array(),
                    "object" => v.is_object(),
                    _ => true,
                };
                if fits || (self.nullable && v.is_null()) {
                    Ok(Some(v))
                } else {
                    Err(format!("expected a JSON {kind}, got {}", crate::util::json::json_kind(&v)))
                }
            }
        }
    }
}

/// The properties of an object schema, in their declared order.
pub fn fields(schema: &Value) -> Vec<Field> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    props.iter().map(|(name, prop)| field(name, prop, schema, required.contains(&name.as_str()))).collect()
}

fn field(name: &str, prop: &Value, root: &Value, required: bool) -> Field {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(|t| terminal_line(t).into_owned());
    let mut title = text(prop, "title");
    let mut description = text(prop, "description");
    let default = prop.get("default").cloned();
    let mut nullable = false;
    let mut target = deref(prop, root);
    // `anyOf`/`oneOf` with `{"type": "null"}` and one other alternative: that alternative, optional.
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = target.get(key).and_then(Value::as_array) {
            let (nulls, others): (Vec<&Value>, Vec<&Value>) = alts
                .iter()
                .map(|a| deref(a, root))
                .partition(|a| a.get("type").and_then(Value::as_str) == Some("null"));
            nullable |= !nulls.is_empty();
            if let Some((values, titles)) = const_choices(&others) {
                let kind = Kind::Choice(values);
                return Field { name: name.into(), title, description, kind, required, nullable, default, titles };
            }
            if let [one] = others.as_slice() {
                target = one;
            } else {
                let (kind, titles) = (Kind::Json("value"), Vec::new());
                return Field { name: name.into(), title, description, kind, required, nullable, default, titles };
            }
        }
    }
    if title.is_none() {
        title = text(target, "title");
    }
    if description.is_none() {
        description = text(target, "description");
    }
    let mut types: Vec<&str> = match target.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.contains(&"null") {
        nullable = true;
        types.retain(|t| *t != "null");
    }
    let mut titles = Vec::new();
    let kind = if let Some((values, names, had_null)) = enum_choices(target) {
        nullable |= had_null;
        titles = names;
        Kind::Choice(values)
    } else if let Some(c) = target.get("const") {
        Kind::Choice(vec![c.clone()])
    } else {
        match types.as_slice() {
            ["string"] => Kind::Text,
            ["integer"] => Kind::Integer,
            ["number"] => Kind::Number,
            ["boolean"] => Kind::Boolean,
            ["array"] => match target.get("items").map(|i| deref(i, root)).and_then(|i| item_choices(i, root)) {
                Some((choices, names)) => {
                    titles = names;
                    let count = |k: &str| target.get(k).and_then(Value::as_u64).and_then(|n| usize::try_from(n).ok());
                    Kind::Many { choices, min: count("minItems"), max: count("maxItems") }
                }
                None => Kind::Json("array"),
            },
            ["object"] => Kind::Json("object"),
            _ => Kind::Json("value"),
        }
    };
    Field { name: name.into(), title, description, kind, required, nullable, default, titles }
}

/// `enum` (nulls left out: the third value says whether there was one) with the titles of
/// legacy `enumNames`.
fn enum_choices(schema: &Value) -> Option<(Vec<Value>, Vec<Option<String>>, bool)> {
    let values = schema.get("enum").and_then(Value::as_array)?;
    let names = schema.get("enumNames").and_then(Value::as_array);
    let title = |i: usize| names.and_then(|n| n.get(i)).and_then(Value::as_str).map(|t| terminal_line(t).into_owned());
    let (kept, titles): (Vec<Value>, Vec<Option<String>>) =
        values.iter().enumerate().filter(|(_, v)| !v.is_null()).map(|(i, v)| (v.clone(), title(i))).unzip();
    let had_null = kept.len() < values.len();
    Some((kept, titles, had_null))
}

/// Alternatives that are each one value (`const`, or a one-value `enum`), with their titles.
fn const_choices(alts: &[&Value]) -> Option<(Vec<Value>, Vec<Option<String>>)> {
    if alts.is_empty() {
        return None;
    }
    alts.iter()
        .map(|a| {
            let one = |e: &Value| match e.as_array()?.as_slice() {
                [v] => Some(v.clone()),
                _ => None,
            };
            let v = a.get("const").cloned().or_else(|| a.get("enum").and_then(one))?;
            Some((v, a.get("title").and_then(Value::as_str).map(|t| terminal_line(t).into_owned())))
        })
        .collect::<Option<Vec<_>>>()
        .map(|pairs| pairs.into_iter().unzip())
}

/// The choices of a multi-select's `items`: an `enum`, or `anyOf`/`oneOf` of `{const, title}`.
fn item_choices(items: &Value, root: &Value) -> Option<(Vec<Value>, Vec<Option<String>>)> {
    if let Some((values, titles, _)) = enum_choices(items) {
        return Some((values, titles));
    }
    let alts = items.get("anyOf").or_else(|| items.get("oneOf")).and_then(Value::as_array)?;
    let alts: Vec<&Value> = alts.iter().map(|a| deref(a, root)).collect();
    const_choices(&alts)
}

/// Follows local `$ref`s (a few levels; a cycle stops there).
fn deref<'a>(mut v: &'a Value, root: &'a Value) -> &'a Value {
    for _ in 0..8 {
        match v.get("$ref").and_then(Value::as_str).and_then(|r| resolve_local_ref(root, r)) {
            Some(t) => v = t,
            None => break,
        }
    }
    v
}

/// A choice as shown in a list: strings bare, anything else as JSON.
fn choice_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

const NOT_SET: &str = "(not set)";

fn theme() -> Box<dyn Theme> {
    if super::log::stderr_color() { Box::new(ColorfulTheme::default()) } else { Box::new(SimpleTheme) }
}

/// Asks for the properties of `schema` on the terminal (stderr), filling `answers`: a property
/// left empty is removed. With `only`, just those properties are asked (the others keep their
/// answers); a property already answered offers that answer again.
pub fn ask_object(schema: &Value, answers: &mut Map<String, Value>, only: Option<&[String]>) -> std::io::Result<()> {
    let term = Term::stderr();
    let theme = theme();
    for f in fields(schema) {
        if only.is_some_and(|o| !o.iter().any(|n| n == &f.name)) {
            continue;
        }
        let mut about: Vec<String> = Vec::new();
        if let Some(t) = f.title.as_deref().filter(|t| !t.eq_ignore_ascii_case(&f.name)) {
            about.push(t.to_string());
        }
        if let Some(d) = f.description.as_deref() {
            about.push(d.split_whitespace().collect::<Vec<_>>().join(" "));
        }
        if !about.is_empty() {
            let line = format!("  {}", about.join(": "));
            term.write_line(&if super::log::stderr_color() { style(line).dim().to_string() } else { line })?;
        }
        let previous = answers.get(&f.name).cloned();
        let answer = match &f.kind {
            Kind::Choice(_) | Kind::Boolean => pick(&term, theme.as_ref(), &f, previous.as_ref())?,
            Kind::Many { .. } => pick_many(&term, theme.as_ref(), &f, previous.as_ref())?,
            _ => type_in(&term, theme.as_ref(), &f, previous.as_ref())?,
        };
        match answer {
            Some(v) => {
                answers.insert(f.name.clone(), v);
            }
            None => {
                answers.remove(&f.name);
            }
        }
    }
    Ok(())
}

/// A list to pick from: the choices (or true/false), `(not set)` first when optional.
fn pick(term: &Term, theme: &dyn Theme, f: &Field, previous: Option<&Value>) -> std::io::Result<Option<Value>> {
    let mut values: Vec<Option<Value>> = Vec::new();
    if !f.required {
        values.push(None);
    }
    match &f.kind {
        Kind::Choice(choices) => values.extend(choices.iter().cloned().map(Some)),
        _ => values.extend([Some(Value::Bool(true)), Some(Value::Bool(false))]),
    }
    let offset = usize::from(!f.required);
    let items: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| v.as_ref().map_or(NOT_SET.to_string(), |v| f.choice_label(i - offset, v)))
        .collect();
    let preferred = previous.or(f.default.as_ref());
    let default = preferred.and_then(|p| values.iter().position(|v| v.as_ref() == Some(p))).unwrap_or(0);
    let chosen = Select::with_theme(theme)
        .with_prompt(f.label())
        .items(&items)
        .default(default)
        .interact_on(term)
        .map_err(std::io::Error::from)?;
    Ok(values.get(chosen).cloned().flatten())
}

/// Several choices (space toggles, Enter confirms), asked again until their number fits. Nothing
/// picked leaves an optional property out, or sends `[]` when a default would otherwise replace it.
fn pick_many(term: &Term, theme: &dyn Theme, f: &Field, previous: Option<&Value>) -> std::io::Result<Option<Value>> {
    let Kind::Many { choices, .. } = &f.kind else { return Ok(None) };
    let items: Vec<String> = choices.iter().enumerate().map(|(i, v)| f.choice_label(i, v)).collect();
    let preferred = previous.or(f.default.as_ref()).and_then(Value::as_array);
    let mut checked: Vec<bool> = choices.iter().map(|c| preferred.is_some_and(|p| p.contains(c))).collect();
    let hint = "  (space toggles a choice, Enter confirms)";
    term.write_line(&if super::log::stderr_color() { style(hint).dim().to_string() } else { hint.to_string() })?;
    loop {
        let picked = MultiSelect::with_theme(theme)
            .with_prompt(f.label())
            .items(&items)
            .defaults(&checked)
            .interact_on(term)
            .map_err(std::io::Error::from)?;
        match f.check_picks(picked.len()) {
            Ok(()) if picked.is_empty() && f.default.is_none() && !f.required => return Ok(None),
            Ok(()) => return Ok(Some(Value::Array(picked.iter().filter_map(|&i| choices.get(i).cloned()).collect()))),
            Err(why) => {
                term.write_line(&format!("  ! {why}"))?;
                checked = (0..choices.len()).map(|i| picked.contains(&i)).collect();
            }
        }
    }
}

/// A typed answer, checked as it is entered.
fn type_in(term: &Term, theme: &dyn Theme, f: &Field, previous: Option<&Value>) -> std::io::Result<Option<Value>> {
    let shown = |v: &Value| match v {
        Value::String(s) if f.kind == Kind::Text => s.clone(),
        other => other.to_string(),
    };
    let mut input = Input::<String>::with_theme(theme).with_prompt(f.label()).allow_empty(true);
    // The default as shown (`[1]`); dialoguer answers it for an empty line, and that answer
    // stands for the default itself (which may hold what the display replaced).
    let default_shown = f.default.as_ref().map(|d| terminal_line(&shown(d)).into_owned());
    if let Some(d) = &default_shown {
        input = input.default(d.clone()).show_default(true);
    }
    if let Some(p) = previous {
        input = input.with_initial_text(terminal_line(&shown(p)));
    }
    let checked = f.clone();
    let default_answer = default_shown.clone();
    let text = input
        .validate_with(
            move |s: &String| {
                if default_answer.as_ref() == Some(s) { Ok(()) } else { checked.parse(s).map(|_| ()) }
            },
        )
        .interact_text_on(term)
        .map_err(std::io::Error::from)?;
    if default_shown.as_ref() == Some(&text) {
        return Ok(f.default.clone());
    }
    f.parse(&text).map_err(std::io::Error::other)
}

/// A yes/no question on stderr.
pub fn confirm(question: &str, default: bool) -> std::io::Result<bool> {
    let theme = theme();
    Confirm::with_theme(theme.as_ref())
        .with_prompt(question)
        .default(default)
        .interact_on(&Term::stderr())
        .map_err(std::io::Error::from)
}

/// A choice from a list on stderr; returns the index picked.
pub fn select(question: &str, items: &[&str], default: usize) -> std::io::Result<usize> {
    let theme = theme();
    Select::with_theme(theme.as_ref())
        .with_prompt(question)
        .items(items)
        .default(default)
        .interact_on(&Term::stderr())
        .map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Value {
        json!({
            "$defs": {"Priority": {"description": "How urgent.", "type": "string", "enum": ["low", "normal", "high"]}},
            "type": "object",
            "properties": {
                "title": {"description": "Title of the ticket.", "type": "string"},
                "priority": {"$ref": "#/$defs/Priority"},
                "hours": {"type": "number"},
                "notify": {"type": "boolean"},
                "copies": {"type": "integer", "default": 1},
                "labels": {"type": ["array", "null"], "items": {"type": "string"}},
                "mode": {"anyOf": [{"$ref": "#/$defs/Priority"}, {"type": "null"}]},
                "either": {"oneOf": [{"const": "a"}, {"const": 2}]}
            },
            "required": ["title", "priority", "hours", "notify"]
        })
    }

    #[test]
    fn properties_become_fields_with_kinds_marks_and_defaults() {
        let f = fields(&form());
        let labels: Vec<String> = f.iter().map(Field::label).collect();
        assert_eq!(
            labels,
            [
                "title* (string)",
                "priority* (choice)",
                "hours* (number)",
                "notify* (boolean)",
                "copies (integer)",
                "labels (JSON array)",
                "mode (choice)",
                "either (choice)"
            ]
        );
        assert_eq!(f[0].description.as_deref(), Some("Title of the ticket."));
        assert_eq!(f[1].kind, Kind::Choice(vec![json!("low"), json!("normal"), json!("high")]));
        assert_eq!(f[1].description.as_deref(), Some("How urgent."));
        assert_eq!(f[4].default, Some(json!(1)));
        assert!(f[5].nullable && f[6].nullable && !f[0].nullable);
        assert_eq!(f[6].kind, f[1].kind);
        assert_eq!(f[7].kind, Kind::Choice(vec![json!("a"), json!(2)]));
        assert!(fields(&json!({"type": "object"})).is_empty());
    }

    #[test]
    fn answers_are_parsed_by_kind_and_wrong_ones_said() {
        let f = fields(&form());
        assert_eq!(f[0].parse("  two words "), Ok(Some(json!("  two words "))));
        assert_eq!(f[0].parse(""), Err("`title` is required".into()));
        assert_eq!(f[2].parse("2.5"), Ok(Some(json!(2.5))));
        assert_eq!(f[2].parse("abc"), Err("`abc` is not a number".into()));
        assert_eq!(f[4].parse("3"), Ok(Some(json!(3))));
        assert_eq!(f[4].parse("3.5"), Err("`3.5` is not an integer".into()));
        assert_eq!(f[4].parse(""), Ok(Some(json!(1))), "the default");
        assert_eq!(f[3].parse("yes"), Ok(Some(json!(true))));
        assert_eq!(f[5].parse(""), Ok(None), "optional, left out");
        assert_eq!(f[5].parse("[\"a\", \"b\"]"), Ok(Some(json!(["a", "b"]))));
        assert_eq!(f[5].parse("null"), Ok(Some(Value::Null)));
        assert_eq!(f[5].parse("{}"), Err("expected a JSON array, got an object".into()));
        assert!(f[5].parse("[1,").unwrap_err().starts_with("not valid JSON: "));
        assert_eq!(f[1].parse("normal"), Ok(Some(json!("normal"))));
        assert_eq!(f[1].parse("urgent"), Err("`urgent` is not one of the choices".into()));
    }

    #[test]
    fn choice_titles_are_shown_and_values_answered() {
        let s = json!({"type": "object", "properties": {
            "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l"}]},
            "mode": {"anyOf": [{"type": "string", "enum": ["x", "y"]}, {"type": "null"}]}
        }});
        let f = fields(&s);
        assert_eq!(f[0].kind, Kind::Choice(vec![json!("r"), json!("g")]));
        assert_eq!(f[0].choice_label(1, &json!("g")), "Green");
        assert_eq!(f[1].kind, Kind::Choice(vec![json!("s"), json!("l")]));
        assert_eq!(f[1].choice_label(0, &json!("s")), "Small");
        assert_eq!(f[1].choice_label(1, &json!("l")), "l", "no title: the value");
        assert_eq!(f[2].kind, Kind::Choice(vec![json!("x"), json!("y")]), "an enum alternative keeps all its values");
        assert!(f[2].nullable);
    }

    #[test]
    fn arrays_of_enum_items_are_multi_selects_with_bounds() {
        let s = json!({"type": "object", "properties": {
            "tags": {"type": "array", "minItems": 1, "maxItems": 2, "default": ["docs"],
                     "items": {"anyOf": [{"const": "bug", "title": "Bug"}, {"const": "docs", "title": "Docs"}]}},
            "days": {"type": "array", "items": {"type": "string", "enum": ["mon", "tue"]}},
            "must": {"type": "array", "items": {"enum": ["a", "b"]}},
            "none_ok": {"type": "array", "minItems": 0, "items": {"enum": ["a"]}},
            "free": {"type": "array", "items": {"type": "string"}}
        }, "required": ["tags", "must", "none_ok"]});
        let f = fields(&s);
        let labels: Vec<String> = f.iter().map(Field::label).collect();
        assert_eq!(
            labels,
            [
                "tags* (choices, 1 to 2)",
                "days (choices)",
                "must* (choices, at least 1)",
                "none_ok* (choices)",
                "free (JSON array)"
            ]
        );
        assert_eq!(f[0].kind, Kind::Many { choices: vec![json!("bug"), json!("docs")], min: Some(1), max: Some(2) });
        assert_eq!(f[0].choice_label(1, &json!("docs")), "Docs");
        assert_eq!(f[1].choice_label(0, &json!("mon")), "mon");
        assert_eq!(f[0].check_picks(3), Err("`tags`: choose at most 2 (got 3)".into()));
        assert_eq!(f[0].check_picks(0), Err("`tags`: choose at least 1 (got 0)".into()));
        assert_eq!(f[0].check_picks(2), Ok(()));
        assert_eq!(f[1].check_picks(0), Ok(()), "optional: none is fine");
        assert!(f[2].check_picks(0).is_err(), "required: at least one");
        assert_eq!(f[3].check_picks(0), Ok(()), "required with minItems 0");
        assert_eq!(f[0].parse(r#"["bug","docs"]"#), Ok(Some(json!(["bug", "docs"]))));
        assert_eq!(f[0].parse(r#"["bug","nope"]"#), Err("`nope` is not one of the choices".into()));
        assert_eq!(f[0].parse(""), Ok(Some(json!(["docs"]))), "the default");
    }
}
