//! The store: every DynamoDB read and write the server makes, returning typed records.
//!
//! Each entry point has a tracing span at debug level (`RUST_LOG=dynarelay=debug` shows them):
//! at the default `info` their fields are not formatted on every call, and log lines still
//! carry the request's span with its id.

use std::{
    collections::HashMap,
    future::Future,
    sync::Arc,
    time::{Duration, Instant},
};

use aws_sdk_dynamodb::{
    Client,
    error::{ProvideErrorMetadata, SdkError},
    operation::{query::builders::QueryFluentBuilder, scan::builders::ScanFluentBuilder},
    types::{
        AttributeValue, ConsumedCapacity, KeysAndAttributes, PutRequest, ReturnConsumedCapacity,
        WriteRequest,
    },
};
use tracing::instrument;

use super::{
    Tables,
    model::{Item, ModelError, ProductRecord, PurchaseRecord, PurchaseStatus, UserRecord},
    tables::TableKind,
    tables::{
        BY_CATEGORY, BY_CATEGORY_START_KEY, BY_SKU, BY_SKU_START_KEY, PURCHASE_KEY, USER_KEY,
    },
};
use crate::{
    cursor::{Key, KeyError, KeyShape},
    metrics::{CallCost, Metrics, Outcome, Usage},
    number::DynamoNumber,
    pagination::Fetched,
};

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
    /// BatchWriteItem or BatchGetItem kept returning unprocessed items.
    #[error("a batch operation on {table} left items unprocessed after retries")]
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

    /// Whether the failure is DynamoDB being unreachable, timing out, or throttling past the
    /// SDK's retries (so the same request may succeed later), as opposed to a request or data
    /// problem. Decided by DynamoDB's error code, never its message: a transport failure or
    /// timeout has no code at all.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Dynamo { source, .. } => matches!(
                Outcome::of_error_code(source.code()),
                Outcome::Unavailable | Outcome::Throttled
            ),
            Self::Unprocessed { .. } => true,
            Self::MalformedItem { .. } | Self::MissingKey { .. } => false,
        }
    }
}

/// How to read one page: where to start, which way, how many matching rows, and how many items
/// DynamoDB may evaluate at most.
#[derive(Debug, Clone)]
pub struct ReadPlan {
    /// Read after this key (exclusive), or from the start.
    pub start: Option<Key>,
    /// Ascending sort-key order.
    pub ascending: bool,
    /// Matching rows wanted (the page size plus one).
    pub want: usize,
    /// Most items DynamoDB may evaluate.
    pub budget: usize,
}

/// Narrows a user's purchases: a `purchasedAt` range (epoch ms, both ends inclusive) applied in
/// the key condition, and filters on `status` and a minimum `amount`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PurchaseFilter {
    /// Earliest `purchasedAt`.
    pub since: Option<i64>,
    /// Latest `purchasedAt`.
    pub until: Option<i64>,
    /// Only this status.
    pub status: Option<PurchaseStatus>,
    /// Only amounts at least this.
    pub min_amount: Option<DynamoNumber>,
}

/// A Query or Scan request, sent once per page-filling step with a new `Limit` and start key.
enum Request {
    Query(QueryFluentBuilder),
    Scan(ScanFluentBuilder),
}

impl Request {
    async fn send(
        &self,
        store: &Store,
        table: &str,
        limit: i32,
        start: Option<Item>,
    ) -> Result<Batch, StoreError> {
        match self {
            Request::Query(query) => {
                let send = query.clone().limit(limit).set_exclusive_start_key(start);
                let out = store
                    .observe("Query", table, Box::pin(send.send()), |out| {
                        read_cost(out.consumed_capacity(), out.scanned_count, out.count)
                    })
                    .await
                    .map_err(|e| StoreError::dynamo("Query", table, e))?;
                Ok(Batch::new(
                    out.items,
                    out.last_evaluated_key,
                    out.scanned_count,
                    out.count,
                ))
            }
            Request::Scan(scan) => {
                let send = scan.clone().limit(limit).set_exclusive_start_key(start);
                let out = store
                    .observe("Scan", table, Box::pin(send.send()), |out| {
                        read_cost(out.consumed_capacity(), out.scanned_count, out.count)
                    })
                    .await
                    .map_err(|e| StoreError::dynamo("Scan", table, e))?;
                Ok(Batch::new(
                    out.items,
                    out.last_evaluated_key,
                    out.scanned_count,
                    out.count,
                ))
            }
        }
    }
}

/// One Query or Scan response, reduced to what paging needs.
struct Batch {
    items: Vec<Item>,
    last: Option<Item>,
    evaluated: usize,
    matched: usize,
}

impl Batch {
    fn new(items: Option<Vec<Item>>, last: Option<Item>, scanned: i32, count: i32) -> Self {
        Self {
            items: items.unwrap_or_default(),
            last: last.filter(|key| !key.is_empty()),
            evaluated: usize::try_from(scanned).unwrap_or(0),
            matched: usize::try_from(count).unwrap_or(0),
        }
    }
}

/// A Query on one partition of a table or index: an optional inclusive range on the sort key,
/// and equality or comparison filters on other attributes.
struct KeyQuery<'a> {
    table: &'a str,
    index: Option<&'static str>,
    /// The start-key shape of the table or index.
    shape: KeyShape,
    partition: (&'static str, AttributeValue),
    /// Sort key name, lower and upper bound (both inclusive).
    range: Option<(&'static str, Option<AttributeValue>, Option<AttributeValue>)>,
    /// Attribute, operator, value.
    filters: Vec<(&'static str, &'static str, AttributeValue)>,
}

impl KeyQuery<'_> {
    /// The Query request; attribute names go through placeholders, so no name can collide with
    /// a DynamoDB reserved word.
    fn build(self, client: &Client) -> QueryFluentBuilder {
        let (pk, pk_value) = self.partition;
        let mut condition = "#pk = :pk".to_owned();
        let mut query = client
            .query()
            .table_name(self.table)
            .set_index_name(self.index.map(str::to_owned))
            .expression_attribute_names("#pk", pk)
            .expression_attribute_values(":pk", pk_value)
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        if let Some((sk, lower, upper)) = self.range
            && (lower.is_some() || upper.is_some())
        {
            query = query.expression_attribute_names("#sk", sk);
            condition.push_str(match (&lower, &upper) {
                (Some(_), Some(_)) => " AND #sk BETWEEN :lo AND :hi",
                (Some(_), None) => " AND #sk >= :lo",
                _ => " AND #sk <= :hi",
            });
            if let Some(lower) = lower {
                query = query.expression_attribute_values(":lo", lower);
            }
            if let Some(upper) = upper {
                query = query.expression_attribute_values(":hi", upper);
            }
        }
        let mut filter = Vec::new();
        for (i, (name, op, value)) in self.filters.into_iter().enumerate() {
            filter.push(format!("#f{i} {op} :f{i}"));
            query = query
                .expression_attribute_names(format!("#f{i}"), name)
                .expression_attribute_values(format!(":f{i}"), value);
        }
        if !filter.is_empty() {
            query = query.filter_expression(filter.join(" AND "));
        }
        query.key_condition_expression(condition)
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

/// Reads and writes the dynarelay tables, recording every call in its [`Metrics`] (and in a
/// request's [`Usage`] when [metered](Store::metered)). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    client: Client,
    tables: Arc<Tables>,
    metrics: Arc<Metrics>,
    usage: Option<Arc<Usage>>,
}

impl Store {
    /// A store over `tables`, with fresh metrics.
    pub fn new(client: Client, tables: Tables) -> Self {
        Self {
            client,
            tables: Arc::new(tables),
            metrics: Arc::new(Metrics::new()),
            usage: None,
        }
    }

    /// The same store, also adding what each call costs to `usage` (one request's total).
    pub fn metered(&self, usage: Arc<Usage>) -> Self {
        Self {
            usage: Some(usage),
            ..self.clone()
        }
    }

    /// The metrics every call is recorded in.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Runs one DynamoDB call on `table` and records its outcome, duration and cost. The call
    /// comes boxed (`Unpin`): the SDK's futures are large, and moving them through this wrapper
    /// by value would put copies on the stack of every poll.
    async fn observe<T, E, R>(
        &self,
        operation: &'static str,
        table: &str,
        call: impl Future<Output = Result<T, SdkError<E, R>>> + Unpin,
        cost: impl FnOnce(&T) -> CallCost,
    ) -> Result<T, SdkError<E, R>>
    where
        E: ProvideErrorMetadata,
    {
        self.observe_on(operation, Some(table), call, |out| {
            let cost = cost(out);
            self.metrics.table_cost(table, cost);
            cost
        })
        .await
    }

    /// Runs one DynamoDB call and records its outcome and duration, and its total cost in the
    /// request's usage. `cost` records the cost per table; `table` is `None` for several.
    async fn observe_on<T, E, R>(
        &self,
        operation: &'static str,
        table: Option<&str>,
        call: impl Future<Output = Result<T, SdkError<E, R>>> + Unpin,
        cost: impl FnOnce(&T) -> CallCost,
    ) -> Result<T, SdkError<E, R>>
    where
        E: ProvideErrorMetadata,
    {
        let started = Instant::now();
        let result = call.await;
        let (outcome, cost) = match &result {
            Ok(out) => (Outcome::Ok, cost(out)),
            Err(err) => (
                Outcome::of_error_code(err.as_service_error().and_then(ProvideErrorMetadata::code)),
                CallCost::default(),
            ),
        };
        self.metrics
            .dynamodb_call(operation, table, outcome, started.elapsed());
        if let Some(usage) = &self.usage {
            usage.add(cost);
        }
        result
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
    #[instrument(level = "debug", skip(self))]
    pub async fn check_ready(&self) -> Result<(), StoreError> {
        for (name, _) in self.tables.named_specs() {
            let call = Box::pin(self.client.describe_table().table_name(name).send());
            self.observe("DescribeTable", name, call, |_| CallCost::default())
                .await
                .map_err(|e| StoreError::dynamo("DescribeTable", name, e))?;
        }
        Ok(())
    }

    /// One user by id.
    #[instrument(level = "debug", skip(self))]
    pub async fn get_user(&self, user_id: &str) -> Result<Option<UserRecord>, StoreError> {
        self.get_one(&self.tables.users, "userId", user_id, UserRecord::from_item)
            .await
    }

    /// One product by SKU.
    #[instrument(level = "debug", skip(self))]
    pub async fn get_product(&self, sku: &str) -> Result<Option<ProductRecord>, StoreError> {
        self.get_one(&self.tables.products, "sku", sku, ProductRecord::from_item)
            .await
    }

    /// The item of `table` whose string partition key `key` is `value`, parsed.
    async fn get_one<T>(
        &self,
        table: &str,
        key: &str,
        value: &str,
        parse: fn(&Item) -> Result<T, ModelError>,
    ) -> Result<Option<T>, StoreError> {
        let call = Box::pin(
            self.client
                .get_item()
                .table_name(table)
                .key(key, AttributeValue::S(value.to_owned()))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send(),
        );
        let out = self
            .observe("GetItem", table, call, |out| {
                let found = u64::from(out.item.is_some());
                CallCost {
                    capacity: capacity(out.consumed_capacity()),
                    evaluated: found,
                    returned: found,
                }
            })
            .await
            .map_err(|e| StoreError::dynamo("GetItem", table, e))?;
        out.item
            .map(|item| parse(&item))
            .transpose()
            .map_err(|source| StoreError::MalformedItem {
                table: table.to_owned(),
                source,
            })
    }

    /// A page of a user's purchases: up to `read.want` matching rows from `read.start`, in
    /// `purchasedAt` order (descending when `read.ascending` is false).
    #[instrument(level = "debug", skip(self, read), fields(table = %self.tables.purchases, want = read.want))]
    pub async fn user_purchases(
        &self,
        user_id: &str,
        filter: &PurchaseFilter,
        read: ReadPlan,
    ) -> Result<Fetched<Row<PurchaseRecord>, Key>, StoreError> {
        let n = |ms: i64| AttributeValue::N(ms.to_string());
        let mut filters = Vec::new();
        if let Some(status) = filter.status {
            filters.push(("status", "=", AttributeValue::S(status.as_str().to_owned())));
        }
        if let Some(min) = &filter.min_amount {
            filters.push(("amount", ">=", AttributeValue::N(min.as_str().to_owned())));
        }
        let query = KeyQuery {
            table: &self.tables.purchases,
            index: None,
            shape: PURCHASE_KEY,
            partition: ("userId", AttributeValue::S(user_id.to_owned())),
            range: Some(("purchasedAt", filter.since.map(n), filter.until.map(n))),
            filters,
        };
        self.query_page(query, read, PurchaseRecord::from_item)
            .await
    }

    /// A page of a product's purchases from the `BySku` index, in `purchasedAt` order.
    #[instrument(level = "debug", skip(self, read), fields(table = %self.tables.purchases, want = read.want))]
    pub async fn product_purchases(
        &self,
        sku: &str,
        read: ReadPlan,
    ) -> Result<Fetched<Row<PurchaseRecord>, Key>, StoreError> {
        let query = KeyQuery {
            table: &self.tables.purchases,
            index: Some(BY_SKU),
            shape: BY_SKU_START_KEY,
            partition: ("sku", AttributeValue::S(sku.to_owned())),
            range: None,
            filters: Vec::new(),
        };
        self.query_page(query, read, PurchaseRecord::from_item)
            .await
    }

    /// A page of a category's products from the `ByCategory` index, in `price` order, with an
    /// optional inclusive price range.
    #[instrument(level = "debug", skip(self, read), fields(table = %self.tables.products, want = read.want))]
    pub async fn products_by_category(
        &self,
        category: &str,
        min_price: Option<&DynamoNumber>,
        max_price: Option<&DynamoNumber>,
        read: ReadPlan,
    ) -> Result<Fetched<Row<ProductRecord>, Key>, StoreError> {
        let n = |d: &DynamoNumber| AttributeValue::N(d.as_str().to_owned());
        let query = KeyQuery {
            table: &self.tables.products,
            index: Some(BY_CATEGORY),
            shape: BY_CATEGORY_START_KEY,
            partition: ("category", AttributeValue::S(category.to_owned())),
            range: Some(("price", min_price.map(n), max_price.map(n))),
            filters: Vec::new(),
        };
        self.query_page(query, read, ProductRecord::from_item).await
    }

    /// A page of all users, in DynamoDB's Scan order.
    #[instrument(level = "debug", skip(self, read), fields(table = %self.tables.users, want = read.want))]
    pub async fn users(&self, read: ReadPlan) -> Result<Fetched<Row<UserRecord>, Key>, StoreError> {
        let table = &self.tables.users;
        let scan = Request::Scan(
            self.client
                .scan()
                .table_name(table)
                .return_consumed_capacity(ReturnConsumedCapacity::Total),
        );
        self.collect(table, scan, false, read, USER_KEY, UserRecord::from_item)
            .await
    }

    async fn query_page<T>(
        &self,
        spec: KeyQuery<'_>,
        read: ReadPlan,
        parse: fn(&Item) -> Result<T, ModelError>,
    ) -> Result<Fetched<Row<T>, Key>, StoreError> {
        let (table, shape, filtered) = (spec.table, spec.shape, !spec.filters.is_empty());
        let query = Request::Query(spec.build(&self.client).scan_index_forward(read.ascending));
        self.collect(table, query, filtered, read, shape, parse)
            .await
    }

    /// Sends `request` page after page until `read.want` rows match, the data ends, or DynamoDB has
    /// evaluated `read.budget` items. With a filter, each call's `Limit` grows with the match
    /// rate seen so far, so sparse filters take few calls; without one it asks for exactly what
    /// is missing. One call returns at most 1 MB, so even unfiltered pages may take several.
    async fn collect<T>(
        &self,
        table: &str,
        request: Request,
        filtered: bool,
        read: ReadPlan,
        shape: KeyShape,
        parse: fn(&Item) -> Result<T, ModelError>,
    ) -> Result<Fetched<Row<T>, Key>, StoreError> {
        let mut rows = Vec::with_capacity(read.want.min(128));
        let mut start = read.start.as_ref().map(Key::to_attribute_map);
        let (mut evaluated, mut matched) = (0usize, 0usize);
        loop {
            let missing = read.want - rows.len();
            let budget_left = read.budget.saturating_sub(evaluated);
            let estimate = if filtered {
                // Laplace-smoothed match rate, so a run of misses still grows the request.
                let rate = (matched as f64 + 1.0) / (evaluated as f64 + 2.0);
                ((missing as f64 / rate) * 1.25).ceil() as usize
            } else {
                missing
            };
            let limit = estimate.max(missing).min(budget_left).max(1);
            let limit = i32::try_from(limit).unwrap_or(i32::MAX);
            let batch = request.send(self, table, limit, start.take()).await?;
            evaluated += batch.evaluated;
            matched += batch.matched;
            for item in &batch.items {
                if rows.len() < read.want {
                    rows.push(row(table, item, shape, parse)?);
                }
            }
            let Some(last) = batch.last else {
                return Ok(Fetched { rows, resume: None });
            };
            if rows.len() >= read.want {
                return Ok(Fetched { rows, resume: None });
            }
            if evaluated >= read.budget {
                let resume =
                    Key::from_item(&last, shape).map_err(|source| StoreError::MissingKey {
                        table: table.to_owned(),
                        source,
                    })?;
                return Ok(Fetched {
                    rows,
                    resume: Some(resume),
                });
            }
            start = Some(last);
        }
    }

    /// Writes `item` only if no item with its key exists. `Ok(false)` when one does.
    #[instrument(level = "debug", skip(self, item))]
    pub async fn put_new(&self, kind: TableKind, item: Item) -> Result<bool, StoreError> {
        let table = self.tables.name(kind);
        let call = Box::pin(
            self.client
                .put_item()
                .table_name(table)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", kind.key_shape()[0].name)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send(),
        );
        let result = self
            .observe("PutItem", table, call, |out| {
                write_cost(out.consumed_capacity())
            })
            .await;
        conditional(result, "PutItem", table)
    }

    /// Deletes the item with `key` if it exists. `Ok(false)` when there was none.
    #[instrument(level = "debug", skip(self))]
    pub async fn delete_existing(&self, kind: TableKind, key: &Key) -> Result<bool, StoreError> {
        let table = self.tables.name(kind);
        let call = Box::pin(
            self.client
                .delete_item()
                .table_name(table)
                .set_key(Some(key.to_attribute_map()))
                .condition_expression("attribute_exists(#pk)")
                .expression_attribute_names("#pk", kind.key_shape()[0].name)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send(),
        );
        let result = self
            .observe("DeleteItem", table, call, |out| {
                write_cost(out.consumed_capacity())
            })
            .await;
        conditional(result, "DeleteItem", table)
    }

    /// Reads items by primary key with BatchGetItem, 100 keys a call, retrying unprocessed keys
    /// with backoff. Keys with no item are absent from the result.
    #[instrument(level = "debug", skip(self, keys), fields(keys = keys.len()))]
    pub async fn batch_get(
        &self,
        keys: &[(TableKind, Key)],
    ) -> Result<HashMap<(TableKind, Key), Item>, StoreError> {
        const CHUNK: usize = 100;
        const ATTEMPTS: u32 = 8;
        let mut found = HashMap::with_capacity(keys.len());
        for chunk in keys.chunks(CHUNK) {
            let mut request: HashMap<String, KeysAndAttributes> = HashMap::new();
            for (kind, key) in chunk {
                let table = self.tables.name(*kind).to_owned();
                let entry = request
                    .remove(&table)
                    .map_or_else(KeysAndAttributes::builder, |k| {
                        KeysAndAttributes::builder().set_keys(Some(k.keys().to_vec()))
                    });
                let built = entry.keys(key.to_attribute_map()).build().map_err(|e| {
                    StoreError::dynamo("BatchGetItem", &table, aws_sdk_dynamodb::Error::from(e))
                })?;
                request.insert(table, built);
            }
            for attempt in 0.. {
                let call = Box::pin(
                    self.client
                        .batch_get_item()
                        .set_request_items(Some(request))
                        .return_consumed_capacity(ReturnConsumedCapacity::Total)
                        .send(),
                );
                let out = self
                    .observe_on("BatchGetItem", None, call, |out| {
                        // Capacity and items are reported per table; record them so.
                        let mut total = CallCost::default();
                        for consumed in out.consumed_capacity() {
                            let capacity = units(consumed);
                            total.capacity += capacity;
                            if let Some(table) = consumed.table_name() {
                                self.metrics.table_cost(
                                    table,
                                    CallCost {
                                        capacity,
                                        ..CallCost::default()
                                    },
                                );
                            }
                        }
                        for (table, items) in out.responses.iter().flatten() {
                            let found = u64::try_from(items.len()).unwrap_or(u64::MAX);
                            total.evaluated += found;
                            total.returned += found;
                            self.metrics.table_cost(
                                table,
                                CallCost {
                                    evaluated: found,
                                    returned: found,
                                    ..CallCost::default()
                                },
                            );
                        }
                        total
                    })
                    .await
                    .map_err(|e| StoreError::dynamo("BatchGetItem", "several tables", e))?;
                for (table, items) in out.responses.unwrap_or_default() {
                    let kind = self.tables.kind(&table);
                    for item in items {
                        if let Some(kind) = kind {
                            let key =
                                Key::from_item(&item, kind.key_shape()).map_err(|source| {
                                    StoreError::MissingKey {
                                        table: table.clone(),
                                        source,
                                    }
                                })?;
                            found.insert((kind, key), item);
                        }
                    }
                }
                request = out.unprocessed_keys.unwrap_or_default();
                if request.is_empty() {
                    break;
                }
                if attempt + 1 >= ATTEMPTS {
                    return Err(StoreError::Unprocessed {
                        table: "several tables".to_owned(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(25 << attempt)).await;
            }
        }
        Ok(found)
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
                let call = Box::pin(
                    self.client
                        .batch_write_item()
                        .request_items(table, batch)
                        .return_consumed_capacity(ReturnConsumedCapacity::Total)
                        .send(),
                );
                let out = self
                    .observe("BatchWriteItem", table, call, |out| CallCost {
                        capacity: out.consumed_capacity().iter().map(units).sum(),
                        ..CallCost::default()
                    })
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
        let call = Box::pin(self.client.scan().table_name(table).limit(1).send());
        let out = self
            .observe("Scan", table, call, |out| {
                read_cost(None, out.scanned_count, out.count)
            })
            .await
            .map_err(|e| StoreError::dynamo("Scan", table, e))?;
        Ok(out.count == 0 && out.last_evaluated_key.is_none())
    }
}

/// The outcome of a conditional write: `true` when it happened, `false` when its condition
/// failed (told apart by DynamoDB's error code, never its message).
fn conditional<T, E, R>(
    result: Result<T, SdkError<E, R>>,
    operation: &'static str,
    table: &str,
) -> Result<bool, StoreError>
where
    E: ProvideErrorMetadata,
    SdkError<E, R>: Into<aws_sdk_dynamodb::Error>,
{
    match result {
        Ok(_) => Ok(true),
        Err(err)
            if err.as_service_error().and_then(ProvideErrorMetadata::code)
                == Some("ConditionalCheckFailedException") =>
        {
            Ok(false)
        }
        Err(err) => Err(StoreError::dynamo(operation, table, err)),
    }
}

fn row<T>(
    table: &str,
    item: &Item,
    shape: KeyShape,
    parse: fn(&Item) -> Result<T, ModelError>,
) -> Result<Row<T>, StoreError> {
    Ok(Row {
        key: Key::from_item(item, shape).map_err(|source| StoreError::MissingKey {
            table: table.to_owned(),
            source,
        })?,
        record: parse(item).map_err(|source| StoreError::MalformedItem {
            table: table.to_owned(),
            source,
        })?,
    })
}

fn units(consumed: &ConsumedCapacity) -> f64 {
    consumed.capacity_units().unwrap_or(0.0)
}

fn capacity(consumed: Option<&ConsumedCapacity>) -> f64 {
    consumed.map_or(0.0, units)
}

fn read_cost(consumed: Option<&ConsumedCapacity>, scanned: i32, count: i32) -> CallCost {
    CallCost {
        capacity: capacity(consumed),
        evaluated: u64::try_from(scanned).unwrap_or(0),
        returned: u64::try_from(count).unwrap_or(0),
    }
}

fn write_cost(consumed: Option<&ConsumedCapacity>) -> CallCost {
    CallCost {
        capacity: capacity(consumed),
        ..CallCost::default()
    }
}
