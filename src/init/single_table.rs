//! Single-table designs in a sample: which attribute names each item's type (and which library
//! wrote the table), how its keys are written (the separator between their segments, and
//! whether dynarelay escaped the values in them), and the items of each type. The template each
//! key attribute follows among one type's items is read by [`super::templates`].

use aws_sdk_dynamodb::types::AttributeValue;

use crate::{dynamo::Item, graphql::values::plain_text, model::template::sortable_integer};

/// The library a table's type attribute says wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// ElectroDB: `__edb_e__` (the entity) and `__edb_v__` (its version).
    ElectroDb,
    /// dynamodb-toolbox: `_et`, with `_ct` and `_md` times.
    Toolbox,
    /// OneTable: `_type`, with its own `_unique#` items.
    OneTable,
    /// Amplify (AppSync): `__typename`.
    Amplify,
    /// A type attribute of another name.
    Other,
}

impl Writer {
    /// How the file says it.
    pub fn describe(self) -> &'static str {
        match self {
            Writer::ElectroDb => "ElectroDB (`__edb_e__` and `__edb_v__`)",
            Writer::Toolbox => "dynamodb-toolbox (`_et`)",
            Writer::OneTable => "OneTable (`_type`)",
            Writer::Amplify => "Amplify (`__typename`)",
            Writer::Other => "a type attribute",
        }
    }
}

/// Type attributes the libraries write, in order of preference.
const TYPE_ATTRIBUTES: &[(&str, Writer)] = &[
    ("__edb_e__", Writer::ElectroDb),
    ("_et", Writer::Toolbox),
    ("_type", Writer::OneTable),
    ("__typename", Writer::Amplify),
];

/// Hand-written type attributes' names, in order of preference, as [`plain_name`] reads them:
/// `entityType`, `EntityType`, `entity_type` and `ENTITY-TYPE` alike.
const HAND_WRITTEN: &[&str] = &[
    "entitytype",
    "type",
    "itemtype",
    "recordtype",
    "typename",
    "entity",
    "kind",
];

/// A name in lower case without `_` and `-`.
fn plain_name(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Attributes a writer keeps for itself, never fields.
pub fn bookkeeping(writer: Writer) -> &'static [&'static str] {
    match writer {
        Writer::ElectroDb => &["__edb_e__", "__edb_v__"],
        _ => &[],
    }
}

/// The table's type attribute: an attribute a library writes, else one named as people name
/// them (in any case, with or without `_` or `-`: `EntityType`, `Type`, `entity_type`) holding
/// two values or more; either a string in at least nine items of ten.
pub fn type_attribute(items: &[Item]) -> Option<(String, Writer)> {
    if items.is_empty() {
        return None;
    }
    let typed = |name: &str| {
        let strings = items
            .iter()
            .filter(|item| matches!(item.get(name), Some(AttributeValue::S(_))))
            .count();
        strings * 10 >= items.len() * 9
    };
    if let Some((name, writer)) = TYPE_ATTRIBUTES.iter().find(|(name, _)| typed(name)) {
        return Some(((*name).to_owned(), *writer));
    }
    let names = attribute_names(items);
    // A hand-written one names two types or more (one value on every item is an attribute
    // of a table of one type, whatever its name).
    let several = |name: &str| {
        let mut values = items.iter().filter_map(|item| match item.get(name) {
            Some(AttributeValue::S(v)) => Some(v),
            _ => None,
        });
        let first = values.next();
        values.any(|v| Some(v) != first)
    };
    HAND_WRITTEN.iter().find_map(|wanted| {
        names
            .iter()
            .find(|name| plain_name(name) == *wanted && typed(name) && several(name))
            .map(|name| ((*name).to_owned(), Writer::Other))
    })
}

/// Every attribute name of the sample, once, in order.
fn attribute_names(items: &[Item]) -> Vec<&str> {
    let mut names: Vec<&str> = items
        .iter()
        .flat_map(|item| item.keys().map(String::as_str))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// A type attribute of any name, read from what it holds when no name says so: a string of an
/// identifier's form (at most 64 characters) in nine items of ten, with a few values (2 to 64,
/// at most one for every two items), each of which keeps to items whose keys start alike
/// (`groups` of the table's keys by their starts), while the items span two starts or more. A
/// status or a currency on every item spans several starts with one value, or keeps to one
/// start with all of them: neither is a type.
pub fn type_attribute_by_values(
    items: &[Item],
    groups: &[Group<'_>],
    keys: &[&str],
) -> Option<String> {
    if groups.len() < 2 {
        return None;
    }
    // Each item's key start.
    let mut start: Vec<Option<usize>> = vec![None; items.len()];
    for (g, group) in groups.iter().enumerate() {
        for &at in &group.at {
            start[at] = Some(g);
        }
    }
    let identifier = |v: &str| {
        v.len() <= 64
            && v.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
    };
    let mut names = attribute_names(items);
    names.retain(|name| !keys.contains(name));
    names.into_iter().find_map(|name| {
        // The start each value keeps to.
        let mut kept: std::collections::BTreeMap<&str, usize> = Default::default();
        let mut strings = 0;
        for (at, item) in items.iter().enumerate() {
            let Some(AttributeValue::S(value)) = item.get(name) else {
                continue;
            };
            strings += 1;
            if !identifier(value) {
                return None;
            }
            let Some(g) = start[at] else { continue };
            if *kept.entry(value.as_str()).or_insert(g) != g {
                return None;
            }
        }
        let starts: std::collections::BTreeSet<usize> = kept.values().copied().collect();
        let few = (2..=64).contains(&kept.len()) && kept.len() * 2 <= items.len();
        (strings * 10 >= items.len() * 9 && few && starts.len() >= 2).then(|| name.to_owned())
    })
}

/// Whether an item is one no entity should claim: OneTable's `_unique#` items, which hold a
/// unique field's value for it.
pub fn is_tool_record(item: &Item, table_partition: &str) -> bool {
    matches!(item.get(table_partition), Some(AttributeValue::S(pk)) if pk.starts_with("_unique#"))
}

/// The items of one type.
#[derive(Debug)]
pub struct Group<'i> {
    /// The type: the type attribute's value, or the literal start of the keys.
    pub value: String,
    /// Its items.
    pub items: Vec<&'i Item>,
    /// Their positions in the sample.
    pub at: Vec<usize>,
}

/// The characters code puts between the segments of its keys, in order of preference.
const SEPARATORS: [char; 6] = ['#', '|', '/', '~', ':', '!'];

/// The separator of a table's keys: the first of `#`, `|`, `/`, `~`, `:` and `!` that nine
/// keys in ten hold. Other than `#`, which is nothing else, it must follow a name (text starting
/// with a letter, `_` or `$`), as in `USER|ana`, for a time's `:` or a date's `/` not to pass
/// for one.
pub fn separator(keys: &[&str]) -> Option<char> {
    let named = |key: &str, c: char| {
        key.trim_start_matches(c)
            .starts_with(|f: char| f.is_alphabetic() || f == '_' || f == '$')
    };
    SEPARATORS.into_iter().find(|&c| {
        let holding = keys
            .iter()
            .filter(|k| k.contains(c) && (c == '#' || named(k, c)))
            .count();
        !keys.is_empty() && holding * 10 >= keys.len() * 9
    })
}

/// Whether dynarelay wrote the keys `attributes` of `items` with its escapes: a key holds a `\`
/// before the separator or before another `\`, or an integer of the item as dynarelay's 20
/// sortable digits. Nobody else escapes, so without that evidence values are as their writer
/// left them.
pub fn written_escaped(items: &[Item], attributes: &[&str], separator: char) -> bool {
    items.iter().any(|item| {
        attributes.iter().any(|a| {
            let Some(AttributeValue::S(key)) = item.get(*a) else {
                return false;
            };
            let escapes = key
                .as_bytes()
                .windows(2)
                .any(|w| w[0] == b'\\' && (w[1] == b'\\' || char::from(w[1]) == separator));
            let sortable = || {
                item.values().any(|v| match v {
                    AttributeValue::N(n) => n
                        .parse::<i64>()
                        .is_ok_and(|n| key.split(separator).any(|s| s == sortable_integer(n))),
                    _ => false,
                })
            };
            escapes || sortable()
        })
    })
}

/// Whether `text` is a word as code writes a key's literal text: a letter first, then letters,
/// digits, `_` or `-`.
pub fn word(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Whether `value` is one of `item`'s own values (any attribute but the keys `keys`).
fn own_value(item: &Item, keys: (&str, Option<&str>), value: &str) -> bool {
    item.iter()
        .any(|(a, v)| a != keys.0 && Some(a.as_str()) != keys.1 && plain_text(v) == Some(value))
}

/// The words that end keys of `attribute` after a facet, as literal text telling kinds apart
/// (the social network's `u#{userId}#follower` beside `u#{userId}#following`): a word ending
/// keys whose segment before it differs (so it follows a value, not more literal text), and
/// that is none of those items' own values. A name ending `USER#bob` keys is preceded by the
/// same `USER` in each, so it is a value, not a suffix.
fn suffix_words(
    items: &[Item],
    attribute: &str,
    keys: (&str, Option<&str>),
    separator: char,
) -> std::collections::BTreeSet<String> {
    let mut before: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
        Default::default();
    let mut refused = std::collections::BTreeSet::new();
    for item in items {
        let Some(AttributeValue::S(key)) = item.get(attribute) else {
            continue;
        };
        let mut segments = key.trim_start_matches(separator).rsplit(separator);
        let (Some(last), Some(previous)) = (segments.next(), segments.next()) else {
            continue;
        };
        if !word(last) || previous.is_empty() {
            continue;
        }
        if own_value(item, keys, last) {
            refused.insert(last);
        }
        before.entry(last).or_default().insert(previous);
    }
    before
        .into_iter()
        .filter(|(w, previous)| previous.len() >= 2 && !refused.contains(w))
        .map(|(w, _)| w.to_owned())
        .collect()
}

/// The items of each type: by `type_attribute`'s value when there is one, else by the literal
/// text the partition and sort keys start with (any leading separators, then up to the next
/// one: `#METADATA` in `#METADATA#Anon #7`), unless it is one of the item's own values (a
/// `{status}#{createdAt}` key starts with a status, not a type) or no name (a bare time's
/// `2026-05-01T12` starts nothing), and by the word that ends them after a facet
/// ([`suffix_words`]: `u#{userId}#follower`). In order of first sight.
pub fn groups<'i>(
    items: &'i [Item],
    type_attribute: Option<&str>,
    keys: (&str, Option<&str>),
    separator: char,
) -> Vec<Group<'i>> {
    let (partition, sort) = keys;
    let suffixes = |attribute: Option<&str>| match (type_attribute, attribute) {
        (None, Some(attribute)) => suffix_words(items, attribute, keys, separator),
        _ => Default::default(),
    };
    let (partition_suffixes, sort_suffixes) = (suffixes(Some(partition)), suffixes(sort));
    let mut out: Vec<Group<'i>> = Vec::new();
    for (at, item) in items.iter().enumerate() {
        if is_tool_record(item, partition) {
            continue;
        }
        let value = match type_attribute {
            Some(attribute) => match item.get(attribute) {
                Some(AttributeValue::S(v)) => v.clone(),
                _ => continue,
            },
            None => {
                let start = |attribute: &str| {
                    let Some(AttributeValue::S(key)) = item.get(attribute) else {
                        return String::new();
                    };
                    let name = key.trim_start_matches(separator);
                    // A partition key of one segment is a value (`Complaint1321`), not a kind.
                    let bare = attribute == partition && !name.contains(separator);
                    let name = name.split(separator).next().unwrap_or("");
                    let named =
                        name.starts_with(|c: char| c.is_alphabetic() || c == '_' || c == '$');
                    if bare || !named || own_value(item, keys, name) {
                        return String::new();
                    }
                    let start =
                        &key[..key.len() - key.trim_start_matches(separator).len() + name.len()];
                    let suffixes = if attribute == partition {
                        &partition_suffixes
                    } else {
                        &sort_suffixes
                    };
                    match key.rsplit_once(separator) {
                        Some((head, last))
                            if head.len() > start.len() && suffixes.contains(last) =>
                        {
                            format!("{start}{separator}*{separator}{last}")
                        }
                        _ => start.to_owned(),
                    }
                };
                // The pair: an order item's keys may start as an order's sort key does.
                match sort {
                    Some(sort) if !start(sort).is_empty() => {
                        format!("{}{separator}{}", start(partition), start(sort))
                    }
                    _ => start(partition),
                }
            }
        };
        match out.iter_mut().find(|g| g.value == value) {
            Some(group) => {
                group.items.push(item);
                group.at.push(at);
            }
            None => out.push(Group {
                value,
                items: vec![item],
                at: vec![at],
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::init::test_item as item;

    #[test]
    fn type_attributes_and_tool_records_are_recognised() {
        let items = vec![
            item(&[("pk", "a"), ("_type", "Issue")]),
            item(&[("pk", "_unique#Project#name#x"), ("_type", "_Unique")]),
        ];
        assert_eq!(
            type_attribute(&items),
            Some(("_type".to_owned(), Writer::OneTable))
        );
        let typed = groups(&items, Some("_type"), ("pk", None), '#');
        assert_eq!(typed.len(), 1);
        assert_eq!(typed[0].value, "Issue");
        let by_prefix = vec![
            item(&[("PK", "CUSTOMER#u"), ("SK", "ORDER#1")]),
            item(&[("PK", "CUSTOMER#u"), ("SK", "ADDRESS#home")]),
            item(&[("PK", "CUSTOMER#v"), ("SK", "ORDER#2")]),
        ];
        let prefixed = groups(&by_prefix, None, ("PK", Some("SK")), '#');
        let values: Vec<&str> = prefixed.iter().map(|g| g.value.as_str()).collect();
        assert_eq!(values, ["CUSTOMER#ORDER", "CUSTOMER#ADDRESS"]);
        // Leading separators are part of the start; a start that is the item's own value is
        // none.
        let led = [
            item(&[("PK", "AUTHOR#a"), ("SK", "#METADATA#a")]),
            item(&[("PK", "AUTHOR#a"), ("SK", "#STATS")]),
            item(&[("PK", "AUTHOR|a"), ("SK", "OPEN|2026"), ("status", "OPEN")]),
        ];
        let values: Vec<String> = groups(&led[..2], None, ("PK", Some("SK")), '#')
            .into_iter()
            .map(|g| g.value)
            .collect();
        assert_eq!(values, ["AUTHOR##METADATA", "AUTHOR##STATS"]);
        assert_eq!(
            groups(&led[2..], None, ("PK", Some("SK")), '|')[0].value,
            "AUTHOR"
        );
    }

    #[test]
    fn a_hand_written_type_attribute_is_found_however_it_is_spelled() {
        for name in [
            "EntityType",
            "entityType",
            "entity_type",
            "ENTITY-TYPE",
            "Type",
            "_TYPE",
        ] {
            let items = vec![
                item(&[
                    ("PK", "c#1"),
                    (name, "Customer"),
                    ("contentType", "text/plain"),
                ]),
                item(&[
                    ("PK", "o#1"),
                    (name, "Order"),
                    ("contentType", "text/plain"),
                ]),
            ];
            assert_eq!(
                type_attribute(&items),
                Some((name.to_owned(), Writer::Other)),
                "{name}"
            );
        }
        // A name that only ends like one, or one that is a string in too few items, is none.
        let items = vec![
            item(&[("PK", "c#1"), ("paymentType", "CARD"), ("Kind", "a")]),
            item(&[("PK", "c#2"), ("paymentType", "ACH")]),
        ];
        assert_eq!(type_attribute(&items), None);
        // One value everywhere is no hand-written type attribute.
        let items = vec![
            item(&[("PK", "a"), ("__kind__", "thing")]),
            item(&[("PK", "b"), ("__kind__", "thing")]),
        ];
        assert_eq!(type_attribute(&items), None);
        // The library's attribute first, then the names in their order.
        let items = vec![
            item(&[("PK", "a"), ("Type", "x"), ("EntityType", "Order")]),
            item(&[("PK", "b"), ("Type", "y"), ("EntityType", "Invoice")]),
        ];
        assert_eq!(
            type_attribute(&items),
            Some(("EntityType".to_owned(), Writer::Other))
        );
        let items = vec![
            item(&[("PK", "a"), ("Type", "x"), ("_et", "Order")]),
            item(&[("PK", "b"), ("Type", "y"), ("_et", "Order")]),
        ];
        assert_eq!(
            type_attribute(&items),
            Some(("_et".to_owned(), Writer::Toolbox))
        );
    }

    #[test]
    fn a_type_attribute_of_any_name_is_read_from_what_it_holds() {
        let items = vec![
            item(&[
                ("PK", "c#1"),
                ("SK", "PROFILE"),
                ("rk", "Customer"),
                ("status", "OK"),
            ]),
            item(&[
                ("PK", "c#1"),
                ("SK", "o#1"),
                ("rk", "Order"),
                ("status", "OK"),
            ]),
            item(&[
                ("PK", "c#1"),
                ("SK", "o#2"),
                ("rk", "Order"),
                ("status", "LATE"),
            ]),
            item(&[
                ("PK", "c#2"),
                ("SK", "PROFILE"),
                ("rk", "Customer"),
                ("status", "LATE"),
            ]),
            item(&[
                ("PK", "c#2"),
                ("SK", "i#1"),
                ("rk", "Invoice"),
                ("status", "OK"),
            ]),
            item(&[
                ("PK", "c#2"),
                ("SK", "i#2"),
                ("rk", "Invoice"),
                ("status", "OK"),
            ]),
        ];
        let starts = groups(&items, None, ("PK", Some("SK")), '#');
        assert_eq!(starts.len(), 3);
        // `status` spans several starts with one value; the keys are never a type attribute.
        assert_eq!(
            type_attribute_by_values(&items, &starts, &["PK", "SK"]),
            Some("rk".to_owned())
        );
        let untyped: Vec<Item> = items
            .iter()
            .map(|i| {
                i.iter()
                    .filter(|(k, _)| *k != "rk")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .collect();
        let starts = groups(&untyped, None, ("PK", Some("SK")), '#');
        assert_eq!(
            type_attribute_by_values(&untyped, &starts, &["PK", "SK"]),
            None
        );
        // One start: a value of one type (a status of orders) is no type.
        let one: Vec<Item> = (0..6)
            .map(|n| {
                item(&[
                    ("PK", &format!("o#{n}")),
                    ("state", ["OPEN", "DONE"][n % 2]),
                ])
            })
            .collect();
        let starts = groups(&one, None, ("PK", None), '#');
        assert_eq!(type_attribute_by_values(&one, &starts, &["PK"]), None);
    }

    #[test]
    fn a_word_ending_keys_after_a_value_tells_kinds_apart() {
        let mut items = Vec::new();
        for user in ["12", "ann", "b#ob"] {
            for (pk, sk) in [
                (format!("u#{user}"), "info".to_owned()),
                (format!("u#{user}#follower"), "u#x".to_owned()),
                (format!("u#{user}#following"), "u#y".to_owned()),
                // A name after the same `USER` in every key is a value, not a kind.
                (format!("ORG#{user}#USER#bob"), "PROFILE".to_owned()),
            ] {
                items.push(item(&[("PK", &pk), ("SK", &sk)]));
            }
        }
        // A word that is an item's own value is no suffix either.
        items.push(item(&[("PK", "o#1#OPEN"), ("SK", "o"), ("status", "OPEN")]));
        items.push(item(&[("PK", "o#2#OPEN"), ("SK", "o"), ("status", "OPEN")]));
        let words = suffix_words(&items, "PK", ("PK", Some("SK")), '#');
        assert_eq!(
            words.into_iter().collect::<Vec<_>>(),
            ["follower", "following"]
        );
        let values: Vec<String> = groups(&items, None, ("PK", Some("SK")), '#')
            .into_iter()
            .map(|g| g.value)
            .collect();
        assert_eq!(
            values,
            [
                "u#info",
                "u#*#follower#u",
                "u#*#following#u",
                "ORG#PROFILE",
                "o#o"
            ]
        );
        // A bare time starts no kind: its items are the partition's, beside `Join:` ones.
        let chat = [
            item(&[("PK", "User:a"), ("SK", "2026-01-10T10:00:00.000Z")]),
            item(&[("PK", "User:a"), ("SK", "Join:r1")]),
        ];
        let values: Vec<String> = groups(&chat, None, ("PK", Some("SK")), ':')
            .into_iter()
            .map(|g| g.value)
            .collect();
        assert_eq!(values, ["User", "User:Join"]);
    }

    #[test]
    fn separators_and_escapes_are_read_from_the_keys() {
        assert_eq!(separator(&["AUTHOR#a", "TITLE#1"]), Some('#'));
        assert_eq!(separator(&["TEAM|a b", "TICKET|000001", "x"]), None);
        assert_eq!(
            separator(&["TEAM|a", "TICKET|1", "EVENT|2026-05-01T12:00:00Z|a"]),
            Some('|')
        );
        assert_eq!(
            separator(&["2026-05-01T12:00:00Z", "2026-05-02T12:00:00Z"]),
            None
        );
        let written = |key: &str| vec![item(&[("PK", key), ("n", "N:42")])];
        assert!(written_escaped(&written(r"A#x\#y"), &["PK"], '#'));
        assert!(written_escaped(
            &written("A#09223372036854775850"),
            &["PK"],
            '#'
        ));
        assert!(!written_escaped(&written("A#x#y"), &["PK"], '#'));
        assert!(!written_escaped(&written(r"A#x\y"), &["PK"], '#'));
    }
}
