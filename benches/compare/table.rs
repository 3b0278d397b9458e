//! The printed table: its rows, ratios as quotients, and the heading that names each binary.

use std::time::Duration;

use super::server::Binary;

/// `a / b` to two decimals, or `n/a` when `b` is not positive.
pub(super) fn quotient(a: impl Into<Quantity>, b: impl Into<Quantity>) -> String {
    let (a, b) = (a.into().0, b.into().0);
    if b > 0.0 && a.is_finite() {
        format!("{:.2}", a / b)
    } else {
        "n/a".to_owned()
    }
}

/// A duration in seconds, a size in KiB or a plain number, for [`quotient`].
pub(super) struct Quantity(f64);

impl From<Duration> for Quantity {
    fn from(d: Duration) -> Self {
        Self(d.as_secs_f64())
    }
}

impl From<f64> for Quantity {
    fn from(x: f64) -> Self {
        Self(x)
    }
}

impl From<u64> for Quantity {
    fn from(x: u64) -> Self {
        Self(x as f64)
    }
}

/// One line of the table: measure, dynarelay, direct, ratio, target / note; and, with a
/// baseline, the baseline's value and current / baseline.
pub(super) struct Row {
    cells: [String; 5],
    baseline: Option<(String, String)>,
}

impl Row {
    /// The baseline's value and the ratio current / baseline, when there is a baseline.
    pub(super) fn beside(mut self, baseline: Option<(String, String)>) -> Self {
        self.baseline = baseline;
        self
    }
}

pub(super) fn row(
    what: impl Into<String>,
    dynarelay: impl Into<String>,
    direct: impl Into<String>,
    ratio: impl Into<String>,
    note: impl Into<String>,
) -> Row {
    Row {
        cells: [
            what.into(),
            dynarelay.into(),
            direct.into(),
            ratio.into(),
            note.into(),
        ],
        baseline: None,
    }
}

/// The table; with a baseline, its two columns follow the current server's, and a heading says
/// which binary is which.
#[allow(clippy::print_stdout)]
pub(super) fn print_table(rows: &[Row], binary: &Binary, baseline: Option<&Binary>) {
    let Some(baseline) = baseline else {
        println!("| measure | dynarelay | direct | ratio | target / note |");
        println!("|---|---|---|---|---|");
        for Row { cells: r, .. } in rows {
            println!("| {} | {} | {} | {} | {} |", r[0], r[1], r[2], r[3], r[4]);
        }
        return;
    };
    println!("dynarelay (current): {}", binary.describe());
    println!("baseline: {}", baseline.describe());
    println!();
    println!(
        "| measure | dynarelay | baseline | dynarelay / baseline | direct | ratio | target / note |"
    );
    println!("|---|---|---|---|---|---|---|");
    for Row { cells: r, baseline } in rows {
        let (b, q) = baseline
            .as_ref()
            .map_or(("", ""), |(b, q)| (b.as_str(), q.as_str()));
        println!(
            "| {} | {} | {b} | {q} | {} | {} | {} |",
            r[0], r[1], r[2], r[3], r[4]
        );
    }
}
