//! `dynarelay init` on the examples' tables: the shop's and the fleet's data are written with
//! their own seeders, `init` reads the tables back into a model, and that model is served over
//! the same tables. Every Query connection it proposes is walked at every page size, both ways,
//! against DynamoDB's own Query of the same partition; every Scan connection returns the whole
//! table; every lookup finds sampled items; every relation finds its targets. The differences
//! from the hand-written model are listed in `tests/fixtures/init/<example>.txt` (rewritten when
//! they change, so a change is seen in review), and docs/src/guides/your-own-tables.md explains
//! them.

mod bad_input;
mod drift;

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::{
    cursor::Key,
    dynamo::Item,
    graphql::{
        node::parse_node_id,
        values::{field_value, output},
    },
    init::{InitOptions, InitOutcome, init},
    model::{Entity, EntityId, FieldId, FieldType, Model, PartitionFrom, Read, Scalar},
};
use serde_json::{Value, json};

use crate::{
    ecommerce_data, fleet_data, foreign_keys,
    helpers::{
        GroundQuery, ModelApp, all_nodes, check_generated, model_app, model_app_over, walk_matches,
        written_by,
    },
    shop_data,
    tools::amplify,
};

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

/// `init` over `hand`'s tables, its model served over them, every connection walked, and the
/// differences from `hand`'s model kept in `tests/fixtures/init/<name>.txt`. The model `init`
/// wrote is left in the temporary directory as `dynarelay-init-<name>.toml`, to read when a walk
/// fails.
async fn init_serve_and_walk(hand: &ModelApp, name: &str, truth: Truth<'_>) -> String {
    let outcome = run_init(hand, 500).await;
    std::fs::write(
        std::env::temp_dir().join(format!("dynarelay-init-{name}.toml")),
        &outcome.text,
    )
    .unwrap();
    let inferred = model_app_over(&outcome.text, &hand.prefix);
    check_generated(
        &format!("tests/fixtures/init/{name}.txt"),
        &differences(hand.model, inferred.model),
    );
    walk_everything(&inferred, truth).await;
    outcome.text
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
    let declared: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("electrodb = "))
        .collect();
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
    init_serve_and_walk(&hand, "amplify", Truth::TypeAttribute).await;
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

// ------------------------------------------------------------------ walking the inferred model

/// Whose notion of each item's type the walks are held to: the writer's type attribute (all
/// items, in a table without one), or the data set's own record of what it wrote.
#[derive(Clone, Copy)]
enum Truth<'a> {
    TypeAttribute,
    /// Item keys (as [`item_key`] gives them) to the type the generator made them as; items it
    /// made as junk are absent.
    Kinds(&'a BTreeMap<String, &'static str>),
}

impl Truth<'_> {
    /// Whether the walks can hold `entity` to this truth: a type the data set knows.
    fn knows(self, entity: &Entity) -> bool {
        match self {
            Truth::TypeAttribute => true,
            Truth::Kinds(kinds) => kinds.values().any(|k| *k == entity.name),
        }
    }

    /// The items of `entity` among `items`.
    fn of_entity<'i>(self, model: &Model, entity: &Entity, items: &'i [Item]) -> Vec<&'i Item> {
        let table = &model.tables[entity.table];
        items
            .iter()
            .filter(|item| match (self, &table.type_attribute) {
                (Truth::Kinds(kinds), _) => {
                    kinds.get(&item_key(model, entity, item)).copied() == Some(entity.name.as_str())
                }
                (Truth::TypeAttribute, Some(attribute)) => {
                    let value = entity.type_value.as_deref().unwrap_or(&entity.name);
                    item.get(attribute) == Some(&AttributeValue::S(value.to_owned()))
                }
                (Truth::TypeAttribute, None) => true,
            })
            .collect()
    }
}

/// An item's table key, as text.
fn item_key(model: &Model, entity: &Entity, item: &Item) -> String {
    let key = Key::from_item(item, model.tables[entity.table].key).unwrap();
    format!("{key:?}")
}

/// A node's table key, from its global id, as text.
fn node_key(model: &Model, node: &Value) -> String {
    let id = node["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id: {node}"));
    let (_, key) = parse_node_id(model, id).unwrap();
    format!("{key:?}")
}

/// An item's value of field `field` of `entity`, as the API takes it as an argument.
fn argument(model: &Model, entity: EntityId, field: FieldId, item: &Item) -> Value {
    let value = field_value(model, entity, field, item).unwrap();
    output(model, &model.entities[entity].fields[field], Some(&value))
        .unwrap()
        .unwrap()
        .into_json()
        .unwrap()
}

/// Every connection and lookup of `app`'s model, against DynamoDB's own reads.
async fn walk_everything(app: &ModelApp, truth: Truth<'_>) {
    let model = app.model;
    for connection in &model.connections {
        let e = connection.entity;
        let entity = &model.entities[e];
        if !truth.knows(entity) {
            continue;
        }
        let table = app.table(&model.tables[entity.table].name);
        let index = connection
            .index
            .map(|i| model.tables[entity.table].indexes[i].name.as_str());
        let selection = node_selection(entity);
        let label = format!("Query.{}", connection.name);
        let items = app.scan_all(&table).await;
        let items = truth.of_entity(model, entity, &items);
        match &connection.read {
            Read::Scan => {
                let query = format!(
                    "query($first: Int, $after: String) {{ {}(first: $first, after: $after) {{ \
                     nodes {{ {selection} }} pageInfo {{ hasNextPage endCursor }} }} }}",
                    connection.name
                );
                let mut got: Vec<String> = all_nodes(
                    |vars| app.graphql(&query, vars),
                    &[connection.name.as_str()],
                    7,
                )
                .await
                .iter()
                .map(|node| node_key(model, node))
                .collect();
                let mut want: Vec<String> = items
                    .iter()
                    .map(|item| item_key(model, entity, item))
                    .collect();
                got.sort();
                want.sort();
                assert_eq!(got, want, "{label}");
            }
            Read::Query {
                partition, sort, ..
            } => {
                let PartitionFrom::Argument {
                    argument: arg,
                    field,
                } = &partition.from
                else {
                    continue;
                };
                let attribute = partition.attribute.name;
                // Leading facets of the sort key fixed by required arguments: given the walked
                // item's values, and held to the partition's items with those values.
                let fixed: Vec<(FieldId, &str)> = sort.as_ref().map_or(Vec::new(), |s| {
                    s.fixed.iter().map(|(f, a)| (*f, a.name.as_str())).collect()
                });
                let declared: String = fixed
                    .iter()
                    .enumerate()
                    .map(|(n, (f, _))| {
                        format!(
                            ", $f{n}: {}",
                            graphql_type(model, &entity.fields[*f].ty, false)
                        )
                    })
                    .collect();
                let passed: String = fixed
                    .iter()
                    .enumerate()
                    .map(|(n, (_, a))| format!(", {a}: $f{n}"))
                    .collect();
                // The fullest partitions, and one with a single item when there is one.
                let mut sizes: Vec<(&AttributeValue, &Item, usize)> = Vec::new();
                for item in &items {
                    let Some(value) = item.get(attribute) else {
                        continue;
                    };
                    match sizes.iter_mut().find(|(v, _, _)| *v == value) {
                        Some((_, _, n)) => *n += 1,
                        None => sizes.push((value, item, 1)),
                    }
                }
                sizes.sort_by(|a, b| {
                    b.2.cmp(&a.2)
                        .then(format!("{:?}", a.0).cmp(&format!("{:?}", b.0)))
                });
                let mut chosen: Vec<&(&AttributeValue, &Item, usize)> =
                    sizes.iter().take(2).collect();
                chosen.extend(sizes.iter().rev().find(|(_, _, n)| *n == 1));
                assert!(!chosen.is_empty(), "{label}: no partition to walk");
                let argument_type = graphql_type(model, &entity.fields[*field].ty, false);
                let query = format!(
                    "query($p: {argument_type}{declared}, $first: Int, $after: String, $last: \
                     Int, $before: String) {{ {}({}: $p{passed}, first: $first, after: $after, \
                     last: $last, before: $before) {{ edges {{ cursor node {{ {selection} }} }} \
                     pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }} }} }}",
                    connection.name, arg.name
                );
                for (value, item, _) in chosen {
                    let read = app
                        .query_all(&GroundQuery {
                            table: &table,
                            index,
                            condition: "#p = :p",
                            names: &[("#p", attribute)],
                            values: &[(":p", (*value).clone())],
                            forward: true,
                        })
                        .await;
                    let values: Vec<Value> = fixed
                        .iter()
                        .map(|(f, _)| argument(model, e, *f, item))
                        .collect();
                    let want: Vec<String> = truth
                        .of_entity(model, entity, &read)
                        .iter()
                        .filter(|i| {
                            fixed
                                .iter()
                                .zip(&values)
                                .all(|((f, _), v)| argument(model, e, *f, i) == *v)
                        })
                        .map(|item| item_key(model, entity, item))
                        .collect();
                    let p = argument(model, e, *field, item);
                    walk_matches(
                        |vars| {
                            let mut vars = vars;
                            vars["p"] = p.clone();
                            for (n, v) in values.iter().enumerate() {
                                vars[format!("f{n}").as_str()] = v.clone();
                            }
                            app.graphql(&query, vars)
                        },
                        &[connection.name.as_str()],
                        |node| node_key(model, node),
                        &want,
                        &format!("{label}({} = {p})", arg.name),
                    )
                    .await;
                }
            }
        }
    }
    walk_nested(app, truth).await;
    walk_relations(app, truth).await;
    // Each lookup finds items of its entity by their keys.
    for lookup in &model.lookups {
        let e = lookup.entity;
        let entity = &model.entities[e];
        if !truth.knows(entity) {
            continue;
        }
        let table = app.table(&model.tables[entity.table].name);
        let selection = node_selection(entity);
        let arguments = lookup.arguments(model);
        let (declared, passed) = lookup_arguments(model, entity, arguments);
        let query = format!(
            "query({declared}) {{ {}({passed}) {{ {selection} }} }}",
            lookup.name,
        );
        let items = app.scan_all(&table).await;
        for item in truth.of_entity(model, entity, &items).into_iter().take(5) {
            let mut vars = json!({});
            for &f in arguments {
                vars[entity.fields[f].name.as_str()] = argument(model, e, f, item);
            }
            let response = app.graphql(&query, vars).await;
            assert!(
                response.get("errors").is_none(),
                "{}: {response}",
                lookup.name
            );
            assert_eq!(
                node_key(model, &response["data"][lookup.name.as_str()]),
                item_key(model, entity, item),
                "{}",
                lookup.name
            );
        }
    }
}

/// Every connection under an entity (an item collection too), reached through the entity's
/// lookup by table key for its two fullest partitions, walked against DynamoDB's own Query of
/// the partition, filtered to the connection's types.
async fn walk_nested(app: &ModelApp, truth: Truth<'_>) {
    let model = app.model;
    for (p, parent) in model.entities.iter().enumerate() {
        let Some(lookup) = model
            .lookups
            .iter()
            .find(|l| l.entity == p && l.index.is_none())
        else {
            continue;
        };
        if !truth.knows(parent) {
            continue;
        }
        let table = app.table(&model.tables[parent.table].name);
        let items = app.scan_all(&table).await;
        let parents = truth.of_entity(model, parent, &items);
        for connection in &parent.connections {
            let Read::Query { partition, .. } = &connection.read else {
                continue;
            };
            let members: Vec<usize> = match &connection.collection {
                Some(collection) => collection.members.clone(),
                None => vec![connection.entity],
            };
            if members.iter().any(|&m| !truth.knows(&model.entities[m])) {
                continue;
            }
            // The nodes' table, which need not be the parent's.
            let node = &model.entities[connection.entity];
            let node_table = app.table(&model.tables[node.table].name);
            let index = connection
                .index
                .map(|i| model.tables[node.table].indexes[i].name.as_str());
            let attribute = partition.attribute.name;
            let arguments = lookup.arguments(model);
            let (declared, passed) = lookup_arguments(model, parent, arguments);
            let on: Vec<String> = members
                .iter()
                .map(|&m| format!("... on {} {{ id }}", model.entities[m].name))
                .collect();
            let query = format!(
                "query({}, $first: Int, $after: String, $last: Int, $before: String) {{ \
                 {}({}) {{ {}(first: $first, after: $after, last: $last, before: $before) \
                 {{ edges {{ cursor node {{ {} }} }} pageInfo {{ hasNextPage hasPreviousPage \
                 startCursor endCursor }} }} }} }}",
                declared,
                lookup.name,
                passed,
                connection.name,
                on.join(" ")
            );
            // The parents whose partitions hold the most of the connection's items.
            let mut walked: Vec<(usize, &Item, Vec<String>)> = Vec::new();
            for item in parents.iter().copied() {
                // The parent item holds the partition's key under the same attribute (its own
                // key, or its key in the same index): the partition, as stored.
                let Some(raw) = item.get(attribute).cloned() else {
                    continue;
                };
                let read = app
                    .query_all(&GroundQuery {
                        table: &node_table,
                        index,
                        condition: "#p = :p",
                        names: &[("#p", attribute)],
                        values: &[(":p", raw)],
                        forward: true,
                    })
                    .await;
                let want: Vec<String> = read
                    .iter()
                    .filter(|i| {
                        members.iter().any(|&m| {
                            !truth
                                .of_entity(model, &model.entities[m], std::slice::from_ref(*i))
                                .is_empty()
                        })
                    })
                    .map(|i| item_key(model, node, i))
                    .collect();
                walked.push((want.len(), item, want));
                if walked.len() >= 40 {
                    break;
                }
            }
            walked.sort_by_key(|w| std::cmp::Reverse(w.0));
            let label = format!("{}.{}", parent.name, connection.name);
            assert!(
                walked.first().is_some_and(|(n, _, _)| *n > 0),
                "{label}: no parent's partition holds its items"
            );
            for (_, item, want) in walked.into_iter().take(2) {
                let mut vars = json!({});
                for &f in arguments {
                    vars[parent.fields[f].name.as_str()] = argument(model, p, f, item);
                }
                let label = format!("{label} of {vars}");
                walk_matches(
                    |paging| {
                        let mut all = vars.clone();
                        for (k, v) in paging.as_object().unwrap() {
                            all[k.as_str()] = v.clone();
                        }
                        app.graphql(&query, all)
                    },
                    &[lookup.name.as_str(), connection.name.as_str()],
                    |node| node_key(model, node),
                    &want,
                    &label,
                )
                .await;
            }
        }
    }
}

/// Every relation, read from up to ten items of its entity (reached by its lookup by table key):
/// never an error, and, where the target is found, one whose fields of the relation key's names
/// hold the item's values; at least one item's target is found, as the evidence `init` wrote
/// says.
async fn walk_relations(app: &ModelApp, truth: Truth<'_>) {
    let model = app.model;
    for (e, entity) in model.entities.iter().enumerate() {
        let Some(lookup) = model
            .lookups
            .iter()
            .find(|l| l.entity == e && l.index.is_none())
        else {
            continue;
        };
        if !truth.knows(entity) || entity.relations.is_empty() {
            continue;
        }
        let table = app.table(&model.tables[entity.table].name);
        let items = app.scan_all(&table).await;
        let arguments = lookup.arguments(model);
        let (declared, passed) = lookup_arguments(model, entity, arguments);
        for relation in &entity.relations {
            let target = &model.entities[relation.target];
            // The target's fields named as the relation's key fields.
            let keys: Vec<(FieldId, &str)> = relation
                .key
                .iter()
                .filter_map(|&k| {
                    let name = entity.fields[k].name.as_str();
                    target
                        .fields
                        .iter()
                        .any(|f| f.name == name)
                        .then_some((k, name))
                })
                .collect();
            let selection: Vec<&str> = keys.iter().map(|(_, n)| *n).collect();
            let query = format!(
                "query({declared}) {{ {}({passed}) {{ {} {{ id {} }} }} }}",
                lookup.name,
                relation.name,
                selection.join(" ")
            );
            let label = format!("{}.{}", entity.name, relation.name);
            let mut found = 0;
            for item in truth.of_entity(model, entity, &items).into_iter().take(10) {
                let mut vars = json!({});
                for &f in arguments {
                    vars[entity.fields[f].name.as_str()] = argument(model, e, f, item);
                }
                let response = app.graphql(&query, vars).await;
                assert!(response.get("errors").is_none(), "{label}: {response}");
                let node = &response["data"][lookup.name.as_str()][relation.name.as_str()];
                if node.is_null() {
                    continue;
                }
                found += 1;
                for (k, name) in &keys {
                    assert_eq!(node[*name], argument(model, e, *k, item), "{label}: {node}");
                }
            }
            assert!(found > 0, "{label}: no walked item's target was found");
        }
    }
}

/// A lookup's variables as declared (`$sku: String!`) and as passed (`sku: $sku`).
fn lookup_arguments(model: &Model, entity: &Entity, arguments: &[FieldId]) -> (String, String) {
    let declared: Vec<String> = arguments
        .iter()
        .map(|&f| {
            let field = &entity.fields[f];
            format!("${}: {}", field.name, graphql_type(model, &field.ty, false))
        })
        .collect();
    let passed: Vec<String> = arguments
        .iter()
        .map(|&f| format!("{0}: ${0}", entity.fields[f].name))
        .collect();
    (declared.join(", "), passed.join(", "))
}

/// The id and every field of `entity`, so that each is read from every item walked.
fn node_selection(entity: &Entity) -> String {
    let mut fields: Vec<&str> = vec!["id"];
    fields.extend(entity.fields.iter().map(|f| f.name.as_str()));
    fields.join(" ")
}

// ------------------------------------------------------------------ the differences

/// A field's GraphQL type, `!` included unless `bare`.
fn graphql_type(model: &Model, ty: &FieldType, nullable: bool) -> String {
    let scalar = |s: &Scalar| match s {
        Scalar::String => "String".to_owned(),
        Scalar::Id => "ID".to_owned(),
        Scalar::Int => "Int".to_owned(),
        Scalar::BigInt => "BigInt".to_owned(),
        Scalar::Float => "Float".to_owned(),
        Scalar::Decimal => "Decimal".to_owned(),
        Scalar::Boolean => "Boolean".to_owned(),
        Scalar::DateTime(_) => "DateTime".to_owned(),
        Scalar::Bytes => "Bytes".to_owned(),
        Scalar::Json => "JSON".to_owned(),
        Scalar::Enum(e) => model.enums[*e].name.clone(),
    };
    let text = match ty {
        FieldType::Scalar(s) => scalar(s),
        FieldType::List {
            item,
            item_nullable,
            ..
        } => {
            format!(
                "[{}{}]",
                scalar(item),
                if *item_nullable { "" } else { "!" }
            )
        }
    };
    format!("{text}{}", if nullable { "" } else { "!" })
}

/// How a field is stored, when that is not the type's default.
fn storage(ty: &FieldType) -> String {
    match ty {
        FieldType::Scalar(Scalar::DateTime(format)) => format!(" stored as {format:?}"),
        FieldType::List { set: true, .. } => " stored as a set".to_owned(),
        _ => String::new(),
    }
}

/// The ways `inferred` differs from `hand`, one per line: entities, fields, relations, lookups,
/// connections and mutations, each matched by what it reads (table, attribute, key, index) rather
/// than by name.
fn differences(hand: &Model, inferred: &Model) -> String {
    let mut out = Vec::new();
    for h in &hand.entities {
        let table = &hand.tables[h.table].name;
        let kind = type_of;
        let Some(i) = inferred.entities.iter().find(|e| {
            inferred.tables[e.table].name == *table && kind(inferred, e) == kind(hand, h)
        }) else {
            out.push(format!("{}: no entity over table {table}", h.name));
            continue;
        };
        if h.name != i.name {
            out.push(format!("{}: named {}", h.name, i.name));
        }
        for hf in &h.fields {
            let Some(f) = i.fields.iter().find(|f| f.attribute == hf.attribute) else {
                out.push(format!(
                    "{}.{}: no field (no sampled item holds `{}`)",
                    h.name, hf.name, hf.attribute
                ));
                continue;
            };
            let (ht, it) = (
                format!(
                    "{}{}",
                    graphql_type(hand, &hf.ty, hf.nullable),
                    storage(&hf.ty)
                ),
                format!(
                    "{}{}",
                    graphql_type(inferred, &f.ty, f.nullable),
                    storage(&f.ty)
                ),
            );
            if ht != it {
                out.push(format!(
                    "{}.{}: {ht} by hand, {it} inferred",
                    h.name, hf.name
                ));
            }
            if hf.name != f.name {
                out.push(format!("{}.{}: named {}", h.name, hf.name, f.name));
            }
        }
        for f in &i.fields {
            if !h.fields.iter().any(|hf| hf.attribute == f.attribute) {
                out.push(format!("{}.{}: inferred only", h.name, f.name));
            }
        }
        let relation = |m: &Model, e: &Entity, r: &dynarelay::model::Relation| {
            let keys: Vec<&str> = r
                .key
                .iter()
                .map(|&k| e.fields[k].attribute.as_str())
                .collect();
            (
                m.tables[m.entities[r.target].table].name.clone(),
                keys.join(","),
            )
        };
        for hr in &h.relations {
            let want = relation(hand, h, hr);
            match i
                .relations
                .iter()
                .find(|r| relation(inferred, i, r) == want)
            {
                None => out.push(format!("{}.{}: no relation", h.name, hr.name)),
                Some(r) if r.name != hr.name => {
                    out.push(format!("{}.{}: named {}", h.name, hr.name, r.name))
                }
                Some(_) => {}
            }
        }
        for ir in &i.relations {
            let got = relation(inferred, i, ir);
            if !h.relations.iter().any(|r| relation(hand, h, r) == got) {
                out.push(format!("{}.{}: inferred only", h.name, ir.name));
            }
        }
        let m = &h.mutations;
        let mutations = [
            (m.create.is_some(), "create"),
            (m.update.is_some(), "update"),
            (m.delete.is_some(), "delete"),
        ];
        for (on, name) in mutations {
            if on {
                out.push(format!("{}: {name} mutation by hand only", h.name));
            }
        }
        connection_differences(
            hand,
            inferred,
            &h.connections,
            &i.connections,
            &h.name,
            &mut out,
        );
    }
    connection_differences(
        hand,
        inferred,
        &hand.connections,
        &inferred.connections,
        "Query",
        &mut out,
    );
    // A lookup by what it reads: the table, the type's items in a table of several, the index.
    let lookup = |m: &Model, l: &dynarelay::model::Lookup| {
        let entity = &m.entities[l.entity];
        let table = &m.tables[entity.table];
        let of = type_of(m, entity).map_or(String::new(), |t| format!(" for `{t}` items"));
        let through = l.index.as_ref().map_or(String::new(), |i| {
            format!(" through index {}", table.indexes[i.index].name)
        });
        format!("{}{of}{through}", table.name)
    };
    for hl in &hand.lookups {
        match inferred
            .lookups
            .iter()
            .find(|l| lookup(inferred, l) == lookup(hand, hl))
        {
            None => out.push(format!("Query.{}: no lookup", hl.name)),
            Some(l) if l.name != hl.name => {
                out.push(format!("Query.{}: named {}", hl.name, l.name))
            }
            Some(_) => {}
        }
    }
    for il in &inferred.lookups {
        if !hand
            .lookups
            .iter()
            .any(|l| lookup(hand, l) == lookup(inferred, il))
        {
            out.push(format!(
                "Query.{}: inferred only (a lookup in {})",
                il.name,
                lookup(inferred, il)
            ));
        }
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// In a table of several types, which one `entity` is: its type attribute's value, or, in a
/// table without one, its name.
fn type_of(m: &Model, entity: &Entity) -> Option<String> {
    let table = &m.tables[entity.table];
    if table.type_attribute.is_some() {
        return Some(
            entity
                .type_value
                .clone()
                .unwrap_or_else(|| entity.name.clone()),
        );
    }
    let shared = m
        .entities
        .iter()
        .filter(|e| e.table == entity.table)
        .count()
        > 1;
    shared.then(|| entity.name.clone())
}

/// Connections matched by what they read: the table, the index, and a Scan or a Query (with
/// its sort-key arguments).
fn connection_differences(
    hand: &Model,
    inferred: &Model,
    h: &[dynarelay::model::Connection],
    i: &[dynarelay::model::Connection],
    owner: &str,
    out: &mut Vec<String>,
) {
    let what = |m: &Model, c: &dynarelay::model::Connection| {
        let entity = &m.entities[c.entity];
        let table = &m.tables[entity.table];
        let read = if matches!(c.read, Read::Scan) {
            "a Scan"
        } else {
            "Queries"
        };
        let of = match &c.collection {
            Some(collection) => {
                let mut members: Vec<&str> = collection
                    .members
                    .iter()
                    .map(|&e| m.entities[e].name.as_str())
                    .collect();
                members.sort_unstable();
                format!(" for the collection of {}", members.join(", "))
            }
            None => type_of(m, entity).map_or(String::new(), |t| format!(" for `{t}` items")),
        };
        match c.index {
            Some(x) => format!(
                "{read} of {} index {}{of}",
                table.name, table.indexes[x].name
            ),
            None => format!("{read} of {}{of}", table.name),
        }
    };
    // Sort conditions by what they condition: the attributes of the fixed facets, and of the
    // facet or field `min`/`max` and `begins_with` bound.
    let conditions = |m: &Model, c: &dynarelay::model::Connection| match &c.read {
        Read::Query { sort: Some(s), .. } => {
            let fields = &m.entities[c.entity].fields;
            let mut parts = Vec::new();
            if !s.fixed.is_empty() {
                let fixed: Vec<&str> = s
                    .fixed
                    .iter()
                    .map(|(f, _)| fields[*f].attribute.as_str())
                    .collect();
                parts.push(format!("fixed {}", fixed.join(", ")));
            }
            let on = &fields[s.field].attribute;
            if s.min.is_some() || s.max.is_some() {
                parts.push(format!("min/max on {on}"));
            }
            if s.begins_with.is_some() {
                parts.push(format!("begins_with on {on}"));
            }
            parts.join("; ")
        }
        _ => String::new(),
    };
    // The attributes of the fixed facets.
    let fixed = |m: &Model, c: &dynarelay::model::Connection| -> Vec<String> {
        match &c.read {
            Read::Query { sort: Some(s), .. } => s
                .fixed
                .iter()
                .map(|(f, _)| m.entities[c.entity].fields[*f].attribute.clone())
                .collect(),
            _ => Vec::new(),
        }
    };
    let sort_args = |c: &dynarelay::model::Connection| match &c.read {
        Read::Query { sort: Some(s), .. } => {
            let names: Vec<&str> = s
                .fixed
                .iter()
                .map(|(_, a)| a)
                .chain([&s.min, &s.max, &s.begins_with].into_iter().flatten())
                .map(|a| a.name.as_str())
                .collect();
            names.join(", ")
        }
        _ => String::new(),
    };
    for hc in h {
        // The inferred connection reading the same, with the same conditions when there is one.
        let same: Vec<&dynarelay::model::Connection> = i
            .iter()
            .filter(|c| what(inferred, c) == what(hand, hc))
            .collect();
        let found = same
            .iter()
            .find(|c| conditions(inferred, c) == conditions(hand, hc))
            .or_else(|| same.iter().find(|c| fixed(inferred, c) == fixed(hand, hc)))
            .or(same.first());
        match found {
            None => out.push(format!(
                "{owner}.{}: no connection ({})",
                hc.name,
                what(hand, hc)
            )),
            Some(c) => {
                if c.name != hc.name {
                    out.push(format!("{owner}.{}: named {}", hc.name, c.name));
                }
                let (hs, is) = (conditions(hand, hc), conditions(inferred, c));
                if hs != is {
                    out.push(format!(
                        "{owner}.{}: sort conditions ({hs}) by hand, ({is}) inferred",
                        hc.name
                    ));
                } else if sort_args(hc) != sort_args(c) {
                    out.push(format!(
                        "{owner}.{}: sort arguments named ({}) by hand, ({}) inferred",
                        hc.name,
                        sort_args(hc),
                        sort_args(c)
                    ));
                }
                if hc.filters.len() != c.filters.len() {
                    out.push(format!(
                        "{owner}.{}: {} filters by hand, {} inferred",
                        hc.name,
                        hc.filters.len(),
                        c.filters.len()
                    ));
                }
            }
        }
    }
    for ic in i {
        // Inferred only: nothing by hand reads the same, or, of several inferred connections
        // reading the same, one whose fixed facets none by hand has.
        let same = |c: &&dynarelay::model::Connection| what(hand, c) == what(inferred, ic);
        let several = i
            .iter()
            .filter(|c| what(inferred, c) == what(inferred, ic))
            .count()
            > 1;
        let matched = h
            .iter()
            .filter(same)
            .any(|c| !several || fixed(hand, c) == fixed(inferred, ic));
        if !matched {
            let with = if several {
                format!(", sort conditions ({})", conditions(inferred, ic))
            } else {
                String::new()
            };
            out.push(format!(
                "{owner}.{}: inferred only ({}{with})",
                ic.name,
                what(inferred, ic)
            ));
        }
    }
}
