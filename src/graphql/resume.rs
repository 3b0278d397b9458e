//! The seam between a subscription's catch-up page and its live changes.
//!
//! A subscription that names the cursor of the last edge a client holds starts following the
//! table's stream first, then reads the connection's items after that cursor (a page), then
//! sends live changes. A change can be both: written before the page read its item (so the page
//! shows it) but recorded in the stream after the reader joined (so the stream delivers it too).
//! [`Seam`] keeps each item the page returned and decides, for the first changes of that item,
//! which side of the read they fall on: with old and new images, the change the page already
//! shows is the one whose new image *is* the item read, and the first change after the read is
//! the one whose old image is. Changes before those are already in the page. Nothing is sent
//! twice, nothing is skipped that the page did not show.
//!
//! One case cannot be told apart: an item that changed from A to B and back to A around the read
//! (the page shows A, and both changes match a side). Its changes are then sent, and the client
//! ends where DynamoDB is.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::{
    cursor::{Key, KeyShape},
    dynamo::Item,
    stream::Change,
};

/// The items a catch-up page returned, by primary key, until the stream reaches past them.
#[derive(Debug, Default)]
pub struct Seam {
    key: Option<KeyShape>,
    read: HashMap<Key, Item>,
}

impl Seam {
    /// A seam for items read, keyed by the table's primary key `key`.
    pub fn new<'i>(key: KeyShape, items: impl IntoIterator<Item = &'i Item>) -> Self {
        let read = items
            .into_iter()
            .filter_map(|item| Some((Key::from_item(item, key).ok()?, item.clone())))
            .collect();
        Self {
            key: Some(key),
            read,
        }
    }

    /// Whether `change` comes after the page read (send it), or is already in the page (skip).
    pub fn follows(&mut self, change: &Change) -> bool {
        if self.read.is_empty() {
            return true;
        }
        let Some(key) = self
            .key
            .and_then(|shape| Key::from_item(&change.keys, shape).ok())
        else {
            return true;
        };
        let Some(read) = self.read.get(&key) else {
            return true;
        };
        let matches = |image: &Option<Item>| image.as_ref().is_some_and(|i| same_item(i, read));
        if matches(&change.old) {
            // The first change after the read: this and what follows are new to the client.
            self.read.remove(&key);
            true
        } else if matches(&change.new) {
            // The change that made the item the page returned.
            self.read.remove(&key);
            false
        } else {
            // An earlier change, overtaken by the one the page shows.
            false
        }
    }

    /// How many read items still wait for their seam change.
    pub fn pending(&self) -> usize {
        self.read.len()
    }
}

/// Whether two images hold the same item. DynamoDB returns a set's members in no set order, so
/// sets compare as sets; everything else compares exactly (numbers come back from reads and
/// streams in the same canonical form).
pub fn same_item(a: &Item, b: &Item) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(name, value)| b.get(name).is_some_and(|other| same_value(value, other)))
}

fn same_value(a: &AttributeValue, b: &AttributeValue) -> bool {
    use AttributeValue as V;
    fn same_set<T: Ord + Clone>(a: &[T], b: &[T]) -> bool {
        let (mut a, mut b) = (a.to_vec(), b.to_vec());
        a.sort();
        b.sort();
        a == b
    }
    match (a, b) {
        (V::Ss(a), V::Ss(b)) | (V::Ns(a), V::Ns(b)) => same_set(a, b),
        (V::Bs(a), V::Bs(b)) => {
            let bytes = |s: &[aws_sdk_dynamodb::primitives::Blob]| -> Vec<Vec<u8>> {
                s.iter().map(|b| b.as_ref().to_vec()).collect()
            };
            same_set(&bytes(a), &bytes(b))
        }
        (V::M(a), V::M(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| same_value(v, w)))
        }
        (V::L(a), V::L(b)) => a.len() == b.len() && a.iter().zip(b).all(|(v, w)| same_value(v, w)),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::cursor::{KeyAttr, KeyType};

    static KEY: [KeyAttr; 2] = [
        KeyAttr {
            name: "pk",
            ty: KeyType::S,
        },
        KeyAttr {
            name: "sk",
            ty: KeyType::N,
        },
    ];

    fn item(sk: &str, text: &str) -> Item {
        Item::from([
            ("pk".to_owned(), AttributeValue::S("p".to_owned())),
            ("sk".to_owned(), AttributeValue::N(sk.to_owned())),
            ("text".to_owned(), AttributeValue::S(text.to_owned())),
        ])
    }

    fn change(old: Option<Item>, new: Option<Item>) -> Change {
        let keys = old.as_ref().or(new.as_ref()).expect("an image").clone();
        let keys = keys
            .into_iter()
            .filter(|(name, _)| name == "pk" || name == "sk")
            .collect();
        Change {
            table: Arc::from("t"),
            sequence: "1".to_owned(),
            keys,
            old,
            new,
        }
    }

    #[test]
    fn changes_up_to_the_one_the_page_shows_are_skipped_and_later_ones_sent() {
        let read = item("1", "b");
        let mut seam = Seam::new(&KEY, [&read]);
        // Written before the read, recorded after the reader joined.
        assert!(!seam.follows(&change(None, Some(item("1", "a")))));
        assert!(!seam.follows(&change(Some(item("1", "a")), Some(item("1", "b")))));
        assert_eq!(seam.pending(), 0);
        // After the read: sent, and so is everything after it.
        assert!(seam.follows(&change(Some(item("1", "b")), Some(item("1", "a")))));
        assert!(seam.follows(&change(Some(item("1", "a")), Some(item("1", "b")))));
    }

    #[test]
    fn the_first_change_after_the_read_is_sent_when_no_earlier_one_was_recorded() {
        let read = item("1", "b");
        let mut seam = Seam::new(&KEY, [&read]);
        assert!(seam.follows(&change(Some(item("1", "b")), None)));
        assert_eq!(seam.pending(), 0);
        assert!(seam.follows(&change(None, Some(item("1", "c")))));
    }

    #[test]
    fn items_the_page_did_not_return_are_always_sent() {
        let read = item("1", "b");
        let mut seam = Seam::new(&KEY, [&read]);
        assert!(seam.follows(&change(None, Some(item("2", "b")))));
        assert!(seam.follows(&change(Some(item("2", "b")), None)));
        assert_eq!(seam.pending(), 1);
    }

    #[test]
    fn sets_compare_as_sets_and_everything_else_exactly() {
        let mut a = item("1", "x");
        let mut b = item("1", "x");
        a.insert(
            "tags".to_owned(),
            AttributeValue::Ss(vec!["a".to_owned(), "b".to_owned()]),
        );
        b.insert(
            "tags".to_owned(),
            AttributeValue::Ss(vec!["b".to_owned(), "a".to_owned()]),
        );
        assert!(same_item(&a, &b));
        b.insert(
            "tags".to_owned(),
            AttributeValue::Ss(vec!["b".to_owned(), "c".to_owned()]),
        );
        assert!(!same_item(&a, &b));
        let list = |v: &[&str]| {
            AttributeValue::L(
                v.iter()
                    .map(|s| AttributeValue::S((*s).to_owned()))
                    .collect(),
            )
        };
        a.insert("list".to_owned(), list(&["a", "b"]));
        b = a.clone();
        b.insert("list".to_owned(), list(&["b", "a"]));
        assert!(!same_item(&a, &b), "a list's order is its value");
        b.remove("list");
        assert!(!same_item(&a, &b), "a missing attribute differs");
    }
}
