//! Every field of every item round-trips exactly through the lookups, checked against values
//! computed from the raw items and against values spelled out: big integers, binaries, sets,
//! maps, times stored as ISO strings or epoch numbers, and missing attributes.

use serde_json::{Value, json};

use super::{Kind, attr_i, attr_s, bytes, fleet};
use crate::fleet_data as data;

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
