//! One table's stream reader: finds the table's stream, walks its shards in lineage order (a
//! child only once its parent is read to its end), polls each open shard within the rate AWS
//! allows, and passes every record on in order.
//!
//! What it survives, each by the error's type (never its text):
//! - a shard that closes (its iterator runs out): the stream is described again and its
//!   children are read from their first record;
//! - an iterator that expired (unused for 15 minutes, after long backoff): a new one after the
//!   last record read;
//! - records trimmed before they were read (`TrimmedDataAccessException`): read on from the
//!   oldest record kept, and subscribers are told of the gap;
//! - throttling (`LimitExceededException`), internal errors and broken connections: backed off,
//!   exponentially up to [`StreamSettings::max_backoff`];
//! - a stream disabled and enabled again (a new ARN): the old one described as disabled (or
//!   gone), the new one found through `DescribeTable`, with a gap reported, since writes in
//!   between were never recorded.
//!
//! Starting "from now", each open shard is read from a `LATEST` iterator: the reader never
//! decides that a shard is empty from an answer, since `GetRecords` may answer with no records
//! while the shard holds some (it may take several calls to reach them). Nothing created before
//! the reader started is passed on as news.
//!
//! DynamoDB Local, as observed: one shard per table; a record readable a few milliseconds after
//! its write; no record for a write that changes nothing; never an empty answer before a shard's
//! records; and an iterator taken on a shard with no record yet (`LATEST` or its oldest) fails
//! with `TrimmedDataAccessException` once another table is written. AWS never answers so for a
//! `LATEST` iterator (one unused for 15 minutes expires first): a shard whose `LATEST` iterator
//! fails so before any record was read held none when it was taken, and is read from its oldest
//! record, every one of which is news.

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, SystemTime},
};

use super::{
    Origin, StreamSettings, Unfollowable,
    calls::{self, Calls, Failure, Position, RECORDS_PER_CALL, ShardInfo},
    outlet::{Backoff, Outlet},
    position::{Mark, Position as Place},
    sequence_after,
};
use crate::metrics::Metrics;

/// The view type of a stream whose records hold what subscribers need: the item before and after.
const IMAGES: &str = "NEW_AND_OLD_IMAGES";

/// How often the stream is described again to find new shards while none closes.
const DESCRIBE_EVERY: Duration = Duration::from_secs(10);

/// A reader of one table's stream, as [`super::Streams`] starts it.
pub(super) struct Reader {
    pub(super) dynamodb: aws_sdk_dynamodb::Client,
    pub(super) streams: aws_sdk_dynamodbstreams::Client,
    pub(super) settings: StreamSettings,
    pub(super) metrics: Arc<Metrics>,
    pub(super) table: Arc<str>,
    /// Where what it reads goes.
    pub(super) outlet: Outlet,
    /// When the reader started.
    pub(super) started: SystemTime,
}

/// Where the reader is in one shard.
#[derive(Debug, Default)]
struct Shard {
    parent: Option<String>,
    /// The next iterator, if one is held.
    iterator: Option<String>,
    /// The last record read.
    last: Option<String>,
    /// After a shard is read again from its oldest record (its records were trimmed): the last
    /// record passed on before, through which records are not passed on again.
    read_through: Option<String>,
    /// How to take the first iterator, before any record was read.
    start: Start,
    /// Read to its end: it is closed and every record was read.
    finished: bool,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// The shard's oldest record kept.
    #[default]
    Oldest,
    /// After the newest record when the reader started.
    Latest,
}

/// Why a walk of one stream ended.
enum Ended {
    /// Nobody listens any more.
    Unsubscribed,
    /// The stream is gone (disabled, or the table deleted): look for the table's stream again.
    StreamGone,
}

impl Reader {
    /// Reads until nobody listens or the table has no stream, then leaves the process's readers.
    pub(super) async fn run(self) {
        let mut generation = 0u32;
        let mut backoff = Backoff::new(self.settings);
        // The stream last found gone: the table may still name it for a moment.
        let mut gone: Option<String> = None;
        loop {
            if self.unsubscribed() {
                break;
            }
            let arn = match self.calls().find_stream_view().await {
                Ok(Some((arn, _))) if gone.as_ref() == Some(&arn) => {
                    backoff.wait().await;
                    continue;
                }
                Ok(Some((arn, view))) if view == IMAGES => arn,
                Ok(found) => {
                    // No stream, or one whose records cannot tell a subscriber what changed:
                    // nothing to follow, for good (`dynarelay check` reports it too).
                    let why = match found {
                        Some((_, view)) => Unfollowable::WithoutImages(view),
                        None => Unfollowable::NoStream,
                    };
                    tracing::warn!(table = %self.table, reason = %why, "the table's changes cannot be followed: its subscriptions end with SUBSCRIPTIONS_UNAVAILABLE");
                    if generation > 0 {
                        // Its stream was disabled while followed: what was written since is lost.
                        self.gap();
                    }
                    self.outlet.end(&why);
                    break;
                }
                Err(()) => {
                    backoff.wait().await;
                    continue;
                }
            };
            backoff.reset();
            if generation > 0 {
                // Writes between the old stream's end and the new one's start were never recorded.
                self.gap();
            }
            match self.walk(&arn, generation == 0).await {
                Ended::Unsubscribed => break,
                Ended::StreamGone => {
                    generation += 1;
                    gone = Some(arn);
                }
            }
        }
        self.outlet.leave();
    }

    fn unsubscribed(&self) -> bool {
        self.outlet.unsubscribed()
    }

    /// Its stream calls.
    fn calls(&self) -> Calls<'_> {
        Calls {
            dynamodb: &self.dynamodb,
            streams: &self.streams,
            metrics: &self.metrics,
            table: &self.table,
        }
    }

    /// Walks one stream until nobody listens or the stream is gone. On the first stream of the
    /// reader, open shards are read from their newest record on and closed ones not at all; on a
    /// stream found later, every shard from its oldest record.
    async fn walk(&self, arn: &str, first: bool) -> Ended {
        let mut backoff = Backoff::new(self.settings);
        let mut shards: BTreeMap<String, Shard> = BTreeMap::new();
        // Where the reader stands in the table's changes: every shard it reads is named.
        let mut place = Place::new(arn, 0);
        let started = millis(self.started);
        if first {
            self.outlet.began(started);
        }
        // The first description, with every open shard's first iterator taken, before the
        // first round of reads.
        loop {
            if self.unsubscribed() {
                return Ended::Unsubscribed;
            }
            match self.calls().describe(arn).await {
                Ok(found) => {
                    for ShardInfo { id, parent, closed } in found {
                        let shard = Shard {
                            parent,
                            start: if first { Start::Latest } else { Start::Oldest },
                            finished: first && closed,
                            ..Shard::default()
                        };
                        // Read from now on, or from its oldest record.
                        let since = if first { started } else { 0 };
                        place.set(&Arc::from(id.as_str()), Mark::Since(since));
                        shards.insert(id, shard);
                    }
                    break;
                }
                Err(Failure::Gone) => return Ended::StreamGone,
                Err(_) => backoff.wait().await,
            }
        }
        let ids: Vec<String> = shards.keys().cloned().collect();
        for id in &ids {
            loop {
                if self.unsubscribed() {
                    return Ended::Unsubscribed;
                }
                let shard = shards.get_mut(id).expect("listed");
                if shard.finished || shard.iterator.is_some() {
                    break;
                }
                match self.take_iterator(arn, id, shard).await {
                    Ok(()) => break,
                    Err(Failure::Gone) => return Ended::StreamGone,
                    Err(Failure::Trimmed) => {
                        // DynamoDB Local's answer for a shard with no record yet (see the
                        // module's note): every record it will hold is news.
                        shard.start = Start::Oldest;
                    }
                    Err(_) => backoff.wait().await,
                }
            }
        }
        backoff.reset();

        let mut described = tokio::time::Instant::now();
        // The last ticket marked: subscribers up to it have their place.
        let mut marked = 0;
        loop {
            if self.unsubscribed() {
                return Ended::Unsubscribed;
            }
            // Subscribers that joined before this round get their place after it, if it reads
            // every shard to where it stands.
            let asked = self.outlet.asked();
            let mut complete = true;
            let mut read_any = false;
            let mut shard_closed = false;
            let mut failed = false;
            let ids: Vec<String> = shards.keys().cloned().collect();
            for id in &ids {
                let parent_done = shards[id]
                    .parent
                    .as_ref()
                    .and_then(|p| shards.get(p))
                    .is_none_or(|p| p.finished);
                let shard = shards.get_mut(id).expect("listed");
                if shard.finished || !parent_done {
                    continue;
                }
                match self.poll(arn, id, shard, &mut place).await {
                    Ok(records) => {
                        read_any |= records > 0;
                        shard_closed |= shard.finished;
                    }
                    Err(Failure::Gone) => return Ended::StreamGone,
                    Err(Failure::Expired) => {
                        shard.iterator = None;
                        complete = false;
                    }
                    Err(Failure::Trimmed) => {
                        // Records after the last one read are gone: start again from the oldest
                        // kept (passing on none of those passed on before), and tell subscribers.
                        // (A shard read from `LATEST` with nothing read yet lost nothing: only
                        // DynamoDB Local answers so, for a shard that held no record when the
                        // iterator was taken; see the module's note.)
                        if shard.last.is_some() || shard.start == Start::Oldest {
                            self.gap();
                        }
                        shard.iterator = None;
                        shard.read_through = shard.last.take().or(shard.read_through.take());
                        shard.start = Start::Oldest;
                        complete = false;
                    }
                    Err(Failure::Retry) => failed = true,
                }
            }
            if shard_closed || described.elapsed() >= DESCRIBE_EVERY {
                match self.calls().describe(arn).await {
                    Ok(found) => {
                        let listed: std::collections::BTreeSet<&str> =
                            found.iter().map(|s| s.id.as_str()).collect();
                        // Shards trimmed from the stream's description are done with.
                        shards.retain(|id, shard| listed.contains(id.as_str()) || !shard.finished);
                        place.retain(|id| shards.contains_key(id));
                        for info in &found {
                            shards.entry(info.id.clone()).or_insert_with(|| {
                                // A new shard is read from its oldest record.
                                place.set(&Arc::from(info.id.as_str()), Mark::Since(0));
                                Shard {
                                    parent: info.parent.clone(),
                                    ..Shard::default()
                                }
                            });
                        }
                        described = tokio::time::Instant::now();
                    }
                    Err(Failure::Gone) => return Ended::StreamGone,
                    Err(_) => failed = true,
                }
            }
            // New shards found in this round are read in the next one.
            if complete && !failed && !shard_closed {
                let place = Arc::new(place.clone());
                self.outlet.placed(&place);
                if asked > marked {
                    self.outlet.mark(asked, Some(&place));
                    marked = asked;
                }
            }
            if failed {
                backoff.wait().await;
            } else {
                backoff.reset();
                if !read_any {
                    tokio::time::sleep(self.settings.poll_interval).await;
                }
            }
        }
    }

    /// Takes a shard's iterator: after its last record read, or where it starts.
    async fn take_iterator(&self, arn: &str, id: &str, shard: &mut Shard) -> Result<(), Failure> {
        let position = match (&shard.last, shard.start) {
            (Some(last), _) => Position::After(last),
            (None, Start::Latest) => Position::Latest,
            (None, Start::Oldest) => Position::Oldest,
        };
        shard.iterator = self.calls().iterator(arn, id, position).await?;
        if shard.iterator.is_none() {
            // No iterator for a closed shard with nothing left.
            shard.finished = true;
        }
        Ok(())
    }

    /// One `GetRecords` on a shard (taking its iterator first if needed): passes on what it
    /// returns and moves on. The number of records read.
    async fn poll(
        &self,
        arn: &str,
        id: &str,
        shard: &mut Shard,
        place: &mut Place,
    ) -> Result<usize, Failure> {
        if shard.iterator.is_none() {
            self.take_iterator(arn, id, shard).await?;
            if shard.finished {
                return Ok(0);
            }
        }
        let iterator = shard.iterator.clone().unwrap_or_default();
        let calls = self.calls();
        let page = calls.records(&iterator, RECORDS_PER_CALL).await?;
        let records = &page.records;
        let shard_id: Arc<str> = Arc::from(id);
        for record in records {
            let sequence = calls::sequence(record);
            let again = match (&shard.read_through, sequence) {
                (Some(through), Some(sequence)) => !sequence_after(sequence, through),
                _ => false,
            };
            if !again {
                shard.read_through = None;
            }
            if let Some(sequence) = sequence {
                if shard.last.is_none() && shard.read_through.is_none() {
                    // The first record of the shard read: where its news began.
                    self.outlet.first(&shard_id, sequence);
                }
                shard.last = Some(sequence.to_owned());
                place.set(&shard_id, Mark::After(sequence.to_owned()));
            }
            if let Some(mut change) = calls::change(&self.table, record)
                && !again
            {
                change.origin = Some(Origin {
                    shard: Arc::clone(&shard_id),
                    after: Arc::new(place.clone()),
                });
                self.outlet.send(change);
            }
        }
        calls.lag(records);
        shard.iterator = page.next;
        if shard.iterator.is_none() {
            shard.finished = true;
        }
        Ok(records.len())
    }

    /// Tells subscribers that changes were lost.
    fn gap(&self) {
        self.outlet.gap();
    }
}

/// A time as milliseconds since the Unix epoch.
fn millis(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
