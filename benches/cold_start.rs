//! The Lambda cold start: from starting `dynarelay lambda` (this build's release binary, the
//! table check off, as deployed) to its first answer, a lookup that reads DynamoDB, under
//! cargo-lambda's emulator on loopback (`lambda/cold_start_to_first_answer`). The invocation is
//! queued before the process starts, as AWS holds the event that wakes a new container, so the
//! time covers the process start, the configuration, the schema build, the SDK client and the
//! first DynamoDB call.
//!
//! Run: `scripts/bench-cold-start`, which starts DynamoDB Local and installs cargo-lambda
//! (`DYNARELAY_BENCH_DYNAMODB_ENDPOINT`, `DYNARELAY_BENCH_CARGO_LAMBDA`).

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use criterion::{Criterion, criterion_group, criterion_main};

const KEY: &str = "1:KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio";
const PREFIX: &str = "coldstart_";

fn required(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| panic!("{var} is not set: run scripts/bench-cold-start"))
}

/// The binary with only the environment a Lambda function would have: the AWS variables (a
/// local endpoint, dummy credentials, no metadata service), the model and the key.
fn dynarelay(endpoint: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dynarelay"));
    command
        .env_clear()
        .env("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .env(
            "DYNARELAY_MODEL",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/shop/dynarelay.toml"),
        )
        .env("DYNARELAY_TABLE_PREFIX", PREFIX)
        .env("DYNARELAY_CURSOR_KEYS", KEY)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// cargo-lambda's emulator on a free loopback port; the port and the process.
fn emulator() -> (u16, Child) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(required("DYNARELAY_BENCH_CARGO_LAMBDA"))
        .args(["lambda", "watch", "--only-lambda-apis", "-A", "127.0.0.1"])
        .args(["-P", &port.to_string()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cargo-lambda starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the emulator did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    (port, child)
}

fn cold_start(c: &mut Criterion) {
    let endpoint = required("DYNARELAY_BENCH_DYNAMODB_ENDPOINT");
    let created = dynarelay(&endpoint)
        .args(["tables", "create"])
        .status()
        .expect("tables create runs");
    assert!(created.success(), "tables create failed");
    let (port, mut emulator) = emulator();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let http = reqwest::Client::new();
    let invoke = format!("http://127.0.0.1:{port}/lambda-url/_/graphql");
    let mut group = c.benchmark_group("lambda");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("cold_start_to_first_answer", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let mut function = dynarelay(&endpoint)
                    .arg("lambda")
                    .env(
                        "AWS_LAMBDA_RUNTIME_API",
                        format!("http://127.0.0.1:{port}/.rt"),
                    )
                    .env("AWS_LAMBDA_FUNCTION_NAME", "_")
                    .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
                    .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024")
                    .spawn()
                    .expect("dynarelay lambda starts");
                let answer = runtime.block_on(async {
                    http.post(&invoke)
                        .json(
                            &serde_json::json!({ "query": "{ user(userId: \"u-1\") { userId } }" }),
                        )
                        .send()
                        .await
                        .expect("the function answers")
                        .text()
                        .await
                        .expect("an answer")
                });
                total += start.elapsed();
                assert!(answer.contains(r#""user":null"#), "{answer}");
                let _ = function.kill();
                let _ = function.wait();
            }
            total
        });
    });
    group.finish();
    let _ = emulator.kill();
    let _ = emulator.wait();
}

criterion_group!(benches, cold_start);
criterion_main!(benches);
