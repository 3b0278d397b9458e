//! A restart storm end to end (issue #71, item 3), CI-sized: the instance holding every
//! subscriber is restarted behind the load balancer while notes are written; every client
//! resumes by position, all at the same moment, on the other instances and the restarted one,
//! and none loses or repeats a change.
//!
//! The fleet is `live_fleet.rs`'s: three `dynarelay serve` instances reading changes from a real
//! `redis-server`, which a `dynarelay relay` fills from DynamoDB Local's stream, behind the
//! round-robin balancer. [`OWNERS`] subscriptions follow one owner's notes each (a partition
//! each, as signed-in users hold theirs), [`PER_SOCKET`] to a socket, all opened directly on
//! instance A, which so holds them all. Each paged its owner's first note and subscribed after
//! its cursor, and received the second note, written and relayed before: its `position` and
//! edge cursor are where it resumes from. (A note written while its subscription starts, which
//! comes both with the items after the cursor and live, would be sent once, but its change is
//! after the position sent with it, and a resume from that position sends it again: the first
//! changes here are not racing the subscriptions' start, which is not what this test is about.)
//!
//! Then, while a writer adds notes and changes existing ones of random owners, A is replaced as
//! a rolling deploy replaces a task: A is taken out of the balancer's rotation (nothing reached
//! it through the balancer), a fresh instance on a new port is put in its place, and A gets
//! SIGTERM, as an orchestrator stops a task. The graceful stop, not a kill, because that is how
//! deploys restart instances, and because the server's shutdown closes every WebSocket at once
//! with 1001 "Going away" (`src/http/ws.rs`): every client learns at the same moment and, as
//! the live-data guide says, subscribes again at once through the balancer with `resumeFrom`
//! (the last `position` it received) and `after` (the last cursor it holds): the storm. (A
//! killed process's sockets are reset by the kernel instead, and its clients resume the same
//! way; every socket here must have been closed with 1001.)
//!
//! Once every subscription runs again (the instances' `dynarelay_subscriptions` add up to
//! [`OWNERS`]), the writer goes on for [`WRITES_AFTER`] more writes and stops, and every owner
//! gets one last note, the end marker. Once every subscription holds its owner's, each must
//! have received exactly its owner's writes since its first note, in the order written: nothing
//! lost, nothing twice, nothing of another owner; and DynamoDB holds the last version the writer
//! recorded of every note. The time from the SIGTERM until every subscription ran again is
//! reported, not asserted. Waits end on what the clients hold (or the instances count), bounded
//! by deadlines far beyond need.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use async_graphql::futures_util::{SinkExt, StreamExt, stream};
use aws_sdk_dynamodb::Client;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};
use tokio::{sync::mpsc, task::JoinHandle};
use tokio_tungstenite::tungstenite::Message;

use crate::{
    helpers::{
        Instances, RedisServer, Relay, RoundRobin, graphql_at, metric, model_app_from, model_file,
        open_socket, put_batch, put_plain, relayed_notes, scan_all, serve_from_redis, stop,
    },
    subscriptions::{MODEL, note},
};

/// Subscriptions, one per owner, all held by instance A before the restart: ten full sockets,
/// which a debug build on two cores runs through in half a minute to a minute and a quarter.
const OWNERS: usize = 1_000;
/// The owner of the note written until the relay relays one; nobody follows it.
const WARM_UP: &str = "warm-up";
/// Subscriptions on one socket: the server's cap of operations a socket runs at once.
const PER_SOCKET: usize = 100;
/// Writes before the restart begins, so that changes are on their way while A stops.
const WRITES_BEFORE: usize = 100;
/// Writes after every subscription runs again, before the writer stops.
const WRITES_AFTER: usize = 200;
/// The end marker's `at`: after any note the writer adds.
const END: i64 = 1_000_000;
/// Longest wait for the clients to hold what was written: far beyond what the fleet takes, so
/// that a slow machine never fails the test; a change never delivered still fails it.
const WAIT: Duration = Duration::from_secs(180);
/// How many times one subscription may end on an open socket (and be subscribed again on it)
/// before its client gives it up: the test then fails, saying why it ended.
const MOST_ENDS: usize = 10;

const FOLLOW: &str = "subscription($owner: String!, $after: String, $resumeFrom: String) {
  notesChanged(owner: $owner, after: $after, resumeFrom: $resumeFrom) {
    kind id position edge { cursor node { id owner at text } } } }";

fn owner_name(owner: usize) -> String {
    format!("owner{owner:04}")
}

/// A note's text: `<at>.<version>`.
fn text(at: i64, version: u32) -> String {
    format!("{at}.{version}")
}

/// The version a note's text names.
fn version_of(text: &str) -> u32 {
    text.rsplit('.').next().unwrap().parse().unwrap()
}

/// The cursor of `owner`'s first note, paged at `url`.
async fn first_cursor(http: &reqwest::Client, url: &str, owner: usize) -> String {
    let page = graphql_at(
        http,
        url,
        "query($owner: String!) { notes(owner: $owner, first: 1) { edges { cursor } } }",
        json!({ "owner": owner_name(owner) }),
    )
    .await;
    page["data"]["notes"]["edges"][0]["cursor"]
        .as_str()
        .unwrap_or_else(|| panic!("{page}"))
        .to_owned()
}

/// Where one subscription resumes from, as its client keeps it.
struct Place {
    owner: usize,
    /// The cursor of the last edge the client holds (the note at `at`).
    cursor: String,
    at: i64,
    /// The last position received.
    position: Option<String>,
    /// Why the subscription is ending (a `next` with errors comes before its `complete`).
    ending: Option<String>,
    /// Times it ended on an open socket.
    ends: usize,
}

impl Place {
    /// Takes the place of `change` (a `notesChanged`).
    fn take(&mut self, change: &Value) {
        if let Some(position) = change["position"].as_str() {
            self.position = Some(position.to_owned());
        }
        let edge = &change["edge"];
        if let Some(at) = edge["node"]["at"].as_i64()
            && at >= self.at
        {
            self.at = at;
            self.cursor = edge["cursor"].as_str().unwrap().to_owned();
        }
    }

    /// The `subscribe` message of operation `slot`, resuming from here.
    fn subscribe(&self, slot: usize) -> Message {
        let variables = json!({
            "owner": owner_name(self.owner),
            "after": self.cursor,
            "resumeFrom": self.position,
        });
        Message::text(
            json!({ "id": slot.to_string(), "type": "subscribe",
                    "payload": { "query": FOLLOW, "variables": variables } })
            .to_string(),
        )
    }
}

/// What a client's socket told it of one subscription.
#[derive(Debug)]
enum Event {
    /// A change: the `notesChanged` object, received on the client's `socket`th socket.
    Change {
        owner: usize,
        socket: usize,
        change: Value,
    },
    /// The subscription ended, and why.
    Ended { owner: usize, why: String },
}

/// A client's socket with `places`' subscriptions, first at `first`; whenever the socket
/// closes, at once again through `then`, each subscription resuming from its place. What it
/// receives goes to `events`.
async fn hold(
    first: String,
    then: String,
    mut places: Vec<Place>,
    events: mpsc::UnboundedSender<Event>,
) {
    let mut url = first;
    for socket in 0.. {
        for place in &mut places {
            place.ending = None;
        }
        match session(&url, socket, &mut places, &events).await {
            Some(why) => {
                for place in &places {
                    let owner = place.owner;
                    let why = why.clone();
                    if events.send(Event::Ended { owner, why }).is_err() {
                        return;
                    }
                }
            }
            // No connection: the balancer had no instance to give it.
            None => tokio::time::sleep(Duration::from_millis(20)).await,
        }
        url.clone_from(&then);
    }
}

/// One socket's life: its subscriptions, each subscribed again on it when it ends alone; why
/// the socket closed (`None` when it did not open).
async fn session(
    url: &str,
    number: usize,
    places: &mut [Place],
    events: &mpsc::UnboundedSender<Event>,
) -> Option<String> {
    let mut socket = open_socket(url, Some("graphql-transport-ws")).await.ok()?;
    let init = Message::text(json!({ "type": "connection_init" }).to_string());
    let subscribes = places
        .iter()
        .enumerate()
        .filter(|(_, place)| place.ends < MOST_ENDS)
        .map(|(slot, place)| place.subscribe(slot));
    for message in std::iter::once(init).chain(subscribes) {
        if socket.send(message).await.is_err() {
            return Some("closed while subscribing".to_owned());
        }
    }
    loop {
        let text = match socket.next().await {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Close(frame))) => {
                return Some(frame.map_or_else(
                    || "closed".to_owned(),
                    |f| format!("closed {} {}", u16::from(f.code), f.reason),
                ));
            }
            Some(Err(error)) => return Some(format!("broken: {error}")),
            None => return Some("closed".to_owned()),
            Some(Ok(_)) => continue,
        };
        let message: Value = serde_json::from_str(text.as_str()).unwrap();
        let slot = message["id"]
            .as_str()
            .and_then(|id| id.parse::<usize>().ok());
        match (message["type"].as_str(), slot) {
            (Some("ping"), _) => {
                let pong = Message::text(json!({ "type": "pong" }).to_string());
                let _ = socket.send(pong).await;
            }
            (Some("next"), Some(slot)) => {
                let place = &mut places[slot];
                if let Some(error) = message["payload"]["errors"].get(0) {
                    let code = error["extensions"]["code"].as_str().unwrap_or("error");
                    place.ending = Some(code.to_owned());
                    continue;
                }
                let change = &message["payload"]["data"]["notesChanged"];
                place.take(change);
                let owner = place.owner;
                let change = change.clone();
                let _ = events.send(Event::Change {
                    owner,
                    socket: number,
                    change,
                });
            }
            (Some(kind @ ("complete" | "error")), Some(slot)) => {
                let place = &mut places[slot];
                let why = place.ending.take().unwrap_or_else(|| match kind {
                    "complete" => "complete".to_owned(),
                    _ => format!("error {}", message["payload"]),
                });
                place.ends += 1;
                let owner = place.owner;
                let _ = events.send(Event::Ended { owner, why });
                if place.ends < MOST_ENDS && socket.send(place.subscribe(slot)).await.is_err() {
                    return Some("closed while subscribing".to_owned());
                }
            }
            _ => {}
        }
    }
}

/// One subscription as the test sees it.
#[derive(Default)]
struct Follower {
    /// Each change received: its note's `at` and version, and its kind.
    received: Vec<(i64, u32, String)>,
    /// Each note's id, by `at`.
    ids: BTreeMap<i64, String>,
    /// Changes that are not of one of its owner's notes (another owner's, a removal), or carry
    /// another id than the note's.
    strays: Vec<Value>,
    /// Why it ended, each time.
    ended: Vec<String>,
    /// Each change's socket: 0 on A, then through the balancer.
    sockets: Vec<usize>,
}

impl Follower {
    fn holds(&self, at: i64) -> bool {
        self.received.iter().any(|(held, ..)| *held == at)
    }
}

/// Every subscription, by owner, and what their clients receive.
struct Followers {
    all: Vec<Follower>,
    events: mpsc::UnboundedReceiver<Event>,
}

impl Followers {
    fn apply(&mut self, event: Event) {
        match event {
            Event::Change {
                owner,
                socket,
                change,
            } => {
                let follower = &mut self.all[owner];
                follower.sockets.push(socket);
                let node = &change["edge"]["node"];
                let (Some(at), Some(text), Some(id)) = (
                    node["at"].as_i64(),
                    node["text"].as_str(),
                    change["id"].as_str(),
                ) else {
                    follower.strays.push(change);
                    return;
                };
                let known = follower.ids.entry(at).or_insert_with(|| id.to_owned());
                if node["owner"] != owner_name(owner).as_str() || known != id {
                    follower.strays.push(change);
                    return;
                }
                let kind = change["kind"].as_str().unwrap_or_default().to_owned();
                follower.received.push((at, version_of(text), kind));
            }
            Event::Ended { owner, why } => self.all[owner].ended.push(why),
        }
    }

    /// Applies what the clients receive until every subscription `holds`.
    async fn until(&mut self, step: &str, holds: impl Fn(&Follower) -> bool) {
        let deadline = Instant::now() + WAIT;
        loop {
            while let Ok(event) = self.events.try_recv() {
                self.apply(event);
            }
            let waiting: Vec<usize> = (0..OWNERS).filter(|&o| !holds(&self.all[o])).collect();
            let Some(&first) = waiting.first() else {
                return;
            };
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.events.recv()).await {
                Ok(Some(event)) => self.apply(event),
                _ => {
                    let follower = &self.all[first];
                    panic!(
                        "{step}: {} subscriptions still wait, such as {}'s: received {:?}, \
                         ended {:?}",
                        waiting.len(),
                        owner_name(first),
                        follower.received,
                        follower.ended
                    );
                }
            }
        }
    }
}

/// Each owner's writes in the order written (the note's `at` and version), and the last
/// version of each of its notes, by `at`.
struct Written {
    writes: Vec<Vec<(i64, u32)>>,
    versions: Vec<Vec<u32>>,
}

/// Writes notes of random owners one at a time until stopped: a new note of its owner, or
/// (one in three) the next version of one it has.
struct Writer {
    stop: Arc<AtomicBool>,
    count: Arc<AtomicUsize>,
    task: JoinHandle<Written>,
}

impl Writer {
    /// Starts writing, every owner holding two notes (`at` 0 and 1) at their first version.
    fn start(client: Client, table: String) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicUsize::new(0));
        let (stopped, counted) = (Arc::clone(&stop), Arc::clone(&count));
        let task = tokio::spawn(async move {
            let mut rng = ChaCha8Rng::seed_from_u64(71);
            let mut written = Written {
                writes: vec![Vec::new(); OWNERS],
                versions: vec![vec![1, 1]; OWNERS],
            };
            while !stopped.load(Ordering::Relaxed) {
                let owner = rng.next_u32() as usize % OWNERS;
                let notes = &mut written.versions[owner];
                let at = if rng.next_u32() % 3 == 0 {
                    rng.next_u32() as usize % notes.len()
                } else {
                    notes.push(0);
                    notes.len() - 1
                };
                notes[at] += 1;
                let (at, version) = (at as i64, notes[at]);
                let item = note(&owner_name(owner), at, &text(at, version), "OPEN");
                put_plain(&client, &table, [item]).await;
                written.writes[owner].push((at, version));
                counted.fetch_add(1, Ordering::Relaxed);
            }
            written
        });
        Self { stop, count, task }
    }

    fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Waits until it has written `count` notes in all.
    async fn until_written(&self, count: usize) {
        let deadline = Instant::now() + WAIT;
        while self.count() < count {
            assert!(
                Instant::now() < deadline,
                "{} of {count} written",
                self.count()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Stops it: what it wrote.
    async fn finish(self) -> Written {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap()
    }
}

/// The metrics of the instance at `addr`.
async fn metrics_at(http: &reqwest::Client, addr: SocketAddr) -> String {
    let response = http.get(format!("http://{addr}/metrics")).send().await;
    response.unwrap().text().await.unwrap()
}

/// Waits until the instances at `addrs` run [`OWNERS`] subscriptions in all (their
/// `dynarelay_subscriptions`): how many each runs then.
async fn all_running(http: &reqwest::Client, addrs: &[SocketAddr]) -> Vec<f64> {
    let deadline = Instant::now() + WAIT;
    loop {
        let mut counts = Vec::new();
        for addr in addrs {
            let metrics = metrics_at(http, *addr).await;
            counts.push(metric(&metrics, "dynarelay_subscriptions "));
        }
        if counts.iter().sum::<f64>() >= OWNERS as f64 {
            return counts;
        }
        assert!(
            Instant::now() < deadline,
            "the instances run {counts:?} subscriptions, not {OWNERS}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_subscriber_of_a_restarted_instance_resumes_at_once_missing_and_repeating_nothing() {
    let redis = RedisServer::start();
    let app = model_app_from(MODEL).await;
    let model = model_file(MODEL);
    let table = app.table("Notes");
    let _relay = Relay::start(&app, MODEL, &redis.url());
    let mut instances = Instances(
        (0..3)
            .map(|_| serve_from_redis(&app.prefix, &model, &redis.url()))
            .collect(),
    );
    let balancer = RoundRobin::start(instances.0.iter().map(|(_, addr)| *addr).collect());
    let on_a = format!("http://{}/graphql", instances.0[0].1);

    // Each owner's first note, paged on A: its cursor is where the subscription starts. The
    // second, after it, is relayed before anyone subscribes: each subscription's first change is
    // that note, read after the cursor, with its position.
    let notes = |at: i64| (0..OWNERS).map(move |o| note(&owner_name(o), at, &text(at, 1), "OPEN"));
    // First a note nobody follows, until the relay has relayed one: it reads the stream.
    let deadline = Instant::now() + WAIT;
    for round in 0.. {
        let warm = note(WARM_UP, -1, &text(-1, round + 1), "OPEN");
        put_plain(app.client(), &table, [warm]).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        if !relayed_notes(&redis.url(), &table).await.0.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "the relay relayed nothing");
    }
    put_batch(app.client(), &table, notes(0)).await;
    put_batch(app.client(), &table, notes(1)).await;
    loop {
        let (relayed, _) = relayed_notes(&redis.url(), &table).await;
        if relayed.iter().filter(|&&at| at == 1).count() == OWNERS {
            break;
        }
        assert!(Instant::now() < deadline, "the first notes not relayed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A connection a request: the instances close a keep-alive connection idle for 5 s, and a
    // request sent on one as it closes fails.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let cursors: Vec<String> = stream::iter(0..OWNERS)
        .map(|owner| first_cursor(&http, &on_a, owner))
        .buffered(8)
        .collect()
        .await;
    let (sender, events) = mpsc::unbounded_channel();
    let mut sockets = Vec::new();
    for (s, chunk) in cursors.chunks(PER_SOCKET).enumerate() {
        let places = chunk
            .iter()
            .enumerate()
            .map(|(i, cursor)| Place {
                owner: s * PER_SOCKET + i,
                cursor: cursor.clone(),
                at: 0,
                position: None,
                ending: None,
                ends: 0,
            })
            .collect();
        let then = balancer.url("/graphql");
        sockets.push(tokio::spawn(hold(
            on_a.clone(),
            then,
            places,
            sender.clone(),
        )));
    }
    drop(sender);
    let mut followers = Followers {
        all: (0..OWNERS).map(|_| Follower::default()).collect(),
        events,
    };

    followers
        .until("the first change", |f| !f.received.is_empty())
        .await;
    let on_each = all_running(&http, &[instances.0[0].1]).await;
    assert_eq!(on_each, [OWNERS as f64], "A holds every subscription");

    // A replaced while notes are written: every client resumes at once through the balancer.
    let writer = Writer::start(app.client().clone(), table.clone());
    writer.until_written(WRITES_BEFORE).await;
    balancer.take_out(0).await;
    let (prefix, model_path, redis_url) = (app.prefix.clone(), model.clone(), redis.url());
    let fresh =
        tokio::task::spawn_blocking(move || serve_from_redis(&prefix, &model_path, &redis_url))
            .await
            .unwrap();
    balancer.put_in(0, fresh.1);
    let old = Instances(vec![std::mem::replace(&mut instances.0[0], fresh)]);
    let written_before = writer.count();
    let restart = Instant::now();
    let stopping = tokio::task::spawn_blocking(move || {
        let mut old = old;
        (stop(&mut old.0[0].0), restart.elapsed())
    });
    let addrs: Vec<SocketAddr> = instances.0.iter().map(|(_, addr)| *addr).collect();
    let on_each = all_running(&http, &addrs).await;
    let resumed_in = restart.elapsed();
    let written_during = writer.count() - written_before;
    let (status, stopped_in) = stopping.await.unwrap();
    assert_eq!(status.code(), Some(0), "A stopped with {status}");
    eprintln!(
        "restart storm: {OWNERS} subscriptions ran again {resumed_in:?} after A's SIGTERM (A \
         exited after {stopped_in:?}; {written_during} notes written meanwhile); running on the \
         restarted instance and the two others: {on_each:?}"
    );
    assert!(
        on_each.iter().all(|&count| count > 0.0),
        "the storm reached every instance in rotation: {on_each:?}"
    );

    // The writer stops; then each owner's end marker, the last note of all.
    writer.until_written(writer.count() + WRITES_AFTER).await;
    let written = writer.finish().await;
    let ended = Instant::now();
    put_batch(app.client(), &table, notes(END)).await;
    followers.until("the end marker", |f| f.holds(END)).await;
    let delivered_in = ended.elapsed();
    for socket in &sockets {
        socket.abort();
    }
    let mut resumes = Vec::new();
    for addr in &addrs {
        let metrics = metrics_at(&http, *addr).await;
        let lines = metrics.lines().map(str::to_owned);
        resumes.extend(lines.filter(|line| line.starts_with("dynarelay_subscription_resumes")));
    }
    eprintln!(
        "restart storm: every subscription held its end marker {delivered_in:?} after the end \
         markers were begun; resumes by where they read, on each instance: {resumes:?}"
    );

    // The writer's record is what DynamoDB holds.
    let mut expected = BTreeMap::new();
    for (owner, versions) in written.versions.iter().enumerate() {
        for (at, version) in (0..).zip(versions) {
            expected.insert((owner_name(owner), at), text(at, *version));
        }
        expected.insert((owner_name(owner), END), text(END, 1));
    }
    let held: BTreeMap<(String, i64), String> = scan_all(app.client(), &table)
        .await
        .iter()
        .map(|item| {
            let s = |name: &str| item[name].as_s().unwrap().clone();
            let at = item["at"].as_n().unwrap().parse().unwrap();
            ((s("owner"), at), s("text"))
        })
        .filter(|((owner, _), _)| owner != WARM_UP)
        .collect();
    let differ: Vec<_> = expected
        .iter()
        .filter(|(key, text)| held.get(*key) != Some(*text))
        .take(5)
        .collect();
    assert!(
        held.len() == expected.len() && differ.is_empty(),
        "DynamoDB holds {} notes, {} written; written, not held: {differ:?}",
        held.len(),
        expected.len()
    );

    // Each subscription received its owner's writes since its first note, once each, in order;
    // and its socket on A was closed going away.
    let mut wrong = Vec::new();
    let mut not_away = Vec::new();
    for (owner, follower) in followers.all.iter().enumerate() {
        let expected: Vec<(i64, u32, String)> = std::iter::once((1, 1))
            .chain(written.writes[owner].iter().copied())
            .chain([(END, 1)])
            .map(|(at, version)| {
                let kind = if version == 1 { "ADDED" } else { "UPDATED" };
                (at, version, kind.to_owned())
            })
            .collect();
        if follower.received != expected || !follower.strays.is_empty() {
            wrong.push(format!(
                "{}: received {:?} (on sockets {:?}), written {expected:?}, strays {:?}, ended \
                 {:?}",
                owner_name(owner),
                follower.received,
                follower.sockets,
                follower.strays,
                follower.ended
            ));
        }
        if !follower
            .ended
            .iter()
            .any(|why| why == "closed 1001 Going away")
        {
            not_away.push(format!("{}: {:?}", owner_name(owner), follower.ended));
        }
    }
    assert!(
        wrong.is_empty() && not_away.is_empty(),
        "{} of {OWNERS} subscriptions received other than was written, such as:\n{}\n\
         {} of {OWNERS} subscriptions' socket on A was not closed with 1001 going away, such \
         as:\n{}",
        wrong.len(),
        wrong[..wrong.len().min(3)].join("\n"),
        not_away.len(),
        not_away[..not_away.len().min(3)].join("\n"),
    );
}
