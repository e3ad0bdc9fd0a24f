//! `agent mcp serve` driven by real third-party MCP clients: the official Python SDK (pinned,
//! in a venv under `<target>/py-tools`) over stdio and Streamable HTTP, the MCP Inspector CLI
//! (npm, pinned) over stdio, plain HTTP requests for the token (401) and Origin (403) checks,
//! and signals: upstream servers are stopped, no orphans.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use support::*;

const PY_CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/serve/py_client.py");

/// A running `agent mcp serve --http`, its URL, and its stderr so far.
struct Serving {
    child: Child,
    url: String,
    stderr: Arc<Mutex<String>>,
}

impl Serving {
    fn start(p: &Project, extra: &[&str], env: &[(&str, &str)]) -> Serving {
        let mut args = vec!["mcp", "serve", "--http", ":0"];
        args.extend_from_slice(extra);
        let mut cmd = p.cmd(&args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn serve");
        let mut reader = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        let url = loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 {
                panic!("serve exited before listening:\n{seen}");
            }
            seen.push_str(&line);
            if let Some(url) = line.trim().strip_prefix("listening on ") {
                break url.to_string();
            }
        };
        let stderr = Arc::new(Mutex::new(seen));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = reader.read_to_string(&mut rest);
            sink.lock().unwrap().push_str(&rest);
        });
        Serving { child, url, stderr }
    }

    fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().trim_end_matches("/mcp").parse().unwrap()
    }

    fn signal(&self, sig: i32) {
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    fn wait_exit(&mut self) -> i32 {
        let mut code = None;
        assert!(
            wait_until(Duration::from_secs(15), || {
                code = self.child.try_wait().unwrap().map(|s| s.code().unwrap_or(-1));
                code.is_some()
            }),
            "serve did not exit"
        );
        code.unwrap()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One raw HTTP/1.1 POST of an `initialize` to `/mcp`: the status code.
fn post_initialize(port: u16, headers: &[(&str, &str)]) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut status = String::new();
    BufReader::new(s).read_line(&mut status).unwrap();
    status
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status:?}"))
}

fn python_client(python: &Path, p: &Project, args: &[&str]) -> Command {
    let mut c = Command::new(python);
    c.arg(PY_CLIENT).args(args).env("HOME", p.path().join("home")).stdin(Stdio::null());
    c
}

fn run_json(mut c: Command) -> Value {
    let out = c.output().expect("run the Python client");
    assert!(
        out.status.success(),
        "the Python client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// What every Python scenario must have seen.
fn check_scenario(out: &Value, p: &Project) {
    let tools: Vec<&str> = out["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    for t in ["execute_code", "search_tools", "describe_tool", "fixture_echo", "fixture_add", "fixture_text_upper"] {
        assert!(tools.contains(&t), "{t} missing from {tools:?}");
    }
    assert_eq!(out["add_has_output_schema"], false, "proxied tools carry no outputSchema");
    assert_eq!(out["add_has_result_handler"], true);
    let ok = |k: &str| {
        assert_eq!(out[k]["is_error"], false, "{k}: {}", out[k]);
        out[k]["text"].as_str().unwrap().to_string()
    };
    assert_eq!(ok("echo"), "hi there");
    assert_eq!(ok("add_jq"), "50");
    assert_eq!(ok("add_js"), "6");
    assert_eq!(ok("code").trim(), "3");
    assert_eq!(ok("code_tool").trim(), "42");
    assert_eq!(ok("good_sleep"), "slept 4243 ms");
    assert!(ok("search").contains("\"tool\":\"add\""), "{}", out["search"]);
    assert!(ok("describe").contains("fixture_add"), "{}", out["describe"]);
    assert_eq!(out["bad_handler"]["is_error"], true);
    let bad = out["bad_handler"]["text"].as_str().unwrap();
    assert!(bad.contains("the tool was not called"), "{bad}");
    assert!(p.server_logged("fixture", "sleep 4243 ms started"), "the fixture's log shows calls");
    assert!(!p.server_logged("fixture", "sleep 4242 ms started"), "a bad handler fails before the call");
    assert_eq!(out["handler_after"]["is_error"], true);
    let after = out["handler_after"]["text"].as_str().unwrap();
    assert!(after.contains("`fixture.echo` ran (its side effects happened), but the result handler failed"), "{after}");
}

#[test]
fn python_sdk_over_stdio() {
    let Some(python) = python_mcp_or_skip("serve over stdio with the Python SDK") else { return };
    let p = Project::with_fixture();
    let agent = agent_bin().display().to_string();
    let dir = p.path().display().to_string();
    let out = run_json(python_client(&python, &p, &["stdio", &dir, &agent, "mcp", "serve"]));
    check_scenario(&out, &p);
    // Upstream progress reaches the downstream request that asked for it.
    assert_eq!(out["progress"]["text"], "done after 3 steps");
    assert_eq!(
        out["progress"]["seen"],
        serde_json::json!([[1.0, 3.0, "step 1"], [2.0, 3.0, "step 2"], [3.0, 3.0, "step 3"]])
    );
}

#[test]
fn upstream_tool_list_changes_reach_the_client() {
    let Some(python) = python_mcp_or_skip("serve forwards tools/list_changed") else { return };
    let p = Project::with_servers(&fixture_stdio_yaml("fixture", &["--echo-retires"]));
    let agent = agent_bin().display().to_string();
    let dir = p.path().display().to_string();
    let out = run_json(python_client(&python, &p, &["listchanged", &dir, &agent, "mcp", "serve"]));
    let has = |k: &str| out[k].as_array().unwrap().iter().any(|t| t == "fixture_echo");
    assert!(has("before") && !has("after"), "{out}");
}

#[test]
fn python_sdk_over_http_with_two_concurrent_clients() {
    let Some(python) = python_mcp_or_skip("serve over HTTP with the Python SDK") else { return };
    let p = Project::with_fixture();
    let s = Serving::start(&p, &[], &[]);
    let a =
        python_client(&python, &p, &["http", &s.url]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let b =
        python_client(&python, &p, &["http", &s.url]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        check_scenario(&v, &p);
    }
}

#[test]
fn http_wants_the_token_and_a_loopback_origin() {
    let p = Project::with_fixture();
    let s = Serving::start(&p, &["--token-env", "SERVE_TOKEN"], &[("SERVE_TOKEN", "s3cret-token")]);
    let port = s.port();
    assert_eq!(post_initialize(port, &[]), 401, "no token");
    assert_eq!(post_initialize(port, &[("Authorization", "Bearer wrong-token")]), 401, "wrong token");
    let auth = ("Authorization", "Bearer s3cret-token");
    assert_eq!(post_initialize(port, &[auth, ("Origin", "http://evil.example")]), 403, "foreign Origin");
    assert_eq!(post_initialize(port, &[auth, ("Origin", "http://localhost:5173")]), 200, "loopback Origin");
    assert_eq!(post_initialize(port, &[auth]), 200, "no Origin (not a browser)");
}

#[test]
fn a_foreign_origin_is_refused_without_a_token_too_and_non_loopback_needs_one() {
    let p = Project::with_fixture();
    let s = Serving::start(&p, &[], &[]);
    assert_eq!(post_initialize(s.port(), &[("Origin", "https://attacker.example:8443")]), 403);
    assert_eq!(post_initialize(s.port(), &[]), 200);
    let r = p.run(&["mcp", "serve", "--http", "0.0.0.0:0"]);
    r.assert_code(2);
    assert!(r.stderr.contains("refusing to listen on 0.0.0.0:0 without a token"), "{}", r.stderr);
}

#[test]
fn sigterm_and_stdin_close_stop_the_upstream_servers() {
    let tag = format!("serve-stop-{}", std::process::id());
    let p = Project::with_servers(&fixture_stdio_yaml("fixture", &["--tag", &tag]));
    let mut s = Serving::start(&p, &[], &[]);
    assert!(!pids_matching(&tag).is_empty(), "servers start with serve");
    s.signal(libc::SIGTERM);
    assert_eq!(s.wait_exit(), 143, "{}", s.stderr.lock().unwrap());
    assert!(wait_until(Duration::from_secs(10), || pids_matching(&tag).is_empty()), "orphaned upstream servers");

    // stdio: the client goes away (stdin closes) after the handshake.
    let mut child = p.cmd(&["mcp", "serve"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    writeln!(stdin, "{init}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("\"serverInfo\""), "{line}");
    assert!(!pids_matching(&tag).is_empty());
    drop(stdin);
    let mut status = None;
    assert!(wait_until(Duration::from_secs(15), || {
        status = child.try_wait().unwrap();
        status.is_some()
    }));
    assert_eq!(status.unwrap().code(), Some(0));
    assert!(wait_until(Duration::from_secs(10), || pids_matching(&tag).is_empty()), "orphaned upstream servers");
}

#[test]
fn the_mcp_inspector_cli_lists_and_calls_over_stdio() {
    if !node_or_skip("serve with the MCP Inspector CLI") {
        return;
    }
    let inspector = npm_bin(INSPECTOR, "mcp-inspector");
    let p = Project::with_fixture();
    let agent = agent_bin().display().to_string();
    let run = |extra: &[&str]| {
        let out = Command::new(&inspector)
            .arg("--cli")
            .args([agent.as_str(), "mcp", "serve"])
            .args(extra)
            .current_dir(p.path())
            .env("HOME", p.path().join("home"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let list = run(&["--method", "tools/list"]);
    let names: Vec<&str> = list["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"fixture_echo") && names.contains(&"execute_code"), "{names:?}");
    let call = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "fixture_add",
        "--tool-arg",
        "a=4",
        "--tool-arg",
        "b=5",
        "--tool-arg",
        "result_handler=tool_output.sum * 2",
    ]);
    assert_eq!(call["content"][0]["text"], "18", "{call}");
}

// ---------------------------------------------------------------------------------------------
// Per-call context, driven by an rmcp client over stdio

/// A downstream rmcp client that records every progress notification by its token.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<std::collections::HashMap<String, Vec<f64>>>>,
}

impl rmcp::ClientHandler for Recorder {
    async fn on_progress(
        &self,
        p: rmcp::model::ProgressNotificationParam,
        _cx: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.progress.lock().unwrap().entry(p.progress_token.0.to_string()).or_default().push(p.progress);
    }
}

/// `agent mcp serve` on stdio in `p`, with an rmcp client connected to it.
async fn rmcp_client(p: &Project, rec: Recorder) -> rmcp::service::RunningService<rmcp::RoleClient, Recorder> {
    use rmcp::ServiceExt;
    let mut cmd = tokio::process::Command::new(agent_bin());
    cmd.args(["mcp", "serve"]).current_dir(p.path()).env("HOME", p.path().join("home"));
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    rec.serve(transport).await.unwrap()
}

fn call_request(name: &str, args: Value) -> rmcp::model::ClientRequest {
    let params =
        rmcp::model::CallToolRequestParams::new(name.to_string()).with_arguments(args.as_object().unwrap().clone());
    rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params))
}

/// The request id the fixture logged for its `sleep ms` call, once it arrived.
fn logged_sleep_id(p: &Project, ms: u64) -> Option<String> {
    let log = std::fs::read_to_string(p.path().join(".kodelet/mcp/logs/fixture.stderr.log")).ok()?;
    let needle = format!("sleep {ms} ms started (request ");
    let line = log.lines().find(|l| l.contains(&needle))?;
    Some(line.split(&needle).nth(1)?.trim_end_matches(')').to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_proxied_call_cancels_the_upstream_request() {
    let p = Project::with_fixture();
    let client = rmcp_client(&p, Recorder::default()).await;
    cancel_once_the_upstream_sleep_started(
        &p,
        &client,
        call_request("fixture_sleep", serde_json::json!({"ms": 60000})),
        60000,
    )
    .await;
    // The connection still serves the next call.
    let r = client
        .peer()
        .send_request(call_request("fixture_echo", serde_json::json!({"message": "after"})))
        .await
        .unwrap();
    assert!(format!("{r:?}").contains("after"), "{r:?}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_execute_code_cancels_the_upstream_call_its_script_waits_on() {
    let p = Project::with_fixture();
    let client = rmcp_client(&p, Recorder::default()).await;
    let code = "await callMCPTool('fixture', 'sleep', {ms: 60001}); console.log('finished')";
    cancel_once_the_upstream_sleep_started(
        &p,
        &client,
        call_request("execute_code", serde_json::json!({"code": code})),
        60001,
    )
    .await;
    client.cancel().await.unwrap();
}

/// Sends `request` (which makes the fixture sleep `ms`), cancels it once the fixture logged the
/// sleep's start, and waits until the fixture logged that it was told.
async fn cancel_once_the_upstream_sleep_started(
    p: &Project,
    client: &rmcp::service::RunningService<rmcp::RoleClient, Recorder>,
    request: rmcp::model::ClientRequest,
    ms: u64,
) {
    let handle =
        client.peer().send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options()).await.unwrap();
    let mut id = None;
    assert!(
        wait_until(Duration::from_secs(30), || {
            id = logged_sleep_id(p, ms);
            id.is_some()
        }),
        "the upstream call never started"
    );
    handle.cancel(Some("test".into())).await.unwrap();
    let id = id.unwrap();
    assert!(
        wait_until(Duration::from_secs(20), || p.server_logged("fixture", &format!("fixture: cancelled {id}"))),
        "the upstream server was not told (request {id})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_to_one_server_each_get_only_their_own_progress() {
    let p = Project::with_fixture();
    let rec = Recorder::default();
    let client = rmcp_client(&p, rec.clone()).await;
    let send = |steps: u32| {
        let peer = client.peer().clone();
        async move {
            let handle = peer
                .send_request_with_option(
                    call_request("fixture_progress", serde_json::json!({"steps": steps, "delay_ms": 40})),
                    rmcp::service::PeerRequestOptions::no_options(),
                )
                .await
                .unwrap();
            let token = handle.progress_token.0.to_string();
            let answer = handle.await_response().await.unwrap();
            (token, format!("{answer:?}"))
        }
    };
    let ((ta, ra), (tb, rb)) = tokio::join!(send(3), send(6));
    assert!(ra.contains("done after 3 steps") && rb.contains("done after 6 steps"), "{ra}\n{rb}");
    let seen = rec.progress.lock().unwrap().clone();
    assert_eq!(seen.get(&ta), Some(&vec![1.0, 2.0, 3.0]), "{seen:?}");
    assert_eq!(seen.get(&tb), Some(&vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), "{seen:?}");
    client.cancel().await.unwrap();
}

#[test]
fn an_upstream_elicitation_goes_to_the_downstream_client_that_can_answer_it() {
    let Some(python) = python_mcp_or_skip("serve forwards elicitation") else { return };
    // The upstream asks with a classic `elicitation/create` request (agent's connections use the
    // `initialize` lifecycle, so 2025-11-25); the request is tied to the one call in flight.
    let p = Project::with_servers(&fixture_stdio_yaml("fixture", &["--host-tools"]));
    let agent = agent_bin().display().to_string();
    let dir = p.path().display().to_string();
    let out = run_json(python_client(&python, &p, &["elicit", &dir, &agent, "mcp", "serve"]));
    let with = &out["with_callback"];
    assert_eq!(with["is_error"], false, "{out}");
    assert_eq!(with["asked"][0]["message"], "Tell me about the order", "{out}");
    let text = with["text"].as_str().unwrap();
    let content: Value =
        serde_json::from_str(text.strip_prefix("accept: ").unwrap_or_else(|| panic!("{out}"))).unwrap();
    assert_eq!(content, serde_json::json!({"name": "Grace", "count": 7}), "the client's answer went upstream");
    // A script's tool call asks the client that runs the script.
    let code = &out["code_with_callback"];
    assert_eq!(code["is_error"], false, "{out}");
    assert!(code["text"].as_str().unwrap().contains(r#"accept: {"name":"Grace","count":7}"#), "{out}");
    assert_eq!(with["asked"].as_array().unwrap().len(), 2, "{out}");
    // A client without the capability: the server's policy (no terminal: decline).
    assert_eq!(out["without_callback"]["text"], "decline: null", "{out}");
    // A client whose answer is an error: the policy answers, the call still completes.
    assert_eq!(out["failing_callback"]["text"], "decline: null", "{out}");
    assert_eq!(out["failing_callback"]["is_error"], false, "{out}");
}
