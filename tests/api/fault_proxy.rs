//! A loopback HTTP proxy between the server and DynamoDB Local that injects faults on demand:
//! added latency, throttling answers, connections reset without an answer, answers whose body
//! stops half way, access denied on chosen tables (as IAM answers; DynamoDB Local has no
//! IAM), chosen tables described as still being created (DynamoDB Local creates at once),
//! chosen errors for the next calls of one operation (such as DynamoDB Streams' `GetRecords`),
//! a stream's shard split in two ([`split`]), and `GetRecords` answered with no records before
//! a shard's records, as AWS may answer ([`empty`]). Faults change at run time through its
//! methods, and it counts what it did. It stops when dropped.
//!
//! It also records, and can hold to a model's IAM policy ([`FaultProxy::auditing`]), the calls of
//! servers that run as processes of their own, whose SDK clients a test cannot intercept: a call
//! the policy does not allow gets `AccessDeniedException`, as IAM would answer it.

use std::{
    convert::Infallible,
    net::SocketAddr,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use http_body_util::{BodyExt, Either, Full};
use hyper::{
    Request, Response, StatusCode,
    body::{Body, Bytes, Frame, Incoming},
    header::{self, HeaderName},
    server::conn::http1,
    service::service_fn,
};
use hyper_util::rt::TokioIo;
use tokio::{net::TcpListener, task::JoinHandle, task::JoinSet};

mod empty;
mod split;

pub use empty::Empty;
pub use split::child_of_keys;

/// The DynamoDB error a throttled request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Throttle {
    /// `ThrottlingException`: too many control-plane or on-demand requests.
    #[default]
    Throttling,
    /// `ProvisionedThroughputExceededException`: a table's provisioned capacity ran out.
    ProvisionedThroughputExceeded,
}

impl Throttle {
    fn code(self) -> &'static str {
        match self {
            Self::Throttling => "ThrottlingException",
            Self::ProvisionedThroughputExceeded => "ProvisionedThroughputExceededException",
        }
    }
}

/// A seeded random mix of faults, drawn for every request in arrival order.
#[derive(Debug, Clone, Copy)]
pub struct ChaosMix {
    /// Seeds the draws, so that a sequential workload meets the same faults on every run.
    pub seed: u64,
    /// Percent of requests answered with a throttling error.
    pub throttle_percent: u64,
    /// Percent of requests whose connection is reset.
    pub reset_percent: u64,
    /// Every request waits a random time up to this long first.
    pub max_latency: Duration,
}

/// What the proxy has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Requests read from clients.
    pub received: u64,
    /// Requests answered with a throttling error.
    pub throttled: u64,
    /// Requests whose connection was reset instead of answered.
    pub reset: u64,
    /// Requests sent on to DynamoDB.
    pub forwarded: u64,
}

impl std::ops::Sub for Counts {
    type Output = Counts;

    fn sub(self, earlier: Counts) -> Counts {
        Counts {
            received: self.received - earlier.received,
            throttled: self.throttled - earlier.throttled,
            reset: self.reset - earlier.reset,
            forwarded: self.forwarded - earlier.forwarded,
        }
    }
}

/// The faults in force.
#[derive(Debug, Default)]
struct Faults {
    latency: Duration,
    throttle: Throttle,
    throttle_next: u64,
    throttle_all: bool,
    reset_next: u64,
    reset_all: bool,
    stall_all: bool,
    /// The mix and its generator's state.
    chaos: Option<(ChaosMix, u64)>,
    /// Tables whose requests get `AccessDeniedException`.
    denied_tables: Vec<String>,
    /// Tables DescribeTable says are still being created.
    creating_tables: Vec<String>,
    /// Errors for the next requests of an operation: `(operation, error code, how many more)`.
    failing: Vec<(String, String, u64)>,
}

enum Action {
    Forward,
    Stall,
    Throttle(Throttle),
    Reset,
}

impl Faults {
    /// What to do with the next request, and how long to hold it first. Resets take precedence
    /// over throttles, and both over the random mix.
    fn decide(&mut self) -> (Action, Duration) {
        let mut delay = self.latency;
        let action = if self.reset_all {
            Action::Reset
        } else if self.reset_next > 0 {
            self.reset_next -= 1;
            Action::Reset
        } else if self.stall_all {
            Action::Stall
        } else if self.throttle_all {
            Action::Throttle(self.throttle)
        } else if self.throttle_next > 0 {
            self.throttle_next -= 1;
            Action::Throttle(self.throttle)
        } else if let Some((mix, state)) = &mut self.chaos {
            let max_ms = u64::try_from(mix.max_latency.as_millis()).unwrap_or(u64::MAX);
            delay += Duration::from_millis(splitmix64(state) % (max_ms + 1));
            let roll = splitmix64(state) % 100;
            if roll < mix.reset_percent {
                Action::Reset
            } else if roll < mix.reset_percent + mix.throttle_percent {
                Action::Throttle(Throttle::Throttling)
            } else {
                Action::Forward
            }
        } else {
            Action::Forward
        };
        (action, delay)
    }
}

/// SplitMix64: a tiny, well-mixed, seedable generator (no dependency needed).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[derive(Debug)]
struct Shared {
    upstream: String,
    client: reqwest::Client,
    faults: Mutex<Faults>,
    received: AtomicU64,
    throttled: AtomicU64,
    reset: AtomicU64,
    forwarded: AtomicU64,
    /// The `(action, resource ARN)` pairs calls are held to, when they are.
    policy: Option<crate::helpers::PolicyCheck>,
    /// Calls the policy refused, described.
    refused: Mutex<Vec<String>>,
    /// Shards shown split.
    splits: split::Splits,
    /// `GetRecords` answered with no records.
    empties: empty::Empties,
}

/// The service's error: hyper closes the connection without answering.
#[derive(Debug)]
struct ResetConnection;

impl std::fmt::Display for ResetConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("fault proxy: connection reset on purpose")
    }
}

impl std::error::Error for ResetConnection {}

/// Headers that belong to one connection, not to the request or response.
const HOP_BY_HOP: [HeaderName; 7] = [
    header::CONNECTION,
    header::CONTENT_LENGTH,
    header::HOST,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// A fault-injecting proxy on `127.0.0.1`, forwarding to one upstream endpoint.
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl FaultProxy {
    /// Listens on an ephemeral loopback port and forwards every request to `upstream` (such as
    /// `http://127.0.0.1:8000`), with no faults until some are set.
    pub async fn start(upstream: &str) -> FaultProxy {
        Self::start_with(upstream, None).await
    }

    /// As [`FaultProxy::start`], but every call is held to the policy `dynarelay policy` prints
    /// for `model` with its tables under `prefix`: one it does not allow gets
    /// `AccessDeniedException` and is remembered ([`FaultProxy::refused`]).
    pub async fn auditing(upstream: &str, model: &dynarelay::model::Model, prefix: &str) -> Self {
        let check = crate::helpers::PolicyCheck::new(model, prefix, true);
        Self::start_with(upstream, Some(check)).await
    }

    /// As [`FaultProxy::auditing`], but with the policy of a Lambda function with its default
    /// flags, the table check off (`dynarelay policy --check-tables false`): no `DescribeTable`.
    pub async fn auditing_lambda(
        upstream: &str,
        model: &dynarelay::model::Model,
        prefix: &str,
    ) -> Self {
        let check = crate::helpers::PolicyCheck::new(model, prefix, false);
        Self::start_with(upstream, Some(check)).await
    }

    /// The calls the policy refused so far, described.
    pub fn refused(&self) -> Vec<String> {
        self.shared.refused.lock().unwrap().clone()
    }

    /// Asserts that the policy refused at least one call so far, and only calls whose
    /// description starts with `call` (`"dynamodb:DescribeTable "`, say).
    pub fn assert_refused_only(&self, call: &str) {
        let refused = self.refused();
        assert!(
            !refused.is_empty() && refused.iter().all(|r| r.starts_with(call)),
            "refused, where only {call}… was expected: {refused:?}"
        );
    }

    async fn start_with(upstream: &str, policy: Option<crate::helpers::PolicyCheck>) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            faults: Mutex::new(Faults::default()),
            received: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            reset: AtomicU64::new(0),
            forwarded: AtomicU64::new(0),
            policy,
            refused: Mutex::default(),
            splits: split::Splits::default(),
            empties: empty::Empties::default(),
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        FaultProxy {
            addr,
            shared,
            accept,
        }
    }

    /// `http://127.0.0.1:PORT`, the endpoint to give the SDK.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn faults(&self) -> std::sync::MutexGuard<'_, Faults> {
        self.shared.faults.lock().unwrap()
    }

    /// Holds every request for `latency` before acting on it.
    pub fn set_latency(&self, latency: Duration) {
        self.faults().latency = latency;
    }

    /// Answers the next `n` requests with `kind`.
    pub fn throttle_next(&self, n: u64, kind: Throttle) {
        let mut faults = self.faults();
        faults.throttle = kind;
        faults.throttle_next = n;
    }

    /// Answers every request with `kind` until [`clear`](Self::clear).
    pub fn throttle_all(&self, kind: Throttle) {
        let mut faults = self.faults();
        faults.throttle = kind;
        faults.throttle_all = true;
    }

    /// Resets the connection of the next `n` requests.
    pub fn reset_next(&self, n: u64) {
        self.faults().reset_next = n;
    }

    /// Resets the connection of every request until [`clear`](Self::clear).
    pub fn reset_all(&self) {
        self.faults().reset_all = true;
    }

    /// Forwards every request until [`clear`](Self::clear), but relays only the first half of
    /// each answer's body, then sends nothing more: the connection stays open, the rest never
    /// comes (a stalled stream).
    pub fn stall_all(&self) {
        self.faults().stall_all = true;
    }

    /// Answers every request naming table `name` with `AccessDeniedException`, as DynamoDB
    /// does for credentials whose policy does not allow it.
    pub fn deny_table(&self, name: &str) {
        self.faults().denied_tables.push(name.to_owned());
    }

    /// Answers DescribeTable of table `name` as DynamoDB does while the table is being created:
    /// `TableStatus` `CREATING` (the rest of DynamoDB Local's answer as it is).
    pub fn creating_table(&self, name: &str) {
        self.faults().creating_tables.push(name.to_owned());
    }

    /// Answers the next `n` requests of `operation` (the last part of their `X-Amz-Target`, such
    /// as `GetRecords` of DynamoDB Streams) with the error `code` (such as
    /// `ExpiredIteratorException`), as DynamoDB would; other requests go on as they are.
    pub fn fail_next(&self, operation: &str, code: &str, n: u64) {
        self.faults()
            .failing
            .push((operation.to_owned(), code.to_owned(), n));
    }

    /// How many of the errors [`fail_next`](Self::fail_next) asked for are still to be given.
    pub fn failures_left(&self) -> u64 {
        self.faults().failing.iter().map(|(_, _, n)| n).sum()
    }

    /// Shows shard `parent` of stream `arn` closed after sequence number `ending`, and split
    /// into two children that hold what DynamoDB Local records after it (see [`split`]).
    pub fn split_shard(&self, arn: &str, parent: &str, ending: &str) {
        self.shared.splits.split(arn, parent, ending);
    }

    /// Holds (`true`) or lets go reads of every shard but a split one's children: while held,
    /// they return no record, as a shard with nothing new does.
    pub fn hold_stream_reads(&self, held: bool) {
        self.shared.splits.hold(held);
    }

    /// How many `DescribeStream` answers have shown a [split](Self::split_shard) so far, and
    /// how many reads were [held](Self::hold_stream_reads).
    pub fn split_counts(&self) -> (u64, u64) {
        self.shared.splits.counts()
    }

    /// How many records each child of a [split](Self::split_shard) shard has given so far.
    pub fn split_records(&self) -> [u64; 2] {
        self.shared.splits.given()
    }

    /// Answers the first `GetRecords` calls made with each shard iterator with no records, as
    /// AWS may before a shard's records (see [`empty`]); `None` forwards them all again.
    pub fn empty_answers(&self, mode: Option<Empty>) {
        self.shared.empties.set(mode);
    }

    /// How many `GetRecords` calls [`empty_answers`](Self::empty_answers) answered so far.
    pub fn empty_answers_given(&self) -> u64 {
        self.shared.empties.given()
    }

    /// Draws a fault for every request from `mix` (after any scripted faults).
    pub fn chaos(&self, mix: ChaosMix) {
        self.faults().chaos = Some((mix, mix.seed));
    }

    /// Removes every fault: requests are forwarded at once.
    pub fn clear(&self) {
        *self.faults() = Faults::default();
        self.shared.empties.set(None);
    }

    /// What the proxy has done so far.
    pub fn counts(&self) -> Counts {
        let shared = &self.shared;
        Counts {
            received: shared.received.load(Ordering::SeqCst),
            throttled: shared.throttled.load(Ordering::SeqCst),
            reset: shared.reset.load(Ordering::SeqCst),
            forwarded: shared.forwarded.load(Ordering::SeqCst),
        }
    }
}

impl Drop for FaultProxy {
    /// Stops accepting; dropping the accept task's `JoinSet` aborts every open connection.
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        let socket = match listener.accept().await {
            Ok((socket, _)) => socket,
            Err(_) => {
                // Out of file descriptors or similar: wait a little rather than spin.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        // With zero linger, closing the socket sends a TCP RST instead of a FIN: that is how
        // a reset request's connection dies. (Connections otherwise close only when the client
        // closes them first, or when the proxy is dropped.)
        let _ = socket.set_zero_linger();
        let _ = socket.set_nodelay(true);
        let shared = shared.clone();
        connections.spawn(async move {
            let service = service_fn(move |request| handle(shared.clone(), request));
            // An error here is a reset on purpose, or a client that went away.
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(socket), service)
                .await;
        });
    }
}

/// A response body: whole, or stalled after its first part.
type ProxyBody = Either<Full<Bytes>, Stalled>;

/// A body that yields its first part and then never finishes (and never wakes its reader).
#[derive(Debug)]
struct Stalled(Option<Bytes>);

impl Body for Stalled {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.0.take() {
            Some(first) => Poll::Ready(Some(Ok(Frame::data(first)))),
            None => Poll::Pending,
        }
    }
}

async fn handle(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<ProxyBody>, ResetConnection> {
    shared.received.fetch_add(1, Ordering::SeqCst);
    let operation = request
        .headers()
        .get("x-amz-target")
        .and_then(|t| t.to_str().ok())
        .and_then(|t| t.rsplit('.').next())
        .unwrap_or_default()
        .to_owned();
    let failure = {
        let mut faults = shared.faults.lock().unwrap();
        let failing = faults
            .failing
            .iter_mut()
            .find(|(op, _, n)| *op == operation && *n > 0);
        failing.map(|(_, code, n)| {
            *n -= 1;
            code.clone()
        })
    };
    if let Some(code) = failure {
        shared.throttled.fetch_add(1, Ordering::SeqCst);
        return Ok(dynamodb_error(&code, "Injected by the fault proxy.")
            .map(|body| Either::Left(Full::new(body))));
    }
    // Decided on arrival, so that "the next n" means the next n to arrive.
    let (action, delay) = shared.faults.lock().unwrap().decide();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    match action {
        Action::Reset => {
            shared.reset.fetch_add(1, Ordering::SeqCst);
            // hyper drops the connection without answering when the service fails.
            Err(ResetConnection)
        }
        Action::Throttle(kind) => {
            shared.throttled.fetch_add(1, Ordering::SeqCst);
            Ok(throttled(kind).map(Either::Left))
        }
        Action::Forward => {
            shared.forwarded.fetch_add(1, Ordering::SeqCst);
            Ok(forward(&shared, request)
                .await?
                .map(|body| Either::Left(Full::new(body))))
        }
        Action::Stall => {
            shared.forwarded.fetch_add(1, Ordering::SeqCst);
            // The answer's headers (its Content-Length included) and half its body.
            let response = forward(&shared, request).await?;
            Ok(
                response
                    .map(|mut body| Either::Right(Stalled(Some(body.split_to(body.len() / 2))))),
            )
        }
    }
}

/// DynamoDB's answer to a throttled request: HTTP 400 with the error type in `__type`.
fn throttled(kind: Throttle) -> Response<Full<Bytes>> {
    dynamodb_error(
        kind.code(),
        "Rate of requests exceeds the allowed throughput.",
    )
    .map(Full::new)
}

/// What the policy, when there is one, refuses in a request: its action on a table or index
/// that the policy does not allow, described. What it allows is recorded as used.
fn refusal(shared: &Shared, headers: &hyper::HeaderMap, body: &[u8]) -> Option<String> {
    shared.policy.as_ref()?.refusal(&used_by(headers, body))
}

/// The `(action, resource ARN)` pairs a request uses, its region and account `*`.
fn used_by(headers: &hyper::HeaderMap, body: &[u8]) -> Vec<(String, String)> {
    let Some(target) = headers.get("x-amz-target").and_then(|t| t.to_str().ok()) else {
        return Vec::new();
    };
    let Some(operation) = target.rsplit('.').next() else {
        return Vec::new();
    };
    let Ok(request) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Vec::new();
    };
    let mut tables: Vec<String> = request["TableName"]
        .as_str()
        .map(str::to_owned)
        .into_iter()
        .collect();
    if let Some(items) = request["RequestItems"].as_object() {
        tables.extend(items.keys().cloned());
    }
    let index = request["IndexName"].as_str();
    tables
        .iter()
        .map(|table| crate::helpers::used_pair(operation, table, index))
        .collect()
}

/// A DynamoDB error answer: HTTP 400 with the error's code in `__type`.
fn dynamodb_error(code: &str, message: &str) -> Response<Bytes> {
    let body = serde_json::json!({
        "__type": format!("com.amazonaws.dynamodb.v20120810#{code}"),
        "message": message,
    });
    Response::builder()
        .status(StatusCode::BAD_REQUEST)
        .header(header::CONTENT_TYPE, "application/x-amz-json-1.0")
        .header("x-amzn-requestid", "fault-proxy")
        .body(Bytes::from(body.to_string()))
        .unwrap()
}

/// Sends the request on to DynamoDB Local and relays its status, headers and body (its
/// `x-amz-crc32` checksum included, which the SDK verifies). 502 if the upstream cannot be reached.
async fn forward(
    shared: &Shared,
    request: Request<Incoming>,
) -> Result<Response<Bytes>, ResetConnection> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|_| ResetConnection)?
        .to_bytes();
    let names_table = |tables: &[String]| {
        tables.iter().any(|table| {
            let needle = format!("\"TableName\":\"{table}\"");
            body.windows(needle.len()).any(|w| w == needle.as_bytes())
        })
    };
    if let Some(refusal) = refusal(shared, &parts.headers, &body) {
        shared.refused.lock().unwrap().push(refusal);
        return Ok(dynamodb_error(
            "AccessDeniedException",
            "User is not authorized to perform this action on this resource.",
        ));
    }
    if names_table(&shared.faults.lock().unwrap().denied_tables) {
        return Ok(dynamodb_error(
            "AccessDeniedException",
            "User is not authorized to perform this action on this resource.",
        ));
    }
    let creating = parts
        .headers
        .get("x-amz-target")
        .is_some_and(|t| t.as_bytes().ends_with(b".DescribeTable"))
        && names_table(&shared.faults.lock().unwrap().creating_tables);
    let operation = parts
        .headers
        .get("x-amz-target")
        .and_then(|t| t.to_str().ok())
        .and_then(|t| t.rsplit('.').next())
        .unwrap_or_default();
    let mut body = body.to_vec();
    if let Some(empty) = shared.empties.request(operation, &mut body) {
        return Ok(Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "application/x-amz-json-1.0")
            .header("x-amzn-requestid", "fault-proxy")
            .body(Bytes::from(empty))
            .unwrap());
    }
    let split = shared.splits.request(operation, &mut body);
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut outgoing = shared
        .client
        .request(parts.method, format!("{}{path}", shared.upstream))
        .body(body);
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(name) {
            outgoing = outgoing.header(name, value);
        }
    }
    let Ok(upstream) = outgoing.send().await else {
        return Ok(Response::builder()
            .status(StatusCode::BAD_GATEWAY)
            .body(Bytes::new())
            .unwrap());
    };
    let mut response = Response::builder().status(upstream.status());
    for (name, value) in upstream.headers() {
        if !HOP_BY_HOP.contains(name) {
            response = response.header(name, value);
        }
    }
    let Ok(bytes) = upstream.bytes().await else {
        return Err(ResetConnection);
    };
    if let Some(rewritten) = shared.splits.answer(split, &bytes) {
        if let Some(headers) = response.headers_mut() {
            headers.remove("x-amz-crc32");
        }
        return Ok(response.body(Bytes::from(rewritten)).unwrap());
    }
    if creating {
        // The status rewritten; the checksum of the original body goes with it (the SDK checks
        // `x-amz-crc32` only when it is there).
        let text = String::from_utf8_lossy(&bytes)
            .replace("\"TableStatus\":\"ACTIVE\"", "\"TableStatus\":\"CREATING\"");
        if let Some(headers) = response.headers_mut() {
            headers.remove("x-amz-crc32");
        }
        return Ok(response.body(Bytes::from(text)).unwrap());
    }
    Ok(response.body(bytes).unwrap())
}
