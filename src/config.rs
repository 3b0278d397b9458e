//! The command line: every command and flag, each flag also settable as a `DYNARELAY_*`
//! environment variable. Parsed and validated once, in `main`.

use std::{
    convert::Infallible, fmt, net::SocketAddr, num::NonZeroUsize, path::PathBuf, str::FromStr,
    time::Duration,
};

use clap::{ArgAction, Args, Parser, Subcommand};

mod documents;
mod relay;
pub use documents::{DocumentArgs, TrustedDocumentsMode};
pub use relay::{LambdaRelayArgs, RedisArgs, RelayArgs};

use jsonwebtoken::Algorithm;

use crate::{
    auth::{AuthSettings, KeySource},
    cursor::{KeyRing, KeyRingError},
    dynamo::SdkSettings,
    http::{
        AllowedOrigins, CallerLimits, ConnectionSettings, HttpSettings, Limit, RateLimitSettings,
    },
    model::{AuthSpec, KeysSpec},
    pagination::PageLimits,
    telemetry::{TraceProtocol, TraceSettings},
};

/// dynarelay serves DynamoDB tables as a GraphQL API with Relay cursor connections.
///
/// DynamoDB is reached through the standard AWS configuration: AWS_REGION, AWS_PROFILE and the
/// usual credential sources, and AWS_ENDPOINT_URL_DYNAMODB for a local endpoint such as DynamoDB
/// Local. Log verbosity follows RUST_LOG (default: info).
#[derive(Debug, Parser)]
#[command(name = "dynarelay", version, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,

    /// Log format: `text` for people, or `json` (one object per line, with the request id and
    /// other span fields) for log collectors.
    #[arg(
        long,
        global = true,
        env = "DYNARELAY_LOG_FORMAT",
        default_value = "text"
    )]
    pub log_format: LogFormat,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the GraphQL server for a model.
    Serve(Box<ServeArgs>),
    /// Run the GraphQL API as an AWS Lambda function (API Gateway HTTP or REST API, function
    /// URL or Application Load Balancer events), configured by the same DYNARELAY_* variables
    /// as `serve`.
    Lambda(Box<LambdaArgs>),
    /// Check a model file, and hold it against the live tables when DynamoDB answers.
    Check(CheckArgs),
    /// Print the GraphQL schema (SDL) of a model.
    Schema(SchemaArgs),
    /// Manage the model's DynamoDB tables.
    #[command(subcommand)]
    Tables(TablesCommand),
    /// Print a new random cursor key as ID:SECRET, for DYNARELAY_CURSOR_KEYS.
    Keygen(KeygenArgs),
    /// Write a model file from live tables: their keys and indexes, and field types from a
    /// sample of their items. Only reads from DynamoDB.
    Init(InitArgs),
    /// Print the least-privilege IAM policy (JSON) the model's API needs: exactly the DynamoDB
    /// actions it sends, on exactly its tables and indexes. Reads nothing from AWS.
    Policy(PolicyArgs),
    /// Write items from a JSON file into the model's tables, for development and tests against
    /// DynamoDB Local: the file maps table names, as the model names them, to lists of items in
    /// DynamoDB's typed JSON (`{"sku": {"S": "SKU-1"}, "price": {"N": "19.99"}}`, as `aws
    /// dynamodb batch-write-item` takes them). The whole file is checked against the model's
    /// keys first: a file with any problem writes nothing.
    Seed(SeedArgs),
    /// Read the streams of the model's tables and append every change to Redis, for a fleet of
    /// `serve` instances given the same `--redis-url`: each stream is read by the relay (or two,
    /// for availability) instead of by every instance.
    Relay(RelayArgs),
    /// Run as an AWS Lambda function given DynamoDB Streams events by an event source mapping,
    /// appending each change to Redis as `relay` does; records that fail are reported as
    /// partial batch failures, for Lambda to retry. `bootstrap` runs it, rather than `lambda`,
    /// when DYNARELAY_LAMBDA_COMMAND=lambda-relay.
    LambdaRelay(LambdaRelayArgs),
}

/// `seed` flags.
#[derive(Debug, Args)]
pub struct SeedArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub model: ModelArgs,
    /// The JSON file of items to write: `{"Users": [{"userId": {"S": "u1"}}], ...}`.
    #[arg(long, env = "DYNARELAY_SEED_ITEMS")]
    pub items: PathBuf,
    /// Write nothing when any of the file's tables already holds an item (so that running it
    /// again keeps what was changed since).
    #[arg(long, env = "DYNARELAY_SEED_IF_EMPTY")]
    pub if_empty: bool,
}

/// `policy` flags.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub model: ModelArgs,
    /// The AWS region of the tables, in their ARNs. Default `*`: any region.
    #[arg(long, env = "DYNARELAY_POLICY_REGION", default_value = "*", value_parser = parse_region)]
    pub region: String,
    /// The AWS account id owning the tables, in their ARNs. Default `*`: any account.
    #[arg(long, env = "DYNARELAY_POLICY_ACCOUNT", default_value = "*", value_parser = parse_account)]
    pub account: String,
    /// Whether the server checks the live tables, which takes `DescribeTable` on each: `serve`
    /// always does (at start-up and on `/ready`); `lambda` only with `--check-tables true`.
    /// `--check-tables false` leaves `DescribeTable` out, for a Lambda function with the check
    /// off, its default.
    #[arg(long, env = "DYNARELAY_POLICY_CHECK_TABLES", default_value_t = true, action = ArgAction::Set)]
    pub check_tables: bool,
    /// What runs with the policy.
    #[arg(long = "for", env = "DYNARELAY_POLICY_FOR", value_enum, default_value_t = crate::policy::Role::Api)]
    pub role: crate::policy::Role,

    /// The relays' lease table (`relay --lease-table`), after the table prefix: `--for relay`
    /// allows making it and reading and writing its leases.
    #[arg(long, env = "DYNARELAY_LEASE_TABLE", default_value = crate::stream::leases::DEFAULT_TABLE,
          value_parser = parse_table_name)]
    pub lease_table: String,
}

/// A region for an ARN: `*`, or lowercase letters, digits and `-` (`eu-west-1`).
fn parse_region(region: &str) -> Result<String, String> {
    let valid = region == "*"
        || (!region.is_empty()
            && region
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
    if valid {
        Ok(region.to_owned())
    } else {
        Err("a region is `*` or a name such as `eu-west-1`".into())
    }
}

/// An account for an ARN: `*`, or the 12 digits of an AWS account id.
fn parse_account(account: &str) -> Result<String, String> {
    if account == "*" || (account.len() == 12 && account.bytes().all(|b| b.is_ascii_digit())) {
        Ok(account.to_owned())
    } else {
        Err("an account is `*` or the 12 digits of an AWS account id".into())
    }
}

/// `init` flags.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The tables to read, comma-separated, by their names without --table-prefix. Default:
    /// every table the credentials can list whose name starts with the prefix.
    #[arg(long, env = "DYNARELAY_INIT_TABLES", value_delimiter = ',')]
    pub tables: Option<Vec<String>>,
    /// The prefix of the tables' names: only tables named with it are read, and the model
    /// names them without it (serve with the same --table-prefix).
    #[arg(long, env = "DYNARELAY_TABLE_PREFIX", default_value = "", value_parser = parse_prefix)]
    pub table_prefix: String,
    /// The most items read per table, with Scans, to infer field types from.
    #[arg(long, env = "DYNARELAY_INIT_SAMPLE", default_value_t = 500)]
    pub sample: usize,
    /// The model file to write.
    #[arg(long, env = "DYNARELAY_INIT_OUT", default_value = "dynarelay.toml")]
    pub out: PathBuf,
    /// Replace --out if it exists (without it, an existing file is never touched).
    #[arg(long, env = "DYNARELAY_INIT_FORCE")]
    pub force: bool,
}

/// `keygen` flags.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// The key's id (0 to 255). Give each key in a ring its own id. Default: 1 for a first key;
    /// with `--rotate add`, one no key in the ring uses.
    #[arg(long, env = "DYNARELAY_KEYGEN_ID")]
    pub id: Option<u8>,

    /// Print the next ring of a rotation that never breaks a cursor during a rolling deploy,
    /// made from the ring in DYNARELAY_CURSOR_KEYS. Deploy each step's ring to every instance
    /// before taking the next step.
    #[arg(long, env = "DYNARELAY_KEYGEN_ROTATE", value_enum)]
    pub rotate: Option<RotationStep>,

    /// The ring in use, for `--rotate`: the DYNARELAY_CURSOR_KEYS every instance runs with now.
    #[arg(long, env = "DYNARELAY_CURSOR_KEYS", hide_env_values = true)]
    pub cursor_keys: Option<Secret>,
}

impl KeygenArgs {
    /// The ring in use, if one is given.
    pub fn key_ring(&self) -> Result<Option<KeyRing>, KeyRingError> {
        key_ring(self.cursor_keys.as_ref())
    }
}

/// Whether anonymous callers are rate-limited by address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AddressLimits {
    /// When --trusted-proxies names the load balancers.
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

/// The steps of a cursor key rotation, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RotationStep {
    /// 1. Add a new key that opens cursors but does not seal them yet.
    Add,
    /// 2. Seal new cursors with the key step 1 added; the old key still opens.
    Seal,
    /// 3. Keep the sealing key alone, once cursors sealed with the old one no longer matter.
    Retire,
}

/// `tables` subcommands.
#[derive(Debug, Subcommand)]
pub enum TablesCommand {
    /// Create any missing tables and indexes, then wait until they are ACTIVE. Safe to run twice.
    Create(CreateTablesArgs),
}

/// The model file, and the tables it is served from.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// The model file (TOML) describing the tables and the API: see
    /// docs/src/guides/your-own-tables.md. The demo: examples/shop/dynarelay.toml.
    #[arg(long, env = "DYNARELAY_MODEL")]
    pub model: PathBuf,
    /// Prefix for every table name of the model: `t42_` serves t42_Users for a model table
    /// named Users.
    #[arg(long, env = "DYNARELAY_TABLE_PREFIX", default_value = "", value_parser = parse_prefix)]
    pub table_prefix: String,
}

/// `schema` flags.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub model: ModelArgs,
    /// Print the Apollo Federation subgraph schema instead (the model needs `[federation]`):
    /// with `@link` and the `@key` and `@shareable` directives, as `_service { sdl }` gives it,
    /// for `rover subgraph publish` or a supergraph configuration.
    #[arg(long, env = "DYNARELAY_SCHEMA_SUBGRAPH")]
    pub subgraph: bool,
}

/// `check` flags.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub model: ModelArgs,
    /// Check the file only, without asking DynamoDB about the live tables.
    #[arg(long, env = "DYNARELAY_CHECK_OFFLINE")]
    pub offline: bool,
    /// Also read up to this many items of each table (Scans) and warn about what no longer fits
    /// the model: stored values a field cannot read, items of types the model does not know,
    /// and indexes it does not declare. 0 (the default): no items are read.
    #[arg(long, env = "DYNARELAY_CHECK_SAMPLE", default_value_t = 0)]
    pub sample: usize,
    /// The document limits and operation manifests a server would get: with --operations,
    /// every listed operation is validated against the model's schema and these limits, as
    /// `serve` and `lambda` do at start.
    #[command(flatten)]
    pub documents: DocumentArgs,
}

/// `serve` flags.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "DYNARELAY_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    #[command(flatten)]
    #[allow(missing_docs)]
    pub api: ApiArgs,

    /// On SIGTERM or Ctrl-C, how long requests in flight may take to finish, and WebSockets to
    /// close (with 1001, going away), in seconds.
    #[arg(long, env = "DYNARELAY_SHUTDOWN_TIMEOUT_SECS", default_value_t = 10)]
    pub shutdown_timeout_secs: u64,

    /// Longest time a client may take to send a request's headers, in seconds, counted from
    /// when its connection opens or its previous response was sent; then the connection is
    /// closed. It therefore also bounds how long a keep-alive connection may wait for its next
    /// request.
    #[arg(long, env = "DYNARELAY_HEADER_READ_TIMEOUT_SECS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_read_timeout_secs: u64,

    /// Close a keep-alive connection that has no request in flight and has read or written
    /// nothing for this many seconds. At most --header-read-timeout-secs, which would close
    /// such a connection first anyway. Behind a load balancer, set it above the balancer's own
    /// idle timeout.
    #[arg(long, env = "DYNARELAY_IDLE_TIMEOUT_SECS", default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub idle_timeout_secs: u64,

    /// Most client connections open at once on --listen. Past it, new connections wait in the
    /// kernel's backlog until one closes, while the open ones are served. Lowered at start (with
    /// a warning) to what the process's open-file limit allows. An idle WebSocket holds about
    /// 7 KiB (scripts/bench-live): 10,000 about 70 MiB.
    #[arg(long, env = "DYNARELAY_MAX_CONNECTIONS", default_value_t = 10_000,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub max_connections: usize,

    /// Most subscriptions running at once in the process (over WebSocket and server-sent
    /// events); past it, a new subscription is refused with TOO_MANY_SUBSCRIPTIONS. An idle
    /// subscription holds about 3 KiB (scripts/bench-live), so the default bounds them to about
    /// 30 MiB; an instance for 100,000 (each on its own partition costs no more per change)
    /// needs about 300 MiB for them, besides their sockets.
    #[arg(long, env = "DYNARELAY_MAX_SUBSCRIPTIONS", default_value_t = 10_000,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub max_subscriptions: usize,

    /// Most subscriptions one caller (a token's subject) runs at once; past it, a new one is
    /// refused with TOO_MANY_SUBSCRIPTIONS. Anonymous callers are held to --max-subscriptions
    /// only.
    #[arg(long, env = "DYNARELAY_MAX_SUBSCRIPTIONS_PER_CALLER", default_value_t = 100,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub max_subscriptions_per_caller: usize,

    /// Wait, in milliseconds, before reading again a stream shard that had nothing new: the
    /// most a change waits before its subscribers get it. DynamoDB Streams allows five reads per
    /// second per shard, shared by at most two readers: the default, 250, keeps one reader to
    /// half of that; lower it only for a stream no other reader shares.
    #[arg(long, env = "DYNARELAY_STREAM_POLL_INTERVAL_MS", default_value_t = 250,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub stream_poll_interval_ms: u64,

    /// Deliver subscriptions' changes from this Redis, which `dynarelay relay` fills from the
    /// tables' streams, instead of reading the streams here: for a fleet of instances, since a
    /// stream shard allows about two readers (`redis://[user:password@]host:port[/db]`, or
    /// `rediss://` for TLS).
    #[arg(long, env = "DYNARELAY_REDIS_URL")]
    pub redis_url: Option<String>,

    /// A PEM file of the certificate authority to trust for a `rediss://` Redis, instead of the
    /// system's (for a Redis whose certificate a private CA signed).
    #[arg(long, env = "DYNARELAY_REDIS_CA_FILE", requires = "redis_url")]
    pub redis_ca_file: Option<std::path::PathBuf>,

    /// Threads serving client connections, each with a single-threaded runtime and a DynamoDB
    /// connection pool of its own; every connection, with its requests and their DynamoDB calls,
    /// stays on the thread it was given to. Default: one per CPU the process may use.
    #[arg(long, env = "DYNARELAY_THREADS",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    pub threads: Option<usize>,

    /// Largest request header block (request line included), in bytes; larger gets 431.
    #[arg(long, env = "DYNARELAY_MAX_HEADER_BYTES", default_value_t = 16 * 1024,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..=1024 * 1024))]
    pub max_header_bytes: usize,

    /// Most header fields in one request; more gets 431.
    #[arg(long, env = "DYNARELAY_MAX_HEADERS", default_value_t = crate::http::HYPER_MAX_HEADERS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub max_headers: usize,

    /// A second address serving only /health, /ready and /metrics (if enabled), with its own
    /// small connection cap and the same timeouts: point load balancer and Kubernetes probes
    /// here, so that they answer even while --max-connections holds clients off.
    #[arg(long, env = "DYNARELAY_HEALTH_LISTEN")]
    pub health_listen: Option<SocketAddr>,
}

/// `lambda` flags.
#[derive(Debug, Args)]
pub struct LambdaArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub api: ApiArgs,

    /// Hold the live tables against the model when a container starts (a `DescribeTable` per
    /// table, on the cold start's time), and on `/ready`. Off by default: run `dynarelay check`
    /// when deploying; `/ready` then answers without asking DynamoDB, and the function's
    /// policy, as `dynarelay policy --check-tables false` prints it, needs no `DescribeTable`.
    #[arg(long, env = "DYNARELAY_CHECK_TABLES", default_value_t = false, action = ArgAction::Set)]
    pub check_tables: bool,
}

/// The flags of the API itself, the same for `serve` and `lambda`: the model, cursor keys,
/// limits, authentication, rate limits and DynamoDB calls.
#[derive(Debug, Args)]
pub struct ApiArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub model: ModelArgs,

    /// Keys that seal cursors: a comma-separated list of ID:SECRET from `dynarelay keygen`. The
    /// first seals new cursors; the others still open cursors made with them (for rotation).
    /// Required. Give every instance behind one endpoint the same list.
    #[arg(long, env = "DYNARELAY_CURSOR_KEYS", hide_env_values = true)]
    pub cursor_keys: Option<Secret>,

    /// Page size when a client gives no `first`.
    #[arg(long, env = "DYNARELAY_DEFAULT_PAGE_SIZE", default_value_t = 20)]
    pub default_page_size: u32,

    /// Largest `first` a client may ask for; larger values are rejected with BAD_USER_INPUT.
    #[arg(long, env = "DYNARELAY_MAX_PAGE_SIZE", default_value_t = 100)]
    pub max_page_size: u32,

    /// Most items DynamoDB may evaluate for one page of a filtered connection. When it is spent,
    /// the page returns the matches found so far, `hasNextPage: true`, and an `endCursor` after
    /// everything examined. Must exceed the maximum page size.
    #[arg(long, env = "DYNARELAY_READ_BUDGET", default_value_t = 5000)]
    pub read_budget: u32,

    /// Most items DynamoDB may evaluate for one `totalCount` (connections that offer it). A
    /// count that would evaluate more answers null with COUNT_BUDGET_EXCEEDED, never a partial
    /// number. DynamoDB bills every item a count evaluates, as a read of it would be.
    #[arg(
        long,
        env = "DYNARELAY_COUNT_BUDGET",
        default_value_t = crate::pagination::DEFAULT_COUNT_BUDGET,
        value_parser = clap::value_parser!(u64).range(1..=2_147_483_647)
    )]
    pub count_budget: u64,

    /// Largest accepted request body, in bytes; larger requests get 413.
    #[arg(long, env = "DYNARELAY_MAX_BODY_BYTES", default_value_t = 64 * 1024)]
    pub max_body_bytes: usize,

    /// Serve the GraphiQL playground at `/` (true or false).
    #[arg(long, env = "DYNARELAY_GRAPHIQL", default_value_t = true, action = ArgAction::Set)]
    pub graphiql: bool,

    /// Browser origins allowed to call the API (CORS), comma-separated: exact origins such as
    /// https://app.example.com, any port with http://localhost:*, or * for all. Empty (the
    /// default): no cross-origin browser access.
    #[arg(long, env = "DYNARELAY_CORS_ALLOWED_ORIGINS", default_value = "")]
    pub cors_allowed_origins: AllowedOrigins,

    /// How many Apollo Automatic Persisted Queries to remember (least recently used are
    /// forgotten first), up to 1,000,000; 0 turns them off.
    #[arg(
        long,
        env = "DYNARELAY_PERSISTED_QUERIES",
        default_value_t = 1000,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=1_000_000)
    )]
    pub persisted_queries: usize,

    /// Bytes of query text whose parsed documents are kept (least recently used are dropped
    /// first), so that repeated queries skip parsing; a parsed document takes several times its
    /// text. 0 turns the cache off.
    #[arg(
        long,
        env = "DYNARELAY_DOCUMENT_CACHE_BYTES",
        default_value_t = 256 * 1024,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=64 * 1024 * 1024)
    )]
    pub document_cache_bytes: usize,

    #[command(flatten)]
    #[allow(missing_docs)]
    pub documents: DocumentArgs,

    /// Serve Prometheus metrics at `/metrics` (true or false). They describe traffic and
    /// DynamoDB usage; keep the path away from the public, e.g. at the load balancer.
    #[arg(long, env = "DYNARELAY_METRICS", default_value_t = true, action = ArgAction::Set)]
    pub metrics: bool,

    /// Add `extensions.cost` to every GraphQL response (true or false): the DynamoDB calls the
    /// request made, the capacity units they consumed, and the items evaluated and returned.
    #[arg(long, env = "DYNARELAY_COST_EXTENSION", default_value_t = true, action = ArgAction::Set)]
    pub cost_extension: bool,

    /// Refuse GET requests a browser could send from another site without a CORS preflight
    /// (true or false): every GET must then carry the header `apollo-require-preflight` (any
    /// value) or `x-apollo-operation-name`, as Apollo Server's CSRF prevention asks. Turn on when
    /// a gateway in front adds cookies that authenticate callers; mutations never run from a GET
    /// or from a POST without `Content-Type: application/json` either way.
    #[arg(long, env = "DYNARELAY_REQUIRE_PREFLIGHT", default_value_t = false, action = ArgAction::Set)]
    pub require_preflight: bool,

    /// Longest time one request may take, in seconds; slower requests get 504 with
    /// REQUEST_TIMEOUT.
    #[arg(long, env = "DYNARELAY_REQUEST_TIMEOUT_SECS", default_value_t = 15)]
    pub request_timeout_secs: u64,

    /// Attempts per DynamoDB call, the first included (1 to 10). Throttling, 5xx answers,
    /// timeouts and broken connections are retried with jittered exponential backoff.
    #[arg(long, env = "DYNARELAY_DYNAMODB_MAX_ATTEMPTS", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=10))]
    pub dynamodb_max_attempts: u32,

    /// Longest time one DynamoDB attempt may take, in milliseconds.
    #[arg(long, env = "DYNARELAY_DYNAMODB_ATTEMPT_TIMEOUT_MS", default_value_t = 3_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub dynamodb_attempt_timeout_ms: u64,

    /// Longest time one DynamoDB call may take with all its retries, in milliseconds.
    #[arg(long, env = "DYNARELAY_DYNAMODB_OPERATION_TIMEOUT_MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub dynamodb_operation_timeout_ms: u64,

    /// Export traces of GraphQL requests to this OpenTelemetry collector, over OTLP: a span per
    /// request, operation, page and DynamoDB call, never with a value of the tables, a
    /// variable, a cursor or a token. Such as `http://localhost:4318` (HTTP/protobuf) or
    /// `http://localhost:4317` (gRPC), an AWS Distro for OpenTelemetry collector for X-Ray.
    /// Unset (the default), nothing is traced. `OTEL_SERVICE_NAME`,
    /// `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_EXPORTER_OTLP_HEADERS` apply.
    #[arg(long, env = "DYNARELAY_TRACE_ENDPOINT")]
    pub trace_endpoint: Option<String>,

    /// How traces travel to --trace-endpoint.
    #[arg(long, env = "DYNARELAY_TRACE_PROTOCOL", value_enum,
          default_value_t = TraceProtocol::HttpProtobuf)]
    pub trace_protocol: TraceProtocol,

    /// The share of requests traced, from 0 to 1, among those whose caller made no sampling
    /// decision; a request whose `traceparent` (or `X-Amzn-Trace-Id`) says whether it is
    /// sampled is traced as its caller decided.
    #[arg(long, env = "DYNARELAY_TRACE_SAMPLE_RATIO", default_value_t = 1.0)]
    pub trace_sample_ratio: f64,

    /// A JWKS URL to verify bearer tokens with, instead of the keys the model's `[auth]` names
    /// (for one model file across environments, each with its own identity provider). Needs
    /// `[auth]` in the model.
    #[arg(long, env = "DYNARELAY_AUTH_JWKS_URL")]
    pub auth_jwks_url: Option<String>,

    /// GraphQL requests one caller may send per second, sustained (a caller is a token's
    /// subject, or else a client address); more get 429 with RATE_LIMITED. 0 turns the limit
    /// off.
    #[arg(long, env = "DYNARELAY_RATE_LIMIT_REQUESTS", default_value_t = 200)]
    pub rate_limit_requests: u32,

    /// GraphQL requests one caller may send at once, above the sustained rate. 0 turns the
    /// limit off.
    #[arg(long, env = "DYNARELAY_RATE_LIMIT_BURST", default_value_t = 400)]
    pub rate_limit_burst: u32,

    /// DynamoDB capacity units one caller's requests may consume per second, sustained (what
    /// `extensions.cost` reports: reads, and a mutation's writes). A request is refused while its
    /// caller has none left; what it consumed is charged once it has run, emptying the bucket at
    /// most. 0 turns the limit off.
    #[arg(long, env = "DYNARELAY_RATE_LIMIT_READ_UNITS", default_value_t = 1_000)]
    pub rate_limit_read_units: u32,

    /// DynamoDB capacity units one caller may consume at once, above the sustained rate. 0
    /// turns the limit off.
    #[arg(long, env = "DYNARELAY_RATE_LIMIT_READ_BURST", default_value_t = 5_000)]
    pub rate_limit_read_burst: u32,

    /// Limits for the callers in one group (from the token's groups claim), as
    /// NAME=REQUESTS/BURST,READ_UNITS/READ_BURST, such as `partners=1000/2000,10000/20000`; 0
    /// turns a limit off. Repeat the flag for several groups (in the environment variable,
    /// separate them with `;`). A caller in several listed groups gets the most generous of
    /// their limits; everyone else gets the defaults above.
    #[arg(
        long = "rate-limit-group",
        env = "DYNARELAY_RATE_LIMIT_GROUPS",
        value_name = "NAME=REQUESTS/BURST,READ_UNITS/READ_BURST",
        value_delimiter = ';',
        value_parser = parse_group_limits
    )]
    pub rate_limit_groups: Vec<GroupLimits>,

    /// Proxies and load balancers whose X-Forwarded-For header is believed, comma-separated
    /// addresses or CIDR blocks (10.0.0.0/8, 2001:db8::/32). A request from one of them is
    /// charged to the rightmost address of X-Forwarded-For that is not itself a trusted proxy;
    /// from anyone else, X-Forwarded-For is ignored. Empty (the default): none.
    #[arg(
        long,
        env = "DYNARELAY_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_parser = parse_proxy
    )]
    pub trusted_proxies: Vec<ipnet::IpNet>,

    /// Whether anonymous callers (no token) are rate-limited, each by its address: `auto` (the
    /// default) limits them once --trusted-proxies names the load balancers, whose
    /// X-Forwarded-For then tells clients apart; `on` also limits them without (each client
    /// must reach the server directly, or all behind one proxy share one limit); `off` never.
    /// Callers with a token are always limited, by subject.
    #[arg(
        long,
        env = "DYNARELAY_RATE_LIMIT_ADDRESSES",
        value_enum,
        default_value_t = AddressLimits::Auto
    )]
    pub rate_limit_addresses: AddressLimits,

    /// The most callers whose rate-limit buckets are kept (least recently seen are forgotten
    /// first, and start again with full buckets).
    #[arg(
        long,
        env = "DYNARELAY_RATE_LIMIT_CALLERS",
        default_value_t = NonZeroUsize::new(100_000).unwrap_or(NonZeroUsize::MIN),
    )]
    pub rate_limit_callers: NonZeroUsize,
}

impl ApiArgs {
    /// The cursor key ring, if one is configured.
    pub fn key_ring(&self) -> Result<Option<KeyRing>, KeyRingError> {
        key_ring(self.cursor_keys.as_ref())
    }

    /// The page size limits, validated.
    pub fn page_limits(&self) -> Result<PageLimits, crate::pagination::LimitsError> {
        PageLimits::new(self.default_page_size, self.max_page_size, self.read_budget)
            .map(|limits| limits.with_count_budget(self.count_budget))
    }

    /// HTTP settings.
    pub fn http(&self) -> HttpSettings {
        HttpSettings {
            graphiql: self.graphiql,
            max_body_bytes: self.max_body_bytes,
            cors_origins: self.cors_allowed_origins.clone(),
            persisted_queries: self.persisted_queries,
            document_cache_bytes: self.document_cache_bytes,
            request_timeout: Duration::from_secs(self.request_timeout_secs.max(1)),
            metrics: self.metrics,
            cost_extension: self.cost_extension,
            require_preflight: self.require_preflight,
            query_limits: self.documents.query_limits(),
            trusted: self.documents.trusted(),
            // Set by `serve` from the model's `[auth]` (see `auth_settings`).
            auth: None,
            rate_limits: self.rate_limits(),
            // Set by `lambda` from `--check-tables`; `serve` always checks.
            ready_checks_tables: true,
            traces: self.trace_endpoint.is_some(),
        }
    }

    /// Per-caller rate limits.
    pub fn rate_limits(&self) -> RateLimitSettings {
        RateLimitSettings {
            default: CallerLimits {
                requests: Limit::new(self.rate_limit_requests, self.rate_limit_burst),
                read_units: Limit::new(self.rate_limit_read_units, self.rate_limit_read_burst),
            },
            groups: self
                .rate_limit_groups
                .iter()
                .map(|group| (group.name.clone(), group.limits))
                .collect(),
            trusted_proxies: self.trusted_proxies.clone(),
            limit_addresses: match self.rate_limit_addresses {
                AddressLimits::Auto => !self.trusted_proxies.is_empty(),
                AddressLimits::On => true,
                AddressLimits::Off => false,
            },
            max_callers: self.rate_limit_callers,
        }
    }

    /// Checks what clap cannot check flag by flag.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.documents.validate()?;
        let mut seen = std::collections::BTreeSet::new();
        for group in &self.rate_limit_groups {
            if !seen.insert(group.name.as_str()) {
                anyhow::bail!(
                    "--rate-limit-group (DYNARELAY_RATE_LIMIT_GROUPS) names the group `{}` twice",
                    group.name
                );
            }
        }
        Ok(())
    }

    /// Where traces go, when they are on.
    pub fn traces(&self) -> Option<TraceSettings> {
        self.trace_endpoint.as_ref().map(|endpoint| TraceSettings {
            endpoint: endpoint.clone(),
            protocol: self.trace_protocol,
            sample_ratio: self.trace_sample_ratio,
        })
    }

    /// How the SDK retries and times out DynamoDB calls.
    pub fn sdk(&self) -> SdkSettings {
        SdkSettings {
            max_attempts: self.dynamodb_max_attempts,
            attempt_timeout: Duration::from_millis(self.dynamodb_attempt_timeout_ms),
            operation_timeout: Duration::from_millis(self.dynamodb_operation_timeout_ms),
            ..SdkSettings::default()
        }
    }

    /// How bearer tokens are verified, from the model's `[auth]` and `--auth-jwks-url`. A
    /// shared secret is read from the environment variable `[auth] secret_env` names, here and
    /// nowhere else.
    pub fn auth_settings(&self, spec: &AuthSpec) -> anyhow::Result<AuthSettings> {
        let keys = match (&self.auth_jwks_url, &spec.keys) {
            (Some(url), _) => KeySource::JwksUrl(url.clone()),
            (None, KeysSpec::JwksUrl(url)) => KeySource::JwksUrl(url.clone()),
            (None, KeysSpec::JwksFile(path)) => KeySource::JwksFile(PathBuf::from(path)),
            (None, KeysSpec::SecretEnv(var)) => {
                let secret = std::env::var(var).unwrap_or_default();
                if secret.is_empty() {
                    anyhow::bail!(
                        "the model's `[auth] secret_env` names {var}, which is not set: set it to \
                         the shared secret tokens are signed with"
                    );
                }
                KeySource::SharedSecret(secret.into_bytes())
            }
        };
        let algorithms = spec
            .algorithms
            .iter()
            .map(|a| {
                a.parse::<Algorithm>()
                    .map_err(|_| anyhow::anyhow!("unknown token algorithm {a}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(AuthSettings {
            keys,
            algorithms,
            issuer: spec.issuer.clone(),
            audience: spec.audience.clone(),
            leeway: Duration::from_secs(spec.leeway_seconds.into()),
            groups_claim: spec.groups_claim.clone(),
            jwks_refresh: Duration::from_secs(spec.jwks_refresh_seconds.into()),
            jwks_timeout: Duration::from_millis(spec.jwks_timeout_ms.into()),
        })
    }
}

impl ServeArgs {
    /// The connection protections, validated (the cap before fitting it to the open-file
    /// limit).
    pub fn connections(&self) -> Result<ConnectionSettings, String> {
        if self.idle_timeout_secs > self.header_read_timeout_secs {
            return Err(format!(
                "--idle-timeout-secs ({}) must not exceed --header-read-timeout-secs ({}): the \
                 header-read timeout also runs while a keep-alive connection waits for its next \
                 request, and would close it first",
                self.idle_timeout_secs, self.header_read_timeout_secs
            ));
        }
        Ok(ConnectionSettings {
            header_read_timeout: Some(Duration::from_secs(self.header_read_timeout_secs)),
            idle_timeout: Some(Duration::from_secs(self.idle_timeout_secs)),
            max_connections: self.max_connections,
            max_header_bytes: self.max_header_bytes,
            max_headers: self.max_headers,
        })
    }

    /// How many threads serve connections: `--threads`, or one per CPU the process may use.
    pub fn serving_threads(&self) -> usize {
        self.threads.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        })
    }

    /// The drain deadline.
    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_secs(self.shutdown_timeout_secs)
    }
}

/// `tables create` flags.
#[derive(Debug, Args)]
pub struct CreateTablesArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub model: ModelArgs,

    /// How long to wait for the tables and indexes to become ACTIVE, in seconds.
    #[arg(long, env = "DYNARELAY_WAIT_TIMEOUT_SECS", default_value_t = 600)]
    pub wait_timeout_secs: u64,
}

/// A secret given on the command line or in the environment. `Debug` never shows it.
#[derive(Clone)]
pub struct Secret(String);

impl FromStr for Secret {
    type Err = Infallible;

    fn from_str(s: &str) -> Result<Self, Infallible> {
        Ok(Self(s.to_owned()))
    }
}

/// The key ring in `secret`, if one is given: parsed here rather than by clap, whose error
/// messages repeat the rejected value, which would print a secret.
fn key_ring(secret: Option<&Secret>) -> Result<Option<KeyRing>, KeyRingError> {
    secret.map(|secret| secret.0.parse()).transpose()
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// One `--rate-limit-group`: a group's name and limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupLimits {
    /// The group, as the token's groups claim names it.
    pub name: String,
    /// Its limits.
    pub limits: CallerLimits,
}

/// `NAME=REQUESTS/BURST,READ_UNITS/READ_BURST`.
fn parse_group_limits(text: &str) -> Result<GroupLimits, String> {
    const SHAPE: &str = "expected NAME=REQUESTS/BURST,READ_UNITS/READ_BURST, such as \
                         partners=1000/2000,10000/20000";
    let (name, limits) = text
        .trim()
        .split_once('=')
        .ok_or_else(|| format!("no `=` after the group's name: {SHAPE}"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("the group's name is empty: {SHAPE}"));
    }
    let (requests, read_units) = limits
        .split_once(',')
        .ok_or_else(|| format!("no `,` between the request and read-unit limits: {SHAPE}"))?;
    let limit = |text: &str, what: &str| -> Result<Limit, String> {
        let (rate, burst) = text
            .trim()
            .split_once('/')
            .ok_or_else(|| format!("the {what} limit `{text}` has no `/`: {SHAPE}"))?;
        let number = |n: &str, which: &str| {
            n.trim().parse::<u32>().map_err(|_| {
                format!("the {what} {which} `{n}` is not a whole number from 0 to 4294967295")
            })
        };
        Ok(Limit::new(number(rate, "rate")?, number(burst, "burst")?))
    };
    Ok(GroupLimits {
        name: name.to_owned(),
        limits: CallerLimits {
            requests: limit(requests, "request")?,
            read_units: limit(read_units, "read-unit")?,
        },
    })
}

/// A trusted proxy: a CIDR block, or one address.
fn parse_proxy(text: &str) -> Result<ipnet::IpNet, String> {
    let text = text.trim();
    text.parse::<ipnet::IpNet>()
        .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| {
            format!("`{text}` is neither an IP address nor a CIDR block such as 10.0.0.0/8")
        })
}

/// A character DynamoDB allows in a table's name.
fn table_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Table names allow letters, digits, `_`, `-` and `.`, up to 255 characters with the base name.
fn parse_prefix(prefix: &str) -> Result<String, String> {
    if prefix.len() > 200 || !prefix.chars().all(table_name_char) {
        return Err("use at most 200 letters, digits, '_', '-' or '.'".into());
    }
    Ok(prefix.to_owned())
}

/// A table's own name, which the table prefix (at most 200 characters) goes before: 3 to 55
/// letters, digits, `_`, `-` or `.`, so that the whole name is one DynamoDB takes.
fn parse_table_name(name: &str) -> Result<String, String> {
    if !(3..=55).contains(&name.len()) || !name.chars().all(table_name_char) {
        return Err("use 3 to 55 letters, digits, '_', '-' or '.'".into());
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests;
