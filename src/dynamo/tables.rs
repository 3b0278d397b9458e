//! The three tables, their key schemas and indexes, and `tables create`.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use aws_sdk_dynamodb::{
    Client,
    types::{
        AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
        GlobalSecondaryIndexUpdate, IndexStatus, KeySchemaElement, KeyType as DynamoKeyType,
        Projection, ProjectionType, ScalarAttributeType, TableDescription, TableStatus,
    },
};

use crate::cursor::{KeyAttr, KeyShape, KeyType};

const fn attr(name: &'static str, ty: KeyType) -> KeyAttr {
    KeyAttr { name, ty }
}

/// `Users` primary key.
pub const USER_KEY: KeyShape = &[attr("userId", KeyType::S)];
/// `Products` primary key.
pub const PRODUCT_KEY: KeyShape = &[attr("sku", KeyType::S)];
/// `Purchases` primary key: `userId` (HASH) + `purchasedAt` (RANGE).
pub const PURCHASE_KEY: KeyShape = &[attr("userId", KeyType::S), attr("purchasedAt", KeyType::N)];
/// The `Products` index on `category` + `price`.
pub const BY_CATEGORY: &str = "ByCategory";
/// The `Purchases` index on `sku` + `purchasedAt`.
pub const BY_SKU: &str = "BySku";

/// `Products.ByCategory` start key: the index keys, then the table key.
pub const BY_CATEGORY_START_KEY: KeyShape = &[
    attr("category", KeyType::S),
    attr("price", KeyType::N),
    attr("sku", KeyType::S),
];
/// `Purchases.BySku` start key: the index keys, then the table keys not already among them.
pub const BY_SKU_START_KEY: KeyShape = &[
    attr("sku", KeyType::S),
    attr("purchasedAt", KeyType::N),
    attr("userId", KeyType::S),
];

/// A table's key schema and global secondary indexes.
#[derive(Debug)]
pub struct TableSpec {
    /// The name before the prefix.
    pub base_name: &'static str,
    /// Partition key, then sort key if any.
    pub key: KeyShape,
    /// Global secondary indexes (projection ALL).
    pub indexes: &'static [IndexSpec],
}

/// A global secondary index.
#[derive(Debug)]
pub struct IndexSpec {
    /// The index name.
    pub name: &'static str,
    /// Partition key, then sort key.
    pub key: KeyShape,
}

/// The tables dynarelay serves.
pub const SPECS: [&TableSpec; 3] = [&USERS, &PRODUCTS, &PURCHASES];

/// `Users`: `userId` (S).
pub const USERS: TableSpec = TableSpec {
    base_name: "Users",
    key: USER_KEY,
    indexes: &[],
};
/// `Products`: `sku` (S), with `ByCategory` on `category` + `price`.
pub const PRODUCTS: TableSpec = TableSpec {
    base_name: "Products",
    key: PRODUCT_KEY,
    indexes: &[IndexSpec {
        name: BY_CATEGORY,
        key: BY_CATEGORY_START_KEY.split_at(2).0,
    }],
};
/// `Purchases`: `userId` (S) + `purchasedAt` (N), with `BySku` on `sku` + `purchasedAt`.
pub const PURCHASES: TableSpec = TableSpec {
    base_name: "Purchases",
    key: PURCHASE_KEY,
    indexes: &[IndexSpec {
        name: BY_SKU,
        key: BY_SKU_START_KEY.split_at(2).0,
    }],
};

/// The full table names, each being the configured prefix plus the base name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tables {
    /// `{prefix}Users`.
    pub users: String,
    /// `{prefix}Products`.
    pub products: String,
    /// `{prefix}Purchases`.
    pub purchases: String,
}

impl Tables {
    /// The names for `prefix` (already validated by the configuration).
    pub fn with_prefix(prefix: &str) -> Self {
        Self {
            users: format!("{prefix}{}", USERS.base_name),
            products: format!("{prefix}{}", PRODUCTS.base_name),
            purchases: format!("{prefix}{}", PURCHASES.base_name),
        }
    }

    /// Each spec with its full name.
    pub fn named_specs(&self) -> [(&str, &'static TableSpec); 3] {
        [
            (&self.users, &USERS),
            (&self.products, &PRODUCTS),
            (&self.purchases, &PURCHASES),
        ]
    }
}

/// The three tables, by role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableKind {
    /// `Users`.
    Users,
    /// `Products`.
    Products,
    /// `Purchases`.
    Purchases,
}

impl TableKind {
    /// The table's primary key shape.
    pub fn key_shape(self) -> KeyShape {
        match self {
            TableKind::Users => USER_KEY,
            TableKind::Products => PRODUCT_KEY,
            TableKind::Purchases => PURCHASE_KEY,
        }
    }
}

impl Tables {
    /// The full name of a table.
    pub fn name(&self, kind: TableKind) -> &str {
        match kind {
            TableKind::Users => &self.users,
            TableKind::Products => &self.products,
            TableKind::Purchases => &self.purchases,
        }
    }

    /// Which table a full name belongs to.
    pub fn kind(&self, name: &str) -> Option<TableKind> {
        [TableKind::Users, TableKind::Products, TableKind::Purchases]
            .into_iter()
            .find(|kind| self.name(*kind) == name)
    }
}

/// What `create_missing` did to one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableOutcome {
    /// The table and all its indexes were there already.
    Existed,
    /// The table was created.
    Created,
    /// The table existed; these indexes were added.
    AddedIndexes(Vec<&'static str>),
}

/// Creates every missing table and index, then waits until all are ACTIVE. Safe to run twice,
/// and safe to run concurrently with another instance doing the same.
pub async fn create_missing(
    client: &Client,
    tables: &Tables,
    wait_timeout: Duration,
) -> anyhow::Result<Vec<(String, TableOutcome)>> {
    let mut outcomes = Vec::new();
    for (name, spec) in tables.named_specs() {
        let outcome = ensure_table(client, name, spec, wait_timeout)
            .await
            .with_context(|| format!("preparing table {name}"))?;
        outcomes.push((name.to_owned(), outcome));
    }
    for (name, spec) in tables.named_specs() {
        wait_active(client, name, spec.indexes, wait_timeout)
            .await
            .with_context(|| format!("waiting for table {name} to become ACTIVE"))?;
    }
    Ok(outcomes)
}

async fn ensure_table(
    client: &Client,
    name: &str,
    spec: &TableSpec,
    wait_timeout: Duration,
) -> anyhow::Result<TableOutcome> {
    let Some(existing) = describe(client, name).await? else {
        return create(client, name, spec).await;
    };
    check_key_schema(&existing, spec)?;
    let mut added = Vec::new();
    for index in spec.indexes {
        let present = existing
            .global_secondary_indexes()
            .iter()
            .find(|gsi| gsi.index_name() == Some(index.name));
        match present {
            Some(gsi) => {
                if !key_schema_matches(gsi.key_schema(), index.key) {
                    bail!(
                        "index {} of table {name} has an unexpected key schema",
                        index.name
                    );
                }
            }
            None => {
                // DynamoDB adds one index per UpdateTable call; wait between them.
                wait_active(client, name, &[], wait_timeout).await?;
                client
                    .update_table()
                    .table_name(name)
                    .set_attribute_definitions(Some(attribute_definitions(spec)))
                    .global_secondary_index_updates(
                        GlobalSecondaryIndexUpdate::builder()
                            .create(
                                CreateGlobalSecondaryIndexAction::builder()
                                    .index_name(index.name)
                                    .set_key_schema(Some(key_schema(index.key)))
                                    .projection(projection_all())
                                    .build()?,
                            )
                            .build(),
                    )
                    .send()
                    .await
                    .map_err(aws_sdk_dynamodb::Error::from)
                    .with_context(|| format!("adding index {}", index.name))?;
                added.push(index.name);
            }
        }
    }
    Ok(if added.is_empty() {
        TableOutcome::Existed
    } else {
        TableOutcome::AddedIndexes(added)
    })
}

async fn create(client: &Client, name: &str, spec: &TableSpec) -> anyhow::Result<TableOutcome> {
    let indexes = spec
        .indexes
        .iter()
        .map(|index| {
            GlobalSecondaryIndex::builder()
                .index_name(index.name)
                .set_key_schema(Some(key_schema(index.key)))
                .projection(projection_all())
                .build()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let result = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_key_schema(Some(key_schema(spec.key)))
        .set_attribute_definitions(Some(attribute_definitions(spec)))
        .set_global_secondary_indexes((!indexes.is_empty()).then_some(indexes))
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

/// Waits until the table and all its indexes are ACTIVE, and every index in `required` exists.
async fn wait_active(
    client: &Client,
    name: &str,
    required: &[IndexSpec],
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
                && required.iter().all(|index| {
                    t.global_secondary_indexes()
                        .iter()
                        .any(|gsi| gsi.index_name() == Some(index.name))
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

fn check_key_schema(table: &TableDescription, spec: &TableSpec) -> anyhow::Result<()> {
    if !key_schema_matches(table.key_schema(), spec.key) {
        bail!(
            "the existing table has an unexpected key schema; expected {:?}",
            spec.key.iter().map(|a| a.name).collect::<Vec<_>>()
        );
    }
    let types_match = spec.key.iter().all(|attr| {
        table.attribute_definitions().iter().any(|def| {
            def.attribute_name() == attr.name && *def.attribute_type() == scalar_type(attr.ty)
        })
    });
    if !types_match {
        bail!("the existing table's key attributes have unexpected types");
    }
    Ok(())
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
        .map(|(i, attr)| {
            KeySchemaElement::builder()
                .attribute_name(attr.name)
                .key_type(key_role(i))
                .build()
                .expect("name and key type are set")
        })
        .collect()
}

/// Every attribute used in the table's or its indexes' key schemas, once.
fn attribute_definitions(spec: &TableSpec) -> Vec<AttributeDefinition> {
    let mut attrs: Vec<KeyAttr> = Vec::new();
    for attr in spec
        .key
        .iter()
        .chain(spec.indexes.iter().flat_map(|i| i.key.iter()))
    {
        if !attrs.iter().any(|a| a.name == attr.name) {
            attrs.push(*attr);
        }
    }
    attrs
        .into_iter()
        .map(|attr| {
            AttributeDefinition::builder()
                .attribute_name(attr.name)
                .attribute_type(scalar_type(attr.ty))
                .build()
                .expect("name and type are set")
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

fn projection_all() -> Projection {
    Projection::builder()
        .projection_type(ProjectionType::All)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_start_keys_hold_the_index_keys_then_the_table_keys() {
        assert_eq!(PRODUCTS.indexes[0].key, &BY_CATEGORY_START_KEY[..2]);
        assert_eq!(PURCHASES.indexes[0].key, &BY_SKU_START_KEY[..2]);
        for (start, table) in [
            (BY_CATEGORY_START_KEY, PRODUCT_KEY),
            (BY_SKU_START_KEY, PURCHASE_KEY),
        ] {
            for attr in table {
                assert!(
                    start.contains(attr),
                    "{} missing from an index start key",
                    attr.name
                );
            }
        }
    }

    #[test]
    fn prefixes_apply_to_every_table() {
        let tables = Tables::with_prefix("t42_");
        assert_eq!(tables.purchases, "t42_Purchases");
        assert_eq!(tables.users, "t42_Users");
        assert_eq!(tables.products, "t42_Products");
    }

    #[test]
    fn attribute_definitions_cover_index_keys_once() {
        let names: Vec<_> = attribute_definitions(&PURCHASES)
            .iter()
            .map(|d| d.attribute_name().to_owned())
            .collect();
        assert_eq!(names, ["userId", "purchasedAt", "sku"]);
    }
}
