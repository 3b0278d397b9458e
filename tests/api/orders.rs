//! The orders example (`examples/orders/dynarelay.toml`: the README's quick start and the
//! your-own-tables guide) over an `Orders` table written as a team's own code would write it:
//! both connections walked both ways against DynamoDB's own Queries, the lookup, `node` and
//! `nodes`, and the three mutations read back from the table. Its server's calls are held to the
//! example's policy, as every test server's are.

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::Item;
use serde_json::{Value, json};

use crate::helpers::{ModelApp, merge, model_app, query_partition, walk_matches};

const MODEL: &str = "examples/orders/dynarelay.toml";
const STATUSES: [&str; 5] = ["PLACED", "PAID", "SHIPPED", "DELIVERED", "CANCELLED"];

const OF_CUSTOMER: &str = r#"query($c: ID!, $first: Int, $after: String, $last: Int, $before: String) {
  ordersOfCustomer(customerId: $c, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { customerId orderDate } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

const BY_STATUS: &str = r#"query($s: OrderStatus!, $first: Int, $after: String, $last: Int, $before: String) {
  ordersByStatus(status: $s, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { customerId orderDate } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

/// An order as the team's code stores it: its SKUs in a string set named `items`.
fn order(customer: &str, minute: usize, status: &str) -> Item {
    Item::from([
        ("customerId".to_owned(), AttributeValue::S(customer.into())),
        (
            "orderDate".to_owned(),
            AttributeValue::S(format!(
                "2026-05-01T{:02}:{:02}:00.000Z",
                minute / 60,
                minute % 60
            )),
        ),
        ("status".to_owned(), AttributeValue::S(status.into())),
        ("total".to_owned(), AttributeValue::N(format!("{minute}.5"))),
        (
            "items".to_owned(),
            AttributeValue::Ss(vec![format!("SKU-{minute}")]),
        ),
    ])
}

/// `customerId/orderDate` of a node, or of a stored item.
fn key_of_node(node: &Value) -> String {
    format!(
        "{}/{}",
        node["customerId"].as_str().unwrap(),
        node["orderDate"].as_str().unwrap()
    )
}

fn key_of_item(item: &Item) -> String {
    let text = |name: &str| match &item[name] {
        AttributeValue::S(s) => s.clone(),
        other => panic!("{name}: {other:?}"),
    };
    format!("{}/{}", text("customerId"), text("orderDate"))
}

/// The keys of every item of one partition of the table or of `ByStatus`, in DynamoDB's order.
async fn ground(
    app: &ModelApp,
    index: Option<&str>,
    key: &str,
    value: &str,
    forward: bool,
) -> Vec<String> {
    query_partition(
        app.client(),
        &app.table("Orders"),
        index,
        (key, value),
        forward,
    )
    .await
    .iter()
    .map(key_of_item)
    .collect()
}

async fn ask(app: &ModelApp, query: &str, variables: Value) -> Value {
    let answer = app.graphql(query, variables).await;
    assert!(answer.get("errors").is_none(), "{answer}");
    answer
}

/// The `order` lookup's answer for `customer`'s order placed at `at`: null when there is none.
async fn look_up(app: &ModelApp, customer: &str, at: &str) -> Value {
    let query = "query($c: ID!, $at: DateTime!) { order(customerId: $c, orderDate: $at) { id total skus status } }";
    let answer = ask(app, query, json!({ "c": customer, "at": at })).await;
    answer["data"]["order"].clone()
}

#[tokio::test]
async fn the_orders_example_serves_a_teams_orders_table_exactly() {
    let app = model_app(MODEL).await;
    // Customers with 0, 1, 20, 21 and 100 orders; every customer's n-th order is placed in the
    // same minute, so that `ByStatus` holds ties on its sort key.
    let customers = [
        ("c-none", 0),
        ("c-one", 1),
        ("c#20", 20),
        ("C 21", 21),
        ("c-ü-100", 100),
    ];
    let mut items = Vec::new();
    for (n, (customer, count)) in customers.iter().enumerate() {
        for minute in 0..*count {
            items.push(order(customer, minute, STATUSES[(minute + n) % 5]));
        }
    }
    app.store
        .put_items(&app.table("Orders"), items)
        .await
        .unwrap();

    for (customer, count) in customers {
        // Newest first, the connection's default.
        let want = ground(&app, None, "customerId", customer, false).await;
        assert_eq!(want.len(), count);
        walk_matches(
            |paging| ask(&app, OF_CUSTOMER, merge(json!({ "c": customer }), paging)),
            &["ordersOfCustomer"],
            key_of_node,
            &want,
            &format!("{customer}'s orders"),
        )
        .await;
    }
    for status in STATUSES {
        // Oldest first, ties in DynamoDB's order.
        let want = ground(&app, Some("ByStatus"), "status", status, true).await;
        assert!(want.len() > 20, "{status}: {}", want.len());
        walk_matches(
            |paging| ask(&app, BY_STATUS, merge(json!({ "s": status }), paging)),
            &["ordersByStatus"],
            key_of_node,
            &want,
            &format!("orders {status}"),
        )
        .await;
    }

    // The lookup, then `node` and `nodes` by the ids it gives.
    let first = look_up(&app, "c#20", "2026-05-01T00:03:00.000Z").await;
    assert_eq!(first["total"], "3.5", "{first}");
    assert_eq!(first["skus"], json!(["SKU-3"]), "{first}");
    let other = look_up(&app, "c-one", "2026-05-01T00:00:00.000Z").await;
    let missing = look_up(&app, "c-none", "2026-05-01T00:00:00.000Z").await;
    assert_eq!(missing, Value::Null, "{missing}");
    let refetch = "query($a: ID!, $b: ID!) { node(id: $a) { ... on Order { total } } nodes(ids: [$b, $a]) { ... on Order { total } } }";
    let refetched = ask(&app, refetch, json!({ "a": first["id"], "b": other["id"] })).await;
    assert_eq!(
        refetched["data"],
        json!({ "node": { "total": "3.5" }, "nodes": [{ "total": "0.5" }, { "total": "3.5" }] }),
        "{refetched}"
    );

    // Shipped, then forgotten: each read back from the table.
    let ship = "mutation($id: ID!) { updateOrder(input: { id: $id, status: SHIPPED, note: \"gift\" }) { order { status note } } }";
    let shipped = ask(&app, ship, json!({ "id": first["id"] })).await;
    assert_eq!(
        shipped["data"]["updateOrder"]["order"],
        json!({ "status": "SHIPPED", "note": "gift" }),
        "{shipped}"
    );
    let stored = app.scan_all(&app.table("Orders")).await;
    let stored = stored
        .iter()
        .find(|item| key_of_item(item) == "c#20/2026-05-01T00:03:00.000Z")
        .expect("the shipped order");
    assert_eq!(stored["status"], AttributeValue::S("SHIPPED".into()));
    assert_eq!(stored["note"], AttributeValue::S("gift".into()));
    let forget = "mutation($id: ID!) { deleteOrder(input: { id: $id }) { deletedOrderId } }";
    let forgotten = ask(&app, forget, json!({ "id": first["id"] })).await;
    assert_eq!(
        forgotten["data"]["deleteOrder"]["deletedOrderId"],
        first["id"]
    );
    let left = ground(&app, None, "customerId", "c#20", true).await;
    assert_eq!(left.len(), 19);
    assert!(!left.contains(&"c#20/2026-05-01T00:03:00.000Z".to_owned()));
    let gone = look_up(&app, "c#20", "2026-05-01T00:03:00.000Z").await;
    assert_eq!(gone, Value::Null, "{gone}");
}
