//! `relay` and `lambda-relay` flags.

use clap::Args;

use super::ModelArgs;

/// Where relays publish changes.
#[derive(Debug, Args)]
pub struct RedisArgs {
    /// The Redis the fleet's `serve` instances read changes from
    /// (`redis://[user:password@]host:port[/db]`, or `rediss://` for TLS).
    #[arg(long, env = "DYNARELAY_REDIS_URL")]
    pub redis_url: String,

    /// A PEM file of the certificate authority to trust for a `rediss://` Redis, instead of the
    /// system's (for a Redis whose certificate a private CA signed).
    #[arg(long, env = "DYNARELAY_REDIS_CA_FILE")]
    pub redis_ca_file: Option<std::path::PathBuf>,

    /// About how many changes each table's Redis stream keeps (`XADD … MAXLEN ~`): an instance
    /// cut off from Redis for longer than it takes to write this many changes tells its
    /// subscribers to resume by cursor.
    #[arg(long, env = "DYNARELAY_REDIS_MAX_LEN", default_value_t = 100_000,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1_000..=100_000_000))]
    pub redis_max_len: usize,
}

/// `relay` flags.
#[derive(Debug, Args)]
pub struct RelayArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub model: ModelArgs,

    #[command(flatten)]
    #[allow(missing_docs)]
    pub redis: RedisArgs,

    /// Wait, in milliseconds, before reading again a stream shard that had nothing new (as for
    /// `serve`).
    #[arg(long, env = "DYNARELAY_STREAM_POLL_INTERVAL_MS", default_value_t = 250,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub stream_poll_interval_ms: u64,

    /// An address serving the relay's /health, /ready (200 once it reads every table's stream)
    /// and /metrics, for probes and Prometheus. None by default.
    #[arg(long, env = "DYNARELAY_HEALTH_LISTEN")]
    pub health_listen: Option<std::net::SocketAddr>,
}

/// `lambda-relay` flags: the function given DynamoDB Streams events, configured by its
/// environment as `lambda` is.
#[derive(Debug, Args)]
pub struct LambdaRelayArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub model: ModelArgs,

    #[command(flatten)]
    #[allow(missing_docs)]
    pub redis: RedisArgs,
}
