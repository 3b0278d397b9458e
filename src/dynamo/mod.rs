//! DynamoDB: client construction, the table layout, item <-> record mapping, and the store that
//! runs reads and writes. Nothing here knows about GraphQL.

pub mod model;
pub mod store;
pub mod tables;

use std::time::Duration;

use aws_config::{BehaviorVersion, Region, retry::RetryConfig, timeout::TimeoutConfig};
use aws_sdk_dynamodb::{Client, config::Credentials};

pub use store::{PurchaseFilter, ReadPlan, Row, Store, StoreError};
pub use tables::Tables;

/// Builds a client from the standard AWS chain: `AWS_REGION`, profiles, credentials, and
/// `AWS_ENDPOINT_URL_DYNAMODB` for a local endpoint.
pub async fn client_from_env() -> Client {
    let shared = aws_config::defaults(BehaviorVersion::latest())
        .retry_config(retry_config())
        .timeout_config(timeout_config())
        .load()
        .await;
    Client::new(&shared)
}

/// Builds a client for a DynamoDB Local endpoint with a fixed region and dummy credentials, so
/// nothing ever looks for real credentials (or asks the EC2 metadata service for them).
pub fn client_for_local(endpoint_url: &str) -> Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(
            "local",
            "local",
            None,
            None,
            "dynarelay-local",
        ))
        .endpoint_url(endpoint_url)
        .retry_config(retry_config())
        .timeout_config(timeout_config())
        .build();
    Client::from_conf(config)
}

fn retry_config() -> RetryConfig {
    RetryConfig::standard().with_max_attempts(3)
}

fn timeout_config() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(2))
        .operation_attempt_timeout(Duration::from_secs(3))
        .operation_timeout(Duration::from_secs(10))
        .build()
}
