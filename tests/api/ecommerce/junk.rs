//! Items in the shared table that match no entity, whatever their shape: skipped by every
//! connection, never an error, and counted in `dynarelay_items_unmatched_total`.

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::Item;
use serde_json::{Value, json};

use super::{
    Conn, ana_and_an_order, ecommerce_with, expected, key_of, lines_of, order_ids, s, selection,
    walk_both_ways,
};
use crate::{
    ecommerce_data::{self as data, Kind, attr},
    helpers::{SortCond, ground_truth, metric_sum},
};

/// The metric counting items read that match no entity.
const UNMATCHED: &str = "dynarelay_items_unmatched_total";

/// An item in the shared table that matches no entity is left out of every connection, never
/// an error, and counted in `dynarelay_items_unmatched_total`.
#[tokio::test]
async fn items_matching_no_entity_are_skipped_and_counted() {
    let big = data::generate(data::SEED);
    let first_order = attr(big.orders_of(data::BIG_CUSTOMER).next().unwrap(), "orderId")
        .unwrap()
        .to_owned();
    let f = ecommerce_with(lines_of(std::slice::from_ref(&first_order))).await;
    let before = metric_sum(&f.app.metrics().await, UNMATCHED).unwrap_or(0.0);
    let mut junk_read = 0;
    let customer_cases = [
        ("ana", Conn::activity(), None),
        ("ana", Conn::orders(), Some("ORDER#")),
        (data::BIG_CUSTOMER, Conn::activity(), None),
        (data::BIG_CUSTOMER, Conn::orders(), Some("ORDER#")),
        ("Zoë", Conn::addresses(), Some("ADDRESS#")),
        ("trailing\\", Conn::addresses(), Some("ADDRESS#")),
        ("trailing\\", Conn::activity(), None),
    ];
    for (username, conn, prefix) in &customer_cases {
        let sort = prefix.map(|p| ("SK", SortCond::Prefix(s(p))));
        let pk = ("PK", s(&data::customer_key(username)));
        let items = ground_truth(&f.app, &f.table, None, pk, sort, true).await;
        let junk = f.junk_in(&items);
        assert!(junk > 0, "{username:?} {:?}: no junk to skip", conn.path);
        junk_read += junk;
        let truth = f.nodes(&items);
        let vars = json!({ "username": username });
        let label = format!("{username:?} {:?} with junk", conn.path);
        walk_both_ways(&f.app, conn, &vars, &truth, &[3, 100], &label).await;
    }
    let pk = ("GSI2PK", s(&data::status_partition("SHIPPED")));
    let items = ground_truth(&f.app, &f.table, Some("GSI2"), pk, None, true).await;
    assert!(f.junk_in(&items) > 0, "SHIPPED: no junk to skip");
    junk_read += f.junk_in(&items);
    let truth = f.nodes(&items);
    let vars = json!({ "status": "SHIPPED", "order": "ASC" });
    let conn = Conn::orders_by_status();
    walk_both_ways(&f.app, &conn, &vars, &truth, &[3, 100], "SHIPPED with junk").await;

    let id = order_ids(&f.app, data::BIG_CUSTOMER).await[&first_order].clone();
    let vars = json!({ "id": id });
    let pk = ("GSI1PK", s(&data::order_partition(&first_order)));
    let conns = [
        (Conn::order("items", &[Kind::OrderItem]), Some("ITEM#")),
        (
            Conn::order("contents", &[Kind::Order, Kind::OrderItem]),
            None,
        ),
    ];
    for (conn, prefix) in &conns {
        let sort = prefix.map(|p| ("GSI1SK", SortCond::Prefix(s(p))));
        let items = ground_truth(&f.app, &f.table, Some("GSI1"), pk.clone(), sort, true).await;
        assert!(f.junk_in(&items) > 0, "{:?}: no junk to skip", conn.path);
        junk_read += f.junk_in(&items);
        let truth = f.nodes(&items);
        let label = format!("order {first_order:?} {:?} with junk", conn.path);
        walk_both_ways(&f.app, conn, &vars, &truth, &[3, 100], &label).await;
    }
    let all = f.app.scan_all(&f.table).await;
    let truth: Vec<Value> = f
        .nodes(&all)
        .into_iter()
        .filter(|n| n["__typename"] == "Customer")
        .collect();
    walk_both_ways(
        &f.app,
        &Conn::customers(),
        &json!({}),
        &truth,
        &[7, 100],
        "customers with junk",
    )
    .await;

    let exposition = f.app.metrics().await;
    let after = metric_sum(&exposition, UNMATCHED)
        .unwrap_or_else(|| panic!("no {UNMATCHED} in /metrics:\n{exposition}"));
    // Every walk read each junk item of its range at least once.
    assert!(
        after - before >= junk_read as f64,
        "{UNMATCHED} rose by {} over walks reading {junk_read} junk items",
        after - before
    );
}

/// Items whose keys have the shape of an entity's templates but whose facets do not fit it match
/// no entity either: a profile (`PK = SK = CUSTOMER#{username}`) whose two keys name different
/// customers, and an order whose `placedAt` facet is not a time. Each is skipped and counted,
/// in the collection, the single-type connection and the index it sits in.
#[tokio::test]
async fn items_that_fit_a_templates_shape_but_not_its_facets_match_no_entity() {
    let (app, table, ana, order) = ana_and_an_order().await;
    app.store
        .put_items(&table, vec![ana.clone(), order.clone()])
        .await
        .unwrap();
    let customer = json!([expected(Kind::Customer, &ana)]);
    let placed = json!([expected(Kind::Order, &order)]);
    let query = format!(
        "{{ customer(username: \"ana\") {{ activity(first: 10) {{ nodes {{ {} }} }}
             orders(first: 10) {{ nodes {{ {order} }} }} }}
           customers(first: 10) {{ nodes {{ {} }} }}
           ordersByStatus(status: PLACED, first: 10) {{ nodes {{ {order} }} }} }}",
        selection(&[Kind::Customer, Kind::Address, Kind::Order]),
        selection(&[Kind::Customer]),
        order = selection(&[Kind::Order]),
    );
    let cases = [
        (
            "a profile whose keys name two customers",
            Item::from([
                ("PK".to_owned(), s(&data::customer_key("ana"))),
                ("SK".to_owned(), s(&data::customer_key("bob"))),
                ("name".to_owned(), s("Bob")),
                ("email".to_owned(), s("bob@example.com")),
                ("joinedAt".to_owned(), s(data::SHARED_MOMENT)),
            ]),
        ),
        (
            "an order placed `yesterday`",
            Item::from([
                ("PK".to_owned(), s(&data::customer_key("ana"))),
                ("SK".to_owned(), s("ORDER#yesterday#O-9")),
                ("GSI2PK".to_owned(), s(&data::status_partition("PLACED"))),
                ("GSI2SK".to_owned(), s("yesterday#O-9")),
                ("total".to_owned(), AttributeValue::N("5".into())),
                ("itemCount".to_owned(), AttributeValue::N("1".into())),
            ]),
        ),
    ];
    // Every case is tried, and the test fails naming each that went wrong.
    let mut failures = Vec::new();
    for (label, item) in cases {
        let key = key_of(&item);
        app.store.put_items(&table, vec![item]).await.unwrap();
        let before = metric_sum(&app.metrics().await, UNMATCHED).unwrap_or(0.0);
        let response = app.graphql(&query, json!({})).await;
        let d = &response["data"];
        let activity = json!([customer[0], placed[0]]);
        let after = metric_sum(&app.metrics().await, UNMATCHED).unwrap_or(0.0);
        let checks = [
            ("no error", response.get("errors").is_none()),
            ("activity", d["customer"]["activity"]["nodes"] == activity),
            ("orders", d["customer"]["orders"]["nodes"] == placed),
            ("customers", d["customers"]["nodes"] == customer),
            ("ordersByStatus", d["ordersByStatus"]["nodes"] == placed),
            ("counted", after > before),
        ];
        let failed: Vec<&str> = checks
            .iter()
            .filter(|(_, ok)| !ok)
            .map(|(check, _)| *check)
            .collect();
        if !failed.is_empty() {
            failures.push(format!("{label}: wrong {failed:?}: {response}"));
        }
        app.client()
            .delete_item()
            .table_name(&table)
            .key("PK", s(&key.0))
            .key("SK", s(&key.1))
            .send()
            .await
            .unwrap();
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
