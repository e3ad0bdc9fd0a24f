//! The fixture server's `--resources` set (resources, a template, prompts, completions, logging,
//! subscriptions) as a client sees it on the wire: raw JSON-RPC lines over stdio on a 2025-11-25
//! session, so what other tests rely on (exact contents, which notifications arrive and when,
//! error codes, the capabilities without the flag) is pinned here, and a 2026-07-28
//! `subscriptions/listen` through rmcp's client. The `--conformance` set is
//! checked by the conformance suite itself (`conformance::server`).

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// What `--hostile` puts in every text (the fixture's `HOSTILE`): ESC and C1 sequences, CR, an
/// OSC 8 link, DEL and a right-to-left override.
const HOSTILE: &str = "A\x1b[2JB\r\x1b[2KC\x1b]8;;file:///tmp/evil.desktop\x07D\x1b]8;;\x07E\u{9b}31mF\u{7f}G\u{202e}H";

/// A fixture process on stdio after `initialize`; killed on drop.
struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
    /// The `initialize` result.
    info: Value,
}

impl Session {
    fn start(args: &[&str]) -> Session {
        let mut child = Command::new(support::fixture_bin())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the fixture");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = Session { child, stdin, lines, next_id: 0, info: Value::Null };
        let init =
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}});
        let (answer, _) = s.request("initialize", init);
        s.info = answer["result"].clone();
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write to the fixture");
        self.stdin.flush().expect("flush");
    }

    /// Sends a request; returns its answer and the notifications that came before it.
    fn request(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut notes = Vec::new();
        loop {
            let line = match self.lines.recv_timeout(Duration::from_secs(10)) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => panic!("no answer to {method} in 10 s"),
                Err(RecvTimeoutError::Disconnected) => panic!("the fixture closed stdout during {method}"),
            };
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if v["id"] == json!(id) {
                return (v, notes);
            }
            notes.push(v);
        }
    }

    /// The result of a request that must succeed.
    fn ok(&mut self, method: &str, params: Value) -> Value {
        let (answer, _) = self.request(method, params);
        assert!(answer.get("error").is_none(), "{method} failed: {answer}");
        answer["result"].clone()
    }

    /// The error code of a request that must fail.
    fn error_code(&mut self, method: &str, params: Value) -> i64 {
        let (answer, _) = self.request(method, params);
        answer["error"]["code"].as_i64().unwrap_or_else(|| panic!("{method} did not fail: {answer}"))
    }

    /// Notifications that arrive within `wait` without a request.
    fn notifications_within(&mut self, wait: Duration) -> Vec<Value> {
        let end = Instant::now() + wait;
        let mut out = Vec::new();
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => out.push(serde_json::from_str(&line).unwrap()),
                Err(_) => break,
            }
        }
        out
    }

    fn tool_names(&mut self) -> Vec<String> {
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let r = self.ok("tools/list", params);
            names.extend(r["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()));
            match r["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => return names,
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn methods(notes: &[Value]) -> Vec<&str> {
    notes.iter().filter_map(|n| n["method"].as_str()).collect()
}

/// The flags add nothing unasked: without them the capabilities are tools only, the resource
/// methods are "method not found" and the tool list has no `touch` (snapshots of other tests
/// depend on it); with `--resources` the capabilities name everything the set serves.
#[test]
fn without_the_flags_the_fixture_serves_tools_only() {
    let mut plain = Session::start(&[]);
    let caps = plain.info["capabilities"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(caps, ["tools"]);
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        assert_eq!(plain.error_code(method, json!({})), -32601, "{method}");
    }
    assert_eq!(plain.error_code("logging/setLevel", json!({"level": "debug"})), -32601);
    let tools = plain.tool_names();
    assert!(!tools.iter().any(|t| t == "touch" || t.starts_with("test_")), "{tools:?}");

    let mut with = Session::start(&["--resources"]);
    let caps = &with.info["capabilities"];
    assert_eq!(caps["resources"]["subscribe"], json!(true), "{caps}");
    for cap in ["prompts", "completions", "logging", "tools"] {
        assert!(caps.get(cap).is_some(), "no {cap} in {caps}");
    }
    let more = with.tool_names();
    assert_eq!(more.len(), tools.len() + 1, "{more:?}");
    assert!(more.iter().any(|t| t == "touch"), "{more:?}");
}

/// Resources and the template: exact contents, text and binary, and `-32002` for a URI that
/// names nothing (a template with a `/` in its parameter included).
#[test]
fn resources_and_the_template_read_deterministically() {
    let mut s = Session::start(&["--resources"]);
    let list = s.ok("resources/list", json!({}));
    let uris: Vec<&str> = list["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["fixture://readme", "fixture://logo.png", "fixture://config.json", "fixture://counter"]);
    let templates = s.ok("resources/templates/list", json!({}));
    assert_eq!(templates["resourceTemplates"][0]["uriTemplate"], "fixture://items/{id}");

    let readme = s.ok("resources/read", json!({"uri": "fixture://readme"}));
    assert_eq!(
        readme["contents"],
        json!([{"uri": "fixture://readme", "mimeType": "text/markdown", "text": "# Fixture\n\nA resource of agent's fixture server.\n"}])
    );
    let logo = s.ok("resources/read", json!({"uri": "fixture://logo.png"}));
    let blob = logo["contents"][0]["blob"].as_str().unwrap();
    assert!(blob.starts_with("iVBORw0KGgo"), "a PNG: {blob}");
    assert!(logo["contents"][0].get("text").is_none());
    let item = s.ok("resources/read", json!({"uri": "fixture://items/apple"}));
    assert_eq!(item["contents"][0]["text"], r#"{"id":"apple","name":"item apple"}"#);

    for uri in ["fixture://nothing", "fixture://items/", "fixture://items/a/b", "test://static-text"] {
        assert_eq!(s.error_code("resources/read", json!({"uri": uri})), -32002, "{uri}");
    }
}

/// `resources/subscribe`: `touch` announces the new revision to a session that subscribed,
/// before its answer; after `resources/unsubscribe` it no longer does. A URI that names
/// nothing cannot be subscribed to.
#[test]
fn subscribers_hear_of_touch_until_they_unsubscribe() {
    let mut s = Session::start(&["--resources"]);
    let counter = json!({"uri": "fixture://counter"});
    let (touched, notes) = s.request("tools/call", json!({"name": "touch", "arguments": {}}));
    assert_eq!(touched["result"]["content"][0]["text"], "revision 1");
    assert!(!methods(&notes).contains(&"notifications/resources/updated"), "not subscribed yet: {notes:?}");

    s.ok("resources/subscribe", counter.clone());
    let (touched, notes) = s.request("tools/call", json!({"name": "touch", "arguments": {}}));
    assert_eq!(touched["result"]["content"][0]["text"], "revision 2");
    let updated: Vec<&Value> = notes.iter().filter(|n| n["method"] == "notifications/resources/updated").collect();
    assert_eq!(updated.len(), 1, "{notes:?}");
    assert_eq!(updated[0]["params"]["uri"], "fixture://counter");
    assert_eq!(s.ok("resources/read", counter.clone())["contents"][0]["text"], "revision 2");

    s.ok("resources/unsubscribe", counter.clone());
    let (_, notes) = s.request("tools/call", json!({"name": "touch", "arguments": {}}));
    let late = s.notifications_within(Duration::from_millis(300));
    let all: Vec<Value> = notes.into_iter().chain(late).collect();
    assert!(!methods(&all).contains(&"notifications/resources/updated"), "unsubscribed: {all:?}");
    assert_eq!(s.error_code("resources/subscribe", json!({"uri": "fixture://nothing"})), -32002);
}

/// Logging: a read logs `read URI` at `info`, heard by default and after `setLevel debug`, not
/// after `setLevel warning`.
#[test]
fn set_level_decides_which_log_messages_arrive() {
    let mut s = Session::start(&["--resources"]);
    let read = json!({"uri": "fixture://config.json"});
    let logs = |notes: &[Value]| -> Vec<Value> {
        notes.iter().filter(|n| n["method"] == "notifications/message").map(|n| n["params"].clone()).collect()
    };
    let (_, notes) = s.request("resources/read", read.clone());
    assert_eq!(logs(&notes), [json!({"level": "info", "logger": "fixture", "data": "read fixture://config.json"})]);

    assert_eq!(s.ok("logging/setLevel", json!({"level": "warning"})), json!({}));
    let (_, notes) = s.request("resources/read", read.clone());
    let late = s.notifications_within(Duration::from_millis(200));
    assert!(logs(&notes).is_empty() && logs(&late).is_empty(), "{notes:?} {late:?}");

    s.ok("logging/setLevel", json!({"level": "debug"}));
    let (_, notes) = s.request("prompts/get", json!({"name": "summarize"}));
    assert_eq!(logs(&notes), [json!({"level": "info", "logger": "fixture", "data": "prompt summarize"})]);
}

/// Prompts and completions: `greet`'s `language` and the template's `id` complete by prefix,
/// case-insensitively; a missing required argument and an unknown prompt are `-32602`.
#[test]
fn prompts_and_their_completions() {
    let mut s = Session::start(&["--resources"]);
    let list = s.ok("prompts/list", json!({}));
    let names: Vec<&str> = list["prompts"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["summarize", "greet"]);
    let greet = s.ok("prompts/get", json!({"name": "greet", "arguments": {"language": "french", "name": "Ada"}}));
    assert_eq!(
        greet["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Say hello to Ada in french."}}])
    );
    assert_eq!(s.error_code("prompts/get", json!({"name": "greet", "arguments": {}})), -32602);
    assert_eq!(s.error_code("prompts/get", json!({"name": "nope"})), -32602);

    let complete = |s: &mut Session, r: Value, arg: &str, value: &str| {
        s.ok("completion/complete", json!({"ref": r, "argument": {"name": arg, "value": value}}))["completion"].clone()
    };
    let c = complete(&mut s, json!({"type": "ref/prompt", "name": "greet"}), "language", "E");
    assert_eq!(c, json!({"values": ["english", "esperanto"], "total": 2, "hasMore": false}));
    let c = complete(&mut s, json!({"type": "ref/resource", "uri": "fixture://items/{id}"}), "id", "ap");
    assert_eq!(c["values"], json!(["apple", "apricot"]));
    let c = complete(&mut s, json!({"type": "ref/prompt", "name": "greet"}), "name", "");
    assert_eq!(c["values"], json!([]), "`name` has no completions");
}

/// `--hostile` with `--resources`: a resource whose URI, name, title, description and text
/// carry the escape sequences, delivered as they are (for the tests that check `agent` escapes
/// what a server sends); `--hostile` alone adds no resource capability.
#[test]
fn the_hostile_resource_carries_terminal_sequences_raw() {
    let mut alone = Session::start(&["--hostile"]);
    assert_eq!(alone.error_code("resources/list", json!({})), -32601);

    let mut s = Session::start(&["--hostile", "--resources"]);
    let list = s.ok("resources/list", json!({}));
    let hostile = list["resources"].as_array().unwrap().iter().find(|r| r["name"] == HOSTILE).cloned();
    let hostile = hostile.unwrap_or_else(|| panic!("no hostile resource in {list}"));
    let uri = format!("fixture://hostile/{HOSTILE}");
    assert_eq!(hostile["uri"], uri.as_str());
    assert_eq!(hostile["description"], HOSTILE);
    let read = s.ok("resources/read", json!({"uri": uri}));
    assert_eq!(read["contents"][0]["text"], HOSTILE);
}

/// 2026-07-28 has no session to subscribe in: `subscriptions/listen` names the resources, and
/// `touch` reaches the listener with `notifications/resources/updated` for the one it named that
/// exists (a URI that names nothing is left out of the acknowledgment).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_subscription_hears_of_touch_for_the_resources_it_named() {
    use rmcp::model::{CallToolRequestParams, ProtocolVersion, SubscriptionFilter};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};

    let mut cmd = tokio::process::Command::new(support::fixture_bin());
    cmd.arg("--resources").stderr(Stdio::null());
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let service = ().serve_with_lifecycle(transport, lifecycle).await.unwrap();
    let filter = SubscriptionFilter::builder()
        .resource_subscription("fixture://counter")
        .resource_subscription("fixture://nothing")
        .build();
    let mut sub = service.peer().listen(filter).await.unwrap();
    assert_eq!(sub.acknowledged().resource_subscriptions, Some(vec!["fixture://counter".to_string()]));
    let touched = service.peer().call_tool(CallToolRequestParams::new("touch")).await.unwrap();
    assert_eq!(serde_json::to_value(&touched.content).unwrap()[0]["text"], "revision 1");
    let note = tokio::time::timeout(Duration::from_secs(10), sub.next())
        .await
        .expect("no notification in 10 s")
        .unwrap()
        .expect("the subscription ended");
    let note = serde_json::to_value(&note).unwrap();
    assert_eq!(note["method"], "notifications/resources/updated", "{note}");
    assert_eq!(note["params"]["uri"], "fixture://counter", "{note}");
    sub.cancel().await.unwrap();
    service.cancel().await.unwrap();
}
