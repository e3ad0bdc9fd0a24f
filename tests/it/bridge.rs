//! The Unix-socket bridge, end to end: a real `BridgeServer` in front of a real `McpManager`
//! and the fixture server, spoken to with raw HTTP over the socket (the protocol other runtimes
//! use), and the socket's life cycle around the real `agent` binary.

use crate::support;
use crate::support::fake_embeddings;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent::bridge::protocol::CallRequest;
use agent::bridge::{BridgeClient, BridgeServer};
use agent::config::Config;
use agent::mcp::McpManager;
use agent::runtime::{ExecRequest, Executor, Limits, Script};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::client::legacy::Client;
use hyperlocal::UnixClientExt;
use serde_json::{Value, json};
use support::{Project, fixture_stdio_yaml};

struct Setup {
    _project: Project,
    manager: Arc<McpManager>,
    bridge: BridgeServer,
}

async fn setup(servers_yaml: &str) -> Setup {
    let project = Project::with_servers(servers_yaml);
    let config = project.library_config();
    let manager = Arc::new(McpManager::new(&config));
    let bridge = BridgeServer::start(manager.clone()).await.unwrap();
    Setup { _project: project, manager, bridge }
}

impl Setup {
    async fn finish(self) {
        self.bridge.stop().await;
        self.manager.shutdown().await;
    }
}

/// One raw HTTP request over the socket: (status, JSON body).
pub(crate) async fn raw(
    socket: &Path,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: impl Into<Bytes>,
) -> (u16, Value) {
    let client: Client<hyperlocal::UnixConnector, Full<Bytes>> = Client::unix();
    let mut req = hyper::Request::builder()
        .method(method)
        .uri(hyper::Uri::from(hyperlocal::Uri::new(socket, path)))
        .header("content-type", "application/json");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let resp = client.request(req.body(Full::new(body.into())).unwrap()).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn call_body(server: &str, tool: &str, args: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"server": server, "tool": tool, "arguments": args})).unwrap()
}

#[tokio::test]
async fn call_tools_and_health() {
    let s = setup(&fixture_stdio_yaml("fixture", &[])).await;
    let ep = s.bridge.endpoint().clone();
    let (status, body) = raw(&ep.socket, "GET", "/health", None, Bytes::new()).await;
    assert_eq!((status, body), (200, json!({"ok": true})));
    let (status, body) =
        raw(&ep.socket, "POST", "/call", Some(&ep.token), call_body("fixture", "add", json!({"a": 2, "b": 3}))).await;
    assert_eq!(status, 200);
    assert_eq!(body["structuredContent"], json!({"sum": 5}));
    assert_eq!(body["isError"], false);
    assert!(body["content"].is_array());
    let (status, body) =
        raw(&ep.socket, "POST", "/call", Some(&ep.token), call_body("fixture", "fail", json!({}))).await;
    assert_eq!((status, &body["isError"]), (200, &json!(true)), "a tool error is still a 200");
    let (status, body) = raw(&ep.socket, "GET", "/tools", Some(&ep.token), Bytes::new()).await;
    assert_eq!(status, 200);
    assert!(body.as_array().unwrap().iter().any(|t| t["server"] == "fixture" && t["name"] == "echo"), "{body}");
    s.finish().await;
}

#[tokio::test]
async fn wrong_or_missing_token_is_401() {
    let s = setup(&fixture_stdio_yaml("fixture", &[])).await;
    let ep = s.bridge.endpoint().clone();
    let body = call_body("fixture", "echo", json!({"message": "x"}));
    for token in [None, Some("0000"), Some(&format!("{}0", ep.token)[..]), Some(&ep.token[1..])] {
        let (status, resp) = raw(&ep.socket, "POST", "/call", token, body.clone()).await;
        assert_eq!(status, 401, "{token:?}");
        assert_eq!(resp["error"]["code"], "unauthorized");
    }
    let (status, _) = raw(&ep.socket, "GET", "/tools", Some("nope"), Bytes::new()).await;
    assert_eq!(status, 401);
    assert_eq!(s.bridge.calls(), 0, "nothing reached the manager");
    s.finish().await;
}

#[tokio::test]
async fn bad_json_and_bad_shapes_are_400() {
    let s = setup(&fixture_stdio_yaml("fixture", &[])).await;
    let ep = s.bridge.endpoint().clone();
    for body in [&b"{not json"[..], b"[]", b"{\"server\": \"fixture\"}", b"{\"server\": 1, \"tool\": \"echo\"}", b""] {
        let (status, resp) = raw(&ep.socket, "POST", "/call", Some(&ep.token), body.to_vec()).await;
        assert_eq!(status, 400, "{}", String::from_utf8_lossy(body));
        assert_eq!(resp["error"]["code"], "bad_request");
        assert!(resp["error"]["message"].as_str().unwrap().starts_with("invalid request body"), "{resp}");
    }
    let (status, resp) =
        raw(&ep.socket, "POST", "/call", Some(&ep.token), call_body("fixture", "add", json!({"a": "two"}))).await;
    assert_eq!(status, 400);
    assert_eq!(resp["error"]["code"], "invalid_arguments");
    let (status, resp) = raw(&ep.socket, "GET", "/call", Some(&ep.token), Bytes::new()).await;
    assert_eq!((status, resp["error"]["code"].as_str()), (405, Some("method_not_allowed")));
    let (status, resp) = raw(&ep.socket, "GET", "/nope", Some(&ep.token), Bytes::new()).await;
    assert_eq!((status, resp["error"]["code"].as_str()), (404, Some("not_found")));
    s.finish().await;
}

#[tokio::test]
async fn oversized_bodies_are_413() {
    let s = setup(&fixture_stdio_yaml("fixture", &[])).await;
    let ep = s.bridge.endpoint().clone();
    let limit = agent::bridge::protocol::MAX_REQUEST_BYTES;
    let big = format!(r#"{{"server":"fixture","tool":"echo","arguments":{{"message":"{}"}}}}"#, "x".repeat(limit));
    let (status, resp) = raw(&ep.socket, "POST", "/call", Some(&ep.token), big.into_bytes()).await;
    assert_eq!(status, 413);
    assert_eq!(resp["error"]["code"], "payload_too_large");
    // Without a Content-Length (chunked), the limit is enforced while reading.
    let client: Client<hyperlocal::UnixConnector, StreamBody<_>> = Client::unix();
    let chunks =
        (0..(limit / (1 << 20) + 2)).map(|_| Ok::<_, std::io::Error>(Frame::data(Bytes::from(vec![b' '; 1 << 20]))));
    let req = hyper::Request::post(hyper::Uri::from(hyperlocal::Uri::new(&ep.socket, "/call")))
        .header("authorization", format!("Bearer {}", ep.token))
        .body(StreamBody::new(futures::stream::iter(chunks)))
        .unwrap();
    let resp = client.request(req).await.unwrap();
    assert_eq!(resp.status().as_u16(), 413);
    assert_eq!(s.bridge.calls(), 0);
    s.finish().await;
}

#[tokio::test]
async fn unknown_server_or_tool_is_404_with_suggestions() {
    let s = setup(&fixture_stdio_yaml("fixture", &[])).await;
    let ep = s.bridge.endpoint().clone();
    let (status, resp) =
        raw(&ep.socket, "POST", "/call", Some(&ep.token), call_body("fixture", "ech", json!({}))).await;
    assert_eq!(status, 404);
    assert_eq!(resp["error"]["code"], "unknown_tool");
    assert_eq!(resp["error"]["suggestions"], json!(["echo"]));
    assert!(resp["error"]["message"].as_str().unwrap().contains("did you mean `fixture.echo`?"), "{resp}");
    let (status, resp) =
        raw(&ep.socket, "POST", "/call", Some(&ep.token), call_body("fixtur", "echo", json!({}))).await;
    assert_eq!(status, 404);
    assert_eq!(resp["error"]["code"], "unknown_server");
    assert_eq!(resp["error"]["suggestions"], json!(["fixture"]));
    s.finish().await;
}

#[tokio::test]
async fn call_timeout_is_504_and_a_crash_is_502() {
    let s = setup(&format!("{}      call_timeout: 500ms\n", fixture_stdio_yaml("fixture", &[]))).await;
    let ep = s.bridge.endpoint().clone();
    let (status, resp) =
        raw(&ep.socket, "POST", "/call", Some(&ep.token), call_body("fixture", "sleep", json!({"ms": 10000}))).await;
    assert_eq!(status, 504);
    assert_eq!(resp["error"]["code"], "timeout");
    assert!(resp["error"]["message"].as_str().unwrap().contains("timed out after 500ms"), "{resp}");
    let (status, resp) =
        raw(&ep.socket, "POST", "/call", Some(&ep.token), call_body("fixture", "crash", json!({}))).await;
    assert_eq!(status, 502);
    assert_eq!(resp["error"]["code"], "server_error");
    s.finish().await;
}

#[tokio::test]
async fn a_hundred_concurrent_clients() {
    let s = setup(&fixture_stdio_yaml("fixture", &[])).await;
    let ep = s.bridge.endpoint().clone();
    // Warm the server up, then 100 clients, each with its own connection, at once.
    BridgeClient::new(ep.clone()).call(&req("echo", json!({"message": "warm"}))).await.unwrap();
    let started = Instant::now();
    let calls = (0..100).map(|i| {
        let client = BridgeClient::new(ep.clone());
        async move { client.call(&req("add", json!({"a": i, "b": 1000}))).await }
    });
    let results = futures::future::join_all(calls).await;
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(r.unwrap()["structuredContent"], json!({"sum": i + 1000}));
    }
    // And 100 that each take 300 ms: served side by side, not one after another (30 s).
    let calls = (0..100).map(|_| {
        let client = BridgeClient::new(ep.clone());
        async move { client.call(&req("sleep", json!({"ms": 300}))).await }
    });
    let results = futures::future::join_all(calls).await;
    assert!(results.iter().all(Result::is_ok));
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    assert_eq!(s.bridge.calls(), 201);
    s.finish().await;
}

fn req(tool: &str, args: Value) -> CallRequest {
    CallRequest { server: "fixture".into(), tool: tool.into(), arguments: args.as_object().cloned().unwrap() }
}

#[tokio::test]
async fn socket_permissions_stale_sockets_and_cleanup() {
    let s = setup(&fixture_stdio_yaml("fixture", &[])).await;
    let socket = s.bridge.endpoint().socket.clone();
    let dir = socket.parent().unwrap().to_path_buf();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(s.bridge.endpoint().token.len(), 64);
    s.finish().await;
    assert!(!socket.exists() && !dir.exists(), "socket or its directory left behind");

    // A stale socket at an explicit path is replaced; a regular file is refused.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("b.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists(), "a stale socket file");
    let manager = Arc::new(McpManager::new(&Config::default()));
    let bridge = BridgeServer::start_at(manager.clone(), &path).await.unwrap();
    let (status, _) = raw(&path, "GET", "/health", None, Bytes::new()).await;
    assert_eq!(status, 200);
    bridge.stop().await;
    assert!(!path.exists());
    std::fs::write(&path, "not a socket").unwrap();
    let err = BridgeServer::start_at(manager, &path).await.err().unwrap();
    assert!(err.to_string().contains("exists and is not a socket"), "{err}");
}

#[tokio::test]
async fn the_token_is_not_reachable_from_a_script() {
    let s = setup(&fixture_stdio_yaml("fixture", &[])).await;
    let ep = s.bridge.endpoint().clone();
    let executor = Executor::new();
    // Collect every string reachable from the global object after a tool call went through.
    let script = "await callMCPTool('fixture', 'echo', { message: 'hello' });\n\
                  const seen = new Set<unknown>();\n\
                  const strings = new Set<string>();\n\
                  const queue: unknown[] = [globalThis];\n\
                  while (queue.length) {\n\
                    const v = queue.pop();\n\
                    if (typeof v === 'string') { strings.add(v); continue; }\n\
                    if ((typeof v !== 'object' && typeof v !== 'function') || v === null || seen.has(v)) continue;\n\
                    seen.add(v);\n\
                    for (const key of Reflect.ownKeys(v as object)) {\n\
                      if (typeof key === 'string') strings.add(key);\n\
                      try { queue.push((v as any)[key]); } catch {}\n\
                    }\n\
                    queue.push(Object.getPrototypeOf(v));\n\
                  }\n\
                  export default [...strings];\n";
    let limits = Limits { max_output_bytes: 10 << 20, ..Limits::default() };
    let outcome = executor
        .execute(ExecRequest {
            workspace: s._project.path().join(".kodelet/mcp"),
            script: Script::Inline(script.into()),
            limits,
            bridge: Some(ep.clone()),
        })
        .await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.tool_calls, 1);
    let strings = outcome.value.unwrap();
    let strings = strings.as_array().unwrap();
    assert!(strings.len() > 1000, "only {} strings", strings.len());
    assert!(strings.iter().any(|v| v == "callMCPTool"), "the walk should see the globals");
    for v in strings {
        let v = v.as_str().unwrap();
        assert!(!v.contains(&ep.token), "the token is reachable");
        assert!(!v.contains(ep.socket.to_str().unwrap()), "the socket path is reachable");
    }
    s.finish().await;
}

#[test]
fn the_socket_is_gone_after_agent_exec_exits() {
    let p = Project::with_servers(&fixture_stdio_yaml("fixture", &[]));
    let tmp = p.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // While the script runs its bridge directory exists (private) ...
    let out = p
        .cmd(&["exec", "-"])
        .env("TMPDIR", &tmp)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(
                b"console.log(await callMCPTool('fixture', 'echo', { message: 'via the bridge' }));\n\
                  await new Promise((r) => setTimeout(r, 500));\n\
                  export default 'done';\n",
            )?;
            drop(stdin);
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut seen = None;
            while Instant::now() < deadline && seen.is_none() {
                seen = std::fs::read_dir(&tmp).unwrap().flatten().map(|e| e.path()).next();
                std::thread::sleep(Duration::from_millis(5));
            }
            let dir = seen.expect("no bridge directory while the script ran");
            assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "via the bridge\n\"done\"\n");
    // ... and after exit nothing is left.
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "bridge directory left behind");
}

/// The isolate's client: keeps one connection for sequential calls, maps error answers, and a
/// connection the bridge closed while it sat idle is replaced, not reported, since its request
/// never left. (A restarted bridge has a new token, so the retried request gets a 401 rather
/// than a connection error.)
#[tokio::test]
async fn the_isolates_client_reuses_and_replaces_connections() {
    use agent::bridge::LocalBridgeClient;
    let s = setup(&fixture_stdio_yaml("fixture", &[])).await;
    let ep = s.bridge.endpoint().clone();
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let client = LocalBridgeClient::new(ep.clone());
            for i in 0..5 {
                let body = Bytes::from(call_body("fixture", "add", json!({"a": i, "b": 1})));
                let answer: Value = serde_json::from_slice(&client.call_bytes(body).await.unwrap()).unwrap();
                assert_eq!(answer["structuredContent"], json!({"sum": i + 1}));
            }
            assert_eq!(client.idle_connections(), 1, "sequential calls share one connection");
            let e = client.call_bytes(Bytes::from(call_body("fixture", "ech", json!({})))).await.unwrap_err();
            assert_eq!((e.code_str(), e.status), ("unknown_tool", Some(404)), "{e}");
            assert!(e.suggestions.iter().any(|t| t == "echo"), "{:?}", e.suggestions);

            // Two in flight need two connections; both go back to the pool.
            let body = || Bytes::from(call_body("fixture", "echo", json!({"message": "x"})));
            let (a, b) = futures::join!(client.call_bytes(body()), client.call_bytes(body()));
            a.unwrap();
            b.unwrap();
            assert_eq!(client.idle_connections(), 2);

            // The bridge goes away and another one takes its socket path.
            s.bridge.stop().await;
            // Let its connection tasks see the cancellation and close their sockets.
            tokio::time::sleep(Duration::from_millis(100)).await;
            let dir = ep.socket.parent().unwrap();
            std::fs::create_dir_all(dir).unwrap();
            let again = BridgeServer::start_at(s.manager.clone(), &ep.socket).await.unwrap();
            let e = client.call_bytes(body()).await.unwrap_err();
            assert_eq!((e.code_str(), e.status), ("unauthorized", Some(401)), "{e}");
            again.stop().await;
            let _ = std::fs::remove_dir_all(dir);

            // Nobody listening: a clear transport error.
            let e = client.call_bytes(body()).await.unwrap_err();
            assert_eq!(e.code_str(), "bridge_unreachable");
            assert!(e.message.starts_with("cannot reach the bridge at "), "{e}");
        })
        .await;
    s.manager.shutdown().await;
}

/// A bridge that dies halfway through its answer: the isolate's client says so, and does not
/// send the call again (it may have run).
#[tokio::test]
async fn the_isolates_client_reports_an_answer_cut_off() {
    use agent::bridge::{BridgeEndpoint, LocalBridgeClient};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("half.sock");
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    let server = tokio::spawn(async move {
        let mut requests = 0;
        while let Ok(Ok((mut stream, _))) = tokio::time::timeout(Duration::from_millis(500), listener.accept()).await {
            let mut buf = vec![0u8; 4096];
            let _ = stream.read(&mut buf).await;
            requests += 1;
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{\"content\":").await;
        }
        requests
    });
    let endpoint = BridgeEndpoint { socket, token: "t".into() };
    let local = tokio::task::LocalSet::new();
    let e = local
        .run_until(async {
            let client = LocalBridgeClient::new(endpoint);
            client.call_bytes(Bytes::from(call_body("fixture", "echo", json!({})))).await.unwrap_err()
        })
        .await;
    assert_eq!(e.code_str(), "bridge_unreachable");
    assert!(e.message.contains("the answer was cut off"), "{e}");
    assert_eq!(server.await.unwrap(), 1, "the call was sent once");
}

/// Fault injection: a server dies in the middle of a `Promise.all` of 50 calls (25 to it, one of
/// them the `crash`, 25 to another server). Every promise settles at once (errors for the dead
/// server, values for the other), and the next script on the same executor, bridge and manager
/// gets a restarted server.
#[tokio::test]
async fn a_server_killed_mid_promise_all_settles_every_call_and_the_next_script_works() {
    let tag = format!("fault-{}-{}", std::process::id(), Instant::now().elapsed().as_nanos());
    let s = setup(&format!("{}{}", fixture_stdio_yaml("a", &["--tag", &tag]), fixture_stdio_yaml("b", &[]))).await;
    let ep = s.bridge.endpoint().clone();
    let executor = Executor::new();
    let limits = Limits { max_concurrent_calls: 64, timeout: Duration::from_secs(60), ..Limits::default() };
    let run = |script: &str| {
        executor.execute(ExecRequest {
            workspace: s._project.path().join(".kodelet/mcp"),
            script: Script::Inline(script.into()),
            limits: limits.clone(),
            bridge: Some(ep.clone()),
        })
    };
    // Both servers up before the storm.
    let warm = run("export default [await callMCPTool('a', 'echo', { message: 'a' }), \
                    await callMCPTool('b', 'echo', { message: 'b' })];")
    .await;
    assert!(warm.error.is_none(), "{:?}", warm.error);
    let first_pid = support::pids_matching(&tag);
    assert_eq!(first_pid.len(), 1);

    let started = Instant::now();
    let outcome = run("const a = Array.from({ length: 25 }, (_, i) => i === 0\n\
           ? new Promise((r) => setTimeout(r, 300)).then(() => callMCPTool('a', 'crash', {}))\n\
           : callMCPTool('a', 'sleep', { ms: 20000 }));\n\
         const b = Array.from({ length: 25 }, (_, i) => callMCPTool('b', 'sleep', { ms: 600 + i }));\n\
         export default await Promise.all([...a, ...b].map((p) =>\n\
           p.then((v) => ({ ok: v }), (e) => ({ err: String(e.message) }))));\n")
    .await;
    let elapsed = started.elapsed();
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.tool_calls, 50);
    let settled = outcome.value.unwrap();
    let settled = settled.as_array().unwrap();
    assert_eq!(settled.len(), 50);
    for (i, r) in settled[..25].iter().enumerate() {
        let err = r["err"].as_str().unwrap_or_else(|| panic!("call {i} to the dead server: {r}"));
        let tool = if i == 0 { "crash" } else { "sleep" };
        assert!(
            err.starts_with(&format!("server `a` failed during `{tool}`: the server exited during the call")),
            "call {i}: {err}"
        );
    }
    for (i, r) in settled[25..].iter().enumerate() {
        assert_eq!(r["ok"], json!(format!("slept {} ms", 600 + i)), "call {i} to the live server: {r}");
    }
    // Settled when the server died, not when its sleeps would have ended or timed out.
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");

    let next = run("export default [await callMCPTool('a', 'echo', { message: 'restarted' }), \
                    await callMCPTool('b', 'add', { a: 1, b: 2 })];")
    .await;
    assert!(next.error.is_none(), "{:?}", next.error);
    assert_eq!(next.value.unwrap()[0], json!("restarted"));
    let second_pid = support::pids_matching(&tag);
    assert_eq!(second_pid.len(), 1);
    assert_ne!(first_pid, second_pid, "`a` was started again");
    s.finish().await;
    assert!(support::pids_matching(&tag).is_empty(), "server left running");
}

#[tokio::test]
async fn search_ranks_every_enabled_server_and_validates_its_query() {
    let yaml = format!("{}{}", fixture_stdio_yaml("fixture", &[]), fixture_stdio_yaml("other", &[]));
    let s = setup(&yaml).await;
    let ep = s.bridge.endpoint().clone();
    // Nothing was started before: the search starts both servers.
    let (status, body) =
        raw(&ep.socket, "GET", "/search?q=add+two+numbers&limit=3", Some(&ep.token), Bytes::new()).await;
    assert_eq!(status, 200, "{body}");
    let hits = body.as_array().unwrap();
    assert!(hits.len() <= 3 && hits.len() >= 2, "{body}");
    let mut first_two: Vec<(&str, &str)> =
        hits[..2].iter().map(|h| (h["server"].as_str().unwrap(), h["tool"].as_str().unwrap())).collect();
    first_two.sort();
    assert_eq!(first_two, vec![("fixture", "add"), ("other", "add")], "{body}");
    assert_eq!(hits[0]["signature"].as_str().unwrap().split('(').nth(1), Some("a: integer, b: integer)"));
    assert_eq!(hits[0]["description"], "Add two integers; returns {sum}.");
    assert!(hits[0]["score"].as_f64().unwrap() > 0.0);
    // The same records as `agent mcp search --json`.
    let keys: Vec<&String> = hits[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["server", "tool", "score", "signature", "description"]);
    // %-encoded query, a server filter.
    let (status, body) =
        raw(&ep.socket, "GET", "/search?q=upper%2Dcase%20text&server=other", Some(&ep.token), Bytes::new()).await;
    assert_eq!(status, 200);
    assert_eq!(body[0]["tool"], "text.upper");
    assert!(body.as_array().unwrap().iter().all(|h| h["server"] == "other"), "{body}");
    for (path, needle) in [
        ("/search", "missing query"),
        ("/search?q=%20", "missing query"),
        ("/search?q=the", "no words to search for"),
        ("/search?q=x&limit=0", "`limit` must be a whole number from 1 to 100"),
        ("/search?q=x&limit=abc", "`limit`"),
        ("/search?q=x&color=red", "unknown parameter `color`"),
        ("/search?q=%zz", "malformed query parameter"),
    ] {
        let (status, body) = raw(&ep.socket, "GET", path, Some(&ep.token), Bytes::new()).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert_eq!(body["error"]["code"], "bad_request");
        assert!(body["error"]["message"].as_str().unwrap().contains(needle), "{path}: {body}");
    }
    let (status, body) = raw(&ep.socket, "GET", "/search?q=add&server=fixtur", Some(&ep.token), Bytes::new()).await;
    assert_eq!((status, &body["error"]["suggestions"]), (404, &json!(["fixture"])));
    let (status, _) = raw(&ep.socket, "GET", "/search?q=add", None, Bytes::new()).await;
    assert_eq!(status, 401);
    let (status, _) = raw(&ep.socket, "POST", "/search?q=add", Some(&ep.token), Bytes::new()).await;
    assert_eq!(status, 405);
    // The typed client reads the same answer.
    let client = BridgeClient::new(ep.clone());
    let hits = client.search("echo a message", 1).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].tool, "echo");
    s.finish().await;
}

#[tokio::test]
async fn search_leaves_out_a_server_that_fails_to_start() {
    let yaml = format!("{}{}", fixture_stdio_yaml("fixture", &[]), fixture_stdio_yaml("broken", &["--exit-on-start"]));
    let s = setup(&yaml).await;
    let client = BridgeClient::new(s.bridge.endpoint().clone());
    let hits = client.search("add numbers", 10).await.unwrap();
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h.server == "fixture"), "{hits:?}");
    // Asked again, the broken server is not started again (it would fail the same way).
    let again = client.search("add numbers", 10).await.unwrap();
    assert_eq!(again, hits);
    s.finish().await;
}

#[tokio::test]
async fn describe_answers_a_tools_declaration_or_a_did_you_mean() {
    let s = setup(&fixture_stdio_yaml("fixture", &[])).await;
    let ep = s.bridge.endpoint().clone();
    let (status, body) = raw(&ep.socket, "GET", "/tools/fixture/add", Some(&ep.token), Bytes::new()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["server"], "fixture");
    assert_eq!(body["tool"], "add");
    assert_eq!(body["signature"], "fixture.add(a: integer, b: integer)");
    assert_eq!(body["description"], "Add two integers; returns {sum}.");
    // Without a describer (no code mode): TSDoc and the signature.
    let ts = body["typescript"].as_str().unwrap();
    assert!(ts.contains(" * Add two integers") && ts.ends_with("fixture.add(a: integer, b: integer)\n"), "{ts}");
    // A dot in the tool name, %-encoded or not.
    for path in ["/tools/fixture/text.upper", "/tools/fixture/text%2Eupper"] {
        let (status, body) = raw(&ep.socket, "GET", path, Some(&ep.token), Bytes::new()).await;
        assert_eq!((status, body["tool"].as_str()), (200, Some("text.upper")), "{path}");
    }
    let (status, body) = raw(&ep.socket, "GET", "/tools/fixture/ad", Some(&ep.token), Bytes::new()).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "unknown_tool");
    assert!(body["error"]["message"].as_str().unwrap().contains("did you mean `fixture.add`"), "{body}");
    let (status, body) = raw(&ep.socket, "GET", "/tools/fixtur/add", Some(&ep.token), Bytes::new()).await;
    assert_eq!((status, &body["error"]["code"]), (404, &json!("unknown_server")));
    assert_eq!(body["error"]["suggestions"], json!(["fixture"]));
    for path in ["/tools/fixture", "/tools/fixture/", "/tools//add", "/tools/fixture/%zz"] {
        let (status, body) = raw(&ep.socket, "GET", path, Some(&ep.token), Bytes::new()).await;
        assert_eq!(status, 400, "{path}: {body}");
    }
    let d = BridgeClient::new(ep.clone()).describe("fixture", "text.upper").await.unwrap();
    assert_eq!(d.signature, "fixture.text.upper(text: string)");
    s.finish().await;
}

#[tokio::test]
async fn the_code_mode_describer_answers_the_generated_typescript() {
    let project = Project::with_servers(&fixture_stdio_yaml("fixture", &[]));
    let config = project.library_config();
    let manager = Arc::new(McpManager::new(&config));
    let describer = agent::codemode::describer(manager.configured_names(), project.path().join(".kodelet/mcp"));
    let bridge = BridgeServer::start_with(manager.clone(), Some(describer)).await.unwrap();
    let d = BridgeClient::new(bridge.endpoint().clone()).describe("fixture", "add").await.unwrap();
    let ts = &d.typescript;
    assert!(ts.starts_with("// import { add } from \"./servers/fixture/index.ts\";"), "{ts}");
    assert!(!ts.contains("Generated by agent") && !ts.contains("../../client.ts"), "{ts}");
    for needle in
        ["export async function add(input: AddInput): Promise<AddOutput>", "export interface AddInput", "sum: number;"]
    {
        assert!(ts.contains(needle), "{needle} missing from\n{ts}");
    }
    bridge.stop().await;
    manager.shutdown().await;
}

#[tokio::test]
async fn search_follows_a_changed_tool_list() {
    let s = setup(&fixture_stdio_yaml("fixture", &["--echo-retires"])).await;
    let client = BridgeClient::new(s.bridge.endpoint().clone());
    let found = |hits: &[agent::mcp::catalog::SearchResult]| hits.iter().any(|h| h.tool == "echo");
    assert!(found(&client.search("echo message", 5).await.unwrap()));
    let (first, _) = s.manager.catalog().await;
    let (same, _) = s.manager.catalog().await;
    assert!(Arc::ptr_eq(&first, &same), "an unchanged tool list is not indexed again");
    // `echo` announces tools/list_changed and leaves the list.
    client.call(&req("echo", json!({"message": "bye"}))).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while found(&client.search("echo message", 5).await.unwrap()) {
        assert!(Instant::now() < deadline, "the search still finds the retired tool");
        tokio::task::yield_now().await;
    }
    let (rebuilt, _) = s.manager.catalog().await;
    assert!(!rebuilt.tools().iter().any(|t| t.name == "echo"));
    assert_eq!(rebuilt.tools().len() + 1, first.tools().len());
    s.finish().await;
}

#[tokio::test]
async fn bridge_search_fuses_embeddings_and_falls_back_to_words_when_they_fail() {
    for failing in [false, true] {
        let fake = fake_embeddings::FakeEmbeddings::start(failing);
        let project = Project::new();
        project.write_config(&format!(
            "{}mcp:\n  servers:\n{}",
            fake.search_yaml(),
            fixture_stdio_yaml("fixture", &[])
        ));
        let config = project.library_config();
        let manager = Arc::new(McpManager::new(&config));
        let bridge = BridgeServer::start(manager.clone()).await.unwrap();
        let client = BridgeClient::new(bridge.endpoint().clone());
        let plus = client.search("plus", 3).await.unwrap();
        let words = client.search("add two numbers", 3).await.unwrap();
        assert_eq!(words[0].tool, "add", "{words:?}");
        if failing {
            assert!(plus.is_empty(), "words only: {plus:?}");
            assert_eq!(fake.requests(), 1, "a failed endpoint is not asked again");
        } else {
            assert_eq!(plus[0].tool, "add", "{plus:?}");
            // The tools once, then one query per search.
            assert_eq!(fake.requests(), 3);
        }
        bridge.stop().await;
        manager.shutdown().await;
    }
}
