//! `dynarelay lambda` under cargo-lambda's emulator: `cargo lambda watch --only-lambda-apis`
//! serves the Lambda runtime API and function URLs on a loopback port, and the function is the
//! `dynarelay` binary run as a Lambda's runtime would run it, with the runtime's variables.

use std::process::{Child, Command, Stdio};

use super::{TEST_RING, dynarelay_command, endpoint, tool};
use crate::lambda_emulator::{function_url, runtime_env};

/// The emulator on a free loopback port, with only the variables that point the AWS SDK at
/// DynamoDB Local; the port and the process.
fn start_emulator() -> (u16, Child) {
    crate::lambda_emulator::start_emulator(
        &tool("cargo-lambda"),
        crate::local_aws::local_aws_env(&endpoint()),
    )
}

/// The emulator and one function, on the shop model over the tables under a prefix. Both stop
/// when dropped.
pub struct LambdaFunction {
    port: u16,
    /// The function and the emulator, or the script that runs both.
    processes: Vec<Child>,
}

impl LambdaFunction {
    /// `dynarelay lambda` serving the shop over the tables under `prefix`, with DynamoDB at
    /// `dynamodb` (an auditing proxy, say), the test key ring and `env` besides (flags, as
    /// `DYNARELAY_*` variables).
    pub fn start(dynamodb: &str, prefix: &str, env: &[(&str, &str)]) -> Self {
        let (port, emulator) = start_emulator();
        let mut function = dynarelay_command(dynamodb);
        runtime_env(&mut function, port);
        function.arg("lambda");
        Self::run(port, emulator, function, prefix, env)
    }

    /// The stream events' function as it is deployed: `scripts/package-lambda` packages the
    /// model file at `model` for the tables under `prefix`, and `scripts/run-lambda --template
    /// changes.json` runs the stream function it wrote (the binary as `bootstrap`, made
    /// `dynarelay lambda-relay` by the template's environment), publishing into the Redis at
    /// `redis`.
    pub fn start_packaged_relay(prefix: &str, model: &str, redis: &str) -> Self {
        let out = std::env::temp_dir()
            .join(format!("dynarelay-function-{}", super::unique_prefix()))
            .join("build");
        let packaged = package_lambda(&["--model", model, "--table-prefix", prefix], &out);
        assert!(
            packaged.status.success(),
            "{}",
            String::from_utf8_lossy(&packaged.stderr)
        );
        let redis = format!("DYNARELAY_REDIS_URL={redis}");
        Self::start_packaged_with(
            &endpoint(),
            &out,
            &["--template", "changes.json", "--env", &redis],
        )
    }

    /// As [`LambdaFunction::start`], but the function is the one `scripts/package-lambda` wrote
    /// to `build`, run by the documented command, `scripts/run-lambda --package build --port P`:
    /// its `function/bootstrap` started with no arguments, as AWS Lambda's OS-only runtimes start
    /// a function, with the environment its `template.json` gives it (paths under `/var/task/`
    /// read from `function/`) and the cursor keys, which the template resolves from Secrets
    /// Manager, from the script's environment: the test ring.
    pub fn start_packaged(dynamodb: &str, build: &std::path::Path) -> Self {
        Self::start_packaged_with(dynamodb, build, &[])
    }

    /// As [`LambdaFunction::start_packaged`], with `args` after the script's own (`--template
    /// changes.json`, `--env NAME=VALUE`).
    pub fn start_packaged_with(dynamodb: &str, build: &std::path::Path, args: &[&str]) -> Self {
        // The script takes a port number: a free one is picked, and another if it was taken
        // in between.
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .expect("a free loopback port")
                .port();
            let mut script = Command::new(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/run-lambda"),
            )
            .arg("--package")
            .arg(build)
            .args(["--port", &port.to_string()])
            .args(args)
            .env_clear()
            .envs(crate::local_aws::local_aws_env(dynamodb))
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .env("CARGO_LAMBDA", tool("cargo-lambda"))
            .env("DYNARELAY_CURSOR_KEYS", TEST_RING)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("scripts/run-lambda starts");
            // It prints the function URL once the emulator listens; it exits when it cannot start.
            let stdout = script.stdout.take().expect("the script's output");
            let (listening, told) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                for line in
                    std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(Result::ok)
                {
                    if line.starts_with("function URL: ") {
                        let _ = listening.send(line);
                    }
                }
            });
            match told.recv_timeout(std::time::Duration::from_secs(60)) {
                Ok(line) => {
                    assert_eq!(
                        line,
                        format!("function URL: {}", function_url(port, "/graphql"))
                    );
                    return Self {
                        port,
                        processes: vec![script],
                    };
                }
                Err(_) => stop_all(&mut [script]),
            }
        }
        panic!("scripts/run-lambda did not start the emulator");
    }

    fn run(
        port: u16,
        emulator: Child,
        mut function: Command,
        prefix: &str,
        env: &[(&str, &str)],
    ) -> Self {
        let function = function
            .env("DYNARELAY_TABLE_PREFIX", prefix)
            .env("DYNARELAY_CURSOR_KEYS", TEST_RING)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("dynarelay lambda starts");
        Self {
            port,
            processes: vec![function, emulator],
        }
    }

    /// The function URL, followed by `path`.
    pub fn url(&self, path: &str) -> String {
        function_url(self.port, path)
    }

    /// Where raw events are sent, as `aws lambda invoke` would: the function's answer comes back
    /// as the event's response object.
    pub fn invocations(&self) -> String {
        format!(
            "http://127.0.0.1:{}/2015-03-31/functions/_/invocations",
            self.port
        )
    }
}

impl Drop for LambdaFunction {
    fn drop(&mut self) {
        stop_all(&mut self.processes);
    }
}

/// Stops each of `processes` with SIGTERM (so that `scripts/run-lambda` stops the emulator and
/// the function it started), and with SIGKILL when one has not exited within 10 s.
fn stop_all(processes: &mut [Child]) {
    for child in processes.iter() {
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
    }
    for child in processes.iter_mut() {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Runs `scripts/package-lambda` from the repository's root with `args` and `--out out`, on the
/// suite's own build of dynarelay.
pub fn package_lambda(args: &[&str], out: &std::path::Path) -> std::process::Output {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    Command::new(root.join("scripts/package-lambda"))
        .args(args)
        .arg("--out")
        .arg(out)
        .current_dir(root)
        .env("DYNARELAY_BINARY", env!("CARGO_BIN_EXE_dynarelay"))
        .output()
        .unwrap()
}
