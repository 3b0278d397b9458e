//! The template a key attribute follows among one type's items, read back from the keys and the
//! items' own attributes as the writers build them: segments joined by a separator (`#`, `|`,
//! ...), facet values as they are (or escaped, as dynarelay writes them), lowercased by
//! ElectroDB, numbers zero-padded by OneTable and hand-rolled code, ElectroDB's `label_value`
//! segments, and values that are only in the key.
//!
//! The rule: a template's literal text is what every sampled key shares, and a value seen in
//! the sample is never literal text. Where the keys' values vary, the template has a facet,
//! however few keys hold the other values: the keys of one author holding most of the titles
//! make `AUTHOR#{author}`, not that author's name. Keys dynarelay escaped are the exception, as
//! no value can add a segment to them: there a key of another shape than most (`ORDER#bad`
//! among `ORDER#{placedAt}#{orderId}`) is another writer's, and is left to no template.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_dynamodb::types::AttributeValue;

use crate::{dynamo::Item, graphql::values::plain_text, model::template::KeyTemplate};

/// How a table's keys are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writing {
    /// The character between the keys' segments.
    pub separator: char,
    /// Whether facet values are escaped (`\#`), as dynarelay writes them.
    pub escaped: bool,
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
    /// A value found only in the key (no attribute holds it), named after the text before it;
    /// a number zero-padded to the width when one is given.
    KeyOnly(String, Option<usize>),
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
    pub fn text(&self, mut field: impl FnMut(&Piece) -> String) -> String {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Literal(text) => text.clone(),
                Piece::Facet { width: Some(w), .. } | Piece::KeyOnly(_, Some(w)) => {
                    format!("{{{}:0{w}}}", field(p))
                }
                other => format!("{{{}}}", field(other)),
            })
            .collect()
    }

    /// The template as the server reads it, its facets named `f0`, `f1`, ... in order: what
    /// tells whether a key is one of its own, and the values a key holds.
    pub fn reader(&self, escaped: bool) -> Option<KeyTemplate> {
        let mut at = 0;
        let text = self.text(|_| {
            at += 1;
            format!("f{}", at - 1)
        });
        if escaped {
            KeyTemplate::parse(&text).ok()
        } else {
            KeyTemplate::parse_unescaped(&text).ok()
        }
    }
}

/// The template `attribute` follows in `items`, if their keys agree on one (`decides`: it is a
/// key of the table, which decides which type an item is, and so is held to how the server
/// reads it, [`read_as_written`]): literal text where
/// all keys have the same text, an attribute where (nearly) every item's value is there, and a
/// key-only value where the text differs and no attribute holds it. Values in `seen` (other
/// items' attributes: an author's name in their titles' keys, also lowercased) are never literal
/// text. Keys written in lower case are matched against lowercased values.
pub fn template(
    (attribute, decides): (&str, bool),
    items: &[&Item],
    candidates: &[&str],
    seen: &BTreeSet<String>,
    writing: Writing,
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
    // Keys that are times and nothing else (a chat's comments under `{postedAt}`): one value,
    // whatever separator its text holds (a time's `:` and `-`).
    if super::observe::time_storage(keys.iter().map(|(_, k)| *k)).is_some() {
        let holder = candidates.iter().find(|a| {
            keys.iter()
                .all(|(item, k)| matches!(item.get(**a), Some(AttributeValue::S(v)) if v == k))
        });
        let piece = match holder {
            Some(attribute) => Piece::Facet {
                attribute: (*attribute).to_owned(),
                width: None,
            },
            None => Piece::KeyOnly(String::new(), None),
        };
        return Some(Template {
            pieces: vec![piece],
            lower: false,
            fits: keys.len(),
            holding: keys.len(),
        });
    }
    let lowercase_keys = keys.iter().all(|(_, k)| !k.chars().any(char::is_uppercase));
    let exact = merge(&keys, candidates, seen, (false, decides), writing);
    if !lowercase_keys {
        return exact;
    }
    let lower = merge(&keys, candidates, seen, (true, decides), writing);
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

/// A key dynarelay wrote, split at its unescaped separators, each segment unescaped (`\#` is
/// `#`, `\\` is `\`).
fn split_escaped(key: &str, separator: char) -> Vec<String> {
    let mut segments = vec![String::new()];
    let mut chars = key.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(next) => segments.last_mut().map_or((), |s| s.push(next)),
                None => segments.last_mut().map_or((), |s| s.push('\\')),
            },
            c if c == separator => segments.push(String::new()),
            c => segments.last_mut().map_or((), |s| s.push(c)),
        }
    }
    segments
}

/// One attribute's value as a key may hold it.
struct Value<'a> {
    attribute: &'a str,
    text: String,
    number: bool,
}

/// The non-empty values of an item's `candidates`, lowercased for lowercased keys.
fn values_of<'a>(item: &Item, candidates: &[&'a str], lower: bool) -> Vec<Value<'a>> {
    candidates
        .iter()
        .filter_map(|&attribute| {
            let value = item.get(attribute)?;
            let text = plain_text(value)?;
            (!text.is_empty()).then(|| Value {
                attribute,
                text: if lower {
                    text.to_lowercase()
                } else {
                    text.to_owned()
                },
                number: matches!(value, AttributeValue::N(_)),
            })
        })
        .collect()
}

/// The attributes (with the width a number is padded to there) whose value is `text`.
fn holders(text: &str, values: &[Value]) -> Vec<(String, Option<usize>)> {
    let mut out: Vec<(String, Option<usize>)> = Vec::new();
    for v in values.iter().filter(|v| v.text == text) {
        out.push((v.attribute.to_owned(), None));
        // A number written at full width also fits a padding to that width.
        if v.number {
            out.push((v.attribute.to_owned(), Some(text.len())));
        }
    }
    // OneTable's `${seq:8}`: digits padded with zeros.
    if text.len() > 1 && text.starts_with('0') && text.bytes().all(|b| b.is_ascii_digit()) {
        let trimmed = text.trim_start_matches('0');
        let trimmed = if trimmed.is_empty() { "0" } else { trimmed };
        out.extend(
            values
                .iter()
                .filter(|v| v.number && v.text == trimmed)
                .map(|v| (v.attribute.to_owned(), Some(text.len()))),
        );
    }
    out
}

/// A piece of one item's key: its text, and the attributes whose value it is (none for
/// literal text).
#[derive(Debug, Clone, PartialEq, Eq)]
struct ItemPiece {
    text: String,
    holders: Vec<(String, Option<usize>)>,
}

impl ItemPiece {
    fn literal(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            holders: Vec::new(),
        }
    }
}

/// The pieces of one key, its segments matched against the item's `values`.
fn item_pieces(key: &str, values: &[Value], writing: Writing) -> Vec<ItemPiece> {
    let sep = writing.separator;
    let segments: Vec<String> = if writing.escaped {
        split_escaped(key, sep)
    } else {
        key.split(sep).map(str::to_owned).collect()
    };
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < segments.len() {
        if i > 0 {
            pieces.push(ItemPiece::literal(&sep.to_string()));
        }
        let segment = segments[i].as_str();
        // A value holding the separator itself spans several segments when nobody escaped it,
        // after ElectroDB's label (`memberid_a#b`) or not.
        let rest = segments[i..].join(&sep.to_string());
        let spanned = |from: &str| {
            values.iter().filter(|v| v.text.contains(sep)).find(|v| {
                from == v.text
                    || from
                        .strip_prefix(v.text.as_str())
                        .is_some_and(|r| r.starts_with(sep))
            })
        };
        let label = segment
            .find('_')
            .filter(|_| !segment.starts_with('$'))
            .map_or("", |cut| &segment[..=cut]);
        let found = match spanned(&rest) {
            Some(v) => Some(("", v)),
            None if !label.is_empty() => spanned(&rest[label.len()..]).map(|v| (label, v)),
            None => None,
        };
        if let Some((label, v)) = found.filter(|_| !writing.escaped) {
            if !label.is_empty() {
                pieces.push(ItemPiece::literal(label));
            }
            pieces.push(ItemPiece {
                text: v.text.clone(),
                holders: vec![(v.attribute.to_owned(), None)],
            });
            i += v.text.split(sep).count();
            continue;
        }
        let found = holders(segment, values);
        if !found.is_empty() {
            pieces.push(ItemPiece {
                text: segment.to_owned(),
                holders: found,
            });
            i += 1;
            continue;
        }
        // ElectroDB's `label_value` (not its `$entity_version` segment).
        if let Some(cut) = segment.find('_').filter(|_| !segment.starts_with('$')) {
            let (label, value) = segment.split_at(cut + 1);
            let labelled: Vec<(String, Option<usize>)> = values
                .iter()
                .filter(|v| v.text == value)
                .map(|v| (v.attribute.to_owned(), None))
                .collect();
            if !labelled.is_empty() && !value.is_empty() {
                pieces.push(ItemPiece::literal(label));
                pieces.push(ItemPiece {
                    text: value.to_owned(),
                    holders: labelled,
                });
                i += 1;
                continue;
            }
        }
        pieces.push(ItemPiece::literal(segment));
        i += 1;
    }
    pieces
}

fn merge(
    keys: &[(&Item, &str)],
    candidates: &[&str],
    seen: &BTreeSet<String>,
    (lower, decides): (bool, bool),
    writing: Writing,
) -> Option<Template> {
    let values: Vec<Vec<Value>> = keys
        .iter()
        .map(|(item, _)| values_of(item, candidates, lower))
        .collect();
    let per_item: Vec<Vec<ItemPiece>> = keys
        .iter()
        .zip(&values)
        .map(|((_, key), values)| item_pieces(key, values, writing))
        .collect();
    let same_shape = per_item.iter().all(|p| p.len() == per_item[0].len());
    let pieces = if writing.escaped {
        // The shape most keys have: no value adds a segment to an escaped key.
        let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
        for pieces in &per_item {
            *counts.entry(pieces.len()).or_default() += 1;
        }
        let (&len, _) = counts
            .iter()
            .max_by_key(|(len, n)| (**n, std::cmp::Reverse(**len)))?;
        let rows: Vec<&[ItemPiece]> = per_item
            .iter()
            .filter(|p| p.len() == len)
            .map(Vec::as_slice)
            .collect();
        aligned(&rows, writing.separator)
    } else if same_shape {
        let rows: Vec<&[ItemPiece]> = per_item.iter().map(Vec::as_slice).collect();
        aligned(&rows, writing.separator)
    } else {
        spanning(&per_item, &values, writing.separator)?
    };
    let mut joined: Vec<Piece> = Vec::new();
    for mut piece in pieces {
        // dynarelay writes integers as 20 sortable digits of its own, not zero-padded.
        if let Piece::KeyOnly(_, width) = &mut piece
            && writing.escaped
        {
            *width = None;
        }
        match (joined.last_mut(), piece) {
            (Some(Piece::Literal(a)), Piece::Literal(b)) => a.push_str(&b),
            (_, piece) => joined.push(piece),
        }
    }
    let joined = unseen(joined, seen, writing.separator);
    // Two facets side by side cannot be told apart when read back.
    if joined
        .windows(2)
        .any(|w| !matches!(w[0], Piece::Literal(_)) && !matches!(w[1], Piece::Literal(_)))
    {
        return None;
    }
    let mut template = Template {
        pieces: joined,
        lower,
        fits: 0,
        holding: keys.len(),
    };
    if decides && !writing.escaped {
        read_as_written(&mut template, keys, &values, writing.separator)?;
    }
    let reader = template.reader(writing.escaped)?;
    template.fits = keys.iter().filter(|(_, k)| reader.matches(k)).count();
    Some(template)
}

/// Holds an unescaped template to how the server reads its keys (a facet ends where the text
/// after it first occurs): where a facet reads another text than the item's own value in some
/// key, it becomes a value only the keys hold; where it reads the value cut short (a time's `:`
/// in a key joined by `:`), so do it and everything after it, as one value taking the rest of
/// the key. Each facet then reads back as its field's type takes it, in every key.
fn read_as_written(
    template: &mut Template,
    keys: &[(&Item, &str)],
    values: &[Vec<Value>],
    separator: char,
) -> Option<()> {
    loop {
        let reader = template.reader(false)?;
        let facets: Vec<usize> = (0..template.pieces.len())
            .filter(|&at| !matches!(template.pieces[at], Piece::Literal(_)))
            .collect();
        // The first facet misread in some key, and whether it was cut short there.
        let mut misread: Option<(usize, bool)> = None;
        for ((_, key), values) in keys.iter().zip(values) {
            let Some(read) = reader.read(key) else {
                continue;
            };
            for (ordinal, &at) in facets.iter().enumerate() {
                let text = read.get(ordinal).map_or("", |(_, t)| t.as_ref());
                let expected = match &template.pieces[at] {
                    Piece::Facet { attribute, width } => values
                        .iter()
                        .find(|v| v.attribute == attribute)
                        .map(|v| (v.text.as_str(), *width)),
                    Piece::KeyOnly(_, Some(width)) => {
                        (!padded_to(text, *width)).then_some(("", Some(*width)))
                    }
                    _ => None,
                };
                let fits = match (&template.pieces[at], expected) {
                    (Piece::Facet { .. }, Some((value, None))) => text == value,
                    (Piece::Facet { .. }, Some((value, Some(w)))) => {
                        let trimmed = text.trim_start_matches('0');
                        let trimmed = if trimmed.is_empty() { "0" } else { trimmed };
                        padded_to(text, w) && trimmed == value
                    }
                    (Piece::Facet { .. }, None) => false,
                    (_, expected) => expected.is_none(),
                };
                if !fits {
                    let short = expected.is_some_and(|(value, _)| {
                        value.len() > text.len() && value.starts_with(text)
                    });
                    if misread.is_none_or(|(first, _)| at < first) {
                        misread = Some((at, short));
                    } else if misread == Some((at, false)) && short {
                        misread = Some((at, true));
                    }
                    break;
                }
            }
        }
        let Some((at, short)) = misread else {
            return Some(());
        };
        let name = label(&template.pieces[..at], separator);
        if short {
            template.pieces.truncate(at);
        } else {
            template.pieces.remove(at);
        }
        template.pieces.insert(at, Piece::KeyOnly(name, None));
    }
}

/// The pieces of keys of one shape, position by position: literal text where every key has the
/// same, the attribute (and padding) found there in nine keys of ten (the rest are keys some
/// other code wrote, or values the writer escaped), else a value only the keys hold.
fn aligned(rows: &[&[ItemPiece]], separator: char) -> Vec<Piece> {
    let mut pieces: Vec<Piece> = Vec::new();
    let len = rows.first().map_or(0, |r| r.len());
    for position in 0..len {
        let at: Vec<&ItemPiece> = rows.iter().map(|r| &r[position]).collect();
        let piece = if at
            .iter()
            .all(|p| p.holders.is_empty() && p.text == at[0].text)
        {
            Piece::Literal(at[0].text.clone())
        } else {
            let texts: Vec<&str> = at.iter().map(|p| p.text.as_str()).collect();
            let holders: Vec<&[(String, Option<usize>)]> =
                at.iter().map(|p| p.holders.as_slice()).collect();
            facet(&holders, &texts, &pieces, separator)
        };
        pieces.push(piece);
    }
    pieces
}

/// The facet where keys' texts `texts` differ: the attribute (and padding) among `holders` in
/// nine of ten keys, else a value only the keys hold, named after the literal text before it
/// among `before`, as a padded number when every text is one.
fn facet(
    holders: &[&[(String, Option<usize>)]],
    texts: &[&str],
    before: &[Piece],
    separator: char,
) -> Piece {
    let mut counts: Vec<(&(String, Option<usize>), usize)> = Vec::new();
    for found in holders {
        for c in *found {
            match counts.iter_mut().find(|(k, _)| *k == c) {
                Some((_, n)) => *n += 1,
                None => counts.push((c, 1)),
            }
        }
    }
    // Most matches first; on a tie, no padding before padding, then by name.
    counts.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then(a.0.1.cmp(&b.0.1))
            .then(a.0.0.cmp(&b.0.0))
    });
    if let Some(((attribute, width), n)) = counts.first()
        && n * 10 >= texts.len() * 9
    {
        return Piece::Facet {
            attribute: attribute.clone(),
            width: *width,
        };
    }
    Piece::KeyOnly(label(before, separator), padding(texts))
}

/// A key-only value's name: the literal text before it, without the separator.
fn label(before: &[Piece], separator: char) -> String {
    before
        .iter()
        .rev()
        .find_map(|p| match p {
            Piece::Literal(t) => t
                .split(separator)
                .rev()
                .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
                .find(|w| !w.is_empty()),
            _ => None,
        })
        .map_or_else(|| "key".to_owned(), str::to_owned)
}

/// The width numbers are zero-padded to, when every text is one: digits only, at least one
/// with a leading zero, those of that width, and any wider one without one.
fn padding(texts: &[&str]) -> Option<usize> {
    let width = texts
        .iter()
        .find(|t| t.len() > 1 && t.starts_with('0'))?
        .len();
    texts.iter().all(|t| padded_to(t, width)).then_some(width)
}

/// Whether `text` is a number as a key padding to `width` writes it: digits, that many, or more
/// without a leading zero (a wider number is written as it is).
fn padded_to(text: &str, width: usize) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text.len() == width || (text.len() > width && !text.starts_with('0')))
}

/// Whether pieces of several keys agree at one position: the same literal text, or a facet of
/// an attribute every one of them holds there. `None` where they differ.
fn agreed(at: &[&ItemPiece]) -> Option<Piece> {
    if at
        .iter()
        .all(|p| p.holders.is_empty() && p.text == at[0].text)
    {
        return Some(Piece::Literal(at[0].text.clone()));
    }
    let mut shared: Vec<&(String, Option<usize>)> = at.first()?.holders.iter().collect();
    shared.retain(|h| at.iter().all(|p| p.holders.contains(h)));
    shared.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    shared.first().map(|(attribute, width)| Piece::Facet {
        attribute: attribute.clone(),
        width: *width,
    })
}

/// The template of unescaped keys of several shapes (a value holding the separator adds
/// segments): the pieces every key agrees on from its start and from its end, each run ending
/// in literal text, and one facet for what lies between them, which differs.
fn spanning(
    per_item: &[Vec<ItemPiece>],
    values: &[Vec<Value>],
    separator: char,
) -> Option<Vec<Piece>> {
    let shortest = per_item.iter().map(Vec::len).min()?;
    let run = |from_end: bool| -> Vec<Piece> {
        let mut run = Vec::new();
        for i in 0..shortest {
            let at: Vec<&ItemPiece> = per_item
                .iter()
                .map(|p| if from_end { &p[p.len() - 1 - i] } else { &p[i] })
                .collect();
            match agreed(&at) {
                Some(piece) => run.push(piece),
                None => break,
            }
        }
        run
    };
    let mut head = run(false);
    let mut tail = run(true);
    loop {
        // Each run ends in literal text, and leaves a value between them in every key.
        while head.last().is_some_and(|p| !matches!(p, Piece::Literal(_))) {
            head.pop();
        }
        while tail.last().is_some_and(|p| !matches!(p, Piece::Literal(_))) {
            tail.pop();
        }
        if head.len() + tail.len() < shortest {
            break;
        }
        if tail.pop().is_none() {
            head.pop();
        }
    }
    let middles: Vec<String> = per_item
        .iter()
        .map(|p| {
            p[head.len()..p.len() - tail.len()]
                .iter()
                .map(|piece| piece.text.as_str())
                .collect()
        })
        .collect();
    let texts: Vec<&str> = middles.iter().map(String::as_str).collect();
    let holders: Vec<Vec<(String, Option<usize>)>> = middles
        .iter()
        .zip(values)
        .map(|(text, values)| holders(text, values))
        .collect();
    let holders: Vec<&[(String, Option<usize>)]> = holders.iter().map(Vec::as_slice).collect();
    let middle = facet(&holders, &texts, &head, separator);
    let mut pieces = head;
    pieces.push(middle);
    pieces.extend(tail.into_iter().rev());
    Some(pieces)
}

/// `pieces` with every value of `seen` inside their literal text made a key-only facet: a value
/// between separators (or ending the key), never the text the template starts with. Only the
/// sampled keys of one value (a single author's titles) would make it literal.
fn unseen(pieces: Vec<Piece>, seen: &BTreeSet<String>, separator: char) -> Vec<Piece> {
    let count = pieces.len();
    let mut out: Vec<Piece> = Vec::new();
    for (i, piece) in pieces.into_iter().enumerate() {
        let Piece::Literal(mut text) = piece else {
            out.push(piece);
            continue;
        };
        let last = i + 1 == count;
        loop {
            // Where a segment starts, and where a value there could end: at a separator, or
            // at the end of the key.
            let cuts: Vec<usize> = text
                .char_indices()
                .filter(|(_, c)| *c == separator)
                .map(|(at, _)| at)
                .collect();
            let ends: Vec<usize> = cuts
                .iter()
                .copied()
                .chain(last.then_some(text.len()))
                .collect();
            let found = cuts.iter().find_map(|&at| {
                // The template's first segment names the type.
                let lead = out.is_empty() && text[..at].chars().all(|c| c == separator);
                let from = at + separator.len_utf8();
                let end = ends
                    .iter()
                    .rev()
                    .find(|&&end| end > from + 1 && seen.contains(&text[from..end]))?;
                (!lead).then_some((from, *end))
            });
            let Some((from, end)) = found else { break };
            let rest = text.split_off(end);
            text.truncate(from);
            let before = Piece::Literal(text);
            let name = label(std::slice::from_ref(&before), separator);
            out.push(before);
            out.push(Piece::KeyOnly(name, None));
            text = rest;
        }
        if !text.is_empty() {
            out.push(Piece::Literal(text));
        }
    }
    out
}

#[cfg(test)]
mod tests;
