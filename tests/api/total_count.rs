//! `totalCount` on the secure shop's `User.purchases` (declared `total_count = true`): exact
//! against the data for partitions of 0, 1, 20, 21, ... 420 and 4,000 items (more than one 1 MB
//! read), with each filter, under the owner rule; `null` with `COUNT_BUDGET_EXCEEDED` past the
//! count budget, exactly at its edge; read only when selected, and counted in the cost
//! extension, by the calls DynamoDB received.

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::{dynamo::Item, model::Model, pagination::PageLimits};
use serde_json::{Value, json};

use crate::{
    helpers::{
        CallLog, ModelApp, Running, ShopTables, TestIssuer, auth_model_app, auth_router_with,
        graphql_as, model_claims, user_item,
    },
    shop_data::{self, Dataset, PurchaseStatus, SeedSpec},
};

/// The secure shop with `totalCount` on `User.purchases`.
fn counted_shop() -> &'static Model {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/shop/secure.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let from = "[entities.User.connections.purchases]\nentity = \"Purchase\"\n";
    assert!(text.contains(from), "User.purchases moved in secure.toml");
    let text = text.replacen(from, &format!("{from}total_count = true\n"), 1);
    Box::leak(Box::new(
        dynarelay::model::parse("secure.toml with totalCount", &text)
            .unwrap_or_else(|e| panic!("{e}")),
    ))
}

/// The user with more purchases than one Query reads (each carries a 300-byte memo that the
/// model does not declare: 4,000 of them are about 1.6 MB).
const MANY: &str = "u-with-4000-purchases";
const MANY_COUNT: usize = 4000;

/// The demo data, and [`MANY`]'s purchases, on fresh tables.
async fn seeded(issuer: &TestIssuer) -> (ModelApp, CallLog, Dataset) {
    let (app, log) = auth_model_app(counted_shop(), issuer).await;
    let data = shop_data::generate(&SeedSpec::DEMO);
    let tables = ShopTables::with_prefix(&app.prefix);
    shop_data::write(&app.store, &tables, &data).await.unwrap();
    let memo = "m".repeat(300);
    let many: Vec<Item> = (0..MANY_COUNT)
        .map(|i| {
            Item::from([
                ("userId".to_owned(), AttributeValue::S(MANY.to_owned())),
                (
                    "purchasedAt".to_owned(),
                    AttributeValue::N((1_700_000_000_000u64 + i as u64).to_string()),
                ),
                ("sku".to_owned(), AttributeValue::S("SKU-00001".to_owned())),
                ("quantity".to_owned(), AttributeValue::N("1".to_owned())),
                (
                    "amount".to_owned(),
                    AttributeValue::N(format!("{}.5", i % 100)),
                ),
                (
                    "status".to_owned(),
                    AttributeValue::S(if i % 3 == 0 { "PAID" } else { "PENDING" }.to_owned()),
                ),
                ("memo".to_owned(), AttributeValue::S(memo.clone())),
            ])
        })
        .collect();
    app.store.put_items(&tables.purchases, many).await.unwrap();
    app.store
        .put_items(&tables.users, vec![user_item(MANY)])
        .await
        .unwrap();
    (app, log, data)
}

const PAGE: &str = "query($u: String!, $status: PurchaseStatus, $min: Decimal, $after: String) { user(userId: $u) { purchases(first: 5, after: $after, status: $status, minAmount: $min) { totalCount edges { cursor } pageInfo { endCursor } } } }";

/// POSTs `query` with a bearer token.
async fn post(url: &str, token: &str, query: &str, variables: Value) -> Value {
    graphql_as(url, Some(token), query, variables).await
}

/// Every user's purchases counted with no filter, `status: PAID` and `minAmount: "50"`, as
/// the data holds them; the count the same on a later page (`after`); the owner counting their
/// own, and refused another's before any read.
#[tokio::test]
async fn total_count_is_exact_for_every_partition_with_its_filters_and_rules() {
    let issuer = TestIssuer::start().await;
    let (app, log, data) = seeded(&issuer).await;
    let server = Running::serve(app.router.clone()).await;
    let url = server.url("/graphql");
    let admin = issuer.mint(&model_claims(app.model, "shop-admin", &["admin"]));

    // (user, amounts and statuses of their purchases)
    let mut users: Vec<(String, Vec<(f64, &str)>)> = data
        .users
        .iter()
        .map(|u| {
            let purchases = data
                .purchases
                .iter()
                .filter(|p| p.user_id == u.user_id)
                .map(|p| (p.amount.to_string().parse().unwrap(), p.status.as_str()))
                .collect();
            (u.user_id.clone(), purchases)
        })
        .collect();
    users.push((
        MANY.to_owned(),
        (0..MANY_COUNT)
            .map(|i| {
                let amount = (i % 100) as f64 + 0.5;
                let status = if i % 3 == 0 {
                    PurchaseStatus::Paid
                } else {
                    PurchaseStatus::Pending
                };
                (amount, status.as_str())
            })
            .collect(),
    ));
    let sizes: Vec<usize> = users.iter().map(|(_, p)| p.len()).collect();
    for special in shop_data::SPECIAL_COUNTS {
        assert!(sizes.contains(&special), "no user with {special} purchases");
    }
    for (user, purchases) in &users {
        for (filter, expected) in [
            (json!({}), purchases.len()),
            (
                json!({ "status": "PAID" }),
                purchases.iter().filter(|(_, s)| *s == "PAID").count(),
            ),
            (
                json!({ "min": "50" }),
                purchases.iter().filter(|(a, _)| *a >= 50.0).count(),
            ),
        ] {
            let mut variables = filter.clone();
            variables["u"] = json!(user);
            let mark = log.mark();
            let answer = post(&url, &admin, PAGE, variables.clone()).await;
            assert!(answer.get("errors").is_none(), "{answer}");
            let purchases = &answer["data"]["user"]["purchases"];
            assert_eq!(purchases["totalCount"], expected, "{user} {filter}");
            // The cost extension counts the count's calls, as DynamoDB received them.
            let calls = log.since(mark);
            assert_eq!(
                answer["extensions"]["cost"]["dynamodbCalls"],
                calls.len(),
                "{calls:?}"
            );
            if user == MANY && filter == json!({}) {
                // 1.6 MB: the count follows DynamoDB's pages to the end.
                let queries = calls.iter().filter(|c| c.operation == "Query").count();
                assert!(
                    queries >= 3,
                    "one page read and at least two count reads: {calls:?}"
                );
            }
            // On the next page: the same count.
            if let Some(after) = purchases["pageInfo"]["endCursor"].as_str() {
                variables["after"] = json!(after);
                let next = post(&url, &admin, PAGE, variables).await;
                assert_eq!(
                    next["data"]["user"]["purchases"]["totalCount"], expected,
                    "{next}"
                );
            }
        }
    }

    // The owner counts their own; another's partition is refused before any read.
    let (owner, other) = (&data.users[8].user_id, &data.users[7].user_id);
    let token = issuer.mint(&model_claims(app.model, owner, &[]));
    let answer = post(&url, &token, PAGE, json!({ "u": owner })).await;
    assert_eq!(
        answer["data"]["user"]["purchases"]["totalCount"], 420,
        "{answer}"
    );
    let mark = log.mark();
    let answer = post(&url, &token, PAGE, json!({ "u": other })).await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "FORBIDDEN",
        "{answer}"
    );
    assert!(
        log.since(mark).iter().all(|c| c.operation != "Query"),
        "{:?}",
        log.since(mark)
    );
}

/// A page that does not select `totalCount` sends no count; past the count budget the answer is
/// `null` with `COUNT_BUDGET_EXCEEDED` at `totalCount` while the page itself is served, and at
/// the budget itself the count is exact.
#[tokio::test]
async fn total_count_is_read_only_when_selected_and_never_past_its_budget() {
    let issuer = TestIssuer::start().await;
    let (app, log, data) = seeded(&issuer).await;
    let admin = issuer.mint(&model_claims(app.model, "shop-admin", &["admin"]));
    let user = data.users[8].user_id.clone();

    let server = Running::serve(app.router.clone()).await;
    let url = server.url("/graphql");
    let unselected =
        "query($u: String!) { user(userId: $u) { purchases(first: 5) { edges { cursor } } } }";
    for _ in 0..2 {
        // (The second time through the direct executor, which answers documents seen before.)
        let mark = log.mark();
        let answer = post(&url, &admin, unselected, json!({ "u": user })).await;
        assert!(answer.get("errors").is_none(), "{answer}");
        let queries = log
            .since(mark)
            .iter()
            .filter(|c| c.operation == "Query")
            .count();
        assert_eq!(queries, 1, "the page's one Query, no count");
    }

    for (budget, user, expected) in [
        (420, user.as_str(), Some(420)),
        (419, user.as_str(), None),
        (1000, MANY, None),
    ] {
        let limits = PageLimits::default().with_count_budget(budget);
        let router = auth_router_with(app.model, &app.store, &issuer, limits).await;
        let server = Running::serve(router).await;
        let answer = post(&server.url("/graphql"), &admin, PAGE, json!({ "u": user })).await;
        let purchases = &answer["data"]["user"]["purchases"];
        assert_eq!(
            purchases["edges"].as_array().map(Vec::len),
            Some(5),
            "{answer}"
        );
        match expected {
            Some(n) => {
                assert!(answer.get("errors").is_none(), "{answer}");
                assert_eq!(purchases["totalCount"], n, "{answer}");
            }
            None => {
                assert_eq!(purchases["totalCount"], Value::Null, "{answer}");
                let error = &answer["errors"][0];
                assert_eq!(
                    error["extensions"]["code"], "COUNT_BUDGET_EXCEEDED",
                    "{answer}"
                );
                assert_eq!(error["path"], json!(["user", "purchases", "totalCount"]));
                assert!(
                    error["message"]
                        .as_str()
                        .unwrap()
                        .contains(&budget.to_string()),
                    "{answer}"
                );
            }
        }
    }
}
