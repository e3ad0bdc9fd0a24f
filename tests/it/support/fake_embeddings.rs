//! A fake OpenAI-compatible `/v1/embeddings` endpoint for the search tests: deterministic
//! vectors in which a few groups of synonyms share a dimension (`plus`, `sum`, `add`, ...), so a
//! query can find a tool by meaning where no word matches. Records every text it embedded;
//! `failing` answers HTTP 500 to everything. [`Hostile`] endpoints answer with an endless body,
//! vectors of a huge dimension, or never.

#![allow(dead_code)]

use super::fake_http;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use serde_json::{Value, json};

/// How a hostile endpoint answers every request.
#[derive(Debug, Clone, Copy)]
pub enum Hostile {
    /// A well-formed start of an answer, then numbers for this many bytes (chunked, no length).
    Body(u64),
    /// Vectors with this many dimensions.
    Dims(usize),
    /// Never answers.
    Silent,
}

/// Words that share a dimension.
const CONCEPTS: &[&[&str]] = &[
    &["add", "plus", "sum", "total", "addition"],
    &["echo", "repeat", "parrot"],
    &["upper", "uppercase", "capital", "capitals", "shout"],
    &["sleep", "wait", "pause", "nap"],
];
const DIMS: usize = 64;

/// The fake's vector of `text`.
pub fn vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIMS];
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let w = w.to_lowercase();
        let dim = match CONCEPTS.iter().position(|group| group.contains(&w.as_str())) {
            Some(i) => i,
            None => {
                CONCEPTS.len()
                    + (w.bytes().fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32)) as usize)
                        % (DIMS - CONCEPTS.len())
            }
        };
        v[dim] += 1.0;
    }
    v
}

#[derive(Default)]
struct State {
    /// Every text embedded, in order.
    texts: Vec<String>,
    requests: usize,
    failing: bool,
    /// The last `Authorization` header.
    auth: Option<String>,
    hostile: Option<Hostile>,
}

pub struct FakeEmbeddings {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    _server: fake_http::HttpServer,
}

impl FakeEmbeddings {
    pub fn start(failing: bool) -> FakeEmbeddings {
        Self::start_state(State { failing, ..Default::default() })
    }

    pub fn hostile(how: Hostile) -> FakeEmbeddings {
        Self::start_state(State { hostile: Some(how), ..Default::default() })
    }

    fn start_state(state: State) -> FakeEmbeddings {
        let state = Arc::new(Mutex::new(state));
        let st = state.clone();
        let server = fake_http::HttpServer::start(move |req| handle(req, st.clone()));
        FakeEmbeddings { addr: server.addr, state, _server: server }
    }

    /// The API base, as `search.embeddings.url` takes it.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// A `search:` config section pointing at this fake.
    pub fn search_yaml(&self) -> String {
        format!(
            "search:\n  embeddings:\n    url: {}\n    model: fake-embed\n    api_key_env: FAKE_EMBED_KEY\n",
            self.url()
        )
    }

    pub fn texts(&self) -> Vec<String> {
        self.state.lock().unwrap().texts.clone()
    }

    pub fn auth(&self) -> Option<String> {
        self.state.lock().unwrap().auth.clone()
    }

    pub fn requests(&self) -> usize {
        self.state.lock().unwrap().requests
    }
}

type Body = BoxBody<Bytes, Infallible>;

async fn handle(req: Request<Incoming>, state: Arc<Mutex<State>>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).map(String::from);
    let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let reply = |status: u16, v: Value| {
        let mut r = Response::new(Full::new(Bytes::from(v.to_string())).boxed());
        *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
        Ok(r)
    };
    let hostile = {
        let mut st = state.lock().unwrap();
        st.requests += 1;
        st.auth = auth.clone();
        st.hostile
    };
    match hostile {
        Some(Hostile::Silent) => {
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
            return reply(500, json!({}));
        }
        Some(Hostile::Body(bytes)) => return Ok(Response::new(endless_numbers(bytes))),
        Some(Hostile::Dims(n)) => {
            let inputs = serde_json::from_slice::<Value>(&body).ok().and_then(|v| v["input"].as_array().map(Vec::len));
            let mut v = vec![0f32; n];
            v[0] = 1.0;
            let data: Vec<Value> = (0..inputs.unwrap_or(1)).map(|i| json!({"index": i, "embedding": v})).collect();
            return reply(200, json!({"data": data}));
        }
        None => {}
    }
    let mut st = state.lock().unwrap();
    if st.failing {
        return reply(500, json!({"error": {"message": "the model is not loaded"}}));
    }
    if path != "/v1/embeddings" {
        return reply(404, json!({"error": {"message": format!("no route {path}")}}));
    }
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let inputs: Vec<String> = match &parsed["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().filter_map(|v| v.as_str().map(String::from)).collect(),
        _ => return reply(400, json!({"error": {"message": "input must be a string or an array of strings"}})),
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev() // out of order on purpose: clients must use `index`
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": vector(t)}))
        .collect();
    st.texts.extend(inputs);
    reply(200, json!({"object": "list", "model": parsed["model"], "data": data}))
}

/// `{"data":[{"embedding":[0,0,0,...` for `bytes` bytes, made as it is sent (1 MiB chunks).
fn endless_numbers(bytes: u64) -> Body {
    let chunk = Bytes::from("0,".repeat(1 << 19));
    let head = Bytes::from_static(b"{\"object\":\"list\",\"data\":[{\"index\":0,\"embedding\":[");
    let chunks = (bytes / chunk.len() as u64) as usize;
    let frames = futures::stream::iter(std::iter::once(head).chain(std::iter::repeat_n(chunk, chunks)))
        .map(|b| Ok::<_, Infallible>(Frame::data(b)));
    BodyExt::boxed(StreamBody::new(frames))
}
