//! Introspection and suggestions (attack 8): for admins only.

use serde_json::{Value, json};

use super::{B, Shop};

/// 8. Introspection is for admins; others (signed in or not) get an error and no schema, also
/// for a document an admin sent first (documents are cached).
#[tokio::test]
async fn rules_introspection_is_for_admins_only() {
    let shop = Shop::start().await;
    let b_token = shop.token(shop.user(B));
    let admin = shop.admin();
    let schema = "{ __schema { types { name } } }";
    let ty = r#"{ __type(name: "Purchase") { name fields { name } } }"#;

    let seen = shop.ask(Some(&admin), schema, json!({})).await;
    let types = seen.ok("the admin")["__schema"]["types"]
        .as_array()
        .unwrap();
    assert!(types.iter().any(|t| t["name"] == "Purchase"), "{types:?}");
    seen.nothing_read("the admin");
    let seen = shop.ask(Some(&admin), ty, json!({})).await;
    assert_eq!(seen.ok("the admin, a type")["__type"]["name"], "Purchase");

    for (label, token) in [("B", Some(b_token.as_str())), ("anonymous", None)] {
        for query in [schema, ty] {
            let seen = shop.ask(token, query, json!({})).await;
            let message = seen.refused("FORBIDDEN", Value::Null, label);
            assert_eq!(message, "You may not introspect this schema.");
            let text = seen.body.to_string();
            assert!(
                !text.contains("PurchaseConnection") && !text.contains("amount"),
                "{label}: {text}"
            );
            seen.nothing_read(label);
        }
        // `__typename` is not introspection.
        let seen = shop.ask(token, "{ __typename }", json!({})).await;
        assert_eq!(seen.ok(label), &json!({ "__typename": "Query" }));
    }

    // Control: without the `[auth]` rule, B introspects.
    let open = shop
        .without("introspection = [{ groups = [\"admin\"] }]\n", "")
        .await;
    let seen = open.ask(Some(&b_token), schema, json!({})).await;
    assert!(seen.ok("without the rule")["__schema"]["types"].is_array());
}

/// 8b. Field and argument suggestions ("Did you mean ...?") would spell out the schema that
/// introspection hides: only callers who may introspect get them. Seen failing: with one schema
/// for everyone, the anonymous `{ usr }` got `Did you mean "user"?`.
#[tokio::test]
async fn rules_suggestions_are_for_those_who_may_introspect() {
    let shop = Shop::start().await;
    let b_token = shop.token(shop.user(B));
    let admin = shop.admin();
    let typos = [
        ("a field", "{ usr(userId: \"x\") { name } }", "\\\"user\\\""),
        (
            "an argument",
            "{ user(userID: \"x\") { name } }",
            "\\\"userId\\\"",
        ),
    ];
    for (what, query, suggested) in typos {
        // Control: the admin, who may introspect, is told what was meant.
        let seen = shop.ask(Some(&admin), query, json!({})).await;
        let text = seen.body.to_string();
        assert!(
            text.contains(&format!("Did you mean {suggested}")),
            "the admin, {what}: {}",
            seen.body
        );
        for (label, token) in [("B", Some(b_token.as_str())), ("anonymous", None)] {
            let seen = shop.ask(token, query, json!({})).await;
            let text = seen.body.to_string();
            assert!(
                seen.body.get("data").is_none() && seen.body["errors"][0]["message"].is_string(),
                "{label}, {what}: a request error: {text}"
            );
            assert!(!text.contains("Did you mean"), "{label}, {what}: {text}");
            seen.nothing_read(label);
        }
    }
    // Control: without the `[auth]` rule everyone may introspect, and B is told too.
    let open = shop
        .without("introspection = [{ groups = [\"admin\"] }]\n", "")
        .await;
    let seen = open.ask(Some(&b_token), typos[0].1, json!({})).await;
    assert!(
        seen.body.to_string().contains("Did you mean"),
        "without the rule: {}",
        seen.body
    );
}
