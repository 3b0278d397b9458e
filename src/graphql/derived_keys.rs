//! The attributes a write derives from an item's fields rather than taking from the input:
//! every key the entity builds from a template (in the template's case and number format), the
//! table's type attribute and the entity's constants; and which index keys an update rewrites
//! or removes (a sparse index's keys leave with its nullable facet).

use std::borrow::Cow;

use aws_sdk_dynamodb::types::AttributeValue;

use super::{
    error::{ApiError, ApiResult},
    values,
};
use crate::{
    cursor::{Key, KeyValue, MAX_KEY_VALUE_BYTES},
    dynamo::Item,
    model::{Entity, EntityId, FieldId, Model, TemplateKey},
};

/// The most bytes DynamoDB allows in a string or binary sort key value (partition keys:
/// [`MAX_KEY_VALUE_BYTES`]).
const MAX_SORT_KEY_BYTES: usize = 1024;

/// `fields` as a message names them: "`a`", "`a` and `b`".
pub(super) fn field_list(e: &Entity, fields: &[FieldId]) -> String {
    let names: Vec<String> = fields
        .iter()
        .map(|&f| format!("`{}`", e.fields[f].name))
        .collect();
    names.join(" and ")
}

/// The attributes and values every item of `entity` holds (see
/// [`Entity::required_values`]): what `create` writes and what updates and deletes expect, so
/// that they touch only the entity's items (not another version's, for ElectroDB).
pub(super) fn required_values(model: &Model, entity: EntityId) -> Vec<(String, AttributeValue)> {
    model.entities[entity]
        .required_values(model.table_of(entity))
        .map(|(attribute, value)| (attribute.to_owned(), AttributeValue::S(value.to_owned())))
        .collect()
}

/// Writes into a new item of `entity` what the entity derives from its fields: every key it
/// builds from a template (the primary key through [`values::primary_key`], index keys through
/// [`values::render`]) and the required values (the table's type attribute, the constants). The
/// facets stay attributes of their own.
pub(super) fn write_derived(model: &Model, entity: EntityId, item: &mut Item) -> ApiResult<()> {
    let e = &model.entities[entity];
    if !e.templates.is_empty() {
        let value = |f: FieldId| item.get(&e.fields[f].attribute).cloned();
        let Some(key) = values::primary_key(model, entity, value) else {
            // Facets are non-null fields, which a create always has.
            tracing::error!(entity = e.name, "a created item has no primary key");
            return Err(ApiError::Internal);
        };
        let mut keys = Vec::with_capacity(e.templates.len());
        for template in &e.templates {
            // An index key with a nullable facet the input left null is not written: the item
            // is then not in that (sparse) index.
            if !template.primary
                && index_partners(model, entity, template)
                    .any(|t| sparse_without(e, t, |f| value(f).is_some()))
            {
                continue;
            }
            let rendered = match (template.primary, key.get(template.attribute)) {
                (true, Some(KeyValue::S(rendered))) => Some(rendered.clone()),
                (true, _) => None,
                (false, _) => values::render(template, &e.fields, value),
            }
            .ok_or(ApiError::Internal)?;
            check_key_length(model, entity, template, &rendered)?;
            keys.push((template.attribute, rendered));
        }
        item.extend(key.to_attribute_map());
        for (attribute, rendered) in keys {
            item.insert(attribute.to_owned(), AttributeValue::S(rendered));
        }
    }
    item.extend(required_values(model, entity));
    Ok(())
}

/// The index key templates of `entity` that share an index with `template` (itself included):
/// an index's keys are written, rewritten and removed together.
fn index_partners<'m>(
    model: &'m Model,
    entity: EntityId,
    template: &'m TemplateKey,
) -> impl Iterator<Item = &'m TemplateKey> {
    let e = &model.entities[entity];
    let indexes = &model.table_of(entity).indexes;
    e.templates.iter().filter(move |t| {
        !t.primary
            && (t.attribute == template.attribute
                || indexes.iter().any(|i| {
                    i.key.iter().any(|a| a.name == t.attribute)
                        && i.key.iter().any(|a| a.name == template.attribute)
                }))
    })
}

/// Index keys an update writes (attribute, new value), and those it removes.
pub(super) type IndexKeyChanges = (Vec<(String, AttributeValue)>, Vec<String>);

/// Whether `template` has a nullable facet that `has` says has no value: such an index key is
/// not written, and the item is not in the (sparse) index.
fn sparse_without(e: &Entity, template: &TemplateKey, has: impl Fn(FieldId) -> bool) -> bool {
    template
        .facets
        .iter()
        .any(|&f| e.fields[f].nullable && !has(f))
}

/// The index keys an update must rewrite: every index key `entity` builds from a template with
/// a facet among `changed`, rendered from the new values and, for its other facets, the
/// values in the item's primary key. Refused, naming them, when other facets are missing: the
/// update names the fields it needs and reads the item (`stored`) for them; an item that does
/// not hold them either is refused, naming them. Index keys with a facet among `cleared`
/// (nullable facets set to null) are removed instead: the item leaves those sparse indexes.
/// Returns the keys to set and the keys to remove, or (without `stored`) the fields to read.
pub(super) fn rewritten_index_keys(
    model: &Model,
    entity: EntityId,
    key: &Key,
    changed: &[(FieldId, AttributeValue)],
    cleared: &[FieldId],
    stored: Option<&Item>,
) -> ApiResult<Result<IndexKeyChanges, Vec<FieldId>>> {
    let e = &model.entities[entity];
    let key_item: Item = key.to_attribute_map();
    let is_changed = |f: &FieldId| changed.iter().any(|(c, _)| c == f);
    let value = |f: FieldId| -> Option<AttributeValue> {
        match changed.iter().find(|(c, _)| *c == f) {
            Some((_, v)) => Some(v.clone()),
            None if e.key_fields.contains(&f) => {
                values::field_value(model, entity, f, &key_item).map(Cow::into_owned)
            }
            None => stored
                .and_then(|item| values::field_value(model, entity, f, item).map(Cow::into_owned)),
        }
    };
    let mut keys = Vec::new();
    let mut removed = Vec::new();
    for template in e.templates.iter().filter(|t| !t.primary) {
        let partners = || index_partners(model, entity, template);
        if partners().any(|t| t.facets.iter().any(|f| cleared.contains(f))) {
            removed.push(template.attribute.to_owned());
            continue;
        }
        // Rewritten when its own facets change, or when a nullable facet of its index's other
        // key is given (the item may be entering the sparse index, which needs both keys).
        let entering = partners().any(|t| {
            t.facets
                .iter()
                .any(|f| is_changed(f) && e.fields[*f].nullable)
        });
        if !template.facets.iter().any(is_changed) && !entering {
            continue;
        }
        let missing: Vec<FieldId> = template
            .facets
            .iter()
            .copied()
            .filter(|&f| value(f).is_none())
            .collect();
        if !missing.is_empty() && stored.is_none() {
            return Ok(Err(missing));
        }
        if !missing.is_empty() {
            let given: Vec<FieldId> = template.facets.iter().copied().filter(is_changed).collect();
            return Err(ApiError::BadUserInput(format!(
                "Changing {} rewrites a key that is also made of {}: give {} as well.",
                field_list(e, &given),
                field_list(e, &missing),
                if missing.len() == 1 { "it" } else { "them" }
            )));
        }
        let rendered = values::render(template, &e.fields, value).ok_or(ApiError::Internal)?;
        check_key_length(model, entity, template, &rendered)?;
        keys.push((template.attribute.to_owned(), AttributeValue::S(rendered)));
    }
    Ok(Ok((keys, removed)))
}

/// Refuses a key rendered from `template` that is longer than DynamoDB allows for its attribute
/// (less for a sort key of the table or of an index than for a partition key).
fn check_key_length(
    model: &Model,
    entity: EntityId,
    template: &TemplateKey,
    rendered: &str,
) -> ApiResult<()> {
    let table = model.table_of(entity);
    let sort_key = std::iter::once(table.key)
        .chain(table.indexes.iter().map(|i| i.key))
        .any(|key| key.get(1).is_some_and(|a| a.name == template.attribute));
    let limit = if sort_key {
        MAX_SORT_KEY_BYTES
    } else {
        MAX_KEY_VALUE_BYTES
    };
    if rendered.len() <= limit {
        return Ok(());
    }
    let (verb, pronoun) = match template.facets.len() {
        1 => ("is", "it"),
        _ => ("are", "them"),
    };
    Err(ApiError::BadUserInput(format!(
        "{} {verb} too long for a key: the key made of {pronoun} must be at most {limit} bytes.",
        field_list(&model.entities[entity], &template.facets),
    )))
}
