//! The `Authorization: Bearer <token>` header (RFC 6750, section 2.1).
//!
//! Hand-written: the grammar is one line, and the crates that type headers (`headers`,
//! axum-extra's `TypedHeader`) are not in our tree and would accept more than we want (they do
//! not bound the length or check the token's characters).

use http::HeaderValue;

/// The longest `Authorization` header read. Tokens from common issuers are 1 to 3 KiB; a larger
/// header is refused before anything is decoded.
pub(super) const MAX_HEADER_BYTES: usize = 8 * 1024;

/// The token of a Bearer `Authorization` header, or why there is none. The scheme name is
/// case-insensitive; the token must be a `b64token` (`A-Z a-z 0-9 - . _ ~ + /`, then `=`
/// padding), which every JWT is.
pub(super) fn token(value: &HeaderValue) -> Result<&str, &'static str> {
    if value.len() > MAX_HEADER_BYTES {
        return Err("the Authorization header is over 8 KiB");
    }
    let text = value
        .to_str()
        .map_err(|_| "the Authorization header is not printable ASCII")?;
    let text = text.trim_matches(' ');
    let (scheme, token) = text.split_once(' ').unwrap_or((text, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err("the Authorization header is not the Bearer scheme");
    }
    let token = token.trim_start_matches(' ');
    if token.is_empty() {
        return Err("the Authorization header has no token");
    }
    let body = token.trim_end_matches('=');
    let b64token = |b: u8| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b);
    if body.is_empty() || !body.bytes().all(b64token) {
        return Err("the bearer token has characters a token cannot have");
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: &[u8]) -> Result<String, &'static str> {
        token(&HeaderValue::from_bytes(value).unwrap()).map(str::to_owned)
    }

    #[test]
    fn only_well_formed_bearer_headers_yield_a_token() {
        let ok = [
            (&b"Bearer abc.def.ghi"[..], "abc.def.ghi"),
            (b"bearer abc.def.ghi", "abc.def.ghi"),
            (b"BEARER   a-b_c.d~e+f/g==", "a-b_c.d~e+f/g=="),
            (b"Bearer abc ", "abc"),
        ];
        for (header, expected) in ok {
            assert_eq!(
                parse(header).as_deref(),
                Ok(expected),
                "{}",
                String::from_utf8_lossy(header)
            );
        }
        let bad: [&[u8]; 11] = [
            b"",
            b"Bearer",
            b"Bearer ",
            b"Bearer    ",
            b"Basic dXNlcjpwYXNz",
            b"Bearerabc.def.ghi",
            b"Token abc.def.ghi",
            b"Bearer abc def",
            b"Bearer ===",
            b"Bearer a=b",
            b"Bearer \xc3\xa9t\xc3\xa9",
        ];
        for header in bad {
            assert!(
                parse(header).is_err(),
                "{}",
                String::from_utf8_lossy(header)
            );
        }
        let mut huge = b"Bearer ".to_vec();
        huge.resize(MAX_HEADER_BYTES + 1, b'a');
        assert_eq!(parse(&huge), Err("the Authorization header is over 8 KiB"));
        huge.truncate(MAX_HEADER_BYTES);
        assert!(parse(&huge).is_ok(), "8 KiB exactly is allowed");
    }
}
