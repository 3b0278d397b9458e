//! ElectroDB (`examples/electrodb`): keys lowercased in ElectroDB's grammar
//! (`$lending#memberid_…`, `$loan_1#loanedat_…#loanid_…`), entities in `__edb_e__`, every facet
//! also a plain attribute, and an item of no entity in a member's partition.

use serde_json::{Value, json};

use super::{pick, text, texts};
use crate::helpers::{ModelApp, all_nodes, merge, model_app, walk_matches, written_by};

const MODEL: &str = "examples/electrodb/dynarelay.toml";

const LOAN_FIELDS: [&str; 5] = ["memberId", "loanId", "title", "loanedAt", "status"];

const LOANS: &str = r#"query($memberId: ID!, $first: Int, $after: String, $last: Int, $before: String,
    $from: DateTime, $until: DateTime, $in: String) {
  member(memberId: $memberId) {
    loans(first: $first, after: $after, last: $last, before: $before,
          loanedFrom: $from, loanedUntil: $until, loanedIn: $in) {
      edges { cursor node { id memberId loanId title loanedAt status member { memberId } } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}"#;

const BY_STATUS: &str = r#"query($status: LoanStatus!, $first: Int, $after: String, $last: Int, $before: String) {
  loansByStatus(status: $status, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { memberId loanId title loanedAt status } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

async fn seeded() -> (ModelApp, Value) {
    let app = model_app(MODEL).await;
    let truth = written_by("electrodb", &app.table("Lending")).await;
    (app, truth)
}

/// Walks a member's loans with `extra` conditions at every page size, both ways.
async fn walk_loans(app: &ModelApp, member: &str, extra: Value, want: &[String]) -> Vec<Value> {
    let vars = merge(json!({ "memberId": member }), extra);
    walk_matches(
        |paging| app.graphql(LOANS, merge(vars.clone(), paging)),
        &["member", "loans"],
        |node| text(node, "loanId"),
        want,
        &format!("{member}'s loans {vars}"),
    )
    .await
}

/// Every member, each member's loans and the loans in each status, walked at every page size
/// both ways, are exactly what ElectroDB's own queries return, field for field; lookups take any
/// casing of an id (ElectroDB's keys are lowercase) and answer the id as stored; every loan's
/// global id refetches it.
#[tokio::test]
async fn electrodb_data_is_served_as_electrodb_reads_it() {
    let (app, truth) = seeded().await;
    let members = truth["members"].as_array().unwrap();
    assert_eq!(members.len(), 8, "{truth}");

    for member in members {
        let id = text(member, "memberId");
        let want_loans = &truth["loansByMember"][&id];
        let nodes = walk_loans(&app, &id, json!({}), &texts(want_loans, "loanId")).await;
        for (node, want) in nodes.iter().zip(want_loans.as_array().unwrap()) {
            assert_eq!(pick(node, &LOAN_FIELDS), pick(want, &LOAN_FIELDS));
            assert_eq!(node["member"]["memberId"], id.as_str());
        }
        for asked in [id.clone(), id.to_uppercase(), id.to_lowercase()] {
            let answer = app
                .graphql(
                    "query($id: ID!) { member(memberId: $id) { memberId name city } }",
                    json!({ "id": asked }),
                )
                .await;
            assert_eq!(
                answer["data"]["member"],
                json!({ "memberId": id, "name": member["name"], "city": member["city"] }),
                "{asked}: {answer}"
            );
        }
    }

    for status in ["OUT", "RETURNED"] {
        let want = &truth["loansByStatus"][status];
        assert!(!want.as_array().unwrap().is_empty(), "{truth}");
        let vars = json!({ "status": status });
        let nodes = walk_matches(
            |paging| app.graphql(BY_STATUS, merge(vars.clone(), paging)),
            &["loansByStatus"],
            |node| format!("{}/{}", text(node, "memberId"), text(node, "loanId")),
            &want
                .as_array()
                .unwrap()
                .iter()
                .map(|l| format!("{}/{}", text(l, "memberId"), text(l, "loanId")))
                .collect::<Vec<_>>(),
            &format!("loans {status}"),
        )
        .await;
        for (node, want) in nodes.iter().zip(want.as_array().unwrap()) {
            assert_eq!(pick(node, &LOAN_FIELDS), pick(want, &LOAN_FIELDS));
        }
    }

    // Members, by a Scan that keeps members only.
    let mut scanned = all_nodes(
        |paging| {
            app.graphql(
                "query($first: Int, $after: String) { members(first: $first, after: $after) {
                   nodes { memberId name city } pageInfo { hasNextPage endCursor } } }",
                paging,
            )
        },
        &["members"],
        3,
    )
    .await;
    scanned.sort_by_key(|m| text(m, "memberId"));
    let mut want: Vec<Value> = members
        .iter()
        .map(|m| json!({ "memberId": m["memberId"], "name": m["name"], "city": m["city"] }))
        .collect();
    want.sort_by_key(|m| text(m, "memberId"));
    assert_eq!(scanned, want);

    // Every loan of the largest partition refetched by its global id.
    let largest = members
        .iter()
        .map(|m| text(m, "memberId"))
        .max_by_key(|id| truth["loansByMember"][id].as_array().unwrap().len())
        .unwrap();
    let nodes = walk_loans(
        &app,
        &largest,
        json!({}),
        &texts(&truth["loansByMember"][&largest], "loanId"),
    )
    .await;
    for node in &nodes {
        let answer = app
            .graphql(
                "query($id: ID!) { node(id: $id) { ... on Loan { memberId loanId title loanedAt status } } }",
                json!({ "id": node["id"] }),
            )
            .await;
        assert_eq!(answer["data"]["node"], pick(node, &LOAN_FIELDS), "{answer}");
    }
}

/// Ranges and prefixes on the first facet of ElectroDB's lowercased sort key
/// (`…#loanedat_2026-05-01t00:00:00.000z#…`) select exactly the loans ElectroDB's own query
/// returned in that range, at every page size both ways.
#[tokio::test]
async fn ranges_on_a_lowercased_sort_key_select_exactly() {
    let (app, truth) = seeded().await;
    let (member, loans) = truth["loansByMember"]
        .as_object()
        .unwrap()
        .iter()
        .max_by_key(|(_, loans)| loans.as_array().unwrap().len())
        .unwrap();
    let loans = loans.as_array().unwrap();
    let at = |i: usize| text(&loans[i], "loanedAt");
    let (from, until) = (at(loans.len() / 5), at(loans.len() / 2));
    let prefix = at(loans.len() / 3)[..13].to_owned(); // to the hour: `2026-05-01T07`
    for (extra, keep) in [
        (
            json!({ "from": from, "until": until }),
            Box::new(|t: &str| t >= from.as_str() && t <= until.as_str())
                as Box<dyn Fn(&str) -> bool>,
        ),
        (
            json!({ "from": until }),
            Box::new(|t: &str| t >= until.as_str()),
        ),
        (
            json!({ "until": from }),
            Box::new(|t: &str| t <= from.as_str()),
        ),
        (
            json!({ "in": prefix }),
            Box::new(|t: &str| t.starts_with(prefix.as_str())),
        ),
    ] {
        let want: Vec<String> = loans
            .iter()
            .filter(|l| keep(&text(l, "loanedAt")))
            .map(|l| text(l, "loanId"))
            .collect();
        assert!(!want.is_empty() && want.len() < loans.len(), "{extra}");
        walk_loans(&app, member, extra, &want).await;
    }
}
