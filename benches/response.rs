//! The server's own work for one 100-edge page of `User.purchases`, without DynamoDB, on the
//! shop model:
//! - `page_100/items`: DynamoDB items to keys (what the store does with a Query's answer);
//! - `page_100/seal`: rows to a page with 100 sealed cursors;
//! - `page_100/fields`: the page's four selected fields converted from attributes to GraphQL
//!   values, as the generated field resolvers do;
//! - `page_100/serialize`: a 100-edge response to the JSON bytes sent to the client;
//! - `page_100/type_orders`: on the single-table example, 100 orders (as `scripts/bench` seeds
//!   them) typed among the members of the item collection `Customer.activity`, and each one's
//!   `placedAt` read (a facet of the sort key): what a shared table adds to a page;
//! - `document/parse` and `document/cached`: the page query of `scripts/bench` parsed and checked
//!   against the query limits, against taken from the document cache;
//! - `answer/query_21_sdk` and `answer/query_21_reader`: the JSON of a Query's answer of 21
//!   purchases (the shop page's, with `ConsumedCapacity` and `LastEvaluatedKey`) read into the
//!   SDK's output by the SDK's own deserialiser, against the fast response reader
//!   (`dynamo::response_reader`) that the server reads answers with;
//! - `schema/build_50_entities`: a model of 50 entities and 200 connections checked and built
//!   into an executable schema (what `serve` does at start-up).
//!
//! Run: `cargo bench --bench response`.

use std::{fmt::Write, hint::black_box, path::Path};

use async_graphql::{Name, Value, indexmap::IndexMap};
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::types::AttributeValue;
use criterion::{Criterion, criterion_group, criterion_main};
use dynarelay::{
    cursor::{Binding, CursorCodec, Key, KeyRing, KeyValue},
    dynamo::{Item, Row, response_reader::Read},
    graphql::{build_schema, connection::seal, documents::Documents, limits::QueryLimits, values},
    model::{self, Model},
    pagination::{Direction, Page, PageLimits},
};

const USER_ID: &str = "0b0c3d1e-6a2f-4c55-9e8e-1f2a3b4c5d6e";
const EDGES: i64 = 100;

/// The query `benches/compare.rs` pages with.
const PAGE_QUERY: &str = "query($u: String!, $after: String, $status: PurchaseStatus) {
  user(userId: $u) { purchases(first: 20, after: $after, status: $status) {
    edges { cursor node { purchasedAt amount status quantity } }
    pageInfo { hasNextPage endCursor } } } }";

fn shop() -> &'static Model {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/shop/dynarelay.toml");
    Box::leak(Box::new(
        model::load(Path::new(path)).expect("the shop model"),
    ))
}

fn items() -> Vec<Item> {
    (0..EDGES)
        .map(|i| {
            Item::from([
                ("userId".to_owned(), AttributeValue::S(USER_ID.to_owned())),
                (
                    "purchasedAt".to_owned(),
                    AttributeValue::N((1_672_531_200_123 + i * 60_000).to_string()),
                ),
                ("sku".to_owned(), AttributeValue::S("SKU-00042".to_owned())),
                ("quantity".to_owned(), AttributeValue::N("2".to_owned())),
                (
                    "amount".to_owned(),
                    AttributeValue::N(format!("{}.99", 10 + i)),
                ),
                ("status".to_owned(), AttributeValue::S("PAID".to_owned())),
            ])
        })
        .collect()
}

/// A Query's answer of 21 of the shop's purchases, as DynamoDB sends it for the page.
fn query_answer() -> Vec<u8> {
    let items: Vec<String> = (0..21)
        .map(|i| {
            format!(
                r#"{{"amount":{{"N":"{}.99"}},"quantity":{{"N":"2"}},"purchasedAt":{{"N":"{}"}},"status":{{"S":"PAID"}},"userId":{{"S":"{USER_ID}"}}}}"#,
                10 + i,
                1_672_531_200_123_i64 + i * 60_000
            )
        })
        .collect();
    format!(
        r#"{{"ConsumedCapacity":{{"CapacityUnits":1.5,"TableName":"Purchases"}},"Count":21,"Items":[{}],"LastEvaluatedKey":{{"purchasedAt":{{"N":"1672532400123"}},"userId":{{"S":"{USER_ID}"}}}},"ScannedCount":21}}"#,
        items.join(",")
    )
    .into_bytes()
}

fn ecommerce() -> &'static Model {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/ecommerce/dynarelay.toml"
    );
    Box::leak(Box::new(
        model::load(Path::new(path)).expect("the single-table example"),
    ))
}

/// Orders of one customer, with every attribute `scripts/bench` seeds them with.
fn orders() -> Vec<Item> {
    let s = |v: String| AttributeValue::S(v);
    (0..EDGES)
        .map(|i| {
            let at = format!("2023-01-01T00:{:02}:{:02}.000Z", i / 60, i % 60);
            let id = format!("O{i:06}");
            Item::from([
                ("PK".to_owned(), s("CUSTOMER#user-00042".to_owned())),
                ("SK".to_owned(), s(format!("ORDER#{at}#{id}"))),
                ("GSI1PK".to_owned(), s(format!("ORDER#{id}"))),
                ("GSI1SK".to_owned(), s(format!("ORDER#{id}"))),
                ("GSI2PK".to_owned(), s("STATUS#PLACED".to_owned())),
                ("GSI2SK".to_owned(), s(format!("{at}#{id}"))),
                ("username".to_owned(), s("user-00042".to_owned())),
                ("orderId".to_owned(), s(id)),
                ("placedAt".to_owned(), s(at)),
                ("status".to_owned(), s("PLACED".to_owned())),
                ("total".to_owned(), AttributeValue::N(format!("{i}.99"))),
                ("itemCount".to_owned(), AttributeValue::N("1".to_owned())),
            ])
        })
        .collect()
}

fn rows(items: &[Item], model: &Model) -> Vec<Row<Item>> {
    let shape = model.tables[2].key;
    items
        .iter()
        .map(|item| Row {
            key: Key::from_item(item, shape).expect("key"),
            record: item.clone(),
            kind: None,
        })
        .collect()
}

/// A model of `entities` entities over one table each, with four connections each.
fn big_model(entities: usize) -> String {
    let mut text = String::from("version = 1\n");
    for e in 0..entities {
        let _ = write!(
            text,
            "[tables.Table{e}]\npartition_key = \"pk\"\nsort_key = \"sk\"\nattributes = {{ pk = \"S\", sk = \"N\", gpk = \"S\" }}\n\
             [tables.Table{e}.indexes.ByG]\npartition_key = \"gpk\"\nsort_key = \"sk\"\n\
             [entities.E{e}]\ntable = \"Table{e}\"\n\
             [entities.E{e}.fields]\npk = {{ type = \"String!\" }}\nsk = {{ type = \"Int!\" }}\ngpk = {{ type = \"String\" }}\n\
             label = {{ type = \"String\" }}\nat = {{ type = \"DateTime\" }}\n\
             [entities.E{e}.connections.siblings]\nentity = \"E{e}\"\npartition = {{ field = \"pk\" }}\nsort.min = \"from\"\n\
             filters.label = {{ field = \"label\", op = \"=\" }}\n\
             [entities.E{e}.connections.group]\nentity = \"E{e}\"\nindex = \"ByG\"\npartition = {{ field = \"pk\" }}\n\
             [connections.e{e}ByPk]\nentity = \"E{e}\"\npartition = {{ argument = \"pk\" }}\n\
             [connections.e{e}All]\nentity = \"E{e}\"\nscan = true\n\
             [lookups.e{e}]\nentity = \"E{e}\"\n"
        );
    }
    text
}

fn bench(c: &mut Criterion) {
    let ring: KeyRing = "1:KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio"
        .parse()
        .expect("key ring");
    let codec = CursorCodec::new(&ring);
    let model = shop();
    let items = items();
    let binding = Binding::builder("User.purchases", "Purchases", None)
        .fixed("userId", KeyValue::S(USER_ID.into()))
        .finish();

    c.bench_function("page_100/items", |b| {
        b.iter(|| rows(black_box(&items), model))
    });
    let page = |rows: Vec<Row<Item>>| Page {
        rows,
        has_next_page: true,
        has_previous_page: false,
        direction: Direction::Forward,
        resume: None,
    };
    let ready = rows(&items, model);
    c.bench_function("page_100/seal", |b| {
        b.iter(|| seal(page(ready.clone()), None, &codec, black_box(&binding)))
    });
    let purchase = &model.entities[2];
    let selected: Vec<_> = ["purchasedAt", "amount", "status", "quantity"]
        .iter()
        .map(|name| {
            purchase
                .fields
                .iter()
                .find(|f| f.name == *name)
                .expect("a Purchase field")
        })
        .collect();
    c.bench_function("page_100/fields", |b| {
        b.iter(|| {
            for item in black_box(&items) {
                for field in &selected {
                    black_box(values::output(model, field, item.get(&field.attribute)).ok());
                }
            }
        })
    });

    let shared = ecommerce();
    let orders = orders();
    let members: Vec<_> = ["Customer", "Address", "Order"]
        .iter()
        .map(|name| shared.entity_named(name).expect("a member"))
        .collect();
    let order = members[2];
    let placed_at = shared.entities[order]
        .fields
        .iter()
        .position(|f| f.name == "placedAt")
        .expect("Order.placedAt");
    c.bench_function("page_100/type_orders", |b| {
        b.iter(|| {
            for item in black_box(&orders) {
                let entity = values::entity_of(shared, &members, item);
                assert_eq!(entity, Some(order));
                black_box(values::field_value(shared, order, placed_at, item));
            }
        })
    });

    let sealed = seal(page(ready), None, &codec, &binding);
    let edges: Vec<Value> = sealed
        .edges
        .iter()
        .map(|edge| {
            let node: IndexMap<Name, Value> = selected
                .iter()
                .map(|f| {
                    let v = values::output(model, f, edge.item.get(&f.attribute))
                        .expect("fits")
                        .unwrap_or(Value::Null);
                    (Name::new(&f.name), v)
                })
                .collect();
            Value::Object(IndexMap::from([
                (Name::new("cursor"), Value::String(edge.cursor.clone())),
                (Name::new("node"), Value::Object(node)),
            ]))
        })
        .collect();
    let response = async_graphql::Response::new(Value::Object(IndexMap::from([(
        Name::new("page"),
        Value::Object(IndexMap::from([(Name::new("edges"), Value::List(edges))])),
    )])));
    c.bench_function("page_100/serialize", |b| {
        b.iter(|| serde_json::to_vec(black_box(&response)).expect("JSON"))
    });

    let answer = query_answer();
    let http = || {
        aws_smithy_runtime_api::http::Response::new(
            aws_smithy_runtime_api::http::StatusCode::try_from(200).expect("a status"),
            aws_smithy_types::body::SdkBody::from(answer.clone()),
        )
    };
    let (sdk, fast) = (
        Read::Query.by_the_sdk(&http()).expect("the SDK reads it"),
        Read::Query.read(&answer).expect("the reader reads it"),
    );
    assert_eq!(
        sdk.downcast::<QueryOutput>().ok(),
        fast.downcast::<QueryOutput>().ok()
    );
    let response = http();
    c.bench_function("answer/query_21_sdk", |b| {
        b.iter(|| Read::Query.by_the_sdk(black_box(&response)).expect("read"))
    });
    c.bench_function("answer/query_21_reader", |b| {
        b.iter(|| Read::Query.read(black_box(&answer)).expect("read"))
    });

    let uncached = Documents::new(QueryLimits::default(), 0);
    c.bench_function("document/parse", |b| {
        b.iter(|| uncached.prepare(black_box(PAGE_QUERY)).expect("document"))
    });
    let cached = Documents::new(QueryLimits::default(), 64 * 1024);
    cached.prepare(PAGE_QUERY).expect("document");
    c.bench_function("document/cached", |b| {
        b.iter(|| cached.prepare(black_box(PAGE_QUERY)).expect("document"))
    });

    let text = big_model(50);
    let parsed = model::parse("big.toml", &text).expect("the big model is valid");
    assert_eq!(parsed.entities.len(), 50);
    let connections: usize = parsed.connections.len()
        + parsed
            .entities
            .iter()
            .map(|e| e.connections.len())
            .sum::<usize>();
    assert_eq!(connections, 200);
    let mut group = c.benchmark_group("schema");
    group.sample_size(20);
    // Checking leaks a little per run (key shapes live as long as their model), so few samples.
    group.bench_function("check_50_entities", |b| {
        b.iter(|| model::parse("big.toml", black_box(&text)).expect("valid"))
    });
    let model: &'static Model = Box::leak(Box::new(parsed));
    group.bench_function("build_50_entities", |b| {
        b.iter(|| {
            build_schema(
                model,
                PageLimits::default(),
                codec.clone(),
                QueryLimits::default(),
            )
            .expect("schema")
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
