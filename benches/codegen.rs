//! `cargo bench --bench codegen`: time `codegen::generate` on 1,000 tools.
//!
//! The tools are synthesised from the real GitHub MCP server corpus (tests/data): 9 servers
//! `github-0` … `github-8`, each with the 117 tools (descriptions perturbed per server), cut to
//! 1,000. Measured: a fresh generation into an empty directory, and a re-run with nothing
//! changed (every tool file checked against the render cache, none written). Prints min /
//! median / max over the iterations
//! (`CODEGEN_BENCH_ITERS`, default 15) and the targets (≤ 300 ms fresh, ≤ 50 ms re-run).

use std::path::Path;
use std::time::{Duration, Instant};

use agent::codegen::{GenerateOptions, generate, load_tools_file};
use agent::mcp::ToolInfo;

const TOOLS: usize = 1000;

fn synthesise() -> Vec<ToolInfo> {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/github-mcp-server.json");
    let base = load_tools_file(&corpus, Some("github")).expect("the GitHub corpus loads");
    let mut tools = Vec::with_capacity(TOOLS);
    'outer: for server in 0.. {
        for t in &base {
            if tools.len() == TOOLS {
                break 'outer;
            }
            let mut t = t.clone();
            t.server = format!("github-{server}");
            t.description = t.description.map(|d| format!("{d} (mirror {server})"));
            tools.push(t);
        }
    }
    tools
}

fn stats(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    (v[0], v[v.len() / 2], v[v.len() - 1])
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let iters: usize = std::env::var("CODEGEN_BENCH_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(15).max(1);
    let tools = synthesise();
    let servers: std::collections::BTreeSet<&str> = tools.iter().map(|t| t.server.as_str()).collect();
    let root = tempfile::tempdir().expect("temp dir");

    let mut fresh = Vec::new();
    let mut last_dir = root.path().join("run-0");
    let mut files = 0;
    for i in 0..iters {
        let dir = root.path().join(format!("run-{i}"));
        let opts =
            GenerateOptions { output_dir: dir.clone(), clean: false, only_servers: None, learned: Default::default() };
        let start = Instant::now();
        let report = generate(&tools, &opts).expect("generation succeeds");
        fresh.push(start.elapsed());
        assert_eq!(report.tools, TOOLS);
        files = report.files_written;
        last_dir = dir;
    }

    let mut rerun = Vec::new();
    let opts = GenerateOptions { output_dir: last_dir, clean: false, only_servers: None, learned: Default::default() };
    for _ in 0..iters {
        let start = Instant::now();
        let report = generate(&tools, &opts).expect("generation succeeds");
        rerun.push(start.elapsed());
        assert_eq!(report.files_written, 0, "nothing changed, nothing written");
    }

    // For comparison: converting and rendering every tool file (what a re-run avoids through
    // the render cache), and serialising the tool list for the manifest.
    let mut render = Vec::new();
    let mut manifest = Vec::new();
    for _ in 0..iters {
        let start = Instant::now();
        let mut by_server: std::collections::BTreeMap<&str, Vec<&ToolInfo>> = Default::default();
        for t in &tools {
            by_server.entry(t.server.as_str()).or_default().push(t);
        }
        for list in by_server.values() {
            let names = agent::codegen::tool_names(list.iter().map(|t| t.name.as_str()));
            for t in list {
                agent::codegen::render::tool_file(t, &names[&t.name], None).expect("renders");
            }
        }
        render.push(start.elapsed());
        let start = Instant::now();
        let _ = serde_json::to_string_pretty(&tools).expect("serialises");
        manifest.push(start.elapsed());
    }

    let (fmin, fmed, fmax) = stats(fresh);
    let (rmin, rmed, rmax) = stats(rerun);
    println!("codegen: {TOOLS} tools on {} servers, {files} files, {iters} iterations", servers.len());
    println!(
        "  fresh generation   min {:>9}  median {:>9}  max {:>9}   (target ≤ 300 ms: {})",
        ms(fmin),
        ms(fmed),
        ms(fmax),
        if fmed <= Duration::from_millis(300) { "met" } else { "MISSED" }
    );
    println!(
        "  unchanged re-run   min {:>9}  median {:>9}  max {:>9}   (target ≤ 50 ms: {})",
        ms(rmin),
        ms(rmed),
        ms(rmax),
        if rmed <= Duration::from_millis(50) { "met" } else { "MISSED" }
    );
    let (min, med, max) = stats(render);
    println!("  (render all tools) min {:>9}  median {:>9}  max {:>9}", ms(min), ms(med), ms(max));
    let (min, med, max) = stats(manifest);
    println!("  (tools to JSON)    min {:>9}  median {:>9}  max {:>9}", ms(min), ms(med), ms(max));
}
