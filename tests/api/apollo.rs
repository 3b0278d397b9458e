//! Apollo Client 4 in Node (`tests/clients`) against a real server: `relayStylePagination` paging
//! through every connection of the shop, and through the union connections of the ecommerce
//! example's item collections, to the ground truth read straight from DynamoDB, and Automatic
//! Persisted Queries through Apollo's `PersistedQueryLink`.
//!
//! The ground truth here comes from plain SDK `Query` and `Scan` calls on the tables, never from
//! the server's store code. The scripts also take a `--fault` that corrupts what the server sends
//! in one specific way; the `..._fail_...` tests run them and require each to fail with its own
//! message, which is how every check of the scripts has been seen to fail.
//!
//! This file holds what the paging tests share: a walk for `apollo-paging.mjs` ([`Case`]), running
//! the script, and reading its summary. The tests are in `apollo/`: the shop's connections
//! (`shop.rs`), the ecommerce example's union connections (`unions.rs`), Automatic Persisted
//! Queries (`persisted.rs`), and the secure shop with a bearer token (`secure.rs`).

mod persisted;
mod secure;
mod shop;
mod unions;

use std::collections::HashSet;

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::Item;
use serde_json::{Value, json};

use crate::helpers::{NodeRun, run_node, unique_prefix};

/// The string value of an `S` or `N` attribute.
fn attr<'a>(item: &'a Item, name: &str) -> &'a str {
    match item.get(name) {
        Some(AttributeValue::S(v) | AttributeValue::N(v)) => v,
        other => panic!("attribute {name} is {other:?} in {item:?}"),
    }
}

/// The identity strings the script builds from what Apollo's cache holds.
fn purchase_id(item: &Item) -> String {
    let [user, at, amount, status] =
        ["userId", "purchasedAt", "amount", "status"].map(|a| attr(item, a));
    format!("{user}|{at}|{amount}|{status}")
}

/// One walk for the script: a connection, its variables (with `first` or `last`), and the
/// ground truth in connection order.
struct Case {
    name: String,
    connection: &'static str,
    variables: Value,
    expected: Vec<String>,
    /// The most pages the walk may take.
    max_pages: usize,
    /// Every page but the last must be full.
    full_pages: bool,
}

impl Case {
    /// A walk on a server with a roomy read budget: full pages, exactly `ceil(n / size)` of them.
    fn full(name: &str, connection: &'static str, variables: Value, expected: Vec<String>) -> Self {
        let size = page_size(&variables);
        Self {
            name: name.to_owned(),
            connection,
            max_pages: expected.len().div_ceil(size).max(1),
            variables,
            expected,
            full_pages: true,
        }
    }

    fn to_json(&self) -> Value {
        let unique: HashSet<&String> = self.expected.iter().collect();
        assert_eq!(
            unique.len(),
            self.expected.len(),
            "{}: ground truth repeats",
            self.name
        );
        json!({
            "name": self.name,
            "connection": self.connection,
            "variables": self.variables,
            "expected": self.expected,
            "maxPages": self.max_pages,
            "fullPages": self.full_pages,
        })
    }
}

fn page_size(variables: &Value) -> usize {
    variables["first"]
        .as_u64()
        .or_else(|| variables["last"].as_u64())
        .unwrap() as usize
}

fn with(variables: &Value, extra: Value) -> Value {
    let mut merged = variables.clone();
    for (k, v) in extra.as_object().unwrap() {
        merged[k] = v.clone();
    }
    merged
}

/// Runs `apollo-paging.mjs` with `cases` against `url`, a server of `model` (the script's name
/// for it: `shop` or `ecommerce`).
async fn run_paging(url: &str, model: &str, cases: &[Case], fault: Option<&str>) -> NodeRun {
    let plan = json!({
        "model": model,
        "cases": cases.iter().map(Case::to_json).collect::<Vec<_>>(),
    });
    let path = std::env::temp_dir().join(format!("dynarelay-apollo-{}.json", unique_prefix()));
    std::fs::write(&path, plan.to_string()).unwrap();
    let plan_path = path.to_str().unwrap();
    let mut args = vec![url, plan_path];
    if let Some(fault) = fault {
        args.extend(["--fault", fault]);
    }
    let run = run_node("apollo-paging.mjs", &args, &[]).await;
    let _ = std::fs::remove_file(&path);
    run
}

/// The script's summary: per case, its page count, items, pages short of full or empty (the
/// last page not counted), and the final list.
fn summary(run: &NodeRun) -> Vec<Value> {
    let line = run.stdout.lines().last().unwrap_or_default();
    let parsed: Value = serde_json::from_str(line)
        .unwrap_or_else(|_| panic!("no summary on stdout:\n{}", run.stdout));
    parsed["cases"].as_array().unwrap().clone()
}
