//! The verification keys: a JWKS (RFC 7517) or a shared secret, held as `jsonwebtoken`
//! decoding keys, and the choice of the one key a token may be checked with.
//!
//! A key is used only for algorithms it fits: its type (`kty`, and `crv` for curves) must be the
//! algorithm's, its `alg` (when given) the token's, its `use` (when given) `sig` and its
//! `key_ops` (when given) must include `verify`. HMAC keys come only from the configured secret,
//! never from a JWKS, so that a public key can never become an HMAC secret.

use jsonwebtoken::{
    Algorithm, DecodingKey,
    jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, KeyOperations, PublicKeyUse},
};
use serde_json::Value;

/// Why a JWKS document cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    /// Not JSON, or not an object with a `keys` array.
    #[error("not a JWKS (a JSON object with a `keys` array)")]
    NotJwks(#[source] serde_json::Error),
    /// No key in it fits any allowed algorithm.
    #[error("none of its {total} keys can verify the allowed algorithms")]
    NoUsableKeys {
        /// How many keys the document had.
        total: usize,
    },
}

/// What a key may verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Hmac,
    Rsa,
    EcP256,
    EcP384,
    Ed25519,
}

impl Kind {
    /// Whether a key of this kind can verify `alg`.
    fn fits(self, alg: Algorithm) -> bool {
        use Algorithm::*;
        match self {
            Self::Hmac => matches!(alg, HS256 | HS384 | HS512),
            Self::Rsa => matches!(alg, RS256 | RS384 | RS512 | PS256 | PS384 | PS512),
            Self::EcP256 => alg == ES256,
            Self::EcP384 => alg == ES384,
            Self::Ed25519 => alg == EdDSA,
        }
    }
}

/// One verification key.
#[derive(Debug)]
struct Key {
    kid: Option<String>,
    /// The JWK's `alg`, when it names one.
    alg: Option<Algorithm>,
    kind: Kind,
    decoding: DecodingKey,
}

impl Key {
    fn fits(&self, alg: Algorithm) -> bool {
        self.kind.fits(alg) && self.alg.is_none_or(|own| own == alg)
    }
}

/// The key a token's header selects, or why there is none.
#[derive(Debug)]
pub(super) enum Selection<'a> {
    /// The key to verify with.
    Key(&'a DecodingKey),
    /// No key has the token's `kid` (or there are no keys at all): a newer JWKS may have it.
    Unknown,
    /// The token names no `kid` and there are several keys.
    Ambiguous,
    /// The key named does not fit the token's algorithm.
    Unfit,
}

/// The keys in force.
#[derive(Debug, Default)]
pub(super) struct KeySet {
    keys: Vec<Key>,
    /// Whether tokens pick their key by `kid` (a JWKS) or there is only one (a shared secret).
    by_kid: bool,
}

impl KeySet {
    /// The single HMAC key of a shared secret, selected whatever `kid` a token names.
    pub(super) fn secret(secret: &[u8]) -> Self {
        Self {
            keys: vec![Key {
                kid: None,
                alg: None,
                kind: Kind::Hmac,
                decoding: DecodingKey::from_secret(secret),
            }],
            by_kid: false,
        }
    }

    /// The keys of a JWKS document that fit at least one of `allowed`. Keys that cannot be read
    /// or used (encryption keys, other curves, symmetric keys, unknown types) are skipped, so that
    /// an issuer adding a key of a new kind does not take the others down.
    pub(super) fn from_jwks(document: &[u8], allowed: &[Algorithm]) -> Result<Self, JwksError> {
        #[derive(serde::Deserialize)]
        struct Document {
            keys: Vec<Value>,
        }
        let document: Document = serde_json::from_slice(document).map_err(JwksError::NotJwks)?;
        let total = document.keys.len();
        let keys: Vec<Key> = document
            .keys
            .into_iter()
            .filter_map(|value| serde_json::from_value::<Jwk>(value).ok())
            .filter_map(|jwk| key_of(&jwk))
            .filter(|key| allowed.iter().any(|&alg| key.fits(alg)))
            .collect();
        if keys.is_empty() {
            return Err(JwksError::NoUsableKeys { total });
        }
        if keys.len() < total {
            tracing::debug!(
                usable = keys.len(),
                total,
                "skipped JWKS keys that cannot verify the allowed algorithms"
            );
        }
        Ok(Self { keys, by_kid: true })
    }

    /// How many keys there are.
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The key for a token with header `kid` and `alg`. With a single key and no `kid` in the
    /// token, that key.
    pub(super) fn select(&self, kid: Option<&str>, alg: Algorithm) -> Selection<'_> {
        let fitting = |key: &&Key| key.fits(alg);
        match kid {
            Some(kid) if self.by_kid => {
                let mut named = self
                    .keys
                    .iter()
                    .filter(|key| key.kid.as_deref() == Some(kid))
                    .peekable();
                if named.peek().is_none() {
                    return Selection::Unknown;
                }
                named
                    .find(fitting)
                    .map_or(Selection::Unfit, |key| Selection::Key(&key.decoding))
            }
            _ => match self.keys.as_slice() {
                [] => Selection::Unknown,
                [key] if key.fits(alg) => Selection::Key(&key.decoding),
                [_] => Selection::Unfit,
                _ => Selection::Ambiguous,
            },
        }
    }
}

/// The signature algorithm a JWK's `alg` names; `None` for encryption algorithms and ones we do
/// not know. (`jsonwebtoken` has this mapping, but private.)
fn signing_algorithm(alg: KeyAlgorithm) -> Option<Algorithm> {
    Some(match alg {
        KeyAlgorithm::HS256 => Algorithm::HS256,
        KeyAlgorithm::HS384 => Algorithm::HS384,
        KeyAlgorithm::HS512 => Algorithm::HS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}

/// A JWK as a verification key, if it is a signature key of a kind we verify.
fn key_of(jwk: &Jwk) -> Option<Key> {
    let common = &jwk.common;
    if common
        .public_key_use
        .as_ref()
        .is_some_and(|usage| *usage != PublicKeyUse::Signature)
    {
        return None;
    }
    if common
        .key_operations
        .as_ref()
        .is_some_and(|ops| !ops.contains(&KeyOperations::Verify))
    {
        return None;
    }
    let alg = match common.key_algorithm {
        None => None,
        Some(alg) => Some(signing_algorithm(alg)?),
    };
    let kind = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Kind::Rsa,
        AlgorithmParameters::EllipticCurve(params) => match params.curve {
            EllipticCurve::P256 => Kind::EcP256,
            EllipticCurve::P384 => Kind::EcP384,
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(params) if params.curve == EllipticCurve::Ed25519 => {
            Kind::Ed25519
        }
        // Symmetric keys are never taken from a JWKS (see the module docs).
        _ => return None,
    };
    if alg.is_some_and(|alg| !kind.fits(alg)) {
        return None;
    }
    let decoding = DecodingKey::from_jwk(jwk).ok()?;
    Some(Key {
        kid: common.key_id.clone(),
        alg,
        kind,
        decoding,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    // A real 2048-bit modulus is not needed to test selection: the bytes are never used to verify.
    const N: &str = "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw";

    fn jwks(keys: serde_json::Value) -> Vec<u8> {
        json!({ "keys": keys }).to_string().into_bytes()
    }

    fn rsa(kid: &str, extra: serde_json::Value) -> serde_json::Value {
        let mut key = json!({ "kty": "RSA", "kid": kid, "n": N, "e": "AQAB" });
        for (name, value) in extra.as_object().unwrap() {
            key[name] = value.clone();
        }
        key
    }

    #[test]
    fn keys_are_selected_by_kid_and_must_fit_the_algorithm() {
        let set = KeySet::from_jwks(
            &jwks(json!([
                rsa("a", json!({ "alg": "RS256", "use": "sig" })),
                rsa("b", json!({})),
                rsa("enc", json!({ "use": "enc" })),
                rsa("oaep", json!({ "alg": "RSA-OAEP" })),
                rsa("wrap", json!({ "key_ops": ["wrapKey"] })),
                { "kty": "oct", "kid": "secret", "k": "c2VjcmV0" },
                { "kty": "EC", "kid": "p521", "crv": "P-521", "x": "AA", "y": "AA" },
                { "kty": "weird", "kid": "future" },
            ])),
            &[Algorithm::RS256, Algorithm::PS256],
        )
        .unwrap();
        assert_eq!(set.len(), 2, "only the two RSA signature keys are kept");
        let cases = [
            (Some("a"), Algorithm::RS256, "key"),
            (Some("a"), Algorithm::PS256, "unfit: the key says RS256"),
            (Some("b"), Algorithm::PS256, "key"),
            (
                Some("b"),
                Algorithm::HS256,
                "unfit: an RSA key is never an HMAC key",
            ),
            (Some("secret"), Algorithm::HS256, "unknown"),
            (Some("enc"), Algorithm::RS256, "unknown"),
            (Some("nope"), Algorithm::RS256, "unknown"),
            (None, Algorithm::RS256, "ambiguous"),
        ];
        for (kid, alg, expected) in cases {
            let got = match set.select(kid, alg) {
                Selection::Key(_) => "key",
                Selection::Unknown => "unknown",
                Selection::Ambiguous => "ambiguous",
                Selection::Unfit => "unfit",
            };
            assert!(
                expected.starts_with(got),
                "{kid:?} {alg:?}: {got}, not {expected}"
            );
        }
    }

    #[test]
    fn a_single_key_serves_tokens_without_a_kid() {
        let set =
            KeySet::from_jwks(&jwks(json!([rsa("only", json!({}))])), &[Algorithm::RS256]).unwrap();
        assert!(matches!(
            set.select(None, Algorithm::RS256),
            Selection::Key(_)
        ));
        assert!(matches!(
            set.select(None, Algorithm::ES256),
            Selection::Unfit
        ));
        assert!(matches!(
            KeySet::default().select(None, Algorithm::RS256),
            Selection::Unknown
        ));
        let secret = KeySet::secret(b"0123456789abcdef0123456789abcdef");
        assert!(matches!(
            secret.select(Some("any"), Algorithm::HS256),
            Selection::Key(_)
        ));
        assert!(matches!(
            secret.select(None, Algorithm::RS256),
            Selection::Unfit
        ));
    }

    #[test]
    fn documents_without_usable_keys_are_refused() {
        for (case, document) in [
            ("not JSON", b"nope".to_vec()),
            ("no keys array", br#"{"kid":"a"}"#.to_vec()),
            (
                "only an HMAC key",
                jwks(json!([{ "kty": "oct", "k": "c2VjcmV0" }])),
            ),
            ("empty", jwks(json!([]))),
        ] {
            assert!(
                KeySet::from_jwks(&document, &[Algorithm::RS256]).is_err(),
                "{case}"
            );
        }
        let only_rsa = jwks(json!([rsa("a", json!({}))]));
        assert!(KeySet::from_jwks(&only_rsa, &[Algorithm::ES256]).is_err());
    }
}
