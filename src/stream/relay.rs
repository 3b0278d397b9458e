//! The change relay (`dynarelay relay`): reads each streamed table's stream, as a `serve`
//! instance's reader does, and appends every change to the table's Redis stream, from which the
//! fleet's instances read (see [`super::redis_feed`]). One relay reads a stream for any number
//! of instances, within the two readers a stream shard allows.

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use super::{
    Streams,
    redis_feed::{Publisher, RedisFeed},
};
use crate::metrics::Metrics;

/// Longest wait between attempts to reach Redis, or to find a table's stream again.
const MAX_WAIT: Duration = Duration::from_secs(5);

/// What a relay is doing, for its health checks.
#[derive(Debug, Default)]
pub struct Progress {
    /// Tables whose stream the relay has taken its place in.
    placed: AtomicUsize,
    tables: AtomicUsize,
}

impl Progress {
    /// Whether the relay reads every table's stream.
    pub fn ready(&self) -> bool {
        let tables = self.tables.load(Ordering::Acquire);
        tables > 0 && self.placed.load(Ordering::Acquire) >= tables
    }
}

/// Relays the changes of `tables` (full names) from `streams` into `feed`, each Redis stream
/// kept to about `max_len` entries, until `shutdown` resolves; counts them in `metrics` and tells
/// `progress` when every table's stream is read.
pub async fn relay(
    streams: Streams,
    tables: Vec<String>,
    feed: RedisFeed,
    max_len: usize,
    (metrics, progress): (Arc<Metrics>, Arc<Progress>),
    shutdown: impl Future<Output = ()>,
) {
    progress.tables.store(tables.len(), Ordering::Release);
    let mut relays = tokio::task::JoinSet::new();
    for table in tables {
        let table = Table {
            name: table,
            metrics: Arc::clone(&metrics),
            progress: Arc::clone(&progress),
        };
        relays.spawn(relay_table(streams.clone(), table, feed.clone(), max_len));
    }
    shutdown.await;
    relays.shutdown().await;
}

/// One table a relay relays.
struct Table {
    name: String,
    metrics: Arc<Metrics>,
    progress: Arc<Progress>,
}

/// Relays one table's changes, for good: a change that Redis does not take is tried again,
/// never dropped; a table whose stream is gone is looked at again.
async fn relay_table(streams: Streams, table: Table, feed: RedisFeed, max_len: usize) {
    let Table {
        name: table,
        metrics,
        progress,
    } = table;
    let mut publisher: Option<Publisher> = None;
    let mut wait = Duration::from_millis(100);
    let mut placed = false;
    loop {
        let mut changes = streams.subscribe(&table);
        changes.ready().await;
        // A reader that stopped at once found no stream: not read, so not ready.
        if !placed && changes.running() {
            placed = true;
            progress.placed.fetch_add(1, Ordering::AcqRel);
        }
        tracing::info!(table, "relaying the table's changes");
        while let Some(event) = changes.next().await {
            loop {
                let published = match &mut publisher {
                    Some(p) => p.publish(&table, &event).await.map(|_| ()),
                    None => match feed.publisher(max_len).await {
                        Ok(p) => {
                            publisher = Some(p);
                            continue;
                        }
                        Err(err) => Err(err),
                    },
                };
                match published {
                    Ok(()) => {
                        metrics.change_published(&table);
                        wait = Duration::from_millis(100);
                        break;
                    }
                    Err(err) => {
                        tracing::warn!(table, error = %err, "publishing a change to Redis failed; trying again");
                        publisher = None;
                        tokio::time::sleep(wait).await;
                        wait = (wait * 2).min(MAX_WAIT);
                    }
                }
            }
        }
        // The reader stopped: the table has no stream (now). Look again later.
        tokio::time::sleep(MAX_WAIT).await;
    }
}
