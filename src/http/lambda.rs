//! The router as an AWS Lambda function: `lambda_http` turns each API Gateway (HTTP API v2 or
//! REST API v1), function URL or Application Load Balancer event into an HTTP request for the
//! same router `serve` runs, and its response back into the event's answer. Limits,
//! authentication, cursors and errors are the router's, so they are the same as `serve`'s.
//!
//! API Gateway puts a named stage in front of the path (`/prod/graphql`); it is taken off, so
//! that the API answers at `/graphql` under every stage, as `serve` does.
//!
//! The other difference is the client's address. There is no TCP peer: API Gateway and function
//! URLs give the caller's address in the event (`sourceIp`), set by AWS and so believed; it
//! becomes the request's peer address, as `serve` would see it, for the per-address rate
//! limits. An Application Load Balancer's event names no caller, but the balancer appends the
//! address it saw to `X-Forwarded-For` (its default `append` processing), so the last entry is
//! the balancer's word: it becomes the peer and is taken off the header, and what is left is
//! what the caller wrote, read as `serve` reads a header from its peer (believed only when that
//! peer is one of `--trusted-proxies`, such as a CDN in front of the balancer).

use std::net::{IpAddr, SocketAddr};

use axum::{
    Router,
    extract::ConnectInfo,
    http::{HeaderMap, HeaderValue, Uri},
};
use lambda_http::{Request, RequestExt, request::RequestContext};
use tower::{ServiceBuilder, ServiceExt};

use crate::telemetry::Traces;

/// Answers Lambda events with `router` until the runtime stops. With `traces`, each event's
/// spans are exported before its answer is given: Lambda may freeze the process until the next
/// event once it is.
pub async fn run(router: Router, traces: Option<Traces>) -> Result<(), lambda_http::Error> {
    let service = ServiceBuilder::new()
        .map_request(prepare)
        .service(router)
        .and_then(move |response| {
            let traces = traces.clone();
            async move {
                if let Some(traces) = traces {
                    traces.flush().await;
                }
                Ok::<_, std::convert::Infallible>(response)
            }
        });
    lambda_http::run(service).await
}

/// `request` as `serve` would see it: the caller's address from its event, when the event has
/// one, as the peer; the API Gateway stage off the path.
fn prepare(mut request: Request) -> Request {
    let caller = match request.request_context_ref() {
        Some(RequestContext::Alb(_)) => balancer_appended(request.headers_mut()),
        _ => source_ip(&request),
    };
    if let Some(ip) = caller {
        request
            .extensions_mut()
            .insert(ConnectInfo(SocketAddr::new(ip, 0)));
    }
    if let Some(uri) = without_stage(&request) {
        *request.uri_mut() = uri;
    }
    request
}

/// The request's URI without the API Gateway stage `lambda_http` put in front of its path, when
/// there is one (`$default`, an HTTP API's unnamed stage, is never in the path).
fn without_stage(request: &Request) -> Option<Uri> {
    let stage = match request.request_context_ref()? {
        RequestContext::ApiGatewayV2(context) => context.stage.as_deref(),
        RequestContext::ApiGatewayV1(context) => context.stage.as_deref(),
        _ => None,
    }?;
    if stage == "$default" {
        return None;
    }
    let uri = request.uri();
    let rest = uri.path().strip_prefix('/')?.strip_prefix(stage)?;
    let path = match rest {
        "" => "/",
        rest if rest.starts_with('/') => rest,
        _ => return None,
    };
    let path_and_query = match uri.query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query.parse().ok()?);
    Uri::from_parts(parts).ok()
}

/// The address API Gateway or a function URL saw the request come from.
fn source_ip(request: &Request) -> Option<IpAddr> {
    let ip = match request.request_context_ref()? {
        RequestContext::ApiGatewayV2(context) => context.http.source_ip.as_deref(),
        RequestContext::ApiGatewayV1(context) => context.identity.source_ip.as_deref(),
        // An Application Load Balancer's event names no caller (and the enum is
        // non-exhaustive).
        _ => None,
    }?;
    ip.parse().ok()
}

/// The address an Application Load Balancer appended to `X-Forwarded-For`: its last entry,
/// taken off the header (the header goes when nothing is left). `None`, with the header as it
/// was, when there is no entry or the last is not an address.
fn balancer_appended(headers: &mut HeaderMap) -> Option<IpAddr> {
    use crate::http::rate_limit::{FORWARDED_FOR, parse_hop};
    // Several headers are one list, in order: the last entry is the last header's, and only
    // that header changes.
    let mut values: Vec<HeaderValue> = headers.get_all(&FORWARDED_FOR).iter().cloned().collect();
    let last = values.pop()?;
    let last = last.to_str().ok()?;
    let (rest, hop) = match last.rsplit_once(',') {
        Some((rest, hop)) => (rest.trim_end(), hop),
        None => ("", last),
    };
    let ip = parse_hop(hop.trim())?;
    if !rest.is_empty() {
        // A part of a header value is a header value too.
        values.push(HeaderValue::from_str(rest).ok()?);
    }
    headers.remove(&FORWARDED_FOR);
    for value in values {
        headers.append(&FORWARDED_FOR, value);
    }
    Some(ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event of each kind, as AWS sends it, through `lambda_http`'s own parsing.
    fn event(json: &str) -> Request {
        lambda_http::request::from_str(json).expect("an event lambda_http reads")
    }

    #[test]
    fn the_caller_and_the_path_are_what_serve_would_see() {
        let rest = event(
            r#"{"resource":"/{proxy+}","path":"/graphql","httpMethod":"POST",
                "headers":{},"multiValueHeaders":{},"queryStringParameters":{"a":"1"},
                "multiValueQueryStringParameters":{"a":["1"]},
                "requestContext":{"stage":"prod","httpMethod":"POST","path":"/prod/graphql",
                  "identity":{"sourceIp":"198.51.100.7"}},
                "body":"","isBase64Encoded":false}"#,
        );
        let http_api = event(
            r#"{"version":"2.0","routeKey":"$default","rawPath":"/graphql","rawQueryString":"",
                "headers":{},"requestContext":{"stage":"$default","http":{"method":"POST",
                  "path":"/graphql","protocol":"HTTP/1.1","sourceIp":"2001:db8::1",
                  "userAgent":"test"}},"isBase64Encoded":false}"#,
        );
        let named_stage = event(
            r#"{"version":"2.0","routeKey":"$default","rawPath":"/dev/graphql",
                "rawQueryString":"","headers":{},"requestContext":{"stage":"dev",
                  "http":{"method":"GET","path":"/dev/graphql","protocol":"HTTP/1.1",
                  "sourceIp":"203.0.113.5","userAgent":"test"}},"isBase64Encoded":false}"#,
        );
        let seen = |request: Request| {
            let request = prepare(request);
            (
                request.uri().path_and_query().map(ToString::to_string),
                peer(&request),
            )
        };
        assert_eq!(
            seen(rest),
            (Some("/graphql?a=1".into()), Some("198.51.100.7".into()))
        );
        assert_eq!(
            seen(http_api),
            (Some("/graphql".into()), Some("2001:db8::1".into()))
        );
        assert_eq!(
            seen(named_stage),
            (Some("/graphql".into()), Some("203.0.113.5".into()))
        );
    }

    /// An Application Load Balancer's event, with `headers` (a JSON object's members) and, when
    /// `multi`, in the multi-value form the balancer sends when the target group asks for it.
    fn alb(headers: &str, multi: bool) -> Request {
        let headers = if multi {
            format!(r#""multiValueHeaders":{{{headers}}}"#)
        } else {
            format!(r#""headers":{{{headers}}}"#)
        };
        event(&format!(
            r#"{{"httpMethod":"POST","path":"/graphql",{headers},"requestContext":{{"elb":
                {{"targetGroupArn":"arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/t/1"}}}},
                "isBase64Encoded":false,"body":""}}"#
        ))
    }

    /// The peer address a prepared request carries.
    fn peer(request: &Request) -> Option<String> {
        request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip().to_string())
    }

    /// The peer `prepare` gives an event, and the `X-Forwarded-For` it leaves.
    fn caller(request: Request) -> (Option<String>, Vec<String>) {
        let request = prepare(request);
        let forwarded = request
            .headers()
            .get_all("x-forwarded-for")
            .iter()
            .map(|value| value.to_str().unwrap().to_owned())
            .collect();
        (peer(&request), forwarded)
    }

    #[test]
    fn a_load_balancers_caller_is_the_address_it_appended() {
        // The balancer's own entry, with nothing before it.
        assert_eq!(
            caller(alb(r#""x-forwarded-for":"72.12.164.125""#, false)),
            (Some("72.12.164.125".into()), vec![])
        );
        // What the caller wrote stays, to be believed only from a trusted proxy.
        assert_eq!(
            caller(alb(
                r#""x-forwarded-for":"10.1.1.1, 2001:db8::7,198.51.100.20""#,
                false
            )),
            (
                Some("198.51.100.20".into()),
                vec!["10.1.1.1, 2001:db8::7".into()]
            )
        );
        // Several headers are one list: the last entry is the last header's.
        assert_eq!(
            caller(alb(
                r#""x-forwarded-for":["203.0.113.9","10.0.0.1, 2001:db8::9"]"#,
                true
            )),
            (
                Some("2001:db8::9".into()),
                vec!["203.0.113.9".into(), "10.0.0.1".into()]
            )
        );
        // No entry, or a last entry that is no address: no caller, and the header as it was.
        assert_eq!(caller(alb("", false)), (None, vec![]));
        assert_eq!(
            caller(alb(r#""x-forwarded-for":"198.51.100.20, unknown""#, false)),
            (None, vec!["198.51.100.20, unknown".into()])
        );
    }
}
