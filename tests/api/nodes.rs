//! Relay object identification: global ids refetch exactly their object through `node` and
//! `nodes`, and related objects of a whole page load in one BatchGetItem.

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Value, json};

use crate::helpers::{TestApp, error_code, product_item, purchase_item};

async fn with_product(app: &TestApp, sku: &str) {
    let item = product_item(sku, &format!("Product {sku}"), "books", "19.99");
    app.put_items(&app.tables().products.clone(), vec![item])
        .await;
}

#[tokio::test]
async fn every_global_id_refetches_exactly_its_object() {
    let app = TestApp::spawn().await;
    app.put_user("kim").await;
    with_product(&app, "SKU-00001").await;
    app.put_items(
        &app.tables().purchases.clone(),
        vec![purchase_item("kim", "1672531200123", "19.99")],
    )
    .await;
    let response = app
        .graphql(
            r#"{ user(userId: "kim") { id userId purchases(first: 1) { nodes { id purchasedAt amount } } }
                 product(sku: "SKU-00001") { id sku price } }"#,
            json!({}),
        )
        .await;
    let user = &response["data"]["user"];
    let purchase = &user["purchases"]["nodes"][0];
    let product = &response["data"]["product"];
    let ids = [
        user["id"].clone(),
        purchase["id"].clone(),
        product["id"].clone(),
    ];
    assert!(ids.iter().all(Value::is_string), "{response}");

    let refetch = app
        .graphql(
            "query($ids: [ID!]!) { nodes(ids: $ids) { __typename id
                 ... on User { userId } ... on Purchase { purchasedAt amount } ... on Product { sku price } } }",
            json!({ "ids": ids }),
        )
        .await;
    assert!(refetch.get("errors").is_none(), "{refetch}");
    let nodes = &refetch["data"]["nodes"];
    assert_eq!(
        nodes[0],
        json!({ "__typename": "User", "id": ids[0], "userId": "kim" })
    );
    assert_eq!(
        nodes[1],
        json!({ "__typename": "Purchase", "id": ids[1], "purchasedAt": "2023-01-01T00:00:00.123Z", "amount": "19.99" })
    );
    assert_eq!(
        nodes[2],
        json!({ "__typename": "Product", "id": ids[2], "sku": "SKU-00001", "price": "19.99" })
    );

    let one = app
        .graphql(
            "query($id: ID!) { node(id: $id) { id } }",
            json!({ "id": ids[1] }),
        )
        .await;
    assert_eq!(one["data"]["node"]["id"], ids[1]);
}

#[tokio::test]
async fn an_unknown_id_is_null_and_a_malformed_one_is_bad_user_input() {
    let app = TestApp::spawn().await;
    app.put_user("lee").await;
    let lee = app
        .graphql(r#"{ user(userId: "lee") { id } }"#, json!({}))
        .await["data"]["user"]["id"]
        .clone();
    // A well-formed id of a user that does not exist: "U" + S "nobody".
    let nobody = "VVMABm5vYm9keQ";
    let response = app
        .graphql(
            "query($ids: [ID!]!) { nodes(ids: $ids) { id } }",
            json!({ "ids": [nobody, lee] }),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    assert_eq!(response["data"]["nodes"], json!([null, { "id": lee }]));
    for bad in ["", "garbage!", "WA", "VVMABm5vYm9ke"] {
        let response = app
            .graphql(
                "query($id: ID!) { node(id: $id) { id } }",
                json!({ "id": bad }),
            )
            .await;
        assert_eq!(
            error_code(&response),
            Some("BAD_USER_INPUT"),
            "{bad:?}: {response}"
        );
        assert_eq!(response["errors"][0]["message"], "The id is not valid.");
    }
}

#[tokio::test]
async fn a_page_of_100_purchases_loads_their_users_and_products_in_one_batch_get() {
    let app = TestApp::spawn().await;
    app.put_user("max").await;
    for sku in ["SKU-A", "SKU-B", "SKU-C"] {
        with_product(&app, sku).await;
    }
    let items = (0..100)
        .map(|i| {
            let mut item = purchase_item("max", &(1_700_000_000_000i64 + i).to_string(), "1");
            item.insert(
                "sku".into(),
                AttributeValue::S(["SKU-A", "SKU-B", "SKU-C", "SKU-GONE"][i as usize % 4].into()),
            );
            item
        })
        .collect();
    app.put_items(&app.tables().purchases.clone(), items).await;

    let before = app.calls.snapshot();
    let response = app
        .graphql(
            r#"{ user(userId: "max") { purchases(first: 100) { nodes { user { name } product { sku } } } } }"#,
            json!({}),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    let nodes = response["data"]["user"]["purchases"]["nodes"]
        .as_array()
        .unwrap();
    assert_eq!(nodes.len(), 100);
    assert!(nodes.iter().all(|n| n["user"]["name"] == "User max"));
    assert_eq!(nodes[1]["product"]["sku"], "SKU-B");
    assert_eq!(
        nodes[3]["product"],
        Value::Null,
        "a product no longer listed is null"
    );
    let after = app.calls.snapshot();
    let delta =
        |op: &str| after.get(op).copied().unwrap_or(0) - before.get(op).copied().unwrap_or(0);
    assert_eq!(delta("BatchGetItem"), 1, "{before:?} -> {after:?}");
    assert_eq!(delta("GetItem"), 1, "only the root user lookup");
}

#[tokio::test]
async fn empty_or_oversized_key_values_are_bad_user_input_not_internal_errors() {
    let app = TestApp::spawn().await;
    let long = "x".repeat(3000);
    // "U" + S of length 0: a well-formed encoding of a key DynamoDB cannot hold.
    let empty_user_id = "VVMAAA";
    for (case, query, vars) in [
        (
            "empty userId",
            "query($v: String!) { user(userId: $v) { userId } }",
            json!({ "v": "" }),
        ),
        (
            "oversized userId",
            "query($v: String!) { user(userId: $v) { userId } }",
            json!({ "v": long }),
        ),
        (
            "empty sku",
            "query($v: String!) { product(sku: $v) { sku } }",
            json!({ "v": "" }),
        ),
        (
            "empty category",
            "query($v: String!) { products(category: $v) { nodes { sku } } }",
            json!({ "v": "" }),
        ),
        (
            "oversized category",
            "query($v: String!) { products(category: $v) { nodes { sku } } }",
            json!({ "v": long }),
        ),
        (
            "id of an empty key",
            "query($v: ID!) { node(id: $v) { id } }",
            json!({ "v": empty_user_id }),
        ),
        (
            "oversized userId in createUser",
            "mutation($v: String!) { createUser(input: { userId: $v, name: \"n\", email: \"a@b\" }) { user { userId } } }",
            json!({ "v": long }),
        ),
    ] {
        let response = app.graphql(query, vars).await;
        assert_eq!(
            error_code(&response),
            Some("BAD_USER_INPUT"),
            "{case}: {response}"
        );
    }
}
