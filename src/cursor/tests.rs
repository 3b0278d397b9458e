use proptest::prelude::*;

use super::*;

const PURCHASE: KeyShape = &[
    KeyAttr {
        name: "customerId",
        ty: KeyType::S,
    },
    KeyAttr {
        name: "placedAt",
        ty: KeyType::N,
    },
];
const BY_SKU: KeyShape = &[
    KeyAttr {
        name: "status",
        ty: KeyType::S,
    },
    KeyAttr {
        name: "placedAt",
        ty: KeyType::N,
    },
    KeyAttr {
        name: "customerId",
        ty: KeyType::S,
    },
];
const USER_ID: &str = "0b0c3d1e-6a2f-4c55-9e8e-1f2a3b4c5d6e";

fn ring(specs: &[(u8, u8)]) -> KeyRing {
    KeyRing::new(
        specs
            .iter()
            .map(|&(id, fill)| CursorSecret {
                id,
                bytes: [fill; 32],
            })
            .collect(),
    )
    .unwrap()
}

fn codec() -> CursorCodec {
    CursorCodec::new(&ring(&[(1, 7)]))
}

fn n(s: &str) -> KeyValue {
    KeyValue::N(DynamoNumber::parse(s).unwrap())
}

fn orders_of(user: &str) -> Binding {
    Binding::builder("Customer.orders", "Orders", None)
        .fixed("customerId", KeyValue::S(user.into()))
        .finish()
}

fn order_key(user: &str, at: &str) -> Key {
    Key::new(PURCHASE, vec![KeyValue::S(user.into()), n(at)]).unwrap()
}

fn by_sku_key() -> (Key, Binding) {
    let key = Key::new(
        BY_SKU,
        vec![
            KeyValue::S("SHIPPED".into()),
            n("1672531200123"),
            KeyValue::S(USER_ID.into()),
        ],
    )
    .unwrap();
    let binding = Binding::builder("Query.ordersByStatus", "Orders", Some("ByStatus"))
        .fixed("status", KeyValue::S("SHIPPED".into()))
        .finish();
    (key, binding)
}

#[test]
fn sealed_bytes_open_only_for_their_connection_and_never_as_cursors() {
    let codec = codec();
    let alice = orders_of("alice");
    let sealed = codec.seal_bytes(b"a place", &alice);
    assert_eq!(codec.open_bytes(&sealed, &alice).unwrap(), b"a place");
    assert_eq!(
        codec.open_bytes(&sealed, &orders_of("bob")),
        Err(CursorError)
    );
    assert_eq!(codec.decode(&sealed, PURCHASE, &alice), Err(CursorError));
    let cursor = codec.encode(&order_key("alice", "1"), &alice);
    assert_eq!(codec.open_bytes(&cursor, &alice), Err(CursorError));
    let mut forged = sealed.into_bytes();
    let last = forged.len() - 1;
    forged[last] = if forged[last] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();
    assert_eq!(codec.open_bytes(&forged, &alice), Err(CursorError));
}

#[test]
fn a_key_round_trips_to_the_same_attribute_map() {
    let key = order_key(USER_ID, "1672531200123");
    let binding = orders_of(USER_ID);
    let decoded = codec()
        .decode(&codec().encode(&key, &binding), PURCHASE, &binding)
        .unwrap();
    assert_eq!(decoded, key);
    assert_eq!(
        decoded.to_attribute_map(),
        HashMap::from([
            ("customerId".to_owned(), AttributeValue::S(USER_ID.into())),
            (
                "placedAt".to_owned(),
                AttributeValue::N("1672531200123".into())
            ),
        ])
    );
}

#[test]
fn the_same_position_always_gives_the_same_cursor_and_others_differ() {
    let binding = orders_of(USER_ID);
    let a = codec().encode(&order_key(USER_ID, "1"), &binding);
    assert_eq!(a, codec().encode(&order_key(USER_ID, "1"), &binding));
    assert_ne!(a, codec().encode(&order_key(USER_ID, "2"), &binding));
}

#[test]
fn cursors_are_opaque_and_compact() {
    let binding = orders_of(USER_ID);
    let cursor = codec().encode(&order_key(USER_ID, "1672531200123"), &binding);
    let raw = URL_SAFE_NO_PAD.decode(&cursor).unwrap();
    for secret in [&b"1672531200123"[..], USER_ID.as_bytes(), b"0b0c3d1e"] {
        assert!(
            !raw.windows(secret.len()).any(|w| w == secret),
            "cursor reveals a key value"
        );
    }
    // 2 header + 24 nonce + 16 tag + 16 plaintext bytes; the docs quote this length.
    assert_eq!(
        cursor.len(),
        78,
        "Orders cursor has {} characters",
        cursor.len()
    );
    assert!(
        cursor
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );

    let (key, binding) = by_sku_key();
    let cursor = codec().encode(&key, &binding);
    assert!(
        cursor.len() <= 150,
        "ByStatus cursor has {} characters",
        cursor.len()
    );
    assert_eq!(codec().decode(&cursor, BY_SKU, &binding).unwrap(), key);
}

#[test]
fn keys_too_long_for_the_stack_buffer_round_trip() {
    // A 2048-byte partition key (DynamoDB's largest) of an unbound connection.
    let user = "u".repeat(MAX_KEY_VALUE_BYTES);
    let key = order_key(&user, "1672531200123");
    let binding = Binding::builder("Query.test", "Orders", None).finish();
    let cursor = codec().encode(&key, &binding);
    assert!(cursor.len() > STACK_CURSOR_BYTES * 4 / 3);
    assert_eq!(codec().decode(&cursor, PURCHASE, &binding), Ok(key));
}

#[test]
fn a_cursor_is_rejected_on_any_other_connection() {
    let key = order_key(USER_ID, "5");
    let cursor = codec().encode(&key, &orders_of(USER_ID));
    let others = [
        orders_of("another-user"),
        Binding::builder("Query.ordersByStatus", "Orders", None)
            .fixed("customerId", KeyValue::S(USER_ID.into()))
            .finish(),
        Binding::builder("Customer.orders", "t1_Orders", None)
            .fixed("customerId", KeyValue::S(USER_ID.into()))
            .finish(),
        Binding::builder("Customer.orders", "Orders", Some("ByStatus"))
            .fixed("customerId", KeyValue::S(USER_ID.into()))
            .finish(),
        Binding::builder("Customer.orders", "Orders", None)
            .fixed("customerId", KeyValue::S(USER_ID.into()))
            .argument("status", Some("PAID"))
            .finish(),
        Binding::builder("Customer.orders", "Orders", None)
            .fixed("customerId", KeyValue::S(USER_ID.into()))
            .argument("status", None)
            .finish(),
    ];
    for (i, other) in others.iter().enumerate() {
        assert_eq!(
            codec().decode(&cursor, PURCHASE, other),
            Err(CursorError),
            "binding {i}"
        );
    }
}

#[test]
fn rotation_keeps_old_cursors_until_their_key_is_removed() {
    let binding = orders_of(USER_ID);
    let key = order_key(USER_ID, "9");
    let old = CursorCodec::new(&ring(&[(1, 7)])).encode(&key, &binding);
    let rotated = CursorCodec::new(&ring(&[(2, 9), (1, 7)]));
    assert_eq!(rotated.decode(&old, PURCHASE, &binding), Ok(key.clone()));
    let new = rotated.encode(&key, &binding);
    assert_ne!(new, old, "new cursors use the new primary key");
    let removed = CursorCodec::new(&ring(&[(2, 9)]));
    assert_eq!(removed.decode(&old, PURCHASE, &binding), Err(CursorError));
    assert_eq!(removed.decode(&new, PURCHASE, &binding), Ok(key));
    // Same id, different secret: the tag fails.
    let replaced = CursorCodec::new(&ring(&[(1, 8)]));
    assert_eq!(replaced.decode(&old, PURCHASE, &binding), Err(CursorError));
}

#[test]
fn garbage_and_oversized_input_is_rejected() {
    let binding = orders_of(USER_ID);
    for bad in [
        "",
        "!!!!",
        "not a cursor",
        "AQ",
        &"A".repeat(MAX_CURSOR_LEN + 4),
    ] {
        assert_eq!(
            codec().decode(bad, PURCHASE, &binding),
            Err(CursorError),
            "{bad:?}"
        );
    }
}

#[test]
fn from_item_requires_every_attribute_with_its_type() {
    let mut item = order_key("u-1", "5").to_attribute_map();
    assert!(Key::from_item(&item, PURCHASE).is_ok());
    item.insert("placedAt".into(), AttributeValue::S("5".into()));
    assert_eq!(
        Key::from_item(&item, PURCHASE),
        Err(KeyError {
            attribute: "placedAt",
            expected: KeyType::N
        })
    );
    item.remove("placedAt");
    assert!(Key::from_item(&item, PURCHASE).is_err());
}

// ---- property tests ----

const NAMES: [&str; 6] = ["pk", "sk", "gsiPk", "gsiSk", "a", "b"];

/// DynamoDB numbers: up to 38 significant digits anywhere in the exponent range.
fn number() -> impl Strategy<Value = String> {
    (any::<bool>(), "[1-9][0-9]{0,37}", -130i32..=125).prop_map(|(negative, digits, exp)| {
        // Place the decimal point so that the leading digit has exponent `exp`.
        let sign = if negative { "-" } else { "" };
        let body = if exp < 0 {
            format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
        } else if (exp as usize) + 1 >= digits.len() {
            format!("{digits}{}", "0".repeat(exp as usize + 1 - digits.len()))
        } else {
            let (int, frac) = digits.split_at(exp as usize + 1);
            format!("{int}.{frac}")
        };
        let body = if body.contains('.') {
            body.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            body
        };
        format!("{sign}{body}")
    })
}

fn value(ty: KeyType) -> BoxedStrategy<KeyValue> {
    match ty {
        KeyType::S => "\\PC{1,60}".prop_map(KeyValue::S).boxed(),
        KeyType::N => number()
            .prop_map(|s| KeyValue::N(DynamoNumber::parse(&s).unwrap()))
            .boxed(),
        KeyType::B => prop::collection::vec(prop_oneof![Just(0u8), any::<u8>()], 1..64)
            .prop_map(KeyValue::B)
            .boxed(),
    }
}

fn key_type() -> impl Strategy<Value = KeyType> {
    prop_oneof![Just(KeyType::S), Just(KeyType::N), Just(KeyType::B)]
}

/// A random shape of 1 to 4 attributes, a key of it, and a binding that fixes its first
/// attribute or none.
fn bound_key() -> impl Strategy<Value = (Key, Binding)> {
    (prop::collection::vec(key_type(), 1..=4), any::<bool>())
        .prop_flat_map(|(types, fix_first)| {
            let shape: KeyShape = Box::leak(
                types
                    .iter()
                    .enumerate()
                    .map(|(i, &ty)| KeyAttr { name: NAMES[i], ty })
                    .collect::<Vec<_>>()
                    .into_boxed_slice(),
            );
            let values: Vec<_> = types.iter().map(|&ty| value(ty)).collect();
            (Just(shape), values, Just(fix_first))
        })
        .prop_map(|(shape, values, fix_first)| {
            let mut binding = Binding::builder("T.field", "Table", None);
            if fix_first {
                binding = binding.fixed(shape[0].name, values[0].clone());
            }
            (Key::new(shape, values).unwrap(), binding.finish())
        })
}

proptest! {
    #[test]
    fn any_key_round_trips_exactly((key, binding) in bound_key()) {
        let cursor = codec().encode(&key, &binding);
        let decoded = codec().decode(&cursor, key.shape(), &binding).unwrap();
        prop_assert_eq!(decoded.to_attribute_map(), key.to_attribute_map());
        prop_assert_eq!(decoded, key);
    }

    #[test]
    fn numbers_keep_their_exact_string(s in number()) {
        let key = Key::new(&PURCHASE[1..], vec![n(&s)]).unwrap();
        let binding = Binding::builder("f", "t", None).finish();
        let decoded = codec().decode(&codec().encode(&key, &binding), &PURCHASE[1..], &binding).unwrap();
        let map = decoded.to_attribute_map();
        prop_assert_eq!(map["placedAt"].as_n().unwrap(), &s);
    }
}

/// Mutation counts add up to 100,000 rejected cursors per run.
fn cases(n: u32) -> ProptestConfig {
    ProptestConfig {
        cases: n,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(cases(40_000))]
    #[test]
    fn every_bit_flip_is_rejected((key, binding) in bound_key(), bit in any::<prop::sample::Index>()) {
        let mut raw = URL_SAFE_NO_PAD.decode(codec().encode(&key, &binding)).unwrap();
        let bit = bit.index(raw.len() * 8);
        raw[bit / 8] ^= 1 << (bit % 8);
        prop_assert_eq!(codec().decode(&URL_SAFE_NO_PAD.encode(raw), key.shape(), &binding), Err(CursorError));
    }
}

proptest! {
    #![proptest_config(cases(15_000))]
    #[test]
    fn every_truncation_is_rejected((key, binding) in bound_key(), cut in any::<prop::sample::Index>()) {
        let cursor = codec().encode(&key, &binding);
        let truncated = &cursor[..cut.index(cursor.len())];
        prop_assert_eq!(codec().decode(truncated, key.shape(), &binding), Err(CursorError));
    }

    #[test]
    fn every_extension_is_rejected((key, binding) in bound_key(), extra in "[A-Za-z0-9_=-]{1,12}") {
        let cursor = codec().encode(&key, &binding);
        prop_assert_eq!(codec().decode(&format!("{cursor}{extra}"), key.shape(), &binding), Err(CursorError));
    }
}

proptest! {
    #![proptest_config(cases(10_000))]
    #[test]
    fn base64_garbage_is_rejected(garbage in "[A-Za-z0-9_-]{0,200}|\\PC{0,100}") {
        let binding = orders_of(USER_ID);
        prop_assert_eq!(codec().decode(&garbage, PURCHASE, &binding), Err(CursorError));
    }

    #[test]
    fn another_key_id_is_rejected((key, binding) in bound_key(), id in 2u8..=255) {
        let mut raw = URL_SAFE_NO_PAD.decode(codec().encode(&key, &binding)).unwrap();
        raw[1] = id;
        let both = CursorCodec::new(&ring(&[(1, 7), (id, 7)]));
        // Unknown to this codec, and with the same secret under that id, still bound to id 1.
        prop_assert_eq!(codec().decode(&URL_SAFE_NO_PAD.encode(&raw), key.shape(), &binding), Err(CursorError));
        prop_assert_eq!(both.decode(&URL_SAFE_NO_PAD.encode(&raw), key.shape(), &binding), Err(CursorError));
    }

    #[test]
    fn another_connections_fingerprint_is_rejected((key, binding) in bound_key(), arg in "\\PC{0,20}") {
        let cursor = codec().encode(&key, &binding);
        let mut other = Binding::builder("T.field", "Table", None);
        for (name, value) in &binding.fixed {
            other = other.fixed(name, value.clone());
        }
        let other = other.argument("filter", Some(&arg)).finish();
        prop_assert_eq!(codec().decode(&cursor, key.shape(), &other), Err(CursorError));
    }
}
