//! `agent mcp list` / `agent mcp call`, configuration, and the MCP manager, end to end: the real
//! binary against the rmcp fixture server (stdio and Streamable HTTP) and server-everything.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{HttpFixture, Project, everything_yaml, fixture_bin, fixture_stdio_yaml, pids_matching, wait_until};

fn unique_tag(name: &str) -> String {
    format!("{name}-{}-{}", std::process::id(), Instant::now().elapsed().as_nanos() ^ rand_u32())
}

fn rand_u32() -> u128 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    t.subsec_nanos() as u128
}

// ---------------------------------------------------------------------------------------------
// mcp list

#[test]
fn list_groups_tools_by_server_following_pagination() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "list"]);
    r.assert_ok();
    // The fixture pages tools/list by 3; all 11 must be there.
    assert!(r.stdout.starts_with("fixture (12 tools)\n"), "{}", r.stdout);
    for tool in
        ["add", "big", "complex", "crash", "echo", "fail", "headers", "image", "progress", "sleep", "text.upper"]
    {
        assert!(r.stdout.lines().any(|l| l.trim_start().starts_with(tool)), "missing {tool}:\n{}", r.stdout);
    }
    assert!(r.stdout.contains("12 tools on 1 server(s)"), "{}", r.stdout);
}

#[test]
fn list_json_is_the_documented_stable_array() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "list", "--json"]);
    r.assert_ok();
    let tools = r.json();
    let arr = tools.as_array().expect("array");
    assert_eq!(arr.len(), 12);
    let names: Vec<&str> = arr.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "sorted by name");
    for t in arr {
        let keys: Vec<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["server", "name", "title", "description", "inputSchema", "outputSchema", "annotations"]);
        assert_eq!(t["server"], "fixture");
    }
    let add = arr.iter().find(|t| t["name"] == "add").unwrap();
    assert_eq!(add["outputSchema"]["properties"]["sum"]["type"], "integer");
    assert_eq!(add["annotations"]["readOnlyHint"], true);
    assert_eq!(add["title"], "Add numbers");
    let echo = arr.iter().find(|t| t["name"] == "echo").unwrap();
    assert!(echo["outputSchema"].is_null());
}

#[test]
fn list_detailed_shows_descriptions_and_parameters() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "list", "--detailed"]);
    r.assert_ok();
    assert!(r.stdout.contains("    params: a: integer, b: integer\n"), "{}", r.stdout);
    assert!(r.stdout.contains("    params: message: string\n"), "{}", r.stdout);
    assert!(r.stdout.contains("mode?: \"fast\" | \"thorough\" | null"), "{}", r.stdout);
    assert!(r.stdout.contains("    hints: read-only, idempotent\n"), "{}", r.stdout);
}

#[test]
fn list_reports_failing_servers_and_still_lists_the_others() {
    let servers = format!(
        "{}{}{}",
        fixture_stdio_yaml("good", &[]),
        fixture_stdio_yaml("broken", &["--exit-on-start"]),
        "    missing:\n      command: /nonexistent/mcp-server\n"
    );
    let p = Project::with_servers(&servers);
    let r = p.run(&["mcp", "list"]);
    r.assert_code(1);
    assert!(r.stdout.contains("good (12 tools)"), "{}", r.stdout);
    assert!(
        r.stderr.contains("server `broken` failed to start")
            && r.stderr.contains("fixture: refusing to start (--exit-on-start)")
            && r.stderr.contains("fixture: second line of stderr"),
        "stderr should name the server, the reason and quote its stderr:\n{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("server `missing` failed to start: command `/nonexistent/mcp-server` not found"),
        "{}",
        r.stderr
    );
    // Child stderr goes to a log file under the workspace, not to the terminal directly.
    let log = p.path().join(".kodelet/mcp/logs/broken.stderr.log");
    let text = std::fs::read_to_string(&log).expect("log file");
    assert!(text.contains("refusing to start"));
}

#[test]
fn connect_timeout_applies_per_server() {
    let servers = format!(
        "{}    hang:\n      command: {:?}\n      args: [\"--hang-on-start\"]\n      connect_timeout: 1s\n",
        fixture_stdio_yaml("good", &[]),
        fixture_bin().display().to_string()
    );
    let p = Project::with_servers(&servers);
    let started = Instant::now();
    let r = p.run(&["mcp", "list"]);
    r.assert_code(1);
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(r.stderr.contains("server `hang` failed to start: no MCP handshake within 1s"), "{}", r.stderr);
    assert!(r.stdout.contains("good (12 tools)"));
}

/// A first `npx -y` run still downloading when `connect_timeout` strikes: the error says the
/// server was still running and silent, that `npx` may be downloading, and names the key to
/// raise; a server that died without answering gets no such advice.
#[test]
fn a_connect_timeout_while_npx_is_still_running_names_the_key_to_raise() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new();
    // Stands in for npx fetching a package: alive, silent, no handshake.
    let npx = p.write("bin/npx", "#!/bin/sh\nexec sleep 30\n");
    std::fs::set_permissions(&npx, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.write_config(&format!(
        "mcp:\n  servers:\n    slow:\n      command: {:?}\n      args: [\"-y\", \"some-server\"]\n      connect_timeout: 1s\n    dead:\n      command: sh\n      args: [\"-c\", \"exit 0\"]\n      connect_timeout: 1s\n",
        npx.display().to_string()
    ));
    let r = p.run(&["mcp", "list"]);
    r.assert_code(1);
    assert!(
        r.stderr.contains(
            "server `slow` failed to start: no MCP handshake within 1s (connect_timeout); it was still running and has \
             written nothing yet (`npx` may still be downloading the package on a first run); if it needs longer to \
             start, raise mcp.servers.slow.connect_timeout (e.g. `connect_timeout: 2m`)"
        ),
        "{}",
        r.stderr
    );
    let dead = r.stderr.lines().find(|l| l.contains("server `dead`")).unwrap_or_default();
    assert!(!dead.contains("connect_timeout"), "{}", r.stderr);
}

#[test]
fn tool_white_list_and_disabled_servers() {
    let servers = format!(
        "{}      tool_white_list: [echo, add]\n{}      disabled: true\n",
        fixture_stdio_yaml("fixture", &[]),
        fixture_stdio_yaml("off", &[])
    );
    let p = Project::with_servers(&servers);
    let r = p.run(&["mcp", "list", "--json"]);
    r.assert_ok();
    let names: Vec<String> = r
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| format!("{}.{}", t["server"].as_str().unwrap(), t["name"].as_str().unwrap()))
        .collect();
    assert_eq!(names, ["fixture.add", "fixture.echo"]);
    let r = p.run(&["mcp", "call", "fixture.big"]);
    r.assert_code(2);
    assert!(r.stderr.contains("unknown tool `fixture.big`"), "{}", r.stderr);
    let r = p.run(&["mcp", "call", "off.echo", "--args", r#"{"message":"x"}"#]);
    r.assert_code(2);
    assert!(r.stderr.contains("server `off` is disabled"), "{}", r.stderr);
}

#[test]
fn list_unknown_server_suggests() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "list", "--server", "fixtur"]);
    r.assert_code(2);
    assert!(r.stderr.contains("unknown server `fixtur`; did you mean `fixture`?"), "{}", r.stderr);
}

#[test]
fn list_with_no_servers_explains_how_to_add_some() {
    let p = Project::new();
    let r = p.run(&["mcp", "list"]);
    r.assert_ok();
    assert!(r.stderr.contains("no MCP servers configured"), "{}", r.stderr);
    let r = p.run(&["mcp", "list", "--json"]);
    assert_eq!(r.json(), json!([]));
}

// ---------------------------------------------------------------------------------------------
// mcp call

#[test]
fn call_prints_text_and_structured_content() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "call", "fixture.echo", "--args", r#"{"message": "hello there"}"#]);
    r.assert_ok();
    assert_eq!(r.stdout, "hello there\n");
    let r = p.run(&["mcp", "call", "fixture.add", "--args", r#"{"a": 2, "b": 40}"#]);
    r.assert_ok();
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v, json!({"sum": 42}));
    assert!(r.stdout.contains("\n  \"sum\": 42\n"), "pretty-printed: {}", r.stdout);
}

/// A server that answers with text and a structuredContent that is not that text's JSON
/// (Python's FastMCP wraps a plain return as `{"result": ...}`): the result is printed once, as
/// its text, and `--output` holds exactly the result's bytes, not both forms (a 6-byte result
/// had become a 33-byte file).
#[test]
fn call_prints_one_form_of_the_result_and_output_holds_exactly_it() {
    let p = Project::with_servers(&fixture_stdio_yaml("fixture", &["--wrapped"]));
    let r = p.run(&["mcp", "call", "fixture.wrapped", "--args", r#"{"message": "hello!"}"#]);
    r.assert_ok();
    assert_eq!(r.stdout, "hello!\n");
    let r = p.run(&["mcp", "call", "fixture.wrapped", "--args", r#"{"message": "hello!"}"#, "-o", "out.txt"]);
    r.assert_ok();
    assert_eq!(std::fs::read(p.path().join("out.txt")).unwrap(), b"hello!");
    // --json still has both.
    let r = p.run(&["mcp", "call", "fixture.wrapped", "--args", r#"{"message": "hello!"}"#, "--json"]);
    assert_eq!(r.json()["structuredContent"], json!({"result": "hello!"}));

    // A text that is the structured JSON: the pretty JSON, once, in the file as printed.
    let r = p.run(&["mcp", "call", "fixture.add", "--args", r#"{"a": 2, "b": 4}"#, "-o", "sum.json"]);
    r.assert_ok();
    assert_eq!(std::fs::read_to_string(p.path().join("sum.json")).unwrap(), "{\n  \"sum\": 6\n}");
    let r = p.run(&["mcp", "call", "fixture.echo", "--args", r#"{"message": "hello!"}"#, "-o", "echo.txt"]);
    r.assert_ok();
    assert_eq!(std::fs::read(p.path().join("echo.txt")).unwrap(), b"hello!");
}

#[test]
fn call_summarises_images_and_splits_at_the_first_dot() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "call", "fixture.image"]);
    r.assert_ok();
    assert_eq!(r.stdout, "[image: image/png, 70 B]\n");
    let r = p.run(&["mcp", "call", "fixture.text.upper", "--args", r#"{"text": "dots"}"#]);
    r.assert_ok();
    assert_eq!(r.stdout, "DOTS\n");
}

#[test]
fn call_json_prints_the_whole_result() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "call", "fixture.add", "--args", r#"{"a": 1, "b": 2}"#, "--json"]);
    r.assert_ok();
    let v = r.json();
    assert_eq!(v["structuredContent"], json!({"sum": 3}));
    assert_eq!(v["isError"], false);
    assert_eq!(v["content"][0]["type"], "text");
}

#[test]
fn call_tool_error_exits_1() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "call", "fixture.fail"]);
    r.assert_code(1);
    assert!(r.stderr.contains("boom: this tool always fails"), "{}", r.stderr);
    assert!(r.stderr.contains("error: `fixture.fail` reported an error"), "{}", r.stderr);
    assert_eq!(r.stdout, "");
    let r = p.run(&["mcp", "call", "fixture.fail", "--json"]);
    r.assert_code(1);
    assert_eq!(r.json()["isError"], true);
}

#[test]
fn call_args_from_file_and_stdin() {
    let p = Project::with_fixture();
    p.write("args.json", r#"{"a": 20, "b": 22}"#);
    let r = p.run(&["mcp", "call", "fixture.add", "--args", "@args.json"]);
    r.assert_ok();
    assert!(r.stdout.contains("42"));
    let r = p.run_stdin(&["mcp", "call", "fixture.add", "--args", "-"], r#"{"a": 5, "b": 5}"#);
    r.assert_ok();
    assert!(r.stdout.contains("10"));
    let r = p.run(&["mcp", "call", "fixture.add", "--args", "@missing.json"]);
    r.assert_code(2);
    assert!(r.stderr.contains("cannot read --args file missing.json"), "{}", r.stderr);
}

#[test]
fn call_rejects_malformed_arguments_before_starting_anything() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "call", "fixture.add", "--args", "{a: 1"]);
    r.assert_code(2);
    assert!(r.stderr.contains("--args is not valid JSON: key must be a string at line 1 column 2"), "{}", r.stderr);
    let r = p.run(&["mcp", "call", "fixture.add", "--args", "[1, 2]"]);
    r.assert_code(2);
    assert!(r.stderr.contains("must be a JSON object of named arguments, got an array"), "{}", r.stderr);
    let r = p.run(&["mcp", "call", "fixture", "--args", "{}"]);
    r.assert_code(2);
    assert!(r.stderr.contains("expected SERVER.TOOL"), "{}", r.stderr);
    // The spellings of other tools (Claude Code's, a colon, a slash) get the name that works.
    for other in ["mcp__fixture__add", "fixture:add", "fixture/add"] {
        let r = p.run(&["mcp", "call", other]);
        r.assert_code(2);
        assert!(r.stderr.contains(&format!("got `{other}`; did you mean `fixture.add`?")), "{}", r.stderr);
    }
    // Nothing was started: no log file.
    assert!(!p.path().join(".kodelet/mcp/logs/fixture.stderr.log").exists());
}

#[test]
fn call_validates_against_the_input_schema_listing_each_violation() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "call", "fixture.add", "--args", r#"{"a": "two"}"#]);
    r.assert_code(2);
    assert!(r.stderr.contains("invalid arguments for `fixture.add`"), "{}", r.stderr);
    assert!(r.stderr.contains(r#"/a: "two" is not of type "integer""#), "{}", r.stderr);
    assert!(r.stderr.contains(r#""b" is a required property"#), "{}", r.stderr);
    // Nested paths inside $defs/$ref'd objects.
    let r = p.run(&[
        "mcp",
        "call",
        "fixture.complex",
        "--args",
        r#"{"query": "q", "mode": "slow", "filters": [{"field": "x", "op": "lt", "value": 1}], "limit": 500}"#,
    ]);
    r.assert_code(2);
    for path in ["/mode", "/filters/0/op", "/limit"] {
        assert!(r.stderr.contains(&format!("  - {path}: ")), "missing {path}:\n{}", r.stderr);
    }
    let r = p.run(&[
        "mcp",
        "call",
        "fixture.complex",
        "--args",
        r#"{"query": "q", "mode": "fast", "matrix": [[1, 2], [3]], "tree": {"name": "a", "children": [{"name": "b"}]}}"#,
    ]);
    r.assert_ok();
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["cells"], 3);
    assert_eq!(v["nodes"], 2);
}

#[test]
fn call_unknown_server_or_tool_suggests() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "call", "fixtur.echo"]);
    r.assert_code(2);
    assert!(r.stderr.contains("unknown server `fixtur`; did you mean `fixture`?"), "{}", r.stderr);
    let r = p.run(&["mcp", "call", "fixture.ech", "--args", r#"{"message":"x"}"#]);
    r.assert_code(2);
    assert!(r.stderr.contains("unknown tool `fixture.ech`; did you mean `fixture.echo`?"), "{}", r.stderr);
}

#[test]
fn call_output_file_is_written_whole() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "call", "fixture.big", "--output", "big.txt"]);
    r.assert_ok();
    assert_eq!(r.stdout, "");
    let text = std::fs::read_to_string(p.path().join("big.txt")).unwrap();
    // The server's 5 MB, byte for byte (no newline added).
    assert_eq!(text.len(), 5_000_000);
    assert!(text.starts_with("line 00000000: the quick brown fox"));
    assert!(r.stderr.contains("wrote 4.8 MB to big.txt"), "{}", r.stderr);
    // No temp files left behind.
    let leftovers: Vec<_> = std::fs::read_dir(p.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".agent-tmp-"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn call_timeout_is_reported_and_the_server_is_stopped() {
    let tag = unique_tag("timeout");
    let servers = format!("{}      call_timeout: 500ms\n", fixture_stdio_yaml("fixture", &["--tag", &tag]));
    let p = Project::with_servers(&servers);
    let started = Instant::now();
    let r = p.run(&["mcp", "call", "fixture.sleep", "--args", r#"{"ms": 30000}"#]);
    r.assert_code(1);
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert!(r.stderr.contains("error: `fixture.sleep` timed out after 500ms"), "{}", r.stderr);
    assert!(pids_matching(&tag).is_empty(), "server left running");
}

#[test]
fn call_crash_mid_call_reports_stderr() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "call", "fixture.crash"]);
    r.assert_code(1);
    assert!(
        r.stderr.contains("server `fixture` failed during `crash`: the server exited during the call"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("fixture: crashing on purpose"), "{}", r.stderr);
}

#[test]
fn call_shows_progress_notifications() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "call", "fixture.progress", "--args", r#"{"steps": 3, "delay_ms": 5}"#]);
    r.assert_ok();
    assert_eq!(r.stdout, "done after 3 steps\n");
    for i in 1..=3 {
        assert!(r.stderr.contains(&format!("fixture: progress {i}/3 step {i}")), "{}", r.stderr);
    }
}

#[test]
fn call_starts_only_the_server_it_needs() {
    let p = Project::new();
    let marker = p.path().join("other-started");
    let servers = format!(
        "{}    other:\n      command: sh\n      args: [\"-c\", \"touch {}; exec {}\"]\n",
        fixture_stdio_yaml("fixture", &[]),
        marker.display(),
        fixture_bin().display()
    );
    p.write_config(&format!("mcp:\n  servers:\n{servers}"));
    p.run(&["mcp", "call", "fixture.echo", "--args", r#"{"message": "x"}"#]).assert_ok();
    assert!(!marker.exists(), "`other` was started although the call only needed `fixture`");
    p.run(&["mcp", "list", "--server", "other"]).assert_ok();
    assert!(marker.exists(), "sanity: `other` does start when asked for");
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP and transports

#[test]
fn http_server_list_and_call() {
    let http = HttpFixture::start();
    let p = Project::with_servers(&format!(
        "    remote:\n      url: {}\n      headers:\n        X-Test: yes\n        Authorization: Bearer not-checked\n",
        http.url
    ));
    let r = p.run(&["mcp", "list", "--json"]);
    r.assert_ok();
    assert_eq!(r.json().as_array().unwrap().len(), 12);
    let r = p.run(&["mcp", "call", "remote.headers"]);
    r.assert_ok();
    let h: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(h["x-test"], "yes");
    assert_eq!(h["authorization"], "Bearer not-checked");
    let r = p.run(&["mcp", "call", "remote.add", "--args", r#"{"a": 40, "b": 2}"#]);
    r.assert_ok();
    assert!(r.stdout.contains("\"sum\": 42"));
    let r = p.run(&["mcp", "call", "remote.big", "--args", r#"{"bytes": 3000000}"#, "--output", "b.txt"]);
    r.assert_ok();
    assert_eq!(std::fs::metadata(p.path().join("b.txt")).unwrap().len(), 3_000_000);
}

#[test]
fn http_unreachable_and_legacy_sse_are_clear_errors() {
    let p = Project::with_servers(
        "    down:\n      url: http://127.0.0.1:9/mcp\n      connect_timeout: 5s\n    old:\n      url: http://127.0.0.1:9/sse\n      transport: sse\n",
    );
    let r = p.run(&["mcp", "list"]);
    r.assert_code(1);
    assert!(
        r.stderr
            .contains("server `down` failed to start: cannot connect to http://127.0.0.1:9/mcp: connection refused\n"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("rmcp::") && !r.stderr.contains("Transport ["), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("server `old` failed to start: it uses the legacy HTTP+SSE transport, which is not supported"),
        "{}",
        r.stderr
    );
}

/// Each way an HTTP server can be unreachable is one line naming the cause, never rmcp's
/// transport type: a 404 endpoint, TLS spoken to a plain-HTTP server, a name that does not
/// resolve.
#[test]
fn http_connection_failures_are_one_line_with_the_cause() {
    let fixture = HttpFixture::start();
    // Not an MCP server: answers every request with a 404 page.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            let body = "<html>\n<h1>Not Found</h1>\n</html>\n";
            let _ = write!(
                stream,
                "HTTP/1.1 404 Not Found\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let tls = fixture.url.replace("http://", "https://");
    let server = |name: &str, url: &str| format!("    {name}:\n      url: {url}\n      connect_timeout: 5s\n");
    let p = Project::with_servers(&format!(
        "{}{}{}",
        server("missing", &format!("http://127.0.0.1:{port}/mcp")),
        server("tls", &tls),
        server("nxdomain", "http://no-such-host.invalid/mcp")
    ));
    let r = p.run(&["mcp", "list"]);
    r.assert_code(1);
    let line = |server: &str| -> String {
        let prefix = format!("error: server `{server}` failed to start: cannot connect to ");
        r.stderr
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("{server}:\n{}", r.stderr))
            .to_string()
    };
    assert_eq!(
        line("missing"),
        format!(
            "error: server `missing` failed to start: cannot connect to http://127.0.0.1:{port}/mcp: the server answered HTTP 404 Not Found"
        )
    );
    assert!(line("tls").starts_with(&format!("error: server `tls` failed to start: cannot connect to {tls}: ")));
    let nx = line("nxdomain");
    assert!(nx.contains("no-such-host.invalid/mcp: "), "{nx}");
    for l in r.stderr.lines() {
        assert!(!l.contains("rmcp::") && !l.contains("Transport [") && !l.contains("reqwest"), "{l}");
    }
}

// ---------------------------------------------------------------------------------------------
// server-everything (npm)

#[test]
fn handshake_auto_holds_a_2026_session_with_a_new_server_and_falls_back_for_an_old_one() {
    let fixture = |handshake: &str| {
        let mut y = fixture_stdio_yaml("fixture", &["--host-tools"]);
        y.push_str(&format!("      roots: [.]\n{handshake}"));
        y
    };
    // The fixture knows `server/discover`: `auto` holds a 2026-07-28 session, the default does not.
    for (key, protocol) in [("      handshake: auto\n", "2026-07-28"), ("", "2025-11-25")] {
        let p = Project::with_servers(&fixture(key));
        let r = p.run(&["mcp", "call", "fixture.roots"]);
        r.assert_ok();
        assert!(r.stdout.contains(&format!("protocol: {protocol}")), "{key:?}: {}", r.stdout);
    }
    if !support::node_or_skip("handshake auto with server-everything") {
        return;
    }
    // server-everything answers `server/discover` as an unknown method: `initialize` at once,
    // not after rmcp's 10 s probe.
    let mut y = everything_yaml("everything");
    y.push_str("      handshake: auto\n");
    let p = Project::with_servers(&y);
    let started = std::time::Instant::now();
    let r = p.run(&["mcp", "call", "everything.echo", "--args", r#"{"message": "old"}"#]);
    r.assert_ok();
    assert_eq!(r.stdout, "Echo: old\n");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(9),
        "fell back only after the probe: {:?}",
        started.elapsed()
    );
}

#[test]
fn server_everything_list_and_call() {
    if !support::node_or_skip("server-everything over stdio") {
        return;
    }
    let p = Project::with_servers(&everything_yaml("everything"));
    let r = p.run(&["mcp", "list", "--json"]);
    r.assert_ok();
    let tools = r.json();
    let names: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for t in ["echo", "get-sum", "get-structured-content", "get-tiny-image"] {
        assert!(names.contains(&t), "{names:?}");
    }
    let r = p.run(&["mcp", "call", "everything.echo", "--args", r#"{"message": "hi"}"#]);
    r.assert_ok();
    assert_eq!(r.stdout, "Echo: hi\n");
    let r = p.run(&["mcp", "call", "everything.get-structured-content", "--args", r#"{"location": "New York"}"#]);
    r.assert_ok();
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(v["temperature"].is_number(), "{v}");
    let r = p.run(&["mcp", "call", "everything.get-tiny-image"]);
    r.assert_ok();
    assert!(r.stdout.contains("[image: image/png,"), "{}", r.stdout);
    // server-everything validates itself too, but ours answers first with paths.
    let r = p.run(&["mcp", "call", "everything.get-sum", "--args", r#"{"a": "x", "b": 1}"#]);
    r.assert_code(2);
    assert!(r.stderr.contains(r#"/a: "x" is not of type "number""#), "{}", r.stderr);
}

// ---------------------------------------------------------------------------------------------
// Configuration through the binary

#[test]
fn config_errors_name_the_key() {
    let p = Project::new();
    p.write_config("mcp:\n  servers:\n    x:\n      comand: foo\n");
    let r = p.run(&["mcp", "list"]);
    r.assert_code(2);
    assert!(
        r.stderr.contains("error: mcp.servers.x.comand: unknown field `comand`; did you mean `command`?"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "one line: {}", r.stderr);
    p.write_config("mcp:\n  code_execution:\n    timeout: soon\n");
    let r = p.run(&["mcp", "list"]);
    r.assert_code(2);
    assert!(r.stderr.contains("mcp.code_execution.timeout: invalid duration \"soon\""), "{}", r.stderr);
    p.write_config("mcp: [unclosed\n");
    let r = p.run(&["mcp", "list"]);
    r.assert_code(2);
    assert!(r.stderr.contains("agent.yaml"), "syntax errors name the file: {}", r.stderr);
}

/// A "billion laughs" document: `levels` anchors, each a list of `fan` aliases of the last.
fn alias_bomb(levels: usize, fan: usize) -> String {
    let mut y = format!("l0: &l0 [{}]\n", vec!["\"lol\""; fan].join(", "));
    for i in 1..levels {
        y.push_str(&format!("l{i}: &l{i} [{}]\n", vec![format!("*l{}", i - 1); fan].join(", ")));
    }
    y
}

#[test]
fn oversized_config_and_arguments_are_usage_errors() {
    let p = Project::with_fixture();
    // 10^9 copies of "lol" from 500 bytes of ./agent.yaml, read without being named.
    p.write_config(&alias_bomb(9, 10));
    let started = Instant::now();
    let r = p.run(&["mcp", "list"]);
    r.assert_code(2);
    assert_eq!(
        r.stderr,
        format!(
            "error: config file {} expands past 4 MB once its YAML aliases are resolved\n",
            p.path().join("agent.yaml").display()
        )
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let r = p.run(&["mcp", "list", "--config", "/dev/zero"]);
    r.assert_code(2);
    assert_eq!(r.stderr, "error: config file /dev/zero is larger than 4 MB\n");

    p.write_config(&format!("mcp:\n  servers:\n{}", fixture_stdio_yaml("fixture", &[])));
    let big = format!("{{\"a\": 1, \"b\": 2, \"pad\": \"{}\"}}", "x".repeat(16 << 20));
    p.write("big.json", &big);
    let r = p.run(&["mcp", "call", "fixture.add", "--args", "@big.json"]);
    r.assert_code(2);
    assert_eq!(r.stderr, "error: --args file big.json is larger than 16 MB\n");
    let r = p.run(&["mcp", "call", "fixture.add", "--args", "@/dev/zero"]);
    r.assert_code(2);
    assert_eq!(r.stderr, "error: --args file /dev/zero is larger than 16 MB\n");
    let out = p
        .cmd(&["mcp", "call", "fixture.add", "--args", "-"])
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .output()
        .unwrap();
    let r = support::Run::from(out);
    r.assert_code(2);
    assert_eq!(r.stderr, "error: --args from stdin is larger than 16 MB\n");
    // Nothing was started.
    assert!(!p.path().join(".kodelet/mcp/logs/fixture.stderr.log").exists());
}

#[test]
fn config_values_that_cannot_work_exit_2_with_their_key() {
    let p = Project::new();
    p.write("script.ts", "console.log(1);\n");
    // Was a runtime failure (exit 1) on the first script; now refused like `--memory-limit 1`.
    p.write_config("mcp:\n  code_execution:\n    memory_limit_mb: 1\n");
    let r = p.run(&["exec", "script.ts"]);
    r.assert_code(2);
    assert_eq!(
        r.stderr,
        "error: mcp.code_execution.memory_limit_mb: 1 MB is too small; the runtime needs at least 16 MB\n"
    );
    let r = p.run(&["exec", "--memory-limit", "1", "script.ts"]);
    r.assert_code(2);
    // `call_timeout: 0s` made every call time out (exit 1).
    p.write_config(&format!("mcp:\n  servers:\n{}      call_timeout: 0s\n", fixture_stdio_yaml("fixture", &[])));
    let r = p.run(&["mcp", "call", "fixture.echo", "--args", r#"{"message": "x"}"#]);
    r.assert_code(2);
    assert_eq!(
        r.stderr,
        "error: mcp.servers.fixture.call_timeout: must be greater than zero (every call would time out)\n"
    );
    p.write_config(&format!("mcp:\n  servers:\n{}", fixture_stdio_yaml("fixture", &[])));
    let out = p.cmd(&["mcp", "list"]).env("AGENT_MCP__SERVERS__FIXTURE__CONNECT_TIMEOUT", "0").output().unwrap();
    let r = support::Run::from(out);
    r.assert_code(2);
    assert_eq!(
        r.stderr,
        "error: mcp.servers.fixture.connect_timeout: must be greater than zero (the server could never start)\n"
    );
    p.write_config("mcp:\n  code_execution:\n    timeout: 0s\n");
    let r = p.run(&["exec", "script.ts"]);
    r.assert_code(2);
    assert!(r.stderr.contains("mcp.code_execution.timeout: must be greater than zero"), "{}", r.stderr);
    p.write_config("mcp:\n  code_execution:\n    max_output_bytes: 0\n");
    p.run(&["exec", "script.ts"]).assert_code(2);

    // `--config` naming a directory says so.
    std::fs::create_dir(p.path().join("conf.d")).unwrap();
    let r = p.run(&["mcp", "list", "--config", "conf.d"]);
    r.assert_code(2);
    assert_eq!(r.stderr, "error: config file conf.d is a directory, not a file\n");
}

#[test]
fn missing_env_var_fails_only_the_server_that_uses_it() {
    let servers = format!(
        "{}    github:\n      command: {:?}\n      envs:\n        GITHUB_TOKEN: $GITHUB_TOKEN_FOR_AGENT_TEST\n",
        fixture_stdio_yaml("fixture", &[]),
        fixture_bin().display().to_string()
    );
    let p = Project::with_servers(&servers);
    p.run(&["mcp", "call", "fixture.echo", "--args", r#"{"message": "x"}"#]).assert_ok();
    let r = p.run(&["mcp", "call", "github.echo", "--args", r#"{"message": "x"}"#]);
    r.assert_code(1);
    assert!(
        r.stderr.contains("mcp.servers.github.envs.GITHUB_TOKEN: $GITHUB_TOKEN_FOR_AGENT_TEST is not set"),
        "{}",
        r.stderr
    );
    let r = p
        .cmd(&["mcp", "call", "github.echo", "--args", r#"{"message": "ok"}"#])
        .env("GITHUB_TOKEN_FOR_AGENT_TEST", "t0k")
        .output()
        .unwrap();
    assert!(r.status.success());
}

#[test]
fn env_overrides_config_file_and_explicit_config() {
    let p = Project::new();
    p.write_config(&format!("mcp:\n  servers:\n{}", fixture_stdio_yaml("fixture", &[])));
    p.write("other.yaml", &format!("mcp:\n  servers:\n{}", fixture_stdio_yaml("alt", &[])));
    let names = |r: support::Run| -> Vec<String> {
        r.json().as_array().unwrap().iter().map(|t| t["server"].as_str().unwrap().to_string()).collect()
    };
    let r = p.run(&["mcp", "list", "--json", "--config", "other.yaml"]);
    r.assert_ok();
    assert!(names(r).iter().all(|s| s == "alt"));
    let r = p.cmd(&["mcp", "list", "--json"]).env("AGENT_CONFIG", "other.yaml").output().unwrap();
    let r = support::Run::from(r);
    assert!(names(r).iter().all(|s| s == "alt"));
    // AGENT_MCP__SERVERS__FIXTURE__DISABLED=true turns the server off from the environment.
    let r = p.cmd(&["mcp", "list"]).env("AGENT_MCP__SERVERS__FIXTURE__DISABLED", "true").output().unwrap();
    let r = support::Run::from(r);
    r.assert_ok();
    assert!(r.stderr.contains("no MCP servers configured") || !r.stdout.contains("fixture ("), "{r:?}");
    let r = p.run(&["mcp", "list", "--config", "nope.yaml"]);
    r.assert_code(2);
    assert!(r.stderr.contains("config file nope.yaml does not exist"), "{}", r.stderr);
}

#[test]
fn user_config_is_layered_under_the_project_config() {
    let p = Project::new();
    p.write_user_config(&format!(
        "mcp:\n  servers:\n{}      tool_white_list: [echo]\n",
        fixture_stdio_yaml("fixture", &[])
    ));
    // The project file overrides one key of the same server; the rest comes from the user file.
    p.write_config("mcp:\n  servers:\n    fixture:\n      tool_white_list: [add, echo]\n");
    let r = p.run(&["mcp", "list", "--json"]);
    r.assert_ok();
    let tools = r.json();
    let names: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["add", "echo"]);
}

#[test]
fn mcp_import_reads_claude_desktop_files() {
    let p = Project::new();
    p.write(
        "claude_desktop_config.json",
        &json!({"mcpServers": {"desk": {"command": fixture_bin(), "args": ["--stderr-noise"]}}}).to_string(),
    );
    p.write_config("mcp:\n  import: [claude_desktop_config.json]\n");
    let r = p.run(&["mcp", "call", "desk.add", "--args", r#"{"a": 1, "b": 1}"#]);
    r.assert_ok();
    assert!(r.stdout.contains("\"sum\": 2"));
    p.write_config("mcp:\n  import: [nowhere.json]\n");
    let r = p.run(&["mcp", "list"]);
    r.assert_code(2);
    assert!(r.stderr.contains("mcp.import:") && r.stderr.contains("nowhere.json does not exist"), "{}", r.stderr);
    p.write("bad.json", "{\"mcpServers\": ");
    p.write_config("mcp:\n  import: [bad.json]\n");
    let r = p.run(&["mcp", "list"]);
    r.assert_code(2);
    assert!(r.stderr.contains("bad.json: invalid JSON"), "{}", r.stderr);
}

#[test]
fn mcp_json_servers_are_imported() {
    let p = Project::new();
    p.write(
        ".mcp.json",
        &json!({"mcpServers": {
            "claude": {"command": fixture_bin(), "args": [], "env": {"X": "1"}},
            "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"}
        }})
        .to_string(),
    );
    let r = p.run(&["mcp", "call", "claude.echo", "--args", r#"{"message": "imported"}"#]);
    r.assert_ok();
    assert_eq!(r.stdout, "imported\n");
    let r = p.run(&["mcp", "list", "--server", "legacy"]);
    r.assert_code(1);
    assert!(r.stderr.contains("legacy HTTP+SSE transport, which is not supported"), "{}", r.stderr);
}

// ---------------------------------------------------------------------------------------------
// Lifecycle: no orphans, restart after a crash

#[test]
fn no_orphans_after_list_including_grandchildren() {
    let tag = unique_tag("orphans");
    // sh stays as the parent of the fixture (no exec), so the server is a grandchild of agent.
    let servers = format!(
        "    wrapped:\n      command: sh\n      args: [\"-c\", \"{} --tag {tag}; true\"]\n",
        fixture_bin().display()
    );
    let p = Project::with_servers(&servers);
    p.run(&["mcp", "list"]).assert_ok();
    std::thread::sleep(Duration::from_millis(100));
    assert!(pids_matching(&tag).is_empty(), "processes left: {:?}", pids_matching(&tag));
}

#[test]
fn sigint_during_a_call_stops_cleanly() {
    let tag = unique_tag("sigint");
    let p = Project::with_servers(&fixture_stdio_yaml("fixture", &["--tag", &tag]));
    let child = p
        .cmd(&["mcp", "call", "fixture.sleep", "--args", r#"{"ms": 60000}"#])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let in_flight = wait_until(Duration::from_secs(15), || p.server_logged("fixture", "sleep 60000 ms started"));
    assert!(in_flight, "the call never reached the server");
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(wait_until(Duration::from_secs(5), || pids_matching(&tag).is_empty()), "server left running after Ctrl-C");
}

#[tokio::test]
async fn manager_restarts_a_dead_server_and_shuts_down_cleanly() {
    use agent::mcp::McpManager;
    let tag = unique_tag("restart");
    let p = Project::with_servers(&fixture_stdio_yaml("fixture", &["--tag", &tag]));
    let config = p.library_config();
    let manager = McpManager::new(&config);
    let args = |v: Value| v.as_object().cloned().unwrap();
    let r = manager.call_tool("fixture", "echo", args(json!({"message": "one"}))).await.unwrap();
    assert_eq!(r.content[0].as_text().unwrap().text, "one");
    let first = pids_matching(&tag);
    assert_eq!(first.len(), 1);
    let err = manager.call_tool("fixture", "crash", args(json!({}))).await.unwrap_err();
    assert!(err.to_string().contains("the server exited during the call"), "{err}");
    // The next call starts a fresh process.
    let r = manager.call_tool("fixture", "echo", args(json!({"message": "two"}))).await.unwrap();
    assert_eq!(r.content[0].as_text().unwrap().text, "two");
    let second = pids_matching(&tag);
    assert_eq!(second.len(), 1);
    assert_ne!(first, second);
    // Concurrent calls share one connection.
    let calls = (0..20).map(|i| manager.call_tool("fixture", "add", args(json!({"a": i, "b": 1}))));
    let results = futures::future::join_all(calls).await;
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(r.unwrap().structured_content, Some(json!({"sum": i as i64 + 1})));
    }
    manager.shutdown().await;
    assert!(pids_matching(&tag).is_empty());
}

/// Log events reach a non-terminal stderr as plain one-line `level: message` lines: no ANSI
/// colour codes, no timestamps, nothing spread over several lines.
#[test]
fn log_lines_on_a_pipe_are_plain_single_lines() {
    let p = Project::with_fixture();
    let r = p.run(&["-v", "mcp", "call", "fixture.echo", "--args", r#"{"message": "hi"}"#]);
    r.assert_ok();
    assert!(!r.stderr.contains('\x1b'), "ANSI codes on a pipe: {:?}", r.stderr);
    let logged: Vec<&str> = r.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!logged.is_empty(), "-v logs something");
    for line in logged {
        assert!(
            ["info: ", "warning: ", "error: ", "debug: "].iter().any(|p| line.starts_with(p)),
            "not a one-line log event: {line:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Results over `mcp.max_result_bytes`

/// A result over the limit fails at once (rmcp alone drops the line and the call waits for its
/// `call_timeout`), and the server stays connected: the next calls work on the same process.
/// Whether the answer's `id` comes first (rmcp), last (TypeScript SDK) or in the middle (no id
/// found: every call in flight fails).
#[tokio::test]
async fn manager_fails_an_oversized_result_at_once_and_keeps_the_server() {
    use agent::mcp::{McpError, McpManager};
    for id_at in [None, Some("last"), Some("middle")] {
        let tag = unique_tag("oversized");
        let mut extra = vec!["--tag", tag.as_str()];
        if let Some(at) = id_at {
            extra.extend(["--response-id", at]);
        }
        let p = Project::with_servers(&format!(
            "{}      call_timeout: 60s\n  max_result_bytes: 1048576\n",
            fixture_stdio_yaml("fixture", &extra)
        ));
        let config = p.library_config();
        let manager = McpManager::new(&config);
        let args = |v: Value| v.as_object().cloned().unwrap();
        manager.call_tool("fixture", "echo", args(json!({"message": "warm"}))).await.unwrap();
        let pid = pids_matching(&tag);

        let started = Instant::now();
        let err = manager.call_tool("fixture", "big", args(json!({"bytes": 3_000_000}))).await.unwrap_err();
        assert!(matches!(err, McpError::ResultTooLarge { .. }), "{id_at:?}: {err}");
        assert_eq!(err.to_string(), "result of fixture.big is larger than the 1 MiB limit");
        assert!(started.elapsed() < Duration::from_secs(10), "{id_at:?}: took {:?}", started.elapsed());

        // Still connected: same process, small results and one just under the limit go through.
        let r = manager.call_tool("fixture", "echo", args(json!({"message": "after"}))).await.unwrap();
        assert_eq!(r.content[0].as_text().unwrap().text, "after");
        let r = manager.call_tool("fixture", "big", args(json!({"bytes": 900_000}))).await.unwrap();
        assert_eq!(r.content[0].as_text().unwrap().text.len(), 900_000);
        // Oversized answers next to calls in flight: with an id, only the big call fails. The
        // big call goes out once the server has logged that the sleep arrived (in flight).
        let big_after_sleep_arrived = async {
            let deadline = Instant::now() + Duration::from_secs(20);
            while !p.server_logged("fixture", "sleep 1500 ms started") && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            manager.call_tool("fixture", "big", args(json!({"bytes": 2_000_000}))).await
        };
        let (big, small) =
            tokio::join!(big_after_sleep_arrived, manager.call_tool("fixture", "sleep", args(json!({"ms": 1500}))),);
        assert!(matches!(big, Err(McpError::ResultTooLarge { .. })), "{id_at:?}: {big:?}");
        if id_at == Some("middle") {
            assert!(matches!(small, Err(McpError::ResultTooLarge { .. })), "{id_at:?}: {small:?}");
        } else {
            assert_eq!(small.unwrap().content[0].as_text().unwrap().text, "slept 1500 ms");
        }
        manager.call_tool("fixture", "echo", args(json!({"message": "again"}))).await.unwrap();
        assert_eq!(pids_matching(&tag), pid, "{id_at:?}: the server was restarted");
        manager.shutdown().await;
    }
}

/// The real default: a 17 MiB result through `agent mcp call` fails at once with the limit in
/// the message.
#[test]
fn call_with_a_17_mib_result_fails_at_once() {
    let p = Project::with_servers(&format!("{}      call_timeout: 60s\n", fixture_stdio_yaml("fixture", &[])));
    let started = Instant::now();
    let r = p.run(&["mcp", "call", "fixture.big", "--args", r#"{"bytes": 17825792}"#]);
    r.assert_code(1);
    assert_eq!(r.stderr.trim_end(), "error: result of fixture.big is larger than the 16 MiB limit");
    assert!(r.stdout.is_empty());
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
}

/// Over Streamable HTTP the same setting caps the answer: through `agent mcp call` the call
/// fails at once with the stdio message, and the next call works.
#[test]
fn http_results_over_the_limit_fail_at_once() {
    let server = HttpFixture::start();
    let p = Project::with_servers(&format!(
        "    remote:\n      url: {}\n      call_timeout: 60s\n  max_result_bytes: 1048576\n",
        server.url
    ));
    let started = Instant::now();
    let r = p.run(&["mcp", "call", "remote.big", "--args", r#"{"bytes": 2000000}"#]);
    r.assert_code(1);
    assert_eq!(r.stderr, "error: result of remote.big is larger than the 1 MiB limit\n");
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    let r = p.run(&["mcp", "call", "remote.big", "--args", r#"{"bytes": 900000}"#, "--output", "b.txt"]);
    r.assert_ok();
}

/// A server that announces a changed tool list and then never answers tools/list: the re-listing
/// before the next call is bounded by `call_timeout`, and the call goes on with the old list.
#[tokio::test]
async fn manager_does_not_hang_on_a_relisting_that_never_answers() {
    use agent::mcp::McpManager;
    let p = Project::with_servers(&format!(
        "{}      call_timeout: 1s\n",
        fixture_stdio_yaml("fixture", &["--relist-hangs"])
    ));
    let config = p.library_config();
    let manager = McpManager::new(&config);
    let args = |v: Value| v.as_object().cloned().unwrap();
    manager.call_tool("fixture", "echo", args(json!({"message": "announce"}))).await.unwrap();
    // Let the announcement arrive.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let call = manager.call_tool("fixture", "add", args(json!({"a": 1, "b": 2})));
    let r = tokio::time::timeout(Duration::from_secs(10), call).await.expect("the call hung on tools/list").unwrap();
    assert_eq!(r.structured_content, Some(json!({"sum": 3})));
    manager.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// What a stdio server inherits: never agent's secrets

/// The environment the fixture's `env` tool reports, as `agent mcp call` prints it.
fn reported_env(r: &support::Run) -> serde_json::Map<String, Value> {
    r.assert_ok();
    match serde_json::from_str::<Value>(r.stdout.trim()) {
        Ok(Value::Object(m)) => m,
        other => panic!("not an environment: {other:?}\n{}", r.stdout),
    }
}

const SECRETS: [(&str, &str); 4] = [
    ("ANTHROPIC_API_KEY", "sk-ant-secret-1"),
    ("OPENAI_API_KEY", "sk-oai-secret-2"),
    ("GITHUB_TOKEN", "ghp-secret-3"),
    ("AWS_SECRET_ACCESS_KEY", "aws-secret-4"),
];

/// `agent mcp call fixture.env` in `p` with agent's environment holding [`SECRETS`] and `extra`.
fn env_seen_by_the_server(p: &Project, extra: &[(&str, &str)]) -> serde_json::Map<String, Value> {
    let mut c = p.cmd(&["mcp", "call", "fixture.env"]);
    c.envs(SECRETS).envs(extra.iter().copied()).env("TERM", "xterm-test");
    let env = reported_env(&support::Run::from(c.output().unwrap()));
    for (_, secret) in SECRETS {
        assert!(!env.values().any(|v| v.as_str().is_some_and(|v| v.contains(secret))), "{env:?}");
    }
    env
}

/// A third-party server reads its environment: agent's API keys and tokens are not in it; the
/// safe list and its `envs` are.
#[test]
fn a_stdio_server_never_sees_agents_secrets_only_the_safe_list_and_its_envs() {
    let p = Project::with_servers(&format!(
        "{}      envs:\n        EXPLICIT: given\n",
        fixture_stdio_yaml("fixture", &["--env-tool"])
    ));
    let env = env_seen_by_the_server(&p, &[("UNRELATED", "x")]);
    let allowed = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "EXPLICIT", "AGENT_SERVER_RUN"];
    for name in env.keys() {
        assert!(allowed.contains(&name.as_str()), "the server got {name}: {env:?}");
    }
    assert_eq!(env["EXPLICIT"], "given");
    assert_eq!(env["TERM"], "xterm-test");
    assert_eq!(env["HOME"], p.path().join("home").display().to_string());
    assert!(env.contains_key("PATH"));
}

/// `env_passthrough` names what a server gets of agent's environment as it is (when set).
#[test]
fn env_passthrough_passes_the_variables_it_names_and_nothing_else() {
    let p = Project::with_servers(&format!(
        "{}      env_passthrough: [PASS_ME, NOT_SET_ANYWHERE]\n",
        fixture_stdio_yaml("fixture", &["--env-tool"])
    ));
    let env = env_seen_by_the_server(&p, &[("PASS_ME", "passed"), ("UNRELATED", "x")]);
    assert_eq!(env["PASS_ME"], "passed");
    assert!(!env.contains_key("NOT_SET_ANYWHERE") && !env.contains_key("UNRELATED"), "{env:?}");
}

/// `agent mcp serve --token-env VAR`: the variable holding serve's own token never reaches the
/// servers it proxies (a hostile server cannot read it and call `serve` as its client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_never_hands_its_token_to_the_servers_it_proxies() {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use std::io::BufRead;
    let p = Project::with_servers(&fixture_stdio_yaml("fixture", &["--env-tool"]));
    let token = "serve-token-7c1f";
    let mut child = p
        .cmd(&["mcp", "serve", "--http", "127.0.0.1:0", "--token-env", "AGENT_SERVE_TOKEN"])
        .env("AGENT_SERVE_TOKEN", token)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("serve exited before listening").unwrap();
        if let Some(url) = line.trim().strip_prefix("listening on ") {
            break url.to_string();
        }
    };
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
    );
    let client = ().serve(transport).await.unwrap();
    let result = client.call_tool(rmcp::model::CallToolRequestParams::new("fixture_env")).await.unwrap();
    let text = result.content[0].as_text().unwrap().text.clone();
    let _ = client.cancel().await;
    let _ = child.kill();
    let _ = child.wait();
    let env: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    assert!(!env.contains_key("AGENT_SERVE_TOKEN"), "{env:?}");
    assert!(!text.contains(token), "{text}");
    assert!(env.contains_key("PATH"), "{env:?}");
}

/// An imported `.mcp.json` entry whose shell command reads a variable when it runs (`$$NAME`
/// in agent's syntax): a warning, once per process however often the server starts, naming the
/// variable and the fix; with the variable in the entry's `env` it arrives and nobody warns.
#[test]
fn an_imported_server_that_relied_on_an_inherited_variable_is_warned_about_once() {
    let p = Project::new();
    let entry = |env: Value| {
        json!({"mcpServers": {"shelled": {
            "command": "sh",
            "args": ["-c", format!("IMPORTED_KEY=\"$$IMPORTED_KEY\" exec {} --env-tool", fixture_bin().display())],
            "env": env
        }}})
        .to_string()
    };
    p.write(".mcp.json", &entry(json!({})));
    // The server crashes once and is started again in the same process: still one warning.
    let script = "try { await callMCPTool('shelled', 'crash', {}); } catch (e) {}\n\
                  const r = await callMCPTool('shelled', 'env', {});\n\
                  console.log(JSON.stringify(r.IMPORTED_KEY ?? null));";
    let run = |p: &Project| {
        let mut c = p.cmd(&["exec", "-"]);
        c.env("IMPORTED_KEY", "k-123").stdin(std::process::Stdio::piped());
        c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
        support::Run::from(child.wait_with_output().unwrap())
    };
    let r = run(&p);
    r.assert_ok();
    assert_eq!(r.stdout, "\"\"\n", "not inherited: the shell expands it to nothing");
    assert!(p.server_logged("shelled", "crashing on purpose"), "the server was started twice");
    let warnings: Vec<&str> = r.stderr.lines().filter(|l| l.starts_with("warning: ")).collect();
    let file = p.path().join(".mcp.json");
    assert_eq!(
        warnings,
        [format!(
            "warning: server `shelled` ({}) reads $IMPORTED_KEY from its environment, which agent does not pass to \
             servers; add it to the entry's \"env\" (\"IMPORTED_KEY\": \"${{IMPORTED_KEY}}\")",
            file.display()
        )],
        "{}",
        r.stderr
    );
    p.write(".mcp.json", &entry(json!({"IMPORTED_KEY": "${IMPORTED_KEY}"})));
    let r = run(&p);
    r.assert_ok();
    assert_eq!(r.stdout, "\"k-123\"\n");
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
}

// ---------------------------------------------------------------------------------------------
// HTTP answers over `mcp.max_result_bytes`

/// The fixture over Streamable HTTP with `args`; killed on drop.
struct HttpServer(std::process::Child, String);

impl HttpServer {
    fn start(args: &[&str]) -> HttpServer {
        use std::io::BufRead;
        let mut child = std::process::Command::new(fixture_bin())
            .args(["--http", "127.0.0.1:0"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().strip_prefix("listening on ").expect("listening line").to_string();
        HttpServer(child, url)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A hostile HTTP server answers with more than `mcp.max_result_bytes`, as an SSE event (a
/// session) and as a JSON body (stateless): the call fails at once naming the limit, as on
/// stdio, and the connection keeps working.
#[tokio::test]
async fn http_answers_over_the_limit_name_the_limit_and_the_connection_stays() {
    use agent::mcp::{McpError, McpManager};
    for mode in [&[][..], &["--http-json"][..]] {
        let server = HttpServer::start(mode);
        let p = Project::with_servers(&format!(
            "    remote:\n      url: {}\n      call_timeout: 60s\n  max_result_bytes: 1048576\n",
            server.1
        ));
        let config = p.library_config();
        let manager = McpManager::new(&config);
        let args = |v: Value| v.as_object().cloned().unwrap();
        let started = Instant::now();
        let err = manager.call_tool("remote", "big", args(json!({"bytes": 2_000_000}))).await.unwrap_err();
        assert!(matches!(err, McpError::ResultTooLarge { .. }), "{mode:?}: {err}");
        assert_eq!(err.to_string(), "result of remote.big is larger than the 1 MiB limit");
        assert!(started.elapsed() < Duration::from_secs(10), "{mode:?}: {:?}", started.elapsed());
        let r = manager.call_tool("remote", "echo", args(json!({"message": "after"}))).await.unwrap();
        assert_eq!(r.content[0].as_text().unwrap().text, "after");
        let r = manager.call_tool("remote", "big", args(json!({"bytes": 900_000}))).await.unwrap();
        assert_eq!(r.content[0].as_text().unwrap().text.len(), 900_000);
        manager.shutdown().await;
    }
}

// ---------------------------------------------------------------------------------------------
// What servers leave behind: a grandchild in its own session, after a clean exit and after
// SIGKILL of agent

/// A stdio server (tagged `<tag>-srv`) whose shell first starts a grandchild in a session of
/// its own (`setsid`, tagged `<tag>-grand`): outside the server's process group.
fn server_with_a_setsid_grandchild(tag: &str) -> String {
    let fixture = fixture_bin().display().to_string();
    format!(
        "    wrapped:\n      command: sh\n      args: [\"-c\", \"setsid {fixture} --tag {tag}-grand --hang-on-start </dev/null >/dev/null 2>&1 & exec {fixture} --tag {tag}-srv\"]\n      connect_timeout: 10s\n"
    )
}

/// Kills the processes tagged `tag` (this test's own) when dropped, also when the test fails.
struct KillTagged(String);

impl Drop for KillTagged {
    fn drop(&mut self) {
        for pid in pids_matching(&self.0) {
            // SAFETY: signalling a process this test started (its tag is in the command line).
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
}

fn records(p: &Project) -> Vec<String> {
    std::fs::read_dir(p.path().join(".kodelet/mcp/logs/.running"))
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

#[test]
fn a_grandchild_in_its_own_session_is_stopped_with_its_server() {
    let tag = unique_tag("setsid");
    let _cleanup = KillTagged(tag.clone());
    let p = Project::with_servers(&server_with_a_setsid_grandchild(&tag));
    p.run(&["mcp", "list"]).assert_ok();
    let gone = wait_until(Duration::from_secs(5), || pids_matching(&tag).is_empty());
    assert!(gone, "left running: {:?}", pids_matching(&tag));
    assert!(records(&p).is_empty(), "{:?}", records(&p));
}

/// `(pid, start time)` of a process, from `/proc/<pid>/stat`.
fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit_once(')').unwrap().1.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// A process of the test's own; killed and reaped when dropped.
struct Decoy(std::process::Child);

impl Drop for Decoy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A process of the test's own, in a session of its own, tagged; optionally carrying a marker.
fn decoy(tag: &str, marker: Option<&str>) -> Decoy {
    use std::process::Stdio;
    let mut c = std::process::Command::new("setsid");
    c.arg(fixture_bin()).args(["--tag", tag, "--hang-on-start"]);
    c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    if let Some(m) = marker {
        c.env("AGENT_SERVER_RUN", m);
    }
    let child = c.spawn().unwrap();
    assert!(wait_until(Duration::from_secs(5), || pids_matching(tag).len() == 1), "decoy {tag} did not start");
    Decoy(child)
}

/// SIGKILL of agent runs nothing at its exit: the server and its setsid grandchild outlive it.
/// The next agent command in the workspace stops them, and only them: a process of ours whose
/// pid a dead run's record names with another start time (a reused pid), and one marked as a
/// run whose agent still runs, are left alone.
#[test]
fn after_sigkill_the_next_command_stops_what_the_killed_agent_left_and_nothing_else() {
    use std::os::unix::fs::PermissionsExt;
    let tag = unique_tag("sigkill");
    let _cleanup = KillTagged(tag.clone());
    let p = Project::with_servers(&server_with_a_setsid_grandchild(&tag));
    let reused = decoy(&format!("{tag}-reused"), None);
    let _live = decoy(&format!("{tag}-live"), Some("live-run-marker"));
    // Records as a killed agent whose pid was reused, and as a running agent (this test), left them.
    let dir = p.path().join(".kodelet/mcp/logs/.running");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap().trim().to_string();
    let (rp, rs) = (reused.0.id(), start_time(reused.0.id()));
    let me = std::process::id();
    for (name, record) in [
        (
            "1-dead.json",
            json!({"version": 1, "boot": boot, "agent": {"pid": rp, "start": rs - 1}, "marker": "gone-run-marker",
                   "servers": [{"pid": rp, "start": rs - 1}]}),
        ),
        (
            "2-live.json",
            json!({"version": 1, "boot": boot, "agent": {"pid": me, "start": start_time(me)},
                   "marker": "live-run-marker", "servers": []}),
        ),
    ] {
        std::fs::write(dir.join(name), record.to_string()).unwrap();
        std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    let mut killed = p
        .cmd(&["mcp", "call", "wrapped.sleep", "--args", r#"{"ms": 60000}"#])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let running = wait_until(Duration::from_secs(15), || {
        p.server_logged("wrapped", "sleep 60000 ms started") && pids_matching(&format!("{tag}-grand")).len() == 1
    });
    assert!(running, "the server and its grandchild never ran");
    killed.kill().unwrap();
    killed.wait().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(pids_matching(&format!("{tag}-grand")).len(), 1, "the grandchild outlives a killed agent");

    let next = p.run(&["-v", "mcp", "list", "--server", "wrapped"]);
    next.assert_ok();
    let gone = wait_until(Duration::from_secs(5), || {
        pids_matching(&format!("{tag}-grand")).is_empty() && pids_matching(&format!("{tag}-srv")).is_empty()
    });
    assert!(gone, "left running: {:?}\n{}", pids_matching(&tag), next.stderr);
    assert!(next.stderr.contains("process(es) left by agent"), "{}", next.stderr);
    assert_eq!(pids_matching(&format!("{tag}-reused")).len(), 1, "a reused pid was signalled");
    assert_eq!(pids_matching(&format!("{tag}-live")).len(), 1, "a running agent's process was signalled");
    assert_eq!(records(&p), ["2-live.json"], "dead runs' records are removed, a live one stays");
}

/// A project `.mcp.json` naming `agent mcp serve` (what Claude Code writes for a project-scoped
/// `agent`) is skipped with one line, by path and through a link on the `PATH` alike: `agent`
/// never starts itself, which would start itself again without end.
#[test]
fn agent_never_starts_itself_as_a_server() {
    let p = Project::new();
    let bin = p.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(support::agent_bin(), bin.join("my-agent")).unwrap();
    p.write(
        ".mcp.json",
        &json!({"mcpServers": {
            "direct": {"command": support::agent_bin(), "args": ["mcp", "serve"]},
            "linked": {"command": "my-agent", "args": ["mcp", "serve"]},
            "fixture": {"command": fixture_bin(), "args": []}
        }})
        .to_string(),
    );
    let path = std::env::join_paths(
        std::iter::once(bin.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let mut child = p
        .cmd(&["mcp", "list"])
        .env("PATH", path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Without the guard this never ends: count the copies of agent under it while it runs.
    let started = Instant::now();
    let mut most = 0;
    while child.try_wait().unwrap().is_none() {
        let copies = support::procs::descendants(child.id())
            .into_iter()
            .filter(|&pid| {
                std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == b"serve"))
            })
            .count();
        most = most.max(copies);
        if started.elapsed() > Duration::from_secs(30) || copies > 4 {
            for pid in support::procs::descendants(child.id()) {
                // SAFETY: killing processes this test started.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
            let _ = child.kill();
            panic!("agent started itself: {copies} copies of `agent mcp serve` after {:?}", started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(most, 0, "a copy of agent was started");
    assert!(stdout.contains("fixture") && stdout.contains("echo"), "{stdout}\n{stderr}");
    for name in ["direct", "linked"] {
        assert!(
            stderr.lines().any(|l| l.contains(name) && l.contains("is agent itself, which would start itself again")),
            "{stderr}"
        );
    }
}
