//! DynamoDB failing underneath the server: refused connections, a DynamoDB that never answers,
//! and a walk continued on another instance. All on loopback, all bounded in time.

use std::time::{Duration, Instant};

use dynarelay::{
    dynamo::{self, Store},
    http::HttpSettings,
};
use serde_json::{Value, json};

use crate::helpers::{Running, TestApp, error_code};

async fn post(server: &Running, query: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(server.url("/graphql"))
        .json(&json!({ "query": query }))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// With DynamoDB refusing connections, a query fails fast (after the SDK's bounded retries) with
/// a masked SERVICE_UNAVAILABLE error: no DynamoDB or connection detail reaches the client.
/// Seen failing: before outages were told apart, the code was INTERNAL_SERVER_ERROR.
#[tokio::test]
async fn an_unreachable_dynamodb_gives_a_fast_coded_masked_error() {
    let app = TestApp::spawn().await;
    // Nothing listens on port 9 (discard) of loopback here; connections are refused at once.
    let down = Store::new(
        dynamo::client_for_local("http://127.0.0.1:9"),
        app.store.tables().clone(),
    );
    let server = Running::start(down, HttpSettings::default()).await;
    let started = Instant::now();
    let (status, body) = post(
        &server,
        r#"{ user(userId: "ivy") { purchases(first: 2) { edges { cursor } } } }"#,
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(status, 200, "a field error keeps 200 and data: {body}");
    assert_eq!(error_code(&body), Some("SERVICE_UNAVAILABLE"), "{body}");
    assert_eq!(body["data"]["user"], Value::Null);
    let text = body.to_string();
    for leak in ["127.0.0.1", "dispatch", "connect", "Dynamo", "refused"] {
        assert!(!text.contains(leak), "`{leak}` reached the client: {text}");
    }
}

/// A DynamoDB that accepts connections and never answers: the request timeout answers 504 with
/// REQUEST_TIMEOUT when it runs out, so nothing hangs. Seen failing: without the timeout layer
/// the request ran into the SDK's 10 s operation timeout and this test's 5 s bound.
#[tokio::test]
async fn a_silent_dynamodb_runs_into_the_request_timeout() {
    let app = TestApp::spawn().await;
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = silent.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            open.push(socket);
        }
    });
    let hung = Store::new(
        dynamo::client_for_local(&format!("http://{address}")),
        app.store.tables().clone(),
    );
    let server = Running::start(
        hung,
        HttpSettings {
            request_timeout: Duration::from_secs(1),
            ..HttpSettings::default()
        },
    )
    .await;
    let started = Instant::now();
    let (status, body) = tokio::time::timeout(
        Duration::from_secs(5),
        post(&server, r#"{ user(userId: "ivy") { name } }"#),
    )
    .await
    .expect("the request hung");
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert_eq!(status, 504, "{body}");
    assert_eq!(error_code(&body), Some("REQUEST_TIMEOUT"), "{body}");
    held.abort();
}

/// Two instances with the same key ring share nothing else, yet a walk that alternates between
/// them page by page returns every purchase once, in order: cursors carry all the state.
/// (Instances on different key rings would refuse each other's cursors: `cursors.rs` shows a
/// foreign ring's cursor rejected.)
#[tokio::test]
async fn a_walk_alternating_between_two_instances_returns_everything() {
    let app = TestApp::spawn().await;
    app.put_user("ivy").await;
    let times: Vec<i64> = (0..23).map(|i| 1_700_000_000_000 + i * 1000).collect();
    app.put_purchases("ivy", &times).await;
    let instances = [
        Running::start(app.store.clone(), HttpSettings::default()).await,
        Running::start(app.store.clone(), HttpSettings::default()).await,
    ];
    let mut seen = Vec::new();
    let mut after = Value::Null;
    for page in 0.. {
        let query = format!(
            r#"{{ user(userId: "ivy") {{ purchases(first: 5, after: {after}) {{
                edges {{ node {{ purchasedAt }} }} pageInfo {{ hasNextPage endCursor }} }} }} }}"#
        );
        let (_, body) = post(&instances[page % 2], &query).await;
        let purchases = &body["data"]["user"]["purchases"];
        assert!(purchases.is_object(), "page {page}: {body}");
        for edge in purchases["edges"].as_array().unwrap() {
            seen.push(edge["node"]["purchasedAt"].as_str().unwrap().to_owned());
        }
        if purchases["pageInfo"]["hasNextPage"] != true {
            break;
        }
        after = purchases["pageInfo"]["endCursor"].clone();
    }
    assert_eq!(seen.len(), times.len(), "{seen:?}");
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, seen, "duplicates or out of order");
}
