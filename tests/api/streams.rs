//! Live data's lower layers against DynamoDB Local: a table's stream read by the process's
//! reader (every write's record in order, with its images; nothing for writes that change
//! nothing; DynamoDB Local's quirk of refusing a `LATEST` iterator on an empty shard once another
//! table is written; the reader stopping with its last subscriber), and a read's conditions
//! decided in memory ([`ReadSpec::holds`]) against DynamoDB's own answer to the same read.

use std::time::Duration;

use aws_sdk_dynamodb::{
    Client,
    primitives::Blob,
    types::{
        AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
        ScalarAttributeType, StreamSpecification, StreamViewType,
    },
};
use dynarelay::{
    cursor::{KeyAttr, KeyType as CursorKeyType},
    dynamo::{self, FilterTest, Item, ReadPlan, ReadSpec, SortKeyCondition, Store, Tables},
    metrics::Metrics,
    stream::{Change, Event, StreamSettings, Streams, Subscription},
};

use crate::helpers::{control_client, endpoint, put_plain, unique_prefix};

/// Longest wait for one record: far beyond DynamoDB Local's few milliseconds, so that a slow
/// machine never fails the test; a missing record still fails it.
const WAIT: Duration = Duration::from_secs(60);

static KEY: [KeyAttr; 2] = [
    KeyAttr {
        name: "pk",
        ty: CursorKeyType::S,
    },
    KeyAttr {
        name: "sk",
        ty: CursorKeyType::S,
    },
];

/// A table keyed `pk`/`sk` (strings), with a stream of both images when `stream`, created
/// through [`control_client`] (DynamoDB Local can take seconds under a loaded suite).
async fn create_table(name: &str, stream: bool) {
    let mut request = control_client()
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key_element("pk", KeyType::Hash))
        .key_schema(key_element("sk", KeyType::Range))
        .attribute_definitions(attribute("pk"))
        .attribute_definitions(attribute("sk"));
    if stream {
        request = request.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewAndOldImages)
                .build()
                .unwrap(),
        );
    }
    request.send().await.unwrap();
}

fn key_element(name: &str, ty: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(ty)
        .build()
        .unwrap()
}

fn attribute(name: &str) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .unwrap()
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn n(v: &str) -> AttributeValue {
    AttributeValue::N(v.to_owned())
}

fn item(pk: &str, sk: &str, rest: &[(&str, AttributeValue)]) -> Item {
    let mut item = Item::from([("pk".to_owned(), s(pk)), ("sk".to_owned(), s(sk))]);
    item.extend(rest.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    item
}

async fn put(client: &Client, table: &str, item: Item) {
    put_plain(client, table, [item]).await;
}

async fn delete(client: &Client, table: &str, pk: &str, sk: &str) {
    client
        .delete_item()
        .table_name(table)
        .key("pk", s(pk))
        .key("sk", s(sk))
        .send()
        .await
        .unwrap();
}

fn streams(client: &Client) -> Streams {
    Streams::new(
        client.clone(),
        dynamo::streams_client_for_local(&endpoint()),
        StreamSettings {
            poll_interval: Duration::from_millis(50),
            ..StreamSettings::default()
        },
        std::sync::Arc::new(Metrics::new()),
    )
}

async fn next_change(subscription: &mut Subscription) -> Change {
    match tokio::time::timeout(WAIT, subscription.next()).await {
        Ok(Some(Event::Change(change))) => (*change).clone(),
        other => panic!("expected a change, got {other:?}"),
    }
}

/// Orders two sequence numbers (decimal digits, no leading zeros) by value.
fn sequence_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

#[tokio::test]
async fn every_write_that_changes_an_item_arrives_once_in_order_with_both_images() {
    let client = dynamo::client_for_local(&endpoint());
    let table = format!("{}Live", unique_prefix());
    create_table(&table, true).await;
    // Written before the subscription: never delivered.
    put(&client, &table, item("p", "before", &[("v", n("0"))])).await;
    let streams = streams(&client);
    let mut subscription = streams.subscribe(&table);
    tokio::time::timeout(WAIT, subscription.ready())
        .await
        .unwrap();

    put(&client, &table, item("p", "a", &[("v", n("1.50"))])).await;
    client
        .update_item()
        .table_name(&table)
        .key("pk", s("p"))
        .key("sk", s("a"))
        .update_expression("SET v = :v, w = :w")
        .expression_attribute_values(":v", n("2"))
        .expression_attribute_values(":w", AttributeValue::Bs(vec![Blob::new(vec![1, 2])]))
        .send()
        .await
        .unwrap();
    // Writes that change nothing leave no record: the same item again, and a missing key
    // deleted.
    let same = item(
        "p",
        "a",
        &[
            ("v", n("2")),
            ("w", AttributeValue::Bs(vec![Blob::new(vec![1, 2])])),
        ],
    );
    put(&client, &table, same.clone()).await;
    delete(&client, &table, "p", "missing").await;
    delete(&client, &table, "p", "a").await;
    put(&client, &table, item("q", "b", &[("v", s("last"))])).await;

    let inserted = next_change(&mut subscription).await;
    assert_eq!(inserted.table.as_ref(), table);
    assert_eq!(inserted.keys, item("p", "a", &[]));
    assert_eq!(inserted.old, None);
    // Numbers as DynamoDB normalised them.
    assert_eq!(inserted.new, Some(item("p", "a", &[("v", n("1.5"))])));
    let modified = next_change(&mut subscription).await;
    assert_eq!(modified.old, inserted.new);
    assert_eq!(modified.new, Some(same.clone()));
    let removed = next_change(&mut subscription).await;
    assert_eq!(removed.old, Some(same));
    assert_eq!(removed.new, None);
    let last = next_change(&mut subscription).await;
    assert_eq!(last.keys, item("q", "b", &[]));
    for pair in [&inserted, &modified, &removed, &last].windows(2) {
        assert_eq!(
            sequence_order(&pair[0].sequence, &pair[1].sequence),
            std::cmp::Ordering::Less,
            "sequence numbers grow: {} then {}",
            pair[0].sequence,
            pair[1].sequence
        );
    }

    // A second subscriber joins the running reader and gets what follows.
    let mut second = streams.subscribe(&table);
    tokio::time::timeout(WAIT, second.ready()).await.unwrap();
    put(&client, &table, item("q", "c", &[])).await;
    assert_eq!(
        next_change(&mut subscription).await.keys,
        item("q", "c", &[])
    );
    assert_eq!(next_change(&mut second).await.keys, item("q", "c", &[]));
    assert_eq!(streams.running(), 1, "one reader per table");

    // With its last subscriber gone, the reader stops.
    drop((subscription, second));
    put(&client, &table, item("q", "d", &[])).await;
    tokio::time::timeout(WAIT, async {
        while streams.running() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the reader stops once nobody listens");
}

#[tokio::test]
async fn an_empty_shard_read_from_its_end_survives_writes_to_other_tables() {
    let client = dynamo::client_for_local(&endpoint());
    let prefix = unique_prefix();
    let (quiet, busy) = (format!("{prefix}Quiet"), format!("{prefix}Busy"));
    create_table(&quiet, true).await;
    create_table(&busy, true).await;
    let streams = streams(&client);
    let mut subscription = streams.subscribe(&quiet);
    tokio::time::timeout(WAIT, subscription.ready())
        .await
        .unwrap();
    // DynamoDB Local then refuses the quiet shard's `LATEST` iterator as trimmed.
    for i in 0..5 {
        put(&client, &busy, item("p", &i.to_string(), &[])).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    put(&client, &quiet, item("p", "first", &[])).await;
    put(&client, &quiet, item("p", "second", &[])).await;
    assert_eq!(
        next_change(&mut subscription).await.keys,
        item("p", "first", &[])
    );
    assert_eq!(
        next_change(&mut subscription).await.keys,
        item("p", "second", &[])
    );
}

#[tokio::test]
async fn a_table_without_a_stream_ends_its_subscriptions() {
    let client = dynamo::client_for_local(&endpoint());
    let table = format!("{}Still", unique_prefix());
    create_table(&table, false).await;
    let streams = streams(&client);
    let mut subscription = streams.subscribe(&table);
    let end = tokio::time::timeout(WAIT, subscription.next())
        .await
        .unwrap();
    assert_eq!(end, None);
    assert_eq!(streams.running(), 0);
}

/// Items of every kind of value in one partition, and one in another.
fn varied_items() -> Vec<Item> {
    let values: Vec<Option<AttributeValue>> = vec![
        None,
        Some(s("")),
        Some(s("a")),
        Some(s("ab")),
        Some(s("abc")),
        Some(s("b")),
        Some(s("m")),
        Some(s("z")),
        Some(s("é")),
        Some(n("-1")),
        Some(n("0")),
        Some(n("2")),
        Some(n("3")),
        Some(n("5")),
        Some(n("5.000")),
        Some(n("12345678901234567890123456789012345678")),
        Some(AttributeValue::B(Blob::new(vec![0]))),
        Some(AttributeValue::B(Blob::new(vec![0x61, 0x62]))),
        Some(AttributeValue::Bool(true)),
        Some(AttributeValue::Null(true)),
        Some(AttributeValue::Ss(vec!["a".to_owned(), "b".to_owned()])),
        Some(AttributeValue::Ns(vec!["3".to_owned(), "7".to_owned()])),
        Some(AttributeValue::L(vec![n("3"), s("b")])),
        Some(AttributeValue::M(Item::from([("x".to_owned(), s("a"))]))),
    ];
    let mut items: Vec<Item> = values
        .into_iter()
        .enumerate()
        .map(|(i, value)| {
            let mut it = item("p", &format!("item#{i:02}"), &[]);
            if let Some(value) = value {
                it.insert("a".to_owned(), value);
            }
            it
        })
        .collect();
    items.push(item("p", "other", &[("a", s("a"))]));
    items.push(item("q", "item#00", &[("a", s("a"))]));
    items
}

fn sort_key(item: &Item) -> String {
    match &item["sk"] {
        AttributeValue::S(sk) => sk.clone(),
        other => panic!("a sort key {other:?}"),
    }
}

#[tokio::test]
async fn a_read_decided_in_memory_holds_what_dynamodb_returns() {
    let client = dynamo::client_for_local(&endpoint());
    let table = format!("{}Holds", unique_prefix());
    create_table(&table, false).await;
    let items = varied_items();
    for it in &items {
        put(&client, &table, it.clone()).await;
    }
    let store = Store::new(client.clone(), Tables::default());
    let sorts = [
        None,
        Some(SortKeyCondition::Range(
            Some(s("item#05")),
            Some(s("item#15")),
        )),
        Some(SortKeyCondition::Range(None, Some(s("item#03")))),
        Some(SortKeyCondition::Range(Some(s("item#2")), None)),
        Some(SortKeyCondition::Prefix(s("item#1"))),
        Some(SortKeyCondition::Prefix(s("o"))),
    ];
    let operands = [
        s("ab"),
        s("b"),
        n("3"),
        n("5"),
        AttributeValue::B(Blob::new(vec![0x61])),
    ];
    let mut filters: Vec<Vec<FilterTest>> = vec![
        vec![],
        vec![FilterTest::Exists(true)],
        vec![FilterTest::Exists(false)],
        vec![FilterTest::In(vec![s("a"), n("5"), s("z")])],
    ];
    for operand in &operands {
        for op in ["=", "<>", "<", "<=", ">", ">="] {
            filters.push(vec![FilterTest::Compare(op, operand.clone())]);
        }
        // DynamoDB refuses `begins_with` on a number operand, and so does the model.
        if !matches!(operand, AttributeValue::N(_)) {
            filters.push(vec![FilterTest::BeginsWith(operand.clone())]);
        }
        filters.push(vec![FilterTest::Contains(operand.clone())]);
    }
    filters.push(vec![
        FilterTest::Compare(">=", s("a")),
        FilterTest::Compare("<", s("b")),
    ]);
    let mut checked = 0;
    for partition in ["p", "q"] {
        for sort in &sorts {
            for tests in &filters {
                let spec = ReadSpec {
                    table: &table,
                    index: None,
                    shape: &KEY,
                    partition: Some(("pk", s(partition))),
                    sort: sort.clone().map(|condition| ("sk", condition)),
                    filters: tests.iter().map(|test| ("a", test.clone())).collect(),
                    expected: Vec::new(),
                    keep: None,
                    projection: None,
                    consistent: false,
                };
                // Compared by sort key: DynamoDB returns numbers normalised (`5.000` as `5`).
                let mut expected: Vec<String> = items
                    .iter()
                    .filter(|it| spec.holds(it).is_some())
                    .map(sort_key)
                    .collect();
                let read = store
                    .read_page(
                        spec.clone(),
                        ReadPlan {
                            start: None,
                            ascending: true,
                            want: 1000,
                            budget: 1000,
                        },
                    )
                    .await
                    .unwrap_or_else(|err| panic!("{sort:?} {tests:?}: {err:?}"));
                let mut got: Vec<String> =
                    read.rows.iter().map(|row| sort_key(&row.record)).collect();
                got.sort();
                expected.sort();
                assert_eq!(
                    got, expected,
                    "partition {partition}, sort {sort:?}, filters {tests:?}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 300);
}
