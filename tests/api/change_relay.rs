//! Live data across a fleet, with a real `redis-server` and DynamoDB Local's streams: two change
//! relays (`dynarelay relay`, the binary) share the table's stream by leases, one reading it and
//! appending its changes to Redis while the other stands by, and two instances read them from
//! there instead of from the stream. Every subscriber, on either instance, receives each change
//! once and in order, also once the relay holding the lease is killed (the other takes it over
//! and reads on from its checkpoint), and a relay behind the other that publishes an item's older
//! change after a newer one never takes the item back; a TLS-only Redis is reached with its
//! certificate authority's file; and when Redis restarts with nothing it held, a subscriber whose
//! changes may have been lost is ended with `CHANGES_LOST`, and resuming from the cursor of the
//! last edge it holds misses nothing. The Lambda function given DynamoDB Streams events (`lambda-relay`, as
//! `scripts/package-lambda` packages it in `changes.json` and `scripts/run-lambda --template
//! changes.json` runs it under cargo-lambda's emulator) publishes them the same way, and reports
//! the first record it cannot read or publish as the batch's failure.

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{
    fault_proxy::{Empty, FaultProxy},
    helpers::{
        LambdaFunction, Received, RedisServer, Relay, TlsRedisServer, book_says, connect_redis,
        endpoint, live_router_through_feed, live_router_through_redis,
        live_router_through_redis_streams_at, metric, model_app_from, model_file, next_event,
        post_graphql, put_plain, relayed_notes, stream_entries, subscribe, wait_for_relayed,
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
    let relay = Relay::start(&app, MODEL, &redis.url());
    let other_relay = Relay::start(&app, MODEL, &redis.url());
    let first = live_router_through_redis(&app, &redis.url());
    let second = live_router_through_redis(&app, &redis.url());
    let mut on_first = follow(&app, &first, json!({ "owner": "alice" })).await;
    let mut on_second = follow(&app, &second, json!({ "owner": "alice" })).await;
    // The second subscriber's warm-up reached the first one too.
    let mut warm_up = Vec::new();
    loop {
        let change = change(&next_event(&mut on_first).await).clone();
        let removed = change["kind"] == "REMOVED";
        warm_up.push(change);
        if removed {
            break;
        }
    }

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
        if saw.iter().map(seen).collect::<Vec<_>>() != expected {
            panic!(
                "expected {expected:?}\nsaw {saw:?}\nthe first subscriber's second warm-up: \
                 {warm_up:?}\nthe table's Redis stream:\n{}",
                stream_dump(&redis.url(), &table).await
            );
        }
    }
    // The same edges on both instances: the same ids and cursors.
    assert_eq!(first_saw, second_saw);
    // Both relays are ready; one holds the shard's lease and published the 14 changes above
    // (and the warm-up's), the other stands by.
    let http = reqwest::Client::new();
    let mut holders = Vec::new();
    for relay in [&relay, &other_relay] {
        let ready = http.get(relay.url("/ready")).send().await.unwrap();
        assert_eq!(ready.status(), 200);
        let metrics = http.get(relay.url("/metrics")).send().await.unwrap();
        let text = metrics.text().await.unwrap();
        let leases = metric(
            &text,
            &format!("dynarelay_relay_leases{{table=\"{table}\"}}"),
        );
        let published = metric(
            &text,
            &format!("dynarelay_changes_published_total{{table=\"{table}\"}}"),
        );
        // The stream reader's metrics, as the book lists them for relays: every record it
        // passed on (here, to Redis) counted.
        let records = metric(
            &text,
            &format!("dynarelay_stream_records_total{{table=\"{table}\"}}"),
        );
        holders.push((leases, published, records));
    }
    holders.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(holders[0], (0.0, 0.0, 0.0), "{holders:?}");
    assert_eq!(holders[1].0, 1.0, "{holders:?}");
    assert!(holders[1].1 >= 14.0, "{holders:?}");
    assert_eq!(holders[1].2, holders[1].1, "{holders:?}");
    book_says(
        "docs/src/guides/live-data.md",
        "`/metrics`: the stream reader's metrics above,",
    );

    // The relay holding the lease killed: the other takes it over once a lease period has
    // passed, and reads on from its checkpoint: nothing is lost or repeated.
    let (killed, left) = if relay.leases(&table).await == 1.0 {
        (relay, other_relay)
    } else {
        (other_relay, relay)
    };
    drop(killed);
    let expected = add_notes(&app, &table, 11..=15, (98, "after the relay")).await;
    for events in [&mut on_first, &mut on_second] {
        assert_changes(events, &expected).await;
    }
    assert_eq!(left.leases(&table).await, 1.0);

    // Both relays gone while the table is written: relays started again read on from the
    // checkpoint (not from the stream's newest record), and nothing is lost or repeated.
    drop(left);
    let expected = add_notes(&app, &table, 16..=18, (97, "while no relay ran")).await;
    let relay = Relay::start(&app, MODEL, &redis.url());
    let other_relay = Relay::start(&app, MODEL, &redis.url());
    for events in [&mut on_first, &mut on_second] {
        assert_changes(events, &expected).await;
    }

    // Relays stopped by SIGTERM let go of the lease, which keeps the last record published.
    relay.terminate();
    other_relay.terminate();
    let leases = app
        .client()
        .scan()
        .table_name(format!("{}dynarelay-leases", app.prefix))
        .send()
        .await
        .unwrap();
    let [lease] = leases.items() else {
        panic!("one lease: {leases:?}");
    };
    assert!(!lease.contains_key("owner"), "{lease:?}");
    let checkpoint = lease["checkpoint"].as_s().unwrap();
    assert!(checkpoint.bytes().all(|b| b.is_ascii_digit()), "{lease:?}");
}

/// Adds alice's notes `n<at>` for each `at`, then the note `last`; the changes a subscriber
/// following alice then receives.
async fn add_notes(
    app: &crate::helpers::ModelApp,
    table: &str,
    ats: std::ops::RangeInclusive<i64>,
    last: (i64, &str),
) -> Vec<(String, Option<String>)> {
    let mut expected = Vec::new();
    for at in ats {
        let text = format!("n{at}");
        put_plain(app.client(), table, [note("alice", at, &text, "OPEN")]).await;
        expected.push(("ADDED".to_owned(), Some(text)));
    }
    put_plain(app.client(), table, [note("alice", last.0, last.1, "OPEN")]).await;
    expected.push(("ADDED".to_owned(), Some(last.1.to_owned())));
    expected
}

/// Asserts that the subscriber receives `expected` next (up to its last change).
async fn assert_changes(
    events: &mut mpsc::Receiver<Received>,
    expected: &[(String, Option<String>)],
) {
    let last = expected.last().and_then(|(_, text)| text.clone()).unwrap();
    let saw = changes_until(events, &last).await;
    assert_eq!(
        saw.iter().map(seen).collect::<Vec<_>>(),
        expected,
        "{saw:?}"
    );
}

/// Appends again, as a relay behind the other would, the entry of `table`'s Redis stream whose
/// new image's text is `text`.
async fn publish_again(url: &str, table: &str, text: &str) {
    use redis::AsyncCommands;
    let all = stream_entries(url, table).await;
    let entry = all
        .iter()
        .find(|e| {
            e.get::<String>("new")
                .is_some_and(|new| new.contains(&format!("{{\"S\":\"{text}\"}}")))
        })
        .unwrap_or_else(|| panic!("no entry of {text:?} in {all:?}"));
    let fields: Vec<(String, String)> = entry
        .map
        .iter()
        .map(|(name, value)| (name.clone(), redis::from_redis_value_ref(value).unwrap()))
        .collect();
    let key = dynarelay::stream::redis_feed::key(table);
    let _: String = connect_redis(url)
        .await
        .xadd(&key, "*", &fields)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_behind_the_other_never_takes_an_item_back() {
    let redis = RedisServer::start();
    let app = model_app_from(MODEL).await;
    let table = app.table("Notes");
    let _relay = Relay::start(&app, MODEL, &redis.url());
    let first = live_router_through_redis(&app, &redis.url());
    let mut on_first = follow(&app, &first, json!({ "owner": "alice" })).await;
    put_plain(app.client(), &table, [note("alice", 1, "v1", "OPEN")]).await;
    put_plain(app.client(), &table, [note("alice", 1, "v2", "OPEN")]).await;
    let saw = changes_until(&mut on_first, "v2").await;
    assert_eq!(
        saw.iter().map(seen).collect::<Vec<_>>(),
        [
            ("ADDED".to_owned(), Some("v1".to_owned())),
            ("UPDATED".to_owned(), Some("v2".to_owned())),
        ]
    );
    // An instance started now, after those entries, knows them too.
    let second = live_router_through_redis(&app, &redis.url());
    let mut on_second = follow(&app, &second, json!({ "owner": "alice" })).await;
    // The first subscriber saw the second one's warm-up note come and go.
    drain_warm_up(&mut on_first).await;

    // A relay behind publishes the item's older change, and its newer one, again: neither is
    // news to anyone. Another item's change, published after them, is.
    publish_again(&redis.url(), &table, "v1").await;
    publish_again(&redis.url(), &table, "v2").await;
    put_plain(app.client(), &table, [note("alice", 2, "next", "OPEN")]).await;
    for events in [&mut on_first, &mut on_second] {
        let saw = changes_until(events, "next").await;
        assert_eq!(
            saw.iter().map(seen).collect::<Vec<_>>(),
            [("ADDED".to_owned(), Some("next".to_owned()))],
            "{saw:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_go_through_a_redis_over_tls_with_its_certificate_authority() {
    use dynarelay::stream::redis_feed::RedisFeed;
    let redis = TlsRedisServer::start().await;
    let ca = redis.ca_file();
    // Its certificate authority is not among the system's: without it, no connection.
    let untrusted = RedisFeed::new(&redis.url(), None).unwrap();
    assert!(untrusted.publisher(1_000).await.is_err());
    // A certificate authority is for a TLS Redis only.
    let plain = RedisFeed::new("redis://127.0.0.1:6379", Some(&ca)).unwrap_err();
    assert!(plain.to_string().contains("rediss://"), "{plain}");

    let app = model_app_from(MODEL).await;
    let table = app.table("Notes");
    let ca_text = ca.to_str().unwrap();
    let _relay = Relay::start_with(
        &app,
        MODEL,
        &redis.url(),
        &[("DYNARELAY_REDIS_CA_FILE", ca_text)],
    );
    let feed = RedisFeed::new(&redis.url(), Some(&ca)).unwrap();
    let instance = live_router_through_feed(&app, feed);
    let mut events = follow(&app, &instance, json!({ "owner": "alice" })).await;
    put_plain(app.client(), &table, [note("alice", 1, "over TLS", "OPEN")]).await;
    let saw = changes_until(&mut events, "over TLS").await;
    assert_eq!(
        saw.iter().map(seen).collect::<Vec<_>>(),
        [("ADDED".to_owned(), Some("over TLS".to_owned()))]
    );
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

const SINCE: &str = "subscription($owner: String!, $after: String, $resumeFrom: String) {
  notesChanged(owner: $owner, after: $after, resumeFrom: $resumeFrom) {
    kind id position edge { cursor node { id at text state } } } }";

/// Subscriptions resumed, by where what they missed was read.
fn resumes(app: &crate::helpers::ModelApp, from: &str) -> f64 {
    metric(
        &app.store.metrics().render(),
        &format!("dynarelay_subscription_resumes_total{{from=\"{from}\"}}"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_position_resumes_from_redis_while_it_holds_it_then_from_the_tables_stream() {
    resume_through_redis_then_the_stream(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_position_resumes_after_a_redis_restart_when_stream_reads_answer_empty() {
    resume_through_redis_then_the_stream(Some(Empty::SameIterator(2))).await;
}

/// A client resumes from its positions through Redis, then, after Redis restarted empty, from
/// the table's stream; the relay's and the instances' stream reads go through the fault proxy,
/// with `empty` answers when given.
async fn resume_through_redis_then_the_stream(empty: Option<Empty>) {
    let mut redis = RedisServer::start();
    let app = model_app_from(MODEL).await;
    let table = app.table("Notes");
    let proxy = FaultProxy::start(&endpoint()).await;
    proxy.empty_answers(empty);
    let _relay = Relay::start_with(
        &app,
        MODEL,
        &redis.url(),
        &[("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", &proxy.url())],
    );
    let first = live_router_through_redis_streams_at(&app, &redis.url(), &proxy.url());
    let mut warm = follow(&app, &first, json!({ "owner": "alice" })).await;
    // A client pages the first note and resumes from its cursor once the instance has read
    // both: the note after the cursor comes first, with the subscription's position.
    put_plain(app.client(), &table, [note("alice", 10, "ten", "OPEN")]).await;
    put_plain(app.client(), &table, [note("alice", 11, "one", "OPEN")]).await;
    changes_until(&mut warm, "one").await;
    let page = post_graphql(
        &first,
        "{ notes(owner: \"alice\", first: 1) { edges { cursor node { text } } } }",
        json!({}),
    )
    .await;
    let edge = &page["data"]["notes"]["edges"][0];
    assert_eq!(edge["node"]["text"], "ten", "{page}");
    let mut events = subscribe(
        &first,
        SINCE,
        json!({ "owner": "alice", "after": edge["cursor"] }),
    )
    .await;
    let one = changes_until(&mut events, "one").await;
    let position = one.last().unwrap()["position"].as_str().unwrap().to_owned();
    drop((events, warm));

    // Away, then back through another instance while Redis holds what was missed: a change
    // before the cursor too.
    put_plain(
        app.client(),
        &table,
        [note("alice", 10, "ten, edited", "OPEN")],
    )
    .await;
    put_plain(app.client(), &table, [note("alice", 12, "two", "OPEN")]).await;
    let second = live_router_through_redis_streams_at(&app, &redis.url(), &proxy.url());
    let mut events = subscribe(
        &second,
        SINCE,
        json!({ "owner": "alice", "resumeFrom": position }),
    )
    .await;
    let missed = changes_until(&mut events, "two").await;
    assert_eq!(
        missed.iter().map(seen).collect::<Vec<_>>(),
        [
            ("UPDATED".to_owned(), Some("ten, edited".to_owned())),
            ("ADDED".to_owned(), Some("two".to_owned()))
        ],
        "{missed:?}"
    );
    assert_eq!(resumes(&app, "redis"), 1.0);
    // A live change comes only once the replay is done: no read of it is left to race the
    // Redis restart below.
    put_plain(app.client(), &table, [note("alice", 15, "live", "OPEN")]).await;
    let live = changes_until(&mut events, "live").await;
    let position = live.last().unwrap()["position"]
        .as_str()
        .unwrap()
        .to_owned();

    // Redis restarted empty: the subscription ends, and what was written meanwhile is read
    // from the table's stream.
    redis.restart();
    put_plain(app.client(), &table, [note("alice", 13, "three", "OPEN")]).await;
    let ended = loop {
        // (Changes the ending subscription still passes on are what the client would keep;
        // the resume below starts before them and sends them again, judged by the client.)
        let (_, event) = next_event(&mut events).await;
        if event.get("errors").is_some() {
            break event;
        }
    };
    assert_eq!(
        ended["errors"][0]["extensions"]["code"], "CHANGES_LOST",
        "{ended}"
    );
    drop(events);
    // (A resume Redis cannot finish, say across a gap a relay published, goes on from the
    // stream and counts there too: counted once the first subscription has ended.)
    let from_the_stream = resumes(&app, "stream");
    put_plain(
        app.client(),
        &table,
        [note("alice", 12, "two, edited", "OPEN")],
    )
    .await;
    let mut events = subscribe(
        &second,
        SINCE,
        json!({ "owner": "alice", "resumeFrom": position }),
    )
    .await;
    let missed = changes_until(&mut events, "two, edited").await;
    assert_eq!(
        missed.iter().map(seen).collect::<Vec<_>>(),
        [
            ("ADDED".to_owned(), Some("three".to_owned())),
            ("UPDATED".to_owned(), Some("two, edited".to_owned()))
        ],
        "{missed:?}"
    );
    assert_eq!(resumes(&app, "stream"), from_the_stream + 1.0);
    assert_eq!(
        resumes(&app, "redis"),
        1.0,
        "Redis no longer held the position's entry"
    );
    // Then the live changes, once each.
    put_plain(app.client(), &table, [note("alice", 14, "four", "OPEN")]).await;
    let live = changes_until(&mut events, "four").await;
    assert_eq!(
        live.iter().map(seen).collect::<Vec<_>>(),
        [("ADDED".to_owned(), Some("four".to_owned()))],
        "{live:?}"
    );
    if empty.is_some() {
        assert!(proxy.empty_answers_given() > 0, "no empty answer was given");
    }
}

/// A DynamoDB Streams record of `table` as an event source mapping hands it to Lambda.
fn stream_record(
    table: &str,
    name: &str,
    sequence: &str,
    keys: Value,
    old: Option<Value>,
    new: Option<Value>,
) -> Value {
    let mut data = json!({
        "ApproximateCreationDateTime": 1_764_000_000,
        "Keys": keys,
        "SequenceNumber": sequence,
        "SizeBytes": 64,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    });
    if let Some(old) = old {
        data["OldImage"] = old;
    }
    if let Some(new) = new {
        data["NewImage"] = new;
    }
    json!({
        "eventID": format!("event-{sequence}"),
        "eventName": name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": data,
        "eventSourceARN": format!("arn:aws:dynamodb:us-east-1:123456789012:table/{table}/stream/2026-11-28T00:00:00.000"),
    })
}

/// A note's keys and image in DynamoDB's typed JSON.
fn typed_note(at: i64, text: &str) -> (Value, Value) {
    let keys = json!({ "owner": { "S": "alice" }, "at": { "N": at.to_string() } });
    let image = json!({
        "owner": { "S": "alice" }, "at": { "N": at.to_string() },
        "text": { "S": text }, "state": { "S": "OPEN" }, "kind": { "S": "Note" },
    });
    (keys, image)
}

/// Invokes the function with `records` as Lambda does; its answer.
async fn invoke(http: &reqwest::Client, function: &LambdaFunction, records: Vec<Value>) -> Value {
    let response = http
        .post(function.invocations())
        .json(&json!({ "Records": records }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// The `seq` and `kind` of every entry of `table`'s Redis stream, oldest first.
async fn entries(url: &str, table: &str) -> Vec<(String, String)> {
    stream_entries(url, table)
        .await
        .iter()
        .map(|e| {
            (
                e.get::<String>("seq").unwrap_or_default(),
                e.get::<String>("kind").unwrap(),
            )
        })
        .collect()
}

/// Every entry of `table`'s Redis stream, one per line (its id and fields), to tell what a
/// failing test's relays published.
async fn stream_dump(url: &str, table: &str) -> String {
    stream_entries(url, table)
        .await
        .iter()
        .map(|e| {
            let mut fields: Vec<String> = e
                .map
                .iter()
                .map(|(name, value)| {
                    let value: String = redis::from_redis_value_ref(value).unwrap_or_default();
                    format!("{name}={value}")
                })
                .collect();
            fields.sort();
            format!("{} {}", e.id, fields.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn published(pairs: &[&str]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|seq| ((*seq).to_owned(), "change".to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lambda_function_publishes_stream_events_and_reports_the_first_failure() {
    let mut redis = RedisServer::start();
    // The notes told apart by a type attribute, so that an item can be of no entity.
    let typed = MODEL.replace(
        "stream = \"NEW_AND_OLD_IMAGES\"\n",
        "stream = \"NEW_AND_OLD_IMAGES\"\ntype_attribute = \"kind\"\n",
    );
    let app = model_app_from(&typed).await;
    let table = app.table("Notes");
    let function =
        LambdaFunction::start_packaged_relay(&app.prefix, &model_file(&typed), &redis.url());
    let http = reqwest::Client::new();

    // A batch: an insert, an update, a record of a table the model does not stream, a removal,
    // and a record of an item of no entity: three changes published, in order.
    let (keys, first) = typed_note(1, "first");
    let (_, again) = typed_note(1, "first, again");
    let batch = vec![
        stream_record(
            &table,
            "INSERT",
            "100",
            keys.clone(),
            None,
            Some(first.clone()),
        ),
        stream_record(
            &table,
            "MODIFY",
            "101",
            keys.clone(),
            Some(first.clone()),
            Some(again.clone()),
        ),
        stream_record(
            &format!("{}Other", app.prefix),
            "INSERT",
            "102",
            keys.clone(),
            None,
            Some(first),
        ),
        stream_record(&table, "REMOVE", "103", keys.clone(), Some(again), None),
        stream_record(
            &table,
            "INSERT",
            "104",
            keys.clone(),
            None,
            Some(json!({ "owner": { "S": "alice" }, "at": { "N": "1" }, "kind": { "S": "Memo" } })),
        ),
    ];
    assert_eq!(
        invoke(&http, &function, batch).await,
        json!({ "batchItemFailures": [] })
    );
    assert_eq!(
        entries(&redis.url(), &table).await,
        published(&["100", "101", "103"])
    );

    // A record that cannot be read is the batch's failure: the ones before it are published,
    // the ones after it left for Lambda's retry from it.
    let (keys, second) = typed_note(2, "second");
    let (keys3, third) = typed_note(3, "third");
    let mut poisoned = stream_record(
        &table,
        "INSERT",
        "201",
        keys.clone(),
        None,
        Some(second.clone()),
    );
    poisoned["dynamodb"]["Keys"] = json!("not a map");
    let batch = vec![
        stream_record(&table, "INSERT", "200", keys, None, Some(second)),
        poisoned,
        stream_record(
            &table,
            "INSERT",
            "202",
            keys3.clone(),
            None,
            Some(third.clone()),
        ),
    ];
    assert_eq!(
        invoke(&http, &function, batch).await,
        json!({ "batchItemFailures": [{ "itemIdentifier": "201" }] })
    );
    assert_eq!(
        entries(&redis.url(), &table).await,
        published(&["100", "101", "103", "200"])
    );

    // Redis away: the first record fails, and Lambda's retry of the batch publishes it.
    redis.stop();
    let batch = vec![stream_record(
        &table,
        "INSERT",
        "202",
        keys3,
        None,
        Some(third),
    )];
    assert_eq!(
        invoke(&http, &function, batch.clone()).await,
        json!({ "batchItemFailures": [{ "itemIdentifier": "202" }] })
    );
    redis.start_again();
    assert_eq!(
        invoke(&http, &function, batch).await,
        json!({ "batchItemFailures": [] })
    );
    assert_eq!(entries(&redis.url(), &table).await, published(&["202"]));
}

/// `SIGHUP` never ends a relay: it has nothing to reload, says so, and goes on relaying.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_stays_up_and_relaying_on_sighup() {
    let redis = RedisServer::start();
    let app = model_app_from(MODEL).await;
    let table = app.table("Notes");
    let relay = Relay::start(&app, MODEL, &redis.url());
    // (A fresh table's shard holds nothing before the note: read from its start.)
    relay.wait_for_log("took a shard's lease");
    put_plain(app.client(), &table, [note("alice", 1, "before", "OPEN")]).await;
    wait_for_relayed(&redis.url(), &table, 1).await;
    relay.hang_up();
    relay.wait_for_log("SIGHUP: nothing to reload");
    put_plain(app.client(), &table, [note("alice", 2, "after", "OPEN")]).await;
    let (relayed, _) = wait_for_relayed(&redis.url(), &table, 2).await;
    assert_eq!(relayed, [1, 2]);
    relay.terminate();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_is_not_ready_while_a_table_has_no_stream() {
    let redis = RedisServer::start();
    // The tables as they are: no stream, although the relay's model declares one.
    let unstreamed = MODEL
        .replace("stream = \"NEW_AND_OLD_IMAGES\"\n", "")
        .replace("subscription = \"notesChanged\"\n", "");
    let app = model_app_from(&unstreamed).await;
    let relay = Relay::start(&app, MODEL, &redis.url());
    relay.wait_for_log("the table has no stream");
    let ready = reqwest::get(relay.url("/ready")).await.unwrap();
    assert_eq!(ready.status(), 503);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_reads_no_further_than_redis_takes_its_changes() {
    let mut redis = RedisServer::start();
    let app = model_app_from(MODEL).await;
    let table = app.table("Notes");
    let _relay = Relay::start(&app, MODEL, &redis.url());
    // Written until relayed: the relay has then taken its place in the stream.
    let mut placed = 0;
    for attempt in 0.. {
        put_plain(
            app.client(),
            &table,
            [note("alice", 0, &format!("placing {attempt}"), "OPEN")],
        )
        .await;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        placed = relayed_notes(&redis.url(), &table).await.0.len();
        if placed > 0 {
            break;
        }
    }
    assert!(placed > 0);

    // Redis down while more changes are written than any buffer of the relay's would hold: the
    // relay waits, reading no further, and publishes them all, in order, once Redis is back.
    redis.stop();
    let written: Vec<i64> = (1..=1_500).collect();
    put_plain(
        app.client(),
        &table,
        written
            .iter()
            .map(|at| note("alice", *at, "while Redis was down", "OPEN")),
    )
    .await;
    redis.start_again();
    let (notes, gaps) = wait_for_relayed(&redis.url(), &table, written.len()).await;
    assert_eq!(gaps, 0);
    // The placing notes' changes that Redis had not taken yet when it stopped came first.
    let later: Vec<i64> = notes.into_iter().filter(|at| *at != 0).collect();
    assert_eq!(later, written);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_taking_over_a_lease_never_checkpointed_reads_what_was_written_since_it_was_made() {
    let redis = RedisServer::start();
    let app = model_app_from(MODEL).await;
    let table = app.table("Notes");
    // A relay makes the shard's lease, at the stream's newest record, and dies before any
    // record: the lease has no checkpoint.
    let first = Relay::start(&app, MODEL, &redis.url());
    first.wait_for_log("took a shard's lease");
    drop(first);
    put_plain(
        app.client(),
        &table,
        [note("alice", 1, "no relay ran", "OPEN")],
    )
    .await;
    // The next relay takes the lease over and reads the shard from the lease's making, not
    // from its newest record.
    let next = Relay::start(&app, MODEL, &redis.url());
    next.wait_for_log("took over a shard's lease");
    put_plain(
        app.client(),
        &table,
        [note("alice", 2, "a relay runs", "OPEN")],
    )
    .await;
    assert_eq!(
        wait_for_relayed(&redis.url(), &table, 2).await,
        (vec![1, 2], 0)
    );
}
