//! Subscriptions over server-sent events (`graphql-sse`, distinct connections mode) against
//! DynamoDB Local's streams: items written with the plain SDK (another program's writes, not
//! the server's mutations) reach a subscriber as edges of the connection it follows, judged by
//! the connection's partition and filters from the old and new images; each pushed cursor pages
//! on in the connection exactly as DynamoDB orders it; and what cannot be a subscription is
//! refused with a code.

use aws_sdk_dynamodb::types::AttributeValue;
use axum::Router;
use dynarelay::dynamo::Item;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::helpers::{
    GroundQuery, LOCAL_AWS, ModelApp, Received, Running, TestIssuer, auth_live_router, book_says,
    endpoint, graphql_with_token, live_router, model_app_from, model_claims, next_event,
    post_graphql, put_plain, query_all, received_within, refusal, run_node, subscribe,
    subscribe_as, warm_up,
};

pub const MODEL: &str = r#"version = 1

[tables.Notes]
partition_key = "owner"
sort_key = "at"
attributes = { owner = "S", at = "N" }
stream = "NEW_AND_OLD_IMAGES"

[enums.State]
values = ["OPEN", "DONE"]

[entities.Note]
table = "Notes"
fields.owner = "String!"
fields.at = "Int!"
fields.text = "String!"
fields.state = "State!"

[connections.notes]
entity = "Note"
partition = { argument = "owner" }
filters.state = { field = "state", op = "=" }
subscription = "notesChanged"
"#;

pub fn note(owner: &str, at: i64, text: &str, state: &str) -> Item {
    Item::from([
        ("owner".to_owned(), AttributeValue::S(owner.to_owned())),
        ("at".to_owned(), AttributeValue::N(at.to_string())),
        ("text".to_owned(), AttributeValue::S(text.to_owned())),
        ("state".to_owned(), AttributeValue::S(state.to_owned())),
    ])
}

const FOLLOW: &str = "subscription($owner: String!, $state: State) {
  notesChanged(owner: $owner, state: $state) {
    kind id edge { cursor node { id at text state } } } }";

/// Subscribes, then writes a warm-up note (a new text each time: a write that changes nothing
/// leaves no record) until one arrives: the reader has then reached the stream's end, and every
/// later write is delivered. The warm-up note is deleted again and its events drained, up to its
/// removal.
pub async fn follow(app: &ModelApp, router: &Router, variables: Value) -> mpsc::Receiver<Received> {
    let mut events = subscribe(router, FOLLOW, variables).await;
    let table = app.table("Notes");
    let owner = "alice";
    warm_up(
        async |round| {
            let warm = note(owner, 0, &format!("warm-up {round}"), "OPEN");
            put_plain(app.client(), &table, [warm]).await;
        },
        async |wait| received_within(&mut events, wait).await,
    )
    .await;
    app.client()
        .delete_item()
        .table_name(&table)
        .key("owner", AttributeValue::S(owner.to_owned()))
        .key("at", AttributeValue::N("0".to_owned()))
        .send()
        .await
        .unwrap();
    drain_warm_up(&mut events).await;
    events
}

/// Skips a warm-up note's events, up to its removal.
pub async fn drain_warm_up(events: &mut mpsc::Receiver<Received>) {
    loop {
        let event = next_event(events).await;
        if change(&event)["kind"] == "REMOVED" {
            return;
        }
    }
}

/// The change an event carries.
pub fn change(event: &Received) -> &Value {
    assert_eq!(event.0, "next", "{event:?}");
    &event.1["data"]["notesChanged"]
}

#[tokio::test]
async fn writes_by_any_program_reach_subscribers_as_edges_of_their_connection() {
    let app = model_app_from(MODEL).await;
    let router = live_router(&app);
    let table = app.table("Notes");
    let client = app.client();
    let mut all = follow(&app, &router, json!({ "owner": "alice" })).await;
    let mut open = follow(&app, &router, json!({ "owner": "alice", "state": "OPEN" })).await;
    // The first subscriber saw the second one's warm-up note come and go.
    drain_warm_up(&mut all).await;

    put_plain(client, &table, [note("alice", 10, "first", "OPEN")]).await;
    put_plain(client, &table, [note("bob", 11, "not alice's", "OPEN")]).await;
    put_plain(client, &table, [note("alice", 20, "second", "OPEN")]).await;
    // In place, then out of the `OPEN` filter, then deleted.
    put_plain(client, &table, [note("alice", 10, "first, edited", "OPEN")]).await;
    put_plain(client, &table, [note("alice", 10, "first, done", "DONE")]).await;
    put_plain(client, &table, [note("alice", 30, "third", "DONE")]).await;
    client
        .delete_item()
        .table_name(&table)
        .key("owner", AttributeValue::S("alice".to_owned()))
        .key("at", AttributeValue::N("20".to_owned()))
        .send()
        .await
        .unwrap();
    put_plain(client, &table, [note("alice", 40, "last", "OPEN")]).await;

    // Everything of alice's, in write order: bob's note is not in her connection.
    let expected_all = [
        ("ADDED", Some("first")),
        ("ADDED", Some("second")),
        ("UPDATED", Some("first, edited")),
        ("UPDATED", Some("first, done")),
        ("ADDED", Some("third")),
        ("REMOVED", None),
        ("ADDED", Some("last")),
    ];
    let mut cursors = Vec::new();
    for (kind, text) in expected_all {
        let event = next_event(&mut all).await;
        let change = change(&event);
        assert_eq!(change["kind"], kind, "{change}");
        assert_eq!(change["edge"]["node"]["text"].as_str(), text, "{change}");
        if let Some(cursor) = change["edge"]["cursor"].as_str() {
            assert_eq!(change["id"], change["edge"]["node"]["id"]);
            cursors.push((
                change["edge"]["node"]["at"].as_i64().unwrap(),
                cursor.to_owned(),
            ));
        }
    }
    // The `OPEN` subscriber: the note that was done left its connection; `third` never entered.
    let expected_open = [
        ("ADDED", Some("first")),
        ("ADDED", Some("second")),
        ("UPDATED", Some("first, edited")),
        ("REMOVED", None),
        ("REMOVED", None),
        ("ADDED", Some("last")),
    ];
    let mut removed = Vec::new();
    for (kind, text) in expected_open {
        let event = next_event(&mut open).await;
        let change = change(&event);
        assert_eq!(change["kind"], kind, "{change}");
        assert_eq!(change["edge"]["node"]["text"].as_str(), text, "{change}");
        if kind == "REMOVED" {
            assert_eq!(change["edge"], Value::Null);
            removed.push(change["id"].clone());
        }
    }
    // The two removals name the done note and the deleted one, by the ids pages give them.
    let page = post_graphql(
        &router,
        "{ notes(owner: \"alice\", first: 10) { edges { node { id at } } } }",
        json!({}),
    )
    .await;
    let ids: Vec<(i64, Value)> = page["data"]["notes"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["node"]["at"].as_i64().unwrap(), e["node"]["id"].clone()))
        .collect();
    assert_eq!(removed[0], ids.iter().find(|(at, _)| *at == 10).unwrap().1);
    assert!(
        !ids.iter().any(|(at, _)| *at == 20),
        "the deleted note is gone"
    );

    // Every pushed cursor pages on from its item, as DynamoDB orders the partition.
    let truth: Vec<i64> = query_all(
        client,
        &GroundQuery {
            table: &table,
            index: None,
            condition: "#k = :v",
            names: &[("#k", "owner")],
            values: &[(":v", AttributeValue::S("alice".to_owned()))],
            forward: true,
        },
    )
    .await
    .iter()
    .map(|item| match &item["at"] {
        AttributeValue::N(n) => n.parse().unwrap(),
        other => panic!("{other:?}"),
    })
    .collect();
    for (at, cursor) in &cursors {
        let page = post_graphql(
            &router,
            "query($after: String) { notes(owner: \"alice\", first: 10, after: $after) {
               edges { node { at } } } }",
            json!({ "after": cursor }),
        )
        .await;
        let got: Vec<i64> = page["data"]["notes"]["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{page}"))
            .iter()
            .map(|e| e["node"]["at"].as_i64().unwrap())
            .collect();
        let expected: Vec<i64> = truth.iter().copied().filter(|t| t > at).collect();
        assert_eq!(got, expected, "after the cursor pushed for note {at}");
    }
}

#[tokio::test]
async fn what_cannot_be_a_subscription_is_refused_with_a_code() {
    let app = model_app_from(MODEL).await;
    let router = live_router(&app);
    // Over plain JSON, a subscription is refused before anything runs.
    let answer = post_graphql(&router, FOLLOW, json!({ "owner": "alice" })).await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "SUBSCRIPTION_NEEDS_EVENT_STREAM",
        "{answer}"
    );
    // Over events, a request error is a `next` event with the errors, then `complete`.
    let mut events = subscribe(
        &router,
        "subscription { notesChanged(owner: 1) { kind } }",
        json!({}),
    )
    .await;
    let (name, data) = next_event(&mut events).await;
    assert_eq!(name, "next");
    assert!(data["errors"][0]["message"].is_string(), "{data}");
    assert_eq!(data.get("data"), None, "{data}");
    assert_eq!(next_event(&mut events).await.0, "complete");
    // A server without stream readers (as the Lambda function is) says so, as events.
    let mut events = subscribe(&app.router, FOLLOW, json!({ "owner": "alice" })).await;
    assert_eq!(refusal(&mut events).await.0, "SUBSCRIPTIONS_UNAVAILABLE");
    // A query over events: its one result, then `complete`.
    let mut events = subscribe(
        &router,
        "{ notes(owner: \"nobody\", first: 1) { edges { cursor } } }",
        json!({}),
    )
    .await;
    let (name, data) = next_event(&mut events).await;
    assert_eq!(name, "next");
    assert_eq!(data["data"]["notes"]["edges"], json!([]), "{data}");
    assert_eq!(next_event(&mut events).await.0, "complete");
}

/// Serves [`MODEL`] live on a real socket and runs the Node client `script` against it
/// (`<graphql-url> <dynamodb-endpoint> <table>`); the app, and the JSON line the script printed.
pub async fn run_notes_client(script: &str) -> (ModelApp, Value) {
    let app = model_app_from(MODEL).await;
    let server = Running::serve(live_router(&app)).await;
    let run = run_node(
        script,
        &[&server.url("/graphql"), &endpoint(), &app.table("Notes")],
        &LOCAL_AWS,
    )
    .await;
    run.assert_success();
    let printed = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("{script} printed no JSON ({e}): {}", run.stdout));
    (app, printed)
}

#[tokio::test]
async fn the_graphql_sse_client_receives_changes_as_edges() {
    let (app, got) = run_notes_client("sse-subscribe.mjs").await;
    let seen: Vec<(String, String)> = got
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_owned(),
                c["edge"]["node"]["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("ADDED".to_owned(), "one".to_owned()),
            ("ADDED".to_owned(), "two".to_owned()),
            ("UPDATED".to_owned(), "one, edited".to_owned()),
        ]
    );
    // The pushed cursor of `one` pages on to `two`.
    let page = post_graphql(
        &app.router,
        "query($after: String) { notes(owner: \"carol\", first: 5, after: $after) {
           edges { node { text } } } }",
        json!({ "after": got[0]["edge"]["cursor"] }),
    )
    .await;
    assert_eq!(
        page["data"]["notes"]["edges"],
        json!([{ "node": { "text": "two" } }]),
        "{page}"
    );
}

pub const OWNED: &str = r#"version = 1

[auth]
jwks_url = "http://127.0.0.1:9/.well-known/jwks.json"
algorithms = ["RS256"]
issuer = "https://auth.cards.example"
audience = ["cards-web"]

[tables.Owners]
partition_key = "ownerId"
attributes = { ownerId = "S" }

[tables.Cards]
partition_key = "ownerId"
sort_key = "cardId"
attributes = { ownerId = "S", cardId = "S" }
stream = "NEW_AND_OLD_IMAGES"

[entities.Owner]
table = "Owners"
allow = [{ owner = "ownerId" }]
fields.ownerId = "ID!"

[entities.Owner.connections.cards]
entity = "Card"
partition = { field = "ownerId" }
subscription = "cardsChanged"

[entities.Card]
table = "Cards"
allow = [{ owner = "ownerId" }]
fields.ownerId = "ID!"
fields.cardId = "ID!"
fields.title = "String!"

[lookups.owner]
entity = "Owner"
"#;

const CARDS: &str = "subscription($owner: ID!) {
  cardsChanged(owner: $owner) { kind edge { node { ownerId cardId title } } } }";

fn card(owner: &str, card: &str, title: &str) -> Item {
    Item::from([
        ("ownerId".to_owned(), AttributeValue::S(owner.to_owned())),
        ("cardId".to_owned(), AttributeValue::S(card.to_owned())),
        ("title".to_owned(), AttributeValue::S(title.to_owned())),
    ])
}

#[tokio::test]
async fn a_nested_subscription_names_its_parent_by_id_and_keeps_to_what_the_caller_may_see() {
    let issuer = TestIssuer::start().await;
    let app = model_app_from(OWNED).await;
    let router = auth_live_router(&app, &issuer).await;
    let (owners, cards) = (app.table("Owners"), app.table("Cards"));
    let client = app.client();
    for owner in ["alice", "bob"] {
        put_plain(
            client,
            &owners,
            [Item::from([(
                "ownerId".to_owned(),
                AttributeValue::S(owner.to_owned()),
            )])],
        )
        .await;
    }
    let token = |sub: &str| issuer.mint(&model_claims(app.model, sub, &[]));
    let (alice, bob) = (token("alice"), token("bob"));
    let id_of = async |token: &str, owner: &str| {
        let answer = graphql_with_token(
            &router,
            Some(token),
            "query($o: ID!) { owner(ownerId: $o) { id } }",
            json!({ "o": owner }),
        )
        .await;
        answer.body["data"]["owner"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{:?}", answer.body))
            .to_owned()
    };
    let (alice_id, bob_id) = (id_of(&alice, "alice").await, id_of(&bob, "bob").await);

    // Another owner's cards, or anyone's without a token: refused alike, before any change.
    for (token, owner) in [(Some(alice.as_str()), &bob_id), (None, &alice_id)] {
        let mut events = subscribe_as(&router, token, CARDS, json!({ "owner": owner })).await;
        assert_eq!(
            refusal(&mut events).await,
            (
                "BAD_USER_INPUT".to_owned(),
                "`owner` names no `Owner` you may see.".to_owned()
            )
        );
    }
    // Where a query of the parent answers an anonymous caller `null` (its rules hide it), the
    // subscription is a coded refusal that says only that the id names nothing the caller may
    // see, as the guide says.
    let anonymous = graphql_with_token(
        &router,
        None,
        "query($o: ID!) { owner(ownerId: $o) { id } }",
        json!({ "o": "alice" }),
    )
    .await;
    assert_eq!(
        anonymous.body["data"],
        json!({ "owner": null }),
        "{:?}",
        anonymous.body
    );
    book_says(
        "docs/src/guides/live-data.md",
        "is refused with `BAD_USER_INPUT` (\"`user` names no `User` you may see.\"), which says \
         nothing of whether it exists: a caller without a token gets that where a query of the \
         parent answers `null` (its rules hide the item) or `FORBIDDEN` (the lookup's own `allow` \
         refuses the caller).",
    );

    // Alice's own: warm-up cards until one comes through, then a fence card that everything
    // before it has passed once it arrives.
    let mut events = subscribe_as(&router, Some(&alice), CARDS, json!({ "owner": alice_id })).await;
    warm_up(
        async |round| {
            let warm = card("alice", &format!("warm-up {round}"), "w");
            put_plain(client, &cards, [warm]).await;
        },
        async |wait| received_within(&mut events, wait).await,
    )
    .await;
    put_plain(client, &cards, [card("alice", "fence", "fence")]).await;
    loop {
        let event = next_event(&mut events).await;
        let change = &event.1["data"]["cardsChanged"];
        if change["edge"]["node"]["cardId"] == "fence" {
            break;
        }
    }
    // Bob's card is in another partition: never sent to Alice.
    put_plain(client, &cards, [card("bob", "b1", "bob's")]).await;
    put_plain(client, &cards, [card("alice", "a1", "alice's")]).await;
    let event = next_event(&mut events).await;
    assert_eq!(
        event.1["data"]["cardsChanged"],
        json!({ "kind": "ADDED", "edge": { "node": {
            "ownerId": "alice", "cardId": "a1", "title": "alice's" } } }),
        "{event:?}"
    );
}

const NODE: &str = "subscription($id: ID!) {
  nodeChanged(id: $id) { kind id node { id ... on Note { text } } } }";

#[tokio::test]
async fn a_node_is_followed_by_its_id() {
    let app = model_app_from(MODEL).await;
    let router = live_router(&app);
    let table = app.table("Notes");
    let client = app.client();
    put_plain(client, &table, [note("fay", 1, "first", "OPEN")]).await;
    let page = post_graphql(
        &router,
        "{ notes(owner: \"fay\", first: 1) { edges { node { id } } } }",
        json!({}),
    )
    .await;
    let id = page["data"]["notes"]["edges"][0]["node"]["id"].clone();
    let mut events = subscribe(&router, NODE, json!({ "id": id })).await;
    // The node itself, edited until a change comes through, then a fence text.
    warm_up(
        async |round| {
            let warm = note("fay", 1, &format!("warm-up {round}"), "OPEN");
            put_plain(client, &table, [warm]).await;
        },
        async |wait| received_within(&mut events, wait).await,
    )
    .await;
    put_plain(client, &table, [note("fay", 1, "fence", "OPEN")]).await;
    loop {
        let (_, data) = next_event(&mut events).await;
        if data["data"]["nodeChanged"]["node"]["text"] == "fence" {
            break;
        }
    }
    // Another node of the same partition: nothing. This one edited, then deleted.
    put_plain(client, &table, [note("fay", 2, "another", "OPEN")]).await;
    put_plain(client, &table, [note("fay", 1, "edited", "DONE")]).await;
    app.client()
        .delete_item()
        .table_name(&table)
        .key("owner", AttributeValue::S("fay".to_owned()))
        .key("at", AttributeValue::N("1".to_owned()))
        .send()
        .await
        .unwrap();
    let (_, data) = next_event(&mut events).await;
    assert_eq!(
        data["data"]["nodeChanged"],
        json!({ "kind": "UPDATED", "id": id, "node": { "id": id, "text": "edited" } })
    );
    let (_, data) = next_event(&mut events).await;
    assert_eq!(
        data["data"]["nodeChanged"],
        json!({ "kind": "REMOVED", "id": id, "node": null })
    );
    // Not a node id: refused with a code.
    let mut events = subscribe(&router, NODE, json!({ "id": "nonsense" })).await;
    let (_, data) = next_event(&mut events).await;
    assert_eq!(
        data["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{data}"
    );
}

/// Notes that name a label, a relation of their own table's entity to another table's.
const LABELLED: &str = r#"version = 1

[tables.Notes]
partition_key = "owner"
sort_key = "at"
attributes = { owner = "S", at = "N" }
stream = "NEW_AND_OLD_IMAGES"

[tables.Labels]
partition_key = "label"
attributes = { label = "S" }

[entities.Label]
table = "Labels"
fields.label = "String!"
fields.color = "String!"

[entities.Note]
table = "Notes"
fields.owner = "String!"
fields.at = "Int!"
fields.text = "String!"
fields.label = "String!"

[entities.Note.relations.tag]
type = "Label"
key = ["label"]

[connections.notes]
entity = "Note"
partition = { argument = "owner" }
subscription = "notesChanged"
"#;

#[tokio::test]
async fn relations_under_a_change_are_read_when_the_change_is_sent() {
    let app = model_app_from(LABELLED).await;
    let router = live_router(&app);
    let (notes, labels) = (app.table("Notes"), app.table("Labels"));
    let client = app.client();
    let s = |text: &str| AttributeValue::S(text.to_owned());
    let labelled = |at: i64, text: &str| {
        Item::from([
            ("owner".to_owned(), s("alice")),
            ("at".to_owned(), AttributeValue::N(at.to_string())),
            ("text".to_owned(), s(text)),
            ("label".to_owned(), s("red")),
        ])
    };
    let red = |color: &str| {
        Item::from([
            ("label".to_owned(), s("red")),
            ("color".to_owned(), s(color)),
        ])
    };
    put_plain(client, &labels, [red("crimson")]).await;

    let query = "subscription { notesChanged(owner: \"alice\") {
        kind edge { node { text tag { color } } } } }";
    let mut events = subscribe(&router, query, json!({})).await;
    warm_up(
        async |round| put_plain(client, &notes, [labelled(0, &format!("warm-up {round}"))]).await,
        async |wait| received_within(&mut events, wait).await,
    )
    .await;
    client
        .delete_item()
        .table_name(&notes)
        .key("owner", s("alice"))
        .key("at", AttributeValue::N("0".to_owned()))
        .send()
        .await
        .unwrap();
    drain_warm_up(&mut events).await;

    // Each change's node is read as the tables are when it is sent: the label's new color shows
    // in every change after it, not the color the subscription first read.
    let sent = async |events: &mut mpsc::Receiver<Received>| {
        let event = next_event(events).await;
        let change = change(&event);
        let node = &change["edge"]["node"];
        (
            change["kind"].as_str().unwrap().to_owned(),
            node["text"].as_str().unwrap().to_owned(),
            node["tag"]["color"].as_str().unwrap().to_owned(),
        )
    };
    put_plain(client, &notes, [labelled(1, "one")]).await;
    assert_eq!(
        sent(&mut events).await,
        ("ADDED".into(), "one".into(), "crimson".into())
    );
    put_plain(client, &labels, [red("scarlet")]).await;
    put_plain(client, &notes, [labelled(2, "two")]).await;
    assert_eq!(
        sent(&mut events).await,
        ("ADDED".into(), "two".into(), "scarlet".into())
    );
    put_plain(client, &notes, [labelled(1, "one, again")]).await;
    assert_eq!(
        sent(&mut events).await,
        ("UPDATED".into(), "one, again".into(), "scarlet".into())
    );
}
