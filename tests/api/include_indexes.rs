//! A connection over an index that projects a few attributes (AWS's payments design: payments
//! due by date through `GSI1`, an INCLUDE index): its items hold only the keys and the included
//! attributes, and the fields whose values the key templates give back are read from the keys
//! the index holds, as they are from the table's. Fields the index holds in no way are refused
//! where the connection is declared; `check` against the live index does not count the keys a
//! model lists among the included attributes as missing.

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::Item;
use serde_json::{Value, json};

use crate::helpers::{
    check_offline, dynarelay_command, endpoint, merge, model_app_from, model_file, put_plain,
    query_partition, walk_matches,
};

/// Payments, each filed under its account and subscription, and under its due date in `GSI1`,
/// which holds the keys and `amount` only (the model lists the table's keys too, as a design
/// document does).
const MODEL: &str = r#"version = 1

[tables.Payments]
partition_key = "PK"
sort_key = "SK"
attributes = { PK = "S", SK = "S", GSI1PK = "S", GSI1SK = "S" }
indexes.GSI1 = { partition_key = "GSI1PK", sort_key = "GSI1SK", projection = ["PK", "SK", "amount"] }

[entities.Payment]
table = "Payments"
keys = { PK = "ACC#{accountId}", SK = "SUB#{subId}", GSI1PK = "DUE#{dueDate}", GSI1SK = "ACC#{accountId}#SUB#{subId}" }
escape_keys = false
fields.accountId = { type = "String!" }
fields.subId = { type = "String!" }
fields.dueDate = { type = "String!" }
fields.amount = { type = "Decimal!" }

[connections.due]
entity = "Payment"
index = "GSI1"
partition = { argument = "dueDate" }
"#;

/// A payment as AWS's design writes it: its keys and its attributes, the facets in the keys only.
fn payment(account: &str, sub: &str, due: &str, amount: &str) -> Item {
    let s = |text: String| AttributeValue::S(text);
    Item::from([
        ("PK".to_owned(), s(format!("ACC#{account}"))),
        ("SK".to_owned(), s(format!("SUB#{sub}"))),
        ("GSI1PK".to_owned(), s(format!("DUE#{due}"))),
        ("GSI1SK".to_owned(), s(format!("ACC#{account}#SUB#{sub}"))),
        ("amount".to_owned(), AttributeValue::N(amount.to_owned())),
        ("memo".to_owned(), s(format!("memo of {sub}"))),
    ])
}

#[tokio::test]
async fn an_include_index_serves_the_fields_its_keys_give_back() {
    let app = model_app_from(MODEL).await;
    let table = app.table("Payments");
    let mut items = Vec::new();
    for (i, account) in ["a1", "a#2", "b3"].iter().enumerate() {
        for sub in 0..4 {
            let due = if (i + sub) % 2 == 0 {
                "2026-01-05"
            } else {
                "2026-02-01"
            };
            items.push(payment(
                account,
                &format!("s{sub}"),
                due,
                &format!("{i}{sub}.25"),
            ));
        }
    }
    put_plain(app.client(), &table, items).await;

    let query = r#"query($dueDate: String!, $first: Int, $after: String, $last: Int, $before: String) {
      due(dueDate: $dueDate, first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { accountId subId dueDate amount } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }"#;
    for due in ["2026-01-05", "2026-02-01"] {
        // DynamoDB's own Query of the index, as the ground truth.
        let partition = format!("DUE#{due}");
        let truth = query_partition(
            app.client(),
            &table,
            Some("GSI1"),
            ("GSI1PK", &partition),
            true,
        )
        .await;
        assert!(truth.len() >= 5, "{truth:?}");
        assert!(truth.iter().all(|item| !item.contains_key("memo")));
        let want: Vec<String> = truth
            .iter()
            .map(|item| {
                let key = |name: &str| item[name].as_s().unwrap().clone();
                let account = key("PK").strip_prefix("ACC#").unwrap().to_owned();
                let sub = key("SK").strip_prefix("SUB#").unwrap().to_owned();
                format!("{account}/{sub}/{due}/{}", item["amount"].as_n().unwrap())
            })
            .collect();
        let text = |v: &Value| v.as_str().unwrap_or_else(|| panic!("{v}")).to_owned();
        walk_matches(
            |paging| app.graphql(query, merge(json!({ "dueDate": due }), paging)),
            &["due"],
            |node| {
                format!(
                    "{}/{}/{}/{}",
                    text(&node["accountId"]),
                    text(&node["subId"]),
                    text(&node["dueDate"]),
                    text(&node["amount"])
                )
            },
            &want,
            due,
        )
        .await;
    }

    // The live index holds the keys the model lists among its attributes: `check` agrees.
    let check = dynarelay_command(&endpoint())
        .env("DYNARELAY_TABLE_PREFIX", &app.prefix)
        .args(["check", "--model", &model_file(MODEL)])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&check.stdout).into_owned()
        + &String::from_utf8_lossy(&check.stderr);
    assert!(check.status.success(), "{said}");
    assert!(!said.contains("does not project"), "{said}");
}

/// A field the index holds neither as an attribute nor in a key it can be read back from is
/// refused where the connection is declared, with the attribute named.
#[test]
fn a_field_an_include_index_holds_in_no_way_is_refused() {
    let with_memo = MODEL.replace(
        "fields.amount = { type = \"Decimal!\" }\n",
        "fields.amount = { type = \"Decimal!\" }\nfields.memo = { type = \"String\" }\n",
    );
    let (valid, said) = check_offline(&model_file(&with_memo), &[]);
    assert!(!valid, "{said}");
    assert!(
        said.contains("index `GSI1` does not hold attribute(s) `memo` that entity `Payment` reads"),
        "{said}"
    );
    // Control: without it the model is valid offline.
    let (valid, said) = check_offline(&model_file(MODEL), &[]);
    assert!(valid, "{said}");
}
