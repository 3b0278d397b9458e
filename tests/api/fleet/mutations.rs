//! `createVehicle`, `updateVehicle` and `deleteVehicle`: defaults, what is stored, taken keys,
//! input checks, partial and versioned updates, removing optional fields, and deletes.

use aws_sdk_dynamodb::types::AttributeValue;
use base64::{Engine, engine::general_purpose::STANDARD};
use chrono::{DateTime, Utc};
use dynarelay::dynamo::Item;
use serde_json::{Value, json};

use super::{Kind, attr_s, fleet, n, s};
use crate::{
    fleet_data::{self as data, FleetTables},
    helpers::{ModelApp, error_code, ground_truth},
};

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
