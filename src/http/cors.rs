//! CORS: which browser origins may call the API. None by default, so a browser page from another
//! origin cannot read responses; the quick start allows localhost on any port.

use std::{fmt, str::FromStr, sync::Arc, time::Duration};

use axum::http::{HeaderName, HeaderValue, Method, header, request::Parts};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// Allowed browser origins: exact origins such as `https://app.example.com`, origins with any
/// port such as `http://localhost:*`, or `*` for every origin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedOrigins(Arc<Vec<OriginPattern>>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum OriginPattern {
    Any,
    /// `scheme://host:port` (or without port), compared exactly.
    Exact(String),
    /// `scheme://host:` followed by any port number.
    AnyPort(String),
}

/// An allowed-origin entry that is not an origin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not an origin: use scheme://host[:port] (for example https://app.example.com or http://localhost:*), or *"
)]
pub struct OriginError(String);

impl FromStr for AllowedOrigins {
    type Err = OriginError;

    /// A comma-separated list; empty entries are ignored.
    fn from_str(list: &str) -> Result<Self, Self::Err> {
        let patterns = list
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(parse_pattern)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self(Arc::new(patterns)))
    }
}

impl fmt::Display for AllowedOrigins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entries: Vec<String> = self
            .0
            .iter()
            .map(|pattern| match pattern {
                OriginPattern::Any => "*".to_owned(),
                OriginPattern::Exact(origin) => origin.clone(),
                OriginPattern::AnyPort(prefix) => format!("{prefix}*"),
            })
            .collect();
        f.write_str(&entries.join(","))
    }
}

fn parse_pattern(entry: &str) -> Result<OriginPattern, OriginError> {
    if entry == "*" {
        return Ok(OriginPattern::Any);
    }
    let invalid = || OriginError(entry.to_owned());
    let entry = entry.to_ascii_lowercase();
    let (scheme, rest) = entry.split_once("://").ok_or_else(invalid)?;
    if scheme != "http" && scheme != "https" {
        return Err(invalid());
    }
    let (host, any_port) = match rest.strip_suffix(":*") {
        Some(host) => (host, true),
        None => (rest, false),
    };
    let valid_host = !host.is_empty()
        && !host.contains(['/', '?', '#', '@', '*', ' '])
        && host.parse::<axum::http::uri::Authority>().is_ok()
        && (!any_port || !host.trim_start_matches('[').contains(':') || host.ends_with(']'));
    if !valid_host {
        return Err(invalid());
    }
    Ok(if any_port {
        OriginPattern::AnyPort(format!("{scheme}://{host}:"))
    } else {
        OriginPattern::Exact(format!("{scheme}://{host}"))
    })
}

impl AllowedOrigins {
    /// Whether no origin is allowed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a browser's `Origin` is allowed.
    pub fn allows(&self, origin: &str) -> bool {
        self.0.iter().any(|pattern| match pattern {
            OriginPattern::Any => true,
            OriginPattern::Exact(exact) => origin.eq_ignore_ascii_case(exact),
            OriginPattern::AnyPort(prefix) => {
                origin
                    .get(..prefix.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
                    && origin[prefix.len()..].parse::<u16>().is_ok()
            }
        })
    }

    /// The CORS layer, or none at all when no origin is allowed (browsers then refuse to share
    /// responses with other origins).
    pub(super) fn layer(&self) -> Option<CorsLayer> {
        if self.is_empty() {
            return None;
        }
        let origins = self.clone();
        let allow = AllowOrigin::predicate(move |origin: &HeaderValue, _: &Parts| {
            origin.to_str().is_ok_and(|origin| origins.allows(origin))
        });
        Some(
            CorsLayer::new()
                .allow_origin(allow)
                .allow_methods([Method::GET, Method::POST])
                .allow_headers([
                    header::CONTENT_TYPE,
                    header::ACCEPT,
                    // Bearer tokens.
                    header::AUTHORIZATION,
                    // Sent by Apollo Client and its CSRF-prevention convention.
                    HeaderName::from_static("apollographql-client-name"),
                    HeaderName::from_static("apollographql-client-version"),
                    HeaderName::from_static("apollo-require-preflight"),
                    HeaderName::from_static("x-apollo-operation-name"),
                ])
                .max_age(Duration::from_secs(600)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse_and_match() {
        let origins: AllowedOrigins = "https://app.example.com, http://localhost:*,http://[::1]:*"
            .parse()
            .unwrap();
        assert!(origins.allows("https://app.example.com"));
        assert!(origins.allows("HTTPS://APP.EXAMPLE.COM"));
        assert!(origins.allows("http://localhost:3000"));
        assert!(origins.allows("http://[::1]:5173"));
        assert!(!origins.allows("http://localhost"));
        assert!(!origins.allows("http://localhost:3000.evil.com"));
        assert!(!origins.allows("http://localhost.evil.com:3000"));
        assert!(!origins.allows("https://localhost:3000"));
        assert!(!origins.allows("http://app.example.com"));
        assert!(!origins.allows("https://app.example.com.evil.com"));
        assert!(!origins.allows("null"));
        assert_eq!(
            origins.to_string(),
            "https://app.example.com,http://localhost:*,http://[::1]:*"
        );

        assert!("".parse::<AllowedOrigins>().unwrap().is_empty());
        assert!("*".parse::<AllowedOrigins>().unwrap().allows("https://x.y"));
        for bad in [
            "localhost:3000",
            "ftp://x.y",
            "https://x.y/path",
            "https://",
            "https://*.example.com",
            "https://x.y?q",
            "https://user@x.y",
        ] {
            assert!(bad.parse::<AllowedOrigins>().is_err(), "{bad}");
        }
    }
}
