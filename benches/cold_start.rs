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
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../tests/api/lambda_emulator.rs"]
mod lambda_emulator;
#[path = "../tests/api/local_aws.rs"]
mod local_aws;

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
        .envs(local_aws::local_aws_env(endpoint))
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

fn cold_start(c: &mut Criterion) {
    let endpoint = required("DYNARELAY_BENCH_DYNAMODB_ENDPOINT");
    let created = dynarelay(&endpoint)
        .args(["tables", "create"])
        .status()
        .expect("tables create runs");
    assert!(created.success(), "tables create failed");
    let (port, mut emulator) = lambda_emulator::start_emulator(
        Path::new(&required("DYNARELAY_BENCH_CARGO_LAMBDA")),
        local_aws::local_aws_env(&endpoint),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let http = reqwest::Client::new();
    let invoke = lambda_emulator::function_url(port, "/graphql");
    let mut group = c.benchmark_group("lambda");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("cold_start_to_first_answer", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let mut command = dynarelay(&endpoint);
                lambda_emulator::runtime_env(command.arg("lambda"), port);
                let mut function = command.spawn().expect("dynarelay lambda starts");
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
