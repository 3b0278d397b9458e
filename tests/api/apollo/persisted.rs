//! Automatic Persisted Queries through Apollo's `PersistedQueryLink`: hashes alone once
//! registered, the checks failing on a server without persisted queries, and the fall-back to
//! full queries when they are off.

use dynarelay::http::HttpSettings;
use serde_json::{Value, json};

use crate::helpers::{Running, TestApp, run_node};

/// A few users to page through, on a server answering Apollo persisted queries.
async fn apq_server(http: HttpSettings) -> (TestApp, Running) {
    let app = TestApp::spawn().await;
    for i in 0..5 {
        app.put_user(&format!("apq-user-{i}")).await;
    }
    let server = Running::start(app.store.clone(), http).await;
    (app, server)
}

/// Apollo's `PersistedQueryLink` (SHA-256 from node:crypto) works against the server, with
/// hashes over POST and over GET: an unknown hash gets `PersistedQueryNotFound` (code
/// `PERSISTED_QUERY_NOT_FOUND`), the retry with the full query registers it, and the next
/// execution sends the hash alone and gets the same data as a plain request. With GET hashes,
/// mutations still go over POST and run from their hash once registered.
///
/// Seen to fail: before the server supported persisted queries, the first hash-only request got
/// a `BAD_USER_INPUT` syntax error and the script failed with "the first execution failed";
/// `apollo_apq_checks_fail_on_a_server_without_persisted_queries` runs the script against a
/// server with them turned off and with responses faked as a server that forgets hashes, does
/// not support them, or errs on a known hash.
#[tokio::test]
async fn apollo_persisted_query_link_registers_then_sends_hashes_alone() {
    let (_app, server) = apq_server(HttpSettings::default()).await;
    let run = run_node("apollo-apq.mjs", &[&server.url("/graphql")], &[]).await;
    run.assert_success();
    let line = run.stdout.lines().last().unwrap_or_default();
    let got: Value = serde_json::from_str(line).unwrap();
    assert_eq!(
        got,
        json!({ "query, hashes over POST": 3, "query, hashes over GET": 3, "mutations": 2 }),
        "{}",
        run.stdout
    );
}

/// The checks of `apollo-apq.mjs` catch a server without working persisted queries.
///
/// Seen to fail: each faked server fails the script at the check named below. A server with
/// persisted queries turned off answers the first hash with `PERSISTED_QUERY_NOT_SUPPORTED`, and
/// the script fails at its first check.
#[tokio::test]
async fn apollo_apq_checks_fail_on_a_server_without_persisted_queries() {
    let (_app, server) = apq_server(HttpSettings::default()).await;
    let url = server.url("/graphql");
    let fault = |name| {
        let url = url.clone();
        async move { run_node("apollo-apq.mjs", &[url.as_str(), "--fault", name], &[]).await }
    };
    let (forget, unsupported, hash_error) =
        tokio::join!(fault("forget"), fault("unsupported"), fault("hash-error"));
    // Every hash gets PersistedQueryNotFound: Apollo sends the full query every time.
    forget.assert_failure_mentioning(
        "APQ: query, hashes over POST, request 3: expected 200 with data and no errors",
    );
    // PersistedQueryNotSupported: Apollo turns hashes off for good.
    unsupported.assert_failure_mentioning(
        "APQ: query, hashes over POST, request 1: an unknown hash must get PersistedQueryNotFound",
    );
    // A registered hash answered with an error: the execution fails.
    hash_error
        .assert_failure_mentioning("APQ: query, hashes over POST: the second execution failed");

    // A real server with persisted queries turned off fails the protocol checks...
    let (_app, off) = apq_server(HttpSettings {
        persisted_queries: 0,
        ..HttpSettings::default()
    })
    .await;
    run_node("apollo-apq.mjs", &[&off.url("/graphql")], &[])
        .await
        .assert_failure_mentioning(
            "APQ: query, hashes over POST, request 1: an unknown hash must get PersistedQueryNotFound",
        );
    // ...and the turned-off checks fail on a server that has them on.
    run_node("apollo-apq.mjs", &[&url, "--turned-off"], &[])
        .await
        .assert_failure_mentioning("APQ: turned off: the first request must send a hash");
}

/// With persisted queries turned off (`--persisted-queries 0`), Apollo clients that use the
/// persisted-query link keep working: the first hash gets `PERSISTED_QUERY_NOT_SUPPORTED`, and
/// the link then sends full queries only. Seen to fail: the same script against a server with
/// persisted queries on (the end of the test above).
#[tokio::test]
async fn apollo_clients_fall_back_to_full_queries_when_persisted_queries_are_off() {
    let (_app, off) = apq_server(HttpSettings {
        persisted_queries: 0,
        ..HttpSettings::default()
    })
    .await;
    let run = run_node(
        "apollo-apq.mjs",
        &[&off.url("/graphql"), "--turned-off"],
        &[],
    )
    .await;
    run.assert_success();
    assert_eq!(
        run.stdout.lines().last().unwrap_or_default(),
        r#"{"turned off":4}"#,
        "{}",
        run.stdout
    );
}
