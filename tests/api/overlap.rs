//! `user(userId) { purchases(...) }` reads the user and the page at the same time: the page's
//! Query does not wait for the user's GetItem. The answers stay exactly those of the two reads
//! made one after the other.

use std::time::{Duration, Instant};

use dynarelay::{dynamo::Store, http::HttpSettings};
use serde_json::{Value, json};

use crate::{
    fault_proxy::FaultProxy,
    helpers::{Running, TestApp, endpoint, graphql_at},
};

const QUERY: &str = r#"query($u: String!, $after: String) { user(userId: $u) {
  name
  newest: purchases(first: 2, order: DESC) { edges { node { purchasedAt } } }
  page: purchases(first: 3, after: $after) {
    edges { node { purchasedAt } } pageInfo { hasNextPage endCursor } } } }"#;

async fn post(server: &Running, variables: Value) -> Value {
    graphql_at(
        &reqwest::Client::new(),
        &server.url("/graphql"),
        QUERY,
        variables,
    )
    .await
}

/// With 400 ms added to every DynamoDB call, a user with two `purchases` selections answers in
/// about 400 ms, not the 800 ms or more of a GetItem followed by the Queries, and with the same
/// data as the same selections read on their own. Seen failing: with `Query.user` reading the
/// user first (no pages read ahead), the request took 851 ms.
#[tokio::test]
async fn the_user_and_its_pages_are_read_at_the_same_time() {
    let app = TestApp::spawn().await;
    app.put_user("ivy").await;
    let times: Vec<i64> = (0..7).map(|i| 1_700_000_000_000 + i * 1000).collect();
    app.put_purchases("ivy", &times).await;
    let proxy = FaultProxy::start(&endpoint()).await;
    let slow = Store::new(
        dynarelay::dynamo::client_for_local(&proxy.url()),
        app.store.tables().clone(),
    );
    let server = Running::start(slow, HttpSettings::default()).await;
    // One request first, so that connections to the proxy are open.
    let first = post(&server, json!({ "u": "ivy", "after": null })).await;
    assert!(first.get("errors").is_none(), "{first}");
    proxy.set_latency(Duration::from_millis(400));

    let cursor = first["data"]["user"]["page"]["pageInfo"]["endCursor"].clone();
    let started = Instant::now();
    let body = post(&server, json!({ "u": "ivy", "after": cursor })).await;
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_millis(750),
        "took {elapsed:?}: {body}"
    );
    let at = |i: usize| {
        json!({ "node": { "purchasedAt": chrono::DateTime::from_timestamp_millis(times[i])
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true) } })
    };
    assert_eq!(
        body["data"]["user"],
        json!({
            "name": "User ivy",
            "newest": { "edges": [at(6), at(5)] },
            "page": { "edges": [at(3), at(4), at(5)],
                      "pageInfo": { "hasNextPage": true,
                                    "endCursor": body["data"]["user"]["page"]["pageInfo"]["endCursor"] } },
        }),
        "{body}"
    );
    assert_ne!(
        body["data"]["user"]["page"]["pageInfo"]["endCursor"],
        cursor
    );

    // An unknown user is still null. A bad argument fails its own field, and as that field is
    // non-null (`PurchaseConnection!`), its user is null too (GraphQL's null propagation).
    proxy.set_latency(Duration::ZERO);
    let unknown = post(&server, json!({ "u": "nobody", "after": null })).await;
    assert_eq!(
        unknown,
        json!({ "data": { "user": null },
        "extensions": unknown["extensions"].clone() })
    );
    let bad = post(&server, json!({ "u": "ivy", "after": "not-a-cursor" })).await;
    assert_eq!(bad["data"], json!({ "user": null }), "{bad}");
    assert_eq!(bad["errors"][0]["path"], json!(["user", "page"]), "{bad}");
    assert_eq!(bad["errors"][0]["extensions"]["code"], "BAD_USER_INPUT");
}

/// A `purchases` selection left out by `@include(if: false)` or `@skip(if: true)`, literally or
/// through a variable, is not read ahead: the request costs the user's GetItem alone. The same
/// selection included costs the GetItem and the page's Query.
#[tokio::test]
async fn skipped_purchases_selections_are_not_read_ahead() {
    let app = TestApp::spawn().await;
    app.put_user("ivy").await;
    app.put_purchases("ivy", &[1_700_000_000_000]).await;
    let query = |directive: &str| {
        // Declared only where used: an unused variable fails validation.
        let declared = if directive.contains("$on") {
            "($on: Boolean!)"
        } else {
            ""
        };
        format!(
            r#"query{declared} {{ user(userId: "ivy") {{ name
              purchases(first: 1) {directive} {{ edges {{ node {{ purchasedAt }} }} }} }} }}"#
        )
    };
    let cases = [
        ("@include(if: false)", false, 1),
        ("@skip(if: true)", false, 1),
        ("@include(if: $on)", false, 1),
        ("@skip(if: $on)", true, 1),
        ("@include(if: $on)", true, 2),
        ("@skip(if: false)", false, 2),
    ];
    for (directive, on, calls) in cases {
        let response = app.graphql(&query(directive), json!({ "on": on })).await;
        let case = format!("{directive} with $on = {on}");
        assert!(response.get("errors").is_none(), "{case}: {response}");
        assert_eq!(response["data"]["user"]["name"], "User ivy", "{case}");
        assert_eq!(
            response["data"]["user"]["purchases"].is_object(),
            calls == 2,
            "{case}: {response}"
        );
        assert_eq!(
            response["extensions"]["cost"]["dynamodbCalls"], calls,
            "{case}: {response}"
        );
    }
}
