//! dynamodb-toolbox (`examples/toolbox`): keys such as `CUSTOMER#<id>` and
//! `<placedAt>#<orderId>` with unescaped `#` inside ids, entities in `_et`, creation and change
//! times in `_ct` and `_md`.

use serde_json::{Value, json};

use super::{pick, refetch_all, scanned, stamps, text, texts};
use crate::helpers::{merge, model_app, read_back, walk_matches, written_by};

const MODEL: &str = "examples/toolbox/dynarelay.toml";

/// The names dynamodb-toolbox gives `_ct` and `_md` in the items it reads.
const CREATED: &str = "created";
const MODIFIED: &str = "modified";

const ORDER_FIELDS: [&str; 5] = ["customerId", "orderId", "placedAt", "total", "status"];

const ORDERS: &str = r#"query($customerId: ID!, $first: Int, $after: String, $last: Int, $before: String) {
  customer(customerId: $customerId) {
    orders(first: $first, after: $after, last: $last, before: $before) {
      edges { cursor node { id customerId orderId placedAt total status createdAt modifiedAt
                            customer { customerId } } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}"#;

const BY_STATUS: &str = r#"query($status: OrderStatus!, $first: Int, $after: String, $last: Int, $before: String,
    $from: DateTime, $until: DateTime) {
  ordersByStatus(status: $status, first: $first, after: $after, last: $last, before: $before,
                 placedFrom: $from, placedUntil: $until) {
    edges { cursor node { customerId orderId placedAt total status } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

/// An order as the API shows it, from what dynamodb-toolbox read (totals are JSON numbers there
/// and `Decimal` strings here).
fn as_served(order: &Value) -> Value {
    let mut order = pick(order, &ORDER_FIELDS);
    order["total"] = json!(order["total"].to_string());
    order
}

/// Every customer's orders and the orders in each status, walked at every page size both ways,
/// are exactly what dynamodb-toolbox's own queries return, field for field, with `_ct` and
/// `_md` as `createdAt` and `modifiedAt`; ranges on the index's leading facet select exactly.
#[tokio::test]
async fn dynamodb_toolbox_data_is_served_as_toolbox_reads_it() {
    let app = model_app(MODEL).await;
    let truth = written_by("toolbox", &app.table("Shop")).await;
    let stamps = stamps(&app, "Shop", ["PK", "SK"], ["_ct", "_md"]).await;
    let customers = truth["customers"].as_array().unwrap();
    assert_eq!(customers.len(), 8, "{truth}");

    let mut orders = Vec::new();
    for customer in customers {
        let id = text(customer, "customerId");
        let answer = app
            .graphql(
                "query($id: ID!) { customer(customerId: $id) { customerId name email createdAt } }",
                json!({ "id": id }),
            )
            .await;
        let (created, _) = &stamps[&(format!("CUSTOMER#{id}"), "#PROFILE".to_owned())];
        assert_eq!(
            answer["data"]["customer"],
            json!({ "customerId": id, "name": customer["name"], "email": customer["email"],
                    "createdAt": created }),
            "{answer}"
        );
        let want = &truth["ordersByCustomer"][&id];
        let vars = json!({ "customerId": id });
        let nodes = walk_matches(
            |paging| app.graphql(ORDERS, merge(vars.clone(), paging)),
            &["customer", "orders"],
            |node| text(node, "orderId"),
            &texts(want, "orderId"),
            &format!("{id}'s orders"),
        )
        .await;
        for (node, want) in nodes.iter().zip(want.as_array().unwrap()) {
            assert_eq!(pick(node, &ORDER_FIELDS), as_served(want));
            assert_eq!(node["customer"]["customerId"], id.as_str());
            let key = (
                format!("CUSTOMER#{id}"),
                format!("ORDER#{}", text(node, "orderId")),
            );
            let (created, modified) = &stamps[&key];
            assert_eq!(
                (&text(node, "createdAt"), &text(node, "modifiedAt")),
                (created, modified)
            );
        }
        orders.extend(nodes);
    }

    refetch_all(
        &app,
        "Order",
        &orders,
        &["id", "customerId", "orderId", "placedAt", "total", "status"],
    )
    .await;

    // Customers, by a Scan that keeps customers only.
    let got: Vec<String> = scanned(&app, "customers", "customerId", "customerId")
        .await
        .iter()
        .map(|c| text(c, "customerId"))
        .collect();
    let mut want: Vec<String> = customers.iter().map(|c| text(c, "customerId")).collect();
    want.sort();
    assert_eq!(got, want);

    let order_key = |o: &Value| format!("{}/{}", text(o, "customerId"), text(o, "orderId"));
    for (status, want) in truth["ordersByStatus"].as_object().unwrap() {
        let want = want.as_array().unwrap();
        assert!(!want.is_empty(), "{status}");
        let keep = |from: Option<&str>, until: Option<&str>| -> Vec<String> {
            want.iter()
                .filter(|o| {
                    let t = text(o, "placedAt");
                    from.is_none_or(|f| t.as_str() >= f) && until.is_none_or(|u| t.as_str() <= u)
                })
                .map(order_key)
                .collect()
        };
        let (from, until) = (
            text(&want[want.len() / 4], "placedAt"),
            text(&want[want.len() / 2], "placedAt"),
        );
        for (extra, expected) in [
            (json!({}), keep(None, None)),
            (
                json!({ "from": from, "until": until }),
                keep(Some(&from), Some(&until)),
            ),
        ] {
            let vars = merge(json!({ "status": status }), extra);
            let nodes = walk_matches(
                |paging| app.graphql(BY_STATUS, merge(vars.clone(), paging)),
                &["ordersByStatus"],
                order_key,
                &expected,
                &format!("orders {vars}"),
            )
            .await;
            if expected.len() == want.len() {
                for (node, want) in nodes.iter().zip(want) {
                    assert_eq!(*node, as_served(want));
                }
            }
        }
    }
}

/// Items the mutations write are dynamodb-toolbox's own: its `GetItemCommand` and queries read
/// them (with `_et`, and `_ct` / `_md` as its creation and change times), an update of the
/// status moves the order in the index and stamps `_md` anew, and a deleted order is gone.
#[tokio::test]
async fn dynamodb_toolbox_reads_what_the_mutations_write() {
    let app = model_app(MODEL).await;
    let customer = "C#Neu Ü";
    let answer = app
        .graphql(
            "mutation($id: ID!) { createCustomer(input: { customerId: $id, name: \"Neu\", email: \"neu@example.com\" }) { customer { createdAt modifiedAt } } }",
            json!({ "id": customer }),
        )
        .await;
    assert!(answer.get("errors").is_none(), "{answer}");
    let stamped = &answer["data"]["createCustomer"]["customer"];
    assert_eq!(stamped["createdAt"], stamped["modifiedAt"]);
    let create = "mutation($input: CreateOrderInput!) { createOrder(input: $input) { order { id createdAt } } }";
    let mut ids = Vec::new();
    for order in ["O#1", "O#2"] {
        let input = json!({ "customerId": customer, "orderId": order, "total": "19.99",
                            "placedAt": "2026-06-01T10:00:00.000Z", "status": "PENDING" });
        let answer = app.graphql(create, json!({ "input": input })).await;
        assert!(answer.get("errors").is_none(), "{answer}");
        ids.push(answer["data"]["createOrder"]["order"]["id"].clone());
    }
    let updated = app
        .graphql(
            "mutation($id: ID!) { updateOrder(input: { id: $id, status: PAID }) { order { createdAt modifiedAt } } }",
            json!({ "id": ids[0] }),
        )
        .await;
    assert!(updated.get("errors").is_none(), "{updated}");
    let times = &updated["data"]["updateOrder"]["order"];
    assert!(
        times["modifiedAt"].as_str() >= times["createdAt"].as_str(),
        "{updated}"
    );
    let deleted = app
        .graphql(
            "mutation($id: ID!) { deleteOrder(input: { id: $id }) { deletedOrderId } }",
            json!({ "id": ids[1] }),
        )
        .await;
    assert!(deleted.get("errors").is_none(), "{deleted}");

    let read = read_back(
        "toolbox",
        &app.table("Shop"),
        &json!({
            "get": [
                { "entity": "Customer", "key": { "customerId": customer } },
                { "entity": "Order", "key": { "customerId": customer, "orderId": "O#1" } },
                { "entity": "Order", "key": { "customerId": customer, "orderId": "O#2" } },
            ],
            "query": [
                { "name": "ordersByCustomer", "params": { "customerId": customer } },
                { "name": "ordersByStatus", "params": { "status": "PAID" } },
                { "name": "ordersByStatus", "params": { "status": "PENDING" } },
            ],
        }),
    )
    .await;
    assert_eq!(
        pick(&read["get"][0], &["customerId", "name", "email"]),
        json!({ "customerId": customer, "name": "Neu", "email": "neu@example.com" }),
        "{read}"
    );
    let order = json!({ "customerId": customer, "orderId": "O#1", "placedAt": "2026-06-01T10:00:00.000Z",
                        "total": "19.99", "status": "PAID" });
    assert_eq!(as_served(&read["get"][1]), order, "{read}");
    assert_eq!(
        (&read["get"][1][CREATED], &read["get"][1][MODIFIED]),
        (&times["createdAt"], &times["modifiedAt"]),
        "{read}"
    );
    assert_eq!(read["get"][2], Value::Null, "{read}");
    for (at, want) in [(0, vec![order.clone()]), (1, vec![order]), (2, vec![])] {
        let got: Vec<Value> = read["query"][at]
            .as_array()
            .unwrap()
            .iter()
            .map(as_served)
            .collect();
        assert_eq!(got, want, "query {at}: {read}");
    }
}
