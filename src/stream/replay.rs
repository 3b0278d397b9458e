//! The changes of a table since a [`Position`]: what a subscriber that lost its subscription
//! missed, wherever it was lost (a process restarted, a Redis emptied, a backlog overflowed).
//! On an instance reading Redis, from the table's Redis stream while it still holds the entry
//! the place names (every entry after it is then there too: Redis trims the oldest first);
//! otherwise from the table's stream itself, for as long as it keeps records (24 hours).
//!
//! Each shard is read from the place's mark in it, in lineage order (a parent before its
//! children), up to where the live reader that the subscriber joined took its place: what comes
//! after that reaches the subscriber live, and what the replay passed on is not passed on again
//! (see [`super::Subscription::next`]). Where that is:
//! - the live reader's mark in the shard when the subscriber joined: read to, through any
//!   number of empty answers (AWS may answer `GetRecords` with no records while a shard holds
//!   some);
//! - for a shard the live reader had read nothing of since it took `LATEST`: the record its
//!   place names there once it names one (it has then read past its start); until then what
//!   the replay finds is passed on (the live copies are not passed again). An empty answer decides nothing; only a shard that stays
//!   without records for [`PENDING_PATIENCE`] while the live reader has read nothing of it either
//!   ends there (it holds the subscription's live changes back meanwhile);
//! - for a shard the live reader reads from its oldest record (one it found after it started):
//!   nothing, the live reader passes all of it on;
//! - with no live reader's place at all: the shard's end now.
//!
//! A place the stream can no longer continue from (another stream of the table, a shard
//! trimmed, records past its mark trimmed) is [`Expired`]: the subscriber must read the
//! connection again.

use std::{
    collections::{HashSet, VecDeque},
    sync::{Arc, Weak},
    time::{Duration, Instant, SystemTime},
};

use redis::aio::MultiplexedConnection;

use super::{
    Change, Event, Origin, StreamSettings,
    calls::{Calls, Failure},
    history::{Cursor, History, Start},
    outlet::Backoff,
    position::{Mark, Position},
    redis_feed::{Held, RedisFeed},
    shard_marks::{self, Marks, NewsFrom},
};
use crate::metrics::Metrics;

/// How far before a shard's time mark a record may have been created and still be after it:
/// records' creation times are approximate (DynamoDB Local's rounded down to the minute), so a
/// record a moment after the mark can carry a time before it.
const SINCE_SLACK: Duration = Duration::from_secs(60);

/// How long a shard the live reader had read nothing of is read with nothing found, while its
/// place still names no record there, before the replay takes it as read: AWS answers empty for
/// a few calls at most before a shard's records, and the live changes of every shard wait
/// meanwhile.
const PENDING_PATIENCE: Duration = Duration::from_secs(10);

/// Where a shard's replay ends, besides the shard's end.
#[derive(Debug, Clone)]
enum Target {
    /// Just after this record: the live reader's mark in the shard.
    After(String),
    /// The record the live reader's place names in the shard, once it names one.
    Pending,
    /// Wherever the shard stands now: there is no live reader's place to read to.
    Now,
}

/// The shard a replay is reading.
struct Reading {
    shard: Arc<str>,
    /// The replay's place in what the table's replays read of it.
    cursor: Cursor,
    /// Records created well before this time (ms) are skipped; 0: none.
    since: u64,
    target: Target,
    /// Since when the shard has answered with nothing new.
    quiet: Option<Instant>,
}

/// The place cannot be continued from: the changes after it are no longer all kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expired;

/// Where a shard's replay starts.
#[derive(Debug, Clone)]
enum From {
    /// Just after this record.
    After(String),
    /// At its oldest record, skipping those created well before this time (ms; 0: none).
    Oldest(u64),
    /// At this record: the first the relays passed on as news.
    At(String),
}

/// A stream's ARN and the shards left to read from it, each with its start, in order.
type Plan = (String, VecDeque<(Arc<str>, From)>);

/// One table's changes since a place, read page by page.
pub(super) struct Replay {
    pub(super) dynamodb: aws_sdk_dynamodb::Client,
    pub(super) streams: aws_sdk_dynamodbstreams::Client,
    pub(super) metrics: Arc<Metrics>,
    pub(super) settings: StreamSettings,
    pub(super) table: Arc<str>,
    /// The place replayed from, moved on by every record read: the place after what was passed.
    pub(super) at: Position,
    /// The live reader's place when the subscriber joined it: each shard is read up to its mark
    /// there. `None`: every shard to its end.
    pub(super) until: Option<Arc<Position>>,
    /// The stream and the shards left to read, once planned.
    plan: Option<Plan>,
    /// The shard being read.
    reading: Option<Reading>,
    /// The live reader the subscriber joined, for its place now (see [`Target::Pending`]).
    pub(super) live: Weak<super::Shared>,
    /// What the table's replays running now read of its stream, shared.
    history: Arc<History>,
    /// When the replay planned its reads of the stream.
    began: SystemTime,
    /// While the place is read from Redis: the feed, and a connection once made.
    redis: Option<(RedisFeed, Option<MultiplexedConnection>)>,
    /// For a place an instance took from Redis: the feed, for the relays' marks of the shards
    /// the place does not name (see [`super::shard_marks`]).
    marked_by: Option<RedisFeed>,
    /// Whether the resume was counted as one from Redis.
    counted: bool,
}

/// Most Redis entries one replay read takes.
const ENTRIES_PER_READ: usize = 500;

impl Replay {
    /// A replay of `table` from `at`, up to `until`.
    pub(super) fn new(
        streams: &super::Readers,
        table: &str,
        mut at: Position,
        until: Option<Arc<Position>>,
    ) -> Self {
        // An instance reading Redis reads a place it took from Redis first; elsewhere the
        // place's entry means nothing, and the places given from here on name none.
        let redis = streams
            .redis
            .clone()
            .filter(|_| at.entry().is_some())
            .map(|feed| (feed, None));
        let marked_by = redis.as_ref().map(|(feed, _)| feed.clone());
        if redis.is_none() {
            at.set_entry(None);
        }
        let table: Arc<str> = Arc::from(table);
        Self {
            history: streams.histories.of(&table, streams.settings),
            began: SystemTime::now(),
            dynamodb: streams.dynamodb.clone(),
            streams: streams.streams.clone(),
            metrics: Arc::clone(&streams.metrics),
            settings: streams.settings,
            table,
            at,
            redis,
            marked_by,
            counted: false,
            until,
            plan: None,
            reading: None,
            live: Weak::new(),
        }
    }

    fn calls(&self) -> Calls<'_> {
        Calls {
            dynamodb: &self.dynamodb,
            streams: &self.streams,
            metrics: &self.metrics,
            table: &self.table,
        }
    }

    /// The next changes, in each shard's order; `Ok(None)` once every shard is read to where
    /// live changes take over. Calls that fail for a while are tried again (backing off).
    pub(super) async fn next(&mut self) -> Result<Option<Vec<Change>>, Expired> {
        if self.redis.is_some() {
            match self.read_redis().await {
                Ok(read) => return Ok(read),
                Err(why) => {
                    // From the table's stream on, from where Redis left off.
                    tracing::info!(table = %self.table, why, "a resumed subscription reads what it missed from the table's stream");
                    self.redis = None;
                    self.at.set_entry(None);
                }
            }
        }
        let mut backoff = Backoff::new(self.settings);
        loop {
            match self.step().await {
                Ok(step) => return Ok(step),
                Err(Failure::Gone | Failure::Trimmed) => {
                    self.metrics.subscription_resumed("expired");
                    return Err(Expired);
                }
                // (The history takes a new iterator when one expires.)
                Err(Failure::Expired | Failure::Retry) => backoff.wait().await,
            }
        }
    }

    /// The next changes from Redis after the place's entry, up to the live reader's; `Ok(None)`
    /// at the end; `Err` when Redis cannot say (the entry no longer held, a gap the relay saw, a
    /// failed call): the stream can.
    async fn read_redis(&mut self) -> Result<Option<Vec<Change>>, &'static str> {
        loop {
            let Some((feed, connection)) = &mut self.redis else {
                return Err("no Redis");
            };
            let Some(after) = self.at.entry().map(str::to_owned) else {
                return Err("no entry");
            };
            let until = self
                .until
                .as_ref()
                .and_then(|u| u.entry().map(str::to_owned));
            // Two `XRANGE`s: whether the entry is held, and what follows it.
            self.metrics.stream_call("XRANGE");
            self.metrics.stream_call("XRANGE");
            let held = feed
                .after(
                    connection,
                    &self.table,
                    &after,
                    until.as_deref(),
                    ENTRIES_PER_READ,
                )
                .await
                .map_err(|err| {
                    tracing::debug!(error = %err, "a replay's Redis call failed");
                    "a Redis call failed"
                })?;
            if !matches!(held, Held::Forgotten) && !self.counted {
                self.counted = true;
                self.metrics.subscription_resumed("redis");
            }
            let entries = match held {
                Held::Forgotten => return Err("the entry is no longer held"),
                Held::Entries(entries) if entries.is_empty() => return Ok(None),
                Held::Entries(entries) => entries,
            };
            let mut changes = Vec::new();
            for (id, event) in entries {
                match event {
                    Some(Event::Change(change)) => {
                        let mut change = Arc::unwrap_or_clone(change);
                        if let Some(origin) = &change.origin {
                            // Published twice (two relays, or a relay restarted): passed once.
                            if let Some(Mark::After(last)) = self.at.mark(&origin.shard)
                                && !super::sequence_after(&change.sequence, last)
                            {
                                self.at.set_entry(Some(id));
                                continue;
                            }
                            let shard = Arc::clone(&origin.shard);
                            self.at.set(&shard, Mark::After(change.sequence.clone()));
                            self.at.set_entry(Some(id));
                            change.origin = Some(Origin {
                                shard,
                                after: Arc::new(self.at.clone()),
                            });
                        } else {
                            self.at.set_entry(Some(id));
                        }
                        changes.push(change);
                    }
                    Some(Event::Gap | Event::Expired) => {
                        if !changes.is_empty() {
                            // Passed on first; the gap is met again on the next read.
                            return Ok(Some(changes));
                        }
                        return Err("a relay saw changes lost");
                    }
                    None => self.at.set_entry(Some(id)),
                }
            }
            if !changes.is_empty() {
                return Ok(Some(changes));
            }
        }
    }

    /// One page of the shard being read (planning first, and moving to the next shard as each
    /// ends); `Ok(None)` when none is left.
    async fn step(&mut self) -> Result<Option<Vec<Change>>, Failure> {
        if self.plan.is_none() {
            self.plan = Some(self.planned().await?);
            self.began = SystemTime::now();
            self.metrics.subscription_resumed("stream");
        }
        loop {
            let Some(mut reading) = self.reading.take() else {
                let Some((_, shards)) = &mut self.plan else {
                    return Ok(None);
                };
                let Some((shard, from)) = shards.pop_front() else {
                    return Ok(None);
                };
                let (start, since) = match from {
                    From::After(sequence) => (Start::After(sequence), 0),
                    From::Oldest(since) => (Start::Oldest, since),
                    From::At(first) => (Start::At(first), 0),
                };
                let target = self.target(&shard);
                self.reading = Some(Reading {
                    cursor: self.history.cursor(&shard, start).await,
                    shard,
                    since,
                    target,
                    quiet: None,
                });
                continue;
            };
            let shard = Arc::clone(&reading.shard);
            if matches!(reading.target, Target::Pending)
                && let Some(last) = self.live_after(&shard)
            {
                reading.target = Target::After(last);
            }
            let arn = self
                .plan
                .as_ref()
                .map(|(arn, _)| arn.clone())
                .unwrap_or_default();
            // A shard read to where it stands ends at an end found after this replay began:
            // after the live reader took its place there.
            let (until, fresh) = match &reading.target {
                Target::After(last) => (Some(last.clone()), SystemTime::UNIX_EPOCH),
                Target::Pending | Target::Now => (None, self.began),
            };
            let page = match self
                .history
                .read(&self.calls(), &arn, &shard, &mut reading.cursor, fresh)
                .await
            {
                Ok(page) => page,
                Err(failure) => {
                    self.reading = Some(reading);
                    return Err(failure);
                }
            };
            let page_was_empty = page.reads.is_empty();
            let mut changes = Vec::new();
            let mut reached = false;
            for read in page.reads {
                if let Some(until) = &until
                    && super::sequence_after(&read.sequence, until)
                {
                    reached = true;
                    break;
                }
                let early = reading.since > 0
                    && read.created.is_some_and(|created| {
                        created + SINCE_SLACK
                            < SystemTime::UNIX_EPOCH + Duration::from_millis(reading.since)
                    });
                self.at.set(&shard, Mark::After(read.sequence));
                if early {
                    continue;
                }
                if let Some(mut change) = read.change {
                    change.origin = Some(Origin {
                        shard: Arc::clone(&shard),
                        after: Arc::new(self.at.clone()),
                    });
                    changes.push(change);
                }
            }
            if !page_was_empty {
                reading.quiet = None;
            } else if reading.quiet.is_none() {
                reading.quiet = Some(Instant::now());
            }
            // The shard is done when it is read to the live reader's mark, closed and read to
            // its end, or (with no mark to read to) read to where it stands now; never on one
            // empty answer while a mark is ahead.
            let done = reached
                || page.ended
                || match &reading.target {
                    Target::After(last) => self.at.mark(&shard).is_some_and(
                        |m| matches!(m, Mark::After(at) if !super::sequence_after(last, at)),
                    ),
                    Target::Pending => reading
                        .quiet
                        .is_some_and(|quiet| quiet.elapsed() >= PENDING_PATIENCE),
                    Target::Now => page_was_empty,
                };
            self.reading = (!done).then_some(reading);
            if !changes.is_empty() {
                return Ok(Some(changes));
            }
            if !done && page_was_empty {
                // An open shard with nothing new yet while the live reader's mark is ahead.
                tokio::time::sleep(self.settings.poll_interval).await;
            }
        }
    }

    /// Where the replay of `shard` ends (see the module's notes).
    fn target(&self, shard: &str) -> Target {
        let Some(until) = &self.until else {
            return Target::Now;
        };
        match until.mark(shard) {
            Some(Mark::After(last)) => Target::After(last.clone()),
            _ => self
                .live_after(shard)
                .map_or(Target::Pending, Target::After),
        }
    }

    /// The live reader's last record read in `shard`, as its place says now.
    fn live_after(&self, shard: &str) -> Option<String> {
        let place = self.live.upgrade()?.place()?;
        match place.mark(shard) {
            Some(Mark::After(last)) => Some(last.clone()),
            _ => None,
        }
    }

    /// The relays' marks (see [`super::shard_marks`]) once every open shard of `unnamed` has
    /// where its news begins, or after [`PENDING_PATIENCE`] (a Redis that came back empty has
    /// them again once the relays write them again; a closed shard may have been read to its
    /// end before: nobody writes its marks again); none for a place not taken from Redis.
    async fn relays_marks(&self, unnamed: &[(&str, bool)]) -> Marks {
        let Some(feed) = self.marked_by.as_ref().filter(|_| !unnamed.is_empty()) else {
            return Marks::default();
        };
        let began = Instant::now();
        let mut connection = None;
        loop {
            if connection.is_none() {
                connection = feed.shared().await.ok();
            }
            let marks = match &mut connection {
                Some(connection) => match shard_marks::marks(connection, &self.table).await {
                    Ok(marks) => Some(marks),
                    Err(err) => {
                        feed.shared_failed(&err).await;
                        None
                    }
                },
                None => None,
            };
            if marks.is_none() {
                connection = None;
            }
            let marks = marks.unwrap_or_default();
            let said = unnamed
                .iter()
                .all(|(id, open)| !open || marks.from(self.at.identity(), id).is_some());
            if said || began.elapsed() >= PENDING_PATIENCE {
                return marks;
            }
            tokio::time::sleep(self.settings.poll_interval).await;
        }
    }

    /// The stream and each shard's start, parents before children; fails when the place is
    /// not one in the table's current stream, or names a shard the stream no longer lists.
    async fn planned(&self) -> Result<Plan, Failure> {
        let Some((arn, listed)) = self
            .history
            .listing(&self.calls(), &self.at, self.until.as_deref())
            .await?
        else {
            return Err(Failure::Gone);
        };
        if !self.at.in_stream(&arn) {
            return Err(Failure::Gone);
        }
        let ids: HashSet<&str> = listed.iter().map(|s| s.id.as_str()).collect();
        if self.at.shards().any(|(id, _)| !ids.contains(id)) {
            // Trimmed after 24 hours: what followed the place in it may be gone too.
            return Err(Failure::Trimmed);
        }
        let parent_of = |id: &str| {
            listed
                .iter()
                .find(|s| s.id == id)
                .and_then(|s| s.parent.as_deref())
        };
        // Shards the place names, and their ancestors: read before it (up to the marks).
        let mut covered: HashSet<&str> = HashSet::new();
        for (id, _) in self.at.shards() {
            let mut ancestor = parent_of(id);
            while let Some(parent) = ancestor {
                if !covered.insert(parent) {
                    break;
                }
                ancestor = parent_of(parent);
            }
        }
        // The live reader reads these from their oldest record, and passes all of it on.
        let live_from_oldest = |id: &str| {
            self.until
                .as_ref()
                .is_some_and(|until| until.mark(id) == Some(&Mark::Since(0)))
        };
        // With whether each is open (a relay reading it says where its news begins).
        let unnamed: Vec<(&str, bool)> = listed
            .iter()
            .map(|s| (s.id.as_str(), !s.closed))
            .filter(|(id, _)| {
                self.at.mark(id).is_none() && !covered.contains(id) && !live_from_oldest(id)
            })
            .collect();
        let marks = self.relays_marks(&unnamed).await;
        let mut starts: Vec<(Arc<str>, From, Option<&str>)> = Vec::new();
        for shard in &listed {
            if live_from_oldest(&shard.id) {
                continue;
            }
            let from = match self.at.mark(&shard.id) {
                Some(Mark::After(sequence)) => From::After(sequence.clone()),
                // A shard the reader that gave the place read nothing of before it: from its
                // first record, when that reader is the live one (by the time it began); else
                // by time.
                Some(Mark::Since(time)) => {
                    match self
                        .live
                        .upgrade()
                        .and_then(|live| live.first_of(&shard.id, *time))
                    {
                        Some(Some(first)) => From::At(first),
                        // It read nothing of it yet: whatever comes is live.
                        Some(None) => continue,
                        None => From::Oldest(*time),
                    }
                }
                None if covered.contains(shard.id.as_str()) => continue,
                // Nothing of it was published before the place: its news from where the relays
                // said it begins.
                None => match marks.from(self.at.identity(), &shard.id) {
                    Some(NewsFrom::Oldest) => From::Oldest(0),
                    Some(NewsFrom::At(first)) => From::At(first.clone()),
                    Some(NewsFrom::NotYet) => continue,
                    // No relay said (one of an earlier version, or Redis came back empty and
                    // none said again within the patience): by the place's time.
                    None => From::Oldest(self.at.floor()),
                },
            };
            starts.push((Arc::from(shard.id.as_str()), from, shard.parent.as_deref()));
        }
        // Parents before children: a shard goes once its parent is not waiting.
        let mut ordered = VecDeque::new();
        while !starts.is_empty() {
            let waiting: HashSet<&str> = starts.iter().map(|(id, _, _)| &**id).collect();
            let (ready, later): (Vec<_>, Vec<_>) = starts
                .iter()
                .cloned()
                .partition(|(_, _, parent)| parent.is_none_or(|p| !waiting.contains(p)));
            // (A parent listed as its own descendant cannot be: take the rest as they come.)
            let stuck = ready.is_empty();
            for (id, from, _) in ready {
                ordered.push_back((id, from));
            }
            if stuck {
                ordered.extend(later.into_iter().map(|(id, from, _)| (id, from)));
                break;
            }
            starts = later;
        }
        Ok((arn, ordered))
    }
}
