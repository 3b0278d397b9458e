//! Live data: the changes DynamoDB Streams records for a table, from every writer, read once per
//! table per process and shared by every subscriber of that table.
//!
//! [`Streams`] keeps one reader per table, started by the table's first subscriber and stopped
//! once it has none; each reader ([`reader`]) walks the table's stream shard by shard, in lineage
//! order, and passes every record on as a [`Change`] in stream order, to the subscriptions it may
//! concern ([`routes`]), each into a backlog of its own. What a change means to a
//! subscriber (which connection it enters or leaves) is decided above this layer: here there are
//! only tables, keys and images.

mod calls;
mod convert;
mod history;
pub mod leases;
mod members;
mod outlet;
pub mod position;
mod queue;
pub mod reader;
pub mod redis_feed;
pub mod relay;
mod relay_shard;
mod replay;
mod routes;
mod seats;
pub mod shard_marks;
pub mod stream_events;

pub use position::{Mark, Position};
pub use routes::Route;
pub use seats::{Full, Seat, Seats};

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, MutexGuard, Weak,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use queue::{Member, Queue};
use routes::RouteKey;

use crate::{dynamo::Item, metrics::Metrics};

/// One change of one item, as the table's stream recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The table's full name.
    pub table: Arc<str>,
    /// The record's sequence number: decimal digits, growing within a shard (compare them as
    /// numbers: they are up to 40 digits long).
    pub sequence: String,
    /// The item's primary key.
    pub keys: Item,
    /// The item before the change; `None` for an insert, or when the stream has no old images.
    pub old: Option<Item>,
    /// The item after the change; `None` for a removal, or when the stream has no new images.
    pub new: Option<Item>,
    /// Where the change was read: its shard, and the reader's place in the table's changes just
    /// after it. `None` from a relay that did not say (an older version).
    pub origin: Option<Origin>,
}

/// Where a change was read (see [`Change::origin`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    /// The stream shard that recorded it.
    pub shard: Arc<str>,
    /// The reader's place just after it: every change before it, of every shard, was passed on.
    pub after: Arc<Position>,
}

/// Whether sequence number `a` comes after `b`: both are decimal digits, up to 40 of them
/// (DynamoDB Local pads them with leading zeros), compared as numbers.
pub(crate) fn sequence_after(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
    (a.len(), a) > (b.len(), b)
}

impl Change {
    /// Whether `recognise` knows the item before or after the change: whether it is anything to
    /// subscribers.
    pub fn recognised_by(&self, recognise: &Recognise) -> bool {
        [&self.old, &self.new]
            .into_iter()
            .flatten()
            .any(|image| recognise(&self.table, image))
    }
}

/// A change, or word that changes were lost: the stream trimmed records before the reader got
/// to them, or the reader fell too far behind. A subscriber that receives [`Event::Gap`] can no
/// longer tell what changed and must start over.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A change, in stream order for its item.
    Change(Arc<Change>),
    /// Changes were lost here.
    Gap,
    /// A resumed subscription's place cannot be continued from: the table's stream no longer
    /// keeps what followed it (see [`replay`]).
    Expired,
}

/// Why a table's changes cannot be followed: its reader stopped for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfollowable {
    /// The table has no stream.
    NoStream,
    /// The table's stream holds less than the item before and after each change: its view type.
    WithoutImages(String),
}

impl std::fmt::Display for Unfollowable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoStream => f.write_str("the table has no stream"),
            Self::WithoutImages(view) => write!(
                f,
                "the table's stream holds {view}, not old and new images (NEW_AND_OLD_IMAGES)"
            ),
        }
    }
}

/// What a reader sends a subscriber: events, and marks that let subscribers that joined take
/// their place in the stream.
#[derive(Debug, Clone)]
pub(crate) enum Signal {
    /// An event for the subscriber.
    Event(Event),
    /// A round of reads that started after the subscribers holding tickets up to this one
    /// joined has ended: what comes after the mark is news to them. With the reader's place in
    /// the table's changes, when it knows it.
    Mark(u64, Option<Arc<Position>>),
}

/// One table's reader as its subscribers reach it.
#[derive(Debug)]
struct Shared {
    /// Its subscribers, by route.
    subscribers: Mutex<Subscribers>,
    /// The last ticket given to a subscriber.
    asked: AtomicU64,
    /// Changes one subscriber may have waiting before it loses them ([`StreamSettings::buffer`]).
    bound: usize,
    /// The reader's place in the table's changes after its last complete round of reads, when
    /// it knows one: where a resumed subscription's replay reads to in a shard the reader had
    /// read nothing of when the subscriber joined (see [`replay`]).
    place: Mutex<Option<Arc<Position>>>,
    /// For a reader of the table's own stream: where its news of each shard it took at `LATEST`
    /// began (see [`Firsts`]).
    firsts: Mutex<Firsts>,
}

/// The first record a stream reader read of each shard it took at its end (`LATEST`) when it
/// started at `since` (ms; the time its places hold for those shards until then): a replay of
/// a place it gave starts such a shard there, by record.
#[derive(Debug, Default)]
struct Firsts {
    since: u64,
    at: HashMap<Arc<str>, String>,
}

impl Shared {
    fn subscribers(&self) -> MutexGuard<'_, Subscribers> {
        // A poisoned lock only means a subscriber panicked while joining or leaving; the
        // routes are whole.
        self.subscribers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// See the field.
    fn place(&self) -> Option<Arc<Position>> {
        self.place.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn firsts(&self) -> MutexGuard<'_, Firsts> {
        self.firsts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where the reader's news of `shard` began, for a place holding `since` for it: `Some(Some)`
    /// at that record, `Some(None)` nowhere yet (it read nothing of it); `None` when the place
    /// is not one this reader gave.
    fn first_of(&self, shard: &str, since: u64) -> Option<Option<String>> {
        let firsts = self.firsts();
        (since > 0 && firsts.since == since).then(|| firsts.at.get(shard).cloned())
    }
}

/// A table's subscribers: those routed changes, and those waiting for a mark.
#[derive(Debug, Default)]
struct Subscribers {
    /// Subscribers with their place in the stream, by the changes they may want.
    routes: routes::Routes<Member>,
    /// Subscribers that joined, with their tickets: routed changes from the mark that places
    /// them (what is read before it is not news to them).
    joining: Vec<(u64, Member, RouteKey)>,
    /// Routed subscribers waiting for a mark at or past their ticket ([`Subscription::ask`]).
    asking: Vec<(u64, Member)>,
}

impl Subscribers {
    /// How many subscribe: the reader stops when none does.
    fn len(&self) -> usize {
        self.routes.len() + self.joining.len()
    }

    /// Every subscriber's queue, routed or joining.
    fn each(&self, mut each: impl FnMut(&Queue)) {
        self.routes.each(|member| each(&member.0));
        for (_, member, _) in &self.joining {
            each(&member.0);
        }
    }
}

/// How readers poll and wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamSettings {
    /// Wait between `GetRecords` calls on a shard that returned nothing. AWS allows five calls
    /// per second per shard, shared by at most two readers: 250 ms keeps one reader within half.
    pub poll_interval: Duration,
    /// First wait after a throttled or failed call; doubled on each further failure.
    pub initial_backoff: Duration,
    /// Longest wait after failures.
    pub max_backoff: Duration,
    /// Changes one subscription may have waiting to be sent (its own backlog): past it, they are
    /// dropped and it is told so ([`Event::Gap`]). Changes that concern other subscriptions never
    /// count here.
    pub buffer: usize,
    /// Most subscriptions running in the process.
    pub max_subscriptions: usize,
    /// Most subscriptions one verified caller runs.
    pub max_subscriptions_per_caller: usize,
}

impl Default for StreamSettings {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_millis(250),
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            buffer: 1024,
            max_subscriptions: 10_000,
            max_subscriptions_per_caller: 100,
        }
    }
}

/// Which items of a table (its full name) are anything to subscribers: an entity of the model.
pub type Recognise = Arc<dyn Fn(&str, &Item) -> bool + Send + Sync>;

/// The tables' stream readers of one process, and its subscriptions' seats. A handle: every
/// running subscription holds one, so it is a pointer's size.
#[derive(Clone)]
pub struct Streams(Arc<Readers>);

/// What [`Streams`] shares.
#[derive(Clone)]
struct Readers {
    dynamodb: aws_sdk_dynamodb::Client,
    streams: aws_sdk_dynamodbstreams::Client,
    settings: StreamSettings,
    metrics: Arc<Metrics>,
    readers: outlet::Readers,
    seats: Seats,
    recognise: Option<Recognise>,
    /// Where changes come from when not from the tables' streams: the Redis a relay feeds.
    redis: Option<redis_feed::RedisFeed>,
    /// What the replays of resumed subscriptions read of each table's stream, shared.
    histories: Arc<history::Histories>,
    /// Turns to start a subscription ([`Streams::turn_to_start`]).
    starting: Arc<tokio::sync::Semaphore>,
}

/// How many subscriptions start at once in a process: each start (its first execution) holds
/// tens of KiB until it ends, and may read its parent from DynamoDB. Enough that starts never
/// wait on each other in the ordinary course (a start takes a few milliseconds, or a reader's
/// round for a catch-up after a cursor), few enough that a storm of thousands costs megabytes
/// and a few hundred reads in flight at its peak.
pub const STARTING_AT_ONCE: usize = 256;

/// A turn to start a subscription, held until its first execution ends.
pub type Turn = tokio::sync::OwnedSemaphorePermit;

impl std::fmt::Debug for Streams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streams").finish_non_exhaustive()
    }
}

impl Streams {
    /// Readers that find each table's stream with `dynamodb` and read it with `streams`.
    pub fn new(
        dynamodb: aws_sdk_dynamodb::Client,
        streams: aws_sdk_dynamodbstreams::Client,
        settings: StreamSettings,
        metrics: Arc<Metrics>,
    ) -> Self {
        let seats = Seats::new(
            settings.max_subscriptions,
            settings.max_subscriptions_per_caller,
            Arc::clone(&metrics),
        );
        Self(Arc::new(Readers {
            dynamodb,
            streams,
            settings,
            metrics,
            readers: Arc::default(),
            seats,
            recognise: None,
            redis: None,
            histories: Arc::default(),
            starting: Arc::new(tokio::sync::Semaphore::new(STARTING_AT_ONCE)),
        }))
    }

    /// Waits for a turn to start a subscription (at most [`STARTING_AT_ONCE`] at a time): a
    /// storm of subscriptions arriving at once then waits in line, each holding only its
    /// request's text and variables, rather than all starting together.
    pub async fn turn_to_start(&self) -> Turn {
        Arc::clone(&self.0.starting)
            .acquire_owned()
            .await
            .expect("the turns to start are never closed")
    }

    /// The same readers, passing on only records whose old or new image `recognise` knows;
    /// the others are counted (`stream_changes_unmatched`) and skipped.
    pub fn recognising(mut self, recognise: Recognise) -> Self {
        Arc::make_mut(&mut self.0).recognise = Some(recognise);
        self
    }

    /// The same readers, reading each table's changes from the Redis `feed` that a relay
    /// (`dynarelay relay`) fills, instead of from the table's stream.
    pub fn through_redis(mut self, feed: redis_feed::RedisFeed) -> Self {
        Arc::make_mut(&mut self.0).redis = Some(feed);
        self
    }

    /// A seat for one more subscription of `caller` (a token's subject; `None` when anonymous),
    /// within the caps of [`StreamSettings`].
    pub fn seat(&self, caller: Option<&str>) -> Result<Seat, Full> {
        self.0.seats.take(caller)
    }

    /// Every change of `table` (its full name) from now on: [`Streams::subscribe_to`] with
    /// [`Route::Every`].
    pub fn subscribe(&self, table: &str) -> Subscription {
        self.subscribe_to(table, &Route::Every)
    }

    /// The changes of `table` (its full name) that `route` may concern, from now on: joins the
    /// table's reader, starting it if it is not running. The subscription takes its place in the
    /// stream at the end of the reader's next round of reads ([`Subscription::ready`]): changes
    /// read before then were written before the subscriber asked, or moments after, and are not
    /// delivered to it. From then on it is sent the changes its route finds (see
    /// [`routes`]), into a backlog of its own.
    pub fn subscribe_to(&self, table: &str, route: &Route) -> Subscription {
        let queue = Arc::new(Queue::new(Arc::clone(&self.0.metrics)));
        let route = RouteKey::of(route);
        // A poisoned lock only means a subscriber panicked while joining; the map is intact.
        let mut readers = self.0.readers.lock().unwrap_or_else(|e| e.into_inner());
        let shared = match readers.get(table) {
            Some(shared) if shared.subscribers().len() > 0 => Arc::clone(shared),
            _ => {
                let shared = Arc::new(Shared {
                    subscribers: Mutex::default(),
                    asked: AtomicU64::new(0),
                    bound: self.0.settings.buffer.max(1),
                    place: Mutex::default(),
                    firsts: Mutex::default(),
                });
                let table: Arc<str> = Arc::from(table);
                readers.insert(Arc::clone(&table), Arc::clone(&shared));
                let outlet = outlet::Outlet {
                    table: Arc::clone(&table),
                    shared: Arc::clone(&shared),
                    readers: Arc::clone(&self.0.readers),
                    recognise: self.0.recognise.clone(),
                    metrics: Arc::clone(&self.0.metrics),
                };
                match &self.0.redis {
                    Some(feed) => {
                        let reader = redis_feed::RedisReader {
                            feed: feed.clone(),
                            settings: self.0.settings,
                            outlet,
                        };
                        tokio::spawn(reader.run());
                    }
                    None => {
                        let reader = reader::Reader {
                            dynamodb: self.0.dynamodb.clone(),
                            streams: self.0.streams.clone(),
                            settings: self.0.settings,
                            metrics: Arc::clone(&self.0.metrics),
                            table,
                            outlet,
                            started: std::time::SystemTime::now(),
                        };
                        tokio::spawn(reader.run());
                    }
                }
                shared
            }
        };
        let ticket = {
            let mut subscribers = shared.subscribers();
            let ticket = shared.asked.fetch_add(1, Ordering::AcqRel) + 1;
            subscribers
                .joining
                .push((ticket, Member(Arc::clone(&queue)), route.clone()));
            ticket
        };
        drop(readers);
        Subscription {
            queue,
            route,
            shared: Arc::downgrade(&shared),
            ticket,
            placed: false,
            marked: 0,
            resumed: None,
            position: None,
        }
    }

    /// The changes of `table` that `route` may concern since the place `from` (one a change
    /// of this table gave, see [`Subscription::position`]), wherever they still are, then live:
    /// [`Streams::subscribe_to`], with the changes between `from` and the subscription's place
    /// read from the table's stream first ([`replay`]); none is returned twice. When the stream
    /// no longer keeps what followed `from`, the first event is [`Event::Expired`].
    pub fn resume_from(&self, table: &str, route: &Route, from: Position) -> Subscription {
        let mut subscription = self.subscribe_to(table, route);
        let mut replay = replay::Replay::new(&self.0, table, from.clone(), None);
        replay.live = Weak::clone(&subscription.shared);
        subscription.resumed = Some(Box::new(Resumed {
            replay: Some(replay),
            waiting: std::collections::VecDeque::new(),
            at: from,
        }));
        subscription
    }
}

impl Streams {
    /// How many readers run now: one per table with subscribers.
    pub fn running(&self) -> usize {
        self.0
            .readers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

/// One subscriber's view of a table's changes.
#[derive(Debug)]
pub struct Subscription {
    /// Its own backlog.
    queue: Arc<Queue>,
    route: RouteKey,
    /// The reader, while it runs (not kept alive by its subscribers: its end closes `queue`).
    shared: Weak<Shared>,
    ticket: u64,
    placed: bool,
    /// The last mark received.
    marked: u64,
    /// For a subscription resumed from a place: what it missed, read from the table's stream
    /// before its live changes.
    resumed: Option<Box<Resumed>>,
    /// The place after the last event returned, when known.
    position: Option<Arc<Position>>,
}

/// A resumed subscription's replay, and what it passed on.
struct Resumed {
    /// Until it ends.
    replay: Option<replay::Replay>,
    /// Changes read by the replay, not returned yet.
    waiting: std::collections::VecDeque<Change>,
    /// The place after everything the replay read (and, once it ended, after every change
    /// returned since): a live change at or before its mark in the change's shard was passed
    /// on already.
    at: Position,
}

impl std::fmt::Debug for Resumed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resumed")
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// Waits until the reader has ended a round of reads that started after this subscriber
    /// joined: changes written after this returns are delivered, and none read before it. (A
    /// reader starting anew first takes its place at the end of every open shard.) Returns at
    /// once when the reader stopped for good; [`Subscription::next`] then reports it.
    pub async fn ready(&mut self) {
        while !self.placed {
            match self.queue.pop().await {
                Some(Signal::Mark(mark, place)) => {
                    self.marked = mark;
                    self.placed = mark >= self.ticket;
                    if self.placed {
                        match &mut self.resumed {
                            // The replay reads up to where live changes start.
                            Some(resumed) => {
                                if let Some(replay) = &mut resumed.replay {
                                    replay.until = place;
                                }
                            }
                            None => self.position = place,
                        }
                    }
                }
                Some(Signal::Event(_)) => {}
                None => return,
            }
        }
    }

    /// A ticket for what the table's stream holds now: once [`Subscription::reached`] says so
    /// (at the end of the reader's next complete round), every change recorded before this call
    /// has come through [`Subscription::next`].
    pub fn ask(&self) -> u64 {
        // A reader that stopped sends nothing more: any ticket is reached.
        let Some(shared) = self.shared.upgrade() else {
            return 0;
        };
        let mut subscribers = shared.subscribers();
        let ticket = shared.asked.fetch_add(1, Ordering::AcqRel) + 1;
        subscribers
            .asking
            .push((ticket, Member(Arc::clone(&self.queue))));
        ticket
    }

    /// Whether the table's reader still runs (it stops for good when the table has no stream).
    pub fn running(&self) -> bool {
        self.shared.upgrade().is_some()
    }

    /// Why the table's reader stopped for good, when it did because the table's changes cannot
    /// be followed (once [`Subscription::next`] returned `None`).
    pub fn unfollowable(&self) -> Option<Unfollowable> {
        self.queue.why()
    }

    /// Whether the changes a ticket of [`Subscription::ask`] waits for have all come: every
    /// event [`Subscription::next`] returns from now on was recorded after the ticket was taken
    /// (give or take the moments a stream takes to show a record).
    pub fn reached(&self, ticket: u64) -> bool {
        self.marked >= ticket
    }

    /// The next event after [`Subscription::ready`] (waited for here if need be): for a
    /// resumed subscription, what it missed first; `None` once the reader has stopped for good.
    pub async fn next(&mut self) -> Option<Event> {
        self.ready().await;
        if let Some(resumed) = &mut self.resumed {
            loop {
                if let Some(change) = resumed.waiting.pop_front() {
                    self.position = change.origin.as_ref().map(|o| Arc::clone(&o.after));
                    return Some(Event::Change(Arc::new(change)));
                }
                let Some(replay) = &mut resumed.replay else {
                    break;
                };
                // Boxed: a replay's reads (Redis's, or the stream's through the SDK) take
                // kilobytes of state, which every idle subscription would hold otherwise, as
                // the future that waits for its next change is sized for its largest step.
                match Box::pin(replay.next()).await {
                    Ok(Some(changes)) => resumed.waiting.extend(changes),
                    Ok(None) => {
                        resumed.at = std::mem::take(&mut replay.at);
                        resumed.replay = None;
                    }
                    Err(replay::Expired) => {
                        self.resumed = None;
                        return Some(Event::Expired);
                    }
                }
            }
        }
        loop {
            let event = match self.queue.pop().await {
                Some(Signal::Event(event)) => event,
                Some(Signal::Mark(mark, _)) => {
                    self.marked = mark;
                    continue;
                }
                None => return None,
            };
            if let Event::Change(change) = &event {
                let place = change.origin.as_ref();
                match &mut self.resumed {
                    Some(resumed) => {
                        // A change the replay passed on already; the place is the replay's,
                        // moved on by each live change.
                        if let Some(origin) = place {
                            if let Some(Mark::After(last)) = resumed.at.mark(&origin.shard)
                                && !sequence_after(&change.sequence, last)
                            {
                                continue;
                            }
                            resumed.at = resumed.at.merged(&origin.after);
                            resumed
                                .at
                                .set(&origin.shard, Mark::After(change.sequence.clone()));
                            self.position = Some(Arc::new(resumed.at.clone()));
                        }
                    }
                    None => self.position = place.map(|o| Arc::clone(&o.after)),
                }
            }
            return Some(event);
        }
    }

    /// The place in the table's changes just after the last change [`Subscription::next`]
    /// returned, when known: resuming from it ([`Streams::resume_from`]) misses none of the
    /// changes after it and returns none before it.
    pub fn position(&self) -> Option<Arc<Position>> {
        self.position.clone()
    }
}

impl Drop for Subscription {
    /// Leaves the table's routes: the reader stops once nobody subscribes.
    fn drop(&mut self) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let member = Member(Arc::clone(&self.queue));
        let mut subscribers = shared.subscribers();
        if !subscribers.routes.remove(&self.route, &member) {
            subscribers.joining.retain(|(_, m, _)| *m != member);
        }
        subscribers.asking.retain(|(_, m)| *m != member);
    }
}

#[cfg(test)]
mod tests {
    use super::sequence_after;

    #[test]
    fn sequence_numbers_compare_as_numbers() {
        assert!(sequence_after("100", "99"));
        assert!(!sequence_after("99", "100"));
        assert!(!sequence_after("42", "42"));
        assert!(sequence_after(
            "4900000000000000000000000000000000002",
            "4900000000000000000000000000000000001"
        ));
        // DynamoDB Local's, padded with zeros.
        assert!(sequence_after(
            "000000000000000000010",
            "000000000000000000009"
        ));
        assert!(sequence_after("000000000000000000010", "9"));
        assert!(!sequence_after("000000000000000000007", "7"));
    }
}
