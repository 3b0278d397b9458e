//! Whether a read would return an item, decided in memory: the same key condition, index and
//! filters as DynamoDB applies to a Query or Scan, for items that come from somewhere other
//! than a read (a table's stream).
//!
//! DynamoDB's rules, as its expression reference gives them: key and comparison operands compare
//! only within one type (strings and binaries by their bytes, numbers by value); `<>` holds for
//! a missing attribute or one of another type; `begins_with` takes strings and binaries;
//! `contains` a substring of a string, or a member of a set or list.

use std::cmp::Ordering;

use aws_sdk_dynamodb::types::AttributeValue;

use super::{FilterTest, Item, ReadSpec, SortKeyCondition};
use crate::{cursor::Key, number::DynamoNumber};

impl ReadSpec<'_> {
    /// Whether this read returns `item`: `None` when it does not; else the kind [`super::Keep`]
    /// gives it (`Some(None)` when the read keeps every item).
    pub fn holds(&self, item: &Item) -> Option<Option<u32>> {
        // An index holds only items with every one of its key attributes, each of its type.
        Key::from_item(item, self.shape).ok()?;
        if let Some((attribute, value)) = &self.partition
            && !item.get(*attribute).is_some_and(|v| equal(v, value))
        {
            return None;
        }
        if let Some((attribute, condition)) = &self.sort {
            let value = item.get(*attribute)?;
            let holds = match condition {
                SortKeyCondition::Range(low, high) => {
                    low.as_ref()
                        .is_none_or(|low| order(value, low).is_some_and(Ordering::is_ge))
                        && high
                            .as_ref()
                            .is_none_or(|high| order(value, high).is_some_and(Ordering::is_le))
                }
                SortKeyCondition::Prefix(start) => begins_with(value, start),
            };
            if !holds {
                return None;
            }
        }
        for (attribute, test) in self.filters.iter().chain(&self.expected) {
            if !passes(item.get(*attribute), test) {
                return None;
            }
        }
        match &self.keep {
            Some(keep) => keep.0(item).map(Some),
            None => Some(None),
        }
    }
}

/// One filter on an attribute's value (`None`: the item lacks it).
fn passes(value: Option<&AttributeValue>, test: &FilterTest) -> bool {
    match test {
        FilterTest::Exists(exists) => value.is_some() == *exists,
        FilterTest::Compare("<>", operand) => !value.is_some_and(|v| equal(v, operand)),
        FilterTest::Compare(op, operand) => {
            let Some(value) = value else { return false };
            if *op == "=" {
                return equal(value, operand);
            }
            order(value, operand).is_some_and(|o| match *op {
                "<" => o.is_lt(),
                "<=" => o.is_le(),
                ">" => o.is_gt(),
                ">=" => o.is_ge(),
                _ => false,
            })
        }
        FilterTest::BeginsWith(start) => value.is_some_and(|v| begins_with(v, start)),
        FilterTest::Contains(operand) => value.is_some_and(|v| contains(v, operand)),
        FilterTest::In(operands) => value.is_some_and(|v| operands.iter().any(|o| equal(v, o))),
    }
}

/// The order of two scalars of one type, as DynamoDB compares them (and sorts keys); `None`
/// across types, and for values with no order (sets, lists, maps, booleans, nulls).
pub fn order(a: &AttributeValue, b: &AttributeValue) -> Option<Ordering> {
    match (a, b) {
        (AttributeValue::S(a), AttributeValue::S(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        (AttributeValue::B(a), AttributeValue::B(b)) => Some(a.as_ref().cmp(b.as_ref())),
        (AttributeValue::N(a), AttributeValue::N(b)) => number_order(a, b),
        _ => None,
    }
}

fn number_order(a: &str, b: &str) -> Option<Ordering> {
    Some(
        DynamoNumber::parse(a)
            .ok()?
            .numeric_cmp(&DynamoNumber::parse(b).ok()?),
    )
}

/// Equality as DynamoDB's `=`: numbers by value, sets whatever their order, maps and lists
/// element by element.
fn equal(a: &AttributeValue, b: &AttributeValue) -> bool {
    match (a, b) {
        (AttributeValue::N(a), AttributeValue::N(b)) => number_order(a, b) == Some(Ordering::Equal),
        (AttributeValue::Ns(a), AttributeValue::Ns(b)) => {
            a.len() == b.len()
                && a.iter().all(|x| {
                    b.iter()
                        .any(|y| number_order(x, y) == Some(Ordering::Equal))
                })
        }
        (AttributeValue::Ss(a), AttributeValue::Ss(b)) => {
            a.len() == b.len() && a.iter().all(|x| b.contains(x))
        }
        (AttributeValue::Bs(a), AttributeValue::Bs(b)) => {
            a.len() == b.len() && a.iter().all(|x| b.contains(x))
        }
        (AttributeValue::L(a), AttributeValue::L(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| equal(x, y))
        }
        (AttributeValue::M(a), AttributeValue::M(b)) => {
            a.len() == b.len() && a.iter().all(|(k, x)| b.get(k).is_some_and(|y| equal(x, y)))
        }
        _ => a == b,
    }
}

fn begins_with(value: &AttributeValue, start: &AttributeValue) -> bool {
    match (value, start) {
        (AttributeValue::S(v), AttributeValue::S(s)) => v.as_bytes().starts_with(s.as_bytes()),
        (AttributeValue::B(v), AttributeValue::B(s)) => v.as_ref().starts_with(s.as_ref()),
        _ => false,
    }
}

fn contains(value: &AttributeValue, operand: &AttributeValue) -> bool {
    match (value, operand) {
        (AttributeValue::S(v), AttributeValue::S(s)) => v.contains(s.as_str()),
        (AttributeValue::B(v), AttributeValue::B(s)) => {
            let (v, s) = (v.as_ref(), s.as_ref());
            s.is_empty() || v.windows(s.len()).any(|w| w == s)
        }
        (AttributeValue::Ss(set), AttributeValue::S(s)) => set.contains(s),
        (AttributeValue::Ns(set), AttributeValue::N(n)) => set
            .iter()
            .any(|x| number_order(x, n) == Some(Ordering::Equal)),
        (AttributeValue::Bs(set), AttributeValue::B(b)) => set.contains(b),
        (AttributeValue::L(list), operand) => list.iter().any(|x| equal(x, operand)),
        _ => false,
    }
}
