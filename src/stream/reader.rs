//! One table's stream reader: finds the table's stream, walks its shards in lineage order (a
//! child only once its parent is read to its end), polls each open shard within the rate AWS
//! allows, and broadcasts every record in order.
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
//! DynamoDB Local, as observed: one shard per table; a record readable a few milliseconds after
//! its write; no record for a write that changes nothing; and a `LATEST` iterator taken on a
//! shard with no record yet fails with `TrimmedDataAccessException` once another table is
//! written. The reader then reads that shard from its start, skipping records older than the
//! reader itself.

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, SystemTime},
};

use aws_sdk_dynamodbstreams::{
    error::SdkError,
    operation::{
        describe_stream::DescribeStreamError, get_records::GetRecordsError,
        get_shard_iterator::GetShardIteratorError,
    },
    types::{Record, ShardIteratorType, StreamStatus},
};

use super::{
    Change, StreamSettings, convert,
    outlet::{Backoff, Outlet},
    sequence_after,
};
use crate::metrics::Metrics;

/// Most records one `GetRecords` call returns.
const RECORDS_PER_CALL: i32 = 1000;
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
    /// From the oldest record, of a shard that held none when the reader started (see
    /// [`Reader::probe`]).
    Empty,
}

/// How far before the reader's start a record of a shard read from an empty start may have been
/// created and still be delivered: approximate creation times are rounded (DynamoDB Local's down
/// to the minute).
const EMPTY_START_SLACK: Duration = Duration::from_secs(60);

/// Why a walk of one stream ended.
enum Ended {
    /// Nobody listens any more.
    Unsubscribed,
    /// The stream is gone (disabled, or the table deleted): look for the table's stream again.
    StreamGone,
}

/// A failed call, by what the reader does about it.
enum Failure {
    /// The iterator expired: take a new one.
    Expired,
    /// The records wanted were trimmed.
    Trimmed,
    /// The stream or shard no longer exists.
    Gone,
    /// Throttled, or an error worth retrying later.
    Retry,
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
            let arn = match self.find_stream().await {
                Ok(Some(arn)) if gone.as_ref() == Some(&arn) => {
                    backoff.wait().await;
                    continue;
                }
                Ok(Some(arn)) => arn,
                Ok(None) => {
                    tracing::warn!(table = %self.table, "the table has no stream: its subscribers get no changes");
                    if generation > 0 {
                        // Its stream was disabled while followed: what was written since is lost.
                        self.gap();
                    }
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

    /// The table's current stream ARN; `None` when it has none; `Err` when the call failed.
    async fn find_stream(&self) -> Result<Option<String>, ()> {
        match self
            .dynamodb
            .describe_table()
            .table_name(&*self.table)
            .send()
            .await
        {
            Ok(out) => Ok(out
                .table()
                .filter(|t| t.stream_specification().is_some_and(|s| s.stream_enabled()))
                .and_then(|t| t.latest_stream_arn())
                .map(str::to_owned)),
            Err(err) => {
                tracing::warn!(table = %self.table, error = %aws_sdk_dynamodb::error::DisplayErrorContext(&err), "describing the table for its stream failed");
                Err(())
            }
        }
    }

    /// Every shard of the stream, with its parent and whether it is closed.
    async fn describe(&self, arn: &str) -> Result<Vec<(String, Option<String>, bool)>, Failure> {
        let mut shards = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let out = self
                .streams
                .describe_stream()
                .stream_arn(arn)
                .set_exclusive_start_shard_id(after.take())
                .send()
                .await
                .map_err(|err| {
                    let failure = match err.as_service_error() {
                        Some(DescribeStreamError::ResourceNotFoundException(_)) => Failure::Gone,
                        _ => Failure::Retry,
                    };
                    self.failed("DescribeStream", &err);
                    failure
                })?;
            let Some(description) = out.stream_description() else {
                return Err(Failure::Retry);
            };
            // A disabled stream records nothing more: the table's next stream, if it gets one,
            // is another (and changes between the two were never recorded).
            if matches!(
                description.stream_status(),
                Some(StreamStatus::Disabled | StreamStatus::Disabling)
            ) {
                return Err(Failure::Gone);
            }
            for shard in description.shards() {
                let Some(id) = shard.shard_id() else { continue };
                let closed = shard
                    .sequence_number_range()
                    .is_some_and(|r| r.ending_sequence_number().is_some());
                shards.push((
                    id.to_owned(),
                    shard.parent_shard_id().map(str::to_owned),
                    closed,
                ));
            }
            match description.last_evaluated_shard_id() {
                Some(last) => after = Some(last.to_owned()),
                None => return Ok(shards),
            }
        }
    }

    /// Walks one stream until nobody listens or the stream is gone. On the first stream of the
    /// reader, open shards are read from their newest record on and closed ones not at all; on a
    /// stream found later, every shard from its oldest record.
    async fn walk(&self, arn: &str, first: bool) -> Ended {
        let mut backoff = Backoff::new(self.settings);
        let mut shards: BTreeMap<String, Shard> = BTreeMap::new();
        // The first description, with every open shard's first iterator taken, before the
        // first round of reads.
        loop {
            if self.unsubscribed() {
                return Ended::Unsubscribed;
            }
            match self.describe(arn).await {
                Ok(found) => {
                    for (id, parent, closed) in found {
                        let shard = Shard {
                            parent,
                            start: if first { Start::Latest } else { Start::Oldest },
                            finished: first && closed,
                            ..Shard::default()
                        };
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
                let taken = match shard.start {
                    Start::Latest => self.probe(arn, id, shard).await,
                    _ => Ok(()),
                };
                let taken = match taken {
                    Ok(()) if shard.iterator.is_none() => self.take_iterator(arn, id, shard).await,
                    other => other,
                };
                match taken {
                    Ok(()) => break,
                    Err(Failure::Gone) => return Ended::StreamGone,
                    Err(Failure::Trimmed) => {
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
                match self.poll(arn, id, shard).await {
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
                        // (A shard read from `LATEST` or from an empty start, with nothing read
                        // yet, lost nothing: see the module's note on DynamoDB Local.)
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
                match self.describe(arn).await {
                    Ok(found) => {
                        let listed: std::collections::BTreeSet<&str> =
                            found.iter().map(|(id, _, _)| id.as_str()).collect();
                        // Shards trimmed from the stream's description are done with.
                        shards.retain(|id, shard| listed.contains(id.as_str()) || !shard.finished);
                        for (id, parent, _) in &found {
                            shards.entry(id.clone()).or_insert_with(|| Shard {
                                parent: parent.clone(),
                                ..Shard::default()
                            });
                        }
                        described = tokio::time::Instant::now();
                    }
                    Err(Failure::Gone) => return Ended::StreamGone,
                    Err(_) => failed = true,
                }
            }
            // New shards found in this round are read in the next one.
            if complete && !failed && !shard_closed && asked > marked {
                self.outlet.mark(asked);
                marked = asked;
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

    /// Looks at a shard's oldest record before taking a `LATEST` iterator: DynamoDB Local never
    /// moves a `LATEST` iterator taken on a shard that holds no record yet (observed: it returns
    /// nothing while the table is written). A shard found empty is read from its start instead,
    /// every record of which is newer than the reader; one that holds records is read from
    /// `LATEST`, which works there, as everywhere on DynamoDB.
    async fn probe(&self, arn: &str, id: &str, shard: &mut Shard) -> Result<(), Failure> {
        let mut oldest = Shard {
            start: Start::Oldest,
            ..Shard::default()
        };
        self.take_iterator(arn, id, &mut oldest).await?;
        let Some(iterator) = oldest.iterator else {
            return Ok(());
        };
        let out = self
            .streams
            .get_records()
            .shard_iterator(iterator)
            .limit(1)
            .send()
            .await
            .map_err(|err| self.records_failed(&err))?;
        if out.records().is_empty()
            && let Some(next) = out.next_shard_iterator()
        {
            shard.iterator = Some(next.to_owned());
            shard.start = Start::Empty;
        }
        Ok(())
    }

    /// Takes a shard's iterator: after its last record read, or where it starts.
    async fn take_iterator(&self, arn: &str, id: &str, shard: &mut Shard) -> Result<(), Failure> {
        let request = self
            .streams
            .get_shard_iterator()
            .stream_arn(arn)
            .shard_id(id);
        let request = match (&shard.last, shard.start) {
            (Some(last), _) => request
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(last),
            (None, Start::Latest) => request.shard_iterator_type(ShardIteratorType::Latest),
            (None, Start::Oldest | Start::Empty) => {
                request.shard_iterator_type(ShardIteratorType::TrimHorizon)
            }
        };
        let out = request.send().await.map_err(|err| {
            let failure = match err.as_service_error() {
                Some(GetShardIteratorError::ResourceNotFoundException(_)) => Failure::Gone,
                Some(GetShardIteratorError::TrimmedDataAccessException(_)) => Failure::Trimmed,
                _ => Failure::Retry,
            };
            self.failed("GetShardIterator", &err);
            failure
        })?;
        shard.iterator = out.shard_iterator().map(str::to_owned);
        if shard.iterator.is_none() {
            // No iterator for a closed shard with nothing left.
            shard.finished = true;
        }
        Ok(())
    }

    /// One `GetRecords` on a shard (taking its iterator first if needed): broadcasts what it
    /// returns and moves on. The number of records read.
    async fn poll(&self, arn: &str, id: &str, shard: &mut Shard) -> Result<usize, Failure> {
        if shard.iterator.is_none() {
            self.take_iterator(arn, id, shard).await?;
            if shard.finished {
                return Ok(0);
            }
        }
        let iterator = shard.iterator.clone().unwrap_or_default();
        let out = self
            .streams
            .get_records()
            .shard_iterator(iterator)
            .limit(RECORDS_PER_CALL)
            .send()
            .await
            .map_err(|err| self.records_failed(&err))?;
        let records = out.records();
        // When the newest record read was created: the reader's lag, measured once a call.
        let mut newest = None;
        for record in records {
            // A shard read from an empty start holds only newer records, unless DynamoDB
            // answered its first read empty although it held some: those older than the
            // reader (give or take the rounding of their times) are not news.
            let created = record
                .dynamodb()
                .and_then(|r| r.approximate_creation_date_time())
                .and_then(|t| SystemTime::try_from(*t).ok());
            let old = shard.start == Start::Empty
                && created.is_some_and(|t| t + EMPTY_START_SLACK < self.started);
            newest = created.or(newest);
            let sequence = record.dynamodb().and_then(|r| r.sequence_number());
            let again = match (&shard.read_through, sequence) {
                (Some(through), Some(sequence)) => !sequence_after(sequence, through),
                _ => false,
            };
            if !again {
                shard.read_through = None;
            }
            if let Some(change) = self.change(record)
                && !old
                && !again
            {
                self.outlet.send(change);
            }
            if let Some(sequence) = record.dynamodb().and_then(|r| r.sequence_number()) {
                shard.last = Some(sequence.to_owned());
            }
        }
        if let Some(created) = newest {
            let lag = SystemTime::now()
                .duration_since(created)
                .unwrap_or_default();
            self.metrics.stream_lag(&self.table, lag);
        }
        shard.iterator = out.next_shard_iterator().map(str::to_owned);
        if shard.iterator.is_none() {
            shard.finished = true;
        }
        Ok(records.len())
    }

    /// What a failed `GetRecords` means.
    fn records_failed<R: std::fmt::Debug>(&self, err: &SdkError<GetRecordsError, R>) -> Failure {
        self.failed("GetRecords", err);
        match err.as_service_error() {
            Some(GetRecordsError::ExpiredIteratorException(_)) => Failure::Expired,
            Some(GetRecordsError::TrimmedDataAccessException(_)) => Failure::Trimmed,
            Some(GetRecordsError::ResourceNotFoundException(_)) => Failure::Gone,
            _ => Failure::Retry,
        }
    }

    /// A record as a change; `None` for one without a stream record (which DynamoDB does not
    /// send).
    fn change(&self, record: &Record) -> Option<Change> {
        let data = record.dynamodb()?;
        Some(Change {
            table: Arc::clone(&self.table),
            sequence: data.sequence_number()?.to_owned(),
            keys: data.keys().map(convert::item).unwrap_or_default(),
            old: data.old_image().map(convert::item),
            new: data.new_image().map(convert::item),
        })
    }

    /// Tells subscribers that changes were lost.
    fn gap(&self) {
        self.outlet.gap();
    }

    fn failed<E: std::error::Error + 'static, R: std::fmt::Debug>(
        &self,
        call: &'static str,
        err: &SdkError<E, R>,
    ) {
        self.metrics.stream_call_failed(call);
        tracing::warn!(
            table = %self.table,
            call,
            error = %aws_sdk_dynamodbstreams::error::DisplayErrorContext(err),
            "a stream call failed"
        );
    }
}
