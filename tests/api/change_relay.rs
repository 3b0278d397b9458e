//! Live data across a fleet, with a real `redis-server` and DynamoDB Local's streams: two change
//! relays (`dynarelay relay`, the binary) read the table's stream and append its changes to Redis,
//! and two instances read them from there instead of from the stream. Every subscriber, on either
//! instance, receives each change once (the two relays publish every change twice) and in order;
//! and when Redis restarts with nothing it held, a subscriber whose changes may have been lost is
//! ended with `CHANGES_LOST`, and resuming from the cursor of the last edge it holds misses
//! nothing.

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{
    helpers::{
        Received, RedisServer, Relay, live_router_through_redis, model_app_from, next_event,
        put_plain, subscribe,
    },
    subscriptions::{MODEL, change, drain_warm_up, follow, note},
};

/// A change's kind and its node's text (`None` when removed).
fn seen(change: &Value) -> (String, Option<String>) {
    (
        change["kind"].as_str().unwrap().to_owned(),
        change["edge"]["node"]["text"].as_str().map(str::to_owned),
    )
}

/// Changes until the one whose node's text is `last`.
async fn changes_until(events: &mut mpsc::Receiver<Received>, last: &str) -> Vec<Value> {
    let mut changes = Vec::new();
    loop {
        let change = change(&next_event(events).await).clone();
        let done = change["edge"]["node"]["text"] == last;
        changes.push(change);
        if done {
            return changes;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_instance_delivers_each_change_once_in_order_through_redis() {
    let redis = RedisServer::start();
    let app = model_app_from(MODEL).await;
    let table = app.table("Notes");
    // Two relays: each publishes every change, and the instances pass each on once.
    let _relays = [
        Relay::start(&app, MODEL, &redis.url()),
        Relay::start(&app, MODEL, &redis.url()),
    ];
    let first = live_router_through_redis(&app, &redis.url());
    let second = live_router_through_redis(&app, &redis.url());
    let mut on_first = follow(&app, &first, json!({ "owner": "alice" })).await;
    let mut on_second = follow(&app, &second, json!({ "owner": "alice" })).await;
    // The second subscriber's warm-up reached the first one too.
    drain_warm_up(&mut on_first).await;

    for at in 1..=10 {
        put_plain(
            app.client(),
            &table,
            [note("alice", at, &format!("n{at}"), "OPEN")],
        )
        .await;
    }
    put_plain(app.client(), &table, [note("alice", 3, "n3 again", "DONE")]).await;
    app.client()
        .delete_item()
        .table_name(&table)
        .key(
            "owner",
            aws_sdk_dynamodb::types::AttributeValue::S("alice".to_owned()),
        )
        .key(
            "at",
            aws_sdk_dynamodb::types::AttributeValue::N("5".to_owned()),
        )
        .send()
        .await
        .unwrap();
    // Another owner's note reaches neither; the last note closes the run.
    put_plain(
        app.client(),
        &table,
        [note("bob", 1, "not alice's", "OPEN")],
    )
    .await;
    put_plain(app.client(), &table, [note("alice", 99, "last", "OPEN")]).await;

    let mut expected: Vec<(String, Option<String>)> = (1..=10)
        .map(|at| ("ADDED".to_owned(), Some(format!("n{at}"))))
        .collect();
    expected.push(("UPDATED".to_owned(), Some("n3 again".to_owned())));
    expected.push(("REMOVED".to_owned(), None));
    expected.push(("ADDED".to_owned(), Some("last".to_owned())));
    let first_saw = changes_until(&mut on_first, "last").await;
    let second_saw = changes_until(&mut on_second, "last").await;
    for saw in [&first_saw, &second_saw] {
        assert_eq!(
            saw.iter().map(seen).collect::<Vec<_>>(),
            expected,
            "{saw:?}"
        );
    }
    // The same edges on both instances: the same ids and cursors.
    assert_eq!(first_saw, second_saw);
}

const RESUME: &str = "subscription($owner: String!, $after: String) {
  notesChanged(owner: $owner, after: $after) {
    kind id edge { cursor node { id at text state } } } }";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_without_its_entries_ends_subscriptions_that_resume_by_cursor() {
    let mut redis = RedisServer::start();
    let app = model_app_from(MODEL).await;
    let table = app.table("Notes");
    let _relay = Relay::start(&app, MODEL, &redis.url());
    let instance = live_router_through_redis(&app, &redis.url());
    let mut events = follow(&app, &instance, json!({ "owner": "alice" })).await;
    put_plain(app.client(), &table, [note("alice", 1, "before", "OPEN")]).await;
    let before = change(&next_event(&mut events).await).clone();
    assert_eq!(before["edge"]["node"]["text"], "before", "{before}");
    let cursor = before["edge"]["cursor"].as_str().unwrap().to_owned();

    // Redis comes back holding nothing: the entry the instance read last is gone, so it cannot
    // tell what it missed, and ends its subscriptions with a code.
    redis.restart();
    put_plain(app.client(), &table, [note("alice", 2, "during", "OPEN")]).await;
    let (name, data) = next_event(&mut events).await;
    assert_eq!(name, "next", "{data}");
    assert_eq!(
        data["errors"][0]["extensions"]["code"], "CHANGES_LOST",
        "{data}"
    );
    assert_eq!(next_event(&mut events).await.0, "complete");

    // The client resumes from the last edge it holds: the note written meanwhile comes first,
    // then what is written next.
    let mut resumed = subscribe(
        &instance,
        RESUME,
        json!({ "owner": "alice", "after": cursor }),
    )
    .await;
    let during = change(&next_event(&mut resumed).await).clone();
    assert_eq!(during["kind"], "ADDED", "{during}");
    assert_eq!(during["edge"]["node"]["text"], "during", "{during}");
    put_plain(app.client(), &table, [note("alice", 3, "after", "OPEN")]).await;
    let saw = changes_until(&mut resumed, "after").await;
    assert_eq!(
        saw.iter().map(seen).collect::<Vec<_>>(),
        [("ADDED".to_owned(), Some("after".to_owned()))],
        "{saw:?}"
    );
}
