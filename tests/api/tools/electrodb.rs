//! ElectroDB (`examples/electrodb`): keys lowercased in ElectroDB's grammar
//! (`$lending#memberid_…`, `$loan_1#loanedat_…#loanid_…`), entities in `__edb_e__`, every facet
//! also a plain attribute, and an item of no entity in a member's partition. The table is in the
//! middle of a migration of `loan` to version 2 (`migration`): the version-1 model's answers
//! below are ElectroDB's version 1's, beside the version-2 loans.

mod live;
mod migration;

use serde_json::{Value, json};

use super::{pick, refetch_all, scanned, text, texts};
use crate::helpers::{ModelApp, merge, model_app, read_back, walk_matches, written_with};

pub(super) const MODEL: &str = "examples/electrodb/dynarelay.toml";

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

/// The table ElectroDB wrote with `loan` of version 1 and 2, served by the version-1 model, and
/// ElectroDB's ground truth.
async fn seeded() -> (ModelApp, Value) {
    let app = model_app(MODEL).await;
    let truth = written_with("electrodb", &app.table("Lending"), &["--migration"]).await;
    (app, truth)
}

/// The member of ElectroDB's ground truth with the most loans, and their loans in order.
fn busiest_member(truth: &Value) -> (&String, &Vec<Value>) {
    let (member, loans) = truth["loansByMember"]
        .as_object()
        .unwrap()
        .iter()
        .max_by_key(|(_, loans)| loans.as_array().unwrap().len())
        .unwrap();
    (member, loans.as_array().unwrap())
}

/// `memberId/loanId` of a loan.
fn loan_key(loan: &Value) -> String {
    format!("{}/{}", text(loan, "memberId"), text(loan, "loanId"))
}

/// Walks `loansByStatus` (`query`) in each status at every page size, both ways: the loans of
/// `want` (ElectroDB's, by status), in its order, field for field.
async fn walk_statuses(app: &ModelApp, query: &str, want: &Value, what: &str) {
    for status in ["OUT", "RETURNED"] {
        let want = want[status].as_array().unwrap();
        assert!(!want.is_empty(), "no {what} {status}");
        let vars = json!({ "status": status });
        let nodes = walk_matches(
            |paging| app.graphql(query, merge(vars.clone(), paging)),
            &["loansByStatus"],
            loan_key,
            &want.iter().map(loan_key).collect::<Vec<_>>(),
            &format!("{what} {status}"),
        )
        .await;
        for (node, want) in nodes.iter().zip(want) {
            assert_eq!(pick(node, &LOAN_FIELDS), pick(want, &LOAN_FIELDS));
        }
    }
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

    let mut loans = Vec::new();
    for member in members {
        let id = text(member, "memberId");
        let want_loans = &truth["loansByMember"][&id];
        let nodes = walk_loans(&app, &id, json!({}), &texts(want_loans, "loanId")).await;
        for (node, want) in nodes.iter().zip(want_loans.as_array().unwrap()) {
            assert_eq!(pick(node, &LOAN_FIELDS), pick(want, &LOAN_FIELDS));
            assert_eq!(node["member"]["memberId"], id.as_str());
        }
        loans.extend(nodes);
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

    walk_statuses(&app, BY_STATUS, &truth["loansByStatus"], "loans").await;

    // Members, by a Scan that keeps members only.
    let scanned = scanned(&app, "members", "memberId name city", "memberId").await;
    let mut want: Vec<Value> = members
        .iter()
        .map(|m| json!({ "memberId": m["memberId"], "name": m["name"], "city": m["city"] }))
        .collect();
    want.sort_by_key(|m| text(m, "memberId"));
    assert_eq!(scanned, want);

    // Every loan refetched by its global id.
    refetch_all(&app, "Loan", &loans, &LOAN_FIELDS).await;
}

/// Ranges and prefixes on the first facet of ElectroDB's lowercased sort key
/// (`…#loanedat_2026-05-01t00:00:00.000z#…`) select exactly the loans ElectroDB's own query
/// returned in that range, at every page size both ways; each range is what ElectroDB's own
/// `between`, `gte` and `lte` return through the real library, bounds at stored times, but for
/// the loans at exactly the upper bound, which ElectroDB's partial sort key leaves out and
/// `loanedUntil` (at or before) keeps; and DynamoDB reads no item a page does not return (a key
/// condition, no filter).
#[tokio::test]
async fn ranges_on_a_lowercased_sort_key_select_exactly() {
    let (app, truth) = seeded().await;
    let (member, loans) = busiest_member(&truth);
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
        walk_loans(&app, member, extra.clone(), &want).await;
        let vars = merge(json!({ "memberId": member, "first": 100 }), extra.clone());
        let page = app.graphql(LOANS, vars).await;
        let cost = &page["extensions"]["cost"];
        assert_eq!(
            cost["itemsEvaluated"], cost["itemsReturned"],
            "{extra}: {page}"
        );
        // ElectroDB's own sort key condition for the same range, through the library.
        let (name, params) = match (&extra["from"], &extra["until"]) {
            (Value::String(_), Value::String(_)) => {
                ("loansBetween", json!({ "from": from, "until": until }))
            }
            (Value::String(f), _) => ("loansFrom", json!({ "from": f })),
            (_, Value::String(u)) => ("loansUntil", json!({ "until": u })),
            _ => continue,
        };
        let params = merge(json!({ "memberId": member }), params);
        let read = read_back(
            "electrodb",
            &app.table("Lending"),
            &json!({ "query": [{ "name": name, "params": params }] }),
        )
        .await;
        // ElectroDB's `between` and `lte` end at the bound's own key text
        // (`…#loanedat_<until>`), so a loan made at exactly that time, whose key goes on with
        // `#loanid_…`, is past it: ElectroDB leaves it out. `loanedUntil` keeps it, as "at or
        // before this time" says.
        let upper = params["until"].as_str().unwrap_or_default();
        let electrodb: Vec<String> = loans
            .iter()
            .filter(|l| keep(&text(l, "loanedAt")) && text(l, "loanedAt") != upper)
            .map(|l| text(l, "loanId"))
            .collect();
        assert_eq!(
            texts(&read["query"][0], "loanId"),
            electrodb,
            "ElectroDB's {name} {params}"
        );
        if !upper.is_empty() {
            assert!(
                electrodb.len() < want.len(),
                "no loan at the upper bound: {params}"
            );
        }
    }
}

/// Items the mutations write are ElectroDB's own: its `get` finds them (its ownership check
/// needs `__edb_e__` and `__edb_v__`, and its keys lowercased), its queries list them by member
/// and by status, an update of the status moves the loan between statuses in the index, and a
/// deleted loan is gone. Any casing of a taken member id is refused, as ElectroDB's keys make it
/// the same member.
#[tokio::test]
async fn electrodb_reads_what_the_mutations_write() {
    let app = model_app(MODEL).await;
    let member = "M-Neu Ü#1";
    let create_member = "mutation($id: ID!) { createMember(input: { memberId: $id, name: \"Neu\", city: \"Bern\" }) { member { memberId } } }";
    let answer = app.graphql(create_member, json!({ "id": member })).await;
    assert!(answer.get("errors").is_none(), "{answer}");
    let again = app
        .graphql(create_member, json!({ "id": member.to_lowercase() }))
        .await;
    assert_eq!(
        again["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{again}"
    );
    let create_loan =
        "mutation($input: CreateLoanInput!) { createLoan(input: $input) { loan { id } } }";
    let mut ids = Vec::new();
    for (loan, at) in [
        ("L#1", "2026-06-01T10:00:00.000Z"),
        ("L#2", "2026-06-02T10:00:00.000Z"),
    ] {
        let input = json!({ "memberId": member, "loanId": loan, "title": "Der Zauberberg",
                            "loanedAt": at, "status": "OUT" });
        let answer = app.graphql(create_loan, json!({ "input": input })).await;
        assert!(answer.get("errors").is_none(), "{answer}");
        ids.push(answer["data"]["createLoan"]["loan"]["id"].clone());
    }
    let answer = app
        .graphql(
            "mutation($id: ID!) { updateLoan(input: { id: $id, status: RETURNED }) { loan { status } } }",
            json!({ "id": ids[0] }),
        )
        .await;
    assert!(answer.get("errors").is_none(), "{answer}");
    let answer = app
        .graphql(
            "mutation($id: ID!) { deleteLoan(input: { id: $id }) { deletedLoanId } }",
            json!({ "id": ids[1] }),
        )
        .await;
    assert!(answer.get("errors").is_none(), "{answer}");

    let loan_key =
        |loan: &str, at: &str| json!({ "memberId": member, "loanedAt": at, "loanId": loan });
    let read = read_back(
        "electrodb",
        &app.table("Lending"),
        &json!({
            "get": [
                { "entity": "member", "key": { "memberId": member } },
                { "entity": "loan", "key": loan_key("L#1", "2026-06-01T10:00:00.000Z") },
                { "entity": "loan", "key": loan_key("L#2", "2026-06-02T10:00:00.000Z") },
            ],
            "query": [
                { "name": "loansByMember", "params": { "memberId": member } },
                { "name": "loansByStatus", "params": { "status": "RETURNED" } },
                { "name": "loansByStatus", "params": { "status": "OUT" } },
            ],
        }),
    )
    .await;
    assert_eq!(
        pick(&read["get"][0], &["memberId", "name", "city"]),
        json!({ "memberId": member, "name": "Neu", "city": "Bern" }),
        "{read}"
    );
    let loan = json!({ "memberId": member, "loanId": "L#1", "title": "Der Zauberberg",
                       "loanedAt": "2026-06-01T10:00:00.000Z", "status": "RETURNED" });
    assert_eq!(pick(&read["get"][1], &LOAN_FIELDS), loan, "{read}");
    assert_eq!(read["get"][2], Value::Null, "{read}");
    for (at, want) in [(0, vec![loan.clone()]), (1, vec![loan]), (2, vec![])] {
        let got: Vec<Value> = read["query"][at]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| pick(l, &LOAN_FIELDS))
            .collect();
        assert_eq!(got, want, "query {at}: {read}");
    }
}
