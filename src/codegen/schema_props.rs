//! Property test of the JSON Schema → TypeScript converter: random schemas (nesting, `$ref`
//! cycles and dangling references, unions, odd property names such as `Object.prototype`
//! members, quotes and unicode, huge enums, values that are not schemas) never panic, render
//! within time and size bounds, and always give a tool file that parses as TypeScript.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value, json};

use crate::codegen::naming::tool_names;
use crate::codegen::render::tool_file;
use crate::mcp::ToolInfo;

/// Property and tool names: identifiers, `Object.prototype` members, reserved and generated
/// names, and text that must be quoted or escaped.
const NAMES: &[&str] = &[
    "a",
    "query",
    "constructor",
    "toString",
    "toLocaleString",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "__proto__",
    "__defineGetter__",
    "__lookupSetter__",
    "",
    "0",
    "1x",
    "with space",
    "kébab-ü",
    "日本語",
    "emoji😀",
    "quote\"",
    "back\\slash",
    "*/",
    "line\u{2028}sep",
    "\u{202e}rtl",
    "$ref",
    "type",
    "class",
    "Object",
    "ToolInput",
    "callMCPTool",
];

/// `$defs` keys, referenced by the generated `$ref`s (so cycles happen).
const DEFS: &[&str] = &["Node", "constructor", "__proto__", "a/b", "t~x", "日本", "", "ToolInput", "x y", "Object"];

const TYPES: &[&str] = &["string", "number", "integer", "boolean", "null", "object", "array", "bogus"];

/// A `$ref` value: a def (escaped as a JSON pointer), the root, or one that does not resolve.
fn reference() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => select(DEFS).prop_map(|d| format!("#/$defs/{}", d.replace('~', "~0").replace('/', "~1"))),
        1 => Just("#".to_string()),
        1 => Just("#/definitions/missing".to_string()),
        1 => Just("https://example.com/schema.json".to_string()),
        1 => Just("#/properties/a".to_string()),
    ]
}

/// An enum of up to a few thousand values, mixing kinds and duplicates.
fn big_enum() -> impl Strategy<Value = Value> {
    (0usize..3000, select(NAMES)).prop_map(|(n, base)| {
        let values: Vec<Value> = (0..n)
            .map(|i| match i % 5 {
                0 => json!(i),
                1 => Value::Null,
                2 => json!(format!("{base}{}", i % 700)),
                3 => json!({ base: i }),
                _ => json!(base),
            })
            .collect();
        json!({ "enum": values })
    })
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => select(TYPES).prop_map(|t| json!({ "type": t })),
        1 => prop::collection::vec(select(TYPES), 0..4).prop_map(|ts| json!({ "type": ts })),
        1 => Just(json!(true)),
        1 => Just(json!(false)),
        1 => Just(json!({})),
        3 => reference().prop_map(|r| json!({ "$ref": r })),
        1 => (select(NAMES), any::<i32>()).prop_map(|(n, i)| json!({ "const": { n: [i, n] } })),
        1 => big_enum(),
        1 => Just(json!({ "not": {} })),
        1 => Just(json!({ "type": 3 })),
        1 => Just(json!("not a schema")),
        1 => Just(json!({ "type": "string", "nullable": true, "description": "*/ x", "default": "d" })),
    ]
}

/// A schema of bounded depth and size built from [`leaf`]s.
fn schema() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            4 => (
                prop::collection::vec((select(NAMES), inner.clone()), 0..6),
                prop::collection::vec(select(NAMES), 0..3),
                prop::option::of(inner.clone()),
                any::<bool>(),
            )
                .prop_map(|(props, required, additional, closed)| {
                    let mut o = Map::new();
                    o.insert("type".into(), json!("object"));
                    let props: Map<String, Value> = props.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                    o.insert("properties".into(), Value::Object(props));
                    o.insert("required".into(), json!(required));
                    match (additional, closed) {
                        (Some(a), _) => o.insert("additionalProperties".into(), a),
                        (None, true) => o.insert("additionalProperties".into(), json!(false)),
                        (None, false) => None,
                    };
                    Value::Object(o)
                }),
            2 => (inner.clone(), 0u64..4, prop::option::of(0u64..4))
                .prop_map(|(items, min, max)| json!({ "type": "array", "items": items, "minItems": min, "maxItems": max })),
            1 => (prop::collection::vec(inner.clone(), 0..4), prop::option::of(inner.clone()))
                .prop_map(|(prefix, rest)| json!({ "prefixItems": prefix, "items": rest.unwrap_or(json!(false)) })),
            2 => prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({ "anyOf": v })),
            1 => prop::collection::vec(inner.clone(), 1..4).prop_map(|v| json!({ "oneOf": v, "nullable": true })),
            2 => prop::collection::vec(inner.clone(), 1..4).prop_map(|v| json!({ "allOf": v })),
            1 => (select(NAMES), inner.clone())
                .prop_map(|(p, s)| json!({ "type": "object", "patternProperties": { p: s } })),
            // Deeper than the converter's nesting cap, through arrays, objects, and objects
            // whose index signature has to admit their properties' types.
            1 => (inner, prop::collection::vec(0u8..3, 20..60)).prop_map(|(s, levels)| {
                levels.into_iter().fold(s, |acc, level| match level {
                    0 => json!({ "type": "array", "items": acc }),
                    1 => json!({ "type": "object", "properties": { "x": acc } }),
                    _ => json!({
                        "type": "object",
                        "properties": { "x": acc, "n": { "type": "number" } },
                        "additionalProperties": { "type": "string" },
                        "required": ["r"],
                    }),
                })
            }),
        ]
    })
}

/// A tool's input schema: usually an object with properties, `$defs` and required keys; at
/// times any schema at all (a `$ref` root, a union, something that is not an object).
fn input_schema() -> impl Strategy<Value = Value> {
    let object = (
        prop::collection::vec((select(NAMES), schema()), 0..6),
        prop::collection::vec((select(DEFS), schema()), 0..5),
        prop::collection::vec(select(NAMES), 0..3),
    )
        .prop_map(|(props, defs, required)| {
            let props: Map<String, Value> = props.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            let defs: Map<String, Value> = defs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            json!({ "type": "object", "properties": props, "$defs": defs, "required": required })
        });
    prop_oneof![
        6 => object,
        1 => (schema(), prop::collection::vec((select(DEFS), schema()), 0..4)).prop_map(|(root, defs)| {
            let defs: Map<String, Value> = defs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            match root {
                Value::Object(mut o) => {
                    o.insert("$defs".into(), Value::Object(defs));
                    Value::Object(o)
                }
                other => other,
            }
        }),
    ]
}

fn parse_ts(text: &str) -> Result<(), String> {
    let specifier = deno_ast::ModuleSpecifier::parse("file:///tool.ts").map_err(|e| e.to_string())?;
    let parsed = deno_ast::parse_module(deno_ast::ParseParams {
        specifier,
        text: text.into(),
        media_type: deno_ast::MediaType::TypeScript,
        capture_tokens: false,
        scope_analysis: false,
        maybe_syntax: None,
    })
    .map_err(|e| e.to_string())?;
    match parsed.diagnostics().first() {
        Some(d) => Err(d.to_string()),
        None => Ok(()),
    }
}

/// Rendering one tool may take this long (a debug build; it takes milliseconds).
const TIME_LIMIT: Duration = Duration::from_secs(5);
/// The renderer degrades a tool past 4 MB of types; the untyped file is a few KB.
const SIZE_LIMIT: usize = (4 << 20) + (64 << 10);

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 96,
        max_shrink_iters: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_schemas_render_to_typescript_that_parses(
        input in input_schema(),
        output in prop::option::of(schema()),
        name in select(NAMES),
        description in select(NAMES),
    ) {
        let tool = ToolInfo {
            server: "srv".into(),
            name: if name.is_empty() { "t".into() } else { name.to_string() },
            title: None,
            description: Some(description.to_string()),
            input_schema: input,
            output_schema: output,
            annotations: None,
        };
        let names = tool_names([tool.name.as_str()]).remove(&tool.name).ok_or_else(|| TestCaseError::fail("no names"))?;
        let start = Instant::now();
        let rendered = tool_file(&tool, &names, None).map_err(|e| TestCaseError::fail(format!("{e:#}")))?;
        let took = start.elapsed();
        prop_assert!(took < TIME_LIMIT, "rendering took {took:?}");
        prop_assert_ne!(rendered.degraded.as_deref(), Some("internal error in the schema converter"));
        prop_assert!(rendered.content.len() <= SIZE_LIMIT, "{} bytes", rendered.content.len());
        if let Err(e) = parse_ts(&rendered.content) {
            return Err(TestCaseError::fail(format!("does not parse: {e}\n{}", rendered.content)));
        }
    }
}
