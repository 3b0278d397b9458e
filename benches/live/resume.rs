//! What resuming from a position costs (`DYNARELAY_BENCH_ONLY=resume`, or as part of the whole
//! run): one subscriber away while N purchases of its user are written, then resumed with the
//! last `position` it received, from the table's stream (a server reading it) and from Redis (a
//! server reading a relay's Redis): the time until the N changes have all arrived, and the calls
//! made meanwhile (`dynarelay_stream_calls_total`, the instance's own reader included). Then a
//! fleet's worst case: 1,000 subscribers of a server reading Redis, the Redis stream lost (the key
//! deleted and every client connection killed, as a Redis restarted empty does), 20 purchases
//! written at once: the time until every subscriber, resuming with its last position as soon as
//! it is ended with `CHANGES_LOST`, holds all 20 (each once), and the calls it took.

use std::collections::HashMap;

use super::*;

const RESUMED: &str = "subscription($user: ID!, $resumeFrom: String) {
  purchasesChanged(user: $user, resumeFrom: $resumeFrom) { position edge { node { amount } } } }";

/// What each subscription of a [`Follower`] received: amounts, and its last position.
#[derive(Default)]
struct Received {
    amounts: HashMap<usize, Vec<u64>>,
    positions: HashMap<usize, String>,
    /// Subscriptions ended with `CHANGES_LOST` and resumed.
    resumed: u64,
    /// Other errors received.
    errors: Vec<String>,
    /// Subscriptions ended with `CHANGES_LOST`, waiting for their `complete`, with the position
    /// to resume from.
    ending: HashMap<usize, Option<String>>,
}

/// A socket running subscriptions `ids` to the served user's purchases, each resumed with its
/// last position whenever it ends with `CHANGES_LOST`.
struct Follower {
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Follower {
    async fn open(
        served: &Served,
        ids: std::ops::Range<usize>,
        since: Option<String>,
        received: &Arc<Mutex<Received>>,
    ) -> anyhow::Result<Self> {
        let (mut sink, mut stream) = served.connect().await?;
        let subscribe = |id: usize, since: Option<&str>| {
            Message::text(
                json!({ "id": id.to_string(), "type": "subscribe", "payload": {
                    "query": RESUMED, "variables": { "user": served.user, "resumeFrom": since } } })
                .to_string(),
            )
        };
        for id in ids {
            sink.send(subscribe(id, since.as_deref())).await?;
        }
        let received = Arc::clone(received);
        let user = served.user.clone();
        let task = tokio::spawn(async move {
            while let Some(message) = stream.next().await {
                let Message::Text(text) = message? else {
                    continue;
                };
                let message: Value = serde_json::from_str(text.as_str())?;
                let Ok(id) = message["id"].as_str().unwrap_or_default().parse::<usize>() else {
                    continue;
                };
                if message["type"] == "complete" {
                    // Resumed once the server has let go of the ended subscription (a socket
                    // runs at most 100 at once).
                    let since = {
                        let mut received = received.lock().expect("received");
                        let Some(since) = received.ending.remove(&id) else {
                            continue;
                        };
                        received.resumed += 1;
                        since
                    };
                    let again = id + 1_000_000;
                    let message = json!({ "id": again.to_string(), "type": "subscribe",
                        "payload": { "query": RESUMED,
                                     "variables": { "user": user, "resumeFrom": since } } });
                    sink.send(Message::text(message.to_string())).await?;
                    let mut received = received.lock().expect("received");
                    if let Some(amounts) = received.amounts.remove(&id) {
                        received.amounts.insert(again, amounts);
                    }
                    if let Some(position) = received.positions.remove(&id) {
                        received.positions.insert(again, position);
                    }
                    continue;
                }
                if message["type"] != "next" {
                    received
                        .lock()
                        .expect("received")
                        .errors
                        .push(message.to_string());
                    continue;
                }
                let payload = &message["payload"];
                if payload["errors"][0]["extensions"]["code"] == "CHANGES_LOST" {
                    let mut received = received.lock().expect("received");
                    let since = received.positions.get(&id).cloned();
                    received.ending.insert(id, since);
                    continue;
                }
                if let Some(error) = payload["errors"].get(0) {
                    received
                        .lock()
                        .expect("received")
                        .errors
                        .push(error.to_string());
                    continue;
                }
                let change = &payload["data"]["purchasesChanged"];
                let amount = change["edge"]["node"]["amount"]
                    .as_str()
                    .and_then(|a| a.parse::<u64>().ok());
                let mut received = received.lock().expect("received");
                if let Some(position) = change["position"].as_str() {
                    received.positions.insert(id, position.to_owned());
                }
                if let Some(amount) = amount {
                    received.amounts.entry(id).or_default().push(amount);
                }
            }
            Ok(())
        });
        Ok(Self { task })
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The server's `dynarelay_stream_calls_total`, by call.
async fn calls(served: &Served) -> anyhow::Result<HashMap<String, u64>> {
    let text = served
        .http
        .get(format!("http://{}/metrics", served.server.address))
        .send()
        .await?
        .text()
        .await?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("dynarelay_stream_calls_total{call=\"")?;
            let (call, value) = rest.split_once("\"} ")?;
            Some((call.to_owned(), value.trim().parse().ok()?))
        })
        .collect())
}

/// The calls made between two readings, as `Call ×n` in name order.
fn made(before: &HashMap<String, u64>, after: &HashMap<String, u64>) -> String {
    let mut made: Vec<(String, u64)> = after
        .iter()
        .map(|(call, n)| (call.clone(), n - before.get(call).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect();
    made.sort();
    made.iter()
        .map(|(call, n)| format!("{call} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Waits until `check` holds, for at most five minutes.
async fn until(what: &str, mut check: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !check() {
        ensure!(Instant::now() < deadline, "{what}: not within 300 s");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// One subscriber's position after a change it received (purchases written until one arrives).
async fn a_position(shop: &Shop, served: &Served) -> anyhow::Result<String> {
    let received = Arc::new(Mutex::new(Received::default()));
    let follower = Follower::open(served, 0..1, None, &received).await?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        shop.write().await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        if let Some(position) = received.lock().expect("received").positions.get(&0) {
            drop(follower);
            return Ok(position.clone());
        }
        ensure!(Instant::now() < deadline, "no change arrived in 120 s");
    }
}

/// One resume after `missed` purchases: the time until all arrived, and the calls made.
async fn one_resume(
    shop: &Shop,
    served: &Served,
    missed: u64,
) -> anyhow::Result<(Duration, String)> {
    let position = a_position(shop, served).await?;
    let mut amounts = Vec::new();
    for _ in 0..missed {
        amounts.push(shop.write().await?);
    }
    let before = calls(served).await?;
    let started = Instant::now();
    let received = Arc::new(Mutex::new(Received::default()));
    let _follower = Follower::open(served, 0..1, Some(position), &received).await?;
    let last = *amounts.last().context("no purchase")?;
    until("the missed purchases", || {
        received
            .lock()
            .expect("received")
            .amounts
            .get(&0)
            .is_some_and(|got| got.contains(&last))
    })
    .await
    .with_context(|| {
        let received = received.lock().expect("received");
        format!(
            "wanted {amounts:?}, received {:?} (positions {:?}, errors {:?})",
            received.amounts,
            received.positions.len(),
            received.errors
        )
    })?;
    let took = started.elapsed();
    let got = received.lock().expect("received").amounts[&0].clone();
    ensure!(
        got == amounts,
        "received {} of {missed} in order",
        got.len()
    );
    Ok((took, made(&before, &calls(served).await?)))
}

/// The section's rows.
pub(super) async fn resume(shop: &Shop, rows: &mut Vec<(String, String)>) -> anyhow::Result<()> {
    let served = shop.serve(250).await?;
    for missed in [10, 100, 1_000] {
        let (took, made) = one_resume(shop, &served, missed).await?;
        rows.push((
            format!("resume from the table's stream, {missed} changes missed: time / calls"),
            format!("{} / {made}", ms(took)),
        ));
    }
    drop(served);
    eprintln!("resumes from the stream: done");

    let redis = std::env::var("DYNARELAY_BENCH_REDIS_URL")
        .context("DYNARELAY_BENCH_REDIS_URL is not set: run scripts/bench-live")?;
    let relay = Relay::start(shop, &redis, "leases-resume", 250)?;
    let served = shop.serve_from(250, Some(&relay)).await?;
    for missed in [10, 100, 1_000] {
        let (took, made) = one_resume(shop, &served, missed).await?;
        rows.push((
            format!("resume from Redis, {missed} changes missed: time / calls"),
            format!("{} / {made}", ms(took)),
        ));
    }
    eprintln!("resumes from Redis: done");

    // 1,000 subscribers with positions, then the Redis stream lost under them.
    const SUBSCRIBERS: usize = 1_000;
    const MISSED: u64 = 20;
    let received = Arc::new(Mutex::new(Received::default()));
    let mut followers = Vec::new();
    for first in (0..SUBSCRIBERS).step_by(PER_SOCKET) {
        followers.push(Follower::open(&served, first..first + PER_SOCKET, None, &received).await?);
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while received.lock().expect("received").positions.len() < SUBSCRIBERS {
        ensure!(Instant::now() < deadline, "subscribers not placed in 120 s");
        shop.write().await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // Quiet: every write so far has arrived everywhere.
    let quiet = shop.write().await?;
    until("the last write before the loss", || {
        let received = received.lock().expect("received");
        received.amounts.values().all(|a| a.contains(&quiet))
    })
    .await?;
    received.lock().expect("received").amounts.clear();
    let before = calls(&served).await?;
    let client = redis::Client::open(redis.as_str())?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let key = dynarelay::stream::redis_feed::key(&format!("{}Purchases", shop.prefix));
    let started = Instant::now();
    redis::cmd("DEL")
        .arg(&key)
        .query_async::<()>(&mut connection)
        .await?;
    redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .query_async::<()>(&mut connection)
        .await
        .ok();
    let mut amounts = Vec::new();
    for _ in 0..MISSED {
        amounts.push(shop.write().await?);
    }
    until("every subscriber holding every purchase", || {
        let received = received.lock().expect("received");
        received.amounts.len() >= SUBSCRIBERS
            && received
                .amounts
                .values()
                .all(|got| got.len() >= amounts.len())
    })
    .await
    .with_context(|| {
        let received = received.lock().expect("received");
        let whole = received
            .amounts
            .values()
            .filter(|got| got.len() >= amounts.len())
            .count();
        format!(
            "{whole} of {SUBSCRIBERS} hold all {MISSED}; {} received any; {} resumed; errors {:?}",
            received.amounts.len(),
            received.resumed,
            received.errors.iter().take(3).collect::<Vec<_>>()
        )
    })?;
    let took = started.elapsed();
    let (resumed, exact) = {
        let received = received.lock().expect("received");
        let exact = received.amounts.values().all(|got| *got == amounts);
        (received.resumed, exact)
    };
    ensure!(
        exact,
        "a subscriber received a purchase twice or out of order"
    );
    rows.push((
        format!(
            "Redis stream lost under {SUBSCRIBERS} subscribers, {MISSED} purchases written: time until all hold them / resumed / calls"
        ),
        format!("{} / {resumed} / {}", ms(took), made(&before, &calls(&served).await?)),
    ));
    drop(followers);
    drop(relay);
    eprintln!("1,000 resuming: done");
    Ok(())
}
