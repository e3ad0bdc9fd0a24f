//! The MCP conformance suite (npm `@modelcontextprotocol/conformance`) against `agent` as a
//! client: the suite starts each scenario's server and runs tests/conformance/client.sh, which
//! declares the server through `AGENT_MCP__SERVERS__CONFORMANCE__URL` and calls the scenario's
//! tool with `agent mcp call`. Pinned to 0.1.12, the last version that runs on Node 20, with
//! its `@modelcontextprotocol/sdk` held at 1.25.3 (npm `overrides`; newer SDKs break its
//! stateless test server). The `initialize` scenario is left out: it expects the client to ask
//! for protocol version 2025-11-25 or older, and rmcp asks for 2026-07-28.
//!
//! The server side (`mod server`): `conformance server --url URL` runs every server scenario of
//! the suite against an MCP endpoint; `run_server_suite` returns the outcome per scenario, and
//! the fixture server with `--conformance` must pass them all.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{Project, node_or_skip};

const CONFORMANCE: &str = "0.1.12";
const SDK: &str = "1.25.3";

/// The suite's `conformance` binary, installed once under the target dir with the SDK pinned.
fn conformance_bin() -> PathBuf {
    let dir =
        agent::util::dirs::build_target_dir().join("node-tools").join(format!("conformance@{CONFORMANCE}+sdk@{SDK}"));
    let bin = dir.join("node_modules/.bin/conformance");
    if bin.exists() {
        return bin;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let lock = std::fs::File::create(dir.join(".lock")).unwrap();
    lock.lock().unwrap();
    if !bin.exists() {
        let package = serde_json::json!({
            "name": "agent-conformance",
            "private": true,
            "dependencies": {"@modelcontextprotocol/conformance": CONFORMANCE},
            "overrides": {"@modelcontextprotocol/sdk": SDK},
        });
        std::fs::write(dir.join("package.json"), package.to_string()).unwrap();
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .output()
            .expect("run npm");
        assert!(
            out.status.success() && bin.exists(),
            "npm install of the conformance suite failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    bin
}

/// Runs one client scenario; panics with the suite's report unless every check passed.
fn scenario(name: &str) {
    let Some((ok, stdout, stderr)) = run_scenario(name) else { return };
    assert!(ok && stderr.contains("OVERALL: PASSED"), "conformance scenario {name} failed:\n{stdout}\n{stderr}");
}

/// Runs one client scenario: whether the suite passed it, its stdout and stderr (`None`: skipped
/// without Node outside CI).
fn run_scenario(name: &str) -> Option<(bool, String, String)> {
    if !node_or_skip(&format!("the conformance scenario {name}")) {
        return None;
    }
    let bin = conformance_bin();
    let p = Project::new();
    p.write_config("{}\n");
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/client.sh");
    // The hermetic environment of `agent` (no AGENT_* of the developer, its own HOME).
    let cmd = p.cmd(&[]);
    let out = Command::new(&bin)
        .args(["client", "--scenario", name, "--timeout", "60000", "--command"])
        .arg(&client)
        .current_dir(p.path())
        .env_clear()
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))))
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AGENT_BIN", cmd.get_program())
        .output()
        .expect("run the conformance suite");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    Some((out.status.success(), stdout, stderr))
}

#[test]
fn tools_call() {
    scenario("tools_call");
}

/// The suite's `sse-retry` server answers a pending tool call on the client's standalone GET
/// stream when that stream arrives after the call started (rmcp opens it in the background, and
/// under load it can come late): the call then ends before the suite's timer closes the call's
/// stream, and the timing check can only say "Could not measure timing". That run measured
/// nothing, so it is run again (at most three times); a reconnect too early or too late, or any
/// other failed check, fails at once.
#[test]
fn sse_retry() {
    for attempt in 1..=3 {
        let Some((ok, stdout, stderr)) = run_scenario("sse-retry") else { return };
        if ok && stderr.contains("OVERALL: PASSED") {
            return;
        }
        // The suite names that check "... the retry field timing" only when it could not measure.
        let out = format!("{stdout}{stderr}");
        let unmeasured = out.contains("Could not measure timing") || out.contains("respect the retry field timing");
        assert!(
            unmeasured && attempt < 3,
            "conformance scenario sse-retry failed (attempt {attempt}):\n{stdout}\n{stderr}"
        );
    }
}

/// Needs `elicitation: accept_defaults` on the server entry (SEP-1034 defaults).
#[test]
fn elicitation_sep1034_client_defaults() {
    scenario("elicitation-sep1034-client-defaults");
}

/// The OAuth scenarios: `agent mcp login --no-browser`, the printed URL followed, then a call.
mod auth {
    use super::{run_scenario, scenario};

    /// A scenario whose server breaks a rule `agent` enforces: `agent` must refuse to sign in,
    /// saying why (the suite then reports the flow it expected as missing).
    fn refused(name: &str, why: &str) {
        let Some((ok, stdout, stderr)) = run_scenario(name) else { return };
        assert!(!ok && stderr.contains(why), "{name}: expected agent to refuse with `{why}`:\n{stdout}\n{stderr}");
        assert!(!stderr.contains("signed in to conformance"), "{stderr}");
    }

    #[test]
    fn metadata_default() {
        scenario("auth/metadata-default");
    }

    #[test]
    fn metadata_var1() {
        scenario("auth/metadata-var1");
    }

    /// Suite 0.1.12 serves the metadata of an issuer with a path (`/tenant1`) with `issuer` set
    /// to the bare origin, which RFC 8414 (section 3.3) says a client must reject: rmcp does, so
    /// `agent` never signs in to an authorization server that misnames itself.
    #[test]
    fn metadata_var2_names_the_wrong_issuer_and_is_refused() {
        refused("auth/metadata-var2", "issuer mismatch");
    }

    /// The same fixture bug as var2, with the metadata at `/tenant1/.well-known/openid-configuration`.
    #[test]
    fn metadata_var3_names_the_wrong_issuer_and_is_refused() {
        refused("auth/metadata-var3", "issuer mismatch");
    }

    #[test]
    fn basic_cimd() {
        scenario("auth/basic-cimd");
    }

    #[test]
    fn scope_from_www_authenticate() {
        scenario("auth/scope-from-www-authenticate");
    }

    #[test]
    fn scope_from_scopes_supported() {
        scenario("auth/scope-from-scopes-supported");
    }

    #[test]
    fn scope_omitted_when_undefined() {
        scenario("auth/scope-omitted-when-undefined");
    }

    #[test]
    fn scope_step_up() {
        scenario("auth/scope-step-up");
    }

    #[test]
    fn scope_retry_limit() {
        scenario("auth/scope-retry-limit");
    }

    #[test]
    fn token_endpoint_auth_basic() {
        scenario("auth/token-endpoint-auth-basic");
    }

    #[test]
    fn token_endpoint_auth_post() {
        scenario("auth/token-endpoint-auth-post");
    }

    #[test]
    fn token_endpoint_auth_none() {
        scenario("auth/token-endpoint-auth-none");
    }

    #[test]
    fn resource_mismatch() {
        scenario("auth/resource-mismatch");
    }

    #[test]
    fn pre_registration() {
        scenario("auth/pre-registration");
    }

    #[test]
    fn oauth_metadata_backcompat_2025_03_26() {
        scenario("auth/2025-03-26-oauth-metadata-backcompat");
    }

    #[test]
    fn oauth_endpoint_fallback_2025_03_26() {
        scenario("auth/2025-03-26-oauth-endpoint-fallback");
    }

    #[test]
    fn client_credentials_jwt() {
        scenario("auth/client-credentials-jwt");
    }

    #[test]
    fn client_credentials_basic() {
        scenario("auth/client-credentials-basic");
    }
}

/// The suite's server scenarios against an MCP endpoint (`conformance server --url URL`).
pub(crate) mod server {
    use super::{conformance_bin, node_or_skip};
    use crate::support::{HttpFixture, Project};

    use std::collections::BTreeMap;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// What one scenario's checks said: the `FAILURE` and `WARNING` checks as `id: message`, and
    /// how many succeeded. It passed when nothing failed and something succeeded.
    #[derive(Debug, Default)]
    pub(crate) struct Outcome {
        pub failures: Vec<String>,
        pub warnings: Vec<String>,
        pub successes: usize,
    }

    impl Outcome {
        pub(crate) fn passed(&self) -> bool {
            self.failures.is_empty() && self.successes > 0
        }
    }

    /// One run of the suite: the outcome of every server scenario, by name, and the suite's
    /// console output (for messages).
    #[derive(Debug)]
    pub(crate) struct ServerSuite {
        pub scenarios: BTreeMap<String, Outcome>,
        pub output: String,
    }

    impl ServerSuite {
        /// The names of the scenarios that did not pass.
        pub(crate) fn failed(&self) -> Vec<&str> {
            self.scenarios.iter().filter(|(_, o)| !o.passed()).map(|(n, _)| n.as_str()).collect()
        }

        /// `scenario: check: message` for every failed check (assertion messages).
        pub(crate) fn report(&self) -> String {
            let mut out = String::new();
            for (name, o) in &self.scenarios {
                for f in &o.failures {
                    out.push_str(&format!("{name}: {f}\n"));
                }
            }
            out
        }
    }

    /// The scenarios that cannot pass against the fixture for a reason outside it, with the
    /// reason. Empty: every scenario passes. `server_suite_passes_against_the_fixture` fails
    /// when a listed one passes, so the list stays true.
    pub(crate) const EXPECTED_FAILURES: &[(&str, &str)] = &[];

    /// The `WARNING` checks the fixture gets (`scenario`, `check`, why); any other warning fails
    /// the test, and so does a listed one that is no longer given.
    pub(crate) const EXPECTED_WARNINGS: &[(&str, &str, &str)] = &[(
        "server-sse-polling",
        "server-sse-disconnect-resume",
        "the fixture has no `test_reconnection` tool: rmcp gives a handler no way to close its own \
         request's SSE stream mid-call (its session manager keys streams by an internal id)",
    )];

    /// The server scenarios the suite knows (`conformance list`).
    fn listed(bin: &std::path::Path) -> Vec<String> {
        let out = Command::new(bin).arg("list").output().expect("run conformance list");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let section = text.split("Client scenarios").next().unwrap_or_default();
        section.lines().filter_map(|l| l.trim().strip_prefix("- ")).map(str::to_string).collect()
    }

    /// Runs every server scenario of the suite (active and pending: `--suite all`) once against
    /// `url`, a Streamable HTTP endpoint on localhost, and reads each scenario's checks. Panics if
    /// the suite does not finish within two minutes or a scenario `conformance list` names left
    /// no results. Callers check `node_or_skip` first.
    pub(crate) fn run_server_suite(url: &str) -> ServerSuite {
        let bin = conformance_bin();
        let p = Project::new();
        let results = p.path().join("results");
        let mut child = Command::new(&bin)
            .args(["server", "--url", url, "--suite", "all", "-o"])
            .arg(&results)
            .current_dir(p.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", p.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run the conformance suite");
        let started = Instant::now();
        while child.try_wait().expect("wait for the conformance suite").is_none() {
            if started.elapsed() > Duration::from_secs(120) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the conformance server suite against {url} did not finish in 120 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().expect("the conformance suite's output");
        let output = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let mut scenarios = BTreeMap::new();
        for entry in std::fs::read_dir(&results).unwrap_or_else(|e| panic!("no results ({e}):\n{output}")) {
            let dir = entry.unwrap().path();
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            // `server-NAME-<time>`: the suite's directory per scenario, the time being an ISO
            // timestamp with `-` for `:` and `.` (always 24 characters).
            let stamp = "-2026-11-27T09-30-09-976Z".len();
            let scenario = name
                .strip_prefix("server-")
                .and_then(|n| n.get(..n.len().saturating_sub(stamp)))
                .unwrap_or_else(|| panic!("unexpected results directory {name}"));
            let checks: Vec<serde_json::Value> =
                serde_json::from_slice(&std::fs::read(dir.join("checks.json")).unwrap()).unwrap();
            let mut o = Outcome::default();
            for c in &checks {
                let line =
                    || format!("{}: {}", c["id"].as_str().unwrap_or("?"), c["errorMessage"].as_str().unwrap_or(""));
                match c["status"].as_str() {
                    Some("SUCCESS") => o.successes += 1,
                    Some("FAILURE") => o.failures.push(line()),
                    Some("WARNING") => o.warnings.push(line()),
                    _ => {}
                }
            }
            scenarios.insert(scenario.to_string(), o);
        }
        let missing: Vec<String> = listed(&bin).into_iter().filter(|s| !scenarios.contains_key(s)).collect();
        assert!(missing.is_empty(), "scenarios without results: {missing:?}\n{output}");
        ServerSuite { scenarios, output }
    }

    /// The fixture with `--conformance` over HTTP passes every server scenario of the suite
    /// (tools, resources, prompts, completion, logging, progress, sampling, elicitation, SSE
    /// streams, DNS rebinding protection), but for the ones listed with their reasons.
    #[test]
    fn server_suite_passes_against_the_fixture() {
        if !node_or_skip("the conformance server suite") {
            return;
        }
        let fixture = HttpFixture::start_with(&["--conformance"]);
        let started = Instant::now();
        let suite = run_server_suite(&fixture.url);
        eprintln!("conformance server suite: {} scenarios in {:?}", suite.scenarios.len(), started.elapsed());
        let expected: Vec<&str> = EXPECTED_FAILURES.iter().map(|(n, _)| *n).collect();
        let unexpected: Vec<&str> = suite.failed().into_iter().filter(|n| !expected.contains(n)).collect();
        assert!(unexpected.is_empty(), "scenarios failed: {unexpected:?}\n{}", suite.report());
        for (name, why) in EXPECTED_FAILURES {
            let o = suite.scenarios.get(*name);
            assert!(o.is_some_and(|o| !o.passed()), "{name} passes now; take it off the list ({why})");
        }
        let mut warned: Vec<(String, String)> = Vec::new();
        for (name, o) in &suite.scenarios {
            for w in &o.warnings {
                warned.push((name.clone(), w.split(':').next().unwrap_or_default().to_string()));
            }
        }
        let listed: Vec<(String, String)> =
            EXPECTED_WARNINGS.iter().map(|(s, c, _)| (s.to_string(), c.to_string())).collect();
        assert_eq!(warned, listed, "the warnings changed; keep EXPECTED_WARNINGS true\n{}", suite.output);
    }
}
