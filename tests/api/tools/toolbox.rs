//! dynamodb-toolbox (`examples/toolbox`): keys such as `CUSTOMER#<id>` and
//! `<placedAt>#<orderId>` with unescaped `#` inside ids, entities in `_et`, creation and change
//! times in `_ct` and `_md`.

use serde_json::{Value, json};

use super::{pick, stamps, text, texts};
use crate::helpers::{merge, model_app, walk_matches, written_by};

const MODEL: &str = "examples/toolbox/dynarelay.toml";

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
    }

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
