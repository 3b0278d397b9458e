//! Relay: relay-compiler (from npm) compiles `@connection` and `@refetchable` fragments, and a
//! subscription whose changes go into the connection with `@appendEdge` and `@deleteEdge`,
//! against `schema.graphql`, so the schema meets Relay's connection and object identification
//! requirements; and the queries Relay generates from them page through a running server.
//!
//! The documents are in `tests/clients/relay/src`; `tests/clients/relay-compile.mjs` compiles
//! them in a temporary directory and, given a server, walks each connection with the generated
//! page and pagination queries as `usePaginationFragment` would. `tests/clients/relay-live.mjs`
//! runs them in relay-runtime itself: the page in Relay's store, then the subscription's changes
//! applied to it by Relay's `@appendEdge` and `@deleteEdge`.

use chrono::{DateTime, SecondsFormat};
use dynarelay::{dynamo::Item, http::HttpSettings};
use serde_json::{Value, json};

use crate::helpers::{
    LOCAL_AWS, Running, TestApp, endpoint, live_router, model_app, product_item, purchase_item,
    put_plain, run_node, user_item, user_purchases,
};

const CATEGORY: &str = "relay-books";

/// `purchasedAt` as the API renders epoch milliseconds.
fn iso(epoch_ms: i64) -> String {
    DateTime::from_timestamp_millis(epoch_ms)
        .unwrap()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn product(sku: &str, name: &str, price: &str) -> Item {
    product_item(sku, name, CATEGORY, price)
}

#[tokio::test]
async fn relay_compiles_connection_and_refetchable_fragments_and_pages_with_their_queries() {
    let app = TestApp::spawn().await;
    // `put_purchases` buys SKU-00001, for an amount of `{ms % 1000}.5`.
    let ada = [
        1_700_000_000_101,
        1_700_000_100_202,
        1_700_000_200_303,
        1_700_000_300_404,
        1_700_000_400_505,
    ];
    let bob = [1_700_000_050_606, 1_700_000_350_707];
    app.put_user("relay-ada").await;
    app.put_user("relay-bob").await;
    app.put_purchases("relay-ada", &ada).await;
    app.put_purchases("relay-bob", &bob).await;
    app.put_items(
        &app.tables().products.clone(),
        vec![
            product("SKU-00001", "Field Guide", "19.99"),
            product("SKU-00002", "Pocket Atlas", "4.5"),
            product("SKU-00003", "Star Chart", "7"),
            product("SKU-00004", "Collected Letters", "120"),
            product("SKU-00005", "Bookmark", "0.99"),
        ],
    )
    .await;
    let server = Running::start(app.store.clone(), HttpSettings::default()).await;

    let endpoint = server.url("/graphql");
    let run = run_node(
        "relay-compile.mjs",
        &[
            "--endpoint",
            &endpoint,
            "--user",
            "relay-ada",
            "--sku",
            "SKU-00001",
            "--category",
            CATEGORY,
        ],
        &[],
    )
    .await;
    run.assert_success();
    let report: Value = serde_json::from_str(run.stdout.trim()).unwrap_or_else(|err| {
        panic!(
            "relay-compile.mjs printed no JSON report ({err}):\n{}",
            run.stdout
        )
    });

    assert_eq!(
        report["artifacts"],
        json!([
            "CategoryProductsPageQuery",
            "CategoryProductsPaginationQuery",
            "CategoryProducts_query",
            "ProductPurchasesPageQuery",
            "ProductPurchasesPaginationQuery",
            "ProductPurchases_product",
            "PurchaseStatusRefetchQuery",
            "PurchaseStatus_purchase",
            "UserPurchasesChangedSubscription",
            "UserPurchasesCreateMutation",
            "UserPurchasesDeleteMutation",
            "UserPurchasesPageQuery",
            "UserPurchasesPaginationQuery",
            "UserPurchases_user",
        ])
    );

    // Two at a time: the page query, then two refetches through node(id:) with endCursor.
    let ada_purchases: Vec<Value> = ada
        .iter()
        .map(|&ms| {
            json!({
                "purchasedAt": iso(ms),
                "amount": format!("{}.5", ms % 1000),
                "status": "PAID",
                "product": "Field Guide",
            })
        })
        .collect();
    assert_eq!(
        report["userPurchases"],
        json!({ "pageSizes": [2, 2, 1], "items": ada_purchases }),
        "{report}"
    );

    // Everyone's purchases of the product, newest first, across both buyers.
    let mut everyone: Vec<(i64, &str)> = ada
        .iter()
        .map(|&ms| (ms, "User relay-ada"))
        .chain(bob.iter().map(|&ms| (ms, "User relay-bob")))
        .collect();
    everyone.sort_by_key(|&(ms, _)| std::cmp::Reverse(ms));
    let product_purchases: Vec<Value> = everyone
        .iter()
        .map(|&(ms, user)| json!({ "purchasedAt": iso(ms), "user": user }))
        .collect();
    assert_eq!(
        report["productPurchases"],
        json!({ "pageSizes": [2, 2, 2, 1], "items": product_purchases }),
        "{report}"
    );

    // Backward from the dearest (`last`/`before` with startCursor), shown cheapest first.
    assert_eq!(
        report["categoryProducts"],
        json!({
            "pageSizes": [2, 2, 1],
            "items": [
                { "sku": "SKU-00005", "price": "0.99" },
                { "sku": "SKU-00002", "price": "4.5" },
                { "sku": "SKU-00003", "price": "7" },
                { "sku": "SKU-00001", "price": "19.99" },
                { "sku": "SKU-00004", "price": "120" },
            ],
        }),
        "{report}"
    );

    assert_eq!(
        report["refetchedPurchase"],
        json!({ "__typename": "Purchase", "purchasedAt": iso(ada[0]), "status": "PAID" })
    );
}

/// The same documents fail to compile against a schema that lacks what Relay relies on, with
/// relay-compiler's own diagnostics: the compile check above is not vacuous.
///
/// Seen failing: with `PageInfo.endCursor` renamed to `lastCursor`, relay-compiler exits 1 with
/// "@connection used on invalid field 'purchases'. Expected the field type 'PurchaseConnection'
/// to expose a 'pageInfo { endCursor }' field that returns a scalar." (and the same for
/// `ProductConnection` and the other `purchases`); with `Query.node` renamed to `nodeById`, with
/// "Invalid use of @refetchable on fragment 'UserPurchases_user', check that your schema defines
/// a `Node { id: ID }` interface and has a `node(id: ID): Node` field on the query type" for each
/// fragment on a `Node` type.
#[tokio::test]
async fn relay_compiler_rejects_a_schema_without_end_cursors_or_node() {
    let schema = include_str!("../../schema.graphql");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("relay-schemas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let mutated = |name: &str, from: &str, to: &str| {
        assert_eq!(
            schema.matches(from).count(),
            1,
            "`{from}` in schema.graphql"
        );
        let path = dir.join(name);
        std::fs::write(&path, schema.replace(from, to)).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let no_end_cursor = mutated(
        "no-end-cursor.graphql",
        "endCursor: String",
        "lastCursor: String",
    );
    let no_node = mutated(
        "no-node.graphql",
        "node(id: ID!): Node",
        "nodeById(id: ID!): Node",
    );

    let (end_cursor_args, node_args) = (["--schema", &no_end_cursor], ["--schema", &no_node]);
    let (without_end_cursor, without_node) = tokio::join!(
        run_node("relay-compile.mjs", &end_cursor_args, &[]),
        run_node("relay-compile.mjs", &node_args, &[]),
    );
    std::fs::remove_dir_all(&dir).unwrap();

    without_end_cursor
        .assert_failure_mentioning("relay-compiler failed")
        .assert_failure_mentioning(
            "Expected the field type 'PurchaseConnection' to expose a 'pageInfo { endCursor }' field",
        )
        .assert_failure_mentioning(
            "Expected the field type 'ProductConnection' to expose a 'pageInfo { endCursor }' field",
        );
    without_node
        .assert_failure_mentioning("relay-compiler failed")
        .assert_failure_mentioning("Invalid use of @refetchable on fragment 'UserPurchases_user'")
        .assert_failure_mentioning(
            "Invalid use of @refetchable on fragment 'PurchaseStatus_purchase'",
        );
}

/// Relay's own runtime follows a user's purchases: the page query fills the connection in the
/// store, the subscription resumes from its `endCursor` (a purchase written between the two
/// arrives first), and the changes written behind dynarelay's back go into the store's connection
/// through `@appendEdge` and `@deleteEdge`: an update changes the node in place, a delete takes
/// its edge out. The store's connection ends equal to DynamoDB's read, every edge with a cursor.
#[tokio::test]
async fn relay_runtime_applies_pushed_edges_to_the_connection_it_paged() {
    let app = model_app("examples/shop/dynarelay.toml").await;
    let user = "relay-live";
    let (users, purchases) = (app.table("Users"), app.table("Purchases"));
    put_plain(app.client(), &users, [user_item(user)]).await;
    put_plain(
        app.client(),
        &app.table("Products"),
        [product("SKU-00001", "Field Guide", "19.99")],
    )
    .await;
    let t0: i64 = 1_800_000_000_000;
    let seeded = [t0 - 3_000, t0 - 2_000, t0 - 1_000];
    put_plain(
        app.client(),
        &purchases,
        seeded.map(|ms| purchase_item(user, &ms.to_string(), "9.99")),
    )
    .await;
    let server = Running::serve(live_router(&app)).await;

    let run = run_node(
        "relay-live.mjs",
        &[
            &server.url("/graphql"),
            &endpoint(),
            &purchases,
            user,
            &t0.to_string(),
        ],
        &LOCAL_AWS,
    )
    .await;
    run.assert_success();
    let got: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|err| panic!("relay-live.mjs printed no JSON ({err}):\n{}", run.stdout));

    let want: Vec<Value> = user_purchases(&app, user)
        .await
        .iter()
        .map(|item| {
            let ms: i64 = item["purchasedAt"].as_n().unwrap().parse().unwrap();
            json!({ "purchasedAt": iso(ms), "amount": item["amount"].as_n().unwrap(),
                    "cursor": true })
        })
        .collect();
    // The seeded three, 1 (brought by the resume), 2 as changed and 4; 3 came and went.
    assert_eq!(want.len(), 6, "{want:?}");
    assert_eq!(want[4]["amount"], "2.25");
    assert_eq!(got["edges"], json!(want), "{got}");
    // 1 from the resume; once it arrived, the rest from the stream, each applied by Relay.
    assert_eq!(
        got["kinds"],
        json!(["ADDED", "ADDED", "ADDED", "UPDATED", "REMOVED", "ADDED"]),
        "{got}"
    );
}
