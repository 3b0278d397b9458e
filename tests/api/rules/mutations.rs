//! Mutations (attack 7): `createPurchase` writes the caller as the buyer, `deletePurchase`
//! changes only the caller's own items (or, for admins, anyone's), `createProduct` is for admins.

use serde_json::{Value, json};

use super::{A, B, DELETE_PURCHASE, PURCHASES, Shop, calls, gid};

const CREATE_PURCHASE: &str = r#"mutation($input: CreatePurchaseInput!) {
  createPurchase(input: $input) {
    purchase { id userId sku quantity amount status purchasedAt }
    purchaseEdge { cursor }
  }
}"#;

/// 7. Mutations: `createPurchase` writes the caller as the buyer (the input cannot name one) and
/// is refused to anonymous callers; `deletePurchase` of someone else's purchase answers as for
/// a missing one and deletes nothing; owners and admins delete; `createProduct` is for admins.
#[tokio::test]
async fn rules_mutations_write_as_the_caller_and_change_only_their_own_items() {
    let shop = Shop::start().await;
    let (a, b) = (shop.user(A), shop.user(B));
    let (a_token, b_token, admin) = (shop.token(a), shop.token(b), shop.admin());
    let sku = shop.data.products[1].sku.clone();
    let purchases = shop.tables.purchases.clone();
    let stored = shop.item_count(&purchases).await;

    // A buys: the purchase is A's, written once.
    let input = json!({ "sku": sku, "quantity": 2, "amount": "9.98" });
    let seen = shop
        .ask(Some(&a_token), CREATE_PURCHASE, json!({ "input": input }))
        .await;
    let created = &seen.ok("A buys")["createPurchase"];
    assert_eq!(created["purchase"]["userId"], a);
    assert_eq!(created["purchase"]["sku"], sku);
    assert_eq!(
        seen.calls,
        calls(&[("BatchGetItem several", 1.0), ("PutItem Purchases", 1.0)])
    );
    let put = seen.log.iter().find(|c| c.operation == "PutItem").unwrap();
    assert!(put.touches("Purchases", a), "{put:?}");
    let new_id = created["purchase"]["id"].as_str().unwrap().to_owned();
    assert!(shop.purchase_ids(a).await.contains(&new_id));
    assert_eq!(shop.item_count(&purchases).await, stored + 1);
    // Its edge's cursor is A's, in A's connection.
    let edge_cursor = created["purchaseEdge"]["cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let seen = shop
        .ask(
            Some(&a_token),
            PURCHASES,
            json!({ "user": a, "first": 5, "after": edge_cursor }),
        )
        .await;
    seen.ok("after the new purchase's cursor, A");
    let seen = shop
        .ask(
            Some(&admin),
            PURCHASES,
            json!({ "user": a, "first": 5, "after": edge_cursor }),
        )
        .await;
    seen.refused(
        "BAD_USER_INPUT",
        json!(["user", "purchases"]),
        "the new cursor, admin",
    );

    // The input has no buyer: naming one is a validation error, and nothing is written.
    let stored = shop.item_count(&purchases).await;
    let named = json!({ "sku": sku, "quantity": 1, "amount": "4.99", "userId": b });
    let seen = shop
        .ask(Some(&a_token), CREATE_PURCHASE, json!({ "input": named }))
        .await;
    seen.refused("BAD_USER_INPUT", Value::Null, "a buyer in the variables");
    seen.nothing_read("a buyer in the variables");
    let literal = format!(
        r#"mutation {{ createPurchase(input: {{ sku: "{sku}", quantity: 1, amount: "4.99", userId: "{b}" }}) {{ purchase {{ id }} }} }}"#
    );
    let seen = shop.ask(Some(&a_token), &literal, json!({})).await;
    seen.refused("BAD_USER_INPUT", Value::Null, "a buyer in the document");
    seen.nothing_read("a buyer in the document");
    // Anonymous: FORBIDDEN, nothing read or written.
    let seen = shop
        .ask(None, CREATE_PURCHASE, json!({ "input": input }))
        .await;
    seen.refused(
        "FORBIDDEN",
        json!(["createPurchase"]),
        "an anonymous purchase",
    );
    assert_eq!(seen.body["data"], Value::Null);
    seen.nothing_read("an anonymous purchase");
    assert_eq!(shop.item_count(&purchases).await, stored);

    // Signing up writes the caller's `sub` as the user's id.
    let sign_up = r#"mutation($input: CreateUserInput!) { createUser(input: $input) { user { userId name } } }"#;
    let newbie = shop.token("newbie");
    let seen = shop
        .ask(
            Some(&newbie),
            sign_up,
            json!({ "input": { "name": "New Bie", "email": "newbie@example.com" } }),
        )
        .await;
    assert_eq!(seen.ok("sign up")["createUser"]["user"]["userId"], "newbie");
    let seen = shop
        .ask(
            Some(&newbie),
            sign_up,
            json!({ "input": { "name": "X", "email": "x@example.com", "userId": "x" } }),
        )
        .await;
    seen.refused("BAD_USER_INPUT", Value::Null, "sign up as someone else");
    seen.nothing_read("sign up as someone else");

    // B deletes A's purchase: answered exactly as for a purchase that does not exist, in one
    // conditional DeleteItem (no read before it) whose condition names B; nothing is deleted.
    let a_items = shop.purchases_of(a).await;
    let a_first = gid(shop.model(), "Purchase", &a_items[0]);
    let seen = shop
        .ask(Some(&b_token), DELETE_PURCHASE, json!({ "id": a_first }))
        .await;
    let message = seen
        .refused(
            "BAD_USER_INPUT",
            json!(["deletePurchase"]),
            "A's purchase, B deletes",
        )
        .to_owned();
    assert_eq!(message, "No purchase has this id.");
    assert_eq!(
        seen.calls,
        calls(&[("DeleteItem Purchases condition_failed", 1.0)])
    );
    assert_eq!(seen.log.len(), 1);
    assert!(seen.log[0].touches("Purchases", b), "{:?}", seen.log);
    assert_eq!(
        shop.stored_purchase(a, &a_items[0]["purchasedAt"])
            .await
            .as_ref(),
        Some(&a_items[0])
    );
    for (label, id) in [
        (
            "a purchase of A's that never existed",
            shop.never_existing(a),
        ),
        (
            "a purchase of B's that never existed",
            shop.never_existing(b),
        ),
    ] {
        let missing = shop
            .ask(Some(&b_token), DELETE_PURCHASE, json!({ "id": id }))
            .await;
        assert_eq!(missing.body, seen.body, "{label}");
    }
    assert_eq!(shop.item_count(&purchases).await, stored);
    // Anonymous: FORBIDDEN, nothing sent.
    let seen = shop
        .ask(None, DELETE_PURCHASE, json!({ "id": a_first }))
        .await;
    seen.refused(
        "FORBIDDEN",
        json!(["deletePurchase"]),
        "an anonymous delete",
    );
    seen.nothing_read("an anonymous delete");

    // A deletes their own; an admin deletes anyone's.
    let b_items = shop.purchases_of(b).await;
    let b_first = gid(shop.model(), "Purchase", &b_items[0]);
    for (label, token, id, owner, item) in [
        ("A, their own", &a_token, &a_first, a, &a_items[0]),
        ("the admin, B's", &admin, &b_first, b, &b_items[0]),
    ] {
        let seen = shop
            .ask(Some(token), DELETE_PURCHASE, json!({ "id": id }))
            .await;
        assert_eq!(
            seen.ok(label)["deletePurchase"]["deletedPurchaseId"],
            *id,
            "{label}"
        );
        assert_eq!(
            seen.calls,
            calls(&[("DeleteItem Purchases", 1.0)]),
            "{label}"
        );
        assert!(
            shop.stored_purchase(owner, &item["purchasedAt"])
                .await
                .is_none(),
            "{label}"
        );
    }
    assert_eq!(shop.item_count(&purchases).await, stored - 2);

    // `createProduct` is for admins.
    let create_product = r#"mutation($input: CreateProductInput!) { createProduct(input: $input) { product { sku name } } }"#;
    let product =
        json!({ "sku": "SKU-NEW", "name": "New Thing", "category": "books", "price": "1.50" });
    let products = shop.tables.products.clone();
    let before = shop.item_count(&products).await;
    let seen = shop
        .ask(Some(&b_token), create_product, json!({ "input": product }))
        .await;
    seen.refused("FORBIDDEN", json!(["createProduct"]), "a product by B");
    seen.nothing_read("a product by B");
    assert_eq!(shop.item_count(&products).await, before);
    let seen = shop
        .ask(Some(&admin), create_product, json!({ "input": product }))
        .await;
    assert_eq!(
        seen.ok("a product by the admin")["createProduct"]["product"]["sku"],
        "SKU-NEW"
    );
    assert_eq!(seen.calls, calls(&[("PutItem Products", 1.0)]));
    assert_eq!(shop.item_count(&products).await, before + 1);

    // Controls: without `deletePurchase`'s rules B deletes A's purchase; without
    // `createProduct`'s B creates a product.
    let open = shop
        .without(
            "delete = { allow = [{ owner = \"userId\" }, { groups = [\"admin\"] }], description",
            "delete = { description",
        )
        .await;
    let a_second = gid(shop.model(), "Purchase", &a_items[1]);
    let seen = open
        .ask(Some(&b_token), DELETE_PURCHASE, json!({ "id": a_second }))
        .await;
    seen.ok("a delete without the rule");
    let open = shop
        .without(
            "create = { description = \"Creates a product (admins only). Fails with `BAD_USER_INPUT` if the SKU is taken.\", allow = [{ groups = [\"admin\"] }] }",
            "create = { description = \"Creates a product.\" }",
        )
        .await;
    let seen = open
        .ask(
            Some(&b_token),
            create_product,
            json!({ "input": { "sku": "SKU-B", "name": "B's", "category": "books", "price": "1" } }),
        )
        .await;
    seen.ok("a product without the rule");
}
