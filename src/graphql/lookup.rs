//! Root lookups: one item by the table's key (a GetItem, with the pages of its connections read
//! at the same time), or through an index (read by `index_read`, as relations through an index
//! are: a Query of at most two items, one is the answer, two are a fault in the data, never an
//! arbitrary pick).

use async_graphql::{dynamic::ResolverContext, futures_util};

use super::{
    access,
    error::ApiError,
    index_read::read_through_index,
    resolve::{self, Args, PagesAhead, Site},
    values,
};
use crate::{
    dynamo::{Item, Store},
    model::{EntityId, Lookup, LookupIndex, Model, PartitionFrom, Read},
};

/// Reads a lookup's item by the table's key; reads the pages of selected connections whose
/// partition is a key field of the item at the same time (they do not depend on the item).
pub async fn by_key(
    ctx: &ResolverContext<'_>,
    model: &'static Model,
    entity: EntityId,
) -> Result<Option<Item>, ApiError> {
    let key = resolve::key_from_args(model, entity, ctx.args.as_index_map())?;
    let caller = access::caller(ctx);
    // Someone else's item, as its key shows: null, as if it did not exist, and nothing read
    // (neither the item nor the pages read ahead of it).
    if access::may_see_key(model, entity, &key.to_attribute_map(), &caller) == Some(false) {
        return Ok(None);
    }
    let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    let e = &model.entities[entity];
    let table = e.table;
    let ahead_sites: Vec<Site> = match ctx.data_opt::<PagesAhead>() {
        None => Vec::new(),
        Some(_) => e
            .connections
            .iter()
            .filter(|c| match &c.read {
                Read::Query { partition, .. } => matches!(
                    partition.from,
                    PartitionFrom::Parent(f) if e.key_fields.contains(&f)
                ),
                Read::Scan => false,
            })
            .map(|connection| Site {
                model,
                parent: Some(entity),
                connection,
            })
            .collect(),
    };
    let is_one = |item: &Item| {
        values::entity_of(model, &[entity], item).is_some()
            && access::may_see(model, entity, item, &caller)
    };
    if ahead_sites.is_empty() {
        return Ok(store.get(table, &key).await?.filter(is_one));
    }
    // The key attributes stand in for the item: they are all these connections read from it.
    let partial: Item = key.to_attribute_map();
    let parent_key = resolve::parent_text(model, entity, &partial).unwrap_or_default();
    let look = ctx.look_ahead();
    let mut reads = Vec::new();
    for site in ahead_sites {
        for selection in look.field(&site.connection.name).selection_fields() {
            let Ok(arguments) = selection.arguments() else {
                continue;
            };
            let partial = &partial;
            let projection = resolve::projection(site, &selection);
            reads.push(async move {
                let args: Args = arguments.iter().cloned().collect();
                let page =
                    resolve::connection_page(ctx, site, Some(partial), &args, projection.clone())
                        .await;
                (site.label(), arguments, projection, page)
            });
        }
    }
    let (found, pages) = futures_util::future::join(
        store.get(table, &key),
        futures_util::future::join_all(reads),
    )
    .await;
    let Some(found) = found?.filter(is_one) else {
        return Ok(None);
    };
    if let Some(ahead) = ctx.data_opt::<PagesAhead>() {
        for (label, arguments, projection, page) in pages {
            ahead.put(label, parent_key.clone(), arguments, projection, page);
        }
    }
    Ok(Some(found))
}

/// Reads a lookup's item through its index (see [`read_through_index`]), if the caller may see
/// it.
pub async fn through_index(
    ctx: &ResolverContext<'_>,
    model: &'static Model,
    lookup: &'static Lookup,
    via: &LookupIndex,
) -> Result<Option<Item>, ApiError> {
    let index = &model.table_of(lookup.entity).indexes[via.index];
    let given = resolve::key_args(
        model,
        lookup.entity,
        &via.arguments,
        index.key,
        ctx.args.as_index_map(),
    )?;
    let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    let item = read_through_index(store, model, lookup.entity, via, &given, &lookup.name).await?;
    let caller = access::caller(ctx);
    Ok(item.filter(|item| access::may_see(model, lookup.entity, item, &caller)))
}
