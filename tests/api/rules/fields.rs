//! Field rules and relations (attacks 4 and 5): an email is for its user and admins only, and a
//! purchase's relations follow their targets' rules.

use std::collections::BTreeMap;

use serde_json::json;

use super::{A, B, Shop, USER, calls, gid};

/// 4. A field rule: `email` for the user themself and for admins; for anyone else null with a
/// `FORBIDDEN` error on its path, and the rest of the user returned.
#[tokio::test]
async fn rules_an_email_is_for_its_user_and_admins_only() {
    let shop = Shop::start().await;
    let (a, b) = (shop.user(A), shop.user(B));
    let (a_token, b_token, admin) = (shop.token(a), shop.token(b), shop.admin());
    let record = &shop.data.users[A];

    for (label, token) in [("A", &a_token), ("the admin", &admin)] {
        let seen = shop.ask(Some(token), USER, json!({ "user": a })).await;
        assert_eq!(
            seen.ok(label),
            &json!({ "user": { "userId": a, "name": record.name, "email": record.email } }),
            "{label}"
        );
        assert_eq!(seen.calls, calls(&[("GetItem Users", 1.0)]), "{label}");
    }

    let seen = shop.ask(Some(&b_token), USER, json!({ "user": a })).await;
    seen.refused("FORBIDDEN", json!(["user", "email"]), "A's email as B");
    assert_eq!(
        seen.body["data"],
        json!({ "user": { "userId": a, "name": record.name, "email": null } })
    );
    assert_eq!(seen.calls, calls(&[("GetItem Users", 1.0)]));
    assert!(
        !seen.body.to_string().contains(&record.email),
        "{}",
        seen.body
    );

    // The same through a global id.
    let a_user = gid(shop.model(), "User", &record.to_item());
    let seen = shop
        .ask(
            Some(&b_token),
            "query($id: ID!) { node(id: $id) { ... on User { userId email } } }",
            json!({ "id": a_user }),
        )
        .await;
    seen.refused(
        "FORBIDDEN",
        json!(["node", "email"]),
        "A's email by id as B",
    );
    assert_eq!(
        seen.body["data"],
        json!({ "node": { "userId": a, "email": null } })
    );

    // Control: without the field's rules, B reads A's email.
    let open = shop
        .without(
            r#"format = "email", allow = [{ owner = "userId" }, { groups = ["admin"] }]"#,
            r#"format = "email""#,
        )
        .await;
    let seen = open.ask(Some(&b_token), USER, json!({ "user": a })).await;
    assert_eq!(seen.ok("without the rule")["user"]["email"], record.email);
}

/// 5. Relations: a purchase's `user` and `product` for whoever may see the purchase, read in one
/// batch. Served with `User` and `Product` for admins only, the same relations are hidden
/// without being read: the nullable `product` is null, the non-null `user` a `FORBIDDEN` error.
#[tokio::test]
async fn rules_relations_follow_their_targets_rules() {
    let shop = Shop::start().await;
    let a = shop.user(A);
    let (a_token, b_token, admin) = (shop.token(a), shop.token(shop.user(B)), shop.admin());
    let record = &shop.data.users[A];
    let products: BTreeMap<&str, &str> = shop
        .data
        .products
        .iter()
        .map(|p| (p.sku.as_str(), p.name.as_str()))
        .collect();
    let a_ids = shop.purchase_ids(a).await;

    let query = r#"query($user: String!) { user(userId: $user) { purchases(first: 3) {
        edges { node { sku user { userId email } product { sku name } } } } } }"#;
    let seen = shop.ask(Some(&a_token), query, json!({ "user": a })).await;
    let edges = seen.ok("A's purchases with relations")["user"]["purchases"]["edges"]
        .as_array()
        .unwrap();
    assert_eq!(edges.len(), 3);
    for edge in edges {
        let node = &edge["node"];
        assert_eq!(node["user"], json!({ "userId": a, "email": record.email }));
        let sku = node["sku"].as_str().unwrap();
        assert_eq!(
            node["product"],
            json!({ "sku": sku, "name": products[sku] })
        );
    }
    assert_eq!(
        seen.calls,
        calls(&[
            ("GetItem Users", 1.0),
            ("Query Purchases", 1.0),
            ("BatchGetItem several", 1.0),
        ])
    );

    // By id: for the admin, the purchase with its user (email included) and product.
    let by_id = r#"query($ids: [ID!]!) { nodes(ids: $ids) { ... on Purchase {
        sku user { userId email } product { sku } } } }"#;
    let seen = shop
        .ask(Some(&admin), by_id, json!({ "ids": [a_ids[0]] }))
        .await;
    let node = &seen.ok("a purchase with relations as the admin")["nodes"][0];
    assert_eq!(node["user"], json!({ "userId": a, "email": record.email }));
    assert_eq!(node["product"]["sku"], node["sku"]);
    // B may not see the purchase, so reaches neither relation, and nothing is read.
    let seen = shop
        .ask(Some(&b_token), by_id, json!({ "ids": [a_ids[0]] }))
        .await;
    assert_eq!(seen.ok("as B"), &json!({ "nodes": [null] }));
    seen.nothing_read("as B");

    // Users and products for admins only: A still sees A's purchase, but not its targets.
    let hidden = shop
        .changed(&[
            (
                "id_tag = \"U\"\nallow = [\"authenticated\"]\n",
                "id_tag = \"U\"\nallow = [{ groups = [\"admin\"] }]\n",
            ),
            (
                "id_tag = \"R\"\n",
                "id_tag = \"R\"\nallow = [{ groups = [\"admin\"] }]\n",
            ),
        ])
        .await;
    let product =
        r#"query($ids: [ID!]!) { nodes(ids: $ids) { ... on Purchase { sku product { sku } } } }"#;
    let seen = hidden
        .ask(Some(&a_token), product, json!({ "ids": [a_ids[0]] }))
        .await;
    let node = &seen.ok("a hidden product")["nodes"][0];
    assert!(
        node["sku"].is_string() && node["product"].is_null(),
        "{node}"
    );
    assert_eq!(seen.calls, calls(&[("BatchGetItem several", 1.0)]));
    seen.no_call_on("Products", "a hidden product");
    let user =
        r#"query($ids: [ID!]!) { nodes(ids: $ids) { ... on Purchase { sku user { userId } } } }"#;
    let seen = hidden
        .ask(Some(&a_token), user, json!({ "ids": [a_ids[0]] }))
        .await;
    seen.refused("FORBIDDEN", json!(["nodes", 0, "user"]), "a hidden user");
    assert_eq!(seen.body["data"], json!({ "nodes": [null] }));
    assert_eq!(seen.calls, calls(&[("BatchGetItem several", 1.0)]));
    seen.no_call_on("Users", "a hidden user");
    // The admin sees both.
    let seen = hidden
        .ask(Some(&admin), user, json!({ "ids": [a_ids[0]] }))
        .await;
    assert_eq!(seen.ok("as the admin")["nodes"][0]["user"]["userId"], a);
    let seen = hidden
        .ask(Some(&admin), product, json!({ "ids": [a_ids[0]] }))
        .await;
    assert!(seen.ok("as the admin")["nodes"][0]["product"]["sku"].is_string());
}
