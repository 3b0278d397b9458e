//! `DynamoNumber`: a DynamoDB number kept in DynamoDB's own decimal string form.
//!
//! DynamoDB numbers have up to 38 significant digits and magnitudes from 1E-130 to below 1E+126.
//! Neither `f64` nor common decimal crates (28 digits) hold that range exactly, and DynamoDB hands
//! numbers to clients as strings anyway, so the string is what we keep. This module only checks the
//! syntax and the limits; it never does arithmetic. No library validates DynamoDB's number rules,
//! hence the small hand-written parser below.

use std::fmt;

/// Longest accepted string. DynamoDB's plain form of its smallest magnitude, `0.` followed by 129
/// zeros and up to 38 digits, fits comfortably.
const MAX_LEN: usize = 200;
const MAX_SIGNIFICANT_DIGITS: usize = 38;
const MIN_EXPONENT: i64 = -130;
const MAX_EXPONENT: i64 = 125;

/// A validated DynamoDB number in plain decimal notation, such as `19.99`, `-3` or `1672531200123`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct DynamoNumber(String);

/// Longest text [`DynamoNumber::normalize`] reads: past this it is not a number anyone meant.
const MAX_INPUT_LEN: usize = 1024;

/// Why a string is not a DynamoDB number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NumberError {
    /// Not digits with an optional sign, decimal point and exponent.
    #[error(
        "a number is decimal digits with an optional sign, decimal point and exponent, such as 19.99, -3 or 2.5E1"
    )]
    Syntax,
    /// More than 38 significant digits.
    #[error("a number may have at most 38 significant digits")]
    TooPrecise,
    /// Outside 1E-130 ..= 9.99…E+125 in magnitude.
    #[error("a number must be 0 or lie between 1E-130 and 1E+126 in magnitude")]
    OutOfRange,
}

impl DynamoNumber {
    /// Validates `s` and keeps it as given.
    pub fn parse(s: &str) -> Result<Self, NumberError> {
        validate(s)?;
        Ok(Self(s.to_owned()))
    }

    /// Reads `s` in any form DynamoDB accepts as a number (a sign, `+` included, leading and
    /// trailing zeros, a point with digits on either side or both, an exponent such as `2.5E1`)
    /// and keeps it as DynamoDB stores and returns it: plain decimal digits, no leading or trailing
    /// zeros, no exponent, `0` for every zero (`2.5E1` is `25`, `-0.50` is `-0.5`, `+007` is `7`).
    pub fn normalize(s: &str) -> Result<Self, NumberError> {
        if s.len() > MAX_INPUT_LEN {
            return Err(NumberError::Syntax);
        }
        let (negative, unsigned) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
            Some((mantissa, exponent)) => (mantissa, Some(exponent)),
            None => (unsigned, None),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
        if (int.is_empty() && frac.is_empty()) || !all_digits(int) || !all_digits(frac) {
            return Err(NumberError::Syntax);
        }
        let exponent = match exponent {
            None => 0,
            Some(text) => {
                let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
                if digits.is_empty() || !all_digits(digits) {
                    return Err(NumberError::Syntax);
                }
                // DynamoDB refuses exponents past a 32-bit integer, even on zero.
                text.parse::<i32>().map_err(|_| NumberError::OutOfRange)?
            }
        };
        let digits: Vec<u8> = int.bytes().chain(frac.bytes()).collect();
        let Some(first) = digits.iter().position(|&b| b != b'0') else {
            return Ok(Self("0".to_owned()));
        };
        let last = digits.len() - 1 - digits.iter().rev().position(|&b| b != b'0').unwrap_or(0);
        let significant = &digits[first..=last];
        if significant.len() > MAX_SIGNIFICANT_DIGITS {
            return Err(NumberError::TooPrecise);
        }
        // The decimal exponent of the leading significant digit.
        let leading = int.len() as i64 - 1 - first as i64 + i64::from(exponent);
        if !(MIN_EXPONENT..=MAX_EXPONENT).contains(&leading) {
            return Err(NumberError::OutOfRange);
        }
        // Digits before the point, counted from the first significant one.
        let before = leading + 1;
        let mut text = String::with_capacity(significant.len() + 140);
        if negative {
            text.push('-');
        }
        let significant = std::str::from_utf8(significant).map_err(|_| NumberError::Syntax)?;
        match usize::try_from(before) {
            Err(_) | Ok(0) => {
                text.push_str("0.");
                text.extend(std::iter::repeat_n('0', before.unsigned_abs() as usize));
                text.push_str(significant);
            }
            Ok(before) if before >= significant.len() => {
                text.push_str(significant);
                text.extend(std::iter::repeat_n('0', before - significant.len()));
            }
            Ok(before) => {
                text.push_str(&significant[..before]);
                text.push('.');
                text.push_str(&significant[before..]);
            }
        }
        Ok(Self(text))
    }

    /// The number from an integer; always valid.
    pub fn from_i64(n: i64) -> Self {
        Self(n.to_string())
    }

    /// The decimal string, exactly as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Consumes the number, returning its string.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The value as an `i64` when it is a whole number in range (no fraction, no exponent).
    pub fn to_i64(&self) -> Option<i64> {
        self.0.parse().ok()
    }
}

impl DynamoNumber {
    /// Numeric order, exact at any precision: compares sign, then the integer digits, then the
    /// fraction, on the validated plain decimal strings. (Not `Ord`: equality stays textual, so
    /// `19.9` and `19.90` are equal here but not `==`.)
    pub fn numeric_cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let parts = |s: &str| {
            let (negative, digits) = match s.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, s),
            };
            let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
            let (int, frac) = (int.trim_start_matches('0'), frac.trim_end_matches('0'));
            let zero = int.is_empty() && frac.is_empty();
            (negative && !zero, zero, int.to_owned(), frac.to_owned())
        };
        let (a_neg, a_zero, a_int, a_frac) = parts(&self.0);
        let (b_neg, b_zero, b_int, b_frac) = parts(&other.0);
        let magnitude = || {
            a_int
                .len()
                .cmp(&b_int.len())
                .then_with(|| a_int.cmp(&b_int))
                .then_with(|| a_frac.cmp(&b_frac))
        };
        match (a_neg, b_neg) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) if a_zero && b_zero => Ordering::Equal,
            (false, false) => magnitude(),
            (true, true) => magnitude().reverse(),
        }
    }
}

impl TryFrom<String> for DynamoNumber {
    type Error = NumberError;

    fn try_from(s: String) -> Result<Self, NumberError> {
        validate(&s)?;
        Ok(Self(s))
    }
}

impl fmt::Display for DynamoNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for DynamoNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "N({})", self.0)
    }
}

fn validate(s: &str) -> Result<(), NumberError> {
    if s.len() > MAX_LEN {
        return Err(NumberError::Syntax);
    }
    let unsigned = s.strip_prefix('-').unwrap_or(s);
    let (int, frac) = match unsigned.split_once('.') {
        Some((int, frac)) => (int, frac),
        None => (unsigned, ""),
    };
    let all_digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    let has_point = unsigned.contains('.');
    if int.is_empty() || !all_digits(int) || !all_digits(frac) || (has_point && frac.is_empty()) {
        return Err(NumberError::Syntax);
    }
    // Significant digits run from the first to the last non-zero digit of int ++ frac.
    let digits = || int.bytes().chain(frac.bytes());
    let Some(first) = digits().position(|b| b != b'0') else {
        return Ok(()); // zero
    };
    let total = int.len() + frac.len();
    let last = total - 1 - digits().rev().position(|b| b != b'0').unwrap_or(0);
    if last - first + 1 > MAX_SIGNIFICANT_DIGITS {
        return Err(NumberError::TooPrecise);
    }
    // The decimal exponent of the leading significant digit: 10^(int.len() - 1 - first).
    let exponent = int.len() as i64 - 1 - first as i64;
    if !(MIN_EXPONENT..=MAX_EXPONENT).contains(&exponent) {
        return Err(NumberError::OutOfRange);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_dynamodb_plain_numbers() {
        for ok in [
            "0",
            "-0",
            "19.99",
            "1672531200123",
            "-3",
            "0.5",
            "12345678901234567890123456789012345678",
            "1234567890123456789.0123456789012345678",
            "-0.00012345678901234567890123456789012345678",
        ] {
            assert_eq!(
                DynamoNumber::parse(ok).map(|n| n.into_string()),
                Ok(ok.to_owned()),
                "{ok}"
            );
        }
    }

    #[test]
    fn accepts_the_ends_of_dynamodbs_exponent_range() {
        let smallest = format!("0.{}1", "0".repeat(129)); // 1E-130
        let largest = format!("{}{}", "9".repeat(38), "0".repeat(88)); // 9.99…E+125
        assert!(DynamoNumber::parse(&smallest).is_ok());
        assert!(DynamoNumber::parse(&largest).is_ok());
        assert_eq!(
            DynamoNumber::parse(&format!("0.{}1", "0".repeat(130))),
            Err(NumberError::OutOfRange),
            "1E-131"
        );
        assert_eq!(
            DynamoNumber::parse(&format!("1{}", "0".repeat(126))),
            Err(NumberError::OutOfRange),
            "1E+126"
        );
    }

    #[test]
    fn rejects_malformed_and_too_precise_numbers() {
        for (bad, why) in [
            ("", NumberError::Syntax),
            ("-", NumberError::Syntax),
            ("1.", NumberError::Syntax),
            (".5", NumberError::Syntax),
            ("+1", NumberError::Syntax),
            ("1e5", NumberError::Syntax),
            ("1,5", NumberError::Syntax),
            (" 1", NumberError::Syntax),
            ("NaN", NumberError::Syntax),
            ("١٢", NumberError::Syntax),
            (
                "123456789012345678901234567890123456789",
                NumberError::TooPrecise,
            ),
        ] {
            assert_eq!(DynamoNumber::parse(bad), Err(why), "{bad:?}");
        }
    }

    #[test]
    fn numbers_compare_by_value_exactly() {
        let n = |s: &str| DynamoNumber::parse(s).unwrap();
        let ascending = [
            "-100",
            "-19.99",
            "-19.9",
            "-0.5",
            "0",
            "0.0000000000000000000000000000000000001",
            "0.5",
            "9.99",
            "19.9",
            "19.99",
            "20",
            "100",
            "12345678901234567890123456789012345678",
        ];
        for pair in ascending.windows(2) {
            assert_eq!(
                n(pair[0]).numeric_cmp(&n(pair[1])),
                std::cmp::Ordering::Less,
                "{pair:?}"
            );
            assert_eq!(
                n(pair[1]).numeric_cmp(&n(pair[0])),
                std::cmp::Ordering::Greater,
                "{pair:?}"
            );
        }
        for (a, b) in [("-0", "0"), ("19.90", "19.9"), ("007", "7")] {
            assert_eq!(
                n(a).numeric_cmp(&n(b)),
                std::cmp::Ordering::Equal,
                "{a} = {b}"
            );
        }
    }

    #[test]
    fn every_form_dynamodb_accepts_is_read_and_normalised_as_dynamodb_does() {
        // What DynamoDB Local stored for each (tests/api/numbers.rs checks a longer table
        // against DynamoDB Local itself).
        for (input, stored) in [
            ("2.5E1", "25"),
            ("+5", "5"),
            ("007", "7"),
            ("-0.50", "-0.5"),
            (".5", "0.5"),
            ("5.", "5"),
            ("-0", "0"),
            ("0E+999", "0"),
            ("1e-2", "0.01"),
            ("100E-5", "0.001"),
        ] {
            assert_eq!(
                DynamoNumber::normalize(input).map(DynamoNumber::into_string),
                Ok(stored.to_owned()),
                "{input:?}"
            );
        }
        for (input, why) in [
            ("", NumberError::Syntax),
            ("+-1", NumberError::Syntax),
            ("1e", NumberError::Syntax),
            (" 5", NumberError::Syntax),
            ("1E-131", NumberError::OutOfRange),
            ("1E+126", NumberError::OutOfRange),
            (
                "123456789012345678901234567890123456789",
                NumberError::TooPrecise,
            ),
        ] {
            assert_eq!(DynamoNumber::normalize(input), Err(why), "{input:?}");
        }
    }

    #[test]
    fn trailing_and_leading_zeros_are_not_significant() {
        let padded = format!("000{}.000", "1".repeat(38));
        assert!(DynamoNumber::parse(&padded).is_ok());
    }
}
