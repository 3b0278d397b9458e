//! The CPU load: pages from many clients at once, in rounds that alternate between the pages,
//! the server's CPU read from `/proc` (`procfs.rs`).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use super::{
    CONCURRENT_PAGES, CPU_ROUNDS, api::Api, peer::peer_failed, procfs::cpu_ticks,
    stats::interleaved,
};

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
