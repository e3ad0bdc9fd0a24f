//! Session steps: what a step defines at its top level stays reachable from the next step.
//!
//! Steps are ES modules, whose top-level bindings are private to the module. Before a step runs,
//! one line is put in front of its (already transpiled) JavaScript that defines, for each of its
//! top-level bindings (`const`, `let`, `var`, `function`, `class`, and the imports it kept), an
//! accessor on `globalThis` that reads (and, unless it is a `const` or an import, writes) that
//! binding. A later step's free reference to the name finds the accessor, so it sees the binding
//! itself, live; a later step that declares the name again shadows it in its own module scope
//! and, from then on, carries its own. The accessors are defined before the step's code runs
//! (reading one before its declaration ran throws as the binding would), so definitions made
//! before a step failed are kept too. A name the engine does not let be redefined (`undefined`,
//! `NaN`, `Infinity`) is not carried over.
//!
//! An import the step does not use is dropped when TypeScript is transpiled (it may name a
//! type); the line imports its module as a namespace instead and carries the name over only when
//! the module really exports a value by that name.
//!
//! The added line shifts the step's code down by one line; its source map gets one empty line in
//! front, so positions in errors still point at the step's own lines.

use deno_ast::swc::ast::{
    Decl, DefaultDecl, ImportSpecifier, ModuleDecl, ModuleExportName, ModuleItem, ObjectPatProp, Pat, Stmt, VarDeclKind,
};
use deno_core::ModuleSpecifier;

/// The names the added line itself uses: a step that declares one at its top level (or
/// `globalThis`) carries nothing over, rather than have the line read the step's binding.
const HELPER: &str = "__agent_keep";

/// An import of a step's TypeScript that may be a value: `import { imported as local } from source`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Import {
    local: String,
    /// `Some(name)` for a named import (`default` for a default one), `None` for `* as local`.
    imported: Option<String>,
    source: String,
}

/// The imports of a TypeScript module that are not marked `type`.
pub(crate) fn value_imports(program: deno_ast::ProgramRef<'_>) -> Vec<Import> {
    let deno_ast::ProgramRef::Module(module) = program else { return Vec::new() };
    let mut out = Vec::new();
    for item in &module.body {
        let ModuleItem::ModuleDecl(ModuleDecl::Import(import)) = item else { continue };
        if import.type_only {
            continue;
        }
        let Some(source) = import.src.value.as_str() else { continue };
        for s in &import.specifiers {
            let (local, imported) = match s {
                ImportSpecifier::Named(n) if n.is_type_only => continue,
                ImportSpecifier::Named(n) => {
                    let imported = match &n.imported {
                        Some(ModuleExportName::Ident(i)) => i.sym.to_string(),
                        Some(ModuleExportName::Str(s)) => match s.value.as_str() {
                            Some(v) => v.to_string(),
                            None => continue,
                        },
                        None => n.local.sym.to_string(),
                    };
                    (&n.local, Some(imported))
                }
                ImportSpecifier::Default(d) => (&d.local, Some("default".to_string())),
                ImportSpecifier::Namespace(n) => (&n.local, None),
            };
            out.push(Import { local: local.sym.to_string(), imported, source: source.to_string() });
        }
    }
    out
}

/// A top-level binding of a step.
#[derive(Debug, PartialEq, Eq)]
struct Binding {
    name: String,
    /// `const` and imports: the accessor has no setter (assigning throws, as it would in place).
    read_only: bool,
}

/// `code` (a step's JavaScript) with the line that carries its top-level bindings over put in
/// front, and `source_map` (when there is one) shifted to match. A step that cannot be parsed
/// again, or that declares a name the line needs, is returned as it is.
pub(crate) fn carry_over(
    specifier: &ModuleSpecifier,
    code: String,
    source_map: Option<Vec<u8>>,
    imports: &[Import],
) -> (String, Option<Vec<u8>>) {
    let Some(bindings) = top_level_bindings(specifier, &code) else { return (code, source_map) };
    let dropped: Vec<&Import> = imports.iter().filter(|i| !bindings.iter().any(|b| b.name == i.local)).collect();
    if bindings.is_empty() && dropped.is_empty() {
        return (code, source_map);
    }
    if bindings
        .iter()
        .map(|b| &b.name)
        .chain(imports.iter().map(|i| &i.local))
        .any(|n| n == "globalThis" || n.starts_with(HELPER))
    {
        return (code, source_map);
    }
    let mut line = String::new();
    // The modules of dropped imports, each once, as namespaces.
    let mut sources: Vec<&str> = Vec::new();
    for i in &dropped {
        if !sources.contains(&i.source.as_str()) {
            sources.push(&i.source);
            let quoted = serde_json::to_string(&i.source).unwrap_or_default();
            line.push_str(&format!("import * as {HELPER}_ns{} from {quoted};", sources.len()));
        }
    }
    line.push_str(&format!("(({HELPER})=>{{"));
    for i in &dropped {
        let ns = format!("{HELPER}_ns{}", sources.iter().position(|s| *s == i.source).map_or(0, |p| p + 1));
        let quoted = serde_json::to_string(&i.local).unwrap_or_default();
        match &i.imported {
            Some(name) => {
                let name = serde_json::to_string(name).unwrap_or_default();
                line.push_str(&format!("if({name} in {ns}){HELPER}({quoted},()=>{ns}[{name}]);"));
            }
            None => line.push_str(&format!("{HELPER}({quoted},()=>{ns});")),
        }
    }
    for b in &bindings {
        // A binding's name is an identifier as the parser read it: valid in code as it is, and
        // as a string through JSON.
        let quoted = serde_json::to_string(&b.name).unwrap_or_default();
        if b.read_only {
            line.push_str(&format!("{HELPER}({quoted},()=>{});", b.name));
        } else {
            line.push_str(&format!("{HELPER}({quoted},()=>{n},({HELPER}_v)=>{{{n}={HELPER}_v}});", n = b.name));
        }
    }
    line.push_str(
        "})((n,g,s)=>{try{({}).constructor.defineProperty(globalThis,n,{get:g,set:s,configurable:true,enumerable:false})}catch{}});",
    );
    match source_map {
        Some(map) => match shift_one_line(&map) {
            Some(map) => (format!("{line}\n{code}"), Some(map)),
            // A map we cannot read is not shifted, and then the code must not be either.
            None => (format!("{line}{code}"), Some(map)),
        },
        // No map: kept on the first line, so every other line keeps its number.
        None => (format!("{line}{code}"), None),
    }
}

/// The top-level bindings of `code` as a module, in order, each once; `None` when it does not parse.
fn top_level_bindings(specifier: &ModuleSpecifier, code: &str) -> Option<Vec<Binding>> {
    let parsed = deno_ast::parse_module(deno_ast::ParseParams {
        specifier: specifier.clone(),
        text: code.into(),
        media_type: deno_ast::MediaType::JavaScript,
        capture_tokens: false,
        scope_analysis: false,
        maybe_syntax: None,
    })
    .ok()?;
    let deno_ast::ProgramRef::Module(module) = parsed.program_ref() else { return Some(Vec::new()) };
    let mut out: Vec<Binding> = Vec::new();
    let mut add = |name: &str, read_only: bool| match out.iter_mut().find(|b| b.name == name) {
        // `var x` twice, or a function declared again: the last kind wins.
        Some(b) => b.read_only = read_only,
        None => out.push(Binding { name: name.to_string(), read_only }),
    };
    for item in &module.body {
        match item {
            ModuleItem::ModuleDecl(ModuleDecl::Import(import)) => {
                for s in &import.specifiers {
                    let local = match s {
                        ImportSpecifier::Named(n) => &n.local,
                        ImportSpecifier::Default(d) => &d.local,
                        ImportSpecifier::Namespace(n) => &n.local,
                    };
                    add(&local.sym, true);
                }
            }
            ModuleItem::ModuleDecl(ModuleDecl::ExportDecl(e)) => decl_bindings(&e.decl, &mut add),
            ModuleItem::ModuleDecl(ModuleDecl::ExportDefaultDecl(e)) => match &e.decl {
                DefaultDecl::Fn(f) => {
                    if let Some(id) = &f.ident {
                        add(&id.sym, false);
                    }
                }
                DefaultDecl::Class(c) => {
                    if let Some(id) = &c.ident {
                        add(&id.sym, false);
                    }
                }
                DefaultDecl::TsInterfaceDecl(_) => {}
            },
            ModuleItem::Stmt(Stmt::Decl(d)) => decl_bindings(d, &mut add),
            _ => {}
        }
    }
    Some(out)
}

fn decl_bindings(d: &Decl, add: &mut impl FnMut(&str, bool)) {
    match d {
        Decl::Var(v) => {
            for declarator in &v.decls {
                pat_bindings(&declarator.name, v.kind == VarDeclKind::Const, add);
            }
        }
        Decl::Fn(f) => add(&f.ident.sym, false),
        Decl::Class(c) => add(&c.ident.sym, false),
        // `using` declarations are disposed of when the step ends; the rest are TypeScript-only.
        _ => {}
    }
}

fn pat_bindings(p: &Pat, read_only: bool, add: &mut impl FnMut(&str, bool)) {
    match p {
        Pat::Ident(id) => add(&id.id.sym, read_only),
        Pat::Array(a) => {
            for e in a.elems.iter().flatten() {
                pat_bindings(e, read_only, add);
            }
        }
        Pat::Rest(r) => pat_bindings(&r.arg, read_only, add),
        Pat::Object(o) => {
            for prop in &o.props {
                match prop {
                    ObjectPatProp::KeyValue(kv) => pat_bindings(&kv.value, read_only, add),
                    ObjectPatProp::Assign(a) => add(&a.key.id.sym, read_only),
                    ObjectPatProp::Rest(r) => pat_bindings(&r.arg, read_only, add),
                }
            }
        }
        Pat::Assign(a) => pat_bindings(&a.left, read_only, add),
        Pat::Invalid(_) | Pat::Expr(_) => {}
    }
}

/// A source map (JSON) whose generated lines all moved down by one: one empty line in front of
/// its `mappings`.
fn shift_one_line(map: &[u8]) -> Option<Vec<u8>> {
    let mut v: serde_json::Value = serde_json::from_slice(map).ok()?;
    let mappings = v.get_mut("mappings")?;
    let shifted = format!(";{}", mappings.as_str()?);
    *mappings = serde_json::Value::String(shifted);
    serde_json::to_vec(&v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(code: &str) -> Vec<(String, bool)> {
        let spec = ModuleSpecifier::parse("file:///ws/main.ts").unwrap();
        top_level_bindings(&spec, code).unwrap().into_iter().map(|b| (b.name, b.read_only)).collect()
    }

    #[test]
    fn every_kind_of_top_level_binding_is_found_and_nothing_nested() {
        let code = "import d, { a as b } from './x.ts'; import * as ns from './y.ts';\n\
                    const { p, q: [r, ...s], ...t } = o; let u = 1, w; var v;\n\
                    function f() { const inner = 1; } class C {}\n\
                    export const e = 1; export function g() {} export default function h() {}\n\
                    if (x) { var notTop = 1; function alsoNot() {} }\n\
                    for (let i = 0; i < 1; i++) {}";
        let got = names(code);
        let want: Vec<(String, bool)> = [
            ("d", true),
            ("b", true),
            ("ns", true),
            ("p", true),
            ("r", true),
            ("s", true),
            ("t", true),
            ("u", false),
            ("w", false),
            ("v", false),
            ("f", false),
            ("C", false),
            ("e", true),
            ("g", false),
            ("h", false),
        ]
        .iter()
        .map(|(n, r)| (n.to_string(), *r))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_added_line_keeps_the_map_in_step_and_gives_way_to_a_step_that_uses_its_names() {
        let spec = ModuleSpecifier::parse("file:///ws/main.ts").unwrap();
        let map = br#"{"version":3,"sources":["main.ts"],"mappings":"AAAA;AACA"}"#.to_vec();
        let (code, map) = carry_over(&spec, "const a = 1;\nlet b = a;\n".into(), Some(map), &[]);
        let (first, rest) = code.split_once('\n').unwrap();
        assert!(first.contains(r#"__agent_keep("a",()=>a);"#), "{first}");
        assert!(first.contains(r#"__agent_keep("b",()=>b,(__agent_keep_v)=>{b=__agent_keep_v});"#), "{first}");
        assert_eq!(rest, "const a = 1;\nlet b = a;\n");
        let map: serde_json::Value = serde_json::from_slice(&map.unwrap()).unwrap();
        assert_eq!(map["mappings"], ";AAAA;AACA");
        // A step that declares a name the line needs keeps its code as it is.
        for own in ["const globalThis = 1;", "let __agent_keep = 1;"] {
            assert_eq!(carry_over(&spec, own.into(), None, &[]).0, own);
        }
        // Nothing declared: nothing added.
        assert_eq!(carry_over(&spec, "console.log(1);".into(), None, &[]).0, "console.log(1);");
        // An import transpiling dropped is carried from its module's namespace, if a value.
        let unused =
            Import { local: "add".into(), imported: Some("add".into()), source: "./servers/f/index.ts".into() };
        let (code, _) = carry_over(&spec, "console.log(1);".into(), None, &[unused]);
        assert_eq!(
            code,
            "import * as __agent_keep_ns1 from \"./servers/f/index.ts\";((__agent_keep)=>{if(\"add\" in \
             __agent_keep_ns1)__agent_keep(\"add\",()=>__agent_keep_ns1[\"add\"]);})((n,g,s)=>{try{({}).constructor.\
             defineProperty(globalThis,n,{get:g,set:s,configurable:true,enumerable:false})}catch{}});console.log(1);"
        );
    }
}
