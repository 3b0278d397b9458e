//! Lookups by every key type in several spellings, `node(id:)` and `nodes(ids:)` refetching each
//! entity, and the relations (`Vehicle.firmware`, `Trip.vehicle`, `ServiceJob.vehicle`).

use std::collections::BTreeSet;

use base64::{Engine, engine::general_purpose::STANDARD};
use serde_json::{Value, json};

use super::{Kind, attr_i, bytes, fleet, string};
use crate::{fleet_data as data, helpers::error_code};

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
