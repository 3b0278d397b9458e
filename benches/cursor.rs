//! Cursor codec speed: sealing (encode) and opening with verification (decode) a `Purchases` key
//! and a `BySku` key, as the resolvers do for every edge.
//!
//! Run: `cargo bench --bench cursor`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use dynarelay::{
    cursor::{Binding, CursorCodec, Key, KeyAttr, KeyRing, KeyShape, KeyType, KeyValue},
    number::DynamoNumber,
};

/// The shop's `Purchases` key: `userId` (S) + `purchasedAt` (N).
const PURCHASE_KEY: KeyShape = &[
    KeyAttr {
        name: "userId",
        ty: KeyType::S,
    },
    KeyAttr {
        name: "purchasedAt",
        ty: KeyType::N,
    },
];
/// A `BySku` start key: the index keys, then the table key not among them.
const BY_SKU_START_KEY: KeyShape = &[
    KeyAttr {
        name: "sku",
        ty: KeyType::S,
    },
    KeyAttr {
        name: "purchasedAt",
        ty: KeyType::N,
    },
    KeyAttr {
        name: "userId",
        ty: KeyType::S,
    },
];

const USER_ID: &str = "0b0c3d1e-6a2f-4c55-9e8e-1f2a3b4c5d6e";

fn bench(c: &mut Criterion) {
    let ring: KeyRing = "1:KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio"
        .parse()
        .expect("key ring");
    let codec = CursorCodec::new(&ring);
    let at = || KeyValue::N(DynamoNumber::parse("1672531200123").expect("number"));

    let purchase = Key::new(PURCHASE_KEY, vec![KeyValue::S(USER_ID.into()), at()]).expect("key");
    let purchase_binding = Binding::builder("User.purchases", "Purchases", None)
        .fixed("userId", KeyValue::S(USER_ID.into()))
        .finish();
    let by_sku = Key::new(
        BY_SKU_START_KEY,
        vec![
            KeyValue::S("SKU-00042".into()),
            at(),
            KeyValue::S(USER_ID.into()),
        ],
    )
    .expect("key");
    let by_sku_binding = Binding::builder("Product.purchases", "Purchases", Some("BySku"))
        .fixed("sku", KeyValue::S("SKU-00042".into()))
        .finish();

    for (name, key, binding) in [
        ("purchases", &purchase, &purchase_binding),
        ("by_sku", &by_sku, &by_sku_binding),
    ] {
        let cursor = codec.encode(key, binding);
        c.bench_function(&format!("encode/{name}"), |b| {
            b.iter(|| codec.encode(black_box(key), black_box(binding)))
        });
        c.bench_function(&format!("decode/{name}"), |b| {
            b.iter(|| {
                codec
                    .decode(black_box(&cursor), key.shape(), black_box(binding))
                    .expect("valid cursor")
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
