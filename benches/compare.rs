//! dynarelay side by side with DynamoDB itself, on DynamoDB Local over loopback.
//!
//! Run: `scripts/bench` (it starts DynamoDB Local and runs `cargo bench --bench compare`). The
//! endpoint comes from `DYNARELAY_BENCH_DYNAMODB_ENDPOINT`. Everything stays on 127.0.0.1 and
//! the run is bounded: fixed request counts, a timeout on every request, and a kill of the
//! server it starts, also on a panic.
//!
//! It seeds fresh tables (a unique prefix): one user with 20,100 purchases (a long partition),
//! one with 5,000 of which 2% are `REFUNDED`. Then it starts the release `dynarelay serve` and
//! measures, printing one table:
//! - start to ready, and idle RSS;
//! - the latency of `user(userId) { purchases(first: 20) }` through dynarelay against the same
//!   DynamoDB work done directly with aws-sdk-dynamodb: the page's Query alone, and the user's
//!   GetItem followed by the Query (what the GraphQL field does), sequentially, interleaved;
//!   and the time dynarelay adds to the GetItem and Query sent together, sample by sample;
//! - where a page's time goes: the server's own timers (`/metrics`) for the page and its
//!   DynamoDB calls, and `GET /health` as an HTTP round trip with no GraphQL or DynamoDB;
//! - the same page against the same calls with DynamoDB Local behind a loopback proxy that
//!   delays each direction by 2 ms, a stand-in for the distance to a real region (a second
//!   server is started against the proxy);
//! - the server's CPU time per page (from `/proc/<pid>/stat`) at 8 clients, and at 16;
//! - the SDK floor: the CPU time that the page's DynamoDB calls (the user's GetItem and the
//!   21-item Query, at the same time) cost through aws-sdk-dynamodb alone, read from this
//!   process's own `/proc/self/stat` over 2,000 pages from 8 tasks, once on a current-thread tokio
//!   runtime and once on a 2-worker multi-thread one, with the ratio of the server's CPU per page
//!   (8 clients) to it (target: at most 1.3; at least at most 1.6). It includes the SDK (building,
//!   signing, serialising), its HTTP client and the JSON parsing of the responses; it excludes
//!   DynamoDB Local's own CPU, another process, and everything a GraphQL server adds;
//! - DynamoDB calls and items evaluated per filled page at 2% selectivity, against a naive loop
//!   that Queries with `Limit = first` until the page is full;
//! - page 1 against page 1000 of the long partition, and the time dynarelay adds to each.
//!
//! Beside the shop, it measures the single-table example (`examples/ecommerce/dynarelay.toml`):
//! a second server of the same binary, on the same DynamoDB Local with a table prefix of its
//! own, serves one customer shaped like the long user (as many orders as the long user has
//! purchases, written raw through the SDK, and a few addresses). Two of its pages are timed in
//! the same loops as the shop's page, and loaded in the same CPU rounds: `customer { orders }`,
//! the shop page's twin (one entity type in a shared partition), and `customer { activity }`,
//! the item collection of addresses, the profile and orders. Their rows follow the shop page's,
//! with the ratio to it: p50, p99, server CPU per page (issue 16's target: within 10%), and the
//! DynamoDB calls per page by operation, counted from each server's `/metrics` over a walk of
//! consecutive pages (the shop page's counted the same way).
//!
//! With `DYNARELAY_BENCH_BASELINE` naming another dynarelay binary (`scripts/bench --baseline
//! REV` builds one from a git revision), that binary is started too, on the same tables and the
//! same DynamoDB Local, and measured in the same loops: its pages alternate with the current
//! server's sample by sample (which goes first alternates too), the CPU load runs in rounds
//! that alternate between the two servers, and its numbers are printed beside the current
//! server's with the ratio current / baseline (start to ready, idle RSS, page p50 and p99, the
//! time added per page, CPU per page). `DYNARELAY_BENCH_REV` and `DYNARELAY_BENCH_BASELINE_REV`,
//! when set, say which commits the two binaries were built from; the table's heading prints
//! them with each binary's path and `--version`. The baseline predates the single-table example,
//! so its rows have no baseline columns: the current binary serves them.
//!
//! The Node reference: with `DYNARELAY_BENCH_PEER` naming its `server.mjs` (`scripts/bench`
//! copies `../shared/bench-peer` to `target/bench-peer` and installs its dependencies there), it
//! runs `node` on that file on a free loopback port against the shop's tables on the same DynamoDB
//! Local (dummy credentials, `AWS_EC2_METADATA_DISABLED=true`, `NODE_ENV=production`): Apollo
//! Server 4 with the AWS SDK v3 DocumentClient, the way a Node team would write the page, with one
//! Query per page where dynarelay's `user` also reads the user (GetItem). Its page, with the
//! shop page's fields (`user { purchases(first: 20) { edges { cursor node { purchasedAt amount
//! status quantity } } pageInfo { hasNextPage endCursor } } }`), is timed in the same latency
//! loop with 1 client (p50, p99), and loaded in the same alternating CPU rounds at 8 clients and,
//! alternating with the shop page's server only, at 16; its process's CPU per page is printed
//! beside dynarelay's with the ratio dynarelay / Node (target: at most 0.25; at least at most
//! 0.33). When it is not given, does not start or fails later, the table says why (as does
//! stderr at once) and everything else is measured as before.

use std::{
    collections::{BTreeMap, HashMap},
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::Arc,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use anyhow::{Context, bail, ensure};
use aws_sdk_dynamodb::{
    Client,
    types::{AttributeValue, ReturnConsumedCapacity},
};
use dynarelay::{
    dynamo::{self, Item, Store, Tables, tables},
    model,
};
use serde_json::{Value, json};

/// The tests' token issuer: test-only RSA keys and a JWKS served on loopback, for the shop's
/// secure model (`examples/shop/secure.toml`) beside the open one.
#[path = "../tests/api/issuer.rs"]
#[allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
mod issuer;
/// The tests' environment for child processes that talk only to DynamoDB Local.
#[path = "../tests/api/local_aws.rs"]
mod local_aws;

const LONG_USER: &str = "bench-long";
const LONG_PURCHASES: i64 = 20_100;
const SPARSE_USER: &str = "bench-sparse";
const SPARSE_PURCHASES: i64 = 5_000;
/// One purchase in this many of the sparse user's is `REFUNDED`: 2%.
const SPARSE_EVERY: i64 = 50;
const PAGE: usize = 20;
const BASE_MS: i64 = 1_672_531_200_000;
const WARM_UP: usize = 50;
const SAMPLES: usize = 400;
const CONCURRENCY: usize = 8;
/// The higher concurrency at which the shop page's server and the Node reference are loaded too.
const HIGH_CONCURRENCY: usize = 16;
const CONCURRENT_PAGES: usize = 6_000;
/// The CPU load runs in this many rounds per page, alternating between the pages (with a
/// baseline: current, baseline, baseline, current, ...), so that drift affects all alike.
const CPU_ROUNDS: usize = 12;
const _: () = assert!(CONCURRENT_PAGES.is_multiple_of(CPU_ROUNDS), "whole rounds");
const DEEP_PAGE: usize = 1_000;
const DEEP_SAMPLES: usize = 200;
/// One-way delay of the proxy that stands in for the distance to a real DynamoDB region.
const DELAY: Duration = Duration::from_millis(2);
const FAR_SAMPLES: usize = 200;
const TEST_RING: &str = "1:KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio";

/// The shop page: a user's purchases.
const SHOP_PAGE: PageShape = PageShape {
    query: "query($u: String!, $after: String, $status: PurchaseStatus) {
  user(userId: $u) { purchases(first: 20, after: $after, status: $status) {
    edges { cursor node { purchasedAt amount status quantity } }
    pageInfo { hasNextPage endCursor } } } }",
    lookup: "user",
    connection: "purchases",
    name: "`user { purchases(first: 20) }`",
    filtered: true,
};
/// The shop page's twin on the single-table example: one entity type in a shared partition,
/// the same four kinds of field (a time, a decimal, an enum, an integer) and the same `status`
/// filter variable.
const ORDERS_PAGE: PageShape = PageShape {
    query: "query($u: String!, $after: String, $status: OrderStatus) {
  customer(username: $u) { orders(first: 20, after: $after, status: $status) {
    edges { cursor node { placedAt total status itemCount } }
    pageInfo { hasNextPage endCursor } } } }",
    lookup: "customer",
    connection: "orders",
    name: "single table: `customer { orders(first: 20) }`",
    filtered: true,
};
/// The item collection of the single-table example: addresses, the profile and orders in one
/// connection of a union, the orders with the same fields as [`ORDERS_PAGE`].
const ACTIVITY_PAGE: PageShape = PageShape {
    query: "query($u: String!, $after: String) {
  customer(username: $u) { activity(first: 20, after: $after) {
    edges { cursor node { __typename
      ... on Order { placedAt total status itemCount }
      ... on Address { label }
      ... on Customer { name } } }
    pageInfo { hasNextPage endCursor } } } }",
    lookup: "customer",
    connection: "activity",
    name: "single table: `customer { activity(first: 20) }`, the item collection",
    filtered: false,
};
/// The single-table example's customer: as many orders as [`LONG_USER`] has purchases.
const CUSTOMER: &str = LONG_USER;
/// The customer's saved addresses, by label; they come first in `activity`.
const ADDRESSES: [&str; 3] = ["Home", "Parents", "Work"];
/// Consecutive pages walked, from the first, to count DynamoDB calls per page.
const CALL_PAGES: usize = 50;
/// The shop page on the Node reference (`DYNARELAY_BENCH_PEER`): the same fields as
/// [`SHOP_PAGE`]'s, without `$status`, which the reference does not take.
const PEER_PAGE: PageShape = PageShape {
    query: "query($u: String!, $after: String) {
  user(userId: $u) { purchases(first: 20, after: $after) {
    edges { cursor node { purchasedAt amount status quantity } }
    pageInfo { hasNextPage endCursor } } } }",
    lookup: "user",
    connection: "purchases",
    name: "Node reference (Apollo Server 4 + AWS SDK v3): `user { purchases(first: 20) }`",
    filtered: false,
};
/// Pages of direct GetItem and Query per runtime for the SDK floor, after a warm-up of
/// [`WARM_UP`] per client.
const FLOOR_PAGES: usize = 2_000;
/// Said beside every comparison with the Node reference.
const PEER_READS: &str =
    "Node reads one Query per page, dynarelay also the user's GetItem (at the same time)";

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let endpoint = std::env::var("DYNARELAY_BENCH_DYNAMODB_ENDPOINT")
        .context("DYNARELAY_BENCH_DYNAMODB_ENDPOINT is not set: run scripts/bench")?;
    let binary = Binary::new(
        PathBuf::from(env!("CARGO_BIN_EXE_dynarelay")),
        "DYNARELAY_BENCH_REV",
    )?;
    let baseline = match std::env::var_os("DYNARELAY_BENCH_BASELINE") {
        Some(path) if !path.is_empty() => Some(Binary::new(
            PathBuf::from(path),
            "DYNARELAY_BENCH_BASELINE_REV",
        )?),
        _ => None,
    };
    eprintln!("dynarelay: {}", binary.describe());
    if let Some(baseline) = &baseline {
        eprintln!("baseline: {}", baseline.describe());
    }
    let client = dynamo::client_for_local(&endpoint);
    let prefix = format!(
        "bench{}_",
        SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis()
    );
    let shop: &'static model::Model =
        Box::leak(Box::new(model::load(std::path::Path::new(SHOP_MODEL))?));
    let tables = Tables::new(shop, &prefix);
    tables::create_missing(&client, shop, &tables, Duration::from_secs(60)).await?;
    let names = ShopNames::with_prefix(&prefix);
    let seeding = Instant::now();
    seed(&Store::new(client.clone(), tables), &names).await?;
    eprintln!("seeded in {:.1} s", seeding.elapsed().as_secs_f64());
    // The single-table example, under a prefix of its own.
    let ecommerce_prefix = format!("{prefix}ecommerce_");
    let ecommerce = model::load(Path::new(ECOMMERCE_MODEL))?;
    let ecommerce_tables = Tables::new(&ecommerce, &ecommerce_prefix);
    tables::create_missing(
        &client,
        &ecommerce,
        &ecommerce_tables,
        Duration::from_secs(60),
    )
    .await?;
    let seeding = Instant::now();
    seed_ecommerce(
        &Store::new(client.clone(), ecommerce_tables),
        &format!("{ecommerce_prefix}ECommerce"),
    )
    .await?;
    eprintln!(
        "seeded the single-table example in {:.1} s",
        seeding.elapsed().as_secs_f64()
    );

    let server = Server::start(&binary.path, &endpoint, &prefix, SHOP_MODEL)?;
    let ready = server.wait_ready().await?;
    // scripts/profile attaches perf to this process.
    eprintln!("dynarelay serve: pid {}", server.pid());
    // The baseline, started once the current server is ready so that the two start-ups do not
    // compete; it serves the same tables.
    let base_server = match &baseline {
        Some(baseline) => {
            let base = Server::start(&baseline.path, &endpoint, &prefix, SHOP_MODEL)?;
            let ready = base.wait_ready().await?;
            eprintln!("baseline serve: pid {}", base.pid());
            Some((base, ready))
        }
        None => None,
    };
    // The single-table example's server, started last so that it competes with no start-up.
    let ecommerce_server =
        Server::start(&binary.path, &endpoint, &ecommerce_prefix, ECOMMERCE_MODEL)?;
    let ecommerce_ready = ecommerce_server.wait_ready().await?;
    eprintln!(
        "single-table example serve: pid {}, ready in {}",
        ecommerce_server.pid(),
        ms(ecommerce_ready)
    );
    // The secure shop, verifying tokens against a JWKS served here on loopback.
    let token_issuer = issuer::TestIssuer::start().await;
    let secure_server = Server::start_with(
        &binary.path,
        &endpoint,
        &prefix,
        SECURE_MODEL,
        &[("DYNARELAY_AUTH_JWKS_URL", &token_issuer.url())],
    )?;
    secure_server.wait_ready().await?;
    eprintln!("secure shop serve: pid {}", secure_server.pid());
    // The Node reference, on the shop's Purchases table. It is optional: when it cannot be
    // started, or fails later, `peer_down` says why, its rows say so, and the rest goes on.
    let mut peer_down: Option<String> = None;
    let peer = match std::env::var_os("DYNARELAY_BENCH_PEER") {
        Some(script) if !script.is_empty() => {
            match Peer::start(Path::new(&script), &endpoint, &prefix).await {
                Ok(peer) => {
                    eprintln!("Node reference: pid {}, {}", peer.pid(), peer.url);
                    Some(peer)
                }
                Err(e) => {
                    peer_down = Some(format!("it did not start: {e:#}"));
                    None
                }
            }
        }
        _ => {
            peer_down = Some(match std::env::var("DYNARELAY_BENCH_PEER_UNAVAILABLE") {
                Ok(why) if !why.trim().is_empty() => why.trim().to_owned(),
                _ => "DYNARELAY_BENCH_PEER is not set (scripts/bench sets it)".to_owned(),
            });
            None
        }
    };
    if let Some(why) = &peer_down {
        eprintln!("Node reference: not measured: {why}");
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_rss = rss_kib(server.pid())?;
    let base_idle_rss = match &base_server {
        Some((base, _)) => Some(rss_kib(base.pid())?),
        None => None,
    };
    let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
    let mut rows = vec![
        row(
            "start to ready",
            ms(ready),
            "",
            "",
            if base_server.is_some() {
                "one start each; the baseline starts second, once the current server is ready"
            } else {
                ""
            },
        )
        .beside(
            base_server
                .as_ref()
                .map(|(_, r)| (ms(*r), quotient(ready, *r))),
        ),
        row("idle RSS", mib(idle_rss), "", "", "")
            .beside(base_idle_rss.map(|kib| (mib(kib), quotient(idle_rss, kib)))),
    ];

    // Connections go back after 2 s idle, before the servers' 5 s idle timeout (the default of
    // `--idle-timeout-secs`) closes them while they wait through the other servers' rounds:
    // a request sent on a connection just as the server closes it fails.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_idle_timeout(Duration::from_secs(2))
        .build()?;
    let api = Api {
        http,
        url: format!("http://{}/graphql", server.address),
        shape: SHOP_PAGE,
        token: None,
    };
    let base_api = base_server.as_ref().map(|(base, _)| Api {
        http: api.http.clone(),
        url: format!("http://{}/graphql", base.address),
        shape: SHOP_PAGE,
        token: None,
    });
    // The single-table example's two pages, from the same server.
    let ecommerce_url = format!("http://{}/graphql", ecommerce_server.address);
    let orders_api = Arc::new(Api {
        http: api.http.clone(),
        url: ecommerce_url.clone(),
        shape: ORDERS_PAGE,
        token: None,
    });
    let activity_api = Arc::new(Api {
        http: api.http.clone(),
        url: ecommerce_url,
        shape: ACTIVITY_PAGE,
        token: None,
    });
    // The shop page on the secure model, as the page's user: one RS256 token, as a browser
    // session sends the same token with every request.
    let secure_token = token_issuer.mint(&issuer::with(
        issuer::claims(LONG_USER),
        json!({
            "iss": "https://auth.shop.example",
            "aud": "shop-web",
            "exp": issuer::now() + 3600,
        }),
    ));
    let secure_api = Arc::new(Api {
        http: api.http.clone(),
        url: format!("http://{}/graphql", secure_server.address),
        shape: SHOP_PAGE,
        token: Some(secure_token),
    });
    let base_api_present = base_api.is_some();
    // Its own client, which lets connections go before Node's 5 s keep-alive timeout would
    // close them, as the servers' client does.
    let peer_api = match &peer {
        Some(peer) => Some(Arc::new(Api {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .pool_idle_timeout(Duration::from_secs(2))
                .build()?,
            url: peer.url.clone(),
            shape: PEER_PAGE,
            token: None,
        })),
        None => None,
    };
    let direct = Direct {
        client: client.clone(),
        names: names.clone(),
    };

    // Latency, one request at a time, interleaved so that drift affects all alike. The pages
    // through dynarelay (the shop page; with a baseline, the baseline's; the single-table
    // example's two) are timed in an order that changes from sample to sample, so that each
    // goes before each other as often as after.
    // The Node reference's page is timed in the same order, when it runs.
    let mut pages: Vec<(&Api, &str)> = vec![(&api, LONG_USER)];
    pages.extend(base_api.as_ref().map(|base| (base, LONG_USER)));
    let (orders_at, activity_at) = (pages.len(), pages.len() + 1);
    pages.extend([(&*orders_api, CUSTOMER), (&*activity_api, CUSTOMER)]);
    let peer_at = peer_api.as_ref().map(|peer_api| {
        pages.push((&**peer_api, LONG_USER));
        pages.len() - 1
    });
    let mut via_peer = Vec::new();
    let (mut via_api, mut query_only, mut get_and_query, mut get_with_query) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut added, mut health) = (Vec::new(), Vec::new());
    let (mut via_base, mut base_added) = (Vec::new(), Vec::new());
    let (mut via_orders, mut via_activity) = (Vec::new(), Vec::new());
    let mut timers_before = Timers::default();
    for i in 0..WARM_UP + SAMPLES {
        if i == WARM_UP {
            timers_before = api.timers().await?;
        }
        let mut times = vec![Duration::ZERO; pages.len()];
        for k in interleaved(pages.len(), i) {
            let (page_api, owner) = pages[k];
            if Some(k) == peer_at {
                if peer_down.is_none() {
                    match page_api.page_timed(owner, None, None).await {
                        Ok(time) => times[k] = time,
                        Err(e) => peer_down = Some(peer_failed("its page", &e)),
                    }
                }
                continue;
            }
            times[k] = page_api.page_timed(owner, None, None).await?;
        }
        let a = times[0];
        let b = base_api_present.then(|| times[1]);
        let q = direct.query_timed(LONG_USER).await?;
        let g = direct.get_and_query_timed(LONG_USER).await?;
        let c = direct.get_with_query_timed(LONG_USER).await?;
        let h = api.health_timed().await?;
        if i >= WARM_UP {
            health.push(h);
            via_api.push(a);
            query_only.push(q);
            get_and_query.push(g);
            get_with_query.push(c);
            added.push(a.as_secs_f64() - c.as_secs_f64());
            if let Some(b) = b {
                via_base.push(b);
                base_added.push(b.as_secs_f64() - c.as_secs_f64());
            }
            via_orders.push(times[orders_at]);
            via_activity.push(times[activity_at]);
            if let (Some(k), None) = (peer_at, &peer_down) {
                via_peer.push(times[k]);
            }
        }
    }
    // The server's own timers over the same samples: where a page's time goes.
    let inside = api.timers().await?.since(&timers_before);
    let with_mean = mean(&get_with_query);
    let client_mean = mean(&via_api);
    let with_p50 = percentile(&mut get_with_query, 0.5);
    let (api_p50, api_p99) = (
        percentile(&mut via_api, 0.5),
        percentile(&mut via_api, 0.99),
    );
    let (q_p50, q_p99) = (
        percentile(&mut query_only, 0.5),
        percentile(&mut query_only, 0.99),
    );
    let (g_p50, g_p99) = (
        percentile(&mut get_and_query, 0.5),
        percentile(&mut get_and_query, 0.99),
    );
    let (base_p50, base_p99) = if via_base.is_empty() {
        (None, None)
    } else {
        (
            Some(percentile(&mut via_base, 0.5)),
            Some(percentile(&mut via_base, 0.99)),
        )
    };
    let (orders_p50, orders_p99) = (
        percentile(&mut via_orders, 0.5),
        percentile(&mut via_orders, 0.99),
    );
    let (activity_p50, activity_p99) = (
        percentile(&mut via_activity, 0.5),
        percentile(&mut via_activity, 0.99),
    );
    let peer_latency = (peer_down.is_none() && !via_peer.is_empty()).then(|| {
        (
            percentile(&mut via_peer, 0.5),
            percentile(&mut via_peer, 0.99),
        )
    });
    // The single-table example's pages beside the shop page, with the ratio to it.
    let to_shop = |shape: PageShape, what: &str, value: String, ratio: String, note: &str| {
        row(
            format!("{}, {what}", shape.name),
            value,
            "",
            ratio,
            format!("ratio: / the shop page's{note}"),
        )
    };
    let added_p50 = median(&mut added);
    let base_added_p50 = (!base_added.is_empty()).then(|| median(&mut base_added));
    let at_most = |note: &str| {
        if baseline.is_some() {
            format!("{note}; current / baseline at most 1.10")
        } else {
            note.to_owned()
        }
    };
    rows.push(
        row(
            "page of 20, p50",
            ms(api_p50),
            format!("{} (Query) / {} (GetItem + Query)", ms(q_p50), ms(g_p50)),
            format!(
                "{:.2} / {:.2}",
                ratio(api_p50, q_p50),
                ratio(api_p50, g_p50)
            ),
            "at most 1.10",
        )
        .beside(base_p50.map(|b| (ms(b), quotient(api_p50, b)))),
    );
    for (shape, p50) in [(ORDERS_PAGE, orders_p50), (ACTIVITY_PAGE, activity_p50)] {
        rows.push(to_shop(shape, "p50", ms(p50), quotient(p50, api_p50), ""));
    }
    rows.push(peer_row(
        "page of 20, p50, against the Node reference (1 client)",
        ms(api_p50),
        peer_latency.map(|(p50, _)| (ms(p50), quotient(api_p50, p50))),
        peer_down.as_deref(),
        "",
    ));
    rows.push(row(
        "GetItem and Query at the same time, p50",
        "",
        ms(with_p50),
        "",
        "what dynarelay does",
    ));
    rows.push(
        row(
            "time dynarelay adds to a page, p50",
            format!("{:.2} ms", added_p50 * 1e3),
            "",
            "",
            at_most("page minus GetItem and Query together, sample by sample"),
        )
        .beside(base_added_p50.map(|b| (format!("{:.2} ms", b * 1e3), quotient(added_p50, b)))),
    );
    rows.push(row(
        "page of 20, mean: at the client / inside the server",
        format!("{} / {}", ms(client_mean), ms(inside.page)),
        "",
        "",
        "the difference is the HTTP request and response on loopback, both ends",
    ));
    rows.push(row(
        "GET /health, p50",
        ms(percentile(&mut health, 0.5)),
        "",
        "",
        "an HTTP round trip through the same layers, with no GraphQL and no DynamoDB",
    ));
    rows.push(row(
        "DynamoDB calls timed inside the server, mean",
        format!(
            "{} (GetItem) / {} (Query)",
            ms(inside.get),
            ms(inside.query)
        ),
        format!("{} (GetItem and Query together)", ms(with_mean)),
        "",
        "each timed around the SDK's send, as the direct ones are",
    ));
    rows.push(
        row(
            "page of 20, p99",
            ms(api_p99),
            format!("{} (Query) / {} (GetItem + Query)", ms(q_p99), ms(g_p99)),
            format!(
                "{:.2} / {:.2}",
                ratio(api_p99, q_p99),
                ratio(api_p99, g_p99)
            ),
            "",
        )
        .beside(base_p99.map(|b| (ms(b), quotient(api_p99, b)))),
    );
    for (shape, p99) in [(ORDERS_PAGE, orders_p99), (ACTIVITY_PAGE, activity_p99)] {
        rows.push(to_shop(shape, "p99", ms(p99), quotient(p99, api_p99), ""));
    }
    rows.push(peer_row(
        "page of 20, p99, against the Node reference (1 client)",
        ms(api_p99),
        peer_latency.map(|(_, p99)| (ms(p99), quotient(api_p99, p99))),
        peer_down.as_deref(),
        "",
    ));

    // The same comparison with DynamoDB further away: DynamoDB Local behind a loopback proxy that
    // delays each direction, a stand-in for the network and service time of a real region.
    let proxy = DelayProxy::start(&endpoint, DELAY).await?;
    let far_server = Server::start(&binary.path, &proxy, &prefix, SHOP_MODEL)?;
    far_server.wait_ready().await?;
    let far_api = Api {
        http: api.http.clone(),
        url: format!("http://{}/graphql", far_server.address),
        shape: SHOP_PAGE,
        token: None,
    };
    let far = Direct {
        client: dynamo::client_for_local(&proxy),
        names: names.clone(),
    };
    let (mut far_pages, mut far_queries, mut far_both) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..WARM_UP + FAR_SAMPLES {
        let a = far_api.page_timed(LONG_USER, None, None).await?;
        let q = far.query_timed(LONG_USER).await?;
        let c = far.get_with_query_timed(LONG_USER).await?;
        if i >= WARM_UP {
            far_pages.push(a);
            far_queries.push(q);
            far_both.push(c);
        }
    }
    drop(far_server);
    let (far_p50, far_q_p50, far_both_p50) = (
        percentile(&mut far_pages, 0.5),
        percentile(&mut far_queries, 0.5),
        percentile(&mut far_both, 0.5),
    );
    rows.push(row(
        format!("page of 20, p50, {} ms added each way", DELAY.as_millis()),
        ms(far_p50),
        format!(
            "{} (Query) / {} (GetItem and Query together)",
            ms(far_q_p50),
            ms(far_both_p50)
        ),
        format!(
            "{:.2} / {:.2}",
            ratio(far_p50, far_q_p50),
            ratio(far_p50, far_both_p50)
        ),
        "at most 1.10",
    ));

    // Server CPU per page at a fixed concurrency, from /proc. The load runs in rounds, each
    // page's in turn (the shop page; with a baseline, the baseline's; the single-table example's
    // two), in an order that changes from round to round as in the latency loop, so that drift
    // affects all alike. A page's server is read before and after each of that page's rounds,
    // and its CPU is what those windows add up to: the single-table example's two pages share
    // one server, and no server is charged for the time it idles during another's rounds.
    let api = Arc::new(api);
    let mut loaded = vec![(server.pid(), Arc::clone(&api), LONG_USER)];
    if let (Some((base, _)), Some(base_api)) = (&base_server, base_api) {
        loaded.push((base.pid(), Arc::new(base_api), LONG_USER));
    }
    let secure_at = loaded.len();
    loaded.push((secure_server.pid(), Arc::clone(&secure_api), LONG_USER));
    let (orders_at, activity_at) = (loaded.len(), loaded.len() + 1);
    loaded.push((ecommerce_server.pid(), Arc::clone(&orders_api), CUSTOMER));
    loaded.push((ecommerce_server.pid(), Arc::clone(&activity_api), CUSTOMER));
    // The Node reference's rounds take their turn with the others'.
    let peer_load = match (&peer, &peer_api) {
        (Some(peer), Some(peer_api)) if peer_down.is_none() => {
            Some((peer.pid(), Arc::clone(peer_api), LONG_USER))
        }
        _ => None,
    };
    let peer_at = peer_load.as_ref().map(|_| loaded.len());
    loaded.extend(peer_load.clone());
    let (walls, ticks) = cpu_rounds(&loaded, CONCURRENCY, peer_at, &mut peer_down).await?;
    let per_page = ticks
        .into_iter()
        .map(|t| Ok(ticks_to_duration(t)?.as_secs_f64() / CONCURRENT_PAGES as f64))
        .collect::<anyhow::Result<Vec<_>>>()?;
    drop(loaded);
    // The shop page's server again, and the Node reference, at twice the clients: the same
    // pages and rounds, alternating between the two.
    let mut high = vec![(server.pid(), Arc::clone(&api), LONG_USER)];
    let high_peer_at = match peer_load {
        Some(peer_load) if peer_down.is_none() => {
            high.push(peer_load);
            Some(1)
        }
        _ => None,
    };
    let (high_walls, high_ticks) =
        cpu_rounds(&high, HIGH_CONCURRENCY, high_peer_at, &mut peer_down).await?;
    let high_per_page = high_ticks
        .into_iter()
        .map(|t| Ok(ticks_to_duration(t)?.as_secs_f64() / CONCURRENT_PAGES as f64))
        .collect::<anyhow::Result<Vec<_>>>()?;
    drop(high);
    // The Node reference's CPU per page at both concurrencies, when all its rounds ran.
    let peer_cpu = match (peer_at, high_peer_at, &peer_down) {
        (Some(low), Some(high), None) => Some((
            (per_page[low], walls[low]),
            (high_per_page[high], high_walls[high]),
        )),
        _ => None,
    };
    drop((peer_api, peer));
    // The SDK floor, with every server idle: the page's DynamoDB calls from this process alone.
    let mut floors = Vec::new();
    let per_core = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    for flavor in [
        FloorRuntime::CurrentThread,
        FloorRuntime::MultiThread,
        FloorRuntime::PerCore(per_core),
    ] {
        let ticks = sdk_floor(flavor, &endpoint, &names).await?;
        floors.push((
            flavor,
            ticks_to_duration(ticks)?.as_secs_f64() / FLOOR_PAGES as f64,
        ));
    }
    drop(base_server);
    let rate = |wall: Duration| {
        format!(
            "{:.0} pages/s",
            CONCURRENT_PAGES as f64 / wall.as_secs_f64()
        )
    };
    let cpu_note = if base_api_present {
        at_most(&format!(
            "{} (baseline {}); {CPU_ROUNDS} alternating rounds",
            rate(walls[0]),
            rate(walls[1])
        ))
    } else {
        format!(
            "{}; {CPU_ROUNDS} rounds, alternating with the secure shop's, the single-table pages'{}",
            rate(walls[0]),
            if peer_at.is_some() {
                " and the Node reference's"
            } else {
                ""
            }
        )
    };
    let micros = |seconds: f64| format!("{:.0} µs", seconds * 1e6);
    rows.push(
        row(
            format!("server CPU per page ({CONCURRENCY} clients)"),
            micros(per_page[0]),
            "",
            "",
            cpu_note,
        )
        .beside(
            base_api_present.then(|| (micros(per_page[1]), quotient(per_page[0], per_page[1]))),
        ),
    );
    rows.push(row(
        format!(
            "secure shop (`secure.toml`), the shop page with an RS256 token, server CPU per page ({CONCURRENCY} clients)"
        ),
        micros(per_page[secure_at]),
        "",
        quotient(per_page[secure_at], per_page[0]),
        format!(
            "ratio: / the open shop page's, at most 1.05; token verified (then cached) and rules applied; {}",
            rate(walls[secure_at])
        ),
    ));
    drop((secure_api, secure_server, token_issuer));
    for (shape, cpu, wall) in [
        (ORDERS_PAGE, per_page[orders_at], walls[orders_at]),
        (ACTIVITY_PAGE, per_page[activity_at], walls[activity_at]),
    ] {
        rows.push(to_shop(
            shape,
            &format!("server CPU per page ({CONCURRENCY} clients)"),
            micros(cpu),
            quotient(cpu, per_page[0]),
            &format!(", at most 1.10; {}", rate(wall)),
        ));
    }
    rows.push(row(
        format!("server CPU per page ({HIGH_CONCURRENCY} clients)"),
        micros(high_per_page[0]),
        "",
        "",
        format!(
            "{}; {CPU_ROUNDS} rounds{}",
            rate(high_walls[0]),
            if high_peer_at.is_some() {
                ", alternating with the Node reference"
            } else {
                ""
            }
        ),
    ));
    for (clients, peer_cpu) in [
        (CONCURRENCY, peer_cpu.map(|(low, _)| low)),
        (HIGH_CONCURRENCY, peer_cpu.map(|(_, high)| high)),
    ] {
        let ours = if clients == CONCURRENCY {
            per_page[0]
        } else {
            high_per_page[0]
        };
        rows.push(peer_row(
            format!("server CPU per page ({clients} clients), against the Node reference"),
            micros(ours),
            peer_cpu.map(|(cpu, _)| (micros(cpu), quotient(ours, cpu))),
            peer_down.as_deref(),
            &format!(
                ": target at most 0.25, at least at most 0.33; Node {}",
                peer_cpu.map_or_else(String::new, |(_, wall)| rate(wall))
            ),
        ));
    }
    for (flavor, floor) in floors {
        rows.push(row(
            format!(
                "SDK floor: the page's GetItem and Query through aws-sdk-dynamodb alone, CPU per page, {}",
                flavor.describe()
            ),
            micros(per_page[0]),
            format!("{} (the bench process, {CONCURRENCY} tasks)", micros(floor)),
            quotient(per_page[0], floor),
            format!(
                "dynarelay's server CPU ({CONCURRENCY} clients) / floor: target at most 1.3, at least at most 1.6; the SDK, its HTTP client and JSON, not DynamoDB Local's CPU; {FLOOR_PAGES} pages"
            ),
        ));
    }

    // DynamoDB calls per page, by operation, from each server's /metrics over a walk of
    // consecutive pages from the first (only the bench talks to the servers now).
    let shop_calls = api.calls_per_page(LONG_USER).await?;
    rows.push(row(
        format!("{}, DynamoDB calls per page", SHOP_PAGE.name),
        calls_text(&shop_calls),
        "",
        "",
        format!("pages 1 to {CALL_PAGES}, counted from /metrics"),
    ));
    for page_api in [&orders_api, &activity_api] {
        let calls = page_api.calls_per_page(CUSTOMER).await?;
        rows.push(to_shop(
            page_api.shape,
            "DynamoDB calls per page",
            calls_text(&calls),
            quotient(
                calls.values().sum::<f64>(),
                shop_calls.values().sum::<f64>(),
            ),
            ", all calls; one Query per page, as the shop page",
        ));
    }
    drop((orders_api, activity_api, ecommerce_server));

    // DynamoDB work per filled page at 2% selectivity.
    let (ours_calls, ours_items) = api.filtered_walk(SPARSE_USER).await?;
    let (naive_calls, naive_items) = direct.naive_filtered_walk(SPARSE_USER).await?;
    rows.push(row(
        "DynamoDB calls per filled page, 2% match",
        format!("{ours_calls:.1}"),
        format!("{naive_calls:.1} (naive, Limit = 20)"),
        format!("{:.2}", ours_calls / naive_calls),
        "at most 0.33",
    ));
    rows.push(row(
        "items evaluated per filled page, 2% match",
        format!("{ours_items:.0}"),
        format!("{naive_items:.0} (naive, Limit = 20)"),
        format!("{:.2}", ours_items / naive_items),
        "",
    ));

    // Page 1 against page 1000 of the long partition.
    let mut after = None;
    for _ in 1..DEEP_PAGE {
        after = Some(api.page_cursor(LONG_USER, after.as_deref()).await?);
    }
    // The same two Queries made directly: page 1000 starts after item 19,980.
    let deep_start = BASE_MS + ((DEEP_PAGE - 1) * PAGE) as i64 * 1000 - 1000;
    let (mut first, mut deep, mut direct_first, mut direct_deep) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut added_first, mut added_deep) = (Vec::new(), Vec::new());
    for i in 0..WARM_UP + DEEP_SAMPLES {
        let f = api.page_timed(LONG_USER, None, None).await?;
        let d = api.page_timed(LONG_USER, after.as_deref(), None).await?;
        let df = direct.query_timed(LONG_USER).await?;
        let dd = direct.query_after_timed(LONG_USER, deep_start).await?;
        if i >= WARM_UP {
            first.push(f);
            deep.push(d);
            direct_first.push(df);
            direct_deep.push(dd);
            added_first.push(f.as_secs_f64() - df.as_secs_f64());
            added_deep.push(d.as_secs_f64() - dd.as_secs_f64());
        }
    }
    let (first_p50, deep_p50) = (percentile(&mut first, 0.5), percentile(&mut deep, 0.5));
    let (direct_first_p50, direct_deep_p50) = (
        percentile(&mut direct_first, 0.5),
        percentile(&mut direct_deep, 0.5),
    );
    rows.push(row(
        format!("page {DEEP_PAGE} / page 1, p50"),
        format!("{} / {}", ms(deep_p50), ms(first_p50)),
        format!(
            "{} / {} (the same Queries)",
            ms(direct_deep_p50),
            ms(direct_first_p50)
        ),
        format!(
            "{:.2} / {:.2}",
            ratio(deep_p50, first_p50),
            ratio(direct_deep_p50, direct_first_p50)
        ),
        "at most 1.2",
    ));
    let (added_first, added_deep) = (median(&mut added_first), median(&mut added_deep));
    rows.push(row(
        format!("time dynarelay adds, page {DEEP_PAGE} / page 1, p50"),
        format!("{:.2} ms / {:.2} ms", added_deep * 1e3, added_first * 1e3),
        "",
        format!("{:.2}", added_deep / added_first),
        "page minus the same Query, sample by sample",
    ));
    let busy_rss = rss_kib(server.pid())?;
    rows.push(row(
        "RSS after the run",
        format!("{:.1} MiB", busy_rss as f64 / 1024.0),
        "",
        "",
        "",
    ));

    print_table(&rows, &binary, baseline.as_ref());
    Ok(())
}

/// The shop model the server is started with.
const SHOP_MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/shop/dynarelay.toml");
/// The shop with rules on who may see what, on the same tables: its page is the shop page,
/// sent with an RS256 token of the page's user.
const SECURE_MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/shop/secure.toml");
/// The single-table example, served by a second server.
const ECOMMERCE_MODEL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/ecommerce/dynarelay.toml"
);

/// The full names of the shop tables the bench reads directly.
#[derive(Debug, Clone)]
struct ShopNames {
    users: String,
    purchases: String,
}

impl ShopNames {
    fn with_prefix(prefix: &str) -> Self {
        Self {
            users: format!("{prefix}Users"),
            purchases: format!("{prefix}Purchases"),
        }
    }
}

async fn seed(store: &Store, names: &ShopNames) -> anyhow::Result<()> {
    let user = |id: &str| {
        Item::from([
            ("userId".to_owned(), AttributeValue::S(id.to_owned())),
            ("name".to_owned(), AttributeValue::S(format!("User {id}"))),
            (
                "email".to_owned(),
                AttributeValue::S(format!("{id}@example.com")),
            ),
            (
                "createdAt".to_owned(),
                AttributeValue::N(BASE_MS.to_string()),
            ),
        ])
    };
    store
        .put_items(&names.users, vec![user(LONG_USER), user(SPARSE_USER)])
        .await?;
    let purchase = |id: &str, i: i64, status: &str| {
        Item::from([
            ("userId".to_owned(), AttributeValue::S(id.to_owned())),
            (
                "purchasedAt".to_owned(),
                AttributeValue::N((BASE_MS + i * 1000).to_string()),
            ),
            ("sku".to_owned(), AttributeValue::S("SKU-00001".to_owned())),
            ("quantity".to_owned(), AttributeValue::N("1".to_owned())),
            (
                "amount".to_owned(),
                AttributeValue::N(format!("{}.99", i % 500)),
            ),
            ("status".to_owned(), AttributeValue::S(status.to_owned())),
        ])
    };
    let mut items: Vec<Item> = (0..LONG_PURCHASES)
        .map(|i| purchase(LONG_USER, i, "PAID"))
        .collect();
    items.extend((0..SPARSE_PURCHASES).map(|i| {
        let status = if i % SPARSE_EVERY == 0 {
            "REFUNDED"
        } else {
            "PAID"
        };
        purchase(SPARSE_USER, i, status)
    }));
    // Four writers at once.
    let table = names.purchases.clone();
    let mut writers = tokio::task::JoinSet::new();
    let chunk = items.len().div_ceil(4);
    while !items.is_empty() {
        let rest = items.split_off(items.len().saturating_sub(chunk));
        let (store, table) = (store.clone(), table.clone());
        writers.spawn(async move { store.put_items(&table, rest).await });
    }
    while let Some(done) = writers.join_next().await {
        done??;
    }
    Ok(())
}

/// Seeds the single-table example's `table` with [`CUSTOMER`] shaped like the shop's long user:
/// the profile, [`ADDRESSES`], and as many orders as the long user has purchases, one a second
/// from [`BASE_MS`] with the same amounts. Every item is written raw, with each key attribute
/// the model's templates give it (facets hold no separator, so none needs escaping).
async fn seed_ecommerce(store: &Store, table: &str) -> anyhow::Result<()> {
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let iso = |ms: i64| -> anyhow::Result<String> {
        Ok(chrono::DateTime::from_timestamp_millis(ms)
            .context("a time out of range")?
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
    };
    let partition = format!("CUSTOMER#{CUSTOMER}");
    let mut items = vec![Item::from([
        ("PK".to_owned(), s(&partition)),
        ("SK".to_owned(), s(&partition)),
        ("username".to_owned(), s(CUSTOMER)),
        ("name".to_owned(), s(&format!("Customer {CUSTOMER}"))),
        ("email".to_owned(), s(&format!("{CUSTOMER}@example.com"))),
        ("joinedAt".to_owned(), s(&iso(BASE_MS)?)),
    ])];
    items.extend(ADDRESSES.iter().enumerate().map(|(i, label)| {
        Item::from([
            ("PK".to_owned(), s(&partition)),
            ("SK".to_owned(), s(&format!("ADDRESS#{label}"))),
            ("username".to_owned(), s(CUSTOMER)),
            ("label".to_owned(), s(label)),
            ("street".to_owned(), s(&format!("{} Main Street", i + 1))),
            ("city".to_owned(), s("Springfield")),
            ("postcode".to_owned(), s(&format!("1000{i}"))),
            ("country".to_owned(), s("US")),
        ])
    }));
    for i in 0..LONG_PURCHASES {
        let placed_at = iso(BASE_MS + i * 1000)?;
        let order_id = format!("O{i:06}");
        let status = "PLACED";
        items.push(Item::from([
            ("PK".to_owned(), s(&partition)),
            ("SK".to_owned(), s(&format!("ORDER#{placed_at}#{order_id}"))),
            ("GSI1PK".to_owned(), s(&format!("ORDER#{order_id}"))),
            ("GSI1SK".to_owned(), s(&format!("ORDER#{order_id}"))),
            ("GSI2PK".to_owned(), s(&format!("STATUS#{status}"))),
            ("GSI2SK".to_owned(), s(&format!("{placed_at}#{order_id}"))),
            ("username".to_owned(), s(CUSTOMER)),
            ("orderId".to_owned(), s(&order_id)),
            ("placedAt".to_owned(), s(&placed_at)),
            ("status".to_owned(), s(status)),
            (
                "total".to_owned(),
                AttributeValue::N(format!("{}.99", i % 500)),
            ),
            ("itemCount".to_owned(), AttributeValue::N("1".to_owned())),
        ]));
    }
    // Four writers at once, as for the shop.
    let mut writers = tokio::task::JoinSet::new();
    let chunk = items.len().div_ceil(4);
    while !items.is_empty() {
        let rest = items.split_off(items.len().saturating_sub(chunk));
        let (store, table) = (store.clone(), table.to_owned());
        writers.spawn(async move { store.put_items(&table, rest).await });
    }
    while let Some(done) = writers.join_next().await {
        done??;
    }
    Ok(())
}

/// The server, killed on drop.
struct Server {
    child: Child,
    address: String,
    started: Instant,
}

impl Server {
    /// Starts `binary serve` with the model file `model` on the tables under `prefix`. The
    /// current binary logs to stderr, releases before the model file logged to stdout: the
    /// "dynarelay is listening" line is looked for on both streams, and both are read to the end
    /// so that neither pipe fills up. Binaries before the model file ignore `DYNARELAY_MODEL`
    /// and serve the compiled-in shop.
    fn start(binary: &Path, endpoint: &str, prefix: &str, model: &str) -> anyhow::Result<Self> {
        Self::start_with(binary, endpoint, prefix, model, &[])
    }

    /// [`Server::start`] with more environment variables.
    fn start_with(
        binary: &Path,
        endpoint: &str,
        prefix: &str,
        model: &str,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let started = Instant::now();
        let mut command = Command::new(binary);
        let mut child = loopback_aws(command.arg("serve"), endpoint)
            .env("DYNARELAY_TABLE_PREFIX", prefix)
            .env("DYNARELAY_MODEL", model)
            .env("DYNARELAY_CURSOR_KEYS", TEST_RING)
            .env("DYNARELAY_LISTEN", "127.0.0.1:0")
            .env("RUST_LOG", "warn,dynarelay=info")
            // Every request comes from 127.0.0.1: the default per-caller rate limits would cap
            // the throughput measured, so they are raised out of the way but left on, and their
            // cost is part of every page's. (Binaries without them ignore these.)
            .env("DYNARELAY_RATE_LIMIT_REQUESTS", "1000000")
            .env("DYNARELAY_RATE_LIMIT_BURST", "2000000")
            .env("DYNARELAY_RATE_LIMIT_READ_UNITS", "1000000")
            .env("DYNARELAY_RATE_LIMIT_READ_BURST", "2000000")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {} serve", binary.display()))?;
        let (tx, rx) = std::sync::mpsc::channel();
        // The last lines seen, for the error when no address comes.
        let seen = LastLines::follow(&mut child, move |line| {
            if line.contains("dynarelay is listening")
                && let Some(address) = line
                    .split("address=")
                    .nth(1)
                    .and_then(|s| s.split_whitespace().next())
            {
                let _ = tx.send(address.to_owned());
            }
        })?;
        // Disconnected once both streams have ended without the line.
        let mut server = Self {
            child,
            address: String::new(),
            started,
        };
        server.address = rx.recv_timeout(Duration::from_secs(30)).map_err(|e| {
            let seen = seen.text();
            anyhow::anyhow!(
                "{} serve did not log its address ({}); its last output:\n{seen}",
                binary.display(),
                match e {
                    std::sync::mpsc::RecvTimeoutError::Timeout => "within 30 s",
                    std::sync::mpsc::RecvTimeoutError::Disconnected => "before its output ended",
                }
            )
        })?;
        Ok(server)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Polls `/ready` until it answers 200; the time from spawning the process.
    async fn wait_ready(&self) -> anyhow::Result<Duration> {
        let http = reqwest::Client::new();
        let url = format!("http://{}/ready", self.address);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(response) = http.get(&url).send().await
                && response.status() == 200
            {
                return Ok(self.started.elapsed());
            }
            ensure!(Instant::now() < deadline, "not ready within 30 s");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last 20 lines a child process wrote to stdout and stderr, read by a thread per stream.
#[derive(Clone)]
struct LastLines(Arc<std::sync::Mutex<Vec<String>>>);

impl LastLines {
    /// Follows `child`'s piped stdout and stderr, calling `on_line` with every line first.
    fn follow(
        child: &mut Child,
        on_line: impl Fn(&str) + Clone + Send + 'static,
    ) -> anyhow::Result<Self> {
        let seen = Self(Arc::default());
        let stdout = child.stdout.take().context("no stdout")?;
        let stderr = child.stderr.take().context("no stderr")?;
        let streams: [Box<dyn std::io::Read + Send>; 2] = [Box::new(stdout), Box::new(stderr)];
        for stream in streams {
            let (seen, on_line) = (seen.clone(), on_line.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    on_line(&line);
                    if let Ok(mut lines) = seen.0.lock() {
                        if lines.len() == 20 {
                            lines.remove(0);
                        }
                        lines.push(line);
                    }
                }
            });
        }
        Ok(seen)
    }

    fn text(&self) -> String {
        self.0.lock().map(|s| s.join("\n")).unwrap_or_default()
    }
}

/// A page the bench requests: its query, with `$u` the lookup's key, `$after` and (when
/// `filtered`) `$status`, and where its connection is in the response.
#[derive(Debug, Clone, Copy)]
struct PageShape {
    query: &'static str,
    /// The root field the connection hangs off: `data.<lookup>.<connection>`.
    lookup: &'static str,
    connection: &'static str,
    /// How the table names the page.
    name: &'static str,
    /// Whether the query declares `$status`.
    filtered: bool,
}

/// One server's `/graphql`, and the page the bench asks it for.
struct Api {
    http: reqwest::Client,
    url: String,
    shape: PageShape,
    /// A bearer token sent with every request, if any.
    token: Option<String>,
}

/// DynamoDB calls by operation, summed over tables and outcomes, from the counter
/// `dynarelay_dynamodb_calls_total` of a `/metrics` text.
fn dynamodb_calls(text: &str) -> anyhow::Result<BTreeMap<String, f64>> {
    let mut calls = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("dynarelay_dynamodb_calls_total{") else {
            continue;
        };
        let (labels, value) = rest.rsplit_once("} ").context("odd calls line")?;
        let operation = labels
            .split(',')
            .find_map(|label| label.strip_prefix("operation=\""))
            .and_then(|op| op.strip_suffix('"'))
            .context("a calls line without its operation")?;
        *calls.entry(operation.to_owned()).or_insert(0.0) += value.trim().parse::<f64>()?;
    }
    Ok(calls)
}

/// Calls per page by operation, such as `1.00 GetItem + 1.00 Query`.
fn calls_text(calls: &BTreeMap<String, f64>) -> String {
    if calls.is_empty() {
        return "none".to_owned();
    }
    calls
        .iter()
        .map(|(operation, n)| format!("{n:.2} {operation}"))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Running sums and counts of the server's own timers, from `/metrics`: the time it spends on
/// `/graphql` requests, and on GetItem and Query calls.
#[derive(Debug, Default, Clone, Copy)]
struct Timers {
    page: (f64, f64),
    get: (f64, f64),
    query: (f64, f64),
}

/// Mean durations between two [`Timers`] readings.
struct Means {
    page: Duration,
    get: Duration,
    query: Duration,
}

impl Timers {
    fn parse(text: &str) -> anyhow::Result<Self> {
        let read = |series: &str| -> anyhow::Result<f64> {
            let line = text
                .lines()
                .find(|line| line.starts_with(series) && line[series.len()..].starts_with(' '))
                .with_context(|| format!("no {series} in /metrics"))?;
            Ok(line[series.len()..].trim().parse()?)
        };
        let pair = |metric: &str, label: &str| -> anyhow::Result<(f64, f64)> {
            Ok((
                read(&format!("{metric}_sum{{{label}}}"))?,
                read(&format!("{metric}_count{{{label}}}"))?,
            ))
        };
        Ok(Self {
            page: pair(
                "dynarelay_http_request_duration_seconds",
                "route=\"/graphql\"",
            )?,
            get: pair(
                "dynarelay_dynamodb_call_duration_seconds",
                "operation=\"GetItem\"",
            )?,
            query: pair(
                "dynarelay_dynamodb_call_duration_seconds",
                "operation=\"Query\"",
            )?,
        })
    }

    fn since(&self, before: &Self) -> Means {
        let mean = |(sum, count): (f64, f64), (sum0, count0): (f64, f64)| {
            Duration::from_secs_f64((sum - sum0) / (count - count0).max(1.0))
        };
        Means {
            page: mean(self.page, before.page),
            get: mean(self.get, before.get),
            query: mean(self.query, before.query),
        }
    }
}

impl Api {
    /// The body of `GET path` on the server, checked to be a success.
    async fn get(&self, path: &str) -> anyhow::Result<String> {
        let url = self.url.replace("/graphql", path);
        Ok(self
            .http
            .get(url)
            .send()
            .await?
            .error_for_status()?
            .text()
            .await?)
    }

    /// The server's timers now.
    async fn timers(&self) -> anyhow::Result<Timers> {
        Timers::parse(&self.get("/metrics").await?)
    }

    async fn page(
        &self,
        user: &str,
        after: Option<&str>,
        status: Option<&str>,
    ) -> anyhow::Result<(Duration, Value)> {
        let mut variables = json!({ "u": user, "after": after });
        if self.shape.filtered {
            variables["status"] = json!(status);
        } else {
            ensure!(status.is_none(), "{} takes no status", self.shape.name);
        }
        let body = json!({ "query": self.shape.query, "variables": variables }).to_string();
        let started = Instant::now();
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json");
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let bytes = request
            .body(body)
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?;
        let elapsed = started.elapsed();
        let value: Value = serde_json::from_slice(&bytes)?;
        if value.get("errors").is_some() {
            bail!("the page failed: {value}");
        }
        Ok((elapsed, value))
    }

    /// The page's connection in a response.
    fn connection<'v>(&self, value: &'v Value) -> &'v Value {
        &value["data"][self.shape.lookup][self.shape.connection]
    }

    /// The latency of `GET /health`, which answers at once.
    async fn health_timed(&self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        self.get("/health").await?;
        Ok(started.elapsed())
    }

    /// One page's latency, checked to be a full page.
    async fn page_timed(
        &self,
        user: &str,
        after: Option<&str>,
        status: Option<&str>,
    ) -> anyhow::Result<Duration> {
        let (elapsed, value) = self.page(user, after, status).await?;
        let edges = self.connection(&value)["edges"]
            .as_array()
            .map_or(0, Vec::len);
        ensure!(edges == PAGE, "a page of {edges} edges: {value}");
        Ok(elapsed)
    }

    /// The end cursor of a full page that has a next page.
    async fn page_cursor(&self, user: &str, after: Option<&str>) -> anyhow::Result<String> {
        let (_, value) = self.page(user, after, None).await?;
        let edges = self.connection(&value)["edges"]
            .as_array()
            .map_or(0, Vec::len);
        ensure!(edges == PAGE, "a page of {edges} edges: {value}");
        let info = &self.connection(&value)["pageInfo"];
        ensure!(info["hasNextPage"] == true, "the partition ended early");
        Ok(info["endCursor"]
            .as_str()
            .context("no endCursor")?
            .to_owned())
    }

    /// DynamoDB calls per page by operation, from the server's `/metrics` around a walk of
    /// [`CALL_PAGES`] full pages of `owner`'s, from the first.
    async fn calls_per_page(&self, owner: &str) -> anyhow::Result<BTreeMap<String, f64>> {
        let before = dynamodb_calls(&self.get("/metrics").await?)?;
        let mut after = None;
        for _ in 0..CALL_PAGES {
            after = Some(self.page_cursor(owner, after.as_deref()).await?);
        }
        let mut calls = dynamodb_calls(&self.get("/metrics").await?)?;
        for (operation, n) in &mut calls {
            *n = (*n - before.get(operation).copied().unwrap_or(0.0)) / CALL_PAGES as f64;
        }
        calls.retain(|_, n| *n > 0.0);
        Ok(calls)
    }

    /// Walks the `REFUNDED` purchases of `user`; DynamoDB calls and items evaluated per filled
    /// page, from `extensions.cost` less the user's GetItem (one call, one item).
    async fn filtered_walk(&self, user: &str) -> anyhow::Result<(f64, f64)> {
        let (mut calls, mut items, mut filled) = (0u64, 0u64, 0u64);
        let mut after: Option<String> = None;
        loop {
            let (_, value) = self.page(user, after.as_deref(), Some("REFUNDED")).await?;
            let cost = &value["extensions"]["cost"];
            let page = self.connection(&value);
            if page["edges"].as_array().map_or(0, Vec::len) == PAGE {
                calls += cost["dynamodbCalls"].as_u64().context("no cost")? - 1;
                items += cost["itemsEvaluated"].as_u64().context("no cost")? - 1;
                filled += 1;
            }
            if page["pageInfo"]["hasNextPage"] != true {
                break;
            }
            after = page["pageInfo"]["endCursor"].as_str().map(str::to_owned);
        }
        ensure!(filled > 0, "no filled page");
        Ok((calls as f64 / filled as f64, items as f64 / filled as f64))
    }
}

struct Direct {
    client: Client,
    names: ShopNames,
}

impl Direct {
    /// The Query as dynarelay's store builds it for an unfiltered page, with the consumed
    /// capacity it asks for (it feeds `extensions.cost`), so that both sides ask DynamoDB for the
    /// same work.
    fn query(
        &self,
        user: &str,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.names.purchases)
            .key_condition_expression("#pk = :pk")
            .expression_attribute_names("#pk", "userId")
            .expression_attribute_values(":pk", AttributeValue::S(user.to_owned()))
            .scan_index_forward(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
    }

    /// The user's GetItem, as the store sends it.
    fn get_user(
        &self,
        user: &str,
    ) -> aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder {
        self.client
            .get_item()
            .table_name(&self.names.users)
            .key("userId", AttributeValue::S(user.to_owned()))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
    }

    /// The Query dynarelay sends for a page of 20 (it reads one item more).
    async fn query_timed(&self, user: &str) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let out = self.query(user).limit(PAGE as i32 + 1).send().await?;
        let elapsed = started.elapsed();
        ensure!(out.items().len() == PAGE + 1);
        Ok(elapsed)
    }

    /// The Query for the page after the purchase at `after_ms`.
    async fn query_after_timed(&self, user: &str, after_ms: i64) -> anyhow::Result<Duration> {
        let start = HashMap::from([
            ("userId".to_owned(), AttributeValue::S(user.to_owned())),
            (
                "purchasedAt".to_owned(),
                AttributeValue::N(after_ms.to_string()),
            ),
        ]);
        let started = Instant::now();
        let out = self
            .query(user)
            .limit(PAGE as i32 + 1)
            .set_exclusive_start_key(Some(start))
            .send()
            .await?;
        let elapsed = started.elapsed();
        ensure!(out.items().len() == PAGE + 1);
        Ok(elapsed)
    }

    /// The user's GetItem, then the page's Query.
    async fn get_and_query_timed(&self, user: &str) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let got = self.get_user(user).send().await?;
        let out = self.query(user).limit(PAGE as i32 + 1).send().await?;
        let elapsed = started.elapsed();
        ensure!(got.item.is_some() && out.items().len() == PAGE + 1);
        Ok(elapsed)
    }

    /// The user's GetItem and the page's Query at the same time.
    async fn get_with_query_timed(&self, user: &str) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let get = self.get_user(user).send();
        let query = self.query(user).limit(PAGE as i32 + 1).send();
        let (got, out) = tokio::join!(get, query);
        let elapsed = started.elapsed();
        ensure!(got?.item.is_some() && out?.items().len() == PAGE + 1);
        Ok(elapsed)
    }

    /// The naive loop: Query with `Limit = 20` and the filter until 20 match, page after page.
    async fn naive_filtered_walk(&self, user: &str) -> anyhow::Result<(f64, f64)> {
        let (mut calls, mut items, mut filled) = (0u64, 0u64, 0u64);
        let (mut page_calls, mut page_items, mut matched) = (0u64, 0u64, 0usize);
        let mut start: Option<HashMap<String, AttributeValue>> = None;
        loop {
            let out = self
                .query(user)
                .filter_expression("#s = :s")
                .expression_attribute_names("#s", "status")
                .expression_attribute_values(":s", AttributeValue::S("REFUNDED".to_owned()))
                .limit(PAGE as i32)
                .set_exclusive_start_key(start.take())
                .send()
                .await?;
            page_calls += 1;
            page_items += u64::try_from(out.scanned_count)?;
            matched += out.items().len();
            if matched >= PAGE {
                calls += page_calls;
                items += page_items;
                filled += 1;
                (page_calls, page_items, matched) = (0, 0, 0);
            }
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        ensure!(filled > 0, "no filled page");
        Ok((calls as f64 / filled as f64, items as f64 / filled as f64))
    }
}

/// A TCP proxy on 127.0.0.1 in front of DynamoDB Local that delivers every chunk `delay` after
/// it arrived, in each direction, keeping order: a fixed one-way latency, like a network link.
/// Written here because it is a few lines on tokio; the test suite's fault proxy lives in the
/// test crate, which a bench cannot import.
struct DelayProxy;

impl DelayProxy {
    /// Starts the proxy; its endpoint URL.
    async fn start(endpoint: &str, delay: Duration) -> anyhow::Result<String> {
        let upstream = endpoint
            .strip_prefix("http://")
            .context("an http:// endpoint")?
            .to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let _ = (client.set_nodelay(true), server.set_nodelay(true));
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    tokio::join!(
                        Self::pump(client_read, server_write, delay),
                        Self::pump(server_read, client_write, delay)
                    );
                });
            }
        });
        Ok(format!("http://{address}"))
    }

    /// Copies `from` to `to`, each chunk `delay` after it was read.
    async fn pump(
        mut from: tokio::net::tcp::OwnedReadHalf,
        mut to: tokio::net::tcp::OwnedWriteHalf,
        delay: Duration,
    ) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
        let writer = async move {
            while let Some((due, chunk)) = rx.recv().await {
                tokio::time::sleep_until(due.into()).await;
                if to.write_all(&chunk).await.is_err() {
                    break;
                }
            }
            let _ = to.shutdown().await;
        };
        let reader = async move {
            let mut buf = vec![0u8; 64 * 1024];
            while let Ok(n) = from.read(&mut buf).await {
                if n == 0
                    || tx
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                {
                    break;
                }
            }
        };
        tokio::join!(reader, writer);
    }
}

fn mean(samples: &[Duration]) -> Duration {
    samples.iter().sum::<Duration>() / u32::try_from(samples.len().max(1)).unwrap_or(u32::MAX)
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_unstable_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    let rank = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[rank.min(samples.len() - 1)]
}

/// The order in which sample (or round) `i` visits `n` pages: rotated by one every second
/// sample, and reversed in every odd one, so that each page goes before each other as often as
/// after (for two pages: 0 1, 1 0, 1 0, 0 1, ...).
fn interleaved(n: usize, i: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.rotate_left((i / 2) % n.max(1));
    if i % 2 == 1 {
        order.reverse();
    }
    order
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("no VmRSS")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .context("no VmRSS value")?
        .parse()?)
}

/// User plus system CPU time of a process, in clock ticks (fields 14 and 15 of
/// `/proc/<pid>/stat`, counted after the parenthesised command name).
fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_name = stat.rsplit_once(')').context("odd stat")?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    Ok(fields[11].parse::<u64>()? + fields[12].parse::<u64>()?)
}

fn ticks_to_duration(ticks: u64) -> anyhow::Result<Duration> {
    let out = Command::new("getconf").arg("CLK_TCK").output()?;
    let per_second: u64 = String::from_utf8(out.stdout)?.trim().parse()?;
    Ok(Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// `pages` requests of `owner`'s first page (the long partition's) from `clients` clients at
/// once; the wall time they took.
async fn load(
    api: &Arc<Api>,
    owner: &'static str,
    pages: usize,
    clients: usize,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..clients {
        let api = Arc::clone(api);
        let share = pages / clients + usize::from(client < pages % clients);
        tasks.spawn(async move {
            for _ in 0..share {
                api.page_timed(owner, None, None).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(started.elapsed())
}

/// A page under load: its server's pid, the page, and whose page it asks for.
type Loaded = (u32, Arc<Api>, &'static str);

/// [`CONCURRENT_PAGES`] pages of each of `loaded` from `clients` clients at once, in
/// [`CPU_ROUNDS`] rounds, each page's in turn in an order that changes from round to round (see
/// [`interleaved`]). A page's server is read before and after each of that page's rounds: for each
/// page, the wall time of its rounds and the CPU ticks its server spent in them. The page at
/// `peer_at` is the Node reference's: when its load fails, `peer_down` says why, its rounds stop,
/// and the others go on.
async fn cpu_rounds(
    loaded: &[Loaded],
    clients: usize,
    peer_at: Option<usize>,
    peer_down: &mut Option<String>,
) -> anyhow::Result<(Vec<Duration>, Vec<u64>)> {
    let (mut walls, mut ticks) = (vec![Duration::ZERO; loaded.len()], vec![0; loaded.len()]);
    let pages = CONCURRENT_PAGES / CPU_ROUNDS;
    for round in 0..CPU_ROUNDS {
        for k in interleaved(loaded.len(), round) {
            let (pid, page_api, owner) = &loaded[k];
            let measured = async {
                let before = cpu_ticks(*pid)?;
                let wall = load(page_api, owner, pages, clients).await?;
                anyhow::Ok((wall, cpu_ticks(*pid)? - before))
            };
            if Some(k) == peer_at {
                if peer_down.is_some() {
                    continue;
                }
                match measured.await {
                    Ok((wall, t)) => {
                        walls[k] += wall;
                        ticks[k] += t;
                    }
                    Err(e) => *peer_down = Some(peer_failed("its CPU load", &e)),
                }
            } else {
                let (wall, t) = measured.await?;
                walls[k] += wall;
                ticks[k] += t;
            }
        }
    }
    Ok((walls, ticks))
}

/// Why the Node reference is no longer measured, also said at once on stderr.
fn peer_failed(what: &str, e: &anyhow::Error) -> String {
    let why = format!("{what} failed: {e:#}");
    eprintln!("Node reference: not measured further: {why}");
    why
}

/// A row of dynarelay's value beside the Node reference's, with the ratio dynarelay / Node
/// (`theirs`); or, when the reference is not measured, why (`down`).
fn peer_row(
    what: impl Into<String>,
    ours: String,
    theirs: Option<(String, String)>,
    down: Option<&str>,
    note: &str,
) -> Row {
    match (theirs, down) {
        (Some((value, ratio)), None) => row(
            what,
            ours,
            format!("{value} (Node reference)"),
            ratio,
            format!("ratio: dynarelay / Node{note}; {PEER_READS}"),
        ),
        (_, down) => row(
            what,
            ours,
            "not measured",
            "",
            format!(
                "Node reference not measured: {}",
                down.unwrap_or("no samples")
            ),
        ),
    }
}

/// The Node reference (`DYNARELAY_BENCH_PEER` names its `server.mjs`, in a copy of the shared
/// `bench-peer` with its dependencies installed, which `scripts/bench` prepares): Apollo Server 4
/// with the AWS SDK v3 DocumentClient, serving the shop's Purchases table with one Query per page.
/// Killed on drop.
struct Peer {
    child: Child,
    /// Where it answers GraphQL POSTs.
    url: String,
    /// Its last lines of output, for the error when it does not come up.
    seen: LastLines,
}

/// A child process's environment for DynamoDB Local at `endpoint` and nothing else (see
/// [`local_aws::local_aws_env`]).
fn loopback_aws<'c>(command: &'c mut Command, endpoint: &str) -> &'c mut Command {
    command.env_clear().envs(local_aws::local_aws_env(endpoint))
}

impl Peer {
    /// Starts `node script` on a free loopback port, against DynamoDB Local at `endpoint` and
    /// the shop's tables under `prefix`, and waits until it answers a query.
    async fn start(script: &Path, endpoint: &str, prefix: &str) -> anyhow::Result<Self> {
        ensure!(script.is_file(), "{} is not a file", script.display());
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut command = Command::new("node");
        let mut child = loopback_aws(command.arg(script), endpoint)
            .env("PORT", port.to_string())
            .env("TABLE_PREFIX", prefix)
            // As it would be deployed.
            .env("NODE_ENV", "production")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting node (is it on PATH?)")?;
        let seen = LastLines::follow(&mut child, |_| ())?;
        let mut peer = Self {
            child,
            url: format!("http://127.0.0.1:{port}/"),
            seen,
        };
        peer.wait_ready().await?;
        Ok(peer)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Polls with `{ __typename }` until it answers 200, for at most 30 s, and fails at once when
    /// the process ends.
    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait()? {
                // Let the readers take its last lines.
                tokio::time::sleep(Duration::from_millis(100)).await;
                bail!(
                    "node exited ({status}); its last output:\n{}",
                    self.last_output()
                );
            }
            if let Ok(response) = http
                .post(&self.url)
                .header("content-type", "application/json")
                .body(r#"{"query":"{ __typename }"}"#)
                .send()
                .await
                && response.status() == 200
            {
                return Ok(());
            }
            ensure!(
                Instant::now() < deadline,
                "it did not answer within 30 s; its last output:\n{}",
                self.last_output()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn last_output(&self) -> String {
        self.seen.text()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The runtime the SDK floor runs on.
#[derive(Debug, Clone, Copy)]
enum FloorRuntime {
    /// One current-thread runtime: one thread, all the tasks.
    CurrentThread,
    /// One multi-thread runtime with 2 workers.
    MultiThread,
    /// This many threads, each a current-thread runtime with a client of its own and its share
    /// of the tasks: the shape of dynarelay's server, which by default serves on one such thread
    /// per CPU (`--threads`), as many as this machine has.
    PerCore(usize),
}

impl FloorRuntime {
    fn build(self) -> std::io::Result<tokio::runtime::Runtime> {
        match self {
            Self::CurrentThread | Self::PerCore(_) => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            Self::MultiThread => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build(),
        }
    }

    fn describe(self) -> String {
        match self {
            Self::CurrentThread => "current-thread tokio runtime".to_owned(),
            Self::MultiThread => "multi-thread tokio runtime, 2 workers".to_owned(),
            Self::PerCore(threads) => format!(
                "a current-thread tokio runtime and a client on each of {threads} threads (the server's shape)"
            ),
        }
    }
}

/// The SDK floor: the CPU time, in clock ticks, that [`FLOOR_PAGES`] pages' DynamoDB calls cost
/// in this process, sent through aws-sdk-dynamodb alone on a fresh runtime of `flavor` (with a
/// client of its own, so that its connections belong to that runtime), from [`CONCURRENCY`]
/// tasks at once as dynarelay's server is loaded. A page is what dynarelay sends for the shop
/// page: the user's GetItem and the page's Query (21 items) at the same time, each checked.
///
/// It includes everything the client side of those calls costs: building and signing the
/// requests (SigV4), serialising them to JSON, the HTTP client (hyper, its connection pool, the
/// loopback socket's system calls), parsing the JSON responses into items, and the tokio
/// scheduling around them. It excludes DynamoDB Local's own CPU (another process) and all that a
/// GraphQL server adds: the HTTP server, parsing and executing the query, cursors, the response.
/// It reads this process's `/proc/self/stat`, which counts all its threads; the bench's own
/// runtime idles meanwhile. It reads whole clock ticks (10 ms at `CLK_TCK` 100), as the servers'
/// CPU is read: a tick is 5 µs per page over [`FLOOR_PAGES`] pages.
async fn sdk_floor(flavor: FloorRuntime, endpoint: &str, names: &ShopNames) -> anyhow::Result<u64> {
    let (endpoint, names) = (endpoint.to_owned(), names.clone());
    // On a thread outside the bench's runtime, where a runtime may block and be dropped.
    let thread = std::thread::spawn(move || -> anyhow::Result<u64> {
        if let FloorRuntime::PerCore(threads) = flavor {
            return per_core_floor(threads, &endpoint, &names);
        }
        flavor.build()?.block_on(async move {
            let direct = Arc::new(Direct {
                client: dynamo::client_for_local(&endpoint),
                names,
            });
            direct_load(&direct, WARM_UP * CONCURRENCY, CONCURRENCY).await?;
            let pid = std::process::id();
            let before = cpu_ticks(pid)?;
            direct_load(&direct, FLOOR_PAGES, CONCURRENCY).await?;
            Ok(cpu_ticks(pid)? - before)
        })
    });
    tokio::task::spawn_blocking(move || thread.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the SDK floor's thread panicked"))?
}

/// [`sdk_floor`] on `threads` threads, each a current-thread runtime with a client of its own,
/// sending its share of the pages from its share of the [`CONCURRENCY`] tasks. The process's CPU
/// is read once every thread has warmed up, and again once every thread is done.
fn per_core_floor(threads: usize, endpoint: &str, names: &ShopNames) -> anyhow::Result<u64> {
    let threads = threads.clamp(1, CONCURRENCY);
    let start = Arc::new(std::sync::Barrier::new(threads + 1));
    let done = Arc::new(std::sync::Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|thread| {
            let (start, done) = (Arc::clone(&start), Arc::clone(&done));
            let (endpoint, names) = (endpoint.to_owned(), names.clone());
            let pages = FLOOR_PAGES / threads + usize::from(thread < FLOOR_PAGES % threads);
            let tasks = CONCURRENCY / threads + usize::from(thread < CONCURRENCY % threads);
            std::thread::spawn(move || -> anyhow::Result<()> {
                let runtime = FloorRuntime::PerCore(threads).build();
                let result = runtime.map_err(anyhow::Error::from).and_then(|runtime| {
                    let direct = Arc::new(Direct {
                        client: dynamo::client_for_local(&endpoint),
                        names,
                    });
                    runtime.block_on(direct_load(&direct, WARM_UP * tasks, tasks))?;
                    Ok((runtime, direct))
                });
                // Every thread passes both barriers, failed or not, so that none waits forever.
                start.wait();
                let result = result.and_then(|(runtime, direct)| {
                    runtime.block_on(direct_load(&direct, pages, tasks))
                });
                done.wait();
                result
            })
        })
        .collect();
    let pid = std::process::id();
    start.wait();
    let before = cpu_ticks(pid);
    done.wait();
    let after = cpu_ticks(pid);
    for worker in workers {
        worker
            .join()
            .map_err(|_| anyhow::anyhow!("an SDK floor thread panicked"))??;
    }
    Ok(after? - before?)
}

/// `pages` of the user's GetItem and the page's Query at the same time, sent directly from
/// `concurrency` tasks at once.
async fn direct_load(direct: &Arc<Direct>, pages: usize, concurrency: usize) -> anyhow::Result<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..concurrency {
        let direct = Arc::clone(direct);
        let share = pages / concurrency + usize::from(client < pages % concurrency);
        tasks.spawn(async move {
            for _ in 0..share {
                direct.get_with_query_timed(LONG_USER).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(())
}

/// A dynarelay binary the bench starts, and what it says it is.
struct Binary {
    path: PathBuf,
    /// Its `--version`, and the commit it was built from when `rev_var` says.
    label: String,
}

impl Binary {
    fn new(path: PathBuf, rev_var: &str) -> anyhow::Result<Self> {
        ensure!(path.is_file(), "{} is not a file", path.display());
        let out = Command::new(&path)
            .arg("--version")
            .env_clear()
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .with_context(|| format!("running {} --version", path.display()))?;
        let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let version = if out.status.success() && !version.is_empty() {
            version
        } else {
            "no --version".to_owned()
        };
        let label = match std::env::var(rev_var) {
            Ok(rev) if !rev.trim().is_empty() => format!("{version}, {}", rev.trim()),
            _ => format!("{version}, commit not given ({rev_var})"),
        };
        Ok(Self { path, label })
    }

    fn describe(&self) -> String {
        format!("{} ({})", self.path.display(), self.label)
    }
}

/// `a / b` to two decimals, or `n/a` when `b` is not positive.
fn quotient(a: impl Into<Quantity>, b: impl Into<Quantity>) -> String {
    let (a, b) = (a.into().0, b.into().0);
    if b > 0.0 && a.is_finite() {
        format!("{:.2}", a / b)
    } else {
        "n/a".to_owned()
    }
}

/// A duration in seconds, a size in KiB or a plain number, for [`quotient`].
struct Quantity(f64);

impl From<Duration> for Quantity {
    fn from(d: Duration) -> Self {
        Self(d.as_secs_f64())
    }
}

impl From<f64> for Quantity {
    fn from(x: f64) -> Self {
        Self(x)
    }
}

impl From<u64> for Quantity {
    fn from(x: u64) -> Self {
        Self(x as f64)
    }
}

/// One line of the table: measure, dynarelay, direct, ratio, target / note; and, with a
/// baseline, the baseline's value and current / baseline.
struct Row {
    cells: [String; 5],
    baseline: Option<(String, String)>,
}

impl Row {
    /// The baseline's value and the ratio current / baseline, when there is a baseline.
    fn beside(mut self, baseline: Option<(String, String)>) -> Self {
        self.baseline = baseline;
        self
    }
}

fn row(
    what: impl Into<String>,
    dynarelay: impl Into<String>,
    direct: impl Into<String>,
    ratio: impl Into<String>,
    note: impl Into<String>,
) -> Row {
    Row {
        cells: [
            what.into(),
            dynarelay.into(),
            direct.into(),
            ratio.into(),
            note.into(),
        ],
        baseline: None,
    }
}

/// The table; with a baseline, its two columns follow the current server's, and a heading says
/// which binary is which.
#[allow(clippy::print_stdout)]
fn print_table(rows: &[Row], binary: &Binary, baseline: Option<&Binary>) {
    let Some(baseline) = baseline else {
        println!("| measure | dynarelay | direct | ratio | target / note |");
        println!("|---|---|---|---|---|");
        for Row { cells: r, .. } in rows {
            println!("| {} | {} | {} | {} | {} |", r[0], r[1], r[2], r[3], r[4]);
        }
        return;
    };
    println!("dynarelay (current): {}", binary.describe());
    println!("baseline: {}", baseline.describe());
    println!();
    println!(
        "| measure | dynarelay | baseline | dynarelay / baseline | direct | ratio | target / note |"
    );
    println!("|---|---|---|---|---|---|---|");
    for Row { cells: r, baseline } in rows {
        let (b, q) = baseline
            .as_ref()
            .map_or(("", ""), |(b, q)| (b.as_str(), q.as_str()));
        println!(
            "| {} | {} | {b} | {q} | {} | {} | {} |",
            r[0], r[1], r[2], r[3], r[4]
        );
    }
}
