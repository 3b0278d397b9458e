//! The store: every DynamoDB read and write the server makes, returning typed records.

use std::{sync::Arc, time::Duration};

use aws_sdk_dynamodb::{
    Client,
    types::{AttributeValue, PutRequest, WriteRequest},
};
use tracing::instrument;

use super::{
    Tables,
    model::{Item, ModelError, PurchaseRecord, UserRecord},
    tables::PURCHASE_KEY,
};
use crate::cursor::{Key, KeyError};

/// A failed store operation. Its sources are for logs only; clients see a masked error.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// DynamoDB (or the connection to it) failed.
    #[error("DynamoDB {operation} on {table} failed")]
    Dynamo {
        /// The API operation.
        operation: &'static str,
        /// The table.
        table: String,
        /// The SDK's error, with DynamoDB's error code.
        #[source]
        source: Box<aws_sdk_dynamodb::Error>,
    },
    /// An item in the table does not fit the data model.
    #[error("an item in {table} does not fit the data model")]
    MalformedItem {
        /// The table.
        table: String,
        /// What is wrong.
        #[source]
        source: ModelError,
    },
    /// An item in the table lacks its own key attributes (cannot happen with DynamoDB).
    #[error("an item in {table} lacks its key")]
    MissingKey {
        /// The table.
        table: String,
        /// What is missing.
        #[source]
        source: KeyError,
    },
    /// BatchWriteItem kept returning unprocessed items.
    #[error("BatchWriteItem on {table} left items unprocessed after retries")]
    Unprocessed {
        /// The table.
        table: String,
    },
}

impl StoreError {
    fn dynamo(
        operation: &'static str,
        table: &str,
        source: impl Into<aws_sdk_dynamodb::Error>,
    ) -> Self {
        Self::Dynamo {
            operation,
            table: table.to_owned(),
            source: Box::new(source.into()),
        }
    }
}

/// A record together with its exact key, from which cursors are made.
#[derive(Debug, Clone)]
pub struct Row<T> {
    /// The key as DynamoDB returned it.
    pub key: Key,
    /// The record.
    pub record: T,
}

/// Reads and writes the dynarelay tables. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    client: Client,
    tables: Arc<Tables>,
}

impl Store {
    /// A store over `tables`.
    pub fn new(client: Client, tables: Tables) -> Self {
        Self {
            client,
            tables: Arc::new(tables),
        }
    }

    /// The table names.
    pub fn tables(&self) -> &Tables {
        &self.tables
    }

    /// The DynamoDB client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Whether DynamoDB answers and every table exists.
    #[instrument(skip(self))]
    pub async fn check_ready(&self) -> Result<(), StoreError> {
        for (name, _) in self.tables.named_specs() {
            self.client
                .describe_table()
                .table_name(name)
                .send()
                .await
                .map_err(|e| StoreError::dynamo("DescribeTable", name, e))?;
        }
        Ok(())
    }

    /// One user by id.
    #[instrument(skip(self))]
    pub async fn get_user(&self, user_id: &str) -> Result<Option<UserRecord>, StoreError> {
        let table = &self.tables.users;
        let out = self
            .client
            .get_item()
            .table_name(table)
            .key("userId", AttributeValue::S(user_id.to_owned()))
            .send()
            .await
            .map_err(|e| StoreError::dynamo("GetItem", table, e))?;
        out.item
            .map(|item| UserRecord::from_item(&item))
            .transpose()
            .map_err(|source| StoreError::MalformedItem {
                table: table.clone(),
                source,
            })
    }

    /// Up to `count` of a user's purchases in `purchasedAt` order, starting after `after`.
    /// Fewer come back only when the partition has no more.
    #[instrument(skip(self, after), fields(table = %self.tables.purchases))]
    pub async fn user_purchases(
        &self,
        user_id: &str,
        after: Option<&Key>,
        count: usize,
    ) -> Result<Vec<Row<PurchaseRecord>>, StoreError> {
        let table = &self.tables.purchases;
        let mut rows = Vec::with_capacity(count);
        let mut start = after.map(Key::to_attribute_map);
        // One Query returns at most 1 MB, so a page may need several; each asks only for what is
        // still missing, so no item is read twice.
        while rows.len() < count {
            let out = self
                .client
                .query()
                .table_name(table)
                .key_condition_expression("#pk = :pk")
                .expression_attribute_names("#pk", "userId")
                .expression_attribute_values(":pk", AttributeValue::S(user_id.to_owned()))
                .limit(i32::try_from(count - rows.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| StoreError::dynamo("Query", table, e))?;
            for item in out.items.unwrap_or_default() {
                rows.push(purchase_row(table, &item)?);
            }
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        Ok(rows)
    }

    /// Writes items with BatchWriteItem, 25 at a time, retrying unprocessed items with backoff.
    /// Existing items with the same keys are replaced.
    pub async fn put_items(&self, table: &str, items: Vec<Item>) -> Result<(), StoreError> {
        const BATCH: usize = 25;
        const ATTEMPTS: u32 = 8;
        let mut items = items.into_iter().peekable();
        while items.peek().is_some() {
            let mut batch: Vec<WriteRequest> = items
                .by_ref()
                .take(BATCH)
                .map(|item| {
                    let put = PutRequest::builder().set_item(Some(item)).build();
                    put.map(|p| WriteRequest::builder().put_request(p).build())
                })
                .collect::<Result<_, _>>()
                .map_err(|e| {
                    StoreError::dynamo("BatchWriteItem", table, aws_sdk_dynamodb::Error::from(e))
                })?;
            for attempt in 0.. {
                let out = self
                    .client
                    .batch_write_item()
                    .request_items(table, batch)
                    .send()
                    .await
                    .map_err(|e| StoreError::dynamo("BatchWriteItem", table, e))?;
                batch = out
                    .unprocessed_items
                    .and_then(|mut unprocessed| unprocessed.remove(table))
                    .unwrap_or_default();
                if batch.is_empty() {
                    break;
                }
                if attempt + 1 >= ATTEMPTS {
                    return Err(StoreError::Unprocessed {
                        table: table.to_owned(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
            }
        }
        Ok(())
    }

    /// Whether `table` holds no item at all.
    pub async fn is_empty(&self, table: &str) -> Result<bool, StoreError> {
        let out = self
            .client
            .scan()
            .table_name(table)
            .limit(1)
            .send()
            .await
            .map_err(|e| StoreError::dynamo("Scan", table, e))?;
        Ok(out.count == 0 && out.last_evaluated_key.is_none())
    }
}

fn purchase_row(table: &str, item: &Item) -> Result<Row<PurchaseRecord>, StoreError> {
    Ok(Row {
        key: Key::from_item(item, PURCHASE_KEY).map_err(|source| StoreError::MissingKey {
            table: table.to_owned(),
            source,
        })?,
        record: PurchaseRecord::from_item(item).map_err(|source| StoreError::MalformedItem {
            table: table.to_owned(),
            source,
        })?,
    })
}
