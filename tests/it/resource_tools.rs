//! `list_resources` / `read_resource` beside the tools of direct and progressive runs: offered
//! only when a server of the run offers resources, answered from the real server
//! (server-everything), binary contents described and never passed on, the result limits of
//! tool results. The model is the scripted fake LLM; it plays a model that asks for what it
//! should not get (an unknown URI, a huge resource, a binary one).

use crate::support;
use crate::support::fake_llm;

use fake_llm::{Api, FakeLlm, Reply};
use serde_json::json;
use support::{Project, everything_yaml, fixture_stdio_yaml, node_or_skip};

const DOC: &str = "demo://resource/static/document/architecture.md";

fn project(fake: &FakeLlm, servers_yaml: &str, extra: &str) -> Project {
    let p = Project::new();
    p.write_config(&format!("{}mcp:\n  servers:\n{servers_yaml}{extra}", fake.llm_yaml(Api::Anthropic)));
    p
}

#[test]
fn direct_mode_offers_resource_tools_only_when_a_server_has_resources_and_reads_them() {
    if !node_or_skip("server-everything") {
        return;
    }
    let fake = FakeLlm::start(vec![
        Reply::tools("", &[("list_resources", json!({})), ("list_resources", json!({"server": "evrything"}))]),
        Reply::tools(
            "",
            &[
                ("read_resource", json!({"server": "everything", "uri": DOC})),
                ("read_resource", json!({"server": "everything", "uri": "demo://resource/dynamic/blob/1"})),
                ("read_resource", json!({"server": "everything", "uri": format!("{DOC}x")})),
                ("read_resource", json!({"server": "fixture", "uri": DOC})),
            ],
        ),
        Reply::text("read"),
    ]);
    let servers = format!("{}{}", everything_yaml("everything"), fixture_stdio_yaml("fixture", &[]));
    let p = project(&fake, &servers, "");
    p.run(&["run", "--mode", "direct", "read the docs"]).assert_ok();
    let reqs = fake.requests();
    let offered = reqs[0].tool_names();
    assert!(offered.contains(&"list_resources".to_string()) && offered.contains(&"read_resource".to_string()));
    assert!(reqs[0].system().contains("Servers everything also offer resources"), "{}", reqs[0].system());

    let listed = reqs[1].tool_results();
    assert!(!listed[0].2 && listed[0].1.contains(&format!("everything: {DOC} (architecture.md, text/markdown)")));
    assert!(listed[0].1.contains("everything: demo://resource/dynamic/text/{resourceId} (template: "), "{listed:?}");
    assert!(!listed[0].1.contains("fixture:"), "a tools-only server is not listed: {listed:?}");
    assert!(listed[1].2 && listed[1].1.contains("did you mean `everything`"), "{listed:?}");

    let read = reqs[2].tool_results();
    assert!(!read[0].2 && read[0].1.contains("Architecture"), "{read:?}");
    assert!(!read[1].2, "{read:?}");
    assert!(read[1].1.starts_with("[binary resource demo://resource/dynamic/blob/1: "), "{read:?}");
    assert!(read[1].1.ends_with("; not shown]\n"), "{read:?}");
    assert!(read[2].2 && read[2].1.contains(&format!("did you mean `{DOC}`")), "{read:?}");
    assert!(
        read[3].2 && read[3].1 == "no resources on server `fixture`; servers with resources: everything",
        "{read:?}"
    );

    // The same run without a server that offers resources sends neither tool nor sentence.
    let fake = FakeLlm::start(vec![Reply::text("none")]);
    let p = project(&fake, &fixture_stdio_yaml("fixture", &[]), "");
    p.run(&["run", "--mode", "direct", "anything"]).assert_ok();
    let reqs = fake.requests();
    assert!(!reqs[0].tool_names().iter().any(|n| n.contains("resource")), "{:?}", reqs[0].tool_names());
    assert!(!reqs[0].system().contains("resources"), "{}", reqs[0].system());
}

#[test]
fn progressive_mode_offers_them_too_under_the_limits_of_tool_results() {
    if !node_or_skip("server-everything") {
        return;
    }
    let fake = FakeLlm::start(vec![
        Reply::tool("read_resource", json!({"server": "everything", "uri": DOC})),
        Reply::text("done"),
    ]);
    let p = project(&fake, &everything_yaml("everything"), "");
    p.run(&["run", "--mode", "progressive", "--max-tool-result", "100B", "read it"]).assert_ok();
    let reqs = fake.requests();
    let offered = reqs[0].tool_names();
    assert_eq!(offered, ["search_tools", "call_tool", "list_resources", "read_resource"]);
    let (_, content, is_error) = reqs[1].tool_results().remove(0);
    assert!(!is_error && content.contains("[result truncated: "), "{content}");
}
