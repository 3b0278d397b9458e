//! The `dynarelay` binary: parses the command line, sets up logging, and runs one command.
//!
//! A command that fails prints one clean message on stderr (its causes joined, never a Rust
//! backtrace, whatever `RUST_BACKTRACE` says) and exits with status 1.

use std::{io::IsTerminal, process::ExitCode, time::Duration};

use anyhow::Context;
use clap::Parser;
use dynarelay::telemetry::{self, Traces};
use dynarelay::{
    auth::Authenticator,
    config::{
        ApiArgs, CheckArgs, Cli, Command, DocumentArgs, InitArgs, KeygenArgs, LambdaArgs,
        LambdaRelayArgs, LogFormat, ModelArgs, PolicyArgs, RelayArgs, RotationStep, SchemaArgs,
        SeedArgs, ServeArgs, TablesCommand,
    },
    cursor::{CursorCodec, CursorSecret},
    dynamo::{self, SdkSettings, Store, Tables, tables},
    graphql,
    hangups::Hangups,
    http,
    model::{self, Model},
};
use tracing_subscriber::{
    EnvFilter, Layer, Registry, layer::SubscriberExt, util::SubscriberInitExt,
};

/// mimalloc rather than glibc's malloc: a page allocates and frees many small blocks (the SDK's
/// items, hyper's buffers, the response), and mimalloc does it with less CPU (see Cargo.toml).
#[cfg(not(any(feature = "system-allocator", feature = "jemalloc")))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// jemalloc, only in a build made to measure the choice above (the `jemalloc` feature).
#[cfg(all(feature = "jemalloc", not(feature = "system-allocator")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    // Every command runs on a single-threaded runtime; `serve` starts its other threads itself,
    // each with a runtime of its own (see `http::ServeSettings::workers`).
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(run()),
        Err(err) => {
            report(&anyhow::Error::new(err).context("starting the async runtime"));
            ExitCode::FAILURE
        }
    }
}

async fn run() -> ExitCode {
    let cli = Cli::parse_from(arguments());
    let traces = match logs_and_traces(&cli) {
        Ok(traces) => traces,
        Err(err) => {
            report(&err);
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Serve(args) => serve(*args).await,
        Command::Lambda(args) => lambda(*args, traces.as_ref()).await,
        Command::Check(args) => check(args).await,
        Command::Schema(args) => schema(&args),
        Command::Tables(TablesCommand::Create(args)) => {
            create_tables(&args.model, args.wait_timeout_secs).await
        }
        Command::Keygen(args) => keygen(args),
        Command::Init(args) => init(args).await,
        Command::Policy(args) => policy(&args),
        Command::Seed(args) => seed(args).await,
        Command::Relay(args) => relay(args).await,
        Command::LambdaRelay(args) => lambda_relay(args).await,
    };
    if let Some(traces) = &traces {
        traces.shutdown().await;
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            report(&err);
            ExitCode::FAILURE
        }
    }
}

/// Sets up the logs (`RUST_LOG`, `--log-format`) and, for `serve` and `lambda` with a
/// `--trace-endpoint`, the trace exporter, whose spans never reach the logs.
fn logs_and_traces(cli: &Cli) -> anyhow::Result<Option<Traces>> {
    type Boxed = Box<dyn Layer<Registry> + Send + Sync>;
    // By default the AWS SDK's own warnings are left out: they print its errors' debug output
    // (kilobytes a line, such as each failed look for a region), and what they mean reaches
    // the logs in dynarelay's words where it matters. `RUST_LOG=aws_config=warn` shows them.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,aws_config=error"))
        .add_directive(telemetry::quiet_in_logs());
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs: Boxed = match cli.log_format {
        LogFormat::Text => logs
            .with_ansi(std::io::stderr().is_terminal())
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => logs
            .json()
            .with_current_span(true)
            .with_filter(filter)
            .boxed(),
    };
    let settings = match &cli.command {
        Command::Serve(args) => args.api.traces(),
        Command::Lambda(args) => args.api.traces(),
        _ => None,
    };
    let (traces, layer) = match &settings {
        Some(settings) => {
            let (traces, layer) = Traces::start(settings)?;
            (Some(traces), Some(layer.boxed()))
        }
        None => (None, None),
    };
    let layers: Vec<Boxed> = std::iter::once(logs).chain(layer).collect();
    tracing_subscriber::registry().with(layers).init();
    if let Some(settings) = &settings {
        tracing::info!(
            endpoint = settings.endpoint,
            protocol = ?settings.protocol,
            sample_ratio = settings.sample_ratio,
            "traces are exported"
        );
    }
    Ok(traces)
}

/// The command line, with `lambda` as the command when the binary runs as `bootstrap` with no
/// arguments: the name and the call AWS Lambda's OS-only runtimes (`provided.al2023`) give a
/// function's executable, so the binary deploys as it is, configured by its environment.
/// `DYNARELAY_LAMBDA_COMMAND=lambda-relay` makes it the stream events' function instead.
fn arguments() -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let bootstrap = args.first().is_some_and(|program| {
        std::path::Path::new(program).file_name() == Some(std::ffi::OsStr::new("bootstrap"))
    });
    if bootstrap && args.len() == 1 {
        let command = std::env::var_os("DYNARELAY_LAMBDA_COMMAND")
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "lambda".into());
        args.push(command);
    }
    args
}

/// Prints a failure for people: a model's located problems as they are, anything else as one
/// `error:` line with its causes.
#[allow(clippy::print_stderr)]
fn report(err: &anyhow::Error) {
    if let Some(problems) = err.downcast_ref::<model::ModelErrors>() {
        eprintln!("{problems}");
    } else {
        eprintln!("error: {err:#}");
    }
}

/// Reads and checks the model file. Leaked: a model lives as long as the process (see
/// [`dynarelay::model`]).
fn load_model(args: &ModelArgs) -> anyhow::Result<&'static Model> {
    let model = model::load(&args.model)?;
    Ok(Box::leak(Box::new(model)))
}

/// What the live tables are held against at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TableCheck {
    /// A mismatch stops the start-up; a DynamoDB that does not answer is logged.
    Check,
    /// Nothing is read before the first request (a Lambda cold start).
    Skip,
}

/// The API's state from its flags: the model, the key ring, the DynamoDB client, the table check
/// when asked, bearer-token verification and the schema, built once.
async fn api_state(args: &ApiArgs, table_check: TableCheck) -> anyhow::Result<http::AppState> {
    args.validate()?;
    let model = load_model(&args.model)?;
    let limits = args.page_limits()?;
    let ring = args
        .key_ring()
        .context("DYNARELAY_CURSOR_KEYS (--cursor-keys) is not usable")?;
    let Some(ring) = &ring else {
        anyhow::bail!(
            "no cursor key is configured: set DYNARELAY_CURSOR_KEYS (or --cursor-keys) to the \
             output of `dynarelay keygen`"
        );
    };
    tracing::info!(
        sealing_key = ring.sealing_id(),
        opening_keys = ?ring.ids(),
        "cursor keys loaded"
    );
    if ring.is_development() {
        tracing::warn!(
            "cursors are sealed with the public development key: anyone can forge them; \
             run `dynarelay keygen` for a real key"
        );
    }
    let mut client = dynamo::client_from_env_with(&args.sdk()).await;
    if args.trace_endpoint.is_some() {
        client = dynamo::counting_attempts(&client);
    }
    let names = Tables::new(model, &args.model.table_prefix);
    if table_check == TableCheck::Check {
        // A mismatch stops the server; a DynamoDB that does not answer yet does not (`/ready`
        // reports it until it does).
        match tables::verify(&client, model, &names).await {
            Ok(mismatches) if !mismatches.is_empty() => {
                let lines: Vec<String> = mismatches
                    .iter()
                    .map(|m| format!("  - {}", m.message))
                    .collect();
                anyhow::bail!(
                    "the live tables do not match the model {}:\n{}\n(`dynarelay check --model {}` shows where each is declared)",
                    args.model.model.display(),
                    lines.join("\n"),
                    args.model.model.display()
                );
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(
                error = format!("{err:#}"),
                "the live tables could not be checked: DynamoDB did not answer"
            ),
        }
    }
    let codec = CursorCodec::new(ring);
    let store = Store::new(client, names);
    let mut settings = args.http();
    settings.ready_checks_tables = table_check == TableCheck::Check;
    match &model.auth {
        Some(spec) => {
            let auth = args.auth_settings(spec)?;
            settings.auth = Some(
                Authenticator::new(auth)
                    .await
                    .context("setting up bearer-token verification")?,
            );
        }
        None if args.auth_jwks_url.is_some() => anyhow::bail!(
            "--auth-jwks-url (DYNARELAY_AUTH_JWKS_URL) is set, but the model has no `[auth]` \
             section saying how tokens are checked"
        ),
        None => {}
    }
    let state =
        http::AppState::new(model, store, limits, codec, settings).map_err(anyhow::Error::new)?;
    let manifests = &args.documents.operations;
    if !manifests.is_empty() {
        tracing::info!(
            operations = state.trusted_operations(),
            manifests = manifests.len(),
            mode = ?args.documents.trusted_documents,
            "operation manifests loaded"
        );
    }
    Ok(state)
}

/// How often `serve` looks at the operation manifests' files for a change.
const MANIFEST_POLL_SECS: u64 = 2;

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let hangups = Hangups::listen();
    let mut connections = args.connections().map_err(anyhow::Error::msg)?;
    connections.max_connections =
        http::fit_file_limit(connections.max_connections, args.health_listen.is_some());
    let mut state = api_state(&args.api, TableCheck::Check).await?;
    if args.redis_url.is_some() && !dynarelay::graphql::subscription::any(state.api.model) {
        tracing::warn!(
            "--redis-url is set, but the model has no subscription: no change is read from Redis"
        );
    }
    if dynarelay::graphql::subscription::any(state.api.model) {
        let streams = dynarelay::stream::Streams::new(
            state.store.client().clone(),
            dynamo::streams_client_from_env_with(&args.api.sdk()).await,
            dynarelay::stream::StreamSettings {
                max_subscriptions: args.max_subscriptions,
                max_subscriptions_per_caller: args.max_subscriptions_per_caller,
                poll_interval: std::time::Duration::from_millis(args.stream_poll_interval_ms),
                ..dynarelay::stream::StreamSettings::default()
            },
            state.store.metrics().clone(),
        )
        .recognising(dynarelay::graphql::subscription::recogniser(
            state.api.model,
            state.store.tables(),
        ));
        let streams = match &args.redis_url {
            Some(url) => {
                tracing::info!("subscriptions' changes are read from Redis");
                streams.through_redis(dynarelay::stream::redis_feed::RedisFeed::new(
                    url,
                    args.redis_ca_file.as_deref(),
                )?)
            }
            None => streams,
        };
        state = state.with_streams(streams);
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let health = match args.health_listen {
        Some(address) => {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("binding {address} (--health-listen)"))?;
            tracing::info!(address = %listener.local_addr()?, "health checks are served");
            Some(http::HealthListener {
                listener,
                router: http::health_router(state.clone()),
            })
        }
        None => None,
    };
    // A manifest's file changing, or SIGHUP, reloads the operation manifests.
    tokio::spawn(http::trusted::watch(
        state.clone(),
        Duration::from_secs(MANIFEST_POLL_SECS),
        hangups,
    ));
    let threads = args.serving_threads();
    tracing::info!(
        address = %listener.local_addr()?,
        graphiql = args.api.graphiql,
        max_connections = connections.max_connections,
        threads,
        "dynarelay is listening"
    );
    let serve_settings = http::ServeSettings {
        drain_timeout: args.shutdown_timeout(),
        connections,
        health,
        metrics: state.store.metrics().clone(),
        workers: (1..threads)
            .map(|_| http::router(state.with_own_connections()))
            .collect(),
    };
    http::serve(
        listener,
        http::router(state),
        shutdown_signal(),
        serve_settings,
    )
    .await?;
    tracing::info!("stopped");
    Ok(())
}

/// `lambda`: the API as an AWS Lambda function, one event at a time through the runtime API.
async fn lambda(args: LambdaArgs, traces: Option<&Traces>) -> anyhow::Result<()> {
    // A function's manifests are read at cold start: a new list comes with a new version.
    tokio::spawn(
        Hangups::listen().changing_nothing("a Lambda function reads its manifests at cold start"),
    );
    let table_check = if args.check_tables {
        TableCheck::Check
    } else {
        TableCheck::Skip
    };
    let state = api_state(&args.api, table_check).await?;
    tracing::info!("dynarelay is waiting for Lambda events");
    http::lambda::run(http::router(state), traces.cloned())
        .await
        .map_err(|err| anyhow::anyhow!("the Lambda runtime stopped: {err}"))
}

/// `check --operations`: every listed operation validated against the model's schema and the
/// document limits, as a server would at start; every problem at once.
#[allow(clippy::print_stdout)]
fn check_operations(model: &'static Model, args: &DocumentArgs) -> anyhow::Result<()> {
    let limits = args.query_limits();
    // The cursor key does not change what validates: the public development key stands in.
    let ring: dynarelay::cursor::KeyRing = dynarelay::cursor::DEVELOPMENT_KEY_SPEC
        .parse()
        .map_err(anyhow::Error::msg)?;
    let api = dynarelay::graphql::build_schema(
        model,
        dynarelay::pagination::PageLimits::default(),
        dynarelay::cursor::CursorCodec::new(&ring),
        limits,
    )
    .context("building the GraphQL schema")?;
    let documents =
        dynarelay::graphql::trusted::TrustedDocuments::load(&args.operations, &api, &limits)?;
    println!(
        "{} operations in {} manifests are valid",
        documents.len(),
        args.operations.len()
    );
    Ok(())
}

/// `check`: the file, then the operation manifests, then the live tables unless `--offline` or
/// DynamoDB does not answer.
#[allow(clippy::print_stdout)]
async fn check(args: CheckArgs) -> anyhow::Result<()> {
    let file = args.model.model.display().to_string();
    let model = load_model(&args.model)?;
    println!("{file}: the model is valid");
    for note in model::notes::notes(model) {
        println!("note: {note}");
    }
    if !args.documents.operations.is_empty() {
        check_operations(model, &args.documents)?;
    }
    if args.offline {
        return Ok(());
    }
    // One attempt with short timeouts: an unreachable DynamoDB should not hold `check` up.
    let client = match dynamo::usable_client_from_env_with(&SdkSettings {
        max_attempts: 1,
        connect_timeout: Duration::from_secs(2),
        attempt_timeout: Duration::from_secs(5),
        operation_timeout: Duration::from_secs(5),
        ..SdkSettings::default()
    })
    .await
    {
        Ok(client) => client,
        Err(reason) => {
            println!(
                "the live tables were not checked: {reason}; `--offline` checks the file alone"
            );
            return Ok(());
        }
    };
    let names = Tables::new(model, &args.model.table_prefix);
    let mismatches = match tables::verify(&client, model, &names).await {
        Ok(mismatches) => mismatches,
        Err(err) => {
            println!("the live tables were not checked: DynamoDB did not answer ({err:#})");
            return Ok(());
        }
    };
    if mismatches.is_empty() {
        println!("the live tables match the model");
        if args.sample > 0 {
            let report = dynarelay::init::drift::drift(&client, model, &names, args.sample)
                .await
                .map_err(|failure| {
                    anyhow::anyhow!("table {}: {}", failure.table, failure.reason)
                })?;
            for warning in &report.warnings {
                println!("warning: {warning}");
            }
            println!(
                "sampled {} items: {}",
                report.items,
                match report.warnings.len() {
                    0 => "every one fits the model".to_owned(),
                    1 => "1 warning".to_owned(),
                    n => format!("{n} warnings"),
                }
            );
        }
        return Ok(());
    }
    let text = std::fs::read_to_string(&args.model.model).unwrap_or_default();
    let report: Vec<String> = mismatches
        .iter()
        .map(|m| {
            let (line, column) = line_column(&text, m.span.start);
            format!("  - {}\n    --> {file}:{line}:{column}", m.message)
        })
        .collect();
    let count = match mismatches.len() {
        1 => "1 mismatch".to_owned(),
        n => format!("{n} mismatches"),
    };
    anyhow::bail!(
        "the live tables do not match the model ({count}):\n{}",
        report.join("\n")
    )
}

/// The 1-based line and column of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[allow(clippy::print_stdout)]
fn schema(args: &SchemaArgs) -> anyhow::Result<()> {
    let model = load_model(&args.model)?;
    let sdl = match args.subgraph {
        false => graphql::sdl(model),
        true if model.federation.is_none() => anyhow::bail!(
            "{} has no [federation] section: a subgraph schema is for a model served as an \
             Apollo Federation subgraph",
            args.model.model.display()
        ),
        true => graphql::schema::subgraph_sdl(model),
    }
    .context("building the GraphQL schema")?;
    print!("{sdl}");
    Ok(())
}

async fn create_tables(args: &ModelArgs, wait_timeout_secs: u64) -> anyhow::Result<()> {
    let model = load_model(args)?;
    let client = dynamo::client_from_env().await;
    let names = Tables::new(model, &args.table_prefix);
    let outcomes = tables::create_missing(
        &client,
        model,
        &names,
        Duration::from_secs(wait_timeout_secs),
    )
    .await?;
    for (table, outcome) in outcomes {
        tracing::info!(table, ?outcome, "table is ACTIVE");
    }
    Ok(())
}

/// `init`: reads the tables, then writes the model file, never over an existing one without
/// `--force`. Progress and the summary go to stderr.
#[allow(clippy::print_stderr)]
async fn init(args: InitArgs) -> anyhow::Result<()> {
    if args.out.exists() && !args.force {
        anyhow::bail!(
            "{} exists: pass --force to replace it, or --out to write elsewhere",
            args.out.display()
        );
    }
    let client = dynamo::client_from_env().await;
    let options = dynarelay::init::InitOptions {
        tables: args.tables,
        prefix: args.table_prefix,
        sample: args.sample,
    };
    let terminal = std::io::stderr().is_terminal();
    let mut last = String::new();
    let mut progress = |table: &str, items: usize, limit: usize| {
        if terminal {
            eprint!("\rsampling {table}: {items} of at most {limit} items ");
        } else if last != table {
            eprintln!("sampling {table} (at most {limit} items)");
        }
        last = table.to_owned();
    };
    let outcome = dynarelay::init::init(&client, &options, &mut progress).await;
    if terminal {
        eprintln!();
    }
    let outcome = outcome?;
    for failure in &outcome.skipped {
        eprintln!(
            "warning: table {} left out: {}",
            failure.table, failure.reason
        );
    }
    // Written beside the target, then renamed over it: a reader never sees half a file.
    let partial = args.out.with_extension("toml.partial");
    std::fs::write(&partial, &outcome.text)
        .with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, &args.out)
        .with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!(
        "wrote {}: {} table(s), {} items sampled with {} Scan call(s), {} read capacity units",
        args.out.display(),
        outcome.tables,
        outcome.items,
        outcome.scans,
        outcome.capacity
    );
    Ok(())
}

/// `seed`: checks the whole items file, then writes it. What was written goes to stderr.
#[allow(clippy::print_stderr)]
async fn seed(args: SeedArgs) -> anyhow::Result<()> {
    let model = load_model(&args.model)?;
    let text = std::fs::read_to_string(&args.items)
        .with_context(|| format!("reading {}", args.items.display()))?;
    let items = dynamo::seed::parse(&text, model, &args.model.table_prefix)
        .with_context(|| args.items.display().to_string())?;
    let started = std::time::Instant::now();
    let count = items.count();
    let store = Store::new(
        dynamo::client_from_env().await,
        Tables::new(model, &args.model.table_prefix),
    );
    match dynamo::seed::write(&store, items, args.if_empty).await? {
        dynamo::seed::Seeded::NotEmpty(table) => {
            eprintln!("{table} already holds items: nothing was written (--if-empty)");
        }
        dynamo::seed::Seeded::Written(tables) => {
            let tables: Vec<String> = tables
                .iter()
                .map(|(table, items)| format!("{table} {items}"))
                .collect();
            eprintln!(
                "wrote {count} item{} in {:.1} s: {}",
                if count == 1 { "" } else { "s" },
                started.elapsed().as_secs_f64(),
                tables.join(", ")
            );
        }
    }
    Ok(())
}

/// `policy`: the model's IAM policy on stdout.
#[allow(clippy::print_stdout)]
fn policy(args: &PolicyArgs) -> anyhow::Result<()> {
    let model = load_model(&args.model)?;
    let target = dynarelay::policy::PolicyTarget {
        prefix: args.model.table_prefix.clone(),
        region: args.region.clone(),
        account: args.account.clone(),
        check_tables: args.check_tables,
        lease_table: args.lease_table.clone(),
    };
    if args.role != dynarelay::policy::Role::Api && model.streamed_tables().next().is_none() {
        anyhow::bail!(
            "the model {} declares no table with a `stream`: there is nothing to relay, and no policy to print for it",
            args.model.model.display()
        );
    }
    let document = dynarelay::policy::policy_for(model, &target, args.role);
    println!("{}", serde_json::to_string_pretty(&document)?);
    Ok(())
}

/// Prints a new key, or the next ring of a rotation, on stdout: the one place secrets are shown,
/// on purpose. What a rotation step did, and the next step, go to stderr.
#[allow(clippy::print_stdout, clippy::print_stderr)]
fn keygen(args: KeygenArgs) -> anyhow::Result<()> {
    let generate =
        |id: u8| CursorSecret::generate(id).context("reading the system's random generator");
    let Some(step) = args.rotate else {
        println!("{}", generate(args.id.unwrap_or(1))?.expose_spec());
        return Ok(());
    };
    let ring = args
        .key_ring()
        .context("DYNARELAY_CURSOR_KEYS (--cursor-keys) is not usable")?
        .context("--rotate needs the ring in use in DYNARELAY_CURSOR_KEYS (or --cursor-keys)")?;
    let (next, done) = match step {
        RotationStep::Add => {
            let id = match args.id {
                Some(id) => id,
                None => ring.unused_id()?,
            };
            let next = ring.adding(generate(id)?)?;
            let done = format!(
                "step 1 of 3: added key {id}, which opens cursors but does not seal them yet; \
                 key {} still seals. Deploy this ring to every instance, then run \
                 `dynarelay keygen --rotate seal` with it in DYNARELAY_CURSOR_KEYS.",
                next.sealing_id()
            );
            (next, done)
        }
        RotationStep::Seal => {
            let next = ring.sealing_with_last()?;
            let done = format!(
                "step 2 of 3: key {} now seals new cursors, and the cursors clients hold that \
                 {} sealed still open. Deploy this ring to every instance; once those cursors \
                 no longer matter, run `dynarelay keygen --rotate retire` with it in \
                 DYNARELAY_CURSOR_KEYS.",
                next.sealing_id(),
                key_list(&next.ids()[1..])
            );
            (next, done)
        }
        RotationStep::Retire => {
            let next = ring.retiring_others()?;
            let done = format!(
                "step 3 of 3: key {} alone; cursors sealed with {} now get BAD_USER_INPUT. \
                 Deploy this ring to every instance.",
                next.sealing_id(),
                key_list(&ring.ids()[1..])
            );
            (next, done)
        }
    };
    println!("{}", next.expose_specs());
    eprintln!("{done}");
    Ok(())
}

/// `key 1` or `keys 1, 3`.
fn key_list(ids: &[u8]) -> String {
    let ids: Vec<String> = ids.iter().map(u8::to_string).collect();
    match ids.len() {
        1 => format!("key {}", ids[0]),
        _ => format!("keys {}", ids.join(", ")),
    }
}

/// `dynarelay relay`: the model's streamed tables' changes into Redis, until Ctrl-C or SIGTERM.
async fn relay(args: RelayArgs) -> anyhow::Result<()> {
    tokio::spawn(Hangups::listen().changing_nothing("a relay reads no file after its start"));
    let model = load_model(&args.model)?;
    let feed = dynarelay::stream::redis_feed::RedisFeed::new(
        &args.redis.redis_url,
        args.redis.redis_ca_file.as_deref(),
    )?;
    let names = Tables::new(model, &args.model.table_prefix);
    let tables = streamed_tables(model, &names, &args.model)?;
    let sdk = SdkSettings::default();
    let client = dynamo::client_from_env_with(&sdk).await;
    let metrics = std::sync::Arc::new(dynarelay::metrics::Metrics::default());
    let progress = std::sync::Arc::new(dynarelay::stream::relay::Progress::default());
    if let Some(address) = args.health_listen {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("binding {address} (--health-listen)"))?;
        tracing::info!(address = %listener.local_addr()?, "health checks are served");
        let router = http::relay_health::relay_health_router(
            std::sync::Arc::clone(&metrics),
            std::sync::Arc::clone(&progress),
        );
        tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, router).await {
                tracing::warn!(error = %err, "the health listener stopped");
            }
        });
    }
    let leases = dynarelay::stream::leases::LeaseTable::new(
        client.clone(),
        format!("{}{}", args.model.table_prefix, args.lease_table),
    );
    let parts = dynarelay::stream::relay::RelayParts {
        dynamodb: client,
        streams: dynamo::streams_client_from_env_with(&sdk).await,
        leases,
        feed,
        recognise: dynarelay::graphql::subscription::recogniser(model, &names),
        metrics,
    };
    let settings = dynarelay::stream::relay::RelaySettings {
        stream: dynarelay::stream::StreamSettings {
            poll_interval: Duration::from_millis(args.stream_poll_interval_ms),
            ..dynarelay::stream::StreamSettings::default()
        },
        lease_period: Duration::from_millis(args.lease_period_ms),
        max_len: args.redis.redis_max_len,
    };
    tracing::info!(tables = ?tables, lease_table = %parts.leases.name(), "dynarelay relays the tables' changes to Redis");
    dynarelay::stream::relay::relay(parts, tables, settings, progress, shutdown_signal()).await?;
    Ok(())
}

/// The full names of the model's tables with a stream; an error when there is none.
fn streamed_tables(model: &Model, names: &Tables, args: &ModelArgs) -> anyhow::Result<Vec<String>> {
    let tables: Vec<String> = model
        .streamed_tables()
        .map(|t| names.name(t).to_owned())
        .collect();
    if tables.is_empty() {
        anyhow::bail!(
            "the model {} declares no table with a `stream`: there is nothing to relay",
            args.model.display()
        );
    }
    Ok(tables)
}

/// `dynarelay lambda-relay`: DynamoDB Streams events, from Lambda's runtime API, into Redis.
async fn lambda_relay(args: LambdaRelayArgs) -> anyhow::Result<()> {
    tokio::spawn(Hangups::listen().changing_nothing("a relay reads no file after its start"));
    let model = load_model(&args.model)?;
    let feed = dynarelay::stream::redis_feed::RedisFeed::new(
        &args.redis.redis_url,
        args.redis.redis_ca_file.as_deref(),
    )?;
    let names = Tables::new(model, &args.model.table_prefix);
    let tables = streamed_tables(model, &names, &args.model)?;
    let events = std::sync::Arc::new(tokio::sync::Mutex::new(
        dynarelay::stream::stream_events::StreamEvents::new(
            feed,
            args.redis.redis_max_len,
            tables,
            dynarelay::graphql::subscription::recogniser(model, &names),
        ),
    ));
    tracing::info!("dynarelay is waiting for DynamoDB Streams events");
    let handler =
        lambda_http::service_fn(move |event: lambda_http::LambdaEvent<serde_json::Value>| {
            let events = std::sync::Arc::clone(&events);
            async move {
                let response = events.lock().await.handle(event.payload).await?;
                Ok::<_, lambda_http::Error>(response)
            }
        });
    lambda_http::lambda_runtime::run(handler)
        .await
        .map_err(|err| anyhow::anyhow!("the Lambda runtime stopped: {err}"))
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}
