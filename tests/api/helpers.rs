//! Shared test fixtures: a `TestApp` on its own table prefix, direct DynamoDB writes, and (from
//! `issuer.rs`) a bearer-token issuer with its JWKS.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use aws_sdk_dynamodb::{
    Client,
    config::{ConfigBag, Intercept, interceptors::BeforeSerializationInterceptorContextRef},
    error::BoxError,
    operation::{
        batch_get_item::BatchGetItemInput, get_item::GetItemInput, query::QueryInput,
        scan::ScanInput,
    },
    types::AttributeValue,
};
use axum::{
    Router,
    body::Body,
    http::{HeaderMap, Method, Request, StatusCode, header},
};
use dynarelay::{
    cursor::{CursorCodec, KeyRing},
    dynamo::{self, Item, Store, Tables, tables},
    http::{AppState, HttpSettings, ServeSettings, router, serve},
    model::{self, Model},
    pagination::PageLimits,
};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tower::ServiceExt;

pub use crate::issuer::{AUDIENCE, ISSUER, TestIssuer, claims, hs256, now, unsigned, with};
pub use crate::shop_data::ShopTables;

/// The shop model (`examples/shop/dynarelay.toml`), loaded once per test process.
pub fn shop() -> &'static Model {
    load_model("examples/shop/dynarelay.toml")
}

/// The model file at `path` (relative to the crate root), loaded once per test process and
/// kept for its life, as the server keeps its model.
pub fn load_model(path: &str) -> &'static Model {
    static MODELS: Mutex<BTreeMap<String, &'static Model>> = Mutex::new(BTreeMap::new());
    let mut models = MODELS.lock().unwrap_or_else(|e| e.into_inner());
    models.entry(path.to_owned()).or_insert_with(|| {
        let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        let model = model::load(&full).unwrap_or_else(|e| panic!("{e}"));
        Box::leak(Box::new(model))
    })
}

/// Creates the shop's tables under `prefix` with `client`, and a store over them.
pub async fn shop_store(client: Client, prefix: &str) -> Store {
    let names = Tables::new(shop(), prefix);
    tables::create_missing(&client, shop(), &names, Duration::from_secs(30))
        .await
        .expect("creating test tables");
    Store::new(client, names)
}

/// The DynamoDB Local endpoint that `scripts/test` started.
pub fn endpoint() -> String {
    std::env::var("DYNARELAY_TEST_DYNAMODB_ENDPOINT").expect(
        "DYNARELAY_TEST_DYNAMODB_ENDPOINT is not set: run the tests with scripts/test, which starts DynamoDB Local",
    )
}

/// A table prefix no other test uses.
pub fn unique_prefix() -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    format!(
        "t{}_{}_{}_",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The cursor keys of test servers, as `DYNARELAY_CURSOR_KEYS` gives them.
pub const TEST_RING: &str = "1:KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio";

/// The cursor keys of test servers.
pub fn test_ring() -> KeyRing {
    TEST_RING.parse().expect("a valid test key ring")
}

/// Counts the DynamoDB read operations a client sends, by operation, at the SDK boundary.
#[derive(Debug, Clone, Default)]
pub struct CallCounter(Arc<Mutex<BTreeMap<&'static str, usize>>>);

impl CallCounter {
    pub fn snapshot(&self) -> BTreeMap<&'static str, usize> {
        self.0.lock().expect("counter lock").clone()
    }
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "CallCounter"
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // Reads by their operation; every write counts as "other".
        let operation = match logged_call(context).operation {
            read @ ("Query" | "Scan" | "GetItem" | "BatchGetItem") => read,
            _ => "other",
        };
        *self
            .0
            .lock()
            .expect("counter lock")
            .entry(operation)
            .or_default() += 1;
        Ok(())
    }
}

/// The application on fresh tables.
pub struct TestApp {
    pub store: Store,
    pub router: Router,
    /// The shop's table names.
    pub tables: ShopTables,
    /// DynamoDB calls made through `store` (test writes included).
    pub calls: CallCounter,
}

impl TestApp {
    pub async fn spawn() -> Self {
        Self::spawn_with(PageLimits::default()).await
    }

    pub async fn spawn_with(limits: PageLimits) -> Self {
        let prefix = unique_prefix();
        let calls = CallCounter::default();
        let local = dynamo::client_for_local(&endpoint());
        let client = Client::from_conf(
            local
                .config()
                .to_builder()
                .interceptor(calls.clone())
                .build(),
        );
        let store = shop_store(client, &prefix).await;
        let router = app_router(&store, limits, &test_ring());
        Self {
            store,
            router,
            tables: ShopTables::with_prefix(&prefix),
            calls,
        }
    }

    /// Another server on the same tables, sealing cursors with `ring`.
    pub fn with_ring(&self, ring: &KeyRing) -> Self {
        Self {
            store: self.store.clone(),
            router: app_router(&self.store, PageLimits::default(), ring),
            tables: self.tables.clone(),
            calls: self.calls.clone(),
        }
    }

    pub fn client(&self) -> &Client {
        self.store.client()
    }

    pub fn tables(&self) -> &ShopTables {
        &self.tables
    }

    /// POSTs a GraphQL request through the router and returns the response body.
    pub async fn graphql(&self, query: &str, variables: Value) -> Value {
        post_graphql(&self.router, query, variables).await
    }

    /// Every item of one partition of a table or index, in DynamoDB's order, read with plain SDK
    /// Queries (not the store's code): the ground truth for paging tests.
    pub async fn query_all(
        &self,
        table: &str,
        index: Option<&str>,
        (key, value): (&str, &str),
        forward: bool,
    ) -> Vec<Item> {
        let values = [(":v", AttributeValue::S(value.to_owned()))];
        query_all(
            self.client(),
            &GroundQuery {
                table,
                index,
                condition: "#k = :v",
                names: &[("#k", key)],
                values: &values,
                forward,
            },
        )
        .await
    }

    /// Every item of a table in Scan order, read with plain SDK Scans.
    pub async fn scan_all(&self, table: &str) -> Vec<Item> {
        scan_all(self.client(), table).await
    }

    pub async fn put_items(&self, table: &str, items: Vec<Item>) {
        self.store
            .put_items(table, items)
            .await
            .expect("writing test items");
    }

    /// Writes purchases for `user_id` at the given `purchasedAt` values (epoch ms), with amounts
    /// derived from the time so that each item is recognisable.
    pub async fn put_purchases(&self, user_id: &str, times: &[i64]) {
        let items = times
            .iter()
            .map(|&at| purchase_item(user_id, &at.to_string(), &format!("{}.5", at % 1000)))
            .collect();
        self.put_items(&self.tables().purchases.clone(), items)
            .await;
    }

    pub async fn put_user(&self, user_id: &str) {
        let item = user_item(user_id);
        self.put_items(&self.tables().users.clone(), vec![item])
            .await;
    }
}

fn app_router(store: &Store, limits: PageLimits, ring: &KeyRing) -> Router {
    router(app_state(store, limits, ring, HttpSettings::default()))
}

/// The shop's application state over `store`.
pub fn app_state(
    store: &Store,
    limits: PageLimits,
    ring: &KeyRing,
    http: HttpSettings,
) -> AppState {
    model_state(shop(), store, limits, ring, http)
}

/// The application state serving `model` over `store`.
pub fn model_state(
    model: &'static Model,
    store: &Store,
    limits: PageLimits,
    ring: &KeyRing,
    http: HttpSettings,
) -> AppState {
    AppState::new(model, store.clone(), limits, CursorCodec::new(ring), http)
        .expect("the model's schema builds")
}

/// POSTs a GraphQL request through `router` and returns the response body.
pub async fn post_graphql(router: &Router, query: &str, variables: Value) -> Value {
    let text = post_graphql_text(router, query, variables, None).await;
    serde_json::from_str(&text).expect("JSON response")
}

/// POSTs a GraphQL request (with `operationName`, if given) through `router` and returns the
/// response body as sent, byte for byte.
pub async fn post_graphql_text(
    router: &Router,
    query: &str,
    variables: Value,
    operation_name: Option<&str>,
) -> String {
    let body = json!({ "query": query, "variables": variables, "operationName": operation_name })
        .to_string();
    let request = Request::post("/graphql")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .expect("request");
    // Boxed, as a server task would be: the test thread's stack is small for debug builds.
    let response = Box::pin(router.clone().oneshot(request))
        .await
        .expect("router answers");
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    String::from_utf8(bytes.to_vec()).expect("UTF-8 response")
}

/// An HTTP answer: status, headers and the JSON body.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

/// Sends `query` to `/graphql` through `router` (as a POST JSON body, or a GET query string)
/// with `authorization` as the `Authorization` header, raw bytes so that any header can be sent.
pub async fn graphql_with_authorization(
    router: &Router,
    method: Method,
    authorization: Option<&[u8]>,
    query: &str,
) -> Answer {
    let mut request = graphql_request(method, query);
    if let Some(value) = authorization {
        request.headers_mut().insert(
            header::AUTHORIZATION,
            header::HeaderValue::from_bytes(value).expect("a header value"),
        );
    }
    answer(router, request).await
}

/// A `/graphql` request for `query`: a POST JSON body, or a GET query string.
pub fn graphql_request(method: Method, query: &str) -> Request<Body> {
    if method == Method::GET {
        let encoded: String = query
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    char::from(b).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        Request::get(format!("/graphql?query={encoded}")).body(Body::empty())
    } else {
        Request::post("/graphql")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(json!({ "query": query }).to_string()))
    }
    .expect("request")
}

/// Sends `request` through `router`; the answer's body must be JSON.
pub async fn answer(router: &Router, request: Request<Body>) -> Answer {
    // Boxed, as a server task would be: the test thread's stack is small for debug builds.
    let response = Box::pin(router.clone().oneshot(request))
        .await
        .expect("router answers");
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.expect("body");
    Answer {
        status: parts.status,
        headers: parts.headers,
        body: serde_json::from_slice(&bytes).expect("JSON response"),
    }
}

/// Where a request comes from: the TCP peer's address (as `serve` gives every request; `None`
/// as when the router is driven without a listener), a bearer token, and an `X-Forwarded-For`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Origin<'a> {
    pub peer: Option<SocketAddr>,
    pub token: Option<&'a str>,
    pub forwarded_for: Option<&'a str>,
}

impl<'a> Origin<'a> {
    /// A request from `ip` (any port).
    pub fn peer(ip: &str) -> Self {
        Self {
            peer: Some(SocketAddr::new(ip.parse().expect("an IP address"), 40_000)),
            ..Self::default()
        }
    }

    pub fn token(self, token: &'a str) -> Self {
        Self {
            token: Some(token),
            ..self
        }
    }

    pub fn forwarded_for(self, forwarded_for: &'a str) -> Self {
        Self {
            forwarded_for: Some(forwarded_for),
            ..self
        }
    }

    /// `request` sent from here.
    pub fn apply(&self, mut request: Request<Body>) -> Request<Body> {
        if let Some(peer) = self.peer {
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
        }
        if let Some(token) = self.token {
            request.headers_mut().insert(
                header::AUTHORIZATION,
                header::HeaderValue::from_str(&format!("Bearer {token}")).expect("a header"),
            );
        }
        if let Some(forwarded_for) = self.forwarded_for {
            request.headers_mut().insert(
                "x-forwarded-for",
                header::HeaderValue::from_str(forwarded_for).expect("a header"),
            );
        }
        request
    }
}

/// Sends `query` to `/graphql` through `router` from `origin`, as a POST JSON body or a GET
/// query string.
pub async fn graphql_from(
    router: &Router,
    origin: Origin<'_>,
    method: Method,
    query: &str,
) -> Answer {
    answer(router, origin.apply(graphql_request(method, query))).await
}

/// The Prometheus exposition `router`'s `/metrics` serves.
pub async fn metrics_of(router: &Router) -> String {
    let request = Request::get("/metrics")
        .body(Body::empty())
        .expect("request");
    let response = Box::pin(router.clone().oneshot(request))
        .await
        .expect("router answers");
    assert_eq!(response.status(), 200, "GET /metrics");
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    String::from_utf8(bytes.to_vec()).expect("UTF-8 metrics")
}

/// A ground-truth Query: a key condition on a table or index, with its names and values.
#[derive(Debug, Clone, Copy)]
pub struct GroundQuery<'a> {
    pub table: &'a str,
    pub index: Option<&'a str>,
    /// The `KeyConditionExpression`.
    pub condition: &'a str,
    /// `ExpressionAttributeNames`.
    pub names: &'a [(&'a str, &'a str)],
    /// `ExpressionAttributeValues`.
    pub values: &'a [(&'a str, AttributeValue)],
    /// `ScanIndexForward`.
    pub forward: bool,
}

/// Every item a Query matches, in DynamoDB's order, read with plain SDK Queries (not the
/// store's code): the ground truth for paging tests.
pub async fn query_all(client: &Client, query: &GroundQuery<'_>) -> Vec<Item> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let mut request = client
            .query()
            .table_name(query.table)
            .set_index_name(query.index.map(str::to_owned))
            .key_condition_expression(query.condition)
            .scan_index_forward(query.forward)
            .set_exclusive_start_key(start);
        for (name, attribute) in query.names {
            request = request.expression_attribute_names(*name, *attribute);
        }
        for (name, value) in query.values {
            request = request.expression_attribute_values(*name, value.clone());
        }
        let page = request.send().await.expect("a ground-truth Query");
        items.extend(page.items().iter().cloned());
        start = page.last_evaluated_key;
        if start.is_none() {
            return items;
        }
    }
}

/// Every item of a table in Scan order, read with plain SDK Scans.
pub async fn scan_all(client: &Client, table: &str) -> Vec<Item> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("a ground-truth Scan");
        items.extend(page.items().iter().cloned());
        start = page.last_evaluated_key;
        if start.is_none() {
            return items;
        }
    }
}

/// A model file served on fresh tables of its own (every table of the model, created under a
/// new prefix), with the test cursor keys and default page limits.
pub struct ModelApp {
    pub model: &'static Model,
    /// The prefix of its tables' names.
    pub prefix: String,
    pub store: Store,
    pub router: Router,
}

/// Serves the model file at `path` (relative to the crate root) on fresh tables.
pub async fn model_app(path: &str) -> ModelApp {
    let model = load_model(path);
    let prefix = unique_prefix();
    let client = dynamo::client_for_local(&endpoint());
    let names = Tables::new(model, &prefix);
    tables::create_missing(&client, model, &names, Duration::from_secs(30))
        .await
        .expect("creating test tables");
    let store = Store::new(client, names);
    let router = router(model_state(
        model,
        &store,
        PageLimits::default(),
        &test_ring(),
        HttpSettings::default(),
    ));
    ModelApp {
        model,
        prefix,
        store,
        router,
    }
}

impl ModelApp {
    pub fn client(&self) -> &Client {
        self.store.client()
    }

    /// The full name of the model's table `name`.
    pub fn table(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// POSTs a GraphQL request through the router and returns the response body.
    pub async fn graphql(&self, query: &str, variables: Value) -> Value {
        post_graphql(&self.router, query, variables).await
    }

    /// Every item a Query matches, read with plain SDK Queries.
    pub async fn query_all(&self, query: &GroundQuery<'_>) -> Vec<Item> {
        query_all(self.client(), query).await
    }

    /// Every item of a table in Scan order, read with plain SDK Scans.
    pub async fn scan_all(&self, table: &str) -> Vec<Item> {
        scan_all(self.client(), table).await
    }

    /// The Prometheus exposition its `/metrics` serves.
    pub async fn metrics(&self) -> String {
        metrics_of(&self.router).await
    }
}

/// The sum of every sample of the metric `name` in a Prometheus exposition, whatever its labels;
/// `None` when it has none.
pub fn metric_sum(exposition: &str, name: &str) -> Option<f64> {
    exposition
        .lines()
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let metric = series.split_once('{').map_or(series, |(m, _)| m);
            (metric == name).then(|| value.parse::<f64>().expect("a sample value"))
        })
        .reduce(|a, b| a + b)
}

/// A sort-key condition for [`ground_truth`]: a range (either bound optional, both inclusive)
/// or a prefix.
pub enum SortCond {
    Range(Option<AttributeValue>, Option<AttributeValue>),
    Prefix(AttributeValue),
}

/// DynamoDB's own answer: every item of one partition matching the sort-key condition, in
/// its order.
pub async fn ground_truth(
    app: &ModelApp,
    table: &str,
    index: Option<&str>,
    partition: (&str, AttributeValue),
    sort: Option<(&str, SortCond)>,
    forward: bool,
) -> Vec<Item> {
    let mut condition = "#pk = :pk".to_owned();
    let mut names = vec![("#pk", partition.0)];
    let mut values = vec![(":pk", partition.1)];
    if let Some((attribute, cond)) = sort {
        names.push(("#sk", attribute));
        match cond {
            SortCond::Range(Some(lo), Some(hi)) => {
                condition.push_str(" AND #sk BETWEEN :lo AND :hi");
                values.push((":lo", lo));
                values.push((":hi", hi));
            }
            SortCond::Range(Some(lo), None) => {
                condition.push_str(" AND #sk >= :lo");
                values.push((":lo", lo));
            }
            SortCond::Range(None, Some(hi)) => {
                condition.push_str(" AND #sk <= :hi");
                values.push((":hi", hi));
            }
            SortCond::Range(None, None) => {
                names.pop();
            }
            SortCond::Prefix(prefix) => {
                condition.push_str(" AND begins_with(#sk, :p)");
                values.push((":p", prefix));
            }
        }
    }
    app.query_all(&GroundQuery {
        table,
        index,
        condition: &condition,
        names: &names,
        values: &values,
        forward,
    })
    .await
}

/// A `Purchases` item as another program would write it.
pub fn purchase_item(user_id: &str, purchased_at: &str, amount: &str) -> Item {
    Item::from([
        ("userId".to_owned(), AttributeValue::S(user_id.to_owned())),
        (
            "purchasedAt".to_owned(),
            AttributeValue::N(purchased_at.to_owned()),
        ),
        ("sku".to_owned(), AttributeValue::S("SKU-00001".to_owned())),
        ("quantity".to_owned(), AttributeValue::N("1".to_owned())),
        ("amount".to_owned(), AttributeValue::N(amount.to_owned())),
        ("status".to_owned(), AttributeValue::S("PAID".to_owned())),
    ])
}

/// A `Products` item as another program would write it.
pub fn product_item(sku: &str, name: &str, category: &str, price: &str) -> Item {
    Item::from([
        ("sku".to_owned(), AttributeValue::S(sku.to_owned())),
        ("name".to_owned(), AttributeValue::S(name.to_owned())),
        (
            "category".to_owned(),
            AttributeValue::S(category.to_owned()),
        ),
        ("price".to_owned(), AttributeValue::N(price.to_owned())),
    ])
}

/// A user item as the tests write it: `User {id}`, `{id}@example.com`.
pub fn user_item(user_id: &str) -> Item {
    Item::from([
        ("userId".to_owned(), AttributeValue::S(user_id.to_owned())),
        (
            "name".to_owned(),
            AttributeValue::S(format!("User {user_id}")),
        ),
        (
            "email".to_owned(),
            AttributeValue::S(format!("{user_id}@example.com")),
        ),
        (
            "createdAt".to_owned(),
            AttributeValue::N("1672531200000".to_owned()),
        ),
    ])
}

/// The `dynarelay` binary with nothing from this process's environment: configured only through
/// the standard AWS variables, as in production, but with `endpoint` as DynamoDB, dummy
/// credentials, no AWS config files, the EC2 metadata service disabled, and the test key ring.
pub fn dynarelay_command(endpoint: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_dynarelay"));
    cmd.env_clear()
        .envs(crate::local_aws::local_aws_env(endpoint))
        .env("DYNARELAY_CURSOR_KEYS", TEST_RING)
        .env(
            "DYNARELAY_MODEL",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/shop/dynarelay.toml"),
        )
        .env("RUST_LOG", "info");
    cmd
}

/// The `extensions.code` of the first error, if any.
pub fn error_code(response: &Value) -> Option<&str> {
    response["errors"][0]["extensions"]["code"].as_str()
}

/// A listener on an ephemeral loopback port, with room for 4096 connections in its backlog (the
/// usual 1024 would leave connection floods retrying their SYNs for seconds).
pub fn loopback_listener() -> tokio::net::TcpListener {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(([127, 0, 0, 1], 0).into()).unwrap();
    socket.listen(4096).unwrap()
}

/// A server on an ephemeral loopback port, over a real socket; stops when dropped.
pub struct Running {
    pub addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

impl Running {
    /// Serves the schema over `store` with the test cursor keys and default page limits.
    pub async fn start(store: Store, http: HttpSettings) -> Self {
        Self::start_with(store, PageLimits::default(), http).await
    }

    pub async fn start_with(store: Store, limits: PageLimits, http: HttpSettings) -> Self {
        let state = app_state(&store, limits, &test_ring(), http);
        Self::serve(router(state)).await
    }

    /// Serves `router` (a [`ModelApp`]'s, say) on an ephemeral loopback port.
    pub async fn serve(router: Router) -> Self {
        let settings = ServeSettings {
            drain_timeout: Duration::from_secs(1),
            ..ServeSettings::new(Arc::default())
        };
        Self::serve_with(router, settings)
    }

    /// Serves `router` with `settings` (connection protections, a health listener) on an
    /// ephemeral loopback port.
    pub fn serve_with(router: Router, settings: ServeSettings) -> Self {
        let listener = loopback_listener();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(serve(
            listener,
            router,
            async move {
                let _ = stopped.await;
            },
            settings,
        ));
        Self { addr, _stop: stop }
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// What a Node.js client script printed, and how it ended.
#[derive(Debug)]
pub struct NodeRun {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl NodeRun {
    /// Panics with everything the script printed unless it succeeded.
    pub fn assert_success(&self) -> &Self {
        assert!(
            self.success,
            "the client script failed\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Panics unless the script failed, and printed `needle` on stderr when it did.
    pub fn assert_failure_mentioning(&self, needle: &str) -> &Self {
        assert!(
            !self.success,
            "the client script passed where it must fail\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        assert!(
            self.stderr.contains(needle),
            "the client script failed, but not with `{needle}`\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Runs `node <script> <args>` in `tests/clients` (whose packages `scripts/test` installs from
/// the lockfile), with a time limit, and with loopback-only settings in the environment.
pub async fn run_node(script: &str, args: &[&str], env: &[(&str, &str)]) -> NodeRun {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    assert!(
        dir.join("node_modules").is_dir(),
        "tests/clients/node_modules is missing: run the tests with scripts/test, which installs them with `npm ci`"
    );
    let mut command = tokio::process::Command::new("node");
    command
        .arg(script)
        .args(args)
        .current_dir(&dir)
        .envs(env.iter().copied())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(150), command.output())
        .await
        .unwrap_or_else(|_| panic!("node {script} did not finish within 150 s"))
        .unwrap_or_else(|err| panic!("cannot run node: {err}"));
    NodeRun {
        success: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `vars` with every key of `extra` set (replacing what it held).
pub fn merge(mut vars: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().expect("extra variables are an object") {
        vars[k] = v.clone();
    }
    vars
}

/// Walks one connection to its end in one direction, `size` edges a page, sending each page's
/// paging variables (`first`/`after` or `last`/`before`) through `page`, which answers the
/// response. `path` leads from `data` to the connection. Every page is checked as Relay
/// defines it: no error; no flag on the side the walk came from; full pages while more follow,
/// and no empty last page after a page that claimed more; a cursor on every edge; `startCursor`
/// and `endCursor` the first and last edge's. Returns every node, in connection order.
pub async fn walk_pages<F, Fut>(
    mut page: F,
    path: &[&str],
    size: i64,
    forward: bool,
    label: &str,
) -> Vec<Value>
where
    F: FnMut(Value) -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let mut nodes: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    for page_number in 0.. {
        assert!(page_number < 2000, "{label}: the walk does not end");
        let paging = if forward {
            json!({ "first": size, "after": cursor })
        } else {
            json!({ "last": size, "before": cursor })
        };
        let response = page(paging).await;
        assert!(response.get("errors").is_none(), "{label}: {response}");
        let connection = path.iter().fold(&response["data"], |v, k| &v[*k]);
        let info = &connection["pageInfo"];
        let edges = connection["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{label}: {response}"));
        let found: Vec<Value> = edges.iter().map(|e| e["node"].clone()).collect();
        let (next, previous) = (
            info["hasNextPage"].as_bool().unwrap(),
            info["hasPreviousPage"].as_bool().unwrap(),
        );
        let (more, other_side) = if forward {
            (next, previous)
        } else {
            (previous, next)
        };
        assert!(
            !other_side,
            "{label}: page {page_number} claims a page on the side it came from"
        );
        if more {
            assert_eq!(
                found.len(),
                size as usize,
                "{label}: page {page_number} is not full"
            );
        } else {
            assert!(
                !found.is_empty() || page_number == 0,
                "{label}: an empty last page after a page that claimed more"
            );
        }
        assert!(
            edges
                .iter()
                .all(|e| e["cursor"].as_str().is_some_and(|c| !c.is_empty())),
            "{label}: an edge without a cursor"
        );
        assert_eq!(
            info["startCursor"],
            edges.first().map_or(Value::Null, |e| e["cursor"].clone()),
            "{label}"
        );
        assert_eq!(
            info["endCursor"],
            edges.last().map_or(Value::Null, |e| e["cursor"].clone()),
            "{label}"
        );
        if forward {
            nodes.extend(found);
        } else {
            nodes.splice(0..0, found);
        }
        if !more {
            return nodes;
        }
        let next = if forward {
            &info["endCursor"]
        } else {
            &info["startCursor"]
        };
        cursor = Some(next.as_str().unwrap().to_owned());
    }
    unreachable!()
}

/// One DynamoDB call as a client sent it: the operation, the tables it names, and every string
/// and number in its keys, items and expression values (what it reads or writes by key).
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedCall {
    pub operation: &'static str,
    pub tables: Vec<String>,
    pub values: Vec<String>,
}

impl LoggedCall {
    /// Whether the call names table `table` (a full name or, for a table under a test prefix,
    /// its model name) and holds `value` among its keys, items or expression values.
    pub fn touches(&self, table: &str, value: &str) -> bool {
        self.tables
            .iter()
            .any(|t| t == table || t.ends_with(&format!("_{table}")))
            && self.values.iter().any(|v| v == value)
    }
}

/// Records every call a DynamoDB client sends, with its tables and key values, at the SDK
/// boundary (so nothing the server sends is missed, whatever its own metrics say).
#[derive(Debug, Clone, Default)]
pub struct CallLog(Arc<Mutex<Vec<LoggedCall>>>);

impl CallLog {
    /// How many calls so far: a mark for [`since`](Self::since).
    pub fn mark(&self) -> usize {
        self.0.lock().expect("log lock").len()
    }

    /// The calls after `mark`.
    pub fn since(&self, mark: usize) -> Vec<LoggedCall> {
        self.0.lock().expect("log lock")[mark..].to_vec()
    }
}

/// Every string and number in `values`.
fn logged_values<'a>(values: impl IntoIterator<Item = &'a AttributeValue>) -> Vec<String> {
    values
        .into_iter()
        .filter_map(|v| match v {
            AttributeValue::S(s) | AttributeValue::N(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

fn logged_call(context: &BeforeSerializationInterceptorContextRef<'_>) -> LoggedCall {
    use aws_sdk_dynamodb::operation::{
        batch_write_item::BatchWriteItemInput, delete_item::DeleteItemInput,
        put_item::PutItemInput, transact_write_items::TransactWriteItemsInput,
        update_item::UpdateItemInput,
    };
    let input = context.input();
    let one = |operation, table: Option<&str>, values: Vec<String>| LoggedCall {
        operation,
        tables: table.map(str::to_owned).into_iter().collect(),
        values,
    };
    let expression = |values: Option<&std::collections::HashMap<String, AttributeValue>>| {
        logged_values(values.into_iter().flat_map(|m| m.values()))
    };
    if let Some(i) = input.downcast_ref::<GetItemInput>() {
        one(
            "GetItem",
            i.table_name(),
            logged_values(i.key().into_iter().flat_map(|m| m.values())),
        )
    } else if let Some(i) = input.downcast_ref::<BatchGetItemInput>() {
        let items = i.request_items().cloned().unwrap_or_default();
        LoggedCall {
            operation: "BatchGetItem",
            tables: items.keys().cloned().collect(),
            values: logged_values(
                items
                    .values()
                    .flat_map(|k| k.keys())
                    .flat_map(|key| key.values()),
            ),
        }
    } else if let Some(i) = input.downcast_ref::<QueryInput>() {
        one(
            "Query",
            i.table_name(),
            expression(i.expression_attribute_values()),
        )
    } else if let Some(i) = input.downcast_ref::<ScanInput>() {
        one(
            "Scan",
            i.table_name(),
            logged_values(i.exclusive_start_key().into_iter().flat_map(|m| m.values())),
        )
    } else if let Some(i) = input.downcast_ref::<PutItemInput>() {
        let mut values = logged_values(i.item().into_iter().flat_map(|m| m.values()));
        values.extend(expression(i.expression_attribute_values()));
        one("PutItem", i.table_name(), values)
    } else if let Some(i) = input.downcast_ref::<DeleteItemInput>() {
        let mut values = logged_values(i.key().into_iter().flat_map(|m| m.values()));
        values.extend(expression(i.expression_attribute_values()));
        one("DeleteItem", i.table_name(), values)
    } else if let Some(i) = input.downcast_ref::<UpdateItemInput>() {
        let mut values = logged_values(i.key().into_iter().flat_map(|m| m.values()));
        values.extend(expression(i.expression_attribute_values()));
        one("UpdateItem", i.table_name(), values)
    } else if let Some(i) = input.downcast_ref::<TransactWriteItemsInput>() {
        let mut call = LoggedCall {
            operation: "TransactWriteItems",
            tables: Vec::new(),
            values: Vec::new(),
        };
        for item in i.transact_items() {
            if let Some(put) = item.put() {
                call.tables.push(put.table_name().to_owned());
                call.values.extend(logged_values(put.item().values()));
            }
            if let Some(delete) = item.delete() {
                call.tables.push(delete.table_name().to_owned());
                call.values.extend(logged_values(delete.key().values()));
            }
            if let Some(update) = item.update() {
                call.tables.push(update.table_name().to_owned());
                call.values.extend(logged_values(update.key().values()));
            }
            if let Some(check) = item.condition_check() {
                call.tables.push(check.table_name().to_owned());
                call.values.extend(logged_values(check.key().values()));
            }
        }
        call
    } else if let Some(i) = input.downcast_ref::<BatchWriteItemInput>() {
        let items = i.request_items().cloned().unwrap_or_default();
        let mut values = Vec::new();
        for request in items.values().flatten() {
            if let Some(put) = request.put_request() {
                values.extend(logged_values(put.item().values()));
            }
            if let Some(delete) = request.delete_request() {
                values.extend(logged_values(delete.key().values()));
            }
        }
        LoggedCall {
            operation: "BatchWriteItem",
            tables: items.keys().cloned().collect(),
            values,
        }
    } else {
        one("other", None, Vec::new())
    }
}

impl Intercept for CallLog {
    fn name(&self) -> &'static str {
        "CallLog"
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let call = logged_call(context);
        self.0.lock().expect("log lock").push(call);
        Ok(())
    }
}

/// The claims of a token `model`'s `[auth]` accepts for `sub`: [`claims`] with the model's
/// issuer and first audience, and `groups` in its groups claim when there are any.
pub fn model_claims(model: &Model, sub: &str, groups: &[&str]) -> Value {
    let spec = model
        .auth
        .as_ref()
        .expect("the model has an `[auth]` section");
    let mut changes = json!({ "iss": spec.issuer, "aud": spec.audience[0] });
    if !groups.is_empty() {
        changes[&spec.groups_claim] = json!(groups);
    }
    with(claims(sub), changes)
}

/// The `AuthSettings` `dynarelay serve --model <model's file> --auth-jwks-url <jwks_url>` uses:
/// the model's `[auth]` (algorithms, issuer, audience, groups claim, timings), mapped by
/// `ServeArgs::auth_settings`, with the keys `jwks_url` serves.
pub fn model_auth_settings(model: &Model, jwks_url: &str) -> dynarelay::auth::AuthSettings {
    use clap::Parser;
    use dynarelay::config::{Cli, Command};
    let cli = Cli::try_parse_from([
        "dynarelay",
        "serve",
        "--model",
        "model.toml",
        "--auth-jwks-url",
        jwks_url,
    ])
    .expect("serve's flags");
    let Command::Serve(args) = cli.command else {
        unreachable!("parsed as serve")
    };
    let spec = model
        .auth
        .as_ref()
        .expect("the model has an `[auth]` section");
    args.auth_settings(spec).expect("the model's `[auth]` maps")
}

/// Serves `model` (which has an `[auth]` section) on `store` as [`model_app`] does (default
/// HTTP settings and page limits, the test cursor keys), verifying bearer tokens as its `[auth]`
/// says against `issuer`'s JWKS.
pub async fn auth_router(model: &'static Model, store: &Store, issuer: &TestIssuer) -> Router {
    let auth = dynarelay::auth::Authenticator::new(model_auth_settings(model, &issuer.url()))
        .await
        .expect("the authenticator starts");
    let http = HttpSettings {
        auth: Some(auth),
        ..HttpSettings::default()
    };
    router(model_state(
        model,
        store,
        PageLimits::default(),
        &test_ring(),
        http,
    ))
}

/// `model` served on fresh tables of its own with bearer tokens verified against `issuer`'s
/// JWKS (see [`auth_router`]), and the log of every DynamoDB call its client sends (test writes
/// through [`ModelApp::client`] included).
pub async fn auth_model_app(model: &'static Model, issuer: &TestIssuer) -> (ModelApp, CallLog) {
    let prefix = unique_prefix();
    let log = CallLog::default();
    let local = dynamo::client_for_local(&endpoint());
    let client = Client::from_conf(local.config().to_builder().interceptor(log.clone()).build());
    let names = Tables::new(model, &prefix);
    tables::create_missing(&client, model, &names, Duration::from_secs(30))
        .await
        .expect("creating test tables");
    let store = Store::new(client, names);
    let router = auth_router(model, &store, issuer).await;
    let app = ModelApp {
        model,
        prefix,
        store,
        router,
    };
    (app, log)
}

/// `examples/shop/secure.toml` served on fresh tables, its tokens verified against `issuer`'s
/// JWKS with the model's issuer, audience and groups claim.
pub async fn secure_app(issuer: &TestIssuer) -> ModelApp {
    secure_app_logged(issuer).await.0
}

/// [`secure_app`] with the log of its DynamoDB calls.
pub async fn secure_app_logged(issuer: &TestIssuer) -> (ModelApp, CallLog) {
    auth_model_app(load_model("examples/shop/secure.toml"), issuer).await
}

/// POSTs `query` with `variables` to `/graphql` through `router`, with `Authorization: Bearer
/// <token>` when there is a token.
pub async fn graphql_with_token(
    router: &Router,
    token: Option<&str>,
    query: &str,
    variables: Value,
) -> Answer {
    let request = Request::post("/graphql")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(
            json!({ "query": query, "variables": variables }).to_string(),
        ))
        .expect("request");
    let origin = Origin {
        token,
        ..Origin::default()
    };
    answer(router, origin.apply(request)).await
}

/// The DynamoDB calls a Prometheus exposition counts (`dynarelay_dynamodb_calls_total`), by
/// `"{operation} {table}"`, the table without `prefix` (`several` for a call on several
/// tables), with ` {outcome}` appended for outcomes other than `ok`.
pub fn dynamodb_calls(exposition: &str, prefix: &str) -> BTreeMap<String, f64> {
    let mut calls = BTreeMap::new();
    for line in exposition.lines() {
        let Some(labels) = line.strip_prefix("dynarelay_dynamodb_calls_total{") else {
            continue;
        };
        let (labels, value) = labels.rsplit_once("} ").expect("a sample");
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|l| l.strip_prefix(&format!("{name}=\"")))
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or_default()
                .to_owned()
        };
        let table = label("table");
        let mut key = format!(
            "{} {}",
            label("operation"),
            table.strip_prefix(prefix).unwrap_or(&table)
        );
        let outcome = label("outcome");
        if outcome != "ok" {
            key = format!("{key} {outcome}");
        }
        *calls.entry(key).or_insert(0.0) += value.parse::<f64>().expect("a sample value");
    }
    calls
}

/// One request to `/graphql` and what must come back.
pub struct Exchange {
    pub case: &'static str,
    pub method: &'static str,
    pub accept: Option<&'static str>,
    pub content_type: Option<&'static str>,
    pub body: String,
    pub status: u16,
    pub media: &'static str,
    pub data: bool,
    pub code: Option<&'static str>,
}

/// Sends `e` to `server` and checks its status, media type, `data` and first error code.
pub async fn exchange(http: &reqwest::Client, server: &Running, e: &Exchange) -> Value {
    let mut request = match e.method {
        "GET" => http.get(format!("{}?{}", server.url("/graphql"), e.body)),
        _ => http.post(server.url("/graphql")).body(e.body.clone()),
    };
    if let Some(accept) = e.accept {
        request = request.header("accept", accept);
    }
    if let Some(content_type) = e.content_type {
        request = request.header("content-type", content_type);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), e.status, "{}", e.case);
    let media = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        media.starts_with(e.media),
        "{}: content-type {media}",
        e.case
    );
    assert!(media.contains("charset=utf-8"), "{}: {media}", e.case);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body.get("data").is_some(), e.data, "{}: {body}", e.case);
    assert_eq!(
        body["errors"][0]["extensions"]["code"].as_str(),
        e.code,
        "{}: {body}",
        e.case
    );
    body
}

pub const GQL: &str = "application/graphql-response+json";
pub const JSON: &str = "application/json";
pub const APOLLO_ACCEPT: &str = "application/graphql-response+json,application/json;q=0.9";

/// A POST of `body` under `accept` that must answer 200 with data and no error.
pub fn post(case: &'static str, accept: &'static str, body: Value) -> Exchange {
    Exchange {
        case,
        method: "POST",
        accept: Some(accept),
        content_type: Some("application/json"),
        body: body.to_string(),
        status: 200,
        media: if accept == JSON { JSON } else { GQL },
        data: true,
        code: None,
    }
}

/// The SHA-256 of `text` in lower-case hex, as Apollo persisted queries name documents.
pub fn sha256_hex(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// An Apollo persisted-query extension naming `hash`.
pub fn persisted(hash: &str) -> Value {
    json!({ "persistedQuery": { "version": 1, "sha256Hash": hash } })
}

/// `name=value`, URL-encoded.
pub fn query_string(name: &str, value: &str) -> String {
    let url = reqwest::Url::parse_with_params("http://localhost/", [(name, value)]).unwrap();
    url.query().unwrap_or_default().to_owned()
}
