//! The GraphQL object types and their field resolvers.

use std::sync::Mutex;

use async_graphql::{Context, Enum, ID, InputType, Name, Object, Value as ConstValue};

use super::{
    connection::{Connection, resolve},
    error::{ApiError, ApiResult},
    limits::connection_cost,
    node::{loader, node_id},
    scalars::{DateTime, Decimal},
};
use crate::{
    cursor::{Binding, Key, KeyValue},
    dynamo::{
        PurchaseFilter, Store, StoreError,
        model::{self, ProductRecord, PurchaseRecord, UserRecord},
        tables::{BY_SKU, BY_SKU_START_KEY, PRODUCT_KEY, PURCHASE_KEY, TableKind, USER_KEY},
    },
    number::DynamoNumber,
    pagination::PageArgs,
};

/// A customer.
#[derive(Debug, Clone)]
pub struct User(pub UserRecord);

#[Object]
impl User {
    /// A global id: opaque, stable, and unique across all types; refetch with `node(id:)`.
    pub async fn id(&self) -> ID {
        node_id(TableKind::Users, &user_key(&self.0.user_id))
    }

    /// The user's id.
    async fn user_id(&self) -> &str {
        &self.0.user_id
    }

    /// The user's display name.
    async fn name(&self) -> &str {
        &self.0.name
    }

    /// The user's email address.
    async fn email(&self) -> &str {
        &self.0.email
    }

    /// When the user signed up.
    async fn created_at(&self) -> DateTime {
        DateTime(self.0.created_at)
    }

    /// The user's purchases in `purchasedAt` order: oldest first, or newest first with
    /// `order: DESC`.
    ///
    /// Page forward with `first` and `after` (pass the previous page's `pageInfo.endCursor`), or
    /// backward with `last` and `before` (pass `pageInfo.startCursor`). Page sizes default to 20
    /// and may be at most 100 (the server's settings may differ). `since` and `until` select a
    /// time range; `status` and `minAmount` filter. Every page but the last is full, and
    /// `hasNextPage` (forward) or `hasPreviousPage` (backward) is exact. Cursors belong to one
    /// user and one set of `since`, `until`, `status` and `minAmount`; they work in both orders.
    #[allow(clippy::too_many_arguments)]
    #[graphql(complexity = "connection_cost(first, last, child_complexity)")]
    async fn purchases(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "Only purchases at or after this time.")] since: Option<DateTime>,
        #[graphql(desc = "Only purchases at or before this time.")] until: Option<DateTime>,
        #[graphql(desc = "Only purchases in this status.")] status: Option<PurchaseStatus>,
        #[graphql(desc = "Only purchases of at least this amount.")] min_amount: Option<Decimal>,
        #[graphql(
            desc = "`ASC`: oldest first (the default, also when null); `DESC`: newest first.",
            default_with = "Some(SortOrder::Asc)"
        )]
        order: Option<SortOrder>,
        #[graphql(desc = "How many purchases to return after `after`, from 0 to the maximum.")]
        first: Option<i32>,
        #[graphql(desc = "Return purchases after this cursor from this same connection.")]
        after: Option<String>,
        #[graphql(desc = "How many purchases to return before `before`, from 0 to the maximum.")]
        last: Option<i32>,
        #[graphql(desc = "Return purchases before this cursor from this same connection.")]
        before: Option<String>,
    ) -> ApiResult<Connection<Purchase>> {
        // `Query.user` may have read this page already, while it read the user.
        let ahead = ctx.data_opt::<PagesAhead>().and_then(|pages| {
            let arguments = ctx.field().arguments().ok()?;
            pages.take(&self.0.user_id, &arguments)
        });
        let connection = match ahead {
            Some(page) => page?,
            None => {
                let args = PurchasesArgs {
                    since,
                    until,
                    status,
                    min_amount,
                    order,
                    page: PageArgs {
                        first,
                        after,
                        last,
                        before,
                    },
                };
                read_user_purchases(ctx, &self.0.user_id, args).await?
            }
        };
        prefetch_related(ctx, connection).await
    }
}

/// The arguments of `User.purchases`.
#[derive(Debug, Default)]
pub struct PurchasesArgs {
    since: Option<DateTime>,
    until: Option<DateTime>,
    status: Option<PurchaseStatus>,
    min_amount: Option<Decimal>,
    order: Option<SortOrder>,
    page: PageArgs,
}

impl PurchasesArgs {
    /// The arguments of one `purchases` selection, as async-graphql would give them to the
    /// resolver; `None` when one does not parse (the resolver then reports it).
    pub fn parse(arguments: &[(Name, ConstValue)]) -> Option<Self> {
        fn arg<T: InputType>(arguments: &[(Name, ConstValue)], name: &str) -> Option<T> {
            let value = arguments
                .iter()
                .find(|(n, _)| n.as_str() == name)
                .map(|(_, v)| v.clone());
            T::parse(value).ok()
        }
        Some(Self {
            since: arg(arguments, "since")?,
            until: arg(arguments, "until")?,
            status: arg(arguments, "status")?,
            min_amount: arg(arguments, "minAmount")?,
            // The field's default (`ASC`) when absent.
            order: match arguments.iter().any(|(n, _)| n.as_str() == "order") {
                true => arg(arguments, "order")?,
                false => Some(SortOrder::Asc),
            },
            page: PageArgs {
                first: arg(arguments, "first")?,
                after: arg(arguments, "after")?,
                last: arg(arguments, "last")?,
                before: arg(arguments, "before")?,
            },
        })
    }
}

/// Reads one page of a user's purchases.
pub async fn read_user_purchases(
    ctx: &Context<'_>,
    user_id: &str,
    args: PurchasesArgs,
) -> ApiResult<Connection<Purchase>> {
    let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
    let filter = PurchaseFilter {
        since: args.since.map(|t| t.0.timestamp_millis()),
        until: args.until.map(|t| t.0.timestamp_millis()),
        status: args.status.map(Into::into),
        min_amount: args.min_amount.map(|d| d.0),
    };
    if let (Some(since), Some(until)) = (filter.since, filter.until)
        && since > until
    {
        return Err(ApiError::BadUserInput(
            "`since` must not be later than `until`.".into(),
        ));
    }
    let binding = user_purchases_binding(store, user_id, &filter);
    resolve(
        ctx,
        args.page,
        binding,
        PURCHASE_KEY,
        args.order == Some(SortOrder::Desc),
        |read| store.user_purchases(user_id, &filter, read),
        Purchase,
    )
    .await
}

/// Pages of `User.purchases` that `Query.user` read at the same time as the user, so that the
/// page does not wait for the user's GetItem: one request's worth, each taken once by the
/// `purchases` field it was read for (same user, same arguments).
#[derive(Default)]
pub struct PagesAhead(Mutex<Vec<PageAhead>>);

type PageAhead = (
    String,
    Vec<(Name, ConstValue)>,
    ApiResult<Connection<Purchase>>,
);

impl std::fmt::Debug for PagesAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PagesAhead").finish_non_exhaustive()
    }
}

impl PagesAhead {
    /// Keeps a page read for `user_id` with `arguments`.
    pub fn put(
        &self,
        user_id: &str,
        arguments: Vec<(Name, ConstValue)>,
        page: ApiResult<Connection<Purchase>>,
    ) {
        self.lock().push((user_id.to_owned(), arguments, page));
    }

    fn take(
        &self,
        user_id: &str,
        arguments: &[(Name, ConstValue)],
    ) -> Option<ApiResult<Connection<Purchase>>> {
        let mut pages = self.lock();
        let at = pages
            .iter()
            .position(|(user, args, _)| user == user_id && args.as_slice() == arguments)?;
        Some(pages.swap_remove(at).2)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PageAhead>> {
        // The list stays valid even if a holder panicked.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A product for sale.
#[derive(Debug, Clone)]
pub struct Product(pub ProductRecord);

#[Object]
impl Product {
    /// A global id: opaque, stable, and unique across all types; refetch with `node(id:)`.
    pub async fn id(&self) -> ID {
        node_id(
            TableKind::Products,
            &Key::new(PRODUCT_KEY, vec![KeyValue::S(self.0.sku.clone())])
                .unwrap_or_else(|_| unreachable!("one S value fits the Products key")),
        )
    }

    /// The product's stock-keeping unit, its unique id.
    async fn sku(&self) -> &str {
        &self.0.sku
    }

    /// The product's display name.
    async fn name(&self) -> &str {
        &self.0.name
    }

    /// The category the product is listed in.
    async fn category(&self) -> &str {
        &self.0.category
    }

    /// The unit price, as an exact decimal string such as `"19.99"`.
    async fn price(&self) -> Decimal {
        Decimal(self.0.price.clone())
    }

    /// Everyone's purchases of this product in `purchasedAt` order: oldest first, or newest
    /// first with `order: DESC`. Pages like `User.purchases`.
    #[graphql(complexity = "connection_cost(first, last, child_complexity)")]
    async fn purchases(
        &self,
        ctx: &Context<'_>,
        #[graphql(
            desc = "`ASC`: oldest first (the default, also when null); `DESC`: newest first.",
            default_with = "Some(SortOrder::Asc)"
        )]
        order: Option<SortOrder>,
        #[graphql(desc = "How many purchases to return after `after`, from 0 to the maximum.")]
        first: Option<i32>,
        #[graphql(desc = "Return purchases after this cursor from this same connection.")]
        after: Option<String>,
        #[graphql(desc = "How many purchases to return before `before`, from 0 to the maximum.")]
        last: Option<i32>,
        #[graphql(desc = "Return purchases before this cursor from this same connection.")]
        before: Option<String>,
    ) -> ApiResult<Connection<Purchase>> {
        let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
        let binding =
            Binding::builder("Product.purchases", &store.tables().purchases, Some(BY_SKU))
                .fixed("sku", KeyValue::S(self.0.sku.clone()))
                .finish();
        let sku = &self.0.sku;
        let connection = resolve(
            ctx,
            PageArgs {
                first,
                after,
                last,
                before,
            },
            binding,
            BY_SKU_START_KEY,
            order == Some(SortOrder::Desc),
            |read| store.product_purchases(sku, read),
            Purchase,
        )
        .await?;
        prefetch_related(ctx, connection).await
    }
}

/// One purchase of a product by a user.
#[derive(Debug, Clone)]
pub struct Purchase(pub PurchaseRecord);

#[Object]
impl Purchase {
    /// A global id: opaque, stable, and unique across all types; refetch with `node(id:)`.
    pub async fn id(&self) -> ID {
        node_id(TableKind::Purchases, &self.key())
    }

    /// The user who made the purchase. Requested for a whole page, all users and products are
    /// read together in one batch.
    async fn user(&self, ctx: &Context<'_>) -> ApiResult<User> {
        let loader = loader(ctx)?;
        let item = loader
            .load_one((TableKind::Users, user_key(&self.0.user_id)))
            .await?
            .flatten();
        let Some(item) = item else {
            tracing::error!(
                user_id = self.0.user_id,
                "a purchase refers to a missing user"
            );
            return Err(ApiError::Internal);
        };
        let record = UserRecord::from_item(&item).map_err(|source| StoreError::MalformedItem {
            table: "Users".into(),
            source,
        })?;
        Ok(User(record))
    }

    /// The product bought, or null if it is no longer listed.
    async fn product(&self, ctx: &Context<'_>) -> ApiResult<Option<Product>> {
        let loader = loader(ctx)?;
        let key = Key::new(PRODUCT_KEY, vec![KeyValue::S(self.0.sku.clone())])
            .map_err(|_| ApiError::Internal)?;
        let Some(item) = loader.load_one((TableKind::Products, key)).await?.flatten() else {
            return Ok(None);
        };
        let record =
            ProductRecord::from_item(&item).map_err(|source| StoreError::MalformedItem {
                table: "Products".into(),
                source,
            })?;
        Ok(Some(Product(record)))
    }

    /// The id of the user who made the purchase.
    async fn user_id(&self) -> &str {
        &self.0.user_id
    }

    /// When the purchase was made. Unique among one user's purchases, and their sort order.
    async fn purchased_at(&self) -> DateTime {
        DateTime(self.0.purchased_at)
    }

    /// The stock-keeping unit of the product bought.
    async fn sku(&self) -> &str {
        &self.0.sku
    }

    /// How many units were bought (at least 1).
    async fn quantity(&self) -> i32 {
        self.0.quantity
    }

    /// The total charged, as an exact decimal string such as `"19.99"`.
    async fn amount(&self) -> Decimal {
        Decimal(self.0.amount.clone())
    }

    /// Where the purchase is in its lifecycle.
    async fn status(&self) -> PurchaseStatus {
        self.0.status.into()
    }
}

impl Purchase {
    fn key(&self) -> Key {
        Key::new(
            PURCHASE_KEY,
            vec![
                KeyValue::S(self.0.user_id.clone()),
                KeyValue::N(DynamoNumber::from_i64(
                    self.0.purchased_at.timestamp_millis(),
                )),
            ],
        )
        .unwrap_or_else(|_| unreachable!("S and N values fit the Purchases key"))
    }
}

/// The connection identity of a user's purchases under `filter` (the order is not part of it).
/// `createPurchase` seals its edge with the unfiltered one.
pub fn user_purchases_binding(store: &Store, user_id: &str, filter: &PurchaseFilter) -> Binding {
    Binding::builder("User.purchases", &store.tables().purchases, None)
        .fixed("userId", KeyValue::S(user_id.to_owned()))
        .argument("since", filter.since.map(|ms| ms.to_string()).as_deref())
        .argument("until", filter.until.map(|ms| ms.to_string()).as_deref())
        .argument("status", filter.status.map(|s| s.as_str()))
        .argument("minAmount", filter.min_amount.as_ref().map(|n| n.as_str()))
        .finish()
}

/// When the query selects `user` or `product` on a page's purchases, loads them all in one batch
/// before the fields resolve; each field then reads the request's loader cache. This makes one
/// BatchGetItem per page (per 100 keys) however field resolution is scheduled.
async fn prefetch_related(
    ctx: &Context<'_>,
    connection: Connection<Purchase>,
) -> ApiResult<Connection<Purchase>> {
    let look = ctx.look_ahead();
    let selected = |field: &str| {
        look.field("edges").field("node").field(field).exists()
            || look.field("nodes").field(field).exists()
    };
    let (users, products) = (selected("user"), selected("product"));
    if !users && !products {
        return Ok(connection);
    }
    let mut keys = Vec::new();
    for purchase in connection.page_nodes() {
        let user = (TableKind::Users, user_key(&purchase.0.user_id));
        let product = (TableKind::Products, product_key(&purchase.0.sku));
        for (wanted, key) in [(users, user), (products, product)] {
            if wanted && !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    loader(ctx)?.load_many(keys).await?;
    Ok(connection)
}

pub(super) fn product_key(sku: &str) -> Key {
    Key::new(PRODUCT_KEY, vec![KeyValue::S(sku.to_owned())])
        .unwrap_or_else(|_| unreachable!("one S value fits the Products key"))
}

pub(super) fn user_key(user_id: &str) -> Key {
    Key::new(USER_KEY, vec![KeyValue::S(user_id.to_owned())])
        .unwrap_or_else(|_| unreachable!("one S value fits the Users key"))
}

/// The order of a connection's items by their sort key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Enum)]
pub enum SortOrder {
    /// Ascending: oldest or lowest first.
    #[default]
    Asc,
    /// Descending: newest or highest first.
    Desc,
}

/// Where a purchase is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
pub enum PurchaseStatus {
    /// Placed, not yet paid.
    Pending,
    /// Paid, not yet shipped.
    Paid,
    /// On its way or delivered.
    Shipped,
    /// Paid back to the user.
    Refunded,
}

impl From<PurchaseStatus> for model::PurchaseStatus {
    fn from(status: PurchaseStatus) -> Self {
        match status {
            PurchaseStatus::Pending => Self::Pending,
            PurchaseStatus::Paid => Self::Paid,
            PurchaseStatus::Shipped => Self::Shipped,
            PurchaseStatus::Refunded => Self::Refunded,
        }
    }
}

impl From<model::PurchaseStatus> for PurchaseStatus {
    fn from(status: model::PurchaseStatus) -> Self {
        match status {
            model::PurchaseStatus::Pending => Self::Pending,
            model::PurchaseStatus::Paid => Self::Paid,
            model::PurchaseStatus::Shipped => Self::Shipped,
            model::PurchaseStatus::Refunded => Self::Refunded,
        }
    }
}
