//! Fields for the values only an entity's keys hold (no attribute of its items does): a title's
//! author in `AUTHOR#<name>`, its number in `TITLE#<10 digits>`. One field per value, shared by
//! the keys that hold the same value in every item holding both (the author in `PK` and in
//! `GSI1SK`), typed as a number where the keys pad it with zeros, and read back from the keys.

use aws_sdk_dynamodb::types::AttributeValue;

use crate::dynamo::Item;

use super::{
    names::{Taken, field_name},
    proposal::FieldProposal,
    templates::{Piece, Template, Writing},
};

/// One value only a key holds.
struct KeyOnly {
    /// The template's position among the entity's templates.
    template: usize,
    /// The text before it in the key.
    label: String,
    /// The width its numbers are padded to, if it is a number.
    width: Option<usize>,
    /// Its text in each item's key, where the key reads back.
    values: Vec<Option<String>>,
    /// Its field.
    field: String,
}

/// Adds a field to `fields` for each value only the keys of `templates` hold among `items`,
/// named after the text before it, and gives each such piece its field's name. `primary`: the
/// key attributes every item holds (the table's), whose values are never null.
pub fn key_only_fields(
    templates: &mut [(String, Template)],
    items: &[&Item],
    writing: Writing,
    entity: &str,
    primary: impl Fn(&str) -> bool,
    fields: &mut Vec<FieldProposal>,
) {
    let mut names = Taken::with(&["id", "__typename"]);
    for f in fields.iter() {
        names.claim(&f.name);
    }
    let mut found: Vec<KeyOnly> = Vec::new();
    for (t, (attribute, template)) in templates.iter().enumerate() {
        let reader = template.reader(writing.escaped);
        let facets = template
            .pieces
            .iter()
            .filter(|p| !matches!(p, Piece::Literal(_)));
        for (k, piece) in facets.enumerate() {
            let Piece::KeyOnly(label, width) = piece else {
                continue;
            };
            let values = items
                .iter()
                .map(|item| {
                    let Some(AttributeValue::S(key)) = item.get(attribute) else {
                        return None;
                    };
                    let read = reader.as_ref()?.read(key)?;
                    read.get(k).map(|(_, v)| v.clone().into_owned())
                })
                .collect();
            found.push(KeyOnly {
                template: t,
                label: label.clone(),
                width: *width,
                values,
                field: String::new(),
            });
        }
    }
    for at in 0..found.len() {
        let (earlier, rest) = found.split_at_mut(at);
        let this = &mut rest[0];
        let taken_here: Vec<&str> = earlier
            .iter()
            .filter(|e| e.template == this.template)
            .map(|e| e.field.as_str())
            .collect();
        let same = earlier.iter().find(|e| {
            let both: Vec<(&String, &String)> = e
                .values
                .iter()
                .zip(&this.values)
                .filter_map(|(a, b)| a.as_ref().zip(b.as_ref()))
                .collect();
            // The same value in every item holding both keys; with none holding both, the
            // same text before it.
            let alike = if both.is_empty() {
                e.label == this.label
            } else {
                both.iter().all(|(a, b)| a == b)
            };
            e.template != this.template
                && e.width == this.width
                && alike
                && !taken_here.contains(&e.field.as_str())
        });
        if let Some(same) = same {
            this.field = same.field.clone();
            continue;
        }
        let attribute = &templates[this.template].0;
        let wanted = field_name(&this.label.to_lowercase(), entity);
        // Times written as they sort (a chat's comments under `{postedAt}`): a time, which
        // also tells their keys from literal text no time begins with.
        let times = match this.width {
            None => super::observe::time_storage(this.values.iter().flatten().map(String::as_str)),
            Some(_) => None,
        };
        let (suffix, base, padded) = match (this.width, times) {
            (_, Some("date")) => ("", "DateTime", "; dates stored as `date`".to_owned()),
            (_, Some(form)) => ("At", "DateTime", format!("; times stored as `{form}`")),
            (Some(width), None) => {
                let digits = this.values.iter().flatten().map(String::len).max();
                let base = if digits.unwrap_or(width) <= 9 {
                    "Int"
                } else {
                    "BigInt"
                };
                (
                    "Number",
                    base,
                    format!("; numbers zero-padded to {width} digits"),
                )
            }
            (None, None) => ("Id", "ID", String::new()),
        };
        let wanted = if this.label.is_empty() && times.is_some() {
            // A bare time, with no text before it to name it.
            "at".to_owned()
        } else {
            wanted
        };
        let wanted = if wanted
            .to_ascii_lowercase()
            .ends_with(&suffix.to_ascii_lowercase())
        {
            wanted
        } else {
            format!("{wanted}{suffix}")
        };
        this.field = names.claim(&wanted);
        let bang = if primary(attribute) { "!" } else { "" };
        fields.push(FieldProposal {
            name: this.field.clone(),
            attribute: this.field.clone(),
            ty: format!("{base}{bang}"),
            stored_as: times,
            evidence: format!(
                "read from the key `{attribute}`: no attribute of the items holds it{padded}"
            ),
            review: Some("named after the text before it in the key: rename it freely".to_owned()),
            key: None,
        });
    }
    let mut fields_in_order = found.into_iter().map(|k| k.field);
    for (_, template) in templates.iter_mut() {
        for piece in &mut template.pieces {
            if let Piece::KeyOnly(label, _) = piece
                && let Some(field) = fields_in_order.next()
            {
                *label = field;
            }
        }
    }
}
