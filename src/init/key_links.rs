//! Lookups and relations that only the sampled values can show, added once every entity and
//! its connections are proposed: a lookup through an index whose keys each belong to one item
//! of a type (an order by its id through `GSI1PK = "ORDER#{orderId}"`); relations inside a
//! table of several types, where an attribute of one type holds the facets of another's table
//! key (an order's `email`, a customer's `CUSTOMER#{email}`); and relations to a lookup through
//! an index (a ticket's `orderId`, an order's key in `GSI1`). Each rests on values seen: the
//! index keys counted, the attribute's values found as the target's keys.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::dynamo::{Item, sample::LiveKey};

use super::{
    names::{Taken, camel, pascal, plural},
    proposal::{
        EntityProposal, LookupProposal, Proposal, RelationProposal, holds_every_attribute,
        stored_kind,
    },
    templates::Piece,
};

/// The fewest items of a type holding an index's keys for a lookup through it: fewer say too
/// little about whether its keys repeat.
const LOOKUP_EVIDENCE: usize = 3;

/// A lookup through an index, proposed for entity `entity`.
struct IndexLookup {
    entity: usize,
    index: String,
    /// The fields giving the index key, in order.
    arguments: Vec<String>,
}

/// Adds the lookups through indexes, then the relations inside tables of several types, then
/// the relations to the lookups through indexes (where no relation by table key was found).
/// `samples` holds each table's sampled items, in [`Proposal::tables`] order, and `complete`
/// whether they are all its items.
pub fn propose(
    proposal: &mut Proposal,
    samples: &[Vec<Item>],
    complete: &[bool],
    root: &mut Taken,
) {
    let lookups = index_lookups(proposal, samples, complete, root);
    let mut relations: Vec<(usize, RelationProposal)> = Vec::new();
    for (a, from) in proposal.entities.iter().enumerate() {
        for (b, target) in proposal.entities.iter().enumerate() {
            if a == b || from.shared.is_none() || target.table_at != from.table_at {
                continue;
            }
            let Some(key) = key_fields(proposal, target, false) else {
                continue;
            };
            let Some(found) = found(from, target, &key, samples, complete) else {
                continue;
            };
            let template = target.shared.as_ref().map_or(String::new(), |k| {
                let keys: Vec<String> = k
                    .keys
                    .iter()
                    .map(|(a, t, _)| format!("{a} = `{t}`"))
                    .collect();
                format!(" ({})", keys.join(", "))
            });
            relations.push((
                a,
                relation(
                    target,
                    key,
                    None,
                    &found,
                    format!("the key of a sampled {}{template}", target.name),
                ),
            ));
        }
    }
    for lookup in &lookups {
        let target = &proposal.entities[lookup.entity];
        for (a, from) in proposal.entities.iter().enumerate() {
            if a == lookup.entity
                || relations
                    .iter()
                    .any(|(r, rel)| *r == a && rel.target == target.name)
                || from.relations.iter().any(|r| r.target == target.name)
            {
                continue;
            }
            let Some(found) = found(from, target, &lookup.arguments, samples, complete) else {
                continue;
            };
            relations.push((
                a,
                relation(
                    target,
                    lookup.arguments.clone(),
                    Some(lookup.index.clone()),
                    &found,
                    format!(
                        "the key in index {} of a sampled {}",
                        lookup.index, target.name
                    ),
                ),
            ));
        }
    }
    for (a, mut relation) in relations {
        let entity = &mut proposal.entities[a];
        let mut taken = Taken::with(&["id", "__typename"]);
        for name in entity
            .fields
            .iter()
            .map(|f| &f.name)
            .chain(entity.relations.iter().map(|r| &r.name))
            .chain(entity.connections.iter().map(|c| &c.name))
        {
            taken.claim(name);
        }
        relation.name = taken.claim(&relation.name);
        entity.relations.push(relation);
    }
}

/// How many of one type's sampled items hold the fields of a relation, and how many of those
/// hold values that are a target's key.
struct Found {
    holding: usize,
    found: usize,
    from: String,
}

fn relation(
    target: &EntityProposal,
    key: Vec<String>,
    index: Option<String>,
    found: &Found,
    what: String,
) -> RelationProposal {
    let fields = key.join("`, `");
    let review = (found.found < found.holding).then(|| {
        format!(
            "{} of the values are no sampled {}'s key: a target that is not there reads as null",
            found.holding - found.found,
            target.name
        )
    });
    RelationProposal {
        name: camel(&target.name, "item"),
        target: target.name.clone(),
        evidence: format!(
            "`{fields}` of {} of the {} sampled {} holding it: {what}",
            found.found,
            found.holding,
            plural(&found.from)
        ),
        key,
        index,
        review,
    }
}

/// The fields giving entity `entity`'s key: its table's (`index` `None`), or an index's; each
/// template's facets, or the field on a key attribute that has no template, deduplicated.
/// `None` when a key attribute has neither, or `allow_key_only` is false and a facet is read
/// only from the keys (no attribute holds its values, so none can be matched).
fn key_fields(
    proposal: &Proposal,
    entity: &EntityProposal,
    allow_key_only: bool,
) -> Option<Vec<String>> {
    let live = &proposal.tables[entity.table_at].live;
    fields_for(
        entity,
        std::iter::once(&live.partition).chain(live.sort.as_ref()),
        allow_key_only,
    )
}

fn fields_for<'k>(
    entity: &EntityProposal,
    keys: impl Iterator<Item = &'k LiveKey>,
    allow_key_only: bool,
) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for key in keys {
        let template = entity
            .shared
            .as_ref()
            .and_then(|s| s.templates.iter().find(|(a, _)| *a == key.name));
        let fields: Vec<String> = match template {
            Some((_, t)) => t
                .pieces
                .iter()
                .filter_map(|p| match p {
                    Piece::Facet { attribute, .. } => Some(Some(attribute.clone())),
                    Piece::KeyOnly(field, _) => Some(allow_key_only.then(|| field.clone())),
                    Piece::Literal(_) => None,
                })
                .collect::<Option<_>>()?,
            None => vec![
                entity
                    .fields
                    .iter()
                    .find(|f| f.attribute == key.name)?
                    .name
                    .clone(),
            ],
        };
        for f in fields {
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    Some(out)
}

/// The sampled items of `entity`.
fn items<'s>(entity: &EntityProposal, samples: &'s [Vec<Item>]) -> Vec<&'s Item> {
    entity
        .sampled
        .iter()
        .map(|&i| &samples[entity.table_at][i])
        .collect()
}

/// Each item's values of `fields` (by field name), for the items holding them all.
fn values(entity: &EntityProposal, fields: &[String], items: &[&Item]) -> Vec<Vec<AttributeValue>> {
    let attributes: Option<Vec<&str>> = fields
        .iter()
        .map(|name| {
            entity
                .fields
                .iter()
                .find(|f| f.name == *name)
                .map(|f| f.attribute.as_str())
        })
        .collect();
    let Some(attributes) = attributes else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            attributes
                .iter()
                .map(|a| item.get(*a).cloned())
                .collect::<Option<Vec<_>>>()
        })
        .collect()
}

/// Whether `from`'s fields named as `target`'s `key` fields hold its keys: each field of the
/// same DynamoDB type, held by sampled items, and the values of a sampled target's: at least
/// half of them when the table was read whole, at least one when only part was (the targets
/// of the others may be among the items not read).
fn found(
    from: &EntityProposal,
    target: &EntityProposal,
    key: &[String],
    samples: &[Vec<Item>],
    complete: &[bool],
) -> Option<Found> {
    if key.is_empty() {
        return None;
    }
    for name in key {
        let f = from.fields.iter().find(|f| f.name == *name)?;
        let t = target.fields.iter().find(|f| f.name == *name)?;
        if stored_kind(f).is_none() || stored_kind(f) != stored_kind(t) {
            return None;
        }
    }
    let keys: BTreeSet<String> = values(target, key, &items(target, samples))
        .iter()
        .map(|v| format!("{v:?}"))
        .collect();
    let held = values(from, key, &items(from, samples));
    let found = held
        .iter()
        .filter(|v| keys.contains(&format!("{v:?}")))
        .count();
    let enough = !complete[target.table_at] || found * 2 >= held.len();
    (found > 0 && enough).then(|| Found {
        holding: held.len(),
        found,
        from: from.name.clone(),
    })
}

/// A lookup through each index whose keys, among the items of a type holding them, each belong
/// to one item: when it takes fewer arguments than the lookup by the table's key (an order by
/// its id alone, where the table keys it under its customer), or the index has a partition key
/// only.
fn index_lookups(
    proposal: &mut Proposal,
    samples: &[Vec<Item>],
    complete: &[bool],
    root: &mut Taken,
) -> Vec<IndexLookup> {
    let mut out = Vec::new();
    for (e, entity) in proposal.entities.iter().enumerate() {
        let live = &proposal.tables[entity.table_at].live;
        let table_key = key_fields(proposal, entity, true);
        let items = items(entity, samples);
        for index in &live.indexes {
            if !holds_every_attribute(live, index, entity) {
                continue;
            }
            let Some(arguments) = fields_for(
                entity,
                std::iter::once(&index.partition).chain(index.sort.as_ref()),
                true,
            ) else {
                continue;
            };
            let fewer = table_key.as_ref().is_none_or(|t| arguments.len() < t.len());
            if arguments.is_empty() || !(fewer || index.sort.is_none() && arguments.len() == 1) {
                continue;
            }
            let index_keys: Vec<String> = items
                .iter()
                .filter_map(|item| {
                    let pk = item.get(&index.partition.name)?;
                    let sk = match &index.sort {
                        Some(s) => Some(item.get(&s.name)?),
                        None => None,
                    };
                    Some(format!("{pk:?}{sk:?}"))
                })
                .collect();
            let distinct: BTreeSet<&String> = index_keys.iter().collect();
            if index_keys.len() < LOOKUP_EVIDENCE || distinct.len() != index_keys.len() {
                continue;
            }
            let by: String = arguments.iter().map(|a| pascal(a, "Key")).collect();
            let name = root.claim(&format!("{}By{by}", camel(&entity.name, "item")));
            proposal.lookups.push(LookupProposal {
                name,
                entity: entity.name.clone(),
                description: format!(
                    "Looks up one {} by `{}`, through the index {}. Null when there is no such \
                     item.",
                    entity.name,
                    arguments.join("` and `"),
                    index.name
                ),
                index: Some(index.name.clone()),
                evidence: Some(format!(
                    "from {} sampled {} holding index {}'s keys: each key held by one",
                    index_keys.len(),
                    plural(&entity.name),
                    index.name
                )),
                review: (!complete[entity.table_at]).then(|| {
                    "two items of one index key make the lookup an error: make sure the writer \
                     keeps them unique"
                        .to_owned()
                }),
            });
            out.push(IndexLookup {
                entity: e,
                index: index.name.clone(),
                arguments,
            });
        }
    }
    out
}
