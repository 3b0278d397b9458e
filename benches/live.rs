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
//! - **Subscriptions on their own partitions**, as signed-in users hold them: N idle
//!   subscriptions (`DYNARELAY_BENCH_PARTITIONS`, counts separated by commas; default
//!   `0,1000,10000,100000`), each to a *different* user's `purchasesChanged` (users written
//!   first, 25 a `BatchWriteItem`), 100 a socket (the per-socket cap, so 100,000 take 1,000
//!   sockets), and one more subscriber on the user written; a fresh server for each N, with
//!   `--max-subscriptions` and `--max-connections` raised to fit (the per-caller cap holds
//!   only verified callers, and these are anonymous), and this process's open-file limit raised
//!   to its hard limit if the sockets need it (it fails, saying so, if that is not enough). For
//!   each N: the server's idle CPU per second, then its CPU per write, writes 20 ms apart and
//!   one per reader round (each written once the previous one has arrived), from the first
//!   write until the server is quiet again (every subscription's handling counts, not only the
//!   watched one's), less its idle CPU over that time. At the largest N: RSS per idle socket (all sockets after
//!   `connection_init` first) and per idle subscription (then one socket's subscriptions
//!   started at a time, as in the memory row); then a burst of 3,000 writes, 64 `PutItem`s in
//!   flight: the idle subscriptions that ended (an `error` or `complete`, with the errors'
//!   codes), the changes that reached the written user's subscriber, and their write to
//!   delivery p50 / p99. Through Redis (a relay, and the server reading Redis), at N = 0 and
//!   the largest N: the instance's CPU per change that no subscriber of its concerns (200
//!   purchases of a user nobody follows, 20 ms apart, then one of the watched user's to know
//!   they were all read), measured as above. Each part waits at most minutes and fails rather
//!   than hang.
//!
//! Run: `scripts/bench-live` (it starts DynamoDB Local and `redis-server`:
//! `DYNARELAY_BENCH_DYNAMODB_ENDPOINT`, `DYNARELAY_BENCH_REDIS_URL`).
//! - **Resuming from a position**: see [`resume`].
//!
//! `DYNARELAY_BENCH_ONLY=partitions scripts/bench-live` runs the subscriptions on their own
//! partitions alone, and `DYNARELAY_BENCH_PARTITIONS=0,1000` a quick run of it;
//! `DYNARELAY_BENCH_ONLY=resume` the resumes alone.
//! - **Subscriptions arriving as a storm**: see [`storm`]; `DYNARELAY_BENCH_ONLY=storm` runs it
//!   alone, `DYNARELAY_BENCH_STORM=20000` at one count.
//!
//! `DYNARELAY_BENCH_SERVER=<path>` runs another build of `dynarelay` as the server (one with
//! another allocator, say) in every part.

#[path = "../tests/api/local_aws.rs"]
mod local_aws;
#[path = "compare/procfs.rs"]
#[allow(dead_code)]
mod procfs;
#[path = "live/resume.rs"]
mod resume;
#[path = "compare/server.rs"]
#[allow(dead_code)]
mod server;
#[path = "compare/stats.rs"]
#[allow(dead_code)]
mod stats;
#[path = "live/storm.rs"]
mod storm;

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
        self.write_for(USER).await
    }

    /// Writes a purchase of `user`'s (a user that need not exist); its amount.
    async fn write_for(&self, user: &str) -> anyhow::Result<u64> {
        let n = self.written.fetch_add(1, Ordering::Relaxed);
        let s = |v: &str| AttributeValue::S(v.to_owned());
        let num = |v: u64| AttributeValue::N(v.to_string());
        self.client
            .put_item()
            .table_name(format!("{}Purchases", self.prefix))
            .item("userId", s(user))
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
        self.serve_with(poll_ms, redis, &[]).await
    }

    /// [`Shop::serve_from`] with more environment variables (later ones win).
    async fn serve_with(
        &self,
        poll_ms: u64,
        redis: Option<&Relay>,
        extra: &[(&str, &str)],
    ) -> anyhow::Result<Served> {
        let poll = poll_ms.to_string();
        let mut env = vec![
            ("DYNARELAY_STREAM_POLL_INTERVAL_MS", poll.as_str()),
            ("DYNARELAY_MAX_SUBSCRIPTIONS", "20000"),
            ("DYNARELAY_MAX_CONNECTIONS", "20000"),
        ];
        if let Some(relay) = redis {
            env.push(("DYNARELAY_REDIS_URL", relay.redis.as_str()));
        }
        env.extend_from_slice(extra);
        // Another build of the server (another allocator, say) when given.
        let binary = std::env::var("DYNARELAY_BENCH_SERVER")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_dynarelay").to_owned());
        let server = Server::start_with(
            Path::new(&binary),
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

/// The two halves of a WebSocket to the server.
type WsStream =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

impl Served {
    /// A `graphql-transport-ws` socket to the server, after `connection_init` and its
    /// acknowledgement.
    async fn connect(
        &self,
    ) -> anyhow::Result<(
        SplitSink<WsStream, Message>,
        async_graphql::futures_util::stream::SplitStream<WsStream>,
    )> {
        let mut request = self.url.replace("http://", "ws://").into_client_request()?;
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
        Ok((sink, stream))
    }

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
    /// Subscriptions ended by the server (an `error` or `complete` message).
    ended: AtomicU64,
    /// The codes of the errors received (in `next` or `error` messages), and how many of each.
    codes: Mutex<HashMap<String, u64>>,
    /// Sockets that the server closed.
    closed: AtomicU64,
}

impl Arrivals {
    /// The errors' codes received so far, as `CODE ×count` (`none` when none).
    fn codes(&self) -> String {
        let codes = self.codes.lock().expect("codes");
        if codes.is_empty() {
            return "none".to_owned();
        }
        let mut codes: Vec<String> = codes.iter().map(|(c, n)| format!("{c} ×{n}")).collect();
        codes.sort();
        codes.join(", ")
    }

    /// Counts the codes of the GraphQL errors in `errors` (an array, or absent).
    fn count_codes(&self, errors: &Value) {
        let Some(errors) = errors.as_array() else {
            return;
        };
        let mut codes = self.codes.lock().expect("codes");
        for error in errors {
            let code = error["extensions"]["code"].as_str().unwrap_or("(no code)");
            *codes.entry(code.to_owned()).or_default() += 1;
        }
    }
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
        let (sink, mut stream) = served.connect().await?;
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
                match message["type"].as_str() {
                    Some("next") => arrivals.count_codes(&message["payload"]["errors"]),
                    Some("error") => {
                        arrivals.count_codes(&message["payload"]);
                        arrivals.ended.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Some("complete") => {
                        arrivals.ended.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    _ => continue,
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
            arrivals.closed.fetch_add(1, Ordering::Relaxed);
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
    let only = std::env::var("DYNARELAY_BENCH_ONLY").unwrap_or_default();
    ensure!(
        matches!(only.as_str(), "" | "partitions" | "resume" | "storm"),
        "DYNARELAY_BENCH_ONLY={only}: only `partitions`, `resume` and `storm` are known"
    );
    let partitions = partition_counts()?;
    let shop = Shop::create(endpoint).await?;
    let mut rows: Vec<(String, String)> = Vec::new();
    if only == "partitions" {
        own_partitions(&shop, &partitions, &mut rows).await?;
        print_table(&rows);
        return Ok(());
    }
    if only == "resume" {
        resume::resume(&shop, &mut rows).await?;
        print_table(&rows);
        return Ok(());
    }
    if only == "storm" {
        storm::storms(&shop, &mut rows).await?;
        print_table(&rows);
        return Ok(());
    }
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
    resume::resume(&shop, &mut rows).await?;
    own_partitions(&shop, &partitions, &mut rows).await?;
    storm::storms(&shop, &mut rows).await?;
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

// ---------------------------------------------------------------- subscriptions on their own partitions

/// The counts of idle subscriptions measured, each on a user of its own
/// (`DYNARELAY_BENCH_PARTITIONS`' default).
const PARTITIONS: &[usize] = &[0, 1_000, 10_000, 100_000];
/// Writes 20 ms apart ([`PACE`]) per measure of CPU per write.
const PACED_WRITES: u64 = 200;
const PACE: Duration = Duration::from_millis(20);
/// Writes one per reader round: each written once the previous one has arrived.
const ROUND_WRITES: u64 = 30;
/// How long the server's idle CPU is measured.
const IDLE: Duration = Duration::from_secs(5);
/// The burst's writes, and how many of its `PutItem`s are in flight at once.
const BURST: u64 = 3_000;
const BURST_IN_FLIGHT: usize = 64;
/// A user whose purchases no subscription follows.
const NOBODY: &str = "live-bench-nobody";

/// `DYNARELAY_BENCH_PARTITIONS` (counts separated by commas, `_` allowed in them), or
/// [`PARTITIONS`].
fn partition_counts() -> anyhow::Result<Vec<usize>> {
    counts("DYNARELAY_BENCH_PARTITIONS", PARTITIONS)
}

/// The counts the environment variable `var` lists (separated by commas, `_` allowed in them),
/// or `default`.
fn counts(var: &str, default: &[usize]) -> anyhow::Result<Vec<usize>> {
    let Ok(list) = std::env::var(var) else {
        return Ok(default.to_vec());
    };
    list.split(',')
        .map(|n| {
            n.trim()
                .replace('_', "")
                .parse::<usize>()
                .with_context(|| format!("{var}={list}: {n:?} is no count"))
        })
        .collect()
}

/// The `i`th user of the idle subscriptions.
fn other_user(i: usize) -> String {
    format!("live-bench-u{i:06}")
}

/// `n` as `100,000`.
fn thousands(n: impl std::fmt::Display) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Raises this process's soft open-file limit to the hard one when it is below `need` (the
/// sockets of the idle subscriptions, and room for the rest); fails if that is not enough.
fn raise_open_files(need: u64) -> anyhow::Result<()> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current.is_some_and(|current| current < need) {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        setrlimit(Resource::Nofile, raised).context("raising the open-file limit")?;
    }
    let current = getrlimit(Resource::Nofile).current;
    ensure!(
        current.is_none_or(|current| current >= need),
        "the open-file limit ({current:?}, hard {:?}) is below the {need} files the idle \
         subscriptions' sockets need: raise it (ulimit -n) or lower DYNARELAY_BENCH_PARTITIONS",
        limit.maximum
    );
    Ok(())
}

/// Users 0 to `n` ([`other_user`]), 25 a `BatchWriteItem`, 8 of those at once.
async fn create_users(shop: &Shop, n: usize) -> anyhow::Result<()> {
    use async_graphql::futures_util::{TryStreamExt, stream};
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    let table = format!("{}Users", shop.prefix);
    let batch = async |first: usize| -> anyhow::Result<()> {
        let mut requests = (first..(first + 25).min(n))
            .map(|i| {
                let put = PutRequest::builder()
                    .item("userId", AttributeValue::S(other_user(i)))
                    .item("name", AttributeValue::S("Idle".to_owned()))
                    .build()?;
                Ok(WriteRequest::builder().put_request(put).build())
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        for _ in 0..50 {
            let out = shop
                .client
                .batch_write_item()
                .request_items(&table, requests)
                .send()
                .await?;
            requests = out
                .unprocessed_items
                .and_then(|mut left| left.remove(&table))
                .unwrap_or_default();
            if requests.is_empty() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        anyhow::bail!("users {first}..: still unprocessed after 50 tries")
    };
    stream::iter((0..n).step_by(25).map(batch))
        .buffer_unordered(8)
        .try_collect::<()>()
        .await
}

/// The global ids of users 0 to `n`, made as the server makes the bench user's (`served.user`):
/// the entity's tag, then the key's one string as a type tag, its length (u16, big-endian) and
/// its bytes, in unpadded base64url.
fn user_ids(served: &Served, n: usize) -> anyhow::Result<Vec<String>> {
    use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
    let bytes = URL_SAFE_NO_PAD.decode(&served.user)?;
    let user = USER.as_bytes();
    let head = bytes
        .len()
        .checked_sub(user.len() + 2)
        .filter(|&head| {
            bytes.ends_with(user)
                && bytes[head..head + 2] == u16::try_from(user.len()).unwrap_or(0).to_be_bytes()
        })
        .with_context(|| format!("the user's global id {} is not as expected", served.user))?;
    (0..n)
        .map(|i| {
            let other = other_user(i);
            let mut id = bytes[..head].to_vec();
            id.extend_from_slice(&u16::try_from(other.len())?.to_be_bytes());
            id.extend_from_slice(other.as_bytes());
            Ok(URL_SAFE_NO_PAD.encode(id))
        })
        .collect()
}

/// Idle subscriptions, each to its own user's purchases, 100 a socket, and the server's RSS
/// (KiB) before them, after their sockets sent `connection_init`, and once they all run.
struct Idle {
    _sockets: Vec<Socket>,
    arrivals: Arc<Arrivals>,
    rss: [u64; 3],
}

/// A subscription to each user of `ids` ([`Idle`]): every socket opened first, then one
/// socket's subscriptions started at a time, each running (the server's gauge) before the next
/// socket's start, as in [`memory`].
async fn idle_subscriptions(served: &Served, ids: &[String]) -> anyhow::Result<Idle> {
    for _ in 0..20 {
        served.page().await?;
    }
    let before = served.rss_kib()?;
    let arrivals = Arc::new(Arrivals::default());
    let mut sockets = Vec::new();
    for _ in 0..ids.len().div_ceil(PER_SOCKET) {
        sockets.push(Socket::open(served, &arrivals).await?);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let with_sockets = served.rss_kib()?;
    let mut running = served.subscriptions().await?;
    for (socket, ids) in sockets.iter_mut().zip(ids.chunks(PER_SOCKET)) {
        for (i, id) in ids.iter().enumerate() {
            socket.subscribe(i, id).await?;
        }
        running += ids.len() as f64;
        let deadline = Instant::now() + Duration::from_secs(60);
        while served.subscriptions().await? < running {
            let ended = arrivals.ended.load(Ordering::Relaxed);
            ensure!(
                ended == 0,
                "{ended} idle subscriptions ended as they started: {}",
                arrivals.codes()
            );
            ensure!(
                Instant::now() < deadline,
                "{running} subscriptions not running in 60 s"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let with_subscriptions = served.rss_kib()?;
    Ok(Idle {
        _sockets: sockets,
        arrivals,
        rss: [before, with_sockets, with_subscriptions],
    })
}

/// The server's CPU from the start of `work` until the server is quiet again after it (at most
/// its idle CPU and 2 ms more over half a second: every subscription's handling of the changes
/// counts, however long after the watched one got them, at most 5 min), less its idle CPU
/// (`idle` a second, measured before) over that time.
async fn net_cpu(
    served: &Served,
    idle: Duration,
    work: impl Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<Duration> {
    const WINDOW: Duration = Duration::from_millis(500);
    let (cpu, wall) = (served.cpu()?, Instant::now());
    work.await?;
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut last = served.cpu()?;
    loop {
        tokio::time::sleep(WINDOW).await;
        let now = served.cpu()?;
        let quiet = idle.mul_f64(WINDOW.as_secs_f64()) + Duration::from_millis(2);
        if now.saturating_sub(last) <= quiet {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "the server still busy 5 min after the writes"
        );
        last = now;
    }
    let busy = served.cpu()?.saturating_sub(cpu);
    Ok(busy.saturating_sub(idle.mul_f64(wall.elapsed().as_secs_f64())))
}

/// The server's CPU a second, idle, over [`IDLE`].
async fn idle_cpu(served: &Served) -> anyhow::Result<Duration> {
    let from = served.cpu()?;
    tokio::time::sleep(IDLE).await;
    Ok(served
        .cpu()?
        .saturating_sub(from)
        .div_f64(IDLE.as_secs_f64()))
}

/// Waits until `watcher` (one subscription) has received `total` changes; fails if it ended
/// or they take longer than `limit`.
async fn received(watcher: &Arrivals, total: u64, limit: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        let now = watcher.total.load(Ordering::Relaxed);
        if now >= total {
            return Ok(());
        }
        ensure!(
            watcher.ended.load(Ordering::Relaxed) == 0,
            "the written user's subscription ended: {}",
            watcher.codes()
        );
        ensure!(
            Instant::now() < deadline,
            "{now} of {total} changes arrived in {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// `writes` purchases written [`PACE`] apart, by `write`; then waits until `watcher` has
/// `total` changes.
async fn paced<F: Future<Output = anyhow::Result<u64>>>(
    writes: u64,
    write: impl Fn() -> F,
    watcher: &Arrivals,
    total: u64,
) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(PACE);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for _ in 0..writes {
        tick.tick().await;
        write().await?;
    }
    received(watcher, total, Duration::from_secs(300)).await
}

/// What one write to the watched user costs the server, and what it costs idle.
struct Costs {
    /// Net CPU per write, writes [`PACE`] apart.
    paced: Duration,
    /// Net CPU per write, one per reader round.
    rounds: Duration,
    /// CPU per second idle.
    idle: Duration,
}

async fn costs(shop: &Shop, served: &Served, watcher: &Arrivals) -> anyhow::Result<Costs> {
    let idle = idle_cpu(served).await?;
    let start = watcher.total.load(Ordering::Relaxed);
    let paced_cpu = net_cpu(
        served,
        idle,
        paced(PACED_WRITES, || shop.write(), watcher, start + PACED_WRITES),
    )
    .await?;
    let rounds_cpu = net_cpu(served, idle, async {
        for _ in 0..ROUND_WRITES {
            let total = watcher.total.load(Ordering::Relaxed) + 1;
            shop.write().await?;
            received(watcher, total, Duration::from_secs(60)).await?;
        }
        Ok(())
    })
    .await?;
    Ok(Costs {
        paced: paced_cpu / u32::try_from(PACED_WRITES)?,
        rounds: rounds_cpu / u32::try_from(ROUND_WRITES)?,
        idle,
    })
}

/// What a burst of [`BURST`] writes to the watched user came to.
struct Burst {
    /// Writes per second from the bench.
    rate: f64,
    /// Changes that reached the watched user's subscriber.
    delivered: usize,
    /// Write to delivery of those, p50 and p99.
    latency: Option<(Duration, Duration)>,
    /// Why the wait ended before every change arrived (empty if they all did).
    stopped: &'static str,
}

/// [`BURST`] purchases of the watched user, [`BURST_IN_FLIGHT`] `PutItem`s at once; waits until
/// all have arrived, or the watched subscription ended, or nothing arrived for 15 s (at most
/// 5 min), then 2 s more for idle subscriptions' ends to arrive.
async fn burst(shop: &Shop, watcher: &Arrivals) -> anyhow::Result<Burst> {
    use async_graphql::futures_util::{TryStreamExt, stream};
    let sent: Mutex<HashMap<u64, Instant>> = Mutex::default();
    let started = Instant::now();
    stream::iter(0..BURST)
        .map(|_| async {
            let at = Instant::now();
            let amount = shop.write().await?;
            sent.lock().expect("sent").insert(amount, at);
            anyhow::Ok(())
        })
        .buffer_unordered(BURST_IN_FLIGHT)
        .try_collect::<()>()
        .await?;
    let rate = BURST as f64 / started.elapsed().as_secs_f64();
    let sent = sent.into_inner().expect("sent");
    let delivered = || -> Vec<Duration> {
        let first = watcher.first.lock().expect("arrivals");
        sent.iter()
            .filter_map(|(amount, at)| Some(first.get(amount)?.saturating_duration_since(*at)))
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(300);
    let (mut last, mut quiet_since) = (0, Instant::now());
    let stopped = loop {
        let now = delivered().len();
        if now == sent.len() {
            break "";
        }
        if watcher.ended.load(Ordering::Relaxed) > 0 {
            break ", its subscription ended";
        }
        if quiet_since.elapsed() > Duration::from_secs(15) {
            break ", then none for 15 s";
        }
        if Instant::now() > deadline {
            break ", in 5 min";
        }
        if now != last {
            (last, quiet_since) = (now, Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut latencies = delivered();
    let latency = (!latencies.is_empty()).then(|| {
        (
            percentile(&mut latencies, 0.5),
            percentile(&mut latencies, 0.99),
        )
    });
    Ok(Burst {
        rate,
        delivered: latencies.len(),
        latency,
        stopped,
    })
}

/// How many idle subscriptions have ended, with their codes and closed sockets, for a row.
fn ended(idle: &Arrivals) -> String {
    let (ended, closed) = (
        idle.ended.load(Ordering::Relaxed),
        idle.closed.load(Ordering::Relaxed),
    );
    let mut out = thousands(ended);
    if ended > 0 {
        out.push_str(&format!(" ({})", idle.codes()));
    }
    if closed > 0 {
        out.push_str(&format!(", {} sockets closed", thousands(closed)));
    }
    out
}

/// Subscriptions on their own partitions: for each count `n` of `counts`, a server with `n`
/// idle subscriptions, each to a different user's purchases (100 a socket), and one to the
/// user written: its CPU per write (writes 20 ms apart, and one per reader round) less its
/// idle CPU, and its idle CPU per second; at the largest count, RSS per idle socket and per
/// idle subscription, and a burst of writes (subscriptions ended, changes delivered, latency);
/// then through Redis, at no idle subscription and at the largest count, the instance's CPU per
/// change that concerns none of its subscriptions.
async fn own_partitions(
    shop: &Shop,
    counts: &[usize],
    rows: &mut Vec<(String, String)>,
) -> anyhow::Result<()> {
    let Some(&largest) = counts.iter().max() else {
        return Ok(());
    };
    let sockets = largest.div_ceil(PER_SOCKET) + 1;
    raise_open_files(u64::try_from(sockets)? + 256)?;
    let started = Instant::now();
    create_users(shop, largest).await?;
    eprintln!(
        "partitions: {largest} users written in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let subscriptions = (largest + 1_000).max(20_000).to_string();
    let connections = (sockets + 1_000).max(20_000).to_string();
    let caps = [
        ("DYNARELAY_MAX_SUBSCRIPTIONS", subscriptions.as_str()),
        ("DYNARELAY_MAX_CONNECTIONS", connections.as_str()),
    ];
    let label = |n: usize| format!("own partitions, {} idle subscriptions", thousands(n));
    for &n in counts {
        let started = Instant::now();
        let served = shop.serve_with(250, None, &caps).await?;
        let idle = idle_subscriptions(&served, &user_ids(&served, n)?).await?;
        let subscribing = started.elapsed();
        let (_watching, watcher) = subscribers(shop, &served, 1).await?;
        let costs = costs(shop, &served, &watcher).await?;
        // Nothing should reach an idle subscription; if anything did, the row says so.
        let (to_idle, idle_ended) = (
            idle.arrivals.total.load(Ordering::Relaxed),
            idle.arrivals.ended.load(Ordering::Relaxed),
        );
        let note = if to_idle + idle_ended > 0 {
            format!(
                " (idle subscriptions ended: {}; messages to them: {})",
                ended(&idle.arrivals),
                thousands(to_idle)
            )
        } else {
            String::new()
        };
        rows.push((
            format!(
                "{}: server CPU per write, 20 ms apart / one per reader round",
                label(n)
            ),
            format!("{} / {}{note}", us(costs.paced), us(costs.rounds)),
        ));
        rows.push((
            format!("{}: server CPU per second idle", label(n)),
            ms(costs.idle),
        ));
        if n == largest && n > 0 {
            let [before, with_sockets, with_subscriptions] = idle.rss.map(|kib| kib as f64);
            rows.push((
                format!(
                    "{}: RSS per idle socket ({} sockets) / per idle subscription",
                    label(n),
                    thousands(n.div_ceil(PER_SOCKET))
                ),
                format!(
                    "{:.1} KiB / {:.1} KiB",
                    (with_sockets - before) / n.div_ceil(PER_SOCKET) as f64,
                    (with_subscriptions - with_sockets) / n as f64
                ),
            ));
        }
        if n == largest {
            let burst = burst(shop, &watcher).await?;
            rows.push((
                format!(
                    "{}: burst of {} writes ({:.0}/s): idle subscriptions ended / changes delivered",
                    label(n),
                    thousands(BURST),
                    burst.rate
                ),
                format!(
                    "{} / {} of {}{}",
                    ended(&idle.arrivals),
                    thousands(burst.delivered),
                    thousands(BURST),
                    burst.stopped
                ),
            ));
            rows.push((
                format!("{}: burst, write to delivery p50 / p99", label(n)),
                burst.latency.map_or_else(
                    || "none delivered".to_owned(),
                    |(p50, p99)| format!("{} / {}", ms(p50), ms(p99)),
                ),
            ));
        }
        eprintln!(
            "partitions at {n}: done in {:.1} s (subscribing {:.1} s)",
            started.elapsed().as_secs_f64(),
            subscribing.as_secs_f64()
        );
    }
    let Ok(redis) = std::env::var("DYNARELAY_BENCH_REDIS_URL") else {
        eprintln!("partitions: DYNARELAY_BENCH_REDIS_URL is not set, nothing through Redis");
        return Ok(());
    };
    let mut through = Vec::new();
    let redis_counts: &[usize] = if largest == 0 { &[0] } else { &[0, largest] };
    for &n in redis_counts {
        let started = Instant::now();
        let relay = Relay::start(shop, &redis, &format!("leases-partitions-{n}"), 250)?;
        let served = shop.serve_with(250, Some(&relay), &caps).await?;
        let idle = idle_subscriptions(&served, &user_ids(&served, n)?).await?;
        let (_watching, watcher) = subscribers(shop, &served, 1).await?;
        // Purchases of a user no subscription follows, then one of the watched user's: once
        // that has arrived, the instance has read them all.
        let idle_cpu = idle_cpu(&served).await?;
        let total = watcher.total.load(Ordering::Relaxed) + 1;
        let cpu = net_cpu(&served, idle_cpu, async {
            paced(PACED_WRITES, || shop.write_for(NOBODY), &watcher, 0).await?;
            shop.write().await?;
            received(&watcher, total, Duration::from_secs(300)).await
        })
        .await?;
        ensure!(
            idle.arrivals.ended.load(Ordering::Relaxed) == 0,
            "through Redis, idle subscriptions ended: {}",
            ended(&idle.arrivals)
        );
        through.push(cpu / u32::try_from(PACED_WRITES)?);
        drop(relay);
        eprintln!(
            "partitions through Redis at {n}: done in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    let counts: Vec<String> = redis_counts.iter().map(|&n| thousands(n)).collect();
    rows.push((
        format!(
            "own partitions through Redis: instance CPU per change no subscriber concerns, {} idle subscriptions",
            counts.join(" / ")
        ),
        through
            .iter()
            .map(|&cpu| us(cpu))
            .collect::<Vec<_>>()
            .join(" / "),
    ));
    Ok(())
}
