//! GraphQL over WebSocket (`graphql-transport-ws`) on a real socket: every rule of the protocol
//! with its close code, and a subscription's changes, a query and a refused operation as the
//! protocol's messages, against the subscriptions test's model on DynamoDB Local's streams.

use std::time::Duration;

use async_graphql::futures_util::{SinkExt, StreamExt};
use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::Item;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use crate::{
    helpers::{
        Running, Socket, TestIssuer, WAIT, auth_live_router, book_says, graphql_with_token,
        live_router, metric, model_app_from, model_claims, now, put_plain, warm_up, with,
        ws_closed_with as closed_with, ws_open as open, ws_ready as ready,
        ws_receive_json as receive_json, ws_send as send,
    },
    subscriptions::{MODEL, OWNED, note, run_notes_client},
};

const FOLLOW: &str = "subscription($owner: String!) {
  notesChanged(owner: $owner) { kind edge { cursor node { at text } } } }";

/// Subscribes as `id` to `owner`'s notes on `socket`, writes a warm-up note (at 0) until one
/// arrives, then a fence note (at 5): once the fence has arrived, every later change comes.
async fn subscribed(socket: &mut Socket, app: &crate::helpers::ModelApp, id: &str, owner: &str) {
    let table = app.table("Notes");
    send(
        socket,
        json!({ "id": id, "type": "subscribe",
            "payload": { "query": FOLLOW, "variables": { "owner": owner } } }),
    )
    .await;
    warm_up(
        async |round| {
            let warm = note(owner, 0, &format!("warm-up {round}"), "OPEN");
            put_plain(app.client(), &table, [warm]).await;
        },
        async |wait| {
            matches!(
                tokio::time::timeout(wait, socket.next()).await,
                Ok(Some(Ok(Message::Text(_))))
            )
        },
    )
    .await;
    put_plain(app.client(), &table, [note(owner, 5, "fence", "OPEN")]).await;
    loop {
        let message = receive_json(socket).await;
        assert_eq!(message["id"], id, "{message}");
        if message["payload"]["data"]["notesChanged"]["edge"]["node"]["text"] == "fence" {
            break;
        }
    }
}

#[tokio::test]
async fn every_rule_of_the_protocol_closes_with_its_code() {
    let app = model_app_from(MODEL).await;
    let server = Running::serve(live_router(&app)).await;
    let url = server.url("/graphql");

    // No subprotocol the server speaks.
    let mut socket = open(&url, None).await;
    assert_eq!(closed_with(&mut socket).await.0, 4406);
    // A subscription before `connection_init`.
    let mut socket = open(&url, Some("graphql-transport-ws")).await;
    send(
        &mut socket,
        json!({ "id": "1", "type": "subscribe", "payload": { "query": "{ __typename }" } }),
    )
    .await;
    assert_eq!(closed_with(&mut socket).await.0, 4401);
    // Something that is no message.
    let mut socket = open(&url, Some("graphql-transport-ws")).await;
    socket.send(Message::text("{not json")).await.unwrap();
    assert_eq!(closed_with(&mut socket).await.0, 4400);
    let mut socket = ready(&url).await;
    send(&mut socket, json!({ "type": "subscribe", "payload": {} })).await;
    assert_eq!(
        closed_with(&mut socket).await.0,
        4400,
        "a subscribe without an id"
    );
    // A second `connection_init`.
    let mut socket = ready(&url).await;
    send(&mut socket, json!({ "type": "connection_init" })).await;
    assert_eq!(closed_with(&mut socket).await.0, 4429);
    // `ping` gets `pong`, with its payload; a subscriber id in use closes the socket.
    let mut socket = ready(&url).await;
    send(
        &mut socket,
        json!({ "type": "ping", "payload": { "n": 1 } }),
    )
    .await;
    assert_eq!(
        receive_json(&mut socket).await,
        json!({ "type": "pong", "payload": { "n": 1 } })
    );
    let subscribe = json!({ "id": "a", "type": "subscribe",
        "payload": { "query": FOLLOW, "variables": { "owner": "nobody" } } });
    send(&mut socket, subscribe.clone()).await;
    send(&mut socket, subscribe).await;
    assert_eq!(
        closed_with(&mut socket).await,
        (4409, "Subscriber for a already exists".to_owned())
    );
    // No `connection_init` in time.
    let mut socket = open(&url, Some("graphql-transport-ws")).await;
    let (code, _) = closed_with(&mut socket).await;
    assert_eq!(code, 4408);
}

#[tokio::test]
async fn operations_run_over_the_socket_as_the_protocol_says() {
    let app = model_app_from(MODEL).await;
    let server = Running::serve(live_router(&app)).await;
    let url = server.url("/graphql");
    let table = app.table("Notes");
    let client = app.client();
    let mut socket = ready(&url).await;

    // A query: its result, then `complete`.
    send(
        &mut socket,
        json!({ "id": "q", "type": "subscribe", "payload": {
            "query": "{ notes(owner: \"dana\", first: 1) { edges { cursor } } }" } }),
    )
    .await;
    let result = receive_json(&mut socket).await;
    assert_eq!(
        (&result["id"], &result["type"]),
        (&json!("q"), &json!("next"))
    );
    assert_eq!(
        result["payload"]["data"],
        json!({ "notes": { "edges": [] } })
    );
    assert_eq!(
        receive_json(&mut socket).await,
        json!({ "id": "q", "type": "complete" })
    );
    // A document that does not validate: one `error` message with the errors.
    send(
        &mut socket,
        json!({ "id": "bad", "type": "subscribe", "payload": {
            "query": "subscription { notesChanged(owner: 1) { kind } }" } }),
    )
    .await;
    let error = receive_json(&mut socket).await;
    assert_eq!(error["id"], "bad");
    assert_eq!(error["type"], "error");
    assert!(error["payload"][0]["message"].is_string(), "{error}");
    // A subscription of two root fields: refused as graphql-js refuses it, before it runs.
    send(
        &mut socket,
        json!({ "id": "two", "type": "subscribe", "payload": {
            "query": "subscription Two { a: notesChanged(owner: \"dana\") { kind } \
                      b: notesChanged(owner: \"eve\") { kind } }" } }),
    )
    .await;
    let error = receive_json(&mut socket).await;
    assert_eq!(
        (&error["id"], &error["type"]),
        (&json!("two"), &json!("error"))
    );
    assert_eq!(
        error["payload"][0]["message"],
        "Subscription \"Two\" must select only one top level field."
    );
    assert_eq!(error["payload"][0]["extensions"]["code"], "BAD_USER_INPUT");
    // A subscription that validates but is refused as it starts (a cursor that is none of the
    // connection's): one `next` whose payload holds the coded errors, then `complete`, as the
    // guide says; a client's `error` callback never sees it.
    send(
        &mut socket,
        json!({ "id": "forged", "type": "subscribe", "payload": {
            "query": "subscription { notesChanged(owner: \"dana\", after: \"forged\") { kind } }" } }),
    )
    .await;
    let refused = receive_json(&mut socket).await;
    assert_eq!(
        (&refused["id"], &refused["type"]),
        (&json!("forged"), &json!("next")),
        "{refused}"
    );
    assert_eq!(
        refused["payload"]["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{refused}"
    );
    assert_eq!(
        receive_json(&mut socket).await,
        json!({ "id": "forged", "type": "complete" })
    );
    book_says(
        "docs/src/guides/live-data.md",
        "| sends a subscription refused as it starts (a cursor that is not the connection's, a \
         parent it may not see, a cap) | one `next` whose payload holds the errors, then `complete` |",
    );

    // A subscription: warm-up notes until one arrives, then the changes as `next` messages.
    subscribed(&mut socket, &app, "s", "dana").await;
    put_plain(client, &table, [note("dana", 6, "six", "OPEN")]).await;
    let message = receive_json(&mut socket).await;
    assert_eq!(message["type"], "next");
    let change = &message["payload"]["data"]["notesChanged"];
    assert_eq!(change["kind"], "ADDED");
    assert_eq!(change["edge"]["node"], json!({ "at": 6, "text": "six" }));

    // The client completes it: nothing more comes for it, and the socket goes on.
    send(&mut socket, json!({ "id": "s", "type": "complete" })).await;
    put_plain(client, &table, [note("dana", 7, "seven", "OPEN")]).await;
    send(&mut socket, json!({ "type": "ping" })).await;
    // Changes already on their way may still be written before the `complete` is read; none
    // after the `pong`.
    loop {
        let message = receive_json(&mut socket).await;
        if message["type"] == "pong" {
            break;
        }
    }
    assert!(
        tokio::time::timeout(Duration::from_secs(2), socket.next())
            .await
            .is_err(),
        "nothing follows a completed subscription"
    );
}

#[tokio::test]
async fn apollo_client_merges_pushed_edges_into_the_connection_it_paged() {
    let (_, got) = run_notes_client("apollo-subscribe.mjs").await;
    assert_eq!(
        got,
        json!({
            "kinds": ["ADDED", "ADDED", "UPDATED", "REMOVED"],
            "cached": ["one, edited"],
        })
    );
}

#[tokio::test]
async fn connection_init_carries_the_bearer_token() {
    let issuer = TestIssuer::start().await;
    let app = model_app_from(OWNED).await;
    let router = auth_live_router(&app, &issuer).await;
    let server = Running::serve(router).await;
    let url = server.url("/graphql");
    let token = issuer.mint(&model_claims(app.model, "alice", &[]));
    // A valid token, under any casing of the key: acknowledged.
    for key in ["Authorization", "authorization"] {
        let mut socket = open(&url, Some("graphql-transport-ws")).await;
        send(
            &mut socket,
            json!({ "type": "connection_init", "payload": { key: format!("Bearer {token}") } }),
        )
        .await;
        assert_eq!(
            receive_json(&mut socket).await,
            json!({ "type": "connection_ack" })
        );
    }
    // A forged one: closed with 4403.
    let mut socket = open(&url, Some("graphql-transport-ws")).await;
    send(
        &mut socket,
        json!({ "type": "connection_init",
            "payload": { "Authorization": format!("Bearer {token}x") } }),
    )
    .await;
    assert_eq!(closed_with(&mut socket).await.0, 4403);
}

#[tokio::test]
async fn a_subscription_ends_when_its_token_expires_and_none_starts_after() {
    let issuer = TestIssuer::start().await;
    let app = model_app_from(OWNED).await;
    let router = auth_live_router(&app, &issuer).await;
    let server = Running::serve(router.clone()).await;
    let url = server.url("/graphql");
    put_plain(
        app.client(),
        &app.table("Owners"),
        [Item::from([(
            "ownerId".to_owned(),
            AttributeValue::S("alice".to_owned()),
        )])],
    )
    .await;
    let lasting = issuer.mint(&model_claims(app.model, "alice", &[]));
    let answer = graphql_with_token(
        &router,
        Some(&lasting),
        "{ owner(ownerId: \"alice\") { id } }",
        json!({}),
    )
    .await
    .body;
    let owner = answer["data"]["owner"]["id"].clone();
    assert!(owner.is_string(), "{answer}");
    // A token valid for a few seconds more. (Started late on a slow machine, the subscription
    // still ends as asserted: at once, its token having expired.)
    let expires = now() + 4;
    let claims = with(
        model_claims(app.model, "alice", &[]),
        json!({ "exp": expires }),
    );
    let token = issuer.mint(&claims);
    let mut socket = open(&url, Some("graphql-transport-ws")).await;
    send(
        &mut socket,
        json!({ "type": "connection_init", "payload": { "Authorization": format!("Bearer {token}") } }),
    )
    .await;
    assert_eq!(
        receive_json(&mut socket).await,
        json!({ "type": "connection_ack" })
    );
    send(
        &mut socket,
        json!({ "id": "s", "type": "subscribe",
            "payload": { "query": "subscription($o: ID!) { cardsChanged(owner: $o) { kind } }",
                "variables": { "o": owner } } }),
    )
    .await;
    // The subscription ends with `UNAUTHENTICATED`, not before the token's `exp`.
    let ended = receive_json(&mut socket).await;
    assert!(now() >= expires, "ended early: {ended}");
    assert_eq!(ended["id"], "s", "{ended}");
    assert_eq!(ended["type"], "next", "{ended}");
    assert_eq!(
        ended["payload"]["errors"][0]["extensions"]["code"], "UNAUTHENTICATED",
        "{ended}"
    );
    assert!(ended["payload"]["data"].is_null(), "{ended}");
    assert_eq!(
        receive_json(&mut socket).await,
        json!({ "id": "s", "type": "complete" })
    );
    book_says(
        "docs/src/guides/live-data.md",
        "A subscription that ends with a code (`CHANGES_LOST`, `UNAUTHENTICATED` when the token \
         expires, `SUBSCRIPTIONS_UNAVAILABLE`) ends the same way over both transports: a last \
         `next` whose payload has `errors` (with `extensions.code`) and no `data`, then `complete`.",
    );
    // An operation started on the socket after that is refused alike.
    send(
        &mut socket,
        json!({ "id": "t", "type": "subscribe",
            "payload": { "query": "{ owner(ownerId: \"alice\") { id } }" } }),
    )
    .await;
    let refused = receive_json(&mut socket).await;
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(
        refused["payload"][0]["extensions"]["code"], "UNAUTHENTICATED",
        "{refused}"
    );
}

#[tokio::test]
async fn shutting_down_ends_subscriptions_so_that_clients_reconnect() {
    let app = model_app_from(MODEL).await;
    let server = Running::serve(live_router(&app)).await;
    let url = server.url("/graphql");
    let mut socket = ready(&url).await;
    send(
        &mut socket,
        json!({ "id": "s", "type": "subscribe",
            "payload": { "query": FOLLOW, "variables": { "owner": "gus" } } }),
    )
    .await;
    let mut events = reqwest::Client::new()
        .post(&url)
        .header("accept", "text/event-stream")
        .json(&json!({ "query": FOLLOW, "variables": { "owner": "gus" } }))
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    drop(server);
    // The socket closes with 1001 (going away), which clients reconnect from.
    assert_eq!(closed_with(&mut socket).await.0, 1001);
    // The event stream ends with `complete`.
    let mut text = String::new();
    while !text.contains("event: complete") {
        match tokio::time::timeout(WAIT, events.chunk())
            .await
            .expect("the stream ends in time")
            .expect("a readable stream")
        {
            Some(chunk) => text.push_str(std::str::from_utf8(&chunk).unwrap()),
            None => break,
        }
    }
    assert!(text.contains("event: complete"), "{text}");
}

/// Bursts of `subscribe` then `complete` on one socket, 2,000 subscriptions in all: each ends
/// with its `complete`, nothing is sent for any of them, no seat stays taken (the running
/// subscriptions' gauge back to 0), and the socket then runs a subscription as before.
#[tokio::test]
async fn bursts_of_subscribe_and_complete_leave_nothing_behind() {
    let app = model_app_from(MODEL).await;
    let server = Running::serve(live_router(&app)).await;
    let url = server.url("/graphql");
    let table = app.table("Notes");
    let client = app.client();
    let mut socket = ready(&url).await;
    for round in 0..10 {
        for i in 0..200 {
            let id = format!("burst-{round}-{i}");
            send(
                &mut socket,
                json!({ "id": id, "type": "subscribe",
                    "payload": { "query": FOLLOW, "variables": { "owner": "erin" } } }),
            )
            .await;
            send(&mut socket, json!({ "id": id, "type": "complete" })).await;
        }
        // A change while the burst's subscriptions end: sent to none of them.
        put_plain(client, &table, [note("erin", round, "during", "OPEN")]).await;
    }
    // Every `complete` read (the socket answers in order): then no subscription of the bursts runs.
    send(&mut socket, json!({ "type": "ping" })).await;
    let message = receive_json(&mut socket).await;
    assert_eq!(message["type"], "pong", "nothing but the pong: {message}");
    let started = std::time::Instant::now();
    loop {
        let rendered = app.store.metrics().render();
        if metric(&rendered, "dynarelay_subscriptions ") == 0.0 {
            break;
        }
        assert!(started.elapsed() < WAIT, "seats still taken: {rendered}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    subscribed(&mut socket, &app, "last", "erin").await;
}
