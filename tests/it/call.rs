//! `mcp::call::drive`, the loop every tool call goes through, on a real 2026-07-28 session with
//! the fixture server (`server/discover` lifecycle, so its `--host-tools` ask with
//! `input_required` results): an elicitation round asks the call's own asker first, a declined
//! elicitation is an answer (the server decides), a refused sampling round is left out of
//! `inputResponses` for the server to decide, and fails the call only when asked again.

use crate::support;

use std::sync::Arc;

use agent::config::ServerConfig;
use agent::mcp::call::drive;
use agent::mcp::handler::{ClientEvents, McpClientHandler};
use agent::mcp::{Asker, CallContext};
use futures::future::BoxFuture;
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, ElicitRequestParams, ElicitResult, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use serde_json::{Value, json};

async fn modern_fixture() -> RunningService<RoleClient, McpClientHandler> {
    let mut cmd = tokio::process::Command::new(support::fixture_bin());
    cmd.arg("--host-tools").stderr(std::process::Stdio::null());
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let handler = McpClientHandler::new("fixture", ClientEvents::default(), Default::default()).with_host(
        Default::default(),
        ServerConfig::default(),
        Default::default(),
    );
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    handler.serve_with_lifecycle(transport, lifecycle).await.unwrap()
}

fn params(tool: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_string()).with_arguments(args.as_object().unwrap().clone())
}

fn text(r: &CallToolResult) -> String {
    serde_json::to_value(&r.content).unwrap()[0]["text"].as_str().unwrap_or_default().to_string()
}

/// Answers every elicitation with one form.
struct Answers(Value);

impl Asker for Answers {
    fn elicit<'a>(&'a self, _: &'a str, _: ElicitRequestParams) -> BoxFuture<'a, Option<Result<ElicitResult, String>>> {
        let answer = serde_json::from_value(json!({"action": "accept", "content": self.0})).map_err(|e| e.to_string());
        Box::pin(async move { Some(answer) })
    }

    fn origin(&self) -> u64 {
        1
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_required_elicitation_asks_the_calls_asker_else_the_policy_declines() {
    let service = modern_fixture().await;
    let cx = CallContext { asker: Some(Arc::new(Answers(json!({"name": "Lin"})))), ..Default::default() };
    let r = drive(&service, params("elicit_form", json!({})), Arc::new(cx)).await.unwrap();
    assert_eq!(text(&r), r#"accept: {"name":"Lin"}"#);
    // No asker: the policy (no terminal: decline), an answer the server decides on, not an error.
    let r = drive(&service, params("elicit_form", json!({})), Arc::default()).await.unwrap();
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert_eq!(text(&r), "decline: null");
    service.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_sampling_round_is_left_for_the_server_to_decide() {
    let service = modern_fixture().await;
    // `sampling: deny` (the default) refuses; this tool goes on without the model.
    let r = drive(&service, params("sample", json!({"prompt": "hi", "optional": true})), Arc::default()).await.unwrap();
    assert_eq!(text(&r), "no sample: the host refused; answered without the model");
    // This one asks again: the call fails with why.
    let e = drive(&service, params("sample", json!({"prompt": "hi"})), Arc::default()).await.unwrap_err();
    assert!(e.to_string().contains("sampling is not allowed for server `fixture`"), "{e}");
    service.cancel().await.unwrap();
}
