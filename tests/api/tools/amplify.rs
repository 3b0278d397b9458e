//! Amplify Gen 2 (`examples/amplify`): a table per model keyed by `id`, `__typename`,
//! `createdAt` / `updatedAt`, owners stored as `<sub>::<username>`, and the index's composite
//! sort key in an attribute named `status#createdAt`. Amplify writes through AppSync resolvers,
//! not a library that runs here, so the test writes items exactly as those resolvers do.

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Value, json};

use crate::helpers::{
    ModelApp, TestIssuer, auth_model_app, graphql_with_token, load_model, merge, walk_matches, with,
};

const MODEL: &str = "examples/amplify/dynarelay.toml";

const TABLE: &str = "Order-apiid-NONE";

/// A caller: the token's `sub` and `username`, and the owner Amplify stores for them.
struct User {
    token: String,
    owner: String,
}

async fn user(issuer: &TestIssuer, sub: &str, username: &str, groups: &[&str]) -> User {
    let claims = with(
        crate::helpers::model_claims(load_model(MODEL), sub, groups),
        json!({ "username": username }),
    );
    User {
        token: issuer.mint(&claims),
        owner: format!("{sub}::{username}"),
    }
}

/// An order as Amplify's resolvers write it.
fn order(
    id: &str,
    owner: &str,
    status: &str,
    created_at: &str,
    total: &str,
) -> dynarelay::dynamo::Item {
    let s = |v: &str| AttributeValue::S(v.to_owned());
    [
        ("id", s(id)),
        ("__typename", s("Order")),
        ("owner", s(owner)),
        ("status", s(status)),
        ("total", AttributeValue::N(total.to_owned())),
        ("createdAt", s(created_at)),
        ("updatedAt", s(created_at)),
        ("status#createdAt", s(&format!("{status}#{created_at}"))),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

async fn ask(app: &ModelApp, user: &User, query: &str, vars: Value) -> Value {
    graphql_with_token(&app.router, Some(&user.token), query, vars)
        .await
        .body
}

const ORDERS: &str = r#"query($owner: String!, $status: OrderStatus!, $from: DateTime, $until: DateTime,
    $first: Int, $after: String, $last: Int, $before: String) {
  ordersInStatus(owner: $owner, status: $status, createdFrom: $from, createdUntil: $until,
                 first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { orderId status createdAt } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

/// An owner sees their orders through the index, by status and time, with the status fixed and
/// a time range, walked at every page size both ways; the owner rule reads Amplify's
/// `<sub>::<username>` from the token's claims, so nobody else's orders or lookups show; and an
/// order created and updated through the API is written as Amplify writes one.
#[tokio::test]
async fn amplify_data_is_served_to_its_owners() {
    let issuer = TestIssuer::start().await;
    let (app, _) = auth_model_app(load_model(MODEL), &issuer).await;
    let alice = user(&issuer, "a-sub", "alice", &[]).await;
    let bob = user(&issuer, "b-sub", "bob", &[]).await;
    let mut items = Vec::new();
    let mut shipped = Vec::new();
    for i in 0..30 {
        let status = ["PLACED", "SHIPPED", "DELIVERED"][i % 3];
        let at = format!("2026-05-01T12:{:02}:00.{:03}Z", i, i * 7);
        let id = format!("o-{i:02}");
        if status == "SHIPPED" {
            shipped.push((id.clone(), at.clone()));
        }
        items.push(order(&id, &alice.owner, status, &at, "10.5"));
        items.push(order(&format!("b-{i:02}"), &bob.owner, status, &at, "3"));
    }
    app.store.put_items(&app.table(TABLE), items).await.unwrap();

    let (from, until) = (shipped[2].1.clone(), shipped[6].1.clone());
    for (extra, want) in [
        (
            json!({}),
            shipped.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>(),
        ),
        (
            json!({ "from": from, "until": until }),
            shipped[2..=6].iter().map(|(id, _)| id.clone()).collect(),
        ),
    ] {
        let vars = merge(json!({ "owner": alice.owner, "status": "SHIPPED" }), extra);
        walk_matches(
            |paging| ask(&app, &alice, ORDERS, merge(vars.clone(), paging)),
            &["ordersInStatus"],
            |node| node["orderId"].as_str().unwrap().to_owned(),
            &want,
            &format!("alice's orders {vars}"),
        )
        .await;
    }

    // Bob's orders are not Alice's to list, nor to look up.
    let answer = ask(
        &app,
        &alice,
        ORDERS,
        json!({ "owner": bob.owner, "status": "SHIPPED", "first": 5 }),
    )
    .await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "FORBIDDEN",
        "{answer}"
    );
    let lookup = "query($id: ID!) { order(orderId: $id) { orderId owner total } }";
    let answer = ask(&app, &alice, lookup, json!({ "id": "o-01" })).await;
    assert_eq!(
        answer["data"]["order"],
        json!({ "orderId": "o-01", "owner": "a-sub::alice", "total": 10.5 }),
        "{answer}"
    );
    let answer = ask(&app, &alice, lookup, json!({ "id": "b-01" })).await;
    assert_eq!(answer["data"]["order"], Value::Null, "{answer}");

    // Created and updated through the API, as Amplify would: the owner from the token, the
    // times, `__typename` and the composite key.
    let created = ask(
        &app,
        &alice,
        "mutation { createOrder(input: { orderId: \"new\", status: PLACED, total: 7.25 }) { order { owner createdAt updatedAt } } }",
        json!({}),
    )
    .await;
    let made = &created["data"]["createOrder"]["order"];
    assert_eq!(made["owner"], "a-sub::alice", "{created}");
    assert_eq!(made["createdAt"], made["updatedAt"], "{created}");
    let created_at = made["createdAt"].as_str().unwrap().to_owned();
    let item = stored(&app, "new").await;
    assert_eq!(item["__typename"], AttributeValue::S("Order".into()));
    assert_eq!(
        item["status#createdAt"],
        AttributeValue::S(format!("PLACED#{created_at}"))
    );
    let id = ask(
        &app,
        &alice,
        "{ order(orderId: \"new\") { id } }",
        json!({}),
    )
    .await["data"]["order"]["id"]
        .clone();
    let updated = ask(
        &app,
        &alice,
        "mutation($id: ID!) { updateOrder(input: { id: $id, status: SHIPPED }) { order { status createdAt updatedAt } } }",
        json!({ "id": id }),
    )
    .await;
    let changed = &updated["data"]["updateOrder"]["order"];
    assert_eq!(changed["createdAt"], created_at.as_str(), "{updated}");
    assert!(
        changed["updatedAt"].as_str() >= Some(created_at.as_str()),
        "{updated}"
    );
    let stored = stored(&app, "new").await;
    assert_eq!(
        stored["status#createdAt"],
        AttributeValue::S(format!("SHIPPED#{created_at}"))
    );
    // Bob may not change it: to him it does not exist.
    let refused = ask(
        &app,
        &bob,
        "mutation($id: ID!) { updateOrder(input: { id: $id, status: DELIVERED }) { order { status } } }",
        json!({ "id": id }),
    )
    .await;
    assert!(refused["errors"].is_array(), "{refused}");
    assert_eq!(
        stored.get("status"),
        Some(&AttributeValue::S("SHIPPED".into()))
    );
}

/// The order `id` as stored.
async fn stored(app: &ModelApp, id: &str) -> dynarelay::dynamo::Item {
    app.scan_all(&app.table(TABLE))
        .await
        .into_iter()
        .find(|item| item["id"].as_s().unwrap() == id)
        .unwrap_or_else(|| panic!("no order {id}"))
}
