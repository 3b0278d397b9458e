//! Null propagation for field errors ("Handling Field Errors" in the GraphQL spec): a failed field
//! is null, and a null in a non-null position replaces the nearest nullable ancestor, or `data`.
//!
//! Every case runs one query twice through dynarelay: once with variables under which nothing
//! fails, and once with variables that make some fields fail. graphql-js then executes the same
//! query over `schema.graphql`, resolving every field to the first response and throwing at the
//! paths the test names (`tests/clients/null-propagation.mjs`); dynarelay's `data` and error paths
//! must equal graphql-js's.

use serde_json::{Value, json};

use crate::helpers::{TestApp, run_node};

/// The user every case reads, with two purchases.
const USER: &str = "nullability-user";

async fn app() -> TestApp {
    let app = TestApp::spawn().await;
    app.put_user(USER).await;
    app.put_purchases(USER, &[1_700_000_000_000, 1_700_000_001_000])
        .await;
    app
}

/// Runs `query` with `ok` variables (nothing may fail) and with `failing` ones, checks the second
/// response against graphql-js throwing at `throw_at`, and returns it.
async fn check(app: &TestApp, query: &str, ok: Value, failing: Value, throw_at: Value) -> Value {
    let succeeded = app.graphql(query, ok).await;
    assert!(
        succeeded.get("errors").is_none() && succeeded["data"].is_object(),
        "the query must succeed with the first variables: {succeeded}"
    );
    let response = app.graphql(query, failing.clone()).await;
    let input = json!({
        "schema": concat!(env!("CARGO_MANIFEST_DIR"), "/schema.graphql"),
        "query": query,
        "variables": failing,
        "data": succeeded["data"],
        "throwAt": throw_at,
    })
    .to_string();
    let run = run_node("null-propagation.mjs", &[input.as_str()], &[]).await;
    let reference: Value = serde_json::from_str(run.assert_success().stdout.trim())
        .unwrap_or_else(|err| panic!("graphql-js printed no JSON ({err}): {}", run.stdout));

    assert!(
        response.get("data").is_some(),
        "a response with field errors keeps its `data` entry: {response}"
    );
    assert_eq!(
        response["data"], reference["data"],
        "dynarelay's data differs from graphql-js's\n--- dynarelay\n{response}\n--- graphql-js\n{reference}"
    );
    assert_eq!(
        error_paths(&response),
        sorted(reference["errors"].as_array().unwrap()),
        "dynarelay's error paths differ from graphql-js's\n--- dynarelay\n{response}\n--- graphql-js\n{reference}"
    );
    response
}

fn error_paths(response: &Value) -> Vec<String> {
    let errors = response["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("the response has no errors: {response}"));
    for error in errors {
        assert_eq!(
            error["extensions"]["code"], "BAD_USER_INPUT",
            "each error keeps its own code: {error}"
        );
    }
    sorted(
        &errors
            .iter()
            .map(|error| error["path"].clone())
            .collect::<Vec<_>>(),
    )
}

fn sorted(paths: &[Value]) -> Vec<String> {
    let mut paths: Vec<String> = paths.iter().map(Value::to_string).collect();
    paths.sort();
    paths
}

/// The global ids of the user and of its first purchase.
async fn node_ids(app: &TestApp) -> (String, String) {
    let response = app
        .graphql(
            &format!(
                r#"{{ user(userId: "{USER}") {{ id purchases(first: 1) {{ edges {{ node {{ id }} }} }} }} }}"#
            ),
            json!({}),
        )
        .await;
    let user = &response["data"]["user"];
    (
        user["id"].as_str().unwrap().to_owned(),
        user["purchases"]["edges"][0]["node"]["id"]
            .as_str()
            .unwrap()
            .to_owned(),
    )
}

#[tokio::test]
async fn a_nullable_root_field_becomes_null_when_its_non_null_child_fails() {
    let app = app().await;
    let query = format!(
        r#"query($after: String) {{
            user(userId: "{USER}") {{ name purchases(first: 5, after: $after) {{ edges {{ cursor }} }} }}
        }}"#
    );
    let response = check(
        &app,
        &query,
        json!({ "after": null }),
        json!({ "after": "garbage" }),
        json!([["user", "purchases"]]),
    )
    .await;
    assert_eq!(response["data"], json!({ "user": null }));
}

#[tokio::test]
async fn a_chain_of_non_null_fields_up_to_the_root_makes_data_null() {
    let app = app().await;
    let query = "query($first: Int) {
        users(first: 1) { edges { node { name purchases(first: $first) { edges { cursor } } } } }
    }";
    let response = check(
        &app,
        query,
        json!({ "first": 1 }),
        json!({ "first": 1000 }),
        json!([["users", "edges", 0, "node", "purchases"]]),
    )
    .await;
    // `data: null` with errors that have paths is an executed request, not a request error.
    assert_eq!(response["data"], Value::Null);
    assert!(response.as_object().unwrap().contains_key("data"));
}

#[tokio::test]
async fn a_nullable_list_item_becomes_null_while_the_other_items_stay() {
    let app = app().await;
    let (user_id, purchase_id) = node_ids(&app).await;
    let query = "query($ids: [ID!]!, $after: String) {
        nodes(ids: $ids) {
            __typename id
            ... on User { name purchases(first: 1, after: $after) { edges { cursor } } }
            ... on Purchase { amount }
        }
    }";
    let ids = json!([purchase_id, user_id, purchase_id]);
    let response = check(
        &app,
        query,
        json!({ "ids": ids, "after": null }),
        json!({ "ids": ids, "after": "garbage" }),
        json!([["nodes", 1, "purchases"]]),
    )
    .await;
    let nodes = response["data"]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[1], Value::Null);
    assert_eq!(nodes[0]["id"], purchase_id);
    assert_eq!(nodes[2]["id"], purchase_id);
}

/// Null items of `nodes` (ids of nothing) sit beside failing ones: the missing items are null
/// without an error, the failing one is null with its error at its own index, the rest stay.
#[tokio::test]
async fn missing_and_failing_items_of_nodes_are_null_each_at_its_own_index() {
    let app = app().await;
    let (user_id, purchase_id) = node_ids(&app).await;
    // A well-formed id of a user that does not exist: "U" + S "nobody".
    let nobody = "VVMABm5vYm9keQ";
    let query = "query($ids: [ID!]!, $after: String) {
        nodes(ids: $ids) {
            __typename id
            ... on User { purchases(first: 1, after: $after) { edges { cursor } } }
        }
    }";
    let ids = json!([nobody, purchase_id, nobody, user_id, purchase_id]);
    let response = check(
        &app,
        query,
        json!({ "ids": ids, "after": null }),
        json!({ "ids": ids, "after": "garbage" }),
        json!([["nodes", 3, "purchases"]]),
    )
    .await;
    let nodes = response["data"]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 5, "{response}");
    for i in [0, 2, 3] {
        assert_eq!(nodes[i], Value::Null, "item {i}: {response}");
    }
    assert_eq!(nodes[1]["id"], purchase_id);
    assert_eq!(nodes[4]["id"], purchase_id);
}

#[tokio::test]
async fn an_aliased_field_propagates_its_null_under_its_alias() {
    let app = app().await;
    let query = format!(
        r#"query($after: String) {{
            broken: user(userId: "{USER}") {{
                name paged: purchases(first: 1, after: $after) {{ list: edges {{ cursor }} }}
            }}
            intact: user(userId: "{USER}") {{ name }}
        }}"#
    );
    let response = check(
        &app,
        &query,
        json!({ "after": null }),
        json!({ "after": "garbage" }),
        json!([["broken", "paged"]]),
    )
    .await;
    assert_eq!(response["data"]["broken"], Value::Null);
    assert_eq!(response["data"]["intact"]["name"], format!("User {USER}"));
}

#[tokio::test]
async fn a_field_failing_inside_a_fragment_propagates_like_any_other() {
    let app = app().await;
    let (user_id, _) = node_ids(&app).await;
    let query = format!(
        r#"query($id: ID!, $after: String) {{
            node(id: $id) {{ __typename ...Buyer }}
            user(userId: "{USER}") {{ ...Buyer }}
        }}
        fragment Buyer on User {{
            name
            ... on User {{ purchases(first: 1, after: $after) {{ edges {{ cursor }} }} }}
        }}"#
    );
    let response = check(
        &app,
        &query,
        json!({ "id": user_id, "after": null }),
        json!({ "id": user_id, "after": "garbage" }),
        json!([["node", "purchases"], ["user", "purchases"]]),
    )
    .await;
    assert_eq!(response["data"], json!({ "node": null, "user": null }));
}

#[tokio::test]
async fn a_failing_nullable_field_is_present_as_null_rather_than_missing() {
    let app = app().await;
    let (user_id, _) = node_ids(&app).await;
    let query = format!(
        r#"query($id: ID!) {{
            node(id: $id) {{ __typename id }}
            user(userId: "{USER}") {{ name }}
        }}"#
    );
    let response = check(
        &app,
        &query,
        json!({ "id": user_id }),
        json!({ "id": "garbage" }),
        json!([["node"]]),
    )
    .await;
    let data = response["data"].as_object().unwrap();
    assert_eq!(data.get("node"), Some(&Value::Null));
    assert_eq!(data["user"]["name"], format!("User {USER}"));
}

#[tokio::test]
async fn a_field_failing_inside_a_non_null_list_item_nulls_the_list_up_to_a_nullable_field() {
    let app = app().await;
    let query = format!(
        r#"query($after: String) {{
            user(userId: "{USER}") {{
                name
                purchases(first: 1) {{
                    edges {{
                        cursor
                        node {{
                            amount
                            user {{ name purchases(first: 1, after: $after) {{ edges {{ cursor }} }} }}
                        }}
                    }}
                }}
            }}
        }}"#
    );
    let response = check(
        &app,
        &query,
        json!({ "after": null }),
        json!({ "after": "garbage" }),
        json!([["user", "purchases", "edges", 0, "node", "user", "purchases"]]),
    )
    .await;
    assert_eq!(response["data"], json!({ "user": null }));
}

#[tokio::test]
async fn two_errors_at_once_each_null_their_own_nearest_nullable_ancestor() {
    let app = app().await;
    let (user_id, _) = node_ids(&app).await;
    let query = format!(
        r#"query($id: ID!, $after: String) {{
            user(userId: "{USER}") {{ name purchases(first: 1, after: $after) {{ edges {{ cursor }} }} }}
            node(id: $id) {{ __typename id }}
            users(first: 1) {{ edges {{ node {{ name }} }} }}
        }}"#
    );
    let response = check(
        &app,
        &query,
        json!({ "id": user_id, "after": null }),
        json!({ "id": "garbage", "after": "garbage" }),
        json!([["user", "purchases"], ["node"]]),
    )
    .await;
    assert_eq!(response["data"]["user"], Value::Null);
    assert_eq!(response["data"]["node"], Value::Null);
    assert_eq!(
        response["data"]["users"]["edges"][0]["node"]["name"],
        format!("User {USER}")
    );
    assert_eq!(response["errors"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_response_key_selected_twice_is_null_when_either_selection_fails() {
    let app = app().await;
    // async-graphql resolves each selection of `user` on its own and merges the results;
    // graphql-js merges the selections first. Either way the one `user` must become null.
    let query = format!(
        r#"query($after: String) {{
            user(userId: "{USER}") {{ name }}
            user(userId: "{USER}") {{ purchases(first: 1, after: $after) {{ edges {{ cursor }} }} }}
        }}"#
    );
    let response = check(
        &app,
        &query,
        json!({ "after": null }),
        json!({ "after": "garbage" }),
        json!([["user", "purchases"]]),
    )
    .await;
    assert_eq!(response["data"], json!({ "user": null }));
}
