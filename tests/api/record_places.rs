//! Places told by records, never by times. Through a fleet, relays keep in Redis where they
//! stand in each shard and where each shard's news begins, so a subscriber resuming after Redis
//! restarted empty gets exactly what it missed, from the table's stream, even from a shard
//! nothing was passed on from before its position (whose older records are history written
//! moments before the relays started, never news); an instance that starts late places itself
//! after every shard published before. With `serve` reading its own stream, a resume reads such
//! a shard from the first record the reader read of it. The stream's reads go through the fault
//! proxy, which splits the table's one shard in two (DynamoDB Local keeps one) and answers
//! `GetRecords` empty before each page of records, as AWS may.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{
    fault_proxy::{Empty, FaultProxy, child_of_keys},
    helpers::{
        ModelApp, Received, RedisServer, Relay, endpoint, live_router_streams_at,
        live_router_through_redis_streams_at, model_app_from, next_event, put_plain,
        received_within, stream_entries, subscribe, warm_up,
    },
    stream_faults::newest_record,
    subscriptions::{MODEL, change, note},
};

const SINCE: &str = "subscription($owner: String!, $resumeFrom: String) {
  notesChanged(owner: $owner, resumeFrom: $resumeFrom) {
    kind id position edge { node { at text } } } }";

/// The child of the split shard that `owner`'s note `at` goes to.
fn child(owner: &str, at: i64) -> usize {
    child_of_keys(&json!({ "owner": { "S": owner }, "at": { "N": at.to_string() } }))
}

/// The first `count` notes of `owner` from `at` up whose records go to child `to`.
fn notes_in(owner: &str, to: usize, from: i64, count: usize) -> Vec<i64> {
    (from..)
        .filter(|at| child(owner, *at) == to)
        .take(count)
        .collect()
}

async fn remove(app: &ModelApp, owner: &str, at: i64) {
    app.client()
        .delete_item()
        .table_name(app.table("Notes"))
        .key("owner", AttributeValue::S(owner.to_owned()))
        .key("at", AttributeValue::N(at.to_string()))
        .send()
        .await
        .unwrap();
}

/// Subscribes to alice's notes, writes a warm-up note (`at` 0) until one arrives, and removes
/// it: the position of its removal, the only change passed on until then being the warm-up's.
async fn placed(app: &ModelApp, router: &axum::Router) -> String {
    let mut events = subscribe(router, SINCE, json!({ "owner": "alice" })).await;
    let table = app.table("Notes");
    warm_up(
        async |round| {
            let warm = note("alice", 0, &format!("warm-up {round}"), "OPEN");
            put_plain(app.client(), &table, [warm]).await;
        },
        async |wait| received_within(&mut events, wait).await,
    )
    .await;
    remove(app, "alice", 0).await;
    loop {
        let event = next_event(&mut events).await;
        let change = change(&event);
        if change["kind"] == "REMOVED" {
            return change["position"].as_str().unwrap().to_owned();
        }
        assert_eq!(
            change["edge"]["node"]["at"], 0,
            "passed on as news, though written before the relay started: {change}"
        );
    }
}

/// Waits until Redis holds a change of every note of `ats` (by `at`).
async fn published(redis: &RedisServer, app: &ModelApp, ats: &[i64]) {
    let started = std::time::Instant::now();
    loop {
        // (Removals have no new image.)
        let relayed: Vec<i64> = stream_entries(&redis.url(), &app.table("Notes"))
            .await
            .iter()
            .filter_map(|entry| entry.get::<String>("new"))
            .filter_map(|new| serde_json::from_str::<Value>(&new).ok())
            .filter_map(|new| new["at"]["N"].as_str()?.parse().ok())
            .collect();
        if ats.iter().all(|at| relayed.contains(at)) {
            return;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the relay did not publish notes {ats:?}: {relayed:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Every change `events` receives until one of each note of `ats` arrived, by note.
async fn until_all(
    events: &mut mpsc::Receiver<Received>,
    ats: &[i64],
) -> BTreeMap<i64, Vec<Value>> {
    let mut seen: BTreeMap<i64, Vec<Value>> = BTreeMap::new();
    while !ats.iter().all(|at| seen.contains_key(at)) {
        let change = change(&next_event(events).await).clone();
        assert!(
            !change["edge"]["node"]["text"]
                .as_str()
                .is_some_and(|text| text.starts_with("history")),
            "history passed on as news: {change}"
        );
        let at = change["edge"]["node"]["at"]
            .as_i64()
            .unwrap_or_else(|| panic!("{change}"));
        seen.entry(at)
            .or_default()
            .push(change["edge"]["node"]["text"].clone());
    }
    seen
}

/// A table of notes whose one shard is split in two before any reader starts, both children
/// open, its stream read through a fault proxy answering `empty`: the app, the proxy, the child
/// the warm-up note goes to (which a subscriber's position names once it was placed), and the
/// other.
async fn split_table(empty: Empty) -> (ModelApp, FaultProxy, usize, usize) {
    let app = model_app_from(MODEL).await;
    let proxy = FaultProxy::start(&endpoint()).await;
    proxy.empty_answers(Some(empty));
    let table = app.table("Notes");
    put_plain(app.client(), &table, [note("bob", 1, "first", "OPEN")]).await;
    let (arn, shard, newest) = newest_record(&table).await;
    proxy.split_shard(&arn, &shard, &newest);
    let named = child("alice", 0);
    (app, proxy, named, 1 - named)
}

/// Alice's notes in both children, written before any reader starts: history, never news.
async fn write_history(app: &ModelApp, named: usize, other: usize) {
    let history = notes_in("alice", other, 1, 4)
        .into_iter()
        .chain(notes_in("alice", named, 1, 4));
    put_plain(
        app.client(),
        &app.table("Notes"),
        history.map(|at| note("alice", at, "history", "OPEN")),
    )
    .await;
}

/// A note of alice's in each child, written while her subscriber is away: the `at` of the one
/// in `other` and of the one in `named`.
async fn write_missed(app: &ModelApp, named: usize, other: usize) -> (i64, i64) {
    let [in_other] = notes_in("alice", other, 100, 1)[..] else {
        unreachable!()
    };
    let [in_named] = notes_in("alice", named, 100, 1)[..] else {
        unreachable!()
    };
    for at in [in_other, in_named] {
        put_plain(
            app.client(),
            &app.table("Notes"),
            [note("alice", at, "missed", "OPEN")],
        )
        .await;
    }
    (in_other, in_named)
}

/// The relay reads from the fault proxy.
fn relay_through(app: &ModelApp, redis: &RedisServer, proxy: &FaultProxy) -> Relay {
    let relay = Relay::start_with(
        app,
        MODEL,
        &redis.url(),
        &[("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", &proxy.url())],
    );
    relay.wait_for_log("took a shard's lease");
    relay
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_resumed_by_position_replays_exactly_a_shard_nothing_was_passed_from() {
    let mut redis = RedisServer::start();
    let (app, proxy, named, other) = split_table(Empty::SameIterator(2)).await;
    let table = app.table("Notes");
    // History written before the relay starts, in both children.
    write_history(&app, named, other).await;

    let _relay = relay_through(&app, &redis, &proxy);
    let router = live_router_through_redis_streams_at(&app, &redis.url(), &proxy.url());
    let position = placed(&app, &router).await;
    // The relay reads the other child: a note of bob's there is published (after the position).
    let [bob] = notes_in("bob", other, 10, 1)[..] else {
        unreachable!()
    };
    put_plain(app.client(), &table, [note("bob", bob, "bob's", "OPEN")]).await;
    published(&redis, &app, &[bob]).await;

    // Away: a note in each child, published; then Redis restarts empty, and one more.
    let (missed_other, missed_named) = write_missed(&app, named, other).await;
    published(&redis, &app, &[missed_other, missed_named]).await;
    redis.restart();
    put_plain(app.client(), &table, [note("alice", 200, "after", "OPEN")]).await;

    // Back from the position: each missed note once, none of the history, then what follows.
    let mut events = subscribe(
        &router,
        SINCE,
        json!({ "owner": "alice", "resumeFrom": position }),
    )
    .await;
    let seen = until_all(&mut events, &[missed_other, missed_named, 200]).await;
    assert_eq!(
        seen,
        BTreeMap::from([
            (missed_other, vec![json!("missed")]),
            (missed_named, vec![json!("missed")]),
            (200, vec![json!("after")]),
        ]),
    );
    // Nothing more: the next change is the next note's.
    put_plain(app.client(), &table, [note("alice", 300, "last", "OPEN")]).await;
    let last = until_all(&mut events, &[300]).await;
    assert_eq!(last, BTreeMap::from([(300, vec![json!("last")])]));
    let [first, second] = proxy.split_records();
    assert!(first > 0 && second > 0, "{first} and {second} records");
    assert!(proxy.empty_answers_given() > 0, "no empty answer was given");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_places_itself_after_every_shard_published_before_it_started() {
    let mut redis = RedisServer::start();
    let (app, proxy, named, other) = split_table(Empty::SameIterator(2)).await;
    let table = app.table("Notes");
    let _relay = relay_through(&app, &redis, &proxy);
    // Published before the instance starts: alice's notes in one child (for a subscriber that
    // pages them, history), then more than the instance looks back at of bob's in the other.
    let before = notes_in("alice", other, 1, 3);
    // (Written until published: the relay reads the child from when it took its iterator.)
    warm_up(
        async |round| {
            // (A write that changes nothing records nothing.)
            let first = note("alice", before[0], &format!("history {round}"), "OPEN");
            put_plain(app.client(), &table, [first]).await;
        },
        async |wait| {
            tokio::time::sleep(wait).await;
            !stream_entries(&redis.url(), &table).await.is_empty()
        },
    )
    .await;
    put_plain(
        app.client(),
        &table,
        before[1..]
            .iter()
            .map(|at| note("alice", *at, "history", "OPEN")),
    )
    .await;
    let busy = notes_in("bob", named, 1_000, 1_100);
    put_plain(
        app.client(),
        &table,
        busy.iter().map(|at| note("bob", *at, "busy", "OPEN")),
    )
    .await;
    published(&redis, &app, &[before[1], before[2], *busy.last().unwrap()]).await;

    let router = live_router_through_redis_streams_at(&app, &redis.url(), &proxy.url());
    let position = placed(&app, &router).await;
    let [missed] = notes_in("alice", other, 100, 1)[..] else {
        unreachable!()
    };
    put_plain(
        app.client(),
        &table,
        [note("alice", missed, "missed", "OPEN")],
    )
    .await;
    published(&redis, &app, &[missed]).await;
    redis.restart();

    let mut events = subscribe(
        &router,
        SINCE,
        json!({ "owner": "alice", "resumeFrom": position }),
    )
    .await;
    put_plain(app.client(), &table, [note("alice", 300, "last", "OPEN")]).await;
    let seen = until_all(&mut events, &[missed, 300]).await;
    assert_eq!(
        seen,
        BTreeMap::from([(missed, vec![json!("missed")]), (300, vec![json!("last")]),]),
    );
    assert!(proxy.empty_answers_given() > 0, "no empty answer was given");
}

#[tokio::test]
async fn a_resume_reads_a_shard_serve_s_reader_passed_nothing_of_from_its_first_record() {
    let (app, proxy, named, other) = split_table(Empty::NewIterator(2)).await;
    let table = app.table("Notes");
    write_history(&app, named, other).await;
    let router = live_router_streams_at(&app, &proxy.url());
    // Another subscriber keeps the table's reader running while alice's is away.
    let _staying = subscribe(&router, SINCE, json!({ "owner": "carol" })).await;
    let position = placed(&app, &router).await;

    let (missed_other, missed_named) = write_missed(&app, named, other).await;
    let mut events = subscribe(
        &router,
        SINCE,
        json!({ "owner": "alice", "resumeFrom": position }),
    )
    .await;
    put_plain(app.client(), &table, [note("alice", 300, "last", "OPEN")]).await;
    let seen = until_all(&mut events, &[missed_other, missed_named, 300]).await;
    assert_eq!(
        seen,
        BTreeMap::from([
            (missed_other, vec![json!("missed")]),
            (missed_named, vec![json!("missed")]),
            (300, vec![json!("last")]),
        ]),
    );
    assert!(proxy.empty_answers_given() > 0, "no empty answer was given");
}
