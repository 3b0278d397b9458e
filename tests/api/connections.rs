//! Connection protections over real loopback sockets: the header-read timeout against floods of
//! slow headers, the cap on open connections, the health listener beside it, the idle timeout of
//! keep-alive connections (never of one with a request in flight), header size and count limits,
//! and the peer address on every request.
//! Each protection is also shown off (a control) to prove that it, and nothing else, does the work.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicI64, Ordering},
    },
    time::{Duration, Instant},
};

use axum::{Router, extract::ConnectInfo, routing::get};
use dynarelay::{
    http::{ConnectionSettings, HealthListener, ServeSettings, health_router, serve},
    metrics::{Listener, Metrics},
    pagination::PageLimits,
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    sync::oneshot,
    task::JoinSet,
};

use crate::helpers::{Running, TestApp, app_state, loopback_listener, test_ring};

/// The start of a request's headers, never finished.
const SLOW_HEADER: &[u8] = b"GET /graphql HTTP/1.1\r\nHost: x\r\n";
const PAGE: &str =
    r#"{ user(userId: "ivy") { purchases(first: 20) { edges { node { id amount } } } } }"#;
const SECOND: Duration = Duration::from_secs(1);

/// The shop with a user and 25 purchases.
async fn shop_app() -> TestApp {
    let app = TestApp::spawn().await;
    app.put_user("ivy").await;
    let times: Vec<i64> = (0..25).map(|i| 1_672_531_200_000 + i * 60_000).collect();
    app.put_purchases("ivy", &times).await;
    app
}

fn protections(
    header_read: Option<Duration>,
    idle: Option<Duration>,
    cap: usize,
) -> ConnectionSettings {
    ConnectionSettings {
        header_read_timeout: header_read,
        idle_timeout: idle,
        max_connections: cap,
        ..ConnectionSettings::default()
    }
}

fn settings(metrics: &Arc<Metrics>, connections: ConnectionSettings) -> ServeSettings {
    ServeSettings {
        drain_timeout: SECOND,
        connections,
        health: None,
        metrics: metrics.clone(),
        workers: Vec::new(),
    }
}

/// Reads until the server closes the connection, for at most `wait`: what it sent before closing,
/// or `None` if it was still open.
async fn closed_within(stream: &mut TcpStream, wait: Duration) -> Option<Vec<u8>> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(wait, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => received.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    read.ok().map(|()| received)
}

/// A connection that sends the start of a request's headers and nothing more. Returns how long
/// after it started connecting (so, at least as long as after the server accepted it) the server
/// closed it, with what it sent first, or `None` if it was still open after `wait`.
async fn slow_header(addr: SocketAddr, wait: Duration) -> Option<(Duration, Vec<u8>)> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(SLOW_HEADER).await.unwrap();
    let received = closed_within(&mut stream, wait).await?;
    Some((started.elapsed(), received))
}

/// Sends `request` on `stream` and reads the response to it (headers and a `Content-Length` body).
async fn exchange(stream: &mut TcpStream, request: &[u8]) -> String {
    stream.write_all(request).await.unwrap();
    response(stream).await
}

/// Reads one response from `stream` (headers and a `Content-Length` body).
async fn response(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&received).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if received.len() >= end + 4 + length {
                return text;
            }
        }
        let n = tokio::time::timeout(5 * SECOND, stream.read(&mut buf))
            .await
            .expect("no response within 5 s")
            .unwrap();
        assert!(n > 0, "closed before a full response: {text:?}");
        received.extend_from_slice(&buf[..n]);
    }
}

/// The shop page on `stream`, checked; returns how long it took.
async fn shop_page(stream: &mut TcpStream) -> Duration {
    let body = json!({ "query": PAGE }).to_string();
    let request = format!(
        "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let started = Instant::now();
    let response = exchange(stream, request.as_bytes()).await;
    let elapsed = started.elapsed();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    let body: Value = serde_json::from_str(body).unwrap();
    let edges = body["data"]["user"]["purchases"]["edges"].as_array();
    assert_eq!(edges.map(Vec::len), Some(20), "{body}");
    elapsed
}

/// The status of the response to `request` on a fresh connection.
async fn status_of(addr: SocketAddr, request: &[u8]) -> u16 {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let response = exchange(&mut stream, request).await;
    response[9..12].parse().unwrap()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_are_cut_off_while_a_keep_alive_client_gets_its_pages_fast() {
    tokio::time::timeout(Duration::from_secs(45), async {
        const SLOW: usize = 2000;
        const CAP: usize = 200;
        let app = shop_app().await;
        let metrics = app.store.metrics().clone();
        let server = Running::serve_with(
            app.router.clone(),
            settings(&metrics, protections(Some(SECOND), None, CAP)),
        );
        // Control: the same server without the header-read timeout keeps a slow connection.
        let unprotected = Running::serve_with(
            app.router.clone(),
            settings(&Arc::default(), protections(None, None, CAP)),
        );
        let control = tokio::spawn(slow_header(unprotected.addr, 2 * SECOND));

        // A client on one keep-alive connection opened before the flood. (Over a plain socket:
        // a pooling client may open a spare connection that then sits idle, and is rightly cut.)
        let mut keep_alive = TcpStream::connect(server.addr).await.unwrap();
        shop_page(&mut keep_alive).await;

        let done = Arc::new(AtomicBool::new(false));
        let most_open = Arc::new(AtomicI64::new(0));
        let sampler = tokio::spawn({
            let (done, most_open, metrics) = (done.clone(), most_open.clone(), metrics.clone());
            async move {
                while !done.load(Ordering::Relaxed) {
                    most_open.fetch_max(metrics.connections_open(Listener::Api), Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
        });
        let client = tokio::spawn({
            let done = done.clone();
            async move {
                let mut latencies = Vec::new();
                while !done.load(Ordering::Relaxed) {
                    latencies.push(shop_page(&mut keep_alive).await);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                latencies
            }
        });

        let mut flood = JoinSet::new();
        for _ in 0..SLOW {
            flood.spawn(slow_header(server.addr, Duration::from_secs(30)));
        }
        let mut closed = Vec::with_capacity(SLOW);
        while let Some(result) = flood.join_next().await {
            let (after, received) = result
                .unwrap()
                .expect("a slow connection was still open after 30 s");
            assert!(
                received.is_empty(),
                "the server answered a slow header: {received:?}"
            );
            closed.push(after);
        }
        done.store(true, Ordering::Relaxed);
        sampler.await.unwrap();
        let mut latencies = client.await.unwrap();

        closed.sort();
        latencies.sort();
        let p99 = percentile(&latencies, 0.99);
        eprintln!(
            "{} pages during the flood: p50 {:?}, p99 {p99:?}, max {:?}; slow connections closed \
             after {:?} to {:?}",
            latencies.len(),
            percentile(&latencies, 0.5),
            latencies[latencies.len() - 1],
            closed[0],
            closed[SLOW - 1],
        );
        assert!(
            closed[0] >= Duration::from_millis(990),
            "a slow connection was closed {:?} after it connected, before the 1 s timeout",
            closed[0]
        );
        assert_eq!(
            metrics.connections_timed_out(Listener::Api, "header_read"),
            SLOW as u64,
            "every slow connection is closed by the header-read timeout"
        );
        let most_open = most_open.load(Ordering::Relaxed);
        assert_eq!(
            most_open, CAP as i64,
            "open connections went past (or never reached) the cap"
        );
        assert!(metrics.connection_caps_reached(Listener::Api) > 0);
        assert!(
            latencies.len() >= 50,
            "only {} pages during the flood",
            latencies.len()
        );
        assert!(
            p99 < Duration::from_millis(100),
            "page p99 {p99:?} during the flood"
        );

        assert!(
            control.await.unwrap().is_none(),
            "without the header-read timeout, a slow connection should still be open after 2 s"
        );
    })
    .await
    .expect("the test did not finish within 45 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_listener_answers_while_the_cap_holds_clients_off() {
    tokio::time::timeout(Duration::from_secs(30), async {
        const CAP: usize = 20;
        let app = TestApp::spawn().await;
        let metrics = app.store.metrics().clone();
        let health = loopback_listener();
        let health_addr = health.local_addr().unwrap();
        let state = app_state(
            &app.store,
            PageLimits::default(),
            &test_ring(),
            Default::default(),
        );
        let server = Running::serve_with(
            app.router.clone(),
            ServeSettings {
                health: Some(HealthListener {
                    listener: health,
                    router: health_router(state),
                }),
                ..settings(&metrics, protections(Some(SECOND), Some(SECOND), CAP))
            },
        );
        // Three times the cap of slow clients: the cap stays full for about 3 s.
        let mut flood = JoinSet::new();
        for _ in 0..3 * CAP {
            flood.spawn(slow_header(server.addr, Duration::from_secs(10)));
        }
        let deadline = Instant::now() + SECOND / 2;
        while metrics.connections_open(Listener::Api) < CAP as i64 {
            assert!(
                Instant::now() < deadline,
                "the slow clients did not fill the cap"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }

        // A fresh connection to the health listener is answered at once.
        let fresh = || {
            reqwest::Client::builder()
                .no_proxy()
                .pool_max_idle_per_host(0)
                .timeout(SECOND / 2)
                .build()
                .unwrap()
        };
        let started = Instant::now();
        let response = fresh()
            .get(format!("http://{health_addr}/health"))
            .send()
            .await
            .expect("the health listener did not answer within 0.5 s");
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.json::<Value>().await.unwrap(),
            json!({ "status": "ok" })
        );
        let answered = started.elapsed();
        // Control: the same probe on the API listener waits behind the cap.
        let api_probe = fresh().get(server.url("/health")).send().await;
        assert!(
            api_probe.as_ref().is_err_and(reqwest::Error::is_timeout),
            "the API listener answered a fresh connection while its cap was full: {api_probe:?}"
        );
        assert_eq!(metrics.connections_open(Listener::Api), CAP as i64);

        // The health listener has no GraphQL, and serves the connection metrics.
        let graphql = fresh()
            .post(format!("http://{health_addr}/graphql"))
            .json(&json!({ "query": "{ __typename }" }))
            .send()
            .await
            .unwrap();
        assert_eq!(graphql.status(), 404);
        let exposition = fresh()
            .get(format!("http://{health_addr}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        // (This very request keeps a health connection open.)
        let value = |prefix: &str| {
            exposition
                .lines()
                .find_map(|l| l.strip_prefix(prefix)?.trim().parse::<f64>().ok())
                .unwrap_or_else(|| panic!("no `{prefix}` in:\n{exposition}"))
        };
        assert!(value(r#"dynarelay_http_connections_open{listener="api"}"#) > 0.0);
        assert!(value(r#"dynarelay_http_connections_open{listener="health"}"#) >= 1.0);
        assert!(value(r#"dynarelay_http_connection_cap_reached_total{listener="api"}"#) >= 1.0);
        eprintln!("the health listener answered in {answered:?} with the cap full");
        flood.abort_all();
    })
    .await
    .expect("the test did not finish within 30 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed_at_the_idle_timeout() {
    tokio::time::timeout(Duration::from_secs(30), async {
        const REQUEST: &[u8] = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
        let app = TestApp::spawn().await;
        let metrics = app.store.metrics().clone();
        // Margins of seconds around each timeout, so that a busy machine's pauses cannot
        // decide the outcome; the metrics say which timeout closed the connection.
        let server = Running::serve_with(
            app.router.clone(),
            settings(
                &metrics,
                protections(Some(6 * SECOND), Some(2 * SECOND), 100),
            ),
        );
        // Control: no idle timeout, the same 6 s header-read timeout.
        let unprotected = Running::serve_with(
            app.router.clone(),
            settings(&Arc::default(), protections(Some(6 * SECOND), None, 100)),
        );
        let control = tokio::spawn(async move {
            let mut stream = TcpStream::connect(unprotected.addr).await.unwrap();
            assert!(
                exchange(&mut stream, REQUEST)
                    .await
                    .starts_with("HTTP/1.1 200")
            );
            let still_open = closed_within(&mut stream, 3 * SECOND).await.is_none();
            // And it is still usable for the next request.
            let next = exchange(&mut stream, REQUEST).await;
            (still_open, next)
        });

        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        // Two requests on the connection: it is kept alive between them.
        for _ in 0..2 {
            let response = exchange(&mut stream, REQUEST).await;
            assert!(response.starts_with("HTTP/1.1 200"), "{response}");
            tokio::time::sleep(SECOND / 2).await;
        }
        let response = exchange(&mut stream, REQUEST).await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        let answered = Instant::now();
        let received = closed_within(&mut stream, 5 * SECOND)
            .await
            .expect("the idle connection was still open after 5 s");
        let idle = answered.elapsed();
        assert!(received.is_empty(), "{received:?}");
        assert!(
            idle >= Duration::from_millis(1_950),
            "the idle connection was closed after {idle:?}, before the 2 s idle timeout"
        );
        assert_eq!(metrics.connections_timed_out(Listener::Api, "idle"), 1);
        assert_eq!(
            metrics.connections_timed_out(Listener::Api, "header_read"),
            0
        );

        let (still_open, next) = control.await.unwrap();
        assert!(
            still_open,
            "without the idle timeout, the connection was closed within 3 s"
        );
        assert!(next.starts_with("HTTP/1.1 200"), "{next}");
    })
    .await
    .expect("the test did not finish within 30 s");
}

#[tokio::test]
async fn a_request_in_flight_is_never_idle() {
    let app = TestApp::spawn().await;
    let server = Running::serve_with(
        app.router.clone(),
        settings(
            &Arc::default(),
            // Seconds of margin: a busy machine's pause between the two requests must not
            // pass for idleness.
            protections(Some(9 * SECOND), Some(3 * SECOND), 100),
        ),
    );
    let body = r#"{"query":"{ __typename }"}"#;
    let head = format!(
        "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    // The request is in flight, waiting for its body, for longer than the idle timeout.
    tokio::time::sleep(SECOND * 9 / 2).await;
    let response = exchange(&mut stream, body.as_bytes()).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        !response.to_ascii_lowercase().contains("connection: close"),
        "the idle timeout closed a connection with a request in flight: {response}"
    );
    let next = exchange(&mut stream, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(next.starts_with("HTTP/1.1 200"), "{next}");
}

#[tokio::test]
async fn headers_over_the_limits_get_431() {
    let app = TestApp::spawn().await;
    let limited = ConnectionSettings {
        max_header_bytes: 4096,
        max_headers: 16,
        ..ConnectionSettings::default()
    };
    let server = Running::serve_with(app.router.clone(), settings(&Arc::default(), limited));
    // Control: the same requests to a server with roomier limits.
    let roomy = Running::serve_with(
        app.router.clone(),
        settings(
            &Arc::default(),
            ConnectionSettings {
                max_header_bytes: 64 * 1024,
                max_headers: 100,
                ..limited
            },
        ),
    );
    let big = format!(
        "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(5000)
    );
    let many = format!(
        "GET /health HTTP/1.1\r\nHost: x\r\n{}\r\n",
        (0..20)
            .map(|i| format!("X-H{i}: v\r\n"))
            .collect::<String>()
    );
    let fitting = format!(
        "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n{}\r\n",
        "a".repeat(3000),
        (0..10)
            .map(|i| format!("X-H{i}: v\r\n"))
            .collect::<String>()
    );
    assert_eq!(status_of(server.addr, big.as_bytes()).await, 431);
    assert_eq!(status_of(server.addr, many.as_bytes()).await, 431);
    assert_eq!(status_of(server.addr, fitting.as_bytes()).await, 200);
    assert_eq!(status_of(roomy.addr, big.as_bytes()).await, 200);
    assert_eq!(status_of(roomy.addr, many.as_bytes()).await, 200);
}

#[tokio::test]
async fn every_request_carries_the_peer_address() {
    async fn peer(ConnectInfo(peer): ConnectInfo<SocketAddr>) -> String {
        peer.to_string()
    }
    let router = Router::new().route("/peer", get(peer));
    let server = Running::serve_with(
        router,
        settings(&Arc::default(), ConnectionSettings::default()),
    );
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let local = stream.local_addr().unwrap().to_string();
    for _ in 0..2 {
        let response = exchange(&mut stream, b"GET /peer HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(response.ends_with(&local), "{response} is not from {local}");
    }
}

#[tokio::test]
async fn connections_are_shared_out_between_threads_and_each_stays_on_its_own() {
    async fn thread() -> String {
        std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_owned()
    }
    async fn slow() -> &'static str {
        tokio::time::sleep(Duration::from_millis(500)).await;
        "done"
    }
    let router = || {
        Router::new()
            .route("/thread", get(thread))
            .route("/slow", get(slow))
    };
    let listener = loopback_listener();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(serve(
        listener,
        router(),
        async move {
            let _ = stopped.await;
        },
        ServeSettings {
            workers: vec![router(), router()],
            ..settings(&Arc::default(), ConnectionSettings::default())
        },
    ));
    let body = |response: String| response.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    let mut streams = Vec::new();
    let mut threads = Vec::new();
    for _ in 0..6 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let first = body(exchange(&mut stream, b"GET /thread HTTP/1.1\r\nHost: x\r\n\r\n").await);
        for _ in 0..3 {
            let again =
                body(exchange(&mut stream, b"GET /thread HTTP/1.1\r\nHost: x\r\n\r\n").await);
            assert_eq!(
                again, first,
                "a connection's requests moved between threads"
            );
        }
        streams.push(stream);
        threads.push(first);
    }
    // Three threads (the calling one and two workers), two connections each: each new
    // connection went to the thread serving the fewest.
    let mut counts = BTreeMap::new();
    for thread in &threads {
        *counts.entry(thread.as_str()).or_insert(0) += 1;
    }
    assert_eq!(counts.len(), 3, "{threads:?}");
    assert!(counts.values().all(|&n| n == 2), "{counts:?}");
    let workers: Vec<usize> = (0..threads.len())
        .filter(|&i| threads[i].starts_with("dynarelay-worker-"))
        .collect();
    assert_eq!(workers.len(), 4, "{threads:?}");
    // A request in flight on a worker thread when shutdown comes still gets its answer, and
    // `serve` returns once the workers have drained.
    let stream = &mut streams[workers[0]];
    stream
        .write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(stop);
    assert_eq!(body(response(stream).await), "done");
    tokio::time::timeout(5 * SECOND, server)
        .await
        .expect("serve did not return within 5 s of shutdown")
        .unwrap()
        .unwrap();
}
