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

/// Runs the bash completion function of `script` for `words` (the last one being completed)
/// inside the project, and returns what it offers.
pub fn bash_complete(p: &Project, script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let probe = format!(
        "source {}; COMP_WORDS=({}); COMP_CWORD={cword}; _agent_names agent {} {}; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        quoted[cword],
        quoted[cword - 1],
    );
    // The script calls `agent` by the name it was typed with: the binary under test.
    let path =
        format!("{}:{}", support::agent_bin().parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&probe)
        .current_dir(p.path())
        .env("HOME", p.path().join("home"))
        .env("PATH", path)
        .output()
        .expect("bash");
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.is_empty()).map(String::from).collect()
}

#[test]
fn server_and_tool_names_complete_from_the_saved_lists_without_starting_a_server() {
    let p = Project::new();
    let wrapper = p.write("bin/server.sh", &format!("#!/bin/sh\nexec {:?} \"$@\"\n", support::fixture_bin()));
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    p.write_config(&format!(
        "mcp:\n  servers:\n    fixture:\n      command: {:?}\n    other:\n      command: /nonexistent\n      disabled: true\n",
        wrapper.display().to_string()
    ));
    // Nothing listed yet: servers complete from the configuration, tools from nothing.
    let servers = p.run(&["__complete", "servers"]);
    servers.assert_ok();
    assert_eq!(servers.stdout, "fixture\nother\n");
    assert_eq!(p.run(&["__complete", "tools"]).stdout, "");

    p.run(&["mcp", "list"]).assert_ok();
    // The server cannot start any more: the names below come from the saved list.
    std::fs::write(&wrapper, "#!/bin/sh\nexit 1\n").unwrap();
    let tools = p.run(&["__complete", "tools"]);
    tools.assert_ok();
    let names: Vec<&str> = tools.stdout.lines().collect();
    assert!(names.contains(&"fixture.echo") && names.contains(&"fixture.add"), "{names:?}");

    let script = p.write("agent.bash", &p.run(&["completions", "bash"]).stdout);
    assert!(std::fs::read_to_string(&script).unwrap().contains("complete -F _agent_names"));
    assert_eq!(bash_complete(&p, &script, &["agent", "mcp", "call", "fixture.ec"]), ["fixture.echo"]);
    assert_eq!(bash_complete(&p, &script, &["agent", "mcp", "list", "--server", "fi"]), ["fixture"]);
    assert_eq!(bash_complete(&p, &script, &["agent", "mcp", "enable", "ot"]), ["other"]);
    // Everything else is still clap's.
    assert_eq!(bash_complete(&p, &script, &["agent", "mcp", "gen"]), ["generate"]);

    let zsh = p.run(&["completions", "zsh"]).stdout;
    assert!(zsh.contains("__complete $what") && zsh.contains("compdef _agent_names agent"), "{zsh}");
    let fish = p.run(&["completions", "fish"]).stdout;
    assert!(fish.contains("(agent __complete tools") && fish.contains("(agent __complete servers"), "{fish}");
    // A configuration that does not load completes nothing and prints no error.
    p.write_config("mcp: [broken\n");
    let broken = p.run(&["__complete", "servers"]);
    broken.assert_ok();
    assert!(broken.stdout.is_empty() && broken.stderr.is_empty(), "{broken:?}");
}
