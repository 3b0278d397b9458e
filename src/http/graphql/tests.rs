use super::*;

fn negotiate(accept: &str) -> Option<Format> {
    Format::negotiate(Some(&HeaderValue::from_str(accept).unwrap()))
}

#[test]
fn accept_negotiation_follows_graphql_over_http() {
    use Format::{GraphqlResponse, Json};
    assert_eq!(Format::negotiate(None), Some(Json));
    let cases = [
        ("", Some(Json)),
        ("application/graphql-response+json", Some(GraphqlResponse)),
        ("application/json", Some(Json)),
        ("*/*", Some(Json)),
        ("application/*", Some(Json)),
        // Apollo Client's default.
        (
            "application/graphql-response+json,application/json;q=0.9",
            Some(GraphqlResponse),
        ),
        // GraphiQL's default.
        (
            "application/graphql-response+json, application/json, multipart/mixed",
            Some(GraphqlResponse),
        ),
        (
            "application/graphql-response+json;q=0.5, application/json",
            Some(Json),
        ),
        ("application/json;q=0, */*", None),
        ("*/*, application/json;q=0", None),
        ("application/graphql-response+json;q=0, */*", Some(Json)),
        ("text/html", None),
        ("text/html, application/xml;q=0.9", None),
        ("application/json;q=nonsense", None),
        ("APPLICATION/JSON", Some(Json)),
    ];
    for (accept, expected) in cases {
        assert_eq!(negotiate(accept), expected, "Accept: {accept}");
    }
}

/// Why `GET` requests are parsed here and not with async-graphql-axum's `GraphQLRequest`
/// (docs/src/reference/decisions.md): the query-string parser it uses reads `operation_name`, so the
/// spec's `operationName` is lost. When this fails, a release reads `operationName`:
/// reconsider.
#[test]
fn async_graphql_s_query_string_parser_loses_operation_name() {
    let parsed = async_graphql::http::parse_query_string("query=%7Ba%7D&operationName=Q")
        .expect("a query string");
    assert_eq!(parsed.operation_name, None);
    // Control: its own spelling is read.
    let parsed = async_graphql::http::parse_query_string("query=%7Ba%7D&operation_name=Q")
        .expect("a query string");
    assert_eq!(parsed.operation_name.as_deref(), Some("Q"));
}

#[test]
fn post_content_type_must_be_utf8_json() {
    let ok = |value: &str| check_content_type(Some(&HeaderValue::from_str(value).unwrap()));
    assert!(check_content_type(None).is_err());
    assert!(ok("application/json").is_ok());
    assert!(ok("application/json; charset=utf-8").is_ok());
    assert!(ok("Application/JSON; charset=\"UTF-8\"").is_ok());
    assert!(ok("application/json; charset=latin1").is_err());
    assert!(ok("text/plain").is_err());
    assert!(ok("application/graphql").is_err());
    assert!(ok("application/x-www-form-urlencoded").is_err());
}
