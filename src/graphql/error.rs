//! The error boundary: every failure a resolver returns becomes a safe message plus an
//! `extensions.code`. Internal details are logged, never sent.

use std::fmt;

use async_graphql::ErrorExtensions;
use aws_sdk_dynamodb::error::DisplayErrorContext;

use crate::{dynamo::StoreError, pagination::PageArgError};

/// `extensions.code` for input the client must change.
pub const BAD_USER_INPUT: &str = "BAD_USER_INPUT";
/// `extensions.code` for failures the client cannot fix.
pub const INTERNAL_SERVER_ERROR: &str = "INTERNAL_SERVER_ERROR";
/// `extensions.code` when DynamoDB cannot be reached, times out, or throttles past the retries:
/// the same request may succeed later.
pub const SERVICE_UNAVAILABLE: &str = "SERVICE_UNAVAILABLE";

/// `extensions.code` when the caller's credentials are missing, invalid or expired.
pub const UNAUTHENTICATED: &str = "UNAUTHENTICATED";
/// `extensions.code` when the caller may not do what it asked (the model's `allow` rules).
pub const FORBIDDEN: &str = "FORBIDDEN";

/// The one message for every rejected cursor, so a client learns nothing about why.
pub const INVALID_CURSOR: &str = "The cursor is not valid for this connection.";

/// An error as clients see it. Deliberately not `Display`: that keeps async-graphql's blanket
/// `From<T: Display>` from turning it into an error with an arbitrary message, and a bare `?` on
/// any other error type cannot compile in a resolver returning `ApiResult`.
#[derive(Clone)]
pub enum ApiError {
    /// The request cannot be served as sent.
    BadUserInput(String),
    /// Something failed inside; the details went to the log.
    Internal,
    /// DynamoDB is unreachable, slow or throttling; the details went to the log.
    Unavailable,
    /// The caller may not do this.
    Forbidden(String),
    /// `totalCount` would have DynamoDB evaluate more than this many items (`--count-budget`).
    CountBudgetExceeded(u64),
}

/// A resolver result.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// A rejected cursor.
    pub fn invalid_cursor() -> Self {
        Self::BadUserInput(INVALID_CURSOR.to_owned())
    }
}

impl fmt::Debug for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadUserInput(message) => write!(f, "BadUserInput({message:?})"),
            Self::Internal => f.write_str("Internal"),
            Self::Unavailable => f.write_str("Unavailable"),
            Self::Forbidden(message) => write!(f, "Forbidden({message:?})"),
            Self::CountBudgetExceeded(budget) => write!(f, "CountBudgetExceeded({budget})"),
        }
    }
}

impl From<ApiError> for async_graphql::Error {
    fn from(err: ApiError) -> Self {
        let (message, code) = match err {
            ApiError::BadUserInput(message) => (message, BAD_USER_INPUT),
            ApiError::Internal => ("Internal server error.".to_owned(), INTERNAL_SERVER_ERROR),
            ApiError::Unavailable => (
                "The service is temporarily unavailable; try again shortly.".to_owned(),
                SERVICE_UNAVAILABLE,
            ),
            ApiError::Forbidden(message) => (message, FORBIDDEN),
            ApiError::CountBudgetExceeded(budget) => (
                format!(
                    "Not counted: more than {budget} items would be read to count them. Narrow \
                     the connection with its arguments, or page without `totalCount`."
                ),
                "COUNT_BUDGET_EXCEEDED",
            ),
        };
        async_graphql::Error::new(message).extend_with(|_, ext| ext.set("code", code))
    }
}

/// Checks the bytes of a client-supplied string or binary key value (a key argument or input
/// field): DynamoDB rejects empty ones and ones over 2048 bytes, which must surface as bad
/// input, not an internal error.
pub fn check_key_value(value: &[u8], field: &str) -> ApiResult<()> {
    if value.is_empty() {
        return Err(ApiError::BadUserInput(format!(
            "`{field}` must not be empty."
        )));
    }
    if value.len() > crate::cursor::MAX_KEY_VALUE_BYTES {
        return Err(ApiError::BadUserInput(format!(
            "`{field}` must be at most {} bytes.",
            crate::cursor::MAX_KEY_VALUE_BYTES
        )));
    }
    Ok(())
}

impl From<PageArgError> for ApiError {
    fn from(err: PageArgError) -> Self {
        Self::BadUserInput(err.to_string())
    }
}

impl From<std::sync::Arc<StoreError>> for ApiError {
    fn from(err: std::sync::Arc<StoreError>) -> Self {
        store_failure(&err, "batched load failed")
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        store_failure(&err, "store operation failed")
    }
}

/// Logs a store failure in full and masks it for the client.
fn store_failure(err: &StoreError, what: &str) -> ApiError {
    if err.is_unavailable() {
        tracing::warn!(error = %DisplayErrorContext(err), "{what}: DynamoDB unavailable");
        ApiError::Unavailable
    } else {
        tracing::error!(error = %DisplayErrorContext(err), "{what}");
        ApiError::Internal
    }
}

/// Whether a response answers a request error: one raised before execution (the document,
/// validation, variables, a persisted query), leaving no `data` and errors without a `path`.
pub fn is_request_error(response: &async_graphql::Response) -> bool {
    response.data == async_graphql::Value::Null
        && !response.errors.is_empty()
        && response.errors.iter().all(|error| error.path.is_empty())
}
