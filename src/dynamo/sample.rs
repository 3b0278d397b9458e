//! Live tables as they are, for `dynarelay init`: which tables the credentials can list, each
//! one's keys, indexes, time-to-live attribute and stream, and a bounded sample of its items.
//! Only reads: ListTables, DescribeTable, DescribeTimeToLive and Scan. Nothing here knows about
//! the model file or GraphQL.

use aws_sdk_dynamodb::{
    Client,
    error::ProvideErrorMetadata,
    types::{
        KeySchemaElement, KeyType as DynamoKeyType, Projection as DynamoProjection, ProjectionType,
        ReturnConsumedCapacity, ScalarAttributeType, TableDescription, TableStatus,
        TimeToLiveStatus,
    },
};

use super::Item;

/// A key attribute's type: `S`, `N` or `B`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// A string.
    S,
    /// A number.
    N,
    /// Binary.
    B,
}

impl KeyKind {
    /// Its name in a model file and in DynamoDB.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyKind::S => "S",
            KeyKind::N => "N",
            KeyKind::B => "B",
        }
    }
}

/// A key attribute: its name and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveKey {
    /// The attribute.
    pub name: String,
    /// Its type.
    pub kind: KeyKind,
}

/// Which attributes an index holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveProjection {
    /// Every attribute.
    All,
    /// The table's and the index's keys.
    KeysOnly,
    /// The keys and these.
    Include(Vec<String>),
}

/// A secondary index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveIndex {
    /// Its name.
    pub name: String,
    /// Local (same partition key as the table) rather than global.
    pub local: bool,
    /// Its partition key.
    pub partition: LiveKey,
    /// Its sort key, if it has one.
    pub sort: Option<LiveKey>,
    /// What it holds.
    pub projection: LiveProjection,
}

/// A table as DescribeTable (and DescribeTimeToLive) tell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTable {
    /// Its full name.
    pub name: String,
    /// Its partition key.
    pub partition: LiveKey,
    /// Its sort key, if it has one.
    pub sort: Option<LiveKey>,
    /// Its secondary indexes, global then local, each in DynamoDB's order.
    pub indexes: Vec<LiveIndex>,
    /// The attribute DynamoDB expires items by, when time to live is on.
    pub ttl_attribute: Option<String>,
    /// The stream's view type (`NEW_AND_OLD_IMAGES`, ...), when a stream is on.
    pub stream: Option<String>,
    /// DynamoDB's estimate of its item count (updated about every six hours).
    pub item_count: Option<i64>,
}

/// Why a table could not be read; the other tables are still read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableFailure {
    /// The table.
    pub table: String,
    /// What went wrong, for people: DynamoDB's error code and what it means here.
    pub reason: String,
    /// Whether it may pass by itself (throttling, DynamoDB not answering) rather than being
    /// about this table (access denied, no such table, a table being deleted).
    pub transient: bool,
}

/// Every table name the credentials can list that starts with `prefix`, in DynamoDB's order
/// (by name). Pages through ListTables.
pub async fn list_tables(client: &Client, prefix: &str) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::new();
    let mut start: Option<String> = None;
    loop {
        let out = client
            .list_tables()
            .set_exclusive_start_table_name(start.take())
            .send()
            .await
            .map_err(|err| anyhow::anyhow!(reason("ListTables", err.code())))?;
        names.extend(
            out.table_names()
                .iter()
                .filter(|name| name.starts_with(prefix))
                .cloned(),
        );
        match out.last_evaluated_table_name {
            Some(last) => start = Some(last),
            None => return Ok(names),
        }
    }
}

/// DescribeTable and DescribeTimeToLive of one table. A table that is missing, still being
/// created or being deleted, or that the credentials may not describe, is a [`TableFailure`].
pub async fn describe(client: &Client, name: &str) -> Result<LiveTable, TableFailure> {
    let fail = |reason: String| TableFailure {
        table: name.to_owned(),
        reason,
        transient: false,
    };
    let description = client
        .describe_table()
        .table_name(name)
        .send()
        .await
        .map_err(|err| failure(name, "DescribeTable", err.code()))?
        .table
        .ok_or_else(|| fail("DescribeTable answered without the table".to_owned()))?;
    match description.table_status() {
        Some(TableStatus::Active | TableStatus::Updating) | None => {}
        Some(status) => {
            return Err(fail(format!(
                "the table is {} (only ACTIVE tables are sampled)",
                status.as_str()
            )));
        }
    }
    let mut table = from_description(name, &description).map_err(fail)?;
    // Time to live is optional to read: without permission for it, the rest still stands.
    if let Ok(ttl) = client.describe_time_to_live().table_name(name).send().await
        && let Some(ttl) = ttl.time_to_live_description
        && matches!(
            ttl.time_to_live_status,
            Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
        )
    {
        table.ttl_attribute = ttl.attribute_name;
    }
    Ok(table)
}

/// The failure of a call on `table`, named by its error code (never DynamoDB's message text).
fn failure(table: &str, operation: &str, code: Option<&str>) -> TableFailure {
    let transient = matches!(
        code,
        None | Some(
            "ProvisionedThroughputExceededException"
                | "ThrottlingException"
                | "RequestLimitExceeded"
                | "InternalServerError"
                | "ServiceUnavailable"
        )
    );
    TableFailure {
        table: table.to_owned(),
        reason: reason(operation, code),
        transient,
    }
}

fn reason(operation: &str, code: Option<&str>) -> String {
    match code {
        Some("ResourceNotFoundException") => format!("{operation}: no such table"),
        Some("AccessDeniedException") => {
            format!("{operation}: access denied (the credentials may not read this table)")
        }
        Some(
            "ProvisionedThroughputExceededException"
            | "ThrottlingException"
            | "RequestLimitExceeded",
        ) => format!("{operation}: throttled by DynamoDB, still after the SDK's retries"),
        Some(code) => format!("{operation} failed ({code})"),
        None => format!("{operation} failed: DynamoDB could not be reached"),
    }
}

fn from_description(name: &str, t: &TableDescription) -> Result<LiveTable, String> {
    let types: Vec<(&str, KeyKind)> = t
        .attribute_definitions()
        .iter()
        .map(|d| {
            let kind = match d.attribute_type() {
                ScalarAttributeType::N => KeyKind::N,
                ScalarAttributeType::B => KeyKind::B,
                _ => KeyKind::S,
            };
            (d.attribute_name(), kind)
        })
        .collect();
    let key = |schema: &[KeySchemaElement], role: DynamoKeyType| -> Option<LiveKey> {
        let element = schema.iter().find(|k| *k.key_type() == role)?;
        let name = element.attribute_name();
        let kind = types.iter().find(|(n, _)| *n == name)?.1;
        Some(LiveKey {
            name: name.to_owned(),
            kind,
        })
    };
    let partition = key(t.key_schema(), DynamoKeyType::Hash)
        .ok_or_else(|| "DescribeTable gave no partition key".to_owned())?;
    let sort = key(t.key_schema(), DynamoKeyType::Range);
    let projection = |p: Option<&DynamoProjection>| match p.and_then(|p| p.projection_type()) {
        Some(ProjectionType::KeysOnly) => LiveProjection::KeysOnly,
        Some(ProjectionType::Include) => LiveProjection::Include(
            p.map(|p| p.non_key_attributes().to_vec())
                .unwrap_or_default(),
        ),
        _ => LiveProjection::All,
    };
    let mut indexes = Vec::new();
    for gsi in t.global_secondary_indexes() {
        let Some(partition) = key(gsi.key_schema(), DynamoKeyType::Hash) else {
            continue;
        };
        indexes.push(LiveIndex {
            name: gsi.index_name().unwrap_or_default().to_owned(),
            local: false,
            partition,
            sort: key(gsi.key_schema(), DynamoKeyType::Range),
            projection: projection(gsi.projection()),
        });
    }
    for lsi in t.local_secondary_indexes() {
        let Some(sort) = key(lsi.key_schema(), DynamoKeyType::Range) else {
            continue;
        };
        indexes.push(LiveIndex {
            name: lsi.index_name().unwrap_or_default().to_owned(),
            local: true,
            partition: partition.clone(),
            sort: Some(sort),
            projection: projection(lsi.projection()),
        });
    }
    Ok(LiveTable {
        name: name.to_owned(),
        partition,
        sort,
        indexes,
        ttl_attribute: None,
        stream: t
            .stream_specification()
            .filter(|s| s.stream_enabled())
            .and_then(|s| s.stream_view_type())
            .map(|v| v.as_str().to_owned()),
        item_count: t.item_count(),
    })
}

/// A bounded sample of a table's items.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// The items read, at most the number asked for.
    pub items: Vec<Item>,
    /// Whether they are every item of the table: each segment was read to its end.
    pub complete: bool,
    /// Scan calls made.
    pub calls: usize,
    /// Read capacity units they consumed, as DynamoDB reported them.
    pub capacity: f64,
}

/// Items read per Scan call while sampling.
const SCAN_PAGE: usize = 100;
/// The most segments a sample is spread over.
const MAX_SEGMENTS: usize = 8;

/// Reads at most `limit` items of `table` with Scans: the table is cut into up to eight
/// parallel-scan segments (one per 100 items wanted) read one after the other, each giving its
/// share, so that a sample reaches across the key space rather than the first partitions only;
/// segments that held more than their share are read further while others came up short.
/// However large the table, that is one call per 100 items wanted, plus at most one per segment
/// and pass, with at most one pass per segment (more only when DynamoDB's 1 MB cap cuts a page
/// short: items over 10 KB). `progress` is told the count
/// of items read after each call. Scans use eventually consistent reads (half the capacity of
/// strongly consistent ones).
pub async fn sample(
    client: &Client,
    table: &str,
    limit: usize,
    mut progress: impl FnMut(usize),
) -> Result<Sample, TableFailure> {
    let mut out = Sample::default();
    if limit == 0 {
        return Ok(out);
    }
    let segments = limit.div_ceil(SCAN_PAGE).clamp(1, MAX_SEGMENTS);
    // Where each segment stands: the key to go on from, and whether it has ended.
    let mut state: Vec<(Option<Item>, bool)> = vec![(None, false); segments];
    // Passes over the segments not yet ended, each asked for its share of what is still
    // wanted: a segment holding fewer items leaves the rest to the others, and a segment
    // holding more (one large partition) is read further on the next pass.
    loop {
        let open: Vec<usize> = (0..segments).filter(|&s| !state[s].1).collect();
        let before = out.items.len();
        if open.is_empty() || before >= limit {
            break;
        }
        for (k, &segment) in open.iter().enumerate() {
            let remaining = limit - out.items.len();
            if remaining == 0 {
                break;
            }
            let wanted = remaining.div_ceil(open.len() - k);
            let mut got = 0;
            while got < wanted {
                let page = (wanted - got).min(SCAN_PAGE);
                let response = client
                    .scan()
                    .table_name(table)
                    .segment(i32::try_from(segment).unwrap_or(0))
                    .total_segments(i32::try_from(segments).unwrap_or(1))
                    .limit(i32::try_from(page).unwrap_or(1))
                    .set_exclusive_start_key(state[segment].0.take())
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(|err| failure(table, "Scan", err.code()))?;
                out.calls += 1;
                out.capacity += response
                    .consumed_capacity()
                    .and_then(|c| c.capacity_units())
                    .unwrap_or(0.0);
                let items = response.items.unwrap_or_default();
                got += items.len();
                out.items.extend(items);
                out.items.truncate(limit);
                progress(out.items.len());
                match response.last_evaluated_key {
                    Some(key) if !key.is_empty() => state[segment].0 = Some(key),
                    _ => {
                        state[segment].1 = true;
                        break;
                    }
                }
            }
        }
        if out.items.len() == before {
            break;
        }
    }
    out.complete = state.iter().all(|(_, ended)| *ended);
    Ok(out)
}
