//! Where a fresh isolate's time goes: the runner's steps for one trivial script, each timed on
//! its own, for the runtime benchmark (`cargo bench --bench runtime`, section "phases").
//!
//! The steps are the ones `Prepared::create` and `Prepared::run` take, in their order: the
//! deno_core runtime made (the engine's isolate and context, the snapshot restored, the ops
//! bound), our finalize step, the script transpiled, loaded as a module, evaluated, and the
//! runtime dropped (the engine frees everything restored). Beside them, the floor under all of
//! it: the engine's own isolate and context, made and dropped without deno_core, a snapshot or
//! our bootstrap.

use std::time::{Duration, Instant};

use deno_core::{ModuleSpecifier, v8};

use super::{MIB, TranspileCache, WorkspaceLoader};

/// The steps, in order.
pub const PHASES: [&str; 6] = ["create + restore", "finalize", "transpile", "load module", "evaluate", "dispose"];

/// `runs` fresh isolates, each running `export const x = 1 + 1;`: the time of each step per run.
/// Like the runner, each thread makes at most `ISOLATES_PER_THREAD` of them (the engine's
/// per-thread state grows with every isolate).
pub fn phase_profile(runs: usize) -> Result<Vec<[Duration; 6]>, String> {
    let mut out = Vec::with_capacity(runs);
    let mut left = runs;
    while left > 0 {
        let n = left.min(super::ISOLATES_PER_THREAD);
        let chunk =
            std::thread::spawn(move || on_this_thread(n)).join().map_err(|_| "the profile thread panicked")??;
        out.extend(chunk);
        left -= n;
    }
    Ok(out)
}

/// `runs` times the engine alone: an isolate and a context made and dropped (what every step above
/// starts from). Call after [`phase_profile`], which initialises the engine's platform.
pub fn engine_floor(runs: usize) -> Result<Vec<Duration>, String> {
    let mut out = Vec::with_capacity(runs);
    let mut left = runs;
    while left > 0 {
        let n = left.min(super::ISOLATES_PER_THREAD);
        let chunk = std::thread::spawn(move || {
            (0..n)
                .map(|_| {
                    let start = Instant::now();
                    let mut isolate = v8::Isolate::new(v8::CreateParams::default());
                    {
                        v8::scope!(scope, &mut isolate);
                        let _context = v8::Context::new(scope, Default::default());
                    }
                    drop(isolate);
                    start.elapsed()
                })
                .collect::<Vec<_>>()
        })
        .join()
        .map_err(|_| "the engine-floor thread panicked")?;
        out.extend(chunk);
        left -= n;
    }
    Ok(out)
}

fn on_this_thread(runs: usize) -> Result<Vec<[Duration; 6]>, String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    // As on the runner thread: the runtimes are made inside the tokio runtime that drives them.
    let _enter = rt.enter();
    let cache = TranspileCache::default();
    let dir = std::env::temp_dir();
    let specifier = ModuleSpecifier::from_file_path(dir.join("agent-phase-profile.ts"))
        .map_err(|()| "temp dir is not a valid path".to_string())?;
    let mut out = Vec::with_capacity(runs);
    for run in 0..runs {
        let mut t = [Duration::ZERO; 6];
        let loader = std::rc::Rc::new(WorkspaceLoader::new(cache.clone()));
        loader.set_root(dir.clone());
        let start = Instant::now();
        let mut runtime = super::new_runtime(loader.clone(), 64 * MIB)?;
        t[0] = start.elapsed();
        let start = Instant::now();
        super::finalize(&mut runtime)?;
        t[1] = start.elapsed();
        let start = Instant::now();
        let code =
            loader.transpile_entry(&specifier, "export const x: number = 1 + 1;\n".into()).map_err(|f| f.message)?;
        t[2] = start.elapsed();
        rt.block_on(async {
            let start = Instant::now();
            let id = runtime.load_main_es_module_from_code(&specifier, code).await.map_err(|e| e.to_string())?;
            t[3] = start.elapsed();
            let start = Instant::now();
            let evaluation = runtime.mod_evaluate(id);
            runtime.run_event_loop(Default::default()).await.map_err(|e| format!("run {run} loop: {e}"))?;
            evaluation.await.map_err(|e| format!("run {run}: {e}"))?;
            t[4] = start.elapsed();
            Ok::<(), String>(())
        })?;
        let start = Instant::now();
        drop(runtime);
        t[5] = start.elapsed();
        out.push(t);
    }
    Ok(out)
}
