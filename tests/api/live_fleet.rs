//! Live data across a fleet as the deploying guide lays it out, every part a real process: three
//! `dynarelay serve` instances reading changes from a real `redis-server`, behind the round-robin
//! balancer of the rolling rotation test; two change relays (`dynarelay relay`) sharing the
//! table's stream by their leases; DynamoDB Local's stream. Six clients, two per owner, follow
//! their owner's notes over GraphQL over WebSocket through the balancer (so spread over the
//! instances) as an application does: each holds the connection it paged, applies every change,
//! and when its subscription ends (an instance stopping, or `CHANGES_LOST`) connects again,
//! through the balancer, resuming from the `position` of the last change it received (and the
//! cursor of the last edge it holds), as the live-data guide says.
//!
//! While the notes are written, one fault after another: the relay holding the lease killed;
//! both relays gone, then started again; Redis restarted with nothing it held; an instance
//! restarted; during the last two, notes before the clients' cursors change too. After each,
//! every client holds exactly its owner's notes as written, and over the
//! whole run each client received each version of each note at most once, in the order written
//! (and no note of another owner). Waits end on what the clients hold, never on time.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use async_graphql::futures_util::{SinkExt, StreamExt};
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Value, json};
use tokio::{
    sync::{mpsc, watch},
    task::JoinHandle,
};
use tokio_tungstenite::tungstenite::Message;

use crate::{
    helpers::{
        Instances, ModelApp, RedisServer, Relay, RoundRobin, graphql_at, model_app_from,
        model_file, open_socket, put_plain, serve_from_redis, stop,
    },
    subscriptions::{MODEL, note},
};

const OWNERS: [&str; 3] = ["alice", "bob", "carol"];
const CLIENTS_PER_OWNER: usize = 2;
const INSTANCES: usize = 3;
/// Longest wait for the clients to hold what was written: far beyond what the fleet takes, so
/// that a slow machine never fails the test; a change never delivered still fails it.
const WAIT: Duration = Duration::from_secs(120);

const FOLLOW: &str = "subscription($owner: String!, $after: String, $resumeFrom: String) {
  notesChanged(owner: $owner, after: $after, resumeFrom: $resumeFrom) {
    kind id position edge { cursor node { id owner at text } } } }";

/// What a client's socket told it.
#[derive(Debug)]
enum Seen {
    /// A change: its kind, the node's id, and the node (none when removed).
    Change(String, String, Option<Value>),
    /// The subscription ended, and why: the client connects again.
    Ended(String),
}

/// A client following `owner`'s notes through the balancer at `url`, from `cursor` on, for
/// good: what it sees goes to `seen`.
async fn follow(
    url: String,
    owner: &'static str,
    mut cursor: String,
    seen: mpsc::UnboundedSender<Seen>,
    mut gate: watch::Receiver<bool>,
) {
    let mut last_at = i64::MIN;
    let mut position: Option<String> = None;
    loop {
        let why = session(
            &url,
            owner,
            (&mut cursor, &mut last_at, &mut position),
            &seen,
        )
        .await;
        if seen.send(Seen::Ended(why)).is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Away while the test holds the gate shut.
        if gate.wait_for(|open| *open).await.is_err() {
            return;
        }
    }
}

/// One socket's subscription, resuming after `cursor` (the last edge held, at `last_at`, both
/// moved on as edges come); why it ended.
async fn session(
    url: &str,
    owner: &str,
    (cursor, last_at, position): (&mut String, &mut i64, &mut Option<String>),
    seen: &mpsc::UnboundedSender<Seen>,
) -> String {
    let Ok(mut socket) = open_socket(url, Some("graphql-transport-ws")).await else {
        return "no connection".to_owned();
    };
    let subscribe = json!({ "id": "1", "type": "subscribe", "payload": {
        "query": FOLLOW,
        "variables": { "owner": owner, "after": cursor.as_str(), "resumeFrom": position.as_deref() } } });
    for message in [json!({ "type": "connection_init" }), subscribe] {
        if socket
            .send(Message::text(message.to_string()))
            .await
            .is_err()
        {
            return "closed".to_owned();
        }
    }
    loop {
        let text = match socket.next().await {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return "closed".to_owned(),
            Some(Ok(_)) => continue,
        };
        let message: Value = serde_json::from_str(text.as_str()).unwrap();
        match message["type"].as_str() {
            Some("next") => {
                if let Some(error) = message["payload"]["errors"].get(0) {
                    return error["extensions"]["code"]
                        .as_str()
                        .unwrap_or("error")
                        .to_owned();
                }
                let change = &message["payload"]["data"]["notesChanged"];
                if let Some(at) = change["position"].as_str() {
                    *position = Some(at.to_owned());
                }
                let node = &change["edge"]["node"];
                if let Some(at) = node["at"].as_i64()
                    && at >= *last_at
                {
                    *last_at = at;
                    *cursor = change["edge"]["cursor"].as_str().unwrap().to_owned();
                }
                let _ = seen.send(Seen::Change(
                    change["kind"].as_str().unwrap().to_owned(),
                    change["id"].as_str().unwrap().to_owned(),
                    (!node.is_null()).then(|| node.clone()),
                ));
            }
            Some("ping") => {
                let _ = socket
                    .send(Message::text(json!({ "type": "pong" }).to_string()))
                    .await;
            }
            Some("complete") => return "complete".to_owned(),
            Some("error") => return format!("error {}", message["payload"]),
            _ => {}
        }
    }
}

/// A client as the test sees it: what it holds (each note's text, by `at`), every version it
/// received of each note, and why its subscriptions ended.
struct Client {
    owner: &'static str,
    seen: mpsc::UnboundedReceiver<Seen>,
    task: JoinHandle<()>,
    held: BTreeMap<i64, String>,
    ids: BTreeMap<String, i64>,
    /// By note: each version received, in order (`u32::MAX` for its removal).
    versions: BTreeMap<i64, Vec<u32>>,
    ended: Vec<String>,
}

impl Client {
    fn apply(&mut self, seen: Seen) {
        match seen {
            Seen::Change(kind, id, Some(node)) => {
                assert_eq!(node["owner"], self.owner, "another owner's note: {node}");
                let at = node["at"].as_i64().unwrap();
                let text = node["text"].as_str().unwrap().to_owned();
                assert!(kind == "ADDED" || kind == "UPDATED", "{kind} {node}");
                self.versions.entry(at).or_default().push(version(&text));
                self.held.insert(at, text);
                self.ids.insert(id, at);
            }
            Seen::Change(kind, id, None) => {
                assert_eq!(kind, "REMOVED");
                let at = self.ids[&id];
                self.held.remove(&at);
                self.versions.entry(at).or_default().push(u32::MAX);
            }
            Seen::Ended(why) => self.ended.push(why),
        }
    }

    /// Waits until its subscription ended `times` times in all.
    async fn until_ended(&mut self, times: usize, step: &str) {
        let deadline = Instant::now() + WAIT;
        while self.ended.len() < times {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.seen.recv()).await {
                Ok(Some(seen)) => self.apply(seen),
                _ => panic!("{step}: {}'s client's subscription did not end", self.owner),
            }
        }
    }

    /// Waits until it holds `want`.
    async fn until_holding(&mut self, want: &BTreeMap<i64, String>, step: &str) {
        let deadline = Instant::now() + WAIT;
        while &self.held != want {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.seen.recv()).await {
                Ok(Some(seen)) => self.apply(seen),
                _ => panic!(
                    "{step}: {}'s client holds {:?}, not {want:?} (its subscriptions ended: {:?})",
                    self.owner, self.held, self.ended
                ),
            }
        }
    }

    /// Each note's versions came once each, in the order written, a removal last.
    fn check_order(&self) {
        for (at, versions) in &self.versions {
            assert!(
                versions.windows(2).all(|w| w[0] < w[1]),
                "{}'s note {at}: versions received {versions:?}",
                self.owner
            );
        }
    }
}

/// A note's text: `<at>.<version>`.
fn text(at: i64, version: u32) -> String {
    format!("{at}.{version}")
}

fn version(text: &str) -> u32 {
    text.split('.').nth(1).unwrap().parse().unwrap()
}

/// The notes as written, by owner: what each client must end up holding.
struct Notes<'a> {
    app: &'a ModelApp,
    table: String,
    written: BTreeMap<&'static str, BTreeMap<i64, String>>,
}

impl Notes<'_> {
    /// Writes the next version of every owner's note `at` (its first when new).
    async fn put(&mut self, at: i64) {
        for owner in OWNERS {
            let notes = self.written.entry(owner).or_default();
            let next = notes.get(&at).map_or(1, |t| version(t) + 1);
            let text = text(at, next);
            put_plain(
                self.app.client(),
                &self.table,
                [note(owner, at, &text, "OPEN")],
            )
            .await;
            notes.insert(at, text);
        }
    }

    async fn remove(&mut self, at: i64) {
        for owner in OWNERS {
            self.app
                .client()
                .delete_item()
                .table_name(&self.table)
                .key("owner", AttributeValue::S(owner.to_owned()))
                .key("at", AttributeValue::N(at.to_string()))
                .send()
                .await
                .unwrap();
            self.written.get_mut(owner).unwrap().remove(&at);
        }
    }

    /// Waits until every client holds its owner's notes as written.
    /// Waits until the table's Redis stream holds the removal of the last owner's note at
    /// `at`, the last write: a relay publishes a shard's changes in order, so every write
    /// before it is there too, for the instances to read.
    async fn published(&self, redis: &str, at: i64) {
        let key = format!("dynarelay:changes:{}", self.table);
        let mut connection = redis::Client::open(redis)
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let removal =
            json!({ "owner": { "S": OWNERS[OWNERS.len() - 1] }, "at": { "N": at.to_string() } });
        let deadline = Instant::now() + WAIT;
        loop {
            let entries: redis::streams::StreamRangeReply =
                redis::AsyncCommands::xrange_all(&mut connection, &key)
                    .await
                    .unwrap();
            let found = entries.ids.iter().any(|entry| {
                let keys: Option<String> = entry.get("keys");
                let new: Option<String> = entry.get("new");
                new.is_none()
                    && keys.is_some_and(|k| {
                        serde_json::from_str::<Value>(&k).ok() == Some(removal.clone())
                    })
            });
            if found {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the last write was never published"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn delivered(&self, clients: &mut [Client], step: &str) {
        for client in clients {
            client
                .until_holding(&self.written[client.owner], step)
                .await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_delivers_every_change_once_in_order_through_its_faults() {
    let mut redis = RedisServer::start();
    let app = model_app_from(MODEL).await;
    let model = model_file(MODEL);
    let table = app.table("Notes");
    let mut relays = vec![
        Relay::start(&app, MODEL, &redis.url()),
        Relay::start(&app, MODEL, &redis.url()),
    ];
    let mut instances = Instances(
        (0..INSTANCES)
            .map(|_| serve_from_redis(&app.prefix, &model, &redis.url()))
            .collect(),
    );
    let balancer = RoundRobin::start(instances.0.iter().map(|(_, addr)| *addr).collect());
    let url = balancer.url("/graphql");

    // Each owner's first note, paged by each client: its cursor is where the client follows from.
    let mut notes = Notes {
        app: &app,
        table: table.clone(),
        written: BTreeMap::new(),
    };
    notes.put(0).await;
    let http = reqwest::Client::new();
    let mut clients = Vec::new();
    // Open: clients reconnect at once; shut: they stay away until it opens.
    let (gate, gate_seen) = watch::channel(true);
    for owner in OWNERS {
        for _ in 0..CLIENTS_PER_OWNER {
            let page = graphql_at(
                &http,
                &url,
                "query($owner: String!) { notes(owner: $owner, first: 1) { edges { cursor node { at text } } } }",
                json!({ "owner": owner }),
            )
            .await;
            let edge = &page["data"]["notes"]["edges"][0];
            assert_eq!(edge["node"]["text"], "0.1", "{page}");
            let (sender, seen) = mpsc::unbounded_channel();
            let cursor = edge["cursor"].as_str().unwrap().to_owned();
            clients.push(Client {
                owner,
                seen,
                task: tokio::spawn(follow(
                    url.clone(),
                    owner,
                    cursor,
                    sender,
                    gate_seen.clone(),
                )),
                held: BTreeMap::from([(0, "0.1".to_owned())]),
                ids: BTreeMap::new(),
                versions: BTreeMap::new(),
                ended: Vec::new(),
            });
        }
    }

    // Notes added, changed and removed while every part runs.
    for at in 1..=5 {
        notes.put(at).await;
    }
    for at in [1, 2, 3, 1] {
        notes.put(at).await;
    }
    notes.remove(2).await;
    notes.delivered(&mut clients, "all running").await;

    // The relay holding the lease killed: the other takes it over and reads on from the
    // checkpoint.
    let holder = if relays[0].leases(&table).await == 1.0 {
        0
    } else {
        1
    };
    assert_eq!(relays[1 - holder].leases(&table).await, 0.0);
    drop(relays.remove(holder));
    for at in 6..=8 {
        notes.put(at).await;
    }
    notes.put(4).await;
    notes.remove(5).await;
    notes.delivered(&mut clients, "a relay killed").await;

    // Both relays gone while notes are written; two started again read on from the checkpoint.
    relays.clear();
    for at in 9..=11 {
        notes.put(at).await;
    }
    notes.put(6).await;
    relays.push(Relay::start(&app, MODEL, &redis.url()));
    relays.push(Relay::start(&app, MODEL, &redis.url()));
    notes.delivered(&mut clients, "both relays restarted").await;

    // Redis restarted with nothing it held: every subscription ends with `CHANGES_LOST`, and
    // the clients stay away while notes are written, before their cursors too, until the
    // relays published them all (so an instance takes no resumed subscription's place before
    // them); then each resumes from its last position, and what was written meanwhile is read
    // from the table's stream. (Resuming from the cursor alone misses the changes before it:
    // the control.)
    let ended_before: Vec<usize> = clients.iter().map(|c| c.ended.len()).collect();
    gate.send_replace(false);
    redis.restart();
    for (client, before) in clients.iter_mut().zip(&ended_before) {
        client.until_ended(before + 1, "Redis restarted").await;
    }
    for at in 12..=14 {
        notes.put(at).await;
    }
    notes.put(1).await;
    notes.remove(3).await;
    notes.published(&redis.url(), 3).await;
    gate.send_replace(true);
    notes.delivered(&mut clients, "Redis restarted").await;
    for (client, before) in clients.iter().zip(&ended_before) {
        assert!(
            client.ended[*before..]
                .iter()
                .any(|why| why == "CHANGES_LOST"),
            "{}'s client: {:?}",
            client.owner,
            client.ended
        );
    }

    // An instance restarted as a rolling deploy does: its clients connect again through the
    // balancer, to the others, and resume from their last cursor.
    let ended_before: usize = clients.iter().map(|c| c.ended.len()).sum();
    // The stopped instance's clients are away while notes are written, before their cursors
    // too, until the relays published them all.
    gate.send_replace(false);
    assert_eq!(stop(&mut instances.0[0].0).code(), Some(0));
    balancer.take_out(0).await;
    for at in 15..=17 {
        notes.put(at).await;
    }
    notes.put(4).await;
    notes.remove(6).await;
    notes.published(&redis.url(), 6).await;
    gate.send_replace(true);
    let restarted = serve_from_redis(&app.prefix, &model, &redis.url());
    balancer.put_in(0, restarted.1);
    instances.0[0] = restarted;
    for at in 18..=19 {
        notes.put(at).await;
    }
    notes.delivered(&mut clients, "an instance restarted").await;
    let ended_after: usize = clients.iter().map(|c| c.ended.len()).sum();
    assert!(
        ended_after >= ended_before + CLIENTS_PER_OWNER,
        "the stopped instance's clients did not connect again"
    );

    for client in &clients {
        client.check_order();
        client.task.abort();
    }
    for (child, _) in &mut instances.0 {
        assert_eq!(stop(child).code(), Some(0));
    }
}
