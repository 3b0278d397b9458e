//! Resuming a subscription against DynamoDB Local's streams. From a cursor: the items after the
//! cursor come first, then the live changes, with no change missed and none sent twice across
//! the seam, even when writes race the subscription's start; and a cursor that is not the
//! connection's is refused before anything is read. From a change's position (`resumeFrom`): every
//! change made while the client was away, to items before its cursor too, once each, read from
//! the table's stream; a position the stream no longer continues is `POSITION_EXPIRED`.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use axum::Router;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{
    fault_proxy::{Empty, FaultProxy},
    helpers::{
        GroundQuery, ModelApp, Received, control_client, endpoint, live_router,
        live_router_streams_at, model_app_from, next_event, post_graphql, put_plain, query_all,
        refusal, set_stream, subscribe,
    },
    subscriptions::{MODEL, note},
};

const RESUME: &str = "subscription($owner: String!, $after: String) {
  notesChanged(owner: $owner, after: $after) {
    kind id edge { cursor node { id at text } } } }";

/// What a client holds of a connection: each node's `at` and `text`, by id.
type Held = BTreeMap<String, (i64, String)>;

/// Pages `owner`'s notes to the end: what the client holds, and the last edge's cursor.
async fn page(router: &Router, owner: &str) -> (Held, Option<String>) {
    let page = post_graphql(
        router,
        "query($owner: String!) { notes(owner: $owner, first: 100) {
           edges { cursor node { id at text } } pageInfo { hasNextPage } } }",
        json!({ "owner": owner }),
    )
    .await;
    let notes = &page["data"]["notes"];
    assert_eq!(notes["pageInfo"]["hasNextPage"], false, "{page}");
    let edges = notes["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("{page}"));
    let held = edges.iter().map(|e| node(&e["node"])).collect();
    let cursor = edges
        .last()
        .map(|e| e["cursor"].as_str().unwrap().to_owned());
    (held, cursor)
}

fn node(node: &Value) -> (String, (i64, String)) {
    (
        node["id"].as_str().unwrap().to_owned(),
        (
            node["at"].as_i64().unwrap(),
            node["text"].as_str().unwrap().to_owned(),
        ),
    )
}

/// What DynamoDB holds of `owner`'s notes, as `at` and `text`.
async fn truth(app: &ModelApp, owner: &str) -> Vec<(i64, String)> {
    truth_in(app, owner, None).await
}

/// What DynamoDB holds of `owner`'s notes in `state` (any, with `None`), as `at` and `text`.
async fn truth_in(app: &ModelApp, owner: &str, state: Option<&str>) -> Vec<(i64, String)> {
    let items = query_all(
        app.client(),
        &GroundQuery {
            table: &app.table("Notes"),
            index: None,
            condition: "#k = :v",
            names: &[("#k", "owner")],
            values: &[(":v", AttributeValue::S(owner.to_owned()))],
            forward: true,
        },
    )
    .await;
    items
        .iter()
        .filter(|item| state.is_none_or(|s| item["state"] == AttributeValue::S(s.to_owned())))
        .map(|item| {
            let (AttributeValue::N(at), AttributeValue::S(text)) = (&item["at"], &item["text"])
            else {
                panic!("{item:?}")
            };
            (at.parse().unwrap(), text.clone())
        })
        .collect()
}

/// How a client's copy went wrong while it applied changes.
#[derive(Debug, Default, PartialEq, Eq)]
struct Misapplied {
    /// `ADDED` for a node it held already, or `UPDATED` to what it held: sent twice.
    twice: Vec<Value>,
    /// `UPDATED` or `REMOVED` for a node it does not hold: its `ADDED` was missed, or a change
    /// from before the resumed read was sent.
    unknown: Vec<Value>,
}

/// Applies one change to what the client holds, as Relay's and Apollo's stores do; returns the
/// node's text.
fn apply(held: &mut Held, change: &Value, wrong: &mut Misapplied) -> Option<String> {
    let id = change["id"].as_str().unwrap().to_owned();
    match change["kind"].as_str().unwrap() {
        "ADDED" => {
            let (id, value) = node(&change["edge"]["node"]);
            if held.insert(id, value.clone()).is_some() {
                wrong.twice.push(change.clone());
            }
            Some(value.1)
        }
        "UPDATED" => {
            let (id, value) = node(&change["edge"]["node"]);
            match held.insert(id, value.clone()) {
                None => wrong.unknown.push(change.clone()),
                Some(before) if before == value => wrong.twice.push(change.clone()),
                Some(_) => {}
            }
            Some(value.1)
        }
        "REMOVED" => {
            if held.remove(&id).is_none() {
                wrong.unknown.push(change.clone());
            }
            None
        }
        other => panic!("{other}"),
    }
}

/// The change an event carries.
fn change(event: &Received) -> &Value {
    assert_eq!(event.0, "next", "{event:?}");
    assert!(event.1.get("errors").is_none(), "{event:?}");
    &event.1["data"]["notesChanged"]
}

/// Applies changes until the note whose text is `last` arrives.
async fn apply_until(
    events: &mut mpsc::Receiver<Received>,
    held: &mut Held,
    last: &str,
    wrong: &mut Misapplied,
) -> Vec<String> {
    let mut cursors = Vec::new();
    loop {
        let event = next_event(events).await;
        let change = change(&event);
        if let Some(cursor) = change["edge"]["cursor"].as_str() {
            cursors.push(cursor.to_owned());
        }
        if apply(held, change, wrong).as_deref() == Some(last) {
            return cursors;
        }
    }
}

fn remove(owner: &str, at: i64) -> (String, i64) {
    (owner.to_owned(), at)
}

async fn delete(app: &ModelApp, (owner, at): (String, i64)) {
    app.client()
        .delete_item()
        .table_name(app.table("Notes"))
        .key("owner", AttributeValue::S(owner))
        .key("at", AttributeValue::N(at.to_string()))
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_resumed_subscription_sends_what_follows_its_cursor_then_every_change() {
    let app = model_app_from(MODEL).await;
    let router = live_router(&app);
    let table = app.table("Notes");
    put_plain(
        app.client(),
        &table,
        (1..=3).map(|at| note("ann", at, &format!("note {at}"), "OPEN")),
    )
    .await;
    let (mut held, cursor) = page(&router, "ann").await;
    // Written while the client was away: two after its cursor, one changed before it.
    put_plain(app.client(), &table, [note("ann", 4, "note 4", "OPEN")]).await;
    put_plain(app.client(), &table, [note("ann", 5, "note 5", "DONE")]).await;

    let mut events = subscribe(&router, RESUME, json!({ "owner": "ann", "after": cursor })).await;
    let mut wrong = Misapplied::default();
    // The items after the cursor come first, in the connection's order, as `ADDED` edges.
    for at in [4, 5] {
        let event = next_event(&mut events).await;
        let change = change(&event);
        assert_eq!(change["kind"], "ADDED", "{change}");
        assert_eq!(change["edge"]["node"]["at"], at, "{change}");
        apply(&mut held, change, &mut wrong);
    }
    // Then the live changes.
    put_plain(
        app.client(),
        &table,
        [note("ann", 5, "note 5, edited", "DONE")],
    )
    .await;
    delete(&app, remove("ann", 1)).await;
    put_plain(app.client(), &table, [note("ann", 6, "the end", "OPEN")]).await;
    let cursors = apply_until(&mut events, &mut held, "the end", &mut wrong).await;
    assert_eq!(wrong, Misapplied::default());
    let mut got: Vec<(i64, String)> = held.into_values().collect();
    got.sort();
    assert_eq!(got, truth(&app, "ann").await);
    // The last pushed cursor is the connection's end.
    let after = post_graphql(
        &router,
        "query($after: String) { notes(owner: \"ann\", first: 10, after: $after) {
           edges { node { at } } pageInfo { hasNextPage } } }",
        json!({ "after": cursors.last() }),
    )
    .await;
    assert_eq!(
        after["data"]["notes"],
        json!({ "edges": [], "pageInfo": { "hasNextPage": false } }),
        "{after}"
    );
}

/// The server's reads so far, as its metrics count them.
fn reads(app: &ModelApp) -> Vec<String> {
    app.store
        .metrics()
        .render()
        .lines()
        .filter(|line| {
            ["Query", "Scan", "GetItem", "BatchGetItem"]
                .iter()
                .any(|op| {
                    line.starts_with(&format!(
                        "dynarelay_dynamodb_calls_total{{operation=\"{op}\""
                    ))
                })
        })
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_resume_cursor_that_is_not_the_connections_or_too_far_behind_is_refused() {
    let app = model_app_from(MODEL).await;
    let router = live_router(&app);
    let table = app.table("Notes");
    put_plain(app.client(), &table, [note("bea", 1, "hers", "OPEN")]).await;
    put_plain(app.client(), &table, [note("cal", 1, "his", "OPEN")]).await;
    let (_, cals) = page(&router, "cal").await;
    for cursor in [cals.unwrap(), "bm90IGEgY3Vyc29y".to_owned(), String::new()] {
        let before = reads(&app);
        let mut events =
            subscribe(&router, RESUME, json!({ "owner": "bea", "after": cursor })).await;
        assert_eq!(
            refusal(&mut events).await,
            (
                "BAD_USER_INPUT".to_owned(),
                "The cursor is not valid for this connection.".to_owned()
            )
        );
        assert_eq!(reads(&app), before, "nothing was read for a refused cursor");
    }
    // More items after the cursor than the largest page: refused, to page on first.
    let (_, beas) = page(&router, "bea").await;
    put_plain(
        app.client(),
        &table,
        (2..=102).map(|at| note("bea", at, "later", "OPEN")),
    )
    .await;
    let mut events = subscribe(&router, RESUME, json!({ "owner": "bea", "after": beas })).await;
    let (_, data) = next_event(&mut events).await;
    assert_eq!(
        data["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{data}"
    );
    assert_eq!(
        data["errors"][0]["message"],
        "More than 100 items follow `after`: page on with `after` first, then subscribe with the \
         last cursor.",
        "{data}"
    );
}

/// One round of the race: a client pages `owner`'s notes, then resumes from its last cursor
/// while a writer adds, changes and deletes notes after that cursor; it subscribes after a
/// random delay, before, during or after the writes. Once the writer's last note arrives, the
/// client holds exactly what DynamoDB holds, and no change came twice.
async fn race(app: &ModelApp, router: &Router, rng: &mut ChaCha8Rng, round: u32) -> Misapplied {
    let owner = format!("race-{round}");
    let table = app.table("Notes");
    put_plain(
        app.client(),
        &table,
        (1..=3).map(|at| note(&owner, at, &format!("{round}: note {at}"), "OPEN")),
    )
    .await;
    let (mut held, cursor) = page(router, &owner).await;
    let count = 1 + rng.next_u32() % 9;
    let writes: Vec<(u32, u64)> = (0..count)
        .map(|_| (rng.next_u32() % 3, u64::from(rng.next_u32() % 4)))
        .collect();
    let writer = {
        let app_client = app.client().clone();
        let table = table.clone();
        let owner = owner.clone();
        async move {
            let mut written: Vec<i64> = Vec::new();
            for (n, (op, pause)) in writes.into_iter().enumerate() {
                let text = format!("{round}: write {n}");
                match (op, written.len()) {
                    (0, _) | (_, 0) => {
                        let at = 10 + n as i64;
                        written.push(at);
                        put_plain(&app_client, &table, [note(&owner, at, &text, "OPEN")]).await;
                    }
                    (1, len) => {
                        let at = written[n % len];
                        put_plain(&app_client, &table, [note(&owner, at, &text, "OPEN")]).await;
                    }
                    (_, len) => {
                        let at = written.remove(n % len);
                        app_client
                            .delete_item()
                            .table_name(&table)
                            .key("owner", AttributeValue::S(owner.clone()))
                            .key("at", AttributeValue::N(at.to_string()))
                            .send()
                            .await
                            .unwrap();
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
            }
            let last = format!("{round}: last");
            put_plain(&app_client, &table, [note(&owner, 99, &last, "OPEN")]).await;
        }
    };
    let delay = std::time::Duration::from_millis(u64::from(rng.next_u32() % 25));
    let subscriber = async {
        tokio::time::sleep(delay).await;
        subscribe(router, RESUME, json!({ "owner": owner, "after": cursor })).await
    };
    let ((), mut events) = tokio::join!(writer, subscriber);
    let mut wrong = Misapplied::default();
    apply_until(
        &mut events,
        &mut held,
        &format!("{round}: last"),
        &mut wrong,
    )
    .await;
    let mut got: Vec<(i64, String)> = held.into_values().collect();
    got.sort();
    assert_eq!(got, truth(app, &owner).await, "round {round}");
    wrong
}

#[tokio::test]
async fn writes_racing_a_resumed_subscription_are_neither_missed_nor_sent_twice() {
    let app = model_app_from(MODEL).await;
    let router = live_router(&app);
    let mut rng = ChaCha8Rng::seed_from_u64(44);
    let mut wrong = Misapplied::default();
    // The first half with the table's reader kept running by another subscriber, the second
    // with each round's subscription starting it anew.
    let mut keeper = Some(subscribe(&router, RESUME, json!({ "owner": "keeper" })).await);
    let rounds = 200;
    for round in 0..rounds {
        if round == rounds / 2 {
            keeper = None;
        }
        let round_wrong = race(&app, &router, &mut rng, round).await;
        wrong.twice.extend(round_wrong.twice);
        wrong.unknown.extend(round_wrong.unknown);
    }
    assert!(keeper.is_none());
    assert_eq!(wrong, Misapplied::default());
}

const SINCE: &str = "subscription($owner: String!, $after: String, $resumeFrom: String) {
  notesChanged(owner: $owner, after: $after, resumeFrom: $resumeFrom) {
    kind id position edge { cursor node { id at text } } } }";

/// Applies changes until the note whose text is `last` arrives; the last change's position.
async fn apply_positions_until(
    events: &mut mpsc::Receiver<Received>,
    held: &mut Held,
    last: &str,
    wrong: &mut Misapplied,
) -> String {
    loop {
        let event = next_event(events).await;
        let change = change(&event);
        let position = change["position"]
            .as_str()
            .unwrap_or_else(|| panic!("a position: {change}"))
            .to_owned();
        if apply(held, change, wrong).as_deref() == Some(last) {
            return position;
        }
    }
}

#[tokio::test]
async fn a_subscription_resumed_from_a_position_misses_nothing_before_or_after_its_cursor() {
    let app = model_app_from(MODEL).await;
    let router = live_router(&app);
    let table = app.table("Notes");
    put_plain(
        app.client(),
        &table,
        (1..=4).map(|at| note("dee", at, &format!("note {at}"), "OPEN")),
    )
    .await;
    // The client pages the first three notes and follows from its cursor.
    let first = post_graphql(
        &router,
        "{ notes(owner: \"dee\", first: 3) { edges { cursor node { id at text } } } }",
        json!({}),
    )
    .await;
    let edges = first["data"]["notes"]["edges"].as_array().unwrap().clone();
    let mut held: Held = edges.iter().map(|e| node(&e["node"])).collect();
    let cursor = edges[2]["cursor"].as_str().unwrap().to_owned();
    let mut wrong = Misapplied::default();
    let mut events = subscribe(&router, SINCE, json!({ "owner": "dee", "after": cursor })).await;
    // The note after the cursor first.
    let event = next_event(&mut events).await;
    let added = change(&event);
    assert_eq!(added["kind"], "ADDED", "{added}");
    assert!(added["position"].is_string(), "{added}");
    apply(&mut held, added, &mut wrong);
    put_plain(
        app.client(),
        &table,
        [note("dee", 2, "note 2, edited", "OPEN")],
    )
    .await;
    put_plain(app.client(), &table, [note("dee", 5, "note 5", "OPEN")]).await;
    let position = apply_positions_until(&mut events, &mut held, "note 5", &mut wrong).await;
    drop(events);

    // Away: notes before the cursor changed, removed and added, and after it one changed twice
    // and one added at the end.
    put_plain(
        app.client(),
        &table,
        [note("dee", 1, "note 1, edited", "OPEN")],
    )
    .await;
    delete(&app, remove("dee", 2)).await;
    put_plain(app.client(), &table, [note("dee", 0, "note 0", "OPEN")]).await;
    put_plain(
        app.client(),
        &table,
        [note("dee", 4, "note 4, edited", "OPEN")],
    )
    .await;
    put_plain(
        app.client(),
        &table,
        [note("dee", 3, "note 3, done", "DONE")],
    )
    .await;
    put_plain(
        app.client(),
        &table,
        [note("dee", 4, "note 4, again", "OPEN")],
    )
    .await;
    put_plain(app.client(), &table, [note("dee", 6, "away", "OPEN")]).await;
    // Another owner's notes are none of this client's.
    put_plain(app.client(), &table, [note("eve", 1, "hers", "OPEN")]).await;

    let mut events = subscribe(
        &router,
        SINCE,
        json!({ "owner": "dee", "after": cursor, "resumeFrom": position }),
    )
    .await;
    apply_positions_until(&mut events, &mut held, "away", &mut wrong).await;
    put_plain(app.client(), &table, [note("dee", 7, "back", "OPEN")]).await;
    let position = apply_positions_until(&mut events, &mut held, "back", &mut wrong).await;
    assert_eq!(wrong, Misapplied::default());
    let mut got: Vec<(i64, String)> = held.clone().into_values().collect();
    got.sort();
    assert_eq!(got, truth(&app, "dee").await);
    drop(events);

    // Resumed again from the last position with nothing new: nothing is sent until the next
    // write, which comes once.
    let mut events = subscribe(
        &router,
        SINCE,
        json!({ "owner": "dee", "resumeFrom": position }),
    )
    .await;
    put_plain(app.client(), &table, [note("dee", 8, "again", "OPEN")]).await;
    let event = next_event(&mut events).await;
    let next = change(&event);
    assert_eq!(next["edge"]["node"]["text"], "again", "{next}");
    assert_eq!(next["kind"], "ADDED", "{next}");
}

/// Subscribes with `variables` and asserts that the position in them is refused as not this
/// subscription's, before anything is read.
async fn refused_before_any_read(app: &ModelApp, router: &Router, query: &str, variables: Value) {
    let before = reads(app);
    let mut events = subscribe(router, query, variables).await;
    assert_eq!(
        refusal(&mut events).await,
        (
            "BAD_USER_INPUT".to_owned(),
            "`resumeFrom` is not a position of this subscription's changes.".to_owned()
        )
    );
    assert_eq!(
        reads(app),
        before,
        "nothing was read for a refused position"
    );
}

#[tokio::test]
async fn a_position_that_is_not_the_connections_or_that_the_stream_no_longer_holds_is_refused() {
    let app = model_app_from(MODEL).await;
    let router = live_router(&app);
    let table = app.table("Notes");
    let mut events = subscribe(&router, SINCE, json!({ "owner": "fay" })).await;
    let event = first_change(&app, &mut events, "fay").await;
    let position = change(&event)["position"].as_str().unwrap().to_owned();
    // Another owner's connection, a cursor, or anything else: refused before any read.
    let (_, cursor) = page(&router, "fay").await;
    for (owner, since) in [
        ("gus", position.clone()),
        ("fay", cursor.unwrap()),
        ("fay", "bm90IGEgcG9zaXRpb24".to_owned()),
    ] {
        refused_before_any_read(
            &app,
            &router,
            SINCE,
            json!({ "owner": owner, "resumeFrom": since }),
        )
        .await;
    }
    // The table's stream replaced: its changes since the position are not kept anywhere.
    let control = control_client();
    set_stream(&control, &table, None).await;
    set_stream(
        &control,
        &table,
        Some(aws_sdk_dynamodb::types::StreamViewType::NewAndOldImages),
    )
    .await;
    // The running subscription ends: writes between the two streams were never recorded.
    let (_, ended) = next_event(&mut events).await;
    assert_eq!(
        ended["errors"][0]["extensions"]["code"], "CHANGES_LOST",
        "{ended}"
    );
    let mut events = subscribe(
        &router,
        SINCE,
        json!({ "owner": "fay", "resumeFrom": position }),
    )
    .await;
    // DynamoDB Local's new stream places a reader once it is written (see `follow`): another
    // owner's notes are written until the subscription answers.
    let writes = async {
        for n in 0.. {
            put_plain(app.client(), &table, [note("hal", n, "warm-up", "OPEN")]).await;
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    };
    let (code, message) = tokio::select! {
        refused = refusal(&mut events) => refused,
        () = writes => unreachable!("the writes go on"),
    };
    assert_eq!(code, "POSITION_EXPIRED", "{message}");
    assert!(message.contains("read the connection again"), "{message}");
}

#[tokio::test]
async fn a_position_resumes_after_the_tables_reader_stopped_and_started_again() {
    resume_after_the_reader_restarted(None).await;
}

#[tokio::test]
async fn a_position_resumes_after_the_reader_restarted_when_reads_answer_empty() {
    resume_after_the_reader_restarted(Some(Empty::SameIterator(2))).await;
    resume_after_the_reader_restarted(Some(Empty::NewIterator(3))).await;
}

/// A client away while the table's reader stopped and started again (taking its place anew, at
/// `LATEST`) resumes from its last position: it gets every change it missed once, the stream
/// read through `empty` answers of the fault proxy's when given.
async fn resume_after_the_reader_restarted(empty: Option<Empty>) {
    let app = model_app_from(MODEL).await;
    let proxy = FaultProxy::start(&endpoint()).await;
    proxy.empty_answers(empty);
    let router = live_router_streams_at(&app, &proxy.url());
    let table = app.table("Notes");
    let mut events = subscribe(&router, SINCE, json!({ "owner": "ivy" })).await;
    let event = first_change(&app, &mut events, "ivy").await;
    let mut held = Held::new();
    let mut wrong = Misapplied::default();
    // What the client holds of the note is what it was sent first.
    let first = change(&event).clone();
    let (id, value) = node(&first["edge"]["node"]);
    held.insert(id, value);
    drop(events);
    // The client is gone once the server sends it something; then nobody follows the table,
    // and the next subscriber starts a reader anew.
    put_plain(app.client(), &table, [note("ivy", 2, "two", "OPEN")]).await;
    let metrics = app.store.metrics();
    while crate::helpers::metric(&metrics.render(), "dynarelay_subscriptions ") > 0.0 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    delete(&app, remove("ivy", 1)).await;
    let position = first["position"].as_str().unwrap();
    let mut events = subscribe(
        &router,
        SINCE,
        json!({ "owner": "ivy", "resumeFrom": position }),
    )
    .await;
    let missed = apply_positions_until(&mut events, &mut held, "two", &mut wrong).await;
    assert!(!missed.is_empty());
    let event = next_event(&mut events).await;
    apply(&mut held, change(&event), &mut wrong);
    assert_eq!(wrong, Misapplied::default());
    let mut got: Vec<(i64, String)> = held.into_values().collect();
    got.sort();
    assert_eq!(got, truth(&app, "ivy").await);
    if empty.is_some() {
        assert!(proxy.empty_answers_given() > 0, "no empty answer was given");
    }
}

/// The first change `events` (following `owner`'s notes) receives, `owner`'s note 1 written
/// again and again until it comes: DynamoDB Local places a reader on a stream no one wrote to
/// yet once it is written.
async fn first_change(
    app: &ModelApp,
    events: &mut mpsc::Receiver<Received>,
    owner: &str,
) -> Received {
    let table = app.table("Notes");
    let writes = async {
        for n in 0.. {
            put_plain(
                app.client(),
                &table,
                [note(owner, 1, &format!("one {n}"), "OPEN")],
            )
            .await;
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    };
    tokio::select! {
        event = next_event(events) => event,
        () = writes => unreachable!("the writes go on"),
    }
}

/// How many `call`s the server made to the tables' streams so far.
fn stream_calls(app: &ModelApp, call: &str) -> f64 {
    crate::helpers::metric(
        &app.store.metrics().render(),
        &format!("dynarelay_stream_calls_total{{call=\"{call}\"}}"),
    )
}

/// The texts of the changes `events` receives until the note whose text is `last` arrives.
async fn texts_until(events: &mut mpsc::Receiver<Received>, last: &str) -> Vec<String> {
    let mut texts = Vec::new();
    loop {
        let event = next_event(events).await;
        let text = change(&event)["edge"]["node"]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{event:?}"))
            .to_owned();
        texts.push(text.clone());
        if text == last {
            return texts;
        }
    }
}

#[tokio::test]
async fn subscribers_resuming_at_once_share_the_streams_reads_and_each_gets_what_it_missed() {
    let app = model_app_from(MODEL).await;
    let router = live_router(&app);
    let table = app.table("Notes");
    // A subscriber that stays keeps the table's reader running: its own calls are not counted
    // below (it takes no iterator and describes no table while its shards stay open).
    let mut staying = subscribe(&router, SINCE, json!({ "owner": "kay" })).await;
    let first = first_change(&app, &mut staying, "kay").await;
    let early = change(&first)["position"].as_str().unwrap().to_owned();
    put_plain(app.client(), &table, [note("kay", 2, "two", "OPEN")]).await;
    let mut later = String::new();
    while later.is_empty() {
        let event = next_event(&mut staying).await;
        if change(&event)["edge"]["node"]["text"] == "two" {
            later = change(&event)["position"].as_str().unwrap().to_owned();
        }
    }
    // While twelve clients were away (six got as far as `early`, six as far as `later`):
    put_plain(app.client(), &table, [note("kay", 3, "three", "OPEN")]).await;
    put_plain(
        app.client(),
        &table,
        [note("kay", 2, "two, edited", "OPEN")],
    )
    .await;
    put_plain(app.client(), &table, [note("kay", 4, "away", "OPEN")]).await;
    let iterators = stream_calls(&app, "GetShardIterator");
    let tables = stream_calls(&app, "DescribeTable");
    let resumed = async_graphql::futures_util::future::join_all((0..12).map(|n| {
        let from = if n % 2 == 0 { &early } else { &later };
        subscribe(
            &router,
            SINCE,
            json!({ "owner": "kay", "resumeFrom": from }),
        )
    }))
    .await;
    for (n, mut events) in resumed.into_iter().enumerate() {
        let mut expected = vec!["three", "two, edited", "away"];
        if n % 2 == 0 {
            expected.insert(0, "two");
        }
        assert_eq!(
            texts_until(&mut events, "away").await,
            expected,
            "client {n}"
        );
    }
    // Twelve resumes, from two places: the table's stream described once, each place's run of
    // records read once (DynamoDB Local's table has one shard).
    assert_eq!(stream_calls(&app, "DescribeTable") - tables, 1.0);
    let taken = stream_calls(&app, "GetShardIterator") - iterators;
    assert!(
        (1.0..=2.0).contains(&taken),
        "{taken} iterators for 12 resumes"
    );
}

const NODE_SINCE: &str = "subscription($id: ID!, $resumeFrom: String) {
  nodeChanged(id: $id, resumeFrom: $resumeFrom) {
    kind id position node { id ... on Note { text } } } }";

/// The `nodeChanged` an event carries: kind, text (none when removed) and position.
fn node_change(event: &Received) -> (String, Option<String>, String) {
    assert_eq!(event.0, "next", "{event:?}");
    let change = &event.1["data"]["nodeChanged"];
    (
        change["kind"]
            .as_str()
            .unwrap_or_else(|| panic!("{event:?}"))
            .to_owned(),
        change["node"]["text"].as_str().map(str::to_owned),
        change["position"]
            .as_str()
            .unwrap_or_else(|| panic!("{event:?}"))
            .to_owned(),
    )
}

#[tokio::test]
async fn a_node_resumed_from_a_position_gets_each_change_it_missed_once() {
    let app = model_app_from(MODEL).await;
    let router = live_router(&app);
    let table = app.table("Notes");
    put_plain(app.client(), &table, [note("lee", 1, "first", "OPEN")]).await;
    put_plain(app.client(), &table, [note("lee", 2, "second", "OPEN")]).await;
    let page = post_graphql(
        &router,
        "{ notes(owner: \"lee\", first: 2) { edges { node { id } } } }",
        json!({}),
    )
    .await;
    let id = page["data"]["notes"]["edges"][0]["node"]["id"].clone();
    let other = page["data"]["notes"]["edges"][1]["node"]["id"].clone();
    let mut events = subscribe(&router, NODE_SINCE, json!({ "id": id })).await;
    let (_, _, position) = node_change(&first_change(&app, &mut events, "lee").await);
    drop(events);
    // Away: the node edited twice, another node edited, then the node deleted.
    put_plain(app.client(), &table, [note("lee", 1, "edited", "OPEN")]).await;
    put_plain(app.client(), &table, [note("lee", 2, "not it", "OPEN")]).await;
    put_plain(app.client(), &table, [note("lee", 1, "again", "DONE")]).await;
    delete(&app, remove("lee", 1)).await;

    let mut events = subscribe(
        &router,
        NODE_SINCE,
        json!({ "id": id, "resumeFrom": position }),
    )
    .await;
    let mut missed = Vec::new();
    for _ in 0..3 {
        let (kind, text, _) = node_change(&next_event(&mut events).await);
        missed.push((kind, text));
    }
    let text = |t: &str| Some(t.to_owned());
    assert_eq!(
        missed,
        [
            ("UPDATED".to_owned(), text("edited")),
            ("UPDATED".to_owned(), text("again")),
            ("REMOVED".to_owned(), None),
        ]
    );
    // Then live, once.
    put_plain(app.client(), &table, [note("lee", 1, "back", "OPEN")]).await;
    let (kind, text, last) = node_change(&next_event(&mut events).await);
    assert_eq!((kind.as_str(), text.as_deref()), ("ADDED", Some("back")));
    drop(events);

    // A position is the node's own: another node's subscription refuses it before any read.
    refused_before_any_read(
        &app,
        &router,
        NODE_SINCE,
        json!({ "id": other, "resumeFrom": last }),
    )
    .await;
}

const SINCE_OPEN_NEWEST: &str =
    "subscription($owner: String!, $after: String, $resumeFrom: String) {
  notesChanged(owner: $owner, state: OPEN, order: DESC, after: $after, resumeFrom: $resumeFrom) {
    kind id position edge { cursor node { id at text } } } }";

#[tokio::test]
async fn a_newest_first_filtered_connection_resumed_from_a_position_ends_as_dynamodb_holds_it() {
    let app = model_app_from(MODEL).await;
    let router = live_router(&app);
    let table = app.table("Notes");
    put_plain(
        app.client(),
        &table,
        (1..=6).map(|at| note("max", at, &format!("note {at}"), "OPEN")),
    )
    .await;
    put_plain(app.client(), &table, [note("max", 7, "note 7", "DONE")]).await;
    // The client pages the open notes newest first (6, 5, 4) and follows from its cursor: the
    // older ones (3, 2, 1) come first.
    let first = post_graphql(
        &router,
        "{ notes(owner: \"max\", state: OPEN, order: DESC, first: 3) {
             edges { cursor node { id at text } } } }",
        json!({}),
    )
    .await;
    let edges = first["data"]["notes"]["edges"].as_array().unwrap().clone();
    let mut held: Held = edges.iter().map(|e| node(&e["node"])).collect();
    assert_eq!(held.len(), 3, "{first}");
    let cursor = edges[2]["cursor"].as_str().unwrap().to_owned();
    let mut wrong = Misapplied::default();
    let mut events = subscribe(
        &router,
        SINCE_OPEN_NEWEST,
        json!({ "owner": "max", "after": cursor }),
    )
    .await;
    apply_positions_until(&mut events, &mut held, "note 1", &mut wrong).await;
    put_plain(app.client(), &table, [note("max", 8, "note 8", "OPEN")]).await;
    let position = apply_positions_until(&mut events, &mut held, "note 8", &mut wrong).await;
    drop(events);

    // Away: before the cursor (newer notes) one edited, one closed, one reopened, one added;
    // after it one edited and one removed.
    for (at, text, state) in [
        (6, "note 6, edited", "OPEN"),
        (5, "note 5, done", "DONE"),
        (7, "note 7, reopened", "OPEN"),
        (2, "note 2, edited", "OPEN"),
    ] {
        put_plain(app.client(), &table, [note("max", at, text, state)]).await;
    }
    delete(&app, remove("max", 3)).await;
    put_plain(app.client(), &table, [note("max", 9, "away", "OPEN")]).await;

    let mut events = subscribe(
        &router,
        SINCE_OPEN_NEWEST,
        json!({ "owner": "max", "after": cursor, "resumeFrom": position }),
    )
    .await;
    apply_positions_until(&mut events, &mut held, "away", &mut wrong).await;
    assert_eq!(wrong, Misapplied::default());
    let mut got: Vec<(i64, String)> = held.into_values().collect();
    got.sort();
    assert_eq!(got, truth_in(&app, "max", Some("OPEN")).await);
}
