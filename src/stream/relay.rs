//! The change relay (`dynarelay relay`): reads each streamed table's stream and appends every
//! change to the table's Redis stream, from which the fleet's instances read (see
//! [`super::redis_feed`]).
//!
//! Relays share the work by leases in a DynamoDB table ([`super::leases`]): one per shard, so
//! each shard is read by one relay at a time (AWS allows about two readers per shard), and a
//! second relay stands by, or reads the shards the first does not hold. A relay that stops
//! lets go of its leases and the other takes them at once; one that dies is replaced once its
//! leases' counters have stood still for a lease period. Either way reading goes on after the
//! last checkpoint (the last record Redis took), so nothing is skipped; the records published
//! again after it are passed on once by the instances, which remember each item's last change.
//!
//! A table's stream seen for the first time (no lease of it yet) is read from what is written
//! from then on; shards that appear later (children of split or closed ones) from their oldest
//! record, each only once its parent is read to its end. A stream found in place of the one
//! followed (disabled and enabled again) is read from its oldest record, after a gap is
//! published: what was written in between was never recorded.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

use tokio::{sync::watch, task::JoinHandle, time::Instant};

use super::{
    Event, Recognise, StreamSettings,
    calls::{Calls, Failure, ShardInfo},
    leases::{Checkpoint, Lease, LeaseTable},
    redis_feed::RedisFeed,
    relay_shard::{Held, Outcome, Parts, ShardReader},
};
use crate::metrics::Metrics;

/// Longest wait before looking again for a table's stream.
const MAX_WAIT: Duration = Duration::from_secs(5);
/// How often a stream's shards are listed again, to find new ones, while none ends.
const DESCRIBE_EVERY: Duration = Duration::from_secs(10);

/// How a relay reads and leases.
#[derive(Debug, Clone, Copy)]
pub struct RelaySettings {
    /// Polling and backoff, as for `serve`'s readers.
    pub stream: StreamSettings,
    /// How long a lease stays its holder's without renewal: the longest a dead relay's shards
    /// wait for another. Held leases are renewed three times a period.
    pub lease_period: Duration,
    /// About how many entries each table's Redis stream keeps.
    pub max_len: usize,
}

/// What a relay is doing, for its health checks and metrics.
#[derive(Debug, Default)]
pub struct Progress {
    /// By table: when its leases were last read (the relay is in touch with the lease table and
    /// the stream), and the lease period.
    tables: Mutex<HashMap<String, Option<Instant>>>,
    period: Mutex<Duration>,
}

impl Progress {
    /// Whether the relay follows every table's stream: each found, and each table's leases read
    /// within the last two lease periods (holding some or standing by to take them).
    pub fn ready(&self) -> bool {
        let period = *self.period.lock().unwrap_or_else(|e| e.into_inner());
        let tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        !tables.is_empty()
            && tables
                .values()
                .all(|seen| seen.is_some_and(|at| at.elapsed() < period * 2))
    }

    fn seen(&self, table: &str, at: Option<Instant>) {
        self.tables
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(table.to_owned(), at);
    }
}

/// What a relay reads with, and writes to.
pub struct RelayParts {
    /// Finds the tables' streams and writes the leases.
    pub dynamodb: aws_sdk_dynamodb::Client,
    /// Reads the streams.
    pub streams: aws_sdk_dynamodbstreams::Client,
    /// The lease table, made if missing.
    pub leases: LeaseTable,
    /// Where changes go.
    pub feed: RedisFeed,
    /// Which items are the model's: the others are counted, not published.
    pub recognise: Recognise,
    /// Its metrics.
    pub metrics: Arc<Metrics>,
}

impl std::fmt::Debug for RelayParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayParts")
            .field("leases", &self.leases)
            .finish_non_exhaustive()
    }
}

/// Relays the changes of `tables` (full names) until `shutdown` resolves, then lets go of its
/// leases; tells `progress` how it goes. Fails only when the lease table cannot be had.
pub async fn relay(
    parts: RelayParts,
    tables: Vec<String>,
    settings: RelaySettings,
    progress: Arc<Progress>,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    parts.leases.ensure().await?;
    *progress.period.lock().unwrap_or_else(|e| e.into_inner()) = settings.lease_period;
    let shared = Parts {
        dynamodb: parts.dynamodb,
        streams: parts.streams,
        metrics: parts.metrics,
        leases: parts.leases,
        feed: parts.feed,
        recognise: parts.recognise,
        settings: settings.stream,
        max_len: settings.max_len,
    };
    let (stop, stopping) = watch::channel(false);
    let mut relays = tokio::task::JoinSet::new();
    for table in tables {
        progress.seen(&table, None);
        let relay = TableRelay {
            parts: shared.clone(),
            table: Arc::from(table.as_str()),
            period: settings.lease_period,
            progress: Arc::clone(&progress),
            stopping: stopping.clone(),
        };
        relays.spawn(relay.run());
    }
    shutdown.await;
    // Each table's relay lets go of its leases.
    let _ = stop.send(true);
    while relays.join_next().await.is_some() {}
    Ok(())
}

/// One table as a relay follows it.
struct TableRelay {
    parts: Parts,
    table: Arc<str>,
    period: Duration,
    progress: Arc<Progress>,
    stopping: watch::Receiver<bool>,
}

/// Why following one stream ended.
enum Ended {
    /// The relay is stopping.
    Stopped,
    /// The stream is gone (disabled, or the table deleted).
    StreamGone,
}

/// A shard this relay holds and reads.
struct Reading {
    held: Arc<Held>,
    task: JoinHandle<Outcome>,
}

impl TableRelay {
    fn calls(&self) -> Calls<'_> {
        self.parts.calls(&self.table)
    }

    fn stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Waits `wait`, or less when the relay stops.
    async fn pause(&mut self, wait: Duration) {
        let _ = tokio::time::timeout(wait, self.stopping.changed()).await;
    }

    async fn run(mut self) {
        // The stream followed before, if any.
        let mut followed: Option<String> = None;
        while !self.stopping() {
            let arn = match self.calls().find_stream().await {
                Ok(Some(arn)) if followed.as_ref() == Some(&arn) => {
                    // The table still names the stream found gone, for a moment.
                    self.pause(MAX_WAIT).await;
                    continue;
                }
                Ok(Some(arn)) => arn,
                Ok(None) => {
                    tracing::warn!(table = %self.table, "the table has no stream: nothing is relayed for it");
                    self.progress.seen(&self.table, None);
                    self.pause(MAX_WAIT).await;
                    continue;
                }
                Err(()) => {
                    self.progress.seen(&self.table, None);
                    self.pause(MAX_WAIT).await;
                    continue;
                }
            };
            let first = followed.is_none();
            if !first {
                // Writes between the old stream's end and the new one's start were never
                // recorded.
                self.gap().await;
            }
            tracing::info!(table = %self.table, "relaying the table's changes");
            match self.follow(&arn, first).await {
                Ended::Stopped => break,
                Ended::StreamGone => followed = Some(arn),
            }
        }
    }

    /// Publishes a gap, trying again until Redis takes it or the relay stops.
    async fn gap(&mut self) {
        let event = Event::Gap;
        while !self.stopping() {
            let published = match self.parts.feed.publisher(self.parts.max_len).await {
                Ok(mut publisher) => publisher
                    .publish(&self.table, &event, None)
                    .await
                    .map(|_| ()),
                Err(err) => Err(err),
            };
            match published {
                Ok(()) => {
                    self.parts.metrics.stream_gap(&self.table);
                    return;
                }
                Err(err) => {
                    tracing::warn!(table = %self.table, error = %err, "publishing a gap to Redis failed; trying again");
                    self.pause(MAX_WAIT).await;
                }
            }
        }
    }

    /// Follows one stream by its leases until it is gone or the relay stops. `first`: the first
    /// stream of the table this relay sees (read from now on if nobody leased it yet).
    async fn follow(&mut self, arn: &str, first: bool) -> Ended {
        let mut reading: HashMap<String, Reading> = HashMap::new();
        // Each lease not held here: its counter, and since when it has stood still.
        let mut seen: HashMap<String, (u64, Instant)> = HashMap::new();
        // Leases this relay made at `LATEST` moments before taking them.
        let mut fresh: HashSet<String> = HashSet::new();
        let mut shards: Option<Vec<ShardInfo>> = None;
        let mut described: Option<Instant> = None;
        let ended = loop {
            if self.stopping() {
                break Ended::Stopped;
            }
            // Shards read to their end, or lost.
            let mut gone = Vec::new();
            let done: Vec<String> = reading
                .iter()
                .filter(|(_, r)| r.task.is_finished())
                .map(|(id, _)| id.clone())
                .collect();
            for id in done {
                let reader = reading.remove(&id).expect("listed");
                match reader.task.await {
                    Ok(Outcome::Finished) => {
                        tracing::info!(table = %self.table, shard = %id, "a shard was read to its end");
                        described = None;
                    }
                    Ok(Outcome::Lost) => {
                        tracing::info!(table = %self.table, shard = %id, "a shard's lease was lost");
                    }
                    Ok(Outcome::Gone) => gone.push(id),
                    // Its lease is still this relay's: taken again next round.
                    Err(err) => {
                        tracing::warn!(table = %self.table, shard = %id, error = %err, "a shard's reader failed; reading it again");
                    }
                }
            }
            if !gone.is_empty() {
                match self.calls().describe(arn).await {
                    Err(Failure::Gone) => break Ended::StreamGone,
                    Ok(found) => {
                        self.shards_gone(arn, &gone, &found).await;
                        shards = Some(found);
                        described = Some(Instant::now());
                    }
                    // Looked at again when their leases are taken again.
                    Err(_) => {}
                }
            }
            if described.is_none_or(|at| at.elapsed() >= DESCRIBE_EVERY) {
                match self.calls().describe(arn).await {
                    Ok(found) => {
                        shards = Some(found);
                        described = Some(Instant::now());
                    }
                    Err(Failure::Gone) => break Ended::StreamGone,
                    Err(_) => {}
                }
            }
            let Ok(mut leases) = self.parts.leases.list(arn).await else {
                self.pause(self.period / 3).await;
                continue;
            };
            if let Some(shards) = shards.take()
                && !self
                    .lease_new_shards(arn, first, &shards, &mut leases, &mut fresh)
                    .await
            {
                // Tried again next round.
                described = None;
            }
            self.renew(arn, &mut reading).await;
            self.take(arn, &leases, &mut seen, &mut fresh, &mut reading)
                .await;
            self.progress.seen(&self.table, Some(Instant::now()));
            self.parts
                .metrics
                .leases_held(&self.table, reading.len() as i64);
            self.pause(self.period / 3).await;
        };
        // Stopping, or the stream is gone: no more reading, and the leases go to whoever comes.
        for (id, reader) in reading {
            reader.task.abort();
            let _ = reader.task.await;
            let _ = self.parts.leases.release(arn, &id).await;
        }
        self.parts.metrics.leases_held(&self.table, 0);
        ended
    }

    /// Makes the leases of shards that have none, and forgets those of shards read to their end
    /// that the stream no longer lists; whether every shard has its lease.
    async fn lease_new_shards(
        &self,
        arn: &str,
        first: bool,
        shards: &[ShardInfo],
        leases: &mut HashMap<String, Lease>,
        fresh: &mut HashSet<String>,
    ) -> bool {
        let mut complete = true;
        // Nobody leased the stream yet: its open shards are read from now on.
        let from_now = first && leases.is_empty();
        let since = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        for shard in shards {
            if leases.contains_key(&shard.id) {
                continue;
            }
            let checkpoint = match (from_now, shard.closed) {
                (true, true) => Checkpoint::Finished,
                (true, false) => Checkpoint::Latest { since },
                (false, _) => Checkpoint::Oldest,
            };
            let made = self
                .parts
                .leases
                .create(
                    (arn, &self.table),
                    &shard.id,
                    shard.parent.as_deref(),
                    &checkpoint,
                )
                .await;
            complete &= made.is_ok();
            if made == Ok(true) {
                if checkpoint != Checkpoint::Finished {
                    fresh.insert(shard.id.clone());
                }
                leases.insert(
                    shard.id.clone(),
                    Lease {
                        shard: shard.id.clone(),
                        parent: shard.parent.clone(),
                        owner: None,
                        counter: 0,
                        from: checkpoint.news_from(),
                        checkpoint,
                    },
                );
            }
        }
        let listed: HashSet<&str> = shards.iter().map(|s| s.id.as_str()).collect();
        let ended: Vec<String> = leases
            .values()
            .filter(|l| l.checkpoint == Checkpoint::Finished && !listed.contains(l.shard.as_str()))
            .map(|l| l.shard.clone())
            .collect();
        for shard in ended {
            if self.parts.leases.forget(arn, &shard).await.is_ok() {
                leases.remove(&shard);
            }
        }
        complete
    }

    /// Of shards whose reading found them gone, those the stream no longer lists were trimmed
    /// (older than the stream keeps) before they were read to their end: what they held is lost
    /// to the fleet, which is told by a gap, and their leases are marked read to their end, so
    /// that their children are read.
    async fn shards_gone(&mut self, arn: &str, gone: &[String], listed: &[ShardInfo]) {
        for id in gone {
            if listed.iter().any(|s| &s.id == id) {
                continue;
            }
            tracing::warn!(table = %self.table, shard = %id, "a shard was trimmed before it was read to its end: its changes are lost");
            self.gap().await;
            let _ = self
                .parts
                .leases
                .checkpoint(arn, id, &Checkpoint::Finished)
                .await;
        }
    }

    /// Renews the leases held; stops reading the shards whose lease another relay took.
    async fn renew(&self, arn: &str, reading: &mut HashMap<String, Reading>) {
        let mut lost = Vec::new();
        for (id, reader) in reading.iter() {
            match self.parts.leases.renew(arn, id).await {
                Ok(true) => reader.held.renewed(),
                Ok(false) => lost.push(id.clone()),
                // Tried again next time; the reader stops by itself if that is too late.
                Err(_) => {}
            }
        }
        for id in lost {
            tracing::info!(table = %self.table, shard = %id, "another relay took a shard's lease");
            if let Some(reader) = reading.remove(&id) {
                reader.task.abort();
            }
        }
    }

    /// Takes the leases nobody holds, or whose holder has not renewed them for a lease period,
    /// of shards whose parent is read to its end; starts reading each.
    async fn take(
        &self,
        arn: &str,
        leases: &HashMap<String, Lease>,
        seen: &mut HashMap<String, (u64, Instant)>,
        fresh: &mut HashSet<String>,
        reading: &mut HashMap<String, Reading>,
    ) {
        seen.retain(|id, _| leases.contains_key(id));
        fresh.retain(|id| leases.contains_key(id));
        for lease in leases.values() {
            if reading.contains_key(&lease.shard) || lease.checkpoint == Checkpoint::Finished {
                continue;
            }
            let still = match seen.get(&lease.shard) {
                Some((counter, since)) if *counter == lease.counter => since.elapsed(),
                _ => {
                    seen.insert(lease.shard.clone(), (lease.counter, Instant::now()));
                    Duration::ZERO
                }
            };
            let free = lease.owner.is_none()
                || lease.owner.as_deref() == Some(self.parts.leases.owner())
                || still >= self.period;
            let parent_done = lease
                .parent
                .as_ref()
                .and_then(|p| leases.get(p))
                .is_none_or(|p| p.checkpoint == Checkpoint::Finished);
            if !free || !parent_done {
                continue;
            }
            if self.parts.leases.take(arn, lease).await != Ok(true) {
                continue;
            }
            if let Some(owner) = &lease.owner {
                tracing::info!(table = %self.table, shard = %lease.shard, previous = %owner, "took over a shard's lease");
            } else {
                tracing::info!(table = %self.table, shard = %lease.shard, "took a shard's lease");
            }
            seen.remove(&lease.shard);
            let held = Arc::new(Held::new(self.period));
            let reader = ShardReader {
                parts: self.parts.clone(),
                table: Arc::clone(&self.table),
                arn: arn.to_owned(),
                shard: lease.shard.clone(),
                checkpoint: lease.checkpoint.clone(),
                from: lease.from.clone(),
                fresh: fresh.remove(&lease.shard),
                held: Arc::clone(&held),
            };
            reading.insert(
                lease.shard.clone(),
                Reading {
                    held,
                    task: tokio::spawn(reader.run()),
                },
            );
        }
    }
}
