//! GraphQL over WebSocket: the `graphql-transport-ws` protocol of the `graphql-ws` library
//! (<https://github.com/enisdenjo/graphql-ws/blob/master/PROTOCOL.md>), which Apollo Client's
//! `GraphQLWsLink` and Relay's network layers speak, on `GET /graphql` with an upgrade.
//!
//! The socket is axum's (tokio-tungstenite); the protocol's rules are written here, because
//! async-graphql's own state machine departs from them (docs/src/reference/decisions.md): a
//! `connection_init` must come within [`INIT_TIMEOUT`] (else 4408), once (4429), before any
//! `subscribe` (4401); its payload's `Authorization` (or the upgrade request's header) is
//! verified as over HTTP (a bad token: 4403); a `subscribe` whose id is in use closes with 4409;
//! anything unreadable with 4400; `ping` gets `pong`; `complete` works both ways. Each operation
//! goes through the same checks, limits and execution as a POST, with its subscription's results
//! streamed as `next` messages; a request error is one `error` message. On shutdown the socket
//! closes with 1001, which clients reconnect from.

use std::{collections::HashMap, net::SocketAddr, sync::Arc, time::Duration};

use async_graphql::futures_util::{
    Stream, StreamExt,
    stream::{self, AbortHandle, BoxStream, SelectAll},
};
use axum::{
    extract::{
        ConnectInfo, FromRequestParts, Request, WebSocketUpgrade,
        ws::{CloseFrame, Message, WebSocket},
    },
    http::{HeaderMap, HeaderValue, header},
    response::{IntoResponse, Response},
};
use http_body_util::BodyExt;
use serde_json::{Map, Value, json};

use super::{
    AppState,
    conn::ConnectionSlot,
    graphql::{Format, HttpError, Streaming, execute_as},
    params::Params,
    rate_limit::FORWARDED_FOR,
    sse::Results,
};
use crate::{auth::Caller, graphql};

/// The WebSocket subprotocol.
const PROTOCOL: &str = "graphql-transport-ws";
/// How long a client has to send `connection_init` after the socket opens.
pub const INIT_TIMEOUT: Duration = Duration::from_secs(10);
/// Operations one socket may run at once; more are refused with an `error` message.
const MAX_OPERATIONS: usize = 100;
/// What a socket reads at a time. The protocol's messages from clients are small, and each
/// socket holds this much for as long as it is open (tungstenite's default is 128 KiB): with
/// 100,000 subscribers on 1,000 to 100,000 sockets, every KiB here is up to 100 MiB. A larger
/// message is read in several steps.
const READ_BUFFER: usize = 2 * 1024;
/// The largest answer of one operation read back into a message.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// Whether a request asks to upgrade to a WebSocket.
pub(super) fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// Accepts the upgrade (with the protocol, when the client offers it) and runs the session.
pub(super) async fn upgrade(state: AppState, request: Request) -> Response {
    let (mut parts, _) = request.into_parts();
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| *peer);
    let slot = parts.extensions.get::<ConnectionSlot>().cloned();
    let headers = Arc::new(parts.headers.clone());
    let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &state).await {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
    let upgrade = upgrade
        .protocols([PROTOCOL])
        .max_message_size(state.http.max_body_bytes)
        .read_buffer_size(READ_BUFFER);
    let acceptable = upgrade.selected_protocol().is_some();
    upgrade.on_upgrade(move |socket| async move {
        // The connection's place under the cap (and in the open-connections gauge) is kept
        // until the socket closes.
        let stop = slot.as_ref().map(|slot| slot.stop.clone());
        let session = Session {
            state,
            socket,
            headers,
            peer,
        };
        session.run(acceptable, stop).await;
        drop(slot);
    })
}

/// A message from the client, read.
enum Incoming {
    Init(Option<Value>),
    Subscribe(String, Value),
    Complete(String),
    Ping(Option<Value>),
    Pong,
    /// Not a message of the protocol: the reason.
    Invalid(String),
    /// The socket closed, or failed.
    Closed,
}

/// What an operation sends, by id.
enum Outgoing {
    Next(String, Value),
    Error(String, Value),
    Complete(String),
}

struct Session {
    state: AppState,
    socket: WebSocket,
    /// The upgrade request's headers until `connection_init`; then only those the socket's
    /// operations read ([`operations_headers`]), shared by them.
    headers: Arc<HeaderMap>,
    peer: Option<SocketAddr>,
}

impl Session {
    async fn run(mut self, acceptable: bool, mut stop: Option<tokio::sync::watch::Receiver<bool>>) {
        if !acceptable {
            return self.close(4406, "Subprotocol not acceptable").await;
        }
        let deadline = tokio::time::sleep(INIT_TIMEOUT);
        let mut deadline = std::pin::pin!(deadline);
        let caller = loop {
            tokio::select! {
                () = deadline.as_mut() => {
                    return self.close(4408, "Connection initialisation timeout").await;
                }
                incoming = self.receive() => match incoming {
                    // Boxed: verifying a token takes more state than the socket holds after.
                    Incoming::Init(payload) => match Box::pin(authenticate(&self.state, &self.headers, payload.as_ref())).await {
                        Some(caller) => break caller,
                        None => return self.close(4403, "Forbidden").await,
                    },
                    Incoming::Ping(payload) => self.pong(payload).await,
                    Incoming::Pong | Incoming::Complete(_) => {}
                    Incoming::Subscribe(..) => return self.close(4401, "Unauthorized").await,
                    Incoming::Invalid(reason) => return self.close(4400, &reason).await,
                    Incoming::Closed => return,
                },
            }
        };
        self.headers = Arc::new(operations_headers(&self.headers));
        self.send(json!({ "type": "connection_ack" })).await;

        // Each running operation's messages, and the handle that ends it on `complete`.
        let mut active: HashMap<String, AbortHandle> = HashMap::new();
        let mut operations = SelectAll::new();
        loop {
            tokio::select! {
                incoming = self.receive() => match incoming {
                    Incoming::Init(_) => {
                        return self.close(4429, "Too many initialisation requests").await;
                    }
                    Incoming::Subscribe(id, payload) => {
                        if active.contains_key(&id) {
                            let reason = format!("Subscriber for {id} already exists");
                            return self.close(4409, &reason).await;
                        }
                        if active.len() >= MAX_OPERATIONS {
                            let error = coded(
                                &format!("At most {MAX_OPERATIONS} operations may run on one socket."),
                                "TOO_MANY_OPERATIONS",
                            );
                            self.send(json!({ "id": id, "type": "error", "payload": [error] })).await;
                            continue;
                        }
                        let messages = operation(
                            self.state.clone(),
                            caller.clone(),
                            Arc::clone(&self.headers),
                            self.peer,
                            id.clone(),
                            payload,
                        );
                        let (messages, handle) = stream::abortable(messages);
                        operations.push(messages);
                        active.insert(id, handle);
                    }
                    Incoming::Complete(id) => {
                        if let Some(operation) = active.remove(&id) {
                            operation.abort();
                        }
                    }
                    Incoming::Ping(payload) => self.pong(payload).await,
                    Incoming::Pong => {}
                    Incoming::Invalid(reason) => return self.close(4400, &reason).await,
                    Incoming::Closed => return,
                },
                Some(out) = operations.next(), if !operations.is_empty() => {
                    // Nothing is sent for an operation the client completed. While a message
                    // is written, no operation runs on: one whose client falls too far behind
                    // its table's stream ends with `CHANGES_LOST`.
                    let message = match out {
                        Outgoing::Next(id, payload) if active.contains_key(&id) => {
                            json!({ "id": id, "type": "next", "payload": payload })
                        }
                        Outgoing::Error(id, payload) if active.remove(&id).is_some() => {
                            json!({ "id": id, "type": "error", "payload": payload })
                        }
                        Outgoing::Complete(id) if active.remove(&id).is_some() => {
                            json!({ "id": id, "type": "complete" })
                        }
                        _ => continue,
                    };
                    self.send(message).await;
                }
                () = stopped(&mut stop) => {
                    return self.close(1001, "Going away").await;
                }
            }
        }
    }

    /// The next message, read.
    async fn receive(&mut self) -> Incoming {
        loop {
            let text = match self.socket.recv().await {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(Message::Binary(_))) => {
                    return Incoming::Invalid("Messages must be text".to_owned());
                }
                // Control frames are the socket's own business.
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                Some(Ok(Message::Close(_)) | Err(_)) | None => return Incoming::Closed,
            };
            return parse(text.as_str());
        }
    }

    async fn pong(&mut self, payload: Option<Value>) {
        let mut pong = json!({ "type": "pong" });
        if let Some(payload) = payload {
            pong["payload"] = payload;
        }
        self.send(pong).await;
    }

    async fn send(&mut self, message: Value) {
        // A socket that fails to take a message is closing; the next read says so.
        let _ = self.socket.send(Message::text(message.to_string())).await;
    }

    async fn close(mut self, code: u16, reason: &str) {
        let _ = self
            .socket
            .send(Message::Close(Some(CloseFrame {
                code,
                reason: reason.into(),
            })))
            .await;
    }
}

/// The caller the `connection_init` payload's `Authorization` names (any casing of the key),
/// or else the upgrade request's header; `None` for credentials that are not valid.
async fn authenticate(
    state: &AppState,
    headers: &HeaderMap,
    payload: Option<&Value>,
) -> Option<Caller> {
    let Some(auth) = &state.http.auth else {
        return Some(Caller::Anonymous);
    };
    let given = payload
        .and_then(Value::as_object)
        .and_then(|p| {
            p.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                .map(|(_, v)| v)
        })
        .and_then(Value::as_str)
        .map(HeaderValue::from_str);
    let header = match given {
        Some(Ok(value)) => Some(value),
        Some(Err(_)) => return None,
        None => headers.get(header::AUTHORIZATION).cloned(),
    };
    match auth.authenticate(header.as_ref()).await {
        Ok(caller) => Some(caller),
        Err(rejection) => {
            tracing::info!(reason = rejection.reason(), "WebSocket credentials refused");
            state.metrics().auth_rejected();
            None
        }
    }
}

/// What the socket's operations read of the upgrade request's headers once the caller is
/// verified: the forwarded-for hops that rate limits key an anonymous caller by. The rest
/// (cookies, user agent, the handshake's own) would be held for the socket's whole life.
fn operations_headers(headers: &HeaderMap) -> HeaderMap {
    let mut kept = HeaderMap::new();
    for value in headers.get_all(&FORWARDED_FOR) {
        kept.append(FORWARDED_FOR.clone(), value.clone());
    }
    kept
}

/// Waits for the server's shutdown (forever without a connection slot, in tests).
async fn stopped(stop: &mut Option<tokio::sync::watch::Receiver<bool>>) {
    match stop {
        Some(stop) => {
            let _ = stop.wait_for(|stop| *stop).await;
        }
        None => std::future::pending().await,
    }
}

/// A message of the protocol from its text.
fn parse(text: &str) -> Incoming {
    let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(text) else {
        return Incoming::Invalid("Invalid message received".to_owned());
    };
    let id = |message: &Map<String, Value>| match message.get("id") {
        Some(Value::String(id)) if !id.is_empty() => Some(id.clone()),
        _ => None,
    };
    let payload = message.remove("payload").filter(|p| !p.is_null());
    match message.get("type").and_then(Value::as_str) {
        Some("connection_init") => match &payload {
            None | Some(Value::Object(_)) => Incoming::Init(payload),
            Some(_) => Incoming::Invalid("Invalid connection_init payload".to_owned()),
        },
        Some("subscribe") => match (id(&message), payload) {
            (Some(id), Some(payload @ Value::Object(_))) => Incoming::Subscribe(id, payload),
            _ => Incoming::Invalid("Invalid subscribe message".to_owned()),
        },
        Some("complete") => match id(&message) {
            Some(id) => Incoming::Complete(id),
            None => Incoming::Invalid("Invalid complete message".to_owned()),
        },
        Some("ping") => Incoming::Ping(payload),
        Some("pong") => Incoming::Pong,
        Some(other) => Incoming::Invalid(format!("Unexpected message of type {other}")),
        None => Incoming::Invalid("Invalid message received".to_owned()),
    }
}

/// A GraphQL error with a code, as a message's payload holds it.
fn coded(message: &str, code: &str) -> Value {
    json!({ "message": message, "extensions": { "code": code } })
}

/// One operation as a stream of the messages it sends: a subscription's results as `next`
/// messages then `complete`, a query's or mutation's one result then `complete`, or a refusal
/// as `error`. The session polls every operation's stream itself, rather than spawning a task
/// for each: an idle subscription then costs only its results' state.
fn operation(
    state: AppState,
    caller: Caller,
    headers: Arc<HeaderMap>,
    peer: Option<SocketAddr>,
    id: String,
    payload: Value,
) -> BoxStream<'static, Outgoing> {
    // Boxed: starting an operation takes far more state than following its results does.
    let started = Box::pin(start(state, caller, headers, peer, payload));
    stream::once(started)
        .flat_map(move |started| match started {
            Started::Answered(Answer::Result(body)) => stream::iter([
                Outgoing::Next(id.clone(), body),
                Outgoing::Complete(id.clone()),
            ])
            .boxed(),
            Started::Answered(Answer::Refusal(errors)) => {
                stream::iter([Outgoing::Error(id.clone(), errors)]).boxed()
            }
            Started::Streaming(results) => streamed(id.clone(), results).boxed(),
        })
        .boxed()
}

/// What starting an operation came to.
enum Started {
    /// A subscription's results.
    Streaming(Results),
    /// Its one message, or two.
    Answered(Answer),
}

/// An operation's whole answer.
enum Answer {
    /// A result with `data`: one `next` message, then `complete`.
    Result(Value),
    /// Errors alone: one `error` message.
    Refusal(Value),
}

/// A subscription's results as `next` messages then `complete`; a request error found by
/// async-graphql's validation is instead the operation's one `error` message.
fn streamed(id: String, results: Results) -> impl Stream<Item = Outgoing> + Send {
    stream::unfold(Some((results, true)), move |state| {
        let id = id.clone();
        async move {
            let (mut results, first) = state?;
            match results.next().await {
                Some(response) if first && graphql::error::is_request_error(&response) => {
                    let errors = serde_json::to_value(&response.errors).unwrap_or_default();
                    Some((Outgoing::Error(id, errors), None))
                }
                Some(response) => {
                    let payload = serde_json::to_value(&response).unwrap_or_default();
                    Some((Outgoing::Next(id, payload), Some((results, false))))
                }
                None => Some((Outgoing::Complete(id), None)),
            }
        }
    })
}

/// Runs one operation as a POST would, up to its answer or its subscription's results.
async fn start(
    state: AppState,
    caller: Caller,
    headers: Arc<HeaderMap>,
    peer: Option<SocketAddr>,
    payload: Value,
) -> Started {
    let refuse = |errors: Value| Started::Answered(Answer::Refusal(errors));
    let params = match payload {
        Value::Object(object) => Params::from_object(object).map_err(HttpError::from),
        _ => unreachable!("parse keeps object payloads only"),
    };
    let params = match params {
        Ok(params) => params,
        Err(err) => return refuse(json!([err.to_error()])),
    };
    // The token was verified at `connection_init`; an operation started after it expired is
    // refused (a subscription running when it expires ends with the same code).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if caller.expires().is_some_and(|expires| expires <= now) {
        let error = coded(
            "Your token expired: connect again with a fresh one.",
            graphql::error::UNAUTHENTICATED,
        );
        return refuse(json!([error]));
    }
    let Ok(admission) = state.rate_limiter.admit(&caller, &headers, peer) else {
        let error = coded("Too many requests; try again later.", "RATE_LIMITED");
        return refuse(json!([error]));
    };
    let mut results = None;
    let response = execute_as(
        &state,
        params,
        Format::Json,
        false,
        caller,
        &admission,
        Streaming::Socket(&mut results),
    )
    .await;
    if let Some(results) = results {
        return Started::Streaming(results);
    }
    let body = http_body_util::Limited::new(response.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await
        .ok()
        .and_then(|body| serde_json::from_slice::<Value>(&body.to_bytes()).ok())
        .unwrap_or_else(
            || json!({ "errors": [coded("Internal server error.", "INTERNAL_SERVER_ERROR")] }),
        );
    if body.get("data").is_some() {
        Started::Answered(Answer::Result(body))
    } else {
        refuse(body.get("errors").cloned().unwrap_or_else(|| json!([])))
    }
}
