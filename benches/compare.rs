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
//! - the server's CPU time per page (from `/proc/<pid>/stat`) at 8 clients, at 16 and at 1
//!   (with the baseline's and the Node reference's beside it, and the SDK floor of one task);
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
//! Beside the shop, it measures the single-table examples, each served by a server of its own
//! of the same binary, on the same DynamoDB Local with a table prefix of its own, and each with
//! one owner shaped like the long user (as many items as the long user has purchases, written
//! raw through the SDK): the ecommerce example (`examples/ecommerce/dynarelay.toml`), a customer
//! with orders and a few addresses; the ElectroDB example (`examples/electrodb/dynarelay.toml`),
//! a member with loans, and the OneTable example (`examples/onetable/dynarelay.toml`), a project
//! with issues, both written byte for byte as those libraries store them. Their pages are timed
//! in the same loops as the shop's page, and loaded in the same CPU rounds: `customer { orders }`,
//! the shop page's twin (one entity type in a shared partition), `customer { activity }`, the
//! item collection of addresses, the profile and orders, `member { loans }` and
//! `project { issues }`. Their rows follow the shop page's, with the ratio to it: p50, p99,
//! server CPU per page (target: within 10%), and the DynamoDB calls per page by operation,
//! counted from each server's `/metrics` over a walk of consecutive pages (the shop page's
//! counted the same way). The ElectroDB and OneTable pages select four fields, as the shop page
//! does, so that the pages compared select as much. The range page (`range.rs`) walks 1,000 of
//! the ElectroDB member's loans between two times, a range on the text facet of ElectroDB's sort
//! key: the items its Queries evaluated against those they returned, and the read capacity they
//! consumed against the same range read directly by its key condition and by a filter.
//!
//! With `DYNARELAY_BENCH_BASELINE` naming another dynarelay binary (`scripts/bench --baseline
//! REV` builds one from a git revision), that binary is started too, on the same tables and the
//! same DynamoDB Local, and measured in the same loops: its pages alternate with the current
//! server's sample by sample (which goes first alternates too), the CPU load runs in rounds
//! that alternate between the two servers, and its numbers are printed beside the current
//! server's with the ratio current / baseline (start to ready, idle RSS, page p50 and p99, the
//! time added per page, CPU per page). The baseline serves the shop model of its own revision
//! (`DYNARELAY_BENCH_BASELINE_MODEL`, which `scripts/bench` sets), since an older binary refuses
//! keys added to the model since. `DYNARELAY_BENCH_REV` and `DYNARELAY_BENCH_BASELINE_REV`,
//! when set, say which commits the two binaries were built from; the table's heading prints
//! them with each binary's path and `--version`. The baseline predates the single-table examples,
//! so their rows have no baseline columns: the current binary serves them.
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
//!
//! This file holds the run, measure by measure; its parts are in `compare/`: the seeded tables
//! (`seed.rs`), the single-table examples' servers and pages (`examples.rs`), the servers
//! (`server.rs`), their `/graphql` and `/metrics` (`api.rs`), the same calls sent directly
//! (`direct.rs`), the range page (`range.rs`), the delaying proxy (`proxy.rs`), the CPU load
//! (`cpu.rs`), CPU and RSS from `/proc` (`procfs.rs`), the SDK floor (`floor.rs`), the Node
//! reference (`peer.rs`), statistics (`stats.rs`) and the table (`table.rs`).

/// The tests' token issuer: test-only RSA keys and a JWKS served on loopback, for the shop's
/// secure model (`examples/shop/secure.toml`) beside the open one.
#[path = "../tests/api/issuer.rs"]
#[allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
mod issuer;
/// The tests' environment for child processes that talk only to DynamoDB Local.
#[path = "../tests/api/local_aws.rs"]
mod local_aws;

#[path = "compare/api.rs"]
mod api;
#[path = "compare/cpu.rs"]
mod cpu;
#[path = "compare/direct.rs"]
mod direct;
#[path = "compare/examples.rs"]
mod examples;
#[path = "compare/floor.rs"]
mod floor;
#[path = "compare/peer.rs"]
mod peer;
#[path = "compare/procfs.rs"]
#[allow(dead_code)]
mod procfs;
#[path = "compare/proxy.rs"]
mod proxy;
#[path = "compare/range.rs"]
mod range;
#[path = "compare/seed.rs"]
mod seed;
#[path = "compare/server.rs"]
mod server;
#[path = "compare/stats.rs"]
mod stats;
#[path = "compare/table.rs"]
mod table;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use anyhow::Context;
use dynarelay::{
    dynamo::{self, Store, Tables, tables},
    model,
};
use serde_json::json;

use api::{Api, Form, PageShape, Timers, calls_text};
use cpu::cpu_rounds;
use direct::Direct;
use examples::{Examples, to_shop};
use floor::{FloorRuntime, sdk_floor};
use peer::{Peer, peer_failed, peer_row};
use procfs::{rss_kib, ticks_to_duration};
use proxy::DelayProxy;
use seed::{ShopNames, seed};
use server::{Binary, Server};
use stats::{interleaved, mean, median, ms, percentile, ratio};
use table::{print_table, quotient, row};

const LONG_USER: &str = "bench-long";
const SPARSE_USER: &str = "bench-sparse";
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
/// The id the bench's operation manifest lists [`SHOP_PAGE`] under.
const LISTED_PAGE_ID: &str = "shop-page";
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
    // The single-table examples, each under a prefix of its own.
    examples::seed_all(&client, &prefix).await?;

    // The shop page is also listed in an operation manifest, to be requested by its id.
    let manifest = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-operations.json");
    std::fs::write(
        &manifest,
        json!({ LISTED_PAGE_ID: SHOP_PAGE.query }).to_string(),
    )?;
    let manifest = manifest.to_string_lossy().into_owned();
    let server = Server::start_with(
        &binary.path,
        &endpoint,
        &prefix,
        SHOP_MODEL,
        &[("DYNARELAY_OPERATIONS", &manifest)],
    )?;
    let ready = server.wait_ready().await?;
    // scripts/profile attaches perf to this process.
    eprintln!("dynarelay serve: pid {}", server.pid());
    // The baseline, started once the current server is ready so that the two start-ups do not
    // compete; it serves the same tables.
    let base_server = match &baseline {
        Some(baseline) => {
            // The shop model as the baseline's revision wrote it (an older binary refuses keys
            // added since), over the same tables.
            let model = std::env::var("DYNARELAY_BENCH_BASELINE_MODEL")
                .ok()
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| SHOP_MODEL.to_owned());
            let base = Server::start(&baseline.path, &endpoint, &prefix, &model)?;
            let ready = base.wait_ready().await?;
            eprintln!("baseline serve: pid {}", base.pid());
            Some((base, ready))
        }
        None => None,
    };
    // The single-table examples' servers, started last so that they compete with no start-up.
    let examples = Examples::start(&binary.path, &endpoint, &prefix).await?;
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
        form: Form::Text,
    };
    let base_api = base_server.as_ref().map(|(base, _)| Api {
        http: api.http.clone(),
        url: format!("http://{}/graphql", base.address),
        shape: SHOP_PAGE,
        token: None,
        form: Form::Text,
    });
    // The single-table examples' pages, two of them from the ecommerce example's server.
    let example_pages = examples.pages(&api.http);
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
        form: Form::Text,
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
            form: Form::Text,
        })),
        None => None,
    };
    let direct = Direct {
        client: client.clone(),
        names: names.clone(),
    };

    // Latency, one request at a time, interleaved so that drift affects all alike. The pages
    // through dynarelay (the shop page; with a baseline, the baseline's; the single-table
    // examples') are timed in an order that changes from sample to sample, so that each
    // goes before each other as often as after.
    // The Node reference's page is timed in the same order, when it runs.
    let mut pages: Vec<(&Api, &str)> = vec![(&api, LONG_USER)];
    pages.extend(base_api.as_ref().map(|base| (base, LONG_USER)));
    let examples_at = pages.len();
    pages.extend(example_pages.iter().map(|page| (&*page.api, page.owner)));
    let peer_at = peer_api.as_ref().map(|peer_api| {
        pages.push((&**peer_api, LONG_USER));
        pages.len() - 1
    });
    let mut via_peer = Vec::new();
    let (mut via_api, mut query_only, mut get_and_query, mut get_with_query) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut added, mut health) = (Vec::new(), Vec::new());
    let (mut via_base, mut base_added) = (Vec::new(), Vec::new());
    let mut via_examples = vec![Vec::new(); example_pages.len()];
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
            for (j, samples) in via_examples.iter_mut().enumerate() {
                samples.push(times[examples_at + j]);
            }
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
    let example_latency: Vec<_> = via_examples
        .iter_mut()
        .map(|samples| (percentile(samples, 0.5), percentile(samples, 0.99)))
        .collect();
    let peer_latency = (peer_down.is_none() && !via_peer.is_empty()).then(|| {
        (
            percentile(&mut via_peer, 0.5),
            percentile(&mut via_peer, 0.99),
        )
    });
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
    for (page, &(p50, _)) in example_pages.iter().zip(&example_latency) {
        rows.push(to_shop(
            page.api.shape,
            "p50",
            ms(p50),
            quotient(p50, api_p50),
            "",
        ));
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
    for (page, &(_, p99)) in example_pages.iter().zip(&example_latency) {
        rows.push(to_shop(
            page.api.shape,
            "p99",
            ms(p99),
            quotient(p99, api_p99),
            "",
        ));
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
        form: Form::Text,
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
    // page's in turn (the shop page; with a baseline, the baseline's; the secure shop's; the
    // single-table examples'), in an order that changes from round to round as in the latency
    // loop, so that drift affects all alike. A page's server is read before and after each of
    // that page's rounds, and its CPU is what those windows add up to: the ecommerce example's
    // two pages share one server, and no server is charged for the time it idles during
    // another's rounds.
    let api = Arc::new(api);
    let mut loaded = vec![(server.pid(), Arc::clone(&api), LONG_USER)];
    let base_load = match (&base_server, base_api) {
        (Some((base, _)), Some(base_api)) => Some((base.pid(), Arc::new(base_api), LONG_USER)),
        _ => None,
    };
    loaded.extend(base_load.clone());
    let secure_at = loaded.len();
    loaded.push((secure_server.pid(), Arc::clone(&secure_api), LONG_USER));
    let examples_at = loaded.len();
    loaded.extend(
        example_pages
            .iter()
            .map(|page| (page.pid, Arc::clone(&page.api), page.owner)),
    );
    // The shop page on the same server, named by its manifest id and by Apollo's hash of a
    // registered automatic persisted query.
    let by_form = |form| {
        Arc::new(Api {
            http: api.http.clone(),
            url: api.url.clone(),
            shape: SHOP_PAGE,
            token: None,
            form,
        })
    };
    let (listed_api, apq_api) = (by_form(Form::Listed(LISTED_PAGE_ID)), by_form(Form::Apq));
    apq_api.register_persisted_query().await?;
    let listed_at = loaded.len();
    loaded.push((server.pid(), Arc::clone(&listed_api), LONG_USER));
    loaded.push((server.pid(), Arc::clone(&apq_api), LONG_USER));
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
    let high_peer_at = match peer_load.clone() {
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
    // One client at a time, the load of one person's requests, where no work is shared
    // between requests in flight: the shop page's server, the baseline's and the Node
    // reference's, in alternating rounds.
    let mut single = vec![(server.pid(), Arc::clone(&api), LONG_USER)];
    let single_base_at = base_load.map(|base| {
        single.push(base);
        single.len() - 1
    });
    let single_peer_at = match peer_load {
        Some(peer_load) if peer_down.is_none() => {
            single.push(peer_load);
            Some(single.len() - 1)
        }
        _ => None,
    };
    let (single_walls, single_ticks) =
        cpu_rounds(&single, 1, single_peer_at, &mut peer_down).await?;
    let single_per_page = single_ticks
        .into_iter()
        .map(|t| Ok(ticks_to_duration(t)?.as_secs_f64() / CONCURRENT_PAGES as f64))
        .collect::<anyhow::Result<Vec<_>>>()?;
    drop(single);
    // The Node reference's CPU per page at both concurrencies, when all its rounds ran.
    let peer_cpu = match (peer_at, high_peer_at, single_peer_at, &peer_down) {
        (Some(low), Some(high), Some(one), None) => Some((
            (per_page[low], walls[low]),
            (high_per_page[high], high_walls[high]),
            (single_per_page[one], single_walls[one]),
        )),
        _ => None,
    };
    drop((peer_api, peer));
    // The SDK floor, with every server idle: the page's DynamoDB calls from this process alone.
    let mut floors = Vec::new();
    let per_core = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    for (flavor, tasks) in [
        (FloorRuntime::CurrentThread, CONCURRENCY),
        (FloorRuntime::MultiThread, CONCURRENCY),
        (FloorRuntime::PerCore(per_core), CONCURRENCY),
        (FloorRuntime::CurrentThread, 1),
    ] {
        let ticks = sdk_floor(flavor, tasks, &endpoint, &names).await?;
        floors.push((
            flavor,
            tasks,
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
            "{}; {CPU_ROUNDS} rounds, alternating with the secure shop's, the single-table examples' pages'{}",
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
    rows.push(row(
        format!("the shop page by its id in an operation manifest (`--operations`), server CPU per page ({CONCURRENCY} clients)"),
        micros(per_page[listed_at]),
        "",
        quotient(per_page[listed_at], per_page[listed_at + 1]),
        format!(
            "ratio: / by Apollo's hash (a registered automatic persisted query, below), at most 1.00; {}",
            rate(walls[listed_at])
        ),
    ));
    rows.push(row(
        format!("the shop page by Apollo's hash (automatic persisted query), server CPU per page ({CONCURRENCY} clients)"),
        micros(per_page[listed_at + 1]),
        "",
        quotient(per_page[listed_at + 1], per_page[0]),
        format!(
            "ratio: / the page sent in full; {}",
            rate(walls[listed_at + 1])
        ),
    ));
    drop((listed_api, apq_api));
    for (j, page) in example_pages.iter().enumerate() {
        let (cpu, wall) = (per_page[examples_at + j], walls[examples_at + j]);
        rows.push(to_shop(
            page.api.shape,
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
    rows.push(
        row(
            "server CPU per page (1 client)",
            micros(single_per_page[0]),
            "",
            "",
            format!(
                "{}; {CPU_ROUNDS} rounds{}",
                rate(single_walls[0]),
                match (single_base_at, single_peer_at) {
                    (Some(_), Some(_)) => ", alternating with the baseline and the Node reference",
                    (Some(_), None) => ", alternating with the baseline",
                    (None, Some(_)) => ", alternating with the Node reference",
                    (None, None) => "",
                }
            ),
        )
        .beside(single_base_at.map(|b| {
            (
                micros(single_per_page[b]),
                quotient(single_per_page[0], single_per_page[b]),
            )
        })),
    );
    for (clients, peer_cpu) in [
        (1, peer_cpu.map(|(_, _, one)| one)),
        (CONCURRENCY, peer_cpu.map(|(low, _, _)| low)),
        (HIGH_CONCURRENCY, peer_cpu.map(|(_, high, _)| high)),
    ] {
        let ours = match clients {
            1 => single_per_page[0],
            CONCURRENCY => per_page[0],
            _ => high_per_page[0],
        };
        let clients = if clients == 1 {
            "1 client".to_owned()
        } else {
            format!("{clients} clients")
        };
        rows.push(peer_row(
            format!("server CPU per page ({clients}), against the Node reference"),
            micros(ours),
            peer_cpu.map(|(cpu, _)| (micros(cpu), quotient(ours, cpu))),
            peer_down.as_deref(),
            &format!(
                ": target at most 0.25, at least at most 0.33; Node {}",
                peer_cpu.map_or_else(String::new, |(_, wall)| rate(wall))
            ),
        ));
    }
    for (flavor, tasks, floor) in floors {
        let (ours, clients, target) = if tasks == 1 {
            (single_per_page[0], "1 client".to_owned(), "at most 1.0")
        } else {
            (
                per_page[0],
                format!("{CONCURRENCY} clients"),
                "at most 1.3, at least at most 1.6",
            )
        };
        rows.push(row(
            format!(
                "SDK floor: the page's GetItem and Query through aws-sdk-dynamodb alone, CPU per page, {}{}",
                flavor.describe(),
                if tasks == 1 { ", 1 task" } else { "" }
            ),
            micros(ours),
            format!(
                "{} (the bench process, {tasks} task{})",
                micros(floor),
                if tasks == 1 { "" } else { "s" }
            ),
            quotient(ours, floor),
            format!(
                "dynarelay's server CPU ({clients}) / floor: target {target}; the SDK, its HTTP client and JSON, not DynamoDB Local's CPU; {FLOOR_PAGES} pages"
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
    for page in &example_pages {
        let calls = page.api.calls_per_page(page.owner).await?;
        rows.push(to_shop(
            page.api.shape,
            "DynamoDB calls per page",
            calls_text(&calls),
            quotient(
                calls.values().sum::<f64>(),
                shop_calls.values().sum::<f64>(),
            ),
            ", all calls; one Query per page, as the shop page",
        ));
    }
    // The range page: a range on ElectroDB's text sort key, read as a key condition.
    let electrodb_url = examples
        .url(examples::Example::ElectroDb)
        .context("no ElectroDB example server")?;
    rows.extend(range::range_rows(&client, &api.http, &electrodb_url, &prefix).await?);
    drop((example_pages, examples));

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
