//! OneTable (`examples/onetable`): `project#<id>` partitions, issue numbers zero-padded to 8
//! digits in keys, `_type` naming each item's model, `created` / `updated` as epoch
//! milliseconds, and OneTable's own `_unique#…` items in the same table.

use serde_json::{Value, json};

use super::{pick, refetch_all, scanned, stamps, text};
use crate::helpers::{merge, model_app, read_back, walk_matches, written_by};

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
