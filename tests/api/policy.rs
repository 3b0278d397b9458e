//! `dynarelay policy` held against the calls the server really makes: the shop, served with
//! every DynamoDB call its client sends recorded at the SDK boundary, answers every kind of
//! request its model allows (readiness, lookups, a Scan and Query connections, connections under
//! entities, relations, `node` and `nodes`, each mutation). Every call is allowed by the policy
//! of its model, on exactly its table or index, and every action the policy allows is one of
//! those calls: it allows nothing the model cannot make.
//!
//! AWS's policy linter, parliament (PyPI), reports nothing on the policy of any example.

use std::collections::BTreeSet;

use dynarelay::policy::{PolicyTarget, policy};
use serde_json::{Value, json};

use crate::{
    helpers::{
        PolicyAudit, allowed, answer, lint, logged_model_app, model_state, post_graphql, shop,
        test_ring,
    },
    shop_data::{self, SeedSpec, ShopTables},
};

#[tokio::test]
async fn the_shop_policy_allows_every_call_the_shop_makes_and_nothing_else() {
    let (app, log) = logged_model_app(shop()).await;
    let data = shop_data::generate(&SeedSpec {
        seed: 5,
        users: 4,
        products: 3,
        categories: 2,
    });
    shop_data::write(&app.store, &ShopTables::with_prefix(&app.prefix), &data)
        .await
        .unwrap();
    // The user with the most purchases, so that their page reads relations too.
    let user = data
        .users
        .iter()
        .max_by_key(|u| {
            data.purchases
                .iter()
                .filter(|p| p.user_id == u.user_id)
                .count()
        })
        .unwrap()
        .user_id
        .clone();
    let product = &data.products[0];
    let mark = log.mark();

    let ready = answer(
        &app.router,
        axum::http::Request::get("/ready")
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(ready.status, 200);
    let ask = |query: &'static str, variables: Value| {
        let app = &app;
        async move {
            let response = app.graphql(query, variables).await;
            assert!(response.get("errors").is_none(), "{response}");
            response
        }
    };
    let found = ask(
        r#"query($u: String!, $sku: String!, $category: String!) {
          user(userId: $u) { id purchases(first: 3) { nodes { id user { name } product { name } } } }
          product(sku: $sku) { id purchases(first: 3) { nodes { id } } }
          users(first: 3) { nodes { id } }
          products(category: $category, first: 3) { nodes { id } }
        }"#,
        json!({ "u": user, "sku": product.sku, "category": product.category }),
    )
    .await;
    let user_id = found["data"]["user"]["id"].clone();
    let product_id = found["data"]["product"]["id"].clone();
    let purchase_id = found["data"]["product"]["purchases"]["nodes"][0]["id"].clone();
    assert!(purchase_id.is_string(), "{found}");
    ask(
        "query($a: ID!, $b: ID!, $c: ID!) { node(id: $a) { id } nodes(ids: [$a, $b, $c]) { id } }",
        json!({ "a": user_id, "b": product_id, "c": purchase_id }),
    )
    .await;
    ask(
        r#"mutation { createUser(input: { userId: "policy-user", name: "P", email: "p@example.com" }) { user { id } } }"#,
        json!({}),
    )
    .await;
    ask(
        r#"mutation { createProduct(input: { sku: "POLICY-1", name: "P", category: "c", price: "1.00" }) { product { id } } }"#,
        json!({}),
    )
    .await;
    let created = ask(
        r#"mutation { createPurchase(input: { userId: "policy-user", sku: "POLICY-1", quantity: 1, amount: "1.00" }) { purchase { id } } }"#,
        json!({}),
    )
    .await;
    ask(
        "mutation($id: ID!) { deletePurchase(input: { id: $id }) { deletedPurchaseId } }",
        json!({ "id": created["data"]["createPurchase"]["purchase"]["id"] }),
    )
    .await;

    let document = policy(
        shop(),
        &PolicyTarget {
            prefix: app.prefix.clone(),
            region: "us-east-1".to_owned(),
            account: "123456789012".to_owned(),
        },
    );
    let allowed = allowed(&document);
    let arn = |table: &str, index: Option<&str>| {
        let table = format!("arn:aws:dynamodb:us-east-1:123456789012:table/{table}");
        match index {
            Some(index) => format!("{table}/index/{index}"),
            None => table,
        }
    };
    let mut made = BTreeSet::new();
    for call in log.since(mark) {
        for table in &call.tables {
            let used = (
                format!("dynamodb:{}", call.operation),
                arn(table, call.index.as_deref()),
            );
            assert!(
                allowed.contains(&used),
                "not allowed: {used:?}\n{document:#}"
            );
            made.insert(used);
        }
    }
    assert_eq!(
        made, allowed,
        "the policy allows actions the model's API never made"
    );
}

/// What parliament reports on `document`: its findings, one a line, and whether it passed.
fn parliament(document: &Value) -> (bool, String) {
    let document = document.to_string();
    lint("parliament", &["--string".as_ref(), document.as_ref()])
}

/// The control: a policy allowing `GetItem` on every resource gets a finding.
#[test]
fn parliament_reports_nothing_on_the_policy_of_any_example() {
    let examples = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples")).unwrap();
    let mut checked = 0;
    for example in examples {
        let path = example.unwrap().path().join("dynarelay.toml");
        if !path.exists() {
            continue;
        }
        let model = dynarelay::model::load(&path).unwrap();
        for (region, account) in [("eu-west-1", "123456789012"), ("*", "*")] {
            let target = PolicyTarget {
                prefix: "prod_".to_owned(),
                region: region.to_owned(),
                account: account.to_owned(),
            };
            let document = policy(&model, &target);
            let (passed, findings) = parliament(&document);
            assert!(passed, "{}: {findings}\n{document:#}", path.display());
            checked += 1;
        }
    }
    assert!(checked >= 18, "only {checked} policies checked");

    let control = json!({
        "Version": "2012-10-17",
        "Statement": [{ "Effect": "Allow", "Action": ["dynamodb:GetItem"], "Resource": "*" }]
    });
    let (passed, findings) = parliament(&control);
    assert!(!passed && findings.contains("Resource *"), "{findings}");
}

/// The shop served over `store` answers a `user` lookup (a GetItem).
async fn look_up_a_user(store: &dynarelay::dynamo::Store) -> Value {
    let router = dynarelay::http::router(model_state(
        shop(),
        store,
        dynarelay::pagination::PageLimits::default(),
        &test_ring(),
        dynarelay::http::HttpSettings::default(),
    ));
    post_graphql(&router, r#"{ user(userId: "u-1") { name } }"#, json!({})).await
}

/// Every app serving a model file holds its server's calls to the model's policy (see
/// `helpers::PolicyAudit`); this is the check that it can fail: held to the policy of another
/// table prefix, the shop's lookup is refused before it is sent, and remembered.
#[tokio::test]
async fn the_suites_policy_audit_refuses_a_call_the_policy_does_not_allow() {
    let app = crate::helpers::model_app("examples/shop/dynarelay.toml").await;
    let audit = PolicyAudit::new(shop(), "another_prefix_");
    let client = aws_sdk_dynamodb::Client::from_conf(
        app.client()
            .config()
            .to_builder()
            .interceptor(audit.clone())
            .build(),
    );
    let store =
        dynarelay::dynamo::Store::new(client, dynarelay::dynamo::Tables::new(shop(), &app.prefix));
    let response = look_up_a_user(&store).await;
    assert!(response.get("errors").is_some(), "{response}");
    let refused = audit.refused();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].starts_with("dynamodb:GetItem on arn:aws:dynamodb:*:*:table/")
            && refused[0].ends_with("Users"),
        "{refused:?}"
    );
}

/// The same check for servers that run as processes, whose DynamoDB calls go through
/// `FaultProxy::auditing`: held to the policy of another table prefix, the shop's lookup gets
/// `AccessDeniedException` from the proxy, and the refusal is remembered.
#[tokio::test]
async fn the_proxys_policy_audit_refuses_a_call_the_policy_does_not_allow() {
    let app = crate::helpers::model_app("examples/shop/dynarelay.toml").await;
    let proxy =
        crate::fault_proxy::FaultProxy::auditing(&crate::helpers::endpoint(), shop(), "another_")
            .await;
    let store = dynarelay::dynamo::Store::new(
        dynarelay::dynamo::client_for_local(&proxy.url()),
        dynarelay::dynamo::Tables::new(shop(), &app.prefix),
    );
    let response = look_up_a_user(&store).await;
    assert!(response.get("errors").is_some(), "{response}");
    let refused = proxy.refused();
    assert!(
        !refused.is_empty()
            && refused
                .iter()
                .all(|r| r.starts_with("dynamodb:GetItem on arn:aws:dynamodb:*:*:table/")),
        "{refused:?}"
    );
}
