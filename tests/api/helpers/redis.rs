//! A real `redis-server` (Debian's package; `scripts/test` finds it and names it in
//! `DYNARELAY_TEST_REDIS_SERVER`) on a loopback port, keeping nothing on disk, and the change
//! relay (`dynarelay relay`) feeding it. Both stop when dropped.

use std::{
    net::TcpStream,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use super::{ModelApp, dynarelay_command, endpoint, model_file};

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
    let mut server = Command::new(redis_server())
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("redis-server starts");
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
/// `url`, polling the stream often, with its health checks on a loopback port.
pub struct Relay {
    relay: Child,
    /// Its health listener's address.
    health: String,
    /// Its log's lines so far.
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Relay {
    pub fn start(app: &ModelApp, model: &str, url: &str) -> Self {
        let mut relay = dynarelay_command(&endpoint())
            .arg("relay")
            .env("DYNARELAY_MODEL", model_file(model))
            .env("DYNARELAY_TABLE_PREFIX", &app.prefix)
            .env("DYNARELAY_REDIS_URL", url)
            .env("DYNARELAY_STREAM_POLL_INTERVAL_MS", "50")
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
