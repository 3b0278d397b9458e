//! Fuzzes the cursor decoder. Input byte 0 picks the mode:
//! - even: the rest, as text, is a cursor sent by a client; decoding must not panic and, since
//!   the fuzzer cannot forge a Poly1305 tag, must fail;
//! - odd: the rest is sealed as a plaintext with the real key, which reaches the plaintext parser
//!   behind the tag; decoding must not panic, and whatever decodes must re-encode to the same
//!   cursor.
#![no_main]

use std::sync::LazyLock;

use dynarelay::cursor::{Binding, CursorCodec, KeyAttr, KeyRing, KeyShape, KeyType, KeyValue};
use libfuzzer_sys::fuzz_target;

/// A start key of the shop's `BySku` index: the index keys, then the table key not among them.
const BY_SKU_START_KEY: KeyShape = &[
    KeyAttr { name: "sku", ty: KeyType::S },
    KeyAttr { name: "purchasedAt", ty: KeyType::N },
    KeyAttr { name: "userId", ty: KeyType::S },
];

static CODEC: LazyLock<CursorCodec> = LazyLock::new(|| {
    let ring: KeyRing = "1:KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio".parse().expect("key ring");
    CursorCodec::new(&ring)
});

static BINDING: LazyLock<Binding> = LazyLock::new(|| {
    Binding::builder("Product.purchases", "Purchases", Some("BySku"))
        .fixed("sku", KeyValue::S("SKU-00042".into()))
        .finish()
});

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode % 2 == 0 {
        let Ok(text) = std::str::from_utf8(rest) else { return };
        assert!(CODEC.decode(text, BY_SKU_START_KEY, &BINDING).is_err(), "forged cursor accepted");
    } else {
        let cursor = CODEC.seal_plaintext_for_fuzzing(rest, &BINDING);
        if let Ok(key) = CODEC.decode(&cursor, BY_SKU_START_KEY, &BINDING) {
            assert_eq!(CODEC.encode(&key, &BINDING), cursor, "decode and encode disagree");
        }
    }
});
