//! A cursor key rotation during rolling deploys, as the deployment guide gives it: three
//! `dynarelay serve` processes behind a round-robin balancer (each request on a new connection,
//! so each page comes from the next instance), restarted one by one with the ring of each step
//! (`dynarelay keygen --rotate add`, then `seal`, then `retire`), while a client walks a
//! connection forward and backward without pause. Not one error, and every walk equals
//! DynamoDB's own read of the partition.
//!
//! The control: the one-step rotation (`<new>,<old>` deployed at once) breaks walks, because an
//! instance still on the old ring cannot open a cursor that an instance on the new one sealed.
//!
//! The instances reach DynamoDB Local through a proxy that holds every call to the shop's IAM
//! policy. Instances are restarted after the walker has made a number of pages, not after a time, so the
//! test does not depend on the machine's speed.

use std::{
    net::SocketAddr,
    process::Child,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use chrono::{DateTime, SecondsFormat};
use serde_json::{Value, json};

use crate::{
    fault_proxy::FaultProxy,
    helpers::{
        ModelApp, RoundRobin, dynarelay_command, endpoint, model_app, purchase_item, spawn_serve,
        stop, user_item, user_purchases,
    },
};

const USER: &str = "rolling-deploy-walker";
const INSTANCES: usize = 3;
/// Pages the walker makes between two restarts: several whole walks, on every instance.
const PAGES_BETWEEN_RESTARTS: usize = 30;

const PAGE: &str =
    "query($user: String!, $first: Int, $after: String, $last: Int, $before: String) {
  user(userId: $user) {
    purchases(first: $first, after: $after, last: $last, before: $before) {
      edges { node { purchasedAt } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}";

/// Runs `dynarelay keygen` with `args`, the ring in use in `DYNARELAY_CURSOR_KEYS` when there is
/// one; what it prints on stdout.
fn keygen(ring: Option<&str>, args: &[&str]) -> String {
    let mut command = dynarelay_command(&endpoint());
    command.env_remove("DYNARELAY_CURSOR_KEYS");
    if let Some(ring) = ring {
        command.env("DYNARELAY_CURSOR_KEYS", ring);
    }
    let out = command.arg("keygen").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "keygen {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// One `serve` instance over the shop tables under `prefix`, with DynamoDB at `dynamodb`,
/// sealing with `ring`.
fn start_instance(dynamodb: &str, prefix: &str, ring: &str) -> (Child, SocketAddr) {
    let (child, addr) = spawn_serve(
        dynarelay_command(dynamodb)
            .env("DYNARELAY_TABLE_PREFIX", prefix)
            .env("DYNARELAY_CURSOR_KEYS", ring)
            .args(["serve", "--listen", "127.0.0.1:0"]),
    );
    (child, addr.parse().unwrap())
}

/// What the walker has seen so far.
#[derive(Default)]
struct Walks {
    pages: AtomicUsize,
    complete: AtomicUsize,
    /// Every failed page or walk, described.
    failures: Mutex<Vec<String>>,
    /// The error codes of failed pages.
    codes: Mutex<Vec<String>>,
    stop: AtomicBool,
}

impl Walks {
    fn fail(&self, failure: String) {
        self.failures.lock().unwrap().push(failure);
    }
}

/// Walks the user's purchases through `url`, forward then backward, 7 a page, until told to
/// stop; each complete walk must equal `want`. A page that fails abandons its walk (recorded),
/// and the next walk starts from the beginning, as a client would.
async fn walk(url: String, want: Vec<String>, walks: Arc<Walks>) {
    // No idle connections kept: every request opens a new one, so the balancer sends each page
    // to the next instance.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let mut forward = true;
    while !walks.stop.load(Ordering::Relaxed) {
        let mut cursor: Option<String> = None;
        let mut got: Vec<String> = Vec::new();
        loop {
            let variables = if forward {
                json!({ "user": USER, "first": 7, "after": cursor })
            } else {
                json!({ "user": USER, "last": 7, "before": cursor })
            };
            let sent = http
                .post(&url)
                .json(&json!({ "query": PAGE, "variables": variables }))
                .send()
                .await;
            walks.pages.fetch_add(1, Ordering::Relaxed);
            let response: Value = match sent {
                Ok(response) => response.json().await.unwrap_or(Value::Null),
                Err(err) => {
                    walks.fail(format!("transport: {err}"));
                    break;
                }
            };
            if let Some(errors) = response.get("errors") {
                let code = errors[0]["extensions"]["code"].as_str().unwrap_or("none");
                walks.codes.lock().unwrap().push(code.to_owned());
                walks.fail(format!("page: {response}"));
                break;
            }
            let connection = &response["data"]["user"]["purchases"];
            let Some(edges) = connection["edges"].as_array() else {
                walks.fail(format!("no edges: {response}"));
                break;
            };
            let nodes = edges
                .iter()
                .map(|e| e["node"]["purchasedAt"].as_str().unwrap_or("").to_owned());
            let info = &connection["pageInfo"];
            let more = if forward {
                got.extend(nodes);
                info["hasNextPage"] == true
            } else {
                got.splice(0..0, nodes);
                info["hasPreviousPage"] == true
            };
            if !more {
                if got == want {
                    walks.complete.fetch_add(1, Ordering::Relaxed);
                } else {
                    walks.fail(format!("a walk returned {got:?}"));
                }
                break;
            }
            let next = if forward {
                &info["endCursor"]
            } else {
                &info["startCursor"]
            };
            cursor = next.as_str().map(str::to_owned);
        }
        forward = !forward;
    }
}

/// Three instances behind a balancer, and a client walking through it.
struct Fleet {
    prefix: String,
    /// DynamoDB Local behind a proxy holding every call to the shop's policy.
    dynamodb: FaultProxy,
    instances: Vec<Child>,
    balancer: RoundRobin,
    walks: Arc<Walks>,
    walker: tokio::task::JoinHandle<()>,
}

impl Fleet {
    /// Starts every instance with `ring` and the walker, over the purchases `app` holds.
    async fn start(app: &ModelApp, ring: &str) -> Self {
        let dynamodb = FaultProxy::auditing(&endpoint(), app.model, &app.prefix).await;
        let mut instances = Vec::new();
        let mut addrs = Vec::new();
        for _ in 0..INSTANCES {
            let (child, addr) =
                tokio::task::block_in_place(|| start_instance(&dynamodb.url(), &app.prefix, ring));
            instances.push(child);
            addrs.push(addr);
        }
        let balancer = RoundRobin::start(addrs);
        let walks = Arc::new(Walks::default());
        let walker = tokio::spawn(walk(
            balancer.url("/graphql"),
            expected(app).await,
            Arc::clone(&walks),
        ));
        let fleet = Self {
            prefix: app.prefix.clone(),
            dynamodb,
            instances,
            balancer,
            walks,
            walker,
        };
        fleet.pages(PAGES_BETWEEN_RESTARTS).await;
        fleet
    }

    /// Waits until the walker has made `n` more pages.
    async fn pages(&self, n: usize) {
        let target = self.walks.pages.load(Ordering::Relaxed) + n;
        // Bounded: a walker that makes no progress in two minutes is a failure, not a wait.
        for _ in 0..12_000 {
            if self.walks.pages.load(Ordering::Relaxed) >= target {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the walker made no progress");
    }

    /// A rolling deploy of `ring`: each instance in turn is taken out of the balancer (once the
    /// requests it was given have ended), stopped, started with `ring` and put back, once the walker has made its
    /// pages since the previous restart.
    async fn roll(&mut self, ring: &str) {
        for i in 0..INSTANCES {
            self.balancer.take_out(i).await;
            let prefix = self.prefix.clone();
            let dynamodb = self.dynamodb.url();
            let (child, addr) = tokio::task::block_in_place(|| {
                assert!(stop(&mut self.instances[i]).success());
                start_instance(&dynamodb, &prefix, ring)
            });
            self.instances[i] = child;
            self.balancer.put_in(i, addr);
            self.pages(PAGES_BETWEEN_RESTARTS).await;
        }
    }

    /// Stops the walker and the instances; what the walker saw.
    async fn finish(mut self) -> Arc<Walks> {
        self.walks.stop.store(true, Ordering::Relaxed);
        (&mut self.walker).await.unwrap();
        tokio::task::block_in_place(|| {
            for instance in &mut self.instances {
                assert!(stop(instance).success());
            }
        });
        assert_eq!(self.dynamodb.refused(), Vec::<String>::new());
        Arc::clone(&self.walks)
    }
}

/// The shop's tables with the walker's user and 60 purchases of theirs.
async fn shop_with_purchases() -> ModelApp {
    let app = model_app("examples/shop/dynarelay.toml").await;
    app.client()
        .put_item()
        .table_name(app.table("Users"))
        .set_item(Some(user_item(USER)))
        .send()
        .await
        .unwrap();
    for i in 0..60i64 {
        let at = 1_767_225_600_000 + i * 3_600_000 + i;
        app.client()
            .put_item()
            .table_name(app.table("Purchases"))
            .set_item(Some(purchase_item(USER, &at.to_string(), "9.99")))
            .send()
            .await
            .unwrap();
    }
    app
}

/// DynamoDB's own read of the user's purchases, as the API renders `purchasedAt`.
async fn expected(app: &ModelApp) -> Vec<String> {
    let items = user_purchases(app, USER).await;
    let want: Vec<String> = items
        .iter()
        .map(|item| {
            let ms: i64 = item["purchasedAt"].as_n().unwrap().parse().unwrap();
            DateTime::from_timestamp_millis(ms)
                .unwrap()
                .to_rfc3339_opts(SecondsFormat::Millis, true)
        })
        .collect();
    assert_eq!(want.len(), 60);
    want
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_rotation_never_breaks_a_client_during_rolling_deploys() {
    let app = shop_with_purchases().await;
    let old = keygen(None, &[]);
    let mut fleet = Fleet::start(&app, &old).await;

    // Step 1: every instance learns the new key, which opens but does not seal yet.
    let added = keygen(Some(&old), &["--rotate", "add"]);
    fleet.roll(&added).await;
    // Step 2: the new key seals; the old one still opens the cursors clients hold.
    let sealing = keygen(Some(&added), &["--rotate", "seal"]);
    fleet.roll(&sealing).await;
    // Step 3: the old key goes.
    let retired = keygen(Some(&sealing), &["--rotate", "retire"]);
    fleet.roll(&retired).await;

    let walks = fleet.finish().await;
    let failures = walks.failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} failures: {failures:#?}",
        failures.len()
    );
    let complete = walks.complete.load(Ordering::Relaxed);
    eprintln!(
        "staged rotation: {complete} complete walks, {} pages, no failure",
        walks.pages.load(Ordering::Relaxed)
    );
    // 10 rounds of at least 30 pages, a walk taking 9 pages.
    assert!(complete >= 30, "only {complete} complete walks");

    // The rings are what the guide says: the new key alone at the end, a new id.
    assert_ne!(retired, old);
    assert_eq!(added, format!("{old},{retired}"));
    assert_eq!(sealing, format!("{retired},{old}"));
}

/// The control: deploying `<new>,<old>` at once, instance by instance, fails walks with
/// `BAD_USER_INPUT` while the old ring is still running somewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_step_rotation_breaks_clients_during_a_rolling_deploy() {
    let app = shop_with_purchases().await;
    let old = keygen(None, &[]);
    let new = keygen(None, &["--id", "2"]);
    let mut fleet = Fleet::start(&app, &old).await;
    fleet.roll(&format!("{new},{old}")).await;
    let walks = fleet.finish().await;
    let codes = walks.codes.lock().unwrap();
    eprintln!(
        "one-step rotation: {} failed pages in {} pages",
        codes.len(),
        walks.pages.load(Ordering::Relaxed)
    );
    assert!(!codes.is_empty(), "the one-step rotation broke no walk");
    assert!(
        codes.iter().all(|code| code == "BAD_USER_INPUT"),
        "{codes:?}"
    );
}
