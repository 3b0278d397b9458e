//! `dynarelay lambda` end to end under cargo-lambda's emulator (`helpers/lambda.rs`): the
//! binary answers through the Lambda runtime API as it would on AWS Lambda, with the table
//! check off as on a cold start.
//!
//! - Relay walks through the function URL, both ways at every page size, equal DynamoDB Local's
//!   own reads: a user's purchases (a Query) and a category's products (a global index with
//!   tied prices).
//! - Errors keep their status and code: each of a set of bad requests gets the same answer
//!   from the function URL as from `serve`.
//! - Each kind of event (API Gateway REST API with its stage in the path, HTTP API, function URL,
//!   Application Load Balancer), sent as AWS sends it, is answered.
//! - `/ready` asks DynamoDB only with the table check on: with it off, the function needs no
//!   `DescribeTable`.
//!
//! `deploy.rs` runs a packaged function (`bootstrap` and its model) the same way. The function
//! reaches DynamoDB Local through a proxy that holds every call to the model's IAM policy for a
//! function with the table check off (`dynarelay policy --check-tables false`).

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Value, json};

use crate::{
    fault_proxy::FaultProxy,
    helpers::{
        LambdaFunction, ModelApp, Running, endpoint, graphql_at, ground_truth, merge, model_app,
        product_item, purchase_item, shop as shop_model, user_item, user_purchases, walk_matches,
    },
};

const USER: &str = "lambda-buyer";

const PURCHASES: &str =
    "query($user: String!, $first: Int, $after: String, $last: Int, $before: String) {
  user(userId: $user) {
    purchases(first: $first, after: $after, last: $last, before: $before) {
      edges { cursor node { purchasedAt amount } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}";

const PRODUCTS: &str =
    "query($category: String!, $first: Int, $after: String, $last: Int, $before: String) {
  products(category: $category, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { sku price } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}";

/// The shop with one user's 45 purchases and 30 products of one category, many at the same
/// price.
async fn shop() -> ModelApp {
    let app = model_app("examples/shop/dynarelay.toml").await;
    let put = |table: &str, item| {
        app.client()
            .put_item()
            .table_name(app.table(table))
            .set_item(Some(item))
            .send()
    };
    put("Users", user_item(USER)).await.unwrap();
    for i in 0..45i64 {
        let at = 1_767_225_600_000 + i * 86_400_000;
        put(
            "Purchases",
            purchase_item(USER, &at.to_string(), &format!("{i}.25")),
        )
        .await
        .unwrap();
    }
    for i in 0..30 {
        let price = format!("{}.99", i % 4);
        put(
            "Products",
            product_item(&format!("SKU-{i:05}"), "Thing", "tools", &price),
        )
        .await
        .unwrap();
    }
    app
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_walks_through_the_function_url_match_dynamodb() {
    let app = shop().await;
    let dynamodb = FaultProxy::auditing_lambda(&endpoint(), shop_model(), &app.prefix).await;
    let function = LambdaFunction::start(&dynamodb.url(), &app.prefix, &[]);
    let http = reqwest::Client::new();
    let url = function.url("/graphql");

    let purchases = user_purchases(&app, USER).await;
    let want: Vec<String> = purchases
        .iter()
        .map(|item| item["amount"].as_n().unwrap().to_owned())
        .collect();
    assert_eq!(want.len(), 45);
    walk_matches(
        |paging| {
            graphql_at(
                &http,
                &url,
                PURCHASES,
                merge(json!({ "user": USER }), paging),
            )
        },
        &["user", "purchases"],
        |node| text(&node["amount"]),
        &want,
        "purchases through the function URL",
    )
    .await;

    let products = ground_truth(
        &app,
        &app.table("Products"),
        Some("ByCategory"),
        ("category", AttributeValue::S("tools".to_owned())),
        None,
        true,
    )
    .await;
    let want: Vec<String> = products
        .iter()
        .map(|item| item["sku"].as_s().unwrap().to_owned())
        .collect();
    assert_eq!(want.len(), 30);
    walk_matches(
        |paging| {
            graphql_at(
                &http,
                &url,
                PRODUCTS,
                merge(json!({ "category": "tools" }), paging),
            )
        },
        &["products"],
        |node| text(&node["sku"]),
        &want,
        "products through the function URL",
    )
    .await;
    assert_eq!(dynamodb.refused(), Vec::<String>::new());
}

/// A request and what comes back: the status and the first error's code.
async fn answer(request: reqwest::RequestBuilder) -> (u16, Option<String>) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    let code = body["errors"][0]["extensions"]["code"]
        .as_str()
        .map(str::to_owned);
    (status, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_keep_their_status_and_code() {
    let app = shop().await;
    let dynamodb = FaultProxy::auditing_lambda(&endpoint(), shop_model(), &app.prefix).await;
    let function = LambdaFunction::start(&dynamodb.url(), &app.prefix, &[]);
    let serve = Running::serve(app.router.clone()).await;
    let http = reqwest::Client::new();
    let deep = format!(
        "{{ {}__typename{} }}",
        "user(userId: \"x\") { purchases { edges { node { user { ".repeat(4),
        " } } } } }".repeat(4)
    );
    let cases: Vec<(&str, &str, Value)> = vec![
        (
            "a cursor that is not one",
            "POST",
            json!({ "query": PURCHASES, "variables": { "user": USER, "first": 2, "after": "bad" } }),
        ),
        (
            "a page too large",
            "POST",
            json!({ "query": PURCHASES, "variables": { "user": USER, "first": 5000 } }),
        ),
        (
            "an unknown field",
            "POST",
            json!({ "query": "{ nothing }" }),
        ),
        ("a query too deep", "POST", json!({ "query": deep })),
        (
            "a mutation over GET",
            "GET",
            json!({ "query": "mutation { deletePurchase(input: { userId: \"x\", purchasedAt: \"2026-01-01T00:00:00.000Z\" }) { deletedId } }" }),
        ),
        ("not JSON", "POST", Value::String("{".into())),
    ];
    for (case, method, body) in cases {
        let send = |base: String| {
            let request = match (method, &body) {
                ("GET", body) => http
                    .get(base)
                    .query(&[("query", body["query"].as_str().unwrap())]),
                (_, Value::String(raw)) => http
                    .post(base)
                    .header("content-type", "application/json")
                    .body(raw.clone()),
                (_, body) => http.post(base).json(body),
            };
            answer(request)
        };
        let from_serve = send(serve.url("/graphql")).await;
        let from_lambda = send(function.url("/graphql")).await;
        assert!(
            from_serve.0 >= 400 || from_serve.1.is_some(),
            "{case}: `serve` accepted it: {from_serve:?}"
        );
        eprintln!("{case}: {from_lambda:?}");
        assert_eq!(from_lambda, from_serve, "{case}");
    }
    assert_eq!(dynamodb.refused(), Vec::<String>::new());
}

/// An API Gateway REST API event (payload 1.0) for `body` on `path` under the stage `prod`.
fn rest_api_event(body: &str) -> Value {
    json!({
        "resource": "/{proxy+}",
        "path": "/graphql",
        "httpMethod": "POST",
        "headers": { "content-type": "application/json", "accept": "application/json" },
        "multiValueHeaders": {},
        "queryStringParameters": null,
        "multiValueQueryStringParameters": null,
        "requestContext": {
            "stage": "prod",
            "httpMethod": "POST",
            "path": "/prod/graphql",
            "identity": { "sourceIp": "198.51.100.7" }
        },
        "body": body,
        "isBase64Encoded": false
    })
}

/// An API Gateway HTTP API event (payload 2.0) on a named stage.
fn http_api_event(body: &str) -> Value {
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/live/graphql",
        "rawQueryString": "",
        "headers": { "content-type": "application/json", "accept": "application/json" },
        "requestContext": {
            "stage": "live",
            "http": { "method": "POST", "path": "/live/graphql", "protocol": "HTTP/1.1",
                      "sourceIp": "203.0.113.5", "userAgent": "test" }
        },
        "body": body,
        "isBase64Encoded": false
    })
}

/// An Application Load Balancer event.
fn alb_event(body: &str) -> Value {
    json!({
        "httpMethod": "POST",
        "path": "/graphql",
        "headers": { "content-type": "application/json", "accept": "application/json" },
        "requestContext": { "elb": {
            "targetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/api/1"
        } },
        "body": body,
        "isBase64Encoded": false
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_event_is_answered() {
    let app = shop().await;
    let dynamodb = FaultProxy::auditing_lambda(&endpoint(), shop_model(), &app.prefix).await;
    let function = LambdaFunction::start(&dynamodb.url(), &app.prefix, &[]);
    let http = reqwest::Client::new();
    let body =
        json!({ "query": format!("{{ user(userId: \"{USER}\") {{ userId }} }}") }).to_string();
    for (kind, event) in [
        ("REST API", rest_api_event(&body)),
        ("HTTP API", http_api_event(&body)),
        ("Application Load Balancer", alb_event(&body)),
    ] {
        let response: Value = http
            .post(function.invocations())
            .json(&event)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(response["statusCode"], 200, "{kind}: {response}");
        let answer: Value = serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
        assert_eq!(
            answer["data"],
            json!({ "user": { "userId": USER } }),
            "{kind}: {answer}"
        );
    }
    // The function URL: its own events, from the emulator.
    let answer = graphql_at(
        &http,
        &function.url("/graphql"),
        &format!("{{ user(userId: \"{USER}\") {{ userId }} }}"),
        json!({}),
    )
    .await;
    assert_eq!(answer["data"], json!({ "user": { "userId": USER } }));
    assert_eq!(dynamodb.refused(), Vec::<String>::new());
}

/// An Application Load Balancer's caller is the address the balancer appended to
/// `X-Forwarded-For` (the event names none), so anonymous callers are limited each by its own
/// address. With one request a second per address and a burst of one: an address's first
/// request is served, and of the five that follow at once at least one is refused (all five
/// served would take four seconds of waiting); another address's first request is still served
/// (seen failing before the balancer's entry was read: every load balancer event was one caller,
/// so it was refused); and addresses the caller writes in front of the balancer's entry do not
/// make it someone new each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_balancers_callers_are_limited_each_by_its_address() {
    let app = shop().await;
    let dynamodb = FaultProxy::auditing_lambda(&endpoint(), shop_model(), &app.prefix).await;
    let one_a_second = [
        ("DYNARELAY_RATE_LIMIT_ADDRESSES", "on"),
        ("DYNARELAY_RATE_LIMIT_REQUESTS", "1"),
        ("DYNARELAY_RATE_LIMIT_BURST", "1"),
    ];
    let function = LambdaFunction::start(&dynamodb.url(), &app.prefix, &one_a_second);
    let http = reqwest::Client::new();
    let body = json!({ "query": "{ __typename }" }).to_string();
    let status = |forwarded: String| {
        let mut event = alb_event(&body);
        event["headers"]["x-forwarded-for"] = json!(forwarded);
        let request = http.post(function.invocations()).json(&event);
        async move {
            let response: Value = request.send().await.unwrap().json().await.unwrap();
            let status = response["statusCode"].as_u64().unwrap();
            if status == 429 {
                let answer: Value =
                    serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
                assert_eq!(
                    answer["errors"][0]["extensions"]["code"], "RATE_LIMITED",
                    "{answer}"
                );
            }
            status
        }
    };
    let refused_of_five = |forwarded: &dyn Fn(usize) -> String| {
        let sent: Vec<_> = (1..=5).map(|i| status(forwarded(i))).collect();
        async move {
            let mut refused = 0;
            for status in sent {
                refused += usize::from(status.await == 429);
            }
            refused
        }
    };
    let a = "198.51.100.20";
    assert_eq!(status(a.to_owned()).await, 200, "the first request");
    let refused = refused_of_five(&|_| a.to_owned()).await;
    assert!(refused > 0, "five more at once from {a}: none refused");
    assert_eq!(
        status("203.0.113.9".to_owned()).await,
        200,
        "another address's first request"
    );
    let refused = refused_of_five(&|i| format!("192.0.2.{i}, {a}")).await;
    assert!(
        refused > 0,
        "five from {a}, each claiming another address before it: none refused"
    );
    assert_eq!(dynamodb.counts().received, 0, "no call to DynamoDB");
}

/// `GET /ready` through the function URL of a function with `env`, its calls held to `proxy`'s
/// policy: the status and the body.
async fn ready(proxy: &FaultProxy, prefix: &str, env: &[(&str, &str)]) -> (u16, Value) {
    let function = LambdaFunction::start(&proxy.url(), prefix, env);
    let response = reqwest::get(function.url("/ready")).await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// With the table check off (the default), `/ready` answers without asking DynamoDB, so the
/// function's policy (`dynarelay policy --check-tables false`) holds no `DescribeTable`. The
/// controls: with `--check-tables true` under that policy, the check is refused and `/ready`
/// says unavailable; under `serve`'s policy, which allows it, `/ready` asks and answers ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_table_check_decides_whether_ready_asks_dynamodb() {
    let app = shop().await;
    let lambda_policy = FaultProxy::auditing_lambda(&endpoint(), shop_model(), &app.prefix).await;
    let (status, body) = ready(&lambda_policy, &app.prefix, &[]).await;
    assert_eq!(
        (status, body),
        (200, json!({ "status": "ready", "tables": "not checked" }))
    );
    assert_eq!(lambda_policy.counts().received, 0, "no call to DynamoDB");

    let checked = [("DYNARELAY_CHECK_TABLES", "true")];
    let (status, body) = ready(&lambda_policy, &app.prefix, &checked).await;
    assert_eq!((status, body), (503, json!({ "status": "unavailable" })));
    lambda_policy.assert_refused_only("dynamodb:DescribeTable ");

    let serve_policy = FaultProxy::auditing(&endpoint(), shop_model(), &app.prefix).await;
    let (status, body) = ready(&serve_policy, &app.prefix, &checked).await;
    assert_eq!((status, body), (200, json!({ "status": "ready" })));
    assert_eq!(serve_policy.refused(), Vec::<String>::new());
}
