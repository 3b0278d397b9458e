//! Load: walkers page through connections to their end while writers create and delete
//! purchases, all against the real `dynarelay serve` binary over loopback HTTP, for a bounded
//! time.
//!
//! The suite runs a short load: `DYNARELAY_LOAD_SECS` (default 20), `DYNARELAY_LOAD_WALKERS`
//! (default 8) and `DYNARELAY_LOAD_WRITERS` (default 2); `DYNARELAY_LOAD_SEED` picks the random
//! choices (default: from the clock; it is printed). `scripts/load` runs a long load in release
//! mode. Every run prints a summary (requests, req/s, p50, p99, max, walks, writes, RSS) and
//! writes it to `target/load/summary.json`. The server runs without per-caller rate limits:
//! every walker and writer comes from 127.0.0.1, so the limits would cap the run at a rate that
//! a fast machine passes, failing it by the machine's speed (`tests/api/rate_limits.rs` tests
//! the limits); `DYNARELAY_LOAD_RATE_LIMITS=on` keeps the default limits and applies them to
//! the one address. The server's DynamoDB calls go through a proxy that holds each to the shop's
//! IAM policy (`FaultProxy::auditing`); `DYNARELAY_LOAD_AUDIT=off`, which `scripts/load` sets,
//! sends them straight to DynamoDB Local, so that a long run measures the server alone.
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
//! - the server is still running, and its RSS is stable: see [`check_rss`];
//! - the policy `dynarelay policy` prints for the shop allowed every DynamoDB call it made.
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
//!
//! This file holds the test, the run, its parameters and the state its tasks share; the parts of
//! the run are in `load/`: seeding (`seed.rs`), the server process (`server.rs`), the walkers
//! (`walkers.rs`), the writers (`writers.rs`), the checks after the run (`final_checks.rs`), the
//! RSS samples and their check (`rss.rs`), and the summary (`summary.rs`).

mod final_checks;
mod rss;
mod seed;
mod server;
mod summary;
mod walkers;
mod writers;

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};

use crate::{
    fault_proxy::FaultProxy,
    helpers::{endpoint, shop, unique_prefix},
};

use final_checks::final_checks;
use rss::{check_rss, sample_rss};
use seed::seed;
use server::Server;
use summary::{summarize, write_summary};
use walkers::walker;
use writers::writer;

/// Users, each with `SEEDED_PER_USER` purchases that no writer touches.
const USERS: usize = 4;
const SEEDED_PER_USER: usize = 150;
/// Seeded purchases are one minute apart from 2023-01-01; writers' explicit times fall between
/// them (see [`explicit_time`]).
const BASE_MS: i64 = 1_672_531_200_000;
const SPACING_MS: i64 = 60_000;
const CATEGORIES: usize = 2;

/// How long a walk in progress at the end of the run may take to finish; after it, it is left
/// unfinished and unchecked.
const DRAIN: Duration = Duration::from_secs(30);
/// The client-side limit on one request (the server's own is 15 s, and answers 504).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

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
    let audit = match std::env::var("DYNARELAY_LOAD_AUDIT").as_deref() {
        Ok("off") => None,
        _ => Some(FaultProxy::auditing(&endpoint, shop(), &prefix).await),
    };
    let dynamodb = audit.as_ref().map_or(endpoint.clone(), FaultProxy::url);
    let mut server = tokio::task::block_in_place(|| Server::start(&dynamodb, &prefix));
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
    if let Some(audit) = audit {
        assert_eq!(audit.refused(), Vec::<String>::new());
    }
    drop(server);
}

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

/// Epoch milliseconds as the API writes a `DateTime`.
fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .expect("a representable time")
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
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

fn str_of<'a>(node: &'a Value, field: &str) -> &'a str {
    node[field].as_str().unwrap_or("")
}
