//! The subscriptions that follow one route ([`super::routes`]), kept so that one leaving costs
//! the same whatever the crowd: a route most subscriptions follow alone (each user on their own
//! partition) holds a short list, searched when one leaves in a few comparisons; past [`FEW`]
//! members, a set indexed by identity, which a leaver leaves in constant time, so a partition
//! that tens of thousands follow pays nothing per leaver for the others.

use std::hash::Hash;

use indexmap::IndexSet;

/// The most members kept in a list; a route that grows past it keeps a set until it shrinks
/// to half (so that one joining and leaving at the edge does not convert it each time).
const FEW: usize = 16;

/// The subscriptions of one route. Two equal members are one subscription.
#[derive(Debug)]
pub(super) enum Members<M> {
    /// A list, searched.
    Few(Vec<M>),
    /// A set, looked up.
    Many(IndexSet<M>),
}

impl<M> Default for Members<M> {
    fn default() -> Self {
        Members::Few(Vec::new())
    }
}

impl<M: Hash + Eq> Members<M> {
    /// Adds `member`.
    pub(super) fn push(&mut self, member: M) {
        match self {
            Members::Few(list) if list.len() < FEW => list.push(member),
            Members::Few(list) => {
                let mut set: IndexSet<M> = list.drain(..).collect();
                set.insert(member);
                *self = Members::Many(set);
            }
            Members::Many(set) => {
                set.insert(member);
            }
        }
    }

    /// Takes `member` out; whether it was there.
    pub(super) fn take(&mut self, member: &M) -> bool {
        match self {
            Members::Few(list) => match list.iter().position(|m| m == member) {
                Some(at) => {
                    list.swap_remove(at);
                    if list.capacity() > 4 * list.len().max(1) {
                        list.shrink_to_fit();
                    }
                    true
                }
                None => false,
            },
            Members::Many(set) => {
                // (The last member moves into the leaver's slot: no other moves.)
                let taken = set.swap_remove(member);
                if set.len() <= FEW / 2 {
                    *self = Members::Few(set.drain(..).collect());
                } else if set.capacity() > 4 * set.len() {
                    set.shrink_to_fit();
                }
                taken
            }
        }
    }

    /// Whether no subscription follows the route.
    pub(super) fn is_empty(&self) -> bool {
        match self {
            Members::Few(list) => list.is_empty(),
            Members::Many(set) => set.is_empty(),
        }
    }

    /// The members, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &M> {
        let (few, many) = match self {
            Members::Few(list) => (Some(list.iter()), None),
            Members::Many(set) => (None, Some(set.iter())),
        };
        few.into_iter().flatten().chain(many.into_iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Whatever the joins and leaves, and however often the route crosses from list to set
        /// and back, the members are those that joined and have not left.
        #[test]
        fn members_are_those_that_joined_and_did_not_leave(
            steps in prop::collection::vec((any::<bool>(), 0u32..40), 0..400),
        ) {
            let mut members = Members::default();
            let mut model = BTreeSet::new();
            for (join, member) in steps {
                if join && !model.contains(&member) {
                    members.push(member);
                    model.insert(member);
                } else if !join {
                    prop_assert_eq!(members.take(&member), model.remove(&member));
                }
                let held: BTreeSet<u32> = members.iter().copied().collect();
                prop_assert_eq!(&held, &model);
                prop_assert_eq!(members.iter().count(), model.len());
                prop_assert_eq!(members.is_empty(), model.is_empty());
            }
        }
    }

    #[test]
    fn a_crowd_is_a_set_and_a_few_a_list() {
        let mut members = Members::default();
        for member in 0..100u32 {
            members.push(member);
        }
        assert!(matches!(members, Members::Many(_)));
        for member in 0..95u32 {
            assert!(members.take(&member));
        }
        assert!(matches!(members, Members::Few(_)));
        assert_eq!(
            members.iter().copied().collect::<BTreeSet<_>>(),
            (95..100).collect()
        );
    }
}
