//! The data set is deterministic and has the shapes the walks need: its escaping spelled out, no
//! two items on one key (the bait pair would share one without escaping), and the partitions,
//! orders and junk the walks read.

use std::collections::{BTreeSet, HashMap};

use super::{item_count, key_of};
use crate::ecommerce_data::{self as data, attr};

#[test]
fn the_data_set_is_deterministic_and_has_the_shapes_the_walks_need() {
    let data = data::generate(data::SEED);
    assert_eq!(data, data::generate(data::SEED));
    assert_ne!(data, data::generate(data::SEED + 1));
    assert_eq!(
        data.customers.len(),
        data::NAMED_CUSTOMERS.len() + data::PLAIN_CUSTOMERS
    );

    // The escaping, spelled out.
    assert_eq!(data::escape("a#b\\"), "a\\#b\\\\");
    assert_eq!(data::customer_key("ana#b"), "CUSTOMER#ana\\#b");
    assert_eq!(data::customer_key("ana\\"), "CUSTOMER#ana\\\\");
    assert_eq!(data::customer_key("ana\\#b"), "CUSTOMER#ana\\\\\\#b");
    assert_eq!(
        data::order_sk("2026-11-23T10:15:00.000Z", "X#ITEM#Y"),
        "ORDER#2026-11-23T10:15:00.000Z#X\\#ITEM\\#Y"
    );

    // No two items share a key: nothing overwrites anything. The bait pair would without
    // escaping.
    let keys: BTreeSet<(String, String)> = data.items().map(key_of).collect();
    assert_eq!(keys.len(), data.items().count());
    let bait: Vec<String> = (0..2)
        .map(|i| data::item_key(data::BAIT_ORDERS[i], data::BAIT_ITEMS[i]))
        .collect();
    assert_ne!(bait[0], bait[1]);
    assert_eq!(
        format!(
            "ORDER#{}#ITEM#{}",
            data::BAIT_ORDERS[0],
            data::BAIT_ITEMS[0]
        ),
        format!(
            "ORDER#{}#ITEM#{}",
            data::BAIT_ORDERS[1],
            data::BAIT_ITEMS[1]
        ),
    );
    for key in &bait {
        assert!(keys.contains(&(key.clone(), key.clone())), "{key}");
    }

    // Facet values that need escaping, prefixes of each other, unicode.
    let usernames: Vec<&str> = data
        .customers
        .iter()
        .map(|c| attr(c, "username").unwrap())
        .collect();
    for needle in [
        "ana",
        "ana#b",
        "ana\\",
        "ana\\#b",
        "trailing\\",
        "李雷",
        "Zoë",
    ] {
        assert!(usernames.contains(&needle), "{needle}");
    }
    let labels: BTreeSet<&str> = data
        .addresses
        .iter()
        .map(|a| attr(a, "label").unwrap())
        .collect();
    assert!(labels.iter().any(|l| l.contains('#')), "{labels:?}");
    assert!(labels.iter().any(|l| l.ends_with('\\')), "{labels:?}");
    assert!(labels.iter().any(|l| !l.is_ascii()), "{labels:?}");
    let item_ids: BTreeSet<&str> = data
        .order_items
        .iter()
        .map(|i| attr(i, "itemId").unwrap())
        .collect();
    assert!(item_ids.iter().any(|i| i.contains('#')), "{item_ids:?}");

    // Partition sizes: one customer's beyond the largest page, one status's too.
    let partition = |u: &str| {
        let pk = data::customer_key(u);
        data.items().filter(|i| attr(i, "PK") == Some(&pk)).count()
    };
    assert!(partition(data::BIG_CUSTOMER) > 100);
    assert_eq!(partition(data::EMPTY_CUSTOMER), 1);
    let by_status: Vec<usize> = data::STATUSES
        .iter()
        .map(|st| {
            data.orders
                .iter()
                .filter(|o| attr(o, "status") == Some(st))
                .count()
        })
        .collect();
    assert!(by_status.iter().all(|&c| c > 0), "{by_status:?}");
    assert!(by_status.iter().any(|&c| c > 100), "{by_status:?}");
    // Ties: orders of one customer at one millisecond, and of several at the shared moment.
    let mut moments = HashMap::new();
    for order in &data.orders {
        let key = (attr(order, "username"), attr(order, "placedAt"));
        *moments.entry(key).or_insert(0) += 1;
    }
    assert!(
        moments.values().any(|&c| c >= 2),
        "no tie within a customer"
    );
    let shared = data
        .orders
        .iter()
        .filter(|o| attr(o, "placedAt") == Some(data::SHARED_MOMENT))
        .count();
    assert!(shared >= 10, "{shared} orders at the shared moment");

    // Orders: unique ids, an item count that is the number of their items.
    let mut lines = HashMap::new();
    for line in &data.order_items {
        *lines.entry(attr(line, "orderId").unwrap()).or_insert(0) += 1;
    }
    let ids: BTreeSet<&str> = data
        .orders
        .iter()
        .map(|o| attr(o, "orderId").unwrap())
        .collect();
    assert_eq!(ids.len(), data.orders.len());
    for order in &data.orders {
        let id = attr(order, "orderId").unwrap();
        assert_eq!(
            lines.get(id).copied().unwrap_or(0),
            item_count(order),
            "order {id}"
        );
    }
    assert!(!data.junk.is_empty());
}
