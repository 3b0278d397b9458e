//! Kinds of item told apart by their keys alone, as AWS's published designs key them, in tables
//! with no type attribute and values written as they are: by literal text after a facet (the
//! social network's `u#{userId}#follower` beside `u#{userId}#following` and `u#{userId}#post`),
//! and by what a facet can hold (the chat's comments under a bare `{postedAt}` beside
//! memberships under `Join:{roomId}` in one partition: a date-time's text never begins with
//! `J`). `check` accepts them (no key reads under two of the templates), each connection holds
//! its own kind only, the others' items it meets skipped, and a Scan of one kind skips the rest.

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
