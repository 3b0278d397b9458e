//! Relay object identification: opaque global ids, and the DataLoader that turns every by-key
//! read in a request (`node`, `nodes`, relation fields, existence checks) into as few
//! BatchGetItem calls as possible.

use std::{collections::HashMap, sync::Arc};

use async_graphql::{
    Context,
    dataloader::{DataLoader, HashMapCache, Loader},
    dynamic::{FieldValue, ResolverContext},
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};

use super::{access, error::ApiError, values};
use crate::{
    cursor::{Key, KeyValue},
    dynamo::{Item, Store, StoreError},
    model::{EntityId, Model, TableId},
    telemetry,
};

/// Longest id accepted before decoding.
const MAX_ID_LEN: usize = 4096;

/// The global id of an item of `entity` with primary key `key`: base64url of the entity's type
/// tag and the key's exact typed values. Stable for ever (not sealed, so key rotation cannot
/// change it); it holds nothing a client cannot already read from the object itself.
pub fn node_id(model: &Model, entity: EntityId, key: &Key) -> String {
    let mut bytes = model.entities[entity].id_tag.as_bytes().to_vec();
    bytes.extend_from_slice(&key.to_bytes());
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The entity and primary key a global id names, or `None` for a malformed id. No entity's tag
/// begins another's (the model checks it), so at most one entity matches.
pub fn parse_node_id(model: &Model, id: &str) -> Option<(EntityId, Key)> {
    if id.len() > MAX_ID_LEN {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(id).ok()?;
    let entity = model
        .entities
        .iter()
        .position(|e| bytes.starts_with(e.id_tag.as_bytes()))?;
    let tag = model.entities[entity].id_tag.len();
    let key = Key::from_bytes(&bytes[tag..], model.table_of(entity).key).ok()?;
    // A key built from templates must be one this entity's templates write.
    let e = &model.entities[entity];
    let fits = model.table_of(entity).key.iter().all(|attr| {
        match (e.template_on(attr.name), key.get(attr.name)) {
            (Some(t), Some(KeyValue::S(s))) => t.template.matches(s),
            (Some(_), _) => false,
            (None, _) => true,
        }
    });
    (fits && key.fits_dynamodb()).then_some((entity, key))
}

/// Loads the items of `keys`, in order, as the objects of their entities, with `None` for those
/// that do not exist, are not of their entity, or that the caller may not see (and for `None`
/// keys): what `node`, `nodes` and `_entities` answer.
pub async fn load<'a>(
    ctx: &ResolverContext<'_>,
    model: &'static Model,
    keys: Vec<Option<(EntityId, Key)>>,
) -> Result<Vec<Option<FieldValue<'a>>>, ApiError> {
    let caller = access::caller(ctx);
    // Ids of someone else's items, as their keys show, are null without being read.
    let readable: Vec<bool> = keys
        .iter()
        .map(|k| {
            k.as_ref().is_some_and(|(e, key)| {
                access::may_see_key(model, *e, &key.to_attribute_map(), &caller) != Some(false)
            })
        })
        .collect();
    let items: HashMap<_, _> = loader(ctx)?
        .load_many(
            keys.iter()
                .zip(&readable)
                .filter(|(_, readable)| **readable)
                .filter_map(|(k, _)| k.as_ref())
                .map(|(e, key)| (model.entities[*e].table, key.clone())),
        )
        .await?;
    Ok(keys
        .into_iter()
        .map(|k| {
            let (entity, key) = k?;
            let table = model.entities[entity].table;
            // An id names a key; the item there must also be of the id's entity, and one the
            // caller may see.
            items
                .get(&(table, key))
                .cloned()
                .flatten()
                .filter(|item| values::entity_of(model, &[entity], item).is_some())
                .filter(|item| access::may_see(model, entity, item, &caller))
                .map(|item| {
                    FieldValue::owned_any(item).with_type(model.entities[entity].name.as_str())
                })
        })
        .collect())
}

/// The per-request loader: batches, and remembers what it loaded for the rest of the request.
pub type RequestLoader = DataLoader<ItemLoader, HashMapCache>;

/// A fresh loader for one request (its cache must not outlive the request). Its batches run as
/// tasks of their own, in the request's span and trace (so that their DynamoDB calls stay in
/// the request's logs and trace, and follow its sampling).
pub fn request_loader(store: &Store) -> RequestLoader {
    DataLoader::with_cache(
        ItemLoader(store.clone()),
        |batch| tokio::spawn(telemetry::in_request(batch)),
        HashMapCache::default(),
    )
}

/// The request's loader.
pub fn loader<'a>(ctx: &Context<'a>) -> Result<&'a RequestLoader, ApiError> {
    ctx.data::<RequestLoader>().map_err(|_| ApiError::Internal)
}

/// Loads items by primary key, batching every key requested while a query resolves into
/// BatchGetItem calls of up to 100 keys.
#[derive(Debug)]
pub struct ItemLoader(pub Store);

/// Every requested key gets a value, `None` when no item exists, so the request's cache also
/// remembers absence and a missing item is not asked for again.
impl Loader<(TableId, Key)> for ItemLoader {
    type Value = Option<Item>;
    type Error = Arc<StoreError>;

    async fn load(
        &self,
        keys: &[(TableId, Key)],
    ) -> Result<HashMap<(TableId, Key), Option<Item>>, Self::Error> {
        let mut found = self.0.batch_get(keys).await.map_err(Arc::new)?;
        Ok(keys
            .iter()
            .map(|key| (key.clone(), found.remove(key)))
            .collect())
    }
}
