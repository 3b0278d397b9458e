//! DynamoDB's own answers, read with plain SDK Queries and Scans (never the store's code), and
//! items as another program would write them.

use aws_sdk_dynamodb::{Client, types::AttributeValue};
use dynarelay::dynamo::Item;

use super::ModelApp;

/// A ground-truth Query: a key condition on a table or index, with its names and values.
#[derive(Debug, Clone, Copy)]
pub struct GroundQuery<'a> {
    pub table: &'a str,
    pub index: Option<&'a str>,
    /// The `KeyConditionExpression`.
    pub condition: &'a str,
    /// `ExpressionAttributeNames`.
    pub names: &'a [(&'a str, &'a str)],
    /// `ExpressionAttributeValues`.
    pub values: &'a [(&'a str, AttributeValue)],
    /// `ScanIndexForward`.
    pub forward: bool,
}

/// Every item of one partition (`key` = `value`, a string) of a table or index, in DynamoDB's
/// order, read with plain SDK Queries: the ground truth for paging tests.
pub async fn query_partition(
    client: &Client,
    table: &str,
    index: Option<&str>,
    (key, value): (&str, &str),
    forward: bool,
) -> Vec<Item> {
    let values = [(":v", AttributeValue::S(value.to_owned()))];
    query_all(
        client,
        &GroundQuery {
            table,
            index,
            condition: "#k = :v",
            names: &[("#k", key)],
            values: &values,
            forward,
        },
    )
    .await
}

/// Every item a Query matches, in DynamoDB's order, read with plain SDK Queries (not the
/// store's code): the ground truth for paging tests.
pub async fn query_all(client: &Client, query: &GroundQuery<'_>) -> Vec<Item> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let mut request = client
            .query()
            .table_name(query.table)
            .set_index_name(query.index.map(str::to_owned))
            .key_condition_expression(query.condition)
            .scan_index_forward(query.forward)
            .set_exclusive_start_key(start);
        for (name, attribute) in query.names {
            request = request.expression_attribute_names(*name, *attribute);
        }
        for (name, value) in query.values {
            request = request.expression_attribute_values(*name, value.clone());
        }
        let page = request.send().await.expect("a ground-truth Query");
        items.extend(page.items().iter().cloned());
        start = page.last_evaluated_key;
        if start.is_none() {
            return items;
        }
    }
}

/// Writes `items` into `table` with plain SDK `PutItem`s, one each, as another program's code
/// would (not the store's code).
pub async fn put_plain(client: &Client, table: &str, items: impl IntoIterator<Item = Item>) {
    for item in items {
        client
            .put_item()
            .table_name(table)
            .set_item(Some(item))
            .send()
            .await
            .expect("a plain PutItem");
    }
}

/// Writes `items` (each of its own key) into `table` with plain SDK `BatchWriteItem`s, 25 at a
/// time, sending again what DynamoDB leaves unprocessed, as a bulk load would.
pub async fn put_batch(client: &Client, table: &str, items: impl IntoIterator<Item = Item>) {
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    let requests: Vec<WriteRequest> = items
        .into_iter()
        .map(|item| {
            let put = PutRequest::builder().set_item(Some(item)).build();
            WriteRequest::builder()
                .put_request(put.expect("a put request"))
                .build()
        })
        .collect();
    for batch in requests.chunks(25) {
        let mut pending = std::collections::HashMap::from([(table.to_owned(), batch.to_vec())]);
        while pending.values().any(|requests| !requests.is_empty()) {
            pending = client
                .batch_write_item()
                .set_request_items(Some(pending))
                .send()
                .await
                .expect("a plain BatchWriteItem")
                .unprocessed_items
                .unwrap_or_default();
        }
    }
}

/// Sets `table`'s stream as an operator would (`UpdateTable`): enabled with `view`, or disabled.
pub async fn set_stream(
    client: &Client,
    table: &str,
    view: Option<aws_sdk_dynamodb::types::StreamViewType>,
) {
    let mut spec =
        aws_sdk_dynamodb::types::StreamSpecification::builder().stream_enabled(view.is_some());
    if let Some(view) = view {
        spec = spec.stream_view_type(view);
    }
    client
        .update_table()
        .table_name(table)
        .stream_specification(spec.build().expect("a stream specification"))
        .send()
        .await
        .expect("UpdateTable of the stream");
}

/// Every item of a table in Scan order, read with plain SDK Scans.
pub async fn scan_all(client: &Client, table: &str) -> Vec<Item> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("a ground-truth Scan");
        items.extend(page.items().iter().cloned());
        start = page.last_evaluated_key;
        if start.is_none() {
            return items;
        }
    }
}

/// A sort-key condition for [`ground_truth`]: a range (either bound optional, both inclusive)
/// or a prefix.
pub enum SortCond {
    Range(Option<AttributeValue>, Option<AttributeValue>),
    Prefix(AttributeValue),
}

/// DynamoDB's own answer: every item of one partition matching the sort-key condition, in
/// its order.
pub async fn ground_truth(
    app: &ModelApp,
    table: &str,
    index: Option<&str>,
    partition: (&str, AttributeValue),
    sort: Option<(&str, SortCond)>,
    forward: bool,
) -> Vec<Item> {
    let mut condition = "#pk = :pk".to_owned();
    let mut names = vec![("#pk", partition.0)];
    let mut values = vec![(":pk", partition.1)];
    if let Some((attribute, cond)) = sort {
        names.push(("#sk", attribute));
        match cond {
            SortCond::Range(Some(lo), Some(hi)) => {
                condition.push_str(" AND #sk BETWEEN :lo AND :hi");
                values.push((":lo", lo));
                values.push((":hi", hi));
            }
            SortCond::Range(Some(lo), None) => {
                condition.push_str(" AND #sk >= :lo");
                values.push((":lo", lo));
            }
            SortCond::Range(None, Some(hi)) => {
                condition.push_str(" AND #sk <= :hi");
                values.push((":hi", hi));
            }
            SortCond::Range(None, None) => {
                names.pop();
            }
            SortCond::Prefix(prefix) => {
                condition.push_str(" AND begins_with(#sk, :p)");
                values.push((":p", prefix));
            }
        }
    }
    app.query_all(&GroundQuery {
        table,
        index,
        condition: &condition,
        names: &names,
        values: &values,
        forward,
    })
    .await
}

/// DynamoDB's own read of `user`'s purchases in the shop under `app`, oldest first.
pub async fn user_purchases(app: &ModelApp, user: &str) -> Vec<Item> {
    ground_truth(
        app,
        &app.table("Purchases"),
        None,
        ("userId", AttributeValue::S(user.to_owned())),
        None,
        true,
    )
    .await
}

/// A `Purchases` item as another program would write it.
pub fn purchase_item(user_id: &str, purchased_at: &str, amount: &str) -> Item {
    Item::from([
        ("userId".to_owned(), AttributeValue::S(user_id.to_owned())),
        (
            "purchasedAt".to_owned(),
            AttributeValue::N(purchased_at.to_owned()),
        ),
        ("sku".to_owned(), AttributeValue::S("SKU-00001".to_owned())),
        ("quantity".to_owned(), AttributeValue::N("1".to_owned())),
        ("amount".to_owned(), AttributeValue::N(amount.to_owned())),
        ("status".to_owned(), AttributeValue::S("PAID".to_owned())),
    ])
}

/// A `Products` item as another program would write it.
pub fn product_item(sku: &str, name: &str, category: &str, price: &str) -> Item {
    Item::from([
        ("sku".to_owned(), AttributeValue::S(sku.to_owned())),
        ("name".to_owned(), AttributeValue::S(name.to_owned())),
        (
            "category".to_owned(),
            AttributeValue::S(category.to_owned()),
        ),
        ("price".to_owned(), AttributeValue::N(price.to_owned())),
    ])
}

/// A user item as the tests write it: `User {id}`, `{id}@example.com`.
pub fn user_item(user_id: &str) -> Item {
    Item::from([
        ("userId".to_owned(), AttributeValue::S(user_id.to_owned())),
        (
            "name".to_owned(),
            AttributeValue::S(format!("User {user_id}")),
        ),
        (
            "email".to_owned(),
            AttributeValue::S(format!("{user_id}@example.com")),
        ),
        (
            "createdAt".to_owned(),
            AttributeValue::N("1672531200000".to_owned()),
        ),
    ])
}
