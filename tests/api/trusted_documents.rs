//! Trusted documents: with `--trusted-documents enforce`, only the operations the manifests
//! list run, named by each client's id (Apollo's hash, Relay's `doc_id`, GraphQL over HTTP's
//! `documentId`) or sent in full, over POST, GET, WebSocket and server-sent events; everything
//! else is refused before its document is parsed, so before any DynamoDB call (the store's call
//! log says so). `log` mode runs and counts them; callers `[auth] unlisted_documents` admits are
//! exempt; a new manifest is swapped in without a restart, and one that does not validate is
//! refused while the old list serves. The real clients and compilers are in
//! `trusted_clients.rs`.

use std::{path::PathBuf, sync::Arc};

use dynarelay::{
    graphql::trusted::{TrustedMode, TrustedSettings},
    http::{HttpSettings, router},
    pagination::PageLimits,
};
use serde_json::{Value, json};

use crate::{
    helpers::{
        CallLog, ModelApp, Running, TestIssuer, auth_model_app, auth_state, book_says,
        check_offline, live_router_with_streams, load_model, logged_model_app, metric, metrics_of,
        model_claims, model_file, model_state, next_event, post_at, put_plain, sha256_hex, signal,
        spawn_serve_logged, subscribe_body, test_ring, test_stream_settings, unique_prefix,
        ws_ready, ws_receive_json, ws_send,
    },
    subscriptions::{MODEL, note},
};

const NOTES: &str =
    "query Notes($owner: String!) { notes(owner: $owner, first: 10) { edges { node { text } } } }";
const FOLLOW: &str = "subscription Follow($owner: String!) { notesChanged(owner: $owner) { kind edge { node { text } } } }";
/// The id the Relay-shaped manifest gives [`FOLLOW`] (ids are taken as written).
const FOLLOW_ID: &str = "9b1c5e0d7f3a2b4c6d8e0f1a2b3c4d5e";
/// The plain map's id of [`OTHER`].
const OTHER_ID: &str = "notes-in-state";
const OTHER: &str = "query InState($owner: String!) { notes(owner: $owner, state: OPEN) { edges { node { text state } } } }";

/// A manifest file of its own; its path.
fn write_manifest(text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("dynarelay-ops-{}.json", unique_prefix()));
    std::fs::write(&path, text).unwrap();
    path
}

fn apollo_manifest(operations: &[(&str, &str)]) -> String {
    let operations: Vec<Value> = operations
        .iter()
        .map(|(name, body)| {
            json!({ "id": sha256_hex(body), "name": name, "type": "query", "body": body })
        })
        .collect();
    json!({ "format": "apollo-persisted-query-manifest", "version": 1, "operations": operations })
        .to_string()
}

/// The notes model's manifests: Apollo's listing [`NOTES`], a Relay-shaped map listing
/// [`FOLLOW`], a plain map listing [`OTHER`].
fn manifests() -> Vec<PathBuf> {
    vec![
        write_manifest(&apollo_manifest(&[("Notes", NOTES)])),
        write_manifest(&json!({ FOLLOW_ID: FOLLOW }).to_string()),
        write_manifest(&json!({ OTHER_ID: OTHER }).to_string()),
    ]
}

fn enforcing(manifests: Vec<PathBuf>) -> HttpSettings {
    HttpSettings {
        trusted: TrustedSettings {
            mode: TrustedMode::Enforce,
            manifests,
            require_ids: false,
        },
        ..HttpSettings::default()
    }
}

/// The notes model on fresh tables holding `notes`, with every DynamoDB call its client sends
/// logged.
async fn notes_app(notes: Vec<dynarelay::dynamo::Item>) -> (ModelApp, CallLog) {
    let (app, log) = logged_model_app(load_model(&model_file(MODEL))).await;
    put_plain(app.client(), &app.table("Notes"), notes).await;
    (app, log)
}

fn code(body: &Value) -> &str {
    body["errors"][0]["extensions"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error code: {body}"))
}

async fn post(http: &reqwest::Client, server: &Running, body: &Value) -> Value {
    post_at(http, &server.url("/graphql"), body).await
}

async fn get(http: &reqwest::Client, server: &Running, query: &[(&str, &str)]) -> (u16, Value) {
    let response = http
        .get(server.url("/graphql"))
        .query(query)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// The server-sent events of a POST of `body` to `router`.
async fn events_of(
    router: &axum::Router,
    body: &Value,
) -> tokio::sync::mpsc::Receiver<crate::helpers::Received> {
    subscribe_body(router, None, body, 16).await
}

fn texts(body: &Value) -> Vec<&str> {
    body["data"]["notes"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("no page: {body}"))
        .iter()
        .map(|edge| edge["node"]["text"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn enforcing_runs_listed_operations_by_every_id_and_refuses_the_rest_before_any_read() {
    let (app, log) = notes_app(vec![
        note("ada", 1, "first", "OPEN"),
        note("ada", 2, "second", "DONE"),
    ])
    .await;
    let server = Running::serve(live_router_with_streams(
        &app,
        enforcing(manifests()),
        test_stream_settings(),
    ))
    .await;
    let http = reqwest::Client::new();
    let owner = json!({ "owner": "ada" });
    let listed_hash = sha256_hex(NOTES);

    // Every attack first, with the call log marked: none may reach DynamoDB.
    let mark = log.mark();
    let unlisted =
        "query Mine($owner: String!) { notes(owner: $owner) { edges { node { text } } } }";
    let post_cases: Vec<(&str, Value, &str)> = vec![
        (
            "an unlisted document",
            json!({ "query": unlisted, "variables": owner }),
            "PERSISTED_QUERY_NOT_IN_LIST",
        ),
        (
            "a listed document with one more field",
            json!({ "query": NOTES.replace("{ text }", "{ text at }"), "variables": owner }),
            "PERSISTED_QUERY_NOT_IN_LIST",
        ),
        (
            "a listed document with an alias",
            json!({ "query": NOTES.replace("{ text }", "{ text t: text }"), "variables": owner }),
            "PERSISTED_QUERY_NOT_IN_LIST",
        ),
        (
            "a listed document with a comment",
            json!({ "query": format!("# hello\n{NOTES}"), "variables": owner }),
            "PERSISTED_QUERY_NOT_IN_LIST",
        ),
        (
            "a listed document with other whitespace",
            json!({ "query": NOTES.replace(' ', "  "), "variables": owner }),
            "PERSISTED_QUERY_NOT_IN_LIST",
        ),
        (
            "introspection",
            json!({ "query": "{ __schema { types { name } } }" }),
            "PERSISTED_QUERY_NOT_IN_LIST",
        ),
        (
            "an unknown Relay id",
            json!({ "doc_id": "0000", "variables": owner }),
            "PERSISTED_QUERY_NOT_FOUND",
        ),
        (
            "an unknown documentId",
            json!({ "documentId": "nope", "variables": owner }),
            "PERSISTED_QUERY_NOT_FOUND",
        ),
        (
            "the SHA-256 of an unlisted document as documentId",
            json!({ "documentId": format!("sha256:{}", sha256_hex(unlisted)), "variables": owner }),
            "PERSISTED_QUERY_NOT_FOUND",
        ),
        (
            "a listed text's SHA-256 as a Relay id (Relay's ids are its manifest's)",
            json!({ "doc_id": sha256_hex(OTHER), "variables": owner }),
            "PERSISTED_QUERY_NOT_FOUND",
        ),
        (
            "a listed text's SHA-256 as documentId without its prefix, where no manifest has it as an id",
            json!({ "documentId": sha256_hex(FOLLOW), "variables": owner }),
            "PERSISTED_QUERY_NOT_FOUND",
        ),
        (
            "a Relay id under another prefix",
            json!({ "documentId": format!("md5:{FOLLOW_ID}"), "variables": owner }),
            "PERSISTED_QUERY_NOT_FOUND",
        ),
        (
            "an Apollo hash nobody listed",
            json!({ "extensions": { "persistedQuery": { "version": 1, "sha256Hash": sha256_hex(unlisted) } }, "variables": owner }),
            "PERSISTED_QUERY_NOT_FOUND",
        ),
        (
            "an automatic persisted query's registration",
            json!({ "query": unlisted, "variables": owner,
                    "extensions": { "persistedQuery": { "version": 1, "sha256Hash": sha256_hex(unlisted) } } }),
            "PERSISTED_QUERY_NOT_IN_LIST",
        ),
        (
            "a listed id with another document",
            json!({ "doc_id": OTHER_ID, "query": unlisted, "variables": owner }),
            "BAD_USER_INPUT",
        ),
    ];
    for (case, body, expected) in &post_cases {
        let answer = post(&http, &server, body).await;
        assert_eq!(
            answer["errors"][0]["extensions"]["code"], *expected,
            "{case}: {answer}"
        );
        assert!(answer.get("data").is_none(), "{case}: {answer}");
    }
    // The registration above registered nothing: its hash alone is still unknown.
    let hash_alone = json!({ "extensions": { "persistedQuery": { "version": 1, "sha256Hash": sha256_hex(unlisted) } }, "variables": owner });
    assert_eq!(
        code(&post(&http, &server, &hash_alone).await),
        "PERSISTED_QUERY_NOT_FOUND"
    );
    // A batch mixing a listed and an unlisted operation.
    let batch = http
        .post(server.url("/graphql"))
        .json(&json!([{ "query": NOTES, "variables": owner }, { "query": unlisted, "variables": owner }]))
        .send()
        .await
        .unwrap();
    assert_eq!(batch.status(), 400);
    // GET, with the text or an unknown id.
    let (status, answer) = get(
        &http,
        &server,
        &[("query", unlisted), ("variables", r#"{"owner":"ada"}"#)],
    )
    .await;
    assert_eq!(
        (status, code(&answer)),
        (200, "PERSISTED_QUERY_NOT_IN_LIST"),
        "{answer}"
    );
    let (_, answer) = get(
        &http,
        &server,
        &[
            ("documentId", "sha256:00"),
            ("variables", r#"{"owner":"ada"}"#),
        ],
    )
    .await;
    assert_eq!(code(&answer), "PERSISTED_QUERY_NOT_FOUND", "{answer}");
    // A WebSocket subscription and a server-sent events one, unlisted.
    let unlisted_follow = FOLLOW.replace("kind edge", "kind id edge");
    let mut socket = ws_ready(&server.url("/graphql")).await;
    ws_send(
        &mut socket,
        json!({ "id": "1", "type": "subscribe",
        "payload": { "query": unlisted_follow, "variables": owner } }),
    )
    .await;
    let refused = ws_receive_json(&mut socket).await;
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(
        refused["payload"][0]["extensions"]["code"], "PERSISTED_QUERY_NOT_IN_LIST",
        "{refused}"
    );
    ws_send(
        &mut socket,
        json!({ "id": "2", "type": "subscribe",
        "payload": { "doc_id": "0000", "variables": owner } }),
    )
    .await;
    let refused = ws_receive_json(&mut socket).await;
    assert_eq!(
        refused["payload"][0]["extensions"]["code"], "PERSISTED_QUERY_NOT_FOUND",
        "{refused}"
    );
    // And a document in full after a refusal by id, on the same socket.
    ws_send(
        &mut socket,
        json!({ "id": "2b", "type": "subscribe",
        "payload": { "query": unlisted_follow, "variables": owner } }),
    )
    .await;
    let refused = ws_receive_json(&mut socket).await;
    assert_eq!(
        (&refused["id"], &refused["type"]),
        (&json!("2b"), &json!("error")),
        "{refused}"
    );
    assert_eq!(
        refused["payload"][0]["extensions"]["code"], "PERSISTED_QUERY_NOT_IN_LIST",
        "{refused}"
    );
    let mut events = events_of(
        &app.router,
        &json!({ "query": unlisted_follow, "variables": owner }),
    )
    .await;
    // `app.router` serves without manifests: the control that the same request runs there.
    assert_eq!(next_event(&mut events).await.0, "next");
    drop(events);
    let enforced = live_router_with_streams(&app, enforcing(manifests()), test_stream_settings());
    let mut events = events_of(
        &enforced,
        &json!({ "query": unlisted_follow, "variables": owner }),
    )
    .await;
    let (name, data) = next_event(&mut events).await;
    assert_eq!(name, "next");
    assert_eq!(code(&data), "PERSISTED_QUERY_NOT_IN_LIST", "{data}");
    drop(events);
    // The control's subscription is the only thing that may have called DynamoDB.
    let calls: Vec<_> = log
        .since(mark)
        .into_iter()
        .filter(|call| call.operation != "DescribeTable")
        .collect();
    assert!(
        calls.is_empty(),
        "refused requests called DynamoDB: {calls:?}"
    );

    // Listed operations run, named by each client's id or sent in full.
    let reads = log.mark();
    let listed: Vec<(&str, Value)> = vec![
        (
            "Apollo's hash",
            json!({ "extensions": { "persistedQuery": { "version": 1, "sha256Hash": listed_hash } }, "variables": owner }),
        ),
        (
            "documentId by SHA-256",
            json!({ "documentId": format!("sha256:{listed_hash}"), "variables": owner }),
        ),
        (
            "documentId by the manifest's id",
            json!({ "documentId": listed_hash, "variables": owner }),
        ),
        (
            "the full text",
            json!({ "query": NOTES, "variables": owner }),
        ),
        (
            "the full text with its hash",
            json!({ "query": NOTES, "variables": owner, "extensions": { "persistedQuery": { "version": 1, "sha256Hash": listed_hash } } }),
        ),
    ];
    for (case, body) in &listed {
        let answer = post(&http, &server, body).await;
        assert_eq!(texts(&answer), ["first", "second"], "{case}: {answer}");
    }
    let answer = post(
        &http,
        &server,
        &json!({ "doc_id": OTHER_ID, "variables": owner }),
    )
    .await;
    assert_eq!(
        answer["data"]["notes"]["edges"][0]["node"]["text"], "first",
        "{answer}"
    );
    let (status, answer) = get(
        &http,
        &server,
        &[
            ("documentId", &format!("sha256:{listed_hash}")),
            ("variables", r#"{"owner":"ada"}"#),
        ],
    )
    .await;
    assert_eq!(
        (status, texts(&answer)),
        (200, vec!["first", "second"]),
        "{answer}"
    );

    // Over server-sent events, by id: a query's one result.
    let mut events = events_of(
        &enforced,
        &json!({ "doc_id": OTHER_ID, "variables": owner }),
    )
    .await;
    let (name, data) = next_event(&mut events).await;
    assert_eq!(name, "next");
    assert_eq!(
        data["data"]["notes"]["edges"][0]["node"]["text"], "first",
        "{data}"
    );
    // Control: these requests did reach DynamoDB through the logged client.
    assert!(
        log.since(reads)
            .iter()
            .any(|call| call.operation == "Query")
    );

    // A listed subscription by Relay's id over WebSocket follows changes.
    ws_send(
        &mut socket,
        json!({ "id": "3", "type": "subscribe",
        "payload": { "doc_id": FOLLOW_ID, "variables": { "owner": "bob" } } }),
    )
    .await;
    let table = app.table("Notes");
    let mut round = 0;
    let message = loop {
        round += 1;
        put_plain(
            app.client(),
            &table,
            [note("bob", 1, &format!("hello {round}"), "OPEN")],
        )
        .await;
        match tokio::time::timeout(
            std::time::Duration::from_millis(500),
            ws_receive_json(&mut socket),
        )
        .await
        {
            Ok(message) => break message,
            Err(_) => assert!(round < 200, "no change arrived"),
        }
    };
    assert_eq!(message["id"], "3", "{message}");
    assert_eq!(message["type"], "next", "{message}");
    assert!(
        message["payload"]["data"]["notesChanged"]["edge"]["node"]["text"]
            .as_str()
            .unwrap()
            .starts_with("hello"),
        "{message}"
    );

    let metrics = metrics_of(&app.router).await;
    assert!(
        metric(
            &metrics,
            "dynarelay_trusted_documents_refused_total{reason=\"not_in_list\"}"
        ) >= 9.0,
        "{metrics}"
    );
    assert!(
        metric(
            &metrics,
            "dynarelay_trusted_documents_total{outcome=\"id\"}"
        ) >= 5.0,
        "{metrics}"
    );
}

#[tokio::test]
async fn log_mode_runs_and_counts_what_enforcing_would_refuse() {
    let (app, _log) = notes_app(vec![note("ada", 1, "first", "OPEN")]).await;
    let http_settings = HttpSettings {
        trusted: TrustedSettings {
            mode: TrustedMode::Log,
            manifests: manifests(),
            require_ids: false,
        },
        ..HttpSettings::default()
    };
    let router = router(model_state(
        app.model,
        &app.store,
        PageLimits::default(),
        &test_ring(),
        http_settings,
    ));
    let server = Running::serve(router.clone()).await;
    let http = reqwest::Client::new();
    let unlisted =
        "query Mine($owner: String!) { notes(owner: $owner) { edges { node { text } } } }";
    for _ in 0..3 {
        let answer = post(
            &http,
            &server,
            &json!({ "query": unlisted, "variables": { "owner": "ada" } }),
        )
        .await;
        assert_eq!(texts(&answer), ["first"], "{answer}");
    }
    let answer = post(
        &http,
        &server,
        &json!({ "doc_id": OTHER_ID, "variables": { "owner": "ada" } }),
    )
    .await;
    assert!(answer["data"]["notes"].is_object(), "{answer}");
    let metrics = metrics_of(&router).await;
    assert_eq!(
        metric(
            &metrics,
            "dynarelay_trusted_documents_total{outcome=\"unlisted\"}"
        ),
        3.0,
        "{metrics}"
    );
    assert_eq!(
        metric(
            &metrics,
            "dynarelay_trusted_documents_total{outcome=\"id\"}"
        ),
        1.0,
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, "dynarelay_operations_listed"),
        3.0,
        "{metrics}"
    );
}

#[tokio::test]
async fn exempt_callers_may_send_any_document_and_ids_may_be_required() {
    let issuer = TestIssuer::start().await;
    let secure = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/shop/secure.toml"
    ))
    .unwrap()
    .replacen(
        "[auth]\n",
        "[auth]\nunlisted_documents = [{ groups = [\"support\"] }]\n",
        1,
    );
    let model = load_model(&model_file(&secure));
    let (app, log) = auth_model_app(model, &issuer).await;
    let product = "query Product { product(sku: \"S-1\") { name } }";
    let manifest = write_manifest(&apollo_manifest(&[("Product", product)]));
    let http = HttpSettings {
        trusted: TrustedSettings {
            mode: TrustedMode::Enforce,
            manifests: vec![manifest],
            require_ids: true,
        },
        ..HttpSettings::default()
    };
    let state = auth_state(model, &app.store, &issuer, PageLimits::default(), http).await;
    let server = Running::serve(router(state)).await;
    let client = reqwest::Client::new();
    let ask = async |token: &str, body: Value| -> Value {
        client
            .post(server.url("/graphql"))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    };
    let support = issuer.mint(&model_claims(model, "sam", &["support"]));
    let customer = issuer.mint(&model_claims(model, "cat", &[]));
    let other = json!({ "query": "{ product(sku: \"S-2\") { name } }" });
    let mark = log.mark();
    assert_eq!(
        code(&ask(&customer, other.clone()).await),
        "PERSISTED_QUERY_ID_REQUIRED"
    );
    assert_eq!(
        code(&ask(&customer, json!({ "query": product })).await),
        "PERSISTED_QUERY_ID_REQUIRED"
    );
    assert!(
        log.since(mark).is_empty(),
        "refused requests called DynamoDB"
    );
    // By id, everyone; in full, the exempt caller only.
    let by_id = json!({ "extensions": { "persistedQuery": { "version": 1, "sha256Hash": sha256_hex(product) } } });
    for token in [&customer, &support] {
        let answer = ask(token, by_id.clone()).await;
        assert!(answer["data"].is_object(), "{answer}");
    }
    let answer = ask(&support, other).await;
    assert!(
        answer["data"].is_object() && answer.get("errors").is_none(),
        "{answer}"
    );
}

#[tokio::test]
async fn a_new_manifest_is_swapped_in_under_load_and_a_broken_one_is_refused() {
    let (app, _log) = notes_app(vec![note("ada", 1, "first", "OPEN")]).await;
    let path = write_manifest(&apollo_manifest(&[("Notes", NOTES)]));
    let state = model_state(
        app.model,
        &app.store,
        PageLimits::default(),
        &test_ring(),
        enforcing(vec![path.clone()]),
    );
    let router = router(state.clone());
    let server = Arc::new(Running::serve(router.clone()).await);
    let http = reqwest::Client::new();
    let owner = json!({ "owner": "ada" });
    let other = json!({ "query": OTHER, "variables": owner });
    assert_eq!(
        code(&post(&http, &server, &other).await),
        "PERSISTED_QUERY_NOT_IN_LIST"
    );

    // Clients page by id while the list is reloaded again and again: no request fails.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut clients = Vec::new();
    for _ in 0..4 {
        let (http, server, stop) = (http.clone(), Arc::clone(&server), Arc::clone(&stop));
        let by_id = json!({ "extensions": { "persistedQuery": { "version": 1, "sha256Hash": sha256_hex(NOTES) } }, "variables": { "owner": "ada" } });
        clients.push(tokio::spawn(async move {
            let mut answered = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || answered == 0 {
                let answer = post(&http, &server, &by_id).await;
                assert_eq!(texts(&answer), ["first"], "during a reload: {answer}");
                answered += 1;
            }
            answered
        }));
    }
    for round in 0..20 {
        let operations: &[(&str, &str)] = if round % 2 == 0 {
            &[("Notes", NOTES), ("InState", OTHER)]
        } else {
            &[("Notes", NOTES)]
        };
        std::fs::write(&path, apollo_manifest(operations)).unwrap();
        let listed = state.reload_operations().expect("a valid manifest reloads");
        assert_eq!(listed, operations.len());
        tokio::task::yield_now().await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for client in clients {
        assert!(client.await.unwrap() > 0);
    }
    // The last list (an odd round) lacks OTHER; list it again.
    std::fs::write(
        &path,
        apollo_manifest(&[("Notes", NOTES), ("InState", OTHER)]),
    )
    .unwrap();
    state.reload_operations().unwrap();
    assert!(post(&http, &server, &other).await["data"].is_object());

    // A manifest that does not validate is refused; the old list serves on.
    let broken = "query Broken { notes(owner: \"ada\") { edges { node { nope } } } }";
    std::fs::write(&path, apollo_manifest(&[("Broken", broken)])).unwrap();
    let errors = state
        .reload_operations()
        .expect_err("a broken manifest is refused");
    assert!(
        errors.to_string().contains("operation") && errors.to_string().contains("(Broken)"),
        "{errors}"
    );
    assert!(post(&http, &server, &other).await["data"].is_object());
    let metrics = metrics_of(&router).await;
    assert_eq!(
        metric(
            &metrics,
            "dynarelay_operation_manifest_loads_total{outcome=\"refused\"}"
        ),
        1.0
    );
    assert_eq!(metric(&metrics, "dynarelay_operations_listed"), 2.0);

    // The file watcher reloads a changed file by itself.
    tokio::spawn(dynarelay::http::trusted::watch(
        state.clone(),
        std::time::Duration::from_millis(20),
        dynarelay::hangups::Hangups::listen(),
    ));
    std::fs::write(&path, apollo_manifest(&[("Notes", NOTES)])).unwrap();
    let mut waited = 0;
    while state.trusted_operations() != 1 {
        waited += 1;
        assert!(
            waited < 3000,
            "the watcher did not reload the changed manifest"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        code(&post(&http, &server, &other).await),
        "PERSISTED_QUERY_NOT_IN_LIST"
    );
}

#[test]
fn a_manifest_that_does_not_validate_stops_the_start_and_check_reports_it() {
    let broken = write_manifest(&apollo_manifest(&[
        ("Fine", "query Fine { user(userId: \"u\") { name } }"),
        ("Typo", "query Typo { user(userId: \"u\") { nam } }"),
    ]));
    let relay =
        write_manifest(&json!({ "abc": "query Deep { product(sku: 1) { name } }" }).to_string());
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/shop/dynarelay.toml");
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_dynarelay"))
        .args(["check", "--offline", "--model", model, "--operations"])
        .arg(&broken)
        .arg("--operations")
        .arg(&relay)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success(), "{stderr}");
    assert_eq!(
        stderr
            .matches("2 problems in the operation manifests")
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("operation \"")
            && stderr.contains("(Typo) at 1:34 of its text: Unknown field \"nam\""),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "operation \"abc\" (Deep) at 1:22 of its text: Invalid value for argument \"sku\""
        ),
        "{stderr}"
    );
    // Control: the valid operation alone passes.
    let fine = write_manifest(&apollo_manifest(&[(
        "Fine",
        "query Fine { user(userId: \"u\") { name } }",
    )]));
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_dynarelay"))
        .args(["check", "--offline", "--model", model, "--operations"])
        .arg(&fine)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("1 operations in 1 manifests are valid")
    );
    // `serve` stops at start with the same report, before listening.
    let serve = crate::helpers::dynarelay_command("http://127.0.0.1:9")
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--trusted-documents",
            "enforce",
            "--operations",
        ])
        .arg(&broken)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&serve.stderr);
    assert!(!serve.status.success(), "{stderr}");
    // Each problem once.
    assert_eq!(
        stderr.matches("(Typo) at 1:34 of its text").count(),
        1,
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("problem in the operation manifests").count(),
        1,
        "{stderr}"
    );
    assert!(!stderr.contains("dynarelay is listening"), "{stderr}");
    // A subscription where the model has none: one problem, told once.
    let books = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/books/dynarelay.toml");
    let subscription = write_manifest(
        &json!({ "s": "subscription S { purchasesChanged(userId: \"u\") { kind } }" }).to_string(),
    );
    let (valid, said) = check_offline(books, &["--operations".as_ref(), subscription.as_os_str()]);
    assert!(!valid, "{said}");
    assert!(
        said.contains("1 problem in the operation manifests"),
        "{said}"
    );
    assert_eq!(
        said.matches("Schema is not configured for subscriptions")
            .count(),
        1,
        "{said}"
    );
}

/// `serve` reloads its manifests on `SIGHUP`. The new manifest has the old one's length and
/// modification time, so the file watcher sees no change: only the signal can have reloaded it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reloads_its_manifests_on_sighup() {
    let app = crate::helpers::model_app("examples/shop/dynarelay.toml").await;
    let first = "query A { user(userId: \"u\") { name } }";
    let second = "query B { user(userId: \"v\") { name } }";
    let path = write_manifest(&json!({ "a": first }).to_string());
    let written = std::fs::metadata(&path).unwrap().modified().unwrap();
    let (mut server, url, _) = serve_shop(
        &app,
        &[
            "--trusted-documents".as_ref(),
            "enforce".as_ref(),
            "--operations".as_ref(),
            path.as_os_str(),
        ],
    );
    let http = reqwest::Client::new();
    let runs = async |query: &str| {
        let answer = post_at(&http, &url, &json!({ "query": query })).await;
        answer.get("data").is_some()
    };
    assert!(runs(first).await);
    assert!(!runs(second).await);

    std::fs::write(&path, json!({ "a": second }).to_string()).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(written)
        .unwrap();
    let hangup = std::process::Command::new("kill")
        .args(["-HUP", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(hangup.success());
    let mut waited = 0;
    while !runs(second).await {
        waited += 1;
        assert!(waited < 3000, "SIGHUP did not reload the manifest");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(!runs(first).await);
    let status = tokio::task::block_in_place(|| crate::helpers::stop(&mut server));
    assert!(status.success(), "serve exited with {status}");
}

/// The server of `app` with [`manifests`] in `mode`.
fn trusted_router(app: &ModelApp, mode: TrustedMode) -> axum::Router {
    router(model_state(
        app.model,
        &app.store,
        PageLimits::default(),
        &test_ring(),
        HttpSettings {
            trusted: TrustedSettings {
                mode,
                manifests: manifests(),
                require_ids: false,
            },
            ..HttpSettings::default()
        },
    ))
}

/// A request naming a document by `id` in one of the three forms, with `text` if any.
fn by_id(form: &str, id: &str, text: Option<&str>) -> Value {
    let mut body = match form {
        "apollo" => {
            json!({ "extensions": { "persistedQuery": { "version": 1, "sha256Hash": id } } })
        }
        "documentId" => json!({ "documentId": format!("sha256:{id}") }),
        _ => json!({ "doc_id": id }),
    };
    body["variables"] = json!({ "owner": "ada" });
    if let Some(text) = text {
        body["query"] = json!(text);
    }
    body
}

/// The one rule for an id sent beside a text, in every id form and every mode: the text must be
/// the id's document, else the request is refused before any DynamoDB call with
/// `BAD_USER_INPUT`, counted under `reason="mismatch"`. An id that is a hash (Apollo's,
/// `documentId`'s `sha256:`) and names nothing listed names the text it is the hash of: Apollo's
/// with that text is an automatic persisted query's registration, judged as the text sent alone;
/// any other id that names nothing is `PERSISTED_QUERY_NOT_FOUND`.
#[tokio::test]
async fn an_id_beside_a_text_runs_only_its_own_document_in_every_form_and_mode() {
    book_says(
        "docs/src/reference/graphql-over-http.md",
        "An id sent beside a text follows one rule, whatever the id's form and the mode: the text \
         must be the id's document, byte for byte, or the request is refused before parsing with \
         `BAD_USER_INPUT` and counted under `reason=\"mismatch\"`.",
    );
    let (app, log) = notes_app(vec![note("ada", 1, "first", "OPEN")]).await;
    let unlisted =
        "query Mine($owner: String!) { notes(owner: $owner) { edges { node { text } } } }";
    let listed = sha256_hex(NOTES);
    let unknown = sha256_hex(unlisted);
    for mode in [TrustedMode::Enforce, TrustedMode::Log, TrustedMode::Off] {
        let router = trusted_router(&app, mode);
        let server = Running::serve(router.clone()).await;
        let http = reqwest::Client::new();
        let enforcing = mode == TrustedMode::Enforce;
        let runs_unless_enforcing = if enforcing {
            "PERSISTED_QUERY_NOT_IN_LIST"
        } else {
            "runs"
        };
        // (form, id, text, what happens)
        let mut cases: Vec<(&str, &str, Option<&str>, &str)> = Vec::new();
        for form in ["apollo", "documentId", "doc_id"] {
            // Every form names the listed NOTES by the SHA-256 of its text (Apollo's manifest's
            // id).
            cases.extend([
                (form, listed.as_str(), None, "runs"),
                (form, listed.as_str(), Some(NOTES), "runs"),
                (form, listed.as_str(), Some(OTHER), "BAD_USER_INPUT"),
                (form, listed.as_str(), Some(unlisted), "BAD_USER_INPUT"),
            ]);
        }
        cases.extend([
            (
                "apollo",
                unknown.as_str(),
                Some(unlisted),
                runs_unless_enforcing,
            ),
            (
                "documentId",
                unknown.as_str(),
                Some(unlisted),
                "PERSISTED_QUERY_NOT_FOUND",
            ),
            ("apollo", unknown.as_str(), Some(OTHER), "BAD_USER_INPUT"),
            (
                "documentId",
                unknown.as_str(),
                Some(OTHER),
                "BAD_USER_INPUT",
            ),
            ("apollo", unknown.as_str(), Some(NOTES), "BAD_USER_INPUT"),
            (
                "doc_id",
                unknown.as_str(),
                Some(unlisted),
                "PERSISTED_QUERY_NOT_FOUND",
            ),
        ]);
        let mismatches = || async {
            metric(
                &metrics_of(&router).await,
                "dynarelay_trusted_documents_refused_total{reason=\"mismatch\"}",
            )
        };
        for (form, id, text, expected) in cases {
            let case = format!("{mode:?}, {form} {id} with {text:?}");
            let before = mismatches().await;
            let mark = log.mark();
            let answer = post(&http, &server, &by_id(form, id, text)).await;
            if expected == "runs" {
                assert_eq!(texts(&answer), ["first"], "{case}: {answer}");
                continue;
            }
            assert_eq!(code(&answer), expected, "{case}: {answer}");
            assert!(answer.get("data").is_none(), "{case}: {answer}");
            let calls: Vec<_> = log
                .since(mark)
                .into_iter()
                .filter(|call| call.operation != "DescribeTable")
                .collect();
            assert!(calls.is_empty(), "{case} called DynamoDB: {calls:?}");
            let counted = mismatches().await - before;
            assert_eq!(
                counted,
                f64::from(u8::from(expected == "BAD_USER_INPUT")),
                "{case}: counted {counted} mismatches"
            );
        }
    }
}

/// What `log` mode counts for an Apollo client meeting a document no manifest lists: its first
/// request (the hash alone) is answered `PERSISTED_QUERY_NOT_FOUND` and counted under
/// `not_found`, not as run; the text it sends next runs and counts once; each later page by the
/// hash counts once. Three pages, three `unlisted`.
#[tokio::test]
async fn log_mode_counts_an_apollo_client_s_unlisted_pages_once_each() {
    book_says(
        "docs/src/guides/operating.md",
        "Only what ran counts there: an Apollo client's first request by hash alone, answered \
         `PERSISTED_QUERY_NOT_FOUND`, counts under \
         `dynarelay_trusted_documents_refused_total{reason=\"not_found\"}`",
    );
    let (app, _log) = notes_app(vec![note("ada", 1, "first", "OPEN")]).await;
    let router = trusted_router(&app, TrustedMode::Log);
    let server = Running::serve(router.clone()).await;
    let http = reqwest::Client::new();
    let unlisted =
        "query Mine($owner: String!) { notes(owner: $owner) { edges { node { text } } } }";
    let hash = sha256_hex(unlisted);
    let counts = || async {
        let metrics = metrics_of(&router).await;
        (
            metric(
                &metrics,
                "dynarelay_trusted_documents_total{outcome=\"unlisted\"}",
            ),
            metric(
                &metrics,
                "dynarelay_trusted_documents_refused_total{reason=\"not_found\"}",
            ),
        )
    };
    let first = post(&http, &server, &by_id("apollo", &hash, None)).await;
    assert_eq!(code(&first), "PERSISTED_QUERY_NOT_FOUND", "{first}");
    assert_eq!(counts().await, (0.0, 1.0));
    let registered = post(&http, &server, &by_id("apollo", &hash, Some(unlisted))).await;
    assert_eq!(texts(&registered), ["first"], "{registered}");
    assert_eq!(counts().await, (1.0, 1.0));
    for page in 2..=3 {
        let answer = post(&http, &server, &by_id("apollo", &hash, None)).await;
        assert_eq!(texts(&answer), ["first"], "{answer}");
        assert_eq!(counts().await, (f64::from(page), 1.0));
    }
    // A document that fails before it runs (a variable missing) is not counted as run either.
    let refused = post(&http, &server, &json!({ "query": unlisted })).await;
    assert_eq!(code(&refused), "BAD_USER_INPUT", "{refused}");
    assert_eq!(counts().await, (3.0, 1.0));
}

/// `log` mode's line names the operation that ran from its document when the request does not
/// name it, and says "ran" only of documents that did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_mode_logs_the_document_s_own_operation_name_and_only_what_ran() {
    book_says(
        "docs/src/guides/operating.md",
        "operation name (the request's `operationName`, or else the document's own)",
    );
    let app = crate::helpers::model_app("examples/shop/dynarelay.toml").await;
    let path =
        write_manifest(&json!({ "a": "query A { user(userId: \"u\") { name } }" }).to_string());
    let (mut server, url, log) = serve_shop(
        &app,
        &[
            "--trusted-documents".as_ref(),
            "log".as_ref(),
            "--operations".as_ref(),
            path.as_os_str(),
        ],
    );
    let http = reqwest::Client::new();
    let missed = "query Missed { user(userId: \"m\") { name } }";
    let answer = post_at(
        &http,
        &url,
        &json!({ "extensions": { "persistedQuery": { "version": 1, "sha256Hash": sha256_hex(missed) } } }),
    )
    .await;
    assert_eq!(code(&answer), "PERSISTED_QUERY_NOT_FOUND", "{answer}");
    let probe = "query LogProbe { user(userId: \"u\") { name } }";
    let answer = post_at(&http, &url, &json!({ "query": probe })).await;
    assert!(answer.get("errors").is_none(), "{answer}");
    let line = tokio::task::block_in_place(|| log.wait_for(&["ran", "LogProbe"]));
    assert!(line.contains(&sha256_hex(probe)), "{line}");
    // The hash answered PERSISTED_QUERY_NOT_FOUND before it was not logged as run.
    let ran: Vec<String> = log
        .lines()
        .into_iter()
        .filter(|line| line.contains(&sha256_hex(missed)))
        .collect();
    assert!(ran.is_empty(), "{ran:?}");
    let status = tokio::task::block_in_place(|| crate::helpers::stop(&mut server));
    assert!(status.success(), "serve exited with {status}");
}

/// `SIGHUP` never ends `serve`: without manifests it is logged as reloading nothing, and the
/// server goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_without_manifests_stays_up_on_sighup() {
    book_says(
        "docs/src/guides/operating.md",
        "`SIGHUP` never ends a dynarelay process: a `serve` without manifests, a `relay`, a \
         `lambda` or `lambda-relay` logs that it has nothing to reload and goes on",
    );
    let app = crate::helpers::model_app("examples/shop/dynarelay.toml").await;
    let (mut server, url, log) = serve_shop(&app, &[]);
    let http = reqwest::Client::new();
    let query = json!({ "query": "{ user(userId: \"u\") { name } }" });
    for _ in 0..2 {
        signal(server.id(), "HUP");
        tokio::task::block_in_place(|| log.wait_for(&["SIGHUP", "nothing to reload"]));
    }
    let answer = post_at(&http, &url, &query).await;
    assert!(answer.get("errors").is_none(), "{answer}");
    assert!(server.try_wait().unwrap().is_none(), "serve ended");
    let status = tokio::task::block_in_place(|| crate::helpers::stop(&mut server));
    assert!(status.success(), "serve exited with {status}");
}

/// `serve` of the shop model over `app`'s tables with `args` after `serve --listen 127.0.0.1:0`:
/// the process, its GraphQL URL and its log.
fn serve_shop(
    app: &crate::helpers::ModelApp,
    args: &[&std::ffi::OsStr],
) -> (std::process::Child, String, crate::helpers::ProcessLog) {
    let (server, addr, log) = tokio::task::block_in_place(|| {
        spawn_serve_logged(
            crate::helpers::dynarelay_command(&crate::helpers::endpoint())
                .env("DYNARELAY_TABLE_PREFIX", &app.prefix)
                .args(["serve", "--listen", "127.0.0.1:0"])
                .args(args),
        )
    });
    (server, format!("http://{addr}/graphql"), log)
}
