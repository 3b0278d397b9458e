//! The fast response reader (`src/dynamo/response_reader.rs`) on DynamoDB Local's own answers:
//! items of every attribute type, read by `GetItem` (found and not), `Query` (a page with a
//! `LastEvaluatedKey`, a filtered page, an index's page, capacity in total and by index) and
//! `BatchGetItem`. Each answer's bytes, taken as the SDK received them, are read by the reader
//! (it must not give way on any) into what the SDK's own deserialiser makes of them; and the
//! same calls through a client with the reader (as every store has) return the outputs the
//! SDK's client returns.

use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::{
    Client,
    config::{Intercept, RuntimeComponents, interceptors::FinalizerInterceptorContextRef},
    operation::{
        RequestId as _, batch_get_item::BatchGetItemOutput, get_item::GetItemOutput,
        query::QueryOutput,
    },
    primitives::Blob,
    types::{
        AttributeDefinition, AttributeValue, GlobalSecondaryIndex, KeySchemaElement, KeyType,
        KeysAndAttributes, Projection, ProjectionType, ReturnConsumedCapacity, ScalarAttributeType,
    },
};
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_types::config_bag::ConfigBag;
use dynarelay::dynamo::{
    Item,
    response_reader::{Read, reading_fast},
};

use crate::helpers::{control_client, unique_prefix};

/// An operation's name and the body of its answer.
type Answer = (String, Vec<u8>);

/// Keeps the body of every successful answer, with the operation's name.
#[derive(Debug, Clone, Default)]
struct Bodies(Arc<Mutex<Vec<Answer>>>);

impl Intercept for Bodies {
    fn name(&self) -> &'static str {
        "Bodies"
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        if let (Some(response), Some(metadata)) = (context.response(), cfg.load::<Metadata>())
            && response.status().is_success()
            && let Some(body) = response.body().bytes()
        {
            self.0
                .lock()
                .unwrap()
                .push((metadata.name().to_owned(), body.to_vec()));
        }
        Ok(())
    }
}

/// An item with every attribute type DynamoDB has, nested, with text that JSON escapes.
fn every_type(pk: &str, sk: i64) -> Item {
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let n = |v: &str| AttributeValue::N(v.to_owned());
    Item::from([
        ("pk".to_owned(), s(pk)),
        ("sk".to_owned(), n(&sk.to_string())),
        ("group".to_owned(), s("g")),
        ("rank".to_owned(), n(&sk.to_string())),
        (
            "text".to_owned(),
            s("\"quoted\" \\ back/slash\n\t\u{1}é \u{1F600} 漢字"),
        ),
        (
            "big".to_owned(),
            n("-12345678901234567890123456789012345678"),
        ),
        (
            "small".to_owned(),
            n("0.000000000000000000000000000000000001"),
        ),
        (
            "bytes".to_owned(),
            AttributeValue::B(Blob::new(vec![0xfb, 0xff, 0xbf, 0, 1, 2])),
        ),
        ("yes".to_owned(), AttributeValue::Bool(true)),
        ("nothing".to_owned(), AttributeValue::Null(true)),
        (
            "tags".to_owned(),
            AttributeValue::Ss(vec!["a".to_owned(), "b/\"c\"".to_owned()]),
        ),
        (
            "scores".to_owned(),
            AttributeValue::Ns(vec!["1".to_owned(), "-2.5".to_owned(), "1E+10".to_owned()]),
        ),
        (
            "blobs".to_owned(),
            AttributeValue::Bs(vec![Blob::new(vec![0xff; 7]), Blob::new(b"+/=".to_vec())]),
        ),
        (
            "nested".to_owned(),
            AttributeValue::M(Item::from([
                (
                    "list".to_owned(),
                    AttributeValue::L(vec![
                        s(""),
                        n("7"),
                        AttributeValue::M(Item::new()),
                        AttributeValue::L(Vec::new()),
                        AttributeValue::Null(true),
                    ]),
                ),
                (
                    "name with \"quotes\"".to_owned(),
                    AttributeValue::Bool(false),
                ),
            ])),
        ),
    ])
}

async fn create_table(client: &Client, table: &str) {
    let key = |name: &str, kind| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(kind)
            .build()
            .unwrap()
    };
    let attribute = |name: &str, kind| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(kind)
            .build()
            .unwrap()
    };
    client
        .create_table()
        .table_name(table)
        .billing_mode(aws_sdk_dynamodb::types::BillingMode::PayPerRequest)
        .key_schema(key("pk", KeyType::Hash))
        .key_schema(key("sk", KeyType::Range))
        .attribute_definitions(attribute("pk", ScalarAttributeType::S))
        .attribute_definitions(attribute("sk", ScalarAttributeType::N))
        .attribute_definitions(attribute("group", ScalarAttributeType::S))
        .global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name("byGroup")
                .key_schema(key("group", KeyType::Hash))
                .key_schema(key("sk", KeyType::Range))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::All)
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
}

/// The reads: GetItem found and not, a Query page that stops early, a filtered page with a
/// projection, an index's page with capacity by index, a BatchGetItem. Their outputs.
async fn reads(
    client: &Client,
    table: &str,
) -> (Vec<GetItemOutput>, Vec<QueryOutput>, BatchGetItemOutput) {
    let key = |pk: &str, sk: i64| {
        Item::from([
            ("pk".to_owned(), AttributeValue::S(pk.to_owned())),
            ("sk".to_owned(), AttributeValue::N(sk.to_string())),
        ])
    };
    let mut gets = Vec::new();
    for (pk, sk) in [("p", 3), ("p", 999)] {
        gets.push(
            client
                .get_item()
                .table_name(table)
                .set_key(Some(key(pk, sk)))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .unwrap(),
        );
    }
    let pk = AttributeValue::S("p".to_owned());
    let mut queries = vec![
        client
            .query()
            .table_name(table)
            .key_condition_expression("pk = :p")
            .expression_attribute_values(":p", pk.clone())
            .limit(4)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .unwrap(),
        client
            .query()
            .table_name(table)
            .key_condition_expression("pk = :p")
            .filter_expression("#r > :s")
            .projection_expression("pk, sk, #t, nested.#l[2]")
            .expression_attribute_names("#t", "text")
            .expression_attribute_names("#r", "rank")
            .expression_attribute_names("#l", "list")
            .expression_attribute_values(":p", pk)
            .expression_attribute_values(":s", AttributeValue::N("6".to_owned()))
            .scan_index_forward(false)
            .send()
            .await
            .unwrap(),
    ];
    queries.push(
        client
            .query()
            .table_name(table)
            .index_name("byGroup")
            .key_condition_expression("#g = :g")
            .expression_attribute_names("#g", "group")
            .expression_attribute_values(":g", AttributeValue::S("g".to_owned()))
            .limit(3)
            .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
            .send()
            .await
            .unwrap(),
    );
    let batch = client
        .batch_get_item()
        .request_items(
            table,
            KeysAndAttributes::builder()
                .keys(key("p", 1))
                .keys(key("p", 2))
                .keys(key("q", 1))
                .build()
                .unwrap(),
        )
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await
        .unwrap();
    (gets, queries, batch)
}

#[tokio::test]
async fn the_reader_reads_dynamodb_s_answers_as_the_sdk_does() {
    let control = control_client();
    let table = format!("{}reader", unique_prefix());
    create_table(&control, &table).await;
    for sk in 1..=9 {
        control
            .put_item()
            .table_name(&table)
            .set_item(Some(every_type("p", sk)))
            .send()
            .await
            .unwrap();
    }
    let bodies = Bodies::default();
    let plain = Client::from_conf(
        control
            .config()
            .to_builder()
            .interceptor(bodies.clone())
            .build(),
    );
    let (gets, queries, batch) = reads(&plain, &table).await;
    assert_eq!(queries[0].items().len(), 4, "the page stops at its Limit");
    assert!(queries[0].last_evaluated_key().is_some());
    assert_eq!(queries[1].items().len(), 3, "the filter keeps 7, 8 and 9");
    assert!(gets[0].item().is_some() && gets[1].item().is_none());
    assert_eq!(batch.responses().map(|r| r[&table].len()), Some(2));

    // Every answer's bytes: read by the reader, into what the SDK made of them.
    let seen = bodies.0.lock().unwrap().clone();
    let mut by_operation = std::collections::BTreeMap::new();
    for (operation, body) in &seen {
        let read = match operation.as_str() {
            "GetItem" => Read::GetItem,
            "Query" => Read::Query,
            "BatchGetItem" => Read::BatchGetItem,
            _ => continue,
        };
        *by_operation.entry(operation.clone()).or_insert(0) += 1;
        let ours = read
            .read(body)
            .unwrap_or_else(|| panic!("the reader gave way on {}", String::from_utf8_lossy(body)));
        let response = aws_smithy_runtime_api::http::Response::new(
            aws_smithy_runtime_api::http::StatusCode::try_from(200).unwrap(),
            aws_smithy_types::body::SdkBody::from(body.clone()),
        );
        let sdk = read.by_the_sdk(&response).unwrap();
        let equal = match read {
            Read::GetItem => {
                ours.downcast::<GetItemOutput>().ok() == sdk.downcast::<GetItemOutput>().ok()
            }
            Read::Query => {
                ours.downcast::<QueryOutput>().ok() == sdk.downcast::<QueryOutput>().ok()
            }
            Read::BatchGetItem => {
                ours.downcast::<BatchGetItemOutput>().ok()
                    == sdk.downcast::<BatchGetItemOutput>().ok()
            }
        };
        assert!(equal, "{operation}: {}", String::from_utf8_lossy(body));
    }
    assert_eq!(
        by_operation,
        [("BatchGetItem", 1), ("GetItem", 2), ("Query", 3)]
            .map(|(k, v)| (k.to_owned(), v))
            .into(),
    );

    // The same reads through a client with the reader answer alike; the reader made them (its
    // outputs carry no request id, the SDK's do).
    let fast = reading_fast(&plain);
    let (fast_gets, fast_queries, fast_batch) = reads(&fast, &table).await;
    for (ours, sdk) in fast_gets.iter().zip(&gets) {
        assert_eq!(
            (ours.item(), ours.consumed_capacity()),
            (sdk.item(), sdk.consumed_capacity())
        );
        assert!(
            ours.request_id().is_none() && sdk.request_id().is_some(),
            "{:?} {:?}",
            ours.request_id(),
            sdk.request_id()
        );
    }
    for (ours, sdk) in fast_queries.iter().zip(&queries) {
        assert_eq!(
            (ours.items(), ours.count(), ours.scanned_count()),
            (sdk.items(), sdk.count(), sdk.scanned_count())
        );
        assert_eq!(ours.last_evaluated_key(), sdk.last_evaluated_key());
        assert_eq!(ours.consumed_capacity(), sdk.consumed_capacity());
        assert!(ours.request_id().is_none() && sdk.request_id().is_some());
    }
    assert_eq!(fast_batch.responses(), batch.responses());
    assert_eq!(fast_batch.unprocessed_keys(), batch.unprocessed_keys());
    assert_eq!(fast_batch.consumed_capacity(), batch.consumed_capacity());
    assert!(fast_batch.request_id().is_none());
}
