//! MCP's other primitives through the manager (resources, templates, prompts, completions,
//! subscriptions, the logging level), against npm's server-everything, which offers them all,
//! and the fixture server, which offers only tools.

use crate::support;

use agent::mcp::McpManager;
use agent::mcp::primitives::CompletionRef;
use serde_json::{Map, Value, json};
use support::{Project, everything_yaml, fixture_stdio_yaml, node_or_skip};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

#[tokio::test]
async fn the_manager_lists_reads_and_completes_a_real_servers_resources_and_prompts() {
    if !node_or_skip("server-everything") {
        return;
    }
    let p = Project::with_servers(&format!("{}{}", everything_yaml("everything"), fixture_stdio_yaml("fixture", &[])));
    let manager = McpManager::new(&p.library_config());

    let offers = manager.offers("everything").await.unwrap();
    assert!(offers.resources && offers.prompts && offers.completions && offers.logging, "{offers:?}");
    let listed = manager.resources("everything").await.unwrap();
    let doc = "demo://resource/static/document/architecture.md";
    assert!(listed.resources.iter().any(|r| r.uri == doc), "{listed:?}");
    assert!(listed.templates.iter().any(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}"));
    let read = manager.read_resource("everything", doc).await.unwrap();
    let text = serde_json::to_value(&read.contents[0]).unwrap();
    assert!(text["text"].as_str().unwrap().contains("Architecture"), "{text}");
    // A URI made from a template is not listed, and still read.
    let read = manager.read_resource("everything", "demo://resource/dynamic/text/3").await.unwrap();
    assert_eq!(read.contents.len(), 1);

    let prompts = manager.prompts("everything").await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(names.contains(&"simple-prompt") && names.contains(&"args-prompt"), "{names:?}");
    let got = manager.get_prompt("everything", "args-prompt", obj(json!({"city": "Oslo"}))).await.unwrap();
    let said = serde_json::to_string(&got.messages).unwrap();
    assert!(said.contains("Oslo"), "{said}");

    // Bad input: suggestions, the missing argument named before the server is asked.
    let err = manager.get_prompt("everything", "simple-promt", Map::new()).await.unwrap_err();
    assert!(err.to_string().contains("did you mean `everything.simple-prompt`"), "{err}");
    let err = manager.get_prompt("everything", "args-prompt", Map::new()).await.unwrap_err();
    assert!(err.to_string().contains("missing required argument `city`"), "{err}");
    let err = manager.read_resource("everything", &format!("{doc}x")).await.unwrap_err();
    assert!(err.to_string().starts_with(&format!("unknown resource `{doc}x` on server `everything`")), "{err}");
    assert!(err.to_string().contains(&format!("did you mean `{doc}`")), "{err}");

    let done = manager
        .complete("everything", &CompletionRef::Prompt("completable-prompt".into()), "department", "", Map::new())
        .await
        .unwrap();
    assert!(!done.values.is_empty(), "{done:?}");
    let first = done.values[0].clone();
    let narrowed = manager
        .complete(
            "everything",
            &CompletionRef::Prompt("completable-prompt".into()),
            "name",
            "",
            obj(json!({"department": first})),
        )
        .await
        .unwrap();
    assert!(!narrowed.values.is_empty(), "{narrowed:?}");
    manager.set_log_level("everything", agent::config::LogLevel::Debug).await.unwrap();

    let err = manager.resources("fixture").await.unwrap();
    assert!(err.resources.is_empty());
    let err = manager.read_resource("fixture", "file:///x").await.unwrap_err();
    assert_eq!(err.to_string(), "server `fixture` offers no resources");
    let err = manager.get_prompt("fixture", "x", obj(json!({}))).await.unwrap_err();
    assert_eq!(err.to_string(), "server `fixture` offers no prompts");
    manager.shutdown().await;
}

/// A server that adds a resource says `resources/list_changed`; the kept list is listed again.
/// A subscription's `notifications/resources/updated` reaches the manager's events.
#[tokio::test]
async fn the_resource_list_follows_list_changed_and_subscriptions_deliver_updates() {
    use agent::mcp::handler::ClientEvent;
    if !node_or_skip("server-everything") {
        return;
    }
    let p = Project::with_servers(&everything_yaml("everything"));
    let manager = McpManager::new(&p.library_config());
    let before = manager.resources("everything").await.unwrap();
    let mut events = manager.events().subscribe();
    let data = "data:text/plain;base64,aGVsbG8gd29ybGQ=";
    let args = obj(json!({"name": "hello.txt.gz", "data": data, "outputType": "resourceLink"}));
    let r = manager.call_tool("everything", "gzip-file-as-resource", args).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let changed = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            if let Ok(ClientEvent::ResourcesChanged { server }) = events.recv().await {
                return server;
            }
        }
    })
    .await
    .expect("resources/list_changed within 10 s");
    assert_eq!(changed, "everything");
    let after = manager.resources("everything").await.unwrap();
    assert_eq!(after.resources.len(), before.resources.len() + 1, "{after:?}");
    let added = after.resources.iter().find(|r| r.name.contains("hello.txt.gz")).expect("the new resource is listed");

    manager.subscribe("everything", &added.uri).await.unwrap();
    let on = manager.call_tool("everything", "toggle-subscriber-updates", Map::new()).await.unwrap();
    assert_ne!(on.is_error, Some(true), "{on:?}");
    let updated = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        loop {
            if let Ok(ClientEvent::ResourceUpdated { server, uri }) = events.recv().await {
                return (server, uri);
            }
        }
    })
    .await
    .expect("a resources/updated notification within 20 s");
    assert_eq!(updated, ("everything".to_string(), added.uri.clone()));
    manager.unsubscribe("everything", &added.uri).await.unwrap();
    manager.shutdown().await;
}

/// A server that offers resources and no tools (its `tools/list` answers -32601, as it may
/// when it does not declare tools) starts, and its resources are read.
#[tokio::test]
async fn a_server_without_tools_starts_and_serves_its_resources() {
    let p = Project::with_servers(&fixture_stdio_yaml("docs", &["--resources", "--no-tools"]));
    let manager = McpManager::new(&p.library_config());
    assert!(manager.tools("docs").await.unwrap().is_empty());
    let read = manager.read_resource("docs", "fixture://readme").await.unwrap();
    let text = serde_json::to_value(&read.contents[0]).unwrap();
    assert!(text["text"].as_str().unwrap().starts_with("# Fixture"), "{text}");
    manager.shutdown().await;
}
