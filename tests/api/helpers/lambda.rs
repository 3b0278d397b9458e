//! `dynarelay lambda` under cargo-lambda's emulator: `cargo lambda watch --only-lambda-apis`
//! serves the Lambda runtime API and function URLs on a loopback port, and the function is the
//! `dynarelay` binary run as a Lambda's runtime would run it, with the runtime's variables.

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use super::{TEST_RING, dynarelay_command, dynarelay_command_at, endpoint, tool};

/// The emulator and one function, on the shop model over the tables under a prefix. Both stop
/// when dropped.
pub struct LambdaFunction {
    port: u16,
    emulator: Child,
    function: Child,
}

/// Whether something accepts connections on the loopback `port`.
fn listening(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1))
        .is_ok()
}

/// Starts the emulator on a free loopback port; the port and the process.
fn start_emulator() -> (u16, Child) {
    // The emulator takes a port number, not 0: a free one is picked here, and another if it was
    // taken in between.
    for _ in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .unwrap()
            .port();
        let mut emulator = Command::new(tool("cargo-lambda"))
            .args(["lambda", "watch", "--only-lambda-apis", "-A", "127.0.0.1"])
            .args(["-P", &port.to_string()])
            // It reads the package's metadata.
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_clear()
            .envs(crate::local_aws::local_aws_env(&endpoint()))
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cargo-lambda starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if listening(port) {
                return (port, emulator);
            }
            if emulator.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = emulator.kill();
        let _ = emulator.wait();
    }
    panic!("cargo-lambda's emulator did not start");
}

impl LambdaFunction {
    /// `dynarelay lambda` serving the shop over the tables under `prefix`, with DynamoDB at
    /// `dynamodb` (an auditing proxy, say), the test key ring and `env` besides (flags, as
    /// `DYNARELAY_*` variables).
    pub fn start(dynamodb: &str, prefix: &str, env: &[(&str, &str)]) -> Self {
        let (port, emulator) = start_emulator();
        let mut function = dynarelay_command(dynamodb);
        Self::runtime_env(&mut function, port);
        function.arg("lambda");
        Self::run(port, emulator, function, prefix, env)
    }

    /// As [`LambdaFunction::start`], but the function is the one `scripts/package-lambda` wrote
    /// to `build`: its `function/bootstrap` started with no arguments, as AWS Lambda's OS-only
    /// runtimes start a function, with the environment its `template.json` gives it. Paths
    /// under `/var/task/` (the function's directory on Lambda) are read from `function/`, and
    /// the cursor keys, which the template resolves from Secrets Manager, are the test ring.
    pub fn start_packaged(dynamodb: &str, build: &std::path::Path) -> Self {
        let template: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(build.join("template.json")).unwrap())
                .expect("the template is JSON");
        let function_dir = build.join("function");
        let variables = template["Resources"]["Api"]["Properties"]["Environment"]["Variables"]
            .as_object()
            .expect("the function's environment");
        let env: Vec<(String, String)> = variables
            .iter()
            .map(|(name, value)| {
                let value = match value.as_str() {
                    Some(path) if path.starts_with("/var/task/") => {
                        let file = function_dir.join(&path["/var/task/".len()..]);
                        file.to_str().expect("a UTF-8 path").to_owned()
                    }
                    Some(text) => text.to_owned(),
                    None => {
                        assert_eq!(name, "DYNARELAY_CURSOR_KEYS", "{value}");
                        TEST_RING.to_owned()
                    }
                };
                (name.clone(), value)
            })
            .collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let prefix = variables["DYNARELAY_TABLE_PREFIX"]
            .as_str()
            .expect("the tables' prefix");
        let (port, emulator) = start_emulator();
        let mut function = dynarelay_command_at(&function_dir.join("bootstrap"), dynamodb);
        Self::runtime_env(&mut function, port);
        Self::run(port, emulator, function, prefix, &env)
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
            emulator,
            function,
        }
    }

    /// Sets the variables a Lambda runtime sets, for the emulator on `port`.
    fn runtime_env(command: &mut Command, port: u16) {
        command
            .env(
                "AWS_LAMBDA_RUNTIME_API",
                format!("http://127.0.0.1:{port}/.rt"),
            )
            // The emulator's function when it starts none itself.
            .env("AWS_LAMBDA_FUNCTION_NAME", "_")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024");
    }

    /// The function URL, followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/lambda-url/_{path}", self.port)
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
        for child in [&mut self.function, &mut self.emulator] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
