//! Code-execution benchmarks; prints its numbers (run with `cargo bench --bench runtime`).
//!
//! 1. Cold start: `agent exec` of a trivial TypeScript file vs `npx tsx` of the same file (the
//!    runtime the original design used), side by side. Target: agent ≥ 20× faster.
//! 2. Warm executions in one process, as `agent run` does them (a runtime is prepared while the
//!    model thinks; the bench leaves a short gap between runs for that). Target: p50 ≤ 5 ms.
//!    Back-to-back runs, which also pay for creating the next isolate, are shown too. Once with
//!    the runner in a worker process of the `agent` binary (what `agent` does), once on a thread
//!    of this process (library users): the difference is the worker process's per-script cost.
//! 3. Per-call overhead: `callMCPTool` in the isolate → bridge socket → manager, vs
//!    `McpManager::call_tool` from Rust, same fixture tool. Target: ≤ 1.3× the direct cost.
//! 4. Peak RSS of `agent exec` on a trivial script, `agent` and its script worker process
//!    together. Target: ≤ 30 MB (it was 60 MB before the isolate work). Also the largest
//!    proportional set size (PSS) seen while it runs, which counts the pages of the binary both
//!    processes map once instead of twice.
//! 5. Per-call cost of recording result shapes (`mcp.types.learn`): `McpManager::call_tool` of
//!    the fixture's `profile` (JSON text, no output schema) with and without the type recorder,
//!    and the flush that writes the registry. Target: < 5% of a fixture call.
//! 6. Per-call overhead of a result handler (compile + apply over a small result): jq in its
//!    kept worker process (target p50 ≤ 1 ms; the first call shows what starting a worker costs,
//!    which every call paid when workers were not kept), jq on a thread, JavaScript in a fresh
//!    isolate.
//! 7. Where a fresh isolate's time goes: the runner's steps for a trivial script timed one by
//!    one (`agent::runtime::phase_profile`): runtime creation with the snapshot restored, our
//!    finalize step, transpile, module load, evaluation, dispose. Medians and p95 per step.
//! 8. Per-read overhead of a resource: `readResource` in the isolate → bridge socket → manager,
//!    vs `McpManager::read_resource` from Rust, sequential, the same small text resource of npm's
//!    server-everything (skipped when npm cannot install it). Same target as 3: ≤ 1.3×.
//! 9. Compute-heavy scripts, `agent exec` vs `node` on the same JavaScript, whole process, wall
//!    and CPU (user + system of the process and its children): a JSON-heavy script (150k records,
//!    stringify ~18 MB, parse, filter, group; target ≤ 1.5× node) and sorting 1M numbers with a
//!    comparator (target ≤ 1.3× node), plus a `Float64Array` sort for comparison. Skipped, with a
//!    line saying so, when `node` is not on PATH.
//! 10. A session step: a trivial script run as the next step of a session (`Executor::session`,
//!     what `agent run` does with `mcp.code_execution.session: run`, and serve's named sessions),
//!     in the isolate the previous step left. Once in a worker process, once on a thread.
//!     Target: p50 ≤ 0.5 ms. The first and last tenth of the steps are shown too: a step must not
//!     get dearer as the session grows.
//!
//! Set BENCH_QUICK=1 for fewer iterations.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent::bridge::BridgeServer;
use agent::config::{Config, LoadOptions};
use agent::mcp::McpManager;
use agent::runtime::{ExecRequest, Executor, Isolation, Limits, Script};
use serde_json::json;

const TSX: (&str, &str) = ("tsx", "4.23.15");
/// The version the tests use (tests/it/support).
const SERVER_EVERYTHING: (&str, &str) = ("@modelcontextprotocol/server-everything", "2026.8.31");
const TRIVIAL: &str = "const greeting: string = 'hello';\nconsole.log(`${greeting} ${1 + 1}`);\n";

fn main() {
    // As the `agent` binary does first thing: the engine's bytecode cache in agent's own cache
    // directory, so the rows run in this process compile as the binary's workers do.
    // SAFETY: no other thread exists yet.
    unsafe { agent::runtime::use_private_bytecode_cache() };
    let quick = std::env::var_os("BENCH_QUICK").is_some();
    let dir = tempfile::Builder::new().prefix("agent-bench-").tempdir().expect("tempdir");
    let script = dir.path().join("trivial.ts");
    std::fs::write(&script, TRIVIAL).expect("write script");
    std::fs::create_dir_all(dir.path().join("home")).expect("home");

    // BENCH_ONLY=1,3 runs only those sections.
    let only = std::env::var("BENCH_ONLY").ok();
    let run = |n: &str| only.as_deref().is_none_or(|o| o.split(',').any(|x| x.trim() == n));

    println!("== agent runtime benchmarks ({} build)", if cfg!(debug_assertions) { "debug" } else { "release" });
    if run("1") {
        cold_start(dir.path(), &script, if quick { 5 } else { 20 });
    }
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    if run("2") {
        let n = if quick { 30 } else { 200 };
        tokio.block_on(warm_executions(dir.path(), n, Isolation::Process(agent_bin()), "in a worker process"));
        tokio.block_on(warm_executions(dir.path(), n, Isolation::Thread, "on a thread"));
    }
    if run("3") {
        tokio.block_on(call_overhead(dir.path(), if quick { 300 } else { 2000 }));
    }
    if run("4") {
        peak_rss(dir.path(), &script, if quick { 3 } else { 10 });
    }
    if run("5") {
        tokio.block_on(recording_cost(dir.path(), if quick { 300 } else { 2000 }));
    }
    if run("6") {
        tokio.block_on(handler_overhead(dir.path(), if quick { 10 } else { 50 }));
    }
    if run("7") {
        phases(if quick { 30 } else { 200 });
    }
    if run("8") {
        tokio.block_on(read_overhead(dir.path(), if quick { 200 } else { 1000 }));
    }
    if run("9") {
        heavy_scripts(dir.path(), if quick { 2 } else { 5 });
    }
    if run("10") {
        let n = if quick { 100 } else { 1000 };
        tokio.block_on(session_steps(dir.path(), n, Isolation::Process(agent_bin()), "in a worker process"));
        tokio.block_on(session_steps(dir.path(), n, Isolation::Thread, "on a thread"));
    }
}

/// Section 10: steps of one session, back to back, each a trivial script (which declares its
/// `greeting` again: a later step's own binding shadows the carried one).
async fn session_steps(dir: &Path, n: usize, isolation: Isolation, label: &str) {
    println!("\n-- 10. session steps, {label} ({n} steps of a trivial script in one session)");
    let executor = Executor::session(&Limits::default(), isolation);
    let first = executor.execute(request(dir, "let steps = 0;\n", None)).await;
    assert!(first.error.is_none(), "{:?}", first.error);
    let step = format!("steps += 1;\n{TRIVIAL}");
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        let o = executor.execute(request(dir, &step, None)).await;
        times.push(start.elapsed());
        assert_eq!(o.stdout, "hello 2\n", "{:?}", o.error);
        assert!(o.session.is_none(), "the session ended: {:?}", o.session);
    }
    let last = executor.execute(request(dir, "console.log(steps);\n", None)).await;
    assert_eq!(last.stdout, format!("{n}\n"), "every step ran in the same session");
    let tenth = (n / 10).max(1);
    let (first, _, _) = stats(times[..tenth].to_vec());
    let (last, _, _) = stats(times[n - tenth..].to_vec());
    let (p50, p95, max) = stats(times);
    println!("a step in the session's isolate  p50 {}  p95 {}  max {}", ms(p50), ms(p95), ms(max));
    println!("the first {tenth} steps p50 {}, the last {tenth} p50 {}", ms(first), ms(last));
    println!("target p50 <= 0.5 ms: {}", verdict(p50 <= Duration::from_micros(500)));
}

/// The scripts of section 9: plain JavaScript, valid TypeScript too, deterministic output.
const HEAVY: [(&str, &str); 3] = [
    (
        "JSON-heavy (150k records)",
        "const recs = [];\n\
         for (let i = 0; i < 150000; i++) recs.push({ id: i, name: 'user-' + i, email: 'user' + i + '@example.com', \
         group: 'g' + (i % 100), score: (i * 7919) % 1000, tags: ['a' + (i % 7), 'b' + (i % 13)], active: i % 3 === 0 });\n\
         const text = JSON.stringify(recs);\n\
         const back = JSON.parse(text);\n\
         const groups = {};\n\
         for (const r of back) if (r.active && r.score > 500) (groups[r.group] ??= []).push(r.id);\n\
         const sizes = Object.values(groups).map((g) => g.length);\n\
         console.log(text.length, Object.keys(groups).length, sizes.reduce((a, b) => a + b, 0));\n",
    ),
    (
        "sort 1M numbers (comparator)",
        "const a = new Array(1000000);\n\
         let x = 12345;\n\
         for (let i = 0; i < a.length; i++) { x = (x * 48271) % 2147483647; a[i] = x / 2147483647; }\n\
         a.sort((p, q) => p - q);\n\
         let ok = true;\n\
         for (let i = 1; i < a.length; i++) if (a[i - 1] > a[i]) ok = false;\n\
         console.log(ok, a[500000].toFixed(9));\n",
    ),
    (
        "sort 1M numbers (Float64Array)",
        "const a = new Float64Array(1000000);\n\
         let x = 12345;\n\
         for (let i = 0; i < a.length; i++) { x = (x * 48271) % 2147483647; a[i] = x / 2147483647; }\n\
         a.sort();\n\
         console.log(a[0] <= a[1], a[500000].toFixed(9));\n",
    ),
];

/// CPU time (user + system) of this process's waited-for children so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Runs `cmd` n times; the wall and CPU time of each run, and its stdout (the same every run).
///
/// The CPU time is the whole process tree's: `agent` runs scripts in a worker process it kills
/// once answered and does not wait for, so the worker's time would never reach this process's
/// children's total. While this runs, this process adopts such orphans (a child subreaper) and
/// waits for them after each run.
fn timed(n: usize, mut cmd: impl FnMut() -> Command) -> (Vec<Duration>, Vec<Duration>, String) {
    let (mut wall, mut cpu, mut output) = (Vec::new(), Vec::new(), String::new());
    // SAFETY: prctl with integer arguments only changes this process's attributes.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    for _ in 0..n {
        let mut c = cmd();
        let before = children_cpu();
        let start = Instant::now();
        let out = c.stdout(Stdio::piped()).stderr(Stdio::piped()).output().expect("run");
        wall.push(start.elapsed());
        reap_orphans();
        cpu.push(children_cpu().saturating_sub(before));
        assert!(out.status.success(), "{c:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        output = String::from_utf8_lossy(&out.stdout).into_owned();
    }
    // SAFETY: as above.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) };
    (wall, cpu, output)
}

/// Waits for the children this process adopted (a run's killed worker), for up to 2 s: the
/// command itself was waited for, so every child left is one.
fn reap_orphans() {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let mut status = 0;
        // SAFETY: waitpid only writes the status it is given.
        match unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } {
            0 if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            pid if pid > 0 => {}
            _ => return,
        }
    }
}

/// Section 9: compute-heavy scripts in `agent exec` and in `node`.
fn heavy_scripts(dir: &Path, n: usize) {
    println!("\n-- 9. compute-heavy scripts, agent exec vs node ({n} runs each, whole process, p50)");
    let node = Command::new("node").arg("--version").output();
    let Some(node) = node.ok().filter(|o| o.status.success()) else {
        println!("skipped (node is not on PATH)");
        return;
    };
    println!("node {}", String::from_utf8_lossy(&node.stdout).trim());
    for (i, (name, code)) in HEAVY.iter().enumerate() {
        let ts = dir.join(format!("heavy{i}.ts"));
        let mjs = dir.join(format!("heavy{i}.mjs"));
        std::fs::write(&ts, code).expect("write script");
        std::fs::write(&mjs, code).expect("write script");
        let (aw, ac, aout) = timed(n, || {
            let mut c = Command::new(agent_bin());
            c.args(["exec", "--memory-limit", "1GB", "--timeout", "120s"]).arg(&ts);
            hermetic(&mut c, dir);
            c
        });
        let (nw, nc, nout) = timed(n, || {
            let mut c = Command::new("node");
            c.arg(&mjs);
            hermetic(&mut c, dir);
            c
        });
        assert_eq!(aout, nout, "{name}: agent and node disagree");
        let (aw, ac, nw, nc) = (stats(aw).0, stats(ac).0, stats(nw).0, stats(nc).0);
        let r = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
        println!(
            "{name:<32} agent wall {} cpu {}  node wall {} cpu {}  ratio wall {:.2}x cpu {:.2}x",
            ms(aw),
            ms(ac),
            ms(nw),
            ms(nc),
            r(aw, nw),
            r(ac, nc)
        );
    }
}

/// Section 7: the steps of a fresh isolate, each timed on its own.
fn phases(n: usize) {
    println!(
        "\n-- 7. a fresh isolate, step by step ({n} isolates, a trivial module each, at most 64 per thread as the runner makes them)"
    );
    // The first pays for loading (or making) the snapshot: not counted.
    agent::runtime::phase_profile(1).expect("phase profile");
    let runs = agent::runtime::phase_profile(n).expect("phase profile");
    let mut total = Vec::with_capacity(n);
    for (i, name) in agent::runtime::PHASES.iter().enumerate() {
        let (p50, p95, _) = stats(runs.iter().map(|r| r[i]).collect());
        println!("{name:<18} p50 {}  p95 {}", ms(p50), ms(p95));
    }
    for r in &runs {
        total.push(r.iter().sum());
    }
    let (p50, p95, _) = stats(total);
    println!("{:<18} p50 {}  p95 {}", "all steps", ms(p50), ms(p95));
    let (p50, p95, _) = stats(agent::runtime::engine_floor(n).expect("engine floor"));
    println!(
        "the engine alone (its isolate + context, made and dropped; no deno_core, snapshot or bootstrap)  p50 {}  p95 {}",
        ms(p50),
        ms(p95)
    );
}

/// Section 8: `readResource` from a script vs `McpManager::read_resource`, per read, sequential.
async fn read_overhead(dir: &Path, n: usize) {
    println!("\n-- 8. per-read overhead of a resource, server-everything ({n} sequential reads per measurement)");
    let Some(bin) = npm_dir(SERVER_EVERYTHING, "mcp-server-everything") else {
        println!("skipped (npm or {} is not available)", SERVER_EVERYTHING.0);
        return;
    };
    let bin = bin.join("node_modules/.bin/mcp-server-everything");
    let yaml = format!(
        "mcp:\n  servers:\n    everything:\n      command: {:?}\n      args: [\"stdio\"]\n      connect_timeout: 60s\n",
        bin.display().to_string()
    );
    std::fs::write(dir.join("agent.yaml"), yaml).expect("agent.yaml");
    let opts = LoadOptions { project_dir: Some(dir.to_path_buf()), skip_user_config: true, ..Default::default() };
    let mut config = Config::load_with_env(&opts, &Default::default()).expect("config");
    config.mcp.code_execution.workspace_dir = dir.join(".kodelet/mcp");
    let manager = Arc::new(McpManager::new(&config));
    let bridge = BridgeServer::start(manager.clone()).await.expect("bridge");
    let executor = Executor::new();
    let uri = "demo://resource/dynamic/text/1";
    for _ in 0..50 {
        manager.read_resource("everything", uri).await.expect("direct read");
    }
    let script = format!(
        "const t = performance.now();\n\
         for (let i = 0; i < {n}; i++) await readResource('everything', {uri:?});\n\
         export default performance.now() - t;\n"
    );
    let run_script = || {
        let req = request(dir, &script, Some(bridge.endpoint().clone()));
        let executor = &executor;
        async move {
            let o = executor.execute(req).await;
            assert!(o.error.is_none(), "{:?}", o.error);
            o.value.and_then(|v| v.as_f64()).expect("elapsed ms")
        }
    };
    run_script().await;
    let (mut direct_ms, mut script_ms) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..3 {
        let start = Instant::now();
        for _ in 0..n {
            manager.read_resource("everything", uri).await.expect("direct read");
        }
        direct_ms = direct_ms.min(start.elapsed().as_secs_f64() * 1000.0);
        script_ms = script_ms.min(run_script().await);
    }
    let per = |total: f64| format!("{:>6.0} reads/s ({:.3} ms/read)", n as f64 / total * 1000.0, total / n as f64);
    println!("sequential");
    println!("  direct McpManager::read_resource        {}", per(direct_ms));
    println!(
        "  readResource in the isolate via bridge  {}   {:.2}x direct; target <= 1.3x: {}",
        per(script_ms),
        script_ms / direct_ms,
        verdict(script_ms / direct_ms <= 1.3)
    );
    bridge.stop().await;
    manager.shutdown().await;
}

/// Milliseconds per call of `n` sequential `profile` calls.
async fn profile_calls(m: &McpManager, n: usize) -> f64 {
    let start = Instant::now();
    for i in 0..n {
        let args = json!({ "i": i }).as_object().cloned().expect("object");
        m.call_tool("fixture", "profile", args).await.expect("profile");
    }
    start.elapsed().as_secs_f64() * 1000.0 / n as f64
}

async fn recording_cost(dir: &Path, n: usize) {
    println!(
        "\n-- 5. per-call cost of recording result shapes, fixture `profile` (20 alternating rounds of {} calls, medians)",
        n / 4
    );
    let yaml = format!("mcp:\n  servers:\n    fixture:\n      command: {:?}\n", fixture_bin().display().to_string());
    std::fs::write(dir.join("agent.yaml"), yaml).expect("agent.yaml");
    let opts = LoadOptions { project_dir: Some(dir.to_path_buf()), skip_user_config: true, ..Default::default() };
    let mut config = Config::load_with_env(&opts, &Default::default()).expect("config");
    config.mcp.code_execution.workspace_dir = dir.join(".kodelet/mcp-types");
    // One manager and one server process for both measurements (two processes differ by more
    // than what is measured): "off" passes no call on to the recorder.
    struct Switch {
        on: std::sync::atomic::AtomicBool,
        recorder: agent::learn::Recorder,
    }
    impl agent::mcp::CallObserver for Switch {
        fn finished(&self, tool: &agent::mcp::ToolInfo, result: &rmcp::model::CallToolResult) {
            if self.on.load(std::sync::atomic::Ordering::Relaxed) {
                agent::mcp::CallObserver::finished(&self.recorder, tool, result);
            }
        }
    }
    let learning = McpManager::new(&config);
    let switch = Arc::new(Switch {
        on: false.into(),
        recorder: agent::learn::Recorder::start(
            agent::learn::registry_path(&config),
            agent::learn::thresholds(&config),
        ),
    });
    learning.add_observer(switch.clone());
    profile_calls(&learning, n).await;
    // Many short alternating rounds, medians: this VM's per-call time drifts by more than the
    // effect between runs of a few seconds.
    let (mut offs, mut ons) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        switch.on.store(false, std::sync::atomic::Ordering::Relaxed);
        offs.push(profile_calls(&learning, n / 4).await);
        switch.on.store(true, std::sync::atomic::Ordering::Relaxed);
        ons.push(profile_calls(&learning, n / 4).await);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (off, on) = (median(&mut offs), median(&mut ons));
    let start = Instant::now();
    switch.recorder.flush();
    let flush = start.elapsed();
    let ratio = (on - off) / off;
    println!("learn off  {off:.4} ms per call");
    println!("learn on   {on:.4} ms per call   {:+.1}%", ratio * 100.0);
    println!("flush of the last batch into type_registry.json: {}", ms(flush));
    println!("target < 5% of a fixture call: {}", verdict(ratio < 0.05));
    learning.shutdown().await;
    switch.recorder.finish();
}

/// Section 6: what a result handler adds to one tool call (compile before + apply after), over a
/// small result: jq in its worker process (the default), jq on a thread, JavaScript in a fresh isolate.
async fn handler_overhead(dir: &Path, n: usize) {
    use agent::handler::{Handler, HandlerRunner, Language, jq::Isolation};
    use rmcp::model::{CallToolResult, ContentBlock};
    println!("\n-- 6. per-call overhead of a result handler ({n} runs each, compile + apply, small result)");
    let mut config = Config::default();
    config.mcp.code_execution.workspace_dir = dir.join(".kodelet/mcp");
    let result = CallToolResult::success(vec![ContentBlock::text(r#"{"items":[{"n":1},{"n":2},{"n":3}]}"#)]);
    let cases = [
        ("jq, worker process (default)", Language::Jq, "[.items[].n] | add", Isolation::Process(agent_bin())),
        ("jq, thread (no crash isolation)", Language::Jq, "[.items[].n] | add", Isolation::Thread),
        (
            "JavaScript, fresh isolate",
            Language::JavaScript,
            "tool_output.items.reduce((a, i) => a + i.n, 0)",
            Isolation::Thread,
        ),
    ];
    for (label, language, script, isolation) in cases {
        let runner = HandlerRunner::from_config(&config, None).expect("runner").with_isolation(isolation);
        let handler = Handler { language, script: script.to_string() };
        let mut times = Vec::with_capacity(n);
        let mut first = Duration::ZERO;
        for i in 0..=n {
            if language == Language::JavaScript {
                // The gap stands for the tool call, during which the next isolate is prepared.
                tokio::time::sleep(Duration::from_millis(60)).await;
            }
            let start = Instant::now();
            let compiled = runner.compile(&handler).expect("compile");
            let v = runner.apply(&compiled, "s", "t", &result).await.expect("apply");
            if i > 0 {
                times.push(start.elapsed());
            } else {
                first = start.elapsed();
            }
            assert_eq!(v, Some(json!(6)));
        }
        let (p50, p95, max) = stats(times);
        // The first call starts the jq worker (what every call paid before workers were kept).
        println!("{label:<34} p50 {}  p95 {}  max {}  first call {}", ms(p50), ms(p95), ms(max), ms(first));
    }
}

fn agent_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent"))
}

fn fixture_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-fixture-server"))
}

fn hermetic(cmd: &mut Command, dir: &Path) {
    cmd.current_dir(dir).env("HOME", dir.join("home")).env_remove("RUST_LOG").stdin(Stdio::null());
    for (k, _) in std::env::vars() {
        if k.starts_with("AGENT_") {
            cmd.env_remove(k);
        }
    }
    // The bench's own project: trusted, as the user would trust theirs.
    cmd.env("AGENT_TRUST_PROJECT", "1");
}

fn time_runs(n: usize, mut make: impl FnMut() -> Command) -> Vec<Duration> {
    (0..n)
        .map(|_| {
            let mut cmd = make();
            let start = Instant::now();
            let out = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).output().expect("run");
            let took = start.elapsed();
            assert!(out.status.success(), "{:?} failed: {}", cmd, String::from_utf8_lossy(&out.stderr));
            assert_eq!(String::from_utf8_lossy(&out.stdout), "hello 2\n");
            took
        })
        .collect()
}

fn stats(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    let p = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (p(0.5), p(0.95), v[v.len() - 1])
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Installs tsx once into `<target>/node-tools` (like the tests do for npm packages).
fn tsx_dir() -> Option<PathBuf> {
    npm_dir(TSX, "tsx")
}

/// Installs the npm package `pkg` once into `<target>/node-tools`, the directory of its
/// `node_modules` (`None` when npm cannot).
fn npm_dir(pkg: (&str, &str), bin: &str) -> Option<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("node-tools").join(format!("{}@{}", pkg.0.replace('/', "+"), pkg.1));
    if dir.join("node_modules/.bin").join(bin).exists() {
        return Some(dir);
    }
    std::fs::create_dir_all(&dir).ok()?;
    let status = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
        .arg(&dir)
        .arg(format!("{}@{}", pkg.0, pkg.1))
        .status()
        .ok()?;
    (status.success() && dir.join("node_modules/.bin").join(bin).exists()).then_some(dir)
}

fn cold_start(dir: &Path, script: &Path, n: usize) {
    println!("\n-- 1. cold start of a trivial script ({n} runs each, wall clock per process)");
    let agent = stats(time_runs(n, || {
        let mut c = Command::new(agent_bin());
        c.arg("exec").arg(script);
        hermetic(&mut c, dir);
        c
    }));
    println!("agent exec trivial.ts        p50 {}  p95 {}  max {}", ms(agent.0), ms(agent.1), ms(agent.2));
    let Some(tsx) = tsx_dir() else {
        println!("npx tsx: skipped (npm or the tsx package is not available)");
        return;
    };
    let npx = stats(time_runs(n, || {
        let mut c = Command::new("npx");
        c.args(["--no-install", "tsx"]).arg(script);
        hermetic(&mut c, dir);
        // npx resolves tsx from the install prefix, as from a project's node_modules.
        c.current_dir(&tsx);
        c
    }));
    println!("npx tsx trivial.ts           p50 {}  p95 {}  max {}", ms(npx.0), ms(npx.1), ms(npx.2));
    let direct = stats(time_runs(n, || {
        let mut c = Command::new(tsx.join("node_modules/.bin/tsx"));
        c.arg(script);
        hermetic(&mut c, dir);
        c
    }));
    println!("tsx trivial.ts (no npx)      p50 {}  p95 {}  max {}", ms(direct.0), ms(direct.1), ms(direct.2));
    let ratio = npx.0.as_secs_f64() / agent.0.as_secs_f64();
    let ratio_direct = direct.0.as_secs_f64() / agent.0.as_secs_f64();
    println!(
        "agent exec is {ratio:.1}x faster than npx tsx ({ratio_direct:.1}x than tsx without npx); target >= 20x: {}",
        verdict(ratio >= 20.0)
    );
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

fn request(dir: &Path, code: &str, bridge: Option<agent::bridge::BridgeEndpoint>) -> ExecRequest {
    ExecRequest {
        workspace: dir.join(".kodelet/mcp"),
        script: Script::Inline(code.to_string()),
        limits: Limits::default(),
        bridge,
    }
}

async fn warm_executions(dir: &Path, n: usize, isolation: Isolation, label: &str) {
    println!("\n-- 2. warm executions in one process, {label} ({n} runs, Executor::execute of a trivial script)");
    let executor = Executor::with_isolation(&Limits::default(), isolation);
    // The first one waits for the thread's first runtime.
    let first = Instant::now();
    let o = executor.execute(request(dir, TRIVIAL, None)).await;
    assert!(o.error.is_none(), "{:?}", o.error);
    println!("first execution (includes the first isolate's creation): {}", ms(first.elapsed()));

    let mut gapped = Vec::with_capacity(n);
    for _ in 0..n {
        // The gap stands for the model's turn, during which the next isolate is prepared.
        tokio::time::sleep(Duration::from_millis(60)).await;
        let start = Instant::now();
        let o = executor.execute(request(dir, TRIVIAL, None)).await;
        gapped.push(start.elapsed());
        assert_eq!(o.stdout, "hello 2\n");
    }
    let (p50, p95, max) = stats(gapped);
    println!("with a runtime prepared ahead  p50 {}  p95 {}  max {}", ms(p50), ms(p95), ms(max));
    println!("target p50 <= 5 ms: {}", verdict(p50 <= Duration::from_millis(5)));

    let mut back_to_back = Vec::with_capacity(n);
    for _ in 0..n.min(50) {
        let start = Instant::now();
        let o = executor.execute(request(dir, TRIVIAL, None)).await;
        back_to_back.push(start.elapsed());
        assert!(o.error.is_none());
    }
    let (p50, p95, max) = stats(back_to_back);
    println!(
        "back to back (each waits for the next isolate's creation)  p50 {}  p95 {}  max {}",
        ms(p50),
        ms(p95),
        ms(max)
    );
}

async fn call_overhead(dir: &Path, n: usize) {
    println!("\n-- 3. per-call overhead, fixture `echo` ({n} calls per measurement)");
    let yaml = format!("mcp:\n  servers:\n    fixture:\n      command: {:?}\n", fixture_bin().display().to_string());
    std::fs::write(dir.join("agent.yaml"), yaml).expect("agent.yaml");
    let opts = LoadOptions { project_dir: Some(dir.to_path_buf()), skip_user_config: true, ..Default::default() };
    let mut config = Config::load_with_env(&opts, &Default::default()).expect("config");
    config.mcp.code_execution.workspace_dir = dir.join(".kodelet/mcp");
    let manager = Arc::new(McpManager::new(&config));
    let bridge = BridgeServer::start(manager.clone()).await.expect("bridge");
    let executor = Executor::new();
    let args = json!({"message": "ping"}).as_object().cloned().expect("object");

    // Warm up both paths (server start, connections, JIT-less interpreter caches).
    for _ in 0..50 {
        manager.call_tool("fixture", "echo", args.clone()).await.expect("direct call");
    }
    let script = |n: usize, concurrent: bool| {
        let body = if concurrent {
            format!(
                "const all = Array.from({{ length: {n} }}, () => callMCPTool('fixture', 'echo', {{ message: 'ping' }}));\n\
                 await Promise.all(all);"
            )
        } else {
            format!("for (let i = 0; i < {n}; i++) await callMCPTool('fixture', 'echo', {{ message: 'ping' }});")
        };
        format!("const t = performance.now();\n{body}\nexport default performance.now() - t;\n")
    };
    let run_script = |code: String| {
        let req = request(dir, &code, Some(bridge.endpoint().clone()));
        let executor = &executor;
        async move {
            let o = executor.execute(req).await;
            assert!(o.error.is_none(), "{:?}", o.error);
            o.value.and_then(|v| v.as_f64()).expect("elapsed ms")
        }
    };
    run_script(script(50, false)).await;

    // The socket hop without MCP: GET /health round trips.
    let client = agent::bridge::BridgeClient::new(bridge.endpoint().clone());
    let start = Instant::now();
    for _ in 0..n {
        client.health().await.expect("health");
    }
    println!("bridge GET /health round trip (no MCP): {:.3} ms", start.elapsed().as_secs_f64() * 1000.0 / n as f64);

    for concurrent in [false, true] {
        let label = if concurrent { "16 in flight (Promise.all, default cap)" } else { "sequential" };
        let mut direct_ms = Vec::new();
        let mut bridge_ms = Vec::new();
        let mut client_ms = Vec::new();
        for _ in 0..3 {
            let start = Instant::now();
            if concurrent {
                let slots = Arc::new(tokio::sync::Semaphore::new(16));
                let calls = (0..n).map(|_| {
                    let (m, a, s) = (manager.clone(), args.clone(), slots.clone());
                    async move {
                        let _slot = s.acquire().await;
                        m.call_tool("fixture", "echo", a).await
                    }
                });
                for r in futures::future::join_all(calls).await {
                    r.expect("direct call");
                }
            } else {
                for _ in 0..n {
                    manager.call_tool("fixture", "echo", args.clone()).await.expect("direct call");
                }
            }
            direct_ms.push(start.elapsed().as_secs_f64() * 1000.0);
            bridge_ms.push(run_script(script(n, concurrent)).await);
            // The socket hop alone: the bridge's Rust client, no isolate.
            let client = agent::bridge::BridgeClient::new(bridge.endpoint().clone());
            let body = bytes::Bytes::from(r#"{"server":"fixture","tool":"echo","arguments":{"message":"ping"}}"#);
            let start = Instant::now();
            if concurrent {
                let slots = Arc::new(tokio::sync::Semaphore::new(16));
                let calls = (0..n).map(|_| {
                    let (c, b, s) = (client.clone(), body.clone(), slots.clone());
                    async move {
                        let _slot = s.acquire().await;
                        c.call_bytes(b).await
                    }
                });
                for r in futures::future::join_all(calls).await {
                    r.expect("bridge call");
                }
            } else {
                for _ in 0..n {
                    client.call_bytes(body.clone()).await.expect("bridge call");
                }
            }
            client_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        let best = |v: &[f64]| v.iter().cloned().fold(f64::INFINITY, f64::min);
        let (d, b, c) = (best(&direct_ms), best(&bridge_ms), best(&client_ms));
        // The isolate's setting without the isolate: its client on a current-thread runtime of
        // a thread of its own.
        let own_thread = if concurrent {
            None
        } else {
            let endpoint = bridge.endpoint().clone();
            let body = bytes::Bytes::from(r#"{"server":"fixture","tool":"echo","arguments":{"message":"ping"}}"#);
            let t = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
                rt.block_on(async {
                    let client = agent::bridge::LocalBridgeClient::new(endpoint);
                    let mut best = f64::INFINITY;
                    for _ in 0..3 {
                        let start = Instant::now();
                        for _ in 0..n {
                            client.call_bytes(body.clone()).await.expect("bridge call");
                        }
                        best = best.min(start.elapsed().as_secs_f64() * 1000.0);
                    }
                    best
                })
            });
            Some(t.join().expect("client thread"))
        };
        let per = |total: f64| format!("{:>6.0} calls/s ({:.3} ms/call)", n as f64 / total * 1000.0, total / n as f64);
        println!("{label}");
        println!("  direct McpManager::call_tool          {}", per(d));
        println!("  bridge, pooled Rust client            {}   {:.2}x direct", per(c), c / d);
        if let Some(o) = own_thread {
            println!("  bridge, the isolate's client alone    {}   {:.2}x direct", per(o), o / d);
        }
        println!(
            "  callMCPTool in the isolate via bridge  {}   {:.2}x direct; target <= 1.3x: {}",
            per(b),
            b / d,
            verdict(b / d <= 1.3)
        );
    }
    bridge.stop().await;
    manager.shutdown().await;
}

/// The high-water mark (VmHWM) of `pid` in KiB, if it is still there.
fn hwm_kb(pid: u32) -> Option<u64> {
    kb_field(&format!("/proc/{pid}/status"), "VmHWM:")
}

/// The proportional set size: each page shared by n processes counts 1/n in each, so the pages of
/// the binary `agent` and its worker both map count once in their sum (VmHWM counts them twice).
fn pss_kb(pid: u32) -> Option<u64> {
    kb_field(&format!("/proc/{pid}/smaps_rollup"), "Pss:")
}

fn kb_field(path: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| l.strip_prefix(field)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The children of `pid` (their pids), from `/proc/<pid>/task/*/children`.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| c.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<u32>>())
        .collect()
}

fn peak_rss(dir: &Path, script: &Path, n: usize) {
    println!("\n-- 4. peak RSS of `agent exec trivial.ts` ({n} runs)");
    // The kernel's rusage for a child spawned from this (large) process also counts the pages
    // it shared with us before exec; each process's own high-water mark (VmHWM, reset at exec)
    // is what we want: `agent`'s and its script worker's, polled until they exit, added up.
    let mut peaks = Vec::new();
    let mut parts = Vec::new();
    let mut pss_peaks = Vec::new();
    for _ in 0..n {
        let mut c = Command::new(agent_bin());
        c.arg("exec").arg(script);
        hermetic(&mut c, dir);
        let mut child = c.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn");
        let mut agent_kb = 0u64;
        let mut workers: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
        let mut pss_peak = 0u64;
        loop {
            agent_kb = agent_kb.max(hwm_kb(child.id()).unwrap_or(0));
            let mut pss = pss_kb(child.id()).unwrap_or(0);
            for w in children(child.id()) {
                // A worker `agent exec` forks keeps `agent`'s command line; it is named instead.
                let is_worker = ["cmdline", "comm"].iter().any(|f| {
                    std::fs::read(format!("/proc/{w}/{f}"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains(agent::runtime::WORKER_ARG))
                });
                if is_worker && let Some(kb) = hwm_kb(w) {
                    let e = workers.entry(w).or_default();
                    *e = (*e).max(kb);
                    pss += pss_kb(w).unwrap_or(0);
                }
            }
            pss_peak = pss_peak.max(pss);
            if child.try_wait().expect("wait").is_some() {
                break;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        assert!(child.wait().expect("wait").success(), "agent exec failed");
        let worker_kb: u64 = workers.values().sum();
        peaks.push((agent_kb + worker_kb) as f64 / 1024.0);
        pss_peaks.push(pss_peak as f64 / 1024.0);
        parts.push((agent_kb as f64 / 1024.0, worker_kb as f64 / 1024.0));
    }
    parts.sort_by(|a, b| (a.0 + a.1).total_cmp(&(b.0 + b.1)));
    peaks.sort_by(f64::total_cmp);
    let max = peaks[peaks.len() - 1];
    let (a, w) = parts[parts.len() / 2];
    println!(
        "peak RSS (VmHWM, agent + worker)  median {:.1} MB ({a:.1} + {w:.1})  max {:.1} MB; target <= 30 MB: {}",
        peaks[peaks.len() / 2],
        max,
        verdict(max <= 30.0)
    );
    pss_peaks.sort_by(f64::total_cmp);
    println!(
        "largest PSS seen (agent + worker, sampled every 0.5 ms; pages both map count once)  median {:.1} MB  max {:.1} MB",
        pss_peaks[pss_peaks.len() / 2],
        pss_peaks[pss_peaks.len() - 1]
    );
}
