//! Amplify Gen 2 (`examples/amplify`): a table per model keyed by `id`, `__typename`,
//! `createdAt` / `updatedAt`, owners stored as `<sub>::<username>`, and the index's composite
//! sort key in an attribute named `status#createdAt`. Amplify writes through AppSync resolvers,
//! not a library that runs here, so the test writes items exactly as those resolvers do.

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Value, json};

use crate::helpers::{
    GroundQuery, ModelApp, TestIssuer, auth_model_app, graphql_with_token, load_model, merge,
    query_all, walk_matches, with,
};

pub(crate) const MODEL: &str = "examples/amplify/dynarelay.toml";

pub(crate) const TABLE: &str = "Order-apiid-NONE";

/// A caller: the token's `sub` and `username`, and the owner Amplify stores for them.
pub(crate) struct User {
    pub(crate) token: String,
    pub(crate) owner: String,
}

pub(crate) async fn user(issuer: &TestIssuer, sub: &str, username: &str, groups: &[&str]) -> User {
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
pub(crate) fn order(
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

const ORDERS_ALL: &str = r#"query($owner: String!, $first: Int, $after: String, $last: Int, $before: String) {
  orders(owner: $owner, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { orderId status createdAt } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

const ORDERS: &str = r#"query($owner: String!, $status: OrderStatus!, $from: DateTime, $until: DateTime,
    $first: Int, $after: String, $last: Int, $before: String) {
  ordersInStatus(owner: $owner, status: $status, createdFrom: $from, createdUntil: $until,
                 first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { orderId status createdAt } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

/// Every owner sees their orders through the index, by status and time and with the status
/// fixed and a time range, walked at every page size both ways against DynamoDB's own reads of
/// the index; owners hold 0, 1, 20, 21, 100 and 250 orders, with ties on the index's sort key,
/// usernames with spaces, `#`, uppercase and unicode. The owner rule reads Amplify's
/// `<sub>::<username>` from the token's claims, so nobody else's orders or lookups show; and an
/// order created and updated through the API is written as Amplify writes one.
#[tokio::test]
async fn amplify_data_is_served_to_its_owners() {
    let issuer = TestIssuer::start().await;
    let (app, _) = auth_model_app(load_model(MODEL), &issuer).await;
    let owners = [
        ("z-sub", "nobody", 0),
        ("o-sub", "Ünï Cödé", 1),
        ("t-sub", "twenty#20", 20),
        ("u-sub", "TWENTY ONE", 21),
        ("h-sub", "日本 hundred", 100),
        ("a-sub", "alice", 250),
    ];
    let mut users = Vec::new();
    let mut items = Vec::new();
    for (n, (sub, username, count)) in owners.into_iter().enumerate() {
        let caller = user(&issuer, sub, username, &[]).await;
        for i in 0..count {
            let status = ["PLACED", "SHIPPED", "DELIVERED"][(i * 7 + n) % 3];
            // Every fourth order shares its time with the one before: ties on `status#createdAt`.
            let minute = i - usize::from(i % 4 == 3);
            let at = format!("2026-05-01T{:02}:{:02}:00.000Z", minute / 60, minute % 60);
            items.push(order(
                &format!("{sub}-{i:03}"),
                &caller.owner,
                status,
                &at,
                "10.5",
            ));
        }
        users.push((caller, count));
    }
    app.store.put_items(&app.table(TABLE), items).await.unwrap();
    let (alice, bob) = (&users[5].0, &users[1].0);

    for (caller, count) in &users {
        let ids = |orders: Vec<(String, String)>| -> Vec<String> {
            orders.into_iter().map(|(id, _)| id).collect()
        };
        let all = ids(indexed(&app, &caller.owner, None).await);
        assert_eq!(all.len(), *count);
        let vars = json!({ "owner": caller.owner });
        walk_matches(
            |paging| ask(&app, caller, ORDERS_ALL, merge(vars.clone(), paging)),
            &["orders"],
            |node| node["orderId"].as_str().unwrap().to_owned(),
            &all,
            &format!("{}'s orders", caller.owner),
        )
        .await;
        let shipped = ids(indexed(&app, &caller.owner, Some("SHIPPED")).await);
        let vars = json!({ "owner": caller.owner, "status": "SHIPPED" });
        walk_matches(
            |paging| ask(&app, caller, ORDERS, merge(vars.clone(), paging)),
            &["ordersInStatus"],
            |node| node["orderId"].as_str().unwrap().to_owned(),
            &shipped,
            &format!("{}'s shipped orders", caller.owner),
        )
        .await;
    }

    // A time range within one status, on Alice's orders.
    let shipped = indexed(&app, &alice.owner, Some("SHIPPED")).await;
    let (from, until) = (shipped[10].1.clone(), shipped[40].1.clone());
    let want: Vec<String> = shipped
        .iter()
        .filter(|(_, at)| *at >= from && *at <= until)
        .map(|(id, _)| id.clone())
        .collect();
    let vars = json!({ "owner": alice.owner, "status": "SHIPPED", "from": from, "until": until });
    walk_matches(
        |paging| ask(&app, alice, ORDERS, merge(vars.clone(), paging)),
        &["ordersInStatus"],
        |node| node["orderId"].as_str().unwrap().to_owned(),
        &want,
        "alice's shipped orders in a time range",
    )
    .await;

    // Another owner's orders are not Alice's to list, nor to look up.
    let answer = ask(
        &app,
        alice,
        ORDERS,
        json!({ "owner": bob.owner, "status": "SHIPPED", "first": 5 }),
    )
    .await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "FORBIDDEN",
        "{answer}"
    );
    let lookup = "query($id: ID!) { order(orderId: $id) { orderId owner total } }";
    let answer = ask(&app, alice, lookup, json!({ "id": "a-sub-001" })).await;
    assert_eq!(
        answer["data"]["order"],
        json!({ "orderId": "a-sub-001", "owner": "a-sub::alice", "total": 10.5 }),
        "{answer}"
    );
    let answer = ask(&app, alice, lookup, json!({ "id": "o-sub-000" })).await;
    assert_eq!(answer["data"]["order"], Value::Null, "{answer}");

    // Created and updated through the API, as Amplify would: the owner from the token, the
    // times, `__typename` and the composite key.
    let created = ask(
        &app,
        alice,
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
        alice,
        "{ order(orderId: \"new\") { id } }",
        json!({}),
    )
    .await["data"]["order"]["id"]
        .clone();
    // Refetched with others by global id, all read together: Bob's is null to Alice.
    let id_query = "query($o: ID!) { order(orderId: $o) { id } }";
    let older =
        ask(&app, alice, id_query, json!({ "o": "a-sub-001" })).await["data"]["order"]["id"]
            .clone();
    let bobs =
        ask(&app, bob, id_query, json!({ "o": "o-sub-000" })).await["data"]["order"]["id"].clone();
    let refetched = ask(
        &app,
        alice,
        "query($ids: [ID!]!) { nodes(ids: $ids) { ... on Order { orderId } } }",
        json!({ "ids": [id, older, bobs] }),
    )
    .await;
    assert_eq!(
        refetched["data"]["nodes"],
        json!([{ "orderId": "new" }, { "orderId": "a-sub-001" }, null]),
        "{refetched}"
    );
    let updated = ask(
        &app,
        alice,
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
        bob,
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

/// An owner's orders (id and `createdAt`) in DynamoDB's own order of the index `byOwner`, all
/// of them or those in `status`, read with plain SDK Queries.
async fn indexed(app: &ModelApp, owner: &str, status: Option<&str>) -> Vec<(String, String)> {
    let table = app.table(TABLE);
    let mut values = vec![(":o", AttributeValue::S(owner.to_owned()))];
    let (condition, names): (&str, &[(&str, &str)]) = match status {
        Some(status) => {
            values.push((":s", AttributeValue::S(format!("{status}#"))));
            (
                "#o = :o AND begins_with(#k, :s)",
                &[("#o", "owner"), ("#k", "status#createdAt")],
            )
        }
        None => ("#o = :o", &[("#o", "owner")]),
    };
    let query = GroundQuery {
        table: &table,
        index: Some("byOwner"),
        condition,
        names,
        values: &values,
        forward: true,
    };
    query_all(app.client(), &query)
        .await
        .iter()
        .map(|i| {
            (
                i["id"].as_s().unwrap().clone(),
                i["createdAt"].as_s().unwrap().clone(),
            )
        })
        .collect()
}
