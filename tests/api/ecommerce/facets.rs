//! Facets read back from the keys of items that do not store them, and a stored copy of a facet
//! that differs from its key read as the item stores it.

use dynarelay::dynamo::Item;
use serde_json::{Value, json};

use super::{MODEL, ana_and_an_order, expected, s, selection};
use crate::{
    ecommerce_data::{self as data, Kind},
    helpers::{ModelApp, model_app},
};

/// `item` without the attributes `names`.
fn without(mut item: Item, names: &[&str]) -> Item {
    for name in names {
        assert!(item.remove(*name).is_some(), "{name} in {item:?}");
    }
    item
}

/// Items written by another program may hold their facets only in their keys: the API reads
/// them back from there.
#[tokio::test]
async fn facets_are_read_back_from_the_keys_of_items_that_do_not_store_them() {
    let app = model_app(MODEL).await;
    let table = app.table(data::TABLE);
    let username = "key\\only#李";
    let (label, at) = ("Büro#1\\", data::SHARED_MOMENT);
    let customer = data::customer_item(username, "Kim Key", "kim@example.com", at);
    let address = data::address_item(username, label, "1 Key St", "Zürich", None, "CH");
    let shipped = data::order_item(username, "K#1\\", at, "SHIPPED", "12.5", 1);
    let placed = data::order_item(
        username,
        "K#2",
        "2026-11-24T00:00:00.001Z",
        "PLACED",
        "0",
        1,
    );
    let line = data::line_item("K#1\\", "I#1", "Kaffeemühle", 2, "6.25");
    let stored = vec![
        without(customer.clone(), &["username"]),
        without(address.clone(), &["username", "label"]),
        without(shipped.clone(), &["username", "orderId", "placedAt"]),
        // The status too, read back from `GSI2PK`.
        without(
            placed.clone(),
            &["username", "orderId", "placedAt", "status"],
        ),
        without(line.clone(), &["orderId", "itemId"]),
    ];
    app.store.put_items(&table, stored).await.unwrap();

    let query = format!(
        "query($u: String!) {{ customer(username: $u) {{ id {c}
            addresses(first: 10) {{ nodes {{ id {a} }} }}
            orders(first: 10) {{ nodes {{ id {o} items(first: 10) {{ nodes {{ id {i} }} }} }} }}
            activity(first: 10) {{ nodes {{ {activity} }} }} }} }}",
        c = selection(&[Kind::Customer]),
        a = selection(&[Kind::Address]),
        o = selection(&[Kind::Order]),
        i = selection(&[Kind::OrderItem]),
        activity = selection(&[Kind::Customer, Kind::Address, Kind::Order]),
    );
    let response = app.graphql(&query, json!({ "u": username })).await;
    assert!(response.get("errors").is_none(), "{response}");
    let got = &response["data"]["customer"];
    let strip = |v: &Value, also: &[&str]| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("id");
        for field in also {
            v.as_object_mut().unwrap().remove(*field);
        }
        v
    };
    let want_customer = expected(Kind::Customer, &customer);
    let want_address = expected(Kind::Address, &address);
    let want_orders = [
        expected(Kind::Order, &shipped),
        expected(Kind::Order, &placed),
    ];
    let want_line = expected(Kind::OrderItem, &line);
    assert_eq!(
        strip(got, &["addresses", "orders", "activity"]),
        want_customer
    );
    assert_eq!(strip(&got["addresses"]["nodes"][0], &[]), want_address);
    for (k, want) in want_orders.iter().enumerate() {
        assert_eq!(
            strip(&got["orders"]["nodes"][k], &["items"]),
            *want,
            "order {k}"
        );
    }
    assert_eq!(
        strip(&got["orders"]["nodes"][0]["items"]["nodes"][0], &[]),
        want_line
    );
    assert_eq!(
        got["activity"]["nodes"],
        json!([want_address, want_customer, want_orders[0], want_orders[1]]),
        "{response}"
    );

    // Through the indexes, and refetched by id.
    let response = app
        .graphql(
            &format!(
                "{{ ordersByStatus(status: SHIPPED, first: 10) {{ nodes {{ {} }} }} }}",
                selection(&[Kind::Order])
            ),
            json!({}),
        )
        .await;
    assert_eq!(
        response["data"]["ordersByStatus"]["nodes"],
        json!([want_orders[0]]),
        "{response}"
    );
    let order_id = got["orders"]["nodes"][0]["id"].clone();
    let response = app
        .graphql(
            &format!(
                "query($id: ID!) {{ node(id: $id) {{ ... on Order {{ contents(first: 10) {{ nodes {{ {} }} }} }} }} }}",
                selection(&[Kind::Order, Kind::OrderItem])
            ),
            json!({ "id": order_id }),
        )
        .await;
    assert_eq!(
        response["data"]["node"]["contents"]["nodes"],
        json!([want_line, want_orders[0]]),
        "{response}"
    );
    let fragments = selection(&[Kind::Customer, Kind::Address, Kind::Order, Kind::OrderItem]);
    for (id, want) in [
        (&got["id"], &want_customer),
        (&got["addresses"]["nodes"][0]["id"], &want_address),
        (&got["orders"]["nodes"][1]["id"], &want_orders[1]),
        (
            &got["orders"]["nodes"][0]["items"]["nodes"][0]["id"],
            &want_line,
        ),
    ] {
        let response = app
            .graphql(
                &format!("query($id: ID!) {{ node(id: $id) {{ {fragments} }} }}"),
                json!({ "id": id }),
            )
            .await;
        assert_eq!(response["data"]["node"], *want, "{response}");
    }
}

/// An item whose stored copy of a facet differs from its key (written by other code: ElectroDB
/// lowercases keys and keeps each facet as given in its own attribute) shows the copy, as its
/// writer reads it back: the same in a page that reads only the selected attributes, one that
/// reads whole items (a relation is selected), through an index and by refetch. Its keys still
/// decide where it is listed and what it is. Seen failing: before facets were read from the
/// item's own attributes first, the API showed the key's text (`o-2` for `O-2`).
#[tokio::test]
async fn a_facet_copy_that_differs_from_its_key_is_read_as_the_item_stores_it() {
    let (app, table, ana, order) = ana_and_an_order().await;
    let mut copied = order.clone();
    for (name, value) in [("orderId", "O-2"), ("placedAt", "2020-01-01T00:00:00.000Z")] {
        copied.insert(name.to_owned(), s(value));
    }
    assert_ne!(copied, order);
    app.store
        .put_items(&table, vec![ana.clone(), copied.clone()])
        .await
        .unwrap();
    let want = expected(Kind::Order, &copied);
    let fields = selection(&[Kind::Order]);
    let query = format!(
        "{{ customer(username: \"ana\") {{
             orders(first: 10) {{ nodes {{ id {fields} }} }}
             whole: orders(first: 10) {{ nodes {{ {fields} customer {{ username }} }} }}
             activity(first: 10) {{ nodes {{ {} }} }} }}
           ordersByStatus(status: PLACED, first: 10) {{ nodes {{ {fields} }} }} }}",
        selection(&[Kind::Customer, Kind::Order]),
    );
    let response = app.graphql(&query, json!({})).await;
    assert!(response.get("errors").is_none(), "{response}");
    let d = &response["data"];
    let mut projected = d["customer"]["orders"]["nodes"][0].clone();
    let id = projected.as_object_mut().unwrap().remove("id").unwrap();
    assert_eq!(projected, want, "{response}");
    let mut whole = want.clone();
    whole["customer"] = json!({ "username": "ana" });
    assert_eq!(
        d["customer"]["whole"]["nodes"],
        json!([whole]),
        "{response}"
    );
    assert_eq!(
        d["customer"]["activity"]["nodes"],
        json!([expected(Kind::Customer, &ana), want]),
        "{response}"
    );
    assert_eq!(d["ordersByStatus"]["nodes"], json!([want]), "{response}");
    let refetched = refetch_order(&app, &id, &fields).await;
    assert_eq!(refetched["data"]["node"], want, "{refetched}");
}

/// One rule decides an item's entity on every read: its type attribute and its table's keys.
/// An order whose index sort key another writer spelled its own way (`GSI2SK` not of the form
/// `{placedAt}#{orderId}`) is an order through the index's connection exactly as through the
/// customer's and by refetch, with the same fields (read from its table key and attributes).
/// Seen failing: with index reads also requiring the index key to read back, `ordersByStatus`
/// left the order out while `customer.orders` and `node` showed it.
#[tokio::test]
async fn an_item_is_the_same_entity_on_every_read() {
    let (app, table, ana, order) = ana_and_an_order().await;
    let mut odd = order.clone();
    odd.insert("GSI2SK".to_owned(), s("written-by-someone-else"));
    app.store
        .put_items(&table, vec![ana.clone(), odd])
        .await
        .unwrap();
    let want = expected(Kind::Order, &order);
    let fields = selection(&[Kind::Order]);
    let query = format!(
        "{{ customer(username: \"ana\") {{ orders(first: 10) {{ nodes {{ id {fields} }} }} }}
           ordersByStatus(status: PLACED, first: 10) {{ nodes {{ id {fields} }} }} }}"
    );
    let response = app.graphql(&query, json!({})).await;
    assert!(response.get("errors").is_none(), "{response}");
    let d = &response["data"];
    let by_customer = d["customer"]["orders"]["nodes"].clone();
    assert_eq!(by_customer.as_array().map(Vec::len), Some(1), "{response}");
    assert_eq!(d["ordersByStatus"]["nodes"], by_customer, "{response}");
    let mut shown = by_customer[0].clone();
    let id = shown.as_object_mut().unwrap().remove("id").unwrap();
    assert_eq!(shown, want, "{response}");
    let refetched = refetch_order(&app, &id, &fields).await;
    assert_eq!(refetched["data"]["node"], want, "{refetched}");
}

/// `node(id:)` for an order, with `fields` selected.
async fn refetch_order(app: &ModelApp, id: &Value, fields: &str) -> Value {
    app.graphql(
        &format!("query($id: ID!) {{ node(id: $id) {{ ... on Order {{ {fields} }} }} }}"),
        json!({ "id": id }),
    )
    .await
}
