//! The applications under test, each on fresh tables under a table prefix of its own: the
//! shop's [`TestApp`] and any model file's [`ModelApp`], with the models, the test cursor keys and
//! the application state they are served with.

use std::{
    collections::BTreeMap,
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use aws_sdk_dynamodb::Client;
use axum::Router;
use dynarelay::{
    cursor::{CursorCodec, KeyRing},
    dynamo::{self, Item, Store, Tables, tables},
    http::{AppState, HttpSettings, router},
    model::{self, Model},
    pagination::PageLimits,
};
use serde_json::Value;

use super::{
    CallCounter, GroundQuery, PolicyAudit, metrics_of, post_graphql, purchase_item, query_all,
    query_partition, scan_all, user_item,
};
use crate::shop_data::ShopTables;

/// The shop model (`examples/shop/dynarelay.toml`), loaded once per test process.
pub fn shop() -> &'static Model {
    load_model("examples/shop/dynarelay.toml")
}

/// The models loaded so far, by the path they were loaded from.
static MODELS: Mutex<BTreeMap<String, &'static Model>> = Mutex::new(BTreeMap::new());

/// The model file at `path` (relative to the crate root), loaded once per test process and
/// kept for its life, as the server keeps its model.
pub fn load_model(path: &str) -> &'static Model {
    let mut models = MODELS.lock().unwrap_or_else(|e| e.into_inner());
    models.entry(path.to_owned()).or_insert_with(|| {
        let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        let model = model::load(&full).unwrap_or_else(|e| panic!("{e}"));
        Box::leak(Box::new(model))
    })
}

/// The model file at `path` with `extra` appended (a section such as `[federation]`), loaded
/// once per test process, as [`load_model`] loads a file.
pub fn load_model_with(path: &str, extra: &str) -> &'static Model {
    let mut models = MODELS.lock().unwrap_or_else(|e| e.into_inner());
    // The key names the model in the policy uses' lines: one line, no tabs.
    let key = format!(
        "{path} with {}",
        extra.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    models.entry(key).or_insert_with(|| {
        let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        let text = std::fs::read_to_string(&full).unwrap() + "\n" + extra;
        let model = model::parse(path, &text).unwrap_or_else(|e| panic!("{e}"));
        Box::leak(Box::new(model))
    })
}

/// Every model file under `examples/`, by its path from the crate root, sorted.
pub fn example_models() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut models = Vec::new();
    for example in std::fs::read_dir(root.join("examples")).unwrap() {
        for file in std::fs::read_dir(example.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let relative = path.strip_prefix(root).unwrap();
                models.push(relative.to_str().unwrap().to_owned());
            }
        }
    }
    models.sort();
    models
}

/// The path [`load_model`] loaded `model` from (relative to the crate root when it is in the
/// crate), if it loaded it.
pub fn model_path(model: &Model) -> Option<String> {
    let models = MODELS.lock().unwrap_or_else(|e| e.into_inner());
    models
        .iter()
        .find(|(_, loaded)| std::ptr::eq(**loaded, model))
        .map(|(path, _)| path.clone())
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

/// A client of DynamoDB Local for creating and changing tables: each call may take a minute,
/// since DynamoDB Local answers `UpdateTable` slowly while the suite loads it (the server's own
/// settings allow 3 seconds a call).
pub fn control_client() -> Client {
    dynamo::client_for_local_with(
        &endpoint(),
        &dynamo::SdkSettings {
            attempt_timeout: Duration::from_secs(60),
            operation_timeout: Duration::from_secs(120),
            ..dynamo::SdkSettings::default()
        },
    )
}

/// A Python tool `scripts/test` installed from `tests/tools/requirements.txt` (cargo-lambda,
/// parliament, cfn-lint, hadolint).
pub fn tool(name: &str) -> std::path::PathBuf {
    let bin = std::env::var_os("DYNARELAY_TEST_TOOLS_BIN").expect(
        "DYNARELAY_TEST_TOOLS_BIN is not set: run the tests with scripts/test, which installs \
         the tools of tests/tools/requirements.txt",
    );
    std::path::Path::new(&bin).join(name)
}

/// Runs the linter `name` (a [`tool`]) with `args`; whether it passed (succeeded and printed
/// nothing), and what it printed.
pub fn lint(name: &str, args: &[&std::ffi::OsStr]) -> (bool, String) {
    let out = std::process::Command::new(tool(name))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success() && printed.trim().is_empty(), printed)
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

/// The application on fresh tables.
pub struct TestApp {
    /// The test's store, for its own writes and for servers it builds itself.
    pub store: Store,
    pub router: Router,
    /// The shop's table names.
    pub tables: ShopTables,
    /// DynamoDB calls made through `store` and by `router` (test writes included).
    pub calls: CallCounter,
    /// The shop's tables' prefix.
    prefix: String,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        assert_policy_kept(&PolicyAudit::of(shop(), &self.prefix));
    }
}

/// Fails the test if `audit` refused a call, unless the test is failing already.
pub(super) fn assert_policy_kept(audit: &PolicyAudit) {
    if std::thread::panicking() {
        return;
    }
    let refused = audit.refused();
    assert!(
        refused.is_empty(),
        "the server made calls its model's policy (`dynarelay policy`) does not allow: \
         {refused:#?}"
    );
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
        let store = shop_store(client.clone(), &prefix).await;
        // The router's store has metrics of its own: the test's writes are not the server's.
        let served = Store::new(client, Tables::new(shop(), &prefix));
        let router = app_router(&served, limits, &test_ring());
        Self {
            store,
            router,
            tables: ShopTables::with_prefix(&prefix),
            calls,
            prefix,
        }
    }

    /// Another server on the same tables, sealing cursors with `ring`. It serves through
    /// `store`, sharing its metrics with servers a test builds on `store`.
    pub fn with_ring(&self, ring: &KeyRing) -> Self {
        Self {
            store: self.store.clone(),
            router: app_router(&self.store, PageLimits::default(), ring),
            tables: self.tables.clone(),
            calls: self.calls.clone(),
            prefix: self.prefix.clone(),
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
        query_partition(self.client(), table, index, (key, value), forward).await
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

/// The application state serving `model` over `store`, every call it sends held to the model's
/// policy ([`audited`]).
pub fn model_state(
    model: &'static Model,
    store: &Store,
    limits: PageLimits,
    ring: &KeyRing,
    http: HttpSettings,
) -> AppState {
    let store = audited(model, store);
    AppState::new(model, store, limits, CursorCodec::new(ring), http)
        .expect("the model's schema builds")
}

/// `store` (the same tables, metrics, client settings and interceptors) with every call its
/// client sends held to the IAM policy `dynarelay policy` prints for `model` and the store's
/// table prefix ([`PolicyAudit::of`]). Every server the suite builds over a store, through
/// [`model_state`] and the helpers built on it, serves through here, and the app owning the
/// tables ([`TestApp`], [`ModelApp`], [`Running`](super::Running)) fails the test when it is
/// dropped if a call was refused, even where the server masked the error.
pub fn audited(model: &'static Model, store: &Store) -> Store {
    let audit = PolicyAudit::of(model, &prefix_of(model, store.tables()));
    let client = Client::from_conf(
        store
            .client()
            .config()
            .to_builder()
            .interceptor(audit)
            .build(),
    );
    store.with_client(client)
}

/// The prefix `tables` were named with for `model`.
pub fn prefix_of(model: &Model, tables: &Tables) -> String {
    let first = &model.tables.first().expect("a model has tables").name;
    let name = tables.name(0);
    name.strip_suffix(first.as_str())
        .unwrap_or_else(|| panic!("the table {name} is not the model's table {first}"))
        .to_owned()
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

/// The calls of every server the test built over the app's tables were held to the model's
/// policy (see [`audited`]).
impl Drop for ModelApp {
    fn drop(&mut self) {
        assert_policy_kept(&PolicyAudit::of(self.model, &self.prefix));
    }
}

/// Writes the model file `text` to a file of its own; its path.
pub fn model_file(text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("dynarelay-model-{}", unique_prefix()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dynarelay.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// Serves the model file `text` (written to a file of its own) on fresh tables.
pub async fn model_app_from(text: &str) -> ModelApp {
    model_app(&model_file(text)).await
}

/// Serves the model file `text` over the tables already under `prefix` (creating none), as a
/// second server of other tables' data.
pub fn model_app_over(text: &str, prefix: &str) -> ModelApp {
    served(load_model(&model_file(text)), prefix)
}

/// Serves the model file at `path` (relative to the crate root) over the tables already under
/// `prefix` (creating none): a second model of the same tables, such as another version's.
pub fn model_app_at(path: &str, prefix: &str) -> ModelApp {
    served(load_model(path), prefix)
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
    served(model, &prefix)
}

/// The router serving `model` over `store`, with the test cursor keys and default page limits.
pub(super) fn router_for(model: &'static Model, store: &Store) -> Router {
    router(model_state(
        model,
        store,
        PageLimits::default(),
        &test_ring(),
        HttpSettings::default(),
    ))
}

/// `model` served over its tables under `prefix`, with the test cursor keys and default page
/// limits.
///
/// Every call the router sends is held to the model's policy ([`audited`]); the test's own
/// writes (`store`, `client()`) are not.
fn served(model: &'static Model, prefix: &str) -> ModelApp {
    let client = dynamo::client_for_local(&endpoint());
    let names = Tables::new(model, prefix);
    // The router's store has metrics of its own: the test's writes are not the server's.
    let router = router_for(model, &Store::new(client.clone(), names.clone()));
    ModelApp::new(model, prefix.to_owned(), Store::new(client, names), router)
}

impl ModelApp {
    /// `model` served by `router` over `store`, its tables under `prefix`.
    pub fn new(model: &'static Model, prefix: String, store: Store, router: Router) -> Self {
        Self {
            model,
            prefix,
            store,
            router,
        }
    }

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
