//! Mutations: create users, products and purchases, and delete purchases. Inputs are validated
//! before any write, and every write is conditional, so nothing is ever overwritten.

use std::cmp::Ordering;

use async_graphql::{
    Context, ID, InputObject, Object, SimpleObject,
    connection::{Edge, EmptyFields},
};
use chrono::Utc;

use super::{
    error::{ApiError, ApiResult, check_key_value},
    node::{loader, node_id, parse_node_id},
    scalars::{DateTime, Decimal},
    types::{
        Product, Purchase, PurchaseStatus, User, product_key, user_key, user_purchases_binding,
    },
};
use crate::{
    cursor::{CursorCodec, Key, KeyValue},
    dynamo::{
        PurchaseFilter, Store,
        model::{ProductRecord, PurchaseRecord, UserRecord},
        tables::{PURCHASE_KEY, TableKind},
    },
    number::DynamoNumber,
};

/// How many later milliseconds `createPurchase` tries when the current one is taken.
const CLOCK_RETRIES: i64 = 10;

/// The root of every mutation.
#[derive(Debug)]
pub struct MutationRoot;

/// A new user.
#[derive(Debug, InputObject)]
pub struct CreateUserInput {
    /// The new user's id; must not be taken.
    pub user_id: String,
    /// Display name.
    pub name: String,
    /// Email address.
    pub email: String,
}

/// The created user.
#[derive(Debug, SimpleObject)]
pub struct CreateUserPayload {
    /// The user as stored.
    pub user: User,
}

/// A new product.
#[derive(Debug, InputObject)]
pub struct CreateProductInput {
    /// The new product's SKU; must not be taken.
    pub sku: String,
    /// Display name.
    pub name: String,
    /// Category to list it in.
    pub category: String,
    /// Unit price, at least 0.
    pub price: Decimal,
}

/// The created product.
#[derive(Debug, SimpleObject)]
pub struct CreateProductPayload {
    /// The product as stored.
    pub product: Product,
}

/// A new purchase.
#[derive(Debug, InputObject)]
pub struct CreatePurchaseInput {
    /// The buyer; must exist.
    pub user_id: String,
    /// The product; must exist.
    pub sku: String,
    /// Units bought, at least 1.
    pub quantity: i32,
    /// Total charged, at least 0.
    pub amount: Decimal,
    /// Lifecycle state; `PENDING` when omitted.
    pub status: Option<PurchaseStatus>,
    /// When it was bought. Omit it to use the server's clock: if this user already has a
    /// purchase at that millisecond, the next free millisecond is used. A given time that this
    /// user already has a purchase at is rejected.
    pub purchased_at: Option<DateTime>,
}

/// The created purchase, and its edge for inserting it into a connection.
#[derive(SimpleObject)]
pub struct CreatePurchasePayload {
    /// The purchase as stored.
    pub purchase: Purchase,
    /// The purchase with a cursor valid in the buyer's unfiltered `purchases` connection (in
    /// either order), for Relay's `@appendEdge`/`@prependEdge` or an Apollo cache update.
    pub purchase_edge: Edge<String, Purchase, EmptyFields>,
}

/// Which purchase to delete.
#[derive(Debug, InputObject)]
pub struct DeletePurchaseInput {
    /// The purchase's global `id`.
    pub id: ID,
}

/// The deleted purchase.
#[derive(Debug, SimpleObject)]
pub struct DeletePurchasePayload {
    /// The id of the purchase that was deleted, for Relay's `@deleteRecord`.
    pub deleted_purchase_id: ID,
}

fn bad(message: &str) -> ApiError {
    ApiError::BadUserInput(message.to_owned())
}

fn non_empty(value: &str, field: &str) -> ApiResult<()> {
    if value.trim().is_empty() {
        return Err(ApiError::BadUserInput(format!(
            "`{field}` must not be empty."
        )));
    }
    Ok(())
}

fn not_negative(value: &DynamoNumber, field: &str) -> ApiResult<()> {
    let zero = DynamoNumber::from_i64(0);
    if value.numeric_cmp(&zero) == Ordering::Less {
        return Err(ApiError::BadUserInput(format!(
            "`{field}` must be at least 0."
        )));
    }
    Ok(())
}

impl std::fmt::Debug for CreatePurchasePayload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatePurchasePayload")
            .field("purchase", &self.purchase)
            .field("cursor", &self.purchase_edge.cursor)
            .finish()
    }
}

/// The entry points for changing data.
#[Object(name = "Mutation")]
impl MutationRoot {
    /// Creates a user. Fails with `BAD_USER_INPUT` if the id is taken.
    async fn create_user(
        &self,
        ctx: &Context<'_>,
        input: CreateUserInput,
    ) -> ApiResult<CreateUserPayload> {
        let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
        check_key_value(&input.user_id, "userId")?;
        non_empty(&input.name, "name")?;
        if !input.email.contains('@') {
            return Err(bad("`email` must be an email address."));
        }
        let record = UserRecord {
            user_id: input.user_id,
            name: input.name,
            email: input.email,
            created_at: millisecond_now(),
        };
        if !store.put_new(TableKind::Users, record.to_item()).await? {
            return Err(bad("A user with this `userId` already exists."));
        }
        Ok(CreateUserPayload { user: User(record) })
    }

    /// Creates a product. Fails with `BAD_USER_INPUT` if the SKU is taken.
    async fn create_product(
        &self,
        ctx: &Context<'_>,
        input: CreateProductInput,
    ) -> ApiResult<CreateProductPayload> {
        let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
        check_key_value(&input.sku, "sku")?;
        non_empty(&input.name, "name")?;
        check_key_value(&input.category, "category")?;
        not_negative(&input.price.0, "price")?;
        let record = ProductRecord {
            sku: input.sku,
            name: input.name,
            category: input.category,
            price: input.price.0,
        };
        if !store.put_new(TableKind::Products, record.to_item()).await? {
            return Err(bad("A product with this `sku` already exists."));
        }
        Ok(CreateProductPayload {
            product: Product(record),
        })
    }

    /// Records a purchase of an existing product by an existing user. Never overwrites
    /// another purchase (see `purchasedAt`).
    async fn create_purchase(
        &self,
        ctx: &Context<'_>,
        input: CreatePurchaseInput,
    ) -> ApiResult<CreatePurchasePayload> {
        let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
        let codec = ctx.data::<CursorCodec>().map_err(|_| ApiError::Internal)?;
        check_key_value(&input.user_id, "userId")?;
        check_key_value(&input.sku, "sku")?;
        if input.quantity < 1 {
            return Err(bad("`quantity` must be at least 1."));
        }
        not_negative(&input.amount.0, "amount")?;
        let user = (TableKind::Users, user_key(&input.user_id));
        let product = (TableKind::Products, product_key(&input.sku));
        let found = loader(ctx)?
            .load_many([user.clone(), product.clone()])
            .await?;
        if found.get(&user).is_none_or(Option::is_none) {
            return Err(bad("No user has this `userId`."));
        }
        if found.get(&product).is_none_or(Option::is_none) {
            return Err(bad("No product has this `sku`."));
        }
        let (first_try, retries) = match input.purchased_at {
            Some(at) => (at.0, 0),
            None => (millisecond_now(), CLOCK_RETRIES),
        };
        let mut record = PurchaseRecord {
            user_id: input.user_id,
            purchased_at: first_try,
            sku: input.sku,
            quantity: input.quantity,
            amount: input.amount.0,
            status: input.status.unwrap_or(PurchaseStatus::Pending).into(),
        };
        let mut attempt = 0;
        while !store
            .put_new(TableKind::Purchases, record.to_item())
            .await?
        {
            if attempt >= retries {
                return Err(bad(
                    "This user already has a purchase at this `purchasedAt`.",
                ));
            }
            attempt += 1;
            record.purchased_at += chrono::Duration::milliseconds(1);
        }
        let key = Key::new(
            PURCHASE_KEY,
            vec![
                KeyValue::S(record.user_id.clone()),
                KeyValue::N(DynamoNumber::from_i64(
                    record.purchased_at.timestamp_millis(),
                )),
            ],
        )
        .map_err(|_| ApiError::Internal)?;
        let binding = user_purchases_binding(store, &record.user_id, &PurchaseFilter::default());
        let cursor = codec.encode(&key, &binding);
        Ok(CreatePurchasePayload {
            purchase: Purchase(record.clone()),
            purchase_edge: Edge::new(cursor, Purchase(record)),
        })
    }

    /// Deletes a purchase by its global id. Fails with `BAD_USER_INPUT` if there is no such
    /// purchase.
    async fn delete_purchase(
        &self,
        ctx: &Context<'_>,
        input: DeletePurchaseInput,
    ) -> ApiResult<DeletePurchasePayload> {
        let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
        let Some((TableKind::Purchases, key)) = parse_node_id(&input.id) else {
            return Err(bad("The id is not a purchase id."));
        };
        if !store.delete_existing(TableKind::Purchases, &key).await? {
            return Err(bad("No purchase has this id."));
        }
        Ok(DeletePurchasePayload {
            deleted_purchase_id: node_id(TableKind::Purchases, &key),
        })
    }
}

/// Now, truncated to the millisecond (the precision of stored times).
fn millisecond_now() -> chrono::DateTime<Utc> {
    let now = Utc::now().timestamp_millis();
    chrono::DateTime::from_timestamp_millis(now).unwrap_or_default()
}
