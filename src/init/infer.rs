//! From live tables and their sampled items to a proposed model: one entity per table, its
//! fields typed from what the sample holds ([`super::fields`]), and the lookups, connections and
//! relations the keys and indexes allow; a table of several types is proposed by
//! [`super::shared_table`]. Every inference keeps its evidence, and what the sample cannot
//! settle is marked for review. [`super::render`] writes the [`Proposal`] out as a model file.

use std::collections::BTreeMap;

use crate::dynamo::sample::LiveKey;

use super::{
    fields::{Sampled, fields},
    names::{Taken, camel, index_suffix, pascal, plural, singular},
    observe::observe,
    proposal::{
        ConnectionProposal, EntityProposal, LookupProposal, PartitionFrom, Proposal,
        RelationProposal, TableInput, TableProposal, holds_every_attribute, sort_args, stored_kind,
    },
};

/// Type names GraphQL or dynarelay's schema already define.
const RESERVED_TYPES: &[&str] = &[
    "Query",
    "Mutation",
    "Subscription",
    "Node",
    "PageInfo",
    "String",
    "Int",
    "Float",
    "Boolean",
    "ID",
    "BigInt",
    "Decimal",
    "DateTime",
    "Bytes",
    "JSON",
    "SortOrder",
];

/// The proposal for `tables`.
pub fn propose(tables: Vec<TableInput>) -> Proposal {
    propose_with(tables, &BTreeMap::new())
}

/// The proposal for `tables`, those named in `one_type` proposed as one type each, with the
/// reason as a note (their types, told apart, gave a model its check refuses).
pub fn propose_with(tables: Vec<TableInput>, one_type: &BTreeMap<String, String>) -> Proposal {
    let mut proposal = Proposal::default();
    let mut type_names = Taken::with(RESERVED_TYPES);
    // Each table's sampled items, and whether they are all its items.
    let mut samples = Vec::new();
    let mut complete = Vec::new();
    for input in tables {
        complete.push(input.complete);
        let table_at = proposal.tables.len();
        let refused = one_type.get(&input.name);
        if let Some(shared) = refused
            .is_none()
            .then(|| {
                super::shared_table::propose(&input, table_at, &mut type_names, &mut proposal.enums)
            })
            .flatten()
        {
            proposal.entities.extend(shared.entities);
            proposal.tables.push(TableProposal {
                name: input.name,
                sampled: input.items.len(),
                live: input.live,
                notes: shared.notes,
                type_attribute: shared.type_attribute,
                shared: true,
            });
            samples.push(input.items);
            continue;
        }
        let entity = type_names.claim(&pascal(&singular(&input.name), "Item"));
        let seen = observe(&input.items);
        let mut notes = Vec::new();
        if let Some(reason) = refused {
            notes.push(format!(
                "review: the types this table's items seem to hold could not be told apart \
                 safely ({reason}); it is proposed as one type, its keys as they are. A type \
                 attribute, or a hand-written entity per kind, serves them apart."
            ));
        }
        if input.items.is_empty() {
            notes.push(
                "review: no items were sampled: only the key attributes are known, typed from \
                 the table's definition."
                    .to_owned(),
            );
        }
        let fields = fields(
            &entity,
            &input.live,
            &seen,
            Sampled {
                count: input.items.len(),
                complete: input.complete,
            },
            &mut proposal.enums,
            &mut type_names,
            &[],
        );
        proposal.entities.push(EntityProposal::new(
            entity,
            &input.name,
            table_at,
            fields,
            None,
            (0..input.items.len()).collect(),
        ));
        proposal.tables.push(TableProposal {
            name: input.name,
            sampled: input.items.len(),
            live: input.live,
            notes,
            type_attribute: None,
            shared: false,
        });
        samples.push(input.items);
    }
    let names: Vec<String> = proposal.entities.iter().map(|e| e.name.clone()).collect();
    for (entity, tag) in proposal.entities.iter_mut().zip(id_tags(&names)) {
        entity.id_tag = tag;
    }
    unify_linked_types(&mut proposal);
    let mut root = Taken::with(&["node", "nodes"]);
    link(&mut proposal, &mut root);
    super::shared_table::connect(&mut proposal, &mut root, &mut type_names);
    super::key_links::propose(&mut proposal, &samples, &complete, &mut root);
    filters(&mut proposal);
    proposal
}

/// Equality filters on the connections of one entity (not item collections), for its fields
/// holding a few values (its enums) that are attributes of their own, not keys of the table or
/// of an index, and not already an argument of the connection.
fn filters(proposal: &mut Proposal) {
    let enums: Vec<&str> = proposal.enums.iter().map(|e| e.name.as_str()).collect();
    let of_entity: BTreeMap<String, Vec<String>> = proposal
        .entities
        .iter()
        .map(|entity| {
            let live = &proposal.tables[entity.table_at].live;
            let key = |attribute: &str| {
                std::iter::once(&live.partition)
                    .chain(&live.sort)
                    .chain(
                        live.indexes
                            .iter()
                            .flat_map(|i| std::iter::once(&i.partition).chain(&i.sort)),
                    )
                    .any(|k| k.name == attribute)
            };
            let fields = entity
                .fields
                .iter()
                .filter(|f| enums.contains(&f.ty.trim_end_matches('!')) && !key(&f.attribute))
                .map(|f| f.name.clone())
                .collect();
            (entity.name.clone(), fields)
        })
        .collect();
    let connections = proposal.connections.iter_mut().chain(
        proposal
            .entities
            .iter_mut()
            .flat_map(|e| e.connections.iter_mut()),
    );
    for c in connections {
        if c.collection.is_some() {
            continue;
        }
        let mut taken: Vec<&str> = vec!["first", "after", "last", "before", "order"];
        if let Some(PartitionFrom::Argument(a) | PartitionFrom::Field(a)) = &c.partition {
            taken.push(a);
        }
        if let Some(sort) = &c.sort {
            taken.push(&sort.field);
            taken.extend(sort.fixed.iter().map(String::as_str));
            if let Some((min, max)) = &sort.range {
                taken.extend([min.as_str(), max.as_str()]);
            }
            taken.extend(sort.prefix.as_deref());
        }
        let filters: Vec<String> = of_entity
            .get(&c.entity)
            .into_iter()
            .flatten()
            .filter(|f| !taken.contains(&f.as_str()))
            .cloned()
            .collect();
        c.filters = filters;
    }
}

/// Global id tags, one per entity name: the first letter where no other entity starts with
/// it, else the shortest prefix of equal length that tells apart the entities starting with the
/// same letter (`Product`, `Purchase`: `PR`, `PU`), so that no tag begins another. Where one name
/// begins another (`Order`, `OrderItem`) those keep the default tag, the name and `:`.
fn id_tags(entities: &[String]) -> Vec<String> {
    let upper: Vec<String> = entities.iter().map(|e| e.to_ascii_uppercase()).collect();
    upper
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let group: Vec<&String> = upper.iter().filter(|u| u[..1] == name[..1]).collect();
            let longest = group.iter().map(|u| u.len()).max().unwrap_or(1);
            (1..=longest)
                .find(|&n| {
                    let tags: Vec<&str> = group.iter().map(|u| &u[..n.min(u.len())]).collect();
                    group.iter().all(|u| u.len() >= n)
                        && tags
                            .iter()
                            .enumerate()
                            .all(|(a, t)| tags[..a].iter().all(|o| o != t))
                })
                .map_or_else(|| format!("{}:", entities[i]), |n| name[..n].to_owned())
        })
        .collect()
}

/// One entity's field holding the key of another entity's table, by attribute name and type.
struct Link {
    /// The entity holding the key, and its field.
    from: (usize, usize),
    /// The entity whose table's partition key it is, and that key's field.
    to: (usize, usize),
}

/// Every attribute that carries another table's partition key: the same attribute name and
/// DynamoDB type as a table whose only key it is.
fn links(proposal: &Proposal) -> Vec<Link> {
    let mut out = Vec::new();
    for (t, target) in proposal.entities.iter().enumerate() {
        let table = &proposal.tables[target.table_at];
        if table.live.sort.is_some() || target.shared.is_some() {
            continue;
        }
        let pk = &table.live.partition;
        let Some(to_field) = target.fields.iter().position(|f| f.attribute == pk.name) else {
            continue;
        };
        for (e, entity) in proposal.entities.iter().enumerate() {
            if e == t || entity.shared.is_some() {
                continue;
            }
            if let Some(f) = entity
                .fields
                .iter()
                .position(|f| f.attribute == pk.name && stored_kind(f) == Some(pk.kind))
            {
                out.push(Link {
                    from: (e, f),
                    to: (t, to_field),
                });
            }
        }
    }
    out
}

/// Gives both ends of each link the same type: the wider of two number types, or, when they
/// differ otherwise (a time against a number), the key's own.
fn unify_linked_types(proposal: &mut Proposal) {
    for link in links(proposal) {
        let to = proposal.entities[link.to.0].fields[link.to.1].clone();
        let target = proposal.entities[link.to.0].name.clone();
        let from = &mut proposal.entities[link.from.0].fields[link.from.1];
        if from.base() == to.base() && from.stored_as == to.stored_as {
            continue;
        }
        let rank = |t: &str| ["Int", "BigInt", "Decimal"].iter().position(|r| *r == t);
        match (rank(from.base()), rank(to.base())) {
            (Some(a), Some(b)) if a > b => {
                let wider = from.base().to_owned();
                proposal.entities[link.to.0].fields[link.to.1].set_base(&wider);
            }
            _ => {
                from.set_base(to.base());
                from.stored_as = to.stored_as;
                if from.review.is_none() {
                    from.review = Some(format!(
                        "typed as `{target}.{}`, whose key it holds",
                        to.name
                    ));
                }
            }
        }
    }
}

/// Lookups, connections and relations from the keys, indexes and links.
fn link(proposal: &mut Proposal, root: &mut Taken) {
    let mut entity_names: Vec<Taken> = proposal
        .entities
        .iter()
        .map(|e| {
            let mut taken = Taken::with(&["id", "__typename"]);
            for f in &e.fields {
                taken.claim(&f.name);
            }
            taken
        })
        .collect();
    let links = links(proposal);
    // Connections under the entity whose table's key their partition is, added at the end.
    let mut nested: Vec<(usize, ConnectionProposal)> = Vec::new();
    for (t, entity) in proposal.entities.iter().enumerate() {
        if entity.shared.is_some() {
            continue;
        }
        let table = &proposal.tables[entity.table_at];
        let plural_name = camel(&plural(&entity.name), "items");
        let field_on = |attribute: &str| {
            entity
                .fields
                .iter()
                .find(|f| f.attribute == attribute)
                .map(|f| f.name.clone())
                .unwrap_or_default()
        };
        let key_text = match &table.live.sort {
            Some(sort) => format!(
                "`{}` and `{}`",
                field_on(&table.live.partition.name),
                field_on(&sort.name)
            ),
            None => format!("`{}`", field_on(&table.live.partition.name)),
        };
        proposal.lookups.push(LookupProposal {
            name: root.claim(&camel(&entity.name, "item")),
            entity: entity.name.clone(),
            description: format!(
                "Looks up one {} by {key_text}. Null when there is no such item.",
                entity.name
            ),
            index: None,
            evidence: None,
            review: None,
        });
        proposal.connections.push(ConnectionProposal::root_scan(
            root,
            &entity.name,
            format!("a Scan of table {}", table.name),
        ));
        // Queries: the table's partitions when it has a sort key, and each index's.
        let mut reads: Vec<(Option<&str>, &LiveKey, Option<&LiveKey>)> = Vec::new();
        if table.live.sort.is_some() {
            reads.push((None, &table.live.partition, table.live.sort.as_ref()));
        }
        for index in &table.live.indexes {
            if !holds_every_attribute(&table.live, index, entity) {
                continue;
            }
            reads.push((Some(&index.name), &index.partition, index.sort.as_ref()));
        }
        for (index, partition, sort) in reads {
            let partition_field = field_on(&partition.name);
            let sort_args = sort.and_then(|s| {
                let field = entity.fields.iter().find(|f| f.attribute == s.name)?;
                Some(sort_args(field))
            });
            let order_text = sort.map_or(String::new(), |s| {
                format!(
                    ", in `{}` order (`order: DESC` for the reverse)",
                    field_on(&s.name)
                )
            });
            let through = index.map_or(String::new(), |i| format!(" (index {i})"));
            proposal.connections.push(ConnectionProposal::root_query(
                root,
                &entity.name,
                index,
                &partition_field,
                sort_args.clone(),
                &order_text,
            ));
            // The same partitions under the entity whose table's key they are.
            for l in links
                .iter()
                .filter(|l| l.from.0 == t && entity.fields[l.from.1].attribute == partition.name)
            {
                let parent = l.to.0;
                let parent_field = proposal.entities[parent].fields[l.to.1].name.clone();
                let taken = &mut entity_names[parent];
                let name = match index {
                    Some(i) if !taken.is_free(&plural_name) => {
                        taken.claim(&format!("{plural_name}By{}", index_suffix(i)))
                    }
                    _ => taken.claim(&plural_name),
                };
                let connection = ConnectionProposal {
                    name,
                    entity: entity.name.clone(),
                    index: index.map(str::to_owned),
                    scan: false,
                    partition: Some(PartitionFrom::Field(parent_field)),
                    sort: sort_args.clone(),
                    description: format!(
                        "This {}'s {}{through}{order_text}.",
                        proposal.entities[parent].name,
                        plural(&entity.name)
                    ),
                    collection: None,
                    filters: Vec::new(),
                };
                nested.push((parent, connection));
            }
        }
    }
    for (parent, connection) in nested {
        proposal.entities[parent].connections.push(connection);
    }
    for l in &links {
        let target = proposal.entities[l.to.0].name.clone();
        let field = proposal.entities[l.from.0].fields[l.from.1].clone();
        let target_table = &proposal.tables[proposal.entities[l.to.0].table_at].name;
        let name = entity_names[l.from.0].claim(&camel(&target, "item"));
        proposal.entities[l.from.0]
            .relations
            .push(RelationProposal {
                name,
                target: target.clone(),
                key: vec![field.name.clone()],
                evidence: format!(
                    "`{}` has the name and type of table {target_table}'s key",
                    field.attribute
                ),
                index: None,
                review: None,
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_tags_never_begin_one_another() {
        let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            id_tags(&names(&["User", "Product", "Purchase", "Trip"])),
            ["U", "PR", "PU", "T"].map(str::to_owned)
        );
        assert_eq!(
            id_tags(&names(&["Order", "OrderItem", "Vehicle"])),
            ["Order:", "OrderItem:", "V"].map(str::to_owned)
        );
    }
}
