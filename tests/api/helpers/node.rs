//! Node.js client scripts in `tests/clients`, run with a time limit and loopback-only settings.

use std::time::Duration;

/// What a Node.js client script printed, and how it ended.
#[derive(Debug)]
pub struct NodeRun {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl NodeRun {
    /// Panics with everything the script printed unless it succeeded.
    pub fn assert_success(&self) -> &Self {
        assert!(
            self.success,
            "the client script failed\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Panics unless the script failed, and printed `needle` on stderr when it did.
    pub fn assert_failure_mentioning(&self, needle: &str) -> &Self {
        assert!(
            !self.success,
            "the client script passed where it must fail\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        assert!(
            self.stderr.contains(needle),
            "the client script failed, but not with `{needle}`\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Starts `node <script> <args>` in `tests/clients` with its standard streams piped; killed
/// when dropped.
fn spawn_node(script: &str, args: &[&str], env: &[(&str, &str)]) -> tokio::process::Child {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients");
    assert!(
        dir.join("node_modules").is_dir(),
        "tests/clients/node_modules is missing: run the tests with scripts/test, which installs them with `npm ci`"
    );
    tokio::process::Command::new("node")
        .arg(script)
        .args(args)
        .current_dir(&dir)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run node: {err}"))
}

/// Runs `node <script> <args>` in `tests/clients` (whose packages `scripts/test` installs from
/// the lockfile), with a time limit, and with loopback-only settings in the environment.
pub async fn run_node(script: &str, args: &[&str], env: &[(&str, &str)]) -> NodeRun {
    run_node_with_input(script, args, env, b"").await
}

/// [`run_node`], with `input` on the script's standard input.
pub async fn run_node_with_input(
    script: &str,
    args: &[&str],
    env: &[(&str, &str)],
    input: &[u8],
) -> NodeRun {
    use tokio::io::AsyncWriteExt;
    let mut child = spawn_node(script, args, env);
    let mut stdin = child.stdin.take().expect("a piped stdin");
    stdin
        .write_all(input)
        .await
        .expect("writing the script's input");
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(150), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("node {script} did not finish within 150 s"))
        .unwrap_or_else(|err| panic!("cannot run node: {err}"));
    NodeRun {
        success: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The settings every writer runs with: DynamoDB Local's region and dummy credentials, and no
/// instance metadata.
pub const LOCAL_AWS: [(&str, &str); 4] = [
    ("AWS_REGION", "us-east-1"),
    ("AWS_ACCESS_KEY_ID", "local"),
    ("AWS_SECRET_ACCESS_KEY", "local"),
    ("AWS_EC2_METADATA_DISABLED", "true"),
];

/// Has `tests/clients/writers/<tool>.mjs` write its data set into `table` with the tool's own
/// npm library, and returns what the library read back (the ground truth each writer prints).
pub async fn written_by(tool: &str, table: &str) -> serde_json::Value {
    written_with(tool, table, &[]).await
}

/// [`written_by`] with the writer's own `options` (such as ElectroDB's `--migration`).
pub async fn written_with(tool: &str, table: &str, options: &[&str]) -> serde_json::Value {
    let endpoint = crate::helpers::endpoint();
    let mut args = vec![endpoint.as_str(), table];
    args.extend(options);
    let run = run_node(&format!("writers/{tool}.mjs"), &args, &LOCAL_AWS).await;
    run.assert_success();
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{tool}'s writer printed no JSON ({e}): {}", run.stdout))
}

/// Has the tool's own npm library read items of `table` back (`writers/<tool>.mjs --read`):
/// `request` is `{ "get": [{ "entity", "key" }], "query": [{ "name", "params" }] }`, and the
/// answer `{ "get": [item or null], "query": [[items]] }`, each as the library returns it.
pub async fn read_back(tool: &str, table: &str, request: &serde_json::Value) -> serde_json::Value {
    let endpoint = crate::helpers::endpoint();
    let run = run_node_with_input(
        &format!("writers/{tool}.mjs"),
        &[&endpoint, table, "--read"],
        &LOCAL_AWS,
        request.to_string().as_bytes(),
    )
    .await;
    run.assert_success();
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{tool}'s reader printed no JSON ({e}): {}", run.stdout))
}

/// A Node.js script that serves until its standard input closes (see [`serve_node`]).
pub struct NodeServer {
    child: tokio::process::Child,
    /// The line of JSON the script printed once it was ready.
    pub ready: serde_json::Value,
}

impl NodeServer {
    /// Closes the script's standard input and waits for it to end.
    pub async fn stop(mut self) {
        drop(self.child.stdin.take());
        let _ = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
    }
}

/// Starts `node <script> <args>` in `tests/clients`, as [`run_node`] does, and waits (with a
/// time limit) for the one line of JSON it prints when it serves; it serves until the returned
/// [`NodeServer`] is stopped or dropped.
pub async fn serve_node(script: &str, args: &[&str], env: &[(&str, &str)]) -> NodeServer {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let mut child = spawn_node(script, args, env);
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().expect("a piped stdout"));
    let mut line = String::new();
    let read = tokio::time::timeout(Duration::from_secs(120), stdout.read_line(&mut line)).await;
    if !matches!(read, Ok(Ok(n)) if n > 0) {
        let _ = child.start_kill();
        let mut stderr = String::new();
        if let Some(mut err) = child.stderr.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), err.read_to_string(&mut stderr))
                .await;
        }
        panic!("node {script} did not start serving\n--- stderr\n{stderr}");
    }
    let ready = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("node {script} printed no JSON when ready ({e}): {line}"));
    NodeServer { child, ready }
}

/// A Node.js script that prints one line of JSON per thing it sees, as it sees it, until its
/// standard input closes (see [`node_lines`]); killed when dropped.
pub struct NodeLines {
    script: String,
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl NodeLines {
    /// The script's next line, or `None` when none comes within `wait`. A script that ends, or
    /// prints anything but JSON, fails the test with what it printed on stderr.
    pub async fn next_within(&mut self, wait: Duration) -> Option<serde_json::Value> {
        let line = match tokio::time::timeout(wait, self.lines.next_line()).await {
            Err(_) => return None,
            Ok(Ok(Some(line))) => line,
            Ok(_) => {
                let stderr = self.stderr().await;
                panic!("node {} ended early\n--- stderr\n{stderr}", self.script)
            }
        };
        Some(serde_json::from_str(&line).unwrap_or_else(|e| {
            panic!(
                "node {} printed a line that is not JSON ({e}): {line}",
                self.script
            )
        }))
    }

    /// Closes the script's standard input and returns every line it printed after that, once it
    /// has ended (with a time limit), which it must do successfully.
    pub async fn finish(mut self) -> Vec<serde_json::Value> {
        drop(self.child.stdin.take());
        let mut rest = Vec::new();
        let read = async {
            while let Ok(Some(line)) = self.lines.next_line().await {
                rest.push(line);
            }
            self.child.wait().await
        };
        let status = tokio::time::timeout(Duration::from_secs(150), read)
            .await
            .unwrap_or_else(|_| panic!("node {} did not end within 150 s", self.script))
            .unwrap_or_else(|err| panic!("cannot run node: {err}"));
        if !status.success() {
            let stderr = self.stderr().await;
            panic!("node {} failed\n--- stderr\n{stderr}", self.script);
        }
        rest.iter()
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| {
                    panic!(
                        "node {} printed a line that is not JSON ({e}): {line}",
                        self.script
                    )
                })
            })
            .collect()
    }

    /// What the script printed on stderr (it is killed first, if it still runs).
    async fn stderr(&mut self) -> String {
        use tokio::io::AsyncReadExt;
        let _ = self.child.start_kill();
        let mut text = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            let _ =
                tokio::time::timeout(Duration::from_secs(10), err.read_to_string(&mut text)).await;
        }
        text
    }
}

/// Starts `node <script> <args>` in `tests/clients`, as [`run_node`] does, reading what it
/// prints line by line ([`NodeLines`]).
pub fn node_lines(script: &str, args: &[&str], env: &[(&str, &str)]) -> NodeLines {
    use tokio::io::AsyncBufReadExt;
    let mut child = spawn_node(script, args, env);
    let stdout = child.stdout.take().expect("a piped stdout");
    NodeLines {
        script: script.to_owned(),
        child,
        lines: tokio::io::BufReader::new(stdout).lines(),
    }
}
