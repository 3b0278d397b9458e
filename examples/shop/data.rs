//! The demo shop's records and its deterministic data set, shared by the tests and
//! `examples/shop/items.json` (the quick start's data, which `scripts/dev` seeds with `dynarelay
//! seed`; `tests/api/seed.rs` keeps it equal to [`generate`]'s). [`generate`] is pure; [`write`]
//! stores the result.
//!
//! Per user, purchase counts cover the shapes paging must get right: 0, 1, 20, 21 (the default
//! page size and one more), 100, 101 (the maximum page size and one more) and a few in the
//! hundreds; the remaining users get 0 to 30. Prices come from a short list, so many products
//! in a category share a price (equal sort values in the `ByCategory` index).
//!
//! Items are written and read by hand rather than with serde_dynamo, which reads `N` attributes
//! through Rust number types: amounts and prices must stay exact.

#![allow(dead_code)]

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use aws_sdk_dynamodb::types::AttributeValue;

use dynarelay::{
    dynamo::{Item, Store, StoreError},
    number::DynamoNumber,
};

/// A stored item lacks an attribute or holds it in a form the data model does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("attribute `{attribute}` is missing or is not {expected}")]
pub struct ModelError {
    /// The attribute.
    pub attribute: &'static str,
    /// What the data model requires.
    pub expected: &'static str,
}

/// A row of `Users`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRecord {
    /// `userId` (S), the key.
    pub user_id: String,
    /// `name` (S).
    pub name: String,
    /// `email` (S).
    pub email: String,
    /// `createdAt` (N, epoch milliseconds).
    pub created_at: DateTime<Utc>,
}

/// A row of `Products`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProductRecord {
    /// `sku` (S), the key.
    pub sku: String,
    /// `name` (S).
    pub name: String,
    /// `category` (S), the `ByCategory` partition key.
    pub category: String,
    /// `price` (N, decimal), the `ByCategory` sort key.
    pub price: DynamoNumber,
}

/// The lifecycle of a purchase, stored as its upper-case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurchaseStatus {
    /// `PENDING`
    Pending,
    /// `PAID`
    Paid,
    /// `SHIPPED`
    Shipped,
    /// `REFUNDED`
    Refunded,
}

impl PurchaseStatus {
    /// Every status.
    pub const ALL: [Self; 4] = [Self::Pending, Self::Paid, Self::Shipped, Self::Refunded];

    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Paid => "PAID",
            Self::Shipped => "SHIPPED",
            Self::Refunded => "REFUNDED",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == s)
    }
}

/// A row of `Purchases`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurchaseRecord {
    /// `userId` (S), the partition key.
    pub user_id: String,
    /// `purchasedAt` (N, epoch milliseconds), the sort key.
    pub purchased_at: DateTime<Utc>,
    /// `sku` (S), the `BySku` partition key.
    pub sku: String,
    /// `quantity` (N, integer).
    pub quantity: i32,
    /// `amount` (N, decimal).
    pub amount: DynamoNumber,
    /// `status` (S).
    pub status: PurchaseStatus,
}

impl UserRecord {
    /// Reads a `Users` item.
    pub fn from_item(item: &Item) -> Result<Self, ModelError> {
        Ok(Self {
            user_id: string(item, "userId")?,
            name: string(item, "name")?,
            email: string(item, "email")?,
            created_at: epoch_millis(item, "createdAt")?,
        })
    }

    /// The item to store.
    pub fn to_item(&self) -> Item {
        HashMap::from([
            s("userId", &self.user_id),
            s("name", &self.name),
            s("email", &self.email),
            n("createdAt", self.created_at.timestamp_millis().to_string()),
        ])
    }
}

impl ProductRecord {
    /// Reads a `Products` item.
    pub fn from_item(item: &Item) -> Result<Self, ModelError> {
        Ok(Self {
            sku: string(item, "sku")?,
            name: string(item, "name")?,
            category: string(item, "category")?,
            price: number(item, "price")?,
        })
    }

    /// The item to store.
    pub fn to_item(&self) -> Item {
        HashMap::from([
            s("sku", &self.sku),
            s("name", &self.name),
            s("category", &self.category),
            n("price", self.price.to_string()),
        ])
    }
}

impl PurchaseRecord {
    /// Reads a `Purchases` item.
    pub fn from_item(item: &Item) -> Result<Self, ModelError> {
        let quantity = number(item, "quantity")?
            .to_i64()
            .and_then(|q| i32::try_from(q).ok())
            .ok_or(ModelError {
                attribute: "quantity",
                expected: "a 32-bit integer",
            })?;
        let status = string(item, "status")?;
        Ok(Self {
            user_id: string(item, "userId")?,
            purchased_at: epoch_millis(item, "purchasedAt")?,
            sku: string(item, "sku")?,
            quantity,
            amount: number(item, "amount")?,
            status: PurchaseStatus::parse(&status).ok_or(ModelError {
                attribute: "status",
                expected: "a purchase status",
            })?,
        })
    }

    /// The item to store.
    pub fn to_item(&self) -> Item {
        HashMap::from([
            s("userId", &self.user_id),
            n(
                "purchasedAt",
                self.purchased_at.timestamp_millis().to_string(),
            ),
            s("sku", &self.sku),
            n("quantity", self.quantity.to_string()),
            n("amount", self.amount.to_string()),
            s("status", self.status.as_str()),
        ])
    }
}

fn s(name: &str, value: &str) -> (String, AttributeValue) {
    (name.to_owned(), AttributeValue::S(value.to_owned()))
}

fn n(name: &str, value: String) -> (String, AttributeValue) {
    (name.to_owned(), AttributeValue::N(value))
}

fn string(item: &Item, attribute: &'static str) -> Result<String, ModelError> {
    match item.get(attribute) {
        Some(AttributeValue::S(s)) => Ok(s.clone()),
        _ => Err(ModelError {
            attribute,
            expected: "a string",
        }),
    }
}

fn number(item: &Item, attribute: &'static str) -> Result<DynamoNumber, ModelError> {
    match item.get(attribute) {
        Some(AttributeValue::N(n)) => DynamoNumber::parse(n).ok(),
        _ => None,
    }
    .ok_or(ModelError {
        attribute,
        expected: "a number",
    })
}

fn epoch_millis(item: &Item, attribute: &'static str) -> Result<DateTime<Utc>, ModelError> {
    number(item, attribute)?
        .to_i64()
        .and_then(DateTime::from_timestamp_millis)
        .ok_or(ModelError {
            attribute,
            expected: "a time in epoch milliseconds",
        })
}

/// Purchase counts for the first users of every data set.
pub const SPECIAL_COUNTS: [usize; 9] = [0, 1, 20, 21, 100, 101, 150, 250, 420];
const CATEGORIES: [&str; 8] = [
    "books",
    "electronics",
    "garden",
    "kitchen",
    "music",
    "outdoors",
    "toys",
    "games",
];
const PRICE_CENTS: [u64; 6] = [499, 999, 1999, 2450, 4900, 9995];
const FIRST_NAMES: [&str; 12] = [
    "Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Margaret", "Niklaus",
    "Radia", "Tony",
];
const LAST_NAMES: [&str; 10] = [
    "Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Hamilton",
    "Wirth",
];
const ADJECTIVES: [&str; 8] = [
    "Compact", "Deluxe", "Classic", "Rugged", "Quiet", "Bright", "Handy", "Vintage",
];
const NOUNS: [&str; 8] = [
    "Lamp", "Kettle", "Novel", "Speaker", "Trowel", "Puzzle", "Tent", "Mug",
];
/// 2024-01-01T00:00:00Z.
const EPOCH_2024_MS: i64 = 1_704_067_200_000;
const DAY_MS: i64 = 86_400_000;

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct SeedSpec {
    /// Picks the data set.
    pub seed: u64,
    /// Number of users.
    pub users: usize,
    /// Number of products.
    pub products: usize,
    /// Number of categories (1 to 8).
    pub categories: usize,
}

impl SeedSpec {
    /// The quick start's data set (`examples/shop/items.json`).
    pub const DEMO: SeedSpec = SeedSpec {
        seed: 1,
        users: 300,
        products: 60,
        categories: 6,
    };
}

/// A generated data set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataset {
    /// Users, in generation order.
    pub users: Vec<UserRecord>,
    /// Products.
    pub products: Vec<ProductRecord>,
    /// Purchases, grouped by user in `purchasedAt` order.
    pub purchases: Vec<PurchaseRecord>,
}

/// Generates the data set for `spec`. The same spec always gives the same data.
pub fn generate(spec: &SeedSpec) -> Dataset {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let categories = &CATEGORIES[..spec.categories.clamp(1, CATEGORIES.len())];
    let products: Vec<ProductRecord> = (0..spec.products)
        .map(|i| ProductRecord {
            sku: format!("SKU-{:05}", i + 1),
            name: format!("{} {}", pick(&mut rng, &ADJECTIVES), pick(&mut rng, &NOUNS)),
            category: categories[i % categories.len()].to_owned(),
            price: cents(pick(&mut rng, &PRICE_CENTS)),
        })
        .collect();
    let mut users = Vec::with_capacity(spec.users);
    let mut purchases = Vec::new();
    for i in 0..spec.users {
        let first = pick(&mut rng, &FIRST_NAMES);
        let last = pick(&mut rng, &LAST_NAMES);
        let created_at = EPOCH_2024_MS
            + below(&mut rng, 365) as i64 * DAY_MS
            + below(&mut rng, DAY_MS as u64) as i64;
        let user = UserRecord {
            user_id: uuid_like(&mut rng),
            name: format!("{first} {last}"),
            email: format!(
                "{}.{}{}@example.com",
                first.to_lowercase(),
                last.to_lowercase(),
                i + 1
            ),
            created_at: millis(created_at),
        };
        let count = SPECIAL_COUNTS
            .get(i)
            .copied()
            .unwrap_or_else(|| below(&mut rng, 31) as usize);
        let mut at = created_at;
        for _ in 0..count {
            // Whole minutes, so purchases of different users often share a time.
            at += (1 + below(&mut rng, 3 * 24 * 60) as i64) * 60_000;
            if products.is_empty() {
                break;
            }
            let product = &products[below(&mut rng, products.len() as u64) as usize];
            let quantity = 1 + below(&mut rng, 5) as u32;
            let price_cents = price_in_cents(&product.price);
            purchases.push(PurchaseRecord {
                user_id: user.user_id.clone(),
                purchased_at: millis(at),
                sku: product.sku.clone(),
                quantity: quantity as i32,
                amount: cents(price_cents * u64::from(quantity)),
                status: pick(&mut rng, &PurchaseStatus::ALL),
            });
        }
        users.push(user);
    }
    Dataset {
        users,
        products,
        purchases,
    }
}

/// The full names of the shop's tables under a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShopTables {
    /// `{prefix}Users`.
    pub users: String,
    /// `{prefix}Products`.
    pub products: String,
    /// `{prefix}Purchases`.
    pub purchases: String,
}

impl ShopTables {
    /// The names under `prefix`.
    pub fn with_prefix(prefix: &str) -> Self {
        Self {
            users: format!("{prefix}Users"),
            products: format!("{prefix}Products"),
            purchases: format!("{prefix}Purchases"),
        }
    }
}

/// Writes `data` to the shop's tables.
pub async fn write(store: &Store, tables: &ShopTables, data: &Dataset) -> Result<(), StoreError> {
    store
        .put_items(
            &tables.products,
            data.products.iter().map(ProductRecord::to_item).collect(),
        )
        .await?;
    store
        .put_items(
            &tables.users,
            data.users.iter().map(UserRecord::to_item).collect(),
        )
        .await?;
    store
        .put_items(
            &tables.purchases,
            data.purchases.iter().map(PurchaseRecord::to_item).collect(),
        )
        .await
}

fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    rng.next_u64() % n
}

fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[T]) -> T {
    items[below(rng, items.len() as u64) as usize]
}

fn millis(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

/// An amount in cents in DynamoDB's canonical form (no trailing zeros): 4900 -> "49".
fn cents(cents: u64) -> DynamoNumber {
    let (whole, frac) = (cents / 100, cents % 100);
    let text = match frac {
        0 => whole.to_string(),
        f if f % 10 == 0 => format!("{whole}.{}", f / 10),
        f => format!("{whole}.{f:02}"),
    };
    DynamoNumber::parse(&text).unwrap_or_else(|_| DynamoNumber::from_i64(0))
}

fn price_in_cents(price: &DynamoNumber) -> u64 {
    let (whole, frac) = price
        .as_str()
        .split_once('.')
        .unwrap_or((price.as_str(), ""));
    let frac = format!("{frac:0<2}");
    whole.parse::<u64>().unwrap_or(0) * 100 + frac[..2].parse::<u64>().unwrap_or(0)
}

/// 16 random bytes formatted as a version-4 UUID.
fn uuid_like(rng: &mut ChaCha8Rng) -> String {
    let mut b = [0u8; 16];
    rng.fill_bytes(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn spec(seed: u64) -> SeedSpec {
        SeedSpec {
            seed,
            ..SeedSpec::DEMO
        }
    }

    #[test]
    fn the_example_user_in_graphiql_and_the_quick_start_has_21_demo_purchases() {
        let data = generate(&SeedSpec::DEMO);
        let user = &data.users[3].user_id;
        assert_eq!(SPECIAL_COUNTS[3], 21);
        assert!(
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/assets/graphiql/init.js"
            ))
            .contains(user.as_str()),
            "init.js"
        );
        assert!(
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/docs/src/guides/quick-start.md"
            ))
            .contains(user.as_str()),
            "docs/src/guides/quick-start.md"
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_data_and_another_seed_does_not() {
        assert_eq!(generate(&spec(7)), generate(&spec(7)));
        assert_ne!(generate(&spec(7)).users, generate(&spec(8)).users);
    }

    #[test]
    fn the_data_covers_the_shapes_paging_must_handle() {
        let data = generate(&spec(1));
        let mut per_user: HashMap<&str, usize> = HashMap::new();
        for p in &data.purchases {
            *per_user.entry(&p.user_id).or_default() += 1;
        }
        for (user, expected) in data.users.iter().zip(SPECIAL_COUNTS) {
            assert_eq!(
                per_user.get(user.user_id.as_str()).copied().unwrap_or(0),
                expected
            );
        }
        for status in PurchaseStatus::ALL {
            assert!(
                data.purchases.iter().any(|p| p.status == status),
                "{status:?} missing"
            );
        }
        assert!(
            data.purchases
                .iter()
                .any(|p| p.amount.as_str().contains('.')),
            "no decimal amounts"
        );
        let mut prices: HashMap<(&str, &str), usize> = HashMap::new();
        for p in &data.products {
            *prices.entry((&p.category, p.price.as_str())).or_default() += 1;
        }
        assert!(
            prices.values().any(|&n| n > 1),
            "no category has two products at one price"
        );
        assert_eq!(data.users.len(), 300);
        assert!(data.users.iter().all(|u| u.user_id.len() == 36));
    }

    #[test]
    fn purchase_times_are_unique_and_ascending_per_user() {
        let data = generate(&spec(3));
        for pair in data.purchases.windows(2) {
            if pair[0].user_id == pair[1].user_id {
                assert!(pair[0].purchased_at < pair[1].purchased_at);
            }
        }
    }

    #[test]
    fn amounts_are_in_dynamodb_canonical_form() {
        assert_eq!(cents(4900).as_str(), "49");
        assert_eq!(cents(2450).as_str(), "24.5");
        assert_eq!(cents(1999).as_str(), "19.99");
        assert_eq!(cents(5).as_str(), "0.05");
        assert_eq!(price_in_cents(&cents(2450)), 2450);
        assert_eq!(price_in_cents(&cents(499)), 499);
    }
}
