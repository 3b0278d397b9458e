//! `tables create` and `seed` against DynamoDB Local.

use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use dynarelay::dynamo::{
    self, Store, Tables,
    tables::{TableOutcome, create_missing},
};
use serde_json::json;

use crate::{
    helpers::{ShopTables, TestApp, endpoint, shop, unique_prefix},
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
    let client = dynamo::client_for_local(&endpoint());
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
    let client = dynamo::client_for_local(&endpoint());
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
    let client = dynamo::client_for_local(&endpoint());
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
