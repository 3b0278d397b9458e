//! GraphQL over server-sent events: the `graphql-sse` protocol's distinct connections mode
//! (<https://github.com/enisdenjo/graphql-sse/blob/master/PROTOCOL.md>), on `POST /graphql` with
//! `Accept: text/event-stream`.
//!
//! Each result is a `next` event whose data is the GraphQL response, and the stream ends with a
//! `complete` event: a subscription sends one `next` per change until the client closes the
//! connection (or the subscription ends with an error); any other operation sends its one
//! result. What is refused before execution (a parse or validation error, a bad variable, a
//! limit) is sent the same way, as the protocol asks, with status 200; refusals of the HTTP
//! request itself (credentials, rate limits, the body's size or type) keep their status.
//!
//! Hand-written: async-graphql-axum's `GraphQLSubscription` speaks only the WebSocket protocols,
//! and no maintained crate serves `graphql-sse`; the framing is a few lines.

use std::{convert::Infallible, time::Duration};

use async_graphql::futures_util::{Stream, StreamExt, stream};
use axum::{
    body::{Body, Bytes},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use http_body_util::BodyExt;
use serde_json::json;

use crate::graphql;

/// A subscription's results, as async-graphql executes them, for a transport to send.
pub(super) type Results =
    async_graphql::futures_util::stream::BoxStream<'static, async_graphql::Response>;

/// The code of the refusal of a subscription by a server that holds none open (the Lambda
/// function).
pub(super) const SUBSCRIPTIONS_UNAVAILABLE: &str = "SUBSCRIPTIONS_UNAVAILABLE";

/// The media type of an event stream.
const EVENT_STREAM: &str = "text/event-stream";
/// A comment sent when nothing else was for this long, so that proxies and load balancers keep
/// an idle subscription's connection open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The largest JSON answer turned into events (a refusal before execution, or one result).
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// Whether an `Accept` header asks for an event stream.
pub(super) fn accepts_events(accept: Option<&HeaderValue>) -> bool {
    accept
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value.split(',').any(|media| {
                media
                    .split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case(EVENT_STREAM))
            })
        })
}

/// One event's bytes: `event: <name>` and its data, one `data:` line per line of it.
fn event(name: &str, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 32);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    out.push(b'\n');
    // JSON has no raw newlines in its strings; split anyway, as the format requires.
    for line in data.split(|&b| b == b'\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.push(b'\n');
    Bytes::from(out)
}

fn stream_response(body: Body) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // nginx and others buffer responses unless told not to.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// A JSON answer as events: `next` with it, then `complete`. An answer that is already an event
/// stream, or a refusal of the HTTP request itself (any status but 200 and 400), is sent as it is.
pub(super) async fn answer(response: Response) -> Response {
    let is_events = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(EVENT_STREAM));
    if is_events || !matches!(response.status(), StatusCode::OK | StatusCode::BAD_REQUEST) {
        return response;
    }
    let body = match http_body_util::Limited::new(response.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(_) => {
            let error = json!({ "errors": [{ "message": "Internal server error.",
                "extensions": { "code": "INTERNAL_SERVER_ERROR" } }] });
            Bytes::from(error.to_string())
        }
    };
    let events = [
        Ok::<_, Infallible>(event("next", &body)),
        Ok(event("complete", b"")),
    ];
    stream_response(Body::from_stream(stream::iter(events)))
}

/// A subscription's events: one `next` per result (of a request parsed, checked and limited as
/// every request is) until they end, then `complete`; `None`, where the server holds no stream
/// readers, is answered with a `SUBSCRIPTIONS_UNAVAILABLE` error.
pub(super) fn subscribe(
    results: Option<Results>,
    stop: Option<tokio::sync::watch::Receiver<bool>>,
) -> Response {
    let Some(results) = results else {
        let error = json!({ "errors": [{
            "message": "This server does not hold subscriptions open: run `dynarelay serve`.",
            "extensions": { "code": SUBSCRIPTIONS_UNAVAILABLE } }] });
        let events = [
            Ok::<_, Infallible>(event("next", error.to_string().as_bytes())),
            Ok(event("complete", b"")),
        ];
        return stream_response(Body::from_stream(stream::iter(events)));
    };
    stream_response(Body::from_stream(events(results, stop)))
}

/// Results as `next` events, a comment every [`KEEP_ALIVE`] of silence, and `complete` when
/// they end or the server shuts down (`stop`), so that a client knows to reconnect.
fn events(
    results: impl Stream<Item = async_graphql::Response> + Send + 'static,
    stop: Option<tokio::sync::watch::Receiver<bool>>,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    stream::unfold(Some((results.boxed(), stop)), |state| async move {
        let (mut results, mut stop) = state?;
        let stopping = async {
            match &mut stop {
                Some(stop) => {
                    let _ = stop.wait_for(|stop| *stop).await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stopping => Some((Ok(event("complete", b"")), None)),
            result = results.next() => match result {
                Some(response) => {
                    // A request error (found by validation) has no `data`, as over HTTP.
                    // Each change is written straight to bytes; only a request error goes
                    // through a JSON value, to drop its `data`.
                    let data = if graphql::error::is_request_error(&response) {
                        let mut value = json!({ "errors": response.errors });
                        if !response.extensions.is_empty() {
                            value["extensions"] = json!(response.extensions);
                        }
                        serde_json::to_vec(&value)
                    } else {
                        serde_json::to_vec(&response)
                    }
                    .unwrap_or_else(|_| {
                        br#"{"errors":[{"message":"Internal server error.","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}"#.to_vec()
                    });
                    Some((Ok(event("next", &data)), Some((results, stop))))
                }
                None => Some((Ok(event("complete", b"")), None)),
            },
            () = tokio::time::sleep(KEEP_ALIVE) => {
                Some((Ok(Bytes::from_static(b":\n\n")), Some((results, stop))))
            }
        }
    })
}
