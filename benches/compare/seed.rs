//! The tables the bench reads: the shop's long and sparse users with their purchases, and the
//! single-table example's customer shaped like the long user.

use anyhow::Context;
use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::{Item, Store};

use super::{BASE_MS, CUSTOMER, LONG_USER, SPARSE_USER};

const LONG_PURCHASES: i64 = 20_100;
const SPARSE_PURCHASES: i64 = 5_000;
/// One purchase in this many of the sparse user's is `REFUNDED`: 2%.
const SPARSE_EVERY: i64 = 50;

/// The customer's saved addresses, by label; they come first in `activity`.
const ADDRESSES: [&str; 3] = ["Home", "Parents", "Work"];

/// The full names of the shop tables the bench reads directly.
#[derive(Debug, Clone)]
pub(super) struct ShopNames {
    pub(super) users: String,
    pub(super) purchases: String,
}

impl ShopNames {
    pub(super) fn with_prefix(prefix: &str) -> Self {
        Self {
            users: format!("{prefix}Users"),
            purchases: format!("{prefix}Purchases"),
        }
    }
}

pub(super) async fn seed(store: &Store, names: &ShopNames) -> anyhow::Result<()> {
    let user = |id: &str| {
        Item::from([
            ("userId".to_owned(), AttributeValue::S(id.to_owned())),
            ("name".to_owned(), AttributeValue::S(format!("User {id}"))),
            (
                "email".to_owned(),
                AttributeValue::S(format!("{id}@example.com")),
            ),
            (
                "createdAt".to_owned(),
                AttributeValue::N(BASE_MS.to_string()),
            ),
        ])
    };
    store
        .put_items(&names.users, vec![user(LONG_USER), user(SPARSE_USER)])
        .await?;
    let purchase = |id: &str, i: i64, status: &str| {
        Item::from([
            ("userId".to_owned(), AttributeValue::S(id.to_owned())),
            (
                "purchasedAt".to_owned(),
                AttributeValue::N((BASE_MS + i * 1000).to_string()),
            ),
            ("sku".to_owned(), AttributeValue::S("SKU-00001".to_owned())),
            ("quantity".to_owned(), AttributeValue::N("1".to_owned())),
            (
                "amount".to_owned(),
                AttributeValue::N(format!("{}.99", i % 500)),
            ),
            ("status".to_owned(), AttributeValue::S(status.to_owned())),
        ])
    };
    let mut items: Vec<Item> = (0..LONG_PURCHASES)
        .map(|i| purchase(LONG_USER, i, "PAID"))
        .collect();
    items.extend((0..SPARSE_PURCHASES).map(|i| {
        let status = if i % SPARSE_EVERY == 0 {
            "REFUNDED"
        } else {
            "PAID"
        };
        purchase(SPARSE_USER, i, status)
    }));
    // Four writers at once.
    let table = names.purchases.clone();
    let mut writers = tokio::task::JoinSet::new();
    let chunk = items.len().div_ceil(4);
    while !items.is_empty() {
        let rest = items.split_off(items.len().saturating_sub(chunk));
        let (store, table) = (store.clone(), table.clone());
        writers.spawn(async move { store.put_items(&table, rest).await });
    }
    while let Some(done) = writers.join_next().await {
        done??;
    }
    Ok(())
}

/// Seeds the single-table example's `table` with [`CUSTOMER`] shaped like the shop's long user:
/// the profile, [`ADDRESSES`], and as many orders as the long user has purchases, one a second
/// from [`BASE_MS`] with the same amounts. Every item is written raw, with each key attribute
/// the model's templates give it (facets hold no separator, so none needs escaping).
pub(super) async fn seed_ecommerce(store: &Store, table: &str) -> anyhow::Result<()> {
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let iso = |ms: i64| -> anyhow::Result<String> {
        Ok(chrono::DateTime::from_timestamp_millis(ms)
            .context("a time out of range")?
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
    };
    let partition = format!("CUSTOMER#{CUSTOMER}");
    let mut items = vec![Item::from([
        ("PK".to_owned(), s(&partition)),
        ("SK".to_owned(), s(&partition)),
        ("username".to_owned(), s(CUSTOMER)),
        ("name".to_owned(), s(&format!("Customer {CUSTOMER}"))),
        ("email".to_owned(), s(&format!("{CUSTOMER}@example.com"))),
        ("joinedAt".to_owned(), s(&iso(BASE_MS)?)),
    ])];
    items.extend(ADDRESSES.iter().enumerate().map(|(i, label)| {
        Item::from([
            ("PK".to_owned(), s(&partition)),
            ("SK".to_owned(), s(&format!("ADDRESS#{label}"))),
            ("username".to_owned(), s(CUSTOMER)),
            ("label".to_owned(), s(label)),
            ("street".to_owned(), s(&format!("{} Main Street", i + 1))),
            ("city".to_owned(), s("Springfield")),
            ("postcode".to_owned(), s(&format!("1000{i}"))),
            ("country".to_owned(), s("US")),
        ])
    }));
    for i in 0..LONG_PURCHASES {
        let placed_at = iso(BASE_MS + i * 1000)?;
        let order_id = format!("O{i:06}");
        let status = "PLACED";
        items.push(Item::from([
            ("PK".to_owned(), s(&partition)),
            ("SK".to_owned(), s(&format!("ORDER#{placed_at}#{order_id}"))),
            ("GSI1PK".to_owned(), s(&format!("ORDER#{order_id}"))),
            ("GSI1SK".to_owned(), s(&format!("ORDER#{order_id}"))),
            ("GSI2PK".to_owned(), s(&format!("STATUS#{status}"))),
            ("GSI2SK".to_owned(), s(&format!("{placed_at}#{order_id}"))),
            ("username".to_owned(), s(CUSTOMER)),
            ("orderId".to_owned(), s(&order_id)),
            ("placedAt".to_owned(), s(&placed_at)),
            ("status".to_owned(), s(status)),
            (
                "total".to_owned(),
                AttributeValue::N(format!("{}.99", i % 500)),
            ),
            ("itemCount".to_owned(), AttributeValue::N("1".to_owned())),
        ]));
    }
    // Four writers at once, as for the shop.
    let mut writers = tokio::task::JoinSet::new();
    let chunk = items.len().div_ceil(4);
    while !items.is_empty() {
        let rest = items.split_off(items.len().saturating_sub(chunk));
        let (store, table) = (store.clone(), table.to_owned());
        writers.spawn(async move { store.put_items(&table, rest).await });
    }
    while let Some(done) = writers.join_next().await {
        done??;
    }
    Ok(())
}
