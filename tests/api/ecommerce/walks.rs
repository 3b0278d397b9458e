//! Every connection of the example walked forward to the end and backward to the start (a Scan:
//! forward only) against DynamoDB's own answer: a customer's addresses, activity and orders
//! (with every argument combination), an order's items and contents through the overloaded
//! index, orders by status through the second index, and the customers' Scan.

use std::collections::HashMap;

use chrono::{DateTime, FixedOffset, SecondsFormat};
use dynarelay::dynamo::Item;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};

use super::{
    Conn, canonical, ecommerce, ecommerce_with, expected, item_count, lines_of, no_lines,
    order_ids, s, walk_both_ways,
};
use crate::{
    ecommerce_data::{self as data, Dataset, Kind, attr},
    helpers::{SortCond, ground_truth, merge},
};

fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    rng.next_u64() % n
}

/// The same moment written with the offset +05:30, as a client may send it.
fn with_offset(time: &str) -> String {
    DateTime::parse_from_rfc3339(time)
        .unwrap()
        .with_timezone(&FixedOffset::east_opt(5 * 3600 + 1800).unwrap())
        .to_rfc3339_opts(SecondsFormat::Millis, false)
}

/// Page sizes for a walk over `len` nodes: 100 (the largest), the exact length (where
/// `hasNextPage` must turn false exactly) and a random size from 1 to `len / 3` (at least 12);
/// `thorough` adds 1, 2, 3, 7 and 50 and draws the random size from 1 to 100. Sizes between
/// `len` and 100 are left out: they walk as `len` and 100 do, in one page.
fn page_sizes(rng: &mut ChaCha8Rng, len: usize, thorough: bool) -> Vec<i64> {
    let len = (len as i64).clamp(1, 100);
    let mut sizes = vec![100, len];
    if thorough {
        sizes.extend([1, 2, 3, 7, 50, 1 + below(rng, 100) as i64]);
    } else {
        sizes.push(1 + below(rng, (len as u64 / 3).max(12)) as i64);
    }
    sizes.retain(|&s| s <= len || s == 100);
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// The walks of a test covered something: most results non-empty, and one longer than the
/// largest page.
fn assert_coverage(lens: &[usize], label: &str) {
    let non_empty = lens.iter().filter(|&&l| l > 0).count();
    let max = lens.iter().copied().max().unwrap_or(0);
    assert!(
        non_empty * 2 >= lens.len() && max > 100,
        "{label}: the data leaves the walks trivial: {lens:?}"
    );
}

/// Whether `order` (an `order` argument, `None` when omitted) reads in ascending key order,
/// given the connection's default.
fn ascending(order: Option<&str>, default_asc: bool) -> bool {
    order.map_or(default_asc, |o| o == "ASC")
}

/// The customers whose partitions are walked: every named one (escapes, prefixes, the largest
/// and the empty partition) and the plain one with the most orders.
fn walked_customers(data: &Dataset) -> Vec<String> {
    let plain = data
        .customers
        .iter()
        .filter_map(|c| attr(c, "username"))
        .filter(|u| u.starts_with("shopper."))
        .max_by_key(|u| data.orders_of(u).count())
        .unwrap();
    data::NAMED_CUSTOMERS
        .iter()
        .map(|(u, _, _)| (*u).to_owned())
        .chain([plain.to_owned()])
        .collect()
}

/// Customers whose orders are walked with every argument combination.
const COMBO_CUSTOMERS: [&str; 4] = [data::BIG_CUSTOMER, "ana\\", "trailing\\", "Zoë"];

/// Customers walked with every page size.
const THOROUGH: [&str; 3] = [data::BIG_CUSTOMER, "ana\\", "trailing\\"];

#[tokio::test]
async fn customer_addresses_and_activity_walk_both_ways_to_dynamodbs_answer() {
    let f = ecommerce_with(no_lines).await;
    let mut rng = ChaCha8Rng::seed_from_u64(1601);
    let mut lens = Vec::new();
    let (addresses, activity) = (Conn::addresses(), Conn::activity());
    for username in walked_customers(&f.data) {
        let thorough = THOROUGH.contains(&username.as_str());
        let pk = ("PK", s(&data::customer_key(&username)));
        let vars = json!({ "username": username });

        let items = ground_truth(
            &f.app,
            &f.table,
            None,
            pk.clone(),
            Some(("SK", SortCond::Prefix(s("ADDRESS#")))),
            true,
        )
        .await;
        let truth = f.nodes(&items);
        lens.push(truth.len());
        let sizes = page_sizes(&mut rng, truth.len(), thorough);
        let label = format!("addresses of {username:?}");
        walk_both_ways(&f.app, &addresses, &vars, &truth, &sizes, &label).await;

        let orders: &[Option<&str>] = if username == data::BIG_CUSTOMER {
            &[None, Some("ASC"), Some("DESC")]
        } else {
            &[None, Some("DESC")]
        };
        for &order in orders {
            let items = ground_truth(
                &f.app,
                &f.table,
                None,
                pk.clone(),
                None,
                ascending(order, true),
            )
            .await;
            let truth = f.nodes(&items);
            lens.push(truth.len());
            let sizes = page_sizes(&mut rng, truth.len(), thorough && order.is_none());
            let label = format!("activity of {username:?}, order {order:?}");
            let vars = merge(vars.clone(), json!({ "order": order }));
            walk_both_ways(&f.app, &activity, &vars, &truth, &sizes, &label).await;
        }
    }
    assert_coverage(&lens, "Customer.addresses and Customer.activity");
}

/// One argument combination of `Customer.orders`.
#[derive(Debug, Clone, Default)]
struct OrderArgs {
    order: Option<&'static str>,
    placed_from: Option<String>,
    placed_until: Option<String>,
    placed_in: Option<&'static str>,
    status: Option<&'static str>,
}

impl OrderArgs {
    fn vars(&self) -> Value {
        json!({
            "order": self.order,
            "placedFrom": self.placed_from,
            "placedUntil": self.placed_until,
            "placedIn": self.placed_in,
            "status": self.status,
        })
    }

    /// Whether an order placed at `placed_at` (canonical) is in the range or prefix.
    fn admits(&self, placed_at: &str) -> bool {
        self.placed_in.is_none_or(|p| placed_at.starts_with(p))
            && self
                .placed_from
                .as_deref()
                .is_none_or(|t| placed_at >= canonical(t).as_str())
            && self
                .placed_until
                .as_deref()
                .is_none_or(|t| placed_at <= canonical(t).as_str())
    }
}

/// The sort-key condition for a range over `placedAt` (inclusive, to the millisecond) on keys
/// that are `prefix`, the time, `#` and more: from `prefix + from` to `prefix + until + "$"`
/// (`$` follows `#`, so every key of that last moment is in). A bound left out is the first or
/// last key starting with `prefix`, or none when the prefix is empty.
fn placed_range(prefix: &str, from: Option<&str>, until: Option<&str>) -> SortCond {
    let given = |bound: Option<String>, open: String| {
        bound
            .or_else(|| (!prefix.is_empty()).then_some(open))
            .map(|b| s(&b))
    };
    let lo = from.map(|t| format!("{prefix}{}", canonical(t)));
    let hi = until.map(|t| format!("{prefix}{}$", canonical(t)));
    // `prefix` ends in `#`: `$` after its stem is past every key starting with it.
    let past = format!("{}$", prefix.strip_suffix('#').unwrap_or(prefix));
    SortCond::Range(given(lo, prefix.to_owned()), given(hi, past))
}

#[tokio::test]
async fn customer_orders_walk_both_ways_to_dynamodbs_answer_for_every_argument_combination() {
    let f = ecommerce_with(no_lines).await;
    let conn = Conn::orders();
    let mut rng = ChaCha8Rng::seed_from_u64(1602);
    let mut lens = Vec::new();
    let shared = data::SHARED_MOMENT.to_owned();
    for username in walked_customers(&f.data) {
        let mut times: Vec<&str> = f
            .data
            .orders_of(&username)
            .map(|o| attr(o, "placedAt").unwrap())
            .collect();
        times.sort_unstable();
        // Exact placing times as bounds (inclusive), written with another offset.
        let at = |i: usize| {
            times
                .get(i.min(times.len().saturating_sub(1)))
                .map(|t| with_offset(t))
        };
        let mut combos = vec![
            OrderArgs::default(),
            OrderArgs {
                order: Some("DESC"),
                ..OrderArgs::default()
            },
            OrderArgs {
                order: Some("ASC"),
                ..OrderArgs::default()
            },
            OrderArgs {
                placed_in: Some("2026-11"),
                ..OrderArgs::default()
            },
            OrderArgs {
                order: Some("DESC"),
                placed_in: Some("2026-11-23"),
                ..OrderArgs::default()
            },
            OrderArgs {
                placed_in: Some("2027"),
                ..OrderArgs::default()
            },
            OrderArgs {
                placed_from: at(1),
                placed_until: at(times.len().saturating_sub(2).max(1)),
                ..OrderArgs::default()
            },
            OrderArgs {
                order: Some("DESC"),
                placed_from: Some(with_offset(&shared)),
                ..OrderArgs::default()
            },
            OrderArgs {
                placed_until: Some(shared.clone()),
                ..OrderArgs::default()
            },
            OrderArgs {
                order: Some("DESC"),
                placed_from: Some(shared.clone()),
                placed_until: Some(with_offset(&shared)),
                ..OrderArgs::default()
            },
            OrderArgs {
                status: Some("SHIPPED"),
                ..OrderArgs::default()
            },
            OrderArgs {
                order: Some("DESC"),
                placed_in: Some("2026"),
                status: Some("DELIVERED"),
                ..OrderArgs::default()
            },
            OrderArgs {
                placed_from: at(times.len() / 2),
                status: Some("PLACED"),
                ..OrderArgs::default()
            },
        ];
        // The sort-key conditions do not depend on the partition: every combination for a few
        // customers, the order alone for the others.
        if !COMBO_CUSTOMERS.contains(&username.as_str()) {
            combos.truncate(2);
        }
        for (c, args) in combos.iter().enumerate() {
            let sort = match args.placed_in {
                Some(p) => SortCond::Prefix(s(&format!("ORDER#{}", data::escape(p)))),
                None => placed_range(
                    "ORDER#",
                    args.placed_from.as_deref(),
                    args.placed_until.as_deref(),
                ),
            };
            let items = ground_truth(
                &f.app,
                &f.table,
                None,
                ("PK", s(&data::customer_key(&username))),
                Some(("SK", sort)),
                ascending(args.order, true),
            )
            .await;
            let truth: Vec<Value> = f
                .nodes(&items)
                .into_iter()
                .filter(|o| args.status.is_none_or(|st| o["status"] == st))
                .collect();
            // The key condition computed here selects what the arguments say.
            for order in &truth {
                let placed_at = order["placedAt"].as_str().unwrap();
                assert!(args.admits(placed_at), "{args:?} read {order}");
            }
            lens.push(truth.len());
            let thorough = c == 0 && THOROUGH.contains(&username.as_str());
            let sizes = page_sizes(&mut rng, truth.len(), thorough);
            let vars = merge(json!({ "username": username }), args.vars());
            let label = format!("orders of {username:?}, {args:?}");
            walk_both_ways(&f.app, &conn, &vars, &truth, &sizes, &label).await;
        }
    }
    assert_coverage(&lens, "Customer.orders");
}

#[tokio::test]
async fn order_items_and_contents_walk_the_overloaded_index_both_ways() {
    // Every odd order id (the bait pair among them) and the plain orders with the most items;
    // the first few with every page size.
    let all = data::generate(data::SEED);
    let mut plain: Vec<&Item> = all
        .orders
        .iter()
        .filter(|o| attr(o, "orderId").unwrap().starts_with("O-0"))
        .collect();
    plain.sort_by_key(|o| std::cmp::Reverse(item_count(o)));
    let chosen: Vec<String> = data::BAIT_ORDERS
        .iter()
        .chain(
            data::ODD_ORDER_IDS
                .iter()
                .filter(|o| !data::BAIT_ORDERS.contains(o)),
        )
        .copied()
        .chain(plain.iter().take(3).map(|o| attr(o, "orderId").unwrap()))
        .map(str::to_owned)
        .collect();
    let thorough = |order_id: &str| {
        data::BAIT_ORDERS.contains(&order_id) || order_id == "#" || order_id.starts_with("O-0")
    };
    let f = ecommerce_with(lines_of(&chosen)).await;
    let mut rng = ChaCha8Rng::seed_from_u64(1603);
    let mut lens = Vec::new();
    let (items_conn, contents) = (
        Conn::order("items", &[Kind::OrderItem]),
        Conn::order("contents", &[Kind::Order, Kind::OrderItem]),
    );
    let chosen: Vec<&Item> = chosen
        .iter()
        .map(|id| {
            f.data
                .orders
                .iter()
                .find(|o| attr(o, "orderId") == Some(id))
                .unwrap()
        })
        .collect();
    let mut ids = HashMap::new();
    for order in &chosen {
        let username = attr(order, "username").unwrap();
        if !ids.contains_key(attr(order, "orderId").unwrap()) {
            ids.extend(order_ids(&f.app, username).await);
        }
    }
    for order in chosen {
        let order_id = attr(order, "orderId").unwrap();
        let vars = json!({ "id": ids[order_id] });
        let pk = ("GSI1PK", s(&data::order_partition(order_id)));
        let items = ground_truth(
            &f.app,
            &f.table,
            Some("GSI1"),
            pk.clone(),
            Some(("GSI1SK", SortCond::Prefix(s("ITEM#")))),
            true,
        )
        .await;
        let truth = f.nodes(&items);
        assert_eq!(truth.len(), item_count(order), "order {order_id:?}");
        lens.push(truth.len());
        let sizes = page_sizes(&mut rng, truth.len(), thorough(order_id));
        let label = format!("items of order {order_id:?}");
        walk_both_ways(&f.app, &items_conn, &vars, &truth, &sizes, &label).await;

        let items = ground_truth(&f.app, &f.table, Some("GSI1"), pk, None, true).await;
        let truth = f.nodes(&items);
        assert_eq!(truth.last(), Some(&expected(Kind::Order, order)));
        lens.push(truth.len());
        let sizes = page_sizes(&mut rng, truth.len(), thorough(order_id));
        let label = format!("contents of order {order_id:?}");
        walk_both_ways(&f.app, &contents, &vars, &truth, &sizes, &label).await;
    }
    // The bait pair: each order has its own item, though unescaped keys would collide.
    for (order_id, item_id) in data::BAIT_ORDERS.iter().zip(data::BAIT_ITEMS) {
        let response = f
            .app
            .graphql(
                &items_conn.query,
                json!({ "id": ids[*order_id], "first": 100 }),
            )
            .await;
        let nodes: Vec<&str> = response["data"]["node"]["items"]["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{response}"))
            .iter()
            .map(|e| e["node"]["itemId"].as_str().unwrap())
            .collect();
        assert!(nodes.contains(&item_id), "order {order_id:?}: {response}");
    }
    assert!(lens.iter().all(|&l| l > 0), "{lens:?}");
}

#[tokio::test]
async fn orders_by_status_walk_the_second_index_both_ways() {
    let f = ecommerce_with(no_lines).await;
    let conn = Conn::orders_by_status();
    let mut rng = ChaCha8Rng::seed_from_u64(1604);
    let mut lens = Vec::new();
    let shared = data::SHARED_MOMENT;
    // (order, placedFrom, placedUntil)
    let combos: [(Option<&str>, Option<String>, Option<String>); 6] = [
        (None, None, None),
        (Some("ASC"), None, None),
        (
            None,
            Some("2026-11-01T00:00:00+01:00".into()),
            Some(with_offset(shared)),
        ),
        (Some("ASC"), Some(shared.into()), None),
        (Some("DESC"), None, Some(with_offset(shared))),
        (None, Some(shared.into()), Some(shared.into())),
    ];
    for status in data::STATUSES {
        for (c, (order, from, until)) in combos.iter().enumerate() {
            let sort = Some((
                "GSI2SK",
                placed_range("", from.as_deref(), until.as_deref()),
            ));
            let items = ground_truth(
                &f.app,
                &f.table,
                Some("GSI2"),
                ("GSI2PK", s(&data::status_partition(status))),
                sort,
                ascending(*order, false),
            )
            .await;
            let truth = f.nodes(&items);
            let args = OrderArgs {
                placed_from: from.clone(),
                placed_until: until.clone(),
                ..OrderArgs::default()
            };
            for node in &truth {
                assert_eq!(node["status"], status, "{node}");
                assert!(args.admits(node["placedAt"].as_str().unwrap()), "{node}");
            }
            lens.push(truth.len());
            let sizes = page_sizes(&mut rng, truth.len(), c == 0 && status == "SHIPPED");
            let vars = json!({ "status": status, "order": order, "placedFrom": from, "placedUntil": until });
            let label = format!("{status} orders, order {order:?}, {from:?}..{until:?}");
            walk_both_ways(&f.app, &conn, &vars, &truth, &sizes, &label).await;
        }
    }
    assert_coverage(&lens, "ordersByStatus");
    // The shared moment is a tie across customers, in one status at least.
    let ties = data::STATUSES.iter().any(|st| {
        f.data
            .orders
            .iter()
            .filter(|o| attr(o, "status") == Some(st) && attr(o, "placedAt") == Some(shared))
            .count()
            >= 3
    });
    assert!(ties);
}

#[tokio::test]
async fn the_customers_scan_walks_forward_to_every_customer_once() {
    let f = ecommerce().await;
    let mut rng = ChaCha8Rng::seed_from_u64(1605);
    let all = f.app.scan_all(&f.table).await;
    let truth: Vec<Value> = f
        .nodes(&all)
        .into_iter()
        .filter(|n| n["__typename"] == "Customer")
        .collect();
    assert_eq!(truth.len(), f.data.customers.len());
    let sizes = page_sizes(&mut rng, truth.len(), true);
    walk_both_ways(
        &f.app,
        &Conn::customers(),
        &json!({}),
        &truth,
        &sizes,
        "customers",
    )
    .await;
    // Scans page forward only.
    let response = f
        .app
        .graphql("{ customers(last: 2) { edges { cursor } } }", json!({}))
        .await;
    assert!(response.get("errors").is_some(), "{response}");
}
