//! Single-table designs in a sample: which attribute names each item's type (and which library
//! wrote the table), the items of each type, and the template each key attribute follows in
//! them, read back from the keys and the items' own attributes as the writers build them:
//! segments joined by `#`, facet values as they are (unescaped), lowercased by ElectroDB,
//! numbers zero-padded by OneTable, ElectroDB's `label_value` segments, and values that are only
//! in the key.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::{dynamo::Item, graphql::values::plain_text};

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

/// Type attributes the libraries write, and common hand-written ones, in order of preference.
const TYPE_ATTRIBUTES: &[(&str, Writer)] = &[
    ("__edb_e__", Writer::ElectroDb),
    ("_et", Writer::Toolbox),
    ("_type", Writer::OneTable),
    ("__typename", Writer::Amplify),
    ("_TYPE", Writer::Other),
    ("entityType", Writer::Other),
    ("type", Writer::Other),
];

/// Attributes a writer keeps for itself, never fields.
pub fn bookkeeping(writer: Writer) -> &'static [&'static str] {
    match writer {
        Writer::ElectroDb => &["__edb_e__", "__edb_v__"],
        _ => &[],
    }
}

/// The table's type attribute, if one of the known names is a string in at least nine items
/// of ten.
pub fn type_attribute(items: &[Item]) -> Option<(String, Writer)> {
    if items.is_empty() {
        return None;
    }
    TYPE_ATTRIBUTES.iter().find_map(|(name, writer)| {
        let strings = items
            .iter()
            .filter(|item| matches!(item.get(*name), Some(AttributeValue::S(_))))
            .count();
        (strings * 10 >= items.len() * 9).then(|| ((*name).to_owned(), *writer))
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

/// The items of each type: by `type_attribute`'s value when there is one, else by the literal
/// text the partition and sort keys start with (up to the first `#`). In order of first sight.
pub fn groups<'i>(
    items: &'i [Item],
    type_attribute: Option<&str>,
    partition: &str,
    sort: Option<&str>,
) -> Vec<Group<'i>> {
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
                let start = |attribute: &str| match item.get(attribute) {
                    Some(AttributeValue::S(v)) => v.split('#').next().unwrap_or("").to_owned(),
                    _ => String::new(),
                };
                // The pair: an order item's keys may start as an order's sort key does.
                match sort {
                    Some(sort) if !start(sort).is_empty() => {
                        format!("{}#{}", start(partition), start(sort))
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

/// One piece of a key template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text every item's key has there.
    Literal(String),
    /// An attribute's value, zero-padded to `width` when set.
    Facet {
        /// The attribute.
        attribute: String,
        /// The padded width of a number.
        width: Option<usize>,
    },
    /// A value found only in the key (no attribute holds it); named after the text before it.
    KeyOnly(String),
}

/// A key attribute's template among one type's items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// Its pieces, in order.
    pub pieces: Vec<Piece>,
    /// The keys are written in lower case (ElectroDB).
    pub lower: bool,
    /// Items whose key this template reads back.
    pub fits: usize,
    /// Items holding the key.
    pub holding: usize,
}

impl Template {
    /// The template as a model file writes it: `CUSTOMER#{customerId}`, with facets named by
    /// `field` (from the attribute; key-only facets by their own name).
    pub fn text(&self, field: impl Fn(&Piece) -> String) -> String {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Literal(text) => text.clone(),
                Piece::Facet { width: Some(w), .. } => format!("{{{}:0{w}}}", field(p)),
                other => format!("{{{}}}", field(other)),
            })
            .collect()
    }
}

/// A key dynarelay wrote, split at its unescaped `#`, each segment unescaped (`\#` is `#`, `\\`
/// is `\`).
fn split_escaped(key: &str) -> Vec<String> {
    let mut segments = vec![String::new()];
    let mut chars = key.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(next) => segments.last_mut().map_or((), |s| s.push(next)),
                None => segments.last_mut().map_or((), |s| s.push('\\')),
            },
            '#' => segments.push(String::new()),
            c => segments.last_mut().map_or((), |s| s.push(c)),
        }
    }
    segments
}

/// The pieces of one key, its segments (split at `#`) matched against the item's attributes
/// `candidates`. Each facet lists every attribute that matches there.
fn item_pieces(
    key: &str,
    item: &Item,
    candidates: &[&str],
    lower: bool,
    escaped: bool,
) -> Vec<ItemPiece> {
    let values: Vec<(&str, String, bool)> = candidates
        .iter()
        .filter_map(|&c| {
            let value = item.get(c)?;
            let t = plain_text(value)?;
            let number = matches!(value, AttributeValue::N(_));
            (!t.is_empty()).then(|| {
                (
                    c,
                    if lower {
                        t.to_lowercase()
                    } else {
                        t.to_owned()
                    },
                    number,
                )
            })
        })
        .collect();
    let segments: Vec<String> = if escaped {
        split_escaped(key)
    } else {
        key.split('#').map(str::to_owned).collect()
    };
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < segments.len() {
        if i > 0 {
            pieces.push(ItemPiece::Literal("#".to_owned()));
        }
        let segment = segments[i].as_str();
        // A value holding `#` itself spans several segments (nobody escapes it).
        let rest = segments[i..].join("#");
        if let Some((attribute, value, _)) = values
            .iter()
            .filter(|(_, v, _)| v.contains('#'))
            .find(|(_, v, _)| rest == *v || rest.starts_with(&format!("{v}#")))
        {
            pieces.push(ItemPiece::Facet(vec![((*attribute).to_owned(), None)]));
            i += value.split('#').count();
            continue;
        }
        let exact: Vec<(String, Option<usize>)> = values
            .iter()
            .filter(|(_, v, _)| v == segment)
            .flat_map(|(a, _, number)| {
                // A number written at full width also fits a padding to that width.
                let padded = number.then_some(((*a).to_owned(), Some(segment.len())));
                std::iter::once(((*a).to_owned(), None)).chain(padded)
            })
            .collect();
        if !exact.is_empty() {
            pieces.push(ItemPiece::Facet(exact));
            i += 1;
            continue;
        }
        // OneTable's `${seq:8}`: digits padded with zeros.
        if segment.len() > 1
            && segment.starts_with('0')
            && segment.bytes().all(|b| b.is_ascii_digit())
        {
            let trimmed = segment.trim_start_matches('0');
            let trimmed = if trimmed.is_empty() { "0" } else { trimmed };
            let padded: Vec<(String, Option<usize>)> = values
                .iter()
                .filter(|(_, v, number)| *number && v == trimmed)
                .map(|(a, _, _)| ((*a).to_owned(), Some(segment.len())))
                .collect();
            if !padded.is_empty() {
                pieces.push(ItemPiece::Facet(padded));
                i += 1;
                continue;
            }
        }
        // ElectroDB's `label_value` (not its `$entity_version` segment).
        if let Some(cut) = segment.find('_').filter(|_| !segment.starts_with('$')) {
            let (label, value) = segment.split_at(cut + 1);
            let labelled: Vec<(String, Option<usize>)> = values
                .iter()
                .filter(|(_, v, _)| v == value)
                .map(|(a, _, _)| ((*a).to_owned(), None))
                .collect();
            if !labelled.is_empty() && !value.is_empty() {
                pieces.push(ItemPiece::Literal(label.to_owned()));
                pieces.push(ItemPiece::Facet(labelled));
                i += 1;
                continue;
            }
        }
        pieces.push(ItemPiece::Literal(segment.to_owned()));
        i += 1;
    }
    pieces
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ItemPiece {
    Literal(String),
    /// The attributes whose value is there, each with the padded width it is written at.
    Facet(Vec<(String, Option<usize>)>),
}

/// The template `attribute` follows in `items`, if their keys agree on one: the pieces most
/// items' keys break into, literal text where all have the same, an attribute where every item's
/// value is there, and a key-only value where the text differs and no attribute holds it.
/// Keys written in lower case are matched against lowercased values.
pub fn template(
    attribute: &str,
    items: &[&Item],
    candidates: &[&str],
    escaped: bool,
) -> Option<Template> {
    let keys: Vec<(&Item, &str)> = items
        .iter()
        .filter_map(|item| match item.get(attribute) {
            Some(AttributeValue::S(k)) => Some((*item, k.as_str())),
            _ => None,
        })
        .collect();
    if keys.is_empty() {
        return None;
    }
    let lowercase_keys = keys.iter().all(|(_, k)| !k.chars().any(char::is_uppercase));
    let exact = merge(&keys, candidates, false, escaped);
    if !lowercase_keys {
        return exact;
    }
    let lower = merge(&keys, candidates, true, escaped);
    let facets = |t: &Option<Template>| {
        t.as_ref().map_or(0, |t| {
            t.pieces
                .iter()
                .filter(|p| matches!(p, Piece::Facet { .. }))
                .count()
        })
    };
    // Lower case only when it reads more values back than the keys as they are.
    if facets(&lower) > facets(&exact) {
        lower
    } else {
        exact
    }
}

fn merge(
    keys: &[(&Item, &str)],
    candidates: &[&str],
    lower: bool,
    escaped: bool,
) -> Option<Template> {
    let per_item: Vec<Vec<ItemPiece>> = keys
        .iter()
        .map(|(item, key)| item_pieces(key, item, candidates, lower, escaped))
        .collect();
    // The shape most keys have: how many pieces.
    let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
    for pieces in &per_item {
        *counts.entry(pieces.len()).or_default() += 1;
    }
    let (&len, _) = counts
        .iter()
        .max_by_key(|(len, n)| (**n, std::cmp::Reverse(**len)))?;
    let shaped: Vec<&Vec<ItemPiece>> = per_item.iter().filter(|p| p.len() == len).collect();
    let mut pieces = Vec::new();
    for position in 0..len {
        let at: Vec<&ItemPiece> = shaped.iter().map(|p| &p[position]).collect();
        let literals: Vec<&str> = at
            .iter()
            .filter_map(|p| match p {
                ItemPiece::Literal(t) => Some(t.as_str()),
                ItemPiece::Facet(..) => None,
            })
            .collect();
        if literals.len() == at.len() && literals.iter().all(|t| *t == literals[0]) {
            pieces.push(Piece::Literal(literals[0].to_owned()));
            continue;
        }
        // The attribute (and padding) matching there in most keys, if in nine of ten: the
        // rest are keys some other code wrote, or values the writer escaped.
        let mut counts: Vec<(&(String, Option<usize>), usize)> = Vec::new();
        for p in &at {
            if let ItemPiece::Facet(candidates) = p {
                for c in candidates {
                    match counts.iter_mut().find(|(k, _)| *k == c) {
                        Some((_, n)) => *n += 1,
                        None => counts.push((c, 1)),
                    }
                }
            }
        }
        // Most matches first; on a tie, no padding before padding, then by name.
        counts.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(a.0.1.cmp(&b.0.1))
                .then(a.0.0.cmp(&b.0.0))
        });
        match counts.first() {
            Some(((attribute, width), n)) if n * 10 >= at.len() * 9 => {
                pieces.push(Piece::Facet {
                    attribute: attribute.clone(),
                    width: *width,
                });
            }
            _ => {
                let label = pieces
                    .iter()
                    .rev()
                    .find_map(|p| match p {
                        Piece::Literal(t) if t != "#" => {
                            Some(t.trim_matches(|c: char| !c.is_alphanumeric()).to_owned())
                        }
                        _ => None,
                    })
                    .filter(|t| !t.is_empty())
                    .unwrap_or_else(|| "key".to_owned());
                pieces.push(Piece::KeyOnly(label));
            }
        }
    }
    // Adjacent literals (`label_` after `#`) as one.
    let mut joined: Vec<Piece> = Vec::new();
    for piece in pieces {
        match (joined.last_mut(), piece) {
            (Some(Piece::Literal(a)), Piece::Literal(b)) => a.push_str(&b),
            (_, piece) => joined.push(piece),
        }
    }
    // Two facets side by side cannot be told apart when read back.
    if joined
        .windows(2)
        .any(|w| !matches!(w[0], Piece::Literal(_)) && !matches!(w[1], Piece::Literal(_)))
    {
        return None;
    }
    let fits = per_item.iter().filter(|p| p.len() == len).count();
    Some(Template {
        pieces: joined,
        lower,
        fits,
        holding: keys.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(pairs: &[(&str, &str)]) -> Item {
        pairs
            .iter()
            .map(|(k, v)| {
                let value = match v.strip_prefix("N:") {
                    Some(n) => AttributeValue::N(n.to_owned()),
                    None => AttributeValue::S((*v).to_owned()),
                };
                ((*k).to_owned(), value)
            })
            .collect()
    }

    fn text_of(t: &Template) -> String {
        t.text(|p| match p {
            Piece::Facet { attribute, .. } => attribute.clone(),
            Piece::KeyOnly(label) => format!("?{label}"),
            Piece::Literal(_) => unreachable!(),
        })
    }

    #[test]
    fn templates_are_read_from_the_keys_other_tools_write() {
        let cases: &[(&str, Vec<Item>, &str)] = &[
            (
                "SK",
                vec![
                    item(&[
                        ("SK", "ORDER#2026-05-01T12:00:00.000Z#o-1"),
                        ("placedAt", "2026-05-01T12:00:00.000Z"),
                        ("orderId", "o-1"),
                    ]),
                    item(&[
                        ("SK", "ORDER#2026-05-02T12:00:00.000Z#o-2"),
                        ("placedAt", "2026-05-02T12:00:00.000Z"),
                        ("orderId", "o-2"),
                    ]),
                ],
                "ORDER#{placedAt}#{orderId}",
            ),
            (
                "sk",
                vec![
                    item(&[("sk", "issue#00000042"), ("seq", "N:42")]),
                    item(&[("sk", "issue#00000007"), ("seq", "N:7")]),
                ],
                "issue#{seq:08}",
            ),
            (
                "pk",
                vec![
                    item(&[("pk", "$lending#memberid_m-001"), ("memberId", "M-001")]),
                    item(&[("pk", "$lending#memberid_m-002"), ("memberId", "m-002")]),
                ],
                "$lending#memberid_{memberId}",
            ),
            (
                "PK",
                vec![
                    item(&[
                        ("PK", "CUSTOMER#a#b@example.com"),
                        ("email", "a#b@example.com"),
                    ]),
                    item(&[("PK", "CUSTOMER#c@example.com"), ("email", "c@example.com")]),
                ],
                "CUSTOMER#{email}",
            ),
            (
                "PK",
                vec![item(&[("PK", "EVENT#e-1")]), item(&[("PK", "EVENT#e-2")])],
                "EVENT#{?EVENT}",
            ),
            (
                "SK",
                vec![
                    item(&[("SK", "#PROFILE"), ("x", "1")]),
                    item(&[("SK", "#PROFILE")]),
                ],
                "#PROFILE",
            ),
        ];
        for (attribute, items, want) in cases {
            let refs: Vec<&Item> = items.iter().collect();
            let candidates: Vec<&str> =
                ["placedAt", "orderId", "seq", "memberId", "email", "x"].to_vec();
            let t = template(attribute, &refs, &candidates, false).unwrap();
            assert_eq!(text_of(&t), *want, "{items:?}");
            assert_eq!((t.fits, t.holding), (items.len(), items.len()));
        }
        let refs: Vec<Item> = vec![item(&[("sk", "issue#00000042"), ("seq", "N:42")])];
        let t = template("sk", &refs.iter().collect::<Vec<_>>(), &["seq"], false).unwrap();
        assert_eq!(
            t.pieces[1],
            Piece::Facet {
                attribute: "seq".to_owned(),
                width: Some(8)
            }
        );
        let lower = template(
            "pk",
            &[&item(&[("pk", "$x#id_abc"), ("id", "ABC")])],
            &["id"],
            false,
        )
        .unwrap();
        assert!(lower.lower);
    }

    #[test]
    fn keys_dynarelay_escaped_are_split_at_their_unescaped_separators() {
        assert_eq!(split_escaped(r"CUSTOMER#ana\#b"), ["CUSTOMER", "ana#b"]);
        assert_eq!(split_escaped(r"A#x\\#y"), ["A", r"x\", "y"]);
        assert_eq!(split_escaped(r"A#end\"), ["A", r"end\"]);
        let items = [
            item(&[("PK", r"CUSTOMER#ana\#b"), ("username", "ana#b")]),
            item(&[("PK", "CUSTOMER#zoe"), ("username", "zoe")]),
        ];
        let refs: Vec<&Item> = items.iter().collect();
        let t = template("PK", &refs, &["username"], true).unwrap();
        assert_eq!(text_of(&t), "CUSTOMER#{username}");
    }

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
        let typed = groups(&items, Some("_type"), "pk", None);
        assert_eq!(typed.len(), 1);
        assert_eq!(typed[0].value, "Issue");
        let by_prefix = vec![
            item(&[("PK", "CUSTOMER#u"), ("SK", "ORDER#1")]),
            item(&[("PK", "CUSTOMER#u"), ("SK", "ADDRESS#home")]),
            item(&[("PK", "CUSTOMER#v"), ("SK", "ORDER#2")]),
        ];
        let prefixed = groups(&by_prefix, None, "PK", Some("SK"));
        let values: Vec<&str> = prefixed.iter().map(|g| g.value.as_str()).collect();
        assert_eq!(values, ["CUSTOMER#ORDER", "CUSTOMER#ADDRESS"]);
    }
}
