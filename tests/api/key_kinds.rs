//! Kinds of item told apart by their keys alone, as AWS's published designs key them, in tables
//! with no type attribute and values written as they are: by literal text after a facet (the
//! social network's `u#{userId}#follower` beside `u#{userId}#following` and `u#{userId}#post`),
//! and by what a facet can hold (the chat's comments under a bare `{postedAt}` beside
//! memberships under `Join:{roomId}` in one partition: a date-time's text never begins with
//! `J`; an enum's values, `HAPPY` and `SAD`, neither). `check` accepts them (no key reads under
//! two of the templates), each connection holds its own kind only, the others' items it meets
//! skipped, and a Scan of one kind skips the rest.
//! An item collection whose members write the sort key alike takes sort conditions (the online
//! shop's products ordered and invoices of a customer in a date range, both under `{date}`).

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::Item;
use serde_json::{Value, json};

use crate::helpers::{
    all_nodes, check_offline, merge, model_app_from, model_file, put_plain, query_partition,
    walk_matches,
};

const MODEL: &str = r#"version = 1

[tables.Social]
partition_key = "PK"
sort_key = "SK"
attributes = { PK = "S", SK = "S" }

[entities.Follower]
table = "Social"
keys = { PK = "u#{userId}#follower", SK = "u#{followerId}" }
escape_keys = false
fields.userId = { type = "String!" }
fields.followerId = { type = "String!" }

[entities.Following]
table = "Social"
keys = { PK = "u#{userId}#following", SK = "u#{followedId}" }
escape_keys = false
fields.userId = { type = "String!" }
fields.followedId = { type = "String!" }

[entities.Post]
table = "Social"
keys = { PK = "u#{userId}#post", SK = "p#{postId}" }
escape_keys = false
fields.userId = { type = "String!" }
fields.postId = { type = "String!" }

[connections.followers]
entity = "Follower"
partition = { argument = "userId" }

[connections.following]
entity = "Following"
partition = { argument = "userId" }

[connections.posts]
entity = "Post"
partition = { argument = "userId" }

[connections.everyFollower]
entity = "Follower"
scan = true
"#;

fn item(pk: String, sk: String) -> Item {
    Item::from([
        ("PK".to_owned(), AttributeValue::S(pk)),
        ("SK".to_owned(), AttributeValue::S(sk)),
    ])
}

#[tokio::test]
async fn kinds_told_apart_after_a_facet_are_served_each_from_its_own_partitions() {
    let app = model_app_from(MODEL).await;
    let table = app.table("Social");
    let users = ["ann", "b#ob", "cy#2"];
    let mut items = Vec::new();
    for (u, user) in users.iter().enumerate() {
        for other in 0..(3 + u) {
            items.push(item(format!("u#{user}#follower"), format!("u#f{other}")));
            items.push(item(format!("u#{user}#following"), format!("u#g#{other}")));
            items.push(item(format!("u#{user}#post"), format!("p#{other}")));
        }
    }
    put_plain(app.client(), &table, items).await;

    let text = |v: &Value| v.as_str().unwrap_or_else(|| panic!("{v}")).to_owned();
    for (connection, suffix, field, prefix) in [
        ("followers", "follower", "followerId", "u#"),
        ("following", "following", "followedId", "u#"),
        ("posts", "post", "postId", "p#"),
    ] {
        let query = format!(
            "query($userId: String!, $first: Int, $after: String, $last: Int, $before: String) {{
              {connection}(userId: $userId, first: $first, after: $after, last: $last, before: $before) {{
                edges {{ cursor node {{ userId {field} }} }}
                pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }}
              }}
            }}"
        );
        for user in users {
            let partition = format!("u#{user}#{suffix}");
            let truth = query_partition(app.client(), &table, None, ("PK", &partition), true).await;
            assert!(truth.len() >= 3, "{partition}: {truth:?}");
            let want: Vec<String> = truth
                .iter()
                .map(|i| {
                    let sk = i["SK"].as_s().unwrap();
                    format!("{user}/{}", sk.strip_prefix(prefix).unwrap())
                })
                .collect();
            walk_matches(
                |paging| app.graphql(&query, merge(json!({ "userId": user }), paging)),
                &[connection],
                |node| format!("{}/{}", text(&node["userId"]), text(&node[field])),
                &want,
                &partition,
            )
            .await;
        }
    }

    // A Scan of followers skips every other kind's item.
    let scan = "query($first: Int, $after: String) { everyFollower(first: $first, after: $after) {
        nodes { userId followerId } pageInfo { hasNextPage endCursor } } }";
    for size in [1, 4, 100] {
        let nodes = all_nodes(|paging| app.graphql(scan, paging), &["everyFollower"], size).await;
        let mut got: Vec<String> = nodes
            .iter()
            .map(|n| format!("{}/{}", text(&n["userId"]), text(&n["followerId"])))
            .collect();
        got.sort();
        let mut want: Vec<String> = users
            .iter()
            .enumerate()
            .flat_map(|(u, user)| (0..(3 + u)).map(move |o| format!("{user}/f{o}")))
            .collect();
        want.sort();
        assert_eq!(got, want, "{size} a page");
    }
}

/// Templates a key could read under both are still refused: a facet may hold the text that
/// tells the others apart.
#[test]
fn templates_a_facet_could_make_alike_are_refused() {
    let overlapping = MODEL
        .replace("u#{userId}#following", "u#{userId}#follow{kind}")
        .replace(
            "fields.followedId = { type = \"String!\" }\n",
            "fields.followedId = { type = \"String!\" }\nfields.kind = { type = \"String!\" }\n",
        );
    let (valid, said) = check_offline(&model_file(&overlapping), &[]);
    assert!(!valid, "{said}");
    assert!(
        said.contains("entities `Follower` and `Following` could both match the same keys"),
        "{said}"
    );
    let (valid, said) = check_offline(&model_file(MODEL), &[]);
    assert!(valid, "{said}");
}

/// AWS's chat design: a user's partition holds their comments under the bare time they were
/// posted and their rooms under `Join:`.
const CHAT: &str = r#"version = 1

[tables.Chat]
partition_key = "PK"
sort_key = "SK"
attributes = { PK = "S", SK = "S" }

[entities.Comment]
table = "Chat"
keys = { PK = "User:{userId}", SK = "{postedAt}" }
escape_keys = false
fields.userId = { type = "String!" }
fields.postedAt = { type = "DateTime!", stored_as = "iso8601" }
fields.text = { type = "String" }

[entities.Membership]
table = "Chat"
keys = { PK = "User:{userId}", SK = "Join:{roomId}" }
escape_keys = false
fields.userId = { type = "String!" }
fields.roomId = { type = "String!" }

[connections.comments]
entity = "Comment"
partition = { argument = "userId" }
sort.min = { name = "since" }
sort.max = { name = "until" }

[connections.rooms]
entity = "Membership"
partition = { argument = "userId" }
"#;

#[tokio::test]
async fn bare_times_beside_prefixed_keys_are_told_apart_by_what_a_time_can_hold() {
    let app = model_app_from(CHAT).await;
    let table = app.table("Chat");
    let mut items = Vec::new();
    for (u, user) in ["ann", "b:ob"].iter().enumerate() {
        for n in 0..(5 + 2 * u) {
            let mut comment = item(
                format!("User:{user}"),
                format!("2026-01-{:02}T10:{n:02}:00.000Z", 10 + n),
            );
            comment.insert("text".to_owned(), AttributeValue::S(format!("c{n}")));
            items.push(comment);
            // Rooms sort after every time ('J' > '2'), and one before them ('#' < '0').
            items.push(item(format!("User:{user}"), format!("Join:r{n}")));
        }
        items.push(item(format!("User:{user}"), "#meta".to_owned()));
    }
    put_plain(app.client(), &table, items).await;

    let text = |v: &Value| v.as_str().unwrap_or_else(|| panic!("{v}")).to_owned();
    let comments = "query($userId: String!, $since: DateTime, $until: DateTime, $first: Int, $after: String, $last: Int, $before: String) {
      comments(userId: $userId, since: $since, until: $until, first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { postedAt text } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }";
    let rooms =
        "query($userId: String!, $first: Int, $after: String, $last: Int, $before: String) {
      rooms(userId: $userId, first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { roomId } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }";
    for user in ["ann", "b:ob"] {
        let partition = format!("User:{user}");
        let truth = query_partition(app.client(), &table, None, ("PK", &partition), true).await;
        let sk = |i: &Item| i["SK"].as_s().unwrap().clone();
        let times: Vec<String> = truth
            .iter()
            .map(sk)
            .filter(|s| s.starts_with("2026"))
            .collect();
        let joined: Vec<String> = truth
            .iter()
            .map(sk)
            .filter_map(|s| s.strip_prefix("Join:").map(str::to_owned))
            .collect();
        assert!(times.len() >= 5 && joined.len() >= 5, "{truth:?}");
        let vars = json!({ "userId": user });
        walk_matches(
            |paging| app.graphql(comments, merge(vars.clone(), paging)),
            &["comments"],
            |node| text(&node["postedAt"]),
            &times,
            &format!("comments of {user}"),
        )
        .await;
        walk_matches(
            |paging| app.graphql(rooms, merge(vars.clone(), paging)),
            &["rooms"],
            |node| text(&node["roomId"]),
            &joined,
            &format!("rooms of {user}"),
        )
        .await;
        // A range of times reads the comments in it only.
        let range = json!({ "userId": user, "since": times[1], "until": times[3] });
        walk_matches(
            |paging| app.graphql(comments, merge(range.clone(), paging)),
            &["comments"],
            |node| text(&node["postedAt"]),
            &times[1..=3],
            &format!("comments of {user} in a range"),
        )
        .await;
    }
}

/// A bare value that could hold the other's literal start is still refused: a `String` may
/// begin `Join:`.
#[test]
fn a_bare_value_that_could_begin_like_the_other_kind_is_refused() {
    let loose = CHAT.replace(
        "fields.postedAt = { type = \"DateTime!\", stored_as = \"iso8601\" }",
        "fields.postedAt = { type = \"String!\" }",
    );
    let (valid, said) = check_offline(&model_file(&loose), &[]);
    assert!(!valid, "{said}");
    assert!(
        said.contains("begins with a value, not with literal text"),
        "{said}"
    );
    let (valid, said) = check_offline(&model_file(CHAT), &[]);
    assert!(valid, "{said}");
}

/// AWS's online shop: a customer's orders and invoices share `GSI2`'s partition `c#{customerId}`
/// under a bare `{date}`, told apart by `EntityType`, with the customer's other items in the
/// table beside them.
const SHOP: &str = r#"version = 1

[tables.Shop]
partition_key = "PK"
sort_key = "SK"
type_attribute = "EntityType"
attributes = { PK = "S", SK = "S", GSI2PK = "S", GSI2SK = "S" }
indexes.GSI2 = { partition_key = "GSI2PK", sort_key = "GSI2SK" }

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

[connections.history]
members = ["Order", "Invoice"]
union = "Paper"
index = "GSI2"
partition = { argument = "customerId" }
sort.min = "from"
sort.max = "until"
"#;

#[tokio::test]
async fn a_collection_whose_members_write_the_sort_key_alike_takes_a_range() {
    let app = model_app_from(SHOP).await;
    let table = app.table("Shop");
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let mut items = Vec::new();
    for (c, customer) in ["c1", "c2"].iter().enumerate() {
        for n in 0..(6 + c) {
            let date = format!("2026-0{}-{:02}", 1 + n % 3, 10 + n);
            let (kind, id) = if n % 2 == 0 {
                ("order", "o")
            } else {
                ("invoice", "i")
            };
            let key = format!("{id}#{customer}-{n}");
            let mut item = Item::from([
                ("PK".to_owned(), s(&key)),
                ("SK".to_owned(), s(&key)),
                ("GSI2PK".to_owned(), s(&format!("c#{customer}"))),
                ("GSI2SK".to_owned(), s(&date)),
                ("EntityType".to_owned(), s(kind)),
                ("customerId".to_owned(), s(customer)),
                ("date".to_owned(), s(&date)),
            ]);
            if kind == "order" {
                item.insert("orderId".to_owned(), s(&format!("{customer}-{n}")));
            } else {
                item.insert("invoiceId".to_owned(), s(&format!("{customer}-{n}")));
                item.insert("amount".to_owned(), AttributeValue::N(n.to_string()));
            }
            items.push(item);
        }
    }
    put_plain(app.client(), &table, items).await;

    let query = "query($customerId: String!, $from: DateTime, $until: DateTime, $first: Int, $after: String, $last: Int, $before: String) {
      history(customerId: $customerId, from: $from, until: $until, first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { __typename ... on Order { date } ... on Invoice { date } } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }";
    // (A date is read as midnight UTC.)
    let label = |node: &Value| {
        let date = node["date"].as_str().unwrap_or("?");
        format!(
            "{} {}",
            node["__typename"].as_str().unwrap_or("?"),
            &date[..10.min(date.len())]
        )
    };
    for customer in ["c1", "c2"] {
        let truth = query_partition(
            app.client(),
            &table,
            Some("GSI2"),
            ("GSI2PK", &format!("c#{customer}")),
            true,
        )
        .await;
        let kind = |i: &Item| match i["EntityType"].as_s().unwrap().as_str() {
            "order" => "Order",
            _ => "Invoice",
        };
        let all: Vec<(String, String)> = truth
            .iter()
            .map(|i| {
                (
                    i["GSI2SK"].as_s().unwrap().clone(),
                    format!("{} {}", kind(i), i["GSI2SK"].as_s().unwrap()),
                )
            })
            .collect();
        assert!(all.len() >= 6, "{truth:?}");
        let want = |from: &str, until: &str| -> Vec<String> {
            all.iter()
                .filter(|(date, _)| date.as_str() >= from && date.as_str() <= until)
                .map(|(_, label)| label.clone())
                .collect()
        };
        let vars = json!({ "customerId": customer });
        walk_matches(
            |paging| app.graphql(query, merge(vars.clone(), paging)),
            &["history"],
            label,
            &want("0000", "9999"),
            &format!("the papers of {customer}"),
        )
        .await;
        let (from, until) = (all[1].0.clone(), all[4].0.clone());
        let midnight = |date: &str| format!("{date}T00:00:00.000Z");
        let range =
            json!({ "customerId": customer, "from": midnight(&from), "until": midnight(&until) });
        let ranged = want(&from, &until);
        assert!(ranged.len() >= 3 && ranged.len() < all.len(), "{ranged:?}");
        walk_matches(
            |paging| app.graphql(query, merge(range.clone(), paging)),
            &["history"],
            label,
            &ranged,
            &format!("the papers of {customer} in a range"),
        )
        .await;
    }
}

/// Members that write the sort key differently take no sort condition.
#[test]
fn a_collection_whose_members_write_the_sort_key_differently_takes_no_range() {
    let differ = SHOP.replace(
        r#"GSI2PK = "c#{customerId}", GSI2SK = "{date}" }
escape_keys = false
fields.invoiceId"#,
        r#"GSI2PK = "c#{customerId}", GSI2SK = "INV#{date}" }
escape_keys = false
fields.invoiceId"#,
    );
    assert_ne!(differ, SHOP);
    let (ok, problems) = check_offline(&model_file(&differ), &[]);
    assert!(!ok, "{problems}");
    assert!(
        problems.contains(
            "an item collection takes sort conditions only when its members write the sort key \
             alike: `Order` and `Invoice` write `GSI2SK` differently"
        ),
        "{problems}"
    );
}

/// A chat partition's moods under `{mood}#{at}`, `mood` an enum, beside memberships under
/// `Join:{roomId}`: an enum's values (`HAPPY`, `SAD`) never begin `Join:`, so `check` accepts
/// them without a type attribute, and each connection holds its own kind; values whose letters
/// could spell `Join:` are refused.
const MOODS: &str = r#"version = 1

[tables.Chat]
partition_key = "PK"
sort_key = "SK"
attributes = { PK = "S", SK = "S" }

[enums.Mood]
values = ["HAPPY", "SAD"]

[entities.Feeling]
table = "Chat"
keys = { PK = "User:{userId}", SK = "{mood}#{at}" }
escape_keys = false
fields.userId = { type = "String!" }
fields.mood = { type = "Mood!" }
fields.at = { type = "String!" }

[entities.Membership]
table = "Chat"
keys = { PK = "User:{userId}", SK = "Join:{roomId}" }
escape_keys = false
fields.userId = { type = "String!" }
fields.roomId = { type = "String!" }

[connections.feelings]
entity = "Feeling"
partition = { argument = "userId" }

[connections.rooms]
entity = "Membership"
partition = { argument = "userId" }
"#;

#[tokio::test]
async fn an_enum_leading_a_key_is_told_apart_by_the_values_it_can_hold() {
    let loose = MOODS.replace("[\"HAPPY\", \"SAD\"]", "[\"HAPPY\", \"JOIN_IN:NOW\"]");
    let (valid, said) = check_offline(&model_file(&loose), &[]);
    assert!(!valid, "{said}");
    let app = model_app_from(MOODS).await;
    let table = app.table("Chat");
    let mut items = Vec::new();
    for n in 0..6 {
        let mood = ["HAPPY", "SAD"][n % 2];
        items.push(item("User:ann".to_owned(), format!("{mood}#t{n}")));
        items.push(item("User:ann".to_owned(), format!("Join:r#{n}")));
    }
    put_plain(app.client(), &table, items).await;
    let truth = query_partition(app.client(), &table, None, ("PK", "User:ann"), true).await;
    let sk = |i: &Item| i["SK"].as_s().unwrap().clone();
    let feelings: Vec<String> = truth
        .iter()
        .map(sk)
        .filter(|s| !s.starts_with("Join:"))
        .collect();
    let rooms: Vec<String> = truth
        .iter()
        .map(sk)
        .filter_map(|s| s.strip_prefix("Join:").map(str::to_owned))
        .collect();
    let text = |v: &Value| v.as_str().unwrap_or_else(|| panic!("{v}")).to_owned();
    for (connection, fields, want) in [
        ("feelings", "mood at", &feelings),
        ("rooms", "roomId", &rooms),
    ] {
        let query = format!(
            "query($first: Int, $after: String, $last: Int, $before: String) {{
              {connection}(userId: \"ann\", first: $first, after: $after, last: $last, before: $before) {{
                edges {{ cursor node {{ {fields} }} }}
                pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }}
              }}
            }}"
        );
        walk_matches(
            |paging| app.graphql(&query, paging),
            &[connection],
            |node| match connection {
                "feelings" => format!("{}#{}", text(&node["mood"]), text(&node["at"])),
                _ => text(&node["roomId"]),
            },
            want,
            connection,
        )
        .await;
    }
}
