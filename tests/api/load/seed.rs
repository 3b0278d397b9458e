//! Seeding: the users, their purchases and the products the run starts from, written directly,
//! and what the seeded tables hold ([`Expected`]).

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::{self, Item};

use super::{BASE_MS, CATEGORIES, Expected, SEEDED_PER_USER, SPACING_MS, USERS, category, iso};
use crate::helpers::{ShopTables, purchase_item, shop_store};

const PRODUCTS_PER_CATEGORY: usize = 25;
/// Few prices, so that many products tie on the index sort key.
const PRICES: [&str; 4] = ["4.99", "9.99", "19.99", "24.5"];

pub(super) async fn seed(endpoint: &str, prefix: &str) -> Expected {
    let client = dynamo::client_for_local(endpoint);
    let names = ShopTables::with_prefix(prefix);
    let store = shop_store(client, prefix).await;

    let mut expected = Expected {
        users: (0..USERS).map(|u| format!("load-user-{u}")).collect(),
        purchases: vec![BTreeMap::new(); USERS],
        products: vec![BTreeMap::new(); CATEGORIES],
        skus: Vec::new(),
    };
    let mut products = Vec::new();
    for c in 0..CATEGORIES {
        for i in 0..PRODUCTS_PER_CATEGORY {
            let sku = format!("LOAD-{c}-{i:02}");
            let price = PRICES[(i * 7 + c) % PRICES.len()];
            products.push(Item::from([
                ("sku".to_owned(), AttributeValue::S(sku.clone())),
                (
                    "name".to_owned(),
                    AttributeValue::S(format!("Product {sku}")),
                ),
                ("category".to_owned(), AttributeValue::S(category(c))),
                ("price".to_owned(), AttributeValue::N(price.to_owned())),
            ]));
            expected.products[c].insert(sku.clone(), price.to_owned());
            expected.skus.push(sku);
        }
    }
    store
        .put_items(&names.products, products)
        .await
        .expect("seeding products");

    let mut users = Vec::new();
    let mut purchases = Vec::new();
    for (u, user) in expected.users.iter().enumerate() {
        users.push(Item::from([
            ("userId".to_owned(), AttributeValue::S(user.clone())),
            ("name".to_owned(), AttributeValue::S(format!("User {u}"))),
            (
                "email".to_owned(),
                AttributeValue::S(format!("{user}@example.com")),
            ),
            (
                "createdAt".to_owned(),
                AttributeValue::N(BASE_MS.to_string()),
            ),
        ]));
        for i in 0..SEEDED_PER_USER {
            let at = BASE_MS + i as i64 * SPACING_MS;
            let amount = format!("{}.25", u * 1000 + i + 1);
            let mut item = purchase_item(user, &at.to_string(), &amount);
            let sku = &expected.skus[(u + i) % expected.skus.len()];
            item.insert("sku".to_owned(), AttributeValue::S(sku.clone()));
            purchases.push(item);
            expected.purchases[u].insert(iso(at), amount);
        }
    }
    store
        .put_items(&names.users, users)
        .await
        .expect("seeding users");
    store
        .put_items(&names.purchases, purchases)
        .await
        .expect("seeding purchases");
    expected
}
