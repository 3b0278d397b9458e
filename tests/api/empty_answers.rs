//! Live data when DynamoDB Streams answers as AWS may: `GetRecords` with no records while the
//! shard holds some, before each page of records (the fault proxy's empty answers, giving the
//! same iterator back or a new one). DynamoDB Local never answers so. A table written before
//! any reader starts: a fresh `serve` reading its own stream, and a fresh relay feeding Redis,
//! pass none of that history on as news, and every change written afterwards arrives once, in
//! order. A shard that splits under empty answers is read to its end before its children.

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;
use tokio::sync::mpsc;

use crate::{
    fault_proxy::{Empty, FaultProxy},
    helpers::{
        ModelApp, Received, RedisServer, Relay, endpoint, live_router_streams_at,
        live_router_through_redis, model_app_from, next_event, put_plain, stream_entries,
        subscribe, warm_up,
    },
    subscriptions::{MODEL, change, note},
};

/// How many notes the table's history adds (then changes three of and removes one).
const HISTORY: i64 = 12;

const FOLLOW: &str =
    "subscription { notesChanged(owner: \"alice\") { kind id edge { node { at text state } } } }";

/// The history of `app`'s notes, written before any reader runs: notes added, changed, one
/// removed (as a purchase paid, then refunded and deleted). Its texts start with `history`.
async fn write_history(app: &ModelApp) {
    let table = app.table("Notes");
    put_plain(
        app.client(),
        &table,
        (1..=HISTORY).map(|at| note("alice", at, "history", "OPEN")),
    )
    .await;
    put_plain(
        app.client(),
        &table,
        (1..=3).map(|at| note("alice", at, "history changed", "DONE")),
    )
    .await;
    remove(app, 4).await;
}

async fn remove(app: &ModelApp, at: i64) {
    app.client()
        .delete_item()
        .table_name(app.table("Notes"))
        .key("owner", AttributeValue::S("alice".to_owned()))
        .key("at", AttributeValue::N(at.to_string()))
        .send()
        .await
        .unwrap();
}

/// Subscribes to alice's notes through `router`, then writes warm-up notes (`at` 0) until one
/// arrives, and removes it: the subscription has its place. Every event before the removal
/// must be a warm-up note's: any other is history passed on as news.
async fn placed(app: &ModelApp, router: &axum::Router) -> mpsc::Receiver<Received> {
    let mut events = subscribe(router, FOLLOW, json!({})).await;
    let table = app.table("Notes");
    // Every event up to the warm-up note's removal, the first one's included.
    let mut seen = Vec::new();
    warm_up(
        async |round| {
            let warm = note("alice", 0, &format!("warm-up {round}"), "OPEN");
            put_plain(app.client(), &table, [warm]).await;
        },
        async |wait| match tokio::time::timeout(wait, events.recv()).await {
            Ok(Some(event)) => {
                seen.push(event);
                true
            }
            _ => false,
        },
    )
    .await;
    remove(app, 0).await;
    let mut warm_up_id = None;
    loop {
        let event = match seen.pop() {
            Some(event) => event,
            None => next_event(&mut events).await,
        };
        let change = change(&event).clone();
        if change["kind"] == "REMOVED" {
            // A removal has no edge, only the id of the note removed: the warm-up note's.
            assert!(
                warm_up_id.as_ref() == Some(&change["id"]),
                "passed on as news, though written before the reader started: {change}"
            );
            return events;
        }
        assert_eq!(
            change["edge"]["node"]["at"], 0,
            "passed on as news, though written before the reader started: {change}"
        );
        warm_up_id = Some(change["id"].clone());
    }
}

/// Writes new notes, changes one and removes another; each change arrives once, in order,
/// and none of the history; then nothing more than a last note.
async fn later_changes_arrive_once_in_order(app: &ModelApp, events: &mut mpsc::Receiver<Received>) {
    let table = app.table("Notes");
    let news: Vec<i64> = (101..=110).collect();
    for at in &news {
        put_plain(app.client(), &table, [note("alice", *at, "new", "OPEN")]).await;
    }
    put_plain(
        app.client(),
        &table,
        [note("alice", 101, "new changed", "DONE")],
    )
    .await;
    remove(app, 102).await;
    let mut want: Vec<(String, i64, Option<&str>)> = news
        .iter()
        .map(|at| ("ADDED".to_owned(), *at, Some("new")))
        .collect();
    want.push(("UPDATED".to_owned(), 101, Some("new changed")));
    want.push(("REMOVED".to_owned(), 102, None));
    let mut ids = std::collections::HashMap::new();
    for (kind, at, text) in want {
        let event = next_event(events).await;
        let change = change(&event);
        assert_eq!(change["kind"], kind.as_str(), "{change}");
        match text {
            Some(text) => {
                assert_eq!(change["edge"]["node"]["at"], at, "{change}");
                assert_eq!(change["edge"]["node"]["text"], text, "{change}");
                ids.insert(at, change["id"].clone());
            }
            None => assert_eq!(Some(&change["id"]), ids.get(&at), "{change}"),
        }
    }
    put_plain(app.client(), &table, [note("alice", 999, "last", "OPEN")]).await;
    let event = next_event(events).await;
    assert_eq!(change(&event)["edge"]["node"]["at"], 999, "{event:?}");
}

/// A fresh `serve` reading its own stream through `mode`'s empty answers.
async fn a_fresh_serve_under(mode: Empty) {
    let app = model_app_from(MODEL).await;
    write_history(&app).await;
    let proxy = FaultProxy::start(&endpoint()).await;
    proxy.empty_answers(Some(mode));
    let router = live_router_streams_at(&app, &proxy.url());
    let mut events = placed(&app, &router).await;
    later_changes_arrive_once_in_order(&app, &mut events).await;
    assert!(proxy.empty_answers_given() > 0, "no empty answer was given");
}

#[tokio::test]
async fn a_fresh_serve_passes_on_no_history_when_reads_answer_empty_with_the_same_iterator() {
    a_fresh_serve_under(Empty::SameIterator(2)).await;
}

#[tokio::test]
async fn a_fresh_serve_passes_on_no_history_when_reads_answer_empty_with_new_iterators() {
    a_fresh_serve_under(Empty::NewIterator(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_relay_publishes_no_history_when_reads_answer_empty() {
    let redis = RedisServer::start();
    let app = model_app_from(MODEL).await;
    let table = app.table("Notes");
    write_history(&app).await;
    let proxy = FaultProxy::start(&endpoint()).await;
    proxy.empty_answers(Some(Empty::SameIterator(2)));
    let relay = Relay::start_with(
        &app,
        MODEL,
        &redis.url(),
        &[("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", &proxy.url())],
    );
    relay.wait_for_log("took a shard's lease");
    let router = live_router_through_redis(&app, &redis.url());
    let mut events = placed(&app, &router).await;
    later_changes_arrive_once_in_order(&app, &mut events).await;
    // Nothing of the history reached Redis either.
    let entries = stream_entries(&redis.url(), &table).await;
    assert!(!entries.is_empty());
    for entry in entries {
        let images = [entry.get::<String>("old"), entry.get::<String>("new")];
        for image in images.into_iter().flatten() {
            assert!(
                !image.contains("history"),
                "the relay published history: {image}"
            );
        }
    }
    assert!(proxy.empty_answers_given() > 0, "no empty answer was given");
}

#[tokio::test]
async fn a_shard_that_splits_under_empty_answers_is_read_to_its_end_before_its_children() {
    crate::stream_faults::split_while_followed(Some(Empty::NewIterator(2))).await;
}
