//! `--oauth`: the fixture's HTTP endpoint as a protected resource with its own authorization
//! server on the same origin, for the sign-in tests: protected resource metadata, authorization
//! server metadata (issuer = the origin, `authorization_response_iss_parameter_supported`),
//! dynamic registration, an authorization endpoint that redirects at once (no person), and a
//! token endpoint for the authorization code, refresh token and client credentials grants (the
//! machine client `machine` / `machine-secret`). Refresh tokens are single
//! use (rotated): a refresh with a used one is `invalid_grant`, as strict servers do, so two
//! clients racing with one refresh token see one of them fail. Access tokens live
//! `--token-ttl` seconds (3600 by default) on both sides. `POST /admin/revoke` forgets every
//! access token (the server restarted, say), so the next request is a `401` with a token.
//! `--as-path /as2` names another issuer (the origin plus that path): the server moved to another
//! authorization server. `--refresh-delay MS` slows refresh grants down (racing clients then overlap).
//! `--oauth-log FILE` gets one line per event: `issued ACCESS REFRESH`, `refresh-grant`,
//! `refresh-rejected`, `code-grant`, `register`, `client-credentials-grant`, `mcp-401` (no token) or `mcp-401-with-token` (the tests read
//! token values and counts there).

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{Request, Response, StatusCode};

type Body = BoxBody<Bytes, Infallible>;

/// `--oauth` settings.
#[derive(Clone, Debug)]
pub struct Options {
    pub token_ttl: Duration,
    pub log: Option<String>,
    /// How long a refresh takes (`--refresh-delay MS`), so racing clients overlap.
    pub refresh_delay: Duration,
    /// `--as-path /as2`: the authorization server's issuer is the origin plus this path (a
    /// server that moved to another authorization server).
    pub as_path: String,
}

#[derive(Default)]
struct State {
    codes: HashSet<String>,
    access: HashMap<String, Instant>,
    refresh: HashSet<String>,
    next: u64,
}

/// The authorization server and the bearer check in front of `/mcp`.
#[derive(Clone)]
pub struct Guard {
    origin: String,
    options: Options,
    state: Arc<Mutex<State>>,
}

fn text(status: StatusCode, body: String, content_type: &str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)).boxed())
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed()))
}

fn json(status: StatusCode, value: serde_json::Value) -> Response<Body> {
    text(status, value.to_string(), "application/json")
}

fn form(body: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

impl Guard {
    pub fn new(origin: String, options: Options) -> Guard {
        Guard { origin, options, state: Default::default() }
    }

    fn issuer(&self) -> String {
        format!("{}{}", self.origin, self.options.as_path)
    }

    fn log(&self, line: &str) {
        if let Some(path) = &self.options.log
            && let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }

    fn fresh(&self, state: &mut State, prefix: &str) -> String {
        state.next += 1;
        format!("{prefix}-{}-{:016x}", state.next, rand::random::<u64>())
    }

    /// A new token pair, remembered and logged.
    fn issue(&self, state: &mut State) -> serde_json::Value {
        let access = self.fresh(state, "at");
        let refresh = self.fresh(state, "rt");
        state.access.insert(access.clone(), Instant::now() + self.options.token_ttl);
        state.refresh.insert(refresh.clone());
        self.log(&format!("issued {access} {refresh}"));
        serde_json::json!({
            "access_token": access, "token_type": "Bearer", "refresh_token": refresh,
            "expires_in": self.options.token_ttl.as_secs(), "scope": "tools",
        })
    }

    /// Answers the OAuth endpoints; `None` for a request to pass on to the MCP service (with a
    /// valid token) or to refuse with a `401` (see [`Guard::refusal`]).
    pub async fn route(
        &self,
        req: Request<hyper::body::Incoming>,
    ) -> Result<Response<Body>, Request<hyper::body::Incoming>> {
        let origin = &self.origin;
        let path = req.uri().path().to_string();
        match (req.method().as_str(), path.as_str()) {
            ("GET", "/.well-known/oauth-protected-resource/mcp" | "/.well-known/oauth-protected-resource") => Ok(json(
                StatusCode::OK,
                serde_json::json!({
                    "resource": format!("{origin}/mcp"), "authorization_servers": [self.issuer()], "scopes_supported": ["tools"],
                }),
            )),
            ("GET", p) if p == format!("/.well-known/oauth-authorization-server{}", self.options.as_path) => Ok(json(
                StatusCode::OK,
                serde_json::json!({
                    "issuer": self.issuer(),
                    "authorization_endpoint": format!("{origin}/authorize"),
                    "token_endpoint": format!("{origin}/token"),
                    "registration_endpoint": format!("{origin}/register"),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
                    "authorization_response_iss_parameter_supported": true,
                    "scopes_supported": ["tools"],
                }),
            )),
            ("POST", "/register") => {
                self.log("register");
                let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                let asked: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let id = {
                    let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
                    self.fresh(&mut s, "client")
                };
                Ok(json(
                    StatusCode::CREATED,
                    serde_json::json!({
                        "client_id": id, "redirect_uris": asked["redirect_uris"], "token_endpoint_auth_method": "none",
                    }),
                ))
            }
            ("GET", "/authorize") => {
                let query = form(req.uri().query().unwrap_or("").as_bytes());
                let Some(redirect) = query.get("redirect_uri") else {
                    return Ok(text(StatusCode::BAD_REQUEST, "no redirect_uri".into(), "text/plain"));
                };
                let code = {
                    let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
                    let c = self.fresh(&mut s, "code");
                    s.codes.insert(c.clone());
                    c
                };
                let mut to = match url::Url::parse(redirect) {
                    Ok(u) => u,
                    Err(_) => return Ok(text(StatusCode::BAD_REQUEST, "bad redirect_uri".into(), "text/plain")),
                };
                to.query_pairs_mut()
                    .append_pair("code", &code)
                    .append_pair("state", query.get("state").map(String::as_str).unwrap_or(""))
                    .append_pair("iss", &self.issuer());
                Ok(Response::builder()
                    .status(StatusCode::FOUND)
                    .header("location", to.as_str())
                    .body(Full::new(Bytes::new()).boxed())
                    .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed())))
            }
            ("POST", "/token") => {
                let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                let params = form(&body);
                if params.get("grant_type").is_some_and(|g| g == "refresh_token") {
                    tokio::time::sleep(self.options.refresh_delay).await;
                }
                let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
                let refused = || json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_grant"}));
                match params.get("grant_type").map(String::as_str) {
                    Some("authorization_code") => {
                        let code = params.get("code").cloned().unwrap_or_default();
                        if !s.codes.remove(&code) {
                            return Ok(refused());
                        }
                        self.log("code-grant");
                        Ok(json(StatusCode::OK, self.issue(&mut s)))
                    }
                    Some("refresh_token") => {
                        let token = params.get("refresh_token").cloned().unwrap_or_default();
                        if !s.refresh.remove(&token) {
                            self.log("refresh-rejected");
                            return Ok(refused());
                        }
                        self.log("refresh-grant");
                        Ok(json(StatusCode::OK, self.issue(&mut s)))
                    }
                    // The machine client `machine` with the secret `machine-secret`: an access
                    // token only (no refresh token), as client credentials grants go.
                    Some("client_credentials") => {
                        let known = params.get("client_id").is_some_and(|c| c == "machine")
                            && params.get("client_secret").is_some_and(|c| c == "machine-secret");
                        if !known {
                            return Ok(json(StatusCode::UNAUTHORIZED, serde_json::json!({"error": "invalid_client"})));
                        }
                        self.log("client-credentials-grant");
                        let access = self.fresh(&mut s, "at");
                        s.access.insert(access.clone(), Instant::now() + self.options.token_ttl);
                        self.log(&format!("issued {access}"));
                        Ok(json(
                            StatusCode::OK,
                            serde_json::json!({
                                "access_token": access, "token_type": "Bearer", "expires_in": self.options.token_ttl.as_secs(),
                            }),
                        ))
                    }
                    _ => Ok(json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "unsupported_grant_type"}))),
                }
            }
            ("POST", "/admin/revoke") => {
                self.state.lock().unwrap_or_else(|e| e.into_inner()).access.clear();
                Ok(text(StatusCode::OK, "revoked\n".into(), "text/plain"))
            }
            _ => Err(req),
        }
    }

    /// The `401` to answer when `req` carries no live access token (`None`: it does).
    pub fn refusal<B>(&self, req: &Request<B>) -> Option<Response<Body>> {
        let token = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        let live = {
            let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.access.get(token).is_some_and(|until| Instant::now() < *until)
        };
        if live {
            return None;
        }
        self.log(if token.is_empty() { "mcp-401" } else { "mcp-401-with-token" });
        let challenge = format!(
            "Bearer error=\"invalid_token\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            self.origin
        );
        let mut answer = json(StatusCode::UNAUTHORIZED, serde_json::json!({"error": "invalid_token"}));
        if let Ok(v) = hyper::header::HeaderValue::from_str(&challenge) {
            answer.headers_mut().insert("www-authenticate", v);
        }
        Some(answer)
    }
}
