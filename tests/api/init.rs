//! `dynarelay init` on the examples' tables: the shop's and the fleet's data are written with
//! their own seeders, `init` reads the tables back into a model, and that model is served over
//! the same tables. Every Query connection it proposes is walked at every page size, both ways,
//! against DynamoDB's own Query of the same partition; every Scan connection returns the whole
//! table; every lookup finds sampled items; every relation finds its targets. The differences
//! from the hand-written model are listed in `tests/fixtures/init/<example>.txt` (rewritten when
//! they change, so a change is seen in review), and docs/src/guides/your-own-tables.md explains
//! them. The walks are in [`walk`], the differences in [`differences`].

mod aws_designs;
mod bad_input;
mod differences;
mod drift;
mod hand_rolled;
mod walk;

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::{
    dynamo::Item,
    init::{InitOptions, InitOutcome, init},
};

use crate::{
    ecommerce_data, fleet_data, foreign_keys,
    helpers::{ModelApp, check_generated, model_app, model_app_over, put_plain, written_by},
    shop_data,
    tools::amplify,
};
use differences::differences;
use walk::{Truth, item_key, walk_everything};

/// A string attribute value.
fn s(text: impl Into<String>) -> AttributeValue {
    AttributeValue::S(text.into())
}

/// A number attribute value.
fn n(number: impl ToString) -> AttributeValue {
    AttributeValue::N(number.to_string())
}

/// An item of `(attribute, value)` pairs.
fn item<const N: usize>(pairs: [(&str, AttributeValue); N]) -> Item {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// `init` over every table under the app's prefix.
async fn run_init(app: &ModelApp, sample: usize) -> InitOutcome {
    let options = InitOptions {
        tables: None,
        prefix: app.prefix.clone(),
        sample,
    };
    init(
        app.client(),
        &options,
        &mut |_: &str, _: usize, _: usize| {},
    )
    .await
    .unwrap_or_else(|err| panic!("{err:#}"))
}

#[tokio::test]
async fn the_shop_served_from_its_inferred_model_walks_as_dynamodb_reads() {
    let hand = model_app("examples/shop/dynarelay.toml").await;
    let data = shop_data::generate(&shop_data::SeedSpec {
        seed: 7,
        users: 24,
        products: 12,
        categories: 3,
    });
    shop_data::write(
        &hand.store,
        &shop_data::ShopTables::with_prefix(&hand.prefix),
        &data,
    )
    .await
    .unwrap();
    init_serve_and_walk(&hand, "shop", Truth::TypeAttribute).await;
}

#[tokio::test]
async fn the_fleet_served_from_its_inferred_model_walks_as_dynamodb_reads() {
    let hand = model_app("examples/fleet/dynarelay.toml").await;
    let tables = fleet_data::FleetTables::with_prefix(&hand.prefix);
    let data = fleet_data::generate(fleet_data::SEED);
    fleet_data::write(&hand.store, &tables, &data)
        .await
        .unwrap();
    init_serve_and_walk(&hand, "fleet", Truth::TypeAttribute).await;
}

/// `init` over `hand`'s tables, its model served over them and walked ([`serve_and_walk`]); the
/// model's text.
async fn init_serve_and_walk(hand: &ModelApp, name: &str, truth: Truth<'_>) -> String {
    let text = infer(hand, name).await;
    serve_and_walk(hand, name, &text, truth).await;
    text
}

/// `init` over `hand`'s tables: the model's text, also left in the temporary directory as
/// `dynarelay-init-<name>.toml`, to read when a walk fails.
async fn infer(hand: &ModelApp, name: &str) -> String {
    let outcome = run_init(hand, 500).await;
    std::fs::write(
        std::env::temp_dir().join(format!("dynarelay-init-{name}.toml")),
        &outcome.text,
    )
    .unwrap();
    outcome.text
}

/// The model `text` served over `hand`'s tables (and checked with its writes turned on): every
/// item of each type served by its Scan,
/// every connection walked, and the differences from `hand`'s model kept in
/// `tests/fixtures/init/<name>.txt`.
async fn serve_and_walk(hand: &ModelApp, name: &str, text: &str, truth: Truth<'_>) {
    // The writes it leaves off load too, each turned on.
    let writes = text.replace("\n# mutations.", "\nmutations.");
    assert!(writes != text, "no mutation lines:\n{text}");
    if let Err(problems) = dynarelay::model::parse("init's model, writes on", &writes) {
        panic!("{problems}\n{writes}");
    }
    let inferred = model_app_over(text, &hand.prefix);
    walk_everything(&inferred, truth).await;
    check_generated(
        &format!("tests/fixtures/init/{name}.txt"),
        &differences(hand.model, inferred.model),
    );
}

/// The lines of a model's text that start with `start`, in order.
fn lines_starting<'t>(text: &'t str, start: &str) -> Vec<&'t str> {
    text.lines().filter(|l| l.starts_with(start)).collect()
}

/// A table written by another tool's own npm library (`tests/clients/writers/<tool>.mjs`), read
/// back by `init` and served: every connection walked, the differences from the example's
/// hand-written model kept in `tests/fixtures/init/<tool>.txt`.
async fn round_trip(tool: &str, model: &str, table: &str) -> String {
    let hand = model_app(model).await;
    written_by(tool, &hand.table(table)).await;
    init_serve_and_walk(&hand, tool, Truth::TypeAttribute).await
}

/// ElectroDB's entities come out declared as ElectroDB declares them (`electrodb = { … }`, as
/// the example's are), not as plain templates: the differences file shows the keys it gives
/// are the hand-written model's.
#[tokio::test]
async fn electrodb_data_served_from_its_inferred_model_walks_as_dynamodb_reads() {
    let text = round_trip("electrodb", "examples/electrodb/dynarelay.toml", "Lending").await;
    let declared = lines_starting(&text, "electrodb = ");
    assert_eq!(
        declared,
        [
            r#"electrodb = { service = "lending", entity = "member", version = "1", pk = ["memberId"] }"#,
            r#"electrodb = { service = "lending", entity = "loan", version = "1", pk = ["memberId"], sk = ["loanedAt", "loanId"], indexes = { gsi1 = { pk = ["status"], sk = ["loanedAt", "loanId"] } } }"#,
        ],
        "{text}"
    );
    assert!(!text.contains("\nkeys = "), "{text}");
}

#[tokio::test]
async fn toolbox_data_served_from_its_inferred_model_walks_as_dynamodb_reads() {
    round_trip("toolbox", "examples/toolbox/dynarelay.toml", "Shop").await;
}

#[tokio::test]
async fn onetable_data_served_from_its_inferred_model_walks_as_dynamodb_reads() {
    round_trip("onetable", "examples/onetable/dynarelay.toml", "Tracker").await;
}

/// Amplify's table, as its resolvers write it (owners with 0 to 100 orders, ties on
/// `status#createdAt`): a type attribute with one type, plain key attributes and a composite
/// sort key attribute.
#[tokio::test]
async fn amplify_data_served_from_its_inferred_model_walks_as_dynamodb_reads() {
    let hand = model_app("examples/amplify/dynarelay.toml").await;
    let mut items = Vec::new();
    for (n, (owner, count)) in [
        ("o::one", 1),
        ("t::twenty#20", 20),
        ("u::TWENTY ONE", 21),
        ("h::日本", 100),
    ]
    .into_iter()
    .enumerate()
    {
        for i in 0..count {
            let status = ["PLACED", "SHIPPED", "DELIVERED"][(i * 7 + n) % 3];
            let minute = i - usize::from(i % 4 == 3);
            let at = format!("2026-05-01T{:02}:{:02}:00.000Z", minute / 60, minute % 60);
            items.push(amplify::order(
                &format!("{n}-{i:03}"),
                owner,
                status,
                &at,
                "10.5",
            ));
        }
    }
    hand.store
        .put_items(&hand.table(amplify::TABLE), items)
        .await
        .unwrap();
    let text = init_serve_and_walk(&hand, "amplify", Truth::TypeAttribute).await;
    // One connection per owner, its status an optional `fixed` argument (left out, every
    // status), rather than one with the status and one without.
    let fixed = lines_starting(&text, "sort.fixed = ");
    assert_eq!(
        fixed,
        [
            r#"sort.fixed = [{ name = "status", optional = true, description = "Only items of this `status`; every item of the partition when left out." }]"#
        ],
        "{text}"
    );
    let by_owner = text.matches("index = \"byOwner\"").count();
    assert_eq!(by_owner, 1, "{text}");
}

/// A table whose type attribute names each item's type and whose keys are plain values (no
/// templates): each type's section holds no `keys` and no `escape_keys`, and the model serves
/// every item.
#[tokio::test]
async fn types_of_plain_keys_are_written_without_templates() {
    let hand = model_app("tests/fixtures/init/plain_keys.toml").await;
    let s = |v: String| AttributeValue::S(v);
    let items = (0..12).map(|n| {
        let (kind, field, value) = match n % 3 {
            0 => ("group", "title", format!("group {n}")),
            _ => ("user", "email", format!("u{n}@example.com")),
        };
        Item::from([
            ("id".to_owned(), s(format!("{kind}-{n}"))),
            ("type".to_owned(), s(kind.to_owned())),
            (field.to_owned(), s(value)),
        ])
    });
    put_plain(hand.client(), &hand.table("Things"), items).await;
    let text = init_serve_and_walk(&hand, "plain_keys", Truth::TypeAttribute).await;
    assert!(!text.contains("keys ="), "{text}");
    assert!(!text.contains("escape_keys"), "{text}");
    assert_eq!(text.matches("type_value = ").count(), 2, "{text}");
}

/// The single-table example's table (examples/ecommerce), whose types no attribute names: told
/// apart by the text their keys start with, and held to the generator's record of each item's
/// type (its junk, made to match no entity, is of none).
#[tokio::test]
async fn the_single_table_example_served_from_its_inferred_model_walks_as_dynamodb_reads() {
    let hand = model_app("examples/ecommerce/dynarelay.toml").await;
    let data = ecommerce_data::generate(ecommerce_data::SEED);
    ecommerce_data::write(&hand.store, &hand.table(ecommerce_data::TABLE), &data)
        .await
        .unwrap();
    let entity = &hand.model.entities[0];
    let kinds: BTreeMap<String, &'static str> = data
        .entities()
        .map(|(kind, item)| (item_key(hand.model, entity, item), kind.typename()))
        .collect();
    init_serve_and_walk(&hand, "ecommerce", Truth::Kinds(&kinds)).await;
}

/// The tickets example's table as hand-written code fills it: `_type` names each item's type,
/// and `#` inside emails and order ids is never escaped; with the seats of two events, some
/// sold (filed under their owner in `GSI1`, and naming their order), some not.
#[tokio::test]
async fn hand_written_single_table_data_served_from_its_inferred_model_walks_as_dynamodb_reads() {
    let hand = model_app("examples/tickets/dynarelay.toml").await;
    foreign_keys::write_items(&hand).await;
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let mut tickets = Vec::new();
    for (n, (event, section, seat)) in [
        ("e-1", "A", "1"),
        ("e-1", "A", "2"),
        ("e-1", "A", "10"),
        ("e-1", "AB", "1"),
        ("e-1", "AB", "12"),
        ("e-2", "A", "1"),
        ("e-2", "B", "3"),
        ("e-2", "B", "30"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut item: Item = [
            ("PK", s(&format!("EVENT#{event}"))),
            ("SK", s(&format!("SEAT#{section}#{seat}"))),
            ("_type", s("Ticket")),
            ("eventId", s(event)),
            ("section", s(section)),
            ("seat", s(seat)),
            ("price", AttributeValue::N(format!("{}.5", 10 + n))),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        // Sold: to a customer, in one of their orders.
        let sold = [
            ("a#b@example.com", "o-1"),
            ("a#b@example.com", "x#y"),
            ("a", "b@example.com"),
        ];
        if n % 3 != 2 {
            let (owner, order) = sold[n % sold.len()];
            item.insert("owner".to_owned(), s(owner));
            item.insert("orderId".to_owned(), s(order));
            item.insert("GSI1PK".to_owned(), s(&format!("OWNER#{owner}")));
            item.insert(
                "GSI1SK".to_owned(),
                s(&format!("TICKET#{event}#{section}#{seat}")),
            );
        }
        tickets.push(item);
    }
    hand.store
        .put_items(&hand.table("Tickets"), tickets)
        .await
        .unwrap();
    init_serve_and_walk(&hand, "tickets", Truth::TypeAttribute).await;
}
