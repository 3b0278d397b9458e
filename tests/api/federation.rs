//! Apollo Federation 2: the secure shop with `[federation]` as a subgraph beside a Relay-style
//! reviews subgraph written with `@apollo/subgraph` and a second dynarelay subgraph (the books
//! example with `node = false`), composed with `@apollo/composition` and served by
//! `@apollo/gateway` (`tests/clients/federation-gateway.mjs`); and `_entities` answered as the
//! gateway asks it, against the items in DynamoDB and the calls sent to it.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue::S;
use serde_json::{Value, json};

use crate::{
    helpers::{
        CallLog, ModelApp, Running, ShopTables, TestIssuer, auth_model_app, book_says,
        graphql_as as post, ground_truth, load_model_with, model_app_from, model_claims, run_node,
        serve_node, unique_prefix, walk_pages,
    },
    shop_data::{self, Dataset, SeedSpec},
};

/// The secure shop served as a subgraph that keeps `node`.
const SHOP: &str = "examples/shop/secure.toml";

/// What the shop subgraph adds to `secure.toml`: `[federation]`, and a product's review summary,
/// an entity of the reviews subgraph that the product refers to by its `sku`.
const FEDERATED: &str = r#"
[federation]

[federation.types.ReviewSummary]
description = "What reviewers say of a product, from the reviews subgraph."
key = { sku = "String!" }

[entities.Product.relations.reviewSummary]
type = "ReviewSummary!"
key = ["sku"]
description = "What reviewers say of the product."
"#;

/// The `data` of a response without errors.
fn data_of(answer: Value) -> Value {
    assert!(answer.get("errors").is_none(), "{answer}");
    answer["data"].clone()
}

/// The secure shop with `[federation]`, on fresh tables holding the demo data, with its call log.
async fn shop_subgraph(issuer: &TestIssuer) -> (ModelApp, CallLog, Dataset) {
    let model = load_model_with(SHOP, FEDERATED);
    let (app, log) = auth_model_app(model, issuer).await;
    let data = shop_data::generate(&SeedSpec::DEMO);
    let tables = ShopTables::with_prefix(&app.prefix);
    shop_data::write(&app.store, &tables, &data).await.unwrap();
    (app, log, data)
}

/// Tokens of the secure shop: a user's own, and an admin's.
fn token(issuer: &TestIssuer, app: &ModelApp, sub: &str, groups: &[&str]) -> String {
    issuer.mint(&model_claims(app.model, sub, groups))
}

/// The schema a subgraph gives the gateway: the Federation 2 link importing only the directives
/// it uses, a `@key` on `id` of every entity type and one on each lookup's arguments,
/// `PageInfo` shareable, and none of the gateway's own entry points; the same text as `dynarelay
/// schema --subgraph`; refused to a caller who may not introspect, as introspection is.
#[tokio::test]
async fn the_subgraph_schema_declares_keys_and_shared_types_and_follows_the_introspection_rule() {
    let issuer = TestIssuer::start().await;
    let model = load_model_with(SHOP, FEDERATED);
    let (app, _) = auth_model_app(model, &issuer).await;
    let server = Running::serve(app.router.clone()).await;
    let url = server.url("/graphql");
    let admin = token(&issuer, &app, "shop-admin", &["admin"]);
    let answer = post(&url, Some(&admin), "{ _service { sdl } }", json!({})).await;
    let sdl = answer["data"]["_service"]["sdl"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    assert!(
        sdl.starts_with(
            "extend schema\n  @link(url: \"https://specs.apollo.dev/federation/v2.3\", import: [\"@key\", \"@shareable\"])\n"
        ),
        "{sdl}"
    );
    for line in [
        "type User implements Node @key(fields: \"id\") @key(fields: \"userId\") {",
        "type Product implements Node @key(fields: \"id\") @key(fields: \"sku\") {",
        "type Purchase implements Node @key(fields: \"id\") {",
        "type PageInfo @shareable {",
        "type ReviewSummary @key(fields: \"sku\", resolvable: false) {",
        "reviewSummary: ReviewSummary!",
    ] {
        assert!(sdl.contains(line), "missing `{line}` in\n{sdl}");
    }
    for absent in ["_entities", "_service", "_Any", "_Entity", "_Service"] {
        assert!(!sdl.contains(absent), "`{absent}` in\n{sdl}");
    }
    assert_eq!(
        sdl,
        dynarelay::graphql::schema::subgraph_sdl(model).unwrap(),
        "`_service` and `dynarelay schema --subgraph` give the same schema"
    );
    // The API's own schema keeps the directives out (clients' tools do not know them).
    let api = dynarelay::graphql::sdl(model).unwrap();
    assert!(
        api.contains("_entities(representations: [_Any!]!): [_Entity]!"),
        "{api}"
    );
    assert!(
        !api.contains("@key(") && !api.contains("@shareable {"),
        "{api}"
    );

    let user = token(&issuer, &app, "u-anyone", &[]);
    for caller in [None, Some(user.as_str())] {
        let answer = post(&url, caller, "{ _service { sdl } }", json!({})).await;
        assert_eq!(
            answer["errors"][0]["extensions"]["code"], "FORBIDDEN",
            "{answer}"
        );
        assert!(answer.get("data").is_none_or(Value::is_null), "{answer}");
    }
}

/// `_entities` as the gateway sends it: 0, 1, 100 and 250 representations, by global id and by
/// a lookup's key, with duplicates, items that do not exist and items the caller may not see,
/// each answered in the order given (null for the missing and the hidden, exactly alike)
/// against the items in DynamoDB, every by-key representation read in `BatchGetItem` calls of
/// at most 100 distinct keys (one call for 100), none for items the rules hide by their key.
#[tokio::test]
async fn entities_answer_every_representation_in_order_in_batches_under_the_rules() {
    let issuer = TestIssuer::start().await;
    let (app, log, data) = shop_subgraph(&issuer).await;
    let server = Running::serve(app.router.clone()).await;
    let url = server.url("/graphql");
    let tables = ShopTables::with_prefix(&app.prefix);
    let admin = token(&issuer, &app, "shop-admin", &["admin"]);
    let owner_id = data.users[8].user_id.clone();
    let other_id = data.users[7].user_id.clone();
    let owner = token(&issuer, &app, &owner_id, &[]);

    // The purchases' ids, as the gateway would have them from an earlier fetch.
    let ids_of = |user: String| {
        let (url, admin) = (url.clone(), admin.clone());
        async move {
            let answer = post(
                &url,
                Some(&admin),
                "query($u: String!) { user(userId: $u) { purchases(first: 100) { edges { node { id purchasedAt amount } } } } }",
                json!({ "u": user }),
            )
            .await;
            answer["data"]["user"]["purchases"]["edges"]
                .as_array()
                .unwrap_or_else(|| panic!("{answer}"))
                .iter()
                .map(|e| e["node"].clone())
                .collect::<Vec<Value>>()
        }
    };
    let owners = ids_of(owner_id.clone()).await;
    let others = ids_of(other_id.clone()).await;
    assert_eq!((owners.len(), others.len()), (100, 100));
    // Three of the owner's purchases are deleted behind the API's back: their ids name nothing.
    let truth = ground_truth(
        &app,
        &tables.purchases,
        None,
        ("userId", S(owner_id.clone())),
        None,
        true,
    )
    .await;
    for item in &truth[97..100] {
        app.client()
            .delete_item()
            .table_name(&tables.purchases)
            .key("userId", item["userId"].clone())
            .key("purchasedAt", item["purchasedAt"].clone())
            .send()
            .await
            .unwrap();
    }

    const ENTITIES: &str = "query($r: [_Any!]!) { _entities(representations: $r) { __typename ... on Purchase { id purchasedAt amount } ... on User { userId name } ... on Product { sku name } } }";
    let purchase = |p: &Value| json!({ "__typename": "Purchase", "id": p["id"] });
    let expect_purchase = |p: &Value| json!({ "__typename": "Purchase", "id": p["id"], "purchasedAt": p["purchasedAt"], "amount": p["amount"] });

    // 0: nothing read.
    let mark = log.mark();
    let answer = post(&url, Some(&owner), ENTITIES, json!({ "r": [] })).await;
    assert_eq!(data_of(answer), json!({ "_entities": [] }));
    assert!(log.since(mark).is_empty());

    // 1: a user by the lookup's key.
    let answer = post(
        &url,
        Some(&owner),
        ENTITIES,
        json!({ "r": [{ "__typename": "User", "userId": owner_id }] }),
    )
    .await;
    let name = &data.users[8].name;
    assert_eq!(
        data_of(answer),
        json!({ "_entities": [{ "__typename": "User", "userId": owner_id, "name": name }] })
    );

    // 100 distinct keys: one BatchGetItem.
    let mark = log.mark();
    let hundred: Vec<Value> = owners[..97]
        .iter()
        .map(purchase)
        .chain(
            data.products[..3]
                .iter()
                .map(|p| json!({ "__typename": "Product", "sku": p.sku })),
        )
        .collect();
    let answer = post(&url, Some(&owner), ENTITIES, json!({ "r": hundred })).await;
    let expected: Vec<Value> = owners[..97]
        .iter()
        .map(expect_purchase)
        .chain(
            data.products[..3]
                .iter()
                .map(|p| json!({ "__typename": "Product", "sku": p.sku, "name": p.name })),
        )
        .collect();
    assert_eq!(data_of(answer), json!({ "_entities": expected }));
    let calls = log.since(mark);
    assert_eq!(
        calls.iter().map(|c| c.operation).collect::<Vec<_>>(),
        ["BatchGetItem"],
        "{calls:?}"
    );

    // 250: the owner's purchases twice over in part, three deleted, the other user's (hidden by
    // their key: never read), users and products by key and by id, a user that does not exist.
    let mut representations = Vec::new();
    let mut expected = Vec::new();
    for (i, p) in owners.iter().enumerate() {
        representations.push(purchase(p));
        expected.push(if i < 97 {
            expect_purchase(p)
        } else {
            Value::Null
        });
    }
    for p in &owners[..40] {
        representations.push(purchase(p));
        expected.push(expect_purchase(p));
    }
    for p in &others[..90] {
        representations.push(purchase(p));
        expected.push(Value::Null);
    }
    for user in &data.users[..9] {
        representations.push(json!({ "__typename": "User", "userId": user.user_id }));
        expected.push(json!({ "__typename": "User", "userId": user.user_id, "name": user.name }));
    }
    representations.push(json!({ "__typename": "User", "userId": "nobody-at-all" }));
    expected.push(Value::Null);
    for p in &data.products[..10] {
        representations.push(json!({ "__typename": "Product", "sku": p.sku }));
        expected.push(json!({ "__typename": "Product", "sku": p.sku, "name": p.name }));
    }
    assert_eq!(representations.len(), 250);
    let mark = log.mark();
    let answer = post(
        &url,
        Some(&owner),
        ENTITIES,
        json!({ "r": representations }),
    )
    .await;
    assert_eq!(data_of(answer), json!({ "_entities": expected }));
    let calls = log.since(mark);
    assert!(
        calls.iter().all(|c| c.operation == "BatchGetItem") && calls.len() == 2,
        "{calls:?}"
    );
    // Each distinct key once: the owner's 100 purchases (two key values each), 9 users and the
    // missing one, 10 products (one each): 120 keys, 220 values. The other user's id is read as
    // a user's key only: none of their purchases is read.
    let read: Vec<&String> = calls.iter().flat_map(|c| &c.values).collect();
    let times = |id: &String| read.iter().filter(|v| **v == id).count();
    assert_eq!((times(&owner_id), times(&other_id)), (101, 1), "{calls:?}");
    assert_eq!(read.len(), 220, "{calls:?}");

    // Admins see everyone's: the same representations, the other user's purchases present.
    let answer = post(
        &url,
        Some(&admin),
        ENTITIES,
        json!({ "r": [purchase(&others[0])] }),
    )
    .await;
    assert_eq!(
        data_of(answer),
        json!({ "_entities": [expect_purchase(&others[0])] })
    );

    // A reference that no gateway could have made is a request error, before any read.
    let mark = log.mark();
    for (bad, why) in [
        (json!({ "id": owners[0]["id"] }), "has no `__typename`"),
        (
            json!({ "__typename": "Nope", "id": "x" }),
            "names `Nope`, which is not an entity",
        ),
        (
            json!({ "__typename": "Purchase", "sku": "x" }),
            "names none of the keys of `Purchase`",
        ),
    ] {
        let answer = post(
            &url,
            Some(&owner),
            ENTITIES,
            json!({ "r": [purchase(&owners[0]), bad] }),
        )
        .await;
        assert_eq!(
            answer["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
            "{answer}"
        );
        let message = answer["errors"][0]["message"].as_str().unwrap();
        assert!(
            message.starts_with("Representation 1 ") && message.contains(why),
            "{message}"
        );
    }
    assert!(log.since(mark).is_empty());
}

/// The supergraph: the secure shop (keeping `node`), the books example (`node = false`) and a
/// Relay-style reviews subgraph compose; through the gateway a review's product and author come
/// from the shop, a product's reviews from the reviews subgraph, and the owner's purchases page
/// forward and backward to exactly their items in DynamoDB, each with its product and that
/// product's first review fetched from the other subgraph.
#[tokio::test]
async fn a_gateway_serves_the_shop_beside_other_subgraphs_with_entities_both_ways() {
    let issuer = TestIssuer::start().await;
    let (app, _, data) = shop_subgraph(&issuer).await;
    let shop = Running::serve(app.router.clone()).await;
    let books_model = "examples/books/dynarelay.toml";
    let books_text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(books_model))
            .unwrap();
    let books_app = model_app_from(&format!("{books_text}\n[federation]\nnode = false\n")).await;
    let books = Running::serve(books_app.router.clone()).await;

    // Reviews of the first products by the first users.
    let reviews: Vec<Value> = (0..12)
        .map(|i| {
            json!({
                "id": format!("r{i}"),
                "body": format!("Review {i}"),
                "sku": data.products[i % 4].sku,
                "userId": data.users[i % 5].user_id,
            })
        })
        .collect();
    let path = std::env::temp_dir().join(format!("dynarelay-reviews-{}.json", unique_prefix()));
    std::fs::write(&path, Value::Array(reviews.clone()).to_string()).unwrap();
    let admin = token(&issuer, &app, "shop-admin", &["admin"]);
    let gateway = serve_node(
        "federation-gateway.mjs",
        &[
            path.to_str().unwrap(),
            &format!("shop={}", shop.url("/graphql")),
            &format!("books={}", books.url("/graphql")),
        ],
        &[("DYNARELAY_TEST_SDL_TOKEN", &admin)],
    )
    .await;
    let url = gateway.ready["gateway"].as_str().unwrap().to_owned();
    let supergraph = gateway.ready["supergraph"].as_str().unwrap();
    assert!(
        supergraph.contains("@join__graph(name: \"shop\""),
        "{supergraph}"
    );
    assert!(
        supergraph.contains("@join__graph(name: \"books\""),
        "{supergraph}"
    );

    let owner_id = data.users[8].user_id.clone();
    let owner = token(&issuer, &app, &owner_id, &[]);
    let users: HashMap<&str, &str> = data
        .users
        .iter()
        .map(|u| (u.user_id.as_str(), u.name.as_str()))
        .collect();
    let products: HashMap<&str, &str> = data
        .products
        .iter()
        .map(|p| (p.sku.as_str(), p.name.as_str()))
        .collect();

    // reviews -> shop: a review's author and product.
    let answer = post(
        &url,
        Some(&owner),
        "{ review(id: \"r6\") { body author { userId name } product { sku name } } }",
        json!({}),
    )
    .await;
    let r6 = &reviews[6];
    let (sku, user) = (r6["sku"].as_str().unwrap(), r6["userId"].as_str().unwrap());
    assert_eq!(
        data_of(answer),
        json!({ "review": {
            "body": "Review 6",
            "author": { "userId": user, "name": users[user] },
            "product": { "sku": sku, "name": products[sku] },
        } })
    );

    // shop -> reviews -> shop: a product's reviews, and their authors.
    let sku = data.products[1].sku.as_str();
    let answer = post(
        &url,
        Some(&owner),
        "query($s: String!) { product(sku: $s) { name reviews(first: 2) { edges { node { body author { name } } } pageInfo { hasNextPage } } } }",
        json!({ "s": sku }),
    )
    .await;
    let mine: Vec<&Value> = reviews.iter().filter(|r| r["sku"] == sku).collect();
    let edges: Vec<Value> = mine[..2]
        .iter()
        .map(|r| json!({ "node": { "body": r["body"], "author": { "name": users[r["userId"].as_str().unwrap()] } } }))
        .collect();
    assert_eq!(
        data_of(answer),
        json!({ "product": { "name": products[sku], "reviews": {
            "edges": edges, "pageInfo": { "hasNextPage": mine.len() > 2 },
        } } })
    );

    // shop -> reviews: a product's review summary, an entity the reviews subgraph resolves from
    // the key the shop gives.
    let answer = post(
        &url,
        None,
        "query($s: String!) { product(sku: $s) { reviewSummary { sku count } } }",
        json!({ "s": sku }),
    )
    .await;
    assert_eq!(
        data_of(answer),
        json!({ "product": { "reviewSummary": { "sku": sku, "count": mine.len() } } })
    );

    // The books subgraph answers its own root fields through the same gateway.
    let answer = post(
        &url,
        Some(&owner),
        "{ authors(first: 3) { edges { node { id } } pageInfo { hasNextPage } } }",
        json!({}),
    )
    .await;
    assert_eq!(
        data_of(answer),
        json!({ "authors": { "edges": [], "pageInfo": { "hasNextPage": false } } })
    );

    // The owner's purchases, both ways, against DynamoDB's order.
    let tables = ShopTables::with_prefix(&app.prefix);
    let truth: Vec<String> = ground_truth(
        &app,
        &tables.purchases,
        None,
        ("userId", S(owner_id.clone())),
        None,
        true,
    )
    .await
    .iter()
    .map(|item| match &item["sku"] {
        S(sku) => sku.clone(),
        other => panic!("{other:?}"),
    })
    .collect();
    assert_eq!(truth.len(), 420);
    let query = "query($u: String!, $first: Int, $after: String, $last: Int, $before: String) { user(userId: $u) { purchases(first: $first, after: $after, last: $last, before: $before) { edges { cursor node { id product { sku name reviews(first: 1) { edges { node { id } } } reviewSummary { count } } } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }";
    let review_of = |sku: &str| {
        reviews
            .iter()
            .find(|r| r["sku"] == sku)
            .map(|r| r["id"].clone())
    };
    for forward in [true, false] {
        let nodes = walk_pages(
            |paging| {
                let mut variables = json!({ "u": owner_id });
                for (k, v) in paging.as_object().unwrap() {
                    variables[k] = v.clone();
                }
                let (url, owner) = (url.clone(), owner.clone());
                async move { post(&url, Some(&owner), query, variables).await }
            },
            &["user", "purchases"],
            37,
            forward,
            "the owner's purchases through the gateway",
        )
        .await;
        let skus: Vec<String> = nodes
            .iter()
            .map(|n| n["product"]["sku"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(skus, truth, "forward: {forward}");
        for node in &nodes {
            let sku = node["product"]["sku"].as_str().unwrap();
            assert_eq!(node["product"]["name"], products[sku]);
            let first = node["product"]["reviews"]["edges"]
                .as_array()
                .unwrap()
                .first()
                .map(|e| e["node"]["id"].clone());
            assert_eq!(first, review_of(sku), "{node}");
            let count = reviews.iter().filter(|r| r["sku"] == sku).count();
            assert_eq!(node["product"]["reviewSummary"]["count"], count, "{node}");
        }
    }
    gateway.stop().await;
    let _ = std::fs::remove_file(&path);
}

/// What `--max-body-bytes` means for a gateway's batches, as the guide says: 1,000
/// representations by global id (the most a request takes) are past the default 64 KiB of body,
/// and get 413 before anything is read; 500 of them are answered.
#[tokio::test]
async fn a_thousand_representations_by_id_are_past_the_default_body_limit() {
    const ENTITIES: &str =
        "query($r: [_Any!]!) { _entities(representations: $r) { ... on Purchase { id } } }";
    let issuer = TestIssuer::start().await;
    let (app, _log, data) = shop_subgraph(&issuer).await;
    let server = Running::serve(app.router.clone()).await;
    let url = server.url("/graphql");
    let admin = token(&issuer, &app, "shop-admin", &["admin"]);
    let user = data.users[8].user_id.clone();
    let page = post(
        &url,
        Some(&admin),
        "query($u: String!) { user(userId: $u) { purchases(first: 100) { edges { node { id } } } } }",
        json!({ "u": user }),
    )
    .await;
    let ids: Vec<Value> = page["data"]["user"]["purchases"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{page}"))
        .iter()
        .map(|edge| json!({ "__typename": "Purchase", "id": edge["node"]["id"] }))
        .collect();
    let representations =
        |n: usize| -> Vec<Value> { ids.iter().cycle().take(n).cloned().collect() };
    let body = |n: usize| json!({ "query": ENTITIES, "variables": { "r": representations(n) } });
    let thousand = body(1_000);
    assert!(thousand.to_string().len() > 64 * 1024);
    let refused = reqwest::Client::new()
        .post(&url)
        .bearer_auth(&admin)
        .json(&thousand)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 413);
    let answered = post(
        &url,
        Some(&admin),
        ENTITIES,
        json!({ "r": representations(500) }),
    )
    .await;
    let entities = data_of(answered)["_entities"].as_array().unwrap().len();
    assert_eq!(entities, 500);
    assert!(body(500).to_string().len() < 64 * 1024);
    book_says(
        "docs/src/guides/federation.md",
        "1,000 representations by global id are past the default body limit",
    );
}

/// A supergraph where two subgraphs keep `node` does not compose, and the script says so with
/// composition's own error: the reason for `node = false`. Nor does one where two subgraphs
/// have a root field of the same name (`Query.user`, a lookup in each), with `node = false`:
/// root field names must differ as type names do.
#[tokio::test]
async fn two_subgraphs_that_keep_node_or_share_a_root_field_do_not_compose() {
    /// A change to a model file's text.
    type Edit = fn(String) -> String;
    let federated = |path: &str, section: &str, edit: Edit| {
        let text =
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
                .unwrap();
        format!("{}\n{section}\n", edit(text))
    };
    let same: Edit = |text| text;
    let renamed: Edit = |text| text.replace("[lookups.author]", "[lookups.user]");
    let shop = model_app_from(&federated(
        "examples/shop/dynarelay.toml",
        "[federation]",
        same,
    ))
    .await;
    let cases = [
        ("[federation]", same, "Query.node"),
        ("[federation]\nnode = false", renamed, "Query.user"),
    ];
    for (books_section, edit, field) in cases {
        let books = model_app_from(&federated(
            "examples/books/dynarelay.toml",
            books_section,
            edit,
        ))
        .await;
        let (a, b) = (
            Running::serve(shop.router.clone()).await,
            Running::serve(books.router.clone()).await,
        );
        let path = std::env::temp_dir().join(format!("dynarelay-reviews-{}.json", unique_prefix()));
        std::fs::write(&path, "[]").unwrap();
        let run = run_node(
            "federation-gateway.mjs",
            &[
                path.to_str().unwrap(),
                &format!("shop={}", a.url("/graphql")),
                &format!("books={}", b.url("/graphql")),
            ],
            &[],
        )
        .await;
        run.assert_failure_mentioning("COMPOSITION: ");
        assert!(run.stderr.contains(field), "{field}: {}", run.stderr);
        let _ = std::fs::remove_file(&path);
    }
    book_says(
        "docs/src/guides/federation.md",
        "Root fields must differ between subgraphs too",
    );
}

/// By a lookup's key through an index and by a table key built from templates: the tickets
/// example's `Order` by `orderId` (through `GSI1`, where an item of no entity shares an order's
/// index key and is skipped, as the lookup skips it) and `Customer` by `email` (the facet of its
/// unescaped keys, `#` inside), beside an order by id, in the order given.
#[tokio::test]
async fn entities_by_an_index_lookup_and_by_a_templated_key() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tickets/dynarelay.toml"),
    )
    .unwrap();
    let app = model_app_from(&format!("{text}\n[federation]\n")).await;
    crate::foreign_keys::write_items(&app).await;
    let sdl = dynarelay::graphql::schema::subgraph_sdl(app.model).unwrap();
    for line in [
        "type Order implements Node @key(fields: \"id\") @key(fields: \"orderId\") {",
        "type Customer implements Node @key(fields: \"id\") @key(fields: \"email\") {",
    ] {
        assert!(sdl.contains(line), "missing `{line}` in\n{sdl}");
    }
    let o1 = data_of(
        app.graphql("{ order(orderId: \"o-1\") { id } }", json!({}))
            .await,
    );
    let o1_id = o1["order"]["id"].clone();
    let answer = app
        .graphql(
            "query($r: [_Any!]!) { _entities(representations: $r) { __typename ... on Order { orderId total customer { name } } ... on Customer { email name } } }",
            json!({ "r": [
                { "__typename": "Order", "orderId": "x#y" },
                { "__typename": "Customer", "email": "a#b@example.com" },
                { "__typename": "Order", "orderId": "nope" },
                { "__typename": "Order", "orderId": "z" },
                { "__typename": "Order", "id": o1_id },
                { "__typename": "Customer", "email": "a" },
                { "__typename": "Customer", "id": o1_id },
            ] }),
        )
        .await;
    let order = |id: &str, total: &str| json!({ "__typename": "Order", "orderId": id, "total": total, "customer": { "name": "A B" } });
    assert_eq!(
        data_of(answer),
        json!({ "_entities": [
            order("x#y", "20.5"),
            { "__typename": "Customer", "email": "a#b@example.com", "name": "A B" },
            null,
            order("z", "30"),
            order("o-1", "10"),
            { "__typename": "Customer", "email": "a", "name": "Just A" },
            // An order's id given as a customer's: nothing a gateway could have had from here.
            null,
        ] })
    );
}
