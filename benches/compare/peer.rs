//! The Node reference (`DYNARELAY_BENCH_PEER`): its process, and the rows that put its numbers
//! beside dynarelay's or say why it is not measured.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail, ensure};

use super::{
    local_aws,
    server::LastLines,
    table::{Row, row},
};

/// Said beside every comparison with the Node reference.
const PEER_READS: &str =
    "Node reads one Query per page, dynarelay also the user's GetItem (at the same time)";

/// Why the Node reference is no longer measured, also said at once on stderr.
pub(super) fn peer_failed(what: &str, e: &anyhow::Error) -> String {
    let why = format!("{what} failed: {e:#}");
    eprintln!("Node reference: not measured further: {why}");
    why
}

/// A row of dynarelay's value beside the Node reference's, with the ratio dynarelay / Node
/// (`theirs`); or, when the reference is not measured, why (`down`).
pub(super) fn peer_row(
    what: impl Into<String>,
    ours: String,
    theirs: Option<(String, String)>,
    down: Option<&str>,
    note: &str,
) -> Row {
    match (theirs, down) {
        (Some((value, ratio)), None) => row(
            what,
            ours,
            format!("{value} (Node reference)"),
            ratio,
            format!("ratio: dynarelay / Node{note}; {PEER_READS}"),
        ),
        (_, down) => row(
            what,
            ours,
            "not measured",
            "",
            format!(
                "Node reference not measured: {}",
                down.unwrap_or("no samples")
            ),
        ),
    }
}

/// The Node reference (`DYNARELAY_BENCH_PEER` names its `server.mjs`, in a copy of the shared
/// `bench-peer` with its dependencies installed, which `scripts/bench` prepares): Apollo Server 4
/// with the AWS SDK v3 DocumentClient, serving the shop's Purchases table with one Query per page.
/// Killed on drop.
pub(super) struct Peer {
    child: Child,
    /// Where it answers GraphQL POSTs.
    pub(super) url: String,
    /// Its last lines of output, for the error when it does not come up.
    seen: LastLines,
}

/// A child process's environment for DynamoDB Local at `endpoint` and nothing else (see
/// [`local_aws::local_aws_env`]).
pub(super) fn loopback_aws<'c>(command: &'c mut Command, endpoint: &str) -> &'c mut Command {
    command.env_clear().envs(local_aws::local_aws_env(endpoint))
}

impl Peer {
    /// Starts `node script` on a free loopback port, against DynamoDB Local at `endpoint` and
    /// the shop's tables under `prefix`, and waits until it answers a query.
    pub(super) async fn start(script: &Path, endpoint: &str, prefix: &str) -> anyhow::Result<Self> {
        ensure!(script.is_file(), "{} is not a file", script.display());
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut command = Command::new("node");
        let mut child = loopback_aws(command.arg(script), endpoint)
            .env("PORT", port.to_string())
            .env("TABLE_PREFIX", prefix)
            // As it would be deployed.
            .env("NODE_ENV", "production")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting node (is it on PATH?)")?;
        let seen = LastLines::follow(&mut child, |_| ())?;
        let mut peer = Self {
            child,
            url: format!("http://127.0.0.1:{port}/"),
            seen,
        };
        peer.wait_ready().await?;
        Ok(peer)
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Polls with `{ __typename }` until it answers 200, for at most 30 s, and fails at once when
    /// the process ends.
    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait()? {
                // Let the readers take its last lines.
                tokio::time::sleep(Duration::from_millis(100)).await;
                bail!(
                    "node exited ({status}); its last output:\n{}",
                    self.last_output()
                );
            }
            if let Ok(response) = http
                .post(&self.url)
                .header("content-type", "application/json")
                .body(r#"{"query":"{ __typename }"}"#)
                .send()
                .await
                && response.status() == 200
            {
                return Ok(());
            }
            ensure!(
                Instant::now() < deadline,
                "it did not answer within 30 s; its last output:\n{}",
                self.last_output()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn last_output(&self) -> String {
        self.seen.text()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
