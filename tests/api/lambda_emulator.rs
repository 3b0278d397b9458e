//! cargo-lambda's emulator on loopback and the variables a Lambda runtime gives a function,
//! shared by the API tests (`helpers::LambdaFunction`) and the cold-start benchmark
//! (`benches/cold_start.rs`). `cargo lambda watch --only-lambda-apis` serves the Lambda runtime
//! API, function URLs and invocations on one port, and starts no function itself: the function
//! is a process the caller starts with [`runtime_env`].

use std::{
    ffi::OsString,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// Whether something accepts connections on the loopback `port`.
fn listening(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1))
        .is_ok()
}

/// Starts `cargo_lambda`'s emulator on a free loopback port, with a cleared environment holding
/// only `env` (and `HOME`, where it keeps its state); the port and the process. Panics when it
/// does not start.
pub fn start_emulator(
    cargo_lambda: &Path,
    env: impl IntoIterator<Item = (&'static str, OsString)> + Clone,
) -> (u16, Child) {
    // The emulator takes a port number, not 0: a free one is picked here, and another if it was
    // taken in between.
    for _ in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let mut emulator = Command::new(cargo_lambda)
            .args(["lambda", "watch", "--only-lambda-apis", "-A", "127.0.0.1"])
            .args(["-P", &port.to_string()])
            // It reads the package's metadata.
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_clear()
            .envs(env.clone())
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
            if emulator
                .try_wait()
                .expect("the emulator's status")
                .is_some()
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = emulator.kill();
        let _ = emulator.wait();
    }
    panic!("cargo-lambda's emulator did not start");
}

/// Sets on `command` the variables a Lambda runtime sets, for the emulator on `port`.
pub fn runtime_env(command: &mut Command, port: u16) {
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

/// The function URL on the emulator at `port`, followed by `path`.
pub fn function_url(port: u16, path: &str) -> String {
    format!("http://127.0.0.1:{port}/lambda-url/_{path}")
}
