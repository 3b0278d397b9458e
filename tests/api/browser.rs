//! GraphiQL in a real browser: headless Chromium (Debian's `chromium` package, or `$CHROMIUM`)
//! loads the playground from a local server with nothing but loopback to talk to, runs a
//! connection query typed into its editors, and renders the result. Driven by
//! `tests/clients/graphiql.mjs` through playwright-core.

use dynarelay::http::HttpSettings;
use serde_json::{Value, json};

use crate::helpers::{Running, TestApp, run_node};

/// Where the browser test leaves its screenshot of GraphiQL showing the result.
const SCREENSHOT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/target/screenshots/graphiql.png"
);

const QUERY: &str = "query RecentPurchases($userId: String!) {
  user(userId: $userId) {
    name
    purchases(first: 3, order: DESC) {
      edges { node { purchasedAt amount status } }
      pageInfo { hasNextPage endCursor }
    }
  }
}";

#[tokio::test]
async fn graphiql_in_headless_chromium_runs_a_connection_query_offline() {
    let app = TestApp::spawn().await;
    app.put_user("grace").await;
    // Amounts are `{ms % 1000}.5`: 111.5 (oldest) to 444.5 (newest).
    app.put_purchases(
        "grace",
        &[
            1_700_000_000_111,
            1_700_000_100_222,
            1_700_000_200_333,
            1_700_000_300_444,
        ],
    )
    .await;
    let server = Running::start(app.store.clone(), HttpSettings::default()).await;

    let run = run_node(
        "graphiql.mjs",
        &[
            "--url",
            &server.url("/"),
            "--query",
            QUERY,
            "--variables",
            r#"{ "userId": "grace" }"#,
            "--screenshot",
            SCREENSHOT,
        ],
        &[],
    )
    .await;
    run.assert_success();
    let report: Value = serde_json::from_str(run.stdout.trim()).unwrap_or_else(|err| {
        panic!(
            "graphiql.mjs printed no JSON report ({err}):\n{}",
            run.stdout
        )
    });

    // The playground opened with the README's sample query before the test replaced it.
    let default_query = report["defaultQuery"].as_str().unwrap();
    assert!(
        default_query.contains("query Purchases($userId: String!, $after: String)"),
        "{default_query}"
    );

    // What the result pane rendered: the three newest purchases, newest first, and more to come.
    let rendered = report["rendered"].as_str().unwrap();
    let shown: Value = serde_json::from_str(rendered)
        .unwrap_or_else(|err| panic!("the result pane does not show JSON ({err}):\n{rendered}"));
    let purchases = &shown["data"]["user"]["purchases"];
    assert_eq!(shown["data"]["user"]["name"], "User grace", "{rendered}");
    assert_eq!(
        purchases["edges"],
        json!([
            { "node": { "purchasedAt": "2023-11-14T22:18:20.444Z", "amount": "444.5", "status": "PAID" } },
            { "node": { "purchasedAt": "2023-11-14T22:16:40.333Z", "amount": "333.5", "status": "PAID" } },
            { "node": { "purchasedAt": "2023-11-14T22:15:00.222Z", "amount": "222.5", "status": "PAID" } },
        ]),
        "{rendered}"
    );
    assert_eq!(purchases["pageInfo"]["hasNextPage"], true, "{rendered}");
    assert!(rendered.contains(r#""hasNextPage": true"#), "{rendered}");
    // Fields appear in the order the query asked for them, as the GraphQL spec says they should.
    for (earlier, later) in [
        ("name", "purchases"),
        ("purchasedAt", "amount"),
        ("amount", "status"),
        ("hasNextPage", "endCursor"),
    ] {
        let position = |field: &str| rendered.find(&format!("\"{field}\":")).unwrap();
        assert!(
            position(earlier) < position(later),
            "`{earlier}` is shown after `{later}`:\n{rendered}"
        );
    }
    // Exactly the server's answer, cursor included.
    let direct = app.graphql(QUERY, json!({ "userId": "grace" })).await;
    assert_eq!(shown["data"], direct["data"]);
    // And its cost, compared as numbers: JavaScript shows a capacity of 1.0 as 1.
    let cost = |response: &Value| {
        let cost = response["extensions"]["cost"].as_object().unwrap().clone();
        cost.into_iter()
            .map(|(name, value)| (name, value.as_f64().unwrap()))
            .collect::<Vec<_>>()
    };
    assert_eq!(cost(&shown), cost(&direct), "{rendered}");

    // GraphiQL loaded the schema (for its docs and completion) and ran the query. It asks for
    // `application/json, multipart/mixed`, so both answers are plain JSON.
    let responses = report["graphqlResponses"].as_array().unwrap();
    for name in ["IntrospectionQuery", "RecentPurchases"] {
        let response = responses
            .iter()
            .find(|r| r["operationName"] == name)
            .unwrap_or_else(|| panic!("GraphiQL sent no {name}: {responses:?}"));
        assert_eq!(response["status"], 200, "{response}");
        let content_type = response["contentType"].as_str().unwrap_or_default();
        assert!(content_type.starts_with("application/json"), "{response}");
    }

    // Everything the page loaded came from this server: the page, its scripts and styles, and
    // the two GraphQL requests.
    let requests: Vec<&str> = report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    let origin = server.url("/");
    for expected in [
        format!("GET {origin}"),
        format!("GET {origin}graphiql/graphiql.min.js"),
        format!("GET {origin}graphiql/init.js"),
        format!("POST {origin}graphql"),
    ] {
        assert!(requests.contains(&expected.as_str()), "{requests:?}");
    }
    assert!(
        requests
            .iter()
            .all(|r| r.split_once(' ').unwrap().1.starts_with(&origin)),
        "{requests:?}"
    );

    let screenshot = std::fs::read(SCREENSHOT).unwrap();
    assert!(
        screenshot.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{SCREENSHOT} is not a PNG"
    );
}

/// The browser check fails, and says why, when the page breaks: GraphiQL's script does not load,
/// the page refers to another host (refused by the Content-Security-Policy), or, without that
/// policy, actually tries to fetch from another host.
#[tokio::test]
async fn the_graphiql_check_fails_when_the_page_breaks() {
    let app = TestApp::spawn().await;
    let server = Running::start(app.store.clone(), HttpSettings::default()).await;
    let url = server.url("/");
    let run = |sabotage: &'static str| {
        let url = url.clone();
        async move {
            run_node(
                "graphiql.mjs",
                &[
                    "--url",
                    &url,
                    "--query",
                    "{ users(first: 1) { pageInfo { hasNextPage } } }",
                    "--sabotage",
                    sabotage,
                ],
                &[],
            )
            .await
        }
    };
    let (no_bundle, foreign_image, foreign_image_no_csp) = tokio::join!(
        run("bundle"),
        run("foreign-image"),
        run("foreign-image-no-csp"),
    );

    no_bundle.assert_failure_mentioning("GraphiQL did not start: GraphiQL is not defined");
    foreign_image
        .assert_failure_mentioning("CSP violation: img-src blocked http://198.51.100.7/pixel.png");
    foreign_image_no_csp
        .assert_failure_mentioning("request to another origin: GET http://198.51.100.7/pixel.png");
}
