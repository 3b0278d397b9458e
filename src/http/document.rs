//! The document of a request that names no listed operation ([`crate::graphql::trusted`]): its
//! text, parsed and checked (or found in the document cache), or an Apollo automatic persisted
//! query's, registered with its text and named by its hash.

use std::sync::Arc;

use async_graphql::{
    ServerError, extensions::apollo_persisted_queries::CacheStorage,
    parser::types::ExecutableDocument,
};
use axum::response::Response;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::{
    AppState,
    graphql::{Format, HttpError, request_error},
    params::Params,
};
use crate::{
    graphql::documents::{Prepared, Rejected},
    telemetry::OperationSpan,
};

/// The request's own document (no manifest lists it): parsed from its text, from the document
/// cache, or an Apollo automatic persisted query's; or the response refusing it.
pub(super) async fn unlisted(
    state: &AppState,
    params: &mut Params,
    extensions: &mut Map<String, Value>,
    format: Format,
    span: &OperationSpan,
) -> Result<(Arc<Prepared>, String), Response> {
    let has_persisted_query = extensions.contains_key("persistedQuery");
    let query = params.query.take().unwrap_or_default();
    if query.is_empty() && !has_persisted_query {
        return Err(HttpError::bad_request("The request has no `query`.").into_response(format));
    }
    if has_persisted_query && state.persisted.is_none() {
        let error = ServerError::new("PersistedQueryNotSupported", None);
        return Err(request_error(
            error,
            "PERSISTED_QUERY_NOT_SUPPORTED",
            format,
            state.metrics(),
        ));
    }
    // Parse here rather than in async-graphql, to tell syntax errors apart and to choose the
    // operation before execution; a document seen before comes parsed and checked from the cache.
    let parsed = if query.is_empty() {
        None
    } else {
        match state.documents.prepare(&query) {
            Ok(document) => Some(document),
            Err(Rejected::Limit(err)) => {
                return Err(request_error(
                    ServerError::new(err.message, None),
                    err.code,
                    format,
                    state.metrics(),
                ));
            }
            Err(Rejected::Parse(err)) => {
                return Err(request_error(
                    err,
                    "GRAPHQL_PARSE_FAILED",
                    format,
                    state.metrics(),
                ));
            }
        }
    };
    // Apollo Automatic Persisted Queries, here rather than in async-graphql's extension: as an
    // extension it would wrap every field of every request in one more boxed future. A document
    // sent with its hash is registered under it; a hash alone names a registered document, looked
    // up here so that its operation is chosen and its cost checked like any other.
    let persisted_query = match (extensions.remove("persistedQuery"), &state.persisted) {
        (Some(value), Some(persisted)) => match persisted_query_hash(value) {
            Ok(hash) => Some((hash, persisted)),
            Err(message) => {
                return Err(request_error(
                    ServerError::new(message, None),
                    "BAD_USER_INPUT",
                    format,
                    state.metrics(),
                ));
            }
        },
        _ => None,
    };
    let persisted_hash = persisted_query
        .as_ref()
        .filter(|_| span.is_on())
        .map(|(hash, _)| hash.clone());
    let document = match (parsed, persisted_query) {
        (Some(parsed), None) => parsed,
        (Some(parsed), Some((hash, persisted))) => {
            if format!("{:x}", Sha256::digest(query.as_bytes())) != hash {
                return Err(request_error(
                    ServerError::new("provided sha does not match query", None),
                    "BAD_USER_INPUT",
                    format,
                    state.metrics(),
                ));
            }
            persisted
                .set(hash, ExecutableDocument::clone(&parsed))
                .await;
            parsed
        }
        (None, Some((hash, persisted))) => match persisted.get(hash).await {
            Some(registered) => Arc::new(Prepared::new(registered)),
            None => {
                return Err(request_error(
                    ServerError::new("PersistedQueryNotFound", None),
                    "PERSISTED_QUERY_NOT_FOUND",
                    format,
                    state.metrics(),
                ));
            }
        },
        // No query and no persisted query was answered above.
        (None, None) => {
            return Err(HttpError::bad_request("The request has no `query`.").into_response(format));
        }
    };
    // A persisted query's hash is its text's SHA-256 (checked above when the text came too).
    span.document(
        || match &persisted_hash {
            Some(hash) => hash.clone(),
            None => format!("{:x}", Sha256::digest(query.as_bytes())),
        },
        persisted_hash.is_some(),
    );
    Ok((document, query))
}

/// The `sha256Hash` of an Apollo persisted-query extension of version 1, or why it is not valid
/// (in async-graphql's words, which Apollo clients do not depend on).
fn persisted_query_hash(value: Value) -> Result<String, String> {
    #[derive(serde::Deserialize)]
    struct PersistedQuery {
        version: i32,
        #[serde(rename = "sha256Hash")]
        sha256_hash: String,
    }
    let persisted: PersistedQuery = serde_json::from_value(value)
        .map_err(|_| "Invalid \"PersistedQuery\" extension configuration.".to_owned())?;
    if persisted.version != 1 {
        return Err(format!(
            "Only the \"PersistedQuery\" extension of version \"1\" is supported, and the current version is \"{}\".",
            persisted.version
        ));
    }
    Ok(persisted.sha256_hash)
}
