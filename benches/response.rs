//! The server's own work for one 100-edge page of `User.purchases`, without DynamoDB:
//! - `items`: DynamoDB items to keys and records (what the store does with a Query's answer);
//! - `execute`: keys and records to a `Connection` (100 cursors sealed) and through GraphQL
//!   execution to a response;
//! - `serialize`: that response to the JSON bytes sent to the client;
//! - `document/parse` and `document/cached`: the page query of `scripts/bench` parsed and checked
//!   against the query limits, against taken from the document cache (what a repeated query
//!   costs).
//!
//! Run: `cargo bench --bench response`.

use std::hint::black_box;

use async_graphql::{EmptyMutation, EmptySubscription, Object, Schema};
use aws_sdk_dynamodb::types::AttributeValue;
use criterion::{Criterion, criterion_group, criterion_main};
use dynarelay::{
    cursor::{Binding, CursorCodec, Key, KeyRing, KeyValue},
    dynamo::{Row, model::Item, model::PurchaseRecord, tables::PURCHASE_KEY},
    graphql::{connection::Connection, documents::Documents, limits::QueryLimits, types::Purchase},
    pagination::{Direction, Page},
};

const USER_ID: &str = "0b0c3d1e-6a2f-4c55-9e8e-1f2a3b4c5d6e";
const EDGES: i64 = 100;

const QUERY: &str = "{ page { edges { cursor node { purchasedAt amount status quantity } }
  pageInfo { hasNextPage endCursor } } }";

/// The query `benches/compare.rs` pages with.
const PAGE_QUERY: &str = "query($u: String!, $after: String, $status: PurchaseStatus) {
  user(userId: $u) { purchases(first: 20, after: $after, status: $status) {
    edges { cursor node { purchasedAt amount status quantity } }
    pageInfo { hasNextPage endCursor } } } }";

fn items() -> Vec<Item> {
    (0..EDGES)
        .map(|i| {
            Item::from([
                ("userId".to_owned(), AttributeValue::S(USER_ID.to_owned())),
                (
                    "purchasedAt".to_owned(),
                    AttributeValue::N((1_672_531_200_123 + i * 60_000).to_string()),
                ),
                ("sku".to_owned(), AttributeValue::S("SKU-00042".to_owned())),
                ("quantity".to_owned(), AttributeValue::N("2".to_owned())),
                (
                    "amount".to_owned(),
                    AttributeValue::N(format!("{}.99", 10 + i)),
                ),
                ("status".to_owned(), AttributeValue::S("PAID".to_owned())),
            ])
        })
        .collect()
}

fn rows(items: &[Item]) -> Vec<Row<PurchaseRecord>> {
    items
        .iter()
        .map(|item| Row {
            key: Key::from_item(item, PURCHASE_KEY).expect("key"),
            record: PurchaseRecord::from_item(item).expect("record"),
        })
        .collect()
}

/// A root that serves one page built from ready rows, as `User.purchases` does after its read.
struct Root {
    rows: Vec<Row<PurchaseRecord>>,
    codec: CursorCodec,
    binding: Binding,
}

#[Object]
impl Root {
    async fn page(&self) -> Connection<Purchase> {
        let page = Page {
            rows: self.rows.clone(),
            has_next_page: true,
            has_previous_page: false,
            direction: Direction::Forward,
            resume: None,
        };
        Connection::from_page(page, None, &self.codec, &self.binding, Purchase)
    }
}

fn bench(c: &mut Criterion) {
    let ring: KeyRing = "1:KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio"
        .parse()
        .expect("key ring");
    let items = items();
    let schema = Schema::build(
        Root {
            rows: rows(&items),
            codec: CursorCodec::new(&ring),
            binding: Binding::builder("User.purchases", "Purchases", None)
                .fixed("userId", KeyValue::S(USER_ID.into()))
                .finish(),
        },
        EmptyMutation,
        EmptySubscription,
    )
    .finish();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");

    c.bench_function("page_100/items", |b| b.iter(|| rows(black_box(&items))));
    c.bench_function("page_100/execute", |b| {
        b.iter(|| runtime.block_on(schema.execute(black_box(QUERY))))
    });
    let response = runtime.block_on(schema.execute(QUERY));
    assert!(response.errors.is_empty(), "{:?}", response.errors);
    c.bench_function("page_100/serialize", |b| {
        b.iter(|| serde_json::to_vec(black_box(&response)).expect("JSON"))
    });

    let uncached = Documents::new(QueryLimits::default(), 0);
    c.bench_function("document/parse", |b| {
        b.iter(|| uncached.prepare(black_box(PAGE_QUERY)).expect("document"))
    });
    let cached = Documents::new(QueryLimits::default(), 64 * 1024);
    cached.prepare(PAGE_QUERY).expect("document");
    c.bench_function("document/cached", |b| {
        b.iter(|| cached.prepare(black_box(PAGE_QUERY)).expect("document"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
