//! `User.purchases`: forward paging over a DynamoDB Query, exact `hasNextPage`, exact numbers,
//! and coded errors for bad arguments.

use chrono::{DateTime, SecondsFormat};
use dynarelay::graphql::error::INVALID_CURSOR;
use serde_json::{Value, json};

use crate::helpers::{TestApp, error_code, purchase_item};

const PAGE: &str = "query Page($user: String!, $first: Int, $after: String) {
  user(userId: $user) {
    purchases(first: $first, after: $after) {
      edges { cursor node { purchasedAt amount } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}";

/// One page's connection object, failing the test on any GraphQL error.
async fn page(app: &TestApp, user: &str, first: Option<i64>, after: Option<&str>) -> Value {
    let response = app
        .graphql(
            PAGE,
            json!({ "user": user, "first": first, "after": after }),
        )
        .await;
    assert!(
        response.get("errors").is_none(),
        "unexpected errors: {response}"
    );
    response["data"]["user"]["purchases"].clone()
}

fn times(connection: &Value) -> Vec<String> {
    connection["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|edge| {
            edge["node"]["purchasedAt"]
                .as_str()
                .expect("purchasedAt")
                .to_owned()
        })
        .collect()
}

/// Walks the whole connection with `first`, checking each page's `pageInfo` against its edges,
/// and returns the pages' `purchasedAt` values.
async fn walk(app: &TestApp, user: &str, first: Option<i64>) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut after: Option<String> = None;
    loop {
        assert!(pages.len() < 1000, "the walk does not end");
        let connection = page(app, user, first, after.as_deref()).await;
        let info = &connection["pageInfo"];
        let edges = connection["edges"].as_array().expect("edges");
        assert_eq!(
            info["startCursor"],
            edges.first().map_or(Value::Null, |e| e["cursor"].clone())
        );
        assert_eq!(
            info["endCursor"],
            edges.last().map_or(Value::Null, |e| e["cursor"].clone())
        );
        assert_eq!(
            info["hasPreviousPage"], false,
            "forward paging does not claim a previous page"
        );
        pages.push(times(&connection));
        if info["hasNextPage"] != true {
            return pages;
        }
        after = Some(
            info["endCursor"]
                .as_str()
                .expect("endCursor while hasNextPage")
                .to_owned(),
        );
    }
}

fn iso(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms)
        .unwrap()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Deterministic, unique, unordered purchase times.
fn scattered_times(n: usize, salt: i64) -> Vec<i64> {
    (0..n as i64)
        .map(|i| 1_700_000_000_000 + ((i * 7919 + salt) % 100_003) * 1_000 + i)
        .collect()
}

#[tokio::test]
async fn walking_with_any_page_size_returns_every_purchase_once_in_sort_order() {
    let app = TestApp::spawn().await;
    let mine = scattered_times(203, 0);
    app.put_purchases("alice", &mine).await;
    // Neighbouring partitions with interleaved times must not leak into Alice's pages.
    app.put_purchases("alicf", &scattered_times(30, 11)).await;
    app.put_purchases("alicd", &scattered_times(30, 13)).await;
    app.put_user("alice").await;

    let mut sorted = mine.clone();
    sorted.sort_unstable();
    let expected: Vec<String> = sorted.into_iter().map(iso).collect();

    for first in [1, 2, 7, 20, 100] {
        let pages = walk(&app, "alice", Some(first)).await;
        let (last, full) = pages.split_last().expect("at least one page");
        for (i, p) in full.iter().enumerate() {
            assert_eq!(
                p.len(),
                first as usize,
                "first={first}: page {i} is not full"
            );
        }
        assert!(!last.is_empty(), "first={first}: the last page is empty");
        assert_eq!(
            pages.concat(),
            expected,
            "first={first}: items differ from the partition"
        );
    }
}

#[tokio::test]
async fn has_next_page_is_exact_for_partitions_of_0_1_first_and_first_plus_1() {
    let app = TestApp::spawn().await;
    let first = 5;
    for (user, size) in [
        ("zero", 0),
        ("one", 1),
        ("five", 5),
        ("six", 6),
        ("twenty", 20),
        ("twenty-one", 21),
    ] {
        app.put_user(user).await;
        app.put_purchases(user, &scattered_times(size, size as i64))
            .await;
    }
    for (user, size, first, expected_pages) in [
        ("zero", 0, Some(first), vec![0]),
        ("one", 1, Some(first), vec![1]),
        ("five", 5, Some(first), vec![5]),
        ("six", 6, Some(first), vec![5, 1]),
        // No `first`: the default page size of 20.
        ("twenty", 20, None, vec![20]),
        ("twenty-one", 21, None, vec![20, 1]),
    ] {
        let pages = walk(&app, user, first).await;
        let sizes: Vec<usize> = pages.iter().map(Vec::len).collect();
        assert_eq!(
            sizes, expected_pages,
            "{user}: partition of {size} with first={first:?}"
        );
    }
}

/// Guards the test above: DynamoDB itself reports a LastEvaluatedKey when exactly `Limit` items
/// remain, so a server that trusted it would promise an empty next page.
#[tokio::test]
async fn dynamodb_returns_a_last_evaluated_key_when_exactly_limit_items_remain() {
    let app = TestApp::spawn().await;
    app.put_purchases("five", &scattered_times(5, 1)).await;
    let out = app
        .client()
        .query()
        .table_name(&app.tables().purchases)
        .key_condition_expression("userId = :u")
        .expression_attribute_values(
            ":u",
            aws_sdk_dynamodb::types::AttributeValue::S("five".into()),
        )
        .limit(5)
        .send()
        .await
        .expect("query");
    assert_eq!(out.count, 5);
    assert!(out.last_evaluated_key.is_some());
}

#[tokio::test]
async fn numeric_sort_keys_and_decimal_amounts_round_trip_exactly() {
    let app = TestApp::spawn().await;
    let amounts = [
        ("1672531200123", "19.99"),
        ("1672531200124", "12345678901234567890123456789012345678"),
        ("1672531200125", "0.00000000000000000000000000000000000001"),
        ("1672531200126", "-1234567890123456789.0123456789012345678"),
    ];
    let items = amounts
        .iter()
        .map(|(at, amount)| purchase_item("bob", at, amount))
        .collect();
    app.put_items(&app.tables().purchases.clone(), items).await;
    app.put_user("bob").await;

    // One item per page, so every cursor carries one of the exact numeric keys.
    let mut after: Option<String> = None;
    for (at, amount) in amounts {
        let connection = page(&app, "bob", Some(1), after.as_deref()).await;
        let node = &connection["edges"][0]["node"];
        let millis: i64 = at.parse().unwrap();
        assert_eq!(node["purchasedAt"], iso(millis), "purchasedAt of {at}");
        assert_eq!(node["amount"], amount, "amount stays an exact string");
        after = connection["pageInfo"]["endCursor"]
            .as_str()
            .map(str::to_owned);
    }
    assert_eq!(iso(1_672_531_200_123), "2023-01-01T00:00:00.123Z");
    let end = page(&app, "bob", Some(1), after.as_deref()).await;
    assert_eq!(end["edges"], json!([]));
    assert_eq!(end["pageInfo"]["hasNextPage"], false);
}

#[tokio::test]
async fn bad_paging_arguments_get_bad_user_input_without_internal_details() {
    let app = TestApp::spawn().await;
    app.put_user("carol").await;
    app.put_purchases("carol", &scattered_times(3, 0)).await;
    app.put_user("dave").await;
    app.put_purchases("dave", &scattered_times(3, 1)).await;
    let daves_cursor = page(&app, "dave", Some(1), None).await["pageInfo"]["endCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let valid_base64_of_nonsense = "AQJTAAN4eXo";

    for (case, first, after, message) in [
        (
            "negative first",
            json!(-1),
            Value::Null,
            "`first` must not be negative.",
        ),
        (
            "first above the maximum",
            json!(101),
            Value::Null,
            "`first` must be at most 100.",
        ),
        (
            "garbage after",
            json!(2),
            json!("definitely not a cursor"),
            INVALID_CURSOR,
        ),
        (
            "well-formed base64, not a cursor",
            json!(2),
            json!(valid_base64_of_nonsense),
            INVALID_CURSOR,
        ),
        (
            "another user's cursor",
            json!(2),
            json!(daves_cursor),
            INVALID_CURSOR,
        ),
        ("empty after", json!(2), json!(""), INVALID_CURSOR),
    ] {
        let response = app
            .graphql(
                PAGE,
                json!({ "user": "carol", "first": first, "after": after }),
            )
            .await;
        assert_eq!(
            error_code(&response),
            Some("BAD_USER_INPUT"),
            "{case}: {response}"
        );
        assert_eq!(response["errors"][0]["message"], message, "{case}");
        assert_eq!(response["data"]["user"], Value::Null, "{case}");
        // The errors, not `extensions.cost`, which names DynamoDB calls on purpose.
        let text = response["errors"].to_string().to_lowercase();
        for leak in ["dynamo", "exception", "validation", "aws", "sdk"] {
            assert!(
                !text.contains(leak),
                "{case}: response mentions {leak:?}: {response}"
            );
        }
    }
}

#[tokio::test]
async fn first_zero_returns_no_edges_but_answers_has_next_page() {
    let app = TestApp::spawn().await;
    app.put_user("erin").await;
    app.put_purchases("erin", &scattered_times(2, 0)).await;
    app.put_user("frank").await;
    let erin = page(&app, "erin", Some(0), None).await;
    assert_eq!(erin["edges"], json!([]));
    assert_eq!(erin["pageInfo"]["hasNextPage"], true);
    let frank = page(&app, "frank", Some(0), None).await;
    assert_eq!(frank["pageInfo"]["hasNextPage"], false);
}

#[tokio::test]
async fn an_unknown_user_is_null_and_a_known_one_carries_its_fields() {
    let app = TestApp::spawn().await;
    app.put_user("gina").await;
    let response = app
        .graphql(
            r#"{ nobody: user(userId: "nobody") { userId } gina: user(userId: "gina") { userId name email createdAt } }"#,
            json!({}),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    assert_eq!(response["data"]["nobody"], Value::Null);
    assert_eq!(
        response["data"]["gina"],
        json!({ "userId": "gina", "name": "User gina", "email": "gina@example.com",
                "createdAt": "2023-01-01T00:00:00.000Z" })
    );
}

#[tokio::test]
async fn a_malformed_item_gives_a_masked_internal_error() {
    let app = TestApp::spawn().await;
    app.put_user("hank").await;
    let mut item = purchase_item("hank", "1672531200123", "1");
    item.insert(
        "status".into(),
        aws_sdk_dynamodb::types::AttributeValue::S("LOST".into()),
    );
    app.put_items(&app.tables().purchases.clone(), vec![item])
        .await;
    let response = app
        .graphql(
            "query($user: String!) { user(userId: $user) { purchases(first: 5) { edges { node { purchasedAt status } } } } }",
            json!({ "user": "hank" }),
        )
        .await;
    assert_eq!(
        error_code(&response),
        Some("INTERNAL_SERVER_ERROR"),
        "{response}"
    );
    assert_eq!(response["errors"][0]["message"], "Internal server error.");
    assert!(!response.to_string().contains("LOST"));
}

#[tokio::test]
async fn contradictory_paging_and_range_arguments_get_bad_user_input() {
    let app = TestApp::spawn().await;
    app.put_user("ida").await;
    app.put_purchases("ida", &scattered_times(3, 0)).await;
    let cursor = page(&app, "ida", Some(1), None).await["pageInfo"]["endCursor"].clone();
    let query = "query($first: Int, $after: String, $last: Int, $before: String,
                      $since: DateTime, $until: DateTime) {
      user(userId: \"ida\") { purchases(first: $first, after: $after, last: $last,
                                        before: $before, since: $since, until: $until) {
        edges { cursor } } } }";
    for (case, vars, message) in [
        (
            "first and last",
            json!({ "first": 1, "last": 1 }),
            "Pass either `first` or `last`, not both.",
        ),
        (
            "last with after",
            json!({ "last": 1, "after": cursor }),
            "Use `after` only with `first`, and `before` only with `last`.",
        ),
        (
            "first with before",
            json!({ "first": 1, "before": cursor }),
            "Use `after` only with `first`, and `before` only with `last`.",
        ),
        (
            "negative last",
            json!({ "last": -2 }),
            "`last` must not be negative.",
        ),
        (
            "last above the maximum",
            json!({ "last": 1000 }),
            "`last` must be at most 100.",
        ),
        (
            "since after until",
            json!({ "since": "2024-01-02T00:00:00Z", "until": "2024-01-01T00:00:00Z" }),
            "`since` must not be later than `until`.",
        ),
    ] {
        let response = app.graphql(query, vars).await;
        assert_eq!(
            error_code(&response),
            Some("BAD_USER_INPUT"),
            "{case}: {response}"
        );
        assert_eq!(response["errors"][0]["message"], message, "{case}");
    }
}

#[tokio::test]
async fn a_cursor_works_in_both_orders_but_not_under_other_filters() {
    let app = TestApp::spawn().await;
    app.put_user("jo").await;
    let times = [1_700_000_000_001, 1_700_000_000_002, 1_700_000_000_003];
    app.put_purchases("jo", &times).await;
    let query = "query($after: String, $order: SortOrder, $status: PurchaseStatus) {
      user(userId: \"jo\") { purchases(first: 5, after: $after, order: $order, status: $status) {
        edges { cursor node { purchasedAt } } } } }";
    let all = app.graphql(query, json!({})).await;
    let middle = all["data"]["user"]["purchases"]["edges"][1]["cursor"].clone();
    let after_middle = |r: &Value| -> Vec<String> {
        r["data"]["user"]["purchases"]["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"))
            .iter()
            .map(|e| e["node"]["purchasedAt"].as_str().unwrap().to_owned())
            .collect()
    };
    let asc = app.graphql(query, json!({ "after": middle })).await;
    assert_eq!(after_middle(&asc), [iso(times[2])]);
    let desc = app
        .graphql(query, json!({ "after": middle, "order": "DESC" }))
        .await;
    assert_eq!(after_middle(&desc), [iso(times[0])]);
    let filtered = app
        .graphql(query, json!({ "after": middle, "status": "PAID" }))
        .await;
    assert_eq!(error_code(&filtered), Some("BAD_USER_INPUT"), "{filtered}");
}

#[tokio::test]
async fn an_inverted_price_range_and_a_backward_users_page_are_refused() {
    let app = TestApp::spawn().await;
    let response = app
        .graphql(r#"{ products(category: "books", minPrice: "20", maxPrice: "19.99") { edges { cursor } } }"#, json!({}))
        .await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
    assert_eq!(
        response["errors"][0]["message"],
        "`minPrice` must not exceed `maxPrice`."
    );
    // `users` is a Scan: it has no backward arguments at all.
    let response = app
        .graphql("{ users(last: 2) { edges { cursor } } }", json!({}))
        .await;
    assert!(
        response["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("last"),
        "{response}"
    );
}
