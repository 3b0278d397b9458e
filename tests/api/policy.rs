//! `dynarelay policy` held against the calls the server really makes: the shop, served with
//! every DynamoDB call its client sends recorded at the SDK boundary, answers every kind of
//! request its model allows (readiness, lookups, a Scan and Query connections, connections under
//! entities, relations, `node` and `nodes`, each mutation). Every call is allowed by the policy
//! of its model, on exactly its table or index, and every action the policy allows is one of
//! those calls: it allows nothing the model cannot make.
//!
//! Over the whole suite, every server's calls are held to its model's policy (`helpers::audited`,
//! `FaultProxy::auditing`), and each allowed call is written down; after the suite,
//! `scripts/test` checks that every action the policy of every example allows was used by one of
//! those calls.
//!
//! AWS's policy linter, parliament (PyPI), reports nothing on the policy of any example, nor on
//! the policies of what carries its changes (`--for relay`, `--for stream-function`), which allow
//! reading the streams and nothing else.

use std::collections::{BTreeMap, BTreeSet};

use dynarelay::policy::{PolicyTarget, policy};
use serde_json::{Value, json};

use crate::{
    helpers::{
        POLICY_USES, PolicyAudit, PolicyUses, allowed, answer, example_models, lint,
        live_router_logged, logged_model_app, model_state, post_graphql, received_within, shop,
        subscribe, test_ring, warm_up,
    },
    shop_data::{self, SeedSpec, ShopTables},
};

#[tokio::test]
async fn the_shop_policy_allows_every_call_the_shop_makes_and_nothing_else() {
    let (app, log) = logged_model_app(shop()).await;
    let data = shop_data::generate(&SeedSpec {
        seed: 5,
        users: 4,
        products: 3,
        categories: 2,
    });
    shop_data::write(&app.store, &ShopTables::with_prefix(&app.prefix), &data)
        .await
        .unwrap();
    // The user with the most purchases, so that their page reads relations too.
    let user = data
        .users
        .iter()
        .max_by_key(|u| {
            data.purchases
                .iter()
                .filter(|p| p.user_id == u.user_id)
                .count()
        })
        .unwrap()
        .user_id
        .clone();
    let product = &data.products[0];
    let mark = log.mark();

    let ready = answer(
        &app.router,
        axum::http::Request::get("/ready")
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(ready.status, 200);
    let ask = |query: &'static str, variables: Value| {
        let app = &app;
        async move {
            let response = app.graphql(query, variables).await;
            assert!(response.get("errors").is_none(), "{response}");
            response
        }
    };
    let found = ask(
        r#"query($u: String!, $sku: String!, $category: String!) {
          user(userId: $u) { id purchases(first: 3) { nodes { id user { name } product { name } } } }
          product(sku: $sku) { id purchases(first: 3) { nodes { id } } }
          users(first: 3) { nodes { id } }
          products(category: $category, first: 3) { nodes { id } }
        }"#,
        json!({ "u": user, "sku": product.sku, "category": product.category }),
    )
    .await;
    let user_id = found["data"]["user"]["id"].clone();
    let product_id = found["data"]["product"]["id"].clone();
    let purchase_id = found["data"]["product"]["purchases"]["nodes"][0]["id"].clone();
    assert!(purchase_id.is_string(), "{found}");
    ask(
        "query($a: ID!, $b: ID!, $c: ID!) { node(id: $a) { id } nodes(ids: [$a, $b, $c]) { id } }",
        json!({ "a": user_id, "b": product_id, "c": purchase_id }),
    )
    .await;
    let policy_user = ask(
        r#"mutation { createUser(input: { userId: "policy-user", name: "P", email: "p@example.com" }) { user { id } } }"#,
        json!({}),
    )
    .await["data"]["createUser"]["user"]["id"]
        .clone();
    ask(
        r#"mutation { createProduct(input: { sku: "POLICY-1", name: "P", category: "c", price: "1.00" }) { product { id } } }"#,
        json!({}),
    )
    .await;
    let created = ask(
        r#"mutation { createPurchase(input: { userId: "policy-user", sku: "POLICY-1", quantity: 1, amount: "1.00" }) { purchase { id } } }"#,
        json!({}),
    )
    .await;
    ask(
        "mutation($id: ID!) { deletePurchase(input: { id: $id }) { deletedPurchaseId } }",
        json!({ "id": created["data"]["createPurchase"]["purchase"]["id"] }),
    )
    .await;
    // A subscription, until a purchase it follows arrives: its stream reader's calls.
    let live = live_router_logged(&app, &log);
    let mut events = subscribe(
        &live,
        "subscription($u: ID!) { purchasesChanged(user: $u) { kind } }",
        json!({ "u": policy_user }),
    )
    .await;
    warm_up(
        async |_| {
            ask(
                r#"mutation { createPurchase(input: { userId: "policy-user", sku: "POLICY-1", quantity: 1, amount: "2.00" }) { purchase { id } } }"#,
                json!({}),
            )
            .await;
        },
        async |wait| received_within(&mut events, wait).await,
    )
    .await;

    let document = policy(
        shop(),
        &PolicyTarget {
            prefix: app.prefix.clone(),
            region: "us-east-1".to_owned(),
            account: "123456789012".to_owned(),
            check_tables: true,
            ..PolicyTarget::default()
        },
    );
    let allowed = allowed(&document);
    let arn = |table: &str, index: Option<&str>| {
        let table = format!("arn:aws:dynamodb:us-east-1:123456789012:table/{table}");
        match index {
            Some(index) => format!("{table}/index/{index}"),
            None => table,
        }
    };
    let mut made = BTreeSet::new();
    for call in log.since(mark) {
        for table in &call.tables {
            let resource = match call.operation {
                "DescribeStream" | "GetShardIterator" | "GetRecords" => {
                    format!("{}/stream/*", arn(table, None))
                }
                _ => arn(table, call.index.as_deref()),
            };
            let used = (format!("dynamodb:{}", call.operation), resource);
            assert!(
                allowed.contains(&used),
                "not allowed: {used:?}\n{document:#}"
            );
            made.insert(used);
        }
    }
    assert_eq!(
        made, allowed,
        "the policy allows actions the model's API never made"
    );
}

/// What parliament reports on `document`: its findings, one a line, and whether it passed.
fn parliament(document: &Value) -> (bool, String) {
    let document = document.to_string();
    lint("parliament", &["--string".as_ref(), document.as_ref()])
}

/// The control: a policy allowing `GetItem` on every resource gets a finding.
#[test]
fn parliament_reports_nothing_on_the_policy_of_any_example() {
    let mut checked = 0;
    for path in example_models() {
        let model = crate::helpers::load_model(&path);
        for (region, account, check_tables) in [
            ("eu-west-1", "123456789012", true),
            ("*", "*", true),
            ("eu-west-1", "123456789012", false),
        ] {
            let target = PolicyTarget {
                prefix: "prod_".to_owned(),
                region: region.to_owned(),
                account: account.to_owned(),
                check_tables,
                ..PolicyTarget::default()
            };
            let document = policy(model, &target);
            let (passed, findings) = parliament(&document);
            assert!(passed, "{path}: {findings}\n{document:#}");
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} policies checked");

    let control = json!({
        "Version": "2012-10-17",
        "Statement": [{ "Effect": "Allow", "Action": ["dynamodb:GetItem"], "Resource": "*" }]
    });
    let (passed, findings) = parliament(&control);
    assert!(!passed && findings.contains("Resource *"), "{findings}");
}

/// The shop served over `store` answers a `user` lookup (a GetItem).
async fn look_up_a_user(store: &dynarelay::dynamo::Store) -> Value {
    let router = dynarelay::http::router(model_state(
        shop(),
        store,
        dynarelay::pagination::PageLimits::default(),
        &test_ring(),
        dynarelay::http::HttpSettings::default(),
    ));
    post_graphql(&router, r#"{ user(userId: "u-1") { name } }"#, json!({})).await
}

/// Every app serving a model file holds its server's calls to the model's policy (see
/// `helpers::PolicyAudit`); this is the check that it can fail: held to the policy of another
/// table prefix, the shop's lookup is refused before it is sent, and remembered.
#[tokio::test]
async fn the_suites_policy_audit_refuses_a_call_the_policy_does_not_allow() {
    let app = crate::helpers::model_app("examples/shop/dynarelay.toml").await;
    let audit = PolicyAudit::new(shop(), "another_prefix_");
    let client = aws_sdk_dynamodb::Client::from_conf(
        app.client()
            .config()
            .to_builder()
            .interceptor(audit.clone())
            .build(),
    );
    let store =
        dynarelay::dynamo::Store::new(client, dynarelay::dynamo::Tables::new(shop(), &app.prefix));
    let response = look_up_a_user(&store).await;
    assert!(response.get("errors").is_some(), "{response}");
    let refused = audit.refused();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].starts_with("dynamodb:GetItem on arn:aws:dynamodb:*:*:table/")
            && refused[0].ends_with("Users"),
        "{refused:?}"
    );
}

/// The same check for servers that run as processes, whose DynamoDB calls go through
/// `FaultProxy::auditing`: held to the policy of another table prefix, the shop's lookup gets
/// `AccessDeniedException` from the proxy, and the refusal is remembered.
#[tokio::test]
async fn the_proxys_policy_audit_refuses_a_call_the_policy_does_not_allow() {
    let app = crate::helpers::model_app("examples/shop/dynarelay.toml").await;
    let proxy =
        crate::fault_proxy::FaultProxy::auditing(&crate::helpers::endpoint(), shop(), "another_")
            .await;
    let store = dynarelay::dynamo::Store::new(
        dynarelay::dynamo::client_for_local(&proxy.url()),
        dynarelay::dynamo::Tables::new(shop(), &app.prefix),
    );
    let response = look_up_a_user(&store).await;
    assert!(response.get("errors").is_some(), "{response}");
    proxy.assert_refused_only("dynamodb:GetItem on arn:aws:dynamodb:*:*:table/");
}

/// The same check for the servers tests build over a store of their own (`helpers::audited`,
/// under `model_state` and `Running::start`): the audited store keeps the client's own
/// interceptors (the call is counted) and refuses a call on a table the shop's policy does not
/// name, remembering it in the audit of the store's tables, which their owner checks.
#[tokio::test]
async fn the_audit_of_servers_built_over_a_store_refuses_a_call_the_policy_does_not_allow() {
    let prefix = crate::helpers::unique_prefix();
    let calls = crate::helpers::CallCounter::default();
    let local = dynarelay::dynamo::client_for_local(&crate::helpers::endpoint());
    let client = aws_sdk_dynamodb::Client::from_conf(
        local
            .config()
            .to_builder()
            .interceptor(calls.clone())
            .build(),
    );
    let store = crate::helpers::shop_store(client, &prefix).await;
    let served = crate::helpers::audited(shop(), &store);

    let allowed = look_up_a_user(&store).await;
    assert!(allowed.get("errors").is_none(), "{allowed}");
    let elsewhere = served
        .client()
        .get_item()
        .table_name(format!("{prefix}Elsewhere"))
        .key(
            "id",
            aws_sdk_dynamodb::types::AttributeValue::S("x".to_owned()),
        )
        .send()
        .await;
    assert!(elsewhere.is_err(), "{elsewhere:?}");
    assert_eq!(
        calls.snapshot().get("GetItem"),
        Some(&2),
        "{:?}",
        calls.snapshot()
    );
    let refused = PolicyAudit::of(shop(), &prefix).refused();
    assert_eq!(
        refused,
        [format!(
            "dynamodb:GetItem on arn:aws:dynamodb:*:*:table/{prefix}Elsewhere"
        )]
    );
}

/// The `(action, table[/index/name])` pairs `model`'s policy allows, named as
/// [`PolicyUses`] names the calls that used them.
fn allowances(model: &dynarelay::model::Model) -> BTreeSet<(String, String)> {
    // `serve`'s: the table check's `DescribeTable` besides everything a Lambda function's allows.
    let target = PolicyTarget {
        prefix: String::new(),
        region: "*".to_owned(),
        account: "*".to_owned(),
        check_tables: true,
        ..PolicyTarget::default()
    };
    allowed(&policy(model, &target))
        .into_iter()
        .map(|(action, arn)| {
            let resource = arn
                .strip_prefix("arn:aws:dynamodb:*:*:table/")
                .expect("a table's ARN");
            (action, resource.to_owned())
        })
        .collect()
}

/// For every example model, the `(action, table[/index/name])` pairs its policy allows that no
/// recorded call (`uses`, as [`PolicyUses::read`] gives them) used.
fn unused_allowances(
    uses: &BTreeMap<String, BTreeSet<(String, String)>>,
) -> BTreeMap<String, Vec<(String, String)>> {
    let none = BTreeSet::new();
    let mut unused = BTreeMap::new();
    for path in example_models() {
        let model = crate::helpers::load_model(&path);
        let used = uses.get(&path).unwrap_or(&none);
        let left: Vec<_> = allowances(model)
            .into_iter()
            .filter(|pair| !used.contains(pair))
            .collect();
        if !left.is_empty() {
            unused.insert(path, left);
        }
    }
    unused
}

/// Run by `scripts/test` after the whole suite, over the calls its policy audits wrote down
/// (`helpers::PolicyUses`): every action, on every table and index, that the policy of an
/// example allows was used by a call of one of that example's servers somewhere in the suite,
/// so no policy allows what its model cannot do. (That no server made a call its policy does
/// not allow, the audits show as the suite runs.)
#[test]
#[ignore = "scripts/test runs it after the whole suite, over the calls the suite wrote down"]
fn every_example_policy_allows_only_calls_the_suite_made() {
    let dir = std::env::var_os(POLICY_USES).unwrap_or_else(|| {
        panic!("{POLICY_USES} is not set: scripts/test (with no arguments) sets it and runs this")
    });
    let uses = PolicyUses::read(dir.as_ref());
    let unused = unused_allowances(&uses);
    assert!(
        unused.is_empty(),
        "the policies allow actions no call of the suite used, by example: {unused:#?}"
    );
}

/// The check above can fail: with the uses of every example but one of the shop's allowances,
/// that allowance is reported for the shop, and every allowance of the other examples.
#[test]
fn the_policy_coverage_check_reports_an_allowance_no_call_used() {
    let shop_path = "examples/shop/dynarelay.toml";
    let mut all = allowances(shop());
    let dropped = ("dynamodb:Scan".to_owned(), "Users".to_owned());
    assert!(all.remove(&dropped), "{all:?}");
    let uses = BTreeMap::from([(shop_path.to_owned(), all)]);

    let unused = unused_allowances(&uses);
    assert_eq!(unused.get(shop_path), Some(&vec![dropped]));
    assert_eq!(unused.len(), example_models().len(), "{unused:#?}");
}

/// A Lambda function with the table check off (its default) sends no `DescribeTable` and holds
/// no subscription: its policy (`--check-tables false`) is `serve`'s without `DescribeTable`
/// and the stream actions, and without nothing else.
#[test]
fn without_the_table_check_the_policy_drops_describe_table_and_nothing_else() {
    for path in example_models() {
        let model = crate::helpers::load_model(&path);
        let pairs = |check_tables| {
            allowed(&policy(
                model,
                &PolicyTarget {
                    prefix: "prod_".to_owned(),
                    region: "eu-west-1".to_owned(),
                    account: "123456789012".to_owned(),
                    check_tables,
                    ..PolicyTarget::default()
                },
            ))
        };
        let (checked, unchecked) = (pairs(true), pairs(false));
        let (streams, dropped): (Vec<_>, Vec<_>) = checked
            .difference(&unchecked)
            .partition(|(_, resource)| resource.ends_with("/stream/*"));
        assert_eq!(
            dropped.len(),
            model.tables.len(),
            "{path}: one DescribeTable a table: {dropped:?}"
        );
        assert!(
            dropped
                .iter()
                .all(|(action, _)| action == "dynamodb:DescribeTable"),
            "{path}: {dropped:?}"
        );
        // The three stream actions on the stream of each table a subscription can follow.
        let subscribed = model
            .tables
            .iter()
            .enumerate()
            .filter(|(t, table)| {
                table.stream == Some(dynarelay::model::StreamView::NewAndOldImages)
                    && model.entities.iter().any(|e| e.table == *t)
            })
            .count();
        assert_eq!(streams.len(), 3 * subscribed, "{path}: {streams:?}");
        assert!(unchecked.is_subset(&checked), "{path}");
        assert!(
            unchecked
                .iter()
                .all(|(action, _)| action != "dynamodb:DescribeTable"),
            "{path}: {unchecked:?}"
        );
    }
}

/// What carries changes gets the stream part alone, on the tables with a `stream`: the relay
/// reads each stream as `serve` does (the same actions `serve`'s policy gives its stream reader,
/// whose calls the suite audits), and keeps its leases in its own table, and the Lambda function given stream events gets what AWS
/// documents for its event source mapping (`ListStreams` on `*`, which IAM takes alone for it).
/// Both pass parliament.
#[test]
fn the_relays_policies_allow_reading_the_streams_and_nothing_else() {
    use dynarelay::policy::{Role, policy_for};
    let mut streamed = 0;
    for path in example_models() {
        let model = crate::helpers::load_model(&path);
        let target = PolicyTarget {
            prefix: "prod_".to_owned(),
            region: "eu-west-1".to_owned(),
            account: "123456789012".to_owned(),
            check_tables: true,
            ..PolicyTarget::default()
        };
        let arn = |t: usize| {
            format!(
                "arn:aws:dynamodb:eu-west-1:123456789012:table/prod_{}",
                model.tables[t].name
            )
        };
        let mut relay = BTreeSet::new();
        let mut function = BTreeSet::new();
        for t in model.streamed_tables() {
            streamed += 1;
            relay.insert(("dynamodb:DescribeTable".to_owned(), arn(t)));
            for action in [
                "DescribeStream",
                "GetShardIterator",
                "GetRecords",
                "ListStreams",
            ] {
                let pair = (format!("dynamodb:{action}"), format!("{}/stream/*", arn(t)));
                if action == "ListStreams" {
                    // Named by no resource: `*`, once.
                    function.insert((pair.0, "*".to_owned()));
                } else {
                    relay.insert(pair.clone());
                    function.insert(pair);
                }
            }
        }
        // The relay's leases, in a table of its own beside the model's.
        let mut leases = BTreeSet::new();
        if !relay.is_empty() {
            for action in dynarelay::policy::LEASE_ACTIONS {
                leases.insert((
                    format!("dynamodb:{action}"),
                    "arn:aws:dynamodb:eu-west-1:123456789012:table/prod_dynarelay-leases"
                        .to_owned(),
                ));
            }
        }
        let relay_policy = policy_for(model, &target, Role::Relay);
        let function_policy = policy_for(model, &target, Role::StreamFunction);
        assert_eq!(
            allowed(&relay_policy),
            relay.union(&leases).cloned().collect(),
            "{path}"
        );
        assert_eq!(allowed(&function_policy), function, "{path}");
        // Where subscriptions follow every streamed table, the relay's reading is `serve`'s.
        let follows_all = model.streamed_tables().all(|t| {
            model.tables[t].stream == Some(dynarelay::model::StreamView::NewAndOldImages)
                && model.entities.iter().any(|e| e.table == t)
        });
        if follows_all {
            let api = allowed(&policy(model, &target));
            assert!(relay.is_subset(&api), "{path}: {relay:?} not in {api:?}");
        }
        for document in [&relay_policy, &function_policy] {
            if !relay.is_empty() {
                let (passed, findings) = parliament(document);
                assert!(passed, "{path}: {findings}\n{document:#}");
            }
        }
    }
    assert!(
        streamed >= 3,
        "only {streamed} streamed tables among the examples"
    );
}

/// `dynarelay policy --for` prints the same documents; a model with no `stream` has no relay
/// policy, and says so.
#[test]
fn the_command_prints_the_relays_policies_and_refuses_a_model_without_streams() {
    use dynarelay::policy::{Role, policy_for};
    let shop = crate::helpers::load_model("examples/shop/dynarelay.toml");
    let target = PolicyTarget {
        prefix: String::new(),
        region: "*".to_owned(),
        account: "*".to_owned(),
        check_tables: true,
        ..PolicyTarget::default()
    };
    for (flag, role) in [
        ("relay", Role::Relay),
        ("stream-function", Role::StreamFunction),
    ] {
        let out = crate::helpers::run_succeeding(
            crate::helpers::dynarelay_command(&crate::helpers::endpoint())
                .args(["policy", "--for", flag]),
        );
        let printed: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(printed, policy_for(shop, &target, role), "{flag}");
    }
    let refused = crate::helpers::dynarelay_command(&crate::helpers::endpoint())
        .args([
            "policy",
            "--for",
            "relay",
            "--model",
            "examples/orders/dynarelay.toml",
        ])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("declares no table with a `stream`: there is nothing to relay"),
        "{stderr}"
    );
}
