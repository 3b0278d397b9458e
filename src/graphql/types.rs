//! The GraphQL object types and their field resolvers.

use async_graphql::{Context, Enum, Object};

use super::{
    connection::{Connection, resolve},
    error::{ApiError, ApiResult},
    scalars::{DateTime, Decimal},
};
use crate::{
    cursor::{Binding, KeyValue},
    dynamo::{
        PurchaseFilter, Store,
        model::{self, ProductRecord, PurchaseRecord, UserRecord},
        tables::{BY_SKU, BY_SKU_START_KEY, PURCHASE_KEY},
    },
    pagination::PageArgs,
};

/// A customer.
#[derive(Debug, Clone)]
pub struct User(pub UserRecord);

#[Object]
impl User {
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
        let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
        let filter = PurchaseFilter {
            since: since.map(|t| t.0.timestamp_millis()),
            until: until.map(|t| t.0.timestamp_millis()),
            status: status.map(Into::into),
            min_amount: min_amount.map(|d| d.0),
        };
        if let (Some(since), Some(until)) = (filter.since, filter.until)
            && since > until
        {
            return Err(ApiError::BadUserInput(
                "`since` must not be later than `until`.".into(),
            ));
        }
        let binding = Binding::builder("User.purchases", &store.tables().purchases, None)
            .fixed("userId", KeyValue::S(self.0.user_id.clone()))
            .argument("since", filter.since.map(|ms| ms.to_string()).as_deref())
            .argument("until", filter.until.map(|ms| ms.to_string()).as_deref())
            .argument("status", filter.status.map(|s| s.as_str()))
            .argument("minAmount", filter.min_amount.as_ref().map(|n| n.as_str()))
            .finish();
        let user_id = &self.0.user_id;
        resolve(
            ctx,
            PageArgs {
                first,
                after,
                last,
                before,
            },
            binding,
            PURCHASE_KEY,
            order == Some(SortOrder::Desc),
            |read| store.user_purchases(user_id, &filter, read),
            Purchase,
        )
        .await
    }
}

/// A product for sale.
#[derive(Debug, Clone)]
pub struct Product(pub ProductRecord);

#[Object]
impl Product {
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
        resolve(
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
        .await
    }
}

/// One purchase of a product by a user.
#[derive(Debug, Clone)]
pub struct Purchase(pub PurchaseRecord);

#[Object]
impl Purchase {
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
