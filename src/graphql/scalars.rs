//! The custom scalars: `DateTime`, `Decimal`, `BigInt`, `Bytes` and `JSON`, and the GraphQL type
//! of each of a model's field types. Each scalar checks its input literals and variables before
//! execution; resolvers convert them exactly (see [`super::values`]).

use async_graphql::{
    Value,
    dynamic::{Scalar, TypeRef},
};
use base64::{Engine, engine::general_purpose::STANDARD};

use super::values;
use crate::model::{FieldType, Model, Scalar as ModelScalar};

/// What a `Decimal` may look like, added to validation errors about one.
const DECIMAL_RULE: &str = "A Decimal is a string holding a number as DynamoDB reads it: decimal digits with an optional sign, point and exponent (\"19.99\", \"-3\", \"2.5E1\"), at most 38 significant digits, 0 or between 1E-130 and 1E+126 in magnitude.";

/// What a `BigInt` may look like, added to validation errors about one.
const BIG_INT_RULE: &str = "A BigInt is a JSON integer or a string holding a whole number (\"42\", \"-7\", \"4.2E1\") from -9223372036854775808 to 9223372036854775807.";

/// The rule for a value of one of our number scalars, for a validation error that names only
/// its type (async-graphql's `Invalid value for argument "x", expected type "Decimal"`).
pub fn input_rule(message: &str) -> Option<&'static str> {
    if message.ends_with("expected type \"Decimal\"") {
        Some(DECIMAL_RULE)
    } else if message.ends_with("expected type \"BigInt\"") {
        Some(BIG_INT_RULE)
    } else {
        None
    }
}

/// The scalar type called `name`, if it is one of ours.
pub fn scalar(name: &str) -> Option<Scalar> {
    Some(match name {
        "DateTime" => Scalar::new("DateTime")
            .description(
                "A point in time as an RFC 3339 string in UTC with millisecond precision, for example\n`\"2023-01-01T00:00:00.123Z\"`. Inputs may use any UTC offset but no finer than milliseconds.",
            )
            .specified_by_url("https://datatracker.ietf.org/doc/html/rfc3339")
            .validator(|value| values::date_time(value).is_ok()),
        "Decimal" => Scalar::new("Decimal")
            .description(
                "An exact decimal number, always sent and received as a string such as `\"19.99\"`, with up to\n38 significant digits. It is never rounded through a floating-point type: use a decimal\nlibrary on the client if you compute with it. Inputs may take any form DynamoDB reads as a\nnumber (`\"2.5E1\"`, `\"+7\"`, `\"0.50\"`); answers are DynamoDB's own form (`\"25\"`, `\"7\"`, `\"0.5\"`).",
            )
            .validator(|value| values::decimal(value).is_ok()),
        "BigInt" => Scalar::new("BigInt")
            .description(
                "A 64-bit signed integer, sent as a string such as `\"9007199254740993\"` so that JavaScript\nclients keep every digit. Inputs may also be JSON integers.",
            )
            .validator(|value| values::big_int(value).is_some()),
        "Bytes" => Scalar::new("Bytes")
            .description("Binary data as a standard base64 string (RFC 4648, with padding).")
            .specified_by_url("https://datatracker.ietf.org/doc/html/rfc4648#section-4")
            .validator(|value| matches!(value, Value::String(s) if STANDARD.decode(s).is_ok())),
        "JSON" => Scalar::new("JSON").description(
            "Any JSON value: a DynamoDB map, list or free-form attribute. Numbers that a double cannot\nhold exactly are sent as strings.",
        ),
        _ => return None,
    })
}

/// The GraphQL name of a field's scalar.
pub fn scalar_name(model: &Model, scalar: ModelScalar) -> &str {
    match scalar {
        ModelScalar::String => TypeRef::STRING,
        ModelScalar::Id => TypeRef::ID,
        ModelScalar::Int => TypeRef::INT,
        ModelScalar::BigInt => "BigInt",
        ModelScalar::Float => TypeRef::FLOAT,
        ModelScalar::Decimal => "Decimal",
        ModelScalar::Boolean => TypeRef::BOOLEAN,
        ModelScalar::DateTime(_) => "DateTime",
        ModelScalar::Bytes => "Bytes",
        ModelScalar::Json => "JSON",
        ModelScalar::Enum(e) => &model.enums[e].name,
    }
}

/// The output type of a field.
pub fn field_type(model: &Model, ty: &FieldType, nullable: bool) -> TypeRef {
    let inner = match ty {
        FieldType::Scalar(s) => TypeRef::named(scalar_name(model, *s)),
        FieldType::List {
            item,
            item_nullable,
            ..
        } => {
            let item = TypeRef::named(scalar_name(model, *item));
            TypeRef::List(Box::new(if *item_nullable {
                item
            } else {
                TypeRef::NonNull(Box::new(item))
            }))
        }
    };
    if nullable {
        inner
    } else {
        TypeRef::NonNull(Box::new(inner))
    }
}
