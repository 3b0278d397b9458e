//! The fleet model loads, `dynarelay check` passes against the tables it creates (indexes as
//! DynamoDB describes them), and the data set is deterministic with the shapes the walks need.

use super::{MODEL, attr_i, attr_s};
use crate::{
    fleet_data as data,
    helpers::{dynarelay_command, endpoint, model_app},
};

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
