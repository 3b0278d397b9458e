//! The GraphQL schema: root objects, types, connections, scalars and the error boundary.

pub mod connection;
pub mod error;
pub mod scalars;
pub mod types;

use async_graphql::{
    Context, EmptyMutation, EmptySubscription, Object, SDLExportOptions, Schema, SchemaBuilder,
};

use self::{error::ApiResult, types::User};
use crate::{cursor::CursorCodec, dynamo::Store, pagination::PageLimits};

/// The executable schema.
pub type AppSchema = Schema<QueryRoot, EmptyMutation, EmptySubscription>;

/// Builds the schema over `store`, sealing cursors with `codec`.
pub fn build_schema(store: Store, limits: PageLimits, codec: CursorCodec) -> AppSchema {
    builder().data(store).data(limits).data(codec).finish()
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

fn builder() -> SchemaBuilder<QueryRoot, EmptyMutation, EmptySubscription> {
    Schema::build(QueryRoot, EmptyMutation, EmptySubscription)
}

/// The root of every query.
#[derive(Debug)]
pub struct QueryRoot;

/// The entry points for reading data.
#[Object(name = "Query")]
impl QueryRoot {
    /// Looks up one user by id. Null when there is no such user.
    async fn user(&self, ctx: &Context<'_>, user_id: String) -> ApiResult<Option<User>> {
        let store = ctx.data::<Store>().map_err(|_| error::ApiError::Internal)?;
        Ok(store.get_user(&user_id).await?.map(User))
    }
}
