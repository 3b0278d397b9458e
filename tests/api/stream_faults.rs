//! The stream reader under DynamoDB Streams' faults, injected by the fault proxy between it and
//! DynamoDB Local: throttled reads (`LimitExceededException`), expired iterators, internal
//! errors and trimmed records. Throttled, failed and expired reads lose and repeat nothing
//! that DynamoDB kept; records trimmed before they were read end the subscriptions with
//! `CHANGES_LOST`, and nothing passed on before is passed on again.

use serde_json::json;

use crate::{
    fault_proxy::FaultProxy,
    helpers::{
        control_client, endpoint, live_router_streams_at, metric, model_app_from, next_event,
        put_plain, received_within, subscribe, warm_up,
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
    use aws_sdk_dynamodb::types::{StreamSpecification, StreamViewType};
    let app = model_app_from(MODEL).await;
    let router = crate::helpers::live_router(&app);
    let table = app.table("Notes");
    let mut first = follow(&app, &router, json!({ "owner": "alice" })).await;
    let set_stream = async |enabled: bool| {
        let mut spec = StreamSpecification::builder().stream_enabled(enabled);
        if enabled {
            spec = spec.stream_view_type(StreamViewType::NewAndOldImages);
        }
        control_client()
            .update_table()
            .table_name(&table)
            .stream_specification(spec.build().unwrap())
            .send()
            .await
            .unwrap();
    };
    set_stream(false).await;
    set_stream(true).await;
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
