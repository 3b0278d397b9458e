//! Live data's costs, against this build's release `dynarelay serve` over DynamoDB Local's
//! streams, serving the shop (`examples/shop/dynarelay.toml`, whose `purchasesChanged(user:)`
//! follows `User.purchases`); clients speak `graphql-transport-ws` over loopback sockets and
//! purchases are written with aws-sdk-dynamodb from this process, as any program would.
//!
//! - **Latency**, write to subscriber: one subscriber, 200 purchases written one at a time at
//!   random moments; the time from sending the `PutItem` to the change's arrival, at the default
//!   poll interval (250 ms) and at 10 ms, where what remains is DynamoDB Local making the record
//!   readable, and ours.
//! - **CPU per delivered event**, with 1, 100 and 1,000 subscribers to the same connection: the
//!   server's CPU (its threads' time on CPU, in nanoseconds, from `/proc/<pid>/task/*/schedstat`)
//!   while purchases are written until every subscriber has every change, less what the server
//!   spends idle with the same subscribers over the same time (the stream reader's polling),
//!   over the changes delivered.
//! - **Memory**: the server's RSS after 1,000 sockets that sent `connection_init`, then after
//!   10,000 idle subscriptions on 100 of them (100 each, the most a socket runs), started one
//!   socket at a time.
//! - **Queries beside live subscriptions**: the server's CPU per page of 20 purchases from 4
//!   clients, with no subscription and with 1,000 idle ones, in alternating rounds.
//!
//! - **Through Redis**, as a fleet runs: a relay (`dynarelay relay`, the release binary) reads
//!   the stream and publishes to a real `redis-server`, and the server reads Redis: the same
//!   latency (at the relay's poll interval) and CPU per delivered change with 1,000
//!   subscribers; and the relay's own throughput: 2,000 purchases written while no relay runs,
//!   then the changes per second a relay started again publishes from its checkpoint, and the
//!   Redis memory those 2,000 entries take.
//!
//! Run: `scripts/bench-live` (it starts DynamoDB Local and `redis-server`:
//! `DYNARELAY_BENCH_DYNAMODB_ENDPOINT`, `DYNARELAY_BENCH_REDIS_URL`).

#[path = "../tests/api/local_aws.rs"]
mod local_aws;
#[path = "compare/procfs.rs"]
#[allow(dead_code)]
mod procfs;
#[path = "compare/server.rs"]
#[allow(dead_code)]
mod server;
#[path = "compare/stats.rs"]
#[allow(dead_code)]
mod stats;

/// What `server.rs` takes from the comparison's Node reference: child processes that talk only
/// to DynamoDB Local.
mod peer {
    pub(super) fn loopback_aws<'c>(
        command: &'c mut std::process::Command,
        endpoint: &str,
    ) -> &'c mut std::process::Command {
        command
            .env_clear()
            .envs(super::local_aws::local_aws_env(endpoint))
    }
}

use std::{
    collections::HashMap,
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, ensure};
use async_graphql::futures_util::{SinkExt, StreamExt, stream::SplitSink};
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest, http::HeaderValue};

use procfs::{cpu_time, rss_kib};
use server::Server;
use stats::percentile;

const MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/shop/dynarelay.toml");
const USER: &str = "live-bench";
/// The most operations one socket runs (the server's cap).
const PER_SOCKET: usize = 100;

const FOLLOW: &str =
    "subscription($user: ID!) { purchasesChanged(user: $user) { kind edge { node { amount } } } }";
const PAGE: &str = "query($user: String!) {
  user(userId: $user) { purchases(first: 20) { edges { cursor node { purchasedAt amount } } } } }";

fn main() -> anyhow::Result<()> {
    // `cargo bench` passes `--bench`; nothing else is taken.
    let endpoint = std::env::var("DYNARELAY_BENCH_DYNAMODB_ENDPOINT")
        .context("DYNARELAY_BENCH_DYNAMODB_ENDPOINT is not set: run scripts/bench-live")?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(&endpoint))
}

/// The shop's tables under a prefix of their own, a user and 40 purchases of theirs.
struct Shop {
    endpoint: String,
    prefix: String,
    client: aws_sdk_dynamodb::Client,
    /// Amounts written so far: each write's amount is its number, so that its change is known.
    written: AtomicU64,
}

impl Shop {
    async fn create(endpoint: &str) -> anyhow::Result<Self> {
        let prefix = format!("live{}_", std::process::id());
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_dynarelay"));
        let status = peer::loopback_aws(&mut command, endpoint)
            .env("DYNARELAY_MODEL", MODEL)
            .env("DYNARELAY_TABLE_PREFIX", &prefix)
            .args(["tables", "create"])
            .stdout(std::process::Stdio::null())
            .status()?;
        ensure!(status.success(), "dynarelay tables create failed");
        let shop = Self {
            endpoint: endpoint.to_owned(),
            client: dynarelay::dynamo::client_for_local(endpoint),
            prefix,
            written: AtomicU64::new(1_000_000),
        };
        shop.client
            .put_item()
            .table_name(format!("{}Users", shop.prefix))
            .item("userId", AttributeValue::S(USER.to_owned()))
            .item("name", AttributeValue::S("Live".to_owned()))
            .send()
            .await?;
        for _ in 0..40 {
            shop.write().await?;
        }
        Ok(shop)
    }

    /// Writes the user's next purchase; its amount.
    async fn write(&self) -> anyhow::Result<u64> {
        let n = self.written.fetch_add(1, Ordering::Relaxed);
        let s = |v: &str| AttributeValue::S(v.to_owned());
        let num = |v: u64| AttributeValue::N(v.to_string());
        self.client
            .put_item()
            .table_name(format!("{}Purchases", self.prefix))
            .item("userId", s(USER))
            .item("purchasedAt", num(1_800_000_000_000 + n))
            .item("sku", s("SKU-00001"))
            .item("quantity", num(1))
            .item("amount", num(n))
            .item("status", s("PAID"))
            .send()
            .await?;
        Ok(n)
    }

    /// A server over these tables, reading shards that had nothing new every `poll_ms`.
    async fn serve(&self, poll_ms: u64) -> anyhow::Result<Served> {
        self.serve_from(poll_ms, None).await
    }

    /// [`Shop::serve`], reading changes from the Redis at `redis` (a relay's) when given.
    async fn serve_from(&self, poll_ms: u64, redis: Option<&Relay>) -> anyhow::Result<Served> {
        let poll = poll_ms.to_string();
        let mut env = vec![
            ("DYNARELAY_STREAM_POLL_INTERVAL_MS", poll.as_str()),
            ("DYNARELAY_MAX_SUBSCRIPTIONS", "20000"),
            ("DYNARELAY_MAX_CONNECTIONS", "20000"),
        ];
        if let Some(relay) = redis {
            env.push(("DYNARELAY_REDIS_URL", relay.redis.as_str()));
        }
        let server = Server::start_with(
            Path::new(env!("CARGO_BIN_EXE_dynarelay")),
            &self.endpoint,
            &self.prefix,
            MODEL,
            &env,
        )?;
        server.wait_ready().await?;
        let http = reqwest::Client::new();
        let url = format!("http://{}/graphql", server.address);
        let answer: Value = http
            .post(&url)
            .json(
                &json!({ "query": "query($u: String!) { user(userId: $u) { id } }",
                           "variables": { "u": USER } }),
            )
            .send()
            .await?
            .json()
            .await?;
        let user = answer["data"]["user"]["id"]
            .as_str()
            .with_context(|| format!("no user: {answer}"))?
            .to_owned();
        Ok(Served {
            server,
            http,
            url,
            user,
        })
    }
}

/// A server, its GraphQL URL and the user's global id.
struct Served {
    server: Server,
    http: reqwest::Client,
    url: String,
    user: String,
}

impl Served {
    fn cpu(&self) -> anyhow::Result<Duration> {
        cpu_time(self.server.pid())
    }

    fn rss_kib(&self) -> anyhow::Result<u64> {
        rss_kib(self.server.pid())
    }

    /// The server's `dynarelay_subscriptions` gauge.
    async fn subscriptions(&self) -> anyhow::Result<f64> {
        let text = self
            .http
            .get(format!("http://{}/metrics", self.server.address))
            .send()
            .await?
            .text()
            .await?;
        Ok(text
            .lines()
            .find_map(|l| l.strip_prefix("dynarelay_subscriptions "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0))
    }

    /// One page of the user's purchases.
    async fn page(&self) -> anyhow::Result<()> {
        let answer: Value = self
            .http
            .post(&self.url)
            .json(&json!({ "query": PAGE, "variables": { "user": USER } }))
            .send()
            .await?
            .json()
            .await?;
        ensure!(answer.get("errors").is_none(), "{answer}");
        Ok(())
    }
}

/// When each subscription received each amount, shared by the sockets' reading tasks.
#[derive(Default)]
struct Arrivals {
    /// Changes received, over every subscription.
    total: AtomicU64,
    /// Subscriptions that have received anything.
    placed: AtomicU64,
    /// The moment each amount first arrived (at any subscription).
    first: Mutex<HashMap<u64, Instant>>,
}

/// A socket after `connection_init` and its acknowledgement; its reading task, once it runs
/// subscriptions, counts their changes into `arrivals`.
struct Socket {
    sink: SplitSink<
        tokio_tungstenite::WebSocketStream<
            tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
        >,
        Message,
    >,
    reader: tokio::task::JoinHandle<()>,
}

impl Socket {
    async fn open(served: &Served, arrivals: &Arc<Arrivals>) -> anyhow::Result<Self> {
        let mut request = served
            .url
            .replace("http://", "ws://")
            .into_client_request()?;
        request.headers_mut().insert(
            "sec-websocket-protocol",
            HeaderValue::from_static("graphql-transport-ws"),
        );
        let (socket, _) = tokio_tungstenite::connect_async(request).await?;
        let (mut sink, mut stream) = socket.split();
        sink.send(Message::text(
            json!({ "type": "connection_init" }).to_string(),
        ))
        .await?;
        let ack = stream.next().await.context("closed before the ack")??;
        ensure!(ack.to_text()?.contains("connection_ack"), "no ack: {ack:?}");
        let arrivals = Arc::clone(arrivals);
        let reader = tokio::spawn(async move {
            let mut seen = std::collections::HashSet::new();
            while let Some(Ok(message)) = stream.next().await {
                let Message::Text(text) = message else {
                    continue;
                };
                let at = Instant::now();
                let Ok(message) = serde_json::from_str::<Value>(text.as_str()) else {
                    continue;
                };
                if message["type"] != "next" {
                    continue;
                }
                let amount =
                    &message["payload"]["data"]["purchasesChanged"]["edge"]["node"]["amount"];
                if let Some(amount) = amount.as_str().and_then(|a| a.parse::<u64>().ok()) {
                    arrivals
                        .first
                        .lock()
                        .expect("arrivals")
                        .entry(amount)
                        .or_insert(at);
                }
                if seen.insert(message["id"].as_str().unwrap_or_default().to_owned()) {
                    arrivals.placed.fetch_add(1, Ordering::Relaxed);
                }
                arrivals.total.fetch_add(1, Ordering::Relaxed);
            }
        });
        Ok(Self { sink, reader })
    }

    async fn subscribe(&mut self, id: usize, user: &str) -> anyhow::Result<()> {
        let message = json!({ "id": id.to_string(), "type": "subscribe",
            "payload": { "query": FOLLOW, "variables": { "user": user } } });
        self.sink.send(Message::text(message.to_string())).await?;
        Ok(())
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// `n` subscriptions to the user's purchases, 100 a socket, all placed in the stream: purchases
/// are written until each has received one, then until every change written has arrived.
async fn subscribers(
    shop: &Shop,
    served: &Served,
    n: usize,
) -> anyhow::Result<(Vec<Socket>, Arc<Arrivals>)> {
    let arrivals = Arc::new(Arrivals::default());
    let mut sockets = Vec::new();
    for first in (0..n).step_by(PER_SOCKET) {
        let mut socket = Socket::open(served, &arrivals).await?;
        for id in first..(first + PER_SOCKET).min(n) {
            socket.subscribe(id, &served.user).await?;
        }
        sockets.push(socket);
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while arrivals.placed.load(Ordering::Relaxed) < n as u64 {
        ensure!(
            Instant::now() < deadline,
            "subscriptions not placed in 120 s"
        );
        shop.write().await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    settle(&arrivals, None).await?;
    Ok((sockets, arrivals))
}

/// Waits until `arrivals` holds `total` changes, or (with `None`) until none arrives for a
/// second.
async fn settle(arrivals: &Arrivals, total: Option<u64>) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut last = arrivals.total.load(Ordering::Relaxed);
    let mut quiet_since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = arrivals.total.load(Ordering::Relaxed);
        match total {
            Some(total) if now >= total => return Ok(()),
            None if now == last && quiet_since.elapsed() > Duration::from_secs(1) => return Ok(()),
            _ => {}
        }
        if now != last {
            last = now;
            quiet_since = Instant::now();
        }
        ensure!(
            Instant::now() < deadline,
            "{now} changes arrived of {total:?}"
        );
    }
}

/// A seedable generator of waits (SplitMix64), so that every run writes at the same moments.
struct Jitter(u64);

impl Jitter {
    fn below(&mut self, limit: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % limit.max(1)
    }
}

/// Write-to-subscriber latency at poll interval `poll_ms` (the relay's, through Redis when
/// `relay` is given): (p50, p99), and the `PutItem`'s own.
async fn latency(
    shop: &Shop,
    poll_ms: u64,
    relay: Option<&Relay>,
) -> anyhow::Result<[(Duration, Duration); 2]> {
    let served = shop.serve_from(poll_ms, relay).await?;
    let (_sockets, arrivals) = subscribers(shop, &served, 1).await?;
    let mut jitter = Jitter(poll_ms);
    let (mut delivered, mut puts) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(jitter.below(poll_ms))).await;
        let sent = Instant::now();
        let amount = shop.write().await?;
        puts.push(sent.elapsed());
        let deadline = Instant::now() + Duration::from_secs(30);
        let arrived = loop {
            if let Some(at) = arrivals.first.lock().expect("arrivals").get(&amount) {
                break *at;
            }
            ensure!(Instant::now() < deadline, "purchase {amount} never arrived");
            tokio::time::sleep(Duration::from_micros(200)).await;
        };
        delivered.push(arrived - sent);
    }
    Ok([
        (
            percentile(&mut delivered, 0.5),
            percentile(&mut delivered, 0.99),
        ),
        (percentile(&mut puts, 0.5), percentile(&mut puts, 0.99)),
    ])
}

/// Server CPU per delivered change with `n` subscribers, `writes` purchases (read from Redis
/// when `relay` is given): the busy CPU less the idle CPU of the same subscribers over the same
/// time.
async fn cpu_per_event(
    shop: &Shop,
    n: usize,
    writes: u64,
    relay: Option<&Relay>,
) -> anyhow::Result<Duration> {
    let served = shop.serve_from(250, relay).await?;
    let (_sockets, arrivals) = subscribers(shop, &served, n).await?;
    let start = arrivals.total.load(Ordering::Relaxed);
    let (cpu, wall) = (served.cpu()?, Instant::now());
    for _ in 0..writes {
        shop.write().await?;
    }
    settle(&arrivals, Some(start + writes * n as u64)).await?;
    let (busy, took) = (served.cpu()?.saturating_sub(cpu), wall.elapsed());
    let idle_from = served.cpu()?;
    tokio::time::sleep(took).await;
    let idle = served.cpu()?.saturating_sub(idle_from);
    let events = writes * n as u64;
    Ok(busy.saturating_sub(idle) / u32::try_from(events)?)
}

/// RSS per socket (after `connection_init`) and per idle subscription, in KiB.
async fn memory(shop: &Shop) -> anyhow::Result<(f64, f64)> {
    const SOCKETS: usize = 1_000;
    const SUBSCRIPTIONS: usize = 10_000;
    let served = shop.serve(250).await?;
    for _ in 0..20 {
        served.page().await?;
    }
    let before = served.rss_kib()?;
    let arrivals = Arc::new(Arrivals::default());
    let mut sockets = Vec::new();
    for _ in 0..SOCKETS {
        sockets.push(Socket::open(&served, &arrivals).await?);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let with_sockets = served.rss_kib()?;
    for (i, socket) in sockets
        .iter_mut()
        .take(SUBSCRIPTIONS / PER_SOCKET)
        .enumerate()
    {
        for j in 0..PER_SOCKET {
            socket.subscribe(i * PER_SOCKET + j, &served.user).await?;
        }
        // One socket's subscriptions start at a time, as clients arrive over time: what is
        // measured is what subscriptions hold once running, not the allocator's high-water
        // mark from thousands of them starting (and reading) at once.
        let running = ((i + 1) * PER_SOCKET) as f64;
        let deadline = Instant::now() + Duration::from_secs(60);
        while served.subscriptions().await? < running {
            ensure!(
                Instant::now() < deadline,
                "subscriptions not running in 60 s"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let with_subscriptions = served.rss_kib()?;
    Ok((
        (with_sockets as f64 - before as f64) / SOCKETS as f64,
        (with_subscriptions as f64 - with_sockets as f64) / SUBSCRIPTIONS as f64,
    ))
}

/// Server CPU per page from 4 clients: without subscriptions and with 1,000 idle ones, in 5
/// alternating rounds of 2,000 pages each.
async fn pages_beside_subscriptions(shop: &Shop) -> anyhow::Result<(Duration, Duration)> {
    const PAGES: usize = 2_000;
    const ROUNDS: u32 = 5;
    const CLIENTS: usize = 4;
    let served = Arc::new(shop.serve(250).await?);
    let round = async |served: &Arc<Served>| -> anyhow::Result<Duration> {
        let from = served.cpu()?;
        let mut clients = tokio::task::JoinSet::new();
        for _ in 0..CLIENTS {
            let served = Arc::clone(served);
            clients.spawn(async move {
                for _ in 0..PAGES / CLIENTS {
                    served.page().await?;
                }
                anyhow::Ok(())
            });
        }
        while let Some(done) = clients.join_next().await {
            done??;
        }
        Ok(served.cpu()?.saturating_sub(from))
    };
    round(&served).await?; // warm
    let (mut without, mut with) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..ROUNDS {
        without += round(&served).await?;
        let (sockets, _) = subscribers(shop, &served, 1_000).await?;
        with += round(&served).await?;
        drop(sockets);
        let deadline = Instant::now() + Duration::from_secs(60);
        while served.subscriptions().await? > 0.0 {
            // Each ends when its next change finds its socket gone.
            shop.write().await?;
            ensure!(Instant::now() < deadline, "subscriptions still running");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let per_page =
        |cpu: Duration| -> anyhow::Result<Duration> { Ok(cpu / (ROUNDS * u32::try_from(PAGES)?)) };
    Ok((per_page(without)?, per_page(with)?))
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// Prints the table on stdout: the bench's output.
#[allow(clippy::print_stdout)]
fn print_table(rows: &[(String, String)]) {
    println!("| measure | value |\n|---|---|");
    for (measure, value) in rows {
        println!("| {measure} | {value} |");
    }
}

async fn run(endpoint: &str) -> anyhow::Result<()> {
    let shop = Shop::create(endpoint).await?;
    let mut rows: Vec<(String, String)> = Vec::new();
    for poll in [250, 10] {
        let [(p50, p99), (put50, put99)] = latency(&shop, poll, None).await?;
        rows.push((
            format!("write to subscriber, poll interval {poll} ms: p50 / p99"),
            format!("{} / {}", ms(p50), ms(p99)),
        ));
        rows.push((
            format!("of which the `PutItem` (poll interval {poll} ms): p50 / p99"),
            format!("{} / {}", ms(put50), ms(put99)),
        ));
        eprintln!("latency at {poll} ms: done");
    }
    for (n, writes) in [(1, 1_000), (100, 200), (1_000, 50)] {
        let cpu = cpu_per_event(&shop, n, writes, None).await?;
        rows.push((
            format!("server CPU per delivered change, {n} subscriber(s), {writes} writes"),
            us(cpu),
        ));
        eprintln!("CPU per change with {n}: done");
    }
    let (per_socket, per_subscription) = memory(&shop).await?;
    rows.push((
        "RSS per WebSocket connection (1,000 after `connection_init`)".to_owned(),
        format!("{per_socket:.1} KiB"),
    ));
    rows.push((
        "RSS per idle subscription (10,000 on 100 sockets)".to_owned(),
        format!("{per_subscription:.1} KiB"),
    ));
    eprintln!("memory: done");
    let (without, with) = pages_beside_subscriptions(&shop).await?;
    rows.push((
        "server CPU per page of 20, no subscription / 1,000 idle subscriptions".to_owned(),
        format!(
            "{} / {} ({:+.1}%)",
            us(without),
            us(with),
            (with.as_secs_f64() / without.as_secs_f64() - 1.0) * 100.0
        ),
    ));
    through_redis(&shop, &mut rows).await?;
    print_table(&rows);
    Ok(())
}

/// `dynarelay relay` over the shop's tables into the Redis at `redis`, with its leases in a
/// lease table of its own (`lease_table`), killed on drop (or stopped by SIGTERM).
struct Relay {
    child: std::process::Child,
    redis: String,
}

impl Relay {
    /// Starts it and waits until it holds the purchases stream's lease.
    fn start(shop: &Shop, redis: &str, lease_table: &str, poll_ms: u64) -> anyhow::Result<Self> {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_dynarelay"));
        let mut child = peer::loopback_aws(&mut command, &shop.endpoint)
            .env("DYNARELAY_MODEL", MODEL)
            .env("DYNARELAY_TABLE_PREFIX", &shop.prefix)
            .env("DYNARELAY_REDIS_URL", redis)
            .env("DYNARELAY_LEASE_TABLE", lease_table)
            .env("DYNARELAY_STREAM_POLL_INTERVAL_MS", poll_ms.to_string())
            .env("RUST_LOG", "warn,dynarelay=info")
            .arg("relay")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        let purchases = format!("{}Purchases", shop.prefix);
        let (tx, rx) = std::sync::mpsc::channel();
        let seen = server::LastLines::follow(&mut child, move |line| {
            if line.contains("took a shard's lease") && line.contains(&purchases) {
                let _ = tx.send(());
            }
        })?;
        let relay = Self {
            child,
            redis: redis.to_owned(),
        };
        rx.recv_timeout(Duration::from_secs(60)).map_err(|_| {
            anyhow::anyhow!("the relay took no lease; its last output:\n{}", seen.text())
        })?;
        Ok(relay)
    }

    /// Stops it as an orchestrator does (SIGTERM): it lets go of its lease.
    fn stop(mut self) -> anyhow::Result<()> {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()?;
        ensure!(status.success(), "kill -TERM failed");
        let exit = self.child.wait()?;
        ensure!(exit.success(), "the relay exited with {exit}");
        Ok(())
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The same measures through Redis, as a fleet runs (a relay reads the stream and publishes to
/// Redis, the server reads Redis), and the relay's own: the changes per second it carries from
/// a backlog in the stream, and the Redis memory those changes take.
async fn through_redis(shop: &Shop, rows: &mut Vec<(String, String)>) -> anyhow::Result<()> {
    let redis = std::env::var("DYNARELAY_BENCH_REDIS_URL")
        .context("DYNARELAY_BENCH_REDIS_URL is not set: run scripts/bench-live")?;
    for poll in [250, 10] {
        let relay = Relay::start(shop, &redis, &format!("leases-{poll}"), poll)?;
        let [(p50, p99), _] = latency(shop, poll, Some(&relay)).await?;
        rows.push((
            format!("through Redis: write to subscriber, relay poll interval {poll} ms: p50 / p99"),
            format!("{} / {}", ms(p50), ms(p99)),
        ));
        eprintln!("latency through Redis at {poll} ms: done");
    }
    let relay = Relay::start(shop, &redis, "leases-cpu", 250)?;
    let cpu = cpu_per_event(shop, 1_000, 50, Some(&relay)).await?;
    rows.push((
        "through Redis: instance CPU per delivered change, 1,000 subscribers, 50 writes".to_owned(),
        us(cpu),
    ));
    eprintln!("CPU per change through Redis: done");
    relay.stop()?;

    // A backlog of changes in the stream while no relay runs; the relay started again reads
    // them from its checkpoint as fast as it can publish them.
    const BACKLOG: u64 = 2_000;
    let client = redis::Client::open(redis.as_str())?;
    let connection = client.get_multiplexed_async_connection().await?;
    let key = dynarelay::stream::redis_feed::key(&format!("{}Purchases", shop.prefix));
    let length = |mut c: redis::aio::MultiplexedConnection, key: String| async move {
        redis::cmd("XLEN")
            .arg(&key)
            .query_async::<u64>(&mut c)
            .await
    };
    let used = |mut c: redis::aio::MultiplexedConnection| async move {
        let info: String = redis::cmd("INFO").arg("memory").query_async(&mut c).await?;
        Ok::<u64, redis::RedisError>(
            info.lines()
                .find_map(|l| l.strip_prefix("used_memory:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0),
        )
    };
    for _ in 0..BACKLOG {
        shop.write().await?;
    }
    let (before, memory_before) = (
        length(connection.clone(), key.clone()).await?,
        used(connection.clone()).await?,
    );
    let started = Instant::now();
    let relay = Relay::start(shop, &redis, "leases-cpu", 250)?;
    let mut first: Option<Instant> = None;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let now = length(connection.clone(), key.clone()).await?;
        if now > before && first.is_none() {
            first = Some(Instant::now());
        }
        if now >= before + BACKLOG {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "{} of {BACKLOG} published",
            now - before
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let carried = first.unwrap_or(started).elapsed();
    let memory = used(connection.clone())
        .await?
        .saturating_sub(memory_before);
    drop(relay);
    rows.push((
        format!("relay: changes per second from a backlog of {BACKLOG} in the stream"),
        format!("{:.0}", BACKLOG as f64 / carried.as_secs_f64()),
    ));
    rows.push((
        "Redis memory per 1,000 changes buffered (a purchase's keys and new image)".to_owned(),
        format!(
            "{:.0} KiB",
            memory as f64 / BACKLOG as f64 * 1_000.0 / 1024.0
        ),
    ));
    Ok(())
}
