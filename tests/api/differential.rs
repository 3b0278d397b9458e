//! The differential protocol suite (`tests/clients/protocol-differential.mjs`): a generated
//! corpus of GraphQL-over-HTTP requests (documents with an error at every nesting level, in
//! anonymous, named and several-operation documents; good and bad variables; POST, GET and
//! persisted queries; every kind of `operationName`; four `Accept` headers) sent to dynarelay
//! and to graphql-js 16 behind graphql-http's own handler on `schema.graphql`, resolving from
//! values dynarelay recorded. Status codes, `data` and error paths must be equal, but for the
//! differences the script lists as decisions, each documented in
//! docs/src/reference/graphql-over-http.md.

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::http::HttpSettings;
use serde_json::{Value, json};

use crate::helpers::{Running, TestApp, product_item, run_node};

/// Runs the corpus against a server on a real socket. Also checks what the answers alone
/// cannot show: mutations ran exactly as often as dynarelay answered that they did (so no GET
/// ran one quietly), and every documented decision still explains some difference (so the
/// list cannot go stale), and is in the GraphQL-over-HTTP reference.
#[tokio::test]
async fn dynarelay_answers_the_protocol_corpus_as_graphql_js_does() {
    let app = TestApp::spawn().await;
    let users = ["diff-ada", "diff-bob", "diff-cy"];
    let buyer = "diff-buyer";
    for user in users.iter().chain([&buyer]) {
        app.put_user(user).await;
    }
    app.put_purchases(
        users[0],
        &[1_700_000_000_101, 1_700_000_000_202, 1_700_000_000_303],
    )
    .await;
    app.put_purchases(users[1], &[1_700_000_000_404, 1_700_000_000_505])
        .await;
    app.put_purchases(users[2], &[1_700_000_000_606, 1_700_000_000_707])
        .await;
    let category = "diff-books";
    app.put_items(
        &app.tables().products.clone(),
        vec![
            product_item("SKU-00001", "Field Guide", category, "19.99"),
            product_item("SKU-00002", "Pocket Atlas", category, "4.5"),
            product_item("SKU-00003", "Star Chart", category, "7"),
        ],
    )
    .await;
    let id = app
        .graphql(
            "query($u: String!) { user(userId: $u) { id } }",
            json!({ "u": users[0] }),
        )
        .await["data"]["user"]["id"]
        .clone();
    let server = Running::start(app.store.clone(), HttpSettings::default()).await;
    let fixture = json!({ "users": users, "userId": id, "category": category, "buyer": buyer });
    let run = run_node(
        "protocol-differential.mjs",
        &[
            &server.url("/graphql"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/schema.graphql"),
            &fixture.to_string(),
        ],
        &[],
    )
    .await;
    let summary: Value = run
        .stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("no summary\n{}\n{}", run.stdout, run.stderr));
    assert_eq!(
        summary["undocumentedCount"], 0,
        "differences that are no documented decision:\n{:#}",
        summary["undocumented"]
    );
    run.assert_success();
    eprintln!("{summary}");
    let compared = summary["compared"].as_u64().unwrap();
    assert!(compared >= 2_000, "only {compared} requests compared");

    let reference = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/src/reference/graphql-over-http.md"
    ))
    .unwrap();
    for (decision, count) in summary["decisions"].as_object().unwrap() {
        assert!(
            count.as_u64().unwrap() > 0,
            "the decision `{decision}` explains no difference any more: remove it"
        );
        assert!(
            reference.contains(&format!("`{decision}`")),
            "the decision `{decision}` is not documented in docs/src/reference/graphql-over-http.md"
        );
    }

    // Every purchase the buyer has was answered as created: no GET, and no request error, ran a
    // mutation quietly.
    let bought = app
        .query_all(
            &app.tables().purchases.clone(),
            None,
            ("userId", buyer),
            true,
        )
        .await;
    let executed = summary["executedMutations"].as_u64().unwrap();
    assert!(executed > 0, "no mutation ran: {summary}");
    assert_eq!(bought.len() as u64, executed, "{summary}");
    assert!(
        bought
            .iter()
            .all(|item| item.get("quantity") == Some(&AttributeValue::N("1".to_owned()))),
        "{bought:?}"
    );
}
