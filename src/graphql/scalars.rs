//! Custom scalars: `DateTime` (RFC 3339, millisecond precision) and `Decimal` (exact string).

use async_graphql::{InputValueError, InputValueResult, Scalar, ScalarType, Value};
use chrono::{SecondsFormat, Utc};

use crate::number::DynamoNumber;

/// A point in time (see the GraphQL description on the impl).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateTime(pub chrono::DateTime<Utc>);

/// A point in time as an RFC 3339 string in UTC with millisecond precision, for example
/// `"2023-01-01T00:00:00.123Z"`. Inputs may use any UTC offset but no finer than milliseconds.
#[Scalar(
    name = "DateTime",
    specified_by_url = "https://datatracker.ietf.org/doc/html/rfc3339"
)]
impl ScalarType for DateTime {
    fn parse(value: Value) -> InputValueResult<Self> {
        let Value::String(s) = &value else {
            return Err(InputValueError::expected_type(value));
        };
        let parsed = chrono::DateTime::parse_from_rfc3339(s)
            .map_err(|_| {
                InputValueError::custom(
                    "expected an RFC 3339 date-time such as \"2023-01-01T00:00:00.123Z\"",
                )
            })?
            .with_timezone(&Utc);
        if parsed.timestamp_subsec_nanos() % 1_000_000 != 0 {
            return Err(InputValueError::custom(
                "DateTime values have millisecond precision",
            ));
        }
        Ok(Self(parsed))
    }

    fn to_value(&self) -> Value {
        Value::String(self.0.to_rfc3339_opts(SecondsFormat::Millis, true))
    }
}

/// An exact decimal number (see the GraphQL description on the impl).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decimal(pub DynamoNumber);

/// An exact decimal number, always sent and received as a string such as `"19.99"`, with up to
/// 38 significant digits. It is never rounded through a floating-point type: use a decimal
/// library on the client if you compute with it.
#[Scalar(name = "Decimal")]
impl ScalarType for Decimal {
    fn parse(value: Value) -> InputValueResult<Self> {
        match &value {
            Value::String(s) => DynamoNumber::parse(s)
                .map(Self)
                .map_err(|e| InputValueError::custom(e.to_string())),
            // Integers are exact in JSON; fractions may already have been rounded by the client.
            Value::Number(n) if n.is_i64() || n.is_u64() => Ok(Self(
                DynamoNumber::parse(&n.to_string())
                    .map_err(|e| InputValueError::custom(e.to_string()))?,
            )),
            Value::Number(_) => Err(InputValueError::custom(
                "send Decimal values as strings, such as \"19.99\", so they stay exact",
            )),
            _ => Err(InputValueError::expected_type(value)),
        }
    }

    fn to_value(&self) -> Value {
        Value::String(self.0.as_str().to_owned())
    }
}
