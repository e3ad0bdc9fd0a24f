//! Token report (`cargo bench --bench tokens`): what the model receives in direct vs code mode
//! (and, for the GitHub corpus, progressive mode).
//!
//! Runs the real `agent run` against the scripted fake LLM (tests/it/support/fake_llm.rs) and
//! counts, with tiktoken o200k, the request bodies the fake received:
//!
//! 1. tool-definition tokens in the first request with the GitHub MCP server's 117 tools
//!    (served by this binary itself, re-executed with `--serve-github`);
//! 2. a GitHub-shaped multi-tool task: list the open issues of a repository (a large JSON
//!    result), find the most-commented one, comment on it;
//! 3. the fixture task: read ~200 KB from `big`, pass one line of it to `echo`;
//! 4. learned output types: the code the model reads and writes for the fixture's `profile` (no
//!    output schema) while its type is `none` (the tool file, a look at one result, a script
//!    through `get`/`has`) vs at `high` after 100 observed calls (the tool file, a typed script).
//! 5. Resources: the fixture with `--resources`; the model lists the resources and reads one.
//!    Direct mode offers `list_resources` / `read_resource` beside the tools (and only when a
//!    server has resources); code mode lists and reads in one script that prints what the model
//!    needs (`listResources`, `readResource`). Reported: what the two tool definitions add to every
//!    request, the listing as the model gets it, and the task's total.
//!
//! The scripted model makes the same decisions in both modes (in code mode it also greps and
//! reads the two tool files it needs; in progressive mode it searches, then calls the two tools
//! through `call_tool`). Targets: ≥ 95% fewer tool-definition tokens and ≥ 90% fewer total
//! tokens for the large-intermediate task in code mode; ≤ 400 tool-definition tokens per request
//! in progressive mode.
//!
//! "direct" runs with `mcp.result_handlers.enabled: false`; "direct + handlers" offers the
//! `result_handler` argument and the scripted model uses it on the large result (a jq filter on
//! GitHub, a JavaScript expression on the fixture). Also reported: what the extra argument costs
//! in tool definitions. Target: ≥ 80% fewer total tokens with handlers than uncut direct without.

#[path = "../tests/it/support/mod.rs"]
mod support;

use std::path::PathBuf;

use serde_json::{Value, json};
use support::fake_llm::{Api, FakeLlm, Reply, count_tokens};
use support::{Project, fixture_stdio_yaml};

const OWNER: &str = "octo";
const REPO: &str = "widgets";
/// The issue the synthetic data makes the most commented.
const TOP_ISSUE: u64 = 4242;

fn main() {
    if std::env::args().any(|a| a == "--serve-github") {
        github::serve();
        return;
    }
    let corpus = corpus_path();
    println!("token report: tiktoken o200k_base on the request bodies the fake LLM received (Anthropic format)");
    println!("GitHub corpus: {}\n", corpus.display());

    // 1 + 2: GitHub.
    let direct = run_github(&corpus, Mode::Direct, &[]);
    let direct_uncut = run_github(&corpus, Mode::Direct, &["--max-tool-result", "10MB"]);
    let code = run_github(&corpus, Mode::Code, &[]);
    let progressive = run_github(&corpus, Mode::Progressive, &[]);
    let handled = run_github(&corpus, Mode::DirectHandlers, &[]);
    println!("1. tool definitions in the first request (GitHub MCP server, {} tools)", direct.tools_offered);
    row("direct", direct.first_tools, None);
    row("code", code.first_tools, Some(pct(direct.first_tools, code.first_tools)));
    row("progressive", progressive.first_tools, Some(pct(direct.first_tools, progressive.first_tools)));
    println!("   whole first request (system prompt + tools + task):");
    row("direct", direct.first_request, None);
    row("code", code.first_request, Some(pct(direct.first_request, code.first_request)));
    row("progressive", progressive.first_request, Some(pct(direct.first_request, progressive.first_request)));
    target("tool-definition tokens", pct(direct.first_tools, code.first_tools), 95.0);
    let verdict = if progressive.first_tools <= 400 { "met" } else { "MISSED" };
    println!(
        "   target: ≤ 400 tool-definition tokens per request in progressive mode: {verdict} ({})",
        progressive.first_tools
    );
    let extra = handled.first_tools.saturating_sub(direct.first_tools);
    println!(
        "   the optional `result_handler` argument: {} tools → {} tokens ({extra} more, {:.1} per tool, +{:.1}%)",
        handled.tools_offered,
        handled.first_tools,
        extra as f64 / handled.tools_offered.max(1) as f64,
        100.0 * extra as f64 / direct.first_tools.max(1) as f64
    );
    let prompt_extra = handled.first_request.saturating_sub(direct.first_request + extra);
    println!("   + its explanation in the system prompt: {prompt_extra} tokens, once");

    println!("\n2. GitHub task: list open issues (large JSON), comment on the most-commented one");
    run_row("direct (results cut at 20 KB)", &direct, None);
    run_row("direct (uncut)", &direct_uncut, None);
    run_row("code", &code, Some(pct(direct.total, code.total)));
    run_row("progressive (results cut at 20 KB)", &progressive, Some(pct(direct.total, progressive.total)));
    println!("   vs uncut direct: {:.1}% fewer", pct(direct_uncut.total, code.total));
    run_row("direct + handlers", &handled, Some(pct(direct_uncut.total, handled.total)));
    sees(&format!("#{TOP_ISSUE}"), &direct, &format!("\"number\":{TOP_ISSUE}"));
    target("total tokens with result handlers (vs uncut direct without)", pct(direct_uncut.total, handled.total), 80.0);
    target("total tokens, large-intermediate task (vs cut direct)", pct(direct.total, code.total), 90.0);
    target("total tokens, large-intermediate task (vs uncut direct)", pct(direct_uncut.total, code.total), 90.0);

    // 3: the fixture.
    let fdirect = run_fixture(Mode::Direct, &[]);
    let fdirect_uncut = run_fixture(Mode::Direct, &["--max-tool-result", "10MB"]);
    let fcode = run_fixture(Mode::Code, &[]);
    let fhandled = run_fixture(Mode::DirectHandlers, &[]);
    println!("\n3. fixture task: read ~200 KB from `big`, pass one line of it to `echo`");
    run_row("direct (results cut at 20 KB)", &fdirect, None);
    run_row("direct (uncut)", &fdirect_uncut, None);
    run_row("code", &fcode, Some(pct(fdirect.total, fcode.total)));
    println!("   vs uncut direct: {:.1}% fewer", pct(fdirect_uncut.total, fcode.total));
    run_row("direct + handlers", &fhandled, Some(pct(fdirect_uncut.total, fhandled.total)));
    sees("line 1234", &fdirect, "line 00001234:");
    target(
        "total tokens with result handlers (vs uncut direct without)",
        pct(fdirect_uncut.total, fhandled.total),
        80.0,
    );
    target("total tokens, large-intermediate task (vs cut direct)", pct(fdirect.total, fcode.total), 90.0);
    target("total tokens, large-intermediate task (vs uncut direct)", pct(fdirect_uncut.total, fcode.total), 90.0);

    learned_types();
    resources();
}

/// Section 5: listing and reading resources, direct vs code.
fn resources() {
    let readme = "fixture://readme";
    let run = |mode: Mode| {
        let script = match mode {
            Mode::Code => vec![
                Reply::tool(
                    "code_execution",
                    json!({"code": format!(r#"
const listed = await listResources("fixture");
console.log(listed.resources.map((r) => r.uri).join("\n"));
const doc = await readResource("fixture", "{readme}");
console.log(doc.contents.map((c) => c.text ?? "").join("\n"));
"#)}),
                ),
                Reply::text("Read the readme."),
            ],
            _ => vec![
                Reply::tool("list_resources", json!({"server": "fixture"})),
                Reply::tool("read_resource", json!({"server": "fixture", "uri": readme})),
                Reply::text("Read the readme."),
            ],
        };
        run_on_fixture(script, mode, &["--resources"], &[], "List the fixture's resources and read its readme.")
    };
    let direct = run(Mode::Direct);
    let code = run(Mode::Code);
    let specs: Vec<Value> = agent::agent::resources::ResourceTools::specs()
        .into_iter()
        .map(|s| json!({"name": s.name, "description": s.description, "input_schema": s.input_schema}))
        .collect();
    println!("\n5. resources: list the fixture's resources (--resources) and read one");
    println!(
        "   list_resources + read_resource definitions: {} tokens in every request of a direct or progressive run \
         (none when no server offers resources)",
        count_tokens(&Value::Array(specs).to_string())
    );
    row("the listing, direct (list_resources result)", count_tokens(&direct.first_result), None);
    row("the listing + the read, code (what the script printed)", count_tokens(&code.first_result), None);
    run_row("direct", &direct, None);
    run_row("code", &code, Some(pct(direct.total, code.total)));
}

/// Section 4: tokens of the code the model needs for one task at `none` and at `high`.
fn learned_types() {
    let p = Project::new();
    p.write_config(&format!("mcp:\n  servers:\n{}", fixture_stdio_yaml("fixture", &[])));
    let r = p.run(&["mcp", "generate"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ws = p.path().join(".kodelet/mcp");
    let tool_file = || std::fs::read_to_string(ws.join("servers/fixture/profile.ts")).expect("profile.ts");
    let exec = |name: &str, code: &str| {
        std::fs::write(ws.join(name), code).expect("script");
        let r = p.run(&["exec", &format!(".kodelet/mcp/{name}")]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.stdout
    };
    let none_file = tool_file();
    assert!(none_file.contains("ToolResponse<ProfileOutput>"), "{none_file}");
    // At `none` the model looks at a result first, then reads fields through the helpers.
    let explore = "import { profile } from \"./servers/fixture/index.ts\";\n\
        console.log(JSON.stringify((await profile({ i: 1 })).raw));\n";
    let seen = exec("explore.ts", explore);
    let none_script = "import { profile } from \"./servers/fixture/index.ts\";\n\
        const r = await profile({ i: 4 });\n\
        const name = String(r.get(\"name\", \"?\"));\n\
        const email = r.has(\"email\") ? String(r.get(\"email\")) : \"(none)\";\n\
        const score = r.get(\"score\", 0);\n\
        console.log(`${name} <${email}> ${typeof score === \"number\" ? score : \"n/a\"}`);\n";
    let none_out = exec("none.ts", none_script);
    exec(
        "warm.ts",
        "import { profile } from \"./servers/fixture/index.ts\";\nfor (let i = 0; i < 100; i++) await profile({ i });\n",
    );
    let high_file = tool_file();
    assert!(high_file.contains("observed results (quality: high"), "{high_file}");
    let high_script = "import { profile } from \"./servers/fixture/index.ts\";\n\
        const r = await profile({ i: 4 });\n\
        console.log(`${r.name} <${r.email ?? \"(none)\"}> ${typeof r.score === \"number\" ? r.score : \"n/a\"}`);\n";
    let high_out = exec("high.ts", high_script);
    assert_eq!(none_out, high_out, "the two scripts must do the same");
    let none_total = count_tokens(&none_file) + count_tokens(explore) + count_tokens(&seen) + count_tokens(none_script);
    let high_total = count_tokens(&high_file) + count_tokens(high_script);
    println!("\n4. learned output types: fixture `profile` (no output schema), one task at `none` vs `high`");
    println!(
        "   none: tool file {} + look at a result {} (script) + {} (output) + script {} = {none_total}",
        count_tokens(&none_file),
        count_tokens(explore),
        count_tokens(&seen),
        count_tokens(none_script)
    );
    println!("   high: tool file {} + script {} = {high_total}", count_tokens(&high_file), count_tokens(high_script));
    row("code the model needs at none", none_total, None);
    row("code the model needs at high", high_total, Some(pct(none_total, high_total)));
}

/// Whether the cut direct-mode result even contained what the task needs (if not, the scripted
/// direct model "found" it only because the script says so, and the uncut run is the fair one).
fn sees(what: &str, m: &Measured, needle: &str) {
    let yes = m.first_result.contains(needle);
    println!(
        "   the cut direct result {} {what}{}",
        if yes { "contains" } else { "does NOT contain" },
        if yes { "" } else { ": a real model could not do the task that way; compare with uncut direct" }
    );
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Direct mode without result handlers.
    Direct,
    /// Direct mode with `result_handler` offered and used on the large result.
    DirectHandlers,
    Code,
    Progressive,
}

/// The `mcp.result_handlers` config of a run.
fn handlers_yaml(mode: Mode) -> String {
    format!("  result_handlers:\n    enabled: {}\n", mode == Mode::DirectHandlers)
}

/// What one scripted run cost.
struct Measured {
    requests: usize,
    /// o200k tokens of each request body.
    per_request: Vec<u64>,
    /// o200k tokens of every request body, summed.
    total: u64,
    first_request: u64,
    /// o200k tokens of the first request's `tools` array.
    first_tools: u64,
    tools_offered: usize,
    /// `agent`'s own accounting (from the provider's usage fields) — must equal `total`.
    agent_input_tokens: u64,
    /// The first tool result the model got back (what it had to find the answer in).
    first_result: String,
}

fn pct(direct: u64, code: u64) -> f64 {
    if direct == 0 { 0.0 } else { 100.0 * (1.0 - code as f64 / direct as f64) }
}

fn row(label: &str, tokens: u64, saving: Option<f64>) {
    let s = saving.map(|p| format!("  ({p:.1}% fewer)")).unwrap_or_default();
    println!("   {label:<11} {tokens:>9} tokens{s}");
}

fn run_row(label: &str, m: &Measured, saving: Option<f64>) {
    let s = saving.map(|p| format!("  ({p:.1}% fewer)")).unwrap_or_default();
    let each: Vec<String> = m.per_request.iter().map(u64::to_string).collect();
    println!("   {label:<35} {} requests, {:>9} tokens in total{s}  [{}]", m.requests, m.total, each.join(" + "));
}

fn target(what: &str, got: f64, want: f64) {
    let verdict = if got >= want { "met" } else { "MISSED" };
    println!("   target: ≥ {want:.0}% fewer {what}: {verdict} ({got:.1}%)");
}

fn corpus_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/github-mcp-server.json")
}

fn measure(fake: &FakeLlm, transcript: &Value) -> Measured {
    let reqs = fake.requests();
    let first = &reqs[0];
    let tools = first.body.get("tools").cloned().unwrap_or(Value::Null);
    Measured {
        requests: reqs.len(),
        per_request: reqs.iter().map(|r| count_tokens(&r.raw)).collect(),
        total: reqs.iter().map(|r| count_tokens(&r.raw)).sum(),
        first_request: count_tokens(&first.raw),
        first_tools: if tools.is_null() { 0 } else { count_tokens(&tools.to_string()) },
        tools_offered: first.tool_names().len(),
        agent_input_tokens: transcript["usage"]["input_tokens"].as_u64().unwrap_or(0),
        first_result: transcript["turns"][0]["tool_calls"][0]["result"].as_str().unwrap_or("").to_string(),
    }
}

fn run_agent(p: &Project, fake: &FakeLlm, mode: Mode, extra: &[&str], task: &str) -> Measured {
    let mode_arg = match mode {
        Mode::Direct | Mode::DirectHandlers => "direct",
        Mode::Code => "code",
        Mode::Progressive => "progressive",
    };
    let mode_label = if mode == Mode::DirectHandlers { "direct + handlers" } else { mode_arg };
    let mut args = vec!["run", "--json", "--mode", mode_arg];
    args.extend_from_slice(extra);
    args.push(task);
    let r = p.run(&args);
    assert_eq!(r.code, 0, "agent run failed ({mode_label}):\n{}\n{}", r.stdout, r.stderr);
    let t = r.json();
    assert_eq!(t["outcome"], "answer");
    assert_eq!(fake.remaining(), 0, "the script was not used up");
    for turn in t["turns"].as_array().into_iter().flatten() {
        for call in turn["tool_calls"].as_array().into_iter().flatten() {
            assert_eq!(call["is_error"], false, "tool call failed: {call}");
        }
    }
    let m = measure(fake, &t);
    assert_eq!(m.agent_input_tokens, m.total, "agent's usage accounting differs from the fake's counts");
    m
}

fn run_github(corpus: &std::path::Path, mode: Mode, extra: &[&str]) -> Measured {
    let script = match mode {
        Mode::DirectHandlers => vec![
            Reply::tool(
                "mcp_github_list_issues",
                json!({"owner": OWNER, "repo": REPO, "state": "OPEN", "result_handler": {"language": "jq",
                    "script": ".issues | max_by(.comments) | {number, title, comments}"}}),
            ),
            Reply::tool(
                "mcp_github_add_issue_comment",
                json!({"owner": OWNER, "repo": REPO, "issue_number": TOP_ISSUE, "body": "Looking into this.",
                    "result_handler": {"language": "jq", "script": "{id, html_url}"}}),
            ),
            Reply::text(&format!("Commented on #{TOP_ISSUE}, the open issue with the most comments.")),
        ],
        Mode::Direct => vec![
            Reply::tool("mcp_github_list_issues", json!({"owner": OWNER, "repo": REPO, "state": "OPEN"})),
            Reply::tool(
                "mcp_github_add_issue_comment",
                json!({"owner": OWNER, "repo": REPO, "issue_number": TOP_ISSUE, "body": "Looking into this."}),
            ),
            Reply::text(&format!("Commented on #{TOP_ISSUE}, the open issue with the most comments.")),
        ],
        Mode::Progressive => vec![
            Reply::tool("search_tools", json!({"query": "list the issues of a repository", "limit": 5})),
            Reply::tool(
                "call_tool",
                json!({"name": "github.list_issues", "arguments": {"owner": OWNER, "repo": REPO, "state": "OPEN"}}),
            ),
            Reply::tool(
                "call_tool",
                json!({"name": "github.add_issue_comment", "arguments":
                    {"owner": OWNER, "repo": REPO, "issue_number": TOP_ISSUE, "body": "Looking into this."}}),
            ),
            Reply::text(&format!("Commented on #{TOP_ISSUE}, the open issue with the most comments.")),
        ],
        Mode::Code => vec![
            Reply::tool(
                "grep_files",
                json!({"pattern": "list.*issue|issue.*comment", "path": "servers/github/index.ts"}),
            ),
            Reply::tools(
                "",
                &[
                    ("read_file", json!({"path": "servers/github/listIssues.ts"})),
                    ("read_file", json!({"path": "servers/github/addIssueComment.ts"})),
                ],
            ),
            Reply::tool(
                "code_execution",
                json!({"description": "comment on the most-commented open issue", "code": format!(r#"
import {{ listIssues, addIssueComment }} from "./servers/github/index.ts";
const res: any = await listIssues({{ owner: "{OWNER}", repo: "{REPO}", state: "OPEN" }});
const top = res.issues.reduce((a: any, b: any) => (b.comments > a.comments ? b : a));
await addIssueComment({{ owner: "{OWNER}", repo: "{REPO}", issue_number: top.number, body: "Looking into this." }});
console.log(`#${{top.number}} "${{top.title}}" (${{top.comments}} comments): commented`);
"#)}),
            ),
            Reply::text(&format!("Commented on #{TOP_ISSUE}, the open issue with the most comments.")),
        ],
    };
    let fake = FakeLlm::start(script);
    let exe = std::env::current_exe().expect("bench binary path");
    let servers = format!(
        "    github:\n      command: {:?}\n      args: [\"--serve-github\"]\n      envs:\n        BENCH_GITHUB_CORPUS: {:?}\n",
        exe.display().to_string(),
        corpus.display().to_string()
    );
    let p = Project::new();
    p.write_config(&format!("{}mcp:\n{}  servers:\n{servers}", fake.llm_yaml(Api::Anthropic), handlers_yaml(mode)));
    let m = run_agent(
        &p,
        &fake,
        mode,
        extra,
        "Find the open issue with the most comments in octo/widgets and comment 'Looking into this.' on it.",
    );
    if mode == Mode::Code {
        // The script's printed line is all the model saw of the issue list.
        let reqs = fake.requests();
        let result = &reqs[3].tool_results()[0];
        assert!(result.1.starts_with(&format!("#{TOP_ISSUE} ")), "{result:?}");
    }
    m
}

fn run_fixture(mode: Mode, extra: &[&str]) -> Measured {
    let line = "line 00001234: the quick brown fox jumps over the lazy dog";
    let script = match mode {
        Mode::DirectHandlers => vec![
            Reply::tool(
                "mcp_fixture_big",
                json!({"bytes": 200000, "result_handler": "tool_output.split('\\n').find((l) => l.startsWith('line 00001234'))"}),
            ),
            Reply::tool("mcp_fixture_echo", json!({"message": line})),
            Reply::text("Echoed line 1234."),
        ],
        Mode::Direct | Mode::Progressive => vec![
            Reply::tool("mcp_fixture_big", json!({"bytes": 200000})),
            Reply::tool("mcp_fixture_echo", json!({"message": line})),
            Reply::text("Echoed line 1234."),
        ],
        Mode::Code => vec![
            Reply::tool(
                "code_execution",
                json!({"code": r#"
import { big, echo } from "./servers/fixture/index.ts";
const text: string = await big({ bytes: 200000 });
const line = text.split("\n").find((l) => l.startsWith("line 00001234"));
console.log(await echo({ message: line ?? "not found" }));
"#}),
            ),
            Reply::text("Echoed line 1234."),
        ],
    };
    run_on_fixture(script, mode, &[], extra, "Read the big text and echo its line 1234.")
}

/// `agent run` of `task` in `mode` with the fixture (given `fixture_args`) as the only server and
/// the scripted model answering with `script`.
fn run_on_fixture(script: Vec<Reply>, mode: Mode, fixture_args: &[&str], extra: &[&str], task: &str) -> Measured {
    let fake = FakeLlm::start(script);
    let p = Project::new();
    p.write_config(&format!(
        "{}mcp:\n{}  servers:\n{}",
        fake.llm_yaml(Api::Anthropic),
        handlers_yaml(mode),
        fixture_stdio_yaml("fixture", fixture_args)
    ));
    run_agent(&p, &fake, mode, extra, task)
}

/// A stand-in GitHub MCP server: the real server's 117 tool definitions, canned results.
mod github {
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    };
    use rmcp::service::RequestContext;
    use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
    use serde_json::{Value, json};

    struct Github {
        tools: Vec<Tool>,
    }

    impl ServerHandler for Github {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
                .with_server_info(Implementation::new("github-stand-in", "0"))
        }

        async fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _cx: RequestContext<RoleServer>,
        ) -> Result<ListToolsResult, ErrorData> {
            Ok(ListToolsResult { tools: self.tools.clone(), ..Default::default() })
        }

        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            _cx: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            let args = Value::Object(request.arguments.clone().unwrap_or_default());
            let result = match request.name.as_ref() {
                "list_issues" => issues(),
                "add_issue_comment" => json!({
                    "id": 990001, "html_url": format!("https://github.com/octo/widgets/issues/{}#issuecomment-990001", args["issue_number"]),
                    "body": args["body"], "user": {"login": "agent-bot"}, "created_at": "2026-11-25T12:00:00Z"
                }),
                _ => json!({"ok": true}),
            };
            Ok(CallToolResult::success(vec![ContentBlock::text(result.to_string())]).into())
        }
    }

    /// 100 open issues shaped like GitHub's list_issues answer (about 45k tokens of JSON).
    fn issues() -> Value {
        let words = ["widget", "render", "crash", "config", "timeout", "parser", "cache", "login", "upload", "theme"];
        let list: Vec<Value> = (0..100u64)
            .map(|i| {
                // 4100, 4103, …: never TOP_ISSUE, which replaces issue 37.
                let number = if i == 37 { super::TOP_ISSUE } else { 4100 + i * 3 };
                let comments = if number == super::TOP_ISSUE { 57 } else { (i * 7919) % 41 };
                let w = |k: u64| words[((i + k) % 10) as usize];
                let body = (0..12)
                    .map(|k| format!("Step {k}: the {} {} fails when the {} is {} after a {}.", w(k), w(k + 1), w(k + 2), w(k + 3), w(k + 4)))
                    .collect::<Vec<_>>()
                    .join("\n");
                json!({
                    "id": 2_000_000_000u64 + i, "number": number, "state": "OPEN",
                    "title": format!("{} {} breaks {}", w(0), w(1), w(2)),
                    "body": body,
                    "user": {"login": format!("user{}", i % 13), "id": 1000 + i % 13, "html_url": format!("https://github.com/user{}", i % 13), "type": "User"},
                    "labels": [{"name": "bug", "color": "d73a4a", "description": "Something isn't working"}, {"name": w(5), "color": "0e8a16", "description": null}],
                    "assignees": [], "milestone": null, "comments": comments, "locked": false,
                    "author_association": "CONTRIBUTOR",
                    "created_at": format!("2026-10-{:02}T10:{:02}:00Z", 1 + i % 28, i % 60),
                    "updated_at": format!("2026-11-{:02}T09:{:02}:00Z", 1 + i % 25, i % 60),
                    "html_url": format!("https://github.com/octo/widgets/issues/{number}"),
                    "reactions": {"total_count": i % 9, "+1": i % 5, "-1": 0, "laugh": 0, "hooray": 0, "confused": 0, "heart": i % 4, "rocket": 0, "eyes": 0}
                })
            })
            .collect();
        json!({"issues": list, "pageInfo": {"hasNextPage": false, "endCursor": "Y3Vyc29yOjEwMA=="}, "totalCount": 100})
    }

    pub fn serve() {
        let path = std::env::var("BENCH_GITHUB_CORPUS").unwrap_or_default();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
        let v: Value = serde_json::from_str(&text).expect("corpus JSON");
        let tools: Vec<Tool> = v["tools"]
            .as_array()
            .expect("tools array")
            .iter()
            .map(|t| serde_json::from_value(t.clone()).expect("tool definition"))
            .collect();
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async move {
            let running = Github { tools }.serve(rmcp::transport::stdio()).await.expect("serve");
            let _ = running.waiting().await;
        });
    }
}
