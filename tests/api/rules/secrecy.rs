//! What answers do not tell (attack 9): whether someone else's item exists, in errors, data or
//! `extensions.cost`, and what key a cursor holds.

use aws_sdk_dynamodb::types::AttributeValue::{N, S};
use serde_json::{Value, json};

use super::{A, B, DELETE_PURCHASE, NODE, NODES, PURCHASES, Shop, end_cursor};

/// 9. Ids and cursors are opaque: nothing in an answer (errors, data or `extensions.cost`) tells
/// whether someone else's item exists, and a cursor does not show its key.
#[tokio::test]
async fn rules_answers_do_not_tell_whether_someone_elses_item_exists() {
    let shop = Shop::start().await;
    let (a, b) = (shop.user(A), shop.user(B));
    let (a_token, b_token, admin) = (shop.token(a), shop.token(b), shop.admin());
    let a_items = shop.purchases_of(a).await;
    let a_ids = shop.purchase_ids(a).await;

    // Ids: A's existing purchase and one that never existed, alone and among B's own.
    let b_ids = shop.purchase_ids(b).await;
    let never = shop.never_existing(a);
    for (query, existing, missing) in [
        (NODE, json!({ "id": a_ids[0] }), json!({ "id": never })),
        (
            NODES,
            json!({ "ids": [b_ids[0], a_ids[0]] }),
            json!({ "ids": [b_ids[0], never] }),
        ),
    ] {
        let seen = shop.ask(Some(&b_token), query, existing).await;
        let other = shop.ask(Some(&b_token), query, missing).await;
        assert_eq!(seen.body, other.body, "{query}");
        assert_eq!(seen.calls, other.calls, "{query}");
        seen.untouched("Purchases", a, query);
    }

    // Deletes: the same answer for A's purchase, for one of A's that never existed, and for one
    // of B's own that never existed (checked in full by the mutations test as well).
    let answers: Vec<Value> = delete_answers(
        &shop,
        &b_token,
        [a_ids[0].clone(), never.clone(), shop.never_existing(b)],
    )
    .await;
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0], answers[2]);
    assert!(
        shop.stored_purchase(a, &a_items[0]["purchasedAt"])
            .await
            .is_some()
    );

    // Cursors: A's cursor, on an existing purchase and on one deleted since, a cursor from
    // another connection, and garbage: one answer for the admin.
    let first = shop
        .ask(Some(&a_token), PURCHASES, json!({ "user": a, "first": 3 }))
        .await;
    let page = &first.ok("A's first page")["user"]["purchases"];
    let on_existing = page["edges"][1]["cursor"].as_str().unwrap().to_owned();
    let on_deleted = page["edges"][2]["cursor"].as_str().unwrap().to_owned();
    shop.app
        .client()
        .delete_item()
        .table_name(&shop.tables.purchases)
        .key("userId", S(a.to_owned()))
        .key("purchasedAt", a_items[2]["purchasedAt"].clone())
        .send()
        .await
        .unwrap();
    let sku = shop.data.products[0].sku.as_str();
    let of_product = shop
        .ask(
            Some(&admin),
            "query($sku: String!) { product(sku: $sku) { purchases(first: 1) { pageInfo { endCursor } } } }",
            json!({ "sku": sku }),
        )
        .await;
    let foreign_connection =
        end_cursor(&of_product.ok("a product's purchases")["product"]["purchases"]);
    let mut bodies = Vec::new();
    for cursor in [
        on_existing.as_str(),
        on_deleted.as_str(),
        foreign_connection.as_str(),
        "Z2FyYmFnZQ",
    ] {
        let seen = shop
            .ask(
                Some(&admin),
                PURCHASES,
                json!({ "user": a, "first": 5, "after": cursor }),
            )
            .await;
        seen.refused("BAD_USER_INPUT", json!(["user", "purchases"]), cursor);
        seen.no_call_on("Purchases", cursor);
        bodies.push(seen.body);
    }
    assert!(bodies.iter().all(|b| *b == bodies[0]), "{bodies:?}");
    // A cursor is sealed: neither its text nor its decoded bytes hold the user's id or the
    // purchase's time.
    use base64::Engine;
    let time = match &a_items[1]["purchasedAt"] {
        N(n) => n.clone(),
        other => panic!("{other:?}"),
    };
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&on_existing)
        .unwrap_or_default();
    for secret in [a, time.as_str()] {
        assert!(!on_existing.contains(secret), "{on_existing}");
        assert!(
            !decoded
                .windows(secret.len())
                .any(|w| w == secret.as_bytes()),
            "the cursor shows {secret}"
        );
    }
}

/// B's answers to `deletePurchase` of each id, in order.
async fn delete_answers(shop: &Shop, token: &str, ids: [String; 3]) -> Vec<Value> {
    let mut answers = Vec::new();
    for id in ids {
        let seen = shop
            .ask(Some(token), DELETE_PURCHASE, json!({ "id": id }))
            .await;
        seen.refused("BAD_USER_INPUT", json!(["deletePurchase"]), &id);
        answers.push(seen.body);
    }
    answers
}
