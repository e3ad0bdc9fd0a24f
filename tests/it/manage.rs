//! `agent mcp add/add-json/get/remove/enable/disable` on real files with the real binary: a
//! hand-written Claude Code `.mcp.json` kept byte-for-byte outside the edited entry, refusals,
//! masking of secrets in every output, a server added here started by `agent mcp list`, a
//! planted symbolic link, a write killed midway, racing editors; and Claude Code's own servers
//! in `~/.claude.json` imported below `.mcp.json`.

use std::path::Path;

use crate::support;

use support::{Project, fixture_bin};

/// A Claude Code project file as a person might have left it: unknown keys at both levels, an
/// order that is not alphabetical, one-line and multi-line entries, an escaped character.
const CLAUDE_MCP_JSON: &str = r#"{
  "$schema": "https://example.com/mcp.schema.json",
  "mcpServers": {
    "zeta": {
      "command": "npx",
      "args": ["-y", "zeta-mcp"],
      "alwaysAllow": ["read"],
      "env": {"ZETA_HOME": "/srv/z\u00e9ta"}
    },
    "alpha": {"type": "http", "url": "https://alpha.example/mcp", "oauth": {"clientId": "x"}}
  },
  "cursorSettings": {"b": 2, "a": 1}
}
"#;

fn fixture() -> String {
    fixture_bin().display().to_string()
}

fn read(p: &Project, rel: &str) -> String {
    std::fs::read_to_string(p.path().join(rel)).expect("read file")
}

#[test]
fn a_claude_code_file_keeps_every_untouched_byte_through_add_disable_enable_remove() {
    let p = Project::new();
    p.write(".mcp.json", CLAUDE_MCP_JSON);
    let fx = fixture();
    p.run(&["mcp", "add", "fixture", "--", &fx, "--quiet-flag-never-read"]).assert_ok();
    let added = read(&p, ".mcp.json");
    // The original text up to the end of the last entry, then the new entry, then the rest.
    let cut = CLAUDE_MCP_JSON.find("\n  },\n  \"cursorSettings\"").expect("cut point");
    let entry = format!(
        ",\n    \"fixture\": {{\n      \"type\": \"stdio\",\n      \"command\": {},\n      \"args\": [\n        \"--quiet-flag-never-read\"\n      ]\n    }}",
        serde_json::to_string(&fx).unwrap()
    );
    assert_eq!(added, format!("{}{entry}{}", &CLAUDE_MCP_JSON[..cut], &CLAUDE_MCP_JSON[cut..]));

    p.run(&["mcp", "disable", "alpha"]).assert_ok();
    let disabled = read(&p, ".mcp.json");
    assert!(
        disabled.contains(r#""alpha": {"type": "http", "url": "https://alpha.example/mcp", "oauth": {"clientId": "x"}, "disabled": true}"#),
        "{disabled}"
    );
    let get = p.run(&["mcp", "get", "alpha", "--json"]);
    get.assert_ok();
    assert_eq!(get.json()["disabled"], true);
    p.run(&["mcp", "enable", "alpha"]).assert_ok();
    assert_eq!(read(&p, ".mcp.json"), added, "enable undoes disable byte for byte");
    p.run(&["mcp", "remove", "fixture"]).assert_ok();
    assert_eq!(read(&p, ".mcp.json"), CLAUDE_MCP_JSON, "remove undoes add byte for byte");
}

#[test]
fn an_existing_name_is_refused_without_force_and_replaced_with_it() {
    let p = Project::new();
    p.write(".mcp.json", CLAUDE_MCP_JSON);
    let r = p.run(&["mcp", "add", "zeta", "--", "other-command"]);
    r.assert_code(2);
    assert!(r.stderr.contains("server `zeta` already exists") && r.stderr.contains("--force"), "{}", r.stderr);
    assert_eq!(read(&p, ".mcp.json"), CLAUDE_MCP_JSON, "a refused add leaves the file alone");

    p.run(&["mcp", "add", "--force", "zeta", "--", "other-command", "-x"]).assert_ok();
    let doc: serde_json::Value = serde_json::from_str(&read(&p, ".mcp.json")).unwrap();
    assert_eq!(
        doc["mcpServers"]["zeta"],
        serde_json::json!({"type": "stdio", "command": "other-command", "args": ["-x"]})
    );
    assert_eq!(doc["cursorSettings"], serde_json::json!({"b": 2, "a": 1}));
    let keys: Vec<&String> = doc["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["zeta", "alpha"], "a replaced entry keeps its place");
}

#[test]
fn bad_names_values_and_entries_are_usage_errors_that_write_nothing() {
    let p = Project::new();
    for args in [
        &["mcp", "add", "has.dot", "--", "x"][..],
        &["mcp", "add", "a b", "--", "x"],
        &["mcp", "add", "x", "--env", "1BAD=v", "--", "x"],
        &["mcp", "add", "x", "--env", "NOEQUALS", "--", "x"],
        &["mcp", "add", "-t", "sse", "x", "https://h/sse"],
        &["mcp", "add", "-t", "http", "x", "ftp://h/"],
        &["mcp", "add", "-t", "http", "x", "https://h/", "--header", "no colon"],
        &["mcp", "add", "x", "--header", "A: b", "--", "cmd"],
        &["mcp", "add", "x", "https://h/mcp"],
        &["mcp", "add-json", "x", "{not json"],
        &["mcp", "add-json", "x", "[1]"],
        &["mcp", "add-json", "x", r#"{"command": "a", "url": "https://h"}"#],
        &["mcp", "add-json", "x", r#"{"args": "not a list", "command": "a"}"#],
        &["mcp", "add", "--scope", "local", "x", "--", "cmd"],
    ] {
        let r = p.run(args);
        r.assert_code(2);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: one line: {}", r.stderr);
        assert!(!p.path().join(".mcp.json").exists(), "{args:?} wrote a file");
    }
    // A file that is not an mcpServers object is refused, not overwritten.
    p.write(".mcp.json", "{\"mcpServers\": [1, 2]}");
    p.run(&["mcp", "add", "x", "--", "cmd"]).assert_code(2);
    assert_eq!(read(&p, ".mcp.json"), "{\"mcpServers\": [1, 2]}");
    // add-json writes the entry as given: its key order and other hosts' keys.
    std::fs::remove_file(p.path().join(".mcp.json")).unwrap();
    let entry = r#"{"timeout": 5, "command": "uvx", "args": ["w"], "autoApprove": []}"#;
    p.run(&["mcp", "add-json", "w", entry]).assert_ok();
    let doc: serde_json::Value = serde_json::from_str(&read(&p, ".mcp.json")).unwrap();
    let keys: Vec<&String> = doc["mcpServers"]["w"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["timeout", "command", "args", "autoApprove"]);
}

#[test]
fn secrets_given_with_env_and_header_reach_only_the_file_never_the_output() {
    let p = Project::new();
    let env_secret = "envsecret-0123456789";
    let header_secret = "headersecret-abcdefgh";
    let query_secret = "querysecret-ijklmnop";
    let r =
        p.run(&["mcp", "add", "local", "--env", &format!("API_TOKEN={env_secret}"), "--", "/nonexistent/mcp-server"]);
    r.assert_ok();
    let url = format!("http://127.0.0.1:9/mcp?api_key={query_secret}&region=eu");
    let h = format!("Authorization: Bearer {header_secret}");
    let r2 = p.run(&["mcp", "add", "-t", "http", "remote", &url, "--header", &h, "--header", "X-Region: eu"]);
    r2.assert_ok();
    let file = read(&p, ".mcp.json");
    for s in [env_secret, header_secret, query_secret] {
        assert!(file.contains(s), "the secret is in the chosen file");
    }
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p.path().join(".mcp.json")).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "a new file holding secrets is private");

    let mut runs = vec![r, r2];
    runs.push(p.run(&["mcp", "get", "local"]));
    runs.push(p.run(&["mcp", "get", "local", "--json"]));
    runs.push(p.run(&["mcp", "get", "remote"]));
    runs.push(p.run(&["mcp", "get", "remote", "--json"]));
    runs.push(p.run(&["mcp", "list"]));
    runs.push(p.run(&["mcp", "list", "--json"]));
    for run in &runs {
        for s in [env_secret, header_secret, query_secret] {
            assert!(
                !run.stdout.contains(s) && !run.stderr.contains(s),
                "a secret leaked:\n{}\n{}",
                run.stdout,
                run.stderr
            );
        }
    }
    let get = p.run(&["mcp", "get", "remote", "--json"]).json();
    assert_eq!(get["headers"]["Authorization"], "Be***");
    assert_eq!(get["headers"]["X-Region"], "eu", "a plain header is shown");
    assert_eq!(get["url"], "http://127.0.0.1:9/mcp?api_key=qu***&region=eu");
    let local = p.run(&["mcp", "get", "local"]);
    assert!(local.stdout.contains("API_TOKEN=en***"), "{}", local.stdout);
    let list = &runs[6];
    assert!(
        list.stderr.contains("server `local` failed") && list.stderr.contains("server `remote` failed"),
        "{}",
        list.stderr
    );
}

#[test]
fn a_server_added_with_add_is_started_by_mcp_list() {
    let p = Project::new();
    p.run(&["mcp", "add", "fixture", "--", &fixture()]).assert_ok();
    let list = p.run(&["mcp", "list", "--json"]);
    list.assert_ok();
    let tools = list.json();
    assert!(
        tools.as_array().unwrap().iter().any(|t| t["server"] == "fixture" && t["name"] == "echo"),
        "{}",
        list.stdout
    );
    p.run(&["mcp", "disable", "fixture"]).assert_ok();
    let off = p.run(&["mcp", "list"]);
    off.assert_ok();
    assert!(off.stderr.contains("no MCP servers configured"), "{}", off.stderr);
}

#[test]
fn a_symlinked_mcp_json_planted_by_a_checkout_is_refused_and_its_target_untouched() {
    let p = Project::new();
    // The link leads out of the project, to a file another host reads.
    let outside =
        p.write("home/.config/other-host/servers.json", "{\"mcpServers\": {\"zeta\": {\"command\": \"z\"}}}\n");
    std::os::unix::fs::symlink(&outside, p.path().join(".mcp.json")).unwrap();
    for args in [
        &["mcp", "add", "evil", "--", "cmd"][..],
        &["mcp", "add-json", "evil", r#"{"command": "cmd"}"#],
        &["mcp", "remove", "zeta"],
        &["mcp", "disable", "zeta"],
    ] {
        let r = p.run(args);
        r.assert_code(2);
        assert!(r.stderr.contains("is a symbolic link") && r.stderr.contains("servers.json"), "{args:?}: {}", r.stderr);
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "{\"mcpServers\": {\"zeta\": {\"command\": \"z\"}}}\n");
    assert!(std::fs::symlink_metadata(p.path().join(".mcp.json")).unwrap().file_type().is_symlink());
}

#[test]
fn a_write_killed_midway_leaves_the_old_file_whole() {
    let p = Project::new();
    // Big enough that the new file passes the 1-block file size limit below.
    let padding: String = (0..64).map(|i| format!("    \"s{i}\": {{\"command\": \"c{i}\"}},\n")).collect();
    let original = format!("{{\n  \"mcpServers\": {{\n{padding}    \"last\": {{\"command\": \"l\"}}\n  }}\n}}\n");
    p.write(".mcp.json", &original);
    // The kernel stops the write past one block (SIGXFSZ): a crash in the middle of writing.
    let agent = support::agent_bin();
    let script = format!("ulimit -f 1; exec {} mcp add newone -- cmd", agent.display());
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(&script)
        .current_dir(p.path())
        .env("HOME", p.path().join("home"))
        .status()
        .expect("run sh");
    assert!(!status.success(), "the write cannot have succeeded under the limit");
    assert_eq!(read(&p, ".mcp.json"), original, "the file is the old one, whole");
    // Then, without the limit, the same command works on the intact file.
    p.run(&["mcp", "add", "newone", "--", "cmd"]).assert_ok();
    let doc: serde_json::Value = serde_json::from_str(&read(&p, ".mcp.json")).unwrap();
    assert_eq!(doc["mcpServers"].as_object().unwrap().len(), 66);
}

#[test]
fn racing_editors_each_land_their_server() {
    let p = Project::new();
    p.write(".mcp.json", CLAUDE_MCP_JSON);
    let children: Vec<_> = (0..8)
        .map(|i| {
            let name = format!("racer{i}");
            p.cmd(&["mcp", "add", &name, "--", "cmd"]).stdout(std::process::Stdio::null()).spawn().expect("spawn")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let doc: serde_json::Value = serde_json::from_str(&read(&p, ".mcp.json")).unwrap();
    let servers = doc["mcpServers"].as_object().unwrap();
    for i in 0..8 {
        assert!(servers.contains_key(&format!("racer{i}")), "racer{i} was lost: {servers:?}");
    }
    assert_eq!(servers.len(), 10);
}

#[test]
fn the_user_scope_writes_the_users_own_file_which_every_project_reads() {
    let p = Project::new();
    p.run(&["mcp", "add", "--scope", "user", "fixture", "--", &fixture()]).assert_ok();
    let file = p.path().join("home/.config/agent/mcp.json");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let get = p.run(&["mcp", "get", "fixture", "--json"]);
    get.assert_ok();
    assert_eq!(get.json()["scope"], "user");
    let list = p.run(&["mcp", "list", "--json"]);
    list.assert_ok();
    assert!(list.stdout.contains("\"echo\""), "{}", list.stdout);
    // The project's .mcp.json wins over the user's file for the same name.
    p.run(&["mcp", "add", "fixture", "--", "/nonexistent/project-one"]).assert_ok();
    assert_eq!(p.run(&["mcp", "get", "fixture", "--json"]).json()["scope"], "project");
    // Both have it now: remove wants to know which.
    let r = p.run(&["mcp", "remove", "fixture"]);
    r.assert_code(2);
    assert!(r.stderr.contains("--scope"), "{}", r.stderr);
    p.run(&["mcp", "remove", "fixture", "--scope", "user"]).assert_ok();
    assert!(!read(&p, "home/.config/agent/mcp.json").contains("fixture"));
}

#[test]
fn servers_of_agent_yaml_are_not_removed_here_and_unknown_names_get_a_suggestion() {
    let p = Project::with_fixture();
    let r = p.run(&["mcp", "remove", "fixture"]);
    r.assert_code(2);
    assert!(r.stderr.contains("agent.yaml"), "{}", r.stderr);
    p.write(".mcp.json", CLAUDE_MCP_JSON);
    let r = p.run(&["mcp", "disable", "zetta"]);
    r.assert_code(2);
    assert!(r.stderr.contains("did you mean `zeta`"), "{}", r.stderr);
    // A name agent.yaml also declares: the note says which one is used.
    let r = p.run(&["mcp", "add", "fixture", "--", "cmd"]);
    r.assert_ok();
    assert!(r.stderr.contains("also declares `fixture`"), "{}", r.stderr);
}

/// Claude Code's `~/.claude.json`: `projects["<dir>"].mcpServers` (its `local` scope) and the
/// top-level `mcpServers` (its `user` scope), amid the rest of its state.
fn claude_json(project: &Path, project_servers: &str, user_servers: &str) -> String {
    format!(
        r#"{{"numStartups": 12, "projects": {{"/somewhere/else": {{"mcpServers": {{"elsewhere": {{"command": "nope"}}}}}},
 {}: {{"allowedTools": [], "mcpServers": {project_servers}, "history": [{{"display": "hi"}}]}}}},
 "mcpServers": {user_servers}, "oauthAccount": {{"emailAddress": "a@b"}}}}"#,
        serde_json::to_string(&project.display().to_string()).unwrap()
    )
}

#[test]
fn claude_codes_project_and_user_servers_are_imported_below_mcp_json() {
    let p = Project::new();
    let fx = serde_json::to_string(&fixture()).unwrap();
    let real = p.path().canonicalize().unwrap();
    p.write(
        "home/.claude.json",
        &claude_json(
            &real,
            &format!(r#"{{"local": {{"type": "stdio", "command": {fx}, "args": []}}, "shared": {{"command": "/nonexistent/from-claude-local"}}}}"#),
            &format!(r#"{{"mine": {{"command": {fx}}}, "local": {{"command": "/nonexistent/from-claude-user"}}}}"#),
        ),
    );
    // Before agent knew the file, this said "no MCP servers configured".
    let list = p.run(&["mcp", "list", "--json", "--server", "local", "--server", "mine"]);
    list.assert_ok();
    let tools = list.json();
    let servers: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["server"].as_str().unwrap()).collect();
    assert!(servers.contains(&"local") && servers.contains(&"mine"), "{servers:?}");
    assert!(!p.run(&["mcp", "get", "elsewhere"]).stderr.is_empty(), "another project's servers stay out");
    let local = p.run(&["mcp", "get", "local", "--json"]).json();
    assert_eq!(local["scope"], "claude-code");
    assert_eq!(local["command"], fixture().as_str(), "the project entry wins over Claude's user one");
    // .mcp.json wins over ~/.claude.json.
    p.write(".mcp.json", r#"{"mcpServers": {"shared": {"command": "/nonexistent/from-mcp-json"}}}"#);
    let shared = p.run(&["mcp", "get", "shared", "--json"]).json();
    assert_eq!(shared["command"], "/nonexistent/from-mcp-json");
    // agent does not write Claude's file: remove says where the server is.
    let r = p.run(&["mcp", "remove", "mine"]);
    r.assert_code(2);
    assert!(r.stderr.contains("claude mcp remove mine"), "{}", r.stderr);
    // A broken ~/.claude.json is Claude's problem: agent warns at most and goes on.
    p.write("home/.claude.json", "{ not json");
    p.run(&["mcp", "get", "shared"]).assert_ok();
}
