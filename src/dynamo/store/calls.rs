//! How the store runs each DynamoDB call: its name for metrics and spans, its outcome, duration
//! and cost recorded in the server's metrics, the request's usage and (when traces are on) a
//! span of its own.

use std::{future::Future, time::Instant};

use aws_sdk_dynamodb::{
    error::{ProvideErrorMetadata, SdkError},
    types::ConsumedCapacity,
};
use tracing::{Instrument, Span};

use super::Store;
use crate::{
    metrics::{CallCost, Outcome},
    telemetry,
};

impl Store {
    /// Runs the DynamoDB call `name` names on one table and records its outcome, duration and
    /// cost, per table too. The call comes boxed (`Unpin`): the SDK's futures are large, and
    /// moving them through this wrapper by value would put copies on the stack of every poll.
    pub(super) async fn observe<T, E, R>(
        &self,
        name: CallName<'_>,
        call: impl Future<Output = Result<T, SdkError<E, R>>> + Unpin,
        cost: impl FnOnce(&T) -> CallCost,
    ) -> Result<T, SdkError<E, R>>
    where
        E: ProvideErrorMetadata,
    {
        self.observe_on(name, call, |out, span| {
            let cost = cost(out);
            if let Some(table) = name.table() {
                self.metrics.table_cost(table, cost);
                telemetry::record_consumed_capacity(span, [(table, cost.capacity)]);
            }
            cost
        })
        .await
    }

    /// Runs one DynamoDB call and records its outcome and duration, and its total cost in the
    /// request's usage; when traces are on, in a span of its own too (see [`telemetry`]).
    /// `cost` records the cost per table, in the metrics and on the call's span.
    pub(super) async fn observe_on<T, E, R>(
        &self,
        name: CallName<'_>,
        call: impl Future<Output = Result<T, SdkError<E, R>>> + Unpin,
        cost: impl FnOnce(&T, &Span) -> CallCost,
    ) -> Result<T, SdkError<E, R>>
    where
        E: ProvideErrorMetadata,
    {
        let started = Instant::now();
        let span = telemetry::dynamodb_span(name.operation, name.tables, name.index, name.limit);
        let (result, attempts) = if span.is_disabled() {
            (call.await, None)
        } else {
            let (result, attempts) = telemetry::counting_attempts(call)
                .instrument(span.clone())
                .await;
            (result, Some(attempts))
        };
        let (outcome, cost) = match &result {
            Ok(out) => (Outcome::Ok, cost(out, &span)),
            Err(err) => (
                Outcome::of_error_code(err.as_service_error().and_then(ProvideErrorMetadata::code)),
                CallCost::default(),
            ),
        };
        self.metrics
            .dynamodb_call(name.operation, name.table(), outcome, started.elapsed());
        if !span.is_disabled() {
            let error = result.as_ref().err().map(error_kind);
            telemetry::record_call(
                &span,
                telemetry::CallOutcome {
                    returned: cost.returned,
                    evaluated: cost.evaluated,
                    // Counted only by a client with the interceptor (see `dynamo::counting_attempts`).
                    attempts: attempts.filter(|&n| n > 0),
                    error,
                },
            );
        }
        if let Some(usage) = &self.usage {
            usage.add(cost);
        }
        result
    }
}

/// A DynamoDB call as its metrics and span name it.
#[derive(Debug, Clone, Copy)]
pub(super) struct CallName<'a> {
    pub(super) operation: &'static str,
    /// The tables it reads or writes: one, or those of a call on several (`BatchGetItem`),
    /// which its span names and its metrics do not (they count it under `several`).
    pub(super) tables: &'a [&'a str],
    pub(super) several: bool,
    pub(super) index: Option<&'a str>,
    /// A read's `Limit`.
    pub(super) limit: Option<i32>,
}

impl<'a> CallName<'a> {
    pub(super) fn on(operation: &'static str, table: &'a &'a str) -> Self {
        Self {
            operation,
            tables: std::slice::from_ref(table),
            several: false,
            index: None,
            limit: None,
        }
    }

    pub(super) fn several(operation: &'static str, tables: &'a [&'a str]) -> Self {
        Self {
            operation,
            tables,
            several: true,
            index: None,
            limit: None,
        }
    }

    /// Its table, for a call on one.
    pub(super) fn table(&self) -> Option<&'a str> {
        match (self.several, self.tables) {
            (false, [table]) => Some(table),
            _ => None,
        }
    }
}

/// What a span says of a failed call: DynamoDB's error code, or the kind of failure when it
/// has none (never its message, which may quote the request's values).
pub(super) fn error_kind<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> &str {
    match err {
        SdkError::ServiceError(service) => service.err().code().unwrap_or("unknown_error"),
        SdkError::TimeoutError(_) => "timeout",
        SdkError::DispatchFailure(_) => "dispatch_failure",
        SdkError::ResponseError(_) => "response_error",
        SdkError::ConstructionFailure(_) => "construction_failure",
        _ => "_OTHER",
    }
}

pub(super) fn units(consumed: &ConsumedCapacity) -> f64 {
    consumed.capacity_units().unwrap_or(0.0)
}

pub(super) fn capacity(consumed: Option<&ConsumedCapacity>) -> f64 {
    consumed.map_or(0.0, units)
}

pub(super) fn read_cost(consumed: Option<&ConsumedCapacity>, scanned: i32, count: i32) -> CallCost {
    CallCost {
        capacity: capacity(consumed),
        evaluated: u64::try_from(scanned).unwrap_or(0),
        returned: u64::try_from(count).unwrap_or(0),
    }
}

pub(super) fn write_cost(consumed: Option<&ConsumedCapacity>) -> CallCost {
    CallCost {
        capacity: capacity(consumed),
        ..CallCost::default()
    }
}
