//! ElectroDB's own writes reaching subscribers of `examples/electrodb`: loans created, changed,
//! returned (a move from `OUT` to `RETURNED` in the `gsi1` index) and deleted by the real
//! ElectroDB library (`writers/electrodb.mjs --changes`), each delivered to exactly the
//! subscriptions whose connection holds it, typed by ElectroDB's entity rule; an item of no
//! entity skipped and counted; and each pushed cursor paging on as the connection does.

use serde_json::{Value, json};

use super::MODEL;
use crate::{
    helpers::{ModelApp, live_router, metric, model_app, next_event, post_graphql, written_with},
    tools::changes::{created, kinds, placed, seen, until},
};

const MEMBER: &str = "M09 Live";

const BY_MEMBER: &str = "subscription($member: ID!) {
  loansChanged(member: $member) { kind id edge { cursor node { loanId title status } } } }";
const BY_STATUS: &str = "subscription($status: LoanStatus!) {
  loansByStatusChanged(status: $status) { kind id edge { cursor node { loanId title status } } } }";

/// Creates a loan of the member through the API (a warm-up or a fence), in `status`.
async fn loan(app: &ModelApp, id: &str, status: &str) {
    let input = json!({ "memberId": MEMBER, "loanId": id, "title": id,
                        "loanedAt": "2026-05-01T00:00:00.000Z", "status": status });
    created(
        app,
        "mutation($input: CreateLoanInput!) { createLoan(input: $input) { loan { id } } }",
        input,
    )
    .await;
}

#[tokio::test]
async fn electrodbs_own_writes_reach_the_subscriptions_whose_connections_hold_them() {
    let app = model_app(MODEL).await;
    let router = live_router(&app);
    let table = app.table("Lending");
    let answer = app
        .graphql(
            "mutation($m: ID!) { createMember(input: { memberId: $m, name: \"Live\" }) { member { id } } }",
            json!({ "m": MEMBER }),
        )
        .await;
    let member = answer["data"]["createMember"]["member"]["id"].clone();
    assert!(member.is_string(), "{answer}");

    // Each subscription, placed in the stream in turn by warm-up loans it holds; then fences,
    // after which everything earlier has passed.
    let mut by_member = placed(
        &router,
        BY_MEMBER,
        json!({ "member": member }),
        async |round| loan(&app, &format!("warm-m{round}"), "OUT").await,
    )
    .await;
    let mut out = placed(
        &router,
        BY_STATUS,
        json!({ "status": "OUT" }),
        async |round| loan(&app, &format!("warm-o{round}"), "OUT").await,
    )
    .await;
    let mut returned = placed(
        &router,
        BY_STATUS,
        json!({ "status": "RETURNED" }),
        async |round| loan(&app, &format!("warm-r{round}"), "RETURNED").await,
    )
    .await;
    loan(&app, "fence-out", "OUT").await;
    loan(&app, "fence-returned", "RETURNED").await;
    until(&mut by_member, "loansChanged", "loanId", "fence-returned").await;
    until(&mut out, "loansByStatusChanged", "loanId", "fence-out").await;
    until(
        &mut returned,
        "loansByStatusChanged",
        "loanId",
        "fence-returned",
    )
    .await;

    let unmatched = format!("dynarelay_stream_changes_unmatched_total{{table=\"{table}\"}}");
    let before = app.store.metrics().render();
    let written = written_with("electrodb", &table, &["--changes"]).await;
    assert_eq!(
        written["steps"].as_array().map(Vec::len),
        Some(7),
        "{written}"
    );

    let member_changes = until(&mut by_member, "loansChanged", "loanId", "L-3").await;
    assert_eq!(
        kinds(&member_changes),
        [
            ("ADDED", Some("L-1")),
            ("ADDED", Some("L-2")),
            ("UPDATED", Some("L-1")),
            ("UPDATED", Some("L-1")),
            ("REMOVED", None),
            ("ADDED", Some("L-3")),
        ]
    );
    assert_eq!(
        kinds(&until(&mut out, "loansByStatusChanged", "loanId", "L-3").await),
        [
            ("ADDED", Some("L-1")),
            ("ADDED", Some("L-2")),
            ("UPDATED", Some("L-1")),
            ("REMOVED", None),
            ("REMOVED", None),
            ("ADDED", Some("L-3")),
        ]
    );
    // The returned loan enters `RETURNED`; nothing else there changed.
    let event = next_event(&mut returned).await;
    let (kind, loan, _) = seen(&event, "loansByStatusChanged", "loanId");
    assert_eq!((kind.as_str(), loan.as_deref()), ("ADDED", Some("L-1")));
    let after = app.store.metrics().render();
    assert_eq!(
        metric(&after, &unmatched) - metric(&before, &unmatched),
        1.0,
        "{after}"
    );

    // Each pushed cursor pages on in `Member.loans` from its loan, as the connection orders them.
    let truth: Vec<String> = post_graphql(
        &router,
        "query($m: ID!) { member(memberId: $m) { loans(first: 100) { edges { node { loanId } } } } }",
        json!({ "m": MEMBER }),
    )
    .await["data"]["member"]["loans"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|edge| edge["node"]["loanId"].as_str().unwrap().to_owned())
        .collect();
    for (_, loan, cursor) in &member_changes {
        let (Some(loan), Some(cursor)) = (loan, cursor) else {
            continue;
        };
        if loan == "L-2" {
            continue; // deleted since
        }
        let page: Value = post_graphql(
            &router,
            "query($m: ID!, $after: String) { member(memberId: $m) {
               loans(first: 100, after: $after) { edges { node { loanId } } } } }",
            json!({ "m": MEMBER, "after": cursor }),
        )
        .await;
        let got: Vec<&str> = page["data"]["member"]["loans"]["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("{page}"))
            .iter()
            .map(|edge| edge["node"]["loanId"].as_str().unwrap())
            .collect();
        let at = truth.iter().position(|t| t == loan).unwrap();
        let want: Vec<&str> = truth[at + 1..].iter().map(String::as_str).collect();
        assert_eq!(got, want, "after the cursor pushed for {loan}");
    }
}
