//! Apollo Client pages through the union connections of the ecommerce example's item
//! collections (a customer's activity, an order's contents) to the ground truth, written raw
//! with keys that need escaping and junk that matches no member, and its checks fail on a
//! server that pages them wrongly.

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::Item;
use serde_json::json;

use super::{Case, attr, page_size, run_paging, summary, with};
use crate::helpers::{ModelApp, NodeRun, Running, ground_truth, model_app, put_plain};

/// The customer whose partition the union walks page through: the separator, a backslash and
/// unicode in the username, so that every key of the partition needs escaping.
const UNION_CUSTOMER: &str = "Zoë#Apollo\\";

/// The customer's address labels: separators, a backslash, unicode, prefixes of each other.
const UNION_LABELS: [&str; 7] = [
    "Home",
    "Home#2",
    "Home\\",
    "Work",
    "Büro",
    "#",
    "Ferienhaus 🏖",
];

/// How many orders the customer placed.
const UNION_ORDERS: usize = 60;

/// The order whose `contents` the walks page through (one of the customer's), and its items.
const CONTENTS_ORDER: usize = 1;
const CONTENTS_ITEMS: usize = 20;

/// Items in the customer's partition that match no entity, at its start, middle and end.
const PARTITION_JUNK: [&str; 3] = ["AAA#0", "JUNK#1", "ZZZ#9"];

/// `value` as a facet in a key of the ecommerce model: `\` becomes `\\` and `#` becomes `\#`.
/// Written here rather than taken from the server's template code, which this test checks.
fn facet(value: &str) -> String {
    value.replace('\\', "\\\\").replace('#', "\\#")
}

fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn raw_item(attributes: Vec<(&str, AttributeValue)>) -> Item {
    attributes
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

/// The customer's `i`th order id: some hold the separator and unicode, some end in a backslash.
fn union_order_id(i: usize) -> String {
    match i % 6 {
        1 => format!("ø#{i:02}"),
        4 => format!("o-{i:02}\\"),
        _ => format!("o-{i:02}"),
    }
}

/// The `i`th order's `placedAt`, ISO 8601 with milliseconds: every ninth order shares the
/// millisecond of the one before it, so that the order id breaks the tie in the sort key.
fn union_placed_at(i: usize) -> String {
    let start = chrono::DateTime::parse_from_rfc3339("2026-01-01T08:00:00Z").unwrap();
    let i = if i % 9 == 5 { i - 1 } else { i } as i64;
    let at = start + chrono::Duration::minutes(i * 433) + chrono::Duration::milliseconds(i * 7);
    at.with_timezone(&chrono::Utc)
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The `j`th item id of the contents order.
fn content_item_id(j: usize) -> String {
    match j % 5 {
        2 => format!("item#{j:02}"),
        4 => format!("ítem-{j:02}"),
        _ => format!("item-{j:02}"),
    }
}

/// The raw items of the union walks, as another program would write them to the ecommerce
/// table: the customer's profile, addresses and orders, the contents order's items, and junk.
fn union_items() -> Vec<Item> {
    let user = UNION_CUSTOMER;
    let pk = || s(format!("CUSTOMER#{}", facet(user)));
    let mut items = vec![raw_item(vec![
        ("PK", pk()),
        ("SK", pk()),
        ("username", s(user)),
        ("name", s("Zoë Apollo")),
        ("email", s("zoe.apollo@example.com")),
        ("joinedAt", s("2025-12-24T09:30:00.000Z")),
    ])];
    for (i, label) in UNION_LABELS.iter().enumerate() {
        items.push(raw_item(vec![
            ("PK", pk()),
            ("SK", s(format!("ADDRESS#{}", facet(label)))),
            ("username", s(user)),
            ("label", s(*label)),
            ("street", s(format!("{} Hauptstraße", i + 1))),
            ("city", s("Berlin")),
            ("country", s("DE")),
        ]));
    }
    const STATUSES: [&str; 4] = ["PLACED", "SHIPPED", "DELIVERED", "CANCELLED"];
    for i in 0..UNION_ORDERS {
        let (id, at, status) = (union_order_id(i), union_placed_at(i), STATUSES[i % 4]);
        let order_key = s(format!("ORDER#{}", facet(&id)));
        items.push(raw_item(vec![
            ("PK", pk()),
            ("SK", s(format!("ORDER#{}#{}", facet(&at), facet(&id)))),
            ("GSI1PK", order_key.clone()),
            ("GSI1SK", order_key),
            ("GSI2PK", s(format!("STATUS#{status}"))),
            ("GSI2SK", s(format!("{}#{}", facet(&at), facet(&id)))),
            ("username", s(user)),
            ("orderId", s(id)),
            ("placedAt", s(at)),
            ("status", s(status)),
            ("total", n(format!("{}.{:02}", 10 + i, (i * 37) % 100))),
            ("itemCount", n(1 + i % 5)),
        ]));
    }
    let order = union_order_id(CONTENTS_ORDER);
    for j in 0..CONTENTS_ITEMS {
        let item = content_item_id(j);
        let key = s(format!("ORDER#{}#ITEM#{}", facet(&order), facet(&item)));
        items.push(raw_item(vec![
            ("PK", key.clone()),
            ("SK", key),
            ("GSI1PK", s(format!("ORDER#{}", facet(&order)))),
            ("GSI1SK", s(format!("ITEM#{}", facet(&item)))),
            ("orderId", s(&order)),
            ("itemId", s(item)),
            ("product", s(format!("Product {j}"))),
            ("quantity", n(1 + j % 3)),
            ("price", n(format!("{}.99", j + 1))),
        ]));
    }
    for sk in PARTITION_JUNK {
        items.push(raw_item(vec![
            ("PK", pk()),
            ("SK", s(sk)),
            ("note", s("junk")),
        ]));
    }
    // Junk in the contents order's GSI1 partition, between its items and the order.
    items.push(raw_item(vec![
        ("PK", s("JUNK#contents")),
        ("SK", s("JUNK#contents")),
        ("GSI1PK", s(format!("ORDER#{}", facet(&order)))),
        ("GSI1SK", s("NOTE#1")),
        ("note", s("junk")),
    ]));
    items
}

/// The identities of `items` as union members, in their order: the type is the one whose
/// prefix `key` (the sort key the connection reads) starts with, as `members` lists them
/// (prefix, typename, identifying field). Items that match no member are left out and counted.
fn members(items: &[Item], key: &str, members: &[(&str, &str, &str)]) -> (Vec<String>, usize) {
    let mut junk = 0;
    let ids = items
        .iter()
        .filter_map(|item| {
            let sort = attr(item, key);
            let found = members.iter().find(|(p, _, _)| sort.starts_with(p));
            junk += usize::from(found.is_none());
            found.map(|(_, typename, field)| format!("{typename}|{}", attr(item, field)))
        })
        .collect();
    (ids, junk)
}

/// The ecommerce model on fresh tables, over a real socket, with [`union_items`] written
/// through the plain SDK, and the walks over its two union connections.
struct UnionFixture {
    server: Running,
    cases: Vec<Case>,
}

impl UnionFixture {
    async fn new() -> Self {
        let app = model_app("examples/ecommerce/dynarelay.toml").await;
        let table = app.table("ECommerce");
        put_plain(app.client(), &table, union_items()).await;
        let server = Running::serve(app.router.clone()).await;
        let mut cases = Vec::new();

        // Customer.activity, ASC (the default) and DESC: DynamoDB's Query of the partition.
        let pk = s(format!("CUSTOMER#{}", facet(UNION_CUSTOMER)));
        let activity = [
            ("ADDRESS#", "Address", "label"),
            ("CUSTOMER#", "Customer", "username"),
            ("ORDER#", "Order", "orderId"),
        ];
        let mut truths = Vec::new();
        for forward in [true, false] {
            let items = ground_truth(&app, &table, None, ("PK", pk.clone()), None, forward).await;
            let (truth, junk) = members(&items, "SK", &activity);
            assert_eq!(junk, PARTITION_JUNK.len(), "the junk is in the partition");
            truths.push(truth);
        }
        let (asc, desc) = (&truths[0], &truths[1]);
        assert_eq!(asc.len(), UNION_LABELS.len() + 1 + UNION_ORDERS);
        assert_eq!(
            asc.iter().rev().collect::<Vec<_>>(),
            desc.iter().collect::<Vec<_>>()
        );
        let kinds: Vec<&str> = asc.iter().map(|id| id.split('|').next().unwrap()).collect();
        let mut runs = kinds.clone();
        runs.dedup();
        assert_eq!(
            runs,
            ["Address", "Customer", "Order"],
            "addresses, profile, orders"
        );
        let by_user = json!({ "username": UNION_CUSTOMER });
        for (direction, size_arg) in [("forward", "first"), ("backward", "last")] {
            for size in [7, 1, 25] {
                cases.push(Case::full(
                    &format!("activity, {direction} by {size}"),
                    "customerActivity",
                    with(&by_user, json!({ size_arg: size })),
                    asc.clone(),
                ));
            }
            cases.push(Case::full(
                &format!("activity DESC, {direction} by 7"),
                "customerActivity",
                with(&by_user, json!({ "order": "DESC", size_arg: 7 })),
                desc.clone(),
            ));
        }

        // Order.contents through node(id:): DynamoDB's Query of the order's GSI1 partition.
        let order = union_order_id(CONTENTS_ORDER);
        let items = ground_truth(
            &app,
            &table,
            Some("GSI1"),
            ("GSI1PK", s(format!("ORDER#{}", facet(&order)))),
            None,
            true,
        )
        .await;
        let (truth, junk) = members(
            &items,
            "GSI1SK",
            &[
                ("ITEM#", "OrderItem", "itemId"),
                ("ORDER#", "Order", "orderId"),
            ],
        );
        assert_eq!(junk, 1, "the junk is in the order's GSI1 partition");
        assert_eq!(truth.len(), CONTENTS_ITEMS + 1);
        assert_eq!(truth.last(), Some(&format!("Order|{order}")));
        let id = Self::order_id(&app, &order).await;
        for (direction, size_arg) in [("forward", "first"), ("backward", "last")] {
            for size in [7, 1, 25] {
                cases.push(Case::full(
                    &format!("contents of {order}, {direction} by {size}"),
                    "orderContents",
                    json!({ "id": id, size_arg: size }),
                    truth.clone(),
                ));
            }
        }
        Self { server, cases }
    }

    /// The global id of the customer's order `order_id`, as the server gives it.
    async fn order_id(app: &ModelApp, order_id: &str) -> String {
        let response = app
            .graphql(
                "query($u: String!) { customer(username: $u) { orders(first: 100) {
                   nodes { id orderId } } } }",
                json!({ "u": UNION_CUSTOMER }),
            )
            .await;
        let nodes = response["data"]["customer"]["orders"]["nodes"]
            .as_array()
            .unwrap_or_else(|| panic!("{response}"));
        let order = nodes.iter().find(|o| o["orderId"] == order_id);
        order.unwrap_or_else(|| panic!("no order {order_id}: {response}"))["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn run(&self, fault: Option<&str>) -> NodeRun {
        run_paging(
            &self.server.url("/graphql"),
            "ecommerce",
            &self.cases,
            fault,
        )
        .await
    }
}

/// Apollo Client pages through the union connections of the ecommerce example's item
/// collections with `relayStylePagination` and `fetchMore`, its cache told the unions' and
/// `Node`'s `possibleTypes`: `Customer.activity` (addresses, the profile, orders; ASC by 1, 7
/// and 25 and DESC by 7) and `Order.contents` (the items, then the order; by 1, 7 and 25), each
/// forward and backward. Every walk ends with exactly DynamoDB's Query of the partition in its
/// cache, by `__typename` and identifying field, in key order: the raw items' keys (written
/// here, escaped by hand for a username, labels, order and item ids holding `#`, `\` and
/// unicode) and their types agree with the server's, and the junk in the partitions (first,
/// middle and last in `activity`, between the items and the order in `contents`) never shows,
/// with pages full and as few as the sizes allow.
///
/// Seen to fail: `apollo_union_paging_checks_fail_on_a_server_that_pages_wrongly` runs these
/// walks with responses corrupted in transit, with the activity cache keyed without `order`,
/// and with a cache not told the `possibleTypes`, and each fails with its own message.
#[tokio::test]
async fn apollo_pages_union_connections_to_dynamodbs_ground_truth() {
    let fixture = UnionFixture::new().await;
    let run = fixture.run(None).await;
    run.assert_success();
    let pages = summary(&run);
    assert_eq!(pages.len(), fixture.cases.len(), "{}", run.stdout);
    for (case, got) in fixture.cases.iter().zip(&pages) {
        assert_eq!(got["name"], case.name.as_str());
        assert_eq!(got["list"], json!(case.expected), "{}", case.name);
        assert_eq!(got["pages"], case.max_pages, "{}: {got}", case.name);
        assert_eq!(got["shortPages"], 0, "{}: {got}", case.name);
    }
}

/// The checks of `apollo-paging.mjs` catch wrong paging of a union connection too, and an
/// application cache that was not told the unions' `possibleTypes`.
///
/// Seen to fail: with the `possibleTypes` given whatever the fault, the `no-possible-types` run
/// passed and this test failed with "the client script passed where it must fail".
#[tokio::test]
async fn apollo_union_paging_checks_fail_on_a_server_that_pages_wrongly() {
    let fixture = UnionFixture::new().await;
    let walk = &fixture.cases[0];
    let (first, size) = (&walk.name, page_size(&walk.variables));
    assert_eq!(first, "activity, forward by 7");
    let (stop_early, stale, dropped, merged, untyped) = tokio::join!(
        fixture.run(Some("stop-early")),
        fixture.run(Some("stale-cursor")),
        fixture.run(Some("drop-edge")),
        fixture.run(Some("merged-variants")),
        fixture.run(Some("no-possible-types")),
    );
    stop_early
        .assert_failure_mentioning(&format!("MISMATCH: {first}"))
        .assert_failure_mentioning(&format!("missing {}:", walk.expected.len() - 2 * size));
    stale.assert_failure_mentioning(&format!(
        "DUPLICATE: {first}: page 3 repeats {} item(s)",
        size - 1
    ));
    dropped
        .assert_failure_mentioning(&format!("MISMATCH: {first}"))
        .assert_failure_mentioning("missing 1:");
    // `Customer.activity` keyed without `order`: the DESC walks overwrite the ASC list.
    merged.assert_failure_mentioning(&format!("RECHECK: {first}"));
    // Without possibleTypes the cache cannot answer `... on Node { id }` for a member.
    untyped.assert_failure_mentioning("UNION: ");
}
