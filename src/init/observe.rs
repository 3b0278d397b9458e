//! What a sample of items says about each attribute: in how many items it is, as which
//! DynamoDB types, and, for strings and numbers, the forms they take (times, dates, integers,
//! a few repeated values). One pass over the items; [`super::fields`] turns it into types.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::DateTime;

use crate::dynamo::Item;

/// The most distinct strings remembered per attribute: more than this is not an enum.
pub const MAX_ENUM_VALUES: usize = 12;

/// Forms of the strings an attribute holds.
#[derive(Debug, Clone, Default)]
pub struct Strings {
    /// Strings seen.
    pub count: usize,
    /// RFC 3339 in UTC (`Z`) with exactly three fractional digits, as JavaScript's
    /// `toISOString` writes (`2026-05-01T12:00:00.123Z`).
    pub iso_millis: usize,
    /// RFC 3339 in UTC (`Z`) in whole seconds (`2026-05-01T12:00:00Z`).
    pub iso_seconds: usize,
    /// Any other RFC 3339 time (other fractions, offsets).
    pub iso_other: usize,
    /// Calendar dates (`2026-05-01`).
    pub dates: usize,
    /// Distinct values and how often each was seen, while there are at most
    /// [`MAX_ENUM_VALUES`]; `None` once there are more.
    pub distinct: Option<BTreeMap<String, usize>>,
    /// The longest, in bytes.
    pub longest: usize,
}

/// Forms of the numbers an attribute holds (as DynamoDB's decimal text, never through f64).
#[derive(Debug, Clone, Default)]
pub struct Numbers {
    /// Numbers seen.
    pub count: usize,
    /// Whole numbers (no fraction, no exponent).
    pub integers: usize,
    /// Whole numbers that fit in 32 bits.
    pub int32: usize,
    /// Whole numbers that fit in 64 bits, with their range.
    pub int64: usize,
    /// The smallest and largest 64-bit whole numbers seen.
    pub range: Option<(i64, i64)>,
}

/// What the sample says about one attribute.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Items that hold it with a value other than NULL.
    pub present: usize,
    /// Items holding it as each DynamoDB type (`S`, `N`, `B`, `BOOL`, `NULL`, `L`, `M`, `SS`,
    /// `NS`, `BS`).
    pub kinds: BTreeMap<&'static str, usize>,
    /// Its strings (`S`, and the members of `SS`).
    pub strings: Strings,
    /// Its numbers (`N`, and the members of `NS`).
    pub numbers: Numbers,
}

impl Observed {
    /// The types it was seen as, other than NULL, most frequent first, as `S in 3, N in 2`.
    pub fn kinds_text(&self) -> String {
        let mut kinds: Vec<(&str, usize)> = self
            .kinds
            .iter()
            .filter(|(k, _)| **k != "NULL")
            .map(|(k, n)| (*k, *n))
            .collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        kinds
            .iter()
            .map(|(k, n)| format!("{k} in {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The one DynamoDB type it was seen as besides NULL, if there is just one.
    pub fn only_kind(&self) -> Option<&'static str> {
        let mut kinds = self.kinds.keys().filter(|k| **k != "NULL");
        let kind = kinds.next()?;
        kinds.next().is_none().then_some(*kind)
    }

    fn string(&mut self, s: &str) {
        let st = &mut self.strings;
        st.count += 1;
        st.longest = st.longest.max(s.len());
        match time_form(s) {
            Some(TimeForm::Millis) => st.iso_millis += 1,
            Some(TimeForm::Seconds) => st.iso_seconds += 1,
            Some(TimeForm::Other) => st.iso_other += 1,
            Some(TimeForm::Date) => st.dates += 1,
            None => {}
        }
        if st.count == 1 {
            st.distinct = Some(BTreeMap::new());
        }
        if let Some(distinct) = &mut st.distinct {
            if let Some(n) = distinct.get_mut(s) {
                *n += 1;
            } else if distinct.len() < MAX_ENUM_VALUES {
                distinct.insert(s.to_owned(), 1);
            } else {
                st.distinct = None;
            }
        }
    }

    fn number(&mut self, n: &str) {
        let nu = &mut self.numbers;
        nu.count += 1;
        let whole = !n.contains(['.', 'e', 'E']);
        if !whole {
            return;
        }
        nu.integers += 1;
        if let Ok(v) = n.parse::<i64>() {
            nu.int64 += 1;
            if i32::try_from(v).is_ok() {
                nu.int32 += 1;
            }
            nu.range = Some(match nu.range {
                Some((lo, hi)) => (lo.min(v), hi.max(v)),
                None => (v, v),
            });
        }
    }
}

/// How `texts` store times, when every one is a time of one form that sorts as the times do
/// (`stored_as`: `iso8601`, `iso8601_seconds` or `date`); `None` for anything else.
pub fn time_storage<'t>(texts: impl IntoIterator<Item = &'t str>) -> Option<&'static str> {
    let mut form = None;
    for text in texts {
        let this = match time_form(text)? {
            TimeForm::Millis => "iso8601",
            TimeForm::Seconds => "iso8601_seconds",
            TimeForm::Date => "date",
            TimeForm::Other => return None,
        };
        if *form.get_or_insert(this) != this {
            return None;
        }
    }
    form
}

enum TimeForm {
    Millis,
    Seconds,
    Other,
    Date,
}

fn time_form(s: &str) -> Option<TimeForm> {
    // Cheap shape test first: every form starts `YYYY-MM-DD`.
    let b = s.as_bytes();
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    if b.len() == 10 {
        return chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .map(|_| TimeForm::Date);
    }
    DateTime::parse_from_rfc3339(s).ok()?;
    let utc = s.ends_with('Z');
    Some(match (utc, s.len()) {
        (true, 24) if b[19] == b'.' => TimeForm::Millis,
        (true, 20) => TimeForm::Seconds,
        _ => TimeForm::Other,
    })
}

/// A value's DynamoDB type, as DynamoDB names it (`S`, `N`, `B`, `BOOL`, `NULL`, `L`, `M`, `SS`,
/// `NS`, `BS`).
pub fn kind_of(value: &AttributeValue) -> &'static str {
    match value {
        AttributeValue::S(_) => "S",
        AttributeValue::N(_) => "N",
        AttributeValue::B(_) => "B",
        AttributeValue::Bool(_) => "BOOL",
        AttributeValue::Null(_) => "NULL",
        AttributeValue::L(_) => "L",
        AttributeValue::M(_) => "M",
        AttributeValue::Ss(_) => "SS",
        AttributeValue::Ns(_) => "NS",
        AttributeValue::Bs(_) => "BS",
        _ => "another type",
    }
}

/// Every attribute of `items`, by name, with what they say about it.
pub fn observe<'i>(items: impl IntoIterator<Item = &'i Item>) -> BTreeMap<String, Observed> {
    let mut out: BTreeMap<String, Observed> = BTreeMap::new();
    for item in items {
        for (name, value) in item {
            let seen = out.entry(name.clone()).or_default();
            match value {
                AttributeValue::S(s) => seen.string(s),
                AttributeValue::N(n) => seen.number(n),
                AttributeValue::Ss(set) => set.iter().for_each(|s| seen.string(s)),
                AttributeValue::Ns(set) => set.iter().for_each(|n| seen.number(n)),
                _ => {}
            }
            let kind = kind_of(value);
            *seen.kinds.entry(kind).or_default() += 1;
            if kind != "NULL" {
                seen.present += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.to_owned())
    }
    fn n(v: &str) -> AttributeValue {
        AttributeValue::N(v.to_owned())
    }

    #[test]
    fn times_of_one_form_are_a_storage() {
        assert_eq!(
            time_storage(["2026-01-10T10:00:00.000Z", "2026-01-11T10:00:00.500Z"]),
            Some("iso8601")
        );
        assert_eq!(
            time_storage(["2026-01-10T10:00:00Z"]),
            Some("iso8601_seconds")
        );
        assert_eq!(time_storage(["2026-01-10", "2026-02-01"]), Some("date"));
        // Forms mixed, offsets, other text, or nothing: no storage.
        assert_eq!(time_storage(["2026-01-10", "2026-01-10T10:00:00Z"]), None);
        assert_eq!(time_storage(["2026-01-10T10:00:00+02:00"]), None);
        assert_eq!(time_storage(["2026-01-10", "Join:r1"]), None);
        assert_eq!(time_storage([]), None);
    }

    #[test]
    fn forms_are_counted() {
        let items: Vec<Item> = [
            ("2026-05-01T12:00:00.123Z", "1714564800000", "PAID"),
            ("2026-05-01T12:00:00Z", "12.5", "PAID"),
            ("2026-05-01", "99999999999999999999999", "SHIPPED"),
            ("2026-05-01T12:00:00+02:00", "-3", "PAID"),
        ]
        .into_iter()
        .map(|(t, num, e)| {
            Item::from([
                ("t".to_owned(), s(t)),
                ("n".to_owned(), n(num)),
                ("e".to_owned(), s(e)),
            ])
        })
        .chain([Item::from([("n".to_owned(), AttributeValue::Null(true))])])
        .collect();
        let seen = observe(&items);
        let t = &seen["t"].strings;
        assert_eq!(
            (t.iso_millis, t.iso_seconds, t.dates, t.iso_other),
            (1, 1, 1, 1)
        );
        let num = &seen["n"];
        assert_eq!(num.present, 4);
        assert_eq!(num.kinds["NULL"], 1);
        assert_eq!(
            (
                num.numbers.integers,
                num.numbers.int64,
                num.numbers.int32,
                num.numbers.range
            ),
            (3, 2, 1, Some((-3, 1_714_564_800_000)))
        );
        let e = seen["e"].strings.distinct.as_ref().unwrap();
        assert_eq!(e.get("PAID"), Some(&3));
        assert_eq!(seen["e"].only_kind(), Some("S"));
    }

    #[test]
    fn many_distinct_strings_are_not_kept() {
        let items: Vec<Item> = (0..=MAX_ENUM_VALUES)
            .map(|i| Item::from([("a".to_owned(), s(&format!("v{i}")))]))
            .collect();
        assert!(observe(&items)["a"].strings.distinct.is_none());
    }
}
