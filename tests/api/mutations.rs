//! Mutations: validated input, conditional writes that never overwrite, and a `purchaseEdge`
//! whose cursor continues the buyer's purchases connection.

use serde_json::{Value, json};

use crate::helpers::{TestApp, error_code};

const CREATE_USER: &str = "mutation($input: CreateUserInput!) { createUser(input: $input) { user { id userId name email } } }";
const CREATE_PRODUCT: &str = "mutation($input: CreateProductInput!) { createProduct(input: $input) { product { id sku price } } }";
const CREATE_PURCHASE: &str =
    "mutation($input: CreatePurchaseInput!) { createPurchase(input: $input) {
    purchase { id purchasedAt amount status quantity user { userId } product { sku } }
    purchaseEdge { cursor node { id purchasedAt } } } }";
const DELETE_PURCHASE: &str =
    "mutation($id: ID!) { deletePurchase(input: { id: $id }) { deletedPurchaseId } }";

async fn ok(app: &TestApp, query: &str, vars: Value) -> Value {
    let response = app.graphql(query, vars).await;
    assert!(response.get("errors").is_none(), "{response}");
    response["data"].clone()
}

async fn refused(app: &TestApp, query: &str, vars: Value, message: &str) {
    let response = app.graphql(query, vars).await;
    assert_eq!(
        error_code(&response),
        Some("BAD_USER_INPUT"),
        "{message}: {response}"
    );
    if !message.is_empty() {
        assert_eq!(response["errors"][0]["message"], message, "{response}");
    }
}

async fn shop(app: &TestApp) {
    ok(
        app,
        CREATE_USER,
        json!({ "input": { "userId": "nia", "name": "Nia", "email": "nia@example.com" } }),
    )
    .await;
    ok(app, CREATE_PRODUCT, json!({ "input": { "sku": "SKU-9", "name": "Lamp", "category": "home", "price": "19.99" } })).await;
}

#[tokio::test]
async fn created_objects_are_readable_and_the_purchase_edge_continues_the_connection() {
    let app = TestApp::spawn().await;
    shop(&app).await;
    let purchase = |at: &str, amount: &str| json!({ "input": { "userId": "nia", "sku": "SKU-9", "quantity": 2, "amount": amount, "purchasedAt": at } });
    ok(
        &app,
        CREATE_PURCHASE,
        purchase("2024-01-01T00:00:00.000Z", "39.98"),
    )
    .await;
    let created = ok(
        &app,
        CREATE_PURCHASE,
        purchase(
            "2024-02-01T00:00:00.000Z",
            "12345678901234567890123456789012345678",
        ),
    )
    .await;
    ok(
        &app,
        CREATE_PURCHASE,
        purchase("2024-03-01T00:00:00.000Z", "0"),
    )
    .await;
    let p = &created["createPurchase"]["purchase"];
    assert_eq!(p["amount"], "12345678901234567890123456789012345678");
    assert_eq!(p["status"], "PENDING");
    assert_eq!(p["user"]["userId"], "nia");
    assert_eq!(p["product"]["sku"], "SKU-9");
    let edge = &created["createPurchase"]["purchaseEdge"];
    assert_eq!(edge["node"]["id"], p["id"]);

    // The edge's cursor is a position in Nia's unfiltered purchases, in both orders.
    let page = "query($after: String, $order: SortOrder) { user(userId: \"nia\") {
        purchases(first: 5, after: $after, order: $order) { nodes { purchasedAt } } } }";
    let after = ok(&app, page, json!({ "after": edge["cursor"] })).await;
    assert_eq!(
        after["user"]["purchases"]["nodes"],
        json!([{ "purchasedAt": "2024-03-01T00:00:00.000Z" }])
    );
    let before = ok(
        &app,
        page,
        json!({ "after": edge["cursor"], "order": "DESC" }),
    )
    .await;
    assert_eq!(
        before["user"]["purchases"]["nodes"],
        json!([{ "purchasedAt": "2024-01-01T00:00:00.000Z" }])
    );

    let node = ok(
        &app,
        "query($id: ID!) { node(id: $id) { ... on Purchase { amount } } }",
        json!({ "id": p["id"] }),
    )
    .await;
    assert_eq!(
        node["node"]["amount"],
        "12345678901234567890123456789012345678"
    );
}

#[tokio::test]
async fn invalid_input_is_refused_before_anything_is_written() {
    let app = TestApp::spawn().await;
    shop(&app).await;
    let user =
        |id: &str, email: &str| json!({ "input": { "userId": id, "name": "X", "email": email } });
    refused(
        &app,
        CREATE_USER,
        user("", "x@example.com"),
        "`userId` must not be empty.",
    )
    .await;
    refused(
        &app,
        CREATE_USER,
        user("x", "not an email"),
        "`email` must be an email address.",
    )
    .await;
    refused(
        &app,
        CREATE_USER,
        user("nia", "other@example.com"),
        "A user with this `userId` already exists.",
    )
    .await;
    let product = |sku: &str, price: Value| json!({ "input": { "sku": sku, "name": "X", "category": "c", "price": price } });
    refused(
        &app,
        CREATE_PRODUCT,
        product("SKU-1", json!("-0.01")),
        "`price` must be at least 0.",
    )
    .await;
    refused(
        &app,
        CREATE_PRODUCT,
        product("SKU-9", json!("1")),
        "A product with this `sku` already exists.",
    )
    .await;
    // Not exact decimals: a JSON fraction, and 39 significant digits.
    refused(&app, CREATE_PRODUCT, product("SKU-2", json!(19.99)), "").await;
    refused(
        &app,
        CREATE_PRODUCT,
        product("SKU-3", json!("123456789012345678901234567890123456789")),
        "",
    )
    .await;

    let purchase = |user: &str, sku: &str, quantity: i32, amount: &str| {
        json!({ "input": { "userId": user, "sku": sku, "quantity": quantity, "amount": amount,
                           "purchasedAt": "2024-05-05T05:05:05.005Z" } })
    };
    refused(
        &app,
        CREATE_PURCHASE,
        purchase("nia", "SKU-9", 0, "1"),
        "`quantity` must be at least 1.",
    )
    .await;
    refused(
        &app,
        CREATE_PURCHASE,
        purchase("nia", "SKU-9", 1, "-5"),
        "`amount` must be at least 0.",
    )
    .await;
    refused(
        &app,
        CREATE_PURCHASE,
        purchase("nobody", "SKU-9", 1, "5"),
        "No user has this `userId`.",
    )
    .await;
    refused(
        &app,
        CREATE_PURCHASE,
        purchase("nia", "SKU-404", 1, "5"),
        "No product has this `sku`.",
    )
    .await;
    ok(&app, CREATE_PURCHASE, purchase("nia", "SKU-9", 1, "5")).await;
    refused(
        &app,
        CREATE_PURCHASE,
        purchase("nia", "SKU-9", 1, "6"),
        "A purchase with this `userId` and `purchasedAt` already exists.",
    )
    .await;

    // Nothing refused was written: one purchase, the original user and product.
    let state = ok(&app, r#"{ user(userId: "nia") { email purchases { nodes { amount } } } product(sku: "SKU-9") { price } }"#, json!({})).await;
    assert_eq!(state["user"]["email"], "nia@example.com");
    assert_eq!(
        state["user"]["purchases"]["nodes"],
        json!([{ "amount": "5" }])
    );
    assert_eq!(state["product"]["price"], "19.99");
}

#[tokio::test]
async fn purchases_created_back_to_back_without_a_time_all_get_their_own_time() {
    let app = TestApp::spawn().await;
    shop(&app).await;
    let input =
        json!({ "input": { "userId": "nia", "sku": "SKU-9", "quantity": 1, "amount": "1" } });
    let mut times = Vec::new();
    for _ in 0..5 {
        let created = ok(&app, CREATE_PURCHASE, input.clone()).await;
        times.push(
            created["createPurchase"]["purchase"]["purchasedAt"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let mut unique = times.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 5, "{times:?}");
}

#[tokio::test]
async fn delete_purchase_deletes_once_and_only_purchases() {
    let app = TestApp::spawn().await;
    shop(&app).await;
    let created = ok(
        &app,
        CREATE_PURCHASE,
        json!({ "input": { "userId": "nia", "sku": "SKU-9", "quantity": 1, "amount": "1" } }),
    )
    .await;
    let id = created["createPurchase"]["purchase"]["id"].clone();
    let deleted = ok(&app, DELETE_PURCHASE, json!({ "id": id })).await;
    assert_eq!(deleted["deletePurchase"]["deletedPurchaseId"], id);
    let gone = ok(
        &app,
        "query($id: ID!) { node(id: $id) { id } }",
        json!({ "id": id }),
    )
    .await;
    assert_eq!(gone["node"], Value::Null);
    refused(
        &app,
        DELETE_PURCHASE,
        json!({ "id": id }),
        "No purchase has this id.",
    )
    .await;
    let user_id =
        ok(&app, r#"{ user(userId: "nia") { id } }"#, json!({})).await["user"]["id"].clone();
    refused(
        &app,
        DELETE_PURCHASE,
        json!({ "id": user_id }),
        "The id is not a purchase id.",
    )
    .await;
    refused(
        &app,
        DELETE_PURCHASE,
        json!({ "id": "garbage" }),
        "The id is not a purchase id.",
    )
    .await;
}
