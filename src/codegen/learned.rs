//! Learned result types as TypeScript: a registry [`Shape`] → a type expression, and the
//! output declaration of a tool without an `outputSchema` at each quality level.
//!
//! Field names and enum values come from tool results (server text): they reach the file only
//! through `ts::property_key` / `ts::string_literal`. Inferred types never get an index
//! signature typed `any`: a field that was never observed does not type-check (an object whose
//! fields overflowed the registry's cap gets `[key: string]: unknown`, which still forces a check).

use super::ts::{Doc, property_key, string_literal};
use crate::types::shape::Shape;
use crate::types::{Entry, Quality};

/// How the function of a tool without a declared output schema returns its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returns {
    /// `ToolResponse<Output>`: no type learned yet, or a result of mixed or other kinds.
    Response,
    /// `WithHelpers<Output>`: the learned object, array, text or number type, helpers attached.
    Typed,
}

/// The output declaration and how the function returns it.
pub struct LearnedOutput {
    pub decl: String,
    pub returns: Returns,
    /// One line for the function's `@returns`.
    pub returns_doc: String,
}

/// The output type of a tool at `entry`'s quality (`None` or quality `none`: not learned).
pub fn output(entry: Option<&Entry>, function: &str, output_type: &str) -> LearnedOutput {
    let Some(e) = entry.filter(|e| e.quality > Quality::None) else {
        let mut doc = Doc::new();
        doc.text(&format!(
            "The result of `{function}`: its shape is not known yet (the tool declares no output schema and agent\n\
             has not observed a result). The function returns a `ToolResponse`: read fields with\n\
             `get(key, fallback)`, `has(key)` or `require(key)`, the decoded value with `.raw`. agent learns\n\
             the shape from the results it sees and sharpens this type."
        ));
        return LearnedOutput {
            decl: format!("{}export type {output_type} = unknown;\n", doc.render(0)),
            returns: Returns::Response,
            returns_doc: "A `ToolResponse` over the decoded result (`get`, `has`, `require`, `raw`).".into(),
        };
    };
    let high = e.quality == Quality::High;
    let mut doc = Doc::new();
    doc.text(&format!(
        "The result of `{function}`. Output type inferred from {} observed result{} (quality: {}{}).",
        e.observations,
        if e.observations == 1 { "" } else { "s" },
        e.quality.as_str(),
        if high { "; fields seen in almost every result are required" } else { "; every field is optional" },
    ));
    doc.text("The tool declares no output schema: this is what its results looked like, not a promise.");
    let s = &e.shape;
    let single = kinds(s) == 1 && s.unrecorded == 0;
    let pure_object = s.object.is_some() && single;
    // Objects and arrays carry the helpers themselves; texts and numbers as String / Number objects.
    let carries_helpers = (s.array.is_some() || s.string.is_some() || s.number > 0) && single;
    let (decl, returns) = if pure_object && s.object.as_ref().is_some_and(|o| o.record.is_none()) {
        let body = object_body(s, high, 0);
        (format!("{}export interface {output_type} {body}\n", doc.render(0)), Returns::Typed)
    } else {
        let returns = if pure_object || carries_helpers { Returns::Typed } else { Returns::Response };
        // A text or a number comes back as a String / Number object carrying the helpers: typed
        // as what it is, so `typeof r === "string"` or `const s: string = r` cannot mislead.
        let ty_text = if single && s.string.is_some() {
            doc.text("At run time a `String` object (helpers attached): `String(r)` or `r.raw` is the plain text.");
            "String".to_string()
        } else if single && s.number > 0 {
            doc.text("At run time a `Number` object (helpers attached): `Number(r)` or `r.raw` is the plain number.");
            "Number".to_string()
        } else {
            ty(s, high, 0)
        };
        (format!("{}export type {output_type} = {ty_text};\n", doc.render(0)), returns)
    };
    let returns_doc = match returns {
        Returns::Typed => {
            format!("The decoded result (`{output_type}`), with `get`, `has`, `require` and `raw` attached.")
        }
        Returns::Response => format!("A `ToolResponse` over the decoded result (`{output_type}`)."),
    };
    LearnedOutput { decl, returns, returns_doc }
}

fn kinds(s: &Shape) -> usize {
    [s.null > 0, s.boolean > 0, s.number > 0, s.string.is_some(), s.array.is_some(), s.object.is_some()]
        .into_iter()
        .filter(|b| *b)
        .count()
}

/// The TypeScript type of the values merged into `s`.
pub fn ty(s: &Shape, high: bool, indent: usize) -> String {
    union_members(s, high, indent).join(" | ")
}

/// The members of the union `ty` prints.
fn union_members(s: &Shape, high: bool, indent: usize) -> Vec<String> {
    if s.unrecorded > 0 || kinds(s) == 0 {
        return vec!["unknown".into()];
    }
    let mut members: Vec<String> = Vec::new();
    if let Some(o) = &s.object {
        members.push(match &o.record {
            Some(rec) => format!("Record<string, {}>", ty(rec, high, indent)),
            None => object_body(s, high, indent),
        });
    }
    if let Some(a) = &s.array {
        let items =
            if a.items.count == 0 { vec!["unknown".to_string()] } else { union_members(&a.items, high, indent) };
        members.push(match items.as_slice() {
            [one] => format!("{one}[]"),
            many => format!("({})[]", many.join(" | ")),
        });
    }
    if let Some(st) = &s.string {
        // The registry writes an enum's values only once the field earned it (`EnumRules`).
        match st.enum_values() {
            Some(values) => members.extend(values.into_iter().map(string_literal)),
            None => members.push("string".into()),
        }
    }
    if s.number > 0 {
        members.push("number".into());
    }
    if s.boolean > 0 {
        members.push("boolean".into());
    }
    if s.null > 0 {
        members.push("null".into());
    }
    members
}

/// `{ ... }` for the object part of `s`.
fn object_body(s: &Shape, high: bool, indent: usize) -> String {
    let Some(o) = &s.object else { return "{}".into() };
    if o.fields.is_empty() && !o.overflow {
        return "Record<string, never>".into();
    }
    let pad = "  ".repeat(indent + 1);
    let mut out = String::from("{\n");
    for (name, f) in &o.fields {
        let required = high && o.count > 0 && f.count * 100 >= o.count * 99;
        let presence = (f.count * 100).checked_div(o.count).unwrap_or(0);
        let format = f.string.as_ref().and_then(|s| s.known_format());
        let mut notes = Vec::new();
        if let Some(fmt) = format {
            notes.push(format!("Format: {fmt}."));
        }
        if !required {
            notes.push(format!("Seen in {presence}% of results."));
        }
        if !notes.is_empty() {
            out.push_str(&format!("{pad}/** {} */\n", notes.join(" ")));
        }
        out.push_str(&format!(
            "{pad}{}{}: {};\n",
            property_key(name),
            if required { "" } else { "?" },
            ty(f, high, indent + 1)
        ));
    }
    if o.overflow {
        out.push_str(&format!("{pad}/** More fields than agent records were seen. */\n{pad}[key: string]: unknown;\n"));
    }
    out.push_str(&"  ".repeat(indent));
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn unions_in_arrays_records_and_overflow_print_as_valid_types() {
        let s = Shape::of(&json!([{"a": 1}, "x", null]));
        assert_eq!(ty(&s, false, 0), "({\n  /** Seen in 100% of results. */\n  a?: number;\n} | string | null)[]");
        let ids: serde_json::Map<String, serde_json::Value> =
            (0..10).map(|i| (format!("{}", 100 + i), json!(i))).collect();
        assert_eq!(ty(&Shape::of(&serde_json::Value::Object(ids)), true, 0), "Record<string, number>");
        assert_eq!(ty(&Shape::of(&json!({})), true, 0), "Record<string, never>");
        assert_eq!(ty(&Shape::of(&json!([])), true, 0), "unknown[]");
        let wide: serde_json::Map<String, serde_json::Value> =
            (0..300).map(|i| (format!("field_name_{i}"), json!(i))).collect();
        // Over the property cap: a record, never `any`.
        assert_eq!(ty(&Shape::of(&serde_json::Value::Object(wide)), true, 0), "Record<string, number>");
    }
}
