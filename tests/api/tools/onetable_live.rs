//! OneTable's own writes reaching subscribers of `examples/onetable`: issues opened, retitled,
//! closed (a move from `state#open` to `state#closed` in the `gs1` index) and removed by the
//! real dynamodb-onetable library (`writers/onetable.mjs --changes`), each delivered to exactly
//! the subscriptions whose connection holds it, typed by the `_type` attribute; OneTable's
//! `_unique#` item (of no entity) skipped and counted.

use serde_json::json;

use crate::{
    helpers::{ModelApp, live_router, metric, model_app, next_event, written_with},
    tools::changes::{created, kinds, placed, seen, until},
};

const MODEL: &str = "examples/onetable/dynarelay.toml";

const BY_STATE: &str = "subscription($state: IssueState!) {
  issuesByStateChanged(state: $state) { kind removedId edge { cursor node { title seq state } } } }";

/// Opens an issue through the API (a warm-up or a fence), numbered `seq`, in `state`.
async fn issue(app: &ModelApp, seq: u32, state: &str) {
    let input = json!({ "projectId": "P-warm", "seq": seq, "title": format!("warm {seq}"),
                        "state": state });
    created(
        app,
        "mutation($input: CreateIssueInput!) { createIssue(input: $input) { issue { id } } }",
        input,
    )
    .await;
}

#[tokio::test]
async fn onetables_own_writes_reach_the_subscriptions_whose_connections_hold_them() {
    let app = model_app(MODEL).await;
    let router = live_router(&app);
    let table = app.table("Tracker");
    let field = "issuesByStateChanged";

    // Each subscription placed in the stream by warm-up issues it holds, then fenced.
    let mut open = placed(
        &router,
        BY_STATE,
        json!({ "state": "open" }),
        async |round| issue(&app, 1000 + round, "open").await,
    )
    .await;
    let mut closed = placed(
        &router,
        BY_STATE,
        json!({ "state": "closed" }),
        async |round| issue(&app, 2000 + round, "closed").await,
    )
    .await;
    issue(&app, 9001, "open").await;
    issue(&app, 9002, "closed").await;
    until(&mut open, field, "seq", "9001").await;
    until(&mut closed, field, "seq", "9002").await;

    let unmatched = format!("dynarelay_stream_changes_unmatched_total{{table=\"{table}\"}}");
    let before = app.store.metrics().render();
    let written = written_with("onetable", &table, &["--changes"]).await;
    assert_eq!(
        written["steps"].as_array().map(Vec::len),
        Some(7),
        "{written}"
    );

    assert_eq!(
        kinds(&until(&mut open, field, "seq", "3").await),
        [
            ("ADDED", Some("1")),
            ("ADDED", Some("2")),
            ("UPDATED", Some("1")),
            ("REMOVED", None),
            ("REMOVED", None),
            ("ADDED", Some("3")),
        ]
    );
    // The closed issue enters `closed`, retitled; nothing else there changed.
    let event = next_event(&mut closed).await;
    let (kind, seq, _) = seen(&event, field, "seq");
    assert_eq!((kind.as_str(), seq.as_deref()), ("ADDED", Some("1")));
    assert_eq!(
        event.1["data"][field]["edge"]["node"]["title"], "Issue 1, retitled",
        "{event:?}"
    );
    // OneTable's `_unique#` item of the new project: no entity of the model.
    let after = app.store.metrics().render();
    assert_eq!(
        metric(&after, &unmatched) - metric(&before, &unmatched),
        1.0,
        "{after}"
    );
}
