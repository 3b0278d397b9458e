//! Model-based paging test: random data from fixed seeds, every argument combination of a
//! connection, random page sizes, walked forward to the end and backward to the start. Each
//! walk must equal the ground truth computed from a plain full read of the table.

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::pagination::PageLimits;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};

use crate::{
    helpers::{TestApp, merge, purchase_item, test_ring, walk_pages},
    shop_data::{PurchaseRecord, PurchaseStatus},
};

const PURCHASES: &str = "query Page($user: String!, $first: Int, $after: String, $last: Int,
    $before: String, $order: SortOrder, $since: DateTime, $until: DateTime,
    $status: PurchaseStatus, $minAmount: Decimal) {
  user(userId: $user) {
    purchases(first: $first, after: $after, last: $last, before: $before, order: $order,
              since: $since, until: $until, status: $status, minAmount: $minAmount) {
      edges { cursor node { purchasedAt } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}";

fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    rng.next_u64() % n
}

const BASE_MS: i64 = 1_700_000_000_000;

/// Writes users whose partitions have the given sizes, with random statuses and amounts.
async fn seed_partitions(
    app: &TestApp,
    rng: &mut ChaCha8Rng,
    tag: u64,
    sizes: &[usize],
) -> Vec<(String, Vec<PurchaseRecord>)> {
    let mut users = Vec::new();
    for (u, &size) in sizes.iter().enumerate() {
        let user = format!("s{tag}-user-{u:02}");
        app.put_user(&user).await;
        let mut at = BASE_MS;
        let mut items = Vec::new();
        for _ in 0..size {
            // Whole seconds, so purchases of different users share times in the BySku index.
            at += 1_000 * (1 + below(rng, 5) as i64);
            let status = ["PENDING", "PAID", "SHIPPED", "REFUNDED"][below(rng, 4) as usize];
            let mut item = purchase_item(
                &user,
                &at.to_string(),
                &format!("{}.{:02}", below(rng, 200), below(rng, 100)),
            );
            item.insert("status".into(), AttributeValue::S(status.into()));
            let sku = format!("s{tag}-SKU-{}", below(rng, 3));
            item.insert("sku".into(), AttributeValue::S(sku));
            items.push(item);
        }
        app.put_items(&app.tables().purchases.clone(), items).await;
        users.push((user, Vec::new()));
    }
    // The ground truth is a plain full read of each partition, not what was written.
    for (user, records) in &mut users {
        let out = app
            .client()
            .query()
            .table_name(&app.tables().purchases)
            .key_condition_expression("userId = :u")
            .expression_attribute_values(":u", AttributeValue::S(user.clone()))
            .consistent_read(true)
            .send()
            .await
            .unwrap();
        assert!(
            out.last_evaluated_key.is_none(),
            "test partitions fit one response"
        );
        *records = out
            .items()
            .iter()
            .map(|i| PurchaseRecord::from_item(i).unwrap())
            .collect();
    }
    users
}

/// One argument combination of `User.purchases`.
#[derive(Debug, Clone)]
struct Args {
    desc: bool,
    since: Option<i64>,
    until: Option<i64>,
    status: Option<PurchaseStatus>,
    min_amount: Option<&'static str>,
}

impl Args {
    fn variables(&self) -> Value {
        let iso = |ms: i64| {
            chrono::DateTime::from_timestamp_millis(ms)
                .unwrap()
                .to_rfc3339()
        };
        json!({
            "order": if self.desc { "DESC" } else { "ASC" },
            "since": self.since.map(iso),
            "until": self.until.map(iso),
            "status": self.status.map(|s| s.as_str()),
            "minAmount": self.min_amount,
        })
    }

    /// The expected items, as `purchasedAt` strings in connection order.
    fn truth(&self, records: &[PurchaseRecord]) -> Vec<String> {
        let mut kept: Vec<&PurchaseRecord> = records
            .iter()
            .filter(|p| {
                let at = p.purchased_at.timestamp_millis();
                self.since.is_none_or(|s| at >= s)
                    && self.until.is_none_or(|u| at <= u)
                    && self.status.is_none_or(|s| p.status == s)
                    && self.min_amount.is_none_or(|m| {
                        p.amount.as_str().parse::<f64>().unwrap() >= m.parse::<f64>().unwrap()
                    })
            })
            .collect();
        kept.sort_by_key(|p| p.purchased_at);
        if self.desc {
            kept.reverse();
        }
        kept.iter()
            .map(|p| {
                p.purchased_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
            })
            .collect()
    }
}

/// A connection under test: its query, where the connection sits in the response, and the
/// node field that identifies an item.
struct Conn {
    query: &'static str,
    path: &'static [&'static str],
    /// The identity of an edge's node, as the test compares it with the ground truth.
    id: fn(&Value) -> String,
}

fn field(node: &Value, name: &str) -> String {
    node[name]
        .as_str()
        .unwrap_or_else(|| panic!("no {name} in {node}"))
        .to_owned()
}

const USER_PURCHASES: Conn = Conn {
    query: PURCHASES,
    path: &["user", "purchases"],
    id: |n| field(n, "purchasedAt"),
};

/// Walks the connection with page size `size` in one direction and returns the items in
/// connection order, checking every page's size and `pageInfo` on the way.
async fn walk(
    app: &TestApp,
    user: &str,
    args: &Args,
    size: i64,
    forward: bool,
    label: &str,
) -> Vec<String> {
    let vars = merge(args.variables(), json!({ "user": user }));
    walk_conn(app, &USER_PURCHASES, vars, size, forward, label).await
}

async fn walk_conn(
    app: &TestApp,
    conn: &Conn,
    vars: Value,
    size: i64,
    forward: bool,
    label: &str,
) -> Vec<String> {
    let page = |paging| app.graphql(conn.query, merge(vars.clone(), paging));
    walk_pages(page, conn.path, size, forward, label)
        .await
        .iter()
        .map(|node| (conn.id)(node))
        .collect()
}

#[tokio::test]
async fn user_purchases_walk_both_ways_to_the_ground_truth_for_every_argument_combination() {
    let app = TestApp::spawn().await;
    for seed in [1u64, 2] {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let first = 1 + below(&mut rng, 9) as usize;
        let users = seed_users(&app, &mut rng, first, seed).await;
        let mid = BASE_MS + 60_000;
        let combos = [
            Args {
                desc: false,
                since: None,
                until: None,
                status: None,
                min_amount: None,
            },
            Args {
                desc: true,
                since: None,
                until: None,
                status: None,
                min_amount: None,
            },
            Args {
                desc: false,
                since: Some(mid),
                until: None,
                status: None,
                min_amount: None,
            },
            Args {
                desc: true,
                since: Some(BASE_MS + 20_000),
                until: Some(mid + 200_000),
                status: None,
                min_amount: None,
            },
            Args {
                desc: false,
                since: None,
                until: Some(mid),
                status: Some(PurchaseStatus::Paid),
                min_amount: None,
            },
            Args {
                desc: true,
                since: None,
                until: None,
                status: Some(PurchaseStatus::Refunded),
                min_amount: Some("150"),
            },
            Args {
                desc: false,
                since: None,
                until: None,
                status: None,
                min_amount: Some("190.5"),
            },
        ];
        for (user, records) in &users {
            for args in &combos {
                let truth = args.truth(records);
                // The partition's own sizes, the fixed `first`, and a random size up to 100.
                for size in [first as i64, 1 + below(&mut rng, 100) as i64] {
                    for forward in [true, false] {
                        let label = format!(
                            "seed {seed}, {user} ({} items), {args:?}, size {size}, forward {forward}",
                            records.len()
                        );
                        let walked = walk(&app, user, args, size, forward, &label).await;
                        assert_eq!(walked, truth, "{label}");
                    }
                }
            }
        }
    }
}

/// Partitions of size 0, 1, `first`, `first + 1`, and two larger random ones.
async fn seed_users(
    app: &TestApp,
    rng: &mut ChaCha8Rng,
    first: usize,
    tag: u64,
) -> Vec<(String, Vec<PurchaseRecord>)> {
    let sizes = [
        0,
        1,
        first,
        first + 1,
        40 + below(rng, 40) as usize,
        150 + below(rng, 100) as usize,
    ];
    seed_partitions(app, rng, tag, &sizes).await
}

#[tokio::test]
async fn a_sparse_filter_is_read_in_few_calls_and_a_spent_budget_still_hands_back_a_cursor() {
    // Budget 30: far below what one page of a 2% filter needs.
    let app = TestApp::spawn_with(PageLimits::new(5, 10, 30).unwrap()).await;
    app.put_user("sparse").await;
    let items = (0..400)
        .map(|i| {
            let mut item = purchase_item("sparse", &(BASE_MS + i).to_string(), "1");
            let status = if i % 50 == 7 { "REFUNDED" } else { "PAID" };
            item.insert("status".into(), AttributeValue::S(status.into()));
            item
        })
        .collect();
    app.put_items(&app.tables().purchases.clone(), items).await;
    let args = Args {
        desc: false,
        since: None,
        until: None,
        status: Some(PurchaseStatus::Refunded),
        min_amount: None,
    };

    // Walk with the budget: pages may be short or empty, but each hands back an endCursor, and
    // the walk still returns exactly the 8 matches, once each.
    let mut found = Vec::new();
    let mut after: Option<String> = None;
    let mut pages = 0;
    loop {
        pages += 1;
        assert!(pages < 100, "the walk does not end");
        let response = app
            .graphql(
                PURCHASES,
                merge(
                    args.variables(),
                    json!({ "user": "sparse", "first": 5, "after": after }),
                ),
            )
            .await;
        let connection = &response["data"]["user"]["purchases"];
        let edges = connection["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{response}"));
        found.extend(
            edges
                .iter()
                .map(|e| e["node"]["purchasedAt"].as_str().unwrap().to_owned()),
        );
        if connection["pageInfo"]["hasNextPage"] != true {
            break;
        }
        let end = connection["pageInfo"]["endCursor"].as_str();
        assert!(
            end.is_some(),
            "hasNextPage without an endCursor: {response}"
        );
        after = end.map(str::to_owned);
    }
    let expected: Vec<i64> = (0..400).filter(|i| i % 50 == 7).collect();
    assert_eq!(found.len(), expected.len(), "{found:?}");
    assert!(pages > 2, "the budget of 30 should have split the walk");
    let mut deduped = found.clone();
    deduped.dedup();
    assert_eq!(deduped, found, "an item came twice");

    // With the default budget the first full page of 5 (6 matches, counting the one that
    // proves hasNextPage) lies within the first 258 items: a loop with Limit = first would
    // take 52 Queries. The growing Limit must take at most a third of that.
    let roomy = app.with_ring(&test_ring());
    let before = app.calls.snapshot().get("Query").copied().unwrap_or(0);
    let response = roomy
        .graphql(
            PURCHASES,
            merge(args.variables(), json!({ "user": "sparse", "first": 5 })),
        )
        .await;
    let queries = app.calls.snapshot()["Query"] - before;
    let connection = &response["data"]["user"]["purchases"];
    assert_eq!(
        connection["edges"].as_array().map(Vec::len),
        Some(5),
        "{response}"
    );
    assert_eq!(connection["pageInfo"]["hasNextPage"], true);
    assert!(queries <= 52 / 3, "{queries} Query calls for one page");
}

const PRODUCT_PURCHASES: Conn = Conn {
    query: "query Page($sku: String!, $order: SortOrder, $first: Int, $after: String, $last: Int, $before: String) {
      product(sku: $sku) { purchases(order: $order, first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { userId purchasedAt } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }",
    path: &["product", "purchases"],
    id: |n| format!("{}@{}", field(n, "userId"), field(n, "purchasedAt")),
};

const PRODUCTS: Conn = Conn {
    query: "query Page($category: String!, $minPrice: Decimal, $maxPrice: Decimal, $order: SortOrder,
                    $first: Int, $after: String, $last: Int, $before: String) {
      products(category: $category, minPrice: $minPrice, maxPrice: $maxPrice, order: $order,
               first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { sku } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }",
    path: &["products"],
    id: |n| field(n, "sku"),
};

const USERS: Conn = Conn {
    query: "query Page($first: Int, $after: String) {
      users(first: $first, after: $after) {
        edges { cursor node { userId } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }",
    path: &["users"],
    id: |n| field(n, "userId"),
};

/// A plain, complete read of one index partition in DynamoDB's own order (ties included).
async fn full_index_read(
    app: &TestApp,
    table: &str,
    index: &str,
    pk: &str,
    value: &str,
    forward: bool,
    id: impl Fn(&dynarelay::dynamo::Item) -> String,
) -> Vec<String> {
    let items = app
        .query_all(table, Some(index), (pk, value), forward)
        .await;
    items.iter().map(id).collect()
}

#[tokio::test]
async fn index_and_scan_connections_walk_both_ways_to_the_ground_truth() {
    let app = TestApp::spawn().await;
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let first = 3;
    // Purchases spread over three SKUs with many equal purchase times across users.
    seed_users(&app, &mut rng, first, 7).await;
    // Products: categories of 0, 1, first, first + 1 and 37 items, priced from four values.
    let prices = ["4.99", "9.99", "19.99", "24.5"];
    let mut products = Vec::new();
    for (c, size) in [(0, 0), (1, 1), (2, first), (3, first + 1), (4, 37)] {
        for i in 0..size {
            let mut item = dynarelay::dynamo::Item::new();
            item.insert("sku".into(), AttributeValue::S(format!("P{c}-{i:03}")));
            item.insert("name".into(), AttributeValue::S(format!("Product {c}-{i}")));
            item.insert("category".into(), AttributeValue::S(format!("cat-{c}")));
            item.insert(
                "price".into(),
                AttributeValue::N(prices[below(&mut rng, 4) as usize].into()),
            );
            products.push(item);
        }
    }
    for sku in ["s7-SKU-0", "s7-SKU-1", "s7-SKU-2", "s7-SKU-none"] {
        let mut item = dynarelay::dynamo::Item::new();
        item.insert("sku".into(), AttributeValue::S(sku.into()));
        item.insert("name".into(), AttributeValue::S(sku.into()));
        item.insert("category".into(), AttributeValue::S("sold".into()));
        item.insert("price".into(), AttributeValue::N("1".into()));
        products.push(item);
    }
    app.put_items(&app.tables().products.clone(), products)
        .await;

    let purchase_id = |i: &dynarelay::dynamo::Item| {
        let s = |k: &str| match &i[k] {
            AttributeValue::S(v) | AttributeValue::N(v) => v.clone(),
            other => panic!("{other:?}"),
        };
        let ms: i64 = s("purchasedAt").parse().unwrap();
        let at = chrono::DateTime::from_timestamp_millis(ms).unwrap();
        format!(
            "{}@{}",
            s("userId"),
            at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        )
    };
    for sku in ["s7-SKU-0", "s7-SKU-1", "s7-SKU-2", "s7-SKU-none"] {
        for desc in [false, true] {
            let truth = full_index_read(
                &app,
                &app.tables().purchases,
                "BySku",
                "sku",
                sku,
                !desc,
                purchase_id,
            )
            .await;
            if sku == "s7-SKU-0" {
                let times: Vec<&str> = truth
                    .iter()
                    .map(|id| id.split('@').nth(1).unwrap())
                    .collect();
                assert!(
                    times.windows(2).any(|w| w[0] == w[1]),
                    "the data must hold equal index sort values"
                );
            }
            let vars = json!({ "sku": sku, "order": if desc { "DESC" } else { "ASC" } });
            for size in [first as i64, 1 + below(&mut rng, 100) as i64] {
                for forward in [true, false] {
                    let label = format!("{sku} desc {desc} size {size} forward {forward}");
                    let walked = walk_conn(
                        &app,
                        &PRODUCT_PURCHASES,
                        vars.clone(),
                        size,
                        forward,
                        &label,
                    )
                    .await;
                    assert_eq!(walked, truth, "{label}");
                }
            }
        }
    }
    let product_id = |i: &dynarelay::dynamo::Item| match &i["sku"] {
        AttributeValue::S(v) => v.clone(),
        other => panic!("{other:?}"),
    };
    for c in 0..5 {
        let category = format!("cat-{c}");
        for (min, max) in [
            (None, None),
            (Some("9.99"), None),
            (Some("5"), Some("19.99")),
        ] {
            for desc in [false, true] {
                let items = app
                    .query_all(
                        &app.tables().products,
                        Some("ByCategory"),
                        ("category", &category),
                        !desc,
                    )
                    .await;
                // Price bounds, applied to the ground truth by reading each product's price.
                let priced = items.iter().map(|i| match &i["price"] {
                    AttributeValue::N(v) => v.clone(),
                    other => panic!("{other:?}"),
                });
                let truth: Vec<String> = items
                    .iter()
                    .map(product_id)
                    .zip(priced)
                    .filter(|(_, p)| {
                        let p: f64 = p.parse().unwrap();
                        min.is_none_or(|m: &str| p >= m.parse().unwrap())
                            && max.is_none_or(|m: &str| p <= m.parse().unwrap())
                    })
                    .map(|(s, _)| s)
                    .collect();
                let vars = json!({ "category": category, "minPrice": min, "maxPrice": max, "order": if desc { "DESC" } else { "ASC" } });
                for size in [first as i64, 1 + below(&mut rng, 100) as i64] {
                    for forward in [true, false] {
                        let label = format!(
                            "{category} {min:?}..{max:?} desc {desc} size {size} forward {forward}"
                        );
                        let walked =
                            walk_conn(&app, &PRODUCTS, vars.clone(), size, forward, &label).await;
                        assert_eq!(walked, truth, "{label}");
                    }
                }
            }
        }
    }
    // Users: a Scan, forward only, in DynamoDB's Scan order.
    let out = app
        .client()
        .scan()
        .table_name(&app.tables().users)
        .send()
        .await
        .unwrap();
    assert!(out.last_evaluated_key.is_none());
    let truth: Vec<String> = out
        .items()
        .iter()
        .map(|i| match &i["userId"] {
            AttributeValue::S(v) => v.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    for size in [1, first as i64, 1 + below(&mut rng, 100) as i64] {
        let label = format!("users size {size}");
        let walked = walk_conn(&app, &USERS, json!({}), size, true, &label).await;
        assert_eq!(walked, truth, "{label}");
    }
}
