//! `init` on tables keyed as AWS's published designs key them, with no type attribute: the kinds
//! are told apart by the keys alone. The social network's partitions differ only in the word
//! after the user (`u#<userId>#follower`, `#following`, `#post`, `#timeline`), its users' items
//! by a literal sort key (`info`, `count`), a post's likes by `p#<postId>#likelist` and
//! `#likecount`; the chat's comments lie under a bare time (`2026-…Z`) beside memberships under
//! `Join:<roomId>` in one user's partition. `init` proposes an entity per key shape, with
//! arguments for the values alone (never a raw `PK`), and its model, as written, serves every
//! item as its kind and walks every connection as DynamoDB reads.

use dynarelay::dynamo::Item;

use super::{Truth, item, n, s, serve_and_walk};
use serde_json::{Value, json};

use super::walk::walk_everything;
use crate::helpers::{
    ModelApp, check_generated, items_file, model_app, model_app_from, model_app_over,
    query_partition,
};

/// The social network as its design reads it, by hand: the example, whose items file is
/// [`social`]'s.
const SOCIAL: &str = "examples/social/dynarelay.toml";

/// The names `init` gives the example's entities.
const INIT_NAMES: [(&str, &str); 8] = [
    ("User", "Info"),
    ("UserStats", "Count"),
    ("Follower", "Follower"),
    ("Following", "Following"),
    ("Post", "Post"),
    ("TimelineEntry", "Timeline"),
    ("Like", "Likelist"),
    ("LikeCount", "Likecount"),
];

/// The social network's items: users with 1 to 4 followers, followings, posts and timeline
/// entries, posts with likes; ids hold letters and digits as AWS's samples do (`u#12345`).
fn social() -> Vec<(&'static str, Item)> {
    let users = ["12345", "23456", "34567", "ann", "b0b"];
    let mut items = Vec::new();
    for (u, user) in users.iter().enumerate() {
        let other = |k: usize| users[(u + k + 1) % users.len()];
        items.push((
            "User",
            item([
                ("PK", s(format!("u#{user}"))),
                ("SK", s("info")),
                ("name", s(format!("User {user}"))),
                ("imageUrl", s(format!("https://img.example/{user}.png"))),
            ]),
        ));
        items.push((
            "UserStats",
            item([
                ("PK", s(format!("u#{user}"))),
                ("SK", s("count")),
                ("followerCount", n(u + 1)),
                ("followingCount", n(u + 2)),
                ("postCount", n(u)),
            ]),
        ));
        for k in 0..(1 + u % 4) {
            items.push((
                "Follower",
                item([
                    ("PK", s(format!("u#{user}#follower"))),
                    ("SK", s(format!("u#{}", other(k)))),
                ]),
            ));
            items.push((
                "Following",
                item([
                    ("PK", s(format!("u#{user}#following"))),
                    ("SK", s(format!("u#{}", other(k + 1)))),
                ]),
            ));
            let post = format!("{user}p{k}");
            items.push((
                "Post",
                item([
                    ("PK", s(format!("u#{user}#post"))),
                    ("SK", s(format!("p#{post}"))),
                    ("content", s(format!("post {k} of {user}"))),
                    ("imageUrl", s(format!("https://img.example/{post}.png"))),
                    ("timestamp", s(format!("2026-03-0{}T10:00:00.000Z", k + 1))),
                ]),
            ));
            items.push((
                "TimelineEntry",
                item([
                    ("PK", s(format!("u#{user}#timeline"))),
                    ("SK", s(format!("p#{}p{k}#u#{}", other(k), other(k)))),
                    ("ttl", n(1_800_000_000 + k)),
                ]),
            ));
            for liker in 0..=k {
                items.push((
                    "Like",
                    item([
                        ("PK", s(format!("p#{post}#likelist"))),
                        ("SK", s(format!("u#{}", other(liker)))),
                    ]),
                ));
            }
            items.push((
                "LikeCount",
                item([
                    ("PK", s(format!("p#{post}#likecount"))),
                    ("SK", s("count")),
                    ("likeCount", n(k + 1)),
                ]),
            ));
        }
    }
    items
}

/// The chat's user partitions, by hand: the comments' entity named `User`, as `init` names it
/// (after the partition, with nothing else to name it by).
const CHAT: &str = r#"version = 1

[tables.Chat]
partition_key = "PK"
sort_key = "SK"
attributes = { PK = "S", SK = "S" }

[entities.User]
table = "Chat"
keys = { PK = "User:{userId}", SK = "{postedAt}" }
escape_keys = false
fields.userId = { type = "String!" }
fields.postedAt = { type = "DateTime!", stored_as = "iso8601" }
fields.text = { type = "String" }

[entities.Join]
table = "Chat"
keys = { PK = "User:{userId}", SK = "Join:{roomId}" }
escape_keys = false
fields.userId = { type = "String!" }
fields.roomId = { type = "String!" }
fields.joinedAt = { type = "String" }
fields.role = { type = "String" }
"#;

/// Comments under a bare time beside memberships under `Join:<roomId>`, in each user's
/// partition.
fn chat() -> Vec<(&'static str, Item)> {
    let mut items = Vec::new();
    for (u, user) in ["ann", "bob", "cyd"].iter().enumerate() {
        for k in 0..(3 + u) {
            let at = format!("2026-01-{:02}T10:{k:02}:00.000Z", 10 + k);
            items.push((
                "User",
                item([
                    ("PK", s(format!("User:{user}"))),
                    ("SK", s(&at)),
                    ("text", s(format!("comment {k} of {user}"))),
                ]),
            ));
            items.push((
                "Join",
                item([
                    ("PK", s(format!("User:{user}"))),
                    ("SK", s(format!("Join:room{k}"))),
                    ("joinedAt", s(format!("2025-12-{:02}", 10 + k))),
                    ("role", s(["MEMBER", "OWNER"][k % 2])),
                ]),
            ));
        }
    }
    items
}

/// `init`'s model of `items` written under `hand`'s model, served and walked; the hand app and
/// the model's text.
async fn inferred(
    model: &str,
    table: &str,
    items: Vec<(&'static str, Item)>,
    name: &str,
) -> (ModelApp, String) {
    let hand = model_app_from(model).await;
    let (text, kinds) = super::hand_rolled::written(&hand, table, items, name).await;
    serve_and_walk(&hand, name, &text, Truth::Kinds(&kinds)).await;
    (hand, text)
}

/// Each kind is an entity of its own, named for the word its keys hold, with the values alone
/// as arguments.
#[tokio::test]
async fn kinds_told_apart_by_a_word_after_a_value_or_a_literal_sort_key_are_entities() {
    let hand = model_app(SOCIAL).await;
    let items = social();
    check_generated(
        "examples/social/items.json",
        &items_file(&[("Social", items.iter().map(|(_, item)| item).collect())]),
    );
    let (text, kinds) = super::hand_rolled::written(&hand, "Social", items, "social").await;
    // The example serves every item as its kind, and walks as DynamoDB reads.
    walk_everything(&hand, Truth::Kinds(&kinds)).await;
    // Its nodes refetch together (one BatchGetItem), as a client's cache does.
    let page = hand
        .graphql(
            r#"{ followers(userId: "34567") { nodes { id } } }"#,
            json!({}),
        )
        .await;
    let ids: Vec<Value> = page["data"]["followers"]["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("{page}"))
        .iter()
        .map(|n| n["id"].clone())
        .collect();
    assert!(ids.len() >= 2, "{page}");
    let refetched = hand
        .graphql(
            "query($ids: [ID!]!) { nodes(ids: $ids) { id } }",
            json!({ "ids": ids }),
        )
        .await;
    assert_eq!(
        refetched["data"]["nodes"], page["data"]["followers"]["nodes"],
        "{refetched}"
    );
    let init_kinds = kinds
        .iter()
        .map(|(key, kind)| {
            let (_, named) = INIT_NAMES.iter().find(|(hand, _)| hand == kind).unwrap();
            (key.clone(), *named)
        })
        .collect();
    serve_and_walk(&hand, "social", &text, Truth::Kinds(&init_kinds)).await;
    for (entity, keys) in [
        ("Follower", "PK = \"u#{"),
        ("Following", "PK = \"u#{"),
        ("Post", "PK = \"u#{"),
        ("Timeline", "PK = \"u#{"),
        ("Likelist", "PK = \"p#{"),
        ("Likecount", "PK = \"p#{"),
        ("Info", "SK = \"info\""),
        ("Count", "SK = \"count\""),
    ] {
        let section = section(&text, entity);
        assert!(section.contains(keys), "{entity}: {section}\n{text}");
    }
    assert!(
        !text.contains("argument = \"pK\"") && !text.contains("(PK:"),
        "a raw key as an argument:\n{text}"
    );

    // Writes are written off, a line each: turned on, a follower created is one of the user's
    // followers, under the keys the design writes.
    let lines = text
        .lines()
        .filter(|l| l.starts_with("# mutations."))
        .count();
    assert_eq!(lines, 3 * 8, "{text}");
    let on = text.replace("\n# mutations.", "\nmutations.");
    let served = model_app_over(&on, &hand.prefix);
    let created = served
        .graphql(
            r#"mutation { createFollower(input: { uId: "zed", uId2: "amy" }) { follower { uId uId2 } } }"#,
            json!({}),
        )
        .await;
    assert_eq!(
        created["data"]["createFollower"]["follower"],
        json!({ "uId": "zed", "uId2": "amy" }),
        "{created}"
    );
    let read = served
        .graphql(
            r#"{ followersByUId(uId: "zed") { nodes { uId2 } } }"#,
            json!({}),
        )
        .await;
    assert_eq!(
        read["data"]["followersByUId"]["nodes"],
        json!([{ "uId2": "amy" }]),
        "{read}"
    );
    let truth = query_partition(
        hand.client(),
        &hand.table("Social"),
        None,
        ("PK", "u#zed#follower"),
        true,
    )
    .await;
    assert_eq!(truth.len(), 1, "{truth:?}");
    assert_eq!(truth[0]["SK"], s("u#amy"));
}

/// Comments under a bare time are an entity of their own beside the memberships, the time a
/// `DateTime` read from the key.
#[tokio::test]
async fn bare_times_beside_prefixed_keys_are_entities() {
    let (hand, text) = inferred(CHAT, "Chat", chat(), "chat").await;
    let comments = section(&text, "User");
    assert!(comments.contains("SK = \"{at}\""), "{comments}\n{text}");
    assert!(
        comments.contains("at = { type = \"DateTime!\", stored_as = \"iso8601\""),
        "{comments}\n{text}"
    );
    assert!(section(&text, "Join").contains("SK = \"Join:{"), "{text}");

    // A field of a few values is an equality filter on the connections (review-marked).
    assert!(
        text.contains("filters.role = { field = \"role\", op = \"=\""),
        "{text}"
    );
    let served = model_app_over(&text, &hand.prefix);
    let owners = served
        .graphql(
            r#"{ joinsByUserId(userId: "cyd", role: OWNER) { nodes { joinId role } } }"#,
            json!({}),
        )
        .await;
    assert_eq!(
        owners["data"]["joinsByUserId"]["nodes"],
        json!([
            { "joinId": "room1", "role": "OWNER" },
            { "joinId": "room3", "role": "OWNER" }
        ]),
        "{owners}"
    );
}

/// The section of entity `name`, with its fields.
fn section<'t>(text: &'t str, name: &str) -> &'t str {
    let start = text
        .find(&format!("[entities.{name}]"))
        .unwrap_or_else(|| panic!("no entity {name}:\n{text}"));
    let rest = &text[start..];
    let own = format!("[entities.{name}.");
    let end = rest
        .match_indices("\n[")
        .map(|(at, _)| at + 1)
        .find(|&at| !rest[at..].starts_with(&own))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// Kinds whose keys `init` cannot tell apart safely (a value of free text, here numbers written
/// at several widths, beside `Join:<roomId>`: such text may begin `Join:`) are proposed as one
/// type, with the reason, rather than as a model its own check refuses; that model serves every
/// item.
#[tokio::test]
async fn kinds_that_cannot_be_told_apart_safely_are_one_type_with_the_reason() {
    let items = chat()
        .into_iter()
        .enumerate()
        .map(|(at, (kind, mut item))| {
            if kind == "User" {
                item.insert("SK".to_owned(), s(format!("{}", 7 + at * 13)));
            }
            ("", item)
        })
        .collect();
    let hand = model_app_from(CHAT).await;
    let (text, _) = super::hand_rolled::written(&hand, "Chat", items, "chat_one_type").await;
    assert!(
        text.contains("# review: the types this table's items seem to hold could not be told"),
        "{text}"
    );
    assert_eq!(text.matches("\nid_tag = ").count(), 1, "{text}");
    dynarelay::model::parse("init's model", &text).unwrap();
    serve_and_walk(&hand, "chat_one_type", &text, Truth::TypeAttribute).await;
}

/// Accounts and their payments, the payments filed under their due date in `GSI1`, an INCLUDE
/// index holding the keys and `amount` only (AWS's recurring payments design), by hand.
const PAYMENTS: &str = r#"version = 1

[tables.Payments]
partition_key = "PK"
sort_key = "SK"
attributes = { PK = "S", SK = "S", GSI1PK = "S", GSI1SK = "S" }
indexes.GSI1 = { partition_key = "GSI1PK", sort_key = "GSI1SK", projection = ["amount"] }

[entities.Profile]
table = "Payments"
keys = { PK = "ACC#{accountId}", SK = "PROFILE" }
escape_keys = false
fields.accountId = { type = "String!" }
fields.owner = { type = "String!" }

[entities.Sub]
table = "Payments"
keys = { PK = "ACC#{accountId}", SK = "SUB#{subId}", GSI1PK = "DUE#{dueDate}", GSI1SK = "ACC#{accountId}#SUB#{subId}" }
escape_keys = false
fields.accountId = { type = "String!" }
fields.subId = { type = "String!" }
fields.dueDate = { type = "String!" }
fields.amount = { type = "Decimal!" }
"#;

/// Payments whose fields are `amount` and the values their keys hold: `init` proposes their
/// connection over the INCLUDE index, which holds `amount` and gives the rest back from its keys
/// and the table's, and it walks as DynamoDB reads the index.
#[tokio::test]
async fn an_include_index_holding_what_the_keys_do_not_is_a_connection() {
    let mut items = Vec::new();
    for (a, account) in ["a1", "b2", "c3"].iter().enumerate() {
        items.push((
            "Profile",
            item([
                ("PK", s(format!("ACC#{account}"))),
                ("SK", s("PROFILE")),
                ("owner", s(format!("owner of {account}"))),
            ]),
        ));
        for sub in 0..(2 + a) {
            let due = ["2026-01-05", "2026-02-01"][(a + sub) % 2];
            items.push((
                "Sub",
                item([
                    ("PK", s(format!("ACC#{account}"))),
                    ("SK", s(format!("SUB#s{sub}"))),
                    ("GSI1PK", s(format!("DUE#{due}"))),
                    ("GSI1SK", s(format!("ACC#{account}#SUB#s{sub}"))),
                    ("amount", n(format!("{a}{sub}.25"))),
                ]),
            ));
        }
    }
    let (_, text) = inferred(PAYMENTS, "Payments", items, "payments").await;
    let over_index = text
        .split("\n[")
        .find(|s| s.contains("entity = \"Sub\"") && s.contains("index = \"GSI1\""))
        .unwrap_or_else(|| panic!("no connection of Sub over GSI1:\n{text}"));
    assert!(over_index.contains("partition = "), "{over_index}");
}

/// AWS's online shop, by hand: a customer's orders and invoices filed under `c#<customerId>` in
/// `GSI2`, both under a bare `{date}`, told apart by `EntityType`.
const SHOP: &str = r#"version = 1

[tables.Shop]
partition_key = "PK"
sort_key = "SK"
type_attribute = "EntityType"
attributes = { PK = "S", SK = "S", GSI2PK = "S", GSI2SK = "S" }
indexes.GSI2 = { partition_key = "GSI2PK", sort_key = "GSI2SK" }

[entities.Customer]
table = "Shop"
type_value = "customer"
keys = { PK = "c#{customerId}", SK = "c#{customerId}" }
escape_keys = false
fields.customerId = { type = "String!" }
fields.email = { type = "String!" }

[entities.Order]
table = "Shop"
type_value = "order"
keys = { PK = "o#{orderId}", SK = "o#{orderId}", GSI2PK = "c#{customerId}", GSI2SK = "{date}" }
escape_keys = false
fields.orderId = { type = "String!" }
fields.customerId = { type = "String!" }
fields.date = { type = "DateTime!", stored_as = "date" }

[entities.Invoice]
table = "Shop"
type_value = "invoice"
keys = { PK = "i#{invoiceId}", SK = "i#{invoiceId}", GSI2PK = "c#{customerId}", GSI2SK = "{date}" }
escape_keys = false
fields.invoiceId = { type = "String!" }
fields.customerId = { type = "String!" }
fields.date = { type = "DateTime!", stored_as = "date" }
fields.amount = { type = "Int!" }
"#;

/// The orders and invoices a customer's partition of `GSI2` holds are one collection in `init`'s
/// model, read by a range of dates (both write `GSI2SK` as the date alone), and it walks as
/// DynamoDB reads the index.
#[tokio::test]
async fn a_collection_of_kinds_keyed_alike_is_read_by_a_range() {
    let mut items = Vec::new();
    for (c, customer) in ["c1", "c2", "c3"].iter().enumerate() {
        items.push((
            "Customer",
            item([
                ("PK", s(format!("c#{customer}"))),
                ("SK", s(format!("c#{customer}"))),
                ("EntityType", s("customer")),
                ("email", s(format!("{customer}@example.com"))),
            ]),
        ));
        for k in 0..(3 + c) {
            let date = format!("2026-0{}-{:02}", 1 + k % 3, 10 + k);
            let (kind, prefix) = if k % 2 == 0 {
                ("Order", "o")
            } else {
                ("Invoice", "i")
            };
            let id = format!("{prefix}{c}{k}");
            let mut it = item([
                ("PK", s(format!("{prefix}#{id}"))),
                ("SK", s(format!("{prefix}#{id}"))),
                ("GSI2PK", s(format!("c#{customer}"))),
                ("GSI2SK", s(&date)),
                ("EntityType", s(kind.to_lowercase())),
                ("customerId", s(*customer)),
                ("date", s(&date)),
            ]);
            if kind == "Invoice" {
                it.insert("amount".to_owned(), n(10 * k));
                it.insert("invoiceId".to_owned(), s(&id));
            } else {
                it.insert("orderId".to_owned(), s(&id));
            }
            items.push((kind, it));
        }
    }
    let (hand, text) = inferred(SHOP, "Shop", items, "shop_collection").await;
    let collection = text
        .split("\n[")
        .find(|s| s.contains("index = \"GSI2\"") && s.contains("members = ["))
        .unwrap_or_else(|| panic!("no collection over GSI2:\n{text}"));
    assert!(
        collection.contains("\"Order\"") && collection.contains("\"Invoice\""),
        "{collection}"
    );
    assert!(collection.contains("sort.min = "), "{collection}");
    // A range of dates: the third customer's papers from February to March, by date.
    let served = model_app_over(&text, &hand.prefix);
    let range = served
        .graphql(
            r#"{ invoiceAndOrderByCustomerId(customerId: "c3", GSI2SKMin: "2026-02-01T00:00:00Z", GSI2SKMax: "2026-03-31T00:00:00Z") {
                nodes { ... on Order { orderId } ... on Invoice { invoiceId } } } }"#,
            json!({}),
        )
        .await;
    assert_eq!(
        range["data"]["invoiceAndOrderByCustomerId"]["nodes"],
        json!([{ "invoiceId": "i21" }, { "orderId": "o24" }, { "orderId": "o22" }]),
        "{range}"
    );
}

/// AWS's complaint management design, by hand: each complaint's partition is its bare id
/// (`Complaint1`), holding its `metadata`, its communications under `comm#<time>#<id>` and its
/// escalations under `escal#<time>`; no type attribute.
const COMPLAINTS: &str = r#"version = 1

[tables.Complaints]
partition_key = "PK"
sort_key = "SK"
attributes = { PK = "S", SK = "S" }

[entities.Metadata]
table = "Complaints"
keys = { PK = "{complaintId}", SK = "metadata" }
escape_keys = false
fields.complaintId = { type = "String!" }
fields.severity = { type = "String!" }

[entities.Comm]
table = "Complaints"
keys = { PK = "{complaintId}", SK = "comm#{at}#{commId}" }
escape_keys = false
fields.complaintId = { type = "String!" }
fields.at = { type = "String!" }
fields.commId = { type = "String!" }

[entities.Escal]
table = "Complaints"
keys = { PK = "{complaintId}", SK = "escal#{at}" }
escape_keys = false
fields.complaintId = { type = "String!" }
fields.at = { type = "String!" }
"#;

/// Partitions named by a bare id are values, not kinds: the kinds are the sort keys' (`metadata`,
/// `comm#…`, `escal#…`), each an entity of `init`'s model, its severity a filter.
#[tokio::test]
async fn partitions_of_bare_ids_hold_kinds_told_apart_by_their_sort_keys() {
    let mut items = Vec::new();
    for c in 0..8 {
        let pk = format!("Complaint{}", 1000 + c);
        items.push((
            "Metadata",
            item([
                ("PK", s(&pk)),
                ("SK", s("metadata")),
                ("severity", s(["P1", "P2", "P3"][c % 3])),
                ("complaint_state", s(["waiting", "resolved"][c % 2])),
                ("customer_id", s(format!("custXYZ{}", c % 4))),
            ]),
        ));
        for k in 0..(1 + c % 3) {
            items.push((
                "Comm",
                item([
                    ("PK", s(&pk)),
                    (
                        "SK",
                        s(format!("comm#2023-05-0{}T10:0{k}:00Z#comm{c}{k}", 1 + k)),
                    ),
                    ("comm_text", s(format!("message {k}"))),
                ]),
            ));
        }
        if c % 2 == 0 {
            items.push((
                "Escal",
                item([
                    ("PK", s(&pk)),
                    ("SK", s(format!("escal#2023-05-0{}T12:00:00Z", 1 + c % 5))),
                    ("escalated_to", s(format!("Agent{c}"))),
                ]),
            ));
        }
    }
    let (_, text) = inferred(COMPLAINTS, "Complaints", items, "complaints").await;
    for (entity, sk) in [
        ("Metadata", "SK = \"metadata\""),
        ("Comm", "SK = \"comm#{"),
        ("Escal", "SK = \"escal#{"),
    ] {
        assert!(section(&text, entity).contains(sk), "{entity}:\n{text}");
    }
    assert!(text.contains("filters.severity = "), "{text}");
}
