//! `tables create` and `seed` against DynamoDB Local.

use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use dynarelay::dynamo::{
    Store, Tables,
    tables::{TableOutcome, create_missing},
};
use serde_json::json;

use crate::{
    helpers::{ShopTables, TestApp, control_client, set_stream, shop, unique_prefix},
    shop_data,
};

/// The shop's table names under a fresh prefix: as the store knows them, and by role.
fn fresh_tables() -> (Tables, ShopTables) {
    let prefix = unique_prefix();
    (
        Tables::new(shop(), &prefix),
        ShopTables::with_prefix(&prefix),
    )
}

#[tokio::test]
async fn creating_tables_twice_is_safe_and_builds_every_index() {
    let client = control_client();
    let (names, tables) = fresh_tables();
    let first = create_missing(&client, shop(), &names, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(
        first.iter().all(|(_, o)| *o == TableOutcome::Created),
        "{first:?}"
    );
    let second = create_missing(&client, shop(), &names, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(
        second.iter().all(|(_, o)| *o == TableOutcome::Existed),
        "{second:?}"
    );

    for (table, index) in [
        (&tables.products, "ByCategory"),
        (&tables.purchases, "BySku"),
    ] {
        let description = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .unwrap()
            .table
            .unwrap();
        let names: Vec<_> = description
            .global_secondary_indexes()
            .iter()
            .filter_map(|i| i.index_name())
            .collect();
        assert_eq!(names, [index], "{table}");
    }
}

#[tokio::test]
async fn a_missing_index_is_added_to_an_existing_table() {
    let client = control_client();
    let (names, tables) = fresh_tables();
    client
        .create_table()
        .table_name(&tables.products)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("sku")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("sku")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let outcomes = create_missing(&client, shop(), &names, Duration::from_secs(60))
        .await
        .unwrap();
    assert!(
        outcomes.contains(&(
            tables.products.clone(),
            TableOutcome::AddedIndexes(vec!["ByCategory".to_owned()])
        )),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn a_table_with_another_key_schema_is_reported_not_reused() {
    let client = control_client();
    let (names, tables) = fresh_tables();
    client
        .create_table()
        .table_name(&tables.users)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("id")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("id")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let err = create_missing(&client, shop(), &names, Duration::from_secs(30))
        .await
        .unwrap_err();
    assert!(
        format!("{err:#}").contains("the model declares (userId)"),
        "{err:#}"
    );
}

#[tokio::test]
async fn seeded_data_pages_exactly_through_the_api() {
    let app = TestApp::spawn().await;
    let data = shop_data::generate(&shop_data::SeedSpec {
        seed: 5,
        users: 12,
        products: 10,
        categories: 3,
    });
    let store: &Store = &app.store;
    assert!(store.is_empty(&app.tables().users).await.unwrap());
    shop_data::write(store, app.tables(), &data).await.unwrap();
    assert!(!store.is_empty(&app.tables().users).await.unwrap());

    // The fourth user has 21 purchases: a full default page, then one.
    let user = &data.users[3].user_id;
    let query = "query($u: String!, $after: String) { user(userId: $u) { purchases(after: $after) {
        edges { node { amount } } pageInfo { hasNextPage endCursor } } } }";
    let first = app.graphql(query, json!({ "u": user })).await;
    let connection = &first["data"]["user"]["purchases"];
    assert_eq!(connection["edges"].as_array().unwrap().len(), 20, "{first}");
    assert_eq!(connection["pageInfo"]["hasNextPage"], true);
    let second = app
        .graphql(
            query,
            json!({ "u": user, "after": connection["pageInfo"]["endCursor"] }),
        )
        .await;
    let connection = &second["data"]["user"]["purchases"];
    assert_eq!(connection["edges"].as_array().unwrap().len(), 1, "{second}");
    assert_eq!(connection["pageInfo"]["hasNextPage"], false);
    let expected_amount = data
        .purchases
        .iter()
        .rfind(|p| &p.user_id == user)
        .unwrap()
        .amount
        .to_string();
    assert_eq!(connection["edges"][0]["node"]["amount"], expected_amount);
}

/// A live table for the mismatch test: key attributes (name, type) and global indexes
/// (name, keys, projection), created by hand as another tool would have.
async fn live_table(
    client: &aws_sdk_dynamodb::Client,
    name: &str,
    key: &[(&str, ScalarAttributeType)],
    indexes: &[(&str, &[&str], aws_sdk_dynamodb::types::ProjectionType)],
) {
    use aws_sdk_dynamodb::types::{GlobalSecondaryIndex, LocalSecondaryIndex, Projection};
    let element = |i: usize, attr: &str| {
        KeySchemaElement::builder()
            .attribute_name(attr)
            .key_type(if i == 0 {
                KeyType::Hash
            } else {
                KeyType::Range
            })
            .build()
            .unwrap()
    };
    let mut request = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest);
    for (i, (attr, ty)) in key.iter().enumerate() {
        request = request.key_schema(element(i, attr)).attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(*attr)
                .attribute_type(ty.clone())
                .build()
                .unwrap(),
        );
    }
    for (index, keys, projection) in indexes {
        for attr in *keys {
            if !key.iter().any(|(a, _)| a == attr) {
                request = request.attribute_definitions(
                    AttributeDefinition::builder()
                        .attribute_name(*attr)
                        .attribute_type(ScalarAttributeType::S)
                        .build()
                        .unwrap(),
                );
            }
        }
        let key_schema = keys
            .iter()
            .enumerate()
            .map(|(i, a)| element(i, a))
            .collect();
        let projection = Projection::builder()
            .projection_type(projection.clone())
            .build();
        // An index named `Lsi…` is made local; every other one global.
        request = if index.starts_with("Lsi") {
            request.local_secondary_indexes(
                LocalSecondaryIndex::builder()
                    .index_name(*index)
                    .set_key_schema(Some(key_schema))
                    .projection(projection)
                    .build()
                    .unwrap(),
            )
        } else {
            request.global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(*index)
                    .set_key_schema(Some(key_schema))
                    .projection(projection)
                    .build()
                    .unwrap(),
            )
        };
    }
    request.send().await.unwrap();
}

#[tokio::test]
async fn every_kind_of_live_table_mismatch_is_reported_at_its_declaration() {
    use ScalarAttributeType::{N, S};
    use aws_sdk_dynamodb::types::ProjectionType::{All, KeysOnly};
    use dynarelay::{dynamo::tables::verify, model};
    // One table per kind of mismatch; each declaration starts on the line the test expects.
    let text = r#"version = 1
[tables.Missing]
partition_key = "id"
attributes = { id = "S" }
[tables.OtherKey]
partition_key = "id"
attributes = { id = "S" }
[tables.OtherType]
partition_key = "id"
attributes = { id = "S" }
[tables.NoIndex]
partition_key = "id"
attributes = { id = "S", g = "S" }
[tables.NoIndex.indexes.Gsi]
partition_key = "g"
[tables.IndexKey]
partition_key = "id"
attributes = { id = "S", g = "S" }
[tables.IndexKey.indexes.Gsi]
partition_key = "g"
[tables.Projection]
partition_key = "id"
attributes = { id = "S", g = "S" }
[tables.Projection.indexes.Gsi]
partition_key = "g"
[tables.Kind]
partition_key = "id"
sort_key = "s"
attributes = { id = "S", s = "S", t = "S" }
[tables.Kind.indexes.Gsi]
kind = "local"
sort_key = "t"
[tables.GlobalKind]
partition_key = "id"
sort_key = "s"
attributes = { id = "S", s = "S", t = "S" }
[tables.GlobalKind.indexes.LsiByT]
partition_key = "id"
sort_key = "t"
[tables.Fine]
partition_key = "id"
attributes = { id = "S" }
"#;
    let model: &'static model::Model =
        Box::leak(Box::new(model::parse("live.toml", text).unwrap()));
    let prefix = unique_prefix();
    let client = control_client();
    let t = |name: &str| format!("{prefix}{name}");
    live_table(&client, &t("OtherKey"), &[("key", S)], &[]).await;
    live_table(&client, &t("OtherType"), &[("id", N)], &[]).await;
    live_table(&client, &t("NoIndex"), &[("id", S)], &[]).await;
    live_table(
        &client,
        &t("IndexKey"),
        &[("id", S)],
        &[("Gsi", &["h"], All)],
    )
    .await;
    live_table(
        &client,
        &t("Projection"),
        &[("id", S)],
        &[("Gsi", &["g"], KeysOnly)],
    )
    .await;
    live_table(
        &client,
        &t("Kind"),
        &[("id", S), ("s", S)],
        &[("Gsi", &["id", "t"], All)],
    )
    .await;
    live_table(
        &client,
        &t("GlobalKind"),
        &[("id", S), ("s", S)],
        &[("LsiByT", &["id", "t"], All)],
    )
    .await;
    live_table(&client, &t("Fine"), &[("id", S)], &[]).await;

    let mismatches = verify(&client, model, &Tables::new(model, &prefix))
        .await
        .unwrap();
    let line = |offset: usize| text[..offset].matches('\n').count() + 1;
    let found: Vec<(String, usize)> = mismatches
        .iter()
        .map(|m| (m.message.clone(), line(m.span.start)))
        .collect();
    let expected = [
        (format!("table `{}` does not exist", t("Missing")), 2),
        (
            format!(
                "table `{}` has the key (key), but the model declares (id)",
                t("OtherKey")
            ),
            5,
        ),
        (
            format!(
                "key attribute `id` of table `{}` is N, but the model declares S",
                t("OtherType")
            ),
            8,
        ),
        (
            format!("table `{}` has no global index `Gsi`", t("NoIndex")),
            14,
        ),
        (
            format!(
                "index `Gsi` of table `{}` has the key (h), but the model declares (g)",
                t("IndexKey")
            ),
            19,
        ),
        (
            format!(
                "index `Gsi` of table `{}` does not project all attributes",
                t("Projection")
            ),
            24,
        ),
        (
            format!(
                "table `{}` has no local index `Gsi`, but it has a global index: leave out `kind = \"local\"`",
                t("Kind")
            ),
            30,
        ),
        (
            format!(
                "table `{}` has no global index `LsiByT`, but it has a local index: declare it with `kind = \"local\"`",
                t("GlobalKind")
            ),
            37,
        ),
    ];
    assert_eq!(found.len(), expected.len(), "{found:#?}");
    for ((message, at), (want, want_line)) in found.iter().zip(&expected) {
        assert!(message.starts_with(want.as_str()), "{message} / {want}");
        assert_eq!(at, want_line, "{message}");
    }
}

/// Every example, served over tables `tables create` made for it, is ready: `/ready` describes
/// each of its tables and answers 200.
#[tokio::test]
async fn every_example_is_ready_once_its_tables_exist() {
    let examples = crate::helpers::example_models();
    for path in &examples {
        let app = crate::helpers::model_app(path).await;
        let ready = crate::helpers::answer(
            &app.router,
            axum::http::Request::get("/ready")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(ready.status, 200, "{path}: {}", ready.body);
    }
    assert!(examples.len() >= 10, "only {examples:?}");
}

/// `check` (and `serve`'s start-up check) hold a declared stream to the table's: a table with no
/// stream, or one whose records hold less than the model declares, is reported at its
/// declaration, as a missing index is; a table whose stream matches is not.
#[tokio::test]
async fn a_declared_stream_that_is_missing_or_holds_another_view_is_reported_at_its_table() {
    use aws_sdk_dynamodb::types::StreamViewType;
    use dynarelay::{dynamo::tables::verify, model};
    let text = r#"version = 1
[tables.NoStream]
partition_key = "id"
attributes = { id = "S" }
stream = "NEW_AND_OLD_IMAGES"
[tables.KeysOnly]
partition_key = "id"
attributes = { id = "S" }
stream = "NEW_AND_OLD_IMAGES"
[tables.NewImage]
partition_key = "id"
attributes = { id = "S" }
stream = "NEW_AND_OLD_IMAGES"
[tables.Fine]
partition_key = "id"
attributes = { id = "S" }
stream = "NEW_AND_OLD_IMAGES"
[tables.Undeclared]
partition_key = "id"
attributes = { id = "S" }
"#;
    let model: &'static model::Model =
        Box::leak(Box::new(model::parse("streams.toml", text).unwrap()));
    let prefix = unique_prefix();
    let client = control_client();
    let t = |name: &str| format!("{prefix}{name}");
    for (name, view) in [
        ("NoStream", None),
        ("KeysOnly", Some(StreamViewType::KeysOnly)),
        ("NewImage", Some(StreamViewType::NewImage)),
        ("Fine", Some(StreamViewType::NewAndOldImages)),
        // A stream the model does not declare is another reader's business.
        ("Undeclared", Some(StreamViewType::KeysOnly)),
    ] {
        live_table(&client, &t(name), &[("id", ScalarAttributeType::S)], &[]).await;
        if view.is_some() {
            set_stream(&client, &t(name), view).await;
        }
    }

    let mismatches = verify(&client, model, &Tables::new(model, &prefix))
        .await
        .unwrap();
    let line = |offset: usize| text[..offset].matches('\n').count() + 1;
    let found: Vec<(String, usize)> = mismatches
        .iter()
        .map(|m| (m.message.clone(), line(m.span.start)))
        .collect();
    let expected = [
        (
            format!(
                "table `{}` has no stream, but the model declares `stream = \"NEW_AND_OLD_IMAGES\"`",
                t("NoStream")
            ),
            2,
        ),
        (
            format!(
                "table `{}`'s stream holds KEYS_ONLY, but the model declares `stream = \"NEW_AND_OLD_IMAGES\"`",
                t("KeysOnly")
            ),
            6,
        ),
        (
            format!(
                "table `{}`'s stream holds NEW_IMAGE, but the model declares `stream = \"NEW_AND_OLD_IMAGES\"`",
                t("NewImage")
            ),
            10,
        ),
    ];
    assert_eq!(found.len(), expected.len(), "{found:#?}");
    for ((message, at), (want, want_line)) in found.iter().zip(&expected) {
        assert!(message.starts_with(want.as_str()), "{message} / {want}");
        assert_eq!(at, want_line, "{message}");
    }
}
