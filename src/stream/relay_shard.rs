//! One shard as a relay reads it while it holds the shard's lease: reads a page of records,
//! appends each change to Redis (waiting, and trying again, while Redis does not take it: the
//! relay never reads further ahead than it has published), then writes the lease's checkpoint,
//! and so on to the shard's end. It stops as soon as the lease is lost, or could not be renewed
//! for a lease period (another relay may hold it by then).

use std::{
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

use tokio::time::Instant;

use super::{
    Event, Origin, Recognise, StreamSettings,
    calls::{self, Calls, Failure, Position, RECORDS_PER_CALL},
    leases::{Checkpoint, LeaseTable},
    outlet::Backoff,
    redis_feed::{Publisher, RedisFeed},
    sequence_after,
    shard_marks::{NewsFrom, Said},
};
use crate::metrics::Metrics;

/// How far before a lease's `since` a record may have been created and still be published, when
/// a shard whose lease has no checkpoint yet is read from its oldest record: creation times are
/// rounded (DynamoDB Local's down to the minute), and clocks differ.
const SINCE_SLACK: Duration = Duration::from_secs(60);

/// How often a quiet shard's marks are written to Redis again (see [`super::shard_marks`]): a
/// Redis that came back empty has them again within about this long.
const SEED_EVERY: Duration = Duration::from_secs(3);

/// Whether the relay still holds a lease: when it was last renewed.
#[derive(Debug)]
pub(super) struct Held {
    renewed: Mutex<Instant>,
    period: Duration,
}

impl Held {
    pub(super) fn new(period: Duration) -> Self {
        Self {
            renewed: Mutex::new(Instant::now()),
            period,
        }
    }

    /// The lease was renewed now.
    pub(super) fn renewed(&self) {
        *self.renewed.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// Whether the lease was renewed within a lease period: past it, another relay may have
    /// taken it, and this one reads no more.
    fn alive(&self) -> bool {
        self.renewed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
            < self.period
    }
}

/// Why a shard's reading ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Read and published to its end; the lease says so.
    Finished,
    /// The lease was lost, or not renewed in time.
    Lost,
    /// The stream or shard is gone.
    Gone,
}

/// What a shard reader needs, shared by a table's shards.
#[derive(Clone)]
pub(super) struct Parts {
    pub(super) dynamodb: aws_sdk_dynamodb::Client,
    pub(super) streams: aws_sdk_dynamodbstreams::Client,
    pub(super) metrics: Arc<Metrics>,
    pub(super) leases: LeaseTable,
    pub(super) feed: RedisFeed,
    pub(super) recognise: Recognise,
    pub(super) settings: StreamSettings,
    /// About how many entries each Redis stream keeps.
    pub(super) max_len: usize,
}

/// One shard to read, from its lease's checkpoint.
pub(super) struct ShardReader {
    pub(super) parts: Parts,
    pub(super) table: Arc<str>,
    pub(super) arn: String,
    pub(super) shard: String,
    pub(super) checkpoint: Checkpoint,
    /// Where the shard's news begins, as its lease says.
    pub(super) from: Option<NewsFrom>,
    /// The lease was made by this relay moments ago at `LATEST`: read from the newest record,
    /// not from the oldest (as for a `LATEST` lease another relay made and may have read).
    pub(super) fresh: bool,
    pub(super) held: Arc<Held>,
}

impl Parts {
    /// The stream calls of `table`'s reading.
    pub(super) fn calls<'a>(&'a self, table: &'a str) -> Calls<'a> {
        Calls {
            dynamodb: &self.dynamodb,
            streams: &self.streams,
            metrics: &self.metrics,
            table,
        }
    }
}

impl ShardReader {
    fn calls(&self) -> Calls<'_> {
        self.parts.calls(&self.table)
    }

    /// Reads the shard until its end, or until the lease is lost.
    pub(super) async fn run(self) -> Outcome {
        let mut backoff = Backoff::new(self.parts.settings);
        let mut publisher: Option<Publisher> = None;
        // The last record published (or skipped) of the shard.
        let mut last: Option<String> = match &self.checkpoint {
            Checkpoint::After(sequence) => Some(sequence.clone()),
            _ => None,
        };
        // Where the shard's news begins, once known (for a lease of an earlier version that
        // does not say: from its checkpoint, where that tells).
        let mut news = self.from.clone().or_else(|| self.checkpoint.news_from());
        // The record news begins at, when nothing after it was checkpointed: read from there.
        let mut at_first = match (&last, &news) {
            (None, Some(NewsFrom::At(first))) => Some(first.clone()),
            _ => None,
        };
        // Records created before this are not news (a `LATEST` lease nobody read a record of
        // yet, taken over: read from the oldest).
        let since: Option<SystemTime> = match self.checkpoint {
            Checkpoint::Latest { since } if !self.fresh && at_first.is_none() => {
                Some(millis(since))
            }
            _ => None,
        };
        // When the shard's marks were last written to Redis.
        let mut seeded: Option<Instant> = None;
        // After trimmed records: the last one published before, through which none is again.
        let mut read_through: Option<String> = None;
        let mut start = match (&self.checkpoint, self.fresh) {
            (Checkpoint::Latest { .. }, true) => Start::Latest,
            _ => Start::Oldest,
        };
        let mut iterator: Option<String> = None;
        let shard_id: Arc<str> = Arc::from(self.shard.as_str());
        let stream = Arc::new(super::Position::new(&self.arn, 0));
        loop {
            if !self.held.alive() {
                return Outcome::Lost;
            }
            if seeded.is_none_or(|at| at.elapsed() >= SEED_EVERY)
                && self
                    .seed(&mut publisher, last.as_deref(), news.as_ref())
                    .await
            {
                seeded = Some(Instant::now());
            }
            if iterator.is_none() {
                let taken = match (&last, start) {
                    (Some(last), _) => {
                        self.calls()
                            .iterator(&self.arn, &self.shard, Position::After(last))
                            .await
                    }
                    (None, _) if at_first.is_some() => {
                        let first = at_first.as_deref().unwrap_or_default();
                        self.calls()
                            .iterator(&self.arn, &self.shard, Position::At(first))
                            .await
                    }
                    // From now on: never decided from an answer (see `super::reader`).
                    (None, Start::Latest) => {
                        self.calls()
                            .iterator(&self.arn, &self.shard, Position::Latest)
                            .await
                    }
                    (None, Start::Oldest) => {
                        self.calls()
                            .iterator(&self.arn, &self.shard, Position::Oldest)
                            .await
                    }
                };
                match taken {
                    Ok(Some(taken)) => iterator = Some(taken),
                    // A closed shard with nothing after the checkpoint.
                    Ok(None) => return self.finish().await,
                    Err(Failure::Trimmed) => {
                        // The checkpoint is older than what the stream keeps: what came between
                        // is lost. (From `LATEST`: DynamoDB Local's answer for a shard with no
                        // record yet, every one of which is news; see `super::reader`.)
                        if last.is_some() || at_first.is_some() {
                            self.publish(&mut publisher, &Event::Gap, None).await;
                        }
                        read_through = last.take().or(read_through);
                        at_first = None;
                        start = Start::Oldest;
                        continue;
                    }
                    Err(Failure::Gone) => return Outcome::Gone,
                    Err(Failure::Expired | Failure::Retry) => {
                        backoff.wait().await;
                        continue;
                    }
                }
            }
            let calls = self.calls();
            let page = match calls
                .records(iterator.as_deref().unwrap_or_default(), RECORDS_PER_CALL)
                .await
            {
                Ok(page) => page,
                Err(Failure::Expired) => {
                    iterator = None;
                    continue;
                }
                Err(Failure::Trimmed) => {
                    // Records after the last one read are gone. (A shard read from `LATEST` with
                    // nothing read yet lost nothing: only DynamoDB Local answers so, for a shard
                    // that held no record when the iterator was taken, see `super::reader`; it
                    // is read from its oldest record, every one of which is news.)
                    if last.is_some() || at_first.is_some() || start == Start::Oldest {
                        self.publish(&mut publisher, &Event::Gap, None).await;
                    }
                    read_through = last.take().or(read_through);
                    at_first = None;
                    start = Start::Oldest;
                    iterator = None;
                    continue;
                }
                Err(Failure::Gone) => return Outcome::Gone,
                Err(Failure::Retry) => {
                    backoff.wait().await;
                    continue;
                }
            };
            backoff.reset();
            if news == Some(NewsFrom::NotYet)
                && let Some(first) = page.records.iter().find(|record| {
                    !since.is_some_and(|since| {
                        calls::created(record).is_some_and(|created| created + SINCE_SLACK < since)
                    })
                })
                && let Some(first) = calls::sequence(first)
            {
                // Said in the lease before anything is published: whoever reads the shard
                // next, and every replay, knows where its news begins.
                let first = NewsFrom::At(first.to_owned());
                if !self.say_news_from(&first).await {
                    return Outcome::Lost;
                }
                news = Some(first);
            }
            for record in &page.records {
                let sequence = calls::sequence(record);
                let again = matches!((&read_through, sequence), (Some(through), Some(sequence)) if !sequence_after(sequence, through));
                let old = since.is_some_and(|since| {
                    calls::created(record).is_some_and(|created| created + SINCE_SLACK < since)
                });
                if !again {
                    read_through = None;
                }
                if let Some(mut change) = calls::change(&self.table, record)
                    && !again
                    && !old
                {
                    // Published with its shard and stream, for the instances' places.
                    change.origin = Some(Origin {
                        shard: Arc::clone(&shard_id),
                        after: Arc::clone(&stream),
                    });
                    if change.recognised_by(&self.parts.recognise) {
                        if !self
                            .publish(
                                &mut publisher,
                                &Event::Change(Arc::new(change)),
                                news.as_ref(),
                            )
                            .await
                        {
                            return Outcome::Lost;
                        }
                        self.parts.metrics.change_published(&self.table);
                        // Passed on, as a reader counts what it hands its subscribers.
                        self.parts.metrics.stream_record(&self.table);
                    } else {
                        self.parts.metrics.stream_unmatched(&self.table);
                    }
                }
                if let Some(sequence) = sequence {
                    last = Some(sequence.to_owned());
                    at_first = None;
                }
            }
            calls.lag(&page.records);
            if !page.records.is_empty()
                && let Some(sequence) = &last
            {
                match self
                    .parts
                    .leases
                    .checkpoint(&self.arn, &self.shard, &Checkpoint::After(sequence.clone()))
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => return Outcome::Lost,
                    // Written with a later page.
                    Err(_) => {}
                }
            }
            iterator = page.next;
            if iterator.is_none() {
                return self.finish().await;
            }
            if page.records.is_empty() {
                tokio::time::sleep(self.parts.settings.poll_interval).await;
            }
        }
    }

    /// Marks the shard read to its end in its lease (trying again until written or lost).
    async fn finish(&self) -> Outcome {
        let mut backoff = Backoff::new(self.parts.settings);
        while self.held.alive() {
            match self
                .parts
                .leases
                .checkpoint(&self.arn, &self.shard, &Checkpoint::Finished)
                .await
            {
                Ok(true) => return Outcome::Finished,
                Ok(false) => return Outcome::Lost,
                Err(_) => backoff.wait().await,
            }
        }
        Outcome::Lost
    }

    /// Writes where the shard's news begins in its lease, trying again until written; `false`
    /// when the lease was lost.
    async fn say_news_from(&self, from: &NewsFrom) -> bool {
        let mut backoff = Backoff::new(self.parts.settings);
        while self.held.alive() {
            match self
                .parts
                .leases
                .news_from(&self.arn, &self.shard, from)
                .await
            {
                Ok(held) => return held,
                Err(_) => backoff.wait().await,
            }
        }
        false
    }

    /// Writes the shard's marks to Redis again (see [`super::shard_marks`]): whether Redis took
    /// them (one try: the next round tries again).
    async fn seed(
        &self,
        publisher: &mut Option<Publisher>,
        last: Option<&str>,
        from: Option<&NewsFrom>,
    ) -> bool {
        if last.is_none() && from.is_none() {
            return true;
        }
        let said = Said {
            stream: super::position::stream_identity(&self.arn),
            shard: &self.shard,
            last,
            from,
        };
        let seeded = match publisher {
            Some(p) => p.seed(&self.table, &said).await,
            None => match self.parts.feed.publisher(self.parts.max_len).await {
                Ok(p) => publisher.insert(p).seed(&self.table, &said).await,
                Err(err) => Err(err),
            },
        };
        if let Err(err) = &seeded {
            tracing::debug!(table = %self.table, shard = %self.shard, error = %err, "writing a shard's marks to Redis failed; trying again");
            *publisher = None;
        }
        seeded.is_ok()
    }

    /// Appends `event` to the table's Redis stream (with `from`, where the shard's news begins),
    /// trying again (and reading nothing more) until Redis takes it; `false` when the lease was
    /// lost meanwhile.
    async fn publish(
        &self,
        publisher: &mut Option<Publisher>,
        event: &Event,
        from: Option<&NewsFrom>,
    ) -> bool {
        let mut backoff = Backoff::new(self.parts.settings);
        loop {
            if !self.held.alive() {
                return false;
            }
            let published = match publisher {
                Some(p) => p.publish(&self.table, event, from).await.map(|_| ()),
                None => match self.parts.feed.publisher(self.parts.max_len).await {
                    Ok(p) => {
                        *publisher = Some(p);
                        continue;
                    }
                    Err(err) => Err(err),
                },
            };
            match published {
                Ok(()) => return true,
                Err(err) => {
                    tracing::warn!(table = %self.table, shard = %self.shard, error = %err, "publishing a change to Redis failed; trying again");
                    *publisher = None;
                    backoff.wait().await;
                }
            }
        }
    }
}

/// Where a shard without a checkpointed record is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    Latest,
    Oldest,
}

/// A time in milliseconds since the epoch.
fn millis(since: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(since)
}
