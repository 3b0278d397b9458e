//! Ranges and prefixes on text facets of keys other code wrote (unescaped): `min`/`max` on a
//! `String` facet that ends the key and on an enum facet followed by `#`, an optional `fixed`
//! enum facet (Amplify's `{status}#{createdAt}`, read with or without a status), and values that
//! would reach into the next facet, refused before any read. The ground truth is DynamoDB's own
//! Queries, with the key condition on the rendered bounds or the whole partition filtered by the
//! items' values.

use aws_sdk_dynamodb::types::AttributeValue;
use dynarelay::dynamo::Item;
use serde_json::{Value, json};

use crate::helpers::{
    GroundQuery, ModelApp, all_nodes, merge, model_app_from, put_plain, query_all, walk_matches,
};

const MODEL: &str = r##"version = 1

[tables.Catalog]
partition_key = "PK"
sort_key = "SK"
attributes = { PK = "S", SK = "S", GSI1PK = "S", GSI1SK = "S" }
indexes.GSI1 = { partition_key = "GSI1PK", sort_key = "GSI1SK" }

[enums.Status]
values = ["ACTIVE", "ARCHIVED", "DRAFT"]

[entities.Word]
table = "Catalog"
keys = { PK = "SHELF#{shelf}", SK = "WORD#{word}", GSI1PK = "SHELF#{shelf}", GSI1SK = "{status}#{day}#{word}" }
escape_keys = false
fields.shelf = "String!"
fields.word = "String!"
fields.status = "Status!"
fields.day = { type = "DateTime!", stored_as = "date" }

[connections.words]
entity = "Word"
partition = { argument = "shelf" }
sort.min = "from"
sort.max = "to"

[connections.wordsByStatus]
entity = "Word"
index = "GSI1"
partition = { argument = "shelf" }
sort.fixed = [{ name = "status", optional = true }]
sort.min = "dayFrom"
sort.max = "dayTo"

[connections.wordsInStatuses]
entity = "Word"
index = "GSI1"
partition = { argument = "shelf" }
sort.min = "statusFrom"
sort.max = "statusTo"

[entities.Seat]
table = "Catalog"
keys = { PK = "EVENT#{eventId}", SK = "SEAT#{section}#{row}#{seat}" }
escape_keys = false
fields.eventId = "String!"
fields.section = "String!"
fields.row = "String!"
fields.seat = "String!"

[lookups.seat]
entity = "Seat"

[connections.seatsInSection]
entity = "Seat"
partition = { argument = "eventId" }
sort.fixed = ["section"]
sort.begins_with = "rowStart"
"##;

const STATUSES: [&str; 3] = ["ACTIVE", "ARCHIVED", "DRAFT"];

/// Words that sort every way text can: spaces, `!` and `#` (below and at the separator), upper
/// and lower case, unicode, prefixes of each other.
fn words() -> Vec<String> {
    let stems = [
        "a", "a b", "a!b", "a#b", "ab", "abc", "A", "Z", "zoë", "日本", "ü", "#", "!", " x", "~",
        "a#", "ab#c", "ACTIVE", "WORD#x", "é",
    ];
    let mut words: Vec<String> = stems.iter().map(|s| (*s).to_owned()).collect();
    words.extend(stems.iter().map(|s| format!("{s}{s}")));
    words.extend((0..20).map(|i| format!("w{i:02}")));
    words
}

fn s(text: impl Into<String>) -> AttributeValue {
    AttributeValue::S(text.into())
}

/// A word's item as its writer stores it: `n`-th of its shelf.
fn word_item(shelf: &str, word: &str, n: usize) -> Item {
    let status = STATUSES[n % 3];
    let day = format!("2026-05-{:02}", 1 + n % 10);
    Item::from([
        ("PK".to_owned(), s(format!("SHELF#{shelf}"))),
        ("SK".to_owned(), s(format!("WORD#{word}"))),
        ("GSI1PK".to_owned(), s(format!("SHELF#{shelf}"))),
        ("GSI1SK".to_owned(), s(format!("{status}#{day}#{word}"))),
        ("shelf".to_owned(), s(shelf)),
        ("word".to_owned(), s(word)),
        ("status".to_owned(), s(status)),
        ("day".to_owned(), s(day)),
    ])
}

fn seat_item(event: &str, section: &str, row: &str, seat: &str) -> Item {
    Item::from([
        ("PK".to_owned(), s(format!("EVENT#{event}"))),
        ("SK".to_owned(), s(format!("SEAT#{section}#{row}#{seat}"))),
        ("eventId".to_owned(), s(event)),
        ("section".to_owned(), s(section)),
        ("row".to_owned(), s(row)),
        ("seat".to_owned(), s(seat)),
    ])
}

async fn catalog() -> ModelApp {
    let app = model_app_from(MODEL).await;
    let mut items: Vec<Item> = words()
        .iter()
        .enumerate()
        .map(|(n, w)| word_item("s1", w, n))
        .collect();
    items.extend((0..5).map(|n| word_item("s2", &format!("other {n}"), n)));
    for section in ["A", "AB"] {
        for row in ["1", "10", "2", "001"] {
            items.push(seat_item("e1", section, row, "5"));
        }
    }
    put_plain(app.client(), &app.table("Catalog"), items).await;
    app
}

fn text(value: &Value, field: &str) -> String {
    value[field]
        .as_str()
        .unwrap_or_else(|| panic!("no `{field}` in {value}"))
        .to_owned()
}

/// The words DynamoDB's own Query returns for `condition` on the table or `GSI1`.
async fn ground(
    app: &ModelApp,
    index: Option<&str>,
    condition: &str,
    values: &[(&str, AttributeValue)],
) -> Vec<String> {
    let table = app.table("Catalog");
    let names: &[(&str, &str)] = match index {
        Some(_) => &[("#p", "GSI1PK"), ("#s", "GSI1SK")],
        None => &[("#p", "PK"), ("#s", "SK")],
    };
    let names = if condition.contains("#s") {
        names
    } else {
        &names[..1]
    };
    let query = GroundQuery {
        table: &table,
        index,
        condition,
        names,
        values,
        forward: true,
    };
    query_all(app.client(), &query)
        .await
        .iter()
        .map(|item| item["word"].as_s().unwrap().clone())
        .collect()
}

/// Every word of a connection, 50 a page, with the cost of each page: DynamoDB read no item
/// the page did not return (no filter skipped any).
async fn connection_words(app: &ModelApp, field: &str, args: Value) -> Result<Vec<String>, Value> {
    let (declared, passed) = match field {
        "words" => ("$from: String, $to: String", "from: $from, to: $to"),
        "wordsByStatus" => (
            "$status: Status, $dayFrom: DateTime, $dayTo: DateTime",
            "status: $status, dayFrom: $dayFrom, dayTo: $dayTo",
        ),
        _ => (
            "$statusFrom: Status, $statusTo: Status",
            "statusFrom: $statusFrom, statusTo: $statusTo",
        ),
    };
    let query = format!(
        "query($shelf: String!, $first: Int, $after: String, {declared}) {{
           {field}(shelf: $shelf, first: $first, after: $after, {passed}) {{
             nodes {{ word }} pageInfo {{ hasNextPage endCursor }} }} }}"
    );
    let probe = app
        .graphql(&query, merge(args.clone(), json!({ "first": 1 })))
        .await;
    if probe.get("errors").is_some() {
        return Err(probe);
    }
    let nodes = all_nodes(
        |paging| {
            let query = query.clone();
            let vars = merge(args.clone(), paging);
            async move {
                let answer = app.graphql(&query, vars).await;
                let cost = &answer["extensions"]["cost"];
                assert_eq!(
                    cost["itemsEvaluated"], cost["itemsReturned"],
                    "a key condition reads only what it returns: {answer}"
                );
                answer
            }
        },
        &[field],
        50,
    )
    .await;
    Ok(nodes.iter().map(|n| text(n, "word")).collect())
}

/// `min` and `max` on a String facet that ends the key select exactly what DynamoDB's `BETWEEN`
/// on the rendered bounds selects, for every pair of bounds taken from the stored words and
/// from text between and around them (spaces, `!`, `#`, unicode, the empty string), in
/// DynamoDB's byte order; each one-sided bound as `>=` or `<=` within the entity's keys; and
/// bounds out of order are refused.
#[tokio::test]
async fn ranges_on_a_string_facet_are_the_keys_byte_order() {
    let app = catalog().await;
    let mut bounds: Vec<String> = words().into_iter().step_by(3).collect();
    bounds.extend(["", " ", "a c", "a#", "ab!", "zz", "\u{10FFFF}"].map(str::to_owned));
    let shelf = [(":p", s("SHELF#s1"))];
    let all = ground(&app, None, "#p = :p", &shelf).await;
    assert_eq!(all.len(), words().len());
    let mut checked = 0;
    for lo in &bounds {
        for hi in &bounds {
            let args = json!({ "shelf": "s1", "from": lo, "to": hi });
            let got = connection_words(&app, "words", args).await;
            if lo.as_bytes() > hi.as_bytes() {
                let answer = got.expect_err("bounds out of order");
                assert_eq!(
                    answer["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
                    "{lo:?}..{hi:?}: {answer}"
                );
                continue;
            }
            let values = [
                (":p", s("SHELF#s1")),
                (":lo", s(format!("WORD#{lo}"))),
                (":hi", s(format!("WORD#{hi}"))),
            ];
            let want = ground(&app, None, "#p = :p AND #s BETWEEN :lo AND :hi", &values).await;
            assert_eq!(got.unwrap(), want, "{lo:?}..{hi:?}");
            checked += 1;
        }
        // One bound: the rest of the entity's keys, in DynamoDB's order.
        let from = connection_words(&app, "words", json!({ "shelf": "s1", "from": lo }));
        let want: Vec<String> = all
            .iter()
            .filter(|w| w.as_bytes() >= lo.as_bytes())
            .cloned()
            .collect();
        assert_eq!(from.await.unwrap(), want, "from {lo:?}");
        let to = connection_words(&app, "words", json!({ "shelf": "s1", "to": lo }));
        let want: Vec<String> = all
            .iter()
            .filter(|w| w.as_bytes() <= lo.as_bytes())
            .cloned()
            .collect();
        assert_eq!(to.await.unwrap(), want, "to {lo:?}");
    }
    assert!(checked > bounds.len() * bounds.len() / 3, "{checked}");
}

/// An enum facet followed by `#` takes a range of statuses, and an optional `fixed` status
/// narrows the key condition when given and reads the whole partition when not, with day ranges
/// under it; ranges without the status it narrows are refused. Each walked at every page size
/// both ways against DynamoDB's own reads of the index, filtered by the items' values.
#[tokio::test]
async fn an_enum_facet_takes_ranges_and_an_optional_prefix() {
    let app = catalog().await;
    let table = app.table("Catalog");
    let index = query_all(
        app.client(),
        &GroundQuery {
            table: &table,
            index: Some("GSI1"),
            condition: "#p = :p",
            names: &[("#p", "GSI1PK")],
            values: &[(":p", s("SHELF#s1"))],
            forward: true,
        },
    )
    .await;
    let value = |item: &Item, name: &str| item[name].as_s().unwrap().clone();
    let select = |keep: &dyn Fn(&Item) -> bool| -> Vec<String> {
        index
            .iter()
            .filter(|i| keep(i))
            .map(|i| value(i, "word"))
            .collect()
    };

    // Statuses from `ARCHIVED` to `DRAFT`, and each one alone.
    for (lo, hi) in [
        ("ARCHIVED", "DRAFT"),
        ("ACTIVE", "ACTIVE"),
        ("ACTIVE", "DRAFT"),
    ] {
        let want = select(&|i| (lo..=hi).contains(&value(i, "status").as_str()));
        let args = json!({ "shelf": "s1", "statusFrom": lo, "statusTo": hi });
        let got = connection_words(&app, "wordsInStatuses", args)
            .await
            .unwrap();
        assert_eq!(got, want, "{lo}..{hi}");
    }

    let query = r#"query($shelf: String!, $status: Status, $dayFrom: DateTime, $dayTo: DateTime,
        $first: Int, $after: String, $last: Int, $before: String) {
      wordsByStatus(shelf: $shelf, status: $status, dayFrom: $dayFrom, dayTo: $dayTo,
                    first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { word status day } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }"#;
    type Keep<'k> = &'k dyn Fn(&Item) -> bool;
    let cases: [(Value, Keep<'_>); 4] = [
        (json!({}), &|_| true),
        (json!({ "status": "ARCHIVED" }), &|i| {
            value(i, "status") == "ARCHIVED"
        }),
        (
            json!({ "status": "DRAFT", "dayFrom": "2026-05-03T00:00:00.000Z", "dayTo": "2026-05-07T00:00:00.000Z" }),
            &|i| {
                value(i, "status") == "DRAFT"
                    && ("2026-05-03".."2026-05-08").contains(&value(i, "day").as_str())
            },
        ),
        (
            json!({ "status": "ACTIVE", "dayFrom": "2026-05-09T00:00:00.000Z" }),
            &|i| value(i, "status") == "ACTIVE" && value(i, "day").as_str() >= "2026-05-09",
        ),
    ];
    for (args, keep) in cases {
        let want = select(keep);
        assert!(!want.is_empty(), "{args}");
        let vars = merge(json!({ "shelf": "s1" }), args.clone());
        walk_matches(
            |paging| app.graphql(query, merge(vars.clone(), paging)),
            &["wordsByStatus"],
            |node| text(node, "word"),
            &want,
            &format!("words {args}"),
        )
        .await;
    }
    // A day range narrows a status: without it, it is refused before any read.
    let answer = app
        .graphql(
            query,
            json!({ "shelf": "s1", "dayFrom": "2026-05-03T00:00:00.000Z", "first": 5 }),
        )
        .await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{answer}"
    );
    assert_eq!(answer["extensions"]["cost"]["dynamodbCalls"], 0, "{answer}");
}

/// A `fixed`, `begins_with` or lookup value holding the text that follows its facet would render
/// a key of other items (`A#001` for the section of `SEAT#{section}#{row}#{seat}` is section `A`,
/// row `001`): it is refused with `BAD_USER_INPUT` before any read, while the same values where
/// they end the key, and every value without the following text, read exactly their items.
#[tokio::test]
async fn values_that_would_reach_into_the_next_facet_are_refused() {
    let app = catalog().await;
    let in_section = "query($section: String!, $row: String) {
        seatsInSection(eventId: \"e1\", section: $section, rowStart: $row, first: 50) {
          nodes { section row seat } } }";
    let refused = [
        json!({ "section": "A#001" }),
        json!({ "section": "A#" }),
        json!({ "section": "A", "row": "1#" }),
        json!({ "section": "#" }),
    ];
    for vars in refused {
        let answer = app.graphql(in_section, vars.clone()).await;
        assert_eq!(
            answer["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
            "{vars}: {answer}"
        );
        assert_eq!(answer["extensions"]["cost"]["dynamodbCalls"], 0, "{answer}");
    }
    // Control: section `A` lists its four seats only, never one of `AB`.
    let answer = app.graphql(in_section, json!({ "section": "A" })).await;
    let rows: Vec<String> = answer["data"]["seatsInSection"]["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|n| format!("{}/{}", text(n, "section"), text(n, "row")))
        .collect();
    assert_eq!(rows, ["A/001", "A/1", "A/10", "A/2"], "{answer}");
    let answer = app
        .graphql(in_section, json!({ "section": "A", "row": "1" }))
        .await;
    assert_eq!(
        answer["data"]["seatsInSection"]["nodes"],
        json!([{ "section": "A", "row": "1", "seat": "5" }, { "section": "A", "row": "10", "seat": "5" }]),
        "{answer}"
    );

    // Lookups: the section is refused; the seat, which ends the key, may hold anything.
    let look = "query($section: String!, $seat: String!) {
        seat(eventId: \"e1\", section: $section, row: \"1\", seat: $seat) { section row seat } }";
    let answer = app
        .graphql(look, json!({ "section": "A#001", "seat": "5" }))
        .await;
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{answer}"
    );
    let answer = app
        .graphql(look, json!({ "section": "A", "seat": "5" }))
        .await;
    assert_eq!(
        answer["data"]["seat"],
        json!({ "section": "A", "row": "1", "seat": "5" }),
        "{answer}"
    );
    let answer = app
        .graphql(look, json!({ "section": "A", "seat": "5#x" }))
        .await;
    assert_eq!(answer["data"]["seat"], Value::Null, "{answer}");
    assert!(answer.get("errors").is_none(), "{answer}");
}
