//! A fleet's changes from AWS Lambda: the function of `dynarelay lambda-relay` is given DynamoDB
//! Streams events by an event source mapping (AWS's managed stream reader, which keeps the
//! shards' checkpoints and retries), and appends each record's change to Redis as the relay
//! does (see [`super::redis_feed`]), for the fleet's `serve` instances.
//!
//! Nothing is dropped: a record that cannot be read or published is reported as the batch's
//! first failure (`batchItemFailures`, with the mapping's `ReportBatchItemFailures`), so Lambda
//! retries the batch from it, records before it kept, and its retry policy (bisecting, an
//! on-failure destination) decides about a record that never goes through. Records of tables
//! the model does not stream, or of items that are no entity of the model, are nothing to
//! subscribers and are passed over.

use std::{collections::HashSet, sync::Arc};

use aws_lambda_events::event::{
    dynamodb::EventRecord,
    streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse},
};
use serde_json::Value;

use super::{
    Change, Event, Recognise,
    redis_feed::{Publisher, RedisFeed},
};
use crate::dynamo::Item;

/// What the function needs between events: the Redis, its connection, and which tables and
/// items are the model's.
pub struct StreamEvents {
    feed: RedisFeed,
    max_len: usize,
    publisher: Option<Publisher>,
    /// The full names of the model's streamed tables.
    tables: HashSet<String>,
    recognise: Recognise,
}

impl std::fmt::Debug for StreamEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamEvents")
            .field("tables", &self.tables)
            .finish_non_exhaustive()
    }
}

/// Why a record was not published.
enum Failed {
    /// It is no DynamoDB stream record this function can read.
    Unreadable(String),
    /// Redis did not take it.
    Redis(redis::RedisError),
}

impl StreamEvents {
    /// Publishes into `feed` (each Redis stream kept to about `max_len` entries) the changes of
    /// `tables` (full names) whose items `recognise` knows.
    pub fn new(
        feed: RedisFeed,
        max_len: usize,
        tables: impl IntoIterator<Item = String>,
        recognise: Recognise,
    ) -> Self {
        Self {
            feed,
            max_len,
            publisher: None,
            tables: tables.into_iter().collect(),
            recognise,
        }
    }

    /// Handles one event, `{"Records": [...]}` as Lambda gives it: the records in order, up to
    /// the first that fails, which is reported with those after it left for Lambda to retry.
    /// `Err` for an event that is no DynamoDB Streams event at all, or a failing record without
    /// a sequence number to report: Lambda then retries the whole batch.
    pub async fn handle(&mut self, event: Value) -> anyhow::Result<DynamoDbEventResponse> {
        let Some(records) = event.get("Records").and_then(Value::as_array) else {
            anyhow::bail!("the event has no Records: it is no DynamoDB Streams event");
        };
        let mut response = DynamoDbEventResponse::default();
        for raw in records {
            let sequence = raw
                .pointer("/dynamodb/SequenceNumber")
                .and_then(Value::as_str);
            let failed = match self.publish(raw).await {
                Ok(()) => continue,
                Err(failed) => failed,
            };
            match &failed {
                Failed::Unreadable(why) => {
                    tracing::warn!(sequence, why, "a stream record could not be read");
                }
                Failed::Redis(err) => {
                    tracing::warn!(sequence, error = %err, "publishing a change to Redis failed");
                    // Connected again on the next try.
                    self.publisher = None;
                }
            }
            let Some(sequence) = sequence else {
                anyhow::bail!("a record without a sequence number failed: the batch is retried");
            };
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = Some(sequence.to_owned());
            response.batch_item_failures.push(failure);
            break;
        }
        Ok(response)
    }

    /// Publishes one raw record's change, unless it is nothing to subscribers.
    async fn publish(&mut self, raw: &Value) -> Result<(), Failed> {
        let record: EventRecord = serde_json::from_value(raw.clone())
            .map_err(|err| Failed::Unreadable(format!("{err}")))?;
        let table = record
            .event_source_arn
            .as_deref()
            .and_then(table_of_stream)
            .ok_or_else(|| Failed::Unreadable("no table in its eventSourceARN".to_owned()))?;
        if !self.tables.contains(table) {
            return Ok(());
        }
        let data = record.change;
        let sequence = data
            .sequence_number
            .ok_or_else(|| Failed::Unreadable("no SequenceNumber".to_owned()))?;
        let image = |item: serde_dynamo::Item| -> Option<Item> {
            let item: Item = item.into();
            (!item.is_empty()).then_some(item)
        };
        let change = Change {
            table: Arc::from(table),
            sequence,
            keys: data.keys.into(),
            old: image(data.old_image),
            new: image(data.new_image),
            // A Lambda's stream event does not name its shard.
            origin: None,
        };
        if !change.recognised_by(&self.recognise) {
            return Ok(());
        }
        let publisher = match &mut self.publisher {
            Some(publisher) => publisher,
            None => self.publisher.insert(
                self.feed
                    .publisher(self.max_len)
                    .await
                    .map_err(Failed::Redis)?,
            ),
        };
        publisher
            .publish(table, &Event::Change(Arc::new(change)), None)
            .await
            .map(|_| ())
            .map_err(Failed::Redis)
    }
}

/// The table's name in a stream's ARN: `arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>`.
fn table_of_stream(arn: &str) -> Option<&str> {
    let (_, rest) = arn.split_once(":table/")?;
    let (table, _) = rest.split_once("/stream/")?;
    (!table.is_empty()).then_some(table)
}

#[cfg(test)]
mod tests {
    use super::table_of_stream;

    #[test]
    fn a_stream_arn_names_its_table() {
        assert_eq!(
            table_of_stream(
                "arn:aws:dynamodb:eu-west-1:123456789012:table/t1_Orders/stream/2026-01-01T00:00:00.000"
            ),
            Some("t1_Orders")
        );
        assert_eq!(
            table_of_stream(
                "arn:aws:dynamodb:ddblocal:000000000000:table/Notes/stream/2026-11-28T20:00:00.000"
            ),
            Some("Notes")
        );
        assert_eq!(
            table_of_stream("arn:aws:dynamodb:eu-west-1:1:table/Orders"),
            None
        );
        assert_eq!(table_of_stream("arn:aws:sqs:eu-west-1:1:queue"), None);
    }
}
