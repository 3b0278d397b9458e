//! One request, one operation: which operation of a document runs is chosen once, by the GraphQL
//! spec's `GetOperation`, and the HTTP rules, null propagation and both executors follow that one
//! choice; mutations never run from a request a browser could forge; numbers are read as
//! DynamoDB reads them. Each case has a control: the same request that must work, working.

use aws_sdk_dynamodb::{error::ProvideErrorMetadata, types::AttributeValue};
use dynarelay::{http::HttpSettings, number::DynamoNumber};
use serde_json::{Value, json};

use crate::helpers::{
    Exchange, GQL, JSON, Running, TestApp, exchange, persisted, post, query_string, sha256_hex,
};

const CREATE_USER: &str = "createUser(input: { userId: $id, name: \"Mallory\", email: \"m@example.com\" }) { user { userId } }";

/// Whether the user `id` exists, read through the API.
async fn user_exists(app: &TestApp, id: &str) -> bool {
    let answer = app
        .graphql(
            "query($id: String!) { user(userId: $id) { userId } }",
            json!({ "id": id }),
        )
        .await;
    assert!(answer.get("errors").is_none(), "{answer}");
    !answer["data"]["user"].is_null()
}

/// GET parameters: `query`, `variables`, and `operationName` and `extensions` when given.
fn get_params(
    query: Option<&str>,
    variables: &Value,
    name: Option<&str>,
    extensions: Option<&Value>,
) -> String {
    let mut params = vec![query_string("variables", &variables.to_string())];
    if let Some(query) = query {
        params.push(query_string("query", query));
    }
    if let Some(name) = name {
        params.push(query_string("operationName", name));
    }
    if let Some(extensions) = extensions {
        params.push(query_string("extensions", &extensions.to_string()));
    }
    params.join("&")
}

/// Every form of mutation over GET gets 405 and writes nothing: anonymous, named without
/// `operationName` (async-graphql keeps a lone named operation apart from an anonymous one, so
/// this form once ran), named with it, chosen from a document that also holds a query, and
/// persisted (by hash alone); each under both media types, and again once the document is
/// cached. Control: each sent as a POST runs. Seen failing: the named mutation without
/// `operationName` answered 200 and created its user.
#[tokio::test]
async fn a_get_never_runs_a_mutation_in_any_form() {
    let app = TestApp::spawn().await;
    let server = Running::start(app.store.clone(), HttpSettings::default()).await;
    let http = reqwest::Client::new();
    let anonymous = format!("mutation($id: String!) {{ {CREATE_USER} }}");
    let named = format!("mutation M($id: String!) {{ {CREATE_USER} }}");
    let mixed = format!("query Q {{ __typename }} mutation M($id: String!) {{ {CREATE_USER} }}");
    let forms: [(&str, &str, Option<&str>, bool); 5] = [
        ("anonymous", &anonymous, None, false),
        ("named, no operationName", &named, None, false),
        ("named, with operationName", &named, Some("M"), false),
        (
            "chosen from a query and a mutation",
            &mixed,
            Some("M"),
            false,
        ),
        ("persisted, by hash alone", &named, None, true),
    ];
    for (i, (form, query, name, by_hash)) in forms.into_iter().enumerate() {
        let extensions = by_hash.then(|| persisted(&sha256_hex(query)));
        // Control, and it registers the document (and its hash) for the rounds below.
        let posted = format!("post-{i}");
        let body = json!({
            "query": query,
            "operationName": name,
            "variables": { "id": posted },
            "extensions": extensions,
        });
        let answer = exchange(&http, &server, &post("control", GQL, body)).await;
        assert_eq!(
            answer["data"]["createUser"]["user"]["userId"], posted,
            "{form}: {answer}"
        );
        assert!(user_exists(&app, &posted).await, "{form}");
        for (round, accept) in [GQL, JSON, "*/*"].into_iter().enumerate() {
            let id = format!("get-{i}-{round}");
            let text = (!by_hash).then_some(query);
            let params = get_params(text, &json!({ "id": id }), name, extensions.as_ref());
            let answer = exchange(
                &http,
                &server,
                &Exchange {
                    case: form,
                    method: "GET",
                    accept: Some(accept),
                    content_type: None,
                    body: params,
                    status: 405,
                    media: if accept == GQL { GQL } else { JSON },
                    data: false,
                    code: Some("METHOD_NOT_ALLOWED"),
                },
            )
            .await;
            assert!(answer["errors"].is_array(), "{form}: {answer}");
            assert!(!user_exists(&app, &id).await, "{form} under {accept}: ran");
        }
    }
}

/// A document's lone named operation, sent without `operationName`, is the same request as its
/// anonymous twin: a failed non-null field nulls its nearest nullable parent (`user`), on the
/// first request (async-graphql's executor) and the next (the direct executor). Control: with
/// no bad cursor every form answers the user. Seen failing: `query Q` answered
/// `{"user": {"name": …}}`, leaving the failed non-null `purchases` out.
#[tokio::test]
async fn a_named_operation_propagates_nulls_as_an_anonymous_one_does() {
    let app = TestApp::spawn().await;
    app.put_user("named-op").await;
    app.put_purchases("named-op", &[1_700_000_000_001]).await;
    let server = Running::start(app.store.clone(), HttpSettings::default()).await;
    let http = reqwest::Client::new();
    let selection = "user(userId: \"named-op\") { name purchases(first: 1, after: $after) { nodes { amount } } }";
    let anonymous = format!("query($after: String) {{ {selection} }}");
    let named = format!("query Q($after: String) {{ {selection} }}");
    let two = format!("query Q($after: String) {{ {selection} }} query R {{ __typename }}");
    let forms: [(&str, &str, Option<&str>); 4] = [
        ("anonymous", &anonymous, None),
        ("named, no operationName", &named, None),
        ("named, with operationName", &named, Some("Q")),
        ("one of two, by name", &two, Some("Q")),
    ];
    for (form, query, name) in forms {
        for round in ["first", "again"] {
            let ok =
                json!({ "query": query, "operationName": name, "variables": { "after": null } });
            let answer = exchange(&http, &server, &post(form, GQL, ok)).await;
            assert_eq!(
                answer["data"]["user"]["name"], "User named-op",
                "{form}, {round}"
            );
            let bad = json!({ "query": query, "operationName": name, "variables": { "after": "garbage" } });
            let failing = Exchange {
                code: Some("BAD_USER_INPUT"),
                ..post(form, GQL, bad)
            };
            let answer = exchange(&http, &server, &failing).await;
            assert_eq!(
                answer["data"],
                json!({ "user": null }),
                "{form}, {round}: {answer}"
            );
            let errors = answer["errors"].as_array().unwrap();
            assert_eq!(errors.len(), 1, "{form}, {round}: {answer}");
            assert_eq!(errors[0]["path"], json!(["user", "purchases"]), "{form}");
            assert_eq!(errors[0]["extensions"]["code"], "BAD_USER_INPUT", "{form}");
        }
    }
}

/// No operation to run is a request error, in graphql-js's words: several operations and no
/// name, a name the document does not have, a name for an anonymous operation; 400 without
/// `data` under `application/graphql-response+json`, 200 without `data` under
/// `application/json`, over POST and GET. Control: the right name runs its operation.
#[tokio::test]
async fn a_request_that_chooses_no_operation_is_a_request_error() {
    let app = TestApp::spawn().await;
    let server = Running::start(app.store.clone(), HttpSettings::default()).await;
    let http = reqwest::Client::new();
    let two = "query A { __typename } query B { __typename }";
    let cases = [
        (
            "several, no name",
            two,
            None,
            "Must provide operation name if query contains multiple operations.",
        ),
        (
            "several, an unknown name",
            two,
            Some("C"),
            "Unknown operation named \"C\".",
        ),
        (
            "anonymous, a name",
            "{ __typename }",
            Some("A"),
            "Unknown operation named \"A\".",
        ),
        (
            "one named, another name",
            "query A { __typename }",
            Some("B"),
            "Unknown operation named \"B\".",
        ),
    ];
    for (case, query, name, message) in cases {
        for (accept, status) in [(GQL, 400), (JSON, 200)] {
            for method in ["POST", "GET"] {
                let e = Exchange {
                    case,
                    method,
                    status,
                    data: false,
                    code: Some("BAD_USER_INPUT"),
                    content_type: (method == "POST").then_some("application/json"),
                    body: if method == "POST" {
                        json!({ "query": query, "operationName": name }).to_string()
                    } else {
                        get_params(Some(query), &json!({}), name, None)
                    },
                    ..post(case, accept, json!({}))
                };
                let answer = exchange(&http, &server, &e).await;
                assert_eq!(answer["errors"][0]["message"], message, "{case}");
            }
        }
    }
    // Control.
    let answer = exchange(
        &http,
        &server,
        &post(
            "the right name",
            GQL,
            json!({ "query": two, "operationName": "B" }),
        ),
    )
    .await;
    assert_eq!(answer["data"], json!({ "__typename": "Query" }));
}

/// With `require_preflight` (for deployments that add cookies), a GET that a page could send
/// cross-site without a CORS preflight is refused before anything runs; the headers Apollo's
/// CSRF prevention names, or a non-simple content type, let it through. POSTs whose content type
/// a form can send never run a mutation, with or without the setting. Controls: the same GET
/// without the setting, or with the header, answers; a JSON POST runs the mutation.
#[tokio::test]
async fn requests_a_browser_could_forge_never_run_mutations() {
    let app = TestApp::spawn().await;
    let guarded = Running::start(
        app.store.clone(),
        HttpSettings {
            require_preflight: true,
            ..HttpSettings::default()
        },
    )
    .await;
    let open = Running::start(app.store.clone(), HttpSettings::default()).await;
    let http = reqwest::Client::new();
    let query = get_params(Some("{ __typename }"), &json!({}), None, None);
    let get = |server: &Running, header: Option<(&'static str, &'static str)>| {
        let mut request = http.get(format!("{}?{query}", server.url("/graphql")));
        if let Some((name, value)) = header {
            request = request.header(name, value);
        }
        request.send()
    };
    let refused = get(&guarded, None).await.unwrap();
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["errors"][0]["extensions"]["code"], "CSRF_PREVENTED");
    assert!(body.get("data").is_none(), "{body}");
    for header in [
        ("apollo-require-preflight", "true"),
        ("x-apollo-operation-name", "Anything"),
        ("content-type", "application/json"),
    ] {
        let answered = get(&guarded, Some(header)).await.unwrap();
        assert_eq!(answered.status(), 200, "{header:?}");
        let body: Value = answered.json().await.unwrap();
        assert_eq!(body["data"]["__typename"], "Query", "{header:?}");
    }
    for header in [
        ("x-apollo-operation-name", ""),
        ("content-type", "text/plain"),
    ] {
        let refused = get(&guarded, Some(header)).await.unwrap();
        assert_eq!(
            refused.status(),
            400,
            "{header:?} does not need a preflight"
        );
    }
    // Control: without the setting the plain GET answers.
    let answered = get(&open, None).await.unwrap();
    assert_eq!(answered.status(), 200);

    // The bodies a form or a no-preflight fetch can send: never executed.
    let mutation = json!({
        "query": format!("mutation($id: String!) {{ {CREATE_USER} }}"),
        "variables": { "id": "forged" },
    })
    .to_string();
    for server in [&guarded, &open] {
        for content_type in [
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
        ] {
            let response = http
                .post(server.url("/graphql"))
                .header("content-type", content_type)
                .body(mutation.clone())
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 415, "{content_type}");
        }
    }
    assert!(!user_exists(&app, "forged").await, "a forged POST ran");
    // Control: the same body as JSON runs.
    let response = http
        .post(open.url("/graphql"))
        .header("content-type", "application/json")
        .body(mutation)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(user_exists(&app, "forged").await);
}

/// `Decimal` arguments take every form DynamoDB reads as a number and mean the number, not the
/// text: `minAmount: "2.5E1"` filters as `"25"` does, and a price sent as `"1.999E1"` is stored
/// as DynamoDB stores `19.99`. What is not a number is refused before any read, with the rule.
/// Control: the plain forms.
#[tokio::test]
async fn decimals_take_every_form_dynamodb_reads_as_a_number() {
    let app = TestApp::spawn().await;
    app.put_user("numbers").await;
    // Amounts 10.5 and 30.5 (`put_purchases` uses the milliseconds).
    app.put_purchases("numbers", &[1_700_000_000_010, 1_700_000_000_030])
        .await;
    let query = "query($min: Decimal) { user(userId: \"numbers\") { purchases(minAmount: $min) { nodes { amount } } } }";
    let amounts = |answer: &Value| answer["data"]["user"]["purchases"]["nodes"].clone();
    let plain = app.graphql(query, json!({ "min": "25" })).await;
    assert_eq!(amounts(&plain), json!([{ "amount": "30.5" }]), "{plain}");
    for form in ["2.5E1", "2.5e+1", "+25", "025.000", "250E-1"] {
        let answer = app.graphql(query, json!({ "min": form })).await;
        assert_eq!(answer, plain, "{form}");
    }
    for bad in [
        "2.5E",
        "1E+126",
        "twenty",
        "123456789012345678901234567890123456789",
    ] {
        let answer = app.graphql(query, json!({ "min": bad })).await;
        assert!(answer.get("data").is_none(), "{bad}: {answer}");
        let message = answer["errors"][0]["message"].as_str().unwrap();
        assert!(
            message.contains("expected type \"Decimal\"")
                && message.contains("38 significant digits")
                && message.contains("1E+126"),
            "{bad}: {message}"
        );
    }

    let created = app
        .graphql(
            "mutation { createProduct(input: { sku: \"SKU-E\", name: \"E\", category: \"c\", price: \"1.999E1\" }) { product { price } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        created["data"]["createProduct"]["product"]["price"], "19.99",
        "{created}"
    );
    let stored = app
        .client()
        .get_item()
        .table_name(&app.tables().products)
        .key("sku", AttributeValue::S("SKU-E".to_owned()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        stored.item().unwrap()["price"],
        AttributeValue::N("19.99".to_owned())
    );
}

/// Inputs in every form DynamoDB accepts, with the number DynamoDB stores for each.
const NORMALISED: &[(&str, &str)] = &[
    ("2.5E1", "25"),
    ("2.5e1", "25"),
    ("+5", "5"),
    ("007", "7"),
    ("0.50", "0.5"),
    (".5", "0.5"),
    ("5.", "5"),
    ("-0", "0"),
    ("-0.00", "0"),
    ("0E+999", "0"),
    ("1e0", "1"),
    ("1E+2", "100"),
    ("1e-2", "0.01"),
    ("1.e2", "100"),
    ("-.5", "-0.5"),
    ("00.1000", "0.1"),
    ("100E-5", "0.001"),
    ("-19.990", "-19.99"),
    ("1E+0125", ""),
    ("1E-130", ""),
    ("1.5E-129", ""),
    ("9.9999999999999999999999999999999999999E+125", ""),
    ("-9.9999999999999999999999999999999999999E+125", ""),
    ("12345678901234567890123456789012345678", ""),
    ("1234567890123456789012345678901234567800", ""),
    ("0.000123456789012345678901234567890123456780", ""),
];

/// Inputs DynamoDB refuses as numbers.
const REFUSED: &[&str] = &[
    "-",
    "+",
    ".",
    "--1",
    "+-1",
    " 5",
    "5 ",
    "0x10",
    "NaN",
    "Infinity",
    "1_0",
    "1,5",
    "e5",
    "1e",
    "1e+",
    "1e2.5",
    "1.2.3",
    "1E-131",
    "1E+126",
    "1e126",
    "1E99999999999",
    "123456789012345678901234567890123456789",
    "1.23456789012345678901234567890123456789E5",
];

/// `DynamoNumber::normalize` against DynamoDB Local itself: each number DynamoDB accepts is
/// stored, read back, and must equal what dynarelay makes of the same text (and, where the
/// table gives one, the expected text); each it refuses (a `ValidationException`) dynarelay
/// refuses too. One difference, kept on purpose: DynamoDB Local (Java's `BigDecimal`) also
/// reads digits of other scripts (`"١٢"` is stored as 12); dynarelay takes ASCII digits only,
/// as DynamoDB's documentation describes numbers.
#[tokio::test]
async fn numbers_are_read_and_normalised_as_dynamodb_does() {
    let app = TestApp::spawn().await;
    let table = app.tables().users.clone();
    for (i, (input, expected)) in NORMALISED.iter().enumerate() {
        let key = AttributeValue::S(format!("number-{i}"));
        app.client()
            .put_item()
            .table_name(&table)
            .item("userId", key.clone())
            .item("n", AttributeValue::N((*input).to_owned()))
            .send()
            .await
            .unwrap_or_else(|err| panic!("{input}: DynamoDB refused it: {err:?}"));
        let read = app
            .client()
            .get_item()
            .table_name(&table)
            .key("userId", key)
            .consistent_read(true)
            .send()
            .await
            .unwrap();
        let stored = read.item().unwrap()["n"].as_n().unwrap().clone();
        if !expected.is_empty() {
            assert_eq!(&stored, expected, "{input}: the table's expectation");
        }
        assert_eq!(
            DynamoNumber::normalize(input).map(DynamoNumber::into_string),
            Ok(stored),
            "{input}"
        );
    }
    for input in REFUSED {
        let refused = app
            .client()
            .put_item()
            .table_name(&table)
            .item("userId", AttributeValue::S("refused".to_owned()))
            .item("n", AttributeValue::N((*input).to_owned()))
            .send()
            .await
            .expect_err(input);
        assert_eq!(refused.code(), Some("ValidationException"), "{input}");
        assert!(DynamoNumber::normalize(input).is_err(), "{input}");
    }
}
