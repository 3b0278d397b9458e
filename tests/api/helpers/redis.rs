//! A real `redis-server` (Debian's package; `scripts/test` finds it and names it in
//! `DYNARELAY_TEST_REDIS_SERVER`) on a loopback port, keeping nothing on disk, the change
//! relay (`dynarelay relay`) feeding it, and `serve` instances reading it. All stop when dropped.

use std::{
    net::{SocketAddr, TcpStream},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use super::{ModelApp, dynarelay_command, endpoint, model_file, spawn_serve};

/// A `redis-server` of its own.
pub struct RedisServer {
    port: u16,
    server: Child,
}

fn redis_server() -> std::path::PathBuf {
    std::env::var_os("DYNARELAY_TEST_REDIS_SERVER")
        .expect(
            "DYNARELAY_TEST_REDIS_SERVER is not set: run the tests with scripts/test, which finds \
             redis-server (apt-get install redis-server)",
        )
        .into()
}

/// Starts `redis-server` on `port`, in memory only; `None` when it does not listen (the port
/// was taken in between).
fn start_on(port: u16) -> Option<Child> {
    let mut server = spawn_redis(Command::new(redis_server()).args([
        "--bind",
        "127.0.0.1",
        "--port",
        &port.to_string(),
    ]));
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        // Another test's server may hold the port: only this process's answer counts.
        if serves(port, server.id()) {
            return Some(server);
        }
        if server.try_wait().expect("redis-server's status").is_some() {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = server.kill();
    let _ = server.wait();
    None
}

/// Starts `command` (`redis-server` with its flags) keeping nothing on disk.
fn spawn_redis(command: &mut Command) -> Child {
    command
        .args(["--save", "", "--appendonly", "no"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("redis-server starts")
}

/// Whether the Redis listening on `port` is the process `pid` (`INFO server`'s `process_id`).
fn serves(port: u16, pid: u32) -> bool {
    use std::io::{BufRead, BufReader, Read, Write};
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if stream.write_all(b"INFO server\r\n").is_err() {
        return false;
    }
    // The answer is one bulk string: `$<length>`, then that many bytes.
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    if reader.read_line(&mut head).is_err() {
        return false;
    }
    let Some(length) = head
        .trim_end()
        .strip_prefix('$')
        .and_then(|n| n.parse().ok())
    else {
        return false;
    };
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return false;
    }
    let wanted = format!("process_id:{pid}");
    String::from_utf8_lossy(&body)
        .lines()
        .any(|line| line.trim_end() == wanted)
}

impl RedisServer {
    /// A server on a free loopback port.
    pub fn start() -> Self {
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free loopback port")
                .port();
            if let Some(server) = start_on(port) {
                return Self { port, server };
            }
        }
        panic!("redis-server did not start");
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops it and starts a new one on the same port, with nothing of what it held (as Redis
    /// without persistence comes back).
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    /// Stops it: calls to it fail until [`RedisServer::start_again`].
    pub fn stop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }

    /// Starts it again on its port, with nothing of what it held.
    pub fn start_again(&mut self) {
        // The port is free again once the old process is gone; retried while the kernel lets go.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(server) = start_on(self.port) {
                self.server = server;
                return;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not start again"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// `dynarelay relay` for `app`'s tables (the model file `model`, its text) into the Redis at
/// `url`, polling the stream often, with leases of 3 s (a dead relay is replaced within the
/// test's patience, and a busy machine still renews in time), with its health checks on a
/// loopback port.
pub struct Relay {
    relay: Child,
    /// Its health listener's address.
    health: String,
    /// Its log's lines so far.
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Relay {
    pub fn start(app: &ModelApp, model: &str, url: &str) -> Self {
        Self::start_with(app, model, url, &[])
    }

    /// [`Relay::start`], with `env` (name, value) set too.
    pub fn start_with(app: &ModelApp, model: &str, url: &str, env: &[(&str, &str)]) -> Self {
        let mut relay = dynarelay_command(&endpoint())
            .arg("relay")
            .envs(env.iter().copied())
            .env("DYNARELAY_MODEL", model_file(model))
            .env("DYNARELAY_TABLE_PREFIX", &app.prefix)
            .env("DYNARELAY_REDIS_URL", url)
            .env("DYNARELAY_STREAM_POLL_INTERVAL_MS", "50")
            .env("DYNARELAY_LEASE_PERIOD_MS", "3000")
            .env("DYNARELAY_HEALTH_LISTEN", "127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("dynarelay relay starts");
        // Its log, passed on, and the address of its health listener read from it.
        let log = relay.stderr.take().expect("the relay's log");
        let (found, address) = std::sync::mpsc::channel();
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = std::sync::Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(log)).map_while(Result::ok)
            {
                eprintln!("{line}");
                kept.lock().unwrap().push(line.clone());
                if line.contains("health checks are served")
                    && let Some(at) = line.split("address=").nth(1)
                {
                    let _ = found.send(at.split_whitespace().next().unwrap_or_default().to_owned());
                }
            }
        });
        let health = address
            .recv_timeout(Duration::from_secs(30))
            .expect("the relay logs its health listener's address");
        Self {
            relay,
            health,
            log: lines,
        }
    }

    /// Waits until its log has a line holding `text` (a missing one fails the test).
    pub fn wait_for_log(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.log.lock().unwrap().iter().any(|l| l.contains(text)) {
            assert!(Instant::now() < deadline, "the relay did not log {text:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends it `SIGHUP`, as a service manager asking for a reload does.
    pub fn hang_up(&self) {
        super::signal(self.relay.id(), "HUP");
    }

    /// Stops it as an orchestrator does (SIGTERM), and waits until it has exited, successfully.
    pub fn terminate(mut self) {
        let pid = self.relay.id().to_string();
        super::run_succeeding(std::process::Command::new("kill").args(["-TERM", &pid]));
        let status = self.relay.wait().expect("the relay exits");
        assert!(status.success(), "the relay exited with {status}");
    }

    /// How many of `table`'s shards it holds the lease of (its `dynarelay_relay_leases`).
    pub async fn leases(&self, table: &str) -> f64 {
        self.metric(&format!("dynarelay_relay_leases{{table=\"{table}\"}}"))
            .await
    }

    /// The value of its metric `name` (with its labels), 0 when it has none yet.
    pub async fn metric(&self, name: &str) -> f64 {
        let text = reqwest::get(self.url("/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        super::metric(&text, name)
    }

    /// The URL of `path` on its health listener.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.health)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.relay.kill();
        let _ = self.relay.wait();
    }
}

/// One `serve` instance for the tables under `prefix` (the model file at `model`) reading
/// changes from the Redis at `redis`, listening on a loopback port of its own: the process and
/// its address.
pub fn serve_from_redis(prefix: &str, model: &str, redis: &str) -> (Child, SocketAddr) {
    let (child, addr) = spawn_serve(
        dynarelay_command(&endpoint())
            .env("DYNARELAY_MODEL", model)
            .env("DYNARELAY_TABLE_PREFIX", prefix)
            .env("DYNARELAY_REDIS_URL", redis)
            .args(["serve", "--listen", "127.0.0.1:0"]),
    );
    (child, addr.parse().unwrap())
}

/// `serve` instances and their addresses, killed when dropped (a failing test leaves none
/// running).
pub struct Instances(pub Vec<(Child, SocketAddr)>);

impl Drop for Instances {
    fn drop(&mut self) {
        for (child, _) in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A `redis-server` of its own serving TLS only, with a password, its certificate (for
/// 127.0.0.1) signed by a throwaway certificate authority that `openssl` makes in a directory of
/// its own. Stops when dropped.
pub struct TlsRedisServer {
    port: u16,
    server: Child,
    dir: std::path::PathBuf,
}

/// The password of [`TlsRedisServer`]s: another test's server on the same port refuses it.
const TLS_PASSWORD: &str = "tls-test-password";

fn tls_url(port: u16) -> String {
    format!("rediss://:{TLS_PASSWORD}@127.0.0.1:{port}")
}

impl TlsRedisServer {
    /// A server on a free loopback port, ready.
    pub async fn start() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "dynarelay-redis-tls-{}-{}",
            std::process::id(),
            crate::helpers::unique_prefix()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .current_dir(&dir)
                .args(args)
                .output()
                .expect("openssl runs (apt-get install openssl)");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            &[
                &["req", "-x509"][..],
                &ec,
                &[
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.pem",
                    "-days",
                    "2",
                    "-subj",
                    "/CN=dynarelay test CA",
                ],
            ]
            .concat(),
        );
        openssl(
            &[
                &["req"][..],
                &ec,
                &[
                    "-keyout",
                    "server.key",
                    "-out",
                    "server.csr",
                    "-subj",
                    "/CN=127.0.0.1",
                ],
            ]
            .concat(),
        );
        std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "san.ext",
        ]);
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free loopback port")
                .port();
            let mut server = spawn_redis(
                Command::new(redis_server())
                    .current_dir(&dir)
                    .args(["--bind", "127.0.0.1", "--port", "0"])
                    .args(["--tls-port", &port.to_string()])
                    .args([
                        "--tls-cert-file",
                        "server.pem",
                        "--tls-key-file",
                        "server.key",
                    ])
                    .args(["--tls-ca-cert-file", "ca.pem", "--tls-auth-clients", "no"])
                    .args(["--requirepass", TLS_PASSWORD]),
            );
            // Ready once a TLS connection with the password is taken: only this server can.
            let url = tls_url(port);
            let feed =
                dynarelay::stream::redis_feed::RedisFeed::new(&url, Some(&dir.join("ca.pem")))
                    .expect("a Redis URL");
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if feed.publisher(1_000).await.is_ok() {
                    return Self { port, server, dir };
                }
                if server.try_wait().expect("redis-server's status").is_some()
                    || Instant::now() > deadline
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let _ = server.kill();
            let _ = server.wait();
        }
        panic!("redis-server with TLS did not start");
    }

    /// Its URL, with the password.
    pub fn url(&self) -> String {
        tls_url(self.port)
    }

    /// The PEM file of the certificate authority that signed its certificate.
    pub fn ca_file(&self) -> std::path::PathBuf {
        self.dir.join("ca.pem")
    }
}

impl Drop for TlsRedisServer {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A connection to the Redis at `url`.
pub async fn connect_redis(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Every entry of `table`'s Redis stream, oldest first.
pub async fn stream_entries(url: &str, table: &str) -> Vec<redis::streams::StreamId> {
    use redis::AsyncCommands;
    let all: redis::streams::StreamRangeReply = connect_redis(url)
        .await
        .xrange_all(dynarelay::stream::redis_feed::key(table))
        .await
        .unwrap();
    all.ids
}

/// The `at` of each change entry of `table`'s Redis stream (from its new image), oldest first,
/// and the number of gap entries.
pub async fn relayed_notes(url: &str, table: &str) -> (Vec<i64>, usize) {
    let mut notes = Vec::new();
    let mut gaps = 0;
    for entry in stream_entries(url, table).await {
        match entry.get::<String>("kind").unwrap().as_str() {
            "gap" => gaps += 1,
            _ => {
                let new: serde_json::Value =
                    serde_json::from_str(&entry.get::<String>("new").unwrap()).unwrap();
                notes.push(new["at"]["N"].as_str().unwrap().parse().unwrap());
            }
        }
    }
    (notes, gaps)
}

/// Waits until `table`'s Redis stream holds `count` changes (a missing one fails the test).
pub async fn wait_for_relayed(url: &str, table: &str, count: usize) -> (Vec<i64>, usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let relayed = relayed_notes(url, table).await;
        if relayed.0.len() >= count {
            return relayed;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {count} changes relayed",
            relayed.0.len()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
