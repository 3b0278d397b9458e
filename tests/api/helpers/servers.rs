//! Servers on real loopback sockets (in-process, or the `dynarelay` binary), and HTTP exchanges
//! with them: the media types, and Apollo persisted-query requests.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use axum::Router;
use dynarelay::{
    dynamo::Store,
    http::{HttpSettings, ServeSettings, router, serve},
    pagination::PageLimits,
};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::{
    PolicyAudit, TEST_RING, app_state,
    apps::{assert_policy_kept, prefix_of},
    shop, test_ring,
};

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

/// `dynarelay check --offline --model <model>` with `more` arguments, run to its end: its success
/// and what it printed (stdout, then stderr).
pub fn check_offline(model: &str, more: &[&std::ffi::OsStr]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dynarelay"))
        .args(["check", "--offline", "--model", model])
        .args(more)
        .output()
        .expect("dynarelay check starts");
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), said)
}

/// Runs `command` to its end, which must succeed (its stderr shown when not); its stdout.
pub fn run_succeeding(command: &mut std::process::Command) -> Vec<u8> {
    let out = command.output().expect("the command starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Starts `serve` and reads the address it listens on from its log.
pub fn spawn_serve(command: &mut std::process::Command) -> (std::process::Child, String) {
    let (server, addr, _) = spawn_serve_logged(command);
    (server, addr)
}

/// The lines a process has logged so far, read on a thread as it logs them.
#[derive(Clone, Default)]
pub struct ProcessLog(Arc<std::sync::Mutex<Vec<String>>>);

impl ProcessLog {
    /// The lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// Waits until a line holds every one of `texts` (none within a minute fails the test);
    /// that line.
    pub fn wait_for(&self, texts: &[&str]) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(line) = self
                .lines()
                .into_iter()
                .find(|line| texts.iter().all(|text| line.contains(text)))
            {
                return line;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no line of the log holds {texts:?}: {:#?}",
                self.lines()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// [`spawn_serve`], with the server's log kept.
pub fn spawn_serve_logged(
    command: &mut std::process::Command,
) -> (std::process::Child, String, ProcessLog) {
    let mut server = command
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read the log on a thread, so a server that never logs its address fails the test in time.
    let log = server.stderr.take().unwrap();
    let kept = ProcessLog::default();
    let lines = kept.clone();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(log)).map_while(Result::ok) {
            if line.contains("dynarelay is listening")
                && let Some(addr) = line
                    .split("address=")
                    .nth(1)
                    .and_then(|s| s.split_whitespace().next())
            {
                let _ = addr_tx.send(addr.to_owned());
            }
            lines.0.lock().unwrap().push(line);
        }
    });
    match addr_rx.recv_timeout(Duration::from_secs(30)) {
        Ok(addr) => (server, addr, kept),
        Err(_) => {
            let _ = server.kill();
            panic!("serve did not log its address within 30 s");
        }
    }
}

/// Sends `signal` (`HUP`, `TERM`, ...) to the process `pid`.
pub fn signal(pid: u32, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{signal} {pid}");
}

/// Sends SIGTERM and waits for the server to exit; its exit status.
pub fn stop(server: &mut std::process::Child) -> std::process::ExitStatus {
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = server.try_wait().unwrap() {
            return status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "serve did not stop after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A load balancer on loopback, at the TCP level: each new connection goes to the next backend
/// in turn, skipping a backend taken out of rotation (while it restarts) or refusing
/// connections, as a balancer's health checks would. A backend is taken out as a balancer
/// deregisters a target: no new connection goes to it, and [`take_out`](Self::take_out) returns
/// once the connections already sent to it have ended (its deregistration delay). Stops when
/// dropped.
pub struct RoundRobin {
    pub addr: SocketAddr,
    pool: Arc<std::sync::Mutex<Pool>>,
    task: tokio::task::JoinHandle<()>,
}

/// The balancer's backends, and how many connections each has been given that have not ended.
struct Pool {
    backends: Vec<Option<SocketAddr>>,
    open: Vec<usize>,
}

/// One connection given to backend `slot`: counted in its pool until dropped.
struct Given {
    pool: Arc<std::sync::Mutex<Pool>>,
    slot: usize,
}

impl Drop for Given {
    fn drop(&mut self) {
        self.pool.lock().unwrap().open[self.slot] -= 1;
    }
}

impl RoundRobin {
    pub fn start(backends: Vec<SocketAddr>) -> Self {
        let listener = loopback_listener();
        let addr = listener.local_addr().unwrap();
        let pool = Arc::new(std::sync::Mutex::new(Pool {
            open: vec![0; backends.len()],
            backends: backends.into_iter().map(Some).collect(),
        }));
        let shared = Arc::clone(&pool);
        let task = tokio::spawn(async move {
            let mut turn = 0usize;
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    continue;
                };
                // The backends in the order this connection tries them, the first in rotation
                // counted as given the connection, in the same lock that read the rotation.
                let (order, given) = {
                    let mut pool = shared.lock().unwrap();
                    let n = pool.backends.len();
                    let order: Vec<(usize, SocketAddr)> = (0..n)
                        .map(|i| (turn + i) % n)
                        .filter_map(|slot| pool.backends[slot].map(|backend| (slot, backend)))
                        .collect();
                    let given = order.first().map(|&(slot, _)| {
                        pool.open[slot] += 1;
                        Given {
                            pool: Arc::clone(&shared),
                            slot,
                        }
                    });
                    (order, given)
                };
                turn += 1;
                tokio::spawn(async move {
                    let _given = given;
                    for (_, backend) in order {
                        if let Ok(mut server) = tokio::net::TcpStream::connect(backend).await {
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                            return;
                        }
                    }
                });
            }
        });
        Self { addr, pool, task }
    }

    /// Puts `backend` in rotation as backend `i`.
    pub fn put_in(&self, i: usize, backend: SocketAddr) {
        self.pool.lock().unwrap().backends[i] = Some(backend);
    }

    /// Takes backend `i` out of rotation and waits until every connection given to it has ended,
    /// as a balancer's deregistration delay does before the target is stopped.
    pub async fn take_out(&self, i: usize) {
        self.pool.lock().unwrap().backends[i] = None;
        // Bounded: connections that outlive a minute are a failure of the test, not a wait.
        for _ in 0..6_000 {
            if self.pool.lock().unwrap().open[i] == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("connections to backend {i} did not end");
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for RoundRobin {
    fn drop(&mut self) {
        self.task.abort();
    }
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
    /// The policy the calls of a server [started](Self::start) over a store are held to.
    audit: Option<PolicyAudit>,
}

/// A server started over a store fails the test when it stops if it made a call the shop's
/// policy does not allow (tables whose prefix no app owns are checked here).
impl Drop for Running {
    fn drop(&mut self) {
        if let Some(audit) = &self.audit {
            assert_policy_kept(audit);
        }
    }
}

impl Running {
    /// Serves the schema over `store` with the test cursor keys and default page limits.
    pub async fn start(store: Store, http: HttpSettings) -> Self {
        Self::start_with(store, PageLimits::default(), http).await
    }

    pub async fn start_with(store: Store, limits: PageLimits, http: HttpSettings) -> Self {
        let state = app_state(&store, limits, &test_ring(), http);
        let audit = PolicyAudit::of(shop(), &prefix_of(shop(), store.tables()));
        let mut running = Self::serve(router(state)).await;
        running.audit = Some(audit);
        running
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
        Self {
            addr,
            _stop: stop,
            audit: None,
        }
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
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

/// POSTs `query` with `variables` as JSON to `url` and returns the JSON answer.
pub async fn graphql_at(http: &reqwest::Client, url: &str, query: &str, variables: Value) -> Value {
    post_at(
        http,
        url,
        &json!({ "query": query, "variables": variables }),
    )
    .await
}

/// POSTs `body` (a request's parameters: a query, or an operation's id) as JSON to `url` and
/// returns the JSON answer.
pub async fn post_at(http: &reqwest::Client, url: &str, body: &Value) -> Value {
    http.post(url)
        .json(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// POSTs `query` with `variables` to `url`, with `Authorization: Bearer <token>` when there is
/// a token; the response's JSON (a panic, with the body, when it is not JSON).
pub async fn graphql_as(url: &str, token: Option<&str>, query: &str, variables: Value) -> Value {
    let mut request = reqwest::Client::new()
        .post(url)
        .json(&json!({ "query": query, "variables": variables }));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let text = request.send().await.unwrap().text().await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// `name=value`, URL-encoded.
pub fn query_string(name: &str, value: &str) -> String {
    let url = reqwest::Url::parse_with_params("http://localhost/", [(name, value)]).unwrap();
    url.query().unwrap_or_default().to_owned()
}
