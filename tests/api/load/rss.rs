//! The server's RSS, sampled every second during the run, and the check that it stays stable.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

#[derive(Debug, Default)]
pub(super) struct Rss {
    /// (seconds since the load started, VmRSS in KiB)
    pub(super) samples: Vec<(f64, u64)>,
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

pub(super) async fn sample_rss(pid: u32, started: Instant, stop: Arc<AtomicBool>) -> Rss {
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
pub(super) fn check_rss(secs: u64, rss: &Rss) {
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
