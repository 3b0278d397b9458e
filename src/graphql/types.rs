//! The GraphQL object types and their field resolvers.

use async_graphql::{Context, Enum, Object};

use super::{
    connection::Connection,
    error::{ApiError, ApiResult},
    scalars::{DateTime, Decimal},
};
use crate::{
    cursor::{Binding, CursorCodec, KeyValue},
    dynamo::{
        Store,
        model::{self, PurchaseRecord, UserRecord},
        tables::PURCHASE_KEY,
    },
    pagination::PageLimits,
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

    /// The user's purchases, oldest first.
    ///
    /// Page with `first` (default and maximum are set by the server, normally 20 and 100) and
    /// pass the previous page's `pageInfo.endCursor` as `after`. Every page but the last is full,
    /// and `hasNextPage` is exact: it is never true on the last page.
    async fn purchases(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "How many purchases to return, from 0 to the server's maximum.")]
        first: Option<i32>,
        #[graphql(
            desc = "Return purchases after this cursor: an `endCursor` or edge `cursor` \
                          from this same connection."
        )]
        after: Option<String>,
    ) -> ApiResult<Connection<Purchase>> {
        let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
        let limits = ctx.data::<PageLimits>().map_err(|_| ApiError::Internal)?;
        let codec = ctx.data::<CursorCodec>().map_err(|_| ApiError::Internal)?;
        let size = limits.forward(first)?;
        let binding = Binding::builder("User.purchases", &store.tables().purchases, None)
            .fixed("userId", KeyValue::S(self.0.user_id.clone()))
            .finish();
        let after = after
            .map(|s| {
                codec
                    .decode(&s, PURCHASE_KEY, &binding)
                    .map_err(|_| ApiError::invalid_cursor())
            })
            .transpose()?;
        let rows = store
            .user_purchases(&self.0.user_id, after.as_ref(), size.fetch_count())
            .await?;
        Ok(Connection::forward(
            size.finish(rows),
            codec,
            &binding,
            Purchase,
        ))
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
