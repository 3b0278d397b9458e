//! Query limits, all enforced before execution: depth, complexity, aliases, document length and
//! token count, and introspection and suggestions switched off. Every rejection has its own
//! `extensions.code`, and a counter on the SDK client shows that no rejected request reaches
//! DynamoDB (each rejected query below names resolvers that would read it).

use dynarelay::{graphql::limits::QueryLimits, http::HttpSettings};
use serde_json::{Value, json};

use crate::helpers::{Running, TestApp, error_code};

/// `user { purchases { edges { node { user { ... } } } } }`, `levels` times over.
fn nested(levels: usize) -> String {
    let mut query = String::from("name");
    for _ in 0..levels {
        query = format!("purchases(first: 1) {{ edges {{ node {{ user {{ {query} }} }} }} }}");
    }
    format!(r#"{{ user(userId: "ivy") {{ {query} }} }}"#)
}

fn aliases(count: usize) -> String {
    let fields: Vec<String> = (0..count)
        .map(|i| format!(r#"a{i}: user(userId: "ivy") {{ name }}"#))
        .collect();
    format!("{{ {} }}", fields.join(" "))
}

/// Seen failing: with the complexity annotations removed from the connection fields, the
/// 100 x 100 query was accepted (and read DynamoDB); with the depth limit raised to 64, the
/// deep query ran; with documents cached before the document limits were checked, the 16-alias
/// query ran when sent a second time.
#[tokio::test]
async fn queries_over_a_limit_are_rejected_with_a_code_before_any_read() {
    let app = TestApp::spawn().await;
    app.put_user("ivy").await;
    app.put_purchases("ivy", &[1_700_000_000_000]).await;

    let too_complex = "{ users(first: 100) { edges { node { purchases(first: 100) { edges { node { amount } } } } } } }";
    let long = format!(
        r#"{{ user(userId: "ivy") {{ name }} }} #{}"#,
        "x".repeat(17 * 1024)
    );
    let many_tokens = format!(
        r#"{{ user(userId: "ivy") {{ name {} }} }}"#,
        "a ".repeat(2000)
    );
    let rejected = [
        ("too deep", nested(3), "QUERY_TOO_DEEP"),
        ("too complex", too_complex.to_owned(), "QUERY_TOO_COMPLEX"),
        ("16 aliases", aliases(16), "TOO_MANY_ALIASES"),
        ("17 KiB", long, "QUERY_TOO_LONG"),
        ("2000 tokens", many_tokens, "TOO_MANY_TOKENS"),
    ];
    let before = app.calls.snapshot();
    // Twice: a rejected document is never cached, so it is rejected again.
    for round in 1..=2 {
        for (case, query, code) in &rejected {
            let response = app.graphql(query, json!({})).await;
            assert_eq!(
                error_code(&response),
                Some(*code),
                "{case}, round {round}: {response}"
            );
            assert!(response.get("data").is_none(), "{case}: {response}");
        }
    }
    assert_eq!(
        app.calls.snapshot(),
        before,
        "a rejected request reached DynamoDB"
    );

    // Just inside each limit, the same shapes run.
    let accepted = [
        ("depth 10", nested(2)),
        (
            "complexity within 10,000",
            "{ users(first: 100) { edges { node { name } } } }".to_owned(),
        ),
        ("15 aliases", aliases(15)),
    ];
    // Twice: the second time from the document cache, with the same answer.
    for (case, query) in &accepted {
        let first = app.graphql(query, json!({})).await;
        assert!(first.get("errors").is_none(), "{case}: {first}");
        assert!(first["data"].is_object(), "{case}: {first}");
        let again = app.graphql(query, json!({})).await;
        assert_eq!(again["data"], first["data"], "{case}, from the cache");
    }
    assert_ne!(app.calls.snapshot(), before);
}

/// The limits are configurable, and production can switch off introspection and suggestions.
#[tokio::test]
async fn limits_are_configurable_and_introspection_and_suggestions_can_be_switched_off() {
    let app = TestApp::spawn().await;
    let strict = Running::start(
        app.store.clone(),
        HttpSettings {
            query_limits: QueryLimits {
                depth: 3,
                aliases: 1,
                introspection: false,
                suggestions: false,
                ..QueryLimits::default()
            },
            ..HttpSettings::default()
        },
    )
    .await;
    let open = Running::start(app.store.clone(), HttpSettings::default()).await;
    let http = reqwest::Client::new();
    let ask = |server: &Running, query: &str| {
        http.post(server.url("/graphql"))
            .json(&json!({ "query": query }))
            .send()
    };
    let body = |response: reqwest::Response| async move { response.json::<Value>().await.unwrap() };

    let introspection = "{ __schema { queryType { name } } }";
    let answered = body(ask(&open, introspection).await.unwrap()).await;
    assert_eq!(answered["data"]["__schema"]["queryType"]["name"], "Query");
    let refused = body(ask(&strict, introspection).await.unwrap()).await;
    assert!(refused.get("data").is_none(), "{refused}");
    assert_eq!(error_code(&refused), Some("INTROSPECTION_DISABLED"));

    let typo = r#"{ usr(userId: "x") { name } }"#;
    let suggested = body(ask(&open, typo).await.unwrap()).await;
    assert!(
        suggested["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("Did you mean"),
        "{suggested}"
    );
    let plain = body(ask(&strict, typo).await.unwrap()).await;
    let message = plain["errors"][0]["message"].as_str().unwrap();
    assert!(!message.contains("Did you mean"), "{message}");

    let deep = body(ask(&strict, &nested(1)).await.unwrap()).await;
    assert_eq!(error_code(&deep), Some("QUERY_TOO_DEEP"), "{deep}");
    let two = body(ask(&strict, &aliases(2)).await.unwrap()).await;
    assert_eq!(error_code(&two), Some("TOO_MANY_ALIASES"), "{two}");
    let one = body(ask(&strict, &aliases(1)).await.unwrap()).await;
    assert!(one.get("errors").is_none(), "{one}");
}

/// The depth limit leaves introspection out: graphql-js's own introspection query (what GraphiQL,
/// Apollo's and Relay's tools send), 14 deep, runs under the default limit of 10, as a hand-made
/// 14-deep `__schema` selection does; the same depth through the shop's own fields is refused,
/// also when the document introspects as well. Seen failing: with introspection counted (as
/// async-graphql's own limit counts it), GraphiQL's schema never loaded on a default server.
#[tokio::test]
async fn the_depth_limit_leaves_introspection_out() {
    let app = TestApp::spawn().await;
    app.put_user("ivy").await;
    let introspection = crate::helpers::run_node(
        "-e",
        &["process.stdout.write(require('graphql').getIntrospectionQuery())"],
        &[],
    )
    .await;
    let introspection = introspection.assert_success().stdout.clone();
    let answered = app.graphql(&introspection, json!({})).await;
    assert!(answered.get("errors").is_none(), "{answered}");
    assert_eq!(answered["data"]["__schema"]["queryType"]["name"], "Query");

    let of_type = "ofType { ".repeat(11) + "name" + &" }".repeat(11);
    let deep_schema = format!("{{ __schema {{ types {{ fields {{ type {{ {of_type} }} }} }} }} }}");
    let answered = app.graphql(&deep_schema, json!({})).await;
    assert!(answered.get("errors").is_none(), "{answered}");

    // Control: the shop's own fields, as deep, are refused, alone and beside introspection.
    let deep = nested(3);
    for query in [
        deep.clone(),
        deep.replacen("{ user", "{ __schema { queryType { name } } user", 1),
    ] {
        let refused = app.graphql(&query, json!({})).await;
        assert_eq!(error_code(&refused), Some("QUERY_TOO_DEEP"), "{refused}");
    }
}
