//! The store: every DynamoDB read and write the server makes, returning typed records.
//!
//! Each entry point has a tracing span at debug level (`RUST_LOG=dynarelay=debug` shows them):
//! at the default `info` their fields are not formatted on every call, and log lines still
//! carry the request's span with its id.

use std::{collections::HashMap, sync::Arc, time::Duration};

use aws_sdk_dynamodb::{
    Client,
    error::{ProvideErrorMetadata, SdkError},
    operation::update_item::UpdateItemError,
    types::{
        AttributeValue, KeysAndAttributes, PutRequest, ReturnConsumedCapacity, ReturnValue,
        ReturnValuesOnConditionCheckFailure, WriteRequest,
    },
};
use tracing::instrument;

mod calls;
mod request;

use self::{
    calls::{CallName, capacity, read_cost, units, write_cost},
    request::Request,
};
use super::{Item, Tables};
use crate::{
    cursor::{Key, KeyError, KeyShape},
    metrics::{CallCost, Metrics, Outcome, Usage},
    model::TableId,
    pagination::Fetched,
    telemetry,
};

/// What a conditional update did.
#[derive(Debug)]
pub enum Updated {
    /// The condition held: the item as written.
    Written(Item),
    /// The condition failed: the item as it is, if there is one.
    Refused(Option<Item>),
}

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
    /// The same call failed earlier in the same request (see [`Failures`]): not sent again.
    #[error("{call} failed earlier in this request (unavailable: {unavailable})")]
    Repeated {
        /// The call, as [`Failures`] names it.
        call: String,
        /// Whether the earlier failure was DynamoDB being unavailable.
        unavailable: bool,
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
            Self::MissingKey { .. } => false,
            Self::Repeated { unavailable, .. } => *unavailable,
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

/// Where one connection reads, and which items it keeps: a Query on one partition of a table
/// or index (with an optional sort-key condition), or a Scan; and filters on other attributes.
#[derive(Debug, Clone)]
pub struct ReadSpec<'a> {
    /// The table's full name.
    pub table: &'a str,
    /// The index read, if any.
    pub index: Option<&'a str>,
    /// The key shape of items read (the table key, or the index's start key).
    pub shape: KeyShape,
    /// The partition key attribute and value of a Query; `None` for a Scan.
    pub partition: Option<(&'a str, AttributeValue)>,
    /// A condition on the sort key (Queries only).
    pub sort: Option<(&'a str, SortKeyCondition)>,
    /// Filters, all of which an item must pass.
    pub filters: Vec<(&'a str, FilterTest)>,
    /// Filters every item the key condition selects is expected to pass (an entity's required
    /// values where its keys' start already selects its items): applied as `filters` are, but
    /// the read asks for more items on their account only once DynamoDB drops one.
    pub expected: Vec<(&'a str, FilterTest)>,
    /// In a table shared by several kinds of item, which of the items read to keep, and as what
    /// (the others are skipped as if filtered, and counted).
    pub keep: Option<Keep<'a>>,
    /// The only attributes to read of each item, besides the key attributes of `shape` (always
    /// read: cursors are made from them); `None` reads whole items. Fewer attributes cost less
    /// to send and to parse; DynamoDB's read units do not change.
    pub projection: Option<Vec<&'a str>>,
    /// Read with strong consistency (twice the read units): every write acknowledged before the
    /// read is in it. Only the table and its local indexes have such reads.
    pub consistent: bool,
}

/// A test on each item read, after DynamoDB's filters.
#[derive(Clone)]
pub struct Keep<'a>(pub Arc<KeepFn<'a>>);

/// What [`Keep`] holds: the kind of an item read, an opaque number the caller gives a meaning
/// to (it comes back as [`Row::kind`]), or `None` to skip the item.
pub type KeepFn<'a> = dyn Fn(&Item) -> Option<u32> + Send + Sync + 'a;

impl std::fmt::Debug for Keep<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keep")
    }
}

/// A sort-key condition: a key condition, never a filter.
#[derive(Debug, Clone, PartialEq)]
pub enum SortKeyCondition {
    /// Between two values, both inclusive; either end may be open.
    Range(Option<AttributeValue>, Option<AttributeValue>),
    /// Starting with a string.
    Prefix(AttributeValue),
}

/// A filter on one attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterTest {
    /// `=`, `<>`, `<`, `<=`, `>` or `>=` against a value.
    Compare(&'static str, AttributeValue),
    /// `begins_with(attribute, value)`.
    BeginsWith(AttributeValue),
    /// `contains(attribute, value)`.
    Contains(AttributeValue),
    /// `attribute IN (values)`.
    In(Vec<AttributeValue>),
    /// `attribute_exists` (true) or `attribute_not_exists` (false).
    Exists(bool),
}

/// A record together with its exact key, from which cursors are made.
#[derive(Debug, Clone)]
pub struct Row<T> {
    /// The key as DynamoDB returned it.
    pub key: Key,
    /// The record.
    pub record: T,
    /// The kind [`Keep`] gave the item, when the read had one.
    pub kind: Option<u32>,
}

/// Reads and writes the dynarelay tables, recording every call in its [`Metrics`] (and in a
/// request's [`Usage`] when [metered](Store::metered)). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    client: Client,
    tables: Arc<Tables>,
    metrics: Arc<Metrics>,
    usage: Option<Arc<Usage>>,
    failures: Option<Arc<Failures>>,
}

/// The reads that failed in one request, so that the request does not send them again when it
/// is executed a second time (the GraphQL direct executor gives way to the general one after a
/// failure): a read that failed fails again at once, with the same outcome, and is not counted
/// twice. Named by their operation and inputs, which are formatted only when the list is not
/// empty or a read fails.
#[derive(Debug, Default)]
pub struct Failures(std::sync::Mutex<Vec<(String, bool)>>);

impl Failures {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, bool)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The earlier failure of the call `name` names, if it failed before.
    fn repeated(&self, name: impl FnOnce() -> String) -> Option<StoreError> {
        let failed = self.lock();
        if failed.is_empty() {
            return None;
        }
        let call = name();
        let unavailable = failed.iter().find(|(c, _)| *c == call)?.1;
        Some(StoreError::Repeated { call, unavailable })
    }

    fn record(&self, call: String, err: &StoreError) {
        self.lock().push((call, err.is_unavailable()));
    }
}

impl Store {
    /// A store over `tables`, with fresh metrics, reading answers with the fast response reader
    /// ([`super::response_reader`]).
    pub fn new(client: Client, tables: Tables) -> Self {
        Self {
            client: super::response_reader::reading_fast(&client),
            tables: Arc::new(tables),
            metrics: Arc::new(Metrics::new()),
            usage: None,
            failures: None,
        }
    }

    /// The same store, also adding what each call costs to `usage` (one request's total).
    pub fn metered(&self, usage: Arc<Usage>) -> Self {
        Self {
            usage: Some(usage),
            ..self.clone()
        }
    }

    /// The same store, remembering its failed reads in `failures` and failing them again at
    /// once when they are asked for a second time (see [`Failures`]).
    pub fn remembering(&self, failures: Arc<Failures>) -> Self {
        Self {
            failures: Some(failures),
            ..self.clone()
        }
    }

    /// The same store (tables, metrics) over a DynamoDB client of its own: the same
    /// configuration and credentials, and a connection pool of its own, for a thread that keeps
    /// its DynamoDB connections to itself (see `http::ServeSettings::workers`).
    pub fn with_own_connections(&self) -> Self {
        self.with_client(Client::from_conf(self.client.config().clone()))
    }

    /// The same store (tables, metrics) sending its calls through `client`: another client of
    /// the same DynamoDB, one with an interceptor added, say.
    pub fn with_client(&self, client: Client) -> Self {
        Self {
            client,
            ..self.clone()
        }
    }

    /// The metrics every call is recorded in.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
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
        for name in self.tables.names() {
            let call = Box::pin(self.client.describe_table().table_name(name).send());
            self.observe(CallName::on("DescribeTable", &name), call, |_| {
                CallCost::default()
            })
            .await
            .map_err(|e| StoreError::dynamo("DescribeTable", name, e))?;
        }
        Ok(())
    }

    /// The item of table `table` with primary key `key`, if any.
    #[instrument(level = "debug", skip(self, key), fields(table = self.tables.name(table)))]
    pub async fn get(&self, table: TableId, key: &Key) -> Result<Option<Item>, StoreError> {
        let name = self.tables.name(table);
        let call = || format!("GetItem {name} {:?}", key.to_bytes());
        if let Some(failures) = &self.failures
            && let Some(err) = failures.repeated(call)
        {
            return Err(err);
        }
        let out = self.get_item(name, key).await;
        if let (Err(err), Some(failures)) = (&out, &self.failures) {
            failures.record(call(), err);
        }
        out
    }

    async fn get_item(&self, name: &str, key: &Key) -> Result<Option<Item>, StoreError> {
        let call = Box::pin(
            self.client
                .get_item()
                .table_name(name)
                .set_key(Some(key.to_attribute_map()))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send(),
        );
        let out = self
            .observe(CallName::on("GetItem", &name), call, |out| {
                let found = u64::from(out.item.is_some());
                CallCost {
                    capacity: capacity(out.consumed_capacity()),
                    evaluated: found,
                    returned: found,
                }
            })
            .await
            .map_err(|e| StoreError::dynamo("GetItem", name, e))?;
        Ok(out.item)
    }

    /// A page of items: up to `read.want` items passing the filters from `read.start`, in key
    /// order (descending when `read.ascending` is false; Scans always read forward).
    #[instrument(level = "debug", skip(self, spec, read), fields(table = spec.table, index = spec.index, want = read.want))]
    pub async fn read_page(
        &self,
        spec: ReadSpec<'_>,
        read: ReadPlan,
    ) -> Result<Fetched<Row<Item>, Key>, StoreError> {
        let call = |spec: &ReadSpec<'_>, read: &ReadPlan| format!("read {spec:?} {read:?}");
        if let Some(failures) = &self.failures
            && let Some(err) = failures.repeated(|| call(&spec, &read))
        {
            return Err(err);
        }
        let request = spec.build(&self.client, read.ascending);
        let out = self
            .collect(
                (spec.table, spec.index),
                request,
                (!spec.filters.is_empty(), spec.keep.as_ref().map(|k| &*k.0)),
                &read,
                spec.shape,
            )
            .await;
        if let (Err(err), Some(failures)) = (&out, &self.failures) {
            failures.record(call(&spec, &read), err);
        }
        out
    }

    /// How many items `spec` reads: `Select: COUNT` Queries (or Scans) followed to the end of
    /// the data, or `None` once DynamoDB would evaluate more than `budget` items to tell (each
    /// call's `Limit` is what is left of the budget plus one): never a partial number. For
    /// reads that keep every item their key condition and filters select (no [`Keep`]).
    #[instrument(level = "debug", skip(self, spec), fields(table = spec.table, index = spec.index))]
    pub async fn count(&self, spec: &ReadSpec<'_>, budget: u64) -> Result<Option<u64>, StoreError> {
        // The model allows counts only where no item is told apart in memory.
        debug_assert!(
            spec.keep.is_none(),
            "a count of a read with an in-memory test"
        );
        let request = spec.build(&self.client, true).counting();
        let (mut count, mut evaluated) = (0u64, 0u64);
        let mut start = None;
        loop {
            let left = budget.saturating_sub(evaluated).saturating_add(1);
            let limit = i32::try_from(left).unwrap_or(i32::MAX);
            let batch = request
                .send(self, (spec.table, spec.index), limit, start.take())
                .await?;
            evaluated += batch.evaluated as u64;
            count += batch.matched as u64;
            if evaluated > budget {
                return Ok(None);
            }
            match batch.last {
                Some(last) => start = Some(last),
                None => return Ok(Some(count)),
            }
        }
    }

    /// Sends `request` page after page until `read.want` rows match, the data ends, or DynamoDB has
    /// evaluated `read.budget` items. With a filter, each call's `Limit` grows with the match
    /// rate seen so far, so sparse filters take few calls; without one it asks for exactly what
    /// is missing. One call returns at most 1 MB, so even unfiltered pages may take several.
    async fn collect(
        &self,
        (table, index): (&str, Option<&str>),
        request: Request,
        (mut filtered, keep): (bool, Option<&KeepFn<'_>>),
        read: &ReadPlan,
        shape: KeyShape,
    ) -> Result<Fetched<Row<Item>, Key>, StoreError> {
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
            let batch = request
                .send(self, (table, index), limit, start.take())
                .await?;
            evaluated += batch.evaluated;
            let mut skipped = 0;
            for item in batch.items {
                let kind = keep.map(|keep| keep(&item));
                if kind == Some(None) {
                    skipped += 1;
                } else if rows.len() < read.want {
                    rows.push(row(table, item, shape, kind.flatten())?);
                }
            }
            // DynamoDB's filters dropped items (those `expected` to pass among them): the rate
            // seen decides later calls' `Limit`.
            filtered |= batch.matched < batch.evaluated;
            matched += batch.matched.saturating_sub(skipped);
            if skipped > 0 {
                self.metrics.items_unmatched(table, skipped as u64);
                filtered = true;
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

    /// Writes `item` to `table` only if no item with its key exists. `Ok(false)` when one does.
    #[instrument(level = "debug", skip(self, item), fields(table = self.tables.name(table)))]
    pub async fn put_new(&self, table: TableId, item: Item) -> Result<bool, StoreError> {
        let name = self.tables.name(table);
        let call = Box::pin(
            self.client
                .put_item()
                .table_name(name)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", self.tables.key(table)[0].name)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send(),
        );
        let result = self
            .observe(CallName::on("PutItem", &name), call, |out| {
                write_cost(out.consumed_capacity())
            })
            .await;
        conditional(result, "PutItem", name).map(|r| r.is_some())
    }

    /// Sets and removes attributes of the item of `table` with `key`, only if it exists and
    /// each attribute of `expect` holds its value there. Returns the item as written, or, when
    /// the condition failed, the item as it is (`None` when there is none), taken from the
    /// failed write itself (`ReturnValuesOnConditionCheckFailure`), so that telling "changed"
    /// from "missing" needs no second read.
    #[instrument(level = "debug", skip(self, key, set, remove, expect), fields(table = self.tables.name(table)))]
    pub async fn update_existing(
        &self,
        table: TableId,
        key: &Key,
        set: Vec<(String, AttributeValue)>,
        remove: Vec<String>,
        expect: Vec<(String, AttributeValue)>,
    ) -> Result<Updated, StoreError> {
        let name = self.tables.name(table);
        let mut names =
            HashMap::from([("#pk".to_owned(), self.tables.key(table)[0].name.to_owned())]);
        let mut values = HashMap::new();
        let mut sets = Vec::new();
        for (i, (attribute, value)) in set.into_iter().enumerate() {
            names.insert(format!("#s{i}"), attribute);
            values.insert(format!(":s{i}"), value);
            sets.push(format!("#s{i} = :s{i}"));
        }
        let mut removes = Vec::new();
        for (i, attribute) in remove.into_iter().enumerate() {
            names.insert(format!("#r{i}"), attribute);
            removes.push(format!("#r{i}"));
        }
        let mut update = String::new();
        if !sets.is_empty() {
            update.push_str("SET ");
            update.push_str(&sets.join(", "));
        }
        if !removes.is_empty() {
            update.push_str(if update.is_empty() {
                "REMOVE "
            } else {
                " REMOVE "
            });
            update.push_str(&removes.join(", "));
        }
        let condition = expectation(expect, &mut names, &mut values);
        let call = Box::pin(
            self.client
                .update_item()
                .table_name(name)
                .set_key(Some(key.to_attribute_map()))
                .set_update_expression((!update.is_empty()).then_some(update))
                .condition_expression(condition)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values((!values.is_empty()).then_some(values))
                .return_values(ReturnValue::AllNew)
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send(),
        );
        let result = self
            .observe(CallName::on("UpdateItem", &name), call, |out| {
                write_cost(out.consumed_capacity())
            })
            .await;
        match result {
            Ok(out) => Ok(Updated::Written(out.attributes.unwrap_or_default())),
            Err(err) => match err.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(failed) => {
                    Ok(Updated::Refused(failed.item))
                }
                err => Err(StoreError::dynamo("UpdateItem", name, err)),
            },
        }
    }

    /// Deletes the item of `table` with `key` if it exists and each attribute of `expect` holds
    /// its value there. `Ok(false)` when the condition failed.
    #[instrument(level = "debug", skip(self, key, expect), fields(table = self.tables.name(table)))]
    pub async fn delete_existing(
        &self,
        table: TableId,
        key: &Key,
        expect: Vec<(String, AttributeValue)>,
    ) -> Result<bool, StoreError> {
        let name = self.tables.name(table);
        let mut names =
            HashMap::from([("#pk".to_owned(), self.tables.key(table)[0].name.to_owned())]);
        let mut values = HashMap::new();
        let condition = expectation(expect, &mut names, &mut values);
        let call = Box::pin(
            self.client
                .delete_item()
                .table_name(name)
                .set_key(Some(key.to_attribute_map()))
                .condition_expression(condition)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values((!values.is_empty()).then_some(values))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send(),
        );
        let result = self
            .observe(CallName::on("DeleteItem", &name), call, |out| {
                write_cost(out.consumed_capacity())
            })
            .await;
        conditional(result, "DeleteItem", name).map(|r| r.is_some())
    }

    /// Reads items by primary key with BatchGetItem, 100 keys a call, retrying unprocessed keys
    /// with backoff. Keys with no item are absent from the result.
    #[instrument(level = "debug", skip(self, keys), fields(keys = keys.len()))]
    pub async fn batch_get(
        &self,
        keys: &[(TableId, Key)],
    ) -> Result<HashMap<(TableId, Key), Item>, StoreError> {
        const CHUNK: usize = 100;
        const ATTEMPTS: u32 = 8;
        let mut found = HashMap::with_capacity(keys.len());
        for chunk in keys.chunks(CHUNK) {
            let mut request: HashMap<String, KeysAndAttributes> = HashMap::new();
            for (table, key) in chunk {
                let name = self.tables.name(*table).to_owned();
                let entry = request
                    .remove(&name)
                    .map_or_else(KeysAndAttributes::builder, |k| {
                        KeysAndAttributes::builder().set_keys(Some(k.keys().to_vec()))
                    });
                let built = entry.keys(key.to_attribute_map()).build().map_err(|e| {
                    StoreError::dynamo("BatchGetItem", &name, aws_sdk_dynamodb::Error::from(e))
                })?;
                request.insert(name, built);
            }
            for attempt in 0.. {
                // The tables this call reads, for its span (by the names the store holds: the
                // request is the call's).
                let tables: Vec<&str> = request
                    .keys()
                    .filter_map(|name| self.tables.id_of(name).map(|id| self.tables.name(id)))
                    .collect();
                let call = Box::pin(
                    self.client
                        .batch_get_item()
                        .set_request_items(Some(request))
                        .return_consumed_capacity(ReturnConsumedCapacity::Total)
                        .send(),
                );
                let out = self
                    .observe_on(
                        CallName::several("BatchGetItem", &tables),
                        call,
                        |out, span| {
                            // Capacity and items are reported per table; record them so.
                            let mut total = CallCost::default();
                            telemetry::record_consumed_capacity(
                                span,
                                out.consumed_capacity().iter().map(|consumed| {
                                    (consumed.table_name().unwrap_or_default(), units(consumed))
                                }),
                            );
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
                        },
                    )
                    .await
                    .map_err(|e| StoreError::dynamo("BatchGetItem", "several tables", e))?;
                for (name, items) in out.responses.unwrap_or_default() {
                    let Some(table) = self.tables.id_of(&name) else {
                        continue;
                    };
                    for item in items {
                        let key =
                            Key::from_item(&item, self.tables.key(table)).map_err(|source| {
                                StoreError::MissingKey {
                                    table: name.clone(),
                                    source,
                                }
                            })?;
                        found.insert((table, key), item);
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
                    .observe(CallName::on("BatchWriteItem", &table), call, |out| {
                        CallCost {
                            capacity: out.consumed_capacity().iter().map(units).sum(),
                            ..CallCost::default()
                        }
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
            .observe(CallName::on("Scan", &table), call, |out| {
                read_cost(None, out.scanned_count, out.count)
            })
            .await
            .map_err(|e| StoreError::dynamo("Scan", table, e))?;
        Ok(out.count == 0 && out.last_evaluated_key.is_none())
    }
}

/// The condition of a write to an existing item (its partition key attribute named `#pk` in
/// `names`): it exists, and each attribute of `expect` holds its value.
fn expectation(
    expect: Vec<(String, AttributeValue)>,
    names: &mut HashMap<String, String>,
    values: &mut HashMap<String, AttributeValue>,
) -> String {
    let mut condition = "attribute_exists(#pk)".to_owned();
    for (i, (attribute, value)) in expect.into_iter().enumerate() {
        names.insert(format!("#v{i}"), attribute);
        values.insert(format!(":v{i}"), value);
        condition.push_str(&format!(" AND #v{i} = :v{i}"));
    }
    condition
}

/// The outcome of a conditional write: its output when it happened, `None` when its condition
/// failed (told apart by DynamoDB's error code, never its message).
fn conditional<T, E, R>(
    result: Result<T, SdkError<E, R>>,
    operation: &'static str,
    table: &str,
) -> Result<Option<T>, StoreError>
where
    E: ProvideErrorMetadata,
    SdkError<E, R>: Into<aws_sdk_dynamodb::Error>,
{
    match result {
        Ok(out) => Ok(Some(out)),
        Err(err)
            if err.as_service_error().and_then(ProvideErrorMetadata::code)
                == Some("ConditionalCheckFailedException") =>
        {
            Ok(None)
        }
        Err(err) => Err(StoreError::dynamo(operation, table, err)),
    }
}

fn row(
    table: &str,
    item: Item,
    shape: KeyShape,
    kind: Option<u32>,
) -> Result<Row<Item>, StoreError> {
    Ok(Row {
        key: Key::from_item(&item, shape).map_err(|source| StoreError::MissingKey {
            table: table.to_owned(),
            source,
        })?,
        record: item,
        kind,
    })
}
