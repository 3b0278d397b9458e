//! Walking a model `init` wrote, served over the tables it was read from: every connection at
//! every page size both ways against DynamoDB's own reads, every lookup and relation, each
//! entity's items told by a [`Truth`] that is not the model's own rule.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::{
    cursor::Key,
    dynamo::Item,
    graphql::{
        node::parse_node_id,
        values::{field_value, output},
    },
    model::{Entity, EntityId, FieldId, FieldType, Model, PartitionFrom, Read, Scalar},
};
use serde_json::{Value, json};

use crate::helpers::{GroundQuery, ModelApp, all_nodes, walk_matches};

/// Whose notion of each item's type the walks are held to: the writer's type attribute (all
/// items, in a table without one), or the data set's own record of what it wrote.
#[derive(Clone, Copy)]
pub(super) enum Truth<'a> {
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
pub(super) fn item_key(model: &Model, entity: &Entity, item: &Item) -> String {
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

/// Every item of each type the truth knows served by its type's Scan, and every connection and
/// lookup of `app`'s model, against DynamoDB's own reads.
pub(super) async fn walk_everything(app: &ModelApp, truth: Truth<'_>) {
    let model = app.model;
    served_whole(app, truth).await;
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
        // An item collection's nodes are of any member.
        let members: Vec<EntityId> = match &connection.collection {
            Some(collection) => collection.members.clone(),
            None => vec![e],
        };
        let selection = match &connection.collection {
            Some(_) => members
                .iter()
                .map(|&m| format!("... on {} {{ id }}", model.entities[m].name))
                .collect::<Vec<_>>()
                .join(" "),
            None => node_selection(entity),
        };
        let label = format!("Query.{}", connection.name);
        let scanned = app.scan_all(&table).await;
        let of_members = |items: &[Item]| -> Vec<Item> {
            items
                .iter()
                .filter(|i| {
                    members.iter().any(|&m| {
                        !truth
                            .of_entity(model, &model.entities[m], std::slice::from_ref(*i))
                            .is_empty()
                    })
                })
                .cloned()
                .collect()
        };
        let items = of_members(&scanned);
        let items: Vec<&Item> = items.iter().collect();
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
                // Leading facets of the sort key fixed by arguments: given the walked item's
                // values, and held to the partition's items with those values; walked with each
                // number of them a query may give (optional ones left out from the last).
                let all_fixed: Vec<(FieldId, &str)> = sort.as_ref().map_or(Vec::new(), |s| {
                    s.fixed.iter().map(|(f, a)| (*f, a.name.as_str())).collect()
                });
                let required = sort.as_ref().map_or(0, |s| s.required_fixed);
                for given in (required..=all_fixed.len()).rev() {
                    let fixed = &all_fixed[..given];
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
                        let want: Vec<String> = of_members(&read)
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
                            &format!("{label}({} = {p}, {given} fixed)", arg.name),
                        )
                        .await;
                    }
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

/// Each type the truth knows is an entity of the model, and its Scan connection serves as many
/// items as the table holds of it: the count, before the walks compare the items themselves.
async fn served_whole(app: &ModelApp, truth: Truth<'_>) {
    let model = app.model;
    if let Truth::Kinds(kinds) = truth {
        for kind in kinds.values() {
            assert!(
                model.entities.iter().any(|e| e.name == *kind),
                "the inferred model has no entity `{kind}`"
            );
        }
    }
    let (mut served, mut held, mut counts) = (0, 0, Vec::new());
    for entity in model.entities.iter().filter(|e| truth.knows(e)) {
        let Some(scan) = model
            .connections
            .iter()
            .find(|c| model.entities[c.entity].name == entity.name && matches!(c.read, Read::Scan))
        else {
            continue;
        };
        let items = app
            .scan_all(&app.table(&model.tables[entity.table].name))
            .await;
        let want = truth.of_entity(model, entity, &items).len();
        let query = format!(
            "query($first: Int, $after: String) {{ {}(first: $first, after: $after) {{ \
             nodes {{ id }} pageInfo {{ hasNextPage endCursor }} }} }}",
            scan.name
        );
        let got = all_nodes(|vars| app.graphql(&query, vars), &[scan.name.as_str()], 100)
            .await
            .len();
        served += got;
        held += want;
        counts.push(format!("{} {got} of {want}", entity.name));
    }
    assert_eq!(
        served,
        held,
        "{served} of {held} items served ({})",
        counts.join(", ")
    );
}

/// Every connection under an entity (an item collection too), reached through the entity's
/// lookup by table key for its two fullest partitions, walked against DynamoDB's own Query of
/// the partition, filtered to the connection's types.
async fn walk_nested(app: &ModelApp, truth: Truth<'_>) {
    let model = app.model;
    for (p, parent) in model.entities.iter().enumerate() {
        let Some(lookup) = table_lookup(model, p) else {
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
        let Some(lookup) = table_lookup(model, e) else {
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

/// The lookup of entity `entity` by its table key, if the model has one.
fn table_lookup(model: &Model, entity: EntityId) -> Option<&dynarelay::model::Lookup> {
    model
        .lookups
        .iter()
        .find(|l| l.entity == entity && l.index.is_none())
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

/// A field's GraphQL type, `!` included unless `bare`.
pub(super) fn graphql_type(model: &Model, ty: &FieldType, nullable: bool) -> String {
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
