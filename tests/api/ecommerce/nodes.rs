//! Nodes from the item collections refetch as the same objects, and every selection of a
//! connection gets its own fields.

use std::collections::{BTreeSet, HashMap};

use dynarelay::dynamo::Item;
use serde_json::{Value, json};

use super::{ecommerce_with, expected, fields, lines_of, no_lines, selection, selection_with};
use crate::ecommerce_data::{self as data, Kind, attr};

/// Nodes met in the collections come back the same through `node(id:)` and `nodes(ids:)`, with
/// their own `__typename`; an object has one id whichever connection it came through.
#[tokio::test]
async fn nodes_from_collections_refetch_as_the_same_objects() {
    let customers = ["ana", data::BIG_CUSTOMER, "ana\\", "李雷"];
    let orders: Vec<String> = data::generate(data::SEED)
        .orders
        .iter()
        .filter(|o| customers.contains(&attr(o, "username").unwrap()))
        .map(|o| attr(o, "orderId").unwrap().to_owned())
        .collect();
    let f = ecommerce_with(lines_of(&orders)).await;
    let every = [Kind::Customer, Kind::Address, Kind::Order, Kind::OrderItem];
    let fragments = selection_with(&every, "id");
    let activity = selection_with(&[Kind::Customer, Kind::Address, Kind::Order], "id");
    let contents = selection_with(&[Kind::Order, Kind::OrderItem], "id");
    let order = selection_with(&[Kind::Order], "id");
    let mut originals: Vec<Value> = Vec::new();
    let mut order_ids_seen: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut note = |node: &Value| {
        if node["__typename"] == "Order" {
            order_ids_seen
                .entry(node["orderId"].as_str().unwrap().to_owned())
                .or_default()
                .insert(node["id"].to_string());
        }
    };
    for username in customers {
        let response = f
            .app
            .graphql(
                &format!(
                    "query($u: String!) {{ customer(username: $u) {{
                       activity(first: 100) {{ nodes {{ {activity} }} }}
                       orders(first: 5) {{ nodes {{ __typename id orderId
                         contents(first: 10) {{ nodes {{ {contents} }} }} }} }} }} }}"
                ),
                json!({ "u": username }),
            )
            .await;
        assert!(response.get("errors").is_none(), "{response}");
        let customer = &response["data"]["customer"];
        for node in customer["activity"]["nodes"].as_array().unwrap() {
            note(node);
            originals.push(node.clone());
        }
        for order in customer["orders"]["nodes"].as_array().unwrap().iter() {
            note(order);
            for node in order["contents"]["nodes"].as_array().unwrap() {
                note(node);
                originals.push(node.clone());
            }
        }
    }
    let response = f
        .app
        .graphql(
            &format!("{{ ordersByStatus(status: SHIPPED, first: 100) {{ nodes {{ {order} }} }} }}"),
            json!({}),
        )
        .await;
    for node in response["data"]["ordersByStatus"]["nodes"]
        .as_array()
        .unwrap()
    {
        note(node);
    }
    let kinds: BTreeSet<&str> = originals
        .iter()
        .map(|n| n["__typename"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    for (order_id, ids) in &order_ids_seen {
        assert_eq!(ids.len(), 1, "order {order_id:?} has several ids: {ids:?}");
    }

    for original in &originals {
        let response = f
            .app
            .graphql(
                &format!("query($id: ID!) {{ node(id: $id) {{ {fragments} }} }}"),
                json!({ "id": original["id"] }),
            )
            .await;
        assert_eq!(response["data"]["node"], *original, "{response}");
    }
    let ids: Vec<Value> = originals.iter().map(|n| n["id"].clone()).collect();
    let distinct: BTreeSet<String> = ids.iter().map(Value::to_string).collect();
    // `nodes(ids:)` takes 100 ids at most.
    for (ids, originals) in ids.chunks(100).zip(originals.chunks(100)) {
        let response = f
            .app
            .graphql(
                &format!("query($ids: [ID!]!) {{ nodes(ids: $ids) {{ {fragments} }} }}"),
                json!({ "ids": ids }),
            )
            .await;
        assert_eq!(response["data"]["nodes"], json!(originals), "{response}");
    }
    assert!(distinct.len() > 50, "{} distinct nodes", distinct.len());
}

/// A page reads only the attributes its selection needs (and the keys): the same connection
/// selected under aliases with different fields, each read ahead of the customer's GetItem with
/// its own attributes, answers every alias with exactly its fields, equal to the whole nodes cut
/// down to them; a selection that reaches a relation, or an item collection's fragments, get
/// theirs as well.
#[tokio::test]
async fn every_selection_of_a_connection_gets_its_own_fields() {
    let f = ecommerce_with(no_lines).await;
    let order = fields(Kind::Order);
    let activity = selection(&[Kind::Customer, Kind::Address, Kind::Order]);
    for username in [data::BIG_CUSTOMER, "ana\\", "李雷"] {
        let response = f
            .app
            .graphql(
                &format!(
                    "query($u: String!) {{ customer(username: $u) {{
                       whole: orders(first: 30) {{ edges {{ cursor node {{ {order} id }} }} }}
                       totals: orders(first: 30) {{ edges {{ cursor node {{ total }} }} }}
                       placed: orders(first: 30) {{ nodes {{ id placedAt orderId }} }}
                       owners: orders(first: 30) {{ nodes {{ status customer {{ username name }} }} }}
                       activity(first: 100) {{ nodes {{ {activity} }} }}
                       kinds: activity(first: 100) {{ nodes {{ __typename
                         ... on Order {{ status }} ... on Address {{ city }} }} }} }} }}"
                ),
                json!({ "u": username }),
            )
            .await;
        assert!(response.get("errors").is_none(), "{response}");
        let customer = &response["data"]["customer"];
        let list = |path: [&str; 2]| customer[path[0]][path[1]].as_array().unwrap().clone();
        let whole = list(["whole", "edges"]);
        let truth: Vec<&Item> = f.data.orders_of(username).collect();
        assert!(whole.len() >= 2, "{username}: {} orders", whole.len());
        assert_eq!(whole.len(), truth.len().min(30), "{username}");
        let name = f
            .data
            .customers
            .iter()
            .find(|c| attr(c, "username") == Some(username))
            .and_then(|c| attr(c, "name"))
            .unwrap();
        let (totals, placed, owners) = (
            list(["totals", "edges"]),
            list(["placed", "nodes"]),
            list(["owners", "nodes"]),
        );
        assert_eq!(
            (totals.len(), placed.len(), owners.len()),
            (whole.len(), whole.len(), whole.len())
        );
        for (i, edge) in whole.iter().enumerate() {
            let node = &edge["node"];
            let item = truth
                .iter()
                .find(|o| node["orderId"] == attr(o, "orderId").unwrap())
                .unwrap_or_else(|| panic!("{node} is none of {username}'s orders"));
            let mut bare = node.clone();
            bare.as_object_mut().unwrap().remove("id");
            bare["__typename"] = json!("Order");
            assert_eq!(bare, expected(Kind::Order, item));
            assert_eq!(
                totals[i],
                json!({ "cursor": edge["cursor"], "node": { "total": node["total"] } })
            );
            assert_eq!(
                placed[i],
                json!({ "id": node["id"], "placedAt": node["placedAt"], "orderId": node["orderId"] })
            );
            assert_eq!(
                owners[i],
                json!({ "status": node["status"], "customer": { "username": username, "name": name } })
            );
        }
        let (all, kinds) = (list(["activity", "nodes"]), list(["kinds", "nodes"]));
        assert_eq!(all.len(), kinds.len(), "{username}");
        let mut typenames = BTreeSet::new();
        for (node, cut) in all.iter().zip(&kinds) {
            let typename = node["__typename"].as_str().unwrap();
            typenames.insert(typename);
            let mut want = json!({ "__typename": typename });
            match typename {
                "Order" => want["status"] = node["status"].clone(),
                "Address" => want["city"] = node["city"].clone(),
                _ => {}
            }
            assert_eq!(*cut, want, "{username}");
        }
        assert_eq!(typenames.len(), 3, "{username}: {typenames:?}");
    }
}
