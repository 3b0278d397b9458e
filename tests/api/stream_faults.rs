//! The stream reader under DynamoDB Streams' faults, injected by the fault proxy between it and
//! DynamoDB Local: throttled reads (`LimitExceededException`), expired iterators, internal
//! errors and trimmed records. Throttled, failed and expired reads lose and repeat nothing
//! that DynamoDB kept; records trimmed before they were read end the subscriptions with
//! `CHANGES_LOST`, and nothing passed on before is passed on again. A shard that splits while
//! followed is read to its end before its two children, and no change is lost, repeated or
//! reordered for its item.

use std::collections::BTreeMap;

use serde_json::json;

use crate::{
    fault_proxy::{Empty, FaultProxy},
    helpers::{
        WAIT, control_client, endpoint, live_router_streams_at, metric, model_app_from, next_event,
        put_plain, received_within, set_stream, subscribe, warm_up,
    },
    subscriptions::{MODEL, change, follow, note},
};

#[tokio::test]
async fn throttled_failed_and_expired_reads_lose_and_repeat_nothing() {
    let app = model_app_from(MODEL).await;
    let proxy = FaultProxy::start(&endpoint()).await;
    let router = live_router_streams_at(&app, &proxy.url());
    let table = app.table("Notes");
    let mut events = follow(&app, &router, json!({ "owner": "alice" })).await;

    let failures = [
        ("LimitExceededException", 3),
        ("InternalServerError", 1),
        ("ExpiredIteratorException", 2),
    ];
    let mut at = 0;
    for (code, times) in failures {
        proxy.fail_next("GetRecords", code, times);
        for _ in 0..3 {
            at += 1;
            put_plain(
                app.client(),
                &table,
                [note("alice", at, &format!("note {at}"), "OPEN")],
            )
            .await;
        }
    }
    // Every note once, in the order written.
    for want in 1..=at {
        let event = next_event(&mut events).await;
        let change = change(&event);
        assert_eq!(change["kind"], "ADDED", "{change}");
        assert_eq!(change["edge"]["node"]["at"], want, "{change}");
    }
    assert_eq!(proxy.failures_left(), 0);
    // Counted after the SDK's own retries (which absorb some throttling): at least the two
    // expired iterators, which no retry hides.
    let rendered = app.store.metrics().render();
    assert!(
        metric(
            &rendered,
            "dynarelay_stream_call_failures_total{call=\"GetRecords\"}"
        ) >= 2.0,
        "{rendered}"
    );
    // Nothing more: a last note comes next.
    put_plain(app.client(), &table, [note("alice", 99, "last", "OPEN")]).await;
    let event = next_event(&mut events).await;
    assert_eq!(change(&event)["edge"]["node"]["at"], 99, "{event:?}");
}

#[tokio::test]
async fn trimmed_records_end_subscriptions_with_changes_lost_and_nothing_is_passed_on_twice() {
    let app = model_app_from(MODEL).await;
    let proxy = FaultProxy::start(&endpoint()).await;
    let router = live_router_streams_at(&app, &proxy.url());
    let table = app.table("Notes");
    let mut first = follow(&app, &router, json!({ "owner": "alice" })).await;
    put_plain(app.client(), &table, [note("alice", 1, "before", "OPEN")]).await;
    assert_eq!(
        change(&next_event(&mut first).await)["edge"]["node"]["at"],
        1
    );

    // The next read finds the records after the last one read trimmed: changes were lost.
    proxy.fail_next("GetRecords", "TrimmedDataAccessException", 1);
    let (name, data) = next_event(&mut first).await;
    assert_eq!(name, "next", "{data}");
    assert_eq!(
        data["errors"][0]["extensions"]["code"], "CHANGES_LOST",
        "{data}"
    );
    assert_eq!(next_event(&mut first).await.0, "complete");
    let gaps = format!("dynarelay_stream_gaps_total{{table=\"{table}\"}}");
    assert_eq!(metric(&app.store.metrics().render(), &gaps), 1.0);

    // A new subscriber gets what is written after it joined, and none of the records passed on
    // before the trim (the reader now reads the shard from its oldest record).
    let mut second = subscribe(
        &router,
        "subscription { notesChanged(owner: \"alice\") { kind edge { node { at text } } } }",
        json!({}),
    )
    .await;
    warm_up(
        async |round| {
            let warm = note("alice", 50, &format!("warm-up {round}"), "OPEN");
            put_plain(app.client(), &table, [warm]).await;
        },
        async |wait| received_within(&mut second, wait).await,
    )
    .await;
    put_plain(app.client(), &table, [note("alice", 60, "after", "OPEN")]).await;
    loop {
        let (_, data) = next_event(&mut second).await;
        let at = &data["data"]["notesChanged"]["edge"]["node"]["at"];
        assert!(*at == 50 || *at == 60, "passed on again: {data}");
        if *at == 60 {
            break;
        }
    }
}

#[tokio::test]
async fn a_stream_disabled_and_enabled_again_is_found_again_after_changes_lost() {
    use aws_sdk_dynamodb::types::StreamViewType;
    let app = model_app_from(MODEL).await;
    let router = crate::helpers::live_router(&app);
    let table = app.table("Notes");
    let mut first = follow(&app, &router, json!({ "owner": "alice" })).await;
    let client = control_client();
    set_stream(&client, &table, None).await;
    set_stream(&client, &table, Some(StreamViewType::NewAndOldImages)).await;
    // Writes between the two streams were never recorded: the subscription ends.
    let (name, data) = next_event(&mut first).await;
    assert_eq!(name, "next", "{data}");
    assert_eq!(
        data["errors"][0]["extensions"]["code"], "CHANGES_LOST",
        "{data}"
    );
    // A new subscriber follows the new stream.
    let mut second = follow(&app, &router, json!({ "owner": "alice" })).await;
    put_plain(
        app.client(),
        &table,
        [note("alice", 7, "on the new stream", "OPEN")],
    )
    .await;
    let event = next_event(&mut second).await;
    assert_eq!(change(&event)["edge"]["node"]["at"], 7, "{event:?}");
}

/// The newest record of `table`'s stream, read past the proxy: `(stream ARN, shard, sequence
/// number)`.
pub async fn newest_record(table: &str) -> (String, String, String) {
    let described = control_client()
        .describe_table()
        .table_name(table)
        .send()
        .await
        .unwrap();
    let arn = described
        .table()
        .unwrap()
        .latest_stream_arn()
        .unwrap()
        .to_owned();
    let streams = dynarelay::dynamo::streams_client_for_local(&endpoint());
    let stream = streams
        .describe_stream()
        .stream_arn(&arn)
        .send()
        .await
        .unwrap();
    let shards = stream.stream_description().unwrap().shards();
    assert_eq!(shards.len(), 1, "DynamoDB Local keeps one shard per stream");
    let shard = shards[0].shard_id().unwrap().to_owned();
    let mut iterator = streams
        .get_shard_iterator()
        .stream_arn(&arn)
        .shard_id(&shard)
        .shard_iterator_type(aws_sdk_dynamodbstreams::types::ShardIteratorType::TrimHorizon)
        .send()
        .await
        .unwrap()
        .shard_iterator()
        .map(str::to_owned);
    let mut newest = None;
    while let Some(at) = iterator {
        let out = streams
            .get_records()
            .shard_iterator(at)
            .send()
            .await
            .unwrap();
        if out.records().is_empty() {
            break;
        }
        newest = out
            .records()
            .last()
            .and_then(|r| r.dynamodb())
            .and_then(|r| r.sequence_number())
            .map(str::to_owned);
        iterator = out.next_shard_iterator().map(str::to_owned);
    }
    (arn, shard, newest.expect("the stream holds records"))
}

#[tokio::test]
async fn a_shard_that_splits_is_read_to_its_end_before_its_children_and_nothing_is_lost() {
    split_while_followed(None).await;
}

/// A shard split while followed, its reads answered by the proxy with `empty` answers first
/// (see [`Empty`]): every version of every note arrives once, each note's in the order written.
pub async fn split_while_followed(empty: Option<Empty>) {
    const ITEMS: i64 = 24;
    let app = model_app_from(MODEL).await;
    let proxy = FaultProxy::start(&endpoint()).await;
    proxy.empty_answers(empty);
    let router = live_router_streams_at(&app, &proxy.url());
    let table = app.table("Notes");
    let mut events = follow(&app, &router, json!({ "owner": "alice" })).await;
    let write = async |version: &str| {
        for at in 1..=ITEMS {
            put_plain(app.client(), &table, [note("alice", at, version, "OPEN")]).await;
        }
    };

    // The shard's reads held while the first version of every note is written, so that it
    // still holds them when it splits after them; the second and third go to its children.
    proxy.hold_stream_reads(true);
    write("v1").await;
    let (arn, shard, newest) = newest_record(&table).await;
    proxy.split_shard(&arn, &shard, &newest);
    write("v2").await;
    write("v3").await;
    // The reader sees the children (it describes the stream again within 10 seconds) while
    // the parent still holds the first versions, and reads the parent, held, three times more:
    // a child read in those rounds would put a note's second version before its first.
    let started = std::time::Instant::now();
    let mut held = None;
    loop {
        let (described, reads) = proxy.split_counts();
        match held {
            None if described > 0 => held = Some(reads),
            Some(at) if reads >= at + 3 => break,
            _ => {}
        }
        assert!(started.elapsed() < WAIT, "the reader stopped reading");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    proxy.hold_stream_reads(false);

    // Every version of every note once, and each note's in the order written.
    let mut seen: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for _ in 0..3 * ITEMS {
        let event = next_event(&mut events).await;
        let change = change(&event);
        let node = &change["edge"]["node"];
        seen.entry(node["at"].as_i64().unwrap())
            .or_default()
            .push(node["text"].as_str().unwrap().to_owned());
    }
    for at in 1..=ITEMS {
        assert_eq!(seen[&at], ["v1", "v2", "v3"], "note {at}: {seen:?}");
    }
    // Both children were read, and between them gave every later version.
    let [first, second] = proxy.split_records();
    assert!(first > 0 && second > 0, "{first} and {second} records");
    assert_eq!(first + second, 2 * ITEMS as u64);
    // Nothing more: a last note comes next.
    put_plain(app.client(), &table, [note("alice", 99, "last", "OPEN")]).await;
    let event = next_event(&mut events).await;
    assert_eq!(change(&event)["edge"]["node"]["at"], 99, "{event:?}");
    if empty.is_some() {
        assert!(proxy.empty_answers_given() > 0, "no empty answer was given");
    }
}
