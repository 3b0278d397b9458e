//! The deployment recipes under `deploy/`, checked offline (no AWS, no container runtime):
//!
//! - the AWS SAM template (`deploy/lambda/template.json`) passes cfn-lint, runs the packaged
//!   `bootstrap` on `provided.al2023`, and grants exactly `dynarelay policy`'s policy for the
//!   model it names;
//! - `scripts/package-lambda` packages a function and writes the template for it, with the
//!   policy for its model and tables: started as Lambda starts it under cargo-lambda's emulator,
//!   with the template's environment, the function serves its model (a mutation, then a page);
//!   with `--check-tables true`, the template turns the table check on and grants what it sends;
//! - the container recipe (`deploy/container/Dockerfile`) passes hadolint, copies the binary
//!   cargo built and runs it as a user without privileges.
//!
//! Each linter also runs on a broken copy, which it must reject.

use std::{path::Path, process::Command};

use dynarelay::policy::{PolicyTarget, policy};
use serde_json::{Value, json};

use crate::{
    fault_proxy::FaultProxy,
    helpers::{
        LambdaFunction, endpoint, graphql_at, lint, load_model, model_app, package_lambda, post_at,
        tool,
    },
};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const TEMPLATE: &str = "deploy/lambda/template.json";
const DOCKERFILE: &str = "deploy/container/Dockerfile";
const MODEL: &str = "examples/orders/dynarelay.toml";

/// Runs the linter `name` with `args` on `file`.
fn lint_file(name: &str, args: &[&str], file: &Path) -> (bool, String) {
    let mut all: Vec<&std::ffi::OsStr> = args.iter().map(|arg| arg.as_ref()).collect();
    all.push(file.as_os_str());
    lint(name, &all)
}

/// A file in a directory of its own under the system's temporary directory.
fn scratch(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "dynarelay-deploy-{}",
        crate::helpers::unique_prefix()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn the_sam_template_lints_clean_and_grants_the_models_policy() {
    let path = Path::new(ROOT).join(TEMPLATE);
    let template: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let function = &template["Resources"]["Api"]["Properties"];
    assert_eq!(function["Runtime"], "provided.al2023");
    assert_eq!(function["Handler"], "bootstrap");
    assert_eq!(
        function["Environment"]["Variables"]["DYNARELAY_MODEL"],
        "/var/task/dynarelay.toml"
    );
    // `scripts/package-lambda` gives it the tables' prefix.
    assert_eq!(
        function["Environment"]["Variables"]["DYNARELAY_TABLE_PREFIX"],
        ""
    );
    // The policy is `dynarelay policy --model examples/orders/dynarelay.toml --check-tables
    // false`'s, whole.
    let granted = &function["Policies"][0];
    let want = policy(
        load_model(MODEL),
        &PolicyTarget {
            prefix: String::new(),
            region: "*".to_owned(),
            account: "*".to_owned(),
            // The function runs with the table check off, its default.
            check_tables: false,
            ..PolicyTarget::default()
        },
    );
    assert_eq!(
        granted, &want,
        "regenerate the template's policy for {MODEL}"
    );
    assert_eq!(function["Policies"].as_array().unwrap().len(), 1);

    let (passed, printed) = lint_file("cfn-lint", &[], &path);
    assert!(passed, "{printed}");
    let mut broken = template.clone();
    broken["Resources"]["Api"]["Properties"]["Timeoutt"] = json!(30);
    let (passed, printed) = lint_file(
        "cfn-lint",
        &[],
        &scratch("template.json", &broken.to_string()),
    );
    assert!(
        !passed && printed.contains("Timeoutt"),
        "control: {printed}"
    );
}

#[test]
fn the_container_recipe_lints_clean_and_runs_the_built_binary_without_privileges() {
    let path = Path::new(ROOT).join(DOCKERFILE);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("COPY --chmod=0555 target/release/dynarelay /usr/local/bin/dynarelay"),
        "{text}"
    );
    assert!(
        text.lines().all(|line| !line.starts_with("RUN")),
        "the image builds and installs nothing itself"
    );
    let user = text
        .lines()
        .rfind(|line| line.starts_with("USER "))
        .expect("a USER line");
    assert_eq!(user, "USER 65532:65532");
    // The build context keeps nothing but the binary and model files.
    let ignore =
        std::fs::read_to_string(Path::new(ROOT).join("deploy/container/Dockerfile.dockerignore"))
            .unwrap();
    let rules: Vec<&str> = ignore
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .collect();
    assert_eq!(rules, ["*", "!target/release/dynarelay", "!**/*.toml"]);

    let (passed, printed) = lint_file("hadolint", &["--no-color"], &path);
    assert!(passed, "{printed}");
    let (passed, printed) = lint_file(
        "hadolint",
        &["--no-color"],
        &scratch("Dockerfile", "FROM debian\nRUN apt-get install curl\n"),
    );
    assert!(!passed && printed.contains("DL3006"), "control: {printed}");
}

/// Runs `scripts/package-lambda` on [`MODEL`] for the tables under `prefix`, in `region` and
/// `account`, with `extra` arguments, into a new directory; the directory, once it succeeded.
fn package(prefix: &str, (region, account): (&str, &str), extra: &[&str]) -> std::path::PathBuf {
    let out = scratch("placeholder", "").with_file_name("build");
    let mut args = vec!["--model", MODEL, "--table-prefix", prefix];
    args.extend(["--region", region, "--account", account]);
    args.extend(extra);
    let packaged = package_lambda(&args, &out);
    assert!(
        packaged.status.success(),
        "{}",
        String::from_utf8_lossy(&packaged.stderr)
    );
    for file in [
        "function/bootstrap",
        "function/dynarelay.toml",
        "template.json",
    ] {
        assert!(out.join(file).is_file(), "{file} is not in the package");
    }
    out
}

/// The template `scripts/package-lambda` should write for [`MODEL`]: deploy/lambda/template.json
/// with the policy for the model's tables under `prefix` (with `DescribeTable` when
/// `check_tables`), the prefix in the function's environment and, when `check_tables`,
/// `DYNARELAY_CHECK_TABLES=true`; nothing else changed.
fn packaged_template(prefix: &str, (region, account): (&str, &str), check_tables: bool) -> Value {
    let mut want: Value =
        serde_json::from_str(&std::fs::read_to_string(Path::new(ROOT).join(TEMPLATE)).unwrap())
            .unwrap();
    let function = &mut want["Resources"]["Api"]["Properties"];
    function["Policies"] = json!([policy(
        load_model(MODEL),
        &PolicyTarget {
            prefix: prefix.to_owned(),
            region: region.to_owned(),
            account: account.to_owned(),
            check_tables,
            ..PolicyTarget::default()
        },
    )]);
    let variables = &mut function["Environment"]["Variables"];
    variables["DYNARELAY_TABLE_PREFIX"] = json!(prefix);
    if check_tables {
        variables["DYNARELAY_CHECK_TABLES"] = json!("true");
    }
    want
}

/// The template a package holds.
fn written_template(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("template.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packaged_function_serves_its_model_as_lambda_runs_it() {
    let app = model_app(MODEL).await;
    let place = ("eu-west-1", "123456789012");
    let out = package(&app.prefix, place, &[]);
    // The table check is off unless asked for: the policy holds no `DescribeTable`.
    assert_eq!(
        written_template(&out),
        packaged_template(&app.prefix, place, false)
    );
    let (passed, printed) = lint_file("cfn-lint", &[], &out.join("template.json"));
    assert!(passed, "{printed}");

    let dynamodb = FaultProxy::auditing_lambda(&endpoint(), load_model(MODEL), &app.prefix).await;
    let function = LambdaFunction::start_packaged(&dynamodb.url(), &out);
    let http = reqwest::Client::new();
    let url = function.url("/graphql");
    for (date, total) in [("2026-05-01", "42.50"), ("2026-05-02", "7")] {
        let create = format!(
            r#"mutation {{ createOrder(input: {{ customerId: "c-1", orderDate: "{date}T10:00:00.000Z", total: "{total}", skus: ["A"] }}) {{ order {{ total }} }} }}"#
        );
        let created = graphql_at(&http, &url, &create, json!({})).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    let page = graphql_at(
        &http,
        &url,
        r#"{ ordersOfCustomer(customerId: "c-1", first: 1) { nodes { total } pageInfo { hasNextPage } } }"#,
        json!({}),
    )
    .await;
    assert_eq!(
        page["data"]["ordersOfCustomer"],
        json!({ "nodes": [{ "total": "7" }], "pageInfo": { "hasNextPage": true } }),
        "{page}"
    );
    assert_eq!(dynamodb.refused(), Vec::<String>::new());
    drop(function);

    // The cursor keys, which the template takes from Secrets Manager, must be given to run it.
    let unkeyed = Command::new(Path::new(ROOT).join("scripts/run-lambda"))
        .arg("--package")
        .arg(&out)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CARGO_LAMBDA", tool("cargo-lambda"))
        .output()
        .unwrap();
    assert_eq!(unkeyed.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&unkeyed.stderr),
        "the template gives DYNARELAY_CURSOR_KEYS by a reference (Secrets Manager, say): set it \
         in this shell or pass --env DYNARELAY_CURSOR_KEYS=...\n"
    );

    // A model that does not load is not packaged.
    let bad = scratch("bad.toml", "[tables.Orders]\npartition_key = 3\n");
    let refused = package_lambda(
        &["--model", bad.to_str().unwrap()],
        &bad.with_file_name("package"),
    );
    assert!(!refused.status.success());
    assert!(!bad.with_file_name("package").exists());
}

/// `scripts/package-lambda --operations FILE --trusted-documents enforce`: the manifest goes into
/// the function and its template names it, and the packaged function, run as Lambda runs it,
/// answers the listed operation by its id and refuses another document; a manifest that does
/// not validate against the model is not packaged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_packaged_with_its_operation_manifest_enforces_it() {
    let app = model_app(MODEL).await;
    let listed = r#"query Orders($c: ID!) { ordersOfCustomer(customerId: $c, first: 5) { nodes { total } } }"#;
    let manifest = scratch(
        "operations.json",
        &json!({ "orders-of-customer": listed }).to_string(),
    );
    let place = ("eu-west-1", "123456789012");
    let out = package(
        &app.prefix,
        place,
        &[
            "--operations",
            manifest.to_str().unwrap(),
            "--trusted-documents",
            "enforce",
        ],
    );
    assert!(out.join("function/operations/1.json").is_file());
    let mut want = packaged_template(&app.prefix, place, false);
    let variables = &mut want["Resources"]["Api"]["Properties"]["Environment"]["Variables"];
    variables["DYNARELAY_OPERATIONS"] = json!("/var/task/operations/1.json");
    variables["DYNARELAY_TRUSTED_DOCUMENTS"] = json!("enforce");
    assert_eq!(written_template(&out), want);

    let dynamodb = FaultProxy::auditing_lambda(&endpoint(), load_model(MODEL), &app.prefix).await;
    let function = LambdaFunction::start_packaged(&dynamodb.url(), &out);
    let http = reqwest::Client::new();
    let url = function.url("/graphql");
    let by_id = post_at(
        &http,
        &url,
        &json!({ "doc_id": "orders-of-customer", "variables": { "c": "c-9" } }),
    )
    .await;
    assert_eq!(
        by_id["data"]["ordersOfCustomer"]["nodes"],
        json!([]),
        "{by_id}"
    );
    let other = graphql_at(
        &http,
        &url,
        r#"{ ordersOfCustomer(customerId: "c-9") { nodes { total } } }"#,
        json!({}),
    )
    .await;
    assert_eq!(
        other["errors"][0]["extensions"]["code"], "PERSISTED_QUERY_NOT_IN_LIST",
        "{other}"
    );
    drop(function);

    // A manifest whose operation the model's schema does not have is refused, and nothing is
    // written.
    let broken = scratch("broken.json", r#"{ "x": "{ nope }" }"#);
    let refused_out = broken.with_file_name("package");
    let refused = package_lambda(
        &["--model", MODEL, "--operations", broken.to_str().unwrap()],
        &refused_out,
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("operation \"x\""),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(!refused_out.exists());
}

/// `scripts/package-lambda --check-tables true`: the template turns the function's table check on
/// and its policy grants the `DescribeTable` that check sends. Held to that policy, the function
/// asks DynamoDB on `/ready` (a call reaches the proxy, none is refused) and answers ready; the
/// control, the same package held to the policy without `DescribeTable`, is refused and answers
/// unavailable, so the check did run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_packaged_with_the_table_check_on_is_granted_the_check() {
    let app = model_app(MODEL).await;
    let place = ("eu-west-1", "123456789012");
    let out = package(&app.prefix, place, &["--check-tables", "true"]);
    let written = written_template(&out);
    assert_eq!(written, packaged_template(&app.prefix, place, true));
    let (passed, printed) = lint_file("cfn-lint", &[], &out.join("template.json"));
    assert!(passed, "{printed}");

    let ready = |proxy: &FaultProxy| {
        let function = LambdaFunction::start_packaged(&proxy.url(), &out);
        async move {
            let response = reqwest::get(function.url("/ready")).await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap())
        }
    };
    let granted = FaultProxy::auditing(&endpoint(), load_model(MODEL), &app.prefix).await;
    assert_eq!(ready(&granted).await, (200, json!({ "status": "ready" })));
    assert!(granted.counts().received > 0, "the check asked DynamoDB");
    assert_eq!(granted.refused(), Vec::<String>::new());

    let without = FaultProxy::auditing_lambda(&endpoint(), load_model(MODEL), &app.prefix).await;
    assert_eq!(
        ready(&without).await,
        (503, json!({ "status": "unavailable" }))
    );
    without.assert_refused_only("dynamodb:DescribeTable ");

    // Anything but `true` or `false` is refused, and nothing is written.
    let out = scratch("placeholder", "").with_file_name("refused");
    let refused = package_lambda(&["--model", MODEL, "--check-tables", "yes"], &out);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--check-tables takes true or false"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(!out.exists());
}

/// The stream function's template (`deploy/lambda/changes.json`) passes cfn-lint with its
/// language extensions (one event source mapping per stream ARN given), and grants exactly
/// `dynarelay policy --for stream-function`'s policy for the model it names; `scripts/package-lambda`
/// writes it, with the model's prefix and policy, for a model with a stream, and not for one
/// without.
#[test]
fn the_stream_functions_template_lints_clean_and_grants_the_stream_policy() {
    use dynarelay::policy::{Role, policy_for};
    const STREAMED: &str = "examples/shop/dynarelay.toml";
    let target = |prefix: &str| PolicyTarget {
        prefix: prefix.to_owned(),
        region: "*".to_owned(),
        account: "*".to_owned(),
        check_tables: false,
        ..PolicyTarget::default()
    };
    let path = Path::new(ROOT).join("deploy/lambda/changes.json");
    let template: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let function = &template["Resources"]["Changes"]["Properties"];
    let variables = &function["Environment"]["Variables"];
    assert_eq!(variables["DYNARELAY_LAMBDA_COMMAND"], "lambda-relay");
    assert_eq!(variables["DYNARELAY_MODEL"], "/var/task/dynarelay.toml");
    assert_eq!(
        variables["DYNARELAY_REDIS_URL"],
        json!({ "Ref": "RedisUrl" })
    );
    assert_eq!(
        function["Policies"],
        json!([policy_for(
            load_model(STREAMED),
            &target(""),
            Role::StreamFunction
        )]),
        "regenerate the stream function's policy for {STREAMED}"
    );
    // Each mapping reports partial batch failures, and sends what never goes through to a queue.
    let mapping = &template["Resources"]["Fn::ForEach::Streams"][2]["Mapping&{Stream}"];
    assert_eq!(
        mapping["Properties"]["FunctionResponseTypes"],
        json!(["ReportBatchItemFailures"])
    );
    assert_eq!(
        mapping["Properties"]["DestinationConfig"]["OnFailure"]["Destination"],
        json!({ "Fn::GetAtt": ["Failed", "Arn"] })
    );
    let (passed, printed) = lint_file("cfn-lint", &[], &path);
    assert!(passed, "{printed}");
    let mut broken = template.clone();
    broken["Resources"]["Fn::ForEach::Streams"][2]["Mapping&{Stream}"]["Properties"]["StartingPositionn"] =
        json!("LATEST");
    let (passed, printed) = lint_file(
        "cfn-lint",
        &[],
        &scratch("changes.json", &broken.to_string()),
    );
    assert!(
        !passed && printed.contains("StartingPositionn"),
        "control: {printed}"
    );

    // Packaged for a prefix: the same template with the prefix and its policy.
    let out = scratch("placeholder", "").with_file_name("build");
    let packaged = package_lambda(&["--model", STREAMED, "--table-prefix", "prod_"], &out);
    assert!(
        packaged.status.success(),
        "{}",
        String::from_utf8_lossy(&packaged.stderr)
    );
    let mut want = template.clone();
    let function = &mut want["Resources"]["Changes"]["Properties"];
    function["Environment"]["Variables"]["DYNARELAY_TABLE_PREFIX"] = json!("prod_");
    function["Policies"] = json!([policy_for(
        load_model(STREAMED),
        &target("prod_"),
        Role::StreamFunction
    )]);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("changes.json")).unwrap()).unwrap();
    assert_eq!(written, want);
    let (passed, printed) = lint_file("cfn-lint", &[], &out.join("changes.json"));
    assert!(passed, "{printed}");
    // A model without a stream gets no stream function (and a stale one is removed).
    let packaged = package_lambda(&["--model", MODEL], &out);
    assert!(packaged.status.success());
    assert!(!out.join("changes.json").exists());
}
