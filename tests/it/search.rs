//! `agent mcp search`, end to end: the real binary on the fixture server (started) and on the
//! GitHub MCP server corpus (tests/data, through `--from-tools`, no server started).

use crate::support;
use crate::support::fake_embeddings;

use serde_json::Value;
use support::Project;

fn github_corpus() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/github-mcp-server.json").to_string()
}

/// The `server.tool` names of a `--json` answer, best first.
fn ranked(json: &Value) -> Vec<String> {
    json.as_array()
        .expect("array")
        .iter()
        .map(|r| format!("{}.{}", r["server"].as_str().unwrap(), r["tool"].as_str().unwrap()))
        .collect()
}

fn search_github(p: &Project, query: &str) -> Vec<String> {
    let r = p.run(&["mcp", "search", query, "--from-tools", &github_corpus(), "--server", "github", "--json"]);
    r.assert_ok();
    ranked(&r.json())
}

fn rank_of(list: &[String], tool: &str) -> usize {
    list.iter().position(|t| t == tool).unwrap_or_else(|| panic!("{tool} not found in {list:?}"))
}

#[test]
fn the_github_corpus_ranks_the_tool_a_user_means_first_or_near() {
    let p = Project::new();
    for (query, tool, within) in [
        ("list pull requests", "github.list_pull_requests", 3),
        ("logs of a failed job", "github.get_job_logs", 1),
        ("who am I", "github.get_me", 1),
        ("star a repo", "github.star_repository", 1),
        ("show me the open PRs", "github.list_pull_requests", 3),
        ("labelled issues", "github.list_issues", 5),
        ("merge this PR", "github.merge_pull_request", 1),
        ("my gists", "github.list_gists", 3),
    ] {
        let list = search_github(&p, query);
        assert!(rank_of(&list, tool) < within, "{query:?}: {tool} not in the top {within}: {list:?}");
    }
}

#[test]
fn json_is_the_documented_array_best_first() {
    let p = Project::new();
    let r =
        p.run(&["mcp", "search", "job logs", "--from-tools", &github_corpus(), "-s", "github", "--json", "-n", "4"]);
    r.assert_ok();
    let json = r.json();
    let arr = json.as_array().unwrap();
    assert_eq!(arr.len(), 4);
    for item in arr {
        let keys: Vec<&str> = item.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["server", "tool", "score", "signature", "description"]);
    }
    let scores: Vec<f64> = arr.iter().map(|i| i["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "best first: {scores:?}");
    assert_eq!(arr[0]["tool"], "get_job_logs");
    assert_eq!(arr[0]["server"], "github");
    let sig = arr[0]["signature"].as_str().unwrap();
    assert!(
        sig.starts_with("github.get_job_logs(") && sig.contains("owner: string") && sig.contains("job_id?: number"),
        "{sig}"
    );
    assert_eq!(
        arr[0]["description"],
        "Download logs for a specific workflow job or efficiently get all failed job logs for a workflow run"
    );
}

#[test]
fn the_fixture_server_is_started_and_searched() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "search", "add two numbers", "--limit", "3"]);
    r.assert_ok();
    let first = r.stdout.lines().next().unwrap_or("");
    assert!(first.contains("fixture.add(a: integer, b: integer)"), "{}", r.stdout);
    assert!(r.stdout.contains("Add two integers; returns {sum}."), "{}", r.stdout);
    let r = p.run(&["mcp", "search", "uppercase text", "--json"]);
    r.assert_ok();
    assert_eq!(ranked(&r.json())[0], "fixture.text.upper");
    // Nothing matches: exit 0, said so.
    let r = p.run(&["mcp", "search", "kubernetes deployment"]);
    r.assert_ok();
    assert!(r.stdout.starts_with("no tool matches (searched 12 tools)"), "{}", r.stdout);
}

#[test]
fn usage_errors_exit_2() {
    let p = Project::new();
    let corpus = github_corpus();
    // A saved `agent mcp list --json` (each tool names its server).
    let listed = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fixture-tools.json");
    for args in [
        vec!["mcp", "search", "", "--from-tools", &corpus],
        vec!["mcp", "search", "  ?! ", "--from-tools", &corpus],
        vec!["mcp", "search", "issues", "--limit", "0", "--from-tools", &corpus],
        vec!["mcp", "search", "issues", "--limit", "many", "--from-tools", &corpus],
        vec!["mcp", "search", "echo", "--from-tools", listed, "--server", "fixtur"],
        vec!["mcp", "search", "issues", "--from-tools", "/nonexistent/tools.json"],
        vec!["mcp", "search"],
    ] {
        p.run(&args).assert_code(2);
    }
    let r = p.run(&["mcp", "search", "", "--from-tools", &corpus]);
    assert!(r.stderr.contains("error: the query is empty"), "{}", r.stderr);
    let r = p.run(&["mcp", "search", "the ?!", "--from-tools", &corpus]);
    assert!(r.stderr.contains("error: the query \"the ?!\" has no words to search for"), "{}", r.stderr);
    let r = p.run(&["mcp", "search", "echo", "--from-tools", listed, "--server", "fixtur"]);
    assert!(r.stderr.contains("no tools of server `fixtur` in") && r.stderr.contains("fixture"), "{}", r.stderr);
    // The same file with the right server: its tools, no server started.
    let r = p.run(&["mcp", "search", "echo", "--from-tools", listed, "--server", "fixture", "--json"]);
    r.assert_ok();
    assert_eq!(ranked(&r.json())[0], "fixture.echo");
    let r = p.run(&["mcp", "search", "--help"]);
    r.assert_ok();
    assert!(
        r.stdout.contains("Exit codes:") && r.stdout.contains("agent mcp search \"list pull requests\""),
        "{}",
        r.stdout
    );
}

/// `server.tool` names of `agent mcp search QUERY --json` on the project's servers.
fn search_live(p: &Project, query: &str, env: &[(&str, &str)]) -> (Vec<String>, String) {
    let mut c = p.cmd(&["mcp", "search", query, "--json"]);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    (ranked(&json), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn successful_calls_are_counted_in_the_workspace_and_rank_their_tool_higher() {
    let yaml = format!("{}{}", support::fixture_stdio_yaml("fixture", &[]), support::fixture_stdio_yaml("other", &[]));
    let p = Project::with_servers(&yaml);
    let usage = p.path().join(".kodelet/mcp/usage.json");
    // Two identical tools: the first server wins the tie until the other one is used.
    let (before, _) = search_live(&p, "add two numbers", &[]);
    assert_eq!(before[..2], ["fixture.add", "other.add"]);
    p.run(&["mcp", "call", "other.add", "--args", r#"{"a": 1, "b": 2}"#]).assert_ok();
    p.run(&["mcp", "call", "other.fail"]).assert_code(1);
    p.run(&["mcp", "call", "other.add", "--args", r#"{"a": "x"}"#]).assert_code(2);
    p.run_stdin(
        &["exec", "-"],
        "await callMCPTool('other', 'add', { a: 1, b: 1 }); await callMCPTool('fixture', 'echo', { message: 'x' });",
    )
    .assert_ok();
    let counts: Value = serde_json::from_str(&std::fs::read_to_string(&usage).unwrap()).unwrap();
    assert_eq!(counts, serde_json::json!({"version": 1, "counts": {"fixture": {"echo": 1}, "other": {"add": 2}}}));
    let (after, _) = search_live(&p, "add two numbers", &[]);
    assert_eq!(after[..2], ["other.add", "fixture.add"]);
    // Turned off: neither counted nor used.
    let (off, _) = search_live(&p, "add two numbers", &[("AGENT_SEARCH__USAGE", "false")]);
    assert_eq!(off[..2], ["fixture.add", "other.add"]);
    let mut c = p.cmd(&["mcp", "call", "fixture.add", "--args", r#"{"a": 1, "b": 2}"#]);
    assert!(c.env("AGENT_SEARCH__USAGE", "false").output().unwrap().status.success());
    let unchanged: Value = serde_json::from_str(&std::fs::read_to_string(&usage).unwrap()).unwrap();
    assert_eq!(unchanged, counts);
    // A corrupt file is a warning, ignored, and replaced by the next counts.
    std::fs::write(&usage, "{oops").unwrap();
    let (ranked_anyway, stderr) = search_live(&p, "add two numbers", &[]);
    assert_eq!(ranked_anyway[..2], ["fixture.add", "other.add"]);
    assert!(stderr.contains("warning: the usage counts") && stderr.contains("are not valid"), "{stderr}");
    let r = p.run(&["mcp", "call", "fixture.add", "--args", r#"{"a": 1, "b": 2}"#]);
    r.assert_ok();
    assert!(r.stderr.contains("are not valid"), "{}", r.stderr);
    let fresh: Value = serde_json::from_str(&std::fs::read_to_string(&usage).unwrap()).unwrap();
    assert_eq!(fresh["counts"], serde_json::json!({"fixture": {"add": 1}}));
}

// ---------------------------------------------------------------------------------------------
// Semantic ranking (search.embeddings) against a fake /v1/embeddings endpoint

fn embeddings_project(fake: &fake_embeddings::FakeEmbeddings) -> Project {
    let p = Project::new();
    p.write_config(&format!("{}mcp:\n  servers:\n{}", fake.search_yaml(), support::fixture_stdio_yaml("fixture", &[])));
    p
}

#[test]
fn embeddings_find_tools_by_meaning_and_are_embedded_once() {
    let fake = fake_embeddings::FakeEmbeddings::start(false);
    let p = embeddings_project(&fake);
    // No word of "plus" is in the fixture's tools: words alone find nothing.
    let (lexical, _) = search_live(&Project::with_fixture(), "plus", &[]);
    assert!(lexical.is_empty(), "{lexical:?}");
    let (found, stderr) = search_live(&p, "plus", &[("FAKE_EMBED_KEY", "sekret")]);
    assert_eq!(found.first().map(String::as_str), Some("fixture.add"), "{found:?}\n{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    assert_eq!(fake.auth().as_deref(), Some("Bearer sekret"));
    let n_tools = p.run(&["mcp", "list", "--json"]).json().as_array().unwrap().len();
    let texts = fake.texts();
    assert_eq!(texts.len(), n_tools + 1, "every tool and the query: {texts:?}");
    assert!(texts.iter().any(|t| t.starts_with("fixture.add\nAdd numbers\nAdd two integers")), "{texts:?}");
    assert_eq!(texts.last().map(String::as_str), Some("plus"));
    assert!(p.path().join(".kodelet/mcp/embeddings.json").is_file());
    // Fused with the words: a query both rankings agree on keeps its tool first.
    let (both, _) = search_live(&p, "upper case text shout", &[]);
    assert_eq!(both[0], "fixture.text.upper");
    // The tools were embedded once: later searches send only their query.
    assert_eq!(fake.texts().len(), n_tools + 2);
}

#[test]
fn a_failing_embeddings_endpoint_is_one_warning_then_words_only() {
    let fake = fake_embeddings::FakeEmbeddings::start(true);
    let p = embeddings_project(&fake);
    let (found, stderr) = search_live(&p, "add two numbers", &[]);
    assert_eq!(found.first().map(String::as_str), Some("fixture.add"));
    assert_eq!(stderr.matches("warning: the embeddings endpoint failed").count(), 1, "{stderr}");
    assert!(stderr.contains("HTTP 500") && stderr.contains("the model is not loaded"), "{stderr}");
    assert_eq!(fake.requests(), 1, "not asked again for the query after failing");
    // Nothing listens there at all: the same.
    p.write_config(&format!(
        "search:\n  embeddings: {{url: \"http://127.0.0.1:9/v1\", model: m}}\nmcp:\n  servers:\n{}",
        support::fixture_stdio_yaml("fixture", &[])
    ));
    let (found, stderr) = search_live(&p, "add two numbers", &[]);
    assert_eq!(found.first().map(String::as_str), Some("fixture.add"));
    assert_eq!(stderr.matches("warning: the embeddings endpoint failed").count(), 1, "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// A hostile embeddings endpoint: the answer's size, the vectors' dimension and the wait are
// bounded, and the search falls back to words

/// Runs `agent` to its end: exit code, stdout, stderr and its peak resident memory in KiB, read
/// from `/proc/<pid>/status` (`VmHWM`) every few milliseconds while it runs. Not `wait4`'s
/// `ru_maxrss`: Linux carries the high-water mark of the memory a process had before `exec` into
/// it, and that is this test process's (with other tests' buffers) when it spawned `agent`.
fn run_measured(mut c: std::process::Command) -> (i32, String, String, u64) {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let (stdout, stderr) = (read(Box::new(out)), read(Box::new(err)));
    let mut peak_kib = 0;
    let status = loop {
        if let Some(kib) = support::procs::peak_rss_kb(child.id()) {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    (status.code().unwrap_or(-1), stdout.join().unwrap(), stderr.join().unwrap(), peak_kib)
}

#[test]
fn an_endless_embeddings_answer_is_cut_at_32_mib_and_words_rank() {
    // 768 MiB of numbers, sent as fast as the endpoint can: read whole, it would take as much memory.
    let fake = fake_embeddings::FakeEmbeddings::hostile(fake_embeddings::Hostile::Body(768 << 20));
    let p = embeddings_project(&fake);
    let (code, stdout, stderr, max_rss_kib) = run_measured(p.cmd(&["mcp", "search", "add two numbers", "--json"]));
    assert_eq!(code, 0, "{stderr}");
    let found: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(ranked(&found)[0], "fixture.add", "by words");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("the embeddings endpoint failed")
            && warnings[0].contains("the answer is larger than 32 MiB (the most read)"),
        "{stderr}"
    );
    assert!(max_rss_kib < 200 << 10, "agent grew to {} MiB reading the answer", max_rss_kib >> 10);
    assert!(!p.path().join(".kodelet/mcp/embeddings.json").exists(), "nothing was embedded");
}

#[test]
fn vectors_of_a_huge_dimension_are_refused_and_never_cached() {
    let fake = fake_embeddings::FakeEmbeddings::hostile(fake_embeddings::Hostile::Dims(100_000));
    let p = embeddings_project(&fake);
    let (found, stderr) = search_live(&p, "add two numbers", &[]);
    assert_eq!(found[0], "fixture.add");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].ends_with("a vector has more than 8192 dimensions (the most accepted)); searching by words only"),
        "{stderr}"
    );
    // The cache holds no vector of that size (a written cache has only what was accepted).
    let cache = p.path().join(".kodelet/mcp/embeddings.json");
    let len = std::fs::metadata(&cache).map(|m| m.len()).unwrap_or(0);
    assert!(len < 4096, "the cache grew to {len} bytes");
}

#[test]
fn a_silent_embeddings_endpoint_costs_a_script_part_of_its_timeout_not_all_of_it() {
    let fake = fake_embeddings::FakeEmbeddings::hostile(fake_embeddings::Hostile::Silent);
    let p = Project::new();
    p.write_config(&format!(
        "{}mcp:\n  code_execution:\n    timeout: 4s\n  servers:\n{}",
        fake.search_yaml(),
        support::fixture_stdio_yaml("fixture", &[])
    ));
    let script =
        "const found = await searchTools('add two numbers'); console.log(found[0].server + '.' + found[0].tool);";
    let started = std::time::Instant::now();
    let r = p.run_stdin(&["exec", "-"], script);
    r.assert_ok();
    assert_eq!(r.stdout, "fixture.add\n");
    assert!(
        r.stderr.contains("warning: the embeddings endpoint failed") && r.stderr.contains("no answer within 1s"),
        "{}",
        r.stderr
    );
    // A quarter of the script's timeout for the tools' vectors; the query is not sent after that.
    assert!(started.elapsed() < std::time::Duration::from_secs(4), "took {:?}", started.elapsed());
    assert_eq!(fake.requests(), 1);
}

/// A project whose fixture server runs through a wrapper script, so the server can be made
/// unstartable without touching the configuration.
fn wrapped_fixture() -> (Project, std::path::PathBuf) {
    let p = Project::new();
    let wrapper = p.write("bin/server.sh", &format!("#!/bin/sh\nexec {:?} \"$@\"\n", support::fixture_bin()));
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    p.write_config(&format!("mcp:\n  servers:\n    fixture:\n      command: {:?}\n", wrapper.display().to_string()));
    (p, wrapper)
}

#[test]
fn search_answers_from_the_saved_tool_lists_without_starting_a_server_and_says_when_they_are_stale() {
    let (p, wrapper) = wrapped_fixture();
    p.run(&["mcp", "list"]).assert_ok();
    let cache = p.path().join(".kodelet/mcp/.tools_cache.json");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&cache).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "the saved lists are private");
    // From now on the server cannot start: every answer below comes from the saved list.
    std::fs::write(&wrapper, "#!/bin/sh\necho 'started although the list was saved' >&2\nexit 1\n").unwrap();

    let r = p.run(&["mcp", "search", "echo the message back", "--json"]);
    r.assert_ok();
    assert_eq!(ranked(&r.json())[0], "fixture.echo");
    assert!(!r.stderr.contains("stale") && !r.stderr.contains("failed"), "{}", r.stderr);

    // --refresh starts it, and says it could not.
    let refreshed = p.run(&["mcp", "search", "echo", "--refresh"]);
    refreshed.assert_code(1);
    assert!(refreshed.stderr.contains("server `fixture` failed"), "{}", refreshed.stderr);

    // A changed configuration makes the saved list stale: it still answers, with a note.
    p.write_config(&format!(
        "mcp:\n  servers:\n    fixture:\n      command: {:?}\n      args: [\"--hostile\"]\n",
        wrapper.display().to_string()
    ));
    let stale = p.run(&["mcp", "search", "add two integers", "--json"]);
    stale.assert_ok();
    assert!(ranked(&stale.json()).contains(&"fixture.add".to_string()));
    assert!(
        stale.stderr.contains("stale tool lists of `fixture` (its configuration changed since)")
            && stale.stderr.contains("--refresh"),
        "{}",
        stale.stderr
    );
}

#[test]
fn a_server_without_a_saved_list_is_started_and_its_list_saved() {
    let (p, wrapper) = wrapped_fixture();
    let first = p.run(&["mcp", "search", "echo", "--json"]);
    first.assert_ok();
    assert_eq!(ranked(&first.json())[0], "fixture.echo");
    std::fs::write(&wrapper, "#!/bin/sh\nexit 1\n").unwrap();
    let second = p.run(&["mcp", "search", "echo", "--json"]);
    second.assert_ok();
    assert_eq!(ranked(&second.json())[0], "fixture.echo", "the first search saved the list");
}
