//! Times in keys as other tools write them: plain dates (`DAY#2026-05-01`), epoch milliseconds
//! zero-padded to 13 digits (`AT#1714564800000`), RFC 3339 in whole seconds
//! (`T#2026-05-01T12:00:00Z`), and ULIDs, whose text sorts by time (`N#01HW…`). Items are written with the plain SDK in those forms; ranges on
//! each select exactly the items in range at every page size both ways, and the mutations write
//! the same forms.

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::{Value, json};

use dynarelay::model::sortable_id::SortableId;

use crate::helpers::{ModelApp, book_says, merge, model_app_from, walk_matches};

const MODEL: &str = r#"version = 1

[tables.Log]
partition_key = "PK"
sort_key = "SK"
attributes = { PK = "S", SK = "S" }
type_attribute = "_type"

[entities.Day]
table = "Log"
keys = { PK = "SENSOR#{sensorId}", SK = "DAY#{day}" }
escape_keys = false
fields.sensorId = { type = "String!" }
fields.day = { type = "DateTime!", stored_as = "date" }
mutations = { create = {} }

[entities.Reading]
table = "Log"
keys = { PK = "READING#{sensorId}", SK = "AT#{at:013}" }
escape_keys = false
fields.sensorId = { type = "String!" }
fields.at = { type = "DateTime!", stored_as = "epoch_millis" }
mutations = { create = {} }

[entities.Event]
table = "Log"
keys = { PK = "EVENT#{sensorId}", SK = "T#{at}" }
escape_keys = false
fields.sensorId = { type = "String!" }
fields.at = { type = "DateTime!", stored_as = "iso8601_seconds" }
mutations = { create = {} }

[entities.Note]
table = "Log"
keys = { PK = "NOTE#{sensorId}", SK = "N#{noteId}" }
escape_keys = false
fields.sensorId = { type = "String!" }
fields.noteId = { type = "ID!", format = "ulid" }
fields.kind = { type = "String!" }

[connections.notes]
entity = "Note"
partition = { argument = "sensorId" }
sort = { min = "from", max = "until" }

[connections.days]
entity = "Day"
partition = { argument = "sensorId" }
sort = { min = "from", max = "until", begins_with = "prefix" }

[connections.readings]
entity = "Reading"
partition = { argument = "sensorId" }
sort = { min = "from", max = "until" }

[connections.events]
entity = "Event"
partition = { argument = "sensorId" }
sort = { min = "from", max = "until", begins_with = "prefix" }
"#;

/// The times of the items: every 17 hours and 13 minutes from 2026-04-01, so that days,
/// seconds and the months around them all vary.
fn times() -> Vec<DateTime<Utc>> {
    let start = DateTime::parse_from_rfc3339("2026-04-01T00:00:00Z")
        .unwrap()
        .to_utc();
    (0..60)
        .map(|i| start + Duration::minutes(i * (17 * 60 + 13)))
        .collect()
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

async fn seeded() -> ModelApp {
    let app = model_app_from(MODEL).await;
    let s = |v: String| AttributeValue::S(v);
    let mut items = Vec::new();
    let mut days = std::collections::BTreeSet::new();
    for t in times() {
        let day = t.format("%Y-%m-%d").to_string();
        if days.insert(day.clone()) {
            items.push(vec![
                ("PK", s("SENSOR#s-1".into())),
                ("SK", s(format!("DAY#{day}"))),
                ("_type", s("Day".into())),
                ("sensorId", s("s-1".into())),
                ("day", s(day)),
            ]);
        }
        let millis = t.timestamp_millis();
        items.push(vec![
            ("PK", s("READING#s-1".into())),
            ("SK", s(format!("AT#{millis:013}"))),
            ("_type", s("Reading".into())),
            ("sensorId", s("s-1".into())),
            ("at", AttributeValue::N(millis.to_string())),
        ]);
        let seconds = t.to_rfc3339_opts(SecondsFormat::Secs, true);
        items.push(vec![
            ("PK", s("EVENT#s-1".into())),
            ("SK", s(format!("T#{seconds}"))),
            ("_type", s("Event".into())),
            ("sensorId", s("s-1".into())),
            ("at", s(seconds)),
        ]);
    }
    // Notes keyed by ULIDs of the same times (KSUIDs alike: both sort by time), each with a
    // tail that is not the smallest.
    for (i, t) in times().into_iter().enumerate() {
        let ulid = SortableId::Ulid.bound(t.timestamp_millis(), false).unwrap();
        let id = format!("{}{:016}", &ulid[..10], i * 7919);
        items.push(vec![
            ("PK", s("NOTE#s-1".into())),
            ("SK", s(format!("N#{id}"))),
            ("_type", s("Note".into())),
            ("sensorId", s("s-1".into())),
            ("noteId", s(id)),
            ("kind", s(iso(t))),
        ]);
    }
    let items = items
        .into_iter()
        .map(|item| item.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
        .collect();
    app.store.put_items(&app.table("Log"), items).await.unwrap();
    app
}

/// Walks `field`'s connection with `extra` at every page size both ways; each node's time.
async fn walk(app: &ModelApp, field: &str, time: &str, extra: Value, want: &[String]) {
    let query = format!(
        "query($first: Int, $after: String, $last: Int, $before: String{args}) {{
           {field}(sensorId: \"s-1\", first: $first, after: $after, last: $last, before: $before{pass}) {{
             edges {{ cursor node {{ {time} }} }}
             pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }} }} }}",
        args = extra
            .as_object()
            .unwrap()
            .keys()
            .map(|k| format!(", ${k}: {}", if k == "prefix" { "String" } else { "DateTime" }))
            .collect::<String>(),
        pass = extra
            .as_object()
            .unwrap()
            .keys()
            .map(|k| format!(", {k}: ${k}"))
            .collect::<String>(),
    );
    walk_matches(
        |paging| app.graphql(&query, merge(extra.clone(), paging)),
        &[field],
        |node| node[time].as_str().unwrap().to_owned(),
        want,
        &format!("{field} {extra}"),
    )
    .await;
}

/// Each stored form reads back as a `DateTime`, sorts as the times do, and takes ranges that
/// select exactly the items between their ends, in every page size both ways.
#[tokio::test]
async fn times_stored_as_dates_epoch_digits_and_whole_seconds_take_exact_ranges() {
    let app = seeded().await;
    let all: Vec<DateTime<Utc>> = times();
    let (from, until) = (all[11], all[37]);
    let within = |t: &DateTime<Utc>| *t >= from && *t <= until;
    // Readings: every time, to the millisecond.
    let want: Vec<String> = all.iter().map(|t| iso(*t)).collect();
    walk(&app, "readings", "at", json!({}), &want).await;
    let want: Vec<String> = all.iter().filter(|t| within(t)).map(|t| iso(*t)).collect();
    walk(
        &app,
        "readings",
        "at",
        json!({ "from": iso(from), "until": iso(until) }),
        &want,
    )
    .await;
    // Events: whole seconds (the times have none to lose).
    walk(
        &app,
        "events",
        "at",
        json!({ "from": iso(from), "until": iso(until) }),
        &want,
    )
    .await;
    let in_april: Vec<String> = all
        .iter()
        .filter(|t| t.format("%Y-%m").to_string() == "2026-04")
        .map(|t| iso(*t))
        .collect();
    walk(
        &app,
        "events",
        "at",
        json!({ "prefix": "2026-04" }),
        &in_april,
    )
    .await;
    // Days: one per date, read as midnight UTC.
    let mut days: Vec<DateTime<Utc>> = all
        .iter()
        .map(|t| t.date_naive().and_hms_opt(0, 0, 0).unwrap().and_utc())
        .collect();
    days.dedup();
    let (day_from, day_until) = (days[5], days[20]);
    let want: Vec<String> = days
        .iter()
        .filter(|d| **d >= day_from && **d <= day_until)
        .map(|d| iso(*d))
        .collect();
    walk(
        &app,
        "days",
        "day",
        json!({ "from": iso(day_from), "until": iso(day_until) }),
        &want,
    )
    .await;
    let may: Vec<String> = days
        .iter()
        .filter(|d| d.format("%Y-%m").to_string() == "2026-05")
        .map(|d| iso(*d))
        .collect();
    walk(&app, "days", "day", json!({ "prefix": "2026-05" }), &may).await;
    book_says(
        "docs/src/reference/model-file-by-key.md",
        "`begins_with` (a prefix; `String` or `ID` sort keys, or a template's text, enum or \
         `DateTime` facet: `\"2026-11\"`)",
    );
    // Notes keyed by ULIDs: a range of times is the range of their ids.
    let want: Vec<String> = all.iter().filter(|t| within(t)).map(|t| iso(*t)).collect();
    walk(
        &app,
        "notes",
        "kind",
        json!({ "from": iso(from), "until": iso(until) }),
        &want,
    )
    .await;
}

/// The mutations write each form as the others are stored, and refuse a time the form cannot
/// hold (a date with a time of day, whole seconds with milliseconds).
#[tokio::test]
async fn mutations_write_each_stored_form() {
    let app = seeded().await;
    for (mutation, at, key) in [
        (
            "createDay(input: { sensorId: \"s-2\", day: \"2026-06-01T00:00:00Z\" }) { day { day } }",
            "SENSOR#s-2",
            "DAY#2026-06-01",
        ),
        (
            "createReading(input: { sensorId: \"s-2\", at: \"2026-06-01T10:00:00.123Z\" }) { reading { at } }",
            "READING#s-2",
            "AT#1780308000123",
        ),
        (
            "createEvent(input: { sensorId: \"s-2\", at: \"2026-06-01T10:00:00Z\" }) { event { at } }",
            "EVENT#s-2",
            "T#2026-06-01T10:00:00Z",
        ),
    ] {
        let answer = app
            .graphql(&format!("mutation {{ {mutation} }}"), json!({}))
            .await;
        assert!(answer.get("errors").is_none(), "{answer}");
        let stored = app.scan_all(&app.table("Log")).await;
        assert!(
            stored
                .iter()
                .any(|i| i["PK"].as_s().unwrap() == at && i["SK"].as_s().unwrap() == key),
            "no {at} / {key}"
        );
    }
    for mutation in [
        "createDay(input: { sensorId: \"s-3\", day: \"2026-06-01T10:00:00Z\" }) { day { day } }",
        "createEvent(input: { sensorId: \"s-3\", at: \"2026-06-01T10:00:00.500Z\" }) { event { at } }",
    ] {
        let answer = app
            .graphql(&format!("mutation {{ {mutation} }}"), json!({}))
            .await;
        assert_eq!(
            answer["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
            "{answer}"
        );
    }
}
