//! A GraphQL response as HTTP: each error's code, the status the media type asks for, and the
//! body serialized in the order the query asked for its fields.

use super::*;

/// Bytes first set aside for a response's JSON.
pub(super) const RESPONSE_CAPACITY: usize = 8 * 1024;

/// Status, media type and body for a GraphQL response.
///
/// A request error (one raised before execution: the document, validation, variables, a
/// persisted query) leaves no `data` and errors without a `path`; field errors always carry one.
pub(super) fn graphql_response(
    mut response: async_graphql::Response,
    format: Format,
    metrics: &Metrics,
) -> Response {
    let request_error = graphql::error::is_request_error(&response);
    for error in &mut response.errors {
        // Resolver errors carry their own codes; the rest are about the request as sent. These
        // messages are async-graphql's own (pinned by tests/api/limits.rs).
        let code = match error.message.as_str() {
            "PersistedQueryNotFound" => "PERSISTED_QUERY_NOT_FOUND",
            "Query is nested too deep." => "QUERY_TOO_DEEP",
            "Query is too complex." => "QUERY_TOO_COMPLEX",
            _ => "BAD_USER_INPUT",
        };
        set_code(error, code);
        if request_error && let Some(rule) = graphql::scalars::input_rule(&error.message) {
            error.message = format!("{}. {rule}", error.message);
        }
        if let Some(async_graphql::Value::String(code)) = error
            .extensions
            .as_ref()
            .and_then(|extensions| extensions.get("code"))
        {
            metrics.graphql_error(code);
        }
    }
    if !response.errors.is_empty() {
        telemetry::record_error_codes(response.errors.iter().filter_map(|error| {
            match error.extensions.as_ref()?.get("code")? {
                async_graphql::Value::String(code) => Some(code.as_str()),
                _ => None,
            }
        }));
    }
    let status = match format {
        Format::GraphqlResponse if request_error => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    // Serialized directly (not through `serde_json::Value`, whose maps sort their keys), so
    // fields come back in the order the query asked for them; into a buffer that holds a page
    // of a few dozen edges without growing (and copying) as it fills.
    let mut body = Vec::with_capacity(RESPONSE_CAPACITY);
    let written = if request_error {
        serde_json::to_writer(
            &mut body,
            &RequestErrors {
                errors: &response.errors,
                extensions: &response.extensions,
            },
        )
    } else {
        serde_json::to_writer(&mut body, &response)
    };
    match written {
        Ok(()) => json_response(status, body, format),
        Err(_) => unserializable(format),
    }
}

/// A GraphQL response's status and JSON body, with its media type.
pub(super) fn json_response(status: StatusCode, body: Vec<u8>, format: Format) -> Response {
    let mut http = (status, body).into_response();
    let headers = http.headers_mut();
    headers.insert(header::CONTENT_TYPE, format.content_type());
    headers.insert(header::VARY, HeaderValue::from_static("accept"));
    http
}

/// The answer when a response could not be serialized (a value serde_json refuses).
pub(super) fn unserializable(format: Format) -> Response {
    tracing::error!("a GraphQL response could not be serialized");
    HttpError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Internal server error.",
        "INTERNAL_SERVER_ERROR",
    )
    .into_response(format)
}

/// A response to a request error: no `data` entry at all.
#[derive(Serialize)]
struct RequestErrors<'a> {
    errors: &'a [ServerError],
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    extensions: &'a BTreeMap<String, async_graphql::Value>,
}
