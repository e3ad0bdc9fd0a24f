//! Edits of a JSON document's text that leave every byte outside the edited member as it was:
//! [`set`] replaces or inserts one object member at a key path, [`remove`] deletes one. Used on
//! files people and other tools own (`.mcp.json`), where a re-serialisation would reorder,
//! reindent or re-escape what `agent` had no business touching.
//!
//! The text must be valid JSON (callers parse it with serde_json first); spans are found by a
//! small scanner over that text. Inserted members follow the indentation of their siblings.
//! Each edit checks itself: the new text must parse to the document the edit means, or the edit
//! falls back to the whole document re-serialised (correct, only less tidy).

use std::ops::Range;

use serde_json::{Map, Value};

/// One member of an object in the text: its key and where it is.
#[derive(Debug, Clone)]
struct Member {
    key: String,
    /// Byte offset of the key's opening quote.
    start: usize,
    /// The value's bytes.
    value: Range<usize>,
}

/// The members of the object whose `{` is at `open`, and the offset of its `}`.
fn members(text: &str, open: usize) -> Option<(Vec<Member>, usize)> {
    let b = text.as_bytes();
    if b.get(open) != Some(&b'{') {
        return None;
    }
    let mut out = Vec::new();
    let mut pos = skip_ws(b, open + 1);
    if b.get(pos) == Some(&b'}') {
        return Some((out, pos));
    }
    loop {
        let start = pos;
        let key_end = string_end(b, pos)?;
        let key: String = serde_json::from_str(&text[start..key_end]).ok()?;
        pos = skip_ws(b, key_end);
        if b.get(pos) != Some(&b':') {
            return None;
        }
        let vstart = skip_ws(b, pos + 1);
        let vend = value_end(b, vstart)?;
        out.push(Member { key, start, value: vstart..vend });
        pos = skip_ws(b, vend);
        match b.get(pos) {
            Some(b',') => pos = skip_ws(b, pos + 1),
            Some(b'}') => return Some((out, pos)),
            _ => return None,
        }
    }
}

fn skip_ws(b: &[u8], mut pos: usize) -> usize {
    while matches!(b.get(pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        pos += 1;
    }
    pos
}

/// The offset just past the string whose opening quote is at `pos`.
fn string_end(b: &[u8], pos: usize) -> Option<usize> {
    if b.get(pos) != Some(&b'"') {
        return None;
    }
    let mut i = pos + 1;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The offset just past the value that starts at `pos`.
fn value_end(b: &[u8], pos: usize) -> Option<usize> {
    match b.get(pos)? {
        b'"' => string_end(b, pos),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = pos;
            while let Some(&c) = b.get(i) {
                match c {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let mut i = pos;
            while b.get(i).is_some_and(|c| !matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')) {
                i += 1;
            }
            (i > pos).then_some(i)
        }
    }
}

/// The indentation of the line that holds offset `pos`.
fn line_indent(text: &str, pos: usize) -> &str {
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let rest = &text[line_start..];
    &rest[..rest.len() - rest.trim_start_matches([' ', '\t']).len()]
}

/// The document's indentation step: the indentation of its first indented line (2 spaces when
/// it has none).
fn indent_unit(text: &str) -> String {
    text.lines()
        .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
        .find(|i| !i.is_empty())
        .unwrap_or("  ")
        .to_string()
}

/// `value` as text for a member indented by `indent` (`None`: a one-line object).
fn render(value: &Value, indent: Option<&str>, unit: &str) -> String {
    match indent {
        None => one_line(value),
        Some(indent) => {
            let mut buf = Vec::new();
            let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
            let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
            if serde::Serialize::serialize(value, &mut ser).is_err() {
                return serde_json::to_string(value).unwrap_or_default();
            }
            String::from_utf8_lossy(&buf).replace('\n', &format!("\n{indent}"))
        }
    }
}

/// `value` on one line, spaced as people write it: `{"a": 1, "b": [2, 3]}`.
fn one_line(value: &Value) -> String {
    match value {
        Value::Object(m) => {
            let items: Vec<String> = m.iter().map(|(k, v)| format!("{}: {}", key_text(k), one_line(v))).collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(one_line).collect::<Vec<_>>().join(", ")),
        scalar => serde_json::to_string(scalar).unwrap_or_default(),
    }
}

fn key_text(key: &str) -> String {
    serde_json::to_string(key).unwrap_or_default()
}

/// `text` with the member at `path` (keys from the root object) set to `value`: its value
/// replaced when it exists, else the member inserted after its last sibling (missing objects on
/// the way are created). `None` when `text` is not a JSON object or something on the path is
/// not an object.
pub fn set(text: &str, path: &[&str], value: &Value) -> Option<String> {
    let mut doc: Value = serde_json::from_str(text).ok()?;
    set_value(&mut doc, path, value.clone())?;
    let unit = indent_unit(text);
    let open = skip_ws(text.as_bytes(), 0);
    let edited = set_at(text, open, path, value, &unit);
    Some(checked(edited, &doc, &unit))
}

/// `text` without the member at `path`; `None` when there is no such member (or `text` is not
/// a JSON object).
pub fn remove(text: &str, path: &[&str]) -> Option<String> {
    let mut doc: Value = serde_json::from_str(text).ok()?;
    let (last, parents) = path.split_last()?;
    let mut obj = &mut doc;
    for k in parents {
        obj = obj.get_mut(*k)?;
    }
    obj.as_object_mut()?.shift_remove(*last)?;
    let unit = indent_unit(text);
    let edited = remove_at(text, skip_ws(text.as_bytes(), 0), path);
    Some(checked(edited, &doc, &unit))
}

/// The edited text when it parses to `doc`, else `doc` re-serialised.
fn checked(edited: Option<String>, doc: &Value, unit: &str) -> String {
    match edited {
        Some(t) if serde_json::from_str::<Value>(&t).ok().as_ref() == Some(doc) => t,
        _ => {
            let mut t = render(doc, Some(""), unit);
            t.push('\n');
            t
        }
    }
}

fn set_value(doc: &mut Value, path: &[&str], value: Value) -> Option<()> {
    let (first, rest) = path.split_first()?;
    let obj = doc.as_object_mut()?;
    if rest.is_empty() {
        obj.insert(first.to_string(), value);
        return Some(());
    }
    let child = obj.entry(first.to_string()).or_insert_with(|| Value::Object(Map::new()));
    set_value(child, rest, value)
}

fn set_at(text: &str, open: usize, path: &[&str], value: &Value, unit: &str) -> Option<String> {
    let (first, rest) = path.split_first()?;
    let (items, close) = members(text, open)?;
    if let Some(m) = items.iter().rev().find(|m| m.key == *first) {
        if !rest.is_empty() {
            return set_at(text, m.value.start, rest, value, unit);
        }
        let multiline = text[m.start..m.value.end].contains('\n') || text[open..close].contains('\n');
        let indent = line_indent(text, m.start).to_string();
        let rendered = render(value, multiline.then_some(indent.as_str()), unit);
        return Some(format!("{}{}{}", &text[..m.value.start], rendered, &text[m.value.end..]));
    }
    // A new member, holding the rest of the path as nested objects.
    let mut nested = value.clone();
    for k in rest.iter().rev() {
        let mut m = Map::new();
        m.insert(k.to_string(), nested);
        nested = Value::Object(m);
    }
    let Some(last) = items.last() else {
        let outer = line_indent(text, open).to_string();
        let indent = format!("{outer}{unit}");
        let member = format!("{}: {}", key_text(first), render(&nested, Some(&indent), unit));
        return Some(format!("{}{{\n{indent}{member}\n{outer}}}{}", &text[..open], &text[close + 1..]));
    };
    let before_first = &text[open + 1..items[0].start];
    let (sep, indent) = match before_first.rfind('\n') {
        Some(i) => {
            let indent = before_first[i + 1..].to_string();
            (format!("\n{indent}"), Some(indent))
        }
        None => (" ".to_string(), None),
    };
    let member = format!("{}: {}", key_text(first), render(&nested, indent.as_deref(), unit));
    Some(format!("{},{sep}{member}{}", &text[..last.value.end], &text[last.value.end..]))
}

fn remove_at(text: &str, open: usize, path: &[&str]) -> Option<String> {
    let (first, rest) = path.split_first()?;
    let (items, close) = members(text, open)?;
    let i = items.iter().rposition(|m| m.key == *first)?;
    if !rest.is_empty() {
        return remove_at(text, items[i].value.start, rest);
    }
    let cut = if items.len() == 1 {
        open + 1..close
    } else if i == 0 {
        items[0].start..items[1].start
    } else {
        items[i - 1].value.end..items[i].value.end
    };
    Some(format!("{}{}", &text[..cut.start], &text[cut.end..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CLAUDE: &str = "{\n  \"zeta\": 1,\n  \"mcpServers\": {\n    \"b\": {\n      \"command\": \"x\",\n      \"args\": [\"1\"],\n      \"alwaysAllow\": [\"t\"]\n    },\n    \"a\": {\"url\": \"http://h\"}\n  },\n  \"alpha\": {\"keep\": \"\\u00e9\"}\n}\n";

    #[test]
    fn insert_keeps_every_other_byte_and_follows_the_indentation() {
        let out = set(CLAUDE, &["mcpServers", "new"], &json!({"command": "n", "args": []})).unwrap();
        let expected = CLAUDE.replace(
            "\"a\": {\"url\": \"http://h\"}\n",
            "\"a\": {\"url\": \"http://h\"},\n    \"new\": {\n      \"command\": \"n\",\n      \"args\": []\n    }\n",
        );
        assert_eq!(out, expected);
    }

    #[test]
    fn replace_touches_only_that_value() {
        let out = set(CLAUDE, &["mcpServers", "b"], &json!({"command": "y"})).unwrap();
        assert!(out.starts_with("{\n  \"zeta\": 1,\n  \"mcpServers\": {\n    \"b\": {\n      \"command\": \"y\"\n    },\n    \"a\": {\"url\": \"http://h\"}"));
        assert!(out.ends_with("\"alpha\": {\"keep\": \"\\u00e9\"}\n}\n"), "{out}");
    }

    #[test]
    fn nested_keys_are_set_and_removed_in_place() {
        let on = set(CLAUDE, &["mcpServers", "a", "disabled"], &json!(true)).unwrap();
        assert!(on.contains("\"a\": {\"url\": \"http://h\", \"disabled\": true}"), "{on}");
        assert_eq!(remove(&on, &["mcpServers", "a", "disabled"]).unwrap(), CLAUDE);
    }

    #[test]
    fn remove_first_middle_last_and_only() {
        let no_b = remove(CLAUDE, &["mcpServers", "b"]).unwrap();
        assert_eq!(
            no_b,
            "{\n  \"zeta\": 1,\n  \"mcpServers\": {\n    \"a\": {\"url\": \"http://h\"}\n  },\n  \"alpha\": {\"keep\": \"\\u00e9\"}\n}\n"
        );
        let empty = remove(&no_b, &["mcpServers", "a"]).unwrap();
        assert_eq!(empty, "{\n  \"zeta\": 1,\n  \"mcpServers\": {},\n  \"alpha\": {\"keep\": \"\\u00e9\"}\n}\n");
        let again = set(&empty, &["mcpServers", "a"], &json!({"url": "http://h"})).unwrap();
        assert_eq!(
            again,
            "{\n  \"zeta\": 1,\n  \"mcpServers\": {\n    \"a\": {\n      \"url\": \"http://h\"\n    }\n  },\n  \"alpha\": {\"keep\": \"\\u00e9\"}\n}\n"
        );
        assert!(remove(CLAUDE, &["mcpServers", "nope"]).is_none());
        let last = remove(CLAUDE, &["alpha"]).unwrap();
        assert!(last.ends_with("\"a\": {\"url\": \"http://h\"}\n  }\n}\n"), "{last}");
    }

    #[test]
    fn missing_parents_are_created_and_an_empty_file_object_works() {
        let out = set("{}", &["mcpServers", "x"], &json!({"command": "c"})).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), json!({"mcpServers": {"x": {"command": "c"}}}));
        let out = set("{\"other\": [1, {\"}\": \"]\"}]}", &["mcpServers", "x"], &json!(1)).unwrap();
        assert_eq!(out, "{\"other\": [1, {\"}\": \"]\"}], \"mcpServers\": {\"x\": 1}}");
        assert!(set("[1]", &["a"], &json!(1)).is_none());
        assert!(set("{\"mcpServers\": 3}", &["mcpServers", "x"], &json!(1)).is_none());
    }
}
