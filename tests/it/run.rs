//! `agent run` end to end: the real binary against a scripted fake LLM (both APIs, streamed and
//! not) with the rmcp fixture server and server-everything, in direct and code mode; plus
//! `agent mcp list --tokens`.

use crate::support;
use crate::support::fake_llm;

use std::time::{Duration, Instant};

use fake_llm::{Api, FakeLlm, Reply};
use serde_json::{Value, json};
use support::{Project, Run, everything_yaml, fixture_stdio_yaml, pids_matching, wait_until};

fn project(fake: &FakeLlm, api: Api, servers_yaml: &str) -> Project {
    let p = Project::new();
    p.write_config(&format!("{}mcp:\n  servers:\n{servers_yaml}", fake.llm_yaml(api)));
    p
}

fn fixture_project(fake: &FakeLlm, api: Api) -> Project {
    project(fake, api, &fixture_stdio_yaml("fixture", &[]))
}

fn unique_tag(name: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

/// The tool names `agent mcp list --json` reports, mapped the way direct mode names them.
fn listed_tools(p: &Project) -> Vec<Value> {
    let r = p.run(&["mcp", "list", "--json"]);
    r.assert_ok();
    r.json().as_array().cloned().unwrap()
}

/// `tokens in X / out Y` from the summary line.
fn summary_tokens(r: &Run) -> (u64, u64) {
    let line =
        r.stderr.lines().find(|l| l.starts_with("turns ")).unwrap_or_else(|| panic!("no summary:\n{}", r.stderr));
    let grab = |key: &str| -> u64 {
        let rest = &line[line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len()..];
        rest.split_whitespace().next().unwrap().replace(',', "").parse().unwrap()
    };
    (grab("tokens in "), grab("/ out "))
}

// ---------------------------------------------------------------------------------------------
// Direct mode

#[test]
fn direct_anthropic_streaming_sends_all_tools_and_runs_the_calls() {
    let fake = FakeLlm::start(vec![
        Reply::tools("Let me add those.", &[("mcp_fixture_add", json!({"a": 40, "b": 2}))]),
        Reply::text("The sum is 42."),
    ]);
    let p = fixture_project(&fake, Api::Anthropic);
    let r = p.run(&["run", "What is 40 + 2?"]);
    r.assert_ok();
    // Streamed text on stdout, the final answer last.
    assert_eq!(r.stdout, "Let me add those.\nThe sum is 42.\n");
    assert!(r.stderr.contains("→ mcp_fixture_add {\"a\":40,\"b\":2}"), "{}", r.stderr);
    assert!(r.stderr.contains("← 10 B in "), "{}", r.stderr);

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].header("x-api-key"), Some("test-key"));
    assert_eq!(reqs[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(reqs[0].body["stream"], true);
    assert_eq!(reqs[0].body["model"], "fake-model");
    // Every fixture tool is offered, under its mapped name, with its schema.
    let mut expected: Vec<String> = listed_tools(&p)
        .iter()
        .map(|t| format!("mcp_fixture_{}", t["name"].as_str().unwrap().replace('.', "_")))
        .collect();
    expected.sort();
    let mut offered = reqs[0].tool_names();
    offered.sort();
    assert_eq!(offered, expected);
    let add = reqs[0].body["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp_fixture_add").unwrap();
    assert_eq!(add["input_schema"]["required"], json!(["a", "b"]));
    assert_eq!(add["description"], "Add two integers; returns {sum}.");
    // The streamed tool call ran; its result went back with the call's id.
    assert_eq!(reqs[1].tool_results(), vec![("toolu_1_0".to_string(), "{\"sum\":42}".to_string(), false)]);
    let assistant = &reqs[1].body["messages"][1];
    assert_eq!(
        assistant["content"][1],
        json!({"type":"tool_use","id":"toolu_1_0","name":"mcp_fixture_add","input":{"a":40,"b":2}})
    );
    // The summary adds up what the provider reported.
    let (input, output) = summary_tokens(&r);
    let reported: Vec<(u64, u64)> = reqs.iter().map(|q| q.usage.unwrap()).collect();
    assert_eq!(input, reported.iter().map(|u| u.0).sum::<u64>());
    assert_eq!(output, reported.iter().map(|u| u.1).sum::<u64>());
    assert!(r.stderr.contains("turns 2 · tool calls 1 · tokens in "), "{}", r.stderr);
}

#[test]
fn direct_openai_streaming_with_server_everything_runs_parallel_calls() {
    let fake = FakeLlm::start(vec![
        Reply::tools(
            "",
            &[
                ("mcp_everything_echo", json!({"message": "hello from the model"})),
                ("mcp_fixture_text_upper", json!({"text": "shout"})),
            ],
        ),
        Reply::text("Done: echoed and shouted."),
    ]);
    let servers = format!("{}{}", everything_yaml("everything"), fixture_stdio_yaml("fixture", &[]));
    let p = project(&fake, Api::OpenAi, &servers);
    let r = p.run(&["run", "Echo and shout"]);
    r.assert_ok();
    assert_eq!(r.stdout, "Done: echoed and shouted.\n");
    let reqs = fake.requests();
    assert_eq!(reqs[0].header("authorization"), Some("Bearer test-key"));
    assert_eq!(reqs[0].body["stream_options"]["include_usage"], true);
    let listed = listed_tools(&p);
    let mut offered = reqs[0].tool_names();
    // server-everything offers resources: the two resource tools come last.
    assert_eq!(offered.split_off(offered.len() - 2), ["list_resources", "read_resource"]);
    assert_eq!(offered.len(), listed.len(), "{offered:?}");
    assert!(listed.iter().filter(|t| t["server"] == "everything").count() >= 10);
    let valid = regex::Regex::new("^[a-zA-Z0-9_-]{1,64}$").unwrap();
    assert!(offered.iter().all(|n| valid.is_match(n) && n.starts_with("mcp_")), "{offered:?}");
    // OpenAI-flavoured schemas: no $ref left (the fixture's `complex` tool uses $defs/$ref).
    let complex = &reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp_fixture_complex")
        .unwrap()["function"]["parameters"];
    assert!(!complex.to_string().contains("$ref"), "{complex}");
    assert_eq!(complex["type"], "object");
    // Both calls ran; results come back as `tool` messages in call order.
    let results = reqs[1].tool_results();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "call_1_0");
    assert!(results[0].1.contains("hello from the model"), "{results:?}");
    assert_eq!(results[1], ("call_1_1".to_string(), "SHOUT".to_string(), false));
    assert!(r.stderr.contains("← mcp_everything_echo: "), "{}", r.stderr);
}

#[test]
fn both_providers_work_without_streaming() {
    for api in [Api::Anthropic, Api::OpenAi] {
        let fake = FakeLlm::start(vec![
            Reply::tools("Checking.", &[("mcp_fixture_echo", json!({"message": "ping"}))]),
            Reply::text("pong"),
        ]);
        let p = fixture_project(&fake, api);
        let r = p.run(&["run", "--no-stream", "say ping"]);
        r.assert_ok();
        assert_eq!(r.stdout, "Checking.\npong\n", "{api:?}");
        let reqs = fake.requests();
        assert!(reqs[0].body.get("stream").is_none(), "{api:?}");
        assert_eq!(reqs[1].tool_results()[0].1, "ping", "{api:?}");
        let (input, _) = summary_tokens(&r);
        assert_eq!(input, reqs.iter().map(|q| q.usage.unwrap().0).sum::<u64>(), "{api:?}");
    }
}

#[test]
fn tool_errors_bad_arguments_and_unknown_tools_go_back_to_the_model() {
    let fake = FakeLlm::start(vec![
        Reply::tools(
            "",
            &[
                ("mcp_fixture_fail", json!({})),
                ("mcp_fixture_add", json!({"a": "forty"})),
                ("mcp_fixture_nope", json!({})),
            ],
        ),
        Reply::RawTool("mcp_fixture_echo".into(), "{\"message\": ".into()),
        Reply::text("I could not do it."),
    ]);
    let p = fixture_project(&fake, Api::Anthropic);
    let r = p.run(&["run", "try things"]);
    r.assert_ok();
    let reqs = fake.requests();
    let results = reqs[1].tool_results();
    assert_eq!(results.len(), 3);
    assert_eq!((results[0].1.as_str(), results[0].2), ("boom: this tool always fails", true));
    assert!(results[1].2 && results[1].1.contains("invalid arguments for `fixture.add`"), "{results:?}");
    assert!(results[1].1.contains("/a") || results[1].1.contains("\"forty\""), "{results:?}");
    assert!(results[2].2 && results[2].1.starts_with("unknown tool `mcp_fixture_nope`"), "{results:?}");
    let broken = reqs[2].tool_results();
    assert!(broken[0].2 && broken[0].1.contains("not valid JSON"), "{broken:?}");
    assert!(r.stderr.contains("← mcp_fixture_fail: error in "), "{}", r.stderr);
}

#[test]
fn large_results_are_cut_with_a_marker() {
    let fake = FakeLlm::start(vec![Reply::tool("mcp_fixture_big", json!({"bytes": 50000})), Reply::text("ok")]);
    let p = fixture_project(&fake, Api::Anthropic);
    p.run(&["run", "--max-tool-result", "1KB", "read big"]).assert_ok();
    let (_, content, is_error) = fake.requests()[1].tool_results().remove(0);
    assert!(!is_error);
    assert!(content.starts_with("line 00000000: the quick brown fox"));
    assert!(
        content.ends_with("\n[result truncated: 48976 of 50000 bytes omitted]"),
        "{}",
        &content[content.len() - 80..]
    );
}

/// A result over `mcp.max_result_bytes` goes back to the model as an error at once, and the
/// next call in the run works.
#[test]
fn an_oversized_result_is_an_error_result_at_once() {
    let fake = FakeLlm::start(vec![
        Reply::tool("mcp_fixture_big", json!({"bytes": 3000000})),
        Reply::tool("mcp_fixture_echo", json!({"message": "still there"})),
        Reply::text("done"),
    ]);
    let servers =
        format!("{}      call_timeout: 60s\n  max_result_bytes: 1048576\n", fixture_stdio_yaml("fixture", &[]));
    let p = project(&fake, Api::Anthropic, &servers);
    let started = Instant::now();
    p.run(&["run", "read big"]).assert_ok();
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    let reqs = fake.requests();
    let (_, content, is_error) = reqs[1].tool_results().remove(0);
    assert_eq!((content.as_str(), is_error), ("result of fixture.big is larger than the 1 MiB limit", true));
    let (_, content, is_error) = reqs[2].tool_results().remove(0);
    assert_eq!((content.as_str(), is_error), ("still there", false));
}

#[test]
fn a_server_that_fails_to_start_is_reported_and_the_run_goes_on() {
    let fake = FakeLlm::start(vec![Reply::text("fine without it")]);
    let servers =
        format!("{}{}", fixture_stdio_yaml("broken", &["--exit-on-start"]), fixture_stdio_yaml("fixture", &[]));
    let p = project(&fake, Api::Anthropic, &servers);
    let r = p.run(&["run", "go"]);
    r.assert_ok();
    assert!(r.stderr.contains("warning: server `broken` failed to start"), "{}", r.stderr);
    assert!(r.stderr.contains("(continuing without `broken`)"), "{}", r.stderr);
    let names = fake.requests()[0].tool_names();
    assert!(names.iter().all(|n| n.starts_with("mcp_fixture_")) && !names.is_empty(), "{names:?}");
}

// ---------------------------------------------------------------------------------------------
// Output modes

#[test]
fn json_prints_the_whole_transcript() {
    let fake = FakeLlm::start(vec![
        Reply::tools("Adding.", &[("mcp_fixture_add", json!({"a": 1, "b": 2}))]),
        Reply::text("3"),
    ]);
    let p = fixture_project(&fake, Api::OpenAi);
    let r = p.run(&["run", "--json", "1+2?"]);
    r.assert_ok();
    let t = r.json();
    assert_eq!(t["outcome"], "answer");
    assert_eq!(t["final_answer"], "3");
    assert_eq!(t["mode"], "direct");
    assert_eq!(t["provider"], "openai");
    assert_eq!(t["task"], "1+2?");
    assert_eq!(t["tool_calls"], 1);
    let turns = t["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2);
    let call = &turns[0]["tool_calls"][0];
    assert_eq!(call["name"], "mcp_fixture_add");
    assert_eq!((call["server"].as_str(), call["tool"].as_str()), (Some("fixture"), Some("add")));
    assert_eq!(call["arguments"], json!({"a": 1, "b": 2}));
    assert_eq!(call["result"], "{\"sum\":3}");
    assert!(call["duration_ms"].as_f64().unwrap() > 0.0);
    // Usage per turn as reported, and the total is their sum.
    let reqs = fake.requests();
    for (turn, req) in turns.iter().zip(&reqs) {
        let (i, o) = req.usage.unwrap();
        assert_eq!(
            (turn["usage"]["input_tokens"].as_u64(), turn["usage"]["output_tokens"].as_u64()),
            (Some(i), Some(o))
        );
    }
    let sum: u64 = turns.iter().map(|t| t["usage"]["input_tokens"].as_u64().unwrap()).sum();
    assert_eq!(t["usage"]["input_tokens"].as_u64(), Some(sum));
    // Messages: user task, assistant with the tool call, user with the result, final assistant.
    let msgs = t["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
    assert!(t["tools"].as_array().unwrap().iter().any(|n| n == "mcp_fixture_echo"));
}

#[test]
fn quiet_prints_only_the_final_answer() {
    let fake = FakeLlm::start(vec![
        Reply::tools("thinking out loud", &[("mcp_fixture_echo", json!({"message": "x"}))]),
        Reply::text("final"),
    ]);
    let p = fixture_project(&fake, Api::Anthropic);
    let r = p.run(&["run", "-q", "go"]);
    r.assert_ok();
    assert_eq!(r.stdout, "final\n");
    assert_eq!(r.stderr, "");
}

#[test]
fn task_and_system_prompt_come_from_stdin_and_flags() {
    let fake = FakeLlm::start(vec![Reply::text("ok")]);
    let p = fixture_project(&fake, Api::Anthropic);
    let r = p.run_stdin(&["run", "-", "--system", "Answer in French.", "--model", "other-model"], "  the task\n");
    r.assert_ok();
    let req = &fake.requests()[0];
    assert_eq!(req.body["messages"][0]["content"][0]["text"], "the task");
    assert_eq!(req.body["model"], "other-model");
    let system = req.system();
    assert!(system.contains("mcp_<server>_<tool>") && system.ends_with("Answer in French.\n"), "{system}");
}

#[test]
fn provider_model_and_base_url_flags_override_the_config() {
    let fake =
        FakeLlm::start(vec![Reply::tool("mcp_fixture_echo", json!({"message": "via openai"})), Reply::text("ok")]);
    // The config says anthropic; the flags switch to the OpenAI-compatible API of the same fake.
    let p = fixture_project(&fake, Api::Anthropic);
    let url = fake.openai_url();
    let r = p.run(&[
        "run",
        "--provider",
        "openai",
        "--model",
        "local-model",
        "--base-url",
        &url,
        "--max-tokens",
        "77",
        "go",
    ]);
    r.assert_ok();
    let reqs = fake.requests();
    assert!(reqs.iter().all(|q| q.api == Api::OpenAi && q.path == "/v1/chat/completions"), "{reqs:?}");
    assert_eq!(reqs[0].body["model"], "local-model");
    assert_eq!(reqs[0].body["max_tokens"], 77);
    assert_eq!(reqs[1].tool_results()[0].1, "via openai");
}

// ---------------------------------------------------------------------------------------------
// Failures and limits

#[test]
fn rate_limits_and_server_errors_are_retried() {
    let fake = FakeLlm::start(vec![
        Reply::Status(429, "slow down".into(), Some("0".into())),
        Reply::Status(503, "overloaded".into(), None),
        Reply::text("made it"),
    ]);
    let p = fixture_project(&fake, Api::Anthropic);
    let r = p.run(&["run", "hello"]);
    r.assert_ok();
    assert_eq!(r.stdout, "made it\n");
    assert_eq!(fake.requests().len(), 3);
    assert!(r.stderr.contains("HTTP 429; retrying in 0.0 s (retry 1)"), "{}", r.stderr);
    assert!(r.stderr.contains("HTTP 503; retrying in "), "{}", r.stderr);
    // The retried requests are identical.
    let reqs = fake.requests();
    assert_eq!(reqs[0].raw, reqs[2].raw);
}

#[test]
fn dropped_connections_are_retried() {
    let fake = FakeLlm::start(vec![Reply::Disconnect, Reply::text("second try")]);
    let p = fixture_project(&fake, Api::OpenAi);
    let r = p.run(&["run", "hello"]);
    r.assert_ok();
    assert_eq!(r.stdout, "second try\n");
    assert!(r.stderr.contains("network error; retrying in "), "{}", r.stderr);
    assert_eq!(fake.requests().len(), 2);
}

#[test]
fn a_reply_cut_off_mid_stream_is_retried_and_the_restart_is_announced() {
    let fake = FakeLlm::start(vec![Reply::CutOff("The answer is".into()), Reply::text("The answer is 42.")]);
    let p = fixture_project(&fake, Api::OpenAi);
    let r = p.run(&["run", "hello"]);
    r.assert_ok();
    // The cut-off text was already on screen; the retry's text follows on its own line.
    assert_eq!(r.stdout, "The answer is\nThe answer is 42.\n");
    assert!(r.stderr.contains("network error; retrying in "), "{}", r.stderr);
    assert!(r.stderr.contains("the reply above was cut off and starts over"), "{}", r.stderr);
    assert_eq!(fake.requests().len(), 2);
}

/// A model endpoint that never stops sending (a reply, a stream event, an error body) cannot
/// make `agent` hold it all: the reply is refused past its cap with one line, and not retried;
/// of an error body only the start is read.
#[test]
fn an_endless_reply_is_refused_at_its_cap_not_read_forever() {
    for (api, stream, status) in
        [(Api::Anthropic, false, 200), (Api::OpenAi, true, 200), (Api::Anthropic, true, 200), (Api::OpenAi, false, 400)]
    {
        let fake = FakeLlm::start(vec![Reply::Endless(status), Reply::text("not reached")]);
        let p = Project::new();
        // A short request timeout: without the cap the endless body is read until it fires.
        p.write_config(&fake.llm_yaml(api).replace("max_retries: 3", "max_retries: 1").replace("60s", "5s"));
        let started = Instant::now();
        let r = p.run(if stream { &["run", "hello"][..] } else { &["run", "--no-stream", "hello"][..] });
        let took = started.elapsed();
        let what = format!("{api:?} stream {stream} HTTP {status}");
        assert_ne!(r.code, 0, "{what}: {r:?}");
        assert!(took < Duration::from_secs(20), "{what}: took {took:?}");
        let last = r.stderr.lines().last().unwrap_or_default();
        if status == 200 {
            assert!(
                last.contains("the response is larger than 64 MiB; it was not read further"),
                "{what}: {}",
                r.stderr
            );
            assert_eq!(fake.requests().len(), 1, "{what}: retried");
        } else {
            assert!(last.contains("HTTP 400") && last.len() < 1000, "{what}: {last}");
        }
    }
}

#[test]
fn retries_run_out_with_the_providers_message() {
    let fake = FakeLlm::start(vec![
        Reply::Status(429, "rate limit exceeded for fake-model".into(), Some("0".into())),
        Reply::Status(429, "rate limit exceeded for fake-model".into(), Some("0".into())),
    ]);
    let p = Project::new();
    p.write_config(&fake.llm_yaml(Api::OpenAi).replace("max_retries: 3", "max_retries: 1"));
    let r = p.run(&["run", "hello"]);
    r.assert_code(1);
    assert!(
        r.stderr.contains("error: rate limited by the provider (HTTP 429 from http://127.0.0.1:")
            && r.stderr
                .contains("/v1/chat/completions): rate limit exceeded for fake-model (gave up after 2 attempts)"),
        "{}",
        r.stderr
    );
}

#[test]
fn auth_and_request_errors_show_the_providers_message_without_retrying() {
    let fake = FakeLlm::start(vec![Reply::Status(401, "invalid x-api-key".into(), None)]);
    let p = fixture_project(&fake, Api::Anthropic);
    let r = p.run(&["run", "hello"]);
    r.assert_code(2);
    assert!(
        r.stderr.contains("error: the provider rejected the API key (HTTP 401 from http://127.0.0.1:"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("/v1/messages): invalid x-api-key; check llm.api_key"), "{}", r.stderr);
    assert_eq!(fake.requests().len(), 1);

    // A wrong model is a configuration error too.
    let fake = FakeLlm::start(vec![Reply::Status(404, "model `fake-modle` not found".into(), None)]);
    let p = fixture_project(&fake, Api::OpenAi);
    let r = p.run(&["run", "hello"]);
    r.assert_code(2);
    assert!(r.stderr.contains("not found (check llm.model / --model and llm.base_url) (HTTP 404"), "{}", r.stderr);
    assert_eq!(fake.requests().len(), 1);

    let fake = FakeLlm::start(vec![Reply::Status(400, "messages: tool_call_id is invalid".into(), None)]);
    let p = fixture_project(&fake, Api::OpenAi);
    let r = p.run(&["run", "--json", "hello"]);
    r.assert_code(1);
    assert!(r.stderr.contains("the provider rejected the request (HTTP 400"), "{}", r.stderr);
    assert!(r.stderr.contains("messages: tool_call_id is invalid"), "{}", r.stderr);
    assert_eq!(r.json()["outcome"], "provider_error");
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn max_turns_stops_with_a_clear_message() {
    let call = || Reply::tool("mcp_fixture_echo", json!({"message": "again"}));
    let fake = FakeLlm::start(vec![call(), call(), call(), call()]);
    let p = fixture_project(&fake, Api::Anthropic);
    let r = p.run(&["run", "--max-turns", "2", "--json", "loop forever"]);
    r.assert_code(1);
    assert!(r.stderr.contains("error: stopped after 2 turns without a final answer"), "{}", r.stderr);
    assert_eq!(fake.requests().len(), 2);
    let t = r.json();
    assert_eq!(t["outcome"], "max_turns");
    assert_eq!(t["tool_calls"], 1, "the calls of the last turn are not run");
    assert!(t["final_answer"].is_null());
}

#[test]
fn configuration_problems_are_usage_errors() {
    let p = Project::with_fixture();
    let r = p.run(&["run", "hello"]);
    r.assert_code(2);
    assert!(r.stderr.contains("no API key for provider `anthropic`: set ANTHROPIC_API_KEY"), "{}", r.stderr);

    p.write_config("llm:\n  api_key: $NO_SUCH_KEY_VAR\n");
    let r = p.run(&["run", "hello"]);
    r.assert_code(2);
    assert!(r.stderr.contains("llm.api_key: $NO_SUCH_KEY_VAR is not set"), "{}", r.stderr);
    p.write_config("");
    let r = p.run(&["run", "--provider", "openai", "x"]);
    r.assert_code(2);
    assert!(r.stderr.contains("--provider openai needs a model"), "{}", r.stderr);

    let fake = FakeLlm::start(vec![Reply::text("ok")]);
    let p = fixture_project(&fake, Api::Anthropic);
    for (args, needle) in [
        (&["run", "   "][..], "the task is empty"),
        (&["run", "--mode", "fast", "x"][..], "invalid value 'fast'"),
        (&["run", "--server", "fixtur", "x"][..], "unknown server `fixtur`; did you mean `fixture`?"),
        (&["run", "--max-turns", "0", "x"][..], "must be at least 1"),
        (&["run", "--max-tool-result", "lots", "x"][..], "--max-tool-result: invalid size"),
    ] {
        let r = p.run(args);
        r.assert_code(2);
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
    }
    assert!(fake.requests().is_empty());
}

#[test]
fn api_key_falls_back_to_the_environment() {
    let fake = FakeLlm::start(vec![Reply::text("ok")]);
    let p = Project::new();
    p.write_config(&fake.llm_yaml(Api::Anthropic).replace("  api_key: test-key\n", ""));
    let r = Run::from(p.cmd(&["run", "hi"]).env("ANTHROPIC_API_KEY", "env-key").output().unwrap());
    r.assert_ok();
    assert_eq!(fake.requests()[0].header("x-api-key"), Some("env-key"));
    // An unreachable provider is a network error (exit 1), reported with the URL.
    let r = Run::from(
        p.cmd(&["run", "--base-url", "http://127.0.0.1:9", "hi"]).env("AGENT_LLM__MAX_RETRIES", "0").output().unwrap(),
    );
    r.assert_code(1);
    assert!(r.stderr.contains("error: cannot reach http://127.0.0.1:9/v1/messages"), "{}", r.stderr);
}

#[test]
fn ctrl_c_stops_cleanly() {
    let tag = unique_tag("run-sigint");
    let fake = FakeLlm::start(vec![Reply::tool("mcp_fixture_echo", json!({"message": "hi"})), Reply::Hang]);
    let p = project(&fake, Api::Anthropic, &fixture_stdio_yaml("fixture", &["--tag", &tag]));
    let child = p
        .cmd(&["run", "wait for it"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while fake.requests().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(fake.requests().len(), 2, "the second model call never came");
    assert!(!pids_matching(&tag).is_empty(), "the fixture server should be running");
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(wait_until(Duration::from_secs(5), || pids_matching(&tag).is_empty()), "server left running after Ctrl-C");
}

// ---------------------------------------------------------------------------------------------
// Code mode

const CODE_TOOLS: [&str; 4] = ["code_execution", "list_files", "read_file", "grep_files"];

#[test]
fn code_mode_sends_no_mcp_tools_and_feeds_back_exactly_what_the_script_printed() {
    let script = r#"
import { add, echo } from "./servers/fixture/index.ts";
const [sum, said] = await Promise.all([add({ a: 3, b: 39 }), echo({ message: "hello" })]);
console.log(`3 + 39 = ${sum.sum}`);
console.log(said);
"#;
    let fake = FakeLlm::start(vec![
        Reply::tools(
            "Looking around.",
            &[
                ("list_files", json!({"path": "servers"})),
                ("read_file", json!({"path": "servers/fixture/index.ts"})),
                ("read_file", json!({"path": "logs/fixture.stderr.log"})),
                ("grep_files", json!({"pattern": "function add\\b", "path": "servers"})),
            ],
        ),
        Reply::tools("", &[("code_execution", json!({"code": script, "description": "add and echo"}))]),
        Reply::text("The sum is 42."),
    ]);
    let p = fixture_project(&fake, Api::Anthropic);
    let r = p.run(&["run", "--mode", "code", "What is 3 + 39? Also echo hello."]);
    r.assert_ok();
    assert!(r.stdout.ends_with("The sum is 42.\n"), "{}", r.stdout);
    assert!(r.stderr.contains("→ code_execution: add and echo"), "{}", r.stderr);
    assert!(r.stderr.contains(" 2 MCP calls"), "{}", r.stderr);

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    for req in &reqs {
        assert_eq!(req.tool_names(), CODE_TOOLS);
    }
    // No MCP tool definition travels in code mode: not even a fixture tool's description (until
    // the model reads the tree: the index file it read is in the later requests).
    assert!(!reqs[0].raw.contains("Echo the message back as text."));
    assert!(!reqs[0].raw.contains("\"mcp_fixture_"));
    let n_tools = listed_tools(&p).len();
    let system = reqs[0].system();
    assert!(system.contains(&format!("servers/fixture/ ({n_tools} tools)")), "{system}");
    let tree = std::fs::canonicalize(p.path().join(".kodelet/mcp")).unwrap();
    assert!(
        system.contains(&p.path().join(".kodelet/mcp").display().to_string())
            || system.contains(&tree.display().to_string()),
        "{system}"
    );
    assert!(tree.join("servers/fixture/add.ts").is_file(), "the tree was generated at start");

    let discovery = reqs[1].tool_results();
    assert_eq!(discovery[0], ("toolu_1_0".into(), "servers/fixture/".into(), false));
    assert!(
        discovery[1].1.contains("export { add, type AddInput, type AddOutput } from \"./add.ts\";"),
        "{discovery:?}"
    );
    assert!(discovery[2].2 && discovery[2].1.contains("not part of the API tree"), "{discovery:?}");
    assert!(discovery[3].1.starts_with("servers/fixture/add.ts:"), "{discovery:?}");

    // Exactly the printed output, nothing else.
    assert_eq!(reqs[2].tool_results(), vec![("toolu_2_0".to_string(), "3 + 39 = 42\nhello\n".to_string(), false)]);
}

#[test]
fn code_mode_script_errors_are_error_results_and_the_loop_continues() {
    let fake = FakeLlm::start(vec![
        Reply::tool(
            "code_execution",
            json!({"code": "console.log(\"before\");\nthrow new Error(\"boom in the script\");\n"}),
        ),
        Reply::tool("code_execution", json!({"code": "const x: number = ;\n"})),
        Reply::tool(
            "code_execution",
            json!({"code": r#"
import { fail } from "./servers/fixture/index.ts";
import { MCPToolError } from "./client.ts";
try { await fail({}); } catch (e) { if (e instanceof MCPToolError) console.log(`caught: ${e.message}`); else throw e; }
console.error("a warning");
export default { ok: true };
"#}),
        ),
        Reply::text("Recovered."),
    ]);
    let p = fixture_project(&fake, Api::OpenAi);
    let r = p.run(&["run", "--mode", "code", "--json", "try"]);
    r.assert_ok();
    let reqs = fake.requests();
    let (_, thrown, is_error) = reqs[1].tool_results().remove(0);
    assert!(is_error, "{thrown}");
    assert!(thrown.starts_with("[tool error]\nbefore\nerror: "), "{thrown}");
    assert!(thrown.contains("boom in the script"), "{thrown}");
    assert!(thrown.contains("main.ts:2"), "the stack points at the script's line: {thrown}");
    let (_, compile, is_error) = reqs[2].tool_results().remove(0);
    assert!(is_error && compile.contains("error: "), "{compile}");
    let (_, caught, is_error) = reqs[3].tool_results().remove(0);
    assert!(!is_error, "{caught}");
    assert_eq!(
        caught,
        "caught: fixture.fail failed: boom: this tool always fails\n[stderr]\na warning\n[default export] {\"ok\":true}"
    );
    let t = r.json();
    assert_eq!(t["mode"], "code");
    let last = &t["turns"][2]["tool_calls"][0];
    assert_eq!(last["detail"]["tool_calls"], 1);
    assert_eq!(last["detail"]["stdout"], "caught: fixture.fail failed: boom: this tool always fails\n");
    assert_eq!(t["mcp_calls"], 1);
    assert_eq!(t["tool_calls"], 3);
}

#[test]
fn code_mode_with_server_everything() {
    let fake = FakeLlm::start(vec![
        Reply::tool(
            "code_execution",
            json!({"code": "import { echo } from \"./servers/everything/index.ts\";\nconsole.log(await echo({ message: \"from code mode\" }));\n"}),
        ),
        Reply::text("done"),
    ]);
    let servers = format!("{}{}", everything_yaml("everything"), fixture_stdio_yaml("fixture", &[]));
    let p = project(&fake, Api::Anthropic, &servers);
    let r = p.run(&["run", "--mode", "code", "--no-stream", "echo via everything"]);
    r.assert_ok();
    let reqs = fake.requests();
    assert_eq!(reqs[0].tool_names(), CODE_TOOLS);
    let system = reqs[0].system();
    assert!(system.contains("servers/everything/") && system.contains("servers/fixture/"), "{system}");
    let (_, out, is_error) = reqs[1].tool_results().remove(0);
    assert!(!is_error, "{out}");
    assert!(out.contains("from code mode") && out.ends_with('\n'), "{out}");
}

#[test]
fn code_mode_without_a_tree_or_regeneration_is_a_usage_error() {
    let fake = FakeLlm::start(vec![Reply::text("unused")]);
    let p = Project::new();
    p.write_config(&format!(
        "{}mcp:\n  code_execution:\n    regenerate_on_startup: false\n  servers:\n{}",
        fake.llm_yaml(Api::Anthropic),
        fixture_stdio_yaml("fixture", &[])
    ));
    let r = p.run(&["run", "--mode", "code", "x"]);
    r.assert_code(2);
    assert!(r.stderr.contains("no generated API in") && r.stderr.contains("agent mcp generate"), "{}", r.stderr);
    assert!(fake.requests().is_empty());
    // With a tree from `agent mcp generate`, the run uses it without starting any server.
    p.run(&["mcp", "generate"]).assert_ok();
    let r = p.run(&["run", "--mode", "code", "x"]);
    r.assert_ok();
    assert!(fake.requests()[0].system().contains("servers/fixture/"));
}

/// The discovery tools over a tree full of links: to /etc/passwd, to the project directory (its
/// agent.yaml and the server logs), to an ancestor (a loop) and to the tree itself. Recursive
/// listings and searches show nothing from outside, do not loop, and the links that stay inside
/// still work.
#[test]
fn code_mode_discovery_walks_never_leave_the_tree() {
    let fake = FakeLlm::start(vec![
        Reply::tools(
            "Looking around.",
            &[
                ("list_files", json!({"recursive": true})),
                ("grep_files", json!({"pattern": "root"})),
                ("grep_files", json!({"pattern": "outside-sec?ret|mc?p:|secret tok?en", "max_results": 200})),
                ("grep_files", json!({"pattern": "export async function echo", "path": "servers"})),
                ("list_files", json!({"path": "servers/fixture/up", "recursive": true})),
                ("read_file", json!({"path": "pw.ts"})),
                ("read_file", json!({"path": "up/agent.yaml"})),
            ],
        ),
        Reply::text("done"),
    ]);
    let p = fixture_project(&fake, Api::Anthropic);
    p.run(&["mcp", "generate"]).assert_ok();
    p.write("notes.txt", "outside-secret\n");
    p.write(".kodelet/mcp/logs/fixture.stderr.log", "secret token in a log\n");
    let ws = p.path().join(".kodelet/mcp");
    let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, ws.join(at)).unwrap();
    link("/etc/passwd", "pw.ts");
    link("../..", "up");
    link("../../../..", "servers/fixture/up");
    link("..", "servers/loop");
    link(".", "servers/fixture/self");
    link("../logs", "servers/logs");
    link("fixture/echo.ts", "servers/alias.ts");
    let r = p.run(&["run", "--mode", "code", "look around"]);
    r.assert_ok();
    let results = fake.requests()[1].tool_results();
    assert_eq!(results.len(), 7, "{results:?}");
    // (The errors of the last three name the paths the model asked for, and nothing else.)
    for (id, text, _) in &results[..4] {
        for leak in ["root:x", "outside-secret", "secret token", "agent.yaml", "notes.txt", "pw.ts", "logs/", "mcp:"] {
            assert!(!text.contains(leak), "{id} leaked {leak:?}:\n{text}");
        }
    }
    let listing = &results[0].1;
    assert!(listing.contains("servers/fixture/echo.ts") && listing.contains("servers/alias.ts"), "{listing}");
    assert!(listing.lines().count() < 200, "{listing}");
    assert_eq!(results[1].1, "no match for `root`");
    assert_eq!(results[2].1, "no match for `outside-sec?ret|mc?p:|secret tok?en`");
    assert!(results[3].1.starts_with("servers/fixture/echo.ts:"), "{}", results[3].1);
    for (_, text, is_error) in &results[4..] {
        assert!(*is_error && text.contains("outside the API tree"), "{text}");
    }
}

#[test]
fn code_mode_ctrl_c_stops_the_script_servers_and_bridge() {
    let tag = unique_tag("code-sigint");
    let fake = FakeLlm::start(vec![Reply::tool(
        "code_execution",
        json!({"code": "import { sleep } from \"./servers/fixture/index.ts\";\nawait sleep({ ms: 60000 });\n"}),
    )]);
    let p = project(&fake, Api::Anthropic, &fixture_stdio_yaml("fixture", &["--tag", &tag]));
    let child = p
        .cmd(&["run", "--mode", "code", "sleep"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let bridge_dirs = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(std::env::temp_dir())
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&format!("agent-{pid}-")))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while (fake.requests().is_empty() || bridge_dirs().is_empty()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // The script's tool call is in flight once the server has logged it.
    let in_flight = wait_until(Duration::from_secs(30), || p.server_logged("fixture", "sleep 60000 ms started"));
    assert!(in_flight, "the script's call never reached the server");
    assert!(!bridge_dirs().is_empty(), "the bridge socket should exist while the run is going");
    assert!(!pids_matching(&tag).is_empty(), "the fixture server should be running");
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(15), "Ctrl-C took {:?}", started.elapsed());
    assert!(bridge_dirs().is_empty(), "bridge socket left behind: {:?}", bridge_dirs());
    assert!(wait_until(Duration::from_secs(5), || pids_matching(&tag).is_empty()), "server left running after Ctrl-C");
}

/// A server's own `mode: direct` in a code-mode run: its tools are LLM tools next to
/// `code_execution`, whose tree and prompt cover only the other server; a direct call and a
/// script both work in one turn.
#[test]
fn a_servers_own_mode_mixes_direct_tools_into_a_code_mode_run() {
    let script = "import { add } from \"./servers/calc/index.ts\";\nconsole.log((await add({ a: 1, b: 2 })).sum);\n";
    let fake = FakeLlm::start(vec![
        Reply::tools("", &[("mcp_fixture_add", json!({"a": 40, "b": 2})), ("code_execution", json!({"code": script}))]),
        Reply::text("42 and 3"),
    ]);
    let direct = fixture_stdio_yaml("fixture", &[])
        .replace("      connect_timeout", "      mode: direct\n      connect_timeout");
    let p = project(&fake, Api::Anthropic, &format!("{direct}{}", fixture_stdio_yaml("calc", &[])));
    let r = p.run(&["run", "--mode", "code", "--json", "add twice"]);
    r.assert_ok();
    let t = r.json();
    assert_eq!(t["mode"], "mixed");
    let by: Vec<(&str, &str, &str)> = t["modes"]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["server"].as_str().unwrap(), c["mode"].as_str().unwrap(), c["by"].as_str().unwrap()))
        .collect();
    assert_eq!(by, [("calc", "code", "run"), ("fixture", "direct", "server")]);
    assert!(r.stderr.contains("server fixture: direct (12 tools, "), "{}", r.stderr);
    assert!(r.stderr.contains("; mcp.servers.fixture.mode)"), "{}", r.stderr);

    let reqs = fake.requests();
    let names = reqs[0].tool_names();
    assert_eq!(names.len(), 12 + CODE_TOOLS.len(), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("mcp_fixture_") || CODE_TOOLS.contains(&n.as_str())), "{names:?}");
    let system = reqs[0].system();
    assert!(system.contains("servers/calc/") && !system.contains("servers/fixture/"), "{system}");
    assert_eq!(
        reqs[1].tool_results(),
        vec![
            ("toolu_1_0".to_string(), "{\"sum\":42}".to_string(), false),
            ("toolu_1_1".to_string(), "3\n".to_string(), false)
        ]
    );
    // Only the code-mode server is in the tree the run generated.
    assert!(p.path().join(".kodelet/mcp/servers/calc/index.ts").exists());
    assert!(!p.path().join(".kodelet/mcp/servers/fixture").exists());
}

/// In progressive mode a server's own `mode` is not used, and the run says so.
#[test]
fn progressive_mode_says_a_servers_own_mode_is_not_used() {
    let fake = FakeLlm::start(vec![Reply::text("nothing to do")]);
    let keyed = fixture_stdio_yaml("fixture", &[])
        .replace("      connect_timeout", "      mode: direct\n      connect_timeout");
    let p = project(&fake, Api::Anthropic, &keyed);
    let r = p.run(&["run", "--mode", "progressive", "--json", "x"]);
    r.assert_ok();
    assert!(r.stderr.contains("mcp.servers.fixture.mode is not used in progressive mode"), "{}", r.stderr);
    assert_eq!(r.json()["mode"], "progressive");
    assert!(!fake.requests()[0].tool_names().iter().any(|n| n.starts_with("mcp_fixture_")));
}

// ---------------------------------------------------------------------------------------------
// agent mcp list --tokens

#[test]
fn list_tokens_compares_direct_code_and_progressive_mode() {
    let servers = format!("{}{}", everything_yaml("everything"), fixture_stdio_yaml("fixture", &[]));
    let p = Project::with_servers(&servers);
    let r = p.run(&["mcp", "list", "--tokens", "--json"]);
    r.assert_ok();
    let est = r.json();
    assert_eq!(est["tokenizer"], "o200k_base");
    let per: Vec<&Value> = est["servers"].as_array().unwrap().iter().collect();
    assert_eq!(per.iter().map(|s| s["server"].as_str().unwrap()).collect::<Vec<_>>(), ["everything", "fixture"]);
    let listed = listed_tools(&p);
    for s in &per {
        let n = listed.iter().filter(|t| t["server"] == s["server"]).count();
        assert_eq!(s["tools"].as_u64(), Some(n as u64));
        assert!(s["code"].as_u64().unwrap() < s["direct"].as_u64().unwrap() / 10, "{s}");
    }
    let direct_sum: u64 = per.iter().map(|s| s["direct"].as_u64().unwrap()).sum();
    let total = est["direct_total"].as_u64().unwrap();
    // Each per-server array carries its own brackets and cache breakpoint: a few tokens each.
    assert!(direct_sum.abs_diff(total) <= 10 * per.len() as u64, "{direct_sum} vs {total}");
    let code_sum: u64 =
        per.iter().map(|s| s["code"].as_u64().unwrap()).sum::<u64>() + est["code_fixed"].as_u64().unwrap();
    assert_eq!(code_sum, est["code_total"].as_u64().unwrap());

    let r = p.run(&["mcp", "list", "--tokens"]);
    r.assert_ok();
    let total_line = r.stdout.lines().find(|l| l.starts_with("total")).unwrap();
    let cols: Vec<&str> = total_line.split_whitespace().collect();
    assert_eq!(cols[1], listed.len().to_string());
    assert_eq!(cols[2].replace(',', ""), total.to_string());
    assert!(r.stdout.contains("tool-definition tokens per request"), "{}", r.stdout);
    // The third mode: a fixed cost, no per-server share without pins.
    let header = r.stdout.lines().find(|l| l.starts_with("server")).unwrap();
    assert!(header.ends_with("progressive  run mode"), "{header}");
    let progressive = est["progressive_total"].as_u64().unwrap();
    assert_eq!(cols[4].replace(',', ""), progressive.to_string());
    assert!(progressive > 0 && progressive < total / 5, "{progressive} vs {total}");
    assert!(per.iter().all(|s| s["progressive"] == 0), "{est}");
    assert!(r.stdout.contains("progressive mode "), "{}", r.stdout);

    // A pinned tool is that server's progressive share, as its direct definition.
    p.write_config(&format!("mcp:\n  pinned_tools: [fixture.add]\n  servers:\n{servers}"));
    let pinned = p.run(&["mcp", "list", "--tokens", "--json", "--server", "fixture"]);
    pinned.assert_ok();
    let pinned = pinned.json();
    let share = pinned["servers"][0]["progressive"].as_u64().unwrap();
    assert!(share > 0, "{pinned}");
    assert_eq!(share + pinned["progressive_fixed"].as_u64().unwrap(), pinned["progressive_total"].as_u64().unwrap());
}

#[test]
fn an_endless_task_on_stdin_is_capped() {
    let fake = FakeLlm::start(vec![]);
    let p = fixture_project(&fake, Api::Anthropic);
    let r = p.run_stdin_from(&["run", "-"], "/dev/zero");
    r.assert_code(2);
    assert!(r.stderr.contains("the task on stdin is larger than 16.0 MB"), "{}", r.stderr);
    assert!(fake.requests().is_empty());
}

#[test]
fn code_mode_offers_search_first_and_scripts_can_search_and_describe() {
    let script = r#"
const hits = await searchTools("add two integers", { limit: 2 });
console.log(hits.map((h) => `${h.server}.${h.tool}`).join(" "));
console.log((await describeTool(`${hits[0].server}.${hits[0].tool}`)).split("\n")[0]);
"#;
    let fake = FakeLlm::start(vec![
        Reply::tools("", &[("code_execution", json!({"code": script, "description": "find a tool"}))]),
        Reply::text("fixture.add adds."),
    ]);
    let p = fixture_project(&fake, Api::Anthropic);
    let r = p.run(&["run", "--mode", "code", "Which tool adds numbers?"]);
    r.assert_ok();
    let reqs = fake.requests();
    let system = reqs[0].system();
    assert!(system.contains("To find tools, search first"), "{system}");
    assert!(reqs[0].raw.contains("searchTools(query, { limit })"), "the code_execution description names it");
    let results = reqs[1].tool_results();
    assert_eq!(results.len(), 1);
    let (_, text, is_error) = &results[0];
    assert!(!is_error, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("fixture.add"), "{text}");
    assert_eq!(lines[1], "// import { add } from \"./servers/fixture/index.ts\";  (file servers/fixture/add.ts)");
}

// ---------------------------------------------------------------------------------------------
// Progressive mode

#[test]
fn progressive_mode_searches_then_calls_a_found_tool() {
    let fake = FakeLlm::start(vec![
        Reply::tool("search_tools", json!({"query": "add two numbers", "limit": 3})),
        Reply::tool("call_tool", json!({"name": "fixture.add", "arguments": {"a": 2, "b": 40}})),
        Reply::text("2 + 40 = 42"),
    ]);
    let p = fixture_project(&fake, Api::Anthropic);
    let r = p.run(&["run", "--mode", "progressive", "What is 2 + 40?"]);
    r.assert_ok();
    assert!(r.stdout.ends_with("2 + 40 = 42\n"), "{}", r.stdout);
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    for req in &reqs {
        assert_eq!(req.tool_names(), ["search_tools", "call_tool"]);
    }
    // No MCP tool definition travels: not even a description.
    assert!(!reqs[0].raw.contains("Echo the message back as text."));
    let n_tools = listed_tools(&p).len();
    assert!(reqs[0].system().contains(&format!("servers: fixture; {n_tools} tools")), "{}", reqs[0].system());
    let found = &reqs[1].tool_results()[0];
    assert!(!found.2, "{found:?}");
    let first = found.1.lines().next().unwrap();
    assert_eq!(first, "fixture.add(a: integer, b: integer) - Add two integers; returns {sum}.");
    assert!(found.1.lines().count() <= 3, "{found:?}");
    let called = &reqs[2].tool_results()[0];
    assert_eq!((called.1.as_str(), called.2), ("{\"sum\":42}", false));
    assert!(r.stderr.contains("→ call_tool"), "{}", r.stderr);
}

#[test]
fn progressive_mode_explains_bad_names_and_arguments_and_keeps_pinned_tools_direct() {
    let fake = FakeLlm::start(vec![
        Reply::tools(
            "",
            &[
                ("call_tool", json!({"name": "fixture.ad", "arguments": {}})),
                ("call_tool", json!({"name": "fixture.add", "arguments": {"a": "two"}})),
                ("call_tool", json!({"name": "fixtur.add"})),
                ("call_tool", json!({"name": "add"})),
                ("call_tool", json!({"name": "fixture.echo", "arguments": "{\"message\": \"as text\"}"})),
                ("search_tools", json!({"query": "the"})),
                ("mcp_fixture_echo", json!({"message": "pinned"})),
            ],
        ),
        Reply::text("done"),
    ]);
    let p = project(&fake, Api::OpenAi, &fixture_stdio_yaml("fixture", &[]));
    std::fs::write(
        p.path().join("agent.yaml"),
        format!(
            "{}mcp:\n  pinned_tools: [fixture.echo, fixture.ech]\n  servers:\n{}",
            fake.llm_yaml(Api::OpenAi),
            fixture_stdio_yaml("fixture", &[])
        ),
    )
    .unwrap();
    let r = p.run(&["run", "--mode", "progressive", "try things"]);
    r.assert_ok();
    assert!(
        r.stderr.contains("warning: mcp.pinned_tools: no tool `fixture.ech` among the started servers; did you mean"),
        "{}",
        r.stderr
    );
    let reqs = fake.requests();
    assert_eq!(reqs[0].tool_names(), ["search_tools", "call_tool", "mcp_fixture_echo"]);
    assert!(reqs[0].system().contains("directly: mcp_fixture_echo"), "{}", reqs[0].system());
    let results = reqs[1].tool_results();
    assert_eq!(results.len(), 7);
    let (unknown, invalid, server, bare, text_args, no_words, pinned) =
        (&results[0], &results[1], &results[2], &results[3], &results[4], &results[5], &results[6]);
    assert!(unknown.2 && unknown.1.contains("unknown tool `fixture.ad`; did you mean `fixture.add`"), "{unknown:?}");
    assert!(unknown.1.contains("search_tools finds tools"), "{unknown:?}");
    assert!(invalid.2 && invalid.1.contains("invalid arguments for `fixture.add`:"), "{invalid:?}");
    assert!(invalid.1.contains("input schema of `fixture.add`: {"), "{invalid:?}");
    assert!(server.2 && server.1.contains("unknown server `fixtur`; did you mean `fixture`"), "{server:?}");
    assert!(bare.2 && bare.1.contains("expected `server.tool`"), "{bare:?}");
    assert_eq!((text_args.1.as_str(), text_args.2), ("as text", false));
    assert!(no_words.2 && no_words.1.contains("no words to search for"), "{no_words:?}");
    assert_eq!((pinned.1.as_str(), pinned.2), ("pinned", false));
}

// ---------------------------------------------------------------------------------------------
// Resources and prompts in the task

/// The first user message the scripted LLM received.
fn first_message(fake: &FakeLlm) -> String {
    fake.requests()[0].body["messages"][0]["content"][0]["text"].as_str().unwrap_or_default().to_string()
}

#[test]
fn an_at_token_attaches_the_resource_text_after_the_task() {
    if !support::node_or_skip("server-everything offers resources") {
        return;
    }
    let fake = FakeLlm::start(vec![Reply::text("summarised")]);
    let p = project(&fake, Api::Anthropic, &everything_yaml("everything"));
    let doc = "demo://resource/static/document/architecture.md";
    let text = p.run(&["mcp", "read", "everything", doc, "--json"]).json()["contents"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let r = p.run(&["run", &format!("Summarise @everything:{doc}.")]);
    r.assert_ok();
    let nl = if text.ends_with('\n') { "" } else { "\n" };
    assert_eq!(
        first_message(&fake),
        format!(
            "Summarise @everything:{doc}.\n\n--- resource `everything:{doc}` ---\n{text}{nl}--- end of resource `everything:{doc}` ---"
        )
    );
}

#[test]
fn unknown_binary_and_oversized_attachments_stop_the_run_before_the_model_is_called() {
    if !support::node_or_skip("server-everything offers resources") {
        return;
    }
    let fake = FakeLlm::start(vec![Reply::text("never")]);
    let p = project(&fake, Api::Anthropic, &everything_yaml("everything"));
    let doc = "demo://resource/static/document/architecture.md";
    for (task, says) in [
        (format!("read @everything:{doc}x"), format!("did you mean `{doc}`")),
        (format!("read @everythin:{doc}"), "did you mean `everything`".to_string()),
        (
            "read @everything:demo://resource/dynamic/blob/1".to_string(),
            "cannot attach @everything:demo://resource/dynamic/blob/1: it is binary (text/plain, ".to_string(),
        ),
    ] {
        let r = p.run(&["run", &task]);
        r.assert_code(2);
        assert!(r.stderr.contains(&says), "{task}: {}", r.stderr);
    }
    assert_eq!(fake.requests().len(), 0);

    // A resource over mcp.max_result_bytes (a hostile server's 100 KB text at a 64 KB cap).
    let p = Project::new();
    let Some(hostile) = crate::resources::hostile_server_yaml(&p, &[]) else { return };
    p.write_config(&format!("{}mcp:\n  max_result_bytes: 65536\n  servers:\n{hostile}", fake.llm_yaml(Api::Anthropic)));
    let r = p.run(&["run", "look at @hostile:hostile://big"]);
    r.assert_code(2);
    assert!(
        r.stderr.contains("cannot attach @hostile:hostile://big: ")
            && r.stderr.contains("larger than the 64 KiB limit (mcp.max_result_bytes)"),
        "{}",
        r.stderr
    );
    assert_eq!(fake.requests().len(), 0);
}

#[test]
fn a_run_starts_from_a_servers_prompt() {
    if !support::node_or_skip("server-everything offers prompts") {
        return;
    }
    let fake = FakeLlm::start(vec![Reply::text("sunny"), Reply::text("analysed")]);
    let p = project(&fake, Api::Anthropic, &everything_yaml("everything"));
    let r = p.run(&["run", "--prompt", "everything.args-prompt", "--args", r#"{"city": "Oslo"}"#]);
    r.assert_ok();
    assert_eq!(first_message(&fake), "What's weather in Oslo?");
    // Two messages with an embedded text resource, then the typed task after them.
    let r = p.run(&[
        "run",
        "--prompt",
        "everything.resource-prompt",
        "--args",
        r#"{"resourceType": "Text", "resourceId": "3"}"#,
        "Be brief.",
    ]);
    r.assert_ok();
    let task = fake.requests()[1].body["messages"][0]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(task.starts_with("[user]\nThis prompt includes the Text resource with id: 3."), "{task}");
    assert!(task.contains("\n\n[user]\n--- resource `demo://resource/dynamic/text/3` ---\nResource 3: "), "{task}");
    assert!(task.ends_with("--- end of resource `demo://resource/dynamic/text/3` ---\n\nBe brief."), "{task}");

    let r = p.run(&["run", "--prompt", "everything.args-prompt"]);
    r.assert_code(2);
    assert!(r.stderr.contains("missing required argument `city`"), "{}", r.stderr);
    assert_eq!(fake.requests().len(), 2);
}

#[test]
fn a_servers_prompt_cannot_make_agent_attach_resources() {
    let fake = FakeLlm::start(vec![Reply::text("ok")]);
    let p = Project::new();
    let Some(hostile) = crate::resources::hostile_server_yaml(&p, &[]) else { return };
    p.write_config(&format!("{}mcp:\n  servers:\n{hostile}", fake.llm_yaml(Api::Anthropic)));
    // The prompt's text names `@hostile:hostile://doc`: it stays text, nothing is read for it.
    let r = p.run(&["run", "--prompt", "hostile.plain"]);
    r.assert_ok();
    assert_eq!(
        first_message(&fake),
        "[user]\nRead @hostile:hostile://doc now.\n\n[assistant]\nWhich part?\n\n[user]\nAll of it."
    );
    // A prompt with an image cannot be a task's text.
    let r = p.run(&["run", "--prompt", "hostile.greet", "--args", r#"{"who": "x"}"#]);
    r.assert_code(2);
    assert!(r.stderr.contains("prompt `hostile.greet` has a message with [image: image/png, 256 B]"), "{}", r.stderr);
    assert_eq!(fake.requests().len(), 1);
}
