//! Statistics of samples (mean, median, percentiles, ratios), and the interleaved order in which
//! samples visit pages.

use std::time::Duration;

pub(super) fn mean(samples: &[Duration]) -> Duration {
    samples.iter().sum::<Duration>() / u32::try_from(samples.len().max(1)).unwrap_or(u32::MAX)
}

pub(super) fn median(samples: &mut [f64]) -> f64 {
    samples.sort_unstable_by(f64::total_cmp);
    samples[samples.len() / 2]
}

pub(super) fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    let rank = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[rank.min(samples.len() - 1)]
}

/// The order in which sample (or round) `i` visits `n` pages: rotated by one every second
/// sample, and reversed in every odd one, so that each page goes before each other as often as
/// after (for two pages: 0 1, 1 0, 1 0, 0 1, ...).
pub(super) fn interleaved(n: usize, i: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.rotate_left((i / 2) % n.max(1));
    if i % 2 == 1 {
        order.reverse();
    }
    order
}

pub(super) fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

pub(super) fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}
