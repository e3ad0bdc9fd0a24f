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

use serde_json::{Value, json};
use support::*;

const PY_CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/serve/py_client.py");

/// A running `agent mcp serve --http`, its URL, its bearer token (read from the file it names,
/// unless `--token-env` or `--no-auth`), and its stderr so far.
pub(crate) struct Serving {
    child: Child,
    url: String,
    token: Option<String>,
    token_file: Option<std::path::PathBuf>,
    stderr: Arc<Mutex<String>>,
}

impl Serving {
    pub(crate) fn start(p: &Project, extra: &[&str], env: &[(&str, &str)]) -> Serving {
        Serving::start_with(p, extra, env, |_| {})
    }

    /// Started with `setup` applied to the command (resource limits and the like); fails when
    /// serve does not listen within 20 s.
    fn start_with(p: &Project, extra: &[&str], env: &[(&str, &str)], setup: impl FnOnce(&mut Command)) -> Serving {
        let mut args = vec!["mcp", "serve", "--http", ":0"];
        args.extend_from_slice(extra);
        let mut cmd = p.cmd(&args);
        // Token files go to the project's own runtime directory.
        let run = p.path().join("run");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        cmd.env("XDG_RUNTIME_DIR", &run);
        for (k, v) in env {
            cmd.env(k, v);
        }
        setup(&mut cmd);
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn serve");
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(pipe);
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 {
                sink.lock().unwrap().push_str(&line);
                let _ = tx.send(line.clone());
                line.clear();
            }
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let mut token_file = None;
        let url = loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let Ok(line) = rx.recv_timeout(left) else {
                let _ = child.kill();
                panic!("serve did not listen within 20 s:\n{}", stderr.lock().unwrap());
            };
            if let Some(rest) = line.trim().strip_prefix("bearer token in ") {
                token_file = Some(std::path::PathBuf::from(rest.split(" (").next().unwrap()));
            }
            if let Some(url) = line.trim().strip_prefix("listening on ") {
                break url.to_string();
            }
        };
        let token = match &token_file {
            Some(f) => Some(std::fs::read_to_string(f).unwrap().trim().to_string()),
            None => env.iter().find(|(k, _)| *k == "SERVE_TOKEN").map(|(_, v)| v.to_string()),
        };
        Serving { child, url, token, token_file, stderr }
    }

    fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().trim_end_matches("/mcp").parse().unwrap()
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    fn auth(&self) -> (&'static str, String) {
        ("Authorization", format!("Bearer {}", self.token.as_deref().expect("a token")))
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

    pub(crate) fn client(&self) -> Mcp {
        Mcp { http: reqwest::Client::new(), url: self.url.clone(), token: self.token.clone() }
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
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
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

/// A plain HTTP client of serve's MCP endpoint (one JSON-RPC message per POST).
pub(crate) struct Mcp {
    http: reqwest::Client,
    url: String,
    token: Option<String>,
}

/// What one POST got back.
#[derive(Debug)]
pub(crate) struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Answer {
    /// The JSON-RPC message in the body (plain JSON, or the last `data:` event of a stream).
    fn json(&self) -> Value {
        if let Ok(v) = serde_json::from_str(&self.body) {
            return v;
        }
        self.body
            .lines()
            .rev()
            .filter_map(|l| l.strip_prefix("data: "))
            .find_map(|d| serde_json::from_str::<Value>(d).ok())
            .unwrap_or_else(|| panic!("no JSON-RPC message in {} {:?}", self.status, self.body))
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}"#;

impl Mcp {
    async fn post(&self, body: &str, session: Option<&str>) -> Answer {
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        let r = req.send().await.expect("POST to serve");
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        Answer { status, headers, body: r.text().await.unwrap_or_default() }
    }

    /// A new session: its id, or the answer that refused it.
    pub(crate) async fn initialize(&self) -> Result<String, Answer> {
        let a = self.post(INIT, None).await;
        let Some(id) = a.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).map(String::from) else {
            return Err(a);
        };
        let done = self.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, Some(&id)).await;
        assert_eq!(done.status, 202, "{done:?}");
        Ok(id)
    }

    /// `tools/call`: the answer's JSON-RPC message.
    pub(crate) async fn call(&self, session: &str, name: &str, args: Value) -> Answer {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": name, "arguments": args}});
        self.post(&body.to_string(), Some(session)).await
    }

    pub(crate) async fn delete(&self, session: &str) -> u16 {
        let mut req = self.http.delete(&self.url).header("mcp-session-id", session);
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        req.send().await.expect("DELETE").status().as_u16()
    }
}

/// The text of a `tools/call` answer, and whether it is an error.
pub(crate) fn tool_text(a: &Answer) -> (String, bool) {
    let v = a.json();
    let r = &v["result"];
    let text =
        r["content"].as_array().map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"));
    (text.unwrap_or_else(|| panic!("not a tool result: {v}")), r["isError"] == true)
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// Open file descriptors of a process.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
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
    // `name`, as progressive mode's `call_tool` has it; `tool` still works for older clients.
    assert_eq!(out["describe_required"], serde_json::json!(["name"]));
    assert!(ok("describe").contains("fixture_add"), "{}", out["describe"]);
    assert_eq!(ok("describe_by_tool"), ok("describe"));
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
    let token = s.token.clone().unwrap();
    let spawn = || {
        python_client(&python, &p, &["http", &s.url])
            .env("MCP_BEARER", &token)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        // The SDK ends its session with HTTP DELETE when it closes, and warns unless the answer
        // is 200 or 204.
        assert!(!stderr.contains("Session termination failed"), "{stderr}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        check_scenario(&v, &p);
    }
}

#[test]
fn http_wants_the_token_and_a_loopback_origin() {
    let p = Project::with_fixture();
    let s = Serving::start(&p, &["--token-env", "SERVE_TOKEN"], &[("SERVE_TOKEN", "s3cret-token")]);
    assert!(s.token_file.is_none(), "a given token is not written anywhere");
    let port = s.port();
    assert_eq!(post_initialize(port, &[]), 401, "no token");
    assert_eq!(post_initialize(port, &[("Authorization", "Bearer wrong-token")]), 401, "wrong token");
    assert_eq!(post_initialize(port, &[("Authorization", "Basic s3cret-token")]), 401, "another scheme");
    let auth = ("Authorization", "Bearer s3cret-token");
    assert_eq!(post_initialize(port, &[auth, ("Origin", "http://evil.example")]), 403, "foreign Origin");
    assert_eq!(post_initialize(port, &[auth, ("Origin", "http://localhost:5173")]), 200, "loopback Origin");
    assert_eq!(post_initialize(port, &[auth]), 200, "no Origin (not a browser)");
    for scheme in ["bearer", "BEARER"] {
        assert_eq!(post_initialize(port, &[("Authorization", &format!("{scheme} s3cret-token"))]), 200, "{scheme}");
    }
}

#[test]
fn a_foreign_origin_is_refused_without_auth_too_and_no_auth_needs_loopback() {
    let p = Project::with_fixture();
    let s = Serving::start(&p, &["--no-auth"], &[]);
    assert!(s.stderr.lock().unwrap().contains("warning: --no-auth"), "{}", s.stderr.lock().unwrap());
    assert_eq!(post_initialize(s.port(), &[("Origin", "https://attacker.example:8443")]), 403);
    assert_eq!(post_initialize(s.port(), &[]), 200);
    let r = p.run(&["mcp", "serve", "--http", "0.0.0.0:0", "--no-auth"]);
    r.assert_code(2);
    assert!(r.stderr.contains("refusing to listen on 0.0.0.0:0 without a token"), "{}", r.stderr);
    let r = p.run(&["mcp", "serve", "--http", ":0", "--no-auth", "--token-env", "X"]);
    r.assert_code(2);
}

#[test]
fn sigterm_and_stdin_close_stop_the_upstream_servers() {
    let tag = format!("serve-stop-{}", std::process::id());
    let p = Project::with_servers(&fixture_stdio_yaml("fixture", &["--tag", &tag]));
    let mut s = Serving::start(&p, &[], &[]);
    assert!(wait_until(Duration::from_secs(10), || !pids_matching(&tag).is_empty()), "servers start with serve");
    let token_file = s.token_file.clone().expect("a generated token");
    s.signal(libc::SIGTERM);
    assert_eq!(s.wait_exit(), 143, "{}", s.stderr.lock().unwrap());
    assert!(!token_file.exists(), "the token file goes with serve");
    assert!(wait_until(Duration::from_secs(10), || pids_matching(&tag).is_empty()), "orphaned upstream servers");

    // stdio: the client goes away (stdin closes) after the handshake.
    let mut child = p.cmd(&["mcp", "serve"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    writeln!(stdin, "{init}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("\"serverInfo\""), "{line}");
    assert!(wait_until(Duration::from_secs(10), || !pids_matching(&tag).is_empty()), "servers start with serve");
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
    // rmcp handles each notification in a task of its own, on our side and on this client's, so
    // a late step may be left out (ours) or recorded out of order or after the answer (the
    // client's); what holds is that each call sees its own steps only, each at most once, and
    // its last step.
    let last_seen = |token: &str, last: f64| rec.progress.lock().unwrap().get(token).is_some_and(|v| v.contains(&last));
    assert!(wait_until(Duration::from_secs(5), || last_seen(&ta, 3.0) && last_seen(&tb, 6.0)), "{:?}", rec.progress);
    let seen = rec.progress.lock().unwrap().clone();
    for (token, steps) in [(&ta, 3.0), (&tb, 6.0)] {
        let mut values = seen[token].clone();
        values.sort_by(f64::total_cmp);
        let before = values.len();
        values.dedup();
        assert_eq!(values.len(), before, "a step seen twice: {seen:?}");
        assert!(values.iter().all(|&v| (1.0..=steps).contains(&v) && v.fract() == 0.0), "{seen:?}");
    }
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

// ---------------------------------------------------------------------------------------------
// Hardening: who may call, how much they may take, what they learn

/// Another local user (`nobody`, when the tests run as root; else a client without the token)
/// tries serve on loopback: it cannot read the token file, and without the token every request
/// is refused and no code runs. The owner's client, with the token, runs the same script.
#[test]
fn another_local_user_cannot_run_code_without_the_token() {
    let p = Project::with_fixture();
    let s = Serving::start(&p, &[], &[]);
    // Where the token would be (the attacker tries to read it).
    let file = s.token_file.clone().unwrap_or_else(|| p.path().join("run/agent/serve.token"));
    let attacker = format!(
        r#"
import http.client, json, sys
out = {{}}
try:
    open({file:?}).read(); out["read_token"] = True
except OSError as e:
    out["read_token"] = False
def post(body, headers):
    c = http.client.HTTPConnection("127.0.0.1", {port}, timeout=20)
    h = {{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}}
    h.update(headers)
    c.request("POST", "/mcp", json.dumps(body), h)
    r = c.getresponse(); r.read(); return r.status, r.getheader("mcp-session-id")
init = {{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {{"protocolVersion": "2025-06-18",
        "capabilities": {{}}, "clientInfo": {{"name": "x", "version": "1"}}}}}}
call = {{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {{"name": "execute_code",
        "arguments": {{"code": "await writeText('pwned.txt', 'x')"}}}}}}
out["statuses"] = []
for h in ({{}}, {{"Authorization": "Bearer guess"}}, {{"Authorization": "Bearer "}}, {{"Authorization": "Basic x"}}):
    status, session = post(init, h)
    out["statuses"].append(status)
    if session:
        h = dict(h, **{{"mcp-session-id": session}})
        post({{"jsonrpc": "2.0", "method": "notifications/initialized"}}, h)
        out["statuses"].append(post(call, h)[0])
print(json.dumps(out))
"#,
        file = file.display().to_string(),
        port = s.port()
    );
    let mut cmd = if unsafe { libc::geteuid() } == 0 {
        // A Python that user can run (not one under root's home).
        let python = if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" };
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", python, "-c", &attacker]);
        c
    } else {
        let mut c = Command::new("python3");
        c.args(["-c", &attacker]);
        c
    };
    let out = cmd.current_dir("/").output().expect("run the attacker");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    if unsafe { libc::geteuid() } == 0 {
        assert_eq!(seen["read_token"], false, "another user read the token: {seen}");
    }
    assert!(seen["statuses"].as_array().unwrap().iter().all(|s| s == 401), "{seen}");
    let pwned = p.path().join(".kodelet/mcp/data/pwned.txt");
    assert!(!pwned.exists(), "code ran for a client without the token");
    assert!(s.token_file.is_some(), "serve generated a token and said where it is");
    let mode = |path: &Path| std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(path).unwrap().permissions());
    assert_eq!(mode(&file) & 0o777, 0o600, "the token file is the user's alone");
    assert_eq!(mode(file.parent().unwrap()) & 0o777, 0o700);

    // The owner, with the token from the file (any case of the scheme), runs the same script.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mcp = s.client();
        let session = mcp.initialize().await.unwrap();
        let a =
            mcp.call(&session, "execute_code", serde_json::json!({"code": "await writeText('pwned.txt', 'x')"})).await;
        assert!(!tool_text(&a).1, "{a:?}");
    });
    assert!(pwned.exists(), "the check above would have seen a script that ran");
}

/// A client floods `initialize`: over `serve.max_sessions` it gets 503 with a JSON-RPC error,
/// the sessions already open keep working, and sessions that end (DELETE, or idle past
/// `serve.session_idle_timeout`) give their place back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_flood_is_capped_and_ended_sessions_give_their_place_back() {
    let p = Project::new();
    p.write_config(&format!(
        "mcp:\n  servers:\n{}serve:\n  max_sessions: 6\n  session_idle_timeout: 3s\n",
        fixture_stdio_yaml("fixture", &[])
    ));
    let s = Serving::start(&p, &[], &[]);
    let mcp = s.client();
    let first = mcp.initialize().await.unwrap();
    let mut flood = Vec::new();
    let mut refused = Vec::new();
    for _ in 0..40 {
        match mcp.initialize().await {
            Ok(id) => flood.push(id),
            Err(a) => refused.push(a),
        }
    }
    assert_eq!(flood.len(), 5, "the cap counts every open session");
    assert_eq!(refused.len(), 35);
    let r = &refused[0];
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.headers.contains_key("retry-after"));
    let error = &r.json()["error"];
    assert_eq!(error["code"], -32000, "{error}");
    assert!(error["message"].as_str().unwrap().contains("too many sessions"), "{error}");
    // The open sessions keep working.
    let echo = mcp.call(&first, "fixture_echo", serde_json::json!({"message": "still here"})).await;
    assert_eq!(tool_text(&echo), ("still here".into(), false));
    // DELETE gives a place back at once.
    for id in &flood {
        assert_eq!(mcp.delete(id).await, 204);
    }
    let mut again = Vec::new();
    for _ in 0..5 {
        again.push(mcp.initialize().await.expect("a place after DELETE"));
    }
    assert!(mcp.initialize().await.is_err(), "full again");
    // Idle sessions expire and give their places back too.
    let mut open = Vec::new();
    let expired = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            tokio::time::sleep(Duration::from_millis(250)).await;
            if let Ok(id) = mcp.initialize().await {
                open.push(id);
                break;
            }
        }
    })
    .await;
    assert!(expired.is_ok(), "idle sessions never expired");
    let gone = mcp.call(&first, "fixture_echo", serde_json::json!({"message": "x"})).await;
    assert_eq!(gone.status, 404, "an expired session is gone: {gone:?}");
}

/// Sessions that come and go leave nothing behind: resident memory after hundreds more
/// sessions (each initialized, used and deleted) is where it was after the first few hundred.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_returns_to_its_baseline_after_sessions_end() {
    let p = Project::with_fixture();
    let s = Serving::start(&p, &[], &[]);
    let mcp = s.client();
    let round = |n: usize| {
        let mcp = &mcp;
        async move {
            for _ in 0..n {
                let id = mcp.initialize().await.expect("initialize");
                let list = mcp.post(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, Some(&id)).await;
                assert_eq!(list.status, 200);
                assert_eq!(mcp.delete(&id).await, 204);
            }
        }
    };
    round(300).await;
    let baseline = rss_kib(s.pid());
    for _ in 0..3 {
        round(300).await;
    }
    let after = rss_kib(s.pid());
    // Before sessions were forgotten, each kept about 11 KB: 900 sessions, about 10 MB.
    assert!(after < baseline + 2048, "resident memory grew from {baseline} KiB to {after} KiB over 900 sessions");
}

/// Raw sockets that hold connections open: half-open ones that send nothing, and slowloris
/// ones that send a header line and then a byte now and then, until `stop`. Each thread then
/// says whether the server closed its connection (1) or not (0).
fn hold_connections(
    port: u16,
    half_open: usize,
    slow: usize,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> (Vec<std::thread::JoinHandle<()>>, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering::Relaxed;
    // Whether the server is done with the connection: end of stream, a reset, or an answer.
    let closed_by_server = |c: &mut std::net::TcpStream| {
        c.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        !matches!(c.read(&mut [0u8; 256]), Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut))
    };
    let closed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut held = Vec::new();
    for i in 0..half_open + slow {
        let (stop, closed) = (stop.clone(), closed.clone());
        held.push(std::thread::spawn(move || {
            let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                closed.fetch_add(1, Relaxed);
                return;
            };
            let slowloris = i >= half_open;
            let mut gone = slowloris && c.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").is_err();
            while !gone && !stop.load(Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                gone = (slowloris && c.write_all(b"X").is_err()) || closed_by_server(&mut c);
            }
            if gone {
                closed.fetch_add(1, Relaxed);
            }
        }));
    }
    (held, closed)
}

/// With a low open-file limit (as on the machine where 150 half-open connections locked a
/// client out), 150 half-open and 30 slowloris connections over `serve.max_connections` do
/// not keep a real client from being served, serve's descriptors stay bounded, and accept
/// never fails for want of them.
#[test]
fn half_open_and_slow_connections_over_the_cap_do_not_lock_a_real_client_out() {
    let p = Project::new();
    p.write_config(&format!("mcp:\n  servers:\n{}serve:\n  read_timeout: 60s\n", fixture_stdio_yaml("fixture", &[])));
    let s = Serving::start_with(&p, &[], &[], |cmd| {
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                let lim = libc::rlimit { rlim_cur: 160, rlim_max: 160 };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    });
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (held, closed) = hold_connections(s.port(), 150, 30, stop.clone());
    std::thread::sleep(Duration::from_millis(500));
    let auth = s.auth();
    for attempt in 0..3 {
        let (tx, rx) = std::sync::mpsc::channel();
        let port = s.port();
        let header = (auth.0, auth.1.clone());
        std::thread::spawn(move || {
            let _ = tx.send(post_initialize(port, &[(header.0, &header.1)]));
        });
        let status = rx.recv_timeout(Duration::from_secs(10));
        assert_eq!(status, Ok(200), "attempt {attempt}: a real client was not served within 10 s");
    }
    let fds = open_fds(s.pid());
    let err = s.stderr.lock().unwrap().clone();
    // The default cap (256) does not fit under 160 descriptors: serve lowered it and said so.
    let cap: usize = err
        .split("serve.max_connections lowered from 256 to ")
        .nth(1)
        .and_then(|r| r.split(':').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no word of the lowered cap: {err}"));
    // Every idle connection past the cap is closed, once serve has accepted it (on a loaded
    // machine some still wait in the listen backlog when the real clients are done).
    let all_over_the_cap_closed =
        wait_until(Duration::from_secs(30), || closed.load(std::sync::atomic::Ordering::Relaxed) + cap >= 180);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in held {
        h.join().unwrap();
    }
    let err = s.stderr.lock().unwrap().clone();
    assert!(!err.contains("Too many open files"), "{err}");
    assert!(fds + 32 < 160, "serve holds {fds} of its 160 descriptors: no room left for its own files");
    let closed = closed.load(std::sync::atomic::Ordering::Relaxed);
    assert!(all_over_the_cap_closed, "serve closed only {closed} of 180 idle connections (cap {cap})");
}

/// A client that sends its headers, or then its body, too slowly is cut off after
/// `serve.read_timeout`.
#[test]
fn slow_headers_and_slow_bodies_are_cut_off_after_the_read_timeout() {
    let p = Project::new();
    p.write_config(&format!("mcp:\n  servers:\n{}serve:\n  read_timeout: 1s\n", fixture_stdio_yaml("fixture", &[])));
    let s = Serving::start(&p, &[], &[]);
    // Headers, a byte every 300 ms: the server closes the connection.
    let mut c = std::net::TcpStream::connect(("127.0.0.1", s.port())).unwrap();
    let started = std::time::Instant::now();
    c.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    let closed = (0..40).any(|_| {
        std::thread::sleep(Duration::from_millis(300));
        c.write_all(b"X").is_err() || {
            c.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
            matches!(c.read(&mut [0u8; 256]), Ok(0) | Ok(_))
        }
    });
    assert!(closed && started.elapsed() < Duration::from_secs(6), "a slow header held on for {:?}", started.elapsed());
    // Complete headers, then a body that never comes: 408.
    let (name, value) = s.auth();
    let mut c = std::net::TcpStream::connect(("127.0.0.1", s.port())).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{name}: {value}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\""
    );
    c.write_all(head.as_bytes()).unwrap();
    let mut status = String::new();
    BufReader::new(c).read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 408"), "{status:?}");
}

/// Malformed JSON, batches and other shapes get 400 with a JSON-RPC error and a short message;
/// and nothing serve answers names an absolute path of the machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_json_rpc_gets_400_and_no_answer_names_an_absolute_path() {
    let p = Project::new();
    p.write_config(&format!(
        "mcp:\n  servers:\n{}{}",
        fixture_stdio_yaml("fixture", &[]),
        fixture_stdio_yaml("broken", &["--exit-on-start"])
    ));
    let s = Serving::start(&p, &[], &[]);
    let mcp = s.client();
    for (body, code, id) in [
        ("{not json", -32700, Value::Null),
        ("", -32700, Value::Null),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, -32600, Value::Null),
        ("[]", -32600, Value::Null),
        (r#"{"jsonrpc":"2.0","id":5}"#, -32600, serde_json::json!(5)),
        (r#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#, -32600, serde_json::json!("x")),
        (r#"{"foo":1}"#, -32600, Value::Null),
    ] {
        let a = mcp.post(body, None).await;
        assert_eq!(a.status, 400, "{body}: {a:?}");
        assert!(a.headers.contains_key("content-type"), "{body}: {a:?}");
        assert_eq!(a.headers["content-type"], "application/json", "{body}");
        let v = a.json();
        assert_eq!(v["error"]["code"], code, "{body}: {v}");
        assert_eq!(v.get("id").cloned().unwrap_or(Value::Null), id, "{body}: {v}");
        assert!(a.body.len() < 200, "not short: {}", a.body);
    }
    let session = mcp.initialize().await.unwrap();
    let scripts = [
        "import { a } from '/etc/passwd'; console.log(a)",
        "import { a } from '../../../x.ts'; console.log(a)",
        "const m = await import('/etc/hosts'); console.log(m)",
        "console.log(new Error('where').stack)",
        "await callMCPTool('broken', 'echo', {})",
        "await readText('../../x')",
    ];
    let home = p.path().join("home");
    let mut answers = Vec::new();
    for code in scripts {
        answers.push(mcp.call(&session, "execute_code", serde_json::json!({"code": code})).await.body);
    }
    answers.push(mcp.call(&session, "describe_tool", serde_json::json!({"name": "broken.echo"})).await.body);
    answers.push(mcp.call(&session, "search_tools", serde_json::json!({"query": "echo"})).await.body);
    let project = std::fs::canonicalize(p.path()).unwrap();
    for a in &answers {
        for path in [p.path(), project.as_path(), home.as_path()] {
            let path = path.display().to_string();
            assert!(!a.contains(&path), "an answer names {path}: {a}");
        }
    }
    assert!(answers[0].contains("outside the workspace <workspace>"), "{}", answers[0]);
    assert!(answers[3].contains("at main.ts:1:"), "{}", answers[3]);
}

/// A hanging upstream server does not hold serve up: it listens at once, answers for the servers
/// that are up, and a server that comes up later is announced with `tools/list_changed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_at_once_while_an_upstream_server_hangs_and_announces_late_ones() {
    let tag = format!("serve-hang-{}", std::process::id());
    let p = Project::new();
    let fixture = fixture_bin().display().to_string();
    p.write_config(&format!(
        "mcp:\n  servers:\n{}{}    late:\n      command: sh\n      args: [\"-c\", \"sleep 4; exec {fixture}\"]\n      connect_timeout: 60s\nserve:\n  startup_wait: 1s\n",
        fixture_stdio_yaml("fixture", &[]),
        fixture_stdio_yaml("hang", &["--hang-on-start", "--tag", &tag]).replace("connect_timeout: 10s", "connect_timeout: 120s"),
    ));
    let started = std::time::Instant::now();
    let mut s = Serving::start(&p, &[], &[]);
    assert!(started.elapsed() < Duration::from_secs(10), "serve listened only after {:?}", started.elapsed());

    #[derive(Clone, Default)]
    struct Changes(Arc<std::sync::atomic::AtomicUsize>);
    impl rmcp::ClientHandler for Changes {
        async fn on_tool_list_changed(&self, _cx: rmcp::service::NotificationContext<rmcp::RoleClient>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    use rmcp::ServiceExt;
    let changes = Changes::default();
    let config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(s.url.clone())
        .auth_header(s.token.clone().unwrap());
    let client =
        changes.clone().serve(rmcp::transport::StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let names = |tools: Vec<rmcp::model::Tool>| tools.into_iter().map(|t| t.name.to_string()).collect::<Vec<_>>();
    let first = names(client.list_all_tools().await.unwrap());
    assert!(first.contains(&"fixture_echo".to_string()), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("hang_") || n.starts_with("late_")), "{first:?}");
    let call = |name: &'static str, args: Value| {
        let peer = client.peer().clone();
        async move {
            let params =
                rmcp::model::CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone());
            format!("{:?}", peer.call_tool(params).await.unwrap())
        }
    };
    let echo = call("fixture_echo", serde_json::json!({"message": "up"})).await;
    assert!(echo.contains("up"), "{echo}");
    let code = "import { add } from './servers/fixture/index.ts'; console.log((await add({a: 1, b: 2})).sum)";
    let ran = call("execute_code", serde_json::json!({"code": code})).await;
    assert!(ran.contains("\"3"), "{ran}");
    let search = call("search_tools", serde_json::json!({"query": "echo"})).await;
    assert!(search.contains("still starting"), "{search}");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?} while `hang` hangs", started.elapsed());
    // `late` comes up after about 4 s: the client hears of it and sees its tools.
    let heard = tokio::time::timeout(Duration::from_secs(30), async {
        while changes.0.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(heard.is_ok(), "no tools/list_changed when `late` came up");
    let now = names(client.list_all_tools().await.unwrap());
    assert!(now.contains(&"late_echo".to_string()), "{now:?}");
    assert!(!now.iter().any(|n| n.starts_with("hang_")), "{now:?}");
    let _ = client.cancel().await;
    // Stopping serve stops the server still waiting for its handshake too: nothing is left
    // behind that never reads its stdin.
    assert!(!pids_matching(&tag).is_empty(), "the hanging server runs while serve does");
    s.signal(libc::SIGTERM);
    assert_eq!(s.wait_exit(), 143, "{}", s.stderr.lock().unwrap());
    assert!(wait_until(Duration::from_secs(10), || pids_matching(&tag).is_empty()), "left running: the hanging server");
}

/// A stdio request over the line limit gets a JSON-RPC error for its id (read wherever it sits
/// in the line) and the session goes on; one without a readable id ends the session with a
/// message. The lines are over rmcp's own 16 MiB limit too, which dropped them silently.
#[test]
fn a_stdio_request_over_the_line_limit_gets_an_error_for_its_id() {
    let p = Project::with_fixture();
    let mut child =
        p.cmd(&["mcp", "serve"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let next = |what: &str| rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("no answer: {what}"));
    writeln!(stdin, "{INIT}").unwrap();
    assert!(next("initialize")["result"]["serverInfo"].is_object());
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    let filler = "a".repeat(17 << 20);
    // The id comes last, after 17 MiB of arguments.
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"fixture_echo","arguments":{{"message":"{filler}"}}}},"id":41}}"#
    );
    stdin.write_all(big.as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    let answer = next("the oversized request");
    assert_eq!(answer["id"], 41, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("request too large"), "{answer}");
    // The session goes on.
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{{"name":"fixture_echo","arguments":{{"message":"after"}}}}}}"#
    )
    .unwrap();
    let after = next("the next request");
    assert_eq!(after["id"], 42);
    assert_eq!(after["result"]["content"][0]["text"], "after", "{after}");
    // No id to answer: an error without one, and the session ends with a message.
    stdin.write_all(format!(r#"{{"jsonrpc":"2.0","params":{{"x":"{filler}"}}}}"#).as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    let anonymous = next("the oversized message without an id");
    assert!(anonymous.get("id").is_none_or(Value::is_null), "{anonymous}");
    assert_eq!(anonymous["error"]["code"], -32600);
    let mut status = None;
    assert!(wait_until(Duration::from_secs(15), || {
        status = child.try_wait().unwrap();
        status.is_some()
    }));
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.unwrap().code(), Some(1), "{err}");
    assert!(err.contains("no request id could be read in it; the session is closed"), "{err}");
}

/// A remote client's script calls a destructive tool through serve, where nobody can be asked:
/// the policy denies it, and the message names the fix that exists for serve (its configuration),
/// not a `--yes` flag the client cannot pass.
#[tokio::test(flavor = "multi_thread")]
async fn a_policy_denial_through_serve_names_the_config_not_a_flag() {
    let p = Project::with_servers(&fixture_stdio_yaml("fixture", &["--destructive"]));
    let client = rmcp_client(&p, Recorder::default()).await;
    let code = "try { await callMCPTool('fixture', 'delete_item', { id: 'a1' }); console.log('ran'); }\n\
                catch (e: any) { console.log(e.message); }";
    let params = rmcp::model::CallToolRequestParams::new("execute_code")
        .with_arguments(json!({ "code": code }).as_object().unwrap().clone());
    let r = client.call_tool(params).await.unwrap();
    let text = r.content[0].as_text().unwrap().text.clone();
    assert!(
        text.contains(
            "denied (no terminal to ask; set mcp.approvals in the configuration `agent mcp serve` runs with): fixture.delete_item"
        ),
        "{text}"
    );
    assert!(!text.contains("--yes"), "{text}");
    client.cancel().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// MCP's other primitives through serve: resources, templates, prompts, completions, logging

const PY_PRIMITIVES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/serve/py_primitives.py");
const PY_RESOURCE_SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/serve/py_resource_server.py");

/// YAML for a `py_resource_server.py` entry called `name` (answers that name its server).
fn py_server_yaml(python: &Path, name: &str, disabled: bool) -> String {
    let disabled = if disabled { "      disabled: true\n" } else { "" };
    format!(
        "    {name}:\n      command: {:?}\n      args: [{:?}, {name:?}]\n      connect_timeout: 30s\n{disabled}",
        python.display().to_string(),
        PY_RESOURCE_SERVER
    )
}

/// A project with these servers, whose lists wait for them to start (Python and npm servers may
/// take longer than the default five seconds on a loaded machine).
fn project_waiting_for(servers_yaml: &str) -> Project {
    let p = Project::new();
    p.write_config(&format!("mcp:\n  servers:\n{servers_yaml}serve:\n  startup_wait: 90s\n"));
    p
}

fn py_primitives(python: &Path, p: &Project, args: &[&str]) -> Value {
    let mut c = Command::new(python);
    c.arg(PY_PRIMITIVES).args(args).env("HOME", p.path().join("home")).stdin(Stdio::null());
    run_json(c)
}

/// The Python SDK's interpreter, when it and npm (for server-everything) are there.
fn python_and_everything(what: &str) -> Option<std::path::PathBuf> {
    let python = python_mcp_or_skip(what)?;
    node_or_skip(what).then_some(python)
}

/// The `everything` scenario straight against server-everything, or through `agent mcp serve`
/// with `serve_args`.
fn everything_scenario(python: &Path, p: &Project, prefix: &str, serve_args: Option<&[&str]>) -> Value {
    let dir = p.path().display().to_string();
    let agent = agent_bin().display().to_string();
    let upstream = npm_bin(SERVER_EVERYTHING, "mcp-server-everything").display().to_string();
    let mut args = vec!["everything", prefix, dir.as_str()];
    match serve_args {
        Some(extra) => {
            args.extend([agent.as_str(), "mcp", "serve"]);
            args.extend_from_slice(extra);
        }
        None => args.extend([upstream.as_str(), "stdio"]),
    }
    py_primitives(python, p, &args)
}

#[test]
fn server_everythings_resources_prompts_completions_and_logs_pass_through_serve() {
    let Some(python) = python_and_everything("serve passes MCP's other primitives through") else { return };
    let p = project_waiting_for(&everything_yaml("everything"));
    let out = everything_scenario(&python, &p, "everything_", Some(&[]));
    let caps = &out["capabilities"];
    for key in ["resources", "prompts", "completions", "logging"] {
        assert!(caps.get(key).is_some(), "{key} not declared: {caps}");
    }
    assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
    // One server lists every URI: each is kept as it is.
    let doc = "demo://resource/static/document/architecture.md";
    assert!(out["resources"].as_array().unwrap().iter().any(|u| u == doc), "{out}");
    let templates = out["templates"].as_array().unwrap();
    assert!(templates.iter().any(|t| t == "demo://resource/dynamic/blob/{resourceId}"), "{out}");
    assert_eq!(out["text"]["uri"], doc);
    assert!(out["text"]["starts"].as_str().unwrap().contains("Architecture"), "{out}");
    assert_eq!(out["blob"]["uri"], "demo://resource/dynamic/blob/2");
    assert!(out["blob"]["decoded"].as_str().unwrap().starts_with("Resource 2"), "{out}");
    assert!(out["missing"].as_str().is_some_and(|e| e.contains("nope.md")), "{out}");
    // Prompts as `<server>_<prompt>`, and back to the right upstream prompt.
    let prompts = out["prompts"].as_array().unwrap();
    assert!(prompts.iter().any(|n| n == "everything_simple-prompt"), "{out}");
    assert!(prompts.iter().all(|n| n.as_str().unwrap().starts_with("everything_")), "{out}");
    assert!(out["prompt_text"].as_str().unwrap().contains("Oslo"), "{out}");
    assert!(out["prompt_missing_arg"].as_str().is_some_and(|e| e.contains("city")), "{out}");
    assert_eq!(out["completion"], json!(["Engineering"]), "{out}");
    // search_tools ranks the servers' prompts and resources beside the tools, with their kind.
    let search: Value = serde_json::from_str(out["search"].as_str().unwrap()).unwrap();
    let hit = search["results"].as_array().unwrap().iter().find(|r| r["tool"] == "args-prompt").cloned();
    let hit = hit.unwrap_or_else(|| panic!("no prompt among {search}"));
    assert_eq!(hit["kind"], "prompt", "{search}");
    assert!(hit["signature"].as_str().unwrap().starts_with(r#"getPrompt("everything", "args-prompt""#), "{search}");
    assert!(hit.get("call_as").is_none(), "a prompt is no proxied tool: {search}");
    assert_eq!(out["template_completion"], json!(["7"]), "{out}");
    // The level set reached the upstream server; its messages came back, named by server.
    let logs = out["logs"].as_array().unwrap();
    assert!(!logs.is_empty() && logs.iter().all(|l| l["logger"].as_str().unwrap().starts_with("everything")), "{out}");
    assert_eq!(out["updated"], json!([doc]), "{out}");
    // Prefixed mode's proxied tools: a result_handler argument, no outputSchema.
    let tool = &out["tools"]["everything_get-structured-content"];
    assert!(tool["inputSchema"]["properties"].get("result_handler").is_some(), "{tool}");
    assert!(tool.get("outputSchema").is_none(), "{tool}");
}

/// With one upstream server, `--names bare --expose proxy` is that server to a client: the same
/// identity, capabilities, instructions, tools (schemas, titles, annotations), resources,
/// templates, prompts, completions, updates and structured results as the server itself gives.
#[test]
fn bare_mode_with_one_server_looks_like_that_server() {
    let Some(python) = python_and_everything("serve --names bare stands in for one server") else { return };
    let p = project_waiting_for(&everything_yaml("everything"));
    let mut direct = everything_scenario(&python, &p, "-", None);
    // Task-augmented requests (the `tasks` capability) are not proxied, so not declared.
    assert!(direct["capabilities"].as_object_mut().unwrap().remove("tasks").is_some(), "{direct}");
    // Nor is a tool's `execution` (its task support): "forbidden", the same as leaving it out,
    // for every tool but one that needs tasks and cannot be called through serve.
    for (name, tool) in direct["tools"].as_object_mut().unwrap() {
        let support = tool.as_object_mut().unwrap().remove("execution").map(|e| e["taskSupport"].clone());
        let expected = if name == "simulate-research-query" { "required" } else { "forbidden" };
        assert_eq!(support, Some(json!(expected)), "{name}");
    }
    let served = everything_scenario(&python, &p, "-", Some(&["--names", "bare", "--expose", "proxy"]));
    for key in [
        "server_info",
        "capabilities",
        "instructions",
        "tools",
        "resources",
        "templates",
        "text",
        "missing",
        "prompts",
        "prompt_text",
        "completion",
        "template_completion",
        "updated",
    ] {
        if let (Some(a), Some(b)) = (served[key].as_object(), direct[key].as_object()) {
            let sorted =
                |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<std::collections::BTreeSet<_>>();
            assert_eq!(sorted(a), sorted(b), "{key} differs through serve");
            for (k, v) in a {
                assert_eq!(v, &b[k], "{key}.{k} differs through serve");
            }
        }
        assert_eq!(served[key], direct[key], "{key} differs through serve");
    }
    // The elicitation tools are there because the client declared elicitation, and serve
    // declares it upstream; a sampling tool would need `sampling` allowed in serve's config.
    assert!(served["tools"].get("trigger-elicitation-request").is_some(), "{served}");
    assert!(served["logs"].as_array().unwrap().iter().all(|l| l.get("logger").is_none_or(|g| g.is_null())), "{served}");
    assert!(served["structured"].is_object(), "{served}");
}

/// An upstream server's sampling request during a proxied call goes to the client that made the
/// call when it declared sampling (its answer goes upstream); a client without it gets the
/// refusal, and no other client is asked.
#[test]
fn an_upstream_sampling_request_goes_to_the_client_of_the_call() {
    let Some(python) = python_and_everything("serve forwards sampling") else { return };
    let p = project_waiting_for(&format!("{}      sampling: allow\n", everything_yaml("everything")));
    let dir = p.path().display().to_string();
    let agent = agent_bin().display().to_string();
    let out = py_primitives(&python, &p, &["sampling", &dir, &agent, "mcp", "serve"]);
    let with = &out["with_callback"];
    assert_eq!(with["is_error"], false, "{out}");
    assert!(with["text"].as_str().unwrap().contains("sampled by the client"), "{out}");
    assert!(with["asked"][0].as_str().unwrap().contains("what is 2 + 2?"), "{out}");
    let without = &out["without_callback"];
    assert!(!without["text"].as_str().unwrap().contains("sampled by the client"), "{out}");
    assert!(without["text"].as_str().unwrap().contains("did not declare sampling"), "{out}");
}

/// A `py_primitives.py` scenario over HTTP against a serve of server-everything.
fn everything_over_http(python: &Path, scenario: &str, prefix: &str) -> Value {
    let p = project_waiting_for(&everything_yaml("everything"));
    let s = Serving::start(&p, &[], &[]);
    let mut c = Command::new(python);
    c.args([PY_PRIMITIVES, scenario, prefix, &s.url])
        .env("HOME", p.path().join("home"))
        .env("MCP_BEARER", s.token.clone().unwrap())
        .stdin(Stdio::null());
    run_json(c)
}

/// Another remote client on the same HTTP serve (the attacker) neither subscribes nor sets a log
/// level: it hears none of the updates and log messages the first client asked for.
#[test]
fn a_session_hears_no_other_sessions_resource_updates_or_log_messages() {
    let Some(python) = python_and_everything("serve keeps sessions' notifications apart") else { return };
    let out = everything_over_http(&python, "isolation", "everything_");
    assert!(out["a"]["logs"].as_u64().unwrap() >= 1, "{out}");
    assert_eq!(out["a"]["updated"], json!(["demo://resource/static/document/architecture.md"]), "{out}");
    assert_eq!(out["b"], json!({"logs": [], "updated": []}), "{out}");
}

/// A session that ends without unsubscribing gives its upstream subscription up (server-everything
/// acknowledges the unsubscribe in a log message another session hears).
#[test]
fn an_ended_session_gives_its_upstream_subscriptions_up() {
    let Some(python) = python_and_everything("serve unsubscribes for ended sessions") else { return };
    let out = everything_over_http(&python, "cleanup", "-");
    let logs = out["logs"].as_array().unwrap();
    let said = |what: &str| logs.iter().any(|l| l.as_str().unwrap().contains(what));
    assert!(said("Received Subscribe Resource request") && said("Received Unsubscribe Resource request"), "{out}");
}

/// A remote client subscribing to URI after URI (each made from a template) is refused past the
/// per-session cap, with the cap named; giving one up makes room again.
#[test]
fn a_client_cannot_make_serve_hold_endless_subscriptions() {
    let Some(python) = python_and_everything("serve's subscription cap") else { return };
    let out = everything_over_http(&python, "flood", "-");
    assert_eq!(out["accepted"], 256, "{out}");
    assert!(out["refused"].as_str().unwrap().contains("holds 256 resource subscriptions"), "{out}");
}

/// Two servers list the same URI: both are rewritten (`agent:<server>/<uri>`) and each read
/// reaches the server that listed it; URIs and templates only one server answers stay as they
/// are; prompts are `<server>_<prompt>`; the bare shared URI is refused as ambiguous.
#[test]
fn prefixed_mode_reads_each_resource_from_the_server_that_listed_it() {
    let Some(python) = python_mcp_or_skip("serve with two resource servers") else { return };
    let p =
        project_waiting_for(&format!("{}{}", py_server_yaml(&python, "a", false), py_server_yaml(&python, "b", false)));
    let dir = p.path().display().to_string();
    let agent = agent_bin().display().to_string();
    let out = py_primitives(&python, &p, &["two", &dir, &agent, "mcp", "serve"]);
    assert_eq!(
        out["resources"],
        json!(["agent:a/file:///shared.txt", "agent:b/file:///shared.txt", "only-a://doc", "only-b://doc"]),
        "{out}"
    );
    assert_eq!(out["templates"], json!(["note://a/{id}", "note://b/{id}"]), "{out}");
    let reads = &out["reads"];
    assert_eq!(reads["agent:a/file:///shared.txt"]["text"], "shared from a", "{out}");
    assert_eq!(reads["agent:b/file:///shared.txt"]["text"], "shared from b", "{out}");
    assert_eq!(reads["agent:b/file:///shared.txt"]["uri"], "agent:b/file:///shared.txt", "the URI asked for");
    assert_eq!(reads["only-a://doc"]["text"], "only a");
    assert_eq!(reads["only-b://doc"]["text"], "only b");
    assert_eq!(reads["note://a/9"]["text"], "note 9 from a");
    assert_eq!(reads["note://b/9"]["text"], "note 9 from b");
    assert_eq!(out["prompts"], json!(["a_greet", "b_greet"]));
    assert_eq!(out["prompt_text"]["b_greet"], "hello from b");
    assert!(out["ambiguous"].as_str().is_some_and(|e| e.contains("unknown resource")), "{out}");
}

/// `--names bare` with two servers offering the same tool names refuses to start, naming both
/// servers and the name (exit 2); `serve.names: bare` in the config does the same, and
/// `--names prefixed` wins over it.
#[test]
fn bare_mode_refuses_two_servers_with_the_same_tool_names() {
    let p = Project::with_servers(&format!("{}{}", fixture_stdio_yaml("one", &[]), fixture_stdio_yaml("two", &[])));
    let r = p.run(&["mcp", "serve", "--names", "bare"]);
    r.assert_code(2);
    assert!(r.stderr.contains("--names bare: servers `one` and `two` both offer the tool `add`"), "{}", r.stderr);
    assert!(r.stderr.contains("use --names prefixed"), "{}", r.stderr);
    p.write_config(&format!(
        "mcp:\n  servers:\n{}{}serve:\n  names: bare\n",
        fixture_stdio_yaml("one", &[]),
        fixture_stdio_yaml("two", &[])
    ));
    let r = p.run(&["mcp", "serve", "--http", ":0"]);
    r.assert_code(2);
    assert!(r.stderr.contains("servers `one` and `two` both offer the tool `echo`"), "{}", r.stderr);
    let r = p.run(&["mcp", "serve", "--names", "nope"]);
    r.assert_code(2);
    // With prefixed names the same servers serve (a client lists both `one_add` and `two_add`).
    let s = Serving::start(&p, &["--names", "prefixed"], &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mcp = s.client();
        let session = mcp.initialize().await.unwrap();
        let list = mcp.post(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, Some(&session)).await.json();
        let names: Vec<&str> =
            list["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
        assert!(names.contains(&"one_add") && names.contains(&"two_add"), "{names:?}");
    });
}

/// A remote client names a disabled server's resources (rewritten form, and its own URI): serve
/// sends neither to it, and the disabled server never starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cannot_read_a_resource_of_a_disabled_server() {
    let Some(python) = python_mcp_or_skip("serve hides disabled servers' resources") else { return };
    let p = project_waiting_for(&format!(
        "{}{}",
        py_server_yaml(&python, "a", false),
        py_server_yaml(&python, "hidden", true)
    ));
    let client = rmcp_client(&p, Recorder::default()).await;
    let read = |uri: &'static str| {
        let peer = client.peer().clone();
        async move { peer.read_resource(rmcp::model::ReadResourceRequestParams::new(uri)).await }
    };
    let ok = read("only-a://doc").await.unwrap();
    assert!(format!("{ok:?}").contains("only a"), "{ok:?}");
    let listed = client.peer().list_all_resources().await.unwrap();
    assert!(listed.iter().all(|r| !r.uri.contains("hidden")), "{listed:?}");
    for uri in ["agent:hidden/only-hidden://doc", "agent:hidden/file:///shared.txt"] {
        let err = read(uri).await.unwrap_err();
        assert!(format!("{err}").contains("unknown resource"), "{uri}: {err}");
    }
    // A URI only the disabled server has goes to the one enabled server, which does not know it.
    let err = read("only-hidden://doc").await.unwrap_err();
    assert!(!format!("{err}").contains("only hidden"), "{err}");
    client.cancel().await.unwrap();
    assert!(!p.path().join(".kodelet/mcp/logs/hidden.stderr.log").exists(), "the disabled server was started");
}

/// The conformance suite's server scenarios through `serve --http --names bare --expose proxy` in
/// front of the fixture with `--conformance` (its `sampling: allow`, so the suite's sampling
/// request reaches the suite through serve): every scenario that passes against the fixture
/// itself passes through serve. `--no-auth`: the suite sends no bearer token (loopback only).
#[test]
fn the_conformance_server_suite_passes_through_bare_serve() {
    if !node_or_skip("the conformance server suite through serve") {
        return;
    }
    let p = project_waiting_for(&format!("{}      sampling: allow\n", fixture_stdio_yaml("conf", &["--conformance"])));
    let s = Serving::start(&p, &["--names", "bare", "--expose", "proxy", "--no-auth"], &[]);
    let suite = crate::conformance::server::run_server_suite(&s.url);
    let expected: Vec<&str> = crate::conformance::server::EXPECTED_FAILURES.iter().map(|(n, _)| *n).collect();
    let failed: Vec<&str> = suite.failed().into_iter().filter(|n| !expected.contains(n)).collect();
    assert!(failed.is_empty(), "scenarios failed through serve: {failed:?}\n{}", suite.report());
    assert!(suite.scenarios.len() >= 30, "{} scenarios ran", suite.scenarios.len());
}
