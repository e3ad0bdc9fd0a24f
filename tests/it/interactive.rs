//! `agent mcp call --interactive` through a real pseudo-terminal (rexpect): the real binary and
//! the fixture server's `form` tool (string, enum, number, boolean, a default, an array) and
//! `add`; typed answers checked as they are entered, schema violations asked again, the JSON
//! shown and confirmed before the call. Plus the refusals without a terminal and with --args.

use crate::support;
use crate::support::pty;

use pty::{exit_code, key, spawn};
use support::{Project, fixture_stdio_yaml};

const DOWN: &str = "\x1b[B";

fn form_project() -> Project {
    Project::with_servers(&fixture_stdio_yaml("fixture", &["--form"]))
}

#[test]
fn every_field_kind_is_asked_validated_shown_and_sent() {
    let p = form_project();
    let mut s = spawn(&p, &["mcp", "call", "fixture.form", "--interactive"]);
    s.exp_string("fixture.form: File a ticket").unwrap();
    s.exp_string("Title of the ticket.").unwrap();
    s.exp_string("title* (string)").unwrap();
    s.send_line("Fix the build").unwrap();
    // An enum: a list, the first entry selected; one down is `normal`.
    s.exp_string("How urgent a ticket is.").unwrap();
    s.exp_string("priority* (choice)").unwrap();
    s.exp_string("high").unwrap();
    key(&mut s, DOWN);
    key(&mut s, "\r");
    s.exp_string("hours* (number)").unwrap();
    s.send_line("2.5").unwrap();
    s.exp_string("notify* (boolean)").unwrap();
    s.exp_string("false").unwrap();
    key(&mut s, "\r");
    // The default is offered; -1 is an integer but breaks the schema's minimum.
    s.exp_string("copies (integer) [1]").unwrap();
    s.send_line("-1").unwrap();
    s.exp_string("labels (JSON array)").unwrap();
    s.send_line("[\"ci\", \"urgent\"]").unwrap();
    // Validated as --args is: only the offending field is asked again, with its answer.
    s.exp_string("invalid arguments for `fixture.form`:").unwrap();
    s.exp_string("/copies: -1 is less than the minimum of 0").unwrap();
    s.exp_string("copies (integer) [1]").unwrap();
    key(&mut s, "\x7f\x7f");
    s.send_line("3").unwrap();
    // The JSON it will send, then the confirmation.
    s.exp_string("\"title\": \"Fix the build\",").unwrap();
    s.exp_string("\"priority\": \"normal\",").unwrap();
    s.exp_string("\"hours\": 2.5,").unwrap();
    s.exp_string("\"notify\": true,").unwrap();
    s.exp_string("\"copies\": 3,").unwrap();
    s.exp_string("\"labels\": [").unwrap();
    s.exp_string("Call fixture.form with these arguments?").unwrap();
    key(&mut s, "y");
    s.exp_string("filed \"Fix the build\": Normal, 2.5 h, notify true, 3 copies, labels [\"ci\", \"urgent\"]").unwrap();
    s.exp_eof().unwrap();
    assert_eq!(exit_code(&mut s), 0);
}

#[test]
fn a_wrong_type_is_said_and_asked_again() {
    let p = Project::with_fixture();
    let mut s = spawn(&p, &["mcp", "call", "fixture.add", "-i"]);
    s.exp_string("Left operand.").unwrap();
    s.exp_string("a* (integer)").unwrap();
    s.send_line("two").unwrap();
    s.exp_string("`two` is not an integer").unwrap();
    key(&mut s, "\x7f\x7f\x7f");
    s.send_line("40").unwrap();
    s.exp_string("b* (integer)").unwrap();
    s.send_line("2.5").unwrap();
    s.exp_string("`2.5` is not an integer").unwrap();
    key(&mut s, "\x7f\x7f\x7f");
    s.send_line("2").unwrap();
    s.exp_string("\"a\": 40,").unwrap();
    s.exp_string("\"b\": 2").unwrap();
    s.exp_string("Call fixture.add with these arguments?").unwrap();
    key(&mut s, "y");
    s.exp_string("\"sum\": 42").unwrap();
    s.exp_eof().unwrap();
    assert_eq!(exit_code(&mut s), 0);
}

#[test]
fn declining_calls_nothing() {
    let p = Project::with_fixture();
    let mut s = spawn(&p, &["mcp", "call", "fixture.echo", "--interactive"]);
    s.exp_string("message* (string)").unwrap();
    s.send_line("hello").unwrap();
    s.exp_string("\"message\": \"hello\"").unwrap();
    s.exp_string("Call fixture.echo with these arguments?").unwrap();
    key(&mut s, "n");
    let rest = s.exp_eof().unwrap();
    assert!(rest.contains("not called: `fixture.echo` was not confirmed"), "{rest}");
    assert!(!rest.contains("hello\r\n"), "nothing was echoed: {rest}");
    assert_eq!(exit_code(&mut s), 1);
}

#[test]
fn ctrl_c_at_a_prompt_stops_cleanly_without_calling() {
    let p = form_project();
    let mut s = spawn(&p, &["mcp", "call", "fixture.form", "-i"]);
    s.exp_string("title* (string)").unwrap();
    s.send_line("x").unwrap();
    // At a list prompt: the terminal is raw, so Ctrl-C arrives as a key.
    s.exp_string("priority* (choice)").unwrap();
    s.exp_string("high").unwrap();
    s.send_control('c').unwrap();
    let rest = s.exp_eof().unwrap();
    assert!(rest.contains("interrupted"), "{rest}");
    assert!(rest.contains("\x1b[?25h"), "the cursor is shown again: {rest:?}");
    assert!(!rest.contains("filed"), "{rest}");
    assert_eq!(exit_code(&mut s), 130);
}

#[test]
fn interactive_needs_a_terminal_and_excludes_args() {
    let p = Project::with_fixture();
    // The harness gives agent no terminal: stdin is /dev/null, stderr a pipe.
    let r = p.run(&["mcp", "call", "fixture.add", "--interactive"]);
    r.assert_code(2);
    assert_eq!(
        r.stderr,
        "error: --interactive needs a terminal: stdin and stderr must be a TTY (pass the arguments with --args instead)\n"
    );
    let r = p.run(&["mcp", "call", "fixture.add", "--interactive", "--args", "{}"]);
    r.assert_code(2);
    assert!(r.stderr.contains("'--interactive' cannot be used with '--args <JSON>'"), "{}", r.stderr);
    // On a terminal too, before any prompt.
    let mut s = spawn(&p, &["mcp", "call", "fixture.add", "-i", "--args", "{}"]);
    s.exp_string("cannot be used with").unwrap();
    s.exp_eof().unwrap();
    assert_eq!(exit_code(&mut s), 2);
}
