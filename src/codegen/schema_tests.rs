//! Snapshot tests of the JSON Schema → TypeScript converter, one per construct, on the tools of
//! `tests/data/schema-constructs.json` (the integration tests compile the same tools with tsc).

use serde_json::{Value, json};

use super::*;
use crate::codegen::load::parse_tools;
use crate::mcp::ToolInfo;

const CONSTRUCTS: &str = include_str!("../../tests/data/schema-constructs.json");

fn tool(name: &str) -> ToolInfo {
    let doc: Value = serde_json::from_str(CONSTRUCTS).unwrap();
    parse_tools(&doc, None, "constructs").unwrap().into_iter().find(|t| t.name == name).unwrap()
}

/// The declarations the converter makes for a tool, as they appear in its file.
fn types_of(name: &str) -> String {
    let t = tool(name);
    match convert_tool(&t.input_schema, t.output_schema.as_ref(), "ToolInput", "ToolOutput", &["tool"]) {
        Ok(c) => {
            let mut parts = vec![c.input.render()];
            parts.extend(c.output.iter().map(Decl::render));
            parts.extend(c.defs.iter().map(Decl::render));
            parts.extend(c.warnings.iter().map(|w| format!("// warning: {w}\n")));
            parts.join("\n")
        }
        Err(Degraded(reason)) => format!("degraded: {reason}\n"),
    }
}

macro_rules! construct {
    ($test:ident, $tool:literal) => {
        #[test]
        fn $test() {
            insta::assert_snapshot!(types_of($tool));
        }
    };
}

construct!(type_keywords_arrays_of_types_and_integer, "types");
construct!(enum_and_const_literals, "enum-const");
construct!(properties_required_and_quoted_keys, "properties");
construct!(additional_and_pattern_properties, "additional-properties");
construct!(items_prefix_items_and_tuples, "arrays");
construct!(any_of_one_of_all_of_and_nullable, "unions");
construct!(refs_to_defs_and_definitions, "refs");
construct!(recursive_refs_and_direct_cycles, "recursion");
construct!(unexpressible_constructs_become_unknown_with_a_note, "unsupported");
construct!(field_documentation_tags, "docs");
construct!(empty_input_schema, "empty-input");
construct!(missing_input_schema, "no-input-schema");
construct!(object_without_properties, "empty-properties");
construct!(open_input_object, "open-input");
construct!(output_schema_shares_equal_defs, "with-output");
construct!(nesting_is_depth_capped, "deep");
construct!(input_that_is_not_an_object_degrades, "not-an-object");
construct!(input_resolving_to_a_string_degrades, "ref-to-string");
construct!(output_that_is_not_a_schema_warns, "bad-output");
construct!(root_that_is_a_ref, "root-ref");

#[test]
fn unions_and_intersections_normalise() {
    let s = Ty::Keyword("string");
    assert_eq!(union(vec![s.clone(), s.clone(), Ty::Keyword("never")]), s);
    assert_eq!(union(vec![s.clone(), UNKNOWN]), UNKNOWN);
    assert_eq!(union(vec![]), Ty::Keyword("never"));
    assert_eq!(intersection(vec![UNKNOWN, s.clone()]), s);
    assert_eq!(intersection(vec![s.clone(), Ty::Keyword("never")]), Ty::Keyword("never"));
    let u = union(vec![s.clone(), Ty::Keyword("number")]);
    assert_eq!(print_ty(&Ty::Array(Box::new(u.clone())), 0), "(string | number)[]");
    assert_eq!(print_ty(&intersection(vec![u, Ty::Named("X".into())]), 0), "(string | number) & X");
}

#[test]
fn every_tool_argument_type_is_an_object() {
    // `callMCPTool` takes an object; a converted input is always one, or the tool degrades.
    for input in
        [json!({"anyOf": [{"type": "object"}, {"type": "string"}]}), json!({"type": ["object", "null"]}), json!(true)]
    {
        assert!(convert_tool(&input, None, "I", "O", &[]).is_err(), "{input}");
    }
    let ok = json!({"oneOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "object"}]});
    let c = convert_tool(&ok, None, "I", "O", &[]).unwrap();
    assert!(c.input_optional);
}

#[test]
fn required_arguments_make_the_parameter_required() {
    let c = convert_tool(
        &json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
        None,
        "I",
        "O",
        &[],
    )
    .unwrap();
    assert!(!c.input_optional);
    let c =
        convert_tool(&json!({"type": "object", "properties": {"a": {"type": "string"}}}), None, "I", "O", &[]).unwrap();
    assert!(c.input_optional);
}

#[test]
fn hostile_enum_values_and_keys_stay_inside_literals() {
    let schema = json!({"type": "object", "properties": {
        "k\"; pwned(); \"": {"enum": ["\"; pwned(); //", "*/ pwned() /*", "a\u{2028}pwned()"],
                              "description": "*/ pwned(); /*", "default": "*/ pwned()"}}});
    let c = convert_tool(&schema, None, "I", "O", &[]).unwrap();
    let text = c.input.render();
    assert!(!text.contains('\u{2028}'));
    assert!(text.contains(r#""k\"; pwned(); \""?: "\"; pwned(); //" | "*/ pwned() /*" | "a\u2028pwned()";"#), "{text}");
    assert!(text.contains(r"*\/ pwned(); /*"), "{text}");
}

#[test]
fn multi_select_enum_arrays_become_arrays_of_literal_unions() {
    // SEP-1330 multi-selects as tool parameters: `items.enum`, or `items.anyOf` of `{const, title}`.
    let schema = json!({"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 1, "maxItems": 2},
        "picks": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Why"}]},
                  "default": ["x"]}
    }, "required": ["tags"]});
    let text = convert_tool(&schema, None, "I", "O", &[]).unwrap().input.render();
    assert!(text.contains(r#"tags: ("a" | "b")[];"#), "{text}");
    assert!(text.contains(r#"picks?: ("x" | "y")[];"#), "{text}");
}

#[test]
fn huge_enums_and_many_defs_stay_fast_and_correct() {
    // Server-controlled sizes must not go quadratic: 20,000 enum values (with duplicates),
    // 3,000 `$defs` that all sanitise to the same name, 5,000 required keys.
    let values: Vec<Value> = (0..20_000).map(|i| json!(format!("v{}", i % 10_000))).collect();
    let mut defs = serde_json::Map::new();
    let mut props = serde_json::Map::new();
    for i in 0..3000 {
        defs.insert("-".repeat(i + 1), json!({"type": "string"}));
        props.insert(format!("p{i}"), json!({"$ref": format!("#/$defs/{}", "-".repeat(i + 1))}));
    }
    props.insert("e".into(), json!({"enum": values}));
    let required: Vec<String> = (0..5000).map(|i| format!("r{}", i % 2500)).collect();
    let schema = json!({"type": "object", "$defs": defs, "properties": props, "required": required});
    let c = convert_tool(&schema, None, "I", "O", &[]).unwrap();
    assert_eq!(c.defs.len(), 3000);
    let Ty::Object(obj) = &c.input.ty else { panic!("not an object") };
    assert_eq!(obj.props.len(), 3001 + 2500, "duplicate required keys appear once");
    let e = obj.props.iter().find(|p| p.name == "e").unwrap();
    let Ty::Union(members) = &e.ty else { panic!("not a union") };
    assert_eq!(members.len(), 10_000);
}

#[test]
fn optional_properties_named_like_object_members_admit_the_inherited_member() {
    // `{}` (and any literal that omits the key) inherits these; TypeScript checks it against them.
    let mut props = serde_json::Map::new();
    for name in OBJECT_MEMBERS {
        props.insert(name.to_string(), json!({"type": "string"}));
    }
    for name in ["__proto__", "__defineGetter__", "__defineSetter__", "__lookupGetter__", "__lookupSetter__", "q"] {
        props.insert(name.to_string(), json!({"type": "string"}));
    }
    props.insert("anything".into(), json!({}));
    let schema = json!({"type": "object", "properties": props, "required": ["valueOf"]});
    let c = convert_tool(&schema, None, "I", "O", &[]).unwrap();
    assert!(!c.input_optional);
    let text = c.input.render();
    for name in OBJECT_MEMBERS.iter().filter(|n| **n != "valueOf") {
        assert!(text.contains(&format!("  {name}?: string | Object[\"{name}\"];\n")), "{name}: {text}");
    }
    assert!(text.contains("  valueOf: string;\n"), "required: the caller gives it\n{text}");
    for name in ["__proto__", "__defineGetter__", "__lookupSetter__", "q"] {
        assert!(text.contains(&format!("  {name}?: string;\n")), "{name} is not in TypeScript's `Object`\n{text}");
    }
    assert!(text.contains("the `toString` every object inherits"), "{text}");

    // Also inside nested objects, `$defs` and with an index signature (which must admit them).
    let nested = json!({"type": "object", "$defs": {"D": {"type": "object", "properties": {"toString": {"type": "number"}}}},
        "properties": {"x": {"$ref": "#/$defs/D"},
                       "y": {"type": "object", "properties": {"constructor": {"enum": ["a", "b"]}},
                             "additionalProperties": {"type": "boolean"}}}});
    let c = convert_tool(&nested, None, "I", "O", &[]).unwrap();
    let text = c.input.render() + c.defs[0].render().as_str();
    assert!(text.contains("toString?: number | Object[\"toString\"];"), "{text}");
    assert!(text.contains("constructor?: \"a\" | \"b\" | Object[\"constructor\"];"), "{text}");
    assert!(text.contains("[key: string]: boolean | \"a\" | \"b\" | Object[\"constructor\"] | undefined;"), "{text}");
}

#[test]
fn index_signatures_do_not_double_the_types_at_every_level() {
    // Each level's index signature repeats its properties' types: 2^depth without a cap.
    let mut s = json!({"type": "string"});
    for _ in 0..20 {
        s = json!({"type": "object", "properties": {"a": s, "b": {"type": "number"}},
                   "additionalProperties": {"type": "string"}});
    }
    let started = std::time::Instant::now();
    let c = convert_tool(&json!({"type": "object", "properties": {"x": s}}), None, "I", "O", &[]).unwrap();
    let text = c.input.render();
    assert!(text.len() < 100_000, "{} bytes", text.len());
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
    assert!(text.contains("[key: string]: string | {"), "small types are still repeated\n{text}");
    assert!(text.contains("[key: string]: unknown;"), "{text}");
    assert!(text.contains("Note: other keys are typed `unknown`"), "{text}");

    // Required keys without a schema take the index type once per key: not a huge one.
    let values: Vec<Value> = (0..3000).map(|i| json!(format!("v{i}"))).collect();
    let required: Vec<String> = (0..3000).map(|i| format!("k{i}")).collect();
    let schema = json!({"type": "object", "additionalProperties": {"enum": values}, "required": required});
    let c = convert_tool(&schema, None, "I", "O", &[]).unwrap();
    let text = c.input.render();
    assert!(text.len() < 200_000, "{} bytes", text.len());
    assert!(text.contains("  k2999: unknown;\n"), "{text}");
    let small = json!({"type": "object", "additionalProperties": {"type": "string"}, "required": ["k"]});
    let text = convert_tool(&small, None, "I", "O", &[]).unwrap().input.render();
    assert!(text.contains("  k: string;\n"), "{text}");
}
