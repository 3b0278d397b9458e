//! Mutations generated for the entities that opt in: `create{Type}` (conditional: never
//! overwrites), `update{Type}` (partial, by global id, conditional on existence and on the
//! version field when there is one) and `delete{Type}` (by global id). Inputs are checked
//! against the model before any write; every refusal is `BAD_USER_INPUT`.

use std::{cmp::Ordering, collections::HashMap};

use async_graphql::{
    Value,
    dynamic::{
        Field, FieldFuture, FieldValue, InputObject, InputValue, Object, ResolverContext, Type,
        TypeRef,
    },
};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::Utc;

use super::{
    connection::EdgeValue,
    error::{ApiError, ApiResult},
    limits::FieldCosts,
    node::{loader, node_id, parse_node_id},
    resolve::{self, Site},
    values,
};
use crate::{
    cursor::{CursorCodec, Key},
    dynamo::{Item, Store},
    model::{
        DefaultValue, EntityId, Field as ModelField, FieldType, Generated, Model, Read, Scalar,
    },
    number::DynamoNumber,
};

/// How many later milliseconds a create tries when a key field defaulted to now is taken.
const CLOCK_RETRIES: i64 = 10;

/// The `Mutation` root and the input and payload types of every generated mutation.
pub fn types(model: &'static Model, costs: &mut FieldCosts) -> (Object, Vec<Type>) {
    let mut root = Object::new("Mutation").description("The entry points for changing data.");
    let mut types: Vec<Type> = Vec::new();
    for (entity, e) in model.entities.iter().enumerate() {
        let name = &e.name;
        let lower = lower_camel(name);
        if let Some(create) = &e.mutations.create {
            let input = format!("Create{name}Input");
            let payload = format!("Create{name}Payload");
            let mut input_type =
                InputObject::new(&input).description(format!("A new {}.", words(name)));
            for field in e.fields.iter().filter(|f| writable(e, f)) {
                let required = !field.nullable && field.default.is_none();
                input_type = input_type.field(input_field(model, field, required));
            }
            let mut payload_type = Object::new(&payload)
                .description(match create.edge {
                    Some(_) => format!(
                        "The created {}, and its edge for inserting it into a connection.",
                        words(name)
                    ),
                    None => format!("The created {}.", words(name)),
                })
                .field(
                    Field::new(&lower, TypeRef::named_nn(name), |ctx| {
                        FieldFuture::Value(
                            ctx.parent_value
                                .downcast_ref::<EdgeValue>()
                                .map(|edge| FieldValue::borrowed_any(&edge.item)),
                        )
                    })
                    .description(format!("The {} as stored.", words(name))),
                );
            costs.object(&payload, &lower, name);
            if let Some((parent, connection)) = create.edge {
                let edge_field = format!("{lower}Edge");
                let label = format!(
                    "{}.{}",
                    model.entities[parent].name,
                    model.entities[parent].connections[connection].name
                );
                costs.object(&payload, &edge_field, &format!("{name}Edge"));
                payload_type = payload_type.field(
                    Field::new(&edge_field, TypeRef::named_nn(format!("{name}Edge")), |ctx| {
                        FieldFuture::Value(
                            ctx.parent_value
                                .downcast_ref::<EdgeValue>()
                                .map(|v| FieldValue::borrowed_any(v)),
                        )
                    })
                    .description(format!(
                        "The {} with a cursor valid in the unfiltered `{label}` connection (in\neither order), for Relay's `@appendEdge`/`@prependEdge` or an Apollo cache update.",
                        words(name)
                    )),
                );
            }
            costs.object("Mutation", &format!("create{name}"), &payload);
            root = root.field(root_field(
                model,
                entity,
                Kind::Create,
                &payload,
                &input,
                create.description.clone(),
            ));
            types.push(input_type.into());
            types.push(payload_type.into());
        }
        if let Some(update) = &e.mutations.update {
            let input = format!("Update{name}Input");
            let payload = format!("Update{name}Payload");
            let mut input_type = InputObject::new(&input)
                .description(format!(
                    "Changes to {}: the fields given are set, fields given as null are removed.",
                    a(&words(name))
                ))
                .field(
                    InputValue::new("id", TypeRef::named_nn(TypeRef::ID))
                        .description(format!("The {}'s global `id`.", words(name))),
                );
            for (f, field) in e.fields.iter().enumerate() {
                if e.key_fields.contains(&f) || field.generated.is_some() {
                    continue;
                }
                let required = e.version_field == Some(f);
                input_type = input_type.field(input_field(model, field, required));
            }
            let payload_type = Object::new(&payload)
                .description(format!("The updated {}.", words(name)))
                .field(
                    Field::new(&lower, TypeRef::named_nn(name), |ctx| {
                        FieldFuture::Value(
                            ctx.parent_value
                                .downcast_ref::<Item>()
                                .map(|v| FieldValue::borrowed_any(v)),
                        )
                    })
                    .description(format!("The {} as stored after the update.", words(name))),
                );
            costs.object(&payload, &lower, name);
            costs.object("Mutation", &format!("update{name}"), &payload);
            root = root.field(root_field(
                model,
                entity,
                Kind::Update,
                &payload,
                &input,
                Some(update.description.clone().unwrap_or_else(|| { format!("Changes {} by its global id. Fails with `BAD_USER_INPUT` if there is no such {}.", a(&words(name)), words(name)) })),
            ));
            types.push(input_type.into());
            types.push(payload_type.into());
        }
        if let Some(delete) = &e.mutations.delete {
            let input = format!("Delete{name}Input");
            let payload = format!("Delete{name}Payload");
            let deleted = format!("deleted{name}Id");
            let input_type = InputObject::new(&input)
                .description(format!("Which {} to delete.", words(name)))
                .field(
                    InputValue::new("id", TypeRef::named_nn(TypeRef::ID))
                        .description(format!("The {}'s global `id`.", words(name))),
                );
            let payload_type = Object::new(&payload)
                .description(format!("The deleted {}.", words(name)))
                .field(
                    Field::new(&deleted, TypeRef::named_nn(TypeRef::ID), |ctx| {
                        FieldFuture::Value(
                            ctx.parent_value
                                .downcast_ref::<String>()
                                .map(|id| FieldValue::value(id.clone())),
                        )
                    })
                    .description(format!(
                        "The id of the {} that was deleted, for Relay's `@deleteRecord`.",
                        words(name)
                    )),
                );
            costs.object("Mutation", &format!("delete{name}"), &payload);
            root = root.field(root_field(
                model,
                entity,
                Kind::Delete,
                &payload,
                &input,
                Some(delete.description.clone().unwrap_or_else(|| { format!("Deletes {} by its global id. Fails with `BAD_USER_INPUT` if there is no such {}.", a(&words(name)), words(name)) })),
            ));
            types.push(input_type.into());
            types.push(payload_type.into());
        }
    }
    (root, types)
}

/// Which generated mutation a root field runs.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Create,
    Update,
    Delete,
}

/// The `Mutation` field `{kind}{Type}(input: …Input!): …Payload!` of `entity`.
fn root_field(
    model: &'static Model,
    entity: EntityId,
    kind: Kind,
    payload: &str,
    input: &str,
    description: Option<String>,
) -> Field {
    let name = &model.entities[entity].name;
    let field_name = match kind {
        Kind::Create => format!("create{name}"),
        Kind::Update => format!("update{name}"),
        Kind::Delete => format!("delete{name}"),
    };
    let field = Field::new(field_name, TypeRef::named_nn(payload), move |ctx| {
        FieldFuture::new(async move {
            Ok(Some(match kind {
                Kind::Create => FieldValue::owned_any(create_item(&ctx, model, entity).await?),
                Kind::Update => FieldValue::owned_any(update_item(&ctx, model, entity).await?),
                Kind::Delete => FieldValue::owned_any(delete_item(&ctx, model, entity).await?),
            }))
        })
    })
    .argument(InputValue::new("input", TypeRef::named_nn(input)));
    match description {
        Some(d) => field.description(d),
        None => field,
    }
}

/// Whether a field appears in create inputs.
fn writable(entity: &crate::model::Entity, field: &ModelField) -> bool {
    field.generated.is_none()
        && entity
            .version_field
            .is_none_or(|v| entity.fields[v].name != field.name)
}

fn input_field(model: &Model, field: &ModelField, required: bool) -> InputValue {
    let ty = super::schema::field_type(model, &field.ty, !required);
    let mut input = InputValue::new(&field.name, ty);
    if let Some(d) = field
        .input_description
        .as_ref()
        .or(field.description.as_ref())
    {
        input = input.description(d);
    }
    input
}

/// `PurchaseOrder` -> `purchaseOrder`.
fn lower_camel(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_lowercase().chain(chars).collect()
    })
}

/// `PurchaseOrder` -> `purchase order`: how messages name a type.
pub fn words(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push(' ');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// `order` -> `an order`, `user` -> `a user` (by the first letter, which is right for the
/// usual names).
fn a(words: &str) -> String {
    let article = match words.chars().next() {
        Some('a' | 'e' | 'i' | 'o') => "an",
        _ => "a",
    };
    format!("{article} {words}")
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::BadUserInput(message.into())
}

/// Checks an input value against the field's limits.
fn check(field: &ModelField, value: &Value) -> ApiResult<()> {
    let name = &field.name;
    let checks = &field.checks;
    if let Value::String(s) = value {
        let len = s.chars().count();
        if let Some(min) = checks.min_length {
            if min == 1 && s.trim().is_empty() {
                return Err(bad(format!("`{name}` must not be empty.")));
            }
            if len < min as usize {
                return Err(bad(format!(
                    "`{name}` must be at least {min} characters long."
                )));
            }
        }
        if let Some(max) = checks.max_length
            && len > max as usize
        {
            return Err(bad(format!(
                "`{name}` must be at most {max} characters long."
            )));
        }
        if checks.email && !looks_like_email(s) {
            return Err(bad(format!("`{name}` must be an email address.")));
        }
    }
    if checks.min.is_some() || checks.max.is_some() {
        let number = match value {
            Value::Number(n) => DynamoNumber::parse(&n.to_string()).ok(),
            Value::String(s) => DynamoNumber::parse(s).ok(),
            _ => None,
        };
        if let Some(number) = number {
            if let Some(min) = &checks.min
                && number.numeric_cmp(min) == Ordering::Less
            {
                return Err(bad(format!("`{name}` must be at least {}.", min.as_str())));
            }
            if let Some(max) = &checks.max
                && number.numeric_cmp(max) == Ordering::Greater
            {
                return Err(bad(format!("`{name}` must be at most {}.", max.as_str())));
            }
        }
    }
    Ok(())
}

/// Something before an `@`, and a domain with a dot or at least a name after it.
fn looks_like_email(s: &str) -> bool {
    s.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty() && !domain.is_empty() && !domain.contains('@')
    })
}

/// The attribute value of an input field, checked.
fn input_value(
    model: &Model,
    entity: EntityId,
    field: &ModelField,
    value: &Value,
) -> ApiResult<Option<AttributeValue>> {
    check(field, value)?;
    let attribute =
        values::input(model, field, &field.name, value).map_err(ApiError::BadUserInput)?;
    if model.entities[entity]
        .key_fields
        .iter()
        .any(|&k| model.entities[entity].fields[k].name == field.name)
        && let Some(value) = &attribute
    {
        check_key_attribute(value, &field.name)?;
    }
    Ok(attribute)
}

fn check_key_attribute(value: &AttributeValue, name: &str) -> ApiResult<()> {
    match value {
        AttributeValue::S(s) => super::error::check_key_value(s.as_bytes(), name),
        AttributeValue::B(b) => super::error::check_key_value(b.as_ref(), name),
        _ => Ok(()),
    }
}

/// Now, truncated to the millisecond (the precision of stored times).
fn millisecond_now() -> chrono::DateTime<Utc> {
    let now = Utc::now().timestamp_millis();
    chrono::DateTime::from_timestamp_millis(now).unwrap_or_default()
}

/// `time` as `field` stores it; a field stored in epoch seconds takes the whole second.
fn clock_value(field: &ModelField, time: chrono::DateTime<Utc>) -> Option<AttributeValue> {
    let format = time_format(field)?;
    let time = match format {
        crate::model::TimeFormat::EpochSeconds => {
            chrono::DateTime::from_timestamp(time.timestamp(), 0).unwrap_or(time)
        }
        _ => time,
    };
    values::write_time(format, time)
}

fn time_format(field: &ModelField) -> Option<crate::model::TimeFormat> {
    match field.ty {
        FieldType::Scalar(Scalar::DateTime(format)) => Some(format),
        _ => None,
    }
}

async fn create_item(
    ctx: &ResolverContext<'_>,
    model: &'static Model,
    entity: EntityId,
) -> ApiResult<EdgeValue> {
    let e = &model.entities[entity];
    let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    let input = ctx
        .args
        .try_get("input")
        .and_then(|v| v.object())
        .map_err(|_| ApiError::Internal)?;
    let now = millisecond_now();
    let mut item = Item::new();
    // The key field that took the clock's value, which moves on when its key is taken.
    let mut clock_key: Option<(usize, chrono::DateTime<Utc>)> = None;
    for (f, field) in e.fields.iter().enumerate() {
        if let Some(Generated::Now) = field.generated {
            if let Some(value) = clock_value(field, now) {
                item.insert(field.attribute.clone(), value);
            }
            continue;
        }
        if e.version_field == Some(f) {
            item.insert(field.attribute.clone(), AttributeValue::N("1".to_owned()));
            continue;
        }
        let given = input
            .get(&field.name)
            .map(|v| v.as_value().clone())
            .filter(|v| !matches!(v, Value::Null));
        let value = match (given, &field.default) {
            (Some(value), _) => input_value(model, entity, field, &value)?,
            (None, Some(DefaultValue::Now)) => {
                if e.key_fields.contains(&f) {
                    clock_key = Some((f, now));
                }
                clock_value(field, now)
            }
            (None, Some(DefaultValue::Value(json))) => {
                let value = Value::from_json(json.clone()).map_err(|_| ApiError::Internal)?;
                input_value(model, entity, field, &value)?
            }
            (None, None) if field.nullable => None,
            (None, None) => return Err(bad(format!("`{}` must not be null.", field.name))),
        };
        if let Some(value) = value {
            item.insert(field.attribute.clone(), value);
        }
    }
    for relation in e.relations.iter().filter(|r| r.check_on_create) {
        let Some(key) = resolve::relation_key(model, entity, relation, &item) else {
            continue;
        };
        let table = model.entities[relation.target].table;
        if loader(ctx)?
            .load_one((table, key))
            .await?
            .flatten()
            .is_none()
        {
            let fields: Vec<String> = relation
                .key
                .iter()
                .map(|&f| format!("`{}`", e.fields[f].name))
                .collect();
            return Err(bad(format!(
                "No {} has this {}.",
                words(&model.entities[relation.target].name),
                fields.join(" and ")
            )));
        }
    }
    let mut attempt = 0;
    while !store.put_new(e.table, item.clone()).await? {
        let Some((f, at)) = clock_key.as_mut().filter(|_| attempt < CLOCK_RETRIES) else {
            let fields: Vec<String> = e
                .key_fields
                .iter()
                .map(|&f| format!("`{}`", e.fields[f].name))
                .collect();
            return Err(bad(format!(
                "{} with this {} already exists.",
                capitalised(&a(&words(&e.name))),
                fields.join(" and ")
            )));
        };
        attempt += 1;
        let field = &e.fields[*f];
        // The next value the field can hold: a millisecond later, or a second.
        *at += match time_format(field) {
            Some(crate::model::TimeFormat::EpochSeconds) => chrono::Duration::seconds(1),
            _ => chrono::Duration::milliseconds(1),
        };
        if let Some(value) = clock_value(field, *at) {
            item.insert(field.attribute.clone(), value);
        }
    }
    let cursor = match e.mutations.create.as_ref().and_then(|c| c.edge) {
        Some((parent, connection)) => edge_cursor(ctx, model, parent, connection, &item)?,
        None => String::new(),
    };
    Ok(EdgeValue { cursor, item })
}

/// The cursor of a created item in the unfiltered connection `connection` of `parent`.
fn edge_cursor(
    ctx: &ResolverContext<'_>,
    model: &'static Model,
    parent: EntityId,
    connection: usize,
    item: &Item,
) -> ApiResult<String> {
    let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    let codec = ctx.data::<CursorCodec>().map_err(|_| ApiError::Internal)?;
    let p = &model.entities[parent];
    let declared = &p.connections[connection];
    let Read::Query { partition, .. } = &declared.read else {
        return Err(ApiError::Internal);
    };
    let crate::model::PartitionFrom::Parent(parent_field) = partition.from else {
        return Err(ApiError::Internal);
    };
    let value = item
        .get(partition.attribute.name)
        .cloned()
        .ok_or(ApiError::Internal)?;
    let parent_item: Item = HashMap::from([(p.fields[parent_field].attribute.clone(), value)]);
    let site = Site {
        model,
        parent: Some(parent),
        connection: declared,
    };
    let binding = resolve::binding_for(site, Some(&parent_item), &Default::default(), store)?;
    let key = Key::from_item(item, declared.start_key).map_err(|_| ApiError::Internal)?;
    Ok(codec.encode(&key, &binding))
}

/// The key of this entity a mutation's `input.id` names.
fn id_key(ctx: &ResolverContext<'_>, model: &Model, entity: EntityId) -> ApiResult<Key> {
    let id = ctx
        .args
        .try_get("input")
        .and_then(|v| v.object())
        .and_then(|input| {
            input
                .try_get("id")
                .and_then(|id| id.string().map(str::to_owned))
        })
        .map_err(|_| ApiError::Internal)?;
    let words = words(&model.entities[entity].name);
    match parse_node_id(model, &id) {
        Some((e, key)) if e == entity => Ok(key),
        _ => Err(bad(format!("The id is not a {words} id."))),
    }
}

async fn delete_item(
    ctx: &ResolverContext<'_>,
    model: &'static Model,
    entity: EntityId,
) -> ApiResult<String> {
    let key = id_key(ctx, model, entity)?;
    let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    if !store
        .delete_existing(model.entities[entity].table, &key)
        .await?
    {
        return Err(bad(format!(
            "No {} has this id.",
            words(&model.entities[entity].name)
        )));
    }
    Ok(node_id(model, entity, &key))
}

async fn update_item(
    ctx: &ResolverContext<'_>,
    model: &'static Model,
    entity: EntityId,
) -> ApiResult<Item> {
    let e = &model.entities[entity];
    let key = id_key(ctx, model, entity)?;
    let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    let input = ctx
        .args
        .try_get("input")
        .and_then(|v| v.object())
        .map_err(|_| ApiError::Internal)?;
    let mut set = Vec::new();
    let mut remove = Vec::new();
    let mut expect = None;
    for (f, field) in e.fields.iter().enumerate() {
        if e.key_fields.contains(&f) || field.generated.is_some() {
            continue;
        }
        let Some(given) = input.get(&field.name) else {
            continue;
        };
        let given = given.as_value();
        if e.version_field == Some(f) {
            let version = values::big_int(given)
                .ok_or_else(|| bad(format!("`{}` must be an integer.", field.name)))?;
            expect = Some((
                field.attribute.clone(),
                AttributeValue::N(version.to_string()),
            ));
            set.push((
                field.attribute.clone(),
                AttributeValue::N(version.saturating_add(1).to_string()),
            ));
            continue;
        }
        let is_set = matches!(field.ty, FieldType::List { set: true, .. });
        match input_value(model, entity, field, given)? {
            Some(value) => set.push((field.attribute.clone(), value)),
            // An empty set cannot be stored: it is the attribute's absence.
            None if field.nullable || (is_set && !matches!(given, Value::Null)) => {
                remove.push(field.attribute.clone());
            }
            None => return Err(bad(format!("`{}` must not be null.", field.name))),
        }
    }
    if set.is_empty() && remove.is_empty() {
        return Err(bad("Give at least one field to change."));
    }
    let versioned = expect.is_some();
    match store
        .update_existing(e.table, &key, set, remove, expect)
        .await?
    {
        Some(item) => Ok(item),
        None if versioned && store.get(e.table, &key).await?.is_some() => Err(bad(format!(
            "The {} has changed since that version: read it again and retry.",
            words(&e.name)
        ))),
        None => Err(bad(format!("No {} has this id.", words(&e.name)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn articles_follow_the_first_letter() {
        assert_eq!(a("order"), "an order");
        assert_eq!(a("customer"), "a customer");
        assert_eq!(capitalised("an order"), "An order");
    }

    #[test]
    fn type_names_become_words_and_field_names() {
        assert_eq!(words("PurchaseOrder"), "purchase order");
        assert_eq!(words("Customer"), "customer");
        assert_eq!(lower_camel("PurchaseOrder"), "purchaseOrder");
    }

    #[test]
    fn emails_need_a_local_part_and_a_domain() {
        assert!(looks_like_email("a@b"));
        assert!(!looks_like_email("@b"));
        assert!(!looks_like_email("a@"));
        assert!(!looks_like_email("ab"));
        assert!(!looks_like_email("a@b@c"));
    }
}
