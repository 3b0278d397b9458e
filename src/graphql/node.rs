//! Relay object identification: opaque global ids, the `Node` interface, and the DataLoader that
//! turns every by-key read in a request (`node`, `nodes`, `Purchase.user`, `Purchase.product`)
//! into as few BatchGetItem calls as possible.

use std::{collections::HashMap, sync::Arc};

use async_graphql::{
    Context, ID, Interface,
    dataloader::{DataLoader, HashMapCache, Loader},
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};

use super::types::{Product, Purchase, User};
use crate::{
    cursor::Key,
    dynamo::{
        Store, StoreError,
        model::{Item, ProductRecord, PurchaseRecord, UserRecord},
        tables::TableKind,
    },
};

/// Longest id accepted before decoding.
const MAX_ID_LEN: usize = 4096;

/// An object with a global id, refetchable with `node(id:)`.
#[derive(Debug, Interface)]
#[graphql(field(
    name = "id",
    ty = "ID",
    desc = "A global id: opaque, stable, and unique across all types."
))]
pub enum Node {
    /// A user.
    User(User),
    /// A product.
    Product(Product),
    /// A purchase.
    Purchase(Purchase),
}

/// The global id of the item with primary key `key` in the `kind` table: base64url of a type
/// byte and the key's exact typed values. Stable for ever (not sealed, so key rotation cannot
/// change it); it holds nothing a client cannot already read from the object itself.
pub fn node_id(kind: TableKind, key: &Key) -> ID {
    let mut bytes = vec![kind_byte(kind)];
    bytes.extend_from_slice(&key.to_bytes());
    ID(URL_SAFE_NO_PAD.encode(bytes))
}

/// The table and primary key a global id names, or `None` for a malformed id.
pub fn parse_node_id(id: &str) -> Option<(TableKind, Key)> {
    if id.len() > MAX_ID_LEN {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(id).ok()?;
    let (&kind, key) = bytes.split_first()?;
    let kind = [TableKind::Users, TableKind::Products, TableKind::Purchases]
        .into_iter()
        .find(|k| kind_byte(*k) == kind)?;
    let key = Key::from_bytes(key, kind.key_shape()).ok()?;
    key.fits_dynamodb().then_some((kind, key))
}

fn kind_byte(kind: TableKind) -> u8 {
    match kind {
        TableKind::Users => b'U',
        TableKind::Products => b'R',
        TableKind::Purchases => b'P',
    }
}

/// The per-request loader: batches, and remembers what it loaded for the rest of the request.
pub type RequestLoader = DataLoader<ItemLoader, HashMapCache>;

/// A fresh loader for one request (its cache must not outlive the request).
pub fn request_loader(store: &Store) -> RequestLoader {
    DataLoader::with_cache(
        ItemLoader(store.clone()),
        tokio::spawn,
        HashMapCache::default(),
    )
}

/// The request's loader.
pub fn loader<'a>(ctx: &Context<'a>) -> Result<&'a RequestLoader, super::error::ApiError> {
    ctx.data::<RequestLoader>()
        .map_err(|_| super::error::ApiError::Internal)
}

/// Loads items by primary key, batching every key requested while a query resolves into
/// BatchGetItem calls of up to 100 keys.
#[derive(Debug)]
pub struct ItemLoader(pub Store);

/// Every requested key gets a value, `None` when no item exists, so the request's cache also
/// remembers absence and a missing item is not asked for again.
impl Loader<(TableKind, Key)> for ItemLoader {
    type Value = Option<Item>;
    type Error = Arc<StoreError>;

    async fn load(
        &self,
        keys: &[(TableKind, Key)],
    ) -> Result<HashMap<(TableKind, Key), Option<Item>>, Self::Error> {
        let mut found = self.0.batch_get(keys).await.map_err(Arc::new)?;
        Ok(keys
            .iter()
            .map(|key| (key.clone(), found.remove(key)))
            .collect())
    }
}

/// The typed object for a loaded item.
pub fn to_node(kind: TableKind, item: &Item) -> Result<Node, StoreError> {
    let malformed = |source| StoreError::MalformedItem {
        table: format!("{kind:?}"),
        source,
    };
    Ok(match kind {
        TableKind::Users => Node::User(User(UserRecord::from_item(item).map_err(malformed)?)),
        TableKind::Products => {
            Node::Product(Product(ProductRecord::from_item(item).map_err(malformed)?))
        }
        TableKind::Purchases => Node::Purchase(Purchase(
            PurchaseRecord::from_item(item).map_err(malformed)?,
        )),
    })
}
