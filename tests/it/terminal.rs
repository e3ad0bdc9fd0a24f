//! Server text on a terminal: a hostile server (the fixture's `--hostile` tools) puts escape and
//! C1 sequences, carriage returns, an OSC 8 link, DEL and a bidi override into a tool's title,
//! description, result and progress messages, an elicitation form and a URL elicitation. On a
//! real pseudo-terminal none of it is obeyed (it is shown, as U+FFFD); to a pipe the same output
//! is byte-exact. A URL elicitation offers only https (or http to this machine), shows the host
//! on its own line, and opens nothing unless the user says yes.

use crate::support;
use crate::support::fake_llm;
use crate::support::pty;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use fake_llm::{Api, FakeLlm, Reply};
use pty::{exit_code, key, spawn, spawn_command};
use rexpect::session::PtySession;
use serde_json::json;
use support::{Project, fixture_stdio_yaml, wait_until};

/// What every text of the `--hostile` tools holds (the fixture's `HOSTILE`).
pub const HOSTILE: &str =
    "A\x1b[2JB\r\x1b[2KC\x1b]8;;file:///tmp/evil.desktop\x07D\x1b]8;;\x07E\u{9b}31mF\u{7f}G\u{202e}H";
/// [`HOSTILE`] as the terminal must show it: every control as U+FFFD, the CR dropped.
pub const SHOWN: &str = "A\u{FFFD}[2JB\u{FFFD}[2KC\u{FFFD}]8;;file:///tmp/evil.desktop\u{FFFD}D\u{FFFD}]8;;\u{FFFD}E\u{FFFD}31mF\u{FFFD}G\u{FFFD}H";
/// The parts of [`HOSTILE`] a terminal would obey: clear the screen, return to the start of the
/// line (the CR after `2JB`: the terminal's own `ESC [1B` is followed by CRs), open a hyperlink,
/// ring the bell (the OSC terminator), C1 CSI, DEL, RLO.
const OBEYED: [&str; 7] = ["\x1b[2J", "2JB\r", "\x1b]8;;", "\x07", "\u{9b}", "\u{7f}", "\u{202e}"];

/// `s` as rexpect holds what the terminal received: one `char` per byte.
fn as_read(s: &str) -> String {
    s.bytes().map(char::from).collect()
}

/// `out` (terminal output as rexpect reads it) shows [`HOSTILE`] as [`SHOWN`] and carries none
/// of its sequences.
#[track_caller]
pub fn assert_shown_not_obeyed(what: &str, out: &str) {
    assert!(out.contains(&as_read(SHOWN)), "{what}: the hostile text is not shown: {out:?}");
    for seq in OBEYED {
        assert!(!out.contains(&as_read(seq)), "{what}: {seq:?} reached the terminal: {out:?}");
    }
}

/// The fixture with `--hostile` and `--host-tools`, `keys` on its entry, the fake LLM when given.
fn project(keys: &[&str], fake: Option<&FakeLlm>) -> Project {
    let mut server = fixture_stdio_yaml("fixture", &["--hostile", "--host-tools"]);
    for k in keys {
        server.push_str(&format!("      {k}\n"));
    }
    let llm = fake.map(|f| f.llm_yaml(Api::Anthropic)).unwrap_or_default();
    let p = Project::new();
    p.write_config(&format!("{llm}mcp:\n  servers:\n{server}"));
    p
}

/// Waits for `needle`, adding what came before it (and it) to `seen`.
fn expect(s: &mut PtySession, seen: &mut String, needle: &str) {
    let before = s.exp_string(needle).unwrap_or_else(|e| panic!("no {needle:?}: {e}\nafter: {seen:?}"));
    seen.push_str(&before);
    seen.push_str(needle);
}

/// Waits for `needle` (see [`expect`]), then types `keys`.
fn answer(s: &mut PtySession, seen: &mut String, needle: &str, keys: &str) {
    expect(s, seen, needle);
    key(s, keys);
}

/// Everything until the process ends, then its exit code.
fn finish(mut s: PtySession, seen: &mut String) -> i32 {
    seen.push_str(&s.exp_eof().unwrap_or_default());
    exit_code(&mut s)
}

#[test]
fn list_and_call_on_a_terminal_show_server_controls_and_obey_none() {
    let p = project(&[], None);
    let mut out = String::new();
    let code = finish(spawn(&p, &["mcp", "list", "--detailed"]), &mut out);
    assert_eq!(code, 0, "{out:?}");
    assert!(out.contains(&as_read(&format!("title: {SHOWN}"))), "{out:?}");
    assert_shown_not_obeyed("mcp list --detailed", &out);

    // The result on stdout, the progress message on stderr: both the terminal.
    let mut out = String::new();
    let code = finish(spawn(&p, &["mcp", "call", "fixture.hostile_text"]), &mut out);
    assert_eq!(code, 0, "{out:?}");
    assert!(out.contains(&as_read(&format!("fixture: progress 1/2 {SHOWN}"))), "{out:?}");
    assert_shown_not_obeyed("mcp call", &out);

    // A tool error goes to stderr.
    let mut out = String::new();
    let code = finish(spawn(&p, &["mcp", "call", "fixture.hostile_text", "--args", r#"{"error": true}"#]), &mut out);
    assert_eq!(code, 1, "{out:?}");
    assert!(out.contains("error: `fixture.hostile_text` reported an error"), "{out:?}");
    assert_shown_not_obeyed("mcp call, isError", &out);

    // --interactive shows the tool's title as its heading.
    let mut s = spawn(&p, &["mcp", "call", "fixture.hostile_text", "--interactive"]);
    let mut seen = String::new();
    expect(&mut s, &mut seen, "error (boolean)");
    // Its default, `false`, is picked.
    answer(&mut s, &mut seen, "false", "\r");
    answer(&mut s, &mut seen, "with these arguments?", "\r");
    assert_eq!(finish(s, &mut seen), 0, "{seen:?}");
    assert!(seen.contains(&as_read(&format!("fixture.hostile_text: {SHOWN}"))), "{seen:?}");
    assert_shown_not_obeyed("mcp call --interactive", &seen);
}

#[test]
fn exec_on_a_terminal_shows_what_a_script_prints_and_obeys_none() {
    let p = project(&[], None);
    let call = "const r = String(await callMCPTool('fixture', 'hostile_text', {}));\n";
    p.write("print.ts", &format!("{call}console.log(r);\nconsole.error(r);\n"));
    let mut out = String::new();
    let code = finish(spawn(&p, &["exec", "print.ts"]), &mut out);
    assert_eq!(code, 0, "{out:?}");
    assert_eq!(out.matches(&as_read(SHOWN)).count(), 2, "stdout and stderr: {out:?}");
    assert_shown_not_obeyed("exec", &out);

    p.write("throw.ts", &format!("{call}throw new Error(r);\n"));
    let mut out = String::new();
    let code = finish(spawn(&p, &["exec", "throw.ts"]), &mut out);
    assert_eq!(code, 1, "{out:?}");
    // (The runtime writes `file:///x` in messages as a path: the rest of the text as shown.)
    assert!(out.contains(&as_read("error: Error: A\u{FFFD}[2JB\u{FFFD}[2KC\u{FFFD}]8;;")), "{out:?}");
    for seq in OBEYED {
        assert!(!out.contains(&as_read(seq)), "{seq:?} reached the terminal: {out:?}");
    }
}

/// To a pipe or a file nothing is changed: the output is data.
#[test]
fn to_a_pipe_server_text_stays_byte_exact() {
    let p = project(&[], None);
    let r = p.run(&["mcp", "list", "--detailed"]);
    r.assert_ok();
    assert!(r.stdout.contains(&format!("    title: {HOSTILE}\n    {HOSTILE}\n")), "{:?}", r.stdout);
    let r = p.run(&["mcp", "list", "--json"]);
    r.assert_ok();
    let tools = r.json();
    let hostile = tools.as_array().unwrap().iter().find(|t| t["name"] == "hostile_text").unwrap();
    assert_eq!(hostile["description"], HOSTILE);

    let r = p.run(&["mcp", "call", "fixture.hostile_text"]);
    r.assert_ok();
    assert_eq!(r.stdout, format!("{HOSTILE}\n"));
    let r = p.run(&["mcp", "call", "fixture.hostile_text", "--output", "out.txt"]);
    r.assert_ok();
    assert_eq!(std::fs::read_to_string(p.path().join("out.txt")).unwrap(), HOSTILE);
    let r = p.run(&["mcp", "call", "fixture.hostile_text", "--args", r#"{"error": true}"#]);
    r.assert_code(1);
    assert!(
        r.stderr.contains(&format!("\n{HOSTILE}\nerror: `fixture.hostile_text` reported an error\n")),
        "{:?}",
        r.stderr
    );

    p.write(
        "print.ts",
        "const r = String(await callMCPTool('fixture', 'hostile_text', {}));\nconsole.log(r);\nconsole.error(r);\n",
    );
    let r = p.run(&["exec", "print.ts"]);
    r.assert_ok();
    assert_eq!(r.stdout, format!("{HOSTILE}\n"));
    assert!(r.stderr.contains(&format!("{HOSTILE}\n")), "{:?}", r.stderr);
}

#[test]
fn forms_and_sampling_requests_show_server_text_and_obey_none() {
    let p = project(&[], None);
    let mut s = spawn(&p, &["mcp", "call", "fixture.hostile_form"]);
    let mut seen = String::new();
    answer(&mut s, &mut seen, "fill in the form", "\r");
    expect(&mut s, &mut seen, "choice* (choice)");
    // The first choice: the one titled with the hostile text, whose value is `a`.
    answer(&mut s, &mut seen, "plain", "\r");
    answer(&mut s, &mut seen, "note (string) [", "\r");
    answer(&mut s, &mut seen, "Send this answer?", "\r");
    assert_eq!(finish(s, &mut seen), 0, "{seen:?}");
    assert!(seen.contains(&as_read(&format!("fixture asks: {SHOWN}"))), "the message: {seen:?}");
    assert!(seen.contains(&as_read(&format!("{SHOWN}: {SHOWN}"))), "title and description: {seen:?}");
    assert!(seen.contains(&as_read(&format!("note (string) [{SHOWN}]"))), "the default: {seen:?}");
    assert_shown_not_obeyed("elicitation form", &seen);
    // Enter took the default itself, not the text shown for it (the fixture echoes the JSON).
    assert!(seen.contains(r#"accept: {"choice":"a","note":"A\u001b[2JB\r\u001b[2KC\u001b]8;;"#), "{seen:?}");

    let fake = FakeLlm::start(vec![Reply::text("never")]);
    let p = project(&["sampling: ask"], Some(&fake));
    let args = json!({"prompt": HOSTILE}).to_string();
    let mut s = spawn(&p, &["mcp", "call", "fixture.sample", "--args", &args]);
    let mut seen = String::new();
    answer(&mut s, &mut seen, "Send this to the model?", "n");
    finish(s, &mut seen);
    assert!(seen.contains(&as_read(&format!("user: {SHOWN}"))), "{seen:?}");
    assert_shown_not_obeyed("sampling request", &seen);
    assert!(fake.requests().is_empty());
}

/// `agent ARGS` on a terminal whose only program on PATH is a fake `xdg-open` that appends the
/// URL it was given to `opened`, one line each.
fn with_opener(p: &Project, args: &[&str]) -> PtySession {
    let bin = p.path().join("bin");
    let opened = p.path().join("opened");
    let script = p.write("bin/xdg-open", &format!("#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n", opened.display()));
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = p.cmd(args);
    cmd.env("PATH", &bin);
    spawn_command(cmd, 30_000)
}

/// The URLs the fake opener was given so far.
fn opened(p: &Project) -> Vec<String> {
    let log = std::fs::read_to_string(p.path().join("opened")).unwrap_or_default();
    log.lines().map(String::from).collect()
}

/// `hostile_url` asking to visit `url`, answered on the terminal: `open` to "Open it in the
/// browser?", then "done"; what the terminal showed.
fn visit(p: &Project, url: &str, open: &str) -> String {
    let args = json!({ "url": url }).to_string();
    let mut s = with_opener(p, &["mcp", "call", "fixture.hostile_url", "--args", &args]);
    let mut seen = String::new();
    answer(&mut s, &mut seen, "Open it in the browser?", open);
    answer(&mut s, &mut seen, "When you are done there:", "\r");
    assert_eq!(finish(s, &mut seen), 0, "{seen:?}");
    seen
}

#[test]
fn a_url_elicitation_opens_only_https_and_only_when_the_user_says_yes() {
    let p = project(&[], None);
    // Another scheme (a `.desktop` file runs a program), or http to another machine: refused
    // without a question, nothing opened.
    for (url, why) in [
        ("file:///tmp/evil.desktop", "only https URLs (or http to this machine) are opened, not `file:` URLs"),
        ("http://example.com/connect", "an http URL is opened only when it leads to this machine"),
    ] {
        let args = json!({ "url": url }).to_string();
        let mut s = with_opener(&p, &["mcp", "call", "fixture.hostile_url", "--args", &args]);
        let mut seen = String::new();
        expect(&mut s, &mut seen, &format!("fixture: declined a URL elicitation ({url}): {why}"));
        assert_eq!(finish(s, &mut seen), 0, "{seen:?}");
        assert!(seen.contains("url: decline"), "{seen:?}");
        assert!(!seen.contains("Open it"), "{url}: offered to open: {seen:?}");
    }

    // https: the host on its own line; Enter means no.
    let url = "https://bank.example@evil.example/connect?id=42";
    let seen = visit(&p, url, "\r");
    assert!(seen.contains(&as_read(&format!("fixture asks you to open a URL: {SHOWN}"))), "{seen:?}");
    assert!(seen.contains("  host: evil.example\r\n"), "{seen:?}");
    assert!(seen.contains(&format!("  url:  {url}\r\n")), "{seen:?}");
    assert!(seen.contains("url: accept"), "{seen:?}");
    assert_shown_not_obeyed("URL elicitation", &seen);

    // Yes opens exactly the URL shown; http to this machine is offered too.
    let yes = [url, "http://127.0.0.1:8765/callback"];
    for (n, url) in yes.iter().enumerate() {
        let seen = visit(&p, url, "y");
        assert!(wait_until(Duration::from_secs(10), || opened(&p).len() > n), "{url}: not opened: {seen:?}");
    }
    // Only those two, in order: the refused URLs and the one answered with Enter (all asked
    // seconds earlier) were never opened.
    assert_eq!(opened(&p), yes);
}
