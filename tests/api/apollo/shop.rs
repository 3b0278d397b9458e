//! Apollo Client pages through every connection of the shop to DynamoDB's ground truth, on a
//! server with the default limits and on one whose read budget runs out, and its checks fail on
//! a server that pages wrongly.

use std::collections::{BTreeMap, HashSet};

use dynarelay::{dynamo::Item, http::HttpSettings, pagination::PageLimits};
use serde_json::json;

use super::{Case, attr, page_size, purchase_id, run_paging, summary, with};
use crate::{
    helpers::{NodeRun, Running, TestApp},
    shop_data::{self, SeedSpec},
};

/// Page limits of the server whose read budget runs out: a filtered page may evaluate only 12
/// items, so a ~5% filter mostly gets pages with no or one match, each with `hasNextPage`.
fn tight_budget() -> PageLimits {
    PageLimits::new(4, 10, 12).unwrap()
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
