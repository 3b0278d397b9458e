//! Fetching a JWKS over HTTPS (or plain HTTP on loopback), with hyper-util's client over
//! hyper-rustls: the stack the AWS SDK already brings, with the platform's root certificates.

use std::{net::IpAddr, time::Duration};

use http::{Request, StatusCode, Uri, header};
use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};

use super::AuthSetupError;

/// The largest JWKS document read. Real ones are a few KiB.
const MAX_JWKS_BYTES: usize = 512 * 1024;

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum FetchError {
    #[error("the JWKS request failed")]
    Request(#[source] hyper_util::client::legacy::Error),
    #[error("the JWKS endpoint answered {0}")]
    Status(StatusCode),
    #[error("the JWKS response could not be read (or is over 512 KiB)")]
    Body(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// An HTTP client for one JWKS URL.
#[derive(Debug, Clone)]
pub(super) struct Fetcher {
    uri: Uri,
    client: Transport,
}

#[derive(Debug, Clone)]
enum Transport {
    Tls(Client<HttpsConnector<HttpConnector>, Empty<Bytes>>),
    /// Plain HTTP, only ever to a loopback address.
    Plain(Client<HttpConnector, Empty<Bytes>>),
}

impl Fetcher {
    /// A client for `url`, which must be `https`, or `http` to a loopback host (a sidecar, or a
    /// test). Connections give up after `connect_timeout`; the caller bounds the whole fetch.
    pub(super) fn new(url: &str, connect_timeout: Duration) -> Result<Self, AuthSetupError> {
        let uri: Uri = url
            .parse()
            .map_err(|source| AuthSetupError::InvalidJwksUrl {
                url: url.to_owned(),
                source,
            })?;
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(connect_timeout));
        http.set_nodelay(true);
        let builder = Client::builder(TokioExecutor::new());
        let client = match (uri.scheme_str(), uri.host()) {
            (Some("https"), Some(_)) => {
                http.enforce_http(false);
                let https = HttpsConnectorBuilder::new()
                    .with_provider_and_native_roots(rustls::crypto::aws_lc_rs::default_provider())
                    .map_err(AuthSetupError::RootCertificates)?
                    .https_only()
                    .enable_http1()
                    .wrap_connector(http);
                Transport::Tls(builder.build(https))
            }
            (Some("http"), Some(host)) if is_loopback(host) => {
                Transport::Plain(builder.build(http))
            }
            _ => return Err(AuthSetupError::InsecureJwksUrl(url.to_owned())),
        };
        Ok(Self { uri, client })
    }

    /// The JWKS URL.
    pub(super) fn uri(&self) -> &Uri {
        &self.uri
    }

    /// GETs the document. Not bounded in time here: the caller wraps it in its timeout.
    pub(super) async fn fetch(&self) -> Result<Bytes, FetchError> {
        let request = || {
            Request::get(self.uri.clone())
                .header(header::ACCEPT, "application/json, application/jwk-set+json")
                .body(Empty::new())
        };
        // Building a GET from a URI that already parsed cannot fail.
        let Ok(request) = request() else {
            return Err(FetchError::Status(StatusCode::BAD_REQUEST));
        };
        let response = match &self.client {
            Transport::Tls(client) => client.request(request).await,
            Transport::Plain(client) => client.request(request).await,
        }
        .map_err(FetchError::Request)?;
        if response.status() != StatusCode::OK {
            return Err(FetchError::Status(response.status()));
        }
        let body = Limited::new(response.into_body(), MAX_JWKS_BYTES)
            .collect()
            .await
            .map_err(FetchError::Body)?;
        Ok(body.to_bytes())
    }
}

/// `localhost`, or a loopback IP address (`127.0.0.0/8`, `[::1]`).
fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jwks_urls_must_be_https_unless_on_loopback() {
        let timeout = Duration::from_secs(1);
        for url in [
            "http://127.0.0.1:8080/jwks.json",
            "http://localhost/jwks",
            "http://[::1]:9000/.well-known/jwks.json",
        ] {
            assert!(Fetcher::new(url, timeout).is_ok(), "{url}");
        }
        for url in [
            "http://issuer.example.com/jwks.json",
            "http://10.0.0.1/jwks",
            "http://localhost.example.com/jwks",
            "ftp://127.0.0.1/jwks",
            "/jwks.json",
            "not a url",
        ] {
            assert!(Fetcher::new(url, timeout).is_err(), "{url}");
        }
    }
}
