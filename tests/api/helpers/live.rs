//! Live data: a model served with a stream reader of its own, with or without bearer tokens,
//! waiting for a subscription to reach its table's stream, and a server-sent events client.

use std::{sync::Arc, time::Duration};

use async_graphql::futures_util::{SinkExt, StreamExt};
use axum::{
    Router,
    body::Body,
    http::{Request, header},
};
use dynarelay::{
    dynamo,
    http::{HttpSettings, router},
    pagination::PageLimits,
    stream::{StreamSettings, Streams},
};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tower::ServiceExt;

use super::{CallLog, ModelApp, TestIssuer, endpoint, model_auth_settings, model_state, test_ring};

/// Longest wait for a subscription to start: far beyond what DynamoDB Local takes, so that a
/// slow machine never fails a test; one that never starts still fails it.
const START: Duration = Duration::from_secs(60);

/// Longest wait for one event: far beyond what DynamoDB Local takes, so that a slow machine
/// never fails a test; a missing event still fails it.
pub const WAIT: Duration = Duration::from_secs(60);

/// Stream settings for tests: the defaults, polling often.
pub fn test_stream_settings() -> StreamSettings {
    StreamSettings {
        poll_interval: Duration::from_millis(50),
        ..StreamSettings::default()
    }
}

/// `app` served with a stream reader of its own that polls often, and `http` settings.
fn live_router_with(app: &ModelApp, http: HttpSettings) -> Router {
    live_router_with_streams(app, http, test_stream_settings())
}

/// `app` served with a stream reader of its own with `settings` (recognising the model's
/// entities, and counting in the app's metrics), and `http` settings.
pub fn live_router_with_streams(
    app: &ModelApp,
    http: HttpSettings,
    settings: StreamSettings,
) -> Router {
    live_router_over(
        app,
        http,
        settings,
        dynamo::client_for_local(&endpoint()),
        dynamo::streams_client_for_local(&endpoint()),
    )
}

/// `app` served as an instance of a fleet: its subscriptions' changes read from the Redis at
/// `url`, which `dynarelay relay` fills, instead of from the tables' streams.
pub fn live_router_through_redis(app: &ModelApp, url: &str) -> Router {
    let feed = dynarelay::stream::redis_feed::RedisFeed::new(url, None).expect("a Redis URL");
    live_router_through_feed(app, feed)
}

/// [`live_router_through_redis`], what resumed subscriptions missed read from DynamoDB Streams
/// at `endpoint` (a fault proxy's).
pub fn live_router_through_redis_streams_at(app: &ModelApp, url: &str, endpoint: &str) -> Router {
    let feed = dynarelay::stream::redis_feed::RedisFeed::new(url, None).expect("a Redis URL");
    through_feed_streams_at(app, feed, endpoint)
}

/// [`live_router_through_redis`], reading from `feed`.
pub fn live_router_through_feed(
    app: &ModelApp,
    feed: dynarelay::stream::redis_feed::RedisFeed,
) -> Router {
    through_feed_streams_at(app, feed, &endpoint())
}

/// An instance reading `feed`, reading DynamoDB Streams at `streams` for resumes.
fn through_feed_streams_at(
    app: &ModelApp,
    feed: dynarelay::stream::redis_feed::RedisFeed,
    streams: &str,
) -> Router {
    live_router_from(
        app,
        HttpSettings::default(),
        streams_over(
            app,
            test_stream_settings(),
            dynamo::client_for_local(&endpoint()),
            dynamo::streams_client_for_local(streams),
        )
        .through_redis(feed),
    )
}

/// [`live_router`], its stream reader reading DynamoDB Streams at `endpoint` (a fault proxy's).
pub fn live_router_streams_at(app: &ModelApp, endpoint: &str) -> Router {
    live_router_over(
        app,
        HttpSettings::default(),
        test_stream_settings(),
        dynamo::client_for_local(&self::endpoint()),
        dynamo::streams_client_for_local(endpoint),
    )
}

/// [`live_router`], its stream reader's calls (to DynamoDB through the app's own client, and to
/// DynamoDB Streams) recorded in `log`.
pub fn live_router_logged(app: &ModelApp, log: &CallLog) -> Router {
    let streams = dynamo::streams_client_for_local(&endpoint());
    let streams = aws_sdk_dynamodbstreams::Client::from_conf(
        streams
            .config()
            .to_builder()
            .interceptor(log.clone())
            .build(),
    );
    live_router_over(
        app,
        HttpSettings::default(),
        test_stream_settings(),
        app.store.client().clone(),
        streams,
    )
}

fn live_router_over(
    app: &ModelApp,
    http: HttpSettings,
    settings: StreamSettings,
    dynamodb: aws_sdk_dynamodb::Client,
    streams: aws_sdk_dynamodbstreams::Client,
) -> Router {
    live_router_from(app, http, streams_over(app, settings, dynamodb, streams))
}

/// Stream readers for `app` (recognising the model's entities, and counting in the app's
/// metrics), their calls held to the model's policy, as the app's DynamoDB calls are.
fn streams_over(
    app: &ModelApp,
    settings: StreamSettings,
    dynamodb: aws_sdk_dynamodb::Client,
    streams: aws_sdk_dynamodbstreams::Client,
) -> Streams {
    let audit = super::PolicyAudit::of(app.model, &app.prefix);
    let streams = aws_sdk_dynamodbstreams::Client::from_conf(
        streams.config().to_builder().interceptor(audit).build(),
    );
    Streams::new(dynamodb, streams, settings, Arc::clone(app.store.metrics())).recognising(
        dynarelay::graphql::subscription::recogniser(app.model, app.store.tables()),
    )
}

fn live_router_from(app: &ModelApp, http: HttpSettings, streams: Streams) -> Router {
    router(
        model_state(
            app.model,
            &app.store,
            PageLimits::default(),
            &test_ring(),
            http,
        )
        .with_streams(streams),
    )
}

/// [`live_router_with`] the default settings.
pub fn live_router(app: &ModelApp) -> Router {
    live_router_with(app, HttpSettings::default())
}

/// [`live_router_with`] bearer tokens verified as `app`'s `[auth]` says, against `issuer`.
pub async fn auth_live_router(app: &ModelApp, issuer: &TestIssuer) -> Router {
    let auth = dynarelay::auth::Authenticator::new(model_auth_settings(app.model, &issuer.url()))
        .await
        .expect("the authenticator starts");
    live_router_with(
        app,
        HttpSettings {
            auth: Some(auth),
            ..HttpSettings::default()
        },
    )
}

/// Waits for a subscription to reach its table's stream: writes a warm-up item each round
/// (`write`, a new value each time: a write that changes nothing leaves no stream record) until
/// `arrived` sees a message within 300 ms. Every later write is then delivered. Never a sleep
/// that a slow machine could outlast.
pub async fn warm_up(
    mut write: impl AsyncFnMut(u32),
    mut arrived: impl AsyncFnMut(Duration) -> bool,
) {
    let started = async {
        for round in 0.. {
            write(round).await;
            if arrived(Duration::from_millis(300)).await {
                return;
            }
        }
    };
    tokio::time::timeout(START, started)
        .await
        .expect("the subscription starts");
}

/// One server-sent event: its name and its data as JSON (`Null` when empty).
pub type Received = (String, Value);

/// POSTs `query` with `Accept: text/event-stream` and parses the events as they come.
pub async fn subscribe(router: &Router, query: &str, variables: Value) -> mpsc::Receiver<Received> {
    subscribe_as(router, None, query, variables).await
}

/// [`subscribe`], with `Authorization: Bearer <token>` when there is a token.
pub async fn subscribe_as(
    router: &Router,
    token: Option<&str>,
    query: &str,
    variables: Value,
) -> mpsc::Receiver<Received> {
    subscribe_reading(router, token, query, variables, 1024).await
}

/// [`subscribe_as`], reading the response only while fewer than `ahead` events wait to be
/// received: a client that stops receiving stops reading, as a slow one does.
pub async fn subscribe_reading(
    router: &Router,
    token: Option<&str>,
    query: &str,
    variables: Value,
    ahead: usize,
) -> mpsc::Receiver<Received> {
    let body = json!({ "query": query, "variables": variables });
    subscribe_body(router, token, &body, ahead).await
}

/// POSTs `body` (a request's parameters: a query, or an operation's id) with
/// `Accept: text/event-stream` and parses the events as they come, reading while fewer than
/// `ahead` wait to be received.
pub async fn subscribe_body(
    router: &Router,
    token: Option<&str>,
    body: &Value,
    ahead: usize,
) -> mpsc::Receiver<Received> {
    let mut request = Request::post("/graphql")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "text/event-stream");
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request.body(Body::from(body.to_string())).unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/event-stream"
    );
    let (tx, rx) = mpsc::channel(ahead);
    let mut body = response.into_body();
    tokio::spawn(async move {
        let mut text = String::new();
        while let Some(Ok(frame)) = body.frame().await {
            let Ok(data) = frame.into_data() else {
                continue;
            };
            text.push_str(std::str::from_utf8(&data).unwrap());
            while let Some(end) = text.find("\n\n") {
                let block: String = text.drain(..end + 2).collect();
                let mut name = String::new();
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(n) = line.strip_prefix("event: ") {
                        name = n.to_owned();
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data.push_str(d);
                    }
                }
                if name.is_empty() {
                    continue; // a keep-alive comment
                }
                let data = if data.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_str(&data).unwrap()
                };
                if tx.send((name, data)).await.is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// Whether an event arrives within `wait`; it must be a `next`.
pub async fn received_within(events: &mut mpsc::Receiver<Received>, wait: Duration) -> bool {
    match tokio::time::timeout(wait, events.recv()).await {
        Ok(Some(event)) => {
            assert_eq!(event.0, "next", "{event:?}");
            true
        }
        _ => false,
    }
}

/// The next event, which must come within [`WAIT`] (a missing one fails the test).
pub async fn next_event(events: &mut mpsc::Receiver<Received>) -> Received {
    tokio::time::timeout(WAIT, events.recv())
        .await
        .expect("an event in time")
        .expect("the stream goes on")
}

/// The one error a refused subscription sends, as `(code, message)`: a `next` event with errors
/// and no data (none before execution, `null` from the field), then `complete`.
pub async fn refusal(events: &mut mpsc::Receiver<Received>) -> (String, String) {
    let (name, data) = next_event(events).await;
    assert_eq!(name, "next", "{data}");
    assert!(data.get("data").is_none_or(Value::is_null), "{data}");
    let error = &data["errors"][0];
    let text = |v: &Value| v.as_str().unwrap_or_else(|| panic!("{data}")).to_owned();
    let refused = (text(&error["extensions"]["code"]), text(&error["message"]));
    assert_eq!(next_event(events).await.0, "complete");
    refused
}

/// A WebSocket client's socket.
pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A socket to `url` (`http://` or `ws://`), offering `protocol` when given; the upgrade's error
/// when the server refuses it or is not there.
pub async fn open_socket(
    url: &str,
    protocol: Option<&str>,
) -> Result<Socket, tokio_tungstenite::tungstenite::Error> {
    use tokio_tungstenite::tungstenite::{client::IntoClientRequest, http::HeaderValue};
    let mut request = url.replace("http://", "ws://").into_client_request()?;
    if let Some(protocol) = protocol {
        request.headers_mut().insert(
            "sec-websocket-protocol",
            HeaderValue::from_str(protocol).expect("a header value"),
        );
    }
    Ok(tokio_tungstenite::connect_async(request).await?.0)
}

/// A socket to `url`, offering `protocol` when given.
pub async fn ws_open(url: &str, protocol: Option<&str>) -> Socket {
    open_socket(url, protocol).await.expect("the upgrade")
}

pub async fn ws_send(socket: &mut Socket, message: Value) {
    socket
        .send(Message::text(message.to_string()))
        .await
        .unwrap();
}

/// The next message of the protocol (or close frame), within [`WAIT`].
async fn ws_receive(socket: &mut Socket) -> Message {
    loop {
        let message = tokio::time::timeout(WAIT, socket.next())
            .await
            .expect("a message in time")
            .expect("the socket is open")
            .expect("a readable message");
        if !matches!(message, Message::Ping(_) | Message::Pong(_)) {
            return message;
        }
    }
}

pub async fn ws_receive_json(socket: &mut Socket) -> Value {
    match ws_receive(socket).await {
        Message::Text(text) => serde_json::from_str(text.as_str()).unwrap(),
        other => panic!("expected a message, got {other:?}"),
    }
}

/// The close code the server ends the socket with.
pub async fn ws_closed_with(socket: &mut Socket) -> (u16, String) {
    match ws_receive(socket).await {
        Message::Close(Some(frame)) => (u16::from(frame.code), frame.reason.to_string()),
        other => panic!("expected a close frame, got {other:?}"),
    }
}

/// An initialised socket: `connection_init`, then `connection_ack`.
pub async fn ws_ready(url: &str) -> Socket {
    let mut socket = ws_open(url, Some("graphql-transport-ws")).await;
    ws_send(&mut socket, json!({ "type": "connection_init" })).await;
    assert_eq!(
        ws_receive_json(&mut socket).await,
        json!({ "type": "connection_ack" })
    );
    socket
}
