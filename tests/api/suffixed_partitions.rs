//! Kinds told apart by literal text after a facet, as AWS's social network design keys them:
//! `u#{userId}#follower` beside `u#{userId}#following` and `u#{userId}#post`, in one table
//! with no type attribute, the values written as they are (an id may hold `#`). `check` accepts
//! them (no key reads under two of the templates), each connection's partition holds its own
//! kind only, and a Scan of one kind skips the others.

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
