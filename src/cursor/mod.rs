//! Cursor codec: a DynamoDB key <-> the opaque string a client holds as a Relay cursor.
//! Pure: no I/O.
//!
//! A key is a list of typed values in the order of a [`KeyShape`], the key schema of the table or
//! index being read. Only S, N and B exist in keys; each is stored with a type tag and its exact
//! bytes (numbers as DynamoDB's own decimal string), so decoding gives back exactly the
//! `AttributeValue` map that was encoded.
//!
//! Cursors are sealed with XChaCha20-Poly1305:
//!
//! * **Opaque and authenticated.** The key values are encrypted; any change to a cursor fails the
//!   Poly1305 tag, so a forged or edited cursor never reaches DynamoDB.
//! * **Deterministic.** The nonce is an HMAC-SHA256 of the associated data and the plaintext
//!   (SIV-style), so the same position in the same connection always gives the same string and
//!   identical queries give identical responses. Equal nonces occur only for equal inputs.
//! * **Bound to its connection.** The associated data is the format version, the key id and a
//!   [`Binding`]: a SHA-256 fingerprint of the GraphQL field, table, index, partition key value and
//!   the arguments that change the result set. A cursor from one connection fails on any other.
//!   Sort order is not bound: a position is valid in both directions.
//! * **Compact.** Attributes whose value the binding fixes (the partition key of a Query) are
//!   authenticated through the fingerprint and not repeated in the cursor.
//!
//! Wire format: base64url without padding of
//! `version (1) | key id (1) | nonce (24) | ciphertext | tag (16)`, where the plaintext is
//! `(type tag | u16 big-endian length | bytes)` for each attribute the binding does not fix.
//!
//! Keys come from a [`KeyRing`]: the first key seals new cursors, and every key in the ring opens
//! cursors sealed with it, so keys can be rotated without breaking cursors in flight.

use std::{collections::HashMap, fmt};

use aws_sdk_dynamodb::{primitives::Blob, types::AttributeValue};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use chacha20poly1305::{AeadInPlace, KeyInit, Tag, XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::number::DynamoNumber;

mod key_ring;

pub use key_ring::{
    CursorSecret, DEVELOPMENT_KEY_SPEC, KeyRing, KeyRingError, RotationError, SECRET_LEN,
};

const VERSION: u8 = 1;
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;
const HEADER_LEN: usize = 2 + NONCE_LEN;
/// Cursors up to this many bytes (before base64) are sealed on the stack.
const STACK_CURSOR_BYTES: usize = 256;
/// Longest cursor string accepted before decoding, so garbage cannot cost large allocations.
/// DynamoDB key attributes are at most 2048 bytes (partition) and 1024 bytes (sort).
const MAX_CURSOR_LEN: usize = 8192;
/// DynamoDB's limit on a partition key value, in bytes (sort keys allow 1024; every string key
/// a client names here is a partition key).
pub const MAX_KEY_VALUE_BYTES: usize = 2048;

/// The scalar types a key attribute can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyType {
    /// String.
    S,
    /// Number.
    N,
    /// Binary.
    B,
}

/// One attribute of a key schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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

    /// The value's bytes: a string's UTF-8, a number's decimal text, a binary's bytes.
    pub fn bytes(&self) -> &[u8] {
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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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

    /// Whether DynamoDB can store this key: every S and B value non-empty and at most
    /// [`MAX_KEY_VALUE_BYTES`] long. Keys read from DynamoDB always are; keys decoded from
    /// client-supplied ids may not be.
    pub fn fits_dynamodb(&self) -> bool {
        self.values.iter().all(|v| match v {
            KeyValue::N(_) => true,
            KeyValue::S(_) | KeyValue::B(_) => (1..=MAX_KEY_VALUE_BYTES).contains(&v.bytes().len()),
        })
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

/// A string that is not a valid cursor for the connection. Deliberately without detail: clients
/// get one fixed message whatever the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid cursor")]
pub struct CursorError;

/// The connection a cursor belongs to. Build one per resolver call with [`Binding::builder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    connection: &'static str,
    fingerprint: [u8; 32],
    fixed: Vec<(&'static str, KeyValue)>,
}

/// Builds a [`Binding`] by hashing each part of the connection's identity.
#[derive(Debug, Clone)]
pub struct BindingBuilder {
    connection: &'static str,
    hasher: Sha256,
    fixed: Vec<(&'static str, KeyValue)>,
}

impl Binding {
    /// Starts a binding for `field` (such as `Customer.orders`) reading `table` or its `index`.
    pub fn builder(field: &'static str, table: &str, index: Option<&str>) -> BindingBuilder {
        let mut builder = BindingBuilder {
            connection: field,
            hasher: Sha256::new(),
            fixed: Vec::new(),
        };
        builder.hasher.update(b"dynarelay cursor binding v1");
        builder.part(field.as_bytes());
        builder.part(table.as_bytes());
        builder.optional(index.map(str::as_bytes));
        builder
    }

    /// The field the connection is served by, such as `Customer.orders`.
    pub fn connection(&self) -> &'static str {
        self.connection
    }

    /// The binding of other sealed values of the connection ([`CursorCodec::seal_bytes`]):
    /// its fingerprint hashed again with a label, so that they and cursors never open as each
    /// other.
    fn for_bytes(&self) -> Binding {
        let mut hasher = Sha256::new();
        hasher.update(b"dynarelay sealed bytes v1");
        hasher.update(self.fingerprint);
        Binding {
            connection: self.connection,
            fingerprint: hasher.finalize().into(),
            fixed: Vec::new(),
        }
    }

    fn fixed_value(&self, name: &str) -> Option<&KeyValue> {
        self.fixed.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

impl BindingBuilder {
    /// The key attribute whose value the connection fixes, such as the partition key of a Query.
    /// It is bound, and cursors leave it out.
    pub fn fixed(mut self, name: &'static str, value: KeyValue) -> Self {
        self.part(name.as_bytes());
        self.hasher.update([tag(value.ty())]);
        self.part(value.bytes());
        self.fixed.push((name, value));
        self
    }

    /// An argument that changes the result set (a filter or a key range), absent or present.
    pub fn argument(mut self, name: &str, value: Option<&str>) -> Self {
        self.part(name.as_bytes());
        self.optional(value.map(str::as_bytes));
        self
    }

    /// The finished binding.
    pub fn finish(self) -> Binding {
        Binding {
            connection: self.connection,
            fingerprint: self.hasher.finalize().into(),
            fixed: self.fixed,
        }
    }

    /// Length-prefixed, so that no two different sequences of parts hash the same input.
    fn part(&mut self, bytes: &[u8]) {
        self.hasher.update((bytes.len() as u64).to_be_bytes());
        self.hasher.update(bytes);
    }

    fn optional(&mut self, bytes: Option<&[u8]>) {
        match bytes {
            None => self.hasher.update([0]),
            Some(bytes) => {
                self.hasher.update([1]);
                self.part(bytes);
            }
        }
    }
}

/// Seals keys into cursors and opens them again, with the keys of a [`KeyRing`].
#[derive(Clone)]
pub struct CursorCodec {
    /// Index 0 is the primary key.
    keys: Vec<SealingKey>,
}

#[derive(Clone)]
struct SealingKey {
    id: u8,
    aead: XChaCha20Poly1305,
    /// Keyed once; cloned per cursor, which skips re-hashing the key.
    nonce_mac: Hmac<Sha256>,
}

impl fmt::Debug for CursorCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<u8> = self.keys.iter().map(|k| k.id).collect();
        write!(f, "CursorCodec {{ key_ids: {ids:?} }}")
    }
}

impl CursorCodec {
    /// A codec for `ring`. Each secret yields two independent subkeys, one for XChaCha20-Poly1305
    /// and one for the nonce HMAC, derived as HMAC-SHA256(secret, label).
    pub fn new(ring: &KeyRing) -> Self {
        let derive = |secret: &[u8; SECRET_LEN], label: &[u8]| -> [u8; 32] {
            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret)
                .expect("HMAC accepts keys of any length");
            mac.update(label);
            mac.finalize().into_bytes().into()
        };
        let keys = ring
            .0
            .iter()
            .map(|secret| SealingKey {
                id: secret.id,
                aead: XChaCha20Poly1305::new(
                    &derive(&secret.bytes, b"dynarelay cursor v1 aead").into(),
                ),
                nonce_mac: <Hmac<Sha256> as Mac>::new_from_slice(&derive(
                    &secret.bytes,
                    b"dynarelay cursor v1 nonce",
                ))
                .expect("HMAC accepts keys of any length"),
            })
            .collect();
        Self { keys }
    }

    /// Seals `key` as a cursor of the connection `binding`.
    pub fn encode(&self, key: &Key, binding: &Binding) -> String {
        let len = HEADER_LEN + plaintext_len(key, binding) + TAG_LEN;
        // Every key of this schema fits on the stack, so the returned string is the only
        // allocation; longer keys (DynamoDB allows up to 3 KiB) take a heap buffer.
        let mut stack = [0u8; STACK_CURSOR_BYTES];
        let mut heap = Vec::new();
        let buf = if len <= STACK_CURSOR_BYTES {
            &mut stack[..len]
        } else {
            heap.resize(len, 0);
            &mut heap[..]
        };
        write_plaintext(&mut buf[HEADER_LEN..len - TAG_LEN], key, binding);
        self.seal(buf, binding)
    }

    /// Seals `buf`, which holds `HEADER_LEN` placeholder bytes, the plaintext and `TAG_LEN`
    /// placeholder bytes, with the primary key: fills in the header, encrypts in place and
    /// writes the tag.
    fn seal(&self, buf: &mut [u8], binding: &Binding) -> String {
        let sealing = &self.keys[0];
        let aad = associated_data(sealing.id, binding);
        let (head, rest) = buf.split_at_mut(HEADER_LEN);
        let (plaintext, tag_out) = rest.split_at_mut(rest.len() - TAG_LEN);
        let mut mac = sealing.nonce_mac.clone();
        mac.update(&aad);
        mac.update(plaintext);
        let digest = mac.finalize().into_bytes();
        head[0] = VERSION;
        head[1] = sealing.id;
        head[2..].copy_from_slice(&digest[..NONCE_LEN]);
        let tag = sealing
            .aead
            .encrypt_in_place_detached(XNonce::from_slice(&head[2..]), &aad, plaintext)
            .expect("XChaCha20-Poly1305 encrypts any message shorter than 256 GiB");
        tag_out.copy_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(buf)
    }

    /// Seals `bytes` (a place in a table's changes, say) for the connection `binding`, as
    /// cursors are sealed but under a binding of its own: it never opens as a cursor, nor a
    /// cursor as it.
    pub fn seal_bytes(&self, bytes: &[u8], binding: &Binding) -> String {
        let binding = binding.for_bytes();
        let mut buf = vec![0; HEADER_LEN];
        buf.extend_from_slice(bytes);
        buf.extend_from_slice(&[0; TAG_LEN]);
        self.seal(&mut buf, &binding)
    }

    /// Opens what [`CursorCodec::seal_bytes`] sealed for `binding`; anything else, whatever the
    /// reason, is a [`CursorError`].
    pub fn open_bytes(&self, sealed: &str, binding: &Binding) -> Result<Vec<u8>, CursorError> {
        self.open(sealed, &binding.for_bytes())
    }

    /// Seals arbitrary plaintext exactly as [`CursorCodec::encode`] seals a key's, so the fuzzer
    /// can reach the plaintext parser behind the authentication tag. Fuzzing builds only.
    #[cfg(fuzzing)]
    pub fn seal_plaintext_for_fuzzing(&self, plaintext: &[u8], binding: &Binding) -> String {
        let mut buf = vec![0; HEADER_LEN];
        buf.extend_from_slice(plaintext);
        buf.extend_from_slice(&[0; TAG_LEN]);
        self.seal(&mut buf, binding)
    }

    /// Opens a cursor of the connection `binding` into a key of `shape`. Anything else, whatever
    /// the reason, is a [`CursorError`].
    pub fn decode(
        &self,
        cursor: &str,
        shape: KeyShape,
        binding: &Binding,
    ) -> Result<Key, CursorError> {
        parse_plaintext(&self.open(cursor, binding)?, shape, binding)
    }

    /// The plaintext of what [`CursorCodec::seal`] sealed for `binding`.
    ///
    /// The nonce is not re-derived here: the Poly1305 tag already proves that the holder of the
    /// key sealed exactly these bytes.
    fn open(&self, sealed: &str, binding: &Binding) -> Result<Vec<u8>, CursorError> {
        if sealed.len() > MAX_CURSOR_LEN {
            return Err(CursorError);
        }
        let mut buf = URL_SAFE_NO_PAD.decode(sealed).map_err(|_| CursorError)?;
        if buf.len() < HEADER_LEN + TAG_LEN || buf[0] != VERSION {
            return Err(CursorError);
        }
        let sealing = self
            .keys
            .iter()
            .find(|k| k.id == buf[1])
            .ok_or(CursorError)?;
        let aad = associated_data(sealing.id, binding);
        let (head, rest) = buf.split_at_mut(HEADER_LEN);
        let (ciphertext, tag) = rest.split_at_mut(rest.len() - TAG_LEN);
        sealing
            .aead
            .decrypt_in_place_detached(
                XNonce::from_slice(&head[2..]),
                &aad,
                ciphertext,
                Tag::from_slice(tag),
            )
            .map_err(|_| CursorError)?;
        buf.truncate(buf.len() - TAG_LEN);
        buf.drain(..HEADER_LEN);
        Ok(buf)
    }
}

fn associated_data(key_id: u8, binding: &Binding) -> [u8; 34] {
    let mut aad = [0u8; 34];
    aad[0] = VERSION;
    aad[1] = key_id;
    aad[2..].copy_from_slice(&binding.fingerprint);
    aad
}

/// A binding that fixes no attribute, for plain key encodings (such as node ids).
const UNBOUND: Binding = Binding {
    connection: "",
    fingerprint: [0; 32],
    fixed: Vec::new(),
};

impl Key {
    /// The key's values as `(type tag | u16 big-endian length | bytes)` each, unsealed: for
    /// identifiers that must stay the same for ever, such as node ids.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut buf = vec![0; plaintext_len(self, &UNBOUND)];
        write_plaintext(&mut buf, self, &UNBOUND);
        buf
    }

    /// The inverse of [`Key::to_bytes`] for a key of `shape`.
    pub fn from_bytes(bytes: &[u8], shape: KeyShape) -> Result<Self, CursorError> {
        parse_plaintext(bytes, shape, &UNBOUND)
    }
}

/// The length of [`write_plaintext`]'s output.
fn plaintext_len(key: &Key, binding: &Binding) -> usize {
    unbound_values(key, binding)
        .map(|(_, bytes)| 3 + bytes.len())
        .sum()
}

/// Writes the values `binding` does not fix into `buf`, which is exactly [`plaintext_len`]
/// bytes long, as `(type tag | u16 big-endian length | bytes)` each.
fn write_plaintext(buf: &mut [u8], key: &Key, binding: &Binding) {
    let mut at = 0;
    for (tag, bytes) in unbound_values(key, binding) {
        buf[at] = tag;
        // Key attributes are at most 2048 bytes (DynamoDB's limit), well within u16.
        buf[at + 1..at + 3].copy_from_slice(&(bytes.len() as u16).to_be_bytes());
        buf[at + 3..at + 3 + bytes.len()].copy_from_slice(bytes);
        at += 3 + bytes.len();
    }
}

/// The type tag and bytes of each value `binding` does not fix, in key order.
fn unbound_values<'a>(
    key: &'a Key,
    binding: &'a Binding,
) -> impl Iterator<Item = (u8, &'a [u8])> + 'a {
    key.shape
        .iter()
        .zip(&key.values)
        .filter(|(attr, value)| match binding.fixed_value(attr.name) {
            Some(fixed) => {
                debug_assert_eq!(fixed, *value, "a row outside its connection's partition");
                false
            }
            None => true,
        })
        .map(|(_, value)| (tag(value.ty()), value.bytes()))
}

fn parse_plaintext(
    plaintext: &[u8],
    shape: KeyShape,
    binding: &Binding,
) -> Result<Key, CursorError> {
    let mut r = Reader(plaintext);
    let mut values = Vec::with_capacity(shape.len());
    for attr in shape {
        if let Some(fixed) = binding.fixed_value(attr.name) {
            if fixed.ty() != attr.ty {
                return Err(CursorError);
            }
            values.push(fixed.clone());
            continue;
        }
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
mod tests;
