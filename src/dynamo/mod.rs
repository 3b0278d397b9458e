//! DynamoDB: client construction, the model's tables (creating and checking them), the store
//! that runs reads and writes on items and keys, and seeding tables from a file of items in
//! DynamoDB's typed JSON. Nothing here knows about GraphQL.

mod holds;
pub mod response_reader;
pub mod sample;
pub mod seed;
pub mod store;
pub mod tables;
pub mod typed_json;

use std::time::Duration;

use aws_config::{
    BehaviorVersion, Region, retry::RetryConfig,
    stalled_stream_protection::StalledStreamProtectionConfig, timeout::TimeoutConfig,
};
use aws_sdk_dynamodb::{Client, config::Credentials};

pub use holds::order as scalar_order;
pub use store::{
    Failures, FilterTest, Keep, ReadPlan, ReadSpec, Row, SortKeyCondition, Store, StoreError,
    Updated,
};
pub use tables::Tables;

/// A DynamoDB item: attribute names to values.
pub type Item = std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>;

/// How the SDK retries and times out each DynamoDB call.
///
/// Retries use the SDK's standard mode: throttling (`ThrottlingException`,
/// `ProvisionedThroughputExceededException`), 5xx answers, timeouts and broken connections are
/// retried with jittered exponential backoff, up to `max_attempts` attempts in all.
///
/// The SDK's stalled-stream protection is turned off: DynamoDB's answers are small JSON bodies
/// read whole inside each attempt, so `attempt_timeout` already ends an attempt whose answer
/// stops coming (tests/api/outages.rs, `a_stalled_answer_body_is_cut_by_the_attempt_timeout`),
/// and the protection's interceptor and body wrapper cost every call CPU (git history of
/// docs/src/benchmarks.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SdkSettings {
    /// Attempts per call, the first included (1 disables retries).
    pub max_attempts: u32,
    /// The longest wait before the first retry; each further retry may wait twice as long.
    pub initial_backoff: Duration,
    /// The longest wait before any retry.
    pub max_backoff: Duration,
    /// Time to establish a connection.
    pub connect_timeout: Duration,
    /// Time for one attempt, connection included.
    pub attempt_timeout: Duration,
    /// Time for the whole call, retries and backoff included.
    pub operation_timeout: Duration,
}

impl Default for SdkSettings {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(2),
            attempt_timeout: Duration::from_secs(3),
            operation_timeout: Duration::from_secs(10),
        }
    }
}

impl SdkSettings {
    fn retry(&self) -> RetryConfig {
        RetryConfig::standard()
            .with_max_attempts(self.max_attempts.max(1))
            .with_initial_backoff(self.initial_backoff)
            .with_max_backoff(self.max_backoff)
    }

    fn timeouts(&self) -> TimeoutConfig {
        TimeoutConfig::builder()
            .connect_timeout(self.connect_timeout)
            .operation_attempt_timeout(self.attempt_timeout)
            .operation_timeout(self.operation_timeout)
            .build()
    }
}

/// Builds a client from the standard AWS chain: `AWS_REGION`, profiles, credentials, and
/// `AWS_ENDPOINT_URL_DYNAMODB` for a local endpoint, with the default [`SdkSettings`].
pub async fn client_from_env() -> Client {
    client_from_env_with(&SdkSettings::default()).await
}

/// [`client_from_env`] with the given retries and timeouts.
pub async fn client_from_env_with(settings: &SdkSettings) -> Client {
    Client::new(&sdk_config(settings).await)
}

/// The SDK's settings from the environment, with `settings`' retries and timeouts.
async fn sdk_config(settings: &SdkSettings) -> aws_config::SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .retry_config(settings.retry())
        .timeout_config(settings.timeouts())
        // Bounded by the attempt timeout instead (see `SdkSettings`).
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
        .load()
        .await
}

/// A client as [`client_from_env_with`] makes it, or why it cannot call DynamoDB at all, in a
/// sentence, when the environment gives no region or no credentials (so that a command says
/// that, instead of a failed call's chain of SDK errors). Runs the SDK's credential provider
/// chain once.
pub async fn usable_client_from_env_with(settings: &SdkSettings) -> Result<Client, &'static str> {
    use aws_sdk_dynamodb::config::ProvideCredentials as _;
    let shared = sdk_config(settings).await;
    if shared.region().is_none() {
        return Err("no AWS region is set (AWS_REGION, or a profile's `region` with AWS_PROFILE)");
    }
    if let Some(credentials) = shared.credentials_provider()
        && credentials.provide_credentials().await.is_err()
    {
        return Err(
            "no AWS credentials were found (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a \
             profile, SSO, or a role)",
        );
    }
    Ok(Client::new(&shared))
}

/// The same client, counting the attempts of each call for its trace span (see
/// [`crate::telemetry::counting_attempts`]): for servers that export traces.
pub fn counting_attempts(client: &Client) -> Client {
    Client::from_conf(
        client
            .config()
            .to_builder()
            .interceptor(crate::telemetry::CountAttempts)
            .build(),
    )
}

/// The configuration of an SDK client (`$sdk`: aws_sdk_dynamodb or aws_sdk_dynamodbstreams, whose
/// `Config` builders have the same methods but no common trait) for a DynamoDB Local endpoint.
macro_rules! local_config {
    ($sdk:ident, $endpoint_url:expr, $settings:expr) => {{
        let settings: &SdkSettings = $settings;
        $sdk::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new(
                "local",
                "local",
                None,
                None,
                "dynarelay-local",
            ))
            .endpoint_url($endpoint_url)
            .retry_config(settings.retry())
            .timeout_config(settings.timeouts())
            // Bounded by the attempt timeout instead (see `SdkSettings`).
            .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
            .build()
    }};
}

/// A DynamoDB Streams client from the standard AWS chain, as [`client_from_env_with`] builds the
/// DynamoDB client. Its endpoint is `AWS_ENDPOINT_URL_DYNAMODB_STREAMS` when set, else
/// `AWS_ENDPOINT_URL_DYNAMODB` when that is (DynamoDB Local serves both APIs on one port), else
/// the region's.
pub async fn streams_client_from_env_with(
    settings: &SdkSettings,
) -> aws_sdk_dynamodbstreams::Client {
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .retry_config(settings.retry())
        .timeout_config(settings.timeouts())
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled());
    let own = std::env::var_os("AWS_ENDPOINT_URL_DYNAMODB_STREAMS").filter(|v| !v.is_empty());
    if own.is_none()
        && let Some(endpoint) = std::env::var("AWS_ENDPOINT_URL_DYNAMODB")
            .ok()
            .filter(|v| !v.is_empty())
    {
        loader = loader.endpoint_url(endpoint);
    }
    aws_sdk_dynamodbstreams::Client::new(&loader.load().await)
}

/// Builds a client for a DynamoDB Local endpoint with a fixed region and dummy credentials, so
/// nothing ever looks for real credentials (or asks the EC2 metadata service for them).
pub fn client_for_local(endpoint_url: &str) -> Client {
    client_for_local_with(endpoint_url, &SdkSettings::default())
}

/// A DynamoDB Streams client for the same DynamoDB Local endpoint as [`client_for_local`], with
/// the same region, dummy credentials and default [`SdkSettings`]: DynamoDB Local serves the
/// Streams API on its own port.
pub fn streams_client_for_local(endpoint_url: &str) -> aws_sdk_dynamodbstreams::Client {
    aws_sdk_dynamodbstreams::Client::from_conf(local_config!(
        aws_sdk_dynamodbstreams,
        endpoint_url,
        &SdkSettings::default()
    ))
}

/// [`client_for_local`] with the given retries and timeouts.
pub fn client_for_local_with(endpoint_url: &str, settings: &SdkSettings) -> Client {
    Client::from_conf(local_config!(aws_sdk_dynamodb, endpoint_url, settings))
}
