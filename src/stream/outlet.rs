//! A table reader's side of its subscribers, whatever it reads from (the table's stream, or
//! Redis fed by a relay): it broadcasts events and marks, tells when nobody listens any more, and
//! leaves the process's readers when it stops.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, atomic::Ordering},
    time::Duration,
};

use super::{Change, Event, Recognise, Shared, Signal, StreamSettings};
use crate::metrics::Metrics;

/// The process's readers, by table (its full name).
pub(super) type Readers = Arc<Mutex<HashMap<Arc<str>, Arc<Shared>>>>;

/// Where one table's reader sends what it reads.
pub(super) struct Outlet {
    pub(super) table: Arc<str>,
    pub(super) shared: Arc<Shared>,
    pub(super) readers: Readers,
    /// Which items are anything to subscribers; `None`: all.
    pub(super) recognise: Option<Recognise>,
    pub(super) metrics: Arc<Metrics>,
}

impl Outlet {
    /// Removes this reader from the process's readers (unless another took its place), so that
    /// the next subscriber starts a new one, and its subscribers see the end.
    pub(super) fn leave(&self) {
        let mut readers = self.readers.lock().unwrap_or_else(|e| e.into_inner());
        if readers
            .get(&self.table)
            .is_some_and(|shared| Arc::ptr_eq(shared, &self.shared))
        {
            readers.remove(&self.table);
        }
    }

    /// True when nobody listens; then this reader is removed from the process's readers while
    /// the lock is held, so that no subscriber joins a reader that is stopping.
    pub(super) fn unsubscribed(&self) -> bool {
        if self.shared.sender.receiver_count() > 0 {
            return false;
        }
        let mut readers = self.readers.lock().unwrap_or_else(|e| e.into_inner());
        if self.shared.sender.receiver_count() > 0 {
            return false;
        }
        if readers
            .get(&self.table)
            .is_some_and(|shared| Arc::ptr_eq(shared, &self.shared))
        {
            readers.remove(&self.table);
        }
        true
    }

    /// The last ticket given to a subscriber: a round of reads that starts after this call and
    /// ends complete gives them their place ([`Outlet::mark`]).
    pub(super) fn asked(&self) -> u64 {
        self.shared.asked.load(Ordering::Acquire)
    }

    /// Tells subscribers holding tickets up to `asked` that what follows is news to them.
    pub(super) fn mark(&self, asked: u64) {
        let _ = self.shared.sender.send(Signal::Mark(asked));
    }

    /// Passes a change on to every subscriber, if it is of an item they may want (counted when
    /// not).
    pub(super) fn send(&self, change: Change) {
        if !self.recognised(&change) {
            return;
        }
        // No receiver is not an error: `unsubscribed` stops the reader next round.
        let _ = self
            .shared
            .sender
            .send(Signal::Event(Event::Change(Arc::new(change))));
        self.metrics.stream_record(&self.table);
    }

    /// Tells subscribers that changes were lost.
    pub(super) fn gap(&self) {
        let _ = self.shared.sender.send(Signal::Event(Event::Gap));
        self.metrics.stream_gap(&self.table);
    }

    /// Whether a change is of an item subscribers may want (counted when not).
    fn recognised(&self, change: &Change) -> bool {
        let Some(recognise) = &self.recognise else {
            return true;
        };
        let known = change.recognised_by(recognise);
        if !known {
            self.metrics.stream_unmatched(&self.table);
        }
        known
    }
}

/// Exponential backoff between failed calls.
pub(super) struct Backoff {
    settings: StreamSettings,
    next: Duration,
}

impl Backoff {
    pub(super) fn new(settings: StreamSettings) -> Self {
        Self {
            settings,
            next: settings.initial_backoff,
        }
    }

    pub(super) async fn wait(&mut self) {
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(self.settings.max_backoff);
    }

    pub(super) fn reset(&mut self) {
        self.next = self.settings.initial_backoff;
    }
}
