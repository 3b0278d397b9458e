//! The e-commerce example's deterministic data set (`examples/ecommerce/dynarelay.toml`), as raw
//! DynamoDB items of its one table: [`generate`] is pure, [`write`] stores the result. It is
//! checked in as `examples/ecommerce/items.json`, for `dynarelay seed` (`tests/api/seed.rs` keeps
//! the two equal).
//!
//! Every item holds its facets as ordinary attributes (`username`, `label`, `orderId`,
//! `placedAt`, `status`, `itemId`) and its key attributes (`PK`, `SK`, `GSI1PK`, `GSI1SK`,
//! `GSI2PK`, `GSI2SK`) rendered from the model's key templates by [`escape`], written here on
//! purpose rather than taken from the server's template code: the data set is the independent
//! truth the tests hold the server to.
//!
//! It holds the shapes single-table paging must get right:
//!
//! - facet values that need escaping: `#` (the separator), `\`, `\#`, a trailing `\`, values that
//!   are nothing but a separator or a backslash, and unicode (`李雷`, `Zoë`, emoji);
//! - values that are prefixes of each other (`an`, `ana`, `ana#`, `ana#b`, `ana\`), and pairs
//!   that would render the same key without escaping: order `X#ITEM#Y` with item `Z` and order
//!   `X` with item `Y#ITEM#Z`;
//! - partitions of every size: a customer with nothing, with one order, and one whose partition
//!   holds more than 100 items (more than the largest page), and status partitions in `GSI2`
//!   of well over 100 orders;
//! - orders placed at the same millisecond, within one customer and across customers (ties in
//!   the leading facet of `SK` and `GSI2SK`), and all four statuses;
//! - items in the shared partitions that match no entity ([`Dataset::junk`]), which every
//!   connection must skip.

#![allow(dead_code)]

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use aws_sdk_dynamodb::types::AttributeValue;

use dynarelay::dynamo::{Item, Store, StoreError};

/// The seed of the data set the tests use, checked in as `examples/ecommerce/items.json`.
pub const SEED: u64 = 16;

/// The model's one table (before any prefix).
pub const TABLE: &str = "ECommerce";

/// The order statuses (the `GSI2` partitions).
pub const STATUSES: [&str; 4] = ["PLACED", "SHIPPED", "DELIVERED", "CANCELLED"];

/// The customers chosen for their usernames, with how many addresses and orders each has.
/// Several are prefixes of others; most need escaping.
pub const NAMED_CUSTOMERS: [(&str, usize, usize); 14] = [
    ("ana", 3, 12),
    (BIG_CUSTOMER, 6, 105),
    ("ana\\", 2, 21),
    ("ana\\#b", 1, 3),
    (EMPTY_CUSTOMER, 0, 0),
    ("ana#", 0, 1),
    ("#", 1, 1),
    ("\\", 0, 20),
    ("trailing\\", 4, 40),
    ("李雷", 5, 7),
    ("Zoë", 6, 30),
    ("🦊🛒", 2, 9),
    ("a#b#c", 1, 2),
    ("x\\#\\", 3, 5),
];

/// The customer whose partition is the largest: 6 addresses, the profile and 105 orders, more
/// than the largest page.
pub const BIG_CUSTOMER: &str = "ana#b";

/// A customer with no address and no order: a partition holding the profile alone.
pub const EMPTY_CUSTOMER: &str = "an";

/// Customers beyond [`NAMED_CUSTOMERS`], with 0 to 6 addresses and 0 to 40 orders each.
pub const PLAIN_CUSTOMERS: usize = 16;

/// Address labels, chosen from per customer: prefixes of each other, separators, unicode.
pub const LABELS: [&str; 14] = [
    "Home",
    "Home#2",
    "Home\\",
    "Home 2",
    "home",
    "Work",
    "Büro",
    "家",
    "🏠 cabin",
    "#",
    "\\",
    "a\\#b",
    "Ferienhaus Zoë",
    "end\\",
];

/// Order ids given to the first orders of the named customers, in turn: separators, a trailing
/// backslash, unicode, prefixes of each other, and the pair of orders ([`BAIT_ORDERS`]) whose
/// items would share a key if facets were not escaped.
pub const ODD_ORDER_IDS: [&str; 12] = [
    "ana#1",
    "x\\y",
    "#",
    "\\#",
    "订单-7",
    "🧾",
    BAIT_ORDERS[0],
    BAIT_ORDERS[1],
    "trailing\\",
    "O-1#",
    "O-1",
    "O-1\\",
];

/// Order `X#ITEM#Y` holds item `Z`, and order `X` holds item `Y#ITEM#Z`: without escaping both
/// items would be `ORDER#X#ITEM#Y#ITEM#Z`.
pub const BAIT_ORDERS: [&str; 2] = ["X#ITEM#Y", "X"];

/// The item ids of the [`BAIT_ORDERS`], in the same order.
pub const BAIT_ITEMS: [&str; 2] = ["Z", "Y#ITEM#Z"];

/// Item ids given to some items instead of their number.
pub const ODD_ITEM_IDS: [&str; 5] = ["1#2", "1\\", "#ITEM#", "ü", "1"];

/// The moment at which the second order of every customer with three or more orders was
/// placed: ties in `GSI2SK` across customers.
pub const SHARED_MOMENT: &str = "2026-11-23T10:15:00.000Z";

/// Product names of order items.
pub const PRODUCTS: [&str; 8] = [
    "Kaffeemühle",
    "Tea kettle",
    "筆ペン",
    "Ölfilter",
    "Socks (3 pairs)",
    "Ψ-brand headphones",
    "Bike light 🚲",
    "Notebook #5",
];

/// The entities of the model, as the data set knows its items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Customer,
    Address,
    Order,
    OrderItem,
}

impl Kind {
    /// The GraphQL type name.
    pub fn typename(self) -> &'static str {
        match self {
            Kind::Customer => "Customer",
            Kind::Address => "Address",
            Kind::Order => "Order",
            Kind::OrderItem => "OrderItem",
        }
    }
}

/// A generated data set: the items of the table, by entity, and the junk among them.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Customer profiles.
    pub customers: Vec<Item>,
    /// Saved addresses.
    pub addresses: Vec<Item>,
    /// Orders.
    pub orders: Vec<Item>,
    /// Order items.
    pub order_items: Vec<Item>,
    /// Items in the shared partitions and indexes that match no entity: a sort key of no
    /// entity's prefix, a key that starts like an entity's but does not fit its template (a
    /// missing facet, an unescaped separator, a dangling escape), an index key of the same kinds.
    pub junk: Vec<Item>,
}

impl Dataset {
    /// Every entity item with its entity.
    pub fn entities(&self) -> impl Iterator<Item = (Kind, &Item)> {
        fn of(kind: Kind, items: &[Item]) -> impl Iterator<Item = (Kind, &Item)> {
            items.iter().map(move |i| (kind, i))
        }
        of(Kind::Customer, &self.customers)
            .chain(of(Kind::Address, &self.addresses))
            .chain(of(Kind::Order, &self.orders))
            .chain(of(Kind::OrderItem, &self.order_items))
    }

    /// Every item, junk included.
    pub fn items(&self) -> impl Iterator<Item = &Item> {
        self.entities().map(|(_, i)| i).chain(&self.junk)
    }

    /// Keeps only the entity items `keep` accepts (the junk stays): a smaller table for a test
    /// that reads only part of it.
    pub fn retain(&mut self, keep: impl Fn(Kind, &Item) -> bool) {
        self.customers.retain(|i| keep(Kind::Customer, i));
        self.addresses.retain(|i| keep(Kind::Address, i));
        self.orders.retain(|i| keep(Kind::Order, i));
        self.order_items.retain(|i| keep(Kind::OrderItem, i));
    }

    /// The orders of `username`.
    pub fn orders_of<'a>(&'a self, username: &'a str) -> impl Iterator<Item = &'a Item> {
        self.orders
            .iter()
            .filter(move |o| attr(o, "username") == Some(username))
    }
}

/// A facet value as the model's key templates write it: `\` becomes `\\`, and the separator
/// `#` (the only character next to a facet in the model's templates) becomes `\#`.
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c == '\\' || c == '#' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `PK` of everything stored under a customer, and `SK` of the profile: `CUSTOMER#{username}`.
pub fn customer_key(username: &str) -> String {
    format!("CUSTOMER#{}", escape(username))
}

/// `SK` of an address: `ADDRESS#{label}`.
pub fn address_sk(label: &str) -> String {
    format!("ADDRESS#{}", escape(label))
}

/// `SK` of an order: `ORDER#{placedAt}#{orderId}`.
pub fn order_sk(placed_at: &str, order_id: &str) -> String {
    format!("ORDER#{}#{}", escape(placed_at), escape(order_id))
}

/// `GSI1PK` of an order and its items, and `GSI1SK` of the order: `ORDER#{orderId}`.
pub fn order_partition(order_id: &str) -> String {
    format!("ORDER#{}", escape(order_id))
}

/// `GSI2PK` of an order: `STATUS#{status}`.
pub fn status_partition(status: &str) -> String {
    format!("STATUS#{}", escape(status))
}

/// `GSI2SK` of an order: `{placedAt}#{orderId}`.
pub fn status_sk(placed_at: &str, order_id: &str) -> String {
    format!("{}#{}", escape(placed_at), escape(order_id))
}

/// `PK` and `SK` of an order item: `ORDER#{orderId}#ITEM#{itemId}`.
pub fn item_key(order_id: &str, item_id: &str) -> String {
    format!("ORDER#{}#ITEM#{}", escape(order_id), escape(item_id))
}

/// `GSI1SK` of an order item: `ITEM#{itemId}`.
pub fn item_sk(item_id: &str) -> String {
    format!("ITEM#{}", escape(item_id))
}

/// A customer profile item.
pub fn customer_item(username: &str, name: &str, email: &str, joined_at: &str) -> Item {
    let key = customer_key(username);
    Item::from([
        ("PK".to_owned(), s(&key)),
        ("SK".to_owned(), s(&key)),
        ("username".to_owned(), s(username)),
        ("name".to_owned(), s(name)),
        ("email".to_owned(), s(email)),
        ("joinedAt".to_owned(), s(joined_at)),
    ])
}

/// An address item; `postcode` is left out when `None`.
pub fn address_item(
    username: &str,
    label: &str,
    street: &str,
    city: &str,
    postcode: Option<&str>,
    country: &str,
) -> Item {
    let mut item = Item::from([
        ("PK".to_owned(), s(&customer_key(username))),
        ("SK".to_owned(), s(&address_sk(label))),
        ("username".to_owned(), s(username)),
        ("label".to_owned(), s(label)),
        ("street".to_owned(), s(street)),
        ("city".to_owned(), s(city)),
        ("country".to_owned(), s(country)),
    ]);
    if let Some(postcode) = postcode {
        item.insert("postcode".into(), s(postcode));
    }
    item
}

/// An order item (the order, not one of its lines): `total` a decimal in DynamoDB's canonical
/// form.
pub fn order_item(
    username: &str,
    order_id: &str,
    placed_at: &str,
    status: &str,
    total: &str,
    item_count: usize,
) -> Item {
    let partition = order_partition(order_id);
    Item::from([
        ("PK".to_owned(), s(&customer_key(username))),
        ("SK".to_owned(), s(&order_sk(placed_at, order_id))),
        ("GSI1PK".to_owned(), s(&partition)),
        ("GSI1SK".to_owned(), s(&partition)),
        ("GSI2PK".to_owned(), s(&status_partition(status))),
        ("GSI2SK".to_owned(), s(&status_sk(placed_at, order_id))),
        ("username".to_owned(), s(username)),
        ("orderId".to_owned(), s(order_id)),
        ("placedAt".to_owned(), s(placed_at)),
        ("status".to_owned(), s(status)),
        ("total".to_owned(), AttributeValue::N(total.to_owned())),
        ("itemCount".to_owned(), n(item_count as i64)),
    ])
}

/// A line of an order: `price` a decimal in DynamoDB's canonical form.
pub fn line_item(order_id: &str, item_id: &str, product: &str, quantity: i64, price: &str) -> Item {
    let key = item_key(order_id, item_id);
    Item::from([
        ("PK".to_owned(), s(&key)),
        ("SK".to_owned(), s(&key)),
        ("GSI1PK".to_owned(), s(&order_partition(order_id))),
        ("GSI1SK".to_owned(), s(&item_sk(item_id))),
        ("orderId".to_owned(), s(order_id)),
        ("itemId".to_owned(), s(item_id)),
        ("product".to_owned(), s(product)),
        ("quantity".to_owned(), n(quantity)),
        ("price".to_owned(), AttributeValue::N(price.to_owned())),
    ])
}

/// Generates the data set for `seed`. The same seed always gives the same data.
pub fn generate(seed: u64) -> Dataset {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut data = Dataset {
        customers: Vec::new(),
        addresses: Vec::new(),
        orders: Vec::new(),
        order_items: Vec::new(),
        junk: Vec::new(),
    };
    let plain: Vec<(String, usize, usize)> = (0..PLAIN_CUSTOMERS)
        .map(|i| {
            let addresses = below(&mut rng, 7) as usize;
            let orders = below(&mut rng, 41) as usize;
            (format!("shopper.{i:02}"), addresses, orders)
        })
        .collect();
    let customers = NAMED_CUSTOMERS
        .iter()
        .map(|&(u, a, o)| (u.to_owned(), a, o))
        .chain(plain);
    let mut odd_ids = ODD_ORDER_IDS.iter();
    let mut next_order = 0;
    for (i, (username, address_count, order_count)) in customers.enumerate() {
        let named = i < NAMED_CUSTOMERS.len();
        let joined = millis(1_700_000_000_000 + below(&mut rng, 50_000_000_000) as i64);
        data.customers.push(customer_item(
            &username,
            &format!("{} {}", first_name(i), LAST_NAMES[i % LAST_NAMES.len()]),
            &format!("customer{i}@example.com"),
            &iso(joined),
        ));
        for label in pick_distinct(&mut rng, &LABELS, address_count) {
            data.addresses.push(address(&mut rng, &username, label));
        }
        // Orders from a random day in mid-2026 on, a few days apart; one in six at the same
        // millisecond as the one before.
        let mut at = millis(1_780_000_000_000 + below(&mut rng, 5_000_000_000) as i64);
        for k in 0..order_count {
            if k == 0 || below(&mut rng, 6) > 0 {
                at += Duration::milliseconds(below(&mut rng, 9 * 86_400_000) as i64 + 1);
            }
            let placed_at = if k == 1 && order_count >= 3 {
                SHARED_MOMENT.to_owned()
            } else {
                iso(at)
            };
            let odd = if named && k < 2 { odd_ids.next() } else { None };
            let order_id = match odd {
                Some(id) => (*id).to_owned(),
                None => {
                    next_order += 1;
                    format!("O-{next_order:05}")
                }
            };
            let status = STATUSES[below(&mut rng, 4) as usize];
            let (order, lines) = order(&mut rng, &username, &order_id, &placed_at, status);
            data.orders.push(order);
            data.order_items.extend(lines);
        }
    }
    assert!(odd_ids.next().is_none(), "every odd order id is given out");
    data.junk = junk(&data);
    data
}

const FIRST_NAMES: [&str; 8] = [
    "Ana", "Björn", "Chiara", "Dmitri", "Eun-ji", "Fatima", "Gonzalo", "Hélène",
];

const LAST_NAMES: [&str; 6] = [
    "Novak",
    "O'Brien",
    "Søndergaard",
    "Tanaka",
    "Ubaldi",
    "Wójcik",
];

fn first_name(i: usize) -> &'static str {
    FIRST_NAMES[i % FIRST_NAMES.len()]
}

fn address(rng: &mut ChaCha8Rng, username: &str, label: &str) -> Item {
    const CITIES: [(&str, Option<&str>, &str); 5] = [
        ("Zürich", Some("8001"), "CH"),
        ("Kraków", Some("30-001"), "PL"),
        ("北京", Some("100000"), "CN"),
        ("Dublin", None, "IE"),
        ("São Paulo", Some("01000-000"), "BR"),
    ];
    let (city, postcode, country) = CITIES[below(rng, CITIES.len() as u64) as usize];
    let street = format!("{} Main Street", 1 + below(rng, 200));
    address_item(username, label, &street, city, postcode, country)
}

/// An order and its lines: 1 to 8 of them, the total their sum.
fn order(
    rng: &mut ChaCha8Rng,
    username: &str,
    order_id: &str,
    placed_at: &str,
    status: &str,
) -> (Item, Vec<Item>) {
    let count = 1 + below(rng, 8) as usize;
    let bait = BAIT_ORDERS.iter().position(|&o| o == order_id);
    let mut total_cents = 0;
    let lines: Vec<Item> = (0..count)
        .map(|k| {
            let item_id = match (bait, k) {
                (Some(b), 0) => BAIT_ITEMS[b].to_owned(),
                _ if k < ODD_ITEM_IDS.len() && below(rng, 10) == 0 => ODD_ITEM_IDS[k].to_owned(),
                _ => format!("{:02}", k + 1),
            };
            let quantity = 1 + below(rng, 4) as i64;
            let price_cents = below(rng, 20_000) as i64;
            total_cents += quantity * price_cents;
            let product = PRODUCTS[below(rng, PRODUCTS.len() as u64) as usize];
            line_item(order_id, &item_id, product, quantity, &decimal(price_cents))
        })
        .collect();
    let order = order_item(
        username,
        order_id,
        placed_at,
        status,
        &decimal(total_cents),
        count,
    );
    (order, lines)
}

/// Items matching no entity, in the partitions of `data`'s customers and orders.
fn junk(data: &Dataset) -> Vec<Item> {
    let order_of = |username: &str| {
        data.orders_of(username)
            .next()
            .and_then(|o| attr(o, "orderId"))
            .map(str::to_owned)
            .unwrap_or_default()
    };
    let in_customer = |username: &str, sk: &str| {
        Item::from([
            ("PK".to_owned(), s(&customer_key(username))),
            ("SK".to_owned(), s(sk)),
            ("note".to_owned(), s("matches no entity")),
        ])
    };
    let mut junk = vec![
        // A sort key of no entity's prefix, between the profile and the orders.
        in_customer("ana", "JUNK#1"),
        // Starts like an order's, but has no `#{orderId}`.
        in_customer("ana", "ORDER#bad"),
        in_customer(BIG_CUSTOMER, "ORDER#2026-11-05T10:00:00.000Z"),
        // An unescaped separator inside the last facet.
        in_customer(BIG_CUSTOMER, "ORDER#2026-11-05T10:00:00.000Z#a#b"),
        in_customer("Zoë", "ADDRESS#Home#3"),
        // A dangling escape at the end.
        in_customer("trailing\\", "ADDRESS#end\\"),
        // The profile's prefix with an unescaped separator: also in the Scan of customers.
        in_customer("ana", "CUSTOMER#ana#"),
        // A partition of no entity, met only by the Scan.
        Item::from([
            ("PK".to_owned(), s("SESSION#42")),
            ("SK".to_owned(), s("SESSION#42")),
        ]),
    ];
    // In an order's `GSI1` partition, among its items: an unescaped separator in the item id.
    let order_id = order_of(BIG_CUSTOMER);
    let mut item = in_customer(BIG_CUSTOMER, "JUNK#2");
    item.insert("GSI1PK".into(), s(&order_partition(&order_id)));
    item.insert("GSI1SK".into(), s("ITEM#a#b"));
    junk.push(item);
    // In a `GSI2` status partition, among the orders, at the shared moment: no order id.
    let mut item = in_customer(BIG_CUSTOMER, "JUNK#3");
    item.insert("GSI2PK".into(), s(&status_partition("SHIPPED")));
    item.insert("GSI2SK".into(), s(SHARED_MOMENT));
    junk.push(item);
    junk
}

/// Writes every item of `data` (junk included) to `table`, in four concurrent streams of
/// batches.
pub async fn write(store: &Store, table: &str, data: &Dataset) -> Result<(), StoreError> {
    const STREAMS: usize = 4;
    let items: Vec<Item> = data.items().cloned().collect();
    let per_stream = items.len().div_ceil(STREAMS).max(1);
    let mut writes = tokio::task::JoinSet::new();
    for chunk in items.chunks(per_stream) {
        let (store, table, chunk) = (store.clone(), table.to_owned(), chunk.to_vec());
        writes.spawn(async move { store.put_items(&table, chunk).await });
    }
    while let Some(done) = writes.join_next().await {
        done.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
    }
    Ok(())
}

/// The string attribute `name` of `item`, if it holds one.
pub fn attr<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn n(value: i64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// An amount of cents in DynamoDB's canonical form (no trailing zeros).
fn decimal(cents: i64) -> String {
    match cents % 100 {
        0 => (cents / 100).to_string(),
        c if c % 10 == 0 => format!("{}.{}", cents / 100, c / 10),
        c => format!("{}.{c:02}", cents / 100),
    }
}

/// A time as the model stores `iso8601` fields and facets: UTC, milliseconds, `Z`.
pub fn iso(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn millis(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    rng.next_u64() % n
}

/// `count` distinct members of `items`, in a random order.
fn pick_distinct<'a>(rng: &mut ChaCha8Rng, items: &[&'a str], count: usize) -> Vec<&'a str> {
    let mut pool = items.to_vec();
    let mut picked = Vec::new();
    while picked.len() < count && !pool.is_empty() {
        picked.push(pool.swap_remove(below(rng, pool.len() as u64) as usize));
    }
    picked
}
