//! The summary of a run: requests, req/s, latencies, walks, writes and RSS, printed and written
//! to `target/load/summary.json`.

use std::{collections::BTreeMap, path::Path, time::Duration};

use serde_json::{Value, json};

use super::{Report, Settings, rss::Rss};

pub(super) struct Summary {
    pub(super) line: String,
    pub(super) json: Value,
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

pub(super) fn summarize(
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

pub(super) fn write_summary(summary: &Value) {
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
