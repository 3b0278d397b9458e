//! What a process costs, read from `/proc` (RSS, CPU ticks), and the CPU load: pages from many
//! clients at once, in rounds that alternate between the pages.

use std::{
    process::Command,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context;

use super::{CONCURRENT_PAGES, CPU_ROUNDS, api::Api, peer::peer_failed, stats::interleaved};

pub(super) fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("no VmRSS")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .context("no VmRSS value")?
        .parse()?)
}

/// User plus system CPU time of a process, in clock ticks (fields 14 and 15 of
/// `/proc/<pid>/stat`, counted after the parenthesised command name).
pub(super) fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_name = stat.rsplit_once(')').context("odd stat")?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    Ok(fields[11].parse::<u64>()? + fields[12].parse::<u64>()?)
}

pub(super) fn ticks_to_duration(ticks: u64) -> anyhow::Result<Duration> {
    let out = Command::new("getconf").arg("CLK_TCK").output()?;
    let per_second: u64 = String::from_utf8(out.stdout)?.trim().parse()?;
    Ok(Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// `pages` requests of `owner`'s first page (the long partition's) from `clients` clients at
/// once; the wall time they took.
async fn load(
    api: &Arc<Api>,
    owner: &'static str,
    pages: usize,
    clients: usize,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..clients {
        let api = Arc::clone(api);
        let share = pages / clients + usize::from(client < pages % clients);
        tasks.spawn(async move {
            for _ in 0..share {
                api.page_timed(owner, None, None).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(started.elapsed())
}

/// A page under load: its server's pid, the page, and whose page it asks for.
type Loaded = (u32, Arc<Api>, &'static str);

/// [`CONCURRENT_PAGES`] pages of each of `loaded` from `clients` clients at once, in
/// [`CPU_ROUNDS`] rounds, each page's in turn in an order that changes from round to round (see
/// [`interleaved`]). A page's server is read before and after each of that page's rounds: for each
/// page, the wall time of its rounds and the CPU ticks its server spent in them. The page at
/// `peer_at` is the Node reference's: when its load fails, `peer_down` says why, its rounds stop,
/// and the others go on.
pub(super) async fn cpu_rounds(
    loaded: &[Loaded],
    clients: usize,
    peer_at: Option<usize>,
    peer_down: &mut Option<String>,
) -> anyhow::Result<(Vec<Duration>, Vec<u64>)> {
    let (mut walls, mut ticks) = (vec![Duration::ZERO; loaded.len()], vec![0; loaded.len()]);
    let pages = CONCURRENT_PAGES / CPU_ROUNDS;
    for round in 0..CPU_ROUNDS {
        for k in interleaved(loaded.len(), round) {
            let (pid, page_api, owner) = &loaded[k];
            let measured = async {
                let before = cpu_ticks(*pid)?;
                let wall = load(page_api, owner, pages, clients).await?;
                anyhow::Ok((wall, cpu_ticks(*pid)? - before))
            };
            if Some(k) == peer_at {
                if peer_down.is_some() {
                    continue;
                }
                match measured.await {
                    Ok((wall, t)) => {
                        walls[k] += wall;
                        ticks[k] += t;
                    }
                    Err(e) => *peer_down = Some(peer_failed("its CPU load", &e)),
                }
            } else {
                let (wall, t) = measured.await?;
                walls[k] += wall;
                ticks[k] += t;
            }
        }
    }
    Ok((walls, ticks))
}
