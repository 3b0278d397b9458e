//! Engine bugs the fleet model found, each pinned by the test that showed it.

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;

use super::{fleet, n};

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
