//! `init` on tables that are awkward to read: no items, a 400 KB item, attribute names GraphQL
//! does not take (and names that collide once mapped), an attribute stored as different types,
//! a table the credentials may not read, throttling, a table far larger than the sample, tables
//! being created or deleted while sampled, and an output file that already exists. The fault
//! proxy stands in for IAM, throttling and a table still being created (DynamoDB Local has no
//! IAM, never throttles and creates tables at once); everything else is DynamoDB Local itself.

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::{
    dynamo::{self, Item},
    init::{InitOptions, init},
};
use serde_json::{Value, json};

use super::run_init;
use crate::{
    fault_proxy::{FaultProxy, Throttle},
    helpers::{ModelApp, all_nodes, dynarelay_command, endpoint, model_app_from, model_app_over},
};

/// Tables `Odd` (partition key `pk`) and `Log` (`pk`, sort key `n`, a number), created on a
/// fresh prefix through a model of their own, with no items.
async fn odd_tables() -> ModelApp {
    model_app_from(
        r#"
version = 1
[tables.Odd]
partition_key = "pk"
attributes = { pk = "S" }
[tables.Log]
partition_key = "pk"
sort_key = "n"
attributes = { pk = "S", n = "N" }
[entities.Odd]
table = "Odd"
fields.pk = { type = "String!" }
[entities.Log]
table = "Log"
fields.pk = { type = "String!" }
fields.n = { type = "Int!" }
"#,
    )
    .await
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

#[tokio::test]
async fn tables_without_items_get_their_keys_typed_from_the_definition() {
    let app = odd_tables().await;
    let outcome = run_init(&app, 50).await;
    assert_eq!((outcome.items, outcome.tables), (0, 2));
    let text = &outcome.text;
    assert!(text.contains(r#"n = { type = "BigInt!""#), "{text}");
    assert!(
        text.contains("review: no item holds it: typed from the key definition"),
        "{text}"
    );
    let served = model_app_over(text, &app.prefix);
    let response = served
        .graphql(
            "{ logs(first: 5) { nodes { pk n } } odds(first: 5) { nodes { pk } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        response["data"],
        json!({ "logs": { "nodes": [] }, "odds": { "nodes": [] } }),
        "{response}"
    );
}

#[tokio::test]
async fn odd_names_mixed_types_and_a_400_kb_item_are_all_served() {
    let app = odd_tables().await;
    let big = "x".repeat(399 * 1024);
    let mut items = Vec::new();
    for i in 0..6 {
        let mut item = Item::from([
            ("pk".to_owned(), s(&format!("item-{i}"))),
            (
                "status#createdAt".to_owned(),
                s(&format!("OPEN#2026-05-0{}T12:00:00.000Z", i + 1)),
            ),
            ("__kind__".to_owned(), s("thing")),
            ("first name".to_owned(), s(&format!("Name {i}"))),
            ("firstName".to_owned(), s(&format!("Other {i}"))),
            ("id".to_owned(), s(&format!("own-{i}"))),
            ("2fa".to_owned(), AttributeValue::Bool(i % 2 == 0)),
            // A string in some items, a number in others.
            (
                "mixed".to_owned(),
                if i % 2 == 0 { s("text") } else { n(i) },
            ),
        ]);
        if i == 0 {
            item.insert("blob".to_owned(), s(&big));
        }
        items.push(item);
    }
    app.store.put_items(&app.table("Odd"), items).await.unwrap();
    let outcome = run_init(&app, 50).await;
    let text = &outcome.text;
    for line in [
        r#"statusCreatedAt = { type = "String!", attribute = "status#createdAt""#,
        r#"kind = { type = "String!", attribute = "__kind__""#,
        r#"firstName = { type = "String!", attribute = "first name""#,
        r#"firstName2 = { type = "String!", attribute = "firstName""#,
        r#"oddId = { type = "ID!", attribute = "id""#,
        r#"_2fa = { type = "Boolean!", attribute = "2fa""#,
        r#"mixed = { type = "JSON!""#,
        "# review: stored as different types (N in 3, S in 3): typed JSON",
        r#"blob = { type = "String""#,
    ] {
        assert!(text.contains(line), "missing `{line}` in:\n{text}");
    }
    let served = model_app_over(text, &app.prefix);
    let query = "query($first: Int, $after: String) { odds(first: $first, after: $after) { \
                 nodes { pk statusCreatedAt kind firstName firstName2 oddId _2fa mixed blob } \
                 pageInfo { hasNextPage endCursor } } }";
    let mut nodes = all_nodes(|vars| served.graphql(query, vars), &["odds"], 2).await;
    nodes.sort_by_key(|node| node["pk"].as_str().unwrap().to_owned());
    assert_eq!(nodes.len(), 6);
    for (i, node) in nodes.iter().enumerate() {
        let want = json!({
            "pk": format!("item-{i}"),
            "statusCreatedAt": format!("OPEN#2026-05-0{}T12:00:00.000Z", i + 1),
            "kind": "thing",
            "firstName": format!("Name {i}"),
            "firstName2": format!("Other {i}"),
            "oddId": format!("own-{i}"),
            "_2fa": i % 2 == 0,
            "mixed": if i % 2 == 0 { json!("text") } else { json!(i) },
            "blob": if i == 0 { json!(big) } else { Value::Null },
        });
        assert_eq!(node, &want, "item {i}");
    }
}

#[tokio::test]
async fn the_sample_is_bounded_whatever_the_table_size() {
    let app = odd_tables().await;
    let items: Vec<Item> = (0..3000)
        .map(|i| {
            Item::from([
                ("pk".to_owned(), s(&format!("p{}", i % 300))),
                ("n".to_owned(), n(i)),
                ("at".to_owned(), n(1_714_564_800_000 + i)),
            ])
        })
        .collect();
    app.store.put_items(&app.table("Log"), items).await.unwrap();
    let proxy = FaultProxy::start(&endpoint()).await;
    let client = dynamo::client_for_local(&proxy.url());
    let before = proxy.counts();
    let options = InitOptions {
        tables: Some(vec!["Log".to_owned()]),
        prefix: app.prefix.clone(),
        sample: 500,
    };
    let outcome = init(&client, &options, &mut |_: &str, _: usize, _: usize| {})
        .await
        .unwrap();
    let calls = (proxy.counts() - before).received;
    assert_eq!(outcome.items, 500);
    // Five Scans of 100 items (one per segment), DescribeTable and DescribeTimeToLive.
    assert_eq!(outcome.scans, 5);
    assert_eq!(calls, 7, "calls counted by the proxy");
    // Every sampled item holds `at`, but 2,500 were not read: nullable, and said why.
    assert!(
        outcome.text.contains(
            "# review: every sampled item holds it, but not every item was read: make it \
             `DateTime!` once you\n# know every item does\nat = { type = \"DateTime\", \
             stored_as = \"epoch_millis\""
        ),
        "{}",
        outcome.text
    );
}

#[tokio::test]
async fn a_table_the_credentials_may_not_read_is_left_out_and_named() {
    let app = odd_tables().await;
    let proxy = FaultProxy::start(&endpoint()).await;
    proxy.deny_table(&app.table("Odd"));
    let client = dynamo::client_for_local(&proxy.url());
    let options = InitOptions {
        tables: None,
        prefix: app.prefix.clone(),
        sample: 10,
    };
    let outcome = init(&client, &options, &mut |_: &str, _: usize, _: usize| {})
        .await
        .unwrap();
    assert_eq!(outcome.tables, 1);
    assert_eq!(outcome.skipped.len(), 1);
    assert_eq!(outcome.skipped[0].table, app.table("Odd"));
    assert!(outcome.skipped[0].reason.contains("access denied"));
    assert!(outcome.text.contains("[tables.Log]"));
    assert!(!outcome.text.contains("[tables.Odd]"));
    assert!(
        outcome
            .text
            .contains(&format!("# Not included: table {}", app.table("Odd"))),
        "{}",
        outcome.text
    );
}

// Multi-threaded: the proxy answers on this runtime while the test waits for the binary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_fails_the_run_and_writes_nothing() {
    let app = odd_tables().await;
    let proxy = FaultProxy::start(&endpoint()).await;
    let dir = std::env::temp_dir().join(format!("dynarelay-init-{}", app.prefix));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("model.toml");
    proxy.throttle_all(Throttle::ProvisionedThroughputExceeded);
    let run = dynarelay_command(&proxy.url())
        .args(["init", "--table-prefix", &app.prefix, "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("throttled"), "{stderr}");
    assert!(stderr.contains("no model was written"), "{stderr}");
    assert!(!out.exists());
    assert!(proxy.counts().throttled >= 3, "the SDK retried");
}

#[tokio::test]
async fn an_existing_file_is_replaced_only_with_force() {
    let app = odd_tables().await;
    let dir = std::env::temp_dir().join(format!("dynarelay-init-{}", app.prefix));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("model.toml");
    std::fs::write(&out, "# mine\n").unwrap();
    let run = |force: bool| {
        let mut cmd = dynarelay_command(&endpoint());
        cmd.args(["init", "--table-prefix", &app.prefix, "--out"])
            .arg(&out);
        if force {
            cmd.arg("--force");
        }
        cmd.output().unwrap()
    };
    let refused = run(false);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("pass --force"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "# mine\n");
    let forced = run(true);
    let stderr = String::from_utf8_lossy(&forced.stderr);
    assert!(forced.status.success(), "{stderr}");
    assert!(stderr.contains("2 table(s)"), "{stderr}");
    let text = std::fs::read_to_string(&out).unwrap();
    dynarelay::model::parse("written", &text).unwrap();
    // And `check` takes it as written.
    let check = dynarelay_command(&endpoint())
        .args(["check", "--offline", "--model"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

/// A table DynamoDB describes as still being created is left out and named; a table deleted
/// after its first Scan page is left out too, as missing; the rest is written.
// Multi-threaded: the progress callback deletes a table from within the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_being_created_or_deleted_are_left_out_and_named() {
    let app = odd_tables().await;
    let items: Vec<Item> = (0..300)
        .map(|i| {
            Item::from([
                ("pk".to_owned(), s(&format!("p{i}"))),
                ("n".to_owned(), n(i)),
            ])
        })
        .collect();
    app.store.put_items(&app.table("Log"), items).await.unwrap();
    let proxy = FaultProxy::start(&endpoint()).await;
    proxy.creating_table(&app.table("Odd"));
    let client = dynamo::client_for_local(&proxy.url());
    let options = InitOptions {
        tables: None,
        prefix: app.prefix.clone(),
        sample: 300,
    };
    // Both tables are described as they come; `Log` is deleted once its first page is read.
    let deleting = app.client().clone();
    let log = app.table("Log");
    let mut deleted = false;
    let outcome = init(&client, &options, &mut |table: &str, _: usize, _: usize| {
        if table == log && !deleted {
            deleted = true;
            tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current().block_on(async {
                    deleting
                        .delete_table()
                        .table_name(&log)
                        .send()
                        .await
                        .unwrap();
                });
            });
        }
    })
    .await;
    let err = outcome.expect_err("no table could be read");
    let message = format!("{err:#}");
    assert!(
        message.contains(&format!(
            "{}: the table is CREATING (only ACTIVE tables are sampled)",
            app.table("Odd")
        )),
        "{message}"
    );
    assert!(
        message.contains(&format!("{}: Scan: no such table", app.table("Log"))),
        "{message}"
    );
}
