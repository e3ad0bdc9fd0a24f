//! Reading saved tool lists (`agent mcp generate --from-tools FILE`), so generation works
//! offline and reproducibly. Accepted shapes:
//! - the `agent mcp list --json` array of `{server, name, ...}` records;
//! - a plain array of MCP `Tool` objects (`{name, title?, description?, inputSchema, outputSchema?,
//!   annotations?}`), or an object `{"tools": [...]}` (what `tools/list` returns), optionally with
//!   a top-level `"server"`: a name, or the server's info `{"name": ..., "version": ...}`.
//!
//! A tool without a `server` gets the top-level `server`, else `default_server`, else the file
//! stem. Errors name the file and the offending element (`tools[3].name: ...`).

use std::path::Path;

use anyhow::{anyhow, bail};
use serde_json::{Map, Value};

use crate::mcp::ToolInfo;
use crate::mcp::tools::empty_object_schema;

/// Largest tool list file read (GitHub's 117 tools are 0.3 MB).
pub const MAX_TOOLS_FILE_BYTES: u64 = 64 << 20;

pub fn load_tools_file(path: &Path, default_server: Option<&str>) -> anyhow::Result<Vec<ToolInfo>> {
    let text = crate::util::read::read_text_file(path, MAX_TOOLS_FILE_BYTES)
        .map_err(|e| anyhow!(e.message(&path.display().to_string())))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| anyhow!("{} is not valid JSON: {e}", path.display()))?;
    let stem = path.file_stem().and_then(|s| s.to_str()).filter(|s| !s.is_empty()).unwrap_or("tools");
    parse_tools(&doc, default_server, stem).map_err(|e| anyhow!("{}: {e}", path.display()))
}

/// The tools in an already-parsed document (see the module docs for the shapes).
pub fn parse_tools(doc: &Value, default_server: Option<&str>, stem: &str) -> anyhow::Result<Vec<ToolInfo>> {
    let (items, top_server, prefix) = match doc {
        Value::Array(items) => (items, None, ""),
        Value::Object(o) => match o.get("tools") {
            Some(Value::Array(items)) => {
                let server = match o.get("server") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s.as_str()),
                    // What MCP clients save next to `tools/list`: the server's `serverInfo`.
                    Some(Value::Object(info)) => match info.get("name") {
                        None | Some(Value::Null) => None,
                        Some(Value::String(s)) if s.is_empty() => None,
                        Some(Value::String(s)) => Some(s.as_str()),
                        Some(_) => bail!("`server.name` must be a string"),
                    },
                    Some(_) => bail!("`server` must be a string or an object with a `name`"),
                };
                (items, server, "tools")
            }
            Some(_) => bail!("`tools` must be an array"),
            None => bail!("expected a JSON array of tools or an object with a `tools` array"),
        },
        _ => bail!("expected a JSON array of tools or an object with a `tools` array"),
    };
    let fallback = top_server.or(default_server).unwrap_or(stem);
    items.iter().enumerate().map(|(i, item)| tool(item, fallback).map_err(|e| anyhow!("{prefix}[{i}]{e}"))).collect()
}

fn tool(item: &Value, fallback_server: &str) -> anyhow::Result<ToolInfo> {
    let Some(o) = item.as_object() else { bail!(": expected a tool object") };
    let name = match o.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::String(_)) => bail!(".name: must not be empty"),
        Some(_) => bail!(".name: expected a string"),
        None => bail!(": missing `name`"),
    };
    let server = match o.get("server") {
        None | Some(Value::Null) => fallback_server.to_string(),
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => bail!(".server: expected a non-empty string"),
    };
    let description = opt_string(o, "description")?;
    let annotations = match o.get("annotations") {
        None | Some(Value::Null) => None,
        Some(a @ Value::Object(_)) => Some(a.clone()),
        Some(_) => bail!(".annotations: expected an object"),
    };
    let title = match opt_string(o, "title")? {
        Some(t) => Some(t),
        None => annotations.as_ref().and_then(|a| a.get("title")).and_then(Value::as_str).map(str::to_string),
    };
    // Schemas are kept whatever they are: one the generator cannot use degrades that tool only.
    let input_schema = match o.get("inputSchema").or_else(|| o.get("input_schema")) {
        None | Some(Value::Null) => empty_object_schema(),
        Some(s) => s.clone(),
    };
    let output_schema = match o.get("outputSchema").or_else(|| o.get("output_schema")) {
        None | Some(Value::Null) => None,
        Some(s) => Some(s.clone()),
    };
    Ok(ToolInfo { server, name, title, description, input_schema, output_schema, annotations })
}

fn opt_string(o: &Map<String, Value>, key: &str) -> anyhow::Result<Option<String>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => bail!(".{key}: expected a string"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_the_three_shapes() {
        let list = json!([{"server": "s", "name": "a", "inputSchema": {"type": "object"}}]);
        assert_eq!(parse_tools(&list, None, "stem").unwrap()[0].server, "s");

        let plain = json!([{"name": "a", "annotations": {"title": "T"}}]);
        let t = &parse_tools(&plain, None, "stem").unwrap()[0];
        assert_eq!((t.server.as_str(), t.title.as_deref()), ("stem", Some("T")));
        assert_eq!(t.input_schema, json!({"type": "object"}));
        assert_eq!(parse_tools(&plain, Some("gh"), "stem").unwrap()[0].server, "gh");

        let wrapped = json!({"server": "top", "tools": [{"name": "a"}, {"name": "b", "server": "own"}]});
        let t = parse_tools(&wrapped, Some("gh"), "stem").unwrap();
        assert_eq!((t[0].server.as_str(), t[1].server.as_str()), ("top", "own"));
    }

    #[test]
    fn the_server_may_be_its_info_object() {
        let dump = json!({"server": {"name": "everything", "version": "1.0"}, "tools": [{"name": "a"}]});
        assert_eq!(parse_tools(&dump, Some("flag"), "stem").unwrap()[0].server, "everything");
        for nameless in [json!({"version": "1.0"}), json!({"name": null}), json!({"name": ""})] {
            let dump = json!({"server": nameless, "tools": [{"name": "a"}]});
            assert_eq!(parse_tools(&dump, Some("flag"), "stem").unwrap()[0].server, "flag", "{dump}");
            assert_eq!(parse_tools(&dump, None, "stem").unwrap()[0].server, "stem", "{dump}");
        }
        let e = parse_tools(&json!({"server": {"name": 3}, "tools": []}), None, "s").unwrap_err();
        assert_eq!(e.to_string(), "`server.name` must be a string");
        let e = parse_tools(&json!({"server": [1], "tools": []}), None, "s").unwrap_err();
        assert_eq!(e.to_string(), "`server` must be a string or an object with a `name`");
    }

    #[test]
    fn errors_name_the_element() {
        let e =
            parse_tools(&json!({"tools": [{"name": "a"}, {"description": 3, "name": "b"}]}), None, "s").unwrap_err();
        assert_eq!(e.to_string(), "tools[1].description: expected a string");
        let e = parse_tools(&json!([{"title": "x"}]), None, "s").unwrap_err();
        assert_eq!(e.to_string(), "[0]: missing `name`");
        let e = parse_tools(&json!({"x": 1}), None, "s").unwrap_err();
        assert!(e.to_string().contains("expected a JSON array"), "{e}");
        let e = parse_tools(&json!([1]), None, "s").unwrap_err();
        assert_eq!(e.to_string(), "[0]: expected a tool object");
    }
}
