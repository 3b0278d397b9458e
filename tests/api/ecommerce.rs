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
//!
//! This file holds what the tests share: the example on a fresh table ([`Fixture`]), each
//! entity's expected node computed from a raw item, and the walking of a connection. The tests
//! are in `ecommerce/`: the data set (`data_set.rs`), the walks (`walks.rs`), facets read from
//! keys (`facets.rs`), nodes and selections (`nodes.rs`), items that match no entity
//! (`junk.rs`), and bad input (`bad_input.rs`).

mod bad_input;
mod data_set;
mod facets;
mod junk;
mod nodes;
mod walks;

use std::collections::{BTreeSet, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, SecondsFormat};
use dynarelay::dynamo::Item;
use serde_json::{Value, json};

use crate::{
    ecommerce_data::{self as data, Dataset, Kind, attr},
    helpers::{ModelApp, merge, model_app, walk_pages},
};

const MODEL: &str = "examples/ecommerce/dynarelay.toml";

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
