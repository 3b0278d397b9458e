//! Subscriptions under the rules (attack 10): each change is judged on its old and its new
//! image against the connection and the caller's rules, so a document that changes hands leaves
//! its old owner's subscription as a bare `REMOVED` (never with its new content) and enters the
//! new owner's; an admin follows every change; another owner's documents, or the admins'
//! connection, are refused before any read. A resume point that is forged, or another caller's
//! cursor replayed, is refused before any read, and counted.

use std::sync::OnceLock;

use aws_sdk_dynamodb::types::AttributeValue::S;
use dynarelay::{dynamo::Item, model::Model};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Served, with_auth};
use crate::{
    helpers::{
        ModelApp, Received, TestIssuer, auth_live_router, auth_model_app, metric_sum, model_claims,
        next_event, received_within, refusal, subscribe_as, warm_up,
    },
    tools::changes::{kinds, until},
};

/// Documents with an owner that is not part of the key, so that a document can change hands.
const DOCS: &str = r#"
[tables.Docs]
partition_key = "docId"
attributes = { docId = "S", ownerId = "S" }
stream = "NEW_AND_OLD_IMAGES"

[tables.Docs.indexes.byOwner]
partition_key = "ownerId"
sort_key = "docId"

[entities.Doc]
table = "Docs"
description = "A document: its owner and admins see it."
allow = [{ owner = "ownerId" }, { groups = ["admin"] }]

[entities.Doc.fields]
docId = { type = "ID!", description = "The document's id." }
ownerId = { type = "String!", description = "Whose it is." }
title = { type = "String!", description = "Its title." }

[connections.docs]
entity = "Doc"
index = "byOwner"
partition = { argument = "owner", description = "Whose documents: the caller's own, unless they are an admin." }
description = "One owner's documents."
subscription = { name = "docsChanged", description = "One owner's documents, as they change." }

[connections.allDocs]
entity = "Doc"
scan = true
allow = [{ groups = ["admin"] }]
description = "Every document (admins only)."
subscription = { name = "allDocsChanged", description = "Every document, as it changes (admins only)." }
"#;

fn docs() -> &'static Model {
    static MODEL: OnceLock<&'static Model> = OnceLock::new();
    MODEL.get_or_init(|| with_auth("docs", DOCS))
}

fn doc(id: &str, owner: &str, title: &str) -> Item {
    Item::from([
        ("docId".to_owned(), S(id.to_owned())),
        ("ownerId".to_owned(), S(owner.to_owned())),
        ("title".to_owned(), S(title.to_owned())),
    ])
}

const FOLLOW: &str = "subscription($owner: String!, $after: String) {
  docsChanged(owner: $owner, after: $after) {
    kind removedId edge { cursor node { docId ownerId title } } } }";
const FIELD: &str = "docsChanged";
const FOLLOW_ALL: &str = "subscription {
  allDocsChanged { kind removedId edge { cursor node { docId ownerId title } } } }";
const FIELD_ALL: &str = "allDocsChanged";

struct Docs {
    issuer: TestIssuer,
    app: ModelApp,
    served: Served,
    router: axum::Router,
}

impl Docs {
    async fn start() -> Self {
        let issuer = TestIssuer::start().await;
        let (app, log) = auth_model_app(docs(), &issuer).await;
        let served = Served::of(&app, &log);
        let router = auth_live_router(&app, &issuer).await;
        Self {
            issuer,
            app,
            served,
            router,
        }
    }

    fn token(&self, sub: &str, groups: &[&str]) -> String {
        self.issuer.mint(&model_claims(docs(), sub, groups))
    }

    /// Writes a document behind the server's back, as any program would.
    async fn put(&self, item: Item) {
        self.app
            .client()
            .put_item()
            .table_name(self.app.table("Docs"))
            .set_item(Some(item))
            .send()
            .await
            .unwrap();
    }

    /// A subscription of `token`'s caller to `owner`'s documents (or, without an owner, to
    /// every document), placed in the stream by warm-up documents of `warm` (ids
    /// `<tag><round>`), then followed to a fence document `<tag>-fence`.
    async fn follow(
        &self,
        token: &str,
        owner: Option<&str>,
        warm: &str,
        tag: &str,
    ) -> mpsc::Receiver<Received> {
        let (query, variables, field) = match owner {
            Some(owner) => (FOLLOW, json!({ "owner": owner }), FIELD),
            None => (FOLLOW_ALL, json!({}), FIELD_ALL),
        };
        let mut events = subscribe_as(&self.router, Some(token), query, variables).await;
        warm_up(
            async |round| {
                self.put(doc(&format!("{tag}{round}"), warm, "warm-up"))
                    .await
            },
            async |wait| received_within(&mut events, wait).await,
        )
        .await;
        let fence = format!("{tag}-fence");
        self.put(doc(&fence, warm, "fence")).await;
        until(&mut events, field, "docId", &fence).await;
        events
    }
}

/// Every event of `events` (of `docsChanged`) up to the change of document `last`, as received.
async fn up_to(events: &mut mpsc::Receiver<Received>, last: &str) -> Vec<Value> {
    let mut got = Vec::new();
    loop {
        let event = next_event(events).await;
        assert_eq!(event.0, "next", "{event:?}");
        let done = event.1["data"][FIELD]["edge"]["node"]["docId"] == last;
        got.push(event.1);
        if done {
            return got;
        }
    }
}

/// The kinds and document ids of `events`, a `REMOVED` by the id it names.
fn changes(events: &[Value], docs: &Docs) -> Vec<(String, String)> {
    events
        .iter()
        .map(|event| {
            let change = &event["data"][FIELD];
            let kind = change["kind"].as_str().unwrap().to_owned();
            let id = match change["edge"]["node"]["docId"].as_str() {
                Some(id) => id.to_owned(),
                None => docs.doc_of(change["removedId"].as_str().unwrap()),
            };
            (kind, id)
        })
        .collect()
}

/// The events' readable content, as JSON text: without cursors and ids, whose opaque text may
/// hold any word by chance.
fn readable(events: &[Value]) -> String {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.retain(|key, _| key != "cursor" && key != "removedId" && key != "id");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut events = events.to_vec();
    events.iter_mut().for_each(strip);
    serde_json::to_string(&events).unwrap()
}

impl Docs {
    /// The document id a global id names.
    fn doc_of(&self, id: &str) -> String {
        for candidate in ["d1", "d2", "a3", "b3"] {
            if super::gid(docs(), "Doc", &doc(candidate, "-", "-")) == id {
                return candidate.to_owned();
            }
        }
        panic!("no document of this test has id {id}");
    }
}

/// 10a. Documents that change hands, followed by their old owner, their new owner and an admin:
/// the old owner gets a bare `REMOVED` and never the new content, the new owner an `ADDED`, the
/// admin every change as `UPDATED`; nobody gets a document that was never theirs. Another
/// owner's documents, or every document, are refused to a caller who is not an admin, with the
/// code a query of them gets, before anything is read.
#[tokio::test]
async fn rules_a_document_that_changes_hands_leaves_one_subscription_and_enters_the_other() {
    let docs = Docs::start().await;
    let alice = docs.token("alice", &[]);
    let bob = docs.token("bob", &[]);
    let admin = docs.token("root", &["admin"]);
    for (query, variables, page) in [
        (
            FOLLOW,
            json!({ "owner": "bob" }),
            "{ docs(owner: \"bob\", first: 1) { edges { cursor } } }",
        ),
        (
            FOLLOW_ALL,
            json!({}),
            "{ allDocs(first: 1) { edges { cursor } } }",
        ),
    ] {
        let queried = docs.served.ask(Some(&alice), page, json!({})).await;
        let code = queried.body["errors"][0]["extensions"]["code"].clone();
        assert!(code.is_string(), "{:?}", queried.body);
        let before = docs.served.calls();
        let mut refused = subscribe_as(&docs.router, Some(&alice), query, variables).await;
        assert_eq!(Some(refusal(&mut refused).await.0.as_str()), code.as_str());
        assert_eq!(docs.served.calls(), before, "read nothing");
    }

    let mut alices = docs.follow(&alice, Some("alice"), "alice", "warm-a").await;
    let mut bobs = docs.follow(&bob, Some("bob"), "bob", "warm-b").await;
    let mut admins = docs.follow(&admin, None, "carol", "warm-c").await;
    // The later subscriptions' warm-ups have passed the earlier ones: fenced again.
    docs.put(doc("fence-a", "alice", "fence")).await;
    docs.put(doc("fence-b", "bob", "fence")).await;
    until(&mut alices, FIELD, "docId", "fence-a").await;
    until(&mut bobs, FIELD, "docId", "fence-b").await;
    until(&mut admins, FIELD_ALL, "docId", "fence-b").await;

    docs.put(doc("d1", "bob", "bob's secret plan")).await;
    docs.put(doc("d2", "alice", "alice's draft")).await;
    docs.put(doc("d2", "bob", "bob's secret draft")).await; // alice's, now bob's
    docs.put(doc("d1", "alice", "alice's plan now")).await; // bob's, now alice's
    docs.put(doc("a3", "alice", "alice's last")).await;
    docs.put(doc("b3", "bob", "bob's last")).await;

    let seen_by_alice = up_to(&mut alices, "a3").await;
    assert_eq!(
        changes(&seen_by_alice, &docs),
        [
            ("ADDED".to_owned(), "d2".to_owned()),
            ("REMOVED".to_owned(), "d2".to_owned()),
            ("ADDED".to_owned(), "d1".to_owned()),
            ("ADDED".to_owned(), "a3".to_owned()),
        ]
    );
    let text = readable(&seen_by_alice);
    assert!(!text.contains("bob"), "bob's content reached alice: {text}");
    let seen_by_bob = up_to(&mut bobs, "b3").await;
    assert_eq!(
        changes(&seen_by_bob, &docs),
        [
            ("ADDED".to_owned(), "d1".to_owned()),
            ("ADDED".to_owned(), "d2".to_owned()),
            ("REMOVED".to_owned(), "d1".to_owned()),
            ("ADDED".to_owned(), "b3".to_owned()),
        ]
    );
    let text = readable(&seen_by_bob);
    assert!(
        !text.contains("alice"),
        "alice's content reached bob: {text}"
    );
    assert_eq!(
        kinds(&until(&mut admins, FIELD_ALL, "docId", "b3").await),
        [
            ("ADDED", Some("d1")),
            ("ADDED", Some("d2")),
            ("UPDATED", Some("d2")),
            ("UPDATED", Some("d1")),
            ("ADDED", Some("a3")),
            ("ADDED", Some("b3")),
        ]
    );
}

/// 10b. A resume point that is not the caller's: a cursor with one character changed, and one
/// that bob was given, replayed by alice. Both are refused with `BAD_USER_INPUT` before any
/// read of the table, and counted as rejected cursors; alice's own cursor resumes with her
/// documents only.
#[tokio::test]
async fn rules_a_forged_or_replayed_resume_cursor_is_refused_before_any_read() {
    let docs = Docs::start().await;
    let alice = docs.token("alice", &[]);
    let bob = docs.token("bob", &[]);
    docs.put(doc("a1", "alice", "alice's first")).await;
    docs.put(doc("b1", "bob", "bob's first")).await;
    let page = "query($owner: String!) { docs(owner: $owner, first: 10) { edges { cursor node { docId } } } }";
    let cursor_of = async |token: &str, owner: &str| {
        let seen = docs
            .served
            .ask(Some(token), page, json!({ "owner": owner }))
            .await;
        let edges = seen.ok("a page")["docs"]["edges"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(edges.len(), 1, "{edges:?}");
        edges[0]["cursor"].as_str().unwrap().to_owned()
    };
    let alices = cursor_of(&alice, "alice").await;
    let bobs = cursor_of(&bob, "bob").await;
    let mut forged = alices.clone().into_bytes();
    let at = forged.len() / 2;
    forged[at] = if forged[at] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();

    let rejections = "dynarelay_cursor_rejections_total";
    for (label, cursor) in [("forged", &forged), ("bob's, replayed", &bobs)] {
        let before = docs.served.calls();
        let rejected = metric_sum(&docs.app.store.metrics().render(), rejections);
        let variables = json!({ "owner": "alice", "after": cursor });
        let mut events = subscribe_as(&docs.router, Some(&alice), FOLLOW, variables).await;
        let (code, _) = refusal(&mut events).await;
        assert_eq!(code, "BAD_USER_INPUT", "{label}");
        assert_eq!(docs.served.calls(), before, "{label}: read nothing");
        assert!(
            metric_sum(&docs.app.store.metrics().render(), rejections) > rejected,
            "{label}: counted"
        );
    }

    // Her own cursor is hers: accepted, and she gets her changes, none of bob's.
    let variables = json!({ "owner": "alice", "after": alices });
    let mut events = subscribe_as(&docs.router, Some(&alice), FOLLOW, variables).await;
    warm_up(
        async |round| {
            docs.put(doc(&format!("a-warm{round}"), "alice", "warm-up"))
                .await
        },
        async |wait| received_within(&mut events, wait).await,
    )
    .await;
    docs.put(doc("b2", "bob", "bob's second")).await;
    docs.put(doc("a2", "alice", "alice's second")).await;
    let text = readable(&up_to(&mut events, "a2").await);
    assert!(!text.contains("bob"), "{text}");
}
