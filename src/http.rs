//! HTTP: the axum router (`/graphql`, GraphiQL at `/`, `/health`, `/ready`), its layers, and
//! `serve` with graceful shutdown.

use std::{future::Future, time::Duration};

use async_graphql::{
    ParseRequestError,
    parser::{
        parse_query,
        types::{DocumentOperations, OperationType},
    },
};
use async_graphql_axum::{GraphQLRequest, GraphQLResponse};
use axum::{
    Json, Router,
    extract::State,
    http::{HeaderValue, Method, StatusCode, header},
    middleware::map_response,
    response::{IntoResponse, Response},
    routing::get,
};
use serde_json::json;
use tokio::net::TcpListener;
use tower_http::{limit::RequestBodyLimitLayer, trace::TraceLayer};

use crate::{
    dynamo::Store,
    graphql::{self, AppSchema},
};

/// Everything the handlers need.
#[derive(Clone)]
pub struct AppState {
    /// The executable schema.
    pub schema: AppSchema,
    /// For the readiness probe.
    pub store: Store,
    /// HTTP-level settings.
    pub http: HttpSettings,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("store", &self.store)
            .field("http", &self.http)
            .finish_non_exhaustive()
    }
}

/// HTTP-level settings.
#[derive(Clone, Debug)]
pub struct HttpSettings {
    /// Serve GraphiQL at `/`.
    pub graphiql: bool,
    /// Largest accepted request body, in bytes.
    pub max_body_bytes: usize,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            graphiql: true,
            max_body_bytes: 64 * 1024,
        }
    }
}

/// The application's routes and layers.
pub fn router(state: AppState) -> Router {
    let mut router = Router::new()
        .route("/graphql", get(graphql).post(graphql))
        .route("/health", get(health))
        .route("/ready", get(ready));
    if state.http.graphiql {
        router = router
            .route("/", get(graphiql_page))
            .route("/graphiql/{file}", get(graphiql_asset));
    }
    router
        // async-graphql-axum reads bodies as streams, where axum's default limit does not apply.
        .layer(RequestBodyLimitLayer::new(state.http.max_body_bytes))
        .layer(map_response(coded_payload_too_large))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets requests in flight finish
/// for at most `drain_timeout`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    drain_timeout: Duration,
) -> std::io::Result<()> {
    let (signalled_tx, signalled_rx) = tokio::sync::oneshot::channel::<()>();
    let server = axum::serve(listener, router).with_graceful_shutdown(async move {
        shutdown.await;
        let _ = signalled_tx.send(());
    });
    let mut server = std::pin::pin!(server.into_future());
    tokio::select! {
        result = &mut server => result,
        Ok(()) = signalled_rx => {
            match tokio::time::timeout(drain_timeout, server).await {
                Ok(result) => result,
                Err(_) => {
                    tracing::warn!(?drain_timeout, "requests still in flight at the drain deadline; closing them");
                    Ok(())
                }
            }
        }
    }
}

async fn graphql(
    State(state): State<AppState>,
    method: Method,
    request: GraphQLRequest<BadRequest>,
) -> Response {
    // Each request gets its own loader, so cached items never outlive the request.
    let request = request
        .into_inner()
        .data(graphql::node::request_loader(&state.store));
    if method == Method::GET && !is_query(&request) {
        let mut response = error_response(
            StatusCode::METHOD_NOT_ALLOWED,
            "Only queries may be sent with GET; send mutations with POST.",
            "METHOD_NOT_ALLOWED",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, POST"));
        return response;
    }
    let mut response = state.schema.execute(request).await;
    // Parse, validation and input-coercion errors come from async-graphql without a code; they
    // are all about the request as sent. (Resolver errors always carry their own code.)
    for error in &mut response.errors {
        let extensions = error.extensions.get_or_insert_with(Default::default);
        if extensions.get("code").is_none() {
            extensions.set("code", "BAD_USER_INPUT");
        }
    }
    GraphQLResponse::from(response).into_response()
}

/// Whether the operation a GET request would run is a query. Unparsable documents count as
/// queries: execution then reports the syntax error.
fn is_query(request: &async_graphql::Request) -> bool {
    let Ok(document) = parse_query(&request.query) else {
        return true;
    };
    let ty = match (&document.operations, request.operation_name.as_deref()) {
        (DocumentOperations::Single(op), _) => Some(op.node.ty),
        (DocumentOperations::Multiple(ops), Some(name)) => ops.get(name).map(|op| op.node.ty),
        (DocumentOperations::Multiple(_), None) => None,
    };
    ty.is_none_or(|ty| ty == OperationType::Query)
}

/// A request that is not a GraphQL request: 400 (or 413 when too large) with a coded error.
#[derive(Debug)]
pub struct BadRequest(ParseRequestError);

impl From<ParseRequestError> for BadRequest {
    fn from(err: ParseRequestError) -> Self {
        Self(err)
    }
}

impl IntoResponse for BadRequest {
    fn into_response(self) -> Response {
        match self.0 {
            ParseRequestError::PayloadTooLarge => error_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                "The request body is too large.",
                "PAYLOAD_TOO_LARGE",
            ),
            ParseRequestError::UnsupportedBatch => error_response(
                StatusCode::BAD_REQUEST,
                "Batched requests are not supported; send one operation per request.",
                "BAD_REQUEST",
            ),
            err => {
                tracing::debug!(error = %err, "unreadable GraphQL request");
                error_response(
                    StatusCode::BAD_REQUEST,
                    "The request is not a valid GraphQL request.",
                    "BAD_REQUEST",
                )
            }
        }
    }
}

/// The body limit layer answers 413 with a plain-text body; give clients the coded JSON error
/// every other rejection has.
async fn coded_payload_too_large(response: Response) -> Response {
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        BadRequest(ParseRequestError::PayloadTooLarge).into_response()
    } else {
        response
    }
}

fn error_response(status: StatusCode, message: &str, code: &str) -> Response {
    let body = json!({ "errors": [{ "message": message, "extensions": { "code": code } }] });
    (status, Json(body)).into_response()
}

async fn health() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

async fn ready(State(state): State<AppState>) -> Response {
    let check = tokio::time::timeout(Duration::from_secs(3), state.store.check_ready()).await;
    match check {
        Ok(Ok(())) => Json(json!({ "status": "ready" })).into_response(),
        Ok(Err(err)) => {
            tracing::warn!(error = %aws_sdk_dynamodb::error::DisplayErrorContext(&err), "not ready");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({ "status": "unavailable" })),
            )
                .into_response()
        }
        Err(_) => {
            tracing::warn!("not ready: DynamoDB did not answer within 3 s");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({ "status": "unavailable" })),
            )
                .into_response()
        }
    }
}

/// The GraphiQL page may load scripts and styles only from this server, and talk only to it.
const GRAPHIQL_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

async fn graphiql_page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, GRAPHIQL_CSP),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        include_str!("../assets/graphiql/index.html"),
    )
        .into_response()
}

/// GraphiQL and React, vendored from npm (see `scripts/vendor-graphiql`) and embedded, so the
/// playground works without internet access.
async fn graphiql_asset(axum::extract::Path(file): axum::extract::Path<String>) -> Response {
    let (body, content_type): (&'static [u8], &str) = match file.as_str() {
        "graphiql.min.js" => (
            include_bytes!("../assets/graphiql/vendor/graphiql.min.js"),
            "text/javascript",
        ),
        "graphiql.min.css" => (
            include_bytes!("../assets/graphiql/vendor/graphiql.min.css"),
            "text/css",
        ),
        "react.production.min.js" => (
            include_bytes!("../assets/graphiql/vendor/react.production.min.js"),
            "text/javascript",
        ),
        "react-dom.production.min.js" => (
            include_bytes!("../assets/graphiql/vendor/react-dom.production.min.js"),
            "text/javascript",
        ),
        "init.js" => (
            include_bytes!("../assets/graphiql/init.js"),
            "text/javascript",
        ),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body,
    )
        .into_response()
}
