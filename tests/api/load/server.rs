//! The `dynarelay serve` process under load: started on a loopback port of its own, its output
//! drained and the last lines kept, killed when dropped.

use std::{
    io::{BufRead, BufReader},
    process::{Child, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use crate::helpers::dynarelay_command;

/// The `dynarelay serve` process; killed when dropped, also when the test panics.
pub(super) struct Server {
    child: Child,
    pub(super) addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub(super) fn start(endpoint: &str, prefix: &str) -> Self {
        let mut command = dynarelay_command(endpoint);
        // Every walker and writer comes from 127.0.0.1, so per-address limits would cap the
        // run at a rate a fast machine passes (a 429 then fails it): off unless asked for, and
        // then on for the one address as well.
        if std::env::var("DYNARELAY_LOAD_RATE_LIMITS").as_deref() == Ok("on") {
            command.env("DYNARELAY_RATE_LIMIT_ADDRESSES", "on");
        } else {
            command
                .env("DYNARELAY_RATE_LIMIT_REQUESTS", "0")
                .env("DYNARELAY_RATE_LIMIT_READ_UNITS", "0");
        }
        let mut child = command
            .arg("serve")
            .env("DYNARELAY_TABLE_PREFIX", prefix)
            .env("DYNARELAY_LISTEN", "127.0.0.1:0")
            // Warnings only, plus the line that says where it listens.
            .env("RUST_LOG", "warn,dynarelay=info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting dynarelay serve");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        // Drain both pipes for the whole run, so that the server never blocks on a full pipe,
        // keeping the last lines for failure messages.
        for pipe in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let log = log.clone();
            let addr_tx = addr_tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    if line.contains("dynarelay is listening")
                        && let Some(addr) = loopback_address(&line)
                    {
                        let _ = addr_tx.send(addr);
                    }
                    let mut log = log.lock().expect("log lock");
                    if log.len() >= 200 {
                        log.remove(0);
                    }
                    log.push(line);
                }
            });
        }
        let mut server = Self {
            child,
            addr: String::new(),
            log,
        };
        match addr_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(addr) => server.addr = addr,
            Err(_) => panic!(
                "serve did not log its address within 30 s:\n{}",
                server.log_tail()
            ),
        }
        server
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(super) fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub(super) async fn wait_ready(&self, http: &reqwest::Client) {
        let url = format!("http://{}/ready", self.addr);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(response) = http.get(&url).send().await
                && response.status() == 200
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "serve was not ready within 30 s:\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub(super) fn log_tail(&self) -> String {
        self.log.lock().expect("log lock").join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `127.0.0.1:PORT` out of a log line, in whichever format the log is written.
fn loopback_address(line: &str) -> Option<String> {
    let start = line.find("127.0.0.1:")?;
    let rest = &line[start + "127.0.0.1:".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (!digits.is_empty()).then(|| format!("127.0.0.1:{digits}"))
}
