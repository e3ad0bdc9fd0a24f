//! `agent mcp resources/read/prompts/prompt/complete` and the servers' log messages at `-v`,
//! end to end: the real binary against npm's server-everything, and against a hostile server
//! written with the Python MCP SDK (every text it offers carries terminal control sequences;
//! binary and oversized resources; log messages when its level is set).

use crate::support;
use crate::support::pty::{exit_code, spawn};
use crate::terminal::{HOSTILE, SHOWN, assert_shown_not_obeyed};

use base64::Engine as _;
use support::{Project, everything_yaml, fixture_stdio_yaml, node_or_skip, python_mcp_or_skip};

/// The hostile server: the Python SDK's low-level `Server` over stdio. Its texts carry
/// [`HOSTILE`] (the same sequences as the fixture's `--hostile` tools).
const HOSTILE_SERVER: &str = r#"
import base64, warnings
import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

warnings.filterwarnings("ignore")
H = "A\x1b[2JB\r\x1b[2KC\x1b]8;;file:///tmp/evil.desktop\x07D\x1b]8;;\x07E\u009b31mF\u007fG\u202eH"
BLOB = bytes(range(256))

async def list_resources(ctx, params):
    return types.ListResourcesResult(resources=[
        types.Resource(uri="hostile://doc", name="doc" + H, description="about " + H, mime_type="text/plain"),
        types.Resource(uri="hostile://blob", name="blob", mime_type="application/octet-stream"),
        types.Resource(uri="hostile://big", name="big", mime_type="text/plain"),
    ])

async def list_templates(ctx, params):
    return types.ListResourceTemplatesResult(resource_templates=[
        types.ResourceTemplate(uri_template="hostile://item/{id}", name="item" + H, description=H),
    ])

async def read_resource(ctx, params):
    uri = str(params.uri)
    if uri == "hostile://doc":
        c = [types.TextResourceContents(uri=uri, mime_type="text/plain", text="doc text " + H)]
    elif uri == "hostile://blob":
        c = [types.BlobResourceContents(uri=uri, mime_type="application/octet-stream",
                                        blob=base64.b64encode(BLOB).decode())]
    elif uri == "hostile://big":
        c = [types.TextResourceContents(uri=uri, mime_type="text/plain", text="x" * 100000)]
    elif uri.startswith("hostile://item/"):
        c = [types.TextResourceContents(uri=uri, mime_type="text/plain", text="item " + uri[15:])]
    else:
        raise ValueError("no such resource: " + uri)
    return types.ReadResourceResult(contents=c)

async def list_prompts(ctx, params):
    return types.ListPromptsResult(prompts=[
        types.Prompt(name="greet", description="greets " + H,
                     arguments=[types.PromptArgument(name="who", description=H, required=True)]),
        types.Prompt(name="plain", description="a conversation that names a resource"),
    ])

async def get_prompt(ctx, params):
    if params.name == "plain":
        return types.GetPromptResult(messages=[
            types.PromptMessage(role="user", content=types.TextContent(text="Read @hostile:hostile://doc now.")),
            types.PromptMessage(role="assistant", content=types.TextContent(text="Which part?")),
            types.PromptMessage(role="user", content=types.TextContent(text="All of it.")),
        ])
    who = (params.arguments or {}).get("who", "?")
    return types.GetPromptResult(description=H, messages=[
        types.PromptMessage(role="user", content=types.TextContent(text="Hello " + who + " " + H)),
        types.PromptMessage(role="assistant", content=types.TextContent(text="Hi! " + H)),
        types.PromptMessage(role="user", content=types.ImageContent(data=base64.b64encode(BLOB).decode(),
                                                                    mime_type="image/png")),
    ])

async def complete(ctx, params):
    return types.CompleteResult(completion=types.Completion(values=["one" + H, "two"]))

async def set_level(ctx, params):
    await ctx.session.send_log_message("warning", "level set to " + params.level + " " + H + "\nsecond line")
    await ctx.session.send_log_message("info", {"json": H})
    return types.EmptyResult()

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[])

server = Server("hostile", on_list_resources=list_resources, on_list_resource_templates=list_templates,
                on_read_resource=read_resource, on_list_prompts=list_prompts, on_get_prompt=get_prompt,
                on_completion=complete, on_set_logging_level=set_level, on_list_tools=list_tools)

async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"#;

/// The hostile server's `mcp.servers` entry as `hostile` (its script written into `p`), with
/// `extra` keys; `None` when the Python SDK cannot be had on a developer machine.
pub fn hostile_server_yaml(p: &Project, extra: &[&str]) -> Option<String> {
    let python = python_mcp_or_skip("a hostile MCP server written with the Python SDK")?;
    let script = p.write("hostile_server.py", HOSTILE_SERVER);
    let mut yaml = format!(
        "    hostile:\n      command: {:?}\n      args: [{:?}]\n      connect_timeout: 30s\n",
        python.display().to_string(),
        script.display().to_string(),
    );
    for k in extra {
        yaml.push_str(&format!("      {k}\n"));
    }
    Some(yaml)
}

fn everything_project() -> Option<Project> {
    if !node_or_skip("server-everything offers resources, prompts and completions") {
        return None;
    }
    Some(Project::with_servers(&format!("{}{}", everything_yaml("everything"), fixture_stdio_yaml("fixture", &[]))))
}

const DOC: &str = "demo://resource/static/document/architecture.md";

#[test]
fn resources_are_listed_per_server_and_read_as_text_or_saved_as_bytes() {
    let Some(p) = everything_project() else { return };
    let r = p.run(&["mcp", "resources", "--json"]);
    r.assert_ok();
    let doc = r.json();
    // Only the server that offers resources; the fixture offers none.
    let servers: Vec<&str> = doc.as_array().unwrap().iter().map(|s| s["server"].as_str().unwrap()).collect();
    assert_eq!(servers, ["everything"]);
    assert!(doc[0]["resources"].as_array().unwrap().iter().any(|r| r["uri"] == DOC), "{doc}");
    let templates: Vec<&str> =
        doc[0]["resourceTemplates"].as_array().unwrap().iter().map(|t| t["uriTemplate"].as_str().unwrap()).collect();
    assert!(templates.contains(&"demo://resource/dynamic/blob/{resourceId}"), "{templates:?}");

    let r = p.run(&["mcp", "resources"]);
    r.assert_ok();
    assert!(r.stdout.starts_with("everything ("), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("  {DOC}")), "{}", r.stdout);
    assert!(r.stdout.ends_with("; none on fixture\n"), "{}", r.stdout);

    // Text: printed as the server sent it (the --json form holds the same text).
    let json = p.run(&["mcp", "read", "everything", DOC, "--json"]);
    json.assert_ok();
    let text = json.json()["contents"][0]["text"].as_str().unwrap().to_string();
    assert!(text.contains("Architecture"), "{text}");
    let r = p.run(&["mcp", "read", "everything", DOC]);
    r.assert_ok();
    assert_eq!(r.stdout.trim_end_matches('\n'), text.trim_end_matches('\n'));

    // Binary: summarised on stdout, written byte for byte with --output.
    let blob_uri = "demo://resource/dynamic/blob/7";
    let r = p.run(&["mcp", "read", "everything", blob_uri]);
    r.assert_ok();
    assert!(r.stdout.starts_with("[binary: ") && r.stdout.ends_with("; save it with --output FILE]\n"), "{}", r.stdout);
    let json = p.run(&["mcp", "read", "everything", blob_uri, "--json"]);
    let blob = json.json()["contents"][0]["blob"].as_str().unwrap().to_string();
    let bytes = base64::engine::general_purpose::STANDARD.decode(&blob).unwrap();
    let r = p.run(&["mcp", "read", "everything", blob_uri, "--output", "blob.bin"]);
    r.assert_ok();
    assert_eq!(r.stdout, "");
    // The dynamic blob names the time it was made: compare all but that.
    let written = std::fs::read(p.path().join("blob.bin")).unwrap();
    assert_eq!(written.len(), bytes.len());
    assert!(written.starts_with(b"Resource 7: This is a base64 blob"), "{written:?}");

    // The user's mistakes: exit 2 with suggestions, no file.
    let r = p.run(&["mcp", "read", "everything", &format!("{DOC}x"), "--output", "nope.txt"]);
    r.assert_code(2);
    assert!(r.stderr.contains(&format!("did you mean `{DOC}`")), "{}", r.stderr);
    assert!(!p.path().join("nope.txt").exists());
    let r = p.run(&["mcp", "read", "everythin", DOC]);
    r.assert_code(2);
    assert!(r.stderr.contains("`everything`"), "{}", r.stderr);
    let r = p.run(&["mcp", "read", "fixture", "file:///x"]);
    r.assert_code(2);
    assert_eq!(r.stderr, "error: server `fixture` offers no resources\n");
    let r = p.run(&["mcp", "resources", "--server", "nope"]);
    r.assert_code(2);
}

#[test]
fn prompts_are_listed_got_with_arguments_and_completed() {
    let Some(p) = everything_project() else { return };
    let r = p.run(&["mcp", "prompts", "--json"]);
    r.assert_ok();
    let doc = r.json();
    assert_eq!(doc.as_array().unwrap().len(), 1, "{doc}");
    let args_prompt = doc[0]["prompts"].as_array().unwrap().iter().find(|p| p["name"] == "args-prompt").unwrap();
    assert_eq!(args_prompt["arguments"][0]["name"], "city");
    let r = p.run(&["mcp", "prompts"]);
    r.assert_ok();
    assert!(r.stdout.contains("  args-prompt(city*, state)"), "{}", r.stdout);

    let r = p.run(&["mcp", "prompt", "everything.args-prompt", "--args", r#"{"city": "Oslo"}"#]);
    r.assert_ok();
    assert_eq!(r.stdout, "user:\n  What's weather in Oslo?\n");
    let r = p.run(&["mcp", "prompt", "everything.args-prompt", "--args", r#"{"city": "Oslo"}"#, "--json"]);
    r.assert_ok();
    assert_eq!(r.json()["messages"][0]["content"]["text"], "What's weather in Oslo?");
    // An embedded resource is summarised.
    let r = p.run(&[
        "mcp",
        "prompt",
        "everything.resource-prompt",
        "--args",
        r#"{"resourceType": "Text", "resourceId": "2"}"#,
    ]);
    r.assert_ok();
    assert!(r.stdout.contains("  [resource: demo://resource/dynamic/text/2, text/plain, "), "{}", r.stdout);

    let r = p.run(&["mcp", "prompt", "everything.args-prompt"]);
    r.assert_code(2);
    assert!(r.stderr.contains("missing required argument `city`"), "{}", r.stderr);
    let r = p.run(&["mcp", "prompt", "everything.args-promt"]);
    r.assert_code(2);
    assert!(r.stderr.contains("did you mean `everything.args-prompt`"), "{}", r.stderr);
    let r = p.run(&["mcp", "prompt", "everything"]);
    r.assert_code(2);

    // Completions of a prompt's argument, narrowed by the arguments already chosen, and of a
    // template's variable by its name or its URI template.
    let r = p.run(&["mcp", "complete", "everything.completable-prompt", "department", ""]);
    r.assert_ok();
    let departments: Vec<&str> = r.stdout.lines().collect();
    assert!(departments.contains(&"Engineering"), "{departments:?}");
    let r = p.run(&["mcp", "complete", "everything.completable-prompt", "department", "Eng"]);
    r.assert_ok();
    assert_eq!(r.stdout, "Engineering\n");
    let r = p.run(&[
        "mcp",
        "complete",
        "everything.completable-prompt",
        "name",
        "",
        "--args",
        r#"{"department": "Engineering"}"#,
        "--json",
    ]);
    r.assert_ok();
    assert!(!r.json()["values"].as_array().unwrap().is_empty(), "{}", r.stdout);
    for template in ["everything.demo://resource/dynamic/text/{resourceId}", "everything.Dynamic Text Resource"] {
        let r = p.run(&["mcp", "complete", template, "resourceId", "1"]);
        r.assert_ok();
        assert!(r.stdout.lines().all(|l| l.starts_with('1')) && !r.stdout.is_empty(), "{template}: {}", r.stdout);
    }
    let r = p.run(&["mcp", "complete", "everything.completable-promt", "department", ""]);
    r.assert_code(2);
    assert!(r.stderr.contains("did you mean `everything.completable-prompt`"), "{}", r.stderr);
    let r = p.run(&["mcp", "complete", "fixture.x", "a", ""]);
    r.assert_code(2);
    assert_eq!(r.stderr, "error: server `fixture` offers no completions\n");
}

#[test]
fn server_log_messages_show_at_v_as_one_line_each() {
    let Some(p) = everything_project() else { return };
    p.write_config(&format!("mcp:\n  servers:\n{}      log_level: debug\n", everything_yaml("everything")));
    // server-everything sends one message at once when simulated logging is turned on.
    let r = p.run(&["-v", "mcp", "call", "everything.toggle-simulated-logging"]);
    r.assert_ok();
    let line = regex::Regex::new(r"(?m)^server `everything`: (debug|info|notice|warning|error|critical|alert|emergency): \w+[- ]level[- ]message$").unwrap();
    assert!(line.is_match(&r.stderr), "{}", r.stderr);
    // Without -v they are not shown.
    let r = p.run(&["mcp", "call", "everything.toggle-simulated-logging"]);
    r.assert_ok();
    assert!(!r.stderr.contains("server `everything`:"), "{}", r.stderr);
}

#[test]
fn the_configured_log_level_reaches_the_server_and_what_it_logs_is_one_plain_line() {
    let p = Project::new();
    let Some(server) = hostile_server_yaml(&p, &["log_level: notice"]) else { return };
    p.write_config(&format!("mcp:\n  servers:\n{server}"));
    let r = p.run(&["-v", "mcp", "prompts"]);
    r.assert_ok();
    // To a pipe the message is folded to one line, its JSON data compact.
    assert!(
        r.stderr.contains(&format!("server `hostile`: warning: level set to notice {SHOWN} second line\n")),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("server `hostile`: info: {\"json\":\"A\\u001b[2JB"), "{}", r.stderr);
}

#[test]
fn a_hostile_servers_resources_prompts_completions_and_logs_are_shown_not_obeyed_on_a_terminal() {
    let p = Project::new();
    let Some(server) = hostile_server_yaml(&p, &["log_level: debug"]) else { return };
    p.write_config(&format!("mcp:\n  servers:\n{server}"));
    for args in [
        &["-v", "mcp", "resources"][..],
        &["mcp", "prompts"],
        &["mcp", "prompt", "hostile.greet", "--args", r#"{"who": "you"}"#],
        &["mcp", "read", "hostile", "hostile://doc"],
        &["mcp", "complete", "hostile.greet", "who", ""],
    ] {
        let mut s = spawn(&p, args);
        let out = s.exp_eof().unwrap_or_default();
        assert_eq!(exit_code(&mut s), 0, "{args:?}: {out:?}");
        assert_shown_not_obeyed(&format!("{args:?}"), &out);
    }
    // The blob holds every byte (ESC among them): only its summary reaches the terminal.
    let mut s = spawn(&p, &["mcp", "read", "hostile", "hostile://blob"]);
    let out = s.exp_eof().unwrap_or_default();
    assert_eq!(exit_code(&mut s), 0, "{out:?}");
    assert!(out.contains("[binary: application/octet-stream, 256 B; save it with --output FILE]"), "{out:?}");
    // (The spinner's own ESC sequences aside: none of the blob's other control bytes came.)
    assert!(!out.contains(['\u{1}', '\u{7}', '\u{8}', '\u{7f}']), "{out:?}");

    // To a pipe the server's text is byte-exact: it is data there.
    let r = p.run(&["mcp", "prompt", "hostile.greet", "--args", r#"{"who": "you"}"#]);
    r.assert_ok();
    assert!(r.stdout.contains(&format!("  Hello you {HOSTILE}\n")), "{:?}", r.stdout);
    let r = p.run(&["mcp", "read", "hostile", "hostile://doc"]);
    assert_eq!(r.stdout, format!("doc text {HOSTILE}\n"));
}

#[test]
fn read_output_replaces_a_planted_link_and_never_writes_through_it() {
    let p = Project::new();
    let Some(server) = hostile_server_yaml(&p, &[]) else { return };
    p.write_config(&format!("mcp:\n  servers:\n{server}"));
    // Another local process planted `out.bin` as a link to a file of the user's.
    let victim = p.write("victim.txt", "keep me");
    std::os::unix::fs::symlink(&victim, p.path().join("out.bin")).unwrap();
    let r = p.run(&["mcp", "read", "hostile", "hostile://blob", "--output", "out.bin"]);
    r.assert_ok();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    let meta = std::fs::symlink_metadata(p.path().join("out.bin")).unwrap();
    assert!(meta.file_type().is_file(), "{meta:?}");
    assert_eq!(std::fs::read(p.path().join("out.bin")).unwrap(), (0..=255u8).collect::<Vec<u8>>());
    assert!(r.stderr.starts_with("wrote 256 B to out.bin"), "{}", r.stderr);
    // Nothing left behind by the atomic write.
    let names: Vec<String> = std::fs::read_dir(p.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') && n != ".kodelet")
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn read_completes_server_names_like_the_other_server_arguments() {
    let p = Project::with_fixture();
    let script = p.write("agent.bash", &p.run(&["completions", "bash"]).stdout);
    assert_eq!(crate::completions::bash_complete(&p, &script, &["agent", "mcp", "read", "fi"]), ["fixture"]);
    assert_eq!(crate::completions::bash_complete(&p, &script, &["agent", "mcp", "reso"]), ["resources"]);
    let fish = p.run(&["completions", "fish"]).stdout;
    assert!(fish.contains("__fish_seen_subcommand_from get remove enable disable login logout read"), "{fish}");
}

/// A server that never answers a read is given up at its `call_timeout`, with the key named; the
/// command ends instead of hanging.
#[test]
fn a_read_the_server_never_answers_ends_at_call_timeout() {
    let p = Project::with_servers(&format!(
        "{}      call_timeout: 1s\n",
        support::fixture_stdio_yaml("fixture", &["--resources"])
    ));
    let started = std::time::Instant::now();
    let r = p.run(&["mcp", "read", "fixture", "fixture://slow/60000"]);
    r.assert_code(1);
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    assert!(
        r.stderr.contains(
            "server `fixture` failed `resources/read fixture://slow/60000`: no answer within 1s (call_timeout)"
        ),
        "{}",
        r.stderr
    );
    // The same URI with a short wait answers.
    let r = p.run(&["mcp", "read", "fixture", "fixture://slow/10"]);
    r.assert_ok();
    assert_eq!(r.stdout, "slow, but here\n");
}
