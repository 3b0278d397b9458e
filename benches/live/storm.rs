//! Subscriptions arriving as a storm (`DYNARELAY_BENCH_ONLY=storm`, or as part of the whole
//! run): what an instance's memory comes to when every client of an instance that restarted, or
//! that a deploy drained, reconnects within seconds. For each count N
//! (`DYNARELAY_BENCH_STORM`, counts separated by commas; default `20000,100000`), and each
//! arrival (1,000 subscriptions a second, and as fast as the sockets send them), a fresh server:
//! N / 100 sockets opened first (each after `connection_init`), then N subscriptions, each to a
//! *different* user's `purchasesChanged` (each user on their own partition), 100 a socket, one
//! socket's hundred at a time at the rate. The server's RSS is read every 10 ms from the first
//! `subscribe` until 5 s after the last subscription runs (the server's gauge): its peak; then
//! once more a minute after they all run (settled). Rows: RSS per idle socket, per idle
//! subscription at the peak and settled, the peak over the settled (of the subscriptions'
//! share), and the time from the first `subscribe` until all run.

use std::sync::atomic::AtomicBool;

use super::*;

/// The counts of subscriptions measured (`DYNARELAY_BENCH_STORM`'s default).
const STORM: &[usize] = &[20_000, 100_000];
/// Subscriptions arriving a second, in the paced storm.
const RATE: u64 = 1_000;
/// How long after every subscription runs the settled RSS is read.
const SETTLE: Duration = Duration::from_secs(60);
/// How long after every subscription runs the peak is still looked for.
const AFTER: Duration = Duration::from_secs(5);

/// `DYNARELAY_BENCH_STORM`, or [`STORM`].
fn storm_counts() -> anyhow::Result<Vec<usize>> {
    counts("DYNARELAY_BENCH_STORM", STORM)
}

/// The highest RSS of a process seen since the sampler started, read every 10 ms.
struct Peak {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Peak {
    fn start(pid: u32) -> Self {
        let peak = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn({
            let (peak, stop) = (Arc::clone(&peak), Arc::clone(&stop));
            async move {
                let mut tick = tokio::time::interval(Duration::from_millis(10));
                while !stop.load(Ordering::Relaxed) {
                    tick.tick().await;
                    if let Ok(kib) = rss_kib(pid) {
                        peak.fetch_max(kib, Ordering::Relaxed);
                    }
                }
            }
        });
        Self { peak, stop, task }
    }

    async fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
        self.peak.load(Ordering::Relaxed)
    }
}

/// One storm's measures, RSS in KiB.
struct Storm {
    before: u64,
    with_sockets: u64,
    peak: u64,
    settled: u64,
    /// From the first `subscribe` until every subscription runs.
    running_in: Duration,
    sockets: usize,
    /// Subscriptions that run.
    ran: usize,
    /// Subscriptions that ended as they started, with their errors' codes.
    ended: Option<String>,
}

impl Storm {
    fn per_socket(&self) -> f64 {
        (self.with_sockets as f64 - self.before as f64) / self.sockets as f64
    }

    /// Per subscription, over the sockets' RSS.
    fn per_subscription(&self, rss: u64) -> f64 {
        (rss as f64 - self.with_sockets as f64) / self.ran as f64
    }
}

/// `ids.len()` subscriptions arriving at `rate` a second (`None`: as fast as the sockets send),
/// on a fresh server.
async fn storm(
    shop: &Shop,
    caps: &[(&str, &str)],
    n: usize,
    rate: Option<u64>,
) -> anyhow::Result<Storm> {
    let served = shop.serve_with(250, None, caps).await?;
    let ids = user_ids(&served, n)?;
    for _ in 0..20 {
        served.page().await?;
    }
    let before = served.rss_kib()?;
    let arrivals = Arc::new(Arrivals::default());
    let mut sockets = Vec::new();
    for _ in 0..n.div_ceil(PER_SOCKET) {
        sockets.push(Socket::open(&served, &arrivals).await?);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let with_sockets = served.rss_kib()?;
    let running = served.subscriptions().await?;
    let peak = Peak::start(served.server.pid());
    let start = Instant::now();
    for (k, (socket, ids)) in sockets.iter_mut().zip(ids.chunks(PER_SOCKET)).enumerate() {
        if let Some(rate) = rate {
            let at = Duration::from_secs_f64((k * PER_SOCKET) as f64 / rate as f64);
            tokio::time::sleep_until((start + at).into()).await;
        }
        for (i, id) in ids.iter().enumerate() {
            socket.subscribe(i, id).await?;
        }
    }
    // Every subscription runs, or ended as it started (its error's code is counted).
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let ended = arrivals.ended.load(Ordering::Relaxed);
        if served.subscriptions().await? + ended as f64 >= running + n as f64 {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "{n} subscriptions not running in 10 min ({ended} ended: {})",
            arrivals.codes()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let running_in = start.elapsed();
    tokio::time::sleep(AFTER).await;
    let peak = peak.finish().await;
    tokio::time::sleep(SETTLE.saturating_sub(AFTER)).await;
    let settled = served.rss_kib()?;
    let ended = arrivals.ended.load(Ordering::Relaxed);
    let ran = n.saturating_sub(usize::try_from(ended)?).max(1);
    let ended = (ended > 0).then(|| format!("{} ended ({})", thousands(ended), arrivals.codes()));
    Ok(Storm {
        before,
        with_sockets,
        peak: peak.max(settled),
        settled,
        running_in,
        sockets: sockets.len(),
        ran,
        ended,
    })
}

/// The storm's rows (see the module docs).
pub(super) async fn storms(shop: &Shop, rows: &mut Vec<(String, String)>) -> anyhow::Result<()> {
    let counts = storm_counts()?;
    let Some(&largest) = counts.iter().max() else {
        return Ok(());
    };
    let sockets = largest.div_ceil(PER_SOCKET) + 1;
    raise_open_files(u64::try_from(sockets)? + 256)?;
    create_users(shop, largest).await?;
    let subscriptions = (largest + 1_000).max(20_000).to_string();
    let connections = (sockets + 1_000).max(20_000).to_string();
    let caps = [
        ("DYNARELAY_MAX_SUBSCRIPTIONS", subscriptions.as_str()),
        ("DYNARELAY_MAX_CONNECTIONS", connections.as_str()),
    ];
    for &n in &counts {
        for rate in [Some(RATE), None] {
            let arrival = match rate {
                Some(rate) => format!("at {}/s", thousands(rate)),
                None => "as fast as sockets send".to_owned(),
            };
            let label = format!("storm, {} subscriptions {arrival}", thousands(n));
            let storm = storm(shop, &caps, n, rate).await?;
            let (peak, settled) = (
                storm.per_subscription(storm.peak),
                storm.per_subscription(storm.settled),
            );
            rows.push((
                format!(
                    "{label}: RSS per idle socket ({} sockets) / per idle subscription, settled",
                    thousands(storm.sockets)
                ),
                format!("{:.1} KiB / {settled:.1} KiB", storm.per_socket()),
            ));
            rows.push((
                format!("{label}: per subscription at the peak (peak over settled)"),
                format!("{peak:.1} KiB ({:.2})", peak / settled),
            ));
            rows.push((
                format!("{label}: all running after / server RSS at the peak and settled"),
                format!(
                    "{:.1} s / {:.0} MiB and {:.0} MiB{}",
                    storm.running_in.as_secs_f64(),
                    storm.peak as f64 / 1024.0,
                    storm.settled as f64 / 1024.0,
                    storm
                        .ended
                        .as_ref()
                        .map_or_else(String::new, |ended| format!("; {ended}"))
                ),
            ));
            for (measure, value) in &rows[rows.len() - 3..] {
                eprintln!("| {measure} | {value} |");
            }
        }
    }
    Ok(())
}
