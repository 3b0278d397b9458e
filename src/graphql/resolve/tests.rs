use proptest::prelude::*;

use super::*;
use crate::model::KeyTemplate;

/// Whether `key` meets `condition` as DynamoDB's key condition would: byte order, both ends
/// inclusive.
fn meets(condition: &SortKeyCondition, key: &str) -> bool {
    let text = |v: &AttributeValue| v.as_s().cloned().unwrap_or_default();
    match condition {
        SortKeyCondition::Range(lo, hi) => {
            lo.as_ref()
                .is_none_or(|lo| key.as_bytes() >= text(lo).as_bytes())
                && hi
                    .as_ref()
                    .is_none_or(|hi| key.as_bytes() <= text(hi).as_bytes())
        }
        SortKeyCondition::Prefix(p) => key.starts_with(&text(p)),
    }
}

proptest! {
    /// A range on a text facet that ends the key selects exactly the keys whose value is in
    /// range, in byte order, whatever the values hold: the stored text is the value.
    #[test]
    fn a_range_on_a_last_text_facet_selects_exactly_the_values_in_it(
        value in "\\PC{0,6}", lo in proptest::option::of("\\PC{0,6}"), hi in proptest::option::of("\\PC{0,6}"),
    ) {
        let t = KeyTemplate::parse_unescaped("WORD#{w}").unwrap();
        let key = t.render(|_| Some(value.as_str())).unwrap();
        prop_assert_eq!(t.written(&value), value.clone());
        let s = |v: &Option<String>| v.clone().map(AttributeValue::S);
        let condition = facet_range(&t, "w", |_| None, s(&lo), s(&hi)).unwrap();
        let within = lo.as_ref().is_none_or(|lo| value.as_bytes() >= lo.as_bytes())
            && hi.as_ref().is_none_or(|hi| value.as_bytes() <= hi.as_bytes());
        prop_assert_eq!(meets(&condition, &key), within);
        // Keys of other templates that start alike are never in range.
        let other = format!("WORE#{value}");
        prop_assert!(!meets(&condition, &other));
    }

    /// A range on an enum-like facet followed by `#` (its values' characters all sort above
    /// it), after a fixed facet, selects exactly the keys whose facet is in range, whatever
    /// the facets after it hold; the stored text's order is the values' order.
    #[test]
    fn a_range_on_a_facet_followed_by_a_low_separator_selects_exactly(
        fixed in "[a-z]{1,3}", status in "[A-Z]{0,4}", rest in "\\PC{0,6}",
        lo in proptest::option::of("[A-Z]{0,4}"), hi in proptest::option::of("[A-Z]{0,4}"),
        other in "[A-Z]{0,4}",
    ) {
        let t = KeyTemplate::parse_unescaped("{f}#{status}#{rest}").unwrap();
        let values = |s: &str| {
            let (f, s, r) = (fixed.clone(), s.to_owned(), rest.clone());
            move |name: &str| match name {
                "f" => Some(f.clone()),
                "status" => Some(s.clone()),
                _ => Some(r.clone()),
            }
        };
        let key = {
            let v = values(&status);
            let owned: Vec<(String, String)> = ["f", "status", "rest"]
                .iter()
                .map(|n| ((*n).to_owned(), v(n).unwrap()))
                .collect();
            t.render(|n| owned.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str())).unwrap()
        };
        prop_assert_eq!(
            t.written(&status).cmp(&t.written(&other)),
            status.as_bytes().cmp(other.as_bytes())
        );
        let leading = |name: &str| (name == "f").then_some(fixed.as_str());
        let s = |v: &Option<String>| v.clone().map(AttributeValue::S);
        let condition = facet_range(&t, "status", leading, s(&lo), s(&hi)).unwrap();
        let within = lo.as_ref().is_none_or(|lo| status.as_bytes() >= lo.as_bytes())
            && hi.as_ref().is_none_or(|hi| status.as_bytes() <= hi.as_bytes());
        prop_assert_eq!(meets(&condition, &key), within, "{} {:?}", key, condition);
    }
}
