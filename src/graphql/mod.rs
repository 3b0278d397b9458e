//! The GraphQL API built from a model: the schema (types, fields and their resolvers), Relay
//! connections and global ids, mutations, custom scalars, query limits and the document cache,
//! and the error boundary.

pub mod access;
pub mod connection;
pub mod direct;
pub mod documents;
pub mod error;
pub mod limits;
pub mod mutation;
pub mod node;
pub mod nullability;
pub mod resolve;
pub mod scalars;
pub mod schema;
pub mod values;

use async_graphql::{
    SDLExportOptions,
    dynamic::{Schema, SchemaError},
    extensions::apollo_persisted_queries::LruCacheStorage,
};

use self::limits::{FieldCosts, QueryLimits};
use crate::{cursor::CursorCodec, model::Model, pagination::PageLimits};

/// The cache of Apollo Automatic Persisted Queries: parsed documents by SHA-256 of their text.
pub type PersistedQueries = LruCacheStorage;

/// The executable schema, with what the complexity limit needs to know of its fields.
#[derive(Clone)]
pub struct Api {
    /// The schema.
    pub schema: Schema,
    /// The cost of each field, for the complexity limit.
    pub costs: std::sync::Arc<FieldCosts>,
    /// The model the schema serves.
    pub model: &'static Model,
    /// Seals and opens cursors (the schema holds the same codec).
    pub codec: CursorCodec,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").finish_non_exhaustive()
    }
}

/// Builds the schema of `model`, sealing cursors with `codec`, with the given query limits.
/// Each request brings its own store, loader and look-ahead pages as request data. (Apollo
/// Automatic Persisted Queries are answered before execution, by the HTTP handler.)
pub fn build_schema(
    model: &'static Model,
    limits: PageLimits,
    codec: CursorCodec,
    query: QueryLimits,
) -> Result<Api, SchemaError> {
    let (builder, costs) = schema::builder(model);
    let mut builder = builder
        .data(limits)
        .data(codec.clone())
        .limit_depth(query.depth);
    if !query.introspection {
        builder = builder.disable_introspection();
    }
    if !query.suggestions {
        builder = builder.disable_suggestions();
    }
    Ok(Api {
        schema: builder.finish()?,
        costs: std::sync::Arc::new(costs),
        model,
        codec,
    })
}

/// The schema of `model` in SDL, sorted so that it is stable (for the demo model: `schema.graphql`).
pub fn sdl(model: &'static Model) -> Result<String, SchemaError> {
    let (builder, _) = schema::builder(model);
    Ok(builder.finish()?.sdl_with_options(
        SDLExportOptions::new()
            .sorted_fields()
            .sorted_arguments()
            .sorted_enum_items(),
    ))
}
