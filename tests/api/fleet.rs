//! The fleet example (`examples/fleet/dynarelay.toml`) served end to end: a model unlike the
//! shop (numeric and binary keys, ISO 8601 sort keys, a local index, global indexes with
//! repeated keys, sets, maps, reserved-word attributes, missing attributes).
//!
//! Every connection is walked forward to the end and backward to the start for each argument
//! combination that matters, with random page sizes from fixed seeds, and each walk must equal
//! DynamoDB's own answer: a plain SDK Query with the same key condition, the filter applied
//! here in Rust, in the same order (a Scan: the same set). Nodes are compared whole, against
//! values computed here from the raw items, so every walk also checks every field's value.
//!
//! This file holds what the tests share: the fleet on fresh tables, and each entity's expected
//! node computed from a raw item. The tests are in `fleet/`: the model and the data set
//! (`model.rs`), the walks (`walks.rs`), field values (`values.rs`), lookups, nodes and relations
//! (`lookups.rs`), mutations (`mutations.rs`), and engine bugs this model found (`engine_bugs.rs`).

mod engine_bugs;
mod lookups;
mod model;
mod mutations;
mod values;
mod walks;

use aws_sdk_dynamodb::types::AttributeValue;
use base64::{Engine, engine::general_purpose::STANDARD};
use chrono::{DateTime, SecondsFormat, Utc};
use dynarelay::dynamo::Item;
use serde_json::{Value, json};

use crate::{
    fleet_data::{self as data, Dataset, FleetTables},
    helpers::{ModelApp, model_app},
};

const MODEL: &str = "examples/fleet/dynarelay.toml";

/// The fleet model on fresh tables, with the data set written.
async fn fleet() -> (ModelApp, FleetTables, Dataset) {
    let app = model_app(MODEL).await;
    let tables = FleetTables::with_prefix(&app.prefix);
    let data = data::generate(data::SEED);
    data::write(&app.store, &tables, &data).await.unwrap();
    (app, tables, data)
}

// ------------------------------------------------------------------ expected values

/// The entities, with the fields a test selects and the values it expects from a raw item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Vehicle,
    Trip,
    Job,
    Firmware,
}

impl Kind {
    /// Every field of the entity (relations and `id` aside).
    fn fields(self) -> &'static str {
        match self {
            Kind::Vehicle => {
                "vehicleNo name status depot seats electric tags specs odometerM retiredAt \
                 firmwareDigest commissionedAt revision"
            }
            Kind::Trip => {
                "vehicleNo startedAt endedAt route serviceDay distanceM passengers fare driver \
                 stops status telemetry"
            }
            Kind::Job => "vehicleNo code doneAt mechanic cost comment",
            Kind::Firmware => "digest release releasedAt sizeBytes signatures stable",
        }
    }

    /// The fields that are sets: their order is DynamoDB's, so both sides are sorted.
    fn sets(self) -> &'static [&'static str] {
        match self {
            Kind::Vehicle => &["tags"],
            Kind::Trip => &["stops"],
            Kind::Job => &[],
            Kind::Firmware => &["signatures"],
        }
    }

    /// What the API must answer for `item`, computed from the raw attributes.
    fn expected(self, item: &Item) -> Value {
        let value = match self {
            Kind::Vehicle => json!({
                "vehicleNo": big_int(item, "vehicleNo"),
                "name": string(item, "name"),
                "status": string(item, "status"),
                "depot": string(item, "depot"),
                "seats": int(item, "seats"),
                "electric": boolean(item, "electric"),
                "tags": set(item, "tags", true),
                "specs": item.get("specs").map_or(Value::Null, json_value),
                "odometerM": big_int(item, "odometerM"),
                "retiredAt": iso_time(item, "retiredAt"),
                "firmwareDigest": bytes(item, "firmwareDigest"),
                "commissionedAt": epoch_time(item, "commissionedAt", 1),
                "revision": int(item, "revision"),
            }),
            Kind::Trip => json!({
                "vehicleNo": big_int(item, "vehicleNo"),
                "startedAt": iso_time(item, "startedAt"),
                "endedAt": iso_time(item, "endedAt"),
                "route": string(item, "route"),
                "serviceDay": string(item, "date"),
                "distanceM": int(item, "distanceM"),
                "passengers": int(item, "count"),
                "fare": decimal(item, "fare"),
                "driver": string(item, "driverId"),
                "stops": set(item, "stops", false),
                "status": string(item, "status"),
                "telemetry": item.get("data").map_or(Value::Null, json_value),
            }),
            Kind::Job => json!({
                "vehicleNo": big_int(item, "vehicleNo"),
                "code": string(item, "code"),
                "doneAt": epoch_time(item, "doneAt", 1000),
                "mechanic": string(item, "mechanic"),
                "cost": decimal(item, "cost"),
                "comment": string(item, "comment"),
            }),
            Kind::Firmware => json!({
                "digest": bytes(item, "digest"),
                "release": string(item, "release"),
                "releasedAt": epoch_time(item, "releasedAt", 1),
                "sizeBytes": big_int(item, "size"),
                "signatures": set(item, "signatures", false),
                "stable": boolean(item, "stable"),
            }),
        };
        self.normalize(value)
    }

    /// Sorts the set fields of a node.
    fn normalize(self, mut node: Value) -> Value {
        for field in self.sets() {
            if let Some(items) = node.get_mut(*field).and_then(Value::as_array_mut) {
                items.sort_by_key(Value::to_string);
            }
        }
        node
    }
}

fn string(item: &Item, attribute: &str) -> Value {
    match item.get(attribute) {
        None => Value::Null,
        Some(AttributeValue::S(s)) => json!(s),
        Some(other) => panic!("{attribute} is {other:?}"),
    }
}

fn number_text<'a>(item: &'a Item, attribute: &str) -> Option<&'a str> {
    match item.get(attribute) {
        None => None,
        Some(AttributeValue::N(n)) => Some(n),
        Some(other) => panic!("{attribute} is {other:?}"),
    }
}

fn int(item: &Item, attribute: &str) -> Value {
    number_text(item, attribute).map_or(Value::Null, |n| json!(n.parse::<i32>().unwrap()))
}

/// `BigInt`: the integer as a string.
fn big_int(item: &Item, attribute: &str) -> Value {
    number_text(item, attribute).map_or(Value::Null, |n| {
        json!(n.parse::<i64>().unwrap().to_string())
    })
}

/// `Decimal`: the number as DynamoDB holds it.
fn decimal(item: &Item, attribute: &str) -> Value {
    number_text(item, attribute).map_or(Value::Null, |n| json!(n))
}

fn boolean(item: &Item, attribute: &str) -> Value {
    match item.get(attribute) {
        None => Value::Null,
        Some(AttributeValue::Bool(b)) => json!(b),
        Some(other) => panic!("{attribute} is {other:?}"),
    }
}

fn bytes(item: &Item, attribute: &str) -> Value {
    match item.get(attribute) {
        None => Value::Null,
        Some(AttributeValue::B(b)) => json!(STANDARD.encode(b.as_ref())),
        Some(other) => panic!("{attribute} is {other:?}"),
    }
}

/// RFC 3339 in UTC with milliseconds: how the API writes every `DateTime`.
fn utc(time: DateTime<Utc>) -> Value {
    json!(time.to_rfc3339_opts(SecondsFormat::Millis, true))
}

fn iso_time(item: &Item, attribute: &str) -> Value {
    match item.get(attribute) {
        None => Value::Null,
        Some(AttributeValue::S(s)) => utc(DateTime::parse_from_rfc3339(s).unwrap().to_utc()),
        Some(other) => panic!("{attribute} is {other:?}"),
    }
}

/// A `DateTime` stored as a number of `unit` milliseconds.
fn epoch_time(item: &Item, attribute: &str, unit: i64) -> Value {
    number_text(item, attribute).map_or(Value::Null, |n| {
        utc(DateTime::from_timestamp_millis(n.parse::<i64>().unwrap() * unit).unwrap())
    })
}

/// A set field: its members, sorted; absent is null (`nullable`) or empty.
fn set(item: &Item, attribute: &str, nullable: bool) -> Value {
    let members: Vec<Value> = match item.get(attribute) {
        None if nullable => return Value::Null,
        None => Vec::new(),
        Some(AttributeValue::Ss(items)) => items.iter().map(|s| json!(s)).collect(),
        Some(AttributeValue::Ns(items)) => items
            .iter()
            .map(|n| json!(n.parse::<i32>().unwrap()))
            .collect(),
        Some(AttributeValue::Bs(items)) => items
            .iter()
            .map(|b| json!(STANDARD.encode(b.as_ref())))
            .collect(),
        Some(other) => panic!("{attribute} is {other:?}"),
    };
    Value::Array(members)
}

/// Whether the double `f` is numerically the stored number `n` (its shortest text names the
/// same number): then the `JSON` scalar sends a JSON number.
fn double_holds(n: &str, f: f64) -> bool {
    use dynarelay::number::DynamoNumber;
    match (DynamoNumber::parse(n), DynamoNumber::parse(&f.to_string())) {
        (Ok(stored), Ok(double)) => stored.numeric_cmp(&double).is_eq(),
        _ => false,
    }
}

/// A `JSON` field as documented: maps as objects, lists and sets as arrays, numbers as JSON
/// numbers when a double holds them exactly and as strings otherwise, binaries as base64.
fn json_value(value: &AttributeValue) -> Value {
    let number = |n: &str| -> Value {
        if let Ok(i) = n.parse::<i64>() {
            return json!(i);
        }
        match n.parse::<f64>() {
            // Through JSON text, as the response travels: serde_json's own float parsing (without
            // `float_roundtrip`) may land one ulp away from the double written, on both sides.
            Ok(f) if f.is_finite() && double_holds(n, f) => {
                serde_json::from_str(&json!(f).to_string()).unwrap()
            }
            _ => json!(n),
        }
    };
    match value {
        AttributeValue::S(s) => json!(s),
        AttributeValue::N(n) => number(n),
        AttributeValue::Bool(b) => json!(b),
        AttributeValue::Null(_) => Value::Null,
        AttributeValue::B(b) => json!(STANDARD.encode(b.as_ref())),
        AttributeValue::M(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), json_value(v)))
                .collect(),
        ),
        AttributeValue::L(items) => Value::Array(items.iter().map(json_value).collect()),
        AttributeValue::Ss(items) => Value::Array(items.iter().map(|s| json!(s)).collect()),
        AttributeValue::Ns(items) => Value::Array(items.iter().map(|n| number(n)).collect()),
        AttributeValue::Bs(items) => Value::Array(
            items
                .iter()
                .map(|b| json!(STANDARD.encode(b.as_ref())))
                .collect(),
        ),
        other => panic!("unexpected attribute value {other:?}"),
    }
}

// ------------------------------------------------------------------ raw item access

fn attr_s<'a>(item: &'a Item, attribute: &str) -> Option<&'a str> {
    item.get(attribute)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
}

fn attr_i(item: &Item, attribute: &str) -> Option<i64> {
    item.get(attribute)
        .and_then(|v| v.as_n().ok())
        .map(|n| n.parse().unwrap())
}

fn n(value: i64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}
