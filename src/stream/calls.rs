//! The DynamoDB Streams calls both stream readers make (a `serve` instance's [`super::reader`]
//! and the relay's [`super::relay_shard`]): finding a table's stream, describing its shards,
//! taking an iterator and reading a page of records, each failure told by the error's type
//! (never its text) as what the reader does about it.

use std::{sync::Arc, time::SystemTime};

use aws_sdk_dynamodbstreams::{
    error::SdkError,
    operation::{
        describe_stream::DescribeStreamError, get_records::GetRecordsError,
        get_shard_iterator::GetShardIteratorError,
    },
    types::{Record, ShardIteratorType, StreamStatus},
};

use super::{Change, convert};
use crate::metrics::Metrics;

/// Most records one `GetRecords` call returns.
pub(super) const RECORDS_PER_CALL: i32 = 1000;

/// A failed call, by what the reader does about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    /// The iterator expired: take a new one.
    Expired,
    /// The records wanted were trimmed.
    Trimmed,
    /// The stream or shard no longer exists, or the stream is disabled.
    Gone,
    /// Throttled, or an error worth retrying later.
    Retry,
}

/// One shard of a stream, as `DescribeStream` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ShardInfo {
    pub(super) id: String,
    pub(super) parent: Option<String>,
    /// Closed: it has an ending sequence number and records nothing more.
    pub(super) closed: bool,
}

/// Where an iterator starts in a shard.
#[derive(Debug, Clone, Copy)]
pub(super) enum Position<'a> {
    /// Just after this record.
    After(&'a str),
    /// At this record.
    At(&'a str),
    /// After the newest record now.
    Latest,
    /// At the oldest record kept.
    Oldest,
}

/// One page of records and the iterator after it (`None`: the shard is closed and read to its
/// end).
pub(super) struct Page {
    pub(super) records: Vec<Record>,
    pub(super) next: Option<String>,
}

/// The stream calls of one table's reader, counting and logging their failures.
pub(super) struct Calls<'a> {
    pub(super) dynamodb: &'a aws_sdk_dynamodb::Client,
    pub(super) streams: &'a aws_sdk_dynamodbstreams::Client,
    pub(super) metrics: &'a Metrics,
    pub(super) table: &'a str,
}

impl Calls<'_> {
    /// The table's current stream ARN; `None` when it has none; `Err` when the call failed.
    pub(super) async fn find_stream(&self) -> Result<Option<String>, ()> {
        Ok(self.find_stream_view().await?.map(|(arn, _)| arn))
    }

    /// The table's current stream ARN and what its records hold (DynamoDB's name of its view
    /// type); `None` when it has none; `Err` when the call failed.
    pub(super) async fn find_stream_view(&self) -> Result<Option<(String, String)>, ()> {
        self.metrics.stream_call("DescribeTable");
        match self
            .dynamodb
            .describe_table()
            .table_name(self.table)
            .send()
            .await
        {
            Ok(out) => Ok(out.table().and_then(|t| {
                let spec = t.stream_specification().filter(|s| s.stream_enabled())?;
                let view = spec
                    .stream_view_type()
                    .map_or_else(String::new, |v| v.as_str().to_owned());
                Some((t.latest_stream_arn()?.to_owned(), view))
            })),
            Err(err) => {
                tracing::warn!(table = self.table, error = %aws_sdk_dynamodb::error::DisplayErrorContext(&err), "describing the table for its stream failed");
                Err(())
            }
        }
    }

    /// Every shard of the stream, with its parent and whether it is closed.
    pub(super) async fn describe(&self, arn: &str) -> Result<Vec<ShardInfo>, Failure> {
        let mut shards = Vec::new();
        let mut after: Option<String> = None;
        loop {
            self.metrics.stream_call("DescribeStream");
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
                shards.push(ShardInfo {
                    id: id.to_owned(),
                    parent: shard.parent_shard_id().map(str::to_owned),
                    closed: shard
                        .sequence_number_range()
                        .is_some_and(|r| r.ending_sequence_number().is_some()),
                });
            }
            match description.last_evaluated_shard_id() {
                Some(last) => after = Some(last.to_owned()),
                None => return Ok(shards),
            }
        }
    }

    /// An iterator of shard `id` at `position`; `None` for a closed shard with nothing left.
    pub(super) async fn iterator(
        &self,
        arn: &str,
        id: &str,
        position: Position<'_>,
    ) -> Result<Option<String>, Failure> {
        let request = self
            .streams
            .get_shard_iterator()
            .stream_arn(arn)
            .shard_id(id);
        let request = match position {
            Position::After(last) => request
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(last),
            Position::At(first) => request
                .shard_iterator_type(ShardIteratorType::AtSequenceNumber)
                .sequence_number(first),
            Position::Latest => request.shard_iterator_type(ShardIteratorType::Latest),
            Position::Oldest => request.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        self.metrics.stream_call("GetShardIterator");
        let out = request.send().await.map_err(|err| {
            let failure = match err.as_service_error() {
                Some(GetShardIteratorError::ResourceNotFoundException(_)) => Failure::Gone,
                Some(GetShardIteratorError::TrimmedDataAccessException(_)) => Failure::Trimmed,
                _ => Failure::Retry,
            };
            self.failed("GetShardIterator", &err);
            failure
        })?;
        Ok(out.shard_iterator().map(str::to_owned))
    }

    /// Up to `limit` records from `iterator`.
    pub(super) async fn records(&self, iterator: &str, limit: i32) -> Result<Page, Failure> {
        self.metrics.stream_call("GetRecords");
        let out = self
            .streams
            .get_records()
            .shard_iterator(iterator)
            .limit(limit)
            .send()
            .await
            .map_err(|err| {
                self.failed("GetRecords", &err);
                match err.as_service_error() {
                    Some(GetRecordsError::ExpiredIteratorException(_)) => Failure::Expired,
                    Some(GetRecordsError::TrimmedDataAccessException(_)) => Failure::Trimmed,
                    Some(GetRecordsError::ResourceNotFoundException(_)) => Failure::Gone,
                    _ => Failure::Retry,
                }
            })?;
        Ok(Page {
            next: out.next_shard_iterator().map(str::to_owned),
            records: out.records.unwrap_or_default(),
        })
    }

    /// Records how old the newest of `records` was when read: the reader's lag.
    pub(super) fn lag(&self, records: &[Record]) {
        if let Some(created) = records.iter().rev().find_map(created) {
            let lag = SystemTime::now()
                .duration_since(created)
                .unwrap_or_default();
            self.metrics.stream_lag(self.table, lag);
        }
    }

    fn failed<E: std::error::Error + 'static, R: std::fmt::Debug>(
        &self,
        call: &'static str,
        err: &SdkError<E, R>,
    ) {
        self.metrics.stream_call_failed(call);
        tracing::warn!(
            table = self.table,
            call,
            error = %aws_sdk_dynamodbstreams::error::DisplayErrorContext(err),
            "a stream call failed"
        );
    }
}

/// When a record was (about) created.
pub(super) fn created(record: &Record) -> Option<SystemTime> {
    record
        .dynamodb()
        .and_then(|r| r.approximate_creation_date_time())
        .and_then(|t| SystemTime::try_from(*t).ok())
}

/// A record's sequence number.
pub(super) fn sequence(record: &Record) -> Option<&str> {
    record.dynamodb().and_then(|r| r.sequence_number())
}

/// A record of `table` as a change; `None` for one without a stream record (which DynamoDB does
/// not send).
pub(super) fn change(table: &Arc<str>, record: &Record) -> Option<Change> {
    let data = record.dynamodb()?;
    Some(Change {
        table: Arc::clone(table),
        sequence: data.sequence_number()?.to_owned(),
        keys: data.keys().map(convert::item).unwrap_or_default(),
        old: data.old_image().map(convert::item),
        new: data.new_image().map(convert::item),
        origin: None,
    })
}
