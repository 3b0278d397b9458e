//! Traces: OpenTelemetry spans of GraphQL requests, exported over OTLP to a collector.
//!
//! Off unless `--trace-endpoint` names a collector, and then nothing here runs: the spans below
//! are `tracing` spans of their own target ([`TARGET`]), which no layer enables, so that each
//! costs the check of a cached flag. When on, a layer of `tracing-opentelemetry` turns them into
//! OpenTelemetry spans, which the SDK's batch processor exports from a thread of its own
//! ([`Traces::start`]):
//!
//! | span | kind | what it carries |
//! |---|---|---|
//! | `POST /graphql` | server | method, route, status; its parent from `traceparent`/`tracestate` or `X-Amzn-Trace-Id` |
//! | `query Name` | internal | operation type and name, the document's SHA-256, persisted query, executor, error codes |
//! | `page Type.field` | internal | connection, table, index, size asked, direction, whether a cursor was given, edges, next/previous |
//! | `DynamoDB.Query` | client | OpenTelemetry's DynamoDB conventions: operation, tables (an array), index, `Limit`, items returned and evaluated, capacity per table; retries, error code |
//!
//! Never in a span: variables, item or key values, cursors, tokens, caller identities, error
//! messages (only codes) and the document's text (only its hash), so that a trace store holds no
//! data of the tables. Trace ids begin with the time in seconds, as AWS X-Ray requires of the
//! ids it is given (through the AWS Distro for OpenTelemetry collector); any other backend takes
//! them as the random ids they otherwise are.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use anyhow::Context as _;
use opentelemetry::{
    KeyValue,
    propagation::{TextMapCompositePropagator, TextMapPropagator},
    trace::{TraceContextExt as _, TracerProvider as _},
};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::{
    Resource,
    propagation::TraceContextPropagator,
    runtime,
    trace::{Sampler, SdkTracerProvider, span_processor_with_async_runtime::BatchSpanProcessor},
};
use tracing::{Span, field::Empty};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::{Layer, filter::Targets, registry::LookupSpan};

/// The `tracing` target of the spans exported as traces, and of nothing else: logs never show
/// them ([`quiet_in_logs`]) and the trace layer takes no other span or event.
pub const TARGET: &str = "dynarelay::otel";

/// How spans travel to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceProtocol {
    /// OTLP over HTTP with protobuf bodies, a collector's port 4318; `/v1/traces` is added to
    /// the endpoint's path.
    #[value(name = "http/protobuf")]
    HttpProtobuf,
    /// OTLP over gRPC, a collector's port 4317.
    Grpc,
}

/// Where and how much to trace.
#[derive(Debug, Clone)]
pub struct TraceSettings {
    /// The collector's URL (`http://localhost:4318`); `https` is verified against the system's
    /// root certificates.
    pub endpoint: String,
    /// HTTP/protobuf or gRPC.
    pub protocol: TraceProtocol,
    /// The share of requests traced among those whose caller made no sampling decision (a
    /// `traceparent`'s sampled flag is always followed), from 0 to 1.
    pub sample_ratio: f64,
}

/// The running trace exporter. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// Starts the exporter and returns the layer that feeds it. The exporter's batches go out
    /// from a thread with a runtime of its own, every 5 seconds or 512 spans (the SDK's
    /// defaults, and its `OTEL_BSP_*` variables), so that no request waits for the collector
    /// and a collector that does not answer costs spans, never requests. The standard variables
    /// `OTEL_SERVICE_NAME` (default `dynarelay`), `OTEL_RESOURCE_ATTRIBUTES`,
    /// `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_EXPORTER_OTLP_TIMEOUT` apply. Must run inside a
    /// Tokio runtime that outlives the exporter (gRPC's channel runs on it).
    pub fn start<S>(settings: &TraceSettings) -> anyhow::Result<(Self, impl Layer<S> + use<S>)>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        anyhow::ensure!(
            (0.0..=1.0).contains(&settings.sample_ratio),
            "--trace-sample-ratio (DYNARELAY_TRACE_SAMPLE_RATIO) must be from 0 to 1, not {}",
            settings.sample_ratio
        );
        let exporter = match settings.protocol {
            TraceProtocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_endpoint(http_traces_url(&settings.endpoint)?)
                .with_http_client(http_client()?)
                .build(),
            TraceProtocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(settings.endpoint.clone())
                .build(),
        }
        .with_context(|| format!("the trace exporter to {}", settings.endpoint))?;
        let processor = BatchSpanProcessor::builder(exporter, runtime::TokioCurrentThread).build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                settings.sample_ratio,
            ))))
            .with_id_generator(opentelemetry_aws::trace::XrayIdGenerator::default())
            .with_resource(resource())
            .build();
        // A caller's `traceparent` wins over the `X-Amzn-Trace-Id` that AWS load balancers and
        // API Gateway add: the composite extracts in order, and the last context found stays.
        let propagator = TextMapCompositePropagator::new(vec![
            Box::new(opentelemetry_aws::trace::XrayPropagator::default())
                as Box<dyn TextMapPropagator + Send + Sync>,
            Box::new(TraceContextPropagator::new()),
        ]);
        opentelemetry::global::set_text_map_propagator(propagator);
        let layer = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("dynarelay"))
            // Source paths, thread names, targets and busy/idle times: nothing a reader of a
            // request's trace needs, and CPU on every span.
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_filter(Targets::new().with_target(TARGET, tracing::Level::TRACE));
        Ok((Self { provider }, layer))
    }

    /// Exports every span ended so far, for a Lambda function before its answer (the process
    /// may be frozen until the next event once it is given). On a blocking thread: the gRPC
    /// channel it may wait for runs on the calling runtime.
    pub async fn flush(&self) {
        let provider = self.provider.clone();
        let flushed = tokio::task::spawn_blocking(move || provider.force_flush()).await;
        if let Ok(Err(err)) = flushed {
            tracing::warn!(error = %err, "traces could not be exported");
        }
    }

    /// Exports what is left and stops the exporter.
    pub async fn shutdown(&self) {
        let provider = self.provider.clone();
        let stopped = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(err)) = stopped {
            tracing::warn!(error = %err, "traces could not be exported at shutdown");
        }
    }
}

/// The resource every span is from: `service.name` (`OTEL_SERVICE_NAME`, else `dynarelay`),
/// `service.version`, `OTEL_RESOURCE_ATTRIBUTES`, and in AWS Lambda the function's name.
fn resource() -> Resource {
    let mut resource = Resource::builder()
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("dynarelay");
    }
    if let Ok(function) = std::env::var("AWS_LAMBDA_FUNCTION_NAME") {
        resource = resource.with_attributes([
            KeyValue::new("cloud.provider", "aws"),
            KeyValue::new("cloud.platform", "aws_lambda"),
            KeyValue::new("faas.name", function),
        ]);
    }
    resource.build()
}

/// The OTLP/HTTP traces URL of a collector's `endpoint`: `/v1/traces` after its path, as the
/// OpenTelemetry specification adds it to `OTEL_EXPORTER_OTLP_ENDPOINT`.
fn http_traces_url(endpoint: &str) -> anyhow::Result<String> {
    let uri: http::Uri = endpoint
        .parse()
        .with_context(|| format!("--trace-endpoint {endpoint} is not a URL"))?;
    anyhow::ensure!(
        matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some(),
        "--trace-endpoint {endpoint} must be an http:// or https:// URL"
    );
    let base = endpoint.trim_end_matches('/');
    Ok(if base.ends_with("/v1/traces") {
        base.to_owned()
    } else {
        format!("{base}/v1/traces")
    })
}

/// The exporter's HTTP client: hyper over rustls with the system's roots, the stack the AWS SDK
/// already brings (as for JWKS), rather than the reqwest client the exporter would add.
fn http_client() -> anyhow::Result<impl opentelemetry_http::HttpClient + 'static> {
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(Duration::from_secs(5)));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(rustls::crypto::aws_lc_rs::default_provider())
        .context("reading the system's root certificates for the trace exporter")?
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(opentelemetry_http::hyper::HyperClient::new(
        https,
        Duration::from_secs(10),
        None,
    ))
}

/// The directive that keeps trace spans out of the logs, whatever `RUST_LOG` says.
pub fn quiet_in_logs() -> tracing_subscriber::filter::Directive {
    // A fixed, valid directive.
    format!("{TARGET}=off")
        .parse()
        .unwrap_or_else(|_| tracing_subscriber::filter::LevelFilter::OFF.into())
}

/// The span of one GraphQL HTTP request, child of the caller's trace when its headers carry one.
pub fn http_span(headers: &http::HeaderMap, method: &http::Method, route: &'static str) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "http",
        otel.name = format_args!("{method} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = route,
        url.path = route,
        http.response.status_code = Empty,
        otel.status_code = Empty,
    );
    if !span.is_disabled() {
        let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
            propagator.extract(&opentelemetry_http::HeaderExtractor(headers))
        });
        // Fails only for a span already started, which this one is not.
        let _ = span.set_parent(parent);
    }
    span
}

/// Records the response's status on an [`http_span`] (an error from 500 on, as for servers).
pub fn record_http_status(span: &Span, status: u16) {
    span.record("http.response.status_code", i64::from(status));
    if status >= 500 {
        span.record("otel.status_code", "error");
    }
}

/// The span of one GraphQL operation, filled in by [`OperationSpan`]'s methods as the request
/// is understood.
#[derive(Debug, Clone)]
pub struct OperationSpan(Span);

impl OperationSpan {
    /// A new operation span, child of the current (HTTP) span.
    pub fn new() -> Self {
        Self(tracing::info_span!(
            target: TARGET,
            "graphql",
            graphql.operation.type = Empty,
            graphql.operation.name = Empty,
            graphql.document.sha256 = Empty,
            graphql.persisted_query = Empty,
            dynarelay.executor = Empty,
            graphql.error.codes = Empty,
            otel.status_code = Empty,
        ))
    }

    /// No span, for a server that exports no traces: recording into it does nothing.
    pub fn none() -> Self {
        Self(Span::none())
    }

    /// The `tracing` span, to run the operation in.
    pub fn span(&self) -> &Span {
        &self.0
    }

    /// Whether the span is exported: what only a span needs is computed only then.
    pub fn is_on(&self) -> bool {
        !self.0.is_disabled()
    }

    /// The document, by the SHA-256 of its text (never the text: its literals are data).
    pub fn document(&self, sha256: impl FnOnce() -> String, persisted: bool) {
        if self.is_on() {
            self.0.record("graphql.document.sha256", sha256());
            if persisted {
                self.0.record("graphql.persisted_query", true);
            }
        }
    }

    /// The operation chosen: `query`, `mutation` or `subscription`, and its name if it has one.
    pub fn operation(&self, kind: &'static str, name: Option<&str>) {
        if self.is_on() {
            self.0.record("graphql.operation.type", kind);
            // Named once the operation is known, after the span started (an `otel.name`
            // recorded then would be ignored).
            let otel = self.0.context();
            match name {
                Some(name) => {
                    self.0.record("graphql.operation.name", name);
                    otel.span().update_name(format!("{kind} {name}"));
                }
                None => otel.span().update_name(kind),
            }
        }
    }

    /// Which executor answered: `direct` or `general`.
    pub fn executor(&self, executor: &'static str) {
        self.0.record("dynarelay.executor", executor);
    }

    /// The codes of the errors the response carries, if any.
    pub fn errors<'a>(&self, codes: impl IntoIterator<Item = &'a str>) {
        if self.is_on() {
            let mut codes: Vec<&str> = codes.into_iter().collect();
            if codes.is_empty() {
                return;
            }
            codes.sort_unstable();
            codes.dedup();
            self.0.record("graphql.error.codes", codes.join(","));
            self.0.record("otel.status_code", "error");
        }
    }
}

/// Records the codes of a response's errors on the current span, when it is an exported
/// operation span (see [`OperationSpan::errors`]).
pub fn record_error_codes<'a>(codes: impl IntoIterator<Item = &'a str>) {
    let span = Span::current();
    if span
        .metadata()
        .is_some_and(|metadata| metadata.target() == TARGET && metadata.name() == "graphql")
    {
        OperationSpan(span).errors(codes);
    }
}

impl Default for OperationSpan {
    fn default() -> Self {
        Self::new()
    }
}

/// `task`, to be spawned for the request being served (the loader's batches), kept in the
/// request's span for logs and in its trace for the exporter. The trace is carried on its own:
/// between the request's span and the spawner may stand spans the exporter never sees (a
/// library's, or debug ones), and a task entering only those would start a trace of its own,
/// sampled by the ratio rather than by the caller.
pub fn in_request<F: std::future::Future>(task: F) -> impl std::future::Future<Output = F::Output> {
    use opentelemetry::context::FutureExt as _;
    tracing::Instrument::in_current_span(task).with_current_context()
}

/// The span of one connection page read, child of the current span. `connection` is its field
/// (`Customer.orders`); `cursor` whether the client gave one (never its value).
pub fn page_span(
    connection: &'static str,
    table: &str,
    index: Option<&str>,
    size: usize,
    forward: bool,
    cursor: bool,
) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "page",
        otel.name = format_args!("page {connection}"),
        dynarelay.connection = connection,
        aws.dynamodb.index_name = index,
        dynarelay.page.size = count(size),
        dynarelay.page.direction = if forward { "forward" } else { "backward" },
        dynarelay.page.cursor = cursor,
        dynarelay.page.edges = Empty,
        dynarelay.page.has_next_page = Empty,
        dynarelay.page.has_previous_page = Empty,
    );
    record_table_names(&span, &[table]);
    span
}

/// Records what a page held on its [`page_span`].
pub fn record_page(span: &Span, edges: usize, has_next_page: bool, has_previous_page: bool) {
    span.record("dynarelay.page.edges", count(edges));
    span.record("dynarelay.page.has_next_page", has_next_page);
    span.record("dynarelay.page.has_previous_page", has_previous_page);
}

/// The span of one DynamoDB call on `tables`, child of the current span, named and described
/// as OpenTelemetry's semantic conventions for DynamoDB describe client calls (`DynamoDB.Query`;
/// `aws.dynamodb.table_names` is an array, `aws.dynamodb.consumed_capacity` an array of
/// DynamoDB's `ConsumedCapacity` as JSON).
pub fn dynamodb_span(
    operation: &'static str,
    tables: &[&str],
    index: Option<&str>,
    limit: Option<i32>,
) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "dynamodb",
        otel.name = format_args!("DynamoDB.{operation}"),
        otel.kind = "client",
        rpc.system = "aws-api",
        rpc.service = "DynamoDB",
        rpc.method = operation,
        db.system.name = "aws.dynamodb",
        aws.dynamodb.index_name = index,
        aws.dynamodb.limit = limit,
        aws.dynamodb.count = Empty,
        aws.dynamodb.scanned_count = Empty,
        dynarelay.dynamodb.retries = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    );
    record_table_names(&span, tables);
    span
}

/// `aws.dynamodb.table_names`, an array of strings as the conventions have it (a `tracing`
/// field holds no array, so it goes to the OpenTelemetry span directly). Nothing when traces
/// are off.
fn record_table_names(span: &Span, tables: &[&str]) {
    if !span.is_disabled() {
        span.set_attribute(
            "aws.dynamodb.table_names",
            string_array(tables.iter().map(|table| (*table).to_owned())),
        );
    }
}

/// Records the capacity a call consumed on its [`dynamodb_span`], per table, as the
/// conventions' `aws.dynamodb.consumed_capacity`: each table's `ConsumedCapacity` as JSON
/// (`{"TableName":"Orders","CapacityUnits":0.5}`). Nothing when traces are off.
pub fn record_consumed_capacity<'a>(
    span: &Span,
    consumed: impl IntoIterator<Item = (&'a str, f64)>,
) {
    if !span.is_disabled() {
        span.set_attribute(
            "aws.dynamodb.consumed_capacity",
            string_array(consumed.into_iter().map(|(table, units)| {
                serde_json::json!({ "TableName": table, "CapacityUnits": units }).to_string()
            })),
        );
    }
}

/// An OpenTelemetry array of strings.
fn string_array(values: impl Iterator<Item = String>) -> opentelemetry::Value {
    opentelemetry::Value::Array(opentelemetry::Array::String(
        values.map(opentelemetry::StringValue::from).collect(),
    ))
}

/// What one DynamoDB call did, for its [`dynamodb_span`].
#[derive(Debug, Clone, Copy)]
pub struct CallOutcome<'a> {
    /// Items returned.
    pub returned: u64,
    /// Items evaluated (read before filters).
    pub evaluated: u64,
    /// Attempts made, the first included, when counted.
    pub attempts: Option<u32>,
    /// DynamoDB's error code, or the kind of failure when there is no code; `None` on success.
    pub error: Option<&'a str>,
}

/// Records a call's outcome on its [`dynamodb_span`].
pub fn record_call(span: &Span, outcome: CallOutcome<'_>) {
    match outcome.error {
        None => {
            span.record("aws.dynamodb.count", count(outcome.returned));
            span.record("aws.dynamodb.scanned_count", count(outcome.evaluated));
        }
        Some(code) => {
            span.record("error.type", code);
            span.record("otel.status_code", "error");
        }
    }
    if let Some(attempts) = outcome.attempts {
        span.record(
            "dynarelay.dynamodb.retries",
            i64::from(attempts.saturating_sub(1)),
        );
    }
}

/// A count as the signed integer OpenTelemetry attributes hold (`tracing-opentelemetry` would
/// turn an unsigned one into text).
fn count(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

tokio::task_local! {
    /// The attempts of the DynamoDB call being traced, counted by [`CountAttempts`].
    static ATTEMPTS: Arc<AtomicU32>;
}

/// Runs a DynamoDB call, counting the SDK's attempts at it (retries included) when the client
/// has the [`CountAttempts`] interceptor; the count is read once the call is over.
pub async fn counting_attempts<F: std::future::Future>(call: F) -> (F::Output, u32) {
    let attempts = Arc::new(AtomicU32::new(0));
    let out = ATTEMPTS.scope(Arc::clone(&attempts), call).await;
    (out, attempts.load(Ordering::Relaxed))
}

/// An SDK interceptor that counts each attempt of the call [`counting_attempts`] runs: the SDK
/// reports no retry count in its output, and its own spans are not ours to record on.
#[derive(Debug, Default)]
pub struct CountAttempts;

impl aws_sdk_dynamodb::config::Intercept for CountAttempts {
    fn name(&self) -> &'static str {
        "CountAttempts"
    }

    fn read_before_attempt(
        &self,
        _context: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _components: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let _ = ATTEMPTS.try_with(|attempts| attempts.fetch_add(1, Ordering::Relaxed));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_endpoints_get_the_traces_path_once() {
        for (endpoint, url) in [
            ("http://localhost:4318", "http://localhost:4318/v1/traces"),
            ("http://localhost:4318/", "http://localhost:4318/v1/traces"),
            (
                "https://collector.example.com/otlp",
                "https://collector.example.com/otlp/v1/traces",
            ),
            (
                "http://127.0.0.1:4318/v1/traces",
                "http://127.0.0.1:4318/v1/traces",
            ),
        ] {
            assert_eq!(http_traces_url(endpoint).unwrap(), url);
        }
        for bad in ["localhost:4318", "ftp://x/", "not a url"] {
            assert!(http_traces_url(bad).is_err(), "{bad}");
        }
    }
}
