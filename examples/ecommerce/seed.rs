//! `cargo run --example ecommerce-seed`: creates the e-commerce example's table
//! (`examples/ecommerce/dynarelay.toml`) when it is missing, and writes its deterministic data
//! set to it: customers, addresses, orders, order items, and a few items that match no entity.
//!
//! DynamoDB is reached through the standard AWS configuration, like `dynarelay` itself:
//! `AWS_REGION`, credentials, and `AWS_ENDPOINT_URL_DYNAMODB` for DynamoDB Local (there also
//! `AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_EC2_METADATA_DISABLED=true`).
//! `DYNARELAY_TABLE_PREFIX` picks the table, `--if-empty` does nothing when it already holds
//! items, and `--seed N` picks another data set.

// A command-line tool: what it prints is its output, for people.
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "data.rs"]
mod data;

use std::{process::ExitCode, time::Duration, time::Instant};

use dynarelay::{
    dynamo::{self, Store, Tables, tables},
    model,
};

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
    let seed = flag(&args, "--seed").map_or(Ok(data::SEED), |v| {
        v.parse()
            .map_err(|_| anyhow::anyhow!("--seed takes a whole number, not {v:?}"))
    })?;
    let prefix = std::env::var("DYNARELAY_TABLE_PREFIX").unwrap_or_default();
    let model = model::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/ecommerce/dynarelay.toml"
    )))?;
    let client = dynamo::client_from_env().await;
    let names = Tables::new(&model, &prefix);
    tables::create_missing(&client, &model, &names, Duration::from_secs(60)).await?;
    let store = Store::new(client, names);
    let table = format!("{prefix}{}", data::TABLE);
    if args.iter().any(|a| a == "--if-empty") && !store.is_empty(&table).await? {
        println!("{table} already holds data; not seeding");
        print_examples(&data::generate(seed));
        return Ok(());
    }
    let started = Instant::now();
    let data = data::generate(seed);
    println!(
        "seeding {} customers, {} addresses, {} orders, {} order items and {} items of no entity (seed {seed})...",
        data.customers.len(),
        data.addresses.len(),
        data.orders.len(),
        data.order_items.len(),
        data.junk.len(),
    );
    data::write(&store, &table, &data).await?;
    println!("seeded in {:.1} s", started.elapsed().as_secs_f64());
    print_examples(&data);
    Ok(())
}

/// What the data set holds, for people trying the API: also printed when `--if-empty` skips,
/// so it describes data seeded earlier with the same seed.
fn print_examples(data: &data::Dataset) {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    println!("example customers (usernames as JSON strings, as GraphQL variables take them):");
    for (username, addresses, orders) in data::NAMED_CUSTOMERS {
        println!(
            "  {:<14} {}, {}",
            serde_json::Value::from(username).to_string(),
            plural(addresses, "address", "addresses"),
            plural(orders, "order", "orders"),
        );
    }
    for status in data::STATUSES {
        let count = data
            .orders
            .iter()
            .filter(|o| data::attr(o, "status") == Some(status))
            .count();
        println!("{count} orders are {status}");
    }
}
