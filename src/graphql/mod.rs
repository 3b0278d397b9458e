//! The GraphQL schema: root objects, types, connections, scalars and the error boundary.

pub mod connection;
pub mod documents;
pub mod error;
pub mod limits;
pub mod mutation;
pub mod node;
pub mod scalars;
pub mod types;

use async_graphql::{
    Context, EmptySubscription, ID, Object, SDLExportOptions, Schema, SchemaBuilder,
    extensions::apollo_persisted_queries::{ApolloPersistedQueries, LruCacheStorage},
    futures_util,
};

use std::cmp::Ordering;

use self::{
    connection::{Connection, resolve},
    error::{ApiError, ApiResult},
    limits::{QueryLimits, connection_cost},
    mutation::MutationRoot,
    node::{Node, parse_node_id, to_node},
    scalars::Decimal,
    types::{PagesAhead, Product, PurchasesArgs, SortOrder, User, read_user_purchases},
};
use crate::{
    cursor::{Binding, CursorCodec, KeyValue},
    dynamo::{
        Store,
        tables::{BY_CATEGORY, BY_CATEGORY_START_KEY, USER_KEY},
    },
    number::DynamoNumber,
    pagination::{PageArgs, PageLimits},
};

/// The executable schema.
pub type AppSchema = Schema<QueryRoot, MutationRoot, EmptySubscription>;

/// The cache of Apollo Automatic Persisted Queries: parsed documents by SHA-256 of their text.
pub type PersistedQueries = LruCacheStorage;

/// Builds the schema over `store`, sealing cursors with `codec`, with the default query limits.
pub fn build_schema(store: Store, limits: PageLimits, codec: CursorCodec) -> AppSchema {
    build_schema_with(store, limits, codec, QueryLimits::default(), None)
}

/// [`build_schema`] with the given query limits, also answering Apollo Automatic Persisted
/// Queries from `persisted`.
pub fn build_schema_with(
    store: Store,
    limits: PageLimits,
    codec: CursorCodec,
    query: QueryLimits,
    persisted: Option<PersistedQueries>,
) -> AppSchema {
    let mut builder = builder()
        .data(store)
        .data(limits)
        .data(codec)
        .limit_depth(query.depth)
        .limit_complexity(query.complexity);
    if !query.introspection {
        builder = builder.disable_introspection();
    }
    if !query.suggestions {
        builder = builder.disable_suggestions();
    }
    if let Some(persisted) = persisted {
        builder = builder.extension(ApolloPersistedQueries::new(persisted));
    }
    builder.finish()
}

/// The schema in SDL, sorted so that it is stable: the content of `schema.graphql`.
pub fn sdl() -> String {
    builder().finish().sdl_with_options(
        SDLExportOptions::new()
            .sorted_fields()
            .sorted_arguments()
            .sorted_enum_items(),
    )
}

fn builder() -> SchemaBuilder<QueryRoot, MutationRoot, EmptySubscription> {
    Schema::build(QueryRoot, MutationRoot, EmptySubscription)
}

/// The root of every query.
#[derive(Debug)]
pub struct QueryRoot;

/// The entry points for reading data.
#[Object(name = "Query")]
impl QueryRoot {
    /// Looks up one user by id. Null when there is no such user.
    async fn user(&self, ctx: &Context<'_>, user_id: String) -> ApiResult<Option<User>> {
        error::check_key_value(&user_id, "userId")?;
        let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
        // The pages of `purchases` selected on the user do not depend on the user's item: read
        // them while reading the user, rather than one after the other.
        let Some(ahead) = ctx.data_opt::<PagesAhead>() else {
            return Ok(store.get_user(&user_id).await?.map(User));
        };
        let pages = ctx
            .look_ahead()
            .field("purchases")
            .selection_fields()
            .into_iter()
            .filter_map(|field| {
                let arguments = field.arguments().ok()?;
                let args = PurchasesArgs::parse(&arguments)?;
                Some(async {
                    let page = read_user_purchases(ctx, &user_id, args).await;
                    (arguments, page)
                })
            })
            .collect::<Vec<_>>();
        let (user, pages) = futures_util::future::join(
            store.get_user(&user_id),
            futures_util::future::join_all(pages),
        )
        .await;
        let Some(user) = user? else {
            return Ok(None);
        };
        for (arguments, page) in pages {
            ahead.put(&user_id, arguments, page);
        }
        Ok(Some(User(user)))
    }

    /// All users, in no particular but stable order (a DynamoDB Scan). Pages forward only:
    /// pass the previous page's `pageInfo.endCursor` as `after`.
    #[graphql(complexity = "connection_cost(first, None, child_complexity)")]
    async fn users(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "How many users to return, from 0 to the server's maximum.")]
        first: Option<i32>,
        #[graphql(desc = "Return users after this cursor from this same connection.")]
        after: Option<String>,
    ) -> ApiResult<Connection<User>> {
        let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
        let binding = Binding::builder("Query.users", &store.tables().users, None).finish();
        let args = PageArgs {
            first,
            after,
            ..PageArgs::default()
        };
        resolve(
            ctx,
            args,
            binding,
            USER_KEY,
            false,
            |read| store.users(read),
            User,
        )
        .await
    }

    /// Refetches any object by its global `id`. Null when the object no longer exists; a
    /// malformed id is an error (`BAD_USER_INPUT`).
    async fn node(&self, ctx: &Context<'_>, id: ID) -> ApiResult<Option<Node>> {
        Ok(load_nodes(ctx, std::slice::from_ref(&id))
            .await?
            .pop()
            .flatten())
    }

    /// Refetches several objects by global id, in the order given, with null for those that no
    /// longer exist. At most 100 ids; all are read together.
    #[graphql(complexity = "ids.len().max(1).saturating_mul(child_complexity) + 1")]
    async fn nodes(&self, ctx: &Context<'_>, ids: Vec<ID>) -> ApiResult<Vec<Option<Node>>> {
        if ids.len() > 100 {
            return Err(ApiError::BadUserInput(
                "`ids` may hold at most 100 ids.".into(),
            ));
        }
        load_nodes(ctx, &ids).await
    }

    /// Looks up one product by SKU. Null when there is no such product.
    async fn product(&self, ctx: &Context<'_>, sku: String) -> ApiResult<Option<Product>> {
        error::check_key_value(&sku, "sku")?;
        let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
        Ok(store.get_product(&sku).await?.map(Product))
    }

    /// The products of one category by price: cheapest first, or dearest first with
    /// `order: DESC`. `minPrice` and `maxPrice` bound the price, both inclusive. Products of
    /// equal price keep a stable order and are never skipped or repeated across pages. Pages
    /// forward (`first`/`after`) or backward (`last`/`before`), like `User.purchases`.
    #[allow(clippy::too_many_arguments)]
    #[graphql(complexity = "connection_cost(first, last, child_complexity)")]
    async fn products(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The category to list.")] category: String,
        #[graphql(desc = "Only products priced at least this.")] min_price: Option<Decimal>,
        #[graphql(desc = "Only products priced at most this.")] max_price: Option<Decimal>,
        #[graphql(
            desc = "`ASC`: cheapest first (the default, also when null); `DESC`: dearest first.",
            default_with = "Some(SortOrder::Asc)"
        )]
        order: Option<SortOrder>,
        #[graphql(desc = "How many products to return after `after`, from 0 to the maximum.")]
        first: Option<i32>,
        #[graphql(desc = "Return products after this cursor from this same connection.")]
        after: Option<String>,
        #[graphql(desc = "How many products to return before `before`, from 0 to the maximum.")]
        last: Option<i32>,
        #[graphql(desc = "Return products before this cursor from this same connection.")]
        before: Option<String>,
    ) -> ApiResult<Connection<Product>> {
        error::check_key_value(&category, "category")?;
        let store = ctx.data::<Store>().map_err(|_| ApiError::Internal)?;
        let (min, max) = (min_price.map(|d| d.0), max_price.map(|d| d.0));
        if let (Some(min), Some(max)) = (&min, &max)
            && min.numeric_cmp(max) == Ordering::Greater
        {
            return Err(ApiError::BadUserInput(
                "`minPrice` must not exceed `maxPrice`.".into(),
            ));
        }
        let binding = Binding::builder(
            "Query.products",
            &store.tables().products,
            Some(BY_CATEGORY),
        )
        .fixed("category", KeyValue::S(category.clone()))
        .argument("minPrice", min.as_ref().map(DynamoNumber::as_str))
        .argument("maxPrice", max.as_ref().map(DynamoNumber::as_str))
        .finish();
        resolve(
            ctx,
            PageArgs {
                first,
                after,
                last,
                before,
            },
            binding,
            BY_CATEGORY_START_KEY,
            order == Some(SortOrder::Desc),
            |read| store.products_by_category(&category, min.as_ref(), max.as_ref(), read),
            Product,
        )
        .await
    }
}

async fn load_nodes(ctx: &Context<'_>, ids: &[ID]) -> ApiResult<Vec<Option<Node>>> {
    let loader = node::loader(ctx)?;
    let keys = ids
        .iter()
        .map(|id| {
            parse_node_id(id).ok_or_else(|| ApiError::BadUserInput("The id is not valid.".into()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let items = loader.load_many(keys.iter().cloned()).await?;
    keys.iter()
        .map(|key| {
            items
                .get(key)
                .and_then(Option::as_ref)
                .map(|item| to_node(key.0, item))
                .transpose()
                .map_err(ApiError::from)
        })
        .collect()
}
