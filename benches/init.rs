//! `dynarelay init`'s inference without DynamoDB: 10,000 sampled items of a table (as many as
//! `--sample 10000` reads) turned into a checked, commented model file: one pass over the items
//! for what each attribute holds, types and connections proposed, the file rendered and checked
//! as `dynarelay check` would (`init/infer_10000`). The issue asks for under a second.
//!
//! Run: `cargo bench --bench init`.

use std::hint::black_box;

use aws_sdk_dynamodb::types::AttributeValue;
use criterion::{Criterion, criterion_group, criterion_main};
use dynarelay::{
    dynamo::{
        Item,
        sample::{KeyKind, LiveIndex, LiveKey, LiveProjection, LiveTable},
    },
    init::{infer, proposal, render},
};

/// A purchases table: a string partition key, an epoch-milliseconds sort key, an index, and
/// items of nine attributes of every common kind, some of them absent from some items.
fn table() -> LiveTable {
    let key = |name: &str, kind| LiveKey {
        name: name.to_owned(),
        kind,
    };
    LiveTable {
        name: "Purchases".to_owned(),
        partition: key("userId", KeyKind::S),
        sort: Some(key("purchasedAt", KeyKind::N)),
        indexes: vec![LiveIndex {
            name: "BySku".to_owned(),
            local: false,
            partition: key("sku", KeyKind::S),
            sort: Some(key("purchasedAt", KeyKind::N)),
            projection: LiveProjection::All,
        }],
        ttl_attribute: None,
        stream: None,
        item_count: Some(1_000_000),
    }
}

fn items(n: usize) -> Vec<Item> {
    let s = |v: String| AttributeValue::S(v);
    let statuses = ["PAID", "PENDING", "SHIPPED", "REFUNDED"];
    (0..n)
        .map(|i| {
            let mut item = Item::from([
                ("userId".to_owned(), s(format!("user-{}", i % 977))),
                (
                    "purchasedAt".to_owned(),
                    AttributeValue::N((1_714_564_800_000 + i as i64 * 1000).to_string()),
                ),
                ("sku".to_owned(), s(format!("SKU-{:05}", i % 311))),
                (
                    "amount".to_owned(),
                    AttributeValue::N(format!("{}.99", i % 500)),
                ),
                (
                    "quantity".to_owned(),
                    AttributeValue::N((1 + i % 5).to_string()),
                ),
                ("status".to_owned(), s(statuses[i % 4].to_owned())),
                (
                    "shippedAt".to_owned(),
                    s(format!("2026-05-{:02}T12:00:00.000Z", 1 + i % 28)),
                ),
                ("gift".to_owned(), AttributeValue::Bool(i % 7 == 0)),
            ]);
            if i % 3 == 0 {
                item.insert(
                    "tags".to_owned(),
                    AttributeValue::Ss(vec!["a".to_owned(), format!("t{}", i % 9)]),
                );
            }
            item
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let items = items(10_000);
    let live = table();
    c.bench_function("init/infer_10000", |b| {
        b.iter(|| {
            let proposal = infer::propose(vec![proposal::TableInput {
                name: "Purchases".to_owned(),
                live: live.clone(),
                items: items.clone(),
                complete: false,
            }]);
            let text = render::render(&proposal, &render::Header::default());
            assert!(dynarelay::model::parse("bench", &text).is_ok(), "{text}");
            black_box(text)
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
