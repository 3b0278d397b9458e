//! Mutations over key templates (`examples/ecommerce/dynarelay.toml`): a create writes every key
//! its entity's templates render (the table's and the indexes'), escaped, beside the facets; the
//! created items read back through every connection they belong to; an update that changes a
//! facet of an index key rewrites that key in the same write; and bad input (an empty facet, a
//! key too long, an id of another entity, a facet missing from an update) is refused before
//! anything is written.
//!
//! The expected keys are written out by hand here, escaping included, not computed with the
//! codec under test.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_dynamodb::types::AttributeValue;
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use dynarelay::dynamo::Item;
use serde_json::{Value, json};

use crate::helpers::{ModelApp, error_code, model_app};

const MODEL: &str = "examples/ecommerce/dynarelay.toml";
const TABLE: &str = "ECommerce";

const CREATE_CUSTOMER: &str = "mutation($input: CreateCustomerInput!) {
  createCustomer(input: $input) { customer { id username name email } } }";
const CREATE_ADDRESS: &str = "mutation($input: CreateAddressInput!) {
  createAddress(input: $input) {
    address { id username label street city postcode country customer { username } }
    addressEdge { cursor node { label } } } }";
const CREATE_ORDER: &str = "mutation($input: CreateOrderInput!) {
  createOrder(input: $input) {
    order { id username orderId placedAt status total itemCount customer { username } }
    orderEdge { cursor node { orderId } } } }";
const CREATE_ITEM: &str = "mutation($input: CreateOrderItemInput!) {
  createOrderItem(input: $input) {
    orderItem { id orderId itemId product quantity price }
    orderItemEdge { cursor node { itemId } } } }";
const UPDATE_ORDER: &str = "mutation($input: UpdateOrderInput!) {
  updateOrder(input: $input) { order { id orderId placedAt status total } } }";
const UPDATE_CUSTOMER: &str = "mutation($input: UpdateCustomerInput!) {
  updateCustomer(input: $input) { customer { username name email } } }";
const DELETE_ORDER: &str =
    "mutation($id: ID!) { deleteOrder(input: { id: $id }) { deletedOrderId } }";
const DELETE_ADDRESS: &str =
    "mutation($id: ID!) { deleteAddress(input: { id: $id }) { deletedAddressId } }";

/// A username with the separator, the escape character and non-ASCII letters.
const USERNAME: &str = r"zoë#1\";
/// Its table keys, escaped by hand: `#` and `\` each behind a `\`.
const CUSTOMER_KEY: &str = r"CUSTOMER#zoë\#1\\";

async fn ok(app: &ModelApp, query: &str, vars: Value) -> Value {
    let response = app.graphql(query, vars).await;
    assert!(response.get("errors").is_none(), "{response}");
    response["data"].clone()
}

/// Asserts a `BAD_USER_INPUT` refusal with `message` (any message when empty).
async fn refused(app: &ModelApp, query: &str, vars: Value, message: &str) {
    let response = app.graphql(query, vars).await;
    assert_eq!(
        error_code(&response),
        Some("BAD_USER_INPUT"),
        "{message}: {response}"
    );
    if !message.is_empty() {
        assert_eq!(response["errors"][0]["message"], message, "{response}");
    }
}

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_owned())
}

fn n(text: &str) -> AttributeValue {
    AttributeValue::N(text.to_owned())
}

/// The raw item with this primary key, read consistently.
async fn raw(app: &ModelApp, table: &str, pk: &str, sk: &str) -> Option<Item> {
    app.client()
        .get_item()
        .table_name(app.table(table))
        .key("PK", s(pk))
        .key("SK", s(sk))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
}

/// Every item of a table, sorted by key: what a refused mutation must leave as it was.
async fn snapshot(app: &ModelApp, table: &str) -> BTreeMap<(String, String), String> {
    app.scan_all(&app.table(table))
        .await
        .into_iter()
        .map(|item| {
            let key = |a: &str| item[a].as_s().unwrap().clone();
            let mut attributes: Vec<String> =
                item.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
            attributes.sort();
            ((key("PK"), key("SK")), attributes.join(" "))
        })
        .collect()
}

/// How many calls of `operation` the app made to DynamoDB, from its metrics.
async fn calls(app: &ModelApp, operation: &str) -> f64 {
    let series = format!("dynarelay_dynamodb_calls_total{{operation=\"{operation}\"");
    app.metrics()
        .await
        .lines()
        .filter(|line| line.starts_with(&series))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// The global id `id` with its type tag `from` replaced by `to`: the same key, named as an
/// item of another entity.
fn retagged(id: &Value, from: &str, to: &str) -> String {
    let bytes = URL_SAFE_NO_PAD.decode(id.as_str().unwrap()).unwrap();
    let key = bytes.strip_prefix(from.as_bytes()).expect("the id's tag");
    URL_SAFE_NO_PAD.encode([to.as_bytes(), key].concat())
}

fn customer_input(username: &str) -> Value {
    json!({ "input": { "username": username, "name": "Zoë Brandt", "email": "zoe@example.com" } })
}

fn order_input(order_id: &str, placed_at: &str) -> Value {
    json!({ "input": {
        "username": USERNAME, "orderId": order_id, "placedAt": placed_at,
        "total": "59.90", "itemCount": 2,
    } })
}

fn names(item: &Item) -> BTreeSet<&str> {
    item.keys().map(String::as_str).collect()
}

#[tokio::test]
async fn created_items_hold_exactly_their_rendered_keys_and_read_back_everywhere() {
    let app = model_app(MODEL).await;
    let customer = ok(&app, CREATE_CUSTOMER, customer_input(USERNAME)).await;
    assert_eq!(customer["createCustomer"]["customer"]["username"], USERNAME);
    let label = r"Home #2 \ 🏠";
    let address = ok(
        &app,
        CREATE_ADDRESS,
        json!({ "input": {
            "username": USERNAME, "label": label, "street": "Hauptstraße 1",
            "city": "Zürich", "country": "CH",
        } }),
    )
    .await;
    assert_eq!(
        address["createAddress"]["address"]["customer"]["username"],
        USERNAME
    );
    // Given with an offset: the facet is the time as stored, in UTC.
    let order = ok(
        &app,
        CREATE_ORDER,
        order_input(r"o#7\x", "2026-11-23T11:15:00.000+01:00"),
    )
    .await;
    let order = &order["createOrder"]["order"];
    assert_eq!(order["placedAt"], "2026-11-23T10:15:00.000Z");
    assert_eq!(order["status"], "PLACED", "the default");
    assert_eq!(order["customer"]["username"], USERNAME);
    let item = ok(
        &app,
        CREATE_ITEM,
        json!({ "input": {
            "orderId": r"o#7\x", "itemId": "i#1", "product": "Teekanne ☕",
            "quantity": 2, "price": "29.95",
        } }),
    )
    .await;
    assert_eq!(item["createOrderItem"]["orderItem"]["itemId"], "i#1");

    let profile = raw(&app, TABLE, CUSTOMER_KEY, CUSTOMER_KEY).await.unwrap();
    assert_eq!(
        names(&profile),
        BTreeSet::from(["PK", "SK", "username", "name", "email", "joinedAt"]),
        "{profile:?}"
    );
    assert_eq!(profile["username"], s(USERNAME));

    let address = raw(&app, TABLE, CUSTOMER_KEY, r"ADDRESS#Home \#2 \\ 🏠")
        .await
        .unwrap();
    assert_eq!(
        names(&address),
        BTreeSet::from(["PK", "SK", "username", "label", "street", "city", "country"]),
        "{address:?}"
    );
    assert_eq!(address["label"], s(label));

    let order_sk = r"ORDER#2026-11-23T10:15:00.000Z#o\#7\\x";
    let stored = raw(&app, TABLE, CUSTOMER_KEY, order_sk).await.unwrap();
    let expected: Item = [
        ("PK", s(CUSTOMER_KEY)),
        ("SK", s(order_sk)),
        ("GSI1PK", s(r"ORDER#o\#7\\x")),
        ("GSI1SK", s(r"ORDER#o\#7\\x")),
        ("GSI2PK", s("STATUS#PLACED")),
        ("GSI2SK", s(r"2026-11-23T10:15:00.000Z#o\#7\\x")),
        ("username", s(USERNAME)),
        ("orderId", s(r"o#7\x")),
        ("placedAt", s("2026-11-23T10:15:00.000Z")),
        ("status", s("PLACED")),
        ("total", n("59.9")),
        ("itemCount", n("2")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(stored, expected);

    let line_key = r"ORDER#o\#7\\x#ITEM#i\#1";
    let line = raw(&app, TABLE, line_key, line_key).await.unwrap();
    let expected: Item = [
        ("PK", s(line_key)),
        ("SK", s(line_key)),
        ("GSI1PK", s(r"ORDER#o\#7\\x")),
        ("GSI1SK", s(r"ITEM#i\#1")),
        ("orderId", s(r"o#7\x")),
        ("itemId", s("i#1")),
        ("product", s("Teekanne ☕")),
        ("quantity", n("2")),
        ("price", n("29.95")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(line, expected);

    // Read back through every connection each item belongs to.
    let read = ok(
        &app,
        "query($u: String!) { customer(username: $u) {
          username
          addresses { nodes { label city } }
          orders { nodes { orderId placedAt items { nodes { itemId product } } } }
          activity { nodes { __typename
            ... on Address { label } ... on Customer { username } ... on Order { orderId } } } }
          ordersByStatus(status: PLACED) { nodes { orderId username } } }",
        json!({ "u": USERNAME }),
    )
    .await;
    assert_eq!(
        read,
        json!({
            "customer": {
                "username": USERNAME,
                "addresses": { "nodes": [{ "label": label, "city": "Zürich" }] },
                "orders": { "nodes": [{
                    "orderId": r"o#7\x", "placedAt": "2026-11-23T10:15:00.000Z",
                    "items": { "nodes": [{ "itemId": "i#1", "product": "Teekanne ☕" }] },
                }] },
                "activity": { "nodes": [
                    { "__typename": "Address", "label": label },
                    { "__typename": "Customer", "username": USERNAME },
                    { "__typename": "Order", "orderId": r"o#7\x" },
                ] },
            },
            "ordersByStatus": { "nodes": [{ "orderId": r"o#7\x", "username": USERNAME }] },
        })
    );
    let node = ok(
        &app,
        "query($id: ID!) { node(id: $id) { ... on Order { orderId total } } }",
        json!({ "id": order["id"] }),
    )
    .await;
    assert_eq!(
        node["node"],
        json!({ "orderId": r"o#7\x", "total": "59.9" })
    );
}

#[tokio::test]
async fn an_order_placed_now_has_keys_made_of_the_time_it_stores() {
    let app = model_app(MODEL).await;
    ok(&app, CREATE_CUSTOMER, customer_input(USERNAME)).await;
    let created = ok(
        &app,
        CREATE_ORDER,
        json!({ "input": { "username": USERNAME, "orderId": "now-1", "total": "1", "itemCount": 1 } }),
    )
    .await;
    let placed_at = created["createOrder"]["order"]["placedAt"]
        .as_str()
        .unwrap();
    let sk = format!("ORDER#{placed_at}#now-1");
    let stored = raw(&app, TABLE, CUSTOMER_KEY, &sk).await.unwrap();
    assert_eq!(stored["placedAt"], s(placed_at));
    assert_eq!(stored["GSI2SK"], s(&format!("{placed_at}#now-1")));
}

#[tokio::test]
async fn the_created_edges_continue_their_connections_both_ways() {
    let app = model_app(MODEL).await;
    ok(&app, CREATE_CUSTOMER, customer_input(USERNAME)).await;
    let at = |day: u32| format!("2026-11-{day:02}T08:00:00.000Z");
    ok(&app, CREATE_ORDER, order_input("o#1", &at(1))).await;
    ok(&app, CREATE_ORDER, order_input("o#3", &at(3))).await;
    let middle = ok(&app, CREATE_ORDER, order_input("o#2", &at(2))).await;
    let edge = &middle["createOrder"]["orderEdge"];
    assert_eq!(edge["node"]["orderId"], "o#2");
    let orders = "query($u: String!, $after: String, $order: SortOrder) { customer(username: $u) {
        orders(first: 5, after: $after, order: $order) { nodes { orderId } } } }";
    let page = |order: &str| json!({ "u": USERNAME, "after": edge["cursor"], "order": order });
    let after = ok(&app, orders, page("ASC")).await;
    assert_eq!(
        after["customer"]["orders"]["nodes"],
        json!([{ "orderId": "o#3" }])
    );
    let before = ok(&app, orders, page("DESC")).await;
    assert_eq!(
        before["customer"]["orders"]["nodes"],
        json!([{ "orderId": "o#1" }])
    );

    // The items of an order, through the overloaded index.
    let line = |item_id: &str| {
        json!({ "input": {
        "orderId": "o#2", "itemId": item_id, "product": "Lamp", "quantity": 1, "price": "5",
    } })
    };
    ok(&app, CREATE_ITEM, line("a#1")).await;
    ok(&app, CREATE_ITEM, line("a#3")).await;
    let middle = ok(&app, CREATE_ITEM, line("a#2")).await;
    let cursor = &middle["createOrderItem"]["orderItemEdge"]["cursor"];
    let items = ok(
        &app,
        "query($u: String!, $after: String) { customer(username: $u) {
          orders(placedIn: \"2026-11-02\") { nodes { items(first: 5, after: $after) {
            nodes { itemId } } } } } }",
        json!({ "u": USERNAME, "after": cursor }),
    )
    .await;
    assert_eq!(
        items["customer"]["orders"]["nodes"][0]["items"]["nodes"],
        json!([{ "itemId": "a#3" }])
    );

    // The customer's addresses.
    let address = |label: &str| {
        json!({ "input": {
        "username": USERNAME, "label": label, "street": "S", "city": "C", "country": "DE",
    } })
    };
    ok(&app, CREATE_ADDRESS, address("A#1")).await;
    ok(&app, CREATE_ADDRESS, address("A#3")).await;
    let middle = ok(&app, CREATE_ADDRESS, address("A#2")).await;
    let cursor = &middle["createAddress"]["addressEdge"]["cursor"];
    let addresses = ok(
        &app,
        "query($u: String!, $after: String) { customer(username: $u) {
          addresses(first: 5, after: $after) { nodes { label } } } }",
        json!({ "u": USERNAME, "after": cursor }),
    )
    .await;
    assert_eq!(
        addresses["customer"]["addresses"]["nodes"],
        json!([{ "label": "A#3" }])
    );
}

#[tokio::test]
async fn a_new_status_moves_the_order_between_status_lists_in_one_write() {
    let app = model_app(MODEL).await;
    ok(&app, CREATE_CUSTOMER, customer_input(USERNAME)).await;
    let created = ok(
        &app,
        CREATE_ORDER,
        order_input("o#9", "2026-11-20T12:00:00.000Z"),
    )
    .await;
    let id = created["createOrder"]["order"]["id"].clone();
    let sk = r"ORDER#2026-11-20T12:00:00.000Z#o\#9";
    let before = raw(&app, TABLE, CUSTOMER_KEY, sk).await.unwrap();
    let by_status =
        "query($s: OrderStatus!) { ordersByStatus(status: $s) { nodes { orderId status } } }";
    let listed = |status: &str| json!({ "s": status });
    assert_eq!(
        ok(&app, by_status, listed("PLACED")).await["ordersByStatus"]["nodes"],
        json!([{ "orderId": "o#9", "status": "PLACED" }])
    );

    let (updates, puts) = (
        calls(&app, "UpdateItem").await,
        calls(&app, "PutItem").await,
    );
    let updated = ok(
        &app,
        UPDATE_ORDER,
        json!({ "input": { "id": id, "status": "SHIPPED" } }),
    )
    .await;
    assert_eq!(updated["updateOrder"]["order"]["status"], "SHIPPED");
    assert_eq!(updated["updateOrder"]["order"]["id"], id);
    assert_eq!(calls(&app, "UpdateItem").await, updates + 1.0, "one write");
    assert_eq!(calls(&app, "PutItem").await, puts, "and no other");

    let after = raw(&app, TABLE, CUSTOMER_KEY, sk).await.unwrap();
    let mut expected = before.clone();
    expected.insert("status".to_owned(), s("SHIPPED"));
    expected.insert("GSI2PK".to_owned(), s("STATUS#SHIPPED"));
    assert_eq!(
        after, expected,
        "the status and its index key, nothing else"
    );
    assert_eq!(
        ok(&app, by_status, listed("PLACED")).await["ordersByStatus"]["nodes"],
        json!([])
    );
    assert_eq!(
        ok(&app, by_status, listed("SHIPPED")).await["ordersByStatus"]["nodes"],
        json!([{ "orderId": "o#9", "status": "SHIPPED" }])
    );

    // A change to no facet leaves the index keys alone.
    ok(
        &app,
        UPDATE_ORDER,
        json!({ "input": { "id": id, "total": "12.5" } }),
    )
    .await;
    let later = raw(&app, TABLE, CUSTOMER_KEY, sk).await.unwrap();
    expected.insert("total".to_owned(), n("12.5"));
    assert_eq!(later, expected);

    // A customer's update changes no key.
    let customer = ok(
        &app,
        "query($u: String!) { customer(username: $u) { id } }",
        json!({ "u": USERNAME }),
    )
    .await;
    let renamed = ok(
        &app,
        UPDATE_CUSTOMER,
        json!({ "input": { "id": customer["customer"]["id"], "name": "Zoë B." } }),
    )
    .await;
    assert_eq!(renamed["updateCustomer"]["customer"]["username"], USERNAME);
    let profile = raw(&app, TABLE, CUSTOMER_KEY, CUSTOMER_KEY).await.unwrap();
    assert_eq!(profile["name"], s("Zoë B."));
    assert_eq!(
        names(&profile),
        BTreeSet::from(["PK", "SK", "username", "name", "email", "joinedAt"])
    );
}

#[tokio::test]
async fn bad_input_is_refused_and_nothing_is_written() {
    let app = model_app(MODEL).await;
    let customer = ok(&app, CREATE_CUSTOMER, customer_input(USERNAME)).await;
    let customer_id = customer["createCustomer"]["customer"]["id"].clone();
    let order = ok(
        &app,
        CREATE_ORDER,
        order_input("o#1", "2026-11-01T00:00:00.000Z"),
    )
    .await;
    let order_id = order["createOrder"]["order"]["id"].clone();
    let address = ok(
        &app,
        CREATE_ADDRESS,
        json!({ "input": {
            "username": USERNAME, "label": "Home", "street": "S", "city": "C", "country": "DE",
        } }),
    )
    .await;
    let address_id = address["createAddress"]["address"]["id"].clone();
    let before = snapshot(&app, TABLE).await;
    let puts = calls(&app, "PutItem").await;

    // Empty facets would make keys that cannot be told from a prefix of others.
    refused(
        &app,
        CREATE_CUSTOMER,
        customer_input(""),
        "`username` must not be empty.",
    )
    .await;
    refused(
        &app,
        CREATE_ORDER,
        order_input("", "2026-11-02T00:00:00.000Z"),
        "`orderId` must not be empty.",
    )
    .await;
    refused(
        &app,
        CREATE_ITEM,
        json!({ "input": { "orderId": "o#1", "itemId": "", "product": "P", "quantity": 1, "price": "1" } }),
        "`itemId` must not be empty.",
    )
    .await;
    // A key longer than DynamoDB allows: 2048 bytes for a partition key, 1024 for a sort key.
    refused(
        &app,
        CREATE_CUSTOMER,
        customer_input(&"u".repeat(1016)),
        "`username` is too long for a key: the key made of it must be at most 1024 bytes.",
    )
    .await;
    refused(
        &app,
        CREATE_ITEM,
        json!({ "input": { "orderId": "o".repeat(1100), "itemId": "i".repeat(1100), "product": "P", "quantity": 1, "price": "1" } }),
        "`orderId` and `itemId` are too long for a key: the key made of them must be at most 2048 bytes.",
    )
    .await;
    // The related customer must exist, and keys must be free.
    refused(
        &app,
        CREATE_ORDER,
        json!({ "input": { "username": "nobody", "orderId": "o#2", "placedAt": "2026-11-02T00:00:00.000Z", "total": "1", "itemCount": 1 } }),
        "No customer has this `username`.",
    )
    .await;
    refused(
        &app,
        CREATE_CUSTOMER,
        customer_input(USERNAME),
        "A customer with this `username` already exists.",
    )
    .await;
    refused(
        &app,
        CREATE_ORDER,
        order_input("o#1", "2026-11-01T00:00:00.000Z"),
        "An order with this `username` and `placedAt` and `orderId` already exists.",
    )
    .await;
    assert_eq!(
        calls(&app, "PutItem").await,
        puts + 2.0,
        "only the two taken keys were tried"
    );

    // An id of another entity, as it is or with the key of one entity under the tag of
    // another: the key does not fit the entity's templates.
    for id in [customer_id.clone(), json!(retagged(&customer_id, "C", "O"))] {
        refused(
            &app,
            UPDATE_ORDER,
            json!({ "input": { "id": id, "status": "SHIPPED" } }),
            "The id is not an order id.",
        )
        .await;
        refused(
            &app,
            DELETE_ORDER,
            json!({ "id": id }),
            "The id is not an order id.",
        )
        .await;
    }
    refused(
        &app,
        DELETE_ADDRESS,
        json!({ "id": order_id }),
        "The id is not an address id.",
    )
    .await;
    refused(
        &app,
        DELETE_ADDRESS,
        json!({ "id": retagged(&order_id, "O", "A") }),
        "The id is not an address id.",
    )
    .await;
    refused(
        &app,
        UPDATE_CUSTOMER,
        json!({ "input": { "id": address_id, "name": "X" } }),
        "The id is not a customer id.",
    )
    .await;
    assert_eq!(snapshot(&app, TABLE).await, before, "nothing was written");

    // The right ids still work.
    ok(&app, DELETE_ADDRESS, json!({ "id": address_id })).await;
    ok(&app, DELETE_ORDER, json!({ "id": order_id })).await;
    assert_eq!(snapshot(&app, TABLE).await.len(), 1, "the customer is left");
}

/// A help desk whose tickets and notes share a table and key templates, told apart by the type
/// attribute; tickets are listed by queue and priority through an index key whose facets are
/// neither of them in the primary key.
const DESK: &str = r#"version = 1

[tables.Desk]
partition_key = "PK"
sort_key = "SK"
type_attribute = "_type"
attributes = { PK = "S", SK = "S", GSI1PK = "S", GSI1SK = "S" }

[tables.Desk.indexes.GSI1]
partition_key = "GSI1PK"
sort_key = "GSI1SK"

[entities.Ticket]
table = "Desk"
id_tag = "T"
keys = { PK = "ITEM#{key}", SK = "ITEM#{key}", GSI1PK = "QUEUE#{queue}#{priority}", GSI1SK = "{key}" }
fields.key = { type = "String!" }
fields.queue = { type = "String!" }
fields.priority = { type = "Int!" }
fields.title = { type = "String!" }
mutations = { create = {}, update = {}, delete = {} }

[entities.Note]
table = "Desk"
id_tag = "N"
keys = { PK = "ITEM#{key}", SK = "ITEM#{key}" }
fields.key = { type = "String!" }
fields.text = { type = "String!" }
mutations = { create = {}, update = {}, delete = {} }
"#;

/// The help desk served on fresh tables.
async fn desk() -> ModelApp {
    crate::helpers::model_app_from(DESK).await
}

#[tokio::test]
async fn an_index_key_is_rewritten_from_the_input_and_the_stored_item() {
    let app = desk().await;
    let created = ok(
        &app,
        "mutation { createTicket(input: { key: \"t#1\", queue: \"billing\", priority: -2, title: \"Refund\" }) { ticket { id } } }",
        json!({}),
    )
    .await;
    let id = created["createTicket"]["ticket"]["id"].clone();
    let ticket = raw(&app, "Desk", r"ITEM#t\#1", r"ITEM#t\#1").await.unwrap();
    // An integer facet has a fixed width and sorts as a number: -2 + 2^63.
    assert_eq!(ticket["GSI1PK"], s("QUEUE#billing#09223372036854775806"));
    // A facet with no text beside it has no separator to escape.
    assert_eq!(ticket["GSI1SK"], s("t#1"));
    assert_eq!(ticket["_type"], s("Ticket"));

    let update = "mutation($input: UpdateTicketInput!) { updateTicket(input: $input) { ticket { queue priority title } } }";
    // A facet the input leaves out is read from the stored item: the update reads it first.
    let moved = ok(
        &app,
        update,
        json!({ "input": { "id": id, "queue": "sales" } }),
    )
    .await;
    assert_eq!(
        moved["updateTicket"]["ticket"],
        json!({ "queue": "sales", "priority": -2, "title": "Refund" })
    );
    let ticket = raw(&app, "Desk", r"ITEM#t\#1", r"ITEM#t\#1").await.unwrap();
    assert_eq!(ticket["GSI1PK"], s("QUEUE#sales#09223372036854775806"));
    ok(
        &app,
        update,
        json!({ "input": { "id": id, "priority": 1, "title": "Refund now" } }),
    )
    .await;
    let ticket = raw(&app, "Desk", r"ITEM#t\#1", r"ITEM#t\#1").await.unwrap();
    assert_eq!(ticket["GSI1PK"], s("QUEUE#sales#09223372036854775809"));

    let updated = ok(
        &app,
        update,
        json!({ "input": { "id": id, "queue": "sales#eu", "priority": 7 } }),
    )
    .await;
    assert_eq!(
        updated["updateTicket"]["ticket"],
        json!({ "queue": "sales#eu", "priority": 7, "title": "Refund now" })
    );
    let ticket = raw(&app, "Desk", r"ITEM#t\#1", r"ITEM#t\#1").await.unwrap();
    assert_eq!(ticket["GSI1PK"], s(r"QUEUE#sales\#eu#09223372036854775815"));
    assert_eq!(ticket["GSI1SK"], s("t#1"), "made of the key: unchanged");
    ok(
        &app,
        update,
        json!({ "input": { "id": id, "title": "Refund, urgent" } }),
    )
    .await;
    let later = raw(&app, "Desk", r"ITEM#t\#1", r"ITEM#t\#1").await.unwrap();
    assert_eq!(later["GSI1PK"], ticket["GSI1PK"], "no facet changed");
}

#[tokio::test]
async fn an_item_of_another_type_under_the_same_key_is_neither_updated_nor_deleted() {
    let app = desk().await;
    let note = ok(
        &app,
        "mutation { createNote(input: { key: \"n1\", text: \"Call back\" }) { note { id } } }",
        json!({}),
    )
    .await;
    let note_id = note["createNote"]["note"]["id"].clone();
    let stored = raw(&app, "Desk", "ITEM#n1", "ITEM#n1").await.unwrap();
    assert_eq!(stored["_type"], s("Note"));
    assert!(!stored.contains_key("GSI1PK"), "a note has no index key");

    // The note's key fits a ticket's templates too: only the type attribute tells them apart.
    let as_ticket = retagged(&note_id, "N", "T");
    let before = snapshot(&app, "Desk").await;
    refused(
        &app,
        "mutation($input: UpdateTicketInput!) { updateTicket(input: $input) { ticket { title } } }",
        json!({ "input": { "id": as_ticket, "title": "Hijacked" } }),
        "No ticket has this id.",
    )
    .await;
    refused(
        &app,
        "mutation($id: ID!) { deleteTicket(input: { id: $id }) { deletedTicketId } }",
        json!({ "id": as_ticket }),
        "No ticket has this id.",
    )
    .await;
    refused(
        &app,
        "mutation { createTicket(input: { key: \"n1\", queue: \"q\", priority: 1, title: \"T\" }) { ticket { id } } }",
        json!({}),
        "A ticket with this `key` already exists.",
    )
    .await;
    assert_eq!(snapshot(&app, "Desk").await, before, "nothing was written");

    let deleted = ok(
        &app,
        "mutation($id: ID!) { deleteNote(input: { id: $id }) { deletedNoteId } }",
        json!({ "id": note_id }),
    )
    .await;
    assert_eq!(deleted["deleteNote"]["deletedNoteId"], note_id);
    assert!(snapshot(&app, "Desk").await.is_empty());
}
