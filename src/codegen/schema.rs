//! JSON Schema → TypeScript declarations (our own converter; no maintained crate does this).
//!
//! [`convert_tool`] turns a tool's `inputSchema` and `outputSchema` into `<Fn>Input` /
//! `<Fn>Output` declarations plus one named, exported type per `$ref` target (`#/$defs/*`,
//! `#/definitions/*` or any other local JSON pointer). References become type names, so cycles
//! need no unrolling; a type that would refer to itself with no object or array in between
//! (which TypeScript rejects) becomes `unknown` with a note. Inline nesting is capped at
//! [`MAX_DEPTH`]. Anything it cannot express becomes `unknown` and the nearest TSDoc says why.
//!
//! Handled: `type` (also arrays of types; `integer` → `number`), `enum`/`const` (literal types),
//! `properties`/`required` (optional `?`), `additionalProperties` (true → `unknown` index
//! signature, schema → typed index signature, false or absent → none), `patternProperties`,
//! `items`, `prefixItems` / draft-4 tuple `items` / `minItems == maxItems` tuples, `anyOf` /
//! `oneOf` (unions), `allOf` (intersections), OpenAPI `nullable`, quoted non-identifier keys.
//! Field docs carry description, `@default`, `@enum`, numeric/string/array bounds, `@pattern`,
//! `@format`, `@deprecated` and examples. This module never touches the file system.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::util::json::{json_kind, local_ref_pointer};

use super::naming::pascal_case;
use super::ts::{Doc, property_key, string_literal};

/// How deep inline (non-`$ref`) schemas may nest before the rest becomes `unknown`.
pub const MAX_DEPTH: usize = 40;
/// Tuples of `minItems == maxItems` items are spelled out up to this length.
const MAX_FIXED_TUPLE: u64 = 16;
/// How many enum values and examples a field's TSDoc lists.
const MAX_DOC_VALUES: usize = 30;
const MAX_EXAMPLES: usize = 3;

/// Global type names the generated code uses or that would confuse readers if shadowed.
const GLOBAL_TYPE_NAMES: &[&str] = &[
    "Array",
    "BigInt",
    "Boolean",
    "Date",
    "Error",
    "Function",
    "JSON",
    "Map",
    "Math",
    "Number",
    "Object",
    "Partial",
    "Promise",
    "ReadonlyArray",
    "Record",
    "RegExp",
    "Set",
    "String",
    "Symbol",
];

/// The members TypeScript's `Object` interface declares: every object type has them, so an
/// optional property of that name that is absent reads as the inherited member, and TypeScript
/// checks an object literal that omits the property against it (`{}` is not a
/// `{ constructor?: string }`: its `constructor` is a `Function`). Such a property's type
/// therefore also admits the inherited member's type (`string | Object["constructor"]`). Other
/// `Object.prototype` names (`__proto__`, `__defineGetter__`, ...) are not in the interface and
/// need nothing.
pub const OBJECT_MEMBERS: &[&str] = &[
    "constructor",
    "toString",
    "toLocaleString",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
];

/// A TypeScript type expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// `string`, `number`, `boolean`, `null`, `unknown`, `never`, `undefined`, `any`.
    Keyword(&'static str),
    /// A literal type, already rendered (`"a"`, `1`, `true`).
    Literal(String),
    /// A named type declared in the same file.
    Named(String),
    /// `Record<string, never>`: an object that takes no properties.
    EmptyObject,
    Array(Box<Ty>),
    /// `[A, B?, ...C[]]`
    Tuple {
        items: Vec<(Ty, bool)>,
        rest: Option<Box<Ty>>,
    },
    Object(Obj),
    Union(Vec<Ty>),
    Intersection(Vec<Ty>),
}

/// An object type literal.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Obj {
    pub props: Vec<Prop>,
    /// `[key: string]: T`
    pub index: Option<Box<Ty>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Prop {
    pub name: String,
    pub optional: bool,
    pub ty: Ty,
    pub doc: Doc,
}

const UNKNOWN: Ty = Ty::Keyword("unknown");
const CYCLE_NOTE: &str = "Note: this type refers to itself with no object or array in between, which TypeScript cannot express; \
     typed as `unknown`.";

impl Ty {
    fn is_unknown(&self) -> bool {
        matches!(self, Ty::Keyword("unknown" | "any"))
    }
}

/// A union, flattened and deduplicated; `unknown` absorbs everything, `never` disappears.
pub fn union(members: Vec<Ty>) -> Ty {
    let mut out = Unique::default();
    for m in members {
        match m {
            Ty::Union(inner) => {
                for i in inner {
                    out.push(i);
                }
            }
            Ty::Keyword("never") => {}
            other => out.push(other),
        }
    }
    let mut out = out.items;
    if let Some(u) = out.iter().find(|t| t.is_unknown()) {
        return u.clone();
    }
    match out.len() {
        0 => Ty::Keyword("never"),
        1 => out.pop().unwrap_or(UNKNOWN),
        _ => Ty::Union(out),
    }
}

/// An intersection, flattened and deduplicated; `unknown` members disappear.
pub fn intersection(members: Vec<Ty>) -> Ty {
    let mut out = Unique::default();
    for m in members {
        match m {
            Ty::Intersection(inner) => {
                for i in inner {
                    out.push(i);
                }
            }
            t if t.is_unknown() => {}
            other => out.push(other),
        }
    }
    let mut out = out.items;
    if out.contains(&Ty::Keyword("never")) {
        return Ty::Keyword("never");
    }
    match out.len() {
        0 => UNKNOWN,
        1 => out.pop().unwrap_or(UNKNOWN),
        _ => Ty::Intersection(out),
    }
}

/// Members in first-seen order without duplicates. Small lists compare structurally; long ones
/// (an enum of thousands of values from a server) go through a set of printed forms, so that
/// deduplication stays linear.
#[derive(Default)]
struct Unique {
    items: Vec<Ty>,
    printed: Option<HashSet<String>>,
}

impl Unique {
    const LINEAR_LIMIT: usize = 32;

    fn push(&mut self, t: Ty) {
        if self.printed.is_none() && self.items.len() >= Self::LINEAR_LIMIT {
            self.printed = Some(self.items.iter().map(|i| print_ty(i, 0)).collect());
        }
        match &mut self.printed {
            Some(set) => {
                if set.insert(print_ty(&t, 0)) {
                    self.items.push(t);
                }
            }
            None => {
                if !self.items.contains(&t) {
                    self.items.push(t);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Printing

/// Renders a type expression; objects span several lines indented from `indent`.
pub fn print_ty(ty: &Ty, indent: usize) -> String {
    let mut s = String::new();
    write_ty(&mut s, ty, indent);
    s
}

fn write_ty(out: &mut String, ty: &Ty, indent: usize) {
    match ty {
        Ty::Keyword(k) => out.push_str(k),
        Ty::Literal(l) => out.push_str(l),
        Ty::Named(n) => out.push_str(n),
        Ty::EmptyObject => out.push_str("Record<string, never>"),
        Ty::Array(item) => {
            let paren = matches!(**item, Ty::Union(_) | Ty::Intersection(_));
            if paren {
                out.push('(');
            }
            write_ty(out, item, indent);
            if paren {
                out.push(')');
            }
            out.push_str("[]");
        }
        Ty::Tuple { items, rest } => {
            out.push('[');
            let mut first = true;
            for (t, optional) in items {
                if !first {
                    out.push_str(", ");
                }
                first = false;
                let paren = *optional && matches!(t, Ty::Union(_) | Ty::Intersection(_));
                if paren {
                    out.push('(');
                }
                write_ty(out, t, indent);
                if paren {
                    out.push(')');
                }
                if *optional {
                    out.push('?');
                }
            }
            if let Some(r) = rest {
                if !first {
                    out.push_str(", ");
                }
                out.push_str("...");
                write_ty(out, &Ty::Array(r.clone()), indent);
            }
            out.push(']');
        }
        Ty::Object(obj) => write_obj(out, obj, indent),
        Ty::Union(members) => {
            for (i, m) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(" | ");
                }
                write_ty(out, m, indent);
            }
        }
        Ty::Intersection(members) => {
            for (i, m) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(" & ");
                }
                let paren = matches!(m, Ty::Union(_));
                if paren {
                    out.push('(');
                }
                write_ty(out, m, indent);
                if paren {
                    out.push(')');
                }
            }
        }
    }
}

/// `{ ... }` with one member per line (`{}` members nest with two more spaces).
fn write_obj(out: &mut String, obj: &Obj, indent: usize) {
    if obj.props.is_empty() && obj.index.is_none() {
        out.push_str("{}");
        return;
    }
    out.push_str("{\n");
    write_members(out, obj, indent + 2);
    out.push_str(&" ".repeat(indent));
    out.push('}');
}

fn write_members(out: &mut String, obj: &Obj, indent: usize) {
    let pad = " ".repeat(indent);
    for p in &obj.props {
        out.push_str(&p.doc.render(indent));
        let _ = write!(out, "{pad}{}{}: ", property_key(&p.name), if p.optional { "?" } else { "" });
        write_ty(out, &p.ty, indent);
        out.push_str(";\n");
    }
    if let Some(index) = &obj.index {
        let _ = write!(out, "{pad}[key: string]: ");
        write_ty(out, index, indent);
        out.push_str(";\n");
    }
}

/// An exported declaration: `export interface X {...}` or `export type X = ...;`.
#[derive(Debug, Clone, PartialEq)]
pub struct Decl {
    pub name: String,
    pub doc: Doc,
    pub ty: Ty,
}

impl Decl {
    pub fn render(&self) -> String {
        let mut out = self.doc.render(0);
        match &self.ty {
            Ty::Object(obj) if !obj.props.is_empty() || obj.index.is_some() => {
                let _ = writeln!(out, "export interface {} {{", self.name);
                write_members(&mut out, obj, 2);
                out.push_str("}\n");
            }
            ty => {
                let _ = writeln!(out, "export type {} = {};", self.name, print_ty(ty, 0));
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Conversion

/// What the converter made of one tool.
#[derive(Debug, Clone)]
pub struct ConvertedTool {
    pub input: Decl,
    /// `None` when the tool has no `outputSchema`.
    pub output: Option<Decl>,
    /// Named types for `$ref` targets, sorted by name.
    pub defs: Vec<Decl>,
    /// Whether the function's argument may be omitted (no required properties).
    pub input_optional: bool,
    /// Problems worth a warning (e.g. an `outputSchema` that is not a schema).
    pub warnings: Vec<String>,
}

/// Why a tool could not be converted at all (it is then generated untyped).
#[derive(Debug, Clone, PartialEq)]
pub struct Degraded(pub String);

/// Converts a tool's schemas. `input_name`/`output_name` are the root type names;
/// `reserved` are identifiers the file already uses (the function name, imports).
pub fn convert_tool(
    input_schema: &Value,
    output_schema: Option<&Value>,
    input_name: &str,
    output_name: &str,
    reserved: &[&str],
) -> Result<ConvertedTool, Degraded> {
    if !input_schema.is_object() && !input_schema.is_null() {
        return Err(Degraded(format!("inputSchema is {}, not a JSON Schema object", json_kind(input_schema))));
    }
    if let Some(t) = input_schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !types.is_empty() && !types.contains(&"object") {
            return Err(Degraded(format!("inputSchema has type {t}, but MCP tool arguments are an object")));
        }
    }
    let mut warnings = Vec::new();
    let output_schema = match output_schema {
        Some(v) if v.is_object() || v.is_boolean() => Some(v),
        Some(Value::Null) | None => None,
        Some(v) => {
            warnings.push(format!("outputSchema is {}, not a JSON Schema object; output typed as any", json_kind(v)));
            None
        }
    };
    let empty = Value::Object(Map::new());
    let input_root = if input_schema.is_null() { &empty } else { input_schema };
    let mut cv = Converter::new([input_root, output_schema.unwrap_or(&empty)], [input_name, output_name], reserved);

    let input = cv.convert_root(0);
    let output = output_schema.map(|_| cv.convert_root(1));
    cv.drain_defs();
    cv.break_direct_cycles();

    let mut input = input;
    let mut output = output;
    // A root that turned out to be a bare self-reference has been replaced by `unknown`.
    if let Some(t) = cv.cycle_fix.get(&Node::Root(0)) {
        input.ty = t.clone();
        input.doc.blank().text(CYCLE_NOTE);
    }
    if let (Some(out), Some(t)) = (output.as_mut(), cv.cycle_fix.get(&Node::Root(1))) {
        out.ty = t.clone();
        out.doc.blank().text(CYCLE_NOTE);
    }
    if !cv.is_object_like(&input.ty, &mut BTreeSet::new()) {
        return Err(Degraded("inputSchema does not describe an object of arguments".into()));
    }
    let input_optional = cv.all_optional(&input.ty, &mut BTreeSet::new());
    let mut defs: Vec<Decl> = cv.defs.into_iter().filter_map(|d| d.decl).collect();
    defs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(ConvertedTool { input, output, defs, input_optional, warnings })
}

/// Nodes of the "direct reference" graph used to find type aliases TypeScript would reject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Node {
    Root(usize),
    Def(usize),
}

struct Def {
    name: String,
    root: usize,
    pointer: String,
    decl: Option<Decl>,
}

#[derive(Clone, Copy)]
struct Cx {
    root: usize,
    depth: usize,
    /// Not yet inside an object, array or tuple: a reference here is "direct".
    direct: bool,
    /// The root of the input schema (an object without properties means "no arguments").
    input_root: bool,
}

impl Cx {
    fn nested(self) -> Cx {
        Cx { depth: self.depth + 1, direct: false, input_root: false, ..self }
    }
    fn inner(self) -> Cx {
        Cx { depth: self.depth + 1, input_root: false, ..self }
    }
}

struct Converter<'a> {
    roots: [&'a Value; 2],
    root_names: [String; 2],
    used_names: BTreeSet<String>,
    defs: Vec<Def>,
    def_index: HashMap<(usize, String), usize>,
    def_by_name: HashMap<String, usize>,
    next_suffix: HashMap<String, usize>,
    queue: VecDeque<usize>,
    /// Notes for the innermost documented thing being converted.
    notes: Vec<Vec<String>>,
    current: Node,
    edges: BTreeSet<(Node, Node)>,
    /// Replacement types for roots found in a direct cycle.
    cycle_fix: HashMap<Node, Ty>,
}

impl<'a> Converter<'a> {
    fn new(roots: [&'a Value; 2], root_names: [&str; 2], reserved: &[&str]) -> Converter<'a> {
        let mut used_names: BTreeSet<String> = GLOBAL_TYPE_NAMES.iter().map(|s| s.to_string()).collect();
        used_names.extend(reserved.iter().map(|s| s.to_string()));
        used_names.extend(root_names.iter().map(|s| s.to_string()));
        Converter {
            roots,
            root_names: root_names.map(str::to_string),
            used_names,
            defs: Vec::new(),
            def_index: HashMap::new(),
            def_by_name: HashMap::new(),
            next_suffix: HashMap::new(),
            queue: VecDeque::new(),
            notes: Vec::new(),
            current: Node::Root(0),
            edges: BTreeSet::new(),
            cycle_fix: HashMap::new(),
        }
    }

    fn note(&mut self, msg: impl Into<String>) {
        let msg = msg.into();
        if let Some(frame) = self.notes.last_mut()
            && !frame.contains(&msg)
        {
            frame.push(msg);
        }
    }

    fn convert_root(&mut self, root: usize) -> Decl {
        self.current = Node::Root(root);
        self.notes.push(Vec::new());
        let schema = self.roots[root];
        let cx = Cx { root, depth: 0, direct: true, input_root: root == 0 };
        let ty = match schema.as_object() {
            // Arguments described by nothing at all (`{}`): a tool that takes none.
            Some(map) if root == 0 && says_nothing_about_type(map) => self.object_type(map, cx),
            _ => self.convert(schema, cx),
        };
        let notes = self.notes.pop().unwrap_or_default();
        let mut doc = Doc::new();
        field_doc(&mut doc, schema, &notes);
        Decl { name: self.root_names[root].clone(), doc, ty }
    }

    fn drain_defs(&mut self) {
        while let Some(i) = self.queue.pop_front() {
            let (root, pointer) = (self.defs[i].root, self.defs[i].pointer.clone());
            let roots = self.roots;
            let Some(schema) = roots[root].pointer(&pointer) else { continue };
            self.current = Node::Def(i);
            self.notes.push(Vec::new());
            let ty = self.convert(schema, Cx { root, depth: 0, direct: true, input_root: false });
            let notes = self.notes.pop().unwrap_or_default();
            let mut doc = Doc::new();
            field_doc(&mut doc, schema, &notes);
            self.defs[i].decl = Some(Decl { name: self.defs[i].name.clone(), doc, ty });
        }
    }

    /// Replaces every declaration that reaches itself through direct references only
    /// (`type A = B | string; type B = A`) by `unknown`: TypeScript rejects such aliases.
    fn break_direct_cycles(&mut self) {
        let nodes: BTreeSet<Node> = self.edges.iter().flat_map(|(a, b)| [*a, *b]).collect();
        for n in nodes {
            if self.reaches(n, n) {
                match n {
                    Node::Def(i) => {
                        if let Some(d) = self.defs[i].decl.as_mut() {
                            d.ty = UNKNOWN;
                            d.doc.blank().text(CYCLE_NOTE);
                        }
                    }
                    Node::Root(_) => {
                        self.cycle_fix.insert(n, UNKNOWN);
                    }
                }
            }
        }
    }

    fn reaches(&self, from: Node, target: Node) -> bool {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            for (a, b) in self.edges.range((n, Node::Root(0))..) {
                if *a != n {
                    break;
                }
                if *b == target {
                    return true;
                }
                if seen.insert(*b) {
                    stack.push(*b);
                }
            }
        }
        false
    }

    fn convert(&mut self, schema: &Value, cx: Cx) -> Ty {
        if cx.depth > MAX_DEPTH {
            self.note(format!("Note: nested deeper than {MAX_DEPTH} levels; the rest is typed as `unknown`."));
            return UNKNOWN;
        }
        match schema {
            Value::Bool(true) => UNKNOWN,
            Value::Bool(false) => Ty::Keyword("never"),
            Value::Object(map) => self.convert_map(map, cx),
            other => {
                self.note(format!(
                    "Note: a schema here is {}, not a JSON Schema; typed as `unknown`.",
                    json_kind(other)
                ));
                UNKNOWN
            }
        }
    }

    fn convert_map(&mut self, map: &Map<String, Value>, cx: Cx) -> Ty {
        let mut parts: Vec<Ty> = Vec::new();
        if let Some(r) = map.get("$ref") {
            parts.push(self.reference(r, cx));
        }
        if let Some(base) = self.base_type(map, cx) {
            parts.push(base);
        }
        if let Some(all) = map.get("allOf") {
            match all.as_array() {
                Some(list) => parts.extend(list.iter().map(|s| self.convert(s, cx.inner())).collect::<Vec<_>>()),
                None => self.note("Note: `allOf` is not an array; ignored."),
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(alts) = map.get(key) {
                match alts.as_array() {
                    Some(list) if !list.is_empty() => {
                        let members: Vec<Ty> = list.iter().map(|s| self.convert(s, cx.inner())).collect();
                        parts.push(union(members));
                    }
                    _ => self.note(format!("Note: `{key}` is not a non-empty array; ignored.")),
                }
            }
        }
        if map.contains_key("not") && parts.is_empty() {
            self.note("Note: `not` schemas cannot be expressed in TypeScript; typed as `unknown`.");
        }
        if map.contains_key("if") {
            self.note("Note: conditional (`if`/`then`/`else`) constraints are not expressed in the type.");
        }
        let ty = if parts.is_empty() { UNKNOWN } else { intersection(parts) };
        if map.get("nullable").and_then(Value::as_bool) == Some(true) {
            union(vec![ty, Ty::Keyword("null")])
        } else {
            ty
        }
    }

    /// The type described by the schema's own keywords (`const`, `enum`, `type` and the keywords
    /// that imply a type), or `None` when it has none of them.
    fn base_type(&mut self, map: &Map<String, Value>, cx: Cx) -> Option<Ty> {
        if let Some(c) = map.get("const") {
            return Some(self.literal(c, cx.depth));
        }
        if let Some(e) = map.get("enum") {
            return Some(match e.as_array() {
                Some(values) => union(values.iter().map(|v| self.literal(v, cx.depth)).collect()),
                None => {
                    self.note("Note: `enum` is not an array; typed as `unknown`.");
                    UNKNOWN
                }
            });
        }
        let types: Vec<String> = match map.get("type") {
            Some(Value::String(t)) => vec![t.clone()],
            Some(Value::Array(ts)) => {
                let v: Vec<String> = ts.iter().filter_map(|t| t.as_str().map(str::to_string)).collect();
                if v.len() != ts.len() || v.is_empty() {
                    self.note("Note: `type` is not a list of type names; typed as `unknown`.");
                    return Some(UNKNOWN);
                }
                v
            }
            Some(_) => {
                self.note("Note: `type` is not a type name; typed as `unknown`.");
                return Some(UNKNOWN);
            }
            None => match implied_type(map) {
                Some(t) => vec![t.to_string()],
                None => return None,
            },
        };
        let mut members = Vec::new();
        for t in &types {
            members.push(match t.as_str() {
                "string" => Ty::Keyword("string"),
                "number" | "integer" => Ty::Keyword("number"),
                "boolean" => Ty::Keyword("boolean"),
                "null" => Ty::Keyword("null"),
                "object" => self.object_type(map, cx),
                "array" => self.array_type(map, cx),
                other => {
                    self.note(format!("Note: unknown type name {}; typed as `unknown`.", string_literal(other)));
                    UNKNOWN
                }
            });
        }
        Some(union(members))
    }

    fn object_type(&mut self, map: &Map<String, Value>, cx: Cx) -> Ty {
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let required_set: HashSet<&str> = required.iter().copied().collect();
        let mut obj = Obj::default();
        match map.get("properties") {
            Some(Value::Object(props)) => {
                for (name, schema) in props {
                    self.notes.push(Vec::new());
                    let mut ty = self.convert(schema, cx.nested());
                    let optional = !required_set.contains(name.as_str());
                    if optional && OBJECT_MEMBERS.contains(&name.as_str()) && !ty.is_unknown() {
                        ty = union(vec![ty, Ty::Named(format!("Object[{}]", string_literal(name)))]);
                        self.note(format!(
                            "Note: when absent, this property reads as the `{name}` every object inherits, hence the wider type."
                        ));
                    }
                    let notes = self.notes.pop().unwrap_or_default();
                    let mut doc = Doc::new();
                    field_doc(&mut doc, schema, &notes);
                    obj.props.push(Prop { name: name.clone(), optional, ty, doc });
                }
            }
            Some(_) => self.note("Note: `properties` is not an object; ignored."),
            None => {}
        }

        let mut index: Option<Ty> = match map.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(UNKNOWN),
            Some(s @ Value::Object(_)) => Some(self.convert(s, cx.nested())),
            Some(_) => {
                self.note("Note: `additionalProperties` is not a schema; ignored.");
                None
            }
            None => None,
        };
        if let Some(Value::Object(patterns)) = map.get("patternProperties")
            && !patterns.is_empty()
        {
            let mut members: Vec<Ty> = index.take().into_iter().collect();
            let mut names = Vec::new();
            for (pattern, schema) in patterns {
                members.push(self.convert(schema, cx.nested()));
                names.push(format!("/{pattern}/"));
            }
            self.note(format!("Other keys must match {}.", names.join(" or ")));
            index = Some(union(members));
        }

        // Required keys without a property schema still have to be present. They take the
        // type of other keys, unless it is too large to repeat for each of them.
        let mut declared: HashSet<String> = obj.props.iter().map(|p| p.name.clone()).collect();
        let key_ty = match &index {
            Some(i) if fits(i, &mut { MAX_COPIED_NODES }) => i.clone(),
            _ => UNKNOWN,
        };
        for key in &required {
            if declared.insert(key.to_string()) {
                obj.props.push(Prop { name: key.to_string(), optional: false, ty: key_ty.clone(), doc: Doc::new() });
            }
        }

        let explicit_closed = map.get("additionalProperties") == Some(&Value::Bool(false));
        if obj.props.is_empty() && index.is_none() {
            // No properties at all: for a tool's arguments that means "takes none"; elsewhere
            // it is any object unless extra keys are forbidden.
            return if explicit_closed || cx.input_root { Ty::EmptyObject } else { obj_with_index(obj, UNKNOWN) };
        }
        if let Some(idx) = index {
            // Every property must fit the index signature (TypeScript checks it), so it repeats
            // their types. Repeating large ones would double the text at every nesting level.
            let mut budget = MAX_COPIED_NODES;
            if !obj.props.iter().all(|p| fits(&p.ty, &mut budget)) {
                self.note(
                    "Note: other keys are typed `unknown`: the index signature would have to repeat the \
                     properties' types, which are too large.",
                );
                return obj_with_index(obj, UNKNOWN);
            }
            let mut members = vec![idx];
            members.extend(obj.props.iter().map(|p| p.ty.clone()));
            if obj.props.iter().any(|p| p.optional) {
                members.push(Ty::Keyword("undefined"));
            }
            let idx = union(members);
            return obj_with_index(obj, idx);
        }
        Ty::Object(obj)
    }

    fn array_type(&mut self, map: &Map<String, Value>, cx: Cx) -> Ty {
        let min = map.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = map.get("maxItems").and_then(Value::as_u64);
        let (prefix, rest_schema) = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(p)), items) => (Some(p), items),
            (_, Some(Value::Array(p))) => (Some(p), map.get("additionalItems")),
            _ => (None, None),
        };
        if let Some(prefix) = prefix {
            let items: Vec<(Ty, bool)> =
                prefix.iter().enumerate().map(|(i, s)| (self.convert(s, cx.nested()), (i as u64) >= min)).collect();
            let closed = max.is_some_and(|m| m <= prefix.len() as u64);
            let rest = match rest_schema {
                _ if closed => None,
                Some(Value::Bool(false)) => None,
                Some(s) => Some(Box::new(self.convert(s, cx.nested()))),
                None => Some(Box::new(UNKNOWN)),
            };
            return Ty::Tuple { items, rest };
        }
        let item = match map.get("items") {
            Some(s) => self.convert(s, cx.nested()),
            None => UNKNOWN,
        };
        if let Some(max) = max
            && max == min
            && (1..=MAX_FIXED_TUPLE).contains(&max)
        {
            return Ty::Tuple { items: (0..max).map(|_| (item.clone(), false)).collect(), rest: None };
        }
        Ty::Array(Box::new(item))
    }

    /// A JSON value as a literal type (objects and arrays become structural literal types).
    fn literal(&mut self, v: &Value, depth: usize) -> Ty {
        if depth > MAX_DEPTH {
            return UNKNOWN;
        }
        match v {
            Value::Null => Ty::Keyword("null"),
            Value::Bool(b) => Ty::Literal(b.to_string()),
            Value::Number(n) => Ty::Literal(n.to_string()),
            Value::String(s) => Ty::Literal(string_literal(s)),
            Value::Array(a) => {
                Ty::Tuple { items: a.iter().map(|x| (self.literal(x, depth + 1), false)).collect(), rest: None }
            }
            Value::Object(o) => Ty::Object(Obj {
                props: o
                    .iter()
                    .map(|(k, x)| Prop {
                        name: k.clone(),
                        optional: false,
                        ty: self.literal(x, depth + 1),
                        doc: Doc::new(),
                    })
                    .collect(),
                index: None,
            }),
        }
    }

    fn reference(&mut self, r: &Value, cx: Cx) -> Ty {
        let Some(r) = r.as_str() else {
            self.note("Note: `$ref` is not a string; typed as `unknown`.");
            return UNKNOWN;
        };
        if r == "#" {
            self.edge(cx, Node::Root(cx.root));
            return Ty::Named(self.root_names[cx.root].clone());
        }
        let Some(pointer) = local_ref_pointer(r).filter(|p| !p.is_empty()) else {
            self.note(format!(
                "Note: `$ref` {} points outside this schema, which is not supported; typed as `unknown`.",
                string_literal(r)
            ));
            return UNKNOWN;
        };
        if self.roots[cx.root].pointer(&pointer).is_none() {
            self.note(format!("Note: `$ref` {} does not resolve; typed as `unknown`.", string_literal(r)));
            return UNKNOWN;
        }
        let i = self.def_for(cx.root, &pointer);
        self.edge(cx, Node::Def(i));
        Ty::Named(self.defs[i].name.clone())
    }

    fn edge(&mut self, cx: Cx, to: Node) {
        if cx.direct {
            self.edges.insert((self.current, to));
        }
    }

    /// The named type for `pointer` in `root`, created (and queued) on first use. The output
    /// schema shares the input's type when the target and everything it references are equal.
    fn def_for(&mut self, root: usize, pointer: &str) -> usize {
        if let Some(&i) = self.def_index.get(&(root, pointer.to_string())) {
            return i;
        }
        let other = 1 - root;
        if let Some(&i) = self.def_index.get(&(other, pointer.to_string()))
            && same_closure(self.roots[root], self.roots[other], pointer)
        {
            self.def_index.insert((root, pointer.to_string()), i);
            return i;
        }
        let last = pointer.rsplit('/').next().unwrap_or("").replace("~1", "/").replace("~0", "~");
        let base = pascal_case(&super::naming::camel_case(&last, "Def"));
        let base = if base.starts_with('_') { format!("T{base}") } else { base };
        // Resume the suffix search where the last name with this base stopped (names are never
        // freed), so thousands of `$defs` with one base name stay linear.
        let start = self.next_suffix.get(&base).copied().unwrap_or(1);
        let (k, name) = (start..)
            .map(|k| (k, if k == 1 { base.clone() } else { format!("{base}_{k}") }))
            .find(|(_, n)| !self.used_names.contains(n) && !super::naming::is_reserved(n))
            .unwrap_or_else(|| (start, base.clone()));
        self.next_suffix.insert(base, k + 1);
        self.used_names.insert(name.clone());
        let i = self.defs.len();
        self.def_by_name.insert(name.clone(), i);
        self.defs.push(Def { name, root, pointer: pointer.to_string(), decl: None });
        self.def_index.insert((root, pointer.to_string()), i);
        self.queue.push_back(i);
        i
    }

    /// Whether a value of this type is always an object (so it can be the tool's arguments).
    fn is_object_like(&self, ty: &Ty, seen: &mut BTreeSet<String>) -> bool {
        match ty {
            Ty::Object(_) | Ty::EmptyObject => true,
            Ty::Named(n) => match self.decl_named(n) {
                Some(d) => seen.insert(n.clone()) && self.is_object_like(&d.ty, seen),
                None => false,
            },
            Ty::Union(ms) => ms.iter().all(|m| self.is_object_like(m, seen)),
            Ty::Intersection(ms) => ms.iter().any(|m| self.is_object_like(m, seen)),
            _ => false,
        }
    }

    /// Whether `{}` is a valid value of this type (no required properties anywhere).
    fn all_optional(&self, ty: &Ty, seen: &mut BTreeSet<String>) -> bool {
        match ty {
            Ty::EmptyObject => true,
            Ty::Object(o) => o.props.iter().all(|p| p.optional),
            Ty::Named(n) => match self.decl_named(n) {
                Some(d) => seen.insert(n.clone()) && self.all_optional(&d.ty, seen),
                None => false,
            },
            Ty::Union(ms) => ms.iter().any(|m| self.all_optional(m, seen)),
            Ty::Intersection(ms) => ms.iter().all(|m| self.all_optional(m, seen)),
            _ => false,
        }
    }

    fn decl_named(&self, name: &str) -> Option<&Decl> {
        self.def_by_name.get(name).and_then(|&i| self.defs[i].decl.as_ref())
    }
}

/// How many type nodes an index signature may repeat from its object's properties (or a
/// required key without a schema from the index signature) before it becomes `unknown`.
const MAX_COPIED_NODES: usize = 256;

/// Whether `ty` has at most `budget` nodes; counts `budget` down and stops as soon as it is spent.
fn fits(ty: &Ty, budget: &mut usize) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    match ty {
        Ty::Keyword(_) | Ty::Literal(_) | Ty::Named(_) | Ty::EmptyObject => true,
        Ty::Array(t) => fits(t, budget),
        Ty::Tuple { items, rest } => {
            items.iter().all(|(t, _)| fits(t, budget)) && rest.as_deref().is_none_or(|r| fits(r, budget))
        }
        Ty::Object(o) => {
            o.props.iter().all(|p| fits(&p.ty, budget)) && o.index.as_deref().is_none_or(|i| fits(i, budget))
        }
        Ty::Union(ms) | Ty::Intersection(ms) => ms.iter().all(|m| fits(m, budget)),
    }
}

fn obj_with_index(mut obj: Obj, index: Ty) -> Ty {
    obj.index = Some(Box::new(index));
    Ty::Object(obj)
}

/// No `type`, no keyword implying one, no reference or combinator.
fn says_nothing_about_type(map: &Map<String, Value>) -> bool {
    implied_type(map).is_none()
        && !["type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const", "not"].iter().any(|k| map.contains_key(*k))
}

/// The type a schema without `type` implies through its other keywords.
fn implied_type(map: &Map<String, Value>) -> Option<&'static str> {
    let has = |keys: &[&str]| keys.iter().any(|k| map.contains_key(*k));
    if has(&["properties", "additionalProperties", "patternProperties", "required", "minProperties", "maxProperties"]) {
        Some("object")
    } else if has(&["items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"]) {
        Some("array")
    } else if has(&["minLength", "maxLength", "pattern"]) {
        Some("string")
    } else if has(&["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]) {
        Some("number")
    } else {
        None
    }
}

/// Whether `pointer` and everything it references transitively are equal in both roots.
fn same_closure(a: &Value, b: &Value, pointer: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![pointer.to_string()];
    while let Some(p) = stack.pop() {
        if !seen.insert(p.clone()) {
            continue;
        }
        let (Some(x), Some(y)) = (a.pointer(&p), b.pointer(&p)) else { return false };
        if x != y {
            return false;
        }
        collect_refs(x, &mut stack);
    }
    true
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref" {
                    if let Some(p) = x.as_str().and_then(local_ref_pointer) {
                        out.push(p);
                    }
                } else {
                    collect_refs(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

/// TSDoc for a property or a named type: description (or title), constraints, examples, notes.
fn field_doc(doc: &mut Doc, schema: &Value, notes: &[String]) {
    let Some(map) = schema.as_object() else {
        for n in notes {
            doc.text(n);
        }
        return;
    };
    // `anyOf: [{...constraints}, {type: null}]` (Pydantic's Optional[T]): document the inner schema.
    let inner = ["anyOf", "oneOf"].iter().find_map(|k| {
        let alts = map.get(*k)?.as_array()?;
        let non_null: Vec<&Value> = alts.iter().filter(|a| a.get("type") != Some(&Value::from("null"))).collect();
        match non_null.as_slice() {
            [one] if one.get("$ref").is_none() => one.as_object(),
            _ => None,
        }
    });
    let get = |k: &str| map.get(k).or_else(|| inner.and_then(|m| m.get(k)));

    if let Some(d) = get("description").and_then(Value::as_str).filter(|d| !d.trim().is_empty()) {
        doc.text(d);
    } else if let Some(t) = get("title").and_then(Value::as_str) {
        doc.text(t);
    }
    let mut tags = Doc::new();
    if let Some(d) = map.get("default") {
        tags.tag("default", &compact_json(d));
    }
    if let Some(Value::Array(values)) = get("enum") {
        let mut shown: Vec<String> = values.iter().take(MAX_DOC_VALUES).map(compact_json).collect();
        if values.len() > MAX_DOC_VALUES {
            shown.push(format!("… ({} more)", values.len() - MAX_DOC_VALUES));
        }
        tags.tag("enum", &shown.join(", "));
    }
    for key in [
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "contentEncoding",
        "contentMediaType",
    ] {
        if let Some(v) = get(key) {
            let text = match v {
                Value::String(s) => s.clone(),
                other => compact_json(other),
            };
            tags.tag(key, &text);
        }
    }
    if get("deprecated").and_then(Value::as_bool) == Some(true) {
        tags.tag("deprecated", "");
    }
    let mut examples: Vec<&Value> = match get("examples") {
        Some(Value::Array(e)) => e.iter().collect(),
        _ => Vec::new(),
    };
    if let Some(e) = get("example") {
        examples.push(e);
    }
    for e in examples.into_iter().take(MAX_EXAMPLES) {
        tags.tag("example", &compact_json(e));
    }
    if !notes.is_empty() {
        if !doc.is_empty() {
            doc.blank();
        }
        for n in notes {
            doc.text(n);
        }
    }
    if !tags.is_empty() {
        doc.extend(&tags);
    }
}

/// Single-line JSON, shortened for docs.
fn compact_json(v: &Value) -> String {
    const MAX: usize = 300;
    let s = v.to_string();
    if s.chars().count() <= MAX {
        return s;
    }
    let cut: String = s.chars().take(MAX).collect();
    format!("{cut}…")
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "schema_props.rs"]
mod props;
