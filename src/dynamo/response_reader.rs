//! DynamoDB's answers to `GetItem`, `Query` and `BatchGetItem`, read straight from their JSON
//! bytes into the SDK's output types, in place of the SDK's own deserialiser.
//!
//! The page path's CPU beyond the bare SDK calls was mostly the SDK turning response bodies into
//! items: its deserialiser walks a token iterator, unescapes every key and value into a fresh
//! `String` through a builder per shape, and reads fields no page needs. This reader parses the
//! same bytes with `serde_json` into the same `Item`s ([`super::Item`]) and outputs. Everything
//! else stays the SDK's: the request is built, signed, sent and retried by it, and only the
//! deserialiser the orchestrator runs on a successful answer is swapped, by an interceptor
//! ([`FastReads`]), for one that tries this reader first.
//!
//! The reader knows the shapes DynamoDB answers a successful read with. Anything else (an
//! error status, a `null` where a value belongs, an attribute type it does not know, unprocessed
//! keys of a batch, a number JSON cannot hold, malformed JSON) makes it give the bytes to the
//! SDK's deserialiser of the same operation, so that what comes out is exactly what the SDK
//! would have made of them: `tests/response_reader.rs` feeds both the same bytes, generated over
//! every attribute type and response shape, and asserts equal outputs whenever the reader
//! answers. One difference is deliberate: an output the reader makes carries no request id (the
//! SDK's builders do not let one be set); dynarelay reads request ids only from errors, which the
//! SDK deserialises.
//!
//! Hand-written because no library reads DynamoDB's JSON into the SDK's types: `serde_dynamo`
//! converts between serde types and attribute values, not response bodies, and the SDK's types
//! implement no `Deserialize`.

use std::{collections::HashMap, fmt, str::FromStr, sync::LazyLock};

use aws_sdk_dynamodb::{
    operation::{
        batch_get_item::{BatchGetItem, BatchGetItemOutput},
        get_item::{GetItem, GetItemOutput},
        query::{Query, QueryOutput},
    },
    primitives::Blob,
    types::{AttributeValue, Capacity, ConsumedCapacity},
};
use aws_smithy_runtime_api::{
    box_error::BoxError,
    client::{
        interceptors::{
            Intercept,
            context::{BeforeSerializationInterceptorContextRef, Error, Output},
        },
        orchestrator::{HttpResponse, Metadata, OrchestratorError},
        runtime_components::RuntimeComponents,
        runtime_plugin::RuntimePlugin,
        ser_de::{DeserializeResponse, SharedResponseDeserializer},
    },
};
use aws_smithy_types::config_bag::{ConfigBag, FrozenLayer};
use serde::de::{
    self, DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::value::RawValue;

#[cfg(test)]
mod tests;

/// The operations the reader reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// `GetItem`: `Item` and `ConsumedCapacity`.
    GetItem,
    /// `Query`: `Items`, `Count`, `ScannedCount`, `LastEvaluatedKey` and `ConsumedCapacity`.
    Query,
    /// `BatchGetItem`: `Responses`, an empty `UnprocessedKeys` and `ConsumedCapacity`.
    BatchGetItem,
}

impl Read {
    /// The operation the SDK's orchestrator runs, by its name in the operation's metadata.
    fn of(name: &str) -> Option<Self> {
        match name {
            "GetItem" => Some(Self::GetItem),
            "Query" => Some(Self::Query),
            "BatchGetItem" => Some(Self::BatchGetItem),
            _ => None,
        }
    }

    /// The SDK's own configuration of the operation, which holds its deserialiser: made once.
    fn sdk_layer(self) -> Option<&'static FrozenLayer> {
        static GET_ITEM: LazyLock<Option<FrozenLayer>> = LazyLock::new(|| GetItem::new().config());
        static QUERY: LazyLock<Option<FrozenLayer>> = LazyLock::new(|| Query::new().config());
        static BATCH: LazyLock<Option<FrozenLayer>> =
            LazyLock::new(|| BatchGetItem::new().config());
        match self {
            Self::GetItem => GET_ITEM.as_ref(),
            Self::Query => QUERY.as_ref(),
            Self::BatchGetItem => BATCH.as_ref(),
        }
    }

    /// What the SDK's own deserialiser makes of `response`.
    pub fn by_the_sdk(self, response: &HttpResponse) -> Result<Output, OrchestratorError<Error>> {
        match self
            .sdk_layer()
            .and_then(|layer| layer.load::<SharedResponseDeserializer>())
        {
            Some(sdk) => sdk.deserialize_nonstreaming(response),
            // Every operation's configuration holds its deserialiser.
            None => Err(OrchestratorError::other(
                "the SDK's deserialiser of this operation is missing",
            )),
        }
    }

    /// The output this reader makes of a successful answer's `body`, or `None` where it leaves
    /// the body to the SDK (see the module's documentation).
    pub fn read(self, body: &[u8]) -> Option<Output> {
        let mut json = serde_json::Deserializer::from_slice(body);
        let output = match self {
            Self::GetItem => Output::erase(json.deserialize_map(GetItemVisitor).ok()?),
            Self::Query => Output::erase(json.deserialize_map(QueryVisitor).ok()?),
            Self::BatchGetItem => Output::erase(json.deserialize_map(BatchVisitor).ok()?),
        };
        json.end().ok()?;
        Some(output)
    }
}

/// The SDK interceptor that puts [`Reader`] in place of the SDK's deserialiser for the
/// operations it reads, once per call (before the request is built, so retries keep it).
#[derive(Debug)]
pub struct FastReads;

impl Intercept for FastReads {
    fn name(&self) -> &'static str {
        "FastReads"
    }

    // Not `read_before_execution`: a client's interceptors run that before the operation's
    // configuration, which names the operation, is in the bag.
    fn read_before_serialization(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(read) = cfg.load::<Metadata>().and_then(|m| Read::of(m.name())) {
            cfg.interceptor_state()
                .store_put(SharedResponseDeserializer::new(Reader(read)));
        }
        Ok(())
    }
}

/// The deserialiser [`FastReads`] installs: [`Read::read`] on a successful answer, else (and
/// wherever it gives up) the SDK's own.
#[derive(Debug)]
pub struct Reader(pub Read);

impl DeserializeResponse for Reader {
    fn deserialize_nonstreaming(
        &self,
        response: &HttpResponse,
    ) -> Result<Output, OrchestratorError<Error>> {
        if response.status().is_success()
            && let Some(output) = response.body().bytes().and_then(|body| self.0.read(body))
        {
            return Ok(output);
        }
        self.0.by_the_sdk(response)
    }
}

/// A JSON string borrowed from the body where it has no escapes (names of fields and types,
/// base64), else unescaped into a `String`, as the SDK unescapes every string.
struct Text<'de>(std::borrow::Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(std::borrow::Cow::Borrowed(text)))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<'de>, E> {
        Ok(Text(std::borrow::Cow::Owned(text.to_owned())))
    }
}

/// Reads a JSON object with the visitor `V`.
#[derive(Clone, Copy)]
struct Object<V>(V);

impl<'de, V: Visitor<'de>> DeserializeSeed<'de> for Object<V> {
    type Value = V::Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        d.deserialize_map(self.0)
    }
}

/// An array, each element read with the seed `S`.
#[derive(Clone, Copy)]
struct ListOf<S>(S);

impl<'de, S: DeserializeSeed<'de> + Copy> Visitor<'de> for ListOf<S> {
    type Value = Vec<S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut values = Vec::with_capacity(seq.size_hint().unwrap_or(8));
        while let Some(value) = seq.next_element_seed(self.0)? {
            values.push(value);
        }
        Ok(values)
    }
}

impl<'de, S: DeserializeSeed<'de> + Copy> DeserializeSeed<'de> for ListOf<S> {
    type Value = Vec<S::Value>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

/// An object of names to values each read with the seed `S`: an item (names to attribute
/// values), items by table, capacity by index. The last of a repeated name wins, as in the SDK.
#[derive(Clone, Copy)]
struct MapOf<S>(S);

impl<'de, S: DeserializeSeed<'de> + Copy> Visitor<'de> for MapOf<S> {
    type Value = HashMap<String, S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut values = HashMap::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(name) = map.next_key::<String>()? {
            let value = map.next_value_seed(self.0)?;
            values.insert(name, value);
        }
        Ok(values)
    }
}

impl<'de, S: DeserializeSeed<'de> + Copy> DeserializeSeed<'de> for MapOf<S> {
    type Value = HashMap<String, S::Value>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

/// An item ([`super::Item`]).
const ITEM: MapOf<Object<ValueVisitor>> = MapOf(Object(ValueVisitor));
/// A list of items.
const ITEMS: ListOf<MapOf<Object<ValueVisitor>>> = ListOf(ITEM);
/// Capacity by index.
const CAPACITIES: MapOf<Object<CapacityVisitor>> = MapOf(Object(CapacityVisitor));

/// One attribute value: an object of exactly one known type and its value, none `null`.
#[derive(Clone, Copy)]
struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = AttributeValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an attribute value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AttributeValue, A::Error> {
        let Some(kind) = map.next_key::<Text<'de>>()? else {
            return Err(de::Error::custom("no type"));
        };
        let value = match &*kind.0 {
            "S" => AttributeValue::S(map.next_value()?),
            "N" => AttributeValue::N(map.next_value()?),
            "B" => AttributeValue::B(map.next_value_seed(BlobSeed)?),
            "BOOL" => AttributeValue::Bool(map.next_value()?),
            "NULL" => AttributeValue::Null(map.next_value()?),
            "SS" => AttributeValue::Ss(map.next_value()?),
            "NS" => AttributeValue::Ns(map.next_value()?),
            "BS" => AttributeValue::Bs(map.next_value_seed(ListOf(BlobSeed))?),
            "M" => AttributeValue::M(map.next_value_seed(ITEM)?),
            "L" => AttributeValue::L(map.next_value_seed(ListOf(Object(ValueVisitor)))?),
            _ => return Err(de::Error::custom("an unknown type")),
        };
        match map.next_key::<IgnoredAny>()? {
            None => Ok(value),
            Some(_) => Err(de::Error::custom("more than one type")),
        }
    }
}

/// Base64 as the SDK decodes it: the string as it stands in the body, escapes and all (the
/// SDK does not unescape it, so a string with an escape is left to the SDK).
#[derive(Clone, Copy)]
struct BlobSeed;

impl<'de> DeserializeSeed<'de> for BlobSeed {
    type Value = Blob;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Blob, D::Error> {
        let Text(std::borrow::Cow::Borrowed(text)) = d.deserialize_str(TextVisitor)? else {
            return Err(de::Error::custom("an escape in base64"));
        };
        aws_smithy_types::base64::decode(text)
            .map(Blob::new)
            .map_err(|_| de::Error::custom("not base64"))
    }
}

/// A JSON number as the SDK reads a `Double`: every integer or decimal JSON allows, finite.
/// `f64::from_str` rounds the text as the SDK's reader does (it parses decimals the same way,
/// and an integer's `u64` converts to the same nearest `f64`).
fn double<E: de::Error>(raw: &RawValue) -> Result<f64, E> {
    f64::from_str(raw.get())
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| E::custom("not a finite number"))
}

/// A JSON number as the SDK reads an `Integer`: an integer that fits in an `i32`.
fn integer<E: de::Error>(raw: &RawValue) -> Result<i32, E> {
    let text = raw.get();
    // A decimal point or exponent makes it a float, which the SDK refuses for an integer.
    if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        return Err(E::custom("not an integer"));
    }
    i32::from_str(text).map_err(|_| E::custom("not an i32"))
}

/// A table's or an index's capacity.
#[derive(Clone, Copy)]
struct CapacityVisitor;

impl<'de> Visitor<'de> for CapacityVisitor {
    type Value = Capacity;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("capacity")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Capacity, A::Error> {
        let mut capacity = Capacity::builder();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            capacity = match &*key.0 {
                "CapacityUnits" => capacity.capacity_units(double(map.next_value()?)?),
                "ReadCapacityUnits" => capacity.read_capacity_units(double(map.next_value()?)?),
                "WriteCapacityUnits" => capacity.write_capacity_units(double(map.next_value()?)?),
                // Skipped, as the SDK skips fields it does not know.
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    capacity
                }
            };
        }
        Ok(capacity.build())
    }
}

/// A call's consumed capacity.
#[derive(Clone, Copy)]
struct ConsumedVisitor;

impl<'de> Visitor<'de> for ConsumedVisitor {
    type Value = ConsumedCapacity;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("consumed capacity")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ConsumedCapacity, A::Error> {
        let mut consumed = ConsumedCapacity::builder();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            consumed = match &*key.0 {
                "TableName" => consumed.table_name(map.next_value::<String>()?),
                "CapacityUnits" => consumed.capacity_units(double(map.next_value()?)?),
                "ReadCapacityUnits" => consumed.read_capacity_units(double(map.next_value()?)?),
                "WriteCapacityUnits" => consumed.write_capacity_units(double(map.next_value()?)?),
                "Table" => consumed.table(map.next_value_seed(Object(CapacityVisitor))?),
                "LocalSecondaryIndexes" => {
                    consumed.set_local_secondary_indexes(Some(map.next_value_seed(CAPACITIES)?))
                }
                "GlobalSecondaryIndexes" => {
                    consumed.set_global_secondary_indexes(Some(map.next_value_seed(CAPACITIES)?))
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    consumed
                }
            };
        }
        Ok(consumed.build())
    }
}

struct GetItemVisitor;

impl<'de> Visitor<'de> for GetItemVisitor {
    type Value = GetItemOutput;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a GetItem answer")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<GetItemOutput, A::Error> {
        let mut output = GetItemOutput::builder();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            output = match &*key.0 {
                "Item" => output.set_item(Some(map.next_value_seed(ITEM)?)),
                "ConsumedCapacity" => {
                    output.consumed_capacity(map.next_value_seed(Object(ConsumedVisitor))?)
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    output
                }
            };
        }
        Ok(output.build())
    }
}

struct QueryVisitor;

impl<'de> Visitor<'de> for QueryVisitor {
    type Value = QueryOutput;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Query answer")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<QueryOutput, A::Error> {
        let mut output = QueryOutput::builder();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            output = match &*key.0 {
                "Items" => output.set_items(Some(map.next_value_seed(ITEMS)?)),
                "Count" => output.count(integer(map.next_value()?)?),
                "ScannedCount" => output.scanned_count(integer(map.next_value()?)?),
                "LastEvaluatedKey" => {
                    output.set_last_evaluated_key(Some(map.next_value_seed(ITEM)?))
                }
                "ConsumedCapacity" => {
                    output.consumed_capacity(map.next_value_seed(Object(ConsumedVisitor))?)
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    output
                }
            };
        }
        Ok(output.build())
    }
}

/// `UnprocessedKeys` when it is empty, as DynamoDB sends it when every key was read; keys left
/// unread go to the SDK, which reads their whole shape.
#[derive(Clone, Copy)]
struct NoUnprocessedKeys;

impl<'de> Visitor<'de> for NoUnprocessedKeys {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("no unprocessed keys")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        match map.next_key::<IgnoredAny>()? {
            None => Ok(()),
            Some(_) => Err(de::Error::custom("unprocessed keys")),
        }
    }
}

struct BatchVisitor;

impl<'de> Visitor<'de> for BatchVisitor {
    type Value = BatchGetItemOutput;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a BatchGetItem answer")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BatchGetItemOutput, A::Error> {
        let mut output = BatchGetItemOutput::builder();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            output = match &*key.0 {
                "Responses" => output.set_responses(Some(map.next_value_seed(MapOf(ITEMS))?)),
                "UnprocessedKeys" => {
                    map.next_value_seed(Object(NoUnprocessedKeys))?;
                    output.set_unprocessed_keys(Some(HashMap::new()))
                }
                "ConsumedCapacity" => output.set_consumed_capacity(Some(
                    map.next_value_seed(ListOf(Object(ConsumedVisitor)))?,
                )),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    output
                }
            };
        }
        Ok(output.build())
    }
}

/// `client` with [`FastReads`]: the same configuration, connections and credentials, reading
/// the answers of `GetItem`, `Query` and `BatchGetItem` with this reader.
pub fn reading_fast(client: &aws_sdk_dynamodb::Client) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(client.config().to_builder().interceptor(FastReads).build())
}
