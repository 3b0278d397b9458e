//! The model's tables in DynamoDB: their full names (with `--table-prefix`), creating the missing
//! ones (`tables create`), and holding the model against live tables (`check`, and `serve` at
//! start-up).

use std::{
    ops::Range,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use aws_sdk_dynamodb::{
    Client,
    types::{
        AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
        GlobalSecondaryIndexUpdate, IndexStatus, KeySchemaElement, KeyType as DynamoKeyType,
        LocalSecondaryIndex, Projection as DynamoProjection, ProjectionType, ScalarAttributeType,
        StreamSpecification, StreamViewType, TableDescription, TableStatus,
    },
};

use crate::{
    cursor::{KeyAttr, KeyShape, KeyType},
    model::{Index, Model, Projection, StreamView, Table, TableId, leak_str},
};

/// The stream a table is created with.
fn stream_specification(view: StreamView) -> anyhow::Result<StreamSpecification> {
    let view = match view {
        StreamView::NewAndOldImages => StreamViewType::NewAndOldImages,
        StreamView::NewImage => StreamViewType::NewImage,
        StreamView::OldImage => StreamViewType::OldImage,
        StreamView::KeysOnly => StreamViewType::KeysOnly,
    };
    Ok(StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(view)
        .build()?)
}

/// The full names and key shapes of a model's tables, by [`TableId`]. The default has none: a
/// store over it reads and writes tables by the names its calls give.
///
/// The names are leaked, as the model's are (see [`crate::model`]): they are made once per
/// process, and a read planned for a subscription keeps naming its table for as long as the
/// subscription runs, after the request that started it has ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tables {
    tables: Vec<(&'static str, KeyShape)>,
}

impl Tables {
    /// The model's tables, each named `{prefix}{name}` (the prefix already validated).
    pub fn new(model: &Model, prefix: &str) -> Self {
        Self {
            tables: model
                .tables
                .iter()
                .map(|table| (leak_str(&format!("{prefix}{}", table.name)), table.key))
                .collect(),
        }
    }

    /// The full name of a table.
    pub fn name(&self, table: TableId) -> &'static str {
        self.tables[table].0
    }

    /// The primary key shape of a table.
    pub fn key(&self, table: TableId) -> KeyShape {
        self.tables[table].1
    }

    /// The table with this full name.
    pub fn id_of(&self, name: &str) -> Option<TableId> {
        self.tables.iter().position(|(n, _)| *n == name)
    }

    /// Every full name, in model order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        self.tables.iter().map(|(name, _)| *name)
    }
}

/// What `create_missing` did to one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableOutcome {
    /// The table and all its indexes were there already.
    Existed,
    /// The table was created.
    Created,
    /// The table existed; these global indexes were added.
    AddedIndexes(Vec<String>),
}

/// Creates every missing table and global index of the model, then waits until all are ACTIVE.
/// Safe to run twice, and concurrently with another instance doing the same. A missing local
/// index cannot be added to an existing table (DynamoDB allows them only at creation): that is
/// an error naming it.
pub async fn create_missing(
    client: &Client,
    model: &Model,
    names: &Tables,
    wait_timeout: Duration,
) -> anyhow::Result<Vec<(String, TableOutcome)>> {
    let mut outcomes = Vec::new();
    for (id, table) in model.tables.iter().enumerate() {
        let name = names.name(id);
        let outcome = ensure_table(client, name, table, wait_timeout)
            .await
            .with_context(|| format!("preparing table {name}"))?;
        outcomes.push((name.to_owned(), outcome));
    }
    for (id, table) in model.tables.iter().enumerate() {
        let name = names.name(id);
        wait_active(client, name, &table.indexes, wait_timeout)
            .await
            .with_context(|| format!("waiting for table {name} to become ACTIVE"))?;
    }
    Ok(outcomes)
}

/// A way a live table differs from its declaration in the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The table's full name.
    pub table: String,
    /// What differs, in a sentence.
    pub message: String,
    /// Where the table or index is declared in the model file.
    pub span: Range<usize>,
}

/// Holds the model against the live tables (DescribeTable): every table exists with the declared
/// key schema and key attribute types and the declared stream (enabled, with its view), and every
/// index with its kind, keys and a projection that holds what the model reads. Returns every difference; an error only when DynamoDB cannot be
/// asked.
pub async fn verify(
    client: &Client,
    model: &Model,
    names: &Tables,
) -> anyhow::Result<Vec<Mismatch>> {
    let mut mismatches = Vec::new();
    for (id, table) in model.tables.iter().enumerate() {
        let name = names.name(id);
        let mut report = |message: String, span: &Range<usize>| {
            mismatches.push(Mismatch {
                table: name.to_owned(),
                message,
                span: span.clone(),
            });
        };
        let Some(live) = describe(client, name).await? else {
            report(
                format!("table `{name}` does not exist (create it with `dynarelay tables create`)"),
                &table.span,
            );
            continue;
        };
        if !key_schema_matches(live.key_schema(), table.key) {
            report(
                format!(
                    "table `{name}` has the key {}, but the model declares {}",
                    describe_key(live.key_schema()),
                    shape_text(table.key)
                ),
                &table.span,
            );
        }
        for attr in &table.attributes {
            let live_type = live
                .attribute_definitions()
                .iter()
                .find(|def| def.attribute_name() == attr.name)
                .map(|def| def.attribute_type().as_str().to_owned());
            if let Some(live_type) = live_type
                && live_type != scalar_type(attr.ty).as_str()
            {
                report(
                    format!(
                        "key attribute `{}` of table `{name}` is {live_type}, but the model declares {:?}",
                        attr.name, attr.ty
                    ),
                    &table.span,
                );
            }
        }
        if let Some(declared) = table.stream {
            let live_view = live
                .stream_specification()
                .filter(|s| s.stream_enabled())
                .and_then(StreamSpecification::stream_view_type);
            match live_view {
                None => report(
                    format!(
                        "table `{name}` has no stream, but the model declares `stream = \"{}\"`: \
                         its subscriptions would get no changes (enable it: `aws dynamodb \
                         update-table --table-name {name} --stream-specification \
                         StreamEnabled=true,StreamViewType={}`)",
                        declared.name(),
                        declared.name()
                    ),
                    &table.span,
                ),
                Some(view) if view.as_str() != declared.name() => report(
                    format!(
                        "table `{name}`'s stream holds {}, but the model declares `stream = \"{}\"` \
                         (a stream's view cannot be changed: disable the stream, then enable it \
                         with StreamViewType={})",
                        view.as_str(),
                        declared.name(),
                        declared.name()
                    ),
                    &table.span,
                ),
                Some(_) => {}
            }
        }
        for index in &table.indexes {
            let found = if index.local {
                live.local_secondary_indexes()
                    .iter()
                    .find(|i| i.index_name() == Some(index.name.as_str()))
                    .map(|i| (i.key_schema(), i.projection()))
            } else {
                live.global_secondary_indexes()
                    .iter()
                    .find(|i| i.index_name() == Some(index.name.as_str()))
                    .map(|i| (i.key_schema(), i.projection()))
            };
            let kind = if index.local { "local" } else { "global" };
            let Some((key_schema, projection)) = found else {
                // The same name as the other kind of index: say so, and how to declare it.
                let other = if index.local {
                    live.global_secondary_indexes()
                        .iter()
                        .any(|i| i.index_name() == Some(index.name.as_str()))
                        .then_some("global index: leave out `kind = \"local\"`")
                } else {
                    live.local_secondary_indexes()
                        .iter()
                        .any(|i| i.index_name() == Some(index.name.as_str()))
                        .then_some("local index: declare it with `kind = \"local\"`")
                };
                let message = match other {
                    Some(other) => format!(
                        "table `{name}` has no {kind} index `{}`, but it has a {other}",
                        index.name
                    ),
                    None => format!("table `{name}` has no {kind} index `{}`", index.name),
                };
                report(message, &index.span);
                continue;
            };
            if !key_schema_matches(key_schema, index.key) {
                report(
                    format!(
                        "index `{}` of table `{name}` has the key {}, but the model declares {}",
                        index.name,
                        describe_key(key_schema),
                        shape_text(index.key)
                    ),
                    &index.span,
                );
            }
            // Every index holds the table's keys and its own, whatever it projects.
            let keys: Vec<&str> = table
                .key
                .iter()
                .chain(index.key.iter())
                .map(|a| a.name)
                .chain(key_schema.iter().map(KeySchemaElement::attribute_name))
                .collect();
            if let Some(missing) = projection_gap(&index.projection, projection, &keys) {
                report(
                    format!(
                        "index `{}` of table `{name}` does not project {missing}, which the model reads",
                        index.name
                    ),
                    &index.span,
                );
            }
        }
    }
    Ok(mismatches)
}

/// What the model's projection needs that the live one lacks, if anything.
/// What the model's `wanted` projection of an index names that the `live` one does not
/// project, leaving out `keys` (which every index holds); `None` when nothing.
fn projection_gap(
    wanted: &Projection,
    live: Option<&DynamoProjection>,
    keys: &[&str],
) -> Option<String> {
    let live_type = live.and_then(|p| p.projection_type());
    let live_included = live.map(|p| p.non_key_attributes()).unwrap_or_default();
    match (wanted, live_type) {
        (_, Some(ProjectionType::All)) | (Projection::KeysOnly, _) => None,
        (Projection::All, _) => Some("all attributes".to_owned()),
        (Projection::Include(attrs), _) => {
            let missing: Vec<&str> = attrs
                .iter()
                .filter(|a| !live_included.contains(a) && !keys.contains(&a.as_str()))
                .map(String::as_str)
                .collect();
            (!missing.is_empty()).then(|| format!("`{}`", missing.join("`, `")))
        }
    }
}

fn describe_key(schema: &[KeySchemaElement]) -> String {
    let names: Vec<&str> = schema.iter().map(|e| e.attribute_name()).collect();
    format!("({})", names.join(", "))
}

fn shape_text(shape: KeyShape) -> String {
    let names: Vec<&str> = shape.iter().map(|a| a.name).collect();
    format!("({})", names.join(", "))
}

async fn ensure_table(
    client: &Client,
    name: &str,
    table: &Table,
    wait_timeout: Duration,
) -> anyhow::Result<TableOutcome> {
    let Some(existing) = describe(client, name).await? else {
        return create(client, name, table).await;
    };
    if !key_schema_matches(existing.key_schema(), table.key) {
        bail!(
            "the existing table has the key {}; the model declares {}",
            describe_key(existing.key_schema()),
            shape_text(table.key)
        );
    }
    let mut added = Vec::new();
    for index in &table.indexes {
        if index.local {
            let present = existing
                .local_secondary_indexes()
                .iter()
                .any(|lsi| lsi.index_name() == Some(index.name.as_str()));
            if !present {
                bail!(
                    "local index {} is missing, and DynamoDB adds local indexes only when it \
                     creates a table",
                    index.name
                );
            }
            continue;
        }
        let present = existing
            .global_secondary_indexes()
            .iter()
            .find(|gsi| gsi.index_name() == Some(index.name.as_str()));
        match present {
            Some(gsi) => {
                if !key_schema_matches(gsi.key_schema(), index.key) {
                    bail!("index {} has an unexpected key schema", index.name);
                }
            }
            None => {
                // DynamoDB adds one index per UpdateTable call; wait between them.
                wait_active(client, name, &[], wait_timeout).await?;
                client
                    .update_table()
                    .table_name(name)
                    .set_attribute_definitions(Some(attribute_definitions(table)))
                    .global_secondary_index_updates(
                        GlobalSecondaryIndexUpdate::builder()
                            .create(
                                CreateGlobalSecondaryIndexAction::builder()
                                    .index_name(&index.name)
                                    .set_key_schema(Some(key_schema(index.key)))
                                    .projection(projection(table, index))
                                    .build()?,
                            )
                            .build(),
                    )
                    .send()
                    .await
                    .map_err(aws_sdk_dynamodb::Error::from)
                    .with_context(|| format!("adding index {}", index.name))?;
                added.push(index.name.clone());
            }
        }
    }
    Ok(if added.is_empty() {
        TableOutcome::Existed
    } else {
        TableOutcome::AddedIndexes(added)
    })
}

async fn create(client: &Client, name: &str, table: &Table) -> anyhow::Result<TableOutcome> {
    let globals = table
        .indexes
        .iter()
        .filter(|index| !index.local)
        .map(|index| {
            GlobalSecondaryIndex::builder()
                .index_name(&index.name)
                .set_key_schema(Some(key_schema(index.key)))
                .projection(projection(table, index))
                .build()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let locals = table
        .indexes
        .iter()
        .filter(|index| index.local)
        .map(|index| {
            LocalSecondaryIndex::builder()
                .index_name(&index.name)
                .set_key_schema(Some(key_schema(index.key)))
                .projection(projection(table, index))
                .build()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let result = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_key_schema(Some(key_schema(table.key)))
        .set_attribute_definitions(Some(attribute_definitions(table)))
        .set_global_secondary_indexes((!globals.is_empty()).then_some(globals))
        .set_local_secondary_indexes((!locals.is_empty()).then_some(locals))
        .set_stream_specification(table.stream.map(stream_specification).transpose()?)
        .send()
        .await;
    match result {
        Ok(_) => Ok(TableOutcome::Created),
        // Another process created it between our DescribeTable and CreateTable.
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_resource_in_use_exception()) =>
        {
            Ok(TableOutcome::Existed)
        }
        Err(err) => Err(aws_sdk_dynamodb::Error::from(err)).context("CreateTable"),
    }
}

async fn describe(client: &Client, name: &str) -> anyhow::Result<Option<TableDescription>> {
    match client.describe_table().table_name(name).send().await {
        Ok(out) => Ok(out.table),
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_resource_not_found_exception()) =>
        {
            Ok(None)
        }
        Err(err) => Err(aws_sdk_dynamodb::Error::from(err)).context("DescribeTable"),
    }
}

/// Waits until the table and all its indexes are ACTIVE, and every global index in `required`
/// exists.
async fn wait_active(
    client: &Client,
    name: &str,
    required: &[Index],
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let table = describe(client, name).await?;
        let ready = table.as_ref().is_some_and(|t| {
            t.table_status() == Some(&TableStatus::Active)
                && t.global_secondary_indexes()
                    .iter()
                    .all(|gsi| gsi.index_status() == Some(&IndexStatus::Active))
                && required.iter().filter(|index| !index.local).all(|index| {
                    t.global_secondary_indexes()
                        .iter()
                        .any(|gsi| gsi.index_name() == Some(index.name.as_str()))
                })
        });
        if ready {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("still not ACTIVE after {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn key_schema_matches(actual: &[KeySchemaElement], expected: KeyShape) -> bool {
    actual.len() == expected.len()
        && actual
            .iter()
            .zip(expected)
            .enumerate()
            .all(|(i, (element, attr))| {
                element.attribute_name() == attr.name && *element.key_type() == key_role(i)
            })
}

fn key_role(position: usize) -> DynamoKeyType {
    if position == 0 {
        DynamoKeyType::Hash
    } else {
        DynamoKeyType::Range
    }
}

fn key_schema(shape: KeyShape) -> Vec<KeySchemaElement> {
    shape
        .iter()
        .enumerate()
        .filter_map(|(i, attr)| {
            KeySchemaElement::builder()
                .attribute_name(attr.name)
                .key_type(key_role(i))
                .build()
                .ok()
        })
        .collect()
}

/// Every attribute in the table's or its indexes' key schemas, once.
fn attribute_definitions(table: &Table) -> Vec<AttributeDefinition> {
    table
        .attributes
        .iter()
        .filter_map(|attr: &KeyAttr| {
            AttributeDefinition::builder()
                .attribute_name(attr.name)
                .attribute_type(scalar_type(attr.ty))
                .build()
                .ok()
        })
        .collect()
}

fn scalar_type(ty: KeyType) -> ScalarAttributeType {
    match ty {
        KeyType::S => ScalarAttributeType::S,
        KeyType::N => ScalarAttributeType::N,
        KeyType::B => ScalarAttributeType::B,
    }
}

/// `index`'s projection as DynamoDB declares it: an INCLUDE list names non-key attributes only
/// (every index holds the table's keys and its own, listed in the model or not).
fn projection(table: &Table, index: &Index) -> DynamoProjection {
    match &index.projection {
        Projection::All => DynamoProjection::builder()
            .projection_type(ProjectionType::All)
            .build(),
        Projection::KeysOnly => DynamoProjection::builder()
            .projection_type(ProjectionType::KeysOnly)
            .build(),
        Projection::Include(attrs) => {
            let key = |attribute: &str| {
                table
                    .key
                    .iter()
                    .chain(index.key.iter())
                    .any(|a| a.name == attribute)
            };
            let included: Vec<String> = attrs.iter().filter(|a| !key(a)).cloned().collect();
            if included.is_empty() {
                return DynamoProjection::builder()
                    .projection_type(ProjectionType::KeysOnly)
                    .build();
            }
            DynamoProjection::builder()
                .projection_type(ProjectionType::Include)
                .set_non_key_attributes(Some(included))
                .build()
        }
    }
}
