//! Bad input: backward ranges, and cursors of other partitions or connections, are
//! `BAD_USER_INPUT`.

use serde_json::json;

use super::{Conn, ecommerce_with, no_lines};
use crate::{
    ecommerce_data as data,
    helpers::{error_code, merge},
};

#[tokio::test]
async fn backward_ranges_and_cursors_of_other_partitions_or_connections_are_bad_user_input() {
    let f = ecommerce_with(no_lines).await;
    let orders = Conn::orders();
    let (later, earlier) = ("2026-11-23T10:15:00.001Z", data::SHARED_MOMENT);
    let response = f
        .app
        .graphql(
            &orders.query,
            json!({ "username": "ana", "first": 5, "placedFrom": later, "placedUntil": earlier }),
        )
        .await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
    let response = f
        .app
        .graphql(
            &Conn::orders_by_status().query,
            json!({ "status": "PLACED", "first": 5, "placedFrom": later, "placedUntil": earlier }),
        )
        .await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");
    // A range and a prefix together.
    let response = f
        .app
        .graphql(
            &orders.query,
            json!({ "username": "ana", "first": 5, "placedFrom": earlier, "placedIn": "2026" }),
        )
        .await;
    assert_eq!(error_code(&response), Some("BAD_USER_INPUT"), "{response}");

    // A cursor of ana's orders: good on ana's orders, refused elsewhere.
    let page = f
        .app
        .graphql(&orders.query, json!({ "username": "ana", "first": 2 }))
        .await;
    let cursor = page["data"]["customer"]["orders"]["pageInfo"]["endCursor"].clone();
    assert!(cursor.is_string(), "{page}");
    let response = f
        .app
        .graphql(
            &orders.query,
            json!({ "username": "ana", "first": 2, "after": cursor }),
        )
        .await;
    assert!(response.get("errors").is_none(), "{response}");
    let elsewhere = [
        (&orders, json!({ "username": "Zoë" }), "Zoë's orders"),
        (&orders, json!({ "username": "ana#" }), "ana#'s orders"),
        (
            &Conn::activity(),
            json!({ "username": "ana" }),
            "ana's activity",
        ),
        (
            &Conn::addresses(),
            json!({ "username": "ana" }),
            "ana's addresses",
        ),
        (
            &Conn::orders_by_status(),
            json!({ "status": "PLACED" }),
            "ordersByStatus",
        ),
    ];
    for (conn, vars, label) in elsewhere {
        for paging in [
            json!({ "first": 2, "after": cursor }),
            json!({ "last": 2, "before": cursor }),
        ] {
            let response = f
                .app
                .graphql(&conn.query, merge(vars.clone(), paging))
                .await;
            assert_eq!(
                error_code(&response),
                Some("BAD_USER_INPUT"),
                "{label}: {response}"
            );
        }
    }
}
