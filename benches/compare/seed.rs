//! The tables the bench reads: the shop's long and sparse users with their purchases, and the
//! single-table examples' owners shaped like the long user (the ecommerce example's customer, the
//! ElectroDB example's member, the OneTable example's project), each item in the form its tool
//! stores it.

use anyhow::Context;
use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::{Item, Store};

use super::{
    BASE_MS, LONG_USER, SPARSE_USER,
    examples::{CUSTOMER, MEMBER, PROJECT},
};

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
    put_all(store, &names.purchases, items).await
}

/// Writes `items` to `table` from four writers at once.
async fn put_all(store: &Store, table: &str, mut items: Vec<Item>) -> anyhow::Result<()> {
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

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// `ms` after the epoch as ISO 8601 in UTC with milliseconds and `Z`, as JavaScript's
/// `toISOString` writes it: `2023-01-01T00:00:00.000Z`.
pub(super) fn iso(ms: i64) -> anyhow::Result<String> {
    Ok(chrono::DateTime::from_timestamp_millis(ms)
        .context("a time out of range")?
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// Seeds the single-table example's `table` with [`CUSTOMER`] shaped like the shop's long user:
/// the profile, [`ADDRESSES`], and as many orders as the long user has purchases, one a second
/// from [`BASE_MS`] with the same amounts. Every item is written raw, with each key attribute
/// the model's templates give it (facets hold no separator, so none needs escaping).
pub(super) async fn seed_ecommerce(store: &Store, table: &str) -> anyhow::Result<()> {
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
            ("total".to_owned(), n(format!("{}.99", i % 500))),
            ("itemCount".to_owned(), n(1)),
        ]));
    }
    put_all(store, table, items).await
}

/// Seeds the ElectroDB example's `table` with [`MEMBER`] and as many loans as the shop's long user
/// has purchases, one a second from [`BASE_MS`], each item as ElectroDB 3 writes it (`put` of the
/// entities in tests/clients/writers/electrodb.mjs): the keys in its grammar and lowercased
/// (`$lending#memberid_bench-long`, `$loan_1#loanedat_2023-01-01t00:00:00.000z#loanid_l000000`),
/// `__edb_e__` and `__edb_v__`, and every attribute as given.
pub(super) async fn seed_electrodb(store: &Store, table: &str) -> anyhow::Result<()> {
    let partition = format!("$lending#memberid_{}", MEMBER.to_lowercase());
    let entity = |name: &str| {
        [
            ("__edb_e__".to_owned(), s(name)),
            ("__edb_v__".to_owned(), s("1")),
        ]
    };
    let mut member = Item::from([
        ("pk".to_owned(), s(&partition)),
        ("sk".to_owned(), s("$member_1")),
        ("memberId".to_owned(), s(MEMBER)),
        ("name".to_owned(), s(&format!("Member {MEMBER}"))),
        ("city".to_owned(), s("Springfield")),
    ]);
    member.extend(entity("member"));
    let mut items = vec![member];
    for i in 0..LONG_PURCHASES {
        let loaned_at = iso(BASE_MS + i * 1000)?;
        let loan_id = format!("L{i:06}");
        // One loan in three is back.
        let status = if i % 3 == 0 { "RETURNED" } else { "OUT" };
        let sort = format!("$loan_1#loanedat_{loaned_at}#loanid_{loan_id}").to_lowercase();
        let mut loan = Item::from([
            ("pk".to_owned(), s(&partition)),
            ("sk".to_owned(), s(&sort)),
            (
                "gsi1pk".to_owned(),
                s(&format!("$lending#status_{}", status.to_lowercase())),
            ),
            ("gsi1sk".to_owned(), s(&sort)),
            ("memberId".to_owned(), s(MEMBER)),
            ("loanId".to_owned(), s(&loan_id)),
            ("title".to_owned(), s(&format!("Book {i}"))),
            ("loanedAt".to_owned(), s(&loaned_at)),
            ("status".to_owned(), s(status)),
        ]);
        loan.extend(entity("loan"));
        items.push(loan);
    }
    put_all(store, table, items).await
}

/// Seeds the OneTable example's `table` with [`PROJECT`] and as many issues as the shop's long
/// user has purchases, numbered from 1 and opened one a second from [`BASE_MS`], each item as
/// dynamodb-onetable 2 creates it (`create` of the models in tests/clients/writers/onetable.mjs):
/// the project with the `_unique#` item of its unique name, `_type`, numbers zero-padded to 8
/// digits in keys, and `created` and `updated` in epoch milliseconds, equal on creation.
pub(super) async fn seed_onetable(store: &Store, table: &str) -> anyhow::Result<()> {
    let partition = format!("project#{PROJECT}");
    let name = format!("Project {PROJECT}");
    let mut items = vec![
        Item::from([
            ("pk".to_owned(), s(&format!("_unique#Project#name#{name}"))),
            ("sk".to_owned(), s("_unique#")),
            ("_type".to_owned(), s("_Unique")),
        ]),
        Item::from([
            ("pk".to_owned(), s(&partition)),
            ("sk".to_owned(), s("project#")),
            ("id".to_owned(), s(PROJECT)),
            ("name".to_owned(), s(&name)),
            ("_type".to_owned(), s("Project")),
            ("created".to_owned(), n(BASE_MS)),
            ("updated".to_owned(), n(BASE_MS)),
        ]),
    ];
    for seq in 1..=LONG_PURCHASES {
        let opened = BASE_MS + seq * 1000;
        // One issue in three is closed.
        let state = if seq % 3 == 0 { "closed" } else { "open" };
        items.push(Item::from([
            ("pk".to_owned(), s(&partition)),
            ("sk".to_owned(), s(&format!("issue#{seq:08}"))),
            ("projectId".to_owned(), s(PROJECT)),
            ("seq".to_owned(), n(seq)),
            ("title".to_owned(), s(&format!("Issue {seq}"))),
            ("state".to_owned(), s(state)),
            ("gs1pk".to_owned(), s(&format!("state#{state}"))),
            ("gs1sk".to_owned(), s(&format!("issue#{PROJECT}#{seq:08}"))),
            ("_type".to_owned(), s("Issue")),
            ("created".to_owned(), n(opened)),
            ("updated".to_owned(), n(opened)),
        ]));
    }
    put_all(store, table, items).await
}
