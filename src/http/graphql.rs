//! GraphQL over HTTP (<https://graphql.github.io/graphql-over-http/draft/>): reading a request
//! from a GET query string or a POST JSON body, negotiating the response media type from
//! `Accept`, and choosing the status code.
//!
//! async-graphql-axum always answers `application/graphql-response+json` with status 200, which
//! breaks the spec's rule that a request error under that media type is a 4xx without `data`;
//! its request extractor loses a GET's `operationName` and takes POST bodies of any content type
//! (docs/src/reference/decisions.md). So this handler does the HTTP side itself, chooses the operation once
//! ([`graphql::operation`]), and leaves validation and execution to async-graphql.
//!
//! | request | status |
//! |---|---|
//! | not HTTP-level valid: bad JSON, a batch, wrong parameter types, no `query` | 400 |
//! | GraphQL request error (parse, validation, variables) with `application/graphql-response+json` | 400, no `data` |
//! | GraphQL request error with `application/json` | 200, no `data` |
//! | executed, with or without field errors | 200 |
//! | a mutation over GET, in any form (named, chosen by name, persisted) | 405 |
//! | no operation to run: several and no `operationName`, or an unknown name | as a request error |
//! | a GET without a preflight header, when `require_preflight` is on | 400 |
//! | POST with a content type other than `application/json` | 415 |
//! | `Accept` allows neither JSON media type | 406 |
//! | a bad `Authorization` header or bearer token (checked first, when authentication is on) | 401 |
//! | the caller is over a rate limit (checked next, before anything is parsed or read) | 429, with `Retry-After` |

use std::{
    collections::{BTreeMap, HashMap},
    net::SocketAddr,
    sync::Arc,
};

use crate::graphql::documents::{Prepared, Rejected};
use async_graphql::extensions::apollo_persisted_queries::CacheStorage;
use async_graphql::{
    ServerError, Variables,
    parser::types::{ExecutableDocument, OperationType},
};
use axum::{
    body::Bytes,
    extract::{ConnectInfo, FromRequest, Query, Request, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Serialize;
use serde_json::{Map, Value, json};
use tracing::Instrument;

use super::{
    AppState,
    params::{BadParams, Params},
    rate_limit::{Admission, Reason, Refusal},
    sse::{Results, SUBSCRIPTIONS_UNAVAILABLE},
    trusted::Found,
};
use crate::{
    auth::Caller,
    graphql::{
        self, direct,
        resolve::Env,
        trusted::{self, Verdict},
    },
    metrics::{Metrics, Usage},
    telemetry::{self, OperationSpan},
};

/// The two response media types of GraphQL over HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    /// `application/graphql-response+json`: request errors get 4xx.
    GraphqlResponse,
    /// `application/json`, the legacy type: every well-formed GraphQL request gets 200.
    Json,
}

impl Format {
    fn content_type(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Format::GraphqlResponse => "application/graphql-response+json; charset=utf-8",
            Format::Json => "application/json; charset=utf-8",
        })
    }

    /// Picks the response media type from an `Accept` header, or `None` when it allows neither.
    ///
    /// Hand-written because no maintained crate in our tree parses `Accept` with quality values;
    /// the grammar needed here (media ranges with a `q` parameter) is small. Wildcards select
    /// `application/json`, which every GraphQL client understands; `graphql-response+json` is
    /// chosen only when named, and wins ties.
    pub(super) fn negotiate(accept: Option<&HeaderValue>) -> Option<Format> {
        let Some(accept) = accept.and_then(|value| value.to_str().ok()) else {
            return Some(Format::Json);
        };
        if accept.trim().is_empty() {
            return Some(Format::Json);
        }
        let mut graphql_response: Option<f32> = None;
        // The quality of application/json from its most specific matching range:
        // (specificity, q).
        let mut json: Option<(u8, f32)> = None;
        for range in accept.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|param| param.split_once('='))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
                .map_or(Some(1.0), |(_, value)| value.trim().parse::<f32>().ok())
                .filter(|q| (0.0..=1.0).contains(q))
                .unwrap_or(0.0);
            let specificity = match media.as_str() {
                "application/graphql-response+json" => {
                    graphql_response = Some(graphql_response.map_or(q, |old| old.max(q)));
                    continue;
                }
                "application/json" => 3,
                "application/*" => 2,
                "*/*" => 1,
                _ => continue,
            };
            json = match json {
                Some((old, old_q)) if old > specificity => Some((old, old_q)),
                Some((old, old_q)) if old == specificity => Some((old, old_q.max(q))),
                _ => Some((specificity, q)),
            };
        }
        let json = json.map_or(0.0, |(_, q)| q);
        let graphql_response = graphql_response.unwrap_or(0.0);
        if graphql_response > 0.0 && graphql_response >= json {
            Some(Format::GraphqlResponse)
        } else if json > 0.0 {
            Some(Format::Json)
        } else {
            None
        }
    }
}

/// A request refused before any GraphQL processing, with its status and coded message.
#[derive(Debug)]
pub(super) struct HttpError {
    status: StatusCode,
    message: String,
    code: &'static str,
}

impl HttpError {
    pub(super) fn new(status: StatusCode, message: impl Into<String>, code: &'static str) -> Self {
        Self {
            status,
            message: message.into(),
            code,
        }
    }

    pub(super) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message, "BAD_REQUEST")
    }

    fn with_code(self, code: &'static str) -> Self {
        Self { code, ..self }
    }

    /// The refusal as a GraphQL error, for a transport that answers without HTTP statuses.
    pub(super) fn to_error(&self) -> Value {
        json!({ "message": self.message, "extensions": { "code": self.code } })
    }

    pub(super) fn into_response(self, format: Format) -> Response {
        let body = json!({
            "errors": [{ "message": self.message, "extensions": { "code": self.code } }]
        });
        let mut response = (self.status, body.to_string()).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, format.content_type());
        if self.status == StatusCode::METHOD_NOT_ALLOWED {
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<BadParams> for HttpError {
    fn from(BadParams(message): BadParams) -> Self {
        Self::bad_request(message)
    }
}

/// `GET /graphql`: queries only.
pub(super) async fn get(State(state): State<AppState>, request: Request) -> Response {
    let headers = request.headers();
    let format = Format::negotiate(headers.get(header::ACCEPT));
    let caller = match authenticate(&state, headers, format).await {
        Ok(caller) => caller,
        Err(response) => return response,
    };
    let admission = match admit(&state, &request, &caller) {
        Ok(admission) => admission,
        Err(refusal) => return rate_limited(&state, &refusal, format),
    };
    let Some(format) = format else {
        return not_acceptable();
    };
    if state.http.require_preflight && !preflighted(headers) {
        return HttpError::bad_request(
            "This GET request was refused as a possible cross-site request forgery: send it with \
             the header `apollo-require-preflight: true`, or as a POST with \
             `Content-Type: application/json`.",
        )
        .with_code("CSRF_PREVENTED")
        .into_response(format);
    }
    let params = Query::<HashMap<String, String>>::try_from_uri(request.uri())
        .map_err(|_| HttpError::bad_request("The query string is not valid URL encoding."))
        .and_then(|Query(query)| Params::from_query(query).map_err(HttpError::from));
    match params {
        Ok(params) => execute(&state, params, format, true, caller, &admission).await,
        Err(err) => err.into_response(format),
    }
}

/// Whether a browser must have asked a CORS preflight before sending a request with these
/// headers (Apollo Server's rule): it names `apollo-require-preflight` or a non-empty
/// `x-apollo-operation-name`, or a content type a form cannot send.
fn preflighted(headers: &HeaderMap) -> bool {
    if headers.contains_key("apollo-require-preflight")
        || headers
            .get("x-apollo-operation-name")
            .is_some_and(|name| !name.is_empty())
    {
        return true;
    }
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(|media| media.trim().to_ascii_lowercase())
        .is_some_and(|media| {
            !matches!(
                media.as_str(),
                "" | "text/plain" | "application/x-www-form-urlencoded" | "multipart/form-data"
            )
        })
}

/// `POST /graphql`: a JSON body with `query`, `operationName`, `variables` and `extensions`.
/// The body is read only once the credentials are accepted.
///
/// With `Accept: text/event-stream`, the answer is server-sent events (the `graphql-sse`
/// protocol's distinct connections mode, [`super::sse`]): a subscription's changes, or any other
/// operation's one result, each as a `next` event, then `complete`.
pub(super) async fn post(State(state): State<AppState>, request: Request) -> Response {
    let headers = request.headers();
    let events = super::sse::accepts_events(headers.get(header::ACCEPT));
    let stop = request
        .extensions()
        .get::<super::conn::ConnectionSlot>()
        .map(|slot| slot.stop.clone());
    let format = if events {
        Some(Format::Json)
    } else {
        Format::negotiate(headers.get(header::ACCEPT))
    };
    let caller = match authenticate(&state, headers, format).await {
        Ok(caller) => caller,
        Err(response) => return response,
    };
    let admission = match admit(&state, &request, &caller) {
        Ok(admission) => admission,
        Err(refusal) => return rate_limited(&state, &refusal, format),
    };
    let Some(format) = format else {
        return not_acceptable();
    };
    if let Err(err) = check_content_type(headers.get(header::CONTENT_TYPE)) {
        return err.into_response(format);
    }
    // A body over the limit is answered 413 here (the rejection), coded by the router's layer.
    let body = match Bytes::from_request(request, &state).await {
        Ok(body) => body,
        Err(rejection) => return rejection.into_response(),
    };
    let params = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(object)) => Params::from_object(object).map_err(HttpError::from),
        Ok(Value::Array(_)) => Err(HttpError::bad_request(
            "Batched requests are not supported; send one operation per request.",
        )),
        Ok(_) => Err(HttpError::bad_request(
            "The request body must be a JSON object.",
        )),
        Err(_) => Err(HttpError::bad_request(
            "The request body is not valid JSON.",
        )),
    };
    let streaming = if events {
        Streaming::Events(stop)
    } else {
        Streaming::Refused
    };
    let response = match params {
        Ok(params) => {
            execute_as(&state, params, format, false, caller, &admission, streaming).await
        }
        Err(err) => err.into_response(format),
    };
    if events {
        super::sse::answer(response).await
    } else {
        response
    }
}

/// The caller a request's `Authorization` header names: anonymous without one or without
/// authentication configured; a coded 401 (with `WWW-Authenticate: Bearer`) when the header or
/// its token is not valid. The reason goes to the log only.
async fn authenticate(
    state: &AppState,
    headers: &HeaderMap,
    format: Option<Format>,
) -> Result<Caller, Response> {
    let Some(auth) = &state.http.auth else {
        return Ok(Caller::Anonymous);
    };
    auth.authenticate(headers.get(header::AUTHORIZATION))
        .await
        .map_err(|rejection| {
            tracing::info!(reason = rejection.reason(), "credentials refused");
            state.metrics().auth_rejected();
            HttpError::new(
                StatusCode::UNAUTHORIZED,
                "The request's credentials are not valid.",
                "UNAUTHENTICATED",
            )
            .into_response(format.unwrap_or(Format::Json))
        })
}

/// Admits a request under its caller's rate limits, or says why not. The caller is `caller`'s subject, or the client address: the peer's, from the
/// `ConnectInfo` that `serve` gives every request (a router driven without it, as in some tests,
/// sees every anonymous request as one caller of unknown address).
fn admit<'a>(
    state: &'a AppState,
    request: &Request,
    caller: &Caller,
) -> Result<Admission<'a>, Refusal> {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| *peer);
    state.rate_limiter.admit(caller, request.headers(), peer)
}

/// 429 with `Retry-After` and RATE_LIMITED.
fn rate_limited(state: &AppState, refusal: &Refusal, format: Option<Format>) -> Response {
    tracing::debug!(reason = refusal.reason.label(), "rate limited");
    state.metrics().rate_limited(refusal.reason.label());
    let message = match refusal.reason {
        Reason::Requests => "Too many requests; try again later.",
        Reason::ReadUnits => "Your requests have read too much; try again later.",
    };
    let mut response = HttpError::new(StatusCode::TOO_MANY_REQUESTS, message, "RATE_LIMITED")
        .into_response(format.unwrap_or(Format::Json));
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(refusal.retry_after_secs()),
    );
    response
}

fn not_acceptable() -> Response {
    HttpError::new(
        StatusCode::NOT_ACCEPTABLE,
        "Accept application/graphql-response+json or application/json.",
        "NOT_ACCEPTABLE",
    )
    .into_response(Format::Json)
}

/// POST bodies must be `application/json`, in UTF-8.
fn check_content_type(value: Option<&HeaderValue>) -> Result<(), HttpError> {
    let unsupported = || {
        HttpError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Send the request as Content-Type: application/json.",
            "UNSUPPORTED_MEDIA_TYPE",
        )
    };
    let value = value
        .and_then(|value| value.to_str().ok())
        .ok_or_else(unsupported)?;
    let mut parts = value.split(';');
    let media = parts.next().unwrap_or_default().trim();
    if !media.eq_ignore_ascii_case("application/json") {
        return Err(unsupported());
    }
    let charset_ok = parts
        .filter_map(|param| param.split_once('='))
        .filter(|(name, _)| name.trim().eq_ignore_ascii_case("charset"))
        .all(|(_, charset)| {
            let charset = charset.trim().trim_matches('"');
            charset.eq_ignore_ascii_case("utf-8") || charset.eq_ignore_ascii_case("utf8")
        });
    if charset_ok {
        Ok(())
    } else {
        Err(unsupported())
    }
}

async fn execute(
    state: &AppState,
    params: Params,
    format: Format,
    is_get: bool,
    caller: Caller,
    admission: &Admission<'_>,
) -> Response {
    execute_as(
        state,
        params,
        format,
        is_get,
        caller,
        admission,
        Streaming::Refused,
    )
    .await
}

/// Where a subscription's results go, if anywhere.
pub(super) enum Streaming<'s> {
    /// Nowhere: a subscription is refused (`SUBSCRIPTION_NEEDS_EVENT_STREAM`).
    Refused,
    /// Framed as server-sent events ([`super::sse`]), until the server shuts down (`stop`, when
    /// the connection has one: its stream then ends with `complete`).
    Events(Option<tokio::sync::watch::Receiver<bool>>),
    /// Handed to a WebSocket session ([`super::ws`]), which frames them itself; the response
    /// returned is then empty, or a JSON refusal when the server holds no stream readers.
    Socket(&'s mut Option<Results>),
}

/// [`execute`], with somewhere for a subscription's results to go: a subscription then streams
/// its changes, and everything refused before execution is answered as JSON, for the caller to
/// turn into events or messages.
pub(super) async fn execute_as(
    state: &AppState,
    params: Params,
    format: Format,
    is_get: bool,
    caller: Caller,
    admission: &Admission<'_>,
    streaming: Streaming<'_>,
) -> Response {
    let request = Incoming {
        params,
        format,
        is_get,
        caller,
    };
    // Whether traces are exported is settled at start-up: without them no span is made and the
    // operation runs uninstrumented.
    if !state.http.traces {
        return operation(state, request, admission, streaming, &OperationSpan::none()).await;
    }
    let span = OperationSpan::new();
    operation(state, request, admission, streaming, &span)
        .instrument(span.span().clone())
        .await
}

/// A request's parts, as [`execute_as`] was given them.
struct Incoming {
    params: Params,
    format: Format,
    is_get: bool,
    caller: Caller,
}

/// [`execute_as`], in the operation's trace span `span`, which it fills in.
async fn operation(
    state: &AppState,
    request: Incoming,
    admission: &Admission<'_>,
    streaming: Streaming<'_>,
    span: &OperationSpan,
) -> Response {
    let Incoming {
        mut params,
        format,
        is_get,
        caller,
    } = request;
    // Trusted documents first, before anything is parsed: a listed operation comes prepared;
    // anything else is refused here when the server enforces its manifests.
    let by_id = params.asked().id.is_some();
    let listed = match state.trusted.judge(&params, &caller, state.metrics()) {
        Verdict::Listed(entry) => Some(entry),
        Verdict::Unlisted => None,
        Verdict::Refused(refusal) => {
            return request_error(
                ServerError::new(refusal.message(), None),
                refusal.code(),
                format,
                state.metrics(),
            );
        }
    };
    let mut extensions = params.extensions.take().unwrap_or_default();
    let is_listed = listed.is_some();
    let (document, query, persisted_hash) = match listed {
        Some(entry) => {
            // Named by Apollo's hash or not, a listed operation registers nothing.
            extensions.remove("persistedQuery");
            span.document(|| entry.sha256.clone(), true);
            (Arc::clone(&entry.document), String::new(), None)
        }
        None => match unlisted_document(state, &mut params, &mut extensions, format, span).await {
            Ok(found) => found,
            Err(response) => return response,
        },
    };
    // The one choice of operation that everything below follows.
    let operation = match graphql::operation::choose(&document, params.operation_name.as_deref()) {
        Ok(operation) => operation,
        Err(none) => {
            let (error, code) = none.into_error();
            return request_error(error, code, format, state.metrics());
        }
    };
    span.operation(
        match operation.ty() {
            OperationType::Query => "query",
            OperationType::Mutation => "mutation",
            OperationType::Subscription => "subscription",
        },
        operation.name,
    );
    if operation.is_subscription() && matches!(streaming, Streaming::Refused) {
        return request_error(
            ServerError::new(
                "Subscriptions are answered as server-sent events: send this request as a POST \
                 with `Accept: text/event-stream`.",
                None,
            ),
            "SUBSCRIPTION_NEEDS_EVENT_STREAM",
            format,
            state.metrics(),
        );
    }
    if let Err((message, locations)) = operation.check_single_root_field(&document) {
        let mut error = ServerError::new(message, None);
        error.locations = locations;
        return request_error(error, "BAD_USER_INPUT", format, state.metrics());
    }
    if is_get && operation.is_mutation() {
        return HttpError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "Only queries may be sent with GET; send mutations with POST.",
            "METHOD_NOT_ALLOWED",
        )
        .into_response(format);
    }
    // `[auth] introspection`: a caller it does not admit is refused a document that asks for
    // `__schema` or `__type`, before execution (async-graphql would silently answer null).
    let may_introspect =
        graphql::access::grant(&state.introspection, &caller) != graphql::access::Grant::Nothing;
    if !may_introspect && graphql::limits::introspects(&document) {
        return request_error(
            ServerError::new("You may not introspect this schema.", None),
            "FORBIDDEN",
            format,
            state.metrics(),
        );
    }

    if graphql::limits::depth(&document, operation) > state.http.query_limits.depth {
        return request_error(
            ServerError::new("Query is nested too deep.", None),
            "QUERY_TOO_DEEP",
            format,
            state.metrics(),
        );
    }

    // (Its text is set once the gate has counted it below.)
    let mut request = async_graphql::Request::new(String::new());
    if let Some(name) = operation.name {
        request = request.operation_name(name);
    }
    if let Some(variables) = params.variables {
        request = request.variables(Variables::from_json(Value::Object(variables)));
    }
    if let Err(message) = operation.check_variables(&request.variables) {
        return request_error(
            ServerError::new(message, None),
            "BAD_USER_INPUT",
            format,
            state.metrics(),
        );
    }
    let complexity = state.api.costs.complexity(
        &document,
        operation,
        &request.variables,
        state.limits.default_size(),
    );
    if complexity > state.http.query_limits.complexity {
        return request_error(
            ServerError::new("Query is too complex.", None),
            "QUERY_TOO_COMPLEX",
            format,
            state.metrics(),
        );
    }
    for (name, value) in extensions {
        match async_graphql::Value::from_json(value) {
            Ok(value) => {
                request.extensions.0.insert(name, value);
            }
            Err(_) => {
                return HttpError::bad_request(format!("Extension `{name}` is not valid."))
                    .into_response(format);
            }
        }
    }
    // Every check before execution passed: the document runs.
    state.trusted.ran(
        if is_listed {
            Found::Listed { by_id }
        } else {
            Found::Unlisted {
                text: &query,
                hash: persisted_hash.as_deref(),
                name: operation.name,
            }
        },
        state.metrics(),
    );
    request.query = query;
    // Each request gets its own store, adding up what its DynamoDB calls cost, and its own
    // loader, so cached items never outlive the request.
    let usage = admission.usage();
    let mut store = state.store.metered(Arc::clone(&usage));
    if operation.is_subscription() {
        let results = state.streams.clone().map(|streams| {
            graphql::live::results(graphql::live::Execution {
                schema: state.api.schema.clone(),
                rendering: state.api.rendering().clone(),
                document,
                operation_name: request.operation_name,
                variables: std::mem::take(&mut *request.variables)
                    .into_iter()
                    .collect(),
                introspection: may_introspect,
                store,
                caller,
                streams,
            })
        });
        return match streaming {
            Streaming::Socket(slot) if results.is_some() => {
                *slot = results;
                StatusCode::OK.into_response()
            }
            Streaming::Socket(_) => subscriptions_unavailable(format, state.metrics()),
            Streaming::Events(stop) => super::sse::subscribe(results, stop),
            Streaming::Refused => subscriptions_unavailable(format, state.metrics()),
        };
    }
    // A document async-graphql has executed before goes to the direct executor when it can
    // answer it (see `graphql::direct`); when it gives way, async-graphql answers.
    if document.validated()
        && let Some(plan) = document.plan(|| {
            direct::plan(
                state.api.model,
                state.api.schema.registry(),
                &document,
                operation,
            )
        })
        && plan.is_for(operation)
    {
        // What fails here fails again at once if async-graphql asks for it, unsent.
        store = store.remembering(Arc::default());
        let inputs = direct::Inputs {
            model: state.api.model,
            env: Env {
                store: &store,
                codec: &state.api.codec,
                limits: &state.limits,
                caller: &caller,
            },
            variables: &request.variables,
        };
        // The bytes async-graphql's `Response` serializes to: `data`, then `extensions`.
        let mut body = Vec::with_capacity(RESPONSE_CAPACITY);
        body.extend_from_slice(b"{\"data\":");
        let answered = direct::execute(plan, &inputs, &mut body).await;
        state.metrics().direct_execution(answered.is_some());
        if answered.is_some() {
            span.executor("direct");
            if let Some(cost) = cost_extension(state, &usage) {
                body.extend_from_slice(b",\"extensions\":{\"cost\":");
                if serde_json::to_writer(&mut body, &cost).is_err() {
                    return unserializable(format);
                }
                body.push(b'}');
            }
            body.push(b'}');
            return json_response(StatusCode::OK, body, format);
        }
    }
    request.set_parsed_query(ExecutableDocument::clone(&document));
    let null_items = Arc::new(graphql::nullability::NullItems::default());
    if !may_introspect {
        request = request.disable_introspection();
    }
    let request = request
        .data(graphql::node::request_loader(&store))
        .data(graphql::resolve::PagesAhead::default())
        .data(store)
        .data(caller)
        .data(Arc::clone(&null_items));
    span.executor("general");
    let mut response = state.api.schema_for(may_introspect).execute(request).await;
    if !graphql::error::is_request_error(&response) {
        document.mark_validated();
    }
    let registry = state.api.schema.registry();
    graphql::nullability::propagate(&mut response, registry, &document, operation, &null_items);
    graphql::order::in_document_order(&mut response.data, registry, &document, operation);
    if let Some(cost) = cost_extension(state, &usage) {
        response.extensions.insert("cost".to_owned(), cost);
    }
    graphql_response(response, format, state.metrics())
}

/// The request's own document (no manifest lists it): parsed from its text, from the document
/// cache, or an Apollo automatic persisted query's, with its text and the persisted query's hash
/// it came with, if any; or the response refusing it.
async fn unlisted_document(
    state: &AppState,
    params: &mut Params,
    extensions: &mut Map<String, Value>,
    format: Format,
    span: &OperationSpan,
) -> Result<(Arc<Prepared>, String, Option<String>), Response> {
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
    let persisted_hash = persisted_query.as_ref().map(|(hash, _)| hash.clone());
    let document = match (parsed, persisted_query) {
        (Some(parsed), None) => parsed,
        (Some(parsed), Some((hash, persisted))) => {
            // (The gate refused a hash with another text already, unless the request named its
            // document by `documentId` or `doc_id` too: the same refusal here.)
            if trusted::sha256_hex(&query) != hash {
                state
                    .trusted
                    .refused(trusted::Refusal::Mismatch, state.metrics());
                return Err(request_error(
                    ServerError::new(trusted::Refusal::Mismatch.message(), None),
                    trusted::Refusal::Mismatch.code(),
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
                state.trusted.missed(state.metrics());
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
            None => trusted::sha256_hex(&query),
        },
        persisted_hash.is_some(),
    );
    Ok((document, query, persisted_hash))
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

/// The refusal of a subscription by a server that holds none open.
pub(super) fn subscriptions_unavailable(format: Format, metrics: &Metrics) -> Response {
    request_error(
        ServerError::new(
            "This server does not hold subscriptions open: run `dynarelay serve`.",
            None,
        ),
        SUBSCRIPTIONS_UNAVAILABLE,
        format,
        metrics,
    )
}

/// `extensions.cost`: what the request's DynamoDB calls cost, when the server adds it.
fn cost_extension(state: &AppState, usage: &Usage) -> Option<async_graphql::Value> {
    if !state.http.cost_extension {
        return None;
    }
    async_graphql::to_value(usage.totals()).ok()
}

/// A request error found before execution, with its code.
pub(super) fn request_error(
    mut error: ServerError,
    code: &str,
    format: Format,
    metrics: &Metrics,
) -> Response {
    set_code(&mut error, code);
    graphql_response(
        async_graphql::Response::from_errors(vec![error]),
        format,
        metrics,
    )
}

fn set_code(error: &mut ServerError, code: &str) {
    let extensions = error.extensions.get_or_insert_with(Default::default);
    if extensions.get("code").is_none() {
        extensions.set("code", code);
    }
}

mod response;

use response::{RESPONSE_CAPACITY, graphql_response, json_response, unserializable};

#[cfg(test)]
mod tests;
