//! Subscriptions' caps and metrics against DynamoDB Local's streams: a caller past its cap, and
//! the server past its own, refused with `TOO_MANY_SUBSCRIPTIONS` before anything is read; items
//! of no entity of the model skipped by the reader and counted; the running subscriptions, the
//! changes sent and the stream's lag in `/metrics`; and 10,000 idle subscriptions at once.

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::{dynamo::Item, http::HttpSettings, stream::StreamSettings};
use serde_json::json;
use tokio::sync::mpsc;

use crate::{
    helpers::{
        ModelApp, Received, TestIssuer, WAIT, control_client, graphql_with_token,
        live_router_with_streams, metric, model_app_from, model_auth_settings, model_claims,
        next_event, put_plain, received_within, refusal, set_stream, subscribe, subscribe_as,
        subscribe_reading, test_stream_settings, warm_up,
    },
    subscriptions::OWNED,
};

pub(crate) const THINGS: &str = r#"version = 1

[tables.Things]
partition_key = "PK"
sort_key = "SK"
attributes = { PK = "S", SK = "S" }
type_attribute = "_type"
stream = "NEW_AND_OLD_IMAGES"

[entities.Note]
table = "Things"
keys = { PK = "USER#{owner}", SK = "NOTE#{noteId}" }
escape_keys = false
fields.owner = "String!"
fields.noteId = "String!"
fields.text = "String!"

[connections.notes]
entity = "Note"
partition = { argument = "owner" }
subscription = "notesChanged"
"#;

fn thing(kind: &str, note: &str, text: &str) -> Item {
    let s = |v: &str| AttributeValue::S(v.to_owned());
    Item::from([
        ("PK".to_owned(), s("USER#ann")),
        ("SK".to_owned(), s(&format!("NOTE#{note}"))),
        ("_type".to_owned(), s(kind)),
        ("owner".to_owned(), s("ann")),
        ("noteId".to_owned(), s(note)),
        ("text".to_owned(), s(text)),
    ])
}

/// Waits until a subscription to ann's notes is placed in the stream (warm-up notes until one
/// arrives), then drains the warm-up's events, fenced by a last note.
async fn placed(app: &ModelApp, events: &mut mpsc::Receiver<Received>) {
    let table = app.table("Things");
    warm_up(
        async |round| {
            let warm = thing("Note", "warm", &format!("warm-up {round}"));
            put_plain(app.client(), &table, [warm]).await;
        },
        async |wait| received_within(events, wait).await,
    )
    .await;
    put_plain(app.client(), &table, [thing("Note", "fence", "fence")]).await;
    while next_event(events).await.1["data"]["notesChanged"]["edge"]["node"]["text"] != "fence" {}
}

#[tokio::test]
async fn items_of_no_entity_are_skipped_and_counted_and_what_is_sent_is_measured() {
    let app = model_app_from(THINGS).await;
    let router = live_router_with_streams(&app, HttpSettings::default(), test_stream_settings());
    let table = app.table("Things");
    let query = "subscription { notesChanged(owner: \"ann\") { kind edge { node { text } } } }";
    let mut events = subscribe(&router, query, json!({})).await;
    placed(&app, &mut events).await;
    let before = app.store.metrics().render();

    // In the connection's partition, with keys a note's would have, but of another type: no
    // entity of the model, so no subscriber hears of it.
    put_plain(app.client(), &table, [thing("Mystery", "m", "not a note")]).await;
    put_plain(app.client(), &table, [thing("Note", "n", "a note")]).await;
    let (_, data) = next_event(&mut events).await;
    assert_eq!(
        data["data"]["notesChanged"],
        json!({ "kind": "ADDED", "edge": { "node": { "text": "a note" } } })
    );

    let after = app.store.metrics().render();
    let unmatched = format!("dynarelay_stream_changes_unmatched_total{{table=\"{table}\"}}");
    assert_eq!(
        metric(&after, &unmatched) - metric(&before, &unmatched),
        1.0,
        "{after}"
    );
    let sent = "dynarelay_subscription_events_total";
    assert_eq!(metric(&after, sent) - metric(&before, sent), 1.0, "{after}");
    assert_eq!(metric(&after, "dynarelay_subscriptions "), 1.0, "{after}");
    let lag = format!("dynarelay_stream_lag_seconds{{table=\"{table}\"}}");
    assert!(after.contains(&lag), "{after}");
}

#[tokio::test]
async fn callers_and_the_server_are_held_to_their_caps() {
    let issuer = TestIssuer::start().await;
    let app = model_app_from(OWNED).await;
    let auth = dynarelay::auth::Authenticator::new(model_auth_settings(app.model, &issuer.url()))
        .await
        .unwrap();
    let router = live_router_with_streams(
        &app,
        HttpSettings {
            auth: Some(auth),
            ..HttpSettings::default()
        },
        StreamSettings {
            max_subscriptions: 3,
            max_subscriptions_per_caller: 2,
            ..test_stream_settings()
        },
    );
    let token = |sub: &str| issuer.mint(&model_claims(app.model, sub, &[]));
    let (alice, bob) = (token("alice"), token("bob"));
    let mut ids = Vec::new();
    for (owner, token) in [("alice", &alice), ("bob", &bob)] {
        let item = Item::from([("ownerId".to_owned(), AttributeValue::S(owner.to_owned()))]);
        put_plain(app.client(), &app.table("Owners"), [item]).await;
        let answer = graphql_with_token(
            &router,
            Some(token),
            "query($o: ID!) { owner(ownerId: $o) { id } }",
            json!({ "o": owner }),
        )
        .await;
        ids.push(answer.body["data"]["owner"]["id"].clone());
    }
    let cards = "subscription($o: ID!) { cardsChanged(owner: $o) { kind } }";
    let too_many = |message: &str| ("TOO_MANY_SUBSCRIPTIONS".to_owned(), message.to_owned());
    // Each running subscription holds its seat once the server has started it.
    let seated = async |count: f64| {
        let started = std::time::Instant::now();
        while metric(&app.store.metrics().render(), "dynarelay_subscriptions ") != count {
            assert!(started.elapsed() < WAIT, "{count} subscriptions never ran");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };

    let mut running = Vec::new();
    for n in 1..=2 {
        running.push(subscribe_as(&router, Some(&alice), cards, json!({ "o": ids[0] })).await);
        seated(f64::from(n)).await;
    }
    // Alice's third: past her cap.
    let mut refused = subscribe_as(&router, Some(&alice), cards, json!({ "o": ids[0] })).await;
    assert_eq!(
        refusal(&mut refused).await,
        too_many("You run your most subscriptions: complete one first.")
    );
    // Bob's first fills the server; anyone's next is past the server's cap.
    running.push(subscribe_as(&router, Some(&bob), cards, json!({ "o": ids[1] })).await);
    seated(3.0).await;
    for token in [Some(bob.as_str()), None] {
        let mut refused = subscribe_as(&router, token, cards, json!({ "o": ids[1] })).await;
        assert_eq!(
            refusal(&mut refused).await,
            too_many("The server runs its most subscriptions: try again later.")
        );
    }
    let rendered = app.store.metrics().render();
    assert_eq!(metric(&rendered, "dynarelay_subscriptions "), 3.0);
    assert_eq!(
        metric(
            &rendered,
            "dynarelay_subscriptions_refused_total{reason=\"caller\"}"
        ),
        1.0
    );
    assert_eq!(
        metric(
            &rendered,
            "dynarelay_subscriptions_refused_total{reason=\"server\"}"
        ),
        2.0
    );
}

#[tokio::test]
async fn a_subscriber_that_stops_reading_is_ended_with_changes_lost() {
    let app = model_app_from(THINGS).await;
    let router = live_router_with_streams(
        &app,
        HttpSettings::default(),
        StreamSettings {
            buffer: 4,
            ..test_stream_settings()
        },
    );
    let table = app.table("Things");
    let query = "subscription { notesChanged(owner: \"ann\") { kind edge { node { text } } } }";
    // The client takes one event at a time: while it takes none, nothing more is read.
    let mut events = subscribe_reading(&router, None, query, json!({}), 1).await;
    placed(&app, &mut events).await;
    // The client stops taking events while 20 changes are written: more than the 4 it may
    // fall behind by.
    for n in 0..20 {
        put_plain(
            app.client(),
            &table,
            [thing("Note", &format!("n{n}"), "burst")],
        )
        .await;
    }
    // What it held before it stopped, then the end: more changes than it may be held back by
    // were lost to it.
    let mut ended = None;
    while ended.is_none() {
        let (name, data) = next_event(&mut events).await;
        assert_eq!(name, "next", "{data}");
        if let Some(errors) = data.get("errors") {
            ended = Some(errors[0]["extensions"]["code"].clone());
        }
    }
    assert_eq!(ended, Some(json!("CHANGES_LOST")));
    assert_eq!(next_event(&mut events).await.0, "complete");
    let lost = "dynarelay_subscriptions_lost_total";
    assert_eq!(metric(&app.store.metrics().render(), lost), 1.0);
}

/// 10,000 idle subscriptions to one connection (the server's default cap): every one gets the
/// next change, once; the 10,001st is refused; and once their clients go, their seats are free
/// again (the running subscriptions' gauge back to 0, and a new one runs).
#[tokio::test]
async fn ten_thousand_idle_subscriptions_each_get_a_change_and_leave_no_seat_taken() {
    const SUBSCRIBERS: usize = 10_000;
    let app = model_app_from(THINGS).await;
    let settings = test_stream_settings();
    assert_eq!(settings.max_subscriptions, SUBSCRIBERS, "the default cap");
    let router = live_router_with_streams(&app, HttpSettings::default(), settings);
    let table = app.table("Things");
    let query = "subscription { notesChanged(owner: \"ann\") { kind edge { node { text } } } }";
    let mut all = Vec::with_capacity(SUBSCRIBERS);
    for _ in 0..SUBSCRIBERS {
        // Each reads at most a few events ahead, as an idle client's socket buffer would.
        all.push(subscribe_reading(&router, None, query, json!({}), 4).await);
    }

    // Warm-up notes until every subscription has received one: all are then placed.
    let mut arrived = vec![false; SUBSCRIBERS];
    let started = std::time::Instant::now();
    for round in 0.. {
        assert!(started.elapsed() < WAIT * 5, "subscriptions never placed");
        let warm = thing("Note", "warm", &format!("warm-up {round}"));
        put_plain(app.client(), &table, [warm]).await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        for (events, arrived) in all.iter_mut().zip(arrived.iter_mut()) {
            while let Ok(event) = events.try_recv() {
                assert_eq!(event.0, "next", "{event:?}");
                *arrived = true;
            }
        }
        if arrived.iter().all(|&a| a) {
            break;
        }
    }
    let rendered = app.store.metrics().render();
    assert_eq!(
        metric(&rendered, "dynarelay_subscriptions "),
        SUBSCRIBERS as f64
    );
    let mut refused = subscribe(&router, query, json!({})).await;
    assert_eq!(refusal(&mut refused).await.0, "TOO_MANY_SUBSCRIPTIONS");

    // One change reaches every subscriber once (after any warm-ups still on their way).
    put_plain(app.client(), &table, [thing("Note", "n", "to everyone")]).await;
    for events in &mut all {
        loop {
            let (_, data) = next_event(events).await;
            let change = &data["data"]["notesChanged"];
            if change["edge"]["node"]["text"] == "to everyone" {
                assert_eq!(change["kind"], "ADDED", "{data}");
                break;
            }
        }
    }

    // The clients go: each subscription ends when its next change finds no one to send it to.
    drop(all);
    let started = std::time::Instant::now();
    for round in 0.. {
        let rendered = app.store.metrics().render();
        if metric(&rendered, "dynarelay_subscriptions ") == 0.0 {
            break;
        }
        assert!(started.elapsed() < WAIT, "seats still taken: {rendered}");
        put_plain(
            app.client(),
            &table,
            [thing("Note", "n", &format!("gone {round}"))],
        )
        .await;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let mut again = subscribe(&router, query, json!({})).await;
    placed(&app, &mut again).await;
}

/// A subscription whose table's changes cannot be followed (its stream disabled, or replaced by
/// one without old and new images) ends with a permanent, coded error that says why, not with
/// `SERVICE_UNAVAILABLE`'s "try again": subscribing again gets the same answer.
#[tokio::test]
async fn a_subscription_to_a_table_whose_stream_cannot_serve_it_ends_saying_why() {
    use aws_sdk_dynamodb::types::StreamViewType;
    let app = model_app_from(THINGS).await;
    let router = live_router_with_streams(&app, HttpSettings::default(), test_stream_settings());
    let table = app.table("Things");
    // DynamoDB Local answers `UpdateTable` slowly while the suite loads it.
    let control = control_client();
    let query = "subscription { notesChanged(owner: \"ann\") { kind } }";
    let ended = async || {
        let mut events = subscribe(&router, query, json!({})).await;
        let (name, data) = next_event(&mut events).await;
        assert_eq!(name, "next", "{data}");
        assert_eq!(next_event(&mut events).await.0, "complete");
        data["errors"][0].clone()
    };

    set_stream(&control, &table, None).await;
    for _ in 0..2 {
        let error = ended().await;
        assert_eq!(
            error["extensions"]["code"], "SUBSCRIPTIONS_UNAVAILABLE",
            "{error}"
        );
        assert_eq!(
            error["message"],
            "This subscription cannot be served: its table has no stream. The server's tables \
             must change, so subscribing again will not help."
        );
    }
    set_stream(&control, &table, Some(StreamViewType::KeysOnly)).await;
    let error = ended().await;
    assert_eq!(
        error["extensions"]["code"], "SUBSCRIPTIONS_UNAVAILABLE",
        "{error}"
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("its table's stream holds KEYS_ONLY"),
        "{error}"
    );
}
