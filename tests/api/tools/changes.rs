//! Following a subscription's changes in the writers' live tests: each change as its kind and
//! the key of its node, read up to a last one; and the items the API writes to place a
//! subscription in the stream and fence it.

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::helpers::{ModelApp, Received, next_event, received_within, subscribe, warm_up};

/// Subscribes with `query` and `variables`, then has `write` make a warm-up item the
/// subscription holds (a new one each round) until one arrives: the subscription is then placed
/// in the stream.
pub async fn placed(
    router: &axum::Router,
    query: &str,
    variables: Value,
    write: impl AsyncFnMut(u32),
) -> mpsc::Receiver<Received> {
    let mut events = subscribe(router, query, variables).await;
    warm_up(write, async |wait| received_within(&mut events, wait).await).await;
    events
}

/// Runs the create `mutation` (taking `$input`) with `input` through the API: a warm-up or a
/// fence item. It must succeed.
pub async fn created(app: &ModelApp, mutation: &str, input: Value) {
    let answer = app.graphql(mutation, json!({ "input": input })).await;
    assert!(answer.get("errors").is_none(), "{answer}");
}

/// A change: its kind, its node's key (none when `REMOVED`) and its edge's cursor.
pub type Changed = (String, Option<String>, Option<String>);

/// The change an event carries for subscription `field`, its node keyed by `key`.
pub fn seen(event: &Received, field: &str, key: &str) -> Changed {
    assert_eq!(event.0, "next", "{event:?}");
    let change = &event.1["data"][field];
    assert!(change.is_object(), "{event:?}");
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    };
    (
        change["kind"].as_str().unwrap().to_owned(),
        text(&change["edge"]["node"][key]),
        text(&change["edge"]["cursor"]),
    )
}

/// The changes of `field` up to (and with) the one of the node whose `key` is `last`.
pub async fn until(
    events: &mut mpsc::Receiver<Received>,
    field: &str,
    key: &str,
    last: &str,
) -> Vec<Changed> {
    let mut got = Vec::new();
    loop {
        let change = seen(&next_event(events).await, field, key);
        let done = change.1.as_deref() == Some(last);
        got.push(change);
        if done {
            return got;
        }
    }
}

/// The kinds and keys of `changes`, to compare with what a writer did.
pub fn kinds(changes: &[Changed]) -> Vec<(&str, Option<&str>)> {
    changes
        .iter()
        .map(|(kind, key, _)| (kind.as_str(), key.as_deref()))
        .collect()
}
