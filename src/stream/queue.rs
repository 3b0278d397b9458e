//! One subscription's own backlog: the changes routed to it that it has not taken yet, bounded.
//!
//! A subscription that falls behind (its client reads slowly, or its partition is written faster
//! than its socket drains) loses only its own changes: past its bound the backlog is dropped and
//! the subscriber told so ([`Event::Gap`]), while every other subscription goes on.
//!
//! Hand-written rather than a channel from tokio or another crate: an idle subscription must cost
//! next to nothing, and this queue allocates nothing while empty (tokio's `mpsc` allocates a
//! block of 32 slots per channel up front, bounded crossbeam-style queues their whole capacity),
//! while an overflow must empty it at once and say so in order.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use tokio::sync::Notify;

use super::{Change, Event, Signal, Unfollowable};
use crate::metrics::Metrics;

/// A subscription's backlog; the table's reader pushes, the subscription pops.
#[derive(Debug)]
pub(super) struct Queue {
    state: Mutex<State>,
    /// Woken on each push; holds a permit when nobody waits, so no push is missed.
    pushed: Notify,
    metrics: Arc<Metrics>,
}

#[derive(Debug, Default)]
struct State {
    signals: VecDeque<Signal>,
    /// Changes among `signals`.
    changes: usize,
    /// Changes were dropped since the subscriber last took one.
    overflowed: bool,
    /// The reader stopped: nothing more comes.
    closed: bool,
    /// Why, when the table's changes cannot be followed.
    why: Option<Unfollowable>,
}

/// What became of a change pushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pushed {
    /// Queued.
    Queued,
    /// The backlog passed its bound with this change: it was dropped, with the backlog.
    Overflowed,
    /// The backlog had overflowed already: the subscriber has not yet been told.
    Dropped,
}

impl Queue {
    pub(super) fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            state: Mutex::default(),
            pushed: Notify::new(),
            metrics,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means a holder panicked; the queue's fields are always whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a change, unless `bound` changes wait already: then the backlog is dropped and the
    /// subscriber's next signal is [`Event::Gap`].
    pub(super) fn push_change(&self, change: &Arc<Change>, bound: usize) -> Pushed {
        let mut state = self.state();
        if state.overflowed || state.closed {
            return Pushed::Dropped;
        }
        if state.changes >= bound {
            self.metrics.subscription_backlog(-(state.changes as i64));
            state.signals.clear();
            state.signals.shrink_to_fit();
            state.changes = 0;
            state.overflowed = true;
            drop(state);
            self.pushed.notify_one();
            return Pushed::Overflowed;
        }
        state
            .signals
            .push_back(Signal::Event(Event::Change(Arc::clone(change))));
        state.changes += 1;
        drop(state);
        self.metrics.subscription_backlog(1);
        self.pushed.notify_one();
        Pushed::Queued
    }

    /// Queues a mark or a gap: never dropped, and not counted against the bound (a subscriber
    /// has at most a couple of marks pending, and a gap ends it).
    pub(super) fn push(&self, signal: Signal) {
        let mut state = self.state();
        if state.closed {
            return;
        }
        state.signals.push_back(signal);
        drop(state);
        self.pushed.notify_one();
    }

    /// Nothing more comes: the subscriber takes what is queued, then the end.
    pub(super) fn close(&self) {
        self.state().closed = true;
        self.pushed.notify_one();
    }

    /// Nothing more comes, for good, and why.
    pub(super) fn end(&self, why: &Unfollowable) {
        self.state().why = Some(why.clone());
        self.close();
    }

    /// Why nothing more comes, when the table's changes cannot be followed.
    pub(super) fn why(&self) -> Option<Unfollowable> {
        self.state().why.clone()
    }

    /// The next signal, waiting for one: [`Event::Gap`] once after an overflow, `None` once the
    /// queue is closed and empty.
    pub(super) async fn pop(&self) -> Option<Signal> {
        loop {
            {
                let mut state = self.state();
                if state.overflowed {
                    state.overflowed = false;
                    return Some(Signal::Event(Event::Gap));
                }
                if let Some(signal) = state.signals.pop_front() {
                    if matches!(signal, Signal::Event(Event::Change(_))) {
                        state.changes -= 1;
                        self.metrics.subscription_backlog(-1);
                    }
                    if state.signals.is_empty() && state.signals.capacity() > 8 {
                        // A burst's room is given back once it is sent.
                        state.signals.shrink_to_fit();
                    }
                    return Some(signal);
                }
                if state.closed {
                    return None;
                }
            }
            self.pushed.notified().await;
        }
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        let changes = self.state().changes;
        if changes > 0 {
            self.metrics.subscription_backlog(-(changes as i64));
        }
    }
}

/// A subscription's queue as the routes hold it: two are one when they are the same queue.
#[derive(Debug, Clone)]
pub(super) struct Member(pub(super) Arc<Queue>);

impl PartialEq for Member {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Member {}

/// By identity, as equality: the queue's address.
impl std::hash::Hash for Member {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(Arc::as_ptr(&self.0), state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(n: u32) -> Arc<Change> {
        Arc::new(Change {
            table: Arc::from("T"),
            sequence: n.to_string(),
            keys: crate::dynamo::Item::new(),
            old: None,
            new: None,
            origin: None,
        })
    }

    fn sequence(signal: Option<Signal>) -> String {
        match signal {
            Some(Signal::Event(Event::Change(change))) => change.sequence.clone(),
            Some(Signal::Event(Event::Gap | Event::Expired)) => "gap".to_owned(),
            Some(Signal::Mark(mark, _)) => format!("mark {mark}"),
            None => "end".to_owned(),
        }
    }

    #[tokio::test]
    async fn a_backlog_past_its_bound_is_dropped_and_told_then_the_queue_goes_on() {
        let metrics = Arc::new(Metrics::new());
        let queue = Queue::new(Arc::clone(&metrics));
        assert_eq!(queue.push_change(&change(1), 2), Pushed::Queued);
        queue.push(Signal::Mark(7, None));
        assert_eq!(queue.push_change(&change(2), 2), Pushed::Queued);
        assert_eq!(metrics.subscription_backlog_now(), 2);
        assert_eq!(sequence(queue.pop().await), "1");
        assert_eq!(sequence(queue.pop().await), "mark 7");
        assert_eq!(queue.push_change(&change(3), 2), Pushed::Queued);
        // Two wait: the third is past the bound.
        assert_eq!(queue.push_change(&change(4), 2), Pushed::Overflowed);
        assert_eq!(queue.push_change(&change(5), 2), Pushed::Dropped);
        assert_eq!(metrics.subscription_backlog_now(), 0);
        assert_eq!(sequence(queue.pop().await), "gap");
        assert_eq!(queue.push_change(&change(6), 2), Pushed::Queued);
        queue.close();
        assert_eq!(queue.push_change(&change(7), 2), Pushed::Dropped);
        assert_eq!(sequence(queue.pop().await), "6");
        assert_eq!(sequence(queue.pop().await), "end");
    }

    #[tokio::test]
    async fn a_waiting_subscriber_wakes_for_a_push_made_before_it_waited_or_after() {
        let queue = Arc::new(Queue::new(Arc::new(Metrics::new())));
        let waiting = tokio::spawn({
            let queue = Arc::clone(&queue);
            async move { sequence(queue.pop().await) }
        });
        tokio::task::yield_now().await;
        queue.push_change(&change(1), 8);
        assert_eq!(waiting.await.unwrap(), "1");
        queue.push_change(&change(2), 8);
        assert_eq!(sequence(queue.pop().await), "2");
    }
}
