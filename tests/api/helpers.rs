//! Shared test fixtures: a `TestApp` on its own table prefix, and direct DynamoDB writes.

use std::{
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use aws_sdk_dynamodb::{Client, types::AttributeValue};
use axum::{
    Router,
    body::Body,
    http::{Request, header},
};
use dynarelay::{
    dynamo::{self, Store, Tables, model::Item, tables},
    graphql,
    http::{AppState, HttpSettings, router},
    pagination::PageLimits,
};
use serde_json::{Value, json};
use tower::ServiceExt;

/// The DynamoDB Local endpoint that `scripts/test` started.
pub fn endpoint() -> String {
    std::env::var("DYNARELAY_TEST_DYNAMODB_ENDPOINT").expect(
        "DYNARELAY_TEST_DYNAMODB_ENDPOINT is not set: run the tests with scripts/test, which starts DynamoDB Local",
    )
}

/// A table prefix no other test uses.
pub fn unique_prefix() -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    format!(
        "t{}_{}_{}_",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The application on fresh tables.
pub struct TestApp {
    pub store: Store,
    pub router: Router,
}

impl TestApp {
    pub async fn spawn() -> Self {
        Self::spawn_with(PageLimits::default()).await
    }

    pub async fn spawn_with(limits: PageLimits) -> Self {
        let prefix = unique_prefix();
        let client = dynamo::client_for_local(&endpoint());
        let names = Tables::with_prefix(&prefix);
        tables::create_missing(&client, &names, Duration::from_secs(30))
            .await
            .expect("creating test tables");
        let store = Store::new(client, names);
        let state = AppState {
            schema: graphql::build_schema(store.clone(), limits),
            store: store.clone(),
            http: HttpSettings::default(),
        };
        Self {
            store,
            router: router(state),
        }
    }

    pub fn client(&self) -> &Client {
        self.store.client()
    }

    pub fn tables(&self) -> &Tables {
        self.store.tables()
    }

    /// POSTs a GraphQL request through the router and returns the response body.
    pub async fn graphql(&self, query: &str, variables: Value) -> Value {
        let body = json!({ "query": query, "variables": variables }).to_string();
        let request = Request::post("/graphql")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body))
            .expect("request");
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("router answers");
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        serde_json::from_slice(&bytes).expect("JSON response")
    }

    pub async fn put_items(&self, table: &str, items: Vec<Item>) {
        self.store
            .put_items(table, items)
            .await
            .expect("writing test items");
    }

    /// Writes purchases for `user_id` at the given `purchasedAt` values (epoch ms), with amounts
    /// derived from the time so that each item is recognisable.
    pub async fn put_purchases(&self, user_id: &str, times: &[i64]) {
        let items = times
            .iter()
            .map(|&at| purchase_item(user_id, &at.to_string(), &format!("{}.5", at % 1000)))
            .collect();
        self.put_items(&self.tables().purchases.clone(), items)
            .await;
    }

    pub async fn put_user(&self, user_id: &str) {
        let item = Item::from([
            ("userId".to_owned(), AttributeValue::S(user_id.to_owned())),
            (
                "name".to_owned(),
                AttributeValue::S(format!("User {user_id}")),
            ),
            (
                "email".to_owned(),
                AttributeValue::S(format!("{user_id}@example.com")),
            ),
            (
                "createdAt".to_owned(),
                AttributeValue::N("1672531200000".to_owned()),
            ),
        ]);
        self.put_items(&self.tables().users.clone(), vec![item])
            .await;
    }
}

/// A `Purchases` item as another program would write it.
pub fn purchase_item(user_id: &str, purchased_at: &str, amount: &str) -> Item {
    Item::from([
        ("userId".to_owned(), AttributeValue::S(user_id.to_owned())),
        (
            "purchasedAt".to_owned(),
            AttributeValue::N(purchased_at.to_owned()),
        ),
        ("sku".to_owned(), AttributeValue::S("SKU-00001".to_owned())),
        ("quantity".to_owned(), AttributeValue::N("1".to_owned())),
        ("amount".to_owned(), AttributeValue::N(amount.to_owned())),
        ("status".to_owned(), AttributeValue::S("PAID".to_owned())),
    ])
}

/// The `extensions.code` of the first error, if any.
pub fn error_code(response: &Value) -> Option<&str> {
    response["errors"][0]["extensions"]["code"].as_str()
}
