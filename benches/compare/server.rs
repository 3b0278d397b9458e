//! The dynarelay servers the bench starts, killed on drop, with the last lines of their output,
//! and the binaries they run.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, ensure};

use super::peer::loopback_aws;

const TEST_RING: &str = "1:KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio";

/// The server, killed on drop.
pub(super) struct Server {
    child: Child,
    pub(super) address: String,
    started: Instant,
}

impl Server {
    /// Starts `binary serve` with the model file `model` on the tables under `prefix`. The
    /// current binary logs to stderr, releases before the model file logged to stdout: the
    /// "dynarelay is listening" line is looked for on both streams, and both are read to the end
    /// so that neither pipe fills up. Binaries before the model file ignore `DYNARELAY_MODEL`
    /// and serve the compiled-in shop.
    pub(super) fn start(
        binary: &Path,
        endpoint: &str,
        prefix: &str,
        model: &str,
    ) -> anyhow::Result<Self> {
        Self::start_with(binary, endpoint, prefix, model, &[])
    }

    /// [`Server::start`] with more environment variables.
    pub(super) fn start_with(
        binary: &Path,
        endpoint: &str,
        prefix: &str,
        model: &str,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let started = Instant::now();
        let mut command = Command::new(binary);
        let mut child = loopback_aws(command.arg("serve"), endpoint)
            .env("DYNARELAY_TABLE_PREFIX", prefix)
            .env("DYNARELAY_MODEL", model)
            .env("DYNARELAY_CURSOR_KEYS", TEST_RING)
            .env("DYNARELAY_LISTEN", "127.0.0.1:0")
            .env("RUST_LOG", "warn,dynarelay=info")
            // Every request comes from 127.0.0.1: the default per-caller rate limits would cap
            // the throughput measured, so they are raised out of the way but left on for that
            // address, and their cost is part of every page's. (Binaries without them ignore
            // these.)
            .env("DYNARELAY_RATE_LIMIT_ADDRESSES", "on")
            .env("DYNARELAY_RATE_LIMIT_REQUESTS", "1000000")
            .env("DYNARELAY_RATE_LIMIT_BURST", "2000000")
            .env("DYNARELAY_RATE_LIMIT_READ_UNITS", "1000000")
            .env("DYNARELAY_RATE_LIMIT_READ_BURST", "2000000")
            // Traces, when the bench is run to measure them (see scripts/bench).
            .envs(std::env::vars().filter(|(name, _)| name.starts_with("DYNARELAY_TRACE_")))
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {} serve", binary.display()))?;
        let (tx, rx) = std::sync::mpsc::channel();
        // The last lines seen, for the error when no address comes.
        let seen = LastLines::follow(&mut child, move |line| {
            if line.contains("dynarelay is listening")
                && let Some(address) = line
                    .split("address=")
                    .nth(1)
                    .and_then(|s| s.split_whitespace().next())
            {
                let _ = tx.send(address.to_owned());
            }
        })?;
        // Disconnected once both streams have ended without the line.
        let mut server = Self {
            child,
            address: String::new(),
            started,
        };
        server.address = rx.recv_timeout(Duration::from_secs(30)).map_err(|e| {
            let seen = seen.text();
            anyhow::anyhow!(
                "{} serve did not log its address ({}); its last output:\n{seen}",
                binary.display(),
                match e {
                    std::sync::mpsc::RecvTimeoutError::Timeout => "within 30 s",
                    std::sync::mpsc::RecvTimeoutError::Disconnected => "before its output ended",
                }
            )
        })?;
        Ok(server)
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Polls `/ready` until it answers 200; the time from spawning the process.
    pub(super) async fn wait_ready(&self) -> anyhow::Result<Duration> {
        let http = reqwest::Client::new();
        let url = format!("http://{}/ready", self.address);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(response) = http.get(&url).send().await
                && response.status() == 200
            {
                return Ok(self.started.elapsed());
            }
            ensure!(Instant::now() < deadline, "not ready within 30 s");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last 20 lines a child process wrote to stdout and stderr, read by a thread per stream.
#[derive(Clone)]
pub(super) struct LastLines(Arc<std::sync::Mutex<Vec<String>>>);

impl LastLines {
    /// Follows `child`'s piped stdout and stderr, calling `on_line` with every line first.
    pub(super) fn follow(
        child: &mut Child,
        on_line: impl Fn(&str) + Clone + Send + 'static,
    ) -> anyhow::Result<Self> {
        let seen = Self(Arc::default());
        let stdout = child.stdout.take().context("no stdout")?;
        let stderr = child.stderr.take().context("no stderr")?;
        let streams: [Box<dyn std::io::Read + Send>; 2] = [Box::new(stdout), Box::new(stderr)];
        for stream in streams {
            let (seen, on_line) = (seen.clone(), on_line.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    on_line(&line);
                    if let Ok(mut lines) = seen.0.lock() {
                        if lines.len() == 20 {
                            lines.remove(0);
                        }
                        lines.push(line);
                    }
                }
            });
        }
        Ok(seen)
    }

    pub(super) fn text(&self) -> String {
        self.0.lock().map(|s| s.join("\n")).unwrap_or_default()
    }
}

/// A dynarelay binary the bench starts, and what it says it is.
pub(super) struct Binary {
    pub(super) path: PathBuf,
    /// Its `--version`, and the commit it was built from when `rev_var` says.
    label: String,
}

impl Binary {
    pub(super) fn new(path: PathBuf, rev_var: &str) -> anyhow::Result<Self> {
        ensure!(path.is_file(), "{} is not a file", path.display());
        let out = Command::new(&path)
            .arg("--version")
            .env_clear()
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .with_context(|| format!("running {} --version", path.display()))?;
        let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let version = if out.status.success() && !version.is_empty() {
            version
        } else {
            "no --version".to_owned()
        };
        let label = match std::env::var(rev_var) {
            Ok(rev) if !rev.trim().is_empty() => format!("{version}, {}", rev.trim()),
            _ => format!("{version}, commit not given ({rev_var})"),
        };
        Ok(Self { path, label })
    }

    pub(super) fn describe(&self) -> String {
        format!("{} ({})", self.path.display(), self.label)
    }
}
