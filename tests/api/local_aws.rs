//! The environment of a child process that talks to DynamoDB Local and nothing else, shared by
//! the API tests (`helpers::dynarelay_command`) and the benchmarks (`benches/compare.rs`,
//! `benches/cold_start.rs`).

use std::ffi::OsString;

/// Variables for a child process started with a cleared environment: `PATH` kept, `endpoint` as
/// DynamoDB, a region, dummy credentials, no AWS config files, and the EC2 metadata service
/// disabled, so that nothing looks for credentials on the network or in files.
pub fn local_aws_env(endpoint: &str) -> [(&'static str, OsString); 8] {
    [
        ("PATH", std::env::var_os("PATH").unwrap_or_default()),
        ("AWS_ENDPOINT_URL_DYNAMODB", endpoint.into()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", "local".into()),
        ("AWS_SECRET_ACCESS_KEY", "local".into()),
        ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ("AWS_CONFIG_FILE", "/dev/null".into()),
        ("AWS_SHARED_CREDENTIALS_FILE", "/dev/null".into()),
    ]
}
