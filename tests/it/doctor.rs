//! `agent doctor` end to end: the real binary against real servers (the fixture, a server that
//! dies at start), a real HTTP endpoint standing in for the LLM (it records what it was sent),
//! and real directory modes.

use crate::support;

use std::os::unix::fs::PermissionsExt as _;
use std::sync::{Arc, Mutex};

use http_body_util::Full;
use hyper::body::Bytes;
use serde_json::Value;
use support::fake_http::HttpServer;
use support::{Project, fixture_stdio_yaml};

/// A server that writes to stderr and exits before the handshake.
const BROKEN: &str = "    broken:\n      command: sh\n      args: [\"-c\", \"echo boom >&2; exit 3\"]\n";

/// An endpoint that answers every request with 200 and keeps each request's header lines.
fn recording_endpoint() -> (HttpServer, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = HttpServer::start(move |req: hyper::Request<hyper::body::Incoming>| {
        let log = log.clone();
        async move {
            let mut lines = vec![format!("{} {}", req.method(), req.uri())];
            for (k, v) in req.headers() {
                lines.push(format!("{k}: {}", v.to_str().unwrap_or("")));
            }
            log.lock().unwrap().push(lines.join("\n"));
            Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::from_static(b"ok"))))
        }
    });
    (server, seen)
}

/// The one line of `check name:` in the human report.
fn line<'a>(stdout: &'a str, check_name: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" ").starts_with(&format!("{check_name}:")))
        .unwrap_or_else(|| panic!("no `{check_name}` line in:\n{stdout}"))
}

/// One broken server, one working, no API key: exit 1, each problem named with its fix.
#[test]
fn a_broken_server_and_a_missing_key_are_problems_with_fixes_and_a_working_server_is_ok() {
    let p = Project::new();
    p.write_config(&format!("mcp:\n  servers:\n{}{BROKEN}", fixture_stdio_yaml("fixture", &[])));
    let r = p.run(&["doctor"]);
    r.assert_code(1);
    let config = p.path().join("agent.yaml").display().to_string();
    let cfg = line(&r.stdout, &format!("config {config}"));
    assert!(cfg.starts_with("ok ") && cfg.contains("(project layer)"), "{cfg}");
    let ok = line(&r.stdout, "server fixture");
    assert!(ok.starts_with("ok ") && ok.contains(", 12 tools (declared in ") && ok.contains(&config), "{ok}");
    let broken = line(&r.stdout, "server broken");
    assert!(broken.starts_with("problem ") && broken.contains("boom"), "{broken}");
    assert!(broken.contains("; fix: check mcp.servers.broken in ") && broken.contains("broken.stderr.log"), "{broken}");
    let key = line(&r.stdout, "llm key");
    assert!(key.starts_with("problem ") && key.contains("no API key for provider `anthropic`"), "{key}");
    assert!(key.contains("; fix: export ANTHROPIC_API_KEY=..."), "{key}");
    assert!(!r.stdout.contains('\x1b'), "no colour without a terminal");

    let j = p.run(&["doctor", "--json"]);
    j.assert_code(1);
    let doc = j.json();
    assert_eq!(doc["ok"], false);
    let checks = doc["checks"].as_array().unwrap();
    let find = |check: &str, name: &str| -> &Value {
        checks.iter().find(|c| c["check"] == check && c["name"] == name).unwrap_or_else(|| panic!("{doc}"))
    };
    assert_eq!(find("server", "fixture")["status"], "ok");
    assert_eq!(find("server", "fixture")["tools"], 12);
    assert_eq!(find("server", "fixture")["declared_in"], config.as_str());
    assert_eq!(find("server", "broken")["status"], "problem");
    assert!(find("server", "broken")["fix"].as_str().unwrap().contains("mcp.servers.broken"));
    assert_eq!(find("llm", "key")["status"], "problem");
    assert_eq!(find("config", &config)["layer"], "project");
    let problems = checks.iter().filter(|c| c["status"] == "problem").count();
    assert_eq!(doc["problems"], problems);
}

/// With the key set and everything else sound: exit 0; the key's value is in no output (not even
/// at -vv) and never reaches the endpoint the doctor probes.
#[test]
fn a_sound_setup_exits_0_and_the_key_never_reaches_output_or_the_endpoint() {
    let secret = "sk-ant-doctor-7f3a9c-never-print-me";
    let (endpoint, seen) = recording_endpoint();
    let p = Project::new();
    p.write_config(&format!(
        "llm:\n  provider: anthropic\n  model: fake-model\n  base_url: http://{}\nmcp:\n  servers:\n{}",
        endpoint.addr,
        fixture_stdio_yaml("fixture", &[])
    ));
    let run = |args: &[&str]| {
        let out = p.cmd(args).env("ANTHROPIC_API_KEY", secret).output().unwrap();
        support::Run::from(out)
    };
    // A fresh project: the workspace agent creates (logs, usage) is private from the start, so
    // doctor has nothing to fix in it.
    run(&["mcp", "list"]).assert_ok();
    for dir in [".kodelet", ".kodelet/mcp", ".kodelet/mcp/logs"] {
        let mode = std::fs::metadata(p.path().join(dir)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{dir}");
    }
    let r = run(&["doctor", "-vv"]);
    r.assert_ok();
    assert!(!r.stdout.contains(secret) && !r.stderr.contains(secret), "{}\n{}", r.stdout, r.stderr);
    let key = line(&r.stdout, "llm key");
    assert!(key.starts_with("ok ") && key.contains("from ANTHROPIC_API_KEY; not shown"), "{key}");
    let reached = line(&r.stdout, "llm endpoint");
    assert!(reached.starts_with("ok ") && reached.contains("answered HTTP 200"), "{reached}");
    let dir = line(&r.stdout, "dir workspace");
    assert!(dir.starts_with("ok ") && dir.contains("0700, writable"), "{dir}");

    let j = run(&["doctor", "--json"]);
    j.assert_ok();
    assert!(!j.stdout.contains(secret));
    let doc = j.json();
    assert_eq!((doc["ok"].as_bool(), doc["problems"].as_u64()), (Some(true), Some(0)));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "one probe per doctor run: {seen:?}");
    assert!(seen.iter().all(|req| req.starts_with("GET /") && !req.contains(secret)), "{seen:?}");
}

/// Another local user could read a group- or world-readable workspace (server logs, learned
/// types, what scripts kept): the doctor names it with the fix, and the same directory made
/// private passes.
#[test]
fn a_workspace_others_can_read_is_a_problem_with_its_fix() {
    let p = Project::new();
    p.write_config("llm:\n  base_url: http://127.0.0.1:9\n");
    let ws = p.path().join(".kodelet/mcp");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::set_permissions(&ws, std::fs::Permissions::from_mode(0o750)).unwrap();
    let r = p.run(&["doctor"]);
    r.assert_code(1);
    let dir = line(&r.stdout, "dir workspace");
    assert!(dir.starts_with("problem ") && dir.contains("(mode 750)"), "{dir}");
    assert!(dir.ends_with(&format!("; fix: chmod 700 {}", ws.display())), "{dir}");
    // The endpoint that does not answer is a problem too, named with what to check.
    let down = line(&r.stdout, "llm endpoint");
    assert!(down.starts_with("problem ") && down.contains("cannot reach http://127.0.0.1:9"), "{down}");

    std::fs::set_permissions(&ws, std::fs::Permissions::from_mode(0o700)).unwrap();
    let r = p.run(&["doctor"]);
    assert!(line(&r.stdout, "dir workspace").starts_with("ok "), "{}", r.stdout);
}

/// An HTTP server behind OAuth that the user never signed in to: its start and its sign-in are
/// problems whose fix is `agent mcp login`; a plain HTTP server needs no sign-in.
#[test]
fn an_http_server_that_wants_sign_in_is_a_problem_with_the_login_fix() {
    let p = Project::new();
    let log = p.path().join("oauth.log").display().to_string();
    let oauth = support::HttpFixture::start_with(&["--oauth", "--oauth-log", &log]);
    let open = support::HttpFixture::start();
    p.write_config(&format!(
        "llm:\n  base_url: http://127.0.0.1:9\nmcp:\n  servers:\n    remote:\n      url: {}\n    open:\n      url: {}\n",
        oauth.url, open.url
    ));
    let r = p.run(&["doctor"]);
    r.assert_code(1);
    let sign_in = line(&r.stdout, "sign-in remote");
    assert!(sign_in.starts_with("problem ") && sign_in.contains("needs sign-in"), "{sign_in}");
    assert!(sign_in.ends_with("; fix: agent mcp login remote"), "{sign_in}");
    assert!(line(&r.stdout, "server remote").ends_with("; fix: agent mcp login remote"), "{}", r.stdout);
    let plain = line(&r.stdout, "sign-in open");
    assert!(plain.starts_with("ok ") && plain.contains("no auth"), "{plain}");
    assert!(line(&r.stdout, "server open").starts_with("ok "), "{}", r.stdout);
    let doc = p.run(&["doctor", "--json"]).json();
    let remote = doc["checks"].as_array().unwrap().iter().find(|c| c["check"] == "sign-in" && c["name"] == "remote");
    assert_eq!(remote.map(|c| &c["auth"]), Some(&serde_json::json!("needs_sign_in")), "{doc}");
}

/// A hostile server's failure on a terminal: what it wrote to stderr (a screen clear, a hidden
/// hyperlink, a bell) is shown, never obeyed, and stays on its check's one line.
#[test]
fn a_hostile_servers_error_is_shown_not_obeyed_on_a_terminal() {
    let p = Project::new();
    let hostile = "    hostile:\n      command: sh\n      args: [\"-c\", \"printf 'A\\\\033[2JB\\\\033]8;;file:///tmp/x\\\\007C\\\\nD' >&2; exit 3\"]\n";
    p.write_config(&format!("llm:\n  base_url: http://127.0.0.1:9\nmcp:\n  servers:\n{hostile}"));
    // To a pipe the bytes are data, byte-exact (the error joins stderr lines with ` | `).
    let piped = p.run(&["doctor"]);
    assert!(piped.stdout.contains("A\x1b[2JB\x1b]8;;file:///tmp/x\x07C | D"), "{:?}", piped.stdout);
    // Colour allowed (no NO_COLOR): the status words are ours to colour, the server's bytes not.
    let mut cmd = p.cmd(&["doctor"]);
    cmd.env_remove("NO_COLOR");
    let mut s = support::pty::spawn_command(cmd, 30_000);
    // rexpect holds what the terminal received as one `char` per byte.
    let out = s.exp_eof().unwrap_or_default();
    assert_eq!(support::pty::exit_code(&mut s), 1);
    let as_read = |t: &str| t.bytes().map(char::from).collect::<String>();
    let shown = as_read("A\u{FFFD}[2JB\u{FFFD}]8;;file:///tmp/x\u{FFFD}C | D");
    assert!(out.contains(&shown), "{out:?}");
    assert!(out.contains("\x1b[31mproblem"), "the status word is red on a terminal: {out:?}");
    for obeyed in ["\x1b[2J", "\x1b]8;;", "\x07"] {
        assert!(!out.contains(obeyed), "{obeyed:?} reached the terminal: {out:?}");
    }
}
