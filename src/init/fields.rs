//! An entity's fields typed from what its sampled items hold: keys first, each attribute's
//! GraphQL type and `stored_as` (times in their stored forms, ids, numbers by range, sets), an
//! enum where a string holds a few repeated values, non-null only where no item can lack it,
//! with the evidence for each and what the sample cannot settle marked for review.

use std::collections::BTreeMap;

use crate::dynamo::sample::{KeyKind, LiveTable};

use super::{
    names::{Taken, field_name, is_graphql_name, pascal},
    observe::{MAX_ENUM_VALUES, Observed},
    proposal::{EnumProposal, FieldProposal, KeyRole},
};

/// The key role and type of `attribute` in `table`.
fn key_of(table: &LiveTable, attribute: &str) -> Option<(KeyRole, KeyKind)> {
    if table.partition.name == attribute {
        return Some((KeyRole::Partition, table.partition.kind));
    }
    if let Some(sort) = table.sort.as_ref().filter(|s| s.name == attribute) {
        return Some((KeyRole::Sort, sort.kind));
    }
    table
        .indexes
        .iter()
        .flat_map(|i| std::iter::once(&i.partition).chain(i.sort.as_ref()))
        .find(|k| k.name == attribute)
        .map(|k| (KeyRole::Index, k.kind))
}

/// How many items of an entity were sampled, and whether they are all its table held.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sampled {
    /// The entity's items in the sample.
    pub count: usize,
    /// The sample is every item of the table.
    pub complete: bool,
}

/// The fields of `entity`, from `table`'s keys and what the sample `seen` holds of each
/// attribute (less `skip`); enums it proposes go to `enums`, named apart from `type_names`.
pub(super) fn fields(
    entity: &str,
    table: &LiveTable,
    seen: &BTreeMap<String, Observed>,
    sample: Sampled,
    enums: &mut Vec<EnumProposal>,
    type_names: &mut Taken,
    skip: &[String],
) -> Vec<FieldProposal> {
    let sampled = sample.count;
    // Keys first (partition, sort, then the indexes'), then the rest by name.
    let mut attributes: Vec<&str> = vec![table.partition.name.as_str()];
    attributes.extend(table.sort.as_ref().map(|s| s.name.as_str()));
    for index in &table.indexes {
        for key in std::iter::once(&index.partition).chain(index.sort.as_ref()) {
            if !attributes.contains(&key.name.as_str()) {
                attributes.push(&key.name);
            }
        }
    }
    for name in seen.keys() {
        if !attributes.contains(&name.as_str()) {
            attributes.push(name);
        }
    }
    attributes.retain(|a| !skip.iter().any(|s| s == a));
    let mut names = Taken::with(&["id", "__typename"]);
    let empty = Observed::default();
    attributes
        .into_iter()
        .map(|attribute| {
            let observed = seen.get(attribute).unwrap_or(&empty);
            let key = key_of(table, attribute);
            let name = names.claim(&field_name(attribute, entity));
            let ttl = table.ttl_attribute.as_deref() == Some(attribute);
            let mut field = infer_field(&name, attribute, observed, sample, key, ttl);
            if let Some(values) = enum_candidate(observed, key) {
                let enum_name = type_names.claim(&format!("{entity}{}", pascal(&name, "Value")));
                let required = field.ty.ends_with('!');
                field.ty = format!("{enum_name}{}", if required { "!" } else { "" });
                field.evidence = format!(
                    "{}; {} distinct values seen, each more than once",
                    presence(observed, sampled),
                    values.len()
                );
                field.review = Some(format!(
                    "an enum from the values seen: a stored value not in `{enum_name}` makes this \
                     field an error on that item; add values as they appear, or make it a \
                     `String`"
                ));
                enums.push(EnumProposal {
                    name: enum_name,
                    values,
                    field: format!("{entity}.{name}"),
                });
            }
            field
        })
        .collect()
}

/// `in 498 of 500 sampled items`.
fn presence(observed: &Observed, sampled: usize) -> String {
    format!("in {} of {sampled} sampled items", observed.present)
}

/// Values for an enum when a string attribute holds a few values that repeat, each a valid
/// GraphQL enum value: at least two, at most [`MAX_ENUM_VALUES`], each seen at least twice.
fn enum_candidate(
    observed: &Observed,
    key: Option<(KeyRole, KeyKind)>,
) -> Option<Vec<(String, usize)>> {
    if key.is_some() || observed.only_kind() != Some("S") {
        return None;
    }
    let st = &observed.strings;
    if st.iso_millis + st.iso_seconds + st.iso_other + st.dates > 0 {
        return None;
    }
    let distinct = st.distinct.as_ref()?;
    let valid = |v: &str| is_graphql_name(v) && !matches!(v, "true" | "false" | "null");
    (distinct.len() >= 2
        && distinct.len() <= MAX_ENUM_VALUES
        && distinct.iter().all(|(v, n)| *n >= 2 && valid(v)))
    .then(|| distinct.iter().map(|(v, n)| (v.clone(), *n)).collect())
}

/// Whether an attribute's name says it holds a time: its last word (split at `_`, `-` and
/// lower-to-upper case changes) is one such as `at`, `time` or `updated` (`createdAt`,
/// `expires_at`, `ttl`), or it is dynamodb-toolbox's `_ct` or `_md`.
fn time_like(name: &str) -> bool {
    let mut last = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !last.is_empty() {
                last.clear();
            }
            previous_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && previous_lower {
            last.clear();
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        last.push(c.to_ascii_lowercase());
    }
    matches!(
        last.as_str(),
        "at" | "time"
            | "timestamp"
            | "date"
            | "ts"
            | "created"
            | "updated"
            | "modified"
            | "expires"
            | "expiry"
            | "ttl"
    ) || matches!(name, "_ct" | "_md")
}

/// Whether a string attribute's name says it holds an id: `id`, or a last word `Id`/`ID`
/// (`customerId`, `order_id`).
fn id_like(name: &str) -> bool {
    name == "id"
        || name.ends_with("Id")
        || name.ends_with("ID")
        || name.to_ascii_lowercase().ends_with("_id")
}

/// Epoch milliseconds and seconds from 2000 to 2100: what a number naming a time holds.
const MILLIS: (i64, i64) = (946_684_800_000, 4_102_444_800_000);
const SECONDS: (i64, i64) = (946_684_800, 4_102_444_800);

fn within((lo, hi): (i64, i64), bounds: (i64, i64)) -> bool {
    lo >= bounds.0 && hi <= bounds.1
}

fn infer_field(
    name: &str,
    attribute: &str,
    observed: &Observed,
    sample: Sampled,
    key: Option<(KeyRole, KeyKind)>,
    ttl: bool,
) -> FieldProposal {
    // Non-null only where no item can lack it: a key of the table, or an attribute every item
    // holds when every item was read. A sample of part of a table leaves it nullable, since one
    // unread item without it would make every page holding that item an error.
    let Sampled {
        count: sampled,
        complete,
    } = sample;
    let primary = key.is_some_and(|(role, _)| role != KeyRole::Index);
    let everywhere = sampled > 0 && observed.present == sampled;
    let required = primary || (complete && everywhere);
    let mut field = FieldProposal {
        name: name.to_owned(),
        attribute: attribute.to_owned(),
        ty: String::new(),
        stored_as: None,
        evidence: presence(observed, sampled),
        review: None,
        key,
    };
    let key_text = key.map(|(role, kind)| {
        let role = match role {
            KeyRole::Partition => "the table's partition key",
            KeyRole::Sort => "the table's sort key",
            KeyRole::Index => "an index key",
        };
        format!("{role} ({})", kind.as_str())
    });
    let mut detail: Option<String> = None;
    let base: String = match observed.only_kind() {
        None => match key {
            Some((_, kind)) => {
                field.review = Some("no item holds it: typed from the key definition".to_owned());
                match kind {
                    KeyKind::S => "String",
                    KeyKind::N => "BigInt",
                    KeyKind::B => "Bytes",
                }
                .to_owned()
            }
            None => {
                field.review = Some("only NULL was seen: typed JSON".to_owned());
                "JSON".to_owned()
            }
        },
        Some("S") => {
            let st = &observed.strings;
            let times = st.iso_millis + st.iso_seconds + st.iso_other;
            if st.count > 0 && st.iso_millis == st.count {
                field.stored_as = Some("iso8601");
                detail = Some("all RFC 3339 in UTC with milliseconds".to_owned());
                "DateTime".to_owned()
            } else if st.count > 0 && st.iso_seconds == st.count {
                field.stored_as = Some("iso8601_seconds");
                detail = Some("all RFC 3339 in UTC in whole seconds".to_owned());
                "DateTime".to_owned()
            } else if st.count > 0 && times == st.count {
                field.stored_as = Some("iso8601");
                detail = Some("all RFC 3339, in several forms".to_owned());
                field.review = Some(
                    "times are stored in several forms (fractions or offsets differ): they read \
                     correctly, but their text does not sort as the times do"
                        .to_owned(),
                );
                "DateTime".to_owned()
            } else if st.count > 0 && st.dates == st.count {
                field.stored_as = Some("date");
                detail = Some("all calendar dates (YYYY-MM-DD)".to_owned());
                "DateTime".to_owned()
            } else if id_like(attribute) {
                "ID".to_owned()
            } else {
                "String".to_owned()
            }
        }
        Some("N") => {
            let nu = &observed.numbers;
            if nu.integers < nu.count {
                detail = Some("numbers with fractions".to_owned());
                "Decimal".to_owned()
            } else if nu.int64 < nu.count {
                detail = Some("whole numbers beyond 64 bits".to_owned());
                "Decimal".to_owned()
            } else {
                let range = nu.range.unwrap_or((0, 0));
                let span = format!("whole numbers from {} to {}", range.0, range.1);
                // A number named like a time may hold any time up to 2100 (0 included): it is
                // milliseconds once one value is past 1973 counted in them. Any other number
                // is a time only as a suggestion, when all of it falls in 2000 to 2100.
                let named = ttl || time_like(attribute);
                let epoch = if named
                    && range.1 >= 100_000_000_000
                    && within(range, (-MILLIS.1, MILLIS.1))
                {
                    Some(("epoch_millis", "milliseconds"))
                } else if named && within(range, (-SECONDS.1, SECONDS.1)) {
                    Some(("epoch_seconds", "seconds"))
                } else if within(range, MILLIS) {
                    Some(("epoch_millis", "milliseconds"))
                } else if within(range, SECONDS) {
                    Some(("epoch_seconds", "seconds"))
                } else {
                    None
                };
                match epoch {
                    Some((form, unit)) if named => {
                        field.stored_as = Some(form);
                        detail = Some(format!(
                            "{span}: epoch {unit}, by its name{}",
                            if ttl {
                                " (the table's time-to-live attribute)"
                            } else {
                                ""
                            }
                        ));
                        "DateTime".to_owned()
                    }
                    _ => {
                        if let Some((form, unit)) = epoch {
                            field.review = Some(format!(
                                "the values look like epoch {unit}: for a time, use `type = \
                                 \"DateTime\"` with `stored_as = \"{form}\"`"
                            ));
                        }
                        detail = Some(span);
                        if nu.int32 == nu.count {
                            "Int"
                        } else {
                            "BigInt"
                        }
                        .to_owned()
                    }
                }
            }
        }
        Some("B") => "Bytes".to_owned(),
        Some("BOOL") => "Boolean".to_owned(),
        Some("L" | "M") => "JSON".to_owned(),
        Some("SS") => {
            field.stored_as = Some("set");
            "[String!]".to_owned()
        }
        Some("NS") => {
            field.stored_as = Some("set");
            let nu = &observed.numbers;
            if nu.integers < nu.count || nu.int64 < nu.count {
                "[Decimal!]"
            } else if nu.int32 == nu.count {
                "[Int!]"
            } else {
                "[BigInt!]"
            }
            .to_owned()
        }
        Some("BS") => {
            field.stored_as = Some("set");
            "[Bytes!]".to_owned()
        }
        Some(_) => {
            field.review = Some("a type this version does not read: typed JSON".to_owned());
            "JSON".to_owned()
        }
    };
    let base = if observed.kinds.keys().filter(|k| **k != "NULL").count() > 1 {
        field.review = Some(format!(
            "stored as different types ({}): typed JSON",
            observed.kinds_text()
        ));
        "JSON".to_owned()
    } else {
        base
    };
    field.ty = format!("{base}{}", if required { "!" } else { "" });
    if everywhere && !required && field.review.is_none() {
        field.review = Some(format!(
            "every sampled item holds it, but not every item was read: make it `{}!` once you \
             know every item does",
            field.ty
        ));
    }
    if let Some(key_text) = key_text {
        field.evidence = format!("{key_text}, {}", field.evidence);
    }
    if let Some(detail) = detail {
        field.evidence = format!("{}; {detail}", field.evidence);
    }
    field
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_times_are_told_by_their_last_word() {
        for name in [
            "createdAt",
            "expires_at",
            "ttl",
            "updated",
            "_ct",
            "releasedAt",
            "ts",
        ] {
            assert!(time_like(name), "{name}");
        }
        for name in [
            "seats",
            "format",
            "status",
            "stats",
            "dateCount",
            "created_by",
        ] {
            assert!(!time_like(name), "{name}");
        }
    }
}
