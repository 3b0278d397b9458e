//! The e-commerce example (`examples/ecommerce/dynarelay.toml`) served end to end: a single-table
//! design. Customers, their addresses and their orders share a partition, told apart by their
//! sort-key prefixes; orders and their items share a partition of the overloaded index `GSI1`;
//! `GSI2` lists orders by status. Every key is rendered from a key template whose facets are
//! escaped, and the data set (`examples/ecommerce/data.rs`) is full of facet values that need it.
//!
//! Every connection is walked forward to the end and backward to the start (a Scan: forward
//! only), with page sizes from 1 to 100, and each walk must equal DynamoDB's own answer: a plain
//! SDK Query whose key condition is computed here, with the data set's own escaping, less the
//! items that match no entity, in the same order (a Scan: the same set). Nodes are compared
//! whole (`__typename` and every field), against values computed from the raw items.

use std::collections::{BTreeSet, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, FixedOffset, SecondsFormat};
use dynarelay::dynamo::Item;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};

use crate::{
    ecommerce_data::{self as data, Dataset, Kind, attr},
    helpers::{
        ModelApp, SortCond, error_code, ground_truth, merge, metric_sum, model_app, walk_pages,
    },
};

const MODEL: &str = "examples/ecommerce/dynarelay.toml";

/// The metric counting items read that match no entity.
const UNMATCHED: &str = "dynarelay_items_unmatched_total";

/// The example on a fresh table holding the data set.
struct Fixture {
    app: ModelApp,
    /// The table's full name.
    table: String,
    data: Dataset,
    /// The entity of each of the data set's items, by `(PK, SK)`.
    kinds: HashMap<(String, String), Kind>,
}

async fn ecommerce() -> Fixture {
    ecommerce_with(|_, _| true).await
}

/// The example on a fresh table holding the entity items of the data set that `keep` accepts,
/// and all its junk: writing the whole data set takes seconds, and most tests read only part.
async fn ecommerce_with(keep: impl Fn(Kind, &Item) -> bool) -> Fixture {
    let app = model_app(MODEL).await;
    let table = app.table(data::TABLE);
    let mut data = data::generate(data::SEED);
    data.retain(keep);
    data::write(&app.store, &table, &data).await.unwrap();
    let kinds = data.entities().map(|(k, i)| (key_of(i), k)).collect();
    Fixture {
        app,
        table,
        data,
        kinds,
    }
}

/// Everything but order items, which live in partitions of their own.
fn no_lines(kind: Kind, _: &Item) -> bool {
    kind != Kind::OrderItem
}

/// Everything but the items of orders other than `orders`.
fn lines_of(orders: &[String]) -> impl Fn(Kind, &Item) -> bool {
    move |kind, item| {
        kind != Kind::OrderItem || orders.iter().any(|o| attr(item, "orderId") == Some(o))
    }
}

impl Fixture {
    /// The nodes a connection must return for `items`, a ground-truth read: each entity item
    /// as [`expected`] has it, and the items that match no entity left out.
    fn nodes(&self, items: &[Item]) -> Vec<Value> {
        items
            .iter()
            .filter_map(|item| {
                let key = key_of(item);
                match self.kinds.get(&key) {
                    Some(kind) => Some(expected(*kind, item)),
                    None => {
                        assert!(
                            self.data.junk.iter().any(|j| key_of(j) == key),
                            "DynamoDB holds an item the data set does not: {item:?}"
                        );
                        None
                    }
                }
            })
            .collect()
    }

    /// The junk items among `items`.
    fn junk_in(&self, items: &[Item]) -> usize {
        items
            .iter()
            .filter(|i| !self.kinds.contains_key(&key_of(i)))
            .count()
    }
}

/// An order's `itemCount`.
fn item_count(order: &Item) -> usize {
    order["itemCount"].as_n().unwrap().parse().unwrap()
}

fn key_of(item: &Item) -> (String, String) {
    let part = |name| attr(item, name).unwrap_or_default().to_owned();
    (part("PK"), part("SK"))
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    rng.next_u64() % n
}

// ------------------------------------------------------------------ expected values

/// The fields a test selects of each entity (`id` and relations aside).
fn fields(kind: Kind) -> &'static str {
    match kind {
        Kind::Customer => "username name email joinedAt",
        Kind::Address => "username label street city postcode country",
        Kind::Order => "username orderId placedAt status total itemCount",
        Kind::OrderItem => "orderId itemId product quantity price",
    }
}

/// A node selection: `__typename` and the fields of one entity, or a fragment per member of a
/// union.
fn selection(kinds: &[Kind]) -> String {
    selection_with(kinds, "")
}

/// [`selection`] with `extra` fields (such as `id`) of every entity.
fn selection_with(kinds: &[Kind], extra: &str) -> String {
    match kinds {
        [kind] => format!("__typename {extra} {}", fields(*kind)),
        members => {
            let fragments: Vec<String> = members
                .iter()
                .map(|k| format!("... on {} {{ {extra} {} }}", k.typename(), fields(*k)))
                .collect();
            format!("__typename {}", fragments.join(" "))
        }
    }
}

/// What the API must answer for `item` of entity `kind`, computed from the raw attributes.
fn expected(kind: Kind, item: &Item) -> Value {
    let mut node = json!({ "__typename": kind.typename() });
    for field in fields(kind).split_whitespace() {
        node[field] = match (field, item.get(field)) {
            (_, None) => Value::Null,
            ("joinedAt" | "placedAt", Some(AttributeValue::S(t))) => json!(canonical(t)),
            ("total" | "price", Some(AttributeValue::N(n))) => json!(n),
            ("itemCount" | "quantity", Some(AttributeValue::N(n))) => {
                json!(n.parse::<i64>().unwrap())
            }
            (_, Some(AttributeValue::S(v))) => json!(v),
            (_, Some(other)) => panic!("{field} is {other:?}"),
        };
    }
    node
}

/// A time as the API writes every `DateTime` and the model stores `iso8601` facets: UTC,
/// milliseconds, `Z`.
fn canonical(time: &str) -> String {
    DateTime::parse_from_rfc3339(time)
        .unwrap_or_else(|e| panic!("{time}: {e}"))
        .to_utc()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The same moment written with the offset +05:30, as a client may send it.
fn with_offset(time: &str) -> String {
    DateTime::parse_from_rfc3339(time)
        .unwrap()
        .with_timezone(&FixedOffset::east_opt(5 * 3600 + 1800).unwrap())
        .to_rfc3339_opts(SecondsFormat::Millis, false)
}

// ------------------------------------------------------------------ walking

const PAGE_INFO: &str = "pageInfo { hasNextPage hasPreviousPage startCursor endCursor }";

/// The paging arguments every query declares and passes on.
const PAGING_VARS: &str = "$first: Int, $after: String, $last: Int, $before: String";
const PAGING_ARGS: &str = "first: $first, after: $after, last: $last, before: $before";

/// A connection under test: its query (taking `$first` and `$after`, and unless it scans
/// `$last` and `$before`), and where the connection sits in the response.
struct Conn {
    query: String,
    path: &'static [&'static str],
    scan: bool,
}

impl Conn {
    /// A connection field of `customer(username: $username)`, with `extra` variables and
    /// arguments.
    fn customer(field: &'static str, kinds: &[Kind], vars: &str, args: &str) -> Self {
        Self {
            query: format!(
                "query Page($username: String!, {PAGING_VARS}{vars}) {{
                   customer(username: $username) {{
                     {field}({PAGING_ARGS}{args}) {{
                       edges {{ cursor node {{ {} }} }} {PAGE_INFO}
                     }}
                   }}
                 }}",
                selection(kinds)
            ),
            path: match field {
                "addresses" => &["customer", "addresses"],
                "orders" => &["customer", "orders"],
                "activity" => &["customer", "activity"],
                other => panic!("no connection {other}"),
            },
            scan: false,
        }
    }

    /// A connection field of the order whose global id is `$id`, through `node(id:)`.
    fn order(field: &'static str, kinds: &[Kind]) -> Self {
        Self {
            query: format!(
                "query Page($id: ID!, {PAGING_VARS}) {{
                   node(id: $id) {{
                     ... on Order {{
                       {field}({PAGING_ARGS}) {{
                         edges {{ cursor node {{ {} }} }} {PAGE_INFO}
                       }}
                     }}
                   }}
                 }}",
                selection(kinds)
            ),
            path: match field {
                "items" => &["node", "items"],
                "contents" => &["node", "contents"],
                other => panic!("no connection {other}"),
            },
            scan: false,
        }
    }

    fn orders() -> Self {
        Self::customer(
            "orders",
            &[Kind::Order],
            ", $order: SortOrder, $placedFrom: DateTime, $placedUntil: DateTime, \
             $placedIn: String, $status: OrderStatus",
            ", order: $order, placedFrom: $placedFrom, placedUntil: $placedUntil, \
             placedIn: $placedIn, status: $status",
        )
    }

    fn activity() -> Self {
        Self::customer(
            "activity",
            &[Kind::Customer, Kind::Address, Kind::Order],
            ", $order: SortOrder",
            ", order: $order",
        )
    }

    fn addresses() -> Self {
        Self::customer("addresses", &[Kind::Address], "", "")
    }

    fn orders_by_status() -> Self {
        Self {
            query: format!(
                "query Page($status: OrderStatus!, {PAGING_VARS}, $order: SortOrder,
                    $placedFrom: DateTime, $placedUntil: DateTime) {{
                   ordersByStatus(status: $status, {PAGING_ARGS}, order: $order,
                       placedFrom: $placedFrom, placedUntil: $placedUntil) {{
                     edges {{ cursor node {{ {} }} }} {PAGE_INFO}
                   }}
                 }}",
                selection(&[Kind::Order])
            ),
            path: &["ordersByStatus"],
            scan: false,
        }
    }

    fn customers() -> Self {
        Self {
            query: format!(
                "query Page($first: Int, $after: String) {{
                   customers(first: $first, after: $after) {{
                     edges {{ cursor node {{ {} }} }} {PAGE_INFO}
                   }}
                 }}",
                selection(&[Kind::Customer])
            ),
            path: &["customers"],
            scan: true,
        }
    }
}

/// Walks `conn` with page size `size` in one direction, checking every page as
/// [`walk_pages`] does, and returns its nodes in connection order.
async fn walk(
    app: &ModelApp,
    conn: &Conn,
    vars: &Value,
    size: i64,
    forward: bool,
    label: &str,
) -> Vec<Value> {
    let page = |paging| app.graphql(&conn.query, merge(vars.clone(), paging));
    walk_pages(page, conn.path, size, forward, label).await
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

/// Walks `conn` with each of `sizes`, forward and (unless it scans) backward, and compares
/// each walk with `truth`: in order, or for a Scan as a set.
async fn walk_both_ways(
    app: &ModelApp,
    conn: &Conn,
    vars: &Value,
    truth: &[Value],
    sizes: &[i64],
    label: &str,
) {
    let directions: &[bool] = if conn.scan { &[true] } else { &[true, false] };
    for &size in sizes {
        for &forward in directions {
            let label = format!("{label}, size {size}, forward {forward}");
            let walked = walk(app, conn, vars, size, forward, &label).await;
            if conn.scan {
                assert_same_set(&walked, truth, &label);
            } else {
                assert_eq!(walked.len(), truth.len(), "{label}: {walked:#?}");
                assert_eq!(walked, truth, "{label}");
            }
        }
    }
}

fn assert_same_set(walked: &[Value], truth: &[Value], label: &str) {
    let walked_set: BTreeSet<String> = walked.iter().map(Value::to_string).collect();
    assert_eq!(walked_set.len(), walked.len(), "{label}: a node came twice");
    let truth_set: BTreeSet<String> = truth.iter().map(Value::to_string).collect();
    assert_eq!(walked_set, truth_set, "{label}");
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

/// The global ids of `username`'s orders, by order id.
async fn order_ids(app: &ModelApp, username: &str) -> HashMap<String, Value> {
    let query = format!(
        "query Page($username: String!, {PAGING_VARS}) {{
           customer(username: $username) {{
             orders({PAGING_ARGS}) {{ edges {{ cursor node {{ id orderId }} }} {PAGE_INFO} }}
           }}
         }}"
    );
    let page = |paging| app.graphql(&query, merge(json!({ "username": username }), paging));
    let label = format!("the ids of {username}'s orders");
    walk_pages(page, &["customer", "orders"], 100, true, &label)
        .await
        .into_iter()
        .map(|n| (n["orderId"].as_str().unwrap().to_owned(), n["id"].clone()))
        .collect()
}

// ------------------------------------------------------------------ 1. the data set

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

// ------------------------------------------------------------------ 2. the walks

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

// ------------------------------------------------------------------ 3. facets, nodes, junk

/// `item` without the attributes `names`.
fn without(mut item: Item, names: &[&str]) -> Item {
    for name in names {
        assert!(item.remove(*name).is_some(), "{name} in {item:?}");
    }
    item
}

/// Items written by another program may hold their facets only in their keys: the API reads
/// them back from there.
#[tokio::test]
async fn facets_are_read_back_from_the_keys_of_items_that_do_not_store_them() {
    let app = model_app(MODEL).await;
    let table = app.table(data::TABLE);
    let username = "key\\only#李";
    let (label, at) = ("Büro#1\\", data::SHARED_MOMENT);
    let customer = data::customer_item(username, "Kim Key", "kim@example.com", at);
    let address = data::address_item(username, label, "1 Key St", "Zürich", None, "CH");
    let shipped = data::order_item(username, "K#1\\", at, "SHIPPED", "12.5", 1);
    let placed = data::order_item(
        username,
        "K#2",
        "2026-11-24T00:00:00.001Z",
        "PLACED",
        "0",
        1,
    );
    let line = data::line_item("K#1\\", "I#1", "Kaffeemühle", 2, "6.25");
    let stored = vec![
        without(customer.clone(), &["username"]),
        without(address.clone(), &["username", "label"]),
        without(shipped.clone(), &["username", "orderId", "placedAt"]),
        // The status too, read back from `GSI2PK`.
        without(
            placed.clone(),
            &["username", "orderId", "placedAt", "status"],
        ),
        without(line.clone(), &["orderId", "itemId"]),
    ];
    app.store.put_items(&table, stored).await.unwrap();

    let query = format!(
        "query($u: String!) {{ customer(username: $u) {{ id {c}
            addresses(first: 10) {{ nodes {{ id {a} }} }}
            orders(first: 10) {{ nodes {{ id {o} items(first: 10) {{ nodes {{ id {i} }} }} }} }}
            activity(first: 10) {{ nodes {{ {activity} }} }} }} }}",
        c = selection(&[Kind::Customer]),
        a = selection(&[Kind::Address]),
        o = selection(&[Kind::Order]),
        i = selection(&[Kind::OrderItem]),
        activity = selection(&[Kind::Customer, Kind::Address, Kind::Order]),
    );
    let response = app.graphql(&query, json!({ "u": username })).await;
    assert!(response.get("errors").is_none(), "{response}");
    let got = &response["data"]["customer"];
    let strip = |v: &Value, also: &[&str]| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("id");
        for field in also {
            v.as_object_mut().unwrap().remove(*field);
        }
        v
    };
    let want_customer = expected(Kind::Customer, &customer);
    let want_address = expected(Kind::Address, &address);
    let want_orders = [
        expected(Kind::Order, &shipped),
        expected(Kind::Order, &placed),
    ];
    let want_line = expected(Kind::OrderItem, &line);
    assert_eq!(
        strip(got, &["addresses", "orders", "activity"]),
        want_customer
    );
    assert_eq!(strip(&got["addresses"]["nodes"][0], &[]), want_address);
    for (k, want) in want_orders.iter().enumerate() {
        assert_eq!(
            strip(&got["orders"]["nodes"][k], &["items"]),
            *want,
            "order {k}"
        );
    }
    assert_eq!(
        strip(&got["orders"]["nodes"][0]["items"]["nodes"][0], &[]),
        want_line
    );
    assert_eq!(
        got["activity"]["nodes"],
        json!([want_address, want_customer, want_orders[0], want_orders[1]]),
        "{response}"
    );

    // Through the indexes, and refetched by id.
    let response = app
        .graphql(
            &format!(
                "{{ ordersByStatus(status: SHIPPED, first: 10) {{ nodes {{ {} }} }} }}",
                selection(&[Kind::Order])
            ),
            json!({}),
        )
        .await;
    assert_eq!(
        response["data"]["ordersByStatus"]["nodes"],
        json!([want_orders[0]]),
        "{response}"
    );
    let order_id = got["orders"]["nodes"][0]["id"].clone();
    let response = app
        .graphql(
            &format!(
                "query($id: ID!) {{ node(id: $id) {{ ... on Order {{ contents(first: 10) {{ nodes {{ {} }} }} }} }} }}",
                selection(&[Kind::Order, Kind::OrderItem])
            ),
            json!({ "id": order_id }),
        )
        .await;
    assert_eq!(
        response["data"]["node"]["contents"]["nodes"],
        json!([want_line, want_orders[0]]),
        "{response}"
    );
    let fragments = selection(&[Kind::Customer, Kind::Address, Kind::Order, Kind::OrderItem]);
    for (id, want) in [
        (&got["id"], &want_customer),
        (&got["addresses"]["nodes"][0]["id"], &want_address),
        (&got["orders"]["nodes"][1]["id"], &want_orders[1]),
        (
            &got["orders"]["nodes"][0]["items"]["nodes"][0]["id"],
            &want_line,
        ),
    ] {
        let response = app
            .graphql(
                &format!("query($id: ID!) {{ node(id: $id) {{ {fragments} }} }}"),
                json!({ "id": id }),
            )
            .await;
        assert_eq!(response["data"]["node"], *want, "{response}");
    }
}

/// A fresh app on the example, with the table's name, the profile of customer `ana` and one
/// order of hers (neither written yet).
async fn ana_and_an_order() -> (ModelApp, String, Item, Item) {
    let app = model_app(MODEL).await;
    let table = app.table(data::TABLE);
    let at = data::SHARED_MOMENT;
    let ana = data::customer_item("ana", "Ana", "ana@example.com", at);
    let order = data::order_item("ana", "O-1", at, "PLACED", "5", 1);
    (app, table, ana, order)
}

/// An item whose stored copy of a facet disagrees with its key (written by other code) is what
/// its keys say: typed by them and showing their facets, in a page that reads only the selected
/// attributes, one that reads whole items (a relation is selected) and a refetch by id alike.
#[tokio::test]
async fn a_facet_copy_that_disagrees_with_its_key_is_read_as_the_key_says() {
    let (app, table, ana, order) = ana_and_an_order().await;
    let mut copied = order.clone();
    for (name, value) in [
        ("username", "bob"),
        ("orderId", "O-2"),
        ("placedAt", "2020-01-01T00:00:00.000Z"),
    ] {
        copied.insert(name.to_owned(), s(value));
    }
    app.store
        .put_items(&table, vec![ana.clone(), copied])
        .await
        .unwrap();
    let want = expected(Kind::Order, &order);
    let fields = selection(&[Kind::Order]);
    let query = format!(
        "{{ customer(username: \"ana\") {{
             orders(first: 10) {{ nodes {{ id {fields} }} }}
             whole: orders(first: 10) {{ nodes {{ {fields} customer {{ username }} }} }}
             activity(first: 10) {{ nodes {{ {} }} }} }}
           ordersByStatus(status: PLACED, first: 10) {{ nodes {{ {fields} }} }} }}",
        selection(&[Kind::Customer, Kind::Order]),
    );
    let response = app.graphql(&query, json!({})).await;
    assert!(response.get("errors").is_none(), "{response}");
    let d = &response["data"];
    let mut projected = d["customer"]["orders"]["nodes"][0].clone();
    let id = projected.as_object_mut().unwrap().remove("id").unwrap();
    assert_eq!(projected, want, "{response}");
    let mut whole = want.clone();
    whole["customer"] = json!({ "username": "ana" });
    assert_eq!(
        d["customer"]["whole"]["nodes"],
        json!([whole]),
        "{response}"
    );
    assert_eq!(
        d["customer"]["activity"]["nodes"],
        json!([expected(Kind::Customer, &ana), want]),
        "{response}"
    );
    assert_eq!(d["ordersByStatus"]["nodes"], json!([want]), "{response}");
    let refetched = app
        .graphql(
            &format!("query($id: ID!) {{ node(id: $id) {{ ... on Order {{ {fields} }} }} }}"),
            json!({ "id": id }),
        )
        .await;
    assert_eq!(refetched["data"]["node"], want, "{refetched}");
}

/// Nodes met in the collections come back the same through `node(id:)` and `nodes(ids:)`, with
/// their own `__typename`; an object has one id whichever connection it came through.
#[tokio::test]
async fn nodes_from_collections_refetch_as_the_same_objects() {
    let customers = ["ana", data::BIG_CUSTOMER, "ana\\", "李雷"];
    let orders: Vec<String> = data::generate(data::SEED)
        .orders
        .iter()
        .filter(|o| customers.contains(&attr(o, "username").unwrap()))
        .map(|o| attr(o, "orderId").unwrap().to_owned())
        .collect();
    let f = ecommerce_with(lines_of(&orders)).await;
    let every = [Kind::Customer, Kind::Address, Kind::Order, Kind::OrderItem];
    let fragments = selection_with(&every, "id");
    let activity = selection_with(&[Kind::Customer, Kind::Address, Kind::Order], "id");
    let contents = selection_with(&[Kind::Order, Kind::OrderItem], "id");
    let order = selection_with(&[Kind::Order], "id");
    let mut originals: Vec<Value> = Vec::new();
    let mut order_ids_seen: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut note = |node: &Value| {
        if node["__typename"] == "Order" {
            order_ids_seen
                .entry(node["orderId"].as_str().unwrap().to_owned())
                .or_default()
                .insert(node["id"].to_string());
        }
    };
    for username in customers {
        let response = f
            .app
            .graphql(
                &format!(
                    "query($u: String!) {{ customer(username: $u) {{
                       activity(first: 100) {{ nodes {{ {activity} }} }}
                       orders(first: 5) {{ nodes {{ __typename id orderId
                         contents(first: 10) {{ nodes {{ {contents} }} }} }} }} }} }}"
                ),
                json!({ "u": username }),
            )
            .await;
        assert!(response.get("errors").is_none(), "{response}");
        let customer = &response["data"]["customer"];
        for node in customer["activity"]["nodes"].as_array().unwrap() {
            note(node);
            originals.push(node.clone());
        }
        for order in customer["orders"]["nodes"].as_array().unwrap().iter() {
            note(order);
            for node in order["contents"]["nodes"].as_array().unwrap() {
                note(node);
                originals.push(node.clone());
            }
        }
    }
    let response = f
        .app
        .graphql(
            &format!("{{ ordersByStatus(status: SHIPPED, first: 100) {{ nodes {{ {order} }} }} }}"),
            json!({}),
        )
        .await;
    for node in response["data"]["ordersByStatus"]["nodes"]
        .as_array()
        .unwrap()
    {
        note(node);
    }
    let kinds: BTreeSet<&str> = originals
        .iter()
        .map(|n| n["__typename"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    for (order_id, ids) in &order_ids_seen {
        assert_eq!(ids.len(), 1, "order {order_id:?} has several ids: {ids:?}");
    }

    for original in &originals {
        let response = f
            .app
            .graphql(
                &format!("query($id: ID!) {{ node(id: $id) {{ {fragments} }} }}"),
                json!({ "id": original["id"] }),
            )
            .await;
        assert_eq!(response["data"]["node"], *original, "{response}");
    }
    let ids: Vec<Value> = originals.iter().map(|n| n["id"].clone()).collect();
    let distinct: BTreeSet<String> = ids.iter().map(Value::to_string).collect();
    // `nodes(ids:)` takes 100 ids at most.
    for (ids, originals) in ids.chunks(100).zip(originals.chunks(100)) {
        let response = f
            .app
            .graphql(
                &format!("query($ids: [ID!]!) {{ nodes(ids: $ids) {{ {fragments} }} }}"),
                json!({ "ids": ids }),
            )
            .await;
        assert_eq!(response["data"]["nodes"], json!(originals), "{response}");
    }
    assert!(distinct.len() > 50, "{} distinct nodes", distinct.len());
}

/// A page reads only the attributes its selection needs (and the keys): the same connection
/// selected under aliases with different fields, each read ahead of the customer's GetItem with
/// its own attributes, answers every alias with exactly its fields, equal to the whole nodes cut
/// down to them; a selection that reaches a relation, or an item collection's fragments, get
/// theirs as well.
#[tokio::test]
async fn every_selection_of_a_connection_gets_its_own_fields() {
    let f = ecommerce_with(no_lines).await;
    let order = fields(Kind::Order);
    let activity = selection(&[Kind::Customer, Kind::Address, Kind::Order]);
    for username in [data::BIG_CUSTOMER, "ana\\", "李雷"] {
        let response = f
            .app
            .graphql(
                &format!(
                    "query($u: String!) {{ customer(username: $u) {{
                       whole: orders(first: 30) {{ edges {{ cursor node {{ {order} id }} }} }}
                       totals: orders(first: 30) {{ edges {{ cursor node {{ total }} }} }}
                       placed: orders(first: 30) {{ nodes {{ id placedAt orderId }} }}
                       owners: orders(first: 30) {{ nodes {{ status customer {{ username name }} }} }}
                       activity(first: 100) {{ nodes {{ {activity} }} }}
                       kinds: activity(first: 100) {{ nodes {{ __typename
                         ... on Order {{ status }} ... on Address {{ city }} }} }} }} }}"
                ),
                json!({ "u": username }),
            )
            .await;
        assert!(response.get("errors").is_none(), "{response}");
        let customer = &response["data"]["customer"];
        let list = |path: [&str; 2]| customer[path[0]][path[1]].as_array().unwrap().clone();
        let whole = list(["whole", "edges"]);
        let truth: Vec<&Item> = f.data.orders_of(username).collect();
        assert!(whole.len() >= 2, "{username}: {} orders", whole.len());
        assert_eq!(whole.len(), truth.len().min(30), "{username}");
        let name = f
            .data
            .customers
            .iter()
            .find(|c| attr(c, "username") == Some(username))
            .and_then(|c| attr(c, "name"))
            .unwrap();
        let (totals, placed, owners) = (
            list(["totals", "edges"]),
            list(["placed", "nodes"]),
            list(["owners", "nodes"]),
        );
        assert_eq!(
            (totals.len(), placed.len(), owners.len()),
            (whole.len(), whole.len(), whole.len())
        );
        for (i, edge) in whole.iter().enumerate() {
            let node = &edge["node"];
            let item = truth
                .iter()
                .find(|o| node["orderId"] == attr(o, "orderId").unwrap())
                .unwrap_or_else(|| panic!("{node} is none of {username}'s orders"));
            let mut bare = node.clone();
            bare.as_object_mut().unwrap().remove("id");
            bare["__typename"] = json!("Order");
            assert_eq!(bare, expected(Kind::Order, item));
            assert_eq!(
                totals[i],
                json!({ "cursor": edge["cursor"], "node": { "total": node["total"] } })
            );
            assert_eq!(
                placed[i],
                json!({ "id": node["id"], "placedAt": node["placedAt"], "orderId": node["orderId"] })
            );
            assert_eq!(
                owners[i],
                json!({ "status": node["status"], "customer": { "username": username, "name": name } })
            );
        }
        let (all, kinds) = (list(["activity", "nodes"]), list(["kinds", "nodes"]));
        assert_eq!(all.len(), kinds.len(), "{username}");
        let mut typenames = BTreeSet::new();
        for (node, cut) in all.iter().zip(&kinds) {
            let typename = node["__typename"].as_str().unwrap();
            typenames.insert(typename);
            let mut want = json!({ "__typename": typename });
            match typename {
                "Order" => want["status"] = node["status"].clone(),
                "Address" => want["city"] = node["city"].clone(),
                _ => {}
            }
            assert_eq!(*cut, want, "{username}");
        }
        assert_eq!(typenames.len(), 3, "{username}: {typenames:?}");
    }
}

/// An item in the shared table that matches no entity is left out of every connection, never
/// an error, and counted in `dynarelay_items_unmatched_total`.
#[tokio::test]
async fn items_matching_no_entity_are_skipped_and_counted() {
    let big = data::generate(data::SEED);
    let first_order = attr(big.orders_of(data::BIG_CUSTOMER).next().unwrap(), "orderId")
        .unwrap()
        .to_owned();
    let f = ecommerce_with(lines_of(std::slice::from_ref(&first_order))).await;
    let before = metric_sum(&f.app.metrics().await, UNMATCHED).unwrap_or(0.0);
    let mut junk_read = 0;
    let customer_cases = [
        ("ana", Conn::activity(), None),
        ("ana", Conn::orders(), Some("ORDER#")),
        (data::BIG_CUSTOMER, Conn::activity(), None),
        (data::BIG_CUSTOMER, Conn::orders(), Some("ORDER#")),
        ("Zoë", Conn::addresses(), Some("ADDRESS#")),
        ("trailing\\", Conn::addresses(), Some("ADDRESS#")),
        ("trailing\\", Conn::activity(), None),
    ];
    for (username, conn, prefix) in &customer_cases {
        let sort = prefix.map(|p| ("SK", SortCond::Prefix(s(p))));
        let pk = ("PK", s(&data::customer_key(username)));
        let items = ground_truth(&f.app, &f.table, None, pk, sort, true).await;
        let junk = f.junk_in(&items);
        assert!(junk > 0, "{username:?} {:?}: no junk to skip", conn.path);
        junk_read += junk;
        let truth = f.nodes(&items);
        let vars = json!({ "username": username });
        let label = format!("{username:?} {:?} with junk", conn.path);
        walk_both_ways(&f.app, conn, &vars, &truth, &[3, 100], &label).await;
    }
    let pk = ("GSI2PK", s(&data::status_partition("SHIPPED")));
    let items = ground_truth(&f.app, &f.table, Some("GSI2"), pk, None, true).await;
    assert!(f.junk_in(&items) > 0, "SHIPPED: no junk to skip");
    junk_read += f.junk_in(&items);
    let truth = f.nodes(&items);
    let vars = json!({ "status": "SHIPPED", "order": "ASC" });
    let conn = Conn::orders_by_status();
    walk_both_ways(&f.app, &conn, &vars, &truth, &[3, 100], "SHIPPED with junk").await;

    let id = order_ids(&f.app, data::BIG_CUSTOMER).await[&first_order].clone();
    let vars = json!({ "id": id });
    let pk = ("GSI1PK", s(&data::order_partition(&first_order)));
    let conns = [
        (Conn::order("items", &[Kind::OrderItem]), Some("ITEM#")),
        (
            Conn::order("contents", &[Kind::Order, Kind::OrderItem]),
            None,
        ),
    ];
    for (conn, prefix) in &conns {
        let sort = prefix.map(|p| ("GSI1SK", SortCond::Prefix(s(p))));
        let items = ground_truth(&f.app, &f.table, Some("GSI1"), pk.clone(), sort, true).await;
        assert!(f.junk_in(&items) > 0, "{:?}: no junk to skip", conn.path);
        junk_read += f.junk_in(&items);
        let truth = f.nodes(&items);
        let label = format!("order {first_order:?} {:?} with junk", conn.path);
        walk_both_ways(&f.app, conn, &vars, &truth, &[3, 100], &label).await;
    }
    let all = f.app.scan_all(&f.table).await;
    let truth: Vec<Value> = f
        .nodes(&all)
        .into_iter()
        .filter(|n| n["__typename"] == "Customer")
        .collect();
    walk_both_ways(
        &f.app,
        &Conn::customers(),
        &json!({}),
        &truth,
        &[7, 100],
        "customers with junk",
    )
    .await;

    let exposition = f.app.metrics().await;
    let after = metric_sum(&exposition, UNMATCHED)
        .unwrap_or_else(|| panic!("no {UNMATCHED} in /metrics:\n{exposition}"));
    // Every walk read each junk item of its range at least once.
    assert!(
        after - before >= junk_read as f64,
        "{UNMATCHED} rose by {} over walks reading {junk_read} junk items",
        after - before
    );
}

/// Items whose keys have the shape of an entity's templates but whose facets do not fit it match
/// no entity either: a profile (`PK = SK = CUSTOMER#{username}`) whose two keys name different
/// customers, and an order whose `placedAt` facet is not a time. Each is skipped and counted,
/// in the collection, the single-type connection and the index it sits in.
#[tokio::test]
async fn items_that_fit_a_templates_shape_but_not_its_facets_match_no_entity() {
    let (app, table, ana, order) = ana_and_an_order().await;
    app.store
        .put_items(&table, vec![ana.clone(), order.clone()])
        .await
        .unwrap();
    let customer = json!([expected(Kind::Customer, &ana)]);
    let placed = json!([expected(Kind::Order, &order)]);
    let query = format!(
        "{{ customer(username: \"ana\") {{ activity(first: 10) {{ nodes {{ {} }} }}
             orders(first: 10) {{ nodes {{ {order} }} }} }}
           customers(first: 10) {{ nodes {{ {} }} }}
           ordersByStatus(status: PLACED, first: 10) {{ nodes {{ {order} }} }} }}",
        selection(&[Kind::Customer, Kind::Address, Kind::Order]),
        selection(&[Kind::Customer]),
        order = selection(&[Kind::Order]),
    );
    let cases = [
        (
            "a profile whose keys name two customers",
            Item::from([
                ("PK".to_owned(), s(&data::customer_key("ana"))),
                ("SK".to_owned(), s(&data::customer_key("bob"))),
                ("name".to_owned(), s("Bob")),
                ("email".to_owned(), s("bob@example.com")),
                ("joinedAt".to_owned(), s(data::SHARED_MOMENT)),
            ]),
        ),
        (
            "an order placed `yesterday`",
            Item::from([
                ("PK".to_owned(), s(&data::customer_key("ana"))),
                ("SK".to_owned(), s("ORDER#yesterday#O-9")),
                ("GSI2PK".to_owned(), s(&data::status_partition("PLACED"))),
                ("GSI2SK".to_owned(), s("yesterday#O-9")),
                ("total".to_owned(), AttributeValue::N("5".into())),
                ("itemCount".to_owned(), AttributeValue::N("1".into())),
            ]),
        ),
    ];
    // Every case is tried, and the test fails naming each that went wrong.
    let mut failures = Vec::new();
    for (label, item) in cases {
        let key = key_of(&item);
        app.store.put_items(&table, vec![item]).await.unwrap();
        let before = metric_sum(&app.metrics().await, UNMATCHED).unwrap_or(0.0);
        let response = app.graphql(&query, json!({})).await;
        let d = &response["data"];
        let activity = json!([customer[0], placed[0]]);
        let after = metric_sum(&app.metrics().await, UNMATCHED).unwrap_or(0.0);
        let checks = [
            ("no error", response.get("errors").is_none()),
            ("activity", d["customer"]["activity"]["nodes"] == activity),
            ("orders", d["customer"]["orders"]["nodes"] == placed),
            ("customers", d["customers"]["nodes"] == customer),
            ("ordersByStatus", d["ordersByStatus"]["nodes"] == placed),
            ("counted", after > before),
        ];
        let failed: Vec<&str> = checks
            .iter()
            .filter(|(_, ok)| !ok)
            .map(|(check, _)| *check)
            .collect();
        if !failed.is_empty() {
            failures.push(format!("{label}: wrong {failed:?}: {response}"));
        }
        app.client()
            .delete_item()
            .table_name(&table)
            .key("PK", s(&key.0))
            .key("SK", s(&key.1))
            .send()
            .await
            .unwrap();
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ------------------------------------------------------------------ 4. bad input

#[tokio::test]
async fn backward_ranges_and_cursors_of_other_partitions_or_connections_are_bad_user_input() {
    let f = ecommerce_with(no_lines).await;
    let orders = Conn::orders();
    let (later, earlier) = ("2026-11-23T10:15:00.001Z", data::SHARED_MOMENT);
    let response = f
        .app
        .graphql(
            &orders.query,
            json!({ "username": "ana", "first": 5, "placedFrom": later, "placedUntil": earlier }),
        )
        .await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
    let response = f
        .app
        .graphql(
            &Conn::orders_by_status().query,
            json!({ "status": "PLACED", "first": 5, "placedFrom": later, "placedUntil": earlier }),
        )
        .await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
    // A range and a prefix together.
    let response = f
        .app
        .graphql(
            &orders.query,
            json!({ "username": "ana", "first": 5, "placedFrom": earlier, "placedIn": "2026" }),
        )
        .await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");

    // A cursor of ana's orders: good on ana's orders, refused elsewhere.
    let page = f
        .app
        .graphql(&orders.query, json!({ "username": "ana", "first": 2 }))
        .await;
    let cursor = page["data"]["customer"]["orders"]["pageInfo"]["endCursor"].clone();
    assert!(cursor.is_string(), "{page}");
    let response = f
        .app
        .graphql(
            &orders.query,
            json!({ "username": "ana", "first": 2, "after": cursor }),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    let elsewhere = [
        (&orders, json!({ "username": "Zoë" }), "Zoë's orders"),
        (&orders, json!({ "username": "ana#" }), "ana#'s orders"),
        (
            &Conn::activity(),
            json!({ "username": "ana" }),
            "ana's activity",
        ),
        (
            &Conn::addresses(),
            json!({ "username": "ana" }),
            "ana's addresses",
        ),
        (
            &Conn::orders_by_status(),
            json!({ "status": "PLACED" }),
            "ordersByStatus",
        ),
    ];
    for (conn, vars, label) in elsewhere {
        for paging in [
            json!({ "first": 2, "after": cursor }),
            json!({ "last": 2, "before": cursor }),
        ] {
            let response = f
                .app
                .graphql(&conn.query, merge(vars.clone(), paging))
                .await;
            assert_eq!(
                error_code(&response),
                Some("BAD_USER_INPUT"),
                "{label}: {response}"
            );
        }
    }
}
