//! Bearer-token authentication at the HTTP edge. Every refused request gets the one coded 401
//! (`WWW-Authenticate: Bearer`, `UNAUTHENTICATED`, a fixed message) over POST and GET, and a
//! counter on the SDK client shows that it never reached DynamoDB (the query reads a user).

use std::time::{Duration, Instant};

use axum::{
    Router,
    body::Body,
    http::{Method, Request, StatusCode, header},
};
use dynarelay::{
    auth::{AuthSettings, Authenticator, KeySource},
    http::{HttpSettings, router},
    pagination::PageLimits,
};
use jsonwebtoken::Algorithm;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::helpers::{
    AUDIENCE, Answer, ISSUER, Running, TestApp, TestIssuer, app_state, claims, error_code,
    graphql_with_authorization, hs256, metric_sum, metrics_of, now, test_ring, unsigned, with,
};

/// Reads one user: a GetItem when it runs.
const QUERY: &str = r#"{ user(userId: "ivy") { name } }"#;

/// The shop on fresh tables, with the user `ivy`, checking tokens as `settings` say.
async fn guarded(settings: AuthSettings) -> (TestApp, Router) {
    let auth = Authenticator::new(settings)
        .await
        .expect("the authenticator starts");
    guarded_by(Some(auth)).await
}

async fn guarded_by(auth: Option<Authenticator>) -> (TestApp, Router) {
    let app = TestApp::spawn().await;
    app.put_user("ivy").await;
    let http = HttpSettings {
        auth,
        ..HttpSettings::default()
    };
    let router = router(app_state(
        &app.store,
        PageLimits::default(),
        &test_ring(),
        http,
    ));
    (app, router)
}

fn bearer(token: &str) -> Vec<u8> {
    format!("Bearer {token}").into_bytes()
}

fn assert_refused(answer: &Answer, case: &str) {
    assert_eq!(
        answer.status,
        StatusCode::UNAUTHORIZED,
        "{case}: {answer:?}"
    );
    assert_eq!(answer.headers[header::WWW_AUTHENTICATE], "Bearer", "{case}");
    assert_eq!(error_code(&answer.body), Some("UNAUTHENTICATED"), "{case}");
    assert_eq!(
        answer.body,
        json!({ "errors": [{
            "message": "The request's credentials are not valid.",
            "extensions": { "code": "UNAUTHENTICATED" },
        }] }),
        "{case}: one fixed message, nothing else"
    );
}

/// Sends `authorization` over POST and GET; both are refused, and DynamoDB is not called.
async fn assert_refused_before_any_read(
    app: &TestApp,
    router: &Router,
    authorization: &[u8],
    case: &str,
) {
    let before = app.calls.snapshot();
    for method in [Method::POST, Method::GET] {
        let answer =
            graphql_with_authorization(router, method.clone(), Some(authorization), QUERY).await;
        assert_refused(&answer, &format!("{case}, {method}"));
    }
    assert_eq!(
        app.calls.snapshot(),
        before,
        "{case}: a refused request reached DynamoDB"
    );
}

/// Sends `authorization` over POST and GET; both are served, reading DynamoDB.
async fn assert_served(app: &TestApp, router: &Router, authorization: Option<&[u8]>, case: &str) {
    for method in [Method::POST, Method::GET] {
        let before = app.calls.snapshot();
        let answer = graphql_with_authorization(router, method.clone(), authorization, QUERY).await;
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "{case}, {method}: {answer:?}"
        );
        assert!(
            answer.body.get("errors").is_none(),
            "{case}, {method}: {answer:?}"
        );
        assert_eq!(answer.body["data"]["user"]["name"], "User ivy", "{case}");
        assert_ne!(app.calls.snapshot(), before, "{case}, {method}: no read");
    }
}

async fn rejections(router: &Router) -> f64 {
    metric_sum(&metrics_of(router).await, "dynarelay_auth_rejected_total").unwrap()
}

#[tokio::test]
async fn a_valid_rs256_token_is_accepted_and_the_page_served() {
    let issuer = TestIssuer::start().await;
    let (app, router) = guarded(issuer.settings()).await;
    let token = issuer.mint(&claims("user-1"));
    // Twice: the second time the token comes from the cache.
    for round in ["first", "cached"] {
        assert_served(&app, &router, Some(&bearer(&token)), round).await;
    }
    let lower = format!("bearer {token}");
    assert_served(&app, &router, Some(lower.as_bytes()), "lower-case scheme").await;
    assert_eq!(issuer.hits(), 1, "the JWKS is fetched once, at start");
    assert_eq!(rejections(&router).await, 0.0);

    // And over a real socket.
    let server = Running::serve(router.clone()).await;
    let response = reqwest::Client::new()
        .post(server.url("/graphql"))
        .bearer_auth(&token)
        .json(&json!({ "query": QUERY }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["data"]["user"]["name"], "User ivy", "{body}");
}

#[tokio::test]
async fn a_request_without_authorization_is_anonymous_and_served() {
    let issuer = TestIssuer::start().await;
    let (app, router) = guarded(issuer.settings()).await;
    assert_served(&app, &router, None, "no header").await;

    // Without authentication configured, the header is not read at all.
    let (open_app, open) = guarded_by(None).await;
    assert_served(&open_app, &open, Some(b"Bearer not-a-token"), "auth off").await;
}

#[tokio::test]
async fn a_forged_signature_is_refused() {
    let issuer = TestIssuer::start().await;
    issuer.add_key("attacker", false);
    let (app, router) = guarded(issuer.settings()).await;
    let header = json!({ "alg": "RS256", "typ": "JWT", "kid": "key-1" });

    // Signed by another key, naming the issuer's.
    let other_key = issuer.mint_signed_by("attacker", &header, &claims("user-1"));
    // The issuer's signature over other claims.
    let genuine = issuer.mint_with(&header, &claims("user-1"));
    let (head, rest) = genuine.split_once('.').unwrap();
    let (_, signature) = rest.split_once('.').unwrap();
    let admin = issuer.mint_with(&header, &with(claims("user-1"), json!({ "sub": "admin" })));
    let admin_claims = admin.split('.').nth(1).unwrap();
    let swapped = format!("{head}.{admin_claims}.{signature}");
    // A flipped bit in the signature.
    let mut flipped = genuine.clone().into_bytes();
    let last = flipped.len() - 5;
    flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();

    for (case, token) in [
        ("signed by another key", other_key),
        ("claims swapped under a genuine signature", swapped),
        ("a flipped signature byte", flipped),
    ] {
        assert_refused_before_any_read(&app, &router, &bearer(&token), case).await;
    }
    assert_eq!(rejections(&router).await, 6.0, "three tokens, POST and GET");
    assert_served(&app, &router, Some(&bearer(&genuine)), "the genuine token").await;
}

#[tokio::test]
async fn an_expired_token_is_refused() {
    let issuer = TestIssuer::start().await;
    let (app, router) = guarded(issuer.settings()).await;
    // The leeway is 30 s.
    let expired = with(claims("user-1"), json!({ "exp": now() - 120 }));
    let token = issuer.mint(&expired);
    assert_refused_before_any_read(&app, &router, &bearer(&token), "expired").await;
    let no_exp = issuer.mint(&with(claims("user-1"), json!({ "exp": null })));
    assert_refused_before_any_read(&app, &router, &bearer(&no_exp), "no exp").await;
    let within_leeway = issuer.mint(&with(claims("user-1"), json!({ "exp": now() - 5 })));
    assert_served(
        &app,
        &router,
        Some(&bearer(&within_leeway)),
        "within leeway",
    )
    .await;
}

#[tokio::test]
async fn a_token_not_yet_valid_is_refused() {
    let issuer = TestIssuer::start().await;
    let (app, router) = guarded(issuer.settings()).await;
    let early = with(claims("user-1"), json!({ "nbf": now() + 120 }));
    let token = issuer.mint(&early);
    assert_refused_before_any_read(&app, &router, &bearer(&token), "nbf in 2 minutes").await;
    let within_leeway = issuer.mint(&with(claims("user-1"), json!({ "nbf": now() + 5 })));
    assert_served(
        &app,
        &router,
        Some(&bearer(&within_leeway)),
        "within leeway",
    )
    .await;
}

#[tokio::test]
async fn a_token_from_another_issuer_is_refused() {
    let issuer = TestIssuer::start().await;
    let (app, router) = guarded(issuer.settings()).await;
    for (case, iss) in [
        ("another issuer", json!("https://evil.test")),
        (
            "the issuer with a trailing slash",
            json!(format!("{ISSUER}/")),
        ),
        ("no issuer", Value::Null),
    ] {
        let token = issuer.mint(&with(claims("user-1"), json!({ "iss": iss })));
        assert_refused_before_any_read(&app, &router, &bearer(&token), case).await;
    }
}

#[tokio::test]
async fn a_token_for_another_audience_is_refused() {
    let issuer = TestIssuer::start().await;
    let (app, router) = guarded(issuer.settings()).await;
    for (case, aud) in [
        ("another audience", json!("billing")),
        ("other audiences", json!(["billing", "reports"])),
        ("no audience", Value::Null),
    ] {
        let token = issuer.mint(&with(claims("user-1"), json!({ "aud": aud })));
        assert_refused_before_any_read(&app, &router, &bearer(&token), case).await;
    }
    let among = issuer.mint(&with(
        claims("user-1"),
        json!({ "aud": ["billing", AUDIENCE] }),
    ));
    assert_served(&app, &router, Some(&bearer(&among)), "ours among others").await;
}

#[tokio::test]
async fn a_token_without_a_subject_is_refused() {
    let issuer = TestIssuer::start().await;
    let (app, router) = guarded(issuer.settings()).await;
    for (case, sub) in [
        ("no sub", Value::Null),
        ("empty sub", json!("")),
        ("numeric sub", json!(7)),
    ] {
        let token = issuer.mint(&with(claims("user-1"), json!({ "sub": sub })));
        assert_refused_before_any_read(&app, &router, &bearer(&token), case).await;
    }
}

#[tokio::test]
async fn an_unsigned_alg_none_token_is_refused() {
    let issuer = TestIssuer::start().await;
    let (app, router) = guarded(issuer.settings()).await;
    for alg in ["none", "None", "NONE", ""] {
        for kid in [json!("key-1"), Value::Null] {
            let header = with(json!({ "alg": alg, "typ": "JWT" }), json!({ "kid": kid }));
            let token = unsigned(&header, &claims("user-1"));
            let case = format!("alg {alg:?}, kid {kid}");
            assert_refused_before_any_read(&app, &router, &bearer(&token), &case).await;
        }
    }
    // An RS256 token with its signature stripped.
    let stripped = issuer.mint(&claims("user-1"));
    let stripped = format!("{}.", stripped.rsplit_once('.').unwrap().0);
    assert_refused_before_any_read(&app, &router, &bearer(&stripped), "signature stripped").await;
}

#[tokio::test]
async fn an_hs256_token_signed_with_the_rsa_public_key_is_refused() {
    let issuer = TestIssuer::start().await;
    let (app, router) = guarded(issuer.settings()).await;
    let (pem, der) = issuer.public_key("key-1");
    let n = issuer.jwks()["keys"][0]["n"].as_str().unwrap().to_owned();
    for (what, secret) in [
        ("PEM", pem.as_bytes()),
        ("DER", der.as_slice()),
        ("JWK n", n.as_bytes()),
    ] {
        for alg in ["HS256", "HS384", "HS512"] {
            for kid in [json!("key-1"), Value::Null] {
                let header = with(json!({ "alg": alg, "typ": "JWT" }), json!({ "kid": kid }));
                let token = hs256(&header, &claims("user-1"), secret);
                let case = format!("{alg} over the public key's {what}, kid {kid}");
                assert_refused_before_any_read(&app, &router, &bearer(&token), &case).await;
            }
        }
    }
    assert_eq!(issuer.hits(), 1, "no refetch for a known kid");
}

#[tokio::test]
async fn an_unknown_kid_refetches_the_jwks_once_per_interval() {
    let issuer = TestIssuer::start().await;
    issuer.add_key("key-2", false);
    let (app, router) = guarded(AuthSettings {
        jwks_refresh: Duration::from_secs(60),
        ..issuer.settings()
    })
    .await;
    assert_eq!(issuer.hits(), 1);
    let unknown = issuer.mint(&claims("user-1"));
    let before = app.calls.snapshot();

    // Concurrent requests share the one fetch (slowed, so that they overlap).
    issuer.set_delay(Duration::from_millis(100));
    let mut burst = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (router, header) = (router.clone(), bearer(&unknown));
        burst.spawn(async move {
            graphql_with_authorization(&router, Method::POST, Some(&header), QUERY).await
        });
    }
    while let Some(answer) = burst.join_next().await {
        assert_refused(&answer.unwrap(), "concurrent, unknown kid");
    }
    assert_eq!(issuer.hits(), 2, "one refetch for the burst");

    // Later requests within the interval do not fetch again, whatever kid they name.
    issuer.set_delay(Duration::ZERO);
    assert_refused_before_any_read(&app, &router, &bearer(&unknown), "unknown kid again").await;
    let ghost = issuer.mint_with(
        &json!({ "alg": "RS256", "kid": "ghost" }),
        &claims("user-1"),
    );
    assert_refused_before_any_read(&app, &router, &bearer(&ghost), "another unknown kid").await;
    assert_eq!(issuer.hits(), 2, "no refetch within the interval");
    assert_eq!(
        app.calls.snapshot(),
        before,
        "a refused request reached DynamoDB"
    );
}

#[tokio::test]
async fn a_jwks_endpoint_that_is_down_refuses_tokens_and_is_fetched_again_later() {
    let issuer = TestIssuer::start().await;
    issuer.set_down(true);
    let refresh = Duration::from_millis(300);
    // Down at start: not fatal.
    let (app, router) = guarded(AuthSettings {
        jwks_refresh: refresh,
        ..issuer.settings()
    })
    .await;
    assert_eq!(issuer.hits(), 1);
    let token = issuer.mint(&claims("user-1"));
    assert_refused_before_any_read(&app, &router, &bearer(&token), "JWKS down").await;
    assert_eq!(issuer.hits(), 2, "the first token fetches again, once");

    issuer.set_down(false);
    tokio::time::sleep(refresh + Duration::from_millis(50)).await;
    assert_served(&app, &router, Some(&bearer(&token)), "JWKS back").await;
    assert_eq!(issuer.hits(), 3);
}

#[tokio::test]
async fn a_slow_jwks_endpoint_is_bounded_by_the_timeout() {
    let issuer = TestIssuer::start().await;
    let timeout = Duration::from_millis(300);
    let settings = AuthSettings {
        jwks_timeout: timeout,
        ..issuer.settings()
    };
    let (app, router) = guarded(settings.clone()).await;
    issuer.set_delay(Duration::from_secs(10));

    // A new key the server must fetch, from an endpoint that takes 10 s.
    issuer.add_key("key-2", true);
    let token = issuer.mint(&claims("user-1"));
    let before = app.calls.snapshot();
    let started = Instant::now();
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (router, header) = (router.clone(), bearer(&token));
        requests.spawn(async move {
            graphql_with_authorization(&router, Method::POST, Some(&header), QUERY).await
        });
    }
    while let Some(answer) = requests.join_next().await {
        assert_refused(&answer.unwrap(), "slow JWKS");
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed >= timeout && elapsed < timeout * 5,
        "answered after {elapsed:?}, with a {timeout:?} timeout"
    );
    assert_eq!(
        app.calls.snapshot(),
        before,
        "a refused request reached DynamoDB"
    );

    // Starting against a slow endpoint is bounded too.
    let started = Instant::now();
    Authenticator::new(settings).await.unwrap();
    assert!(started.elapsed() < timeout * 5, "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_huge_authorization_header_is_refused() {
    let issuer = TestIssuer::start().await;
    let (app, router) = guarded(issuer.settings()).await;
    let mut padding = bearer("");
    padding.resize(16 * 1024, b'a');
    assert_refused_before_any_read(&app, &router, &padding, "16 KiB of token characters").await;
    // A genuine, well-signed token that is just too large.
    let fat = issuer.mint(&with(
        claims("user-1"),
        json!({ "pad": "x".repeat(9 * 1024) }),
    ));
    assert_refused_before_any_read(&app, &router, &bearer(&fat), "a 12 KiB signed token").await;
}

#[tokio::test]
async fn malformed_authorization_headers_are_refused() {
    let issuer = TestIssuer::start().await;
    let (app, router) = guarded(issuer.settings()).await;
    let token = issuer.mint(&claims("user-1"));
    let (head, rest) = token.split_once('.').unwrap();
    let (payload, _) = rest.split_once('.').unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", b"".to_vec()),
        ("Basic", b"Basic dXNlcjpwYXNz".to_vec()),
        (
            "another scheme with a good token",
            format!("Token {token}").into_bytes(),
        ),
        (
            "no space after the scheme",
            format!("Bearer{token}").into_bytes(),
        ),
        ("scheme only", b"Bearer".to_vec()),
        ("empty token", b"Bearer ".to_vec()),
        ("garbage", b"Bearer garbage".to_vec()),
        ("three garbage parts", b"Bearer a.b.c".to_vec()),
        ("two parts", format!("Bearer {head}.{payload}").into_bytes()),
        (
            "four parts",
            format!("Bearer {token}.{payload}").into_bytes(),
        ),
        (
            "a space inside",
            format!("Bearer {head} .{rest}").into_bytes(),
        ),
        (
            "a second token",
            format!("Bearer {token} {token}").into_bytes(),
        ),
        ("quoted", format!("Bearer \"{token}\"").into_bytes()),
        ("not ASCII", b"Bearer \xc3\xa9\xc3\xa9.\xff.\xfe".to_vec()),
        (
            "a JSON header",
            format!("Bearer {{}}.{payload}.AAAA").into_bytes(),
        ),
    ];
    for (case, header) in cases {
        assert_refused_before_any_read(&app, &router, &header, case).await;
    }
    assert_served(&app, &router, Some(&bearer(&token)), "the token itself").await;
}

#[tokio::test]
async fn a_rotated_key_is_accepted_after_the_refetch() {
    let issuer = TestIssuer::start().await;
    let refresh = Duration::from_millis(200);
    let (app, router) = guarded(AuthSettings {
        jwks_refresh: refresh,
        ..issuer.settings()
    })
    .await;
    let old = issuer.mint(&claims("user-1"));
    assert_served(&app, &router, Some(&bearer(&old)), "the first key").await;

    // The issuer publishes a new key and signs with it.
    issuer.add_key("key-2", true);
    let new = issuer.mint(&claims("user-1"));
    assert_served(&app, &router, Some(&bearer(&new)), "the new key").await;
    assert_eq!(issuer.hits(), 2, "one refetch for the new kid");
    assert_served(
        &app,
        &router,
        Some(&bearer(&old)),
        "the first key, still published",
    )
    .await;
    assert_eq!(issuer.hits(), 2);

    // A token signed before its key is published is refused, and accepted once the key is
    // published and the interval has passed.
    tokio::time::sleep(refresh + Duration::from_millis(50)).await;
    issuer.add_key("key-3", false);
    let early = issuer.mint(&claims("user-1"));
    assert_refused_before_any_read(&app, &router, &bearer(&early), "a key not yet published").await;
    assert_eq!(issuer.hits(), 3);
    issuer.publish("key-3");
    tokio::time::sleep(refresh + Duration::from_millis(50)).await;
    assert_served(
        &app,
        &router,
        Some(&bearer(&early)),
        "the key, now published",
    )
    .await;
    assert_eq!(issuer.hits(), 4);
}

#[tokio::test]
async fn a_jwks_file_verifies_tokens() {
    let issuer = TestIssuer::start().await;
    issuer.add_key("key-2", false);
    let dir = std::env::temp_dir().join(format!(
        "dynarelay-auth-{}",
        crate::helpers::unique_prefix()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("jwks.json");
    std::fs::write(&file, issuer.jwks().to_string()).unwrap();
    let (app, router) = guarded(AuthSettings {
        keys: KeySource::JwksFile(file.clone()),
        ..issuer.settings()
    })
    .await;
    let hits = issuer.hits();
    let token = issuer.mint_with(
        &json!({ "alg": "RS256", "kid": "key-1" }),
        &claims("user-1"),
    );
    assert_served(&app, &router, Some(&bearer(&token)), "a key from the file").await;
    let unknown = issuer.mint(&claims("user-1"));
    assert_refused_before_any_read(&app, &router, &bearer(&unknown), "a key not in the file").await;
    assert_eq!(issuer.hits(), hits, "a JWKS file is never fetched");

    std::fs::write(&file, "{\"keys\": []}").unwrap();
    let err = Authenticator::new(AuthSettings {
        keys: KeySource::JwksFile(file),
        ..issuer.settings()
    })
    .await
    .unwrap_err();
    assert!(err.to_string().contains("is not usable"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_shared_secret_verifies_hs256_tokens() {
    let issuer = TestIssuer::start().await;
    let secret = b"a local development secret, 32+ bytes".to_vec();
    let (app, router) = guarded(AuthSettings {
        keys: KeySource::SharedSecret(secret.clone()),
        algorithms: vec![Algorithm::HS256],
        issuer: Some(ISSUER.to_owned()),
        audience: vec![AUDIENCE.to_owned()],
        ..AuthSettings::default()
    })
    .await;
    let header = json!({ "alg": "HS256", "typ": "JWT" });
    let token = hs256(&header, &claims("user-1"), &secret);
    assert_served(
        &app,
        &router,
        Some(&bearer(&token)),
        "HS256 with the secret",
    )
    .await;
    let forged = hs256(&header, &claims("user-1"), b"another secret");
    assert_refused_before_any_read(&app, &router, &bearer(&forged), "another secret").await;
    let rs256 = issuer.mint(&claims("user-1"));
    assert_refused_before_any_read(&app, &router, &bearer(&rs256), "an RS256 token").await;
}

#[tokio::test]
async fn browsers_may_send_the_authorization_header_cross_origin() {
    let app = TestApp::spawn().await;
    let router = router(app_state(
        &app.store,
        PageLimits::default(),
        &test_ring(),
        HttpSettings {
            cors_origins: "http://localhost:*".parse().unwrap(),
            ..HttpSettings::default()
        },
    ));
    let preflight = Request::builder()
        .method(Method::OPTIONS)
        .uri("/graphql")
        .header(header::ORIGIN, "http://localhost:5173")
        .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
        .header(
            header::ACCESS_CONTROL_REQUEST_HEADERS,
            "authorization, content-type",
        )
        .body(Body::empty())
        .unwrap();
    let response = router.oneshot(preflight).await.unwrap();
    assert!(response.status().is_success());
    let allowed = response.headers()[header::ACCESS_CONTROL_ALLOW_HEADERS]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(allowed.contains("authorization"), "{allowed}");
}
