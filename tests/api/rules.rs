//! Who may see what, attack by attack, against `examples/shop/secure.toml` served with bearer
//! tokens from a [`TestIssuer`]. Each test checks the coded answer, the DynamoDB calls the
//! request made (from the server's `dynarelay_dynamodb_calls_total`, cross-checked against
//! `extensions.cost` and against a log of every call the SDK client sent, with the key values it
//! named: nothing is read that the caller may not see), and, for refused writes, that nothing was
//! written.
//!
//! Where a rule can be taken out of the model and the model still loads, the test also serves
//! the same tables from `secure.toml` without that rule and shows the attack then succeeds, so
//! the test would fail without the rule.
//!
//! The seeded shop (`shop_data::generate`, 5 users, 6 products): user 3 ("A") has 21
//! purchases, user 2 ("B") 20, user 1 one, user 0 none. The admin (`shop-admin`, group
//! `admin`) is not a user of the shop.

use std::{collections::BTreeMap, sync::OnceLock};

use aws_sdk_dynamodb::types::AttributeValue::{self, N, S};
use axum::{Router, http::StatusCode};
use dynarelay::{
    cursor::Key,
    dynamo::{Item, Store, Tables},
    graphql::node::node_id,
    model::Model,
};
use serde_json::{Value, json};

use crate::{
    helpers::{
        CallLog, GroundQuery, LoggedCall, ModelApp, ShopTables, TestIssuer, auth_model_app,
        auth_router, dynamodb_calls, graphql_with_token, merge, metric_sum, model_claims,
        purchase_item, secure_app_logged, walk_pages,
    },
    shop_data::{self, Dataset, SeedSpec},
};

/// The seeded users the tests play.
const A: usize = 3;
const B: usize = 2;
/// The admin's `sub`; not a user of the shop.
const ADMIN: &str = "shop-admin";

const PURCHASES: &str = r#"query($user: String!, $first: Int, $after: String) {
  user(userId: $user) {
    purchases(first: $first, after: $after) {
      edges { cursor node { id userId purchasedAt amount } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}"#;

const NODE: &str = r#"query($id: ID!) {
  node(id: $id) { id ... on Purchase { userId amount } ... on User { userId name } }
}"#;

const NODES: &str = r#"query($ids: [ID!]!) {
  nodes(ids: $ids) { id ... on Purchase { userId amount } }
}"#;

const USER: &str = r#"query($user: String!) { user(userId: $user) { userId name email } }"#;

const DELETE_PURCHASE: &str =
    r#"mutation($id: ID!) { deletePurchase(input: { id: $id }) { deletedPurchaseId } }"#;

/// A server over the shop's tables (or the market's), with the log of its client's calls.
struct Served {
    store: Store,
    router: Router,
    prefix: String,
    log: CallLog,
}

impl Served {
    fn of(app: &ModelApp, log: &CallLog) -> Self {
        Self {
            store: app.store.clone(),
            router: app.router.clone(),
            prefix: app.prefix.clone(),
            log: log.clone(),
        }
    }

    /// The DynamoDB calls the server has made so far, as its metrics count them.
    fn calls(&self) -> BTreeMap<String, f64> {
        dynamodb_calls(&self.store.metrics().render(), &self.prefix)
    }

    /// Sends one request and returns its answer with the DynamoDB calls it made.
    async fn ask(&self, token: Option<&str>, query: &str, variables: Value) -> Seen {
        let before = self.calls();
        let mark = self.log.mark();
        let answer = graphql_with_token(&self.router, token, query, variables).await;
        let after = self.calls();
        let log = self.log.since(mark);
        let mut calls = BTreeMap::new();
        for (key, n) in &after {
            let delta = n - before.get(key).copied().unwrap_or(0.0);
            if delta != 0.0 {
                calls.insert(key.clone(), delta);
            }
        }
        let body = answer.body;
        assert_ne!(answer.status, StatusCode::UNAUTHORIZED, "{body}");
        // Three counts of the same calls agree: the metrics, the client's log, and what the
        // response says it cost.
        let total: f64 = calls.values().sum();
        assert_eq!(
            total,
            log.len() as f64,
            "metrics {calls:?} against log {log:?}"
        );
        if let Some(cost) = body["extensions"]["cost"]["dynamodbCalls"].as_f64() {
            assert_eq!(
                cost, total,
                "extensions.cost against metrics {calls:?}: {body}"
            );
        }
        Seen { body, calls, log }
    }

    /// The body of [`ask`](Self::ask).
    async fn body(&self, token: Option<&str>, query: &str, variables: Value) -> Value {
        self.ask(token, query, variables).await.body
    }
}

/// One request's answer and the DynamoDB calls it made.
struct Seen {
    body: Value,
    /// By `"{operation} {table}"` (and outcome, when not ok), from the metrics.
    calls: BTreeMap<String, f64>,
    /// Every call the client sent, with its key values.
    log: Vec<LoggedCall>,
}

impl Seen {
    /// The data of an answer without errors.
    fn ok(&self, label: &str) -> &Value {
        assert!(self.body.get("errors").is_none(), "{label}: {}", self.body);
        &self.body["data"]
    }

    /// Exactly one error, with `code` at `path` (no path: a request error, without data);
    /// returns its message.
    fn refused(&self, code: &str, path: Value, label: &str) -> &str {
        let errors = self.body["errors"]
            .as_array()
            .unwrap_or_else(|| panic!("{label}: not refused: {}", self.body));
        assert_eq!(errors.len(), 1, "{label}: {}", self.body);
        let error = &errors[0];
        assert_eq!(error["extensions"]["code"], code, "{label}: {}", self.body);
        if path.is_null() {
            assert!(error.get("path").is_none(), "{label}: {}", self.body);
            assert!(self.body.get("data").is_none(), "{label}: {}", self.body);
        } else {
            assert_eq!(error["path"], path, "{label}: {}", self.body);
        }
        error["message"].as_str().unwrap()
    }

    /// No DynamoDB call at all.
    fn nothing_read(&self, label: &str) {
        assert!(
            self.calls.is_empty() && self.log.is_empty(),
            "{label}: {:?} {:?}",
            self.calls,
            self.log
        );
    }

    /// No call named table `table`.
    fn no_call_on(&self, table: &str, label: &str) {
        let on: Vec<&LoggedCall> = self
            .log
            .iter()
            .filter(|c| c.tables.iter().any(|t| t.ends_with(&format!("_{table}"))))
            .collect();
        assert!(on.is_empty(), "{label}: calls on {table}: {on:?}");
    }

    /// No call on `table` named `value` (a user id: that user's items).
    fn untouched(&self, table: &str, value: &str, label: &str) {
        let on: Vec<&LoggedCall> = self
            .log
            .iter()
            .filter(|c| c.touches(table, value))
            .collect();
        assert!(on.is_empty(), "{label}: {value} on {table}: {on:?}");
    }
}

/// `"{operation} {table}"` counts, for comparing with [`Seen::calls`].
fn calls(expected: &[(&str, f64)]) -> BTreeMap<String, f64> {
    expected
        .iter()
        .map(|(k, n)| ((*k).to_owned(), *n))
        .collect()
}

/// The global id of `item`, an item of `entity`.
fn gid(model: &Model, entity: &str, item: &Item) -> String {
    let e = model.entity_named(entity).unwrap();
    let key = Key::from_item(item, model.table_of(e).key).unwrap();
    node_id(model, e, &key)
}

/// The `id`s of `nodes`.
fn ids(nodes: &[Value]) -> Vec<String> {
    nodes
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The ids of a connection's page.
fn page_ids(connection: &Value) -> Vec<String> {
    connection["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("no edges: {connection}"))
        .iter()
        .map(|e| e["node"]["id"].as_str().unwrap().to_owned())
        .collect()
}

fn end_cursor(connection: &Value) -> String {
    connection["pageInfo"]["endCursor"]
        .as_str()
        .unwrap_or_else(|| panic!("no end cursor: {connection}"))
        .to_owned()
}

/// The secure shop, seeded, and who plays in it.
struct Shop {
    issuer: TestIssuer,
    app: ModelApp,
    served: Served,
    tables: ShopTables,
    data: Dataset,
}

impl Shop {
    async fn start() -> Self {
        let issuer = TestIssuer::start().await;
        let (app, log) = secure_app_logged(&issuer).await;
        let tables = ShopTables::with_prefix(&app.prefix);
        let data = shop_data::generate(&SeedSpec {
            seed: 7,
            users: 5,
            products: 6,
            categories: 2,
        });
        shop_data::write(&app.store, &tables, &data).await.unwrap();
        let served = Served::of(&app, &log);
        Self {
            issuer,
            app,
            served,
            tables,
            data,
        }
    }

    fn model(&self) -> &'static Model {
        self.app.model
    }

    fn user(&self, index: usize) -> &str {
        &self.data.users[index].user_id
    }

    /// A token of `sub`, without groups.
    fn token(&self, sub: &str) -> String {
        self.issuer.mint(&model_claims(self.model(), sub, &[]))
    }

    /// A token of `sub` in the `admin` group.
    fn admin_as(&self, sub: &str) -> String {
        self.issuer
            .mint(&model_claims(self.model(), sub, &["admin"]))
    }

    fn admin(&self) -> String {
        self.admin_as(ADMIN)
    }

    async fn ask(&self, token: Option<&str>, query: &str, variables: Value) -> Seen {
        self.served.ask(token, query, variables).await
    }

    /// `secure.toml` with `from` replaced by `to` (it must be there), served on the same
    /// tables, trusting the same issuer.
    async fn without(&self, from: &str, to: &str) -> Served {
        self.changed(&[(from, to)]).await
    }

    /// `secure.toml` with each `(from, to)` replacement made, served on the same tables.
    async fn changed(&self, replacements: &[(&str, &str)]) -> Served {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/shop/secure.toml");
        let mut changed = std::fs::read_to_string(path).unwrap();
        for (from, to) in replacements {
            assert!(
                changed.contains(from),
                "secure.toml no longer holds {from:?}"
            );
            changed = changed.replacen(from, to, 1);
        }
        let model: &'static Model = Box::leak(Box::new(
            dynarelay::model::parse("secure.toml, changed", &changed)
                .unwrap_or_else(|e| panic!("{e}")),
        ));
        let store = Store::new(
            self.app.client().clone(),
            Tables::new(model, &self.app.prefix),
        );
        let router = auth_router(model, &store, &self.issuer).await;
        Served {
            store,
            router,
            prefix: self.app.prefix.clone(),
            log: self.served.log.clone(),
        }
    }

    /// `user`'s purchases as DynamoDB holds them, oldest first (plain SDK Queries).
    async fn purchases_of(&self, user: &str) -> Vec<Item> {
        let values = [(":u", S(user.to_owned()))];
        self.app
            .query_all(&GroundQuery {
                table: &self.tables.purchases,
                index: None,
                condition: "userId = :u",
                names: &[],
                values: &values,
                forward: true,
            })
            .await
    }

    /// The global ids of `user`'s purchases, oldest first.
    async fn purchase_ids(&self, user: &str) -> Vec<String> {
        self.purchases_of(user)
            .await
            .iter()
            .map(|item| gid(self.model(), "Purchase", item))
            .collect()
    }

    /// The id of a purchase of `user` that never existed.
    fn never_existing(&self, user: &str) -> String {
        gid(self.model(), "Purchase", &purchase_item(user, "1", "1"))
    }

    /// How many items `table` holds, counted with a plain SDK Scan.
    async fn item_count(&self, table: &str) -> usize {
        self.app.scan_all(table).await.len()
    }

    /// The stored purchase of `user` at `at` (epoch ms), read directly.
    async fn stored_purchase(&self, user: &str, at: &AttributeValue) -> Option<Item> {
        self.app
            .client()
            .get_item()
            .table_name(&self.tables.purchases)
            .key("userId", S(user.to_owned()))
            .key("purchasedAt", at.clone())
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
    }
}

/// `secure.toml`'s `Purchase` rules, taken out by the controls.
const PURCHASE_RULES: &str =
    "id_tag = \"P\"\nallow = [{ owner = \"userId\" }, { groups = [\"admin\"] }]\n";

/// 1. A user pages through exactly their own purchases; another user's are `FORBIDDEN` without a
/// Query; an admin pages through anyone's.
#[tokio::test]
async fn rules_a_user_pages_through_exactly_their_own_purchases_and_no_one_elses() {
    let shop = Shop::start().await;
    let (a, b) = (shop.user(A), shop.user(B));
    let (a_token, b_token, admin) = (shop.token(a), shop.token(b), shop.admin());
    let truth_a = shop.purchase_ids(a).await;
    let truth_b = shop.purchase_ids(b).await;
    assert_eq!((truth_a.len(), truth_b.len()), (21, 20));
    let others: Vec<&str> = (0..5).filter(|&i| i != A).map(|i| shop.user(i)).collect();

    // A, five a page: exactly A's purchases, one GetItem (the user) and one Query a page, and
    // no call names anyone else's partition.
    let before = shop.served.calls();
    let mark = shop.served.log.mark();
    let walked = walk_pages(
        |paging| {
            shop.served.body(
                Some(&a_token),
                PURCHASES,
                merge(json!({ "user": a }), paging),
            )
        },
        &["user", "purchases"],
        5,
        true,
        "A's purchases as A",
    )
    .await;
    assert_eq!(ids(&walked), truth_a);
    assert!(walked.iter().all(|n| n["userId"] == a));
    let after = shop.served.calls();
    for (key, n) in [("GetItem Users", 5.0), ("Query Purchases", 5.0)] {
        assert_eq!(
            after[key] - before.get(key).copied().unwrap_or(0.0),
            n,
            "{key}"
        );
    }
    for call in shop.served.log.since(mark) {
        assert!(
            others.iter().all(|o| !call.touches("Purchases", o)),
            "{call:?}"
        );
    }

    // B's own, in one page.
    let seen = shop
        .ask(Some(&b_token), PURCHASES, json!({ "user": b, "first": 20 }))
        .await;
    let page = &seen.ok("B's purchases as B")["user"]["purchases"];
    assert_eq!(page_ids(page), truth_b);
    assert_eq!(page["pageInfo"]["hasNextPage"], false);
    seen.untouched("Purchases", a, "B's purchases as B");

    // B sees A (any signed-in caller does)...
    let seen = shop
        .ask(
            Some(&b_token),
            "query($user: String!) { user(userId: $user) { userId name } }",
            json!({ "user": a }),
        )
        .await;
    assert_eq!(seen.ok("A as B")["user"]["userId"], a);
    // ...but not A's purchases: FORBIDDEN (the connection is non-null, so `user` is null), and
    // only the user is read, never A's partition of Purchases.
    for (label, variables) in [
        ("A's purchases as B", json!({ "user": a, "first": 5 })),
        ("A's purchases as B, no page size", json!({ "user": a })),
    ] {
        let seen = shop.ask(Some(&b_token), PURCHASES, variables).await;
        seen.refused("FORBIDDEN", json!(["user", "purchases"]), label);
        assert_eq!(seen.body["data"], json!({ "user": null }), "{label}");
        assert_eq!(seen.calls, calls(&[("GetItem Users", 1.0)]), "{label}");
        seen.no_call_on("Purchases", label);
    }

    // An admin pages through anyone's.
    for (user, truth) in [(a, &truth_a), (b, &truth_b)] {
        let walked = walk_pages(
            |paging| {
                shop.served.body(
                    Some(&admin),
                    PURCHASES,
                    merge(json!({ "user": user }), paging),
                )
            },
            &["user", "purchases"],
            7,
            true,
            "purchases as the admin",
        )
        .await;
        assert_eq!(&ids(&walked), truth, "{user}");
    }

    // Control: without `Purchase`'s rules, B reads A's purchases.
    let open = shop.without(PURCHASE_RULES, "id_tag = \"P\"\n").await;
    let seen = open
        .ask(Some(&b_token), PURCHASES, json!({ "user": a, "first": 5 }))
        .await;
    assert_eq!(
        page_ids(&seen.ok("without the rule")["user"]["purchases"]),
        truth_a[..5]
    );
}

/// 2. A cursor belongs to the caller it was given to: anyone else's use of it is refused with
/// `BAD_USER_INPUT` before any read, even on the same partition by an admin; its owner goes on.
#[tokio::test]
async fn rules_a_cursor_works_only_for_the_caller_it_was_given_to() {
    let shop = Shop::start().await;
    let (a, b) = (shop.user(A), shop.user(B));
    let (a_token, b_token, admin) = (shop.token(a), shop.token(b), shop.admin());
    let truth_a = shop.purchase_ids(a).await;
    let rejections = || {
        metric_sum(
            &shop.served.store.metrics().render(),
            "dynarelay_cursor_rejections_total",
        )
        .unwrap_or(0.0)
    };

    let first = shop
        .ask(Some(&a_token), PURCHASES, json!({ "user": a, "first": 5 }))
        .await;
    let a_cursor = end_cursor(&first.ok("A's first page")["user"]["purchases"]);
    let admin_page = shop
        .ask(Some(&admin), PURCHASES, json!({ "user": a, "first": 5 }))
        .await;
    let admin_cursor = end_cursor(&admin_page.ok("A's first page as admin")["user"]["purchases"]);

    let auditor = shop.admin_as("auditor");
    let cases = [
        (
            "A's cursor, B on B's own purchases",
            &b_token,
            b,
            &a_cursor,
            "BAD_USER_INPUT",
        ),
        (
            "A's cursor, an admin on A's purchases",
            &admin,
            a,
            &a_cursor,
            "BAD_USER_INPUT",
        ),
        // Same connection, same partition, same position: only the caller differs.
        (
            "the admin's cursor, A on A's purchases",
            &a_token,
            a,
            &admin_cursor,
            "BAD_USER_INPUT",
        ),
        (
            "the admin's cursor, another admin",
            &auditor,
            a,
            &admin_cursor,
            "BAD_USER_INPUT",
        ),
        // Not B's partition at all: refused for that first.
        (
            "A's cursor, B on A's purchases",
            &b_token,
            a,
            &a_cursor,
            "FORBIDDEN",
        ),
    ];
    let rejected_before = rejections();
    for (label, token, user, cursor, code) in cases {
        let seen = shop
            .ask(
                Some(token),
                PURCHASES,
                json!({ "user": user, "first": 5, "after": cursor }),
            )
            .await;
        let message = seen.refused(code, json!(["user", "purchases"]), label);
        if code == "BAD_USER_INPUT" {
            assert_eq!(
                message, "The cursor is not valid for this connection.",
                "{label}"
            );
        }
        assert_eq!(seen.calls, calls(&[("GetItem Users", 1.0)]), "{label}");
        seen.no_call_on("Purchases", label);
    }
    assert_eq!(rejections() - rejected_before, 4.0);

    // Each cursor works for its own caller: the next five.
    for (label, token, cursor) in [
        ("A", &a_token, &a_cursor),
        ("the admin", &admin, &admin_cursor),
    ] {
        let seen = shop
            .ask(
                Some(token),
                PURCHASES,
                json!({ "user": a, "first": 5, "after": cursor }),
            )
            .await;
        assert_eq!(
            page_ids(&seen.ok(label)["user"]["purchases"]),
            truth_a[5..10],
            "{label}"
        );
        assert_eq!(
            seen.calls,
            calls(&[("GetItem Users", 1.0), ("Query Purchases", 1.0)]),
            "{label}"
        );
    }

    // Control: without `Purchase`'s rules the connection is public, its cursors are bound to no
    // one, and the admin continues from A's.
    let open = shop.without(PURCHASE_RULES, "id_tag = \"P\"\n").await;
    let first = open
        .ask(Some(&a_token), PURCHASES, json!({ "user": a, "first": 5 }))
        .await;
    let open_cursor = end_cursor(&first.ok("without the rule")["user"]["purchases"]);
    let seen = open
        .ask(
            Some(&admin),
            PURCHASES,
            json!({ "user": a, "first": 5, "after": open_cursor }),
        )
        .await;
    assert_eq!(
        page_ids(&seen.ok("without the rule, the admin")["user"]["purchases"]),
        truth_a[5..10]
    );
}

/// 3. Global ids of someone else's purchases are null and never read: alone, mixed with the
/// caller's own, and for an anonymous caller; an admin gets them all.
#[tokio::test]
async fn rules_global_ids_of_someone_elses_purchases_are_null_and_never_read() {
    let shop = Shop::start().await;
    let (a, b) = (shop.user(A), shop.user(B));
    let (b_token, admin) = (shop.token(b), shop.admin());
    let a_ids = shop.purchase_ids(a).await;
    let b_ids = shop.purchase_ids(b).await;
    let a_user = gid(shop.model(), "User", &shop.data.users[A].to_item());

    // B, A's purchase: null, as if it did not exist, with nothing read.
    let seen = shop
        .ask(Some(&b_token), NODE, json!({ "id": a_ids[0] }))
        .await;
    assert_eq!(seen.ok("A's purchase as B"), &json!({ "node": null }));
    seen.nothing_read("A's purchase as B");

    // B, a mix: B's purchases, nulls for A's, in one BatchGetItem of B's two keys alone.
    let mix = [&b_ids[0], &a_ids[0], &b_ids[1], &a_ids[1]];
    let seen = shop.ask(Some(&b_token), NODES, json!({ "ids": mix })).await;
    let nodes = &seen.ok("a mix as B")["nodes"];
    assert_eq!(nodes.as_array().unwrap().len(), 4, "{nodes}");
    for (at, id) in [(0, &b_ids[0]), (2, &b_ids[1])] {
        assert_eq!(nodes[at]["id"], **id, "{nodes}");
        assert_eq!(nodes[at]["userId"], b, "{nodes}");
    }
    assert!(nodes[1].is_null() && nodes[3].is_null(), "{nodes}");
    assert_eq!(seen.calls, calls(&[("BatchGetItem several", 1.0)]));
    let asked = &seen.log[0];
    assert_eq!(
        asked.values.iter().filter(|v| *v == b).count(),
        2,
        "{asked:?}"
    );
    seen.untouched("Purchases", a, "a mix as B");

    // Anonymous: null for a purchase and for a user (users are for signed-in callers), with
    // nothing read.
    for (label, id) in [("a purchase", &a_ids[0]), ("a user", &a_user)] {
        let seen = shop.ask(None, NODE, json!({ "id": id })).await;
        assert_eq!(seen.ok(label), &json!({ "node": null }), "{label}");
        seen.nothing_read(label);
        let seen = shop.ask(None, NODES, json!({ "ids": [id] })).await;
        assert_eq!(seen.ok(label), &json!({ "nodes": [null] }), "{label}");
        seen.nothing_read(label);
    }

    // B, A's user: users are visible to any signed-in caller.
    let seen = shop
        .ask(Some(&b_token), NODE, json!({ "id": a_user }))
        .await;
    assert_eq!(seen.ok("A as B")["node"]["userId"], a);

    // An admin: all four, in one BatchGetItem.
    let seen = shop.ask(Some(&admin), NODES, json!({ "ids": mix })).await;
    let nodes = &seen.ok("a mix as the admin")["nodes"];
    let got: Vec<String> = ids(nodes.as_array().unwrap());
    assert_eq!(got, mix.map(String::clone));
    assert_eq!(seen.calls, calls(&[("BatchGetItem several", 1.0)]));

    // Control: without `Purchase`'s rules, B reads A's purchase by id.
    let open = shop.without(PURCHASE_RULES, "id_tag = \"P\"\n").await;
    let seen = open
        .ask(Some(&b_token), NODE, json!({ "id": a_ids[0] }))
        .await;
    assert_eq!(seen.ok("without the rule")["node"]["userId"], a);
}

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

/// The market: listings whose seller (not part of the key) may change, withdraw and see the
/// floor price of their own. `secure.toml` cannot show a change of owner racing a write: its
/// owner field, `userId`, is the purchases' partition key, so an item's owner never changes
/// (an item with another owner is another item). This model's can.
const MARKET: &str = r#"
version = 1

[auth]
jwks_url = "http://127.0.0.1:9/.well-known/jwks.json"
algorithms = ["RS256"]
issuer = "https://auth.shop.example"
audience = ["shop-web"]
groups_claim = "cognito:groups"

[tables.Listings]
partition_key = "listingId"
attributes = { listingId = "S" }

[entities.Listing]
table = "Listings"
description = "Something for sale by a seller."
id_tag = "L"
version_field = "version"

[entities.Listing.fields]
listingId = { type = "String!", description = "The listing's id." }
sellerId = { type = "String!", description = "Who sells it." }
title = { type = "String!", description = "What is for sale." }
floorPrice = { type = "String", description = "The least the seller takes: for the seller only.", allow = [{ owner = "sellerId" }] }
version = { type = "Int!", description = "Bumped by each update." }

[entities.Listing.mutations]
update = { allow = [{ owner = "sellerId" }], description = "Changes one of the caller's listings." }
delete = { allow = [{ owner = "sellerId" }], description = "Withdraws one of the caller's listings." }

[connections.listings]
entity = "Listing"
scan = true
description = "Every listing."
"#;

fn market() -> &'static Model {
    static MODEL: OnceLock<&'static Model> = OnceLock::new();
    MODEL.get_or_init(|| {
        Box::leak(Box::new(
            dynarelay::model::parse("market", MARKET).unwrap_or_else(|e| panic!("{e}")),
        ))
    })
}

fn listing(id: &str, seller: &str, title: &str, version: u32) -> Item {
    Item::from([
        ("listingId".to_owned(), S(id.to_owned())),
        ("sellerId".to_owned(), S(seller.to_owned())),
        ("title".to_owned(), S(title.to_owned())),
        ("floorPrice".to_owned(), S("10".to_owned())),
        ("version".to_owned(), N(version.to_string())),
    ])
}

/// The market on fresh tables, with its sellers' tokens.
struct Market {
    issuer: TestIssuer,
    app: ModelApp,
    served: Served,
}

impl Market {
    async fn start() -> Self {
        let issuer = TestIssuer::start().await;
        let (app, log) = auth_model_app(market(), &issuer).await;
        let served = Served::of(&app, &log);
        Self {
            issuer,
            app,
            served,
        }
    }

    fn token(&self, sub: &str) -> String {
        self.issuer.mint(&model_claims(market(), sub, &[]))
    }

    async fn put(&self, item: Item) {
        self.app
            .client()
            .put_item()
            .table_name(self.app.table("Listings"))
            .set_item(Some(item))
            .send()
            .await
            .unwrap();
    }

    async fn stored(&self, id: &str) -> Option<Item> {
        self.app
            .client()
            .get_item()
            .table_name(self.app.table("Listings"))
            .key("listingId", S(id.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
    }

    fn id(&self, listing_id: &str) -> String {
        gid(market(), "Listing", &listing(listing_id, "-", "-", 1))
    }
}

const DELETE_LISTING: &str =
    r#"mutation($id: ID!) { deleteListing(input: { id: $id }) { deletedListingId } }"#;
const UPDATE_LISTING: &str = r#"mutation($input: UpdateListingInput!) {
  updateListing(input: $input) { listing { id title sellerId version } } }"#;

/// 7 (continued). A change of owner racing a delete: the seller got the listing's id, then the
/// listing changed hands before the seller's delete arrived. The delete is refused, answered
/// as for a missing listing, and the listing is left as it is; the owner condition is part of
/// the one conditional DeleteItem (no read before it), so no interleaving can let it through.
#[tokio::test]
async fn rules_a_delete_racing_a_change_of_owner_is_refused_by_its_conditional_write() {
    let market = Market::start().await;
    let (sam, tina) = (market.token("sam"), market.token("tina"));
    market.put(listing("L1", "sam", "Lamp", 1)).await;

    let seen = market
        .served
        .ask(
            Some(&sam),
            "{ listings(first: 10) { edges { node { id sellerId } } } }",
            json!({}),
        )
        .await;
    let id = seen.ok("the listings")["listings"]["edges"][0]["node"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(id, market.id("L1"));

    // The listing changes hands.
    let tinas = listing("L1", "tina", "Lamp", 2);
    market.put(tinas.clone()).await;

    let seen = market
        .served
        .ask(Some(&sam), DELETE_LISTING, json!({ "id": id }))
        .await;
    assert_eq!(
        seen.refused("BAD_USER_INPUT", json!(["deleteListing"]), "sam's delete"),
        "No listing has this id."
    );
    assert_eq!(
        seen.calls,
        calls(&[("DeleteItem Listings condition_failed", 1.0)])
    );
    assert_eq!(seen.log.len(), 1, "{:?}", seen.log);
    assert!(seen.log[0].touches("Listings", "sam"), "{:?}", seen.log);
    assert_eq!(market.stored("L1").await, Some(tinas));
    let missing = market
        .served
        .ask(
            Some(&sam),
            DELETE_LISTING,
            json!({ "id": market.id("L-none") }),
        )
        .await;
    assert_eq!(
        missing.body, seen.body,
        "as for a listing that never existed"
    );

    // The new owner withdraws it.
    let seen = market
        .served
        .ask(Some(&tina), DELETE_LISTING, json!({ "id": id }))
        .await;
    assert_eq!(
        seen.ok("tina's delete")["deleteListing"]["deletedListingId"],
        id
    );
    assert_eq!(market.stored("L1").await, None);
}

/// An update of someone else's versioned item answers exactly as for a missing one (errors,
/// data and `extensions.cost`), in the one conditional UpdateItem: telling a stale version from
/// a missing item uses the item the failed write returns, never a second read. The owner gets
/// "changed since that version" for their own stale update.
#[tokio::test]
async fn rules_an_update_of_someone_elses_versioned_item_answers_as_for_a_missing_one() {
    let market = Market::start().await;
    let sam = market.token("sam");
    let tinas = listing("L2", "tina", "Kettle", 1);
    market.put(tinas.clone()).await;

    let update = |id: String| json!({ "input": { "id": id, "version": 1, "title": "Mine now" } });
    let seen = market
        .served
        .ask(Some(&sam), UPDATE_LISTING, update(market.id("L2")))
        .await;
    let missing = market
        .served
        .ask(Some(&sam), UPDATE_LISTING, update(market.id("L-none")))
        .await;
    assert_eq!(market.stored("L2").await, Some(tinas));
    assert_eq!(
        seen.refused(
            "BAD_USER_INPUT",
            json!(["updateListing"]),
            "sam updates tina's"
        ),
        "No listing has this id."
    );
    assert_eq!(seen.body, missing.body);
    assert_eq!(
        seen.calls,
        calls(&[("UpdateItem Listings condition_failed", 1.0)]),
        "{:?}",
        seen.log
    );
    assert_eq!(seen.log.len(), 1, "{:?}", seen.log);

    // The owner's stale update is told so, also in one call.
    let tina = market.token("tina");
    let fresh =
        json!({ "input": { "id": market.id("L2"), "version": 1, "title": "Kettle, blue" } });
    let seen = market.served.ask(Some(&tina), UPDATE_LISTING, fresh).await;
    assert_eq!(
        seen.ok("tina updates hers")["updateListing"]["listing"]["version"],
        2
    );
    let seen = market
        .served
        .ask(Some(&tina), UPDATE_LISTING, update(market.id("L2")))
        .await;
    assert_eq!(
        seen.refused("BAD_USER_INPUT", json!(["updateListing"]), "tina, stale"),
        "The listing has changed since that version: read it again and retry."
    );
    assert_eq!(seen.log.len(), 1, "{:?}", seen.log);
}

/// A page read with a projection also reads the owner field a field rule needs when that field
/// is not part of the key and not selected, so the owner sees their own `floorPrice` without
/// selecting `sellerId`.
#[tokio::test]
async fn rules_a_field_rule_on_a_non_key_owner_admits_the_owner_in_a_connection() {
    let market = Market::start().await;
    let (sam, tina) = (market.token("sam"), market.token("tina"));
    market.put(listing("L3", "sam", "Tent", 1)).await;

    // With the owner field selected, the rule works.
    let both = "{ listings(first: 10) { edges { node { sellerId floorPrice } } } }";
    let seen = market.served.ask(Some(&sam), both, json!({})).await;
    assert_eq!(
        seen.ok("sam, with sellerId")["listings"]["edges"][0]["node"]["floorPrice"],
        "10"
    );
    let seen = market.served.ask(Some(&tina), both, json!({})).await;
    seen.refused(
        "FORBIDDEN",
        json!(["listings", "edges", 0, "node", "floorPrice"]),
        "tina, with sellerId",
    );
    // Without it, the owner is refused their own.
    let alone = "{ listings(first: 10) { edges { node { floorPrice } } } }";
    let seen = market.served.ask(Some(&sam), alone, json!({})).await;
    assert_eq!(
        seen.ok("sam, floorPrice alone")["listings"]["edges"][0]["node"]["floorPrice"],
        "10"
    );
}

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
