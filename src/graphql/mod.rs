//! The GraphQL API built from a model: the schema (types, fields and their resolvers), Relay
//! connections and global ids, mutations, custom scalars, query limits and the document cache,
//! and the error boundary.

pub mod access;
pub mod change;
pub mod connection;
pub mod derived_keys;
pub mod direct;
pub mod documents;
pub mod error;
pub mod federation;
pub mod index_read;
pub mod limits;
pub mod live;
pub mod lookup;
pub mod manifest;
pub mod mutation;
pub mod node;
pub mod node_subscription;
pub mod nullability;
pub mod operation;
pub mod order;
pub mod relations;
pub mod resolve;
pub mod resume;
pub mod scalars;
pub mod schema;
pub mod subscription;
pub mod trusted;
pub mod validate;
pub mod values;

use async_graphql::{
    SDLExportOptions,
    dynamic::{Schema, SchemaBuilder, SchemaError},
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
    /// The same schema without field and argument suggestions ("Did you mean ...?") in its
    /// validation errors, for callers who may not introspect (suggestions would spell out the
    /// schema that introspection hides); `None` when everyone may introspect, or nobody, or
    /// suggestions are off for everyone, so that `schema` serves everyone.
    quiet: Option<Schema>,
    /// The cost of each field, for the complexity limit.
    pub costs: std::sync::Arc<FieldCosts>,
    /// The model the schema serves.
    pub model: &'static Model,
    /// Seals and opens cursors (the schema holds the same codec).
    pub codec: CursorCodec,
    /// The same schema, for rendering a running subscription's changes (see
    /// [`live::Rendering`]); built on the first subscription.
    rendering: std::sync::Arc<std::sync::LazyLock<Option<Schema>, BuildSchema>>,
    /// The same schema, validating documents without executing them (see
    /// [`validate::ValidateOnly`]); built when the first listed operation is loaded.
    checking: std::sync::Arc<std::sync::LazyLock<Option<Schema>, BuildSchema>>,
}

/// Builds a schema once, when first asked for.
type BuildSchema = Box<dyn FnOnce() -> Option<Schema> + Send>;

impl Api {
    /// The schema to execute a request with: suggestions only for callers who may introspect.
    pub fn schema_for(&self, may_introspect: bool) -> &Schema {
        match &self.quiet {
            Some(quiet) if !may_introspect => quiet,
            _ => &self.schema,
        }
    }

    /// Validates `document` against the schema as executing it would (every operation it
    /// holds), without executing it: the errors a request with it would get, or nothing.
    pub fn validate(
        &self,
        document: &async_graphql::parser::types::ExecutableDocument,
    ) -> Result<(), Vec<async_graphql::ServerError>> {
        match self.checking.as_ref().as_ref() {
            Some(schema) => validate::validate(schema, document),
            // The same types built into `schema`: this does not happen.
            None => Err(vec![async_graphql::ServerError::new(
                "The schema could not be built to validate documents.",
                None,
            )]),
        }
    }

    /// The schema that renders a running subscription's changes: `schema`, less validating
    /// documents that `schema` validated when the subscription started.
    pub fn rendering(&self) -> &Schema {
        self.rendering.as_ref().as_ref().unwrap_or(&self.schema)
    }
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
    // Suggestions follow introspection: nobody gets them when nobody may introspect.
    let suggestions = query.suggestions && query.introspection;
    let quiet = (suggestions && !model.introspection.is_public())
        .then(|| configure(schema::builder(model).0, limits, &codec, query, false).finish())
        .transpose()?;
    let rendering_codec = codec.clone();
    let build_rendering: BuildSchema = Box::new(move || {
        let builder = schema::builder(model).0.extension(live::Rendering);
        configure(builder, limits, &rendering_codec, query, suggestions)
            .finish()
            .ok()
    });
    let checking_codec = codec.clone();
    let build_checking: BuildSchema = Box::new(move || {
        let builder = schema::builder(model).0.extension(validate::ValidateOnly);
        configure(builder, limits, &checking_codec, query, suggestions)
            .finish()
            .ok()
    });
    Ok(Api {
        schema: configure(builder, limits, &codec, query, suggestions).finish()?,
        quiet,
        rendering: std::sync::Arc::new(std::sync::LazyLock::new(build_rendering)),
        checking: std::sync::Arc::new(std::sync::LazyLock::new(build_checking)),
        costs: std::sync::Arc::new(costs),
        model,
        codec,
    })
}

fn configure(
    builder: SchemaBuilder,
    limits: PageLimits,
    codec: &CursorCodec,
    query: QueryLimits,
    suggestions: bool,
) -> SchemaBuilder {
    // The depth limit is checked by the HTTP handler, before execution (see `limits::depth`).
    let mut builder = builder.data(limits).data(codec.clone());
    if !query.introspection {
        builder = builder.disable_introspection();
    }
    if !suggestions {
        builder = builder.disable_suggestions();
    }
    builder
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
