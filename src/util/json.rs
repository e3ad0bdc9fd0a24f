//! JSON helpers shared by the layers that read schemas and results: the kind of a value for
//! error messages, and resolving a local `$ref` (`#/$defs/Name`) inside a schema.

use serde_json::Value;

/// What kind of JSON value `v` is, for error messages: `a string`, `an array`, `null`.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The JSON Pointer of a local `$ref`: `#` → `""` (the root), `#/$defs/a%20b` → `/$defs/a b`.
/// A `$ref` is a URI fragment, so percent-escapes are decoded; the pointer's own `~0`/`~1`
/// escapes stay for [`Value::pointer`]. `None` for a reference to another document.
pub fn local_ref_pointer(reference: &str) -> Option<String> {
    let path = reference.strip_prefix('#')?;
    if !path.is_empty() && !path.starts_with('/') {
        return None;
    }
    Some(percent_decode(path))
}

/// The target of a local `$ref` (`#`, `#/$defs/Name`, `#/definitions/a~1b`) inside `root`;
/// `None` for a reference that is not local or not there.
pub fn resolve_local_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    root.pointer(&local_ref_pointer(reference)?)
}

fn percent_decode(p: &str) -> String {
    if !p.contains('%') {
        return p.to_string();
    }
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).map(|d| d as u8)
    }
    let bytes = p.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (bytes.get(i + 1).and_then(|b| hex(*b)), bytes.get(i + 2).and_then(|b| hex(*b)))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| p.to_string())
}

/// The last segment of a `$ref`, the name a reader knows the target by (`#/$defs/Node` → `Node`).
pub fn ref_name(reference: &str) -> &str {
    reference.rsplit('/').next().unwrap_or(reference)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn local_refs() {
        let root = json!({"$defs": {"a/b": {"type": "string"}, "N": {"type": "integer"}}});
        assert_eq!(resolve_local_ref(&root, "#/$defs/N"), Some(&json!({"type": "integer"})));
        assert_eq!(resolve_local_ref(&root, "#/$defs/a~1b"), Some(&json!({"type": "string"})));
        assert_eq!(resolve_local_ref(&root, "#"), Some(&root));
        assert_eq!(resolve_local_ref(&root, "other.json#/x"), None);
        assert_eq!(resolve_local_ref(&root, "#/$defs/missing"), None);
        assert_eq!(resolve_local_ref(&root, "#/$defs/a%7E1b"), Some(&json!({"type": "string"})));
        assert_eq!(local_ref_pointer("#/$defs/a%20b").as_deref(), Some("/$defs/a b"));
        assert_eq!(local_ref_pointer("#foo"), None);
        assert_eq!(ref_name("#/$defs/Node"), "Node");
        assert_eq!(json_kind(&json!([])), "an array");
    }
}
