use super::*;

#[test]
fn the_exposition_names_every_family_and_its_labels() {
    let metrics = Metrics::new();
    let (route, method) = labels("/graphql", "POST");
    metrics.http_request(route, method, 200, Duration::from_millis(3));
    let (route, method) = labels("/no/such/route/abc", "BREW");
    metrics.http_request(route, method, 404, Duration::from_millis(1));
    metrics.graphql_error("BAD_USER_INPUT");
    metrics.cursor_rejected("Customer.orders");
    metrics.auth_rejected();
    metrics.connection_opened(Listener::Api);
    metrics.connection_opened(Listener::Api);
    metrics.connection_closed(Listener::Api);
    metrics.connection_timed_out(Listener::Api, "header_read");
    metrics.connection_cap_reached(Listener::Health);
    metrics.rate_limited("requests");
    metrics.rate_limit_callers().set(7);
    metrics.dynamodb_call(
        "Query",
        Some("Orders"),
        Outcome::Ok,
        Duration::from_millis(2),
    );
    metrics.table_cost(
        "Orders",
        CallCost {
            capacity: 1.5,
            evaluated: 40,
            returned: 3,
        },
    );
    let text = metrics.render();
    for line in [
        r#"dynarelay_http_requests_total{route="/graphql",method="POST",status="200"} 1"#,
        r#"dynarelay_http_requests_total{route="other",method="other",status="404"} 1"#,
        r#"dynarelay_http_request_duration_seconds_count{route="/graphql"} 1"#,
        r#"dynarelay_graphql_errors_total{code="BAD_USER_INPUT"} 1"#,
        r#"dynarelay_cursor_rejections_total{connection="Customer.orders"} 1"#,
        "dynarelay_auth_rejected_total 1",
        r#"dynarelay_http_connections_open{listener="api"} 1"#,
        r#"dynarelay_http_connections_timed_out_total{listener="api",timeout="header_read"} 1"#,
        r#"dynarelay_http_connection_cap_reached_total{listener="health"} 1"#,
        r#"dynarelay_rate_limited_total{reason="requests"} 1"#,
        "dynarelay_rate_limit_callers 7",
        r#"dynarelay_dynamodb_calls_total{operation="Query",table="Orders",outcome="ok"} 1"#,
        r#"dynarelay_dynamodb_consumed_capacity_units_total{table="Orders"} 1.5"#,
        r#"dynarelay_dynamodb_items_evaluated_total{table="Orders"} 40"#,
        r#"dynarelay_dynamodb_items_returned_total{table="Orders"} 3"#,
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
    assert!(
        !text.contains("abc"),
        "a client path became a label:\n{text}"
    );
}

#[test]
fn outcomes_follow_error_codes() {
    assert_eq!(Outcome::of_error_code(None), Outcome::Unavailable);
    assert_eq!(
        Outcome::of_error_code(Some("ThrottlingException")),
        Outcome::Throttled
    );
    assert_eq!(
        Outcome::of_error_code(Some("LimitExceededException")),
        Outcome::Throttled
    );
    assert_eq!(
        Outcome::of_error_code(Some("InternalServerError")),
        Outcome::Unavailable
    );
    assert_eq!(
        Outcome::of_error_code(Some("ConditionalCheckFailedException")),
        Outcome::ConditionFailed
    );
    assert_eq!(
        Outcome::of_error_code(Some("ValidationException")),
        Outcome::Rejected
    );
}

#[test]
fn usage_adds_up() {
    let usage = Usage::default();
    usage.add(CallCost {
        capacity: 0.5,
        evaluated: 10,
        returned: 2,
    });
    usage.add(CallCost {
        capacity: 1.0,
        evaluated: 5,
        returned: 5,
    });
    assert_eq!(
        usage.totals(),
        UsageTotals {
            dynamodb_calls: 2,
            consumed_capacity_units: 1.5,
            items_evaluated: 15,
            items_returned: 7,
        }
    );
}
