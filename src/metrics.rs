//! Prometheus metrics, served at `/metrics`, and the per-request usage behind `extensions.cost`.
//!
//! Label values come from small fixed sets (routes, operations, table names, error codes), so
//! no client input can grow the number of series.

use std::{
    sync::{Mutex, atomic::AtomicU64},
    time::Duration,
};

use aws_runtime::retries::classifiers::{THROTTLING_ERRORS, TRANSIENT_ERRORS};
use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{
        counter::Counter,
        family::{Family, MetricConstructor},
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};
use serde::Serialize;

/// The metrics of one server. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    http_requests: Family<HttpLabels, Counter>,
    http_duration: Family<RouteLabels, Histogram, Buckets>,
    graphql_errors: Family<CodeLabels, Counter>,
    cursor_rejections: Family<ConnectionLabels, Counter>,
    auth_rejections: Counter,
    rate_limited: Family<ReasonLabels, Counter>,
    rate_limit_callers: Gauge,
    dynamodb_calls: Family<CallLabels, Counter>,
    dynamodb_duration: Family<OperationLabels, Histogram, Buckets>,
    consumed_capacity: Family<TableLabels, Counter<f64, AtomicU64>>,
    items_evaluated: Family<TableLabels, Counter>,
    items_returned: Family<TableLabels, Counter>,
    items_unmatched: Family<TableLabels, Counter>,
    direct_executions: Family<OutcomeLabels, Counter>,
    connections_open: Family<ListenerLabels, Gauge>,
    connections_timed_out: Family<TimeoutLabels, Counter>,
    connection_cap_reached: Family<ListenerLabels, Counter>,
    stream_records: Family<TableLabels, Counter>,
    stream_gaps: Family<TableLabels, Counter>,
    subscription_resumes: Family<ResumeLabels, Counter>,
    stream_calls: Family<StreamCallLabels, Counter>,
    stream_call_failures: Family<StreamCallLabels, Counter>,
    stream_lag: Family<TableLabels, Gauge>,
    stream_unmatched: Family<TableLabels, Counter>,
    changes_published: Family<TableLabels, Counter>,
    relay_leases: Family<TableLabels, Gauge>,
    subscriptions: Gauge,
    subscriptions_refused: Family<ReasonLabels, Counter>,
    subscription_events: Counter,
    subscriptions_lost: Counter,
    subscription_backlog: Gauge,
    subscription_backlogs_overflowed: Family<TableLabels, Counter>,
    trusted_documents: Family<OutcomeNameLabels, Counter>,
    trusted_documents_refused: Family<ReasonLabels, Counter>,
    manifest_loads: Family<OutcomeNameLabels, Counter>,
    operations_listed: Gauge,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeNameLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResumeLabels {
    from: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StreamCallLabels {
    call: &'static str,
}

/// Which listener a connection came in on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Listener {
    /// The API (`--listen`).
    Api,
    /// The health listener (`--health-listen`).
    Health,
}

impl Listener {
    /// Its metric label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Health => "health",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ListenerLabels {
    listener: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TimeoutLabels {
    listener: &'static str,
    timeout: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    route: &'static str,
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConnectionLabels {
    connection: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    operation: &'static str,
    table: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TableLabels {
    table: String,
}

/// Latency buckets from 1 ms to about 16 s, doubling.
#[derive(Clone, Debug)]
struct Buckets;

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(exponential_buckets(0.001, 2.0, 15))
    }
}

/// How one DynamoDB call ended, as a metric label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It succeeded.
    Ok,
    /// A conditional write's condition did not hold (an expected answer, not a failure).
    ConditionFailed,
    /// Throttled past the SDK's retries.
    Throttled,
    /// No answer: connection failure, timeout, or a DynamoDB 5xx.
    Unavailable,
    /// DynamoDB rejected the request.
    Rejected,
}

impl Outcome {
    /// The outcome for a DynamoDB error code; `None` is a failure without one (transport or
    /// timeout). Decided by code, never by message, with the SDK's own lists of the codes its
    /// standard retry mode treats as throttling and as transient.
    pub fn of_error_code(code: Option<&str>) -> Self {
        match code {
            None | Some("InternalServerError" | "ServiceUnavailable") => Self::Unavailable,
            Some(code) if TRANSIENT_ERRORS.contains(&code) => Self::Unavailable,
            Some(code) if THROTTLING_ERRORS.contains(&code) => Self::Throttled,
            Some("ConditionalCheckFailedException") => Self::ConditionFailed,
            Some(_) => Self::Rejected,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ConditionFailed => "condition_failed",
            Self::Throttled => "throttled",
            Self::Unavailable => "unavailable",
            Self::Rejected => "rejected",
        }
    }
}

/// What one DynamoDB call cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CallCost {
    /// Capacity units DynamoDB reported (read and write together).
    pub capacity: f64,
    /// Items DynamoDB evaluated (read, before any filter).
    pub evaluated: u64,
    /// Items it returned.
    pub returned: u64,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Fresh metrics, all zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("dynarelay");
        let http_requests = Family::<HttpLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by route, method and status",
            http_requests.clone(),
        );
        let http_duration = Family::new_with_constructor(Buckets);
        registry.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request, by route",
            http_duration.clone(),
        );
        let graphql_errors = Family::<CodeLabels, Counter>::default();
        registry.register(
            "graphql_errors",
            "GraphQL errors returned to clients, by extensions.code",
            graphql_errors.clone(),
        );
        let cursor_rejections = Family::<ConnectionLabels, Counter>::default();
        registry.register(
            "cursor_rejections",
            "Cursors rejected as malformed, forged, expired or from another connection, by \
             connection",
            cursor_rejections.clone(),
        );
        let auth_rejections = Counter::default();
        registry.register(
            "auth_rejected",
            "Requests refused because their Authorization header or bearer token is not valid",
            auth_rejections.clone(),
        );
        let rate_limited = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "rate_limited",
            "GraphQL requests refused with 429 by a per-caller rate limit, by reason: `requests` \
             or `read_units`",
            rate_limited.clone(),
        );
        let rate_limit_callers = Gauge::default();
        registry.register(
            "rate_limit_callers",
            "Callers (token subjects and client addresses) whose rate-limit buckets are kept",
            rate_limit_callers.clone(),
        );
        let dynamodb_calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "dynamodb_calls",
            "DynamoDB API calls (after the SDK's retries), by operation, table and outcome",
            dynamodb_calls.clone(),
        );
        let dynamodb_duration = Family::new_with_constructor(Buckets);
        registry.register(
            "dynamodb_call_duration_seconds",
            "Time a DynamoDB API call took, retries included, by operation",
            dynamodb_duration.clone(),
        );
        let consumed_capacity = Family::<TableLabels, Counter<f64, AtomicU64>>::default();
        registry.register(
            "dynamodb_consumed_capacity_units",
            "Read and write capacity units DynamoDB reported as consumed, by table",
            consumed_capacity.clone(),
        );
        let items_evaluated = Family::<TableLabels, Counter>::default();
        registry.register(
            "dynamodb_items_evaluated",
            "Items DynamoDB read for Query, Scan and gets, before filters, by table",
            items_evaluated.clone(),
        );
        let items_returned = Family::<TableLabels, Counter>::default();
        registry.register(
            "dynamodb_items_returned",
            "Items DynamoDB returned after filters, by table",
            items_returned.clone(),
        );
        let items_unmatched = Family::<TableLabels, Counter>::default();
        registry.register(
            "items_unmatched",
            "Items read from a table shared by several entities that are none of the entities \
             asked for (matching no key template or type), skipped, by table",
            items_unmatched.clone(),
        );
        let direct_executions = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "graphql_direct_executions",
            "Queries of documents executed before that the direct executor took: answered \
             (outcome=\"answered\") or given way to the general executor (outcome=\"gave_way\")",
            direct_executions.clone(),
        );
        let connections_open = Family::<ListenerLabels, Gauge>::default();
        registry.register(
            "http_connections_open",
            "Client connections open now, by listener",
            connections_open.clone(),
        );
        let connections_timed_out = Family::<TimeoutLabels, Counter>::default();
        registry.register(
            "http_connections_timed_out",
            "Client connections closed by the header-read timeout (timeout=\"header_read\") or \
             the idle timeout (timeout=\"idle\"), by listener",
            connections_timed_out.clone(),
        );
        let connection_cap_reached = Family::<ListenerLabels, Counter>::default();
        registry.register(
            "http_connection_cap_reached",
            "Times the listener stopped accepting because its connection cap was reached (new \
             connections then wait in the kernel's backlog), by listener",
            connection_cap_reached.clone(),
        );
        let stream_records = Family::<TableLabels, Counter>::default();
        registry.register(
            "stream_records",
            "Records read from tables' DynamoDB streams and passed to subscribers, by table",
            stream_records.clone(),
        );
        let stream_gaps = Family::<TableLabels, Counter>::default();
        registry.register(
            "stream_gaps",
            "Times a table's stream lost records before they were read (trimmed, or the stream \
             replaced), by table",
            stream_gaps.clone(),
        );
        let subscription_resumes = Family::<ResumeLabels, Counter>::default();
        registry.register(
            "subscription_resumes",
            "Subscriptions resumed from a position, by where what they missed was read: redis, \
             stream (the table's stream; a resume Redis could not finish counts in both), or \
             expired (no longer kept: POSITION_EXPIRED)",
            subscription_resumes.clone(),
        );
        let stream_calls = Family::<StreamCallLabels, Counter>::default();
        registry.register(
            "stream_calls",
            "Calls made to follow tables' streams (DescribeTable, DescribeStream, \
             GetShardIterator, GetRecords) by readers, relays and resumed subscriptions, and the \
             Redis reads of resumed subscriptions (XRANGE), by call",
            stream_calls.clone(),
        );
        let stream_call_failures = Family::<StreamCallLabels, Counter>::default();
        registry.register(
            "stream_call_failures",
            "DynamoDB Streams calls that failed (after the SDK's retries) and were retried by the \
             reader, by call",
            stream_call_failures.clone(),
        );
        let stream_lag = Family::<TableLabels, Gauge>::default();
        registry.register(
            "stream_lag_seconds",
            "Age of the last stream record read, by table, when it was read: how far the reader \
             is behind the table's writes (records' times are rounded to the second, by DynamoDB \
             Local to the minute); on an instance reading changes from Redis, the age of the last \
             Redis entry read, since the relay appended it",
            stream_lag.clone(),
        );
        let stream_unmatched = Family::<TableLabels, Counter>::default();
        registry.register(
            "stream_changes_unmatched",
            "Stream records of items that are no entity of the model (no entity's rule tells \
             them), skipped by every subscriber, by table",
            stream_unmatched.clone(),
        );
        let changes_published = Family::<TableLabels, Counter>::default();
        registry.register(
            "changes_published",
            "Changes a relay (`dynarelay relay` or `lambda-relay`) appended to Redis for the \
             fleet's instances, by table",
            changes_published.clone(),
        );
        let relay_leases = Family::<TableLabels, Gauge>::default();
        registry.register(
            "relay_leases",
            "Stream shards whose lease this relay holds and reads, by table (0 on a relay standing \
             by while another holds them all)",
            relay_leases.clone(),
        );
        let subscriptions = Gauge::default();
        registry.register(
            "subscriptions",
            "Subscriptions running now, over WebSocket and server-sent events",
            subscriptions.clone(),
        );
        let subscriptions_refused = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "subscriptions_refused",
            "Subscriptions refused by a cap, by reason: `server` (--max-subscriptions) or \
             `caller` (--max-subscriptions-per-caller)",
            subscriptions_refused.clone(),
        );
        let subscription_events = Counter::default();
        registry.register(
            "subscription_events",
            "Changes sent to subscribers (one per subscriber that receives it)",
            subscription_events.clone(),
        );
        let subscriptions_lost = Counter::default();
        registry.register(
            "subscriptions_lost",
            "Subscriptions ended with CHANGES_LOST: their subscriber fell too far behind, or the \
             stream lost records",
            subscriptions_lost.clone(),
        );
        let subscription_backlog = Gauge::default();
        registry.register(
            "subscription_backlog",
            "Changes waiting in subscriptions' own backlogs to be sent, in all: it grows while \
             subscribers (or the process) fall behind their changes",
            subscription_backlog.clone(),
        );
        let subscription_backlogs_overflowed = Family::<TableLabels, Counter>::default();
        registry.register(
            "subscription_backlogs_overflowed",
            "Subscriptions whose own backlog passed its bound (their client read too slowly, or \
             their partition was written faster than their socket drains), each then ended with \
             CHANGES_LOST, by table",
            subscription_backlogs_overflowed.clone(),
        );
        let trusted_documents = Family::<OutcomeNameLabels, Counter>::default();
        registry.register(
            "trusted_documents",
            "GraphQL requests that ran (every check before execution passed), by how their \
             document was found: `id` (a listed operation named by its id), `text` (a listed \
             operation sent in full) or `unlisted` (a document no operation manifest lists: \
             --trusted-documents off or log, or an exempt caller); counted when manifests are \
             loaded or the mode is not off",
            trusted_documents.clone(),
        );
        let trusted_documents_refused = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "trusted_documents_refused",
            "GraphQL requests refused before parsing by --trusted-documents, by reason: \
             `not_found` (an unknown id; and an automatic persisted query's unknown hash, when \
             requests that ran are counted), `not_in_list` (a document no manifest lists), \
             `id_required` (a document sent in full under --require-operation-ids) or \
             `mismatch` (an id sent beside a text that is not its document)",
            trusted_documents_refused.clone(),
        );
        let manifest_loads = Family::<OutcomeNameLabels, Counter>::default();
        registry.register(
            "operation_manifest_loads",
            "Loads of the operation manifests (at start, on a file change or SIGHUP), by outcome: \
             `loaded`, or `refused` (a manifest did not load or validate; the operations loaded \
             before still serve)",
            manifest_loads.clone(),
        );
        let operations_listed = Gauge::default();
        registry.register(
            "operations_listed",
            "Operations the loaded operation manifests list",
            operations_listed.clone(),
        );
        Self {
            registry,
            trusted_documents,
            trusted_documents_refused,
            manifest_loads,
            operations_listed,
            http_requests,
            http_duration,
            graphql_errors,
            cursor_rejections,
            auth_rejections,
            rate_limited,
            rate_limit_callers,
            dynamodb_calls,
            dynamodb_duration,
            consumed_capacity,
            items_evaluated,
            items_returned,
            items_unmatched,
            direct_executions,
            connections_open,
            connections_timed_out,
            connection_cap_reached,
            stream_records,
            stream_gaps,
            subscription_resumes,
            stream_calls,
            stream_call_failures,
            stream_lag,
            stream_unmatched,
            changes_published,
            relay_leases,
            subscriptions,
            subscriptions_refused,
            subscription_events,
            subscriptions_lost,
            subscription_backlog,
            subscription_backlogs_overflowed,
        }
    }

    /// Records how a GraphQL request's document was found: `id`, `text` or `unlisted`.
    pub fn trusted_document(&self, outcome: &'static str) {
        self.trusted_documents
            .get_or_create(&OutcomeNameLabels { outcome })
            .inc();
    }

    /// Requests whose document was found as `outcome` so far.
    pub fn trusted_documents(&self, outcome: &'static str) -> u64 {
        self.trusted_documents
            .get_or_create(&OutcomeNameLabels { outcome })
            .get()
    }

    /// Records a request refused by the trusted documents, for `reason`.
    pub fn trusted_document_refused(&self, reason: &'static str) {
        self.trusted_documents_refused
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// Requests refused by the trusted documents for `reason` so far.
    pub fn trusted_documents_refused(&self, reason: &'static str) -> u64 {
        self.trusted_documents_refused
            .get_or_create(&ReasonLabels { reason })
            .get()
    }

    /// Records a load of the operation manifests (`loaded` or `refused`), with the operations
    /// listed after it.
    pub fn manifest_load(&self, outcome: &'static str, listed: usize) {
        self.manifest_loads
            .get_or_create(&OutcomeNameLabels { outcome })
            .inc();
        self.operations_listed
            .set(i64::try_from(listed).unwrap_or(i64::MAX));
    }

    /// Loads of the operation manifests with `outcome` so far.
    pub fn manifest_loads(&self, outcome: &'static str) -> u64 {
        self.manifest_loads
            .get_or_create(&OutcomeNameLabels { outcome })
            .get()
    }

    /// Records a stream record of `table` passed to its subscribers.
    pub fn stream_record(&self, table: &str) {
        self.stream_records
            .get_or_create(&TableLabels {
                table: table.to_owned(),
            })
            .inc();
    }

    /// Records records of `table`'s stream lost before they were read.
    pub fn stream_gap(&self, table: &str) {
        self.stream_gaps
            .get_or_create(&TableLabels {
                table: table.to_owned(),
            })
            .inc();
    }

    /// Records a subscription resumed from a position: what it missed was read `from` Redis,
    /// the table's `stream`, or was no longer kept (`expired`).
    pub fn subscription_resumed(&self, from: &'static str) {
        self.subscription_resumes
            .get_or_create(&ResumeLabels { from })
            .inc();
    }

    /// Records how old the last record read of `table`'s stream was when it was read.
    pub fn stream_lag(&self, table: &str, lag: Duration) {
        self.stream_lag
            .get_or_create(&TableLabels {
                table: table.to_owned(),
            })
            .set(i64::try_from(lag.as_secs()).unwrap_or(i64::MAX));
    }

    /// Records a change of `table` a relay appended to Redis.
    pub fn change_published(&self, table: &str) {
        self.changes_published
            .get_or_create(&TableLabels {
                table: table.to_owned(),
            })
            .inc();
    }

    /// Records how many of `table`'s stream shards this relay holds the lease of.
    pub fn leases_held(&self, table: &str, leases: i64) {
        self.relay_leases
            .get_or_create(&TableLabels {
                table: table.to_owned(),
            })
            .set(leases);
    }

    /// Records a stream record of `table` whose item is no entity of the model.
    pub fn stream_unmatched(&self, table: &str) {
        self.stream_unmatched
            .get_or_create(&TableLabels {
                table: table.to_owned(),
            })
            .inc();
    }

    /// Records a subscription started (`1`) or ended (`-1`).
    pub fn subscriptions_running(&self, delta: i64) {
        self.subscriptions.inc_by(delta);
    }

    /// Subscriptions running now.
    pub fn subscriptions(&self) -> i64 {
        self.subscriptions.get()
    }

    /// Records a subscription refused by a cap: `server` or `caller`.
    pub fn subscription_refused(&self, reason: &'static str) {
        self.subscriptions_refused
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// Records a change sent to a subscriber.
    pub fn subscription_event(&self) {
        self.subscription_events.inc();
    }

    /// Records a subscription ended because changes were lost.
    pub fn subscription_lost(&self) {
        self.subscriptions_lost.inc();
    }

    /// Records changes entering (`delta` > 0) or leaving subscriptions' backlogs.
    pub fn subscription_backlog(&self, delta: i64) {
        self.subscription_backlog.inc_by(delta);
    }

    /// Changes waiting in subscriptions' backlogs now.
    pub fn subscription_backlog_now(&self) -> i64 {
        self.subscription_backlog.get()
    }

    /// Records a subscription of `table` whose backlog passed its bound.
    pub fn subscription_backlog_overflowed(&self, table: &str) {
        self.subscription_backlogs_overflowed
            .get_or_create(&TableLabels {
                table: table.to_owned(),
            })
            .inc();
    }

    /// Records a call made to follow a table's stream (`call` names it).
    pub fn stream_call(&self, call: &'static str) {
        self.stream_calls
            .get_or_create(&StreamCallLabels { call })
            .inc();
    }

    /// Records a failed call of a stream reader (`call` names it).
    pub fn stream_call_failed(&self, call: &'static str) {
        self.stream_call_failures
            .get_or_create(&StreamCallLabels { call })
            .inc();
    }

    /// Records a connection accepted on `listener`.
    pub fn connection_opened(&self, listener: Listener) {
        self.connections_open
            .get_or_create(&ListenerLabels {
                listener: listener.label(),
            })
            .inc();
    }

    /// Records a connection of `listener` closed.
    pub fn connection_closed(&self, listener: Listener) {
        self.connections_open
            .get_or_create(&ListenerLabels {
                listener: listener.label(),
            })
            .dec();
    }

    /// The connections open now on `listener`.
    pub fn connections_open(&self, listener: Listener) -> i64 {
        self.connections_open
            .get_or_create(&ListenerLabels {
                listener: listener.label(),
            })
            .get()
    }

    /// Records a connection of `listener` closed by a timeout: `header_read` or `idle`.
    pub fn connection_timed_out(&self, listener: Listener, timeout: &'static str) {
        self.connections_timed_out
            .get_or_create(&TimeoutLabels {
                listener: listener.label(),
                timeout,
            })
            .inc();
    }

    /// How many connections of `listener` the timeout `header_read` or `idle` closed.
    pub fn connections_timed_out(&self, listener: Listener, timeout: &'static str) -> u64 {
        self.connections_timed_out
            .get_or_create(&TimeoutLabels {
                listener: listener.label(),
                timeout,
            })
            .get()
    }

    /// Records that `listener` reached its connection cap and stopped accepting.
    pub fn connection_cap_reached(&self, listener: Listener) {
        self.connection_cap_reached
            .get_or_create(&ListenerLabels {
                listener: listener.label(),
            })
            .inc();
    }

    /// How many times `listener` reached its connection cap.
    pub fn connection_caps_reached(&self, listener: Listener) -> u64 {
        self.connection_cap_reached
            .get_or_create(&ListenerLabels {
                listener: listener.label(),
            })
            .get()
    }

    /// Records items skipped because they are none of the entities a read asked for.
    pub fn items_unmatched(&self, table: &str, count: u64) {
        self.items_unmatched
            .get_or_create(&TableLabels {
                table: table.to_owned(),
            })
            .inc_by(count);
    }

    /// Records one answered HTTP request, labelled as [`labels`] maps it.
    pub fn http_request(
        &self,
        route: &'static str,
        method: &'static str,
        status: u16,
        elapsed: Duration,
    ) {
        self.http_requests
            .get_or_create(&HttpLabels {
                route,
                method,
                status,
            })
            .inc();
        self.http_duration
            .get_or_create(&RouteLabels { route })
            .observe(elapsed.as_secs_f64());
    }

    /// Records a GraphQL error sent to a client.
    pub fn graphql_error(&self, code: &str) {
        self.graphql_errors
            .get_or_create(&CodeLabels {
                code: code.to_owned(),
            })
            .inc();
    }

    /// Records a query the direct executor answered, or gave way to the general executor.
    pub fn direct_execution(&self, answered: bool) {
        self.direct_executions
            .get_or_create(&OutcomeLabels {
                outcome: if answered { "answered" } else { "gave_way" },
            })
            .inc();
    }

    /// Records a rejected cursor on `connection` (such as `Customer.orders`).
    pub fn cursor_rejected(&self, connection: &'static str) {
        self.cursor_rejections
            .get_or_create(&ConnectionLabels { connection })
            .inc();
    }

    /// Records a request refused for its credentials.
    pub fn auth_rejected(&self) {
        self.auth_rejections.inc();
    }

    /// Records a request refused by a rate limit, for `reason` (`requests` or `read_units`).
    pub fn rate_limited(&self, reason: &'static str) {
        self.rate_limited
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// The gauge of callers the rate limiter tracks, which it keeps up to date.
    pub(crate) fn rate_limit_callers(&self) -> Gauge {
        self.rate_limit_callers.clone()
    }

    /// Records one DynamoDB call; `table` is `None` for a call on several tables. Its cost goes
    /// to [`Metrics::table_cost`].
    pub fn dynamodb_call(
        &self,
        operation: &'static str,
        table: Option<&str>,
        outcome: Outcome,
        elapsed: Duration,
    ) {
        self.dynamodb_calls
            .get_or_create(&CallLabels {
                operation,
                table: table.unwrap_or("several").to_owned(),
                outcome: outcome.label(),
            })
            .inc();
        self.dynamodb_duration
            .get_or_create(&OperationLabels { operation })
            .observe(elapsed.as_secs_f64());
    }

    /// Records what DynamoDB reported a call cost on `table`.
    pub fn table_cost(&self, table: &str, cost: CallCost) {
        let table = TableLabels {
            table: table.to_owned(),
        };
        if cost.capacity > 0.0 {
            self.consumed_capacity
                .get_or_create(&table)
                .inc_by(cost.capacity);
        }
        if cost.evaluated > 0 {
            self.items_evaluated
                .get_or_create(&table)
                .inc_by(cost.evaluated);
        }
        if cost.returned > 0 {
            self.items_returned
                .get_or_create(&table)
                .inc_by(cost.returned);
        }
    }

    /// Everything in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// The route and method labels of a request: its path mapped to a known route and its method to
/// a known one, so that clients cannot create series.
pub fn labels(path: &str, method: &str) -> (&'static str, &'static str) {
    let route = match path {
        "/graphql" => "/graphql",
        "/health" => "/health",
        "/ready" => "/ready",
        "/metrics" => "/metrics",
        "/" => "/",
        _ if path.starts_with("/graphiql/") => "/graphiql/{file}",
        _ => "other",
    };
    let method = match method {
        "GET" => "GET",
        "POST" => "POST",
        "OPTIONS" => "OPTIONS",
        "HEAD" => "HEAD",
        _ => "other",
    };
    (route, method)
}

/// What one GraphQL request cost in DynamoDB terms, shown to the client as `extensions.cost`.
#[derive(Debug, Default)]
pub struct Usage(Mutex<UsageTotals>);

/// The totals of a [`Usage`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    /// DynamoDB API calls made.
    pub dynamodb_calls: u64,
    /// Capacity units DynamoDB reported as consumed.
    pub consumed_capacity_units: f64,
    /// Items DynamoDB evaluated, before filters.
    pub items_evaluated: u64,
    /// Items DynamoDB returned.
    pub items_returned: u64,
}

impl Usage {
    /// Adds one call.
    pub fn add(&self, cost: CallCost) {
        // A poisoned lock only means another resolver panicked mid-update; the totals are still
        // plain numbers.
        let mut totals = self.0.lock().unwrap_or_else(|e| e.into_inner());
        totals.dynamodb_calls += 1;
        totals.consumed_capacity_units += cost.capacity;
        totals.items_evaluated += cost.evaluated;
        totals.items_returned += cost.returned;
    }

    /// The totals so far.
    pub fn totals(&self) -> UsageTotals {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests;
