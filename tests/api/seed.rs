//! `dynarelay seed` end to end against DynamoDB Local: every attribute type written exactly,
//! files of more than one batch, and every kind of bad file refused with nothing written. Also
//! the examples' items files (`examples/shop/items.json`, which `scripts/dev` seeds, and
//! `examples/ecommerce/items.json`) kept equal to the data sets their `data.rs` generates, what
//! `scripts/dev` and the single-table guide say those hold, and `scripts/dev`'s build compiling
//! no dev-dependency.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::{
    dynamo::{Item, typed_json},
    number::DynamoNumber,
};
use serde_json::{Value, json};

use crate::{
    ecommerce_data,
    helpers::{
        check_generated, dynarelay_command, endpoint, items_file, run_succeeding, scan_all,
        unique_prefix,
    },
    shop_data::{self, PurchaseRecord, SPECIAL_COUNTS, SeedSpec},
};

const FLEET: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/fleet/dynarelay.toml");

/// Runs `dynarelay seed --model examples/fleet/dynarelay.toml` on `file` under `prefix` (with
/// `extra` flags); returns whether it succeeded and its stderr.
fn seed(prefix: &str, file: &str, extra: &[&str]) -> (bool, String) {
    let path = std::env::temp_dir().join(format!("dynarelay-seed-{}.json", unique_prefix()));
    std::fs::write(&path, file).unwrap();
    let out = dynarelay_command(&endpoint())
        .env("DYNARELAY_TABLE_PREFIX", prefix)
        .args(["seed", "--model", FLEET, "--items"])
        .arg(&path)
        .args(extra)
        .output()
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh prefix with the fleet's tables created.
fn fleet_tables() -> String {
    let prefix = unique_prefix();
    run_succeeding(
        dynarelay_command(&endpoint())
            .env("DYNARELAY_TABLE_PREFIX", &prefix)
            .args(["tables", "create", "--model", FLEET]),
    );
    prefix
}

/// `count` plain vehicles, numbered from 1.
fn vehicles(count: usize) -> Vec<Value> {
    (1..=count)
        .map(|n| json!({ "vehicleNo": { "N": n.to_string() }, "depot": { "S": "north" } }))
        .collect()
}

/// An item with numbers in DynamoDB's stored form and sets in order, so that two items holding
/// the same values compare equal however their numbers were written.
fn canonical(item: &Item) -> Item {
    item.iter()
        .map(|(name, value)| (name.clone(), canonical_value(value)))
        .collect()
}

fn canonical_value(value: &AttributeValue) -> AttributeValue {
    let number = |n: &String| DynamoNumber::normalize(n).unwrap().into_string();
    let sorted = |mut set: Vec<String>| {
        set.sort();
        set
    };
    match value {
        AttributeValue::N(n) => AttributeValue::N(number(n)),
        AttributeValue::Ns(set) => AttributeValue::Ns(sorted(set.iter().map(number).collect())),
        AttributeValue::Ss(set) => AttributeValue::Ss(sorted(set.clone())),
        AttributeValue::Bs(set) => {
            let mut set = set.clone();
            set.sort_by(|a, b| a.as_ref().cmp(b.as_ref()));
            AttributeValue::Bs(set)
        }
        AttributeValue::L(list) => AttributeValue::L(list.iter().map(canonical_value).collect()),
        AttributeValue::M(map) => AttributeValue::M(canonical(map)),
        other => other.clone(),
    }
}

/// The items of `table` read back with plain Scans, canonical, keyed by `key`'s value.
async fn read_back(prefix: &str, table: &str, key: &str) -> HashMap<String, Item> {
    let client = dynarelay::dynamo::client_for_local(&endpoint());
    scan_all(&client, &format!("{prefix}{table}"))
        .await
        .iter()
        .map(|item| {
            (
                format!("{:?}", canonical_value(&item[key])),
                canonical(item),
            )
        })
        .collect()
}

#[tokio::test]
async fn seed_writes_every_attribute_type_exactly_and_more_than_one_batch() {
    let prefix = fleet_tables();
    let firmware = json!({
        "digest": { "B": "3q2+7w==" },
        "text": { "S": "naïve 🚌 \"quoted\"" },
        "emptyText": { "S": "" },
        "emptyBytes": { "B": "" },
        "wide": { "N": "12345678901234567890123456789012345678" },
        "negativeWide": { "N": "-0.12345678901234567890123456789012345678" },
        "tiny": { "N": "1e-130" },
        "huge": { "N": "9.9999999999999999999999999999999999999E+125" },
        "written": { "N": "+007.50" },
        "flag": { "BOOL": false },
        "nothing": { "NULL": true },
        "tags": { "SS": ["b", "a", "ü"] },
        "sizes": { "NS": ["1e-130", "-3", "12345678901234567890123456789012345678"] },
        "blobs": { "BS": ["AA==", "/w==", "AAEC"] },
        "list": { "L": [
            { "S": "x" },
            { "N": "2.50" },
            { "L": [] },
            { "M": { "deep": { "L": [{ "BOOL": true }, { "NULL": true }, { "B": "AQ==" }] } } }
        ] },
        "map": { "M": {
            "empty": { "M": {} },
            "set": { "NS": ["0.1", "10"] },
            "nested": { "M": { "n": { "N": "-1E-5" } } }
        } }
    });
    let mut fleet = vehicles(59);
    fleet.push(json!({
        "vehicleNo": { "N": "99999999999999999999999999999999999999" },
        "seats": { "N": "1e-130" }
    }));
    let file = json!({ "Firmware": [firmware], "Vehicles": fleet });
    let (ok, said) = seed(&prefix, &file.to_string(), &[]);
    assert!(ok, "{said}");
    assert!(
        said.contains("wrote 61 items in")
            && said.contains(&format!("{prefix}Firmware 1, {prefix}Vehicles 60")),
        "{said}"
    );

    let stored = read_back(&prefix, "Firmware", "digest").await;
    let expected = canonical(&typed_json::item_from_json(&file["Firmware"][0]).unwrap());
    assert_eq!(stored.len(), 1);
    assert_eq!(stored.values().next(), Some(&expected));
    let stored = read_back(&prefix, "Vehicles", "vehicleNo").await;
    assert_eq!(stored.len(), 60);
    for vehicle in file["Vehicles"].as_array().unwrap() {
        let expected = canonical(&typed_json::item_from_json(vehicle).unwrap());
        let key = format!("{:?}", expected["vehicleNo"]);
        assert_eq!(stored.get(&key), Some(&expected), "{key}");
    }
}

#[tokio::test]
async fn seed_refuses_a_bad_file_whole_and_names_the_table_and_item() {
    let prefix = fleet_tables();
    // 30 sound items first: more than a batch, which a writer that checks as it goes would
    // already have written.
    let with = |bad: Value| {
        let mut items = vehicles(30);
        items.push(bad);
        json!({ "Vehicles": items }).to_string()
    };
    let cases = [
        (
            json!({ "Vehicles": vehicles(30), "Buses": [] }).to_string(),
            "`Buses` is not a table of the model (its tables: Vehicles, Trips, ServiceLog, \
             Firmware",
        ),
        (
            with(json!({ "depot": { "S": "south" } })),
            "Vehicles[30]: key attribute `vehicleNo` (N, a number) is missing",
        ),
        (
            with(json!({ "vehicleNo": { "S": "31" } })),
            "Vehicles[30]: key attribute `vehicleNo` is S, but the model declares it N",
        ),
        (
            with(json!({ "vehicleNo": { "N": "31" }, "seats": { "S": "many" } })),
            "Vehicles[30]: index key attribute `seats` is S, but the model declares it N",
        ),
        (
            with(json!({ "vehicleNo": { "N": "1.0" } })),
            "Vehicles[30]: has the same primary key as Vehicles[0]",
        ),
        (
            with(json!({ "vehicleNo": { "N": "31" }, "odometer": { "N": 1200.5 } })),
            "Vehicles[30]: attribute `odometer`: N takes its number as a JSON string",
        ),
        (
            with(json!({ "vehicleNo": { "N": "31" }, "tags": { "SS": ["a", "a"] } })),
            "Vehicles[30]: attribute `tags`: element 1 repeats",
        ),
        (
            format!("{{\"Vehicles\": {}", json!(vehicles(30))),
            "not a JSON object of table names to lists of items: EOF while parsing",
        ),
    ];
    for (file, needle) in cases {
        let (ok, said) = seed(&prefix, &file, &[]);
        assert!(!ok, "{needle}: succeeded");
        assert!(
            said.contains(needle) && said.contains("nothing was written"),
            "{needle}:\n{said}"
        );
        assert!(read_back(&prefix, "Vehicles", "vehicleNo").await.is_empty());
    }
}

#[tokio::test]
async fn seed_stops_before_writing_when_a_table_is_missing_or_holds_items_with_if_empty() {
    let missing = unique_prefix();
    let file = json!({ "Vehicles": vehicles(3) }).to_string();
    let (ok, said) = seed(&missing, &file, &[]);
    assert!(!ok);
    assert!(
        said.contains(&format!("the table {missing}Vehicles does not exist"))
            && said.contains("dynarelay tables create"),
        "{said}"
    );

    let prefix = fleet_tables();
    let (ok, said) = seed(
        &prefix,
        &json!({ "Vehicles": vehicles(2) }).to_string(),
        &[],
    );
    assert!(ok, "{said}");
    let (ok, said) = seed(&prefix, &file, &["--if-empty"]);
    assert!(ok, "{said}");
    assert!(
        said.contains("already holds items: nothing was written"),
        "{said}"
    );
    assert_eq!(read_back(&prefix, "Vehicles", "vehicleNo").await.len(), 2);
    let (ok, said) = seed(&prefix, &file, &[]);
    assert!(ok, "{said}");
    assert_eq!(read_back(&prefix, "Vehicles", "vehicleNo").await.len(), 3);
}

#[test]
fn the_shops_items_file_is_the_data_set_data_rs_generates() {
    let data = shop_data::generate(&SeedSpec::DEMO);
    let products: Vec<Item> = data.products.iter().map(|p| p.to_item()).collect();
    let users: Vec<Item> = data.users.iter().map(|u| u.to_item()).collect();
    let purchases: Vec<Item> = data.purchases.iter().map(PurchaseRecord::to_item).collect();
    check_generated(
        "examples/shop/items.json",
        &items_file(&[
            ("Products", products.iter().collect()),
            ("Users", users.iter().collect()),
            ("Purchases", purchases.iter().collect()),
        ]),
    );
}

#[test]
fn the_ecommerce_items_file_is_the_data_set_data_rs_generates() {
    let data = ecommerce_data::generate(ecommerce_data::SEED);
    check_generated(
        "examples/ecommerce/items.json",
        &items_file(&[(ecommerce_data::TABLE, data.items().collect())]),
    );
}

/// The single-table guide lists the e-commerce data's example customers and its orders by
/// status, for trying the API: they must be the data set's.
#[test]
fn the_single_table_guide_describes_the_seeded_ecommerce_data() {
    let guide = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/src/guides/single-table.md"
    ))
    .unwrap();
    let data = ecommerce_data::generate(ecommerce_data::SEED);
    let count = |kind: ecommerce_data::Kind, username: &str| {
        data.entities()
            .filter(|(k, item)| {
                *k == kind && ecommerce_data::attr(item, "username") == Some(username)
            })
            .count()
    };
    let mut expected: Vec<String> = ecommerce_data::NAMED_CUSTOMERS
        .iter()
        .map(|(username, addresses, orders)| {
            assert_eq!(count(ecommerce_data::Kind::Address, username), *addresses);
            assert_eq!(count(ecommerce_data::Kind::Order, username), *orders);
            format!(
                "| `{}` | {addresses} | {orders} |\n",
                Value::from(*username)
            )
        })
        .collect();
    for status in ecommerce_data::STATUSES {
        let orders = data
            .orders
            .iter()
            .filter(|o| ecommerce_data::attr(o, "status") == Some(status))
            .count();
        expected.push(format!("{orders} `{status}`"));
    }
    let missing: Vec<&String> = expected.iter().filter(|l| !guide.contains(*l)).collect();
    assert!(missing.is_empty(), "single-table.md lacks {missing:#?}");
}

/// `scripts/dev` prints the categories and the example users of the data set it seeds, for
/// trying the API: they must be the data set's.
#[test]
fn scripts_dev_names_the_categories_and_example_users_of_the_seeded_data() {
    let script =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/dev")).unwrap();
    let data = shop_data::generate(&SeedSpec::DEMO);
    let mut categories: Vec<&str> = data.products.iter().map(|p| p.category.as_str()).collect();
    categories.sort_unstable();
    categories.dedup();
    let mut expected = vec![format!("  categories {}", categories.join(", "))];
    for (user, count) in data.users.iter().zip(SPECIAL_COUNTS) {
        let purchases = data
            .purchases
            .iter()
            .filter(|p| p.user_id == user.user_id)
            .count();
        assert_eq!(purchases, count);
        expected.push(format!("    {}  {count}\n", user.user_id));
    }
    for line in expected {
        assert!(script.contains(&line), "scripts/dev lacks {line:?}");
    }
}

/// The packages `cargo tree` lists for dynarelay over the given kinds of dependency edges.
fn dependency_tree(edges: &str) -> std::collections::BTreeSet<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--locked", "--offline", "--prefix", "none"])
        .args(["--format", "{p}", "-p", "dynarelay", "-e", edges])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo tree -e {edges}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// The quick start's first build is the binary's alone: `cargo build --bin` compiles the
/// package's normal and build dependencies and never its dev-dependencies, and none of the
/// heavy dev-dependencies is also reached through a normal one.
#[test]
fn scripts_dev_builds_the_binary_alone_and_no_dev_dependency() {
    let script =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/dev")).unwrap();
    let cargo_calls: Vec<&str> = script
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#') && line.contains("cargo "))
        .collect();
    assert_eq!(cargo_calls, ["cargo build --locked --bin dynarelay"]);
    let built = dependency_tree("normal,build");
    let with_dev = dependency_tree("normal,build,dev");
    for heavy in ["criterion", "proptest", "mdbook-driver"] {
        assert!(with_dev.contains(heavy), "{heavy} is no dev-dependency");
        assert!(
            !built.contains(heavy),
            "the binary's build compiles {heavy}"
        );
    }
}
