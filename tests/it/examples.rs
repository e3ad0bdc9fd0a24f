//! Every command example in the docs and in `--help` runs as written, so none can drift again;
//! and `config.sample.yaml` documents every key the configuration has.
//!
//! How examples are found (write yours this way and it is run; nothing else is):
//! - **Markdown** (README.md, docs/*.md): every fenced block tagged ```` ```sh ```` is a script of
//!   examples, run in a fresh project; each command in it (one line, or lines joined by a
//!   trailing `\` or a `<<'EOF'` here-document) runs with bash, in order, in the project's
//!   directory. Lines setting a variable (`NAME=...`) are carried into the block's later
//!   commands. Synopses, transcripts and output go in untagged ```` ``` ```` blocks (not run).
//! - **`--help`**: every line of an `Examples:` section of `agent help` and of `agent <command>
//!   --help` (every subcommand, found from the binary) that starts with `agent ` or pipes into
//!   `| agent `; each help page is one fresh project, its examples run in order.
//! - A command must exit 0, or the code its trailing comment names: `# exit 2`.
//! - Each project is a copy of `config.sample.yaml` (with server-everything run from the pinned
//!   npm install instead of `npx`, and the fixture server added as `fixture`) as both
//!   `agent.yaml` and `config.sample.yaml`; `agent` first in `PATH`; `llm.*` pointed at the
//!   scripted fake LLM (every `agent run` gets a final answer); `HOME` inside the project;
//!   [`PRELUDE`]'s files (a `script.ts`, stored state) for examples that name them; and the
//!   pinned MCP Inspector as the project's `node_modules`, so `npx @modelcontextprotocol/inspector@0.15.0`
//!   runs it offline (`npm_config_offline`).
//! - Run them with `cargo test --test it examples::`.
//! - An example that cannot run here goes in [`SKIP`] with the reason (a browser sign-in, a real
//!   hosted server). A skip that matches no example fails the test (it went stale), and so does
//!   any example that neither ran as expected nor was skipped.

use crate::support;
use crate::support::fake_llm::{FakeLlm, Reply};

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{Project, agent_bin, fixture_stdio_yaml, node_or_skip, npm_bin};

const GITHUB: &str = "names the GitHub server, which the sample declares only in a comment (a token)";
const SIGN_IN: &str = "a browser sign-in to a real hosted server (tests/it/auth.rs drives the flow)";
const OLLAMA: &str = "needs a local Ollama; the scripted fake LLM stands in for every other run";
const RUNS_UNTIL_STOPPED: &str = "runs until stopped (tests/it/serve.rs drives serve over HTTP)";
const JSON_MODEL: &str =
    "needs a model answering in JSON; the fake here answers in words (tests/it/search_examples.rs scripts one)";

/// Examples that cannot run in the test, as (where, a piece of the command, why). `where` is a
/// Markdown file (`README.md`, `docs/auth.md`) or a help page (`agent mcp call --help`).
const SKIP: &[(&str, &str, &str)] = &[
    (
        "README.md",
        "bin/setup && cargo",
        "builds this project and needs a model's API key; the suite runs inside that build",
    ),
    (
        "README.md",
        "cargo install --path .",
        "installs into ~/.cargo/bin; the test puts the built binary on PATH instead",
    ),
    ("README.md", "${fpath[1]}", "zsh only ($fpath); the bash and fish lines run"),
    ("docs/auth.md", "agent mcp login notion", SIGN_IN),
    ("docs/auth.md", "notion.search", "a real hosted server that needs a sign-in"),
    ("docs/auth.md", "agent mcp logout notion", "names a hosted server the sample only declares in a comment"),
    ("docs/run.md", "--base-url http://localhost:11434/v1", OLLAMA),
    ("docs/serve.md", "agent mcp serve --http 127.0.0.1:8808", RUNS_UNTIL_STOPPED),
    (
        "docs/exec.md",
        "curl --unix-socket",
        "runs inside a script's environment, where AGENT_BRIDGE_SOCKET is set (tests/it/bridge.rs)",
    ),
    ("docs/threat-model.md", "cargo test --test it", "runs part of this very suite"),
    ("agent mcp call --help", "github.", GITHUB),
    ("agent mcp call --help", "--interactive", "needs a terminal (tests/it/interactive.rs answers it on a pty)"),
    ("agent mcp types --help", "github", GITHUB),
    ("agent mcp search --help", "--server github", GITHUB),
    ("agent mcp examples --help", "--server everything", JSON_MODEL),
    ("agent mcp examples --help", "--refresh", JSON_MODEL),
    ("agent mcp generate --help", "--server github", GITHUB),
    ("agent mcp login --help", "agent mcp login", SIGN_IN),
    ("agent mcp serve --help", "--http 127.0.0.1:8808", RUNS_UNTIL_STOPPED),
    ("agent run --help", "--base-url http://localhost:11434/v1", OLLAMA),
];

/// Files and state every project starts with, for examples that name them.
const PRELUDE: &[(&str, &str)] = &[
    ("script.ts", "console.log(\"script.ts ran\");\n"),
    (
        "weekly-report.ts",
        "/** Totals of the last 7 days. */\nexport function weeklyReport(): number {\n  return 7;\n}\n",
    ),
    ("helpers.ts", "/** Issue helpers. */\nexport const label = (s: string): string => s.toUpperCase();\n"),
];

/// Where an example comes from, and which project it runs in.
#[derive(Debug, Clone)]
struct Example {
    /// `README.md:36` or `agent mcp call --help`.
    origin: String,
    /// `README.md` or `agent mcp call --help`: what [`SKIP`] entries name.
    page: String,
    /// Examples of one group run in order in one project.
    group: usize,
    command: String,
    expect: i32,
}

#[test]
fn every_documented_example_runs_as_written() {
    if !node_or_skip("the documented examples use server-everything from npm") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut examples = markdown_examples(root);
    let groups = examples.iter().map(|e| e.group + 1).max().unwrap_or(0);
    examples.extend(help_examples(groups));
    assert!(examples.len() > 20, "suspiciously few examples found: {examples:#?}");

    let mut used = vec![false; SKIP.len()];
    let mut failures = Vec::new();
    let mut ran = 0;
    let fake = FakeLlm::start(vec![Reply::text("Done: the examples' model answers at once."); 200]);
    let sample = adapted_sample(root);
    let mut current: Option<(usize, Project, Vec<String>)> = None;
    for ex in &examples {
        if let Some(i) = SKIP.iter().position(|(page, piece, _)| *page == ex.page && ex.command.contains(piece)) {
            used[i] = true;
            continue;
        }
        if current.as_ref().is_none_or(|(g, _, _)| *g != ex.group) {
            current = Some((ex.group, project(&sample), Vec::new()));
        }
        let Some((_, p, vars)) = current.as_mut() else { continue };
        let script = format!("{}{}", vars.concat(), ex.command);
        let out = shell(p, &fake, &script);
        ran += 1;
        if out.0 != ex.expect {
            failures.push(format!(
                "{}: `{}` exited {} (expected {})\n--- stdout:\n{}\n--- stderr:\n{}",
                ex.origin,
                ex.command,
                out.0,
                ex.expect,
                tail(&out.1),
                tail(&out.2)
            ));
        }
        if is_assignment(&ex.command) {
            vars.push(format!("{}\n", ex.command));
        }
    }
    for (i, (page, piece, why)) in SKIP.iter().enumerate() {
        if !used[i] {
            failures.push(format!("skip entry ({page}, {piece:?}: {why}) matches no example any more: remove it"));
        }
    }
    eprintln!("examples: {ran} run, {} skipped", examples.len() - ran);
    assert!(failures.is_empty(), "{} of {ran} examples failed:\n\n{}", failures.len(), failures.join("\n\n"));
}

/// The last 40 lines of `text`.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

fn is_assignment(command: &str) -> bool {
    let name_end = command.find('=').unwrap_or(0);
    name_end > 0
        && command[..name_end].chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !command[..1].chars().all(|c| c.is_ascii_digit())
}

/// `config.sample.yaml` as the test runs it: server-everything from the pinned npm install
/// (the same version the sample names), and the fixture server as `fixture`.
fn adapted_sample(root: &Path) -> String {
    let sample = std::fs::read_to_string(root.join("config.sample.yaml")).expect("read config.sample.yaml");
    let (pkg, version) = support::SERVER_EVERYTHING;
    let npx = format!("      command: npx\n      args: [\"-y\", \"{pkg}@{version}\", \"stdio\"]\n");
    assert!(
        sample.contains(&npx),
        "config.sample.yaml no longer runs {pkg}@{version} with npx as the test expects:\n{npx}"
    );
    let bin = npm_bin(support::SERVER_EVERYTHING, "mcp-server-everything");
    let installed = format!("      command: {:?}\n      args: [\"stdio\"]\n", bin.display().to_string());
    let servers = "\n  servers:\n";
    assert!(sample.contains(servers), "config.sample.yaml has no `mcp.servers`");
    sample.replacen(&npx, &installed, 1).replacen(
        servers,
        &format!("{servers}{}", fixture_stdio_yaml("fixture", &[])),
        1,
    )
}

/// A fresh project with the adapted sample and the prelude.
fn project(sample: &str) -> Project {
    let p = Project::new();
    p.write("agent.yaml", sample);
    p.write("config.sample.yaml", sample);
    for (path, text) in PRELUDE {
        p.write(path, text);
    }
    p.run_stdin(&["exec", "-"], "store(\"weekly-totals\", { open: 3 });\nwriteJson(\"reports/old.json\", { n: 1 });\n")
        .assert_ok();
    for dir in ["home/.local/share/bash-completion/completions", "home/.config/fish/completions"] {
        std::fs::create_dir_all(p.path().join(dir)).expect("mkdir");
    }
    let inspector = npm_bin(support::INSPECTOR, "mcp-inspector");
    let modules = inspector.parent().and_then(Path::parent).expect("the Inspector's node_modules");
    std::os::unix::fs::symlink(modules, p.path().join("node_modules")).expect("link node_modules");
    p
}

/// Runs `script` with bash in the project ([`Project::shell`]) with `llm.*` pointed at the fake
/// LLM, killed after two minutes. Returns (code, stdout, stderr).
fn shell(p: &Project, fake: &FakeLlm, script: &str) -> (i32, String, String) {
    let mut c = p.shell(&format!("timeout -k 5 120 bash -c {}", shell_quote(script)));
    c.env("AGENT_LLM__BASE_URL", fake.anthropic_url()).env("AGENT_LLM__MODEL", "fake-model");
    c.env("ANTHROPIC_API_KEY", "test-key").env("npm_config_offline", "true");
    let out = c.output().expect("run bash");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The examples of the ```sh blocks of README.md and docs/*.md (see the module doc).
fn markdown_examples(root: &Path) -> Vec<Example> {
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut out = Vec::new();
    let mut group = 0;
    for file in files {
        let page = file.strip_prefix(root).unwrap_or(&file).display().to_string();
        let text = std::fs::read_to_string(&file).expect("read a doc");
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let fence = lines[i].trim_start();
            if !fence.starts_with("```") {
                i += 1;
                continue;
            }
            let tag = fence.trim_start_matches('`').trim();
            let start = i + 1;
            let mut end = start;
            while end < lines.len() && !lines[end].trim_start().starts_with("```") {
                end += 1;
            }
            if tag == "sh" {
                for (line, command) in commands(&lines[start..end]) {
                    out.push(example(format!("{page}:{}", start + line + 1), &page, group, command));
                }
                group += 1;
            }
            i = end + 1;
        }
    }
    out
}

/// The commands of a shell block: (index of the first line, command), with `\` continuations
/// and here-documents joined; blank and comment-only lines left out.
fn commands(lines: &[&str]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let first = i;
        let mut command = lines[i].trim().to_string();
        i += 1;
        while command.ends_with('\\') && i < lines.len() {
            command.push('\n');
            command.push_str(lines[i]);
            i += 1;
        }
        if let Some(tag) = heredoc_tag(&command) {
            while i < lines.len() {
                command.push('\n');
                command.push_str(lines[i]);
                i += 1;
                if lines[i - 1].trim() == tag {
                    break;
                }
            }
        }
        if !command.is_empty() && !command.starts_with('#') {
            out.push((first, command));
        }
    }
    out
}

/// `EOF` of `cat > f <<'EOF'` (or `<<EOF`, `<<"EOF"`, `<<-EOF`).
fn heredoc_tag(command: &str) -> Option<String> {
    let rest = command.split_once("<<")?.1.trim_start_matches('-').trim_start();
    let tag: String =
        rest.trim_start_matches(['\'', '"']).chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!tag.is_empty()).then_some(tag)
}

fn example(origin: String, page: &str, group: usize, command: String) -> Example {
    let expect = command
        .lines()
        .last()
        .and_then(|l| l.rsplit_once("# exit "))
        .and_then(|(_, n)| n.trim().parse().ok())
        .unwrap_or(0);
    Example { origin, page: page.to_string(), group, command, expect }
}

/// The examples of every help page of the real binary (see the module doc), groups numbered
/// from `first_group`.
fn help_examples(first_group: usize) -> Vec<Example> {
    let mut out = Vec::new();
    let mut pages: Vec<Vec<String>> = vec![Vec::new()];
    let mut group = first_group;
    while let Some(path) = pages.pop() {
        let help = help_text(&path);
        let page = if path.is_empty() { "agent help".to_string() } else { format!("agent {} --help", path.join(" ")) };
        let mut in_examples = false;
        for line in help.lines() {
            if line.trim_end() == "Examples:" {
                in_examples = true;
                continue;
            }
            if in_examples && (line.trim().is_empty() || !line.starts_with(' ')) {
                in_examples = false;
            }
            let command = line.trim();
            if in_examples && (command.starts_with("agent ") || command.contains("| agent ")) {
                out.push(example(page.clone(), &page, group, command.to_string()));
            }
        }
        group += 1;
        for sub in subcommands(&help) {
            let mut next = path.clone();
            next.push(sub);
            pages.push(next);
        }
    }
    out
}

fn help_text(path: &[String]) -> String {
    let mut c = Command::new(agent_bin());
    if path.is_empty() {
        c.arg("help");
    } else {
        c.args(path).arg("--help");
    }
    let out = c.env("NO_COLOR", "1").env("COLUMNS", "200").output().expect("run agent --help");
    assert!(out.status.success(), "agent {path:?} --help failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The subcommands a help page lists under `Commands:` (not `help`).
fn subcommands(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_commands = false;
    for line in help.lines() {
        if line.trim_end() == "Commands:" {
            in_commands = true;
            continue;
        }
        if in_commands {
            if !line.starts_with("  ") {
                in_commands = false;
                continue;
            }
            if let Some(name) = line.split_whitespace().next().filter(|n| *n != "help" && !line.starts_with("      ")) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// `config.sample.yaml` claims to document every key: each key of the default configuration
/// (and of a server entry, its `auth` and `search.embeddings`) must appear in it, set or in a
/// comment.
#[test]
fn config_sample_documents_every_key() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sample = std::fs::read_to_string(root.join("config.sample.yaml")).expect("read config.sample.yaml");
    let documented = sample_keys(&sample);
    let mut wanted = Vec::new();
    let defaults = serde_json::to_value(agent::config::Config::default()).expect("serialise the defaults");
    key_paths(&defaults, "", &mut wanted);
    let server = serde_json::to_value(agent::config::ServerConfig::default()).expect("serialise a server");
    key_paths(&server, "mcp.servers.*", &mut wanted);
    let embeddings = agent::config::EmbeddingsConfig { url: String::new(), model: String::new(), api_key_env: None };
    let embeddings = serde_json::to_value(embeddings).expect("serialise search.embeddings");
    key_paths(&embeddings, "search.embeddings", &mut wanted);
    let missing: Vec<&String> = wanted.iter().filter(|k| !documented.contains(k.as_str())).collect();
    assert!(missing.is_empty(), "config.sample.yaml does not document: {missing:#?}");
}

/// Every key path of a JSON object (`mcp.code_execution.timeout`), objects' own paths included;
/// the entries of a map keyed by the user (servers, `types.discover`) are not keys.
fn key_paths(value: &Value, prefix: &str, out: &mut Vec<String>) {
    let Value::Object(map) = value else { return };
    for (k, v) in map {
        let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        out.push(path.clone());
        if !matches!(path.as_str(), "mcp.servers" | "mcp.types.discover")
            && !path.ends_with(".envs")
            && !path.ends_with(".headers")
        {
            key_paths(v, &path, out);
        }
    }
}

/// The key paths of the sample, commented-out keys included (`  # base_url: ...` is
/// `llm.base_url`): a comment's key sits at the column of the `#` plus the spaces after it
/// beyond one. Server names become `*`.
fn sample_keys(sample: &str) -> std::collections::HashSet<String> {
    let mut keys = std::collections::HashSet::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    for line in sample.lines() {
        let indent = line.len() - line.trim_start().len();
        let mut rest = line.trim_start();
        let mut col = indent;
        if let Some(after) = rest.strip_prefix('#') {
            let spaces = after.len() - after.trim_start().len();
            col = indent + spaces.saturating_sub(1);
            rest = after.trim_start();
            // A comment inside a commented-out block (`#   # transport: http`): its key sits
            // where its own `#` does.
            while let Some(inner) = rest.strip_prefix('#') {
                rest = inner.trim_start();
            }
        }
        let Some((key, _)) = rest.split_once(':') else { continue };
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            continue;
        }
        while stack.last().is_some_and(|(c, _)| *c >= col) {
            stack.pop();
        }
        let parent: Vec<&str> = stack.iter().map(|(_, k)| k.as_str()).collect();
        let name = if parent.join(".") == "mcp.servers" { "*".to_string() } else { key.to_string() };
        let path = if parent.is_empty() { name.clone() } else { format!("{}.{name}", parent.join(".")) };
        keys.insert(path);
        stack.push((col, name));
    }
    keys
}
