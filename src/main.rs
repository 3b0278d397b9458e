//! The `dynarelay` binary: parses the command line, sets up logging, and runs one command.

use std::{io::IsTerminal, time::Duration};

use anyhow::Context;
use clap::Parser;
use dynarelay::{
    config::{Cli, Command, KeygenArgs, LogFormat, SeedArgs, ServeArgs, TablesCommand},
    cursor::{CursorCodec, CursorSecret},
    dynamo::{self, Store, tables},
    http, seed,
};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let logs = tracing_subscriber::fmt().with_env_filter(
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
    );
    match cli.log_format {
        LogFormat::Text => logs.with_ansi(std::io::stdout().is_terminal()).init(),
        LogFormat::Json => logs.json().with_current_span(true).init(),
    }
    match cli.command {
        Command::Serve(args) => serve(args).await,
        Command::Tables(TablesCommand::Create(args)) => {
            let client = dynamo::client_from_env().await;
            let outcomes = tables::create_missing(
                &client,
                &args.tables.tables(),
                Duration::from_secs(args.wait_timeout_secs),
            )
            .await?;
            for (table, outcome) in outcomes {
                tracing::info!(table, ?outcome, "table is ACTIVE");
            }
            Ok(())
        }
        Command::Seed(args) => seed(args).await,
        Command::Keygen(args) => keygen(args),
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
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
    if ring.is_development() {
        tracing::warn!(
            "cursors are sealed with the public development key: anyone can forge them; \
             run `dynarelay keygen` for a real key"
        );
    }
    let codec = CursorCodec::new(ring);
    let store = Store::new(
        dynamo::client_from_env_with(&args.sdk()).await,
        args.tables.tables(),
    );
    let state = http::AppState::new(store, limits, codec, args.http());
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    tracing::info!(address = %listener.local_addr()?, graphiql = args.graphiql, "dynarelay is listening");
    http::serve(
        listener,
        http::router(state),
        shutdown_signal(),
        args.shutdown_timeout(),
    )
    .await?;
    tracing::info!("stopped");
    Ok(())
}

async fn seed(args: SeedArgs) -> anyhow::Result<()> {
    let store = Store::new(dynamo::client_from_env().await, args.tables.tables());
    if args.if_empty && !store.is_empty(&store.tables().users).await? {
        tracing::info!(
            table = store.tables().users,
            "already holds data; not seeding"
        );
        return Ok(());
    }
    let data = seed::generate(&seed::SeedSpec {
        seed: args.seed,
        users: args.users,
        products: args.products,
        categories: usize::from(args.categories),
    });
    seed::write(&store, &data).await?;
    tracing::info!(
        users = data.users.len(),
        products = data.products.len(),
        purchases = data.purchases.len(),
        seed = args.seed,
        "seeded"
    );
    for (user, count) in data.users.iter().zip(seed::SPECIAL_COUNTS) {
        tracing::info!(user_id = user.user_id, purchases = count, "example user");
    }
    Ok(())
}

/// Prints a new key on stdout: the one place a secret is shown, on purpose.
#[allow(clippy::print_stdout)]
fn keygen(args: KeygenArgs) -> anyhow::Result<()> {
    let secret =
        CursorSecret::generate(args.id).context("reading the system's random generator")?;
    println!("{}", secret.expose_spec());
    Ok(())
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
