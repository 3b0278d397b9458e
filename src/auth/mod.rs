//! Bearer-token authentication: an `Authorization` header in, a verified [`Caller`] out.
//!
//! Tokens are JWTs (RFC 7519) verified with `jsonwebtoken` against the keys of a JWKS (fetched
//! from a URL or read from a file) or a shared HMAC secret for local development. This module
//! knows tokens and keys only: what a caller may do is decided elsewhere, from the [`Principal`].
//!
//! - Only algorithms on the allowlist are accepted (`alg: none` never is), and a key verifies
//!   only the algorithms it fits, so a token signed with HMAC over an RSA public key fails: HMAC
//!   keys come only from the configured secret, which cannot be combined with a JWKS.
//! - `exp` and `sub` are required; `exp` and `nbf` are checked with the leeway; `iss` and `aud`
//!   when configured.
//! - A verified token is cached by its SHA-256, so repeated requests skip the signature check;
//!   its `exp` and `nbf` are checked again on every use.
//! - A token whose `kid` is unknown refetches the JWKS, at most once per `jwks_refresh` (the
//!   requests that arrive meanwhile share that fetch), and never waits longer than
//!   `jwks_timeout`.

mod bearer;
mod jwks;
mod keys;

use std::{
    borrow::Cow,
    num::NonZeroUsize,
    path::PathBuf,
    sync::{Arc, Mutex, RwLock},
    time::{Duration, Instant},
};

use jsonwebtoken::{Algorithm, Validation, errors::ErrorKind};
use lru::LruCache;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use self::{
    jwks::Fetcher,
    keys::{JwksError, KeySet, Selection},
};

/// How tokens are verified.
///
/// The default verifies HS256 tokens with an empty shared secret, which [`Authenticator::new`]
/// refuses: a deployment must name its keys (and, for a JWKS, its algorithms, such as
/// `vec![Algorithm::RS256]`), so a forgotten setting fails at start rather than later.
#[derive(Debug, Clone)]
pub struct AuthSettings {
    /// Where the verification keys come from.
    pub keys: KeySource,
    /// The algorithms accepted: a token with any other `alg` is rejected. Either HMAC ones
    /// (HS256, HS384, HS512) with a shared secret, or asymmetric ones with a JWKS; never both.
    pub algorithms: Vec<Algorithm>,
    /// The required `iss`, when set.
    pub issuer: Option<String>,
    /// When non-empty, a token's `aud` must contain one of these.
    pub audience: Vec<String>,
    /// Clock skew allowed for `exp` and `nbf`.
    pub leeway: Duration,
    /// The claim listing the caller's groups (such as `cognito:groups`): an array of strings, or
    /// a single string.
    pub groups_claim: String,
    /// A token with an unknown `kid` refetches the JWKS at most once per this interval.
    pub jwks_refresh: Duration,
    /// The longest wait for a JWKS fetch.
    pub jwks_timeout: Duration,
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            keys: KeySource::SharedSecret(Vec::new()),
            algorithms: vec![Algorithm::HS256],
            issuer: None,
            audience: Vec::new(),
            leeway: Duration::from_secs(30),
            groups_claim: "groups".to_owned(),
            jwks_refresh: Duration::from_secs(60),
            jwks_timeout: Duration::from_secs(3),
        }
    }
}

/// Where the verification keys come from.
#[derive(Clone)]
pub enum KeySource {
    /// A JWKS served at this URL: `https`, or `http` to a loopback host.
    JwksUrl(String),
    /// A JWKS in this file, read once at start.
    JwksFile(PathBuf),
    /// One HMAC secret (HS256 and friends), for local development.
    SharedSecret(Vec<u8>),
}

impl std::fmt::Debug for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::JwksUrl(url) => f.debug_tuple("JwksUrl").field(url).finish(),
            Self::JwksFile(path) => f.debug_tuple("JwksFile").field(path).finish(),
            Self::SharedSecret(_) => f.write_str("SharedSecret(<redacted>)"),
        }
    }
}

/// Why an [`Authenticator`] cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum AuthSetupError {
    /// The allowlist is empty.
    #[error("no token algorithm is allowed; list at least one")]
    NoAlgorithms,
    /// HMAC and asymmetric algorithms in one allowlist.
    #[error(
        "the allowed algorithms mix HMAC ({hmac:?}) with public-key ones ({public:?}); allow \
         one kind only"
    )]
    MixedAlgorithms {
        /// An HMAC algorithm allowed.
        hmac: Algorithm,
        /// A public-key algorithm allowed.
        public: Algorithm,
    },
    /// A shared secret with public-key algorithms.
    #[error("a shared secret verifies HS256, HS384 and HS512 only, not {0:?}; use a JWKS")]
    SecretNeedsHmac(Algorithm),
    /// A JWKS with HMAC algorithms.
    #[error("a JWKS holds public keys, which never verify {0:?}; use a shared secret")]
    JwksNeedsPublicKeyAlgorithms(Algorithm),
    /// An empty shared secret.
    #[error("the shared secret is empty")]
    EmptySecret,
    /// The JWKS URL does not parse.
    #[error("the JWKS URL `{url}` is not a valid URL")]
    InvalidJwksUrl {
        /// The URL as given.
        url: String,
        /// Why it does not parse.
        #[source]
        source: http::uri::InvalidUri,
    },
    /// The JWKS URL is neither `https` nor `http` to a loopback host.
    #[error("the JWKS URL `{0}` must be https (plain http is allowed only to a loopback host)")]
    InsecureJwksUrl(String),
    /// No root certificates to check the JWKS server's with.
    #[error("the platform's root certificates cannot be loaded, for the JWKS URL")]
    RootCertificates(#[source] std::io::Error),
    /// The JWKS file cannot be read.
    #[error("cannot read the JWKS file {path}")]
    ReadJwksFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The JWKS file is not a usable JWKS.
    #[error("the JWKS file {path} is not usable")]
    BadJwksFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: JwksError,
    },
}

/// Who sent a request.
#[derive(Debug, Clone, Default)]
pub enum Caller {
    /// No credentials were sent.
    #[default]
    Anonymous,
    /// A verified token's subject.
    Verified(Arc<Principal>),
}

impl Caller {
    /// When the caller's token expires, in seconds since the Unix epoch; `None` for an
    /// anonymous caller.
    pub fn expires(&self) -> Option<u64> {
        self.principal()?.expires()
    }

    /// The verified principal, if any.
    pub fn principal(&self) -> Option<&Principal> {
        match self {
            Self::Anonymous => None,
            Self::Verified(principal) => Some(principal),
        }
    }
}

/// The subject of a verified token, with its groups and every claim.
#[derive(Debug)]
pub struct Principal {
    /// The `sub` claim.
    pub subject: String,
    /// The groups from the configured groups claim; empty when the token has none.
    pub groups: Vec<String>,
    claims: Map<String, Value>,
}

impl Principal {
    /// The principal of a token's verified claims: `sub` must be a non-empty string, and the
    /// groups claim, when present, a string or an array of strings.
    pub fn from_claims(claims: Map<String, Value>, groups_claim: &str) -> Result<Self, Rejection> {
        let subject = match claims.get("sub") {
            Some(Value::String(sub)) if !sub.is_empty() => sub.clone(),
            _ => return Err(Rejection::new("the token has no `sub` string")),
        };
        let groups = match claims.get(groups_claim) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(group)) => vec![group.clone()],
            Some(Value::Array(groups)) => groups
                .iter()
                .map(|group| group.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| Rejection::new("the groups claim is not an array of strings"))?,
            Some(_) => {
                return Err(Rejection::new(
                    "the groups claim is not a string or an array of strings",
                ));
            }
        };
        Ok(Self {
            subject,
            groups,
            claims,
        })
    }

    /// When the token expires: its `exp` claim, in seconds since the Unix epoch.
    pub fn expires(&self) -> Option<u64> {
        self.claims.get("exp")?.as_u64()
    }

    /// A claim as text: a string as is, an integer as its decimal digits; anything else `None`.
    pub fn claim(&self, name: &str) -> Option<Cow<'_, str>> {
        match self.claims.get(name)? {
            Value::String(text) => Some(Cow::Borrowed(text)),
            Value::Number(number) if number.is_i64() || number.is_u64() => {
                Some(Cow::Owned(number.to_string()))
            }
            _ => None,
        }
    }

    /// The value an owner rule's `claim` names: one claim (`sub`), or a template of claims in
    /// braces with literal text between them, such as Amplify's `{sub}::{username}`. `None` when
    /// a claim it names is missing.
    pub fn owner_value(&self, claim: &str) -> Option<Cow<'_, str>> {
        if !claim.contains('{') {
            return self.claim(claim);
        }
        let mut value = String::new();
        let mut rest = claim;
        while let Some(open) = rest.find('{') {
            value.push_str(&rest[..open]);
            let close = rest[open..].find('}')? + open;
            value.push_str(&self.claim(&rest[open + 1..close])?);
            rest = &rest[close + 1..];
        }
        value.push_str(rest);
        Some(Cow::Owned(value))
    }

    /// Whether the caller is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|own| own == group)
    }

    /// Every claim of the token.
    pub fn claims(&self) -> &Map<String, Value> {
        &self.claims
    }
}

/// Why a request's credentials were refused. The reason is for the log only: clients get one
/// fixed message, so that they learn nothing about the keys or the checks.
#[derive(Debug)]
pub struct Rejection {
    reason: Cow<'static, str>,
}

impl Rejection {
    fn new(reason: impl Into<Cow<'static, str>>) -> Self {
        Self {
            reason: reason.into(),
        }
    }

    /// Why, for the log. Never contains the token.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// Verified tokens kept, so that repeated requests skip the signature check. An entry holds a
/// principal (its claims are at most what an 8 KiB header carries).
const CACHE_ENTRIES: usize = 2048;

/// Verifies bearer tokens. Cheap to clone.
#[derive(Clone)]
pub struct Authenticator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("algorithms", &self.inner.settings.algorithms)
            .field("issuer", &self.inner.settings.issuer)
            .field("audience", &self.inner.settings.audience)
            .finish_non_exhaustive()
    }
}

struct Inner {
    settings: AuthSettings,
    /// One validation per allowed algorithm (`jsonwebtoken` wants every algorithm of a
    /// validation to match the key's family).
    validations: Vec<(Algorithm, Validation)>,
    keys: RwLock<Arc<KeySet>>,
    /// For a JWKS URL: the client, and when the last refetch for an unknown `kid` began.
    jwks: Option<(Fetcher, tokio::sync::Mutex<Option<Instant>>)>,
    cache: Mutex<LruCache<[u8; 32], Cached>>,
}

/// A verified token, as cached.
struct Cached {
    principal: Arc<Principal>,
    exp: u64,
    nbf: Option<u64>,
}

impl Authenticator {
    /// Loads or fetches the keys. A JWKS URL that cannot be fetched now is not fatal: the
    /// authenticator starts with no keys (logging a warning) and fetches on the first token. A
    /// bad JWKS file, an empty secret or an allowlist that mixes HMAC with public-key
    /// algorithms (or does not fit the key source) is an error.
    pub async fn new(settings: AuthSettings) -> Result<Self, AuthSetupError> {
        check_algorithms(&settings)?;
        let validations = settings
            .algorithms
            .iter()
            .map(|&alg| (alg, validation(&settings, alg)))
            .collect();
        let (keys, jwks) = match &settings.keys {
            KeySource::SharedSecret(secret) => {
                if secret.is_empty() {
                    return Err(AuthSetupError::EmptySecret);
                }
                (KeySet::secret(secret), None)
            }
            KeySource::JwksFile(path) => {
                let document =
                    std::fs::read(path).map_err(|source| AuthSetupError::ReadJwksFile {
                        path: path.clone(),
                        source,
                    })?;
                let keys =
                    KeySet::from_jwks(&document, &settings.algorithms).map_err(|source| {
                        AuthSetupError::BadJwksFile {
                            path: path.clone(),
                            source,
                        }
                    })?;
                (keys, None)
            }
            KeySource::JwksUrl(url) => {
                let fetcher = Fetcher::new(url, settings.jwks_timeout)?;
                (
                    KeySet::default(),
                    Some((fetcher, tokio::sync::Mutex::new(None))),
                )
            }
        };
        let inner = Arc::new(Inner {
            validations,
            keys: RwLock::new(Arc::new(keys)),
            jwks,
            cache: Mutex::new(LruCache::new(
                NonZeroUsize::new(CACHE_ENTRIES).unwrap_or(NonZeroUsize::MIN),
            )),
            settings,
        });
        if inner.jwks.is_some() {
            // The first fetch does not count against the refetch interval: a key rotated just
            // after start is picked up at once.
            if let Err(reason) = inner.fetch_keys().await {
                tracing::warn!(
                    reason,
                    "the JWKS could not be fetched at start; starting with no keys, and fetching \
                     again on the first token"
                );
            }
        }
        Ok(Self { inner })
    }

    /// The caller a request's `Authorization` header names: [`Caller::Anonymous`] without one;
    /// a verified principal for a valid Bearer token; a [`Rejection`] for anything else.
    pub async fn authenticate(
        &self,
        authorization: Option<&http::HeaderValue>,
    ) -> Result<Caller, Rejection> {
        let Some(header) = authorization else {
            return Ok(Caller::Anonymous);
        };
        let token = bearer::token(header).map_err(Rejection::new)?;
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = jsonwebtoken::get_current_timestamp();
        if let Some((principal, exp, nbf)) = self.inner.cached(&digest) {
            self.inner.check_times(exp, nbf, now)?;
            return Ok(Caller::Verified(principal));
        }
        let (cached, keys) = self.inner.verify(token).await?;
        let principal = Arc::clone(&cached.principal);
        self.inner.check_times(cached.exp, cached.nbf, now)?;
        let mut cache = self.inner.cache.lock().unwrap_or_else(|e| e.into_inner());
        // Not if the keys changed meanwhile: the change empties the cache (after putting the
        // new keys in force, under this lock), and this token's key may be gone.
        if Arc::ptr_eq(&keys, &self.inner.current_keys()) {
            cache.put(digest, cached);
        }
        Ok(Caller::Verified(principal))
    }
}

impl Inner {
    fn cached(&self, digest: &[u8; 32]) -> Option<(Arc<Principal>, u64, Option<u64>)> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let entry = cache.get(digest)?;
        Some((Arc::clone(&entry.principal), entry.exp, entry.nbf))
    }

    /// `exp` and `nbf` against `now`, with the leeway, as `jsonwebtoken` checks them.
    fn check_times(&self, exp: u64, nbf: Option<u64>, now: u64) -> Result<(), Rejection> {
        let leeway = self.settings.leeway.as_secs();
        if exp < now.saturating_sub(leeway) {
            return Err(Rejection::new("the token has expired"));
        }
        if nbf.is_some_and(|nbf| nbf > now.saturating_add(leeway)) {
            return Err(Rejection::new("the token is not valid yet"));
        }
        Ok(())
    }

    /// Checks a token's signature and claims; with the key set it was checked against.
    async fn verify(self: &Arc<Self>, token: &str) -> Result<(Cached, Arc<KeySet>), Rejection> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| Rejection::new("the token's header is not a JWS header we accept"))?;
        if header.crit.is_some() {
            return Err(Rejection::new(
                "the token's header has `crit` extensions, none of which we understand",
            ));
        }
        let alg = header.alg;
        let Some((_, validation)) = self.validations.iter().find(|(allowed, _)| *allowed == alg)
        else {
            return Err(Rejection::new(format!(
                "the token's algorithm {alg:?} is not allowed"
            )));
        };
        let kid = header.kid.as_deref();
        let mut keys = self.current_keys();
        if matches!(keys.select(kid, alg), Selection::Unknown) && self.refetch(&keys).await {
            keys = self.current_keys();
        }
        let key = match keys.select(kid, alg) {
            Selection::Key(key) => key,
            Selection::Unknown => {
                return Err(Rejection::new(match kid {
                    Some(_) => "no key has the token's `kid`",
                    None => "there are no keys to verify the token with",
                }));
            }
            Selection::Ambiguous => {
                return Err(Rejection::new(
                    "the token names no `kid`, and there are several keys",
                ));
            }
            Selection::Unfit => {
                return Err(Rejection::new(format!(
                    "the token's key does not verify {alg:?}"
                )));
            }
        };
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, key, validation)
            .map_err(|err| Rejection::new(reason_of(err.kind())))?;
        let claims = data.claims;
        // `jsonwebtoken` has checked that `exp` is a non-negative number (and `nbf`, if present).
        let time = |name: &str| {
            claims.get(name).and_then(|value| {
                value
                    .as_u64()
                    .or_else(|| value.as_f64().map(|seconds| seconds.round() as u64))
            })
        };
        let (exp, nbf) = (time("exp").unwrap_or(0), time("nbf"));
        let principal = Principal::from_claims(claims, &self.settings.groups_claim)?;
        let cached = Cached {
            principal: Arc::new(principal),
            exp,
            nbf,
        };
        Ok((cached, keys))
    }

    fn current_keys(&self) -> Arc<KeySet> {
        Arc::clone(&self.keys.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Refetches the JWKS for a token whose key is not in `seen`, unless a refetch began within
    /// the last `jwks_refresh`. Requests arriving during a fetch wait for it rather than start
    /// their own. Whether a new key set is in force (ours or another request's).
    async fn refetch(self: &Arc<Self>, seen: &Arc<KeySet>) -> bool {
        let Some((_, last)) = &self.jwks else {
            return false;
        };
        let wait = async {
            let mut last = last.lock().await;
            if !Arc::ptr_eq(&self.current_keys(), seen) {
                return true;
            }
            if last.is_some_and(|at| at.elapsed() < self.settings.jwks_refresh) {
                return false;
            }
            *last = Some(Instant::now());
            // In a task of its own, so that a request that gives up (or is cancelled) does not
            // abandon the fetch the others wait for.
            let inner = Arc::clone(self);
            let fetch = tokio::spawn(async move {
                match inner.fetch_keys().await {
                    Ok(()) => true,
                    Err(reason) => {
                        tracing::warn!(reason, "the JWKS could not be refetched");
                        false
                    }
                }
            });
            fetch.await.unwrap_or(false)
        };
        // The fetch itself is bounded by the timeout; this bounds the wait for the lock too.
        tokio::time::timeout(self.settings.jwks_timeout, wait)
            .await
            .unwrap_or(false)
    }

    /// Fetches the JWKS, within the timeout, and puts its keys in force. A changed key set
    /// empties the token cache, so that tokens of a withdrawn key are checked again.
    async fn fetch_keys(&self) -> Result<(), String> {
        let Some((fetcher, _)) = &self.jwks else {
            return Ok(());
        };
        let started = Instant::now();
        let document = tokio::time::timeout(self.settings.jwks_timeout, fetcher.fetch())
            .await
            .map_err(|_| {
                format!(
                    "{} did not answer within {:?}",
                    fetcher.uri(),
                    self.settings.jwks_timeout
                )
            })?
            .map_err(|err| format!("{}: {}", fetcher.uri(), error_chain(&err)))?;
        let keys = KeySet::from_jwks(&document, &self.settings.algorithms)
            .map_err(|err| format!("{}: {}", fetcher.uri(), error_chain(&err)))?;
        tracing::info!(
            url = %fetcher.uri(),
            keys = keys.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "fetched the JWKS"
        );
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
        cache.clear();
        Ok(())
    }
}

/// An error and its sources, joined with `: `.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The allowlist is non-empty, of one kind, and fits the key source.
fn check_algorithms(settings: &AuthSettings) -> Result<(), AuthSetupError> {
    let is_hmac =
        |alg: &&Algorithm| matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512);
    let hmac = settings.algorithms.iter().find(is_hmac).copied();
    let public = settings
        .algorithms
        .iter()
        .find(|alg| !is_hmac(alg))
        .copied();
    match (&settings.keys, hmac, public) {
        (_, None, None) => Err(AuthSetupError::NoAlgorithms),
        (_, Some(hmac), Some(public)) => Err(AuthSetupError::MixedAlgorithms { hmac, public }),
        (KeySource::SharedSecret(_), None, Some(public)) => {
            Err(AuthSetupError::SecretNeedsHmac(public))
        }
        (KeySource::JwksUrl(_) | KeySource::JwksFile(_), Some(hmac), None) => {
            Err(AuthSetupError::JwksNeedsPublicKeyAlgorithms(hmac))
        }
        _ => Ok(()),
    }
}

/// The checks for tokens signed with `alg`.
fn validation(settings: &AuthSettings, alg: Algorithm) -> Validation {
    let mut validation = Validation::new(alg);
    validation.leeway = settings.leeway.as_secs();
    validation.validate_exp = true;
    validation.validate_nbf = true;
    let mut required = vec!["exp", "sub"];
    if let Some(issuer) = &settings.issuer {
        validation.set_issuer(&[issuer]);
        required.push("iss");
    }
    if settings.audience.is_empty() {
        // Otherwise `jsonwebtoken` rejects every token that has an `aud`.
        validation.validate_aud = false;
    } else {
        validation.set_audience(&settings.audience);
        required.push("aud");
    }
    validation.set_required_spec_claims(&required);
    validation
}

/// A log line for a token `jsonwebtoken` refused.
fn reason_of(kind: &ErrorKind) -> Cow<'static, str> {
    match kind {
        ErrorKind::InvalidSignature => "the signature does not verify".into(),
        ErrorKind::ExpiredSignature => "the token has expired".into(),
        ErrorKind::ImmatureSignature => "the token is not valid yet".into(),
        ErrorKind::InvalidIssuer => "the token's `iss` is not the issuer".into(),
        ErrorKind::InvalidAudience => "the token's `aud` names none of the audiences".into(),
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit its key".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}`").into(),
        ErrorKind::InvalidClaimFormat(claim) => {
            format!("the token's `{claim}` is malformed").into()
        }
        ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Utf8(_) => {
            "the token is malformed".into()
        }
        ErrorKind::Json(_) => "the token's claims are not a JSON object".into(),
        _ => "the token is not valid".into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn principal(claims: Value) -> Result<Principal, Rejection> {
        let Value::Object(claims) = claims else {
            panic!("claims are an object")
        };
        Principal::from_claims(claims, "cognito:groups")
    }

    #[test]
    fn owner_values_are_one_claim_or_a_template_of_claims() {
        let p = principal(
            json!({ "sub": "a-sub", "username": "alice", "cognito:username": "al", "n": 7 }),
        )
        .unwrap();
        assert_eq!(p.owner_value("sub").as_deref(), Some("a-sub"));
        assert_eq!(
            p.owner_value("{sub}::{username}").as_deref(),
            Some("a-sub::alice")
        );
        assert_eq!(
            p.owner_value("{sub}::{cognito:username}").as_deref(),
            Some("a-sub::al")
        );
        assert_eq!(p.owner_value("user#{n}").as_deref(), Some("user#7"));
        // A claim the token lacks: no owner value, so the rule admits nobody.
        assert_eq!(p.owner_value("{sub}::{email}"), None);
        assert_eq!(p.owner_value("email"), None);
    }

    #[test]
    fn claims_read_as_text_only_when_strings_or_integers() {
        let p = principal(json!({
            "sub": "user-1",
            "tenant": "acme",
            "account": 12345,
            "negative": -7,
            "big": 18446744073709551615u64,
            "ratio": 1.5,
            "admin": true,
            "list": ["a"],
            "nothing": null,
        }))
        .unwrap();
        assert_eq!(p.subject, "user-1");
        assert_eq!(p.claim("sub").as_deref(), Some("user-1"));
        assert_eq!(p.claim("tenant").as_deref(), Some("acme"));
        assert_eq!(p.claim("account").as_deref(), Some("12345"));
        assert_eq!(p.claim("negative").as_deref(), Some("-7"));
        assert_eq!(p.claim("big").as_deref(), Some("18446744073709551615"));
        for name in ["ratio", "admin", "list", "nothing", "absent"] {
            assert_eq!(p.claim(name), None, "{name}");
        }
        assert!(matches!(p.claim("tenant"), Some(Cow::Borrowed(_))));
        assert!(p.groups.is_empty());
        assert!(!p.in_group("admins"));
    }

    #[test]
    fn groups_come_from_the_configured_claim() {
        let p = principal(
            json!({ "sub": "u", "cognito:groups": ["admins", "staff"], "groups": ["x"] }),
        )
        .unwrap();
        assert_eq!(p.groups, ["admins", "staff"]);
        assert!(p.in_group("staff"));
        assert!(!p.in_group("x"), "only the configured claim counts");
        assert!(!p.in_group("Admins"), "group names are exact");
        let single = principal(json!({ "sub": "u", "cognito:groups": "admins" })).unwrap();
        assert_eq!(single.groups, ["admins"]);
        for bad in [json!(["a", 1]), json!(7), json!({ "a": true })] {
            assert!(
                principal(json!({ "sub": "u", "cognito:groups": bad })).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_principal_needs_a_subject() {
        for claims in [
            json!({}),
            json!({ "sub": "" }),
            json!({ "sub": 42 }),
            json!({ "sub": null }),
        ] {
            let err = principal(claims.clone()).unwrap_err();
            assert_eq!(err.reason(), "the token has no `sub` string", "{claims}");
        }
        assert_eq!(
            Caller::default().principal().map(|p| p.subject.clone()),
            None
        );
    }

    #[tokio::test]
    async fn setups_that_cannot_be_safe_are_refused() {
        let secret = KeySource::SharedSecret(b"0123456789abcdef0123456789abcdef".to_vec());
        let jwks = KeySource::JwksUrl("https://issuer.example/jwks.json".to_owned());
        let cases = [
            (
                "the default (empty secret)",
                AuthSettings::default(),
                "the shared secret is empty",
            ),
            (
                "no algorithms",
                AuthSettings {
                    keys: secret.clone(),
                    algorithms: vec![],
                    ..AuthSettings::default()
                },
                "no token algorithm",
            ),
            (
                "HMAC mixed with RSA",
                AuthSettings {
                    keys: jwks.clone(),
                    algorithms: vec![Algorithm::RS256, Algorithm::HS256],
                    ..AuthSettings::default()
                },
                "mix HMAC",
            ),
            (
                "a secret for RS256",
                AuthSettings {
                    keys: secret.clone(),
                    algorithms: vec![Algorithm::RS256],
                    ..AuthSettings::default()
                },
                "a shared secret verifies",
            ),
            (
                "a JWKS for HS256",
                AuthSettings {
                    keys: jwks,
                    ..AuthSettings::default()
                },
                "a JWKS holds public keys",
            ),
            (
                "plain http off loopback",
                AuthSettings {
                    keys: KeySource::JwksUrl("http://issuer.example/jwks.json".to_owned()),
                    algorithms: vec![Algorithm::RS256],
                    ..AuthSettings::default()
                },
                "must be https",
            ),
            (
                "a missing JWKS file",
                AuthSettings {
                    keys: KeySource::JwksFile("/nonexistent/jwks.json".into()),
                    algorithms: vec![Algorithm::RS256],
                    ..AuthSettings::default()
                },
                "cannot read the JWKS file",
            ),
        ];
        for (case, settings, expected) in cases {
            let err = Authenticator::new(settings).await.unwrap_err();
            assert!(err.to_string().contains(expected), "{case}: {err}");
        }
        let ok = AuthSettings {
            keys: secret,
            ..AuthSettings::default()
        };
        assert!(Authenticator::new(ok).await.is_ok());
        assert_eq!(
            format!("{:?}", KeySource::SharedSecret(b"hunter2".to_vec())),
            "SharedSecret(<redacted>)"
        );
    }

    /// HS256 tokens are signed here by hand (base64url of header and claims, HMAC-SHA256 with
    /// the `hmac` crate), so that headers `jsonwebtoken` would not write can be tested too.
    fn hs256(header: Value, claims: Value, secret: &[u8]) -> String {
        use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
        use hmac::{Hmac, Mac};
        let message = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap();
        mac.update(message.as_bytes());
        format!(
            "{message}.{}",
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        )
    }

    fn bearer(token: &str) -> http::HeaderValue {
        http::HeaderValue::from_str(&format!("Bearer {token}")).unwrap()
    }

    #[tokio::test]
    async fn shared_secret_tokens_are_verified_cached_and_timed_on_every_use() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let auth = Authenticator::new(AuthSettings {
            keys: KeySource::SharedSecret(secret.to_vec()),
            issuer: Some("https://issuer.test".to_owned()),
            audience: vec!["dynarelay".to_owned()],
            leeway: Duration::from_secs(0),
            ..AuthSettings::default()
        })
        .await
        .unwrap();
        let now = jsonwebtoken::get_current_timestamp();
        let header = json!({ "alg": "HS256", "typ": "JWT" });
        let claims = json!({
            "sub": "user-1", "iss": "https://issuer.test", "aud": ["other", "dynarelay"],
            "exp": now + 60, "groups": ["staff"],
        });
        let token = hs256(header.clone(), claims.clone(), secret);
        for round in 0..2 {
            let caller = auth.authenticate(Some(&bearer(&token))).await.unwrap();
            let principal = caller.principal().unwrap();
            assert_eq!(principal.subject, "user-1", "round {round}");
            assert!(principal.in_group("staff"));
        }
        assert_eq!(auth.inner.cache.lock().unwrap().len(), 1);
        assert!(matches!(
            auth.authenticate(None).await,
            Ok(Caller::Anonymous)
        ));

        // A cached token is still timed: make the cached entry expire.
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        auth.inner
            .cache
            .lock()
            .unwrap()
            .get_mut(&digest)
            .unwrap()
            .exp = now - 1;
        let err = auth.authenticate(Some(&bearer(&token))).await.unwrap_err();
        assert_eq!(err.reason(), "the token has expired");

        let mut refused = vec![
            (
                "forged",
                hs256(header.clone(), claims.clone(), b"another secret"),
                "signature",
            ),
            (
                "alg none",
                {
                    let signed = hs256(json!({ "alg": "none" }), claims.clone(), secret);
                    let (unsigned, _) = signed.rsplit_once('.').unwrap();
                    format!("{unsigned}.")
                },
                "header",
            ),
            (
                "HS384 not allowed",
                hs256(json!({ "alg": "HS384" }), claims.clone(), secret),
                "not allowed",
            ),
            (
                "crit",
                hs256(
                    json!({ "alg": "HS256", "crit": ["exp"] }),
                    claims.clone(),
                    secret,
                ),
                "crit",
            ),
            ("not a JWT", "abc.def".to_owned(), "header"),
        ];
        for (case, edit, reason) in [
            ("expired", json!({ "exp": now - 5 }), "expired"),
            ("not yet valid", json!({ "nbf": now + 60 }), "not valid yet"),
            ("wrong issuer", json!({ "iss": "https://evil.test" }), "iss"),
            ("no issuer", json!({ "iss": null }), "no `iss`"),
            ("wrong audience", json!({ "aud": "other" }), "aud"),
            ("no subject", json!({ "sub": null }), "no `sub`"),
            ("no expiry", json!({ "exp": null }), "no `exp`"),
            ("string expiry", json!({ "exp": "tomorrow" }), "no `exp`"),
        ] {
            let mut claims = claims.clone();
            for (name, value) in edit.as_object().unwrap() {
                if value.is_null() {
                    claims.as_object_mut().unwrap().remove(name);
                } else {
                    claims[name] = value.clone();
                }
            }
            refused.push((case, hs256(header.clone(), claims, secret), reason));
        }
        for (case, token, reason) in refused {
            let err = auth.authenticate(Some(&bearer(&token))).await.unwrap_err();
            assert!(err.reason().contains(reason), "{case}: {}", err.reason());
        }
    }
}
