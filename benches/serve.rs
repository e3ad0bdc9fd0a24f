//! `agent mcp serve` over Streamable HTTP (prints its numbers; asserts nothing):
//!
//! - 16 concurrent clients (rmcp's streamable HTTP client) running a trivial `execute_code`:
//!   (a) each in a closed loop (the next call as soon as the last answered): the most executions/s
//!   serve sustains, with p50/p99 (on 2 cores with 16 callers always waiting, p50 is 16 / rate:
//!   queueing, not service time); (b) together offering 200 executions/s (each client on its own
//!   schedule, 12.5/s): p50/p99 at the target rate (targets: ≥ 600/s in the closed loop; 200/s
//!   served with p50 ≤ 5 ms);
//!   (c) one client alone, back to back: the latency of one execution;
//! - one client calling a proxied fixture tool vs the same call straight to the upstream fixture
//!   server (also Streamable HTTP), in alternating rounds: `add` (no work: pure protocol
//!   overhead) and `sleep 5 ms` (a tool that does a little work): mean latency, the ratio
//!   (target ≤ 1.5×) and what serve adds per call.
//!
//! - the engine's bytecode cache after many distinct scripts (`SERVE_ONLY=cache`, or with the
//!   rest): 16 clients run `SERVE_DISTINCT` (10,000) different trivial scripts through a fresh
//!   serve with the cache on, then through one with it off (`V82JSC_NO_BC_CACHE=1`): executions/s
//!   of distinct and of repeated scripts, and what the cache left on disk, in `agent`'s cache dir
//!   and anywhere else under the serve's HOME (target: ≤ 50 MB, nothing outside our cache dir).
//!
//! Serve runs with a bearer token (`--token-env`), as every `serve --http` does; each client sends it.
//!
//! Run: `cargo bench --bench serve` (BENCH_QUICK=1 for fewer iterations; `SERVE_WORKERS=N`
//! for `--workers N`; `SERVE_RATES=200,100` for the offered rates; `SERVE_ONLY=proxy` and
//! `SERVE_PROXIED_CALLS=N` to profile the proxied path).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};

const CLIENTS: usize = 16;

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads lines of `r` until one starts with `listening on `; the URL.
fn listening(r: impl std::io::Read + Send + 'static) -> String {
    let mut r = BufReader::new(r);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            panic!("the server exited before listening");
        }
        if let Some(url) = line.trim().strip_prefix("listening on ") {
            std::thread::spawn(move || std::io::copy(&mut r, &mut std::io::sink()));
            return url.to_string();
        }
    }
}

/// The bearer token serve is started with (from `--token-env`).
const TOKEN: &str = "serve-bench-token";

async fn client(url: &str) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(TOKEN);
    ().serve(StreamableHttpClientTransport::from_config(config)).await.expect("connect")
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let quick = std::env::var_os("BENCH_QUICK").is_some();
    let per_client = if quick { 10 } else { 100 };
    let proxied_calls: usize =
        std::env::var("SERVE_PROXIED_CALLS").ok().and_then(|n| n.parse().ok()).unwrap_or(if quick { 50 } else { 500 });
    // `SERVE_ONLY=proxy` skips the execute_code rows (e.g. to profile the proxied path).
    let only_proxy = std::env::var("SERVE_ONLY").is_ok_and(|v| v == "proxy");

    let upstream = Command::new(env!("CARGO_BIN_EXE_agent-fixture-server"))
        .args(["--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("fixture");
    let mut upstream = Killed(upstream);
    let upstream_url = listening(upstream.0.stdout.take().expect("stdout"));

    let only = std::env::var("SERVE_ONLY").ok();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    if only.as_deref().is_none_or(|o| o != "cache") {
        let dir = tempfile::tempdir().expect("tempdir");
        let (serve, url) = start_serve(dir.path(), &upstream_url, &[]);
        rt.block_on(async {
            if !only_proxy {
                execute_code_rows(&url, per_client).await;
            }
            proxied_rows(&url, &upstream_url, proxied_calls).await;
            keep_alive_row(&url, proxied_calls).await;
        });
        drop(serve);
    }
    if only.as_deref().is_none_or(|o| o == "cache") {
        let distinct: usize = std::env::var("SERVE_DISTINCT").ok().and_then(|n| n.parse().ok()).unwrap_or(if quick {
            1000
        } else {
            10_000
        });
        rt.block_on(bytecode_cache_rows(&upstream_url, distinct));
    }
    drop(upstream);
}

/// `agent mcp serve --http` in `dir` (its HOME and cache live there), with `env` added; the
/// process and its URL.
fn start_serve(dir: &std::path::Path, upstream_url: &str, env: &[(&str, &str)]) -> (Killed, String) {
    std::fs::write(dir.join("agent.yaml"), format!("mcp:\n  servers:\n    fixture:\n      url: {upstream_url}\n"))
        .expect("agent.yaml");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent"));
    cmd.args(["mcp", "serve", "--http", "127.0.0.1:0", "--token-env", "SERVE_BENCH_TOKEN"])
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .env_remove("V82JSC_BC_CACHE_DIR")
        .env_remove("V82JSC_NO_BC_CACHE")
        .env("SERVE_BENCH_TOKEN", TOKEN)
        // The bench's own project: trusted, as the user would trust theirs.
        .env("AGENT_TRUST_PROJECT", "1")
        .envs(env.iter().copied());
    if let Ok(w) = std::env::var("SERVE_WORKERS") {
        cmd.args(["--workers", &w]);
    }
    let serve = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("agent mcp serve");
    let mut serve = Killed(serve);
    let url = listening(serve.0.stderr.take().expect("stderr"));
    (serve, url)
}

/// Files and bytes under `dir`, recursively (links not followed).
fn disk_use(dir: &std::path::Path) -> (usize, u64) {
    let Ok(entries) = std::fs::read_dir(dir) else { return (0, 0) };
    let (mut files, mut bytes) = (0, 0);
    for e in entries.flatten() {
        let Ok(m) = std::fs::symlink_metadata(e.path()) else { continue };
        if m.is_dir() {
            let (f, b) = disk_use(&e.path());
            files += f;
            bytes += b;
        } else {
            files += 1;
            bytes += m.len();
        }
    }
    (files, bytes)
}

/// `n` executions spread over the clients, script `i` made by `code(i)`: executions/s.
async fn closed_loop(
    clients: &[rmcp::service::RunningService<rmcp::RoleClient, ()>],
    n: usize,
    code: impl Fn(usize) -> String + Sync,
) -> f64 {
    let started = Instant::now();
    let code = &code;
    let runs = clients.iter().enumerate().map(|(c, client)| async move {
        for i in (c..n).step_by(clients.len()) {
            let params = CallToolRequestParams::new("execute_code").with_arguments(args(json!({"code": code(i)})));
            let r = client.call_tool(params).await.expect("execute_code");
            assert_ne!(r.is_error, Some(true), "{r:?}");
        }
    });
    futures::future::join_all(runs).await;
    n as f64 / started.elapsed().as_secs_f64()
}

async fn bytecode_cache_rows(upstream_url: &str, distinct: usize) {
    for (label, env) in [("cache on ", &[][..]), ("cache off", &[("V82JSC_NO_BC_CACHE", "1")][..])] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (serve, url) = start_serve(dir.path(), upstream_url, env);
        let mut clients = Vec::new();
        for _ in 0..CLIENTS {
            clients.push(client(&url).await);
        }
        // Warm-up (the first run of a binary makes its snapshot).
        closed_loop(&clients, CLIENTS, |_| "console.log(0)".into()).await;
        let distinct_rate = closed_loop(&clients, distinct, |i| format!("console.log({i} + 1)")).await;
        let repeated_rate = closed_loop(&clients, distinct.min(2000), |_| "console.log(1 + 1)".into()).await;
        for c in clients {
            let _ = c.cancel().await;
        }
        drop(serve);
        let cache = dir.path().join(".cache");
        let (ours_files, ours_bytes) = disk_use(&cache.join("agent/quickjs-bytecode"));
        // The rest of the user's cache outside agent's own directory (the engine's default is
        // `~/.cache/v8x`).
        let (all_files, all_bytes) = disk_use(&cache);
        let (agent_files, agent_bytes) = disk_use(&cache.join("agent"));
        println!(
            "bytecode {label}: {distinct} distinct scripts {distinct_rate:.0}/s, repeated {repeated_rate:.0}/s; \
             left {ours_files} files, {:.1} MB in agent's bytecode cache (target <= 50 MB); \
             {} files, {:.1} MB in the user's cache outside agent's (target 0)",
            ours_bytes as f64 / 1e6,
            all_files - agent_files,
            (all_bytes - agent_bytes) as f64 / 1e6,
        );
    }
}

async fn execute_code_rows(url: &str, per_client: usize) {
    {
        // Warm-up: one execution per client connection.
        let mut clients = Vec::new();
        for _ in 0..CLIENTS {
            clients.push(client(url).await);
        }
        let code =
            || CallToolRequestParams::new("execute_code").with_arguments(args(json!({"code": "console.log(1)"})));
        for c in &clients {
            c.call_tool(code()).await.expect("warm-up");
        }
        let started = Instant::now();
        let runs = clients.iter().map(|c| async move {
            let mut lat = Vec::with_capacity(per_client);
            for _ in 0..per_client {
                let t = Instant::now();
                let r = c.call_tool(code()).await.expect("execute_code");
                assert_ne!(r.is_error, Some(true), "{r:?}");
                lat.push(t.elapsed());
            }
            lat
        });
        let mut lat: Vec<Duration> = futures::future::join_all(runs).await.into_iter().flatten().collect();
        let took = started.elapsed();
        lat.sort();
        let per_s = lat.len() as f64 / took.as_secs_f64();
        println!(
            "execute_code, {CLIENTS} clients x {per_client}, closed loop: {per_s:.0} executions/s (target >= 600), \
             p50 {:.2} ms, p99 {:.2} ms",
            ms(percentile(&lat, 0.5)),
            ms(percentile(&lat, 0.99))
        );

        // (b) offered load: at 200/s (the target), then at rates this machine can keep up with.
        let rates = std::env::var("SERVE_RATES").unwrap_or_else(|_| "200,100,50".into());
        for rate in rates.split(',').filter_map(|r| r.trim().parse::<f64>().ok()) {
            offered(&clients, &code, rate, per_client).await;
        }

        // (c) one client alone.
        let mut lat = Vec::with_capacity(per_client);
        for _ in 0..per_client {
            let t = Instant::now();
            clients[0].call_tool(code()).await.expect("execute_code");
            lat.push(t.elapsed());
        }
        lat.sort();
        println!(
            "execute_code, one client back to back: p50 {:.2} ms, p99 {:.2} ms",
            ms(percentile(&lat, 0.5)),
            ms(percentile(&lat, 0.99))
        );
        for c in clients {
            let _ = c.cancel().await;
        }
    }
}

/// The 16 clients together offer `rate` executions/s: client i starts at i/rate s and then
/// every 16/rate s (a late client does not catch up in a burst: the next one is simply late).
async fn offered(
    clients: &[rmcp::service::RunningService<rmcp::RoleClient, ()>],
    code: &impl Fn() -> CallToolRequestParams,
    rate: f64,
    per_client: usize,
) {
    let period = Duration::from_secs_f64(CLIENTS as f64 / rate);
    let started = tokio::time::Instant::now();
    let runs = clients.iter().enumerate().map(|(i, c)| async move {
        let mut lat = Vec::with_capacity(per_client);
        let mut late = 0usize;
        let first = started + Duration::from_secs_f64(i as f64 / rate);
        for k in 0..per_client {
            let due = first + period * k as u32;
            if tokio::time::Instant::now() > due {
                late += 1;
            }
            tokio::time::sleep_until(due).await;
            let t = Instant::now();
            let r = c.call_tool(code()).await.expect("execute_code");
            assert_ne!(r.is_error, Some(true), "{r:?}");
            lat.push(t.elapsed());
        }
        (lat, late)
    });
    let done = futures::future::join_all(runs).await;
    let took = started.elapsed();
    let late: usize = done.iter().map(|(_, l)| l).sum();
    let mut lat: Vec<Duration> = done.into_iter().flat_map(|(l, _)| l).collect();
    lat.sort();
    let per_s = lat.len() as f64 / took.as_secs_f64();
    let p50 = percentile(&lat, 0.5);
    // The target is stated at 200/s; lower rates are shown for comparison only.
    let verdict = if rate < 200.0 {
        String::new()
    } else {
        let met = p50 <= Duration::from_millis(5) && per_s >= 0.95 * rate;
        format!("; target (200/s served with p50 <= 5 ms): {}", if met { "met" } else { "not met" })
    };
    println!(
        "execute_code, {CLIENTS} clients offering {rate:.0}/s: {per_s:.0} executions/s done, p50 {:.2} ms, p99 {:.2} ms, \
         {late} of {} started late{verdict}",
        ms(p50),
        ms(percentile(&lat, 0.99)),
        lat.len(),
    );
}

async fn proxied_rows(url: &str, upstream_url: &str, proxied_calls: usize) {
    let direct = ().serve(StreamableHttpClientTransport::from_uri(upstream_url.to_string())).await.expect("connect");
    let via = client(url).await;
    // `add` does no work: the ratio is pure protocol overhead. `sleep 5 ms` stands for a tool
    // that does a little work (a fast local API), where what serve adds is what a user notices.
    let rows: [(&str, Value, usize); 2] =
        [("add", json!({"a": 1, "b": 2}), proxied_calls), ("sleep", json!({"ms": 5}), proxied_calls.min(200))];
    for (tool, a, n) in rows {
        let straight = || CallToolRequestParams::new(tool).with_arguments(args(a.clone()));
        let proxied = || CallToolRequestParams::new(format!("fixture_{tool}")).with_arguments(args(a.clone()));
        for _ in 0..10 {
            direct.call_tool(straight()).await.expect("direct");
            via.call_tool(proxied()).await.expect("proxied");
        }
        // Alternating rounds, so drift on a shared machine hits both sides alike.
        let (mut d, mut p) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..10 {
            let t = Instant::now();
            for _ in 0..n / 10 {
                direct.call_tool(straight()).await.expect("direct");
            }
            d += t.elapsed();
            let t = Instant::now();
            for _ in 0..n / 10 {
                via.call_tool(proxied()).await.expect("proxied");
            }
            p += t.elapsed();
        }
        let calls = (n / 10 * 10).max(1) as u32;
        let (d, p) = (d / calls, p / calls);
        println!(
            "{tool} {a}: straight to the fixture {:.3} ms, through serve {:.3} ms: {:.2}x, +{:.3} ms per call \
             (target <= 1.5x)",
            ms(d),
            ms(p),
            p.as_secs_f64() / d.as_secs_f64(),
            ms(p.saturating_sub(d))
        );
    }
    let _ = direct.cancel().await;
    let _ = via.cancel().await;
}

/// A client that keeps its HTTP connection (as httpx, browsers and curl do; rmcp's own client
/// opens one per request): raw JSON-RPC over one pooled reqwest connection, proxied `add`.
/// Without TCP_NODELAY on serve's sockets each answer waited 40 ms here (delayed ACK).
async fn keep_alive_row(url: &str, n: usize) {
    let http = reqwest::Client::new();
    let post = |body: Value, session: Option<String>| {
        let mut req = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        req.body(body.to_string()).send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
    let r = post(init, None).await.expect("initialize");
    let session = r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(String::from);
    r.bytes().await.expect("initialize answer");
    let r = post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), session.clone()).await;
    r.expect("initialized").bytes().await.expect("initialized answer");
    let mut lat = Vec::with_capacity(n);
    for i in 0..n + 10 {
        let call = json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
            "params": {"name": "fixture_add", "arguments": {"a": 1, "b": 2}}});
        let t = Instant::now();
        let body = post(call, session.clone()).await.expect("call").text().await.expect("answer");
        assert!(body.contains("sum"), "{body}");
        if i >= 10 {
            lat.push(t.elapsed());
        }
    }
    lat.sort();
    println!(
        "add through serve on one kept-alive connection: p50 {:.3} ms, p99 {:.3} ms",
        ms(percentile(&lat, 0.5)),
        ms(percentile(&lat, 0.99))
    );
}
