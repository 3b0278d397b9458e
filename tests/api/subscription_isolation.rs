//! A subscription's backlog is its own (issue #58): thousands of idle subscriptions, each held by
//! a real `graphql-ws` client on a partition of its own, are not ended by a burst of writes to
//! another partition, whose subscribers receive every change, in order per item; and a
//! subscriber on the written partition that stops reading is ended with `CHANGES_LOST` after
//! its own bound, while nobody else is.
//!
//! The per-subscriber bound (`StreamSettings::buffer`) is small, so that a server that makes
//! every subscription of a table take every change of the table, and ends the ones that fall
//! that far behind, fails these tests: the idle subscriptions are each concerned by none of the
//! changes written.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::sync::Semaphore;

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::{dynamo::Item, http::HttpSettings, stream::StreamSettings};
use serde_json::{Value, json};

use crate::{
    helpers::{
        ModelApp, NodeLines, Running, WAIT, live_router_with_streams, metric, model_app_from,
        next_event, node_lines, put_plain, received_within, subscribe_reading,
        test_stream_settings, warm_up,
    },
    subscription_limits::THINGS,
};

/// Events held for each subscriber: the bound past which one that falls behind is ended.
const BUFFER: usize = 16;
/// The partition written (the notes of this owner).
const WRITTEN: &str = "ann";
/// Subscriptions one socket may run (the server's cap).
const PER_SOCKET: usize = 100;
/// Tasks writing at once, each its own items in turn (so each item's versions in order).
const WRITERS: usize = 8;
/// Most changes of the written partition written and not yet received by its slower watcher:
/// half the bound, so that no watcher can ever hold more undelivered changes than it may (any
/// subscription ended during the burst is ended by changes that are not its own).
const WINDOW: usize = BUFFER / 2;

/// The subscriptions' running gauge and the count of those ended with `CHANGES_LOST`.
const RUNNING: &str = "dynarelay_subscriptions ";
const LOST: &str = "dynarelay_subscriptions_lost_total";

/// A note of `owner` (in the partition `USER#<owner>`).
fn note(owner: &str, id: &str, text: &str) -> Item {
    let s = |v: &str| AttributeValue::S(v.to_owned());
    Item::from([
        ("PK".to_owned(), s(&format!("USER#{owner}"))),
        ("SK".to_owned(), s(&format!("NOTE#{id}"))),
        ("_type".to_owned(), s("Note")),
        ("owner".to_owned(), s(owner)),
        ("noteId".to_owned(), s(id)),
        ("text".to_owned(), s(text)),
    ])
}

/// `app` served on a loopback socket (for the `graphql-ws` clients), with a stream reader of its
/// own that holds [`BUFFER`] events for each subscriber; also the router, for in-process
/// subscribers of the same server.
async fn served(app: &ModelApp) -> (Running, axum::Router) {
    let settings = StreamSettings {
        buffer: BUFFER,
        ..test_stream_settings()
    };
    let router = live_router_with_streams(app, HttpSettings::default(), settings);
    (Running::serve(router.clone()).await, router)
}

/// Waits until the server runs `count` subscriptions (each holds its seat once started).
async fn seated(app: &ModelApp, count: usize) {
    let started = Instant::now();
    loop {
        let running = metric(&app.store.metrics().render(), RUNNING);
        if running == count as f64 {
            return;
        }
        assert!(
            started.elapsed() < WAIT,
            "{count} subscriptions never ran ({running} do)"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Writes `items` to `table`, [`WRITERS`] at a time, each writer's items one after the other;
/// each write takes a permit of `window` first, when there is one (a closed window stops them).
async fn write_all(
    client: aws_sdk_dynamodb::Client,
    table: String,
    items: Vec<Item>,
    window: Option<Arc<Semaphore>>,
) {
    let mut lanes: Vec<Vec<Item>> = vec![Vec::new(); WRITERS];
    for (n, item) in items.into_iter().enumerate() {
        lanes[n % WRITERS].push(item);
    }
    let mut writers = tokio::task::JoinSet::new();
    for lane in lanes {
        let (client, table, window) = (client.clone(), table.clone(), window.clone());
        writers.spawn(async move {
            for item in lane {
                if let Some(window) = &window {
                    match window.acquire().await {
                        Ok(permit) => permit.forget(),
                        Err(_) => return,
                    }
                }
                put_plain(&client, &table, [item]).await;
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done.unwrap();
    }
}

/// The `graphql-ws` clients of `tests/clients/many-subscribers.mjs`, and what each of their
/// subscriptions saw: idle ones named by their owner (`idle-<socket>-<n>`), each on a partition
/// of its own, and watchers (`w<i>`) of the [`WRITTEN`] partition.
struct Clients {
    node: NodeLines,
    idle: Vec<String>,
    watchers: Vec<String>,
    /// The changes each subscription received, in order.
    received: HashMap<String, Vec<Value>>,
    /// The subscriptions that ended, with how.
    ended: BTreeMap<String, Value>,
    /// Sockets that closed.
    closed: Vec<Value>,
}

impl Clients {
    /// `sockets` sockets of [`PER_SOCKET`] idle subscriptions, and `watchers` sockets of one
    /// watcher each, to the server at `url`.
    async fn start(url: &str, sockets: usize, watchers: usize) -> Self {
        let args = [
            url.to_owned(),
            sockets.to_string(),
            PER_SOCKET.to_string(),
            watchers.to_string(),
            WRITTEN.to_owned(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut node = node_lines("many-subscribers.mjs", &args, &[]);
        let ready = node.next_within(WAIT).await.expect("the clients connect");
        assert_eq!(
            ready,
            json!({ "ready": { "idle": sockets * PER_SOCKET, "watchers": watchers } })
        );
        Self {
            node,
            idle: (0..sockets)
                .flat_map(|s| (0..PER_SOCKET).map(move |n| format!("idle-{s}-{n}")))
                .collect(),
            watchers: (0..watchers).map(|w| format!("w{w}")).collect(),
            received: HashMap::new(),
            ended: BTreeMap::new(),
            closed: Vec::new(),
        }
    }

    fn take(&mut self, line: Value) {
        let sub = line["sub"].as_str().unwrap_or_default().to_owned();
        if let Some(change) = line.get("next") {
            self.received.entry(sub).or_default().push(change.clone());
        } else if line.get("ended").is_some() {
            self.ended.entry(sub).or_insert(line);
        } else if line.get("closed").is_some() {
            self.closed.push(line);
        } else {
            panic!("an unexpected line from the clients: {line}");
        }
    }

    /// Takes the next line the clients print, which must come within [`WAIT`].
    async fn take_next(&mut self, what: &str) {
        match self.node.next_within(WAIT).await {
            Some(line) => self.take(line),
            None => panic!("{what}: nothing came for {WAIT:?}; {}", self.summary()),
        }
    }

    /// Takes what the clients print until `done` holds: each line must come within [`WAIT`] of
    /// the one before (the clients fail the test when nothing comes for that long).
    async fn until(&mut self, what: &str, done: impl Fn(&Self) -> bool) {
        while !done(self) {
            self.take_next(what).await;
        }
    }

    /// Takes what the clients print for at most `wait`, until `done` holds; whether it does.
    async fn within(&mut self, wait: Duration, done: impl Fn(&Self) -> bool) -> bool {
        let deadline = Instant::now() + wait;
        while !done(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.node.next_within(left).await {
                Some(line) => self.take(line),
                None => return false,
            }
        }
        true
    }

    fn changes(&self, sub: &str) -> &[Value] {
        self.received.get(sub).map_or(&[], Vec::as_slice)
    }

    fn last_text(&self, sub: &str) -> Option<&Value> {
        self.changes(sub).last().map(|c| &c["edge"]["node"]["text"])
    }

    /// The idle subscriptions that ended.
    fn idle_ended(&self) -> Vec<(&String, &Value)> {
        self.ended
            .iter()
            .filter(|(sub, _)| !self.watchers.contains(sub))
            .collect()
    }

    /// How many subscriptions ended and sockets closed, with the first few ends.
    fn summary(&self) -> String {
        let idle = self.idle_ended();
        let lost = idle
            .iter()
            .filter(|(_, line)| line.to_string().contains("CHANGES_LOST"))
            .count();
        let first: Vec<_> = self.ended.values().take(3).collect();
        format!(
            "{} of {} idle subscriptions ended ({lost} with CHANGES_LOST), {} of {} watchers \
             ended, {} sockets closed; first ends: {first:?}",
            idle.len(),
            self.idle.len(),
            self.ended.len() - idle.len(),
            self.watchers.len(),
            self.closed.len(),
        )
    }

    /// Places the watchers in the stream: warm-up notes on the written partition until each has
    /// received one (and until `also` says so: other subscribers of the partition), then a fence
    /// note, after which their received changes are forgotten.
    async fn place(&mut self, app: &ModelApp, mut also: impl AsyncFnMut(Duration) -> bool) {
        let table = app.table("Things");
        let watchers = self.watchers.clone();
        let mut others = false;
        warm_up(
            async |round| {
                let warm = note(WRITTEN, "warm", &format!("warm-up {round}"));
                put_plain(app.client(), &table, [warm]).await;
            },
            async |wait| {
                let all = self
                    .within(wait, |c| watchers.iter().all(|w| !c.changes(w).is_empty()))
                    .await;
                others = others || also(wait).await;
                all && others
            },
        )
        .await;
        put_plain(app.client(), &table, [note(WRITTEN, "fence", "fence")]).await;
        self.until("the fence", |c| {
            watchers
                .iter()
                .all(|w| c.last_text(w) == Some(&json!("fence")))
        })
        .await;
        for w in &watchers {
            self.received.remove(w);
        }
    }

    /// Asserts that no subscription ended and no socket closed.
    fn assert_none_ended(&self, app: &ModelApp, when: &str) {
        let rendered = app.store.metrics().render();
        assert!(
            self.ended.is_empty() && self.closed.is_empty(),
            "{when}: {}; the server counts {} subscriptions lost and runs {}",
            self.summary(),
            metric(&rendered, LOST),
            metric(&rendered, RUNNING),
        );
    }

    /// Every idle subscription still runs: a note of each idle owner reaches its subscription,
    /// and nothing else reaches any idle one.
    async fn assert_idle_still_run(&mut self, app: &ModelApp) {
        let notes = self
            .idle
            .iter()
            .map(|owner| note(owner, "last", "still here"))
            .collect();
        write_all(app.client().clone(), app.table("Things"), notes, None).await;
        let idle = self.idle.clone();
        self.until("each idle subscription's own note", |c| {
            idle.iter()
                .all(|owner| !c.changes(owner).is_empty() || c.ended.contains_key(owner))
        })
        .await;
        self.assert_none_ended(app, "after a note to each idle owner");
        for owner in &idle {
            assert_eq!(
                self.changes(owner),
                [json!({
                    "kind": "ADDED",
                    "id": self.changes(owner)[0]["id"],
                    "edge": { "node": { "owner": owner, "noteId": "last", "text": "still here" } },
                })],
                "{owner}"
            );
        }
    }

    /// Closes the clients' standard input: they dispose of their sockets and end. Nothing but
    /// the end comes after what was taken.
    async fn finish(self) {
        let rest = self.node.finish().await;
        assert_eq!(rest, [json!({ "done": true })]);
    }
}

/// Asserts that `changes` are those of `items` notes of the written partition each written in
/// `versions` versions (`v0`, `v1`, ...) and nothing else: every version of every item, each
/// item's in the order written, the first `ADDED` and the others `UPDATED`.
fn assert_every_change_in_order(sub: &str, changes: &[Value], items: usize, versions: usize) {
    let mut by_item: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for change in changes {
        let node = &change["edge"]["node"];
        assert_eq!(node["owner"], WRITTEN, "{sub}: {change}");
        by_item
            .entry(node["noteId"].as_str().unwrap().to_owned())
            .or_default()
            .push((
                change["kind"].as_str().unwrap().to_owned(),
                node["text"].as_str().unwrap().to_owned(),
            ));
    }
    assert_eq!(by_item.len(), items, "{sub}: items seen");
    for (item, seen) in by_item {
        let expected: Vec<(String, String)> = (0..versions)
            .map(|v| {
                let kind = if v == 0 { "ADDED" } else { "UPDATED" };
                (kind.to_owned(), format!("v{v}"))
            })
            .collect();
        assert_eq!(seen, expected, "{sub}: the changes of {item}");
    }
}

/// 2,000 idle subscriptions on 20 sockets (100 each, the server's cap), each held by a
/// `graphql-ws` client on a partition of its own, and two more clients watching one partition,
/// which is written as fast as DynamoDB Local takes writes and the watchers take the changes
/// (600 new versions of 40 notes, 8 writers at once, never more than [`WINDOW`] ahead of the
/// slower watcher): far more changes than the 16 a subscriber may fall behind by. Not one idle
/// subscription ends (none is concerned by any of the changes), the server counts none lost and
/// still runs all, both watchers receive every change, in order per item, and afterwards each
/// idle subscription still receives a note of its own owner (2,000 written as fast as DynamoDB
/// Local takes them), and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_subscriptions_on_other_partitions_are_not_ended_by_a_burst_on_one() {
    const SOCKETS: usize = 20;
    const ITEMS: usize = 40;
    const VERSIONS: usize = 15;
    let app = model_app_from(THINGS).await;
    let (server, _) = served(&app).await;
    let mut clients = Clients::start(&server.url("/graphql"), SOCKETS, 2).await;
    let running = SOCKETS * PER_SOCKET + 2;
    seated(&app, running).await;
    clients.place(&app, async |_| true).await;

    // The burst: each writer writes its notes' versions in turn, so each note's in order, and
    // takes a permit of the window for each write; a permit is given back for each change the
    // slower watcher receives.
    let burst: Vec<Item> = (0..VERSIONS)
        .flat_map(|v| (0..ITEMS).map(move |i| note(WRITTEN, &format!("n{i}"), &format!("v{v}"))))
        .collect();
    let window = Arc::new(Semaphore::new(WINDOW));
    let started = Instant::now();
    let writing = tokio::spawn(write_all(
        app.client().clone(),
        app.table("Things"),
        burst,
        Some(Arc::clone(&window)),
    ));
    let watchers = clients.watchers.clone();
    let mut given_back = 0;
    loop {
        if watchers.iter().any(|w| clients.ended.contains_key(w)) {
            // A watcher ended: the writers stop, and the assertions below say why.
            window.close();
            break;
        }
        let slowest = watchers
            .iter()
            .map(|w| clients.changes(w).len())
            .min()
            .unwrap_or_default();
        if slowest == ITEMS * VERSIONS {
            break;
        }
        window.add_permits(slowest - given_back);
        given_back = slowest;
        clients.take_next("the burst's changes").await;
    }
    writing.await.unwrap();
    eprintln!(
        "{} changes written and delivered in {:?}",
        ITEMS * VERSIONS,
        started.elapsed()
    );

    clients.assert_none_ended(&app, "after the burst");
    let rendered = app.store.metrics().render();
    assert_eq!(metric(&rendered, LOST), 0.0, "{rendered}");
    assert_eq!(metric(&rendered, RUNNING), running as f64, "{rendered}");
    for w in &watchers {
        assert_every_change_in_order(w, clients.changes(w), ITEMS, VERSIONS);
    }
    clients.assert_idle_still_run(&app).await;
    for w in &watchers {
        assert_eq!(clients.changes(w).len(), ITEMS * VERSIONS, "{w}");
    }
    clients.finish().await;
}

/// On the written partition, a subscriber that stops reading (an in-process client over
/// server-sent events that takes no more events) and a `graphql-ws` client that reads; 1,000
/// idle `graphql-ws` subscriptions on partitions of their own. Each change is written once the
/// reading client has the one before, four times as many as a subscriber may fall behind by:
/// the one that stopped reading receives what it held, then `CHANGES_LOST` and the end; the
/// reading one receives every change; no idle one ends; and the server counts exactly one
/// subscription lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_alone_is_ended_with_changes_lost() {
    const SOCKETS: usize = 10;
    const WRITES: usize = 4 * BUFFER;
    let app = model_app_from(THINGS).await;
    let (server, router) = served(&app).await;
    let mut clients = Clients::start(&server.url("/graphql"), SOCKETS, 1).await;
    let query =
        "subscription($o: String!) { notesChanged(owner: $o) { kind edge { node { text } } } }";
    // Takes one event at a time: while the test takes none, nothing more is read.
    let mut slow = subscribe_reading(&router, None, query, json!({ "o": WRITTEN }), 1).await;
    let running = SOCKETS * PER_SOCKET + 2;
    seated(&app, running).await;
    clients
        .place(&app, async |wait| received_within(&mut slow, wait).await)
        .await;
    // The slow subscriber takes the warm-ups and the fence: it is at the same place.
    while next_event(&mut slow).await.1["data"]["notesChanged"]["edge"]["node"]["text"] != "fence" {
    }

    // It takes nothing more while the notes are written, each once the reader has the last.
    let table = app.table("Things");
    for n in 0..WRITES {
        put_plain(
            app.client(),
            &table,
            [note(WRITTEN, &format!("n{n}"), "v0")],
        )
        .await;
        clients
            .until("the reading client's change", |c| c.changes("w0").len() > n)
            .await;
    }
    assert_every_change_in_order("w0", clients.changes("w0"), WRITES, 1);

    // It takes what it held, then the end: more changes than it may fall behind by were lost
    // to it.
    let mut held = 0;
    let ended = loop {
        let (name, data) = next_event(&mut slow).await;
        assert_eq!(name, "next", "{data}");
        if let Some(errors) = data.get("errors") {
            break errors[0]["extensions"]["code"].clone();
        }
        assert_eq!(data["data"]["notesChanged"]["edge"]["node"]["text"], "v0");
        held += 1;
    };
    assert_eq!(ended, json!("CHANGES_LOST"), "after {held} changes");
    assert!(held < WRITES, "it received {held} changes of {WRITES}");
    assert_eq!(next_event(&mut slow).await.0, "complete");

    clients.assert_none_ended(&app, "after the slow subscriber's end");
    let rendered = app.store.metrics().render();
    assert_eq!(metric(&rendered, LOST), 1.0, "{rendered}");
    seated(&app, running - 1).await;
    clients.finish().await;
}
