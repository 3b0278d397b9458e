//! Requests through a router without a socket: GraphQL as a POST or a GET, with any
//! `Authorization` header or from any [`Origin`], the answers, and the `/metrics` exposition.

use std::net::SocketAddr;

use axum::{
    Router,
    body::Body,
    http::{HeaderMap, Method, Request, StatusCode, header},
};
use serde_json::{Value, json};
use tower::ServiceExt;

/// POSTs a GraphQL request through `router` and returns the response body.
pub async fn post_graphql(router: &Router, query: &str, variables: Value) -> Value {
    let text = post_graphql_text(router, query, variables, None).await;
    serde_json::from_str(&text).expect("JSON response")
}

/// POSTs a GraphQL request (with `operationName`, if given) through `router` and returns the
/// response body as sent, byte for byte.
pub async fn post_graphql_text(
    router: &Router,
    query: &str,
    variables: Value,
    operation_name: Option<&str>,
) -> String {
    let body = json!({ "query": query, "variables": variables, "operationName": operation_name })
        .to_string();
    let request = Request::post("/graphql")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .expect("request");
    // Boxed, as a server task would be: the test thread's stack is small for debug builds.
    let response = Box::pin(router.clone().oneshot(request))
        .await
        .expect("router answers");
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    String::from_utf8(bytes.to_vec()).expect("UTF-8 response")
}

/// An HTTP answer: status, headers and the JSON body.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

/// Sends `query` to `/graphql` through `router` (as a POST JSON body, or a GET query string)
/// with `authorization` as the `Authorization` header, raw bytes so that any header can be sent.
pub async fn graphql_with_authorization(
    router: &Router,
    method: Method,
    authorization: Option<&[u8]>,
    query: &str,
) -> Answer {
    let mut request = graphql_request(method, query);
    if let Some(value) = authorization {
        request.headers_mut().insert(
            header::AUTHORIZATION,
            header::HeaderValue::from_bytes(value).expect("a header value"),
        );
    }
    answer(router, request).await
}

/// A `/graphql` request for `query`: a POST JSON body, or a GET query string.
pub fn graphql_request(method: Method, query: &str) -> Request<Body> {
    if method == Method::GET {
        let encoded: String = query
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    char::from(b).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        Request::get(format!("/graphql?query={encoded}")).body(Body::empty())
    } else {
        Request::post("/graphql")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(json!({ "query": query }).to_string()))
    }
    .expect("request")
}

/// Sends `request` through `router`; the answer's body must be JSON.
pub async fn answer(router: &Router, request: Request<Body>) -> Answer {
    // Boxed, as a server task would be: the test thread's stack is small for debug builds.
    let response = Box::pin(router.clone().oneshot(request))
        .await
        .expect("router answers");
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.expect("body");
    Answer {
        status: parts.status,
        headers: parts.headers,
        body: serde_json::from_slice(&bytes).expect("JSON response"),
    }
}

/// Where a request comes from: the TCP peer's address (as `serve` gives every request; `None`
/// as when the router is driven without a listener), a bearer token, and an `X-Forwarded-For`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Origin<'a> {
    pub peer: Option<SocketAddr>,
    pub token: Option<&'a str>,
    pub forwarded_for: Option<&'a str>,
}

impl<'a> Origin<'a> {
    /// A request from `ip` (any port).
    pub fn peer(ip: &str) -> Self {
        Self {
            peer: Some(SocketAddr::new(ip.parse().expect("an IP address"), 40_000)),
            ..Self::default()
        }
    }

    pub fn token(self, token: &'a str) -> Self {
        Self {
            token: Some(token),
            ..self
        }
    }

    pub fn forwarded_for(self, forwarded_for: &'a str) -> Self {
        Self {
            forwarded_for: Some(forwarded_for),
            ..self
        }
    }

    /// `request` sent from here.
    pub fn apply(&self, mut request: Request<Body>) -> Request<Body> {
        if let Some(peer) = self.peer {
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
        }
        if let Some(token) = self.token {
            request.headers_mut().insert(
                header::AUTHORIZATION,
                header::HeaderValue::from_str(&format!("Bearer {token}")).expect("a header"),
            );
        }
        if let Some(forwarded_for) = self.forwarded_for {
            request.headers_mut().insert(
                "x-forwarded-for",
                header::HeaderValue::from_str(forwarded_for).expect("a header"),
            );
        }
        request
    }
}

/// Sends `query` to `/graphql` through `router` from `origin`, as a POST JSON body or a GET
/// query string.
pub async fn graphql_from(
    router: &Router,
    origin: Origin<'_>,
    method: Method,
    query: &str,
) -> Answer {
    answer(router, origin.apply(graphql_request(method, query))).await
}

/// The Prometheus exposition `router`'s `/metrics` serves.
pub async fn metrics_of(router: &Router) -> String {
    let request = Request::get("/metrics")
        .body(Body::empty())
        .expect("request");
    let response = Box::pin(router.clone().oneshot(request))
        .await
        .expect("router answers");
    assert_eq!(response.status(), 200, "GET /metrics");
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    String::from_utf8(bytes.to_vec()).expect("UTF-8 metrics")
}

/// The sum of every sample of the metric `name` in a Prometheus exposition, whatever its labels;
/// `None` when it has none.
pub fn metric_sum(exposition: &str, name: &str) -> Option<f64> {
    exposition
        .lines()
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let metric = series.split_once('{').map_or(series, |(m, _)| m);
            (metric == name).then(|| value.parse::<f64>().expect("a sample value"))
        })
        .reduce(|a, b| a + b)
}

/// The value of the metric line starting with `name` (its labels included) in `rendered`
/// (`/metrics`' text), 0 when absent.
pub fn metric(rendered: &str, name: &str) -> f64 {
    rendered
        .lines()
        .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// The `extensions.code` of the first error, if any.
pub fn error_code(response: &Value) -> Option<&str> {
    response["errors"][0]["extensions"]["code"].as_str()
}
