//! A token issuer for tests: RSA keys (the test-only keys in `tests/fixtures/auth/`), a JWKS
//! served on loopback with a hit counter and switches for an endpoint that is down or slow, and
//! tokens minted with any header and claims, signed well or badly. It stops when dropped.

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use aws_lc_rs::{
    encoding::AsDer,
    rand::SystemRandom,
    rsa::PublicKeyComponents,
    signature::{self, KeyPair, RsaKeyPair},
};
use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use dynarelay::auth::{AuthSettings, KeySource};
use http_body_util::Full;
use hyper::{
    Request, Response, StatusCode, body::Bytes, body::Incoming, header, server::conn::http1,
    service::service_fn,
};
use hyper_util::rt::TokioIo;
use jsonwebtoken::Algorithm;
use serde_json::{Value, json};
use tokio::{net::TcpListener, task::JoinHandle, task::JoinSet};

/// The `iss` of the tokens [`claims`] makes, and of [`TestIssuer::settings`].
pub const ISSUER: &str = "https://issuer.test";
/// The `aud` of the tokens [`claims`] makes, and of [`TestIssuer::settings`].
pub const AUDIENCE: &str = "dynarelay";

/// The test-only RSA keys, in `tests/fixtures/auth/`.
const KEY_FILES: [&str; 3] = [
    include_str!("../fixtures/auth/test-only-rsa-1.pem"),
    include_str!("../fixtures/auth/test-only-rsa-2.pem"),
    include_str!("../fixtures/auth/test-only-rsa-3.pem"),
];

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Valid claims for `sub`: this issuer and audience, issued now, expiring in five minutes.
pub fn claims(sub: &str) -> Value {
    let now = now();
    json!({ "sub": sub, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 300 })
}

/// `claims` with every entry of `changes` set, and those set to `null` removed.
pub fn with(mut claims: Value, changes: Value) -> Value {
    let object = claims.as_object_mut().unwrap();
    for (name, value) in changes.as_object().unwrap() {
        if value.is_null() {
            object.remove(name);
        } else {
            object.insert(name.clone(), value.clone());
        }
    }
    claims
}

/// `base64url(header).base64url(claims)`, the part of a JWS that is signed.
fn signing_input(header: &Value, claims: &Value) -> String {
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

/// A token signed with HMAC-SHA256 over `secret`, whatever the header says.
pub fn hs256(header: &Value, claims: &Value, secret: &[u8]) -> String {
    let input = signing_input(header, claims);
    let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, secret);
    let tag = aws_lc_rs::hmac::sign(&key, input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

/// A token with an empty signature, as `alg: none` tokens have.
pub fn unsigned(header: &Value, claims: &Value) -> String {
    format!("{}.", signing_input(header, claims))
}

/// One RSA key of the issuer.
struct TestKey {
    kid: String,
    pair: Arc<RsaKeyPair>,
    published: bool,
}

impl TestKey {
    fn jwk(&self) -> Value {
        let public = PublicKeyComponents::<Vec<u8>>::from(self.pair.public_key());
        json!({
            "kty": "RSA",
            "use": "sig",
            "alg": "RS256",
            "kid": self.kid,
            "n": URL_SAFE_NO_PAD.encode(&public.n),
            "e": URL_SAFE_NO_PAD.encode(&public.e),
        })
    }
}

/// The `n`th test-only key.
fn fixture_key(n: usize) -> Arc<RsaKeyPair> {
    let pem = KEY_FILES[n % KEY_FILES.len()];
    let body: String = pem
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    let der = STANDARD.decode(body).expect("a PEM body");
    Arc::new(RsaKeyPair::from_pkcs8(&der).expect("a PKCS#8 RSA key"))
}

#[derive(Default)]
struct Shared {
    keys: Mutex<Vec<TestKey>>,
    hits: AtomicUsize,
    down: AtomicBool,
    delay: Mutex<Duration>,
}

impl Shared {
    fn jwks(&self) -> Value {
        let keys = self.keys.lock().unwrap();
        let published: Vec<Value> = keys
            .iter()
            .filter(|key| key.published)
            .map(TestKey::jwk)
            .collect();
        json!({ "keys": published })
    }
}

/// An OpenID-style issuer on `127.0.0.1`: it serves its JWKS at [`url`](Self::url) and mints
/// tokens. It starts with one published key, `key-1`.
pub struct TestIssuer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl TestIssuer {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        let issuer = Self {
            addr,
            shared,
            accept,
        };
        issuer.add_key("key-1", true);
        issuer
    }

    /// The JWKS URL.
    pub fn url(&self) -> String {
        format!("http://{}/.well-known/jwks.json", self.addr)
    }

    /// Settings that trust this issuer: its JWKS URL, RS256, its `iss` and audience, the
    /// default leeway and refetch interval, and a 500 ms fetch timeout.
    pub fn settings(&self) -> AuthSettings {
        AuthSettings {
            keys: KeySource::JwksUrl(self.url()),
            algorithms: vec![Algorithm::RS256],
            issuer: Some(ISSUER.to_owned()),
            audience: vec![AUDIENCE.to_owned()],
            jwks_timeout: Duration::from_millis(500),
            ..AuthSettings::default()
        }
    }

    /// The JWKS it serves now.
    pub fn jwks(&self) -> Value {
        self.shared.jwks()
    }

    /// How many JWKS requests it has received (answered or not).
    pub fn hits(&self) -> usize {
        self.shared.hits.load(Ordering::SeqCst)
    }

    /// While down, the JWKS endpoint answers 503.
    pub fn set_down(&self, down: bool) {
        self.shared.down.store(down, Ordering::SeqCst);
    }

    /// The JWKS endpoint waits this long before answering.
    pub fn set_delay(&self, delay: Duration) {
        *self.shared.delay.lock().unwrap() = delay;
    }

    /// Adds a key (the next test-only key file), in the JWKS if `published`. The newest key
    /// signs [`mint`](Self::mint)'s tokens.
    pub fn add_key(&self, kid: &str, published: bool) {
        let mut keys = self.shared.keys.lock().unwrap();
        let pair = fixture_key(keys.len());
        keys.push(TestKey {
            kid: kid.to_owned(),
            pair,
            published,
        });
    }

    /// Puts key `kid` in the JWKS.
    pub fn publish(&self, kid: &str) {
        let mut keys = self.shared.keys.lock().unwrap();
        keys.iter_mut()
            .find(|key| key.kid == kid)
            .unwrap_or_else(|| panic!("no key {kid}"))
            .published = true;
    }

    /// An RS256 token with `claims`, signed by the newest key and naming its `kid`.
    pub fn mint(&self, claims: &Value) -> String {
        let kid = self.shared.keys.lock().unwrap().last().unwrap().kid.clone();
        self.mint_with(&json!({ "alg": "RS256", "typ": "JWT", "kid": kid }), claims)
    }

    /// A token with exactly `header` and `claims`, signed with RSA (`alg` RS256, RS384, RS512,
    /// PS256, PS384 or PS512; RS256 for any other) by the key the header's `kid` names, or by
    /// the newest key when it names none of the issuer's.
    pub fn mint_with(&self, header: &Value, claims: &Value) -> String {
        let kid = header["kid"].as_str().unwrap_or_default();
        let pair = {
            let keys = self.shared.keys.lock().unwrap();
            keys.iter()
                .find(|key| key.kid == kid)
                .or(keys.last())
                .unwrap()
                .pair
                .clone()
        };
        sign_rsa(&pair, header, claims)
    }

    /// A token with `header` and `claims` signed by key `signer`, whatever the header names.
    pub fn mint_signed_by(&self, signer: &str, header: &Value, claims: &Value) -> String {
        let pair = {
            let keys = self.shared.keys.lock().unwrap();
            keys.iter()
                .find(|key| key.kid == signer)
                .unwrap_or_else(|| panic!("no key {signer}"))
                .pair
                .clone()
        };
        sign_rsa(&pair, header, claims)
    }

    /// Key `kid`'s public key as PEM (`-----BEGIN PUBLIC KEY-----`, X.509 SubjectPublicKeyInfo)
    /// and as DER: what an attacker would use as an HMAC secret.
    pub fn public_key(&self, kid: &str) -> (String, Vec<u8>) {
        let keys = self.shared.keys.lock().unwrap();
        let key = keys.iter().find(|key| key.kid == kid).unwrap();
        let der = key.pair.public_key().as_der().unwrap().as_ref().to_vec();
        let encoded = STANDARD.encode(&der);
        let lines: Vec<&str> = encoded
            .as_bytes()
            .chunks(64)
            .map(|chunk| std::str::from_utf8(chunk).unwrap())
            .collect();
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            lines.join("\n")
        );
        (pem, der)
    }
}

impl Drop for TestIssuer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

fn sign_rsa(pair: &RsaKeyPair, header: &Value, claims: &Value) -> String {
    let encoding: &'static dyn signature::RsaEncoding = match header["alg"].as_str() {
        Some("RS384") => &signature::RSA_PKCS1_SHA384,
        Some("RS512") => &signature::RSA_PKCS1_SHA512,
        Some("PS256") => &signature::RSA_PSS_SHA256,
        Some("PS384") => &signature::RSA_PSS_SHA384,
        Some("PS512") => &signature::RSA_PSS_SHA512,
        _ => &signature::RSA_PKCS1_SHA256,
    };
    let input = signing_input(header, claims);
    let mut signature = vec![0; pair.public_modulus_len()];
    pair.sign(
        encoding,
        &SystemRandom::new(),
        input.as_bytes(),
        &mut signature,
    )
    .unwrap();
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    // Dropped with this task, which closes every open connection.
    let mut connections = JoinSet::new();
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        while connections.try_join_next().is_some() {}
        let shared = shared.clone();
        connections.spawn(async move {
            let service = service_fn(move |request| answer(shared.clone(), request));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(socket), service)
                .await;
        });
    }
}

async fn answer(
    shared: Arc<Shared>,
    _request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    shared.hits.fetch_add(1, Ordering::SeqCst);
    let delay = *shared.delay.lock().unwrap();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let response = if shared.down.load(Ordering::SeqCst) {
        Response::builder()
            .status(StatusCode::SERVICE_UNAVAILABLE)
            .body(Full::new(Bytes::new()))
    } else {
        Response::builder()
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(shared.jwks().to_string())))
    };
    Ok(response.unwrap())
}
