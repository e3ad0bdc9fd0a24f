//! `agent` on a real pseudo-terminal (rexpect), for the tests of terminal prompts.

#![allow(dead_code)]

use std::process::Stdio;

use rexpect::process::WaitStatus;
use rexpect::session::PtySession;

use super::Project;

/// `agent ARGS` on a pseudo-terminal (stdin, stdout and stderr), hermetic like `Project::cmd`;
/// every expectation waits up to 30 s.
pub fn spawn(p: &Project, args: &[&str]) -> PtySession {
    spawn_timeout(p, args, 30_000)
}

/// [`spawn`] with `ms` as the limit of every expectation.
pub fn spawn_timeout(p: &Project, args: &[&str], ms: u64) -> PtySession {
    spawn_command(p.cmd(args), ms)
}

/// `cmd` (e.g. from `Project::cmd`, adjusted) on a pseudo-terminal.
pub fn spawn_command(mut cmd: std::process::Command, ms: u64) -> PtySession {
    cmd.stdin(Stdio::inherit()).stdout(Stdio::inherit()).stderr(Stdio::inherit());
    rexpect::session::spawn_command(cmd, Some(ms)).expect("spawn agent on a pty")
}

/// Keys typed on the terminal (written at once: `send` alone buffers).
pub fn key(s: &mut PtySession, keys: &str) {
    s.send(keys).unwrap();
    s.flush().unwrap();
}

/// The exit code of a process that exited normally.
pub fn exit_code(s: &mut PtySession) -> i32 {
    match s.process().wait().expect("wait") {
        WaitStatus::Exited(_, code) => code,
        other => panic!("agent did not exit normally: {other:?}"),
    }
}
