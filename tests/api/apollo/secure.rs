//! Apollo Client with a bearer token pages the secure shop (`examples/shop/secure.toml`) to
//! exactly the caller's purchases.

use serde_json::{Value, json};

use super::purchase_id;
use crate::{
    helpers::{NodeRun, Running, ground_truth, run_node, unique_prefix},
    shop_data::{self, SeedSpec},
};

/// Runs `apollo-secure.mjs` against `url` with `plan`, the tokens in its environment.
async fn run_secure(url: &str, plan: &Value, tokens: [&str; 3]) -> NodeRun {
    let path =
        std::env::temp_dir().join(format!("dynarelay-apollo-secure-{}.json", unique_prefix()));
    std::fs::write(&path, plan.to_string()).unwrap();
    let [owner, other, admin] = tokens;
    let run = run_node(
        "apollo-secure.mjs",
        &[url, path.to_str().unwrap()],
        &[
            ("DYNARELAY_TEST_OWNER_TOKEN", owner),
            ("DYNARELAY_TEST_OTHER_TOKEN", other),
            ("DYNARELAY_TEST_ADMIN_TOKEN", admin),
        ],
    )
    .await;
    let _ = std::fs::remove_file(&path);
    run
}

/// Apollo Client with an auth link sending each session's bearer token (minted by a
/// `TestIssuer` whose JWKS is served on loopback, with the `iss`, `aud` and groups claim of
/// `examples/shop/secure.toml`'s `[auth]`) pages through `user(userId: <self>) { purchases }` of
/// the secure shop with `relayStylePagination` and `fetchMore`, by 37, for the demo data's user
/// with 420 purchases and the one with 250. Each session's cache ends with exactly its user's
/// purchases from DynamoDB, in order, in full pages, with no duplicates and no purchase of anyone
/// else. The owner's first `endCursor` continuing the other user's list is refused with
/// `BAD_USER_INPUT`, and continuing the owner's list under an admin's token (who may read it) too:
/// a cursor belongs to its caller. The other user asking for the owner's purchases, with or
/// without that cursor, gets `FORBIDDEN`, and so does a request without a token at `user`; each
/// refusal reaches Apollo as `CombinedGraphQLErrors` and carries no purchase, and the caches hold
/// their lists unchanged afterwards.
///
/// Seen to fail: the same script against the same tables served from `secure.toml` without
/// `Purchase`'s `allow` rules (owner or admin) fails, at the end of this test: the other user
/// reads the owner's purchases (which then sit in their cache), and the admin continues from the
/// owner's cursor, which is no longer bound to its caller. (The owner's cursor continuing the
/// other user's list is refused even then: it belongs to the owner's partition.)
#[tokio::test]
async fn apollo_pages_the_secure_shop_with_a_token_to_exactly_the_callers_purchases() {
    use crate::helpers::{ShopTables, TestIssuer, auth_router, model_claims, secure_app};
    use aws_sdk_dynamodb::types::AttributeValue::S;

    const SIZE: usize = 37;
    let issuer = TestIssuer::start().await;
    let app = secure_app(&issuer).await;
    let data = shop_data::generate(&SeedSpec::DEMO);
    let tables = ShopTables::with_prefix(&app.prefix);
    shop_data::write(&app.store, &tables, &data).await.unwrap();

    // The ground truth: each user's purchases by plain SDK Queries.
    let mut users = Vec::new();
    for (index, count) in [(8, 420), (7, 250)] {
        let user = data.users[index].user_id.clone();
        assert_eq!(shop_data::SPECIAL_COUNTS[index], count);
        let items = ground_truth(
            &app,
            &tables.purchases,
            None,
            ("userId", S(user.clone())),
            None,
            true,
        )
        .await;
        let expected: Vec<String> = items.iter().map(purchase_id).collect();
        assert_eq!(expected.len(), count, "{user}");
        users.push(json!({ "userId": user, "expected": expected }));
    }
    let plan = json!({ "pageSize": SIZE, "owner": users[0], "other": users[1] });

    // Tokens as the model's identity provider would issue them.
    let token = |sub: &str, groups: &[&str]| issuer.mint(&model_claims(app.model, sub, groups));
    let owner = token(users[0]["userId"].as_str().unwrap(), &[]);
    let other = token(users[1]["userId"].as_str().unwrap(), &[]);
    let admin = token("shop-admin", &["admin"]);
    let tokens = [owner.as_str(), other.as_str(), admin.as_str()];

    let server = Running::serve(app.router.clone()).await;
    let run = run_secure(&server.url("/graphql"), &plan, tokens).await;
    run.assert_success();
    let line = run.stdout.lines().last().unwrap_or_default();
    let got: Value = serde_json::from_str(line).unwrap();
    for (who, user) in [("owner", &users[0]), ("other", &users[1])] {
        let walk = &got["walks"][who];
        assert_eq!(walk["list"], user["expected"], "{who}");
        let n = user["expected"].as_array().unwrap().len();
        assert_eq!(walk["pages"], n.div_ceil(SIZE), "{who}: {walk}");
    }
    let refusal = |code: &str, path: Value| json!({ "status": 200, "code": code, "path": path });
    assert_eq!(
        got["refusals"],
        json!({
            "otherContinuesFromOwnersCursor": refusal("BAD_USER_INPUT", json!(["user", "purchases"])),
            "otherReadsOwners": refusal("FORBIDDEN", json!(["user", "purchases"])),
            "otherReadsOwnersFromCursor": refusal("FORBIDDEN", json!(["user", "purchases"])),
            "adminContinuesFromOwnersCursor": refusal("BAD_USER_INPUT", json!(["user", "purchases"])),
            "anonymousReadsOwners": refusal("FORBIDDEN", json!(["user"])),
        }),
        "{}",
        run.stdout
    );
    assert_eq!(issuer.hits(), 1, "the JWKS is fetched once, at start");

    // The same tables served without `Purchase`'s rules: the script's checks fail.
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/shop/secure.toml"),
    )
    .unwrap();
    let rule = "id_tag = \"P\"\nallow = [{ owner = \"userId\" }, { groups = [\"admin\"] }]\n";
    assert!(text.contains(rule), "Purchase's rules moved in secure.toml");
    let open_text = text.replace(rule, "id_tag = \"P\"\n");
    let open: &'static dynarelay::model::Model = Box::leak(Box::new(
        dynarelay::model::parse("secure.toml without Purchase's rules", &open_text)
            .unwrap_or_else(|e| panic!("{e}")),
    ));
    let open_store = dynarelay::dynamo::Store::new(
        app.client().clone(),
        dynarelay::dynamo::Tables::new(open, &app.prefix),
    );
    let open_server = Running::serve(auth_router(open, &open_store, &issuer).await).await;
    run_secure(&open_server.url("/graphql"), &plan, tokens)
        .await
        .assert_failure_mentioning("ACCEPTED: the owner's purchases with the other user's token")
        .assert_failure_mentioning("LEAK: the owner's purchases with the other user's token")
        .assert_failure_mentioning(
            "ACCEPTED: the owner's purchases after the owner's cursor with an admin's token",
        )
        .assert_failure_mentioning("FOREIGN: other user's cache holds");
}
