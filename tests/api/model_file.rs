//! The model file: the example loads, every kind of mistake is reported at its place, and the
//! checked-in JSON Schema matches the Rust types. None of these tests needs DynamoDB.
//!
//! This file holds the model texts the mistakes are made in and the builders of a [`Case`]. The
//! tests are in `model_file/`: models that load (`loads.rs`), access rules and `[auth]`
//! (`access.rs`), the table of mistakes (`cases.rs`), and how mistakes are reported
//! (`mistakes.rs`).

mod access;
mod cases;
mod loads;
mod mistakes;

/// A valid model the cases in `cases.rs` add to (lines 1 to 9).
const BASE: &str = r#"version = 1

[tables.Users]
partition_key = "userId"
attributes = { userId = "S" }

[entities.User]
table = "Users"
fields.userId = { type = "String!" }
"#;

/// Purchases with a sort key and an index, on lines 10 to 22 after `BASE`.
const PURCHASES: &str = r#"
[tables.Purchases]
partition_key = "userId"
sort_key = "at"
attributes = { userId = "S", at = "N", sku = "S" }
indexes.BySku = { partition_key = "sku", sort_key = "at", projection = "KEYS_ONLY" }

[entities.Purchase]
table = "Purchases"
fields.userId = { type = "String!" }
fields.at = { type = "DateTime!" }
fields.sku = { type = "String!" }
fields.amount = { type = "Decimal" }
"#;

/// A single-table design the cases in `cases.rs` change or add to (lines 1 to 21): customers
/// and their orders share the table and a customer's partition, told apart by their sort-key
/// prefixes; `GSI1` finds an order by its id.
const ONE_TABLE: &str = r#"version = 1

[tables.Shop]
partition_key = "PK"
sort_key = "SK"
attributes = { PK = "S", SK = "S", GSI1PK = "S", GSI1SK = "S" }
indexes.GSI1 = { partition_key = "GSI1PK", sort_key = "GSI1SK" }

[entities.Customer]
table = "Shop"
keys = { PK = "CUSTOMER#{username}", SK = "PROFILE" }
fields.username = { type = "String!" }
fields.name = { type = "String!" }

[entities.Order]
table = "Shop"
keys = { PK = "CUSTOMER#{username}", SK = "ORDER#{placedAt}#{orderId}", GSI1PK = "ORDER#{orderId}", GSI1SK = "ORDER" }
fields.username = { type = "String!" }
fields.orderId = { type = "String!" }
fields.placedAt = { type = "DateTime!", stored_as = "iso8601" }
fields.count = { type = "Int!" }
"#;

/// An item collection over a customer's partition, on lines 23 to 26 after `ONE_TABLE`.
const ACTIVITY: &str = r#"
[entities.Customer.connections.activity]
members = ["Customer", "Order"]
union = "Activity"
partition = { field = "username" }
"#;

/// A customer's orders, on lines 23 to 25 after `ONE_TABLE`; cases add sort conditions.
const ORDERS: &str = r#"
[entities.Customer.connections.orders]
entity = "Order"
partition = { field = "username" }
"#;

/// A root connection finding orders by id through `GSI1`, on lines 23 to 26 after `ONE_TABLE`.
const ORDER_BY_ID: &str = r#"
[connections.orderById]
entity = "Order"
index = "GSI1"
partition = { argument = "orderId" }
"#;

/// Returns keyed like orders, on lines 23 to 27 after `ONE_TABLE`: nothing in their keys tells
/// them apart from orders.
const RETURNS: &str = r#"
[entities.Return]
table = "Shop"
keys = { PK = "CUSTOMER#{username}", SK = "ORDER#{returnId}" }
fields.username = { type = "String!" }
fields.returnId = { type = "String!" }
"#;

/// Token verification with a shared secret, on lines 10 to 12 after `BASE` (11 and 12: `[auth]`
/// and `secret_env`); cases add its other keys on line 13, or put it after the rules they test.
const AUTH: &str = r#"
[auth]
secret_env = "DYNARELAY_TEST_SECRET"
"#;

/// Token verification with an identity provider's JWKS, on lines 10 to 12 after `BASE`.
const JWKS_AUTH: &str = r#"
[auth]
jwks_url = "https://id.example/.well-known/jwks.json"
"#;

/// One kind of mistake: the model text, and the message part, line and column expected.
struct Case {
    name: &'static str,
    text: String,
    message: &'static str,
    line: usize,
    column: usize,
}

fn case(name: &'static str, text: &str, message: &'static str, line: usize, column: usize) -> Case {
    Case {
        name,
        text: text.to_owned(),
        message,
        line,
        column,
    }
}

fn with_base(
    name: &'static str,
    extra: &str,
    message: &'static str,
    line: usize,
    column: usize,
) -> Case {
    case(name, &format!("{BASE}{extra}"), message, line, column)
}

fn with_purchases(
    name: &'static str,
    extra: &str,
    message: &'static str,
    line: usize,
    column: usize,
) -> Case {
    case(
        name,
        &format!("{BASE}{PURCHASES}{extra}"),
        message,
        line,
        column,
    )
}

fn with_one_table(
    name: &'static str,
    extra: &str,
    message: &'static str,
    line: usize,
    column: usize,
) -> Case {
    case(name, &format!("{ONE_TABLE}{extra}"), message, line, column)
}

/// `ONE_TABLE` with `from` replaced by `to` (its first occurrence), then `extra`.
fn one_table_with(
    name: &'static str,
    (from, to): (&str, &str),
    extra: &str,
    message: &'static str,
    line: usize,
    column: usize,
) -> Case {
    assert!(
        ONE_TABLE.contains(from),
        "{name}: `{from}` is not in ONE_TABLE"
    );
    let text = format!("{}{extra}", ONE_TABLE.replacen(from, to, 1));
    case(name, &text, message, line, column)
}
