//! OneTable (`examples/onetable`): `project#<id>` partitions, issue numbers zero-padded to 8
//! digits in keys, `_type` naming each item's model, `created` / `updated` as epoch
//! milliseconds, and OneTable's own `_unique#…` items in the same table.

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Value, json};

use super::{pick, refetch_all, scanned, stamps, text};
use crate::helpers::{
    GroundQuery, ModelApp, merge, model_app, query_all, read_back, walk_matches, written_by,
};

const MODEL: &str = "examples/onetable/dynarelay.toml";

const ISSUE_FIELDS: [&str; 4] = ["projectId", "seq", "title", "state"];

const ISSUES: &str = r#"query($id: ID!, $first: Int, $after: String, $last: Int, $before: String,
    $from: Int, $to: Int) {
  project(projectId: $id) {
    issues(first: $first, after: $after, last: $last, before: $before,
           fromNumber: $from, toNumber: $to) {
      edges { cursor node { id projectId seq title state created updated project { projectId } } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}"#;

const BY_STATE: &str = r#"query($state: IssueState!, $first: Int, $after: String, $last: Int, $before: String) {
  issuesByState(state: $state, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { projectId seq title state } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

/// Every project's issues and the issues in each state, walked at every page size both ways,
/// are exactly what OneTable's own `find` returns, field for field, with `created` and
/// `updated` as times; ranges on the padded issue number select exactly; OneTable's `_unique`
/// items are no one's.
#[tokio::test]
async fn onetable_data_is_served_as_onetable_reads_it() {
    let app = model_app(MODEL).await;
    let truth = written_by("onetable", &app.table("Tracker")).await;
    let stamps = stamps(&app, "Tracker", ["pk", "sk"], ["created", "updated"]).await;
    let projects = truth["projects"].as_array().unwrap();
    assert_eq!(projects.len(), 8, "{truth}");
    let seqs =
        |list: &[Value]| -> Vec<String> { list.iter().map(|i| i["seq"].to_string()).collect() };

    let mut issues = Vec::new();
    for project in projects {
        let id = text(project, "id");
        let answer = app
            .graphql(
                "query($id: ID!) { project(projectId: $id) { projectId name created } }",
                json!({ "id": id }),
            )
            .await;
        let (created, _) = &stamps[&(format!("project#{id}"), "project#".to_owned())];
        assert_eq!(
            answer["data"]["project"],
            json!({ "projectId": id, "name": project["name"], "created": created }),
            "{answer}"
        );
        let want = truth["issuesByProject"][&id].as_array().unwrap();
        let vars = json!({ "id": id });
        let nodes = walk_matches(
            |paging| app.graphql(ISSUES, merge(vars.clone(), paging)),
            &["project", "issues"],
            |node| node["seq"].to_string(),
            &seqs(want),
            &format!("{id}'s issues"),
        )
        .await;
        for (node, want) in nodes.iter().zip(want) {
            assert_eq!(pick(node, &ISSUE_FIELDS), pick(want, &ISSUE_FIELDS));
            assert_eq!(node["project"]["projectId"], id.as_str());
            let key = (
                format!("project#{id}"),
                format!("issue#{:08}", node["seq"].as_i64().unwrap()),
            );
            let (created, updated) = &stamps[&key];
            assert_eq!(
                (&text(node, "created"), &text(node, "updated")),
                (created, updated)
            );
        }
        issues.extend(nodes);
        // A range of issue numbers, on the padded key.
        if want.len() > 10 {
            let (from, to) = (
                want[want.len() / 4]["seq"].as_i64().unwrap(),
                want[want.len() / 2]["seq"].as_i64().unwrap(),
            );
            let expected: Vec<Value> = want
                .iter()
                .filter(|i| (from..=to).contains(&i["seq"].as_i64().unwrap()))
                .cloned()
                .collect();
            let vars = json!({ "id": id, "from": from, "to": to });
            walk_matches(
                |paging| app.graphql(ISSUES, merge(vars.clone(), paging)),
                &["project", "issues"],
                |node| node["seq"].to_string(),
                &seqs(&expected),
                &format!("{id}'s issues {from}..={to}"),
            )
            .await;
        }
    }

    refetch_all(
        &app,
        "Issue",
        &issues,
        &["id", "projectId", "seq", "title", "state"],
    )
    .await;

    let issue_key = |i: &Value| format!("{}/{}", text(i, "projectId"), i["seq"]);
    for (state, want) in truth["issuesByState"].as_object().unwrap() {
        let want = want.as_array().unwrap();
        assert!(!want.is_empty(), "{state}");
        let vars = json!({ "state": state });
        let nodes = walk_matches(
            |paging| app.graphql(BY_STATE, merge(vars.clone(), paging)),
            &["issuesByState"],
            issue_key,
            &want.iter().map(issue_key).collect::<Vec<_>>(),
            &format!("issues {state}"),
        )
        .await;
        for (node, want) in nodes.iter().zip(want) {
            assert_eq!(pick(node, &ISSUE_FIELDS), pick(want, &ISSUE_FIELDS));
        }
    }

    // Projects by a Scan: OneTable's `_unique#…` items are skipped.
    let got: Vec<String> = scanned(&app, "projects", "projectId", "projectId")
        .await
        .iter()
        .map(|p| text(p, "projectId"))
        .collect();
    let mut want: Vec<String> = projects.iter().map(|p| text(p, "id")).collect();
    want.sort();
    assert_eq!(got, want);

    wide_numbers_range_in_the_keys_byte_order(&app, &truth).await;
}

/// The largest project holds issue numbers wider than the key's 8 digits (OneTable writes
/// `issue#123456789` unpadded). Every range with bounds of 1 to 10 digits, wider than the width
/// included, selects exactly what DynamoDB's own `KeyConditionExpression` selects for the same
/// bounds rendered as the keys are (`BETWEEN`, `>=`, `<=`), in its byte order; bounds whose keys
/// are out of order are refused before any read, as DynamoDB would refuse them.
async fn wide_numbers_range_in_the_keys_byte_order(app: &ModelApp, truth: &Value) {
    let project = truth["issuesByProject"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, issues)| issues.as_array().unwrap().len() == 250)
        .map(|(id, _)| id.clone())
        .expect("the project with 250 issues");
    let wide = truth["issuesByProject"][&project]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["seq"].as_i64().unwrap() >= 100_000_000)
        .count();
    assert_eq!(wide, 4, "the writer's numbers wider than 8 digits");
    let table = app.table("Tracker");
    let key = |n: i64| AttributeValue::S(format!("issue#{n:08}"));
    let ground = |condition: &'static str, values: Vec<(&'static str, AttributeValue)>| {
        let table = table.clone();
        let project = project.clone();
        async move {
            let mut values = values;
            values.push((":p", AttributeValue::S(format!("project#{project}"))));
            let query = GroundQuery {
                table: &table,
                index: None,
                condition,
                names: &[("#p", "pk"), ("#s", "sk")],
                values: &values,
                forward: true,
            };
            query_all(app.client(), &query)
                .await
                .iter()
                // Only issues: the project's own item (`project#`) sorts after them.
                .filter(|item| item["sk"].as_s().unwrap().starts_with("issue#"))
                .map(|item| item["seq"].as_n().unwrap().clone())
                .collect::<Vec<String>>()
        }
    };
    // Every issue of the range, 100 a page: the first page's answer (an error, if refused) and
    // the numbers of all pages.
    let page = |vars: Value| async move {
        let mut after = Value::Null;
        let mut numbers = Vec::new();
        let mut first_answer = None;
        loop {
            let paging = json!({ "first": 100, "after": after });
            let answer = app.graphql(ISSUES, merge(vars.clone(), paging)).await;
            let issues = &answer["data"]["project"]["issues"];
            numbers.extend(
                issues["edges"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|e| e["node"]["seq"].to_string()),
            );
            let more = issues["pageInfo"]["hasNextPage"] == true;
            after = issues["pageInfo"]["endCursor"].clone();
            first_answer.get_or_insert(answer);
            if !more {
                return (first_answer.unwrap_or_default(), numbers);
            }
        }
    };
    let bounds: [i64; 10] = [
        0,
        7,
        42,
        700,
        10_000_000,
        99_999_999,
        100_000_000,
        123_456_789,
        999_999_999,
        2_000_000_000,
    ];
    let mut checked = 0;
    for lo in bounds {
        for hi in bounds {
            let vars = json!({ "id": project, "from": lo, "to": hi });
            let (answer, got) = page(vars).await;
            if format!("{lo:08}") > format!("{hi:08}") {
                assert_eq!(
                    answer["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
                    "{lo}..{hi}: {answer}"
                );
                continue;
            }
            let want = ground(
                "#p = :p AND #s BETWEEN :lo AND :hi",
                vec![(":lo", key(lo)), (":hi", key(hi))],
            )
            .await;
            assert_eq!(got, want, "{lo}..{hi}: {answer}");
            checked += 1;
        }
        let from = ground("#p = :p AND #s >= :lo", vec![(":lo", key(lo))]).await;
        let to = ground("#p = :p AND #s <= :hi", vec![(":hi", key(lo))]).await;
        for (vars, want) in [
            (json!({ "id": project, "from": lo }), from),
            (json!({ "id": project, "to": lo }), to),
        ] {
            assert_eq!(page(vars.clone()).await.1, want, "{vars}");
            checked += 1;
        }
    }
    assert_eq!(checked, 75);
}

/// Issues the mutations write are OneTable's own: its `get` and `find` read them (`_type`, the
/// key padded to 8 digits, `created` / `updated` as epoch milliseconds), an update of the state
/// moves the issue in the index and stamps `updated` anew, and a deleted issue is gone.
#[tokio::test]
async fn onetable_reads_what_the_mutations_write() {
    let app = model_app(MODEL).await;
    let project = "P#Neu Ü";
    let create = "mutation($input: CreateIssueInput!) { createIssue(input: $input) { issue { id created updated } } }";
    let mut ids = Vec::new();
    for seq in [42, 7] {
        let input =
            json!({ "projectId": project, "seq": seq, "title": "Ümlaut #1", "state": "open" });
        let answer = app.graphql(create, json!({ "input": input })).await;
        assert!(answer.get("errors").is_none(), "{answer}");
        ids.push(answer["data"]["createIssue"]["issue"]["id"].clone());
    }
    let updated = app
        .graphql(
            "mutation($id: ID!) { updateIssue(input: { id: $id, state: closed }) { issue { created updated } } }",
            json!({ "id": ids[0] }),
        )
        .await;
    assert!(updated.get("errors").is_none(), "{updated}");
    let times = &updated["data"]["updateIssue"]["issue"];
    let deleted = app
        .graphql(
            "mutation($id: ID!) { deleteIssue(input: { id: $id }) { deletedIssueId } }",
            json!({ "id": ids[1] }),
        )
        .await;
    assert!(deleted.get("errors").is_none(), "{deleted}");

    let read = read_back(
        "onetable",
        &app.table("Tracker"),
        &json!({
            "get": [
                { "entity": "Issue", "key": { "projectId": project, "seq": 42 } },
                { "entity": "Issue", "key": { "projectId": project, "seq": 7 } },
            ],
            "query": [
                { "name": "issuesByProject", "params": { "projectId": project } },
                { "name": "issuesByState", "params": { "state": "closed" } },
                { "name": "issuesByState", "params": { "state": "open" } },
            ],
        }),
    )
    .await;
    let issue = json!({ "projectId": project, "seq": 42, "title": "Ümlaut #1", "state": "closed" });
    assert_eq!(pick(&read["get"][0], &ISSUE_FIELDS), issue, "{read}");
    assert_eq!(
        pick(&read["get"][0], &["created", "updated"]),
        pick(times, &["created", "updated"]),
        "{read}"
    );
    assert_eq!(read["get"][1], Value::Null, "{read}");
    for (at, want) in [(0, vec![issue.clone()]), (1, vec![issue]), (2, vec![])] {
        let got: Vec<Value> = read["query"][at]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| pick(i, &ISSUE_FIELDS))
            .collect();
        assert_eq!(got, want, "query {at}: {read}");
    }
}
