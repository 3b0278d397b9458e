//! Every fleet connection walked forward to the end and backward to the start for each argument
//! combination that matters, with random page sizes from fixed seeds, against DynamoDB's own
//! answer: the trips of a vehicle (the table and its local index), its service log, the global
//! indexes with repeated keys (depot vehicles, route trips), and the scans.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, SecondsFormat};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};

use super::{Kind, attr_i, attr_s, fleet, n, s};
use crate::{
    fleet_data as data,
    helpers::{ModelApp, SortCond, error_code, ground_truth, merge, walk_pages},
};

fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    rng.next_u64() % n
}

/// An RFC 3339 time with any offset, as the model stores ISO 8601 keys.
fn stored_time(text: &str) -> String {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .to_utc()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

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
