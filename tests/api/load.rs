//! Load: walkers page through connections to their end while writers create and delete
//! purchases, all against the real `dynarelay serve` binary over loopback HTTP, for a bounded
//! time.
//!
//! The suite runs a short load: `DYNARELAY_LOAD_SECS` (default 20), `DYNARELAY_LOAD_WALKERS`
//! (default 8) and `DYNARELAY_LOAD_WRITERS` (default 2); `DYNARELAY_LOAD_SEED` picks the random
//! choices (default: from the clock; it is printed). `scripts/load` runs a long load in release
//! mode. Every run prints a summary (requests, req/s, p50, p99, max, walks, writes, RSS) and
//! writes it to `target/load/summary.json`. The server runs with its default per-caller rate
//! limits, which every walker and writer shares (they all come from 127.0.0.1);
//! `DYNARELAY_LOAD_RATE_LIMITS=off` (which `scripts/load` sets) turns them off, so that a release
//! build's throughput is measured rather than the limits.
//!
//! Required results, each an assertion:
//! - every response is a 200 without GraphQL errors, and no request fails in transport;
//! - within every complete walk, no item twice and strict connection order;
//! - every seeded purchase appears in every complete walk of its user, and so does every
//!   created purchase whose `createPurchase` was acknowledged before the walk started and whose
//!   `deletePurchase` had not been sent when it ended; no purchase appears after its deletion was
//!   acknowledged, and none that nobody wrote;
//! - `status: PAID` walks, `products(category:)` walks and `users` walks return exactly the
//!   seeded items (writers never write `PAID`, products or users);
//! - afterwards, every acknowledged create that was not deleted reads back with `nodes(ids:)`, and
//!   every acknowledged delete reads back as null; a last walk of every user returns exactly the
//!   seeded purchases and the live created ones;
//! - the server is still running, and its RSS is stable: see [`check_rss`].
//!
//! Seen failing, each time with the requirement it broke: with `DYNARELAY_MAX_PAGE_SIZE=50`
//! given to the server (`graphql-errors`: walks asking for 100 get `BAD_USER_INPUT`); with the
//! middle node of every fourth page dropped by the walker (`walk-skipped-seeded`,
//! `walk-products-differ`, `walk-users-differ`, `final-walk`); with the created purchases of
//! every fourth page dropped (`walk-skipped-created`, `final-walk`); with every node pushed twice
//! (`walk-duplicate`, `walk-order`); and, for the RSS check, with every walker page sent as a
//! new Apollo persisted query with a 12,000-character operation name to a server remembering
//! 1,000,000 of them (RSS grew about 2 MiB a second; the last third peaked at 73 MiB against an
//! allowed 63 MiB).

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::{self, Item};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};

use crate::helpers::{
    ShopTables, dynarelay_command, endpoint, purchase_item, shop_store, unique_prefix,
};

/// Users, each with `SEEDED_PER_USER` purchases that no writer touches.
const USERS: usize = 4;
const SEEDED_PER_USER: usize = 150;
/// Seeded purchases are one minute apart from 2023-01-01; writers' explicit times fall between
/// them (see [`explicit_time`]).
const BASE_MS: i64 = 1_672_531_200_000;
const SPACING_MS: i64 = 60_000;
const CATEGORIES: usize = 2;
const PRODUCTS_PER_CATEGORY: usize = 25;
/// Few prices, so that many products tie on the index sort key.
const PRICES: [&str; 4] = ["4.99", "9.99", "19.99", "24.5"];
/// Page sizes the walkers use (the server's maximum is 100).
const PAGE_SIZES: [u64; 8] = [1, 2, 5, 10, 20, 33, 50, 100];
/// A writer creates while it has fewer live purchases than `LOW`, deletes while it has `HIGH` or
/// more, and tosses a coin in between: the data set stays the same size however long the run.
const LOW: usize = 5;
const HIGH: usize = 25;
/// A walk longer than this many pages is a failure (the longest honest walk, one item a page,
/// has about 150 + writers * HIGH pages).
const MAX_PAGES: usize = 5_000;
/// How long a walk in progress at the end of the run may take to finish; after it, it is left
/// unfinished and unchecked.
const DRAIN: Duration = Duration::from_secs(30);
/// The client-side limit on one request (the server's own is 15 s, and answers 504).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

const PURCHASES: &str = "query($u: String!, $first: Int, $after: String, $last: Int,
    $before: String, $order: SortOrder, $status: PurchaseStatus) {
  user(userId: $u) {
    purchases(first: $first, after: $after, last: $last, before: $before, order: $order,
              status: $status) {
      edges { cursor node { id purchasedAt amount status product { sku } } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}";
const PRODUCTS: &str = "query($c: String!, $first: Int, $after: String, $last: Int,
    $before: String, $order: SortOrder) {
  products(category: $c, first: $first, after: $after, last: $last, before: $before,
           order: $order) {
    edges { cursor node { id sku category price } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}";
const USERS_QUERY: &str = "query($first: Int, $after: String) {
  users(first: $first, after: $after) {
    edges { cursor node { id userId } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}";
const CREATE: &str = "mutation($input: CreatePurchaseInput!) { createPurchase(input: $input) {
    purchase { id purchasedAt status user { userId } }
    purchaseEdge { cursor node { id } } } }";
const DELETE: &str =
    "mutation($id: ID!) { deletePurchase(input: { id: $id }) { deletedPurchaseId } }";
const NODES: &str =
    "query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Purchase { purchasedAt } } }";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_walks_and_writes_hold_up() {
    let settings = Settings::from_env();
    // Setup, the run, walks finishing after it, and the final checks, all bounded.
    let limit = Duration::from_secs(settings.secs) + DRAIN + Duration::from_secs(90);
    tokio::time::timeout(limit, run(settings))
        .await
        .unwrap_or_else(|_| panic!("the load test did not finish within {limit:?}"));
}

#[derive(Debug, Clone, Copy)]
struct Settings {
    secs: u64,
    walkers: usize,
    writers: usize,
    seed: u64,
}

impl Settings {
    fn from_env() -> Self {
        fn var<T: std::str::FromStr>(name: &str, default: T) -> T {
            match std::env::var(name) {
                Ok(v) => v
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
                Err(_) => default,
            }
        }
        let clock = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        let settings = Self {
            secs: var("DYNARELAY_LOAD_SECS", 20),
            walkers: var("DYNARELAY_LOAD_WALKERS", 8),
            writers: var("DYNARELAY_LOAD_WRITERS", 2),
            seed: var("DYNARELAY_LOAD_SEED", clock),
        };
        // The RSS check needs a few samples in each third of the run.
        assert!(
            (9..=3_600).contains(&settings.secs),
            "DYNARELAY_LOAD_SECS must be 9 to 3600"
        );
        assert!(
            (1..=256).contains(&settings.walkers),
            "DYNARELAY_LOAD_WALKERS must be 1 to 256"
        );
        assert!(
            (1..=64).contains(&settings.writers),
            "DYNARELAY_LOAD_WRITERS must be 1 to 64"
        );
        settings
    }
}

async fn run(settings: Settings) {
    eprintln!("load settings: {settings:?}");
    let endpoint = endpoint();
    assert!(
        endpoint.starts_with("http://127.0.0.1:") || endpoint.starts_with("http://localhost:"),
        "the load test only talks to a DynamoDB Local on loopback, not {endpoint}"
    );
    let prefix = unique_prefix();
    let expected = Arc::new(seed(&endpoint, &prefix).await);
    let mut server = Server::start(&endpoint, &prefix);
    let http = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .connect_timeout(Duration::from_secs(5))
        .no_proxy()
        .build()
        .unwrap();
    server.wait_ready(&http).await;

    let started = Instant::now();
    let deadline = started + Duration::from_secs(settings.secs);
    let ctx = Arc::new(Ctx {
        api: Api {
            http,
            url: format!("http://{}/graphql", server.addr),
            deadline,
        },
        expected,
        log: Mutex::new(WriteLog::default()),
        failures: Failures::default(),
        unknown: Mutex::new(Vec::new()),
        deadline,
        hard_stop: deadline + DRAIN,
        writers: settings.writers,
    });

    let stop_sampling = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn(sample_rss(server.pid(), started, stop_sampling.clone()));
    let mut workers = Vec::new();
    for w in 0..settings.walkers {
        let rng = ChaCha8Rng::seed_from_u64(settings.seed ^ (w as u64 + 1));
        workers.push(tokio::spawn(walker(ctx.clone(), rng)));
    }
    for w in 0..settings.writers {
        let rng = ChaCha8Rng::seed_from_u64(settings.seed ^ ((w as u64 + 1) << 32));
        workers.push(tokio::spawn(writer(ctx.clone(), w, rng)));
    }
    let mut report = Report::default();
    for worker in workers {
        report.absorb(worker.await.expect("a load task panicked"));
    }
    let elapsed = started.elapsed();
    stop_sampling.store(true, Ordering::Relaxed);
    let rss = sampler.await.expect("the RSS sampler panicked");

    let (creates, deletes) = final_checks(&ctx).await;
    let server_alive = server.is_running();

    let failures = ctx.failures.counts();
    let summary = summarize(
        &settings,
        &report,
        elapsed,
        (creates, deletes),
        &rss,
        &failures,
    );
    eprintln!("load samples (s, RSS KiB): {:?}", rss.samples);
    eprintln!("load summary: {}", summary.line);
    write_summary(&summary.json);

    assert!(
        server_alive,
        "the server exited during the run; its last log lines:\n{}",
        server.log_tail()
    );
    ctx.failures.assert_none(&server);
    assert!(
        report.walks.values().sum::<u64>() > 0,
        "no walk completed: {}",
        summary.line
    );
    assert!(creates > 0 && deletes > 0, "no write was acknowledged");
    check_rss(settings.secs, &rss);
    drop(server);
}

// ----- Seeding

/// What the seeded tables hold; nothing in it changes during the run.
#[derive(Debug)]
struct Expected {
    users: Vec<String>,
    /// Per user: `purchasedAt` -> amount.
    purchases: Vec<BTreeMap<String, String>>,
    /// Per category: SKU -> price.
    products: Vec<BTreeMap<String, String>>,
    skus: Vec<String>,
}

fn category(c: usize) -> String {
    format!("load-cat-{c}")
}

async fn seed(endpoint: &str, prefix: &str) -> Expected {
    let client = dynamo::client_for_local(endpoint);
    let names = ShopTables::with_prefix(prefix);
    let store = shop_store(client, prefix).await;

    let mut expected = Expected {
        users: (0..USERS).map(|u| format!("load-user-{u}")).collect(),
        purchases: vec![BTreeMap::new(); USERS],
        products: vec![BTreeMap::new(); CATEGORIES],
        skus: Vec::new(),
    };
    let mut products = Vec::new();
    for c in 0..CATEGORIES {
        for i in 0..PRODUCTS_PER_CATEGORY {
            let sku = format!("LOAD-{c}-{i:02}");
            let price = PRICES[(i * 7 + c) % PRICES.len()];
            products.push(Item::from([
                ("sku".to_owned(), AttributeValue::S(sku.clone())),
                (
                    "name".to_owned(),
                    AttributeValue::S(format!("Product {sku}")),
                ),
                ("category".to_owned(), AttributeValue::S(category(c))),
                ("price".to_owned(), AttributeValue::N(price.to_owned())),
            ]));
            expected.products[c].insert(sku.clone(), price.to_owned());
            expected.skus.push(sku);
        }
    }
    store
        .put_items(&names.products, products)
        .await
        .expect("seeding products");

    let mut users = Vec::new();
    let mut purchases = Vec::new();
    for (u, user) in expected.users.iter().enumerate() {
        users.push(Item::from([
            ("userId".to_owned(), AttributeValue::S(user.clone())),
            ("name".to_owned(), AttributeValue::S(format!("User {u}"))),
            (
                "email".to_owned(),
                AttributeValue::S(format!("{user}@example.com")),
            ),
            (
                "createdAt".to_owned(),
                AttributeValue::N(BASE_MS.to_string()),
            ),
        ]));
        for i in 0..SEEDED_PER_USER {
            let at = BASE_MS + i as i64 * SPACING_MS;
            let amount = format!("{}.25", u * 1000 + i + 1);
            let mut item = purchase_item(user, &at.to_string(), &amount);
            let sku = &expected.skus[(u + i) % expected.skus.len()];
            item.insert("sku".to_owned(), AttributeValue::S(sku.clone()));
            purchases.push(item);
            expected.purchases[u].insert(iso(at), amount);
        }
    }
    store
        .put_items(&names.users, users)
        .await
        .expect("seeding users");
    store
        .put_items(&names.purchases, purchases)
        .await
        .expect("seeding purchases");
    expected
}

/// Epoch milliseconds as the API writes a `DateTime`.
fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .expect("a representable time")
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

// ----- The server process

/// The `dynarelay serve` process; killed when dropped, also when the test panics.
struct Server {
    child: Child,
    addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(endpoint: &str, prefix: &str) -> Self {
        let mut command = dynarelay_command(endpoint);
        if std::env::var("DYNARELAY_LOAD_RATE_LIMITS").as_deref() == Ok("off") {
            command
                .env("DYNARELAY_RATE_LIMIT_REQUESTS", "0")
                .env("DYNARELAY_RATE_LIMIT_READ_UNITS", "0");
        }
        let mut child = command
            .arg("serve")
            .env("DYNARELAY_TABLE_PREFIX", prefix)
            .env("DYNARELAY_LISTEN", "127.0.0.1:0")
            // Warnings only, plus the line that says where it listens.
            .env("RUST_LOG", "warn,dynarelay=info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting dynarelay serve");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        // Drain both pipes for the whole run, so that the server never blocks on a full pipe,
        // keeping the last lines for failure messages.
        for pipe in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let log = log.clone();
            let addr_tx = addr_tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    if line.contains("dynarelay is listening")
                        && let Some(addr) = loopback_address(&line)
                    {
                        let _ = addr_tx.send(addr);
                    }
                    let mut log = log.lock().expect("log lock");
                    if log.len() >= 200 {
                        log.remove(0);
                    }
                    log.push(line);
                }
            });
        }
        let mut server = Self {
            child,
            addr: String::new(),
            log,
        };
        match addr_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(addr) => server.addr = addr,
            Err(_) => panic!(
                "serve did not log its address within 30 s:\n{}",
                server.log_tail()
            ),
        }
        server
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    async fn wait_ready(&self, http: &reqwest::Client) {
        let url = format!("http://{}/ready", self.addr);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(response) = http.get(&url).send().await
                && response.status() == 200
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "serve was not ready within 30 s:\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn log_tail(&self) -> String {
        self.log.lock().expect("log lock").join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `127.0.0.1:PORT` out of a log line, in whichever format the log is written.
fn loopback_address(line: &str) -> Option<String> {
    let start = line.find("127.0.0.1:")?;
    let rest = &line[start + "127.0.0.1:".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (!digits.is_empty()).then(|| format!("127.0.0.1:{digits}"))
}

// ----- Requests, and what went wrong

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    Page,
    Create,
    Delete,
}

/// Every response's status and latency, per task.
#[derive(Debug, Default)]
struct Recorder {
    latencies: BTreeMap<Op, Vec<u32>>,
    statuses: BTreeMap<u16, u64>,
    transport_errors: u64,
    /// Responses completed before the deadline (walks finishing after it are not counted).
    in_window: u64,
}

#[derive(Debug)]
struct Failure {
    kind: &'static str,
    detail: String,
}

fn failure(kind: &'static str, detail: impl Into<String>) -> Failure {
    Failure {
        kind,
        detail: detail.into(),
    }
}

/// Every failed requirement, counted by kind, with the first few examples of each.
#[derive(Debug, Default)]
struct Failures(Mutex<BTreeMap<&'static str, (u64, Vec<String>)>>);

impl Failures {
    fn add(&self, failure: Failure) {
        let mut all = self.0.lock().expect("failures lock");
        let (count, examples) = all.entry(failure.kind).or_default();
        *count += 1;
        if examples.len() < 5 {
            examples.push(failure.detail);
        }
    }

    fn counts(&self) -> BTreeMap<&'static str, u64> {
        let all = self.0.lock().expect("failures lock");
        all.iter().map(|(k, (n, _))| (*k, *n)).collect()
    }

    fn assert_none(&self, server: &Server) {
        let all = self.0.lock().expect("failures lock");
        if all.is_empty() {
            return;
        }
        let mut report = String::new();
        for (kind, (count, examples)) in all.iter() {
            report.push_str(&format!("\n{kind}: {count}\n"));
            for example in examples {
                let short: String = example.chars().take(600).collect();
                report.push_str(&format!("  - {short}\n"));
            }
        }
        panic!(
            "the load run broke its requirements:{report}\nserver log tail:\n{}",
            server.log_tail()
        );
    }
}

#[derive(Debug, Clone)]
struct Api {
    http: reqwest::Client,
    url: String,
    deadline: Instant,
}

impl Api {
    /// POSTs one GraphQL request, recording its status and latency. Anything but a 200 with
    /// `data` and no `errors` is a failure.
    async fn post(
        &self,
        rec: &mut Recorder,
        op: Op,
        query: &str,
        variables: Value,
    ) -> Result<Value, Failure> {
        let started = Instant::now();
        let sent = self
            .http
            .post(&self.url)
            .json(&json!({ "query": query, "variables": variables }))
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(err) => {
                rec.transport_errors += 1;
                return Err(failure("transport", format!("{op:?}: {err:?}")));
            }
        };
        let status = response.status().as_u16();
        let body = response.bytes().await;
        let micros = u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX);
        let body = match body {
            Ok(body) => body,
            Err(err) => {
                rec.transport_errors += 1;
                return Err(failure("transport", format!("{op:?} body: {err:?}")));
            }
        };
        rec.latencies.entry(op).or_default().push(micros);
        if Instant::now() <= self.deadline {
            rec.in_window += 1;
        }
        *rec.statuses.entry(status).or_default() += 1;
        let text = || {
            String::from_utf8_lossy(&body)
                .chars()
                .take(400)
                .collect::<String>()
        };
        if status >= 500 {
            return Err(failure("http-5xx", format!("{op:?} {status}: {}", text())));
        }
        if status != 200 {
            return Err(failure(
                "http-not-200",
                format!("{op:?} {status}: {}", text()),
            ));
        }
        let value: Value = serde_json::from_slice(&body)
            .map_err(|err| failure("bad-json", format!("{op:?}: {err}: {}", text())))?;
        if value.get("errors").is_some() || value["data"].is_null() {
            return Err(failure(
                "graphql-errors",
                format!("{op:?} {variables}: {}", text()),
            ));
        }
        Ok(value)
    }
}

// ----- Shared state

#[derive(Debug)]
struct Ctx {
    api: Api,
    expected: Arc<Expected>,
    log: Mutex<WriteLog>,
    failures: Failures,
    /// Purchases seen in a walk that nobody had acknowledged creating yet (the create may have
    /// been in flight); checked against the acknowledged creates after the run.
    unknown: Mutex<Vec<(String, String)>>,
    /// No walk or write starts after this.
    deadline: Instant,
    /// Walks still going at this point are left unfinished.
    hard_stop: Instant,
    writers: usize,
}

/// One acknowledged `createPurchase`, and what became of it.
#[derive(Debug, Clone)]
struct Created {
    id: String,
    purchased_at: String,
    acked: Instant,
    delete_sent: Option<Instant>,
    delete_acked: Option<Instant>,
}

#[derive(Debug, Default)]
struct WriteLog {
    by_user: BTreeMap<usize, Vec<Created>>,
    index: HashMap<String, (usize, usize)>,
}

impl WriteLog {
    fn insert(&mut self, user: usize, created: Created) {
        let list = self.by_user.entry(user).or_default();
        self.index.insert(created.id.clone(), (user, list.len()));
        list.push(created);
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Created> {
        let (user, i) = *self.index.get(id)?;
        self.by_user.get_mut(&user)?.get_mut(i)
    }

    fn get(&self, id: &str) -> Option<(usize, &Created)> {
        let (user, i) = *self.index.get(id)?;
        Some((user, self.by_user.get(&user)?.get(i)?))
    }

    fn all(&self) -> impl Iterator<Item = (usize, &Created)> {
        self.by_user
            .iter()
            .flat_map(|(u, list)| list.iter().map(move |c| (*u, c)))
    }
}

/// What one task did.
#[derive(Debug, Default)]
struct Report {
    rec: Recorder,
    /// Complete walks, by connection.
    walks: BTreeMap<&'static str, u64>,
    /// Walks left unfinished at the hard stop, or broken off by a failure.
    unfinished: u64,
    pages: u64,
}

impl Report {
    fn absorb(&mut self, other: Report) {
        for (op, mut l) in other.rec.latencies {
            self.rec.latencies.entry(op).or_default().append(&mut l);
        }
        for (status, n) in other.rec.statuses {
            *self.rec.statuses.entry(status).or_default() += n;
        }
        self.rec.transport_errors += other.rec.transport_errors;
        self.rec.in_window += other.rec.in_window;
        for (kind, n) in other.walks {
            *self.walks.entry(kind).or_default() += n;
        }
        self.unfinished += other.unfinished;
        self.pages += other.pages;
    }
}

fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

// ----- Walkers

#[derive(Debug, Clone, Copy)]
enum Target {
    /// A user's purchases, all of them or only `PAID` ones (the seeded ones).
    Purchases {
        user: usize,
        paid_only: bool,
    },
    Products {
        category: usize,
    },
    Users,
}

#[derive(Debug, Clone, Copy)]
struct WalkSpec {
    target: Target,
    desc: bool,
    backward: bool,
    k: u64,
}

impl WalkSpec {
    fn random(rng: &mut ChaCha8Rng) -> Self {
        let k = PAGE_SIZES[below(rng, PAGE_SIZES.len())];
        let desc = below(rng, 2) == 0;
        let backward = below(rng, 3) == 0;
        let target = match below(rng, 10) {
            0..=5 => Target::Purchases {
                user: below(rng, USERS),
                paid_only: false,
            },
            6 => Target::Purchases {
                user: below(rng, USERS),
                paid_only: true,
            },
            7 | 8 => Target::Products {
                category: below(rng, CATEGORIES),
            },
            _ => Target::Users,
        };
        // `users` pages forward only.
        let (desc, backward) = match target {
            Target::Users => (false, false),
            _ => (desc, backward),
        };
        Self {
            target,
            desc,
            backward,
            k,
        }
    }

    fn name(&self) -> &'static str {
        match self.target {
            Target::Purchases {
                paid_only: false, ..
            } => "purchases",
            Target::Purchases {
                paid_only: true, ..
            } => "purchases(status: PAID)",
            Target::Products { .. } => "products",
            Target::Users => "users",
        }
    }

    fn request(&self, expected: &Expected, cursor: Option<&str>) -> (&'static str, Value, &str) {
        let order = if self.desc { "DESC" } else { "ASC" };
        let mut vars = match self.target {
            Target::Purchases { user, paid_only } => json!({
                "u": expected.users[user],
                "order": order,
                "status": if paid_only { json!("PAID") } else { Value::Null },
            }),
            Target::Products { category: c } => json!({ "c": category(c), "order": order }),
            Target::Users => json!({}),
        };
        if self.backward {
            vars["last"] = json!(self.k);
            vars["before"] = json!(cursor);
        } else {
            vars["first"] = json!(self.k);
            vars["after"] = json!(cursor);
        }
        match self.target {
            Target::Purchases { .. } => (PURCHASES, vars, "/data/user/purchases"),
            Target::Products { .. } => (PRODUCTS, vars, "/data/products"),
            Target::Users => (USERS_QUERY, vars, "/data/users"),
        }
    }
}

async fn walker(ctx: Arc<Ctx>, mut rng: ChaCha8Rng) -> Report {
    let mut report = Report::default();
    while Instant::now() < ctx.deadline {
        let spec = WalkSpec::random(&mut rng);
        let start = Instant::now();
        match walk(&ctx, &mut report, &spec, ctx.hard_stop).await {
            Ok(Some(items)) => {
                let end = Instant::now();
                *report.walks.entry(spec.name()).or_default() += 1;
                for f in check_walk(&ctx, &spec, &items, start, end) {
                    ctx.failures.add(f);
                }
            }
            Ok(None) => report.unfinished += 1,
            Err(f) => {
                report.unfinished += 1;
                ctx.failures.add(f);
                // Not a tight loop against a broken server.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    report
}

/// Pages through one connection to its end: the nodes in connection order, or `None` if the
/// hard stop came first.
async fn walk(
    ctx: &Ctx,
    report: &mut Report,
    spec: &WalkSpec,
    stop: Instant,
) -> Result<Option<Vec<Value>>, Failure> {
    let mut cursor: Option<String> = None;
    let mut pages: Vec<Vec<Value>> = Vec::new();
    loop {
        if pages.len() >= MAX_PAGES {
            return Err(failure(
                "walk-endless",
                format!("{spec:?}: still going after {MAX_PAGES} pages"),
            ));
        }
        if Instant::now() > stop {
            return Ok(None);
        }
        let (query, vars, pointer) = spec.request(&ctx.expected, cursor.as_deref());
        let body = ctx.api.post(&mut report.rec, Op::Page, query, vars).await?;
        report.pages += 1;
        let connection = body
            .pointer(pointer)
            .filter(|c| c.is_object())
            .ok_or_else(|| failure("page-shape", format!("{spec:?}: {body}")))?;
        let edges = connection["edges"].as_array().cloned().unwrap_or_default();
        let info = &connection["pageInfo"];
        let (more, next) = if spec.backward {
            (&info["hasPreviousPage"], &info["startCursor"])
        } else {
            (&info["hasNextPage"], &info["endCursor"])
        };
        let more = more
            .as_bool()
            .ok_or_else(|| failure("page-shape", format!("{spec:?}: {info}")))?;
        if edges.len() as u64 > spec.k {
            return Err(failure(
                "page-too-long",
                format!("{spec:?}: {} edges", edges.len()),
            ));
        }
        // Every page but the last is full (documented for these unfiltered, or amply
        // budgeted, Query connections; a Scan page may be short).
        if more && edges.len() as u64 != spec.k && !matches!(spec.target, Target::Users) {
            return Err(failure(
                "short-page",
                format!("{spec:?}: {} edges and more to come", edges.len()),
            ));
        }
        pages.push(edges.into_iter().map(|e| e["node"].clone()).collect());
        if !more {
            break;
        }
        cursor = Some(
            next.as_str()
                .ok_or_else(|| failure("page-shape", format!("{spec:?}: more but {info}")))?
                .to_owned(),
        );
    }
    if spec.backward {
        pages.reverse();
    }
    Ok(Some(pages.concat()))
}

fn str_of<'a>(node: &'a Value, field: &str) -> &'a str {
    node[field].as_str().unwrap_or("")
}

fn check_walk(
    ctx: &Ctx,
    spec: &WalkSpec,
    items: &[Value],
    start: Instant,
    end: Instant,
) -> Vec<Failure> {
    let mut failures = Vec::new();
    let what = |detail: String| format!("{spec:?}: {detail}");
    let mut ids = HashSet::new();
    for node in items {
        if !ids.insert(str_of(node, "id")) {
            failures.push(failure("walk-duplicate", what(format!("{node}"))));
        }
    }
    match spec.target {
        Target::Purchases { user, paid_only } => {
            let seeded = &ctx.expected.purchases[user];
            for pair in items.windows(2) {
                let (a, b) = (
                    str_of(&pair[0], "purchasedAt"),
                    str_of(&pair[1], "purchasedAt"),
                );
                if (spec.desc && a <= b) || (!spec.desc && a >= b) {
                    failures.push(failure("walk-order", what(format!("{a} then {b}"))));
                }
            }
            let log = ctx.log.lock().expect("log lock");
            let mut seen_at = HashSet::new();
            for node in items {
                let at = str_of(node, "purchasedAt");
                seen_at.insert(at);
                if node["product"]["sku"].as_str().is_none() {
                    failures.push(failure("product-missing", what(format!("{node}"))));
                }
                if let Some(amount) = seeded.get(at) {
                    if str_of(node, "amount") != amount || str_of(node, "status") != "PAID" {
                        failures.push(failure("seeded-changed", what(format!("{node}"))));
                    }
                    continue;
                }
                if paid_only || str_of(node, "status") == "PAID" {
                    failures.push(failure("filter-leak", what(format!("{node}"))));
                }
                let id = str_of(node, "id");
                match log.get(id) {
                    Some((u, created)) => {
                        if u != user || created.purchased_at != at {
                            failures.push(failure("walk-wrong-item", what(format!("{node}"))));
                        }
                        if created.delete_acked.is_some_and(|d| d < start) {
                            failures.push(failure(
                                "walk-deleted-item",
                                what(format!("deleted before the walk started: {node}")),
                            ));
                        }
                    }
                    None => ctx
                        .unknown
                        .lock()
                        .expect("unknown lock")
                        .push((id.to_owned(), at.to_owned())),
                }
            }
            let missing: Vec<&String> = seeded
                .keys()
                .filter(|at| !seen_at.contains(at.as_str()))
                .collect();
            if !missing.is_empty() {
                failures.push(failure(
                    "walk-skipped-seeded",
                    what(format!(
                        "{} of {} missing, first {:?}",
                        missing.len(),
                        seeded.len(),
                        &missing[..missing.len().min(3)]
                    )),
                ));
            }
            if !paid_only {
                // Created before the walk started, and not deleted until after it ended.
                let required = log
                    .by_user
                    .get(&user)
                    .into_iter()
                    .flatten()
                    .filter(|c| c.acked < start && c.delete_sent.is_none_or(|d| d > end));
                for created in required {
                    if !ids.contains(created.id.as_str()) {
                        failures.push(failure(
                            "walk-skipped-created",
                            what(format!("{} at {}", created.id, created.purchased_at)),
                        ));
                    }
                }
            }
        }
        Target::Products { category: c } => {
            let expected = &ctx.expected.products[c];
            let prices: Vec<f64> = items
                .iter()
                .map(|n| str_of(n, "price").parse().unwrap_or(f64::NAN))
                .collect();
            for pair in prices.windows(2) {
                let ordered = if spec.desc {
                    pair[0] >= pair[1]
                } else {
                    pair[0] <= pair[1]
                };
                if !ordered {
                    failures.push(failure("walk-order", what(format!("{pair:?}"))));
                }
            }
            let got: BTreeMap<String, String> = items
                .iter()
                .map(|n| (str_of(n, "sku").to_owned(), str_of(n, "price").to_owned()))
                .collect();
            if &got != expected || items.len() != expected.len() {
                failures.push(failure(
                    "walk-products-differ",
                    what(format!("got {} items: {got:?}", items.len())),
                ));
            }
        }
        Target::Users => {
            let got: Vec<&str> = items.iter().map(|n| str_of(n, "userId")).collect();
            let mut sorted = got.clone();
            sorted.sort_unstable();
            if sorted != ctx.expected.users {
                failures.push(failure("walk-users-differ", what(format!("{got:?}"))));
            }
        }
    }
    failures
}

// ----- Writers

async fn writer(ctx: Arc<Ctx>, w: usize, mut rng: ChaCha8Rng) -> Report {
    let mut report = Report::default();
    let mut live: Vec<String> = Vec::new();
    let mut n: i64 = 0;
    while Instant::now() < ctx.deadline {
        let create = live.len() < LOW || (live.len() < HIGH && below(&mut rng, 2) == 0);
        if create {
            let user = below(&mut rng, USERS);
            let mut input = json!({
                "userId": ctx.expected.users[user],
                "sku": ctx.expected.skus[below(&mut rng, ctx.expected.skus.len())],
                "quantity": 1 + below(&mut rng, 5),
                "amount": format!("{}.{}", below(&mut rng, 500), below(&mut rng, 100)),
            });
            // Never PAID: `status: PAID` walks must return exactly the seeded purchases.
            match below(&mut rng, 3) {
                0 => input["status"] = json!("SHIPPED"),
                1 => input["status"] = json!("REFUNDED"),
                _ => {}
            }
            // Half between the seeded purchases (a time of this writer's own), half now.
            let explicit =
                (below(&mut rng, 2) == 0).then(|| explicit_time(n * ctx.writers as i64 + w as i64));
            if let Some(at) = &explicit {
                input["purchasedAt"] = json!(at);
            }
            n += 1;
            let body = match ctx
                .api
                .post(
                    &mut report.rec,
                    Op::Create,
                    CREATE,
                    json!({ "input": input }),
                )
                .await
            {
                Ok(body) => body,
                Err(f) => {
                    ctx.failures.add(f);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let acked = Instant::now();
            let payload = &body["data"]["createPurchase"];
            let id = str_of(&payload["purchase"], "id").to_owned();
            let at = str_of(&payload["purchase"], "purchasedAt").to_owned();
            if id.is_empty()
                || payload["purchaseEdge"]["node"]["id"] != json!(id)
                || payload["purchase"]["user"]["userId"] != json!(ctx.expected.users[user])
                || explicit.as_ref().is_some_and(|e| *e != at)
            {
                ctx.failures
                    .add(failure("create-payload", format!("{input}: {payload}")));
                continue;
            }
            ctx.log.lock().expect("log lock").insert(
                user,
                Created {
                    id: id.clone(),
                    purchased_at: at,
                    acked,
                    delete_sent: None,
                    delete_acked: None,
                },
            );
            live.push(id);
        } else {
            let id = live.swap_remove(below(&mut rng, live.len()));
            if let Some(c) = ctx.log.lock().expect("log lock").get_mut(&id) {
                c.delete_sent = Some(Instant::now());
            }
            match ctx
                .api
                .post(&mut report.rec, Op::Delete, DELETE, json!({ "id": id }))
                .await
            {
                Ok(body) if body["data"]["deletePurchase"]["deletedPurchaseId"] == json!(id) => {
                    if let Some(c) = ctx.log.lock().expect("log lock").get_mut(&id) {
                        c.delete_acked = Some(Instant::now());
                    }
                }
                Ok(body) => ctx
                    .failures
                    .add(failure("delete-payload", format!("{id}: {body}"))),
                Err(f) => ctx.failures.add(f),
            }
        }
    }
    report
}

/// A purchase time for write number `slot` (unique across writers): never a whole minute, so
/// never a seeded time, and spread over the gaps between the seeded purchases, so that walks
/// meet new purchases everywhere in a partition, not only at its ends. Unique for the first 3
/// million slots.
fn explicit_time(slot: i64) -> String {
    let gap = slot % SEEDED_PER_USER as i64;
    let offset = 1 + 3 * (slot / SEEDED_PER_USER as i64);
    assert!(offset < SPACING_MS, "ran out of explicit purchase times");
    iso(BASE_MS + gap * SPACING_MS + offset)
}

// ----- After the run

/// Reads every write back; returns the acknowledged creates and deletes.
async fn final_checks(ctx: &Ctx) -> (usize, usize) {
    let mut rec = Recorder::default();
    let (live, deleted, creates) = {
        let log = ctx.log.lock().expect("log lock");
        for (id, at) in ctx.unknown.lock().expect("unknown lock").iter() {
            if log.get(id).is_none() {
                ctx.failures.add(failure(
                    "walk-phantom",
                    format!("nobody wrote {id} at {at}"),
                ));
            }
        }
        let live: Vec<(usize, Created)> = log
            .all()
            .filter(|(_, c)| c.delete_sent.is_none())
            .map(|(u, c)| (u, c.clone()))
            .collect();
        let deleted: Vec<Created> = log
            .all()
            .filter(|(_, c)| c.delete_acked.is_some())
            .map(|(_, c)| c.clone())
            .collect();
        (live, deleted, log.index.len())
    };

    // Every live create reads back by id, and every acknowledged delete reads back as null.
    let mut lookups: Vec<(&str, Option<&str>)> = live
        .iter()
        .map(|(_, c)| (c.id.as_str(), Some(c.purchased_at.as_str())))
        .collect();
    lookups.extend(deleted.iter().map(|c| (c.id.as_str(), None)));
    for chunk in lookups.chunks(100) {
        let ids: Vec<&str> = chunk.iter().map(|(id, _)| *id).collect();
        let body = match ctx
            .api
            .post(&mut rec, Op::Page, NODES, json!({ "ids": ids }))
            .await
        {
            Ok(body) => body,
            Err(f) => {
                ctx.failures.add(f);
                continue;
            }
        };
        let nodes = body["data"]["nodes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if nodes.len() != chunk.len() {
            ctx.failures.add(failure(
                "readback-shape",
                format!("{} ids, {} nodes", chunk.len(), nodes.len()),
            ));
            continue;
        }
        for ((id, at), node) in chunk.iter().zip(&nodes) {
            match at {
                Some(at) if node["id"] != json!(id) || node["purchasedAt"] != json!(at) => {
                    ctx.failures.add(failure(
                        "readback-created-missing",
                        format!("{id} at {at}: {node}"),
                    ));
                }
                None if !node.is_null() => ctx
                    .failures
                    .add(failure("readback-deleted-present", format!("{id}: {node}"))),
                _ => {}
            }
        }
    }

    // A last walk of each user holds exactly the seeded purchases and the live created ones.
    let mut report = Report::default();
    for user in 0..USERS {
        let spec = WalkSpec {
            target: Target::Purchases {
                user,
                paid_only: false,
            },
            desc: false,
            backward: false,
            k: 100,
        };
        let stop = Instant::now() + Duration::from_secs(30);
        let items = match walk(ctx, &mut report, &spec, stop).await {
            Ok(Some(items)) => items,
            Ok(None) => {
                ctx.failures
                    .add(failure("final-walk", "not finished in time".to_owned()));
                continue;
            }
            Err(f) => {
                ctx.failures.add(f);
                continue;
            }
        };
        let got: BTreeMap<String, String> = items
            .iter()
            .map(|n| {
                (
                    str_of(n, "purchasedAt").to_owned(),
                    str_of(n, "id").to_owned(),
                )
            })
            .collect();
        let mut want: BTreeMap<String, String> = ctx.expected.purchases[user]
            .keys()
            .map(|at| (at.clone(), got.get(at).cloned().unwrap_or_default()))
            .collect();
        want.extend(
            live.iter()
                .filter(|(u, _)| *u == user)
                .map(|(_, c)| (c.purchased_at.clone(), c.id.clone())),
        );
        if got != want || items.len() != want.len() {
            let extra: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).collect();
            let missing: Vec<_> = want.keys().filter(|k| !got.contains_key(*k)).collect();
            ctx.failures.add(failure(
                "final-walk",
                format!(
                    "user {user}: {} items, want {}; extra {extra:?}, missing {missing:?}",
                    items.len(),
                    want.len()
                ),
            ));
        }
    }
    (creates, deleted.len())
}

// ----- RSS

#[derive(Debug, Default)]
struct Rss {
    /// (seconds since the load started, VmRSS in KiB)
    samples: Vec<(f64, u64)>,
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

async fn sample_rss(pid: u32, started: Instant, stop: Arc<AtomicBool>) -> Rss {
    let mut rss = Rss::default();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        if let Some(kib) = rss_kib(pid) {
            let t = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
            rss.samples.push((t, kib));
        }
    }
    rss
}

/// Growth allowed from the middle third's peak to the last third's: 5% plus 2 MiB.
///
/// Why: the working set is the same throughout (writers keep their live purchases between
/// `LOW` and `HIGH`, walkers read the same partitions, and at most `walkers + writers` requests
/// are in flight), so once the first third has warmed the server up (threads, connections,
/// allocator arenas) its RSS should only wander by what the allocator keeps or returns. Measured
/// on 2 cores: under 0.5 MiB between the middle and last thirds, in the suite's debug runs
/// (34 to 37 MiB) and in 60 s and 300 s release runs with 16 walkers (about 22 MiB). The bound
/// is some 3 MiB at those sizes, several times the noise. A leak grows with the request count:
/// a third of a 300 s release run is over 40,000 requests, so a leak of about 100 bytes a
/// request breaks the bound; a third of the 20 s debug run is about 700, so the suite only
/// catches leaks of several KiB a request.
fn rss_limit(middle_max: u64) -> u64 {
    middle_max + middle_max / 20 + 2 * 1024
}

/// After the first third of the run (warm-up), the last third's peak RSS stays within
/// [`rss_limit`] of the middle third's.
fn check_rss(secs: u64, rss: &Rss) {
    let third = secs as f64 / 3.0;
    let peak = |from: f64, to: f64| {
        let window: Vec<u64> = rss
            .samples
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .map(|(_, k)| *k)
            .collect();
        assert!(
            window.len() >= 2,
            "too few RSS samples between {from:.1} s and {to:.1} s: {:?}",
            rss.samples
        );
        window.into_iter().max().unwrap_or_default()
    };
    let middle = peak(third, 2.0 * third);
    let last = peak(2.0 * third, secs as f64 + 0.5);
    assert!(
        last <= rss_limit(middle),
        "RSS grew: the last third peaked at {last} KiB, the middle third at {middle} KiB \
         (allowed up to {} KiB); samples (s, KiB): {:?}",
        rss_limit(middle),
        rss.samples
    );
}

// ----- Summary

struct Summary {
    line: String,
    json: Value,
}

/// Nearest-rank percentile of sorted latencies, in milliseconds.
fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

fn latency_json(latencies: &[u32]) -> Value {
    let mut sorted = latencies.to_vec();
    sorted.sort_unstable();
    json!({
        "requests": sorted.len(),
        "p50_ms": percentile(&sorted, 50.0),
        "p99_ms": percentile(&sorted, 99.0),
        "max_ms": percentile(&sorted, 100.0),
    })
}

fn summarize(
    settings: &Settings,
    report: &Report,
    elapsed: Duration,
    (creates, deletes): (usize, usize),
    rss: &Rss,
    failures: &BTreeMap<&'static str, u64>,
) -> Summary {
    let mut all: Vec<u32> = report.rec.latencies.values().flatten().copied().collect();
    all.sort_unstable();
    let total = all.len() as u64 + report.rec.transport_errors;
    // Throughput while every task was busy: responses completed before the deadline.
    let rate = report.rec.in_window as f64 / settings.secs as f64;
    let (p50, p99, max) = (
        percentile(&all, 50.0),
        percentile(&all, 99.0),
        percentile(&all, 100.0),
    );
    let by_op: BTreeMap<String, Value> = report
        .rec
        .latencies
        .iter()
        .map(|(op, l)| (format!("{op:?}").to_lowercase(), latency_json(l)))
        .collect();
    let walks: u64 = report.walks.values().sum();
    let kib = |i: Option<&(f64, u64)>| i.map_or(0, |(_, k)| *k);
    let (rss_first, rss_last) = (kib(rss.samples.first()), kib(rss.samples.last()));
    let rss_max = rss
        .samples
        .iter()
        .map(|(_, k)| *k)
        .max()
        .unwrap_or_default();
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let line = format!(
        "{rate:.0} req/s ({} requests in the first {} s, {total} in {:.1} s in all); p50 {p50:.1} ms, p99 {p99:.1} ms, \
         max {max:.1} ms; {walks} walks ({} pages, {} unfinished); {creates} creates and \
         {deletes} deletes acknowledged; RSS first {rss_first} KiB, last {rss_last} KiB, max \
         {rss_max} KiB; {} walkers, {} writers, {profile} build, seed {}",
        report.rec.in_window,
        settings.secs,
        elapsed.as_secs_f64(),
        report.pages,
        report.unfinished,
        settings.walkers,
        settings.writers,
        settings.seed,
    );
    let json = json!({
        "profile": profile,
        "settings": {
            "secs": settings.secs,
            "walkers": settings.walkers,
            "writers": settings.writers,
            "seed": settings.seed,
        },
        "elapsed_s": elapsed.as_secs_f64(),
        "requests": total,
        "requests_before_deadline": report.rec.in_window,
        "req_per_s": rate,
        "p50_ms": p50,
        "p99_ms": p99,
        "max_ms": max,
        "by_operation": by_op,
        "statuses": report.rec.statuses.iter().map(|(s, n)| (s.to_string(), *n)).collect::<BTreeMap<_, _>>(),
        "transport_errors": report.rec.transport_errors,
        "walks": report.walks,
        "pages": report.pages,
        "unfinished_walks": report.unfinished,
        "failures": failures,
        "creates_acknowledged": creates,
        "deletes_acknowledged": deletes,
        "rss_kib": {
            "first": rss_first,
            "last": rss_last,
            "max": rss_max,
            "samples": rss.samples,
        },
    });
    Summary { line, json }
}

fn write_summary(summary: &Value) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/load");
    std::fs::create_dir_all(&dir).expect("creating target/load");
    let path = dir.join("summary.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(summary).expect("summary JSON"),
    )
    .expect("writing the load summary");
    eprintln!("load summary written to {}", path.display());
}
