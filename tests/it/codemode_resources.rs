//! Resources and prompts in code mode: the script globals `listResources`, `readResource`,
//! `listPrompts`, `getPrompt` (and `client.ts`'s exports of them) through the real bridge to
//! npm's server-everything, their errors, the result cap, the bridge endpoints' token and body
//! fences, the tree's README and `searchTools` finding them.

use crate::bridge::raw;
use crate::support;

use std::sync::Arc;

use agent::bridge::BridgeServer;
use agent::mcp::McpManager;
use agent::runtime::{ExecRequest, Executor, Limits, Script};
use bytes::Bytes;
use serde_json::{Value, json};
use support::{Project, everything_yaml, fixture_stdio_yaml, node_or_skip};

const DOC: &str = "demo://resource/static/document/architecture.md";

fn exec_json(p: &Project, script: &str) -> Value {
    let r = p.run_stdin(&["exec", "--json", "-"], script);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", r.stdout, r.stderr))
}

/// A script's error as data: what a script sees when it catches one.
const CAUGHT: &str = "async function caught(f: () => Promise<unknown>) {\n\
       try { await f(); return 'no error'; }\n\
       catch (e: any) { return { name: e.name, code: e.code, status: e.status, suggestions: e.suggestions, message: e.message, uri: e.uri, prompt: e.prompt }; }\n\
     }\n";

#[test]
fn a_script_lists_and_reads_resources_text_and_blob_and_gets_prompts_with_arguments() {
    if !node_or_skip("server-everything") {
        return;
    }
    let p = Project::with_servers(&everything_yaml("everything"));
    let out = exec_json(
        &p,
        &format!(
            "import {{ readResource as readViaClient, listPrompts as promptsViaClient }} from './client.ts';\n\
             const listed = await listResources('everything');\n\
             const doc = listed.resources.find((r) => r.uri === {DOC:?})!;\n\
             const text = await readResource('everything', doc.uri);\n\
             const blob = await readResource('everything', 'demo://resource/dynamic/blob/7');\n\
             const b = blob.contents[0] as BlobResourceContents;\n\
             const prompts = await listPrompts('everything');\n\
             const got = await getPrompt('everything', 'args-prompt', {{ city: 'Oslo', state: 'Viken' }});\n\
             const viaClient = await readViaClient('everything', 'demo://resource/dynamic/text/3');\n\
             const clientPrompts = await promptsViaClient('everything');\n\
             export default {{\n\
               docName: doc.name, server: doc.server,\n\
               templates: listed.resourceTemplates.map((t) => t.uriTemplate),\n\
               text: (text.contents[0] as TextResourceContents).text.slice(0, 200),\n\
               blobMime: b.mimeType, blobIsBase64: /^[A-Za-z0-9+/]+=*$/.test(b.blob),\n\
               blobText: new TextDecoder().decode(decodeBase64(b.blob)),\n\
               args: prompts.find((p) => p.name === 'args-prompt')!.arguments,\n\
               said: JSON.stringify(got.messages),\n\
               viaClient: (viaClient.contents[0] as TextResourceContents).text,\n\
               clientPrompts: clientPrompts.length === prompts.length,\n\
             }};\n"
        ),
    );
    assert_eq!(out["error"], Value::Null, "{out}");
    let v = &out["value"];
    assert_eq!(v["server"], "everything", "{v}");
    assert_eq!(v["docName"], "architecture.md", "{v}");
    let templates = v["templates"].as_array().unwrap();
    assert!(templates.contains(&json!("demo://resource/dynamic/blob/{resourceId}")), "{v}");
    assert!(v["text"].as_str().unwrap().contains("Architecture"), "{v}");
    assert_eq!(v["blobMime"], "text/plain", "{v}");
    assert_eq!(v["blobIsBase64"], true, "{v}");
    assert!(v["blobText"].as_str().unwrap().starts_with("Resource 7: This is a base64 blob"), "{v}");
    assert_eq!(
        v["args"],
        json!([
            {"name": "city", "description": "Name of the city", "required": true},
            {"name": "state", "required": false}
        ]),
        "{v}"
    );
    let said = v["said"].as_str().unwrap();
    assert!(said.contains("Oslo") && said.contains("Viken"), "{said}");
    assert!(v["viaClient"].as_str().unwrap().starts_with("Resource 3: This is a plaintext resource"), "{v}");
    assert_eq!(v["clientPrompts"], true, "{v}");
    // Each is a request through the bridge, counted with the script's calls.
    assert_eq!(out["tool_calls"], 7, "{out}");

    // The run refreshed the tree for the server it started: the README lists what it offers.
    let readme = std::fs::read_to_string(p.path().join(".kodelet/mcp/README.md")).unwrap();
    assert!(readme.contains("## Resources and prompts"), "{readme}");
    assert!(
        readme.contains(&format!("- resource `readResource(\"everything\", \"{DOC}\")` (architecture.md)")),
        "{readme}"
    );
    assert!(
        readme.contains("- template `readResource(\"everything\", \"demo://resource/dynamic/blob/{resourceId}\")`"),
        "{readme}"
    );
    assert!(
        readme.contains(
            "- prompt `getPrompt(\"everything\", \"args-prompt\", { \"city\": string, \"state\"?: string })`: \
             A prompt with two arguments, one required and one optional"
        ),
        "{readme}"
    );
}

#[test]
fn unknown_servers_prompts_and_uris_throw_bridge_errors_with_suggestions() {
    if !node_or_skip("server-everything") {
        return;
    }
    let p = Project::with_servers(&format!("{}{}", everything_yaml("everything"), fixture_stdio_yaml("fixture", &[])));
    let out = exec_json(
        &p,
        &format!(
            "{CAUGHT}\
             export default {{\n\
               server: await caught(() => readResource('everythin', {DOC:?})),\n\
               notConfigured: await caught(() => listResources('elsewhere')),\n\
               prompt: await caught(() => getPrompt('everything', 'simple-promt')),\n\
               uri: await caught(() => readResource('everything', {doc_x:?})),\n\
               missing: await caught(() => getPrompt('everything', 'args-prompt', {{ state: 'x' }})),\n\
               notOffered: await caught(() => readResource('fixture', 'file:///etc/passwd')),\n\
               noPrompts: await caught(() => getPrompt('fixture', 'x')),\n\
               badArgs: await caught(() => (readResource as any)('everything')),\n\
               fixtureLists: await listPrompts('fixture'),\n\
             }};\n",
            doc_x = format!("{DOC}x"),
        ),
    );
    assert_eq!(out["error"], Value::Null, "{out}");
    let v = &out["value"];
    assert_eq!(v["server"]["name"], "BridgeError", "{v}");
    assert_eq!(v["server"]["code"], "unknown_server", "{v}");
    assert_eq!(v["server"]["status"], 404, "{v}");
    assert_eq!(v["server"]["suggestions"], json!(["everything"]), "{v}");
    assert_eq!(v["notConfigured"]["code"], "unknown_server", "{v}");
    assert!(v["notConfigured"]["message"].as_str().unwrap().starts_with("unknown server `elsewhere`"), "{v}");
    assert_eq!(v["prompt"]["code"], "unknown_prompt", "{v}");
    assert_eq!(v["prompt"]["prompt"], "simple-promt", "{v}");
    assert_eq!(v["prompt"]["suggestions"], json!(["simple-prompt"]), "{v}");
    assert!(v["prompt"]["message"].as_str().unwrap().contains("did you mean `everything.simple-prompt`"), "{v}");
    assert_eq!(v["uri"]["code"], "unknown_resource", "{v}");
    assert_eq!(v["uri"]["uri"], format!("{DOC}x"), "{v}");
    assert_eq!(v["uri"]["suggestions"][0], DOC, "{v}");
    assert_eq!(v["missing"]["code"], "invalid_arguments", "{v}");
    assert!(v["missing"]["message"].as_str().unwrap().contains("missing required argument `city`"), "{v}");
    assert_eq!(v["notOffered"]["code"], "not_offered", "{v}");
    assert_eq!(v["notOffered"]["message"], "server `fixture` offers no resources", "{v}");
    assert_eq!(v["noPrompts"]["message"], "server `fixture` offers no prompts", "{v}");
    assert_eq!(v["badArgs"]["name"], "TypeError", "{v}");
    assert_eq!(v["fixtureLists"], json!([]), "{v}");

    // Uncaught, it is the script's error: exit 1 and one line naming the script's own line.
    let r = p.run_stdin(&["exec", "-"], "const x = 1;\nawait getPrompt('everything', 'simple-promt');\n");
    r.assert_code(1);
    assert!(
        r.stderr.starts_with(
            "error: BridgeError: unknown prompt `everything.simple-promt`; did you mean `everything.simple-prompt`"
        ) && r.stderr.contains("at main.ts:2"),
        "{}",
        r.stderr
    );
}

#[test]
fn search_tools_finds_a_prompt_and_a_resource_by_the_words_of_their_descriptions() {
    if !node_or_skip("server-everything") {
        return;
    }
    let p = Project::with_servers(&format!("{}{}", everything_yaml("everything"), fixture_stdio_yaml("fixture", &[])));
    let out = exec_json(
        &p,
        "const prompt = await searchTools('prompt with two arguments one required and one optional', { limit: 3 });\n\
         const template = await searchTools('dynamic blob resource template', { limit: 5 });\n\
         const tool = await searchTools('echo back the message', { limit: 1 });\n\
         export default { prompt: prompt[0], template: template.find((r) => r.kind === 'resource template'), tool: tool[0] };\n",
    );
    assert_eq!(out["error"], Value::Null, "{out}");
    let v = &out["value"];
    assert_eq!(v["prompt"]["kind"], "prompt", "{v}");
    assert_eq!(v["prompt"]["tool"], "args-prompt", "{v}");
    assert_eq!(
        v["prompt"]["signature"],
        "getPrompt(\"everything\", \"args-prompt\", { \"city\": string, \"state\"?: string })",
        "{v}"
    );
    assert_eq!(v["template"]["uri"], "demo://resource/dynamic/blob/{resourceId}", "{v}");
    assert_eq!(
        v["template"]["signature"], "readResource(\"everything\", \"demo://resource/dynamic/blob/{resourceId}\")",
        "{v}"
    );
    // Tools keep their records: no `kind`, their signature.
    assert_eq!(v["tool"]["kind"], Value::Null, "{v}");
    assert!(v["tool"]["signature"].as_str().unwrap().contains(".echo("), "{v}");
}

/// The bridge over a manager whose result cap is `max_result_bytes` (set past the config's floor,
/// which is for real use; the handshake and tool list of server-everything fit under 10 kB).
async fn bridge_with_cap(p: &Project, max_result_bytes: usize) -> (Arc<McpManager>, BridgeServer) {
    let mut config = p.library_config();
    config.mcp.max_result_bytes = max_result_bytes;
    let manager = Arc::new(McpManager::new(&config));
    let bridge = BridgeServer::start(manager.clone()).await.unwrap();
    (manager, bridge)
}

fn request(p: &Project, code: &str, bridge: &BridgeServer) -> ExecRequest {
    ExecRequest {
        workspace: p.path().join(".kodelet/mcp"),
        script: Script::Inline(code.to_string()),
        limits: Limits::default(),
        bridge: Some(bridge.endpoint().clone()),
    }
}

#[tokio::test]
async fn a_resource_over_max_result_bytes_fails_that_read_naming_the_limit_and_the_next_read_works() {
    if !node_or_skip("server-everything") {
        return;
    }
    let p = Project::with_servers(&everything_yaml("everything"));
    let (manager, bridge) = bridge_with_cap(&p, 10_000).await;
    let executor = Executor::new();
    // structure.md is about 12 kB.
    let o = executor
        .execute(request(
            &p,
            &format!(
                "{CAUGHT}\
                 const big = await caught(() => readResource('everything', 'demo://resource/static/document/structure.md'));\n\
                 const small = await readResource('everything', 'demo://resource/dynamic/text/1');\n\
                 export default {{ big, small: (small.contents[0] as any).text }};\n"
            ),
            &bridge,
        ))
        .await;
    assert!(o.error.is_none(), "{:?}", o.error);
    let v = o.value.unwrap();
    assert_eq!(v["big"]["code"], "server_error", "{v}");
    let message = v["big"]["message"].as_str().unwrap();
    assert!(message.contains("larger than the") && message.contains("mcp.max_result_bytes"), "{message}");
    assert!(message.contains("resources/read demo://resource/static/document/structure.md"), "{message}");
    assert!(v["small"].as_str().unwrap().starts_with("Resource 1:"), "{v}");
    bridge.stop().await;
    manager.shutdown().await;
}

#[tokio::test]
async fn a_local_process_without_the_token_reaches_no_resource_or_prompt_and_bodies_are_capped() {
    if !node_or_skip("server-everything") {
        return;
    }
    let p = Project::with_servers(&everything_yaml("everything"));
    let (manager, bridge) = bridge_with_cap(&p, 16 << 20).await;
    let ep = bridge.endpoint().clone();
    let read = json!({"server": "everything", "uri": DOC}).to_string();
    let get = json!({"server": "everything", "name": "simple-prompt"}).to_string();
    let endpoints = [
        ("/resources", "{}".to_string()),
        ("/resources/read", read),
        ("/prompts", "{}".to_string()),
        ("/prompts/get", get),
    ];
    for (path, body) in &endpoints {
        for token in [None, Some("0".repeat(64)), Some(format!("{}x", ep.token))] {
            let (status, answer) = raw(&ep.socket, "POST", path, token.as_deref(), body.clone()).await;
            assert_eq!(status, 401, "{path} with {token:?}: {answer}");
            assert_eq!(answer["error"]["code"], "unauthorized", "{path}: {answer}");
            assert!(!answer.to_string().contains("Architecture") && !answer.to_string().contains("messages"));
        }
        let (status, answer) = raw(&ep.socket, "GET", path, Some(&ep.token), Bytes::new()).await;
        assert_eq!((status, &answer["error"]["code"]), (405, &json!("method_not_allowed")), "{path}: {answer}");
        let (status, answer) = raw(&ep.socket, "POST", path, Some(&ep.token), "{\"server\": 1}").await;
        assert_eq!((status, &answer["error"]["code"]), (400, &json!("bad_request")), "{path}: {answer}");
        let huge = format!("{{\"server\": \"{}\"}}", "x".repeat(agent::bridge::protocol::MAX_REQUEST_BYTES));
        let (status, answer) = raw(&ep.socket, "POST", path, Some(&ep.token), huge).await;
        assert_eq!((status, &answer["error"]["code"]), (413, &json!("payload_too_large")), "{path}: {answer}");
    }
    // With the token, the same requests answer.
    let (status, answer) = raw(&ep.socket, "POST", "/resources/read", Some(&ep.token), endpoints[1].1.clone()).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["contents"][0]["text"].as_str().unwrap().contains("Architecture"), "{answer}");
    let (status, answer) = raw(&ep.socket, "POST", "/prompts/get", Some(&ep.token), endpoints[3].1.clone()).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["messages"].is_array(), "{answer}");
    bridge.stop().await;
    manager.shutdown().await;
}

#[test]
fn a_tool_only_server_keeps_its_readme_and_a_listing_script_starts_every_server() {
    let p =
        Project::with_servers(&format!("{}{}", fixture_stdio_yaml("fixture", &[]), fixture_stdio_yaml("other", &[])));
    p.run(&["mcp", "generate"]).assert_ok();
    let ws = p.path().join(".kodelet/mcp");
    let before = std::fs::read_to_string(ws.join("README.md")).unwrap();
    let manifest = std::fs::read_to_string(ws.join(".agent-manifest.json")).unwrap();
    // listPrompts() without a server lists every enabled one: the scan starts them all.
    let out =
        exec_json(&p, "export default (await listPrompts()).length + (await listResources()).resources.length;\n");
    assert_eq!(out["error"], Value::Null, "{out}");
    assert_eq!(out["value"], 0, "{out}");
    for server in ["fixture", "other"] {
        assert!(ws.join(format!("logs/{server}.stderr.log")).exists(), "{server} was not started");
    }
    assert_eq!(std::fs::read_to_string(ws.join("README.md")).unwrap(), before);
    assert!(!before.contains("Resources and prompts"));
    assert_eq!(std::fs::read_to_string(ws.join(".agent-manifest.json")).unwrap(), manifest);
}

#[tokio::test]
async fn a_read_in_a_cancelled_scripts_context_ends_at_once() {
    if !node_or_skip("server-everything") {
        return;
    }
    let p = Project::with_servers(&everything_yaml("everything"));
    let (manager, bridge) = bridge_with_cap(&p, 16 << 20).await;
    let ep = bridge.endpoint().clone();
    manager.start_servers(&["everything".to_string()]).await;
    let read = json!({"server": "everything", "uri": DOC}).to_string();
    // The context `serve` gives a script whose request its client cancelled.
    let cancel = tokio_util::sync::CancellationToken::new();
    cancel.cancel();
    bridge.set_context(Some(agent::mcp::CallContext { cancel: Some(cancel), ..Default::default() }));
    let (status, answer) = raw(&ep.socket, "POST", "/resources/read", Some(&ep.token), read.clone()).await;
    assert_eq!(status, 502, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().ends_with("cancelled"), "{answer}");
    let (status, answer) = raw(&ep.socket, "POST", "/prompts", Some(&ep.token), "{}").await;
    assert_eq!(status, 502, "{answer}");
    // The next script's context is not cancelled: the same read answers.
    bridge.set_context(None);
    let (status, answer) = raw(&ep.socket, "POST", "/resources/read", Some(&ep.token), read).await;
    assert_eq!(status, 200, "{answer}");
    bridge.stop().await;
    manager.shutdown().await;
}
