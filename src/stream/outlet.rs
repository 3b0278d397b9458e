//! A table reader's side of its subscribers, whatever it reads from (the table's stream, or
//! Redis fed by a relay): it routes each change to the subscriptions it may concern (each into its
//! own backlog), places joining subscribers with marks, tells when nobody listens any more, and
//! leaves the process's readers when it stops.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use super::{Change, Event, Recognise, Shared, Signal, StreamSettings, queue::Pushed};
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

/// Longest a warning about overflowing backlogs waits after the last one: one line a minute at
/// most, however many subscriptions overflow.
const OVERFLOW_WARNING_EVERY: Duration = Duration::from_secs(60);

/// When the last warning about overflowing backlogs was logged (seconds since the Unix epoch),
/// and how many overflowed since.
static OVERFLOW_WARNED: AtomicU64 = AtomicU64::new(0);
static OVERFLOWED_SINCE: AtomicU64 = AtomicU64::new(0);

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
        if self.shared.subscribers().len() > 0 {
            return false;
        }
        let mut readers = self.readers.lock().unwrap_or_else(|e| e.into_inner());
        if self.shared.subscribers().len() > 0 {
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

    /// Tells subscribers holding tickets up to `asked` that what follows is news to them: those
    /// joining are routed changes from here on, and those asking are told. Costs the
    /// subscribers waiting for it, not the others.
    pub(super) fn mark(&self, asked: u64, place: Option<&Arc<super::Position>>) {
        let mut subscribers = self.shared.subscribers();
        let subscribers = &mut *subscribers;
        let (placed, joining) = std::mem::take(&mut subscribers.joining)
            .into_iter()
            .partition(|(ticket, _, _)| *ticket <= asked);
        subscribers.joining = joining;
        for (_, member, route) in placed {
            member.0.push(Signal::Mark(asked, place.cloned()));
            subscribers.routes.insert(&route, member);
        }
        subscribers.asking.retain(|(ticket, member)| {
            let told = *ticket <= asked;
            if told {
                member.0.push(Signal::Mark(asked, place.cloned()));
            }
            !told
        });
    }

    /// Records the reader's place after a complete round of reads (see [`Shared::place`]).
    /// A reader of the table's own stream took its open shards at their end at `since` (ms).
    pub(super) fn began(&self, since: u64) {
        let mut firsts = self.shared.firsts();
        firsts.since = since;
        firsts.at.clear();
    }

    /// The first record the reader read of `shard` since it [began](Self::began), if it is.
    pub(super) fn first(&self, shard: &Arc<str>, sequence: &str) {
        self.shared
            .firsts()
            .at
            .entry(Arc::clone(shard))
            .or_insert_with(|| sequence.to_owned());
    }

    pub(super) fn placed(&self, place: &Arc<super::Position>) {
        *self.shared.place.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(place));
    }

    /// Passes a change on to the subscriptions it may concern, if it is of an item they may
    /// want (counted when not).
    pub(super) fn send(&self, change: Change) {
        if !self.recognised(&change) {
            return;
        }
        let change = Arc::new(change);
        let bound = self.shared.bound;
        let mut overflowed = 0u64;
        self.shared
            .subscribers()
            .routes
            .concerned(&change, |member| {
                if member.0.push_change(&change, bound) == Pushed::Overflowed {
                    overflowed += 1;
                }
            });
        self.metrics.stream_record(&self.table);
        if overflowed > 0 {
            self.overflowed(overflowed);
        }
    }

    /// Whether a change of the item with primary key `keys` may concern a subscriber: false only
    /// when its key alone shows it concerns none (see [`super::routes::Routes::by_key`]), so
    /// that its images need not be read.
    pub(super) fn wanted(&self, keys: &crate::dynamo::Item) -> bool {
        self.shared.subscribers().routes.by_key(keys) != Some(false)
    }

    /// Counts subscriptions whose backlog passed its bound, and says so in the log now and then.
    fn overflowed(&self, count: u64) {
        for _ in 0..count {
            self.metrics.subscription_backlog_overflowed(&self.table);
        }
        let since = OVERFLOWED_SINCE.fetch_add(count, Ordering::Relaxed) + count;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let last = OVERFLOW_WARNED.load(Ordering::Relaxed);
        if now >= last + OVERFLOW_WARNING_EVERY.as_secs()
            && OVERFLOW_WARNED
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            OVERFLOWED_SINCE.fetch_sub(since, Ordering::Relaxed);
            tracing::warn!(
                table = %self.table,
                subscriptions = since,
                bound = self.shared.bound,
                "subscriptions fell more changes behind than their backlog holds and end with \
                 CHANGES_LOST: their clients read too slowly, or this process cannot keep up \
                 (see dynarelay_subscription_backlog)"
            );
        }
    }

    /// Ends every subscription for good: the table's changes cannot be followed.
    pub(super) fn end(&self, why: &super::Unfollowable) {
        self.shared.subscribers().each(|queue| queue.end(why));
    }

    /// Tells every subscriber that changes were lost.
    pub(super) fn gap(&self) {
        self.shared
            .subscribers()
            .routes
            .each(|member| member.0.push(Signal::Event(Event::Gap)));
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

impl Drop for Outlet {
    /// The reader stopped (or failed): its subscribers see the end once they took what waits.
    fn drop(&mut self) {
        self.shared.subscribers().each(super::queue::Queue::close);
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
