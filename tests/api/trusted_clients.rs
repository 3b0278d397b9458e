//! Trusted documents with the tools and clients teams use: the manifests are written by
//! Apollo's `generate-persisted-query-manifest` and by relay-compiler's `persistConfig`
//! (`tests/clients/trusted-manifests.mjs`), and a server that enforces them is used by Apollo
//! Client 4 (`@apollo/persisted-query-lists`' link, sending the manifest's ids) and by
//! relay-runtime (the network layer of Relay's docs, sending `doc_id`), over HTTP and GraphQL
//! over WebSocket (`tests/clients/trusted-clients.mjs`). Each pages through a user's purchases
//! by id alone, Relay follows them as they change, and every document that no list has is
//! refused, before any DynamoDB call.

use std::path::{Path, PathBuf};

use aws_sdk_dynamodb::Client;
use chrono::{DateTime, SecondsFormat};
use dynarelay::{
    graphql::trusted::{TrustedMode, TrustedSettings},
    http::HttpSettings,
};
use serde_json::{Value, json};

use crate::helpers::{
    CallCounter, LOCAL_AWS, ModelApp, Running, endpoint, live_router_with_streams, model_app,
    post_at, product_item, purchase_item, put_plain, run_node, test_stream_settings, unique_prefix,
    user_item,
};

const USER: &str = "trusted-ada";

/// Where the clients' writes start (epoch ms): after every seeded purchase.
const T0: i64 = 1_800_000_000_000;

/// The seeded purchases' `purchasedAt` (epoch ms): pages of 2, 2 and 1.
const SEEDED: [i64; 5] = [
    1_700_000_000_101,
    1_700_000_100_202,
    1_700_000_200_303,
    1_700_000_300_404,
    1_700_000_400_505,
];

/// `purchasedAt` as the API renders epoch milliseconds.
fn iso(epoch_ms: i64) -> String {
    DateTime::from_timestamp_millis(epoch_ms)
        .unwrap()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Runs `trusted-manifests.mjs` into a directory of its own: the directory and the summary the
/// script printed.
async fn manifests() -> (PathBuf, Value) {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("trusted-clients-{}", unique_prefix()));
    let run = run_node("trusted-manifests.mjs", &[dir.to_str().unwrap()], &[]).await;
    run.assert_success();
    let summary = serde_json::from_str(run.stdout.trim()).unwrap_or_else(|err| {
        panic!(
            "trusted-manifests.mjs printed no JSON ({err}):\n{}",
            run.stdout
        )
    });
    (dir, summary)
}

/// Enforcing the Apollo manifest and Relay's persisted operations in `dir`; full texts of
/// listed documents allowed.
fn enforcing(dir: &Path) -> HttpSettings {
    HttpSettings {
        trusted: TrustedSettings {
            mode: TrustedMode::Enforce,
            manifests: vec![dir.join("apollo.json"), dir.join("relay.json")],
            require_ids: false,
        },
        ..HttpSettings::default()
    }
}

/// The shop on fresh tables, [`USER`] with the [`SEEDED`] purchases, served with live data and
/// the manifests in `dir` enforced, over a client that counts the server's DynamoDB calls.
async fn enforcing_server(dir: &Path) -> (ModelApp, Running, CallCounter) {
    let app = model_app("examples/shop/dynarelay.toml").await;
    put_plain(app.client(), &app.table("Users"), [user_item(USER)]).await;
    put_plain(
        app.client(),
        &app.table("Products"),
        [product_item("SKU-00001", "Field Guide", "books", "19.99")],
    )
    .await;
    put_plain(
        app.client(),
        &app.table("Purchases"),
        SEEDED.map(|ms| purchase_item(USER, &ms.to_string(), "9.99")),
    )
    .await;

    let calls = CallCounter::default();
    let counted = Client::from_conf(
        app.client()
            .config()
            .to_builder()
            .interceptor(calls.clone())
            .build(),
    );
    let served = ModelApp::new(
        app.model,
        app.prefix.clone(),
        app.store.with_client(counted),
        app.router.clone(),
    );
    let router = live_router_with_streams(&served, enforcing(dir), test_stream_settings());
    (app, Running::serve(router).await, calls)
}

/// Runs `trusted-clients.mjs` against `server` with the manifests in `dir` and `options`; the
/// summary it printed.
async fn clients(server: &Running, app: &ModelApp, dir: &Path, options: &[&str]) -> Value {
    let (url, endpoint, table, t0) = (
        server.url("/graphql"),
        endpoint(),
        app.table("Purchases"),
        T0.to_string(),
    );
    let mut args = vec![
        url.as_str(),
        dir.to_str().unwrap(),
        &endpoint,
        &table,
        USER,
        &t0,
    ];
    args.extend(options);
    let run = run_node("trusted-clients.mjs", &args, &LOCAL_AWS).await;
    run.assert_success();
    serde_json::from_str(run.stdout.trim()).unwrap_or_else(|err| {
        panic!(
            "trusted-clients.mjs printed no JSON ({err}):\n{}",
            run.stdout
        )
    })
}

/// Relay's fetchFn's one exchange for `name`, sent as `sent`, refused with `code`.
fn refused(sent: &str, code: &str, name: &str) -> Value {
    json!([{ "name": name, "sent": sent, "status": 200, "code": code }])
}

/// The refusals both runs of `trusted-clients.mjs` make, as it reports them.
fn assert_refusals(got: &Value) {
    // A newer build's id, which the server's list lacks: refused as unknown. Apollo's link then
    // sends the full text with the id (its retry on PERSISTED_QUERY_NOT_FOUND), which no list
    // has either.
    assert_eq!(
        got["apollo"]["unlistedById"],
        json!({
            "sent": [
                "POST id PERSISTED_QUERY_NOT_FOUND",
                "POST id+text PERSISTED_QUERY_NOT_IN_LIST",
            ],
            "error": "PERSISTED_QUERY_NOT_IN_LIST",
        }),
        "{got}"
    );
    // With the server's own manifest, the link cannot name the operation, and sends nothing.
    assert_eq!(
        got["apollo"]["unlistedNotInManifest"],
        json!({ "sent": [], "error": "Operation TrustedUnlistedUsers not found in manifest" }),
        "{got}"
    );
    assert_eq!(
        got["apollo"]["unlistedInFull"],
        json!({
            "sent": ["POST text PERSISTED_QUERY_NOT_IN_LIST"],
            "error": "PERSISTED_QUERY_NOT_IN_LIST",
        }),
        "{got}"
    );
    assert_eq!(
        got["relay"]["unlistedInFull"],
        refused(
            "text",
            "PERSISTED_QUERY_NOT_IN_LIST",
            "TrustedUnlistedQuery"
        ),
        "{got}"
    );
    assert_eq!(
        got["relay"]["unlistedById"],
        refused("id", "PERSISTED_QUERY_NOT_FOUND", "TrustedUnlistedQuery"),
        "{got}"
    );
    let over_ws = |sent: &str, code: &str| {
        let name = "TrustedUnlistedSubscription";
        json!([{ "name": name, "sent": sent, "code": code }])
    };
    assert_eq!(
        got["relay"]["subscriptionUnlistedById"],
        over_ws("id", "PERSISTED_QUERY_NOT_FOUND"),
        "{got}"
    );
    assert_eq!(
        got["relay"]["subscriptionUnlistedInFull"],
        over_ws("text", "PERSISTED_QUERY_NOT_IN_LIST"),
        "{got}"
    );
}

/// The keys of a subscribe message's payload naming its document by `doc_id`, and in full.
const BY_ID: [&str; 2] = ["doc_id", "variables"];
const IN_FULL: [&str; 3] = ["operationName", "query", "variables"];

/// The tools write what the server loads: Apollo's manifest names each operation by the
/// SHA-256 of its body, relay-compiler's file by the MD5 of its text, and the text Relay
/// persists is the text it sends when it does not persist.
#[tokio::test]
async fn apollo_and_relay_tools_write_manifests_of_hashed_operations() {
    let (dir, summary) = manifests().await;
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        summary,
        json!({
            "apollo": { "operations": ["query TrustedUserPurchases"], "idIsSha256OfBody": true },
            "apolloClient": {
                "operations": ["query TrustedUnlistedUsers", "query TrustedUserPurchases"],
                "idIsSha256OfBody": true,
            },
            "relay": {
                "operations": [
                    "mutation UserPurchasesCreateMutation",
                    "mutation UserPurchasesDeleteMutation",
                    "query CategoryProductsPageQuery",
                    "query CategoryProductsPaginationQuery",
                    "query ProductPurchasesPageQuery",
                    "query ProductPurchasesPaginationQuery",
                    "query PurchaseStatusRefetchQuery",
                    "query UserPurchasesPageQuery",
                    "query UserPurchasesPaginationQuery",
                    "subscription UserPurchasesChangedSubscription",
                ],
                "ids": 10,
                "idIsMd5OfText": true,
                "artifactsWithoutText": true,
                "textsAsPersisted": true,
            },
            "relayUnlisted": {
                "operations": [
                    "query TrustedUnlistedQuery",
                    "subscription TrustedUnlistedSubscription",
                ],
                "ids": 2,
                "idIsMd5OfText": true,
                "artifactsWithoutText": true,
                "textsAsPersisted": true,
            },
        })
    );
}

/// Apollo Client pages by its manifest's ids over POST and GET, Relay by `doc_id` through
/// `node(id:)`, each ending with every seeded purchase in order; Relay's subscription, named by
/// `doc_id` over WebSocket, resumes from its connection's `endCursor` and brings the purchase
/// written before it and the one written after; a listed document sent in full runs; and
/// everything no list has is refused with the code for how it was named.
#[tokio::test]
async fn apollo_and_relay_run_their_listed_operations_by_id_and_are_refused_the_rest() {
    let (dir, _) = manifests().await;
    let (app, server, _calls) = enforcing_server(&dir).await;
    let got = clients(&server, &app, &dir, &[]).await;
    std::fs::remove_dir_all(&dir).unwrap();

    let seeded: Vec<String> = SEEDED.iter().map(|&ms| iso(ms)).collect();
    for (over, method) in [("pagesOverPost", "POST"), ("pagesOverGet", "GET")] {
        let sent = vec![format!("{method} id"); 3];
        assert_eq!(
            got["apollo"][over],
            json!({
                "pageSizes": [2, 2, 1],
                "items": seeded,
                "sent": sent,
            }),
            "{got}"
        );
    }
    // The full text a plain HttpLink prints is the body the manifest lists.
    assert_eq!(
        got["apollo"]["listedInFull"],
        json!({ "sent": ["POST text"], "edges": 2 }),
        "{got}"
    );

    assert_eq!(
        got["relay"]["pages"],
        json!({
            "pageSizes": [2, 2, 1],
            "items": seeded,
            "sent": [
                "UserPurchasesPageQuery id",
                "UserPurchasesPaginationQuery id",
                "UserPurchasesPaginationQuery id",
            ],
        }),
        "{got}"
    );
    assert_eq!(
        got["relay"]["listedInFull"],
        json!({
            "sent": [
                { "name": "UserPurchasesPageQuery", "sent": "text", "status": 200, "code": null },
            ],
            "user": true,
        }),
        "{got}"
    );
    let mut after_changes = seeded.clone();
    after_changes.extend([iso(T0 + 1), iso(T0 + 2)]);
    assert_eq!(
        got["relay"]["changes"],
        json!({ "kinds": ["ADDED", "ADDED"], "items": after_changes }),
        "{got}"
    );
    assert_refusals(&got);
    // Over the WebSocket, the listed subscription and the unlisted one by `doc_id` alone.
    assert_eq!(
        got["relay"]["subscribePayloads"],
        json!([BY_ID, BY_ID, IN_FULL]),
        "{got}"
    );
}

/// A refused document costs the server nothing: the refusals alone, over HTTP and WebSocket,
/// make no DynamoDB call, where a listed operation named by its id does.
#[tokio::test]
async fn refused_documents_make_no_dynamodb_call() {
    let (dir, _) = manifests().await;
    let (app, server, calls) = enforcing_server(&dir).await;

    let before = calls.snapshot();
    let got = clients(&server, &app, &dir, &["--refusals-only"]).await;
    assert_refusals(&got);
    assert_eq!(
        got["relay"]["subscribePayloads"],
        json!([BY_ID, IN_FULL]),
        "{got}"
    );
    assert_eq!(calls.snapshot(), before, "refused requests called DynamoDB");

    // The same server reads DynamoDB for a listed operation named by its Relay id.
    let relay: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("relay.json")).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let (id, _) = relay
        .iter()
        .find(|(_, text)| {
            text.as_str()
                .unwrap()
                .starts_with("query UserPurchasesPageQuery(")
        })
        .expect("UserPurchasesPageQuery in relay.json");
    let body = post_at(
        &reqwest::Client::new(),
        &server.url("/graphql"),
        &json!({ "doc_id": id, "variables": { "userId": USER, "count": 2 } }),
    )
    .await;
    assert_eq!(
        body["data"]["user"]["purchases"]["edges"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{body}"
    );
    assert_ne!(
        calls.snapshot(),
        before,
        "the listed operation read nothing"
    );
}
