//! The change relay (`dynarelay relay`): reads each streamed table's stream, as a `serve`
//! instance's reader does, and appends every change to the table's Redis stream, from which the
//! fleet's instances read (see [`super::redis_feed`]). One relay reads a stream for any number
//! of instances, within the two readers a stream shard allows.

use std::{future::Future, time::Duration};

use super::{
    Streams,
    redis_feed::{Publisher, RedisFeed},
};

/// Longest wait between attempts to reach Redis, or to find a table's stream again.
const MAX_WAIT: Duration = Duration::from_secs(5);

/// Relays the changes of `tables` (full names) from `streams` into `feed`, each Redis stream
/// kept to about `max_len` entries, until `shutdown` resolves.
pub async fn relay(
    streams: Streams,
    tables: Vec<String>,
    feed: RedisFeed,
    max_len: usize,
    shutdown: impl Future<Output = ()>,
) {
    let mut relays = tokio::task::JoinSet::new();
    for table in tables {
        relays.spawn(relay_table(streams.clone(), table, feed.clone(), max_len));
    }
    shutdown.await;
    relays.shutdown().await;
}

/// Relays one table's changes, for good: a change that Redis does not take is tried again,
/// never dropped; a table whose stream is gone is looked at again.
async fn relay_table(streams: Streams, table: String, feed: RedisFeed, max_len: usize) {
    let mut publisher: Option<Publisher> = None;
    let mut wait = Duration::from_millis(100);
    loop {
        let mut changes = streams.subscribe(&table);
        changes.ready().await;
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
