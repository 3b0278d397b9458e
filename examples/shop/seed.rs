//! `cargo run --example shop-seed`: writes the demo shop's deterministic data set to its tables
//! (created first with `dynarelay tables create --model examples/shop/dynarelay.toml`).
//!
//! DynamoDB is reached through the standard AWS configuration, like `dynarelay` itself:
//! `AWS_REGION`, credentials, and `AWS_ENDPOINT_URL_DYNAMODB` for DynamoDB Local.
//! `DYNARELAY_TABLE_PREFIX` picks the tables, and `--if-empty` does nothing when `Users` already
//! holds items. `--seed N`, `--users N`, `--products N` and `--categories N` pick another data
//! set.

// A command-line tool: what it prints is its output, for people.
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "data.rs"]
mod data;

use std::{process::ExitCode, time::Instant};

use dynarelay::{
    dynamo::{self, Store, Tables},
    model,
};

use data::{SPECIAL_COUNTS, SeedSpec, ShopTables};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

async fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |name: &str, default: usize| -> anyhow::Result<usize> {
        flag(&args, name).map_or(Ok(default), |v| {
            v.parse()
                .map_err(|_| anyhow::anyhow!("{name} takes a whole number, not {v:?}"))
        })
    };
    let spec = SeedSpec {
        seed: number("--seed", SeedSpec::DEMO.seed as usize)? as u64,
        users: number("--users", SeedSpec::DEMO.users)?,
        products: number("--products", SeedSpec::DEMO.products)?,
        categories: number("--categories", SeedSpec::DEMO.categories)?.clamp(1, 8),
    };
    let prefix = std::env::var("DYNARELAY_TABLE_PREFIX").unwrap_or_default();
    let model = model::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/shop/dynarelay.toml"
    )))?;
    let tables = ShopTables::with_prefix(&prefix);
    let store = Store::new(
        dynamo::client_from_env().await,
        Tables::new(&model, &prefix),
    );
    if args.iter().any(|a| a == "--if-empty") && !store.is_empty(&tables.users).await? {
        println!("{} already holds data; not seeding", tables.users);
        print_examples(&data::generate(&spec));
        return Ok(());
    }
    let started = Instant::now();
    let data = data::generate(&spec);
    println!(
        "seeding {} users, {} products and {} purchases (seed {})...",
        data.users.len(),
        data.products.len(),
        data.purchases.len(),
        spec.seed
    );
    data::write(&store, &tables, &data).await?;
    println!("seeded in {:.1} s", started.elapsed().as_secs_f64());
    print_examples(&data);
    Ok(())
}

/// What the data set holds, for people trying the API: also printed when `--if-empty` skips,
/// so it describes data seeded earlier with the same flags.
fn print_examples(data: &data::Dataset) {
    let mut categories: Vec<&str> = data.products.iter().map(|p| p.category.as_str()).collect();
    categories.sort_unstable();
    categories.dedup();
    println!("categories: {}", categories.join(", "));
    for (user, count) in data.users.iter().zip(SPECIAL_COUNTS) {
        println!("example user {} has {count} purchases", user.user_id);
    }
}
