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
//! `--stingy` grants `tools` only, whatever is asked. `--call-scope S` makes `tools/call` need scope S as well (`403 insufficient_scope` without it;
//! `authorize SCOPE` and `mcp-403` are logged). `--as-path /as2` names another issuer (the origin plus that path): the server moved to another
//! authorization server. `--refresh-delay MS` slows refresh grants down (racing clients then overlap).
//! `--oauth-log FILE` gets one line per event: `issued ACCESS REFRESH`, `refresh-grant`,
//! `refresh-rejected`, `code-grant`, `register`, `client-credentials-grant`, `mcp-401` (no token) or `mcp-401-with-token` (the tests read
//! token values and counts there).

use std::collections::HashMap;
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
    /// `--call-scope admin`: `tools/call` needs this scope too (a `403 insufficient_scope`
    /// without it, asking for `tools admin`).
    pub call_scope: Option<String>,
    /// `--stingy`: every token grants `tools` only, whatever was asked.
    pub stingy: bool,
}

#[derive(Default)]
struct State {
    /// Codes and refresh tokens with the scope they grant; access tokens with their end too.
    codes: HashMap<String, String>,
    access: HashMap<String, (Instant, String)>,
    refresh: HashMap<String, String>,
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

    /// A new token pair for `scope`, remembered and logged.
    fn issue(&self, state: &mut State, scope: &str) -> serde_json::Value {
        let access = self.fresh(state, "at");
        let refresh = self.fresh(state, "rt");
        state.access.insert(access.clone(), (Instant::now() + self.options.token_ttl, scope.to_string()));
        state.refresh.insert(refresh.clone(), scope.to_string());
        self.log(&format!("issued {access} {refresh}"));
        serde_json::json!({
            "access_token": access, "token_type": "Bearer", "refresh_token": refresh,
            "expires_in": self.options.token_ttl.as_secs(), "scope": scope,
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
                    let scope = query.get("scope").cloned().unwrap_or_else(|| "tools".into());
                    self.log(&format!("authorize {scope}"));
                    s.codes.insert(c.clone(), if self.options.stingy { "tools".into() } else { scope });
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
                        let Some(scope) = s.codes.remove(&code) else { return Ok(refused()) };
                        self.log("code-grant");
                        Ok(json(StatusCode::OK, self.issue(&mut s, &scope)))
                    }
                    Some("refresh_token") => {
                        let token = params.get("refresh_token").cloned().unwrap_or_default();
                        let Some(scope) = s.refresh.remove(&token) else {
                            self.log("refresh-rejected");
                            return Ok(refused());
                        };
                        self.log("refresh-grant");
                        Ok(json(StatusCode::OK, self.issue(&mut s, &scope)))
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
                        s.access.insert(access.clone(), (Instant::now() + self.options.token_ttl, "tools".into()));
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

    /// The `401` to answer when `req` carries no live access token, or the `403
    /// insufficient_scope` when it is a `tools/call` (`method`) and `--call-scope` names a scope
    /// the token lacks (`None`: it may pass).
    pub fn refusal<B>(&self, req: &Request<B>, method: Option<&str>) -> Option<Response<Body>> {
        let token = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        let live = {
            let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.access.get(token).filter(|(until, _)| Instant::now() < *until).map(|(_, scope)| scope.clone())
        };
        if let Some(scope) = live {
            let needed = self.options.call_scope.as_deref().filter(|_| method == Some("tools/call"));
            match needed {
                Some(needed) if !scope.split(' ').any(|s| s == needed) => {
                    self.log("mcp-403");
                    let challenge = format!(
                        "Bearer error=\"insufficient_scope\", scope=\"tools {needed}\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
                        self.origin
                    );
                    let mut answer = json(StatusCode::FORBIDDEN, serde_json::json!({"error": "insufficient_scope"}));
                    if let Ok(v) = hyper::header::HeaderValue::from_str(&challenge) {
                        answer.headers_mut().insert("www-authenticate", v);
                    }
                    return Some(answer);
                }
                _ => return None,
            }
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
