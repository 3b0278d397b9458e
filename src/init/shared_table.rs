//! The proposal for a table that holds several types (a single-table design): one entity per
//! type, told apart by the table's type attribute or, without one, by the text the keys start
//! with ([`super::single_table`]); each entity's key templates read back from its sampled items
//! ([`super::templates`]), as their writers left them (`escape_keys = false`) unless the keys
//! hold dynarelay's own escapes, with fields for the values only the keys hold
//! ([`super::key_only`]); and its lookup, Scan and Query connections, with a connection under
//! the entity whose key a partition is.

use std::collections::{BTreeMap, BTreeSet};

use crate::{
    dynamo::sample::{KeyKind, LiveKey},
    model::template::{DATE_TEXT, INTEGER_TEXT, KeyCase, TIME_TEXT},
};

use super::{
    fields::{Sampled, fields},
    key_only::key_only_fields,
    names::{Taken, camel, index_suffix, listed, pascal, plural},
    observe::observe,
    proposal::{
        ConnectionProposal, EntityProposal, EnumProposal, LookupProposal, PartitionFrom, Proposal,
        SharedKeys, SortArgs, TableInput, holds_every_attribute, sort_args,
    },
    single_table::{self, Writer},
    templates::{self, Piece, Template, Writing},
};

/// The entities of a shared table, and what the file says about the table.
#[derive(Debug)]
pub struct SharedTable {
    /// One per type.
    pub entities: Vec<EntityProposal>,
    /// Remarks for the table.
    pub notes: Vec<String>,
    /// The type attribute, if the table has one.
    pub type_attribute: Option<String>,
}

/// An entity name from a type's name: `loan` gives `Loan`, `ORDER` gives `Order`.
fn entity_name(value: &str) -> String {
    let shouting = value
        .chars()
        .all(|c| !c.is_ascii_lowercase() || !c.is_ascii_alphabetic());
    if shouting {
        pascal(&value.to_ascii_lowercase(), "Item")
    } else {
        pascal(value, "Item")
    }
}

/// The attributes every item of a group holds, besides the table's keys.
fn held<'i>(g: &single_table::Group<'i>, partition: &str, sort: Option<&str>) -> BTreeSet<&'i str> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for item in &g.items {
        for a in item
            .keys()
            .filter(|a| *a != partition && Some(a.as_str()) != sort)
        {
            *counts.entry(a.as_str()).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .filter(|(_, n)| *n == g.items.len())
        .map(|(a, _)| a)
        .collect()
}

/// Whether nine of ten of `values` hold `separator`.
fn joined(values: &[&str], separator: char) -> bool {
    let with = values.iter().filter(|v| v.contains(separator)).count();
    !values.is_empty() && with * 10 >= values.len() * 9
}

/// The words a type without a type attribute is named by: the literal text ending its partition
/// key's template after a facet (`u#{userId}#follower`: `Follower`), else the literal text of its
/// sort key's template (`ORDER#{orderId}#ITEM#{itemId}`: `OrderItem`), or of its partition key's when the
/// sort key repeats the partition's values (the partition's own item: an author's
/// `#METADATA#{name}` under `AUTHOR#{name}`).
fn type_words(
    templates: &[(String, Template)],
    partition: &str,
    sort: Option<&str>,
    separator: char,
) -> Option<String> {
    let template = |attribute: &str| {
        templates
            .iter()
            .find(|(a, _)| a == attribute)
            .map(|(_, t)| t)
    };
    let facets = |t: &Template| -> Vec<Piece> {
        t.pieces
            .iter()
            .filter(|p| !matches!(p, Piece::Literal(_)))
            .cloned()
            .collect()
    };
    // Literal text ending the partition key after a facet names its kind: `u#{userId}#follower`
    // holds followers, whatever the sort key holds.
    if let Some(t) = template(partition)
        && let [
            ..,
            Piece::KeyOnly(..) | Piece::Facet { .. },
            Piece::Literal(last),
        ] = t.pieces.as_slice()
    {
        let words: Vec<&str> = last.split(separator).filter(|w| !w.is_empty()).collect();
        if !words.is_empty() {
            return Some(words.join(&separator.to_string()));
        }
    }
    let sort = template(sort?)?;
    let repeats = template(partition).filter(|p| {
        let own = facets(sort);
        !own.is_empty() && own.iter().all(|f| facets(p).contains(f))
    });
    let words: Vec<&str> = repeats
        .unwrap_or(sort)
        .pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Literal(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!words.is_empty()).then(|| words.join(&separator.to_string()))
}

/// The string value of `item`'s attribute `attribute`.
fn text_of<'i>(item: &'i crate::dynamo::Item, attribute: &str) -> Option<&'i str> {
    match item.get(attribute) {
        Some(aws_sdk_dynamodb::types::AttributeValue::S(v)) => Some(v.as_str()),
        _ => None,
    }
}

/// The entities of `input`, if it holds several types (or one, named by a type attribute);
/// `None` for a table of one type.
pub fn propose(
    input: &TableInput,
    table_at: usize,
    type_names: &mut Taken,
    enums: &mut Vec<EnumProposal>,
) -> Option<SharedTable> {
    let live = &input.live;
    let partition = live.partition.name.as_str();
    let sort = live.sort.as_ref().map(|s| s.name.as_str());
    // The keys that tell the types apart: each item's sort key, or its partition key.
    let keys: Vec<&str> = input
        .items
        .iter()
        .filter_map(|item| {
            sort.and_then(|s| text_of(item, s))
                .or_else(|| text_of(item, partition))
        })
        .collect();
    // A key of one word (`count`, `info`) holds no separator to show; when the sort keys name
    // none (bare times beside `Join:{roomId}`), the partition keys may.
    // (Only while they are few: a table keyed by plain names has no separator.)
    let worded: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| !single_table::word(k))
        .collect();
    let keys = if worded.len() * 2 >= keys.len() {
        worded
    } else {
        keys
    };
    let partition_keys: Vec<&str> = input
        .items
        .iter()
        .filter_map(|item| text_of(item, partition))
        .collect();
    let separator =
        single_table::separator(&keys).or_else(|| single_table::separator(&partition_keys));
    // A type attribute by its name, else by what it holds against the keys' starts.
    let typed = single_table::type_attribute(&input.items).or_else(|| {
        let starts = single_table::groups(&input.items, None, (partition, sort), separator?);
        let keys: Vec<&str> = std::iter::once(partition)
            .chain(sort)
            .chain(live.indexes.iter().flat_map(|index| {
                std::iter::once(index.partition.name.as_str())
                    .chain(index.sort.as_ref().map(|k| k.name.as_str()))
            }))
            .collect();
        single_table::type_attribute_by_values(&input.items, &starts, &keys)
            .map(|name| (name, single_table::Writer::Other))
    });
    let groups = match (&typed, separator) {
        (Some((attribute, _)), _) => single_table::groups(
            &input.items,
            Some(attribute),
            (partition, sort),
            separator.unwrap_or('#'),
        ),
        (None, None) => return None,
        (None, Some(separator)) => {
            let groups = single_table::groups(&input.items, None, (partition, sort), separator);
            // Starts whose items all hold the same attributes are values of one type (job codes
            // `brakes/0003` and `HVAC/0001`), not types.
            let first = groups.first().map(|g| held(g, partition, sort));
            let alike = groups
                .iter()
                .all(|g| Some(held(g, partition, sort)) == first);
            if alike || groups.len() < 2 || groups.len() > 30 {
                return None;
            }
            groups
        }
    };
    if groups.is_empty() {
        return None;
    }
    let writer = typed.as_ref().map(|(_, w)| *w);
    let type_attribute = typed.as_ref().map(|(a, _)| a.clone());
    let mut key_attributes: Vec<&LiveKey> = vec![&live.partition];
    key_attributes.extend(live.sort.as_ref());
    for index in &live.indexes {
        for key in std::iter::once(&index.partition).chain(index.sort.as_ref()) {
            if !key_attributes.iter().any(|k| k.name == key.name) {
                key_attributes.push(key);
            }
        }
    }
    let bookkeeping: &[&str] = writer.map_or(&[], single_table::bookkeeping);
    let separator = separator.unwrap_or('#');
    let names: Vec<&str> = key_attributes.iter().map(|k| k.name.as_str()).collect();
    let writing = Writing {
        separator,
        escaped: single_table::written_escaped(&input.items, &names, separator),
    };
    let escaped = writing.escaped;
    // The values the items hold besides their keys (as they are, and lowercased for keys
    // written in lower case): never a template's literal text.
    let mut seen_values: BTreeSet<String> = BTreeSet::new();
    for item in &input.items {
        for (a, v) in item {
            let own = names.contains(&a.as_str())
                || Some(a.as_str()) == type_attribute.as_deref()
                || bookkeeping.contains(&a.as_str());
            if let (false, aws_sdk_dynamodb::types::AttributeValue::S(text)) = (own, v) {
                seen_values.insert(text.to_lowercase());
                seen_values.insert(text.clone());
            }
        }
    }
    let decides = |attribute: &str| attribute == partition || Some(attribute) == sort;
    let mut entities = Vec::new();
    for group in &groups {
        let seen = observe(group.items.iter().copied());
        let is_key = |a: &str| key_attributes.iter().any(|k| k.name == a);
        let candidates: Vec<&str> = seen
            .keys()
            .map(String::as_str)
            .filter(|a| {
                !is_key(a) && Some(*a) != type_attribute.as_deref() && !bookkeeping.contains(a)
            })
            .collect();
        let mut templates: Vec<(String, Template)> = Vec::new();
        for key in &key_attributes {
            if key.kind != KeyKind::S {
                continue;
            }
            let values: Vec<&str> = group
                .items
                .iter()
                .filter_map(|item| text_of(item, &key.name))
                .collect();
            let constant = values.len() >= 3 && values.iter().all(|v| *v == values[0]);
            // Keys built by a library, or of segments joined by the separator, or the same text
            // on every item, follow templates; any other key attribute is a field of its own.
            if !(writer == Some(Writer::ElectroDb) || joined(&values, separator) || constant) {
                continue;
            }
            let Some(mut template) = templates::template(
                (&key.name, decides(&key.name)),
                &group.items,
                &candidates,
                &seen_values,
                writing,
            ) else {
                continue;
            };
            if escaped {
                // dynarelay writes escaped integers as 20 digits: another writer's plain
                // number in such a key is read as text, in a field of its own.
                for piece in &mut template.pieces {
                    if let Piece::Facet {
                        attribute,
                        width: None,
                    } = piece
                        && seen.get(attribute.as_str()).and_then(|o| o.only_kind()) == Some("N")
                    {
                        *piece = Piece::KeyOnly(attribute.clone(), None);
                    }
                }
            }
            templates.push((key.name.clone(), template));
        }
        let name = type_names.claim(&entity_name(&match &typed {
            Some(_) => group.value.clone(),
            None => type_words(&templates, partition, sort, separator)
                .unwrap_or_else(|| group.value.clone()),
        }));
        let mut skip: Vec<String> = templates.iter().map(|(a, _)| a.clone()).collect();
        skip.extend(type_attribute.clone());
        skip.extend(bookkeeping.iter().map(|b| (*b).to_owned()));
        // Index keys none of this type's items hold are not its fields.
        for key in &key_attributes {
            if !seen.contains_key(&key.name) && key.name != live.partition.name {
                skip.push(key.name.clone());
            }
        }
        let mut fields = fields(
            &name,
            live,
            &seen,
            Sampled {
                count: group.items.len(),
                complete: input.complete,
            },
            enums,
            type_names,
            &skip,
        );
        // Values only the keys hold become fields read from them.
        key_only_fields(
            &mut templates,
            &group.items,
            writing,
            &name,
            |a| a == partition || Some(a) == sort,
            &mut fields,
        );
        // Facets of the table's keys are in every item's key, so never null.
        for (attribute, template) in &templates {
            if *attribute != live.partition.name && Some(attribute.as_str()) != sort {
                continue;
            }
            for piece in &template.pieces {
                if let Piece::Facet { attribute: a, .. } = piece
                    && let Some(f) = fields.iter_mut().find(|f| f.attribute == *a)
                    && !f.ty.ends_with('!')
                {
                    f.ty.push('!');
                }
            }
        }
        let field_of = |piece: &Piece| match piece {
            Piece::Facet { attribute, .. } => fields
                .iter()
                .find(|f| f.attribute == *attribute)
                .map_or_else(|| attribute.clone(), |f| f.name.clone()),
            Piece::KeyOnly(field, _) => field.clone(),
            Piece::Literal(text) => text.clone(),
        };
        let keys = templates
            .iter()
            .map(|(attribute, t)| {
                (
                    attribute.clone(),
                    t.text(field_of),
                    if t.fits == t.holding {
                        format!(
                            "`{attribute}`: this template in all {} sampled items holding it",
                            t.holding
                        )
                    } else {
                        format!(
                            "`{attribute}`: this template reads the keys of {} of the {} \
                             sampled items holding it; review the others (keys of another \
                             shape, which are then of no type)",
                            t.fits, t.holding
                        )
                    },
                )
            })
            .collect();
        let templates_by_field: Vec<(String, Template)> = templates
            .iter()
            .map(|(attribute, t)| {
                let mut t = t.clone();
                for piece in &mut t.pieces {
                    if let Piece::Facet { width, .. } = piece {
                        let width = *width;
                        *piece = Piece::Facet {
                            attribute: field_of(piece),
                            width,
                        };
                    }
                }
                (attribute.clone(), t)
            })
            .collect();
        let constants = bookkeeping
            .iter()
            .filter(|b| Some(**b) != type_attribute.as_deref())
            .filter_map(|b| {
                let first = group.items.first()?.get(*b)?;
                let aws_sdk_dynamodb::types::AttributeValue::S(value) = first else {
                    return None;
                };
                group
                    .items
                    .iter()
                    .all(|i| i.get(*b) == Some(first))
                    .then(|| ((*b).to_owned(), value.clone()))
            })
            .collect();
        let mut shared = SharedKeys {
            type_value: typed
                .as_ref()
                .and_then(|_| (group.value != name).then(|| group.value.clone())),
            keys,
            lower: templates.iter().any(|(_, t)| t.lower),
            escaped,
            constants,
            templates: templates_by_field,
            electrodb: None,
        };
        if writer == Some(Writer::ElectroDb) {
            shared.electrodb = super::electrodb::declaration(&shared, live, &fields, &group.value);
        }
        entities.push(EntityProposal::new(
            name.clone(),
            &input.name,
            table_at,
            fields,
            Some(shared),
            group.at.clone(),
        ));
    }
    let counts: Vec<String> = groups
        .iter()
        .zip(&entities)
        .map(|(g, e)| format!("{} ({} items)", e.name, g.items.len()))
        .collect();
    let told = match writer {
        Some(w) => format!("written by {}", w.describe()),
        None => "told apart by the text their keys start with".to_owned(),
    };
    let mut notes = vec![format!(
        "Several types in one table, {told}: {}.",
        counts.join(", ")
    )];
    if writer == Some(Writer::ElectroDb) {
        // ElectroDB's own names: the service starts the partition key (`$lending#…`).
        let described: Vec<String> = groups
            .iter()
            .zip(&entities)
            .map(|(g, e)| {
                let keys = e.shared.as_ref();
                let service = keys
                    .and_then(|k| k.keys.iter().find(|(a, _, _)| *a == live.partition.name))
                    .and_then(|(_, t, _)| t.strip_prefix('$'))
                    .and_then(|t| t.split('#').next())
                    .unwrap_or("?");
                let version = keys
                    .and_then(|k| k.constants.iter().find(|(n, _)| n == "__edb_v__"))
                    .map_or("?", |(_, v)| v.as_str());
                format!(
                    "service `{service}`, entity `{}`, version {version}",
                    g.value
                )
            })
            .collect();
        notes.push(format!("Written by ElectroDB: {}.", described.join("; ")));
    }
    let skipped = input
        .items
        .iter()
        .filter(|i| single_table::is_tool_record(i, partition))
        .count();
    if skipped > 0 {
        notes.push(format!(
            "{skipped} sampled items are OneTable's `_unique#` records, of no type."
        ));
    }
    Some(SharedTable {
        entities,
        notes,
        type_attribute,
    })
}

/// The fields a template's facets are (in a [`SharedKeys::templates`] template, where both
/// kinds of facet name their field).
fn facet_fields(t: &Template) -> Vec<&str> {
    t.pieces
        .iter()
        .filter_map(|p| match p {
            Piece::KeyOnly(f, _) | Piece::Facet { attribute: f, .. } => Some(f.as_str()),
            Piece::Literal(_) => None,
        })
        .collect()
}

/// The field a key's template reads for a partition: its one facet, or the key attribute's
/// own field.
fn partition_field(entity: &EntityProposal, keys: &SharedKeys, attribute: &str) -> Option<String> {
    if let Some((_, t)) = keys.templates.iter().find(|(a, _)| a == attribute) {
        let facets = facet_fields(t);
        return (facets.len() == 1).then(|| facets[0].to_owned());
    }
    entity
        .fields
        .iter()
        .find(|f| f.attribute == attribute)
        .map(|f| f.name.clone())
}

/// The template of `attribute` as text, facets by field.
fn template_text(keys: &SharedKeys, attribute: &str) -> Option<String> {
    keys.templates
        .iter()
        .find(|(a, _)| a == attribute)
        .map(|(_, t)| {
            t.text(|p| match p {
                Piece::KeyOnly(f, _) | Piece::Facet { attribute: f, .. } => f.clone(),
                Piece::Literal(_) => String::new(),
            })
        })
}

/// Sort-key arguments on the facet of a template after its first `fixed` facets (fixed by
/// arguments of their fields' names), where its stored text sorts: `min`/`max` on times stored
/// as text and on integers written at one width, `begins_with` on text. A sort key with no
/// template gets [`sort_args`] on its field.
fn template_sort(
    entity: &EntityProposal,
    keys: &SharedKeys,
    attribute: &str,
    fixed: usize,
) -> Option<SortArgs> {
    let Some((_, t)) = keys.templates.iter().find(|(a, _)| a == attribute) else {
        let field = entity.fields.iter().find(|f| f.attribute == attribute)?;
        return (fixed == 0).then(|| sort_args(field));
    };
    let facets = facet_fields(t);
    let next = *facets.get(fixed)?;
    let field = entity.fields.iter().find(|f| f.name == next)?;
    let padded = t.pieces.iter().any(|p| match p {
        Piece::Facet {
            attribute,
            width: Some(_),
        }
        | Piece::KeyOnly(attribute, Some(_)) => attribute == next,
        _ => false,
    });
    // A range follows the keys' order only where their text sorts as the values and ends
    // before the next facet's (the server's own rule, `KeyTemplate::bounds_after`).
    let reader = t.reader(keys.escaped)?;
    let reader = if t.lower {
        reader.with_case(KeyCase::Lower)
    } else {
        reader
    };
    let exact = |alphabet: &str| {
        let written = reader.written(alphabet);
        reader.separator_among(&written).is_none()
            && reader.bounds_after(&format!("f{fixed}"), &written)
    };
    let epoch = matches!(field.stored_as, Some("epoch_millis" | "epoch_seconds"));
    let (range, prefix) = match field.base() {
        "String" | "ID" => (false, true),
        "DateTime" if field.stored_as == Some("date") => (exact(DATE_TEXT), true),
        "DateTime" if !epoch => (exact(TIME_TEXT), true),
        "Int" | "BigInt" | "DateTime" => ((padded || keys.escaped) && exact(INTEGER_TEXT), false),
        _ => (false, false),
    };
    (range || prefix || fixed > 0).then(|| SortArgs {
        fixed: facets[..fixed].iter().map(|f| (*f).to_owned()).collect(),
        optional: false,
        field: field.name.clone(),
        range: range.then(|| (format!("{}Min", field.name), format!("{}Max", field.name))),
        prefix: prefix.then(|| format!("{}Prefix", field.name)),
    })
}

/// The leading facets of a sort key's template that hold one of a few values (an enum's: a
/// status, a section), when a facet follows them: fixing them gives a connection over one
/// value's items in the order of the facets after (Amplify's `{status}#{createdAt}`: one
/// status's orders by time). Zero when the first facet is not such.
fn enum_facets(
    entity: &EntityProposal,
    keys: &SharedKeys,
    attribute: &str,
    enums: &[EnumProposal],
) -> usize {
    let Some((_, t)) = keys.templates.iter().find(|(a, _)| a == attribute) else {
        return 0;
    };
    let facets = facet_fields(t);
    let leading = facets
        .iter()
        .take_while(|f| {
            entity
                .fields
                .iter()
                .find(|field| field.name == **f)
                .is_some_and(|field| enums.iter().any(|e| e.name == field.base()))
        })
        .count();
    leading.min(facets.len().saturating_sub(1))
}

/// Whether a sort key's template begins with a facet of text (`String` or `ID`) that another
/// facet follows: a value to give whole, not to match by its start only.
fn text_facet_leads(entity: &EntityProposal, keys: &SharedKeys, attribute: &str) -> bool {
    let Some((_, t)) = keys.templates.iter().find(|(a, _)| a == attribute) else {
        return false;
    };
    let facets = facet_fields(t);
    facets.len() >= 2
        && entity
            .fields
            .iter()
            .find(|f| f.name == facets[0])
            .is_some_and(|f| matches!(f.base(), "String" | "ID"))
}

/// Whether `entity` is alone of its type in each partition of its table: the table has no sort
/// key, or its sort key's template holds no value its partition key's does not (a customer's
/// `#PROFILE`, or `CUSTOMER#{username}` again).
fn singleton(entity: &EntityProposal, keys: &SharedKeys, proposal: &Proposal) -> bool {
    let live = &proposal.tables[entity.table_at].live;
    let template = |attribute: &str| keys.templates.iter().find(|(a, _)| a == attribute);
    let Some((_, partition)) = template(&live.partition.name) else {
        return false;
    };
    live.sort.as_ref().is_none_or(|s| {
        template(&s.name).is_some_and(|(_, t)| {
            facet_fields(t)
                .iter()
                .all(|f| facet_fields(partition).contains(f))
        })
    })
}

/// An item collection under each type alone in its partition whose partition other types
/// share (the same template on the table's partition key, with the same field): everything
/// stored there, in key order, as a union.
fn collections(proposal: &Proposal, type_names: &mut Taken) -> Vec<(usize, ConnectionProposal)> {
    let mut out = Vec::new();
    for (p, parent) in proposal.entities.iter().enumerate() {
        let Some(keys) = &parent.shared else { continue };
        let live = &proposal.tables[parent.table_at].live;
        let Some(text) = template_text(keys, &live.partition.name) else {
            continue;
        };
        let Some(field) = partition_field(parent, keys, &live.partition.name) else {
            continue;
        };
        if !singleton(parent, keys, proposal) {
            continue;
        }
        let members: Vec<String> = proposal
            .entities
            .iter()
            .filter(|e| {
                e.table_at == parent.table_at
                    && e.shared.as_ref().is_some_and(|k| {
                        template_text(k, &live.partition.name).as_deref() == Some(text.as_str())
                    })
                    && e.fields.iter().any(|f| f.name == field)
            })
            .map(|e| e.name.clone())
            .collect();
        if members.len() < 2 {
            continue;
        }
        let union = type_names.claim(&format!("{}Collection", parent.name));
        let others: Vec<&str> = members
            .iter()
            .filter(|m| **m != parent.name)
            .map(String::as_str)
            .collect();
        let on: Vec<String> = members.iter().map(|m| format!("`... on {m}`")).collect();
        out.push((
            p,
            ConnectionProposal {
                name: "collection".to_owned(),
                entity: parent.name.clone(),
                index: None,
                scan: false,
                partition: Some(PartitionFrom::Field(field)),
                sort: None,
                description: format!(
                    "Everything stored with this {} (its item and its {}), in key order, one \
                     read per page. Select fields with {}.",
                    parent.name,
                    others
                        .iter()
                        .map(|o| plural(o))
                        .collect::<Vec<_>>()
                        .join(", "),
                    on.join(", ")
                ),
                collection: Some((members, union)),
                filters: Vec::new(),
            },
        ));
    }
    out
}

/// A root item collection per index partition several types of a table share (the same
/// template on the index's partition key, of one field, held whole by the index): everything
/// filed there, in key order, as a union (AWS's shop: a customer's orders and invoices under
/// `GSI2PK = "c#{customerId}"`). With sort conditions when every member writes the index's sort
/// key alike (the same template, its first facet of one type): orders and invoices by date.
fn index_collections(
    proposal: &Proposal,
    root: &mut Taken,
    type_names: &mut Taken,
) -> Vec<ConnectionProposal> {
    let mut out = Vec::new();
    for (t, table) in proposal.tables.iter().enumerate() {
        let live = &table.live;
        for index in &live.indexes {
            let mut groups: Vec<(String, String, Vec<&EntityProposal>)> = Vec::new();
            for entity in proposal.entities.iter().filter(|e| e.table_at == t) {
                let Some(keys) = &entity.shared else { continue };
                let (Some(text), Some(field)) = (
                    template_text(keys, &index.partition.name),
                    partition_field(entity, keys, &index.partition.name),
                ) else {
                    continue;
                };
                if !holds_every_attribute(live, index, entity) {
                    continue;
                }
                match groups
                    .iter_mut()
                    .find(|(x, f, _)| *x == text && *f == field)
                {
                    Some((_, _, members)) => members.push(entity),
                    None => groups.push((text, field, vec![entity])),
                }
            }
            for (_, field, members) in groups.into_iter().filter(|(_, _, m)| m.len() >= 2) {
                let names: Vec<String> = members.iter().map(|e| e.name.clone()).collect();
                let sort = index.sort.as_ref().and_then(|s| {
                    let first = members[0];
                    let keys = first.shared.as_ref()?;
                    // The sort key's template (none: the attribute is a field), and the type of
                    // its first facet or of that field.
                    let shape = |e: &EntityProposal| {
                        let keys = e.shared.as_ref()?;
                        let text = template_text(keys, &s.name);
                        let field = match keys.templates.iter().find(|(a, _)| *a == s.name) {
                            Some((_, t)) => {
                                let facet = *facet_fields(t).first()?;
                                e.fields.iter().find(|f| f.name == facet)?
                            }
                            None => e.fields.iter().find(|f| f.attribute == s.name)?,
                        };
                        Some((text, field.ty.clone(), field.stored_as))
                    };
                    let alike =
                        shape(first).is_some() && members.iter().all(|e| shape(e) == shape(first));
                    alike
                        .then(|| template_sort(first, keys, &s.name, 0))
                        .flatten()
                });
                let union = type_names.claim(&names.join("Or"));
                let name = root.claim(&camel(
                    &format!("{}By{}", names.join("And"), pascal(&field, "Key")),
                    "items",
                ));
                let on: Vec<String> = names.iter().map(|m| format!("`... on {m}`")).collect();
                out.push(ConnectionProposal {
                    name,
                    entity: names[0].clone(),
                    index: Some(index.name.clone()),
                    scan: false,
                    partition: Some(PartitionFrom::Argument(field.clone())),
                    sort,
                    description: format!(
                        "Everything filed under one `{field}` in index {} ({}), in key order, \
                         one read per page. Select fields with {}.",
                        index.name,
                        names
                            .iter()
                            .map(|n| plural(n))
                            .collect::<Vec<_>>()
                            .join(", "),
                        on.join(", ")
                    ),
                    collection: Some((names, union)),
                    filters: Vec::new(),
                });
            }
        }
    }
    out
}

/// Lookups, Scans and Queries of the shared tables' entities, and connections under the entity
/// whose key a partition's template is.
pub fn connect(proposal: &mut Proposal, root: &mut Taken, type_names: &mut Taken) {
    let mut nested: Vec<(usize, ConnectionProposal)> = collections(proposal, type_names);
    let indexed = index_collections(proposal, root, type_names);
    proposal.connections.extend(indexed);
    for (e, entity) in proposal.entities.iter().enumerate() {
        let Some(keys) = &entity.shared else { continue };
        let table = &proposal.tables[entity.table_at];
        let live = &table.live;
        let plural_name = camel(&plural(&entity.name), "items");
        // A lookup by the table's key, when its keys take at least one value.
        let mut arguments = Vec::new();
        let mut whole = true;
        for key in std::iter::once(&live.partition).chain(live.sort.as_ref()) {
            match keys.templates.iter().find(|(a, _)| *a == key.name) {
                Some((_, t)) => arguments.extend(facet_fields(t).into_iter().map(str::to_owned)),
                None => match entity.fields.iter().find(|f| f.attribute == key.name) {
                    Some(f) => arguments.push(f.name.clone()),
                    None => whole = false,
                },
            }
        }
        // A value two keys repeat (`AUTHOR#{name}`, `#METADATA#{name}`) is one argument.
        let mut distinct: Vec<String> = Vec::new();
        for argument in arguments {
            if !distinct.contains(&argument) {
                distinct.push(argument);
            }
        }
        let arguments = distinct;
        if whole && !arguments.is_empty() {
            proposal.lookups.push(LookupProposal {
                name: root.claim(&camel(&entity.name, "item")),
                entity: entity.name.clone(),
                description: format!(
                    "Looks up one {} by {}. Null when there is no such item.",
                    entity.name,
                    listed(&arguments)
                ),
                index: None,
                evidence: None,
                review: None,
            });
        }
        proposal.connections.push(ConnectionProposal::root_scan(
            root,
            &entity.name,
            format!(
                "a Scan of table {} that skips its other types' items",
                table.name
            ),
        ));
        let mut reads: Vec<(Option<&str>, &LiveKey, Option<&LiveKey>)> = Vec::new();
        if live.sort.is_some() {
            reads.push((None, &live.partition, live.sort.as_ref()));
        }
        for index in &live.indexes {
            if holds_every_attribute(live, index, entity) {
                reads.push((Some(&index.name), &index.partition, index.sort.as_ref()));
            }
        }
        for (index, partition, sort) in reads {
            let Some(field) = partition_field(entity, keys, &partition.name) else {
                continue;
            };
            // This type's items must be in the index: it has its own keys there.
            let held = |k: &LiveKey| {
                keys.templates.iter().any(|(a, _)| *a == k.name)
                    || entity.fields.iter().any(|f| f.attribute == k.name)
            };
            if !held(partition) || sort.is_some_and(|s| !held(s)) {
                continue;
            }
            let through = index.map_or(String::new(), |i| format!(" (index {i})"));
            // Conditions on the first facet. When leading facets hold an enum's values (which
            // take none), they are `fixed` arguments instead, optional, with conditions on the
            // facet after: given, one value's items (Amplify's status); left out, the whole
            // partition.
            let first = sort.and_then(|s| template_sort(entity, keys, &s.name, 0));
            let mut variants = vec![first.clone()];
            if let Some(s) = sort {
                let fixed = enum_facets(entity, keys, &s.name, &proposal.enums);
                if fixed > 0
                    && let Some(mut fixing) = template_sort(entity, keys, &s.name, fixed)
                {
                    fixing.optional = first.is_none();
                    if fixing.optional {
                        variants.clear();
                    }
                    variants.push(Some(fixing));
                } else if text_facet_leads(entity, keys, &s.name)
                    && let Some(fixing) = template_sort(entity, keys, &s.name, 1)
                {
                    // A value of text before another (`F#{status}#{id}`, an order's
                    // `ORDER#{orderId}#ITEM#{itemId}`): equality on it, beside the prefix the
                    // first variant offers, which reads `ACTIVEX` for `ACTIVE`.
                    variants.push(Some(fixing));
                }
            }
            for sort_args in variants {
                let and: String = SortArgs::required(sort_args.as_ref()).concat();
                let one = SortArgs::one(sort_args.as_ref());
                proposal.connections.push(ConnectionProposal::root_query(
                    root,
                    &entity.name,
                    index,
                    &field,
                    sort_args.clone(),
                    ", in key order (`order: DESC` for the reverse)",
                ));
                // Under another type of the table whose own key has this partition's template.
                let Some(text) = template_text(keys, &partition.name) else {
                    continue;
                };
                for (p, parent) in proposal.entities.iter().enumerate() {
                    let Some(parent_keys) = &parent.shared else {
                        continue;
                    };
                    // The parent is the one item of its type in the partition.
                    if p == e
                        || !singleton(parent, parent_keys, proposal)
                        || parent.table_at != entity.table_at
                        || template_text(parent_keys, &live.partition.name).as_deref()
                            != Some(text.as_str())
                        || !parent.fields.iter().any(|f| f.name == field)
                    {
                        continue;
                    }
                    let name = match (index, and.is_empty()) {
                        (None, true) => plural_name.clone(),
                        (None, false) => format!("{plural_name}By{and}"),
                        (Some(i), true) => format!("{plural_name}By{}", index_suffix(i)),
                        (Some(i), false) => format!("{plural_name}By{}And{and}", index_suffix(i)),
                    };
                    nested.push((
                        p,
                        ConnectionProposal {
                            name,
                            entity: entity.name.clone(),
                            index: index.map(str::to_owned),
                            scan: false,
                            partition: Some(PartitionFrom::Field(field.clone())),
                            sort: sort_args.clone(),
                            description: format!(
                                "This {}'s {}{one}{through}, in key order (`order: DESC` for the \
                                 reverse).",
                                parent.name,
                                plural(&entity.name)
                            ),
                            collection: None,
                            filters: Vec::new(),
                        },
                    ));
                }
            }
        }
    }
    for (parent, mut connection) in nested {
        let entity = &mut proposal.entities[parent];
        let mut taken = Taken::with(&["id", "__typename"]);
        for f in &entity.fields {
            taken.claim(&f.name);
        }
        for c in &entity.connections {
            taken.claim(&c.name);
        }
        connection.name = taken.claim(&connection.name);
        entity.connections.push(connection);
    }
}
