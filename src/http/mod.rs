//! HTTP: the axum router (`/graphql`, GraphiQL at `/`, `/health`, `/ready`, `/metrics`), its
//! layers (request ids, tracing, metrics, CORS, timeout, body limit), bearer-token
//! authentication and per-caller rate limits of GraphQL requests (in `graphql.rs` and
//! `rate_limit.rs`), and `serve`: the connections, their protections and graceful shutdown (in
//! `conn.rs`); [`lambda`] answers AWS Lambda events with the same router.

mod conn;
mod cors;
mod graphql;
pub mod lambda;
mod params;
mod rate_limit;
pub mod relay_health;
mod sse;
pub mod trusted;
mod ws;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use axum::{
    Json, Router,
    extract::{Request, State},
    http::{HeaderName, HeaderValue, StatusCode, header},
    middleware::{Next, from_fn_with_state, map_request, map_response},
    response::{IntoResponse, Response},
    routing::get,
};
use serde_json::json;
use tower::ServiceBuilder;
use tower_http::{
    LatencyUnit,
    limit::RequestBodyLimitLayer,
    request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer},
    timeout::TimeoutLayer,
    trace::{DefaultOnResponse, TraceLayer},
};
use tracing::{Instrument, Level};

pub use self::{
    conn::{
        ConnectionSettings, HEALTH_MAX_CONNECTIONS, HYPER_MAX_HEADERS, HealthListener,
        ServeSettings, fit_file_limit, serve,
    },
    cors::{AllowedOrigins, OriginError},
    rate_limit::{CallerLimits, Limit, RateLimitSettings},
};
use crate::{
    cursor::CursorCodec,
    dynamo::Store,
    graphql::{
        Api, PersistedQueries, build_schema,
        documents::Documents,
        limits::QueryLimits,
        trusted::{LoadErrors, TrustedSettings},
    },
    metrics::{self, Metrics},
    model::{Access, Model},
    pagination::PageLimits,
    stream::Streams,
    telemetry,
};

/// Everything the handlers need, shared: a request's layers and handler each take a copy, which
/// costs one reference count.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What an [`AppState`] shares.
#[derive(Clone)]
pub struct Shared {
    /// The executable schema.
    pub api: Api,
    /// Page sizes and the read budget.
    pub limits: PageLimits,
    /// For the readiness probe and the per-request loaders.
    pub store: Store,
    /// HTTP-level settings.
    pub http: HttpSettings,
    /// The Apollo persisted-query cache, if enabled.
    persisted: Option<PersistedQueries>,
    /// Parsed, limit-checked documents by text.
    documents: Arc<Documents>,
    /// Who may introspect the schema.
    introspection: Access,
    /// The listed operations, and what other documents may do.
    trusted: Arc<trusted::Gate>,
    /// Per-caller limits on `/graphql`.
    rate_limiter: Arc<rate_limit::RateLimiter>,
    /// The tables' stream readers, for subscriptions; `None` where none can be held open.
    streams: Option<Streams>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("store", &self.store)
            .field("http", &self.http)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The schema of `model` over `store` with the given limits and cursor codec, served with
    /// `http`, its operation manifests loaded. Fails when the model's types do not form a valid
    /// schema (a checked model always does) or when a manifest does not load or validate.
    pub fn new(
        model: &'static Model,
        store: Store,
        limits: PageLimits,
        codec: CursorCodec,
        http: HttpSettings,
    ) -> Result<Self, StartError> {
        let persisted =
            (http.persisted_queries > 0).then(|| PersistedQueries::new(http.persisted_queries));
        let rate_limiter = Arc::new(rate_limit::RateLimiter::new(
            &http.rate_limits,
            store.metrics(),
        ));
        let api = build_schema(model, limits, codec, http.query_limits)?;
        let trusted = trusted::Gate::load(
            http.trusted.clone(),
            model.unlisted_documents.clone(),
            &api,
            &http.query_limits,
        )?;
        if !http.trusted.manifests.is_empty() {
            store
                .metrics()
                .manifest_load("loaded", trusted.documents().len());
        }
        Ok(Self(Arc::new(Shared {
            api,
            trusted: Arc::new(trusted),
            limits,
            rate_limiter,
            documents: Arc::new(Documents::new(http.query_limits, http.document_cache_bytes)),
            store,
            http,
            persisted,
            introspection: model.introspection.clone(),
            streams: None,
        })))
    }

    /// The same application, serving subscriptions from `streams`.
    pub fn with_streams(&self, streams: Streams) -> Self {
        Self(Arc::new(Shared {
            streams: Some(streams),
            ..Shared::clone(&self.0)
        }))
    }

    /// The same application over a DynamoDB client with a connection pool of its own, for a
    /// worker thread (see [`ServeSettings::workers`]); everything else is shared.
    pub fn with_own_connections(&self) -> Self {
        Self(Arc::new(Shared {
            store: self.store.with_own_connections(),
            ..Shared::clone(&self.0)
        }))
    }

    /// The metrics every request and DynamoDB call is recorded in.
    pub fn metrics(&self) -> &Metrics {
        self.store.metrics()
    }

    /// How many operations the loaded manifests list.
    pub fn trusted_operations(&self) -> usize {
        self.trusted.documents().len()
    }

    /// Loads and validates the operation manifests again and serves the new list, or keeps the
    /// old one when they do not validate; how many operations are listed.
    pub fn reload_operations(&self) -> Result<usize, LoadErrors> {
        self.trusted
            .reload(&self.api, &self.http.query_limits, self.metrics())
    }
}

/// Why an application could not be built.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The model's types do not form a valid schema.
    /// (Its source says what is wrong: printed as an error's chain, the text comes once.)
    #[error("building the GraphQL schema")]
    Schema(#[from] async_graphql::dynamic::SchemaError),
    /// An operation manifest does not load or validate against the schema.
    #[error(transparent)]
    Operations(#[from] LoadErrors),
}

/// `GET /graphql`: a WebSocket upgrade (GraphQL over WebSocket, [`ws`]), or a query.
async fn graphql_get(
    state: axum::extract::State<AppState>,
    request: axum::extract::Request,
) -> axum::response::Response {
    if ws::is_upgrade(request.headers()) {
        ws::upgrade(state.0, request).await
    } else {
        graphql::get(state, request).await
    }
}

/// HTTP-level settings.
#[derive(Clone, Debug)]
pub struct HttpSettings {
    /// Serve GraphiQL at `/`.
    pub graphiql: bool,
    /// Largest accepted request body, in bytes.
    pub max_body_bytes: usize,
    /// Browser origins allowed to call the API (CORS). Empty: none.
    pub cors_origins: AllowedOrigins,
    /// How many Apollo persisted queries to keep (least recently used go first); 0 disables them.
    pub persisted_queries: usize,
    /// What one request may ask for.
    pub query_limits: QueryLimits,
    /// Bytes of query text whose parsed documents are kept, so repeated queries skip parsing;
    /// 0 turns the cache off.
    pub document_cache_bytes: usize,
    /// Longest time one request may take; slower ones get 504.
    pub request_timeout: Duration,
    /// Serve Prometheus metrics at `/metrics`.
    pub metrics: bool,
    /// Add `extensions.cost` (DynamoDB calls, capacity, items) to every GraphQL response.
    pub cost_extension: bool,
    /// Refuse GET requests that a browser could send cross-site without a CORS preflight: a GET
    /// must carry `apollo-require-preflight` or `x-apollo-operation-name`, or a content type
    /// other than the three a form may send (Apollo Server's CSRF prevention). For deployments
    /// that authenticate with cookies; POST always needs `application/json`, so it is never such
    /// a request.
    pub require_preflight: bool,
    /// Verifies `Authorization: Bearer` tokens on GraphQL requests: a request with a bad one is
    /// refused with 401 before any other work. `None`: every request is anonymous.
    pub auth: Option<crate::auth::Authenticator>,
    /// Per-caller limits on GraphQL requests and the DynamoDB capacity they consume. The
    /// default limits nothing (the command line's defaults do limit).
    pub rate_limits: RateLimitSettings,
    /// Whether `/ready` asks DynamoDB about every table (a `DescribeTable` each), as wherever
    /// the live tables are checked (`serve`; `lambda --check-tables true`). Off, it answers
    /// `ready` once the API is built, without a call, so that the server needs no
    /// `DescribeTable` (`dynarelay policy --check-tables false`).
    pub ready_checks_tables: bool,
    /// Give each `/graphql` request a trace span (see [`crate::telemetry`]), child of the
    /// caller's trace when its headers carry one. Set when traces are exported.
    pub traces: bool,
    /// The operation manifests, and what documents they do not list may do.
    pub trusted: TrustedSettings,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            graphiql: true,
            max_body_bytes: 64 * 1024,
            cors_origins: AllowedOrigins::default(),
            persisted_queries: 1000,
            query_limits: QueryLimits::default(),
            document_cache_bytes: 256 * 1024,
            request_timeout: Duration::from_secs(15),
            metrics: true,
            cost_extension: true,
            require_preflight: false,
            auth: None,
            rate_limits: RateLimitSettings::default(),
            ready_checks_tables: true,
            traces: false,
            trusted: TrustedSettings::default(),
        }
    }
}

/// The application's routes and layers.
pub fn router(state: AppState) -> Router {
    routes(state, true)
}

/// The routes of the health listener: `/health`, `/ready`, and `/metrics` if metrics are on,
/// with the same layers as [`router`].
pub fn health_router(state: AppState) -> Router {
    routes(state, false)
}

fn routes(state: AppState, api: bool) -> Router {
    let mut router = Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready));
    if api {
        router = router.route("/graphql", get(graphql_get).post(graphql::post));
    }
    if api && state.http.graphiql {
        router = router
            .route("/", get(graphiql_page))
            .route("/graphiql/{file}", get(graphiql_asset));
    }
    if state.http.metrics {
        router = router.route("/metrics", get(metrics));
    }
    // One stack of layers around the routes, outermost first on the way in: a request id (the
    // client's, if usable, or a new UUID), a tracing span carrying it (so every log line of the
    // request does), metrics, CORS (outside the routes, so that preflight requests are answered
    // here), coded rejections, the timeout and the body limit. One `Router::layer` call boxes
    // the whole stack once; a call per layer would box (and clone, on every request) each.
    let layers = ServiceBuilder::new()
        .layer(map_request(drop_unusable_request_id))
        .layer(SetRequestIdLayer::new(REQUEST_ID.clone(), MakeRequestUuid))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID.clone()))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_response(
                    DefaultOnResponse::new()
                        .level(Level::INFO)
                        .latency_unit(LatencyUnit::Millis),
                ),
        )
        .layer(from_fn_with_state(state.clone(), track))
        .option_layer(state.http.traces.then(|| axum::middleware::from_fn(traced)))
        .option_layer(state.http.cors_origins.layer())
        .layer(map_response(coded_layer_rejections))
        .map_response(IntoResponse::into_response)
        .layer(TimeoutLayer::with_status_code(
            StatusCode::GATEWAY_TIMEOUT,
            state.http.request_timeout,
        ))
        .map_response(IntoResponse::into_response)
        .layer(RequestBodyLimitLayer::new(state.http.max_body_bytes));
    router.layer(layers).with_state(state)
}

/// The header carrying each request's id, in both directions.
static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// A client (or load balancer) may pass its own request id, to follow a request across
/// services; one that is long or has characters other than printable ASCII is replaced, so that
/// logs stay readable.
async fn drop_unusable_request_id(mut request: Request) -> Request {
    let usable = |value: &HeaderValue| {
        let bytes = value.as_bytes();
        !bytes.is_empty() && bytes.len() <= 128 && bytes.iter().all(|b| b.is_ascii_graphic())
    };
    if request
        .headers()
        .get(&REQUEST_ID)
        .is_some_and(|v| !usable(v))
    {
        request.headers_mut().remove(&REQUEST_ID);
    }
    request
}

fn request_span(request: &axum::http::Request<axum::body::Body>) -> tracing::Span {
    let id = request
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    tracing::info_span!(
        "request",
        request_id = id,
        method = %request.method(),
        path = request.uri().path(),
    )
}

/// A `/graphql` request in a trace span of its own, the parent of its operation's (the other
/// routes, probes and GraphiQL's files, are not traced). Only in the stack when traces are on.
async fn traced(request: Request, next: Next) -> Response {
    if request.uri().path() != "/graphql" {
        return next.run(request).await;
    }
    let span = telemetry::http_span(request.headers(), request.method(), "/graphql");
    let response = next.run(request).instrument(span.clone()).await;
    telemetry::record_http_status(&span, response.status().as_u16());
    response
}

/// Counts and times every request, including those the inner layers answer (413, 504, CORS).
async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let (route, method) = metrics::labels(request.uri().path(), request.method().as_str());
    let response = next.run(request).await;
    state
        .metrics()
        .http_request(route, method, response.status().as_u16(), started.elapsed());
    response
}

async fn metrics(State(state): State<AppState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics().render(),
    )
        .into_response()
}

/// The body limit and timeout layers answer 413 and 504 with empty or plain-text bodies; give
/// clients the coded JSON error every other rejection has. (No handler answers 504 itself.)
async fn coded_layer_rejections(response: Response) -> Response {
    let (message, code) = match response.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ("The request body is too large.", "PAYLOAD_TOO_LARGE"),
        StatusCode::GATEWAY_TIMEOUT => {
            tracing::warn!("a request ran out of time");
            (
                "The request took too long; try again shortly.",
                "REQUEST_TIMEOUT",
            )
        }
        _ => return response,
    };
    graphql::HttpError::new(response.status(), message, code).into_response(graphql::Format::Json)
}

async fn health() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

async fn ready(State(state): State<AppState>) -> Response {
    if !state.http.ready_checks_tables {
        return Json(json!({ "status": "ready", "tables": "not checked" })).into_response();
    }
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
        include_str!("../../assets/graphiql/index.html"),
    )
        .into_response()
}

/// GraphiQL and React, vendored from npm (see `scripts/vendor-graphiql`) and embedded, so the
/// playground works without internet access.
async fn graphiql_asset(axum::extract::Path(file): axum::extract::Path<String>) -> Response {
    let (body, content_type): (&'static [u8], &str) = match file.as_str() {
        "graphiql.min.js" => (
            include_bytes!("../../assets/graphiql/vendor/graphiql.min.js"),
            "text/javascript",
        ),
        "graphiql.min.css" => (
            include_bytes!("../../assets/graphiql/vendor/graphiql.min.css"),
            "text/css",
        ),
        "react.production.min.js" => (
            include_bytes!("../../assets/graphiql/vendor/react.production.min.js"),
            "text/javascript",
        ),
        "react-dom.production.min.js" => (
            include_bytes!("../../assets/graphiql/vendor/react-dom.production.min.js"),
            "text/javascript",
        ),
        "init.js" => (
            include_bytes!("../../assets/graphiql/init.js"),
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
