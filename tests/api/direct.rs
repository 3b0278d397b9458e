//! The direct executor (`src/graphql/direct.rs`) answers documents async-graphql has executed
//! before; its answers must be async-graphql's, byte for byte. Every case here is sent as a
//! document seen for the first time (async-graphql answers: the reference) and as a document
//! executed before (the direct executor answers, or gives way), with the same variables, and
//! the two bodies must be equal. The metric `dynarelay_graphql_direct_executions_total` tells
//! which executor answered, so each case also states whether the direct one must have.
//!
//! On the single-table example (`examples/ecommerce`) with its data set: a collection of a
//! union, key templates, filters, sort-key ranges, both directions, a Scan.

use serde_json::{Value, json};

use crate::{
    ecommerce_data as data,
    helpers::{ModelApp, metric_sum, model_app, post_graphql_text},
};

const ANSWERED: &str = "dynarelay_graphql_direct_executions_total{outcome=\"answered\"}";

async fn answered(app: &ModelApp) -> f64 {
    let exposition = app.metrics().await;
    exposition
        .lines()
        .find_map(|line| line.strip_prefix(ANSWERED))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Sends `query` with `variables` (and `operation`) as a new document and as one executed
/// before, and returns the body, after checking both are the same and that the direct executor
/// answered the second exactly when `direct`.
async fn same_answer(
    app: &ModelApp,
    query: &str,
    variables: Value,
    operation: Option<&str>,
    direct: bool,
) -> Value {
    same_answer_in(app, query, variables, operation, direct, true).await
}

/// [`same_answer`]; `exact`: byte for byte. Not for several root fields: async-graphql puts
/// them in the order their reads end, the direct executor in the document's, as the GraphQL
/// spec asks; then the bodies must hold the same.
async fn same_answer_in(
    app: &ModelApp,
    query: &str,
    variables: Value,
    operation: Option<&str>,
    direct: bool,
    exact: bool,
) -> Value {
    // The document becomes one executed before: async-graphql executes it once, with variables
    // it accepts.
    let warm = query.to_owned();
    post_graphql_text(&app.router, &warm, variables.clone(), operation).await;
    // A text never sent before is a new document: async-graphql answers it.
    let fresh = format!("{query}\n# {}", crate::helpers::unique_prefix());
    let reference = post_graphql_text(&app.router, &fresh, variables.clone(), operation).await;
    let before = answered(app).await;
    let again = post_graphql_text(&app.router, &warm, variables, operation).await;
    let after = answered(app).await;
    let parsed: Value = serde_json::from_str(&again).expect("JSON");
    if exact {
        assert_eq!(again, reference, "the answers to {query} differ");
    } else {
        let expected: Value = serde_json::from_str(&reference).expect("JSON");
        assert_eq!(parsed, expected, "the answers to {query} differ");
    }
    assert_eq!(
        after - before,
        if direct { 1.0 } else { 0.0 },
        "the direct executor {} {query}",
        if direct { "did not answer" } else { "answered" }
    );
    parsed
}

const ORDERS: &str = "query($u: String!, $after: String, $status: OrderStatus) {
  customer(username: $u) { orders(first: 20, after: $after, status: $status) {
    edges { cursor node { placedAt total status itemCount } }
    pageInfo { hasNextPage endCursor } } } }";

const ACTIVITY: &str = "query($u: String!, $n: Int, $after: String, $order: SortOrder) {
  customer(username: $u) {
    __typename id name
    feed: activity(first: $n, after: $after, order: $order) {
      __typename
      edges { __typename cursor node { __typename
        ... on Order { placedAt total status itemCount id }
        ... on Address { label street postcode }
        ... on Customer { name joinedAt }
        ... on Node { id } } }
      nodes { ... on Address { city } }
      pageInfo { __typename hasNextPage hasPreviousPage startCursor endCursor } } } }";

#[tokio::test]
async fn the_direct_executor_answers_as_async_graphql_does() {
    let app = model_app("examples/ecommerce/dynarelay.toml").await;
    let table = app.table(data::TABLE);
    let set = data::generate(data::SEED);
    data::write(&app.store, &table, &set).await.unwrap();
    let big = data::BIG_CUSTOMER;

    // The benchmark's pages, forward through the customer's orders and back.
    let first = same_answer(
        &app,
        ORDERS,
        json!({ "u": big, "after": null, "status": null }),
        None,
        true,
    )
    .await;
    let end = first["data"]["customer"]["orders"]["pageInfo"]["endCursor"].clone();
    assert!(end.is_string(), "{first}");
    let second = same_answer(&app, ORDERS, json!({ "u": big, "after": end }), None, true).await;
    assert_ne!(first, second);
    same_answer(
        &app,
        ORDERS,
        json!({ "u": big, "status": "SHIPPED" }),
        None,
        true,
    )
    .await;

    // A collection of a union with every kind of field, aliases, fragments, `nodes`, all of
    // `pageInfo`, both orders and both directions.
    let page = same_answer(
        &app,
        ACTIVITY,
        json!({ "u": big, "n": 7, "order": "DESC" }),
        None,
        true,
    )
    .await;
    let feed = &page["data"]["customer"]["feed"];
    assert_eq!(feed["edges"].as_array().map(Vec::len), Some(7), "{page}");
    let end = feed["pageInfo"]["endCursor"].clone();
    same_answer(
        &app,
        ACTIVITY,
        json!({ "u": big, "n": 100, "after": end }),
        None,
        true,
    )
    .await;
    let backward = "query($u: String!, $before: String) {
      customer(username: $u) { activity(last: 3, before: $before) {
        edges { cursor node { __typename } } pageInfo { hasPreviousPage startCursor } } } }";
    let last = same_answer(&app, backward, json!({ "u": big }), None, true).await;
    let start = last["data"]["customer"]["activity"]["pageInfo"]["startCursor"].clone();
    same_answer(
        &app,
        backward,
        json!({ "u": big, "before": start }),
        None,
        true,
    )
    .await;

    // Named fragments, a sort-key range and prefix, two root fields, a Scan, an index, an
    // operation chosen by name, and a customer that does not exist.
    let named = "query Other { customers(first: 2) { pageInfo { hasNextPage } } }
      query Orders($u: String!, $from: DateTime, $until: DateTime, $in: String) {
        customer(username: $u) {
          range: orders(first: 5, placedFrom: $from, placedUntil: $until, order: DESC) {
            ...Page }
          month: orders(first: 5, placedIn: $in) { ...Page } }
        nobody: customer(username: \"no such customer\") { name }
        customers(first: 3) { edges { node { username email joinedAt } } }
        shipped: ordersByStatus(status: SHIPPED, first: 4) { nodes { username total } }
        __typename }
      fragment Page on OrderConnection {
        edges { node { ...Order } } pageInfo { hasNextPage endCursor } }
      fragment Order on Order { orderId placedAt }";
    let both = same_answer_in(
        &app,
        named,
        json!({ "u": big, "from": "2024-01-01T00:00:00Z", "until": "2026-12-31T00:00:00Z",
                "in": "2026-12" }),
        Some("Orders"),
        true,
        false,
    )
    .await;
    assert!(both["data"]["nobody"].is_null(), "{both}");
    assert!(
        both["data"]["customer"]["month"]["edges"][0]["node"]["placedAt"].is_string(),
        "{both}"
    );
    // A document is planned for the first operation executed directly; its others are
    // answered by async-graphql.
    same_answer(&app, named, json!({}), Some("Other"), false).await;
    same_answer(
        &app,
        ORDERS,
        json!({ "u": data::EMPTY_CUSTOMER }),
        None,
        true,
    )
    .await;

    // Requests it gives way on, answered by async-graphql as before: a cursor of another
    // connection, a page too large, a variable of the wrong type (after the same document was
    // answered with good ones), an unknown enum value.
    let cursor = first["data"]["customer"]["orders"]["edges"][0]["cursor"].clone();
    let refused = same_answer(
        &app,
        ACTIVITY,
        json!({ "u": big, "after": cursor }),
        None,
        false,
    )
    .await;
    assert_eq!(
        refused["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{refused}"
    );
    same_answer(&app, ACTIVITY, json!({ "u": big, "n": 1001 }), None, false).await;
    same_answer(&app, ORDERS, json!({ "u": big, "after": 5 }), None, false).await;
    same_answer(&app, ORDERS, json!({ "u": 7 }), None, false).await;
    same_answer(
        &app,
        ORDERS,
        json!({ "u": big, "status": "LOST" }),
        None,
        false,
    )
    .await;

    // Documents it does not answer at all: a relation, a directive, a connection under nodes,
    // a refetch by id.
    for query in [
        "query($u: String!) { customer(username: $u) { orders(first: 3) {
           nodes { customer { name } } } } }",
        "query($u: String!, $x: Boolean!) { customer(username: $u) {
           name @include(if: $x) } }",
        "query($u: String!) { customer(username: $u) { orders(first: 2) {
           nodes { items(first: 2) { nodes { product } } } } } }",
    ] {
        same_answer(&app, query, json!({ "u": big, "x": true }), None, false).await;
    }
    let id = page["data"]["customer"]["id"].clone();
    same_answer(
        &app,
        "query($id: ID!) { node(id: $id) { id } }",
        json!({ "id": id }),
        None,
        false,
    )
    .await;
    assert!(
        metric_sum(
            &app.metrics().await,
            "dynarelay_graphql_direct_executions_total"
        )
        .is_some()
    );
}
