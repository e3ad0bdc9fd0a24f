//! What serve lists of its upstream servers' resources, resource templates and prompts, under
//! the naming mode (`serve.names`, docs/serve.md), and where a downstream name goes back to.
//!
//! `prefixed`: prompts become `<server>_<prompt>` (the unique-name rule tools use); a resource
//! URI or template stays as it is when no other server could answer it (lists it, or has a
//! template that matches it or may overlap it), else it becomes `agent:<server>/<uri>`
//! ([`super::uris`]), so a read always goes to the server that listed it. `bare`: everything as
//! upstream has it, and every name two servers share is a [`Clash`] (serve refuses to start on
//! one; later, the first server in name order keeps the name).
//!
//! Pure: it is built from lists the manager already holds, and tested without servers.

use std::collections::{BTreeMap, HashSet};

use rmcp::model::{Prompt, Resource, ResourceTemplate};

use super::uris;
use crate::config::ServeNames;
use crate::mcp::naming::unique_name;
use crate::mcp::primitives::{Resources, template_matches};

/// One upstream server's lists.
pub struct Upstream<'a> {
    pub server: &'a str,
    /// `None`: it offers no resources.
    pub resources: Option<&'a Resources>,
    /// `None`: it offers no prompts.
    pub prompts: Option<&'a [Prompt]>,
}

/// Two enabled servers offering the same name in `bare` mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    /// `tool`, `prompt`, `resource URI`, `resource template`.
    pub kind: &'static str,
    pub name: String,
    pub first: String,
    /// `None`: serve's own name (`execute_code`, `search_tools`, `describe_tool`).
    pub second: Option<String>,
}

impl std::fmt::Display for Clash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (a, kind, name) = (&self.first, self.kind, &self.name);
        match &self.second {
            None => write!(f, "server `{a}` offers the {kind} `{name}`, a name serve itself uses"),
            Some(b) => write!(f, "servers `{a}` and `{b}` both offer the {kind} `{name}`"),
        }
    }
}

/// The downstream view of every upstream server's resources and prompts.
#[derive(Debug, Default)]
pub struct Listing {
    pub resources: Vec<Resource>,
    pub templates: Vec<ResourceTemplate>,
    pub prompts: Vec<Prompt>,
    pub clashes: Vec<Clash>,
    mode: ServeNames,
    /// Downstream prompt name → (server, upstream name).
    prompt_names: BTreeMap<String, (String, String)>,
    /// URIs listed as they are → the server that listed them.
    kept_uris: BTreeMap<String, String>,
    /// Templates listed as they are: (server, template), in server order.
    kept_templates: Vec<(String, String)>,
    /// Downstream template → (server, upstream template).
    template_names: BTreeMap<String, (String, String)>,
    /// Servers that offer resources, in name order.
    resource_servers: Vec<String>,
}

/// The literal text of a template before its first expression.
fn literal_prefix(template: &str) -> &str {
    template.split('{').next().unwrap_or(template)
}

/// Whether two templates may produce the same URI (one's literal prefix starts the other's).
fn may_overlap(a: &str, b: &str) -> bool {
    let (a, b) = (literal_prefix(a), literal_prefix(b));
    a.starts_with(b) || b.starts_with(a)
}

impl Listing {
    /// The listing of `upstream` (in server name order) under `mode`.
    pub fn build(mode: ServeNames, upstream: &[Upstream<'_>]) -> Listing {
        let mut out = Listing { mode, ..Default::default() };
        let with_resources: Vec<(&str, &Resources)> =
            upstream.iter().filter_map(|u| u.resources.map(|r| (u.server, r))).collect();
        out.resource_servers = with_resources.iter().map(|(s, _)| s.to_string()).collect();
        // Which other servers could answer a URI or a template of `server`.
        let others_claim_uri = |server: &str, uri: &str| -> Option<&str> {
            with_resources.iter().filter(|(s, _)| *s != server).find_map(|(s, r)| {
                let claims = r.resources.iter().any(|x| x.uri == uri)
                    || r.templates.iter().any(|t| template_matches(&t.uri_template, uri));
                claims.then_some(*s)
            })
        };
        let others_claim_template = |server: &str, template: &str| -> Option<&str> {
            with_resources.iter().filter(|(s, _)| *s != server).find_map(|(s, r)| {
                let claims = r.resources.iter().any(|x| template_matches(template, &x.uri))
                    || r.templates.iter().any(|t| may_overlap(&t.uri_template, template));
                claims.then_some(*s)
            })
        };
        let mut clashes: HashSet<(&'static str, String)> = HashSet::new();
        let mut clash = |out: &mut Listing, kind: &'static str, name: &str, a: &str, b: &str| {
            let (first, second) = if a <= b { (a, b) } else { (b, a) };
            if clashes.insert((kind, name.to_string())) {
                out.clashes.push(Clash { kind, name: name.into(), first: first.into(), second: Some(second.into()) });
            }
        };
        for (server, r) in &with_resources {
            for res in &r.resources {
                let other = others_claim_uri(server, &res.uri);
                let mut res = res.clone();
                match mode {
                    ServeNames::Bare => {
                        if let Some(o) = other {
                            clash(&mut out, "resource URI", &res.uri, server, o);
                        }
                        out.kept_uris.entry(res.uri.clone()).or_insert_with(|| server.to_string());
                    }
                    ServeNames::Prefixed if other.is_none() && !res.uri.starts_with(uris::SCHEME) => {
                        out.kept_uris.insert(res.uri.clone(), server.to_string());
                    }
                    ServeNames::Prefixed => res.uri = uris::wrap(server, &res.uri),
                }
                out.resources.push(res);
            }
            for t in &r.templates {
                let other = others_claim_template(server, &t.uri_template);
                let mut t = t.clone();
                let upstream_template = t.uri_template.clone();
                match mode {
                    ServeNames::Bare => {
                        if let Some(o) = other {
                            clash(&mut out, "resource template", &t.uri_template, server, o);
                        }
                        out.kept_templates.push((server.to_string(), t.uri_template.clone()));
                    }
                    ServeNames::Prefixed if other.is_none() && !t.uri_template.starts_with(uris::SCHEME) => {
                        out.kept_templates.push((server.to_string(), t.uri_template.clone()));
                    }
                    ServeNames::Prefixed => t.uri_template = uris::wrap(server, &t.uri_template),
                }
                out.template_names
                    .entry(t.uri_template.clone())
                    .or_insert_with(|| (server.to_string(), upstream_template));
                out.templates.push(t);
            }
        }
        let mut taken = HashSet::new();
        for u in upstream {
            let Some(prompts) = u.prompts else { continue };
            // Prefixed names are given in name order (so a `_2` is stable); bare mode keeps
            // the server's own order.
            let mut ordered: Vec<&Prompt> = prompts.iter().collect();
            if mode == ServeNames::Prefixed {
                ordered.sort_by(|a, b| a.name.cmp(&b.name));
            }
            for p in ordered {
                let name = match mode {
                    ServeNames::Prefixed => unique_name("", u.server, &p.name, &mut taken),
                    ServeNames::Bare => {
                        if let Some((first, _)) = out.prompt_names.get(&p.name) {
                            let first = first.clone();
                            clash(&mut out, "prompt", &p.name, &first, u.server);
                            continue;
                        }
                        p.name.clone()
                    }
                };
                let mut shown = p.clone();
                shown.name = name.clone();
                out.prompt_names.insert(name, (u.server.to_string(), p.name.clone()));
                out.prompts.push(shown);
            }
        }
        out
    }

    /// The server and upstream name of a downstream prompt name.
    pub fn prompt(&self, name: &str) -> Option<(&str, &str)> {
        self.prompt_names.get(name).map(|(s, p)| (s.as_str(), p.as_str()))
    }

    /// The server and upstream template of a downstream template.
    pub fn template(&self, template: &str) -> Option<(&str, &str)> {
        self.template_names.get(template).map(|(s, t)| (s.as_str(), t.as_str()))
    }

    /// The server that answers a downstream URI, and the URI to send it: a rewritten URI names
    /// its server (one of `enabled`, never another); else the one server that lists the URI,
    /// or whose listed template matches it; else, when only one server offers resources, that
    /// one (it answers for URIs it does not list, as it would to its own client).
    pub fn route<'u>(&self, uri: &'u str, enabled: &[String]) -> Option<(String, &'u str)> {
        if self.mode == ServeNames::Prefixed
            && let Some((server, original)) = uris::unwrap(uri)
        {
            return enabled.contains(&server).then_some((server, original));
        }
        if let Some(server) = self.kept_uris.get(uri) {
            return Some((server.clone(), uri));
        }
        if let Some((server, _)) = self.kept_templates.iter().find(|(_, t)| template_matches(t, uri)) {
            return Some((server.clone(), uri));
        }
        match self.resource_servers.as_slice() {
            [only] => Some((only.clone(), uri)),
            _ => None,
        }
    }

    /// The servers that offer resources.
    pub fn resource_servers(&self) -> &[String] {
        &self.resource_servers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resources(uris: &[&str], templates: &[&str]) -> Resources {
        let v = serde_json::json!({
            "resources": uris.iter().map(|u| serde_json::json!({"uri": u, "name": u})).collect::<Vec<_>>(),
            "resourceTemplates": templates.iter().map(|t| serde_json::json!({"uriTemplate": t, "name": t})).collect::<Vec<_>>(),
        });
        Resources {
            resources: serde_json::from_value(v["resources"].clone()).unwrap(),
            templates: serde_json::from_value(v["resourceTemplates"].clone()).unwrap(),
        }
    }

    fn prompts(names: &[&str]) -> Vec<Prompt> {
        names.iter().map(|n| serde_json::from_value(serde_json::json!({"name": n})).unwrap()).collect()
    }

    #[test]
    fn prefixed_keeps_what_one_server_answers_and_rewrites_the_rest_reversibly() {
        let a = resources(&["file:///shared.txt", "only-a://x", "note://a/1"], &["note://{id}", "a-tpl://{id}"]);
        let b = resources(&["file:///shared.txt", "only-b://y"], &["note://b/{id}"]);
        let (pa, pb) = (prompts(&["greet", "x.y"]), prompts(&["greet"]));
        let up = [
            Upstream { server: "a", resources: Some(&a), prompts: Some(&pa) },
            Upstream { server: "b", resources: Some(&b), prompts: Some(&pb) },
        ];
        let l = Listing::build(ServeNames::Prefixed, &up);
        let uris: Vec<&str> = l.resources.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(
            uris,
            ["agent:a/file:///shared.txt", "only-a://x", "note://a/1", "agent:b/file:///shared.txt", "only-b://y"]
        );
        let templates: Vec<&str> = l.templates.iter().map(|t| t.uri_template.as_str()).collect();
        assert_eq!(templates, ["agent:a/note://{id}", "a-tpl://{id}", "agent:b/note://b/{id}"]);
        let names: Vec<&str> = l.prompts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a_greet", "a_x_y", "b_greet"]);
        assert_eq!(l.prompt("b_greet"), Some(("b", "greet")));
        assert!(l.clashes.is_empty());
        let enabled = vec!["a".to_string(), "b".to_string()];
        let route = |u: &'static str| l.route(u, &enabled).map(|(s, u)| (s, u.to_string()));
        assert_eq!(route("agent:b/file:///shared.txt"), Some(("b".into(), "file:///shared.txt".into())));
        assert_eq!(route("agent:a/note://7"), Some(("a".into(), "note://7".into())));
        assert_eq!(route("only-b://y"), Some(("b".into(), "only-b://y".into())));
        assert_eq!(route("a-tpl://9"), Some(("a".into(), "a-tpl://9".into())));
        assert_eq!(route("file:///shared.txt"), None, "two servers list it: only the rewritten URIs route");
        assert_eq!(route("agent:hidden/file:///x"), None, "a server that is not enabled");
        assert_eq!(l.template("agent:b/note://b/{id}"), Some(("b", "note://b/{id}")));
        assert_eq!(l.template("a-tpl://{id}"), Some(("a", "a-tpl://{id}")));
    }

    #[test]
    fn one_server_keeps_everything_and_answers_unlisted_uris() {
        let a = resources(&["agent:x/y", "demo://1"], &["demo://t/{id}"]);
        let l = Listing::build(ServeNames::Prefixed, &[Upstream { server: "a", resources: Some(&a), prompts: None }]);
        // A URI in serve's own rewritten form is always rewritten, so the form stays unambiguous.
        assert_eq!(l.resources[0].uri, "agent:a/agent:x/y");
        assert_eq!(l.resources[1].uri, "demo://1");
        let enabled = vec!["a".to_string()];
        assert_eq!(l.route("demo://unlisted", &enabled), Some(("a".into(), "demo://unlisted")));
    }

    #[test]
    fn bare_keeps_names_and_reports_every_clash_once() {
        let a = resources(&["file:///shared.txt", "note://1"], &["t://{x}"]);
        let b = resources(&["file:///shared.txt"], &["t://{x}", "note://{n}"]);
        let (pa, pb) = (prompts(&["greet", "mine"]), prompts(&["greet"]));
        let up = [
            Upstream { server: "a", resources: Some(&a), prompts: Some(&pa) },
            Upstream { server: "b", resources: Some(&b), prompts: Some(&pb) },
        ];
        let l = Listing::build(ServeNames::Bare, &up);
        let said: Vec<String> = l.clashes.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            said,
            [
                "servers `a` and `b` both offer the resource URI `file:///shared.txt`",
                "servers `a` and `b` both offer the resource URI `note://1`",
                "servers `a` and `b` both offer the resource template `t://{x}`",
                "servers `a` and `b` both offer the resource template `note://{n}`",
                "servers `a` and `b` both offer the prompt `greet`",
            ]
        );
        assert_eq!(l.prompts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["greet", "mine"]);
        assert_eq!(l.route("file:///shared.txt", &["a".into(), "b".into()]), Some(("a".into(), "file:///shared.txt")));
        assert_eq!(
            l.route("agent:b/file:///shared.txt", &["a".into(), "b".into()]),
            None,
            "bare mode rewrites nothing"
        );
    }
}
