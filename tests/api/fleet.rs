//! The fleet example (`examples/fleet/dynarelay.toml`) served end to end: a model unlike the
//! shop (numeric and binary keys, ISO 8601 sort keys, a local index, global indexes with
//! repeated keys, sets, maps, reserved-word attributes, missing attributes).
//!
//! Every connection is walked forward to the end and backward to the start for each argument
//! combination that matters, with random page sizes from fixed seeds, and each walk must equal
//! DynamoDB's own answer: a plain SDK Query with the same key condition, the filter applied
//! here in Rust, in the same order (a Scan: the same set). Nodes are compared whole, against
//! values computed here from the raw items, so every walk also checks every field's value.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::types::AttributeValue;
use base64::{Engine, engine::general_purpose::STANDARD};
use chrono::{DateTime, SecondsFormat, Utc};
use dynarelay::dynamo::Item;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};

use crate::{
    fleet_data::{self as data, Dataset, FleetTables},
    helpers::{
        ModelApp, SortCond, dynarelay_command, endpoint, error_code, ground_truth, merge,
        model_app, walk_pages,
    },
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

fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    rng.next_u64() % n
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

/// An RFC 3339 time with any offset, as the model stores ISO 8601 keys.
fn stored_time(text: &str) -> String {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .to_utc()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

// ------------------------------------------------------------------ walking

/// A connection under test: its query (taking `$first`, `$after` and, unless it scans,
/// `$last` and `$before`), where the connection sits in the response, and its nodes' entity.
struct Conn {
    query: String,
    path: &'static [&'static str],
    kind: Kind,
    /// The largest page size it allows.
    max_page: u64,
}

/// Walks `conn` with page size `size` in one direction, checking each page's size, flags and
/// cursors, and returns its nodes (sets sorted) in connection order.
async fn walk(
    app: &ModelApp,
    conn: &Conn,
    vars: &Value,
    size: i64,
    forward: bool,
    label: &str,
) -> Vec<Value> {
    let page = |paging| app.graphql(&conn.query, merge(vars.clone(), paging));
    walk_pages(page, conn.path, size, forward, label)
        .await
        .into_iter()
        .map(|node| conn.kind.normalize(node))
        .collect()
}

/// Walks `conn` both ways with a random page size and with the truth's length (where
/// `hasNextPage` must turn false exactly), and compares each walk with `truth`.
async fn walk_both_ways(
    app: &ModelApp,
    conn: &Conn,
    vars: &Value,
    truth: &[Value],
    rng: &mut ChaCha8Rng,
    lens: &mut Vec<usize>,
    label: &str,
) {
    let max = conn.max_page;
    lens.push(truth.len());
    let exact = (truth.len() as i64).clamp(1, max as i64);
    for size in [1 + below(rng, 12.min(max)) as i64, exact] {
        for forward in [true, false] {
            let label = format!("{label}, size {size}, forward {forward}");
            let walked = walk(app, conn, vars, size, forward, &label).await;
            assert_eq!(walked.len(), truth.len(), "{label}: {walked:#?}");
            assert_eq!(walked, truth, "{label}");
        }
    }
}

/// The walks of a test covered something: several non-empty results, some of many pages.
fn assert_coverage(lens: &[usize], label: &str) {
    let non_empty = lens.iter().filter(|&&l| l > 0).count();
    let max = lens.iter().copied().max().unwrap_or(0);
    assert!(
        non_empty * 3 >= lens.len() && max >= 8,
        "{label}: the data leaves the walks trivial: {lens:?}"
    );
}

fn order_var(order: Option<&str>) -> Value {
    match order {
        None => json!({}),
        Some("null") => json!({ "order": null }),
        Some(o) => json!({ "order": o }),
    }
}

/// Whether the connection reads in ascending order for `order`, given its default.
fn ascending(order: Option<&str>, default_asc: bool) -> bool {
    match order {
        Some("ASC") => true,
        Some("DESC") => false,
        _ => default_asc,
    }
}

const PAGE_INFO: &str = "pageInfo { hasNextPage hasPreviousPage startCursor endCursor }";

// ------------------------------------------------------------------ 1. the model

#[tokio::test]
async fn the_fleet_model_loads_and_check_passes_against_the_tables_it_creates() {
    let app = model_app(MODEL).await;
    let model = app.model;
    assert_eq!(model.tables.len(), 4);
    assert_eq!(model.entities.len(), 4);
    let sdl = dynarelay::graphql::sdl(model).unwrap();
    for needle in [
        "\tvehicle(",
        "\t\tvehicleNo: BigInt!",
        "\tfirmware(",
        "\t\tdigest: Bytes!",
        "\ttrip(",
        "\t\tstartedAt: DateTime!",
        "\tdepotVehicles(",
        "\trouteTrips(",
        "\t\tstatuses: [TripStatus!]",
        "\tvehicles(",
        "\tfirmwareImages(",
        "type Mutation",
        "createVehicle(input: CreateVehicleInput!): CreateVehiclePayload!",
        "updateVehicle(input: UpdateVehicleInput!): UpdateVehiclePayload!",
        "deleteVehicle(input: DeleteVehicleInput!): DeleteVehiclePayload!",
        "\ttrips(",
        "\ttripsByDistance(",
        "\tserviceLog(",
        "\tstops: [Int!]!",
        "\ttags: [String!]",
        "\tsignatures: [Bytes!]!",
    ] {
        assert!(sdl.contains(needle), "the SDL lacks `{needle}`:\n{sdl}");
    }

    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(MODEL);
    let out = dynarelay_command(&endpoint())
        .arg("check")
        .arg("--model")
        .arg(&path)
        .arg("--table-prefix")
        .arg(&app.prefix)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "check failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("the model is valid"), "{stdout}");
    assert!(
        stdout.contains("the live tables match the model"),
        "{stdout}\n{stderr}"
    );

    // The indexes as DynamoDB describes them: the LSI on the table's partition key, the GSIs.
    let trips = app
        .client()
        .describe_table()
        .table_name(app.table("Trips"))
        .send()
        .await
        .unwrap();
    let table = trips.table().unwrap();
    let lsi: Vec<&str> = table
        .local_secondary_indexes()
        .iter()
        .filter_map(|i| i.index_name())
        .collect();
    let gsi: Vec<&str> = table
        .global_secondary_indexes()
        .iter()
        .filter_map(|i| i.index_name())
        .collect();
    assert_eq!(lsi, ["ByDistance"]);
    assert_eq!(gsi, ["ByRoute"]);
}

#[test]
fn the_data_set_is_deterministic_and_has_the_shapes_the_walks_need() {
    let data = data::generate(data::SEED);
    assert_eq!(data, data::generate(data::SEED));
    assert_ne!(data, data::generate(data::SEED + 1));
    // Repeated GSI keys: some (route, day) and (depot, seats) pairs hold several items.
    let mut route_days = std::collections::HashMap::new();
    for trip in &data.trips {
        if let (Some(r), Some(d)) = (attr_s(trip, "route"), attr_s(trip, "date")) {
            *route_days.entry((r, d)).or_insert(0) += 1;
        }
    }
    assert!(route_days.values().any(|&c| c >= 4), "{route_days:?}");
    let mut depot_seats = std::collections::HashMap::new();
    for v in &data.vehicles {
        if let (Some(d), Some(s)) = (attr_s(v, "depot"), attr_i(v, "seats")) {
            *depot_seats.entry((d, s)).or_insert(0) += 1;
        }
    }
    assert!(depot_seats.values().any(|&c| c >= 2), "{depot_seats:?}");
    // Missing optional attributes, sparse indexes.
    assert!(data.vehicles.iter().any(|v| !v.contains_key("depot")));
    assert!(data.trips.iter().any(|t| !t.contains_key("route")));
    assert!(data.trips.iter().any(|t| !t.contains_key("distanceM")));
    assert!(data.trips.iter().any(|t| !t.contains_key("stops")));
    assert!(data.trips.iter().any(|t| !t.contains_key("driverId")));
    let total = data.vehicles.len() + data.trips.len() + data.jobs.len() + data.firmware.len();
    assert!(total < 250, "{total} items: keep the walks fast");
}

// ------------------------------------------------------------------ 2. the walks

fn trips_conn() -> Conn {
    Conn {
        query: format!(
            "query Page($vehicleNo: BigInt!, $first: Int, $after: String, $last: Int,
                $before: String, $order: SortOrder, $since: DateTime, $until: DateTime,
                $driver: String, $minPassengers: Int, $withDriver: Boolean) {{
              vehicle(vehicleNo: $vehicleNo) {{
                trips(first: $first, after: $after, last: $last, before: $before, order: $order,
                      since: $since, until: $until, driver: $driver,
                      minPassengers: $minPassengers, withDriver: $withDriver) {{
                  edges {{ cursor node {{ {} }} }} {PAGE_INFO}
                }}
              }}
            }}",
            Kind::Trip.fields()
        ),
        path: &["vehicle", "trips"],
        kind: Kind::Trip,
        max_page: 100,
    }
}

/// One argument combination of `Vehicle.trips`.
#[derive(Debug, Clone, Default)]
struct TripArgs {
    /// `None`: omitted; `Some("null")`: an explicit null.
    order: Option<&'static str>,
    since: Option<String>,
    until: Option<String>,
    driver: Option<&'static str>,
    min_passengers: Option<i64>,
    with_driver: Option<bool>,
}

#[tokio::test]
async fn vehicle_trips_walk_both_ways_to_dynamodbs_answer_for_every_argument_combination() {
    let (app, tables, data) = fleet().await;
    let conn = trips_conn();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut lens = Vec::new();
    // Partitions of 0, 1, 2, 5, 9, 17 and 31 trips.
    for vehicle in [
        0,
        7,
        42,
        data::SPECIAL_VEHICLE,
        102,
        9_007_199_254_740_993,
        101,
    ] {
        let starts: Vec<String> = {
            let mut v: Vec<String> = data
                .trips
                .iter()
                .filter(|t| attr_i(t, "vehicleNo") == Some(vehicle))
                .map(|t| attr_s(t, "startedAt").unwrap().to_owned())
                .collect();
            v.sort();
            v
        };
        // Exact trip starts as bounds (inclusive), written with other offsets.
        let at = |i: usize| -> Option<String> {
            starts.get(i.min(starts.len().saturating_sub(1))).map(|s| {
                DateTime::parse_from_rfc3339(s)
                    .unwrap()
                    .with_timezone(&chrono::FixedOffset::east_opt(5 * 3600 + 1800).unwrap())
                    .to_rfc3339_opts(SecondsFormat::Millis, false)
            })
        };
        let combos = vec![
            TripArgs::default(),
            TripArgs {
                order: Some("null"),
                ..TripArgs::default()
            },
            TripArgs {
                order: Some("ASC"),
                ..TripArgs::default()
            },
            TripArgs {
                since: Some("2024-03-01T01:00:00+01:00".into()),
                ..TripArgs::default()
            },
            TripArgs {
                order: Some("ASC"),
                until: Some("2024-02-29T12:00:00Z".into()),
                ..TripArgs::default()
            },
            TripArgs {
                order: Some("ASC"),
                since: at(1),
                until: at(starts.len().saturating_sub(2).max(1)),
                ..TripArgs::default()
            },
            TripArgs {
                since: at(2),
                until: at(2),
                ..TripArgs::default()
            },
            TripArgs {
                driver: Some("drv-ß03"),
                ..TripArgs::default()
            },
            TripArgs {
                order: Some("ASC"),
                min_passengers: Some(40),
                ..TripArgs::default()
            },
            TripArgs {
                with_driver: Some(false),
                ..TripArgs::default()
            },
            TripArgs {
                order: Some("ASC"),
                with_driver: Some(true),
                min_passengers: Some(10),
                since: Some("2024-02-28T00:00:00Z".into()),
                ..TripArgs::default()
            },
        ];
        for args in &combos {
            let asc = ascending(args.order, false);
            let sort = match (&args.since, &args.until) {
                (None, None) => None,
                (lo, hi) => Some((
                    "startedAt",
                    SortCond::Range(
                        lo.as_deref().map(|t| s(&stored_time(t))),
                        hi.as_deref().map(|t| s(&stored_time(t))),
                    ),
                )),
            };
            let items = ground_truth(
                &app,
                &tables.trips,
                None,
                ("vehicleNo", n(vehicle)),
                sort,
                asc,
            )
            .await;
            let truth: Vec<Value> = items
                .iter()
                .filter(|t| {
                    args.driver.is_none_or(|d| attr_s(t, "driverId") == Some(d))
                        && args
                            .min_passengers
                            .is_none_or(|m| attr_i(t, "count").unwrap() >= m)
                        && args
                            .with_driver
                            .is_none_or(|w| t.contains_key("driverId") == w)
                })
                .map(|t| Kind::Trip.expected(t))
                .collect();
            let vars = merge(
                json!({
                    "vehicleNo": vehicle.to_string(),
                    "since": args.since,
                    "until": args.until,
                    "driver": args.driver,
                    "minPassengers": args.min_passengers,
                    "withDriver": args.with_driver,
                }),
                order_var(args.order),
            );
            let label = format!("vehicle {vehicle} ({} trips), {args:?}", starts.len());
            walk_both_ways(&app, &conn, &vars, &truth, &mut rng, &mut lens, &label).await;
        }
    }
    assert_coverage(&lens, "Vehicle.trips");
}

#[tokio::test]
async fn trips_by_distance_walk_the_local_index_with_its_ties_both_ways() {
    let (app, tables, data) = fleet().await;
    let conn = Conn {
        query: format!(
            "query Page($vehicleNo: BigInt!, $first: Int, $after: String, $last: Int,
                $before: String, $order: SortOrder, $minMeters: Int, $maxMeters: Int) {{
              vehicle(vehicleNo: $vehicleNo) {{
                tripsByDistance(first: $first, after: $after, last: $last, before: $before,
                    order: $order, minMeters: $minMeters, maxMeters: $maxMeters) {{
                  edges {{ cursor node {{ {} }} }} {PAGE_INFO}
                }}
              }}
            }}",
            Kind::Trip.fields()
        ),
        path: &["vehicle", "tripsByDistance"],
        kind: Kind::Trip,
        max_page: 100,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut lens = Vec::new();
    let tied = data
        .trips
        .iter()
        .filter(|t| attr_i(t, "vehicleNo") == Some(101) && attr_i(t, "distanceM") == Some(12_800))
        .count();
    assert!(
        tied >= 3,
        "vehicle 101 needs trips of equal distance, has {tied}"
    );
    let combos: [(Option<&str>, Option<i64>, Option<i64>); 6] = [
        (None, None, None),
        (Some("ASC"), None, None),
        (Some("ASC"), Some(12_800), None),
        (None, None, Some(12_800)),
        (Some("DESC"), Some(12_800), Some(12_800)),
        (Some("ASC"), Some(6_000), Some(40_000)),
    ];
    for vehicle in [0, 42, 101, 103, 65_535, 9_007_199_254_740_993] {
        for (order, min, max) in combos {
            let asc = ascending(order, false);
            let sort = (min.is_some() || max.is_some())
                .then(|| ("distanceM", SortCond::Range(min.map(n), max.map(n))));
            let truth: Vec<Value> = ground_truth(
                &app,
                &tables.trips,
                Some("ByDistance"),
                ("vehicleNo", n(vehicle)),
                sort,
                asc,
            )
            .await
            .iter()
            .map(|t| Kind::Trip.expected(t))
            .collect();
            let vars = merge(
                json!({ "vehicleNo": vehicle.to_string(), "minMeters": min, "maxMeters": max }),
                order_var(order),
            );
            let label = format!("vehicle {vehicle} by distance, {order:?} {min:?}..{max:?}");
            walk_both_ways(&app, &conn, &vars, &truth, &mut rng, &mut lens, &label).await;
        }
    }
    assert_coverage(&lens, "Vehicle.tripsByDistance");
}

fn service_log_conn() -> Conn {
    Conn {
        query: format!(
            "query Page($vehicleNo: BigInt!, $first: Int, $after: String, $last: Int,
                $before: String, $order: SortOrder, $fromCode: String, $toCode: String,
                $codePrefix: String, $mechanic: String) {{
              vehicle(vehicleNo: $vehicleNo) {{
                serviceLog(first: $first, after: $after, last: $last, before: $before,
                    order: $order, fromCode: $fromCode, toCode: $toCode,
                    codePrefix: $codePrefix, mechanic: $mechanic) {{
                  edges {{ cursor node {{ {} }} }} {PAGE_INFO}
                }}
              }}
            }}",
            Kind::Job.fields()
        ),
        path: &["vehicle", "serviceLog"],
        kind: Kind::Job,
        max_page: 30,
    }
}

#[tokio::test]
async fn service_log_walks_code_ranges_and_prefixes_both_ways() {
    let (app, tables, _) = fleet().await;
    let conn = service_log_conn();
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let mut lens = Vec::new();
    type Combo = (
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
    );
    // (order, fromCode, toCode, codePrefix, mechanic)
    let combos: [Combo; 11] = [
        (None, None, None, None, None),
        (Some("DESC"), None, None, None, None),
        (None, None, None, Some("brakes/"), None),
        (Some("DESC"), None, None, Some("é"), None),
        (None, None, None, Some("Ö"), None),
        (None, None, None, Some("tyres/0002"), None),
        (None, Some("doors"), None, None, None),
        (Some("DESC"), None, Some("tyres/0002"), None, None),
        (None, Some("HVAC"), Some("brakes/9999"), None, None),
        (None, None, None, None, Some("m-jörg")),
        (Some("DESC"), None, None, Some("tyres/"), Some("m-anna")),
    ];
    for vehicle in [101, 102, 7, 0, data::GONE_VEHICLE] {
        for (order, from, to, prefix, mechanic) in combos {
            let asc = ascending(order, true);
            let sort = match (from, to, prefix) {
                (_, _, Some(p)) => Some(("code", SortCond::Prefix(s(p)))),
                (None, None, None) => None,
                (lo, hi, None) => Some(("code", SortCond::Range(lo.map(s), hi.map(s)))),
            };
            let truth: Vec<Value> = ground_truth(
                &app,
                &tables.service_log,
                None,
                ("vehicleNo", n(vehicle)),
                sort,
                asc,
            )
            .await
            .iter()
            .filter(|j| mechanic.is_none_or(|m| attr_s(j, "mechanic") == Some(m)))
            .map(|j| Kind::Job.expected(j))
            .collect();
            let vars = merge(
                json!({
                    "vehicleNo": vehicle.to_string(),
                    "fromCode": from,
                    "toCode": to,
                    "codePrefix": prefix,
                    "mechanic": mechanic,
                }),
                order_var(order),
            );
            let label = format!(
                "jobs of vehicle {vehicle}, {order:?} {from:?}..{to:?} prefix {prefix:?} mechanic {mechanic:?}"
            );
            if vehicle == data::GONE_VEHICLE {
                // The jobs remain but the vehicle does not: the lookup is null.
                let response = app
                    .graphql(&conn.query, merge(vars.clone(), json!({ "first": 5 })))
                    .await;
                assert_eq!(response["data"]["vehicle"], Value::Null, "{response}");
                continue;
            }
            walk_both_ways(&app, &conn, &vars, &truth, &mut rng, &mut lens, &label).await;
        }
    }
    assert_coverage(&lens, "Vehicle.serviceLog");

    // The connection's own page sizes: 10 by default, at most 30.
    let response = app
        .graphql(&conn.query, json!({ "vehicleNo": "101" }))
        .await;
    let page = &response["data"]["vehicle"]["serviceLog"];
    assert_eq!(
        page["edges"].as_array().map(Vec::len),
        Some(10),
        "{response}"
    );
    assert_eq!(page["pageInfo"]["hasNextPage"], true);
    let response = app
        .graphql(&conn.query, json!({ "vehicleNo": "101", "first": 31 }))
        .await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
    // A range and a prefix together are refused.
    let response = app
        .graphql(
            &conn.query,
            json!({ "vehicleNo": "101", "fromCode": "a", "codePrefix": "b" }),
        )
        .await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
}

#[tokio::test]
async fn depot_vehicles_walk_the_global_index_with_tied_seat_counts_both_ways() {
    let (app, tables, _) = fleet().await;
    let conn = Conn {
        query: format!(
            "query Page($depot: String!, $first: Int, $after: String, $last: Int,
                $before: String, $order: SortOrder, $minSeats: Int, $maxSeats: Int,
                $notStatus: VehicleStatus, $electric: Boolean) {{
              depotVehicles(depot: $depot, first: $first, after: $after, last: $last,
                  before: $before, order: $order, minSeats: $minSeats, maxSeats: $maxSeats,
                  notStatus: $notStatus, electric: $electric) {{
                edges {{ cursor node {{ {} }} }} {PAGE_INFO}
              }}
            }}",
            Kind::Vehicle.fields()
        ),
        path: &["depotVehicles"],
        kind: Kind::Vehicle,
        max_page: 100,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    let mut lens = Vec::new();
    type Combo = (
        Option<&'static str>,
        Option<i64>,
        Option<i64>,
        Option<&'static str>,
        Option<bool>,
    );
    // (order, minSeats, maxSeats, notStatus, electric)
    let combos: [Combo; 9] = [
        (None, None, None, None, None),
        (Some("DESC"), None, None, None, None),
        (None, Some(40), None, None, None),
        (Some("DESC"), None, Some(40), None, None),
        (Some("DESC"), Some(40), Some(40), None, None),
        (None, Some(9), Some(60), None, None),
        (None, None, None, Some("IN_WORKSHOP"), None),
        (Some("DESC"), None, None, None, Some(true)),
        (Some("DESC"), Some(40), None, Some("RESERVE"), Some(false)),
    ];
    let depots = data::DEPOTS.iter().copied().chain(["Nowhere"]);
    for depot in depots {
        for (order, min, max, not_status, electric) in combos {
            let asc = ascending(order, true);
            let sort = (min.is_some() || max.is_some())
                .then(|| ("seats", SortCond::Range(min.map(n), max.map(n))));
            let truth: Vec<Value> = ground_truth(
                &app,
                &tables.vehicles,
                Some("ByDepot"),
                ("depot", s(depot)),
                sort,
                asc,
            )
            .await
            .iter()
            .filter(|v| {
                not_status.is_none_or(|st| attr_s(v, "status") != Some(st))
                    && electric.is_none_or(|e| v.get("electric") == Some(&AttributeValue::Bool(e)))
            })
            .map(|v| Kind::Vehicle.expected(v))
            .collect();
            let vars = merge(
                json!({
                    "depot": depot,
                    "minSeats": min,
                    "maxSeats": max,
                    "notStatus": not_status,
                    "electric": electric,
                }),
                order_var(order),
            );
            let label = format!(
                "depot {depot}, {order:?} seats {min:?}..{max:?} not {not_status:?} electric {electric:?}"
            );
            walk_both_ways(&app, &conn, &vars, &truth, &mut rng, &mut lens, &label).await;
        }
    }
    assert_coverage(&lens, "depotVehicles");
}

#[tokio::test]
async fn route_trips_walk_the_global_index_with_tied_days_both_ways() {
    let (app, tables, _) = fleet().await;
    let conn = Conn {
        query: format!(
            "query Page($route: String!, $first: Int, $after: String, $last: Int,
                $before: String, $order: SortOrder, $fromDay: String, $toDay: String,
                $dayPrefix: String, $statuses: [TripStatus!], $stop: Int) {{
              routeTrips(route: $route, first: $first, after: $after, last: $last,
                  before: $before, order: $order, fromDay: $fromDay, toDay: $toDay,
                  dayPrefix: $dayPrefix, statuses: $statuses, stop: $stop) {{
                edges {{ cursor node {{ {} }} }} {PAGE_INFO}
              }}
            }}",
            Kind::Trip.fields()
        ),
        path: &["routeTrips"],
        kind: Kind::Trip,
        max_page: 100,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let mut lens = Vec::new();
    type Combo = (
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static [&'static str]>,
        Option<i64>,
    );
    // (order, fromDay, toDay, dayPrefix, statuses, stop)
    let combos: [Combo; 11] = [
        (None, None, None, None, None, None),
        (Some("DESC"), None, None, None, None, None),
        (None, Some("2024-02-29"), None, None, None, None),
        (Some("DESC"), None, Some("2024-02-29"), None, None, None),
        (
            None,
            Some("2024-02-29"),
            Some("2024-02-29"),
            None,
            None,
            None,
        ),
        (
            Some("DESC"),
            Some("2024-02-28"),
            Some("2024-03-01"),
            None,
            None,
            None,
        ),
        (None, None, None, Some("2024-03"), None, None),
        (Some("DESC"), None, None, Some("2024-02-2"), None, None),
        (None, None, None, None, Some(&["COMPLETED"]), None),
        (
            Some("DESC"),
            Some("2024-02-28"),
            None,
            None,
            Some(&["RUNNING", "CANCELLED", "SCHEDULED"]),
            None,
        ),
        (None, None, None, Some("2024-0"), None, Some(205)),
    ];
    let routes = data::ROUTES.iter().copied().chain(["Bus 99"]);
    for route in routes {
        for (order, from, to, prefix, statuses, stop) in combos {
            let asc = ascending(order, true);
            let sort = match (from, to, prefix) {
                (_, _, Some(p)) => Some(("date", SortCond::Prefix(s(p)))),
                (None, None, None) => None,
                (lo, hi, None) => Some(("date", SortCond::Range(lo.map(s), hi.map(s)))),
            };
            let truth: Vec<Value> = ground_truth(
                &app,
                &tables.trips,
                Some("ByRoute"),
                ("route", s(route)),
                sort,
                asc,
            )
            .await
            .iter()
            .filter(|t| {
                statuses.is_none_or(|st| st.contains(&attr_s(t, "status").unwrap()))
                    && stop.is_none_or(|stop| match t.get("stops") {
                        Some(AttributeValue::Ns(ns)) => ns.contains(&stop.to_string()),
                        _ => false,
                    })
            })
            .map(|t| Kind::Trip.expected(t))
            .collect();
            let vars = merge(
                json!({
                    "route": route,
                    "fromDay": from,
                    "toDay": to,
                    "dayPrefix": prefix,
                    "statuses": statuses,
                    "stop": stop,
                }),
                order_var(order),
            );
            let label = format!(
                "route {route}, {order:?} {from:?}..{to:?} prefix {prefix:?} statuses {statuses:?} stop {stop:?}"
            );
            walk_both_ways(&app, &conn, &vars, &truth, &mut rng, &mut lens, &label).await;
        }
    }
    assert_coverage(&lens, "routeTrips");
    // The data holds days with several trips of one route (ties in the index key).
    let all = ground_truth(
        &app,
        &tables.trips,
        Some("ByRoute"),
        ("route", s(data::ROUTES[0])),
        None,
        true,
    )
    .await;
    let days: Vec<&str> = all.iter().map(|t| attr_s(t, "date").unwrap()).collect();
    assert!(days.windows(4).any(|w| w[0] == w[3]), "{days:?}");
}

#[tokio::test]
async fn scans_walk_forward_to_every_item_once() {
    let (app, tables, _) = fleet().await;
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    let vehicles = Conn {
        query: format!(
            "query Page($first: Int, $after: String, $tag: String, $retired: Boolean) {{
              vehicles(first: $first, after: $after, tag: $tag, retired: $retired) {{
                edges {{ cursor node {{ {} }} }} {PAGE_INFO}
              }}
            }}",
            Kind::Vehicle.fields()
        ),
        path: &["vehicles"],
        kind: Kind::Vehicle,
        max_page: 100,
    };
    let all = app.scan_all(&tables.vehicles).await;
    let combos: [(Option<&str>, Option<bool>); 7] = [
        (None, None),
        (Some("wifi"), None),
        (Some("café ☕"), None),
        (None, Some(true)),
        (None, Some(false)),
        (Some("wifi"), Some(false)),
        (Some("no such tag"), None),
    ];
    for (tag, retired) in combos {
        let truth: Vec<Value> = all
            .iter()
            .filter(|v| {
                tag.is_none_or(|t| match v.get("tags") {
                    Some(AttributeValue::Ss(tags)) => tags.iter().any(|x| x == t),
                    _ => false,
                }) && retired.is_none_or(|r| v.contains_key("retiredAt") == r)
            })
            .map(|v| Kind::Vehicle.expected(v))
            .collect();
        let vars = json!({ "tag": tag, "retired": retired });
        for size in [
            1,
            2 + below(&mut rng, 5) as i64,
            truth.len().max(1) as i64,
            100,
        ] {
            let label = format!("vehicles scan, tag {tag:?} retired {retired:?}, size {size}");
            let walked = walk(&app, &vehicles, &vars, size, true, &label).await;
            assert_same_set(&walked, &truth, &label);
        }
    }

    let firmware = Conn {
        query: format!(
            "query Page($first: Int, $after: String) {{
              firmwareImages(first: $first, after: $after) {{
                edges {{ cursor node {{ {} }} }} {PAGE_INFO}
              }}
            }}",
            Kind::Firmware.fields()
        ),
        path: &["firmwareImages"],
        kind: Kind::Firmware,
        max_page: 100,
    };
    let truth: Vec<Value> = app
        .scan_all(&tables.firmware)
        .await
        .iter()
        .map(|f| Kind::Firmware.expected(f))
        .collect();
    for size in [1, 3, 7, 50] {
        let label = format!("firmware scan, size {size}");
        let walked = walk(&app, &firmware, &json!({}), size, true, &label).await;
        assert_same_set(&walked, &truth, &label);
    }
    // Scans page forward only: no `last`.
    let response = app
        .graphql("{ vehicles(last: 2) { edges { cursor } } }", json!({}))
        .await;
    assert!(response.get("errors").is_some(), "{response}");
}

fn assert_same_set(walked: &[Value], truth: &[Value], label: &str) {
    let walked_set: BTreeSet<String> = walked.iter().map(Value::to_string).collect();
    assert_eq!(
        walked_set.len(),
        walked.len(),
        "{label}: an item came twice"
    );
    let truth_set: BTreeSet<String> = truth.iter().map(Value::to_string).collect();
    assert_eq!(walked_set, truth_set, "{label}");
}

// ------------------------------------------------------------------ 3. values

#[tokio::test]
async fn every_field_round_trips_exactly_through_the_lookups() {
    let (app, tables, _) = fleet().await;
    let vehicle_query = format!(
        "query($no: BigInt!) {{ vehicle(vehicleNo: $no) {{ {} }} }}",
        Kind::Vehicle.fields()
    );
    for item in app.scan_all(&tables.vehicles).await {
        let no = attr_i(&item, "vehicleNo").unwrap();
        let response = app
            .graphql(&vehicle_query, json!({ "no": no.to_string() }))
            .await;
        assert!(response.get("errors").is_none(), "{response}");
        let got = Kind::Vehicle.normalize(response["data"]["vehicle"].clone());
        assert_eq!(got, Kind::Vehicle.expected(&item), "vehicle {no}");
    }
    let trip_query = format!(
        "query($no: BigInt!, $at: DateTime!) {{ trip(vehicleNo: $no, startedAt: $at) {{ {} }} }}",
        Kind::Trip.fields()
    );
    for item in app.scan_all(&tables.trips).await {
        let no = attr_i(&item, "vehicleNo").unwrap();
        let at = attr_s(&item, "startedAt").unwrap();
        let response = app
            .graphql(&trip_query, json!({ "no": no.to_string(), "at": at }))
            .await;
        assert!(response.get("errors").is_none(), "{response}");
        let got = Kind::Trip.normalize(response["data"]["trip"].clone());
        assert_eq!(got, Kind::Trip.expected(&item), "trip {no} {at}");
    }
    let firmware_query = format!(
        "query($digest: Bytes!) {{ firmware(digest: $digest) {{ {} }} }}",
        Kind::Firmware.fields()
    );
    for item in app.scan_all(&tables.firmware).await {
        let digest = bytes(&item, "digest");
        let response = app
            .graphql(&firmware_query, json!({ "digest": digest }))
            .await;
        assert!(response.get("errors").is_none(), "{response}");
        let got = Kind::Firmware.normalize(response["data"]["firmware"].clone());
        assert_eq!(got, Kind::Firmware.expected(&item), "firmware {digest}");
    }

    // The values spelled out, independently of the conversion above.
    let special = app
        .graphql(
            &vehicle_query,
            json!({ "no": data::SPECIAL_VEHICLE.to_string() }),
        )
        .await;
    let v = Kind::Vehicle.normalize(special["data"]["vehicle"].clone());
    assert_eq!(v["vehicleNo"], "9223372036854775807", "{special}");
    assert_eq!(v["name"], data::SPECIAL_VEHICLE_NAME);
    assert_eq!(v["tags"], json!(["café ☕", "wifi"]));
    assert_eq!(v["odometerM"], data::SPECIAL_ODOMETER);
    assert_eq!(v["retiredAt"], "2031-12-31T22:59:59.500Z");
    assert_eq!(v["firmwareDigest"], "AP8AAQ==");
    assert_eq!(v["specs"]["serial"], data::SPECIAL_SERIAL);
    assert_eq!(v["specs"]["recall"], Value::Null);
    assert!(v["specs"].as_object().unwrap().contains_key("recall"));
    assert_eq!(v["specs"]["key"], "3q2+7w==");
    assert_eq!(v["specs"]["options"], json!(["heater"]));
    assert_eq!(v["specs"]["battery"]["kWh"], json!(350.5));
    assert!(v["specs"]["battery"]["année"].is_i64(), "{v}");
    assert_eq!(v["specs"]["doors"], json!([1, 2, 2.5]));
    assert!(v["electric"].is_boolean());
    // 1e-30 survives a double as text: a JSON number (read back as this test's parser reads it).
    let tiny: Value = serde_json::from_str("1e-30").unwrap();
    assert_eq!(v["specs"]["tiny"], tiny);

    let bare = app
        .graphql(
            &vehicle_query,
            json!({ "no": data::BARE_VEHICLE.to_string() }),
        )
        .await;
    assert_eq!(
        bare["data"]["vehicle"],
        json!({
            "vehicleNo": "0", "name": "Spare", "status": "RESERVE", "depot": null, "seats": 8,
            "electric": false, "tags": null, "specs": null, "odometerM": "0",
            "retiredAt": null, "firmwareDigest": null,
            "commissionedAt": "2020-09-13T12:26:40.000Z", "revision": 1,
        }),
        "{bare}"
    );

    let trip = app
        .graphql(
            &trip_query,
            json!({ "no": data::SPECIAL_VEHICLE.to_string(), "at": data::SPECIAL_TRIP_START }),
        )
        .await;
    let t = Kind::Trip.normalize(trip["data"]["trip"].clone());
    assert_eq!(t["fare"], data::SPECIAL_FARE, "{trip}");
    assert_eq!(t["stops"], json!([2_000_000_001, 7]));
    assert_eq!(t["startedAt"], data::SPECIAL_TRIP_START);
    assert_eq!(t["endedAt"], "2024-03-01T01:02:03.004Z");
    assert_eq!(t["serviceDay"], "2024-02-29");
    assert_eq!(t["passengers"], 0);
    assert_eq!(t["driver"], "drv-ß03");
    assert_eq!(t["telemetry"]["odometer"], data::SPECIAL_SERIAL);
    assert_eq!(t["telemetry"]["speedMax"], json!(87.5));
    assert_eq!(t["telemetry"]["frames"], json!(["AAEC"]));
    assert_eq!(t["telemetry"]["stops"], json!([7]));
    assert_eq!(t["telemetry"]["empty"], json!({}));
    assert_eq!(t["telemetry"]["list"], json!([]));
    assert_eq!(t["telemetry"]["nothing"], Value::Null);
    assert_eq!(t["telemetry"]["ok"], true);
    assert_eq!(t["telemetry"]["note"], "Schneefall ❄, Verspätung");

    // A trip with none of its optional attributes: nulls, and an empty (non-null) stop set.
    let bare_trip = app
        .scan_all(&tables.trips)
        .await
        .into_iter()
        .find(|t| {
            ["endedAt", "route", "distanceM", "driverId", "stops", "data"]
                .iter()
                .all(|a| !t.contains_key(*a))
        })
        .expect("a trip without optional attributes");
    let response = app
        .graphql(
            &trip_query,
            json!({
                "no": attr_i(&bare_trip, "vehicleNo").unwrap().to_string(),
                "at": attr_s(&bare_trip, "startedAt").unwrap(),
            }),
        )
        .await;
    let t = &response["data"]["trip"];
    for field in [
        "endedAt",
        "route",
        "serviceDay",
        "distanceM",
        "driver",
        "telemetry",
    ] {
        assert_eq!(t[field], Value::Null, "{field}: {response}");
    }
    assert_eq!(t["stops"], json!([]), "{response}");

    let odd = app
        .graphql(&firmware_query, json!({ "digest": "AP8AAQ==" }))
        .await;
    let f = &odd["data"]["firmware"];
    assert_eq!(f["sizeBytes"], "9223372036854775807", "{odd}");
    assert_eq!(f["releasedAt"], "1970-01-01T00:00:00.000Z");
    assert_eq!(f["signatures"], json!(["AA=="]));
    assert_eq!(f["release"], "0.0.1-ünstable");
}

// ------------------------------------------------------------------ 4. lookups, nodes, relations

#[tokio::test]
async fn lookups_nodes_and_relations_resolve() {
    let (app, tables, data) = fleet().await;

    // Lookups by every key type, given in several spellings.
    let response = app
        .graphql(
            "{ a: vehicle(vehicleNo: 7) { vehicleNo } b: vehicle(vehicleNo: \"9223372036854775807\") { vehicleNo }
               c: vehicle(vehicleNo: \"123\") { vehicleNo }
               d: trip(vehicleNo: \"9223372036854775807\", startedAt: \"2024-03-01T00:59:59.999+01:00\") { startedAt }
               e: trip(vehicleNo: 7, startedAt: \"2024-02-29T23:59:59.999Z\") { startedAt }
               f: firmware(digest: \"AP8AAQ==\") { release }
               g: firmware(digest: \"AP8AAg==\") { release } }",
            json!({}),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    let d = &response["data"];
    assert_eq!(d["a"]["vehicleNo"], "7");
    assert_eq!(d["b"]["vehicleNo"], "9223372036854775807");
    assert_eq!(d["c"], Value::Null);
    assert_eq!(d["d"]["startedAt"], data::SPECIAL_TRIP_START);
    assert_eq!(d["e"], Value::Null);
    assert_eq!(d["f"]["release"], "0.0.1-ünstable");
    assert_eq!(d["g"], Value::Null);
    for i in 0..6 {
        let digest = STANDARD.encode(data::firmware_digest(i));
        let response = app
            .graphql(
                "query($d: Bytes!) { firmware(digest: $d) { digest } }",
                json!({ "d": digest }),
            )
            .await;
        assert_eq!(response["data"]["firmware"]["digest"], digest, "{response}");
    }
    // Not base64, and an empty binary key: refused.
    for digest in ["not base64!", ""] {
        let response = app
            .graphql(
                "query($d: Bytes!) { firmware(digest: $d) { digest } }",
                json!({ "d": digest }),
            )
            .await;
        assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
    }

    // node(id:) and nodes(ids:) refetch each entity as its lookup or connection read it.
    let query = format!(
        "{{ v: vehicle(vehicleNo: \"9223372036854775807\") {{ id {v}
              serviceLog(first: 0) {{ edges {{ node {{ id }} }} }} }}
           t: trip(vehicleNo: \"9223372036854775807\", startedAt: \"{at}\") {{ id {t} }}
           f: firmware(digest: \"AP8AAQ==\") {{ id {f} }}
           j: vehicle(vehicleNo: 101) {{ serviceLog(first: 1) {{ edges {{ node {{ id {j} }} }} }} }} }}",
        v = Kind::Vehicle.fields(),
        t = Kind::Trip.fields(),
        f = Kind::Firmware.fields(),
        j = Kind::Job.fields(),
        at = data::SPECIAL_TRIP_START,
    );
    let response = app.graphql(&query, json!({})).await;
    assert!(response.get("errors").is_none(), "{response}");
    let d = &response["data"];
    let mut originals = vec![
        (Kind::Vehicle, d["v"].clone()),
        (Kind::Trip, d["t"].clone()),
        (Kind::Firmware, d["f"].clone()),
        (Kind::Job, d["j"]["serviceLog"]["edges"][0]["node"].clone()),
    ];
    for (_, node) in &mut originals {
        node.as_object_mut().unwrap().remove("serviceLog");
    }
    let fragments = format!(
        "... on Vehicle {{ id {} }} ... on Trip {{ id {} }} ... on Firmware {{ id {} }} ... on ServiceJob {{ id {} }}",
        Kind::Vehicle.fields(),
        Kind::Trip.fields(),
        Kind::Firmware.fields(),
        Kind::Job.fields()
    );
    let ids: Vec<Value> = originals.iter().map(|(_, n)| n["id"].clone()).collect();
    let distinct: BTreeSet<String> = ids.iter().map(Value::to_string).collect();
    assert_eq!(distinct.len(), 4, "{ids:?}");
    for (kind, original) in &originals {
        let response = app
            .graphql(
                &format!("query($id: ID!) {{ node(id: $id) {{ __typename {fragments} }} }}"),
                json!({ "id": original["id"] }),
            )
            .await;
        let mut node = response["data"]["node"].clone();
        let typename = node.as_object_mut().unwrap().remove("__typename").unwrap();
        assert_eq!(typename, format!("{kind:?}").replace("Job", "ServiceJob"));
        assert_eq!(
            kind.normalize(node),
            kind.normalize(original.clone()),
            "{response}"
        );
    }
    let response = app
        .graphql(
            &format!("query($ids: [ID!]!) {{ nodes(ids: $ids) {{ {fragments} }} }}"),
            json!({ "ids": ids }),
        )
        .await;
    let nodes = response["data"]["nodes"].as_array().unwrap();
    for ((kind, original), node) in originals.iter().zip(nodes) {
        assert_eq!(
            kind.normalize(node.clone()),
            kind.normalize(original.clone()),
            "{response}"
        );
    }

    // Vehicle.firmware: a known image, an image not on file, none.
    let response = app
        .graphql(
            "{ vehicles(first: 100) { edges { node { vehicleNo firmwareDigest firmware { digest } } } } }",
            json!({}),
        )
        .await;
    let known: BTreeSet<String> = data
        .firmware
        .iter()
        .map(|f| bytes(f, "digest").as_str().unwrap().to_owned())
        .collect();
    let edges = response["data"]["vehicles"]["edges"].as_array().unwrap();
    assert_eq!(edges.len(), data.vehicles.len(), "{response}");
    let mut seen = [0; 3];
    for edge in edges {
        let node = &edge["node"];
        match node["firmwareDigest"].as_str() {
            Some(digest) if known.contains(digest) => {
                seen[0] += 1;
                assert_eq!(node["firmware"]["digest"], digest, "{node}");
            }
            Some(_) => {
                seen[1] += 1;
                assert_eq!(node["firmware"], Value::Null, "{node}");
            }
            None => {
                seen[2] += 1;
                assert_eq!(node["firmware"], Value::Null, "{node}");
            }
        }
    }
    assert!(seen.iter().all(|&c| c > 0), "each case occurs: {seen:?}");

    // Trip.vehicle over a page of trips of many vehicles (one batch).
    let response = app
        .graphql(
            "query($r: String!) { routeTrips(route: $r, first: 100) { edges { node { vehicleNo vehicle { vehicleNo name } } } } }",
            json!({ "r": data::ROUTES[0] }),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    let vehicles = app.scan_all(&tables.vehicles).await;
    let edges = response["data"]["routeTrips"]["edges"].as_array().unwrap();
    assert!(edges.len() > 10, "{response}");
    for edge in edges {
        let node = &edge["node"];
        let no: i64 = node["vehicleNo"].as_str().unwrap().parse().unwrap();
        let item = vehicles
            .iter()
            .find(|v| attr_i(v, "vehicleNo") == Some(no))
            .unwrap();
        assert_eq!(node["vehicle"]["vehicleNo"], node["vehicleNo"], "{node}");
        assert_eq!(node["vehicle"]["name"], string(item, "name"), "{node}");
    }

    // ServiceJob.vehicle: null for jobs of a vehicle that left the fleet.
    let jobs = app
        .scan_all(&tables.service_log)
        .await
        .into_iter()
        .filter(|j| attr_i(j, "vehicleNo") == Some(data::GONE_VEHICLE))
        .count();
    assert!(jobs > 0);
    let response = app
        .graphql(
            "{ vehicle(vehicleNo: 101) { serviceLog(first: 3) { nodes { vehicleNo vehicle { vehicleNo } } } } }",
            json!({}),
        )
        .await;
    for node in response["data"]["vehicle"]["serviceLog"]["nodes"]
        .as_array()
        .unwrap()
    {
        assert_eq!(node["vehicle"]["vehicleNo"], "101", "{response}");
    }
}

// ------------------------------------------------------------------ 5. mutations

const CREATE: &str = "mutation($input: CreateVehicleInput!) {
  createVehicle(input: $input) { vehicle { id vehicleNo name status depot seats electric tags specs
    odometerM retiredAt firmwareDigest commissionedAt revision firmware { release } } } }";

const UPDATE: &str = "mutation($input: UpdateVehicleInput!) {
  updateVehicle(input: $input) { vehicle { id vehicleNo name status depot seats electric tags specs
    odometerM retiredAt firmwareDigest commissionedAt revision } } }";

const DELETE: &str = "mutation($input: DeleteVehicleInput!) {
  deleteVehicle(input: $input) { deletedVehicleId } }";

async fn raw_vehicle(app: &ModelApp, tables: &FleetTables, no: &str) -> Option<Item> {
    app.client()
        .get_item()
        .table_name(&tables.vehicles)
        .key("vehicleNo", AttributeValue::N(no.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
}

#[tokio::test]
async fn vehicle_mutations_create_update_and_delete() {
    let (app, tables, _) = fleet().await;
    let no = "8000000000000000001";
    let digest = STANDARD.encode(data::firmware_digest(2));
    let input = json!({
        "vehicleNo": no,
        "name": "Łódź Express ✨",
        "depot": "Zürich Nord",
        "seats": 40,
        "tags": ["wifi", "ramp"],
        "specs": { "make": "Hess", "axles": 3, "nested": { "a": [1, "x", true, null] } },
        "retiredAt": "2040-01-01T12:00:00+02:00",
        "firmwareDigest": digest,
    });
    let before = Utc::now().timestamp_millis();
    let response = app.graphql(CREATE, json!({ "input": input })).await;
    assert!(response.get("errors").is_none(), "{response}");
    let created = Kind::Vehicle.normalize(response["data"]["createVehicle"]["vehicle"].clone());
    assert_eq!(created["vehicleNo"], no);
    assert_eq!(created["status"], "IN_SERVICE", "the default");
    assert_eq!(created["electric"], false, "the default");
    assert_eq!(created["odometerM"], "0", "the default");
    assert_eq!(created["revision"], 1);
    assert_eq!(created["tags"], json!(["ramp", "wifi"]));
    assert_eq!(created["retiredAt"], "2040-01-01T10:00:00.000Z");
    assert_eq!(created["firmware"]["release"], "4.2.0");
    let commissioned = DateTime::parse_from_rfc3339(created["commissionedAt"].as_str().unwrap())
        .unwrap()
        .timestamp_millis();
    assert!(commissioned >= before && commissioned <= Utc::now().timestamp_millis());

    // Stored as the model says: a string set, a map, an ISO string, a binary, numbers.
    let raw = raw_vehicle(&app, &tables, no).await.unwrap();
    let mut tags = raw["tags"].as_ss().unwrap().clone();
    tags.sort();
    assert_eq!(tags, ["ramp", "wifi"]);
    assert!(raw["specs"].as_m().is_ok(), "{raw:?}");
    assert_eq!(raw["retiredAt"], s("2040-01-01T10:00:00.000Z"));
    assert_eq!(
        raw["firmwareDigest"].as_b().unwrap().as_ref(),
        data::firmware_digest(2).as_slice()
    );
    assert_eq!(raw["revision"], n(1));
    assert_eq!(raw["electric"], AttributeValue::Bool(false));
    let mut expected = created.clone();
    expected.as_object_mut().unwrap().remove("id");
    expected.as_object_mut().unwrap().remove("firmware");
    assert_eq!(Kind::Vehicle.expected(&raw), expected);
    // It is in its depot's index.
    let response = app
        .graphql(
            "{ depotVehicles(depot: \"Zürich Nord\", minSeats: 40, maxSeats: 40, first: 100) { nodes { vehicleNo } } }",
            json!({}),
        )
        .await;
    assert!(
        response["data"]["depotVehicles"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["vehicleNo"] == no),
        "{response}"
    );

    // A taken fleet number is refused, and the stored vehicle is untouched.
    for taken in [no, "101"] {
        let mut again = input.clone();
        again["vehicleNo"] = json!(taken);
        again["name"] = json!("Impostor");
        let response = app.graphql(CREATE, json!({ "input": again })).await;
        assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
    }
    assert_eq!(raw_vehicle(&app, &tables, no).await.unwrap(), raw);
    // Input checks: seats at least 1.
    let mut bad = input.clone();
    bad["vehicleNo"] = json!("8000000000000000002");
    bad["seats"] = json!(0);
    let response = app.graphql(CREATE, json!({ "input": bad })).await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
    assert!(
        raw_vehicle(&app, &tables, "8000000000000000002")
            .await
            .is_none()
    );

    // A partial update changes only what it names, and bumps the revision.
    let id = created["id"].clone();
    let response = app
        .graphql(
            UPDATE,
            json!({ "input": { "id": id, "revision": 1, "name": "Renamed ☂", "status": "IN_WORKSHOP" } }),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    let updated = Kind::Vehicle.normalize(response["data"]["updateVehicle"]["vehicle"].clone());
    let mut want = created.clone();
    want.as_object_mut().unwrap().remove("firmware");
    want["name"] = json!("Renamed ☂");
    want["status"] = json!("IN_WORKSHOP");
    want["revision"] = json!(2);
    assert_eq!(updated, want);

    // A stale revision is refused and changes nothing.
    let response = app
        .graphql(
            UPDATE,
            json!({ "input": { "id": id, "revision": 1, "seats": 8 } }),
        )
        .await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
    assert_eq!(
        response["errors"][0]["message"],
        "The vehicle has changed since that version: read it again and retry.",
        "{response}"
    );
    let raw = raw_vehicle(&app, &tables, no).await.unwrap();
    assert_eq!(raw["seats"], n(40));
    assert_eq!(raw["revision"], n(2));

    // Null removes optional fields (an empty set too); a required one cannot be removed.
    let response = app
        .graphql(
            UPDATE,
            json!({ "input": { "id": id, "revision": 2, "retiredAt": null, "specs": null,
                               "firmwareDigest": null, "depot": null, "tags": [] } }),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    let cleared = &response["data"]["updateVehicle"]["vehicle"];
    for field in ["retiredAt", "specs", "firmwareDigest", "depot", "tags"] {
        assert_eq!(cleared[field], Value::Null, "{field}: {response}");
    }
    assert_eq!(cleared["revision"], 3);
    let raw = raw_vehicle(&app, &tables, no).await.unwrap();
    for attribute in ["retiredAt", "specs", "firmwareDigest", "depot", "tags"] {
        assert!(
            !raw.contains_key(attribute),
            "{attribute} is still stored: {raw:?}"
        );
    }
    let response = app
        .graphql(
            UPDATE,
            json!({ "input": { "id": id, "revision": 3, "name": null } }),
        )
        .await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
    assert_eq!(raw_vehicle(&app, &tables, no).await.unwrap(), raw);

    // Delete: then node(id:) and the lookup are null, and a second delete is refused.
    let response = app.graphql(DELETE, json!({ "input": { "id": id } })).await;
    assert_eq!(
        response["data"]["deleteVehicle"]["deletedVehicleId"], id,
        "{response}"
    );
    let response = app
        .graphql(
            "query($id: ID!, $no: BigInt!) { node(id: $id) { id } vehicle(vehicleNo: $no) { id } }",
            json!({ "id": id, "no": no }),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    assert_eq!(response["data"]["node"], Value::Null);
    assert_eq!(response["data"]["vehicle"], Value::Null);
    assert!(raw_vehicle(&app, &tables, no).await.is_none());
    let response = app.graphql(DELETE, json!({ "input": { "id": id } })).await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
    let response = app
        .graphql(
            UPDATE,
            json!({ "input": { "id": id, "revision": 3, "name": "Ghost" } }),
        )
        .await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
    assert!(raw_vehicle(&app, &tables, no).await.is_none());

    // Deleting a vehicle leaves its trips, whose `vehicle` is then null.
    let id = app
        .graphql("{ vehicle(vehicleNo: 7) { id } }", json!({}))
        .await["data"]["vehicle"]["id"]
        .clone();
    let response = app.graphql(DELETE, json!({ "input": { "id": id } })).await;
    assert!(response.get("errors").is_none(), "{response}");
    let trips = ground_truth(&app, &tables.trips, None, ("vehicleNo", n(7)), None, true).await;
    let at = attr_s(&trips[0], "startedAt").unwrap();
    let response = app
        .graphql(
            "query($at: DateTime!) { trip(vehicleNo: 7, startedAt: $at) { startedAt vehicle { name } } }",
            json!({ "at": at }),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    assert_eq!(
        response["data"]["trip"]["vehicle"],
        Value::Null,
        "{response}"
    );
}

// ------------------------------------------------------------------ engine bugs found here

/// DynamoDB allows an empty binary (or string) in an attribute that is not a key, so another
/// program may store `firmwareDigest` empty. No image can have that key: the relation is null.
/// The engine instead sends the empty key in its BatchGetItem, which DynamoDB refuses, and the
/// request fails; in a page, one such item fails the whole connection.
#[tokio::test]
async fn a_relation_key_holding_an_empty_binary_resolves_to_null() {
    let (app, tables, data) = fleet().await;
    let mut item = data.vehicles[3].clone();
    item.insert("vehicleNo".into(), n(990));
    item.insert(
        "firmwareDigest".into(),
        AttributeValue::B(aws_sdk_dynamodb::primitives::Blob::new(Vec::new())),
    );
    app.store
        .put_items(&tables.vehicles, vec![item])
        .await
        .unwrap();
    let response = app
        .graphql(
            "{ vehicle(vehicleNo: 990) { firmwareDigest firmware { release } } }",
            json!({}),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    assert_eq!(
        response["data"]["vehicle"],
        json!({ "firmwareDigest": "", "firmware": null })
    );
    let response = app
        .graphql(
            "{ vehicles(first: 100) { nodes { vehicleNo firmware { release } } } }",
            json!({}),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    let nodes = response["data"]["vehicles"]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), data.vehicles.len() + 1, "{response}");
}

/// The `JSON` scalar promises numbers as JSON numbers unless a double cannot hold them
/// exactly: 100.0, 1e21 and 1e-7 written by a client come back as the same numbers.
#[tokio::test]
async fn json_numbers_a_double_holds_come_back_as_numbers() {
    let (app, _, _) = fleet().await;
    let response = app
        .graphql(
            "mutation { createVehicle(input: { vehicleNo: 991, name: \"x\", seats: 3,
                 specs: { f: 100.0, big: 1e21, small: 1e-7, plain: 0.5 } }) { vehicle { vehicleNo } } }",
            json!({}),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    let response = app
        .graphql("{ vehicle(vehicleNo: 991) { specs } }", json!({}))
        .await;
    let specs = &response["data"]["vehicle"]["specs"];
    assert_eq!(specs["plain"], json!(0.5), "{response}");
    for (key, value) in [("f", 100.0), ("big", 1e21), ("small", 1e-7)] {
        assert_eq!(specs[key].as_f64(), Some(value), "specs.{key}: {response}");
    }
}
