//! HTTP over a real socket: GraphQL over POST and GET, GraphiQL served offline, health and
//! readiness, body limits, and coded errors for requests that are not GraphQL.

use std::{net::SocketAddr, time::Duration};

use dynarelay::{
    cursor::CursorCodec,
    dynamo::{self, Store, Tables},
    graphql,
    http::{AppState, HttpSettings, router, serve},
    pagination::PageLimits,
};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::helpers::{TestApp, test_ring, unique_prefix};

/// A server on an ephemeral loopback port; stops when dropped.
struct Running {
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

async fn start(store: Store) -> Running {
    let state = AppState {
        schema: graphql::build_schema(
            store.clone(),
            PageLimits::default(),
            CursorCodec::new(&test_ring()),
        ),
        store,
        http: HttpSettings {
            graphiql: true,
            max_body_bytes: 8 * 1024,
        },
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(serve(
        listener,
        router(state),
        async move {
            let _ = stopped.await;
        },
        Duration::from_secs(1),
    ));
    Running { addr, _stop: stop }
}

fn url(server: &Running, path: &str) -> String {
    format!("http://{}{path}", server.addr)
}

#[tokio::test]
async fn graphql_answers_post_and_get_queries_over_http() {
    let app = TestApp::spawn().await;
    app.put_user("ivy").await;
    app.put_purchases("ivy", &[1_672_531_200_123]).await;
    let server = start(app.store.clone()).await;
    let http = reqwest::Client::new();
    let query = r#"{ user(userId: "ivy") { purchases(first: 5) { edges { node { purchasedAt } } pageInfo { hasNextPage } } } }"#;
    let expected = json!({ "data": { "user": { "purchases": {
        "edges": [{ "node": { "purchasedAt": "2023-01-01T00:00:00.123Z" } }],
        "pageInfo": { "hasNextPage": false } } } } });

    let post = http
        .post(url(&server, "/graphql"))
        .json(&json!({ "query": query }))
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 200);
    assert_eq!(post.json::<Value>().await.unwrap(), expected);

    let get = http
        .get(url(&server, "/graphql"))
        .query(&[("query", query)])
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    assert_eq!(get.json::<Value>().await.unwrap(), expected);
}

#[tokio::test]
async fn a_mutation_over_get_is_refused_with_405() {
    let app = TestApp::spawn().await;
    let server = start(app.store.clone()).await;
    let response = reqwest::Client::new()
        .get(url(&server, "/graphql"))
        .query(&[("query", "mutation { anything }")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "GET, POST");
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["errors"][0]["extensions"]["code"],
        "METHOD_NOT_ALLOWED"
    );
}

#[tokio::test]
async fn requests_that_are_not_graphql_get_coded_400s_and_large_bodies_413() {
    let app = TestApp::spawn().await;
    let server = start(app.store.clone()).await;
    let http = reqwest::Client::new();
    let cases = [
        (
            "not JSON",
            "{ this is not json".to_owned(),
            400,
            "BAD_REQUEST",
        ),
        (
            "a batch",
            json!([{ "query": "{ __typename }" }, { "query": "{ __typename }" }]).to_string(),
            400,
            "BAD_REQUEST",
        ),
        (
            "too large",
            json!({ "query": format!("{{ __typename }} #{}", "x".repeat(9000)) }).to_string(),
            413,
            "PAYLOAD_TOO_LARGE",
        ),
    ];
    for (case, body, status, code) in cases {
        let response = http
            .post(url(&server, "/graphql"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{case}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["errors"][0]["extensions"]["code"], code, "{case}");
    }
}

#[tokio::test]
async fn graphiql_is_served_from_this_server_with_no_external_urls() {
    let app = TestApp::spawn().await;
    let server = start(app.store.clone()).await;
    let http = reqwest::Client::new();
    let page = http.get(url(&server, "/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    let html = page.text().await.unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "the page loads something from elsewhere"
    );
    let assets: Vec<&str> = html
        .split(['"', '\''])
        .filter(|s| s.starts_with("/graphiql/"))
        .collect();
    assert_eq!(
        assets.len(),
        5,
        "expected the CSS and four scripts: {assets:?}"
    );
    for asset in assets {
        let response = http.get(url(&server, asset)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{asset}");
        let kind = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(kind.starts_with(if asset.ends_with(".css") {
            "text/css"
        } else {
            "text/javascript"
        }));
        assert!(
            response.bytes().await.unwrap().len() > 100,
            "{asset} is empty"
        );
    }
    let missing = http
        .get(url(&server, "/graphiql/nothing.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn health_is_always_ok_and_ready_follows_dynamodb() {
    let app = TestApp::spawn().await;
    let up = start(app.store.clone()).await;
    // Nothing listens on port 9 (discard) of loopback here; connections are refused at once.
    let unreachable = Store::new(
        dynamo::client_for_local("http://127.0.0.1:9"),
        Tables::with_prefix(&unique_prefix()),
    );
    let down = start(unreachable).await;
    let http = reqwest::Client::new();

    for server in [&up, &down] {
        let health = http.get(url(server, "/health")).send().await.unwrap();
        assert_eq!(health.status(), 200);
    }
    let ready = http.get(url(&up, "/ready")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    assert_eq!(
        ready.json::<Value>().await.unwrap(),
        json!({ "status": "ready" })
    );
    let not_ready = http.get(url(&down, "/ready")).send().await.unwrap();
    assert_eq!(not_ready.status(), 503);
    assert_eq!(
        not_ready.json::<Value>().await.unwrap(),
        json!({ "status": "unavailable" })
    );

    // Tables missing on a reachable DynamoDB: also not ready.
    let no_tables = Store::new(
        app.store.client().clone(),
        Tables::with_prefix(&unique_prefix()),
    );
    let empty = start(no_tables).await;
    let response = http.get(url(&empty, "/ready")).send().await.unwrap();
    assert_eq!(response.status(), 503);
}
