//! The reader against the SDK's own deserialiser, fed the same bytes: answers of every shape the
//! three operations have, with every attribute type, nested, written with and without escapes,
//! extra whitespace and fields the reader skips; and answers it must leave to the SDK.

use std::fmt::Write as _;

use aws_sdk_dynamodb::operation::{
    batch_get_item::BatchGetItemOutput, get_item::GetItemOutput, query::QueryOutput,
};
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use proptest::prelude::*;

use super::*;

/// A JSON value as the generator writes it, before it is turned into text.
#[derive(Debug, Clone)]
enum Json {
    Str(String),
    /// A string never escaped: base64, which DynamoDB writes as it is, and which the SDK decodes
    /// without unescaping.
    Plain(String),
    /// A number, written as this text.
    Num(String),
    Bool(bool),
    Null,
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

/// How the text is written: which characters of strings are escaped as `\uXXXX` although they
/// need not be, and whether whitespace goes between tokens.
#[derive(Debug, Clone, Copy)]
struct Style {
    escape_all: bool,
    spaced: bool,
}

fn write_str(out: &mut String, text: &str, style: Style) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 || style.escape_all => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_json(out: &mut String, value: &Json, style: Style) {
    let gap = if style.spaced { " \n\t" } else { "" };
    match value {
        Json::Str(s) => write_str(out, s, style),
        Json::Plain(s) => write_str(
            out,
            s,
            Style {
                escape_all: false,
                ..style
            },
        ),
        Json::Num(n) => out.push_str(n),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Null => out.push_str("null"),
        Json::Arr(values) => {
            out.push('[');
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(gap);
                write_json(out, v, style);
            }
            out.push_str(gap);
            out.push(']');
        }
        Json::Obj(fields) => {
            out.push('{');
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(gap);
                write_str(out, k, style);
                out.push(':');
                out.push_str(gap);
                write_json(out, v, style);
            }
            out.push_str(gap);
            out.push('}');
        }
    }
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9#_:. -]{0,12}",
        any::<String>(),
        Just("\"quoted\" \\ back/slash\u{7}\u{0}\u{1F600}é".to_owned()),
    ]
}

fn number_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        "-?[0-9]{1,38}(\\.[0-9]{1,10})?(E[+-]?[0-9]{1,3})?",
    ]
}

fn base64_of() -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<u8>(), 0..24).prop_map(aws_smithy_types::base64::encode)
}

fn typed(kind: &str, value: Json) -> Json {
    Json::Obj(vec![(kind.to_owned(), value)])
}

fn strings(s: impl Strategy<Value = String>) -> impl Strategy<Value = Json> {
    proptest::collection::vec(s.prop_map(Json::Str), 0..4).prop_map(Json::Arr)
}

fn plain_strings(s: impl Strategy<Value = String>) -> impl Strategy<Value = Json> {
    proptest::collection::vec(s.prop_map(Json::Plain), 0..4).prop_map(Json::Arr)
}

/// An attribute value of any type, nested up to three deep.
fn attribute() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        text().prop_map(|s| typed("S", Json::Str(s))),
        number_text().prop_map(|n| typed("N", Json::Str(n))),
        base64_of().prop_map(|b| typed("B", Json::Plain(b))),
        any::<bool>().prop_map(|b| typed("BOOL", Json::Bool(b))),
        any::<bool>().prop_map(|b| typed("NULL", Json::Bool(b))),
        strings(text()).prop_map(|v| typed("SS", v)),
        strings(number_text()).prop_map(|v| typed("NS", v)),
        plain_strings(base64_of()).prop_map(|v| typed("BS", v)),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| typed("L", Json::Arr(v))),
            proptest::collection::vec((text(), inner), 0..4)
                .prop_map(|fields| typed("M", Json::Obj(fields))),
        ]
    })
}

fn item() -> impl Strategy<Value = Json> {
    proptest::collection::vec((text(), attribute()), 0..6).prop_map(Json::Obj)
}

fn capacity_number() -> impl Strategy<Value = Json> {
    prop_oneof![
        (0u32..10_000).prop_map(|n| Json::Num(n.to_string())),
        (0u32..10_000).prop_map(|n| Json::Num(format!("{}.5", n))),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| Json::Num(format!("{f:e}"))),
        "(0|[1-9][0-9]{0,24})\\.[0-9]{1,25}".prop_map(Json::Num),
    ]
}

fn capacity() -> impl Strategy<Value = Json> {
    proptest::collection::vec(
        (
            prop_oneof![
                Just("CapacityUnits"),
                Just("ReadCapacityUnits"),
                Just("WriteCapacityUnits")
            ],
            capacity_number(),
        ),
        0..3,
    )
    .prop_map(|fields| Json::Obj(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
}

fn consumed() -> impl Strategy<Value = Json> {
    (
        proptest::option::of(text()),
        proptest::option::of(capacity_number()),
        proptest::option::of(capacity_number()),
        proptest::option::of(capacity()),
        proptest::option::of(proptest::collection::vec((text(), capacity()), 0..3)),
        proptest::option::of(proptest::collection::vec((text(), capacity()), 0..3)),
    )
        .prop_map(|(table, units, read, table_capacity, lsis, gsis)| {
            let mut fields = Vec::new();
            if let Some(t) = table {
                fields.push(("TableName".to_owned(), Json::Str(t)));
            }
            if let Some(u) = units {
                fields.push(("CapacityUnits".to_owned(), u));
            }
            if let Some(r) = read {
                fields.push(("ReadCapacityUnits".to_owned(), r));
            }
            if let Some(c) = table_capacity {
                fields.push(("Table".to_owned(), c));
            }
            if let Some(l) = lsis {
                fields.push(("LocalSecondaryIndexes".to_owned(), Json::Obj(l)));
            }
            if let Some(g) = gsis {
                fields.push(("GlobalSecondaryIndexes".to_owned(), Json::Obj(g)));
            }
            Json::Obj(fields)
        })
}

/// A field the SDK does not know, which both skip.
fn unknown_field() -> impl Strategy<Value = (String, Json)> {
    (
        "X[a-z]{1,6}",
        prop_oneof![
            Just(Json::Null),
            any::<i64>().prop_map(|n| Json::Num(n.to_string())),
            capacity_number(),
            item(),
            proptest::collection::vec(item(), 0..2).prop_map(Json::Arr),
        ],
    )
}

/// The fields of an answer, in a shuffled order, with perhaps a skipped field among them.
fn answer(fields: Vec<Option<(&'static str, Json)>>) -> impl Strategy<Value = Json> {
    let fields: Vec<(String, Json)> = fields
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    (
        Just(fields).prop_shuffle(),
        proptest::option::of(unknown_field()),
    )
        .prop_map(|(mut fields, extra)| {
            fields.extend(extra);
            Json::Obj(fields)
        })
}

fn query_answer() -> impl Strategy<Value = Json> {
    (
        proptest::collection::vec(item(), 0..5),
        0i32..1_000,
        proptest::option::of(0i32..1_000),
        proptest::option::of(item()),
        proptest::option::of(consumed()),
    )
        .prop_flat_map(|(items, count, scanned, last, consumed)| {
            answer(vec![
                Some(("Items", Json::Arr(items))),
                Some(("Count", Json::Num(count.to_string()))),
                scanned.map(|s| ("ScannedCount", Json::Num(s.to_string()))),
                last.map(|l| ("LastEvaluatedKey", l)),
                consumed.map(|c| ("ConsumedCapacity", c)),
            ])
        })
}

fn get_item_answer() -> impl Strategy<Value = Json> {
    (
        proptest::option::of(item()),
        proptest::option::of(consumed()),
    )
        .prop_flat_map(|(item, consumed)| {
            answer(vec![
                item.map(|i| ("Item", i)),
                consumed.map(|c| ("ConsumedCapacity", c)),
            ])
        })
}

fn batch_answer() -> impl Strategy<Value = Json> {
    (
        proptest::collection::vec((text(), proptest::collection::vec(item(), 0..3)), 0..3),
        any::<bool>(),
        proptest::option::of(proptest::collection::vec(consumed(), 0..3)),
    )
        .prop_flat_map(|(tables, unprocessed, consumed)| {
            let responses = tables
                .into_iter()
                .map(|(t, items)| (t, Json::Arr(items)))
                .collect();
            answer(vec![
                Some(("Responses", Json::Obj(responses))),
                unprocessed.then(|| ("UnprocessedKeys", Json::Obj(Vec::new()))),
                consumed.map(|c| ("ConsumedCapacity", Json::Arr(c))),
            ])
        })
}

fn response(status: u16, body: &str) -> HttpResponse {
    HttpResponse::new(
        StatusCode::try_from(status).expect("a status"),
        SdkBody::from(body.as_bytes().to_vec()),
    )
}

/// What the reader and the SDK make of `body`; the reader's output is `None` where it left the
/// body to the SDK.
fn both(read: Read, body: &str) -> (Option<Output>, Result<Output, OrchestratorError<Error>>) {
    (
        read.read(body.as_bytes()),
        read.by_the_sdk(&response(200, body)),
    )
}

/// Whether two outputs of `read` are equal.
fn equal(read: Read, a: Output, b: Output) -> bool {
    match read {
        Read::Query => a.downcast::<QueryOutput>().ok() == b.downcast::<QueryOutput>().ok(),
        Read::GetItem => a.downcast::<GetItemOutput>().ok() == b.downcast::<GetItemOutput>().ok(),
        Read::BatchGetItem => {
            a.downcast::<BatchGetItemOutput>().ok() == b.downcast::<BatchGetItemOutput>().ok()
        }
    }
}

/// Asserts that whatever the reader makes of `body` is what the SDK makes of it, and returns
/// whether the reader read it.
fn agree(read: Read, body: &str) -> Result<bool, TestCaseError> {
    let (ours, sdk) = both(read, body);
    let Some(ours) = ours else {
        return Ok(false);
    };
    match sdk {
        Ok(sdk) => prop_assert!(equal(read, ours, sdk), "the outputs differ on {}", body),
        Err(e) => prop_assert!(
            false,
            "the SDK failed where the reader read: {:?}\n{}",
            e,
            body
        ),
    }
    Ok(true)
}

fn style() -> impl Strategy<Value = Style> {
    (any::<bool>(), any::<bool>()).prop_map(|(escape_all, spaced)| Style { escape_all, spaced })
}

fn render(value: &Json, style: Style) -> String {
    let mut out = String::new();
    write_json(&mut out, value, style);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Every well-formed answer is read, and read as the SDK reads it.
    #[test]
    fn query_answers_read_as_the_sdk_reads_them(answer in query_answer(), style in style()) {
        let body = render(&answer, style);
        prop_assert!(agree(Read::Query, &body)?, "the reader gave way on {}", body);
    }

    #[test]
    fn get_item_answers_read_as_the_sdk_reads_them(answer in get_item_answer(), style in style()) {
        let body = render(&answer, style);
        prop_assert!(agree(Read::GetItem, &body)?, "the reader gave way on {}", body);
    }

    #[test]
    fn batch_answers_read_as_the_sdk_reads_them(answer in batch_answer(), style in style()) {
        let body = render(&answer, style);
        prop_assert!(agree(Read::BatchGetItem, &body)?, "the reader gave way on {}", body);
    }

    /// Bytes changed at random: where the reader still reads them, the SDK reads the same; where
    /// it does not, the SDK's answer (output or error) is what a caller gets.
    #[test]
    fn damaged_answers_are_read_alike_or_left_to_the_sdk(
        answer in query_answer(),
        cuts in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let mut bytes = render(&answer, Style { escape_all: false, spaced: false }).into_bytes();
        for (at, byte) in cuts {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        if let Ok(body) = String::from_utf8(bytes) {
            agree(Read::Query, &body)?;
        }
    }
}

/// Shapes the reader leaves to the SDK, which reads them its own way: each is still answered
/// as the SDK answers it.
#[test]
fn what_the_reader_does_not_know_goes_to_the_sdk() {
    for (read, body) in [
        // `null` for a field, a member of a value, an item's attribute.
        (Read::Query, r#"{"Items":null,"Count":0}"#),
        (Read::Query, r#"{"Items":[{"a":null}],"Count":1}"#),
        (
            Read::Query,
            r#"{"Items":[{"a":{"S":"x","N":null}}],"Count":1}"#,
        ),
        (Read::GetItem, r#"{"Item":null}"#),
        // A type the reader does not know, and a union's `__type`.
        (Read::GetItem, r#"{"Item":{"a":{"X":"1"}}}"#),
        (Read::GetItem, r#"{"Item":{"a":{"__type":"t","S":"1"}}}"#),
        // Keys left unread by a batch.
        (
            Read::BatchGetItem,
            r#"{"Responses":{},"UnprocessedKeys":{"t":{"Keys":[{"id":{"S":"1"}}]}}}"#,
        ),
        // A count that is not an `i32`.
        (Read::Query, r#"{"Items":[],"Count":1.0}"#),
        (Read::Query, r#"{"Items":[],"Count":4294967296}"#),
        // Not base64, and base64 with an escape (which the SDK does not unescape).
        (Read::GetItem, r#"{"Item":{"a":{"B":"!!"}}}"#),
        (
            Read::GetItem,
            r#"{"Item":{"a":{"B":"\u0041\u0041\u003d\u003d"}}}"#,
        ),
    ] {
        let (ours, sdk) = both(read, body);
        assert!(ours.is_none(), "the reader read {body}");
        // And the fast deserialiser answers what the SDK answers.
        match (
            Reader(read).deserialize_nonstreaming(&response(200, body)),
            sdk,
        ) {
            (Ok(fast), Ok(sdk)) => assert!(equal(read, fast, sdk), "{body}"),
            (Err(fast), Err(sdk)) => assert_eq!(format!("{fast:?}"), format!("{sdk:?}"), "{body}"),
            (fast, sdk) => panic!("{body}: {fast:?} against the SDK's {sdk:?}"),
        }
    }
}

/// An error status goes to the SDK's error deserialiser, with its code.
#[test]
fn errors_are_the_sdks() {
    let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}"#;
    let fast = Reader(Read::Query).deserialize_nonstreaming(&response(400, body));
    let sdk = Read::Query.by_the_sdk(&response(400, body));
    assert!(fast.is_err() && sdk.is_err());
    assert_eq!(format!("{fast:?}"), format!("{sdk:?}"));
}
