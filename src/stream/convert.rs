//! Stream records' attribute values as the rest of the server holds items.
//!
//! aws-sdk-dynamodbstreams has an `AttributeValue` type of its own, identical in shape to
//! aws-sdk-dynamodb's but a different Rust type, and neither SDK converts one into the other;
//! hence this small recursive copy.

use aws_sdk_dynamodb::types::AttributeValue as Value;
use aws_sdk_dynamodbstreams::types::AttributeValue as StreamValue;

use crate::dynamo::Item;

/// An image or key map of a stream record as an item.
pub fn item(image: &std::collections::HashMap<String, StreamValue>) -> Item {
    image
        .iter()
        .map(|(name, value)| (name.clone(), attribute(value)))
        .collect()
}

/// One attribute value. A variant this SDK version does not know becomes `NULL`: DynamoDB has
/// no other attribute types, so it cannot occur in a record the SDK parsed.
fn attribute(value: &StreamValue) -> Value {
    match value {
        StreamValue::S(s) => Value::S(s.clone()),
        StreamValue::N(n) => Value::N(n.clone()),
        StreamValue::B(b) => Value::B(b.clone()),
        StreamValue::Bool(b) => Value::Bool(*b),
        StreamValue::Null(b) => Value::Null(*b),
        StreamValue::Ss(v) => Value::Ss(v.clone()),
        StreamValue::Ns(v) => Value::Ns(v.clone()),
        StreamValue::Bs(v) => Value::Bs(v.clone()),
        StreamValue::L(v) => Value::L(v.iter().map(attribute).collect()),
        StreamValue::M(m) => Value::M(item(m)),
        _ => Value::Null(true),
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::primitives::Blob;

    use super::*;

    #[test]
    fn every_kind_of_value_is_copied_as_it_is() {
        let stream = std::collections::HashMap::from([
            ("s".to_owned(), StreamValue::S("a#b".to_owned())),
            (
                "n".to_owned(),
                StreamValue::N("12345678901234567890123456789012345678".to_owned()),
            ),
            ("b".to_owned(), StreamValue::B(Blob::new(vec![0, 255]))),
            ("t".to_owned(), StreamValue::Bool(true)),
            ("z".to_owned(), StreamValue::Null(true)),
            ("ss".to_owned(), StreamValue::Ss(vec!["x".to_owned()])),
            ("ns".to_owned(), StreamValue::Ns(vec!["1.5".to_owned()])),
            ("bs".to_owned(), StreamValue::Bs(vec![Blob::new(vec![1])])),
            (
                "l".to_owned(),
                StreamValue::L(vec![StreamValue::M(std::collections::HashMap::from([(
                    "k".to_owned(),
                    StreamValue::N("-0.5".to_owned()),
                )]))]),
            ),
        ]);
        let copied = item(&stream);
        assert_eq!(copied.len(), stream.len());
        assert_eq!(copied["s"], Value::S("a#b".to_owned()));
        assert_eq!(
            copied["n"],
            Value::N("12345678901234567890123456789012345678".to_owned())
        );
        assert_eq!(copied["b"], Value::B(Blob::new(vec![0, 255])));
        assert_eq!(copied["t"], Value::Bool(true));
        assert_eq!(copied["z"], Value::Null(true));
        assert_eq!(copied["ss"], Value::Ss(vec!["x".to_owned()]));
        assert_eq!(copied["ns"], Value::Ns(vec!["1.5".to_owned()]));
        assert_eq!(copied["bs"], Value::Bs(vec![Blob::new(vec![1])]));
        assert_eq!(
            copied["l"],
            Value::L(vec![Value::M(Item::from([(
                "k".to_owned(),
                Value::N("-0.5".to_owned())
            )]))])
        );
    }
}
