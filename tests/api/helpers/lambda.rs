//! `dynarelay lambda` under cargo-lambda's emulator: `cargo lambda watch --only-lambda-apis`
//! serves the Lambda runtime API and function URLs on a loopback port, and the function is the
//! `dynarelay` binary run as a Lambda's runtime would run it, with the runtime's variables.

use std::process::{Child, Command, Stdio};

use super::{TEST_RING, dynarelay_command, dynarelay_command_at, endpoint, tool};
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
    emulator: Child,
    function: Child,
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
        runtime_env(&mut function, port);
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
        for child in [&mut self.function, &mut self.emulator] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
