//! Data written by other tools, with their own npm libraries (pinned in
//! `tests/clients/package-lock.json`) or, for Amplify, as its resolvers write it, served from the
//! model in `examples/<tool>/` with no migration. Each writer in `tests/clients/writers/` writes a data set with boundary partition
//! sizes (0, 1, 20, 21, 100, 250), ties on the index sort keys and values holding separators,
//! uppercase, spaces and unicode, then reads it back through the library's own queries: that
//! is the ground truth every connection is walked against, at every page size, both ways.

pub(crate) mod amplify;
mod amplify_live;
mod books;
pub(crate) mod changes;
mod electrodb;
mod onetable;
mod onetable_live;
mod toolbox;
mod toolbox_live;

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, SecondsFormat};
use serde_json::Value;

use crate::helpers::{ModelApp, all_nodes};

/// Every node of the Scan connection `field` (selecting `selection`), read to its end at 1, 7,
/// 20 and 100 items a page (Scans read forward only), each size giving the same nodes; sorted
/// by the text at `key`.
async fn scanned(app: &ModelApp, field: &str, selection: &str, key: &str) -> Vec<Value> {
    let query = format!(
        "query($first: Int, $after: String) {{ {field}(first: $first, after: $after) {{
           nodes {{ {selection} }} pageInfo {{ hasNextPage endCursor }} }} }}"
    );
    let mut first: Option<Vec<Value>> = None;
    for size in [1, 7, 20, 100] {
        let mut nodes = all_nodes(|paging| app.graphql(&query, paging), &[field], size).await;
        nodes.sort_by_key(|n| text(n, key));
        match &first {
            None => first = Some(nodes),
            Some(earlier) => assert_eq!(&nodes, earlier, "{field}, {size} a page"),
        }
    }
    first.unwrap_or_default()
}

/// Two times every item of a table holds (a tool's creation and change stamps), as the API
/// writes times, by the item's key (`keys`: partition and sort key attributes), from a plain
/// Scan. Items without them (items of no entity) are left out.
async fn stamps(
    app: &ModelApp,
    table: &str,
    keys: [&str; 2],
    names: [&str; 2],
) -> HashMap<(String, String), (String, String)> {
    let time = |value: &AttributeValue| match value {
        AttributeValue::S(text) => text.clone(),
        AttributeValue::N(millis) => DateTime::from_timestamp_millis(millis.parse().unwrap())
            .unwrap()
            .to_rfc3339_opts(SecondsFormat::Millis, true),
        other => panic!("not a time: {other:?}"),
    };
    let key = |item: &dynarelay::dynamo::Item, name: &str| item[name].as_s().unwrap().clone();
    app.scan_all(&app.table(table))
        .await
        .iter()
        .filter(|item| item.contains_key(names[0]))
        .map(|item| {
            (
                (key(item, keys[0]), key(item, keys[1])),
                (time(&item[names[0]]), time(&item[names[1]])),
            )
        })
        .collect()
}

/// Refetches every node of `nodes` (of type `typename`, each with its `id`) by global id, with
/// `nodes(ids:)` a hundred at a time, and asserts each comes back with the `fields` it showed.
async fn refetch_all(app: &ModelApp, typename: &str, nodes: &[Value], fields: &[&str]) {
    assert!(!nodes.is_empty());
    let query = format!(
        "query($ids: [ID!]!) {{ nodes(ids: $ids) {{ ... on {typename} {{ {} }} }} }}",
        fields.join(" ")
    );
    for chunk in nodes.chunks(100) {
        let ids: Vec<&Value> = chunk.iter().map(|n| &n["id"]).collect();
        let answer = app.graphql(&query, serde_json::json!({ "ids": ids })).await;
        let want: Vec<Value> = chunk.iter().map(|n| pick(n, fields)).collect();
        assert_eq!(answer["data"]["nodes"], Value::Array(want), "{answer}");
    }
}

/// The strings at `field` of each object in `list`.
fn texts(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|v| text(v, field))
        .collect()
}

/// The string at `field` of `value`.
fn text(value: &Value, field: &str) -> String {
    value[field]
        .as_str()
        .unwrap_or_else(|| panic!("no `{field}` in {value}"))
        .to_owned()
}

/// `value` with only `fields`, for comparing a node with what a library read.
fn pick(value: &Value, fields: &[&str]) -> Value {
    fields
        .iter()
        .map(|f| ((*f).to_owned(), value[*f].clone()))
        .collect::<serde_json::Map<_, _>>()
        .into()
}
