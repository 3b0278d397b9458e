//! HTTP over a real socket: GraphQL over POST and GET, GraphiQL served offline, health and
//! readiness, body limits, and coded errors for requests that are not GraphQL.

use dynarelay::{
    dynamo::{self, Store, Tables},
    http::HttpSettings,
};
use serde_json::{Value, json};

use crate::helpers::{
    APOLLO_ACCEPT, Exchange, GQL, JSON, Running, TestApp, exchange, persisted, post, query_string,
    sha256_hex, shop, unique_prefix,
};

async fn start(store: Store) -> Running {
    Running::start(store, small_body_limit()).await
}

fn small_body_limit() -> HttpSettings {
    HttpSettings {
        max_body_bytes: 8 * 1024,
        ..HttpSettings::default()
    }
}

fn url(server: &Running, path: &str) -> String {
    server.url(path)
}

#[tokio::test]
async fn graphql_answers_post_and_get_queries_over_http() {
    let app = TestApp::spawn().await;
    app.put_user("ivy").await;
    app.put_purchases("ivy", &[1_672_531_200_123]).await;
    let server = start(app.store.clone()).await;
    let http = reqwest::Client::new();
    let query = r#"{ user(userId: "ivy") { purchases(first: 5) { edges { node { purchasedAt } } pageInfo { hasNextPage } } } }"#;
    let expected = json!({ "user": { "purchases": {
        "edges": [{ "node": { "purchasedAt": "2023-01-01T00:00:00.123Z" } }],
        "pageInfo": { "hasNextPage": false } } } });
    // GetItem for the user, then one Query for the page (and the item after it).
    let cost = json!({ "dynamodbCalls": 2, "consumedCapacityUnits": 1.0,
        "itemsEvaluated": 2, "itemsReturned": 2 });

    let post = http
        .post(url(&server, "/graphql"))
        .json(&json!({ "query": query }))
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 200);
    let body = post.json::<Value>().await.unwrap();
    assert_eq!(body["data"], expected);
    assert_eq!(body["extensions"]["cost"], cost, "{body}");

    let get = http
        .get(url(&server, "/graphql"))
        .query(&[("query", query)])
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let body = get.json::<Value>().await.unwrap();
    assert_eq!(body["data"], expected);
    assert_eq!(body["extensions"]["cost"], cost, "{body}");
}

/// Also when the mutation's document is already in the document cache (sent before by POST).
#[tokio::test]
async fn a_mutation_over_get_is_refused_with_405() {
    let app = TestApp::spawn().await;
    let server = start(app.store.clone()).await;
    let http = reqwest::Client::new();
    let mutation = "mutation { anything }";
    for cached in [false, true] {
        let response = http
            .get(url(&server, "/graphql"))
            .query(&[("query", mutation)])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "cached: {cached}");
        assert_eq!(response.headers()["allow"], "POST");
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            body["errors"][0]["extensions"]["code"], "METHOD_NOT_ALLOWED",
            "cached: {cached}"
        );
        // Parsed and cached: the next GET finds the document in the cache.
        let posted = http
            .post(url(&server, "/graphql"))
            .json(&json!({ "query": mutation }))
            .send()
            .await
            .unwrap();
        assert_ne!(posted.status(), 405);
    }
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
        Tables::new(shop(), &unique_prefix()),
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
        Tables::new(shop(), &unique_prefix()),
    );
    let empty = start(no_tables).await;
    let response = http.get(url(&empty, "/ready")).send().await.unwrap();
    assert_eq!(response.status(), 503);
}

/// The status-code rules of GraphQL over HTTP: under `application/graphql-response+json`, a
/// request error is a 400 without `data`; under `application/json` it is a 200; field errors are
/// always 200 with `data`. Seen failing: with request errors answered 200 under
/// `application/graphql-response+json` (what async-graphql-axum does), the syntax-error case
/// failed.
#[tokio::test]
async fn status_codes_and_media_types_follow_graphql_over_http() {
    let app = TestApp::spawn().await;
    app.put_user("ivy").await;
    let server = start(app.store.clone()).await;
    let http = reqwest::Client::new();
    let ok = json!({ "query": "{ __typename }" });
    let syntax = json!({ "query": "{ user(" });
    let invalid = json!({ "query": "{ noSuchField }" });
    let bad_variable = json!({
        "query": "query ($id: String!) { user(userId: $id) { userId } }",
        "variables": { "id": 7 },
    });
    let field_error = json!({
        "query": r#"{ user(userId: "ivy") { purchases(first: -1) { edges { cursor } } } }"#,
    });
    let cases = [
        post("a query, Apollo's Accept", APOLLO_ACCEPT, ok.clone()),
        post("a query, JSON", JSON, ok.clone()),
        Exchange {
            accept: None,
            media: JSON,
            ..post("no Accept means application/json", JSON, ok.clone())
        },
        Exchange {
            accept: Some("*/*"),
            media: JSON,
            ..post("*/* gets application/json", JSON, ok.clone())
        },
        Exchange {
            status: 400,
            data: false,
            code: Some("GRAPHQL_PARSE_FAILED"),
            ..post("syntax error", GQL, syntax.clone())
        },
        Exchange {
            data: false,
            code: Some("GRAPHQL_PARSE_FAILED"),
            ..post("syntax error, legacy JSON", JSON, syntax)
        },
        Exchange {
            status: 400,
            data: false,
            code: Some("BAD_USER_INPUT"),
            ..post("validation error", GQL, invalid.clone())
        },
        Exchange {
            data: false,
            code: Some("BAD_USER_INPUT"),
            ..post("validation error, legacy JSON", JSON, invalid)
        },
        Exchange {
            status: 400,
            data: false,
            code: Some("BAD_USER_INPUT"),
            ..post("variable coercion error", GQL, bad_variable)
        },
        Exchange {
            code: Some("BAD_USER_INPUT"),
            ..post("a field error keeps data and 200", GQL, field_error)
        },
        Exchange {
            status: 400,
            data: false,
            code: Some("BAD_REQUEST"),
            ..post("query of the wrong type", GQL, json!({ "query": 1 }))
        },
        Exchange {
            status: 400,
            data: false,
            code: Some("BAD_REQUEST"),
            ..post(
                "variables of the wrong type",
                GQL,
                json!({ "query": "{ __typename }", "variables": "x" }),
            )
        },
        Exchange {
            status: 400,
            data: false,
            code: Some("BAD_REQUEST"),
            ..post("no query", JSON, json!({}))
        },
        Exchange {
            status: 400,
            data: false,
            code: Some("BAD_REQUEST"),
            ..post("a batch", GQL, json!([ok.clone(), ok.clone()]))
        },
        Exchange {
            content_type: Some("text/plain"),
            status: 415,
            data: false,
            code: Some("UNSUPPORTED_MEDIA_TYPE"),
            ..post("text/plain body", GQL, ok.clone())
        },
        Exchange {
            content_type: None,
            status: 415,
            data: false,
            code: Some("UNSUPPORTED_MEDIA_TYPE"),
            ..post("no content type", GQL, ok.clone())
        },
        Exchange {
            accept: Some("text/html"),
            status: 406,
            media: JSON,
            data: false,
            code: Some("NOT_ACCEPTABLE"),
            ..post("nothing acceptable", GQL, ok.clone())
        },
        Exchange {
            method: "GET",
            content_type: None,
            body: "query=%7B__typename%7D".to_owned(),
            ..post("GET query", GQL, ok.clone())
        },
        Exchange {
            method: "GET",
            content_type: None,
            body: "query=mutation%7BdeletePurchase%7D".to_owned(),
            status: 405,
            data: false,
            code: Some("METHOD_NOT_ALLOWED"),
            ..post("GET mutation", GQL, ok.clone())
        },
        Exchange {
            method: "GET",
            content_type: None,
            body: "operationName=x".to_owned(),
            status: 400,
            data: false,
            code: Some("BAD_REQUEST"),
            ..post("GET without query", GQL, ok.clone())
        },
        Exchange {
            method: "GET",
            content_type: None,
            body: "query=%7B__typename%7D&variables=%7Bnope".to_owned(),
            status: 400,
            data: false,
            code: Some("BAD_REQUEST"),
            ..post("GET with variables that are not JSON", GQL, ok)
        },
    ];
    for case in &cases {
        exchange(&http, &server, case).await;
    }
}

/// Apollo Automatic Persisted Queries at the protocol level: an unknown hash gets
/// PERSISTED_QUERY_NOT_FOUND; once registered with its text, the hash alone runs the query, over
/// POST or GET; a persisted mutation still may not run over GET. Seen failing: with the
/// persisted-query cache never enabled, the unknown-hash case got PERSISTED_QUERY_NOT_SUPPORTED.
#[tokio::test]
async fn persisted_queries_register_by_hash_and_never_run_mutations_over_get() {
    let app = TestApp::spawn().await;
    app.put_user("ivy").await;
    let server = start(app.store.clone()).await;
    let http = reqwest::Client::new();
    let query = r#"{ user(userId: "ivy") { name } }"#;
    let hash = sha256_hex(query);
    let hash_only = json!({ "extensions": persisted(&hash) });

    let unknown = exchange(
        &http,
        &server,
        &Exchange {
            status: 400,
            data: false,
            code: Some("PERSISTED_QUERY_NOT_FOUND"),
            ..post("unknown hash", GQL, hash_only.clone())
        },
    )
    .await;
    assert_eq!(unknown["errors"][0]["message"], "PersistedQueryNotFound");
    let expected = json!({ "user": { "name": "User ivy" } });
    let registered = exchange(
        &http,
        &server,
        &post(
            "register",
            GQL,
            json!({ "query": query, "extensions": persisted(&hash) }),
        ),
    )
    .await;
    assert_eq!(registered["data"], expected);
    let by_post = exchange(&http, &server, &post("hash over POST", GQL, hash_only)).await;
    assert_eq!(by_post["data"], expected);
    let extensions = persisted(&hash).to_string();
    let get = Exchange {
        method: "GET",
        content_type: None,
        body: query_string("extensions", &extensions),
        ..post("hash over GET", GQL, json!({}))
    };
    assert_eq!(exchange(&http, &server, &get).await["data"], expected);

    let wrong_hash = json!({ "query": "{ __typename }", "extensions": persisted(&hash) });
    exchange(
        &http,
        &server,
        &Exchange {
            status: 400,
            data: false,
            code: Some("BAD_USER_INPUT"),
            ..post("a hash that is not the query's", GQL, wrong_hash)
        },
    )
    .await;

    let mutation = r#"mutation { createUser(input: { userId: "mallory", name: "M", email: "m@example.com" }) { user { userId } } }"#;
    let mutation_hash = sha256_hex(mutation);
    // Registering a mutation over POST runs it; the same hash over GET must not.
    exchange(
        &http,
        &server,
        &post(
            "register a mutation",
            GQL,
            json!({ "query": mutation, "extensions": persisted(&mutation_hash) }),
        ),
    )
    .await;
    let extensions = persisted(&mutation_hash).to_string();
    exchange(
        &http,
        &server,
        &Exchange {
            method: "GET",
            content_type: None,
            body: query_string("extensions", &extensions),
            status: 405,
            data: false,
            code: Some("METHOD_NOT_ALLOWED"),
            ..post("a persisted mutation over GET", GQL, json!({}))
        },
    )
    .await;

    // With persisted queries turned off, clients are told so and fall back to full queries.
    let off = Running::start(
        app.store.clone(),
        HttpSettings {
            persisted_queries: 0,
            ..HttpSettings::default()
        },
    )
    .await;
    exchange(
        &http,
        &off,
        &Exchange {
            status: 400,
            data: false,
            code: Some("PERSISTED_QUERY_NOT_SUPPORTED"),
            ..post(
                "persisted queries off",
                GQL,
                json!({ "extensions": persisted(&hash) }),
            )
        },
    )
    .await;
}

/// CORS: with no allowed origins (the default) a browser gets no CORS headers, so it refuses to
/// share responses with other origins; with `http://localhost:*` any localhost port may call,
/// and nothing else. Seen failing: with the allowed list ignored, the preflight from
/// https://evil.example got the CORS headers.
#[tokio::test]
async fn cors_allows_only_the_configured_origins() {
    let app = TestApp::spawn().await;
    let closed = start(app.store.clone()).await;
    let open = Running::start(
        app.store.clone(),
        HttpSettings {
            cors_origins: "http://localhost:*".parse().unwrap(),
            ..HttpSettings::default()
        },
    )
    .await;
    let http = reqwest::Client::new();
    let preflight = |server: &Running, origin: &str| {
        http.request(reqwest::Method::OPTIONS, server.url("/graphql"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type")
            .send()
    };

    let allowed = preflight(&open, "http://localhost:5173").await.unwrap();
    assert!(allowed.status().is_success());
    assert_eq!(
        allowed.headers()["access-control-allow-origin"],
        "http://localhost:5173"
    );
    let methods = allowed.headers()["access-control-allow-methods"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        methods.contains("POST") && methods.contains("GET"),
        "{methods}"
    );
    assert!(
        allowed.headers()["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .contains("content-type")
    );
    for origin in ["https://evil.example", "http://localhost.evil.example:80"] {
        let refused = preflight(&open, origin).await.unwrap();
        assert!(
            refused
                .headers()
                .get("access-control-allow-origin")
                .is_none(),
            "{origin}"
        );
    }
    let refused = preflight(&closed, "http://localhost:5173").await.unwrap();
    assert!(
        refused
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );

    let actual = http
        .post(open.url("/graphql"))
        .header("origin", "http://localhost:3000")
        .json(&json!({ "query": "{ __typename }" }))
        .send()
        .await
        .unwrap();
    assert_eq!(actual.status(), 200);
    assert_eq!(
        actual.headers()["access-control-allow-origin"],
        "http://localhost:3000"
    );
    let vary = actual.headers().get_all("vary").iter().count();
    assert!(vary > 0, "CORS answers vary by Origin");
}
