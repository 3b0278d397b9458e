//! The `dynarelay` binary end to end: configured only through the standard AWS environment, as in
//! production, but with a local endpoint, dummy credentials and the EC2 metadata service disabled.

use std::process::Command;

use serde_json::Value;

use crate::{
    fault_proxy::FaultProxy,
    helpers::{dynarelay_command, endpoint, spawn_serve, stop, unique_prefix},
};

fn dynarelay(prefix: &str) -> Command {
    let mut cmd = dynarelay_command(&endpoint());
    cmd.env("DYNARELAY_TABLE_PREFIX", prefix);
    cmd
}

#[test]
fn help_documents_every_command() {
    let out = Command::new(env!("CARGO_BIN_EXE_dynarelay"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for command in ["serve", "check", "schema", "tables", "keygen", "seed"] {
        assert!(help.contains(command), "--help lacks {command}:\n{help}");
    }
}

#[test]
fn keygen_prints_a_new_usable_key_each_time() {
    let keys: Vec<String> = (0..2)
        .map(|_| {
            let out = Command::new(env!("CARGO_BIN_EXE_dynarelay"))
                .args(["keygen", "--id", "7"])
                .output()
                .unwrap();
            assert!(out.status.success());
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        })
        .collect();
    assert_ne!(keys[0], keys[1]);
    for key in &keys {
        assert!(key.starts_with("7:"), "{key}");
        let ring: dynarelay::cursor::KeyRing = key.parse().unwrap();
        assert!(!ring.is_development());
    }
}

#[test]
fn serve_refuses_to_start_without_a_cursor_key_and_says_how_to_make_one() {
    let out = dynarelay(&unique_prefix())
        .env_remove("DYNARELAY_CURSOR_KEYS")
        .arg("serve")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no cursor key is configured") && stderr.contains("dynarelay keygen"),
        "{stderr}"
    );
}

#[test]
fn cursor_keys_never_appear_in_help_or_errors() {
    let secret = "KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio";
    let help = dynarelay(&unique_prefix())
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(help.status.success());
    assert!(!String::from_utf8_lossy(&help.stdout).contains(secret));
    let bad = dynarelay(&unique_prefix())
        .env("DYNARELAY_CURSOR_KEYS", format!("1:{secret}X"))
        .arg("serve")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("ID:SECRET") && !stderr.contains(secret),
        "{stderr}"
    );
}

#[test]
fn bad_page_limits_stop_serve_before_it_listens() {
    let out = dynarelay(&unique_prefix())
        .args([
            "serve",
            "--default-page-size",
            "200",
            "--max-page-size",
            "100",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("page sizes must satisfy"));
}

#[test]
fn bad_http_settings_stop_serve_before_it_listens() {
    for (flag, value, complaint) in [
        (
            "--persisted-queries",
            "1000000000000",
            "--persisted-queries",
        ),
        (
            "--cors-allowed-origins",
            "localhost:3000",
            "is not an origin",
        ),
    ] {
        let out = dynarelay(&unique_prefix())
            .args(["serve", flag, value])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{flag} {value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(complaint), "{flag}: {stderr}");
    }
}

/// `serve`'s DynamoDB calls go through a proxy holding them to the shop's policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_check_and_serve_then_stop_on_sigterm() {
    let prefix = unique_prefix();
    let create = dynarelay(&prefix)
        .args(["tables", "create"])
        .output()
        .unwrap();
    assert!(
        create.status.success(),
        "{}",
        String::from_utf8_lossy(&create.stderr)
    );
    let check = dynarelay(&prefix).arg("check").output().unwrap();
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(said.contains("the live tables match the model"), "{said}");
    let store =
        crate::helpers::shop_store(dynarelay::dynamo::client_for_local(&endpoint()), &prefix).await;
    let data = crate::shop_data::generate(&crate::shop_data::SeedSpec {
        seed: 3,
        users: 10,
        products: 5,
        categories: 2,
    });
    crate::shop_data::write(
        &store,
        &crate::shop_data::ShopTables::with_prefix(&prefix),
        &data,
    )
    .await
    .unwrap();

    let dynamodb = FaultProxy::auditing(&endpoint(), crate::helpers::shop(), &prefix).await;
    let (mut server, addr) = tokio::task::block_in_place(|| {
        spawn_serve(
            dynarelay_command(&dynamodb.url())
                .env("DYNARELAY_TABLE_PREFIX", &prefix)
                .args(["serve", "--listen", "127.0.0.1:0"]),
        )
    });

    let http = reqwest::Client::new();
    let ready = http
        .get(format!("http://{addr}/ready"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    let users = http
        .post(format!("http://{addr}/graphql"))
        .json(&serde_json::json!({ "query": "{ __type(name: \"PurchaseConnection\") { name } }" }))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(users["data"]["__type"]["name"], "PurchaseConnection");

    let status = tokio::task::block_in_place(|| stop(&mut server));
    assert!(status.success(), "serve exited with {status}");
    assert_eq!(dynamodb.refused(), Vec::<String>::new());
}

#[test]
fn schema_prints_the_shops_sdl() {
    let out = dynarelay(&unique_prefix()).arg("schema").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sdl = String::from_utf8(out.stdout).unwrap();
    let committed = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/schema.graphql"));
    assert_eq!(sdl, committed);
}

#[test]
fn a_bad_model_file_gets_located_messages_and_no_backtrace() {
    let dir = std::env::temp_dir().join(format!("dynarelay-{}", unique_prefix()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "version = 1\n[tables.T]\npartition_key = \"id\"\nattributes = { id = \"S\" }\n[entities.E]\ntable = \"Nope\"\n",
    )
    .unwrap();
    for command in [
        &["check"][..],
        &["schema"],
        &["serve"],
        &["tables", "create"],
    ] {
        let out = dynarelay(&unique_prefix())
            .env("DYNARELAY_MODEL", &file)
            .env("RUST_BACKTRACE", "full")
            .args(command)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{command:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("bad.toml:6:"), "{command:?}: {stderr}");
        assert!(stderr.contains("Nope"), "{command:?}: {stderr}");
        for leak in ["panicked", "stack backtrace", "Error {", "ModelErrors"] {
            assert!(
                !stderr.contains(leak),
                "{command:?} printed {leak:?}: {stderr}"
            );
        }
    }
}

/// `check` where the environment names no AWS region or no credentials says so in one line,
/// with how to check the file alone: no SDK warnings (each a line of kilobytes of its errors'
/// debug output) and no failed call's chain of SDK errors.
#[test]
fn check_without_aws_settings_says_what_is_missing_in_one_line() {
    // Never the network: the metadata service is off, or (the case whose warnings the SDK
    // printed) sent to a loopback port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let imds = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let cases: [(&[(&str, &str)], &str); 3] = [
        (
            &[("AWS_EC2_METADATA_DISABLED", "true")],
            "no AWS region is set",
        ),
        (
            &[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &imds)],
            "no AWS region is set",
        ),
        (
            &[
                ("AWS_EC2_METADATA_DISABLED", "true"),
                ("AWS_REGION", "eu-west-1"),
            ],
            "no AWS credentials were found",
        ),
    ];
    for (env, missing) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_dynarelay"))
            .env_clear()
            .env("HOME", std::env::temp_dir().join(unique_prefix()))
            .envs(env.iter().copied())
            .args([
                "check",
                "--model",
                concat!(env!("CARGO_MANIFEST_DIR"), "/examples/shop/dynarelay.toml"),
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{env:?}: {out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 2, "{env:?}: {stdout}");
        assert!(
            lines[0].ends_with("the model is valid"),
            "{env:?}: {stdout}"
        );
        assert!(
            lines[1].starts_with(&format!("the live tables were not checked: {missing}"))
                && lines[1].ends_with("`--offline` checks the file alone"),
            "{env:?}: {stdout}"
        );
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{env:?}");
    }
}

#[tokio::test]
async fn check_names_each_live_table_that_differs_from_the_model() {
    let prefix = unique_prefix();
    let client = dynarelay::dynamo::client_for_local(&endpoint());
    // `Users` keyed by another attribute; `Products` without its index; `Purchases` missing.
    for (table, key) in [("Users", "id"), ("Products", "sku")] {
        client
            .create_table()
            .table_name(format!("{prefix}{table}"))
            .billing_mode(aws_sdk_dynamodb::types::BillingMode::PayPerRequest)
            .key_schema(
                aws_sdk_dynamodb::types::KeySchemaElement::builder()
                    .attribute_name(key)
                    .key_type(aws_sdk_dynamodb::types::KeyType::Hash)
                    .build()
                    .unwrap(),
            )
            .attribute_definitions(
                aws_sdk_dynamodb::types::AttributeDefinition::builder()
                    .attribute_name(key)
                    .attribute_type(aws_sdk_dynamodb::types::ScalarAttributeType::S)
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
    }
    let out = dynarelay(&prefix).arg("check").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for expected in [
        format!("table `{prefix}Users` has the key (id), but the model declares (userId)"),
        format!("table `{prefix}Products` has no global index `ByCategory`"),
        format!("table `{prefix}Purchases` does not exist"),
        "dynarelay.toml:".to_owned(),
        "3 mismatches".to_owned(),
    ] {
        assert!(stderr.contains(&expected), "{expected}: {stderr}");
    }
    let serve = dynarelay(&prefix)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(serve.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&serve.stderr).contains("do not match the model"),
        "{}",
        String::from_utf8_lossy(&serve.stderr)
    );
}

/// The README's "Serve your own tables", step by step, on the model it names
/// (`examples/orders/dynarelay.toml`): `tables create` (for DynamoDB Local), `check` against the
/// live tables, `schema`, `keygen`, `serve`, then a mutation and a page through the served API.
/// `serve`'s DynamoDB calls go through a proxy holding them to the orders example's policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_s_five_steps_serve_the_orders_example() {
    let prefix = unique_prefix();
    let model = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/orders/dynarelay.toml"
    );
    let run = |args: &[&str]| {
        let output = dynarelay(&prefix)
            .args(args)
            .args(["--model", model])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    run(&["tables", "create"]);
    // Step 1 starts with `init`: the model it writes from the table loads as written.
    let dir = std::env::temp_dir().join(format!("dynarelay-readme-{prefix}"));
    std::fs::create_dir_all(&dir).unwrap();
    let written = dir.join("orders.toml");
    let init = dynarelay(&prefix)
        .args(["init", "--tables", "Orders", "--out"])
        .arg(&written)
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let text = std::fs::read_to_string(&written).unwrap();
    assert!(text.contains("[tables.Orders]"), "{text}");
    dynarelay::model::parse("orders.toml", &text).unwrap();
    assert!(run(&["check"]).contains("the live tables match the model"));
    // Deploy, step 1: the policy, for the tables under the prefix.
    let policy: serde_json::Value = serde_json::from_str(&run(&[
        "policy",
        "--region",
        "eu-west-1",
        "--account",
        "123456789012",
    ]))
    .unwrap();
    assert_eq!(policy["Version"], "2012-10-17");
    assert!(
        policy["Statement"][0]["Resource"]
            .as_str()
            .unwrap()
            .starts_with(&format!(
                "arn:aws:dynamodb:eu-west-1:123456789012:table/{prefix}"
            )),
        "{policy}"
    );
    let sdl = run(&["schema"]);
    assert!(
        sdl.contains("ordersOfCustomer(") && sdl.contains("type Order implements Node"),
        "{sdl}"
    );
    let key = dynarelay(&prefix).arg("keygen").output().unwrap();
    let key = String::from_utf8(key.stdout).unwrap();

    let dynamodb = FaultProxy::auditing(
        &endpoint(),
        crate::helpers::load_model("examples/orders/dynarelay.toml"),
        &prefix,
    )
    .await;
    let (mut server, addr) = tokio::task::block_in_place(|| {
        spawn_serve(
            dynarelay_command(&dynamodb.url())
                .env("DYNARELAY_TABLE_PREFIX", &prefix)
                .env("DYNARELAY_CURSOR_KEYS", key.trim())
                .args(["serve", "--listen", "127.0.0.1:0", "--model", model])
                // Deploy, step 5's flags (a server of your own), on loopback.
                .args([
                    "--health-listen",
                    "127.0.0.1:0",
                    "--trusted-proxies",
                    "10.0.0.0/8",
                ]),
        )
    });
    let http = reqwest::Client::new();
    let ask = |query: &'static str| {
        http.post(format!("http://{addr}/graphql"))
            .json(&serde_json::json!({ "query": query }))
            .send()
    };
    for create in [
        r#"mutation { createOrder(input: { customerId: "c-1", orderDate: "2026-05-01T10:00:00.000Z", total: "42.50", skus: ["A"] }) { order { total } } }"#,
        r#"mutation { createOrder(input: { customerId: "c-1", orderDate: "2026-05-02T10:00:00.000Z", total: "7", skus: ["B"] }) { order { total } } }"#,
    ] {
        let created: Value = ask(create).await.unwrap().json().await.unwrap();
        assert!(created.get("errors").is_none(), "{created}");
    }
    let page: Value = ask(r#"{ ordersOfCustomer(customerId: "c-1", first: 1) { nodes { total } pageInfo { hasNextPage } } }"#)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        page["data"]["ordersOfCustomer"],
        serde_json::json!({ "nodes": [{ "total": "7" }], "pageInfo": { "hasNextPage": true } }),
        "{page}"
    );
    assert!(tokio::task::block_in_place(|| stop(&mut server)).success());
    assert_eq!(dynamodb.refused(), Vec::<String>::new());
}
