//! Reading one item through an index, by its exact index key: a Query of at most two items of
//! the entity (one is the answer; two are a fault in the data, never an arbitrary pick),
//! followed by a read of the item itself when the index does not hold every attribute. Root
//! lookups through an index (`lookup`) and relations through an index (`resolve`) both read
//! this way; whether the caller may see the item is theirs to decide.

use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;

use super::{error::ApiError, values};
use crate::{
    cursor::Key,
    dynamo::{Item, Keep, ReadPlan, ReadSpec, SortKeyCondition, Store},
    model::{EntityId, FieldId, LookupIndex, Model, Projection},
};

/// Items of the entity that a read through an index evaluates at most, past items of other
/// entities under the same index key, before it answers with what it found.
const INDEX_LOOKUP_BUDGET: usize = 100;

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
        expected: Vec::new(),
        keep: Some(Keep(Arc::new(move |item: &Item| {
            values::entity_of(model, &[entity], item).map(|_| 0)
        }))),
        projection: None,
        consistent: false,
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
