//! Which subscriptions of a table a change can concern, found by looking the change up rather
//! than by asking every subscription.
//!
//! A subscription says when it joins which changes it may want ([`Route`]): those of one
//! partition of the table or of one of its indexes (what a Query reads), those of one item
//! (`nodeChanged`), or every change (a Scan). A change is looked up by the value its key and its
//! old and new images hold for each partition attribute some subscription routes by (an item
//! moved from one partition to another reaches both), and by its key; only the subscriptions
//! found judge it. Judging stays above this layer: routing has to find a superset of the
//! subscriptions a change concerns, and it does, because a Query on partition `P` holds an item
//! only if the item's image holds `P`.
//!
//! The cost of a change is then a few hash look-ups (one per distinct partition attribute and
//! image, one for the key) plus the subscriptions it concerns, whatever the number of
//! subscriptions on other partitions.

use std::{collections::HashMap, sync::Arc};

use aws_sdk_dynamodb::types::AttributeValue;

use super::{Change, members::Members};
use crate::{
    dynamo::{Item, ReadSpec},
    number::DynamoNumber,
};

/// Which changes of a table a subscription may want.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// Changes whose key, old image or new image holds `value` for `attribute`: a Query's
    /// partition, on the table or on an index.
    Partition {
        /// The partition key attribute of the table or index read.
        attribute: Arc<str>,
        /// Its value in the partition read.
        value: AttributeValue,
    },
    /// Changes of the item with this primary key.
    Item(Item),
    /// Every change of the table: a Scan.
    Every,
}

impl Route {
    /// The changes a read may return items of: those of its partition for a Query, every
    /// change for a Scan.
    pub fn of_read(read: &ReadSpec<'_>) -> Self {
        match &read.partition {
            Some((attribute, value)) => Self::Partition {
                attribute: Arc::from(*attribute),
                value: value.clone(),
            },
            None => Self::Every,
        }
    }
}

/// A key attribute's value as routing compares it: by type and bytes, numbers in DynamoDB's own
/// form (`1.50` and `1.5` are one value, as DynamoDB's `=` says).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Scalar {
    S(Box<str>),
    N(Box<str>),
    B(Box<[u8]>),
}

impl Scalar {
    /// `None` for a value of no key type (sets, lists, maps, booleans, nulls): no key holds one.
    fn of(value: &AttributeValue) -> Option<Self> {
        Some(match value {
            AttributeValue::S(s) => Self::S(s.as_str().into()),
            AttributeValue::N(n) => Self::N(
                DynamoNumber::normalize(n)
                    .map_or_else(|_| n.clone(), DynamoNumber::into_string)
                    .into(),
            ),
            AttributeValue::B(b) => Self::B(b.as_ref().into()),
            _ => return None,
        })
    }
}

/// An item's primary key as routing compares it: its attributes in name order.
type ItemKey = Box<[(Box<str>, Scalar)]>;

fn item_key(keys: &Item) -> Option<ItemKey> {
    let mut key = keys
        .iter()
        .map(|(name, value)| Some((name.as_str().into(), Scalar::of(value)?)))
        .collect::<Option<Vec<(Box<str>, Scalar)>>>()?;
    key.sort_by(|a, b| a.0.cmp(&b.0));
    Some(key.into_boxed_slice())
}

/// A [`Route`] as the table looks it up.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum RouteKey {
    Partition(Arc<str>, Scalar),
    Item(ItemKey),
    Every,
}

impl RouteKey {
    /// A route that cannot be looked up by value (a partition value or key of no key type, which
    /// no item holds) sees every change: routing may find too many subscriptions, never too few.
    pub(super) fn of(route: &Route) -> Self {
        match route {
            Route::Partition { attribute, value } => match Scalar::of(value) {
                Some(value) => Self::Partition(Arc::clone(attribute), value),
                None => Self::Every,
            },
            Route::Item(keys) => item_key(keys).map_or(Self::Every, Self::Item),
            Route::Every => Self::Every,
        }
    }
}

/// The subscriptions of one table by route. `M` is what a subscription is known by; two equal
/// members are one subscription.
#[derive(Debug)]
pub(super) struct Routes<M> {
    /// By partition attribute, then by its value.
    partitions: HashMap<Arc<str>, HashMap<Scalar, Members<M>>>,
    items: HashMap<ItemKey, Members<M>>,
    every: Members<M>,
    len: usize,
}

impl<M> Default for Routes<M> {
    fn default() -> Self {
        Self {
            partitions: HashMap::new(),
            items: HashMap::new(),
            every: Members::default(),
            len: 0,
        }
    }
}

impl<M: std::hash::Hash + Eq> Routes<M> {
    /// How many subscriptions are routed.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Routes `member` by `route`.
    pub(super) fn insert(&mut self, route: &RouteKey, member: M) {
        self.len += 1;
        match route {
            RouteKey::Partition(attribute, value) => self
                .partitions
                .entry(Arc::clone(attribute))
                .or_default()
                .entry(value.clone())
                .or_default()
                .push(member),
            RouteKey::Item(key) => self.items.entry(key.clone()).or_default().push(member),
            RouteKey::Every => self.every.push(member),
        }
    }

    /// Takes `member` out of `route`; whether it was there. Constant time, whatever the number of
    /// subscriptions following the route (see [`Members`]).
    pub(super) fn remove(&mut self, route: &RouteKey, member: &M) -> bool {
        let removed = match route {
            RouteKey::Partition(attribute, value) => {
                let Some(values) = self.partitions.get_mut(attribute) else {
                    return false;
                };
                let removed = take(values.get_mut(value), member);
                if values.get(value).is_some_and(Members::is_empty) {
                    values.remove(value);
                    if values.is_empty() {
                        self.partitions.remove(attribute);
                    }
                }
                removed
            }
            RouteKey::Item(key) => {
                let removed = take(self.items.get_mut(key), member);
                if self.items.get(key).is_some_and(Members::is_empty) {
                    self.items.remove(key);
                }
                removed
            }
            RouteKey::Every => take(Some(&mut self.every), member),
        };
        if removed {
            self.len -= 1;
        }
        removed
    }

    /// Calls `found` once for each subscription `change` may concern.
    pub(super) fn concerned(&self, change: &Change, mut found: impl FnMut(&M)) {
        let images = [Some(&change.keys), change.old.as_ref(), change.new.as_ref()];
        for (attribute, values) in &self.partitions {
            // The distinct values of the attribute in the key and images: an item that stays in
            // its partition is looked up once, one that moves under both values.
            let mut seen: [Option<Scalar>; 3] = [None, None, None];
            for (slot, image) in images.iter().enumerate() {
                let Some(value) = image.and_then(|item| item.get(&**attribute)) else {
                    continue;
                };
                let Some(value) = Scalar::of(value) else {
                    continue;
                };
                if seen[..slot].iter().flatten().any(|s| *s == value) {
                    continue;
                }
                values
                    .get(&value)
                    .into_iter()
                    .flat_map(Members::iter)
                    .for_each(&mut found);
                seen[slot] = Some(value);
            }
        }
        if !self.items.is_empty()
            && let Some(key) = item_key(&change.keys)
        {
            self.items
                .get(&key)
                .into_iter()
                .flat_map(Members::iter)
                .for_each(&mut found);
        }
        self.every.iter().for_each(found);
    }

    /// Whether a change of the item with primary key `keys` may concern some subscription, told
    /// from the key alone (an item's key never changes, so its images hold the same values for
    /// the key's attributes); `None` when the key cannot tell: a subscription follows an
    /// attribute the key lacks (an index's partition), or every change.
    pub(super) fn by_key(&self, keys: &Item) -> Option<bool> {
        if !self.every.is_empty() {
            return Some(true);
        }
        for (attribute, values) in &self.partitions {
            let value = Scalar::of(keys.get(&**attribute)?)?;
            if values.contains_key(&value) {
                return Some(true);
            }
        }
        if !self.items.is_empty()
            && let Some(key) = item_key(keys)
            && self.items.contains_key(&key)
        {
            return Some(true);
        }
        Some(false)
    }

    /// Calls `each` for every routed subscription.
    pub(super) fn each(&self, mut each: impl FnMut(&M)) {
        self.partitions
            .values()
            .flat_map(HashMap::values)
            .chain(self.items.values())
            .chain(std::iter::once(&self.every))
            .flat_map(Members::iter)
            .for_each(&mut each);
    }
}

/// Takes `member` out of `members`, if there.
fn take<M: std::hash::Hash + Eq>(members: Option<&mut Members<M>>, member: &M) -> bool {
    members.is_some_and(|members| members.take(member))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;
    use crate::{
        cursor::{KeyAttr, KeyShape, KeyType},
        dynamo::{FilterTest, SortKeyCondition},
    };

    fn s(value: &str) -> AttributeValue {
        AttributeValue::S(value.to_owned())
    }

    fn n(value: &str) -> AttributeValue {
        AttributeValue::N(value.to_owned())
    }

    fn item(pairs: &[(&str, AttributeValue)]) -> Item {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    fn change(keys: Item, old: Option<Item>, new: Option<Item>) -> Change {
        Change {
            table: Arc::from("T"),
            sequence: "1".to_owned(),
            keys,
            old,
            new,
            origin: None,
        }
    }

    fn found(routes: &Routes<u32>, change: &Change) -> Vec<u32> {
        let mut found = Vec::new();
        routes.concerned(change, |m| found.push(*m));
        found.sort_unstable();
        found
    }

    fn partition(attribute: &str, value: AttributeValue) -> RouteKey {
        RouteKey::of(&Route::Partition {
            attribute: Arc::from(attribute),
            value,
        })
    }

    #[test]
    fn a_change_reaches_its_partitions_subscribers_the_item_s_and_every_change_s_only() {
        let mut routes = Routes::default();
        routes.insert(&partition("pk", s("USER#ann")), 1);
        routes.insert(&partition("pk", s("USER#bob")), 2);
        routes.insert(&partition("gsi1pk", s("open")), 3);
        routes.insert(&partition("gsi1pk", s("closed")), 4);
        let ann_1 = item(&[("pk", s("USER#ann")), ("sk", s("1"))]);
        routes.insert(&RouteKey::of(&Route::Item(ann_1.clone())), 5);
        routes.insert(&RouteKey::Every, 6);
        assert_eq!(routes.len(), 6);

        // Ann's purchase 1, open: her partition's, the open index's, the item's, the Scan's.
        let image = item(&[("pk", s("USER#ann")), ("sk", s("1")), ("gsi1pk", s("open"))]);
        let insert = change(ann_1.clone(), None, Some(image.clone()));
        assert_eq!(found(&routes, &insert), [1, 3, 5, 6]);
        // Closed: it leaves `open` and enters `closed`: both sides hear of it.
        let closed = item(&[
            ("pk", s("USER#ann")),
            ("sk", s("1")),
            ("gsi1pk", s("closed")),
        ]);
        let moved = change(ann_1.clone(), Some(image), Some(closed.clone()));
        assert_eq!(found(&routes, &moved), [1, 3, 4, 5, 6]);
        // Deleted, from a stream of keys only: the key still routes it to Ann's partition.
        assert_eq!(found(&routes, &change(ann_1, None, None)), [1, 5, 6]);
        // Another user's item: Bob's partition and the Scan; nobody else is asked.
        let bob = item(&[("pk", s("USER#bob")), ("sk", s("9"))]);
        assert_eq!(
            found(&routes, &change(bob.clone(), None, Some(bob))),
            [2, 6]
        );

        assert!(routes.remove(&partition("pk", s("USER#ann")), &1));
        assert!(!routes.remove(&partition("pk", s("USER#ann")), &1));
        assert!(routes.remove(&RouteKey::Every, &6));
        assert_eq!(routes.len(), 4);
        let mut all = Vec::new();
        routes.each(|m| all.push(*m));
        all.sort_unstable();
        assert_eq!(all, [2, 3, 4, 5]);
    }

    #[test]
    fn numbers_route_by_value_and_types_do_not_mix() {
        let mut routes = Routes::default();
        routes.insert(&partition("shard", n("1.50")), 1);
        routes.insert(&partition("shard", s("1.5")), 2);
        let keys = item(&[("shard", n("1.5")), ("id", s("x"))]);
        assert_eq!(found(&routes, &change(keys, None, None)), [1]);
        // A partition value of no key type is never held by an item: it sees every change.
        assert_eq!(
            partition("shard", AttributeValue::Bool(true)),
            RouteKey::Every
        );
    }

    // The property behind routing: a subscription whose read holds a change's old or new image
    // (what every subscriber's judge requires before it sends anything: `holds` for a connection,
    // the key for `nodeChanged`) is among those the change is routed to. Random reads (the table
    // or an index, with sort conditions and filters, or a Scan) and random changes (inserts,
    // updates within and across partitions, deletes, missing images, numbers in other forms).

    const ATTRIBUTES: [&str; 5] = ["pk", "sk", "gpk", "gsk", "status"];

    fn value() -> impl Strategy<Value = AttributeValue> {
        prop_oneof![
            prop::sample::select(vec!["a", "b", "c"]).prop_map(s),
            prop::sample::select(vec!["1", "1.0", "2", "02", "2E0", "-0"]).prop_map(n),
            prop::sample::select(vec![b"a".to_vec(), b"b".to_vec()])
                .prop_map(|b| AttributeValue::B(b.into())),
        ]
    }

    fn image() -> impl Strategy<Value = Item> {
        prop::collection::vec(prop::option::of(value()), ATTRIBUTES.len()).prop_map(|values| {
            ATTRIBUTES
                .iter()
                .zip(values)
                .filter_map(|(name, v)| Some(((*name).to_owned(), v?)))
                .collect()
        })
    }

    /// A change whose images share the key (`pk`, `sk`), either of them missing.
    fn any_change() -> impl Strategy<Value = Change> {
        (
            value(),
            value(),
            prop::option::of(image()),
            prop::option::of(image()),
        )
            .prop_map(|(pk, sk, old, new)| {
                let keys = item(&[("pk", pk), ("sk", sk)]);
                let with_keys = |image: Item| {
                    let mut image = image;
                    image.extend(keys.clone());
                    image
                };
                change(keys.clone(), old.map(with_keys), new.map(with_keys))
            })
    }

    #[derive(Debug, Clone)]
    enum Read {
        Query {
            index: bool,
            partition: AttributeValue,
            sort: Option<SortKeyCondition>,
            status: Option<AttributeValue>,
        },
        Scan {
            status: Option<AttributeValue>,
        },
        Node(AttributeValue, AttributeValue),
    }

    fn read() -> impl Strategy<Value = Read> {
        let sort = prop::option::of(prop_oneof![
            (prop::option::of(value()), prop::option::of(value()))
                .prop_map(|(low, high)| SortKeyCondition::Range(low, high)),
            value().prop_map(SortKeyCondition::Prefix),
        ]);
        prop_oneof![
            (any::<bool>(), value(), sort, prop::option::of(value())).prop_map(
                |(index, partition, sort, status)| Read::Query {
                    index,
                    partition,
                    sort,
                    status,
                }
            ),
            prop::option::of(value()).prop_map(|status| Read::Scan { status }),
            (value(), value()).prop_map(|(pk, sk)| Read::Node(pk, sk)),
        ]
    }

    /// A key shape for one case (leaked: a test's few thousand are small).
    fn shape(attrs: Vec<KeyAttr>) -> KeyShape {
        Box::leak(attrs.into_boxed_slice())
    }

    fn key_type(value: &AttributeValue) -> KeyType {
        match value {
            AttributeValue::N(_) => KeyType::N,
            AttributeValue::B(_) => KeyType::B,
            _ => KeyType::S,
        }
    }

    /// The read's spec, as a connection's subscription plans it, and its route.
    fn planned(read: &Read) -> (Option<ReadSpec<'static>>, Route) {
        let attr = |name: &'static str, ty| KeyAttr { name, ty };
        let filters = |status: &Option<AttributeValue>| {
            status
                .iter()
                .map(|v| ("status", FilterTest::Compare("=", v.clone())))
                .collect()
        };
        let spec = |shape, partition, sort, filters| ReadSpec {
            table: "T",
            index: None,
            shape,
            partition,
            sort,
            filters,
            expected: Vec::new(),
            keep: None,
            projection: None,
            consistent: false,
        };
        match read {
            Read::Query {
                index,
                partition,
                sort,
                status,
            } => {
                let ty = key_type(partition);
                let (pk, sk) = if *index { ("gpk", "gsk") } else { ("pk", "sk") };
                let shape = if *index {
                    shape(vec![
                        attr("gpk", ty),
                        attr("gsk", KeyType::S),
                        attr("pk", KeyType::S),
                        attr("sk", KeyType::S),
                    ])
                } else {
                    shape(vec![attr("pk", ty), attr("sk", KeyType::S)])
                };
                let spec = spec(
                    shape,
                    Some((pk, partition.clone())),
                    sort.clone().map(|c| (sk, c)),
                    filters(status),
                );
                let route = Route::of_read(&spec);
                (Some(spec), route)
            }
            Read::Scan { status } => {
                let shape = shape(vec![attr("pk", KeyType::S), attr("sk", KeyType::S)]);
                let spec = spec(shape, None, None, filters(status));
                let route = Route::of_read(&spec);
                (Some(spec), route)
            }
            Read::Node(pk, sk) => (
                None,
                Route::Item(item(&[("pk", pk.clone()), ("sk", sk.clone())])),
            ),
        }
    }

    /// Whether a subscriber with this read could be sent the change: its read holds an image
    /// (a connection), or the change is of its item (`nodeChanged`, comparing keys as the
    /// cursor codec's `Key` does: by type and value).
    fn may_concern(read: &Read, spec: Option<&ReadSpec<'_>>, change: &Change) -> bool {
        match (read, spec) {
            (Read::Node(pk, sk), _) => {
                let same = |a: Option<&AttributeValue>, b: &AttributeValue| {
                    a.is_some_and(|a| Scalar::of(a) == Scalar::of(b))
                };
                same(change.keys.get("pk"), pk) && same(change.keys.get("sk"), sk)
            }
            (_, Some(spec)) => [&change.old, &change.new]
                .into_iter()
                .flatten()
                .any(|image| spec.holds(image).is_some()),
            (_, None) => false,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn every_subscription_a_change_may_concern_is_routed_the_change(
            reads in prop::collection::vec(read(), 1..12),
            changes in prop::collection::vec(any_change(), 1..8),
        ) {
            let mut routes = Routes::default();
            let planned: Vec<_> = reads.iter().map(planned).collect();
            for (m, (_, route)) in planned.iter().enumerate() {
                routes.insert(&RouteKey::of(route), m);
            }
            for change in &changes {
                let mut routed = Vec::new();
                routes.concerned(change, |m| routed.push(*m));
                let distinct: BTreeSet<usize> = routed.iter().copied().collect();
                // What the key alone says never hides a subscription the change is routed to.
                if routes.by_key(&change.keys) == Some(false) {
                    prop_assert!(routed.is_empty(), "the key said none, yet {:?}", routed);
                }
                prop_assert_eq!(distinct.len(), routed.len(), "a subscription routed twice");
                for (m, read) in reads.iter().enumerate() {
                    if may_concern(read, planned[m].0.as_ref(), change) {
                        prop_assert!(
                            distinct.contains(&m),
                            "{:?} may concern {:?} but was not routed it",
                            change,
                            read
                        );
                    }
                }
            }
            // Taken out one by one, the table ends empty.
            for (m, (_, route)) in planned.iter().enumerate() {
                prop_assert!(routes.remove(&RouteKey::of(route), &m));
            }
            prop_assert_eq!(routes.len(), 0);
            prop_assert!(routes.partitions.is_empty() && routes.items.is_empty());
        }
    }
}
