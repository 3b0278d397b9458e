//! dynamodb-toolbox's own writes reaching subscribers of `examples/toolbox`: orders placed,
//! changed (an `UpdateItemCommand`), paid (a `PutItemCommand` that moves the order from
//! `STATUS#PENDING` to `STATUS#PAID` in the `GSI1` index) and deleted by the real
//! dynamodb-toolbox library (`writers/toolbox.mjs --changes`), each delivered to exactly the
//! subscriptions whose connection holds it, typed by the `_et` attribute; an item whose `_et`
//! names no entity of the model skipped and counted.

use serde_json::json;

use crate::{
    helpers::{
        ModelApp, RedisServer, Relay, live_router, live_router_through_redis, metric, model_app,
        next_event, written_with,
    },
    tools::changes::{created, kinds, placed, seen, until},
};

const MODEL: &str = "examples/toolbox/dynarelay.toml";

/// The customer whose orders the writer changes.
const CUSTOMER: &str = "C09 Live";

const BY_CUSTOMER: &str = "subscription($customer: ID!) {
  ordersChanged(customer: $customer) { kind removedId edge { cursor node { orderId total status } } } }";
const BY_STATUS: &str = "subscription($status: OrderStatus!) {
  ordersByStatusChanged(status: $status) { kind removedId edge { cursor node { orderId total status } } } }";

/// Places an order of the customer through the API (a warm-up or a fence), in `status`.
async fn order(app: &ModelApp, id: &str, status: &str) {
    let input = json!({ "customerId": CUSTOMER, "orderId": id, "placedAt": "2026-05-01T00:00:00.000Z",
                        "total": "1", "status": status });
    created(
        app,
        "mutation($input: CreateOrderInput!) { createOrder(input: $input) { order { id } } }",
        input,
    )
    .await;
}

#[tokio::test]
async fn dynamodb_toolboxs_own_writes_reach_the_subscriptions_whose_connections_hold_them() {
    let app = model_app(MODEL).await;
    let router = live_router(&app);
    let unmatched = format!(
        "dynarelay_stream_changes_unmatched_total{{table=\"{}\"}}",
        app.table("Shop")
    );
    let skipped = async || metric(&app.store.metrics().render(), &unmatched);
    follow_the_writes(&app, [&router, &router, &router], skipped).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_toolboxs_own_writes_reach_the_subscriptions_across_a_fleet() {
    let redis = RedisServer::start();
    let app = model_app(MODEL).await;
    let model = std::fs::read_to_string(MODEL).unwrap();
    let relays = [
        Relay::start(&app, &model, &redis.url()),
        Relay::start(&app, &model, &redis.url()),
    ];
    let instances: Vec<_> = (0..3)
        .map(|_| live_router_through_redis(&app, &redis.url()))
        .collect();
    let table = app.table("Shop");
    // Counted by the relay that reads the stream (the other stands by).
    let skipped = async || {
        let mut count = 0.0;
        for relay in &relays {
            count += relay
                .metric(&format!(
                    "dynarelay_stream_changes_unmatched_total{{table=\"{table}\"}}"
                ))
                .await;
        }
        count
    };
    follow_the_writes(&app, [&instances[0], &instances[1], &instances[2]], skipped).await;
}

/// Subscriptions by customer, of pending and of paid orders, each on its instance of
/// `instances`, receive exactly their changes of dynamodb-toolbox's writes, and `skipped` (the
/// count of records of no entity) grows by the one the writer makes of an unknown `_et`.
async fn follow_the_writes(
    app: &ModelApp,
    instances: [&axum::Router; 3],
    skipped: impl AsyncFn() -> f64,
) {
    let table = app.table("Shop");
    let answer = app
        .graphql(
            "mutation($c: ID!) { createCustomer(input: { customerId: $c, name: \"Live\" }) { customer { id } } }",
            json!({ "c": CUSTOMER }),
        )
        .await;
    let customer = answer["data"]["createCustomer"]["customer"]["id"].clone();
    assert!(customer.is_string(), "{answer}");

    // Each subscription placed in the stream by warm-up orders it holds, then fenced.
    let mut by_customer = placed(
        instances[0],
        BY_CUSTOMER,
        json!({ "customer": customer }),
        async |round| order(app, &format!("warm-c{round}"), "SHIPPED").await,
    )
    .await;
    let mut pending = placed(
        instances[1],
        BY_STATUS,
        json!({ "status": "PENDING" }),
        async |round| order(app, &format!("warm-p{round}"), "PENDING").await,
    )
    .await;
    let mut paid = placed(
        instances[2],
        BY_STATUS,
        json!({ "status": "PAID" }),
        async |round| order(app, &format!("warm-d{round}"), "PAID").await,
    )
    .await;
    order(app, "fence-pending", "PENDING").await;
    order(app, "fence-paid", "PAID").await;
    until(&mut by_customer, "ordersChanged", "orderId", "fence-paid").await;
    until(
        &mut pending,
        "ordersByStatusChanged",
        "orderId",
        "fence-pending",
    )
    .await;
    until(&mut paid, "ordersByStatusChanged", "orderId", "fence-paid").await;

    let before = skipped().await;
    let written = written_with("toolbox", &table, &["--changes"]).await;
    assert_eq!(
        written["steps"].as_array().map(Vec::len),
        Some(8),
        "{written}"
    );

    let customer_changes = until(&mut by_customer, "ordersChanged", "orderId", "O-3").await;
    assert_eq!(
        kinds(&customer_changes),
        [
            ("ADDED", Some("O-1")),
            ("ADDED", Some("O-2")),
            ("UPDATED", Some("O-1")),
            ("UPDATED", Some("O-1")),
            ("REMOVED", None),
            ("ADDED", Some("O-3")),
        ]
    );
    let pending_changes = until(&mut pending, "ordersByStatusChanged", "orderId", "O-3").await;
    assert_eq!(
        kinds(&pending_changes),
        [
            ("ADDED", Some("O-1")),
            ("ADDED", Some("O-2")),
            ("UPDATED", Some("O-1")),
            ("REMOVED", None),
            ("REMOVED", None),
            ("ADDED", Some("O-3")),
        ]
    );
    // The paid order enters `PAID` with the total the update gave it; nothing else there changed.
    let event = next_event(&mut paid).await;
    let (kind, id, _) = seen(&event, "ordersByStatusChanged", "orderId");
    assert_eq!((kind.as_str(), id.as_deref()), ("ADDED", Some("O-1")));
    assert_eq!(
        event.1["data"]["ordersByStatusChanged"]["edge"]["node"]["total"], "11.25",
        "{event:?}"
    );
    // Counted once the writes are read (the relay's count may come a moment after).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while skipped().await - before < 1.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the unknown `_et` was not counted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(skipped().await - before, 1.0);
}
