//! Ids whose text sorts by the time they were made: ULIDs (26 characters of Crockford's base
//! 32, the first 10 the milliseconds since 1970) and KSUIDs (27 characters of base 62 encoding
//! 20 bytes, the first 4 the seconds since 2014-05-13T16:53:20Z). A key holding them sorts by
//! time, so a range of times is a range of ids: from the smallest id of the first time to the
//! largest of the last.
//!
//! Hand-written: the ulid and svix-ksuid crates make and parse ids, but neither gives the
//! smallest and largest id of a time as text, which is all this needs.

/// Crockford's base 32 alphabet, as ULIDs are written.
const ULID_ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Base 62, in the order KSUIDs use (digits, uppercase, lowercase: ASCII order).
const KSUID_ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// KSUID's epoch: 2014-05-13T16:53:20Z, in seconds since 1970.
const KSUID_EPOCH: i64 = 1_400_000_000;

/// An id format that sorts by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortableId {
    /// A ULID.
    Ulid,
    /// A KSUID.
    Ksuid,
}

impl SortableId {
    /// Whether `text` is an id of this format.
    pub fn is_valid(self, text: &str) -> bool {
        match self {
            SortableId::Ulid => {
                text.len() == 26
                    && text.bytes().all(|b| ULID_ALPHABET.contains(&b.to_ascii_uppercase()))
                    // 48 bits of time: the first character is at most 7.
                    && text.as_bytes()[0] <= b'7'
            }
            SortableId::Ksuid => {
                text.len() == 27
                    && text.bytes().all(|b| KSUID_ALPHABET.contains(&b))
                    && text <= "aWgEPTl1tmebfsQzFP4bxwgy80V"
            }
        }
    }

    /// The smallest id (`upper` false) or the largest (`upper` true) made at `millis` since 1970,
    /// to this format's precision; `None` for a time it cannot hold.
    pub fn bound(self, millis: i64, upper: bool) -> Option<String> {
        match self {
            SortableId::Ulid => {
                let time = u64::try_from(millis).ok().filter(|t| *t < 1 << 48)?;
                let mut text = String::with_capacity(26);
                for i in (0..10).rev() {
                    text.push(char::from(ULID_ALPHABET[((time >> (5 * i)) & 31) as usize]));
                }
                text.push_str(if upper {
                    "ZZZZZZZZZZZZZZZZ"
                } else {
                    "0000000000000000"
                });
                Some(text)
            }
            SortableId::Ksuid => {
                let seconds = millis.div_euclid(1000) - KSUID_EPOCH;
                let time = u32::try_from(seconds).ok()?;
                let mut bytes = [if upper { 0xFF } else { 0 }; 20];
                bytes[..4].copy_from_slice(&time.to_be_bytes());
                Some(base62(bytes))
            }
        }
    }
}

/// 20 bytes as a big-endian number in 27 base-62 digits, as KSUIDs are written.
fn base62(mut number: [u8; 20]) -> String {
    let mut digits = [b'0'; 27];
    for digit in digits.iter_mut().rev() {
        // Divide the whole number by 62, keeping the remainder.
        let mut remainder = 0u32;
        for byte in number.iter_mut() {
            let value = (remainder << 8) | u32::from(*byte);
            *byte = (value / 62) as u8;
            remainder = value % 62;
        }
        *digit = KSUID_ALPHABET[remainder as usize];
    }
    String::from_utf8_lossy(&digits).into_owned()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn bounds_match_known_ids() {
        // The ulid package's example: ulid(1469918176385) is 01ARYZ6S41TSV4RRFFQ69G5FAV.
        let lower = SortableId::Ulid.bound(1_469_918_176_385, false).unwrap();
        let upper = SortableId::Ulid.bound(1_469_918_176_385, true).unwrap();
        assert!(
            lower.as_str() <= "01ARYZ6S41TSV4RRFFQ69G5FAV"
                && "01ARYZ6S41TSV4RRFFQ69G5FAV" <= upper.as_str()
        );
        assert_eq!(&lower[..10], "01ARYZ6S41");
        // segmentio/ksuid's example: 0ujtsYcgvSTl8PAuAdqWYSMnLOv was made at 2017-10-10T04:00:47Z.
        let at = 1_507_608_047_000;
        let lower = SortableId::Ksuid.bound(at, false).unwrap();
        let upper = SortableId::Ksuid.bound(at, true).unwrap();
        assert!(
            lower.as_str() <= "0ujtsYcgvSTl8PAuAdqWYSMnLOv"
                && "0ujtsYcgvSTl8PAuAdqWYSMnLOv" <= upper.as_str()
        );
        let next = SortableId::Ksuid.bound(at + 1000, false).unwrap();
        assert!("0ujtsYcgvSTl8PAuAdqWYSMnLOv" < next.as_str());
        assert!(SortableId::Ulid.is_valid("01ARYZ6S41TSV4RRFFQ69G5FAV"));
        assert!(SortableId::Ulid.is_valid("01arz3ndektsv4rrffq69g5fav"));
        assert!(!SortableId::Ulid.is_valid("81ARZ3NDEKTSV4RRFFQ69G5FAV"));
        assert!(SortableId::Ksuid.is_valid("0ujtsYcgvSTl8PAuAdqWYSMnLOv"));
        assert!(!SortableId::Ksuid.is_valid("0ujtsYcgvSTl8PAuAdqWYSMnLO"));
        assert_eq!(SortableId::Ulid.bound(-1, false), None);
        assert_eq!(SortableId::Ksuid.bound(0, false), None);
    }

    proptest! {
        /// Ids of an earlier time sort before those of a later one, and a time's smallest id
        /// sorts before its largest.
        #[test]
        fn bounds_sort_by_time(a in 1_400_000_000_000i64..4_000_000_000_000, b in 1_400_000_000_000i64..4_000_000_000_000) {
            for format in [SortableId::Ulid, SortableId::Ksuid] {
                let step = if format == SortableId::Ksuid { 1000 } else { 1 };
                let (a, b) = (a / step, b / step);
                let (la, ua) = (format.bound(a * step, false).unwrap(), format.bound(a * step, true).unwrap());
                let lb = format.bound(b * step, false).unwrap();
                prop_assert!(la < ua);
                prop_assert_eq!(la.cmp(&lb), a.cmp(&b));
                if a < b {
                    prop_assert!(ua < lb);
                }
                // Lowercased (as ElectroDB writes keys), ULIDs keep their order.
                if format == SortableId::Ulid {
                    prop_assert_eq!(la.to_lowercase().cmp(&lb.to_lowercase()), a.cmp(&b));
                }
            }
        }
    }
}
