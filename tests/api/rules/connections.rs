//! Root connections and lookups (attack 6): the `users` Scan and `Product.purchases` are for
//! admins and refused to others before any read, products are public, and the `user` lookup is
//! for signed-in callers.

use aws_sdk_dynamodb::types::AttributeValue::S;
use serde_json::{Value, json};

use super::{A, B, Shop, USER, calls, gid, ids};
use crate::helpers::{GroundQuery, merge, walk_pages};

/// 6. Root connections and lookups: the `users` Scan and `Product.purchases` are for admins (no
/// Scan, no Query for anyone else); products are public; the `user` lookup is for signed-in
/// callers.
#[tokio::test]
async fn rules_admin_connections_are_refused_to_others_before_any_read() {
    let shop = Shop::start().await;
    let b_token = shop.token(shop.user(B));
    let admin = shop.admin();
    let users = r#"query($first: Int, $after: String) { users(first: $first, after: $after) {
        edges { cursor node { id userId email } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }"#;

    for (label, token) in [("B", Some(b_token.as_str())), ("anonymous", None)] {
        let seen = shop.ask(token, users, json!({ "first": 2 })).await;
        seen.refused("FORBIDDEN", json!(["users"]), label);
        assert_eq!(seen.body["data"], Value::Null, "{label}");
        seen.nothing_read(label);
    }
    let before = shop.served.calls();
    let walked = walk_pages(
        |paging| shop.served.body(Some(&admin), users, paging),
        &["users"],
        2,
        true,
        "users as the admin",
    )
    .await;
    let mut got: Vec<(&str, &str)> = walked
        .iter()
        .map(|n| (n["userId"].as_str().unwrap(), n["email"].as_str().unwrap()))
        .collect();
    got.sort_unstable();
    let mut expected: Vec<(&str, &str)> = shop
        .data
        .users
        .iter()
        .map(|u| (u.user_id.as_str(), u.email.as_str()))
        .collect();
    expected.sort_unstable();
    assert_eq!(got, expected);
    let after = shop.served.calls();
    assert!(after["Scan Users"] - before.get("Scan Users").copied().unwrap_or(0.0) >= 3.0);

    // Everyone's purchases of a product.
    let sku = shop.data.products[0].sku.as_str();
    let of_product = r#"query($sku: String!, $first: Int, $after: String) { product(sku: $sku) {
        name purchases(first: $first, after: $after) { edges { cursor node { id userId } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }"#;
    let seen = shop
        .ask(
            Some(&b_token),
            of_product,
            json!({ "sku": sku, "first": 5 }),
        )
        .await;
    seen.refused(
        "FORBIDDEN",
        json!(["product", "purchases"]),
        "a product's purchases as B",
    );
    assert_eq!(seen.body["data"], json!({ "product": null }));
    assert_eq!(seen.calls, calls(&[("GetItem Products", 1.0)]));
    seen.no_call_on("Purchases", "a product's purchases as B");
    let values = [(":s", S(sku.to_owned()))];
    let truth: Vec<String> = shop
        .app
        .query_all(&GroundQuery {
            table: &shop.tables.purchases,
            index: Some("BySku"),
            condition: "sku = :s",
            names: &[],
            values: &values,
            forward: true,
        })
        .await
        .iter()
        .map(|item| gid(shop.model(), "Purchase", item))
        .collect();
    assert!(truth.len() > 10, "{}", truth.len());
    let walked = walk_pages(
        |paging| {
            shop.served.body(
                Some(&admin),
                of_product,
                merge(json!({ "sku": sku }), paging),
            )
        },
        &["product", "purchases"],
        10,
        true,
        "a product's purchases as the admin",
    )
    .await;
    assert_eq!(ids(&walked), truth);

    // Anonymous: products are public...
    let category = shop.data.products[0].category.as_str();
    let seen = shop
        .ask(
            None,
            "query($c: String!) { products(category: $c, first: 50) { edges { node { sku } } } }",
            json!({ "c": category }),
        )
        .await;
    let mut got: Vec<&str> = seen.ok("products, anonymous")["products"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["node"]["sku"].as_str().unwrap())
        .collect();
    got.sort_unstable();
    let mut expected: Vec<&str> = shop
        .data
        .products
        .iter()
        .filter(|p| p.category == category)
        .map(|p| p.sku.as_str())
        .collect();
    expected.sort_unstable();
    assert_eq!(got, expected);
    assert_eq!(seen.calls, calls(&[("Query Products", 1.0)]));
    // ...users are not: the lookup is refused before it reads.
    let seen = shop.ask(None, USER, json!({ "user": shop.user(A) })).await;
    seen.refused("FORBIDDEN", json!(["user"]), "a user, anonymous");
    assert_eq!(seen.body["data"], json!({ "user": null }));
    seen.nothing_read("a user, anonymous");

    // Controls: without the connection's rule, `users` takes `User`'s (signed-in callers), and
    // B pages through everyone; without the lookup's, an anonymous caller gets null (the
    // entity's rule), not `FORBIDDEN`.
    let open = shop
        .without(
            "scan = true\nallow = [{ groups = [\"admin\"] }]\n",
            "scan = true\n",
        )
        .await;
    // (`email` keeps its own rule: B sees only their own, so it is not asked for here.)
    let seen = open
        .ask(
            Some(&b_token),
            "query($first: Int) { users(first: $first) { edges { node { id userId } } } }",
            json!({ "first": 2 }),
        )
        .await;
    assert_eq!(
        seen.ok("users without the rule")["users"]["edges"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let open = shop
        .without(
            "no such user.\"\nallow = [\"authenticated\"]\n",
            "no such user.\"\n",
        )
        .await;
    let seen = open.ask(None, USER, json!({ "user": shop.user(A) })).await;
    assert_eq!(
        seen.ok("the lookup without the rule"),
        &json!({ "user": null })
    );
}
