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

    /// The DynamoDB table of the relays' leases and checkpoints (key `stream`, `shard`), after
    /// the table prefix; made, on demand billing, when missing. Relays of the same tables share
    /// it: each shard is read by the one relay holding its lease.
    #[arg(
        long,
        env = "DYNARELAY_LEASE_TABLE",
        default_value = crate::stream::leases::DEFAULT_TABLE,
        value_parser = super::parse_table_name
    )]
    pub lease_table: String,

    /// How long, in milliseconds, a relay's lease lasts without renewal: the longest a dead
    /// relay's shards wait for another relay (one that stops lets go of them at once). Held
    /// leases are renewed three times a period.
    #[arg(long, env = "DYNARELAY_LEASE_PERIOD_MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(300..=600_000))]
    pub lease_period_ms: u64,

    /// An address serving the relay's /health, /ready (200 while it follows every table's
    /// stream by its leases, holding some or standing by) and /metrics, for probes and
    /// Prometheus. None by default.
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
