//! `--oauth`: the demo's HTTP endpoint protected by a small OAuth 2.1 authorization server in
//! the same process, for sign-in tests on 127.0.0.1. It serves protected-resource metadata
//! (RFC 9728), authorization-server metadata (RFC 8414), dynamic client registration, an
//! authorization endpoint that approves at once and redirects back with a code (no browser
//! needed), and a token endpoint (authorization code with PKCE S256, refresh tokens that rotate).
//! `/mcp` needs a valid bearer token; without one it answers 401 with a `WWW-Authenticate`
//! challenge naming the metadata.
//!
//! Test controls (POST, loopback only like the rest): `/admin/expire` (every access token
//! expires now), `/admin/revoke` (every token and refresh token is revoked), `/admin/down` and
//! `/admin/up` (the token endpoint answers 503 or works), and GET `/admin/stats`
//! (`{"authorization_codes": n, "refreshes": n, "rejected": n}`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::HeaderValue;
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};
use sha2::Digest as _;

/// The response body rmcp's HTTP service uses; ours match it.
pub(crate) type Body = BoxBody<Bytes, Infallible>;

struct Grant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: String,
}

#[derive(Default)]
struct State {
    next: u64,
    codes: HashMap<String, Grant>,
    /// Access token → its expiry.
    access: HashMap<String, Instant>,
    /// Refresh token → scope.
    refresh: HashMap<String, String>,
    down: bool,
    authorization_codes: u64,
    refreshes: u64,
    rejected: u64,
}

/// The authorization server and the token check of the protected endpoint.
pub(crate) struct AuthServer {
    /// `http://127.0.0.1:PORT`: the issuer, and the base of every endpoint.
    base: String,
    token_ttl: Duration,
    state: Mutex<State>,
}

fn respond(status: StatusCode, body: Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert("content-type", HeaderValue::from_static("application/json"));
    response
}

fn oauth_error(error: &str) -> Response<Body> {
    respond(StatusCode::BAD_REQUEST, json!({"error": error}))
}

fn form(body: &[u8]) -> HashMap<String, String> {
    query(&String::from_utf8_lossy(body))
}

fn query(text: &str) -> HashMap<String, String> {
    text.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

/// `application/x-www-form-urlencoded` decoding.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl AuthServer {
    pub(crate) fn new(base: String, token_ttl: Duration) -> Self {
        Self { base, token_ttl, state: Mutex::default() }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn token(&self, state: &mut State, prefix: &str) -> String {
        state.next += 1;
        let salt = std::process::id();
        format!("{prefix}-{salt:x}-{}", state.next)
    }

    /// Whether `request` carries a valid bearer token.
    fn authorized<B>(&self, request: &Request<B>) -> bool {
        let Some(token) = request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
        else {
            return false;
        };
        self.state().access.get(token).is_some_and(|expiry| Instant::now() < *expiry)
    }

    fn challenge(&self) -> Response<Body> {
        let mut response = respond(StatusCode::UNAUTHORIZED, json!({"error": "invalid_token"}));
        let value = format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource\", scope=\"mcp\"",
            self.base
        );
        // The base is the server's own address: ASCII, so always a header value.
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert("www-authenticate", value);
        }
        response
    }

    /// Answer `request` if it is for the authorization server or lacks a valid token; `None`
    /// passes it on to the MCP endpoint.
    pub(crate) async fn handle(
        &self,
        request: Request<hyper::body::Incoming>,
    ) -> Result<Response<Body>, Request<hyper::body::Incoming>> {
        let path = request.uri().path().to_string();
        let base = &self.base;
        match (request.method().as_str(), path.as_str()) {
            ("GET", p) if p.starts_with("/.well-known/oauth-protected-resource") => {
                Ok(respond(StatusCode::OK, protected_resource(base)))
            }
            ("GET", p)
                if p.starts_with("/.well-known/oauth-authorization-server")
                    || p.starts_with("/.well-known/openid-configuration") =>
            {
                Ok(respond(StatusCode::OK, authorization_server(base)))
            }
            ("POST", "/register") => {
                let body = collect(request).await;
                let metadata: Value = serde_json::from_slice(&body).unwrap_or_default();
                let client_id = {
                    let mut state = self.state();
                    self.token(&mut state, "client")
                };
                let mut answer = metadata.clone();
                answer["client_id"] = json!(client_id);
                answer["token_endpoint_auth_method"] = json!("none");
                Ok(respond(StatusCode::CREATED, answer))
            }
            ("GET", "/authorize") => Ok(self.authorize(request.uri().query().unwrap_or(""))),
            ("POST", "/token") => {
                let body = collect(request).await;
                Ok(self.exchange(&form(&body)))
            }
            (method, p) if p.starts_with("/admin/") => Ok(self.admin(method, p)),
            _ if self.authorized(&request) => Err(request),
            _ => Ok(self.challenge()),
        }
    }

    /// The test controls: expire or revoke every token, take the token endpoint down or up,
    /// and the counts.
    fn admin(&self, method: &str, path: &str) -> Response<Body> {
        let mut state = self.state();
        match (method, path) {
            ("POST", "/admin/expire") => {
                let now = Instant::now();
                state.access.values_mut().for_each(|expiry| *expiry = now);
            }
            ("POST", "/admin/revoke") => {
                state.access.clear();
                state.refresh.clear();
            }
            ("POST", "/admin/down") | ("POST", "/admin/up") => state.down = path == "/admin/down",
            ("GET", "/admin/stats") => {
                let stats = json!({
                    "authorization_codes": state.authorization_codes,
                    "refreshes": state.refreshes,
                    "rejected": state.rejected,
                });
                return respond(StatusCode::OK, stats);
            }
            _ => return respond(StatusCode::NOT_FOUND, json!({"error": "no such control"})),
        }
        respond(StatusCode::OK, json!({}))
    }

    /// Approve at once: redirect back with a code bound to the PKCE challenge.
    fn authorize(&self, query_text: &str) -> Response<Body> {
        let params = query(query_text);
        let get = |key: &str| params.get(key).cloned().unwrap_or_default();
        if get("response_type") != "code" || get("code_challenge_method") != "S256" {
            return oauth_error("invalid_request");
        }
        let redirect_uri = get("redirect_uri");
        if !redirect_uri.starts_with("http://127.0.0.1:")
            && !redirect_uri.starts_with("http://localhost:")
        {
            return oauth_error("invalid_request");
        }
        let code = {
            let mut state = self.state();
            let code = self.token(&mut state, "code");
            state.codes.insert(
                code.clone(),
                Grant {
                    client_id: get("client_id"),
                    redirect_uri: redirect_uri.clone(),
                    challenge: get("code_challenge"),
                    scope: get("scope"),
                },
            );
            code
        };
        let location = format!(
            "{redirect_uri}?code={}&state={}&iss={}",
            encode(&code),
            encode(&get("state")),
            encode(&self.base)
        );
        let mut response = Response::new(Full::new(Bytes::new()).boxed());
        *response.status_mut() = StatusCode::FOUND;
        // Percent-encoded throughout: always a header value.
        if let Ok(location) = HeaderValue::from_str(&location) {
            response.headers_mut().insert("location", location);
        }
        response
    }

    fn exchange(&self, params: &HashMap<String, String>) -> Response<Body> {
        let get = |key: &str| params.get(key).cloned().unwrap_or_default();
        let mut state = self.state();
        if state.down {
            return respond(
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": "temporarily_unavailable"}),
            );
        }
        let scope = match get("grant_type").as_str() {
            "authorization_code" => {
                let Some(grant) = state.codes.remove(&get("code")) else {
                    state.rejected += 1;
                    return oauth_error("invalid_grant");
                };
                let verifier = get("code_verifier");
                let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(sha2::Sha256::digest(verifier.as_bytes()));
                if computed != grant.challenge
                    || grant.client_id != get("client_id")
                    || grant.redirect_uri != get("redirect_uri")
                {
                    state.rejected += 1;
                    return oauth_error("invalid_grant");
                }
                state.authorization_codes += 1;
                grant.scope
            }
            "refresh_token" => {
                let Some(scope) = state.refresh.remove(&get("refresh_token")) else {
                    state.rejected += 1;
                    return oauth_error("invalid_grant");
                };
                state.refreshes += 1;
                scope
            }
            _ => return oauth_error("unsupported_grant_type"),
        };
        let access = self.token(&mut state, "at");
        let refresh = self.token(&mut state, "rt");
        state.access.insert(access.clone(), Instant::now() + self.token_ttl);
        state.refresh.insert(refresh.clone(), scope.clone());
        let scope = if scope.is_empty() { "mcp".to_string() } else { scope };
        respond(
            StatusCode::OK,
            json!({
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": self.token_ttl.as_secs(),
                "refresh_token": refresh,
                "scope": scope,
            }),
        )
    }
}

async fn collect(request: Request<hyper::body::Incoming>) -> Bytes {
    request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default()
}

/// The protected-resource metadata (RFC 9728) of the endpoint at `base`.
fn protected_resource(base: &str) -> Value {
    json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": [base],
        "scopes_supported": ["mcp"],
        "bearer_methods_supported": ["header"],
    })
}

/// The authorization-server metadata (RFC 8414) of the in-process server at `base`.
fn authorization_server(base: &str) -> Value {
    json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["mcp", "offline_access"],
        "authorization_response_iss_parameter_supported": true,
    })
}
