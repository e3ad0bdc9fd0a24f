//! The cost of a signed-in call (prints its numbers; asserts nothing): the fixture server over
//! Streamable HTTP with `--oauth` (every request's bearer token checked) after a real
//! `agent mcp login`, vs the same fixture binary without OAuth, through one `McpManager`
//! (tokens read from the user's credentials file), in alternating rounds of `echo` calls:
//! p50 and mean per call, the ratio, and how many requests reached the token endpoint or were
//! refused during the signed-in calls (target: none; a valid token adds no round trip). The
//! one-off cost of a signed-in connection (discovery: a probe of the resource and two metadata
//! documents) is printed separately.
//!
//! Run: `cargo bench --bench auth` (BENCH_QUICK=1 for fewer calls); `cargo test --bench auth`
//! runs the same in a debug build.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn fixture(args: &[&str]) -> (Killed, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-fixture-server"))
        .args(["--http", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("fixture");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("listening line");
    let url = line.trim().strip_prefix("listening on ").expect("listening line").to_string();
    (Killed(child), url)
}

/// A GET without following redirects: the `Location` header.
fn location(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut s = std::net::TcpStream::connect(host).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.lines().take_while(|l| !l.is_empty()).find_map(|l| l.strip_prefix("location: ")).map(str::to_string)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let calls = if std::env::var_os("BENCH_QUICK").is_some() { 100 } else { 1000 };
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("oauth.log");
    let (_signed, signed_url) = fixture(&["--oauth", "--oauth-log", log.to_str().expect("utf-8 path")]);
    let (_plain, plain_url) = fixture(&[]);
    std::fs::write(
        dir.path().join("agent.yaml"),
        format!("mcp:\n  servers:\n    signed:\n      url: {signed_url}\n    plain:\n      url: {plain_url}\n"),
    )
    .expect("agent.yaml");

    // A real sign-in, the printed URL followed as a browser would.
    let mut login = Command::new(env!("CARGO_BIN_EXE_agent"))
        .args(["mcp", "login", "signed", "--no-browser"])
        .current_dir(dir.path())
        .env("AGENT_TRUST_PROJECT", "1")
        .env("HOME", dir.path())
        .env_remove("XDG_CONFIG_HOME")
        .stderr(Stdio::piped())
        .spawn()
        .expect("agent mcp login");
    let mut stderr = BufReader::new(login.stderr.take().expect("stderr"));
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap_or(0) > 0 {
        if let Some(url) = line.trim().strip_prefix("open this URL to sign in: ") {
            let back = location(url).expect("redirect");
            location(&back);
            break;
        }
        line.clear();
    }
    assert!(login.wait().expect("login").success(), "login failed");

    // SAFETY: single-threaded here, before the runtime and the manager start.
    unsafe {
        std::env::set_var("HOME", dir.path());
        std::env::remove_var("XDG_CONFIG_HOME");
    }
    let opts = agent::config::LoadOptions {
        project_dir: Some(dir.path().to_path_buf()),
        skip_user_config: true,
        ..Default::default()
    };
    let config = agent::config::Config::load(&opts).expect("config");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let manager = agent::mcp::McpManager::new(&config);
        let args = |m: &str| serde_json::json!({"message": m}).as_object().cloned().unwrap_or_default();
        for server in ["plain", "signed"] {
            let started = Instant::now();
            manager.call_tool(server, "echo", args("warm")).await.expect("first call");
            println!("first call to `{server}` (connects): {:.1} ms", started.elapsed().as_secs_f64() * 1e3);
        }
        let events = || std::fs::read_to_string(&log).unwrap_or_default();
        let token_requests = |t: &str| {
            t.lines().filter(|l| l.starts_with("refresh") || l.starts_with("code") || l.starts_with("mcp-401")).count()
        };
        let before = token_requests(&events());
        let (mut plain, mut signed) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
        for i in 0..calls {
            for (server, into) in [("plain", &mut plain), ("signed", &mut signed)] {
                let started = Instant::now();
                manager.call_tool(server, "echo", args(&i.to_string())).await.expect("call");
                into.push(started.elapsed());
            }
        }
        let extra = token_requests(&events()) - before;
        manager.shutdown().await;
        plain.sort();
        signed.sort();
        let mean = |v: &[Duration]| v.iter().sum::<Duration>().as_secs_f64() / v.len() as f64 * 1e3;
        let (p, s) = (percentile(&plain, 0.5).as_secs_f64() * 1e3, percentile(&signed, 0.5).as_secs_f64() * 1e3);
        println!("{calls} echo calls each, alternating, one manager:");
        println!("  unauthenticated  p50 {p:.3} ms  mean {:.3} ms", mean(&plain));
        println!("  signed in        p50 {s:.3} ms  mean {:.3} ms", mean(&signed));
        println!("  ratio p50 {:.2}x (+{:.3} ms per call)", s / p, s - p);
        println!("  token endpoint requests or 401s during the signed-in calls: {extra} (target 0)");
    });
}
