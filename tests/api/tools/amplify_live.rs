//! Writes shaped as Amplify's AppSync resolvers make them (a `PutItem` of the whole order, an
//! `UpdateItem` that sets the status, the composite `status#createdAt` and `updatedAt`, a
//! `DeleteItem`), made straight to the table as any code beside Amplify would, reaching the
//! subscribers of `examples/amplify` under its owner rule: each owner gets their own orders'
//! changes and nobody else's, an admin follows an owner's orders in one status, and another
//! owner's orders are refused with the code a query of them gets.

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Value, json};

use super::amplify::{MODEL, TABLE, User, order, user};
use crate::{
    helpers::{
        ModelApp, Received, TestIssuer, auth_live_router, auth_model_app, graphql_with_token,
        load_model, received_within, refusal, subscribe_as, warm_up,
    },
    tools::changes::{kinds, until},
};

const BY_OWNER: &str = "subscription($owner: String!) {
  ordersChanged(owner: $owner) { kind removedId edge { cursor node { orderId status total } } } }";
const IN_STATUS: &str = "subscription($owner: String!, $status: OrderStatus!) {
  ordersInStatusChanged(owner: $owner, status: $status) {
    kind removedId edge { cursor node { orderId status total } } } }";

/// Creates an order as Amplify's create resolver does: the whole item, once.
async fn create(app: &ModelApp, id: &str, owner: &str, status: &str, at: &str) {
    app.client()
        .put_item()
        .table_name(app.table(TABLE))
        .set_item(Some(order(id, owner, status, at, "10.5")))
        .condition_expression("attribute_not_exists(id)")
        .send()
        .await
        .unwrap();
}

/// Changes an order as Amplify's update resolver does: the fields given, the composite key
/// recomputed from them, `updatedAt`.
async fn update(app: &ModelApp, id: &str, status: &str, created_at: &str, total: &str) {
    let s = |v: &str| AttributeValue::S(v.to_owned());
    app.client()
        .update_item()
        .table_name(app.table(TABLE))
        .key("id", s(id))
        .update_expression("SET #status = :status, #sc = :sc, #total = :total, #updatedAt = :now")
        .condition_expression("attribute_exists(id)")
        .expression_attribute_names("#status", "status")
        .expression_attribute_names("#sc", "status#createdAt")
        .expression_attribute_names("#total", "total")
        .expression_attribute_names("#updatedAt", "updatedAt")
        .expression_attribute_values(":status", s(status))
        .expression_attribute_values(":sc", s(&format!("{status}#{created_at}")))
        .expression_attribute_values(":total", AttributeValue::N(total.to_owned()))
        .expression_attribute_values(":now", s("2026-06-02T00:00:00.000Z"))
        .send()
        .await
        .unwrap();
}

/// Deletes an order as Amplify's delete resolver does.
async fn delete(app: &ModelApp, id: &str) {
    app.client()
        .delete_item()
        .table_name(app.table(TABLE))
        .key("id", AttributeValue::S(id.to_owned()))
        .condition_expression("attribute_exists(id)")
        .send()
        .await
        .unwrap();
}

/// A subscription of `caller` to `field` (`query`), placed in the stream by warm-up orders of
/// `owner` in `status` (ids `<tag><round>`), then followed to a fence order `<tag>-fence`.
async fn follow(
    app: &ModelApp,
    router: &axum::Router,
    caller: &User,
    (field, query, variables): (&str, &str, Value),
    (owner, status, tag): (&str, &str, &str),
) -> tokio::sync::mpsc::Receiver<Received> {
    let mut events = subscribe_as(router, Some(&caller.token), query, variables).await;
    warm_up(
        async |round| {
            let at = format!("2026-05-01T00:00:{:02}.{round:03}Z", round % 60);
            create(app, &format!("{tag}{round}"), owner, status, &at).await;
        },
        async |wait| received_within(&mut events, wait).await,
    )
    .await;
    let fence = format!("{tag}-fence");
    create(app, &fence, owner, status, "2026-05-02T00:00:00.000Z").await;
    until(&mut events, field, "orderId", &fence).await;
    events
}

#[tokio::test]
async fn resolver_shaped_writes_reach_each_owner_and_no_one_else() {
    let issuer = TestIssuer::start().await;
    let (app, _) = auth_model_app(load_model(MODEL), &issuer).await;
    let router = auth_live_router(&app, &issuer).await;
    let alice = user(&issuer, "a-sub", "alice", &[]).await;
    let bob = user(&issuer, "b-sub", "bob", &[]).await;
    let admin = user(&issuer, "adm-sub", "admin", &["admin"]).await;

    // Alice's orders are not Bob's to follow: refused as a query of them is, before any change.
    let queried = graphql_with_token(
        &router,
        Some(&bob.token),
        "query($owner: String!) { orders(owner: $owner, first: 1) { edges { cursor } } }",
        json!({ "owner": alice.owner }),
    )
    .await;
    let code = queried.body["errors"][0]["extensions"]["code"].clone();
    assert!(code.is_string(), "{:?}", queried.body);
    let mut refused = subscribe_as(
        &router,
        Some(&bob.token),
        BY_OWNER,
        json!({ "owner": alice.owner }),
    )
    .await;
    assert_eq!(Some(refusal(&mut refused).await.0.as_str()), code.as_str());

    let mut alices = follow(
        &app,
        &router,
        &alice,
        ("ordersChanged", BY_OWNER, json!({ "owner": alice.owner })),
        (&alice.owner, "DELIVERED", "warm-a"),
    )
    .await;
    let mut bobs = follow(
        &app,
        &router,
        &bob,
        ("ordersChanged", BY_OWNER, json!({ "owner": bob.owner })),
        (&bob.owner, "DELIVERED", "warm-b"),
    )
    .await;
    let mut shipped = follow(
        &app,
        &router,
        &admin,
        (
            "ordersInStatusChanged",
            IN_STATUS,
            json!({ "owner": alice.owner, "status": "SHIPPED" }),
        ),
        (&alice.owner, "SHIPPED", "warm-s"),
    )
    .await;
    // Everything the warm-ups and fences of the later subscriptions wrote has reached the
    // earlier ones too: fenced again, all at once.
    create(
        &app,
        "fence-a",
        &alice.owner,
        "SHIPPED",
        "2026-05-03T00:00:00.000Z",
    )
    .await;
    create(
        &app,
        "fence-b",
        &bob.owner,
        "PLACED",
        "2026-05-03T00:00:00.000Z",
    )
    .await;
    until(&mut alices, "ordersChanged", "orderId", "fence-a").await;
    until(&mut bobs, "ordersChanged", "orderId", "fence-b").await;
    until(&mut shipped, "ordersInStatusChanged", "orderId", "fence-a").await;

    let at = "2026-06-01T10:00:00.000Z";
    create(&app, "A-1", &alice.owner, "PLACED", at).await;
    create(&app, "B-1", &bob.owner, "PLACED", at).await;
    update(&app, "A-1", "SHIPPED", at, "10.5").await;
    update(&app, "A-1", "SHIPPED", at, "12.75").await;
    delete(&app, "A-1").await;
    create(&app, "A-2", &alice.owner, "PLACED", at).await;
    create(&app, "B-2", &bob.owner, "PLACED", at).await;
    create(&app, "A-3", &alice.owner, "SHIPPED", at).await;

    assert_eq!(
        kinds(&until(&mut alices, "ordersChanged", "orderId", "A-3").await),
        [
            ("ADDED", Some("A-1")),
            ("UPDATED", Some("A-1")),
            ("UPDATED", Some("A-1")),
            ("REMOVED", None),
            ("ADDED", Some("A-2")),
            ("ADDED", Some("A-3")),
        ]
    );
    // Bob's own, and nothing of Alice's between them.
    assert_eq!(
        kinds(&until(&mut bobs, "ordersChanged", "orderId", "B-2").await),
        [("ADDED", Some("B-1")), ("ADDED", Some("B-2"))]
    );
    // The admin, following Alice's shipped orders: A-1 enters when shipped, changes, leaves
    // when deleted; A-2 was placed, not shipped.
    let events = until(&mut shipped, "ordersInStatusChanged", "orderId", "A-3").await;
    assert_eq!(
        kinds(&events),
        [
            ("ADDED", Some("A-1")),
            ("UPDATED", Some("A-1")),
            ("REMOVED", None),
            ("ADDED", Some("A-3")),
        ]
    );
}
