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
//!
//! This file holds what the attacks share: the seeded secure shop ([`Shop`]), a server with the
//! log of its calls ([`Served`]), and one request's answer with the calls it made ([`Seen`]).
//! The attacks, numbered as in their doc comments, are in `rules/`: whose purchases a caller
//! reads (`purchases.rs`, 1 to 3), field rules and relations (`fields.rs`, 4 and 5), root
//! connections and lookups (`connections.rs`, 6), mutations (`mutations.rs`, 7), a model whose
//! owner is not part of the key (`market.rs`, 7 continued), introspection (`introspection.rs`,
//! 8), what answers do not tell (`secrecy.rs`, 9), and subscriptions (`subscriptions.rs`, 10).

mod connections;
mod fields;
mod introspection;
mod market;
mod mutations;
mod purchases;
mod secrecy;
mod subscriptions;

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue::{self, S};
use axum::{Router, http::StatusCode};
use dynarelay::{
    cursor::Key,
    dynamo::{Item, Store, Tables},
    graphql::node::node_id,
    model::Model,
};
use serde_json::Value;

use crate::{
    helpers::{
        CallLog, GroundQuery, LoggedCall, ModelApp, ShopTables, TestIssuer, auth_router,
        dynamodb_calls, graphql_with_token, model_claims, purchase_item, secure_app_logged,
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

/// The `[auth]` of the models written here: tokens from a [`TestIssuer`] (whose address the
/// test servers use in place of `jwks_url`), groups in `cognito:groups`.
const AUTH: &str = r#"version = 1

[auth]
jwks_url = "http://127.0.0.1:9/.well-known/jwks.json"
algorithms = ["RS256"]
issuer = "https://auth.shop.example"
audience = ["shop-web"]
groups_claim = "cognito:groups"
"#;

/// The model `text` (tables, entities and connections) under [`AUTH`], named `name`, for the
/// life of the tests.
fn with_auth(name: &str, text: &str) -> &'static Model {
    let model =
        dynarelay::model::parse(name, &format!("{AUTH}{text}")).unwrap_or_else(|e| panic!("{e}"));
    Box::leak(Box::new(model))
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
