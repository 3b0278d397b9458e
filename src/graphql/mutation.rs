//! Mutations generated for the entities that opt in: `create{Type}` (conditional: never
//! overwrites), `update{Type}` (partial, by global id, conditional on existence and on the
//! version field when there is one) and `delete{Type}` (by global id). Inputs are checked
//! against the model before any write; every refusal is `BAD_USER_INPUT`.
//!
//! In a single-table design the writes keep an item's derived attributes consistent with its
//! fields: a create writes every key the entity builds from a template (the table's and the
//! indexes') and the table's type attribute; an update that changes a facet of an index key
//! rewrites that key in the same conditional write; an update or delete only touches an item of
//! its own entity.

use std::{borrow::Cow, cmp::Ordering, collections::HashMap};

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
    access::{self, Grant},
    connection::EdgeValue,
    derived_keys::{field_list, required_values, rewritten_index_keys, write_derived},
    error::{ApiError, ApiResult},
    limits::FieldCosts,
    node::{loader, node_id, parse_node_id},
    nullability, relations,
    resolve::{self, Site},
    values,
};
use crate::{
    auth::Caller,
    cursor::{CursorCodec, Key},
    dynamo::{Item, Store, Updated},
    model::{
        Access, DefaultValue, Entity, EntityId, Field as ModelField, FieldId, FieldType, Generated,
        Model, PartitionFrom, Read, Scalar, TextFormat, TimeFormat,
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
            // An owner field is written from the caller's claim, never from the input.
            let owners: Vec<FieldId> = create.access.owners().map(|(f, _)| f).collect();
            for (_, field) in e
                .fields
                .iter()
                .enumerate()
                .filter(|(f, field)| writable(e, field) && !owners.contains(f))
            {
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
                    nullability::field(&lower, TypeRef::named_nn(name), |ctx| {
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
                    nullability::field(&edge_field, TypeRef::named_nn(format!("{name}Edge")), |ctx| {
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
                if e.key_fields.contains(&f)
                    || field.generated.is_some()
                    || update.access.owners().any(|(o, _)| o == f)
                {
                    continue;
                }
                let required = e.version_field == Some(f);
                input_type = input_type.field(input_field(model, field, required));
            }
            let payload_type = Object::new(&payload)
                .description(format!("The updated {}.", words(name)))
                .field(
                    nullability::field(&lower, TypeRef::named_nn(name), |ctx| {
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
                    nullability::field(&deleted, TypeRef::named_nn(TypeRef::ID), |ctx| {
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
    let field = nullability::field(field_name, TypeRef::named_nn(payload), move |ctx| {
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
fn writable(entity: &Entity, field: &ModelField) -> bool {
    field.generated.is_none()
        && entity
            .version_field
            .is_none_or(|v| entity.fields[v].name != field.name)
}

fn input_field(model: &Model, field: &ModelField, required: bool) -> InputValue {
    let ty = super::scalars::field_type(model, &field.ty, !required);
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
        if checks.format == Some(TextFormat::Email) && !looks_like_email(s) {
            return Err(bad(format!("`{name}` must be an email address.")));
        }
        if let Some(TextFormat::Id(format)) = checks.format
            && !format.is_valid(s)
        {
            return Err(bad(format!(
                "`{name}` must be a {}.",
                match format {
                    crate::model::sortable_id::SortableId::Ulid => "ULID",
                    crate::model::sortable_id::SortableId::Ksuid => "KSUID",
                }
            )));
        }
    }
    if checks.min.is_some() || checks.max.is_some() {
        let number = match value {
            Value::Number(n) => DynamoNumber::normalize(&n.to_string()).ok(),
            Value::String(s) => DynamoNumber::normalize(s).ok(),
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

/// The attribute value of input field `field`, checked.
fn input_value(
    model: &Model,
    entity: EntityId,
    field: FieldId,
    value: &Value,
) -> ApiResult<Option<AttributeValue>> {
    let f = &model.entities[entity].fields[field];
    check(f, value)?;
    let attribute = values::input(model, f, &f.name, value).map_err(ApiError::BadUserInput)?;
    if in_a_key(model, entity, field)
        && let Some(value) = &attribute
    {
        // A facet value holding the text after its facet is written as the other tools write
        // it (OneTable's `issue#p02 beta#1#00000007`); only reads refuse to render such a key.
        check_key_attribute(value, &f.name)?;
    }
    Ok(attribute)
}

/// Whether a field's value is (part of) a key: a key attribute of the table or of an index,
/// or a facet of a key template. DynamoDB refuses an empty one, and an empty facet would make a
/// key that cannot be told from a prefix of others.
fn in_a_key(model: &Model, entity: EntityId, field: FieldId) -> bool {
    let e = &model.entities[entity];
    e.key_fields.contains(&field)
        || e.templates.iter().any(|t| t.facets.contains(&field))
        || model
            .table_of(entity)
            .attributes
            .iter()
            .any(|a| a.name == e.fields[field].attribute)
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

/// `time` as `field` stores it, cut down to what its format holds (the whole second, or the day).
fn clock_value(field: &ModelField, time: chrono::DateTime<Utc>) -> Option<AttributeValue> {
    let format = time_format(field)?;
    values::write_time(format, values::truncate_time(format, time))
}

fn time_format(field: &ModelField) -> Option<TimeFormat> {
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
    let rules = e.mutations.create.as_ref().ok_or(ApiError::Internal)?;
    let caller = access::caller(ctx);
    if access::grant(&rules.access, &caller) == Grant::Nothing {
        return Err(access::forbidden(&format!("`create{}`", e.name)));
    }
    let owners = owner_claims(&rules.access, &caller, &format!("`create{}`", e.name))?;
    let now = millisecond_now();
    let mut item = Item::new();
    // The key field that took the clock's value, which moves on when its key is taken.
    let mut clock_key: Option<(usize, chrono::DateTime<Utc>)> = None;
    for (f, field) in e.fields.iter().enumerate() {
        if field.generated.is_some() {
            if let Some(value) = clock_value(field, now) {
                item.insert(field.attribute.clone(), value);
            }
            continue;
        }
        if e.version_field == Some(f) {
            item.insert(field.attribute.clone(), AttributeValue::N("1".to_owned()));
            continue;
        }
        if let Some((_, claim)) = owners.iter().find(|(o, _)| *o == f) {
            let value = input_value(model, entity, f, &Value::String(claim.clone()))?
                .ok_or(ApiError::Internal)?;
            item.insert(field.attribute.clone(), value);
            continue;
        }
        let given = input
            .get(&field.name)
            .map(|v| v.as_value().clone())
            .filter(|v| !matches!(v, Value::Null));
        let value = match (given, &field.default) {
            (Some(value), _) => input_value(model, entity, f, &value)?,
            (None, Some(DefaultValue::Now)) => {
                if e.key_fields.contains(&f) {
                    clock_key = Some((f, now));
                }
                clock_value(field, now)
            }
            (None, Some(DefaultValue::Value(json))) => {
                let value = Value::from_json(json.clone()).map_err(|_| ApiError::Internal)?;
                input_value(model, entity, f, &value)?
            }
            (None, None) if field.nullable => None,
            (None, None) => return Err(bad(format!("`{}` must not be null.", field.name))),
        };
        if let Some(value) = value {
            item.insert(field.attribute.clone(), value);
        }
    }
    // The targets the item names are read together, in one BatchGetItem.
    let checked: Vec<_> = e
        .relations
        .iter()
        .filter(|r| r.check_on_create)
        .filter_map(|relation| {
            let key = relations::relation_key(model, entity, relation, &item)?;
            Some((relation, (model.entities[relation.target].table, key)))
        })
        .collect();
    let found = loader(ctx)?
        .load_many(checked.iter().map(|(_, key)| key.clone()))
        .await?;
    for (relation, key) in &checked {
        // In a shared table, an item under the key that is not the target's is no target.
        let target = found
            .get(key)
            .and_then(Option::as_ref)
            .filter(|t| values::entity_of(model, &[relation.target], t).is_some());
        if target.is_none() {
            return Err(bad(format!(
                "No {} has this {}.",
                words(&model.entities[relation.target].name),
                field_list(e, &relation.key)
            )));
        }
    }
    write_derived(model, entity, &mut item)?;
    let mut attempt = 0;
    while !store.put_new(e.table, item.clone()).await? {
        let Some((f, at)) = clock_key.as_mut().filter(|_| attempt < CLOCK_RETRIES) else {
            return Err(bad(format!(
                "{} with this {} already exists.",
                capitalised(&a(&words(&e.name))),
                field_list(e, &e.key_fields)
            )));
        };
        attempt += 1;
        let field = &e.fields[*f];
        // The next value the field can hold: a millisecond later, a second, or a day.
        *at += match time_format(field) {
            Some(TimeFormat::EpochSeconds | TimeFormat::Iso8601Seconds) => {
                chrono::Duration::seconds(1)
            }
            Some(TimeFormat::Date) => chrono::Duration::days(1),
            _ => chrono::Duration::milliseconds(1),
        };
        if let Some(value) = clock_value(field, *at) {
            item.insert(field.attribute.clone(), value);
        }
        write_derived(model, entity, &mut item)?;
    }
    let cursor = match e.mutations.create.as_ref().and_then(|c| c.edge) {
        Some((parent, connection)) => edge_cursor(ctx, model, entity, (parent, connection), &item)?,
        None => String::new(),
    };
    Ok(EdgeValue {
        cursor,
        item,
        entity: Some(entity),
    })
}

/// The cursor of a created item of `entity` in the unfiltered connection `connection` of
/// `parent`.
fn edge_cursor(
    ctx: &ResolverContext<'_>,
    model: &'static Model,
    entity: EntityId,
    (parent, connection): (EntityId, usize),
    item: &Item,
) -> ApiResult<String> {
    let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    let codec = ctx.data::<CursorCodec>().map_err(|_| ApiError::Internal)?;
    let p = &model.entities[parent];
    let declared = &p.connections[connection];
    let Read::Query { partition, .. } = &declared.read else {
        return Err(ApiError::Internal);
    };
    let PartitionFrom::Parent(parent_field) = partition.from else {
        return Err(ApiError::Internal);
    };
    // The parent's field holds the partition key, or the facet its template is made of.
    let value = match &partition.template {
        Some(template) => {
            let e = &model.entities[entity];
            let facet = template.facets().next();
            e.fields
                .iter()
                .position(|f| Some(f.name.as_str()) == facet)
                .and_then(|f| values::field_value(model, entity, f, item))
                .map(Cow::into_owned)
        }
        None => item.get(partition.attribute.name).cloned(),
    }
    .ok_or(ApiError::Internal)?;
    let parent_item: Item = HashMap::from([(p.fields[parent_field].attribute.clone(), value)]);
    let site = Site {
        model,
        parent: Some(parent),
        connection: declared,
    };
    let caller = access::caller(ctx);
    let binding = resolve::binding_for(
        site,
        Some(&parent_item),
        &Default::default(),
        store,
        &caller,
    )?;
    let key = Key::from_item(item, declared.start_key).map_err(|_| ApiError::Internal)?;
    Ok(codec.encode(&key, &binding))
}

/// The owner fields a create writes from the caller's claims: for each owner rule of `rules`,
/// the field and the claim's value. A caller admitted by another rule but without the claim
/// cannot create (the owner would be unknown).
fn owner_claims(rules: &Access, caller: &Caller, what: &str) -> ApiResult<Vec<(FieldId, String)>> {
    rules
        .owners()
        .map(|(field, claim)| {
            caller
                .principal()
                .and_then(|p| p.owner_value(claim))
                .map(|value| (field, value.into_owned()))
                .ok_or_else(|| access::forbidden(what))
        })
        .collect()
}

/// What an update or delete must find in the item besides its key, for the caller to change
/// it: nothing when a rule other than an owner rule admits the caller, else the owner
/// attribute holding the caller's claim, checked in the same conditional write, so that no
/// change of owner racing the write can let it through. `FORBIDDEN` when no rule admits the
/// caller.
fn owner_condition(
    model: &Model,
    entity: EntityId,
    rules: &Access,
    ctx: &ResolverContext<'_>,
    what: &str,
) -> ApiResult<Option<(String, AttributeValue)>> {
    match access::grant(rules, &access::caller(ctx)) {
        Grant::All => Ok(None),
        Grant::Nothing => Err(access::forbidden(what)),
        // With several owner rules, the first the caller has a claim for decides.
        Grant::Own(claims) => {
            let (field, claim) = claims.into_iter().next().ok_or(ApiError::Internal)?;
            let attribute = model.entities[entity].fields[field].attribute.clone();
            Ok(Some((attribute, AttributeValue::S(claim))))
        }
    }
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
        _ => Err(bad(format!("The id is not {} id.", a(&words)))),
    }
}

async fn delete_item(
    ctx: &ResolverContext<'_>,
    model: &'static Model,
    entity: EntityId,
) -> ApiResult<String> {
    let key = id_key(ctx, model, entity)?;
    let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    let mut expect = required_values(model, entity);
    let rules = model.entities[entity]
        .mutations
        .delete
        .as_ref()
        .ok_or(ApiError::Internal)?;
    expect.extend(owner_condition(
        model,
        entity,
        &rules.access,
        ctx,
        &format!("`delete{}`", model.entities[entity].name),
    )?);
    if !store
        .delete_existing(model.entities[entity].table, &key, expect)
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
    // The values set, by field: what rewritten index keys are made of.
    let mut changed = Vec::new();
    // The nullable fields set to null: sparse index keys made of them are removed.
    let mut cleared = Vec::new();
    let mut expect = required_values(model, entity);
    let rules = e.mutations.update.as_ref().ok_or(ApiError::Internal)?;
    let owner = owner_condition(
        model,
        entity,
        &rules.access,
        ctx,
        &format!("`update{}`", e.name),
    )?;
    expect.extend(owner.clone());
    let mut versioned = false;
    let now = millisecond_now();
    // Last-changed times, set by every update that changes something.
    let mut stamped = Vec::new();
    for (f, field) in e.fields.iter().enumerate() {
        if field.generated == Some(Generated::NowOnWrite) {
            stamped.extend(clock_value(field, now).map(|v| (field.attribute.clone(), v)));
            continue;
        }
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
            versioned = true;
            expect.push((
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
        match input_value(model, entity, f, given)? {
            Some(value) => {
                changed.push((f, value.clone()));
                set.push((field.attribute.clone(), value));
            }
            // An empty set cannot be stored: it is the attribute's absence.
            None if field.nullable || (is_set && !matches!(given, Value::Null)) => {
                remove.push(field.attribute.clone());
                cleared.push(f);
            }
            None => return Err(bad(format!("`{}` must not be null.", field.name))),
        }
    }
    if set.is_empty() && remove.is_empty() {
        return Err(bad("Give at least one field to change."));
    }
    set.extend(stamped);
    // An index key made of fields the input does not give (a creation time the server set) is
    // rendered from the stored item, read first; the write then expects those fields unchanged.
    let mut read_first = false;
    let (keys, removed) = match rewritten_index_keys(model, entity, &key, &changed, &cleared, None)?
    {
        Ok(changes) => changes,
        Err(missing) => {
            let Some(stored) = store
                .get(e.table, &key)
                .await?
                .filter(|item| values::entity_of(model, &[entity], item).is_some())
            else {
                return Err(bad(format!("No {} has this id.", words(&e.name))));
            };
            read_first = true;
            for f in missing {
                let attribute = &e.fields[f].attribute;
                if let Some(value) = stored.get(attribute) {
                    expect.push((attribute.clone(), value.clone()));
                }
            }
            rewritten_index_keys(model, entity, &key, &changed, &cleared, Some(&stored))?
                .map_err(|_| ApiError::Internal)?
        }
    };
    set.extend(keys);
    remove.extend(removed);
    // The item as a failed write found it, when it is one of this entity's and (under an owner
    // rule) the caller's: then only a stale version, or a field read for an index key that
    // changed before the write, failed the condition. Anything else, someone else's item
    // included, answers as a missing one.
    let ours = |current: &Item| {
        values::entity_of(model, &[entity], current).is_some()
            && owner
                .as_ref()
                .is_none_or(|(attribute, claim)| current.get(attribute) == Some(claim))
    };
    match store
        .update_existing(e.table, &key, set, remove, expect)
        .await?
    {
        Updated::Written(item) => Ok(item),
        Updated::Refused(Some(current)) if versioned && ours(&current) => Err(bad(format!(
            "The {} has changed since that version: read it again and retry.",
            words(&e.name)
        ))),
        Updated::Refused(Some(current)) if read_first && ours(&current) => Err(bad(format!(
            "The {} changed while it was being updated: retry.",
            words(&e.name)
        ))),
        Updated::Refused(_) => Err(bad(format!("No {} has this id.", words(&e.name)))),
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
