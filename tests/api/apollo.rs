//! Apollo Client 4 in Node (`tests/clients`) against a real server: `relayStylePagination` paging
//! through every connection of the shop, and through the union connections of the ecommerce
//! example's item collections, to the ground truth read straight from DynamoDB, and Automatic
//! Persisted Queries through Apollo's `PersistedQueryLink`.
//!
//! The ground truth here comes from plain SDK `Query` and `Scan` calls on the tables, never from
//! the server's store code. The scripts also take a `--fault` that corrupts what the server sends
//! in one specific way; the `..._fail_...` tests run them and require each to fail with its own
//! message, which is how every check of the scripts has been seen to fail.

use std::collections::{BTreeMap, HashSet};

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::{dynamo::Item, http::HttpSettings, pagination::PageLimits};
use serde_json::{Value, json};

use crate::shop_data::{self, SeedSpec};

use crate::helpers::{
    ModelApp, NodeRun, Running, TestApp, ground_truth, model_app, run_node, unique_prefix,
};

/// Page limits of the server whose read budget runs out: a filtered page may evaluate only 12
/// items, so a ~5% filter mostly gets pages with no or one match, each with `hasNextPage`.
fn tight_budget() -> PageLimits {
    PageLimits::new(4, 10, 12).unwrap()
}

/// The string value of an `S` or `N` attribute.
fn attr<'a>(item: &'a Item, name: &str) -> &'a str {
    match item.get(name) {
        Some(AttributeValue::S(v) | AttributeValue::N(v)) => v,
        other => panic!("attribute {name} is {other:?} in {item:?}"),
    }
}

/// An exact decimal with at most two fraction digits, in hundredths.
fn cents(number: &str) -> i64 {
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    assert!(
        frac.len() <= 2,
        "{number} has more than two fraction digits"
    );
    whole.parse::<i64>().unwrap() * 100 + format!("{frac:0<2}").parse::<i64>().unwrap()
}

/// The identity strings the script builds from what Apollo's cache holds.
fn purchase_id(item: &Item) -> String {
    let [user, at, amount, status] =
        ["userId", "purchasedAt", "amount", "status"].map(|a| attr(item, a));
    format!("{user}|{at}|{amount}|{status}")
}

fn product_id(item: &Item) -> String {
    let [sku, category, price] = ["sku", "category", "price"].map(|a| attr(item, a));
    format!("{sku}|{category}|{price}")
}

fn user_id(item: &Item) -> String {
    format!("{}|{}", attr(item, "userId"), attr(item, "email"))
}

/// The status and `minAmount` whose filter keeps closest to 5% of `purchases`.
fn sparse_filter(purchases: &[Item]) -> (String, String) {
    let mut best: Option<(i64, String, String)> = None;
    for status in ["PENDING", "PAID", "SHIPPED", "REFUNDED"] {
        let amounts: HashSet<&str> = purchases.iter().map(|p| attr(p, "amount")).collect();
        for min in amounts {
            let kept = purchases
                .iter()
                .filter(|p| attr(p, "status") == status && cents(attr(p, "amount")) >= cents(min))
                .count() as i64;
            // Distance from 5%, in units of 1/(20 * len), so that it stays an integer.
            let distance = (kept * 20 - purchases.len() as i64).abs();
            let better = best
                .as_ref()
                .is_none_or(|(d, s, m)| (distance, status, min) < (*d, s.as_str(), m.as_str()));
            if better {
                best = Some((distance, status.to_owned(), min.to_owned()));
            }
        }
    }
    let (_, status, min) = best.unwrap();
    (status, min)
}

fn matches_filter(purchase: &Item, status: &str, min: &str) -> bool {
    attr(purchase, "status") == status && cents(attr(purchase, "amount")) >= cents(min)
}

/// One walk for the script: a connection, its variables (with `first` or `last`), and the
/// ground truth in connection order.
struct Case {
    name: String,
    connection: &'static str,
    variables: Value,
    expected: Vec<String>,
    /// The most pages the walk may take.
    max_pages: usize,
    /// Every page but the last must be full.
    full_pages: bool,
}

impl Case {
    /// A walk on a server with a roomy read budget: full pages, exactly `ceil(n / size)` of them.
    fn full(name: &str, connection: &'static str, variables: Value, expected: Vec<String>) -> Self {
        let size = page_size(&variables);
        Self {
            name: name.to_owned(),
            connection,
            max_pages: expected.len().div_ceil(size).max(1),
            variables,
            expected,
            full_pages: true,
        }
    }

    fn to_json(&self) -> Value {
        let unique: HashSet<&String> = self.expected.iter().collect();
        assert_eq!(
            unique.len(),
            self.expected.len(),
            "{}: ground truth repeats",
            self.name
        );
        json!({
            "name": self.name,
            "connection": self.connection,
            "variables": self.variables,
            "expected": self.expected,
            "maxPages": self.max_pages,
            "fullPages": self.full_pages,
        })
    }
}

fn page_size(variables: &Value) -> usize {
    variables["first"]
        .as_u64()
        .or_else(|| variables["last"].as_u64())
        .unwrap() as usize
}

fn with(variables: &Value, extra: Value) -> Value {
    let mut merged = variables.clone();
    for (k, v) in extra.as_object().unwrap() {
        merged[k] = v.clone();
    }
    merged
}

/// The seeded demo data set and the walks over it.
struct Fixture {
    app: TestApp,
    /// Walks for a server with default limits.
    roomy: Vec<Case>,
    /// Filtered walks for a server with [`tight_budget`].
    tight: Vec<Case>,
}

impl Fixture {
    async fn new() -> Self {
        let app = TestApp::spawn().await;
        let data = shop_data::generate(&SeedSpec::DEMO);
        shop_data::write(&app.store, app.tables(), &data)
            .await
            .unwrap();
        let tables = app.tables();
        let mut roomy = Vec::new();

        // User.purchases of the user with the most purchases: plain, ~5% filtered, and DESC.
        let user = &data.users[8].user_id;
        let asc = app
            .query_all(&tables.purchases, None, ("userId", user), true)
            .await;
        let desc = app
            .query_all(&tables.purchases, None, ("userId", user), false)
            .await;
        assert_eq!(asc.len(), shop_data::SPECIAL_COUNTS[8]);
        let ids = |items: &[Item], f: fn(&Item) -> String| items.iter().map(f).collect::<Vec<_>>();
        let by_user = json!({ "userId": user });
        for (label, vars, truth, size) in [
            ("", json!({}), &asc, 25),
            (" DESC", json!({ "order": "DESC" }), &desc, 30),
        ] {
            let vars = with(&by_user, vars);
            let truth = ids(truth, purchase_id);
            roomy.push(Case::full(
                &format!("user purchases{label}, forward"),
                "userPurchases",
                with(&vars, json!({ "first": size })),
                truth.clone(),
            ));
            roomy.push(Case::full(
                &format!("user purchases{label}, backward"),
                "userPurchases",
                with(&vars, json!({ "last": size })),
                truth,
            ));
        }
        let (status, min_amount) = sparse_filter(&asc);
        let filtered: Vec<String> = asc
            .iter()
            .filter(|p| matches_filter(p, &status, &min_amount))
            .map(purchase_id)
            .collect();
        let share = filtered.len() as f64 / asc.len() as f64;
        assert!(
            (0.03..=0.08).contains(&share),
            "status {status} and minAmount {min_amount} keep {share:.3} of the purchases"
        );
        let filter = with(
            &by_user,
            json!({ "status": status, "minAmount": min_amount }),
        );
        let mut tight = Vec::new();
        for (direction, size_arg) in [("forward", "first"), ("backward", "last")] {
            let size = 4;
            let vars = with(&filter, json!({ size_arg: size }));
            let name = format!("user purchases filtered to {share:.3}, {direction}");
            roomy.push(Case::full(
                &name,
                "userPurchases",
                vars.clone(),
                filtered.clone(),
            ));
            // Under the tight budget every page but the last either is full or has evaluated at
            // least a budget's worth of items, which bounds the number of pages.
            tight.push(Case {
                name: format!("{name}, read budget {}", tight_budget().read_budget()),
                connection: "userPurchases",
                variables: vars,
                max_pages: asc.len().div_ceil(tight_budget().read_budget())
                    + filtered.len().div_ceil(size)
                    + 1,
                expected: filtered.clone(),
                full_pages: false,
            });
        }

        // Product.purchases (the BySku index) of the most bought product, both orders.
        let mut bought: BTreeMap<&str, usize> = BTreeMap::new();
        for p in &data.purchases {
            *bought.entry(p.sku.as_str()).or_default() += 1;
        }
        let (sku, _) = bought.iter().max_by_key(|(sku, n)| (**n, **sku)).unwrap();
        let sku = *sku;
        for (label, forward, order) in [("", true, "ASC"), (" DESC", false, "DESC")] {
            let truth = ids(
                &app.query_all(&tables.purchases, Some("BySku"), ("sku", sku), forward)
                    .await,
                purchase_id,
            );
            assert!(truth.len() > 50, "{sku} has {} purchases", truth.len());
            let vars = json!({ "sku": sku, "order": order });
            for (direction, size_arg) in [("forward", "first"), ("backward", "last")] {
                roomy.push(Case::full(
                    &format!("product purchases{label}, {direction}"),
                    "productPurchases",
                    with(&vars, json!({ size_arg: 15 })),
                    truth.clone(),
                ));
            }
        }

        // products(category:) (the ByCategory index) of the category with the most products at
        // one price, both orders, and a price range.
        let products = app.scan_all(&tables.products).await;
        let mut at_price: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for p in &products {
            *at_price
                .entry((attr(p, "category"), attr(p, "price")))
                .or_default() += 1;
        }
        let ((category, _), ties) = at_price
            .iter()
            .max_by_key(|((c, _), n)| (**n, std::cmp::Reverse(*c)))
            .unwrap();
        assert!(*ties > 1, "no category has two products at one price");
        let category = *category;
        let asc = app
            .query_all(
                &tables.products,
                Some("ByCategory"),
                ("category", category),
                true,
            )
            .await;
        let desc = app
            .query_all(
                &tables.products,
                Some("ByCategory"),
                ("category", category),
                false,
            )
            .await;
        for (label, order, truth) in [("", "ASC", &asc), (" DESC", "DESC", &desc)] {
            let vars = json!({ "category": category, "order": order });
            for (direction, size_arg, size) in [("forward", "first", 2), ("backward", "last", 3)] {
                roomy.push(Case::full(
                    &format!("products{label}, {direction}"),
                    "products",
                    with(&vars, json!({ size_arg: size })),
                    ids(truth, product_id),
                ));
            }
        }
        let mut prices: Vec<&str> = asc.iter().map(|p| attr(p, "price")).collect();
        prices.dedup();
        assert!(prices.len() >= 4, "{category} has prices {prices:?}");
        let (min, max) = (prices[1], prices[prices.len() - 2]);
        let in_range: Vec<String> = asc
            .iter()
            .filter(|p| (cents(min)..=cents(max)).contains(&cents(attr(p, "price"))))
            .map(product_id)
            .collect();
        let vars = json!({ "category": category, "minPrice": min, "maxPrice": max });
        for (direction, size_arg) in [("forward", "first"), ("backward", "last")] {
            roomy.push(Case::full(
                &format!("products priced {min} to {max}, {direction}"),
                "products",
                with(&vars, json!({ size_arg: 2 })),
                in_range.clone(),
            ));
        }

        // users (a Scan), forward only.
        let users = ids(&app.scan_all(&tables.users).await, user_id);
        assert_eq!(users.len(), data.users.len());
        roomy.push(Case::full(
            "users, forward",
            "users",
            json!({ "first": 45 }),
            users,
        ));

        Self { app, roomy, tight }
    }

    /// Runs `apollo-paging.mjs` with `cases` against `url`.
    /// A server with the default limits, and one whose read budget runs out.
    async fn servers(&self) -> (Running, Running) {
        let store = &self.app.store;
        let roomy = Running::start(store.clone(), HttpSettings::default()).await;
        let tight =
            Running::start_with(store.clone(), tight_budget(), HttpSettings::default()).await;
        (roomy, tight)
    }

    async fn run(&self, url: &str, cases: &[Case], fault: Option<&str>) -> NodeRun {
        run_paging(url, "shop", cases, fault).await
    }
}

/// Runs `apollo-paging.mjs` with `cases` against `url`, a server of `model` (the script's name
/// for it: `shop` or `ecommerce`).
async fn run_paging(url: &str, model: &str, cases: &[Case], fault: Option<&str>) -> NodeRun {
    let plan = json!({
        "model": model,
        "cases": cases.iter().map(Case::to_json).collect::<Vec<_>>(),
    });
    let path = std::env::temp_dir().join(format!("dynarelay-apollo-{}.json", unique_prefix()));
    std::fs::write(&path, plan.to_string()).unwrap();
    let plan_path = path.to_str().unwrap();
    let mut args = vec![url, plan_path];
    if let Some(fault) = fault {
        args.extend(["--fault", fault]);
    }
    let run = run_node("apollo-paging.mjs", &args, &[]).await;
    let _ = std::fs::remove_file(&path);
    run
}

/// The script's summary: per case, its page count, items, pages short of full or empty (the
/// last page not counted), and the final list.
fn summary(run: &NodeRun) -> Vec<Value> {
    let line = run.stdout.lines().last().unwrap_or_default();
    let parsed: Value = serde_json::from_str(line)
        .unwrap_or_else(|_| panic!("no summary on stdout:\n{}", run.stdout));
    parsed["cases"].as_array().unwrap().clone()
}

/// Apollo Client pages through every connection with `relayStylePagination` and `fetchMore`,
/// forward and (except `users`) backward, plain, ~5% filtered, DESC and by price range, and ends
/// with exactly DynamoDB's list in its cache, pages full and as few as the sizes allow. On a
/// server whose read budget runs out, the filtered walks get short and empty pages that still
/// continue, and end with the same list.
///
/// Seen to fail: `apollo_paging_checks_fail_on_a_server_that_pages_wrongly` runs this walk with
/// responses corrupted in transit (`hasNextPage` false too early, a cursor that moves back, a
/// lost edge, empty pages that keep their cursor, page cursors taken from edges only, and
/// cache keys without the filter arguments), and each fails with its own message.
#[tokio::test]
async fn apollo_pages_every_connection_to_dynamodbs_ground_truth() {
    let fixture = Fixture::new().await;
    let (roomy, tight) = fixture.servers().await;

    let run = fixture
        .run(&roomy.url("/graphql"), &fixture.roomy, None)
        .await;
    run.assert_success();
    let pages = summary(&run);
    assert_eq!(pages.len(), fixture.roomy.len(), "{}", run.stdout);
    for (case, got) in fixture.roomy.iter().zip(&pages) {
        assert_eq!(got["list"], json!(case.expected), "{}", case.name);
        assert_eq!(got["pages"], case.max_pages, "{}: {got}", case.name);
        assert_eq!(got["shortPages"], 0, "{}: {got}", case.name);
    }

    let run = fixture
        .run(&tight.url("/graphql"), &fixture.tight, None)
        .await;
    run.assert_success();
    let pages = summary(&run);
    assert_eq!(pages.len(), fixture.tight.len(), "{}", run.stdout);
    for (case, got) in fixture.tight.iter().zip(&pages) {
        assert_eq!(got["list"], json!(case.expected), "{}", case.name);
        let (short, empty) = (got["shortPages"].as_u64(), got["emptyPages"].as_u64());
        assert!(
            short > Some(0) && empty > Some(0),
            "{}: the budget should have cut pages short, some to nothing: {got}",
            case.name
        );
    }
}

/// The paging checks of `apollo-paging.mjs` catch a server that pages wrongly: each `--fault`
/// corrupts the responses in one way, and the walk must fail with the matching message.
///
/// Seen to fail: with the script's per-page checks (DUPLICATE, and CACHE: the cache holds the
/// previous list plus the page) turned off, the `stale-cursor` walk passed, because
/// `relayStylePagination` cuts its list at the `after` cursor and so hides a page that re-reads
/// items; this test then failed with "the client script passed where it must fail".
#[tokio::test]
async fn apollo_paging_checks_fail_on_a_server_that_pages_wrongly() {
    let fixture = Fixture::new().await;
    let (roomy, tight) = fixture.servers().await;
    let (roomy_url, tight_url) = (roomy.url("/graphql"), tight.url("/graphql"));
    let walk = &fixture.roomy[0];
    let (first, size) = (&walk.name, page_size(&walk.variables));
    assert_eq!(first, "user purchases, forward");
    let (stop_early, stale, dropped, stall, edge_cursors, merged) = tokio::join!(
        fixture.run(&roomy_url, &fixture.roomy, Some("stop-early")),
        fixture.run(&roomy_url, &fixture.roomy, Some("stale-cursor")),
        fixture.run(&roomy_url, &fixture.roomy, Some("drop-edge")),
        fixture.run(&roomy_url, &fixture.roomy, Some("stall")),
        fixture.run(&tight_url, &fixture.tight, Some("edge-cursors")),
        fixture.run(&roomy_url, &fixture.roomy, Some("merged-variants")),
    );
    // hasNextPage false on page 2: the list ends early.
    stop_early
        .assert_failure_mentioning(&format!("MISMATCH: {first}"))
        .assert_failure_mentioning(&format!("missing {}:", walk.expected.len() - 2 * size));
    // Page 2's endCursor is its startCursor: page 3 repeats what the cache holds.
    stale.assert_failure_mentioning(&format!(
        "DUPLICATE: {first}: page 3 repeats {} item(s)",
        size - 1
    ));
    // Page 2 loses its second edge.
    dropped
        .assert_failure_mentioning(&format!("MISMATCH: {first}"))
        .assert_failure_mentioning("missing 1:");
    // From page 3, empty pages that hand back the cursor they were given.
    stall.assert_failure_mentioning(&format!("STALL: {first}: page 3 has no edges"));
    // Cursors only from edges: a page that spent its budget without a match has none, and Apollo
    // either has no cursor at all or falls back to the last edge's, re-reading the same items.
    assert!(!edge_cursors.success, "{edge_cursors:?}");
    assert!(
        ["NO_CURSOR: ", "STALL: "]
            .iter()
            .any(|tag| edge_cursors.stderr.contains(tag)),
        "{edge_cursors:?}"
    );
    // `User.purchases` keyed without its arguments: the DESC and filtered walks overwrite the
    // plain list of the same user.
    merged.assert_failure_mentioning(&format!("RECHECK: {first}"));
}

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
        for item in union_items() {
            app.client()
                .put_item()
                .table_name(&table)
                .set_item(Some(item))
                .send()
                .await
                .expect("writing a raw item");
        }
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

/// A few users to page through, on a server answering Apollo persisted queries.
async fn apq_server(http: HttpSettings) -> (TestApp, Running) {
    let app = TestApp::spawn().await;
    for i in 0..5 {
        app.put_user(&format!("apq-user-{i}")).await;
    }
    let server = Running::start(app.store.clone(), http).await;
    (app, server)
}

/// Apollo's `PersistedQueryLink` (SHA-256 from node:crypto) works against the server, with
/// hashes over POST and over GET: an unknown hash gets `PersistedQueryNotFound` (code
/// `PERSISTED_QUERY_NOT_FOUND`), the retry with the full query registers it, and the next
/// execution sends the hash alone and gets the same data as a plain request. With GET hashes,
/// mutations still go over POST and run from their hash once registered.
///
/// Seen to fail: before the server supported persisted queries, the first hash-only request got
/// a `BAD_USER_INPUT` syntax error and the script failed with "the first execution failed";
/// `apollo_apq_checks_fail_on_a_server_without_persisted_queries` runs the script against a
/// server with them turned off and with responses faked as a server that forgets hashes, does
/// not support them, or errs on a known hash.
#[tokio::test]
async fn apollo_persisted_query_link_registers_then_sends_hashes_alone() {
    let (_app, server) = apq_server(HttpSettings::default()).await;
    let run = run_node("apollo-apq.mjs", &[&server.url("/graphql")], &[]).await;
    run.assert_success();
    let line = run.stdout.lines().last().unwrap_or_default();
    let got: Value = serde_json::from_str(line).unwrap();
    assert_eq!(
        got,
        json!({ "query, hashes over POST": 3, "query, hashes over GET": 3, "mutations": 2 }),
        "{}",
        run.stdout
    );
}

/// The checks of `apollo-apq.mjs` catch a server without working persisted queries.
///
/// Seen to fail: each faked server fails the script at the check named below. A server with
/// persisted queries turned off answers the first hash with `PERSISTED_QUERY_NOT_SUPPORTED`, and
/// the script fails at its first check.
#[tokio::test]
async fn apollo_apq_checks_fail_on_a_server_without_persisted_queries() {
    let (_app, server) = apq_server(HttpSettings::default()).await;
    let url = server.url("/graphql");
    let fault = |name| {
        let url = url.clone();
        async move { run_node("apollo-apq.mjs", &[url.as_str(), "--fault", name], &[]).await }
    };
    let (forget, unsupported, hash_error) =
        tokio::join!(fault("forget"), fault("unsupported"), fault("hash-error"));
    // Every hash gets PersistedQueryNotFound: Apollo sends the full query every time.
    forget.assert_failure_mentioning(
        "APQ: query, hashes over POST, request 3: expected 200 with data and no errors",
    );
    // PersistedQueryNotSupported: Apollo turns hashes off for good.
    unsupported.assert_failure_mentioning(
        "APQ: query, hashes over POST, request 1: an unknown hash must get PersistedQueryNotFound",
    );
    // A registered hash answered with an error: the execution fails.
    hash_error
        .assert_failure_mentioning("APQ: query, hashes over POST: the second execution failed");

    // A real server with persisted queries turned off fails the protocol checks...
    let (_app, off) = apq_server(HttpSettings {
        persisted_queries: 0,
        ..HttpSettings::default()
    })
    .await;
    run_node("apollo-apq.mjs", &[&off.url("/graphql")], &[])
        .await
        .assert_failure_mentioning(
            "APQ: query, hashes over POST, request 1: an unknown hash must get PersistedQueryNotFound",
        );
    // ...and the turned-off checks fail on a server that has them on.
    run_node("apollo-apq.mjs", &[&url, "--turned-off"], &[])
        .await
        .assert_failure_mentioning("APQ: turned off: the first request must send a hash");
}

/// With persisted queries turned off (`--persisted-queries 0`), Apollo clients that use the
/// persisted-query link keep working: the first hash gets `PERSISTED_QUERY_NOT_SUPPORTED`, and
/// the link then sends full queries only. Seen to fail: the same script against a server with
/// persisted queries on (the end of the test above).
#[tokio::test]
async fn apollo_clients_fall_back_to_full_queries_when_persisted_queries_are_off() {
    let (_app, off) = apq_server(HttpSettings {
        persisted_queries: 0,
        ..HttpSettings::default()
    })
    .await;
    let run = run_node(
        "apollo-apq.mjs",
        &[&off.url("/graphql"), "--turned-off"],
        &[],
    )
    .await;
    run.assert_success();
    assert_eq!(
        run.stdout.lines().last().unwrap_or_default(),
        r#"{"turned off":4}"#,
        "{}",
        run.stdout
    );
}

/// Runs `apollo-secure.mjs` against `url` with `plan`, the tokens in its environment.
async fn run_secure(url: &str, plan: &Value, tokens: [&str; 3]) -> NodeRun {
    let path =
        std::env::temp_dir().join(format!("dynarelay-apollo-secure-{}.json", unique_prefix()));
    std::fs::write(&path, plan.to_string()).unwrap();
    let [owner, other, admin] = tokens;
    let run = run_node(
        "apollo-secure.mjs",
        &[url, path.to_str().unwrap()],
        &[
            ("DYNARELAY_TEST_OWNER_TOKEN", owner),
            ("DYNARELAY_TEST_OTHER_TOKEN", other),
            ("DYNARELAY_TEST_ADMIN_TOKEN", admin),
        ],
    )
    .await;
    let _ = std::fs::remove_file(&path);
    run
}

/// Apollo Client with an auth link sending each session's bearer token (minted by a
/// `TestIssuer` whose JWKS is served on loopback, with the `iss`, `aud` and groups claim of
/// `examples/shop/secure.toml`'s `[auth]`) pages through `user(userId: <self>) { purchases }` of
/// the secure shop with `relayStylePagination` and `fetchMore`, by 37, for the demo data's user
/// with 420 purchases and the one with 250. Each session's cache ends with exactly its user's
/// purchases from DynamoDB, in order, in full pages, with no duplicates and no purchase of anyone
/// else. The owner's first `endCursor` continuing the other user's list is refused with
/// `BAD_USER_INPUT`, and continuing the owner's list under an admin's token (who may read it) too:
/// a cursor belongs to its caller. The other user asking for the owner's purchases, with or
/// without that cursor, gets `FORBIDDEN`, and so does a request without a token at `user`; each
/// refusal reaches Apollo as `CombinedGraphQLErrors` and carries no purchase, and the caches hold
/// their lists unchanged afterwards.
///
/// Seen to fail: the same script against the same tables served from `secure.toml` without
/// `Purchase`'s `allow` rules (owner or admin) fails, at the end of this test: the other user
/// reads the owner's purchases (which then sit in their cache), and the admin continues from the
/// owner's cursor, which is no longer bound to its caller. (The owner's cursor continuing the
/// other user's list is refused even then: it belongs to the owner's partition.)
#[tokio::test]
async fn apollo_pages_the_secure_shop_with_a_token_to_exactly_the_callers_purchases() {
    use crate::helpers::{ShopTables, TestIssuer, auth_router, model_claims, secure_app};
    use aws_sdk_dynamodb::types::AttributeValue::S;

    const SIZE: usize = 37;
    let issuer = TestIssuer::start().await;
    let app = secure_app(&issuer).await;
    let data = shop_data::generate(&SeedSpec::DEMO);
    let tables = ShopTables::with_prefix(&app.prefix);
    shop_data::write(&app.store, &tables, &data).await.unwrap();

    // The ground truth: each user's purchases by plain SDK Queries.
    let mut users = Vec::new();
    for (index, count) in [(8, 420), (7, 250)] {
        let user = data.users[index].user_id.clone();
        assert_eq!(shop_data::SPECIAL_COUNTS[index], count);
        let items = ground_truth(
            &app,
            &tables.purchases,
            None,
            ("userId", S(user.clone())),
            None,
            true,
        )
        .await;
        let expected: Vec<String> = items.iter().map(purchase_id).collect();
        assert_eq!(expected.len(), count, "{user}");
        users.push(json!({ "userId": user, "expected": expected }));
    }
    let plan = json!({ "pageSize": SIZE, "owner": users[0], "other": users[1] });

    // Tokens as the model's identity provider would issue them.
    let token = |sub: &str, groups: &[&str]| issuer.mint(&model_claims(app.model, sub, groups));
    let owner = token(users[0]["userId"].as_str().unwrap(), &[]);
    let other = token(users[1]["userId"].as_str().unwrap(), &[]);
    let admin = token("shop-admin", &["admin"]);
    let tokens = [owner.as_str(), other.as_str(), admin.as_str()];

    let server = Running::serve(app.router.clone()).await;
    let run = run_secure(&server.url("/graphql"), &plan, tokens).await;
    run.assert_success();
    let line = run.stdout.lines().last().unwrap_or_default();
    let got: Value = serde_json::from_str(line).unwrap();
    for (who, user) in [("owner", &users[0]), ("other", &users[1])] {
        let walk = &got["walks"][who];
        assert_eq!(walk["list"], user["expected"], "{who}");
        let n = user["expected"].as_array().unwrap().len();
        assert_eq!(walk["pages"], n.div_ceil(SIZE), "{who}: {walk}");
    }
    let refusal = |code: &str, path: Value| json!({ "status": 200, "code": code, "path": path });
    assert_eq!(
        got["refusals"],
        json!({
            "otherContinuesFromOwnersCursor": refusal("BAD_USER_INPUT", json!(["user", "purchases"])),
            "otherReadsOwners": refusal("FORBIDDEN", json!(["user", "purchases"])),
            "otherReadsOwnersFromCursor": refusal("FORBIDDEN", json!(["user", "purchases"])),
            "adminContinuesFromOwnersCursor": refusal("BAD_USER_INPUT", json!(["user", "purchases"])),
            "anonymousReadsOwners": refusal("FORBIDDEN", json!(["user"])),
        }),
        "{}",
        run.stdout
    );
    assert_eq!(issuer.hits(), 1, "the JWKS is fetched once, at start");

    // The same tables served without `Purchase`'s rules: the script's checks fail.
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/shop/secure.toml"),
    )
    .unwrap();
    let rule = "id_tag = \"P\"\nallow = [{ owner = \"userId\" }, { groups = [\"admin\"] }]\n";
    assert!(text.contains(rule), "Purchase's rules moved in secure.toml");
    let open_text = text.replace(rule, "id_tag = \"P\"\n");
    let open: &'static dynarelay::model::Model = Box::leak(Box::new(
        dynarelay::model::parse("secure.toml without Purchase's rules", &open_text)
            .unwrap_or_else(|e| panic!("{e}")),
    ));
    let open_store = dynarelay::dynamo::Store::new(
        app.client().clone(),
        dynarelay::dynamo::Tables::new(open, &app.prefix),
    );
    let open_server = Running::serve(auth_router(open, &open_store, &issuer).await).await;
    run_secure(&open_server.url("/graphql"), &plan, tokens)
        .await
        .assert_failure_mentioning("ACCEPTED: the owner's purchases with the other user's token")
        .assert_failure_mentioning("LEAK: the owner's purchases with the other user's token")
        .assert_failure_mentioning(
            "ACCEPTED: the owner's purchases after the owner's cursor with an admin's token",
        )
        .assert_failure_mentioning("FOREIGN: other user's cache holds");
}
