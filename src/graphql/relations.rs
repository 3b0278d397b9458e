//! Relations: the target of a relation field, read through the request's loader (or through
//! the target's index), and every target a page's nodes will ask for, loaded in one batch.

use std::borrow::Cow;

use async_graphql::Context;
use aws_sdk_dynamodb::types::AttributeValue;

use super::{
    access,
    connection::PageValue,
    error::{ApiError, ApiResult},
    node::loader,
    values,
};
use crate::{
    cursor::Key,
    dynamo::{Item, Store},
    model::{EntityId, FieldId, Model, Relation},
};

/// The key of a relation's target, from the fields of the item holding it; `None` when one of
/// them is absent, or when the relation finds its target through an index.
pub fn relation_key(
    model: &Model,
    entity: EntityId,
    relation: &Relation,
    item: &Item,
) -> Option<Key> {
    if relation.index.is_some() {
        return None;
    }
    let target = &model.entities[relation.target];
    let key = values::primary_key(model, relation.target, |f| {
        let at = target.key_fields.iter().position(|&k| k == f)?;
        values::field_value(model, entity, *relation.key.get(at)?, item).map(Cow::into_owned)
    })?;
    // A key DynamoDB cannot hold (an empty string or binary) names no item.
    Some(key).filter(Key::fits_dynamodb)
}

/// Resolves a relation: the target item through the request's loader, or `None` when it does
/// not exist (an error instead when the relation is non-null).
pub async fn follow(
    ctx: &Context<'_>,
    model: &'static Model,
    entity: EntityId,
    relation: &'static Relation,
    item: &Item,
) -> ApiResult<Option<Item>> {
    let caller = access::caller(ctx);
    let hidden = || {
        if relation.nullable {
            Ok(None)
        } else {
            Err(ApiError::Forbidden(format!(
                "You may not see this `{}`.",
                model.entities[relation.target].name
            )))
        }
    };
    let found = match &relation.index {
        // Through the target's index: its arguments, from this item's fields.
        Some(via) => {
            let given: Option<Vec<(FieldId, AttributeValue)>> = via
                .arguments
                .iter()
                .zip(&relation.key)
                .map(|(&target_field, &own)| {
                    values::field_value(model, entity, own, item)
                        .map(|v| (target_field, v.into_owned()))
                })
                .collect();
            let Some(given) = given else {
                return missing(model, entity, relation);
            };
            let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
            super::index_read::read_through_index(
                store,
                model,
                relation.target,
                via,
                &given,
                &relation.name,
            )
            .await?
        }
        None => {
            let Some(key) = relation_key(model, entity, relation, item) else {
                return missing(model, entity, relation);
            };
            // Someone else's item, as its key shows: not read at all.
            if access::may_see_key(model, relation.target, &key.to_attribute_map(), &caller)
                == Some(false)
            {
                return hidden();
            }
            let table = model.entities[relation.target].table;
            loader(ctx)?
                .load_one((table, key))
                .await?
                .flatten()
                .filter(|item| values::entity_of(model, &[relation.target], item).is_some())
        }
    };
    match found {
        Some(item) if access::may_see(model, relation.target, &item, &caller) => Ok(Some(item)),
        Some(_) => hidden(),
        None => missing(model, entity, relation),
    }
}

fn missing(model: &Model, entity: EntityId, relation: &Relation) -> ApiResult<Option<Item>> {
    if relation.nullable {
        return Ok(None);
    }
    tracing::error!(
        entity = model.entities[entity].name,
        relation = relation.name,
        "a non-null relation points to an item that does not exist"
    );
    Err(ApiError::Internal)
}

/// Loads every relation target a page's nodes will ask for, in one batch, before the fields
/// resolve: one BatchGetItem per page (per 100 keys) however field resolution is scheduled.
pub async fn prefetch_relations(
    ctx: &Context<'_>,
    model: &Model,
    entity: EntityId,
    page: &PageValue,
) -> ApiResult<()> {
    let e = &model.entities[entity];
    if e.relations.is_empty() {
        return Ok(());
    }
    let look = ctx.look_ahead();
    let wanted: Vec<&Relation> = e
        .relations
        .iter()
        // Targets found through an index are read one Query each, when resolved.
        .filter(|r| r.index.is_none())
        .filter(|r| {
            look.field("edges").field("node").field(&r.name).exists()
                || look.field("nodes").field(&r.name).exists()
        })
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let caller = access::caller(ctx);
    let mut keys = Vec::new();
    for edge in &page.edges {
        for relation in &wanted {
            if let Some(key) = relation_key(model, entity, relation, &edge.item)
                && access::may_see_key(model, relation.target, &key.to_attribute_map(), &caller)
                    != Some(false)
            {
                let key = (model.entities[relation.target].table, key);
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
    }
    loader(ctx)?.load_many(keys).await?;
    Ok(())
}
