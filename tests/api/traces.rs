//! OpenTelemetry traces: the `dynarelay` binary exporting over OTLP (HTTP/protobuf and gRPC) to a
//! loopback receiver that decodes with OpenTelemetry's own protobuf definitions
//! ([`OtlpReceiver`]): the spans of pages, a mutation, a persisted query and failing DynamoDB
//! calls, their tree and attributes, the caller's `traceparent` as the parent, sampling, and no
//! value of the tables, variable, cursor or token anywhere; a Lambda function exporting each
//! event's spans before it answers; with traces off, nothing is sent.

use std::collections::{BTreeSet, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Value, json};

use crate::fault_proxy::FaultProxy;
use crate::helpers::{
    LambdaFunction, ModelApp, OtlpReceiver, TestIssuer, dynarelay_command, endpoint, model_app,
    model_claims, persisted, secure_app, sha256_hex, spawn_serve, stop, user_item,
};
use crate::shop_data::{self, Dataset, SeedSpec, ShopTables};

/// A page of a user's purchases, after a cursor when one is given.
const PAGE: &str = "query Purchases($userId: String!, $after: String) { user(userId: $userId) { userId purchases(first: 3, after: $after) { edges { cursor node { sku amount quantity } } pageInfo { hasNextPage endCursor } } } }";

/// A purchase by the caller.
const BUY: &str = "mutation Buy($input: CreatePurchaseInput!) { createPurchase(input: $input) { purchase { id sku } } }";

/// A trace a caller (or Apollo Router) started: its id and the span the request is a child of.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// A trace an AWS load balancer started, as its `X-Amzn-Trace-Id` gives it.
const XRAY_TRACE: &str = "5759e988bd862e3fe1be46a994272793";

/// A span by name, with its attributes.
fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|span| span["name"] == name).collect()
}

/// The spans of one trace, by span id.
fn trace_of(spans: &[Value], trace_id: &str) -> HashMap<String, Value> {
    spans
        .iter()
        .filter(|span| span["trace_id"] == trace_id)
        .map(|span| (span["span_id"].as_str().unwrap().to_owned(), span.clone()))
        .collect()
}

/// The names of a span's children in `trace`, sorted.
fn children(trace: &HashMap<String, Value>, parent: &Value) -> Vec<String> {
    let mut names: Vec<String> = trace
        .values()
        .filter(|span| span["parent_span_id"] == parent["span_id"])
        .map(|span| span["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// The one span of `trace` named `name`.
fn only<'a>(trace: &'a HashMap<String, Value>, name: &str) -> &'a Value {
    let found: Vec<&Value> = trace.values().filter(|span| span["name"] == name).collect();
    assert_eq!(found.len(), 1, "one {name} in {trace:#?}");
    found[0]
}

/// Every string a span holds: its name, trace state, status message and text attributes.
fn strings_of(span: &Value) -> Vec<String> {
    let mut strings = vec![
        span["name"].as_str().unwrap().to_owned(),
        span["trace_state"].as_str().unwrap().to_owned(),
        span["status_message"].as_str().unwrap().to_owned(),
    ];
    // Numbers are the counts the spans are for: only text can carry data.
    for value in span["attributes"].as_object().unwrap().values() {
        if let Value::String(text) = value {
            strings.push(text.clone());
        }
    }
    strings
}

/// No span holds any of `secrets`: long ones anywhere in a string, short ones as a whole value.
fn assert_no_secret(spans: &[Value], secrets: &BTreeSet<String>) {
    assert!(secrets.len() > 40, "the test knows its data: {secrets:?}");
    for span in spans {
        for text in strings_of(span) {
            for secret in secrets {
                let leaked = if secret.len() >= 6 {
                    text.contains(secret.as_str())
                } else {
                    text == *secret
                };
                assert!(!leaked, "{secret:?} is in {text:?} of {span:#}");
            }
        }
    }
}

/// Every string and number of `items`.
fn values_of<'a>(
    items: impl IntoIterator<Item = &'a HashMap<String, AttributeValue>>,
) -> Vec<String> {
    items
        .into_iter()
        .flat_map(|item| item.values())
        .filter_map(|value| match value {
            AttributeValue::S(text) | AttributeValue::N(text) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The secure shop on fresh tables holding a generated data set, and a token of its user with
/// the most purchases.
struct Shop {
    issuer: TestIssuer,
    app: ModelApp,
    data: Dataset,
    buyer: String,
    token: String,
}

impl Shop {
    async fn start(spec: SeedSpec) -> Self {
        let issuer = TestIssuer::start().await;
        let app = secure_app(&issuer).await;
        let data = shop_data::generate(&spec);
        shop_data::write(&app.store, &ShopTables::with_prefix(&app.prefix), &data)
            .await
            .unwrap();
        let purchases = |user: &str| data.purchases.iter().filter(|p| p.user_id == user).count();
        let buyer = data
            .users
            .iter()
            .max_by_key(|user| purchases(&user.user_id))
            .expect("a user")
            .user_id
            .clone();
        let token = issuer.mint(&model_claims(app.model, &buyer, &[]));
        Self {
            issuer,
            app,
            data,
            buyer,
            token,
        }
    }

    /// `serve` over the shop's tables, DynamoDB at `dynamodb`, with `env` besides; the server
    /// and its `/graphql` URL.
    fn serve(&self, dynamodb: &str, env: &[(&str, &str)]) -> (std::process::Child, String) {
        let (server, addr) = tokio::task::block_in_place(|| {
            spawn_serve(
                dynarelay_command(dynamodb)
                    .env(
                        "DYNARELAY_MODEL",
                        concat!(env!("CARGO_MANIFEST_DIR"), "/examples/shop/secure.toml"),
                    )
                    .env("DYNARELAY_TABLE_PREFIX", &self.app.prefix)
                    .env("DYNARELAY_AUTH_JWKS_URL", self.issuer.url())
                    .envs(env.iter().copied())
                    .args(["serve", "--listen", "127.0.0.1:0"]),
            )
        });
        (server, format!("http://{addr}/graphql"))
    }

    /// POSTs `body` to `url` with the buyer's token and `headers`; the JSON answer.
    async fn post(&self, url: &str, body: Value, headers: &[(&str, String)]) -> Value {
        let mut headers = headers.to_vec();
        headers.push(("authorization", format!("Bearer {}", self.token)));
        post_json(url, body, &headers).await
    }

    /// The page of the buyer's purchases, after `after` if given.
    fn page(&self, after: Option<&str>) -> Value {
        json!({ "query": PAGE, "variables": { "userId": self.buyer, "after": after } })
    }
}

/// POSTs `body` to `url` with `headers`; the JSON answer.
async fn post_json(url: &str, body: Value, headers: &[(&str, String)]) -> Value {
    let mut request = reqwest::Client::new().post(url).json(&body);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    request.send().await.unwrap().json::<Value>().await.unwrap()
}

/// Stops a server, which exports what it has left as it stops.
fn stopped(mut server: std::process::Child) {
    let status = tokio::task::block_in_place(|| stop(&mut server));
    assert!(status.success(), "serve exited with {status}");
}

/// A DynamoDB span's `aws.dynamodb.consumed_capacity`: DynamoDB's `ConsumedCapacity` of each
/// table, as the JSON text OpenTelemetry's conventions give it.
fn consumed_capacity(span: &Value) -> Vec<Value> {
    span["attributes"]["aws.dynamodb.consumed_capacity"]
        .as_array()
        .unwrap_or_else(|| panic!("an array of consumed capacities in {span}"))
        .iter()
        .map(|json| serde_json::from_str(json.as_str().unwrap()).unwrap())
        .collect()
}

/// A `traceparent` of `trace`, sampled, under [`PARENT_ID`].
fn traceparent(trace: &str) -> (&'static str, String) {
    ("traceparent", format!("00-{trace}-{PARENT_ID}-01"))
}

/// Traces over OTLP/HTTP: a page with the caller's `traceparent` and `tracestate` (the request
/// span is its child, the operation span the request's, the page's the operation's, the Query
/// the page's, each with its attributes), the next page through the direct executor, a
/// mutation, a persisted query sent by hash, a Query throttled once and retried, and Queries
/// failing every attempt (the error code, the retries, error status up the tree, the response's
/// error code on the operation). Nothing of the data, variables, cursors or tokens in any span.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_of_requests_go_to_an_otlp_collector_over_http() {
    let receiver = OtlpReceiver::start();
    let shop = Shop::start(SeedSpec {
        seed: 11,
        users: 6,
        products: 4,
        categories: 2,
    })
    .await;
    let (app, data, buyer) = (&shop.app, &shop.data, &shop.buyer);
    let dynamodb = FaultProxy::auditing(&endpoint(), app.model, &app.prefix).await;
    let http_endpoint = receiver.http_endpoint();
    let (server, url) = shop.serve(
        &dynamodb.url(),
        &[("DYNARELAY_TRACE_ENDPOINT", &http_endpoint)],
    );
    let traced = |trace: &str| {
        [
            traceparent(trace),
            ("tracestate", "vendor=opaque7".to_owned()),
        ]
    };

    // Two pages, each in a trace the caller started.
    let first = shop.post(&url, shop.page(None), &traced(TRACE_ID)).await;
    let connection = &first["data"]["user"]["purchases"];
    assert_eq!(connection["edges"].as_array().unwrap().len(), 3, "{first}");
    let end = connection["pageInfo"]["endCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let second_trace = "5bf92f3577b34da6a3ce929d0e0e4737";
    let second = shop
        .post(&url, shop.page(Some(&end)), &traced(second_trace))
        .await;
    let edges = &second["data"]["user"]["purchases"]["edges"];
    assert_eq!(edges.as_array().unwrap().len(), 3, "{second}");
    // A mutation, a persisted query registered then sent by hash, in traces of their own.
    let input = json!({ "sku": data.products[0].sku, "quantity": 2, "amount": "31.75" });
    let buy = json!({ "query": BUY, "variables": { "input": input } });
    let bought = shop.post(&url, buy, &[]).await;
    assert!(bought.get("errors").is_none(), "{bought}");
    let hash = sha256_hex(PAGE);
    let mut register = shop.page(None);
    register["extensions"] = persisted(&hash);
    assert!(shop.post(&url, register, &[]).await.get("errors").is_none());
    let by_hash = json!({ "extensions": persisted(&hash), "variables": { "userId": buyer } });
    let persisted_trace = "6bf92f3577b34da6a3ce929d0e0e4738";
    let answered = shop.post(&url, by_hash, &traced(persisted_trace)).await;
    assert!(answered.get("errors").is_none(), "{answered}");
    // A Query throttled once, then answered; then Queries failing every attempt.
    let retried_trace = "7bf92f3577b34da6a3ce929d0e0e4739";
    dynamodb.fail_next("Query", "ProvisionedThroughputExceededException", 1);
    let retried = shop
        .post(&url, shop.page(None), &traced(retried_trace))
        .await;
    assert!(retried.get("errors").is_none(), "{retried}");
    let failed_trace = "8bf92f3577b34da6a3ce929d0e0e473a";
    dynamodb.fail_next("Query", "ThrottlingException", 3);
    let failed = shop
        .post(&url, shop.page(None), &traced(failed_trace))
        .await;
    let codes: Vec<&str> = failed["errors"]
        .as_array()
        .expect("the failed page is an error")
        .iter()
        .map(|error| error["extensions"]["code"].as_str().unwrap())
        .collect();
    assert_eq!(dynamodb.failures_left(), 0);

    stopped(server);
    let spans = receiver.spans_when(|spans| !trace_of(spans, failed_trace).is_empty());
    assert!(spans.iter().all(|span| span["transport"] == "http"));
    assert!(
        spans
            .iter()
            .all(|span| span["resource"]["service.name"] == "dynarelay")
    );

    // The first page: the caller's trace, under the caller's span.
    let trace = trace_of(&spans, TRACE_ID);
    let request = only(&trace, "POST /graphql");
    assert_eq!(request["parent_span_id"], PARENT_ID);
    assert_eq!(request["kind"], "SPAN_KIND_SERVER");
    assert_eq!(request["trace_state"], "vendor=opaque7");
    assert_eq!(request["attributes"]["http.request.method"], "POST");
    assert_eq!(request["attributes"]["http.route"], "/graphql");
    assert_eq!(request["attributes"]["http.response.status_code"], 200);
    assert_eq!(children(&trace, request), ["query Purchases"]);
    let operation = only(&trace, "query Purchases");
    assert_eq!(operation["attributes"]["graphql.operation.type"], "query");
    assert_eq!(
        operation["attributes"]["graphql.operation.name"],
        "Purchases"
    );
    assert_eq!(operation["attributes"]["graphql.document.sha256"], hash);
    assert_eq!(operation["status"], "STATUS_CODE_UNSET");
    assert_eq!(
        children(&trace, operation),
        ["DynamoDB.GetItem", "page User.purchases"]
    );
    let page = only(&trace, "page User.purchases");
    assert_eq!(page["attributes"]["dynarelay.connection"], "User.purchases");
    let purchases_table = format!("{}Purchases", app.prefix);
    assert_eq!(
        page["attributes"]["aws.dynamodb.table_names"],
        json!([purchases_table])
    );
    assert_eq!(page["attributes"]["dynarelay.page.size"], 3);
    assert_eq!(page["attributes"]["dynarelay.page.edges"], 3);
    assert_eq!(page["attributes"]["dynarelay.page.has_next_page"], true);
    assert_eq!(page["attributes"]["dynarelay.page.cursor"], false);
    assert_eq!(children(&trace, page), ["DynamoDB.Query"]);
    let query = only(&trace, "DynamoDB.Query");
    assert_eq!(query["kind"], "SPAN_KIND_CLIENT");
    let attributes = &query["attributes"];
    assert_eq!(attributes["rpc.system"], "aws-api");
    assert_eq!(attributes["rpc.service"], "DynamoDB");
    assert_eq!(attributes["rpc.method"], "Query");
    assert_eq!(
        attributes["aws.dynamodb.table_names"],
        json!([purchases_table])
    );
    assert_eq!(attributes["aws.dynamodb.limit"], 4, "the page and one more");
    assert_eq!(attributes["aws.dynamodb.count"], 4);
    assert_eq!(attributes["aws.dynamodb.scanned_count"], 4);
    let consumed = consumed_capacity(query);
    assert_eq!(consumed.len(), 1, "{consumed:?}");
    assert_eq!(consumed[0]["TableName"], purchases_table);
    assert!(consumed[0]["CapacityUnits"].as_f64().unwrap() > 0.0);
    assert_eq!(attributes["dynarelay.dynamodb.retries"], 0);
    assert!(attributes.get("error.type").is_none());
    let lookup = only(&trace, "DynamoDB.GetItem");
    assert_eq!(
        lookup["attributes"]["aws.dynamodb.table_names"],
        json!([format!("{}Users", app.prefix)])
    );

    // The next page: the same tree from the direct executor, started from a cursor.
    let trace = trace_of(&spans, second_trace);
    let operation = only(&trace, "query Purchases");
    assert_eq!(operation["attributes"]["dynarelay.executor"], "direct");
    let page = only(&trace, "page User.purchases");
    assert_eq!(page["parent_span_id"], operation["span_id"]);
    assert_eq!(page["attributes"]["dynarelay.page.cursor"], true);
    assert_eq!(children(&trace, page), ["DynamoDB.Query"]);

    // The mutation: a trace of its own (no caller's), its writes under the operation.
    let mutation = named(&spans, "mutation Buy");
    assert_eq!(mutation.len(), 1);
    let trace = trace_of(&spans, mutation[0]["trace_id"].as_str().unwrap());
    let request = only(&trace, "POST /graphql");
    assert_eq!(request["parent_span_id"], "", "a root span");
    // Its new trace id starts with the time in seconds, as X-Ray takes trace ids.
    let started = u64::from_str_radix(&request["trace_id"].as_str().unwrap()[..8], 16).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(now.abs_diff(started) < 3600, "{started} is not about {now}");
    assert_eq!(
        mutation[0]["attributes"]["graphql.operation.type"],
        "mutation"
    );
    let writes = children(&trace, mutation[0]);
    assert!(
        writes.contains(&"DynamoDB.PutItem".to_owned()),
        "{writes:?}"
    );

    // The persisted query sent by its hash: the document named by that hash.
    let trace = trace_of(&spans, persisted_trace);
    let operation = only(&trace, "query Purchases");
    assert_eq!(operation["attributes"]["graphql.persisted_query"], true);
    assert_eq!(operation["attributes"]["graphql.document.sha256"], hash);

    // Throttled once: one retry, then an answer.
    let trace = trace_of(&spans, retried_trace);
    let query = only(&trace, "DynamoDB.Query");
    assert_eq!(query["attributes"]["dynarelay.dynamodb.retries"], 1);
    assert_eq!(query["status"], "STATUS_CODE_UNSET");

    // Failing every attempt: DynamoDB's code and the retries on the call, the response's error
    // code on the operation; the request itself answered 200, as GraphQL errors are.
    let trace = trace_of(&spans, failed_trace);
    let query = only(&trace, "DynamoDB.Query");
    assert_eq!(query["attributes"]["error.type"], "ThrottlingException");
    assert_eq!(query["attributes"]["dynarelay.dynamodb.retries"], 2);
    assert_eq!(query["status"], "STATUS_CODE_ERROR");
    let operation = only(&trace, "query Purchases");
    assert_eq!(operation["status"], "STATUS_CODE_ERROR");
    let recorded = operation["attributes"]["graphql.error.codes"]
        .as_str()
        .unwrap();
    let mut expected = codes.clone();
    expected.sort_unstable();
    expected.dedup();
    assert_eq!(recorded, expected.join(","));
    assert_eq!(
        only(&trace, "POST /graphql")["attributes"]["http.response.status_code"],
        200
    );

    // Nothing of the data, the variables, cursors or the token anywhere.
    let mut secrets: BTreeSet<String> = values_of(
        data.users
            .iter()
            .map(|u| u.to_item())
            .chain(data.products.iter().map(|p| p.to_item()))
            .chain(data.purchases.iter().map(|p| p.to_item()))
            .collect::<Vec<_>>()
            .iter(),
    )
    .into_iter()
    .collect();
    for answer in [&first, &second, &answered, &bought] {
        collect_strings(answer, &mut secrets);
    }
    secrets.insert(shop.token.clone());
    secrets.insert(end);
    secrets.insert("31.75".to_owned());
    // Words of the schema and numbers that a span may hold for what they are, not as data.
    for word in [
        "PENDING",
        "PAID",
        "SHIPPED",
        "REFUNDED",
        "query",
        "Purchases",
        "true",
    ] {
        secrets.remove(word);
    }
    secrets.retain(|secret| secret.parse::<i64>().is_err());
    assert_no_secret(&spans, &secrets);
    assert_eq!(dynamodb.refused(), Vec::<String>::new());
}

/// Every string in a JSON answer.
fn collect_strings(value: &Value, into: &mut BTreeSet<String>) {
    match value {
        Value::String(text) => {
            into.insert(text.clone());
        }
        Value::Array(values) => values.iter().for_each(|v| collect_strings(v, into)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, into)),
        _ => {}
    }
}

/// Reads batched across a request (a page's relations, `nodes`) run as tasks of their own: their
/// `DynamoDB.BatchGetItem` spans stay in the caller's trace, under the operation, naming every
/// table they read as an array with each table's consumed capacity; and a caller that did not
/// sample its request (`traceparent …-00`) gets no span of it exported, with the server's
/// default ratio of 1 for callers who decide nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_reads_stay_in_the_callers_trace_and_follow_its_sampling() {
    const RELATED: &str = "query Related($userId: String!) { user(userId: $userId) { purchases(first: 3) { edges { node { id user { userId } product { name } } } } } }";
    const NODES: &str = "query Nodes($ids: [ID!]!) { nodes(ids: $ids) { id } }";
    let receiver = OtlpReceiver::start();
    let shop = Shop::start(SeedSpec {
        seed: 14,
        users: 4,
        products: 3,
        categories: 1,
    })
    .await;
    let http_endpoint = receiver.http_endpoint();
    let (server, url) = shop.serve(
        &endpoint(),
        &[("DYNARELAY_TRACE_ENDPOINT", http_endpoint.as_str())],
    );
    let related = json!({ "query": RELATED, "variables": { "userId": shop.buyer } });
    let unsampled = |trace: &str| ("traceparent", format!("00-{trace}-{PARENT_ID}-00"));
    let (unsampled_related, unsampled_nodes) = (
        "1bf92f3577b34da6a3ce929d0e0e4731",
        "2bf92f3577b34da6a3ce929d0e0e4732",
    );
    let (related_trace, nodes_trace) = (
        "3bf92f3577b34da6a3ce929d0e0e4733",
        "4bf92f3577b34da6a3ce929d0e0e4734",
    );
    // Not sampled by their callers first: the spans of a process end in order, and are exported
    // in that order, so once the last sampled request's span is in, any of these would be too.
    let page = shop
        .post(&url, related.clone(), &[unsampled(unsampled_related)])
        .await;
    let ids: Vec<Value> = page["data"]["user"]["purchases"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("a page of purchases: {page}"))
        .iter()
        .map(|edge| edge["node"]["id"].clone())
        .collect();
    assert_eq!(ids.len(), 3, "{page}");
    let nodes = json!({ "query": NODES, "variables": { "ids": ids } });
    let answered = shop
        .post(&url, nodes.clone(), &[unsampled(unsampled_nodes)])
        .await;
    assert!(answered.get("errors").is_none(), "{answered}");
    for (body, trace) in [(related, related_trace), (nodes, nodes_trace)] {
        let answer = shop.post(&url, body, &[traceparent(trace)]).await;
        assert!(answer.get("errors").is_none(), "{answer}");
    }
    let spans = receiver.spans_when(|spans| {
        trace_of(spans, nodes_trace)
            .values()
            .any(|span| span["name"] == "POST /graphql")
    });
    stopped(server);

    // Every span exported is of a sampled caller's trace, under the caller's span.
    let traces: BTreeSet<&str> = spans
        .iter()
        .map(|span| span["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        traces,
        BTreeSet::from([related_trace, nodes_trace]),
        "{spans:#?}"
    );
    for trace_id in [related_trace, nodes_trace] {
        let trace = trace_of(&spans, trace_id);
        for span in trace.values() {
            let parent = span["parent_span_id"].as_str().unwrap();
            assert!(
                parent == PARENT_ID || trace.contains_key(parent),
                "{} has no parent in its trace: {span}",
                span["name"]
            );
        }
    }
    // The page's relations: one batch over both tables, under the operation.
    let trace = trace_of(&spans, related_trace);
    let operation = only(&trace, "query Related");
    let batch = only(&trace, "DynamoDB.BatchGetItem");
    assert_eq!(batch["parent_span_id"], operation["span_id"]);
    assert_eq!(batch["kind"], "SPAN_KIND_CLIENT");
    let (users, products) = (
        format!("{}Users", shop.app.prefix),
        format!("{}Products", shop.app.prefix),
    );
    let mut tables: Vec<String> =
        serde_json::from_value(batch["attributes"]["aws.dynamodb.table_names"].clone())
            .unwrap_or_else(|_| panic!("table names as an array: {batch}"));
    tables.sort();
    assert_eq!(tables, [products.clone(), users.clone()]);
    let mut consumed: Vec<String> = consumed_capacity(batch)
        .iter()
        .map(|table| {
            assert!(table["CapacityUnits"].as_f64().unwrap() > 0.0, "{table}");
            table["TableName"].as_str().unwrap().to_owned()
        })
        .collect();
    consumed.sort();
    assert_eq!(consumed, [products, users]);
    // `nodes`: the purchases read in one batch, under its operation.
    let trace = trace_of(&spans, nodes_trace);
    let batch = only(&trace, "DynamoDB.BatchGetItem");
    assert_eq!(
        batch["parent_span_id"],
        only(&trace, "query Nodes")["span_id"]
    );
    assert_eq!(
        batch["attributes"]["aws.dynamodb.table_names"],
        json!([format!("{}Purchases", shop.app.prefix)])
    );
    assert_eq!(batch["attributes"]["aws.dynamodb.count"], 3);
}

/// Traces over OTLP/gRPC, sampled at 0: a request whose caller sampled it is traced (request,
/// operation, page, Query), by `traceparent` or by an AWS load balancer's `X-Amzn-Trace-Id`;
/// one without a caller's decision is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_go_over_grpc_and_follow_the_callers_sampling() {
    let receiver = OtlpReceiver::start();
    let shop = Shop::start(SeedSpec {
        seed: 12,
        users: 3,
        products: 2,
        categories: 1,
    })
    .await;
    let grpc_endpoint = receiver.grpc_endpoint();
    let (server, url) = shop.serve(
        &endpoint(),
        &[
            ("DYNARELAY_TRACE_ENDPOINT", &grpc_endpoint),
            ("DYNARELAY_TRACE_PROTOCOL", "grpc"),
            ("DYNARELAY_TRACE_SAMPLE_RATIO", "0"),
        ],
    );
    let unsampled = shop.post(&url, shop.page(None), &[]).await;
    let sampled = shop
        .post(&url, shop.page(None), &[traceparent(TRACE_ID)])
        .await;
    // As an Application Load Balancer or API Gateway with X-Ray on passes a request along.
    let root = format!("Root=1-{}-{}", &XRAY_TRACE[..8], &XRAY_TRACE[8..]);
    let xray = (
        "x-amzn-trace-id",
        format!("{root};Parent={PARENT_ID};Sampled=1"),
    );
    let through_xray = shop.post(&url, shop.page(None), &[xray]).await;
    for answer in [unsampled, sampled, through_xray] {
        assert!(answer.get("errors").is_none(), "{answer}");
    }
    stopped(server);

    let spans = receiver.spans_when(|spans| {
        !trace_of(spans, TRACE_ID).is_empty() && !trace_of(spans, XRAY_TRACE).is_empty()
    });
    assert!(
        spans
            .iter()
            .all(|span| span["trace_id"] == TRACE_ID || span["trace_id"] == XRAY_TRACE),
        "{spans:#?}"
    );
    assert!(spans.iter().all(|span| span["transport"] == "grpc"));
    let trace = trace_of(&spans, XRAY_TRACE);
    assert_eq!(only(&trace, "POST /graphql")["parent_span_id"], PARENT_ID);
    let trace = trace_of(&spans, TRACE_ID);
    let request = only(&trace, "POST /graphql");
    assert_eq!(request["parent_span_id"], PARENT_ID);
    assert_eq!(children(&trace, request), ["query Purchases"]);
    let page = only(&trace, "page User.purchases");
    assert_eq!(children(&trace, page), ["DynamoDB.Query"]);
}

/// With no `--trace-endpoint`, nothing is exported, not even with the standard
/// `OTEL_EXPORTER_OTLP_ENDPOINT` naming a collector.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_traces_off_nothing_is_sent() {
    let receiver = OtlpReceiver::start();
    let shop = Shop::start(SeedSpec {
        seed: 13,
        users: 1,
        products: 1,
        categories: 1,
    })
    .await;
    let http_endpoint = receiver.http_endpoint();
    let (server, url) = shop.serve(
        &endpoint(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &http_endpoint),
            ("OTEL_TRACES_EXPORTER", "otlp"),
        ],
    );
    let answer = shop
        .post(&url, shop.page(None), &[traceparent(TRACE_ID)])
        .await;
    assert!(answer.get("errors").is_none(), "{answer}");
    stopped(server);
    // The server flushes what it has when it stops: by now anything it meant to send was sent.
    assert_eq!(receiver.requests(), 0);
}

/// The Lambda function exports each event's spans before it answers (Lambda may freeze it until
/// the next event): with the batch exporter's own schedule set to an hour, a page's spans
/// arrive while the function still runs, in the caller's trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lambda_function_exports_each_events_spans_before_answering() {
    let receiver = OtlpReceiver::start();
    let app = model_app("examples/shop/dynarelay.toml").await;
    app.store
        .put_items(&app.table("Users"), vec![user_item("lambda-user")])
        .await
        .unwrap();
    let endpoint_url = receiver.http_endpoint();
    let function = LambdaFunction::start(
        &endpoint(),
        &app.prefix,
        &[
            ("DYNARELAY_TRACE_ENDPOINT", endpoint_url.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "3600000"),
        ],
    );
    let query = "query Purchases { user(userId: \"lambda-user\") { purchases(first: 2) { edges { cursor } } } }";
    let answer = post_json(
        &function.url("/graphql"),
        json!({ "query": query }),
        &[traceparent(TRACE_ID)],
    )
    .await;
    assert!(answer.get("errors").is_none(), "{answer}");
    let spans = receiver.spans_when(|spans| {
        let trace = trace_of(spans, TRACE_ID);
        [
            "POST /graphql",
            "query Purchases",
            "page User.purchases",
            "DynamoDB.Query",
        ]
        .iter()
        .all(|name| trace.values().any(|span| span["name"] == *name))
    });
    let trace = trace_of(&spans, TRACE_ID);
    assert_eq!(only(&trace, "POST /graphql")["parent_span_id"], PARENT_ID);
    let resource = &only(&trace, "query Purchases")["resource"];
    assert_eq!(resource["faas.name"], "_", "the emulator's function name");
    assert_eq!(resource["cloud.provider"], "aws");
    drop(function);
}

/// Trace settings that cannot work stop the start with one line saying which, before anything
/// is served.
#[test]
fn unusable_trace_settings_stop_the_start() {
    for (args, says) in [
        (
            &["--trace-endpoint", "localhost:4318"][..],
            "must be an http:// or https:// URL",
        ),
        (
            &[
                "--trace-endpoint",
                "http://127.0.0.1:4318",
                "--trace-sample-ratio",
                "1.5",
            ],
            "must be from 0 to 1",
        ),
    ] {
        let out = dynarelay_command(&endpoint())
            .arg("serve")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("error: ") && stderr.contains(says),
            "{args:?}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}
