//! `agent completions bash|zsh|fish`: each script is generated from the real parser, names the
//! subcommands, needs no configuration, and (bash) parses.

use crate::support;

use support::Project;

#[test]
fn each_shell_gets_a_script_naming_the_subcommands() {
    let p = Project::new();
    // A broken configuration must not break completion: it is never read.
    p.write_config("mcp: [this is not a mapping\n");
    for shell in ["bash", "zsh", "fish"] {
        let r = p.run(&["completions", shell]);
        r.assert_ok();
        assert!(r.stderr.is_empty(), "{shell}: {}", r.stderr);
        for word in
            ["mcp", "exec", "run", "completions", "generate", "search", "server", "timeout", "interactive", "check"]
        {
            assert!(r.stdout.contains(word), "{shell} script lacks {word}:\n{}", r.stdout);
        }
    }
    let fish = p.run(&["completions", "fish"]);
    assert!(fish.stdout.contains("complete -c agent"), "{}", fish.stdout);
    let zsh = p.run(&["completions", "zsh"]);
    assert!(zsh.stdout.starts_with("#compdef agent"), "{}", zsh.stdout);
}

#[test]
fn the_bash_script_parses_and_completes_subcommands() {
    let p = Project::new();
    let r = p.run(&["completions", "bash"]);
    r.assert_ok();
    let script = p.write("agent.bash", &r.stdout);
    let check = std::process::Command::new("bash").arg("-n").arg(&script).output().expect("bash is installed");
    assert!(check.status.success(), "bash -n: {}", String::from_utf8_lossy(&check.stderr));
    // Ask the completion function itself what follows `agent mcp `.
    let probe = format!(
        "source {}; COMP_WORDS=(agent mcp ''); COMP_CWORD=2; _agent agent '' mcp; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let out = std::process::Command::new("bash").arg("-c").arg(&probe).output().expect("bash");
    let words = String::from_utf8_lossy(&out.stdout);
    for sub in ["list", "call", "generate", "search"] {
        assert!(words.lines().any(|w| w == sub), "`agent mcp <TAB>` lacks {sub}: {words}");
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let r = Project::new().run(&["completions", "powershell7"]);
    r.assert_code(2);
    assert!(r.stderr.contains("invalid value 'powershell7'"), "{}", r.stderr);
}
