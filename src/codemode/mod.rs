//! Code mode's one owner: from "these servers" (or "this script") to a script's outcome.
//!
//! The path every code-mode command shares (`agent exec`, `agent run --mode code`, and next
//! `agent mcp serve`): the servers a script refers to → starting them and refreshing their part
//! of the generated tree when their tools changed → the bridge over the MCP manager → the
//! executor that runs scripts against the tree. The commands only parse flags, race this
//! against signals, and print; nothing here prints.
//!
//! A [`CodeMode`] starts bootstrapping its isolate when it is created, so that work overlaps with
//! starting servers. It is used from one task at a time (`&mut` for setup, `&` to run scripts).
//! With type-checking on, [`CodeMode::run`] checks each script first ([`typecheck`]).

pub mod tool;
pub mod typecheck;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;

use crate::bridge::BridgeServer;
use crate::bridge::server::Describer;
use crate::codegen::{self, GenerateOptions, GenerateReport};
use crate::config::Config;
use crate::learn::Recorder;
use crate::mcp::{CallContext, McpError, McpManager, ToolInfo};
use crate::runtime::{ExecFailure, ExecOutcome, ExecRequest, Executor, FailureKind, Limits, Script, scan};

/// How a [`CodeMode`] is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// The generated tree (`mcp.code_execution.workspace_dir`), absolute.
    pub workspace: PathBuf,
    pub limits: Limits,
    /// Refresh the tree for the servers that start (`regenerate_on_startup`).
    pub regenerate: bool,
    /// Quality thresholds of learned types (`mcp.types`).
    pub thresholds: crate::types::Thresholds,
    /// Type-check scripts before running them (`typecheck`, `agent exec --check`).
    pub typecheck: bool,
    /// The compiler for that (`mcp.code_execution.tsc`; `None`: `tsc` on `PATH`).
    pub tsc: Option<PathBuf>,
    /// Scripts run as the steps of one session: one isolate for all of them, what a step
    /// defines at its top level there in the next (`Executor::session`). Off: a fresh isolate
    /// per script (`agent exec`, serve's shared pool).
    pub session: bool,
}

impl Options {
    /// The configured options, the workspace made absolute against the current directory.
    pub fn from_config(config: &Config) -> anyhow::Result<Options> {
        let cc = &config.mcp.code_execution;
        let workspace = std::path::absolute(&cc.workspace_dir)
            .with_context(|| format!("invalid workspace_dir {}", cc.workspace_dir.display()))?;
        Ok(Options {
            workspace,
            limits: Limits::from_config(cc),
            regenerate: cc.regenerate_on_startup,
            thresholds: crate::learn::thresholds(config),
            typecheck: cc.typecheck,
            tsc: cc.tsc.clone(),
            session: false,
        })
    }

    /// The options of an `agent run`: [`Options::from_config`], with the steps of the run one
    /// session unless `mcp.code_execution.session` is `script`.
    pub fn for_run(config: &Config) -> anyhow::Result<Options> {
        let mut options = Options::from_config(config)?;
        options.session = config.mcp.code_execution.session == crate::config::CodeSession::Run;
        Ok(options)
    }
}

/// What [`CodeMode::prepare`] did.
#[derive(Debug, Default)]
pub struct Prepared {
    /// Servers that started (their tools are in `tools`).
    pub started: Vec<String>,
    /// Servers that failed to start, with the reason.
    pub failed: Vec<(String, McpError)>,
    /// The tools of the started servers.
    pub tools: Vec<ToolInfo>,
    /// The tree was written (some tools changed); `None` when it was up to date or not refreshed.
    pub regenerated: Option<GenerateReport>,
}

/// Servers, tree, bridge and executor for one command.
pub struct CodeMode {
    manager: Arc<McpManager>,
    options: Options,
    executor: Executor,
    bridge: Option<BridgeServer>,
    /// Servers that failed to start so far (by name), to explain a missing module of theirs.
    failed: Arc<Mutex<BTreeMap<String, McpError>>>,
    /// Servers being started in the background (no regeneration): awaited before a failure is
    /// explained, so the explanation does not depend on timing.
    warming: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Records result shapes of the manager's calls (`mcp.types.learn`).
    recorder: Option<Arc<Recorder>>,
    checker: typecheck::Checker,
}

impl CodeMode {
    /// Starts bootstrapping the isolate (~25 ms, on its own thread); no server is started yet.
    pub fn new(manager: Arc<McpManager>, options: Options) -> CodeMode {
        let executor = if options.session {
            Executor::session(&options.limits, crate::runtime::Isolation::configured())
        } else {
            Executor::with_limits(&options.limits)
        };
        let checker = typecheck::Checker::resolve(options.typecheck, options.tsc.as_deref());
        CodeMode {
            checker,
            manager,
            options,
            executor,
            bridge: None,
            failed: Default::default(),
            warming: tokio::sync::Mutex::new(None),
            recorder: None,
        }
    }

    /// The recorder of the manager's calls, whose observations [`CodeMode::learn`] turns into
    /// sharper types.
    pub fn set_recorder(&mut self, recorder: Option<Arc<Recorder>>) {
        self.recorder = recorder;
    }

    /// Writes the observations made so far to the type registry and regenerates the files of
    /// the tools whose learned type went up a quality level (only theirs: the other tools keep
    /// the types their files were generated with). Called after each script.
    pub fn learn(&self) -> anyhow::Result<Option<GenerateReport>> {
        let Some(recorder) = &self.recorder else { return Ok(None) };
        let changes = recorder.flush();
        if !self.options.regenerate || !changes.iter().any(|c| c.after > c.before) {
            return Ok(None);
        }
        let workspace = self.workspace();
        let Some(tools) = codegen::generated_tools(workspace) else { return Ok(None) };
        let registry = self.registry();
        let (learned, raised) = codegen::learned_for_tree(workspace, &registry);
        let servers: Vec<String> = tools
            .iter()
            .filter(|t| raised.contains(&crate::types::key(&t.server, &t.name)))
            .map(|t| t.server.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if servers.is_empty() {
            return Ok(None);
        }
        let opts =
            GenerateOptions { output_dir: workspace.to_path_buf(), clean: false, only_servers: Some(servers), learned };
        let report = codegen::generate(&tools, &opts)
            .with_context(|| format!("cannot regenerate the TypeScript API in {}", workspace.display()))?;
        tracing::info!("sharper result types for {raised:?} ({} files written)", report.files_written);
        Ok(Some(report))
    }

    fn registry(&self) -> crate::types::Registry {
        crate::learn::load_registry_at(&crate::types::registry_path(self.workspace()), &self.options.thresholds)
    }

    pub fn workspace(&self) -> &Path {
        &self.options.workspace
    }

    /// Why scripts run unchecked although type-checking was asked for (no compiler), for the
    /// command to show once; `None` when they are checked or checking is off.
    pub fn typecheck_notice(&self) -> Option<&str> {
        match &self.checker {
            typecheck::Checker::Missing(why) => Some(why),
            _ => None,
        }
    }

    /// The configured servers that `source` (run as `entry`) and its workspace imports refer
    /// to, by their directory under `servers/` or by name in a `callMCPTool` call (or a
    /// `readResource`, `getPrompt`, `listResources`, `listPrompts` call). A script that uses
    /// `searchTools` or `describeTool`, or lists resources or prompts without naming a server,
    /// reaches every enabled server, so it gets them all.
    pub fn servers_for_script(config: &Config, source: &str, entry: &Path, workspace: &Path) -> Vec<String> {
        let refs = scan::scan(source, entry, workspace);
        if refs.uses_catalog {
            return config.mcp.servers.iter().filter(|(_, c)| !c.disabled).map(|(name, _)| name.clone()).collect();
        }
        let configured: Vec<&str> = config.mcp.servers.keys().map(String::as_str).collect();
        // The directory each server gets in the tree (codegen's naming, collisions included).
        let dirs = codegen::server_names(configured.iter().copied());
        configured
            .into_iter()
            .filter(|name| {
                refs.called_servers.contains(*name)
                    || dirs.get(*name).is_some_and(|n| refs.server_dirs.contains(&n.dir))
            })
            .map(str::to_string)
            .collect()
    }

    /// Starts `servers` and, with `regenerate`, rewrites their part of the tree when their tools
    /// differ from what it was generated from (or there is no tree yet). Without `regenerate`
    /// and with `background`, the servers start in the background (overlapping the script's own
    /// start) and nothing is reported here: a failure reaches the script's first call.
    ///
    /// `Err` only when the tree cannot be written.
    pub async fn prepare(&mut self, servers: &[String], background: bool) -> anyhow::Result<Prepared> {
        if servers.is_empty() {
            return Ok(Prepared::default());
        }
        if !self.options.regenerate && background {
            let manager = self.manager.clone();
            let failed = self.failed.clone();
            let names = servers.to_vec();
            let handle = tokio::spawn(async move {
                let started = manager.start_servers(&names).await;
                if let Ok(mut f) = failed.lock() {
                    f.extend(started.failed);
                }
            });
            *self.warming.get_mut() = Some(handle);
            return Ok(Prepared::default());
        }
        let started = self.manager.start_servers(servers).await;
        if let Ok(mut f) = self.failed.lock() {
            f.extend(started.failed.iter().cloned());
        }
        let regenerated = if self.options.regenerate {
            let primitives = primitives_of(&self.manager, &started.ok).await;
            self.refresh_tree(&started.ok, &started.tools, &primitives)?
        } else {
            None
        };
        Ok(Prepared { started: started.ok, failed: started.failed, tools: started.tools, regenerated })
    }

    /// Regenerates the tree for the `ok` servers when their tools (or their resources and
    /// prompts, which the README lists) differ from the manifest's (the generator itself leaves
    /// unchanged files alone).
    fn refresh_tree(
        &self,
        ok: &[String],
        tools: &[ToolInfo],
        primitives: &codegen::Primitives,
    ) -> anyhow::Result<Option<GenerateReport>> {
        if ok.is_empty() {
            return Ok(None);
        }
        let workspace = self.workspace();
        let key = |t: &ToolInfo| (t.server.clone(), t.name.clone());
        let mut now: Vec<ToolInfo> = tools.iter().filter(|t| ok.contains(&t.server)).cloned().collect();
        now.sort_by_key(key);
        let before = codegen::generated_tools(workspace).map(|prev| {
            let mut prev: Vec<ToolInfo> = prev.into_iter().filter(|t| ok.contains(&t.server)).collect();
            prev.sort_by_key(key);
            prev
        });
        let (learned, raised) = codegen::learned_for_tree(workspace, &self.registry());
        let raised_here = raised.iter().any(|k| now.iter().any(|t| &crate::types::key(&t.server, &t.name) == k));
        let listed = codegen::generated_primitives(workspace);
        let same_primitives = ok.iter().all(|s| listed.get(s) == primitives.get(s));
        if before.as_ref() == Some(&now) && !raised_here && same_primitives {
            tracing::info!("the tree in {} is up to date for {ok:?}", workspace.display());
            return Ok(None);
        }
        let opts = GenerateOptions {
            output_dir: workspace.to_path_buf(),
            clean: false,
            only_servers: Some(ok.to_vec()),
            learned,
        };
        let report = codegen::generate_with(&now, &opts, Some(primitives))
            .with_context(|| format!("cannot generate the TypeScript API in {}", workspace.display()))?;
        tracing::info!(
            "regenerated {} tools in {} ({} files written)",
            report.tools,
            workspace.display(),
            report.files_written
        );
        Ok(Some(report))
    }

    /// The tools the generated tree was made from (`None` when there is no tree).
    pub fn tree_tools(&self) -> Option<Vec<ToolInfo>> {
        codegen::generated_tools(self.workspace())
    }

    /// Starts the bridge scripts call tools through (idempotent).
    pub async fn start_bridge(&mut self) -> anyhow::Result<()> {
        if self.bridge.is_none() {
            let describer = describer(self.manager.configured_names(), self.options.workspace.clone());
            let bridge = BridgeServer::start_with(self.manager.clone(), Some(describer))
                .await
                .context("cannot start the MCP bridge")?;
            self.bridge = Some(bridge);
        }
        Ok(())
    }

    /// [`CodeMode::run`] with the context of the request that runs the script: its tool calls
    /// carry `cx` (who is asked when a server elicits, the token that cancels them). The caller
    /// runs one script at a time on this code mode.
    pub async fn run_with(&self, script: Script, cx: CallContext) -> ExecOutcome {
        struct Clear<'a>(Option<&'a BridgeServer>);
        impl Drop for Clear<'_> {
            fn drop(&mut self) {
                if let Some(b) = self.0 {
                    b.set_context(None);
                }
            }
        }
        if let Some(b) = &self.bridge {
            b.set_context(Some(cx));
        }
        let _clear = Clear(self.bridge.as_ref());
        self.run(script).await
    }

    /// Runs one script: in a fresh isolate, or as the next step of this code mode's session
    /// ([`Options::session`]). A script whose import of a server's module failed
    /// because that server failed to start is told why (the server's error, with its stderr).
    pub async fn run(&self, script: Script) -> ExecOutcome {
        if let typecheck::Checker::Tsc(tsc) = &self.checker {
            let started = std::time::Instant::now();
            match typecheck::check(tsc, self.workspace(), &script).await {
                Ok(errors) if errors.is_empty() => {}
                Ok(errors) => return type_errors(errors, started.elapsed()),
                Err(e) => tracing::warn!("type check skipped, the script runs unchecked: {e:#}"),
            }
        }
        let req = ExecRequest {
            workspace: self.options.workspace.clone(),
            script,
            limits: self.options.limits.clone(),
            bridge: self.bridge.as_ref().map(|b| b.endpoint().clone()),
        };
        let mut outcome = self.executor.execute(req).await;
        if !outcome.skills_saved.is_empty()
            && let Err(e) = codegen::refresh_readme(&self.options.workspace)
        {
            tracing::warn!("cannot list the saved skills in the tree's README: {e:#}");
        }
        // What the script's calls taught the registry; sharper types for the next script.
        if let Err(e) = self.learn() {
            tracing::warn!("{e:#}");
        }
        if outcome.error.as_ref().is_some_and(|e| e.message.contains("no such module servers/")) {
            if let Some(handle) = self.warming.lock().await.take() {
                let _ = handle.await;
            }
            if let Some(error) = outcome.error.as_mut()
                && let Some(why) = self.failed_server_in(&error.message)
            {
                error.message = format!("{}: {why}", error.message);
            }
        }
        outcome
    }

    /// The start-up failure of the server whose directory a "no such module" message names.
    fn failed_server_in(&self, message: &str) -> Option<String> {
        let failed = self.failed.lock().ok()?;
        if failed.is_empty() {
            return None;
        }
        let names = codegen::server_names(self.manager.configured_names().iter().map(String::as_str));
        failed.iter().find_map(|(server, e)| {
            let dir = names.get(server.as_str()).map(|n| n.dir.as_str()).unwrap_or(server.as_str());
            message.contains(&format!("servers/{dir}/")).then(|| e.to_string())
        })
    }

    /// Stops the bridge (removing its socket directory). Servers belong to the manager: the
    /// command shuts it down.
    pub async fn stop(self) {
        if let Some(handle) = self.warming.into_inner() {
            handle.abort();
        }
        if let Some(bridge) = self.bridge {
            bridge.stop().await;
        }
    }
}

/// The resources, templates and prompts of `servers` for the tree's README: one list of each per
/// server (the manager keeps them per connection), none asked of a server that offers neither.
/// A server whose lists fail is listed without them.
pub async fn primitives_of(manager: &McpManager, servers: &[String]) -> codegen::Primitives {
    let mut out = codegen::Primitives::new();
    for server in servers {
        let (resources, prompts) = manager.offered(server, "the tree").await;
        let p = codegen::ServerPrimitives::from_lists(&resources.resources, &resources.templates, &prompts);
        if !p.is_empty() {
            out.insert(server.clone(), p);
        }
    }
    out
}

/// The outcome of a script that did not type-check: not run; the message counts the errors,
/// the "stack" lists them (`main.ts:3:15: error TS2551: ...`).
fn type_errors(errors: Vec<String>, took: std::time::Duration) -> ExecOutcome {
    let n = errors.len();
    let plural = if n == 1 { "" } else { "s" };
    ExecOutcome {
        stdout: String::new(),
        stderr: String::new(),
        value: None,
        error: Some(ExecFailure {
            kind: FailureKind::Typecheck,
            message: format!("{n} type error{plural}; the script did not run"),
            stack: Some(errors.join("\n")),
        }),
        duration_ms: took.as_secs_f64() * 1000.0,
        ..ExecOutcome::default()
    }
}

/// What `describeTool` (the bridge's `GET /tools/<server>/<tool>`) answers in code mode: the
/// tool's file as the generator writes it (TSDoc, function, input and output types), under a
/// line saying how to import it instead of the generated header.
pub fn describer(configured: Vec<String>, workspace: PathBuf) -> Describer {
    Arc::new(move |tool: &ToolInfo, siblings: &[ToolInfo]| {
        // The learned type the tree has for the tool, so the answer matches its file.
        let learned = codegen::learned_in_tree(&workspace).remove(&(tool.server.clone(), tool.name.clone()));
        let dirs = codegen::server_names(configured.iter().map(String::as_str));
        let dir = dirs.get(&tool.server).map(|n| n.dir.clone()).unwrap_or_else(|| tool.server.clone());
        let names = codegen::tool_names(siblings.iter().map(|t| t.name.as_str()));
        let rendered =
            names.get(&tool.name).and_then(|n| Some((n, codegen::render::tool_file(tool, n, learned.as_ref()).ok()?)));
        let Some((n, file)) = rendered else {
            return format!("// {} could not be rendered as TypeScript\n", tool.qualified_name());
        };
        let body: Vec<&str> = file
            .content
            .lines()
            .skip_while(|l| codegen::render::is_generated(l.as_bytes()) || l.starts_with("import ") || l.is_empty())
            .collect();
        format!(
            "// import {{ {} }} from \"./servers/{dir}/index.ts\";  (file servers/{dir}/{})\n{}\n",
            n.function,
            n.file,
            body.join("\n")
        )
    })
}
