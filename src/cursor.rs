//! Cursor codec: a DynamoDB key <-> the string a client holds as a Relay cursor. Pure, no I/O.
//!
//! A key is a list of typed values in the order of a [`KeyShape`], the key schema of the table
//! or index being read. Only S, N and B values exist in keys; each is stored with its type tag and
//! its exact bytes, and numbers keep DynamoDB's own decimal string, so decoding gives back exactly
//! the `AttributeValue` map that was encoded.
//!
//! Wire format, version 1: base64url without padding of
//! `0x01 | count | (tag | u16 big-endian length | bytes) × count`.

use std::collections::HashMap;

use aws_sdk_dynamodb::{primitives::Blob, types::AttributeValue};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};

use crate::number::DynamoNumber;

const VERSION: u8 = 1;
/// Longest cursor string accepted before decoding, so garbage cannot cost large allocations.
/// DynamoDB keys are at most 2048 + 1024 bytes per attribute pair; index cursors hold two pairs.
const MAX_CURSOR_LEN: usize = 8192;

/// The scalar types a key attribute can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// String.
    S,
    /// Number.
    N,
    /// Binary.
    B,
}

/// One attribute of a key schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyAttr {
    /// The attribute name.
    pub name: &'static str,
    /// The attribute type.
    pub ty: KeyType,
}

/// The attributes of a start key, in a fixed order: for a table its partition and sort key, for
/// an index the index keys followed by the table keys.
pub type KeyShape = &'static [KeyAttr];

/// One key attribute value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyValue {
    /// String.
    S(String),
    /// Number, in DynamoDB's own decimal form.
    N(DynamoNumber),
    /// Binary.
    B(Vec<u8>),
}

impl KeyValue {
    fn ty(&self) -> KeyType {
        match self {
            KeyValue::S(_) => KeyType::S,
            KeyValue::N(_) => KeyType::N,
            KeyValue::B(_) => KeyType::B,
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            KeyValue::S(s) => s.as_bytes(),
            KeyValue::N(n) => n.as_str().as_bytes(),
            KeyValue::B(b) => b,
        }
    }

    /// The value as a DynamoDB `AttributeValue`.
    pub fn to_attribute_value(&self) -> AttributeValue {
        match self {
            KeyValue::S(s) => AttributeValue::S(s.clone()),
            KeyValue::N(n) => AttributeValue::N(n.as_str().to_owned()),
            KeyValue::B(b) => AttributeValue::B(Blob::new(b.clone())),
        }
    }
}

/// A complete key of one [`KeyShape`]: every attribute present with its declared type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    shape: KeyShape,
    values: Vec<KeyValue>,
}

/// An item lacks a key attribute or holds it with the wrong type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("key attribute `{attribute}` is missing or not of type {expected:?}")]
pub struct KeyError {
    /// The attribute that is missing or mistyped.
    pub attribute: &'static str,
    /// The type the shape declares.
    pub expected: KeyType,
}

impl Key {
    /// Builds a key from typed values, checking them against `shape`.
    pub fn new(shape: KeyShape, values: Vec<KeyValue>) -> Result<Self, KeyError> {
        for (i, attr) in shape.iter().enumerate() {
            if values.get(i).map(KeyValue::ty) != Some(attr.ty) {
                return Err(KeyError {
                    attribute: attr.name,
                    expected: attr.ty,
                });
            }
        }
        if values.len() != shape.len() {
            // Extra values have no attribute to belong to; report the last declared one.
            let last = shape.last().copied().unwrap_or(KeyAttr {
                name: "",
                ty: KeyType::S,
            });
            return Err(KeyError {
                attribute: last.name,
                expected: last.ty,
            });
        }
        Ok(Self { shape, values })
    }

    /// Extracts the key of `shape` from an item as DynamoDB returned it.
    pub fn from_item(
        item: &HashMap<String, AttributeValue>,
        shape: KeyShape,
    ) -> Result<Self, KeyError> {
        let values = shape
            .iter()
            .map(|attr| {
                let err = || KeyError {
                    attribute: attr.name,
                    expected: attr.ty,
                };
                match (attr.ty, item.get(attr.name)) {
                    (KeyType::S, Some(AttributeValue::S(s))) => Ok(KeyValue::S(s.clone())),
                    (KeyType::N, Some(AttributeValue::N(n))) => {
                        DynamoNumber::parse(n).map(KeyValue::N).map_err(|_| err())
                    }
                    (KeyType::B, Some(AttributeValue::B(b))) => {
                        Ok(KeyValue::B(b.as_ref().to_vec()))
                    }
                    _ => Err(err()),
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { shape, values })
    }

    /// The shape this key belongs to.
    pub fn shape(&self) -> KeyShape {
        self.shape
    }

    /// The value of attribute `name`, if the shape has it.
    pub fn get(&self, name: &str) -> Option<&KeyValue> {
        self.shape
            .iter()
            .position(|attr| attr.name == name)
            .map(|i| &self.values[i])
    }

    /// The key as an `ExclusiveStartKey` map.
    pub fn to_attribute_map(&self) -> HashMap<String, AttributeValue> {
        self.shape
            .iter()
            .zip(&self.values)
            .map(|(attr, value)| (attr.name.to_owned(), value.to_attribute_value()))
            .collect()
    }
}

/// A string that is not a cursor of the expected shape. Deliberately without detail: clients get
/// one fixed message whatever the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid cursor")]
pub struct CursorError;

/// Encodes a key as a cursor string.
pub fn encode(key: &Key) -> String {
    let mut buf = Vec::with_capacity(
        2 + key
            .values
            .iter()
            .map(|v| 3 + v.bytes().len())
            .sum::<usize>(),
    );
    buf.push(VERSION);
    // Shapes have at most four attributes, and values at most a few KiB (DynamoDB's key limits).
    buf.push(key.values.len() as u8);
    for value in &key.values {
        let bytes = value.bytes();
        buf.push(tag(value.ty()));
        buf.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
        buf.extend_from_slice(bytes);
    }
    URL_SAFE_NO_PAD.encode(buf)
}

/// Decodes a cursor string into a key of `shape`. Anything else, including a well-formed cursor
/// of another shape, is a [`CursorError`].
pub fn decode(cursor: &str, shape: KeyShape) -> Result<Key, CursorError> {
    if cursor.len() > MAX_CURSOR_LEN {
        return Err(CursorError);
    }
    let buf = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| CursorError)?;
    let mut r = Reader(&buf);
    if r.byte()? != VERSION || usize::from(r.byte()?) != shape.len() {
        return Err(CursorError);
    }
    let mut values = Vec::with_capacity(shape.len());
    for attr in shape {
        if r.byte()? != tag(attr.ty) {
            return Err(CursorError);
        }
        let len = u16::from_be_bytes([r.byte()?, r.byte()?]);
        let bytes = r.take(usize::from(len))?;
        values.push(match attr.ty {
            KeyType::S => KeyValue::S(String::from_utf8(bytes.to_vec()).map_err(|_| CursorError)?),
            KeyType::N => KeyValue::N(
                std::str::from_utf8(bytes)
                    .ok()
                    .and_then(|s| DynamoNumber::parse(s).ok())
                    .ok_or(CursorError)?,
            ),
            KeyType::B => KeyValue::B(bytes.to_vec()),
        });
    }
    if !r.0.is_empty() {
        return Err(CursorError);
    }
    Ok(Key { shape, values })
}

/// Reads a byte buffer front to back, failing on truncation.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CursorError> {
        let (head, tail) = self.0.split_at_checked(n).ok_or(CursorError)?;
        self.0 = tail;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, CursorError> {
        Ok(self.take(1)?[0])
    }
}

fn tag(ty: KeyType) -> u8 {
    match ty {
        KeyType::S => b'S',
        KeyType::N => b'N',
        KeyType::B => b'B',
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PURCHASE: KeyShape = &[
        KeyAttr {
            name: "userId",
            ty: KeyType::S,
        },
        KeyAttr {
            name: "purchasedAt",
            ty: KeyType::N,
        },
    ];

    fn purchase_key(user: &str, at: &str) -> Key {
        Key::new(
            PURCHASE,
            vec![
                KeyValue::S(user.into()),
                KeyValue::N(DynamoNumber::parse(at).unwrap()),
            ],
        )
        .unwrap()
    }

    #[test]
    fn a_key_round_trips_to_the_same_attribute_map() {
        let key = purchase_key("u-1", "1672531200123");
        let decoded = decode(&encode(&key), PURCHASE).unwrap();
        assert_eq!(decoded, key);
        assert_eq!(
            decoded.to_attribute_map(),
            HashMap::from([
                ("userId".to_owned(), AttributeValue::S("u-1".into())),
                (
                    "purchasedAt".to_owned(),
                    AttributeValue::N("1672531200123".into())
                ),
            ])
        );
    }

    #[test]
    fn a_cursor_of_another_shape_is_rejected() {
        const OTHER: KeyShape = &[
            KeyAttr {
                name: "userId",
                ty: KeyType::S,
            },
            KeyAttr {
                name: "purchasedAt",
                ty: KeyType::S,
            },
        ];
        let cursor = encode(&purchase_key("u-1", "5"));
        assert_eq!(decode(&cursor, OTHER), Err(CursorError));
        assert_eq!(decode(&cursor, &PURCHASE[..1]), Err(CursorError));
    }

    #[test]
    fn garbage_truncation_and_trailing_bytes_are_rejected() {
        let cursor = encode(&purchase_key("u-1", "5"));
        for bad in [
            "",
            "!!!!",
            "not a cursor",
            &cursor[..cursor.len() - 2],
            &format!("{cursor}AA"),
            &format!("{cursor}="),
        ] {
            assert_eq!(decode(bad, PURCHASE), Err(CursorError), "{bad:?}");
        }
        assert_eq!(
            decode(&"A".repeat(MAX_CURSOR_LEN + 4), PURCHASE),
            Err(CursorError)
        );
    }

    #[test]
    fn from_item_requires_every_attribute_with_its_type() {
        let mut item = purchase_key("u-1", "5").to_attribute_map();
        assert!(Key::from_item(&item, PURCHASE).is_ok());
        item.insert("purchasedAt".into(), AttributeValue::S("5".into()));
        assert_eq!(
            Key::from_item(&item, PURCHASE),
            Err(KeyError {
                attribute: "purchasedAt",
                expected: KeyType::N
            })
        );
        item.remove("purchasedAt");
        assert!(Key::from_item(&item, PURCHASE).is_err());
    }

    proptest! {
        #[test]
        fn any_purchase_key_round_trips(user in "\\PC{1,40}", at in "-?[1-9][0-9]{0,37}") {
            let key = purchase_key(&user, &at);
            prop_assert_eq!(decode(&encode(&key), PURCHASE).unwrap(), key);
        }
    }
}
