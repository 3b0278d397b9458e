//! Walkers: random walks through the connections to their end, forward or backward, each checked
//! against what was seeded and what the writers had acknowledged when it started and ended.

use std::{
    collections::{BTreeMap, HashSet},
    sync::Arc,
    time::{Duration, Instant},
};

use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::{
    CATEGORIES, Ctx, Expected, Failure, Op, Report, USERS, below, category, failure, str_of,
};

/// Page sizes the walkers use (the server's maximum is 100).
const PAGE_SIZES: [u64; 8] = [1, 2, 5, 10, 20, 33, 50, 100];

/// A walk longer than this many pages is a failure (the longest honest walk, one item a page,
/// has about 150 + writers * HIGH pages).
const MAX_PAGES: usize = 5_000;

const PURCHASES: &str = "query($u: String!, $first: Int, $after: String, $last: Int,
    $before: String, $order: SortOrder, $status: PurchaseStatus) {
  user(userId: $u) {
    purchases(first: $first, after: $after, last: $last, before: $before, order: $order,
              status: $status) {
      edges { cursor node { id purchasedAt amount status product { sku } } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}";
const PRODUCTS: &str = "query($c: String!, $first: Int, $after: String, $last: Int,
    $before: String, $order: SortOrder) {
  products(category: $c, first: $first, after: $after, last: $last, before: $before,
           order: $order) {
    edges { cursor node { id sku category price } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}";
const USERS_QUERY: &str = "query($first: Int, $after: String) {
  users(first: $first, after: $after) {
    edges { cursor node { id userId } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}";

#[derive(Debug, Clone, Copy)]
pub(super) enum Target {
    /// A user's purchases, all of them or only `PAID` ones (the seeded ones).
    Purchases {
        user: usize,
        paid_only: bool,
    },
    Products {
        category: usize,
    },
    Users,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct WalkSpec {
    pub(super) target: Target,
    pub(super) desc: bool,
    pub(super) backward: bool,
    pub(super) k: u64,
}

impl WalkSpec {
    fn random(rng: &mut ChaCha8Rng) -> Self {
        let k = PAGE_SIZES[below(rng, PAGE_SIZES.len())];
        let desc = below(rng, 2) == 0;
        let backward = below(rng, 3) == 0;
        let target = match below(rng, 10) {
            0..=5 => Target::Purchases {
                user: below(rng, USERS),
                paid_only: false,
            },
            6 => Target::Purchases {
                user: below(rng, USERS),
                paid_only: true,
            },
            7 | 8 => Target::Products {
                category: below(rng, CATEGORIES),
            },
            _ => Target::Users,
        };
        // `users` pages forward only.
        let (desc, backward) = match target {
            Target::Users => (false, false),
            _ => (desc, backward),
        };
        Self {
            target,
            desc,
            backward,
            k,
        }
    }

    fn name(&self) -> &'static str {
        match self.target {
            Target::Purchases {
                paid_only: false, ..
            } => "purchases",
            Target::Purchases {
                paid_only: true, ..
            } => "purchases(status: PAID)",
            Target::Products { .. } => "products",
            Target::Users => "users",
        }
    }

    fn request(&self, expected: &Expected, cursor: Option<&str>) -> (&'static str, Value, &str) {
        let order = if self.desc { "DESC" } else { "ASC" };
        let mut vars = match self.target {
            Target::Purchases { user, paid_only } => json!({
                "u": expected.users[user],
                "order": order,
                "status": if paid_only { json!("PAID") } else { Value::Null },
            }),
            Target::Products { category: c } => json!({ "c": category(c), "order": order }),
            Target::Users => json!({}),
        };
        if self.backward {
            vars["last"] = json!(self.k);
            vars["before"] = json!(cursor);
        } else {
            vars["first"] = json!(self.k);
            vars["after"] = json!(cursor);
        }
        match self.target {
            Target::Purchases { .. } => (PURCHASES, vars, "/data/user/purchases"),
            Target::Products { .. } => (PRODUCTS, vars, "/data/products"),
            Target::Users => (USERS_QUERY, vars, "/data/users"),
        }
    }
}

pub(super) async fn walker(ctx: Arc<Ctx>, mut rng: ChaCha8Rng) -> Report {
    let mut report = Report::default();
    while Instant::now() < ctx.deadline {
        let spec = WalkSpec::random(&mut rng);
        let start = Instant::now();
        match walk(&ctx, &mut report, &spec, ctx.hard_stop).await {
            Ok(Some(items)) => {
                let end = Instant::now();
                *report.walks.entry(spec.name()).or_default() += 1;
                for f in check_walk(&ctx, &spec, &items, start, end) {
                    ctx.failures.add(f);
                }
            }
            Ok(None) => report.unfinished += 1,
            Err(f) => {
                report.unfinished += 1;
                ctx.failures.add(f);
                // Not a tight loop against a broken server.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    report
}

/// Pages through one connection to its end: the nodes in connection order, or `None` if the
/// hard stop came first.
pub(super) async fn walk(
    ctx: &Ctx,
    report: &mut Report,
    spec: &WalkSpec,
    stop: Instant,
) -> Result<Option<Vec<Value>>, Failure> {
    let mut cursor: Option<String> = None;
    let mut pages: Vec<Vec<Value>> = Vec::new();
    loop {
        if pages.len() >= MAX_PAGES {
            return Err(failure(
                "walk-endless",
                format!("{spec:?}: still going after {MAX_PAGES} pages"),
            ));
        }
        if Instant::now() > stop {
            return Ok(None);
        }
        let (query, vars, pointer) = spec.request(&ctx.expected, cursor.as_deref());
        let body = ctx.api.post(&mut report.rec, Op::Page, query, vars).await?;
        report.pages += 1;
        let connection = body
            .pointer(pointer)
            .filter(|c| c.is_object())
            .ok_or_else(|| failure("page-shape", format!("{spec:?}: {body}")))?;
        let edges = connection["edges"].as_array().cloned().unwrap_or_default();
        let info = &connection["pageInfo"];
        let (more, next) = if spec.backward {
            (&info["hasPreviousPage"], &info["startCursor"])
        } else {
            (&info["hasNextPage"], &info["endCursor"])
        };
        let more = more
            .as_bool()
            .ok_or_else(|| failure("page-shape", format!("{spec:?}: {info}")))?;
        if edges.len() as u64 > spec.k {
            return Err(failure(
                "page-too-long",
                format!("{spec:?}: {} edges", edges.len()),
            ));
        }
        // Every page but the last is full (documented for these unfiltered, or amply
        // budgeted, Query connections; a Scan page may be short).
        if more && edges.len() as u64 != spec.k && !matches!(spec.target, Target::Users) {
            return Err(failure(
                "short-page",
                format!("{spec:?}: {} edges and more to come", edges.len()),
            ));
        }
        pages.push(edges.into_iter().map(|e| e["node"].clone()).collect());
        if !more {
            break;
        }
        cursor = Some(
            next.as_str()
                .ok_or_else(|| failure("page-shape", format!("{spec:?}: more but {info}")))?
                .to_owned(),
        );
    }
    if spec.backward {
        pages.reverse();
    }
    Ok(Some(pages.concat()))
}

fn check_walk(
    ctx: &Ctx,
    spec: &WalkSpec,
    items: &[Value],
    start: Instant,
    end: Instant,
) -> Vec<Failure> {
    let mut failures = Vec::new();
    let what = |detail: String| format!("{spec:?}: {detail}");
    let mut ids = HashSet::new();
    for node in items {
        if !ids.insert(str_of(node, "id")) {
            failures.push(failure("walk-duplicate", what(format!("{node}"))));
        }
    }
    match spec.target {
        Target::Purchases { user, paid_only } => {
            let seeded = &ctx.expected.purchases[user];
            for pair in items.windows(2) {
                let (a, b) = (
                    str_of(&pair[0], "purchasedAt"),
                    str_of(&pair[1], "purchasedAt"),
                );
                if (spec.desc && a <= b) || (!spec.desc && a >= b) {
                    failures.push(failure("walk-order", what(format!("{a} then {b}"))));
                }
            }
            let log = ctx.log.lock().expect("log lock");
            let mut seen_at = HashSet::new();
            for node in items {
                let at = str_of(node, "purchasedAt");
                seen_at.insert(at);
                if node["product"]["sku"].as_str().is_none() {
                    failures.push(failure("product-missing", what(format!("{node}"))));
                }
                if let Some(amount) = seeded.get(at) {
                    if str_of(node, "amount") != amount || str_of(node, "status") != "PAID" {
                        failures.push(failure("seeded-changed", what(format!("{node}"))));
                    }
                    continue;
                }
                if paid_only || str_of(node, "status") == "PAID" {
                    failures.push(failure("filter-leak", what(format!("{node}"))));
                }
                let id = str_of(node, "id");
                match log.get(id) {
                    Some((u, created)) => {
                        if u != user || created.purchased_at != at {
                            failures.push(failure("walk-wrong-item", what(format!("{node}"))));
                        }
                        if created.delete_acked.is_some_and(|d| d < start) {
                            failures.push(failure(
                                "walk-deleted-item",
                                what(format!("deleted before the walk started: {node}")),
                            ));
                        }
                    }
                    None => ctx
                        .unknown
                        .lock()
                        .expect("unknown lock")
                        .push((id.to_owned(), at.to_owned())),
                }
            }
            let missing: Vec<&String> = seeded
                .keys()
                .filter(|at| !seen_at.contains(at.as_str()))
                .collect();
            if !missing.is_empty() {
                failures.push(failure(
                    "walk-skipped-seeded",
                    what(format!(
                        "{} of {} missing, first {:?}",
                        missing.len(),
                        seeded.len(),
                        &missing[..missing.len().min(3)]
                    )),
                ));
            }
            if !paid_only {
                // Created before the walk started, and not deleted until after it ended.
                let required = log
                    .by_user
                    .get(&user)
                    .into_iter()
                    .flatten()
                    .filter(|c| c.acked < start && c.delete_sent.is_none_or(|d| d > end));
                for created in required {
                    if !ids.contains(created.id.as_str()) {
                        failures.push(failure(
                            "walk-skipped-created",
                            what(format!("{} at {}", created.id, created.purchased_at)),
                        ));
                    }
                }
            }
        }
        Target::Products { category: c } => {
            let expected = &ctx.expected.products[c];
            let prices: Vec<f64> = items
                .iter()
                .map(|n| str_of(n, "price").parse().unwrap_or(f64::NAN))
                .collect();
            for pair in prices.windows(2) {
                let ordered = if spec.desc {
                    pair[0] >= pair[1]
                } else {
                    pair[0] <= pair[1]
                };
                if !ordered {
                    failures.push(failure("walk-order", what(format!("{pair:?}"))));
                }
            }
            let got: BTreeMap<String, String> = items
                .iter()
                .map(|n| (str_of(n, "sku").to_owned(), str_of(n, "price").to_owned()))
                .collect();
            if &got != expected || items.len() != expected.len() {
                failures.push(failure(
                    "walk-products-differ",
                    what(format!("got {} items: {got:?}", items.len())),
                ));
            }
        }
        Target::Users => {
            let got: Vec<&str> = items.iter().map(|n| str_of(n, "userId")).collect();
            let mut sorted = got.clone();
            sorted.sort_unstable();
            if sorted != ctx.expected.users {
                failures.push(failure("walk-users-differ", what(format!("{got:?}"))));
            }
        }
    }
    failures
}
