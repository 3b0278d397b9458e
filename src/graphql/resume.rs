//! The seam between a subscription's catch-up page and its live changes.
//!
//! A subscription that names the cursor of the last edge a client holds starts following the
//! table's stream first, then reads the connection's items after that cursor (a page), then
//! sends live changes. Between the subscription's place in the stream and the end of the page
//! read lies a window: a change recorded in it may come before the read (the page already shows
//! its outcome) or after it. [`Seam`] decides, for each change in that window, what the client
//! holds of the item before it, so that every change it is sent makes sense applied to what it
//! holds:
//!
//! - An item the page returned: with old and new images, the change the page already shows is
//!   the one whose new image *is* the item read, and the first change after the read is the one
//!   whose old image is. Changes before those are already in the page: skipped.
//! - An item after the cursor that the page did not return: the client does not hold it, so a
//!   change that leaves it in the connection is `ADDED` (not `UPDATED`), and one that takes it out
//!   is not sent. (It was in the connection, then left it, before the read; or entered after.)
//! - An item at or before the cursor: the client paged it, and changes are judged as usual.
//!
//! Whether an item sorts after the cursor is decided in memory, in the order of the connection's
//! read: by the sort key of the table or index read, as DynamoDB compares values. Where that
//! order does not decide (a Scan, whose order is DynamoDB's; two items of an index with the same
//! sort key), changes are judged as usual. The window ends once the table's reader has read past
//! the page read ([`crate::stream::Subscription::reached`]) and [`SETTLE`] has passed since (a
//! stream shows a record moments after its write); from then on every change comes after the
//! read, and the seam is dropped. Within the window its decisions hold for changes after the
//! read too: a longer window costs memory, never a wrong change.
//!
//! One case cannot be told apart: an item that changed from A to B and back to A around the read
//! (the page shows A, and both changes match a side). Its changes are then sent, and the client
//! ends where DynamoDB is.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use aws_sdk_dynamodb::types::AttributeValue;

use crate::{
    cursor::{Key, KeyShape},
    dynamo::{Item, scalar_order},
    stream::{Change, Subscription},
};

/// How long after the catch-up read the seam lasts at least: longer than a stream takes to
/// show a record once its write returned (milliseconds, on DynamoDB and DynamoDB Local alike).
pub const SETTLE: Duration = Duration::from_secs(5);

/// Where the resume cursor stands in the order of the connection's read.
#[derive(Debug, Clone)]
pub struct Place {
    /// The attribute the read orders by: the sort key of the table or index read.
    pub attribute: &'static str,
    /// The cursor's value of it.
    pub value: AttributeValue,
    /// The connection pages in descending order.
    pub descending: bool,
    /// An item with the cursor's value is the cursor's own item (the table's sort key), rather
    /// than one of several an index holds in no order DynamoDB gives.
    pub unique: bool,
}

impl Place {
    /// Whether `item` sorts after the cursor; `None` when the order does not say.
    fn is_after(&self, item: &Item) -> Option<bool> {
        let order = scalar_order(item.get(self.attribute)?, &self.value)?;
        if order.is_eq() {
            return self.unique.then_some(false);
        }
        Some(order.is_gt() != self.descending)
    }
}

/// The items a catch-up page returned, by primary key, and what changes in the window told the
/// client about items it did not return.
#[derive(Debug)]
pub struct Seam {
    key: KeyShape,
    read: HashMap<Key, Item>,
    place: Option<Place>,
    /// Items after the cursor, or the page's, that changes in the window reached: whether the
    /// client holds each now.
    told: HashMap<Key, bool>,
    /// The stream ticket taken after the read: once reached, and [`SETTLE`] after the read,
    /// the window is over.
    end: u64,
    read_at: Instant,
}

impl Seam {
    /// A seam for the items a page read after the cursor at `place`, keyed by the table's
    /// primary key `key`; `end` is the stream ticket taken once the read returned (see
    /// [`Subscription::ask`]).
    pub fn new<'i>(
        key: KeyShape,
        items: impl IntoIterator<Item = &'i Item>,
        place: Option<Place>,
        end: u64,
    ) -> Self {
        let read = items
            .into_iter()
            .filter_map(|item| Some((Key::from_item(item, key).ok()?, item.clone())))
            .collect();
        Self {
            key,
            read,
            place,
            told: HashMap::new(),
            end,
            read_at: Instant::now(),
        }
    }

    /// Whether the window is over for a subscription at `changes`: every change from now on
    /// comes after the read.
    pub fn over(&self, changes: &Subscription) -> bool {
        changes.reached(self.end) && self.read_at.elapsed() >= SETTLE
    }

    /// What the client holds of the item `change` is about, before it: `Some(true)` when it
    /// holds it, `Some(false)` when it does not, `None` when the page already shows this change
    /// (skip it). `before` and `after` say whether the connection holds the item's old and new
    /// image (for this caller).
    pub fn holds(&mut self, change: &Change, before: bool, after: bool) -> Option<bool> {
        let Ok(key) = Key::from_item(&change.keys, self.key) else {
            return Some(before);
        };
        if let Some(read) = self.read.get(&key) {
            let matches = |image: &Option<Item>| image.as_ref().is_some_and(|i| same_item(i, read));
            return if matches(&change.old) {
                // The first change after the read: this and what follows are new to the client.
                self.read.remove(&key);
                self.told.insert(key, after);
                Some(true)
            } else if matches(&change.new) {
                // The change that made the item the page returned.
                self.read.remove(&key);
                self.told.insert(key, true);
                None
            } else {
                // An earlier change, overtaken by the one the page shows.
                None
            };
        }
        if let Some(held) = self.told.insert(key.clone(), after) {
            return Some(held);
        }
        let past = |image: &Option<Item>| {
            let place = self.place.as_ref()?;
            place.is_after(image.as_ref()?)
        };
        if before && past(&change.old) == Some(true) {
            // After the cursor and not in the page: the client never had it.
            Some(false)
        } else if after && past(&change.new) == Some(true) {
            Some(before)
        } else {
            // At or before the cursor (the client paged it), or nothing says: as usual.
            self.told.remove(&key);
            Some(before)
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
            origin: None,
        }
    }

    /// A cursor at `sk` in a table read (ascending unless `descending`).
    fn place(sk: &str, descending: bool) -> Option<Place> {
        Some(Place {
            attribute: "sk",
            value: AttributeValue::N(sk.to_owned()),
            descending,
            unique: true,
        })
    }

    /// What the seam says of a change both of whose images the connection holds (when present).
    fn holds(seam: &mut Seam, old: Option<Item>, new: Option<Item>) -> Option<bool> {
        let (before, after) = (old.is_some(), new.is_some());
        seam.holds(&change(old, new), before, after)
    }

    #[test]
    fn changes_up_to_the_one_the_page_shows_are_skipped_and_later_ones_sent() {
        let read = item("1", "b");
        let mut seam = Seam::new(&KEY, [&read], place("0", false), 1);
        // Written before the read, recorded after the subscription's place.
        assert_eq!(holds(&mut seam, None, Some(item("1", "a"))), None);
        assert_eq!(
            holds(&mut seam, Some(item("1", "a")), Some(item("1", "b"))),
            None
        );
        assert_eq!(seam.pending(), 0);
        // After the read: sent, as changes of an item the client holds, and so is what follows.
        let b_to_a = holds(&mut seam, Some(item("1", "b")), Some(item("1", "a")));
        assert_eq!(b_to_a, Some(true));
        let a_to_b = holds(&mut seam, Some(item("1", "a")), Some(item("1", "b")));
        assert_eq!(a_to_b, Some(true));
        assert_eq!(holds(&mut seam, Some(item("1", "b")), None), Some(true));
        assert_eq!(holds(&mut seam, None, Some(item("1", "c"))), Some(false));
    }

    #[test]
    fn the_first_change_after_the_read_is_sent_when_no_earlier_one_was_recorded() {
        let read = item("1", "b");
        let mut seam = Seam::new(&KEY, [&read], place("0", false), 1);
        assert_eq!(holds(&mut seam, Some(item("1", "b")), None), Some(true));
        assert_eq!(seam.pending(), 0);
        // Deleted, then created again: the client holds nothing of it in between.
        assert_eq!(holds(&mut seam, None, Some(item("1", "c"))), Some(false));
    }

    #[test]
    fn an_item_after_the_cursor_the_page_did_not_return_is_one_the_client_never_had() {
        let mut seam = Seam::new(&KEY, [], place("3", false), 1);
        // Changed and then deleted before the read, both recorded after the subscription's
        // place: the change enters the client's copy (`ADDED`), the deletion takes it out.
        assert_eq!(
            holds(&mut seam, Some(item("5", "a")), Some(item("5", "b"))),
            Some(false)
        );
        assert_eq!(holds(&mut seam, Some(item("5", "b")), None), Some(true));
        // A deletion first: the client never had it, so there is nothing to remove.
        assert_eq!(holds(&mut seam, Some(item("6", "a")), None), Some(false));
        assert_eq!(holds(&mut seam, None, Some(item("6", "b"))), Some(false));
        assert_eq!(
            holds(&mut seam, Some(item("6", "b")), Some(item("6", "c"))),
            Some(true)
        );
    }

    #[test]
    fn items_at_or_before_the_cursor_are_the_clients_own() {
        let mut seam = Seam::new(&KEY, [], place("3", false), 1);
        for sk in ["1", "3"] {
            let updated = holds(&mut seam, Some(item(sk, "a")), Some(item(sk, "b")));
            assert_eq!(updated, Some(true), "{sk}");
            assert_eq!(holds(&mut seam, Some(item(sk, "b")), None), Some(true));
            assert_eq!(holds(&mut seam, None, Some(item(sk, "c"))), Some(false));
        }
        // In descending order, smaller values come after the cursor.
        let mut seam = Seam::new(&KEY, [], place("3", true), 1);
        let after = holds(&mut seam, Some(item("1", "a")), Some(item("1", "b")));
        assert_eq!(after, Some(false));
        let before = holds(&mut seam, Some(item("5", "a")), Some(item("5", "b")));
        assert_eq!(before, Some(true));
    }

    #[test]
    fn where_the_order_does_not_say_changes_are_judged_as_usual() {
        // A Scan: no place.
        let mut seam = Seam::new(&KEY, [], None, 1);
        let updated = holds(&mut seam, Some(item("5", "a")), Some(item("5", "b")));
        assert_eq!(updated, Some(true));
        // An index's ties with the cursor's value.
        let tie = Place {
            unique: false,
            ..place("5", false).unwrap()
        };
        let mut seam = Seam::new(&KEY, [], Some(tie), 1);
        let updated = holds(&mut seam, Some(item("5", "a")), Some(item("5", "b")));
        assert_eq!(updated, Some(true));
        let removed = holds(&mut seam, Some(item("5", "b")), None);
        assert_eq!(removed, Some(true));
    }

    #[test]
    fn an_item_that_moves_past_the_cursor_stays_the_clients() {
        // A connection through an index sorted by `rank`: the client paged the item at rank 2;
        // it moves to rank 9, after the cursor (rank 3).
        let ranked = |rank: &str, text: &str| {
            let mut item = item("1", text);
            item.insert("rank".to_owned(), AttributeValue::N(rank.to_owned()));
            item
        };
        let place = Place {
            attribute: "rank",
            value: AttributeValue::N("3".to_owned()),
            descending: false,
            unique: false,
        };
        let mut seam = Seam::new(&KEY, [], Some(place), 1);
        let moved = holds(&mut seam, Some(ranked("2", "a")), Some(ranked("9", "a")));
        assert_eq!(moved, Some(true));
        let later = holds(&mut seam, Some(ranked("9", "a")), Some(ranked("9", "b")));
        assert_eq!(later, Some(true));
        // One that was after the cursor from the start, and not in the page, is not.
        let mut seam = Seam::new(&KEY, [], seam.place.clone(), 1);
        let other = holds(&mut seam, Some(ranked("8", "a")), Some(ranked("9", "a")));
        assert_eq!(other, Some(false));
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
