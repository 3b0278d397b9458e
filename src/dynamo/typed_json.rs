//! DynamoDB's typed JSON form of items, both ways: `{"sku": {"S": "SKU-1"}, "price": {"N":
//! "19.99"}}`, as `aws dynamodb put-item --item` and `batch-write-item` take it and DynamoDB's
//! export to S3 writes it. Numbers stay decimal strings, never `f64`.
//!
//! Hand-written: the SDK's own JSON (de)serializers for `AttributeValue` are private, and
//! serde_dynamo maps items to Rust types (numbers through Rust number types), not to this form.

use aws_sdk_dynamodb::{primitives::Blob, types::AttributeValue};
use base64::{Engine as _, engine::general_purpose::STANDARD as BASE64};
use serde_json::{Map, Value};

use super::Item;
use crate::number::DynamoNumber;

/// DynamoDB's limit on nesting lists and maps inside an item.
const MAX_DEPTH: usize = 32;

/// Why a JSON value is not a typed attribute value, and where in the item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{problem}", if path.is_empty() { String::new() } else { format!("attribute `{path}`: ") })]
pub struct TypedJsonError {
    /// The attribute, then `.member` and `[index]` down to the value (empty for the item).
    pub path: String,
    /// What is wrong.
    pub problem: String,
}

/// Reads an item: a JSON object of attribute names to typed values.
pub fn item_from_json(json: &Value) -> Result<Item, TypedJsonError> {
    let Value::Object(attributes) = json else {
        return Err(problem(
            "",
            format!(
                "an item is a JSON object of attributes such as {{\"id\": {{\"S\": \"a\"}}}}, not {}",
                kind(json)
            ),
        ));
    };
    attributes
        .iter()
        .map(|(name, value)| Ok((name.clone(), value_from_json(value, name, 1)?)))
        .collect()
}

/// Writes an item, attributes in name order (so the text is the same each time).
pub fn item_to_json(item: &Item) -> Value {
    let mut names: Vec<&String> = item.keys().collect();
    names.sort();
    Value::Object(
        names
            .into_iter()
            .map(|name| (name.clone(), value_to_json(&item[name])))
            .collect(),
    )
}

/// Writes one typed value.
pub fn value_to_json(value: &AttributeValue) -> Value {
    let (tag, inner) = tagged(value);
    Value::Object(Map::from_iter([(tag.to_owned(), inner)]))
}

/// A value's type, as DynamoDB names it: `S`, `N`, `B`, `BOOL`, `NULL`, `M`, `L`, `SS`, `NS` or
/// `BS`.
pub fn type_name(value: &AttributeValue) -> &'static str {
    tagged(value).0
}

/// A value's type name and its JSON.
fn tagged(value: &AttributeValue) -> (&'static str, Value) {
    match value {
        AttributeValue::S(s) => ("S", Value::from(s.as_str())),
        AttributeValue::N(n) => ("N", Value::from(n.as_str())),
        AttributeValue::B(b) => ("B", Value::from(BASE64.encode(b.as_ref()))),
        AttributeValue::Bool(b) => ("BOOL", Value::from(*b)),
        AttributeValue::Null(_) => ("NULL", Value::from(true)),
        AttributeValue::Ss(set) => ("SS", Value::from(set.clone())),
        AttributeValue::Ns(set) => ("NS", Value::from(set.clone())),
        AttributeValue::Bs(set) => (
            "BS",
            set.iter()
                .map(|b| Value::from(BASE64.encode(b.as_ref())))
                .collect(),
        ),
        AttributeValue::L(list) => ("L", list.iter().map(value_to_json).collect()),
        AttributeValue::M(map) => ("M", item_to_json(map)),
        // A type added to DynamoDB after this SDK: nothing this crate writes.
        _ => ("NULL", Value::from(true)),
    }
}

fn value_from_json(
    json: &Value,
    path: &str,
    depth: usize,
) -> Result<AttributeValue, TypedJsonError> {
    const TYPES: &str = "S, N, B, BOOL, NULL, M, L, SS, NS or BS";
    let tagged = match json {
        Value::Object(map) if map.len() == 1 => map.iter().next(),
        _ => None,
    };
    let Some((tag, inner)) = tagged else {
        return Err(problem(
            path,
            format!(
                "a value is an object with one type name ({TYPES}), such as {{\"S\": \"text\"}} \
                 or {{\"N\": \"19.99\"}}, not {}",
                kind(json)
            ),
        ));
    };
    if depth > MAX_DEPTH && matches!(tag.as_str(), "M" | "L") {
        return Err(problem(
            path,
            format!("lists and maps nest at most {MAX_DEPTH} levels deep in DynamoDB"),
        ));
    }
    let value = match (tag.as_str(), inner) {
        ("S", Value::String(s)) => AttributeValue::S(s.clone()),
        ("N", Value::String(n)) => AttributeValue::N(number(n, path)?),
        ("N", Value::Number(n)) => {
            return Err(problem(
                path,
                format!(
                    "N takes its number as a JSON string, {{\"N\": \"{n}\"}}, so that it stays exact"
                ),
            ));
        }
        ("B", Value::String(b)) => AttributeValue::B(binary(b, path)?),
        ("BOOL", Value::Bool(b)) => AttributeValue::Bool(*b),
        ("NULL", Value::Bool(true)) => AttributeValue::Null(true),
        ("M", Value::Object(map)) => AttributeValue::M(
            map.iter()
                .map(|(name, value)| {
                    Ok((
                        name.clone(),
                        value_from_json(value, &format!("{path}.{name}"), depth + 1)?,
                    ))
                })
                .collect::<Result<_, TypedJsonError>>()?,
        ),
        ("L", Value::Array(list)) => AttributeValue::L(
            list.iter()
                .enumerate()
                .map(|(i, value)| value_from_json(value, &format!("{path}[{i}]"), depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        ("SS", Value::Array(set)) => AttributeValue::Ss(set_of(
            set,
            path,
            "SS",
            |s, _| Ok(s.to_owned()),
            String::clone,
        )?),
        // DynamoDB compares numbers by value: 1 and 1.0 are one element.
        ("NS", Value::Array(set)) => AttributeValue::Ns(set_of(set, path, "NS", number, |n| {
            DynamoNumber::normalize(n)
                .map(DynamoNumber::into_string)
                .ok()
        })?),
        ("BS", Value::Array(set)) => {
            AttributeValue::Bs(set_of(set, path, "BS", binary, |b| b.as_ref().to_vec())?)
        }
        ("S" | "N" | "B" | "BOOL" | "NULL" | "M" | "L" | "SS" | "NS" | "BS", _) => {
            return Err(problem(
                path,
                format!("{tag} takes {}, not {}", takes(tag), kind(inner)),
            ));
        }
        _ => {
            return Err(problem(
                path,
                format!("unknown type `{tag}`: one of {TYPES}"),
            ));
        }
    };
    Ok(value)
}

/// What each type name takes.
fn takes(tag: &str) -> &'static str {
    match tag {
        "S" => "a string",
        "N" => "a number as a string",
        "B" => "base64 text",
        "BOOL" => "true or false",
        "NULL" => "true",
        "M" => "an object of typed values",
        "L" => "an array of typed values",
        "SS" => "an array of strings",
        "NS" => "an array of numbers as strings",
        _ => "an array of base64 texts",
    }
}

fn number(text: &str, path: &str) -> Result<String, TypedJsonError> {
    DynamoNumber::normalize(text)
        .map(|_| text.to_owned())
        .map_err(|err| problem(path, format!("`{text}` is not a DynamoDB number: {err}")))
}

fn binary(text: &str, path: &str) -> Result<Blob, TypedJsonError> {
    BASE64
        .decode(text)
        .map(Blob::new)
        .map_err(|err| problem(path, format!("B takes standard base64 text: {err}")))
}

/// A set's elements, which are strings in JSON, each read with `read`: at least one, and none
/// equal to an earlier one by `identity` (DynamoDB refuses empty sets and sets with duplicates).
fn set_of<T, K: Eq + std::hash::Hash>(
    set: &[Value],
    path: &str,
    tag: &str,
    read: impl Fn(&str, &str) -> Result<T, TypedJsonError>,
    identity: impl Fn(&T) -> K,
) -> Result<Vec<T>, TypedJsonError> {
    if set.is_empty() {
        return Err(problem(
            path,
            format!(
                "{tag} is empty: DynamoDB sets hold at least one element (leave the attribute \
                 out instead)"
            ),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    let mut elements = Vec::with_capacity(set.len());
    for (i, element) in set.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let Value::String(text) = element else {
            return Err(problem(
                &at,
                format!("{tag} takes {}, not {}", takes(tag), kind(element)),
            ));
        };
        let element = read(text, &at)?;
        if !seen.insert(identity(&element)) {
            return Err(problem(
                path,
                format!("element {i} repeats an earlier one: DynamoDB sets hold each value once"),
            ));
        }
        elements.push(element);
    }
    Ok(elements)
}

/// A JSON value's kind, for messages.
pub fn kind(json: &Value) -> &'static str {
    match json {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(map) if map.is_empty() => "an empty object",
        Value::Object(map) if map.len() > 1 => "an object with several members",
        Value::Object(_) => "an object",
    }
}

fn problem(path: &str, problem: String) -> TypedJsonError {
    TypedJsonError {
        path: path.to_owned(),
        problem,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_type_reads_and_writes_back_the_same_text() {
        let text = json!({
            "s": {"S": "héllo"},
            "n": {"N": "12345678901234567890123456789012345678"},
            "tiny": {"N": "1e-130"},
            "b": {"B": "AAEC/w=="},
            "empty": {"B": ""},
            "t": {"BOOL": true},
            "nil": {"NULL": true},
            "ss": {"SS": ["a", "b"]},
            "ns": {"NS": ["1", "-2.5"]},
            "bs": {"BS": ["AA==", "AQ=="]},
            "l": {"L": [{"S": "x"}, {"M": {"deep": {"L": [{"N": "0"}]}}}]},
            "m": {"M": {"a": {"NULL": true}}}
        });
        let item = item_from_json(&text).unwrap();
        assert_eq!(item["b"], AttributeValue::B(Blob::new(vec![0, 1, 2, 255])));
        assert_eq!(item["tiny"], AttributeValue::N("1e-130".to_owned()));
        assert_eq!(item_to_json(&item), text);
    }

    #[test]
    fn mistakes_are_located_and_explained() {
        let cases = [
            (
                json!({"a": {"N": 1.5}}),
                "attribute `a`: N takes its number as a JSON string",
            ),
            (
                json!({"a": {"N": "1.2.3"}}),
                "`1.2.3` is not a DynamoDB number",
            ),
            (json!({"a": {"N": "1e126"}}), "1E+126 in magnitude"),
            (
                json!({"a": {"N": "1234567890123456789012345678901234567891"}}),
                "38 significant",
            ),
            (
                json!({"a": {"B": "not base64!"}}),
                "B takes standard base64",
            ),
            (json!({"a": {"X": "y"}}), "unknown type `X`"),
            (
                json!({"a": {"S": "x", "N": "1"}}),
                "not an object with several members",
            ),
            (json!({"a": "plain"}), "not a string"),
            (
                json!({"a": {"NULL": false}}),
                "NULL takes true, not a boolean",
            ),
            (json!({"a": {"SS": []}}), "SS is empty"),
            (json!({"a": {"SS": ["x", "x"]}}), "element 1 repeats"),
            (json!({"a": {"NS": ["1", "1.0"]}}), "element 1 repeats"),
            (
                json!({"a": {"NS": ["1", 2]}}),
                "attribute `a[1]`: NS takes an array of numbers",
            ),
            (
                json!({"a": {"L": [{"S": "x"}, {"M": {"b": {"N": "z"}}}]}}),
                "attribute `a[1].b`",
            ),
            (json!([1]), "an item is a JSON object"),
        ];
        for (text, needle) in cases {
            let err = item_from_json(&text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn lists_and_maps_nest_at_most_32_deep() {
        let nest = |levels: usize| {
            let mut value = json!({"S": "bottom"});
            for _ in 0..levels {
                value = json!({"L": [value]});
            }
            json!({ "a": value })
        };
        assert!(item_from_json(&nest(32)).is_ok());
        let err = item_from_json(&nest(33)).unwrap_err().to_string();
        assert!(err.contains("at most 32 levels"), "{err}");
    }
}
