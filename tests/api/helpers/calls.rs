//! The DynamoDB calls a client sends, counted ([`CallCounter`]), logged with their key values
//! ([`CallLog`]) or held to the model's IAM policy ([`PolicyAudit`]) at the SDK boundary, and as
//! the server's metrics count them.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
};

use dynarelay::{
    model::Model,
    policy::{PolicyTarget, policy},
};
use serde_json::Value;

use aws_sdk_dynamodbstreams::operation::{
    describe_stream::DescribeStreamInput, get_records::GetRecordsInput,
    get_shard_iterator::GetShardIteratorInput,
};

use aws_sdk_dynamodb::{
    config::{ConfigBag, Intercept, interceptors::BeforeSerializationInterceptorContextRef},
    error::BoxError,
    operation::{
        batch_get_item::BatchGetItemInput, get_item::GetItemInput, query::QueryInput,
        scan::ScanInput,
    },
    types::AttributeValue,
};

/// Counts the DynamoDB read operations a client sends, by operation, at the SDK boundary.
#[derive(Debug, Clone, Default)]
pub struct CallCounter(Arc<Mutex<BTreeMap<&'static str, usize>>>);

impl CallCounter {
    pub fn snapshot(&self) -> BTreeMap<&'static str, usize> {
        self.0.lock().expect("counter lock").clone()
    }
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "CallCounter"
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // Reads by their operation; every write counts as "other".
        let operation = match logged_call(context).operation {
            read @ ("Query" | "Scan" | "GetItem" | "BatchGetItem") => read,
            _ => "other",
        };
        *self
            .0
            .lock()
            .expect("counter lock")
            .entry(operation)
            .or_default() += 1;
        Ok(())
    }
}

/// One DynamoDB call as a client sent it: the operation, the tables it names, and every string
/// and number in its keys, items and expression values (what it reads or writes by key).
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedCall {
    pub operation: &'static str,
    pub tables: Vec<String>,
    /// The index a Query or Scan reads.
    pub index: Option<String>,
    pub values: Vec<String>,
    /// What a Query or Scan asks DynamoDB for.
    pub read: Option<ReadShape>,
}

/// What a Query or Scan asks for, attribute names resolved from their placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadShape {
    pub limit: Option<i32>,
    /// The attributes of its `ProjectionExpression` (`None`: whole items).
    pub projected: Option<Vec<String>>,
    /// The attributes its `FilterExpression` names.
    pub tested: Vec<String>,
}

impl ReadShape {
    fn of(
        limit: Option<i32>,
        projection: Option<&str>,
        filter: Option<&str>,
        names: Option<&std::collections::HashMap<String, String>>,
    ) -> Self {
        let name = |placeholder: &str| {
            names
                .and_then(|n| n.get(placeholder))
                .cloned()
                .unwrap_or_else(|| placeholder.to_owned())
        };
        let placeholders = |text: &str| -> Vec<String> {
            text.split(|c: char| !(c == '#' || c == '_' || c.is_ascii_alphanumeric()))
                .filter(|word| word.starts_with('#'))
                .map(name)
                .collect()
        };
        Self {
            limit,
            projected: projection.map(|p| p.split(',').map(|a| name(a.trim())).collect()),
            tested: filter.map(placeholders).unwrap_or_default(),
        }
    }
}

impl LoggedCall {
    /// Whether the call names table `table` (a full name or, for a table under a test prefix,
    /// its model name) and holds `value` among its keys, items or expression values.
    pub fn touches(&self, table: &str, value: &str) -> bool {
        self.tables
            .iter()
            .any(|t| t == table || t.ends_with(&format!("_{table}")))
            && self.values.iter().any(|v| v == value)
    }
}

/// Records every call a DynamoDB (or DynamoDB Streams) client sends, with its tables and key
/// values, at the SDK boundary (so nothing the server sends is missed, whatever its own metrics
/// say).
#[derive(Debug, Clone, Default)]
pub struct CallLog(Arc<Mutex<Vec<LoggedCall>>>);

impl CallLog {
    /// How many calls so far: a mark for [`since`](Self::since).
    pub fn mark(&self) -> usize {
        self.0.lock().expect("log lock").len()
    }

    /// The calls after `mark`.
    pub fn since(&self, mark: usize) -> Vec<LoggedCall> {
        self.0.lock().expect("log lock")[mark..].to_vec()
    }
}

/// Every string and number in `values`.
fn logged_values<'a>(values: impl IntoIterator<Item = &'a AttributeValue>) -> Vec<String> {
    values
        .into_iter()
        .filter_map(|v| match v {
            AttributeValue::S(s) | AttributeValue::N(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

fn logged_call(context: &BeforeSerializationInterceptorContextRef<'_>) -> LoggedCall {
    use aws_sdk_dynamodb::operation::{
        batch_write_item::BatchWriteItemInput, delete_item::DeleteItemInput,
        put_item::PutItemInput, transact_write_items::TransactWriteItemsInput,
        update_item::UpdateItemInput,
    };
    let input = context.input();
    let one = |operation, table: Option<&str>, values: Vec<String>| LoggedCall {
        operation,
        tables: table.map(str::to_owned).into_iter().collect(),
        index: None,
        values,
        read: None,
    };
    let expression = |values: Option<&std::collections::HashMap<String, AttributeValue>>| {
        logged_values(values.into_iter().flat_map(|m| m.values()))
    };
    if let Some(i) = input.downcast_ref::<GetItemInput>() {
        one(
            "GetItem",
            i.table_name(),
            logged_values(i.key().into_iter().flat_map(|m| m.values())),
        )
    } else if let Some(i) = input.downcast_ref::<BatchGetItemInput>() {
        let items = i.request_items().cloned().unwrap_or_default();
        LoggedCall {
            operation: "BatchGetItem",
            tables: items.keys().cloned().collect(),
            index: None,
            read: None,
            values: logged_values(
                items
                    .values()
                    .flat_map(|k| k.keys())
                    .flat_map(|key| key.values()),
            ),
        }
    } else if let Some(i) = input.downcast_ref::<QueryInput>() {
        LoggedCall {
            index: i.index_name().map(str::to_owned),
            read: Some(ReadShape::of(
                i.limit(),
                i.projection_expression(),
                i.filter_expression(),
                i.expression_attribute_names(),
            )),
            ..one(
                "Query",
                i.table_name(),
                expression(i.expression_attribute_values()),
            )
        }
    } else if let Some(i) = input.downcast_ref::<ScanInput>() {
        LoggedCall {
            index: i.index_name().map(str::to_owned),
            read: Some(ReadShape::of(
                i.limit(),
                i.projection_expression(),
                i.filter_expression(),
                i.expression_attribute_names(),
            )),
            ..one(
                "Scan",
                i.table_name(),
                logged_values(i.exclusive_start_key().into_iter().flat_map(|m| m.values())),
            )
        }
    } else if let Some(i) =
        input.downcast_ref::<aws_sdk_dynamodb::operation::describe_table::DescribeTableInput>()
    {
        one("DescribeTable", i.table_name(), Vec::new())
    } else if let Some(i) = input.downcast_ref::<PutItemInput>() {
        let mut values = logged_values(i.item().into_iter().flat_map(|m| m.values()));
        values.extend(expression(i.expression_attribute_values()));
        one("PutItem", i.table_name(), values)
    } else if let Some(i) = input.downcast_ref::<DeleteItemInput>() {
        let mut values = logged_values(i.key().into_iter().flat_map(|m| m.values()));
        values.extend(expression(i.expression_attribute_values()));
        one("DeleteItem", i.table_name(), values)
    } else if let Some(i) = input.downcast_ref::<UpdateItemInput>() {
        let mut values = logged_values(i.key().into_iter().flat_map(|m| m.values()));
        values.extend(expression(i.expression_attribute_values()));
        one("UpdateItem", i.table_name(), values)
    } else if let Some(i) = input.downcast_ref::<TransactWriteItemsInput>() {
        let mut call = LoggedCall {
            operation: "TransactWriteItems",
            tables: Vec::new(),
            index: None,
            values: Vec::new(),
            read: None,
        };
        for item in i.transact_items() {
            if let Some(put) = item.put() {
                call.tables.push(put.table_name().to_owned());
                call.values.extend(logged_values(put.item().values()));
            }
            if let Some(delete) = item.delete() {
                call.tables.push(delete.table_name().to_owned());
                call.values.extend(logged_values(delete.key().values()));
            }
            if let Some(update) = item.update() {
                call.tables.push(update.table_name().to_owned());
                call.values.extend(logged_values(update.key().values()));
            }
            if let Some(check) = item.condition_check() {
                call.tables.push(check.table_name().to_owned());
                call.values.extend(logged_values(check.key().values()));
            }
        }
        call
    } else if let Some(i) = input.downcast_ref::<BatchWriteItemInput>() {
        let items = i.request_items().cloned().unwrap_or_default();
        let mut values = Vec::new();
        for request in items.values().flatten() {
            if let Some(put) = request.put_request() {
                values.extend(logged_values(put.item().values()));
            }
            if let Some(delete) = request.delete_request() {
                values.extend(logged_values(delete.key().values()));
            }
        }
        LoggedCall {
            operation: "BatchWriteItem",
            tables: items.keys().cloned().collect(),
            index: None,
            values,
            read: None,
        }
    } else if let Some(i) = input.downcast_ref::<DescribeStreamInput>() {
        one(
            "DescribeStream",
            i.stream_arn().and_then(stream_table),
            Vec::new(),
        )
    } else if let Some(i) = input.downcast_ref::<GetShardIteratorInput>() {
        one(
            "GetShardIterator",
            i.stream_arn().and_then(stream_table),
            Vec::new(),
        )
    } else if input.downcast_ref::<GetRecordsInput>().is_some() {
        // Its shard iterator is opaque: `CallLog` gives it the table of the iterator taken last.
        one("GetRecords", None, Vec::new())
    } else {
        one("other", None, Vec::new())
    }
}

/// The table of a stream's ARN (`arn:aws:dynamodb:…:table/<name>/stream/<label>`).
fn stream_table(arn: &str) -> Option<&str> {
    arn.split_once(":table/")?
        .1
        .split_once("/stream/")
        .map(|(table, _)| table)
}

impl Intercept for CallLog {
    fn name(&self) -> &'static str {
        "CallLog"
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let mut call = logged_call(context);
        let mut log = self.0.lock().expect("log lock");
        if call.operation == "GetRecords" {
            call.tables = log
                .iter()
                .rev()
                .find(|c| c.operation == "GetShardIterator")
                .map(|c| c.tables.clone())
                .unwrap_or_default();
        }
        log.push(call);
        Ok(())
    }
}

/// The `(action, resource ARN)` pairs a policy document allows.
pub fn allowed(document: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for statement in document["Statement"].as_array().expect("statements") {
        assert_eq!(statement["Effect"], "Allow");
        let resource = statement["Resource"].as_str().expect("one resource");
        for action in statement["Action"].as_array().expect("actions") {
            out.insert((
                action.as_str().expect("an action").to_owned(),
                resource.to_owned(),
            ));
        }
    }
    out
}

/// The ARN of a table (and index) as a policy for any region and account names it.
fn any_arn(table: &str, index: Option<&str>) -> String {
    let table = format!("arn:aws:dynamodb:*:*:table/{table}");
    match index {
        Some(index) => format!("{table}/index/{index}"),
        None => table,
    }
}

/// The `(action, resource ARN)` pair a DynamoDB `operation` on `table` (and `index`) uses, in any
/// region and account.
pub fn used_pair(operation: &str, table: &str, index: Option<&str>) -> (String, String) {
    let resource = match operation {
        "DescribeStream" | "GetShardIterator" | "GetRecords" => {
            format!("{}/stream/*", any_arn(table, None))
        }
        _ => any_arn(table, index),
    };
    (format!("dynamodb:{operation}"), resource)
}

/// The policy `dynarelay policy` prints for a model and table prefix, in any region and account,
/// as IAM holds calls to it; what it allows is written down ([`PolicyUses`]). Shared by the
/// in-process audit ([`PolicyAudit`]) and the auditing proxy (`FaultProxy::auditing`).
#[derive(Debug, Clone)]
pub struct PolicyCheck {
    allowed: Arc<BTreeSet<(String, String)>>,
    uses: PolicyUses,
}

impl PolicyCheck {
    /// The policy for `model`'s tables under `prefix`, with `DescribeTable` when the server
    /// checks the tables (`check_tables`: `serve` always does).
    pub fn new(model: &Model, prefix: &str, check_tables: bool) -> Self {
        let document = policy(
            model,
            &PolicyTarget {
                prefix: prefix.to_owned(),
                region: "*".to_owned(),
                account: "*".to_owned(),
                check_tables,
                ..PolicyTarget::default()
            },
        );
        Self {
            allowed: Arc::new(allowed(&document)),
            uses: PolicyUses::new(model, prefix),
        }
    }

    /// The first of a call's `(action, ARN)` pairs the policy does not allow, described; when
    /// it allows them all, they are written down as used.
    pub fn refusal(&self, used: &[(String, String)]) -> Option<String> {
        match used.iter().find(|pair| !self.allowed.contains(*pair)) {
            Some((action, resource)) => Some(format!("{action} on {resource}")),
            None => {
                used.iter().for_each(|pair| self.uses.record(pair));
                None
            }
        }
    }
}

/// Holds every call a server's DynamoDB client sends to the policy `dynarelay policy` prints for
/// its model and table prefix, as IAM would: a call the policy does not allow fails before it is
/// sent, and is remembered, so that a test fails even where the server masks the error (every
/// [`ModelApp`](super::ModelApp) serving a model file checks this when it is dropped).
#[derive(Debug, Clone)]
pub struct PolicyAudit {
    check: PolicyCheck,
    refused: Arc<Mutex<Vec<String>>>,
    /// The table of the stream an iterator was taken on last: `GetRecords` names only its
    /// opaque iterator. (Each model the suite serves live follows one table's stream.)
    stream_table: Arc<Mutex<Vec<String>>>,
}

impl PolicyAudit {
    /// The audit of `model`'s tables under `prefix`, one for the test process: every server a
    /// test serves over those tables shares it, and the app owning them checks it when dropped
    /// (see [`audited`](super::audited)).
    pub fn of(model: &'static Model, prefix: &str) -> Self {
        static AUDITS: Mutex<BTreeMap<(usize, String), PolicyAudit>> = Mutex::new(BTreeMap::new());
        let key = (std::ptr::from_ref(model) as usize, prefix.to_owned());
        AUDITS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_insert_with(|| Self::new(model, prefix))
            .clone()
    }

    /// An audit of its own, shared with no server: for the checks that it can refuse a call.
    pub fn new(model: &Model, prefix: &str) -> Self {
        Self {
            check: PolicyCheck::new(model, prefix, true),
            refused: Arc::default(),
            stream_table: Arc::default(),
        }
    }

    /// The calls refused so far, described.
    pub fn refused(&self) -> Vec<String> {
        self.refused.lock().expect("audit lock").clone()
    }
}

impl Intercept for PolicyAudit {
    fn name(&self) -> &'static str {
        "PolicyAudit"
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let mut call = logged_call(context);
        {
            let mut stream_table = self.stream_table.lock().expect("audit lock");
            match call.operation {
                "GetShardIterator" => stream_table.clone_from(&call.tables),
                "GetRecords" => call.tables.clone_from(&stream_table),
                _ => {}
            }
        }
        let used: Vec<_> = call
            .tables
            .iter()
            .map(|table| used_pair(call.operation, table, call.index.as_deref()))
            .collect();
        match self.check.refusal(&used) {
            None => Ok(()),
            Some(refusal) => {
                self.refused
                    .lock()
                    .expect("audit lock")
                    .push(refusal.clone());
                Err(format!("not allowed by the model's policy: {refusal}").into())
            }
        }
    }
}

/// The environment variable naming the directory where the suite's policy audits write the calls
/// each model's policy allowed ([`PolicyUses`]); `scripts/test` sets it for a run of the whole
/// suite, then checks them (`policy::every_example_policy_allows_only_calls_the_suite_made`).
pub const POLICY_USES: &str = "DYNARELAY_TEST_POLICY_USES";

/// The `(action, ARN)` pairs of one model's policy that the calls of its servers used, written
/// where [`POLICY_USES`] says, when it is set: each test process appends, once each, lines of
/// `model path, action, table[/index/name]` (the table without its prefix; tab-separated) to a
/// file of its own. Only models loaded with [`load_model`](super::load_model) from a path in
/// the crate are written.
#[derive(Debug, Clone)]
pub struct PolicyUses {
    model: Option<String>,
    /// The ARNs' text before the table's name without its prefix.
    arn_prefix: String,
}

impl PolicyUses {
    pub fn new(model: &Model, prefix: &str) -> Self {
        Self {
            // The examples and other model files of the crate, not the tests' own.
            model: super::apps::model_path(model)
                .filter(|path| std::path::Path::new(path).is_relative()),
            arn_prefix: any_arn(prefix, None),
        }
    }

    /// Writes down that a call used `(action, ARN)`, an allowed pair.
    pub fn record(&self, (action, resource): &(String, String)) {
        static WRITTEN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
        let (Some(model), Some(dir)) = (&self.model, std::env::var_os(POLICY_USES)) else {
            return;
        };
        let Some(resource) = resource.strip_prefix(&self.arn_prefix) else {
            return;
        };
        let line = format!("{model}\t{action}\t{resource}\n");
        let mut written = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
        if !written.insert(line.clone()) {
            return;
        }
        let path = std::path::Path::new(&dir).join(format!("{}.tsv", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        std::io::Write::write_all(&mut file, line.as_bytes()).expect("writing a policy use");
    }

    /// Every pair written under `dir`, by model path, as `(action, table[/index/name])`.
    pub fn read(dir: &std::path::Path) -> BTreeMap<String, BTreeSet<(String, String)>> {
        let mut uses: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
        for file in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
            for line in text.lines() {
                let mut fields = line.split('\t');
                let (Some(model), Some(action), Some(resource), None) =
                    (fields.next(), fields.next(), fields.next(), fields.next())
                else {
                    panic!("a malformed policy use: {line:?}");
                };
                uses.entry(model.to_owned())
                    .or_default()
                    .insert((action.to_owned(), resource.to_owned()));
            }
        }
        uses
    }
}

/// The DynamoDB calls a Prometheus exposition counts (`dynarelay_dynamodb_calls_total`), by
/// `"{operation} {table}"`, the table without `prefix` (`several` for a call on several
/// tables), with ` {outcome}` appended for outcomes other than `ok`.
pub fn dynamodb_calls(exposition: &str, prefix: &str) -> BTreeMap<String, f64> {
    let mut calls = BTreeMap::new();
    for line in exposition.lines() {
        let Some(labels) = line.strip_prefix("dynarelay_dynamodb_calls_total{") else {
            continue;
        };
        let (labels, value) = labels.rsplit_once("} ").expect("a sample");
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|l| l.strip_prefix(&format!("{name}=\"")))
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or_default()
                .to_owned()
        };
        let table = label("table");
        let mut key = format!(
            "{} {}",
            label("operation"),
            table.strip_prefix(prefix).unwrap_or(&table)
        );
        let outcome = label("outcome");
        if outcome != "ok" {
            key = format!("{key} {outcome}");
        }
        *calls.entry(key).or_insert(0.0) += value.parse::<f64>().expect("a sample value");
    }
    calls
}
