//! OAuth sign-in end to end: the real `agent` against the fixture server in `--oauth` mode (a
//! protected resource with its own authorization server: dynamic registration, an authorization
//! endpoint that redirects at once, rotating single-use refresh tokens, `--oauth-log` naming
//! every token it issued). `login` plays the user's browser: it fetches the printed URL and
//! follows the redirect to agent's loopback listener.

use crate::support;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use support::{HttpFixture, Project, Run};

/// What an attacker does with the printed sign-in URL.
type Forger = Box<dyn Fn(&str)>;

/// A project with the `--oauth` fixture configured as `remote`, and the fixture's event log.
struct Signed {
    p: Project,
    server: HttpFixture,
    log: PathBuf,
    /// `RUST_LOG` for every `agent` this test runs (none: the `-v` defaults).
    rust_log: Option<&'static str>,
    /// Run by [`Signed::login`] with the printed URL before the browser's turn (an attacker).
    forged_redirect: Option<Forger>,
}

fn setup(extra: &[&str]) -> Signed {
    // The authorization server's event log lives in the test's own project directory.
    let p = Project::new();
    let log = p.path().join("oauth.log");
    let log_arg = log.to_string_lossy().into_owned();
    let mut args = vec!["--oauth", "--oauth-log", log_arg.as_str()];
    args.extend_from_slice(extra);
    let server = HttpFixture::start_with(&args);
    p.write_config(&format!("mcp:\n  servers:\n    remote:\n      url: {}\n", server.url));
    Signed { p, server, log, rust_log: None, forged_redirect: None }
}

impl Signed {
    fn cmd(&self, args: &[&str]) -> std::process::Command {
        let mut c = self.p.cmd(args);
        if let Some(level) = self.rust_log {
            c.env("RUST_LOG", level);
        }
        c
    }

    fn run(&self, args: &[&str]) -> Run {
        Run::from(self.cmd(args).output().unwrap())
    }

    fn events(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn count(&self, event: &str) -> usize {
        self.events().lines().filter(|l| *l == event).count()
    }

    /// Every token value the server issued.
    fn tokens(&self) -> Vec<String> {
        self.events()
            .lines()
            .filter_map(|l| l.strip_prefix("issued "))
            .flat_map(|l| l.split(' ').map(str::to_string).collect::<Vec<_>>())
            .collect()
    }

    fn origin(&self) -> String {
        self.server.url.trim_end_matches("/mcp").to_string()
    }

    /// `agent [flags] mcp login remote --no-browser`, with the printed URL followed as a browser
    /// would; the login's output.
    fn login(&self, flags: &[&str]) -> Run {
        let mut args: Vec<&str> = flags.to_vec();
        args.extend(["mcp", "login", "remote", "--no-browser"]);
        let mut child = self.cmd(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        let mut line = String::new();
        while stderr.read_line(&mut line).unwrap() > 0 {
            seen.push_str(&line);
            if let Some(url) = line.trim().strip_prefix("open this URL to sign in: ") {
                if let Some(forge) = &self.forged_redirect {
                    forge(url);
                }
                let location = get(url).1.expect("the authorization endpoint redirects");
                assert!(location.starts_with("http://127.0.0.1:"), "{location}");
                assert_eq!(get(&location).0, 200, "the loopback listener answers the redirect");
                break;
            }
            line.clear();
        }
        let mut rest = String::new();
        stderr.read_to_string(&mut rest).unwrap();
        seen.push_str(&rest);
        let mut out = Vec::new();
        child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
        let status = child.wait().unwrap();
        Run { code: status.code().unwrap_or(-1), stdout: String::from_utf8_lossy(&out).into_owned(), stderr: seen }
    }

    fn revoke_access_tokens(&self) {
        let (status, _) = request("POST", &format!("{}/admin/revoke", self.origin()));
        assert_eq!(status, 200);
    }
}

/// A GET with a raw socket (no redirects followed): the status and the `Location` header.
fn get(url: &str) -> (u16, Option<String>) {
    request("GET", url)
}

fn request(method: &str, url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut s = std::net::TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "{method} {} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        if path.is_empty() { "/" } else { path }
    )
    .unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let location = text
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix("location: ").or_else(|| l.strip_prefix("Location: ")))
        .map(str::to_string);
    (status, location)
}

const NEEDS_SIGN_IN: &str = "error: server `remote` needs sign-in: run `agent mcp login remote`\n";

/// A user who never signed in: `mcp call` ends with the one line and exit code 3; a script's
/// call rejects with an `MCPToolError` saying the same.
#[test]
fn without_sign_in_a_call_exits_3_with_the_login_hint_and_a_script_gets_an_mcp_tool_error() {
    let s = setup(&[]);
    let r = s.p.run(&["mcp", "call", "remote.echo", "--args", r#"{"message": "hi"}"#]);
    assert_eq!((r.code, r.stderr.as_str()), (3, NEEDS_SIGN_IN), "{}", r.stdout);
    let r = s.p.run(&["mcp", "list"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stdout.starts_with("remote (needs sign-in: agent mcp login remote)\n"), "{}", r.stdout);
    let script = r#"
        try { await callMCPTool("remote", "echo", { message: "hi" }); console.log("called"); }
        catch (e) { console.log(e.name + ": " + e.message); }
    "#;
    let r = s.p.run_stdin(&["exec", "-"], script);
    assert!(
        r.stdout
            .contains("MCPToolError: remote.echo failed: server `remote` needs sign-in: run `agent mcp login remote`"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
}

/// The whole life: login (dynamic registration, PKCE, the loopback redirect), the stored file's
/// permissions, status, a call, logout.
#[test]
fn login_then_calls_work_status_says_signed_in_and_logout_signs_out() {
    use std::os::unix::fs::PermissionsExt as _;
    let s = setup(&[]);
    let r = s.login(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.ends_with("signed in to remote (scopes: tools)\n"), "{}", r.stderr);
    let file = s.p.path().join("home/.config/agent/credentials.json");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(file.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);

    let r = s.p.run(&["mcp", "call", "remote.echo", "--args", r#"{"message": "hi"}"#]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "hi\n"), "{}", r.stderr);
    let r = s.p.run(&["mcp", "auth", "status"]);
    // 3600 s from the token endpoint, seconds ago.
    assert!(
        r.stdout.contains("remote  signed in (expires in 60 min)")
            || r.stdout.contains("remote  signed in (expires in 59 min)"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    let r = s.p.run(&["mcp", "auth", "status", "--json"]);
    assert_eq!(r.json()[0]["status"], "signed_in");

    s.p.run(&["mcp", "logout", "remote"]).assert_ok();
    let r = s.p.run(&["mcp", "call", "remote.echo", "--args", r#"{"message": "hi"}"#]);
    assert_eq!((r.code, r.stderr.as_str()), (3, NEEDS_SIGN_IN));
    let r = s.p.run(&["mcp", "auth", "status"]);
    assert!(r.stdout.contains("remote  needs sign-in"), "{}{}", r.stdout, r.stderr);
}

/// An access token past its lifetime is refreshed before the call (no `401` first).
#[test]
fn an_expired_token_is_refreshed_before_the_call() {
    let s = setup(&["--token-ttl", "2"]);
    assert_eq!(s.login(&[]).code, 0);
    std::thread::sleep(Duration::from_millis(2500));
    let r = s.p.run(&["mcp", "auth", "status"]);
    assert!(r.stdout.contains("remote  expired (will refresh)"), "{}", r.stdout);
    let r = s.p.run(&["mcp", "call", "remote.echo", "--args", r#"{"message": "hi"}"#]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "hi\n"), "{}", r.stderr);
    assert_eq!((s.count("refresh-grant"), s.count("mcp-401-with-token")), (1, 0), "{}", s.events());
}

/// A token the server stopped accepting (it restarted, say) gets one refresh on the `401`, and
/// the call goes through.
#[test]
fn a_token_rejected_with_401_is_refreshed_once_and_the_call_succeeds() {
    let s = setup(&[]);
    assert_eq!(s.login(&[]).code, 0);
    s.revoke_access_tokens();
    let r = s.p.run(&["mcp", "call", "remote.echo", "--args", r#"{"message": "hi"}"#]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "hi\n"), "{}", r.stderr);
    assert_eq!((s.count("mcp-401-with-token"), s.count("refresh-grant")), (1, 1), "{}", s.events());
}

/// Racing local processes: four `agent` processes find the token expired at once. The server
/// rotates refresh tokens (a used one is refused), so without the refresh lock all but one would
/// refresh with a spent token and sign the user out; with it they take turns, each refreshing
/// with the token the one before saved.
#[test]
fn processes_refreshing_at_once_all_succeed_and_one_valid_token_pair_remains() {
    // A refresh takes 400 ms at the server, so the four processes' refreshes overlap.
    let s = setup(&["--token-ttl", "2", "--refresh-delay", "400"]);
    assert_eq!(s.login(&[]).code, 0);
    std::thread::sleep(Duration::from_millis(2500));
    let children: Vec<_> = (0..4)
        .map(|_| {
            s.p.cmd(&["mcp", "call", "remote.echo", "--args", r#"{"message": "hi"}"#])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(s.count("refresh-rejected"), 0, "{}", s.events());
    assert!(s.count("refresh-grant") >= 1);
    // The stored pair is the last one issued, and it works.
    let r = s.p.run(&["mcp", "call", "remote.echo", "--args", r#"{"message": "again"}"#]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "again\n"), "{}", r.stderr);
}

/// Tokens and codes never reach stdout, stderr or the logs, also at `-vv` with every module
/// at debug level (`RUST_LOG=debug`, rmcp and the OAuth client included), through a login, a
/// refresh on `401`, a call, `status --json`, `list --json` and a script.
#[test]
fn no_token_reaches_output_or_logs_at_vv() {
    let mut s = setup(&[]);
    s.rust_log = Some("debug");
    let mut seen = String::new();
    let r = s.login(&["-vv"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    seen.push_str(&r.stdout);
    seen.push_str(&r.stderr);
    s.revoke_access_tokens();
    for args in [
        &["-vv", "mcp", "call", "remote.echo", "--args", r#"{"message": "hi"}"#][..],
        &["-vv", "mcp", "auth", "status", "--json"][..],
        &["-vv", "mcp", "list", "--json"][..],
    ] {
        let r = s.run(args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        seen.push_str(&r.stdout);
        seen.push_str(&r.stderr);
    }
    let mut c = s.cmd(&["-vv", "exec", "-"]);
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"console.log(await callMCPTool("remote", "echo", { message: "x" }));"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    seen.push_str(&String::from_utf8_lossy(&out.stdout));
    seen.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(seen.contains("debug: "), "the log ran at debug level:\n{seen}");
    assert_eq!(s.count("refresh-grant"), 1, "the refresh happened: {}", s.events());
    for entry in support::paths_under(&s.p.path().join(".kodelet")).into_iter().filter(|p| p.is_file()) {
        seen.push_str(&String::from_utf8_lossy(&std::fs::read(entry).unwrap_or_default()));
    }
    let tokens = s.tokens();
    assert!(tokens.len() >= 4, "a login and a refresh: {tokens:?}");
    for t in tokens {
        assert!(!seen.contains(&t), "token {t} leaked:\n{seen}");
    }
}

/// `agent mcp serve --stdio` driven with JSON-RPC lines.
struct Serve {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    next: u64,
}

impl Serve {
    fn start(mut cmd: std::process::Command) -> Serve {
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut serve = Serve { child, stdin, lines, next: 1 };
        serve.request(
            "initialize",
            serde_json::json!({
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        writeln!(serve.stdin, "{}", serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .unwrap();
        serve
    }

    /// Sends a request; its answer line.
    fn request(&mut self, method: &str, params: serde_json::Value) -> String {
        let id = self.next;
        self.next += 1;
        writeln!(self.stdin, "{}", serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .unwrap();
        let needle = format!("\"id\":{id}");
        for line in self.lines.by_ref() {
            let line = line.unwrap();
            if line.contains(&needle) {
                return line;
            }
        }
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(self.child.stderr.as_mut().unwrap(), &mut err);
        panic!("serve ended before answering {method}: {err}")
    }

    fn call(&mut self, tool: &str, args: serde_json::Value) -> String {
        self.request("tools/call", serde_json::json!({"name": tool, "arguments": args}))
    }

    /// Stops serve; its stderr.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let _ = self.child.wait();
        err
    }
}

/// `serve` never opens a browser: a script run through `execute_code` calling a server that
/// needs sign-in gets the sign-in error, and `$BROWSER` (a program that would leave a mark) is
/// never started.
#[test]
fn serve_never_opens_a_browser_and_answers_with_the_sign_in_error() {
    let s = setup(&[]);
    let mark = s.p.path().join("browser-opened");
    let browser = s.p.write("browser.sh", &format!("#!/bin/sh\ntouch {}\n", mark.display()));
    std::fs::set_permissions(&browser, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut cmd = s.cmd(&["mcp", "serve", "--stdio"]);
    cmd.env("BROWSER", &browser).env("DISPLAY", ":0");
    let mut serve = Serve::start(cmd);
    let code =
        r#"try { await callMCPTool("remote", "echo", { message: "hi" }); } catch (e) { console.log(e.message); }"#;
    let answer = serve.call("execute_code", serde_json::json!({"code": code}));
    serve.stop();
    assert!(answer.contains("needs sign-in: run `agent mcp login remote`"), "{answer}");
    assert!(!mark.exists(), "serve started a browser");
}

/// A machine identity (`auth.grant: client_credentials`, the secret from the environment): the
/// token is fetched without a person, and when it expires in the middle of a long `serve`
/// session (no refresh token: client credentials grants have none) the next call gets a new one.
/// The secret and the tokens never reach serve's output.
#[test]
fn a_machine_identity_gets_a_new_token_when_its_token_expires_mid_session() {
    let s = setup(&["--token-ttl", "2"]);
    s.p.write_config(&format!(
        "mcp:\n  servers:\n    remote:\n      url: {}\n      auth:\n        grant: client_credentials\n        \
         client_id: machine\n        client_secret: ${{MACHINE_SECRET}}\n",
        s.server.url
    ));
    let mut cmd = s.cmd(&["-vv", "mcp", "serve", "--stdio"]);
    cmd.env("MACHINE_SECRET", "machine-secret");
    let mut serve = Serve::start(cmd);
    let first = serve.call("remote_echo", serde_json::json!({"message": "one"}));
    std::thread::sleep(Duration::from_millis(2500));
    let second = serve.call("remote_echo", serde_json::json!({"message": "two"}));
    let err = serve.stop();
    assert!(first.contains("\"text\":\"one\"") && !first.contains("isError\":true"), "{first}\n{err}");
    assert!(second.contains("\"text\":\"two\"") && !second.contains("isError\":true"), "{second}\n{err}");
    assert_eq!(s.count("client-credentials-grant"), 2, "{}", s.events());
    for secret in s.tokens().into_iter().chain(["machine-secret".to_string()]) {
        assert!(!err.contains(&secret) && !first.contains(&secret), "{secret} leaked");
    }
}

/// `agent run` in code mode: the model's script calls a server that needs sign-in; the model gets
/// the sign-in line back in the script's error, and the run goes on.
#[test]
fn in_agent_run_the_model_sees_the_sign_in_error_as_the_tools_error() {
    use crate::support::fake_llm::{Api, FakeLlm, Reply};
    let s = setup(&[]);
    let script = r#"const r = await callMCPTool("remote", "echo", { message: "hi" }); console.log(r);"#;
    let fake = FakeLlm::start(vec![
        Reply::tool("code_execution", serde_json::json!({"code": script, "description": "echo"})),
        Reply::text("You need to sign in first."),
    ]);
    s.p.write_config(&format!(
        "{}mcp:\n  servers:\n    remote:\n      url: {}\n",
        fake.llm_yaml(Api::Anthropic),
        s.server.url
    ));
    let r = s.run(&["run", "--mode", "code", "echo hi on remote"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.ends_with("You need to sign in first.\n"), "{}", r.stdout);
    let (_, content, is_error) = fake.requests()[1].tool_results().remove(0);
    assert!(is_error, "{content}");
    assert!(content.contains("server `remote` needs sign-in: run `agent mcp login remote`"), "{content}");
}

/// A racing local process: it reads the sign-in URL (the redirect port is in it) and sends the
/// loopback listener a redirect of its own first, with its own code, with and without a state,
/// and an `error`. The listener refuses them all and keeps waiting; the user's real redirect signs
/// in, and the forged code never reaches the token endpoint.
#[test]
fn a_forged_redirect_from_another_local_process_is_refused_and_the_real_one_signs_in() {
    let mut s = setup(&[]);
    s.forged_redirect = Some(Box::new(|url: &str| {
        let query: std::collections::HashMap<String, String> =
            url::Url::parse(url).unwrap().query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        let redirect = &query["redirect_uri"];
        for forged in ["?code=attacker-code&state=guessed", "?code=attacker-code", "?error=access_denied&state=guessed"]
        {
            assert_eq!(get(&format!("{redirect}{forged}")).0, 400, "{forged}");
        }
    }));
    let r = s.login(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.ends_with("signed in to remote (scopes: tools)\n"), "{}", r.stderr);
    assert_eq!(s.count("code-grant"), 1, "{}", s.events());
    let r = s.p.run(&["mcp", "call", "remote.echo", "--args", r#"{"message": "hi"}"#]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "hi\n"), "{}", r.stderr);
}

/// A server that moved to another authorization server (same URL, a new issuer): the tokens the
/// old issuer minted are never offered (no request carries a token, no refresh is tried at the
/// new one), the user is told to sign in, and signing in registers anew; the old entry stays
/// apart until logout.
#[test]
fn a_server_that_moved_to_another_authorization_server_gets_a_new_sign_in_never_old_tokens() {
    let mut s = setup(&[]);
    assert_eq!(s.login(&[]).code, 0);
    let addr = s.origin().trim_start_matches("http://").to_string();
    let moved_log = s.log.with_file_name("moved.log");
    let moved_arg = moved_log.to_string_lossy().into_owned();
    // The old server stops; the new one listens where it was.
    drop(std::mem::replace(&mut s.server, HttpFixture::start_with(&[])));
    s.server = HttpFixture::start_at(&addr, &["--oauth", "--as-path", "/as2", "--oauth-log", &moved_arg]);
    s.log = moved_log;
    let r = s.p.run(&["mcp", "call", "remote.echo", "--args", r#"{"message": "hi"}"#]);
    assert_eq!((r.code, r.stderr.as_str()), (3, NEEDS_SIGN_IN), "{}", r.stdout);
    assert_eq!(s.count("mcp-401-with-token"), 0, "an old token was offered: {}", s.events());
    assert_eq!(s.count("refresh-grant") + s.count("refresh-rejected"), 0, "{}", s.events());
    let r = s.login(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.count("register"), 1, "a new registration: {}", s.events());
    let r = s.p.run(&["mcp", "call", "remote.echo", "--args", r#"{"message": "hi"}"#]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "hi\n"), "{}", r.stderr);
    let stored = std::fs::read_to_string(s.p.path().join("home/.config/agent/credentials.json")).unwrap();
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    let issuers: Vec<&str> =
        stored["entries"].as_array().unwrap().iter().filter_map(|e| e["issuer"].as_str()).collect();
    assert_eq!(issuers, [s.origin(), format!("{}/as2", s.origin())]);
}

/// Follows a sign-in URL as a browser would: the authorization endpoint's redirect, then the
/// loopback listener.
fn follow(url: &str) {
    let location = get(url).1.expect("the authorization endpoint redirects");
    assert_eq!(get(&location).0, 200, "the loopback listener answers the redirect");
}

/// On a terminal, a `403 insufficient_scope` steps up: `mcp call` signs in again asking for the
/// granted scopes plus the required one, and the call goes through.
#[test]
fn on_a_terminal_a_403_insufficient_scope_steps_up_and_the_call_goes_through() {
    use crate::support::pty;
    let s = setup(&["--call-scope", "admin"]);
    assert_eq!(s.login(&[]).code, 0);
    let mut cmd = s.cmd(&["mcp", "call", "remote.echo", "--args", r#"{"message": "stepped"}"#]);
    cmd.env_remove("BROWSER").env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
    let mut t = pty::spawn_command(cmd, 30_000);
    t.exp_string("asks for more scopes (tools admin): signing in again (1 of 3)").unwrap();
    let (_, url) = t.exp_regex("open this URL to sign in: \\S+").unwrap();
    follow(url.trim_start_matches("open this URL to sign in: "));
    t.exp_string("signed in to remote (scopes: tools admin)").unwrap();
    t.exp_string("stepped").unwrap();
    assert_eq!(pty::exit_code(&mut t), 0);
    assert_eq!((s.count("mcp-403"), s.count("authorize tools admin")), (1, 1), "{}", s.events());
}

/// Scripts too: on a terminal, a script's call that gets `403 insufficient_scope` signs in again
/// and goes through, and the time the user takes to sign in does not count against the script's
/// timeout.
#[test]
fn on_a_terminal_a_scripts_call_steps_up_and_its_timeout_waits_for_the_user() {
    use crate::support::pty;
    let s = setup(&["--call-scope", "admin"]);
    assert_eq!(s.login(&[]).code, 0);
    s.p.write(
        "step.ts",
        "const r = await callMCPTool(\"remote\", \"echo\", { message: \"from a script\" });\nconsole.log(JSON.stringify(r));\n",
    );
    let mut cmd = s.cmd(&["exec", "step.ts", "--timeout", "2s"]);
    cmd.env_remove("BROWSER").env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
    let mut t = pty::spawn_command(cmd, 30_000);
    t.exp_string("asks for more scopes (tools admin): signing in again (1 of 3)").unwrap();
    let (_, url) = t.exp_regex("open this URL to sign in: \\S+").unwrap();
    // Longer than the script's timeout: the user's time is not the script's.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    follow(url.trim_start_matches("open this URL to sign in: "));
    t.exp_string("signed in to remote (scopes: tools admin)").unwrap();
    t.exp_string("from a script").unwrap();
    assert_eq!(pty::exit_code(&mut t), 0);
    assert_eq!((s.count("mcp-403"), s.count("authorize tools admin")), (1, 1), "{}", s.events());
}

/// The retry limit: an authorization server that never grants the scope gets three sign-ins, no
/// more, and the call ends with the sign-in error and exit code 3.
#[test]
fn on_a_terminal_a_scope_never_granted_stops_after_three_step_ups_with_exit_3() {
    use crate::support::pty;
    let s = setup(&["--call-scope", "admin", "--stingy"]);
    assert_eq!(s.login(&[]).code, 0);
    let mut cmd = s.cmd(&["mcp", "call", "remote.echo", "--args", r#"{"message": "never"}"#]);
    cmd.env_remove("BROWSER").env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
    let mut t = pty::spawn_command(cmd, 30_000);
    for n in 1..=3 {
        t.exp_string(&format!("signing in again ({n} of 3)")).unwrap();
        let (_, url) = t.exp_regex("open this URL to sign in: \\S+").unwrap();
        follow(url.trim_start_matches("open this URL to sign in: "));
    }
    t.exp_string("needs sign-in with more scopes (tools admin)").unwrap();
    assert_eq!(pty::exit_code(&mut t), 3);
    assert_eq!((s.count("mcp-403"), s.count("authorize tools admin")), (4, 3), "{}", s.events());
}
