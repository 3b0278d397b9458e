//! The fleet example's deterministic data set (`examples/fleet/dynarelay.toml`), as DynamoDB
//! items: [`generate`] is pure, [`write`] stores the result.
//!
//! Small on purpose (under 200 items), so that a suite can walk every connection both ways
//! with several page sizes in seconds, yet it holds every shape the model must serve right:
//!
//! - vehicle numbers from 0 up to `i64::MAX`, and numbers beyond what a double holds exactly;
//! - unicode in names, depots, routes, job codes and map keys;
//! - items that lack their optional attributes (no depot, no tags, no map, no driver, no
//!   route, no distance, no stops), which also makes the indexes sparse;
//! - repeated index keys: many vehicles of a depot share a seat count (`ByDepot`), many trips
//!   of a route share a service day (`ByRoute`), many trips of a vehicle share a distance
//!   (`ByDistance`);
//! - string, number and binary sets, nested maps with lists, booleans, nulls and binaries;
//! - decimals of 38 significant digits, negative ones, and ISO 8601 strings with offsets.
//!
//! A few hand-written items (the `SPECIAL_*` constants) have values the tests spell out.

#![allow(dead_code)]

use std::collections::HashMap;

use aws_sdk_dynamodb::{primitives::Blob, types::AttributeValue};
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};

use dynarelay::dynamo::{Item, Store, StoreError};

/// The seed of the data set the tests use.
pub const SEED: u64 = 2024;

/// The depots vehicles are based at (the `ByDepot` partitions).
pub const DEPOTS: [&str; 3] = ["Kraków-Płaszów", "Zürich Nord", "大阪港"];

/// The timetable routes (the `ByRoute` partitions).
pub const ROUTES: [&str; 3] = [
    "12 Zürich HB – Oerlikon",
    "N7 Nachtbus ☾",
    "Kraków – Wieliczka",
];

/// Drivers' staff ids.
pub const DRIVERS: [&str; 4] = ["drv-001", "drv-002", "drv-ß03", "drv-004"];

/// Mechanics' staff ids.
pub const MECHANICS: [&str; 3] = ["m-anna", "m-jörg", "m-kenji"];

/// Kinds of workshop job: job codes are `{kind}/{number:04}`. Mixed case and non-ASCII, so
/// byte order differs from alphabetical order.
pub const JOB_KINDS: [&str; 6] = [
    "brakes",
    "doors",
    "tyres",
    "électrique",
    "HVAC",
    "Ölwechsel",
];

/// Vehicle tags (a string set).
pub const TAGS: [&str; 6] = ["wheelchair", "wifi", "bike-rack", "ac", "usb", "café ☕"];

/// Stop ids (a number set): all fit a 32-bit `Int`.
pub const STOPS: [i64; 6] = [7, 101, 102, 205, 4096, 2_000_000_001];

/// Seat counts: repeated, so `ByDepot` sort keys tie.
pub const SEATS: [i64; 5] = [8, 40, 40, 40, 60];

/// Trip distances in metres: repeated, so `ByDistance` sort keys tie.
pub const DISTANCES: [i64; 5] = [5_200, 12_800, 12_800, 30_100, 44_000];

/// The fleet numbers, and how many trips each vehicle drove.
pub const VEHICLES: [(i64, usize); 14] = [
    (0, 0),
    (7, 1),
    (42, 2),
    (101, 31),
    (102, 9),
    (103, 23),
    (2_048, 3),
    (65_535, 12),
    (4_294_967_296, 0),
    (9_007_199_254_740_993, 17),
    (SPECIAL_VEHICLE, 5),
    (1_000_000_000_000, 1),
    (77, 4),
    (31_337, 6),
];

/// Vehicles without trips beyond [`VEHICLES`], numbered from 5000 in steps of 37.
pub const EXTRA_VEHICLES: usize = 26;

/// A vehicle with every optional attribute, and values the tests spell out.
pub const SPECIAL_VEHICLE: i64 = i64::MAX;
/// Its nickname.
pub const SPECIAL_VEHICLE_NAME: &str = "Ñandú 🚌 «Nachteule»";
/// Its retirement date as stored: with an offset, read back in UTC.
pub const SPECIAL_RETIRED_AT: &str = "2031-12-31T23:59:59.5+01:00";
/// Its odometer: more digits than a double holds exactly.
pub const SPECIAL_ODOMETER: &str = "9007199254740993";
/// A number in its specs map that only a string can carry exactly.
pub const SPECIAL_SERIAL: &str = "123456789012345678901234567890";

/// A vehicle that has no optional attribute at all.
pub const BARE_VEHICLE: i64 = 0;

/// The first trip of the special vehicle: every optional attribute, 38-digit fare.
pub const SPECIAL_TRIP_START: &str = "2024-02-29T23:59:59.999Z";
/// Its fare.
pub const SPECIAL_FARE: &str = "12345678901234567890.123456789012345678";

/// A vehicle whose first trip has none of the optional attributes.
pub const BARE_TRIP_VEHICLE: i64 = 42;

/// A vehicle number whose workshop jobs remain though the vehicle left the fleet.
pub const GONE_VEHICLE: i64 = 555;

/// A firmware image keyed by a short digest with zero bytes in it.
pub const ODD_DIGEST: [u8; 4] = [0x00, 0xff, 0x00, 0x01];

/// The full names of the fleet's tables under a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetTables {
    /// `{prefix}Vehicles`.
    pub vehicles: String,
    /// `{prefix}Trips`.
    pub trips: String,
    /// `{prefix}ServiceLog`.
    pub service_log: String,
    /// `{prefix}Firmware`.
    pub firmware: String,
}

impl FleetTables {
    /// The names under `prefix`.
    pub fn with_prefix(prefix: &str) -> Self {
        Self {
            vehicles: format!("{prefix}Vehicles"),
            trips: format!("{prefix}Trips"),
            service_log: format!("{prefix}ServiceLog"),
            firmware: format!("{prefix}Firmware"),
        }
    }
}

/// A generated data set: the items of each table.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// `Vehicles` items.
    pub vehicles: Vec<Item>,
    /// `Trips` items.
    pub trips: Vec<Item>,
    /// `ServiceLog` items.
    pub jobs: Vec<Item>,
    /// `Firmware` items.
    pub firmware: Vec<Item>,
}

/// The SHA-256 digest of firmware image `i`.
pub fn firmware_digest(i: usize) -> Vec<u8> {
    Sha256::digest(format!("fleet firmware image {i}").as_bytes()).to_vec()
}

/// A digest no firmware image has.
pub fn unknown_digest() -> Vec<u8> {
    Sha256::digest(b"withdrawn firmware").to_vec()
}

/// Generates the data set for `seed`. The same seed always gives the same data.
pub fn generate(seed: u64) -> Dataset {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let firmware = firmware_images(&mut rng);
    let mut vehicles = Vec::new();
    let mut trips = Vec::new();
    for (i, &(number, trip_count)) in VEHICLES.iter().enumerate() {
        vehicles.push(vehicle(&mut rng, i, number));
        trips.extend(vehicle_trips(&mut rng, number, trip_count));
    }
    // Vehicles without trips, so that each depot holds enough vehicles to page through.
    for k in 0..EXTRA_VEHICLES {
        let i = VEHICLES.len() + k;
        vehicles.push(vehicle(&mut rng, i, 5_000 + 37 * k as i64));
    }
    let mut jobs = Vec::new();
    for (number, count) in [(101, 25), (102, 13), (7, 1), (GONE_VEHICLE, 4)] {
        jobs.extend(service_jobs(&mut rng, number, count));
    }
    Dataset {
        vehicles,
        trips,
        jobs,
        firmware,
    }
}

fn vehicle(rng: &mut ChaCha8Rng, i: usize, number: i64) -> Item {
    const NAMES: [&str; 8] = [
        "Blue Łoś",
        "Zébulon",
        "Ölkanne",
        "山田号",
        "Old Faithful",
        "Ćma",
        "Grüne Gurke",
        "Night Owl 🦉",
    ];
    let mut item = Item::new();
    item.insert("vehicleNo".into(), n(number));
    if number == BARE_VEHICLE {
        // The required attributes only.
        item.insert("name".into(), s("Spare"));
        item.insert("status".into(), s("RESERVE"));
        item.insert("seats".into(), n(8));
        item.insert("electric".into(), AttributeValue::Bool(false));
        item.insert("odometerM".into(), n(0));
        item.insert("commissionedAt".into(), n(1_600_000_000_000));
        item.insert("revision".into(), n(1));
        return item;
    }
    let name = if number == SPECIAL_VEHICLE {
        SPECIAL_VEHICLE_NAME.to_owned()
    } else {
        format!("{} {}", NAMES[i % NAMES.len()], i)
    };
    item.insert("name".into(), s(&name));
    let status = ["IN_SERVICE", "IN_SERVICE", "IN_WORKSHOP", "RESERVE"][below(rng, 4) as usize];
    item.insert("status".into(), s(status));
    // Depots: of the vehicles with trips 6, 4 and 2, and two in transfer without a depot; of
    // the others, about 12, 8 and 4, and 2 in transfer.
    let depot = match i {
        0..=5 => Some(DEPOTS[0]),
        6..=9 => Some(DEPOTS[1]),
        10 | 11 => Some(DEPOTS[2]),
        12 | 13 => None,
        _ => match below(rng, 13) {
            0..=5 => Some(DEPOTS[0]),
            6..=9 => Some(DEPOTS[1]),
            10 | 11 => Some(DEPOTS[2]),
            _ => None,
        },
    };
    if let Some(depot) = depot {
        item.insert("depot".into(), s(depot));
    }
    item.insert("seats".into(), n(pick(rng, &SEATS)));
    item.insert("electric".into(), AttributeValue::Bool(below(rng, 2) == 0));
    let tags: Vec<String> = TAGS
        .iter()
        .filter(|_| below(rng, 3) == 0)
        .map(|t| (*t).to_owned())
        .collect();
    if number == SPECIAL_VEHICLE {
        item.insert(
            "tags".into(),
            AttributeValue::Ss(vec!["wifi".into(), "café ☕".into()]),
        );
    } else if !tags.is_empty() {
        item.insert("tags".into(), AttributeValue::Ss(tags));
    }
    if number == SPECIAL_VEHICLE || below(rng, 3) > 0 {
        item.insert("specs".into(), specs(rng, number == SPECIAL_VEHICLE));
    }
    let odometer = if number == SPECIAL_VEHICLE {
        SPECIAL_ODOMETER.to_owned()
    } else {
        (below(rng, 2_000_000_000) * 1_000 + below(rng, 1_000)).to_string()
    };
    item.insert("odometerM".into(), AttributeValue::N(odometer));
    if number == SPECIAL_VEHICLE {
        item.insert("retiredAt".into(), s(SPECIAL_RETIRED_AT));
    } else if below(rng, 3) == 0 {
        let at = millis(1_900_000_000_000 + below(rng, 100_000_000_000) as i64);
        item.insert("retiredAt".into(), s(&iso(at)));
    }
    // Firmware: a known image, an image not on file, or none.
    match (number == SPECIAL_VEHICLE, below(rng, 5)) {
        (true, _) => {
            item.insert("firmwareDigest".into(), b(ODD_DIGEST.to_vec()));
        }
        (false, 0) => {}
        (false, 1) => {
            item.insert("firmwareDigest".into(), b(unknown_digest()));
        }
        (false, k) => {
            item.insert("firmwareDigest".into(), b(firmware_digest(k as usize)));
        }
    }
    let commissioned = 1_500_000_000_000 + below(rng, 200_000_000_000) as i64;
    item.insert("commissionedAt".into(), n(commissioned));
    item.insert("revision".into(), n(1 + below(rng, 5) as i64));
    item
}

/// A manufacturer's data sheet: nested maps and lists, numbers exact and not, a null, a
/// boolean, a binary.
fn specs(rng: &mut ChaCha8Rng, special: bool) -> AttributeValue {
    let mut map = HashMap::from([
        (
            "make".to_owned(),
            s(["Solaris", "MAN", "Hess", "いすゞ"][below(rng, 4) as usize]),
        ),
        ("axles".to_owned(), n(2 + below(rng, 2) as i64)),
        (
            "lowFloor".to_owned(),
            AttributeValue::Bool(below(rng, 2) == 0),
        ),
        (
            "doors".to_owned(),
            AttributeValue::L(vec![n(1), n(2), AttributeValue::N("2.5".into())]),
        ),
        (
            "battery".to_owned(),
            AttributeValue::M(HashMap::from([
                ("kWh".to_owned(), AttributeValue::N("350.5".into())),
                ("année".to_owned(), n(2019 + below(rng, 5) as i64)),
            ])),
        ),
    ]);
    if special {
        map.insert("serial".into(), AttributeValue::N(SPECIAL_SERIAL.into()));
        map.insert("recall".into(), AttributeValue::Null(true));
        map.insert("key".into(), b(vec![0xde, 0xad, 0xbe, 0xef]));
        map.insert("options".into(), AttributeValue::Ss(vec!["heater".into()]));
        map.insert(
            "tiny".into(),
            AttributeValue::N("0.000000000000000000000000000001".into()),
        );
    }
    AttributeValue::M(map)
}

fn vehicle_trips(rng: &mut ChaCha8Rng, number: i64, count: usize) -> Vec<Item> {
    // From the leap day on, so that service days cross a month end.
    let mut at = DateTime::parse_from_rfc3339("2024-02-27T05:00:00Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default();
    let mut trips = Vec::new();
    for t in 0..count {
        if number == SPECIAL_VEHICLE && t == 0 {
            trips.push(special_trip(number));
            at = DateTime::parse_from_rfc3339(SPECIAL_TRIP_START)
                .map(|t| t.with_timezone(&Utc))
                .unwrap_or_default();
            continue;
        }
        at += Duration::minutes(20 + below(rng, 600) as i64)
            + Duration::milliseconds(below(rng, 1_000) as i64);
        if number == BARE_TRIP_VEHICLE && t == 0 {
            // The required attributes only.
            trips.push(Item::from([
                ("vehicleNo".to_owned(), n(number)),
                ("startedAt".to_owned(), s(&iso(at))),
                ("status".to_owned(), s("CANCELLED")),
                ("count".to_owned(), n(0)),
                ("fare".to_owned(), n(0)),
            ]));
            continue;
        }
        let last = t + 1 == count;
        let status = match below(rng, 10) {
            _ if last && below(rng, 2) == 0 => "RUNNING",
            0 => "CANCELLED",
            1 if last => "SCHEDULED",
            _ => "COMPLETED",
        };
        let mut item = Item::new();
        item.insert("vehicleNo".into(), n(number));
        item.insert("startedAt".into(), s(&iso(at)));
        item.insert("status".into(), s(status));
        if status == "COMPLETED" {
            let ended = at + Duration::minutes(5 + below(rng, 90) as i64);
            item.insert("endedAt".into(), s(&iso(ended)));
            item.insert("distanceM".into(), n(pick(rng, &DISTANCES)));
        }
        // Half on the first route, a third on the second, a few on the third, the rest depot
        // runs; the service day is the start's UTC date.
        let route = match below(rng, 20) {
            0..=9 => Some(ROUTES[0]),
            10..=15 => Some(ROUTES[1]),
            16 => Some(ROUTES[2]),
            _ => None,
        };
        if let Some(route) = route {
            item.insert("route".into(), s(route));
            item.insert("date".into(), s(&at.format("%Y-%m-%d").to_string()));
        }
        item.insert("count".into(), n(below(rng, 80) as i64));
        let fare = if below(rng, 8) == 0 {
            format!("-{}.5", below(rng, 10))
        } else {
            decimal(below(rng, 1_000_000), below(rng, 100))
        };
        item.insert("fare".into(), AttributeValue::N(fare));
        if below(rng, 4) > 0 {
            item.insert("driverId".into(), s(pick(rng, &DRIVERS)));
        }
        let stops: Vec<String> = STOPS
            .iter()
            .filter(|_| below(rng, 4) == 0)
            .map(i64::to_string)
            .collect();
        if !stops.is_empty() {
            item.insert("stops".into(), AttributeValue::Ns(stops));
        }
        if below(rng, 3) == 0 {
            item.insert("data".into(), telemetry(rng));
        }
        trips.push(item);
    }
    trips
}

fn special_trip(number: i64) -> Item {
    Item::from([
        ("vehicleNo".to_owned(), n(number)),
        ("startedAt".to_owned(), s(SPECIAL_TRIP_START)),
        ("endedAt".to_owned(), s("2024-03-01T01:02:03.004Z")),
        ("status".to_owned(), s("COMPLETED")),
        ("route".to_owned(), s(ROUTES[1])),
        ("date".to_owned(), s("2024-02-29")),
        ("distanceM".to_owned(), n(DISTANCES[1])),
        ("count".to_owned(), n(0)),
        ("fare".to_owned(), AttributeValue::N(SPECIAL_FARE.into())),
        ("driverId".to_owned(), s("drv-ß03")),
        (
            "stops".to_owned(),
            AttributeValue::Ns(vec!["2000000001".into(), "7".into()]),
        ),
        (
            "data".to_owned(),
            AttributeValue::M(HashMap::from([
                ("speedMax".to_owned(), AttributeValue::N("87.5".into())),
                (
                    "odometer".to_owned(),
                    AttributeValue::N(SPECIAL_SERIAL.into()),
                ),
                (
                    "frames".to_owned(),
                    AttributeValue::Bs(vec![Blob::new(vec![0u8, 1, 2])]),
                ),
                ("stops".to_owned(), AttributeValue::Ns(vec!["7".into()])),
                ("nothing".to_owned(), AttributeValue::Null(true)),
                ("empty".to_owned(), AttributeValue::M(HashMap::new())),
                ("list".to_owned(), AttributeValue::L(vec![])),
                ("ok".to_owned(), AttributeValue::Bool(true)),
                ("note".to_owned(), s("Schneefall ❄, Verspätung")),
            ])),
        ),
    ])
}

fn telemetry(rng: &mut ChaCha8Rng) -> AttributeValue {
    let points = (0..1 + below(rng, 3))
        .map(|_| {
            AttributeValue::M(HashMap::from([
                (
                    "lat".to_owned(),
                    AttributeValue::N(format!("47.{:06}", 100_000 + below(rng, 800_000))),
                ),
                (
                    "lon".to_owned(),
                    AttributeValue::N(format!("8.{:06}", 100_000 + below(rng, 800_000))),
                ),
            ]))
        })
        .collect();
    AttributeValue::M(HashMap::from([
        ("speedMax".to_owned(), n(30 + below(rng, 70) as i64)),
        ("gps".to_owned(), AttributeValue::L(points)),
        ("doorsOpened".to_owned(), n(below(rng, 60) as i64)),
    ]))
}

fn service_jobs(rng: &mut ChaCha8Rng, number: i64, count: usize) -> Vec<Item> {
    let mut next = [0u32; JOB_KINDS.len()];
    (0..count)
        .map(|_| {
            let k = below(rng, JOB_KINDS.len() as u64) as usize;
            next[k] += 1;
            let mut item = Item::from([
                ("vehicleNo".to_owned(), n(number)),
                (
                    "code".to_owned(),
                    s(&format!("{}/{:04}", JOB_KINDS[k], next[k])),
                ),
                (
                    "doneAt".to_owned(),
                    n(1_700_000_000 + below(rng, 30_000_000) as i64),
                ),
                ("mechanic".to_owned(), s(pick(rng, &MECHANICS))),
                (
                    "cost".to_owned(),
                    AttributeValue::N(decimal(below(rng, 5_000), below(rng, 100))),
                ),
            ]);
            if below(rng, 2) == 0 {
                let comment = ["Bremsbeläge erneuert", "ok", "再点検が必要", "pads → 80 %"]
                    [below(rng, 4) as usize];
                item.insert("comment".into(), s(comment));
            }
            item
        })
        .collect()
}

fn firmware_images(rng: &mut ChaCha8Rng) -> Vec<Item> {
    let mut images: Vec<Item> = (0..6)
        .map(|i| {
            let signatures = (0..1 + below(rng, 3))
                .map(|_| {
                    let mut sig = vec![0u8; 64];
                    rng.fill_bytes(&mut sig);
                    Blob::new(sig)
                })
                .collect();
            Item::from([
                ("digest".to_owned(), b(firmware_digest(i))),
                (
                    "release".to_owned(),
                    s(&format!("4.{i}.0{}", if i % 2 == 1 { "-rc1" } else { "" })),
                ),
                (
                    "releasedAt".to_owned(),
                    n(1_690_000_000_000 + i as i64 * 86_400_000),
                ),
                (
                    "size".to_owned(),
                    n(1_000_000 + below(rng, 9_000_000_000_000) as i64),
                ),
                ("signatures".to_owned(), AttributeValue::Bs(signatures)),
                ("stable".to_owned(), AttributeValue::Bool(i % 2 == 0)),
            ])
        })
        .collect();
    images.push(Item::from([
        ("digest".to_owned(), b(ODD_DIGEST.to_vec())),
        ("release".to_owned(), s("0.0.1-ünstable")),
        ("releasedAt".to_owned(), n(0)),
        ("size".to_owned(), n(i64::MAX)),
        (
            "signatures".to_owned(),
            AttributeValue::Bs(vec![Blob::new(vec![0u8])]),
        ),
        ("stable".to_owned(), AttributeValue::Bool(false)),
    ]));
    images
}

/// Writes `data` to the fleet's tables.
pub async fn write(store: &Store, tables: &FleetTables, data: &Dataset) -> Result<(), StoreError> {
    store
        .put_items(&tables.vehicles, data.vehicles.clone())
        .await?;
    store.put_items(&tables.trips, data.trips.clone()).await?;
    store
        .put_items(&tables.service_log, data.jobs.clone())
        .await?;
    store
        .put_items(&tables.firmware, data.firmware.clone())
        .await
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn n(value: i64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn b(value: Vec<u8>) -> AttributeValue {
    AttributeValue::B(Blob::new(value))
}

/// `whole.cents` in DynamoDB's canonical form (no trailing zeros).
fn decimal(whole: u64, cents: u64) -> String {
    match cents {
        0 => whole.to_string(),
        c if c % 10 == 0 => format!("{whole}.{}", c / 10),
        c => format!("{whole}.{c:02}"),
    }
}

/// A time as the model stores ISO 8601 keys: UTC, milliseconds, `Z`.
pub fn iso(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn millis(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    rng.next_u64() % n
}

fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[T]) -> T {
    items[below(rng, items.len() as u64) as usize]
}
