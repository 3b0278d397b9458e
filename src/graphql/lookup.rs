//! Root lookups: one item by the table's key (a GetItem, with the pages of its connections read
//! at the same time), or through an index (a Query of at most two items: one is the answer, two
//! are a fault in the data, never an arbitrary pick), which relations through an index share.

use std::sync::Arc;

use async_graphql::{dynamic::ResolverContext, futures_util};
use aws_sdk_dynamodb::types::AttributeValue;

use super::{
    access,
    error::ApiError,
    resolve::{self, Args, PagesAhead, Site},
    values,
};
use crate::{
    cursor::Key,
    dynamo::{Item, Keep, ReadPlan, ReadSpec, SortKeyCondition, Store},
    model::{EntityId, FieldId, Lookup, LookupIndex, Model, PartitionFrom, Projection, Read},
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

/// Items of the entity that a lookup through an index evaluates at most, past items of other
/// entities under the same index key, before it answers with what it found.
const INDEX_LOOKUP_BUDGET: usize = 100;

/// Reads a lookup's item through its index (see [`read_through_index`]), if the caller may see
/// it.
pub async fn through_index(
    ctx: &ResolverContext<'_>,
    model: &'static Model,
    lookup: &'static Lookup,
    via: &LookupIndex,
) -> Result<Option<Item>, ApiError> {
    let given = resolve::key_args(
        model,
        lookup.entity,
        &via.arguments,
        ctx.args.as_index_map(),
    )?;
    let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    let item = read_through_index(store, model, lookup.entity, via, &given, &lookup.name).await?;
    let caller = access::caller(ctx);
    Ok(item.filter(|item| access::may_see(model, lookup.entity, item, &caller)))
}

/// The item of `entity` under the index key that the values `given` (by field) make through
/// `via`, exactly (the partition key, and the sort key when the index has one), keeping items
/// of the entity only; `what` names the lookup or relation in the log. An index that does not
/// hold every attribute is followed by a read of the item itself. Whether the caller may see
/// it is the caller's to decide.
pub async fn read_through_index(
    store: &Store,
    model: &'static Model,
    entity: EntityId,
    via: &LookupIndex,
    given: &[(FieldId, AttributeValue)],
    what: &str,
) -> Result<Option<Item>, ApiError> {
    let e = &model.entities[entity];
    let table = model.table_of(entity);
    let index = &table.indexes[via.index];
    let value = |f| given.iter().find(|(g, _)| *g == f).map(|(_, v)| v.clone());
    let key_value = |name: &str| match e.template_on(name) {
        Some(template) => values::render(template, &e.fields, value).map(AttributeValue::S),
        None => value(e.field_on(name)?),
    };
    let pk = index.key[0];
    let partition = key_value(pk.name).ok_or(ApiError::Internal)?;
    let sort = match index.key.get(1) {
        Some(sk) => {
            let v = key_value(sk.name).ok_or(ApiError::Internal)?;
            Some((sk.name, SortKeyCondition::Range(Some(v.clone()), Some(v))))
        }
        None => None,
    };
    let spec = ReadSpec {
        table: store.tables().name(e.table),
        index: Some(&index.name),
        shape: index.start_key,
        partition: Some((pk.name, partition)),
        sort,
        filters: Vec::new(),
        keep: Some(Keep(Arc::new(move |item: &Item| {
            values::entity_of(model, &[entity], item).map(|_| 0)
        }))),
        projection: None,
    };
    let plan = ReadPlan {
        start: None,
        ascending: true,
        want: 2,
        budget: INDEX_LOOKUP_BUDGET,
    };
    let mut rows = store.read_page(spec, plan).await?.rows;
    if rows.len() > 1 {
        tracing::error!(
            what,
            index = index.name,
            "more than one item of the entity holds the index key it was given"
        );
        return Err(ApiError::Internal);
    }
    let Some(row) = rows.pop() else {
        return Ok(None);
    };
    if index.projection == Projection::All {
        return Ok(Some(row.record));
    }
    let key = Key::from_item(&row.record, table.key).map_err(|_| ApiError::Internal)?;
    Ok(store
        .get(e.table, &key)
        .await?
        .filter(|item| values::entity_of(model, &[entity], item).is_some()))
}
