//! Attribute values <-> GraphQL values, exactly as each field declares: a stored value that does
//! not fit its declaration is a [`Misfit`] (never coerced), and an input that does not fit is
//! refused with a message for the client.
//!
//! Numbers stay DynamoDB's decimal strings ([`DynamoNumber`]) until the declared type says
//! otherwise, so `Decimal` keeps 38 digits and `Int` is range-checked, never wrapped.

use std::{borrow::Cow, collections::HashMap};

use async_graphql::{Name, Value};
use aws_sdk_dynamodb::{primitives::Blob, types::AttributeValue};
use base64::{Engine, engine::general_purpose::STANDARD};
use chrono::{DateTime, SecondsFormat, Utc};

use crate::{
    cursor::{Key, KeyType, KeyValue},
    dynamo::Item,
    model::{
        EntityId, Field, FieldId, FieldType, KeyTemplate, Model, Scalar, TemplateKey, TimeFormat,
    },
    number::DynamoNumber,
};

/// A stored attribute that does not fit its field's declaration (the value is not kept: logs
/// name the field, never the value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Misfit;

/// The GraphQL value of `field` from its attribute in an item (`None`: absent). `Ok(None)` is a
/// null.
pub fn output(
    model: &Model,
    field: &Field,
    value: Option<&AttributeValue>,
) -> Result<Option<Value>, Misfit> {
    let value = value.filter(|v| !matches!(v, AttributeValue::Null(true)));
    match (&field.ty, value) {
        // Sets cannot be empty in DynamoDB: an absent set is an empty one.
        (FieldType::List { set: true, .. }, None) if !field.nullable => {
            Ok(Some(Value::List(Vec::new())))
        }
        (_, None) if field.nullable => Ok(None),
        (_, None) => Err(Misfit),
        (FieldType::Scalar(scalar), Some(value)) => scalar_output(model, *scalar, value).map(Some),
        (
            FieldType::List {
                item,
                item_nullable,
                set: false,
            },
            Some(AttributeValue::L(items)),
        ) => items
            .iter()
            .map(|v| match v {
                AttributeValue::Null(true) if *item_nullable => Ok(Value::Null),
                v => scalar_output(model, *item, v),
            })
            .collect::<Result<_, _>>()
            .map(|items| Some(Value::List(items))),
        (
            FieldType::List {
                item, set: true, ..
            },
            Some(value),
        ) => {
            let items: Vec<AttributeValue> = match value {
                AttributeValue::Ss(items) => items.iter().cloned().map(AttributeValue::S).collect(),
                AttributeValue::Ns(items) => items.iter().cloned().map(AttributeValue::N).collect(),
                AttributeValue::Bs(items) => items.iter().cloned().map(AttributeValue::B).collect(),
                _ => return Err(Misfit),
            };
            items
                .iter()
                .map(|v| scalar_output(model, *item, v))
                .collect::<Result<_, _>>()
                .map(|items| Some(Value::List(items)))
        }
        (FieldType::List { .. }, Some(_)) => Err(Misfit),
    }
}

fn scalar_output(model: &Model, scalar: Scalar, value: &AttributeValue) -> Result<Value, Misfit> {
    Ok(match (scalar, value) {
        (Scalar::String | Scalar::Id, AttributeValue::S(s)) => Value::String(s.clone()),
        (Scalar::Int, AttributeValue::N(n)) => {
            let n = integer(n)?;
            Value::from(i32::try_from(n).map_err(|_| Misfit)?)
        }
        (Scalar::BigInt, AttributeValue::N(n)) => Value::String(integer(n)?.to_string()),
        (Scalar::Float, AttributeValue::N(n)) => {
            let f: f64 = n.parse().map_err(|_| Misfit)?;
            let number = serde_json::Number::from_f64(f).ok_or(Misfit)?;
            Value::Number(number)
        }
        // DynamoDB's own decimal text, exactly as stored.
        (Scalar::Decimal, AttributeValue::N(n)) => Value::String(n.clone()),
        (Scalar::Boolean, AttributeValue::Bool(b)) => Value::Boolean(*b),
        (Scalar::DateTime(format), value) => Value::String(time_text(read_time(format, value)?)),
        (Scalar::Bytes, AttributeValue::B(b)) => Value::String(STANDARD.encode(b.as_ref())),
        (Scalar::Json, value) => json_output(value)?,
        (Scalar::Enum(e), AttributeValue::S(s)) => {
            if !model.enums[e].values.iter().any(|(name, _)| name == s) {
                return Err(Misfit);
            }
            Value::Enum(Name::new(s))
        }
        _ => return Err(Misfit),
    })
}

/// A stored N holding a whole number (DynamoDB writes those as plain digits).
fn integer(n: &str) -> Result<i64, Misfit> {
    n.parse().map_err(|_| Misfit)
}

fn read_time(format: TimeFormat, value: &AttributeValue) -> Result<DateTime<Utc>, Misfit> {
    match (format, value) {
        (TimeFormat::EpochMillis, AttributeValue::N(n)) => {
            DateTime::from_timestamp_millis(integer(n)?).ok_or(Misfit)
        }
        (TimeFormat::EpochSeconds, AttributeValue::N(n)) => {
            DateTime::from_timestamp(integer(n)?, 0).ok_or(Misfit)
        }
        (TimeFormat::Iso8601 | TimeFormat::Iso8601Seconds, AttributeValue::S(s)) => {
            DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| Misfit)
        }
        (TimeFormat::Date, AttributeValue::S(s)) => {
            chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .map(|d| d.and_time(chrono::NaiveTime::MIN).and_utc())
                .map_err(|_| Misfit)
        }
        _ => Err(Misfit),
    }
}

/// The `DateTime` form clients see: RFC 3339 in UTC with milliseconds.
fn time_text(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Any attribute as JSON: maps as objects, lists and sets as arrays, numbers as JSON numbers
/// when a double holds them exactly and as strings otherwise, binaries as base64.
fn json_output(value: &AttributeValue) -> Result<Value, Misfit> {
    Ok(match value {
        AttributeValue::S(s) => Value::String(s.clone()),
        AttributeValue::N(n) => json_number(n),
        AttributeValue::Bool(b) => Value::Boolean(*b),
        AttributeValue::Null(_) => Value::Null,
        AttributeValue::B(b) => Value::String(STANDARD.encode(b.as_ref())),
        AttributeValue::M(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((Name::new(k), json_output(v)?)))
                .collect::<Result<_, Misfit>>()?,
        ),
        AttributeValue::L(items) => {
            Value::List(items.iter().map(json_output).collect::<Result<_, _>>()?)
        }
        AttributeValue::Ss(items) => {
            Value::List(items.iter().cloned().map(Value::String).collect())
        }
        AttributeValue::Ns(items) => Value::List(items.iter().map(|n| json_number(n)).collect()),
        AttributeValue::Bs(items) => Value::List(
            items
                .iter()
                .map(|b| Value::String(STANDARD.encode(b.as_ref())))
                .collect(),
        ),
        _ => return Err(Misfit),
    })
}

fn json_number(n: &str) -> Value {
    if let Ok(i) = n.parse::<i64>() {
        return Value::from(i);
    }
    // A double holds the stored number exactly when its shortest text names the same number.
    let exact = |f: f64| match (DynamoNumber::parse(n), float_text(f)) {
        (Ok(stored), Some(double)) => {
            DynamoNumber::parse(&double).is_ok_and(|double| stored.numeric_cmp(&double).is_eq())
        }
        _ => false,
    };
    match n.parse::<f64>() {
        Ok(f) if f.is_finite() && exact(f) => serde_json::Number::from_f64(f)
            .map_or_else(|| Value::String(n.to_owned()), Value::Number),
        _ => Value::String(n.to_owned()),
    }
}

/// An input that does not fit its field: the message for the client.
pub type InputError = String;

/// The attribute value to store for `field` from a GraphQL input value; `Ok(None)` for null (or
/// an empty set, which DynamoDB cannot store): the attribute is then absent. `name` is what
/// messages call the input.
pub fn input(
    model: &Model,
    field: &Field,
    name: &str,
    value: &Value,
) -> Result<Option<AttributeValue>, InputError> {
    if matches!(value, Value::Null) {
        return Ok(None);
    }
    match &field.ty {
        FieldType::Scalar(scalar) => scalar_input(model, *scalar, name, value).map(Some),
        FieldType::List {
            item,
            item_nullable,
            set,
        } => {
            let Value::List(items) = value else {
                return Err(format!("`{name}` must be a list."));
            };
            if !set {
                return items
                    .iter()
                    .map(|v| match v {
                        Value::Null if *item_nullable => Ok(AttributeValue::Null(true)),
                        v => scalar_input(model, *item, name, v),
                    })
                    .collect::<Result<_, _>>()
                    .map(|items| Some(AttributeValue::L(items)));
            }
            let values = items
                .iter()
                .map(|v| scalar_input(model, *item, name, v))
                .collect::<Result<Vec<_>, _>>()?;
            set_input(values, name)
        }
    }
}

fn set_input(
    values: Vec<AttributeValue>,
    name: &str,
) -> Result<Option<AttributeValue>, InputError> {
    if values.is_empty() {
        return Ok(None);
    }
    let repeated = || format!("`{name}` must not hold the same value twice.");
    macro_rules! unique {
        ($variant:ident, $inner:expr) => {{
            let items: Vec<_> = values.into_iter().filter_map($inner).collect();
            let mut seen = std::collections::HashSet::new();
            if !items.iter().all(|i| seen.insert(i.clone())) {
                return Err(repeated());
            }
            Ok(Some(AttributeValue::$variant(items)))
        }};
    }
    match &values[0] {
        AttributeValue::S(_) => unique!(Ss, |v| v.as_s().ok().cloned()),
        AttributeValue::N(_) => {
            // Numerically equal values are one set member to DynamoDB.
            let numbers: Vec<DynamoNumber> = values
                .iter()
                .filter_map(|v| v.as_n().ok().and_then(|n| DynamoNumber::parse(n).ok()))
                .collect();
            for (i, a) in numbers.iter().enumerate() {
                if numbers[..i].iter().any(|b| a.numeric_cmp(b).is_eq()) {
                    return Err(repeated());
                }
            }
            Ok(Some(AttributeValue::Ns(
                numbers.into_iter().map(DynamoNumber::into_string).collect(),
            )))
        }
        AttributeValue::B(_) => unique!(Bs, |v| v.as_b().ok().cloned()),
        _ => Err(format!("`{name}` cannot be stored as a set.")),
    }
}

/// The attribute value of one scalar input (an argument typed as a field's scalar).
pub fn scalar_input(
    model: &Model,
    scalar: Scalar,
    name: &str,
    value: &Value,
) -> Result<AttributeValue, InputError> {
    let invalid = |what: &str| format!("`{name}` must be {what}.");
    Ok(match (scalar, value) {
        (Scalar::String | Scalar::Id, Value::String(s)) => AttributeValue::S(s.clone()),
        (Scalar::Id, Value::Number(n)) => AttributeValue::S(n.to_string()),
        (Scalar::Int, Value::Number(n)) => {
            let n = n
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| invalid("a 32-bit integer"))?;
            AttributeValue::N(n.to_string())
        }
        (Scalar::BigInt, value) => AttributeValue::N(
            big_int(value)
                .ok_or_else(|| invalid("a 64-bit integer"))?
                .to_string(),
        ),
        (Scalar::Float, Value::Number(n)) => {
            let f = n
                .as_f64()
                .filter(|f| f.is_finite())
                .ok_or_else(|| invalid("a finite number"))?;
            AttributeValue::N(float_text(f).ok_or_else(|| invalid("a number DynamoDB can store"))?)
        }
        (Scalar::Decimal, value) => AttributeValue::N(
            decimal(value)
                .map_err(|m| format!("`{name}`: {m}"))?
                .into_string(),
        ),
        (Scalar::Boolean, Value::Boolean(b)) => AttributeValue::Bool(*b),
        (Scalar::DateTime(format), value) => {
            let time = date_time(value).map_err(|m| format!("`{name}`: {m}"))?;
            write_time(format, time).ok_or_else(|| invalid(time_rule(format)))?
        }
        (Scalar::Bytes, Value::String(s)) => AttributeValue::B(Blob::new(
            STANDARD.decode(s).map_err(|_| invalid("base64"))?,
        )),
        (Scalar::Json, value) => json_input(value),
        (Scalar::Enum(e), Value::Enum(v)) => {
            enum_value(model, e, v.as_str()).ok_or_else(|| invalid("a value of its enum"))?
        }
        (Scalar::Enum(e), Value::String(v)) => {
            enum_value(model, e, v).ok_or_else(|| invalid("a value of its enum"))?
        }
        _ => return Err(invalid("of its declared type")),
    })
}

fn enum_value(model: &Model, e: usize, v: &str) -> Option<AttributeValue> {
    model.enums[e]
        .values
        .iter()
        .any(|(name, _)| name == v)
        .then(|| AttributeValue::S(v.to_owned()))
}

/// A `BigInt` input: an integer, or a string holding one in any form DynamoDB reads as a number
/// (`"2.5E1"` is 25; `"2.5"` is not an integer).
pub fn big_int(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => DynamoNumber::normalize(s).ok()?.to_i64(),
        _ => None,
    }
}

/// A `Decimal` input: a string in any form DynamoDB reads as a number, kept as DynamoDB would
/// store it, or an integer (exact in JSON). Fractions sent as JSON numbers are refused: the
/// client may already have rounded them.
pub fn decimal(value: &Value) -> Result<DynamoNumber, String> {
    match value {
        Value::String(s) => DynamoNumber::normalize(s).map_err(|e| e.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => {
            DynamoNumber::normalize(&n.to_string()).map_err(|e| e.to_string())
        }
        Value::Number(_) => {
            Err("send Decimal values as strings, such as \"19.99\", so they stay exact".to_owned())
        }
        _ => Err("expected a Decimal".to_owned()),
    }
}

/// A `DateTime` input: RFC 3339 with at most millisecond precision, any offset.
pub fn date_time(value: &Value) -> Result<DateTime<Utc>, String> {
    let Value::String(s) = value else {
        return Err(
            "expected an RFC 3339 date-time such as \"2023-01-01T00:00:00.123Z\"".to_owned(),
        );
    };
    let parsed = DateTime::parse_from_rfc3339(s)
        .map_err(|_| {
            "expected an RFC 3339 date-time such as \"2023-01-01T00:00:00.123Z\"".to_owned()
        })?
        .with_timezone(&Utc);
    if parsed.timestamp_subsec_nanos() % 1_000_000 != 0 {
        return Err("DateTime values have millisecond precision".to_owned());
    }
    Ok(parsed)
}

/// A time as stored in `format`; `None` when the format would lose part of it (milliseconds
/// in whole seconds, the time of day in a date).
pub fn write_time(format: TimeFormat, time: DateTime<Utc>) -> Option<AttributeValue> {
    let whole_seconds = time.timestamp_subsec_millis() == 0;
    match format {
        TimeFormat::EpochMillis => Some(AttributeValue::N(time.timestamp_millis().to_string())),
        TimeFormat::EpochSeconds => {
            whole_seconds.then(|| AttributeValue::N(time.timestamp().to_string()))
        }
        TimeFormat::Iso8601 => Some(AttributeValue::S(time_text(time))),
        TimeFormat::Iso8601Seconds => whole_seconds
            .then(|| AttributeValue::S(time.to_rfc3339_opts(SecondsFormat::Secs, true))),
        TimeFormat::Date => (time.time() == chrono::NaiveTime::MIN)
            .then(|| AttributeValue::S(time.format("%Y-%m-%d").to_string())),
    }
}

/// What a time input must be to fit `format`, for messages.
pub fn time_rule(format: TimeFormat) -> &'static str {
    match format {
        TimeFormat::EpochSeconds | TimeFormat::Iso8601Seconds => "a time in whole seconds",
        TimeFormat::Date => "a date: a time at midnight UTC, such as \"2026-05-01T00:00:00Z\"",
        TimeFormat::EpochMillis | TimeFormat::Iso8601 => "a time",
    }
}

/// `time` cut down to what `format` holds (the whole second, or the day).
pub fn truncate_time(format: TimeFormat, time: DateTime<Utc>) -> DateTime<Utc> {
    match format {
        TimeFormat::EpochSeconds | TimeFormat::Iso8601Seconds => {
            DateTime::from_timestamp(time.timestamp(), 0).unwrap_or(time)
        }
        TimeFormat::Date => time.date_naive().and_time(chrono::NaiveTime::MIN).and_utc(),
        TimeFormat::EpochMillis | TimeFormat::Iso8601 => time,
    }
}

/// A double as a DynamoDB number string (at most 38 significant digits).
fn float_text(f: f64) -> Option<String> {
    let plain = f.to_string();
    let text = if DynamoNumber::parse(&plain).is_ok() {
        plain
    } else {
        format!("{f:e}")
    };
    DynamoNumber::parse(&text)
        .ok()
        .map(DynamoNumber::into_string)
}

fn json_input(value: &Value) -> AttributeValue {
    match value {
        Value::Null => AttributeValue::Null(true),
        Value::Boolean(b) => AttributeValue::Bool(*b),
        // Plain decimal text (`1e21` as `1000000000000000000000`), as DynamoDB itself would
        // keep it and as it reads back.
        Value::Number(n) => AttributeValue::N(
            n.as_f64()
                .filter(|_| !(n.is_i64() || n.is_u64()))
                .and_then(float_text)
                .unwrap_or_else(|| n.to_string()),
        ),
        Value::String(s) => AttributeValue::S(s.clone()),
        Value::Enum(name) => AttributeValue::S(name.to_string()),
        Value::List(items) => AttributeValue::L(items.iter().map(json_input).collect()),
        Value::Object(map) => AttributeValue::M(
            map.iter()
                .map(|(k, v)| (k.to_string(), json_input(v)))
                .collect::<HashMap<_, _>>(),
        ),
        Value::Binary(b) => AttributeValue::B(Blob::new(b.to_vec())),
    }
}

/// The key value of an attribute, if it has the key type `ty`.
pub fn key_value(value: &AttributeValue, ty: KeyType) -> Option<KeyValue> {
    match (ty, value) {
        (KeyType::S, AttributeValue::S(s)) => Some(KeyValue::S(s.clone())),
        (KeyType::N, AttributeValue::N(n)) => DynamoNumber::parse(n).ok().map(KeyValue::N),
        (KeyType::B, AttributeValue::B(b)) => Some(KeyValue::B(b.as_ref().to_vec())),
        _ => None,
    }
}

/// A canonical text of an input value for cursor bindings: equal inputs, equal text.
pub fn canonical(value: &AttributeValue) -> String {
    format!("{value:?}")
}

// ------------------------------------------------------------------------------- key templates

/// A facet's text in a key of `template`: strings as they are, numbers as the template writes
/// integers ([`KeyTemplate::integer_text`]). `None` for a value the facet cannot hold.
pub fn facet_text(template: &KeyTemplate, facet: &str, value: &AttributeValue) -> Option<String> {
    match value {
        AttributeValue::S(s) => Some(s.clone()),
        AttributeValue::N(n) => template.integer_text(facet, n),
        _ => None,
    }
}

/// A string or number value as text (an owner's claim is compared with it).
pub fn plain_text(value: &AttributeValue) -> Option<&str> {
    match value {
        AttributeValue::S(s) | AttributeValue::N(s) => Some(s),
        _ => None,
    }
}

/// The attribute value a facet's text in a key of `template` stands for, as its field stores
/// it: the inverse of [`facet_text`]. A key written in one case gives its values in that case.
fn facet_value(
    template: &KeyTemplate,
    facet: &str,
    scalar: Scalar,
    text: String,
) -> Option<AttributeValue> {
    let integer = || {
        template
            .read_integer(facet, &text)
            .map(|n| AttributeValue::N(n.to_string()))
    };
    match scalar {
        Scalar::Int | Scalar::BigInt => integer(),
        Scalar::DateTime(format) if format.is_number() => integer(),
        // RFC 3339's `T` and `Z`, whatever case the key is in.
        Scalar::DateTime(_) => Some(AttributeValue::S(text.to_ascii_uppercase())),
        _ => Some(AttributeValue::S(text)),
    }
}

/// Field `field`'s value as read back from the first key template of `entity` that holds it
/// as a facet (the table's keys first), if the item has that key and it reads back.
pub fn key_facet(
    model: &Model,
    entity: EntityId,
    field: FieldId,
    item: &Item,
) -> Option<AttributeValue> {
    let e = &model.entities[entity];
    let template = e.facet_source(field)?;
    let key = item.get(template.attribute)?.as_s().ok()?;
    let at = template.facets.iter().position(|&g| g == field)?;
    let mut text = None;
    template
        .template
        .read_each(key, |i, _, value| {
            if i == at {
                text = Some(value);
            }
            true
        })
        .then_some(())?;
    let f = &e.fields[field];
    let FieldType::Scalar(scalar) = f.ty else {
        return None;
    };
    facet_value(&template.template, &f.name, scalar, text?.into_owned())
}

/// The stored value of field `field` of an item of `entity`: its own attribute, as every tool
/// that writes single-table data also stores its facets (and as dynarelay's `create` does), and
/// only when the item has no such attribute, the facet read back from a key that holds it. A
/// key written in one case (ElectroDB lowercases them) is what lookups and conditions match;
/// the attribute keeps the value as it was given.
pub fn field_value<'i>(
    model: &Model,
    entity: EntityId,
    field: FieldId,
    item: &'i Item,
) -> Option<Cow<'i, AttributeValue>> {
    let f = &model.entities[entity].fields[field];
    match item.get(&f.attribute) {
        Some(value) => Some(Cow::Borrowed(value)),
        None => key_facet(model, entity, field, item).map(Cow::Owned),
    }
}

/// The attributes [`field_value`] reads for field `field` of `entity`: the field's own
/// attribute, and the key it reads a facet back from when the item has none.
pub fn field_attributes(
    model: &Model,
    entity: EntityId,
    field: FieldId,
) -> impl Iterator<Item = &str> {
    let e = &model.entities[entity];
    let own = Some(e.fields[field].attribute.as_str());
    let key = e.facet_source(field).map(|t| t.attribute);
    [own, key].into_iter().flatten()
}

/// Renders a key template with the facet values `value` gives (by facet field).
pub fn render(
    template: &TemplateKey,
    fields: &[Field],
    value: impl Fn(FieldId) -> Option<AttributeValue>,
) -> Option<String> {
    let texts: Vec<(&str, String)> = template
        .facets
        .iter()
        .map(|&f| {
            let name = fields[f].name.as_str();
            Some((name, facet_text(&template.template, name, &value(f)?)?))
        })
        .collect::<Option<_>>()?;
    template
        .template
        .render(|name| {
            texts
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| t.as_str())
        })
        .ok()
}

/// The primary key of an item of `entity` whose fields have the values `value` gives: key
/// attributes from their fields, or rendered from their templates. `None` when a value is
/// missing or does not fit.
pub fn primary_key(
    model: &Model,
    entity: EntityId,
    value: impl Fn(FieldId) -> Option<AttributeValue>,
) -> Option<Key> {
    let e = &model.entities[entity];
    let shape = model.table_of(entity).key;
    let values = shape
        .iter()
        .map(|attr| match e.template_on(attr.name) {
            Some(template) => render(template, &e.fields, &value).map(KeyValue::S),
            None => key_value(&value(e.field_on(attr.name)?)?, attr.ty),
        })
        .collect::<Option<Vec<_>>>()?;
    Key::new(shape, values).ok()
}

/// Which of `candidates` an item is (always the first, when the table holds no other entity),
/// by the one rule every read applies, whether a table read, an index read, a lookup or a
/// refetch found it: its required values (the type attribute, the constants) and its table's
/// keys (see
/// [`crate::model::Entity::matches`]). Index keys do not decide.
pub fn entity_of(model: &Model, candidates: &[EntityId], item: &Item) -> Option<EntityId> {
    let keys = candidates
        .first()
        .map_or(&[][..], |&e| model.table_of(e).key);
    model.entity_of(candidates, keys, string_attribute(item))
}

/// Whether an item a connection of `entity` alone read is one of its items, where DynamoDB has
/// tested the entity's required values (the connection's `type_filters`): the other half of
/// [`entity_of`]'s rule, its table's keys read back under the entity's templates.
pub fn keys_fit(model: &Model, entity: EntityId, item: &Item) -> bool {
    model.entities[entity].keys_read_back(model, model.table_of(entity).key, string_attribute(item))
}

/// An item's string attributes by name, as the entity rule reads them.
fn string_attribute<'i>(item: &'i Item) -> impl Fn(&str) -> Option<&'i str> + Copy {
    move |attribute: &str| {
        item.get(attribute)
            .and_then(|v| v.as_s().ok())
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::template::sortable_integer;

    #[test]
    fn facets_are_written_as_their_template_says_and_read_back() {
        let n = |n: &str| AttributeValue::N(n.to_owned());
        let own = KeyTemplate::parse("X#{seq}#{id}").unwrap();
        let plain = KeyTemplate::parse_unescaped("X#{seq}#{id}").unwrap();
        let padded = KeyTemplate::parse_unescaped("X#{seq:08}#{id}").unwrap();
        assert_eq!(
            facet_text(&own, "seq", &n("42")).as_deref(),
            Some(sortable_integer(42).as_str())
        );
        assert_eq!(facet_text(&plain, "seq", &n("42")).as_deref(), Some("42"));
        assert_eq!(
            facet_text(&padded, "seq", &n("42")).as_deref(),
            Some("00000042")
        );
        // Wider than the width, or negative: written as the number is, as the tools do.
        assert_eq!(
            facet_text(&padded, "seq", &n("123456789")).as_deref(),
            Some("123456789")
        );
        assert_eq!(facet_text(&padded, "seq", &n("-3")).as_deref(), Some("-3"));
        for (template, text) in [
            (&own, sortable_integer(42)),
            (&plain, "42".to_owned()),
            (&padded, "00000042".to_owned()),
        ] {
            assert_eq!(
                facet_value(template, "seq", Scalar::Int, text),
                Some(n("42"))
            );
        }
        let lower = KeyTemplate::parse_unescaped("T#{at}")
            .unwrap()
            .with_case(crate::model::template::KeyCase::Lower);
        assert_eq!(
            facet_value(
                &lower,
                "at",
                Scalar::DateTime(TimeFormat::Iso8601),
                "2026-05-01t00:00:00.000z".to_owned()
            ),
            Some(AttributeValue::S("2026-05-01T00:00:00.000Z".to_owned()))
        );
    }

    proptest::proptest! {
        /// Where ranges are offered on a padded facet (0 to its width's largest number), the
        /// stored text sorts as the numbers do.
        #[test]
        fn padded_facets_sort_as_their_numbers(x in 0i64..100_000_000, y in 0i64..100_000_000) {
            let padded = KeyTemplate::parse_unescaped("X#{seq:08}").unwrap();
            let text = |v: i64| facet_text(&padded, "seq", &AttributeValue::N(v.to_string())).unwrap();
            proptest::prop_assert_eq!(text(x).cmp(&text(y)), x.cmp(&y));
        }
    }

    #[test]
    fn big_ints_take_every_form_dynamodb_reads_that_is_a_whole_number() {
        let string = |s: &str| Value::String(s.to_owned());
        for (input, expected) in [
            ("42", Some(42)),
            ("4.2E1", Some(42)),
            ("+42", Some(42)),
            ("0042", Some(42)),
            ("-7.0", Some(-7)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("4.25E1", None),
            ("2.5", None),
            ("forty", None),
        ] {
            assert_eq!(big_int(&string(input)), expected, "{input}");
        }
        assert_eq!(big_int(&Value::from(42)), Some(42));
    }

    #[test]
    fn decimals_are_kept_as_dynamodb_stores_them() {
        let decimal_text = |s: &str| decimal(&Value::String(s.to_owned())).map(|n| n.into_string());
        assert_eq!(decimal_text("1.999E1"), Ok("19.99".to_owned()));
        assert_eq!(decimal_text("-0.50"), Ok("-0.5".to_owned()));
        assert!(decimal_text("1E+126").is_err_and(|e| e.contains("1E+126")));
        assert!(decimal_text("1.2.3").is_err_and(|e| e.contains("such as 19.99")));
        // A fraction as a JSON number may already be rounded: refused, with a hint.
        assert!(decimal(&Value::from(1.5)).is_err());
        assert_eq!(
            decimal(&Value::from(7)).map(DynamoNumber::into_string),
            Ok("7".to_owned())
        );
    }
}
