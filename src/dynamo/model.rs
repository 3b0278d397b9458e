//! Items <-> records: the attributes of each table as typed Rust values.
//!
//! Written by hand rather than with serde_dynamo: serde_dynamo reads `N` attributes through Rust
//! number types, which cannot hold DynamoDB's 38-digit decimals exactly, and it cannot read an `N`
//! into a string. Amounts and prices must stay exact, so numbers are read as [`DynamoNumber`]s.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

use crate::number::DynamoNumber;

/// A DynamoDB item.
pub type Item = HashMap<String, AttributeValue>;

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

#[cfg(test)]
mod tests {
    use super::*;

    fn purchase() -> PurchaseRecord {
        PurchaseRecord {
            user_id: "u-1".into(),
            purchased_at: DateTime::from_timestamp_millis(1_672_531_200_123).unwrap(),
            sku: "SKU-1".into(),
            quantity: 3,
            amount: DynamoNumber::parse("12345678901234567890.123456789012345678").unwrap(),
            status: PurchaseStatus::Shipped,
        }
    }

    #[test]
    fn a_purchase_round_trips_through_its_item_exactly() {
        let item = purchase().to_item();
        assert_eq!(
            item["purchasedAt"],
            AttributeValue::N("1672531200123".into())
        );
        assert_eq!(PurchaseRecord::from_item(&item), Ok(purchase()));
    }

    #[test]
    fn malformed_items_name_the_attribute() {
        let mut item = purchase().to_item();
        item.insert("status".into(), AttributeValue::S("LOST".into()));
        assert_eq!(
            PurchaseRecord::from_item(&item).unwrap_err().attribute,
            "status"
        );
        item = purchase().to_item();
        item.insert("quantity".into(), AttributeValue::N("1.5".into()));
        assert_eq!(
            PurchaseRecord::from_item(&item).unwrap_err().attribute,
            "quantity"
        );
        item.remove("amount");
        item.insert("quantity".into(), AttributeValue::N("1".into()));
        assert_eq!(
            PurchaseRecord::from_item(&item).unwrap_err().attribute,
            "amount"
        );
    }
}
