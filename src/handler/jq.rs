//! jq result handlers through the `jaq` crates (never a shell-out), and the worker process a
//! filter runs in.
//!
//! jaq has no recursion limit (non-tail recursion such as `def f: 1 + f; f` overflows the
//! native stack, which aborts the whole process) and no way to interrupt a running filter. So a
//! filter is *compiled* in-process (on a thread with a generous stack, input capped at
//! [`MAX_FILTER_BYTES`]) but *run* in a child process: this binary again, with [`WORKER_ARG`],
//! killed at the code-mode timeout. A stack overflow, an exhausted memory limit or a timeout
//! kills only the worker and comes back as a one-line error. Inside, outputs are capped in number
//! ([`MAX_OUTPUTS`]) and in bytes (the code-mode output limit); the worker stops at the first
//! output past a cap.
//!
//! The worker holds itself to its limits even when `agent` cannot (killed with SIGKILL, hung):
//! its heap is counted by the binary's allocator (`util::alloc`) and held to the code-mode
//! memory limit (on top of what the input takes), `RLIMIT_AS` backs that up, `RLIMIT_CPU` stops
//! it a little after the timeout's worth of CPU, a watchdog thread ends it a second after the
//! timeout or as soon as `agent` is gone, and the kernel kills it when `agent` dies
//! (`PR_SET_PDEATHSIG`).

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data, unwrap_valr};
use jaq_json::Val;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The hidden first argument that turns `agent` into a jq worker (see [`worker_main`]).
pub const WORKER_ARG: &str = "__jq-worker";
/// Longest jq filter accepted.
pub const MAX_FILTER_BYTES: usize = 64 << 10;
/// Most outputs a filter may produce (more: an error, not a silent cut).
pub const MAX_OUTPUTS: usize = 10_000;
/// Stack of the thread a filter is compiled or run on.
const STACK_BYTES: usize = 256 << 20;
/// Address space the worker may use beyond the memory limit (binary, libraries, the stack).
const AS_SLACK_BYTES: u64 = 768 << 20;
/// How long past its timeout a worker ends itself (`agent` kills it at the timeout).
const WORKER_GRACE: Duration = Duration::from_secs(1);
/// Filters jq scripts may not call: the environment (secrets), stderr/logging, halting.
const DENIED: &[&str] = &["env", "halt", "debug_empty", "stderr_empty", "input", "inputs"];

/// Where a filter runs.
#[derive(Debug, Clone)]
pub enum Isolation {
    /// A child process: the given `agent` binary with [`WORKER_ARG`] (the safe default).
    Process(PathBuf),
    /// A thread of this process with a big stack: a filter that recurses without end aborts the
    /// process, and one that loops is abandoned at the timeout. For tests and benchmarks only.
    Thread,
}

/// What one filter run may use.
#[derive(Debug, Clone)]
pub struct JqLimits {
    pub timeout: Duration,
    pub memory_limit_mb: u64,
    pub max_output_bytes: usize,
}

#[derive(Serialize, Deserialize)]
struct Job {
    filter: String,
    input: Value,
    max_output_bytes: usize,
    memory_limit_mb: u64,
    timeout_ms: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Answer {
    Ok(Vec<Value>),
    Error(String),
}

/// Parses and compiles `filter` (nothing runs); the error is one line with the position.
pub fn check(filter: &str) -> Result<(), String> {
    if filter.len() > MAX_FILTER_BYTES {
        return Err(format!("the jq filter is longer than {} KiB", MAX_FILTER_BYTES >> 10));
    }
    let f = filter.to_string();
    on_big_stack(move || compile_with(&f, |_| Ok(())))
}

/// Runs `filter` over `input`: every output, in order.
pub async fn run(filter: &str, input: &Value, limits: &JqLimits, isolation: &Isolation) -> Result<Vec<Value>, String> {
    let job = Job {
        filter: filter.to_string(),
        input: input.clone(),
        max_output_bytes: limits.max_output_bytes,
        memory_limit_mb: limits.memory_limit_mb,
        timeout_ms: u64::try_from(limits.timeout.as_millis()).unwrap_or(u64::MAX),
    };
    match isolation {
        Isolation::Thread => {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let spawned = std::thread::Builder::new().name("jq".into()).stack_size(STACK_BYTES).spawn(move || {
                let _ = tx.send(eval(&job));
            });
            if let Err(e) = spawned {
                return Err(format!("cannot start the jq thread: {e}"));
            }
            match tokio::time::timeout(limits.timeout, rx).await {
                Ok(Ok(r)) => r,
                Ok(Err(_)) => Err("the jq filter crashed".into()),
                Err(_) => Err(format!("the jq filter timed out after {}", humantime::format_duration(limits.timeout))),
            }
        }
        Isolation::Process(exe) => run_in_worker(exe, &job, limits).await,
    }
}

async fn run_in_worker(exe: &PathBuf, job: &Job, limits: &JqLimits) -> Result<Vec<Value>, String> {
    let payload = serde_json::to_vec(job).map_err(|e| format!("cannot encode the jq input: {e}"))?;
    let mut cmd = tokio::process::Command::new(exe);
    // The worker's first act is to tie its life to ours (`util::child::die_with`).
    cmd.arg(WORKER_ARG)
        .arg(std::process::id().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("cannot start the jq worker {}: {e}", exe.display()))?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err("cannot talk to the jq worker".into());
    };
    // Answers are capped by the worker itself; this cap only guards against a broken one.
    let cap = (limits.max_output_bytes as u64).saturating_mul(4).saturating_add(1 << 20);
    let work = async {
        let write = async move {
            let _ = stdin.write_all(&payload).await;
            drop(stdin);
        };
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut stdout = stdout.take(cap);
        let mut stderr = stderr.take(64 << 10);
        let read_out = stdout.read_to_end(&mut out);
        let read_err = stderr.read_to_end(&mut err);
        let ((), _, _) = tokio::join!(write, read_out, read_err);
        let status = child.wait().await;
        (out, err, status)
    };
    let (out, err, status) = match tokio::time::timeout(limits.timeout, work).await {
        Ok(r) => r,
        Err(_) => {
            return Err(format!("the jq filter timed out after {}", humantime::format_duration(limits.timeout)));
        }
    };
    match serde_json::from_slice::<Answer>(&out) {
        Ok(Answer::Ok(values)) => Ok(values),
        Ok(Answer::Error(e)) => Err(e),
        Err(_) => {
            let err = String::from_utf8_lossy(&err);
            if err.contains("overflowed its stack") {
                Err("the jq filter recursed too deeply (stack overflow)".into())
            } else if err.contains("memory allocation") || err.contains("out of memory") {
                Err(format!("the jq filter ran out of memory (limit {} MB)", limits.memory_limit_mb))
            } else if err.contains("timed out") || status.as_ref().is_ok_and(|s| s.signal() == Some(libc::SIGXCPU)) {
                Err(format!("the jq filter timed out after {}", humantime::format_duration(limits.timeout)))
            } else {
                let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
                Err(format!(
                    "the jq worker failed ({status}){}",
                    if last.is_empty() { String::new() } else { format!(": {last}") }
                ))
            }
        }
    }
}

/// The jq worker: reads one job on stdin, writes its answer on stdout. Called by `main` when
/// the first argument is [`WORKER_ARG`] (the second is the pid of the `agent` that started it);
/// returns the exit code.
pub fn worker_main() -> u8 {
    match std::env::args_os().nth(2).and_then(|p| p.to_str()?.parse().ok()) {
        Some(parent) => crate::util::child::die_with(parent),
        None => return 2,
    }
    crate::util::alloc::count();
    // Large blocks straight from and back to the kernel: a freed buffer (a vector that grew by
    // reallocation) leaves the process at once instead of staying resident in the heap, so the
    // resident size follows the counted one.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes glibc's tuning; it is called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
    let mut input = Vec::new();
    if std::io::stdin().lock().read_to_end(&mut input).is_err() {
        return 2;
    }
    let answer = match serde_json::from_slice::<Job>(&input) {
        Ok(job) => {
            let timeout = Duration::from_millis(job.timeout_ms);
            crate::util::child::exit_when_orphaned(
                std::time::Instant::now().checked_add(timeout.saturating_add(WORKER_GRACE)),
                Duration::from_millis(50),
                "the jq filter timed out\n",
            );
            limit_cpu(timeout);
            limit_address_space(job.memory_limit_mb);
            no_core_dumps();
            drop(input);
            // The filter's own memory: the limit on top of what the input already takes.
            let held = usize::try_from(crate::util::alloc::used()).unwrap_or(0);
            let limit = usize::try_from(job.memory_limit_mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
            crate::util::alloc::limit(held.saturating_add(limit));
            on_big_stack(move || eval(&job)).map_or_else(Answer::Error, Answer::Ok)
        }
        Err(e) => Answer::Error(format!("bad jq job: {e}")),
    };
    let text = serde_json::to_vec(&answer).unwrap_or_default();
    let mut out = std::io::stdout().lock();
    if out.write_all(&text).and_then(|()| out.flush()).is_err() {
        return 1;
    }
    0
}

/// CPU seconds past which the kernel stops the worker: the timeout's worth and two more (the
/// filter is single-threaded, so it never uses more CPU than wall-clock time).
fn limit_cpu(timeout: Duration) {
    let soft = timeout.as_secs().saturating_add(3);
    let lim = libc::rlimit { rlim_cur: soft as libc::rlim_t, rlim_max: soft.saturating_add(1) as libc::rlim_t };
    // SAFETY: setrlimit reads a valid, initialised struct; it only lowers this process's limit.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CPU, &lim);
    }
}

/// A filter that runs out of memory aborts the worker; that must not write a core file of its
/// heap wherever the user's shell allows core dumps.
fn no_core_dumps() {
    let lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: as above.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &lim);
    }
}

fn limit_address_space(memory_limit_mb: u64) {
    let bytes = memory_limit_mb.saturating_mul(1 << 20).saturating_add(AS_SLACK_BYTES + STACK_BYTES as u64);
    let lim = libc::rlimit { rlim_cur: bytes as libc::rlim_t, rlim_max: bytes as libc::rlim_t };
    // SAFETY: setrlimit reads a valid, initialised struct; it only lowers this process's limit.
    unsafe {
        libc::setrlimit(libc::RLIMIT_AS, &lim);
    }
}

/// Runs `f` on a fresh thread with a [`STACK_BYTES`] stack (parsing and running are recursive).
fn on_big_stack<T: Send + 'static>(f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, String> {
    std::thread::Builder::new()
        .name("jq".into())
        .stack_size(STACK_BYTES)
        .spawn(f)
        .map_err(|e| format!("cannot start the jq thread: {e}"))?
        .join()
        .unwrap_or_else(|_| Err("the jq filter crashed".into()))
}

type Filter = jaq_core::compile::Filter<jaq_core::Native<data::JustLut<Val>>>;

/// Loads and compiles `code`, then hands the filter to `then`.
fn compile_with<T>(code: &str, then: impl FnOnce(&Filter) -> Result<T, String>) -> Result<T, String> {
    let defs = jaq_core::defs().chain(jaq_std::defs()).chain(jaq_json::defs());
    let funs =
        jaq_core::funs::<data::JustLut<Val>>().chain(jaq_std::funs()).chain(jaq_json::funs()).map(|(name, args, f)| {
            if DENIED.contains(&name) {
                (name, args, jaq_core::Native::<data::JustLut<Val>>::new(denied))
            } else {
                (name, args, f)
            }
        });
    let arena = Arena::default();
    let modules = Loader::new(defs).load(&arena, File { code, path: () }).map_err(|errs| {
        let first = errs.into_iter().next().map(|(_, e)| e);
        match first {
            Some(jaq_core::load::Error::Lex(v)) => match v.first() {
                Some((expect, at)) => at_pos(code, at, &format!("expected {}", expect.as_str())),
                None => "the jq filter does not parse".into(),
            },
            Some(jaq_core::load::Error::Parse(v)) => match v.first() {
                Some((expect, at)) => at_pos(code, at, &format!("expected {}", expect.as_str())),
                None => "the jq filter does not parse".into(),
            },
            Some(jaq_core::load::Error::Io(v)) => match v.first() {
                Some((_, why)) => format!("jq filter: {why}"),
                None => "the jq filter does not load".into(),
            },
            None => "the jq filter does not parse".into(),
        }
    })?;
    let filter = Compiler::default().with_funs(funs).compile(modules).map_err(|errs| {
        match errs.into_iter().next().and_then(|(_, v)| v.into_iter().next()) {
            Some((name, undefined)) => at_pos(code, name, &format!("undefined {} `{name}`", undefined.as_str())),
            None => "the jq filter does not compile".into(),
        }
    })?;
    then(&filter)
}

/// What a [`DENIED`] filter does: fail (the standard library's definitions still refer to it).
fn denied(_: jaq_core::Cv<'_, data::JustLut<Val>>) -> jaq_core::ValXs<'_, Val> {
    jaq_core::box_iter::box_once(Err(jaq_core::Error::str("not available in result handlers").into()))
}

/// `jq filter: <what> at line L, column C` (`at` is a slice of `code`).
fn at_pos(code: &str, at: &str, what: &str) -> String {
    let start = (at.as_ptr() as usize).wrapping_sub(code.as_ptr() as usize);
    if start > code.len() {
        return format!("jq filter: {what}");
    }
    let before = &code[..start];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    if at.is_empty() {
        format!("jq filter: {what} at the end (line {line}, column {col})")
    } else {
        format!("jq filter: {what} at line {line}, column {col}")
    }
}

/// Compiles and runs a job in this thread: every output, under the caps.
fn eval(job: &Job) -> Result<Vec<Value>, String> {
    let text = serde_json::to_string(&job.input).map_err(|e| format!("cannot encode the jq input: {e}"))?;
    let input = jaq_json::read::parse_single(text.as_bytes()).map_err(|e| format!("cannot read the jq input: {e}"))?;
    drop(text);
    compile_with(&job.filter, |filter| {
        let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
        let mut out = Vec::new();
        let mut bytes = 0usize;
        for r in filter.id.run((ctx, input)).map(unwrap_valr) {
            let v = r.map_err(|e| {
                let text = e.into_val().to_string();
                match serde_json::from_str::<Value>(&text) {
                    Ok(Value::String(s)) => format!("jq error: {s}"),
                    _ => format!("jq error: {text}"),
                }
            })?;
            if out.len() >= MAX_OUTPUTS {
                return Err(format!("the jq filter produced more than {MAX_OUTPUTS} outputs"));
            }
            let text = v.to_string();
            bytes = bytes.saturating_add(text.len());
            if bytes > job.max_output_bytes {
                return Err(format!(
                    "the jq output is larger than the output limit ({})",
                    crate::util::size::human_bytes(job.max_output_bytes as u64)
                ));
            }
            out.push(serde_json::from_str(&text).map_err(|_| format!("jq produced a value JSON cannot hold: {text}"))?);
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits() -> JqLimits {
        JqLimits { timeout: Duration::from_secs(5), memory_limit_mb: 64, max_output_bytes: 1 << 20 }
    }

    async fn go(filter: &str, input: Value) -> Result<Vec<Value>, String> {
        check(filter)?;
        run(filter, &input, &limits(), &Isolation::Thread).await
    }

    #[tokio::test]
    async fn filters_run_over_json() {
        assert_eq!(go(".a + 1", json!({"a": 2})).await.unwrap(), vec![json!(3)]);
        assert_eq!(go(".[] | .n", json!([{"n": 1}, {"n": "x"}])).await.unwrap(), vec![json!(1), json!("x")]);
        assert_eq!(
            go("{n: length, keys: keys}", json!({"b": 1, "a": 2})).await.unwrap(),
            vec![json!({"n": 2, "keys": ["a", "b"]})]
        );
        assert_eq!(go("map(select(. > 1)) | add", json!([1, 2, 3])).await.unwrap(), vec![json!(5)]);
        assert_eq!(go("empty", json!(1)).await.unwrap(), Vec::<Value>::new());
    }

    #[test]
    fn compile_errors_are_one_line_with_a_position() {
        let e = check(".a |").unwrap_err();
        assert!(e.starts_with("jq filter: expected term"), "{e}");
        let e = check("{a: .b").unwrap_err();
        assert!(e.contains("expected"), "{e}");
        let e = check(".a | nosuchfn(1)").unwrap_err();
        assert_eq!(e, "jq filter: undefined filter `nosuchfn` at line 1, column 6");
        assert!(check(&"1+".repeat(MAX_FILTER_BYTES)).unwrap_err().contains("longer than"));
        check("def f: 1 + f; f").unwrap();
        assert!(!check(&"[".repeat(20_000)).unwrap_err().is_empty(), "deep nesting is an error, not a crash");
    }

    #[tokio::test]
    async fn outputs_are_capped_in_number_and_size() {
        let e = go("repeat(1)", json!(null)).await.unwrap_err();
        assert_eq!(e, format!("the jq filter produced more than {MAX_OUTPUTS} outputs"));
        let e = go("[range(200000)] | tostring", json!(null)).await.unwrap_err();
        assert!(e.starts_with("the jq output is larger"), "{e}");
        let e = go("error(\"boom\")", json!(null)).await.unwrap_err();
        assert_eq!(e, "jq error: boom");
        let e = go("env", json!(null)).await.unwrap_err();
        assert_eq!(e, "jq error: not available in result handlers");
        let e = go("1 | stderr", json!(null)).await.unwrap_err();
        assert_eq!(e, "jq error: not available in result handlers");
    }
}
