//! The relays' lease table: one item per stream shard, saying which relay reads it and how far
//! it has published, so that each shard is read by one relay at a time and a relay that stops
//! is replaced by another that goes on where it left off. The pattern is the Kinesis Client
//! Library's, which DynamoDB's own stream adapter uses: every write is conditional, and a lease
//! is taken over only once its counter has been seen unchanged for a whole lease period, so no
//! clocks need agree.
//!
//! An item: `stream` (the stream's ARN, the partition key), `shard` (its id, the sort key),
//! `table`, `parent` (the parent shard's id, if any), `owner` (the holding relay; absent when
//! nobody holds it), `counter` (raised by every take, renewal and release) and `checkpoint`:
//! a sequence number (the last record published, written after Redis took it), `LATEST` (read
//! from what is written after `since`, milliseconds since the epoch), `TRIM_HORIZON` (from the
//! oldest record kept) or `SHARD_END` (read to its end); and `from`, where the shard's news
//! begins ([`NewsFrom`]: `TRIM_HORIZON`, the first record read after `LATEST`, or `-` while none
//! was), written before anything of the shard is published.

use std::{collections::HashMap, time::Duration};

use super::shard_marks::NewsFrom;

use aws_sdk_dynamodb::{
    error::SdkError,
    operation::{
        create_table::CreateTableError, delete_item::DeleteItemError,
        describe_table::DescribeTableError, put_item::PutItemError, update_item::UpdateItemError,
    },
    types::{
        AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
        ScalarAttributeType, TableStatus,
    },
};

/// The lease table's name (after the table prefix) unless one is given.
pub const DEFAULT_TABLE: &str = "dynarelay-leases";

/// Where a relay reads a shard from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checkpoint {
    /// What is written from `since` (milliseconds since the epoch) on: the shard's place when
    /// its lease was made, before any record of it was published.
    Latest {
        /// When the lease was made.
        since: u64,
    },
    /// From the oldest record kept.
    Oldest,
    /// After this record, the last published.
    After(String),
    /// Read to its end.
    Finished,
}

/// One shard's lease as last read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The shard's id.
    pub shard: String,
    /// Its parent shard's id.
    pub parent: Option<String>,
    /// The relay holding it.
    pub owner: Option<String>,
    /// Raised by every take, renewal and release.
    pub counter: u64,
    /// Where reading goes on.
    pub checkpoint: Checkpoint,
    /// Where the shard's news begins, once said (leases of earlier versions do not say).
    pub from: Option<NewsFrom>,
}

impl Checkpoint {
    /// Where the news of a shard whose lease is made at this checkpoint begins.
    pub fn news_from(&self) -> Option<NewsFrom> {
        match self {
            Self::Latest { .. } => Some(NewsFrom::NotYet),
            Self::Oldest => Some(NewsFrom::Oldest),
            Self::After(_) | Self::Finished => None,
        }
    }
}

/// A lease table call that failed for another reason than its condition (throttled, the
/// network, the table missing): worth trying again later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreachable;

/// The lease table, as one relay writes it.
#[derive(Clone)]
pub struct LeaseTable {
    client: aws_sdk_dynamodb::Client,
    name: String,
    /// This relay's name in `owner`: unique to the process.
    owner: String,
}

impl std::fmt::Debug for LeaseTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseTable")
            .field("name", &self.name)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// Longest wait for a lease table being made to become active.
const CREATING: Duration = Duration::from_secs(300);

impl LeaseTable {
    /// The lease table `name`, written by a relay of a new, random name.
    pub fn new(client: aws_sdk_dynamodb::Client, name: String) -> Self {
        let mut bytes = [0u8; 8];
        getrandom::getrandom(&mut bytes).expect("the system's random numbers");
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "relay".to_owned());
        Self {
            client,
            name,
            owner: format!("{host}-{}-{id}", std::process::id()),
        }
    }

    /// This relay's name in the leases it holds.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Makes the table (on demand billing) unless it exists, and waits until it is active.
    pub async fn ensure(&self) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + CREATING;
        loop {
            match self
                .client
                .describe_table()
                .table_name(&self.name)
                .send()
                .await
            {
                Ok(out) => {
                    let table = out.table();
                    let keys: Vec<(&str, &KeyType)> = table
                        .map(|t| t.key_schema())
                        .unwrap_or_default()
                        .iter()
                        .map(|k| (k.attribute_name(), k.key_type()))
                        .collect();
                    if keys != [("stream", &KeyType::Hash), ("shard", &KeyType::Range)] {
                        anyhow::bail!(
                            "the lease table {} is not one: its key must be `stream` (partition) and `shard` (sort)",
                            self.name
                        );
                    }
                    if table.and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
                        return Ok(());
                    }
                }
                Err(err)
                    if matches!(
                        err.as_service_error(),
                        Some(DescribeTableError::ResourceNotFoundException(_))
                    ) =>
                {
                    self.make_table().await?;
                    tracing::info!(table = %self.name, "the lease table was made");
                }
                Err(err) => anyhow::bail!(
                    "cannot describe the lease table {}: {}",
                    self.name,
                    aws_sdk_dynamodb::error::DisplayErrorContext(&err)
                ),
            }
            if tokio::time::Instant::now() > deadline {
                anyhow::bail!("the lease table {} did not become active", self.name);
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn make_table(&self) -> anyhow::Result<()> {
        let attribute = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .expect("complete")
        };
        let key = |name: &str, kind| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .expect("complete")
        };
        match self
            .client
            .create_table()
            .table_name(&self.name)
            .attribute_definitions(attribute("stream"))
            .attribute_definitions(attribute("shard"))
            .key_schema(key("stream", KeyType::Hash))
            .key_schema(key("shard", KeyType::Range))
            .billing_mode(BillingMode::PayPerRequest)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            // Another relay is making it.
            Err(err)
                if matches!(
                    err.as_service_error(),
                    Some(CreateTableError::ResourceInUseException(_))
                ) =>
            {
                Ok(())
            }
            Err(err) => anyhow::bail!(
                "cannot make the lease table {}: {}",
                self.name,
                aws_sdk_dynamodb::error::DisplayErrorContext(&err)
            ),
        }
    }

    /// Every lease of `stream`, by shard id.
    pub async fn list(&self, stream: &str) -> Result<HashMap<String, Lease>, Unreachable> {
        let mut leases = HashMap::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.name)
                .key_condition_expression("#stream = :stream")
                .expression_attribute_names("#stream", "stream")
                .expression_attribute_values(":stream", s(stream))
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|err| self.failed("Query", &err))?;
            for item in out.items() {
                if let Some(lease) = lease(item) {
                    leases.insert(lease.shard.clone(), lease);
                }
            }
            match out.last_evaluated_key() {
                Some(key) => start = Some(key.clone()),
                None => return Ok(leases),
            }
        }
    }

    /// Makes the lease of a shard unless one exists: whether this call made it.
    pub async fn create(
        &self,
        (stream, table): (&str, &str),
        shard: &str,
        parent: Option<&str>,
        checkpoint: &Checkpoint,
    ) -> Result<bool, Unreachable> {
        let mut item = HashMap::from([
            ("stream".to_owned(), s(stream)),
            ("shard".to_owned(), s(shard)),
            ("table".to_owned(), s(table)),
            ("counter".to_owned(), AttributeValue::N("0".to_owned())),
        ]);
        if let Some(parent) = parent {
            item.insert("parent".to_owned(), s(parent));
        }
        item.extend(checkpoint_attributes(checkpoint));
        if let Some(from) = checkpoint.news_from() {
            item.insert("from".to_owned(), s(from.text()));
        }
        let out = self
            .client
            .put_item()
            .table_name(&self.name)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#shard)")
            .expression_attribute_names("#shard", "shard")
            .send()
            .await;
        match out {
            Ok(_) => Ok(true),
            Err(err)
                if matches!(
                    err.as_service_error(),
                    Some(PutItemError::ConditionalCheckFailedException(_))
                ) =>
            {
                Ok(false)
            }
            Err(err) => Err(self.failed("PutItem", &err)),
        }
    }

    /// Takes `lease` of `stream`, if its counter is still the one seen: whether it is now held.
    pub async fn take(&self, stream: &str, lease: &Lease) -> Result<bool, Unreachable> {
        self.update(
            stream,
            &lease.shard,
            "SET #owner = :me, #counter = #counter + :one",
            "#counter = :seen",
            [(":seen", AttributeValue::N(lease.counter.to_string()))],
        )
        .await
    }

    /// Renews a lease this relay holds: whether it still does.
    pub async fn renew(&self, stream: &str, shard: &str) -> Result<bool, Unreachable> {
        self.update(
            stream,
            shard,
            "SET #counter = #counter + :one",
            "#owner = :me",
            [],
        )
        .await
    }

    /// Writes a held lease's checkpoint: whether it is still held.
    pub async fn checkpoint(
        &self,
        stream: &str,
        shard: &str,
        checkpoint: &Checkpoint,
    ) -> Result<bool, Unreachable> {
        let (text, since) = checkpoint_text(checkpoint);
        let (set, values) = match since {
            Some(since) => (
                "SET #checkpoint = :checkpoint, #since = :since",
                vec![
                    (":checkpoint", s(&text)),
                    (":since", AttributeValue::N(since.to_string())),
                ],
            ),
            None => (
                "SET #checkpoint = :checkpoint REMOVE #since",
                vec![(":checkpoint", s(&text))],
            ),
        };
        self.update(stream, shard, set, "#owner = :me", values)
            .await
    }

    /// Says where a held lease's news begins (before anything of it is published): whether it
    /// is still held.
    pub async fn news_from(
        &self,
        stream: &str,
        shard: &str,
        from: &NewsFrom,
    ) -> Result<bool, Unreachable> {
        self.update(
            stream,
            shard,
            "SET #from = :from",
            "#owner = :me",
            [(":from", s(from.text()))],
        )
        .await
    }

    /// Lets go of a held lease, so that another relay takes it at once: whether it was held.
    pub async fn release(&self, stream: &str, shard: &str) -> Result<bool, Unreachable> {
        self.update(
            stream,
            shard,
            "SET #counter = #counter + :one REMOVE #owner",
            "#owner = :me",
            [],
        )
        .await
    }

    /// Removes the lease of a shard read to its end (once the stream no longer lists the shard).
    pub async fn forget(&self, stream: &str, shard: &str) -> Result<(), Unreachable> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.name)
            .key("stream", s(stream))
            .key("shard", s(shard))
            .condition_expression("#checkpoint = :end")
            .expression_attribute_names("#checkpoint", "checkpoint")
            .expression_attribute_values(":end", s(SHARD_END))
            .send()
            .await;
        match out {
            Ok(_) => Ok(()),
            Err(err)
                if matches!(
                    err.as_service_error(),
                    Some(DeleteItemError::ConditionalCheckFailedException(_))
                ) =>
            {
                Ok(())
            }
            Err(err) => Err(self.failed("DeleteItem", &err)),
        }
    }

    /// One conditional update of a lease; `false` when its condition failed. Every update may
    /// name `#owner`, `#counter`, `#checkpoint`, `#since`, `#from`, `:me` and `:one`.
    async fn update(
        &self,
        stream: &str,
        shard: &str,
        update: &str,
        condition: &str,
        values: impl IntoIterator<Item = (&str, AttributeValue)>,
    ) -> Result<bool, Unreachable> {
        let mut request = self
            .client
            .update_item()
            .table_name(&self.name)
            .key("stream", s(stream))
            .key("shard", s(shard))
            .update_expression(update)
            .condition_expression(format!("attribute_exists(#shard) AND {condition}"))
            .expression_attribute_names("#shard", "shard");
        for name in ["owner", "counter", "checkpoint", "since", "from"] {
            let placeholder = format!("#{name}");
            if update.contains(&placeholder) || condition.contains(&placeholder) {
                request = request.expression_attribute_names(placeholder, name);
            }
        }
        let mut given = vec![
            (":me", s(&self.owner)),
            (":one", AttributeValue::N("1".to_owned())),
        ];
        given.extend(values);
        for (name, value) in given {
            if update.contains(name) || condition.contains(name) {
                request = request.expression_attribute_values(name, value);
            }
        }
        match request.send().await {
            Ok(_) => Ok(true),
            Err(err)
                if matches!(
                    err.as_service_error(),
                    Some(UpdateItemError::ConditionalCheckFailedException(_))
                ) =>
            {
                Ok(false)
            }
            Err(err) => Err(self.failed("UpdateItem", &err)),
        }
    }

    fn failed<E: std::error::Error + 'static, R: std::fmt::Debug>(
        &self,
        call: &'static str,
        err: &SdkError<E, R>,
    ) -> Unreachable {
        tracing::warn!(
            table = %self.name,
            call,
            error = %aws_sdk_dynamodb::error::DisplayErrorContext(err),
            "a lease table call failed"
        );
        Unreachable
    }
}

const LATEST: &str = "LATEST";
const TRIM_HORIZON: &str = "TRIM_HORIZON";
const SHARD_END: &str = "SHARD_END";

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_owned())
}

/// A checkpoint's text, and its `since` when it has one.
fn checkpoint_text(checkpoint: &Checkpoint) -> (String, Option<u64>) {
    match checkpoint {
        Checkpoint::Latest { since } => (LATEST.to_owned(), Some(*since)),
        Checkpoint::Oldest => (TRIM_HORIZON.to_owned(), None),
        Checkpoint::After(sequence) => (sequence.clone(), None),
        Checkpoint::Finished => (SHARD_END.to_owned(), None),
    }
}

fn checkpoint_attributes(checkpoint: &Checkpoint) -> Vec<(String, AttributeValue)> {
    let (text, since) = checkpoint_text(checkpoint);
    let mut attributes = vec![("checkpoint".to_owned(), s(&text))];
    if let Some(since) = since {
        attributes.push(("since".to_owned(), AttributeValue::N(since.to_string())));
    }
    attributes
}

/// A lease as its item holds it; `None` for an item that is not one.
fn lease(item: &HashMap<String, AttributeValue>) -> Option<Lease> {
    let text = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
    let number = |name: &str| {
        item.get(name)
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse::<u64>().ok())
    };
    let checkpoint = match text("checkpoint")?.as_str() {
        LATEST => Checkpoint::Latest {
            since: number("since").unwrap_or(0),
        },
        TRIM_HORIZON => Checkpoint::Oldest,
        SHARD_END => Checkpoint::Finished,
        sequence if !sequence.is_empty() && sequence.bytes().all(|b| b.is_ascii_digit()) => {
            Checkpoint::After(sequence.to_owned())
        }
        _ => return None,
    };
    Some(Lease {
        shard: text("shard")?,
        parent: text("parent"),
        owner: text("owner"),
        counter: number("counter")?,
        checkpoint,
        from: text("from").as_deref().and_then(NewsFrom::from_text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_reads_back_as_written() {
        for checkpoint in [
            Checkpoint::Latest { since: 1_700 },
            Checkpoint::Oldest,
            Checkpoint::After("000000000000000000042".to_owned()),
            Checkpoint::Finished,
        ] {
            let mut item = HashMap::from([
                ("stream".to_owned(), s("arn")),
                ("shard".to_owned(), s("shardId-1")),
                ("parent".to_owned(), s("shardId-0")),
                ("owner".to_owned(), s("relay-1")),
                ("counter".to_owned(), AttributeValue::N("7".to_owned())),
            ]);
            item.extend(checkpoint_attributes(&checkpoint));
            let from = checkpoint.news_from();
            if let Some(from) = &from {
                item.insert("from".to_owned(), s(from.text()));
            }
            assert_eq!(
                lease(&item),
                Some(Lease {
                    shard: "shardId-1".to_owned(),
                    parent: Some("shardId-0".to_owned()),
                    owner: Some("relay-1".to_owned()),
                    counter: 7,
                    checkpoint,
                    from,
                })
            );
        }
        // Not a lease: no counter, or a checkpoint that is none.
        let item = HashMap::from([
            ("shard".to_owned(), s("shardId-1")),
            ("checkpoint".to_owned(), s(TRIM_HORIZON)),
        ]);
        assert_eq!(lease(&item), None);
        let item = HashMap::from([
            ("shard".to_owned(), s("shardId-1")),
            ("counter".to_owned(), AttributeValue::N("0".to_owned())),
            ("checkpoint".to_owned(), s("12ab")),
        ]);
        assert_eq!(lease(&item), None);
    }
}
